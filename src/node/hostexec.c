/* hostexec.c - run a command as a process of the host (hostexec.h). */
#define _GNU_SOURCE
#include "hostexec.h"
#include "resview/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define HOST_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

int rv_cgroup_dirs(const char *text, bool hybrid, char **out, struct rv_error *err)
{
    cleanup_free char *res = NULL;
    size_t used = 0;
    struct rv_cgroup_line l;

    *out = NULL;
    while (rv_cgroup_next(&text, &l)) {
        char dir[PATH_MAX];
        if (!l.valid || !l.path_len || l.path[0] != '/')
            return rv_fail(err, EINVAL, "cgroups: malformed line `%.*s`", (int)l.line_len, l.line);
        /* the root: the hierarchy's directory itself */
        int plen = l.path_len == 1 ? 0 : (int)l.path_len;
        int n;
        if (rv_cgroup_line_is(&l, NULL))
            n = rv_snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s%.*s", hybrid ? "/unified" : "",
                            plen, l.path);
        else if (l.ctrls_len >= 5 && strncmp(l.ctrls, "name=", 5) == 0)
            n = rv_snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%.*s%.*s", (int)l.ctrls_len - 5,
                            l.ctrls + 5, plen, l.path);
        else
            n = rv_snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%.*s%.*s", (int)l.ctrls_len,
                            l.ctrls, plen, l.path);
        if (n < 0)
            return rv_fail(err, ENAMETOOLONG, "cgroups: `%.*s`", (int)l.path_len, l.path);
        char *nr = realloc(res, used + (size_t)n + 2);
        if (!nr)
            return rv_fail(err, ENOMEM, "cgroups");
        res = nr;
        memcpy(res + used, dir, (size_t)n);
        used += (size_t)n;
        res[used++] = '\n';
        res[used] = '\0';
    }
    if (!res && !(res = strdup("")))
        return rv_fail(err, ENOMEM, "cgroups");
    *out = move_ptr(res);
    return 0;
}

/* In the child: enter init's namespaces and cgroups. Messages to stderr. */
static int enter_host(pid_t init)
{
    static const struct { const char *name; int type; } nss[] = {
        { "cgroup", CLONE_NEWCGROUP }, { "ipc", CLONE_NEWIPC }, { "uts", CLONE_NEWUTS },
        { "net", CLONE_NEWNET }, { "mnt", CLONE_NEWNS },
    };
    int fds[sizeof(nss) / sizeof(nss[0])];
    char path[64], cg[8192];
    struct rv_error err;
    cleanup_free char *dirs = NULL;

    /* its root too: setns() puts us at the namespace's root, not at a chroot of init */
    snprintf(path, sizeof(path), "/proc/%d/root", (int)init);
    cleanup_close int rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        fprintf(stderr, "resview: open `%s`: %s\n", path, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)init, nss[i].name);
        fds[i] = open(path, O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0 && !(errno == ENOENT && nss[i].type == CLONE_NEWCGROUP)) {
            fprintf(stderr, "resview: open `%s`: %s\n", path, strerror(errno));
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof(nss) / sizeof(nss[0]); i++) {
        if (fds[i] >= 0 && setns(fds[i], nss[i].type) < 0) {
            fprintf(stderr, "resview: enter the %s namespace of pid %d: %s\n", nss[i].name,
                    (int)init, strerror(errno));
            return -1;
        }
        if (fds[i] >= 0)
            close(fds[i]);
    }
    if (fchdir(rootfd) < 0 || chroot(".") < 0 || chdir("/") < 0) {
        fprintf(stderr, "resview: enter the root of pid %d: %s\n", (int)init, strerror(errno));
        return -1;
    }
    /* read in init's cgroup namespace: paths from its root, not from a pod's */
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)init);
    if (rv_read_small(path, cg, sizeof(cg)) < 0) {
        fprintf(stderr, "resview: read `%s`: %s\n", path, strerror(errno));
        return -1;
    }
    if (rv_cgroup_dirs(cg, access("/sys/fs/cgroup/cgroup.controllers", F_OK) < 0, &dirs, &err) < 0) {
        fprintf(stderr, "resview: %s\n", err.msg);
        return -1;
    }
    char *save = NULL;
    for (char *d = strtok_r(dirs, "\n", &save); d; d = strtok_r(NULL, "\n", &save)) {
        char procs[PATH_MAX + 16];
        int fd;
        if (rv_snprintf(procs, sizeof(procs), "%s/cgroup.procs", d) < 0 ||
            (fd = open(procs, O_WRONLY | O_CLOEXEC)) < 0)
            continue;   /* a hierarchy not mounted on the host: nothing to leave */
        if (write(fd, "0", 1) < 0)
            fprintf(stderr, "resview: warning: move to `%s`: %s\n", d, strerror(errno));
        close(fd);
    }
    return 0;
}

pid_t rv_fork_child(struct rv_error *err)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        return rv_fail(err, errno, "fork");
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
    }
    return pid;
}

int rv_host_exec(pid_t init, char *const argv[], int timeout_ms, struct rv_error *err)
{
    int status;
    struct timespec tick = { 0, 20 * 1000 * 1000 };
    pid_t pid = rv_fork_child(err);

    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *const envp[] = { "PATH=" HOST_PATH, "LANG=C", NULL };
        if (enter_host(init) < 0)
            _exit(126);
        /* the host's PATH, looked up in the host's mount namespace */
        if (strchr(argv[0], '/')) {
            execve(argv[0], argv, envp);
        } else {
            char *save = NULL, dirs[] = HOST_PATH, exe[PATH_MAX];
            for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
                if (rv_snprintf(exe, sizeof(exe), "%s/%s", d, argv[0]) >= 0)
                    execve(exe, argv, envp);
        }
        fprintf(stderr, "resview: run `%s` on the host: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    for (long waited = 0;; waited += 20) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return rv_fail(err, errno, "wait for `%s`", argv[0]);
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return rv_fail(err, ETIMEDOUT, "`%s` on the host did not finish within %d s", argv[0],
                           timeout_ms / 1000);
        }
        nanosleep(&tick, NULL);
    }
    if (WIFSIGNALED(status))
        return rv_fail(err, 0, "`%s` on the host was killed by signal %d", argv[0], WTERMSIG(status));
    if (WEXITSTATUS(status) == 126)
        return rv_fail(err, 0, "could not enter the host's namespaces (pid %d) to run `%s` "
                       "(is the pod privileged with hostPID?)", (int)init, argv[0]);
    return WEXITSTATUS(status);
}
