/* spec.h - the bundle's config.json: safe load, atomic save, request lookups. */
#ifndef RESVIEW_SPEC_H
#define RESVIEW_SPEC_H

#include <sys/stat.h>
#include "resview/json.h"

#define RV_SPEC_MAX (16u << 20)   /* a spec larger than 16 MiB is refused */

/* The members of config.json resview reads or writes (spec.c): root holds
 * only these (and a caller's extra ones); the rest stays text and is written
 * back byte for byte. */
extern const struct rv_json_want rv_spec_members[];

/* Top-level members that a caller needs besides rv_spec_members, only for some
 * specs (the cost of a member is paid on every start): members, a {NULL, NULL}
 * terminated table, is loaded too when wanted(root), asked of what was loaded
 * first, says so (wanted NULL: always). The loader knows no caller's reasons
 * (gpus.c: rv_gpus_spec_extra). */
struct rv_spec_extra {
    const struct rv_json_want *members;
    bool (*wanted)(json_t *root);
};

struct rv_spec {
    int dirfd;            /* the bundle directory */
    char bundle[4096];
    char file[256];       /* the spec's file name in dirfd: config.json, or crun --config's */
    json_t *root;         /* the members of rv_spec_members only, and extra's when loaded */
    bool all;             /* root holds linux.seccomp too (rv_spec_load_all, rv_spec_parse) */
    const struct rv_spec_extra *extra;   /* the caller's extra members (NULL: none) */
    bool extra_loaded;                   /* root holds them */
    struct rv_json_skips skips;          /* what root does not hold */
    struct stat st;       /* of config.json as loaded: mode and owner to keep */
    char *text;           /* original bytes: written back around the edited members */
    size_t len;
};

/* Load every member but linux.seccomp, which only the FUSE grant needs, and
 * extra's members if it wants them (extra NULL: none). */
int rv_spec_load(struct rv_spec *spec, const char *bundle, const struct rv_spec_extra *extra,
                 struct rv_error *err);
/* The same with another spec file (relative to the bundle, or absolute:
 * crun --config FILE); NULL: config.json. */
int rv_spec_load_file(struct rv_spec *spec, const char *bundle, const char *file,
                      const struct rv_spec_extra *extra, struct rv_error *err);
/* Load everything in rv_spec_members (and the extra members loaded): before
 * any edit (it starts again). */
int rv_spec_load_all(struct rv_spec *spec, struct rv_error *err);
/* Parse from memory, every member and extra's if it wants them (tests,
 * fuzzing, `resview env --spec`). dirfd = -1. */
int rv_spec_parse(struct rv_spec *spec, const char *text, size_t len,
                  const struct rv_spec_extra *extra, struct rv_error *err);
/* The document as edited: the original text with the edited members spliced
 * in. *changed: whether it differs from the original. Caller frees *out. */
int rv_spec_render(const struct rv_spec *spec, char **out, size_t *len, bool *changed,
                   struct rv_error *err);
/* Write back atomically if the document changed. *changed tells. */
int rv_spec_save(struct rv_spec *spec, bool *changed, struct rv_error *err);
void rv_spec_free(struct rv_spec *spec);

/* process.env as an array (created if missing); NULL + err on a wrong type. */
json_t *rv_spec_env(json_t *root, struct rv_error *err);
/* Value of NAME in a process env array, NULL if unset. */
const char *rv_env_get(json_t *env, const char *name);

/* The per-container requests (hooks/README.md "Per-container requests"). */
#define RV_ANN_LXCFS "resview.io/lxcfs"
#define RV_ANN_ENV "resview.io/env"

/* Per-container request: annotation (true/false) or env var (1/0).
 * Returns 1 (on), 0 (off), -1 (not asked), -2 invalid (err filled). */
int rv_spec_request(json_t *root, const char *annotation, const char *envvar,
                    struct rv_error *err);

#endif
