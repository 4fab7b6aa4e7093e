/* engine.h - registering resview with container engines (`resview configure`,
 * `resview doctor`). One module per engine (src/engine_<name>.c); each turns
 * the text of its configuration file into the new text, and this module reads,
 * validates, backs up and atomically replaces the file. */
#ifndef RESVIEW_ENGINE_H
#define RESVIEW_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include "resview/util.h"

#define RV_RUNTIME_PATH_DEFAULT "/usr/local/bin/resview-runtime"
#define RV_HOOK_PATH_DEFAULT "/usr/local/bin/resview-hook"
#define RV_BACKUP_SUFFIX ".resview-backup"
/* Where podman and CRI-O look for OCI hooks by default. */
#define RV_HOOKSD_DIR_DEFAULT "/usr/share/containers/oci/hooks.d"
/* What the managed whole files (hook scripts) carry so that uninstall knows them. */
#define RV_OWNED_MARK "# written by `resview configure`; `resview configure --uninstall` removes it"

struct rv_engine_opts {
    const char *config;        /* file to edit; NULL = the engine's default */
    const char *runtime_path;  /* resview-runtime as installed */
    const char *hook_path;     /* resview-hook as installed */
    bool set_default;          /* make resview the engine's default runtime */
    bool uninstall;
    bool dry_run;
    int containerd_version;    /* config version for a new containerd file; 0 = detect */
    int slurm_version;         /* Slurm version for a new oci.conf, 2302 = 23.02; 0 = detect */
    bool v01;                  /* the entry as resview 0.1 wrote it (rv_v01_take_out) */
};

/* The result of an engine's edit. */
struct rv_edit_result {
    char *text;                /* new content (NULL with remove) */
    size_t len;
    bool remove;               /* delete the file (resview created it) */
    unsigned mode;             /* mode of a new file (0: 0644) */
    char *restore_backup;      /* uninstall: write these bytes instead (pristine original) */
    size_t restore_len;
    bool no_backup;            /* the file holds only what resview wrote: no original to keep */
    char note[256];            /* uninstall: what the engine needs now, where that depends on
                                * the edit ("": the engine's `unload`) */
};

struct rv_toml;
struct rv_toml_plan;

struct rv_engine {
    const char *name;
    const char *default_config;
    const char *reload;        /* what the operator must do afterwards */
    const char *unload;        /* the same after --uninstall (never naming the runtime removed) */
    /* old: current content ("" and exists=false when absent). backup: the
     * pristine copy if one exists (NULL otherwise). */
    int (*edit)(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                const char *backup, size_t backup_len, struct rv_edit_result *res,
                struct rv_error *err);
    /* TOML engines leave edit NULL and give these to rv_toml_engine_edit: the
     * plan of their entry, and the check of the rescanned result. */
    int (*toml_build)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                      struct rv_toml_plan *plan, struct rv_error *err);
    int (*toml_verify)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                       struct rv_error *err);
    /* Whether text carries a resview entry (1) or not (0); detail: the entry
     * in a few words; exe: the program it runs ("" if unknown). */
    int (*status)(const char *text, size_t len, char *detail, size_t size, char *exe,
                  size_t exe_size, struct rv_error *err);
    /* TOML engines leave status NULL and name the keys (NULL-terminated) whose
     * string value is the program their entry runs. */
    const char *const *toml_status_keys;
    /* Marks its lines with '#' comments (TOML engines, Slurm): what resview
     * 0.1 marked there is recognised (rv_v01_take_out). */
    bool marks_lines;
};

extern const struct rv_engine rv_engine_containerd, rv_engine_docker, rv_engine_podman,
    rv_engine_crio, rv_engine_enroot, rv_engine_slurm;
/* The hooks.d file that podman and CRI-O also get (not an engine of its own). */
extern const struct rv_engine rv_engine_hooksd;

/* The `version` of a containerd config.toml: 2 (containerd 1.x) or 3 (2.x,
 * the only one that reads it); 0 when there is none, -1 another value. */
struct rv_toml;
int rv_containerd_config_version(const struct rv_toml *doc);

/* Engine by name (containerd, docker, podman, crio/cri-o, enroot, slurm); NULL if unknown. */
const struct rv_engine *rv_engine_find(const char *name);
/* All engines, NULL-terminated. */
extern const struct rv_engine *const rv_engines[];

/* Read, edit, validate, back up, replace; prints what was done on stdout
 * (dry run: the new content). */
