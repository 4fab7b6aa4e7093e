#!/usr/bin/env python3
"""gen-corpus.py - writes the seed corpora of the fuzzers and the 20 KB
Kubernetes-like spec of the benchmark (tests/samples/k8s-spec.json).

The specs have the shapes the engines write (field order, hooks, annotations,
seccomp, rlimits with uint64 values), written from their documented formats:
docker (moby), containerd CRI, podman, CRI-O, plain `runc spec`, enroot-like.
Run it again after changing it; the output is deterministic."""
import json, os, copy

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
U64 = 18446744073709551615

SYSCALLS = """accept accept4 access adjtimex alarm bind brk capget capset chdir chmod chown
chown32 clock_adjtime clock_getres clock_gettime clock_nanosleep close close_range connect
copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_pwait
epoll_pwait2 epoll_wait eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2
fadvise64 fallocate fanotify_mark fchdir fchmod fchmodat fchown fchownat fcntl fdatasync
fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstatfs fsync ftruncate futex
futimesat get_robust_list getcpu getcwd getdents getdents64 getegid geteuid getgid getgroups
getitimer getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid getresuid
getrlimit getrusage getsid getsockname getsockopt gettid gettimeofday getuid getxattr
inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel io_destroy io_getevents
io_setup io_submit io_uring_enter io_uring_register io_uring_setup ioctl ioprio_get ioprio_set
ipc kill lchown lgetxattr link linkat listen listxattr llistxattr lremovexattr lseek lsetxattr
lstat madvise membarrier memfd_create mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall
mmap mprotect mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedsend mq_unlink mremap
msgctl msgget msgrcv msgsnd msync munlock munlockall munmap nanosleep newfstatat open openat
openat2 pause pidfd_open pidfd_send_signal pipe pipe2 poll ppoll prctl pread64 preadv preadv2
prlimit64 pselect6 pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv recv
recvfrom recvmmsg recvmsg remap_file_pages removexattr rename renameat renameat2 restart_syscall
rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend
rt_sigtimedwait rt_tgsigqueueinfo sched_get_priority_max sched_get_priority_min sched_getaffinity
sched_getattr sched_getparam sched_getscheduler sched_rr_get_interval sched_setaffinity
sched_setattr sched_setparam sched_setscheduler sched_yield seccomp select semctl semget semop
semtimedop send sendfile sendmmsg sendmsg sendto set_robust_list set_tid_address setfsgid
setfsuid setgid setgroups setitimer setpgid setpriority setregid setresgid setresuid setreuid
setrlimit setsid setsockopt setuid setxattr shmat shmctl shmdt shmget shutdown sigaltstack
signalfd signalfd4 socket socketpair splice stat statfs statx symlink symlinkat sync
sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete timer_getoverrun
timer_gettime timer_settime timerfd_create timerfd_gettime timerfd_settime times tkill truncate
umask uname unlink unlinkat utime utimensat utimes vfork vmsplice wait4 waitid waitpid write
writev arch_prctl modify_ldt""".split()

CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
MASKED = ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
          "/sys/firmware", "/sys/devices/virtual/powercap"]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


def seccomp(full=True):
    names = SYSCALLS if full else SYSCALLS[:40]
    return {
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": names, "action": "SCMP_ACT_ALLOW"},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 4294967295, "op": "SCMP_CMP_EQ"}]},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
        ],
    }


