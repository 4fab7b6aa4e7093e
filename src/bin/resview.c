/* resview - admin CLI. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/log.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(const struct rv_config *, int, char **);
    const char *help;
} commands[] = {
    { "env", rv_cmd_env, "env --bundle DIR | --spec FILE   show the variables a container would get, and why" },
    { "repair", rv_cmd_repair, "repair [--all | ID...]          re-attach LXCFS views after an LXCFS restart" },
    { "watch", rv_cmd_watch, "watch                          repair automatically whenever LXCFS comes back" },
    { "configure", rv_cmd_configure, "configure --engine=NAME [...]  register resview with a container engine" },
    { "node", rv_cmd_node, "node run|install|configure|uninstall|ready   the Kubernetes node agent (DaemonSet)" },
    { "nri", rv_cmd_nri, "nri [--socket PATH]            the NRI plugin: views and variables with no runtime class" },
    { "doctor", rv_cmd_doctor, "doctor                         check the installation and say what to fix" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: resview COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %s\n", commands[i].help);
    fprintf(f, "  version                        print the version\n");
}

int main(int argc, char *argv[])
{
    struct rv_config cfg;
    struct rv_error err;

    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("resview %s\n", RV_VERSION);
        return 0;
    }
    rv_log_init("cli", NULL);
    if (rv_config_load(&cfg, &err) < 0) {
        /* doctor reports a broken configuration itself */
        if (strcmp(argv[1], "doctor") != 0) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
        rv_config_defaults(&cfg);
    }
    rv_log_init("cli", &cfg);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(&cfg, argc - 1, argv + 1);
    fprintf(stderr, "resview: unknown command `%s`\n", argv[1]);
    usage(stderr);
    return 2;
}
