/* fuse-probe.c - what a FUSE container may and may not do, asked from inside
 * it (tests/e2e/3*-fuse*.sh). Built static by the tests and copied into the
 * rootfs. One line per call: "<what> <errno name|ok>".
 *
 *   fuse-probe denied            calls that stay denied (filter-specific errnos)
 *   fuse-probe control           the same calls on the host: no EPERM there
 *   fuse-probe mknod PATH MAJ MIN   mknod + open
 *   fuse-probe mount-tmpfs DIR   mount("tmpfs", DIR, "tmpfs", 0)
 *   fuse-probe mount DIR [FLAGS [OPTS]]  a FUSE mount with a fresh /dev/fuse fd
 *                                and no daemon ("mount ok"); it stays. OPTS:
 *                                more options (allow_other)
 *   fuse-probe as UID GID ...    the rest as that user (no supplementary groups)
 *   fuse-probe fstypes DIR       every type of /proc/filesystems, and fuseblk
 *   fuse-probe flags DIR         a FUSE mount with bind/move/remount/rec/propagation flags
 *   fuse-probe badfd DIR         fd= a pipe, /dev/null, a file, a closed number, a socket
 *   fuse-probe options DIR       allow_other, another user_id, unknown options, rootmode
 *   fuse-probe umount PATH...    umount2(PATH, 0) and (PATH, MNT_DETACH)
 *   fuse-probe strings DIR       unterminated, oversized strings, bad pointers
 *   fuse-probe race DIR N        N mounts (more until both outcomes happened, at
 *                                most 20 N) while another thread flips the type
 *                                and target strings: "race mounted M refused R bad B"
 *   fuse-probe loop DIR N        N times: mount, umount: "loop N ok K"
 *   fuse-probe hold DIR          mount, print "held", wait for stdin to close, unmount
 *   fuse-probe lazy DIR N HOW    N times: mount DIR/I, keep it alive, umount -l it
 *                                (HOW: fd = an O_PATH fd of ours, cwd = the working
 *                                directory of a child, pass = an fd passed to a
 *                                child over a socket): "lazy N ok K first-error E";
 *                                then "holding", and once stdin closes, let them all
 *                                go and mount N more: "after-release ok K"
 *   fuse-probe mmap-mounts-each PREFIX TARGET N   as mmap-mounts, child I on TARGETI
 *   fuse-probe lockdir FILE DIR  hold DIR's inode lock for as long as FILE's
 *                                daemon does not answer READ: a child reads
 *                                DIR (getdents64) into a private mapping of
 *                                FILE; prints "lockdir started", then what
 *                                the call returned, whenever it does
 *
 * Calls use arguments the kernel would reject with a specific error (EBADF,
 * EINVAL, ...) after its checks, so EPERM means "stopped by seccomp or the
 * broker". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif

static const char *ename(int e)
{
    static const struct { int e; const char *n; } names[] = {
        { 0, "ok" }, { EPERM, "EPERM" }, { ENOSYS, "ENOSYS" }, { EBADF, "EBADF" },
        { EINVAL, "EINVAL" }, { EFAULT, "EFAULT" }, { ENOENT, "ENOENT" }, { ENODEV, "ENODEV" },
        { EACCES, "EACCES" }, { EOPNOTSUPP, "EOPNOTSUPP" }, { EBUSY, "EBUSY" },
        { ENOTDIR, "ENOTDIR" }, { ENXIO, "ENXIO" }, { ENAMETOOLONG, "ENAMETOOLONG" },
        { ELOOP, "ELOOP" }, { EAGAIN, "EAGAIN" }, { ENOSPC, "ENOSPC" }, { EIO, "EIO" },
        { ENOTCONN, "ENOTCONN" },
    };
    static char buf[32];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].e == e)
            return names[i].n;
    snprintf(buf, sizeof(buf), "errno%d", e);
    return buf;
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
    report("bpf", syscall(SYS_bpf, 0, NULL, 0));
    report("keyctl", syscall(SYS_keyctl, 9999, 0, 0, 0, 0));
    report("setns", syscall(SYS_setns, -1, 0));
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
    report("fsopen", syscall(SYS_fsopen, "resview-no-such-fs", 0));
    report("open_tree", syscall(SYS_open_tree, -1, "", 0));
    probe_unshare_user();
}

/* /dev, opened before a chroot: fresh /dev/fuse files from any root. */
static int devfd = AT_FDCWD;
#define DEV_FUSE(flags) openat(devfd, devfd == AT_FDCWD ? "/dev/fuse" : "fuse", (flags))

