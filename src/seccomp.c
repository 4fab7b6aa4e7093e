/* seccomp.c - seccomp additions for FUSE containers (DESIGN.md section 4).
 *
 * The container gets CAP_SYS_ADMIN so that libfuse can call mount(2). The
 * engine's seccomp profile stays in force; the FUSE grant touches only the
 * syscalls it is about:
 *
 *   mount          allowed when argument 3 (flags) has none of MS_BIND,
 *                  MS_MOVE, MS_REMOUNT and the propagation flags
 *                  (SCMP_CMP_MASKED_EQ, mask RV_MOUNT_FORBIDDEN_FLAGS, 0);
 *                  with a forbidden flag it gets what the engine gave it
 *                  (see "mount with a forbidden flag" below);
 *   umount2        allowed;
 *   fsopen fsconfig fsmount fspick open_tree move_mount mount_setattr
 *                  ENOSYS: the new mount API cannot be filtered by flags the
 *                  same way (open_tree(OPEN_TREE_CLONE) + move_mount is a
 *                  bind mount), and ENOSYS makes libfuse and libmount fall
 *                  back to mount(2).
 *
 * How the engine's rules are kept. runc and crun hand every rule to
 * libseccomp; two rules with different actions for the same syscall either
 * conflict or depend on rule order, so the engine's rules that name one of
 * the syscalls above lose that name (a rule left with no name is dropped) and
 * ours are appended. Every other rule is kept as it was, in the same order.
 * This is also what makes the edit idempotent: a second pass takes our rules
 * out and appends the same ones again.
 *
 * Docker's and containerd's default profiles allow mount, umount2, setns,
 * unshare, namespace flags of clone, bpf, … only "if the container has
 * CAP_SYS_ADMIN". That condition is resolved by the engine when it writes the
 * spec (docker's `includes.caps`, containerd's cap switch), for the
 * capabilities it granted: the spec runc sees has no such rules at all, so
 * they are denied by the default action. We add CAP_SYS_ADMIN afterwards and
 * deliberately do not re-resolve: the capability is granted for FUSE, and
 * everything the engine tied to it stays denied except the narrow mount rule
 * above. A profile that still carries docker-format `includes`/`excludes`
 * conditions on CAP_SYS_ADMIN (hand-written; runc and crun ignore those keys
 * and apply such a rule unconditionally) has a meaning that our new
 * capability would change; it is refused rather than guessed at.
 *
 * Mount with a forbidden flag. In a default-deny profile (docker, containerd,
 * profiles/seccomp.json) it falls to the default action: denied. In a profile
 * whose default action does not deny (SCMP_ACT_ALLOW, _LOG, _TRACE, _NOTIFY)
 * and which relies on rules to deny, the engine's own rule for mount (the
 * first one with a denying action) is carried over to "mount with any
 * forbidden flag", one rule per flag (MASKED_EQ(flag, flag)): the engine
 * denied mount, and mount with those flags stays denied the same way. If the
 * engine had no denying rule for mount, the container could not mount anyway
 * before (no CAP_SYS_ADMIN); now it could bind and remount, so such mounts
 * get EPERM. */
#define _GNU_SOURCE
#include "resview/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

const char *const rv_seccomp_fuse_names[] = {
    "mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick",
    "open_tree", "move_mount", "mount_setattr", NULL,
};
/* rv_seccomp_fuse_names + 2 */
static const char *const new_mount_api[] = {
    "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
};
static const unsigned long long forbidden_flags[] = {
    0x20 /* MS_REMOUNT */, 0x1000 /* MS_BIND */, 0x2000 /* MS_MOVE */,
    0x20000 /* MS_UNBINDABLE */, 0x40000 /* MS_PRIVATE */, 0x80000 /* MS_SLAVE */,
    0x100000 /* MS_SHARED */,
};

