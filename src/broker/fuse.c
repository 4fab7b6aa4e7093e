/* fuse.c - FUSE with zero added capabilities (profiles/README.md).
 *
 * Who may ask (rv_fuse_wanted): fuse.allowed is the master switch; then the
 * annotation resview.io/fuse: "true" (Kubernetes through containerd's
 * pod_annotations or CRI-O's allowed_annotations, podman --annotation,
 * docker 24+), or the shim started under the FUSE runtime name, which the
 * operator registers with an engine (a RuntimeClass handler, `docker
 * --runtime`). fuse.namespaces narrows both to Kubernetes namespaces named by
 * the CRI's own annotations. RESVIEW_FUSE=1 in the container's environment
 * alone is the image author's word, not the operator's: refused, saying how
 * to ask.
 *
 * The grant (rv_fuse_apply_host): the /dev/fuse node and its device cgroup
 * rule, and seccomp rules that hand every mount/umount/umount2 to the
 * container's broker (seccomp.c, broker.h); no capability. Other host devices
 * (GPUs) stay hidden. Every step is idempotent; everything that could fail is
 * checked before the document changes (callers still must not save a document
 * after an error). */
#define _GNU_SOURCE
#include "resview/fuse.h"
#include "resview/broker.h"
#include "resview/log.h"
#include "resview/proc.h"
#include "resview/seccomp.h"
#include "resview/spec.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* A device cgroup rule's major/minor matches n: absent, -1 (wildcard) or n. */
static bool num_matches(json_t *v, json_int_t n)
{
    return !v || json_is_null(v) || (json_is_integer(v) &&
                                     (json_integer_value(v) == -1 || json_integer_value(v) == n));
}

/* Rule type covers "c": absent, "a" or "c". */
static bool type_covers_char(json_t *rule)
{
    const char *t = json_string_value(json_object_get(rule, "type"));
    return !t || strcmp(t, "a") == 0 || strcmp(t, "c") == 0;
}

static bool access_has(json_t *rule, const char *want)
{
    const char *a = json_string_value(json_object_get(rule, "access"));
    if (!a)   /* absent: runc and crun read it as "rwm" */
        return true;
    for (; *want; want++)
        if (!strchr(a, *want))
            return false;
    return true;
}

static bool is_wildcard(json_t *v)
{
    return !v || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == -1);
}

bool rv_fuse_spec_is_privileged(json_t *root)
{
    json_t *bounding = rv_json_path(root, "process.capabilities.bounding");
    json_t *rules = rv_json_path(root, "linux.resources.devices"), *r;
    size_t i;
    bool all_devices = false;

    if (!rv_json_array_has_string(bounding, "CAP_SYS_ADMIN"))
        return false;
    /* The last rule that covers every device decides (later rules win). */
    json_array_foreach(rules, i, r) {
        json_t *maj = json_object_get(r, "major"), *min = json_object_get(r, "minor");
        const char *t = json_string_value(json_object_get(r, "type"));
        if ((!t || strcmp(t, "a") == 0) && is_wildcard(maj) && is_wildcard(min) &&
            access_has(r, "rwm"))
            all_devices = json_is_true(json_object_get(r, "allow"));
    }
    return all_devices;
}

static int check_device_entry(json_t *devices, bool *present, struct rv_error *err)
{
    json_t *d;
    size_t i;

    *present = false;
    json_array_foreach(devices, i, d) {
        const char *path = json_string_value(json_object_get(d, "path"));
        if (!path || strcmp(path, "/dev/fuse") != 0)
            continue;
        if (!json_is_string(json_object_get(d, "type")) ||
            strcmp(json_string_value(json_object_get(d, "type")), "c") != 0 ||
            json_integer_value(json_object_get(d, "major")) != RV_FUSE_MAJOR ||
            json_integer_value(json_object_get(d, "minor")) != RV_FUSE_MINOR)
            return rv_fail(err, 0, "linux.devices[%zu]: /dev/fuse is not c %d:%d", i,
                           RV_FUSE_MAJOR, RV_FUSE_MINOR);
        *present = true;
    }
    return 0;
}

/* Whether /dev/fuse must be added to linux.devices and an allow rule to
 * linux.resources.devices; every type error is found here, before anything
 * changes. */
