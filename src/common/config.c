/* config.c - configuration file with defaults; bad keys warn, never crash. */
#define _GNU_SOURCE
#include "resview/config.h"
#include "resview/json.h"
#include "resview/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static const struct rv_var default_vars[] = {
    { "GOMAXPROCS", RV_SRC_CPUS, true },
    { "OMP_NUM_THREADS", RV_SRC_CPUS, true },
    { "SLURM_CPUS_ON_NODE", RV_SRC_CPUS, true },
    { "SLURM_CPUS_PER_TASK", RV_SRC_CPUS, true },
    { "SLURM_MEM_PER_NODE", RV_SRC_MEM_MIB, true },
    { "SLURM_GPUS_ON_NODE", RV_SRC_GPUS, true },
    { "SLURM_GPUS_PER_NODE", RV_SRC_GPUS, true },
    { "PYTHON_CPU_COUNT", RV_SRC_CPUS, false },
    { "MKL_NUM_THREADS", RV_SRC_CPUS, false },
    { "OPENBLAS_NUM_THREADS", RV_SRC_CPUS, false },
    { "NUMEXPR_MAX_THREADS", RV_SRC_CPUS, false },
};

/* The runc-type handlers: the runtime's default, runc and crun, and
 * NVIDIA's, which exec runc (VM-based ones, kata and gVisor, are not). */
static const char *const default_nri_handlers[] = { "", "runc", "crun", "nvidia", "nvidia-cdi",
                                                    "nvidia-legacy" };

static const char *const source_names[] = { "cpus", "mem_mib", "gpus" };
static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const char *const rounding_names[] = { "ceil", "floor", "nearest" };

const char *rv_source_name(enum rv_source s) { return source_names[s]; }
const char *rv_level_name(enum rv_level l) { return level_names[l]; }

static void self_dir_file(char *out, size_t size, const char *file)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    if (n <= 0 || n >= (ssize_t)sizeof(exe) - 1) {
        snprintf(out, size, "/usr/local/bin/%s", file);
        return;
    }
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    *slash = '\0';
    if (rv_snprintf(out, size, "%s/%s", exe, file) < 0)
        snprintf(out, size, "/usr/local/bin/%s", file);
}

/* A configuration is ~28 KiB, nearly all of it path buffers that are read
 * only up to their terminator and lists read only up to their count. A memset
 * of the whole would touch 7 fresh stack pages, a page fault each (~10 us on
 * a VM), in every call of the shim and the hook: the members are set one by
 * one instead, and only the bytes that are read are written (config.h: the
 * scalars share a page). */
void rv_config_defaults(struct rv_config *cfg)
{
    cfg->path[0] = '\0';
    cfg->from_env = false;
    cfg->lxcfs_required = false;
    cfg->fuse_allow_other = false;
    cfg->fuse_max_mounts = RV_FUSE_MAX_MOUNTS_DEFAULT;
    cfg->fuse_max_mounts_node = RV_FUSE_MAX_MOUNTS_NODE_DEFAULT;
    cfg->n_fuse_namespaces = 0;
    cfg->seccomp_profile[0] = '\0';
    cfg->metrics_address[0] = '\0';
    cfg->n_warnings = 0;
    strcpy(cfg->runtimes[0], "runc");
    strcpy(cfg->runtimes[1], "crun");
    cfg->n_runtimes = 2;
    strcpy(cfg->log_file, "/var/log/resview.log");
    cfg->log_level = RV_INFO;
    cfg->log_max_mib = 64;
    self_dir_file(cfg->hook_path, sizeof(cfg->hook_path), "resview-hook");
    strcpy(cfg->hook_stage, "prestart");
    strcpy(cfg->lxcfs_root, "/var/lib/lxcfs");
    strcpy(cfg->state_dir, "/run/resview");
    strcpy(cfg->host_state_dir, cfg->state_dir);
    cfg->env_enabled = true;
    cfg->rounding = RV_ROUND_CEIL;
    memcpy(cfg->vars, default_vars, sizeof(default_vars));
    cfg->n_vars = (int)(sizeof(default_vars) / sizeof(default_vars[0]));
    cfg->fuse_allowed = false;
    cfg->gpu_runtime[0] = '\0';
    cfg->gpu_all = false;
    for (size_t i = 0; i < sizeof(default_nri_handlers) / sizeof(default_nri_handlers[0]); i++)
        strcpy(cfg->nri_handlers[i], default_nri_handlers[i]);
    cfg->n_nri_handlers = (int)(sizeof(default_nri_handlers) / sizeof(default_nri_handlers[0]));
}

