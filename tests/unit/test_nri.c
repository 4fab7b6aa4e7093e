/* test_nri.c - the NRI plugin: ttrpc framing and NRI's multiplexer, the
 * runtime's calls in and the answers out (fixtures encoded with the
 * generated messages), malformed input, and one connection to a fake
 * runtime on a Unix socket (register, configure, create, reconnect), with
 * the registration record it keeps for doctor and the node agent; the
 * socket probe. The fake runtime also times a real plugin for `make bench`
 * (RESVIEW_NRI_BENCH). */
#define _GNU_SOURCE
#include "unit.h"
#include "nri/nri_msg.h"
#include "nri_fake.h"
#include "resview/envvars.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "resview/spec.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp[] = "/tmp/rv-nri-XXXXXX";
static struct rv_config cfg;
static struct rv_host host;

static void put_file(const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, rel);
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    struct rv_error e;
    rv_mkdir_p(dir, 0755, &e);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ---- the wire ---- */

static void test_wire(void)
{
    struct rv_bytes out = { 0 };
    struct rv_mux_in in = { 0 };
    struct rv_ttrpc_msg m;
    struct rv_error err;
    const uint8_t a[] = "hello", b[] = "runtime";

    ok(rv_mux_put(&out, 1, 3, RV_TTRPC_REQUEST, 1, a, 5, &err) == 0 &&
       rv_mux_put(&out, 2, 1, RV_TTRPC_RESPONSE, 0, b, 7, &err) == 0 &&
       out.len == 2 * (RV_MUX_HDR + RV_TTRPC_HDR) + 12, "two messages framed (%zu bytes)", out.len);
    /* mux header: conn 1, length 15; ttrpc header: length 5, stream 3, type 1, flags 1 */
    const uint8_t hdr[] = { 0, 0, 0, 1, 0, 0, 0, 15, 0, 0, 0, 5, 0, 0, 0, 3, 1, 1 };
    ok(memcmp(out.p, hdr, sizeof(hdr)) == 0, "the headers are big endian: conn, length; length, stream, type, flags");
    /* one byte at a time */
    int got = 0;
    for (size_t i = 0; i < out.len; i++) {
        if (rv_mux_feed(&in, out.p + i, 1, &err) < 0)
            break;
        if (rv_ttrpc_next(&in, 1, &m, &err) == 1 && m.len == 5 && m.stream == 3 &&
            m.type == RV_TTRPC_REQUEST && m.flags == 1 && memcmp(m.data, a, 5) == 0)
            got |= 1;
        if (rv_ttrpc_next(&in, 2, &m, &err) == 1 && m.len == 7 && m.stream == 1 &&
            m.type == RV_TTRPC_RESPONSE && memcmp(m.data, b, 7) == 0)
            got |= 2;
    }
    ok(got == 3, "fed a byte at a time, each message comes out once, on its connection");
    ok(rv_ttrpc_next(&in, 1, &m, &err) == 0 && rv_ttrpc_next(&in, 2, &m, &err) == 0, "and nothing more");
    rv_mux_in_free(&in);

    /* all at once, twice over */
    struct rv_bytes two = { 0 };
    rv_mux_put(&two, 1, 5, RV_TTRPC_REQUEST, 0, a, 5, &err);
    rv_mux_put(&two, 1, 7, RV_TTRPC_REQUEST, 0, b, 7, &err);
    ok(rv_mux_feed(&in, two.p, two.len, &err) == 0 && rv_ttrpc_next(&in, 1, &m, &err) == 1 && m.stream == 5 &&
       rv_ttrpc_next(&in, 1, &m, &err) == 1 && m.stream == 7 && m.len == 7 &&
       rv_ttrpc_next(&in, 1, &m, &err) == 0, "two messages in one read");
    rv_mux_in_free(&in);
    rv_bytes_free(&two);

    /* one ttrpc message cut over two frames (the multiplexer may) */
    uint8_t cut[] = { 0, 0, 0, 1, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0,
                      0, 0, 0, 1, 0, 0, 0, 6, 0, 9, 1, 0, 'o', 'k' };
    ok(rv_mux_feed(&in, cut, sizeof(cut), &err) == 0 && rv_ttrpc_next(&in, 1, &m, &err) == 1 &&
       m.stream == 9 && m.len == 2 && memcmp(m.data, "ok", 2) == 0, "a message over two frames");
    rv_mux_in_free(&in);

    /* connections nobody opened: dropped, as NRI's multiplexer does */
    uint8_t other[] = { 0, 0, 0, 7, 0, 0, 0, 3, 'a', 'b', 'c' };
    ok(rv_mux_feed(&in, other, sizeof(other), &err) == 0 && in.dropped == 3 &&
       rv_ttrpc_next(&in, 1, &m, &err) == 0, "a frame for connection 7 is dropped");
    rv_mux_in_free(&in);

    uint8_t zero[] = { 0, 0, 0, 0, 0, 0, 0, 1, 'x' };
    ok(rv_mux_feed(&in, zero, sizeof(zero), &err) < 0 && strstr(err.msg, "connection 0"),
       "connection 0 is refused: %s", err.msg);
    rv_mux_in_free(&in);
    uint8_t huge[] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff };
    ok(rv_mux_feed(&in, huge, sizeof(huge), &err) < 0 && strstr(err.msg, "bytes"),
       "a frame beyond the multiplexer's limit is refused: %s", err.msg);
    rv_mux_in_free(&in);
    uint8_t bigmsg[] = { 0, 0, 0, 1, 0, 0, 0, 10, 0x7f, 0, 0, 0, 0, 0, 0, 1, 1, 0 };
    ok(rv_mux_feed(&in, bigmsg, sizeof(bigmsg), &err) == 0 && rv_ttrpc_next(&in, 1, &m, &err) < 0 &&
       strstr(err.msg, "ttrpc"), "a ttrpc length beyond 4 MiB breaks the stream: %s", err.msg);
    rv_mux_in_free(&in);
    ok(rv_mux_put(&out, 1, 1, 1, 0, NULL, RV_TTRPC_MAX + 1, &err) < 0, "a message beyond 4 MiB is not sent");
    rv_bytes_free(&out);

    /* a message of the largest size spans one frame, header included */
    size_t big = RV_TTRPC_MAX;
    uint8_t *payload = calloc(1, big);
    ok(payload && rv_mux_put(&out, 2, 1, 1, 0, payload, big, &err) == 0 &&
       out.len == RV_MUX_HDR + RV_TTRPC_HDR + big, "4 MiB: one frame");
    ok(rv_mux_feed(&in, out.p, out.len, &err) == 0 && rv_ttrpc_next(&in, 2, &m, &err) == 1 && m.len == big,
       "and read back whole");
    rv_bytes_free(&out);
    rv_mux_in_free(&in);

    /* and as the plugin reads it: 64 KiB at a time, the bytes intact */
    for (size_t i = 0; i < big; i++)
        payload[i] = (uint8_t)(i * 7 + i / 65536);
    int whole = 0, early = 0;
    ok(rv_mux_put(&out, 1, 9, 1, 1, payload, big, &err) == 0, "4 MiB framed");
    for (size_t at = 0; at < out.len; at += 65536) {
        size_t n = out.len - at < 65536 ? out.len - at : 65536;
        if (rv_mux_feed(&in, out.p + at, n, &err) < 0)
            break;
        int r = rv_ttrpc_next(&in, 1, &m, &err);
        if (r == 1 && at + n == out.len && m.len == big && m.stream == 9 && memcmp(m.data, payload, big) == 0)
            whole++;
        else if (r != 0)
            early++;
    }
    ok(whole == 1 && early == 0, "4 MiB in 64 KiB reads: one message, once whole, its bytes intact");
    free(payload);
    rv_bytes_free(&out);
    rv_mux_in_free(&in);
}

/* ---- the calls ---- */

/* The last answer's status message. */
static char status_msg[1024];

/* Bytes that are no protobuf message: a length past their end. */
static uint8_t junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3 };

/* A CreateContainer call whose payload is junk (malloc'd, *len bytes). */
static uint8_t *junk_call(size_t *len)
{
    Ttrpc__Request raw = TTRPC__REQUEST__INIT;
    uint8_t *req;

    raw.service = RV_NRI_SERVICE_PLUGIN;
    raw.method = "CreateContainer";
    raw.payload.data = junk;
    raw.payload.len = sizeof(junk);
    *len = ttrpc__request__get_packed_size(&raw);
    if ((req = malloc(*len)))
        ttrpc__request__pack(&raw, req);
    return req;
}

/* The answer's status code (-1: no Response), and its payload unpacked as
 * a CreateContainerResponse when resp is given. */
static int answer_of(struct rv_nri_plugin *p, uint8_t *req, size_t len, nri_create_resp **resp,
                     ProtobufCBinaryData *payload_copy)
{
    uint8_t *out = NULL;
    size_t n = 0;
    int code = -1;
    if (rv_nri_handle(p, req, len, &out, &n) == 0) {
        Ttrpc__Response *r = ttrpc__response__unpack(NULL, n, out);
        if (r) {
            code = r->status ? r->status->code : 0;
            snprintf(status_msg, sizeof(status_msg), "%s", r->status && r->status->message ? r->status->message : "");
            if (resp)
                *resp = nri__pkg__api__v1alpha1__create_container_response__unpack(NULL, r->payload.len,
                                                                                    r->payload.data);
            if (payload_copy) {
                payload_copy->len = r->payload.len;
                payload_copy->data = malloc(r->payload.len + 1);
                if (r->payload.len)
                    memcpy(payload_copy->data, r->payload.data, r->payload.len);
            }
            ttrpc__response__free_unpacked(r, NULL);
        }
    }
    free(out);
    free(req);
    return code;
}

static const char *env_of(const nri_create_resp *r, const char *key)
{
    for (size_t i = 0; r && r->adjust && i < r->adjust->n_env; i++)
        if (strcmp(r->adjust->env[i]->key, key) == 0)
            return r->adjust->env[i]->value;
    return NULL;
}

struct fixture {
    nri_pod pod;
    Nri__Pkg__Api__V1alpha1__LinuxPodSandbox podlin;
    nri_container c;
    Nri__Pkg__Api__V1alpha1__LinuxContainer lin;
    Nri__Pkg__Api__V1alpha1__LinuxResources res;
    Nri__Pkg__Api__V1alpha1__LinuxCPU cpu;
    Nri__Pkg__Api__V1alpha1__LinuxMemory mem;
    Nri__Pkg__Api__V1alpha1__OptionalInt64 quota, limit;
    Nri__Pkg__Api__V1alpha1__OptionalUInt64 period;
    Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ann[2], *annp[2];
    Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry pann[2], *pannp[2];
    char *env[4];
    nri_create_req req;
};

