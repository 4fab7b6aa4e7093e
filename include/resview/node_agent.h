/* node_agent.h - the node agent as a process (`resview node run`): its log
 * lines, its signals, and the two programs it supervises, LXCFS and
 * `resview watch`.
 *
 * The agent blocks SIGTERM, SIGINT and SIGCHLD and takes them synchronously
 * (sigtimedwait), so a wait anywhere in the agent ends when the pod is asked
 * to stop, and children are reaped in one place. */
#ifndef RESVIEW_NODE_AGENT_H
#define RESVIEW_NODE_AGENT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "resview/config.h"
#include "resview/node_containerd.h"
#include "resview/util.h"

/* The agent's settings: built-in defaults, then the DaemonSet's
 * RESVIEW_NODE_* environment (rv_node_settings_init), then the options of
 * `resview node` (cmd_node.c), then checked, with the paths made of them
 * (rv_node_settings_check). */
struct rv_node_settings {
    const struct rv_config *cfg;
    struct rv_node_containerd ctd;
    bool uninstall;
    bool nri;                   /* RESVIEW_NODE_MODE=nri: the NRI plugin, containerd untouched */
    const char *nri_socket;     /* the runtime's NRI socket (RESVIEW_NODE_NRI_SOCKET) */
    long heal_ms;               /* NRI mode: the CRI's containers looked at (RESVIEW_NODE_HEAL_S) */
    const char *prefix;
    char payload[PATH_MAX];
    const char *lxcfs_bin;
    const char *lxcfs_dir;
    const char *rv_config;
    const char *lock_path;
    const char *host_pid;       /* as given: ctd.host_pid once checked */
    char guard[PATH_MAX];       /* lock_path.restarted */
    char nv_record[PATH_MAX];   /* lock_path.nvidia */
    char runtime_path[PATH_MAX];
    char hook_path[PATH_MAX];
};
/* Defaults and the environment; -1 (err) on a variable that is not valid. */
int rv_node_settings_init(struct rv_node_settings *n, const struct rv_config *cfg,
                          struct rv_error *err);
/* Check what the options left, and derive the paths; -1 (err) if not valid. */
int rv_node_settings_check(struct rv_node_settings *n, struct rv_error *err);

/* The steps of `resview node` (node_run.c), each an exit code: run (the
 * DaemonSet's container, until the pod ends), ready (the readiness probe),
 * and install, configure or uninstall once under the node lock. */
int rv_node_run(const struct rv_node_settings *n);
int rv_node_ready(const struct rv_node_settings *n);
int rv_node_step(const struct rv_node_settings *n, const char *step);
/* NRI mode, while the plugin is not registered: the running containers
 * that resview serves and that have no record get one and their views
 * through the CRI (each named once at warn: started without variables);
 * the agent does it every heal_ms in a bounded grandchild, `resview node
 * heal` once in the foreground. *healed: records written. */
#define RV_NODE_HEAL_TIMEOUT_MS 5000   /* all its CRI calls together */
int rv_node_heal(const struct rv_node_settings *n, int timeout_ms, unsigned *healed, struct rv_error *err);

/* One timestamped line on stdout (the pod's log). */
void rv_node_say(const char *fmt, ...) RV_PRINTF(1, 2);

/* Block the agent's signals (once, before anything else). */
void rv_node_signals_block(void);
/* Sleep up to ms; false once SIGTERM or SIGINT asked the agent to stop.
 * SIGCHLD stays pending for rv_node_wait(). */
bool rv_node_nap(long ms);
/* Wait up to ms for any of the agent's signals, SIGCHLD included. */
void rv_node_wait(long ms);
bool rv_node_stopping(void);

/* LXCFS on lxcfs_dir (`-f -l --enable-cfs`, pid file lxcfs_dir.pid) and
 * `resview watch`, started again when they end. watch starts first: it waits
 * for the LXCFS mount to appear and repairs the moment it answers. In NRI
 * mode also `resview nri --socket NRI_SOCKET --hook HOOK` (it reconnects by
 * itself when the runtime restarts; started again when it ends). */
struct rv_node_children {
    const char *lxcfs_bin, *lxcfs_dir;   /* in */
    const char *rv_config;               /* in: RESVIEW_CONFIG for watch; NULL: the default */
    const char *nri_socket, *hook_path;  /* in: NULL: no NRI plugin */
    pid_t lxcfs, watch, nri;             /* 0: not running */
    long lxcfs_retry, watch_retry, nri_retry;   /* when to start them again (rv_now_ms) */
};
void rv_node_children_start(struct rv_node_children *ch);
void rv_node_children_reap(struct rv_node_children *ch);
/* SIGTERM (then SIGKILL after 5 s); detach: also take LXCFS's mount off. */
void rv_node_children_stop(struct rv_node_children *ch, bool detach);

/* Detach whatever an earlier LXCFS left on dir (a dead FUSE mount answers
 * ENOTCONN to everything; MNT_DETACH needs no answer from it). */
int rv_node_lxcfs_clear(const char *dir, struct rv_error *err);

#endif
