/* envvars.h - which variables to inject, and the rules that protect the
 * container's own choices. */
#ifndef RESVIEW_ENVVARS_H
#define RESVIEW_ENVVARS_H

#include "resview/config.h"
#include "resview/json.h"
#include "resview/limits.h"

enum rv_var_status {
    RV_VAR_INJECT = 0,
    RV_VAR_KEPT,          /* the container sets it already */
    RV_VAR_DISABLED,      /* off in env.vars */
    RV_VAR_SLURM_JOB,     /* SLURM_JOB_ID is set: a real Slurm job, no SLURM_* */
    RV_VAR_NO_VALUE,      /* mem_mib without a limit, gpus = 0 */
    RV_VAR_LEFT,          /* GOMAXPROCS: the container leaves it to the program */
};

/* The container's request for GOMAXPROCS (hooks/README.md "Per-container
 * requests"): "false" leaves it to the program (Go 1.25 and later follow
 * their cgroup's CPU limit, and a resize, when it is not set), "true" sets it
 * where env.vars turned it off. */
#define RV_ANN_GOMAXPROCS "resview.io/gomaxprocs"
#define RV_ENV_GOMAXPROCS "RESVIEW_GOMAXPROCS"

struct rv_env_plan {
    struct {
        char name[64];
        char value[24];
        enum rv_var_status status;
    } items[RV_MAX_VARS];
    int n;
};

/* gomaxprocs: that request as rv_spec_request returns it (1, 0; -1 none:
 * env.vars decides). */
void rv_env_plan(const struct rv_config *cfg, const struct rv_limits *lim, json_t *env,
                 int gomaxprocs, struct rv_env_plan *plan);
/* Append every RV_VAR_INJECT item that env does not set yet. */
int rv_env_apply(json_t *env, const struct rv_env_plan *plan, struct rv_error *err);
/* Same from "K=V" strings (the recorded injection, for exec sessions). */
int rv_env_add_missing(json_t *env, json_t *pairs, struct rv_error *err);
const char *rv_var_status_text(enum rv_var_status s);

#endif
