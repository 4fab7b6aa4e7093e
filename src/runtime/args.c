/* args.c - the next runtime's command line, read as that runtime reads it.
 *
 * runc 1.1-1.4 (urfave/cli v1 over Go's flag package): global flags up to
 * the subcommand; then, except for exec and ps, urfave/cli's reorderArgs
 * moves every argument that starts with "-" (and the argument after one
 * without "=", unless it starts with "-") before the others, so flags may
 * follow the id; then Go's flag parsing: -x and --x alike, "=value" or the
 * next argument for a value, bool flags never take the next argument, the
 * first non-flag or a consumed "--" ends the flags, an unknown flag is an
 * error.
 *
 * crun (argp over getopt_long, ARGP_IN_ORDER): long options or unique
 * prefixes of them, "=value" or the next argument; short options clustered
 * ("-db DIR", "-bDIR"); optional arguments only attached (-t[TTY]); the
 * first non-option ends the options (the id: nothing after it is an option),
 * "--" too; argp's own --help, -?, --usage, --program-name NAME, --HANG[=S].
 *
 * The tables hold the flags of runc 1.1 to 1.4 and crun 1.8 to 1.2x;
 * tests/unit/test_args.c checks them against the installed runc and crun. */
#define _GNU_SOURCE
#include "resview/args.h"
#include "resview/limits.h"

#include <string.h>

/* arguments of a command whose flags are moved (create, run: a few) */
#define RV_ARGS_MAX 256

enum kind { NONE, BOOL, VALUE, OPTIONAL };

struct flag {
    const char *names;   /* "bundle|b": long name first, then aliases */
    enum kind kind;
};

struct command {
    const char *name;
    const struct flag *flags;
    bool keep_order;     /* runc: SkipArgReorder */
    int nargs;           /* positional arguments it requires exactly (0: any) */
};

#define END { NULL, NONE }

/* --- runc ---------------------------------------------------------------- */

static const struct flag runc_global[] = {
    { "debug", BOOL }, { "systemd-cgroup", BOOL }, { "log", VALUE }, { "log-format", VALUE },
    { "root", VALUE }, { "criu", VALUE }, { "rootless", VALUE }, END
};
static const struct flag runc_create[] = {
    { "bundle|b", VALUE }, { "console-socket", VALUE }, { "pid-file", VALUE },
    { "pidfd-socket", VALUE }, { "preserve-fds", VALUE }, { "no-pivot", BOOL },
    { "no-new-keyring", BOOL }, END
};
static const struct flag runc_run[] = {
    { "bundle|b", VALUE }, { "console-socket", VALUE }, { "pid-file", VALUE },
    { "pidfd-socket", VALUE }, { "preserve-fds", VALUE }, { "no-pivot", BOOL },
    { "no-new-keyring", BOOL }, { "detach|d", BOOL }, { "keep", BOOL }, { "no-subreaper", BOOL }, END
};
static const struct flag runc_exec[] = {
    { "console-socket", VALUE }, { "pidfd-socket", VALUE }, { "cwd", VALUE }, { "env|e", VALUE },
    { "tty|t", BOOL }, { "user|u", VALUE }, { "additional-gids|g", VALUE }, { "process|p", VALUE },
    { "detach|d", BOOL }, { "pid-file", VALUE }, { "process-label", VALUE }, { "apparmor", VALUE },
    { "no-new-privs", BOOL }, { "cap|c", VALUE }, { "preserve-fds", VALUE }, { "cgroup", VALUE },
    { "ignore-paused", BOOL }, END
};
static const struct flag runc_delete[] = { { "force|f", BOOL }, END };
static const struct flag runc_kill[] = { { "all|a", BOOL }, END };
static const struct flag runc_ps[] = { { "format|f", VALUE }, END };
static const struct flag runc_list[] = { { "format|f", VALUE }, { "quiet|q", BOOL }, END };
static const struct flag runc_events[] = { { "interval", VALUE }, { "stats", BOOL }, END };
static const struct flag runc_spec[] = { { "bundle|b", VALUE }, { "rootless", BOOL }, END };
static const struct flag runc_update[] = {
    { "resources|r", VALUE }, { "blkio-weight", VALUE }, { "cpu-period", VALUE },
    { "cpu-quota", VALUE }, { "cpu-share", VALUE }, { "cpu-rt-period", VALUE },
    { "cpu-rt-runtime", VALUE }, { "cpuset-cpus", VALUE }, { "cpuset-mems", VALUE },
    { "memory", VALUE }, { "memory-reservation", VALUE }, { "memory-swap", VALUE },
    { "pids-limit", VALUE }, { "l3-cache-schema", VALUE }, { "mem-bw-schema", VALUE },
    { "kernel-memory", VALUE }, { "kernel-memory-tcp", VALUE }, { "cpu-burst", VALUE },
    { "cpu-idle", VALUE }, END
};
static const struct flag runc_checkpoint[] = {
    { "image-path", VALUE }, { "work-path", VALUE }, { "parent-path", VALUE },
    { "page-server", VALUE }, { "status-fd", VALUE }, { "manage-cgroups-mode", VALUE },
    { "empty-ns", VALUE }, { "leave-running", BOOL }, { "tcp-established", BOOL },
    { "tcp-skip-in-flight", BOOL }, { "link-remap", BOOL }, { "ext-unix-sk", BOOL },
    { "shell-job", BOOL }, { "lazy-pages", BOOL }, { "file-locks", BOOL }, { "pre-dump", BOOL },
    { "auto-dedup", BOOL }, END
};
static const struct flag runc_restore[] = {
    { "console-socket", VALUE }, { "image-path", VALUE }, { "work-path", VALUE },
    { "manage-cgroups-mode", VALUE }, { "bundle|b", VALUE }, { "pid-file", VALUE },
    { "empty-ns", VALUE }, { "lsm-profile", VALUE }, { "lsm-mount-context", VALUE },
    { "tcp-established", BOOL }, { "ext-unix-sk", BOOL }, { "shell-job", BOOL },
    { "file-locks", BOOL }, { "detach|d", BOOL }, { "no-subreaper", BOOL }, { "no-pivot", BOOL },
    { "auto-dedup", BOOL }, { "lazy-pages", BOOL }, END
};
static const struct flag no_flags[] = { END };