static int plan_device(json_t *linux_, bool *need_device, bool *need_rule, struct rv_error *err)
{
    json_t *devices = json_object_get(linux_, "devices"), *res = json_object_get(linux_, "resources");
    json_t *rules = json_object_get(res, "devices"), *r;
    size_t i;
    bool present = false, allowed = false;

    if (devices && !json_is_array(devices))
        return rv_fail(err, 0, "config.json: linux.devices: expected an array");
    if (devices && check_device_entry(devices, &present, err) < 0)
        return -1;
    if (res && !json_is_object(res))
        return rv_fail(err, 0, "config.json: linux.resources: expected an object");
    if (rules && !json_is_array(rules))
        return rv_fail(err, 0, "config.json: linux.resources.devices: expected an array");
    /* Rules apply in order: /dev/fuse is usable if the last rule covering it allows it. */
    json_array_foreach(rules, i, r) {
        if (!json_is_object(r))
            return rv_fail(err, 0, "linux.resources.devices[%zu]: expected an object", i);
        if (!type_covers_char(r) || !num_matches(json_object_get(r, "major"), RV_FUSE_MAJOR) ||
            !num_matches(json_object_get(r, "minor"), RV_FUSE_MINOR))
            continue;
        if (json_is_true(json_object_get(r, "allow")))
            allowed = allowed || (access_has(r, "rwm") &&
                                  json_is_string(json_object_get(r, "type")) &&
                                  json_is_integer(json_object_get(r, "major")) &&
                                  json_is_integer(json_object_get(r, "minor")));
        else
            allowed = false;
    }
    *need_device = !present;
    *need_rule = !allowed;
    return 0;
}

/* What plan_device found missing; fails only when memory does. */
static int add_device(json_t *linux_, bool need_device, bool need_rule, struct rv_error *err)
{
    json_t *devices, *res, *rules;

    if (need_device &&
        (!(devices = rv_json_array_at(linux_, "devices", "config.json: linux", err)) ||
         json_array_append_new(devices, json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i}", "path", "/dev/fuse",
                                                  "type", "c", "major", RV_FUSE_MAJOR, "minor",
                                                  RV_FUSE_MINOR, "fileMode", 0666, "uid", 0, "gid", 0)) < 0))
        return rv_fail(err, ENOMEM, "linux.devices");
    if (need_rule &&
        (!(res = rv_json_object_at(linux_, "resources", "config.json: linux", err)) ||
         !(rules = rv_json_array_at(res, "devices", "config.json: linux.resources", err)) ||
         json_array_append_new(rules, json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c", "major",
                                                RV_FUSE_MAJOR, "minor", RV_FUSE_MINOR, "access", "rwm")) < 0))
        return rv_fail(err, ENOMEM, "linux.resources.devices");
    return 0;
}

/* "true"/"false" of an annotation, "1"/"0" of a variable: 1, 0, -1 absent,
 * -2 invalid. */
static int request_value(json_t *root, bool annotation, struct rv_error *err)
{
    const char *v;

    if (annotation) {
        json_t *ann = rv_json_path(root, "annotations");
        json_t *a = json_is_object(ann) ? json_object_get(ann, RV_ANN_FUSE) : NULL;
        if (!a)
            return -1;
        v = json_string_value(a);
        if (v && (strcmp(v, "true") == 0 || strcmp(v, "false") == 0))
            return v[0] == 't';
        rv_fail(err, 0, "annotation %s: expected \"true\" or \"false\"", RV_ANN_FUSE);
        return -2;
    }
    json_t *env = rv_json_path(root, "process.env");
    v = json_is_array(env) ? rv_env_get(env, "RESVIEW_FUSE") : NULL;
    if (!v)
        return -1;
    if (strcmp(v, "1") == 0 || strcmp(v, "0") == 0)
        return v[0] == '1';
    rv_fail(err, 0, "environment variable RESVIEW_FUSE: expected 1 or 0");
    return -2;
}

static const char *k8s_namespace(json_t *root)
{
    json_t *ann = rv_json_path(root, "annotations");
    const char *ns = json_string_value(json_object_get(ann, RV_ANN_K8S_NS_CONTAINERD));

    return ns ? ns : json_string_value(json_object_get(ann, RV_ANN_K8S_NS_CRIO));
}

int rv_fuse_wanted(json_t *root, const struct rv_config *cfg, bool fuse_runtime, bool *want,
                   struct rv_error *err)
{
    const char *how, *ns, *file = cfg->path[0] ? cfg->path : "the configuration";
    int ann, env;

