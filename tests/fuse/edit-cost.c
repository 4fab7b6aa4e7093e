/* edit-cost.c - what the FUSE grant costs inside resview-runtime: parse the
 * spec, apply the grant, serialize, N times; against parse + serialize alone.
 * Prints medians in microseconds (tests/bench.d/fuse.sh).
 * usage: edit-cost SPEC SECCOMP_PROFILE N */
#define _GNU_SOURCE
#include "resview/fuse.h"
#include "resview/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    struct rv_config cfg;
    struct rv_fuse_host host = { NULL };
    bool broker;
    struct rv_error e;
    char *text = NULL;
    size_t len;
    int n = argc == 4 ? atoi(argv[3]) : 0;
    double *t[2];

    if (n <= 0 || rv_read_file_at(AT_FDCWD, argv[1], 16u << 20, &text, &len, NULL, &e) < 0) {
        fprintf(stderr, "usage: edit-cost SPEC SECCOMP_PROFILE N\n");
        return 2;
    }
    host.seccomp_profile = argv[2];
    rv_config_defaults(&cfg);
    strcpy(cfg.log_file, "/dev/null");
    cfg.log_level = RV_ERROR;
    rv_log_init("bench", &cfg);
    t[0] = calloc((size_t)n, sizeof(double));
    t[1] = calloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        for (int with = 0; with < 2; with++) {
            json_t *root = NULL;
            char *out = NULL;
            size_t olen;
            double t0 = now_us();
            if (rv_json_parse(text, len, "spec", &root, &e) < 0 ||
                (with && rv_fuse_apply_host(root, &cfg, &host, NULL, &broker, &e) < 0) ||
                rv_json_dump(root, &out, &olen, &e) < 0) {
                fprintf(stderr, "edit-cost: %s\n", e.msg);
                return 1;
            }
            t[with][i] = now_us() - t0;
            free(out);
            json_decref(root);
        }
    }
    qsort(t[0], (size_t)n, sizeof(double), cmp);
    qsort(t[1], (size_t)n, sizeof(double), cmp);
    printf("parse+dump only      median %8.1f us\n", t[0][n / 2]);
    printf("parse+FUSE+dump      median %8.1f us  (FUSE grant: +%.1f us)\n", t[1][n / 2],
           t[1][n / 2] - t[0][n / 2]);
    free(t[0]);
    free(t[1]);
    free(text);
    return 0;
}
