/* test_inject.c - bounded children, and the injector against a real mount
 * namespace (no LXCFS needed: a tmpfs stands in for it). Needs root for the
 * namespace part; says so and skips that part otherwise. */
#define _GNU_SOURCE
#include "resview/bounded.h"
#include "resview/inject.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* Lines of pid's mountinfo that contain needle. */
static int mounts_in(pid_t pid, const char *needle)
{
    char line[1024], mi[64];
    int n = 0;
    FILE *f;

    snprintf(mi, sizeof(mi), "/proc/%d/mountinfo", (int)pid);
    f = fopen(mi, "r");
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static int write_42(void *arg) { *(int *)arg = 42; return 7; }
/* arg: a descriptor number of the parent's; 1 if the child does not have it */
static int fd_gone(void *arg) { return fcntl(*(int *)arg, F_GETFD) < 0 && errno == EBADF; }
/* 1 if the child's stdout and stderr are /dev/null */
static int stdio_null(void *arg)
{
    struct stat a, b, n;
    (void)arg;
    return stat("/dev/null", &n) == 0 && fstat(1, &a) == 0 && fstat(2, &b) == 0 &&
           a.st_rdev == n.st_rdev && b.st_rdev == n.st_rdev && S_ISCHR(a.st_mode);
}
static int sleep_long(void *arg) { (void)arg; sleep(30); return 0; }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void get(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    if (f) {
        if (!fgets(buf, (int)size, f))
            buf[0] = '\0';
        fclose(f);
    }
}

/* views already decided are left alone by the injector: start over */
static void reset(struct rv_inject *req)
{
    for (unsigned i = 0; i < req->n; i++) {
        req->views[i].state = RV_VIEW_TODO;
        req->views[i].why[0] = '\0';
        req->views[i].detached = 0;
    }
}

static void bounded_tests(const char *how)
{
    int *x = rv_shared_alloc(sizeof(int)), status = -1;
    struct rv_error err;
    struct timespec a, b;

    ok(rv_run_bounded(write_42, x, 1000, &status, &err) == 0 && status == 7 && *x == 42,
       "%s: child's status and results come back", how);
    clock_gettime(CLOCK_MONOTONIC, &a);
    ok(rv_run_bounded(sleep_long, x, 200, &status, &err) < 0 && err.errnum == ETIMEDOUT,
       "%s: a child past its deadline is killed: %s", how, err.msg);
    clock_gettime(CLOCK_MONOTONIC, &b);
    ok(b.tv_sec - a.tv_sec < 10, "%s: ... and does not keep us waiting", how);
    ok(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "%s: nothing left to reap", how);
    /* The child holds none of our descriptors (a stuck child must not keep a
     * lock or a pipe open), and ours stay open. */
    {
        int p[2], lock = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ok(pipe(p) == 0 && lock >= 0, "%s: a pipe and a file", how);
        *x = lock;
        ok(rv_run_bounded(fd_gone, x, 1000, &status, &err) == 0 && status == 1,
           "%s: the child does not hold our descriptors", how);
        *x = p[1];
        ok(rv_run_bounded(fd_gone, x, 1000, &status, &err) == 0 && status == 1,
           "%s: ... nor a pipe's write end", how);
        ok(rv_run_bounded(stdio_null, x, 1000, &status, &err) == 0 && status == 1,
           "%s: its stdout and stderr are /dev/null", how);
        ok(fcntl(lock, F_GETFD) >= 0 && fcntl(p[1], F_GETFD) >= 0 && fcntl(1, F_GETFD) >= 0,
           "%s: ours are still open", how);
        close(p[0]);
        close(p[1]);
        close(lock);
    }
    ok(rv_bounded_stuck() == 0, "%s: no child left behind", how);
    rv_shared_free(x, sizeof(int));
}

int main(void)
{
    char base[] = "/tmp/rv-unit-inject.XXXXXX", p[512], buf[64];
    struct rv_inject *req;
    struct rv_error err;
    struct stat st;
    pid_t child;
    int sync[2];
    bool legacy;

    setvbuf(stdout, NULL, _IOLBF, 0);   /* children must not repeat our output */
    bounded_tests("memory-sharing child");
    setenv("RESVIEW_BOUNDED_FORK", "1", 1);
    bounded_tests("forked child");
    unsetenv("RESVIEW_BOUNDED_FORK");

    req = calloc(1, sizeof(*req));
    ok(rv_inject_add(req, "/proc/meminfo", "proc/meminfo") == 0 &&
           strcmp(req->views[0].src, "proc/meminfo") == 0, "leading slashes dropped");
    ok(rv_inject_add(req, "", "x") < 0, "empty source refused");
    memset(p, 'a', sizeof(p) - 1);
    p[sizeof(p) - 1] = '\0';
    ok(rv_inject_add(req, "proc/x", p) < 0, "target longer than a view path refused");
    while (req->n < RV_VIEWS_MAX)
        rv_inject_add(req, "a", "b");
    ok(rv_inject_add(req, "a", "b") < 0, "at most %d views", RV_VIEWS_MAX);

    legacy = syscall(SYS_open_tree, -1, "", 0) < 0 && errno == ENOSYS;
    if (geteuid() != 0) {
        printf("# not root: the mount namespace tests need root (make check runs as root)\n");
        free(req);
        return unit_done();
    }
    /* Our own private namespace; a tmpfs plays LXCFS, another the rootfs. */
    ok(unshare(CLONE_NEWNS) == 0 && mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0,
       "private mount namespace for the test");
    ok(mkdtemp(base) != NULL, "temp dir");
    snprintf(p, sizeof(p), "%s/lx", base);
    mkdir(p, 0755);
    ok(mount("tmpfs", p, "tmpfs", 0, NULL) == 0, "tmpfs standing in for LXCFS");
    snprintf(p, sizeof(p), "%s/lx/proc", base); mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/lx/proc/meminfo", base); put(p, "view\n");
    snprintf(p, sizeof(p), "%s/lx/proc/cpuinfo", base); put(p, "view\n");
    snprintf(p, sizeof(p), "%s/lx/proc/stat", base); put(p, "view\n");
    snprintf(p, sizeof(p), "%s/lx/proc/uptime", base); put(p, "up\n");
    snprintf(p, sizeof(p), "%s/root", base);
    mkdir(p, 0755);
    ok(mount("tmpfs", p, "tmpfs", 0, NULL) == 0, "tmpfs rootfs");
    snprintf(p, sizeof(p), "%s/root/proc", base); mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/root/proc/meminfo", base); put(p, "host\n");
    snprintf(p, sizeof(p), "%s/root/proc/uptime", base); put(p, "hostup\n");
    snprintf(p, sizeof(p), "%s/secret", base); put(p, "secret\n");
    snprintf(p, sizeof(p), "%s/root/proc/cpuinfo", base);
    {
        char target[600];
        snprintf(target, sizeof(target), "%s/secret", base);
        ok(symlink(target, p) == 0, "cpuinfo: a symlink to a host file");
    }
    snprintf(p, sizeof(p), "%s/root/proc/stat", base); mkdir(p, 0755);

    /* the "container": a child in a namespace of its own */
    if (pipe(sync) < 0)
        return 1;
    child = fork();
    if (child == 0) {
        char c;
        if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
            _exit(1);
        close(sync[0]);
        if (write(sync[1], "x", 1) < 0)
            _exit(1);
        if (read(sync[1], &c, 1) < 0) { /* block until killed */ }
        pause();
        _exit(0);
    }
    close(sync[1]);
    ok(read(sync[0], buf, 1) == 1, "container namespace ready");

    memset(req, 0, sizeof(*req));
    req->pid = child;
    snprintf(req->rootfs, sizeof(req->rootfs), "%s/root", base);
    snprintf(req->lxcfs_root, sizeof(req->lxcfs_root), "%s/lx", base);
    snprintf(p, sizeof(p), "%s/lx", base);
    stat(p, &st);
    req->live_dev = st.st_dev;
    req->replace_foreign = true;
    rv_inject_add(req, "proc/meminfo", "proc/meminfo");
    rv_inject_add(req, "proc/cpuinfo", "proc/cpuinfo");
    rv_inject_add(req, "proc/stat", "proc/stat");
    rv_inject_add(req, "proc/swaps", "proc/swaps");
    ok(rv_inject(req, 2000, &err) == 0, "inject: %s", req->error);
    ok(req->views[0].state == RV_VIEW_MOUNTED, "meminfo mounted");
    ok(req->views[1].state == RV_VIEW_SKIPPED && strstr(req->views[1].why, "symlink"),
       "symlinked target skipped (%s)", req->views[1].why);
    ok(req->views[2].state == RV_VIEW_SKIPPED && strstr(req->views[2].why, "regular"),
       "directory target skipped (%s)", req->views[2].why);
    ok(req->views[3].state == RV_VIEW_SKIPPED, "source missing in LXCFS: skipped");
    ok(req->start_time > 0, "start time filled in");
    snprintf(p, sizeof(p), "/proc/%d/root%s/root/proc/meminfo", (int)child, base);
    get(p, buf, sizeof(buf));
    ok_str(buf, "view\n", "the container sees the view");
    snprintf(p, sizeof(p), "%s/root/proc/meminfo", base);
    get(p, buf, sizeof(buf));
    ok_str(buf, "host\n", "our namespace does not");
    snprintf(p, sizeof(p), "%s/secret", base);
    get(p, buf, sizeof(buf));
    ok_str(buf, "secret\n", "the symlink's host target is untouched");
    snprintf(p, sizeof(p), "/proc/%d/root%s/secret", (int)child, base);
    get(p, buf, sizeof(buf));
    ok_str(buf, "secret\n", "... also in the container's namespace");
    ok(mounts_in(child, "/proc/meminfo ro,nosuid,nodev,noexec") == 1,
       "one read-only, nosuid, nodev, noexec mount in the container");
    /* again: already there, nothing stacked */
    reset(req);
    ok(rv_inject(req, 2000, &err) == 0 && req->views[0].state == RV_VIEW_PRESENT &&
           req->n_mounted == 0, "second run: present, nothing stacked");
    /* a stale view (a device other than the live one) is replaced: remount
     * our stand-in so it gets a new device */
    snprintf(p, sizeof(p), "%s/lx", base);
    umount2(p, MNT_DETACH);
    mount("tmpfs", p, "tmpfs", 0, NULL);
    snprintf(p, sizeof(p), "%s/lx/proc", base); mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/lx/proc/meminfo", base); put(p, "fresh\n");
    snprintf(p, sizeof(p), "%s/lx", base);
    stat(p, &st);
    req->live_dev = st.st_dev;
    reset(req);
    /* tmpfs is not FUSE: the injector replaces only FUSE mounts, so this one
     * is mounted over, and a third run must find it present */
    ok(rv_inject(req, 2000, &err) == 0 && req->views[0].state == RV_VIEW_MOUNTED &&
           req->n_detached == 0, "a non-FUSE mount at the target is not detached");
    snprintf(p, sizeof(p), "/proc/%d/root%s/root/proc/meminfo", (int)child, base);
    get(p, buf, sizeof(buf));
    /* the bind fallback (no open_tree: valgrind, old kernels) binds the host
     * path as the container's namespace sees it: there, the old stand-in */
    ok_str(buf, legacy ? "view\n" : "fresh\n", "the container sees the %s view",
           legacy ? "bind fallback's" : "fresh");

    /* the bind fallback on purpose */
    memset(req, 0, sizeof(*req));
    req->pid = child;
    req->legacy_bind = true;
    snprintf(req->rootfs, sizeof(req->rootfs), "%s/root", base);
    snprintf(req->lxcfs_root, sizeof(req->lxcfs_root), "%s/lx", base);
    req->live_dev = st.st_dev;
    rv_inject_add(req, "proc/uptime", "proc/uptime");
    rv_inject_add(req, "proc/cpuinfo", "proc/cpuinfo");
    ok(rv_inject(req, 2000, &err) == 0 && req->views[0].state == RV_VIEW_MOUNTED &&
           req->views[1].state == RV_VIEW_SKIPPED, "bind fallback: mounted, symlink skipped");
    snprintf(p, sizeof(p), "/proc/%d/root%s/root/proc/uptime", (int)child, base);
    get(p, buf, sizeof(buf));
    ok_str(buf, "up\n", "bind fallback: the container sees the view");
    ok(mounts_in(child, "/proc/uptime ro,nosuid,nodev,noexec") == 1,
       "bind fallback: read-only, nosuid, nodev, noexec");

    /* pid checks: a wrong start time, then a gone process */
    req->start_time += 1;
    ok(rv_inject(req, 2000, &err) < 0 && req->gone, "wrong start time: treated as gone");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    req->start_time = 0;
    ok(rv_inject(req, 2000, &err) < 0 && req->gone, "exited process: gone");

    snprintf(p, sizeof(p), "%s/lx", base); umount2(p, MNT_DETACH);
    snprintf(p, sizeof(p), "%s/root", base); umount2(p, MNT_DETACH);
    snprintf(p, sizeof(p), "rm -rf %s", base);
    if (system(p) != 0)
        printf("# cleanup failed\n");
    free(req);
    return unit_done();
}