/* The root's type of our mounts: a directory, or a regular file (mount). */
static unsigned probe_rootmode = 040000;

/* libfuse's options for a fresh /dev/fuse fd of ours. */
static int fuse_opts(char *buf, size_t size, int fd, const char *extra)
{
    snprintf(buf, size, "fd=%d,rootmode=%o,user_id=%u,group_id=%u%s%s", fd, probe_rootmode,
             getuid(), getgid(), extra ? "," : "", extra ? extra : "");
    return 0;
}

static int fuse_mount(const char *dir, unsigned long flags, const char *extra)
{
    char opts[256];
    int fd = DEV_FUSE(O_RDWR | O_CLOEXEC), r, e;

    if (fd < 0)
        return -1;
    fuse_opts(opts, sizeof(opts), fd, extra);
    r = mount("probe", dir, "fuse.probe", flags, opts);
    e = errno;
    close(fd);   /* the mount holds the connection; with no daemon it just aborts */
    errno = e;
    return r;
}

static void fstypes(const char *dir)
{
    FILE *f = fopen("/proc/filesystems", "r");
    char line[256], name[128];

    if (!f) {
        printf("fstypes cannot-read-/proc/filesystems\n");
        return;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = strchr(line, '\t');
        if (!p || sscanf(p + 1, "%127s", name) != 1)
            continue;
        if (strcmp(name, "fuse") == 0)
            continue;
        char what[160];
        snprintf(what, sizeof(what), "fstype %s", name);
        report(what, mount("none", dir, name, 0, "size=1m"));
    }
    fclose(f);
    report("fstype fuseblk", mount("/dev/null", dir, "fuseblk", 0, "fd=0,rootmode=40000,user_id=0,group_id=0"));
}

static void flags(const char *dir)
{
    static const struct { unsigned long f; const char *n; } fl[] = {
        { MS_BIND, "bind" }, { MS_BIND | MS_REC, "rbind" }, { MS_MOVE, "move" },
        { MS_REMOUNT, "remount" }, { MS_REMOUNT | MS_BIND, "remount-bind" }, { MS_REC, "rec" },
        { MS_SHARED, "shared" }, { MS_PRIVATE, "private" }, { MS_SLAVE, "slave" },
        { MS_UNBINDABLE, "unbindable" }, { MS_MANDLOCK, "mandlock" }, { 1ul << 40, "unknown-bit" },
    };
    char what[64];
    for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
        snprintf(what, sizeof(what), "flag %s", fl[i].n);
        report(what, fuse_mount(dir, fl[i].f, NULL));
    }
    /* the escapes a CAP_SYS_ADMIN container would try first */
    report("mount-bind-proc", mount("/proc", "/proc", NULL, MS_BIND, NULL));
    report("mount-remount-proc", mount("proc", "/proc", "proc", MS_REMOUNT, NULL));
    report("mount-move-proc", mount("/proc", "/tmp", NULL, MS_MOVE, NULL));
    report("mount-private-root", mount("none", "/", NULL, MS_PRIVATE | MS_REC, NULL));
    report("mount-remount-root-rw", mount("none", "/", NULL, MS_REMOUNT, NULL));
}

static void with_fd(const char *what, const char *dir, int fd)
{
    char opts[256];
    fuse_opts(opts, sizeof(opts), fd, NULL);
    report(what, mount("probe", dir, "fuse.probe", 0, opts));
}

static void badfd(const char *dir)
{
    int p[2], s[2], null = open("/dev/null", O_RDWR), file = open("/bin/busybox", O_RDONLY);
    if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0)
        return;
    with_fd("badfd pipe", dir, p[0]);
    with_fd("badfd devnull", dir, null);
    with_fd("badfd file", dir, file);
    with_fd("badfd socket", dir, s[0]);
    with_fd("badfd closed", dir, 999);
    with_fd("badfd negative", dir, -1);
}

