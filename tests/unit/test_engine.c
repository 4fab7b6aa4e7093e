/* test_engine.c - `resview configure` edits on sample files of every format:
 * install, idempotence, byte-exact uninstall, refused input left untouched,
 * and the TOML scanner on valid and invalid documents. */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/resview-unit-engine.XXXXXX";
static const char *samples = "tests/samples";

static char *slurp(const char *path, size_t *len)
{
    struct rv_error err;
    char *t = NULL;
    bool exists;
    if (rv_engine_read(path, &t, len, &exists, &err) < 0 || !exists) {
        free(t);
        return NULL;
    }
    return t;
}

static bool same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    bool same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

static void copy(const char *from, const char *to)
{
    size_t len;
    char *t = slurp(from, &len);
    FILE *f = fopen(to, "w");
    if (t && f)
        fwrite(t, 1, len, f);
    if (f)
        fclose(f);
    free(t);
}

static int run(const char *engine, const char *file, bool set_default, bool uninstall,
               struct rv_error *err)
{
    struct rv_engine_opts o = { .config = file, .runtime_path = "/opt/resview/bin/resview-runtime",
                                .hook_path = "/opt/resview/bin/resview-hook",
                                .set_default = set_default, .uninstall = uninstall,
                                .containerd_version = 2, .slurm_version = 2302 };
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    int rc = rv_engine_apply(rv_engine_find(engine), &o, err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(null);
    return rc;
}

/* install (x2), check content, uninstall, compare with the sample. */
static void round_trip(const char *engine, const char *sample, bool set_default, const char *expect)
{
    char src[512], file[512], once[512], bak[512];
    struct rv_error err = { 0 };
    size_t len;

    snprintf(src, sizeof(src), "%s/%s", samples, sample);
    snprintf(file, sizeof(file), "%s/%s", dir, sample);
    snprintf(once, sizeof(once), "%s/%s.once", dir, sample);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    copy(src, file);
    unlink(bak);
    ok(run(engine, file, set_default, false, &err) == 0, "%s %s: configure (%s)", engine, sample, err.msg);
    char *t = slurp(file, &len);
    ok(t && strstr(t, expect), "%s %s: has %s", engine, sample, expect);
    free(t);
    ok(same_file(bak, src), "%s %s: backup is the original", engine, sample);
    copy(file, once);
    ok(run(engine, file, set_default, false, &err) == 0 && same_file(file, once),
       "%s %s: twice = once", engine, sample);
    ok(run(engine, file, set_default, true, &err) == 0, "%s %s: uninstall (%s)", engine, sample, err.msg);
    ok(same_file(file, src), "%s %s: byte-for-byte restored", engine, sample);
    ok(run(engine, file, set_default, true, &err) == 0 && same_file(file, src),
       "%s %s: uninstall twice = once", engine, sample);
}

static void refused(const char *engine, const char *sample, const char *why)
{
    char src[512], file[512], bak[512];
    struct rv_error err = { 0 };

    snprintf(src, sizeof(src), "%s/%s", samples, sample);
    snprintf(file, sizeof(file), "%s/%s", dir, sample);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    copy(src, file);
    unlink(bak);
    ok(run(engine, file, true, false, &err) < 0, "%s %s: refused", engine, sample);
    ok(strstr(err.msg, why) != NULL, "%s %s: says why: %s", engine, sample, err.msg);
    ok(same_file(file, src) && access(bak, F_OK) != 0, "%s %s: untouched, no backup", engine, sample);
}

static void created(const char *engine, const char *name, const char *expect)
{
    char file[512];
    struct rv_error err = { 0 };
    size_t len;
    struct stat st;

    snprintf(file, sizeof(file), "%s/new/%s", dir, name);
    ok(run(engine, file, false, false, &err) == 0, "%s new %s: created (%s)", engine, name, err.msg);
    char *t = slurp(file, &len);
    ok(t && strstr(t, expect), "%s new %s: has %s", engine, name, expect);
    free(t);
    ok(run(engine, file, false, true, &err) == 0 && stat(file, &st) < 0,
       "%s new %s: uninstall removes the file it created", engine, name);
}

/* Text that looks like resview's markers but is the operator's: kept by
 * configure and by --uninstall; and our own block, once the operator edits
 * it, is the operator's too. */
static void lookalikes(void)
{
    char src[512], file[512], bak[512];
    struct rv_error err = { 0 };
    size_t len;
    char *t;

    round_trip("containerd", "containerd-lookalike.toml", true, "default_runtime_name = \"resview\"");
    snprintf(src, sizeof(src), "%s/containerd-lookalike.toml", samples);
    snprintf(file, sizeof(file), "%s/lookalike.toml", dir);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    copy(src, file);
    unlink(bak);
    ok(run("containerd", file, true, false, &err) == 0, "lookalikes: configured (%s)", err.msg);
    t = slurp(file, &len);
    ok(t && strstr(t, "oom_score = -999  # resview-added\n") &&
       strstr(t, "sandbox_image = \"registry.k8s.io/pause:3.9\"  # resview-added 0123456789abcdef\n") &&
       strstr(t, "snapshotter = \"overlayfs\"  # resview-was 0123456789abcdef: snapshotter = \"native\"\n") &&
       strstr(t, "\n# resview-end\n# resview-end 0123456789abcdef\n") &&
       strstr(t, "\n# resview-begin: added by `resview configure`, removed by `resview configure --uninstall`\n"),
       "lookalikes: the operator's lines are all still there");
    free(t);

    /* the operator edits inside our block: it is theirs now */
    t = slurp(file, &len);
    char *p = t ? strstr(t, "container_annotations = [\"resview.io/*\"]") : NULL;
    if (p) {
        memcpy(p, "container_annotations = [\"resview.io/x\"]", 40);
        FILE *f = fopen(file, "w");
        fwrite(t, 1, len, f);
        fclose(f);
    }
    ok(run("containerd", file, false, true, &err) == 0, "edited block: uninstall runs (%s)", err.msg);
    free(t);
    t = slurp(file, &len);
    ok(p && t && strstr(t, "resview.io/x") && strstr(t, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.resview]"),
       "edited block: left as the operator's");
    ok(t && !strstr(t, "default_runtime_name = \"resview\""), "... while the untouched marked line is put back");
    free(t);
    ok(run("containerd", file, false, false, &err) < 0 && strstr(err.msg, "not written by resview"),
       "edited block: configure refuses to take it over (%s)", err.msg);

    /* docker: a runtimes.resview entry resview did not write */
    refused("docker", "daemon-foreign.json", "not written by resview");
    snprintf(src, sizeof(src), "%s/daemon-foreign.json", samples);
    snprintf(file, sizeof(file), "%s/daemon-foreign.json", dir);
    copy(src, file);
    ok(run("docker", file, false, true, &err) == 0 && same_file(file, src),
       "docker: --uninstall leaves the operator's runtimes.resview and default-runtime");
}

/* What resview 0.1 wrote (tests/samples/v0.1, made by its real binary:
 * generate.sh there) is taken over by configure, byte for byte removed by
 * --uninstall, also straight from 0.1's file; a file 0.1 created is removed. */
static void upgrade(const char *engine, const char *name, bool set_default)
{
    char src[512], sbak[512], file[512], bak[512], once[512];
    struct rv_error err = { 0 };
    size_t len;
    struct stat st;

    snprintf(src, sizeof(src), "%s/v0.1/%s", samples, name);
    snprintf(sbak, sizeof(sbak), "%s%s", src, RV_BACKUP_SUFFIX);
    snprintf(file, sizeof(file), "%s/%s", dir, name);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    snprintf(once, sizeof(once), "%s.once", file);
    bool created = access(sbak, F_OK) != 0;
    for (int direct = 0; direct < 2; direct++) {
        copy(src, file);
        unlink(bak);
        if (!created)
            copy(sbak, bak);
        if (!direct) {
            ok(run(engine, file, set_default, false, &err) == 0, "0.1 %s: configure over it (%s)", name, err.msg);
            char *t = slurp(file, &len);
            ok(t && strstr(t, "/opt/resview/bin/resview-runtime") && !strstr(t, "resview-begin:") &&
               !strstr(t, "resview-was:") && !strstr(t, "# resview-added\n"),
               "0.1 %s: in today's form, 0.1's markers gone", name);
            free(t);
            ok(created ? access(bak, F_OK) != 0 : same_file(bak, sbak), "0.1 %s: %s", name,
               created ? "no backup of a file resview created" : "0.1's backup is kept");
            copy(file, once);
            ok(run(engine, file, set_default, false, &err) == 0 && same_file(file, once),
               "0.1 %s: twice = once", name);
        }
        ok(run(engine, file, set_default, true, &err) == 0, "0.1 %s: uninstall%s (%s)", name,
           direct ? " straight from 0.1's file" : "", err.msg);
        /* docker's file 0.1 created made resview the default: what is left
         * sets dockerd's own, since dockerd's reload keeps a default no file sets */
        bool runc = created && strcmp(engine, "docker") == 0;
        char *left = runc ? slurp(file, &len) : NULL;
        ok(runc ? left && strcmp(left, "{\n    \"default-runtime\": \"runc\"\n}\n") == 0
                : created ? stat(file, &st) < 0 : same_file(file, sbak), "0.1 %s: %s%s", name,
           runc ? "only dockerd's own default runtime is left" :
           created ? "the file 0.1 created is removed" : "byte-for-byte the original",
           direct ? " (straight from 0.1's file)" : "");
        free(left);
    }
}

/* Write text with lines inserted before line `at` (1-based) of from. */
static void insert_lines(const char *from, const char *to, unsigned at, const char *lines)
{
    size_t len;
    char *t = slurp(from, &len), *p = t;
    FILE *f = fopen(to, "w");
    for (unsigned i = 1; t && i < at && (p = memchr(p, '\n', len - (size_t)(p - t))); i++)
        p++;
    if (t && f && p) {
        fwrite(t, 1, (size_t)(p - t), f);
        fputs(lines, f);
        fwrite(p, 1, len - (size_t)(p - t), f);
    }
    if (f)
        fclose(f);
    free(t);
}

/* 0.1's entries next to an operator's look-alike lines, changed by the
 * operator, or in a file the operator edited elsewhere. */
static void upgrade_mixed(void)
{
    char src[512], sbak[512], file[512], bak[512], want[512], keep[512];
    struct rv_error err = { 0 };
    const char *look = "imports = []  # resview-added\n# resview-end\n# note  # resview-was: x\n"
                       "# resview-begin: added by `resview configure`, removed by `resview configure --uninstall`\n";

    snprintf(src, sizeof(src), "%s/v0.1/containerd-v2.toml", samples);
    snprintf(sbak, sizeof(sbak), "%s%s", src, RV_BACKUP_SUFFIX);
    snprintf(file, sizeof(file), "%s/mixed.toml", dir);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    snprintf(want, sizeof(want), "%s/mixed.want", dir);
    snprintf(keep, sizeof(keep), "%s/mixed.keep", dir);

    /* the operator's look-alike lines, added after 0.1 ran */
    insert_lines(src, file, 4, look);
    insert_lines(sbak, want, 4, look);
    copy(sbak, bak);
    ok(run("containerd", file, true, false, &err) == 0, "0.1 + look-alikes: configure (%s)", err.msg);
    char *t = slurp(file, &(size_t){ 0 });
    ok(t && strstr(t, look) && !strstr(t, "resview-was:       default"), "0.1 + look-alikes: theirs kept, 0.1's taken");
    free(t);
    ok(run("containerd", file, true, true, &err) == 0 && same_file(file, want),
       "0.1 + look-alikes: uninstall leaves the original with the operator's lines");
    insert_lines(src, file, 4, look);
    ok(run("containerd", file, true, true, &err) == 0 && same_file(file, want),
       "0.1 + look-alikes: uninstall straight from 0.1's file");

    /* edited elsewhere: the operator's change stays */
    insert_lines(src, file, 3, "imports = [\"/etc/containerd/site.toml\"]\n");
    insert_lines(sbak, want, 3, "imports = [\"/etc/containerd/site.toml\"]\n");
    ok(run("containerd", file, false, true, &err) == 0 && same_file(file, want),
       "0.1 edited elsewhere: uninstall keeps the operator's change (%s)", err.msg);

    /* changed inside 0.1's block: refused both ways, lines named, untouched */
    insert_lines(src, file, 62, "NoPivotRoot = true\n");
    copy(sbak, bak);
    copy(file, keep);
    ok(run("containerd", file, true, false, &err) < 0 && strstr(err.msg, "lines 16, 55-66") &&
       strstr(err.msg, "0.1") && same_file(file, keep), "0.1 block changed: configure refused (%s)", err.msg);
    ok(run("containerd", file, true, true, &err) < 0 && strstr(err.msg, "lines 16, 55-66") &&
       same_file(file, keep), "0.1 block changed: uninstall refused too");
    /* ... and with no backup: taken for the operator's (never removed) */
    unlink(bak);
    ok(run("containerd", file, true, true, &err) == 0 && same_file(file, keep),
       "0.1 block without a backup: the operator's, left by uninstall");

    /* docker: 0.1's entry changed by the operator, or a backup that has one */
    snprintf(src, sizeof(src), "%s/v0.1/daemon.json", samples);
    snprintf(file, sizeof(file), "%s/daemon-v01.json", dir);
    snprintf(bak, sizeof(bak), "%s%s", file, RV_BACKUP_SUFFIX);
    insert_lines(src, file, 15, "            ,\"runtimeArgs\": [\"--debug\"]\n");
    snprintf(sbak, sizeof(sbak), "%s%s", src, RV_BACKUP_SUFFIX);
    copy(sbak, bak);
    copy(file, keep);
    ok(run("docker", file, true, false, &err) < 0 && strstr(err.msg, "not written by resview") &&
       same_file(file, keep), "docker 0.1 entry changed: configure refused (%s)", err.msg);
    ok(run("docker", file, true, true, &err) == 0 && same_file(file, keep), "docker 0.1 entry changed: uninstall leaves it");
    copy(src, file);
    copy(src, bak);
    ok(run("docker", file, true, false, &err) < 0 && strstr(err.msg, "not written by resview"),
       "docker: an entry the backup already had is not 0.1's (%s)", err.msg);
}

static void scanner(void)
{
    struct rv_toml doc;
    struct rv_error err;
    static const char *good[] = {
        "a = 1\n", "a.b.c = 'x'\n[t]\n", "[a]\n[a.b]\n[[c]]\nx=1\n[[c]]\nx=2\n[c.d]\n",
        "s = \"\"\"\nx\\\n  y\"\"\"\n", "x = [\n 1, # c\n 2,\n]\n", "d = 1979-05-27T07:32:00-08:00\n",
        "t = {a.b = 1, c = {d = [1]}}\n", "\xef\xbb\xbf" "a = -inf\r\nb = 0x1f\r\n", "",
        "[a.b]\n[a]\n", "'k.k' = 1\n\"k k\" = 2\n",
        /* from the TOML 1.0 specification */
        "[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n",
        "\"\" = \"blank\"\n", "ld = 1979-05-27\nlt = 07:32:00.999\nf = 6.626e-34\ng = -0.01\nh = 1_000\n",
        "arr = [ [ 1, 2 ], [\"a\", 'b'] ]\ne = [ ]\n", "[dog.\"tater.man\"]\ntype.name = \"pug\"\n",
        "[ j . \"\xca\x9e\" . 'l' ]\n", "[[products]]\nname = \"Hammer\"\n\n[[products]]\n\n[[products]]\nname = \"Nail\"\n",
        "s = \"\"\"\"This,\" she said, \"is just a pointless statement.\"\"\"\"\n",
        "l = '''That's still pointless', she said.'''\n",
        "[[fruits]]\nname = \"apple\"\n[fruits.physical]\ncolor = \"red\"\n[[fruits.varieties]]\nname = \"red delicious\"\n"
        "[[fruits]]\nname = \"banana\"\n[[fruits.varieties]]\nname = \"plantain\"\n",
        /* every kind of number, date and time of the specification */
        "a = +99\nb = -17\nc = 0\nd = +0\ne = 5_349_221\nf = 0xDEAD_beef\ng = 0o755\nh = 0b1101\n",
        "a = +1.0\nb = 3.1415\nc = 5e+22\nd = 1e06\ne = -2E-2\nf = 224_617.445_991\ng = -0.0\nh = +nan\n",
        "a = 1979-05-27T07:32:00Z\nb = 1979-05-27T00:32:00.999999-07:00\nc = 1979-05-27 07:32:00Z\n"
        "d = 1979-05-27T07:32:00\ne = 00:32:00.999999\n",
    };
    static const char *bad[] = {
        "a = 1\na = 2\n", "[a]\n[a]\n", "a = 1 b = 2\n", "a = \"x\n", "a = [1 2]\n",
        "a = {b = 1\n", "[a\n", "a.b = 1\n[a]\n", "a = 1\n[a.b]\n", "= 1\n", "a = \"\\q\"\n",
        "a = 'x' # \x01\n", "t = {a = 1}\n[t.b]\n", "[[a]]\n[a]\n", "a = \n", "a = \"\"\"x\n",
        "[fruit]\napple.color = \"red\"\n[fruit.apple]\n", "[[fruits]]\nname = 1\nname = 2\n",
        "[a]\nb = 1\n[a.b]\n",
        /* malformed numbers, dates and times */
        "a = 1abc\n", "a = 00\n", "a = 1__2\n", "a = 3.\n", "a = .5\n", "a = 5e\n", "a = 0x\n",
        "a = +0x1f\n", "a = _1\n", "a = 1_\n", "a = 0x_1\n", "a = 0o8\n", "a = 1979-05-27T25\n",
        "a = 1979-05-27T07:32:00+7\n", "a = 07:32\n", "a = tru\n", "a = 1.2.3\n",
        "a = 1\0\n",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int r = rv_toml_scan(good[i], strlen(good[i]), &doc, &err);
        ok(r == 0, "scan valid #%zu (%s)", i, r ? err.msg : "");
        if (r == 0)
            rv_toml_free(&doc);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = strlen(bad[i]) + (i == sizeof(bad) / sizeof(bad[0]) - 1 ? 2 : 0);
        int r = rv_toml_scan(bad[i], len, &doc, &err);
        ok(r < 0, "scan invalid #%zu refused (%s)", i, r < 0 ? err.msg : "accepted");
        if (r == 0)
            rv_toml_free(&doc);
    }
    const char *t = "[a.\"b.c\"]\nk = 'v'  # c\n";
    ok(rv_toml_scan(t, strlen(t), &doc, &err) == 0, "scan quoted table");
    const struct rv_toml_item *it = rv_toml_get(&doc, "a.\"b.c\".k");
    ok(it && rv_toml_is_string(&doc, it, "v"), "lookup through a quoted dotted key");
    rv_toml_free(&doc);
}

int main(void)
{
    if (getenv("RESVIEW_SAMPLES"))
        samples = getenv("RESVIEW_SAMPLES");
    if (!mkdtemp(dir))
        return 1;
    scanner();
    lookalikes();
    round_trip("containerd", "containerd-v2.toml", true, "SystemdCgroup = true");
    round_trip("containerd", "containerd-v2.toml", false, "container_annotations = [\"resview.io/*\"]");
    round_trip("containerd", "containerd-v3.toml", true, "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.resview.options]");
    round_trip("containerd", "containerd-noeol.toml", true, "default_runtime_name = \"resview\"");
    round_trip("containerd", "containerd-debian.toml", false, "pod_annotations = [\"resview.io/*\"]");
    round_trip("crio", "crio.conf", true, "allowed_annotations = [\"resview.io/lxcfs\", "
               "\"resview.io/env\", \"resview.io/gomaxprocs\", \"resview.io/fuse\"]");
    round_trip("podman", "containers.conf", true, "resview = [\"/opt/resview/bin/resview-runtime\"]");
    round_trip("podman", "containers-empty.conf", true, "[engine.runtimes]");
    round_trip("docker", "daemon.json", true, "\"default-runtime\": \"resview\"");
    round_trip("docker", "daemon.json", false, "\"Hard\": 18446744073709551615");
    round_trip("slurm", "oci.conf", false, "RunTimeCreate=\"/opt/resview/bin/resview-runtime --rootless");
    refused("containerd", "containerd-v1.toml", "version");
    refused("containerd", "containerd-dotted.toml", "dotted keys");
    refused("containerd", "containerd-taken.toml", "already exists");
    refused("containerd", "bad-duplicate.toml", "line 4: duplicate table");
    refused("containerd", "bad-string.toml", "unterminated string");
    refused("crio", "bad-array.toml", "not valid TOML");
    refused("podman", "bad-string.toml", "not valid TOML");
    refused("docker", "bad-daemon.json", "daemon.json");
    refused("docker", "bad-daemon-array.json", "not a JSON object");
    refused("slurm", "bad-oci.conf", "line 2");
    upgrade("containerd", "containerd-v2.toml", true);
    upgrade("containerd", "containerd-v3.toml", true);
    upgrade("containerd", "containerd-noeol.toml", false);
    upgrade("containerd", "containerd-debian.toml", true);
    upgrade("crio", "crio.conf", true);
    upgrade("podman", "containers.conf", true);
    upgrade("podman", "containers-empty.conf", false);
    upgrade("docker", "daemon.json", true);
    upgrade("slurm", "oci.conf", false);
    upgrade("containerd", "new-containerd.toml", true);
    upgrade("crio", "new-crio.conf", false);
    upgrade("podman", "new-podman.conf", true);
    upgrade("docker", "new-daemon.json", true);
    upgrade("slurm", "new-oci.conf", false);
    upgrade_mixed();
    created("containerd", "config.toml", "version = 2\n");
    created("docker", "daemon.json", "\"path\": \"/opt/resview/bin/resview-runtime\"");
    created("crio", "99-resview.conf", "[crio.runtime.runtimes.resview]");
    created("podman", "99-resview.conf", "[engine.runtimes]");
    created("slurm", "oci.conf", "RunTimeRun=");
    created("enroot", "50-resview.sh", "exec '/opt/resview/bin/resview-hook' --enroot");
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return unit_done();
}
