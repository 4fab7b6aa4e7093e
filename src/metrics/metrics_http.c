/* metrics_http.c - the exporter: GET /metrics on metrics.address, HTTP/1.1
 * with one response per connection, from a thread of its own with its own
 * poll loop (single-threaded inside), so that a scrape waits neither for
 * watch's repairs nor for its probes of LXCFS, and never does one. Every
 * connection is bounded: MAX_CLIENTS at once, REQUEST_MAX bytes of request
 * within REQUEST_MS of its accept, CLIENT_MS to the last byte sent; then it
 * is closed. With every slot taken, a new connection takes the slot of the
 * oldest one still to send its request: silent clients cannot keep a scrape
 * out. */
#define _GNU_SOURCE
#include "resview/metrics.h"
#include "resview/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CLIENTS 16
#define REQUEST_MAX 8192
#define REQUEST_MS 1000
#define CLIENT_MS 5000
#define BODY_MAX (64u << 10)

struct client {
    int fd;                   /* -1: free */
    long accepted, deadline;
    size_t len;               /* request bytes read */
    char req[REQUEST_MAX];
    char *out;                /* the response, once the request is read */
    size_t out_len, sent;
};

struct rv_metrics_server {
    char dir[PATH_MAX];       /* the host's state_dir: the counters file */
    int listen;
    int port;
    int wake[2];              /* rv_metrics_stop: the thread ends */
    pthread_t thread;
    struct rv_metrics_gauges g;   /* written by watch, read here: __atomic */
    dev_t last_dev;           /* watch's thread only */
    struct rv_metrics_map map;    /* this thread only */
    struct client c[MAX_CLIENTS];
    char body[BODY_MAX];
};

static void client_close(struct client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    c->fd = -1;
    c->out = NULL;
    c->len = c->out_len = c->sent = 0;
}

/* The counters file as it is named now (another exporter may have replaced
 * it); created when missing. A failure is said once per change. */
static void refresh_map(struct rv_metrics_server *s)
{
    static int said;
    struct rv_error err;

    if (rv_metrics_map_current(s->dir, &s->map))
        return;
    rv_metrics_map_close(&s->map);
    if (rv_metrics_map_open(s->dir, true, &s->map, &err) < 0) {
        if (!said++)
            rv_log(RV_WARN, "metrics: %s; the shim's, hook's and broker's counts are not served",
                   err.msg);
    } else {
        said = 0;
    }
}

static int body(struct rv_metrics_server *s)
{
    struct rv_metrics_view v = { .version = RV_VERSION, .config_valid = -1 };
    struct rv_config *cfg = malloc(sizeof(*cfg));
    struct rv_error err;

    refresh_map(s);
    v.slots = s->map.slots;
    v.g.lxcfs_known = __atomic_load_n(&s->g.lxcfs_known, __ATOMIC_ACQUIRE);
    v.g.lxcfs_up = __atomic_load_n(&s->g.lxcfs_up, __ATOMIC_RELAXED);
    v.g.probe_ns = __atomic_load_n(&s->g.probe_ns, __ATOMIC_RELAXED);
    /* the configuration as the next container start reads it (a local file) */
    if (cfg) {
        v.config_valid = rv_config_load(cfg, &err) == 0 && cfg->n_warnings == 0;
        v.config_warnings = (unsigned)cfg->n_warnings;
        free(cfg);
    }
    if (v.slots) {
        uint64_t pid = __atomic_load_n(&v.slots[RV_M_NRI_PID], __ATOMIC_RELAXED);
        v.nri_registered = pid && pid < (1u << 22) && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
    }
    return rv_metrics_render(&v, s->body, sizeof(s->body));
}

