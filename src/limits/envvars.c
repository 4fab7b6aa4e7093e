/* envvars.c - the variables table applied to a process env. */
#define _GNU_SOURCE
#include "resview/envvars.h"
#include "resview/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rv_var_status_text(enum rv_var_status s)
{
    switch (s) {
    case RV_VAR_INJECT: return "injected";
    case RV_VAR_KEPT: return "kept: the container sets it";
    case RV_VAR_DISABLED: return "disabled in env.vars";
    case RV_VAR_SLURM_JOB: return "skipped: SLURM_JOB_ID is set (a real Slurm job)";
    case RV_VAR_LEFT: return "left to the program: the container asks";
    default: return "skipped: no such limit";
    }
}

void rv_env_plan(const struct rv_config *cfg, const struct rv_limits *lim, json_t *env,
                 int gomaxprocs, struct rv_env_plan *plan)
{
    bool slurm_job = rv_env_get(env, "SLURM_JOB_ID") != NULL;

    plan->n = 0;
    for (int i = 0; i < cfg->n_vars; i++) {
        const struct rv_var *v = &cfg->vars[i];
        typeof(plan->items[0]) *it = &plan->items[plan->n++];
        uint64_t value = 0;
        bool has = true;
        /* the container's request wins over env.vars, for GOMAXPROCS only */
        bool asked = gomaxprocs >= 0 && strcmp(v->name, "GOMAXPROCS") == 0;

        snprintf(it->name, sizeof(it->name), "%s", v->name);
        switch (v->source) {
        case RV_SRC_CPUS: value = lim->cpus; break;
        case RV_SRC_MEM_MIB: value = lim->mem_mib; has = lim->has_mem; break;
        case RV_SRC_GPUS: value = lim->gpus; has = lim->gpus > 0; break;
        }
        snprintf(it->value, sizeof(it->value), "%" PRIu64, value);
        if (asked ? gomaxprocs == 0 : !v->enabled)
            it->status = asked ? RV_VAR_LEFT : RV_VAR_DISABLED;
        else if (rv_env_get(env, v->name))
            it->status = RV_VAR_KEPT;
        else if (slurm_job && strncmp(v->name, "SLURM_", 6) == 0)
            it->status = RV_VAR_SLURM_JOB;
        else if (!has)
            it->status = RV_VAR_NO_VALUE;
        else
            it->status = RV_VAR_INJECT;
    }
}

static int append(json_t *env, const char *kv, struct rv_error *err)
{
    if (json_array_append_new(env, json_string(kv)) < 0)
        return rv_fail(err, ENOMEM, "process.env");
    return 0;
}

int rv_env_apply(json_t *env, const struct rv_env_plan *plan, struct rv_error *err)
{
    char kv[96];

    for (int i = 0; i < plan->n; i++) {
        if (plan->items[i].status != RV_VAR_INJECT || rv_env_get(env, plan->items[i].name))
            continue;
        snprintf(kv, sizeof(kv), "%s=%s", plan->items[i].name, plan->items[i].value);
        if (append(env, kv, err) < 0)
            return -1;
    }
    return 0;
}

int rv_env_add_missing(json_t *env, json_t *pairs, struct rv_error *err)
{
    size_t i;
    json_t *p;

    json_array_foreach(pairs, i, p) {
        const char *kv = json_string_value(p), *eq = kv ? strchr(kv, '=') : NULL;
        char name[64];
        if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(name))
            continue;
        memcpy(name, kv, (size_t)(eq - kv));
        name[eq - kv] = '\0';
        if (!rv_env_get(env, name) && append(env, kv, err) < 0)
            return -1;
    }
    return 0;
}