static const struct command runc_commands[] = {
    { "create", runc_create, false, 1 }, { "run", runc_run, false, 1 },
    { "exec", runc_exec, true, 0 }, { "delete", runc_delete, false, 1 },
    { "kill", runc_kill, false, 0 }, { "ps", runc_ps, true, 0 }, { "list", runc_list, false, 0 },
    { "state", no_flags, false, 0 }, { "start", no_flags, false, 0 },
    { "pause", no_flags, false, 0 }, { "resume", no_flags, false, 0 },
    { "events", runc_events, false, 0 }, { "update", runc_update, false, 0 },
    { "checkpoint", runc_checkpoint, false, 0 }, { "restore", runc_restore, false, 0 },
    { "spec", runc_spec, false, 0 }, { "features", no_flags, false, 0 }, { NULL, NULL, false, 0 }
};
/* urfave/cli adds these to the application and to every command */
static const struct flag runc_help[] = { { "help|h", BOOL }, { "version|v", BOOL }, END };

/* --- crun ---------------------------------------------------------------- */

static const struct flag crun_global[] = {
    { "debug", BOOL }, { "cgroup-manager", VALUE }, { "systemd-cgroup", BOOL }, { "log", VALUE },
    { "log-format", VALUE }, { "log-level", VALUE }, { "root", VALUE }, { "rootless", VALUE },
    { "version|v|V", BOOL }, END
};
static const struct flag crun_create[] = {
    { "bundle|b", VALUE }, { "config|f", VALUE }, { "console-socket", VALUE },
    { "preserve-fds", VALUE }, { "pid-file", VALUE }, { "no-subreaper", BOOL },
    { "no-new-keyring", BOOL }, { "no-pivot", BOOL }, END
};
static const struct flag crun_run[] = {
    { "bundle|b", VALUE }, { "config|f", VALUE }, { "detach|d", BOOL }, { "keep", BOOL },
    { "console-socket", VALUE }, { "preserve-fds", VALUE }, { "pid-file", VALUE },
    { "no-subreaper", BOOL }, { "no-new-keyring", BOOL }, { "no-pivot", BOOL }, END
};
static const struct flag crun_exec[] = {
    { "console-socket", VALUE }, { "tty|t", OPTIONAL }, { "process|p", VALUE }, { "cwd", VALUE },
    { "cgroup", VALUE }, { "detach|d", BOOL }, { "user|u", VALUE }, { "env|e", VALUE },
    { "cap|c", VALUE }, { "pid-file", VALUE }, { "preserve-fds", VALUE }, { "no-new-privs", BOOL },
    { "process-label", VALUE }, { "apparmor", VALUE }, END
};
static const struct flag crun_delete[] = { { "force|f", BOOL }, { "regex|r", BOOL }, END };
static const struct flag crun_kill[] = { { "all|a", BOOL }, { "regex|r", BOOL }, END };
static const struct flag crun_ps[] = { { "format|f", VALUE }, END };
static const struct flag crun_list[] = { { "format|f", VALUE }, { "quiet|q", BOOL }, END };
static const struct flag crun_spec[] = {
    { "bundle|b", VALUE }, { "file|f", VALUE }, { "rootless", BOOL }, END
};
static const struct flag crun_update[] = {
    { "resources|r", VALUE }, { "blkio-weight", VALUE }, { "cpu-period", VALUE },
    { "cpu-quota", VALUE }, { "cpu-rt-period", VALUE }, { "cpu-rt-runtime", VALUE },
    { "cpu-share", VALUE }, { "cpuset-cpus", VALUE }, { "cpuset-mems", VALUE },
    { "kernel-memory", VALUE }, { "kernel-memory-tcp", VALUE }, { "memory", VALUE },
    { "memory-reservation", VALUE }, { "memory-swap", VALUE }, { "pids-limit", VALUE },
    { "mem-bw-schema", VALUE }, END
};
static const struct flag crun_checkpoint[] = {
    { "image-path", VALUE }, { "work-path", VALUE }, { "parent-path", VALUE },
    { "leave-running", BOOL }, { "tcp-established", BOOL }, { "ext-unix-sk", BOOL },
    { "shell-job", BOOL }, { "pre-dump", BOOL }, { "file-locks", BOOL },
    { "manage-cgroups-mode", VALUE }, { "network-lock", BOOL }, END
};
static const struct flag crun_restore[] = {
    { "bundle|b", VALUE }, { "console-socket", VALUE }, { "detach|d", BOOL },
    { "image-path", VALUE }, { "work-path", VALUE }, { "tcp-established", BOOL },
    { "tcp-close", BOOL }, { "ext-unix-sk", BOOL }, { "shell-job", BOOL }, { "file-locks", BOOL },
    { "manage-cgroups-mode", VALUE }, { "network-lock", BOOL }, { "pid-file", VALUE },
    { "lsm-profile", VALUE }, { "lsm-mount-context", VALUE }, END
};

