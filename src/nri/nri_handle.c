/* nri_handle.c - the plugin's answers, envelope in, envelope out, with no
 * system call of its own (the limits read the host's cgroup files): fuzzed
 * and unit-tested as it is. */
#define _GNU_SOURCE
#include "nri_msg.h"
#include "resview/log.h"
#include "resview/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* gRPC's codes, as ttrpc's status carries them */
#define CODE_OK 0
#define CODE_INVALID_ARGUMENT 3
#define CODE_FAILED_PRECONDITION 9
#define CODE_UNIMPLEMENTED 12

/* The memory of one call's unpacked messages, kept from call to call (as
 * the connection's buffers are): a request of 4 MiB costs no fresh pages
 * after the first (a page fault each, some microseconds on a VM, whatever
 * malloc gives back). What does not fit is malloc'd. Emptied when the call
 * is answered. */
#define ARENA_SIZE (2 * (size_t)RV_TTRPC_MAX + (256 << 10))
/* under ASan each allocation its own, so that a read past one is caught */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ON 0
#endif
#endif
#ifndef ARENA_ON
#define ARENA_ON 1
#endif
static struct {
    uint8_t *p;
    size_t used;
} arena;

static void *arena_alloc(void *data, size_t n)
{
    (void)data;
    if (!arena.p && ARENA_ON)
        arena.p = malloc(ARENA_SIZE);
    if (!arena.p || n > ARENA_SIZE - arena.used || (n + 15) / 16 * 16 > ARENA_SIZE - arena.used)
        return malloc(n);
    void *r = arena.p + arena.used;
    arena.used += (n + 15) / 16 * 16;
    return r;
}

static void arena_free(void *data, void *ptr)
{
    (void)data;
    if (ptr && !(arena.p && (uint8_t *)ptr >= arena.p && (uint8_t *)ptr < arena.p + ARENA_SIZE))
        free(ptr);
}

static ProtobufCAllocator call_alloc = { arena_alloc, arena_free, NULL };

/* The response envelope around payload (len bytes), with a status. */
static int envelope(int code, const char *message, const uint8_t *payload, size_t len,
                    uint8_t **out, size_t *out_len)
{
    Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
    Ttrpc__Status st = TTRPC__STATUS__INIT;

    st.code = code;
    st.message = (char *)(message ? message : "");
    resp.status = &st;
    resp.payload.data = (uint8_t *)payload;
    resp.payload.len = len;
    *out_len = ttrpc__response__get_packed_size(&resp);
    if (!(*out = malloc(*out_len ? *out_len : 1)))
        return -1;
    ttrpc__response__pack(&resp, *out);
    return 0;
}

/* Any message of ours packed into its envelope. */
static int answer(const ProtobufCMessage *m, uint8_t **out, size_t *out_len)
{
    size_t n = m ? protobuf_c_message_get_packed_size(m) : 0;
    cleanup_free uint8_t *buf = malloc(n ? n : 1);

    if (!buf)
        return -1;
    if (n)
        protobuf_c_message_pack(m, buf);
    return envelope(CODE_OK, NULL, buf, n, out, out_len);
}

static int configure(struct rv_nri_plugin *p, const ProtobufCBinaryData *in, uint8_t **out,
                     size_t *out_len)
{
    Nri__Pkg__Api__V1alpha1__ConfigureRequest *req =
        nri__pkg__api__v1alpha1__configure_request__unpack(NULL, in->len, in->data);
    Nri__Pkg__Api__V1alpha1__ConfigureResponse resp = NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;

    /* the events we need: bit (event - 1), as NRI's EventMask; a container's
     * start and removal where the plugin gives views itself */
    resp.events = 1 << (NRI__PKG__API__V1ALPHA1__EVENT__CREATE_CONTAINER - 1);
    if (p->start_views)
        resp.events |= 1 << (NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER - 1) |
                       1 << (NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER - 1);
    if (req) {
        snprintf(p->runtime, sizeof(p->runtime), "%.60s %.60s", req->runtime_name ?: "?",
                 req->runtime_version ?: "?");
        p->request_timeout_ms = req->request_timeout;
        nri__pkg__api__v1alpha1__configure_request__free_unpacked(req, NULL);
    } else {
        rv_log(RV_WARN, "NRI: Configure: a request that is no ConfigureRequest (%zu bytes): "
               "subscribing all the same", in->len);
    }
    p->configured = true;
    rv_log(RV_INFO, "NRI: registered as %s (index %s) with %s; request timeout %" PRId64 " ms",
           RV_NRI_PLUGIN_NAME, RV_NRI_PLUGIN_IDX, p->runtime[0] ? p->runtime : "an unnamed runtime",
           p->request_timeout_ms);
    return answer(&resp.base, out, out_len);
}

