/* Argument parsing as runc and crun parse: the argv lines real engines send,
 * the corner cases where the two runtimes differ, and the flag tables
 * checked against the --help of the installed runc and crun. */
#define _GNU_SOURCE
#include "resview/args.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })
#define RUNC RV_DIALECT_RUNC
#define CRUN RV_DIALECT_CRUN

static void parse(struct rv_args *a, enum rv_dialect d, char **v)
{
    int n = 0;
    while (v[n])
        n++;
    rv_args_parse(n, v, d, a);
}

/* Every flag --help lists: a value-taking one consumes the next argument
 * ("X"), a boolean one does not; either way "id" is the id. Lines of runc
 * ("   --bundle value, -b value  ...") and of crun ("  -b, --bundle=DIR  ...",
 * "  -t, --tty[=TTY]"). Returns the number of flags checked. */
static int check_help(enum rv_dialect d, const char *rt, const char *sub)
{
    char cmd[256], line[1024];
    int checked = 0;
    FILE *f;

    snprintf(cmd, sizeof(cmd), "%s %s --help 2>&1", rt, sub ? sub : "");
    f = popen(cmd, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        char *p = line + strspn(line, " \t"), name[64];
        bool value, optional;
        if (p == line || p[0] != '-')
            continue;
        if (d == RUNC) {
            /* first token: --name [value] */
            size_t n = strcspn(p + 2, " ,");
            if (p[1] != '-' || n == 0 || n >= sizeof(name))
                continue;
            memcpy(name, p + 2, n);
            name[n] = '\0';
            value = strncmp(p + 2 + n, " value", 6) == 0;
            optional = false;
        } else {
            /* "-b, --bundle=DIR" or "--debug" or "-?, --help" */
            char *l = strstr(p, "--");
            size_t n;
            if (!l)
                continue;
            n = strcspn(l + 2, "=[ \t\n");
            if (n == 0 || n >= sizeof(name))
                continue;
            memcpy(name, l + 2, n);
            name[n] = '\0';
            value = l[2 + n] == '=';
            optional = l[2 + n] == '[';
        }
        if (strcmp(name, "help") == 0 || strcmp(name, "usage") == 0 || strcmp(name, "version") == 0)
            continue;
        char flag[80], *args[8];
        struct rv_args a;
        int k = 0;
        snprintf(flag, sizeof(flag), "--%s", name);
        args[k++] = (char *)rt;
        if (!sub)
            args[k++] = flag;
        if (!sub && value)
            args[k++] = "X";
        args[k++] = sub ? (char *)sub : "state";
        if (sub)
            args[k++] = flag;
        if (sub && value)
            args[k++] = "X";
        args[k++] = "id";
        args[k] = NULL;
        parse(&a, d, args);
        ok(a.valid && a.id && strcmp(a.id, "id") == 0, "%s %s: --%s is known%s (%s)", rt,
           sub ? sub : "(global)", name, value ? ", with a value" : optional ? ", value attached only" : ", without a value",
           a.id ? a.id : "invalid");
        checked++;
    }
    pclose(f);
    return checked;
}

static void check_runtime_help(enum rv_dialect d, const char *rt)
{
    static const char *const subs[] = { "create", "run", "exec", "delete", "kill", "ps", "list",
                                        "state", "start", "pause", "resume", "update", "spec", NULL };
    int n = check_help(d, rt, NULL);
    ok(n >= 5, "%s --help: %d global flags checked", rt, n);
    for (int i = 0; subs[i]; i++) {
        int m = check_help(d, rt, subs[i]);
        if (strcmp(subs[i], "create") == 0 || strcmp(subs[i], "run") == 0 || strcmp(subs[i], "exec") == 0)
            ok(m >= 5, "%s %s --help: %d flags checked", rt, subs[i], m);
    }
}

