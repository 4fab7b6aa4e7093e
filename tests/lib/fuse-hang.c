/* fuse-hang - a FUSE daemon that reads requests of one kind and never
 * answers them: a hung LXCFS, or a hostile tenant's FUSE file system.
 *
 *   fuse-hang [--file] [--hang OP] [--enter PID] MOUNTPOINT
 *
 * Mounts a tiny file system on MOUNTPOINT and serves it in the foreground
 * (no libfuse: the FUSE protocol on /dev/fuse, <linux/fuse.h>). Every name
 * exists: proc, sys, devices, system, cpu and pressure are directories,
 * anything else is a small file reading "0\n" (direct I/O: every read reaches
 * the daemon). --file: the root itself is a regular file (a mount over one
 * file, e.g. a container's /proc/meminfo).
 *
 * --hang OP (statfs, read, open, lookup, getattr, all): requests of that kind
 * are read from /dev/fuse and never answered. FUSE_INTERRUPT is read and
 * ignored too, so a process waiting for such a request stays in D state even
 * after SIGKILL (the kernel waits uninterruptibly for a request the daemon has
 * already read) until this daemon exits and the connection is aborted. That
 * is what SIGSTOP of a daemon does not show: a stopped daemon has read nothing
 * and its callers stay killable.
 *
 * --enter PID: open /dev/fuse here, then mount in the mount namespace of PID
 * (MOUNTPOINT as that process sees it), as a container's own FUSE daemon would.
 *
 * --mounts N: once ready, N children each ask for another FUSE mount on
 * MOUNTPOINT/xI with fd= this daemon's own descriptor (a broker that takes
 * the descriptor, then looks the target up through this file system, holds
 * the very connection that must answer it); each prints "spawned-mount I
 * RESULT" when its call returns.
 *
 * --release: on SIGUSR1, answer the requests held so far and hang no more
 * (a file system that answers late). --content STR: what every file reads
 * (default "0\n").
 *
 * --dev PATH: open PATH, a node of /dev/fuse's device, instead of /dev/fuse
 * (a user's daemon where /dev/fuse is root's alone, 0600, unlike Debian's
 * 0666 default: run as the user in its own user and mount namespace,
 * `unshare -Urm`, it mounts there as any user can). --verbose: print "hung OPCODE" for each request it
 * leaves unanswered (to show that nobody asked).
 *
 * fuse-hang --grab PID FD: take descriptor FD of process PID (pidfd_getfd),
 * print "grabbed", and hold it until killed: a FUSE connection whose
 * descriptor lives on outside its container, so that the kernel does not
 * abort it when the container's processes are gone.
 *
 * Prints "ready" on stdout once INIT is answered. Needs root (mount(2)). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define BUF_SIZE (FUSE_MIN_READ_BUFFER + 128 * 1024)
#define NAMES_MAX 256

static int fd = -1;
static int hang_op = -1;      /* an opcode, 0 = all, -1 = none */
static const char *content = "0\n";
static bool release_on_usr1;
static volatile sig_atomic_t released;
#define HELD_MAX 64
static char held[HELD_MAX][8192];   /* requests read and not answered (--release) */
static size_t held_len[HELD_MAX], n_held;
static int root_is_file;
static char names[NAMES_MAX][64];
static unsigned n_names;
static unsigned long hung;
static int spawn_mounts;
static const char *mountpoint;
static bool verbose;

static void spawn(void)
{
    for (int i = 0; i < spawn_mounts; i++) {
        char target[512], opts[128];
        if (fork() != 0)
            continue;
        snprintf(target, sizeof(target), "%s/x%d", mountpoint, i);
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        int r = mount("x", target, "fuse.x", 0, opts);
        printf("spawned-mount %d %s\n", i, r == 0 ? "ok" : strerrorname_np(errno));
        fflush(stdout);
        _exit(0);
    }
}

static const char *const dirs[] = { "proc", "sys", "devices", "system", "cpu", "pressure" };

static int is_dir_name(const char *name)
{
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if (strcmp(name, dirs[i]) == 0)
            return 1;
    return 0;
}

