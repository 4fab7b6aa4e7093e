/* metrics_table.h - the slots' names, shared by the file (its layout hash)
 * and the text (metrics_render.c). */
#ifndef RESVIEW_METRICS_TABLE_H
#define RESVIEW_METRICS_TABLE_H

#include "resview/metrics.h"

struct rv_metric_def {
    const char *family;
    const char *labels;       /* constants only: never a tenant's text */
};
extern const struct rv_metric_def rv_metric_defs[RV_M_COUNT];
/* The upper bounds of the NRI histogram's buckets, in ns (the last: +Inf) */
extern const uint64_t rv_metrics_nri_bounds[RV_METRICS_NRI_BUCKETS];

#endif
