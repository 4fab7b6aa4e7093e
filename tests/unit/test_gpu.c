/* GPU nodes: counting GPUs the ways they are handed out, whether a container
 * asks for one, gpu.* in the configuration, NVIDIA's runtime found in
 * containerd's files (tests/samples/nvidia: what NVIDIA's toolkit 1.13 and
 * 1.18 write), resview's entry through the toolkit's whole-file rewrite, and
 * resview put first in NVIDIA's runtimes (and put back, byte for byte). */
#define _GNU_SOURCE
#include "resview/config.h"
#include "resview/engine.h"
#include "resview/gpus.h"
#include "resview/node_containerd.h"
#include "resview/spec.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[256];
static const char *samples = "tests/samples/nvidia";
#define OURS "/opt/resview/current/bin/resview-runtime"

static void sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(cmd, sizeof(cmd), fmt, a, b);
#pragma GCC diagnostic pop
    if (system(cmd) != 0)
        abort();
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static unsigned count(const char *json, char *why, size_t size)
{
    json_error_t je;
    json_t *spec = json_loads(json, 0, &je);
    char dev[300];
    if (!spec) {
        printf("# bad test json: %s\n", je.text);
        abort();
    }
    snprintf(dev, sizeof(dev), "%s/dev", base);
    unsigned n = rv_gpus_count(spec, dev, why, size);
    json_decref(spec);
    return n;
}

static bool wanted(const char *json)
{
    char why[256];
    json_t *spec = json_loads(json, 0, NULL);
    if (!spec)
        abort();
    bool w = rv_gpus_wanted(spec, why, sizeof(why));
    json_decref(spec);
    return w;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    if (!f)
        return NULL;
    *len = 0;
    buf = malloc(1 << 20);
    if (buf)
        *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    if (buf)
        buf[*len] = '\0';
    return buf;
}

