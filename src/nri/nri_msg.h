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
};

/* The spec that the shim would see for this container, as far as the edits
 * read it: annotations (the pod's resview.io/ ones, then the container's),
 * process.env, mounts, linux.cgroupsPath (or from the pod's cgroup parent),
 * linux.resources (cpu quota, period, cpus; memory limit), linux.devices. */
json_t *rv_nri_spec(const nri_pod *pod, const nri_container *c, struct rv_error *err);
/* The shim's edits of that spec, as an adjustment: the variables it adds,
 * our hook entry. Returns 0, -1 (err: the edit failed), -2 (err: the
 * container's resview.io request is invalid). rv_nri_adjustment_free after. */
int rv_nri_adjust(struct rv_nri_plugin *p, const nri_pod *pod, const nri_container *c,
                  struct rv_nri_adjustment *out, struct rv_error *err);
void rv_nri_adjustment_free(struct rv_nri_adjustment *a);

#endif