static void options(const char *dir)
{
    char opts[256];
    int fd = open("/dev/fuse", O_RDWR);
    report("opt allow_other", fuse_mount(dir, 0, "allow_other"));
    snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=0", fd, getuid() + 1);
    report("opt other-user_id", mount("probe", dir, "fuse.probe", 0, opts));
    report("opt blksize", fuse_mount(dir, 0, "blksize=4096"));
    report("opt context", fuse_mount(dir, 0, "context=system_u:object_r:tmp_t:s0"));
    snprintf(opts, sizeof(opts), "fd=%d,rootmode=100000,user_id=%u,group_id=%u", fd, getuid(), getgid());
    report("opt rootmode-file-on-dir", mount("probe", dir, "fuse.probe", 0, opts));
    snprintf(opts, sizeof(opts), "rootmode=40000,user_id=0,group_id=0");
    report("opt no-fd", mount("probe", dir, "fuse.probe", 0, opts));
    report("opt devnull-target", fuse_mount("/dev/null", 0, NULL));
    close(fd);
}

static void umounts(int argc, char **argv)
{
    char what[512];
    for (int i = 0; i < argc; i++) {
        snprintf(what, sizeof(what), "umount %s", argv[i]);
        report(what, umount2(argv[i], 0));
        snprintf(what, sizeof(what), "umount-lazy %s", argv[i]);
        report(what, umount2(argv[i], MNT_DETACH));
    }
}

static void strings(const char *dir)
{
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *big = malloc(8192), opts[256];
    int fd = open("/dev/fuse", O_RDWR);

    if (two == MAP_FAILED || !big || fd < 0)
        return;
    /* the second page unmapped: a string that runs into it has no end */
    munmap(two + page, (size_t)page);
    fuse_opts(opts, sizeof(opts), fd, NULL);
    memset(two, 'a', (size_t)page);
    report("str target-unterminated", mount("probe", two, "fuse.probe", 0, opts));
    memcpy(two + page - 4, "fuse", 4);
    report("str fstype-unterminated", mount("probe", dir, two + page - 4, 0, opts));
    memset(big, 'a', 8191);
    big[8191] = '\0';
    report("str target-oversized", mount("probe", big, "fuse.probe", 0, opts));
    report("str fstype-oversized", mount("probe", dir, big, 0, opts));
    report("str source-oversized", mount(big, dir, "fuse.probe", 0, opts));
    memset(two, 'x', (size_t)page);
    report("str data-unterminated", mount("probe", dir, "fuse.probe", 0, two));
    report("ptr target-null", mount("probe", NULL, "fuse.probe", 0, opts));
    report("ptr fstype-null", mount("probe", dir, NULL, 0, opts));
    report("ptr data-null", mount("probe", dir, "fuse.probe", 0, NULL));
    report("ptr target-1", mount("probe", (const char *)1, "fuse.probe", 0, opts));
    report("ptr fstype-unmapped", mount("probe", dir, two + page, 0, opts));
    report("ptr data-unmapped", mount("probe", dir, "fuse.probe", 0, two + page));
    report("ptr source-kernel", mount((const char *)0xffffffffff600000ul, dir, "fuse.probe", 0, opts));
    report("ptr umount-unmapped", umount2(two + page, 0));
    close(fd);
}

/* Another thread flips the strings the main thread passes to mount(2). */
static volatile int flipping = 1;
/* The flipper writes the refused type and target over the good ones and
 * back. A copy is not one store: the broker may read a mix of both strings
 * (byte by byte, as a "rep movsb" copies under some CPUs and emulators).
 * The refused target has the good one's length, "/proc/" then 'x's: no mix of
 * the two is a place for FUSE other than DIR itself ("/mnt/" could be, were
 * it "/proc" over "/mnt/fuse"), and every mix of the types is refused or a
 * FUSE type. So a mount anywhere but DIR, or of another type, is the broker's
 * doing (a string read twice): "bad". */
static char race_type[16] = "fuse.probe", race_target[256], race_other[256];
static char race_dir[256];
static void *flipper(void *arg)
{
    size_t len = strlen(race_dir) + 1;

    (void)arg;
    while (flipping) {
        memcpy(race_type, "tmpfs\0", 6);
        memcpy(race_target, race_other, len);
        memcpy(race_type, "fuse.probe", 11);
        memcpy(race_target, race_dir, len);
    }
    return NULL;
}