/* node id 1 = root, 2 + i = names[i] */
static int is_dir(uint64_t node)
{
    if (node == 1)
        return !root_is_file;
    return node - 2 < n_names && is_dir_name(names[node - 2]);
}

static void fill_attr(uint64_t node, struct fuse_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->ino = node;
    a->mode = is_dir(node) ? (S_IFDIR | 0555) : (S_IFREG | 0444);
    a->nlink = is_dir(node) ? 2 : 1;
    a->size = is_dir(node) ? 0 : 2;
    a->blksize = 4096;
}

static void on_usr1(int sig)
{
    (void)sig;
    released = 1;
}

static void reply(uint64_t unique, int error, const void *data, size_t len)
{
    struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + (error ? 0 : len)),
                                 .error = error, .unique = unique };
    struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)data, error ? 0 : len } };

    if (writev(fd, iov, 2) < 0 && errno != ENOENT)
        perror("fuse-hang: reply");
}

static int op_of(const char *s)
{
    if (strcmp(s, "all") == 0) return 0;
    if (strcmp(s, "statfs") == 0) return FUSE_STATFS;
    if (strcmp(s, "read") == 0) return FUSE_READ;
    if (strcmp(s, "open") == 0) return FUSE_OPEN;
    if (strcmp(s, "lookup") == 0) return FUSE_LOOKUP;
    if (strcmp(s, "getattr") == 0) return FUSE_GETATTR;
    fprintf(stderr, "fuse-hang: unknown request kind `%s`\n", s);
    exit(2);
}

static void serve(const char *buf, size_t len)
{
    const struct fuse_in_header *in = (const void *)buf;
    const char *arg = buf + sizeof(*in);

    switch (in->opcode) {
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:       /* ignored: a hung request stays hung */
        return;
    case FUSE_DESTROY:
        exit(0);
    }
    if (in->opcode != FUSE_INIT && (hang_op == 0 || (int)in->opcode == hang_op)) {
        hung++;
        if (verbose) {
            printf("hung %u\n", in->opcode);
            fflush(stdout);
        }
        if (release_on_usr1 && n_held < HELD_MAX && len <= sizeof(held[0])) {
            memcpy(held[n_held], buf, len);
            held_len[n_held++] = len;
        }
        return;                /* read, never answered (until released) */
    }
    switch (in->opcode) {
    case FUSE_INIT: {
        const struct fuse_init_in *ii = (const void *)arg;
        struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
                                   .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor
                                                                                  : FUSE_KERNEL_MINOR_VERSION,
                                   .max_readahead = ii->max_readahead, .max_write = 4096 };
        reply(in->unique, 0, &o, sizeof(o));
        printf("ready\n");
        fflush(stdout);
        spawn();
        fflush(stdout);
        return;
    }
    case FUSE_LOOKUP: {
        struct fuse_entry_out e;
        unsigned i;
        if (!is_dir(in->nodeid) || strlen(arg) >= sizeof(names[0])) {
            reply(in->unique, -ENOENT, NULL, 0);
            return;
        }
        for (i = 0; i < n_names && strcmp(names[i], arg) != 0; i++)
            ;
        if (i == n_names) {
            if (n_names == NAMES_MAX) {
                reply(in->unique, -ENOSPC, NULL, 0);
                return;
            }
            snprintf(names[n_names++], sizeof(names[0]), "%s", arg);
        }
        memset(&e, 0, sizeof(e));
        e.nodeid = 2 + i;
        fill_attr(e.nodeid, &e.attr);
        reply(in->unique, 0, &e, sizeof(e));
        return;
    }
    case FUSE_GETATTR: {
        struct fuse_attr_out a;
        memset(&a, 0, sizeof(a));
        fill_attr(in->nodeid, &a.attr);
        reply(in->unique, 0, &a, sizeof(a));
        return;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
        struct fuse_open_out o = { .fh = 0, .open_flags = in->opcode == FUSE_OPEN ? FOPEN_DIRECT_IO : 0 };
        reply(in->unique, 0, &o, sizeof(o));
        return;
    }
    case FUSE_READ: {
        const struct fuse_read_in *r = (const void *)arg;
        size_t size = strlen(content), off = r->offset < size ? (size_t)r->offset : size, n = size - off;
        reply(in->unique, 0, content + off, n < r->size ? n : r->size);
        return;
    }
    case FUSE_READDIR:
        reply(in->unique, 0, "", 0);
        return;
    case FUSE_STATFS: {
        struct fuse_statfs_out s;
        memset(&s, 0, sizeof(s));
        s.st.bsize = s.st.frsize = 4096;
        s.st.namelen = 255;
        reply(in->unique, 0, &s, sizeof(s));
        return;
    }
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_FLUSH:
    case FUSE_ACCESS:
        reply(in->unique, 0, NULL, 0);
        return;
    default:
        reply(in->unique, -ENOSYS, NULL, 0);
    }
}

