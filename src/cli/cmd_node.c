/* cmd_node.c - `resview node`: its options and which step (the steps are in
 * node/node_run.c). The agent of the Kubernetes DaemonSet
 * (hooks/kubernetes/), run inside the node image as a privileged, hostPID pod
 * whose hostPath volumes show the host's directories at their own paths.
 *
 *   run        the DaemonSet's container: everything below, then supervise
 *              LXCFS and `resview watch` until the pod ends
 *   install    binaries into PREFIX/versions/…, switch PREFIX/current; write
 *              /etc/resview/config.json (lxcfs.root) if there is none
 *   configure  containerd's `resview` runtime entry, and a restart only when
 *              the running containerd (CRI Status) lacks it
 *   uninstall  restore containerd's file, restart if the running containerd
 *              still has the entry; remove the binaries once nothing uses them
 *   ready      the readiness probe
 *   heal       NRI mode: once, what the agent does every RESVIEW_NODE_HEAL_S
 *              while the plugin is not registered (views, through the CRI,
 *              for the running containers created meanwhile)
 *
 * When the pod ends nothing on the node is changed: the runtime entry, the
 * binaries and the configuration stay (a rollout must not restart containerd
 * twice); only LXCFS stops, and the next agent's `watch` heals the views. */
#define _GNU_SOURCE
#include "resview/cli.h"
#include "resview/node_agent.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* --- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: resview node run|install|configure|uninstall|ready|heal [OPTIONS]\n"
        "  run          the DaemonSet's agent: install, configure, run LXCFS and `resview watch`\n"
        "               (NRI mode: install, run LXCFS, `resview watch` and `resview nri`;\n"
        "               containerd's configuration is not touched)\n"
        "  install      copy the binaries into PREFIX/versions/ and switch PREFIX/current\n"
        "  configure    write containerd's resview runtime entry; restart only if needed\n"
        "  uninstall    restore containerd's configuration; remove the binaries once unused\n"
        "  ready        readiness: binaries intact, LXCFS live, runtime entry in use\n"
        "               (NRI mode: the plugin registered)\n"
        "  heal         NRI mode: views, through the CRI, for the running containers created\n"
        "               while the plugin could not register (the agent: every\n"
        "               [RESVIEW_NODE_HEAL_S, 30] seconds while it is not registered)\n"
        "options (environment variable in brackets; the DaemonSet sets them from its ConfigMap):\n"
        "  --restart MODE             systemd | systemd:UNIT | none | command:/HOST/PATH\n"
        "                             [RESVIEW_NODE_RESTART, default systemd]\n"
        "  --containerd-config FILE   [RESVIEW_NODE_CONTAINERD_CONFIG, /etc/containerd/config.toml]\n"
        "  --cri-socket PATH          [RESVIEW_NODE_CRI_SOCKET, /run/containerd/containerd.sock]\n"
        "  --set-as-default           also make resview containerd's default runtime\n"
        "                             [RESVIEW_NODE_SET_AS_DEFAULT=true]\n"
        "  [RESVIEW_NODE_GPU_CONTAINERS] gpu (default) | all | none: which containers go through\n"
        "                             NVIDIA's runtime found in containerd's configuration\n"
        "  --uninstall                run: uninstall instead [RESVIEW_NODE_MODE=uninstall]\n"
        "  --nri                      NRI mode: the NRI plugin instead of containerd's runtime\n"
        "                             entry [RESVIEW_NODE_MODE=nri]\n"
        "  --nri-socket PATH          the runtime's NRI socket\n"
        "                             [RESVIEW_NODE_NRI_SOCKET, /var/run/nri/nri.sock]\n"
        "  --prefix DIR               host directory of the binaries (/opt/resview)\n"
        "  --payload DIR              the binaries to install (default: the image's)\n"
        "  --lxcfs PATH               LXCFS binary (/usr/bin/lxcfs)\n"
        "  --lxcfs-dir DIR            LXCFS mount point; its parent is the pod's\n"
        "                             Bidirectional volume (/var/lib/resview/lxcfs)\n"
        "  --resview-config FILE      resview's configuration on the host (/etc/resview/config.json)\n"
        "  --lock FILE                one agent per node (/run/resview/node.lock)\n"
        "  --host-pid PID             the process whose namespaces and root are the host's, where\n"
        "                             restarts run [RESVIEW_NODE_HOST_PID, default 1]\n");
}

int rv_cmd_node(const struct rv_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "restart", required_argument, NULL, 'r' },
        { "containerd-config", required_argument, NULL, 'c' },
        { "cri-socket", required_argument, NULL, 's' },
        { "set-as-default", no_argument, NULL, 'd' },
        { "uninstall", no_argument, NULL, 'u' },
        { "nri", no_argument, NULL, 'n' },
        { "nri-socket", required_argument, NULL, 'N' },
        { "prefix", required_argument, NULL, 'p' },
        { "payload", required_argument, NULL, 'P' },
        { "lxcfs", required_argument, NULL, 'l' },
        { "lxcfs-dir", required_argument, NULL, 'L' },
        { "resview-config", required_argument, NULL, 'C' },
        { "lock", required_argument, NULL, 'k' },
        { "host-pid", required_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct rv_node_settings n;
    struct rv_error err = { 0 };
    const char *sub;
    int c;

    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    sub = argv[1];
    if (rv_node_settings_init(&n, cfg, &err) < 0) {
        fprintf(stderr, "resview node: %s\n", err.msg);
        return 2;
    }
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': n.ctd.restart = optarg; break;
        case 'c': n.ctd.config = optarg; break;
        case 's': n.ctd.cri_socket = optarg; break;
        case 'd': n.ctd.set_default = true; break;
        case 'u': n.uninstall = true; break;
        case 'n': n.nri = true; break;
        case 'N': n.nri_socket = optarg; break;
        case 'p': n.prefix = optarg; break;
        case 'P': snprintf(n.payload, sizeof(n.payload), "%s", optarg); break;
        case 'l': n.lxcfs_bin = optarg; break;
        case 'L': n.lxcfs_dir = optarg; break;
        case 'C': n.rv_config = optarg; break;
        case 'k': n.lock_path = optarg; break;
        case 'H': n.host_pid = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(sub, "uninstall") == 0)
        n.uninstall = true;
    if (rv_node_settings_check(&n, &err) < 0) {
        fprintf(stderr, "resview node: %s\n", err.msg);
        return 2;
    }
    rv_node_signals_block();

    if (strcmp(sub, "run") == 0)
        return rv_node_run(&n);
    if (strcmp(sub, "ready") == 0)
        return rv_node_ready(&n);
    if (strcmp(sub, "heal") == 0) {
        unsigned healed;
        if (rv_node_heal(&n, RV_NODE_HEAL_TIMEOUT_MS, &healed, &err) < 0) {
            fprintf(stderr, "resview node heal: %s\n", err.msg);
            return 1;
        }
        printf("%u container%s given views\n", healed, healed == 1 ? "" : "s");
        return 0;
    }
    if (strcmp(sub, "install") == 0 || strcmp(sub, "configure") == 0 || strcmp(sub, "uninstall") == 0)
        return rv_node_step(&n, sub);
    fprintf(stderr, "resview node: unknown step `%s`\n", sub);
    usage(stderr);
    return 2;
}