RV_PRINTF(2, 3) static void warn(struct rv_config *cfg, const char *fmt, ...)
{
    va_list ap;

    if (cfg->n_warnings >= RV_MAX_WARNINGS)
        return;
    va_start(ap, fmt);
    vsnprintf(cfg->warnings[cfg->n_warnings++], sizeof(cfg->warnings[0]), fmt, ap);
    va_end(ap);
}

static int pick(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* Copy a string value; warn and keep the default on a wrong type or length. */
static void get_string(struct rv_config *cfg, json_t *v, const char *key, char *dst, size_t size)
{
    if (!json_is_string(v)) {
        warn(cfg, "%s: expected a string, keeping the default", key);
        return;
    }
    if (json_string_length(v) == 0 || json_string_length(v) >= size ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        warn(cfg, "%s: empty or too long, keeping the default", key);
        return;
    }
    strcpy(dst, json_string_value(v));
}

static void get_bool(struct rv_config *cfg, json_t *v, const char *key, bool *dst)
{
    if (!json_is_boolean(v)) {
        warn(cfg, "%s: expected true or false, keeping the default", key);
        return;
    }
    *dst = json_is_true(v);
}

static void get_count(struct rv_config *cfg, json_t *v, const char *key, unsigned max,
                      unsigned *dst)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
        warn(cfg, "%s: expected a whole number from 1 to %u, keeping the default", key, max);
        return;
    }
    *dst = (unsigned)json_integer_value(v);
}

static void get_enum(struct rv_config *cfg, json_t *v, const char *key, const char *const *names,
                     int n, int *dst)
{
    int i = json_is_string(v) ? pick(json_string_value(v), names, n) : -1;

    if (i < 0) {
        warn(cfg, "%s: unknown value, keeping the default", key);
        return;
    }
    *dst = i;
}

static bool forbidden_var(const char *name)
{
    static const char *const never[] = { "SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_PROCID",
                                         "SLURM_TASKS_PER_NODE", "SLURM_STEP_ID" };
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
        if (strcmp(name, never[i]) == 0)
            return true;
    return strstr(name, "NODELIST") != NULL;
}

static bool valid_var_name(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* env.vars: { "NAME": true|false | "source" | {"source": "...", "enabled": bool} } merged
 * over the defaults. */
static void parse_vars(struct rv_config *cfg, json_t *vars)
{
    const char *name;
    json_t *v;

    if (!json_is_object(vars)) {
        warn(cfg, "env.vars: expected an object, keeping the defaults");
        return;
    }
    json_object_foreach(vars, name, v) {
        struct rv_var *var = NULL;
        int src = -1;
        json_t *jsrc = NULL, *jen = NULL;

        if (strlen(name) >= sizeof(var->name) || !valid_var_name(name)) {
            warn(cfg, "env.vars: `%.64s` is not a valid variable name", name);
            continue;
        }
        if (forbidden_var(name)) {
            warn(cfg, "env.vars: %s would make tools believe they run under Slurm; never set", name);
            continue;
        }
        for (int i = 0; i < cfg->n_vars; i++)
            if (strcmp(cfg->vars[i].name, name) == 0)
                var = &cfg->vars[i];
        if (json_is_boolean(v))
            jen = v;
        else if (json_is_string(v))
            jsrc = v;
        else if (json_is_object(v)) {
            jsrc = json_object_get(v, "source");
            jen = json_object_get(v, "enabled");
        } else {
            warn(cfg, "env.vars.%s: expected true, false, a source or an object", name);
            continue;
        }
        if (jsrc) {
            src = json_is_string(jsrc) ? pick(json_string_value(jsrc), source_names, 3) : -1;
            if (src < 0) {
                warn(cfg, "env.vars.%s: source must be cpus, mem_mib or gpus", name);
                continue;
            }
        }
        if (jen && !json_is_boolean(jen)) {
            warn(cfg, "env.vars.%s.enabled: expected true or false", name);
            continue;
        }
        if (!var) {
            if (src < 0) {
                warn(cfg, "env.vars.%s: a new variable needs a source", name);
                continue;
            }
            if (cfg->n_vars >= RV_MAX_VARS) {
                warn(cfg, "env.vars: more than %d variables, %s ignored", RV_MAX_VARS, name);
                continue;
            }
            var = &cfg->vars[cfg->n_vars++];
            strcpy(var->name, name);
            var->enabled = true;
        }
        if (src >= 0)
            var->source = (enum rv_source)src;
        if (jen)
            var->enabled = json_is_true(jen);
    }
}

static void parse_runtimes(struct rv_config *cfg, json_t *v)
{
    size_t i;
    json_t *e;
    int n = 0;
    const char *tmp[RV_MAX_RUNTIMES];   /* strings of v, copied once all are checked */

    if (!json_is_array(v) || json_array_size(v) == 0) {
        warn(cfg, "runtimes: expected a non-empty array of strings, keeping the default");
        return;
    }
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            json_string_length(e) >= sizeof(cfg->runtimes[0]) || strlen(json_string_value(e)) != json_string_length(e)) {
            warn(cfg, "runtimes[%zu]: expected a runtime name or path, ignored", i);
            continue;
        }
        if (n >= RV_MAX_RUNTIMES) {
            warn(cfg, "runtimes: more than %d entries, the rest ignored", RV_MAX_RUNTIMES);
            break;
        }
        tmp[n++] = json_string_value(e);
    }
    if (n == 0)
        return;
    for (int k = 0; k < n; k++)
        strcpy(cfg->runtimes[k], tmp[k]);
    cfg->n_runtimes = n;
}

