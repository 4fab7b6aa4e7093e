/* viewhold_serve.c - `resview watch`'s side of viewhold.h: open the LXCFS
 * files, hold them, hand them out from a thread. Kept apart from viewhold.c,
 * which the single-threaded static hook links. */
#define _GNU_SOURCE
#include "resview/viewhold.h"
#include "resview/bounded.h"
#include "resview/log.h"
#include "resview/util.h"
#include "syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

struct open_call {
    const char *root;
    dev_t dev;
};

/* The LXCFS root in the current mount namespace, if it is device dev. */
static int open_root(const char *root, dev_t dev)
{
    struct statx sx;
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0 && (rv_statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &sx) < 0 ||
                    makedev(sx.stx_dev_major, sx.stx_dev_minor) != dev)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* In the bounded child: open each candidate, send the set on descriptor 3.
 * A clone is made only of a mount of the caller's own namespace, and hooks
 * run in the one the runtimes run in, the host's: so the files are opened
 * there, in pid 1's, when this process can enter it (a node agent's pod:
 * hostPID, privileged); else in ours. */
static int open_child(void *arg)
{
    const struct open_call *c = arg;
    struct rv_viewhold h;
    int host = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
    int own = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    int root = -1;

    if (host >= 0 && setns(host, CLONE_NEWNS) == 0 && (root = open_root(c->root, c->dev)) < 0 &&
        own >= 0)
        setns(own, CLONE_NEWNS);
    if (root < 0 && (root = open_root(c->root, c->dev)) < 0)
        return 1;   /* another LXCFS by now */
    rv_viewhold_init(&h);
    h.dev = c->dev;
    for (size_t i = 0; i < rv_lxcfs_ncandidates; i++) {
        h.fd[i] = openat(root, rv_lxcfs_candidates[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (h.fd[i] < 0 && (errno == ENOENT || errno == ENOTDIR))
            h.absent |= 1u << i;
        else if (h.fd[i] < 0)
            return 1;   /* dead, or something else wrong: nothing held */
    }
    return rv_viewhold_send(3, &h) < 0 ? 1 : 0;
}

int rv_viewhold_open(const char *root, dev_t dev, int timeout_ms, struct rv_viewhold *out,
                     struct rv_error *err)
{
    struct open_call c = { root, dev };
    int sp[2], status;
    struct rv_error e;

    rv_viewhold_init(out);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return rv_fail(err, errno, "socketpair");
    if (rv_run_bounded_fd((unsigned long long)dev | 2, sp[1], open_child, &c, timeout_ms,
                          &status, &e) < 0) {
        close(sp[0]);
        close(sp[1]);
        return rv_fail(err, e.errnum, "open the LXCFS files: %s", e.msg);
    }
    close(sp[1]);
    if (status != 0 || rv_viewhold_recv(sp[0], out) < 0 || out->dev != dev) {
        rv_viewhold_close(out);
        close(sp[0]);
        return rv_fail(err, 0, "open the LXCFS files of `%s`: not all could be opened", root);
    }
    close(sp[0]);
    return 0;
}

struct rv_viewhold_server {
    pthread_mutex_t lock;
    struct rv_viewhold set;
    unsigned gen;       /* the set's: a prober of another one no longer vouches */
    long answered;      /* rv_now_ms() of LXCFS's last answer to the set's prober; 0 none */
    int listen;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct stat st;     /* the socket's inode, to remove only ours */
};

static void *serve(void *arg)
{
    struct rv_viewhold_server *s = arg;

    for (;;) {
        int c = accept4(s->listen, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
                errno == ENOBUFS || errno == ENOMEM)
                continue;
            rv_log(RV_WARN, "watch: accept on `%s`: %s; LXCFS files no longer handed out",
                   s->path, strerror(errno));
            return NULL;
        }
        pthread_mutex_lock(&s->lock);
        long ago = rv_now_ms() - s->answered;
        s->set.answered_ms = s->answered && ago >= 0 && ago < RV_VIEWHOLD_NEVER ? (uint32_t)ago
                                                                                : RV_VIEWHOLD_NEVER;
        rv_viewhold_send(c, &s->set);   /* a client gone or slow: its loss, never ours */
        pthread_mutex_unlock(&s->lock);
        close(c);
    }
}

int rv_viewhold_serve(const struct rv_config *cfg, struct rv_viewhold_server **out,
                      struct rv_error *err)
{
    struct rv_viewhold_server *s = calloc(1, sizeof(*s));
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    sigset_t all, old;
    pthread_t t;
    int e;

    *out = NULL;
    if (!s)
        return rv_fail(err, ENOMEM, "views socket");
    pthread_mutex_init(&s->lock, NULL);
    rv_viewhold_init(&s->set);
    s->listen = -1;
    if (rv_snprintf(s->path, sizeof(s->path), "%s/%s", cfg->state_dir, RV_VIEWHOLD_SOCK) < 0 ||
        rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/.%s.%d", cfg->state_dir,
                    RV_VIEWHOLD_SOCK, (int)getpid()) < 0) {
        free(s);
        return rv_fail(err, ENAMETOOLONG, "views socket under `%s`", cfg->state_dir);
    }
    if (rv_mkdir_p(cfg->state_dir, 0755, err) < 0) {
        free(s);
        return -1;
    }
    /* bound under a name of its own, then renamed over a stale one */
    unlink(sa.sun_path);
    s->listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen < 0 || bind(s->listen, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        chmod(sa.sun_path, 0600) < 0 || listen(s->listen, 64) < 0 ||
        stat(sa.sun_path, &s->st) < 0 || rename(sa.sun_path, s->path) < 0) {
        rv_fail(err, errno, "views socket `%s`", s->path);
        unlink(sa.sun_path);
        if (s->listen >= 0)
            close(s->listen);
        free(s);
        return -1;
    }
    /* the signals stay the main thread's (its poll() must see them) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(&t, NULL, serve, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        unlink(s->path);
        close(s->listen);
        free(s);
        return rv_fail(err, e, "views socket: thread");
    }
    pthread_detach(t);
    *out = s;
    return 0;
}

struct prober {
    struct rv_viewhold_server *s;
    unsigned gen;
    int fd;             /* a held file's (O_PATH), reopened to be read */
};

