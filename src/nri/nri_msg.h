/* nri_msg.h - the generated messages (build/nri/, from NRI's api.proto and
 * ttrpc.proto) under short names, and the adjustment (nri_adjust.c). */
#ifndef RESVIEW_NRI_MSG_H
#define RESVIEW_NRI_MSG_H

/* api.proto has members named linux, a macro of GNU C */
#undef linux
#include "api.pb-c.h"
#include "ttrpc.pb-c.h"
#include "resview/edit.h"
#include "resview/json.h"
#include "resview/nri.h"

#define RV_NRI_SERVICE_PLUGIN "nri.pkg.api.v1alpha1.Plugin"
#define RV_NRI_SERVICE_RUNTIME "nri.pkg.api.v1alpha1.Runtime"

typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;
typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__CreateContainerRequest nri_create_req;
typedef Nri__Pkg__Api__V1alpha1__CreateContainerResponse nri_create_resp;
typedef Nri__Pkg__Api__V1alpha1__ContainerAdjustment nri_adjustment;
typedef Nri__Pkg__Api__V1alpha1__Hooks nri_hooks;
typedef Nri__Pkg__Api__V1alpha1__Hook nri_hook;
typedef Nri__Pkg__Api__V1alpha1__KeyValue nri_kv;
typedef Nri__Pkg__Api__V1alpha1__OptionalInt nri_opt_int;

#define RV_NRI_HOOK_ARGS 8
#define RV_NRI_HOOK_ENV 4

/* What CreateContainer answers, with the storage its pointers use. */
struct rv_nri_adjustment {
    nri_adjustment adj;
    nri_hooks hooks;
    nri_hook hook, *hookp[1];
    nri_opt_int timeout;
    char *hook_args[RV_NRI_HOOK_ARGS], *hook_env[RV_NRI_HOOK_ENV];
    nri_kv kv[RV_MAX_VARS], *kvp[RV_MAX_VARS];
    char names[RV_MAX_VARS][64];
    json_t *spec;                 /* holds the strings the hook's entry points to */
    struct rv_edit_result res;
    bool views_wanted;            /* the container does not opt out of the views */
    bool views_at_start;          /* no hook: the plugin gives them at StartContainer */
};

/* The containers whose views wait for their StartContainer (at most
 * RV_NRI_STARTS; kept across reconnections): room for one more? */
#define RV_NRI_STARTS 256
#define RV_NRI_START_ID 80
bool rv_nri_starts_room(void);

/* Whether the plugin serves pods of this runtime handler ("" the runtime's
 * default): one in nri.runtime_handlers, never `resview` (its shim edits
 * those containers: the hook entry it would replace, the variables it would
 * take for the container's own). */
bool rv_nri_serves(const struct rv_config *cfg, const char *handler);
/* A CreateContainerRequest (buf, len bytes) cut down in place to what
 * rv_nri_spec and the handler check read (the pod's id, runtime handler,
 * linux and resview.io/ annotations; the container's id, mounts, linux, the
 * annotations and first variables rv_nri_spec copies), in time linear in
 * len with no allocation: its new length, or -1 when it is no protobuf
 * message of that shape. */
/* Protobuf's wire, as the cuts read it (nri_adjust.c): a varint of
 * [*p, end) (-1 when it runs off the end or past 64 bits), *p moved past it;
 * one field, *p moved past it: its key, and for a length-delimited one (wire
 * type 2) its content [*data, *data + *len), for a varint (wire type 0) its
 * value in *len (*data NULL). -1 when it is malformed (groups too:
 * protobuf-c has none). */
int rv_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
int rv_pb_next_field(const uint8_t **p, const uint8_t *end, uint64_t *key, const uint8_t **data,
                     uint64_t *len);
long rv_nri_create_trim(const struct rv_config *cfg, uint8_t *buf, size_t len);
const char *rv_nri_handler(const nri_pod *pod);
/* Synchronize's decision (nri_sync.c), which the healing child makes once
 * the last message is answered: the containers kept that resview serves,
 * each id once; their count. No system call but rv_nri_adjust's (the
 * host's cgroup files): fuzzed. */
size_t rv_nri_sync_decide(struct rv_nri_plugin *p);   /* its runtime handler, "" when none */
/* A hash of what the synchronization kept (its pods and containers as the
 * decision reads them, its counts, whether done): the tests and the fuzzer
 * compare the reading of a message whole and in pieces by it. */
uint64_t rv_nri_sync_digest(const struct rv_nri_plugin *p);

/* The spec that the shim would see for this container, as far as the edits
 * read it: annotations (the pod's resview.io/ ones, then the container's
 * that the edits read), process.env (the first variable of each name the
 * edits read, in order: what rv_env_get finds), mounts, linux.cgroupsPath
 * (or from the pod's cgroup parent), linux.resources (cpu quota, period,
 * cpus; memory limit), linux.devices. */
json_t *rv_nri_spec(const nri_pod *pod, const nri_container *c, const struct rv_config *cfg,
                    struct rv_error *err);
/* The shim's edits of that spec, as an adjustment: the variables it adds,
 * our hook entry. Returns 0, 1 (a pod of a runtime handler not served:
 * nothing to adjust), -1 (err: the edit failed), -2 (err: the container's
 * resview.io request is invalid). rv_nri_adjustment_free after. */
int rv_nri_adjust(struct rv_nri_plugin *p, const nri_pod *pod, const nri_container *c,
                  struct rv_nri_adjustment *out, struct rv_error *err);
void rv_nri_adjustment_free(struct rv_nri_adjustment *a);

#endif