/* A Kubernetes container of a burstable pod under systemd: 3 CPUs and
 * 2 GiB of its own, the pod's slice 2 CPUs and 1 GiB. */
static void fixture(struct fixture *f)
{
    memset(f, 0, sizeof(*f));
    nri__pkg__api__v1alpha1__pod_sandbox__init(&f->pod);
    nri__pkg__api__v1alpha1__linux_pod_sandbox__init(&f->podlin);
    nri__pkg__api__v1alpha1__container__init(&f->c);
    nri__pkg__api__v1alpha1__linux_container__init(&f->lin);
    nri__pkg__api__v1alpha1__linux_resources__init(&f->res);
    nri__pkg__api__v1alpha1__linux_cpu__init(&f->cpu);
    nri__pkg__api__v1alpha1__linux_memory__init(&f->mem);
    nri__pkg__api__v1alpha1__optional_int64__init(&f->quota);
    nri__pkg__api__v1alpha1__optional_int64__init(&f->limit);
    nri__pkg__api__v1alpha1__optional_uint64__init(&f->period);
    nri__pkg__api__v1alpha1__create_container_request__init(&f->req);
    f->pod.id = "pod1";
    f->pod.linux = &f->podlin;
    f->podlin.cgroup_parent = "kubepods-burstable-podabc.slice";
    f->c.id = "c0ffee";
    f->c.linux = &f->lin;
    f->lin.cgroups_path = "kubepods-burstable-podabc.slice:cri-containerd:c0ffee";
    f->lin.resources = &f->res;
    f->res.cpu = &f->cpu;
    f->res.memory = &f->mem;
    f->cpu.quota = &f->quota;
    f->cpu.period = &f->period;
    f->quota.value = 300000;
    f->period.value = 100000;
    f->mem.limit = &f->limit;
    f->limit.value = 2LL << 30;
    f->env[0] = "PATH=/usr/bin";
    f->env[1] = "OMP_NUM_THREADS=5";
    f->c.env = f->env;
    f->c.n_env = 2;
    f->req.pod = &f->pod;
    f->req.container = &f->c;
}

static void annotate(struct fixture *f, const char *k, const char *v)
{
    size_t i = f->c.n_annotations++;
    nri__pkg__api__v1alpha1__container__annotations_entry__init(&f->ann[i]);
    f->ann[i].key = (char *)k;
    f->ann[i].value = (char *)v;
    f->annp[i] = &f->ann[i];
    f->c.annotations = f->annp;
}

static void annotate_pod(struct fixture *f, const char *k, const char *v)
{
    size_t i = f->pod.n_annotations++;
    nri__pkg__api__v1alpha1__pod_sandbox__annotations_entry__init(&f->pann[i]);
    f->pann[i].key = (char *)k;
    f->pann[i].value = (char *)v;
    f->pannp[i] = &f->pann[i];
    f->pod.annotations = f->pannp;
}

/* The worst requests NRI carries (a ttrpc message is at most 4 MiB): a
 * container whose variables fill it, short ones (the most entries), then
 * tail; or one whose NVIDIA_VISIBLE_DEVICES does, with distinct GPU names,
 * then tail (",none"). huge_free after. */
#define HUGE_BYTES (RV_TTRPC_MAX - 4096)
struct huge {
    char *block, **env;
};

static void huge_vars(struct fixture *f, struct huge *h, const char *const *tail, size_t n_tail)
{
    size_t n = HUGE_BYTES / 9 - n_tail;   /* "V%05zx=": 7 bytes, 2 more on the wire */
    h->block = malloc(n * 8);
    h->env = malloc((n + n_tail) * sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        h->env[i] = h->block + 8 * i;
        snprintf(h->env[i], 8, "V%05zx=", i);
    }
    for (size_t i = 0; i < n_tail; i++)
        h->env[n + i] = (char *)tail[i];
    f->c.env = h->env;
    f->c.n_env = n + n_tail;
}

static void huge_gpus(struct fixture *f, struct huge *h, const char *tail)
{
    size_t n = (HUGE_BYTES - 64 - strlen(tail)) / 8, at;
    h->block = malloc(HUGE_BYTES);
    h->env = NULL;
    at = (size_t)sprintf(h->block, "NVIDIA_VISIBLE_DEVICES=");
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(h->block + at, "%sG%06zx", i ? "," : "", i);
    sprintf(h->block + at, "%s", tail);
    f->env[1] = h->block;
}

static void huge_free(struct huge *h)
{
    free(h->block);
    free(h->env);
}

static int create(struct rv_nri_plugin *p, struct fixture *f, nri_create_resp **r)
{
    size_t len;
    uint8_t *req = call(RV_NRI_SERVICE_PLUGIN, "CreateContainer", &f->req.base, &len);
    *r = NULL;
    return answer_of(p, req, len, r, NULL);
}

