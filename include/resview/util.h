/* util.h - errors, cleanup helpers, bounded file I/O, atomic rewrite. */
#ifndef RESVIEW_UTIL_H
#define RESVIEW_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define RV_ERRMSG_MAX 1024

/* Every fallible function returns 0 on success or -1 and fills *err. */
struct rv_error {
    int errnum;                 /* errno of the root cause, 0 if none */
    char msg[RV_ERRMSG_MAX];    /* one line, with context */
};

#define RV_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Fill err with fmt (and ": strerror(errnum)" if errnum != 0); return -1. */
int rv_fail(struct rv_error *err, int errnum, const char *fmt, ...) RV_PRINTF(3, 4);
/* Prefix an existing error with more context; return -1. */
int rv_wrap(struct rv_error *err, const char *fmt, ...) RV_PRINTF(2, 3);

/* snprintf that treats truncation as an error (returns -1, errno ENAMETOOLONG). */
int rv_snprintf(char *buf, size_t size, const char *fmt, ...) RV_PRINTF(3, 4);

static inline void rv_freep(void *p) { free(*(void **)p); }
static inline void rv_closep(int *fd) { if (*fd >= 0) close(*fd); }
#define cleanup_free __attribute__((cleanup(rv_freep)))
#define cleanup_close __attribute__((cleanup(rv_closep)))

/* Hand ownership out of a cleanup variable. */
#define move_ptr(p) ({ __typeof__(p) _m = (p); (p) = NULL; _m; })
#define move_fd(fd) ({ int _m = (fd); (fd) = -1; _m; })

/* Read a whole regular file (opened relative to dirfd, no symlink for the last
 * component, no blocking on FIFOs), at most max bytes; NUL-terminated. */
int rv_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
                    struct stat *st, struct rv_error *err);
/* Read a small file (e.g. under /sys or /proc) into buf, trimmed of the
 * trailing newline. Returns -1 with errno set, no error text: callers decide. */
int rv_read_small(const char *path, char *buf, size_t size);

/* Atomically replace dirfd/name with data: temp file in the same directory,
 * write, fchmod/fchown to st's mode and owner (if st), rename. On any failure
 * the original is untouched and the temp file is removed. Atomic for readers
 * and for a killed writer either way; flags add: */
#define RV_WRITE_DURABLE 1u  /* fsync before the rename: configuration that must
                              * survive a power loss (not a bundle's spec, not
                              * runtime state: both die with the container) */
#define RV_WRITE_SWEEP 2u    /* then remove temp files of writers killed just
                              * before their rename: for directories that
                              * outlive containers (a container's own goes
                              * with it) */
int rv_write_atomic_at(int dirfd, const char *name, const char *data, size_t len,
                       const struct stat *st, unsigned flags, struct rv_error *err);

/* The descriptors a received message carries (SCM_RIGHTS): appended to
 * fds[n..max), every one beyond max closed. Returns the new count. */
struct msghdr;
unsigned rv_msg_take_fds(struct msghdr *m, int *fds, unsigned n, unsigned max);
/* Close every descriptor but the n in keep (sorted in place; -1 entries are
 * ignored). 0, or -1 with errno. */
int rv_close_all_but(int *keep, unsigned n);

/* Milliseconds of CLOCK_MONOTONIC, for deadlines. */
long rv_now_ms(void);
/* Wait until fd is readable (or hung up) or the deadline (rv_now_ms()) has
 * passed: 1 readable, 0 deadline passed, -1 poll failed. EINTR waits on. */
int rv_wait_readable(int fd, long deadline);

/* Parse a decimal unsigned/signed integer that fills the whole string. */
int rv_parse_u64(const char *s, uint64_t *out);
int rv_parse_i64(const char *s, int64_t *out);

/* Whether s is a safe single path component (container ids, file names). */
bool rv_safe_name(const char *s);

/* mkdir -p with mode for each missing component. */
int rv_mkdir_p(const char *path, mode_t mode, struct rv_error *err);

#endif