static bool is_fuse_name(const char *name)
{
    for (size_t i = 0; rv_seccomp_fuse_names[i]; i++)
        if (strcmp(name, rv_seccomp_fuse_names[i]) == 0)
            return true;
    return false;
}

/* Actions that stop the syscall. SCMP_ACT_TRACE (a tracer decides),
 * SCMP_ACT_NOTIFY (a supervisor decides), SCMP_ACT_LOG and SCMP_ACT_ALLOW do
 * not. */
static bool is_deny_action(const char *a)
{
    return a && (strcmp(a, "SCMP_ACT_ERRNO") == 0 || strcmp(a, "SCMP_ACT_KILL") == 0 ||
                 strcmp(a, "SCMP_ACT_KILL_PROCESS") == 0 ||
                 strcmp(a, "SCMP_ACT_KILL_THREAD") == 0 || strcmp(a, "SCMP_ACT_TRAP") == 0);
}

/* The errno an SCMP_ACT_ERRNO gives: errnoRet, else EPERM (runc and crun). */
static json_int_t errno_of(json_t *v)
{
    return json_is_integer(v) ? json_integer_value(v) : EPERM;
}

static bool mentions_sys_admin(json_t *cond)
{
    json_t *caps = json_object_get(cond, "caps"), *c;
    size_t i;

    json_array_foreach(caps, i, c) {
        const char *s = json_string_value(c);
        if (s && (strcmp(s, "CAP_SYS_ADMIN") == 0 || strcmp(s, "SYS_ADMIN") == 0))
            return true;
    }
    return false;
}

/* Shape checks shared by the edit and the name check. */
static int check_profile(const json_t *sc, json_t **syscalls, struct rv_error *err)
{
    json_t *arr, *rule, *names, *n;
    size_t i, j;

    if (!json_is_object(sc))
        return rv_fail(err, 0, "linux.seccomp: expected an object");
    if (!json_is_string(json_object_get(sc, "defaultAction")))
        return rv_fail(err, 0, "linux.seccomp.defaultAction: expected a string");
    arr = json_object_get(sc, "syscalls");
    if (arr && !json_is_array(arr) && !json_is_null(arr))
        return rv_fail(err, 0, "linux.seccomp.syscalls: expected an array");
    if (arr && json_is_null(arr))
        arr = NULL;
    json_array_foreach(arr, i, rule) {
        if (!json_is_object(rule))
            return rv_fail(err, 0, "linux.seccomp.syscalls[%zu]: expected an object", i);
        if (!json_is_string(json_object_get(rule, "action")))
            return rv_fail(err, 0, "linux.seccomp.syscalls[%zu].action: expected a string", i);
        names = json_object_get(rule, "names");
        if (names && !json_is_array(names))
            return rv_fail(err, 0, "linux.seccomp.syscalls[%zu].names: expected an array", i);
        json_array_foreach(names, j, n)
            if (!json_is_string(n))
                return rv_fail(err, 0, "linux.seccomp.syscalls[%zu].names[%zu]: expected a string",
                               i, j);
    }
    if (syscalls)
        *syscalls = arr;
    return 0;
}

static json_t *arg_masked_eq(unsigned idx, unsigned long long mask, unsigned long long datum)
{
    /* json_int_t is signed 64-bit: every mask here fits. */
    return json_pack("{s:i,s:I,s:I,s:s}", "index", (int)idx, "value", (json_int_t)mask,
                     "valueTwo", (json_int_t)datum, "op", "SCMP_CMP_MASKED_EQ");
}

