/* cri.h - the questions the node agent asks a container runtime's CRI
 * socket (Kubernetes runtime.v1 over gRPC): does it answer (Version),
 * which configuration is it running (Status, verbose: the "config" JSON that
 * `crictl info` shows), and which pods run with a runtime handler
 * (ListPodSandbox). A minimal gRPC client over HTTP/2 on a unix socket:
 * one stream, literal headers, no Huffman, no TLS - what a local CRI needs.
 * Every call has a deadline. */
#ifndef RESVIEW_CRI_H
#define RESVIEW_CRI_H

#include <jansson.h>
#include <stddef.h>
#include "resview/util.h"

/* Version: runtime name and version ("containerd", "1.6.20~ds1"). */
int rv_cri_version(const char *socket, int timeout_ms, char *name, size_t name_size, char *version,
                   size_t version_size, struct rv_error *err);
/* Status(verbose): the runtime's effective configuration, parsed (*config
 * owned by the caller). */
int rv_cri_config(const char *socket, int timeout_ms, json_t **config, struct rv_error *err);

/* ListPodSandbox: how many pods are ready (SANDBOX_READY) with this runtime
 * handler ("": those without one, containerd's default). */
int rv_cri_ready_pods(const char *socket, int timeout_ms, const char *handler, unsigned *count,
                      struct rv_error *err);
/* The same count from a ListPodSandboxResponse; -1 malformed. For tests. */
int rv_cri_count_pods(const char *msg, size_t len, const char *handler, unsigned *count);

/* One unary call: request message in, response message out (allocated).
 * method: "/runtime.v1.RuntimeService/Version". For tests. */
int rv_grpc_call(const char *socket, const char *method, const void *req, size_t req_len,
                 char **resp, size_t *resp_len, int timeout_ms, struct rv_error *err);

/* Protocol buffers: the string field `field` of msg (first occurrence; for a
 * repeated/map field, call with *pos to iterate). Returns 1 found, 0 not, -1 malformed. */
int rv_pb_next_bytes(const char *msg, size_t len, unsigned field, size_t *pos, const char **val,
                     size_t *val_len);

/* A running container as the CRI lists it (ListContainers RUNNING,
 * ContainerStatus verbose: the pid of its `info`, ListPodSandbox: its pod's
 * runtime handler) with the resview.io annotations of it and of its pod
 * (key, value, ..., NULL; nothing else of the tenant's kept). */
#define RV_CRI_ANN 16
struct rv_cri_running {
    char id[128], pod[128], handler[128];
    int pid;
    char *ann[2 * RV_CRI_ANN + 1], *pod_ann[2 * RV_CRI_ANN + 1];
    char *env[RV_CRI_ANN + 1];   /* its RESVIEW_* variables ("K=V"): the opt-outs a container may say so */
};
/* All of them (*out malloc'd, rv_cri_running_free), every call within
 * timeout_ms in all. */
int rv_cri_running(const char *socket, int timeout_ms, struct rv_cri_running **out, size_t *n,
                   struct rv_error *err);
void rv_cri_running_free(struct rv_cri_running *c, size_t n);
/* The same from the messages (tests): ListContainersResponse, then each
 * container's ContainerStatusResponse by rv_cri_take_status, then the
 * ListPodSandboxResponse. -1 malformed. */
int rv_cri_take_containers(const char *msg, size_t len, struct rv_cri_running **out, size_t *n);
int rv_cri_take_status(const char *msg, size_t len, struct rv_cri_running *c);
int rv_cri_take_pods(const char *msg, size_t len, struct rv_cri_running *c, size_t n);

#endif
