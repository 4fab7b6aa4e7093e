/* cmd_repair.c - `resview repair [--all | ID...]`. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/log.h"
#include "resview/repair.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: resview repair [--all] [--wait SECONDS] [--no-users] [ID...]\n"
               "  Put live LXCFS views back into running containers (after LXCFS died,\n"
               "  restarted or started late). IDs are tried even if they stalled before.\n"
               "  Without IDs: every container resview\n"
               "  recorded, then those of users (rootless podman, enroot run by a user:\n"
               "  users/, outside the lock root's containers take); --all: also every\n"
               "  other mount namespace on the host with stale LXCFS views (but users'\n"
               "  own). Records of containers that are gone are dropped.\n"
               "  --wait: give LXCFS that long to answer first (lxcfs.service ExecStartPost).\n"
               "  --no-users: leave users' records alone (lxcfs.service ExecStartPost:\n"
               "  nothing a user wrote can make LXCFS's start wait).\n");
}

int rv_cmd_repair(const struct rv_config *cfg, int argc, char **argv)
{
    struct rv_repair_opts o = { 0 };
    struct rv_repair_stats st;
    struct rv_error err;
    int first_id = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0 || strcmp(argv[i], "-a") == 0) {
            o.all = true;
        } else if (strcmp(argv[i], "--no-users") == 0) {
            o.no_users = true;
        } else if (strcmp(argv[i], "--wait") == 0 && i + 1 < argc) {
            uint64_t secs;
            if (rv_parse_u64(argv[++i], &secs) < 0 || secs > 3600) {
                fprintf(stderr, "resview repair: --wait: expected seconds (0..3600)\n");
                return 2;
            }
            o.wait_ms = (int)secs * 1000;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            rv_print_line(stderr, "resview repair: unknown option `%s`", argv[i]);
            usage(stderr);
            return 2;
        } else {
            if (!first_id)
                first_id = i;
            o.n_ids++;
            if (first_id + o.n_ids - 1 != i) {
                fprintf(stderr, "resview repair: options go before the container ids\n");
                return 2;
            }
        }
    }
    if (o.all && o.n_ids) {
        fprintf(stderr, "resview repair: --all and container ids exclude each other\n");
        return 2;
    }
    o.ids = first_id ? argv + first_id : NULL;
    o.named = o.n_ids > 0;   /* a person asked for these: tried even if they stalled before */
    if (rv_repair(cfg, &o, &st, stdout, &err) < 0) {
        rv_log(RV_ERROR, "repair: %s", err.msg);
        return 1;
    }
    printf("scanned %u, repaired %u, failed %u (healthy %u, dropped %u records of exited "
           "containers", st.scanned, st.repaired, st.failed, st.healthy, st.dropped);
    if (st.refused)
        printf(", refused %u records of users", st.refused);
    if (st.self_served)
        printf(", %u not attached: LXCFS runs there", st.self_served);
    if (st.later)
        printf(", %u records of users left for a later run", st.later);
    if (st.stalled)
        printf(", %u stalled: skipped, remembered in %s/stalled", st.stalled, cfg->state_dir);
    if (st.deferred)
        printf(", %u left for the next pass", st.deferred);
    printf("%s", o.all ? ", " : ")\n");
    if (o.all)
        printf("%u mount namespaces read)\n", st.namespaces);
    return st.failed || st.stalled ? 1 : 0;
}
