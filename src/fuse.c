/* fuse.c - FUSE with least privilege (DESIGN.md section 4).
 *
 * For a container that asked (edit.c validates the request), and only if
 * fuse.allowed: the /dev/fuse node and its device cgroup rule, CAP_SYS_ADMIN,
 * the seccomp additions (seccomp.c), and the AppArmor profile where AppArmor
 * is enabled. Nothing else: other host devices (GPUs) stay hidden, no other
 * capability is added. Every step is idempotent. Everything that could fail
 * is checked before the document is changed; callers still must not save a
 * document after an error. */
#define _GNU_SOURCE
#include "resview/fuse.h"
#include "resview/apparmor.h"
#include "resview/log.h"
#include "resview/seccomp.h"

#include <errno.h>
#include <string.h>

static const char *const cap_sets[] = { "bounding", "permitted", "effective" };

static bool array_has_string(json_t *arr, const char *s)
{
    json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

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

    if (!array_has_string(bounding, "CAP_SYS_ADMIN"))
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

static int add_device(json_t *linux_, struct rv_error *err)
{
    json_t *devices = rv_json_array_at(linux_, "devices", "config.json: linux", err), *d;
    bool present;

    if (!devices || check_device_entry(devices, &present, err) < 0)
        return -1;
    if (present)
        return 0;
    d = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i}", "path", "/dev/fuse", "type", "c", "major",
                  RV_FUSE_MAJOR, "minor", RV_FUSE_MINOR, "fileMode", 0666, "uid", 0, "gid", 0);
    if (!d || json_array_append_new(devices, d) < 0)
        return rv_fail(err, ENOMEM, "linux.devices");
    return 0;
}

static int add_cgroup_rule(json_t *linux_, struct rv_error *err)
{
    json_t *res = rv_json_object_at(linux_, "resources", "config.json: linux", err), *rules, *r;
    size_t i;
    bool allowed = false;

    if (!res || !(rules = rv_json_array_at(res, "devices", "config.json: linux.resources", err)))
        return -1;
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
    if (allowed)
        return 0;
    r = json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c", "major", RV_FUSE_MAJOR,
                  "minor", RV_FUSE_MINOR, "access", "rwm");
    if (!r || json_array_append_new(rules, r) < 0)
        return rv_fail(err, ENOMEM, "linux.resources.devices");
    return 0;
}

static int add_to_set(json_t *caps, const char *set, struct rv_error *err)
{
    json_t *arr = rv_json_array_at(caps, set, "config.json: process.capabilities", err);

    if (!arr)
        return -1;
    if (array_has_string(arr, "CAP_SYS_ADMIN"))
        return 0;
    if (json_array_append_new(arr, json_string("CAP_SYS_ADMIN")) < 0)
        return rv_fail(err, ENOMEM, "process.capabilities.%s", set);
    return 0;
}

static int add_capability(json_t *root, struct rv_error *err)
{
    json_t *caps = rv_json_path(root, "process.capabilities"), *ambient;

    if (!caps) {
        /* No capabilities object: runc and crun then drop nothing, so the
         * process already holds CAP_SYS_ADMIN. Creating one would take the
         * other capabilities away. */
        rv_log(RV_INFO, "fuse: process.capabilities absent: the runtime keeps every capability");
        return 0;
    }
    if (!json_is_object(caps))
        return rv_fail(err, 0, "config.json: process.capabilities: expected an object");
    for (size_t i = 0; i < sizeof(cap_sets) / sizeof(cap_sets[0]); i++)
        if (add_to_set(caps, cap_sets[i], err) < 0)
            return -1;
    ambient = json_object_get(caps, "ambient");
    if (ambient && !json_is_array(ambient))
        return rv_fail(err, 0, "config.json: process.capabilities.ambient: expected an array");
    /* Ambient only where the spec already uses it (a non-root user that must
     * keep capabilities across execve). The kernel raises an ambient
     * capability only if it is also inheritable: add it there too. */
    if (json_array_size(ambient) > 0 &&
        (add_to_set(caps, "inheritable", err) < 0 || add_to_set(caps, "ambient", err) < 0))
        return -1;
    return 0;
}

