/* nri_fake.h - the runtime's side of NRI's socket, for the unit tests and
 * for e2e 57's fake runtime: listen, accept a plugin's registration, call
 * it (a ttrpc request on connection 1), read its answer. Include after
 * nri/nri_msg.h. */
#ifndef RESVIEW_NRI_FAKE_H
#define RESVIEW_NRI_FAKE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FAKE_UNUSED __attribute__((unused))

/* A ttrpc Request envelope for the Plugin service's method (malloc'd). */
static FAKE_UNUSED uint8_t *call(const char *service, const char *method, const ProtobufCMessage *msg,
                                      size_t *len)
{
    Ttrpc__Request req = TTRPC__REQUEST__INIT;
    size_t n = msg ? protobuf_c_message_get_packed_size(msg) : 0;
    uint8_t *payload = malloc(n ? n : 1);
    req.service = (char *)service;
    req.method = (char *)method;
    req.payload.data = payload;
    req.payload.len = msg ? protobuf_c_message_pack(msg, payload) : 0;
    *len = ttrpc__request__get_packed_size(&req);
    uint8_t *out = malloc(*len);
    ttrpc__request__pack(&req, out);
    free(payload);
    return out;
}

/* The next message on conn, reading the socket (5 s at most per read). */
static FAKE_UNUSED int read_msg(int fd, struct rv_mux_in *in, unsigned conn, struct rv_ttrpc_msg *m)
{
    struct rv_error err;
    uint8_t buf[4096];
    for (;;) {
        int r = rv_ttrpc_next(in, conn, m, &err);
        if (r != 0)
            return r;
        struct timeval tv = { 5, 0 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0 || rv_mux_feed(in, buf, (size_t)n, &err) < 0)
            return -1;
    }
}

/* The fake runtime's listening socket at path: -1 when it cannot listen. */
static FAKE_UNUSED int listen_at(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd >= 0 && (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0)) {
        close(lfd);
        lfd = -1;
    }
    return lfd;
}

/* Accept a plugin and answer its RegisterPlugin: the connection, or -1. */
static FAKE_UNUSED int accept_register(int lfd, struct rv_mux_in *in)
{
    struct rv_ttrpc_msg m;
    struct rv_error err;
    struct rv_bytes out = { 0 };
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return -1;
    memset(in, 0, sizeof(*in));
    if (read_msg(fd, in, RV_MUX_RUNTIME, &m) != 1 || m.type != RV_TTRPC_REQUEST) {
        close(fd);
        return -1;
    }
    Ttrpc__Request *r = ttrpc__request__unpack(NULL, m.len, m.data);
    bool is_reg = r && strcmp(r->method, "RegisterPlugin") == 0;
    uint32_t stream = m.stream;
    if (r)
        ttrpc__request__free_unpacked(r, NULL);
    Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
    uint8_t buf[64];
    size_t n = ttrpc__response__pack(&resp, buf);
    if (!is_reg || rv_mux_put(&out, RV_MUX_RUNTIME, stream, RV_TTRPC_RESPONSE, 0, buf, n, &err) < 0 ||
        write(fd, out.p, out.len) != (ssize_t)out.len) {
        close(fd);
        fd = -1;
    }
    rv_bytes_free(&out);
    return fd;
}

/* A call on connection 1 (stream: odd, new per call), framed in *out. */
static FAKE_UNUSED int frame_call(uint32_t stream, const char *method, const ProtobufCMessage *msg,
                                  struct rv_bytes *out)
{
    struct rv_error err;
    size_t len;
    uint8_t *req = call(RV_NRI_SERVICE_PLUGIN, method, msg, &len);
    int r = rv_mux_put(out, RV_MUX_PLUGIN, stream, RV_TTRPC_REQUEST, 1, req, len, &err);
    free(req);
    return r;
}

/* Send a call; no wait for its answer. */
static FAKE_UNUSED int send_call(int fd, uint32_t stream, const char *method, const ProtobufCMessage *msg)
{
    struct rv_bytes out = { 0 };
    int r = frame_call(stream, method, msg, &out);
    if (r == 0 && write(fd, out.p, out.len) != (ssize_t)out.len)
        r = -1;
    rv_bytes_free(&out);
    return r;
}

