/* Spec edits: variables, their rules, the hook entry, idempotence, requests,
 * lossless JSON, and the configuration parser. */
#define _GNU_SOURCE
#include "resview/edit.h"
#include "resview/gpus.h"
#include "resview/spec.h"
#include "unit.h"

#include <stdlib.h>

static struct rv_host host;
static struct rv_config cfg;

/* Edit text; return the dumped result (static buffer) or NULL on error. */
static bool hook_missing;
static const char *bundle;

static char *edit(const char *text, struct rv_error *err)
{
    static char *out;
    struct rv_spec spec;
    struct rv_edit_ctx ctx = { .cfg = &cfg, .host = &host, .hook_missing = hook_missing,
                               .bundle = bundle };
    struct rv_edit_result res;
    size_t len;
    bool changed;

    free(out);
    out = NULL;
    if (rv_spec_parse(&spec, text, strlen(text), &rv_gpus_spec_extra, err) < 0)
        return NULL;
    if (rv_spec_edit(spec.root, &ctx, &res, err) < 0 ||
        rv_spec_render(&spec, &out, &len, &changed, err) < 0) {
        rv_spec_free(&spec);
        return NULL;
    }
    rv_spec_free(&spec);
    return out;
}

static bool has(const char *s, const char *needle) { return s && strstr(s, needle); }

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void set_enabled(const char *name, bool on)
{
    for (int i = 0; i < cfg.n_vars; i++)
        if (strcmp(cfg.vars[i].name, name) == 0)
            cfg.vars[i].enabled = on;
}

/* The plan's status of one variable (3 CPUs), -1 if it has none. */
static int plan_status(json_t *env, int gomaxprocs, const char *name)
{
    struct rv_limits lim = { .cpus = 3 };
    struct rv_env_plan plan;

    rv_env_plan(&cfg, &lim, env, gomaxprocs, &plan);
    for (int i = 0; i < plan.n; i++)
        if (strcmp(plan.items[i].name, name) == 0)
            return (int)plan.items[i].status;
    return -1;
}

