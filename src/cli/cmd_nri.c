/* cmd_nri.c - `resview nri [--socket PATH] [--hook PATH]`: the NRI plugin
 * (src/nri/). --hook: the hook's path on the host, where the runtime runs
 * it, when it differs from hook.path (the node agent's plugin runs in the
 * node image, the hook is the one it installed under /opt/resview). */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/log.h"
#include "resview/nri.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rv_cmd_nri(const struct rv_config *cfg, int argc, char **argv)
{
    const char *socket_path = RV_NRI_SOCKET_DEFAULT, *hook = NULL;
    static struct rv_config c;
    struct rv_error err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else if (strncmp(argv[i], "--socket=", 9) == 0) {
            socket_path = argv[i] + 9;
        } else if (strcmp(argv[i], "--hook") == 0 && i + 1 < argc) {
            hook = argv[++i];
        } else if (strncmp(argv[i], "--hook=", 7) == 0) {
            hook = argv[i] + 7;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: resview nri [--socket PATH] [--hook PATH]\n"
                   "  run resview as an NRI plugin on the runtime's socket (default %s):\n"
                   "  every container created gets the variables and the LXCFS views' hook\n"
                   "  (--hook: the hook's path, instead of hook.path); one instance per socket:\n"
                   "  a second one exits at once, naming the first\n",
                   RV_NRI_SOCKET_DEFAULT);
            return 0;
        } else {
            fprintf(stderr, "resview nri: unknown argument `%s` (usage: resview nri [--socket PATH] [--hook PATH])\n",
                    argv[i]);
            return 2;
        }
    }
    c = *cfg;
    if (hook && (hook[0] != '/' || rv_snprintf(c.hook_path, sizeof(c.hook_path), "%s", hook) < 0)) {
        fprintf(stderr, "resview nri: --hook: an absolute path, not `%s`\n", hook);
        return 2;
    }
    const char *backoff = getenv("RESVIEW_NRI_SYNC_BACKOFF_MS");
    if (backoff && (rv_nri_sync_backoff_ms = atol(backoff)) <= 0) {
        fprintf(stderr, "resview nri: RESVIEW_NRI_SYNC_BACKOFF_MS: a number of ms, not `%s`\n", backoff);
        return 2;
    }
    rv_log_init("nri", &c);   /* its lines say resview-nri */
    if (rv_nri_run(&c, socket_path, &err) < 0) {
        rv_log(RV_ERROR, "%s", err.msg);
        return 1;
    }
    return 0;
}
