/* node_containerd.h - the node agent and containerd: the `resview` runtime
 * entry in config.toml (written by the engine module, engine_containerd.c),
 * and a restart only when the running containerd lacks it. What containerd
 * runs with is asked over its CRI socket (Status, verbose: the configuration
 * `crictl info` shows), not guessed from the file. */
#ifndef RESVIEW_NODE_CONTAINERD_H
#define RESVIEW_NODE_CONTAINERD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "resview/util.h"

#define RV_NODE_RESTART_GUARD_S 600

struct rv_node_containerd {
    const char *config;          /* config.toml */
    const char *cri_socket;
    const char *restart;         /* systemd | systemd:UNIT | none | command:/PATH */
    pid_t host_pid;              /* whose namespaces, root and cgroups are the host's (hostexec.h) */
    const char *runtime_path;    /* BinaryName of the entry */
    const char *hook_path;
    const char *guard;           /* file that records the last restart */
    bool set_default;            /* resview as default_runtime_name */
    bool uninstall;              /* want the entry gone */
};

/* Whether a restart mode is one of the above. */
bool rv_node_restart_valid(const char *mode);

/* Whether the running containerd has what is wanted: 1 yes, 0 no (why), -1
 * it does not answer (err). */
int rv_node_containerd_effective(const struct rv_node_containerd *c, char *why, size_t size,
                                 struct rv_error *err);

/* Write (or take out) the entry, then make the running containerd use it:
 * a restart in the chosen mode only if it does not yet, then wait until the
 * CRI socket answers with it. A restart that did not bring it in is not
 * repeated for the same file within RV_NODE_RESTART_GUARD_S, also not by the
 * next agent (c->guard). Mode none restarts nothing and says what the
 * operator must run. 0 when in use; *restarted counts restarts. */
int rv_node_containerd_apply(const struct rv_node_containerd *c, unsigned *restarted,
                             struct rv_error *err);

#endif
