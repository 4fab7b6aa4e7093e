/* nri_plugin.c - the plugin's connection: connect to the runtime's NRI
 * socket, register, answer its calls (nri_handle.c) until it goes away,
 * then connect again with backoff. One thread: a call is answered before the
 * next is read, each within the runtime's request timeout (the edits read a
 * few cgroup files and decide). One instance per socket: the socket's lock
 * (rv_nri_lock) is held for the process's life, and its status counts the
 * calls answered. Once configured, it writes its registration record
 * (nri_record.c) for `resview doctor` and the node agent's readiness; the
 * record goes when the connection ends, and on SIGTERM or SIGINT, each time
 * only if it is still ours. Synchronize's containers get their views in a
 * child once the answer is sent (nri_sync.c). */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/hook.h"
#include "resview/log.h"
#include "resview/metrics.h"
#include "resview/viewhold.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 10000
/* After a registration the runtime closed during Synchronize: a runtime
 * that crashes on it (containerd 2.1.5's NRI) must not be crashed in a
 * loop, nor one whose split fails kept busy. 15 s, doubling for each in a
 * row, at most 5 min (rv_nri_sync_backoff_ms: the first wait). */
#define SYNC_BACKOFF_MS 15000
#define SYNC_BACKOFF_MAX_MS 300000
#define WRITE_TIMEOUT_S 5
/* NRI's default registration timeout is 5 s: the runtime's Configure comes
 * well before this, or the runtime is not listening to us */
#define CONFIGURE_WAIT_MS 30000

/* The record's path, its lock's, and what we wrote there: the signal
 * handler removes it if it is still that (open, read, flock, unlink and
 * _exit are async-signal-safe); the signals are blocked while the loop
 * writes or removes it. */
long rv_nri_sync_backoff_ms;

static char record_path[PATH_MAX], record_lock[PATH_MAX];
static char *record_text;
static volatile sig_atomic_t record_written;
static sigset_t stop_signals;
static const char *metrics_dir;   /* the node's counters: our pid while registered */

static void on_stop(int sig)
{
    (void)sig;
    if (record_written)
        rv_nri_record_drop(record_path, record_lock, record_text);
    _exit(0);
}

static void record_drop(void)
{
    sigprocmask(SIG_BLOCK, &stop_signals, NULL);
    if (record_written) {
        record_written = 0;
        rv_metrics_swap(metrics_dir, RV_M_NRI_PID, (uint64_t)getpid(), 0);
        rv_nri_record_drop(record_path, record_lock, record_text);
        free(record_text);
        record_text = NULL;
    }
    sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
}

