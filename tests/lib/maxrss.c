/* maxrss: run a command, print its peak RSS in KiB. Static and tiny, so the
 * pages the child had before exec (which count in ru_maxrss) are negligible. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct rusage ru;
    int status;
    pid_t pid;

    if (argc < 2)
        return 2;
    pid = fork();
    if (pid == 0) {
        execv(argv[1], argv + 1);
        _exit(127);
    }
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
        return 1;
    printf("%ld\n", ru.ru_maxrss);
    return 0;
}
