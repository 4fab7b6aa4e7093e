/* metrics_render.c - one scrape's text, in Prometheus's text exposition
 * format 0.0.4, from a snapshot: no system call, so it can be tested and
 * fuzzed alone. Every label value is one of the table's constants, or our
 * own version (escaped all the same). */
#define _GNU_SOURCE
#include "metrics_table.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *buf;
    size_t size, len;
    bool full;
};

static void put(struct out *o, const char *fmt, ...) RV_PRINTF(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->full)
        return;
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->size - o->len) {
        o->full = true;
        return;
    }
    o->len += (size_t)n;
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP resview_%s %s\n# TYPE resview_%s %s\n", name, help, name, type);
}

/* A counter family: the slots of the table named family, in table order. */
static void counters(struct out *o, const uint64_t *slots, const char *family, const char *help)
{
    char name[96];

    snprintf(name, sizeof(name), "%s_total", family);
    head(o, name, "counter", help);
    for (unsigned i = 0; i < RV_M_COUNT; i++) {
        if (strcmp(rv_metric_defs[i].family, family) != 0)
            continue;
        if (*rv_metric_defs[i].labels)
            put(o, "resview_%s{%s} %" PRIu64 "\n", name, rv_metric_defs[i].labels,
                __atomic_load_n(&slots[i], __ATOMIC_RELAXED));
        else
            put(o, "resview_%s %" PRIu64 "\n", name, __atomic_load_n(&slots[i], __ATOMIC_RELAXED));
    }
}

/* A label value: backslash, double quote and newline escaped (the format's
 * rule); anything outside printable ASCII dropped. */
static void label_value(char *dst, size_t size, const char *src)
{
    size_t n = 0;

    for (; src && *src && n + 3 < size; src++) {
        unsigned char c = (unsigned char)*src;
        if (c == '\\' || c == '"') {
            dst[n++] = '\\';
            dst[n++] = (char)c;
        } else if (c == '\n') {
            dst[n++] = '\\';
            dst[n++] = 'n';
        } else if (c >= 0x20 && c < 0x7f) {
            dst[n++] = (char)c;
        }
    }
    dst[n] = '\0';
}

static void seconds(struct out *o, const char *name, uint64_t ns)
{
    put(o, "resview_%s %" PRIu64 ".%09" PRIu64 "\n", name, ns / UINT64_C(1000000000), ns % UINT64_C(1000000000));
}

int rv_metrics_render(const struct rv_metrics_view *v, char *buf, size_t size)
{
    struct out o = { .buf = buf, .size = size };
    const uint64_t *s = v->slots;
    char version[128];

    if (size)
        buf[0] = '\0';
    label_value(version, sizeof(version), v->version);
    head(&o, "build_info", "gauge", "resview's version (the value is always 1).");
    put(&o, "resview_build_info{version=\"%s\"} 1\n", version);
    if (v->config_valid >= 0) {
        head(&o, "config_valid", "gauge",
             "1 when the configuration file loads with no warning, as the next container start reads it.");
        put(&o, "resview_config_valid %d\n", v->config_valid ? 1 : 0);
        head(&o, "config_warnings", "gauge", "Warnings of the configuration file (unknown keys, wrong types).");
        put(&o, "resview_config_warnings %u\n", v->config_warnings);
    }
    head(&o, "counters_ok", "gauge",
         "1 when the counters file the shim, hook and broker add to is mapped (else their counts are absent).");
    put(&o, "resview_counters_ok %d\n", s ? 1 : 0);
    if (v->g.lxcfs_known) {
        head(&o, "lxcfs_up", "gauge", "1 when LXCFS answered watch's last probe.");
        put(&o, "resview_lxcfs_up %d\n", v->g.lxcfs_up ? 1 : 0);
        head(&o, "lxcfs_probe_seconds", "gauge", "How long watch's last probe of LXCFS took.");
        seconds(&o, "lxcfs_probe_seconds", v->g.probe_ns);
    }
    if (s) {
        counters(&o, s, "container_views",
                 "Containers whose start resview saw, with LXCFS views or without them, by reason.");
        counters(&o, s, "container_variables",
                 "Containers whose start resview saw, with resource variables or without them, by reason.");
        counters(&o, s, "repair_containers", "Containers whose views a repair put back, or failed to.");
        counters(&o, s, "lxcfs_restarts", "LXCFS coming back on a new mount, as watch saw it.");
        counters(&o, s, "fuse_calls", "FUSE brokers' answers to mount calls: allowed, or refused by reason.");
        head(&o, "nri_registered", "gauge", "1 while the NRI plugin is registered with the runtime.");
        put(&o, "resview_nri_registered %d\n", v->nri_registered ? 1 : 0);
        head(&o, "nri_call_duration_seconds", "histogram",
             "How long the NRI plugin took to answer the runtime's calls.");
        {
            uint64_t cum = 0;
            for (unsigned i = 0; i < RV_METRICS_NRI_BUCKETS; i++) {
                cum += __atomic_load_n(&s[RV_M_NRI_BUCKET0 + i], __ATOMIC_RELAXED);
                put(&o, "resview_nri_call_duration_seconds_bucket{%s} %" PRIu64 "\n",
                    rv_metric_defs[RV_M_NRI_BUCKET0 + i].labels, cum);
            }
            seconds(&o, "nri_call_duration_seconds_sum",
                    __atomic_load_n(&s[RV_M_NRI_SECONDS_NS], __ATOMIC_RELAXED));
            put(&o, "resview_nri_call_duration_seconds_count %" PRIu64 "\n", cum);
        }
        counters(&o, s, "nri_calls_over_budget",
                 "NRI calls the plugin answered later than NRI's budget (2 s).");
    }
    return o.full ? -1 : (int)o.len;
}