static void respond(struct rv_metrics_server *s, struct client *c)
{
    const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
    const char *text = s->body;
    bool head = false;
    int n = -1;

    c->req[c->len] = '\0';
    if (strncmp(c->req, "GET ", 4) != 0 && !(head = strncmp(c->req, "HEAD ", 5) == 0)) {
        status = "405 Method Not Allowed";
        text = "GET /metrics only\n";
    } else {
        const char *path = strchr(c->req, ' ') + 1;
        size_t plen = strcspn(path, " ?\r\n");
        if (plen != 8 || strncmp(path, "/metrics", 8) != 0) {
            status = "404 Not Found";
            text = "GET /metrics only\n";
        } else if ((n = body(s)) < 0) {
            status = "500 Internal Server Error";
            text = "metrics: the text outgrew its buffer\n";
        }
    }
    if (n < 0)
        type = "text/plain; charset=utf-8";
    size_t blen = strlen(text), cap = blen + 256;
    c->out = malloc(cap);
    if (!c->out) {
        client_close(c);
        return;
    }
    n = snprintf(c->out, cap, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n", status, type, blen);
    if (n < 0 || (size_t)n + blen > cap) {
        client_close(c);
        return;
    }
    if (!head)
        memcpy(c->out + n, text, blen);
    c->out_len = (size_t)n + (head ? 0 : blen);
    c->sent = 0;
}

/* Read what is there; the request is whole at its empty line. */
static void on_readable(struct rv_metrics_server *s, struct client *c)
{
    ssize_t r = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len, MSG_DONTWAIT);

    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        client_close(c);
        return;
    }
    if (r < 0)
        return;
    c->len += (size_t)r;
    c->req[c->len] = '\0';
    if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
        c->deadline = c->accepted + CLIENT_MS;
        respond(s, c);
    }
    else if (c->len >= sizeof(c->req) - 1)
        client_close(c);      /* a request larger than any scrape's */
}

static void on_writable(struct client *c)
{
    ssize_t r = send(c->fd, c->out + c->sent, c->out_len - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        client_close(c);
        return;
    }
    c->sent += (size_t)r;
    if (c->sent == c->out_len) {
        shutdown(c->fd, SHUT_WR);
        client_close(c);
    }
}

static void accept_one(struct rv_metrics_server *s)
{
    int fd = accept4(s->listen, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    struct client *slot = NULL;

    if (fd < 0)
        return;
    for (int i = 0; i < MAX_CLIENTS && !slot; i++)
        if (s->c[i].fd < 0)
            slot = &s->c[i];
    /* full: the oldest still silent makes room */
    for (int i = 0; i < MAX_CLIENTS && !slot; i++)
        if (!s->c[i].out && (!slot || s->c[i].accepted < slot->accepted))
            slot = &s->c[i];
    if (!slot) {
        close(fd);   /* every slot is sending a response: this one tries again */
        return;
    }
    client_close(slot);
    slot->fd = fd;
    slot->accepted = rv_now_ms();
    slot->deadline = slot->accepted + REQUEST_MS;
}

static void *serve(void *arg)
{
    struct rv_metrics_server *s = arg;
    struct pollfd p[MAX_CLIENTS + 2];
    int idx[MAX_CLIENTS + 2];

    for (;;) {
        long now = rv_now_ms(), wait = -1;
        nfds_t n = 0;

        for (int i = 0; i < MAX_CLIENTS; i++) {
            struct client *c = &s->c[i];
            if (c->fd < 0)
                continue;
            if (now >= c->deadline) {
                client_close(c);
                continue;
            }
            if (wait < 0 || c->deadline - now < wait)
                wait = c->deadline - now;
            p[n] = (struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
            idx[n++] = i;
        }
        p[n] = (struct pollfd){ .fd = s->listen, .events = POLLIN };
        idx[n++] = -1;
        p[n] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
        idx[n++] = -2;
        if (poll(p, n, (int)wait) < 0) {
            if (errno == EINTR)
                continue;
            rv_log(RV_WARN, "metrics: poll: %s; no longer served", strerror(errno));
            return NULL;
        }
        for (nfds_t k = 0; k < n; k++) {
            if (!p[k].revents)
                continue;
            if (idx[k] == -2)
                return NULL;
            if (idx[k] < 0) {
                accept_one(s);
                continue;
            }
            struct client *c = &s->c[idx[k]];
            if (c->out)
                on_writable(c);
            else
                on_readable(s, c);
        }
    }
}

static int listen_on(const char *address, int *port, struct rv_error *err)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
    struct addrinfo *ai = NULL;
    struct sockaddr_storage sa;
    socklen_t slen = sizeof(sa);
    char host[64], serv[8];
    int fd, one = 1, zero = 0, e;

    if (rv_parse_listen_address(address, host, sizeof(host), serv, sizeof(serv), err) < 0)
        return rv_wrap(err, "metrics.address `%s`", address);
    /* ":PORT": every address, IPv6 and IPv4 on one socket where IPv6 exists */
    e = getaddrinfo(*host ? host : "::", serv, &hints, &ai);
    if (e && !*host)
        e = getaddrinfo("0.0.0.0", serv, &hints, &ai);
    if (e)
        return rv_fail(err, 0, "metrics.address `%s`: %s", address, gai_strerror(e));
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ai->ai_family == AF_INET6 && !*host)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &slen) < 0) {
        rv_fail(err, errno, "metrics.address `%s`", address);
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    *port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                           : ((struct sockaddr_in *)&sa)->sin_port);
    return fd;
}

