/* The node agent's pieces: versioned install and the atomic switch, the
 * integrity check, pruning and removal; the cgroup directories a host
 * command moves into; the protobuf reader and the CRI client's deadline. */
#define _GNU_SOURCE
#include "node/cri.h"
#include "node/hostexec.h"
#include "resview/node.h"
#include "resview/node_agent.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

static char tmp[64];

static void put(const char *rel, const char *text, mode_t mode)
{
    char p[512];
    struct rv_error err;
    snprintf(p, sizeof(p), "%s/%s", tmp, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    rv_mkdir_p(p, 0755, &err);
    *slash = '/';
    unlink(p);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror("write");
        fchmod(fd, mode);
        close(fd);
    }
}

static const char *link_of(const char *rel)
{
    static char buf[512];
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", tmp, rel);
    ssize_t n = readlink(p, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static bool exists(const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", tmp, rel);
    return access(p, F_OK) == 0;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void)
{
    struct rv_error err = { 0 };
    char id1[RV_NODE_ID_MAX], id2[RV_NODE_ID_MAX], id3[RV_NODE_ID_MAX], again[RV_NODE_ID_MAX];
    char payload[128], prefix[128], why[512], path[512];
    bool changed;

    snprintf(tmp, sizeof(tmp), "/tmp/test_node.XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    snprintf(payload, sizeof(payload), "%s/payload", tmp);
    snprintf(prefix, sizeof(prefix), "%s/opt", tmp);

    /* content ids */
    put("payload/bin/resview-runtime", "runtime v1", 0755);
    put("payload/bin/resview-hook", "hook v1", 0755);
    put("payload/share/resview/seccomp.json", "{}", 0644);
    ok(rv_node_tree_id(payload, "0.1.0", id1, sizeof(id1), &err) == 0 && strncmp(id1, "0.1.0-", 6) == 0,
       "content id of the payload: %s", id1);
    ok(rv_node_tree_id(payload, "0.1.0", again, sizeof(again), &err) == 0 && strcmp(id1, again) == 0,
       "same content, same id");
    chmod(strcat(strcpy(path, payload), "/bin/resview-hook"), 0700);
    ok(rv_node_tree_id(payload, "0.1.0", again, sizeof(again), &err) == 0 && strcmp(id1, again) != 0,
       "a mode change is a different id");
    chmod(path, 0755);

    /* first install */
    ok(rv_node_install(prefix, payload, "0.1.0", id2, sizeof(id2), &changed, &err) == 0 && changed,
       "install: %s", err.msg);
    ok_str(id2, id1, "installed version is the payload's id");
    snprintf(path, sizeof(path), "versions/%s", id1);
    ok_str(link_of("opt/current"), path, "current -> versions/<id> (relative)");
    ok(!exists("opt/previous"), "no previous on a first install");
    ok(rv_node_intact(prefix, payload, "0.1.0", why, sizeof(why), &err) == 1, "intact after install");
    snprintf(path, sizeof(path), "%s/current/bin/resview-runtime", prefix);
    struct stat st1, st2;
    ok(stat(path, &st1) == 0 && (st1.st_mode & 0777) == 0755, "runtime executable through current");

    /* the same again: nothing changes, the file is not rewritten */
    ok(rv_node_install(prefix, payload, "0.1.0", id2, sizeof(id2), &changed, &err) == 0 && !changed,
       "second install changes nothing");
    ok(stat(path, &st2) == 0 && st1.st_ino == st2.st_ino, "the installed binary is the same inode");

    /* an upgrade: a new directory, current switched, the old one kept as previous */
    put("payload/bin/resview-runtime", "runtime v2", 0755);
    ok(rv_node_install(prefix, payload, "0.1.0", id2, sizeof(id2), &changed, &err) == 0 && changed &&
       strcmp(id1, id2) != 0, "upgrade: new version %s", id2);
    snprintf(path, sizeof(path), "versions/%s", id1);
    ok_str(link_of("opt/previous"), path, "previous -> the old version");
    snprintf(path, sizeof(path), "%s/versions/%s/bin/resview-runtime", prefix, id1);
    ok(stat(path, &st2) == 0 && st1.st_ino == st2.st_ino, "the old binary is untouched (a running shim keeps it)");

    /* a damaged installed version is detected and replaced, never rewritten in place */
    snprintf(path, sizeof(path), "opt/versions/%s/bin/resview-hook", id2);
    put(path, "tampered", 0755);
    ok(rv_node_intact(prefix, payload, "0.1.0", why, sizeof(why), &err) == 0 && strstr(why, "differ"),
       "intact check finds the changed file: %s", why);
    snprintf(path, sizeof(path), "%s/versions/%s/bin/resview-hook", prefix, id2);
    ok(stat(path, &st1) == 0, "damaged file there");
    ok(rv_node_install(prefix, payload, "0.1.0", id3, sizeof(id3), &changed, &err) == 0 && !strcmp(id3, id2),
       "install again over the damaged version: %s", err.msg);
    ok(stat(path, &st2) == 0 && st1.st_ino != st2.st_ino, "…a fresh copy, the damaged one set aside");
    ok(rv_node_intact(prefix, payload, "0.1.0", why, sizeof(why), &err) == 1, "intact again");

    /* a third version: the first one is neither current nor previous, nothing runs it */
    put("payload/bin/resview-hook", "hook v3", 0755);
    ok(rv_node_install(prefix, payload, "0.1.0", id3, sizeof(id3), &changed, &err) == 0 && changed, "third version");
    snprintf(path, sizeof(path), "opt/versions/%s", id1);
    ok(rv_node_prune(prefix, &err) >= 2 && !exists(path), "prune removes the oldest version and the damaged copy");
    snprintf(path, sizeof(path), "opt/versions/%s", id2);
    ok(exists(path), "…and keeps previous");

    /* a version that a process executes is kept by prune and blocks removal */
    snprintf(path, sizeof(path), "%s/versions/%s/bin/sleeper", prefix, id2);
    {
        int in = open("/bin/sleep", O_RDONLY), out = open(path, O_WRONLY | O_CREAT, 0755);
        char buf[65536];
        ssize_t r;
        while (in >= 0 && out >= 0 && (r = read(in, buf, sizeof(buf))) > 0)
            if (write(out, buf, (size_t)r) != r)
                break;
        close(in);
        close(out);
    }
    pid_t sleeper = fork();
    if (sleeper == 0) {
        execl(path, "sleep", "30", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100; i++) {   /* until the exec happened */
        char exe[64], target[512] = "";
        snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)sleeper);
        ssize_t n = readlink(exe, target, sizeof(target) - 1);
        if (n > 0 && strstr(target, "sleeper"))
            break;
        usleep(10000);
    }
    ok(rv_node_remove(prefix, &err) < 0 && err.errnum == EBUSY && strstr(err.msg, "executed by process"),
       "remove refused while a process executes a file: %s", err.msg);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    ok(rv_node_remove(prefix, &err) == 0 && !exists("opt/current") && !exists("opt/previous") &&
       !exists("opt/versions"), "remove: current, previous, versions gone");

    /* cgroups a host command moves into */
    char *dirs = NULL;
    ok(rv_cgroup_dirs("12:memory:/\n11:cpu,cpuacct:/system.slice\n1:name=systemd:/init.scope\n0::/init.scope\n",
                      true, &dirs, &err) == 0, "cgroup dirs (v1 hybrid)");
    ok_str(dirs, "/sys/fs/cgroup/memory\n/sys/fs/cgroup/cpu,cpuacct/system.slice\n"
           "/sys/fs/cgroup/systemd/init.scope\n/sys/fs/cgroup/unified/init.scope\n", "…one per hierarchy");
    free(dirs);
    ok(rv_cgroup_dirs("0::/\n", false, &dirs, &err) == 0, "cgroup dirs (v2)");
    ok_str(dirs, "/sys/fs/cgroup\n", "…the root");
    free(dirs);
    ok(rv_cgroup_dirs("garbage\n", false, &dirs, &err) < 0, "malformed /proc/PID/cgroup refused");

    /* protobuf: StatusResponse{status{}, info{"a": "1", "config": "{...}"}} */
    static const char msg[] = "\x0a\x00" "\x12\x06\x0a\x01" "a" "\x12\x01" "1"
                              "\x12\x0f\x0a\x06" "config" "\x12\x05" "{\"x\"}";
    const char *v;
    size_t vl, pos = 0, n = 0;
    while (rv_pb_next_bytes(msg, sizeof(msg) - 1, 2, &pos, &v, &vl) == 1)
        n++;
    ok(n == 2, "two map entries in field 2");
    pos = 0;
    ok(rv_pb_next_bytes("\x12\x7f" "ab", 4, 2, &pos, &v, &vl) < 0, "length beyond the message refused");
    pos = 0;
    ok(rv_pb_next_bytes("\x0b", 1, 2, &pos, &v, &vl) < 0, "unknown wire type refused");

    /* ListPodSandboxResponse: ready pods of a runtime handler (state 0 is absent on the wire) */
    static const char pods[] = "\x0a\x0c" "\x0a\x01" "a" "\x3a\x07" "resview"
                               "\x0a\x0e" "\x0a\x01" "b" "\x18\x01" "\x3a\x07" "resview"
                               "\x0a\x03" "\x0a\x01" "c"
                               "\x0a\x0d" "\x0a\x01" "d" "\x12\x02\x0a\x00" "\x3a\x04" "runc";
    unsigned count = 9;
    ok(rv_cri_count_pods(pods, sizeof(pods) - 1, "resview", &count) == 0 && count == 1,
       "ListPodSandbox: one ready pod of handler resview (the other one is not ready): %u", count);
    ok(rv_cri_count_pods(pods, sizeof(pods) - 1, "", &count) == 0 && count == 1,
       "…one without a handler (containerd's default)");
    ok(rv_cri_count_pods(pods, sizeof(pods) - 1, "runc", &count) == 0 && count == 1, "…one of handler runc");
    ok(rv_cri_count_pods("", 0, "resview", &count) == 0 && count == 0, "…none in an empty answer");
    ok(rv_cri_count_pods("\x0a\x05\x0a\x09" "abc", 7, "resview", &count) < 0, "…a malformed pod refused");

    /* the healing without NRI: running containers, their pids, their pods */
    static const char ctrs[] =
        "\x0a\x37" "\x0a\x02" "c1" "\x12\x02" "p1" "\x30\x01"
            "\x4a\x19" "\x0a\x10" "resview.io/lxcfs" "\x12\x05" "false"
            "\x4a\x10" "\x0a\x06" "tenant" "\x12\x06" "secret"
        "\x0a\x0a" "\x0a\x02" "c2" "\x12\x02" "p2" "\x30\x02";
    struct rv_cri_running *rc = NULL;
    size_t nrc = 0;
    ok(rv_cri_take_containers(ctrs, sizeof(ctrs) - 1, &rc, &nrc) == 0 && nrc == 2 && strcmp(rc[0].id, "c1") == 0 &&
       strcmp(rc[0].pod, "p1") == 0 && !rc[1].id[0], "ListContainers: the running one kept, the exited one not");
    ok(rc && rc[0].ann[0] && strcmp(rc[0].ann[0], "resview.io/lxcfs") == 0 && strcmp(rc[0].ann[1], "false") == 0 &&
       !rc[0].ann[2], "...its resview.io annotation kept, the tenant's not");
    static const char status[] = "\x0a\x00" "\x12\x12" "\x0a\x04" "info" "\x12\x0a" "{\"pid\":42}";
    ok(rc && rv_cri_take_status(status, sizeof(status) - 1, &rc[0]) == 0 && rc[0].pid == 42,
       "ContainerStatus verbose: the pid of its info");
    ok(rc && rv_cri_take_status("\x0a\x00", 2, &rc[0]) < 0 && rc[0].pid == 0, "...no info: no pid");
    static const char pods2[] = "\x0a\x23" "\x0a\x02" "p1" "\x32\x17" "\x0a\x0e" "resview.io/env" "\x12\x05" "false"
                                "\x3a\x04" "runc";
    ok(rc && rv_cri_take_pods(pods2, sizeof(pods2) - 1, rc, nrc) == 0 && strcmp(rc[0].handler, "runc") == 0 &&
       rc[0].pod_ann[0] && strcmp(rc[0].pod_ann[0], "resview.io/env") == 0 && !rc[1].handler[0],
       "ListPodSandbox: the pod's runtime handler and resview.io annotations");
    rv_cri_running_free(rc, nrc);
    ok(rv_cri_take_containers(ctrs, 20, &rc, &nrc) < 0 && !rc && nrc == 0, "...a cut message refused");

    /* the CRI client never waits past its deadline: a server that accepts and says nothing */
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/silent.sock", tmp);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    ok(ls >= 0 && bind(ls, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(ls, 4) == 0, "silent server");
    char name[64], version[64];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ok(rv_cri_version(sa.sun_path, 300, name, sizeof(name), version, sizeof(version), &err) < 0 &&
       err.errnum == ETIMEDOUT, "silent CRI socket: timed out: %s", err.msg);
    ok(ms_since(&t0) < 3000, "…within the deadline");
    close(ls);
    ok(rv_cri_version(sa.sun_path, 300, name, sizeof(name), version, sizeof(version), &err) < 0 &&
       strstr(err.msg, "connect"), "nobody listening: connect fails: %s", err.msg);

    /* the agent's modes (RESVIEW_NODE_MODE): NRI mode's settings */
    struct rv_node_settings ns;
    struct rv_config cfg;
    rv_config_defaults(&cfg);
    setenv("RESVIEW_NODE_MODE", "nri", 1);
    ok(rv_node_settings_init(&ns, &cfg, &err) == 0 && rv_node_settings_check(&ns, &err) == 0 && ns.nri &&
       !ns.uninstall && strcmp(ns.nri_socket, "/var/run/nri/nri.sock") == 0,
       "RESVIEW_NODE_MODE=nri: NRI mode on NRI's default socket");
    ns.uninstall = true;   /* `resview node uninstall` with the NRI overlay's values */
    ok(rv_node_settings_check(&ns, &err) == 0 && !ns.nri && ns.ctd.uninstall, "…uninstall wins over nri");
    setenv("RESVIEW_NODE_NRI_SOCKET", "nri.sock", 1);
    ok(rv_node_settings_init(&ns, &cfg, &err) == 0 && rv_node_settings_check(&ns, &err) < 0 &&
       strstr(err.msg, "absolute"), "a relative NRI socket refused: %s", err.msg);
    unsetenv("RESVIEW_NODE_NRI_SOCKET");
    setenv("RESVIEW_NODE_SET_AS_DEFAULT", "true", 1);
    ok(rv_node_settings_init(&ns, &cfg, &err) == 0 && rv_node_settings_check(&ns, &err) < 0 &&
       strstr(err.msg, "not nri"), "nri with SET_AS_DEFAULT=true refused: %s", err.msg);
    unsetenv("RESVIEW_NODE_SET_AS_DEFAULT");
    setenv("RESVIEW_NODE_MODE", "runtimeclass", 1);
    ok(rv_node_settings_init(&ns, &cfg, &err) < 0 && strstr(err.msg, "install, nri or uninstall"),
       "an unknown mode names the three: %s", err.msg);
    unsetenv("RESVIEW_NODE_MODE");
    ok(rv_node_settings_init(&ns, &cfg, &err) == 0 && !ns.nri, "the default mode is install, not NRI");

    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        perror("cleanup");
    return unit_done();
}
