/* pyxis-sim - start an enroot container the way pyxis 0.24 and enroot 4.1
 * do for an unprivileged Slurm job, step by step, for the tests: enroot and
 * pyxis are not packaged for Debian. What each step copies:
 *
 * pyxis (pyxis_slurmstepd.c, enroot.c): fork; the child drops to the job's
 *   user (setgroups, setregid, setreuid) and runs
 *   `enroot start ... sh -c 'kill -STOP $$ ; exit 0'`; the plugin waits for
 *   that process to stop (waitpid WUNTRACED), opens its user, cgroup and mount
 *   namespaces, and for each task (a child of slurmstepd running as the user)
 *   joins them (setns user, cgroup, mnt), chdirs and lets the task exec; the
 *   last task sends SIGCONT to the stopped process, which exits at once.
 * enroot-nsenter (bin/enroot-nsenter.c, no --remap-root): unshare(CLONE_NEWUSER),
 *   setgroups "deny", gid_map "G G 1", uid_map "U U 1", inheritable =
 *   effective capabilities and all of them raised to ambient, then
 *   unshare(CLONE_NEWNS) (no propagation change for a user namespace); the
 *   same process execs bash, whose $$ becomes ENROOT_PID.
 * runtime::_start (src/runtime.sh): a tmpfs on the runtime directory holding
 *   the environment file; the rootfs bound on itself (nosuid,nodev,slave);
 *   conf/mounts/10-system.fstab: /proc, /sys, /dev rbound into it (rslave);
 *   the hooks run with ENROOT_PID, ENROOT_ROOTFS, ENROOT_ENVIRON,
 *   ENROOT_MOUNTS exported and stdout to /dev/null; the rootfs is remounted
 *   read-only; enroot-switchroot: pivot_root(".", "."), old root made rslave
 *   and detached, chroot, a new cgroup namespace, then the command, in the
 *   same process.
 * Left out: the image import, the rc file, other fstab entries, pyxis's
 * seccomp filter and environment handling (none of them touches the views).
 *
 *   pyxis-sim UID GID ROOTFS RUNDIR HOOK TASK_ARGV...
 *
 * Prints "enroot PID" and "task PID" and exits; the task keeps running (as
 * UID, in the container's namespaces). Run as root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "pyxis-sim: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        die(path);
    close(fd);
}

static void as_user(uid_t uid, gid_t gid)
{
    if (setgroups(1, &gid) < 0 || setregid(gid, gid) < 0 || setreuid(uid, uid) < 0)
        die("drop to the job's user");
    /* what the exec of enroot after the drop does: /proc/self stays ours */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* enroot-nsenter --user --mount (no --remap-root) */
static void enroot_nsenter(uid_t uid, gid_t gid)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    char map[64];

    if (unshare(CLONE_NEWUSER) < 0)
        die("unshare(CLONE_NEWUSER)");
    put("/proc/self/setgroups", "deny");
    snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
    put("/proc/self/gid_map", map);
    snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
    put("/proc/self/uid_map", map);
    if (syscall(SYS_capget, &hdr, data) < 0)
        die("capget");
    data[0].inheritable = data[0].effective;
    data[1].inheritable = data[1].effective;
    if (syscall(SYS_capset, &hdr, data) < 0)
        die("capset");
    for (int n = 0; n < 64; n++)
        if ((data[n / 32].inheritable >> (n % 32)) & 1)
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, n, 0, 0);
    if (unshare(CLONE_NEWNS) < 0)
        die("unshare(CLONE_NEWNS)");
}

static void bind(const char *src, const char *dst, unsigned long flags)
{
    if (mount(src, dst, NULL, MS_BIND | flags, NULL) < 0)
        die(dst);
}

