/* json.h - lossless JSON load/dump around jansson, and small accessors. */
#ifndef RESVIEW_JSON_H
#define RESVIEW_JSON_H

#include <jansson.h>
#include "resview/util.h"

static inline void rv_json_decrefp(json_t **j) { json_decref(*j); }
#define cleanup_json __attribute__((cleanup(rv_json_decrefp)))

/* Parse text. Integers beyond int64 (uint64 rlimits, for example), which
 * jansson rejects, are kept as exact text and written back unchanged by
 * rv_json_dump. what names the input in errors. */
int rv_json_parse(const char *text, size_t len, const char *what, json_t **out,
                  struct rv_error *err);
/* Serialize compactly, restoring the big integers. Caller frees *out. */
int rv_json_dump(const json_t *root, char **out, size_t *len, struct rv_error *err);

/* Walk a dotted path of object keys ("linux.resources.cpu"); NULL if absent. */
json_t *rv_json_path(json_t *root, const char *dotted);
/* Get or create an object at key inside obj; NULL (err filled) if the key holds
 * something else. */
json_t *rv_json_object_at(json_t *obj, const char *key, const char *where,
                          struct rv_error *err);
/* Same for an array. */
json_t *rv_json_array_at(json_t *obj, const char *key, const char *where,
                         struct rv_error *err);

#endif
