/* engine_crio.c - the `resview` runtime for CRI-O: a
 * [crio.runtime.runtimes.resview] table (by default in a drop-in file of its
 * own under /etc/crio/crio.conf.d/, which CRI-O merges table by table). */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define OURS "crio.runtime.runtimes.resview"

static int build(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_toml_plan *plan,
                 struct rv_error *err)
{
    static const char *const skip[] = { "runtime_path", "runtime_type", "allowed_annotations", NULL };
    cleanup_free char *body = NULL, *bin = rv_toml_quote(o->runtime_path);

    if (!bin)
        return rv_fail(err, ENOMEM, "crio");
    /* 0.1's list had no resview.io/gomaxprocs: o->v01 writes it as 0.1 did */
    if (rv_strcatf(&body, err, "runtime_path = %s\nruntime_type = \"oci\"\n", bin) < 0 ||
        rv_plan_copy_keys(doc, "crio.runtime.runtimes.runc", skip, &body, err) < 0 ||
        rv_strcatf(&body, err, "allowed_annotations = [\"resview.io/lxcfs\", \"resview.io/env\", %s"
                   "\"resview.io/fuse\"]\n", o->v01 ? "" : "\"resview.io/gomaxprocs\", ") < 0)
        return -1;
    if (rv_plan_add_table(plan, doc, OURS, body, err) < 0)
        return -1;
    if (o->set_default && rv_plan_set_key(plan, doc, "crio.runtime", "default_runtime", "\"resview\"", err) < 0)
        return -1;
    return 0;
}

static int verify(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_error *err)
{
    const struct rv_toml_item *it = rv_toml_get(doc, OURS ".runtime_path");
    if (!it || !rv_toml_is_string(doc, it, o->runtime_path))
        return rv_fail(err, 0, "`" OURS ".runtime_path` is not `%s`", o->runtime_path);
    return 0;
}

static const char *const status_keys[] = { OURS ".runtime_path", NULL };

const struct rv_engine rv_engine_crio = {
    .name = "crio",
    .default_config = "/etc/crio/crio.conf.d/99-resview.conf",
    .reload = "restart CRI-O to load it (systemctl restart crio); "
              "Kubernetes: kubectl apply -f hooks/kubernetes/runtimeclass.yaml",
    .unload = "restart CRI-O (systemctl restart crio): until then it runs the removed runtime wherever "
              "it did, as its default too if it was that; "
              "Kubernetes: kubectl delete -f hooks/kubernetes/runtimeclass.yaml",
    .toml_build = build,
    .toml_verify = verify,
    .toml_status_keys = status_keys,
    .marks_lines = true,
};
