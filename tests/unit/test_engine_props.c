/* test_engine_props.c - properties of the configuration edits on many
 * mutated sample files (deterministic): whenever an edit is accepted, the
 * result parses, a second edit changes nothing, and --uninstall gives back the
 * input byte for byte; the scanner never crashes or reads out of bounds
 * (run under valgrind/ASan by the hardening targets). */
#define _GNU_SOURCE
#include "resview/engine.h"
#include "resview/engine_toml.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

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

/* One mutation: delete, duplicate or replace a byte, or swap in a TOML-ish token. */
static size_t mutate(char *buf, size_t len, size_t cap)
{
    static const char *const tokens[] = { "[", "]", "\"", "'", "=", "\n", "#", ".", "{", "}", ",",
                                          "[[", "\"\"\"", "'''", "\\", " ", "true", "1e5", "\r\n" };
    size_t at = len ? rnd((unsigned)len) : 0;
    switch (rnd(3)) {
    case 0:
        if (len) {
            memmove(buf + at, buf + at + 1, len - at - 1);
            len--;
        }
        break;
    case 1: {
        const char *t = tokens[rnd(sizeof(tokens) / sizeof(tokens[0]))];
        size_t n = strlen(t);
        if (len + n < cap) {
            memmove(buf + at + n, buf + at, len - at);
            memcpy(buf + at, t, n);
            len += n;
        }
        break;
    }
    default:
        if (len)
            buf[at] = (char)("[]\"'=\n#.{},a \\"[rnd(14)]);
    }
    return len;
}

static int edit(const struct rv_engine *e, bool uninstall, const char *in, size_t len, char **out,
                size_t *outlen)
{
    struct rv_engine_opts o = { .runtime_path = "/usr/local/bin/resview-runtime",
                                .hook_path = "/usr/local/bin/resview-hook", .set_default = true,
                                .uninstall = uninstall, .containerd_version = 2, .slurm_version = 2302 };
    struct rv_edit_result res = { 0 };
    struct rv_error err = { 0 };
    if (rv_engine_edit(e, &o, in, len, true, NULL, 0, &res, &err) < 0)
        return -1;
    free(res.restore_backup);
    if (res.remove) {
        *out = strdup("");
        *outlen = 0;
    } else {
        *out = res.text;
        *outlen = res.len;
    }
    return 0;
}

int main(void)
{
    static const struct { const char *engine, *sample; } cases[] = {
        { "containerd", "containerd-v2.toml" }, { "containerd", "containerd-v3.toml" },
        { "crio", "crio.conf" }, { "podman", "containers.conf" }, { "slurm", "oci.conf" },
    };
    const char *dir = getenv("RESVIEW_SAMPLES") ? getenv("RESVIEW_SAMPLES") : "tests/samples";

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, cases[c].sample);
        char *orig = slurp(path, &len);
        const struct rv_engine *e = rv_engine_find(cases[c].engine);
        unsigned accepted = 0, refused = 0, bad = 0;
        if (!orig || !e) {
            ok(0, "%s: sample %s", cases[c].engine, path);
            continue;
        }
        for (int iter = 0; iter < 1500; iter++) {
            size_t cap = len + 256, n = len;
            char *m = malloc(cap);
            memcpy(m, orig, len);
            for (unsigned k = 1 + rnd(3); k > 0; k--)
                n = mutate(m, n, cap);
            char *r1 = NULL, *r2 = NULL, *u = NULL;
            size_t l1, l2, lu;
            if (edit(e, false, m, n, &r1, &l1) < 0) {
                refused++;
            } else {
                accepted++;
                struct rv_toml doc;
                struct rv_error err;
                bool toml = strcmp(cases[c].engine, "slurm") != 0;
                if (toml && rv_toml_scan(r1, l1, &doc, &err) < 0)
                    bad++;
                else if (toml)
                    rv_toml_free(&doc);
                if (edit(e, false, r1, l1, &r2, &l2) < 0 || l2 != l1 || memcmp(r1, r2, l1) != 0)
                    bad++;
                if (edit(e, true, r1, l1, &u, &lu) < 0 || lu != n || memcmp(u, m, n) != 0)
                    bad++;
            }
            free(r1);
            free(r2);
            free(u);
            free(m);
        }
        ok(bad == 0, "%s %s: %u mutated inputs accepted, %u refused, %u broke a property",
           cases[c].engine, cases[c].sample, accepted, refused, bad);
        ok(accepted > 100 && refused > 100, "%s: both outcomes exercised", cases[c].sample);
        free(orig);
    }
    return unit_done();
}
