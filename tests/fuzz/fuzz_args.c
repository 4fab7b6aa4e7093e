/* fuzz_args - runc and crun argv parsing (rv_args_parse). The first byte
 * picks the dialect, the rest is split at NUL bytes into arguments.
 * Invariants: every result points at an argument (or NULL), the subcommand
 * index is in range and names argv[sub_index], what only a valid line sets is
 * NULL otherwise, and a line that edits a bundle has an id. */
#include "fuzz.h"
#include "resview/args.h"

#define MAX_ARGS 64

static int in_argv(const char *p, int argc, char *const argv[])
{
    if (!p)
        return 1;
    for (int i = 0; i < argc; i++)
        if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *argv[MAX_ARGS + 1];
    int argc = 0;
    struct rv_args a;

    enum rv_dialect d;

    if (!buf || size == 0) {
        free(buf);
        return 0;
    }
    d = (data[0] & 1) ? RV_DIALECT_CRUN : RV_DIALECT_RUNC;
    data++;
    size--;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[argc++] = (char *)"resview-runtime";
    for (char *p = buf; argc < MAX_ARGS && p <= buf + size; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;

    rv_args_parse(argc, argv, d, &a);
    FUZZ_CHECK(a.sub_index >= 0 && a.sub_index < argc, "sub_index %d of %d", a.sub_index, argc);
    FUZZ_CHECK((a.sub_index == 0) == (a.sub == NULL), "sub and sub_index disagree");
    FUZZ_CHECK(!a.sub || a.sub == argv[a.sub_index], "sub is not argv[sub_index]");
    FUZZ_CHECK(in_argv(a.root, argc, argv) && in_argv(a.log, argc, argv) &&
               in_argv(a.log_format, argc, argv) && in_argv(a.bundle, argc, argv) &&
               in_argv(a.config, argc, argv) && in_argv(a.process, argc, argv) &&
               in_argv(a.id, argc, argv),
               "a result points outside argv");
    FUZZ_CHECK(!a.valid || a.sub, "a valid line without a subcommand");
    FUZZ_CHECK(a.valid || (!a.id && !a.bundle && !a.config && !a.process),
               "an invalid line sets the id, bundle, config or process");
    FUZZ_CHECK(!a.bundle || *a.bundle, "an empty bundle is the working directory (NULL)");
    FUZZ_CHECK(!rv_args_edits_bundle(&a) || a.id, "a create or run without an id edits");
    free(buf);
    return 0;
}
