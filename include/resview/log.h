/* log.h - one line per event in log.file; errors also on stderr. */
#ifndef RESVIEW_LOG_H
#define RESVIEW_LOG_H

#include "resview/config.h"

/* binary: "runtime", "hook", "cli". Safe to call before a config is loaded
 * (then only errors reach stderr). */
void rv_log_init(const char *binary, const struct rv_config *cfg);
void rv_log_set_id(const char *container_id);
/* Log at level; RV_ERROR is also written to stderr as "resview-<binary>: msg". */
void rv_log(enum rv_level level, const char *fmt, ...) RV_PRINTF(2, 3);
/* When log.file cannot be written (a hook running as a user: enroot without
 * root), write warnings to stderr instead of losing them. */
void rv_log_stderr_fallback(void);
/* Also write errors in runc's log format to this file (runc's --log), json or text. */
void rv_log_runtime_file(const char *path, bool json);
/* Write the configuration's warnings to the log (binaries call this once). */
void rv_log_config_warnings(const struct rv_config *cfg);

#endif
