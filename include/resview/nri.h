/* nri.h - `resview nri`: resview as an NRI plugin (src/nri/). The runtime
 * (containerd, CRI-O) asks it at every CreateContainer for the shim's edits:
 * the variables and the hook entry for the LXCFS views. */
#ifndef RESVIEW_NRI_H
#define RESVIEW_NRI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "resview/config.h"
#include "resview/limits.h"

#define RV_NRI_SOCKET_DEFAULT "/var/run/nri/nri.sock"
#define RV_NRI_PLUGIN_NAME "resview"
#define RV_NRI_PLUGIN_IDX "10"   /* plugins are called in ascending index order */

/* The wire (nri_wire.c). NRI's multiplexer (containerd/nri pkg/net/multiplex)
 * carries two byte streams on one socket, each frame a u32 BE connection id,
 * a u32 BE length and that many bytes of the stream; each stream is ttrpc:
 * messages of a u32 BE length, a u32 BE stream id, a u8 type and a u8 flags
 * byte, then the protobuf payload. */
#define RV_MUX_HDR 8
#define RV_TTRPC_HDR 10
#define RV_TTRPC_MAX (4u << 20)                       /* ttrpc's messageLengthMax */
#define RV_MUX_FRAME_MAX (RV_TTRPC_HDR + RV_TTRPC_MAX)   /* the multiplexer's frame */
#define RV_MUX_PLUGIN 1u    /* the runtime calls the plugin (Plugin service) */
#define RV_MUX_RUNTIME 2u   /* the plugin calls the runtime (Runtime service) */
#define RV_TTRPC_REQUEST 1
#define RV_TTRPC_RESPONSE 2
#define RV_TTRPC_FLAG_REMOTE_CLOSED 1   /* a unary call: no more data follows */

struct rv_bytes {
    uint8_t *p;
    size_t off, len, cap;   /* the unread bytes are p[off..len) */
};

/* Where a diverted message's bytes go, piece by piece as they come. */
typedef void rv_mux_sink(void *arg, const uint8_t *data, size_t n);

/* What came in on the socket, taken apart: each frame's payload goes to its
 * connection's stream as it comes. */
struct rv_mux_in {
    uint8_t hdr[RV_MUX_HDR];   /* a frame's header being read */
    size_t hdr_len;
    uint32_t cur;              /* the frame being read: its connection */
    size_t left;               /* and the bytes of it still to come */
    struct rv_bytes conn[3];   /* the ttrpc streams of connections 1 and 2 */
    size_t taken[3];           /* bytes of the message rv_ttrpc_next returned last */
    uint64_t dropped;          /* bytes for connections nobody opened */
    /* a message handed on as it comes, not to its stream (rv_ttrpc_divert) */
    rv_mux_sink *sink;
    void *sink_arg;
    unsigned div_conn;
    uint32_t div_stream;
    size_t divert;             /* its bytes still to come */
    bool div_done;             /* it has come whole: rv_ttrpc_diverted says so once */
};

struct rv_ttrpc_msg {
    uint32_t stream;
    uint8_t type, flags;
    const uint8_t *data;       /* into the stream's buffer: valid until the next call */
    uint32_t len;
};

/* Take n bytes read from the socket: frames' payloads go to their
 * connection's stream. -1 on a frame no multiplexer sends (too long,
 * connection 0). */
int rv_mux_feed(struct rv_mux_in *in, const uint8_t *data, size_t n, struct rv_error *err);
/* In the middle of a frame of connection 1 or 2: where the socket's next
 * bytes may be read straight into (*room bytes, the rest of that frame; no
 * copy of a 4 MiB request through a buffer of ours), then
 * rv_mux_direct_done with what was read. NULL: read and rv_mux_feed, *room
 * the rest of the frame (0: none begun): so are a message's first
 * RV_MUX_PEEK bytes (its reader may divert it) and a diverted one's. */
#define RV_MUX_PEEK 256
uint8_t *rv_mux_direct(struct rv_mux_in *in, size_t *room);
void rv_mux_direct_done(struct rv_mux_in *in, size_t n);
/* Whether bytes of a message of conn came and not the whole of it (or of
 * the frame being read). */
bool rv_mux_mid_call(const struct rv_mux_in *in, unsigned conn);
/* The next whole ttrpc message of connection conn (1 or 2): 1 with *msg
 * filled, 0 when more bytes are needed, -1 when the stream is broken (a
 * length beyond ttrpc's limit). */
int rv_ttrpc_next(struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *msg,
                  struct rv_error *err);