static void test_calls(void)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    nri_create_resp *r = NULL;
    struct fixture f;
    size_t len;
    uint8_t *req;

    /* Configure: the event mask asks for CreateContainer only */
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    ProtobufCBinaryData pl = { 0 };
    conf.runtime_name = "containerd";
    conf.runtime_version = "v2.1.4";
    conf.request_timeout = 2000;
    req = call(RV_NRI_SERVICE_PLUGIN, "Configure", &conf.base, &len);
    ok(answer_of(&p, req, len, NULL, &pl) == 0, "Configure: answered");
    Nri__Pkg__Api__V1alpha1__ConfigureResponse *cr =
        nri__pkg__api__v1alpha1__configure_response__unpack(NULL, pl.len, pl.data);
    ok(cr && cr->events == 1 << 3, "Configure: events = CreateContainer's bit (%d)", cr ? cr->events : -1);
    ok(p.configured && p.request_timeout_ms == 2000 && strcmp(p.runtime, "containerd v2.1.4") == 0,
       "Configure: the runtime and its timeout are kept (%s)", p.runtime);
    if (cr)
        nri__pkg__api__v1alpha1__configure_response__free_unpacked(cr, NULL);
    free(pl.data);

    Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    sync.more = 1;
    req = call(RV_NRI_SERVICE_PLUGIN, "Synchronize", &sync.base, &len);
    ok(answer_of(&p, req, len, NULL, &pl) == 0, "Synchronize: answered");
    Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr =
        nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, pl.len, pl.data);
    ok(sr && sr->more && sr->n_update == 0, "Synchronize: no update, 'more' acknowledged");
    if (sr)
        nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(sr, NULL);
    free(pl.data);

    /* CreateContainer: the shim's variables and hook */
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && r && r->adjust, "CreateContainer: an adjustment");
    ok_str(env_of(r, "GOMAXPROCS"), "2", "GOMAXPROCS: the pod's 2 CPUs (its slice), not the container's 3");
    ok_str(env_of(r, "SLURM_CPUS_PER_TASK"), "2", "SLURM_CPUS_PER_TASK too");
    ok_str(env_of(r, "SLURM_MEM_PER_NODE"), "1024", "SLURM_MEM_PER_NODE: the pod's 1 GiB");
    ok(env_of(r, "OMP_NUM_THREADS") == NULL, "OMP_NUM_THREADS: the container's own 5 is kept (not in the adjustment)");
    ok(env_of(r, "SLURM_GPUS_ON_NODE") == NULL, "no GPU variables without GPUs");
    ok(r && r->adjust && r->adjust->hooks && r->adjust->hooks->n_prestart == 1 &&
       strcmp(r->adjust->hooks->prestart[0]->path, cfg.hook_path) == 0 &&
       r->adjust->hooks->prestart[0]->n_args >= 1 &&
       strcmp(r->adjust->hooks->prestart[0]->args[0], "resview-hook") == 0 &&
       r->adjust->hooks->prestart[0]->timeout && r->adjust->hooks->prestart[0]->timeout->value == 10,
       "the views' hook: prestart, resview-hook, timeout 10, as the shim writes it");
    ok(r && r->adjust && r->adjust->n_mounts == 0 && !r->adjust->linux, "nothing else is adjusted");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* the same from cgroupfs paths and a container of its own limit only */
    fixture(&f);
    f.lin.cgroups_path = "/kubepods/burstable/podabc/c0ffee";
    f.quota.value = 150000;
    f.c.n_env = 1;
    ok(create(&p, &f, &r) == 0, "CreateContainer (cgroupfs path)");
    ok_str(env_of(r, "GOMAXPROCS"), "2", "GOMAXPROCS: 1.5 CPUs rounded up (env.rounding ceil)");
    ok_str(env_of(r, "OMP_NUM_THREADS"), "2", "OMP_NUM_THREADS: the container sets none, so it gets one");
    ok_str(env_of(r, "SLURM_MEM_PER_NODE"), "2048", "SLURM_MEM_PER_NODE: its own 2 GiB (no pod limit there)");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* no cgroupsPath: from the pod's cgroup parent */
    fixture(&f);
    f.lin.cgroups_path = "";
    f.mem.limit = NULL;
    ok(create(&p, &f, &r) == 0, "CreateContainer without a cgroupsPath");
    ok_str(env_of(r, "SLURM_MEM_PER_NODE"), "1024", "the pod's cgroup parent counts: its 1 GiB");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* the opt-outs */
    fixture(&f);
    annotate(&f, "resview.io/env", "false");
    ok(create(&p, &f, &r) == 0 && r->adjust && r->adjust->n_env == 0 && r->adjust->hooks,
       "resview.io/env=false: no variables, the views stay");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    annotate(&f, "resview.io/lxcfs", "false");
    ok(create(&p, &f, &r) == 0 && r->adjust && !r->adjust->hooks && env_of(r, "GOMAXPROCS"),
       "resview.io/lxcfs=false: no hook, the variables stay");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    annotate_pod(&f, "resview.io/lxcfs", "false");
    annotate_pod(&f, "other.io/lxcfs", "maybe");
    ok(create(&p, &f, &r) == 0 && r->adjust && !r->adjust->hooks, "the pod's resview.io/lxcfs=false counts");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    annotate_pod(&f, "resview.io/lxcfs", "false");
    annotate(&f, "resview.io/lxcfs", "true");
    ok(create(&p, &f, &r) == 0 && r->adjust && r->adjust->hooks, "the container's own request wins over its pod's");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    f.env[1] = "RESVIEW_ENV=0";
    ok(create(&p, &f, &r) == 0 && r->adjust && r->adjust->n_env == 0, "RESVIEW_ENV=0 in the image: no variables");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    annotate(&f, "resview.io/gomaxprocs", "false");
    ok(create(&p, &f, &r) == 0 && !env_of(r, "GOMAXPROCS") && env_of(r, "SLURM_CPUS_PER_TASK"),
       "resview.io/gomaxprocs=false: GOMAXPROCS left to Go");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    f.env[1] = "SLURM_JOB_ID=7";
    ok(create(&p, &f, &r) == 0 && env_of(r, "GOMAXPROCS") && !env_of(r, "SLURM_CPUS_PER_TASK"),
       "a real Slurm job (SLURM_JOB_ID): no SLURM_* added");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* an invalid request refuses the container, as the shim does */
    fixture(&f);
    annotate(&f, "resview.io/env", "maybe");
    ok(create(&p, &f, &r) == 3, "resview.io/env=maybe: refused with INVALID_ARGUMENT");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* FUSE: said once, the rest served */
    fixture(&f);
    annotate(&f, "resview.io/fuse", "true");
    ok(create(&p, &f, &r) == 0 && env_of(r, "GOMAXPROCS") && r->adjust->hooks && r->adjust->n_mounts == 0 &&
       !r->adjust->linux && p.fuse_said, "resview.io/fuse=true: no FUSE, the views and variables served");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* the hook cannot be run here: no hook, variables all the same */
    fixture(&f);
    p.hook_missing = true;
    ok(create(&p, &f, &r) == 0 && r->adjust && !r->adjust->hooks && env_of(r, "GOMAXPROCS"),
       "hook.path not executable: no hook entry, the variables");
    p.hook_missing = false;
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* hook.stage createRuntime */
    fixture(&f);
    strcpy(cfg.hook_stage, "createRuntime");
    ok(create(&p, &f, &r) == 0 && r->adjust->hooks && r->adjust->hooks->n_create_runtime == 1 &&
       r->adjust->hooks->n_prestart == 0, "hook.stage createRuntime: the hook goes there");
    strcpy(cfg.hook_stage, "prestart");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* malformed: the container is created unchanged */
    req = junk_call(&len);
    unsigned long failed = p.failed;
    ok(answer_of(&p, req, len, &r, NULL) == 0 && r && !r->adjust && p.failed == failed + 1,
       "CreateContainer with a broken payload: OK, no adjustment, counted");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    nri_create_req none = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
    req = call(RV_NRI_SERVICE_PLUGIN, "CreateContainer", &none.base, &len);
    ok(answer_of(&p, req, len, &r, NULL) == 0 && r && !r->adjust, "CreateContainer without a container: unchanged");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    req = malloc(sizeof(junk));
    memcpy(req, junk, sizeof(junk));
    ok(answer_of(&p, req, sizeof(junk), NULL, NULL) == 3, "an envelope that is no Request: INVALID_ARGUMENT");
    req = call("nri.pkg.api.v1alpha1.Other", "CreateContainer", NULL, &len);
    ok(answer_of(&p, req, len, NULL, NULL) == 12, "another service: UNIMPLEMENTED");
    req = call(RV_NRI_SERVICE_PLUGIN, "StateChange", NULL, &len);
    ok(answer_of(&p, req, len, NULL, &pl) == 0 && pl.len == 0, "other methods: an empty answer");
    free(pl.data);

    /* RegisterPlugin */
    uint8_t *reg;
    struct rv_error err;
    ok(rv_nri_register_request(&reg, &len, &err) == 0, "RegisterPlugin request");
    Ttrpc__Request *rr = ttrpc__request__unpack(NULL, len, reg);
    Nri__Pkg__Api__V1alpha1__RegisterPluginRequest *rp = rr ?
        nri__pkg__api__v1alpha1__register_plugin_request__unpack(NULL, rr->payload.len, rr->payload.data) : NULL;
    ok(rr && strcmp(rr->service, "nri.pkg.api.v1alpha1.Runtime") == 0 && strcmp(rr->method, "RegisterPlugin") == 0 &&
       rp && strcmp(rp->plugin_name, "resview") == 0 && strcmp(rp->plugin_idx, RV_NRI_PLUGIN_IDX) == 0,
       "RegisterPlugin: Runtime service, name resview, index %s", RV_NRI_PLUGIN_IDX);
    if (rp)
        nri__pkg__api__v1alpha1__register_plugin_request__free_unpacked(rp, NULL);
    if (rr)
        ttrpc__request__free_unpacked(rr, NULL);
    free(reg);
    Ttrpc__Response no = TTRPC__RESPONSE__INIT;
    Ttrpc__Status st = TTRPC__STATUS__INIT;
    uint8_t buf[256];
    st.code = 6;
    st.message = "plugin \"10-resview\" already registered";
    no.status = &st;
    len = ttrpc__response__pack(&no, buf);
    ok(rv_nri_register_result(buf, len, &err) < 0 && strstr(err.msg, "already registered"),
       "a refused registration says why: %s", err.msg);
    no.status = NULL;
    len = ttrpc__response__pack(&no, buf);
    ok(rv_nri_register_result(buf, len, &err) == 0, "an answer without status is a yes");
    rv_nri_sync_free(&p);   /* what Synchronize kept, as the end of a session frees it */
}

/* The worst requests NRI can carry answered as small ones are: only the
 * variables and annotations the edits read are copied, the first of each
 * name counting as in the shim's spec. */
/* ---- Synchronize read as it comes (nri_sync.c's reader in pieces) ---- */

/* What reading a Synchronize kept: its lists' digest, "more", the result. */
struct kept {
    uint64_t digest;
    bool more;
    int r;
};

static bool same(struct kept a, struct kept b)
{
    return a.digest == b.digest && a.more == b.more && a.r == b.r;
}

static struct kept kept_whole(const uint8_t *payload, size_t plen)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    struct kept k;

    k.r = rv_nri_sync_take(&p, payload, plen, &k.more);
    k.digest = rv_nri_sync_digest(&p);
    rv_nri_sync_free(&p);
    return k;
}

/* The Request req (len bytes) read in pieces ending at cuts[0..n) (the
 * last is len). */
static struct kept kept_stream(const uint8_t *req, size_t len, const size_t *cuts, size_t n)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    struct kept k = { 0, false, -9 };
    size_t at = 0, plen;

    if (rv_nri_sync_stream_begin(&p, len) < 0)
        return k;
    for (size_t i = 0; i < n; at = cuts[i++])
        rv_nri_sync_stream(&p, req + at, cuts[i] - at);
    k.r = rv_nri_sync_stream_end(&p, &k.more, &plen);
    k.digest = rv_nri_sync_digest(&p);
    rv_nri_sync_free(&p);
    return k;
}

/* How many ways of cutting req differ from want: at every offset in two
 * pieces, in pieces of one byte, in 200 random cuttings (pieces of 1 to
 * 300 bytes). */
static int cuts_differ(const uint8_t *req, size_t len, struct kept want)
{
    size_t *cuts = calloc(len + 1, sizeof(*cuts));
    unsigned seed = 42;
    int bad = 0;

    if (!cuts)
        return -1;
    for (size_t i = 0; i <= len; i++)
        bad += !same(kept_stream(req, len, (size_t[]){ i, len }, 2), want);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    bad += !same(kept_stream(req, len, cuts, len), want);
    for (int round = 0; round < 200; round++) {
        size_t n = 0;
        for (size_t at = 0; at < len; cuts[n++] = at) {
            seed = seed * 1103515245 + 12345;
            at += 1 + (seed >> 16) % 300;
            at = at < len ? at : len;
        }
        bad += !same(kept_stream(req, len, cuts, n), want);
    }
    free(cuts);
    return bad;
}

/* A Request around payload, its fields in the order given ("smpt":
 * service, method, payload, timeout; "M": method CreateContainer). */
static size_t request_of(uint8_t *out, const char *order, const uint8_t *payload, size_t plen)
{
    uint8_t *o = out;

    for (const char *f = order; *f; f++) {
        const char *s = *f == 's' ? RV_NRI_SERVICE_PLUGIN : *f == 'm' ? "Synchronize" : "CreateContainer";
        size_t n = *f == 'p' ? plen : strlen(s);
        if (*f == 't') {
            *o++ = 4 << 3;
            *o++ = 7;
            continue;
        }
        *o++ = (uint8_t)((*f == 's' ? 1 : *f == 'p' ? 3 : 2) << 3 | 2);
        for (size_t v = n; ; v >>= 7) {
            *o++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            if (v <= 0x7f)
                break;
        }
        memcpy(o, *f == 'p' ? (const void *)payload : (const void *)s, n);
        o += n;
    }
    return (size_t)(o - out);
}

