/* engine_toml.h - a TOML scanner that validates a whole document and records
 * where every table and key is, and the line-level edits `resview configure`
 * makes to containerd, CRI-O and podman configuration files.
 *
 * Debian has no C TOML library (tomlc99 is not packaged; toml++ and toml11 are
 * C++ and rewrite the file, dropping comments), so the editor never rewrites
 * what it does not own: it appends one marked block, inserts or replaces single
 * marked lines, and takes exactly those out again. Every result is scanned
 * again before it may replace a file. */
#ifndef RESVIEW_ENGINE_TOML_H
#define RESVIEW_ENGINE_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include "resview/util.h"

/* Markers of what resview owns in a file ('#' comments: TOML and Slurm). Each
 * is followed by a check of what it marks (16 hex digits), see engine_toml.c:
 *   # resview-begin CHECK[ [created]|[noeol]]: added by ... --uninstall`
 *   ...block...
 *   # resview-end CHECK
 *   key = value  # resview-added CHECK
 *   key = new  # resview-was CHECK: key = old */
#define RV_MARK_BEGIN "# resview-begin "
#define RV_MARK_BEGIN_TAIL ": added by `resview configure`, removed by `resview configure --uninstall`"
#define RV_MARK_END "# resview-end "
#define RV_MARK_ADDED "  # resview-added "
#define RV_MARK_WAS "  # resview-was "

enum rv_toml_kind {
    RV_TOML_TABLE,        /* [a.b] */
    RV_TOML_IMPLICIT,     /* a table only named as the prefix of a header */
    RV_TOML_ARRAY_TABLE,  /* [[a.b]] */
    RV_TOML_DOTTED,       /* a table made by a dotted key (a.b = 1 makes a) */
    RV_TOML_INLINE,       /* a = { ... } */
    RV_TOML_VALUE,        /* any other value */
};

struct rv_toml_item {
    char *path;               /* keys joined by '\x1f' */
    enum rv_toml_kind kind;
    size_t line_start;        /* first byte of the line that defines it */
    size_t line_end;          /* one past the '\n' of the line it ends on */
    size_t val_start, val_end;/* raw value text (values and inline tables) */
    bool multiline;           /* the definition spans lines */
    unsigned elements;        /* array tables: elements so far */
};

struct rv_toml {
    struct rv_toml_item *items;
    size_t n, cap;
    const char *text;         /* not owned */
    size_t len;
};

/* Scan text; fails with the line number and reason on anything that is not
 * valid TOML 1.0 as far as structure goes (strings, arrays, inline tables,
 * keys, headers, duplicate keys and tables). */
int rv_toml_scan(const char *text, size_t len, struct rv_toml *doc, struct rv_error *err);
void rv_toml_free(struct rv_toml *doc);

/* Convert a key in TOML syntax (plugins."io.containerd.grpc.v1.cri".containerd)
 * to the joined form used in items. */
int rv_toml_path(const char *key, char *out, size_t size, struct rv_error *err);
/* Item at a path in TOML key syntax, NULL if none. */
const struct rv_toml_item *rv_toml_get(const struct rv_toml *doc, const char *key);
/* Raw text of a value item's value (allocated). */
char *rv_toml_raw(const struct rv_toml *doc, const struct rv_toml_item *it);
/* Whether a value item is a basic or literal string equal to s. */
bool rv_toml_is_string(const struct rv_toml *doc, const struct rv_toml_item *it, const char *s);

/* The string value of a value item, or of the first element of an array
 * value, into out; -1 if it is not a (single-line) string. */
int rv_toml_string(const struct rv_toml *doc, const struct rv_toml_item *it, char *out, size_t size);
/* A TOML basic string for s (quotes and escapes), allocated. */
char *rv_toml_quote(const char *s);
/* A key component: bare when it can be, quoted otherwise. */
char *rv_toml_key(const char *s);

/* Take out everything resview added (the marked block, marked lines) and put
 * back the lines it replaced; markers whose check does not match are the
 * operator's text and stay. *had: something was found; *created: the block
 * says resview created the file. */
int rv_marked_strip(const char *text, size_t len, char **out, size_t *outlen, bool *had,
                    bool *created, struct rv_error *err);
/* line (n bytes, no newline) marked as inserted by resview; allocated. */
char *rv_mark_added(const char *line, size_t n);
/* line marked as replacing orig (put back by rv_marked_strip); allocated. */
char *rv_mark_was(const char *line, size_t n, const char *orig, size_t on);
/* Append block (no markers) to text (after a separating blank line), with
 * the markers; created: the file did not exist before. */
int rv_marked_append(const char *text, size_t len, const char *block, bool created,
                     char **out, size_t *outlen, struct rv_error *err);
/* Append formatted text to *s (allocated). */
int rv_strcatf(char **s, struct rv_error *err, const char *fmt, ...) RV_PRINTF(3, 4);

#endif