    *want = false;
    if ((ann = request_value(root, true, err)) == -2 || (env = request_value(root, false, err)) == -2)
        return -1;
    /* an explicit "no" always wins: less privilege */
    if (ann == 0 || (ann < 0 && env == 0) || (ann < 0 && env < 0 && !fuse_runtime))
        return 0;
    how = fuse_runtime ? "the runtime " RV_FUSE_RUNTIME_NAME
          : ann == 1   ? "annotation " RV_ANN_FUSE "=true"
                       : "RESVIEW_FUSE=1 in the container's environment";
    if (!cfg->fuse_allowed)
        return rv_fail(err, 0, "FUSE was requested (%s) but fuse.allowed is false in %s", how, file);
    if (!fuse_runtime && ann != 1)
        return rv_fail(err, 0, "FUSE was requested by RESVIEW_FUSE=1 in the container's environment, "
                       "which the image controls: ask with the annotation %s=\"true\" or the "
                       "runtime %s (profiles/README.md \"Who may ask\")", RV_ANN_FUSE, RV_FUSE_RUNTIME_NAME);
    if (cfg->n_fuse_namespaces > 0) {
        bool listed = false;
        ns = k8s_namespace(root);
        for (int i = 0; ns && i < cfg->n_fuse_namespaces; i++)
            listed = listed || strcmp(ns, cfg->fuse_namespaces[i]) == 0;
        if (!listed)
            return rv_fail(err, 0, "FUSE was requested (%s) but %s%.64s%s is not in "
                           "fuse.namespaces in %s", how, ns ? "the Kubernetes namespace `" : "",
                           ns ? ns : "the container has no Kubernetes namespace annotation",
                           ns ? "`" : "", file);
    }
    /* the broker mounts as root on the host: a rootless engine's container is refused */
    if (!rv_host_root())
        return rv_fail(err, 0, "FUSE: refused: the runtime is not root on the host (a rootless "
                       "engine), and FUSE mounts go through resview's broker, which needs root there");
    *want = true;
    return 0;
}

const char *rv_fuse_listener(json_t *root)
{
    return json_string_value(rv_json_path(root, "linux.seccomp.listenerPath"));
}

/* Our own listener (a broker socket under <state_dir>/fuse/) may be replaced;
 * an engine's seccomp agent may not. */
static int check_listener(json_t *sc, const struct rv_config *cfg, struct rv_error *err)
{
    const char *l = json_string_value(json_object_get(sc, "listenerPath"));
    char dir[PATH_MAX];

    if (!l || !*l)
        return 0;
    if (rv_snprintf(dir, sizeof(dir), "%s/%s/", cfg->state_dir, RV_BROKER_DIR) < 0)
        return rv_fail(err, ENAMETOOLONG, "state_dir");
    if (strncmp(l, dir, strlen(dir)) != 0 || strchr(l + strlen(dir), '/'))
        return rv_fail(err, 0, "FUSE: linux.seccomp.listenerPath is already `%.200s`, another "
                       "seccomp agent: resview's mount broker cannot share it", l);
    return 0;
}

/* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: once the broker has read a
 * notification, only a fatal signal interrupts the caller, so a Go program's
 * preemption signals do not turn one mount into several. */
static int add_wait_killable(json_t *sc, struct rv_error *err)
{
    json_t *flags = rv_json_array_at(sc, "flags", "linux.seccomp", err), *f;
    size_t i;

    if (!flags)
        return -1;
    json_array_foreach(flags, i, f)
        if (json_is_string(f) && strcmp(json_string_value(f), RV_SECCOMP_FLAG_WAIT_KILLABLE) == 0)
            return 0;
    if (json_array_append_new(flags, json_string(RV_SECCOMP_FLAG_WAIT_KILLABLE)) < 0)
        return rv_fail(err, ENOMEM, "linux.seccomp.flags");
    return 0;
}

/* libseccomp must know the names of our additions for the spec's
 * architectures; an unknown name would be skipped by runc (with a warning). */
static void warn_unknown(void *ud, const char *arch, const char *name)
{
    (void)ud;
    rv_log(RV_WARN, "fuse: seccomp: libseccomp does not know `%s` for %s", name, arch);
}