int rv_engine_apply(const struct rv_engine *e, const struct rv_engine_opts *o, struct rv_error *err);

/* The engine's edit of one file's content, whichever way the engine does it. */
int rv_engine_edit(const struct rv_engine *e, const struct rv_engine_opts *o, const char *old,
                   size_t len, bool exists, const char *backup, size_t backup_len,
                   struct rv_edit_result *res, struct rv_error *err);

/* What engine_v01.c asks of the engine layer above it, which hands its own
 * (engine.c; engine_v01.c calls nothing there): the engine's edit as
 * configure makes it today, and rv_engine_status. */
struct rv_v01_ops {
    int (*edit)(const struct rv_engine *e, const struct rv_engine_opts *o, const char *old,
                size_t len, bool exists, const char *backup, size_t backup_len,
                struct rv_edit_result *res, struct rv_error *err);
    int (*status)(const struct rv_engine *e, const char *text, size_t len, char *detail,
                  size_t size, char *exe, size_t exe_size, struct rv_error *err);
};

/* What resview 0.1 wrote into text (engine_v01.c: only what configure's edit
 * of the backup 0.1 kept makes again, each piece found exactly once): *out is
 * text without it and 1 is returned, *created when 0.1 created the file; 0 if
 * text holds none of it; -1 when it holds a 0.1 block changed since (err names
 * the lines to take out by hand). */
int rv_v01_take_out(const struct rv_v01_ops *ops, const struct rv_engine *e,
                    const struct rv_engine_opts *o, const char *text, size_t len,
                    const char *backup, size_t blen, char **out, size_t *outlen, bool *created,
                    struct rv_error *err);

/* Whether text carries the engine's resview entry (1) or not (0), with the
 * entry in a few words (detail) and the program it runs (exe, "" if unknown). */
int rv_engine_status(const struct rv_engine *e, const char *text, size_t len, char *detail,
                     size_t size, char *exe, size_t exe_size, struct rv_error *err);

/* Engines whose whole file is resview's (hook scripts, hooks.d files): a file
 * of that name that is not ours is refused on install and kept as it is on
 * uninstall; ours is removed on uninstall. Returns 1 when the caller is to
 * write the new content, 0 when res is complete, -1 on error. */
int rv_owned_file_edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                       bool ours, const char *refusal, struct rv_edit_result *res,
                       struct rv_error *err);

/* Read path: *exists false (and "" content) when absent. */
int rv_engine_read(const char *path, char **text, size_t *len, bool *exists, struct rv_error *err);

/* Shared by the TOML engines: a list of edits to a scanned document. */
struct rv_toml_plan {
    char *block;               /* lines for the marked block */
    size_t block_len;
    struct rv_toml_patch { size_t start, end; char *text; } *patches;
    size_t n_patches;
};
/* Append "[table]\n" + body to the block; table must not exist yet. */
int rv_plan_add_table(struct rv_toml_plan *plan, const struct rv_toml *doc, const char *table,
                      const char *body, struct rv_error *err);
/* Set key = value (raw TOML) in table: replace in place (keeping the old line
 * in a marker comment), insert after the table's header, or add the table to
 * the block. */
int rv_plan_set_key(struct rv_toml_plan *plan, const struct rv_toml *doc, const char *table,
                    const char *key, const char *value, struct rv_error *err);
/* Add raw text to the block. */
int rv_plan_block(struct rv_toml_plan *plan, const char *text, struct rv_error *err);
/* Apply to base (the scanned text) and append the block. */
int rv_plan_finish(struct rv_toml_plan *plan, const char *base, size_t len, bool created,
                   char **out, size_t *outlen, struct rv_error *err);
void rv_plan_free(struct rv_toml_plan *plan);
/* Lines "key = raw\n" for each plain key of table `from` (TOML syntax), except
 * those listed (NULL-terminated). Appended to *body (allocated). */
int rv_plan_copy_keys(const struct rv_toml *doc, const char *from, const char *const *except,
                      char **body, struct rv_error *err);
/* Common TOML engine flow: strip ours, scan (refuse invalid input), then
 * build(...) unless uninstalling, rescan the result. */
int rv_toml_engine_edit(const struct rv_engine_opts *o, const char *old, size_t len, bool exists,
                        int (*build)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                                     struct rv_toml_plan *plan, struct rv_error *err),
                        int (*verify)(const struct rv_engine_opts *o, const struct rv_toml *doc,
                                      struct rv_error *err),
                        struct rv_edit_result *res, struct rv_error *err);

#endif
