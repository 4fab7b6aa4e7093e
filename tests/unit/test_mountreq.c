/* test_mountreq.c - the FUSE broker's decisions on copies of mount(2) and
 * umount2(2) arguments (mountreq.c): flags, file-system types, FUSE options
 * checked against the caller, umount flags, /proc status and mountinfo. */
#define _GNU_SOURCE
#include "resview/mountreq.h"
#include "resview/sys.h"
#include "unit.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#ifndef MS_NOSYMFOLLOW
#define MS_NOSYMFOLLOW 256
#endif

static const struct rv_mount_caller root = { .uid = 0, .fsuid = 0, .gid = 0, .fsgid = 0 }, user = { .uid = 1000, .fsuid = 1000, .gid = 100, .fsgid = 100 };

static int opts(const char *data, const struct rv_mount_caller *c, bool ao, struct rv_fuse_opts *o)
{
    return rv_mountreq_options(data, c, ao, o);
}

int main(void)
{
    struct rv_mount_flags fl;
    struct rv_fuse_opts o;
    char sub[RV_FUSE_SUBTYPE_MAX];

    /* Flags. */
    ok(rv_mountreq_flags(0, &fl) == 0 && fl.attrs == (RV_MOUNT_ATTR_NOSUID | RV_MOUNT_ATTR_NODEV) &&
       !fl.ro, "no flags: nosuid,nodev forced");
    ok(rv_mountreq_flags(0xC0ED0000ull | MS_RDONLY, &fl) == 0 && fl.ro && (fl.attrs & RV_MOUNT_ATTR_RDONLY),
       "MS_MGC_VAL in the high word is ignored; MS_RDONLY: read-only mount and superblock");
    ok(rv_mountreq_flags(MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_NOSYMFOLLOW, &fl) == 0 &&
       fl.attrs == (RV_MOUNT_ATTR_NOSUID | RV_MOUNT_ATTR_NODEV | RV_MOUNT_ATTR_NOEXEC | RV_MOUNT_ATTR_NOATIME |
                    RV_MOUNT_ATTR_NODIRATIME | RV_MOUNT_ATTR_NOSYMFOLLOW),
       "noexec, noatime, nodiratime, nosymfollow become mount attributes");
    ok(rv_mountreq_flags(MS_SYNCHRONOUS | MS_DIRSYNC | MS_LAZYTIME | MS_SILENT | MS_STRICTATIME, &fl) == 0 &&
       fl.sync && fl.dirsync && fl.lazytime && (fl.attrs & RV_MOUNT_ATTR_STRICTATIME),
       "sync, dirsync, lazytime (superblock), strictatime, silent accepted");
    {
        static const unsigned long bad[] = { MS_BIND, MS_MOVE, MS_REMOUNT, MS_REC, MS_SHARED, MS_PRIVATE,
                                             MS_SLAVE, MS_UNBINDABLE, MS_BIND | MS_REC, MS_REMOUNT | MS_RDONLY,
                                             MS_MANDLOCK, MS_POSIXACL, 1ul << 40, 0xC0ED0000ul | MS_BIND };
        bool all = true;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            all = all && rv_mountreq_flags(bad[i], &fl) == -EPERM;
        ok(all, "bind, move, remount, rec, propagation, mandlock, posixacl, unknown bits: EPERM");
    }
    ok(rv_mountreq_flags(MS_NOATIME | MS_STRICTATIME, &fl) == -EINVAL, "noatime with strictatime: EINVAL");

    /* File-system types. */
    ok(rv_mountreq_fstype("fuse", sub) == 0 && !*sub, "fuse");
    ok(rv_mountreq_fstype("fuse.sshfs", sub) == 0 && strcmp(sub, "sshfs") == 0, "fuse.sshfs: subtype sshfs");
    ok(rv_mountreq_fstype("fuse.rclone", sub) == 0 && rv_mountreq_fstype("fuse.s3fs", sub) == 0,
       "fuse.rclone, fuse.s3fs");
    {
        static const char *const no[] = { "fuseblk", "tmpfs", "proc", "sysfs", "cgroup", "cgroup2", "overlay",
                                          "ext4", "bpf", "debugfs", "tracefs", "securityfs", "devpts",
                                          "mqueue", "nfs", "9p", "", "FUSE", "fusectl", "fuse2", NULL };
        bool all = true;
        for (size_t i = 0; no[i]; i++)
            all = all && rv_mountreq_fstype(no[i], sub) == -EPERM;
        ok(all, "every other type (fuseblk, tmpfs, proc, cgroup, ...): EPERM");
    }
    ok(rv_mountreq_fstype("fuse.", sub) == -EINVAL && rv_mountreq_fstype("fuse.a b", sub) == -EINVAL &&
       rv_mountreq_fstype("fuse.a,b", sub) == -EINVAL &&
       rv_mountreq_fstype("fuse.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", sub) == -EINVAL,
       "empty, spaced, comma or overlong subtype: EINVAL");

    /* Options. */
    ok(opts("fd=5,rootmode=40000,user_id=0,group_id=0", &root, false, &o) == 0 && o.fd == 5 &&
       o.rootmode == 040000 && o.user_id == 0 && o.group_id == 0 && !o.allow_other,
       "libfuse's options for root");
    ok(opts("fd=3,rootmode=100000,user_id=1000,group_id=100,default_permissions,max_read=131072", &user,
            false, &o) == 0 && o.rootmode == 0100000 && o.default_permissions && o.has_max_read &&
       o.max_read == 131072, "a regular-file root, default_permissions, max_read");
    ok(opts("fd=3,rootmode=40000,user_id=0,group_id=0", &user, false, &o) == -EPERM,
       "user_id of another user (root for a uid-1000 caller): EPERM");
    ok(opts("fd=3,rootmode=40000,user_id=1000,group_id=0", &user, false, &o) == -EPERM,
       "group_id of another group: EPERM");
    ok(opts("fd=3,rootmode=40000,user_id=0,group_id=0,allow_other", &root, false, &o) == -EPERM,
       "allow_other without fuse.allow_other: EPERM");
    ok(opts("fd=3,rootmode=40000,user_id=0,group_id=0,allow_other", &root, true, &o) == 0 && o.allow_other,
       "allow_other with fuse.allow_other: allowed");
    {
        static const char *const bad[] = {
            "rootmode=40000,user_id=0,group_id=0",                 /* no fd */
            "fd=3,user_id=0,group_id=0",                           /* no rootmode */
            "fd=3,rootmode=40000,group_id=0",                      /* no user_id */
            "fd=3,rootmode=40000,user_id=0",                       /* no group_id */
            "fd=3,fd=4,rootmode=40000,user_id=0,group_id=0",       /* twice */
            "fd=-1,rootmode=40000,user_id=0,group_id=0",
            "fd=3x,rootmode=40000,user_id=0,group_id=0",
            "fd=99999999999,rootmode=40000,user_id=0,group_id=0",
            "fd=3,rootmode=40009,user_id=0,group_id=0",            /* not octal */
            "fd=3,rootmode=20000,user_id=0,group_id=0",            /* a character device root */
            "fd=3,rootmode=140000,user_id=0,group_id=0",           /* a socket root */
            "fd=3,rootmode=1040000,user_id=0,group_id=0",          /* bits beyond the mode */
            "fd=3,rootmode=40000,user_id=0,group_id=0,blksize=4096",
            "fd=3,rootmode=40000,user_id=0,group_id=0,context=system_u:object_r:tmp_t",
            "fd=3,rootmode=40000,user_id=0,group_id=0,source=x",
            "fd=3,rootmode=40000,user_id=0,group_id=0,nosuid",
            "fd=3,rootmode=40000,user_id=0,group_id=0,default_permissions=1",
            "fd,rootmode=40000,user_id=0,group_id=0",
            "fd=3,rootmode=40000,user_id=0,group_id=0,subtype=a b",
            "",
            NULL };
        bool all = true;
        for (size_t i = 0; bad[i]; i++) {
            int r = opts(bad[i], &root, true, &o);
            if (r != -EINVAL)
                printf("#   %s: %d\n", bad[i], r);
            all = all && r == -EINVAL;
        }
        ok(all, "missing, repeated, malformed and unknown options: EINVAL");
    }
    ok(opts(",,fd=3,,rootmode=40000,user_id=0,group_id=0,subtype=sshfs", &root, false, &o) == 0 &&
       strcmp(o.subtype, "sshfs") == 0, "empty items skipped (as the kernel), subtype=");
    {
        char big[RV_MOUNT_DATA_MAX + 16];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ok(opts(big, &root, false, &o) == -EINVAL && opts(NULL, &root, false, &o) == -EINVAL,
           "oversized or absent options: EINVAL");
    }
    /* user_id may be the real or the file-system id. */
    {
        struct rv_mount_caller c = { .uid = 1000, .fsuid = 2000, .gid = 100, .fsgid = 200 };
        ok(opts("fd=3,rootmode=40000,user_id=2000,group_id=200", &c, false, &o) == 0 &&
           opts("fd=3,rootmode=40000,user_id=1000,group_id=100", &c, false, &o) == 0,
           "user_id/group_id: real or file-system ids of the caller");
    }

    /* umount2 flags. */
    ok(rv_mountreq_umount_flags(0) == 0 && rv_mountreq_umount_flags(MNT_DETACH) == 0 &&
       rv_mountreq_umount_flags(MNT_FORCE | MNT_DETACH | 8) == 0 && rv_mountreq_umount_flags(MNT_EXPIRE) == 0,
       "umount2: 0, MNT_DETACH, MNT_FORCE, UMOUNT_NOFOLLOW, MNT_EXPIRE");
    ok(rv_mountreq_umount_flags(16) == -EINVAL && rv_mountreq_umount_flags(MNT_EXPIRE | MNT_DETACH) == -EINVAL &&
       rv_mountreq_umount_flags(1ull << 33) == -EINVAL, "unknown umount2 flags, MNT_EXPIRE with others: EINVAL");

    /* /proc/PID/status. */
    {
        struct rv_mount_caller c;
        ok(rv_mountreq_caller("Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t100\t101\t102\t103\n"
                              "Groups:\t4 24 100000 \nCapEff:\t00000000a80425fb\n", &c) == 0 &&
           c.uid == 1000 && c.fsuid == 1003 && c.gid == 100 && c.fsgid == 103, "status: real and fs ids");
        ok(c.creds_ok && !c.creds_why && c.n_groups == 3 && c.groups[0] == 4 && c.groups[2] == 100000 &&
           c.cap_eff == 0xa80425fbull, "status: supplementary groups and effective capabilities");
        ok(rv_mountreq_caller("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t0000000000000000\n",
                              &c) == 0 && c.creds_ok && c.n_groups == 0 && c.cap_eff == 0,
           "status: no supplementary groups, no capabilities");
        {
            char big[1024] = "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t";
            for (int i = 0; i < RV_MOUNT_GROUPS_MAX + 1; i++)
                snprintf(big + strlen(big), sizeof(big) - strlen(big), "%d ", i);
            strcat(big, "\nCapEff:\t0000000000000000\n");
            ok(rv_mountreq_caller(big, &c) == 0 && !c.creds_ok && c.creds_why &&
               strstr(c.creds_why, "more than 64 supplementary groups"),
               "status: more groups than carried: creds_ok false (a check as the caller refuses), "
               "saying so: %s", c.creds_why ? c.creds_why : "(none)");
        }
        ok(rv_mountreq_caller("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\n", &c) == 0 && !c.creds_ok &&
           rv_mountreq_caller("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\nCapEff:\t00zz\n", &c) == 0 &&
           !c.creds_ok && c.fsuid == 1 && c.creds_why && strstr(c.creds_why, "CapEff"),
           "status: CapEff missing (a cut-off status) or malformed: ids, creds_ok false (%s)", c.creds_why);
        ok(rv_mountreq_caller("Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t5 x\nCapEff:\t0000000000000000\n",
                              &c) == 0 && !c.creds_ok, "status: a malformed Groups: line: creds_ok false");
        ok(rv_mountreq_caller("Name:\tUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", &c) < 0 &&
           rv_mountreq_caller("Uid:\t0\t0\n", &c) < 0, "status: malformed or a Uid: not at a line start: error");
        /* the same ids through a user namespace's maps (as the host reads them) */
        c = (struct rv_mount_caller){ .uid = 100000, .fsuid = 101000, .gid = 100005, .fsgid = 165535, .groups = { 100010, 100020 }, .n_groups = 2, .creds_ok = true };
        ok(rv_mountreq_ids_in_ns("         0     100000      65536\n", "0 100000 65536\n", &c) == 0 &&
           c.uid == 0 && c.fsuid == 1000 && c.gid == 5 && c.fsgid == 65535, "ids in a user namespace");
        ok(c.creds_ok && c.groups[0] == 10 && c.groups[1] == 20, "... and its supplementary groups");
        c = (struct rv_mount_caller){ .uid = 100000, .fsuid = 100000, .gid = 100000, .fsgid = 100000, .groups = { 100010, 5 }, .n_groups = 2, .creds_ok = true };
        ok(rv_mountreq_ids_in_ns("0 100000 65536\n", "0 100000 65536\n", &c) == 0 && !c.creds_ok &&
           c.creds_why && strstr(c.creds_why, "not mapped"),
           "a supplementary group outside the map: creds_ok false, said (%s)", c.creds_why);
        c = (struct rv_mount_caller){ .uid = 1000, .fsuid = 1000, .gid = 1000, .fsgid = 1000 };
        ok(rv_mountreq_ids_in_ns("0 1000 1\n1 100000 65536\n", "0 1000 1\n1 100000 65536\n", &c) == 0 &&
           c.uid == 0 && c.gid == 0, "a map of several lines (rootless podman's)");
        c = (struct rv_mount_caller){ .uid = 165536, .fsuid = 100000, .gid = 100000, .fsgid = 100000 };
        ok(rv_mountreq_ids_in_ns("0 100000 65536\n", "0 100000 65536\n", &c) < 0 && c.uid == 165536,
           "an id past the map: refused, nothing changed");
        c = (struct rv_mount_caller){ .uid = 0, .fsuid = 0, .gid = 0, .fsgid = 0 };
        ok(rv_mountreq_ids_in_ns("", "", &c) < 0 && rv_mountreq_ids_in_ns("x y z\n", "0 0 1\n", &c) < 0,
           "empty or malformed maps: refused");
    }

    /* mountinfo. */
    {
        static const char mi[] =
            "22 1 0:21 / / rw,relatime master:1 - overlay overlay rw\n"
            "30 22 0:5 / /proc rw,nosuid - proc proc rw\n"
            "41 22 0:44 / /mnt/shared rw shared:7 master:2 - tmpfs tmpfs rw\n"
            "43 22 0:47 / /mnt/with\\040space\\040shared:9 rw - fuse.sshfs host: rw\n";
        char t[64];
        unsigned maj, min;
        bool shared;
        ok(rv_mountinfo_find(mi, 22, t, sizeof(t), &maj, &min, &shared) == 0 && strcmp(t, "overlay") == 0 &&
           maj == 0 && min == 21 && !shared, "mountinfo: type, device, not shared (master only)");
        ok(rv_mountinfo_find(mi, 41, t, sizeof(t), &maj, &min, &shared) == 0 && shared && strcmp(t, "tmpfs") == 0,
           "mountinfo: shared:N seen");
        ok(rv_mountinfo_find(mi, 43, t, sizeof(t), &maj, &min, &shared) == 0 && !shared &&
           strcmp(t, "fuse.sshfs") == 0, "mountinfo: an escaped mount point cannot fake shared:");
        ok(rv_mountinfo_find(mi, 99, t, sizeof(t), &maj, &min, &shared) == -ENOENT, "mountinfo: unknown id");
        ok(rv_mountinfo_find("5 1 0:1 / / rw\n", 5, t, sizeof(t), &maj, &min, &shared) == -EINVAL,
           "mountinfo: a line without \" - \" is malformed");
    }
    /* The cgroups a worker joins to charge a container (from /proc/PID/cgroup). */
    {
        char cg[2][4096];
        const char *v1 = "12:pids:/kubepods/pod1/c1\n11:cpu,cpuacct:/kubepods/pod1/c1\n"
                         "4:memory:/kubepods/pod1/c1\n1:name=systemd:/kubepods/pod1/c1\n0::/\n";
        ok(rv_mountreq_cgroups(v1, "/sys/fs/cgroup", false, cg) == 0 &&
           strcmp(cg[0], "/sys/fs/cgroup/memory/kubepods/pod1/c1/cgroup.procs") == 0 &&
           strcmp(cg[1], "/sys/fs/cgroup/pids/kubepods/pod1/c1/cgroup.procs") == 0,
           "v1: the memory and pids cgroups (%s, %s)", cg[0], cg[1]);
        ok(rv_mountreq_cgroups("0::/system.slice/x.scope\n", "/sys/fs/cgroup", true, cg) == 0 &&
           strcmp(cg[0], "/sys/fs/cgroup/system.slice/x.scope/cgroup.procs") == 0 && cg[1][0] == '\0',
           "v2: the one cgroup");
        ok(rv_mountreq_cgroups("0::/\n", "/sys/fs/cgroup", true, cg) == 0 &&
           strcmp(cg[0], "/sys/fs/cgroup/cgroup.procs") == 0, "v2: the root cgroup");
        ok(rv_mountreq_cgroups("3:cpu:/a\n", "/sys/fs/cgroup", false, cg) < 0 && !cg[0][0] && !cg[1][0],
           "v1 without memory or pids: none");
        ok(rv_mountreq_cgroups("4:memory:/a/../../etc\n", "/sys/fs/cgroup", false, cg) < 0 &&
           rv_mountreq_cgroups("4:memory:relative\n", "/sys/fs/cgroup", false, cg) < 0 &&
           rv_mountreq_cgroups("4:memory:/a//b\n", "/sys/fs/cgroup", false, cg) < 0 &&
           rv_mountreq_cgroups("4:memory:/a/.\n", "/sys/fs/cgroup", false, cg) < 0 &&
           rv_mountreq_cgroups("0::/::/\n", "/sys/fs/cgroup", true, cg) < 0,
           "a path that is not canonical is refused");
        ok(rv_mountreq_cgroups("4:memoryx,pid:/a\n5:xpids:/b\n", "/sys/fs/cgroup", false, cg) < 0,
           "controller names match whole");
        ok(rv_mountreq_cgroups("", "/sys/fs/cgroup", true, cg) < 0 &&
           rv_mountreq_cgroups("garbage", "/sys/fs/cgroup", false, cg) < 0, "empty or malformed: none");
    }
    return unit_done();
}
