/* engine_slurm.c - Slurm's oci.conf: the RunTime* commands run resview-runtime
 * in place of runc/crun (resview's own `runtimes` then names the runtime to
 * call). Lines it replaces are kept in a marker comment and put back by
 * --uninstall; a file without RunTime* lines gets a runc `run` set for Slurm
 * 23.02 and later (tested for real with Slurm 22.05 on site-written lines:
 * tests/e2e/47-slurm.sh). */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const commands[] = { "RunTimeQuery", "RunTimeCreate", "RunTimeStart",
                                        "RunTimeKill", "RunTimeDelete", "RunTimeRun", NULL };

/* Whether line[0..n) is `Key=...` for one of the command keys; *val: offset of the value. */
static bool command_line(const char *line, size_t n, size_t *val)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    for (size_t k = 0; commands[k]; k++) {
        size_t kl = strlen(commands[k]);
        if (n - i > kl && strncasecmp(line + i, commands[k], kl) == 0) {
            size_t j = i + kl;
            while (j < n && (line[j] == ' ' || line[j] == '\t'))
                j++;
            if (j < n && line[j] == '=') {
                j++;
                while (j < n && (line[j] == ' ' || line[j] == '\t'))
                    j++;
                *val = j;
                return true;
            }
        }
    }
    return false;
}

static int check_syntax(const char *text, size_t len, struct rv_error *err)
{
    unsigned lineno = 0;
    for (size_t p = 0; p < len;) {
        const char *line = text + p, *nl = memchr(line, '\n', len - p);
        size_t n = nl ? (size_t)(nl - line) : len - p;
        size_t i = 0;
        lineno++;
        p += n + (nl ? 1 : 0);
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i == n || line[i] == '#')
            continue;
        size_t k = i;
        while (k < n && (isalnum((unsigned char)line[k]) || line[k] == '_'))
            k++;
        while (k < n && (line[k] == ' ' || line[k] == '\t'))
            k++;
        if (k == i || k >= n || line[k] != '=')
            return rv_fail(err, 0, "line %u: expected `Key=Value`", lineno);
    }
    return 0;
}

/* Slurm's version as 100 * major + minor (2302), 0 if no Slurm is found. */
static int slurm_version(void)
{
    FILE *f = popen("(srun -V || slurmd -V) 2>/dev/null", "r");
    char line[128] = "";
    unsigned maj = 0, min = 0;

    if (!f)
        return 0;
    /* "slurm 23.02.1", Debian's "slurm-wlm 22.05.8": the first X.Y after a space */
    if (fgets(line, sizeof(line), f)) {
        const char *v = strchr(line, ' ');
        if (!v || sscanf(v + 1, "%u.%u", &maj, &min) != 2)
            maj = min = 0;
    }
    pclose(f);
    return (int)(maj * 100 + min);
}

static int edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                const char *backup, size_t backup_len, struct rv_edit_result *res,
                struct rv_error *err)
{
    cleanup_free char *base = NULL, *out = NULL;
    size_t blen;
    bool had, created, any = false;