/* Synchronize: nothing to update in what runs already; "more" says we take
 * the rest of a synchronization in several messages. Each message is read
 * as it comes (nri_sync.c: what the decision needs, the tenants' variables
 * skipped) and answered once it has come; the containers that started bare
 * get their views once the last one is answered. */
static int sync_answer(int r, bool more, size_t len, uint8_t **out, size_t *out_len)
{
    Nri__Pkg__Api__V1alpha1__SynchronizeResponse resp = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;

    if (r == -1)
        rv_log(RV_WARN, "NRI: Synchronize: a message that is no SynchronizeRequest (%zu bytes): the "
               "containers named before the fault are looked at, the others only at a Synchronize that is read whole", len);
    else if (r == -2)
        rv_log(RV_WARN, "NRI: Synchronize: out of memory: the containers created meanwhile get no views");
    resp.more = more;
    return answer(&resp.base, out, out_len);
}

static int synchronize(struct rv_nri_plugin *p, const uint8_t *data, size_t len, uint8_t **out,
                       size_t *out_len)
{
    bool more;
    int r = rv_nri_sync_take(p, data, len, &more);

    return sync_answer(r, more, len, out, out_len);
}

/* Whether buf is a ttrpc Request for the Plugin service's Synchronize (the
 * last service and method it names), read in place (*payload: its last
 * payload, into buf): the runtime's every container with its whole
 * environment is never copied. head: buf holds the Request's first bytes
 * only, read up to its payload's key, which must be there, with both names
 * before it (the Synchronize that is read as it comes). A request this does
 * not recognize goes through the unpack as any other. */
static bool sync_request(const uint8_t *buf, size_t len, bool head, const uint8_t **payload, size_t *plen)
{
    const uint8_t *p = buf, *end = buf + len, *data;
    uint64_t k, n;
    bool svc = false, method = false;

    *payload = NULL;
    *plen = 0;
    while (p < end) {
        const uint8_t *at = p;
        if (head && rv_pb_varint(&at, end, &k) == 0 && k == (3 << 3 | 2))
            return svc && method;
        if (rv_pb_next_field(&p, end, &k, &data, &n) < 0)
            return false;
        if (k == (1 << 3 | 2)) {
            svc = n == strlen(RV_NRI_SERVICE_PLUGIN) && memcmp(data, RV_NRI_SERVICE_PLUGIN, n) == 0;
        } else if (k == (2 << 3 | 2)) {
            method = n == 11 && memcmp(data, "Synchronize", 11) == 0;
        } else if (k == (3 << 3 | 2)) {
            *payload = data;
            *plen = (size_t)n;
        } else if (k >> 3 >= 1 && k >> 3 <= 3) {
            return false;   /* a wire type protobuf-c refuses: refused there */
        }
    }
    return !head && svc && method;
}

bool rv_nri_stream_start(struct rv_nri_plugin *p, const uint8_t *req, size_t have, size_t len)
{
    const uint8_t *payload;
    size_t plen;

    return sync_request(req, have, true, &payload, &plen) && rv_nri_sync_stream_begin(p, len) == 0;
}

int rv_nri_stream_answer(struct rv_nri_plugin *p, uint8_t **out, size_t *out_len)
{
    bool more;
    size_t len;
    int r = rv_nri_sync_stream_end(p, &more, &len);

    if (r == -3) {
        rv_log(RV_ERROR, "NRI: a Synchronize that is no ttrpc Request, or names another service or method "
               "after its payload: answered with an error");
        return envelope(CODE_INVALID_ARGUMENT, "resview: not a ttrpc Request", NULL, 0, out, out_len);
    }
    return sync_answer(r, more, len, out, out_len);
}

