/* json.h - JSON text to jansson values and back: exact numbers, partial
 * documents (load and rewrite only some members), small accessors. */
#ifndef RESVIEW_JSON_H
#define RESVIEW_JSON_H

#include <jansson.h>
#include "resview/util.h"

static inline void rv_json_decrefp(json_t **j) { json_decref(*j); }
#define cleanup_json __attribute__((cleanup(rv_json_decrefp)))

/* Parse text (an object or an array, RFC 8259, UTF-8, no duplicate keys, no
 * \u0000). Reals, integers beyond int64 (uint64 rlimits, for example) and -0
 * are kept as their exact text and written back unchanged by rv_json_dump.
 * what names the input in errors. */
int rv_json_parse(const char *text, size_t len, const char *what, json_t **out,
                  struct rv_error *err);
/* Serialize compactly (jansson's compact form), restoring the kept numbers.
 * Caller frees *out. */
int rv_json_dump(const json_t *root, char **out, size_t *len, struct rv_error *err);

/* Which members of an object to load: a list ended by { NULL }. A member with
 * members of its own is loaded with only those when its value is an object,
 * and whole otherwise; a member without is loaded whole. */
struct rv_json_want {
    const char *key;
    const struct rv_json_want *members;
};
/* Where the member values not loaded are (start and end offsets, in text
 * order), noted by the parse for the splice; zero-initialize. */
struct rv_json_skips {
    size_t *span;
    size_t n, cap;
};
/* Parse like rv_json_parse (the whole text is checked the same way, but keys
 * are checked for duplicates only where something is loaded), building only
 * the wanted members of the top-level object. skips (may be NULL) notes what
 * was skipped. */
int rv_json_parse_some(const char *text, size_t len, const char *what,
                       const struct rv_json_want *want, json_t **out,
                       struct rv_json_skips *skips, struct rv_error *err);
void rv_json_skips_free(struct rv_json_skips *skips);
/* The text again, with the wanted members as root holds them now: members not
 * loaded are copied byte for byte, a loaded member keeps its bytes when it
 * still holds the same value, a changed one is written compactly
 * in its place, a removed one is left out, a new one is appended to its
 * object. A member root holds that was not loaded is an error (it would be
 * lost). text, want and skips (may be NULL) must be those of the parse.
 * Caller frees *out. */
int rv_json_splice(const char *text, size_t len, const char *what,
                   const struct rv_json_want *want, const json_t *root,
                   const struct rv_json_skips *skips, char **out, size_t *outlen,
                   struct rv_error *err);

/* Walk a dotted path of object keys ("linux.resources.cpu"); NULL if absent. */
json_t *rv_json_path(json_t *root, const char *dotted);
/* Whether arr is an array holding the string s. */
bool rv_json_array_has_string(json_t *arr, const char *s);
/* Get or create an object at key inside obj; NULL (err filled) if the key holds
 * something else. */
json_t *rv_json_object_at(json_t *obj, const char *key, const char *where,
                          struct rv_error *err);
/* Same for an array. */
json_t *rv_json_array_at(json_t *obj, const char *key, const char *where,
                         struct rv_error *err);

#endif
