/* state.h - per-container records under <state_dir>/containers/<id>/.
 * Each writer owns one file in that directory, written atomically:
 *   env    - JSON array of the "K=V" the shim injected (for exec sessions)
 *   views  - what the hook did (see hook) */
#ifndef RESVIEW_STATE_H
#define RESVIEW_STATE_H

#include "resview/config.h"
#include "resview/json.h"

int rv_state_write(const struct rv_config *cfg, const char *id, const char *file,
                   const json_t *doc, struct rv_error *err);
/* Returns 0 and *doc, or -1 (errno ENOENT when there is no record). */
int rv_state_read(const struct rv_config *cfg, const char *id, const char *file, json_t **doc,
                  struct rv_error *err);
int rv_state_remove(const struct rv_config *cfg, const char *id, struct rv_error *err);
/* Call fn for each recorded container id; stops at the first non-zero. */
int rv_state_foreach(const struct rv_config *cfg, int (*fn)(const char *id, void *arg), void *arg);

#endif
