/* test_hook.c - the hook's input: OCI state, rootfs path, views record. */
#define _GNU_SOURCE
#include "resview/hook.h"
#include "unit.h"

#include <stdlib.h>
#include <sys/stat.h>

static int parse(const char *s, struct rv_hook_state *st, struct rv_error *err)
{
    return rv_hook_parse_state(s, strlen(s), st, err);
}

int main(void)
{
    struct rv_hook_state st;
    struct rv_error err;
    char out[4096], dir[] = "/tmp/rv-unit-hook.XXXXXX", path[512];

    ok(parse("{\"ociVersion\":\"1.0.2\",\"id\":\"abc\",\"status\":\"created\",\"pid\":42,"
             "\"bundle\":\"/b\",\"annotations\":{\"x\":\"y\"}}", &st, &err) == 0,
       "runc's state parses");
    ok_str(st.id, "abc", "id");
    ok(st.pid == 42, "pid");
    ok_str(st.bundle, "/b", "bundle");
    ok(parse("{\"id\":\"../x\",\"pid\":1,\"bundle\":\"/b\"}", &st, &err) < 0 &&
           strstr(err.msg, "state: id"), "id with a slash refused");
    ok(parse("{\"id\":\"..\",\"pid\":1,\"bundle\":\"/b\"}", &st, &err) < 0, "id `..` refused");
    ok(parse("{\"pid\":1,\"bundle\":\"/b\"}", &st, &err) < 0, "missing id refused");
    ok(parse("{\"id\":\"a\",\"pid\":0,\"bundle\":\"/b\"}", &st, &err) < 0, "pid 0 refused");
    ok(parse("{\"id\":\"a\",\"pid\":-5,\"bundle\":\"/b\"}", &st, &err) < 0, "negative pid refused");
    ok(parse("{\"id\":\"a\",\"pid\":\"42\",\"bundle\":\"/b\"}", &st, &err) < 0, "string pid refused");
    ok(parse("{\"id\":\"a\",\"pid\":4294967338,\"bundle\":\"/b\"}", &st, &err) < 0,
       "pid beyond int32 refused");
    ok(parse("{\"id\":\"a\",\"pid\":1,\"bundle\":\"rel\"}", &st, &err) < 0 &&
           strstr(err.msg, "absolute"), "relative bundle refused");
    ok(parse("[1,2]", &st, &err) < 0, "not an object");
    ok(parse("{\"id\":", &st, &err) < 0, "truncated JSON");

    /* rootfs: relative to the bundle, or absolute; resolved */
    ok(mkdtemp(dir) != NULL, "temp dir");
    snprintf(path, sizeof(path), "%s/rootfs", dir);
    mkdir(path, 0755);
    {
        cleanup_json json_t *spec = json_pack("{s:{s:s}}", "root", "path", "rootfs");
        cleanup_json json_t *abs = json_pack("{s:{s:s}}", "root", "path", path);
        cleanup_json json_t *none = json_pack("{s:{}}", "root");
        cleanup_json json_t *missing = json_pack("{s:{s:s}}", "root", "path", "nope");
        ok(rv_hook_rootfs(spec, dir, out, sizeof(out), &err) == 0 && strcmp(out, path) == 0,
           "relative root.path joined to the bundle");
        ok(rv_hook_rootfs(abs, "/elsewhere", out, sizeof(out), &err) == 0 &&
               strcmp(out, path) == 0, "absolute root.path kept");
        ok(rv_hook_rootfs(none, dir, out, sizeof(out), &err) < 0, "no root.path: error");
        ok(rv_hook_rootfs(missing, dir, out, sizeof(out), &err) < 0 && strstr(err.msg, "nope"),
           "missing rootfs: error names it");
    }
    /* the record */
    {
        struct rv_inject *req = calloc(1, sizeof(*req));
        cleanup_json json_t *rec = NULL;
        req->pid = 7;
        req->start_time = 99;
        snprintf(req->rootfs, sizeof(req->rootfs), "/r");
        snprintf(req->lxcfs_root, sizeof(req->lxcfs_root), "/var/lib/lxcfs");
        rv_inject_add(req, "proc/meminfo", "proc/meminfo");
        rv_inject_add(req, "proc/cpuinfo", "proc/cpuinfo");
        rv_inject_add(req, "proc/stat", "proc/stat");
        req->views[0].state = RV_VIEW_MOUNTED;
        req->views[1].state = RV_VIEW_PRESENT;
        req->views[2].state = RV_VIEW_SKIPPED;
        snprintf(req->views[2].why, sizeof(req->views[2].why), "target is a symlink");
        rec = rv_views_record(req, "ok", NULL);
        ok(rec && json_integer_value(json_object_get(rec, "pid")) == 7 &&
               json_integer_value(json_object_get(rec, "start_time")) == 99,
           "record: pid and start time");
        ok(rec && json_array_size(json_object_get(rec, "wanted")) == 3 &&
               json_array_size(json_object_get(rec, "mounted")) == 2,
           "record: wanted 3, mounted (incl. already there) 2");
        ok_str(json_string_value(json_object_get(json_object_get(rec, "skipped"), "proc/stat")),
               "target is a symlink", "record: why a view was skipped");
        free(req);
    }
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    if (system(path) != 0)
        printf("# cleanup failed\n");
    return unit_done();
}