/* fuse.namespaces: Kubernetes namespace names (RFC 1123 labels). A malformed
 * list must not widen the grant: any bad entry keeps a list that nothing
 * matches. */
static void parse_namespaces(struct rv_config *cfg, json_t *v)
{
    size_t i;
    json_t *e;

    cfg->n_fuse_namespaces = 0;
    if (!json_is_array(v)) {
        warn(cfg, "fuse.namespaces: expected an array of namespace names; no namespace allowed");
        strcpy(cfg->fuse_namespaces[cfg->n_fuse_namespaces++], "-");
        return;
    }
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        bool ok = s && *s && strlen(s) < sizeof(cfg->fuse_namespaces[0]) &&
                  json_string_length(e) == strlen(s);
        for (const char *p = s; ok && *p; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-';
        if (!ok || cfg->n_fuse_namespaces == RV_MAX_FUSE_NAMESPACES) {
            warn(cfg, "fuse.namespaces[%zu]: not a namespace name (or more than %d); no namespace "
                 "allowed", i, RV_MAX_FUSE_NAMESPACES);
            cfg->n_fuse_namespaces = 0;
            strcpy(cfg->fuse_namespaces[cfg->n_fuse_namespaces++], "-");
            return;
        }
        strcpy(cfg->fuse_namespaces[cfg->n_fuse_namespaces++], s);
    }
}

/* nri.runtime_handlers: RuntimeClass handler names ("" the default). A
 * list that is no list keeps the default; a bad entry is left out. */
static void parse_nri_handlers(struct rv_config *cfg, json_t *v)
{
    size_t i;
    json_t *e;

    if (!json_is_array(v)) {
        warn(cfg, "nri.runtime_handlers: expected an array of runtime handler names, keeping the default");
        return;
    }
    cfg->n_nri_handlers = 0;
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        if (!s || json_string_length(e) != strlen(s) || strlen(s) >= sizeof(cfg->nri_handlers[0])) {
            warn(cfg, "nri.runtime_handlers[%zu]: expected a runtime handler name, ignored", i);
            continue;
        }
        if (cfg->n_nri_handlers == RV_MAX_NRI_HANDLERS) {
            warn(cfg, "nri.runtime_handlers: more than %d entries, the rest ignored", RV_MAX_NRI_HANDLERS);
            break;
        }
        if (strcmp(s, "resview") == 0)
            warn(cfg, "nri.runtime_handlers: `resview` is never served in NRI mode (its shim "
                 "edits those containers)");
        strcpy(cfg->nri_handlers[cfg->n_nri_handlers++], s);
    }
}

/* Walk a section: for each key call handle(); unknown keys warn. */
#define FOREACH_KEY(obj, section, key, val)                                   \
    if (!json_is_object(obj))                                                  \
        warn(cfg, "%s: expected an object, keeping the defaults", section);   \
    else                                                                       \
        json_object_foreach(obj, key, val)

int rv_parse_listen_address(const char *addr, char *host, size_t hsize, char *port, size_t psize,
                            struct rv_error *err)
{
    const char *colon, *h = addr, *hend;
    uint64_t p;

    if (addr[0] == '[') {
        hend = strchr(addr, ']');
        if (!hend || hend[1] != ':')
            return rv_fail(err, 0, "expected [ADDRESS]:PORT");
        h = addr + 1;
        colon = hend + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
            return rv_fail(err, 0, "expected HOST:PORT, [ADDRESS]:PORT or :PORT");
        hend = colon;
    }
    if (rv_parse_u64(colon + 1, &p) < 0 || p > 65535)
        return rv_fail(err, 0, "expected a port number (0..65535) after the colon");
    if ((size_t)(hend - h) >= hsize || rv_snprintf(port, psize, "%u", (unsigned)p) < 0)
        return rv_fail(err, ENAMETOOLONG, "address too long");
    memcpy(host, h, (size_t)(hend - h));
    host[hend - h] = '\0';
    for (const char *c = host; *c; c++)
        if (!strchr("0123456789abcdefABCDEF.:", *c))
            return rv_fail(err, 0, "expected a numeric address (IPv4 or IPv6), not a name");
    return 0;
}

