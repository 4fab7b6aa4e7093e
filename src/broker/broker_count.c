/* broker_count.c - a FUSE broker's answers in the node's counters
 * (metrics.h): allowed (mount, umount) or refused, by a reason of a fixed
 * set taken from the errno the caller got, never from what it sent. */
#define _GNU_SOURCE
#include "resview/broker.h"
#include "resview/metrics.h"

#include <errno.h>
#include <string.h>

static enum rv_metric refused(int e)
{
    switch (e) {
    case EPERM: case EACCES: case EBUSY: case EROFS:
        return RV_M_FUSE_REFUSED_NOT_ALLOWED;
    case ENOSPC: case EMFILE: case ENFILE: case ENOMEM:
        return RV_M_FUSE_REFUSED_LIMIT;
    case EAGAIN:
        return RV_M_FUSE_REFUSED_BUSY;
    case EINVAL: case EFAULT: case ENAMETOOLONG: case ENOENT: case ENOTDIR: case EBADF:
    case ENODEV: case ELOOP: case E2BIG:
        return RV_M_FUSE_REFUSED_INVALID;
    case ENOSYS:
        return RV_M_FUSE_REFUSED_UNSUPPORTED;
    default:
        return RV_M_FUSE_REFUSED_ERROR;
    }
}

void rv_broker_count_answer(const char *metrics_dir, enum rv_broker_call call, int r)
{
    enum rv_metric m;

    if (!metrics_dir || !*metrics_dir)
        return;
    if (r >= 0)
        m = call == RV_CALL_MOUNT ? RV_M_FUSE_ALLOWED_MOUNT : RV_M_FUSE_ALLOWED_UMOUNT;
    else
        m = refused(-r);
    rv_metrics_add(metrics_dir, m);
}

void rv_broker_metrics_dir(const char *held_path, char *out, size_t size)
{
    static const char tail[] = "/fuse/" RV_HELD_FILE;
    size_t n = held_path ? strlen(held_path) : 0;

    out[0] = '\0';
    if (n > sizeof(tail) - 1 && n - (sizeof(tail) - 1) < size &&
        strcmp(held_path + n - (sizeof(tail) - 1), tail) == 0) {
        memcpy(out, held_path, n - (sizeof(tail) - 1));
        out[n - (sizeof(tail) - 1)] = '\0';
    }
}
