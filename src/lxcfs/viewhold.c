/* viewhold.c - the LXCFS files held open by `resview watch` (viewhold.h):
 * the set on the wire, and the hook's side. */
#define _GNU_SOURCE
#include "resview/viewhold.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAGIC 0x72766832u   /* "rvh2" (rvh1: no answered_ms) */

/* What goes with the descriptors: which candidate each one is. */
struct wire {
    uint32_t magic;
    uint32_t n;
    uint64_t dev;
    uint32_t absent;
    uint32_t answered_ms;
    uint8_t idx[RV_LXCFS_FILES_MAX];
};
_Static_assert(RV_LXCFS_FILES_MAX <= 32, "absent is a 32-bit mask");

int rv_viewhold_send(int c, const struct rv_viewhold *h)
{
    struct wire w = { .magic = MAGIC, .dev = h->dev, .absent = h->absent, .answered_ms = h->answered_ms };
    union {
        char buf[CMSG_SPACE(sizeof(int) * RV_LXCFS_FILES_MAX)];
        struct cmsghdr align;
    } u;
    struct iovec iov = { &w, sizeof(w) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    int fds[RV_LXCFS_FILES_MAX];

    for (size_t i = 0; h->dev && i < rv_lxcfs_ncandidates; i++)
        if (h->fd[i] >= 0) {
            w.idx[w.n] = (uint8_t)i;
            fds[w.n++] = h->fd[i];
        }
    if (w.n) {
        struct cmsghdr *cm;
        memset(&u, 0, sizeof(u));
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * w.n);
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * w.n);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * w.n);
    }
    return sendmsg(c, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(w) ? 0 : -1;
}

void rv_viewhold_init(struct rv_viewhold *h)
{
    h->dev = 0;
    h->absent = 0;
    h->answered_ms = RV_VIEWHOLD_NEVER;
    for (unsigned i = 0; i < RV_LXCFS_FILES_MAX; i++)
        h->fd[i] = -1;
}

void rv_viewhold_close(struct rv_viewhold *h)
{
    for (unsigned i = 0; i < RV_LXCFS_FILES_MAX; i++)
        if (h->fd[i] >= 0)
            close(h->fd[i]);
    rv_viewhold_init(h);
}

int rv_viewhold_fd(const struct rv_viewhold *h, const char *src)
{
    for (size_t i = 0; h->dev && i < rv_lxcfs_ncandidates; i++) {
        if (strcmp(src, rv_lxcfs_candidates[i]) != 0)
            continue;
        if (h->fd[i] >= 0)
            return h->fd[i];
        errno = h->absent & (1u << i) ? ENOENT : ENXIO;
        return -1;
    }
    errno = ENXIO;
    return -1;
}

int rv_viewhold_recv(int c, struct rv_viewhold *out)
{
    struct wire w;
    union {
        char buf[CMSG_SPACE(sizeof(int) * RV_LXCFS_FILES_MAX)];
        struct cmsghdr align;
    } u;
    struct iovec iov = { &w, sizeof(w) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = sizeof(u.buf) };
    int fds[RV_LXCFS_FILES_MAX];
    unsigned nfd;
    ssize_t r;
    bool ok;

    rv_viewhold_init(out);
    r = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
    if (r < 0)
        return -1;
    nfd = rv_msg_take_fds(&m, fds, 0, RV_LXCFS_FILES_MAX);
    ok = r == (ssize_t)sizeof(w) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
         w.magic == MAGIC && w.n == nfd && w.n <= rv_lxcfs_ncandidates;
    for (unsigned i = 0; ok && i < w.n; i++)
        ok = w.idx[i] < rv_lxcfs_ncandidates && out->fd[w.idx[i]] < 0 &&
             (out->fd[w.idx[i]] = fds[i]) >= 0;
    if (!ok) {
        for (unsigned i = 0; i < nfd; i++)
            close(fds[i]);
        rv_viewhold_init(out);
        errno = EPROTO;
        return -1;
    }
    out->dev = (dev_t)w.dev;
    out->absent = w.absent;
    out->answered_ms = w.answered_ms;
    return 0;
}

int rv_viewhold_path(const struct rv_config *cfg, char *out, size_t size)
{
    return rv_snprintf(out, size, "%s/%s", cfg->host_state_dir, RV_VIEWHOLD_SOCK) < 0 ? -1 : 0;
}

bool rv_viewhold_served(const struct rv_config *cfg)
{
    char sock[PATH_MAX];
    int c;

    if (rv_viewhold_path(cfg, sock, sizeof(sock)) < 0 || (c = rv_viewhold_ask(sock)) < 0)
        return false;
    close(c);
    return true;
}

int rv_viewhold_ask(const char *sock)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct timeval tv = { 0, RV_VIEWHOLD_WAIT_MS * 1000 };
    struct ucred cred;
    socklen_t len = sizeof(cred);
    cleanup_close int c = -1;

    if (!sock[0] || rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock) < 0)
        return -1;
    /* connected at once or not at all: a holder that accepts nothing (stopped)
     * keeps every connection queued, hung up or not, and once its queue is
     * full a blocking connect() would wait with no end (EAGAIN here) */
    c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        fcntl(c, F_SETFL, 0) < 0 || setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0)
        return -1;
    return move_fd(c);
}

void rv_viewhold_take(int c, dev_t live_dev, struct rv_viewhold *out)
{
    rv_viewhold_init(out);
    if (c < 0)
        return;
    if (!live_dev || rv_viewhold_recv(c, out) < 0 || out->dev != live_dev) {
        rv_viewhold_close(out);
        close(c);
        return;
    }
    close(c);
    /* each one a regular file of the live LXCFS (the kernel's attributes: no
     * round trip) */
    for (unsigned i = 0; i < RV_LXCFS_FILES_MAX; i++) {
        struct statx sx;
        if (out->fd[i] < 0)
            continue;
        if (rv_statx(out->fd[i], "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) < 0 ||
            !S_ISREG(sx.stx_mode) || makedev(sx.stx_dev_major, sx.stx_dev_minor) != live_dev) {
            close(out->fd[i]);
            out->fd[i] = -1;
        }
    }
}

void rv_viewhold_get(const char *sock, dev_t live_dev, struct rv_viewhold *out)
{
    rv_viewhold_take(live_dev ? rv_viewhold_ask(sock) : -1, live_dev, out);
}
