/* node_containerd.c - the runtime entry in containerd's configuration and a
 * restart only when the running containerd lacks it (node_containerd.h). */
#define _GNU_SOURCE
#include "resview/node_containerd.h"
#include "cri.h"
#include "resview/engine.h"
#include "resview/engine_toml.h"
#include "hostexec.h"
#include "resview/json.h"
#include "resview/node_agent.h"
#include "resview/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CRI_TIMEOUT_MS 5000
#define NV_CONF_MAX (1u << 20)
#define NV_TOOLKIT_ROOT "/usr/local/nvidia/toolkit"   /* the GPU operator's default */
#define RESTART_WAIT_S 120

static bool nvidia_binary(const char *bin);
static uint64_t full_signature(const struct rv_node_containerd *c, const char *nvidia_bin);
static int dropin_apply(const struct rv_node_containerd *c, struct rv_error *err);

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

/* Uninstall, the running containerd still has the `resview` runtime (why
 * says so): whether a restart must wait. containerd 2.x looks the runtime
 * handler of a pod up in its configuration at every exec into it (the exec's
 * IO type: internal/cri/server/container_execsync.go), so restarted without
 * the entry it refuses `kubectl exec` and exec probes into the pods of the
 * runtime class that still run ("no runtime for \"resview\" is configured");
 * containerd 1.x execs through the shim alone. 3 wait (why says for what),
 * 0 restart, -1 containerd does not answer (err). */
static int held_by_pods(const struct rv_node_containerd *c, char *why, size_t size, struct rv_error *err)
{
    char name[64], version[64];
    unsigned pods;

    if (rv_cri_version(c->cri_socket, CRI_TIMEOUT_MS, name, sizeof(name), version, sizeof(version), err) < 0)
        return -1;
    if (atoi(version + (version[0] == 'v')) < 2)
        return 0;
    if (rv_cri_ready_pods(c->cri_socket, CRI_TIMEOUT_MS, "resview", &pods, err) < 0)
        return -1;
    if (pods == 0)
        return 0;
    size_t l = strlen(why);
    snprintf(why + l, size - l, ", and %u pod%s of the runtime class `resview` still run%s: %s %s needs the "
             "entry to exec into them (kubectl exec, exec probes), so it is restarted once they are gone",
             pods, pods == 1 ? "" : "s", pods == 1 ? "s" : "", name, version);
    return 3;
}

/* rv_node_containerd_effective; nvdef (when not NULL): the BinaryName of the
 * running default when that is NVIDIA's runtime, else "" (install mode) */
static int effective(const struct rv_node_containerd *c, char *why, size_t size, char *nvdef, size_t nvsize,
                     struct rv_error *err)
{
    /* the CRI plugin's configuration as `crictl info` shows it (containerd 1.6/1.7 and 2.x) */
    static const char *const bin_path[] = { "containerd", "runtimes", "resview", "options",
                                            "BinaryName", NULL };
    static const char *const entry_path[] = { "containerd", "runtimes", "resview", "runtimeType", NULL };
    static const char *const dflt_path[] = { "containerd", "defaultRuntimeName", NULL };
    cleanup_json json_t *cfg = NULL;

    if (nvdef)
        nvdef[0] = '\0';
    if (rv_cri_config(c->cri_socket, CRI_TIMEOUT_MS, &cfg, err) < 0)
        return -1;
    const char *bin = json_str(cfg, bin_path), *dflt = json_str(cfg, dflt_path);
    bool has_entry = json_str(cfg, entry_path) != NULL, is_default = dflt && strcmp(dflt, "resview") == 0;
    if (c->uninstall) {
        struct rv_node_gpu g;
        struct rv_error e;
        if ((has_entry || is_default) && rv_node_gpu_detect(c->config, c->runtime_path, &g, &e) == 0 &&
            g.cri_from_import && (g.names_resview || strcmp(g.dflt, "resview") == 0)) {
            /* resview's own lines are out; an import that is not ours (NVIDIA's
             * 1.18 drop-in copies the merged CRI table) still names it: a
             * restart cannot take it out, and that file is not ours to edit */
            if (strcmp(g.dflt, "resview") == 0) {
                rv_fail(err, 0, "`%s` (not resview's: NVIDIA's toolkit copied the CRI configuration while "
                        "resview was installed) makes resview containerd's default runtime; restart NVIDIA's "
                        "toolkit (its pod) so that it writes that file again, then this agent goes on",
                        g.cri_file);
                return 2;
            }
            if (!is_default) {
                rv_node_say("containerd: `%s` (not resview's: NVIDIA's toolkit copied the CRI configuration "
                            "while resview was installed) keeps a `resview` runtime entry until the toolkit "
                            "writes it again; nothing runs it by default", g.cri_file);
                return 1;
            }
            /* the running default is still resview's: a restart takes it out */
        }
        if (has_entry || is_default) {
            snprintf(why, size, "the running containerd still has the resview runtime%s",
                     is_default ? " as its default" : "");
            return has_entry ? held_by_pods(c, why, size, err) : 0;
        }
        return 1;
    }
    const char *dbin_path[] = { "containerd", "runtimes", dflt ? dflt : "", "options", "BinaryName", NULL };
    const char *dbin = dflt && !is_default ? json_str(cfg, dbin_path) : NULL;
    if (nvdef && dbin && nvidia_binary(dbin))
        snprintf(nvdef, nvsize, "%s", dbin);
    if (!bin || strcmp(bin, c->runtime_path) != 0) {
        snprintf(why, size, "the running containerd has %s%s%s", bin ? "BinaryName `" : "no resview runtime",
                 bin ? bin : "", bin ? "` for the resview runtime" : "");
        if (nvdef)   /* a restart is needed anyway: it brings resview's default */
            nvdef[0] = '\0';
        return 0;
    }
    if (c->set_default && !is_default) {
        /* NVIDIA's toolkit made its runtime the default, and that runtime runs
         * resview next (toolkit 1.18 takes its next runtime from containerd's
         * default when it sets up: resview's; for 1.13 the agent puts resview
         * first in NVIDIA's runtimes, make_effective): every pod goes through
         * both, and taking the default back would only cost a restart */
        char conf[PATH_MAX];
        if (dbin && rv_node_nvidia_next(c->host_pid, dbin, c->runtime_path, conf, sizeof(conf)) == 1) {
            snprintf(why, size, "its default runtime `%s` is NVIDIA's, which runs resview next (`%s`)", dflt,
                     conf);
            return 1;
        }
        snprintf(why, size, "the running containerd's default runtime is `%s`, not resview%s", dflt ? dflt : "?",
                 dbin && nvidia_binary(dbin) ? ", and NVIDIA's runtime it runs does not run resview next" : "");
        return 0;
    }
    return 1;
}

