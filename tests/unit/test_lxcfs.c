/* test_lxcfs.c - LXCFS candidates, liveness probe, process start time. */
#define _GNU_SOURCE
#include "resview/inject.h"
#include "resview/lxcfs.h"
#include "resview/proc.h"
#include "resview/viewhold.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    unsigned long long st = 0;
    struct rv_lxcfs lx;
    struct rv_error err;
    char dir[] = "/tmp/rv-unit-lxcfs.XXXXXX";

    /* field 22; the command may hold spaces and parentheses */
    ok(rv_parse_stat_start("42 (sleep) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 200",
                           &st) == 0 && st == 12345, "start time: plain command");
    ok(rv_parse_stat_start("42 (a) b) (c ) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 777 1 2",
                           &st) == 0 && st == 777, "start time: ')' and spaces in the command");
    ok(rv_parse_stat_start("42 (short) S 1 2 3", &st) < 0, "start time: truncated line refused");
    ok(rv_parse_stat_start("no parenthesis at all", &st) < 0, "start time: garbage refused");
    ok(rv_parse_stat_start("42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12x 1", &st) < 0,
       "start time: non-numeric field refused");
    /* who we are on the host */
    {
        unsigned u = 7;
        ok(rv_id_map("         0          0 4294967295\n", 0, false, &u) == 0 && u == 0,
           "uid map: the host's, root");
        ok(rv_id_map("         0       1001          1\n         1     100000      65536\n", 0, false, &u) == 0 &&
           u == 1001, "uid map: a rootless engine's uid 0 is its user");
        ok(rv_id_map("0 1001 1\n1 100000 65536\n", 1000, false, &u) == 0 && u == 100999,
           "uid map: a subordinate uid");
        ok(rv_id_map("0 1001 1\n1 100000 65536\n", 100999, true, &u) == 0 && u == 1000,
           "uid map: and back, inward");
        ok(rv_id_map("0 1001 1\n", 5, false, &u) < 0, "uid map: unmapped");
    }
    {
        int fd = open("/proc/self", O_PATH | O_DIRECTORY);
        ok(fd >= 0 && rv_pid_start_time(fd, &st) == 0 && st > 0, "start time of this process");
        close(fd);
    }

    ok(rv_lxcfs_is_candidate("proc/meminfo"), "proc/meminfo is a candidate");
    ok(rv_lxcfs_is_candidate("sys/devices/system/cpu/online"), "cpu/online is a candidate");
    ok(rv_lxcfs_is_candidate("proc/pressure/io"), "pressure files are candidates (LXCFS 7)");
    ok(!rv_lxcfs_is_candidate("/proc/meminfo"), "absolute path is not a candidate name");
    ok(!rv_lxcfs_is_candidate("proc/self/environ"), "other /proc files are not candidates");
    ok(!rv_lxcfs_is_candidate("proc/../proc/meminfo"), "no path games");
    ok(rv_lxcfs_ncandidates == 12, "twelve candidates");

    /* where the serving LXCFS runs, no views go: the namespace check */
    {
        struct rv_lxcfs_servers srv;
        struct stat ns;
        char why[320];
        memset(&srv, 0, sizeof(srv));
        ok(rv_lxcfs_ns_check(&srv, getpid(), why, sizeof(why)) == 0, "no LXCFS found: views allowed");
        ok(stat("/proc/self/ns/mnt", &ns) == 0, "our mount namespace");
        srv.n = 1;
        srv.s[0] = (struct rv_lxcfs_server){ 4242, ns.st_dev, ns.st_ino };
        ok(rv_lxcfs_ns_check(&srv, getpid(), why, sizeof(why)) == 1 && strstr(why, "pid 4242") &&
               strstr(why, "wait for itself"),
           "LXCFS in the target's namespace: refused, says which (%s)", why);
        srv.s[0].ns_ino++;
        ok(rv_lxcfs_ns_check(&srv, getpid(), why, sizeof(why)) == 0, "LXCFS in another namespace: allowed");
        ok(rv_lxcfs_ns_check(&srv, 0x7ffffff0, why, sizeof(why)) == 0,
           "target gone: 0 (the injector says it is gone; repair drops the record)");
        /* a process named otherwise is never taken for LXCFS, pid file or not */
        rv_lxcfs_servers_find("/nonexistent/resview/lxcfs", 0, true, &srv);
        for (unsigned i = 0; i < srv.n; i++)
            ok(srv.s[i].pid != getpid(), "this test is not LXCFS");
        ok(rv_lxcfs_views_in_ns(0, why, sizeof(why)) >= 0, "our mount table reads (%s)", why);
        ok(rv_lxcfs_views_in_ns(0x7ffffff0, why, sizeof(why)) == -1, "a missing process: -1");
    }

    /* a plain directory with the files is not LXCFS */
    ok(mkdtemp(dir) != NULL, "temp dir");
    {
        char p[256];
        snprintf(p, sizeof(p), "%s/proc", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/proc/meminfo", dir);
        close(open(p, O_CREAT | O_WRONLY, 0644));
    }
    rv_lxcfs_probe(dir, &lx);
    ok(!lx.live && !lx.mounted, "plain directory: not live, nothing mounted");
    ok(strstr(lx.why, "no LXCFS mounted") != NULL, "plain directory: says why (%s)", lx.why);
    ok(rv_lxcfs_discover("/nonexistent/resview", 1000, &lx, &err) == 0 && !lx.live &&
           strstr(lx.why, "No such file") != NULL,
       "missing root: not live, says why (%s)", lx.why);
    {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            printf("# cleanup of %s failed\n", dir);
    }
    /* mountinfo as data: what a descriptor is on, without asking its file system */
    {
        struct rv_mount_info mi;
        const char *l1 = "46 84 0:42 / /tmp/atk/root/proc rw,relatime - overlay overlay rw,lowerdir=/l";
        const char *l2 = "142 84 0:41 / /a\\040b rw,nosuid shared:5 master:1 - fuse.lxcfs lxcfs rw,user_id=0";
        char text[4096], buf[256], tmpl[] = "/tmp/rv-unit-mi.XXXXXX";
        unsigned long long id = 0;
        int fd, fdinfo;
        ok(rv_mountinfo_line(l1, strlen(l1), &mi) == 0 && mi.id == 46 && mi.maj == 0 && mi.min == 42 &&
           strcmp(mi.type, "overlay") == 0, "mountinfo: a line");
        ok(rv_mountinfo_line(l2, strlen(l2), &mi) == 0 && mi.id == 142 && strcmp(mi.type, "fuse.lxcfs") == 0,
           "mountinfo: optional fields before the separator");
        ok(rv_mountinfo_line("46 84 0:42 / /x rw", 18, &mi) < 0, "mountinfo: no separator refused");
        ok(rv_mountinfo_line("x 84 0:42 / /x rw - ext4 a b", 28, &mi) < 0, "mountinfo: no id refused");
        /* a file with a line longer than the scratch buffer before the one wanted */
        snprintf(text, sizeof(text), "1 0 8:1 / / rw - ext4 /dev/vda rw\n7 1 0:5 / /%0400d rw - tmpfs t rw\n%s\n%s",
                 0, l1, l2);
        fd = mkstemp(tmpl);
        ok(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "mountinfo: a sample");
        lseek(fd, 0, SEEK_SET);
        ok(rv_mountinfo_lookup(fd, 142, &mi, buf, sizeof(buf)) == 0 && strcmp(mi.type, "fuse.lxcfs") == 0,
           "mountinfo: the last line found (no newline), past a line longer than the buffer");
        lseek(fd, 0, SEEK_SET);
        ok(rv_mountinfo_lookup(fd, 7, &mi, buf, sizeof(buf)) < 0, "mountinfo: a line too long to read is not taken");
        lseek(fd, 0, SEEK_SET);
        ok(rv_mountinfo_lookup(fd, 99, &mi, buf, sizeof(buf)) < 0 && errno == ENOENT, "mountinfo: an id not there");
        close(fd);
        unlink(tmpl);
        /* our own root: its mount id from fdinfo is in our mountinfo, a local file system */
        fd = open("/", O_PATH | O_CLOEXEC);
        fdinfo = open("/proc/self/fdinfo", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ok(fd >= 0 && fdinfo >= 0 && rv_fd_mnt_id(fdinfo, fd, &id) == 0 && id > 0, "fdinfo: mount id of /");
        {
            int mtab = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
            char big[8192];
            ok(mtab >= 0 && rv_mountinfo_lookup(mtab, id, &mi, big, sizeof(big)) == 0 && mi.type[0],
               "mountinfo: / found by its id (%s)", mi.type);
            if (mtab >= 0)
                close(mtab);
        }
        close(fd);
        close(fdinfo);
        ok(rv_inject_walkable("ext4") && rv_inject_walkable("proc") && rv_inject_walkable("sysfs") &&
           rv_inject_walkable("tmpfs"), "walkable: local and kernel file systems");
        ok(!rv_inject_walkable("overlay") && !rv_inject_walkable("fuse") && !rv_inject_walkable("fuse.lxcfs") &&
           !rv_inject_walkable("fuseblk") && !rv_inject_walkable("nfs") && !rv_inject_walkable(""),
           "walkable: never FUSE, overlay, a network or unknown file system");
    }
    /* watch's set on the wire (viewhold.h): the descriptors in their places,
     * the age of LXCFS's last answer with them; a take checks each one */
    {
        struct rv_viewhold h, got;
        struct stat fst;
        int sp[2];
        ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0 && stat("/", &fst) == 0,
           "viewhold: a socket pair");
        rv_viewhold_init(&h);
        ok(h.answered_ms == RV_VIEWHOLD_NEVER, "viewhold: a new set has no answer");
        h.dev = 1;
        h.answered_ms = 123;
        h.absent = 1u << 2;
        h.fd[1] = open("/dev/null", O_PATH | O_CLOEXEC);
        h.fd[4] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ok(rv_viewhold_send(sp[0], &h) == 0 && rv_viewhold_recv(sp[1], &got) == 0 && got.dev == 1 &&
           got.answered_ms == 123 && got.absent == 1u << 2 && got.fd[1] >= 0 && got.fd[4] >= 0 &&
           got.fd[0] < 0 && got.fd[2] < 0, "viewhold: a set with its answer's age, each descriptor in place");
        rv_viewhold_close(&got);
        h.dev = fst.st_dev;
        ok(rv_viewhold_send(sp[0], &h) == 0, "viewhold: sent again");
        rv_viewhold_take(sp[1], fst.st_dev, &got);
        ok(got.dev == fst.st_dev && got.fd[1] < 0 && got.fd[4] < 0 && got.answered_ms == 123,
           "viewhold: take keeps no descriptor that is not a regular file of the device (/dev/null, a directory)");
        rv_viewhold_close(&got);
        rv_viewhold_take(-1, fst.st_dev, &got);
        ok(got.dev == 0 && got.answered_ms == RV_VIEWHOLD_NEVER, "viewhold: nothing asked, nothing taken");
        rv_viewhold_close(&h);
        close(sp[0]);
    }
    return unit_done();
}