/* libseccomp must know the names of our additions for the spec's
 * architectures; an unknown name would be skipped by runc (with a warning) and
 * leave FUSE unusable or the new mount API at the default action. */
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

int rv_fuse_apply_host(json_t *root, const struct rv_config *cfg, const struct rv_fuse_host *host,
                       struct rv_error *err)
{
    cleanup_json json_t *dflt = NULL;
    enum rv_aa_state aa;
    json_t *linux_, *process, *sc;
    char path[PATH_MAX];
    const char *cur;
    bool keep_profile;

    if (!cfg->fuse_allowed)
        return rv_fail(err, 0, "FUSE was requested but fuse.allowed is false in %s",
                       cfg->path[0] ? cfg->path : "the configuration");
    if (!json_is_object(root))
        return rv_fail(err, 0, "config.json: expected an object");
    if (rv_fuse_spec_is_privileged(root)) {
        rv_log(RV_WARN, "fuse: the container is privileged (CAP_SYS_ADMIN and every device): "
               "FUSE request ignored, spec left alone");
        return 0;
    }
    process = rv_json_object_at(root, "process", "config.json", err);
    linux_ = process ? rv_json_object_at(root, "linux", "config.json", err) : NULL;
    if (!linux_)
        return -1;

    /* Checks that can fail, before anything changes. */
    if (rv_apparmor_state(host->apparmor_enabled, host->apparmor_profiles, cfg->apparmor_profile,
                          &aa, err) < 0)
        return rv_wrap(err, "FUSE");
    if (aa == RV_AA_NOT_LOADED)
        return rv_fail(err, 0, "FUSE: AppArmor is enabled but the profile `%s` "
                       "(fuse.apparmor_profile) is not loaded: load it with "
                       "share/resview/apparmor/load.sh or `apparmor_parser -r -W FILE`",
                       cfg->apparmor_profile);
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
    }
    /* The engine itself granted CAP_SYS_ADMIN and every mount (docker
     * --cap-add SYS_ADMIN): it gave more than FUSE needs, deliberately; its
     * profile is kept as it is rather than narrowed. */
    keep_profile = !dflt && array_has_string(rv_json_path(root, "process.capabilities.bounding"),
                                             "CAP_SYS_ADMIN") &&
                   rv_seccomp_allows_any_mount(sc);
    if (keep_profile)
        rv_log(RV_INFO, "fuse: the engine granted CAP_SYS_ADMIN and every mount: seccomp kept as is");
    /* Edit a copy: a refused profile leaves the document as it was. */
    {
        cleanup_json json_t *edited = json_deep_copy(sc);
        if (!edited)
            return rv_fail(err, ENOMEM, "linux.seccomp");
        if (!keep_profile && rv_seccomp_add_fuse(edited, err) < 0)
            return rv_wrap(err, "FUSE");
        if (add_device(linux_, err) < 0 || add_cgroup_rule(linux_, err) < 0 ||
            add_capability(root, err) < 0)
            return rv_wrap(err, "FUSE");
        check_addition_names(edited);
        if (json_object_set(linux_, "seccomp", edited) < 0)
            return rv_fail(err, ENOMEM, "linux.seccomp");
    }
    if (aa == RV_AA_LOADED) {
        cur = json_string_value(json_object_get(process, "apparmorProfile"));
        if (cur && strcmp(cur, cfg->apparmor_profile) != 0)
            rv_log(RV_INFO, "fuse: AppArmor profile `%s` replaced by `%s`", cur,
                   cfg->apparmor_profile);
        if (json_object_set_new(process, "apparmorProfile", json_string(cfg->apparmor_profile)) < 0)
            return rv_fail(err, ENOMEM, "process.apparmorProfile");
    }
    rv_log(RV_INFO, "fuse: /dev/fuse, CAP_SYS_ADMIN, seccomp additions (%s), AppArmor %s",
           dflt ? path : "engine profile",
           aa == RV_AA_LOADED ? cfg->apparmor_profile : "disabled on this host");
    return 0;
}

int rv_fuse_apply(json_t *root, const struct rv_config *cfg, struct rv_error *err)
{
    const struct rv_fuse_host host = { NULL, NULL, NULL };
    return rv_fuse_apply_host(root, cfg, &host, err);
}