int main(void)
{
    struct rv_args a;

    /* containerd-shim-runc-v2 (also docker via containerd) */
    parse(&a, RUNC, ARGV("runc", "--root", "/run/containerd/runc/k8s.io", "--log",
                         "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/log.json",
                         "--log-format", "json", "--systemd-cgroup", "create", "--bundle",
                         "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc", "--pid-file",
                         "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/init.pid", "abc"));
    ok_str(a.sub, "create", "containerd: subcommand");
    ok_str(a.bundle, "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc", "containerd: bundle");
    ok_str(a.id, "abc", "containerd: id");
    ok_str(a.root, "/run/containerd/runc/k8s.io", "containerd: root");
    ok_str(a.log_format, "json", "containerd: log format");
    ok(a.systemd_cgroup && rv_args_edits_bundle(&a), "containerd: systemd cgroup, edits");

    /* podman via conmon: --flag=value forms */
    parse(&a, RUNC, ARGV("/usr/bin/runc", "--systemd-cgroup", "--root=/run/runc", "--log-format=json",
                         "--log=/var/lib/containers/storage/overlay-containers/x/userdata/oci-log",
                         "create", "--bundle=/var/lib/containers/storage/overlay-containers/x/userdata",
                         "--pid-file=/run/containers/storage/overlay-containers/x/userdata/pidfile",
                         "--no-new-keyring", "xid"));
    ok_str(a.bundle, "/var/lib/containers/storage/overlay-containers/x/userdata", "podman: bundle with =");
    ok_str(a.id, "xid", "podman: id after a boolean flag");
    ok_str(a.root, "/run/runc", "podman: root with =");
    parse(&a, CRUN, ARGV("/usr/bin/crun", "--systemd-cgroup", "--root=/run/crun", "--log-format=json",
                         "--log=/x/oci-log", "create", "--bundle=/x/userdata", "--pid-file=/x/pidfile",
                         "--no-new-keyring", "xid"));
    ok(a.valid && strcmp(a.bundle, "/x/userdata") == 0 && strcmp(a.id, "xid") == 0, "podman with crun");

    /* Slurm's oci.conf: run ID -b BUNDLE (flags after the id) */
    parse(&a, RUNC, ARGV("runc", "--rootless=true", "--root=/run/user/0/", "run", "n.u.1.0.0", "-b", "/var/spool/b"));
    ok_str(a.bundle, "/var/spool/b", "runc: run ID -b B (urfave/cli moves flags before the id)");
    ok_str(a.id, "n.u.1.0.0", "runc: ... the id");
    parse(&a, RUNC, ARGV("runc", "run", "c1", "--bundle", "/b"));
    ok(a.valid && rv_args_edits_bundle(&a) && strcmp(a.bundle, "/b") == 0, "runc: run ID --bundle B edits B");
    parse(&a, CRUN, ARGV("crun", "run", "c1", "--bundle", "/b"));
    ok(!a.valid && !rv_args_edits_bundle(&a), "crun: run ID --bundle B is refused by crun: nothing edited");
    parse(&a, RUNC, ARGV("runc", "run", "-d", "c1", "--bundle", "/b"));
    ok(!a.valid && !rv_args_edits_bundle(&a), "runc: run -d ID --bundle B: the id ends the flags, runc refuses 3 arguments");
    parse(&a, RUNC, ARGV("runc", "run", "c1", "-d", "--bundle", "/b"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0 && strcmp(a.id, "c1") == 0, "runc: run ID -d --bundle B");
    parse(&a, RUNC, ARGV("runc", "create", "c1", "extra"));
    ok(!a.valid, "runc: create with two ids is refused");

    /* -b short form, last one wins, console socket with a value */
    parse(&a, RUNC, ARGV("runc", "run", "-b", "/a", "--console-socket", "/s.sock", "--bundle", "/b", "-d", "id1"));
    ok_str(a.bundle, "/b", "last --bundle wins");
    ok_str(a.id, "id1", "run: id");
    parse(&a, CRUN, ARGV("crun", "run", "-b", "/a", "--console-socket", "/s.sock", "--bundle", "/b", "-d", "id1"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0 && strcmp(a.id, "id1") == 0, "crun: the same line");

    /* crun: --config/-f, clusters, attached values, abbreviations */
    parse(&a, CRUN, ARGV("crun", "create", "-f", "other.json", "--bundle", "/b", "c1"));
    ok(a.valid && strcmp(a.config, "other.json") == 0 && strcmp(a.bundle, "/b") == 0 && strcmp(a.id, "c1") == 0,
       "crun: create -f FILE: the spec file, not the id");
    parse(&a, CRUN, ARGV("crun", "run", "--config=x.json", "-db/b", "c1"));
    ok(a.valid && strcmp(a.config, "x.json") == 0 && strcmp(a.bundle, "/b") == 0, "crun: --config=F, -d and -b clustered");
    parse(&a, CRUN, ARGV("crun", "run", "-db", "/b", "c1"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0 && strcmp(a.id, "c1") == 0, "crun: -db DIR");
    parse(&a, CRUN, ARGV("crun", "create", "--bund", "/b", "c1"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0, "crun: --bund (a unique prefix of --bundle)");
    parse(&a, CRUN, ARGV("crun", "create", "--p", "/x", "c1"));
    ok(!a.valid, "crun: --p is ambiguous (--pid-file, --preserve-fds, --program-name)");
    parse(&a, RUNC, ARGV("runc", "create", "-f", "other.json", "c1"));
    ok(!a.valid, "runc: create has no -f");
    parse(&a, RUNC, ARGV("runc", "create", "--bund", "/b", "c1"));
    ok(!a.valid, "runc: no abbreviations");
    parse(&a, RUNC, ARGV("runc", "create", "-bundle", "/b", "c1"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0, "runc: -bundle (one dash)");
    parse(&a, CRUN, ARGV("crun", "create", "-bundle", "c1"));
    ok(a.valid && strcmp(a.bundle, "undle") == 0, "crun: -bundle is -b undle");
    parse(&a, RUNC, ARGV("runc", "create", "-b/b", "c1"));
    ok(!a.valid, "runc: -b/b is an unknown flag");

    /* global flags: runc 1.2's --pidfd-socket, crun's --log-level and --cgroup-manager */
    parse(&a, RUNC, ARGV("runc", "create", "--pidfd-socket", "/p.sock", "--bundle", "/b", "c1"));
    ok(a.valid && strcmp(a.bundle, "/b") == 0 && strcmp(a.id, "c1") == 0, "runc 1.2: --pidfd-socket takes a value");
    parse(&a, CRUN, ARGV("crun", "--log-level", "debug", "--cgroup-manager", "systemd", "create", "-b", "/b", "c1"));
    ok(a.valid && a.systemd_cgroup && strcmp(a.sub, "create") == 0 && strcmp(a.id, "c1") == 0,
       "crun: --log-level VALUE, --cgroup-manager systemd");
    parse(&a, RUNC, ARGV("runc", "--log-level", "debug", "create", "c1"));
    ok(!a.valid && a.sub == NULL, "runc: --log-level is not runc's");
    parse(&a, RUNC, ARGV("runc", "--systemd-cgroup=false", "--debug=1", "create", "c1"));
    ok(a.valid && !a.systemd_cgroup && a.debug, "runc: bool flags with =value");
    parse(&a, RUNC, ARGV("runc", "--debug=maybe", "create", "c1"));
    ok(!a.valid, "runc: a bool flag with a bad value");

    /* -- */
    parse(&a, RUNC, ARGV("runc", "create", "--bundle", "/b", "--", "-c1"));
    ok(a.valid && strcmp(a.id, "-c1") == 0, "runc: -- ends the flags");
    parse(&a, CRUN, ARGV("crun", "create", "--", "-c1"));
    ok(a.valid && strcmp(a.id, "-c1") == 0, "crun: -- ends the options");
    parse(&a, RUNC, ARGV("runc", "create", "c1", "--", "--bundle", "/b"));
    ok(!a.valid, "runc: nothing after -- is a flag");

    /* no bundle: the working directory; "" too */
    parse(&a, RUNC, ARGV("runc", "create", "c1"));
    ok(a.valid && a.bundle == NULL && strcmp(a.id, "c1") == 0, "create without --bundle");
    parse(&a, RUNC, ARGV("runc", "create", "--bundle=", "c1"));
    ok(a.valid && a.bundle == NULL, "--bundle= is the working directory");

    /* pass-through subcommands */
    parse(&a, RUNC, ARGV("runc", "--root", "/r", "state", "c1"));
    ok(a.sub && strcmp(a.sub, "state") == 0 && !rv_args_edits_bundle(&a), "state does not edit");
    parse(&a, RUNC, ARGV("runc", "--root", "/r", "delete", "--force", "c1"));
    ok_str(a.id, "c1", "delete --force id");
    parse(&a, RUNC, ARGV("runc", "--root", "/r", "delete", "c2", "-f"));
    ok_str(a.id, "c2", "runc: delete ID -f");
    parse(&a, CRUN, ARGV("crun", "delete", "-fr", "c.*"));
    ok_str(a.id, "c.*", "crun: delete -fr REGEX");
    parse(&a, RUNC, ARGV("runc", "ps", "-f", "json", "c3"));
    ok_str(a.id, "c3", "ps -f json: -f takes a value");
    parse(&a, RUNC, ARGV("runc", "list", "--format=json"));
    ok(a.valid && a.id == NULL, "list --format=json has no id");
    parse(&a, RUNC, ARGV("runc", "kill", "--all", "c4", "KILL"));
    ok_str(a.id, "c4", "kill --all id signal");
    parse(&a, RUNC, ARGV("runc", "features"));
    ok(a.valid && a.id == NULL && strcmp(a.sub, "features") == 0, "features has no id");

    /* exec: runc does not move flags there (SkipArgReorder) */
    parse(&a, RUNC, ARGV("runc", "--root", "/r", "--log", "/l", "--log-format", "json", "exec",
                         "--process", "/tmp/runc-process123", "--detach", "--pid-file", "/p", "c9"));
    ok(a.valid && strcmp(a.process, "/tmp/runc-process123") == 0 && strcmp(a.id, "c9") == 0, "exec --process F id");
    parse(&a, RUNC, ARGV("runc", "exec", "c9", "--process", "/x.json"));
    ok(a.valid && a.process == NULL && strcmp(a.id, "c9") == 0, "runc: exec ID --process F runs `--process F`");
    parse(&a, RUNC, ARGV("runc", "exec", "-p", "/x.json", "c9"));
    ok_str(a.process, "/x.json", "exec -p");
    parse(&a, CRUN, ARGV("crun", "exec", "-tp", "/x.json", "c9"));
    ok(a.valid && a.process == NULL && strcmp(a.id, "/x.json") == 0, "crun: -tp is --tty=p (an optional value is attached only)");
    parse(&a, CRUN, ARGV("crun", "exec", "-dp/x.json", "c9"));
    ok(a.valid && strcmp(a.process, "/x.json") == 0 && strcmp(a.id, "c9") == 0, "crun: -dp/x.json");

    /* help, version, unknown, nothing */
    parse(&a, RUNC, ARGV("runc", "create", "--help", "c1"));
    ok(!a.valid && !rv_args_edits_bundle(&a), "runc: create --help runs nothing");
    parse(&a, CRUN, ARGV("crun", "create", "-?", "c1"));
    ok(!a.valid, "crun: create -? runs nothing");
    parse(&a, RUNC, ARGV("runc", "--version"));
    ok(a.sub == NULL && !a.valid, "--version only");
    parse(&a, RUNC, ARGV("runc", "create", "--nosuch", "c1"));
    ok(!a.valid && !rv_args_edits_bundle(&a), "runc: an unknown flag: runc refuses, nothing edited");
    parse(&a, RUNC, ARGV("runc"));
    ok(a.sub == NULL, "no subcommand");
    parse(&a, RUNC, ARGV("runc", "create", "--bundle"));
    ok(!a.valid && a.bundle == NULL && a.id == NULL, "dangling --bundle");

    ok(rv_args_dialect("/usr/bin/crun") == CRUN && rv_args_dialect("crun") == CRUN &&
       rv_args_dialect("/opt/crun-v1") == CRUN && rv_args_dialect("/usr/bin/runc") == RUNC &&
       rv_args_dialect("nvidia-container-runtime") == RUNC, "dialect by the runtime's name");

    /* the flag tables against the installed runtimes */
    check_runtime_help(RUNC, "runc");
    check_runtime_help(CRUN, "crun");
    return unit_done();
}
