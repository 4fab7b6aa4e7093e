/* seccomp.c - seccomp rules for FUSE containers (profiles/README.md "The seccomp profile").
 *
 * A FUSE container gets no capability. The engine's seccomp profile stays in
 * force; the grant touches only the system calls it is about:
 *
 *   mount umount umount2
 *                  SCMP_ACT_NOTIFY: the container's mount broker (broker.h)
 *                  decides each call on the actual arguments, which seccomp
 *                  cannot see (the file-system type and the target are
 *                  pointers); umount exists on 32-bit architectures only;
 *   fsopen fsconfig fsmount fspick open_tree move_mount mount_setattr
 *                  ENOSYS: the new mount API (libfuse >= 3.18 tries fsopen
 *                  first and falls back to mount(2) only on ENOSYS; EPERM
 *                  would make it fail).
 *
 * How the engine's rules are kept. runc and crun hand every rule to
 * libseccomp; two rules with different actions for the same syscall either
 * conflict or depend on rule order, so the engine's rules that name one of
 * the syscalls above lose that name (a rule left with no name is dropped) and
 * ours are appended. Every other rule is kept as it was, in the same order,
 * with the default action, architectures and flags: whatever the engine
 * denied stays denied. This is also what makes the edit idempotent: a second
 * pass takes our rules out and appends the same ones again. */
#define _GNU_SOURCE
#include "resview/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

const char *const rv_seccomp_fuse_names[] = {
    "mount", "umount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick",
    "open_tree", "move_mount", "mount_setattr", NULL,
};
#define N_NOTIFY 3   /* the first three go to the broker, the rest answer ENOSYS */

static bool is_fuse_name(const char *name)
{
    for (size_t i = 0; rv_seccomp_fuse_names[i]; i++)
        if (strcmp(name, rv_seccomp_fuse_names[i]) == 0)
            return true;
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

static json_t *names_array(size_t from, size_t to)
{
    json_t *a = json_array();

    for (size_t i = from; a && i < to; i++)
        if (json_array_append_new(a, json_string(rv_seccomp_fuse_names[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

int rv_seccomp_add_fuse(json_t *sc, struct rv_error *err)
{
    json_t *arr, *rule;
    cleanup_json json_t *notify = NULL, *enosys = NULL;
    size_t i, n_all = 0;

    if (check_profile(sc, &arr, err) < 0)
        return -1;
    if (strcmp(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_NOTIFY") == 0)
        return rv_fail(err, 0, "linux.seccomp.defaultAction SCMP_ACT_NOTIFY: another seccomp "
                       "agent answers every call; the mount broker cannot share it");
    while (rv_seccomp_fuse_names[n_all])
        n_all++;
    notify = json_pack("{s:o,s:s}", "names", names_array(0, N_NOTIFY), "action", "SCMP_ACT_NOTIFY");
    enosys = json_pack("{s:o,s:s,s:i}", "names", names_array(N_NOTIFY, n_all), "action",
                       "SCMP_ACT_ERRNO", "errnoRet", RV_ENOSYS);
    if (!notify || !enosys)
        return rv_fail(err, ENOMEM, "linux.seccomp");
    if (!arr) {
        arr = json_array();
        if (!arr || json_object_set_new(sc, "syscalls", arr) < 0)
            return rv_fail(err, ENOMEM, "linux.seccomp.syscalls");
    }
    /* Take our syscalls out of the engine's rules. */
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
    if (json_array_append(arr, notify) < 0 || json_array_append(arr, enosys) < 0)
        return rv_fail(err, ENOMEM, "linux.seccomp.syscalls");
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