/* metrics.address: off when absent or "" */
static void get_metrics_address(struct rv_config *cfg, json_t *v)
{
    char host[64], port[8];
    struct rv_error err;

    if (!json_is_string(v) || json_string_length(v) >= sizeof(cfg->metrics_address) ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        warn(cfg, "metrics.address: expected \"HOST:PORT\"; no metrics served");
        return;
    }
    if (json_string_length(v) &&
        rv_parse_listen_address(json_string_value(v), host, sizeof(host), port, sizeof(port), &err) < 0) {
        warn(cfg, "metrics.address: %s; no metrics served", err.msg);
        return;
    }
    strcpy(cfg->metrics_address, json_string_value(v));
}

int rv_config_parse(struct rv_config *cfg, const char *text, size_t len, struct rv_error *err)
{
    cleanup_json json_t *root = NULL;
    const char *key, *k2;
    json_t *val, *v2;

    if (rv_json_parse(text, len, "configuration", &root, err) < 0)
        return -1;
    if (!json_is_object(root))
        return rv_fail(err, 0, "configuration: expected a JSON object");
    json_object_foreach(root, key, val) {
        if (strcmp(key, "runtimes") == 0) {
            parse_runtimes(cfg, val);
        } else if (strcmp(key, "state_dir") == 0) {
            get_string(cfg, val, "state_dir", cfg->state_dir, sizeof(cfg->state_dir));
            strcpy(cfg->host_state_dir, cfg->state_dir);
        } else if (strcmp(key, "log") == 0) {
            FOREACH_KEY(val, "log", k2, v2) {
                if (strcmp(k2, "file") == 0)
                    get_string(cfg, v2, "log.file", cfg->log_file, sizeof(cfg->log_file));
                else if (strcmp(k2, "level") == 0)
                    get_enum(cfg, v2, "log.level", level_names, 4, (int *)&cfg->log_level);
                else if (strcmp(k2, "max_mib") == 0)
                    get_count(cfg, v2, "log.max_mib", 1 << 20, &cfg->log_max_mib);
                else
                    warn(cfg, "log.%s: unknown key", k2);
            }
        } else if (strcmp(key, "hook") == 0) {
            FOREACH_KEY(val, "hook", k2, v2) {
                if (strcmp(k2, "path") == 0) {
                    get_string(cfg, v2, "hook.path", cfg->hook_path, sizeof(cfg->hook_path));
                    if (cfg->hook_path[0] != '/') {
                        warn(cfg, "hook.path: must be absolute, keeping the default");
                        self_dir_file(cfg->hook_path, sizeof(cfg->hook_path), "resview-hook");
                    }
                } else if (strcmp(k2, "stage") == 0) {
                    static const char *const stages[] = { "prestart", "createRuntime" };
                    int s = 0;
                    get_enum(cfg, v2, "hook.stage", stages, 2, &s);
                    strcpy(cfg->hook_stage, stages[s]);
                } else {
                    warn(cfg, "hook.%s: unknown key", k2);
                }
            }
        } else if (strcmp(key, "lxcfs") == 0) {
            FOREACH_KEY(val, "lxcfs", k2, v2) {
                if (strcmp(k2, "root") == 0)
                    get_string(cfg, v2, "lxcfs.root", cfg->lxcfs_root, sizeof(cfg->lxcfs_root));
                else if (strcmp(k2, "required") == 0)
                    get_bool(cfg, v2, "lxcfs.required", &cfg->lxcfs_required);
                else
                    warn(cfg, "lxcfs.%s: unknown key", k2);
            }
        } else if (strcmp(key, "env") == 0) {
            FOREACH_KEY(val, "env", k2, v2) {
                if (strcmp(k2, "enabled") == 0)
                    get_bool(cfg, v2, "env.enabled", &cfg->env_enabled);
                else if (strcmp(k2, "rounding") == 0)
                    get_enum(cfg, v2, "env.rounding", rounding_names, 3, (int *)&cfg->rounding);
                else if (strcmp(k2, "vars") == 0)
                    parse_vars(cfg, v2);
                else
                    warn(cfg, "env.%s: unknown key", k2);
            }
        } else if (strcmp(key, "fuse") == 0) {
            FOREACH_KEY(val, "fuse", k2, v2) {
                if (strcmp(k2, "allowed") == 0)
                    get_bool(cfg, v2, "fuse.allowed", &cfg->fuse_allowed);
                else if (strcmp(k2, "allow_other") == 0)
                    get_bool(cfg, v2, "fuse.allow_other", &cfg->fuse_allow_other);
                else if (strcmp(k2, "namespaces") == 0)
                    parse_namespaces(cfg, v2);
                else if (strcmp(k2, "max_mounts") == 0)
                    get_count(cfg, v2, "fuse.max_mounts", 100000, &cfg->fuse_max_mounts);
                else if (strcmp(k2, "max_mounts_node") == 0)
                    get_count(cfg, v2, "fuse.max_mounts_node", RV_FUSE_MAX_MOUNTS_NODE_MAX,
                              &cfg->fuse_max_mounts_node);
                else if (strcmp(k2, "apparmor_profile") == 0)
                    warn(cfg, "fuse.apparmor_profile: no longer used (FUSE goes through the "
                         "mount broker, profiles/README.md \"Why a broker\"); remove it");
                else if (strcmp(k2, "seccomp_profile") == 0)
                    get_string(cfg, v2, "fuse.seccomp_profile", cfg->seccomp_profile,
                               sizeof(cfg->seccomp_profile));
                else
                    warn(cfg, "fuse.%s: unknown key", k2);
            }
        } else if (strcmp(key, "gpu") == 0) {
            FOREACH_KEY(val, "gpu", k2, v2) {
                if (strcmp(k2, "runtime") == 0) {
                    get_string(cfg, v2, "gpu.runtime", cfg->gpu_runtime, sizeof(cfg->gpu_runtime));
                    if (cfg->gpu_runtime[0] && cfg->gpu_runtime[0] != '/') {
                        warn(cfg, "gpu.runtime: must be an absolute path; no GPU runtime");
                        cfg->gpu_runtime[0] = '\0';
                    }
                } else if (strcmp(k2, "containers") == 0) {
                    static const char *const which[] = { "gpu", "all" };
                    int w = cfg->gpu_all ? 1 : 0;
                    get_enum(cfg, v2, "gpu.containers", which, 2, &w);
                    cfg->gpu_all = w == 1;
                } else {
                    warn(cfg, "gpu.%s: unknown key", k2);
                }
            }
        } else if (strcmp(key, "metrics") == 0) {
            FOREACH_KEY(val, "metrics", k2, v2) {
                if (strcmp(k2, "address") == 0)
                    get_metrics_address(cfg, v2);
                else
                    warn(cfg, "metrics.%s: unknown key", k2);
            }
        } else if (strcmp(key, "nri") == 0) {
            FOREACH_KEY(val, "nri", k2, v2) {
                if (strcmp(k2, "runtime_handlers") == 0)
                    parse_nri_handlers(cfg, v2);
                else
                    warn(cfg, "nri.%s: unknown key", k2);
            }
        } else {
            warn(cfg, "%s: unknown key", key);
        }
    }
    return 0;
}

