/* node_containerd.h - the node agent and containerd: the `resview` runtime
 * entry in config.toml (written by the engine module, engine_containerd.c),
 * and a restart only when the running containerd lacks it. What containerd
 * runs with is asked over its CRI socket (Status, verbose: the configuration
 * `crictl info` shows), not guessed from the file. */
#ifndef RESVIEW_NODE_CONTAINERD_H
#define RESVIEW_NODE_CONTAINERD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>
#include "resview/util.h"

#define RV_NODE_RESTART_GUARD_S 600
#define RV_NODE_MAX_IMPORTS 32
/* resview's drop-in, beside an imported file that holds the CRI plugin's
 * table (NVIDIA's 99-nvidia.toml), merged after it (node_containerd.c) */
#define RV_NODE_DROPIN "99-zz-resview.toml"

/* NVIDIA's runtime as containerd's configuration names it (the main file and
 * its `imports`, merged as containerd 1.x merges them: a later file that has
 * the CRI plugin's table replaces that whole table). */
struct rv_node_gpu {
    char runtime[PATH_MAX];      /* BinaryName of NVIDIA's entry; "" none */
    char entry[64];              /* that entry's name (nvidia, nvidia-cdi, ...) */
    char dflt[64];               /* default_runtime_name as merged; "" unset (runc) */
    char cri_file[PATH_MAX];     /* the file whose CRI plugin table counts */
    int n_imports;               /* files named by `imports` (globs expanded) */
    bool cri_from_import;        /* cri_file is an imported drop-in (NVIDIA's toolkit 1.18) */
    char own_dropin[PATH_MAX];   /* resview's drop-in among the imports; "" none */
    bool names_resview;          /* the CRI table that counts has a `resview` runtime */
    bool resview_ours;           /* ... whose BinaryName is resview's runtime */
    uint64_t signature;          /* of containerd's files when read (rv_node_containerd_signature) */
    uint64_t pending;            /* a different one seen once, not yet acted on */
};

/* Which containers go through NVIDIA's runtime (RESVIEW_NODE_GPU_CONTAINERS). */
enum rv_node_gpu_mode { RV_NODE_GPU_ASKING = 0, RV_NODE_GPU_ALL, RV_NODE_GPU_NONE };

struct rv_node_containerd {
    const char *config;          /* config.toml */
    const char *cri_socket;
    const char *restart;         /* systemd | systemd:UNIT | none | command:/PATH */
    pid_t host_pid;              /* whose namespaces, root and cgroups are the host's (hostexec.h) */
    const char *runtime_path;    /* BinaryName of the entry */
    const char *hook_path;
    const char *guard;           /* file that records the last restart */
    const char *nv_record;       /* file that names the NVIDIA directory whose runtime
                                  * configuration resview edited (rv_node_nvidia_edit); NULL none */
    bool set_default;            /* resview as default_runtime_name */
    bool uninstall;              /* want the entry gone */
    enum rv_node_gpu_mode gpu_mode;
    struct rv_node_gpu *gpu;     /* what was found last (rv_node_gpu_refresh) */
};

/* gpu (default), all or none; -1 otherwise. */
int rv_node_gpu_mode_parse(const char *s);

/* Read containerd's configuration (config and what it imports) for NVIDIA's
 * runtime. Fails only on a file that does not parse. */
int rv_node_gpu_detect(const char *config, const char *own_runtime, struct rv_node_gpu *g,
                       struct rv_error *err);

/* A checksum of containerd's files (the main one, its imports, which files
 * the globs match): when it changes, the agent reads them again. */
uint64_t rv_node_containerd_signature(const char *config);

/* Whether containerd's files changed since c->gpu was read, and have stayed
 * the same since the previous call: another tool (NVIDIA's toolkit truncates
 * and writes config.toml in place) is done writing them. Call about once a
 * second. */
bool rv_node_containerd_changed(const struct rv_node_containerd *c);

/* Whether NVIDIA's runtime at nvidia_bin (a path on the host) runs
 * own_runtime next: the first of the `nvidia-container-runtime.runtimes` of its
 * configuration that exists on the host is own_runtime. Its configuration is
 * where NVIDIA's toolkit writes it, .config/nvidia-container-runtime/config.toml
 * beside the binary (the toolkit's wrapper points the runtime there), else the
 * packages' /etc/nvidia-container-runtime/config.toml. NVIDIA's toolkit 1.18
 * writes there the BinaryName of containerd's default runtime when it sets up
 * (so resview's, when resview was the default), then runc, crun; 1.13 only what
 * NVIDIA_CONTAINER_RUNTIME_RUNTIMES says, else docker-runc, runc. Files are
 * read in host_pid's root (/proc/PID/root). 1 yes, 0 no; conf: the file read
 * ("" none). */