static int engine(const char *file, bool set_default, bool uninstall, struct rv_error *err)
{
    struct rv_engine_opts o = { .config = file, .runtime_path = OURS, .hook_path = "/opt/resview/current/bin/resview-hook",
                                .set_default = set_default, .uninstall = uninstall, .containerd_version = 2 };
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    int rc = rv_engine_apply(&rv_engine_containerd, &o, err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(null);
    return rc;
}

static void test_count(void)
{
    char why[256];

    sh("mkdir -p %s/dev && touch %s/dev/nvidia0", base, base);
    sh("touch %s/dev/nvidia1 %s/dev/nvidia2", base, base);
    sh("touch %s/dev/nvidia3 %s/dev/nvidiactl", base, base);

    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,1\"]}}", why, sizeof(why)) == 2 &&
       strstr(why, "NVIDIA_VISIBLE_DEVICES"), "indices (%s)", why);
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=GPU-8a1c6f2e-aaaa-bbbb-cccc-000000000001, "
             "MIG-4f1e3c2a-1111-2222-3333-444444444444,MIG-GPU-8a1c6f2e-aaaa-bbbb-cccc-000000000001/1/0,0:1\"]}}",
             why, sizeof(why)) == 4, "UUIDs, MIG UUIDs (both forms) and a MIG index: 4 (%s)", why);
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=2,2,,2\"]}}", why, sizeof(why)) == 1,
       "a device named twice counts once");
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}}", why, sizeof(why)) == 4 &&
       strstr(why, "all"), "all: the host's nvidiaN nodes, not nvidiactl (%s)", why);
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,void\"]}}", why, sizeof(why)) == 0,
       "void anywhere in the list: none, as NVIDIA's runtime reads it");
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=none\"]}}", why, sizeof(why)) == 0, "none");

    /* the device plugin's volume-mounts strategy */
    const char *vm = "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\"]},"
                     "\"mounts\":[{\"source\":\"/dev/null\",\"destination\":\"/var/run/nvidia-container-devices/GPU-a\"},"
                     "{\"source\":\"/dev/null\",\"destination\":\"/var/run/nvidia-container-devices/GPU-b\"},"
                     "{\"source\":\"/dev/null\",\"destination\":\"/var/run/nvidia-container-devices/imex/channel0\"},"
                     "{\"source\":\"/tmp/x\",\"destination\":\"/var/run/nvidia-container-devices/GPU-c\"},"
                     "{\"source\":\"proc\",\"destination\":\"/proc\"}]}";
    ok(count(vm, why, sizeof(why)) == 2 && strstr(why, "volume mounts"),
       "volume mounts: /dev/null at .../GPU-a and GPU-b; imex channels and other sources are no GPUs (%s)", why);
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\"]},"
             "\"mounts\":[{\"source\":\"/dev/null\",\"destination\":\"/var/run/nvidia-container-devices/all\"}]}",
             why, sizeof(why)) == 4, "volume mount `all`: the host's");
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\"]}}", why,
             sizeof(why)) == 1, "the directory alone is one entry of the variable (what NVIDIA's runtime would try)");

    /* CDI */
    ok(count("{\"annotations\":{\"cdi.k8s.io/nvidia-device-plugin_GPU-a\":\"k8s.device-plugin.nvidia.com/gpu=GPU-a\","
             "\"cdi.k8s.io/other\":\"nvidia.com/gpu=1,vendor.example.com/gpu=0,nvidia.com/nic=0\"},"
             "\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0,1,2\"]}}", why, sizeof(why)) == 2 &&
       strstr(why, "CDI"), "CDI annotations win over the variable, NVIDIA's gpu devices only (%s)", why);
    ok(count("{\"annotations\":{\"cdi.k8s.io/x\":\"nvidia.com/gpu=all\"}}", why, sizeof(why)) == 4,
       "CDI nvidia.com/gpu=all: the host's");
    ok(count("{\"annotations\":{\"nvidia.cdi.k8s.io/x\":\"nvidia.com/mig=0:1\"}}", why, sizeof(why)) == 1,
       "nvidia.cdi.k8s.io/ prefix and a MIG device");

    /* what containerd already put in linux.devices (CRI CDI devices) */
    const char *nodes = "{\"linux\":{\"devices\":[{\"path\":\"/dev/nvidia2\",\"type\":\"c\",\"major\":195,\"minor\":2},"
                        "{\"path\":\"/dev/nvidiactl\"},{\"path\":\"/dev/nvidia-uvm\"}]}}";
    ok(count(nodes, why, sizeof(why)) == 1 && strstr(why, "linux.devices"), "CRI CDI devices: one nvidiaN node (%s)", why);
    ok(count("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"]},\"linux\":{\"devices\":"
             "[{\"path\":\"/dev/nvidia0\"},{\"path\":\"/dev/nvidia1\"}]}}", why, sizeof(why)) == 2,
       "devices already there count even with void");
    ok(count("{}", why, sizeof(why)) == 0, "nothing asked: 0 (%s)", why);
}

/* A tenant's list of megabytes: the names' table (a hash, not a scan of the
 * kept ones) counts as the scan did. */
static unsigned count_list(size_t distinct, size_t repeats, const char *tail)
{
    size_t cap = 64 + (distinct + repeats) * 12 + strlen(tail);
    char *nvd = malloc(cap), why[256];
    size_t at = (size_t)sprintf(nvd, "NVIDIA_VISIBLE_DEVICES=");
    for (size_t i = 0; i < distinct + repeats; i++)
        at += (size_t)sprintf(nvd + at, "%sGPU-%zu", i ? "," : "", i < distinct ? i : i % distinct);
    sprintf(nvd + at, "%s", tail);
    json_t *spec = json_pack("{s:{s:[s]}}", "process", "env", nvd);
    char dev[300];
    snprintf(dev, sizeof(dev), "%s/dev", base);
    unsigned n = spec ? rv_gpus_count(spec, dev, why, sizeof(why)) : 9999;
    json_decref(spec);
    free(nvd);
    return n;
}

static void test_count_many(void)
{
    ok(count_list(200, 400000, "") == 200, "200 names, each named 2000 more times: 200");
    ok(count_list(256, 0, "") == 256 && count_list(300000, 0, "") == 256,
       "256 distinct names and 300000: 256 (the list's cap)");
    ok(count_list(300000, 0, ",GPU-7,GPU-299999") == 256, "names named again after the cap: 256");
    ok(count_list(300000, 0, ",none") == 0, "none at the end of 300000 names: none");
    ok(count_list(300000, 0, ", all") == 4, "all at the end of 300000 names: the host's 4");
    ok(count_list(1, 300000, "") == 1, "one name 300001 times: 1");
}