static void test_sync_stream(void)
{
    static char big_env[5000], long_env[200], env_req[140], ann_val[100], long_id[200];
    static char many[300][16];
    char *env0[310], *env1[3], *env2[3];
    nri_pod pods[3], *podp[3];
    nri_container cs[4], *cp[4];
    Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry pa[3], *pap0[2], *pap2[1];
    Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ca[3], *cap0[3];
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    size_t n = 0;

    memset(big_env, 'b', sizeof(big_env) - 1);
    memcpy(big_env, "BIG=", 4);
    memset(long_env, 'l', sizeof(long_env) - 1);
    memcpy(long_env, "RESVIEW_LXCFS=", 14);   /* too long a value: neither yes nor no */
    snprintf(env_req, sizeof(env_req), "RESVIEW_ENV=%0120d", 1);
    memset(ann_val, 'v', sizeof(ann_val) - 1);
    memset(long_id, 'i', sizeof(long_id) - 1);
    for (int i = 0; i < 300; i++) {
        snprintf(many[i], sizeof(many[i]), "V%03d=%d", i, i);
        env0[n++] = many[i];
        if (i == 100)
            env0[n++] = "RESVIEW_GOMAXPROCS=4";
        if (i == 200)
            env0[n++] = long_env;
    }
    env0[n++] = env_req;
    env0[n++] = "RESVIEW_GOMAXPROCS=8";   /* the first of a name counts */
    env1[0] = big_env;
    env1[1] = "RESVIEW_FUSE=0";
    env2[0] = "RESVIEW_LXCFS=false";
    for (int i = 0; i < 3; i++) {
        nri__pkg__api__v1alpha1__pod_sandbox__init(&pods[i]);
        nri__pkg__api__v1alpha1__pod_sandbox__annotations_entry__init(&pa[i]);
        nri__pkg__api__v1alpha1__container__annotations_entry__init(&ca[i]);
        podp[i] = &pods[i];
    }
    pods[0].id = "pod0";
    pods[0].runtime_handler = "runc";
    pa[0].key = RV_ANN_LXCFS;
    pa[0].value = "true";
    pa[1].key = "io.kubernetes.pod.name";
    pa[1].value = ann_val;
    pap0[0] = &pa[0];
    pap0[1] = &pa[1];
    pods[0].annotations = pap0;
    pods[0].n_annotations = 2;
    pods[1].id = long_id;   /* too long: bad */
    pods[2].id = "pod2";
    pa[2].key = RV_ANN_ENV;
    pa[2].value = ann_val;
    pap2[0] = &pa[2];
    pods[2].annotations = pap2;
    pods[2].n_annotations = 1;
    ca[0].key = RV_ANN_FUSE;
    ca[0].value = "true";
    ca[1].key = RV_ANN_GOMAXPROCS;
    ca[1].value = "2";
    ca[2].key = ann_val;
    ca[2].value = "x";
    cap0[0] = &ca[0];
    cap0[1] = &ca[1];
    cap0[2] = &ca[2];
    const char *ids[4] = { "c0", "c1", "c0", long_id };
    for (int i = 0; i < 4; i++) {
        nri__pkg__api__v1alpha1__container__init(&cs[i]);
        cs[i].id = (char *)ids[i];
        cs[i].pod_sandbox_id = i == 1 ? long_id : i ? "pod2" : "pod0";
        cs[i].state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
        cs[i].pid = 1000u + (uint32_t)i * 70000u;
        cp[i] = &cs[i];
    }
    cs[0].env = env0;
    cs[0].n_env = n;
    cs[0].annotations = cap0;
    cs[0].n_annotations = 3;
    cs[1].env = env1;
    cs[1].n_env = 2;
    cs[2].env = env2;
    cs[2].n_env = 1;
    sync.pods = podp;
    sync.n_pods = 3;
    sync.containers = cp;
    sync.n_containers = 4;
    sync.more = 1;

    size_t plen = protobuf_c_message_get_packed_size(&sync.base);
    uint8_t *payload = malloc(plen + 64), *req = malloc(plen + 400 * 1024);
    if (!payload || !req)
        return;
    protobuf_c_message_pack(&sync.base, payload);
    size_t len = request_of(req, "smpt", payload, plen);
    struct kept want = kept_whole(payload, plen);
    ok(want.r == 0 && want.more, "stream: the whole message read (%zu bytes)", plen);
    ok(cuts_differ(req, len, want) == 0, "stream: the same pods, containers and requests kept, cut at every "
       "offset, byte by byte, and in 200 random cuttings");

    /* the plugin's way: frames of 700 bytes, read from the socket in two
     * reads cut at every offset, diverted once its first fields came */
    uint8_t *wire = malloc(len + RV_TTRPC_HDR + (len / 700 + 2) * RV_MUX_HDR), *o = wire;
    uint8_t th[RV_TTRPC_HDR] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len,
                                 0, 0, 0, 3, RV_TTRPC_REQUEST, 0 };
    for (size_t at = 0, total = len + RV_TTRPC_HDR; at < total && wire;) {
        size_t k = total - at < 700 ? total - at : 700;
        uint8_t mh[RV_MUX_HDR] = { 0, 0, 0, 1, 0, 0, (uint8_t)(k >> 8), (uint8_t)k };
        memcpy(o, mh, sizeof(mh));
        o += sizeof(mh);
        for (size_t i = 0; i < k; i++, at++)
            *o++ = at < RV_TTRPC_HDR ? th[at] : req[at - RV_TTRPC_HDR];
    }
    size_t wlen = (size_t)(o - wire);
    int bad = 0, streamed = 0;
    for (size_t cut = 0; wire && cut <= wlen; cut++) {
        struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
        struct rv_mux_in in = { 0 };
        struct rv_error err;
        struct kept got = { 0, false, -9 };
        for (int part = 0; part < 2; part++) {
            struct rv_ttrpc_msg m;
            uint32_t stream;
            size_t have, pl;
            if (rv_mux_feed(&in, part ? wire + cut : wire, part ? wlen - cut : cut, &err) < 0)
                break;
            if (rv_ttrpc_diverted(&in, &stream)) {
                got.r = rv_nri_sync_stream_end(&p, &got.more, &pl);
                streamed += stream == 3;
            }
            if (rv_ttrpc_next(&in, RV_MUX_PLUGIN, &m, &err) == 1)
                got.r = rv_nri_sync_take(&p, m.data + (len - 2 - plen), plen, &got.more);   /* before t */
            if (rv_ttrpc_partial(&in, RV_MUX_PLUGIN, &m, &have) && rv_nri_stream_start(&p, m.data, have, m.len))
                rv_ttrpc_divert(&in, RV_MUX_PLUGIN, rv_nri_sync_stream, &p);
        }
        got.digest = rv_nri_sync_digest(&p);
        bad += !same(got, want) || rv_mux_mid_call(&in, RV_MUX_PLUGIN);
        rv_nri_sync_free(&p);
        rv_mux_in_free(&in);
    }
    ok(bad == 0 && streamed > 0, "stream: through NRI's frames, two reads cut at every offset of %zu bytes "
       "(%d read as they came): the same kept (%d differ)", wlen, streamed, bad);
    free(wire);

    /* ---- hostile ---- */
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    len = request_of(req, "spm", payload, plen);
    ok(!rv_nri_stream_start(&p, req, len, len), "stream: a Request whose payload precedes its method is read whole");
    len = request_of(req, "mMsp", payload, plen);
    ok(!rv_nri_stream_start(&p, req, len, len), "stream: one naming another method last before its payload too");
    len = request_of(req, "smp", payload, plen);
    ok(rv_nri_stream_start(&p, req, 50, len), "stream: Go's order, its first 50 bytes: read as it comes");
    rv_nri_sync_free(&p);

    /* the payload cut short: what came before the fault kept, as whole */
    for (size_t cut = plen / 2; cut < plen; cut += plen / 7) {
        len = request_of(req, "smp", payload, cut);
        want = kept_whole(payload, cut);
        ok(want.r == -1 && !want.more && cuts_differ(req, len, want) == 0,
           "stream: the payload cut at %zu of %zu: as whole (a fault, no more)", cut, plen);
    }
    /* a container's length past its parent's end */
    uint8_t nested[] = { 0x12, 0x08, 0x0a, 0x02, 'c', '9', 0x42, 0x20, 'A', '=' , 0x18, 1 };
    want = kept_whole(nested, sizeof(nested));
    len = request_of(req, "smp", nested, sizeof(nested));
    ok(want.r == -1 && cuts_differ(req, len, want) == 0, "stream: a variable longer than its container: as whole");
    /* the payload's length past the message's end: no Request, nothing kept */
    len = request_of(req, "smp", payload, plen) - 10;
    ok(kept_stream(req, len, (size_t[]){ 40, len }, 2).r == -3, "stream: a payload past the message's end: "
       "no Synchronize (answered as no Request), nothing kept");
    /* another method named after the payload */
    len = request_of(req, "smpM", payload, plen);
    ok(kept_stream(req, len, (size_t[]){ len }, 1).r == -3, "stream: another method after the payload: no "
       "Synchronize");
    /* two payloads: the last is the message's (protobuf's rule) */
    len = request_of(req, "smp", nested, sizeof(nested));
    len += request_of(req + len, "p", payload, plen);
    want = kept_whole(payload, plen);
    ok(cuts_differ(req, len, want) == 0, "stream: two payloads: the last read, the first's dropped");
    /* an annotation entry of 300 KiB (its value) before the request's */
    size_t big = 300 << 10;
    uint8_t *b = malloc(big + 256), *w = b;
    if (b) {
        const char *key = RV_ANN_LXCFS;
        size_t klen = strlen(key), elen = 2 + klen + 1 + 3 + big, clen = 4 + 1 + 3 + elen + 2 + klen + 2 + 7;
        *w++ = 0x12;   /* a container */
        for (size_t v = clen; ; v >>= 7) { *w++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); if (v <= 0x7f) break; }
        memcpy(w, "\x0a\x02" "cb", 4);
        w += 4;
        *w++ = 0x32;   /* annotations, its value huge */
        for (size_t v = elen; ; v >>= 7) { *w++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); if (v <= 0x7f) break; }
        *w++ = 0x0a;
        *w++ = (uint8_t)klen;
        memcpy(w, key, klen);
        w += klen;
        *w++ = 0x12;
        for (size_t v = big; ; v >>= 7) { *w++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); if (v <= 0x7f) break; }
        memset(w, 'y', big);
        w += big;
        *w++ = 0x32;   /* another entry, the request's */
        *w++ = (uint8_t)(2 + klen + 7);
        *w++ = 0x0a;
        *w++ = (uint8_t)klen;
        memcpy(w, key, klen);
        w += klen;
        memcpy(w, "\x12\x05" "false", 7);
        w += 7;
        want = kept_whole(b, (size_t)(w - b));
        len = request_of(req, "smp", b, (size_t)(w - b));
        int differ = 0;
        for (size_t cut = 0; cut <= len; cut += 997)
            differ += !same(kept_stream(req, len, (size_t[]){ cut, len }, 2), want);
        for (size_t cut = len - 200; cut <= len; cut++)
            differ += !same(kept_stream(req, len, (size_t[]){ cut, len }, 2), want);
        ok(want.r == 0 && differ == 0, "stream: an annotation of 300 KiB, cut anywhere: as whole");
        free(b);
    }
    free(payload);
    free(req);
}

