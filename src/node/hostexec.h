/* hostexec.h - run a command as a process of the host from inside a
 * privileged, hostPID pod: in the mount, UTS, IPC, network and cgroup
 * namespaces and the root directory of the host's init (pid 1, as
 * `nsenter -t 1 -m -u -i -n -C -r`), and moved into init's cgroups. The last part is what nsenter does not do
 * and what a restart needs: a daemon started from the pod's cgroup would be
 * killed with the pod (the runtime kills every process of a container's
 * cgroup when it stops). */
#ifndef RESVIEW_HOSTEXEC_H
#define RESVIEW_HOSTEXEC_H

#include <stdbool.h>
#include <sys/types.h>
#include "resview/util.h"

/* Run argv (argv[0] looked up in the host's standard PATH) as a host process
 * with a minimal environment; wait up to timeout_ms (then kill it). Returns
 * its exit status (0..255), or -1 with err when it could not be run, was
 * killed or timed out. Output goes to our stdout/stderr. */
int rv_host_exec(pid_t init, char *const argv[], int timeout_ms, struct rv_error *err);

/* fork() with stdio flushed first; the child starts with no signal blocked
 * (the node agent blocks its own and takes them synchronously). */
pid_t rv_fork_child(struct rv_error *err);

/* The cgroup directories of pid (one per hierarchy, from /proc/PID/cgroup) as
 * "/sys/fs/cgroup/<controllers>/<path>" lines ("/sys/fs/cgroup/<path>" for
 * cgroup v2, "/sys/fs/cgroup/unified/<path>" beside v1). Allocated. For tests. */
int rv_cgroup_dirs(const char *proc_cgroup_text, bool hybrid, char **out, struct rv_error *err);

#endif
