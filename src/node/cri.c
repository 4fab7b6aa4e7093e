/* cri.c - a minimal gRPC client for a local CRI socket (see cri.h).
 *
 * HTTP/2 (RFC 9113) as far as one unary call needs it: the client preface,
 * our SETTINGS (large windows, no push), one HEADERS frame written with HPACK
 * literals that are never indexed and never Huffman-coded (RFC 7541 6.2.2, so
 * no header table is needed on our side), one DATA frame with the
 * length-prefixed request. The server's header blocks are not decoded: an
 * answer is a complete length-prefixed message in DATA frames of stream 1
 * before the stream ends; a trailers-only reply (any gRPC error), RST_STREAM
 * or GOAWAY is a failure. */
#define _GNU_SOURCE
#include "cri.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define H2_DATA 0x0
#define H2_HEADERS 0x1
#define H2_RST_STREAM 0x3
#define H2_SETTINGS 0x4
#define H2_PING 0x6
#define H2_GOAWAY 0x7
#define H2_FLAG_END_STREAM 0x1
#define H2_FLAG_ACK 0x1
#define H2_FLAG_END_HEADERS 0x4
#define H2_FLAG_PADDED 0x8
#define H2_WINDOW (16u << 20)
#define FRAME_MAX (1u << 24)        /* the largest frame length HTTP/2 can express */
#define RESP_MAX (16u << 20)

static int wait_io(int fd, short events, long deadline, struct rv_error *err)
{
    for (;;) {
        long left = deadline - rv_now_ms();
        struct pollfd p = { .fd = fd, .events = events };
        if (left <= 0)
            return rv_fail(err, ETIMEDOUT, "CRI");
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return rv_fail(err, errno, "CRI: poll");
    }
}

