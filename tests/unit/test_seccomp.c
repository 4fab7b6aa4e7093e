/* test_seccomp.c - the seccomp rules of the FUSE grant (mount calls to the
 * broker, the new mount API ENOSYS), on the project's profile and on sample
 * engine profiles (tests/fuse/profiles), and the name check. */
#define _GNU_SOURCE
#include "resview/seccomp.h"
#include "unit.h"

#include <fcntl.h>

static json_t *load(const char *rel)
{
    static const char *const prefixes[] = { "", "../", "../../" };
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        json_t *j = NULL;
        struct rv_error e;
        snprintf(path, sizeof(path), "%s%s", prefixes[i], rel);
        if (access(path, R_OK) == 0 && rv_seccomp_load(path, &j, &e) == 0)
            return j;
    }
    printf("# cannot load %s (run from the top of the tree)\n", rel);
    return NULL;
}

static json_t *rules_named(json_t *sc, const char *name)
{
    json_t *out = json_array(), *r, *n;
    size_t i, j;
    json_array_foreach(json_object_get(sc, "syscalls"), i, r)
        json_array_foreach(json_object_get(r, "names"), j, n)
            if (strcmp(json_string_value(n), name) == 0)
                json_array_append(out, r);
    return out;
}

static bool has_rule(json_t *sc, json_t *want)
{
    json_t *r;
    size_t i;
    json_array_foreach(json_object_get(sc, "syscalls"), i, r)
        if (json_equal(r, want))
            return true;
    return false;
}

/* Every rule of orig is in ed, in the same order, unchanged. */
static bool keeps_every_rule(json_t *orig, json_t *ed)
{
    json_t *r, *rules = json_object_get(ed, "syscalls");
    size_t i, at = 0;
    json_array_foreach(json_object_get(orig, "syscalls"), i, r) {
        while (at < json_array_size(rules) && !json_equal(json_array_get(rules, at), r))
            at++;
        if (at == json_array_size(rules)) {
            printf("#   rule %zu lost\n", i);
            return false;
        }
        at++;
    }
    return true;
}

static bool same_except_syscalls(json_t *a, json_t *b)
{
    cleanup_json json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
    json_object_del(x, "syscalls");
    json_object_del(y, "syscalls");
    return json_equal(x, y);
}

/* mount, umount, umount2 to the broker in one rule; the new mount API ENOSYS in
 * another; nothing else names them. */
static void check_additions(json_t *sc, const char *what)
{
    cleanup_json json_t *mount = rules_named(sc, "mount"), *um = rules_named(sc, "umount2"),
                        *um1 = rules_named(sc, "umount"), *fsopen = rules_named(sc, "fsopen"),
                        *mtree = rules_named(sc, "move_mount");
    json_t *notify = json_array_get(mount, 0);

    ok(json_array_size(mount) == 1 && json_array_size(um) == 1 && json_array_size(um1) == 1 &&
       json_equal(notify, json_array_get(um, 0)) && json_equal(notify, json_array_get(um1, 0)),
       "%s: one rule for mount, umount, umount2", what);
    ok_str(json_string_value(json_object_get(notify, "action")), "SCMP_ACT_NOTIFY",
           "%s: that rule is SCMP_ACT_NOTIFY", what);
    ok(!json_object_get(notify, "args") && json_array_size(json_object_get(notify, "names")) == 3,
       "%s: without argument conditions (the broker decides)", what);
    ok(json_array_size(fsopen) == 1 && json_array_size(mtree) == 1 &&
       json_integer_value(json_object_get(json_array_get(fsopen, 0), "errnoRet")) == 38 &&
       strcmp(json_string_value(json_object_get(json_array_get(fsopen, 0), "action")), "SCMP_ACT_ERRNO") == 0 &&
       json_array_size(json_object_get(json_array_get(fsopen, 0), "names")) == 7,
       "%s: new mount API answers ENOSYS", what);
}

static void idempotent(json_t *sc, const char *what)
{
    cleanup_json json_t *again = json_deep_copy(sc);
    struct rv_error e;
    ok(rv_seccomp_add_fuse(again, &e) == 0 && json_equal(again, sc), "%s: a second pass changes nothing", what);
}

static void engine_profile(const char *file, const char *what)
{
    cleanup_json json_t *orig = load(file), *sc = NULL;
    struct rv_error e;
    size_t unknown = 99;

    if (!orig) {
        ok(0, "%s: sample profile loads", what);
        return;
    }
    sc = json_deep_copy(orig);
    ok(rv_seccomp_add_fuse(sc, &e) == 0, "%s: edit", what);
    ok(keeps_every_rule(orig, sc), "%s: every engine rule kept, in order, unchanged", what);
    ok(json_array_size(json_object_get(sc, "syscalls")) ==
       json_array_size(json_object_get(orig, "syscalls")) + 2, "%s: exactly two rules added", what);
    ok(same_except_syscalls(orig, sc), "%s: default action, errno, architectures kept", what);
    check_additions(sc, what);
    idempotent(sc, what);
    ok(rv_seccomp_unknown_names(sc, true, NULL, NULL, &unknown, &e) == 0 && unknown == 0,
       "%s: every name known to libseccomp on its architectures (%zu unknown)", what, unknown);
    {
        cleanup_json json_t *setns = rules_named(sc, "setns"), *unshare = rules_named(sc, "unshare"),
                            *bpf = rules_named(sc, "bpf");
        ok(json_array_size(setns) == 0 && json_array_size(unshare) == 0 && json_array_size(bpf) == 0,
           "%s: setns, unshare, bpf still not allowed by any rule", what);
    }
}

