/* broker.h - the FUSE mount broker (profiles/README.md "The broker's life"): one small process per
 * FUSE container, started by the shim at create/run before it execs the next
 * runtime. The runtime hands it the container's seccomp notify fds over a unix
 * socket (linux.seccomp.listenerPath); it answers every mount(2), umount(2)
 * and umount2(2) of that container and exits when the container is gone.
 *
 *   broker_spawn.c  the shim's side: start, wait until it listens;
 *   broker.c        the broker's event loop: connections, notify fds, exit;
 *   broker_req.c    one notification, in a forked single-threaded child;
 *   mountreq.c      the decisions on copies of the arguments. */
#ifndef RESVIEW_BROKER_H
#define RESVIEW_BROKER_H

#include "resview/config.h"
#include "resview/fuse_held.h"
#include "resview/json.h"
#include "resview/sys.h"
#include "resview/mountreq.h"

#include <pthread.h>
#include <stdatomic.h>

#define RV_BROKER_NAME "resview-fuse-broker"   /* argv[0] of a broker: ps shows it */
#define RV_BROKER_DIR "fuse"                   /* under state_dir, mode 0700 */
#define RV_BROKER_RECORD "fuse"                /* <state_dir>/containers/<id>/fuse: {"socket"} */
#define RV_BROKER_LISTEN_FD 3                  /* fds a broker starts with */
#define RV_BROKER_RUNTIME_FD 4
#define RV_BROKER_READY_TIMEOUT_MS 30000   /* a start under heavy load; normally ~1 ms */

/* Shim side. Start the broker for container `id` and wait until it listens;
 * path gets its socket: `want` if given (the name a container whose broker
 * was killed still knows), else <state_dir>/fuse/<id>.<broker pid>.sock,
 * the id cut to 32 bytes or what fits a socket address: a name no other
 * broker uses. volumes: the host paths of the engine's volumes
 * (rv_fuse_volumes), the places besides the container's root file system
 * where a FUSE mount may go. The broker watches this process (which then becomes the next
 * runtime) and exits if the runtime never connects. */
int rv_broker_spawn(const struct rv_config *cfg, const char *id, const char *want,
                    json_t *volumes, char *path, size_t size, struct rv_error *err);

/* exec into a FUSE container whose broker is gone (killed): start another
 * on the socket its spec names, so the exec (whose runtime must hand over
 * the new process's notify fd) works and can mount. Nothing for containers
 * without a FUSE record. */
int rv_broker_revive(const struct rv_config *cfg, const char *id, struct rv_error *err);

/* What a broker did at exit, when it had to do more than exit (aborted a
 * connection, left a worker blocked): "<socket without .sock>.exit". */
void rv_broker_exit_note(const char *sock, const char *text);
/* delete of a FUSE container: wait (RV_BROKER_EXIT_WAIT_MS at most) for its
 * broker to exit, and log what its exit note says. */
#define RV_BROKER_EXIT_WAIT_MS 1000
void rv_broker_report(const struct rv_config *cfg, const char *id);

/* Exit notes no delete collected (doctor): how many, and one of them in last. */
int rv_broker_exit_notes(const struct rv_config *cfg, char *last, size_t size);

/* Remove the sockets of brokers that were killed from dir (<state_dir>/fuse). */
void rv_broker_sweep(const char *dir);

/* Broker mode: resview-runtime run as RV_BROKER_NAME (rv_broker_spawn does
 * that). Returns the exit code. */
int rv_broker_main(int argc, char **argv);

/* Whether path is the socket of a live broker for container id (a runtime
 * chain in which resview runs twice keeps the first one's broker). */
bool rv_broker_serves(const struct rv_config *cfg, const char *id, const char *path);

/* cgroup.procs of the memory and pids cgroups (v1; "" where not mounted) or
 * of the one cgroup (v2; out[1] "") of a process, from its /proc/PID/cgroup
 * file: where a worker charges the work it does for a container. */
int rv_broker_cgroups(const char *file, char out[2][4096]);

/* A file of /proc (whose size stat does not tell), NUL-terminated; NULL on
 * failure. The caller frees it. */
char *rv_broker_read_proc(int dirfd, const char *path);

/* Live brokers and stale sockets under <state_dir>/fuse (doctor). */
int rv_broker_count(const struct rv_config *cfg, unsigned *live, unsigned *stale);

/* --- between the broker's supervisor and its worker (broker_req.c) --- */

