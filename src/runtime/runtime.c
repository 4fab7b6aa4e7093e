/* runtime.c - resview-runtime up to the exec of the next runtime. */
#define _GNU_SOURCE
#include "resview/runtime.h"
#include "resview/args.h"
#include "resview/broker.h"
#include "resview/chain.h"
#include "resview/fuse.h"
#include "resview/log.h"
#include "shim.h"
#include "resview/state.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

static volatile sig_atomic_t delete_child;
static void forward(int sig)
{
    if (delete_child > 0)
        kill(delete_child, sig);
}

/* The records of a deleted container, and its broker's counts. */
static void forget(const struct rv_config *cfg, const char *id)
{
    struct rv_error err;

    rv_broker_report(cfg, id);
    if (rv_state_remove(cfg, id, &err) < 0)
        rv_log(RV_WARN, "delete: records not removed: %s", err.msg);
}

/* `delete` of a container with records (the one place delete is handled):
 * the records (variables for exec sessions, views for repair) must outlive a
 * delete the runtime refuses (without --force, a running container). So,
 * unless its init has ended (the runtime then deletes it: the records go
 * first, and the runtime is exec'd), the runtime runs as our child here, and
 * the records go once it succeeded. The child is spawned (vfork and exec:
 * no copy of our page tables, no
 * copy-on-write faults); this process ends with the runtime's status and
 * never returns, unless the spawn failed: then the caller execs the runtime
 * itself and the records are left for `resview repair`. */
static void delete_then_forget(const struct rv_config *cfg, const char *id, const char *next,
                               char *argv[])
{
    static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 };
    struct sigaction sa;
    pid_t pid;
    int ws, e;

    fflush(NULL);
    argv[0] = (char *)next;
    e = posix_spawn(&pid, next, NULL, NULL, argv, environ);
    if (e != 0) {
        rv_log(RV_WARN, "delete: spawn `%s`: %s; the records are left for `resview repair`",
               next, strerror(e));
        return;
    }
    delete_child = pid;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward;
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            _exit(1);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
        forget(cfg, id);
    if (WIFSIGNALED(ws)) {
        signal(WTERMSIG(ws), SIG_DFL);
        raise(WTERMSIG(ws));
        _exit(128 + WTERMSIG(ws));
    }
    _exit(WEXITSTATUS(ws));
}

/* A GPU node (gpu.runtime, chain.h): NVIDIA's runtime next for a container
 * that asks for a GPU. */
static void gpu_runtime(const struct rv_config *cfg, const struct rv_args *a, char *next, size_t size)
{
    char why[256], file[PATH_MAX];
    const char *other = NULL;
    int r;

    if (!cfg->gpu_runtime[0])
        return;
    if (a->config && strcmp(a->config, "config.json") != 0 && realpath(a->config, file))
        other = file;
    r = rv_chain_gpu(cfg, a->bundle, other, next, size, why, sizeof(why));
    if (r > 0)
        rv_log(RV_INFO, "next runtime: `%s` (gpu.runtime), for %s", next, why);
    else if (r == 2)
        rv_log(RV_INFO, "next runtime: `%s`, not gpu.runtime: %s", next, why);
    else if (r < 0)
        rv_log(RV_WARN, "%s: the container starts through `%s`, without NVIDIA's runtime", why, next);
}

/* Every subcommand but create, run, start, exec and delete is passed through: args,
 * configuration (the next runtime), the loop guard, and the exec. */
int rv_runtime_prepare(int argc, char *argv[], char *next, size_t size)
{
    struct rv_config cfg;
    struct rv_error err = { 0 };
    struct rv_args a;
    struct rv_host host;
    bool cfg_ok;

    /* runc's reading first (the log flags read alike in both); the next
     * runtime's own once it is known */
    rv_args_parse(argc, argv, RV_DIALECT_RUNC, &a);
    rv_log_init("runtime", NULL);
    if (a.log)
        rv_log_runtime_file(a.log, a.log_format && strcmp(a.log_format, "json") == 0);
    cfg_ok = rv_config_load(&cfg, &err) == 0;
    rv_log_init("runtime", &cfg);

    /* Find the next runtime first: no bundle is edited for nothing. */
    struct rv_error cerr = { 0 };
    if (rv_chain_next(&cfg, next, size, &cerr) < 0) {
        if (!cfg_ok)
            rv_log(RV_ERROR, "%s", err.msg);
        rv_log(RV_ERROR, "%s", cerr.msg);
        return 1;
    }
    if (rv_args_dialect(next) != RV_DIALECT_RUNC)
        rv_args_parse(argc, argv, rv_args_dialect(next), &a);
    if (a.id)
        rv_log_set_id(a.id);
    if (!cfg_ok) {
        /* Without a readable configuration nothing may be edited (fuse.allowed
         * could be false), but other subcommands must keep working. */
        if (rv_args_edits_bundle(&a)) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
        rv_log(RV_WARN, "%s; passing `%s` through with default runtimes", err.msg,
               a.sub ? a.sub : "");
    } else if (rv_args_edits_bundle(&a)) {
        rv_log_config_warnings(&cfg);
    }
    if (rv_args_edits_bundle(&a)) {
        const char *base = strrchr(argv[0], '/');
        gpu_runtime(&cfg, &a, next, size);
        rv_host_defaults(&host);
        host.cg_rule = rv_cg_rule_of(next);
        if (rv_shim_create(&cfg, &host, &a, next, strcmp(base ? base + 1 : argv[0],
                                                         RV_FUSE_RUNTIME_NAME) == 0, &err) < 0) {
            rv_log(RV_ERROR, "%s", err.msg);
            return 1;
        }
    } else if (a.sub && (strcmp(a.sub, "create") == 0 || strcmp(a.sub, "run") == 0)) {
        rv_log(RV_WARN, "%s: `%s` would not run this command line as resview reads it; the "
               "bundle is left as it is", a.sub, next);
    } else if (a.sub && strcmp(a.sub, "start") == 0 && cfg_ok) {
        rv_shim_start(&cfg, &a);
    } else if (a.sub && strcmp(a.sub, "exec") == 0) {
        if (rv_shim_exec(&cfg, &a, &err) < 0)
            rv_log(RV_WARN, "exec: variables not added: %s", err.msg);
        if (rv_broker_revive(&cfg, a.id, &err) < 0)
            rv_log(RV_WARN, "exec: FUSE broker not started again: %s", err.msg);
    }
    if (rv_chain_mark(next, &err) < 0) {
        rv_log(RV_ERROR, "%s", err.msg);
        return 1;
    }
    if (a.sub && strcmp(a.sub, "delete") == 0 && a.id && rv_state_exists(&cfg, a.id)) {
        if (rv_shim_stopped(&a, next))
            forget(&cfg, a.id);
        else
            delete_then_forget(&cfg, a.id, next, argv);
    }
    return 0;
}