static void check_addition_names(json_t *sc)
{
    cleanup_json json_t *probe = json_pack("{s:O,s:O*}", "defaultAction",
                                           json_object_get(sc, "defaultAction"), "architectures",
                                           json_object_get(sc, "architectures"));
    struct rv_error e;
    size_t unknown;

    if (probe && rv_seccomp_unknown_names(probe, true, warn_unknown, NULL, &unknown, &e) < 0)
        rv_log(RV_WARN, "fuse: seccomp: %s", e.msg);
}

/* A container with a user namespace of its own gets the host's /dev/fuse
 * bound in by runc (it cannot make a device node there; crun 1.8 makes its
 * own): the node's mode is what the container's users get. udev makes it
 * 0666; a host without udev may leave the kernel's 0600. */
static void warn_userns_device(json_t *root)
{
    json_t *ns, *nss = rv_json_path(root, "linux.namespaces");
    struct stat st;
    size_t i;

    json_array_foreach(nss, i, ns) {
        const char *type = json_string_value(json_object_get(ns, "type"));
        if (type && strcmp(type, "user") == 0 && stat("/dev/fuse", &st) == 0 &&
            (st.st_mode & 0006) != 0006) {
            rv_log(RV_WARN, "fuse: the container has its own user namespace, and the host's "
                   "/dev/fuse is mode %04o: where the runtime binds it in (runc does), its FUSE "
                   "clients cannot open it (udev makes it 0666)", st.st_mode & 07777);
            return;
        }
    }
}

int rv_fuse_apply_host(json_t *root, const struct rv_config *cfg, const struct rv_fuse_host *host,
                       const struct rv_fuse_runtime *rt, bool *broker, struct rv_error *err)
{
    cleanup_json json_t *dflt = NULL, *edited = NULL;
    json_t *linux_, *sc;
    char path[PATH_MAX];
    bool keep_profile, need_device = false, need_rule = false;

    *broker = false;
    if (!json_is_object(root))
        return rv_fail(err, 0, "config.json: expected an object");
    if (rv_fuse_spec_is_privileged(root)) {
        rv_log(RV_WARN, "fuse: the container is privileged (CAP_SYS_ADMIN and every device): "
               "FUSE request ignored, spec left alone");
        return 0;
    }
    /* Checks that can fail, before anything changes (nothing is created yet:
     * a refused grant leaves the document as it was). */
    linux_ = json_object_get(root, "linux");
    if (json_object_get(root, "process") && !json_is_object(json_object_get(root, "process")))
        return rv_fail(err, 0, "config.json: process: expected an object");
    if (linux_ && !json_is_object(linux_))
        return rv_fail(err, 0, "config.json: linux: expected an object");
    if (plan_device(linux_, &need_device, &need_rule, err) < 0)
        return rv_wrap(err, "FUSE");
    sc = json_object_get(linux_, "seccomp");
    if (!sc || json_is_null(sc)) {
        if (host->seccomp_profile) {
            if (rv_snprintf(path, sizeof(path), "%s", host->seccomp_profile) < 0)
                return rv_fail(err, ENAMETOOLONG, "seccomp profile path");
        } else if (rv_seccomp_default_path(cfg, path, sizeof(path), err) < 0) {
            return rv_wrap(err, "FUSE: the spec has no seccomp profile");
        }
        if (rv_seccomp_load(path, &dflt, err) < 0)
            return rv_wrap(err, "FUSE: the spec has no seccomp profile");
        sc = dflt;
    } else if (!json_is_object(sc)) {
        return rv_fail(err, 0, "linux.seccomp: expected an object");
    }
    /* The engine itself granted CAP_SYS_ADMIN and every mount (docker
     * --cap-add SYS_ADMIN): the container mounts by itself; its profile is
     * kept as the engine made it, and it needs no broker. */
    keep_profile = !dflt &&
                   rv_json_array_has_string(rv_json_path(root, "process.capabilities.bounding"),
                                            "CAP_SYS_ADMIN") &&
                   rv_seccomp_allows_any_mount(sc);
    if (!keep_profile) {
        if (rt && !rt->notify)
            return rv_fail(err, 0, "FUSE: the next runtime cannot hand the container's mount "
                           "calls to resview's broker (seccomp listenerPath, SCMP_ACT_NOTIFY): "
                           "%s; use runc >= 1.1 or crun >= 0.19", rt->why);
        if (check_listener(sc, cfg, err) < 0)
            return -1;
        /* Edit a copy: a refused profile leaves the document as it was. */
        if (!(edited = json_deep_copy(sc)))
            return rv_fail(err, ENOMEM, "linux.seccomp");
        if (rv_seccomp_add_fuse(edited, err) < 0 ||
            (rt && rt->wait_killable && add_wait_killable(edited, err) < 0))
            return rv_wrap(err, "FUSE");
        check_addition_names(edited);
    }
    if (!(linux_ = rv_json_object_at(root, "linux", "config.json", err)) ||
        add_device(linux_, need_device, need_rule, err) < 0)
        return rv_wrap(err, "FUSE");
    if (edited && json_object_set(linux_, "seccomp", edited) < 0)
        return rv_fail(err, ENOMEM, "linux.seccomp");
    *broker = !keep_profile;
    warn_userns_device(root);
    rv_log(RV_INFO, "fuse: /dev/fuse, %s", keep_profile
           ? "the engine granted CAP_SYS_ADMIN and every mount: seccomp kept as is, no broker"
           : dflt ? "mount calls to the broker (the spec had no seccomp profile: default profile)"
                  : "mount calls to the broker (engine profile)");
    return 0;
}