int rv_node_nvidia_next(pid_t host_pid, const char *nvidia_bin, const char *own_runtime, char *conf,
                        size_t size);

/* resview's copy of NVIDIA's runtime configuration as NVIDIA's toolkit wrote
 * it, kept beside it while resview's runtime is put first in its `runtimes`
 * (rv_node_nvidia_edit) */
#define RV_NODE_NV_BACKUP "config.toml.resview-backup"

/* NVIDIA's runtime configuration text with own_runtime put first in
 * `nvidia-container-runtime.runtimes`: the array's text is kept as it is and
 * resview's quoted path inserted after its `[`, so that taking it out again is
 * exact. 0 (*out allocated), 1 the file has no such array (nothing done:
 * NVIDIA's built-in list is not guessed), -1 not TOML (err). */
int rv_node_nvidia_put_first(const char *text, size_t len, const char *own_runtime, char **out,
                             size_t *out_len, struct rv_error *err);

/* resview's edit of the configuration NVIDIA's toolkit writes for its runtime,
 * NVIDIA_DIR/.config/nvidia-container-runtime/config.toml (NVIDIA_DIR: the
 * directory of NVIDIA's runtime binary, the toolkit's root, as a path in
 * host_pid's root; resolved inside that root). want: own_runtime first in its
 * `runtimes` (NVIDIA's runtime reads the file at every call: no restart), the
 * file as it was kept beside it as RV_NODE_NV_BACKUP first; a backup that
 * does not match the file (the toolkit wrote it again since) is dropped.
 * !want: the file put back byte for byte from the backup when it is still
 * resview's edit of it, and the backup removed. conf: the file ("" none).
 * 1 changed, 0 nothing to do, 2 (want) cannot (no such file, or no
 * `runtimes` in it), -1 err. */
int rv_node_nvidia_edit(pid_t host_pid, const char *nvidia_dir, const char *own_runtime, bool want,
                        char *conf, size_t size, struct rv_error *err);

/* Whether the default runtime of the CRI table that counts (g, without
 * resview's own drop-in) is NVIDIA's runtime running resview next (above). */
bool rv_node_gpu_default_chains(const struct rv_node_containerd *c, const struct rv_node_gpu *g);

/* Detect again into c->gpu; 1 when what resview's configuration says about
 * it changes (the agent then rewrites it), 0 not, -1 err. Says what it found. */
int rv_node_gpu_refresh(const struct rv_node_containerd *c, struct rv_error *err);

/* The agent's /etc/resview/config.json: lxcfs.root, and gpu.runtime when
 * NVIDIA's runtime is on the node (and the mode is not none). */
int rv_node_config_text(const struct rv_node_containerd *c, const char *lxcfs_dir, char *out, size_t size);
/* Whether text is one the agent writes for lxcfs_dir (with any gpu part). */
bool rv_node_config_agents(const char *text, size_t len, const char *lxcfs_dir);

/* Whether a restart mode is one of the above. */
bool rv_node_restart_valid(const char *mode);

/* Whether the running containerd has what is wanted: 1 yes, 0 no (why), -1
 * it does not answer (err), 2 no and a restart would not bring it (err:
 * uninstall while a file that is not resview's names resview the default),
 * 3 no, and at uninstall a restart waits for pods of the runtime class
 * (containerd 2.x execs into a pod through its runtime handler's entry: why
 * says so). */
int rv_node_containerd_effective(const struct rv_node_containerd *c, char *why, size_t size,
                                 struct rv_error *err);

/* Write (or take out) the entry, then make the running containerd use it:
 * a restart in the chosen mode only if it does not yet, then wait until the
 * CRI socket answers with it. A restart that did not bring it in is not
 * repeated for the same file within RV_NODE_RESTART_GUARD_S, also not by the
 * next agent (c->guard). Mode none restarts nothing and says what the
 * operator must run. 0 when in use; 1 at uninstall when the restart waits
 * for the pods of the runtime class that still run (containerd 2.x; err says
 * so: call again); *restarted counts restarts. */
int rv_node_containerd_apply(const struct rv_node_containerd *c, unsigned *restarted,
                             struct rv_error *err);

#endif
