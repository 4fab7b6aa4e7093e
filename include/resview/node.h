/* node.h - what the Kubernetes node agent (`resview node`) puts on a host.
 *
 * Binaries: the payload of the node image (bin/resview-runtime,
 * bin/resview-hook, share/resview/seccomp.json, ...) is copied into
 * PREFIX/versions/<version>-<content hash>/, a new directory per content,
 * written under a temporary name and renamed into place; then the stable
 * path PREFIX/current (a symlink, which containerd's runtime entry names as
 * PREFIX/current/bin/resview-runtime) is switched with one rename(2). A
 * binary that runc or a shim may be executing is never rewritten: an upgrade
 * is a new directory, and the old one stays as PREFIX/previous. */
#ifndef RESVIEW_NODE_H
#define RESVIEW_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include "resview/util.h"

#define RV_NODE_ID_MAX 96

/* Content hash of a directory tree (relative names, modes, bytes; FNV-1a 64,
 * for identity, not security) as "<version>-<16 hex>". */
int rv_node_tree_id(const char *dir, const char *version, char *id, size_t size, struct rv_error *err);

/* Install payload into prefix (see above). *id: the installed version;
 * *changed: whether current was switched. */
int rv_node_install(const char *prefix, const char *payload, const char *version, char *id,
                    size_t id_size, bool *changed, struct rv_error *err);

/* Whether prefix/current holds exactly the payload: 1 yes, 0 no (why says
 * what differs), -1 error. */
int rv_node_intact(const char *prefix, const char *payload, const char *version, char *why,
                   size_t why_size, struct rv_error *err);

/* Remove version directories other than current and previous that no
 * process on the host executes (/proc/PID/exe). Returns how many went. */
int rv_node_prune(const char *prefix, struct rv_error *err);

/* Remove everything under prefix that install made (current, previous,
 * versions/). Refused (EBUSY) while a process executes one of the files. */
int rv_node_remove(const char *prefix, struct rv_error *err);

/* rm -rf of dirfd/name (no symlink followed). */
int rv_remove_tree_at(int dirfd, const char *name, struct rv_error *err);

#endif