static void test_tenant_sized(void)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    nri_create_resp *r = NULL;
    struct fixture f;
    struct huge h;
    struct rv_error err;

    fixture(&f);
    static const char *const tail[] = { "OMP_NUM_THREADS=5", "SLURM_JOB_ID=7", "RESVIEW_LXCFS=1",
                                        "RESVIEW_LXCFS=0", "OMP_NUM_THREADS=9" };
    huge_vars(&f, &h, tail, 5);
    ok(create(&p, &f, &r) == 0 && r && r->adjust, "4 MiB of variables (%zu): an adjustment", f.c.n_env);
    ok_str(env_of(r, "GOMAXPROCS"), "2", "GOMAXPROCS: the pod's 2 CPUs");
    ok(!env_of(r, "OMP_NUM_THREADS") && !env_of(r, "SLURM_CPUS_PER_TASK") && r && r->adjust &&
       r->adjust->n_env == 1 && r->adjust->hooks && r->adjust->hooks->n_prestart == 1,
       "the variables at its end count: OMP_NUM_THREADS kept, a Slurm job, RESVIEW_LXCFS=1 first (the hook)");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    huge_free(&h);

    fixture(&f);
    static const char *const off[] = { "RESVIEW_ENV=0", "RESVIEW_ENV=1", "RESVIEW_LXCFS=0" };
    huge_vars(&f, &h, off, 3);
    ok(create(&p, &f, &r) == 0 && r && r->adjust && r->adjust->n_env == 0 && !r->adjust->hooks,
       "RESVIEW_ENV=0 then =1, RESVIEW_LXCFS=0 after 4 MiB: no variables, no hook");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    huge_free(&h);

    fixture(&f);
    huge_gpus(&f, &h, "");
    ok(create(&p, &f, &r) == 0, "a 4 MiB NVIDIA_VISIBLE_DEVICES: answered");
    ok_str(env_of(r, "SLURM_GPUS_ON_NODE"), "256", "its distinct names, up to the list's 256");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    huge_free(&h);
    fixture(&f);
    huge_gpus(&f, &h, ",none");
    ok(create(&p, &f, &r) == 0 && env_of(r, "GOMAXPROCS") && !env_of(r, "SLURM_GPUS_ON_NODE"),
       "none at its end: no GPUs");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    huge_free(&h);

    /* the spec built: only what the edits read, the first of each name */
    fixture(&f);
    char *env[] = { "PATH=/usr/bin", "GOMAXPROCS=3", "X", "GOMAXPROCS=4", "NVIDIA_VISIBLE_DEVICES=0",
                    "RESVIEW_GOMAXPROCS=1", "NVIDIA_VISIBLE_DEVICES=1", "GOMAXPROCSX=1" };
    f.c.env = env;
    f.c.n_env = 8;
    annotate(&f, "cdi.k8s.io/gpu", "nvidia.com/gpu=0");
    annotate(&f, "example.com/big", "x");
    json_t *spec = rv_nri_spec(&f.pod, &f.c, &cfg, &err);
    char *text = spec ? json_dumps(json_object_get(spec, "process"), JSON_COMPACT) : NULL;
    ok_str(text, "{\"env\":[\"GOMAXPROCS=3\",\"NVIDIA_VISIBLE_DEVICES=0\",\"RESVIEW_GOMAXPROCS=1\"]}",
           "process.env: the first variable of each name the edits read, in order");
    free(text);
    text = spec ? json_dumps(json_object_get(spec, "annotations"), JSON_COMPACT) : NULL;
    ok_str(text, "{\"cdi.k8s.io/gpu\":\"nvidia.com/gpu=0\"}", "annotations: the CDI one, not others");
    free(text);
    json_decref(spec);

    /* the request cut on the wire makes the same spec as the whole one */
    annotate_pod(&f, "resview.io/env", "true");
    annotate_pod(&f, "cdi.k8s.io/pod", "nvidia.com/gpu=1");
    f.pod.runtime_handler = "runc";
    f.c.name = "big-name";
    size_t n = protobuf_c_message_get_packed_size(&f.req.base);
    uint8_t *buf = malloc(n);
    protobuf_c_message_pack(&f.req.base, buf);
    json_t *whole = rv_nri_spec(&f.pod, &f.c, &cfg, &err);
    long cut = rv_nri_create_trim(&cfg, buf, n);
    nri_create_req *tr = cut >= 0 ? nri__pkg__api__v1alpha1__create_container_request__unpack(NULL, (size_t)cut, buf) : NULL;
    json_t *from_cut = tr ? rv_nri_spec(tr->pod, tr->container, &cfg, &err) : NULL;
    ok(whole && from_cut && json_equal(whole, from_cut) && (size_t)cut < n && strcmp(tr->pod->runtime_handler, "runc") == 0 &&
       strcmp(tr->container->id, "c0ffee") == 0 && !*tr->container->name,
       "the request cut (%ld of %zu bytes): the same spec, the handler and id kept, the name gone", cut, n);
    if (tr)
        nri__pkg__api__v1alpha1__create_container_request__free_unpacked(tr, NULL);
    json_decref(whole);
    json_decref(from_cut);
    uint8_t bad[] = { 0x12, 0x05, 0x42, 0x09, 'x' };   /* container: env of 9 bytes in 1 */
    ok(rv_nri_create_trim(&cfg, bad, sizeof(bad)) < 0, "a length beyond its message: no request");
    free(buf);
}

/* lxcfs.required as the shim has it, and the runtime handlers served. */
static void count_lines(const char *path, const char *needle, int *n)
{
    char line[1024];
    FILE *fp = fopen(path, "r");
    *n = 0;
    while (fp && fgets(line, sizeof(line), fp))
        *n += strstr(line, needle) != NULL;
    if (fp)
        fclose(fp);
}

static void test_required_handlers(void)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    nri_create_resp *r = NULL;
    struct fixture f;
    size_t len;

    /* lxcfs.required and no hook to run: refused with the shim's words */
    cfg.lxcfs_required = true;
    p.hook_missing = true;
    fixture(&f);
    ok(create(&p, &f, &r) == 9 && strstr(status_msg, "lxcfs.required is true, but the hook") &&
       strstr(status_msg, cfg.hook_path), "lxcfs.required, the hook cannot be run: refused (%s)", status_msg);
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    annotate(&f, "resview.io/lxcfs", "false");
    ok(create(&p, &f, &r) == 0 && r && r->adjust && !r->adjust->hooks && env_of(r, "GOMAXPROCS"),
       "a container that opts out of the views is not refused");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    p.hook_missing = false;
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && r && r->adjust && r->adjust->hooks, "lxcfs.required, the hook there: served");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    uint8_t *req = junk_call(&len);
    ok(answer_of(&p, req, len, NULL, NULL) == 9 && strstr(status_msg, "lxcfs.required is true, but the views"),
       "lxcfs.required, a request that cannot be read: refused (%s)", status_msg);
    cfg.lxcfs_required = false;
    ok(create(&p, &f, &r) == 0, "lxcfs.required false: served again");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* runtime handlers: the runc-type ones served, others and resview's own not */
    char logf[512];
    snprintf(logf, sizeof(logf), "%s/handlers.log", tmp);
    snprintf(cfg.log_file, sizeof(cfg.log_file), "%s", logf);
    rv_log_init("nri", &cfg);
    static const char *const served[] = { "", "runc", "crun", "nvidia", "nvidia-cdi", "nvidia-legacy" };
    int n_served = 0;
    for (int i = 0; i < 6; i++) {
        fixture(&f);
        f.pod.runtime_handler = (char *)served[i];
        n_served += create(&p, &f, &r) == 0 && env_of(r, "GOMAXPROCS") && r->adjust->hooks;
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    }
    ok(n_served == 6, "the default runtime, runc, crun and NVIDIA's handlers: served (%d of 6)", n_served);
    static const char *const skipped[] = { "kata", "runsc", "resview", "kata", "runsc", "resview" };
    int n_skipped = 0;
    for (int i = 0; i < 6; i++) {
        fixture(&f);
        f.pod.runtime_handler = (char *)skipped[i];
        n_skipped += create(&p, &f, &r) == 0 && r && !r->adjust;
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    }
    ok(n_skipped == 6, "kata, runsc (gVisor) and resview (its own shim): created unchanged (%d of 6)", n_skipped);
    int kata, runsc, rv;
    count_lines(logf, "runtime handler `kata`: not in nri.runtime_handlers", &kata);
    count_lines(logf, "runtime handler `runsc`", &runsc);
    count_lines(logf, "runtime handler `resview`: left to resview's runtime class", &rv);
    ok(kata == 1 && runsc == 1 && rv == 1, "one log line per handler, not per container (%d, %d, %d)", kata,
       runsc, rv);
    /* an operator's list */
    struct rv_config saved = cfg;
    cfg.n_nri_handlers = 0;
    strcpy(cfg.nri_handlers[cfg.n_nri_handlers++], "kata");
    strcpy(cfg.nri_handlers[cfg.n_nri_handlers++], "resview");
    fixture(&f);
    f.pod.runtime_handler = "kata";
    ok(create(&p, &f, &r) == 0 && env_of(r, "GOMAXPROCS"), "nri.runtime_handlers [kata]: kata served");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && r && !r->adjust, "and the default runtime not");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    f.pod.runtime_handler = "resview";
    ok(create(&p, &f, &r) == 0 && r && !r->adjust, "resview never, even listed");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    cfg = saved;
    strcpy(cfg.log_file, "/dev/null");
    rv_log_init("nri", &cfg);
}

/* ---- views at StartContainer ---- */

static bool watch_holds = true;
static char started_id[128];
static pid_t started_pid;
static int n_started;

static bool stub_ok(const struct rv_nri_plugin *p)
{
    (void)p;
    return watch_holds;
}

static int stub_start(const struct rv_nri_plugin *p, const char *id, pid_t pid)
{
    (void)p;
    snprintf(started_id, sizeof(started_id), "%s", id);
    started_pid = pid;
    n_started++;
    return 0;
}

/* A StateChange call: event, the container's id and pid (the pod and the
 * variables as containerd sends them, to be skipped). */
static uint8_t *state_call(int event, const char *id, uint32_t pid, size_t *len)
{
    Nri__Pkg__Api__V1alpha1__StateChangeEvent ev = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;
    struct fixture f;

    fixture(&f);
    f.c.id = (char *)id;
    f.c.pid = pid;
    ev.event = (Nri__Pkg__Api__V1alpha1__Event)event;
    ev.pod = &f.pod;
    ev.container = &f.c;
    return call(RV_NRI_SERVICE_PLUGIN, "StateChange", &ev.base, len);
}

static int state(struct rv_nri_plugin *p, int event, const char *id, uint32_t pid)
{
    size_t len;
    uint8_t *req = state_call(event, id, pid, &len);
    return answer_of(p, req, len, NULL, NULL);
}

