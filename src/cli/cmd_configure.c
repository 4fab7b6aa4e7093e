/* cmd_configure.c - `resview configure`: register resview with an engine. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/engine.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: resview configure --engine=NAME [--config PATH] [--set-as-default]\n"
            "                         [--runtime-path PATH] [--hook-path PATH] [--dry-run] [--uninstall]\n"
            "  NAME: containerd, docker, podman, crio, enroot, slurm (repeat --engine for several)\n"
            "  --config PATH         the file to edit (default per engine, see below)\n"
            "  --set-as-default      also make resview the engine's default runtime\n"
            "  --runtime-path PATH   resview-runtime to register (default: next to this program)\n"
            "  --hook-path PATH      resview-hook for enroot and hooks.d (default: next to this program)\n"
            "  --hooks-dir DIR       podman/CRI-O: where their OCI hooks.d file goes\n"
            "                        (default " RV_HOOKSD_DIR_DEFAULT ")\n"
            "  --containerd-version 2|3   config version of a new containerd file (default: detect)\n"
            "  --slurm-version X.Y   Slurm version a new oci.conf is for (default: detect)\n"
            "  --dry-run             print the new file instead of writing it\n"
            "  --uninstall           take resview's entries out again\n"
            "default files:\n");
    for (size_t i = 0; rv_engines[i]; i++)
        fprintf(f, "  %-11s %s\n", rv_engines[i]->name, rv_engines[i]->default_config);
}

/* dir of /proc/self/exe + name, if that file exists; else fallback. */
static void sibling(const char *name, const char *fallback, char *out, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            if (rv_snprintf(out, size, "%s/%s", self, name) >= 0 && access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, size, "%s", fallback);
}

int rv_cmd_configure(const struct rv_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "engine", required_argument, NULL, 'e' },
        { "config", required_argument, NULL, 'c' },
        { "set-as-default", no_argument, NULL, 'd' },
        { "runtime-path", required_argument, NULL, 'r' },
        { "hook-path", required_argument, NULL, 'k' },
        { "hooks-dir", required_argument, NULL, 'H' },
        { "containerd-version", required_argument, NULL, 'V' },
        { "slurm-version", required_argument, NULL, 'S' },
        { "dry-run", no_argument, NULL, 'n' },
        { "uninstall", no_argument, NULL, 'u' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const struct rv_engine *engines[16];
    size_t n_engines = 0;
    struct rv_engine_opts o = { 0 };
    char runtime[PATH_MAX], hook[PATH_MAX], hooks_file[PATH_MAX];
    const char *hooks_dir = RV_HOOKSD_DIR_DEFAULT;
    int c, rc = 0;

    (void)cfg;
    sibling("resview-runtime", RV_RUNTIME_PATH_DEFAULT, runtime, sizeof(runtime));
    sibling("resview-hook", RV_HOOK_PATH_DEFAULT, hook, sizeof(hook));
    o.runtime_path = runtime;
    o.hook_path = hook;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': {
            cleanup_free char *list = strdup(optarg);
            char *save = NULL;
            for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
                const struct rv_engine *e = rv_engine_find(t);
                if (!e) {
                    fprintf(stderr, "resview configure: unknown engine `%s`\n", t);
                    usage(stderr);
                    return 2;
                }
                if (n_engines < sizeof(engines) / sizeof(engines[0]))
                    engines[n_engines++] = e;
            }
            break;
        }
        case 'c': o.config = optarg; break;
        case 'd': o.set_default = true; break;
        case 'r': o.runtime_path = optarg; break;
        case 'k': o.hook_path = optarg; break;
        case 'H': hooks_dir = optarg; break;
        case 'V':
            o.containerd_version = atoi(optarg);
            if (o.containerd_version != 2 && o.containerd_version != 3) {
                fprintf(stderr, "resview configure: --containerd-version must be 2 or 3\n");
                return 2;
            }
            break;
        case 'S': {
            unsigned maj, min;
            if (sscanf(optarg, "%u.%u", &maj, &min) != 2 || maj > 99 || min > 99) {
                fprintf(stderr, "resview configure: --slurm-version takes MAJOR.MINOR (23.02)\n");
                return 2;
            }
            o.slurm_version = (int)(maj * 100 + min);
            break;
        }
        case 'n': o.dry_run = true; break;
        case 'u': o.uninstall = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || n_engines == 0) {
        usage(stderr);
        return 2;
    }
    if (o.config && n_engines > 1) {
        fprintf(stderr, "resview configure: --config goes with one --engine\n");
        return 2;
    }
    if (o.runtime_path[0] != '/' || o.hook_path[0] != '/') {
        fprintf(stderr, "resview configure: --runtime-path and --hook-path must be absolute\n");
        return 2;
    }
    if (!o.uninstall && access(o.runtime_path, X_OK) != 0)
        fprintf(stderr, "resview configure: warning: `%s` is not an executable (yet)\n", o.runtime_path);
    if (rv_snprintf(hooks_file, sizeof(hooks_file), "%s/resview-lxcfs.json", hooks_dir) < 0) {
        fprintf(stderr, "resview configure: --hooks-dir is too long\n");
        return 2;
    }
    for (size_t i = 0; i < n_engines; i++) {
        struct rv_error err = { 0 };
        if (rv_engine_apply(engines[i], &o, &err) < 0) {
            fprintf(stderr, "resview configure: %s\n", err.msg);
            rc = 1;
            continue;
        }
        /* podman and CRI-O also get the hooks.d file: LXCFS views for every
         * container, also those started without the runtime */
        if (engines[i] == &rv_engine_podman || engines[i] == &rv_engine_crio) {
            struct rv_engine_opts ho = o;
            ho.config = hooks_file;
            if (rv_engine_apply(&rv_engine_hooksd, &ho, &err) < 0) {
                fprintf(stderr, "resview configure: %s\n", err.msg);
                rc = 1;
            }
        }
    }
    return rc;
}