int rv_node_containerd_effective(const struct rv_node_containerd *c, char *why, size_t size,
                                 struct rv_error *err)
{
    return effective(c, why, size, NULL, 0, err);
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

/* --- resview's edit of NVIDIA's runtime configuration, where it may be --- */

static void nv_dirname(const char *bin, char *dir, size_t size)
{
    snprintf(dir, size, "%s", bin);
    *(strrchr(dir, '/') ? strrchr(dir, '/') : dir) = '\0';
}

/* The NVIDIA directories whose runtime configuration resview may have edited:
 * the one it recorded, NVIDIA's runtime in containerd's files, the GPU
 * operator's default (last: a guess). */
static int nv_candidates(const struct rv_node_containerd *c, char dirs[3][PATH_MAX], bool guess[3])
{
    char cand[3][PATH_MAX] = { "", "", NV_TOOLKIT_ROOT };
    struct rv_node_gpu g;
    struct rv_error e;
    int n = 0;

    if (c->nv_record && rv_read_small(c->nv_record, cand[0], sizeof(cand[0])) < 0)
        cand[0][0] = '\0';
    if (rv_node_gpu_detect(c->config, c->runtime_path, &g, &e) == 0 && g.runtime[0])
        nv_dirname(g.runtime, cand[1], sizeof(cand[1]));
    for (int i = 0; i < 3; i++) {
        bool dup = cand[i][0] != '/';
        for (int j = 0; j < n && !dup; j++)
            dup = strcmp(dirs[j], cand[i]) == 0;
        if (!dup) {
            guess[n] = i == 2;
            snprintf(dirs[n++], PATH_MAX, "%s", cand[i]);
        }
    }
    return n;
}

/* resview's edit taken out of NVIDIA's runtime configuration wherever it is:
 * not needed (the running default is not NVIDIA's runtime), or uninstall. */
static int nv_restore(const struct rv_node_containerd *c, const char *reason, struct rv_error *err)
{
    char dirs[3][PATH_MAX], conf[PATH_MAX];
    bool guess[3], failed = false;
    int n = nv_candidates(c, dirs, guess);

    for (int i = 0; i < n; i++) {
        struct rv_error e = { 0 };
        int r = rv_node_nvidia_edit(c->host_pid, dirs[i], c->runtime_path, false, conf, sizeof(conf), &e);
        /* a directory guessed, or an edit that is not needed: not a reason to stop; at uninstall
         * one that resview made and cannot put back is (the agent tries again) */
        if (r < 0 && !guess[i] && c->uninstall) {
            *err = e;
            return -1;
        }
        if (r < 0 && !guess[i]) {
            rv_node_say("containerd: cannot put back NVIDIA's runtime configuration in `%s`: %s", dirs[i], e.msg);
            failed = true;
        }
        if (r == 1)
            rv_node_say("containerd: `%s` put back as NVIDIA's toolkit wrote it, byte for byte (%s)", conf, reason);
    }
    if (c->nv_record && !failed)
        unlink(c->nv_record);
    return 0;
}

/* The running default is NVIDIA's runtime (nvbin), which does not run resview
 * next: put resview first in its runtimes instead of taking the default back
 * (a restart; NVIDIA's toolkit 1.13 on its defaults would cost two per start).
 * 1 done (or already so), 0 not possible (why says so), -1 err. */
static int nv_chain(const struct rv_node_containerd *c, const char *nvbin, char *why, size_t size,
                    struct rv_error *err)
{
    char dir[PATH_MAX], conf[PATH_MAX];

