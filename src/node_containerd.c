/* node_containerd.c - the runtime entry in containerd's configuration and a
 * restart only when the running containerd lacks it (node_containerd.h). */
#define _GNU_SOURCE
#include "resview/node_containerd.h"
#include "resview/cri.h"
#include "resview/engine.h"
#include "resview/hostexec.h"
#include "resview/json.h"
#include "resview/node_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CRI_TIMEOUT_MS 5000
#define RESTART_WAIT_S 120

bool rv_node_restart_valid(const char *r)
{
    if (strcmp(r, "none") == 0 || strcmp(r, "systemd") == 0)
        return true;
    if (strncmp(r, "systemd:", 8) == 0 && r[8])
        return strspn(r + 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@:") ==
               strlen(r + 8);
    return strncmp(r, "command:", 8) == 0 && r[8] == '/';
}

static const char *json_str(json_t *o, const char *const *path)
{
    for (; *path && o; path++)
        o = json_object_get(o, *path);
    return json_string_value(o);
}

int rv_node_containerd_effective(const struct rv_node_containerd *c, char *why, size_t size,
                                 struct rv_error *err)
{
    /* the CRI plugin's configuration as `crictl info` shows it (containerd 1.6/1.7 and 2.x) */
    static const char *const bin_path[] = { "containerd", "runtimes", "resview", "options",
                                            "BinaryName", NULL };
    static const char *const entry_path[] = { "containerd", "runtimes", "resview", "runtimeType", NULL };
    static const char *const dflt_path[] = { "containerd", "defaultRuntimeName", NULL };
    cleanup_json json_t *cfg = NULL;

    if (rv_cri_config(c->cri_socket, CRI_TIMEOUT_MS, &cfg, err) < 0)
        return -1;
    const char *bin = json_str(cfg, bin_path), *dflt = json_str(cfg, dflt_path);
    bool has_entry = json_str(cfg, entry_path) != NULL, is_default = dflt && strcmp(dflt, "resview") == 0;
    if (c->uninstall) {
        if (has_entry || is_default) {
            snprintf(why, size, "the running containerd still has the resview runtime%s",
                     is_default ? " as its default" : "");
            return 0;
        }
        return 1;
    }
    if (!bin || strcmp(bin, c->runtime_path) != 0) {
        snprintf(why, size, "the running containerd has %s%s%s", bin ? "BinaryName `" : "no resview runtime",
                 bin ? bin : "", bin ? "` for the resview runtime" : "");
        return 0;
    }
    if (c->set_default && !is_default) {
        snprintf(why, size, "the running containerd's default runtime is `%s`, not resview", dflt ? dflt : "?");
        return 0;
    }
    return 1;
}

static uint64_t file_hash(const char *path)
{
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    struct rv_error e;
    uint64_t h = 0xcbf29ce484222325ull;

    if (rv_engine_read(path, &text, &len, &exists, &e) < 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Whether a restart for this file content happened less than the guard time
 * ago (record: note one now). */
static bool restart_guarded(const struct rv_node_containerd *c, uint64_t hash, bool record)
{
    char line[64];
    uint64_t h;
    long long when;

    if (record) {
        cleanup_close int fd = open(c->guard, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        snprintf(line, sizeof(line), "%016" PRIx64 " %lld\n", hash, (long long)time(NULL));
        return fd >= 0 && write(fd, line, strlen(line)) > 0;
    }
    if (rv_read_small(c->guard, line, sizeof(line)) < 0 || sscanf(line, "%" SCNx64 " %lld", &h, &when) != 2)
        return false;
    return h == hash && time(NULL) - when < RV_NODE_RESTART_GUARD_S;
}

static int restart(const struct rv_node_containerd *c, struct rv_error *err)
{
    char unit[PATH_MAX];
    char *argv[4] = { NULL };

    if (strncmp(c->restart, "command:", 8) == 0) {
        argv[0] = (char *)c->restart + 8;
    } else {
        snprintf(unit, sizeof(unit), "%s", c->restart[7] == ':' ? c->restart + 8 : "containerd");
        argv[0] = "systemctl";
        argv[1] = "restart";
        argv[2] = unit;
    }
    rv_node_say("containerd: restarting it on the host (restart mode %s): %s%s%s", c->restart, argv[0],
                argv[1] ? " restart " : "", argv[1] ? unit : "");
    int r = rv_host_exec(c->host_pid, argv, RESTART_WAIT_S * 1000, err);
    if (r < 0)
        return -1;
    if (r != 0)
        return rv_fail(err, 0, "`%s` exited with status %d", argv[0], r);
    return 0;
}

/* The file is right: make the running containerd use it. */
static int make_effective(const struct rv_node_containerd *c, unsigned *restarted, struct rv_error *err)
{
    char why[512] = "";
    long deadline = rv_now_ms() + RESTART_WAIT_S * 1000L;
    int r;

    while ((r = rv_node_containerd_effective(c, why, sizeof(why), err)) < 0) {
        if (rv_now_ms() > deadline)
            return rv_wrap(err, "containerd does not answer");
        if (!rv_node_nap(1000))
            return rv_fail(err, EINTR, "stopped");
    }
    if (r == 1) {
        rv_node_say("containerd: runs with the configuration wanted; not restarted");
        return 0;
    }
    if (strcmp(c->restart, "none") == 0)
        return rv_fail(err, 0, "%s; restart mode none: restart containerd on this node yourself "
                       "(systemctl restart containerd; k3s: systemctl restart k3s or k3s-agent; rke2: "
                       "systemctl restart rke2-server or rke2-agent) - this agent waits for it", why);
    uint64_t hash = file_hash(c->config);
    if (restart_guarded(c, hash, false))
        return rv_fail(err, 0, "%s, although it was restarted for this configuration less than %d "
                       "minutes ago: is `%s` the file containerd reads? (k3s and rke2 generate "
                       "theirs from config.toml.tmpl: point RESVIEW_NODE_CONTAINERD_CONFIG there)", why,
                       RV_NODE_RESTART_GUARD_S / 60, c->config);
    rv_node_say("containerd: %s", why);
    restart_guarded(c, hash, true);
    long t0 = rv_now_ms();
    if (restart(c, err) < 0)
        return -1;
    (*restarted)++;
    deadline = rv_now_ms() + RESTART_WAIT_S * 1000L;
    for (;;) {
        char name[64], version[64];
        struct rv_error e;
        r = -1;   /* a containerd that does not answer yet says nothing about its configuration */
        if (rv_cri_version(c->cri_socket, CRI_TIMEOUT_MS, name, sizeof(name), version, sizeof(version), &e) == 0 &&
            (r = rv_node_containerd_effective(c, why, sizeof(why), &e)) == 1) {
            rv_node_say("containerd: %s %s answers on `%s` %ld ms after the restart, with the "
                        "configuration wanted", name, version, c->cri_socket, rv_now_ms() - t0);
            return 0;
        }
        if (r == 0)
            return rv_fail(err, 0, "containerd was restarted but %s: is `%s` the file containerd reads?",
                           why, c->config);
        if (rv_now_ms() > deadline)
            return rv_fail(err, ETIMEDOUT, "containerd does not answer on `%s` %d s after the restart: %s",
                           c->cri_socket, RESTART_WAIT_S, e.msg);
        if (!rv_node_nap(100))
            return rv_fail(err, EINTR, "stopped");
    }
}

int rv_node_containerd_apply(const struct rv_node_containerd *c, unsigned *restarted, struct rv_error *err)
{
    struct rv_engine_opts o = {
        .config = c->config, .runtime_path = c->runtime_path, .hook_path = c->hook_path,
        .set_default = c->set_default, .uninstall = c->uninstall,
    };

    if (!c->uninstall && access(c->config, F_OK) < 0)
        return rv_fail(err, errno, "`%s` (containerd's configuration)%s", c->config,
                       errno == ENOENT ? ": containerd runs on built-in defaults; write them first "
                       "(containerd config default > FILE) or set RESVIEW_NODE_CONTAINERD_CONFIG" : "");
    if (rv_engine_apply(&rv_engine_containerd, &o, err) < 0)
        return -1;
    fflush(stdout);
    return make_effective(c, restarted, err);
}
