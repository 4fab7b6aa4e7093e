/* Argument parsing on the argv lines real engines send. */
#include "resview/args.h"
#include "unit.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

static void parse(struct rv_args *a, char **v)
{
    int n = 0;
    while (v[n])
        n++;
    rv_args_parse(n, v, a);
}

int main(void)
{
    struct rv_args a;

    /* containerd-shim-runc-v2 (also docker via containerd) */
    parse(&a, ARGV("runc", "--root", "/run/containerd/runc/k8s.io", "--log",
                   "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/log.json",
                   "--log-format", "json", "--systemd-cgroup", "create", "--bundle",
                   "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc", "--pid-file",
                   "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/init.pid", "abc"));
    ok_str(a.sub, "create", "containerd: subcommand");
    ok_str(a.bundle, "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc", "containerd: bundle");
    ok_str(a.id, "abc", "containerd: id");
    ok_str(a.root, "/run/containerd/runc/k8s.io", "containerd: root");
    ok_str(a.log_format, "json", "containerd: log format");
    ok(a.systemd_cgroup, "containerd: systemd cgroup");

    /* podman via conmon: --flag=value forms, options after the subcommand */
    parse(&a, ARGV("/usr/bin/runc", "--systemd-cgroup", "--root=/run/runc", "--log-format=json",
                   "--log=/var/lib/containers/storage/overlay-containers/x/userdata/oci-log",
                   "create", "--bundle=/var/lib/containers/storage/overlay-containers/x/userdata",
                   "--pid-file=/run/containers/storage/overlay-containers/x/userdata/pidfile",
                   "--no-new-keyring", "xid"));
    ok_str(a.sub, "create", "podman: subcommand");
    ok_str(a.bundle, "/var/lib/containers/storage/overlay-containers/x/userdata", "podman: bundle with =");
    ok_str(a.id, "xid", "podman: id after a boolean flag");
    ok_str(a.root, "/run/runc", "podman: root with =");

    /* -b short form, last one wins, console socket with a value */
    parse(&a, ARGV("runc", "run", "-b", "/a", "--console-socket", "/s.sock", "--bundle", "/b", "-d", "id1"));
    ok_str(a.bundle, "/b", "last --bundle wins");
    ok_str(a.id, "id1", "run: id");
    ok(rv_args_edits_bundle(&a), "run edits the bundle");

    /* no bundle: the working directory */
    parse(&a, ARGV("runc", "create", "c1"));
    ok(a.bundle == NULL && a.id && a.id[0] == 'c', "create without --bundle");

    /* pass-through subcommands */
    parse(&a, ARGV("runc", "--root", "/r", "state", "c1"));
    ok_str(a.sub, "state", "state subcommand");
    ok(!rv_args_edits_bundle(&a), "state does not edit");
    parse(&a, ARGV("runc", "--root", "/r", "delete", "--force", "c1"));
    ok_str(a.id, "c1", "delete --force id");
    parse(&a, ARGV("runc", "--root", "/r", "delete", "-f", "c2"));
    ok_str(a.id, "c2", "delete -f: -f is --force, not a value flag");
    parse(&a, ARGV("runc", "ps", "-f", "json", "c3"));
    ok_str(a.id, "c3", "ps -f json: -f takes a value");
    parse(&a, ARGV("runc", "list", "--format=json"));
    ok(a.id == NULL, "list --format=json has no id");
    parse(&a, ARGV("runc", "kill", "--all", "c4", "KILL"));
    ok_str(a.id, "c4", "kill --all id signal");
    parse(&a, ARGV("runc", "features"));
    ok_str(a.sub, "features", "features");
    ok(a.id == NULL, "features has no id");

    /* exec with a process file (containerd, docker exec) */
    parse(&a, ARGV("runc", "--root", "/r", "--log", "/l", "--log-format", "json", "exec",
                   "--process", "/tmp/runc-process123", "--detach", "--pid-file", "/p", "c9"));
    ok_str(a.sub, "exec", "exec subcommand");
    ok_str(a.process, "/tmp/runc-process123", "exec --process");
    ok_str(a.id, "c9", "exec id");
    parse(&a, ARGV("runc", "exec", "-p", "/x.json", "c9"));
    ok_str(a.process, "/x.json", "exec -p");

    /* flags given with one dash, --debug, crun's --cgroup-manager */
    parse(&a, ARGV("crun", "-root", "/r2", "--debug", "--cgroup-manager", "systemd", "create", "-bundle", "/b2", "c2"));
    ok_str(a.root, "/r2", "single-dash global flag");
    ok(a.debug, "--debug");
    ok_str(a.sub, "create", "subcommand after --cgroup-manager VALUE");
    ok_str(a.bundle, "/b2", "single-dash bundle");

    /* nothing at all, and a trailing flag without its value */
    parse(&a, ARGV("runc"));
    ok(a.sub == NULL, "no subcommand");
    parse(&a, ARGV("runc", "create", "--bundle"));
    ok(a.bundle == NULL && a.id == NULL, "dangling --bundle");
    parse(&a, ARGV("runc", "--version"));
    ok(a.sub == NULL, "--version only");
    return unit_done();
}