    nv_dirname(nvbin, dir, sizeof(dir));
    int r = rv_node_nvidia_edit(c->host_pid, dir, c->runtime_path, true, conf, sizeof(conf), err);
    if (r < 0)
        return -1;
    if (r == 2) {
        size_t l = strlen(why);
        snprintf(why + l, size - l, "; resview cannot put itself first in NVIDIA's runtimes: %s%s%s",
                 conf[0] ? "no `nvidia-container-runtime.runtimes` list in `" : "no configuration of NVIDIA's "
                 "toolkit beside it", conf[0] ? conf : "", conf[0] ? "` (or no such file)" : "");
        return 0;
    }
    if (c->nv_record) {
        cleanup_close int fd = open(c->nv_record, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || write(fd, dir, strlen(dir)) < 0)
            rv_node_say("containerd: cannot record `%s` in `%s`: %s", dir, c->nv_record, strerror(errno));
    }
    if (r == 1)
        rv_node_say("containerd: its default runtime is NVIDIA's `%s`, which ran runc next: put resview's "
                    "runtime first in its runtimes (`%s`; NVIDIA's runtime reads it at every start, no restart; "
                    "the file as NVIDIA's toolkit wrote it kept as `%s` beside it)", nvbin, conf, RV_NODE_NV_BACKUP);
    return 1;
}

/* The file is right: make the running containerd use it. */
static int make_effective(const struct rv_node_containerd *c, unsigned *restarted, struct rv_error *err)
{
    char why[512] = "", nvdef[PATH_MAX] = "";
    long deadline = rv_now_ms() + RESTART_WAIT_S * 1000L;
    int r;

    while ((r = effective(c, why, sizeof(why), nvdef, sizeof(nvdef), err)) < 0) {
        if (rv_now_ms() > deadline)
            return rv_wrap(err, "containerd does not answer");
        if (!rv_node_nap(1000))
            return rv_fail(err, EINTR, "stopped");
    }
    if (r == 0 && nvdef[0] && c->set_default && !c->uninstall) {
        int k = nv_chain(c, nvdef, why, sizeof(why), err);
        /* NVIDIA's default now runs resview next: a drop-in of resview's written
         * for want of it (beside NVIDIA's 1.18 drop-in) is not needed */
        if (k < 0 || (k == 1 && dropin_apply(c, err) < 0))
            return -1;
        while (k == 1 && (r = effective(c, why, sizeof(why), nvdef, sizeof(nvdef), err)) < 0) {
            if (rv_now_ms() > deadline)
                return rv_wrap(err, "containerd does not answer");
            if (!rv_node_nap(1000))
                return rv_fail(err, EINTR, "stopped");
        }
    }
    if (r == 1) {
        /* resview's edit of NVIDIA's runtimes is kept only while it is what makes the default give views */
        if ((!nvdef[0] || !c->set_default || c->uninstall) &&
            nv_restore(c, "the running default is not NVIDIA's runtime", err) < 0)
            return -1;
        rv_node_say("containerd: runs with the configuration wanted%s%s; not restarted", why[0] ? ": " : "", why);
        return 0;
    }
    if (r == 2)   /* a restart would not help (err says why) */
        return -1;
    if (r == 3) {  /* uninstall: pods of the runtime class first (held_by_pods) */
        rv_fail(err, 0, "%s", why);
        return 1;
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
            (r = effective(c, why, sizeof(why), nvdef, sizeof(nvdef), &e)) == 2) {
            *err = e;
            return -1;
        }
        if (r == 3)   /* the entry is still there after the restart */
            r = 0;
        if (r == 1) {
            rv_node_say("containerd: %s %s answers on `%s` %ld ms after the restart, with the "
                        "configuration wanted", name, version, c->cri_socket, rv_now_ms() - t0);
            if (!c->uninstall && (!nvdef[0] || !c->set_default) &&
                nv_restore(c, "the running default is not NVIDIA's runtime", err) < 0)
                return -1;
            /* the guard is for restarts that did not help: this one did, and the
             * same file may need one again after another tool's restart (NVIDIA's
             * toolkit writing its default, then resview its own, once each) */
            restart_guarded(c, 0, true);
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

/* An imported file that holds the CRI plugin's table (NVIDIA's toolkit 1.18
 * writes its drop-in as a copy of the whole table): containerd 1.x replaces
 * the table of config.toml with that file's, so resview's entry in
 * config.toml alone would not be in effect; 2.x merges key by key, so only
 * what that file sets itself counts against it (a default, a stale resview
 * entry; rv_node_gpu_detect). Where resview's entry or default is not in
 * effect, resview writes its own drop-in beside it, merged after it: a copy
 * of that file with resview's entry (and default). Otherwise, or on
 * uninstall, any drop-in of ours is removed. */
static int dropin_apply(const struct rv_node_containerd *c, struct rv_error *err)
{
    struct rv_node_gpu g;
    char path[PATH_MAX], dir[PATH_MAX];
    const char *base;

    if (rv_node_gpu_detect(c->config, c->runtime_path, &g, err) < 0)
        return -1;
    /* needed only when that file lacks what resview wants: its entry, and the
     * default (resview's, or NVIDIA's running resview next). A copy of a file
     * that another tool rewrites hides that tool's next changes until it is
     * copied again and containerd restarted once more: none when not needed */
    bool need = !c->uninstall && g.cri_from_import &&
                (!g.resview_ours || (c->set_default && strcmp(g.dflt, "resview") != 0 &&
                                     !rv_node_gpu_default_chains(c, &g)));
    if (g.own_dropin[0] && (!need ||
                            strcmp(dirname(strcpy(dir, g.cri_file)), dirname(strcpy(path, g.own_dropin))) != 0)) {
        if (unlink(g.own_dropin) < 0 && errno != ENOENT)
            return rv_fail(err, errno, "remove `%s`", g.own_dropin);
        rv_node_say("containerd: removed resview's drop-in `%s`%s%s", g.own_dropin,
                    need || c->uninstall || !g.cri_from_import ? "" : ": resview's entry is in effect without it",
                    need || c->uninstall || !g.cri_from_import || !c->set_default ? "" :
                    " and a default that is resview or runs it next");
    }
    if (!need)
        return 0;
    snprintf(dir, sizeof(dir), "%s", g.cri_file);
    base = strrchr(g.cri_file, '/') ? strrchr(g.cri_file, '/') + 1 : g.cri_file;
    *strrchr(dir, '/') = '\0';
    if (strcmp(base, RV_NODE_DROPIN) >= 0)
        return rv_fail(err, 0, "`%s` holds containerd's CRI configuration and is merged after resview's "
                       "drop-in `%s` would be: rename it so that it sorts before", g.cri_file, RV_NODE_DROPIN);
    if (rv_snprintf(path, sizeof(path), "%s/%s", dir, RV_NODE_DROPIN) < 0)
        return rv_fail(err, ENAMETOOLONG, "drop-in");

    struct rv_engine_opts o = { .config = path, .runtime_path = c->runtime_path, .hook_path = c->hook_path,
                                .set_default = c->set_default };
    struct rv_edit_result res = { 0 };
    cleanup_free char *src = NULL, *cur = NULL;
    size_t slen, clen;
    bool exists;
    if (rv_engine_read(g.cri_file, &src, &slen, &exists, err) < 0 ||
        rv_engine_read(path, &cur, &clen, &exists, err) < 0)
        return -1;
    if (rv_engine_edit(&rv_engine_containerd, &o, src, slen, true, NULL, 0, &res, err) < 0)
        return rv_wrap(err, "resview's drop-in from `%s`", g.cri_file);
    int rc = 0;
    if (!exists || clen != res.len || memcmp(cur, res.text, clen) != 0) {
        cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st = { .st_mode = 0644 };
        if (dfd < 0 || rv_write_atomic_at(dfd, RV_NODE_DROPIN, res.text, res.len, &st, RV_WRITE_DURABLE, err) < 0)
            rc = dfd < 0 ? rv_fail(err, errno, "open `%s`", dir) : rv_wrap(err, "`%s`", path);
        else
            rv_node_say("containerd: its CRI configuration comes from `%s` (an import, replacing config.toml's "
                        "table): wrote `%s`, that file with resview's entry%s, merged after it", g.cri_file, path,
                        c->set_default ? " and default" : "");
    }
    free(res.text);
    free(res.restore_backup);
    return rc;
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
    if (rv_engine_apply(&rv_engine_containerd, &o, err) < 0 || dropin_apply(c, err) < 0 ||
        (c->uninstall && nv_restore(c, "resview's uninstall", err) < 0))
        return -1;
    fflush(stdout);
    int r = make_effective(c, restarted, err);
    if (r != 0)
        return r;
    if (c->uninstall) {
        struct rv_node_gpu g;
        struct rv_error e;
        char conf[PATH_MAX];
        if (rv_node_gpu_detect(c->config, c->runtime_path, &g, &e) == 0 && g.runtime[0] &&
            rv_node_nvidia_next(c->host_pid, g.runtime, c->runtime_path, conf, sizeof(conf)) == 1)
            rv_node_say("containerd: NVIDIA's runtime `%s` runs resview's runtime next (`%s`, NVIDIA's, written "
                        "by its toolkit from containerd's default runtime when it set up): containers it "
                        "creates go through resview for as long as resview's binaries are there, and through "
                        "runc once they are removed; restart NVIDIA's toolkit (its pod) to have that file "
                        "written without resview", g.runtime, conf);
    }
    /* our own edits are no change to react to; another tool's, made meanwhile, would
     * have been read with them: only when what it names is what was read before */
    if (c->gpu && !c->uninstall) {
        struct rv_node_gpu now;
        struct rv_error e;
        if (rv_node_gpu_detect(c->config, c->runtime_path, &now, &e) == 0 &&
            strcmp(now.runtime, c->gpu->runtime) == 0)
            c->gpu->signature = full_signature(c, now.runtime);
    }
    return 0;
}

/* --- NVIDIA's runtime in containerd's configuration --------------------- */

#define CRI_PLUGIN_V2 "plugins\x1fio.containerd.grpc.v1.cri"
#define CRI_PLUGIN_V3 "plugins\x1fio.containerd.cri.v1.runtime"

int rv_node_gpu_mode_parse(const char *s)
{
    if (!*s || strcmp(s, "gpu") == 0)
        return RV_NODE_GPU_ASKING;
    if (strcmp(s, "all") == 0)
        return RV_NODE_GPU_ALL;
    if (strcmp(s, "none") == 0)
        return RV_NODE_GPU_NONE;
    return -1;
}

/* The next string of a TOML array value's text (paths need no escapes) from
 * *p on, into out; false at the end. */
static bool array_string(const char **p, const char *end, char *out, size_t size)
{
    const char *q = *p + strcspn(*p, "\"'");

    if (q >= end)
        return false;
    const char *e = memchr(q + 1, *q, (size_t)(end - q - 1));
    if (!e)
        return false;
    snprintf(out, size, "%.*s", (int)(e - q - 1), q + 1);
    *p = e + 1;
    return true;
}

/* The files containerd reads, in merge order: config, then its imports
 * (relative to its directory; globs expanded and sorted, as containerd's
 * filepath.Glob does). paths[0] is config. */
static int config_files(const char *config, const char *text, size_t len,
                        char paths[][PATH_MAX], int max, struct rv_error *err)
{
    struct rv_toml doc;
    char dir[PATH_MAX];
    int n = 0;

    snprintf(paths[n++], PATH_MAX, "%s", config);
    if (rv_toml_scan(text, len, &doc, err) < 0)
        return rv_wrap(err, "`%s`", config);
    const struct rv_toml_item *imp = rv_toml_get(&doc, "imports");
    snprintf(dir, sizeof(dir), "%s", strchr(config, '/') ? config : "./");
    *strrchr(dir, '/') = '\0';
    if (imp && imp->kind == RV_TOML_VALUE) {
        /* an array of strings: walk its elements' text */
        const char *p = text + imp->val_start, *end = text + imp->val_end;
        char one[PATH_MAX];
        while (p < end && n < max && array_string(&p, end, one, sizeof(one))) {
            char pat[PATH_MAX];
            glob_t gl;
            if (one[0] == '/')
                snprintf(pat, sizeof(pat), "%s", one);
            else if (rv_snprintf(pat, sizeof(pat), "%s/%s", dir, one) < 0)
                continue;
            if (glob(pat, 0, NULL, &gl) == 0) {
                for (size_t i = 0; i < gl.gl_pathc && n < max; i++)
                    snprintf(paths[n++], PATH_MAX, "%s", gl.gl_pathv[i]);
                globfree(&gl);
            }
        }
    }
    rv_toml_free(&doc);
    return n;
}

uint64_t rv_node_containerd_signature(const char *config)
{
    char (*paths)[PATH_MAX] = calloc(RV_NODE_MAX_IMPORTS + 1, PATH_MAX);
    cleanup_free char *text = NULL;
    struct rv_error e;
    size_t len;
    bool exists;
    uint64_t h = 0xcbf29ce484222325ull;

    if (!paths)
        return 0;
    if (rv_engine_read(config, &text, &len, &exists, &e) == 0) {
        int n = config_files(config, text, len, paths, RV_NODE_MAX_IMPORTS + 1, &e);
        for (int i = 0; i < n; i++) {
            h ^= file_hash(paths[i]);
            h *= 0x100000001b3ull;
            for (const char *p = paths[i]; *p; p++) {
                h ^= (unsigned char)*p;
                h *= 0x100000001b3ull;
            }
        }
    }
    free(paths);
    return h;
}

/* containerd's files and NVIDIA's runtime configuration beside nvidia_bin
 * (its toolkit writes it when it starts; resview's edit of it is one too) */
static uint64_t full_signature(const struct rv_node_containerd *c, const char *nvidia_bin)
{
    uint64_t h = rv_node_containerd_signature(c->config);
    char root[32] = "", dir[PATH_MAX], path[PATH_MAX];

    if (!nvidia_bin || !nvidia_bin[0])
        return h;
    if (c->host_pid > 0)
        snprintf(root, sizeof(root), "/proc/%d/root", (int)c->host_pid);
    nv_dirname(nvidia_bin, dir, sizeof(dir));
    if (rv_snprintf(path, sizeof(path), "%s%s/.config/nvidia-container-runtime/config.toml", root, dir) < 0)
        return h;
    return (h ^ file_hash(path)) * 0x100000001b3ull;
}

bool rv_node_containerd_changed(const struct rv_node_containerd *c)
{
    uint64_t now = full_signature(c, c->gpu->runtime);

    if (now == c->gpu->signature) {
        c->gpu->pending = 0;
        return false;
    }
    if (now != c->gpu->pending) {   /* changed since the last look: maybe still being written */
        c->gpu->pending = now;
        return false;
    }
    return true;
}

static bool nvidia_binary(const char *bin)
{
    const char *base = strrchr(bin, '/') ? strrchr(bin, '/') + 1 : bin;
    return strncmp(base, "nvidia-container-runtime", 24) == 0;
}

int rv_node_nvidia_next(pid_t host_pid, const char *nvidia_bin, const char *own_runtime, char *conf,
                        size_t size)
{
    char root[32] = "", path[PATH_MAX], dir[PATH_MAX], one[PATH_MAX];
    cleanup_free char *text = NULL;
    struct rv_toml doc;
    struct rv_error e;
    size_t len;
    bool exists = false;
    int r = 0;

    conf[0] = '\0';
    if (host_pid > 0)
        snprintf(root, sizeof(root), "/proc/%d/root", (int)host_pid);
    snprintf(dir, sizeof(dir), "%s", nvidia_bin);
    *(strrchr(dir, '/') ? strrchr(dir, '/') : dir) = '\0';
    const char *candidates[] = { dir, "" }, *sub[] = { ".config", "etc" };
    for (size_t i = 0; i < 2 && !exists; i++) {
        free(text);
        text = NULL;
        if (rv_snprintf(path, sizeof(path), "%s%s/%s/nvidia-container-runtime/config.toml", root,
                        candidates[i], sub[i]) < 0 ||
            rv_engine_read(path, &text, &len, &exists, &e) < 0)
            exists = false;
        if (exists)
            snprintf(conf, size, "%s", path + strlen(root));
    }
    if (!exists || rv_toml_scan(text, len, &doc, &e) < 0)
        return 0;
    const struct rv_toml_item *it = rv_toml_get(&doc, "nvidia-container-runtime.runtimes");
    if (it && it->kind == RV_TOML_VALUE) {
        const char *p = text + it->val_start, *end = text + it->val_end;
        /* NVIDIA's runtime runs the first one it finds: a path that exists, or a
         * name in its PATH (never resview's, which is always given as a path) */
        while (p < end && array_string(&p, end, one, sizeof(one))) {
            if (one[0] == '/' && (rv_snprintf(path, sizeof(path), "%s%s", root, one) < 0 ||
                                  access(path, X_OK) < 0))
                continue;
            r = strcmp(one, own_runtime) == 0;
            break;
        }
    }
    rv_toml_free(&doc);
    return r;
}

bool rv_node_gpu_default_chains(const struct rv_node_containerd *c, const struct rv_node_gpu *g)
{
    char conf[PATH_MAX];

    return g->runtime[0] && g->dflt[0] && strcmp(g->entry, g->dflt) == 0 &&
           rv_node_nvidia_next(c->host_pid, g->runtime, c->runtime_path, conf, sizeof(conf)) == 1;
}

/* What one file's CRI plugin table names: runtimes with a BinaryName, the default. */
static void read_cri(const struct rv_toml *doc, const char *own_runtime, struct rv_node_gpu *g,
                     char names[][64], char bins[][PATH_MAX], int *nr)
{
    const char *plugins[] = { CRI_PLUGIN_V2, CRI_PLUGIN_V3 };

    for (size_t k = 0; k < 2; k++) {
        char rt[160], dflt[160];
        snprintf(rt, sizeof(rt), "%s\x1f" "containerd\x1fruntimes\x1f", plugins[k]);
        snprintf(dflt, sizeof(dflt), "%s\x1f" "containerd\x1f" "default_runtime_name", plugins[k]);
        for (size_t i = 0; i < doc->n; i++) {
            const struct rv_toml_item *it = &doc->items[i];
            size_t pl = strlen(rt);
            if (it->kind == RV_TOML_VALUE && strcmp(it->path, dflt) == 0) {
                if (rv_toml_string(doc, it, g->dflt, sizeof(g->dflt)) < 0)
                    g->dflt[0] = '\0';
                continue;
            }
            if (it->kind != RV_TOML_VALUE || strncmp(it->path, rt, pl) != 0)
                continue;
            const char *name = it->path + pl, *sep = strchr(name, '\x1f');
            if (!sep || strcmp(sep, "\x1foptions\x1f" "BinaryName") != 0 || (size_t)(sep - name) >= 64 ||
                *nr >= 16)
                continue;
            char bin[PATH_MAX];
            bool resview = strncmp(name, "resview\x1f", 8) == 0;
            if (resview)
                g->names_resview = true;
            if (rv_toml_string(doc, it, bin, sizeof(bin)) < 0)
                continue;
            if (resview)   /* the last file that names it decides */
                g->resview_ours = strcmp(bin, own_runtime) == 0;
            if (strcmp(bin, own_runtime) == 0)
                continue;
            /* an entry an earlier file named too (containerd 2.x): this file's */
            int at = 0;
            while (at < *nr && (strncmp(names[at], name, (size_t)(sep - name)) != 0 || names[at][sep - name]))
                at++;
            snprintf(names[at], 64, "%.*s", (int)(sep - name), name);
            snprintf(bins[at], PATH_MAX, "%s", bin);
            if (at == *nr)
                (*nr)++;
        }
    }
}

static bool has_cri_table(const struct rv_toml *doc)
{
    for (size_t i = 0; i < doc->n; i++) {
        const char *p = doc->items[i].path;
        if (strncmp(p, CRI_PLUGIN_V2, strlen(CRI_PLUGIN_V2)) == 0 &&
            (!p[strlen(CRI_PLUGIN_V2)] || p[strlen(CRI_PLUGIN_V2)] == '\x1f'))
            return true;
        if (strncmp(p, CRI_PLUGIN_V3, strlen(CRI_PLUGIN_V3)) == 0 &&
            (!p[strlen(CRI_PLUGIN_V3)] || p[strlen(CRI_PLUGIN_V3)] == '\x1f'))
            return true;
    }
    return false;
}

int rv_node_gpu_detect(const char *config, const char *own_runtime, struct rv_node_gpu *g,
                       struct rv_error *err)
{
    char (*paths)[PATH_MAX] = NULL;
    char names[16][64], bins[16][PATH_MAX];
    cleanup_free char *text = NULL;
    size_t len;
    bool exists;
    int n, nr = 0, pick = -1, rc = -1;

    memset(g, 0, sizeof(*g));
    if (rv_engine_read(config, &text, &len, &exists, err) < 0)
        return -1;
    if (!exists)
        return 0;
    if (!(paths = calloc(RV_NODE_MAX_IMPORTS + 1, PATH_MAX)))
        return rv_fail(err, ENOMEM, "containerd's configuration");
    if ((n = config_files(config, text, len, paths, RV_NODE_MAX_IMPORTS + 1, err)) < 0)
        goto out;
    g->n_imports = n - 1;
    /* containerd 1.x: the last file with the CRI plugin's table replaces it
     * whole; 2.x merges them key by key, a later file's keys winning (its PR 9982).
     * Key by key only where config.toml is version 3, which only 2.x reads:
     * on a version 2 file, read as 1.x would, resview may write a drop-in that
     * 2.x did not need, never miss one 1.x needed */
    bool by_key = false;
    for (int i = 0; i < n; i++) {
        cleanup_free char *t = NULL;
        struct rv_toml doc;
        size_t l;
        const char *b = strrchr(paths[i], '/');
        if (i > 0 && b && strcmp(b + 1, RV_NODE_DROPIN) == 0) {   /* ours: a copy, not a source */
            snprintf(g->own_dropin, sizeof(g->own_dropin), "%s", paths[i]);
            continue;
        }
        if (rv_engine_read(paths[i], &t, &l, &exists, err) < 0)
            goto out;
        if (rv_toml_scan(t, l, &doc, err) < 0) {
            rv_wrap(err, "`%s`", paths[i]);
            goto out;
        }
        if (i == 0)
            by_key = rv_containerd_config_version(&doc) == 3;
        if (i == 0 || has_cri_table(&doc)) {
            if (!by_key) {
                nr = 0;
                g->dflt[0] = '\0';
                g->names_resview = g->resview_ours = false;
            }
            read_cri(&doc, own_runtime, g, names, bins, &nr);
            snprintf(g->cri_file, sizeof(g->cri_file), "%s", paths[i]);
            g->cri_from_import = i > 0;
        }
        rv_toml_free(&doc);
    }
    /* the default when it is NVIDIA's, else `nvidia`, else NVIDIA's plain binary, else any nvidia* */
    for (int i = 0; i < nr && pick < 0; i++)
        if (strcmp(names[i], g->dflt) == 0 && (strncmp(names[i], "nvidia", 6) == 0 || nvidia_binary(bins[i])))
            pick = i;
    for (int i = 0; i < nr && pick < 0; i++)
        if (strcmp(names[i], "nvidia") == 0)
            pick = i;
    for (int i = 0; i < nr && pick < 0; i++) {
        const char *base = strrchr(bins[i], '/') ? strrchr(bins[i], '/') + 1 : bins[i];
        if (strcmp(base, "nvidia-container-runtime") == 0)
            pick = i;
    }
    for (int i = 0; i < nr && pick < 0; i++)
        if (strncmp(names[i], "nvidia", 6) == 0 || nvidia_binary(bins[i]))
            pick = i;
    if (pick >= 0) {
        snprintf(g->runtime, sizeof(g->runtime), "%s", bins[pick]);
        snprintf(g->entry, sizeof(g->entry), "%s", names[pick]);
    }
    rc = 0;
out:
    free(paths);
    return rc;
}

int rv_node_gpu_refresh(const struct rv_node_containerd *c, struct rv_error *err)
{
    struct rv_node_gpu now;
    uint64_t sig = rv_node_containerd_signature(c->config);

    if (rv_node_gpu_detect(c->config, c->runtime_path, &now, err) < 0)
        return -1;
    now.signature = sig == rv_node_containerd_signature(c->config) ? full_signature(c, now.runtime) : sig;
    bool changed = strcmp(now.runtime, c->gpu->runtime) != 0;
    if (changed || c->gpu->signature == 0) {
        if (now.runtime[0])
            rv_node_say("gpu: NVIDIA's runtime `%s` (containerd runtime `%s`, in `%s`; default runtime `%s`)%s",
                        now.runtime, now.entry, now.cri_file, now.dflt[0] ? now.dflt : "runc",
                        c->gpu_mode == RV_NODE_GPU_NONE ? "; not chained (RESVIEW_NODE_GPU_CONTAINERS=none)" :
                        c->gpu_mode == RV_NODE_GPU_ALL ? "; every container goes through it" :
                        "; containers that ask for a GPU go through it");
        else
            rv_node_say("gpu: no NVIDIA runtime in containerd's configuration");
    }
    *c->gpu = now;
    return changed;
}

int rv_node_config_text(const struct rv_node_containerd *c, const char *lxcfs_dir, char *out, size_t size)
{
    cleanup_free char *rt = NULL;
    cleanup_json json_t *js = NULL;

    if (!c->gpu || !c->gpu->runtime[0] || c->gpu_mode == RV_NODE_GPU_NONE)
        return rv_snprintf(out, size, "{\n  \"lxcfs\": { \"root\": \"%s\" }\n}\n", lxcfs_dir);
    js = json_string(c->gpu->runtime);
    rt = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
    return rv_snprintf(out, size, "{\n  \"lxcfs\": { \"root\": \"%s\" },\n  \"gpu\": { \"runtime\": %s, "
                       "\"containers\": \"%s\" }\n}\n", lxcfs_dir, rt ? rt : "\"\"",
                       c->gpu_mode == RV_NODE_GPU_ALL ? "all" : "gpu");
}

bool rv_node_config_agents(const char *text, size_t len, const char *lxcfs_dir)
{
    cleanup_json json_t *root = NULL;
    struct rv_error e;
    struct rv_node_gpu g = { 0 };
    struct rv_node_containerd c = { .gpu = &g };
    char again[PATH_MAX * 2 + 128];
    json_t *gpu;

    if (rv_json_parse(text, len, "configuration", &root, &e) < 0 || !json_is_object(root))
        return false;
    gpu = json_object_get(root, "gpu");
    if (gpu) {
        const char *rt = json_string_value(json_object_get(gpu, "runtime"));
        const char *which = json_string_value(json_object_get(gpu, "containers"));
        if (!rt || !which || rv_snprintf(g.runtime, sizeof(g.runtime), "%s", rt) < 0)
            return false;
        c.gpu_mode = strcmp(which, "all") == 0 ? RV_NODE_GPU_ALL : RV_NODE_GPU_ASKING;
    }
    /* ours exactly as the agent renders it */
    return rv_node_config_text(&c, lxcfs_dir, again, sizeof(again)) >= 0 && strlen(again) == len &&
           memcmp(again, text, len) == 0;
}

/* --- resview first in NVIDIA's runtimes --------------------------------- */


int rv_node_nvidia_put_first(const char *text, size_t len, const char *own_runtime, char **out,
                             size_t *out_len, struct rv_error *err)
{
    cleanup_free char *q = rv_toml_quote(own_runtime);
    struct rv_toml doc;

    *out = NULL;
    if (!q)
        return rv_fail(err, ENOMEM, "NVIDIA's runtime configuration");
    if (rv_toml_scan(text, len, &doc, err) < 0)
        return -1;
    const struct rv_toml_item *it = rv_toml_get(&doc, "nvidia-container-runtime.runtimes");
    size_t at = it ? it->val_start + 1 : 0, end = it ? it->val_end : 0;
    bool array = it && it->kind == RV_TOML_VALUE && it->val_start < it->val_end && text[it->val_start] == '[';
    rv_toml_free(&doc);
    if (!array)
        return 1;
    /* an element before the `]` (blanks and comments skipped): then a comma after ours */
    size_t i = at;
    while (i < end) {
        if (text[i] == '#')
            while (i < end && text[i] != '\n')
                i++;
        else if (strchr(" \t\r\n", text[i]))
            i++;
        else
            break;
    }
    bool any = i < end && text[i] != ']';
    size_t ql = strlen(q), extra = ql + (any ? 2 : 0);
    char *o = malloc(len + extra + 1);
    if (!o)
        return rv_fail(err, ENOMEM, "NVIDIA's runtime configuration");
    memcpy(o, text, at);
    memcpy(o + at, q, ql);
    if (any)
        memcpy(o + at + ql, ", ", 2);
    memcpy(o + at + extra, text + at, len - at);
    o[len + extra] = '\0';
    if (rv_toml_scan(o, len + extra, &doc, err) < 0) {
        free(o);
        return rv_wrap(err, "with resview's runtime first, not valid TOML (not written)");
    }
    rv_toml_free(&doc);
    *out = o;
    *out_len = len + extra;
    return 0;
}

/* NVIDIA_DIR/.config/nvidia-container-runtime in host_pid's root, resolved
 * inside it (openat2 RESOLVE_IN_ROOT; before Linux 5.6 as the path is):
 * a directory fd, or -1 (err; errnum ENOENT: not there). */
static int nv_dir_open(pid_t host_pid, const char *nvidia_dir, char *conf, size_t size, struct rv_error *err)
{
    char root[32] = "/", sub[PATH_MAX];
    cleanup_close int rfd = -1;

    if (host_pid > 0)
        snprintf(root, sizeof(root), "/proc/%d/root", (int)host_pid);
    if (rv_snprintf(sub, sizeof(sub), "%s/.config/nvidia-container-runtime", nvidia_dir) < 0 ||
        rv_snprintf(conf, size, "%s/config.toml", sub) < 0)
        return rv_fail(err, ENAMETOOLONG, "`%s`", nvidia_dir);
    if ((rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return rv_fail(err, errno, "open `%s`", root);
    struct rv_open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RV_RESOLVE_IN_ROOT | RV_RESOLVE_NO_MAGICLINKS };
    int fd = rv_openat2(rfd, sub, &how);
    if (fd < 0 && errno == ENOSYS)
        fd = openat(rfd, sub[0] == '/' ? sub + 1 : sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return rv_fail(err, errno == ENOTDIR ? ENOENT : errno, "open `%s`", sub);
    return fd;
}

int rv_node_nvidia_edit(pid_t host_pid, const char *nvidia_dir, const char *own_runtime, bool want,
                        char *conf, size_t size, struct rv_error *err)
{
    cleanup_free char *cur = NULL, *bak = NULL, *again = NULL, *mine = NULL;
    cleanup_close int dfd = -1;
    size_t clen = 0, blen = 0, alen = 0, mlen = 0;
    struct stat st;
    struct rv_error e;
    bool ours = false;

    conf[0] = '\0';
    if ((dfd = nv_dir_open(host_pid, nvidia_dir, conf, size, err)) < 0)
        return err->errnum == ENOENT ? (want ? 2 : 0) : -1;
    bool has_cur = rv_read_file_at(dfd, "config.toml", NV_CONF_MAX, &cur, &clen, &st, &e) == 0;
    bool has_bak = rv_read_file_at(dfd, RV_NODE_NV_BACKUP, NV_CONF_MAX, &bak, &blen, NULL, &e) == 0;
    /* resview's edit is in place: the file is the backup with resview's runtime put first */
    if (has_cur && has_bak && rv_node_nvidia_put_first(bak, blen, own_runtime, &again, &alen, &e) == 0)
        ours = alen == clen && memcmp(again, cur, clen) == 0;
    if (!want || (has_bak && !ours)) {
        if (!has_bak)
            return 0;
        if (ours && rv_write_atomic_at(dfd, "config.toml", bak, blen, &st, RV_WRITE_DURABLE, err) < 0)
            return rv_wrap(err, "put back `%s`", conf);
        if (unlinkat(dfd, RV_NODE_NV_BACKUP, 0) < 0 && errno != ENOENT)
            return rv_fail(err, errno, "remove `%s.resview-backup`", conf);
        if (!ours)
            rv_node_say("containerd: `%s` was written again since resview edited it (NVIDIA's toolkit "
                        "started again): resview's copy of the earlier one removed, the file left as it is",
                        conf);
        if (!want)
            return ours;
    }
    if (ours)
        return 0;
    if (!has_cur)
        return 2;
    int r = rv_node_nvidia_put_first(cur, clen, own_runtime, &mine, &mlen, err);
    if (r != 0)
        return r < 0 ? rv_wrap(err, "`%s`", conf) : 2;
    /* the copy first: a writer killed between the two leaves the file as it was */
    if (rv_write_atomic_at(dfd, RV_NODE_NV_BACKUP, cur, clen, &st, RV_WRITE_DURABLE, err) < 0 ||
        rv_write_atomic_at(dfd, "config.toml", mine, mlen, &st, RV_WRITE_DURABLE, err) < 0)
        return rv_wrap(err, "`%s`", conf);
    return 1;
}