static void race(const char *dir, int n)
{
    pthread_t t;
    int mounted = 0, refused = 0, bad = 0;
    char opts[256], line[1024];
    size_t len = strlen(dir);

    if (len < 7 || len >= sizeof(race_dir)) {
        printf("race: DIR must be 7 to 255 bytes\n");
        return;
    }
    snprintf(race_dir, sizeof(race_dir), "%s", dir);
    memset(race_other, 'x', len);
    memcpy(race_other, "/proc/", 6);
    memcpy(race_target, race_dir, len + 1);
    pthread_create(&t, NULL, flipper, NULL);
    /* n tries, and on until both outcomes have happened (at most 20 n): how
     * often the broker reads a flipped string is luck of the timing */
    for (int i = 0; i < n || ((!mounted || !refused) && i < 20 * n); i++) {
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        fuse_opts(opts, sizeof(opts), fd, NULL);
        if (mount("probe", race_target, race_type, 0, opts) < 0) {
            refused++;
            close(fd);
            continue;
        }
        mounted++;
        close(fd);
        /* what got mounted, and where: a stray mount is said and taken away */
        FILE *f = fopen("/proc/self/mountinfo", "r");
        while (f && fgets(line, sizeof(line), f)) {
            char mp[256], type[64];
            const char *dash = strstr(line, " - ");
            if (!dash || sscanf(line, "%*d %*d %*s %*s %255s", mp) != 1 || sscanf(dash + 3, "%63s", type) != 1)
                continue;
            if ((strcmp(type, "tmpfs") == 0 && strcmp(mp, "/proc") == 0) ||
                (strncmp(type, "fuse", 4) == 0 && strcmp(mp, dir) != 0 && strcmp(type, "fuse.lxcfs") != 0)) {
                printf("race-bad %s on %s\n", type, mp);
                umount2(mp, MNT_DETACH);
                bad++;
            }
        }
        if (f)
            fclose(f);
        if (umount2(dir, MNT_DETACH) < 0)
            bad++;
    }
    flipping = 0;
    pthread_join(t, NULL);
    printf("race mounted %d refused %d bad %d\n", mounted, refused, bad);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The time per pair is printed for the benchmark (tests/bench.d/fuse.sh). */
static void loop(const char *dir, int n)
{
    double t0 = now_us(), t_mount = 0, t;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        t = now_us();
        if (fuse_mount(dir, 0, NULL) == 0) {
            t_mount += now_us() - t;
            if (umount2(dir, 0) == 0)
                ok++;
        }
    }
    printf("loop %d ok %d\n", n, ok);
    printf("loop-time mount+umount %.0f us, mount %.0f us\n", (now_us() - t0) / (n ? n : 1),
           t_mount / (ok ? ok : 1));
}

/* N FUSE mounts on DIR/0 ... DIR/N-1, kept: how many worked, the first error. */
static void mounts(const char *dir, int n)
{
    char p[512];
    int ok = 0, first = 0;

    mkdir(dir, 0755);
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof(p), "%s/%d", dir, i);
        mkdir(p, 0755);
        if (fuse_mount(p, 0, NULL) == 0)
            ok++;
        else if (!first)
            first = errno;
    }
    printf("mounts %d ok %d first-error %s\n", n, ok, first ? ename(first) : "none");
}

/* N children, each calling mount(2) on target with its file system type
 * in a private mapping of PREFIX<i>, a file of a FUSE file system that never
 * answers READ: whoever reads that string waits for the daemon. Each child
 * maps a file of its own (a second mapping of a file whose page is being
 * read would wait in mmap itself). Each prints what its call returned,
 * whenever it does. */