/* The message of conn begun and not come whole (none diverted): 1 with
 * *msg (msg->data: its first *have bytes, msg->len its length), else 0. */
int rv_ttrpc_partial(struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *msg, size_t *have);
/* That message to sink instead of conn's stream: its bytes there now, then
 * the rest as rv_mux_feed takes them (never held whole). */
void rv_ttrpc_divert(struct rv_mux_in *in, unsigned conn, rv_mux_sink *sink, void *arg);
/* Whether the diverted message has come whole (true once), its stream. */
bool rv_ttrpc_diverted(struct rv_mux_in *in, uint32_t *stream);
void rv_mux_in_free(struct rv_mux_in *in);
/* Append to out the frames that carry one ttrpc message on conn. */
int rv_mux_put(struct rv_bytes *out, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags,
               const uint8_t *payload, size_t len, struct rv_error *err);
void rv_bytes_free(struct rv_bytes *b);

/* The plugin's state across one connection (nri_handle.c). */
struct rv_nri_plugin {
    const struct rv_config *cfg;
    const struct rv_host *host;
    const char *socket;         /* the runtime's NRI socket (for the record) */
    bool hook_missing;          /* hook.path cannot be run here: no hook entry */
    bool fuse_said;             /* "FUSE is not supported" was logged */
    bool configured;            /* Configure came */
    int64_t request_timeout_ms; /* what the runtime waits for an answer (Configure) */
    char runtime[128];          /* "containerd v2.1.4" */
    unsigned long created, adjusted, failed;
    struct rv_nri_status *status;   /* the instance's status (nri_record.c), or NULL */
    struct rv_nri_sync *sync;       /* Synchronize's containers to look at (nri_sync.c) */
    bool sync_ready;                /* its last message came: start once answered */
    int lock_fd;                    /* the instance's lock (closed in children) */
    /* The views given at StartContainer instead of by a hook (nri_plugin.c;
     * NULL: always the hook): whether they can be now (watch holds the LXCFS
     * files), and giving them (hook.h rv_hook_views_started). */
    bool (*start_views_ok)(const struct rv_nri_plugin *p);
    int (*start_views)(const struct rv_nri_plugin *p, const char *id, pid_t pid);
};

/* One request of the runtime (the ttrpc Request envelope as received) to
 * its response envelope (*out, malloc'd). A request that cannot be read, or
 * a container whose adjustment fails, gets an empty answer (the container is
 * created unchanged) and one log line; an invalid resview.io request gets an
 * error status (the shim refuses such a container too). -1 only when out of
 * memory. */
int rv_nri_handle(struct rv_nri_plugin *p, const uint8_t *req, size_t len, uint8_t **out,
                  size_t *out_len);
/* Whether a request not come whole, whose first have bytes are req, is a
 * Synchronize to read as it comes (len bytes in all): a Request naming the
 * Plugin service and Synchronize before its payload, as Go orders them
 * (rv_nri_sync_stream_begin done). false also while its first fields are
 * not all there; a request not read so is read whole. */
bool rv_nri_stream_start(struct rv_nri_plugin *p, const uint8_t *req, size_t have, size_t len);
/* Its answer once it has come whole (rv_nri_handle's contract). */
int rv_nri_stream_answer(struct rv_nri_plugin *p, uint8_t **out, size_t *out_len);
/* The RegisterPlugin call's envelope (*out, malloc'd). */
int rv_nri_register_request(uint8_t **out, size_t *out_len, struct rv_error *err);
/* Whether the runtime's answer to it says yes (-1 with its reason). */
int rv_nri_register_result(const uint8_t *resp, size_t len, struct rv_error *err);

/* The socket's identity, whatever its spelling: its real path once it
 * exists, else its directory's real path (symlinks resolved; lexically
 * cleaned when it does not exist yet) and its name: `DIR/nri.sock`, `DIR/./nri.sock` and `DIR//nri.sock` are one, and
 * so are /var/run/nri/nri.sock and /run/nri/nri.sock where /var/run is a
 * link to /run. -1 when too long. */
int rv_nri_socket_identity(const char *socket, char *out, size_t size);
/* One instance per socket (nri_record.c): STATE_DIR/nri-<hash of the
 * socket's identity>.lock, flock'd for the plugin's life. The file is also the
 * instance's status, mmap'd: the plugin updates it at each call with no
 * system call, and doctor and readiness read it. */