static const struct command crun_commands[] = {
    { "create", crun_create, true, 1 }, { "run", crun_run, true, 1 },
    { "exec", crun_exec, true, 0 }, { "delete", crun_delete, true, 0 },
    { "kill", crun_kill, true, 0 }, { "ps", crun_ps, true, 0 }, { "list", crun_list, true, 0 },
    { "state", no_flags, true, 0 }, { "start", no_flags, true, 0 },
    { "pause", no_flags, true, 0 }, { "resume", no_flags, true, 0 },
    { "update", crun_update, true, 0 }, { "checkpoint", crun_checkpoint, true, 0 },
    { "restore", crun_restore, true, 0 }, { "spec", crun_spec, true, 0 },
    { "features", no_flags, true, 0 }, { NULL, NULL, false, 0 }
};
/* argp adds these to every parser (--version only to crun's own list) */
static const struct flag argp_defaults[] = {
    { "help|?", BOOL }, { "usage", BOOL }, { "program-name", VALUE }, { "HANG", OPTIONAL }, END
};

/* --- lookups ------------------------------------------------------------- */

/* Whether name[0..len) is one of f->names; *exact_long: it is the long name. */
static bool has_name(const struct flag *f, const char *name, size_t len)
{
    for (const char *p = f->names; *p;) {
        size_t n = strcspn(p, "|");
        if (n == len && strncmp(p, name, len) == 0)
            return true;
        p += n + (p[n] == '|');
    }
    return false;
}

static const struct flag *find(const struct flag *const *tables, const char *name, size_t len)
{
    for (; *tables; tables++)
        for (const struct flag *f = *tables; f->names; f++)
            if (has_name(f, name, len))
                return f;
    return NULL;
}

/* getopt_long: the exact long name, else the one long name it is a prefix
 * of; NULL when none or several. */
