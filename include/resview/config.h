/* config.h - /etc/resview/config.json (or $RESVIEW_CONFIG), with defaults. */
#ifndef RESVIEW_CONFIG_H
#define RESVIEW_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include "resview/util.h"

#define RV_CONFIG_DEFAULT "/etc/resview/config.json"
#define RV_MAX_RUNTIMES 8
#define RV_MAX_VARS 32
#define RV_MAX_WARNINGS 16
#define RV_MAX_FUSE_NAMESPACES 32
#define RV_FUSE_MAX_MOUNTS_DEFAULT 64   /* fuse.max_mounts */
#define RV_FUSE_MAX_MOUNTS_NODE_DEFAULT 4096   /* fuse.max_mounts_node */
#define RV_FUSE_MAX_MOUNTS_NODE_MAX 65536u     /* the node's table holds that many */
#define RV_MAX_NRI_HANDLERS 32

enum rv_level { RV_ERROR = 0, RV_WARN, RV_INFO, RV_DEBUG };
enum rv_rounding { RV_ROUND_CEIL = 0, RV_ROUND_FLOOR, RV_ROUND_NEAREST };
enum rv_source { RV_SRC_CPUS = 0, RV_SRC_MEM_MIB, RV_SRC_GPUS };

struct rv_var {
    char name[64];
    enum rv_source source;
    bool enabled;
};

/* A path in the configuration: a longer one is refused (a warning; the
 * default stays), never cut. Not PATH_MAX: every process of ours loads the
 * configuration on its hot path, and each page of it touched first costs a
 * page fault (~10 us on a VM); PATH_MAX fields made it 19 pages. */
#define RV_CFG_PATH 1024

struct rv_config {
    /* scalars first, then strings: what the defaults write shares pages */
    bool from_env;                /* path came from $RESVIEW_CONFIG */
    int n_runtimes;
    enum rv_level log_level;
    unsigned log_max_mib;         /* the log past this: renamed to FILE.old (log.c) */
    bool lxcfs_required;
    bool env_enabled;
    enum rv_rounding rounding;
    int n_vars;
    bool fuse_allowed;            /* the master switch (false) */
    bool fuse_allow_other;        /* FUSE mounts may use allow_other (false) */
    unsigned fuse_max_mounts;     /* FUSE file systems per container (RV_FUSE_MAX_MOUNTS_DEFAULT) */
    unsigned fuse_max_mounts_node;   /* ... on the node, all brokers (RV_FUSE_MAX_MOUNTS_NODE_DEFAULT) */
    int n_fuse_namespaces;
    bool gpu_all;                 /* gpu.containers "all": every container goes through it ("gpu") */
    int n_nri_handlers;
    int n_warnings;
    char hook_stage[16];          /* "prestart" | "createRuntime" */
    struct rv_var vars[RV_MAX_VARS];
    /* nri.runtime_handlers: the pods' runtime handlers the NRI plugin serves
     * ("" the runtime's default; runc-type ones by default) */
    char nri_handlers[RV_MAX_NRI_HANDLERS][64];
    /* metrics.address: where `resview watch` serves GET /metrics ("" off) */
    char metrics_address[128];
    char path[RV_CFG_PATH];       /* file read, "" when built-in defaults only */
    char runtimes[RV_MAX_RUNTIMES][RV_CFG_PATH];
    char log_file[RV_CFG_PATH];
    char hook_path[RV_CFG_PATH];
    char lxcfs_root[RV_CFG_PATH];
    char state_dir[RV_CFG_PATH];  /* /run/resview; this process's own (below) */
    char host_state_dir[RV_CFG_PATH];   /* state_dir as configured, root's: users/, watch's socket */
    char seccomp_profile[RV_CFG_PATH]; /* fuse.seccomp_profile; "" = discover (fuse.h) */
    char gpu_runtime[RV_CFG_PATH];   /* gpu.runtime: NVIDIA's runtime, next for GPU containers; "" none */
    char fuse_namespaces[RV_MAX_FUSE_NAMESPACES][64];   /* Kubernetes namespaces; none = any */
    /* Unknown keys and wrong types: reported, never fatal. */
    char warnings[RV_MAX_WARNINGS][256];
};

/* Built-in defaults. */
void rv_config_defaults(struct rv_config *cfg);
/* Load $RESVIEW_CONFIG, else /etc/resview/config.json; a missing default file
 * means defaults. Fails only when the file exists but cannot be read or is not
 * a JSON object; key-level problems become warnings. A process that is not
 * root on the host (a rootless engine's runtime and hooks, enroot as a user)
 * cannot write root's state_dir: its own records go to $XDG_RUNTIME_DIR/resview
 * (else /run/user/UID/resview, UID its host uid), and so does its log when
 * log.file refuses it (log.h). */
int rv_config_load(struct rv_config *cfg, struct rv_error *err);
/* Same, from an explicit path (must exist). */
int rv_config_load_file(struct rv_config *cfg, const char *path, struct rv_error *err);
/* Parse config text (for tests and fuzzing). */
int rv_config_parse(struct rv_config *cfg, const char *text, size_t len, struct rv_error *err);

/* Split a listening address "HOST:PORT", "[V6]:PORT" or ":PORT" (every
 * address; host "" then), numeric only, port 0..65535. 0, or -1 with err. */
int rv_parse_listen_address(const char *addr, char *host, size_t hsize, char *port, size_t psize,
                            struct rv_error *err);

const char *rv_source_name(enum rv_source s);
const char *rv_level_name(enum rv_level l);

#endif