struct rv_nri_status {
    char magic[8];              /* RV_NRI_STATUS_MAGIC */
    int32_t pid;
    uint32_t pad;
    uint64_t start;             /* the plugin's start time (/proc/PID/stat) */
    volatile uint64_t answered; /* calls answered */
    volatile int64_t busy_ms;   /* a call read and not answered yet since (CLOCK_REALTIME ms), or 0 */
    volatile int64_t last_ms;   /* the last answer (CLOCK_REALTIME ms), or 0 */
    /* registrations the runtime closed during Synchronize (after Configure,
     * before its last message): in a row (0 once one completes), in all */
    volatile uint64_t sync_closed, sync_closed_total;
    volatile int64_t sync_closed_ms;    /* the last such close (CLOCK_REALTIME ms) */
    volatile int64_t retry_ms;          /* the next registration after it (CLOCK_REALTIME ms) */
    volatile uint32_t sync_msgs;        /* the messages of the Synchronize going on or last */
    volatile uint32_t sync_containers;  /* the containers they named */
};
#define RV_NRI_STATUS_MAGIC "rvnri1\n"
/* Take the lock of socket's instance and map its status (*st, filled with
 * our pid): 0, or -1 (err; errnum EBUSY with "another `resview nri` (pid N)
 * serves ..." when a live instance holds it). The lock stays with *fd. */
int rv_nri_lock(const struct rv_config *cfg, const char *socket, int *fd, struct rv_nri_status **st,
                struct rv_error *err);
long long rv_nri_clock_ms(void);   /* CLOCK_REALTIME in ms, as the status has it */

/* The plugin's registration record (nri_record.c): STATE_DIR/nri-plugin.json,
 * written once the runtime configured the plugin, removed when the
 * connection ends or the plugin is stopped (SIGTERM, SIGINT), both only by
 * its owner (pid and start time, checked under STATE_DIR/nri-plugin.lock). */
#define RV_NRI_RECORD "nri-plugin.json"
struct rv_nri_registration {
    int pid;
    unsigned long long start;   /* its start time (/proc/PID/stat), against pid reuse */
    long long since;            /* when it registered (time(2)) */
    unsigned long long ino;     /* the inode of the plugin's end of the connection (0: unknown) */
    long long timeout_ms;       /* the runtime's request timeout (0: unknown) */
    char socket[PATH_MAX];
    char runtime[128];          /* "containerd v2.1.9" */
};
enum { RV_NRI_REG_NONE = 0, RV_NRI_REG_LIVE = 1, RV_NRI_REG_STALE = 2 };
int rv_nri_record_path(const struct rv_config *cfg, char *out, size_t size);
/* Write the record for connection fd; refused (-1, EBUSY) when the record is
 * another live plugin's. *text: what was written (malloc'd), for
 * rv_nri_record_drop. */
int rv_nri_record_write(const struct rv_config *cfg, const char *socket, const char *runtime, int fd,
                        long long timeout_ms, char **text, struct rv_error *err);
/* Remove the record if it is still text (ours); async-signal-safe. */
void rv_nri_record_drop(const char *path, const char *lock_path, const char *text);
/* RV_NRI_REG_NONE (no record), _LIVE (its process runs), _STALE (the
 * process it names is gone: the plugin was killed), or -1 (err: unreadable);
 * *reg filled from the record but for NONE. */
int rv_nri_record_read(const struct rv_config *cfg, struct rv_nri_registration *reg,
                       struct rv_error *err);
/* Whether the NRI socket at path accepts a connection, without blocking (a
 * non-blocking connect; timeout_ms bounds what could wait): 1 yes; 0 no NRI
 * there (why: no such socket, not a socket, connection refused); 2 a
 * listener that does not take a connection now (why: its backlog is full). The runtime sees a
 * connection that closes before registering (containerd logs one line). */
int rv_nri_socket_probe(const char *path, int timeout_ms, char *why, size_t size);

/* Whether the live plugin of reg serves the runtime now: the kernel's word on
 * its connection (sock_diag: closed by the runtime, bytes unread) and its
 * status (a call read and not answered). RV_NRI_SERVING, RV_NRI_CLOSED (the
 * runtime closed the connection), RV_NRI_HUNG (a call waited longer than the
 * runtime's request timeout; *since_ms: the last answer, or when that call was read). Bytes
 * unread are watched for up to wait_ms (at most the request timeout) before HUNG is said. why:
 * one phrase. */
enum { RV_NRI_SERVING = 1, RV_NRI_CLOSED = 2, RV_NRI_HUNG = 3 };
int rv_nri_serving(const struct rv_config *cfg, const struct rv_nri_registration *reg, int wait_ms,
                   long long *since_ms, char *why, size_t size);
