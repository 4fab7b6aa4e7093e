/* spawn_cost N PROGRAM ARGS...: posix_spawn PROGRAM N times, one after the
 * other, waiting for each; prints the median microseconds per run (of 5
 * batches of N/5). stdin, stdout and stderr go to /dev/null. The benchmark's
 * per-exec cost of a binary. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    posix_spawn_file_actions_t fa;
    double batch[5];
    int n;

    if (argc < 3 || (n = atoi(argv[1])) < 5)
        return 2;
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd < 3; fd++)
        posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
    for (int b = 0; b < 5; b++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < n / 5; i++) {
            pid_t pid;
            int st;
            if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0 ||
                waitpid(pid, &st, 0) < 0) {
                perror(argv[2]);
                return 1;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        batch[b] = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / (n / 5);
    }
    qsort(batch, 5, sizeof(batch[0]), cmp);
    printf("%.0f\n", batch[2]);
    return 0;
}