    (void)backup;
    (void)backup_len;
    if (check_syntax(old, len, err) < 0)
        return rv_wrap(err, "oci.conf");
    if (rv_marked_strip(old, len, &base, &blen, &had, &created, err) < 0)
        return -1;
    if (!exists)
        created = true;
    if (o->uninstall) {
        if (created && blen == 0)
            res->remove = true;
        else {
            res->text = move_ptr(base);
            res->len = blen;
        }
        return 0;
    }
    if (strchr(o->runtime_path, ' ') || strchr(o->runtime_path, '"') || strchr(o->runtime_path, '#'))
        return rv_fail(err, 0, "`%s`: a path with spaces, quotes or `#` cannot go into oci.conf",
                       o->runtime_path);
    if (rv_strcatf(&out, err, "%s", "") < 0)
        return -1;
    for (size_t p = 0; p < blen;) {
        const char *line = base + p, *nl = memchr(line, '\n', blen - p);
        size_t n = nl ? (size_t)(nl - line) : blen - p, v;
        p += n + (nl ? 1 : 0);
        if (!command_line(line, n, &v)) {
            if (rv_strcatf(&out, err, "%.*s%s", (int)n, line, nl ? "\n" : "") < 0)
                return -1;
            continue;
        }
        any = true;
        size_t w = v + (v < n && line[v] == '"' ? 1 : 0), we = w;
        while (we < n && line[we] != ' ' && line[we] != '\t' && line[we] != '"')
            we++;
        if (we - w == strlen(o->runtime_path) && memcmp(line + w, o->runtime_path, we - w) == 0) {
            if (rv_strcatf(&out, err, "%.*s%s", (int)n, line, nl ? "\n" : "") < 0)
                return -1;
            continue;
        }
        cleanup_free char *repl = NULL, *marked = NULL;
        if (asprintf(&repl, "%.*s%s%.*s", (int)w, line, o->runtime_path, (int)(n - we), line + we) < 0 ||
            !(marked = rv_mark_was(repl, strlen(repl), line, n)))
            return rv_fail(err, ENOMEM, "oci.conf");
        if (rv_strcatf(&out, err, "%s%s", marked, nl ? "\n" : "") < 0)
            return -1;
    }
    if (any) {
        res->len = strlen(out);
        res->text = move_ptr(out);
        return 0;
    }
    /* No RunTime* lines: a new set. %U (the user's uid, for a per-user
     * runtime root) came with Slurm 23.02; 22.05 has no safe per-user
     * directory to name, so the site writes its own lines there. */
    int version = o->slurm_version ? o->slurm_version : slurm_version();
    if (version && version < 2302)
        return rv_fail(err, 0, "Slurm %d.%02d has no %%U pattern for a per-user runtime root: write "
                       "the RunTime* lines for your site (Slurm's oci.conf documentation: runc with "
                       "RunTimeRun), then run resview configure --engine=slurm again to route them "
                       "through resview-runtime", version / 100, version % 100);
    cleanup_free char *block = NULL;
    const char *rt = o->runtime_path;
    /* `run` rather than create/start: Slurm reads the output of RunTimeCreate
     * to its end, which runc's waiting container process holds open. */
    if (rv_strcatf(&block, err,
                   "RunTimeQuery=\"%s --rootless=true --root=/run/user/%%U/ state %%n.%%u.%%j.%%s.%%t\"\n"
                   "RunTimeKill=\"%s --rootless=true --root=/run/user/%%U/ kill -a %%n.%%u.%%j.%%s.%%t\"\n"
                   "RunTimeDelete=\"%s --rootless=true --root=/run/user/%%U/ delete --force %%n.%%u.%%j.%%s.%%t\"\n"
                   "RunTimeRun=\"%s --rootless=true --root=/run/user/%%U/ run %%n.%%u.%%j.%%s.%%t -b %%b\"\n",
                   rt, rt, rt, rt) < 0)
        return -1;
    return rv_marked_append(base, blen, block, created, &res->text, &res->len, err);
}

static int status(const char *text, size_t len, char *detail, size_t size, char *exe, size_t exe_size,
                  struct rv_error *err)
{
    /* written by resview configure (any runtime path), or by hand with resview-runtime */
    cleanup_free char *stripped = NULL;
    size_t slen;
    bool marked, created;

    exe[0] = '\0';
    if (rv_marked_strip(text, len, &stripped, &slen, &marked, &created, err) < 0)
        return -1;
    if (check_syntax(text, len, err) < 0)
        return rv_wrap(err, "oci.conf");
    for (size_t p = 0; p < len;) {
        const char *line = text + p, *nl = memchr(line, '\n', len - p);
        size_t n = nl ? (size_t)(nl - line) : len - p, v;
        p += n + (nl ? 1 : 0);
        if (command_line(line, n, &v) && (memmem(line, n, "resview-runtime", 15) || marked)) {
            size_t w = v + (v < n && line[v] == '"' ? 1 : 0), we = w;
            while (we < n && line[we] != ' ' && line[we] != '\t' && line[we] != '"')
                we++;
            rv_snprintf(detail, size, "%.*s", (int)n, line);
            rv_snprintf(exe, exe_size, "%.*s", (int)(we - w), line + w);
            return 1;
        }
    }
    return 0;
}

const struct rv_engine rv_engine_slurm = {
    .name = "slurm",
    .default_config = "/etc/slurm/oci.conf",
    .reload = "new job steps read it (copy it to every node; scontrol reconfigure)",
    .unload = "new job steps read the change: make it on every node (scontrol reconfigure)",
    .edit = edit,
    .status = status,
    .marks_lines = true,
};
