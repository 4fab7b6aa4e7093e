/* fuzz_nri - the NRI plugin's input (src/nri/): the first byte picks
 *   even: a socket's byte stream, cut into reads of 1 + byte % 64 bytes
 *         (the second byte), through NRI's multiplexer and ttrpc's framing
 *         (nri_wire.c), every message of connection 1 answered
 *         (rv_nri_handle; a Synchronize not come whole read as it comes,
 *         as the plugin does: rv_nri_stream_start, rv_nri_stream_answer),
 *         every one of connection 2 read as the answer to RegisterPlugin;
 *   1 mod 4: the rest as a CreateContainer request's payload (the
 *         adjustment, nri_adjust.c, on the spec made of it);
 *   3 mod 4: the rest as Synchronize messages' payloads, cut where the
 *         byte 0xff is (nri_sync.c's reader on the wire bytes), each also
 *         read as it comes, in pieces of 1 + (second byte) % 64 bytes, by
 *         a second plugin: the same kept after each (rv_nri_sync_digest),
 *         the same "more"; then the decision on what they named
 *         (rv_nri_sync_decide).
 * Invariants: an answer always comes, is a ttrpc Response whose status is
 * OK, INVALID_ARGUMENT or UNIMPLEMENTED; a Synchronize answer is OK, its
 * "more" the message's when it is a SynchronizeRequest, no more when it
 * is not; the decision keeps no more containers than were named (of
 * messages protobuf-c reads), never more than 4096; a CreateContainer answer adjusts
 * only env (names of the env.vars table, never a Slurm job's own) and
 * hooks (one, resview-hook's, or none where the views come at its start); a
 * StartContainer gives views only to a container a CreateContainer named
 * (with a pid); nothing reads beyond the input (ASan). */
#include "fuzz.h"
#include "nri/nri_msg.h"
#include "resview/log.h"

static struct rv_config cfg;
static struct rv_host host;
static struct rv_nri_plugin plugin, streamed;

/* The views at StartContainer (nri.h): watch always holds the files here;
 * a container given them is one a CreateContainer named, with a real pid. */
static bool holds(const struct rv_nri_plugin *p)
{
    (void)p;
    return true;
}

static int started(const struct rv_nri_plugin *p, const char *id, pid_t pid)
{
    (void)p;
    FUZZ_CHECK(id[0] && rv_safe_name(id) && strlen(id) < RV_NRI_START_ID, "started: id `%s`", id);
    FUZZ_CHECK(pid > 0, "started: pid %d", (int)pid);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    rv_config_defaults(&cfg);
    strcpy(cfg.hook_path, "/usr/local/bin/resview-hook");
    strcpy(cfg.log_file, "/dev/null");
    rv_host_defaults(&host);
    strcpy(host.cgroup_root, "/nonexistent");
    strcpy(host.cpu_online, "/nonexistent");
    rv_log_init("nri", &cfg);
    plugin.cfg = streamed.cfg = &cfg;
    plugin.host = streamed.host = &host;
    plugin.start_views_ok = holds;
    plugin.start_views = started;
    return 0;
}

static bool known_var(const char *name)
{
    for (int i = 0; i < cfg.n_vars; i++)
        if (strcmp(cfg.vars[i].name, name) == 0)
            return true;
    return false;
}

static void check_answer(const char *method, const uint8_t *out, size_t n)
{
    Ttrpc__Response *r = ttrpc__response__unpack(NULL, n, out);
    FUZZ_CHECK(r, "the answer is no ttrpc Response");
    int code = r->status ? r->status->code : 0;
    FUZZ_CHECK(code == 0 || code == 3 || code == 12, "status %d", code);
    if (code == 0 && method && strcmp(method, "CreateContainer") == 0) {
        nri_create_resp *c = nri__pkg__api__v1alpha1__create_container_response__unpack(NULL, r->payload.len,
                                                                                          r->payload.data);
        FUZZ_CHECK(c, "the CreateContainer answer does not unpack");
        if (c->adjust) {
            nri_adjustment *a = c->adjust;
            FUZZ_CHECK(a->n_mounts == 0 && !a->linux && a->n_rlimits == 0 && a->n_annotations == 0 &&
                       a->n_cdi_devices == 0, "an adjustment beyond env and hooks");
            for (size_t i = 0; i < a->n_env; i++)
                FUZZ_CHECK(known_var(a->env[i]->key) && strcmp(a->env[i]->key, "SLURM_JOB_ID") != 0,
                           "variable %s", a->env[i]->key);
            if (a->hooks)
                FUZZ_CHECK(a->hooks->n_prestart == 1 && strcmp(a->hooks->prestart[0]->path, cfg.hook_path) == 0,
                           "a hook that is not ours");
        }
        nri__pkg__api__v1alpha1__create_container_response__free_unpacked(c, NULL);
    }
    ttrpc__response__free_unpacked(r, NULL);
}

