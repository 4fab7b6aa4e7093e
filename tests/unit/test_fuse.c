/* test_fuse.c - who may ask for FUSE (rv_fuse_wanted) and the grant on whole
 * specs (rv_fuse_apply_host): device, cgroup rule, seccomp rules to the
 * broker, no capability, the next runtime's support, privileged specs,
 * idempotence. */
#define _GNU_SOURCE
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/seccomp.h"
#include "unit.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/utsname.h>

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

static char profile[512];

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

/* Set an annotation or an env entry on a fresh spec. */
static json_t *spec_with(const char *ann, const char *val, const char *env)
{
    json_t *j = spec();
    if (ann)
        json_object_set_new(j, "annotations", json_pack("{s:s}", ann, val));
    if (env)
        json_array_append_new(rv_json_path(j, "process.env"), json_string(env));
    return j;
}

static bool rule_for(json_t *root, const char *name, const char *action)
{
    json_t *r;
    size_t i;
    json_array_foreach(rv_json_path(root, "linux.seccomp.syscalls"), i, r)
        if (has(json_object_get(r, "names"), name) &&
            strcmp(json_string_value(json_object_get(r, "action")), action) == 0)
            return true;
    return false;
}

int main(void)
{
    struct rv_config cfg;
    struct rv_fuse_host host;
    struct rv_error e;
    const char *p;
    bool want, broker;

    p = access("profiles/seccomp.json", R_OK) == 0 ? "profiles/seccomp.json" : "../../profiles/seccomp.json";
    snprintf(profile, sizeof(profile), "%s", p);
    rv_config_defaults(&cfg);
    strcpy(cfg.log_file, "/dev/null");
    strcpy(cfg.state_dir, "/run/rv-test");
    rv_log_init("test", &cfg);
    host = (struct rv_fuse_host){ profile };

    /* Who may ask. */
    ok(!cfg.fuse_allowed, "fuse.allowed defaults to false");
    {
        cleanup_json json_t *ann = spec_with(RV_ANN_FUSE, "true", NULL);
        cleanup_json json_t *none = spec(), *envonly = spec_with(NULL, NULL, "RESVIEW_FUSE=1");
        cleanup_json json_t *no = spec_with(RV_ANN_FUSE, "false", "RESVIEW_FUSE=1");
        cleanup_json json_t *env0 = spec_with(NULL, NULL, "RESVIEW_FUSE=0");
        cleanup_json json_t *bad = spec_with(RV_ANN_FUSE, "yes", NULL);
        cleanup_json json_t *badenv = spec_with(NULL, NULL, "RESVIEW_FUSE=true");
        struct rv_config off = cfg, on = cfg;
        strcpy(off.path, "/etc/resview/config.json");
        on.fuse_allowed = true;
        ok(rv_fuse_wanted(none, &off, false, &want, &e) == 0 && !want, "no request: nothing, whatever the policy");
        ok(rv_fuse_wanted(ann, &off, false, &want, &e) < 0 && strstr(e.msg, "fuse.allowed is false") &&
           strstr(e.msg, "/etc/resview/config.json") && strstr(e.msg, "annotation"),
           "annotation, fuse.allowed false: refused, naming the file (%s)", e.msg);
        ok(rv_fuse_wanted(none, &off, true, &want, &e) < 0 && strstr(e.msg, RV_FUSE_RUNTIME_NAME),
           "FUSE runtime name, fuse.allowed false: refused (%s)", e.msg);
        ok(rv_fuse_wanted(ann, &on, false, &want, &e) == 0 && want, "annotation, allowed: granted");
        ok(rv_fuse_wanted(none, &on, true, &want, &e) == 0 && want, "FUSE runtime name, allowed: granted");
        ok(rv_fuse_wanted(envonly, &on, false, &want, &e) < 0 && strstr(e.msg, "image controls") &&
           strstr(e.msg, RV_ANN_FUSE) && strstr(e.msg, RV_FUSE_RUNTIME_NAME),
           "RESVIEW_FUSE=1 alone: refused, saying how to ask (%s)", e.msg);
        ok(rv_fuse_wanted(envonly, &on, true, &want, &e) == 0 && want,
           "RESVIEW_FUSE=1 under the FUSE runtime name: granted");
        ok(rv_fuse_wanted(no, &on, true, &want, &e) == 0 && !want,
           "annotation \"false\" wins over everything (less privilege)");
        ok(rv_fuse_wanted(env0, &on, true, &want, &e) == 0 && !want, "RESVIEW_FUSE=0: off even under the runtime name");
        ok(rv_fuse_wanted(bad, &on, false, &want, &e) < 0 && strstr(e.msg, RV_ANN_FUSE),
           "annotation \"yes\": an error (%s)", e.msg);
        ok(rv_fuse_wanted(badenv, &on, false, &want, &e) < 0 && strstr(e.msg, "RESVIEW_FUSE"),
           "RESVIEW_FUSE=true: an error (%s)", e.msg);
    }
    /* Kubernetes namespaces. */
    {
        cleanup_json json_t *ctd = spec_with(RV_ANN_FUSE, "true", NULL), *crio = spec(), *other = spec(),
                            *plain = spec_with(RV_ANN_FUSE, "true", NULL);
        struct rv_config ns = cfg;
        ns.fuse_allowed = true;
        strcpy(ns.fuse_namespaces[0], "team-a");
        strcpy(ns.fuse_namespaces[1], "ml");
        ns.n_fuse_namespaces = 2;
        json_object_set_new(json_object_get(ctd, "annotations"), RV_ANN_K8S_NS_CONTAINERD, json_string("ml"));
        json_object_set_new(crio, "annotations", json_pack("{s:s,s:s}", RV_ANN_FUSE, "true",
                                                           RV_ANN_K8S_NS_CRIO, "team-a"));
        json_object_set_new(other, "annotations", json_pack("{s:s,s:s}", RV_ANN_FUSE, "true",
                                                            RV_ANN_K8S_NS_CONTAINERD, "team-b"));
        ok(rv_fuse_wanted(ctd, &ns, false, &want, &e) == 0 && want, "containerd's namespace annotation, listed: granted");
        ok(rv_fuse_wanted(crio, &ns, false, &want, &e) == 0 && want, "CRI-O's namespace annotation, listed: granted");
        ok(rv_fuse_wanted(other, &ns, false, &want, &e) < 0 && strstr(e.msg, "team-b") &&
           strstr(e.msg, "fuse.namespaces"), "namespace not listed: refused (%s)", e.msg);
        ok(rv_fuse_wanted(plain, &ns, false, &want, &e) < 0 && strstr(e.msg, "no Kubernetes namespace"),
           "no namespace annotation while fuse.namespaces is set: refused (%s)", e.msg);
        ok(rv_fuse_wanted(other, &ns, true, &want, &e) < 0,
           "the FUSE runtime name is bound by fuse.namespaces too");
    }

    cfg.fuse_allowed = true;
    /* A spec without seccomp. */
    {
        cleanup_json json_t *root = spec(), *dflt = NULL, *caps0 = NULL;
        cleanup_free char *once = NULL, *twice = NULL;
        json_t *dev, *rules, *last;

        caps0 = json_deep_copy(rv_json_path(root, "process.capabilities"));
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && broker,
           "apply to a plain spec: a broker is needed");
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
            cleanup_json json_t *want_rule = json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c",
                                                       "major", 10, "minor", 229, "access", "rwm");
            ok(json_array_size(rules) == 2 && json_equal(last, want_rule),
               "linux.resources.devices: deny-all kept, allow c 10:229 rwm appended");
        }
        ok(json_equal(caps0, rv_json_path(root, "process.capabilities")),
           "capabilities exactly as the engine gave them (no CAP_SYS_ADMIN)");
        ok(rv_seccomp_load(profile, &dflt, &e) == 0 && dflt &&
           json_equal(json_object_get(rv_json_path(root, "linux.seccomp"), "defaultAction"),
                      json_object_get(dflt, "defaultAction")) &&
           json_array_size(rv_json_path(root, "linux.seccomp.syscalls")) ==
               json_array_size(json_object_get(dflt, "syscalls")) + 2,
           "no seccomp in the spec: the default profile plus two rules");
        ok(rule_for(root, "mount", "SCMP_ACT_NOTIFY") && rule_for(root, "umount2", "SCMP_ACT_NOTIFY") &&
           rule_for(root, "umount", "SCMP_ACT_NOTIFY"), "mount, umount, umount2: SCMP_ACT_NOTIFY");
        ok(rule_for(root, "fsopen", "SCMP_ACT_ERRNO") && rule_for(root, "open_tree", "SCMP_ACT_ERRNO") &&
           rule_for(root, "mount_setattr", "SCMP_ACT_ERRNO"), "new mount API: an errno rule");
        ok(!rv_json_path(root, "process.apparmorProfile") && !rv_json_path(root, "linux.seccomp.flags"),
           "no apparmorProfile, no seccomp flags (runtime support unknown)");
        ok(json_is_true(rv_json_path(root, "process.noNewPrivileges")) &&
           json_array_size(rv_json_path(root, "linux.maskedPaths")) == 1 &&
           json_array_size(rv_json_path(root, "linux.readonlyPaths")) == 1,
           "noNewPrivileges, masked and read-only paths untouched");
        ok(rv_fuse_set_listener(root, "/run/rv-test/fuse/c1.42.sock", "c1", &e) == 0 &&
           strcmp(rv_fuse_listener(root), "/run/rv-test/fuse/c1.42.sock") == 0 &&
           strcmp(json_string_value(rv_json_path(root, "linux.seccomp.listenerMetadata")), "c1") == 0,
           "listenerPath and listenerMetadata set");
        once = dump(root);
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0, "apply again (our own listener is kept)");
        twice = dump(root);
        ok(once && twice && strcmp(once, twice) == 0, "idempotent: the second pass changes nothing");
        ok(once && strstr(once, "18446744073709551615"), "big rlimit kept exactly");
    }

    /* What the next runtime can do. */
    {
        cleanup_json json_t *root = spec(), *copy = NULL, *killable = spec();
        struct rv_fuse_runtime none = { false, false, "`features`: no SCMP_ACT_NOTIFY" };
        struct rv_fuse_runtime crun = { true, true, "crun 1.8" };
        copy = json_deep_copy(root);
        ok(rv_fuse_apply_host(root, &cfg, &host, &none, &broker, &e) < 0 && strstr(e.msg, "no SCMP_ACT_NOTIFY") &&
           strstr(e.msg, "runc >= 1.1"), "runtime without listener support: refused (%s)", e.msg);
        ok(json_equal(root, copy), "refused: the document is untouched");
        ok(rv_fuse_apply_host(killable, &cfg, &host, &crun, &broker, &e) == 0 &&
           json_array_size(rv_json_path(killable, "linux.seccomp.flags")) == 1 &&
           strcmp(json_string_value(json_array_get(rv_json_path(killable, "linux.seccomp.flags"), 0)),
                  RV_SECCOMP_FLAG_WAIT_KILLABLE) == 0, "runtime with the flag: WAIT_KILLABLE_RECV added");
        ok(rv_fuse_apply_host(killable, &cfg, &host, &crun, &broker, &e) == 0 &&
           json_array_size(rv_json_path(killable, "linux.seccomp.flags")) == 1, "and only once");
    }

    /* Another seccomp agent already listens: refused. */
    {
        cleanup_json json_t *root = spec(), *copy = NULL;
        json_object_set_new(json_object_get(root, "linux"), "seccomp",
                            json_pack("{s:s,s:s}", "defaultAction", "SCMP_ACT_ERRNO", "listenerPath",
                                      "/run/agent.sock"));
        copy = json_deep_copy(root);
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) < 0 && strstr(e.msg, "/run/agent.sock") &&
           json_equal(root, copy), "foreign listenerPath: refused, untouched (%s)", e.msg);
        json_object_set_new(rv_json_path(root, "linux.seccomp"), "listenerPath",
                            json_string("/run/rv-test/fuse/../agent.sock"));
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) < 0, "a path that only starts like ours: refused");
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
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && json_equal(root, copy) && !broker,
           "privileged: left alone, no broker");
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
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && count_fuse_devices(root) == 1 &&
           json_array_size(rv_json_path(root, "linux.resources.devices")) == 2,
           "an engine that passed /dev/fuse already: nothing duplicated");
        json_object_set_new(json_object_get(bad, "linux"), "devices",
                            json_pack("[{s:s,s:s,s:i,s:i}]", "path", "/dev/fuse", "type", "c", "major", 1, "minor", 3));
        ok(rv_fuse_apply_host(bad, &cfg, &host, NULL, &broker, &e) < 0 && strstr(e.msg, "/dev/fuse"),
           "/dev/fuse with other numbers: error (%s)", e.msg);
    }
    /* A later deny for c 10:229 re-adds the allow at the end. */
    {
        cleanup_json json_t *root = spec();
        json_t *rules = rv_json_path(root, "linux.resources.devices");
        json_array_append_new(rules, json_pack("{s:b,s:s,s:i,s:i,s:s}", "allow", 1, "type", "c", "major", 10, "minor", 229, "access", "rwm"));
        json_array_append_new(rules, json_pack("{s:b,s:s,s:i,s:s}", "allow", 0, "type", "c", "major", 10, "access", "rwm"));
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && json_array_size(rules) == 4 &&
           json_integer_value(json_object_get(json_array_get(rules, 3), "minor")) == 229,
           "a later deny covering /dev/fuse: allow appended after it");
    }

    /* The engine granted CAP_SYS_ADMIN and every mount itself: profile kept, no broker. */
    {
        cleanup_json json_t *root = spec(), *sc = NULL, *narrow = NULL;
        json_t *caps = rv_json_path(root, "process.capabilities");
        json_array_append_new(json_object_get(caps, "bounding"), json_string("CAP_SYS_ADMIN"));
        sc = json_pack("{s:s,s:[{s:[s,s,s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO", "syscalls",
                       "names", "mount", "umount2", "setns", "action", "SCMP_ACT_ALLOW");
        json_object_set(json_object_get(root, "linux"), "seccomp", sc);
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && !broker &&
           json_equal(rv_json_path(root, "linux.seccomp"), sc) && count_fuse_devices(root) == 1,
           "engine gave CAP_SYS_ADMIN and mount: its profile as it is, /dev/fuse added, no broker");
        narrow = spec();
        caps = rv_json_path(narrow, "process.capabilities");
        json_array_append_new(json_object_get(caps, "bounding"), json_string("CAP_SYS_ADMIN"));
        json_object_set_new(json_object_get(narrow, "linux"), "seccomp",
                            json_pack("{s:s,s:[{s:[s],s:s}]}", "defaultAction", "SCMP_ACT_ERRNO",
                                      "syscalls", "names", "getpid", "action", "SCMP_ACT_ALLOW"));
        ok(rv_fuse_apply_host(narrow, &cfg, &host, NULL, &broker, &e) == 0 && broker &&
           json_array_size(rv_json_path(narrow, "linux.seccomp.syscalls")) == 3,
           "CAP_SYS_ADMIN without a mount rule: mount calls go to the broker");
    }

    /* A default-allow engine profile: its deny rule loses only our names. */
    {
        cleanup_json json_t *root = spec();
        cleanup_free char *once = NULL, *twice = NULL;
        json_object_set_new(json_object_get(root, "linux"), "seccomp",
                            json_pack("{s:s,s:[{s:[s,s],s:s}]}", "defaultAction", "SCMP_ACT_ALLOW",
                                      "syscalls", "names", "bpf", "mount", "action", "SCMP_ACT_ERRNO"));
        ok(rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && (once = dump(root)) &&
           rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) == 0 && (twice = dump(root)) &&
           strcmp(once, twice) == 0 && json_array_size(rv_json_path(root, "linux.seccomp.syscalls")) == 3 &&
           rule_for(root, "bpf", "SCMP_ACT_ERRNO") && rule_for(root, "mount", "SCMP_ACT_NOTIFY") &&
           !rule_for(root, "mount", "SCMP_ACT_ERRNO"),
           "default-allow engine profile: bpf still denied, mount to the broker, idempotent");
    }

    /* No default profile to be found. */
    {
        cleanup_json json_t *root = spec();
        struct rv_fuse_host h2 = { "/nonexistent/resview/seccomp.json" };
        ok(rv_fuse_apply_host(root, &cfg, &h2, NULL, &broker, &e) < 0 && strstr(e.msg, "no seccomp profile"),
           "missing default profile: error (%s)", e.msg);
    }
    /* Where a FUSE mount may go besides the root file system: the engine's volumes. */
    {
        cleanup_json json_t *sp = json_loads(
            "{\"mounts\": ["
            "{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
            "{\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"},"
            "{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"/host/vol\", \"options\": [\"rbind\"]},"
            "{\"destination\": \"/cache\", \"source\": \"/host/cache\", \"options\": [\"bind\", \"rw\"]},"
            "{\"destination\": \"/scratch\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"},"
            "{\"destination\": \"/etc/hosts\", \"type\": \"bind\", \"source\": \"/host/hosts\"},"
            "{\"destination\": \"/etc/resolv.conf\", \"type\": \"bind\", \"source\": \"/host/resolv\"},"
            "{\"destination\": \"/dev/termination-log\", \"type\": \"bind\", \"source\": \"/host/log\"},"
            "{\"destination\": \"/sys/x\", \"type\": \"bind\", \"source\": \"/host/sys\"},"
            "{\"destination\": \"/masked/dir\", \"type\": \"bind\", \"source\": \"/host/m\"},"
            "{\"destination\": \"/ro\", \"type\": \"bind\", \"source\": \"/host/ro\"},"
            "{\"destination\": \"/twice\", \"type\": \"bind\", \"source\": \"/host/vol\"},"
            "{\"destination\": \"/shared-with-dev\", \"type\": \"bind\", \"source\": \"/host/devshared\"},"
            "{\"destination\": \"/dev/shared\", \"type\": \"bind\", \"source\": \"/host/devshared\"},"
            "{\"destination\": \"/\", \"type\": \"bind\", \"source\": \"/host/root\"},"
            "{\"destination\": \"/up/../proc\", \"type\": \"bind\", \"source\": \"/host/up\"},"
            "{\"destination\": \"/rel\", \"type\": \"bind\", \"source\": \"host/rel\"}],"
            "\"linux\": {\"maskedPaths\": [\"/masked\"], \"readonlyPaths\": [\"/ro/\"]}}", 0, NULL);
        cleanup_json json_t *v = rv_fuse_volumes(sp);
        char *got = v ? json_dumps(v, JSON_COMPACT) : NULL;
        ok(got && strcmp(got, "[\"/host/vol\",\"/host/cache\"]") == 0,
           "volumes: binds only, not /, /proc, /sys, /dev, engine files, masked or read-only paths, "
           "a source also bound to an excluded place, a relative source or a path with .. (%s)", got);
        free(got);
        cleanup_json json_t *none = rv_fuse_volumes(json_object_get(sp, "linux"));
        ok(none && json_array_size(none) == 0, "a spec without mounts: none");
    }
    /* The next runtime's support (rv_fuse_runtime_probe), from fake runtimes:
     * crun >= 1.9's `features` has no supportedFlags (unknown, runtime-spec),
     * so its version rule decides the flag; runc 1.1's neither, and runc has
     * no flag before 1.2; a list that lacks the flag means none. */
    {
        char dir[] = "/tmp/rv-probe-XXXXXX", bin[PATH_MAX];
        struct rv_config pc = cfg;
        struct rv_fuse_runtime rt;
        struct utsname u;
        unsigned ka = 0, kb = 0;
        bool kernel_has = uname(&u) == 0 && sscanf(u.release, "%u.%u", &ka, &kb) == 2 &&
                          (ka > 5 || (ka == 5 && kb >= 19));
        static const char *const seccomp =
            "\"linux\":{\"seccomp\":{\"enabled\":true,\"actions\":[\"SCMP_ACT_ALLOW\",\"SCMP_ACT_NOTIFY\"]";
        struct {
            const char *name, *features, *version;
            bool notify, killable;
        } cases[] = {
            { "crun128", "", "crun version 1.28\ncommit: x\n+SECCOMP +CAP", true, true },
            { "crun18", NULL, "crun version 1.8.1\n+SECCOMP", true, true },
            { "crun15", NULL, "crun version 1.5\n+SECCOMP", true, false },
            { "crunnosec", NULL, "crun version 1.8\n-SECCOMP", false, false },
            { "runc11", "", "runc version 1.1.15\nspec: 1.0.2-dev", true, false },
            { "runc13", ",\"supportedFlags\":[\"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV\"]",
              "runc version 1.3.6", true, true },
            { "listnone", ",\"supportedFlags\":[\"SECCOMP_FILTER_FLAG_LOG\"]", "crun version 1.28\n+SECCOMP",
              true, false },
        };
        ok(mkdtemp(dir) != NULL, "probe: a temporary directory");
        snprintf(pc.state_dir, sizeof(pc.state_dir), "%s/state", dir);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char feat[512] = "";
            FILE *fp;
            snprintf(bin, sizeof(bin), "%s/%s", dir, cases[i].name);
            if (cases[i].features) {
                char body[400];
                snprintf(body, sizeof(body), "%s%s}}}", seccomp, cases[i].features);
                snprintf(feat, sizeof(feat), "[ \"$1\" = features ] && { echo '{\"ociVersion\":\"1.1.0\",%s'; exit 0; }\n",
                         body);
            }
            fp = fopen(bin, "w");
            if (fp) {
                fprintf(fp, "#!/bin/sh\n%s[ \"$1\" = --version ] && { printf '%%s\\n' '%s'; exit 0; }\nexit 1\n",
                        feat, cases[i].version);
                fclose(fp);
            }
            chmod(bin, 0755);
            ok(rv_fuse_runtime_probe(&pc, bin, &rt, &e) == 0 && rt.notify == cases[i].notify &&
               rt.wait_killable == (cases[i].killable && (kernel_has || strncmp(cases[i].name, "crun", 4) != 0)),
               "probe %s: notify %d, wait_killable %d (%s)", cases[i].name, rt.notify, rt.wait_killable, rt.why);
        }
        snprintf(bin, sizeof(bin), "rm -rf %s", dir);
        ok(system(bin) == 0, "probe: the temporary directory removed");
    }
    return unit_done();
}
