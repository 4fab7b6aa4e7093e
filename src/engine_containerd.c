/* engine_containerd.c - the `resview` runtime in containerd's config.toml:
 * config version 2 (containerd 1.6/1.7) and version 3 (containerd 2.x).
 *
 * The entry goes into the main file, not a drop-in under `imports`: containerd
 * 1.x merges an imported file per plugin, replacing the whole
 * "io.containerd.grpc.v1.cri" table, so a drop-in holding only our runtime
 * would drop the node's CRI settings. */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CRI_V2 "plugins.\"io.containerd.grpc.v1.cri\""
#define CRI_V3 "plugins.\"io.containerd.cri.v1.runtime\""

/* containerd's own major version (for a new file), 0 if unknown. */
static int containerd_major(void)
{
    FILE *f = popen("containerd --version 2>/dev/null", "r");
    char line[256] = "";
    int major = 0;

    if (!f)
        return 0;
    if (fgets(line, sizeof(line), f)) {
        /* "containerd github.com/containerd/containerd v1.7.2 ..." or "... 1.6.20~ds1 ..." */
        const char *p = strstr(line, " v");
        p = p ? p + 2 : strchr(line, ' ') ? strchr(strchr(line, ' ') + 1, ' ') : NULL;
        if (p && *p == ' ')
            p++;
        if (p && *p >= '0' && *p <= '9')
            major = atoi(p);
    }
    pclose(f);
    return major;
}

static int config_version(const struct rv_engine_opts *o, const struct rv_toml *doc, bool *fresh,
                          struct rv_error *err)
{
    const struct rv_toml_item *v = rv_toml_get(doc, "version");

    *fresh = false;
    if (v && v->kind == RV_TOML_VALUE) {
        size_t n = v->val_end - v->val_start;
        if (n == 1 && (doc->text[v->val_start] == '2' || doc->text[v->val_start] == '3'))
            return doc->text[v->val_start] - '0';
        return rv_fail(err, 0, "config `version = %.*s` is not supported (2: containerd 1.x, 3: "
                       "containerd 2.x); migrate it with `containerd config migrate`", (int)n,
                       doc->text + v->val_start);
    }
    if (doc->n > 0)
        return rv_fail(err, 0, "config without `version` (version 1) is not supported; migrate it "
                       "with `containerd config migrate` or add `version = 2`");
    *fresh = true;
    if (o->containerd_version == 2 || o->containerd_version == 3)
        return o->containerd_version;
    return containerd_major() >= 2 ? 3 : 2;
}

static int build(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_toml_plan *plan,
                 struct rv_error *err)
{
    static const char *const entry_skip[] = { "runtime_type", "runtime_path", "pod_annotations",
                                              "container_annotations", "options", NULL };
    static const char *const opt_skip[] = { "BinaryName", NULL };
    cleanup_free char *entry = NULL, *opts = NULL, *bin = rv_toml_quote(o->runtime_path);
    char runc[512], runc_opts[512], ours[512], ours_opts[512], ctd[256];
    bool fresh;
    int version = config_version(o, doc, &fresh, err);

    if (version < 0 || !bin)
        return version < 0 ? -1 : rv_fail(err, ENOMEM, "containerd");
    const char *cri = version == 3 ? CRI_V3 : CRI_V2;
    if (rv_snprintf(ctd, sizeof(ctd), "%s.containerd", cri) < 0 ||
        rv_snprintf(runc, sizeof(runc), "%s.runtimes.runc", ctd) < 0 ||
        rv_snprintf(runc_opts, sizeof(runc_opts), "%s.options", runc) < 0 ||
        rv_snprintf(ours, sizeof(ours), "%s.runtimes.resview", ctd) < 0 ||
        rv_snprintf(ours_opts, sizeof(ours_opts), "%s.options", ours) < 0)
        return rv_fail(err, ENAMETOOLONG, "containerd");
    if (fresh && rv_plan_block(plan, version == 3 ? "version = 3\n\n" : "version = 2\n\n", err) < 0)
        return -1;
    if (rv_strcatf(&entry, err, "runtime_type = \"io.containerd.runc.v2\"\n") < 0 ||
        rv_plan_copy_keys(doc, runc, entry_skip, &entry, err) < 0 ||
        rv_strcatf(&entry, err, "pod_annotations = [\"resview.io/*\"]\n"
                   "container_annotations = [\"resview.io/*\"]\n") < 0 ||
        rv_strcatf(&opts, err, "BinaryName = %s\n", bin) < 0 ||
        rv_plan_copy_keys(doc, runc_opts, opt_skip, &opts, err) < 0)
        return -1;
    if (rv_plan_add_table(plan, doc, ours, entry, err) < 0 ||
        rv_plan_add_table(plan, doc, ours_opts, opts, err) < 0)
        return -1;
    if (o->set_default && rv_plan_set_key(plan, doc, ctd, "default_runtime_name", "\"resview\"", err) < 0)
        return -1;
    return 0;
}

static int verify(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_error *err)
{
    bool fresh;
    int version = config_version(o, doc, &fresh, err);
    char key[512];

    if (version < 0)
        return -1;
    if (rv_snprintf(key, sizeof(key), "%s.containerd.runtimes.resview.options.BinaryName",
                    version == 3 ? CRI_V3 : CRI_V2) < 0)
        return rv_fail(err, ENAMETOOLONG, "containerd");
    const struct rv_toml_item *it = rv_toml_get(doc, key);
    if (!it || !rv_toml_is_string(doc, it, o->runtime_path))
        return rv_fail(err, 0, "`%s` is not `%s`", key, o->runtime_path);
    return 0;
}

static const char *const status_keys[] = { CRI_V2 ".containerd.runtimes.resview.options.BinaryName",
                                      CRI_V3 ".containerd.runtimes.resview.options.BinaryName", NULL };

const struct rv_engine rv_engine_containerd = {
    .name = "containerd",
    .default_config = "/etc/containerd/config.toml",
    .reload = "restart containerd to load it (systemctl restart containerd); "
              "Kubernetes: kubectl apply -f hooks/kubernetes/runtimeclass.yaml",
    .toml_build = build,
    .toml_verify = verify,
    .toml_status_keys = status_keys,
    .marks_lines = true,
};