static json_t *fuse_rules(const char *deny_action, json_t *deny_errno)
{
    json_t *rules = json_array(), *api = json_array(), *r;

    if (!rules || !api)
        goto fail;
    /* 1. mount without a forbidden flag. */
    r = json_pack("{s:[s],s:s,s:[o]}", "names", "mount", "action", "SCMP_ACT_ALLOW", "args",
                  arg_masked_eq(3, RV_MOUNT_FORBIDDEN_FLAGS, 0));
    if (json_array_append_new(rules, r) < 0)
        goto fail;
    /* 2. umount2 (flags only; the target is a pointer). */
    r = json_pack("{s:[s],s:s}", "names", "umount2", "action", "SCMP_ACT_ALLOW");
    if (json_array_append_new(rules, r) < 0)
        goto fail;
    /* 3. the new mount API: ENOSYS, so callers fall back to mount(2). */
    for (size_t i = 0; i < sizeof(new_mount_api) / sizeof(new_mount_api[0]); i++)
        if (json_array_append_new(api, json_string(new_mount_api[i])) < 0)
            goto fail;
    r = json_pack("{s:o,s:s,s:i}", "names", api, "action", "SCMP_ACT_ERRNO", "errnoRet", RV_ENOSYS);
    api = NULL;
    if (json_array_append_new(rules, r) < 0)
        goto fail;
    /* 4. mount with a forbidden flag, where the default action would not deny. */
    for (size_t i = 0; deny_action && i < sizeof(forbidden_flags) / sizeof(forbidden_flags[0]); i++) {
        r = json_pack("{s:[s],s:s,s:[o]}", "names", "mount", "action", deny_action, "args",
                      arg_masked_eq(3, forbidden_flags[i], forbidden_flags[i]));
        if (r && deny_errno && json_object_set(r, "errnoRet", deny_errno) < 0) {
            json_decref(r);
            goto fail;
        }
        if (json_array_append_new(rules, r) < 0)
            goto fail;
    }
    return rules;
fail:
    json_decref(api);
    json_decref(rules);
    return NULL;
}

int rv_seccomp_add_fuse(json_t *sc, struct rv_error *err)
{
    json_t *arr, *rule, *deny_rule = NULL, *deny_errno = NULL, *add, *r;
    cleanup_json json_t *eperm = NULL;
    const char *dflt, *deny_action = NULL;
    size_t i;

    if (check_profile(sc, &arr, err) < 0)
        return -1;
    dflt = json_string_value(json_object_get(sc, "defaultAction"));
    if (!arr) {
        arr = json_array();
        if (!arr || json_object_set_new(sc, "syscalls", arr) < 0)
            return rv_fail(err, ENOMEM, "linux.seccomp.syscalls");
    }
    /* Refuse what our capability would change the meaning of (see the top). */
    json_array_foreach(arr, i, rule)
        if (mentions_sys_admin(json_object_get(rule, "includes")) ||
            mentions_sys_admin(json_object_get(rule, "excludes")))
            return rv_fail(err, 0, "linux.seccomp.syscalls[%zu]: a condition on CAP_SYS_ADMIN "
                           "(includes/excludes) that runc and crun ignore; adding CAP_SYS_ADMIN "
                           "for FUSE would change what it means: resolve the profile for the "
                           "container's capabilities first", i);
    /* The engine's own answer to mount, before we take it out. */
    json_array_foreach(arr, i, rule) {
        json_t *names = json_object_get(rule, "names"), *n;
        size_t j;
        json_array_foreach(names, j, n)
            if (strcmp(json_string_value(n), "mount") == 0 &&
                is_deny_action(json_string_value(json_object_get(rule, "action"))) && !deny_rule)
                deny_rule = rule;
    }
    if (deny_rule) {
        deny_action = json_string_value(json_object_get(deny_rule, "action"));
        deny_errno = json_object_get(deny_rule, "errnoRet");
        /* Same as the default action: the default already covers it. */
        if (strcmp(deny_action, dflt) == 0 &&
            (strcmp(dflt, "SCMP_ACT_ERRNO") != 0 ||
             errno_of(deny_errno) == errno_of(json_object_get(sc, "defaultErrnoRet"))))
            deny_action = NULL;
    } else if (!is_deny_action(dflt)) {
        deny_action = "SCMP_ACT_ERRNO";
        deny_errno = eperm = json_integer(EPERM);
        if (!eperm)
            return rv_fail(err, ENOMEM, "linux.seccomp");
    }
    add = fuse_rules(deny_action, deny_errno);
    if (!add)
        return rv_fail(err, ENOMEM, "linux.seccomp");
    /* Take our syscalls out of the engine's rules (deny_rule may go here). */
    for (i = 0; i < json_array_size(arr);) {
        json_t *names;
        size_t j, before;
        rule = json_array_get(arr, i);
        names = json_object_get(rule, "names");
        before = json_array_size(names);
        for (j = 0; j < json_array_size(names);) {
            if (is_fuse_name(json_string_value(json_array_get(names, j))))
                json_array_remove(names, j);
            else
                j++;
        }
        if (before && json_array_size(names) == 0)
            json_array_remove(arr, i);
        else
            i++;
    }
    json_array_foreach(add, i, r)
        if (json_array_append(arr, r) < 0) {
            json_decref(add);
            return rv_fail(err, ENOMEM, "linux.seccomp.syscalls");
        }
    json_decref(add);
    return 0;
}