int main(int argc, char **argv)
{
    static char buf[BUF_SIZE];
    char opts[256];
    const char *mnt = NULL, *enter = NULL;
    const char *dev = "/dev/fuse";

    if (argc == 4 && strcmp(argv[1], "--grab") == 0) {
        int pidfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
        if (pidfd < 0 || syscall(SYS_pidfd_getfd, pidfd, atoi(argv[3]), 0) < 0) {
            perror("fuse-hang: grab");
            return 1;
        }
        printf("grabbed\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--file") == 0)
            root_is_file = 1;
        else if (strcmp(argv[i], "--release") == 0)
            release_on_usr1 = true;
        else if (strcmp(argv[i], "--content") == 0 && i + 1 < argc)
            content = argv[++i];
        else if (strcmp(argv[i], "--hang") == 0 && i + 1 < argc)
            hang_op = op_of(argv[++i]);
        else if (strcmp(argv[i], "--enter") == 0 && i + 1 < argc)
            enter = argv[++i];
        else if (strcmp(argv[i], "--dev") == 0 && i + 1 < argc)
            dev = argv[++i];
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (strcmp(argv[i], "--mounts") == 0 && i + 1 < argc)
            spawn_mounts = atoi(argv[++i]);
        else
            mnt = argv[i];
    }
    if (!mnt) {
        fprintf(stderr, "usage: fuse-hang [--file] [--hang OP] [--enter PID] [--dev PATH] [--verbose] MOUNTPOINT\n");
        return 2;
    }
    mountpoint = mnt;
    signal(SIGPIPE, SIG_IGN);
    if (release_on_usr1) {
        struct sigaction sa = { .sa_handler = on_usr1 };   /* no SA_RESTART: read returns */
        sigaction(SIGUSR1, &sa, NULL);
    }
    fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("fuse-hang: /dev/fuse");
        return 1;
    }
    if (enter) {
        char ns[64];
        int nsfd;
        snprintf(ns, sizeof(ns), "/proc/%s/ns/mnt", enter);
        nsfd = open(ns, O_RDONLY | O_CLOEXEC);
        if (nsfd < 0 || setns(nsfd, CLONE_NEWNS) < 0) {
            perror("fuse-hang: enter the mount namespace");
            return 1;
        }
        close(nsfd);
    }
    snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other", fd,
             root_is_file ? (S_IFREG | 0444) : (S_IFDIR | 0555));
    if (mount("fuse-hang", mnt, "fuse.fuse-hang", MS_NOSUID | MS_NODEV, opts) < 0) {
        perror("fuse-hang: mount");
        return 1;
    }
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (released && hang_op != -1) {
            hang_op = -1;
            for (size_t i = 0; i < n_held; i++)
                serve(held[i], held_len[i]);
            printf("released %zu\n", n_held);
            fflush(stdout);
        }
        if (n < 0 && (errno == EINTR || errno == ENOENT))
            continue;
        if (n < 0) {
            if (errno != ENODEV)   /* unmounted */
                perror("fuse-hang: read");
            return 0;
        }
        if ((size_t)n >= sizeof(struct fuse_in_header))
            serve(buf, (size_t)n);
    }
}