int main(void)
{
    struct rv_error err;
    char *out, *again;

    rv_host_defaults(&host);
    strcpy(host.cgroup_root, "/nonexistent");
    strcpy(host.cpu_online, "/nonexistent");
    rv_config_defaults(&cfg);
    strcpy(cfg.hook_path, "/usr/local/bin/resview-hook");

    const char *base = "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"env\":[\"PATH=/bin\"]},"
                       "\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000,\"period\":100000},"
                       "\"memory\":{\"limit\":536870912}}},\"x-unknown\":{\"keep\":[1,2.5,\"me\"]}}";
    out = edit(base, &err);
    ok(out != NULL, "edit a plain spec");
    ok(has(out, "\"GOMAXPROCS=2\"") && has(out, "\"OMP_NUM_THREADS=2\"") &&
       has(out, "\"SLURM_CPUS_ON_NODE=2\"") && has(out, "\"SLURM_CPUS_PER_TASK=2\"") &&
       has(out, "\"SLURM_MEM_PER_NODE=512\""), "default variables injected");
    ok(!has(out, "SLURM_GPUS") && !has(out, "MKL_NUM_THREADS") && !has(out, "PYTHON_CPU_COUNT"),
       "no GPU variables without GPUs, off-by-default variables stay off");
    ok(has(out, "\"x-unknown\":{\"keep\":[1,2.5,\"me\"]}"), "unknown fields kept");
    ok(has(out, "\"prestart\":[{\"path\":\"/usr/local/bin/resview-hook\""), "hook added");
    again = strdup(out);
    out = edit(again, &err);
    ok_str(out, again, "second edit changes nothing (idempotent)");
    free(again);

    /* never override, SLURM_JOB_ID, opt-outs */
    out = edit("{\"process\":{\"env\":[\"GOMAXPROCS=7\"]},\"linux\":{\"resources\":{\"cpu\":{\"quota\":150000}}}}", &err);
    ok(has(out, "GOMAXPROCS=7") && count(out, "GOMAXPROCS=") == 1, "GOMAXPROCS=7 is kept");
    ok(has(out, "OMP_NUM_THREADS=2"), "others still injected");
    out = edit("{\"process\":{\"env\":[\"SLURM_JOB_ID=42\"]}}", &err);
    ok(count(out, "SLURM_") == 1 && has(out, "GOMAXPROCS="), "real Slurm job: no SLURM_* added, GOMAXPROCS still");
    out = edit("{\"annotations\":{\"resview.io/env\":\"false\"},\"process\":{\"env\":[]}}", &err);
    ok(out && !has(out, "GOMAXPROCS") && has(out, "resview-hook"), "env opt-out by annotation");
    out = edit("{\"process\":{\"env\":[\"RESVIEW_ENV=0\"]}}", &err);
    ok(out && !has(out, "GOMAXPROCS"), "env opt-out by variable");
    out = edit("{\"annotations\":{\"resview.io/lxcfs\":\"false\"}}", &err);
    ok(out && !has(out, "resview-hook") && has(out, "GOMAXPROCS"), "lxcfs opt-out: no hook");
    out = edit("{\"annotations\":{\"resview.io/env\":\"no\"}}", &err);
    ok(out == NULL && has(err.msg, "resview.io/env") && has(err.msg, "\"true\" or \"false\""),
       "invalid annotation value is an error: %s", err.msg);
    out = edit("{\"process\":{\"env\":[\"RESVIEW_LXCFS=yes\"]}}", &err);
    ok(out == NULL && has(err.msg, "RESVIEW_LXCFS"), "invalid env request is an error");

    /* GOMAXPROCS left to the program (Go 1.25+ follows its cgroup), or set
     * where env.vars turned it off: the container's request wins */
    out = edit("{\"annotations\":{\"resview.io/gomaxprocs\":\"false\"},\"process\":{\"env\":[]}}", &err);
    ok(out && !has(out, "GOMAXPROCS") && has(out, "OMP_NUM_THREADS="), "resview.io/gomaxprocs=false: no GOMAXPROCS, the rest injected");
    out = edit("{\"process\":{\"env\":[\"RESVIEW_GOMAXPROCS=0\"]}}", &err);
    ok(out && !has(out, "\"GOMAXPROCS=") && has(out, "OMP_NUM_THREADS="), "RESVIEW_GOMAXPROCS=0: the same");
    set_enabled("GOMAXPROCS", false);
    out = edit("{\"process\":{\"env\":[]}}", &err);
    ok(out && !has(out, "GOMAXPROCS"), "env.vars GOMAXPROCS false: not set");
    out = edit("{\"annotations\":{\"resview.io/gomaxprocs\":\"true\"},\"process\":{\"env\":[]}}", &err);
    ok(has(out, "\"GOMAXPROCS="), "... but set where the container asks (resview.io/gomaxprocs=true)");
    out = edit("{\"annotations\":{\"resview.io/gomaxprocs\":\"true\",\"resview.io/env\":\"false\"}}", &err);
    ok(out && !has(out, "GOMAXPROCS"), "... and resview.io/env=false still means no variables");
    set_enabled("GOMAXPROCS", true);
    out = edit("{\"annotations\":{\"resview.io/gomaxprocs\":\"False\"}}", &err);
    ok(out == NULL && has(err.msg, "resview.io/gomaxprocs") && has(err.msg, "\"true\" or \"false\""),
       "invalid resview.io/gomaxprocs is an error: %s", err.msg);
    out = edit("{\"process\":{\"env\":[\"RESVIEW_GOMAXPROCS=no\"]}}", &err);
    ok(out == NULL && has(err.msg, "RESVIEW_GOMAXPROCS"), "invalid RESVIEW_GOMAXPROCS is an error: %s", err.msg);
    {
        /* the plan: the request as rv_spec_request gives it (1, 0, -1 none) */
        cleanup_json json_t *own = json_pack("[s]", "GOMAXPROCS=7"), *none = json_array();
        ok(plan_status(none, 0, "GOMAXPROCS") == RV_VAR_LEFT && plan_status(none, 0, "OMP_NUM_THREADS") == RV_VAR_INJECT,
           "plan: GOMAXPROCS left to the program, OMP_NUM_THREADS injected");
        ok(plan_status(own, 0, "GOMAXPROCS") == RV_VAR_LEFT, "plan: left even where the container sets it (never recorded)");
        set_enabled("GOMAXPROCS", false);
        ok(plan_status(none, -1, "GOMAXPROCS") == RV_VAR_DISABLED, "plan: off in env.vars, not asked: disabled");
        ok(plan_status(none, 1, "GOMAXPROCS") == RV_VAR_INJECT, "plan: off in env.vars, asked for: injected");
        ok(plan_status(own, 1, "GOMAXPROCS") == RV_VAR_KEPT, "plan: asked for, the container's own value still wins");
        set_enabled("GOMAXPROCS", true);
    }
    out = edit("{\"annotations\":{\"resview.io/fuse\":\"true\"}}", &err);
    cfg.fuse_allowed = false;
    out = edit("{\"annotations\":{\"resview.io/fuse\":\"true\"}}", &err);
    ok(out == NULL && has(err.msg, "fuse.allowed"), "FUSE refused when not allowed: %s", err.msg);
    cfg.fuse_allowed = true;

    /* hook entry present already (hooks.d, an earlier shim, a tenant's own
     * spec): only ours stays, once, with the handover */
    out = edit("{\"hooks\":{\"createRuntime\":[{\"path\":\"/opt/x/resview-hook\"}]}}", &err);
    ok(count(out, "resview-hook") == 2 && has(out, "\"createRuntime\":[]") &&
       has(out, "\"prestart\":[{\"path\":\"/usr/local/bin/resview-hook\",\"args\":[\"resview-hook\"]"),
       "a resview-hook entry in another stage is replaced by ours");
    out = edit("{\"root\":{\"path\":\"rootfs\"},\"hooks\":{\"prestart\":[{\"path\":\"/x/oci-a\"},"
               "{\"path\":\"/usr/local/bin/resview-hook\",\"args\":[\"resview-hook\",\"--rootfs=/etc\"],"
               "\"env\":[\"RESVIEW_CONFIG=/tenant/evil.json\"]},{\"path\":\"/x/oci-b\"}],"
               "\"poststart\":[{\"path\":\"/opt/t/resview-hook\",\"args\":[\"resview-hook\",\"--enroot\"],"
               "\"env\":[\"ENROOT_PID=1\",\"ENROOT_ROOTFS=/\"]}]}}", &err);
    ok(out && has(out, "\"prestart\":[{\"path\":\"/x/oci-a\"},{\"path\":\"/usr/local/bin/resview-hook\","
                       "\"args\":[\"resview-hook\",\"--rootfs=rootfs\"],\"timeout\":10},{\"path\":\"/x/oci-b\"}]") &&
       !has(out, "/etc") && !has(out, "evil") && !has(out, "ENROOT") && count(out, "resview-hook") == 2,
       "a tenant's entries pretending to be ours go: the one left is ours, in place, with root.path handed over");
    again = out ? strdup(out) : NULL;
    ok(again && (out = edit(again, &err)) && strcmp(out, again) == 0, "and a second edit changes nothing");
    free(again);
    bundle = "/run/b 1";
    out = edit("{\"root\":{\"path\":\"rootfs\"}}", &err);
    ok(has(out, "\"--rootfs=/run/b 1/rootfs\""), "a relative root.path goes over joined to the bundle");
    out = edit("{\"root\":{\"path\":\"/srv/r\"}}", &err);
    ok(has(out, "\"--rootfs=/srv/r\""), "an absolute one as it is");
    bundle = NULL;
    out = edit("{\"annotations\":{\"resview.io/lxcfs\":\"false\"},\"hooks\":{\"prestart\":"
               "[{\"path\":\"/usr/local/bin/resview-hook\"}]}}", &err);
    ok(out && !has(out, "resview-hook"), "views off: a hooks.d entry goes too (one exec less)");
    out = edit("{\"hooks\":{\"prestart\":[{\"path\":\"/usr/bin/nvidia-container-runtime-hook\",\"args\":[\"x\",\"prestart\"]}]}}", &err);
    ok(has(out, "nvidia-container-runtime-hook") && count(out, "\"path\":\"/usr/local/bin/resview-hook\"") == 1, "other hooks kept, ours appended");
    strcpy(cfg.hook_stage, "createRuntime");
    out = edit("{}", &err);
    ok(has(out, "\"createRuntime\":[{\"path\":\"/usr/local/bin/resview-hook\""), "hook.stage createRuntime");
    strcpy(cfg.hook_stage, "prestart");

    /* the hook cannot be run on this host (gone, a broken install): fail open */
    hook_missing = true;
    out = edit(base, &err);
    ok(out && !has(out, "resview-hook") && has(out, "GOMAXPROCS=2"),
       "hook missing: no hook entry (runc would fail the start), variables still added");
    cfg.lxcfs_required = true;
    ok(edit(base, &err) == NULL && has(err.msg, "lxcfs.required"),
       "hook missing with lxcfs.required: refused: %s", err.msg);
    cfg.lxcfs_required = false;
    hook_missing = false;

    /* wrong types */
    ok(edit("[]", &err) == NULL && has(err.msg, "object"), "top level array refused");
    ok(edit("{\"process\":{\"env\":\"PATH=/bin\"}}", &err) == NULL && has(err.msg, "process.env"), "env as a string refused: %s", err.msg);
    ok(edit("{\"process\":{\"env\":[1]}}", &err) == NULL, "env with a number refused");
    ok(edit("{\"hooks\":{\"prestart\":{}}}", &err) == NULL && has(err.msg, "hooks.prestart"), "hooks.prestart as an object refused");
    ok(edit("{\"process\":[]}", &err) == NULL, "process as an array refused");
    ok(edit("{\"a\":1,\"a\":2}", &err) == NULL && has(err.msg, "duplicate"), "duplicate keys refused");
    ok(edit("{\"process\":{\"env\":[\"A=\\u0000\"]}}", &err) == NULL && has(err.msg, "NUL"), "NUL in a string refused");
    ok(edit("{\"x\":", &err) == NULL && has(err.msg, "line 1"), "truncated JSON: %s", err.msg);

    /* big integers survive exactly */
    out = edit("{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":18446744073709551615,\"soft\":-9223372036854775809}]},"
               "\"n\":[9223372036854775807,-9223372036854775808,1e400,0.1],\"s\":\"18446744073709551615\"}", &err);
    ok(has(out, "\"hard\":18446744073709551615") && has(out, "\"soft\":-9223372036854775809"), "uint64 rlimits kept exactly");
    ok(has(out, "[9223372036854775807,-9223372036854775808,1e400,0.1]") && has(out, "\"s\":\"18446744073709551615\""),
       "int64 bounds stay integers, reals keep their text, strings stay strings");
    {
        json_t *j = NULL;
        char *d = NULL;
        size_t dl;
        ok(rv_json_parse("[-1,-9,-0,0,-10]", 16, "t", &j, &err) == 0 &&
           json_integer_value(json_array_get(j, 0)) == -1 && json_integer_value(json_array_get(j, 1)) == -9 &&
           json_is_integer(json_array_get(j, 3)) && json_integer_value(json_array_get(j, 4)) == -10 &&
           rv_json_dump(j, &d, &dl, &err) == 0 && strcmp(d, "[-1,-9,-0,0,-10]") == 0,
           "one-digit negative integers are integers; -0 keeps its text");
        json_decref(j);
        free(d);
    }

    /* the edit splices: members resview does not write keep their bytes */
    {
        const char *pretty = "{\n  \"ociVersion\" : \"1.0.2\",\n  \"process\": {\n    \"args\": [ \"sh\" ],\n"
                             "    \"env\": [ \"PATH=/bin\" ],\n    \"cwd\": \"/\\u0041\"\n  },\n"
                             "  \"mounts\": [ { \"destination\": \"/proc\", \"x\": 1.50, \"y\": {\"d\": 1, \"d\": 2} } ],\n"
                             "  \"annotations\": { \"a\": \"b\" }\n}\n";
        out = edit(pretty, &err);
        ok(out && has(out, "\"mounts\": [ { \"destination\": \"/proc\", \"x\": 1.50, \"y\": {\"d\": 1, \"d\": 2} } ],\n") &&
           has(out, "{\n  \"ociVersion\" : \"1.0.2\",\n  \"process\": {\n    \"args\": [ \"sh\" ],\n    \"env\": [\"PATH=/bin\",") &&
           has(out, "\n    \"cwd\": \"/\\u0041\"\n  },\n") && has(out, "\"annotations\": { \"a\": \"b\" }") &&
           has(out, "\"hooks\":{\"prestart\"") && out[strlen(out) - 1] == '\n',
           "untouched members keep their bytes, whitespace and escapes; only env and hooks are written");
        again = out ? strdup(out) : NULL;
        ok(again && (out = edit(again, &err)) && strcmp(out, again) == 0, "and a second edit leaves it as it is");
        free(again);
    }
    {
        /* a member nobody declared for loading must not be written around */
        struct rv_spec spec;
        char *o = NULL;
        size_t ol;
        bool changed;
        ok(rv_spec_parse(&spec, "{\"mounts\":[1],\"process\":{}}", 27, NULL, &err) == 0 &&
           json_object_set_new(spec.root, "mounts", json_array()) == 0 &&
           rv_spec_render(&spec, &o, &ol, &changed, &err) < 0 && has(err.msg, "never loaded"),
           "an edit of a member that was not loaded fails the render (instead of losing it)");
        rv_spec_free(&spec);
        free(o);
    }

    /* variables from the configuration */
    {
        const char *conf = "{\"env\":{\"rounding\":\"floor\",\"vars\":{\"MKL_NUM_THREADS\":true,\"GOMAXPROCS\":false,"
                           "\"MY_MEM\":\"mem_mib\",\"SLURM_JOB_ID\":\"cpus\",\"bad name\":true}},\"bogus\":1,"
                           "\"log\":{\"level\":\"loud\"},\"runtimes\":[\"crun\",5]}";
        struct rv_config c2;
        rv_config_defaults(&c2);
        ok(rv_config_parse(&c2, conf, strlen(conf), &err) == 0, "configuration with problems still loads");
        ok(c2.n_warnings == 5, "5 warnings (got %d)", c2.n_warnings);
        ok(c2.rounding == RV_ROUND_FLOOR && c2.n_runtimes == 1 && strcmp(c2.runtimes[0], "crun") == 0 &&
           c2.log_level == RV_INFO, "good keys applied, bad ones keep defaults");
        struct rv_config saved = cfg;
        cfg = c2;
        strcpy(cfg.hook_path, "/h/resview-hook");
        out = edit(base, &err);
        ok(has(out, "MKL_NUM_THREADS=1") && !has(out, "GOMAXPROCS") && has(out, "MY_MEM=512") &&
           !has(out, "SLURM_JOB_ID"), "enabled, disabled, custom and forbidden variables");
        cfg = saved;
        ok(rv_config_parse(&c2, "[1]", 3, &err) < 0, "non-object configuration is an error");
        /* defaults set member by member (no memset of 64 KiB): from garbage
         * they give what they give from zeros */
        static struct rv_config z, g;
        memset(&z, 0, sizeof(z));
        memset(&g, 0xA5, sizeof(g));
        rv_config_defaults(&z);
        rv_config_defaults(&g);
        bool same = strcmp(z.path, g.path) == 0 && z.from_env == g.from_env && z.n_runtimes == g.n_runtimes &&
                    strcmp(z.log_file, g.log_file) == 0 && z.log_level == g.log_level &&
                    strcmp(z.hook_path, g.hook_path) == 0 && strcmp(z.hook_stage, g.hook_stage) == 0 &&
                    strcmp(z.lxcfs_root, g.lxcfs_root) == 0 && z.lxcfs_required == g.lxcfs_required &&
                    strcmp(z.state_dir, g.state_dir) == 0 && z.env_enabled == g.env_enabled &&
                    z.rounding == g.rounding && z.n_vars == g.n_vars && z.fuse_allowed == g.fuse_allowed &&
                    z.fuse_allow_other == g.fuse_allow_other && z.n_fuse_namespaces == g.n_fuse_namespaces &&
                    strcmp(z.seccomp_profile, g.seccomp_profile) == 0 && z.n_warnings == g.n_warnings;
        for (int i = 0; same && i < z.n_runtimes; i++)
            same = strcmp(z.runtimes[i], g.runtimes[i]) == 0;
        for (int i = 0; same && i < z.n_vars; i++)
            same = memcmp(&z.vars[i], &g.vars[i], sizeof(z.vars[i])) == 0;
        same = same && z.n_nri_handlers == g.n_nri_handlers;
        for (int i = 0; same && i < z.n_nri_handlers; i++)
            same = strcmp(z.nri_handlers[i], g.nri_handlers[i]) == 0;
        ok(same, "defaults over a garbage-filled configuration equal defaults over a zeroed one");
        ok(rv_config_parse(&c2, "{", 1, &err) < 0, "malformed configuration is an error");
    }
    /* nri.runtime_handlers: the runc-type handlers by default */
    {
        struct rv_config c3;
        char list[512] = "";
        rv_config_defaults(&c3);
        for (int i = 0; i < c3.n_nri_handlers; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "[%s]", c3.nri_handlers[i]);
        ok_str(list, "[][runc][crun][nvidia][nvidia-cdi][nvidia-legacy]",
               "nri.runtime_handlers by default: the default runtime, runc, crun, NVIDIA's");
        const char *nri = "{\"nri\":{\"runtime_handlers\":[\"runc\",\"my-runc\",7,\"resview\"],\"other\":1}}";
        ok(rv_config_parse(&c3, nri, strlen(nri), &err) == 0 && c3.n_nri_handlers == 3 &&
           strcmp(c3.nri_handlers[1], "my-runc") == 0 && c3.n_warnings == 3 &&
           has(c3.warnings[0], "runtime_handlers[2]") && has(c3.warnings[1], "`resview` is never served") &&
           has(c3.warnings[2], "nri.other: unknown key"),
           "an operator's list replaces it; a bad entry, `resview` and an unknown nri key are said (%s | %s | %s)",
           c3.warnings[0], c3.warnings[1], c3.warnings[2]);
        rv_config_defaults(&c3);
        const char *one = "{\"nri\":{\"runtime_handlers\":\"runc\"}}", *none = "{\"nri\":{\"runtime_handlers\":[]}}";
        ok(rv_config_parse(&c3, one, strlen(one), &err) == 0 &&
           c3.n_nri_handlers == 6 && c3.n_warnings == 1, "not an array: the default kept, said");
        rv_config_defaults(&c3);
        ok(rv_config_parse(&c3, none, strlen(none), &err) == 0 &&
           c3.n_nri_handlers == 0 && c3.n_warnings == 0, "an empty list: no handler served");
    }
    free(out);
    return unit_done();
}