static void log_limits(const struct rv_nri_adjustment *a)
{
    char mem[32] = "none";

    if (!a->res.env_on) {
        rv_log(RV_INFO, "NRI: create: variables off (resview.io/env)%s",
               a->res.lxcfs_on ? "" : ", views off");
        return;
    }
    if (a->res.limits.has_mem)
        snprintf(mem, sizeof(mem), "%llu", (unsigned long long)a->res.limits.mem_mib);
    rv_log(RV_INFO, "NRI: create: cpus=%u (%s), mem_mib=%s, gpus=%u; %zu variables%s",
           a->res.limits.cpus, a->res.limits.cpus_why, mem, a->res.limits.gpus, a->adj.n_env,
           a->res.lxcfs_on ? ", the views' hook" : a->res.hook_missing ? ", no hook (cannot run it)" : "");
}

/* A pod of a runtime handler the plugin does not serve: said once per
 * handler for the plugin's life (the first RV_MAX_NRI_HANDLERS). */
static void say_skipped(const char *handler)
{
    static char said[RV_MAX_NRI_HANDLERS][64];
    static unsigned n;

    for (unsigned i = 0; i < n; i++)
        if (strncmp(said[i], handler, sizeof(said[i]) - 1) == 0)
            return;
    if (n == RV_MAX_NRI_HANDLERS)
        return;
    snprintf(said[n++], sizeof(said[0]), "%s", handler);
    if (strcmp(handler, "resview") == 0)
        rv_log(RV_INFO, "NRI: runtime handler `resview`: left to resview's runtime class, which "
               "edits its containers itself");
    else
        rv_log(RV_INFO, "NRI: runtime handler `%.63s`: not in nri.runtime_handlers: its containers "
               "are created unchanged (no views, no variables)", handler);
}

/* ---------------------------------------------- views at StartContainer */

/* The containers whose adjustment left the hook out: their ids, in the
 * order created. */
static char starts[RV_NRI_STARTS][RV_NRI_START_ID];
static unsigned n_starts;

bool rv_nri_starts_room(void)
{
    return n_starts < RV_NRI_STARTS;
}

/* Taken out of the set: whether it was there. */
static bool starts_take(const char *id)
{
    for (unsigned i = 0; i < n_starts; i++)
        if (strcmp(starts[i], id) == 0) {
            memmove(starts[i], starts[i + 1], (n_starts - i - 1) * sizeof(starts[0]));
            n_starts--;
            return true;
        }
    return false;
}

/* Once, whatever a runtime's retries of a create ask */
static void starts_add(const char *id)
{
    starts_take(id);
    if (n_starts < RV_NRI_STARTS)
        snprintf(starts[n_starts++], sizeof(starts[0]), "%s", id);
}

/* StateChange: a StateChangeEvent (event 1, container 3: its id 1 and pid
 * 12), read on the wire: the tenant's variables are skipped in place, not
 * unpacked. A container in the set gets its views as it starts; a removed
 * one leaves it. Answered Empty whatever came: a start is never failed
 * here (lxcfs.required takes the hook). */
static int state_change(struct rv_nri_plugin *p, const ProtobufCBinaryData *in, uint8_t **out,
                        size_t *out_len)
{
    const uint8_t *q = in->data, *end = in->data + in->len, *d, *ctr = NULL;
    uint64_t key, n, event = 0, pid = 0, ctr_len = 0;
    char id[RV_NRI_START_ID] = "";

    /* (a varint's value in n: rv_pb_next_field) */
    while (q < end && rv_pb_next_field(&q, end, &key, &d, &n) == 0) {
        if (key == (1 << 3 | 0))
            event = n;
        if (key == (3 << 3 | 2)) {
            ctr = d;
            ctr_len = n;
        }
    }
    for (q = ctr, end = ctr ? ctr + ctr_len : NULL; q && q < end && rv_pb_next_field(&q, end, &key, &d, &n) == 0;) {
        if (key == (1 << 3 | 2) && n < sizeof(id)) {
            memcpy(id, d, n);
            id[n] = '\0';
        }
        if (key == (12 << 3 | 0))
            pid = n;
    }
    if (event == NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER && id[0]) {
        starts_take(id);
    } else if (event == NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER && id[0] && starts_take(id)) {
        rv_log_set_id(id);
        if (pid == 0 || pid > INT32_MAX)
            rv_log(RV_WARN, "NRI: StartContainer names no process: no LXCFS views (`resview repair` "
                   "cannot give them either)");
        else if (p->start_views)
            p->start_views(p, id, (pid_t)pid);
        rv_log_set_id("-");
    }
    return answer(NULL, out, out_len);
}

