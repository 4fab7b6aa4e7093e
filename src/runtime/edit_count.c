/* edit_count.c - what an edit decided, in the node's counters (metrics.h):
 * the variables (added, or why not) and the views the hook will not be asked
 * for (opted out, no hook); the hook counts the views it was asked for.
 * Shared by the shim and the NRI plugin, which make the same edit. */
#define _GNU_SOURCE
#include "resview/edit.h"
#include "resview/metrics.h"

void rv_edit_count(const struct rv_config *cfg, const struct rv_edit_result *res)
{
    struct rv_metric_inc v[2];
    unsigned n = 0;

    v[n++] = (struct rv_metric_inc){ res->env_on ? RV_M_VARS_OK
                                     : cfg->env_enabled ? RV_M_NOVARS_OPTED_OUT
                                                        : RV_M_NOVARS_DISABLED, 1 };
    if (!res->lxcfs_on)
        v[n++] = (struct rv_metric_inc){ res->hook_missing ? RV_M_NOVIEWS_HOOK_MISSING
                                                           : RV_M_NOVIEWS_OPTED_OUT, 1 };
    rv_metrics_addv(cfg->host_state_dir, v, n);
}