bool rv_seccomp_allows_any_mount(const json_t *sc)
{
    json_t *rule, *n;
    size_t i, j;
    bool named = false;

    json_array_foreach(json_object_get(sc, "syscalls"), i, rule)
        json_array_foreach(json_object_get(rule, "names"), j, n) {
            if (!json_is_string(n) || strcmp(json_string_value(n), "mount") != 0)
                continue;
            named = true;
            if (json_is_string(json_object_get(rule, "action")) &&
                strcmp(json_string_value(json_object_get(rule, "action")), "SCMP_ACT_ALLOW") == 0 &&
                json_array_size(json_object_get(rule, "args")) == 0)
                return true;
        }
    return !named && json_is_string(json_object_get(sc, "defaultAction")) &&
           strcmp(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_ALLOW") == 0;
}

int rv_seccomp_load(const char *path, json_t **out, struct rv_error *err)
{
    cleanup_free char *text = NULL;
    cleanup_json json_t *root = NULL;
    size_t len;

    if (rv_read_file_at(AT_FDCWD, path, 1u << 20, &text, &len, NULL, err) < 0)
        return rv_wrap(err, "seccomp profile");
    if (rv_json_parse(text, len, path, &root, err) < 0)
        return -1;
    if (check_profile(root, NULL, err) < 0)
        return rv_wrap(err, "seccomp profile `%s`", path);
    *out = move_ptr(root);
    return 0;
}

int rv_seccomp_default_path(const struct rv_config *cfg, char *buf, size_t size,
                            struct rv_error *err)
{
    static const char *const fixed[] = RV_SECCOMP_PATHS;
    char exe[PATH_MAX], *slash;
    ssize_t n;

    if (cfg->seccomp_profile[0]) {
        if (rv_snprintf(buf, size, "%s", cfg->seccomp_profile) < 0)
            return rv_fail(err, ENAMETOOLONG, "fuse.seccomp_profile");
        return 0;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (rv_snprintf(buf, size, "%s/%s", exe, RV_SECCOMP_REL_PATH) >= 0 &&
                access(buf, R_OK) == 0)
                return 0;
        }
    }
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (access(fixed[i], R_OK) == 0)
            return rv_snprintf(buf, size, "%s", fixed[i]) < 0 ? rv_fail(err, ENAMETOOLONG, "%s", fixed[i]) : 0;
    return rv_fail(err, ENOENT, "no default seccomp profile (fuse.seccomp_profile unset; "
                   "looked in <binary dir>/%s, %s, %s)", RV_SECCOMP_REL_PATH, fixed[0], fixed[1]);
}

/* OCI "SCMP_ARCH_X86_64" -> libseccomp token; 0 if unknown. */
static uint32_t arch_token(const char *oci)
{
    char low[32];
    size_t i;

    if (strncmp(oci, "SCMP_ARCH_", 10) != 0)
        return 0;
    oci += 10;
    for (i = 0; oci[i] && i + 1 < sizeof(low); i++)
        low[i] = (char)((oci[i] >= 'A' && oci[i] <= 'Z') ? oci[i] - 'A' + 'a' : oci[i]);
    if (oci[i])
        return 0;
    low[i] = '\0';
    return seccomp_arch_resolve_name(low);
}