/* Refused as the shim refuses it: the views cannot be given and
 * lxcfs.required says the container must not start without them. */
static int refuse_required(struct rv_nri_plugin *p, const char *why, uint8_t **out, size_t *out_len)
{
    char msg[sizeof(((struct rv_error *)0)->msg) + 64];

    if (strncmp(why, "lxcfs.required", 14) == 0)
        snprintf(msg, sizeof(msg), "%s", why);
    else
        snprintf(msg, sizeof(msg), "lxcfs.required is true, but the views cannot be given: %s", why);
    p->failed++;
    rv_log(RV_ERROR, "NRI: create refused: %s", msg);
    return envelope(CODE_FAILED_PRECONDITION, msg, NULL, 0, out, out_len);
}

static int create_container(struct rv_nri_plugin *p, const ProtobufCBinaryData *in, uint8_t **out,
                            size_t *out_len)
{
    /* in->data is ours (the envelope's unpacked copy): cut down in place */
    long n = rv_nri_create_trim(p->cfg, in->data, in->len);
    nri_create_req *req = n < 0 ? NULL :
        nri__pkg__api__v1alpha1__create_container_request__unpack(&call_alloc, (size_t)n, in->data);
    nri_create_resp resp = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
    struct rv_nri_adjustment a;
    struct rv_error err;
    int r, rc;

    p->created++;
    if (!req || !req->container) {
        const char *what = req ? "no container in the request" : "a request that is no CreateContainerRequest";
        rv_log_set_id("-");
        if (req)
            nri__pkg__api__v1alpha1__create_container_request__free_unpacked(req, &call_alloc);
        if (p->cfg->lxcfs_required)
            return refuse_required(p, what, out, out_len);
        p->failed++;
        rv_log(RV_ERROR, "NRI: CreateContainer: %s (%zu bytes): the container is created unchanged", what,
               in->len);
        return answer(&resp.base, out, out_len);
    }
    rv_log_set_id(req->container->id && rv_safe_name(req->container->id) ? req->container->id : "-");
    r = rv_nri_adjust(p, req->pod, req->container, &a, &err);
    if (r == 1) {
        say_skipped(rv_nri_handler(req->pod));
        rv_metrics_addv(p->cfg->host_state_dir, (struct rv_metric_inc[]){ { RV_M_NOVIEWS_NOT_SERVED, 1 },
                                                                         { RV_M_NOVARS_NOT_SERVED, 1 } }, 2);
        rc = answer(&resp.base, out, out_len);
    } else if (r == -1 && p->cfg->lxcfs_required && a.views_wanted) {
        rc = refuse_required(p, err.msg, out, out_len);
    } else if (r == -2) {
        /* as the shim: a request that is neither yes nor no refuses the start */
        p->failed++;
        rv_log(RV_ERROR, "NRI: create refused: %s", err.msg);
        rc = envelope(CODE_INVALID_ARGUMENT, err.msg, NULL, 0, out, out_len);
    } else if (r < 0) {
        p->failed++;
        rv_log(RV_ERROR, "NRI: %s: the container is created unchanged", err.msg);
        rc = answer(&resp.base, out, out_len);
    } else {
        p->adjusted++;
        if (a.res.hook_missing)
            rv_log(RV_WARN, "no LXCFS views: the hook `%s` cannot be run; the container starts without them",
                   p->cfg->hook_path);
        log_limits(&a);
        rv_edit_count(p->cfg, &a.res);
        if (a.views_at_start) {
            starts_add(req->container->id);
            rv_log(RV_DEBUG, "LXCFS views: given at StartContainer (watch holds the LXCFS files)");
        }
        resp.adjust = &a.adj;
        rc = answer(&resp.base, out, out_len);
    }
    rv_nri_adjustment_free(&a);
    nri__pkg__api__v1alpha1__create_container_request__free_unpacked(req, &call_alloc);
    rv_log_set_id("-");
    return rc;
}

