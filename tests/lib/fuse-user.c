/* fuse-user - a FUSE file system as any local user mounts one: through the
 * setuid fusermount3 (no privilege of its own), every request after INIT read
 * and never answered (FUSE_INTERRUPT too): a daemon that hangs whoever looks.
 *
 *   fuse-user [--allow-other] [--when-gone MNT --swap DIR TARGET] [--late DIR] MOUNTPOINT
 *
 * --when-gone MNT: once mounted, watch the mount table (POLLPRI on
 * /proc/self/mountinfo) until MNT (a mount point as mountinfo writes it) is
 * no longer in it, then:
 *   --swap DIR TARGET: rename DIR to DIR.old and put a symlink to TARGET in
 *     its place (the race a purge that unmounts by path, one after another,
 *     loses: its next path goes through the symlink);
 *   --late DIR: mount another such file system on DIR (made if need be), a
 *     mount made after the purge read the mount table.
 * Prints "ready" once INIT is answered, then "swapped", "late-mounted". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int allow_other;

/* fusermount3's protocol: it mounts, and hands /dev/fuse's descriptor back
 * over the socket named by _FUSE_COMMFD. */
static int mount_fuse(const char *mnt)
{
    int sv[2];
    char num[16], opts[128];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    snprintf(num, sizeof(num), "%d", sv[1]);
    snprintf(opts, sizeof(opts), "rw,nosuid,nodev,fsname=fuse-user,subtype=fuse-user%s",
             allow_other ? ",allow_other" : "");
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        setenv("_FUSE_COMMFD", num, 1);
        execlp("fusermount3", "fusermount3", "-o", opts, "--", mnt, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    char byte;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = { &byte, 1 };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = sizeof(u.buf) };
    int fd = -1;
    if (recvmsg(sv[0], &m, 0) > 0) {
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        if (cm && cm->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    if (fd < 0)
        fprintf(stderr, "fuse-user: fusermount3 did not mount %s\n", mnt);
    return fd;
}

static void serve(int fd, const char *say)
{
    static char buf[FUSE_MIN_READ_BUFFER + (1 << 20)];

    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == ENOENT || errno == EAGAIN))
            continue;
        if (n <= 0)
            exit(0);   /* ENODEV: unmounted and released */
        const struct fuse_in_header *in = (const void *)buf;
        if (in->opcode != FUSE_INIT)
            continue;  /* read, never answered */
        const struct fuse_init_in *ii = (const void *)(buf + sizeof(*in));
        struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
                                   .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor
                                                                                  : FUSE_KERNEL_MINOR_VERSION,
                                   .max_readahead = ii->max_readahead, .max_write = 4096 };
        struct fuse_out_header h = { .len = sizeof(h) + sizeof(o), .unique = in->unique };
        struct iovec iov[2] = { { &h, sizeof(h) }, { &o, sizeof(o) } };
        if (writev(fd, iov, 2) < 0)
            perror("fuse-user: INIT");
        printf("%s\n", say);
        fflush(stdout);
    }
}

/* Whether MNT is a mount point in the table (field 5; mountinfo escapes
 * blanks, MNT is given as it does). */
static int mounted(int mi, const char *mnt)
{
    static char table[1 << 20];
    size_t o = 0;
    ssize_t n;

    lseek(mi, 0, SEEK_SET);
    while (o < sizeof(table) - 1 && (n = read(mi, table + o, sizeof(table) - 1 - o)) > 0)
        o += (size_t)n;
    table[o] = '\0';
    for (char *line = table, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *f = line;
        for (int i = 0; i < 4 && f; i++)
            if ((f = strchr(f, ' ')))
                f++;
        if (f && strncmp(f, mnt, strlen(mnt)) == 0 && f[strlen(mnt)] == ' ')
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *gone = NULL, *swap = NULL, *target = NULL, *late = NULL, *mnt = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allow-other") == 0)
            allow_other = 1;
        else if (strcmp(argv[i], "--when-gone") == 0 && i + 1 < argc)
            gone = argv[++i];
        else if (strcmp(argv[i], "--swap") == 0 && i + 2 < argc) {
            swap = argv[++i];
            target = argv[++i];
        } else if (strcmp(argv[i], "--late") == 0 && i + 1 < argc)
            late = argv[++i];
        else
            mnt = argv[i];
    }
    if (!mnt) {
        fprintf(stderr, "usage: fuse-user [--allow-other] [--when-gone MNT --swap DIR TARGET] "
                        "[--late DIR] MOUNTPOINT\n");
        return 2;
    }
    int fd = mount_fuse(mnt);
    if (fd < 0)
        return 1;
    if (gone && fork() == 0) {
        close(fd);
        int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (mi < 0)
            _exit(1);
        while (mounted(mi, gone)) {
            struct pollfd p = { .fd = mi, .events = POLLPRI };
            poll(&p, 1, 100);
        }
        if (swap) {
            char old[4096];
            snprintf(old, sizeof(old), "%s.old", swap);
            if (rename(swap, old) == 0 && symlink(target, swap) == 0)
                printf("swapped\n");
            else
                perror("fuse-user: swap");
            fflush(stdout);
        }
        if (late) {
            mkdir(late, 0755);
            int lfd = mount_fuse(late);
            if (lfd >= 0)
                serve(lfd, "late-mounted");
        }
        _exit(0);
    }
    serve(fd, "ready");
}