/* One read of a held file every RV_VIEWHOLD_PROBE_MS while its set is served
 * (viewhold.h): each answer vouches for the set. A daemon that never answers
 * leaves this thread waiting, and the answers age; a dead one ends it. */
static void *probe(void *arg)
{
    struct prober *p = arg;
    const struct timespec nap = { RV_VIEWHOLD_PROBE_MS / 1000, RV_VIEWHOLD_PROBE_MS % 1000 * 1000000L };
    char path[32], c;
    bool mine = true;
    int fd;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", p->fd);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    close(p->fd);
    while (fd >= 0 && mine && pread(fd, &c, 1, 0) >= 0) {
        pthread_mutex_lock(&p->s->lock);
        if ((mine = p->s->gen == p->gen))
            p->s->answered = rv_now_ms();
        pthread_mutex_unlock(&p->s->lock);
        if (mine)
            nanosleep(&nap, NULL);
    }
    if (fd >= 0)
        close(fd);
    free(p);
    return NULL;
}

/* A prober for the set of generation gen: of the first file of the
 * liveness order it holds. None: the set is served without answers. */
static void start_prober(struct rv_viewhold_server *s, const struct rv_viewhold *h, unsigned gen)
{
    struct prober *p = NULL;
    sigset_t all, old;
    pthread_t t;
    int held = -1;

    for (size_t i = 0; i < rv_lxcfs_nliveness && held < 0; i++)
        held = rv_viewhold_fd(h, rv_lxcfs_liveness[i]);
    if (held < 0 || !(p = malloc(sizeof(*p))) || (p->fd = fcntl(held, F_DUPFD_CLOEXEC, 3)) < 0) {
        free(p);
        return;
    }
    p->s = s;
    p->gen = gen;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (pthread_create(&t, NULL, probe, p) == 0) {
        pthread_detach(t);
    } else {
        close(p->fd);
        free(p);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void rv_viewhold_publish(struct rv_viewhold_server *s, struct rv_viewhold *h)
{
    struct rv_viewhold old;
    unsigned gen;

    pthread_mutex_lock(&s->lock);
    old = s->set;
    s->set = *h;
    gen = ++s->gen;
    s->answered = 0;
    if (s->set.dev)
        start_prober(s, &s->set, gen);
    pthread_mutex_unlock(&s->lock);
    rv_viewhold_init(h);
    rv_viewhold_close(&old);
}

void rv_viewhold_unlink(struct rv_viewhold_server *s)
{
    struct stat st;

    if (s && stat(s->path, &st) == 0 && st.st_dev == s->st.st_dev && st.st_ino == s->st.st_ino)
        unlink(s->path);
}