/* The last call's time from its first byte sent to its answer read whole
 * (its encoding, the runtime's work, left out), in ms. */
static FAKE_UNUSED double call_ms;

/* Call and read the answer (*resp, to free with ttrpc__response__free_unpacked). */
static FAKE_UNUSED int runtime_call(int fd, struct rv_mux_in *in, uint32_t stream, const char *method,
                                    const ProtobufCMessage *msg, Ttrpc__Response **resp)
{
    struct rv_bytes out = { 0 };
    struct rv_ttrpc_msg m;
    struct timespec t0, t1;
    int r = frame_call(stream, method, msg, &out);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (r < 0 || write(fd, out.p, out.len) != (ssize_t)out.len) {
        rv_bytes_free(&out);
        return -1;
    }
    rv_bytes_free(&out);
    if (read_msg(fd, in, RV_MUX_PLUGIN, &m) != 1 || m.stream != stream || m.type != RV_TTRPC_RESPONSE)
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    call_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    *resp = ttrpc__response__unpack(NULL, m.len, m.data);
    return *resp ? 0 : -1;
}

/* An empty Synchronize (one message, nothing running): what the runtime
 * sends right after Configure. */
static FAKE_UNUSED int sync_empty(int fd, struct rv_mux_in *in, uint32_t stream)
{
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    Ttrpc__Response *resp = NULL;
    int r = runtime_call(fd, in, stream, "Synchronize", &sync.base, &resp);
    if (resp)
        ttrpc__response__free_unpacked(resp, NULL);
    return r;
}

/* A runtime's Synchronize, split as containerd's NRI splits it
 * (containerd/nri pkg/adaptation/plugin.go: synchronize and
 * recalcObjsPerSyncMsg): everything in one message; while a message is over
 * ttrpc's 4 MiB, the pods and containers per message scaled by 4 MiB over
 * its size (at most 0.9), at least 4 and 4 (where containerd itself slices
 * past the end with fewer than 4 pods: here, what is left), failing when 8
 * objects are still too large; each message answered before the next.
 * Returns the messages sent, -1 on an error, -2 where containerd would
 * give up ("failed to synchronize plugin with split messages"). *ms: from
 * the first byte sent to the last answer read (the encoding left out);
 * *bytes: what was sent. */
static FAKE_UNUSED int sync_split(int fd, struct rv_mux_in *in, uint32_t *stream, nri_pod **pods, size_t np,
                                  nri_container **ctrs, size_t nc, double *ms, size_t *bytes)
{
    size_t pods_per = np, ctrs_per = nc;
    int sent = 0;
    *ms = 0;
    *bytes = 0;
    for (;;) {
        Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
        req.pods = pods;
        req.n_pods = pods_per < np ? pods_per : np;
        req.containers = ctrs;
        req.n_containers = ctrs_per < nc ? ctrs_per : nc;
        req.more = np > req.n_pods || nc > req.n_containers;
        size_t size = protobuf_c_message_get_packed_size(&req.base) + 64;   /* the envelope's */
        if (size > RV_TTRPC_MAX) {
            if (pods_per + ctrs_per <= 8)
                return -2;
            double f = (double)RV_TTRPC_MAX / (double)size;
            f = f > 0.9 ? 0.9 : f;
            pods_per = (size_t)((double)pods_per * f);
            ctrs_per = (size_t)((double)ctrs_per * f);
            if (pods_per + ctrs_per < 8)
                pods_per = ctrs_per = 4;
            continue;
        }
        Ttrpc__Response *resp = NULL;
        if (runtime_call(fd, in, *stream, "Synchronize", &req.base, &resp) < 0)
            return -1;
        *stream += 2;
        *ms += call_ms;
        *bytes += size;
        sent++;
        Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr = resp->status && resp->status->code ? NULL :
            nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, resp->payload.len, resp->payload.data);
        bool right = sr && sr->more == req.more && sr->n_update == 0;
        if (sr)
            nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(sr, NULL);
        ttrpc__response__free_unpacked(resp, NULL);
        if (!right)
            return -1;   /* containerd: "plugin does not handle split sync requests" */
        if (!req.more)
            return sent;
        pods += req.n_pods;
        np -= req.n_pods;
        ctrs += req.n_containers;
        nc -= req.n_containers;
    }
}

#endif
