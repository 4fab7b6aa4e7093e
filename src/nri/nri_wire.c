/* nri_wire.c - NRI's multiplexer and ttrpc's framing, on buffers only (no
 * system call: fuzzed as it is). Written from the framing of containerd/nri
 * pkg/net/multiplex (mux.go, ttrpc.go) and containerd/ttrpc (channel.go). */
#define _GNU_SOURCE
#include "resview/nri.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void rv_bytes_free(struct rv_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Room for n more bytes, the bytes already read dropped first. A buffer never
 * holds more than two of the largest frames: one being read, one whole. */
static int reserve(struct rv_bytes *b, size_t n, struct rv_error *err)
{
    if (b->off) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (n > 2 * (size_t)(RV_MUX_HDR + RV_MUX_FRAME_MAX) - b->len)
        return rv_fail(err, 0, "NRI: more than %u bytes unread on one connection",
                       2 * (RV_MUX_HDR + RV_MUX_FRAME_MAX));
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p)
            return rv_fail(err, ENOMEM, "NRI: buffer");
        b->p = p;
        b->cap = cap;
    }
    return 0;
}

static int append(struct rv_bytes *b, const void *data, size_t n, struct rv_error *err)
{
    if (reserve(b, n, err) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

/* The bytes of a frame's payload, to its connection's stream as they come
 * (a frame of 4 MiB is never held whole anywhere but there), or to the sink
 * while a message of it is diverted. */
static int payload(struct rv_mux_in *in, const uint8_t *data, size_t n, struct rv_error *err)
{
    if (in->divert > 0 && in->cur == in->div_conn) {
        size_t k = n < in->divert ? n : in->divert;
        in->sink(in->sink_arg, data, k);
        in->left -= k;
        in->div_done = (in->divert -= k) == 0;
        data += k;
        n -= k;
        if (n == 0)
            return 0;
    }
    if (in->cur < 3) {
        /* the stream's previous message is done once more bytes come */
        in->conn[in->cur].off += in->taken[in->cur];
        in->taken[in->cur] = 0;
        if (append(&in->conn[in->cur], data, n, err) < 0)
            return -1;
    } else {
        in->dropped += n;   /* NRI's multiplexer drops them too */
    }
    in->left -= n;
    return 0;
}

int rv_mux_feed(struct rv_mux_in *in, const uint8_t *data, size_t n, struct rv_error *err)
{
    while (n > 0) {
        size_t k;
        if (in->left > 0) {
            k = n < in->left ? n : in->left;
            if (payload(in, data, k, err) < 0)
                return -1;
        } else {
            k = RV_MUX_HDR - in->hdr_len < n ? RV_MUX_HDR - in->hdr_len : n;
            memcpy(in->hdr + in->hdr_len, data, k);
            if ((in->hdr_len += k) == RV_MUX_HDR) {
                uint32_t id = get_be32(in->hdr), len = get_be32(in->hdr + 4);
                if (id == 0)
                    return rv_fail(err, 0, "NRI: a frame for connection 0 (reserved)");
                if (len > RV_MUX_FRAME_MAX)
                    return rv_fail(err, 0, "NRI: a frame of %u bytes (at most %u)", len, RV_MUX_FRAME_MAX);
                in->cur = id;
                in->left = len;
                in->hdr_len = 0;
            }
        }
        data += k;
        n -= k;
    }
    return 0;
}

uint8_t *rv_mux_direct(struct rv_mux_in *in, size_t *room)
{
    struct rv_error err;
    struct rv_bytes *b;

    *room = in->left;
    if (in->left == 0 || in->cur >= 3 || (in->divert > 0 && in->cur == in->div_conn))
        return NULL;
    b = &in->conn[in->cur];
    b->off += in->taken[in->cur];
    in->taken[in->cur] = 0;
    if (b->len - b->off < RV_MUX_PEEK || reserve(b, in->left, &err) < 0)
        return NULL;   /* rv_mux_feed says why */
    *room = in->left;
    return b->p + b->len;
}

void rv_mux_direct_done(struct rv_mux_in *in, size_t n)
{
    in->conn[in->cur].len += n;
    in->left -= n;
}

bool rv_mux_mid_call(const struct rv_mux_in *in, unsigned conn)
{
    return in->hdr_len > 0 || in->left > 0 || in->conn[conn].len > in->conn[conn].off + in->taken[conn] ||
           (in->divert > 0 && in->div_conn == conn);
}

int rv_ttrpc_next(struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *msg,
                  struct rv_error *err)
{
    struct rv_bytes *b;
    const uint8_t *h;
    uint32_t len;

    if (conn < 1 || conn > 2)
        return rv_fail(err, EINVAL, "NRI: connection %u", conn);
    b = &in->conn[conn];
    b->off += in->taken[conn];
    in->taken[conn] = 0;
    if (b->len - b->off < RV_TTRPC_HDR)
        return 0;
    h = b->p + b->off;
    len = get_be32(h);
    if (len > RV_TTRPC_MAX)
        return rv_fail(err, 0, "NRI: a ttrpc message of %u bytes (at most %u)", len, RV_TTRPC_MAX);
    if (b->len - b->off - RV_TTRPC_HDR < len)
        return 0;
    msg->len = len;
    msg->stream = get_be32(h + 4);
    msg->type = h[8];
    msg->flags = h[9];
    msg->data = h + RV_TTRPC_HDR;
    in->taken[conn] = RV_TTRPC_HDR + (size_t)len;
    return 1;
}

int rv_ttrpc_partial(struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *msg, size_t *have)
{
    struct rv_bytes *b = &in->conn[conn < 3 ? conn : 0];
    size_t there = b->len - b->off - in->taken[conn < 3 ? conn : 0];
    const uint8_t *h = there ? b->p + b->off + in->taken[conn] : NULL;

    if (conn < 1 || conn > 2 || in->divert > 0 || there < RV_TTRPC_HDR || get_be32(h) > RV_TTRPC_MAX ||
        there - RV_TTRPC_HDR >= get_be32(h))
        return 0;   /* none, one rv_ttrpc_next refuses or returns */
    msg->len = get_be32(h);
    msg->stream = get_be32(h + 4);
    msg->type = h[8];
    msg->flags = h[9];
    msg->data = h + RV_TTRPC_HDR;
    *have = there - RV_TTRPC_HDR;
    return 1;
}

void rv_ttrpc_divert(struct rv_mux_in *in, unsigned conn, rv_mux_sink *sink, void *arg)
{
    struct rv_bytes *b = &in->conn[conn];
    struct rv_ttrpc_msg m;
    size_t have;

    if (!rv_ttrpc_partial(in, conn, &m, &have))
        return;
    sink(arg, m.data, have);
    /* it is the last thing there: not whole, so what came after it is of it */
    b->len = b->off + in->taken[conn];
    in->sink = sink;
    in->sink_arg = arg;
    in->div_conn = conn;
    in->div_stream = m.stream;
    in->divert = m.len - have;
}

bool rv_ttrpc_diverted(struct rv_mux_in *in, uint32_t *stream)
{
    bool done = in->div_done;

    in->div_done = false;
    *stream = in->div_stream;
    return done;
}

void rv_mux_in_free(struct rv_mux_in *in)
{
    for (int i = 0; i < 3; i++)
        rv_bytes_free(&in->conn[i]);
    memset(in, 0, sizeof(*in));
}

int rv_mux_put(struct rv_bytes *out, uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags,
               const uint8_t *payload, size_t len, struct rv_error *err)
{
    uint8_t th[RV_TTRPC_HDR], mh[RV_MUX_HDR];
    size_t total = RV_TTRPC_HDR + len, done = 0;

    if (len > RV_TTRPC_MAX)
        return rv_fail(err, EMSGSIZE, "NRI: a message of %zu bytes (at most %u)", len, RV_TTRPC_MAX);
    put_be32(th, (uint32_t)len);
    put_be32(th + 4, stream);
    th[8] = type;
    th[9] = flags;
    /* the ttrpc message as a byte stream, cut into frames of at most
     * RV_MUX_FRAME_MAX (one frame: it is never longer) */
    while (done < total) {
        size_t n = total - done < RV_MUX_FRAME_MAX ? total - done : RV_MUX_FRAME_MAX;
        put_be32(mh, conn);
        put_be32(mh + 4, (uint32_t)n);
        if (reserve(out, RV_MUX_HDR + n, err) < 0)
            return -1;
        memcpy(out->p + out->len, mh, RV_MUX_HDR);
        out->len += RV_MUX_HDR;
        for (size_t end = done + n; done < end;) {
            size_t k = done < RV_TTRPC_HDR ? RV_TTRPC_HDR - done : end - done;
            k = k < end - done ? k : end - done;
            memcpy(out->p + out->len, done < RV_TTRPC_HDR ? th + done : payload + (done - RV_TTRPC_HDR), k);
            out->len += k;
            done += k;
        }
    }
    return 0;
}