static void record_write(struct rv_nri_plugin *p, int fd)
{
    struct rv_error e;
    char *text = NULL;

    sigprocmask(SIG_BLOCK, &stop_signals, NULL);
    if (rv_nri_record_write(p->cfg, p->socket, p->runtime[0] ? p->runtime : "?", fd,
                            (long long)p->request_timeout_ms, &text, &e) < 0) {
        rv_log(RV_WARN, "NRI: the registration record: %s (doctor and the node agent "
               "will say the plugin is not registered)", e.msg);
    } else {
        free(record_text);
        record_text = text;
        record_written = 1;
        metrics_dir = p->cfg->host_state_dir;
        rv_metrics_swap(metrics_dir, RV_M_NRI_PID, RV_METRICS_ANY, (uint64_t)getpid());
    }
    sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int dial(const char *path, struct rv_error *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct timeval tv = { WRITE_TIMEOUT_S, 0 };
    cleanup_close int fd = -1;

    if (rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) < 0)
        return rv_fail(err, ENAMETOOLONG, "NRI socket `%s`", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return rv_fail(err, errno, "socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return rv_fail(err, errno, "connect to the NRI socket `%s`", path);
    /* a runtime that stops reading must not hold us forever */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return move_fd(fd);
}

static int send_all(int fd, const struct rv_bytes *b, struct rv_error *err)
{
    for (size_t at = b->off; at < b->len;) {
        ssize_t n = send(fd, b->p + at, b->len - at, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return rv_fail(err, n < 0 ? errno : EPIPE, "NRI: write to the runtime");
        at += (size_t)n;
    }
    return 0;
}

static int send_msg(int fd, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags,
                    const uint8_t *payload, size_t len, struct rv_error *err)
{
    struct rv_bytes out = { 0 };
    int r = rv_mux_put(&out, conn, stream, type, flags, payload, len, err);

    if (r == 0)
        r = send_all(fd, &out, err);
    rv_bytes_free(&out);
    return r;
}

/* Views at StartContainer (nri.h): watch holds the LXCFS files now
 * (viewhold.h; whether it vouches is asked as the container starts). */
static bool start_views_ok(const struct rv_nri_plugin *p)
{
    return rv_viewhold_served(p->cfg);
}

static int start_views(const struct rv_nri_plugin *p, const char *id, pid_t pid)
{
    return rv_hook_views_started(p->cfg, id, pid, 0);
}

/* One call of the runtime answered: a request come whole (m), or the
 * Synchronize read as it came (m NULL, its stream). */
static int call(struct rv_nri_plugin *p, int fd, const struct rv_ttrpc_msg *m, uint32_t stream,
                struct rv_error *err)
{
    cleanup_free uint8_t *out = NULL;
    size_t n = 0;
    long t0 = rv_now_ms();
    uint64_t call_t0 = rv_metrics_clock();

    /* as the shim at each create: the hook may come (or go) while we run */
    p->hook_missing = access(p->cfg->hook_path, X_OK) != 0;
    bool was_configured = p->configured;
    if (p->status)
        p->status->busy_ms = rv_nri_clock_ms();
    if ((m ? rv_nri_handle(p, m->data, m->len, &out, &n) : rv_nri_stream_answer(p, &out, &n)) < 0)
        return rv_fail(err, ENOMEM, "NRI: an answer");
    if (send_msg(fd, RV_MUX_PLUGIN, m ? m->stream : stream, RV_TTRPC_RESPONSE, 0, out, n, err) < 0)
        return -1;
    if (p->status) {
        p->status->last_ms = rv_nri_clock_ms();
        p->status->answered++;
        p->status->busy_ms = 0;
    }
    if (p->configured && !was_configured)
        record_write(p, fd);   /* Configure answered: the runtime calls us from now on */
    if (p->sync_ready) {
        int keep[] = { fd, p->lock_fd, -1 };
        p->sync_ready = false;
        rv_nri_sync_start(p, keep);
    }
    rv_metrics_nri_call(p->cfg->host_state_dir, rv_metrics_clock() - call_t0);
    long took = rv_now_ms() - t0;
    if (p->request_timeout_ms > 0 && took * 2 > p->request_timeout_ms)
        rv_log(RV_WARN, "NRI: a call took %ld ms (the runtime waits %lld ms)", took,
               (long long)p->request_timeout_ms);
    return 0;
}

/* The runtime's calls on connection 1, and its answer to ours on 2. */
static int dispatch(struct rv_nri_plugin *p, int fd, struct rv_mux_in *in, bool *registered,
                    struct rv_error *err)
{
    struct rv_ttrpc_msg m;
    uint32_t stream;
    size_t have;
    int r;

    if (rv_ttrpc_diverted(in, &stream) && call(p, fd, NULL, stream, err) < 0)
        return -1;
    while ((r = rv_ttrpc_next(in, RV_MUX_PLUGIN, &m, err)) == 1)
        /* not a Request: a stream's data, no method of NRI streams */
        if (m.type == RV_TTRPC_REQUEST && call(p, fd, &m, 0, err) < 0)
            return -1;
    if (r < 0)
        return -1;
    /* a Synchronize (a tenant's environments, 4 MiB) is read as it comes,
     * through the window of session: the kernel's copy of it lands in a
     * buffer in cache, read there at once (nri_sync.c) */
    if (rv_ttrpc_partial(in, RV_MUX_PLUGIN, &m, &have) && m.type == RV_TTRPC_REQUEST &&
        rv_nri_stream_start(p, m.data, have, m.len))
        rv_ttrpc_divert(in, RV_MUX_PLUGIN, rv_nri_sync_stream, p);
    while ((r = rv_ttrpc_next(in, RV_MUX_RUNTIME, &m, err)) == 1) {
        if (m.type != RV_TTRPC_RESPONSE || m.stream != 1)
            continue;
        if (rv_nri_register_result(m.data, m.len, err) < 0)
            return -1;
        *registered = true;
    }
    return r;
}

/* One connection, from registration until the runtime goes away: 0 when it
 * closed the socket between calls, 1 when it closed it on a call (our answer
 * met a closed socket, or the end came in the middle of a call: err says
 * which), -1 on an error (err). */
static int session(struct rv_nri_plugin *p, int fd, struct rv_error *err)
{
    cleanup_free uint8_t *reg = NULL;
    struct rv_mux_in in = { 0 };
    size_t reg_len;
    bool registered = false;
    long since = rv_now_ms();
    int r = -1;

    if (rv_nri_register_request(&reg, &reg_len, err) < 0 ||
        send_msg(fd, RV_MUX_RUNTIME, 1, RV_TTRPC_REQUEST, RV_TTRPC_FLAG_REMOTE_CLOSED, reg, reg_len, err) < 0)
        goto out;
    for (;;) {
        /* the window: small enough to stay in cache from the kernel's copy
         * to our read of it (a Synchronize's 104 MiB cost the kernel half
         * the time into it than into 4 MiB of fresh memory) */
        static uint8_t buf[256 << 10];
        struct pollfd pfd = { fd, POLLIN, 0 };
        int w = poll(&pfd, 1, p->configured ? -1 : 1000);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rv_fail(err, errno, "poll");
            goto out;
        }
        if (w == 0) {
            if (rv_now_ms() - since > CONFIGURE_WAIT_MS) {
                rv_fail(err, ETIMEDOUT, "NRI: registered%s, but no Configure from the runtime in %d s",
                        registered ? "" : " (no answer yet)", CONFIGURE_WAIT_MS / 1000);
                goto out;
            }
            continue;
        }
        size_t room = 0;
        uint8_t *direct = rv_mux_direct(&in, &room);
        /* the rest of a frame in one call, or a window of it: the kernel
         * waits for it, not a poll and a read per 200 KiB of 4 MiB */
        ssize_t n = direct ? recv(fd, direct, room, MSG_WAITALL)
                    : room ? recv(fd, buf, room < sizeof(buf) ? room : sizeof(buf), MSG_WAITALL)
                           : recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rv_fail(err, errno, "NRI: read from the runtime");
            goto out;
        }
        if (n == 0) {
            r = 0;
            if (rv_mux_mid_call(&in, RV_MUX_PLUGIN)) {
                rv_fail(err, 0, "the end came in the middle of a call");
                r = 1;
            }
            goto out;
        }
        if (direct)
            rv_mux_direct_done(&in, (size_t)n);
        else if (rv_mux_feed(&in, buf, (size_t)n, err) < 0)
            goto out;
        if (dispatch(p, fd, &in, &registered, err) < 0) {
            if (err->errnum == EPIPE || err->errnum == ECONNRESET)
                r = 1;   /* it gave up on our answer */
            goto out;
        }
    }
out:
    record_drop();
    rv_mux_in_free(&in);
    return r;
}

/* The connection ended while the runtime was synchronizing us: said at
 * warn with what came and the runtime's likely reason, counted in the
 * status (doctor, readiness), and the wait before the next registration. */
static long sync_closed(struct rv_nri_plugin *p, const char *how)
{
    size_t msgs, containers, bytes;
    long base = rv_nri_sync_backoff_ms > 0 ? rv_nri_sync_backoff_ms : SYNC_BACKOFF_MS, wait = base;
    uint64_t row = 1;

    rv_nri_sync_pending(p, &msgs, &containers, &bytes);
    if (p->status) {
        row = ++p->status->sync_closed;
        p->status->sync_closed_total++;
        p->status->sync_closed_ms = rv_nri_clock_ms();
    }
    for (uint64_t i = 1; i < row && wait < SYNC_BACKOFF_MAX_MS; i++)
        wait *= 2;
    wait = wait > SYNC_BACKOFF_MAX_MS && base < SYNC_BACKOFF_MAX_MS ? SYNC_BACKOFF_MAX_MS : wait;
    if (p->status)
        p->status->retry_ms = rv_nri_clock_ms() + wait;
    rv_log(RV_WARN, "NRI: the runtime closed the connection during Synchronize (%s; %zu messages answered, "
           "naming %zu containers, %.1f MiB): its split of the running containers into messages failed "
           "(containerd: \"failed to synchronize plugin with split messages\", when a few containers' "
           "environments exceed one message of 4 MiB) or it crashed on it (its split panics when fewer "
           "than 4 pods are left to send); its log says which. Containers created until a registration completes start "
           "without variables or views; %llu in a row: registering again in %ld s", how, msgs, containers,
           (double)bytes / (1 << 20), (unsigned long long)row, wait / 1000);
    return wait;
}

int rv_nri_run(const struct rv_config *cfg, const char *socket_path, struct rv_error *err)
{
    struct rv_host host;
    long backoff = BACKOFF_MIN_MS;
    bool said_down = false;

    struct sigaction sa = { .sa_handler = on_stop };
    sigset_t stop;

    struct rv_nri_status *status = NULL;
    int lock_fd = -1;

    rv_host_defaults(&host);
    signal(SIGPIPE, SIG_IGN);
    if (rv_nri_record_path(cfg, record_path, sizeof(record_path)) < 0 ||
        rv_snprintf(record_lock, sizeof(record_lock), "%s/nri-plugin.lock", cfg->state_dir) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir `%s`", cfg->state_dir);
    /* one instance per socket: a second one stops here, touching nothing */
    if (rv_nri_lock(cfg, socket_path, &lock_fd, &status, err) < 0)
        return -1;
    /* a record that a killed plugin left (SIGKILL) is not ours to trust */
    struct rv_nri_registration old;
    struct rv_error e0;
    if (rv_nri_record_read(cfg, &old, &e0) == RV_NRI_REG_STALE)
        unlink(record_path);
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    stop_signals = stop;
    sigfillset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigprocmask(SIG_UNBLOCK, &stop, NULL);
    rv_log(RV_INFO, "NRI: plugin %s (index %s) on `%s`", RV_NRI_PLUGIN_NAME, RV_NRI_PLUGIN_IDX,
           socket_path);
    for (;;) {
        struct rv_nri_plugin p = { .cfg = cfg, .host = &host, .socket = socket_path,
                                   .hook_missing = access(cfg->hook_path, X_OK) != 0,
                                   .status = status, .lock_fd = lock_fd,
                                   .start_views_ok = start_views_ok, .start_views = start_views };
        struct rv_error e;
        cleanup_close int fd = dial(socket_path, &e);
        if (fd < 0) {
            /* once per outage, not once per try */
            if (!said_down)
                rv_log(RV_WARN, "%s; trying again (every %d s at most)", e.msg, BACKOFF_MAX_MS / 1000);
            said_down = true;
            sleep_ms(backoff);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        said_down = false;
        if (p.hook_missing)
            rv_log(RV_WARN, "NRI: the hook `%s` cannot be run here: containers get no LXCFS views",
                   cfg->hook_path);
        long start = rv_now_ms(), wait = 0;
        size_t msgs, containers, bytes;
        int how = session(&p, fd, &e);
        if (rv_nri_sync_pending(&p, &msgs, &containers, &bytes)) {
            /* the runtime went away (a close, a reset: a crash) during it;
             * what came is healed either way: those views need no NRI */
            int keep[] = { fd, lock_fd, -1 };
            if (how >= 0 || e.errnum == ECONNRESET || e.errnum == EPIPE)
                wait = sync_closed(&p, how != 0 ? e.msg : "closed between messages");
            rv_nri_sync_end(&p);
            rv_nri_sync_start(&p, keep);
        }
        rv_nri_sync_free(&p);
        if (wait > 0) {
            sleep_ms(wait);
            continue;
        } else if (how < 0)
            rv_log(RV_ERROR, "%s; connecting again", e.msg);
        else if (how == 1)
            rv_log(RV_ERROR, "NRI: the runtime closed the connection: containers created meanwhile get "
                   "views at re-registration, not variables (%s; %lu containers, %lu adjusted, %lu "
                   "unchanged or refused); connecting again", e.msg, p.created, p.adjusted, p.failed);
        else
            rv_log(RV_INFO, "NRI: the runtime closed the connection (%lu containers, %lu adjusted, "
                   "%lu unchanged or refused); connecting again", p.created, p.adjusted, p.failed);
        /* a session that lasted resets the backoff; one that failed at once grows it */
        if (rv_now_ms() - start > 60000)
            backoff = BACKOFF_MIN_MS;
        sleep_ms(backoff);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    return 0;
}