def base_mounts():
    return [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["ro", "nosuid", "noexec", "nodev"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=67108864"]},
    ]


def namespaces(*extra):
    return [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network") + extra]


def docker():
    cid = "4f1b4c7c2d3a9e8f" * 4
    return {
        "ociVersion": "1.0.2-dev",
        "process": {
            "user": {"uid": 0, "gid": 0, "additionalGids": [0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27]},
            "args": ["/bin/sh", "-c", "nproc; free -m"],
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=4f1b4c7c2d3a", "HOME=/root"],
            "cwd": "/",
            "capabilities": {k: CAPS for k in ("bounding", "effective", "permitted")},
            "apparmorProfile": "docker-default",
            "oomScoreAdj": 0,
        },
        "root": {"path": "/var/lib/docker/overlay2/5d1c/merged"},
        "hostname": "4f1b4c7c2d3a",
        "mounts": base_mounts() + [
            {"destination": "/etc/resolv.conf", "type": "bind", "source": "/var/lib/docker/containers/%s/resolv.conf" % cid, "options": ["rbind", "rprivate"]},
            {"destination": "/etc/hostname", "type": "bind", "source": "/var/lib/docker/containers/%s/hostname" % cid, "options": ["rbind", "rprivate"]},
            {"destination": "/etc/hosts", "type": "bind", "source": "/var/lib/docker/containers/%s/hosts" % cid, "options": ["rbind", "rprivate"]},
        ],
        "hooks": {"prestart": [{"path": "/proc/1234/exe", "args": ["libnetwork-setkey", "-exec-root=/var/run/docker", cid, "a1b2c3d4e5f6"]}]},
        "linux": {
            "sysctl": {"net.ipv4.ip_unprivileged_port_start": "0", "net.ipv4.ping_group_range": "0 2147483647"},
            "resources": {
                "devices": [{"allow": False, "access": "rwm"},
                            {"allow": True, "type": "c", "major": 1, "minor": 5, "access": "rwm"},
                            {"allow": True, "type": "c", "major": 136, "access": "rwm"}],
                "memory": {"limit": 536870912, "swap": 1073741824},
                "cpu": {"shares": 0, "quota": 150000, "period": 100000},
                "pids": {"limit": 0},
                "blockIO": {"weight": 0},
            },
            "cgroupsPath": "system.slice:docker:" + cid,
            "namespaces": namespaces(),
            "seccomp": seccomp(),
            "maskedPaths": MASKED,
            "readonlyPaths": READONLY,
        },
    }


def cri(size_env=4, annotations=None, systemd=True):
    pod = "podc8f2a7e1-6b0d-4d8e-9a57-1f8a3c2b9d10"
    cid = "9d2e" * 16
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=web-7d9f8c6b5-x2x4q"]
    for i in range(size_env):
        svc = "SVC%02d" % i
        env += ["%s_SERVICE_HOST=10.96.%d.%d" % (svc, i, 10 + i), "%s_SERVICE_PORT=8080" % svc,
                "%s_PORT=tcp://10.96.%d.%d:8080" % (svc, i, 10 + i),
                "%s_PORT_8080_TCP_PROTO=tcp" % svc]
    ann = {
        "io.kubernetes.cri.container-type": "container",
        "io.kubernetes.cri.container-name": "web",
        "io.kubernetes.cri.image-name": "registry.example.com/team/web:1.4.2",
        "io.kubernetes.cri.sandbox-id": "77aa" * 16,
        "io.kubernetes.cri.sandbox-name": "web-7d9f8c6b5-x2x4q",
        "io.kubernetes.cri.sandbox-namespace": "prod",
        "io.kubernetes.cri.sandbox-uid": pod[3:],
    }
    ann.update(annotations or {})
    return {
        "ociVersion": "1.1.0",
        "process": {
            "user": {"uid": 65532, "gid": 65532, "additionalGids": [65532]},
            "args": ["/app/server", "--port=8080", "--workers=auto"],
            "env": env,
            "cwd": "/app",
            "capabilities": {k: CAPS for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
                        {"type": "RLIMIT_MEMLOCK", "hard": U64, "soft": U64}],
            "noNewPrivileges": True,
            "apparmorProfile": "cri-containerd.apparmor.d",
            "oomScoreAdj": 969,
        },
        "root": {"path": "rootfs", "readonly": True},
        "mounts": base_mounts() + [
            {"destination": "/etc/hosts", "type": "bind", "source": "/var/lib/kubelet/pods/%s/etc-hosts" % pod[3:], "options": ["rbind", "rprivate", "rw"]},
            {"destination": "/dev/termination-log", "type": "bind", "source": "/var/lib/kubelet/pods/%s/containers/web/2f4e" % pod[3:], "options": ["rbind", "rprivate", "rw"]},
            {"destination": "/etc/hostname", "type": "bind", "source": "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/%s/hostname" % ("77aa" * 16), "options": ["rbind", "rprivate", "rw"]},
            {"destination": "/etc/resolv.conf", "type": "bind", "source": "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/%s/resolv.conf" % ("77aa" * 16), "options": ["rbind", "rprivate", "rw"]},
            {"destination": "/var/run/secrets/kubernetes.io/serviceaccount", "type": "bind", "source": "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~projected/kube-api-access-8x2lq" % pod[3:], "options": ["rbind", "rprivate", "ro"]},
            {"destination": "/data", "type": "bind", "source": "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~empty-dir/data" % pod[3:], "options": ["rbind", "rprivate", "rw"]},
        ],
        "annotations": ann,
        "linux": {
            "resources": {
                "devices": [{"allow": False, "access": "rwm"}],
                "memory": {"limit": 2147483648, "swap": 2147483648},
                "cpu": {"shares": 1536, "quota": 150000, "period": 100000},
                "hugepageLimits": [{"pageSize": "2MB", "limit": 0}, {"pageSize": "1GB", "limit": 0}],
                "unified": {"memory.oom.group": "1"},
            },
            "cgroupsPath": ("kubepods-burstable-%s.slice:cri-containerd:%s" % (pod.replace("-", "_"), cid))
                           if systemd else "/kubepods/burstable/%s/%s" % (pod, cid),
            "namespaces": [{"type": "pid"}, {"type": "ipc", "path": "/proc/4242/ns/ipc"},
                           {"type": "uts", "path": "/proc/4242/ns/uts"}, {"type": "mount"},
                           {"type": "network", "path": "/var/run/netns/cni-1c2d3e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6"}],
            "seccomp": seccomp(),
            "maskedPaths": MASKED,
            "readonlyPaths": READONLY,
            "mountLabel": "",
        },
    }


def podman():
    s = copy.deepcopy(docker())
    s["ociVersion"] = "1.1.0-rc.1"
    s["process"]["env"] = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                           "TERM=xterm", "container=podman", "HOME=/root", "HOSTNAME=0c5d5a1a2b3c"]
    s["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
                               {"type": "RLIMIT_NPROC", "hard": 1024, "soft": 1024}]
    s["process"]["apparmorProfile"] = "containers-default-0.50.1"
    s["annotations"] = {"io.container.manager": "libpod", "io.podman.annotations.autoremove": "TRUE",
                        "org.opencontainers.image.stopSignal": "15", "resview.io/fuse": "false"}
    s["hooks"] = {"prestart": [{"path": "/usr/local/bin/resview-hook", "args": ["resview-hook"]}]}
    s["linux"]["cgroupsPath"] = "machine.slice:libpod:0c5d5a1a2b3c" + "e" * 52
    s["linux"]["resources"]["cpu"] = {"cpus": "0-1", "quota": 50000, "period": 100000}
    s["linux"]["resources"]["pids"] = {"limit": 2048}
    return s


def crio():
    s = cri(size_env=2, annotations={"io.kubernetes.cri-o.ContainerType": "container",
                                     "io.kubernetes.cri-o.Labels": "{\"app\":\"web\"}",
                                     "io.kubernetes.cri-o.TTY": "false",
                                     "resview.io/env": "true"})
    s["process"]["apparmorProfile"] = "crio-default"
    s["process"]["selinuxLabel"] = "system_u:system_r:container_t:s0:c123,c456"
    s["linux"]["cgroupsPath"] = "kubepods-besteffort-pod0f1e2d3c.slice:crio:" + "ab" * 32
    s["linux"]["mountLabel"] = "system_u:object_r:container_file_t:s0:c123,c456"
    s["hooks"] = {"createRuntime": [{"path": "/usr/libexec/oci/hooks.d/nvidia", "env": ["PATH=/usr/bin"], "timeout": 5}]}
    return s



def gpu():
    s = cri(size_env=1)
    s["process"]["env"].append("NVIDIA_VISIBLE_DEVICES=GPU-1a2b,GPU-3c4d")
    s["process"]["env"].append("NVIDIA_DRIVER_CAPABILITIES=compute,utility")
    s["linux"]["devices"] = [{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "fileMode": 438, "uid": 0, "gid": 0},
                             {"path": "/dev/nvidiactl", "type": "c", "major": 195, "minor": 255}]
    s["hooks"] = {"prestart": [{"path": "/usr/bin/nvidia-container-runtime-hook", "args": ["nvidia-container-runtime-hook", "prestart"]}]}
    return s


def slurm():
    s = cri(size_env=0, systemd=False)
    s["process"]["env"] += ["SLURM_JOB_ID=81234", "SLURM_CPUS_PER_TASK=4", "GOMAXPROCS=3"]
    s["linux"]["cgroupsPath"] = "/slurm/uid_1000/job_81234/step_0/task_0"
    s["linux"]["resources"] = {"cpu": {"cpus": "4-7"}, "memory": {"limit": 8589934592}}
    return s


def write(path, obj, indent=None):
    with open(path, "w") as f:
        json.dump(obj, f, indent=indent)
        if indent:
            f.write("\n")


def main():
    d = os.path.join(HERE, "corpus/spec")
    write(os.path.join(d, "docker.json"), docker(), indent="\t")
    write(os.path.join(d, "containerd-cri.json"), cri(size_env=3), indent=None)
    write(os.path.join(d, "containerd-cri-cgroupfs.json"), cri(size_env=1, systemd=False), indent=2)
    write(os.path.join(d, "podman.json"), podman(), indent="\t")
    write(os.path.join(d, "crio.json"), crio(), indent="\t")
    write(os.path.join(d, "gpu.json"), gpu())
    write(os.path.join(d, "slurm-pyxis.json"), slurm(), indent=1)
    small = cri(size_env=0)
    small["linux"]["seccomp"] = seccomp(full=False)
    small["annotations"]["resview.io/lxcfs"] = "false"
    write(os.path.join(d, "cri-lxcfs-off.json"), small)
    # the benchmark's Kubernetes-like spec: about 20 KB
    k8s = cri(size_env=40)
    write(os.path.join(TOP, "tests/samples/k8s-spec.json"), k8s, indent=2)


if __name__ == "__main__":
    main()
