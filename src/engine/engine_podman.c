/* engine_podman.c - `resview` in podman's containers.conf [engine.runtimes]
 * (by default a drop-in of its own under /etc/containers/containers.conf.d/). */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int build(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_toml_plan *plan,
                 struct rv_error *err)
{
    cleanup_free char *bin = rv_toml_quote(o->runtime_path), *list = NULL;

    if (!bin || asprintf(&list, "[%s]", bin) < 0)
        return rv_fail(err, ENOMEM, "podman");
    if (rv_plan_set_key(plan, doc, "engine.runtimes", "resview", list, err) < 0)
        return -1;
    if (o->set_default && rv_plan_set_key(plan, doc, "engine", "runtime", "\"resview\"", err) < 0)
        return -1;
    return 0;
}

static int verify(const struct rv_engine_opts *o, const struct rv_toml *doc, struct rv_error *err)
{
    const struct rv_toml_item *it = rv_toml_get(doc, "engine.runtimes.resview");
    cleanup_free char *bin = rv_toml_quote(o->runtime_path), *raw = NULL;

    if (!it || !bin || !(raw = rv_toml_raw(doc, it)) || !strstr(raw, bin))
        return rv_fail(err, 0, "`engine.runtimes.resview` does not name `%s`", o->runtime_path);
    return 0;
}

static const char *const status_keys[] = { "engine.runtimes.resview", NULL };

const struct rv_engine rv_engine_podman = {
    .name = "podman",
    .default_config = "/etc/containers/containers.conf.d/99-resview.conf",
    .reload = "nothing to restart: the next podman command reads it (podman run --runtime resview ...)",
    .unload = "nothing to restart: the next podman command reads the change, its default runtime too",
    .toml_build = build,
    .toml_verify = verify,
    .toml_status_keys = status_keys,
    .marks_lines = true,
};
