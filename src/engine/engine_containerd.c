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
#include <stdlib.h>
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

int rv_containerd_config_version(const struct rv_toml *doc)
{
    const struct rv_toml_item *v = rv_toml_get(doc, "version");

    if (!v || v->kind != RV_TOML_VALUE)
        return 0;
    if (v->val_end - v->val_start == 1 && (doc->text[v->val_start] == '2' || doc->text[v->val_start] == '3'))
        return doc->text[v->val_start] - '0';
    return -1;
}

static int config_version(const struct rv_engine_opts *o, const struct rv_toml *doc, bool *fresh,
                          struct rv_error *err)
{
    int version = rv_containerd_config_version(doc);

    *fresh = false;
    if (version > 0)
        return version;
    if (version < 0) {
        const struct rv_toml_item *v = rv_toml_get(doc, "version");
        return rv_fail(err, 0, "config `version = %.*s` is not supported (2: containerd 1.x, 3: "
                       "containerd 2.x); migrate it with `containerd config migrate`",
                       (int)(v->val_end - v->val_start), doc->text + v->val_start);
    }
    if (doc->n > 0)
        return rv_fail(err, 0, "config without `version` (version 1) is not supported; migrate it "
                       "with `containerd config migrate` or add `version = 2`");
    *fresh = true;
    if (o->containerd_version == 2 || o->containerd_version == 3)
        return o->containerd_version;
    return containerd_major() >= 2 ? 3 : 2;
}

/* Our entry without our markers: a tool that rewrites the whole file (NVIDIA's
 * toolkit: go-toml drops every comment) kept its tables but not the lines
 * that say they are ours. The BinaryName is resview-runtime as installed, a
 * path nothing else names: the entry is taken as ours, left where it is. */
static bool adopted(const struct rv_engine_opts *o, const struct rv_toml *doc, const char *ours_opts)
{
    char key[600];
    const struct rv_toml_item *it;

    /* a file that still has a resview marker was not rewritten: an entry of
     * ours without one is the operator's now (src/cli/resview.8.md "resview configure") */
    if (memmem(doc->text, doc->len, "resview-begin", 13))
        return false;
    if (rv_snprintf(key, sizeof(key), "%s.BinaryName", ours_opts) < 0)
        return false;
    it = rv_toml_get(doc, key);
    return it && it->kind == RV_TOML_VALUE && rv_toml_is_string(doc, it, o->runtime_path);
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
    if (!adopted(o, doc, ours_opts) &&
        (rv_plan_add_table(plan, doc, ours, entry, err) < 0 ||
         rv_plan_add_table(plan, doc, ours_opts, opts, err) < 0))
        return -1;
    if (o->set_default && rv_plan_set_key(plan, doc, ctd, "default_runtime_name", "\"resview\"", err) < 0)
        return -1;
    return 0;
}

/* Where a table's lines end: the next header, or the end of the text. */
static size_t table_end(const struct rv_toml *doc, const struct rv_toml_item *t)
{
    size_t end = doc->len;

    for (size_t i = 0; i < doc->n; i++) {
        const struct rv_toml_item *it = &doc->items[i];
        if ((it->kind == RV_TOML_TABLE || it->kind == RV_TOML_ARRAY_TABLE) && it->line_start > t->line_start &&
            it->line_start < end)
            end = it->line_start;
    }
    return end;
}

/* Uninstall, after the marked lines are out: an adopted entry (see adopted())
 * goes too - its two tables, and a default_runtime_name naming it - so that
 * the running containerd loses it. Everything else stays byte for byte. */
static int drop_adopted(const struct rv_engine_opts *o, struct rv_edit_result *res, struct rv_error *err)
{
    struct rv_toml doc;
    struct { size_t start, end; } cut[3];
    int n = 0;

    if (!res->text || rv_toml_scan(res->text, res->len, &doc, err) < 0)
        return res->text ? rv_wrap(err, "not valid TOML") : 0;
    for (int v = 2; v <= 3; v++) {
        char t[512], to[512], d[512];
        const char *cri = v == 3 ? CRI_V3 : CRI_V2;
        const struct rv_toml_item *a, *b, *dflt;
        if (rv_snprintf(t, sizeof(t), "%s.containerd.runtimes.resview", cri) < 0 ||
            rv_snprintf(to, sizeof(to), "%s.options", t) < 0 ||
            rv_snprintf(d, sizeof(d), "%s.containerd.default_runtime_name", cri) < 0)
            continue;
        if (!adopted(o, &doc, to))
            continue;
        a = rv_toml_get(&doc, t);
        b = rv_toml_get(&doc, to);
        if (!a || !b || a->kind != RV_TOML_TABLE || b->kind != RV_TOML_TABLE) {
            rv_toml_free(&doc);
            return rv_fail(err, 0, "`[%s]` is not where resview can take it out (not two plain tables); "
                           "remove it by hand", t);
        }
        cut[n].start = a->line_start;
        cut[n++].end = table_end(&doc, a);
        cut[n].start = b->line_start;
        cut[n++].end = table_end(&doc, b);
        dflt = rv_toml_get(&doc, d);
        if (dflt && dflt->kind == RV_TOML_VALUE && !dflt->multiline && rv_toml_is_string(&doc, dflt, "resview")) {
            cut[n].start = dflt->line_start;
            cut[n++].end = dflt->line_end;
        }
        break;
    }
    rv_toml_free(&doc);
    if (!n)
        return 0;
    /* cut from the end, so earlier offsets stay valid */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (cut[j].start > cut[i].start) {
                size_t s0 = cut[i].start, e0 = cut[i].end;
                cut[i] = cut[j];
                cut[j].start = s0;
                cut[j].end = e0;
            }
    for (int i = 0; i < n; i++) {
        memmove(res->text + cut[i].start, res->text + cut[i].end, res->len - cut[i].end);
        res->len -= cut[i].end - cut[i].start;
    }
    res->text[res->len] = '\0';
    if (rv_toml_scan(res->text, res->len, &doc, err) < 0)
        return rv_wrap(err, "without resview's adopted entry, not valid TOML (not written)");
    rv_toml_free(&doc);
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

static int edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists, const char *backup,
                size_t backup_len, struct rv_edit_result *res, struct rv_error *err)
{
    (void)backup;
    (void)backup_len;
    if (rv_toml_engine_edit(o, old, len, exists, build, verify, res, err) < 0)
        return -1;
    if (o->uninstall && !res->remove && drop_adopted(o, res, err) < 0) {
        free(res->text);
        res->text = NULL;
        return -1;
    }
    return 0;
}

const struct rv_engine rv_engine_containerd = {
    .name = "containerd",
    .default_config = "/etc/containerd/config.toml",
    .reload = "restart containerd to load it (systemctl restart containerd); "
              "Kubernetes: kubectl apply -f hooks/kubernetes/runtimeclass.yaml",
    .unload = "restart containerd (systemctl restart containerd): it reads the file only at start, and "
              "until then runs the removed runtime wherever it did, as its default too if it was that; "
              "Kubernetes: kubectl delete -f hooks/kubernetes/runtimeclass.yaml",
    .edit = edit,
    .toml_status_keys = status_keys,
    .marks_lines = true,
};
