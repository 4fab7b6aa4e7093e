/* args.c - runc argv parsing (urfave/cli conventions: -x or --x, "=value" or
 * a separate value, flags stop at the first positional or "--"). */
#define _GNU_SOURCE
#include "resview/args.h"

#include <string.h>

/* Global flags that take a value (runc and crun). */
static const char *const global_value_flags[] = {
    "root", "log", "log-format", "criu", "rootless", "cgroup-manager", NULL
};

/* Subcommand flags that take a value (create, run, exec and friends). */
static const char *const sub_value_flags[] = {
    "bundle", "b", "console-socket", "pid-file", "preserve-fds", "process", "p", "cwd",
    "env", "e", "user", "u", "additional-gids", "g", "process-label", "apparmor", "cap", "c",
    "cgroup", "image-path", "work-path", "parent-path", "page-server", "manage-cgroups-mode",
    "empty-ns", "status-fd", "lsm-profile", "lsm-mount-context", "interval", NULL
};

/* -f is --format (a value) for list and ps, but --force (no value) for delete. */
static const char *const format_value_flags[] = { "format", "f", NULL };

static bool in_list(const char *name, size_t len, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == len && strncmp(*list, name, len) == 0)
            return true;
    return false;
}

/* Split "-x", "--x", "--x=v". Returns false if arg is not a flag. */
static bool split_flag(const char *arg, const char **name, size_t *len, const char **value)
{
    if (arg[0] != '-' || arg[1] == '\0' || strcmp(arg, "--") == 0)
        return false;
    arg += (arg[1] == '-') ? 2 : 1;
    *name = arg;
    *value = strchr(arg, '=');
    *len = *value ? (size_t)(*value - arg) : strlen(arg);
    if (*value)
        (*value)++;
    return true;
}

static bool is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncmp(name, want, len) == 0;
}

void rv_args_parse(int argc, char *const argv[], struct rv_args *a)
{
    const char *name, *value;
    size_t len;
    int i;

    memset(a, 0, sizeof(*a));
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (!split_flag(argv[i], &name, &len, &value))
            break;
        if (in_list(name, len, global_value_flags) && !value && i + 1 < argc)
            value = argv[++i];
        if (is(name, len, "root")) a->root = value;
        else if (is(name, len, "log")) a->log = value;
        else if (is(name, len, "log-format")) a->log_format = value;
        else if (is(name, len, "criu")) a->criu = value;
        else if (is(name, len, "rootless")) a->rootless = value;
        else if (is(name, len, "systemd-cgroup")) a->systemd_cgroup = !value || strcmp(value, "false") != 0;
        else if (is(name, len, "debug")) a->debug = !value || strcmp(value, "false") != 0;
    }
    if (i >= argc)
        return;
    a->sub_index = i;
    a->sub = argv[i];
    for (i++; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            if (i + 1 < argc)
                a->id = argv[i + 1];
            break;
        }
        if (!split_flag(argv[i], &name, &len, &value)) {
            a->id = argv[i];
            break;
        }
        bool takes_value = in_list(name, len, sub_value_flags) ||
                           ((strcmp(a->sub, "list") == 0 || strcmp(a->sub, "ps") == 0) &&
                            in_list(name, len, format_value_flags));
        if (takes_value && !value) {
            if (i + 1 >= argc)
                break;
            value = argv[++i];
        }
        if (is(name, len, "bundle") || is(name, len, "b"))
            a->bundle = value;
        else if (is(name, len, "process") || is(name, len, "p"))
            a->process = value;
    }
}
