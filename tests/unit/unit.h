/* unit.h - a tiny test harness: ok() counts, unit_done() reports.
 * Each test prints "ok N - name" or "not ok N - name" (TAP-like). */
#ifndef RESVIEW_UNIT_H
#define RESVIEW_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_pass, unit_fail;

#define ok(cond, ...)                                                        \
    do {                                                                     \
        int ok_c_ = !!(cond);                                                \
        printf("%s %d - ", ok_c_ ? "ok" : "not ok", unit_pass + unit_fail + 1); \
        printf(__VA_ARGS__);                                                 \
        printf(ok_c_ ? "\n" : "  (%s:%d: %s)\n", __FILE__, __LINE__, #cond); \
        if (ok_c_) unit_pass++; else unit_fail++;                            \
    } while (0)

#define ok_str(got, want, ...)                                               \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        int same_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;             \
        ok(same_, __VA_ARGS__);                                              \
        if (!same_) printf("#   got:  %s\n#   want: %s\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
    } while (0)

static inline int unit_done(void)
{
    printf("# %d passed, %d failed\n", unit_pass, unit_fail);
    return unit_fail ? 1 : 0;
}

#endif
