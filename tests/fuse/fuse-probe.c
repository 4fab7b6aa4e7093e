/* fuse-probe.c - what a FUSE container may and may not do (tests/e2e/30-fuse.sh).
 * Built static by the test and copied into the container's rootfs.
 *
 *   fuse-probe denied     one line per call: "<call> <errno name|ok>"
 *   fuse-probe control    the same calls that are safe on a host without
 *                         seccomp: shows they do not fail with EPERM there
 *   fuse-probe mknod PATH MAJOR MINOR   mknod + open: "mknod <r>" "open <r>"
 *   fuse-probe mount-tmpfs DIR           mount("tmpfs", DIR, "tmpfs", 0): "<r>"
 *
 * Calls use arguments the kernel would reject with a specific error (EBADF,
 * EINVAL, ...) after its capability checks, so EPERM means "stopped by
 * seccomp" (or by a missing capability, which the test rules out by giving the
 * container the capability the call needs). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif

static const char *ename(int e)
{
    switch (e) {
    case 0: return "ok";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case EACCES: return "EACCES";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EBUSY: return "EBUSY";
    case ENOTDIR: return "ENOTDIR";
    case ENXIO: return "ENXIO";
    default: {
        static char buf[32];
        snprintf(buf, sizeof(buf), "errno%d", e);
        return buf;
    }
    }
}

static void report(const char *what, long r)
{
    printf("%s %s\n", what, ename(r < 0 ? errno : 0));
}

/* unshare(CLONE_NEWUSER) in a child, so the probe itself stays where it is. */
static void probe_unshare_user(void)
{
    int st;
    pid_t p = fork();
    if (p == 0)
        _exit(unshare(CLONE_NEWUSER) < 0 ? errno : 0);
    if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st)) {
        printf("unshare-newuser fork-failed\n");
        return;
    }
    printf("unshare-newuser %s\n", ename(WEXITSTATUS(st)));
}

static void common_calls(void)
{
    /* bpf: BPF_MAP_CREATE with a NULL attr of size 0: EINVAL unfiltered. */
    report("bpf", syscall(SYS_bpf, 0, NULL, 0));
    /* keyctl with an operation that does not exist: EOPNOTSUPP unfiltered. */
    report("keyctl", syscall(SYS_keyctl, 9999, 0, 0, 0, 0));
    /* setns on a closed descriptor: EBADF unfiltered. */
    report("setns", syscall(SYS_setns, -1, 0));
    /* open_by_handle_at on a bad mount fd, with CAP_DAC_READ_SEARCH: EBADF unfiltered. */
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
    /* fsopen of a file system that does not exist: ENODEV unfiltered. */
    report("fsopen", syscall(SYS_fsopen, "resview-no-such-fs", 0));
    /* open_tree on a bad descriptor: EBADF unfiltered. */
    report("open_tree", syscall(SYS_open_tree, -1, "", 0));
    probe_unshare_user();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuse-probe denied|control|mknod|mount-tmpfs ...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[1], "control") == 0) {
        common_calls();
        return 0;
    }
    if (strcmp(argv[1], "denied") == 0) {
        common_calls();
        /* The escapes a CAP_SYS_ADMIN container would try first. */
        report("mount-bind-proc", mount("/proc", "/proc", NULL, MS_BIND, NULL));
        report("mount-remount-proc", mount("proc", "/proc", "proc", MS_REMOUNT, NULL));
        report("mount-move-proc", mount("/proc", "/tmp", NULL, MS_MOVE, NULL));
        report("mount-private-root", mount("none", "/", NULL, MS_PRIVATE | MS_REC, NULL));
        return 0;
    }
    if (strcmp(argv[1], "mknod") == 0 && argc == 5) {
        unsigned maj = (unsigned)strtoul(argv[3], NULL, 10), min = (unsigned)strtoul(argv[4], NULL, 10);
        int fd;
        report("mknod", mknod(argv[2], S_IFCHR | 0666, makedev(maj, min)));
        fd = open(argv[2], O_RDWR | O_NONBLOCK);
        report("open", fd);
        return 0;
    }
    if (strcmp(argv[1], "mount-tmpfs") == 0 && argc == 3) {
        report("mount-tmpfs", mount("tmpfs", argv[2], "tmpfs", 0, "size=1m"));
        return 0;
    }
    fprintf(stderr, "fuse-probe: bad arguments\n");
    return 2;
}
