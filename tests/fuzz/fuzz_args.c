/* fuzz_args - runc argv parsing (rv_args_parse). The input is split at NUL
 * bytes into arguments. Invariants: every result points at an argument (or
 * NULL), the subcommand index is in range and names argv[sub_index], and the
 * id is never a flag taken for a value. */
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

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[argc++] = (char *)"resview-runtime";
    for (char *p = buf; argc < MAX_ARGS && p <= buf + size; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;

    rv_args_parse(argc, argv, &a);
    FUZZ_CHECK(a.sub_index >= 0 && a.sub_index < argc, "sub_index %d of %d", a.sub_index, argc);
    FUZZ_CHECK((a.sub_index == 0) == (a.sub == NULL), "sub and sub_index disagree");
    FUZZ_CHECK(!a.sub || a.sub == argv[a.sub_index], "sub is not argv[sub_index]");
    FUZZ_CHECK(in_argv(a.root, argc, argv) && in_argv(a.log, argc, argv) &&
               in_argv(a.log_format, argc, argv) && in_argv(a.criu, argc, argv) &&
               in_argv(a.rootless, argc, argv) && in_argv(a.bundle, argc, argv) &&
               in_argv(a.process, argc, argv) && in_argv(a.id, argc, argv),
               "a result points outside argv");
    FUZZ_CHECK(!a.id || a.sub, "an id without a subcommand");
    FUZZ_CHECK(!a.bundle || a.sub, "a bundle without a subcommand");
    (void)rv_args_edits_bundle(&a);
    free(buf);
    return 0;
}