/* The shim's load: mounts only for the volume-mounts strategy (the cost of a
 * member is paid on every start). */
static void test_load(void)
{
    struct rv_spec spec;
    struct rv_error err;
    char dir[400], why[256], dev[300];
    const char *vm = "{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices\"]},"
                     "\"mounts\":[{\"source\":\"/dev/null\",\"destination\":\"/var/run/nvidia-container-devices/GPU-a\"}]}";

    snprintf(dir, sizeof(dir), "%s/bundle", base);
    snprintf(dev, sizeof(dev), "%s/dev", base);
    sh("mkdir -p %s && printf '{\"mounts\":[{\"destination\":\"/x\"}],\"process\":{\"env\":[]}}' > %s/config.json", dir, dir);
    ok(rv_spec_load(&spec, dir, &rv_gpus_spec_extra, &err) == 0 && !json_object_get(spec.root, "mounts"), "a plain spec: mounts not loaded");
    rv_spec_free(&spec);
    char path[500];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(vm, f);
        fclose(f);
    }
    ok(rv_spec_load(&spec, dir, &rv_gpus_spec_extra, &err) == 0 && json_is_array(json_object_get(spec.root, "mounts")) &&
       rv_gpus_count(spec.root, dev, why, sizeof(why)) == 1, "the volume-mounts strategy: loaded, counted (%s)", why);
    rv_spec_free(&spec);
}

static void test_wanted(void)
{
    ok(wanted("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=0\"]}}"), "NVIDIA_VISIBLE_DEVICES=0 asks");
    ok(wanted("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=all\"]}}"), "all asks");
    ok(!wanted("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"]}}"), "void does not");
    ok(!wanted("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=\"]}}"), "empty does not");
    ok(!wanted("{\"process\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=none\"]}}"), "none does not");
    ok(wanted("{\"process\":{\"env\":[\"CUDA_VERSION=9.0\"]}}"), "a legacy CUDA image asks (all GPUs)");
    ok(!wanted("{\"process\":{\"env\":[\"CUDA_VERSION=12.2\",\"NVIDIA_REQUIRE_CUDA=cuda>=12.2\"]}}"),
       "a modern CUDA image without the variable does not");
    ok(wanted("{\"annotations\":{\"cdi.k8s.io/x\":\"nvidia.com/gpu=0\"}}"), "a CDI annotation asks");
    ok(wanted("{\"linux\":{\"devices\":[{\"path\":\"/dev/nvidiactl\"}]}}"), "/dev/nvidia* in linux.devices asks");
    ok(!wanted("{\"process\":{\"env\":[\"PATH=/bin\"]},\"annotations\":{\"a\":\"b\"},\"linux\":{\"devices\":"
               "[{\"path\":\"/dev/fuse\"}]}}"), "a plain (FUSE) container does not");
}

static void test_config(void)
{
    struct rv_config cfg;
    struct rv_error err;
    const char *good = "{\"gpu\":{\"runtime\":\"/usr/local/nvidia/toolkit/nvidia-container-runtime\",\"containers\":\"all\"}}";
    const char *bad = "{\"gpu\":{\"runtime\":\"nvidia-container-runtime\",\"containers\":\"some\",\"x\":1}}";

    rv_config_defaults(&cfg);
    ok(rv_config_parse(&cfg, good, strlen(good), &err) == 0 && cfg.n_warnings == 0 &&
       strcmp(cfg.gpu_runtime, "/usr/local/nvidia/toolkit/nvidia-container-runtime") == 0 && cfg.gpu_all,
       "gpu.runtime and gpu.containers");
    rv_config_defaults(&cfg);
    ok(rv_config_parse(&cfg, bad, strlen(bad), &err) == 0 && cfg.n_warnings == 3 && !cfg.gpu_runtime[0] && !cfg.gpu_all,
       "a relative runtime, an unknown mode and key: warnings, no GPU runtime (%d)", cfg.n_warnings);
}