int rv_nri_handle(struct rv_nri_plugin *p, const uint8_t *buf, size_t len, uint8_t **out,
                  size_t *out_len)
{
    const uint8_t *payload;
    size_t plen;
    char msg[256];
    int rc;

    if (sync_request(buf, len, false, &payload, &plen))
        return synchronize(p, payload, plen, out, out_len);
    Ttrpc__Request *req = ttrpc__request__unpack(&call_alloc, len, buf);
    if (!req) {
        arena.used = 0;
        rv_log(RV_ERROR, "NRI: a call that is no ttrpc Request (%zu bytes): answered with an error", len);
        return envelope(CODE_INVALID_ARGUMENT, "resview: not a ttrpc Request", NULL, 0, out, out_len);
    }
    if (!req->service || strcmp(req->service, RV_NRI_SERVICE_PLUGIN) != 0) {
        snprintf(msg, sizeof(msg), "resview: no service `%.100s`", req->service ?: "");
        rc = envelope(CODE_UNIMPLEMENTED, msg, NULL, 0, out, out_len);
    } else if (strcmp(req->method, "Configure") == 0) {
        rc = configure(p, &req->payload, out, out_len);
    } else if (strcmp(req->method, "Synchronize") == 0) {
        rc = synchronize(p, req->payload.data, req->payload.len, out, out_len);
    } else if (strcmp(req->method, "CreateContainer") == 0) {
        rc = create_container(p, &req->payload, out, out_len);
    } else if (strcmp(req->method, "StateChange") == 0) {
        rc = state_change(p, &req->payload, out, out_len);
    } else {
        /* Shutdown, the events we did not ask for, and what a newer NRI
         * adds: their empty answer is the default message */
        if (strcmp(req->method, "Shutdown") == 0)
            rv_log(RV_INFO, "NRI: the runtime shuts down");
        rc = answer(NULL, out, out_len);
    }
    ttrpc__request__free_unpacked(req, &call_alloc);
    arena.used = 0;
    return rc;
}

int rv_nri_register_request(uint8_t **out, size_t *out_len, struct rv_error *err)
{
    Nri__Pkg__Api__V1alpha1__RegisterPluginRequest reg = NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
    Ttrpc__Request req = TTRPC__REQUEST__INIT;
    uint8_t payload[256];

    reg.plugin_name = (char *)RV_NRI_PLUGIN_NAME;
    reg.plugin_idx = (char *)RV_NRI_PLUGIN_IDX;
    req.service = (char *)RV_NRI_SERVICE_RUNTIME;
    req.method = (char *)"RegisterPlugin";
    req.payload.len = nri__pkg__api__v1alpha1__register_plugin_request__pack(&reg, payload);
    req.payload.data = payload;
    *out_len = ttrpc__request__get_packed_size(&req);
    if (!(*out = malloc(*out_len)))
        return rv_fail(err, ENOMEM, "NRI: RegisterPlugin");
    ttrpc__request__pack(&req, *out);
    return 0;
}

int rv_nri_register_result(const uint8_t *buf, size_t len, struct rv_error *err)
{
    Ttrpc__Response *resp = ttrpc__response__unpack(NULL, len, buf);
    int r = 0;

    if (!resp)
        return rv_fail(err, 0, "NRI: RegisterPlugin: an answer that is no ttrpc Response");
    if (resp->status && resp->status->code != CODE_OK)
        r = rv_fail(err, 0, "NRI: RegisterPlugin refused (code %d): %.300s", resp->status->code,
                    resp->status->message ?: "");
    ttrpc__response__free_unpacked(resp, NULL);
    return r;
}
