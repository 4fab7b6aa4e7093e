/* fuse.h - FUSE with zero added capabilities (profiles/README.md
 * "Who may ask"): who may ask, and the spec edits that route the container's
 * mount(2)/umount2(2) to its broker (broker.h). The spec editor (edit.c)
 * calls rv_fuse_wanted and rv_fuse_apply_host; the shim probes the next
 * runtime and sets the listener. */
#ifndef RESVIEW_FUSE_H
#define RESVIEW_FUSE_H

#include "resview/config.h"
#include "resview/json.h"

#define RV_ANN_FUSE "resview.io/fuse"
#define RV_FUSE_MAJOR 10
#define RV_FUSE_MINOR 229
/* The shim invoked under this name (a symlink the operator installs and
 * registers as an engine runtime) grants FUSE to every container it starts. */
#define RV_FUSE_RUNTIME_NAME "resview-runtime-fuse"
/* Namespace annotations that containerd's and CRI-O's CRI set themselves. */
#define RV_ANN_K8S_NS_CONTAINERD "io.kubernetes.cri.sandbox-namespace"
#define RV_ANN_K8S_NS_CRIO "io.kubernetes.pod.namespace"
#define RV_SECCOMP_FLAG_WAIT_KILLABLE "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"

/* What the next runtime can do for the broker (fuse_probe.c). */
struct rv_fuse_runtime {
    bool notify;          /* SCMP_ACT_NOTIFY and linux.seccomp.listenerPath */
    bool wait_killable;   /* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (and the kernel has it) */
    char why[256];        /* how that was found out, or why not */
};

/* Host facts rv_fuse_apply_host reads, injectable for tests. NULL: the
 * configured/discovered seccomp profile. */
struct rv_fuse_host {
    const char *seccomp_profile;      /* default profile for specs without one */
};

/* Whether this container gets FUSE. It asks through the annotation
 * resview.io/fuse: "true" or by being started through the FUSE runtime name
 * (fuse_runtime); "false" or RESVIEW_FUSE=0 turn it off. Fails with one line
 * when it asks and the policy refuses: fuse.allowed false, the request comes
 * from the image's environment alone (RESVIEW_FUSE=1), its Kubernetes
 * namespace is not in fuse.namespaces, a request value is invalid, or we are
 * not root on the host (a rootless engine: the broker needs that root). */
int rv_fuse_wanted(json_t *root, const struct rv_config *cfg, bool fuse_runtime, bool *want,
                   struct rv_error *err);

/* The grant for a container that rv_fuse_wanted() let through: /dev/fuse and
 * its device cgroup rule; seccomp: mount, umount, umount2 to SCMP_ACT_NOTIFY,
 * the new mount API to ENOSYS (seccomp.c); no capability. *broker tells
 * whether the container needs a broker (not when privileged, nor when the
 * engine itself granted CAP_SYS_ADMIN and every mount: then only the device
 * is added). rt NULL: assume a runtime with listener support and no flags.
 * Checks everything before changing the document. */
int rv_fuse_apply_host(json_t *root, const struct rv_config *cfg, const struct rv_fuse_host *host,
                       const struct rv_fuse_runtime *rt, bool *broker, struct rv_error *err);

/* linux.seccomp.listenerPath and listenerMetadata (the container id). */
int rv_fuse_set_listener(json_t *root, const char *path, const char *metadata,
                         struct rv_error *err);

/* The spec's listenerPath, if any. */
const char *rv_fuse_listener(json_t *root);

/* The engine's volumes in a spec: the host sources of its bind mounts that
 * a FUSE mount may go on (profiles/README.md "Where a mount may go"): a bind whose
 * destination is not /, not in /proc, /sys or /dev, not the engine's
 * /etc/hosts, /etc/hostname or /etc/resolv.conf, not masked or read-only by
 * linux.maskedPaths/readonlyPaths, and whose source no such excluded mount
 * shares. A new array of absolute paths (NULL: no memory). */
json_t *rv_fuse_volumes(json_t *root);

/* What the next runtime supports: its `features` (runc >= 1.1, crun >= 1.9),
 * else crun's `--version`; cached under <state_dir>/fuse by the runtime
 * binary's identity. */
int rv_fuse_runtime_probe(const struct rv_config *cfg, const char *next, struct rv_fuse_runtime *rt,
                          struct rv_error *err);

/* A privileged spec: CAP_SYS_ADMIN in the bounding set and a device cgroup
 * rule that allows every device. Such a spec is left alone. */
bool rv_fuse_spec_is_privileged(json_t *root);

#endif
