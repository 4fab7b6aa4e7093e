/* state.c - per-container record directories. */
#define _GNU_SOURCE
#include "resview/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define RECORD_MAX (1u << 20)

static int record_dir(const struct rv_config *cfg, const char *id, char *out, size_t size,
                      struct rv_error *err)
{
    if (!rv_safe_name(id))
        return rv_fail(err, 0, "container id is not a valid file name");
    if (rv_snprintf(out, size, "%s/containers/%s", cfg->state_dir, id) < 0)
        return rv_fail(err, ENAMETOOLONG, "state directory");
    return 0;
}

int rv_state_write(const struct rv_config *cfg, const char *id, const char *file,
                   const json_t *doc, struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1;
    size_t len;

    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0 || rv_mkdir_p(dir, 0700, err) < 0)
        return -1;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0)
        return rv_fail(err, errno, "open `%s`", dir);
    if (rv_json_dump(doc, &text, &len, err) < 0)
        return -1;
    /* runtime state under /run: gone at reboot anyway, so no fsync */
    return rv_write_atomic_volatile_at(dfd, file, text, len, err);
}

int rv_state_read(const struct rv_config *cfg, const char *id, const char *file, json_t **doc,
                  struct rv_error *err)
{
    char dir[PATH_MAX];
    cleanup_free char *text = NULL;
    cleanup_close int dfd = -1;
    size_t len;

    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0)
        return -1;
    dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0) {
        int e = errno;
        rv_fail(err, e, "open `%s`", dir);
        errno = e;
        return -1;
    }
    if (rv_read_file_at(dfd, file, RECORD_MAX, &text, &len, NULL, err) < 0) {
        errno = err->errnum;
        return -1;
    }
    return rv_json_parse(text, len, file, doc, err);
}

int rv_state_remove(const struct rv_config *cfg, const char *id, struct rv_error *err)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *de;

    if (record_dir(cfg, id, dir, sizeof(dir), err) < 0)
        return -1;
    d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : rv_fail(err, errno, "open `%s`", dir);
    while ((de = readdir(d)))
        if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    if (rmdir(dir) < 0 && errno != ENOENT)
        return rv_fail(err, errno, "remove `%s`", dir);
    return 0;
}

int rv_state_foreach(const struct rv_config *cfg, int (*fn)(const char *id, void *arg), void *arg)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *de;
    int r = 0;

    if (rv_snprintf(dir, sizeof(dir), "%s/containers", cfg->state_dir) < 0)
        return -1;
    d = opendir(dir);
    if (!d)
        return 0;
    while (r == 0 && (de = readdir(d)))
        if (de->d_name[0] != '.' && rv_safe_name(de->d_name))
            r = fn(de->d_name, arg);
    closedir(d);
    return r;
}