static void test_views_at_start(void)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host, .start_views_ok = stub_ok, .start_views = stub_start };
    enum { START = NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER,
           REMOVE = NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER };
    nri_create_resp *r = NULL;
    struct fixture f;
    size_t len;

    /* Configure: a start and a removal asked for too */
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    ProtobufCBinaryData pl = { 0 };
    conf.request_timeout = 2000;
    uint8_t *req = call(RV_NRI_SERVICE_PLUGIN, "Configure", &conf.base, &len);
    ok(answer_of(&p, req, len, NULL, &pl) == 0, "views at start: Configure answered");
    Nri__Pkg__Api__V1alpha1__ConfigureResponse *cr =
        nri__pkg__api__v1alpha1__configure_response__unpack(NULL, pl.len, pl.data);
    ok(cr && cr->events == (1 << 3 | 1 << 5 | 1 << 10), "…events: CreateContainer, StartContainer, "
       "RemoveContainer (%d)", cr ? cr->events : -1);
    if (cr)
        nri__pkg__api__v1alpha1__configure_response__free_unpacked(cr, NULL);
    free(pl.data);

    /* watch holds the files: no hook; the views at its start, once */
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && r && r->adjust && !r->adjust->hooks && env_of(r, "GOMAXPROCS"),
       "watch holds the files: the variables, no hook");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    ok(state(&p, START, "c0ffee", 4242) == 0 && n_started == 1 && strcmp(started_id, "c0ffee") == 0 &&
       started_pid == 4242, "StartContainer: its views given, with its pid (%s %d)", started_id, (int)started_pid);
    ok(state(&p, START, "c0ffee", 4242) == 0 && n_started == 1, "a second StartContainer: nothing more");
    ok(state(&p, START, "other", 4243) == 0 && n_started == 1,
       "a container the plugin did not leave its hook out of: nothing (its hook, or none wanted)");
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && state(&p, REMOVE, "c0ffee", 0) == 0 && state(&p, START, "c0ffee", 4242) == 0 &&
       n_started == 1, "created, removed, then a start: nothing");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    fixture(&f);
    ok(create(&p, &f, &r) == 0 && state(&p, START, "c0ffee", 0) == 0 && n_started == 1,
       "a start that names no process: nothing (said)");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* where it must be the hook */
    int hooks = 0;
    watch_holds = false;
    fixture(&f);
    hooks += create(&p, &f, &r) == 0 && r->adjust->hooks;
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    watch_holds = true;
    cfg.lxcfs_required = true;
    fixture(&f);
    hooks += create(&p, &f, &r) == 0 && r->adjust->hooks;
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    cfg.lxcfs_required = false;
    p.request_timeout_ms = 1500;
    fixture(&f);
    hooks += create(&p, &f, &r) == 0 && r->adjust->hooks;
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    p.request_timeout_ms = 2000;
    char longid[100];
    memset(longid, 'a', sizeof(longid) - 1);
    longid[sizeof(longid) - 1] = '\0';
    fixture(&f);
    f.c.id = longid;
    hooks += create(&p, &f, &r) == 0 && r->adjust->hooks;
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    ok(hooks == 4, "the hook where watch holds nothing, lxcfs.required, a request timeout under 2 s, "
       "an id of 99 bytes (%d of 4)", hooks);
    fixture(&f);
    annotate(&f, "resview.io/lxcfs", "false");
    ok(create(&p, &f, &r) == 0 && !r->adjust->hooks && state(&p, START, "c0ffee", 4242) == 0 && n_started == 1,
       "opted out: no hook, nothing at its start");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);

    /* at most RV_NRI_STARTS waiting: then the hook */
    char ids[RV_NRI_STARTS + 1][16];
    int waiting = 0;
    for (int i = 0; i <= RV_NRI_STARTS; i++) {
        snprintf(ids[i], sizeof(ids[i]), "w%d", i);
        fixture(&f);
        f.c.id = ids[i];
        waiting += create(&p, &f, &r) == 0 && !r->adjust->hooks;
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    }
    ok(waiting == RV_NRI_STARTS, "%d created, never started: the first %d wait, the next gets the hook",
       RV_NRI_STARTS + 1, waiting);
    int removed = 0;
    for (int i = 0; i < RV_NRI_STARTS; i++)
        removed += state(&p, REMOVE, ids[i], 0) == 0;
    ok(removed == RV_NRI_STARTS && rv_nri_starts_room() && n_started == 1, "removed: room again, nothing given");

    /* hostile events: cut at every length, junk, an id past its bounds */
    fixture(&f);
    ok(create(&p, &f, &r) == 0, "one more waiting");
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(r, NULL);
    Nri__Pkg__Api__V1alpha1__StateChangeEvent ev = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;
    fixture(&f);
    f.c.pid = 4242;
    ev.event = (Nri__Pkg__Api__V1alpha1__Event)START;
    ev.pod = &f.pod;
    ev.container = &f.c;
    size_t el = nri__pkg__api__v1alpha1__state_change_event__get_packed_size(&ev);
    uint8_t *eb = malloc(el);
    nri__pkg__api__v1alpha1__state_change_event__pack(&ev, eb);
    int cut_ok = 0;
    for (size_t cut = 0; cut < el; cut++) {
        Ttrpc__Request raw = TTRPC__REQUEST__INIT;
        raw.service = RV_NRI_SERVICE_PLUGIN;
        raw.method = "StateChange";
        raw.payload.data = eb;
        raw.payload.len = cut;
        len = ttrpc__request__get_packed_size(&raw);
        req = malloc(len);
        ttrpc__request__pack(&raw, req);
        cut_ok += answer_of(&p, req, len, NULL, NULL) == 0;
    }
    free(eb);
    ok(cut_ok == (int)el, "a StartContainer cut at each of its %zu lengths: each answered OK", el);
    ok(n_started == 1 || (n_started == 2 && strcmp(started_id, "c0ffee") == 0 && started_pid == 4242),
       "…and a cut one gives views only to the container it names, with its pid (%d)", n_started);
    n_started = 1;
    Ttrpc__Request raw = TTRPC__REQUEST__INIT;
    raw.service = RV_NRI_SERVICE_PLUGIN;
    raw.method = "StateChange";
    raw.payload.data = junk;
    raw.payload.len = sizeof(junk);
    len = ttrpc__request__get_packed_size(&raw);
    req = malloc(len);
    ttrpc__request__pack(&raw, req);
    ok(answer_of(&p, req, len, NULL, NULL) == 0 && n_started == 1, "junk: answered OK, nothing given");
    state(&p, REMOVE, "c0ffee", 0);
    ok(rv_nri_starts_room(), "(emptied)");
}

/* ---- one connection to a fake runtime ---- */

/* The decision of the agent's healing without NRI (on what the CRI lists):
 * rv_nri_adjust's, as at CreateContainer and at Synchronize. */
static void test_would_serve(void)
{
    struct rv_nri_plugin p = { .cfg = &cfg, .host = &host };
    const char *off[] = { "resview.io/lxcfs", "false", NULL };
    const char *other[] = { "resview.io/env", "false", NULL };
    struct rv_nri_seen c = { .id = "c1", .pod = "p1", .handler = "", .pid = 1 };

    ok(rv_nri_would_serve(&p, &c), "healing: a running container of the default runtime is served");
    c.ann = other;
    ok(rv_nri_would_serve(&p, &c), "...its variables opted out, its views not: served");
    c.ann = off;
    ok(!rv_nri_would_serve(&p, &c), "...resview.io/lxcfs: \"false\" on the container: left alone");
    c.ann = NULL;
    c.pod_ann = off;
    ok(!rv_nri_would_serve(&p, &c), "...on the pod: left alone");
    c.pod_ann = NULL;
    c.handler = "kata";
    ok(!rv_nri_would_serve(&p, &c), "...a runtime handler not in nri.runtime_handlers: left alone");
    c.handler = "resview";
    ok(!rv_nri_would_serve(&p, &c), "...the resview handler (its shim's): left alone");
    c.handler = "";
    c.pid = 0;
    ok(!rv_nri_would_serve(&p, &c), "...no process: left alone");
    c.pid = 1;
    c.id = "../x";
    ok(!rv_nri_would_serve(&p, &c), "...an id that is no safe name: left alone");
}

