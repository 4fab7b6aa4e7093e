/* test_fuse.c - the FUSE grant on whole specs: device, cgroup rule,
 * capabilities, seccomp, AppArmor, refusal, privileged specs, idempotence. */
#define _GNU_SOURCE
#include "resview/apparmor.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/seccomp.h"
#include "unit.h"

#include <fcntl.h>

/* The shape of `runc spec` (trimmed), with docker's capability set. */
static const char *const base_spec =
    "{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
    "\"args\":[\"sh\"],\"env\":[\"PATH=/bin\"],\"cwd\":\"/\","
    "\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_MKNOD\",\"CAP_KILL\"],"
    "\"effective\":[\"CAP_CHOWN\",\"CAP_MKNOD\",\"CAP_KILL\"],"
    "\"permitted\":[\"CAP_CHOWN\",\"CAP_MKNOD\",\"CAP_KILL\"],"
    "\"inheritable\":[\"CAP_CHOWN\"]},"
    "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":18446744073709551615,\"soft\":1024}],"
    "\"noNewPrivileges\":true},"
    "\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"runc\","
    "\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},"
    "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}],"
    "\"maskedPaths\":[\"/proc/kcore\"],\"readonlyPaths\":[\"/proc/sys\"]}}";

static char dir[] = "/tmp/rv-test-fuse.XXXXXX";
static char aa_enabled[128], aa_profiles[128], profile[512];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static json_t *spec(void)
{
    json_t *j = NULL;
    struct rv_error e;
    if (rv_json_parse(base_spec, strlen(base_spec), "spec", &j, &e) < 0)
        printf("# %s\n", e.msg);
    return j;
}

static char *dump(json_t *j)
{
    char *s = NULL;
    size_t n;
    struct rv_error e;
    if (rv_json_dump(j, &s, &n, &e) < 0)
        return NULL;
    return s;
}

static bool has(json_t *arr, const char *s)
{
    json_t *v;
    size_t i;
    json_array_foreach(arr, i, v)
        if (strcmp(json_string_value(v), s) == 0)
            return true;
    return false;
}

static size_t count_fuse_devices(json_t *root)
{
    json_t *d;
    size_t i, n = 0;
    json_array_foreach(rv_json_path(root, "linux.devices"), i, d)
        if (strcmp(json_string_value(json_object_get(d, "path")), "/dev/fuse") == 0)
            n++;
    return n;
}

