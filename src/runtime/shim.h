/* shim.h - what resview-runtime does before handing over to the next runtime. */
#ifndef RESVIEW_SHIM_H
#define RESVIEW_SHIM_H

#include "resview/args.h"
#include "resview/config.h"
#include "resview/limits.h"

/* create/run: edit the bundle (FUSE: start the container's broker), record
 * the injected variables, and where next (the runtime that will run the
 * container) keeps its state. fuse_runtime: we run as the FUSE runtime name. */
int rv_shim_create(const struct rv_config *cfg, const struct rv_host *host,
                   const struct rv_args *a, const char *next, bool fuse_runtime,
                   struct rv_error *err);
/* The LXCFS views at `start`, without a hook, where create left them for
 * then (RV_START_RECORD): given as the NRI plugin gives them at
 * StartContainer (hook.h rv_hook_views_started). Never fails the start. */
#define RV_START_RECORD "start"   /* <state_dir>/containers/<id>/start: {"runtime_root"} */
void rv_shim_start(const struct rv_config *cfg, const struct rv_args *a);
/* delete: whether the container's init has ended (its pid gone, or another
 * process's by now, as its runtime's state tells): the runtime then removes
 * it. Unknown, or a zombie: false. */
bool rv_shim_stopped(const struct rv_args *a, const char *next);
/* exec --process FILE: add the recorded variables the process does not set. */
int rv_shim_exec(const struct rv_config *cfg, const struct rv_args *a, struct rv_error *err);

#endif
