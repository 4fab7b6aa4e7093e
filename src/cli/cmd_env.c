/* cmd_env.c - `resview env`: what a container would get, and which limit won. */
#define _GNU_SOURCE
#include "resview/args.h"
#include "resview/cli.h"
#include "resview/edit.h"
#include "resview/gpus.h"
#include "resview/spec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* Whether a Go program sizes itself: Go 1.25 and later follow the CPU limit of
 * their own cgroup (not an ancestor's), and a resize, when GOMAXPROCS is unset. */
static void gomaxprocs_note(json_t *root, json_t *env, const struct rv_limits *lim,
                            const struct rv_env_plan *plan)
{
    const char *why;

    for (int i = 0; i < plan->n; i++) {
        enum rv_var_status s = plan->items[i].status;
        if (strcmp(plan->items[i].name, "GOMAXPROCS") != 0 || rv_env_get(env, "GOMAXPROCS"))
            continue;
        if (s == RV_VAR_INJECT) {
            printf("note: GOMAXPROCS is set, so a Go 1.25+ program keeps that value through an "
                   "in-place resize; " RV_ANN_GOMAXPROCS ": \"false\" (or " RV_ENV_GOMAXPROCS "=0) "
                   "leaves it to the program\n");
            return;
        }
        if (s == RV_VAR_DISABLED)
            why = "env.vars GOMAXPROCS false on this node; " RV_ANN_GOMAXPROCS ": \"true\" sets it";
        else if (s == RV_VAR_LEFT)
            why = json_object_get(json_object_get(root, "annotations"), RV_ANN_GOMAXPROCS)
                      ? "annotation " RV_ANN_GOMAXPROCS "=\"false\"" : RV_ENV_GOMAXPROCS "=0";
        else
            return;
        printf("note: GOMAXPROCS is left to the program (%s): Go 1.25+ follows its cgroup's CPU "
               "limit itself, older Go counts every CPU it may run on", why);
        if (lim->view_cpus > lim->cpus)
            printf("; but the CPU limit here is an ancestor's (%u), which Go does not read: it "
                   "counts more CPUs", lim->cpus);
        printf("\n");
    }
}

int rv_cmd_env(const struct rv_config *cfg, int argc, char **argv)
{
    const char *bundle = NULL, *file = NULL, *runtime = "runc";
    bool systemd = false;
    struct rv_spec spec;
    struct rv_error err;
    struct rv_host host;
    struct rv_limits lim;
    struct rv_env_plan plan;
    json_t *env;
    int r, gomaxprocs = -1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bundle") == 0 && i + 1 < argc)
            bundle = argv[++i];
        else if (strncmp(argv[i], "--bundle=", 9) == 0)
            bundle = argv[i] + 9;
        else if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strncmp(argv[i], "--spec=", 7) == 0)
            file = argv[i] + 7;
        else if (strcmp(argv[i], "--systemd-cgroup") == 0)
            systemd = true;
        else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
            runtime = argv[++i];
        else if (strncmp(argv[i], "--runtime=", 10) == 0)
            runtime = argv[i] + 10;
        else {
            fprintf(stderr, "usage: resview env --bundle DIR | --spec FILE [--systemd-cgroup] "
                            "[--runtime runc|crun]\n");
            return 2;
        }
    }
    if (!!bundle == !!file) {
        fprintf(stderr, "resview env: give exactly one of --bundle DIR or --spec FILE\n");
        return 2;
    }
    if (bundle) {
        r = rv_spec_load(&spec, bundle, &rv_gpus_spec_extra, &err);
    } else {
        cleanup_free char *text = NULL;
        size_t len;
        r = rv_read_file_at(AT_FDCWD, file, RV_SPEC_MAX, &text, &len, NULL, &err);
        if (r == 0)
            r = rv_spec_parse(&spec, text, len, &rv_gpus_spec_extra, &err);
    }
    if (r < 0) {
        fprintf(stderr, "resview env: %s\n", err.msg);
        return 1;
    }
    rv_host_defaults(&host);
    /* a relative or empty cgroupsPath is placed by the runtime's own rule */
    host.cg_rule = rv_cg_rule_of(runtime);
    r = rv_spec_request(spec.root, RV_ANN_ENV, "RESVIEW_ENV", &err);
    if (r == -2 ||
        (gomaxprocs = rv_spec_request(spec.root, RV_ANN_GOMAXPROCS, RV_ENV_GOMAXPROCS, &err)) == -2 ||
        !(env = rv_spec_env(spec.root, &err)) ||
        rv_limits_compute(spec.root, &host, cfg->rounding, systemd, &lim, &err) < 0) {
        fprintf(stderr, "resview env: %s\n", err.msg);
        rv_spec_free(&spec);
        return 1;
    }
    printf("cpus    = %u\t(%s)\n", lim.cpus, lim.cpus_why);
    if (lim.view_cpus > lim.cpus)
        printf("note: LXCFS's CPU views (/proc/cpuinfo, /proc/stat) will show %u CPUs: LXCFS "
               "counts the CPU quota of the container's own cgroup, not of an ancestor\n",
               lim.view_cpus);
    if (lim.has_mem)
        printf("mem_mib = %llu\t(%s)\n", (unsigned long long)lim.mem_mib, lim.mem_why);
    else
        printf("mem_mib = none\t(%s)\n", lim.mem_why);
    printf("gpus    = %u\t(%s)\n", lim.gpus, lim.gpus_why);
    if (cfg->gpu_runtime[0]) {
        char why[256] = "gpu.containers is all";
        bool through = cfg->gpu_all || rv_gpus_wanted(spec.root, why, sizeof(why));
        printf("next    = %s\t(%s%s)\n", through ? cfg->gpu_runtime : "the first of runtimes", why,
               through ? ": gpu.runtime" : ": not through gpu.runtime");
    }
    if (!cfg->env_enabled || r == 0)
        printf("no variables: %s\n", r == 0 ? "the container opts out (resview.io/env or RESVIEW_ENV)"
                                            : "env.enabled is false");
    else {
        rv_env_plan(cfg, &lim, env, gomaxprocs, &plan);
        for (int i = 0; i < plan.n; i++) {
            char kv[96];
            const char *cur = rv_env_get(env, plan.items[i].name);
            snprintf(kv, sizeof(kv), "%s=%s", plan.items[i].name,
                     plan.items[i].status == RV_VAR_KEPT && cur ? cur : plan.items[i].value);
            printf("%-28s %s\n", kv, rv_var_status_text(plan.items[i].status));
        }
        gomaxprocs_note(spec.root, env, &lim, &plan);
    }
    rv_spec_free(&spec);
    return 0;
}