int rv_config_load_file(struct rv_config *cfg, const char *path, struct rv_error *err)
{
    cleanup_free char *text = NULL;
    size_t len;

    if (rv_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len, NULL, err) < 0)
        return rv_wrap(err, "configuration");
    if (rv_snprintf(cfg->path, sizeof(cfg->path), "%s", path) < 0)
        return rv_fail(err, ENAMETOOLONG, "configuration path");
    if (rv_config_parse(cfg, text, len, err) < 0)
        return rv_wrap(err, "`%s`", path);
    return 0;
}

/* Not root on the host: the user's runtime directory (config.h). */
static void own_state_dir(struct rv_config *cfg)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    uid_t uid;

    if (rv_host_root())
        return;
    if (xdg && xdg[0] == '/' && rv_snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s/resview", xdg) >= 0)
        return;
    uid = rv_host_uid();
    snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/run/user/%u/resview",
             (unsigned)(uid == (uid_t)-1 ? geteuid() : uid));
}

int rv_config_load(struct rv_config *cfg, struct rv_error *err)
{
    const char *env = getenv("RESVIEW_CONFIG");
    int r = 0;

    rv_config_defaults(cfg);
    if (env && *env) {
        cfg->from_env = true;
        r = rv_config_load_file(cfg, env, err);
    } else if (access(RV_CONFIG_DEFAULT, F_OK) == 0 || errno != ENOENT) {
        r = rv_config_load_file(cfg, RV_CONFIG_DEFAULT, err);
    }
    own_state_dir(cfg);
    return r;
}