static int send_all(int fd, const void *buf, size_t len, long deadline, struct rv_error *err)
{
    const char *p = buf;
    while (len) {
        if (wait_io(fd, POLLOUT, deadline, err) < 0)
            return -1;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return rv_fail(err, errno, "CRI: send");
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int recv_all(int fd, void *buf, size_t len, long deadline, struct rv_error *err)
{
    char *p = buf;
    while (len) {
        if (wait_io(fd, POLLIN, deadline, err) < 0)
            return -1;
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n == 0)
            return rv_fail(err, ECONNRESET, "CRI: the runtime closed the connection");
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return rv_fail(err, errno, "CRI: recv");
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void put_frame_header(unsigned char *h, size_t len, unsigned type, unsigned flags, unsigned stream)
{
    h[0] = (unsigned char)(len >> 16);
    h[1] = (unsigned char)(len >> 8);
    h[2] = (unsigned char)len;
    h[3] = (unsigned char)type;
    h[4] = (unsigned char)flags;
    h[5] = (unsigned char)(stream >> 24 & 0x7f);
    h[6] = (unsigned char)(stream >> 16);
    h[7] = (unsigned char)(stream >> 8);
    h[8] = (unsigned char)stream;
}

static int send_frame(int fd, unsigned type, unsigned flags, unsigned stream, const void *payload,
                      size_t len, long deadline, struct rv_error *err)
{
    unsigned char h[9];
    put_frame_header(h, len, type, flags, stream);
    if (send_all(fd, h, sizeof(h), deadline, err) < 0)
        return -1;
    return len ? send_all(fd, payload, len, deadline, err) : 0;
}

/* HPACK string with a 7-bit length prefix, no Huffman. */
static size_t hpack_string(unsigned char *out, const char *s)
{
    size_t len = strlen(s), o = 0, v = len;
    if (v < 127) {
        out[o++] = (unsigned char)v;
    } else {
        out[o++] = 127;
        v -= 127;
        while (v >= 128) {
            out[o++] = (unsigned char)(v % 128 + 128);
            v /= 128;
        }
        out[o++] = (unsigned char)v;
    }
    memcpy(out + o, s, len);
    return o + len;
}

/* Literal header field never indexed, new name (RFC 7541 6.2.3). */
static size_t hpack_field(unsigned char *out, const char *name, const char *value)
{
    size_t o = 0;
    out[o++] = 0x10;
    o += hpack_string(out + o, name);
    o += hpack_string(out + o, value);
    return o;
}

int rv_grpc_call(const char *socket_path, const char *method, const void *req, size_t req_len,
                 char **resp, size_t *resp_len, int timeout_ms, struct rv_error *err)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    long deadline = rv_now_ms() + timeout_ms;
    cleanup_close int fd = -1;
    cleanup_free unsigned char *hdr = NULL, *data = NULL;
    cleanup_free char *body = NULL;
    size_t body_len = 0, hlen = 0;
    char timeout[32];

    *resp = NULL;
    *resp_len = 0;
    if (rv_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path) < 0)
        return rv_fail(err, ENAMETOOLONG, "CRI socket `%s`", socket_path);
    if (strlen(method) > 200 || req_len > RESP_MAX)
        return rv_fail(err, EINVAL, "CRI: request too large");
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return rv_fail(err, errno, "CRI: socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno != EINPROGRESS)
            return rv_fail(err, errno, "CRI: connect `%s`", socket_path);
        int so = 0;
        socklen_t sl = sizeof(so);
        if (wait_io(fd, POLLOUT, deadline, err) < 0)
            return rv_wrap(err, "connect `%s`", socket_path);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0 || so)
            return rv_fail(err, so ? so : errno, "CRI: connect `%s`", socket_path);
    }
    /* preface; SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE; connection window */
    static const unsigned char settings[] = { 0, 2, 0, 0, 0, 0,
                                              0, 4, H2_WINDOW >> 24, H2_WINDOW >> 16 & 0xff, 0, 0 };
    static const unsigned char window[] = { (H2_WINDOW - 65535) >> 24, (H2_WINDOW - 65535) >> 16 & 0xff,
                                            (H2_WINDOW - 65535) >> 8 & 0xff, (H2_WINDOW - 65535) & 0xff };
    snprintf(timeout, sizeof(timeout), "%dm", timeout_ms > 0 ? timeout_ms : 1);
    hdr = malloc(1024);
    data = malloc(5 + req_len);
    if (!hdr || !data)
        return rv_fail(err, ENOMEM, "CRI");
    hlen += hpack_field(hdr + hlen, ":method", "POST");
    hlen += hpack_field(hdr + hlen, ":scheme", "http");
    hlen += hpack_field(hdr + hlen, ":path", method);
    hlen += hpack_field(hdr + hlen, ":authority", "localhost");
    hlen += hpack_field(hdr + hlen, "content-type", "application/grpc");
    hlen += hpack_field(hdr + hlen, "te", "trailers");
    hlen += hpack_field(hdr + hlen, "grpc-timeout", timeout);
    data[0] = 0;
    data[1] = (unsigned char)(req_len >> 24);
    data[2] = (unsigned char)(req_len >> 16);
    data[3] = (unsigned char)(req_len >> 8);
    data[4] = (unsigned char)req_len;
    if (req_len)
        memcpy(data + 5, req, req_len);
    if (send_all(fd, preface, sizeof(preface) - 1, deadline, err) < 0 ||
        send_frame(fd, H2_SETTINGS, 0, 0, settings, sizeof(settings), deadline, err) < 0 ||
        send_frame(fd, 0x8 /* WINDOW_UPDATE */, 0, 0, window, sizeof(window), deadline, err) < 0 ||
        send_frame(fd, H2_HEADERS, H2_FLAG_END_HEADERS, 1, hdr, hlen, deadline, err) < 0 ||
        send_frame(fd, H2_DATA, H2_FLAG_END_STREAM, 1, data, 5 + req_len, deadline, err) < 0)
        return rv_wrap(err, "`%s`", socket_path);

    for (;;) {
        unsigned char h[9];
        cleanup_free unsigned char *pl = NULL;
        if (recv_all(fd, h, sizeof(h), deadline, err) < 0)
            return rv_wrap(err, "`%s` %s", socket_path, method);
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        unsigned type = h[3], flags = h[4];
        unsigned stream = (unsigned)(h[5] & 0x7f) << 24 | (unsigned)h[6] << 16 | (unsigned)h[7] << 8 | h[8];
        if (len > FRAME_MAX)
            return rv_fail(err, EPROTO, "CRI: frame too large");
        if (len && (!(pl = malloc(len)) || recv_all(fd, pl, len, deadline, err) < 0))
            return pl ? rv_wrap(err, "`%s`", socket_path) : rv_fail(err, ENOMEM, "CRI");
        if (type == H2_SETTINGS && !(flags & H2_FLAG_ACK)) {
            if (send_frame(fd, H2_SETTINGS, H2_FLAG_ACK, 0, NULL, 0, deadline, err) < 0)
                return -1;
        } else if (type == H2_PING && !(flags & H2_FLAG_ACK) && len == 8) {
            if (send_frame(fd, H2_PING, H2_FLAG_ACK, 0, pl, 8, deadline, err) < 0)
                return -1;
        } else if (type == H2_GOAWAY) {
            return rv_fail(err, ECONNRESET, "CRI `%s`: the runtime sent GOAWAY", socket_path);
        } else if (type == H2_RST_STREAM && stream == 1) {
            return rv_fail(err, ECONNRESET, "CRI `%s`: %s was reset", socket_path, method);
        } else if (type == H2_DATA && stream == 1 && len) {
            size_t off = 0, n = len;
            if (flags & H2_FLAG_PADDED) {
                if (pl[0] >= len)
                    return rv_fail(err, EPROTO, "CRI: bad padding");
                off = 1;
                n = len - 1 - pl[0];
            }
            if (body_len + n > RESP_MAX + 5)
                return rv_fail(err, EFBIG, "CRI: %s: answer too large", method);
            char *nb = realloc(body, body_len + n + 1);
            if (!nb)
                return rv_fail(err, ENOMEM, "CRI");
            body = nb;
            memcpy(body + body_len, pl + off, n);
            body_len += n;
        }
        if ((type == H2_DATA || type == H2_HEADERS) && stream == 1 && (flags & H2_FLAG_END_STREAM))
            break;
    }
    if (body_len < 5)
        return rv_fail(err, EPROTO, "CRI `%s`: %s answered without a message (not a CRI "
                       "runtime.v1 server, or the call failed)", socket_path, method);
    size_t mlen = (size_t)(unsigned char)body[1] << 24 | (size_t)(unsigned char)body[2] << 16 |
                  (size_t)(unsigned char)body[3] << 8 | (unsigned char)body[4];
    if (body[0] != 0 || mlen != body_len - 5)
        return rv_fail(err, EPROTO, "CRI `%s`: %s: malformed answer", socket_path, method);
    memmove(body, body + 5, mlen);
    body[mlen] = '\0';
    *resp = move_ptr(body);
    *resp_len = mlen;
    return 0;
}

