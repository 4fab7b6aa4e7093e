/* nri.h - `resview nri`: resview as an NRI plugin (src/nri/). The runtime
 * (containerd, CRI-O) asks it at every CreateContainer for the shim's edits:
 * the variables and the hook entry for the LXCFS views. */
#ifndef RESVIEW_NRI_H
#define RESVIEW_NRI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* What came in on the socket, taken apart. */
struct rv_mux_in {
    struct rv_bytes trunk;     /* an unfinished multiplexer frame */
    struct rv_bytes conn[3];   /* the ttrpc streams of connections 1 and 2 */
    size_t taken[3];           /* bytes of the message rv_ttrpc_next returned last */
    uint64_t dropped;          /* bytes for connections nobody opened */
};

struct rv_ttrpc_msg {
    uint32_t stream;
    uint8_t type, flags;
    const uint8_t *data;       /* into the stream's buffer: valid until the next call */
    uint32_t len;
};

/* Take n bytes read from the socket: whole frames go to their connection's
 * stream. -1 on a frame no multiplexer sends (too long, connection 0). */
int rv_mux_feed(struct rv_mux_in *in, const uint8_t *data, size_t n, struct rv_error *err);
/* The next whole ttrpc message of connection conn (1 or 2): 1 with *msg
 * filled, 0 when more bytes are needed, -1 when the stream is broken (a
 * length beyond ttrpc's limit). */
int rv_ttrpc_next(struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *msg,
                  struct rv_error *err);
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
};

/* One request of the runtime (the ttrpc Request envelope as received) to
 * its response envelope (*out, malloc'd). A request that cannot be read, or
 * a container whose adjustment fails, gets an empty answer (the container is
 * created unchanged) and one log line; an invalid resview.io request gets an
 * error status (the shim refuses such a container too). -1 only when out of
 * memory. */
int rv_nri_handle(struct rv_nri_plugin *p, const uint8_t *req, size_t len, uint8_t **out,
                  size_t *out_len);
/* The RegisterPlugin call's envelope (*out, malloc'd). */
int rv_nri_register_request(uint8_t **out, size_t *out_len, struct rv_error *err);
/* Whether the runtime's answer to it says yes (-1 with its reason). */
int rv_nri_register_result(const uint8_t *resp, size_t len, struct rv_error *err);

/* The plugin's registration record (nri_record.c): STATE_DIR/nri-plugin.json,
 * written once the runtime configured the plugin, removed when the
 * connection ends or the plugin is stopped (SIGTERM, SIGINT). */
#define RV_NRI_RECORD "nri-plugin.json"
struct rv_nri_registration {
    int pid;
    unsigned long long start;   /* its start time (/proc/PID/stat), against pid reuse */
    long long since;            /* when it registered (time(2)) */
    char socket[PATH_MAX];
    char runtime[128];          /* "containerd v2.1.9" */
};
enum { RV_NRI_REG_NONE = 0, RV_NRI_REG_LIVE = 1, RV_NRI_REG_STALE = 2 };
int rv_nri_record_path(const struct rv_config *cfg, char *out, size_t size);
int rv_nri_record_write(const struct rv_config *cfg, const char *socket, const char *runtime,
                        struct rv_error *err);
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

/* Run the plugin on socket until killed: connect, register, answer;
 * reconnect with backoff when the runtime goes away (nri_plugin.c). */
int rv_nri_run(const struct rv_config *cfg, const char *socket, struct rv_error *err);

#endif