/* One line for the state: "serving", "connection closed by the runtime", "not
 * answering since 2026-...Z (...)". */
void rv_nri_serving_say(int state, long long since_ms, const char *why, char *out, size_t size);

/* Synchronize (nri_sync.c). Each message is read as it comes (from the
 * wire, no protobuf unpack: ids, pids, states, pod handlers and the
 * resview.io requests kept, everything else, the tenants' variables
 * included, skipped without a copy) and answered at once; after the last
 * one's answer, a child of the plugin decides which running containers
 * resview serves (rv_nri_adjust, as at CreateContainer) and gives those
 * without a record their views (rv_nri_sync_start): each gets a record,
 * repair attaches it, said once per container in the log and in a file
 * `nri-sync` of its record (doctor). */
struct rv_nri_sync;
#define RV_NRI_SYNC_FILE "nri-sync"
/* One SynchronizeRequest's payload (len bytes): 0, -1 (malformed: what came
 * before the fault is kept, and the synchronization ends with it), -2 (out
 * of memory). *more: the runtime's "more" (false after a fault). */
int rv_nri_sync_take(struct rv_nri_plugin *p, const uint8_t *msg, size_t len, bool *more);
/* The same read as the message comes (the plugin's way: a Synchronize is
 * never held whole): the ttrpc Request of len bytes begun (-2 out of
 * memory), its bytes in pieces cut anywhere (rv_nri_sync_stream, a
 * rv_mux_sink), then its end once all have come (*len: its payload's): as rv_nri_sync_take, or
 * -3 when the Request is no Synchronize after all (malformed, or naming
 * another service or method after its payload): nothing of it is kept. */
int rv_nri_sync_stream_begin(struct rv_nri_plugin *p, size_t len);
void rv_nri_sync_stream(void *p, const uint8_t *data, size_t n);
int rv_nri_sync_stream_end(struct rv_nri_plugin *p, bool *more, size_t *len);
/* Whether the plugin is in Synchronize (configured, its last message not
 * come yet), with the messages, containers and bytes of it so far. */
bool rv_nri_sync_pending(const struct rv_nri_plugin *p, size_t *msgs, size_t *containers, size_t *bytes);
/* The runtime went away in the middle of it: what came is decided on. */
void rv_nri_sync_end(struct rv_nri_plugin *p);
/* After the last message's answer: start the child (none when nothing to
 * do); the descriptors in close_fds (-1 ends) are closed in it. */
void rv_nri_sync_start(struct rv_nri_plugin *p, const int *close_fds);

/* The same healing without NRI (the node agent, through the CRI, while the
 * plugin cannot register): a running container as the runtime lists it,
 * its annotations as key, value, ..., NULL (the resview.io ones suffice). */
struct rv_nri_seen {
    const char *id, *pod, *handler;   /* handler "" when none */
    uint32_t pid;
    const char *const *pod_ann, *const *ann;
    const char *const *env;   /* NULL-terminated "K=V": its RESVIEW_* variables, or NULL */
};
/* Whether resview gives it its views (rv_nri_adjust, as at CreateContainer:
 * its handler served, not opted out, its requests valid, LXCFS on). */
bool rv_nri_would_serve(struct rv_nri_plugin *p, const struct rv_nri_seen *c);
/* For each of ids[i] (process pids[i]) without a record: write one (with
 * RV_NRI_SYNC_FILE), say it once at warn, then repair them all (in this
 * process: call it in a child). by_cri: found by the agent through the CRI,
 * else at Synchronize. The count of records written. */
unsigned rv_nri_heal(const struct rv_config *cfg, const char *const *ids, const pid_t *pids, size_t n,
                     bool by_cri);
void rv_nri_sync_free(struct rv_nri_plugin *p);
/* What the instance on socket says of its registrations that the runtime
 * closed during Synchronize (its status, if its process lives): 1 with one
 * line in out (how many in a row, the last when, after how many messages
 * and containers, the next try), 0 none since the last that completed. */
int rv_nri_sync_trouble(const struct rv_config *cfg, const char *socket, char *out, size_t size);

/* The first wait after a registration the runtime closed during
 * Synchronize, in ms (0: 15 s); it doubles for each in a row, up to 5 min.
 * `resview nri` takes it from RESVIEW_NRI_SYNC_BACKOFF_MS. */
extern long rv_nri_sync_backoff_ms;

/* Run the plugin on socket until killed: connect, register, answer;
 * reconnect with backoff when the runtime goes away (nri_plugin.c). */
int rv_nri_run(const struct rv_config *cfg, const char *socket, struct rv_error *err);

#endif