int rv_metrics_serve(const struct rv_config *cfg, struct rv_metrics_server **out, struct rv_error *err)
{
    /* the node agent's DaemonSet sets it for the watch it runs: the node's
     * configuration file may be the operator's */
    const char *address = getenv("RESVIEW_METRICS_ADDRESS");
    struct rv_metrics_server *s;
    sigset_t all, old;
    int e;

    *out = NULL;
    if (!address)
        address = cfg->metrics_address;
    if (!address[0])
        return 0;
    s = calloc(1, sizeof(*s));
    if (!s)
        return rv_fail(err, ENOMEM, "metrics");
    for (int i = 0; i < MAX_CLIENTS; i++)
        s->c[i].fd = -1;
    if (pipe2(s->wake, O_CLOEXEC) < 0) {
        free(s);
        return rv_fail(err, errno, "metrics: pipe");
    }
    if (rv_snprintf(s->dir, sizeof(s->dir), "%s", cfg->host_state_dir) < 0 ||
        (s->listen = listen_on(address, &s->port, err)) < 0) {
        close(s->wake[0]);
        close(s->wake[1]);
        free(s);
        return -1;
    }
    refresh_map(s);   /* now: watch counts from its first look at LXCFS */
    /* the signals stay the main thread's (its poll() must see them) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(&s->thread, NULL, serve, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        close(s->listen);
        close(s->wake[0]);
        close(s->wake[1]);
        rv_metrics_map_close(&s->map);
        free(s);
        return rv_fail(err, e, "metrics: thread");
    }
    *out = s;
    return 0;
}

void rv_metrics_stop(struct rv_metrics_server *s)
{
    if (!s)
        return;
    if (write(s->wake[1], "x", 1) == 1)
        pthread_join(s->thread, NULL);
    else
        pthread_detach(s->thread);   /* cannot happen: left running, never freed */
    for (int i = 0; i < MAX_CLIENTS; i++)
        client_close(&s->c[i]);
    close(s->listen);
    close(s->wake[0]);
    close(s->wake[1]);
    rv_metrics_map_close(&s->map);
    free(s);
}

void rv_metrics_note_lxcfs(struct rv_metrics_server *s, bool up, dev_t dev, uint64_t t0)
{
    if (!s)
        return;
    __atomic_store_n(&s->g.probe_ns, rv_metrics_clock() - t0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->g.lxcfs_up, up ? 1 : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->g.lxcfs_known, 1, __ATOMIC_RELEASE);
    if (up && dev != s->last_dev) {
        if (s->last_dev)
            rv_metrics_add(s->dir, RV_M_LXCFS_RESTARTS);
        s->last_dev = dev;
    }
}

int rv_metrics_port(const struct rv_metrics_server *s)
{
    return s ? s->port : -1;
}