static void test_socket(void)
{
    char sock[256];
    struct rv_mux_in in;
    Ttrpc__Response *resp = NULL;
    struct fixture f;

    snprintf(sock, sizeof(sock), "%s/nri.sock", tmp);
    pid_t pid = fork();
    if (pid == 0) {
        struct rv_error err;
        /* the runtime is not there yet: the plugin waits for it */
        alarm(30);
        rv_nri_run(&cfg, sock, &err);
        _exit(1);
    }
    usleep(300000);
    int lfd = listen_at(sock);
    ok(lfd >= 0, "fake runtime listens (late)");
    int fd = accept_register(lfd, &in);
    ok(fd >= 0, "the plugin found the socket and registered on connection 2");
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    conf.request_timeout = 2000;
    struct rv_nri_registration reg;
    struct rv_error rerr;
    ok(rv_nri_record_read(&cfg, &reg, &rerr) == RV_NRI_REG_NONE, "no registration record before Configure");
    conf.runtime_name = "fakerd";
    conf.runtime_version = "v9";
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0 && resp->status && resp->status->code == 0,
       "Configure over the socket: answered on connection 1, stream 1");
    if (resp)
        ttrpc__response__free_unpacked(resp, NULL);
    /* written once the answer is sent: a moment after we read it */
    int rr = RV_NRI_REG_NONE;
    for (int i = 0; i < 40 && (rr = rv_nri_record_read(&cfg, &reg, &rerr)) != RV_NRI_REG_LIVE; i++)
        usleep(50000);
    ok(rr == RV_NRI_REG_LIVE && reg.pid == pid && strcmp(reg.socket, sock) == 0 &&
       strcmp(reg.runtime, "fakerd v9") == 0 && reg.since > 0,
       "configured: the record names the plugin's pid, the socket and the runtime (%d, pid %d, `%s`)", rr,
       reg.pid, reg.runtime);
    fixture(&f);
    ok(runtime_call(fd, &in, 3, "CreateContainer", &f.req.base, &resp) == 0, "CreateContainer over the socket");
    nri_create_resp *cr = resp ? nri__pkg__api__v1alpha1__create_container_response__unpack(
                                     NULL, resp->payload.len, resp->payload.data) : NULL;
    ok_str(env_of(cr, "GOMAXPROCS"), "2", "GOMAXPROCS in the answer");
    if (cr)
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
    if (resp)
        ttrpc__response__free_unpacked(resp, NULL);
    /* the runtime restarts: the plugin comes back */
    close(fd);
    rv_mux_in_free(&in);
    for (int i = 0; i < 40 && rv_nri_record_read(&cfg, &reg, &rerr) != RV_NRI_REG_NONE; i++)
        usleep(50000);
    ok(rv_nri_record_read(&cfg, &reg, &rerr) == RV_NRI_REG_NONE, "the runtime went away: the record is removed");
    fd = accept_register(lfd, &in);
    ok(fd >= 0, "after the runtime closed the connection, the plugin registers again");
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0, "and is configured again");
    if (resp)
        ttrpc__response__free_unpacked(resp, NULL);
    /* garbage on the trunk: the plugin drops the connection and comes back */
    uint8_t bad[] = { 0, 0, 0, 0, 0, 0, 0, 1, 'x' };
    ok(write(fd, bad, sizeof(bad)) == sizeof(bad), "a frame for connection 0 sent");
    close(fd);
    rv_mux_in_free(&in);
    fd = accept_register(lfd, &in);
    ok(fd >= 0, "after a broken stream, the plugin registers again");
    ok(runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) == 0, "configured again");
    for (int i = 0; i < 40 && rv_nri_record_read(&cfg, &reg, &rerr) != RV_NRI_REG_LIVE; i++)
        usleep(50000);
    ok(rv_nri_record_read(&cfg, &reg, &rerr) == RV_NRI_REG_LIVE, "…and the record is back");
    if (resp)
        ttrpc__response__free_unpacked(resp, NULL);
    int status = 0;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
       rv_nri_record_read(&cfg, &reg, &rerr) == RV_NRI_REG_NONE,
       "SIGTERM: the plugin removes its record and exits 0 (status %d)", status);
    close(fd);
    rv_mux_in_free(&in);
    close(lfd);
}

/* A record whose process is gone (a plugin killed with SIGKILL), one that
 * is not a record, and the socket probe. */
static void test_record_probe(void)
{
    struct rv_nri_registration reg;
    struct rv_error err;
    char why[256], path[512];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char *text = NULL;   /* what the record holds (rv_nri_record_write) */

    pid_t pid = fork();
    if (pid == 0)
        _exit(rv_nri_record_write(&cfg, "/x/nri.sock", "containerd v2", -1, 0, &text, &err) < 0);
    int status;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a child wrote a record and exited");
    ok(rv_nri_record_read(&cfg, &reg, &err) == RV_NRI_REG_STALE && reg.pid == pid &&
       strcmp(reg.socket, "/x/nri.sock") == 0, "its process is gone: the record is stale, its fields read");
    ok(rv_nri_record_write(&cfg, "/x/nri.sock", "containerd v2", -1, 0, &text, &err) == 0 &&
       rv_nri_record_read(&cfg, &reg, &err) == RV_NRI_REG_LIVE && reg.pid == getpid(), "our own record: live");
    free(text);
    /* the same pid with another start time: a reused pid is not the plugin */
    rv_nri_record_path(&cfg, path, sizeof(path));
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "{\"pid\": %d, \"start\": 1, \"socket\": \"/s\", \"runtime\": \"r\"}", (int)getpid());
        fclose(f);
    }
    ok(rv_nri_record_read(&cfg, &reg, &err) == RV_NRI_REG_STALE, "a live pid with another start time: stale");
    put_file("state/" RV_NRI_RECORD, "{\"pid\": \"x\"}");
    ok(rv_nri_record_read(&cfg, &reg, &err) == -1 && strstr(err.msg, "not a registration record"),
       "a file that is no record: an error that says so (%s)", err.msg);
    unlink(path);

    snprintf(path, sizeof(path), "%s/none.sock", tmp);
    ok(rv_nri_socket_probe(path, 100, why, sizeof(why)) == 0 && strcmp(why, "no such socket") == 0,
       "probe: no socket (%s)", why);
    snprintf(path, sizeof(path), "%s/online", tmp);
    ok(rv_nri_socket_probe(path, 100, why, sizeof(why)) == 0 && strcmp(why, "not a socket") == 0,
       "probe: a regular file (%s)", why);
    snprintf(path, sizeof(path), "%s/probe.sock", tmp);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ok(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "a socket bound, not listening");
    ok(rv_nri_socket_probe(path, 100, why, sizeof(why)) == 0 && strstr(why, "connection refused"),
       "probe: nothing listens (%s)", why);
    ok(listen(fd, 4) == 0 && rv_nri_socket_probe(path, 100, why, sizeof(why)) == 1,
       "probe: listening: accepts");
    close(fd);
}

/* RESVIEW_NRI_SEEDS=DIR: write fuzz_nri's seeds (tests/fuzz/corpus/nri/)
 * from these fixtures. */
static void write_seed(const char *dir, const char *name, uint8_t mode, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fputc(mode, f);
    if (mode == 0)
        fputc(63, f);
    fwrite(p, 1, n, f);
    fclose(f);
}

static void seeds(const char *dir)
{
    struct fixture f;
    struct rv_bytes out = { 0 };
    struct rv_error err;
    uint8_t buf[16384];
    size_t len;

    fixture(&f);
    annotate(&f, "resview.io/gomaxprocs", "false");
    annotate_pod(&f, "resview.io/lxcfs", "false");
    write_seed(dir, "create-payload", 1, buf, protobuf_c_message_pack(&f.req.base, buf));
    /* two Synchronize messages (fuzz_nri's mode 3: cut at 0xff): the
     * fixture's pod and container with its variables, more; then the last */
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
    nri_pod *podp = &f.pod;
    nri_container *cp = &f.c;
    f.c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
    f.c.pid = 1;
    sync.pods = &podp;
    sync.n_pods = 1;
    sync.containers = &cp;
    sync.n_containers = 1;
    sync.more = 1;
    size_t n1 = protobuf_c_message_pack(&sync.base, buf);
    buf[n1++] = 0xff;
    sync.n_pods = 0;
    sync.more = 0;
    n1 += protobuf_c_message_pack(&sync.base, buf + n1);
    write_seed(dir, "sync-payloads", 3, buf, n1);
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    conf.runtime_name = "containerd";
    uint8_t *req = call(RV_NRI_SERVICE_PLUGIN, "Configure", &conf.base, &len);
    rv_mux_put(&out, RV_MUX_PLUGIN, 1, RV_TTRPC_REQUEST, 1, req, len, &err);
    free(req);
    fixture(&f);
    req = call(RV_NRI_SERVICE_PLUGIN, "CreateContainer", &f.req.base, &len);
    rv_mux_put(&out, RV_MUX_PLUGIN, 3, RV_TTRPC_REQUEST, 1, req, len, &err);
    free(req);
    req = state_call(NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER, "c0ffee", 4242, &len);
    rv_mux_put(&out, RV_MUX_PLUGIN, 5, RV_TTRPC_REQUEST, 1, req, len, &err);
    free(req);
    Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
    len = ttrpc__response__pack(&resp, buf);
    rv_mux_put(&out, RV_MUX_RUNTIME, 1, RV_TTRPC_RESPONSE, 0, buf, len, &err);
    write_seed(dir, "session", 0, out.p, out.len);
    rv_bytes_free(&out);
}

/* RESVIEW_NRI_BENCH="SOCKET ROUNDS" (tests/bench.d/nri.sh): the runtime's
 * side for a plugin started on SOCKET (`resview nri`, as deployed): register,
 * configure, then ROUNDS CreateContainer calls, each a new container; prints
 * the time from sending each call to its whole answer (what a container's
 * creation waits for the plugin), median, 90th and 99th percentiles, maximum. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The worst requests (huge_vars, huge_gpus), rounds times, each timed from
 * its first byte sent (call_ms): each answer must carry the variables
 * (GOMAXPROCS; with GPU names, 256 GPUs counted). */
static int bench_huge(int fd, struct rv_mux_in *in, bool gpus, int rounds)
{
    double *ms = calloc((size_t)rounds, sizeof(*ms));
    int right = 0;
    for (int i = 0; i < rounds && ms; i++) {
        struct fixture f;
        struct huge h;
        Ttrpc__Response *resp = NULL;
        fixture(&f);
        if (gpus)
            huge_gpus(&f, &h, "");
        else
            huge_vars(&f, &h, NULL, 0);
        int r = runtime_call(fd, in, 100001 + 2 * (uint32_t)i + (gpus ? 1000 : 0), "CreateContainer",
                             &f.req.base, &resp);
        huge_free(&h);
        if (r < 0)
            return 1;
        nri_create_resp *cr = nri__pkg__api__v1alpha1__create_container_response__unpack(
            NULL, resp->payload.len, resp->payload.data);
        right += env_of(cr, "GOMAXPROCS") && (!gpus || (env_of(cr, "SLURM_GPUS_ON_NODE") &&
                                                        strcmp(env_of(cr, "SLURM_GPUS_ON_NODE"), "256") == 0));
        if (cr)
            nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
        ttrpc__response__free_unpacked(resp, NULL);
        ms[i] = call_ms;
    }
    if (!ms)
        return 1;
    qsort(ms, (size_t)rounds, sizeof(*ms), cmp_double);
    printf("%-36s median %7.2f ms  p90 %7.2f ms  (%d rounds: %d answered right)\n",
           gpus ? "  a 4 MiB NVIDIA_VISIBLE_DEVICES:" : "  4 MiB of variables:", ms[rounds / 2],
           ms[rounds * 9 / 10], rounds, right);
    free(ms);
    return right == rounds ? 0 : 1;
}