static void test_detect(void)
{
    struct rv_node_gpu g;
    struct rv_error err = { 0 };
    char path[512], dir[400];

    snprintf(path, sizeof(path), "%s/base.toml", samples);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && !g.runtime[0] && strcmp(g.dflt, "runc") == 0,
       "no NVIDIA runtime before the toolkit (%s)", err.msg);
    snprintf(path, sizeof(path), "%s/toolkit-1.13.toml", samples);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 &&
       strcmp(g.runtime, "/usr/local/nvidia/toolkit/nvidia-container-runtime") == 0 &&
       strcmp(g.entry, "nvidia") == 0 && strcmp(g.dflt, "nvidia") == 0 && !g.cri_from_import,
       "toolkit 1.13: `nvidia`, the default, in config.toml (%s %s)", g.runtime, err.msg);

    /* 1.18: the drop-in, through the imports line */
    snprintf(dir, sizeof(dir), "%s/d118", base);
    sh("mkdir -p %s && cp -r tests/samples/nvidia/toolkit-1.18/. %s/", dir, dir);
    sh("sed -i 's#/etc/containerd/#%s/#' %s/config.toml", dir, dir);
    snprintf(path, sizeof(path), "%s/config.toml", dir);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && g.n_imports == 1 && g.cri_from_import &&
       strstr(g.cri_file, "99-nvidia.toml") &&
       strcmp(g.runtime, "/usr/local/nvidia/toolkit/nvidia-container-runtime") == 0 && strcmp(g.dflt, "nvidia") == 0,
       "toolkit 1.18: found in the imported drop-in, which holds the CRI table (%s %s)", g.cri_file, err.msg);

    /* a relative, single-quoted import; resview's own drop-in is a copy, not a source */
    sh("mkdir -p %s/rel/conf.d && printf \"version = 2\\nimports = ['conf.d/*.toml']\\n\" > %s/rel/config.toml", base, base);
    sh("printf 'version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
       "BinaryName = \"/x/nvidia-container-runtime\"\n' > %s/rel/conf.d/50-a.toml%s", base, "");
    sh("printf 'version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"resview\"\n' "
       "> %s/rel/conf.d/99-zz-resview.toml%s", base, "");
    snprintf(path, sizeof(path), "%s/rel/config.toml", base);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && g.n_imports == 2 && strstr(g.cri_file, "50-a.toml") &&
       strstr(g.own_dropin, "99-zz-resview.toml") && strcmp(g.runtime, "/x/nvidia-container-runtime") == 0 &&
       !g.dflt[0], "relative import: found; resview's drop-in skipped (%s %s)", g.cri_file, err.msg);

    /* containerd 2.x (config version 3): the CRI runtime plugin's own name */
    sh("printf 'version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\ndefault_runtime_name = \"nvidia\"\n"
       "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n"
       "BinaryName = \"/usr/local/nvidia/toolkit/nvidia-container-runtime\"\n' > %s/v3.toml%s", base, "");
    snprintf(path, sizeof(path), "%s/v3.toml", base);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && strcmp(g.runtime, "/usr/local/nvidia/toolkit/nvidia-container-runtime") == 0 &&
       strcmp(g.dflt, "nvidia") == 0, "config version 3 (containerd 2.x)");

    /* an import with the CRI table: containerd 2.x (version 3) merges it key
     * by key, so config.toml's resview entry stays in effect unless the
     * import names resview itself; 1.x (version 2) takes the import's table */
    for (int v = 2; v <= 3; v++) {
        const char *cri = v == 3 ? "io.containerd.cri.v1.runtime" : "io.containerd.grpc.v1.cri";
        char d[300], text[1024], f[400];
        snprintf(d, sizeof(d), "%s/merge%d", base, v);
        sh("mkdir -p %s/conf.d%s", d, "");
        snprintf(f, sizeof(f), "%s/config.toml", d);
        snprintf(text, sizeof(text), "version = %d\nimports = ['%s/conf.d/*.toml']\n"
                 "[plugins.\"%s\".containerd.runtimes.resview.options]\nBinaryName = \"%s\"\n", v, d, cri, OURS);
        put(f, text);
        snprintf(f, sizeof(f), "%s/conf.d/99-nvidia.toml", d);
        snprintf(text, sizeof(text), "version = %d\n[plugins.\"%s\".containerd]\ndefault_runtime_name = \"nvidia\"\n"
                 "[plugins.\"%s\".containerd.runtimes.nvidia.options]\nBinaryName = \"/x/nvidia-container-runtime\"\n",
                 v, cri, cri);
        put(f, text);
        snprintf(path, sizeof(path), "%s/config.toml", d);
        ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && g.cri_from_import && strcmp(g.dflt, "nvidia") == 0 &&
           strcmp(g.runtime, "/x/nvidia-container-runtime") == 0 && g.resview_ours == (v == 3) &&
           g.names_resview == (v == 3),
           "version %d, an import with the CRI table and no resview entry: resview's entry %s", v,
           v == 3 ? "still in effect (2.x merges key by key)" : "replaced (1.x takes the table whole)");
        /* the import names resview, with another binary (a stale copy): it wins on both */
        snprintf(text + strlen(text), sizeof(text) - strlen(text),
                 "[plugins.\"%s\".containerd.runtimes.resview.options]\nBinaryName = \"/old/resview-runtime\"\n", cri);
        put(f, text);
        ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && g.names_resview && !g.resview_ours,
           "version %d: an import's stale resview entry wins over config.toml's", v);
    }

    /* the default runtime named otherwise but running NVIDIA's binary */
    sh("printf 'version = 2\\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\\ndefault_runtime_name = \"gpu\"\\n"
       "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.gpu.options]\\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\\n"
       "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.resview.options]\\nBinaryName = \"%s\"\\n' > %s/named.toml",
       OURS, base);
    snprintf(path, sizeof(path), "%s/named.toml", base);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) == 0 && strcmp(g.runtime, "/usr/bin/nvidia-container-runtime") == 0 &&
       strcmp(g.entry, "gpu") == 0, "the default when it runs NVIDIA's binary, whatever its name");
    sh("printf 'version = 2\\nbad = [\\n' > %s/bad.toml%s", base, "");
    snprintf(path, sizeof(path), "%s/bad.toml", base);
    ok(rv_node_gpu_detect(path, OURS, &g, &err) < 0 && strstr(err.msg, "bad.toml"), "a broken file: %s", err.msg);

    /* the agent's config.json */
    struct rv_node_gpu found = { .runtime = "/usr/local/nvidia/toolkit/nvidia-container-runtime" };
    struct rv_node_containerd c = { .gpu = &found, .gpu_mode = RV_NODE_GPU_ASKING };
    char text[8192];
    ok(rv_node_config_text(&c, "/var/lib/resview/lxcfs", text, sizeof(text)) >= 0 &&
       strstr(text, "\"gpu\": { \"runtime\": \"/usr/local/nvidia/toolkit/nvidia-container-runtime\", \"containers\": \"gpu\" }") &&
       rv_node_config_agents(text, strlen(text), "/var/lib/resview/lxcfs"), "config.json with gpu.runtime: %s", text);
    struct rv_config cfg;
    rv_config_defaults(&cfg);
    ok(rv_config_parse(&cfg, text, strlen(text), &err) == 0 && cfg.n_warnings == 0 && cfg.gpu_runtime[0],
       "the shim reads it without a warning");
    c.gpu_mode = RV_NODE_GPU_NONE;
    ok(rv_node_config_text(&c, "/var/lib/resview/lxcfs", text, sizeof(text)) >= 0 && !strstr(text, "gpu") &&
       rv_node_config_agents(text, strlen(text), "/var/lib/resview/lxcfs"), "mode none: no gpu part");
    const char *op = "{\"lxcfs\": {\"root\": \"/var/lib/resview/lxcfs\"}, \"gpu\": {\"runtime\": \"/x\"}}";
    ok(!rv_node_config_agents(op, strlen(op), "/var/lib/resview/lxcfs"), "an operator's file is not the agent's");
    ok(rv_node_gpu_mode_parse("gpu") == RV_NODE_GPU_ASKING && rv_node_gpu_mode_parse("all") == RV_NODE_GPU_ALL &&
       rv_node_gpu_mode_parse("none") == RV_NODE_GPU_NONE && rv_node_gpu_mode_parse("some") < 0, "modes");
}