static void handle(const uint8_t *req, size_t len)
{
    uint8_t *out = NULL;
    size_t n = 0;
    Ttrpc__Request *r = ttrpc__request__unpack(NULL, len, req);
    char method[32] = "";

    if (r && r->method)
        snprintf(method, sizeof(method), "%s", r->method);
    if (r)
        ttrpc__request__free_unpacked(r, NULL);
    FUZZ_CHECK(rv_nri_handle(&plugin, req, len, &out, &n) == 0, "no answer");
    check_answer(method, out, n);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rv_error err;

    if (size < 2)
        return 0;
    if ((data[0] & 3) == 3) {
        size_t named = 0;
        bool all_valid = true;
        for (size_t at = 1; at <= size;) {
            const uint8_t *cut = memchr(data + at, 0xff, size - at);
            size_t n = cut ? (size_t)(cut - (data + at)) : size - at;
            Ttrpc__Request req = TTRPC__REQUEST__INIT;
            req.service = (char *)RV_NRI_SERVICE_PLUGIN;
            req.method = (char *)"Synchronize";
            req.payload.data = (uint8_t *)data + at;
            req.payload.len = n;
            size_t len = ttrpc__request__get_packed_size(&req);
            uint8_t *buf = malloc(len), *out = NULL;
            size_t out_len = 0;
            FUZZ_CHECK(buf, "malloc");
            ttrpc__request__pack(&req, buf);
            FUZZ_CHECK(rv_nri_handle(&plugin, buf, len, &out, &out_len) == 0, "no answer to Synchronize");
            bool more = false;
            size_t plen, step = 1 + data[1 % size] % 64;
            FUZZ_CHECK(rv_nri_sync_stream_begin(&streamed, len) == 0, "begin");
            for (size_t i = 0; i < len; i += step)
                rv_nri_sync_stream(&streamed, buf + i, len - i < step ? len - i : step);
            FUZZ_CHECK(rv_nri_sync_stream_end(&streamed, &more, &plen) > -3 && plen == n, "read as it came: no "
                       "Synchronize");
            FUZZ_CHECK(rv_nri_sync_digest(&streamed) == rv_nri_sync_digest(&plugin), "read as it came in "
                       "pieces of %zu: not the same kept", step);
            free(buf);
            Ttrpc__Response *r = ttrpc__response__unpack(NULL, out_len, out);
            FUZZ_CHECK(r && (!r->status || r->status->code == 0), "Synchronize not answered OK");
            Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr =
                nri__pkg__api__v1alpha1__synchronize_response__unpack(NULL, r->payload.len, r->payload.data);
            Nri__Pkg__Api__V1alpha1__SynchronizeRequest *sq =
                nri__pkg__api__v1alpha1__synchronize_request__unpack(NULL, n, data + at);
            FUZZ_CHECK(sr, "the answer is no SynchronizeResponse");
            FUZZ_CHECK(sr->more == more, "more %d, read as it came %d", sr->more, more);
            FUZZ_CHECK(!sq || sr->more == sq->more, "more %d for a message's %d", sr->more, sq ? sq->more : -1);
            all_valid &= sq != NULL;
            if (sq) {
                named += sq->n_containers;
                nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(sq, NULL);
            }
            nri__pkg__api__v1alpha1__synchronize_response__free_unpacked(sr, NULL);
            ttrpc__response__free_unpacked(r, NULL);
            free(out);
            at += n + 1;
        }
        rv_nri_sync_end(&plugin);
        size_t kept = rv_nri_sync_decide(&plugin);
        FUZZ_CHECK(kept <= 4096 && (!all_valid || kept <= named), "%zu containers kept of %zu named", kept, named);
        rv_nri_sync_free(&plugin);
        rv_nri_sync_free(&streamed);
        return 0;
    }
    if (data[0] & 1) {
        Ttrpc__Request req = TTRPC__REQUEST__INIT;
        req.service = (char *)RV_NRI_SERVICE_PLUGIN;
        req.method = (char *)"CreateContainer";
        req.payload.data = (uint8_t *)data + 1;
        req.payload.len = size - 1;
        size_t n = ttrpc__request__get_packed_size(&req);
        uint8_t *buf = malloc(n);
        FUZZ_CHECK(buf, "malloc");
        ttrpc__request__pack(&req, buf);
        handle(buf, n);
        free(buf);
        return 0;
    }
    struct rv_mux_in in = { 0 };
    size_t step = 1 + data[1] % 64;
    for (size_t at = 2; at < size; at += step) {
        size_t n = size - at < step ? size - at : step;
        if (rv_mux_feed(&in, data + at, n, &err) < 0)
            break;
        struct rv_ttrpc_msg m;
        int r;
        uint32_t stream;
        size_t have;
        if (rv_ttrpc_diverted(&in, &stream)) {
            uint8_t *out = NULL;
            size_t out_len = 0;
            FUZZ_CHECK(rv_nri_stream_answer(&plugin, &out, &out_len) == 0, "no answer to a streamed Synchronize");
            check_answer("Synchronize", out, out_len);
            free(out);
        }
        while ((r = rv_ttrpc_next(&in, RV_MUX_PLUGIN, &m, &err)) == 1) {
            FUZZ_CHECK(m.len <= RV_TTRPC_MAX, "a message of %u bytes", m.len);
            if (m.type == RV_TTRPC_REQUEST)
                handle(m.data, m.len);
        }
        if (r < 0)
            break;
        if (rv_ttrpc_partial(&in, RV_MUX_PLUGIN, &m, &have) && m.type == RV_TTRPC_REQUEST &&
            rv_nri_stream_start(&plugin, m.data, have, m.len))
            rv_ttrpc_divert(&in, RV_MUX_PLUGIN, rv_nri_sync_stream, &plugin);
        while ((r = rv_ttrpc_next(&in, RV_MUX_RUNTIME, &m, &err)) == 1)
            (void)rv_nri_register_result(m.data, m.len, &err);
        if (r < 0)
            break;
    }
    rv_mux_in_free(&in);
    rv_nri_sync_free(&plugin);
    return 0;
}