static void mmap_mounts(const char *prefix, const char *target, int n, bool each)
{
    for (int i = 0; i < n; i++) {
        char file[512], dir[512];
        if (each) {
            snprintf(dir, sizeof(dir), "%s%d", target, i);
            mkdir(dir, 0755);
        }
        if (fork() != 0)
            continue;
        snprintf(file, sizeof(file), "%s%d", prefix, i);
        int ffd = open(file, O_RDONLY), fd = DEV_FUSE(O_RDWR);
        char opts[256];
        void *p = ffd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, ffd, 0);
        if (p == MAP_FAILED || fd < 0) {
            printf("mmap-mount setup %s\n", ename(errno));
            _exit(1);
        }
        fuse_opts(opts, sizeof(opts), fd, NULL);
        report("mmap-mount", mount("probe", each ? dir : target, (const char *)p, 0, opts));
        _exit(0);
    }
    printf("mmap-mounts started %d\n", n);
}

/* The inode lock of dir, held by the kernel for as long as file's daemon
 * likes: getdents64 keeps the directory locked while it copies entries out,
 * and the copy faults on a private mapping of file, whose page the daemon
 * must read first. Anything that locks dir (move_mount onto it) waits. */
static void lockdir(const char *file, const char *dir)
{
    if (fork() == 0) {
        int ffd = open(file, O_RDONLY), dfd = open(dir, O_RDONLY | O_DIRECTORY);
        void *p = ffd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, ffd, 0);
        if (p == MAP_FAILED || dfd < 0) {
            printf("lockdir setup %s\n", ename(errno));
            _exit(1);
        }
        report("lockdir", (int)syscall(SYS_getdents64, dfd, p, 4096) < 0 ? -1 : 0);
        _exit(0);
    }
    printf("lockdir started\n");
}

/* A child that takes descriptors over sock and keeps them until EOF (other:
 * the parent's end, closed in the child). */
static pid_t fd_keeper(int sock, int other)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    close(other);
    for (;;) {
        char c, cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { &c, 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                              .msg_controllen = sizeof(cbuf) };
        if (recvmsg(sock, &msg, 0) <= 0)
            _exit(0);
    }
}

static void pass_fd(int sock, int fd)
{
    char c = 'f', cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &c, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    sendmsg(sock, &msg, 0);
}

