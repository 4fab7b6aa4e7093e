/* cmd_watch.c - `resview watch`: repair whenever LXCFS comes back.
 * Event-driven: the mount table of our namespace changes when LXCFS mounts
 * (poll POLLPRI on /proc/self/mountinfo); then wait until it answers and
 * repair. While a FUSE mount is there but does not answer, look again every
 * 100 ms. Every --interval seconds (default 60) a quiet repair catches what
 * no mount event announces: a container whose hook timed out, records of
 * containers that are gone. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/log.h"
#include "resview/lxcfs.h"
#include "resview/metrics.h"
#include "resview/repair.h"
#include "resview/viewhold.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#define RETRY_MS 100

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static void stamp(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

/* Hand out the files of the LXCFS of device dev from now on (0: nothing).
 * Returns what is held. */
static dev_t hold(const struct rv_config *cfg, struct rv_viewhold_server *vh, dev_t dev)
{
    struct rv_viewhold h;
    struct rv_error err;

    rv_viewhold_init(&h);
    if (dev && rv_viewhold_open(cfg->lxcfs_root, dev, 1000, &h, &err) < 0) {
        rv_log(RV_WARN, "watch: %s; hooks look them up themselves", err.msg);
        dev = 0;
    }
    rv_viewhold_publish(vh, &h);
    return dev;
}

int rv_cmd_watch(const struct rv_config *cfg, int argc, char **argv)
{
    struct rv_repair_opts o = { 0 };
    struct sigaction sa;
    sigset_t stops, waiting_mask;
    cleanup_close int fd = -1;
    struct rv_viewhold_server *vh = NULL;
    struct rv_metrics_server *metrics = NULL;
    struct rv_error verr;
    dev_t healed = 0, held = 0;
    bool waiting = false;
    uint64_t interval = 60;
    long next_sweep;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0 || strcmp(argv[i], "-a") == 0) {
            o.all = true;
        } else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
            if (rv_parse_u64(argv[++i], &interval) < 0 || interval > 86400) {
                fprintf(stderr, "resview watch: --interval: expected seconds (0..86400)\n");
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: resview watch [--all] [--interval SECONDS]\n"
                   "  Stay running; whenever LXCFS (lxcfs.root) comes back, repair as\n"
                   "  `resview repair [--all]` would. Also repair quietly every SECONDS\n"
                   "  (default 60, 0: never) while LXCFS is up.\n");
            return 0;
        } else {
            rv_print_line(stderr, "resview watch: unknown argument `%s`", argv[i]);
            return 2;
        }
    }
    /* SIGTERM and SIGINT are taken only inside ppoll(): one that came
     * between the loop's test and the wait would otherwise be lost to a wait
     * with no end (interval 0). Blocked before the servers' threads start,
     * so they inherit it. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, &waiting_mask);
    sigdelset(&waiting_mask, SIGTERM);
    sigdelset(&waiting_mask, SIGINT);
    fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rv_log(RV_ERROR, "watch: open /proc/self/mountinfo: %s", strerror(errno));
        return 1;
    }
    if (rv_viewhold_serve(cfg, &vh, &verr) < 0)
        rv_log(RV_WARN, "watch: %s; hooks look the LXCFS files up themselves", verr.msg);
    if (rv_metrics_serve(cfg, &metrics, &verr) < 0)
        rv_log(RV_WARN, "watch: %s; no metrics served", verr.msg);
    rv_print_line(stdout, "watching `%s` for LXCFS", cfg->lxcfs_root);
    fflush(stdout);
    next_sweep = rv_now_ms() + (long)interval * 1000;
    while (!stop) {
        struct rv_lxcfs lx;
        struct rv_error err;
        struct pollfd p = { .fd = fd, .events = POLLPRI };
        char ts[32];
        uint64_t probe_t0 = rv_metrics_clock();

        if (rv_lxcfs_discover(cfg->lxcfs_root, 1000, &lx, &err) < 0) {
            rv_log(RV_WARN, "watch: %s", err.msg);
            lx.live = lx.mounted = false;
        }
        rv_metrics_note_lxcfs(metrics, lx.live, lx.live ? lx.dev : 0, probe_t0);
        if (vh && (lx.live ? lx.dev != held : held != 0))
            held = hold(cfg, vh, lx.live ? lx.dev : 0);
        if (lx.live && lx.dev != healed) {
            struct rv_repair_stats st;
            stamp(ts, sizeof(ts));
            if (rv_repair(cfg, &o, &st, stdout, &err) < 0) {
                rv_print_line(stdout, "%s repair: %s", ts, err.msg);
                rv_log(RV_WARN, "watch: repair: %s", err.msg);
                waiting = true;   /* try again shortly */
            } else {
                rv_print_line(stdout, "%s LXCFS answers on `%s` (device %u:%u): scanned %u, "
                       "repaired %u, failed %u, dropped %u%s%.0u", ts, cfg->lxcfs_root, major(lx.dev),
                       minor(lx.dev), st.scanned, st.repaired, st.failed, st.dropped,
                       st.stalled ? ", stalled (skipped) " : "", st.stalled);
                rv_log(RV_INFO, "watch: LXCFS back on `%s`: repaired %u, failed %u",
                       cfg->lxcfs_root, st.repaired, st.failed);
                healed = lx.dev;
                waiting = false;
            }
            fflush(stdout);
        } else if (lx.live) {
            waiting = false;
            if (interval && rv_now_ms() >= next_sweep) {
                /* quiet unless it changed something: then what, as the
                 * repair after LXCFS's return says it */
                struct rv_repair_stats st;
                char *said = NULL;
                size_t n_said = 0;
                FILE *quiet = open_memstream(&said, &n_said);
                if (quiet && rv_repair(cfg, &o, &st, quiet, &err) == 0 && fflush(quiet) == 0 &&
                    (st.repaired || st.failed || st.dropped)) {
                    stamp(ts, sizeof(ts));
                    fwrite(said, 1, n_said, stdout);
                    printf("%s sweep: scanned %u, repaired %u, failed %u, dropped %u\n", ts,
                           st.scanned, st.repaired, st.failed, st.dropped);
                    fflush(stdout);
                }
                if (quiet)
                    fclose(quiet);
                free(said);
            }
        } else {
            /* mounted but not answering yet: look again soon; gone: wait for a mount */
            waiting = lx.mounted;
            healed = 0;
        }
        if (interval && rv_now_ms() >= next_sweep)
            next_sweep = rv_now_ms() + (long)interval * 1000;
        long ms = waiting ? RETRY_MS : interval ? next_sweep - rv_now_ms() : 0;
        struct timespec left = { .tv_sec = ms > 0 ? ms / 1000 : 0, .tv_nsec = ms > 0 ? ms % 1000 * 1000000 : 0 };
        if (ppoll(&p, 1, waiting || interval ? &left : NULL, &waiting_mask) < 0 && errno != EINTR) {
            rv_log(RV_ERROR, "watch: poll: %s", strerror(errno));
            rv_viewhold_unlink(vh);
            return 1;
        }
    }
    rv_viewhold_unlink(vh);
    rv_metrics_stop(metrics);
    return 0;
}