static int bench(const char *arg)
{
    char sock[256], id[32];
    int rounds = 0, huge = 20;
    if (sscanf(arg, "%255s %d %d", sock, &rounds, &huge) < 2 || rounds < 1 || huge < 1)
        return 2;
    int lfd = listen_at(sock);
    if (lfd < 0)
        return 1;
    struct rv_mux_in in;
    alarm(120);
    int fd = accept_register(lfd, &in);
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    conf.request_timeout = 2000;
    if (fd < 0 || runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) < 0)
        return 1;
    ttrpc__response__free_unpacked(resp, NULL);
    double *us = calloc((size_t)rounds, sizeof(*us));
    int adjusted = 0, hooked = 0;
    for (int i = 0; i < rounds && us; i++) {
        struct fixture f;
        struct timespec t0, t1;
        fixture(&f);
        snprintf(id, sizeof(id), "bench%d", i);
        f.c.id = id;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (runtime_call(fd, &in, 3 + 2 * (uint32_t)i, "CreateContainer", &f.req.base, &resp) < 0)
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        nri_create_resp *cr = nri__pkg__api__v1alpha1__create_container_response__unpack(
            NULL, resp->payload.len, resp->payload.data);
        adjusted += env_of(cr, "GOMAXPROCS") != NULL;
        const Nri__Pkg__Api__V1alpha1__Hooks *h = cr && cr->adjust ? cr->adjust->hooks : NULL;
        hooked += h && h->n_prestart + h->n_create_runtime > 0;
        if (cr)
            nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
        ttrpc__response__free_unpacked(resp, NULL);
        us[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    if (!us)
        return 1;
    qsort(us, (size_t)rounds, sizeof(*us), cmp_double);
    printf("%-36s median %7.1f us  p90 %7.1f us  p99 %7.1f us  max %7.1f us  (%d rounds: %d with the variables, "
           "%d with the hook)\n", "NRI CreateContainer, answered:", us[rounds / 2], us[rounds * 9 / 10],
           us[rounds * 99 / 100], us[rounds - 1], rounds, adjusted, hooked);
    free(us);
    int ok_huge = bench_huge(fd, &in, false, huge) + bench_huge(fd, &in, true, huge);
    close(fd);
    rv_mux_in_free(&in);
    return adjusted == rounds && ok_huge == 0 ? 0 : 1;
}

/* The plugin's CPU time so far, in ns (/proc/PID/schedstat: on the CPU) */
static long long cpu_ns(pid_t pid)
{
    char path[64];
    long long ns = -1;
    snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f && fscanf(f, "%lld", &ns) != 1)
        ns = -1;
    if (f)
        fclose(f);
    return ns;
}

/* The plugin's user and system CPU so far, in ms (/proc/PID/stat, ticks) */
static void cpu_split(pid_t pid, double *user, double *sys)
{
    char path[64], buf[1024];
    unsigned long long ut = 0, st = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
    *user = (double)ut * 1000.0 / (double)sysconf(_SC_CLK_TCK);
    *sys = (double)st * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static long vm_kib(pid_t pid, const char *what)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, what, strlen(what)) == 0)
            kib = atol(line + strlen(what) + 1);
    if (f)
        fclose(f);
    return kib;
}

/* RESVIEW_NRI_SYNC_BENCH="SOCKET CONTAINERS VARIABLES PODS" (tests/bench.d/nri.sh):
 * the runtime's side of a registration on a node where CONTAINERS run in
 * PODS pods, each with VARIABLES variables of 12 bytes (`V00042=00042`),
 * Synchronize split as containerd's NRI splits it (sync_split); prints the
 * plugin's own CPU time for it (its schedstat, before Configure's answer
 * and once the last answer is in and its healing child forked), the time
 * from the first byte to the last answer, the plugin's peak RSS; then a
 * CreateContainer, which must be answered with the variables (still
 * serving). The containers' pids are beyond pid_max: the healing child finds
 * no such process, touches nothing. */
static int sync_bench(const char *arg)
{
    char sock[256];
    int nc = 120, nv = 65000, np = 12;
    if (sscanf(arg, "%255s %d %d %d", sock, &nc, &nv, &np) < 1 || nc < 1 || nv < 0 || np < 1)
        return 2;
    int lfd = listen_at(sock);
    if (lfd < 0)
        return 1;
    alarm(300);
    struct rv_mux_in in;
    int fd = accept_register(lfd, &in);
    struct ucred peer;
    socklen_t pl = sizeof(peer);
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &pl) < 0)
        return 1;
    long pid_max = 4194304;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
    if (f && fscanf(f, "%ld", &pid_max) != 1)
        pid_max = 4194304;
    if (f)
        fclose(f);
    char **env = calloc((size_t)nv + 1, sizeof(*env)), *pool = malloc((size_t)nv * 13 + 1);
    nri_pod *pods = calloc((size_t)np, sizeof(*pods)), **podp = calloc((size_t)np, sizeof(*podp));
    nri_container *cs = calloc((size_t)nc, sizeof(*cs)), **cp = calloc((size_t)nc, sizeof(*cp));
    Nri__Pkg__Api__V1alpha1__LinuxContainer *lin = calloc((size_t)nc, sizeof(*lin));
    char (*ids)[32] = calloc((size_t)(nc + np), sizeof(*ids));
    if (!env || !pool || !pods || !podp || !cs || !cp || !lin || !ids)
        return 1;
    for (int i = 0; i < nv; i++) {
        env[i] = pool + (size_t)i * 13;
        snprintf(env[i], 13, "V%05d=%05d", i % 100000, i % 100000);
    }
    for (int i = 0; i < np; i++) {
        nri__pkg__api__v1alpha1__pod_sandbox__init(&pods[i]);
        snprintf(ids[nc + i], sizeof(ids[0]), "pod%d", i);
        pods[i].id = ids[nc + i];
        pods[i].runtime_handler = "runc";
        podp[i] = &pods[i];
    }
    for (int i = 0; i < nc; i++) {
        nri__pkg__api__v1alpha1__container__init(&cs[i]);
        nri__pkg__api__v1alpha1__linux_container__init(&lin[i]);
        snprintf(ids[i], sizeof(ids[0]), "sync%04d", i);
        cs[i].id = ids[i];
        cs[i].pod_sandbox_id = ids[nc + i % np];
        cs[i].state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
        cs[i].pid = (uint32_t)(pid_max + 1 + i);
        cs[i].env = env;
        cs[i].n_env = (size_t)nv;
        cs[i].linux = &lin[i];
        lin[i].cgroups_path = "/kubepods/burstable/podabc/x";
        cp[i] = &cs[i];
    }
    Ttrpc__Response *resp = NULL;
    Nri__Pkg__Api__V1alpha1__ConfigureRequest conf = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    conf.request_timeout = 2000;
    conf.runtime_name = "bench";
    long long cpu0 = cpu_ns(peer.pid);
    double u0, s0, u1, s1;
    cpu_split(peer.pid, &u0, &s0);
    if (runtime_call(fd, &in, 1, "Configure", &conf.base, &resp) < 0)
        return 1;
    ttrpc__response__free_unpacked(resp, NULL);
    uint32_t stream = 3;
    double ms;
    size_t bytes;
    int msgs = sync_split(fd, &in, &stream, podp, (size_t)np, cp, (size_t)nc, &ms, &bytes);
    struct timespec settle = { 0, 300 * 1000000L };
    nanosleep(&settle, NULL);   /* the fork of the healing child counted too */
    long long cpu1 = cpu_ns(peer.pid);
    cpu_split(peer.pid, &u1, &s1);
    long hwm = vm_kib(peer.pid, "VmHWM:");
    struct fixture fx;
    fixture(&fx);
    int served = 0;
    if (msgs > 0 && runtime_call(fd, &in, stream, "CreateContainer", &fx.req.base, &resp) == 0) {
        nri_create_resp *cr = nri__pkg__api__v1alpha1__create_container_response__unpack(
            NULL, resp->payload.len, resp->payload.data);
        served = env_of(cr, "GOMAXPROCS") != NULL;
        if (cr)
            nri__pkg__api__v1alpha1__create_container_response__free_unpacked(cr, NULL);
        ttrpc__response__free_unpacked(resp, NULL);
    }
    printf("%-36s %d running containers in %d pods, %d variables each: %.1f MiB in %d messages (split as "
           "containerd's NRI)\n", "NRI Synchronize:", nc, np, nv, (double)bytes / (1 << 20), msgs);
    printf("%-36s plugin CPU %.1f ms (Configure included; in ticks: user %.0f ms, system %.0f ms); all answered "
           "in %.1f ms from the first byte sent; plugin peak RSS %ld KiB; then a CreateContainer %s\n", "",
           (double)(cpu1 - cpu0) / 1e6, u1 - u0, s1 - s0, ms, hwm,
           served ? "answered with the variables" : "NOT answered right");
    free(env);
    free(pool);
    free(pods);
    free(podp);
    free(cs);
    free(cp);
    free(lin);
    free(ids);
    close(fd);
    rv_mux_in_free(&in);
    close(lfd);
    return msgs > 0 && served && cpu0 >= 0 ? 0 : 1;
}

int main(void)
{
    if (getenv("RESVIEW_NRI_SYNC_BENCH"))
        return sync_bench(getenv("RESVIEW_NRI_SYNC_BENCH"));
    if (getenv("RESVIEW_NRI_BENCH"))
        return bench(getenv("RESVIEW_NRI_BENCH"));
    if (getenv("RESVIEW_NRI_SEEDS")) {
        rv_config_defaults(&cfg);
        seeds(getenv("RESVIEW_NRI_SEEDS"));
        return 0;
    }
    if (!mkdtemp(tmp))
        return 1;
    /* the plugin's registrations closed before a Synchronize: again at once */
    rv_nri_sync_backoff_ms = 100;
    rv_config_defaults(&cfg);
    strcpy(cfg.hook_path, "/usr/local/bin/resview-hook");
    strcpy(cfg.log_file, "/dev/null");
    strcpy(cfg.hook_stage, "prestart");
    snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", tmp);
    rv_host_defaults(&host);
    snprintf(host.cgroup_root, sizeof(host.cgroup_root), "%s/cg", tmp);
    snprintf(host.cpu_online, sizeof(host.cpu_online), "%s/online", tmp);
    put_file("online", "0-7\n");
    put_file("cg/cgroup.controllers", "cpuset cpu memory\n");
    put_file("cg/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabc.slice/cpu.max", "200000 100000\n");
    put_file("cg/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabc.slice/memory.max", "1073741824\n");
    put_file("cg/kubepods/burstable/podabc/cpu.max", "max 100000\n");
    rv_log_init("nri", &cfg);

    test_wire();
    test_calls();
    test_sync_stream();
    test_tenant_sized();
    test_required_handlers();
    test_views_at_start();
    test_would_serve();
    test_socket();
    test_record_probe();

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        printf("# cannot remove %s\n", tmp);
    return unit_done();
}