static int pb_varint(const char *m, size_t len, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -1;
        unsigned char b = (unsigned char)m[(*pos)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* The next field of msg from *pos: its number, and its value (varint: *num;
 * length-delimited: *val, *val_len; fixed ones skipped). 1 one, 0 at the end,
 * -1 malformed. */
static int pb_next(const char *msg, size_t len, size_t *pos, unsigned *field, uint64_t *num, const char **val,
                   size_t *val_len)
{
    uint64_t key, v;

    if (*pos >= len)
        return 0;
    if (pb_varint(msg, len, pos, &key) < 0)
        return -1;
    *field = (unsigned)(key >> 3);
    *num = 0;
    *val = NULL;
    *val_len = 0;
    switch (key & 7) {
    case 0:
        return pb_varint(msg, len, pos, num) < 0 ? -1 : 1;
    case 1:
    case 5:
        if (len - *pos < ((key & 7) == 1 ? 8u : 4u))
            return -1;
        *pos += (key & 7) == 1 ? 8 : 4;
        return 1;
    case 2:
        if (pb_varint(msg, len, pos, &v) < 0 || v > len - *pos)
            return -1;
        *val = msg + *pos;
        *val_len = (size_t)v;
        *pos += (size_t)v;
        return 1;
    default:
        return -1;
    }
}

int rv_pb_next_bytes(const char *msg, size_t len, unsigned field, size_t *pos, const char **val,
                     size_t *val_len)
{
    unsigned f;
    uint64_t num;
    int r;

    while ((r = pb_next(msg, len, pos, &f, &num, val, val_len)) == 1)
        if (f == field && *val)
            return 1;
    return r;
}

static int pb_string(const char *msg, size_t len, unsigned field, char *out, size_t size)
{
    const char *v;
    size_t vl, pos = 0;
    int r = rv_pb_next_bytes(msg, len, field, &pos, &v, &vl);

    if (r < 0)
        return -1;
    if (r == 0)
        vl = 0;
    snprintf(out, size, "%.*s", (int)vl, r ? v : "");
    return 0;
}

int rv_cri_version(const char *socket, int timeout_ms, char *name, size_t name_size, char *version,
                   size_t version_size, struct rv_error *err)
{
    static const char req[] = { 0x0a, 2, 'v', '1' };   /* VersionRequest{version: "v1"} */
    cleanup_free char *resp = NULL;
    size_t len;

    if (rv_grpc_call(socket, "/runtime.v1.RuntimeService/Version", req, sizeof(req), &resp, &len,
                     timeout_ms, err) < 0)
        return -1;
    /* VersionResponse: runtime_name = 2, runtime_version = 3 */
    if (pb_string(resp, len, 2, name, name_size) < 0 || pb_string(resp, len, 3, version, version_size) < 0)
        return rv_fail(err, EPROTO, "CRI `%s`: malformed VersionResponse", socket);
    if (!name[0])
        return rv_fail(err, EPROTO, "CRI `%s`: VersionResponse without a runtime name", socket);
    return 0;
}

int rv_cri_config(const char *socket, int timeout_ms, json_t **config, struct rv_error *err)
{
    static const char req[] = { 0x08, 1 };   /* StatusRequest{verbose: true} */
    cleanup_free char *resp = NULL;
    size_t len, pos = 0;
    const char *entry;
    size_t elen;
    int r;

    *config = NULL;
    if (rv_grpc_call(socket, "/runtime.v1.RuntimeService/Status", req, sizeof(req), &resp, &len,
                     timeout_ms, err) < 0)
        return -1;
    /* StatusResponse.info = 2: map entries {key = 1, value = 2} */
    while ((r = rv_pb_next_bytes(resp, len, 2, &pos, &entry, &elen)) == 1) {
        const char *k, *v;
        size_t kl, vl, p = 0, q = 0;
        if (rv_pb_next_bytes(entry, elen, 1, &p, &k, &kl) != 1 || kl != 6 || memcmp(k, "config", 6) != 0)
            continue;
        if (rv_pb_next_bytes(entry, elen, 2, &q, &v, &vl) != 1)
            break;
        json_error_t je;
        *config = json_loadb(v, vl, 0, &je);
        if (!*config)
            return rv_fail(err, EPROTO, "CRI `%s`: Status: config: %s", socket, je.text);
        return 0;
    }
    if (r < 0)
        return rv_fail(err, EPROTO, "CRI `%s`: malformed StatusResponse", socket);
    return rv_fail(err, ENOENT, "CRI `%s`: Status has no `config` (not containerd?)", socket);
}

int rv_cri_count_pods(const char *msg, size_t len, const char *handler, unsigned *count)
{
    const char *pod;
    size_t plen, pos = 0, hl = strlen(handler);
    int r;

    *count = 0;
    /* ListPodSandboxResponse.items = 1: PodSandbox{id = 1, state = 3 (0: SANDBOX_READY,
     * absent when 0), runtime_handler = 7} */
    while ((r = rv_pb_next_bytes(msg, len, 1, &pos, &pod, &plen)) == 1) {
        size_t p = 0, vl;
        const char *v;
        unsigned f;
        uint64_t num, state = 0;
        bool same = hl == 0;
        int k;
        while ((k = pb_next(pod, plen, &p, &f, &num, &v, &vl)) == 1) {
            if (f == 3 && !v)
                state = num;
            else if (f == 7 && v)
                same = vl == hl && memcmp(v, handler, hl) == 0;
        }
        if (k < 0)
            return -1;
        if (same && state == 0)
            (*count)++;
    }
    return r < 0 ? -1 : 0;
}

int rv_cri_ready_pods(const char *socket, int timeout_ms, const char *handler, unsigned *count,
                      struct rv_error *err)
{
    cleanup_free char *resp = NULL;
    size_t len;

    *count = 0;
    /* ListPodSandboxRequest{} (every pod; the state is read from each) */
    if (rv_grpc_call(socket, "/runtime.v1.RuntimeService/ListPodSandbox", "", 0, &resp, &len, timeout_ms,
                     err) < 0)
        return -1;
    if (rv_cri_count_pods(resp, len, handler, count) < 0)
        return rv_fail(err, EPROTO, "CRI `%s`: malformed ListPodSandboxResponse", socket);
    return 0;
}

/* --- running containers (the agent's healing without NRI) ---------------- */

#define RUNNING_MAX 4096

/* The resview.io entries of a map field (entries {key = 1, value = 2}) into
 * kv (key, value, ..., NULL; RV_CRI_ANN at most). -1 malformed or out of memory. */
static int take_ann(const char *entry, size_t elen, char **kv)
{
    const char *k, *v;
    size_t kl, vl, p = 0, q = 0, i = 0;
    int r;

    if ((r = rv_pb_next_bytes(entry, elen, 1, &p, &k, &kl)) < 0)
        return -1;
    if (r == 0 || kl < 11 || kl > 64 || memcmp(k, "resview.io/", 11) != 0)
        return 0;
    if ((r = rv_pb_next_bytes(entry, elen, 2, &q, &v, &vl)) < 0)
        return -1;
    if (r == 0)
        vl = 0;
    while (kv[i])
        i += 2;
    if (i / 2 >= RV_CRI_ANN || vl > 4096)
        return 0;
    if (!(kv[i] = strndup(k, kl)) || !(kv[i + 1] = strndup(r ? v : "", vl)))
        return -1;
    return 0;
}

static void copy_str(char *out, size_t size, const char *v, size_t vl)
{
    snprintf(out, size, "%.*s", (int)(vl < size ? vl : 0), v);
}

void rv_cri_running_free(struct rv_cri_running *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++)
        for (size_t j = 0; j < 2 * RV_CRI_ANN; j++) {
            free(c[i].ann[j]);
            free(c[i].pod_ann[j]);
            if (j < RV_CRI_ANN)
                free(c[i].env[j]);
        }
    free(c);
}

int rv_cri_take_containers(const char *msg, size_t len, struct rv_cri_running **out, size_t *n)
{
    const char *ctr;
    size_t clen, pos = 0, cap = 0;
    int r;

    *out = NULL;
    *n = 0;
    /* ListContainersResponse.containers = 1: Container{id = 1, pod_sandbox_id = 2,
     * state = 6, annotations = 9} */
    while ((r = rv_pb_next_bytes(msg, len, 1, &pos, &ctr, &clen)) == 1) {
        size_t p = 0, vl;
        const char *v;
        unsigned f;
        uint64_t num, state = 0;
        int k;
        if (*n >= RUNNING_MAX)
            break;
        if (*n == cap) {
            struct rv_cri_running *m = realloc(*out, (cap = cap ? 2 * cap : 16) * sizeof(**out));
            if (!m)
                goto bad;
            *out = m;
        }
        struct rv_cri_running *c = &(*out)[*n];
        memset(c, 0, sizeof(*c));
        (*n)++;
        while ((k = pb_next(ctr, clen, &p, &f, &num, &v, &vl)) == 1) {
            if (f == 1 && v)
                copy_str(c->id, sizeof(c->id), v, vl);
            else if (f == 2 && v)
                copy_str(c->pod, sizeof(c->pod), v, vl);
            else if (f == 6 && !v)
                state = num;
            else if (f == 9 && v && take_ann(v, vl, c->ann) < 0)
                goto bad;
        }
        if (k < 0)
            goto bad;
        if (state != 1 || !c->id[0])   /* CONTAINER_RUNNING only */
            c->id[0] = 0;
    }
    if (r < 0)
        goto bad;
    return 0;
bad:
    rv_cri_running_free(*out, *n);
    *out = NULL;
    *n = 0;
    return -1;
}

int rv_cri_take_status(const char *msg, size_t len, struct rv_cri_running *c)
{
    const char *entry;
    size_t elen, pos = 0;
    int r;

    c->pid = 0;
    /* ContainerStatusResponse.info = 2: {"info": JSON with "pid"} */
    while ((r = rv_pb_next_bytes(msg, len, 2, &pos, &entry, &elen)) == 1) {
        const char *k, *v;
        size_t kl, vl, p = 0, q = 0;
        if (rv_pb_next_bytes(entry, elen, 1, &p, &k, &kl) != 1 || kl != 4 || memcmp(k, "info", 4) != 0)
            continue;
        if (rv_pb_next_bytes(entry, elen, 2, &q, &v, &vl) != 1)
            return -1;
        json_error_t je;
        json_t *info = json_loadb(v, vl, 0, &je);
        json_t *pid = info ? json_object_get(info, "pid") : NULL;
        json_t *env = json_object_get(json_object_get(json_object_get(info, "runtimeSpec"), "process"), "env"), *kv;
        size_t i, n = 0;
        if (json_is_integer(pid) && json_integer_value(pid) > 0 && json_integer_value(pid) < (1 << 30))
            c->pid = (int)json_integer_value(pid);
        /* the requests a container makes in its variables (engines without
         * annotations, or a pod's own env), as Synchronize reads them; the
         * rest of the tenant's variables are not kept */
        json_array_foreach(env, i, kv)
            if (n < RV_CRI_ANN && json_is_string(kv) && strncmp(json_string_value(kv), "RESVIEW_", 8) == 0 &&
                json_string_length(kv) < 256 && !c->env[n])
                c->env[n++] = strdup(json_string_value(kv));
        json_decref(info);
        return c->pid > 0 ? 0 : -1;
    }
    return -1;
}

int rv_cri_take_pods(const char *msg, size_t len, struct rv_cri_running *c, size_t n)
{
    const char *pod;
    size_t plen, pos = 0;
    int r;

    /* ListPodSandboxResponse.items = 1: PodSandbox{id = 1, annotations = 6, runtime_handler = 7} */
    while ((r = rv_pb_next_bytes(msg, len, 1, &pos, &pod, &plen)) == 1) {
        char id[128] = "", handler[128] = "";
        char *ann[2 * RV_CRI_ANN + 1] = { 0 };
        size_t p = 0, vl;
        const char *v;
        unsigned f;
        uint64_t num;
        int k;
        while ((k = pb_next(pod, plen, &p, &f, &num, &v, &vl)) == 1) {
            if (f == 1 && v)
                copy_str(id, sizeof(id), v, vl);
            else if (f == 7 && v)
                copy_str(handler, sizeof(handler), v, vl);
            else if (f == 6 && v && take_ann(v, vl, ann) < 0)
                k = -1;
            if (k < 0)
                break;
        }
        for (size_t i = 0; k >= 0 && id[0] && i < n; i++) {
            if (strcmp(c[i].pod, id) != 0)
                continue;
            snprintf(c[i].handler, sizeof(c[i].handler), "%s", handler);
            for (size_t j = 0; ann[j] && j < 2 * RV_CRI_ANN; j++)
                if (!c[i].pod_ann[j] && !(c[i].pod_ann[j] = strdup(ann[j])))
                    k = -1;
        }
        for (size_t j = 0; j < 2 * RV_CRI_ANN; j++)
            free(ann[j]);
        if (k < 0)
            return -1;
    }
    return r < 0 ? -1 : 0;
}

int rv_cri_running(const char *socket, int timeout_ms, struct rv_cri_running **out, size_t *n,
                   struct rv_error *err)
{
    /* ListContainersRequest{filter: {state: {state: CONTAINER_RUNNING}}} */
    static const char list[] = { 0x0a, 4, 0x12, 2, 0x08, 1 };
    long deadline = rv_now_ms() + timeout_ms;
    cleanup_free char *resp = NULL;
    size_t len, kept = 0;

    *out = NULL;
    *n = 0;
    if (rv_grpc_call(socket, "/runtime.v1.RuntimeService/ListContainers", list, sizeof(list), &resp, &len,
                     timeout_ms, err) < 0)
        return -1;
    if (rv_cri_take_containers(resp, len, out, n) < 0)
        return rv_fail(err, EPROTO, "CRI `%s`: malformed ListContainersResponse", socket);
    for (size_t i = 0; i < *n; i++) {
        struct rv_cri_running *c = &(*out)[i];
        char req[160];
        cleanup_free char *st = NULL;
        size_t sl, idl = strlen(c->id);
        long left = deadline - rv_now_ms();
        if (!c->id[0])
            continue;
        if (left <= 0) {
            rv_cri_running_free(*out, *n);
            *out = NULL;
            *n = 0;
            return rv_fail(err, ETIMEDOUT, "CRI `%s`: ContainerStatus: out of time", socket);
        }
        /* ContainerStatusRequest{container_id = 1, verbose = 2} */
        req[0] = 0x0a;
        req[1] = (char)idl;
        memcpy(req + 2, c->id, idl);
        req[2 + idl] = 0x10;
        req[3 + idl] = 1;
        if (rv_grpc_call(socket, "/runtime.v1.RuntimeService/ContainerStatus", req, idl + 4, &st, &sl,
                         (int)left, err) < 0 || rv_cri_take_status(st, sl, c) < 0)
            c->id[0] = 0;   /* gone meanwhile, or no pid: not this time */
    }
    long left = deadline - rv_now_ms();
    free(resp);
    resp = NULL;
    if (left <= 0 || rv_grpc_call(socket, "/runtime.v1.RuntimeService/ListPodSandbox", "", 0, &resp, &len,
                                  (int)left, err) < 0 || rv_cri_take_pods(resp, len, *out, *n) < 0) {
        if (left <= 0 || resp)
            rv_fail(err, left <= 0 ? ETIMEDOUT : EPROTO, "CRI `%s`: ListPodSandbox", socket);
        rv_cri_running_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    for (size_t i = 0; i < *n; i++)   /* those with an id, a pid: to the front */
        if ((*out)[i].id[0] && (*out)[i].pid > 0) {
            if (i != kept) {
                struct rv_cri_running t = (*out)[kept];
                (*out)[kept] = (*out)[i];
                (*out)[i] = t;
            }
            kept++;
        }
    for (size_t i = kept; i < *n; i++)
        for (size_t j = 0; j < 2 * RV_CRI_ANN; j++) {
            free((*out)[i].ann[j]);
            free((*out)[i].pod_ann[j]);
            (*out)[i].ann[j] = (*out)[i].pod_ann[j] = NULL;
        }
    *n = kept;
    return 0;
}
