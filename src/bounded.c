/* bounded.c - run a function in a memory-sharing child with a deadline. */
#define _GNU_SOURCE
#include "resview/bounded.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

#define CHILD_STACK (256u << 10)

struct trampoline {
    int (*fn)(void *);
    void *arg;
};

void *rv_shared_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void rv_shared_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

/* valgrind cannot run a CLONE_VM child that is not a thread */
static bool fork_only(void)
{
    const char *pre = getenv("LD_PRELOAD");
    return (pre && strstr(pre, "vgpreload")) || getenv("RESVIEW_BOUNDED_FORK");
}

static int child_main(void *p)
{
    struct trampoline *t = p;
    int r = t->fn(t->arg);
    return r < 0 ? 255 : r & 0xff;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int reap(pid_t pid, int *status, struct rv_error *err)
{
    int ws;
    pid_t r;

    do
        r = waitpid(pid, &ws, __WALL);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return rv_fail(err, errno, "wait for child %d", (int)pid);
    if (WIFEXITED(ws))
        *status = WEXITSTATUS(ws);
    else
        *status = 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return 0;
}

/* Wait for pid to end by polling waitpid (kernels without CLONE_PIDFD). */
static int wait_polling(pid_t pid, int timeout_ms, int *status, struct rv_error *err)
{
    long deadline = now_ms() + timeout_ms;
    struct timespec nap = { 0, 100 * 1000 };
    int ws;

    for (;;) {
        pid_t r = waitpid(pid, &ws, __WALL | WNOHANG);
        if (r == pid) {
            *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
            return 0;
        }
        if (r < 0 && errno != EINTR)
            return rv_fail(err, errno, "wait for child %d", (int)pid);
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            reap(pid, status, NULL);
            return rv_fail(err, ETIMEDOUT, "gave up after %d ms", timeout_ms);
        }
        nanosleep(&nap, NULL);
    }
}

int rv_run_bounded(int (*fn)(void *arg), void *arg, int timeout_ms, int *status,
                   struct rv_error *err)
{
    struct trampoline t = { fn, arg };
    const int base = CLONE_VM | CLONE_FILES | SIGCHLD;
    void *stack;
    int pidfd = -1, r;
    pid_t pid;

    stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return rv_fail(err, errno, "allocate a stack");
    if (fork_only()) {
        fflush(NULL);   /* a forked child must not write our buffered output again */
        pid = fork();
        if (pid == 0)
            _exit(child_main(&t));
        if (pid > 0)
            pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    } else {
        /* The child runs on our CPU while we wait: no cross-CPU wake-ups,
         * which cost ~100 us each on a VM (measured: 190 us -> 20 us per
         * call). Only the child stays pinned. */
        cpu_set_t saved, one;
        int cpu = sched_getcpu(), nice_was;
        bool pinned = cpu >= 0 && sched_getaffinity(0, sizeof(saved), &saved) == 0, reniced;
        /* ... and ahead of whatever else waits for that CPU: on a busy host a
         * child of normal weight waits out another task's slice (~1 ms). It
         * runs ~0.2 ms, or sleeps in FUSE. Needs CAP_SYS_NICE; else as is. */
        errno = 0;
        nice_was = getpriority(PRIO_PROCESS, 0);
        reniced = errno == 0 && setpriority(PRIO_PROCESS, 0, -20) == 0;
        if (pinned) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
        }
        pid = clone(child_main, (char *)stack + CHILD_STACK, base | CLONE_PIDFD, &t, &pidfd);
        if (pid < 0 && errno == EINVAL)
            pid = clone(child_main, (char *)stack + CHILD_STACK, base, &t);
        if (pinned)
            sched_setaffinity(0, sizeof(saved), &saved);
        if (reniced)
            setpriority(PRIO_PROCESS, 0, nice_was);
    }
    if (pid < 0) {
        r = rv_fail(err, errno, "clone");
        munmap(stack, CHILD_STACK);
        return r;
    }
    if (pidfd < 0) {
        r = wait_polling(pid, timeout_ms, status, err);
    } else {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        long deadline = now_ms() + timeout_ms, left;
        int n;
        for (;;) {
            left = deadline - now_ms();
            n = poll(&p, 1, left > 0 ? (int)left : 0);
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        if (n == 0) {
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
            reap(pid, status, NULL);
            r = rv_fail(err, ETIMEDOUT, "gave up after %d ms", timeout_ms);
        } else {
            r = reap(pid, status, err);
        }
        close(pidfd);
    }
    munmap(stack, CHILD_STACK);
    return r;
}