enum rv_broker_call { RV_CALL_OTHER = 0, RV_CALL_MOUNT, RV_CALL_UMOUNT, RV_CALL_UMOUNT2 };
/* Which call a notification is, from its architecture and number. */
enum rv_broker_call rv_broker_call(uint32_t arch, int nr);

/* A FUSE mount this broker made: mount id and the connection's device. */
struct rv_broker_mount {
    int mnt_id;
    unsigned dev_major, dev_minor;
    unsigned owner;                /* user_id=, as the container sees it (who may unmount) */
};
/* The FUSE mounts this broker made: the worker's list, and the supervisor's
 * copy that a replacement worker starts from. */
struct rv_mount_set {
    struct rv_broker_mount *m;
    size_t n, cap;
};
void rv_mount_set_add(struct rv_mount_set *s, const struct rv_broker_mount *m);
void rv_mount_set_remove(struct rv_mount_set *s, const struct rv_broker_mount *m);
/* The entry for m's mount (same mount id and device), or NULL. */
const struct rv_broker_mount *rv_mount_set_find(const struct rv_mount_set *s,
                                                const struct rv_broker_mount *m);

/* What the worker tells the supervisor, one atomic write each. */
enum rv_broker_event { RV_EV_MOUNTED = 1, RV_EV_UNMOUNTED };
struct rv_broker_record {
    enum rv_broker_event event;
    struct rv_broker_mount mount;
};

#define RV_BROKER_MAX_VOLUMES 256   /* volumes a FUSE mount may go on */
#define RV_BROKER_LOCK_MS 2000      /* a mount waits this long for another one (EAGAIN) */

/* A volume: the identity of its source as the spec names it, taken once when
 * the broker starts, without following a symlink (a tenant may be able to
 * swap one in later, through another volume). */
struct rv_vol_id {
    dev_t dev;
    ino_t ino;
};

/* Shared by the supervisor and every worker, replaced ones included (MAP_SHARED). */
struct rv_broker_shared {
    pthread_mutex_t mount_lock;   /* one mount of the container at a time, walk to attach */
    atomic_int said_cap, said_node;   /* the caps' log lines: once per container */
};

struct rv_broker_ctx {
    int notify_fd;            /* the filter the notification came from */
    int hostproc;             /* O_PATH of the broker's /proc */
    int home_mntns;           /* the broker's own mount namespace, to go back to */
    int container_mntns;      /* the container's (its init's when handed over), -1: unknown */
    int container_userns;     /* its user namespace, -1: ours (or unknown) */
    bool allow_other;         /* fuse.allow_other when the container started */
    bool others_busy;         /* a replaced worker is still inside a request */
    unsigned max_mounts;      /* fuse.max_mounts: file systems the container holds */
    unsigned max_mounts_node; /* fuse.max_mounts_node: those all brokers' containers hold */
    struct rv_mount_set *mounts;   /* attached, made by this broker: what umount may take */
    int record_fd;            /* records to the supervisor */
    /* where a FUSE mount may go besides the container's root file system:
     * the engine's volumes */
    const struct rv_vol_id *vol_ids;
    size_t n_vol_ids;
    struct rv_held *held;     /* the node's table (NULL: unavailable, mounts refused) */
    int fusectl;              /* a fusectl mount: which connections are still alive */
    const char *key;          /* the container in the table */
    struct rv_broker_shared *shared;
    int cap_hit;              /* this request met a cap: 1 the container's, 2 the node's */
    /* cgroup.procs of the container's memory and pids cgroups (one unified
     * one on v2), and of ours: joined for each request; -1 where none */
    int cg_join[2], cg_home[2];
    bool charged;
    unsigned long served, refused;
    const char *metrics_dir;  /* the node's counters file is there (metrics.h); NULL none */
};

/* Handle one notification in the calling (single-threaded) process: read the
 * caller's arguments through handles opened before NOTIF_ID_VALID, decide,
 * mount or unmount inside the caller's mount namespace, answer, log, and go
 * back to the broker's own mount namespace. -1 when that last step failed:
 * the process must not handle another request. */
int rv_broker_handle(struct rv_broker_ctx *ctx, const struct rv_seccomp_notif *n);
/* Count one answer in the node's counters (broker_count.c): r 0 served,
 * else the negated errno the caller got. */
void rv_broker_count_answer(const char *metrics_dir, enum rv_broker_call call, int r);
/* The node's state_dir from the table's path (<state_dir>/fuse/held), for
 * the counters: into out, "" when it is not of that form. */
void rv_broker_metrics_dir(const char *held_path, char *out, size_t size);

#endif