static const char *arch_label(uint32_t tok, const char *fallback)
{
    return fallback ? fallback : (tok == seccomp_arch_native() ? "native" : "?");
}

static void check_name(uint32_t tok, const char *label, const char *name,
                       rv_seccomp_unknown_fn fn, void *ud, size_t *unknown)
{
    if (seccomp_syscall_resolve_name_arch(tok, name) == __NR_SCMP_ERROR) {
        (*unknown)++;
        if (fn)
            fn(ud, label, name);
    }
}

int rv_seccomp_unknown_names(const json_t *sc, bool with_fuse, rv_seccomp_unknown_fn fn,
                             void *ud, size_t *unknown, struct rv_error *err)
{
    json_t *arr, *archs, *a, *rule, *n;
    uint32_t toks[24];
    const char *labels[24];
    size_t nt = 0, i, j, k;

    *unknown = 0;
    if (check_profile(sc, &arr, err) < 0)
        return -1;
    toks[nt] = seccomp_arch_native();
    labels[nt++] = NULL;
    archs = json_object_get(sc, "architectures");
    if (archs && !json_is_array(archs) && !json_is_null(archs))
        return rv_fail(err, 0, "linux.seccomp.architectures: expected an array");
    json_array_foreach(archs, i, a) {
        const char *s = json_string_value(a);
        uint32_t t;
        bool dup = false;
        if (!s)
            return rv_fail(err, 0, "linux.seccomp.architectures[%zu]: expected a string", i);
        t = arch_token(s);
        if (t == 0)
            return rv_fail(err, 0, "linux.seccomp.architectures[%zu]: `%s` is not an "
                           "architecture libseccomp knows", i, s);
        for (k = 0; k < nt; k++)
            if (toks[k] == t) {
                dup = true;
                labels[k] = s;
            }
        if (dup)
            continue;
        if (nt == sizeof(toks) / sizeof(toks[0]))
            return rv_fail(err, 0, "linux.seccomp.architectures: too many");
        toks[nt] = t;
        labels[nt++] = s;
    }
    for (k = 0; k < nt; k++) {
        const char *label = arch_label(toks[k], labels[k]);
        json_array_foreach(arr, i, rule)
            json_array_foreach(json_object_get(rule, "names"), j, n)
                check_name(toks[k], label, json_string_value(n), fn, ud, unknown);
        for (i = 0; with_fuse && rv_seccomp_fuse_names[i]; i++)
            check_name(toks[k], label, rv_seccomp_fuse_names[i], fn, ud, unknown);
    }
    return 0;
}

struct doctor_out {
    FILE *out;
    const char *path;
};

static void doctor_line(void *ud, const char *arch, const char *name)
{
    struct doctor_out *d = ud;
    fprintf(d->out, "seccomp: %s: unknown syscall `%s` in %s\n", arch, name, d->path);
}

int rv_seccomp_doctor(const struct rv_config *cfg, FILE *out, struct rv_error *err)
{
    cleanup_json json_t *sc = NULL;
    char path[PATH_MAX];
    struct doctor_out d = { out, path };
    size_t unknown;

    if (rv_seccomp_default_path(cfg, path, sizeof(path), err) < 0 ||
        rv_seccomp_load(path, &sc, err) < 0)
        return -1;
    if (rv_seccomp_unknown_names(sc, true, doctor_line, &d, &unknown, err) < 0)
        return rv_wrap(err, "seccomp profile `%s`", path);
    if (unknown == 0)
        fprintf(out, "seccomp: %s: every syscall name is known to libseccomp %u.%u.%u\n", path,
                seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro);
    return unknown ? 1 : 0;
}