static void collect(void *ud, const char *arch, const char *name)
{
    char *buf = ud;
    size_t l = strlen(buf);
    snprintf(buf + l, 256 - l, "%s:%s;", arch, name);
}

int main(void)
{
    struct rv_error e;

    /* The project's default profile. */
    {
        cleanup_json json_t *orig = load("profiles/seccomp.json"), *sc = NULL;
        size_t unknown = 99;
        ok(orig != NULL, "profiles/seccomp.json loads");
        if (orig) {
            static const char *const never[] = { "mount", "umount2", "umount", "bpf", "keyctl",
                "add_key", "request_key", "setns", "unshare", "open_by_handle_at", "name_to_handle_at",
                "pivot_root", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                "delete_module", "perf_event_open", "reboot", "swapon", "swapoff", "fsopen",
                "open_tree", "move_mount", "userfaultfd", "quotactl", "syslog", "sethostname",
                "setdomainname", "clock_settime", "settimeofday", "fanotify_init", NULL };
            bool none = true;
            ok_str(json_string_value(json_object_get(orig, "defaultAction")), "SCMP_ACT_ERRNO",
                   "default profile: default deny");
            for (size_t i = 0; never[i]; i++) {
                cleanup_json json_t *r = rules_named(orig, never[i]);
                json_t *x;
                size_t k;
                json_array_foreach(r, k, x)
                    if (strcmp(json_string_value(json_object_get(x, "action")), "SCMP_ACT_ALLOW") == 0) {
                        printf("#   %s allowed\n", never[i]);
                        none = false;
                    }
            }
            ok(none, "default profile: none of the container-escape syscalls is allowed");
            {
                cleanup_json json_t *clone = rules_named(orig, "clone");
                json_t *arg = json_array_get(json_object_get(json_array_get(clone, 0), "args"), 0);
                ok(json_array_size(clone) == 1 && json_integer_value(json_object_get(arg, "value")) == 0x7E020000,
                   "default profile: clone only without namespace flags");
            }
            ok(rv_seccomp_unknown_names(orig, true, NULL, NULL, &unknown, &e) == 0 && unknown == 0,
               "default profile: every name known to libseccomp (%zu unknown)", unknown);
            sc = json_deep_copy(orig);
            ok(rv_seccomp_add_fuse(sc, &e) == 0, "default profile: edit");
            ok(keeps_every_rule(orig, sc), "default profile: rules kept");
            check_additions(sc, "default profile");
            idempotent(sc, "default profile");
        }
    }

    engine_profile("tests/fuse/profiles/docker-default.json", "docker");
    engine_profile("tests/fuse/profiles/containerd-default.json", "containerd");

    /* Default allow, with the engine denying mount and umount2 by a rule. */
    {
        cleanup_json json_t *orig = load("tests/fuse/profiles/default-allow.json"), *sc = NULL;
        json_t *first;
        size_t i;
        bool kept = true;
        ok(orig != NULL, "default-allow sample loads");
        if (orig) {
            sc = json_deep_copy(orig);
            ok(rv_seccomp_add_fuse(sc, &e) == 0, "default-allow: edit");
            first = json_array_get(json_object_get(sc, "syscalls"), 0);
            {
                cleanup_json json_t *want = json_deep_copy(json_array_get(json_object_get(orig, "syscalls"), 0));
                json_t *names = json_object_get(want, "names");
                for (i = 0; i < json_array_size(names);)
                    if (strcmp(json_string_value(json_array_get(names, i)), "mount") == 0 ||
                        strcmp(json_string_value(json_array_get(names, i)), "umount2") == 0)
                        json_array_remove(names, i);
                    else
                        i++;
                ok(json_equal(first, want), "default-allow: the engine's deny rule keeps every other name");
            }
            for (i = 1; i < json_array_size(json_object_get(orig, "syscalls")); i++)
                kept = kept && has_rule(sc, json_array_get(json_object_get(orig, "syscalls"), i));
            ok(kept, "default-allow: clone namespace denials kept");
            check_additions(sc, "default-allow");
            idempotent(sc, "default-allow");
        }
    }
    /* The engine kills on mount in a default-allow profile: the broker answers instead. */
    {
        cleanup_json json_t *sc = json_pack("{s:s,s:[{s:[s],s:s}]}", "defaultAction", "SCMP_ACT_ALLOW",
                                            "syscalls", "names", "mount", "action", "SCMP_ACT_KILL_PROCESS");
        ok(rv_seccomp_add_fuse(sc, &e) == 0, "kill rule on mount: edit");
        check_additions(sc, "kill rule on mount");
        ok(json_array_size(json_object_get(sc, "syscalls")) == 2, "kill rule on mount: the emptied engine rule is dropped");
        idempotent(sc, "kill rule on mount");
    }
    /* A default action of NOTIFY belongs to another agent. */
    {
        cleanup_json json_t *sc = json_pack("{s:s}", "defaultAction", "SCMP_ACT_NOTIFY");
        cleanup_json json_t *copy = json_deep_copy(sc);
        ok(rv_seccomp_add_fuse(sc, &e) < 0 && json_equal(sc, copy),
           "default action SCMP_ACT_NOTIFY: refused (%s)", e.msg);
    }
    /* Malformed profiles. */
    {
        cleanup_json json_t *a = json_pack("{s:s,s:i}", "defaultAction", "SCMP_ACT_ERRNO", "syscalls", 3);
        cleanup_json json_t *b = json_pack("{s:s,s:[{s:[i],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                           "syscalls", "names", 7, "action", "SCMP_ACT_ALLOW");
        cleanup_json json_t *c = json_pack("{s:[]}", "syscalls");
        ok(rv_seccomp_add_fuse(a, &e) < 0, "syscalls not an array: error (%s)", e.msg);
        ok(rv_seccomp_add_fuse(b, &e) < 0, "a name that is not a string: error (%s)", e.msg);
        ok(rv_seccomp_add_fuse(c, &e) < 0, "no defaultAction: error (%s)", e.msg);
    }
    /* Unknown names are reported per architecture. */
    {
        cleanup_json json_t *sc = json_pack("{s:s,s:[s,s],s:[{s:[s,s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                            "architectures", "SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64",
                                            "syscalls", "names", "getpid", "resview_no_such_call",
                                            "action", "SCMP_ACT_ALLOW");
        cleanup_json json_t *bad = json_pack("{s:s,s:[s]}", "defaultAction", "SCMP_ACT_ERRNO",
                                             "architectures", "SCMP_ARCH_VAX");
        char buf[256] = "";
        size_t unknown = 0;
        ok(rv_seccomp_unknown_names(sc, true, collect, buf, &unknown, &e) == 0 && unknown == 2,
           "unknown name: reported once per architecture (%zu)", unknown);
        ok(strstr(buf, "SCMP_ARCH_AARCH64:resview_no_such_call;") && strstr(buf, "SCMP_ARCH_X86_64:resview_no_such_call;"),
           "unknown name: arch and name given (%s)", buf);
        ok(rv_seccomp_unknown_names(bad, true, NULL, NULL, &unknown, &e) < 0 && strstr(e.msg, "SCMP_ARCH_VAX"),
           "unknown architecture: error (%s)", e.msg);
    }
    /* Which profiles already allow every mount. */
    {
        cleanup_json json_t *a = json_pack("{s:s}", "defaultAction", "SCMP_ACT_ALLOW");
        cleanup_json json_t *b = json_pack("{s:s,s:[{s:[s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                           "syscalls", "names", "mount", "action", "SCMP_ACT_ALLOW");
        cleanup_json json_t *c = json_pack("{s:s}", "defaultAction", "SCMP_ACT_ERRNO");
        cleanup_json json_t *d = json_pack("{s:s}", "defaultAction", "SCMP_ACT_ALLOW");
        ok(rv_seccomp_allows_any_mount(a) && rv_seccomp_allows_any_mount(b) && !rv_seccomp_allows_any_mount(c),
           "allows_any_mount: default allow, unconditional allow rule, default deny");
        ok(rv_seccomp_add_fuse(d, &e) == 0 && !rv_seccomp_allows_any_mount(d),
           "allows_any_mount: not after the FUSE edit");
    }
    /* Doctor on the repo profile via fuse.seccomp_profile. */
    {
        struct rv_config cfg;
        char path[256];
        FILE *f = tmpfile();
        rv_config_defaults(&cfg);
        snprintf(cfg.seccomp_profile, sizeof(cfg.seccomp_profile), "profiles/seccomp.json");
        ok(rv_seccomp_default_path(&cfg, path, sizeof(path), &e) == 0 && strcmp(path, "profiles/seccomp.json") == 0,
           "fuse.seccomp_profile names the default profile");
        ok(f && rv_seccomp_doctor(&cfg, f, &e) == 0, "doctor: repo profile is clean");
        if (f)
            fclose(f);
        snprintf(cfg.seccomp_profile, sizeof(cfg.seccomp_profile), "/nonexistent/seccomp.json");
        f = tmpfile();
        ok(f && rv_seccomp_doctor(&cfg, f, &e) < 0 && strstr(e.msg, "/nonexistent/seccomp.json"),
           "doctor: a missing profile is an error (%s)", e.msg);
        if (f)
            fclose(f);
    }
    return unit_done();
}