/* NVIDIA's runtime's own configuration: which runtime it runs next */
static void nv_runtimes(const char *list)
{
    char cmd[1024];

    sh("mkdir -p %s/nv/.config/nvidia-container-runtime%s", base, "");
    snprintf(cmd, sizeof(cmd), "%s/nv/.config/nvidia-container-runtime/config.toml", base);
    FILE *f = fopen(cmd, "w");
    if (!f)
        abort();
    fprintf(f, "[nvidia-container-runtime]\n  runtimes = [%s]\n", list);
    fclose(f);
}

static void test_nvidia_next(void)
{
    char bin[512], ours[512], conf[512], list[1200];

    sh("mkdir -p %s/nv %s/opt/bin", base, base);
    snprintf(bin, sizeof(bin), "%s/nv/nvidia-container-runtime", base);
    snprintf(ours, sizeof(ours), "%s/opt/bin/resview-runtime", base);
    sh("touch %s && chmod +x %s", ours, ours);
    ok(rv_node_nvidia_next(0, bin, ours, conf, sizeof(conf)) == 0, "no configuration: not resview");
    /* what the toolkit 1.18 writes after reading resview as containerd's default */
    snprintf(list, sizeof(list), "\"%s\", \"runc\", \"crun\"", ours);
    nv_runtimes(list);
    ok(rv_node_nvidia_next(0, bin, ours, conf, sizeof(conf)) == 1 &&
       strstr(conf, "/nv/.config/nvidia-container-runtime/config.toml"),
       "runtimes names resview first: it runs resview next (%s)", conf);
    /* a path that is gone is skipped, as NVIDIA's runtime skips it */
    snprintf(list, sizeof(list), "\"/nonexistent/x\", \"%s\"", ours);
    nv_runtimes(list);
    ok(rv_node_nvidia_next(0, bin, ours, conf, sizeof(conf)) == 1, "a runtime that is not there is skipped");
    /* 1.13's packaged default; and resview's binary gone (uninstalled) */
    nv_runtimes("\"docker-runc\", \"runc\"");
    ok(rv_node_nvidia_next(0, bin, ours, conf, sizeof(conf)) == 0, "docker-runc, runc: not resview");
    snprintf(list, sizeof(list), "\"%s\", \"runc\"", ours);
    nv_runtimes(list);
    sh("rm %s%s", ours, "");
    ok(rv_node_nvidia_next(0, bin, ours, conf, sizeof(conf)) == 0, "resview's binary gone: runc next");
    sh("touch %s && chmod +x %s", ours, ours);

    /* the default of the table that counts */
    struct rv_node_gpu g = { .entry = "nvidia", .dflt = "nvidia" };
    struct rv_node_containerd c = { .runtime_path = ours, .host_pid = 0 };
    snprintf(g.runtime, sizeof(g.runtime), "%s", bin);
    ok(rv_node_gpu_default_chains(&c, &g), "NVIDIA's the default, running resview next");
    snprintf(g.dflt, sizeof(g.dflt), "runc");
    ok(!rv_node_gpu_default_chains(&c, &g), "runc the default: no");
}


