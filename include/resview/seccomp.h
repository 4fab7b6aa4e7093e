/* seccomp.h - the seccomp part of the FUSE grant (profiles/README.md "The seccomp profile"):
 * mount calls to the broker, in an engine's OCI seccomp profile or the
 * project's default profile, and a check of syscall names against libseccomp
 * (used by `resview doctor`). */
#ifndef RESVIEW_SECCOMP_H
#define RESVIEW_SECCOMP_H

#include <stdbool.h>
#include <stdio.h>
#include "resview/config.h"
#include "resview/json.h"

#define RV_ENOSYS 38

/* Where the default profile is installed, relative to the directory of the
 * running binary, and the absolute fallbacks (first readable one wins). */
#define RV_SECCOMP_REL_PATH "../share/resview/seccomp.json"
#define RV_SECCOMP_PATHS { "/usr/local/share/resview/seccomp.json", \
                           "/usr/share/resview/seccomp.json" }

/* Names of the syscalls the FUSE additions are about: mount, umount, umount2
 * (to the broker) and the new mount API (ENOSYS). NULL-terminated. */
extern const char *const rv_seccomp_fuse_names[];

/* The default profile's path: cfg->seccomp_profile if set, else the first of
 * <exe dir>/RV_SECCOMP_REL_PATH and RV_SECCOMP_PATHS that exists. */
int rv_seccomp_default_path(const struct rv_config *cfg, char *buf, size_t size,
                            struct rv_error *err);
/* Load and validate a profile file (an OCI linux.seccomp object). */
int rv_seccomp_load(const char *path, json_t **out, struct rv_error *err);

/* Edit an OCI linux.seccomp object in place: the engine's rules for mount,
 * umount, umount2 and the new mount API are replaced by the FUSE rules
 * (SCMP_ACT_NOTIFY, ENOSYS); every other rule, the default action,
 * architectures and flags are kept. Idempotent. Fails (without a usable
 * result) on a malformed profile or a default action of SCMP_ACT_NOTIFY. */
int rv_seccomp_add_fuse(json_t *seccomp, struct rv_error *err);

/* Whether the profile already allows every mount(2): an SCMP_ACT_ALLOW rule
 * for mount without arguments, or a default action of SCMP_ACT_ALLOW and no
 * rule for mount. (Docker writes the former for --cap-add SYS_ADMIN.) */
bool rv_seccomp_allows_any_mount(const json_t *seccomp);

/* Names not known to libseccomp for an architecture of the profile (the
 * native one, and each of its "architectures"): fn(ud, arch, name) once per
 * pair. With with_fuse also the names of the FUSE additions. *unknown gets
 * the count. Fails on an unknown architecture or a malformed profile. */
typedef void (*rv_seccomp_unknown_fn)(void *ud, const char *arch, const char *name);
int rv_seccomp_unknown_names(const json_t *seccomp, bool with_fuse, rv_seccomp_unknown_fn fn,
                             void *ud, size_t *unknown, struct rv_error *err);

/* For `resview doctor`: load the default profile (as the runtime would find
 * it) and report its unknown names and those of the FUSE additions on out,
 * one line each ("seccomp: <arch>: unknown syscall <name> in <path>"). Returns
 * 0 when everything is known, 1 when something is unknown, -1 on error. */
int rv_seccomp_doctor(const struct rv_config *cfg, FILE *out, struct rv_error *err);

#endif
