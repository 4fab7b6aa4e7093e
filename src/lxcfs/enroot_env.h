/* enroot_env.h - the environments an enroot hook sees (resview-hook --enroot).
 *
 * enroot runs its hooks.d scripts with its own environment, which under pyxis
 * is the Slurm job's (pyxis starts `enroot start` with the job's environment),
 * and ENROOT_ENVIRON, a file of "K=V" lines the container will start with.
 * pyxis later copies the container's environment over the job's. A variable
 * is therefore "already set" when either has it, and resview adds only what
 * neither has. */
#ifndef RESVIEW_ENROOT_ENV_H
#define RESVIEW_ENROOT_ENV_H

#include "resview/envvars.h"
#include "resview/json.h"

/* The container's environment from ENROOT_ENVIRON's text, read as enroot
 * does (its envfmt cleanup, then enroot-switchroot: the last line of a name
 * wins): "K=V" strings, one per name. */
int rv_enroot_environ_parse(const char *text, size_t len, json_t **env, struct rv_error *err);
int rv_enroot_environ_read(const char *path, json_t **env, struct rv_error *err);

/* The job's environment: "K=V" strings of envp (the hook's own environ). */
json_t *rv_enroot_job_env(char *const *envp);

/* A per-container request (RESVIEW_LXCFS, RESVIEW_ENV) from both: 0 when
 * either opts out, else 1 when either opts in, -1 when neither sets it, -2
 * (err set) when a value is not 1 or 0. */
int rv_enroot_request(json_t *job, json_t *container, const char *var, struct rv_error *err);

/* Append to the ENROOT_ENVIRON file the variables planned for injection that
 * `have` does not set; *added: how many. */
int rv_enroot_append(const char *path, const struct rv_env_plan *plan, json_t *have,
                     unsigned *added, struct rv_error *err);

#endif