static const struct flag *find_long_prefix(const struct flag *const *tables, const char *name,
                                           size_t len)
{
    const struct flag *hit = NULL;
    size_t hits = 0;

    for (const struct flag *const *t = tables; *t; t++)
        for (const struct flag *f = *t; f->names; f++) {
            size_t n = strcspn(f->names, "|");
            if (n < len || strncmp(f->names, name, len) != 0)
                continue;
            if (n == len)
                return f;
            if (hit != f)
                hits++;
            hit = f;
        }
    return hits == 1 ? hit : NULL;
}

static bool short_name(const struct flag *f, char c)
{
    char s[2] = { c, '\0' };
    return has_name(f, s, 1);
}

/* What one flag sets; false: the runtime stops here (help, version). */
static bool apply(struct rv_args *a, const struct flag *f, const char *value)
{
    const char *n = f->names;
    size_t len = strcspn(n, "|");

#define IS(s) (len == sizeof(s) - 1 && strncmp(n, s, len) == 0)
    if (IS("help") || IS("usage") || IS("version"))
        return false;
    if (!a->sub) {
        if (IS("root")) a->root = value;
        else if (IS("log")) a->log = value;
        else if (IS("log-format")) a->log_format = value;
        else if (IS("systemd-cgroup")) a->systemd_cgroup = true;
        else if (IS("cgroup-manager")) a->systemd_cgroup = strcmp(value, "systemd") == 0;
        else if (IS("debug")) a->debug = true;
        return true;
    }
    if (IS("bundle")) a->bundle = value;
    else if (IS("config")) a->config = value;
    else if (IS("process")) a->process = value;
#undef IS
    return true;
}

/* Go's strconv.ParseBool */
static int go_bool(const char *v)
{
    static const char *const t[] = { "1", "t", "T", "true", "TRUE", "True", NULL };
    static const char *const f[] = { "0", "f", "F", "false", "FALSE", "False", NULL };
    for (int i = 0; t[i]; i++)
        if (strcmp(v, t[i]) == 0)
            return 1;
    for (int i = 0; f[i]; i++)
        if (strcmp(v, f[i]) == 0)
            return 0;
    return -1;
}

/* --- runc: Go's flag package --------------------------------------------- */

/* Parse v[0..n) (Go's FlagSet.Parse). Returns the index of the first
 * argument after the flags, -1 when the runtime fails or only prints help. */
