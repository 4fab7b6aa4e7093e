/* hook.h - resview-hook: the OCI hook (prestart or createRuntime) that puts
 * the LXCFS views into a starting container, and records what it did in
 * <state_dir>/containers/<id>/views. */
#ifndef RESVIEW_HOOK_H
#define RESVIEW_HOOK_H

#include <limits.h>
#include <sys/types.h>
#include "resview/config.h"
#include "resview/inject.h"
#include "resview/json.h"

#define RV_HOOK_STATE_MAX (1u << 20)   /* a state JSON larger than 1 MiB is refused */
#define RV_HOOK_TIMEOUT_MS 3000        /* the whole LXCFS part of one hook run */
#define RV_VIEWS_FILE "views"

/* The handover. resview-runtime has read config.json at create: it writes our
 * entry with root.path as an argument ("--rootfs=PATH", joined to the bundle
 * when relative, edit.c), and adds the entry only when the container wants the
 * views. With it the hook reads no config.json; without it (hooks.d files,
 * no shim) it reads the spec for both. Only the shim's own entry can carry
 * it: the shim takes every other resview-hook entry out of the spec (edit.c),
 * so a tenant's spec cannot hand anything over. */
#define RV_HOOK_ARG_ROOTFS "--rootfs="

/* The OCI state the runtime writes on the hook's stdin. */
struct rv_hook_state {
    char id[256];
    pid_t pid;
    char bundle[PATH_MAX];
};

int rv_hook_parse_state(const char *text, size_t len, struct rv_hook_state *st,
                        struct rv_error *err);
/* Host path of the rootfs: root.path (from the spec, or handed over),
 * absolute or relative to the bundle. */
int rv_hook_rootfs(json_t *spec, const char *bundle, char *out, size_t size,
                   struct rv_error *err);
int rv_hook_rootfs_path(const char *root_path, const char *bundle, char *out, size_t size,
                        struct rv_error *err);

/* The "views" record. status: "ok", "partial", "lxcfs-down", "failed". */
json_t *rv_views_record(const struct rv_inject *req, const char *status, const char *why);

/* The views of a container whose process has pivoted and waits to be
 * started, given without a hook (the NRI plugin at StartContainer,
 * resview-runtime at `start`): only where `resview watch` vouches for LXCFS
 * (viewhold.h), so that nothing here asks LXCFS anything and no caller waits
 * on it; otherwise recorded "lxcfs-down" for watch's repair. Logged,
 * recorded and counted as the hook does; 1 where lxcfs.required refuses the
 * start, else 0. start: the process's start time as its runtime recorded it
 * (a pid used again since is not taken for the container); 0: not checked. */
#define RV_VIEWS_STARTED_TIMEOUT_MS 1000   /* under NRI's 2 s request timeout */
int rv_hook_views_started(const struct rv_config *cfg, const char *id, pid_t pid,
                          unsigned long long start);

/* main() of resview-hook; returns the exit code. */
int rv_hook_main(int argc, char **argv);

#endif