/* resview first in NVIDIA's runtimes: the configuration NVIDIA's toolkit
 * writes for its runtime, edited and put back byte for byte */
static const char *nv_conf_113 =
    "accept-nvidia-visible-devices-as-volume-mounts = false\n"
    "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"
    "disable-require = false\n\n"
    "[nvidia-container-cli]\n  environment = []\n  ldconfig = \"@/run/nvidia/driver/sbin/ldconfig.real\"\n"
    "  load-kmods = true\n  path = \"/usr/local/nvidia/toolkit/nvidia-container-cli\"\n  root = \"/run/nvidia/driver\"\n\n"
    "[nvidia-container-runtime]\n  log-level = \"info\"\n  mode = \"auto\"\n  runtimes = [\"docker-runc\", \"runc\"]\n\n"
    "  [nvidia-container-runtime.modes]\n\n    [nvidia-container-runtime.modes.csv]\n"
    "      mount-spec-path = \"/etc/nvidia-container-runtime/host-files-for-container.d\"\n";

static void put_text(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void test_nvidia_edit(void)
{
    struct rv_error err = { 0 };
    char ours[512], dir[512], conf[512], file[600], bak[600], bin[600], shown[512];
    char *out = NULL;
    size_t len;
    struct stat st;

    snprintf(ours, sizeof(ours), "%s/opt/bin/resview-runtime", base);
    sh("mkdir -p %s/opt/bin && touch %s/opt/bin/resview-runtime", base, base);
    chmod(ours, 0755);
    /* the text: one line, several lines with a comment, empty, absent */
    ok(rv_node_nvidia_put_first(nv_conf_113, strlen(nv_conf_113), OURS, &out, &len, &err) == 0 && out &&
       strstr(out, "  runtimes = [\"" OURS "\", \"docker-runc\", \"runc\"]\n") &&
       len == strlen(nv_conf_113) + strlen(OURS) + 4, "1.13's list: resview first, the rest as it was");
    free(out);
    const char *multi = "[nvidia-container-runtime]\n# the runtimes\nruntimes = [\n    \"docker-runc\",\n    \"runc\",\n]\n";
    ok(rv_node_nvidia_put_first(multi, strlen(multi), OURS, &out, &len, &err) == 0 && out &&
       strstr(out, "runtimes = [\"" OURS "\", \n    \"docker-runc\",\n    \"runc\",\n]\n"),
       "a list on several lines (the packaged file): %s", out ? out : err.msg);
    free(out);
    const char *empty = "[nvidia-container-runtime]\nruntimes = [ # none\n]\n";
    ok(rv_node_nvidia_put_first(empty, strlen(empty), OURS, &out, &len, &err) == 0 && out &&
       strstr(out, "runtimes = [\"" OURS "\" # none\n]"), "an empty list: no comma (%s)", out ? out : err.msg);
    free(out);
    const char *none = "[nvidia-container-runtime]\nmode = \"auto\"\n";
    ok(rv_node_nvidia_put_first(none, strlen(none), OURS, &out, &len, &err) == 1 && !out,
       "no runtimes list: nothing done (NVIDIA's built-in list is not guessed)");

    /* the file: edited, kept, put back */
    snprintf(dir, sizeof(dir), "%s/nvtk", base);
    snprintf(bin, sizeof(bin), "%s/nvidia-container-runtime", dir);
    snprintf(file, sizeof(file), "%s/.config/nvidia-container-runtime/config.toml", dir);
    snprintf(bak, sizeof(bak), "%s/.config/nvidia-container-runtime/" RV_NODE_NV_BACKUP, dir);
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 2, "no toolkit directory: cannot");
    ok(rv_node_nvidia_edit(0, dir, ours, false, conf, sizeof(conf), &err) == 0, "…nor anything to put back");
    sh("mkdir -p %s/nvtk/.config/nvidia-container-runtime%s", base, "");
    put_text(file, nv_conf_113, 0640);
    ok(rv_node_nvidia_next(0, bin, ours, shown, sizeof(shown)) == 0, "the toolkit's file: runc next");
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 1 && strcmp(conf, file) == 0,
       "edited (%s)", err.msg);
    char *t = slurp(bak, &len);
    ok(t && len == strlen(nv_conf_113) && memcmp(t, nv_conf_113, len) == 0, "the toolkit's file kept beside it");
    free(t);
    ok(rv_node_nvidia_next(0, bin, ours, shown, sizeof(shown)) == 1, "NVIDIA's runtime runs resview next");
    ok(stat(file, &st) == 0 && (st.st_mode & 07777) == 0640, "its mode kept (%o)", st.st_mode & 07777);
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 0, "a second time: nothing to do");
    ok(rv_node_nvidia_edit(0, dir, ours, false, conf, sizeof(conf), &err) == 1, "put back (%s)", err.msg);
    t = slurp(file, &len);
    ok(t && len == strlen(nv_conf_113) && memcmp(t, nv_conf_113, len) == 0 && access(bak, F_OK) < 0 &&
       stat(file, &st) == 0 && (st.st_mode & 07777) == 0640, "byte for byte, mode too; no copy left");
    free(t);
    ok(rv_node_nvidia_edit(0, dir, ours, false, conf, sizeof(conf), &err) == 0, "put back twice: nothing");

    /* the toolkit writes its file again while resview's edit is in: that is the file now */
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 1, "edited again");
    const char *next = "[nvidia-container-runtime]\n  mode = \"cdi\"\n  runtimes = [\"docker-runc\", \"runc\"]\n";
    put_text(file, next, 0644);
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 1, "the toolkit's new file edited");
    t = slurp(bak, &len);
    ok(t && len == strlen(next) && memcmp(t, next, len) == 0, "…and kept: the new one, not the old");
    free(t);
    put_text(file, next, 0644);
    ok(rv_node_nvidia_edit(0, dir, ours, false, conf, sizeof(conf), &err) == 0 && access(bak, F_OK) < 0,
       "written again, then uninstall: the file is the toolkit's, left alone; the copy goes");
    t = slurp(file, &len);
    ok(t && len == strlen(next) && memcmp(t, next, len) == 0, "…byte for byte the toolkit's");
    free(t);
    put_text(file, none, 0644);
    ok(rv_node_nvidia_edit(0, dir, ours, true, conf, sizeof(conf), &err) == 2 && access(bak, F_OK) < 0,
       "no runtimes list in it: cannot, nothing written");
}

