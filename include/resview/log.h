/* log.h - one line per event in log.file; errors also on stderr. */
#ifndef RESVIEW_LOG_H
#define RESVIEW_LOG_H

#include <stdio.h>
#include "resview/config.h"

/* A log line's message at most (RV_ERRMSG_MAX bytes of text, escaped). */
#define RV_LOG_LINE_MAX (RV_ERRMSG_MAX * 4)

/* Copy src into dst (size bytes with the NUL) with every byte outside
 * printable ASCII (0x20-0x7e) written as \xHH and a backslash as \\: text a
 * tenant controls (a mount target, an annotation, a path in its rootfs)
 * cannot move a terminal's cursor, reverse a line (U+202E) or start a new
 * one. Cut at a whole escape when dst is full. Returns the length. rv_log
 * does it to every message. */
size_t rv_escape(char *dst, size_t size, const char *src);

/* Print one line to f (the newline added): formatted, then escaped as
 * rv_escape does, so that text from a tenant or a user in it (a record's
 * file name, a container id, an error quoting a path) cannot rewrite an
 * operator's terminal or start a line of its own. For what a command prints. */
void rv_print_line(FILE *f, const char *fmt, ...) RV_PRINTF(2, 3);

/* binary: "runtime", "hook", "cli". Safe to call before a config is loaded
 * (then only errors reach stderr). A process that is not root on the host
 * writes what log.file refuses to resview.log in its own state_dir (config.h),
 * and its warnings to stderr when that fails too. */
void rv_log_init(const char *binary, const struct rv_config *cfg);
void rv_log_set_id(const char *container_id);
/* Log at level; RV_ERROR is also written to stderr as "resview-<binary>: msg". */
void rv_log(enum rv_level level, const char *fmt, ...) RV_PRINTF(2, 3);
/* When log.file cannot be written (a hook running as a user: enroot without
 * root), write warnings to stderr too (enroot keeps it in its log). */
void rv_log_stderr_fallback(void);
/* Also write errors in runc's log format to this file (runc's --log), json or text. */
void rv_log_runtime_file(const char *path, bool json);
/* Write the configuration's warnings to the log (binaries call this once). */
void rv_log_config_warnings(const struct rv_config *cfg);

#endif