static int go_parse(struct rv_args *a, const struct flag *const *tables, char *const *v, int n)
{
    int i = 0;

    while (i < n) {
        const char *s = v[i], *name, *eq, *value = NULL;
        size_t len;
        if (strlen(s) < 2 || s[0] != '-')
            break;
        name = s + 1 + (s[1] == '-');
        if (s[1] == '-' && s[2] == '\0')
            return i + 1;
        if (!*name || *name == '-' || *name == '=')
            return -1;
        i++;
        eq = strchr(name, '=');
        len = eq ? (size_t)(eq - name) : strlen(name);
        const struct flag *f = find(tables, name, len);
        if (!f)
            return -1;
        if (f->kind == BOOL) {
            int b = eq ? go_bool(eq + 1) : 1;
            if (b < 0)
                return -1;
            if (!b) {
                if (!a->sub && has_name(f, "systemd-cgroup", 14)) a->systemd_cgroup = false;
                if (!a->sub && has_name(f, "debug", 5)) a->debug = false;
                continue;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (i < n) {
            value = v[i++];
        } else {
            return -1;
        }
        if (!apply(a, f, value))
            return -1;
    }
    return i;
}

/* urfave/cli v1.22's reorderArgs: flags (and a value after one without "=")
 * first, the rest after them, in order; "--" and all after it last. */
static void reorder(char *const *in, int n, char **out)
{
    int o = 0, rest = 0;
    char *nonflags[RV_ARGS_MAX];
    bool want_value = false;

    for (int i = 0; i < n; i++) {
        const char *s = in[i];
        if (strcmp(s, "--") == 0) {
            while (i < n)
                nonflags[rest++] = in[i++];
            break;
        }
        if (want_value && s[0] != '-') {
            want_value = false;
            out[o++] = in[i];
            continue;
        }
        want_value = false;
        if (strcmp(s, "-") != 0 && s[0] == '-') {
            out[o++] = in[i];
            want_value = !strchr(s, '=');
        } else {
            nonflags[rest++] = in[i];
        }
    }
    memcpy(out + o, nonflags, (size_t)rest * sizeof(*out));
}

static void parse_runc(int argc, char *const argv[], struct rv_args *a)
{
    const struct flag *const global[] = { runc_global, runc_help, NULL };
    const struct command *c;
    int first = go_parse(a, global, argv + 1, argc - 1), n;
    char *args[RV_ARGS_MAX];

    if (first < 0 || first + 1 >= argc)
        return;
    a->sub_index = first + 1;
    a->sub = argv[a->sub_index];
    for (c = runc_commands; c->name && strcmp(c->name, a->sub) != 0; c++)
        ;
    if (!c->name)
        return;
    n = argc - a->sub_index - 1;
    char *const *v = argv + a->sub_index + 1;
    if (!c->keep_order) {
        if (n > RV_ARGS_MAX)
            return;
        reorder(v, n, args);
        v = args;
    }
    const struct flag *const tables[] = { c->flags, runc_help, NULL };
    first = go_parse(a, tables, v, n);
    if (first < 0 || (c->nargs && n - first != c->nargs))
        return;
    if (first < n)
        a->id = v[first];
    a->valid = true;
}

/* --- crun: getopt_long under argp ---------------------------------------- */

/* Parse v[0..n) as getopt_long does until the first non-option. Returns its
 * index (n if none), -1 when the runtime fails or only prints help. */
static int getopt_parse(struct rv_args *a, const struct flag *const *tables, char *const *v, int n)
{
    int i = 0;

    while (i < n) {
        const char *s = v[i];
        if (s[0] != '-' || s[1] == '\0')
            return i;
        i++;
        if (s[1] == '-') {
            if (s[2] == '\0')
                return i;
            const char *name = s + 2, *eq = strchr(name, '='), *value = NULL;
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const struct flag *f = find_long_prefix(tables, name, len);
            if (!f || (f->kind == BOOL && eq))
                return -1;
            if (f->kind == VALUE && !eq) {
                if (i >= n)
                    return -1;
                value = v[i++];
            } else if (eq) {
                value = eq + 1;
            }
            if (!apply(a, f, value))
                return -1;
            continue;
        }
        for (const char *p = s + 1; *p; p++) {
            const struct flag *f = NULL;
            for (const struct flag *const *t = tables; *t && !f; t++)
                for (const struct flag *g = *t; g->names && !f; g++)
                    if (short_name(g, *p))
                        f = g;
            if (!f)
                return -1;
            if (f->kind == BOOL) {
                if (!apply(a, f, NULL))
                    return -1;
                continue;
            }
            const char *value = p[1] ? p + 1 : NULL;
            if (!value && f->kind == VALUE) {
                if (i >= n)
                    return -1;
                value = v[i++];
            }
            if (!apply(a, f, value))
                return -1;
            break;
        }
    }
    return i;
}

static void parse_crun(int argc, char *const argv[], struct rv_args *a)
{
    const struct flag *const global[] = { crun_global, argp_defaults, NULL };
    const struct command *c;
    int first = getopt_parse(a, global, argv + 1, argc - 1), n;

    if (first < 0 || first + 1 >= argc)
        return;
    a->sub_index = first + 1;
    a->sub = argv[a->sub_index];
    for (c = crun_commands; c->name && strcmp(c->name, a->sub) != 0; c++)
        ;
    if (!c->name)
        return;
    n = argc - a->sub_index - 1;
    const struct flag *const tables[] = { c->flags, argp_defaults, NULL };
    first = getopt_parse(a, tables, argv + a->sub_index + 1, n);
    if (first < 0 || (c->nargs && n - first != c->nargs))
        return;
    if (first < n)
        a->id = argv[a->sub_index + 1 + first];
    a->valid = true;
}

enum rv_dialect rv_args_dialect(const char *runtime)
{
    const char *base = strrchr(runtime, '/');
    base = base ? base + 1 : runtime;
    return strncmp(base, "crun", 4) == 0 ? RV_DIALECT_CRUN : RV_DIALECT_RUNC;
}

void rv_args_parse(int argc, char *const argv[], enum rv_dialect d, struct rv_args *a)
{
    memset(a, 0, sizeof(*a));
    if (d == RV_DIALECT_CRUN)
        parse_crun(argc, argv, a);
    else
        parse_runc(argc, argv, a);
    if (!a->valid)
        a->bundle = a->config = a->process = a->id = NULL;
    if (a->bundle && !*a->bundle)
        a->bundle = NULL; /* both take "" for the working directory */
}

enum rv_cg_rule rv_cg_rule_of(const char *runtime)
{
    return rv_args_dialect(runtime) == RV_DIALECT_CRUN ? RV_CG_CRUN : RV_CG_RUNC;
}