int main(void)
{
    struct rv_config cfg;
    struct rv_fuse_host host;
    struct rv_error e;
    const char *p;

    if (!mkdtemp(dir))
        return 1;
    snprintf(aa_enabled, sizeof(aa_enabled), "%s/enabled", dir);
    snprintf(aa_profiles, sizeof(aa_profiles), "%s/profiles", dir);
    p = access("profiles/seccomp.json", R_OK) == 0 ? "profiles/seccomp.json" : "../../profiles/seccomp.json";
    snprintf(profile, sizeof(profile), "%s", p);
    rv_config_defaults(&cfg);
    strcpy(cfg.log_file, "/dev/null");
    rv_log_init("test", &cfg);
    host = (struct rv_fuse_host){ aa_enabled, aa_profiles, profile };
    write_file(aa_enabled, "N\n");

    /* A spec without seccomp, AppArmor disabled. */
    {
        cleanup_json json_t *root = spec(), *dflt = NULL;
        cleanup_free char *once = NULL, *twice = NULL;
        json_t *dev, *rules, *last, *caps;

        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0, "apply to a plain spec");
        dev = json_array_get(rv_json_path(root, "linux.devices"), 0);
        ok(json_array_size(rv_json_path(root, "linux.devices")) == 1 &&
           strcmp(json_string_value(json_object_get(dev, "path")), "/dev/fuse") == 0 &&
           strcmp(json_string_value(json_object_get(dev, "type")), "c") == 0 &&
           json_integer_value(json_object_get(dev, "major")) == 10 &&
           json_integer_value(json_object_get(dev, "minor")) == 229 &&
           json_integer_value(json_object_get(dev, "fileMode")) == 0666 &&
           json_integer_value(json_object_get(dev, "uid")) == 0 &&
           json_integer_value(json_object_get(dev, "gid")) == 0,
           "linux.devices: /dev/fuse c 10:229 0666 root, and nothing else");
        rules = rv_json_path(root, "linux.resources.devices");
        last = json_array_get(rules, json_array_size(rules) - 1);
        {
            cleanup_json json_t *want = json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c",
                                                  "major", 10, "minor", 229, "access", "rwm");
            ok(json_array_size(rules) == 2 && json_equal(last, want),
               "linux.resources.devices: deny-all kept, allow c 10:229 rwm appended");
        }
        caps = rv_json_path(root, "process.capabilities");
        ok(has(json_object_get(caps, "bounding"), "CAP_SYS_ADMIN") &&
           has(json_object_get(caps, "permitted"), "CAP_SYS_ADMIN") &&
           has(json_object_get(caps, "effective"), "CAP_SYS_ADMIN"),
           "CAP_SYS_ADMIN in bounding, permitted, effective");
        ok(!has(json_object_get(caps, "inheritable"), "CAP_SYS_ADMIN") && !json_object_get(caps, "ambient"),
           "not in inheritable, no ambient set created");
        ok(json_array_size(json_object_get(caps, "bounding")) == 4 &&
           json_array_size(json_object_get(caps, "effective")) == 4 &&
           json_array_size(json_object_get(caps, "permitted")) == 4 &&
           json_array_size(json_object_get(caps, "inheritable")) == 1,
           "no other capability added");
        ok(rv_seccomp_load(profile, &dflt, &e) == 0 && dflt &&
           json_equal(json_object_get(rv_json_path(root, "linux.seccomp"), "defaultAction"),
                      json_object_get(dflt, "defaultAction")) &&
           json_array_size(rv_json_path(root, "linux.seccomp.syscalls")) ==
               json_array_size(json_object_get(dflt, "syscalls")) + 3,
           "no seccomp in the spec: the default profile plus three rules");
        ok(!rv_json_path(root, "process.apparmorProfile"), "AppArmor disabled: no apparmorProfile");
        ok(json_is_true(rv_json_path(root, "process.noNewPrivileges")) &&
           json_array_size(rv_json_path(root, "linux.maskedPaths")) == 1 &&
           json_array_size(rv_json_path(root, "linux.readonlyPaths")) == 1,
           "noNewPrivileges, masked and read-only paths untouched");
        once = dump(root);
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0, "apply again");
        twice = dump(root);
        ok(once && twice && strcmp(once, twice) == 0, "idempotent: the second pass changes nothing");
        ok(once && strstr(once, "18446744073709551615"), "big rlimit kept exactly");
    }

    /* fuse.allowed=false: refused, document untouched. */
    {
        cleanup_json json_t *root = spec(), *copy = NULL;
        struct rv_config no = cfg;
        copy = json_deep_copy(root);
        no.fuse_allowed = false;
        strcpy(no.path, "/etc/resview/config.json");
        ok(rv_fuse_apply_host(root, &no, &host, &e) < 0 && strstr(e.msg, "fuse.allowed is false") &&
           strstr(e.msg, "/etc/resview/config.json"), "fuse.allowed=false: refused (%s)", e.msg);
        ok(json_equal(root, copy), "fuse.allowed=false: the document is untouched");
    }

    /* Ambient only where the spec uses ambient. */
    {
        cleanup_json json_t *root = spec(), *empty = spec();
        json_t *caps;
        json_object_set_new(rv_json_path(root, "process.capabilities"), "ambient", json_pack("[s]", "CAP_CHOWN"));
        json_object_set_new(rv_json_path(empty, "process.capabilities"), "ambient", json_array());
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && rv_fuse_apply_host(empty, &cfg, &host, &e) == 0,
           "apply with ambient sets");
        caps = rv_json_path(root, "process.capabilities");
        ok(has(json_object_get(caps, "ambient"), "CAP_SYS_ADMIN") &&
           has(json_object_get(caps, "inheritable"), "CAP_SYS_ADMIN"),
           "non-empty ambient: CAP_SYS_ADMIN ambient (and inheritable, which ambient needs)");
        caps = rv_json_path(empty, "process.capabilities");
        ok(json_array_size(json_object_get(caps, "ambient")) == 0 &&
           !has(json_object_get(caps, "inheritable"), "CAP_SYS_ADMIN"),
           "empty ambient: left empty");
    }

    /* No capabilities object: none created (the runtime keeps every capability). */
    {
        cleanup_json json_t *root = spec();
        json_object_del(json_object_get(root, "process"), "capabilities");
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && !rv_json_path(root, "process.capabilities"),
           "no process.capabilities: not created");
    }

    /* AppArmor. */
    {
        cleanup_json json_t *root = spec(), *notloaded = spec(), *disabled = spec();
        cleanup_json json_t *copy = json_deep_copy(notloaded);
        enum rv_aa_state st;
        write_file(aa_enabled, "Y\n");
        write_file(aa_profiles, "docker-default (enforce)\nresview-fuse-old (enforce)\nresview-fuse (enforce)\n");
        json_object_set_new(json_object_get(root, "process"), "apparmorProfile", json_string("docker-default"));
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 &&
           strcmp(json_string_value(rv_json_path(root, "process.apparmorProfile")), "resview-fuse") == 0,
           "AppArmor enabled, profile loaded: apparmorProfile = resview-fuse (replacing docker-default)");
        write_file(aa_profiles, "docker-default (enforce)\nresview-fuse-old (enforce)\n");
        ok(rv_fuse_apply_host(notloaded, &cfg, &host, &e) < 0 && strstr(e.msg, "not loaded") &&
           strstr(e.msg, "resview-fuse"), "AppArmor enabled, profile not loaded: refused (%s)", e.msg);
        ok(json_equal(notloaded, copy), "refused: document untouched");
        ok(rv_apparmor_state(aa_enabled, aa_profiles, "resview-fuse-old", &st, &e) == 0 && st == RV_AA_LOADED,
           "profile list: exact name match");
        unlink(aa_enabled);
        json_object_set_new(json_object_get(disabled, "process"), "apparmorProfile", json_string("custom"));
        ok(rv_fuse_apply_host(disabled, &cfg, &host, &e) == 0 &&
           strcmp(json_string_value(rv_json_path(disabled, "process.apparmorProfile")), "custom") == 0,
           "no AppArmor module: the field is not added or changed");
        write_file(aa_enabled, "Y\n");
        unlink(aa_profiles);
        ok(rv_apparmor_state(aa_enabled, aa_profiles, "resview-fuse", &st, &e) < 0,
           "enabled but the profile list is unreadable: error (%s)", e.msg);
        write_file(aa_enabled, "N\n");
    }

    /* Privileged: left alone. */
    {
        cleanup_json json_t *root = spec(), *copy = NULL;
        json_t *caps = rv_json_path(root, "process.capabilities");
        json_array_append_new(json_object_get(caps, "bounding"), json_string("CAP_SYS_ADMIN"));
        json_array_append_new(rv_json_path(root, "linux.resources.devices"),
                              json_pack("{s:b,s:s}", "allow", 1, "access", "rwm"));
        copy = json_deep_copy(root);
        ok(rv_fuse_spec_is_privileged(root), "privileged: detected");
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && json_equal(root, copy),
           "privileged: left alone");
        json_array_append_new(rv_json_path(root, "linux.resources.devices"),
                              json_pack("{s:b,s:s,s:i,s:s}", "allow", 0, "type", "c", "major", 195, "access", "rwm"));
        ok(rv_fuse_spec_is_privileged(root), "privileged with a later narrow deny: still privileged");
        json_array_append_new(rv_json_path(root, "linux.resources.devices"),
                              json_pack("{s:b,s:s}", "allow", 0, "access", "rwm"));
        ok(!rv_fuse_spec_is_privileged(root), "a later deny-all: not privileged");
    }

    /* Devices already there. */
    {
        cleanup_json json_t *root = spec(), *bad = spec();
        json_object_set_new(json_object_get(root, "linux"), "devices",
                            json_pack("[{s:s,s:s,s:i,s:i}]", "path", "/dev/fuse", "type", "c", "major", 10, "minor", 229));
        json_array_append_new(rv_json_path(root, "linux.resources.devices"),
                              json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c", "major", 10, "minor", 229, "access", "rwm"));
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && count_fuse_devices(root) == 1 &&
           json_array_size(rv_json_path(root, "linux.resources.devices")) == 2,
           "an engine that passed /dev/fuse already: nothing duplicated");
        json_object_set_new(json_object_get(bad, "linux"), "devices",
                            json_pack("[{s:s,s:s,s:i,s:i}]", "path", "/dev/fuse", "type", "c", "major", 1, "minor", 3));
        ok(rv_fuse_apply_host(bad, &cfg, &host, &e) < 0 && strstr(e.msg, "/dev/fuse"),
           "/dev/fuse with other numbers: error (%s)", e.msg);
    }
    /* A later deny for c 10:229 re-adds the allow at the end. */
    {
        cleanup_json json_t *root = spec();
        json_t *rules = rv_json_path(root, "linux.resources.devices");
        json_array_append_new(rules, json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c", "major", 10, "minor", 229, "access", "rwm"));
        json_array_append_new(rules, json_pack("{s:b,s:s,s:i,s:s}", "allow", 0, "type", "c", "major", 10, "access", "rwm"));
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && json_array_size(rules) == 4 &&
           json_integer_value(json_object_get(json_array_get(rules, 3), "minor")) == 229,
           "a later deny covering /dev/fuse: allow appended after it");
    }

    /* An engine profile with a CAP_SYS_ADMIN condition: refused, untouched. */
    {
        cleanup_json json_t *root = spec(), *copy = NULL;
        json_object_set_new(json_object_get(root, "linux"), "seccomp",
                            json_pack("{s:s,s:[{s:[s],s:s,s:{s:[s]}}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                      "syscalls", "names", "setns", "action", "SCMP_ACT_ALLOW",
                                      "includes", "caps", "CAP_SYS_ADMIN"));
        copy = json_deep_copy(root);
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) < 0 && json_equal(root, copy),
           "unresolved CAP_SYS_ADMIN condition: refused, document untouched (%s)", e.msg);
    }
    /* The engine granted CAP_SYS_ADMIN and every mount itself: profile kept. */
    {
        cleanup_json json_t *root = spec(), *sc = NULL, *narrow = NULL;
        json_t *caps = rv_json_path(root, "process.capabilities");
        json_array_append_new(json_object_get(caps, "bounding"), json_string("CAP_SYS_ADMIN"));
        sc = json_pack("{s:s,s:[{s:[s,s,s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO", "syscalls",
                       "names", "mount", "umount2", "setns", "action", "SCMP_ACT_ALLOW");
        json_object_set(json_object_get(root, "linux"), "seccomp", sc);
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 &&
           json_equal(rv_json_path(root, "linux.seccomp"), sc) && count_fuse_devices(root) == 1,
           "engine gave CAP_SYS_ADMIN and mount: its profile is not narrowed, /dev/fuse added");
        narrow = spec();
        caps = rv_json_path(narrow, "process.capabilities");
        json_array_append_new(json_object_get(caps, "bounding"), json_string("CAP_SYS_ADMIN"));
        json_object_set_new(json_object_get(narrow, "linux"), "seccomp",
                            json_pack("{s:s,s:[{s:[s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                      "syscalls", "names", "getpid", "action", "SCMP_ACT_ALLOW"));
        ok(rv_fuse_apply_host(narrow, &cfg, &host, &e) == 0 &&
           json_array_size(rv_json_path(narrow, "linux.seccomp.syscalls")) == 4,
           "CAP_SYS_ADMIN without a mount rule: the additions are made");
    }

    /* Idempotent on a default-allow engine profile too (its second pass sees
     * CAP_SYS_ADMIN, which it must not take for the engine's grant). */
    {
        cleanup_json json_t *root = spec();
        cleanup_free char *once = NULL, *twice = NULL;
        json_object_set_new(json_object_get(root, "linux"), "seccomp",
                            json_pack("{s:s,s:[{s:[s,s],s:s}]}", "defaultAction", "SCMP_ACT_ALLOW",
                                      "syscalls", "names", "bpf", "mount", "action", "SCMP_ACT_ERRNO"));
        ok(rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && (once = dump(root)) &&
           rv_fuse_apply_host(root, &cfg, &host, &e) == 0 && (twice = dump(root)) &&
           strcmp(once, twice) == 0 && json_array_size(rv_json_path(root, "linux.seccomp.syscalls")) == 11,
           "default-allow engine profile: idempotent, forbidden-flag rules added once");
    }

    /* No default profile to be found. */
    {
        cleanup_json json_t *root = spec();
        struct rv_fuse_host h2 = { aa_enabled, aa_profiles, "/nonexistent/resview/seccomp.json" };
        ok(rv_fuse_apply_host(root, &cfg, &h2, &e) < 0 && strstr(e.msg, "no seccomp profile"),
           "missing default profile: error (%s)", e.msg);
    }

    unlink(aa_enabled);
    unlink(aa_profiles);
    rmdir(dir);
    return unit_done();
}