int rv_fuse_set_listener(json_t *root, const char *path, const char *metadata,
                         struct rv_error *err)
{
    json_t *sc = rv_json_path(root, "linux.seccomp");

    if (!json_is_object(sc))
        return rv_fail(err, 0, "FUSE: linux.seccomp: expected an object");
    if (json_object_set_new(sc, "listenerPath", json_string(path)) < 0 ||
        json_object_set_new(sc, "listenerMetadata", json_string(metadata)) < 0)
        return rv_fail(err, ENOMEM, "linux.seccomp.listenerPath");
    return 0;
}

/* path equal to or under dir (both absolute, as a spec writes them). */
static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool in_list(json_t *list, const char *dest)
{
    json_t *v;
    size_t i;

    json_array_foreach(list, i, v)
        if (json_is_string(v) && path_under(dest, json_string_value(v)))
            return true;
    return false;
}

/* Whether a spec mount is a bind (its type, or bind/rbind among its options). */
static bool is_bind(json_t *m)
{
    const char *type = json_string_value(json_object_get(m, "type"));

    return (type && strcmp(type, "bind") == 0) ||
           rv_json_array_has_string(json_object_get(m, "options"), "bind") ||
           rv_json_array_has_string(json_object_get(m, "options"), "rbind");
}

static bool volume_place(json_t *m, json_t *masked, json_t *ro)
{
    static const char *const engine_files[] = { "/etc/hosts", "/etc/hostname", "/etc/resolv.conf",
                                                NULL };
    static const char *const kernel_dirs[] = { "/proc", "/sys", "/dev", NULL };
    const char *dest = json_string_value(json_object_get(m, "destination"));
    const char *src = json_string_value(json_object_get(m, "source"));

    if (!dest || dest[0] != '/' || !src || src[0] != '/' || !is_bind(m) || strstr(dest, "/..") ||
        strcmp(dest, "/") == 0)
        return false;
    for (size_t i = 0; kernel_dirs[i]; i++)
        if (path_under(dest, kernel_dirs[i]))
            return false;
    for (size_t i = 0; engine_files[i]; i++)
        if (strcmp(dest, engine_files[i]) == 0)
            return false;
    return !in_list(masked, dest) && !in_list(ro, dest);
}

json_t *rv_fuse_volumes(json_t *root)
{
    json_t *mounts = json_object_get(root, "mounts"), *lx = json_object_get(root, "linux");
    json_t *masked = json_object_get(lx, "maskedPaths"), *ro = json_object_get(lx, "readonlyPaths");
    json_t *out = json_array(), *m, *n;
    size_t i, k;

    json_array_foreach(mounts, i, m) {
        const char *src = json_string_value(json_object_get(m, "source"));
        bool shared_with_excluded = false;
        if (!out || !volume_place(m, masked, ro))
            continue;
        json_array_foreach(mounts, k, n) {
            const char *s2 = json_string_value(json_object_get(n, "source"));
            if (k != i && s2 && strcmp(s2, src) == 0 && !volume_place(n, masked, ro))
                shared_with_excluded = true;
        }
        if (!shared_with_excluded && !rv_json_array_has_string(out, src) &&
            json_array_size(out) < RV_BROKER_MAX_VOLUMES)
            json_array_append_new(out, json_string(src));
    }
    return out;
}