/* resview first, then toolkit 1.13 rewrites config.toml (markers lost), then
 * resview again, then each uninstalls. */
static void test_rewrite(void)
{
    char file[400], nv[400];
    struct rv_error err = { 0 };
    size_t len, nlen;

    snprintf(file, sizeof(file), "%s/rw/config.toml", base);
    sh("mkdir -p %s/rw && cp tests/samples/nvidia/base.toml %s/rw/config.toml", base, base);
    ok(engine(file, true, false, &err) == 0, "resview first (default) (%s)", err.msg);
    sh("tests/lib/fake-nvidia-toolkit setup 1.13 %s%s", file, "");
    char *t = slurp(file, &len);
    ok(t && !strstr(t, "resview-begin") && strstr(t, "runtimes.resview.options]") && strstr(t, "default_runtime_name = \"nvidia\""),
       "the toolkit rewrote it: our entry without markers, nvidia the default");
    free(t);
    ok(engine(file, true, false, &err) == 0, "resview again takes its unmarked entry as its own (%s)", err.msg);
    t = slurp(file, &len);
    ok(t && strstr(t, "default_runtime_name = \"resview\"  # resview-was") &&
       strstr(t, "runtimes.nvidia.options]") && !strstr(t, "resview-begin"),
       "the default is resview's again (a marked line); no second entry");
    free(t);
    ok(engine(file, true, false, &err) == 0, "a third run changes nothing");
    /* uninstall: the toolkit's entries stay byte for byte */
    snprintf(nv, sizeof(nv), "%s/rw/nv.toml", base);
    sh("tests/lib/fake-nvidia-toolkit setup 1.13 %s && cp %s.x /dev/null 2>/dev/null || true", file, file);
    ok(engine(file, true, false, &err) == 0, "after a second toolkit start (%s)", err.msg);
    ok(engine(file, false, true, &err) == 0, "resview uninstalls (%s)", err.msg);
    t = slurp(file, &len);
    ok(t && !strstr(t, "resview") && strstr(t, "default_runtime_name = \"nvidia\"") && strstr(t, "runtimes.nvidia-legacy.options]"),
       "no resview left; the toolkit's default and entries are there");
    /* what the toolkit would write from it is what it has: its entries untouched */
    FILE *f = fopen(nv, "w");
    if (f) {
        fwrite(t, 1, len, f);
        fclose(f);
    }
    free(t);
    sh("tests/lib/fake-nvidia-toolkit setup 1.13 %s%s", nv, "");
    char *a = slurp(file, &len), *b = slurp(nv, &nlen);
    ok(a && b && len == nlen && memcmp(a, b, len) == 0, "the toolkit's own rewrite of it changes nothing: byte for byte its text");
    free(a);
    free(b);
    ok(engine(file, false, false, &err) == 0, "resview installs beside the toolkit (not default)");
    sh("tests/lib/fake-nvidia-toolkit cleanup 1.13 %s%s", file, "");
    t = slurp(file, &len);
    ok(t && !strstr(t, "nvidia") && strstr(t, "runtimes.resview.options]"), "the toolkit uninstalls: resview's entry stays");
    free(t);
    ok(engine(file, false, false, &err) == 0 && engine(file, false, true, &err) == 0, "resview takes it out again (%s)", err.msg);
    t = slurp(file, &len);
    ok(t && !strstr(t, "resview"), "nothing of either left");
    free(t);
}

int main(void)
{
    snprintf(base, sizeof(base), "/tmp/resview-unit-gpu.XXXXXX");
    if (!mkdtemp(base))
        abort();
    test_count();
    test_count_many();
    test_wanted();
    test_load();
    test_config();
    test_detect();
    test_nvidia_next();
    test_nvidia_edit();
    test_rewrite();
    sh("rm -rf %s%s", base, "");
    return unit_done();
}