static void lazy(const char *dir, int n, const char *how)
{
    int fds[1024], sp[2] = { -1, -1 }, ok = 0, first = 0, nfds = 0, nkids = 0;
    pid_t kids[1024], keeper = -1;
    char p[512], c;

    if (n > 1024)
        n = 1024;
    mkdir(dir, 0755);
    if (strcmp(how, "pass") == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0) {
        keeper = fd_keeper(sp[1], sp[0]);
        close(sp[1]);
    }
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof(p), "%s/%d", dir, i);
        mkdir(p, 0755);
        if (fuse_mount(p, 0, NULL) < 0) {
            if (!first)
                first = errno;
            continue;
        }
        ok++;
        if (strcmp(how, "cwd") == 0) {
            int go[2];
            if (pipe(go) < 0)
                break;
            pid_t k = fork();
            if (k == 0) {
                if (chdir(p) < 0)
                    _exit(1);
                close(go[1]);   /* in it: tell the parent */
                pause();
                _exit(0);
            }
            close(go[1]);
            if (read(go[0], &c, 1) < 0) {
                /* EOF: the child is in it */
            }
            close(go[0]);
            kids[nkids++] = k;
        } else {
            int fd = open(p, O_PATH);
            if (strcmp(how, "pass") == 0) {
                pass_fd(sp[0], fd);
                close(fd);
            } else {
                fds[nfds++] = fd;
            }
        }
        if (umount2(p, MNT_DETACH) < 0)
            printf("lazy umount %s\n", ename(errno));
    }
    printf("lazy %d ok %d first-error %s\n", n, ok, first ? ename(first) : "none");
    printf("holding\n");
    while (read(0, &c, 1) > 0) {
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    for (int i = 0; i < nkids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    if (keeper > 0) {
        close(sp[0]);
        waitpid(keeper, NULL, 0);
    }
    ok = 0;
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof(p), "%s/r%d", dir, i);
        mkdir(p, 0755);
        ok += fuse_mount(p, 0, NULL) == 0;
    }
    printf("after-release ok %d\n", ok);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuse-probe MODE ...\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* chroot DIR ... / cd DIR ...: the rest from there, as a tenant would */
    if ((strcmp(argv[1], "chroot") == 0 || strcmp(argv[1], "cd") == 0) && argc > 3) {
        int r;
        if (devfd == AT_FDCWD)
            devfd = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = argv[1][1] == 'h' ? (chroot(argv[2]) < 0 ? -1 : chdir("/")) : chdir(argv[2]);
        if (r < 0) {
            report(argv[1], -1);
            return 1;
        }
        return main(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "as") == 0 && argc > 4) {
        gid_t g = (gid_t)strtoul(argv[3], NULL, 10);
        if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 ||
            setresuid((uid_t)strtoul(argv[2], NULL, 10), (uid_t)strtoul(argv[2], NULL, 10),
                      (uid_t)strtoul(argv[2], NULL, 10)) < 0) {
            report("as", -1);
            return 1;
        }
        return main(argc - 3, argv + 3);
    }
    if (strcmp(argv[1], "mounts") == 0 && argc == 4) {
        mounts(argv[2], atoi(argv[3]));
        return 0;
    }
    if (strcmp(argv[1], "lockdir") == 0 && argc == 4) {
        lockdir(argv[2], argv[3]);
        return 0;
    }
    if (strcmp(argv[1], "mmap-mounts") == 0 && argc == 5) {
        mmap_mounts(argv[2], argv[3], atoi(argv[4]), false);
        return 0;
    }
    if (strcmp(argv[1], "mmap-mounts-each") == 0 && argc == 5) {
        mmap_mounts(argv[2], argv[3], atoi(argv[4]), true);
        return 0;
    }
    if (strcmp(argv[1], "lazy") == 0 && argc == 5) {
        lazy(argv[2], atoi(argv[3]), argv[4]);
        return 0;
    }
    if (strcmp(argv[1], "control") == 0) {
        common_calls();
        return 0;
    }
    if (strcmp(argv[1], "denied") == 0) {
        common_calls();
        return 0;
    }
    if (strcmp(argv[1], "mknod") == 0 && argc == 5) {
        unsigned maj = (unsigned)strtoul(argv[3], NULL, 10), min = (unsigned)strtoul(argv[4], NULL, 10);
        report("mknod", mknod(argv[2], S_IFCHR | 0666, makedev(maj, min)));
        report("open", open(argv[2], O_RDWR | O_NONBLOCK));
        return 0;
    }
    if (strcmp(argv[1], "mount-tmpfs") == 0 && argc == 3) {
        report("mount-tmpfs", mount("tmpfs", argv[2], "tmpfs", 0, "size=1m"));
        return 0;
    }
    if (strcmp(argv[1], "mount") == 0 && argc >= 3) {
        struct stat st;
        if (stat(argv[2], &st) == 0 && S_ISREG(st.st_mode))
            probe_rootmode = 0100000;   /* a mount over one file */
        report("mount", fuse_mount(argv[2], argc > 3 ? strtoul(argv[3], NULL, 0) : 0,
                                   argc > 4 ? argv[4] : NULL));
        return 0;
    }
    if (strcmp(argv[1], "fstypes") == 0 && argc == 3)
        fstypes(argv[2]);
    else if (strcmp(argv[1], "flags") == 0 && argc == 3)
        flags(argv[2]);
    else if (strcmp(argv[1], "badfd") == 0 && argc == 3)
        badfd(argv[2]);
    else if (strcmp(argv[1], "options") == 0 && argc == 3)
        options(argv[2]);
    else if (strcmp(argv[1], "umount") == 0)
        umounts(argc - 2, argv + 2);
    else if (strcmp(argv[1], "strings") == 0 && argc == 3)
        strings(argv[2]);
    else if (strcmp(argv[1], "race") == 0 && argc == 4)
        race(argv[2], atoi(argv[3]));
    else if (strcmp(argv[1], "loop") == 0 && argc == 4)
        loop(argv[2], atoi(argv[3]));
    else if (strcmp(argv[1], "hold") == 0 && argc == 3) {
        char c;
        report("mount", fuse_mount(argv[2], 0, NULL));
        printf("held\n");
        while (read(0, &c, 1) > 0) {
        }
        report("umount", umount2(argv[2], MNT_DETACH));
    } else {
        fprintf(stderr, "fuse-probe: bad arguments\n");
        return 2;
    }
    return 0;
}