/* runtime::_start, then enroot-switchroot with pyxis's command */
static void enroot_start(const char *rootfs, const char *rundir, const char *hook)
{
    char env_file[4096], mounts_file[4096], path[4096], pid[32];
    pid_t h;
    int st, fd;

    if (mount("tmpfs", rundir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=700") < 0)
        die("tmpfs on the runtime directory");
    snprintf(env_file, sizeof(env_file), "%s/environment", rundir);
    snprintf(mounts_file, sizeof(mounts_file), "%s/fstab", rundir);
    fd = open(env_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "PATH=/bin\n", 10) != 10)
        die(env_file);
    close(fd);
    close(open(mounts_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    bind(rootfs, rootfs, MS_NOSUID | MS_NODEV);
    mount(NULL, rootfs, NULL, MS_SLAVE, NULL);
    for (const char *const *m = (const char *const[]){ "/proc", "/sys", "/dev", NULL }; *m; m++) {
        snprintf(path, sizeof(path), "%s%s", rootfs, *m);
        bind(*m, path, MS_REC);
        mount(NULL, path, NULL, MS_REC | MS_SLAVE, NULL);
    }
    /* the hooks: exported variables, stdout to /dev/null */
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("ENROOT_PID", pid, 1);
    setenv("ENROOT_ROOTFS", rootfs, 1);
    setenv("ENROOT_ENVIRON", env_file, 1);
    setenv("ENROOT_MOUNTS", mounts_file, 1);
    h = fork();
    if (h == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl("/bin/sh", "sh", hook, (char *)NULL);
        _exit(127);
    }
    if (h < 0 || waitpid(h, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "pyxis-sim: hook `%s` failed\n", hook);
        _exit(1);
    }
    unsetenv("ENROOT_PID");
    if (mount(NULL, rootfs, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_RDONLY, NULL) < 0)
        die("remount the rootfs read-only");
    /* enroot-switchroot */
    {
        int oldroot = open("/", O_PATH | O_DIRECTORY), newroot = open(rootfs, O_PATH | O_DIRECTORY);
        if (oldroot < 0 || newroot < 0 || fchdir(newroot) < 0 ||
            syscall(SYS_pivot_root, ".", ".") < 0 || fchdir(oldroot) < 0 ||
            mount(NULL, ".", NULL, MS_REC | MS_SLAVE, NULL) < 0 || umount2(".", MNT_DETACH) < 0 ||
            fchdir(newroot) < 0 || chroot(".") < 0)
            die("switch root");
        if (unshare(CLONE_NEWCGROUP) < 0 && errno != EINVAL)
            die("unshare(CLONE_NEWCGROUP)");
        close(oldroot);
        close(newroot);
    }
    execl("/bin/sh", "sh", "-c", "kill -STOP $$ ; exit 0", (char *)NULL);
    die("exec sh");
}

static int open_ns(pid_t pid, const char *ns)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die(path);
    return fd;
}

int main(int argc, char **argv)
{
    uid_t uid;
    gid_t gid;
    pid_t enroot, task;
    int st, userns, cgroupns, mntns;

    if (argc < 7) {
        fprintf(stderr, "usage: pyxis-sim UID GID ROOTFS RUNDIR HOOK TASK_ARGV...\n");
        return 2;
    }
    uid = (uid_t)atoi(argv[1]);
    gid = (gid_t)atoi(argv[2]);
    enroot = fork();
    if (enroot < 0)
        die("fork");
    if (enroot == 0) {
        as_user(uid, gid);
        enroot_nsenter(uid, gid);
        enroot_start(argv[3], argv[4], argv[5]);
    }
    if (waitpid(enroot, &st, WUNTRACED) < 0 || !WIFSTOPPED(st)) {
        fprintf(stderr, "pyxis-sim: the container did not stop itself (status %#x)\n", st);
        return 1;
    }
    userns = open_ns(enroot, "user");
    cgroupns = open_ns(enroot, "cgroup");
    mntns = open_ns(enroot, "mnt");
    fflush(stdout);
    task = fork();
    if (task < 0)
        die("fork");
    if (task == 0) {
        as_user(uid, gid);
        /* a privileged (root) job's tasks do not join the user namespace */
        if ((uid != 0 && setns(userns, CLONE_NEWUSER) < 0) || setns(cgroupns, CLONE_NEWCGROUP) < 0 ||
            setns(mntns, CLONE_NEWNS) < 0)
            die("join the container");
        if (chdir("/") < 0)
            die("chdir");
        /* the last task lets the stopped process go on: it exits */
        kill(enroot, SIGCONT);
        /* a task's output goes to Slurm, not to whoever reads ours */
        {
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        execv(argv[6], argv + 6);
        die(argv[6]);
    }
    if (waitpid(enroot, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "pyxis-sim: the container's first process failed (status %#x)\n", st);
        return 1;
    }
    printf("enroot %d\ntask %d\n", (int)enroot, (int)task);
    return 0;
}
