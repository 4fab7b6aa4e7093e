#!/bin/bash
# FUSE (profiles/README.md "Cost"), five figures, no thresholds:
# 1. the start latency a FUSE container adds (interleaved medians): plain runc;
#    runc with docker's profile shape (runc's own cost of a seccomp filter);
#    resview without a request; resview with the request on a spec without
#    seccomp (loads profiles/seccomp.json) and on docker's profile shape (both
#    start a broker); and the in-process cost of the edit alone;
# 2. one FUSE mount (and mount + umount) through the broker, against the same
#    mount made by a process that holds CAP_SYS_ADMIN itself (plain runc, the
#    capability, /dev/fuse, no filter): tests/fuse/fuse-probe.c's loop, in a
#    container either way;
# 3. the memory of the brokers of 100 FUSE containers (RSS and PSS of every
#    broker process: a supervisor and a worker each);
# 4. the kernel memory of one FUSE mount (superblock, connection, mount),
#    and whose cgroup pays it: the container's, the runtime's;
# 5. the caps' bookkeeping per mount (the node's table: count, and at a cap
#    the lookup of every held file system in fusectl).
source "$(dirname "$0")/../lib/common.sh"
source "$TOP/tests/fuse/lib.sh"
ROUNDS=${ROUNDS:-100}
MOUNTS=${MOUNTS:-2000}
CONTAINERS=${CONTAINERS:-100}
SHIM=$BUILD/static/resview-runtime
[ -x "$SHIM" ] || SHIM=$BUILD/resview-runtime
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" \
    '{log: {level: "warn"}, fuse: {allowed: true, seccomp_profile: $p}, runtimes: ["runc"]}')"
printf '#!/bin/sh\nRESVIEW_CONFIG=%s exec %s "$@"\n' "$T/config.json" "$SHIM" >"$T/shim"
chmod +x "$T/shim"
lx='.process.args = ["/bin/true"] | .annotations["resview.io/lxcfs"] = "false"'
rv_bundle "$T/bundle-runc" "$lx"
rv_bundle "$T/bundle-runc+docker" "$lx"
rv_bundle "$T/bundle-resview" "$lx"
rv_bundle "$T/bundle-resview+fuse" "$lx | .annotations[\"resview.io/fuse\"] = \"true\""
rv_bundle "$T/bundle-resview+fuse+docker" "$lx | .annotations[\"resview.io/fuse\"] = \"true\""
jq --slurpfile p "$TOP/tests/fuse/profiles/docker-default.json" '.linux.seccomp = $p[0]' \
    "$T/bundle-resview+fuse+docker/config.json" >"$T/c.json" && mv "$T/c.json" "$T/bundle-resview+fuse+docker/config.json"
jq --slurpfile p "$TOP/tests/fuse/profiles/docker-default.json" '.linux.seccomp = $p[0]' \
    "$T/bundle-runc+docker/config.json" >"$T/c.json" && mv "$T/c.json" "$T/bundle-runc+docker/config.json"
for a in runc runc+docker resview resview+fuse resview+fuse+docker; do cp "$T/bundle-$a/config.json" "$T/bundle-$a/config.pristine"; done
echo "== FUSE: start latency, runc vs $(basename "$(dirname "$SHIM")")/resview-runtime (the FUSE arms start a broker)"
# Interleaved create+start+wait+delete; stdio to files (a pipe would be held
# open by `runc init` until start).
/usr/bin/python3 - "$ROUNDS" "$T" "runc=runc --root $T/r1" "runc+docker=runc --root $T/r5" "resview=$T/shim --root $T/r2" \
    "resview+fuse=$T/shim --root $T/r3" "resview+fuse+docker=$T/shim --root $T/r4" <<'PY' || exit 1
import os, random, shutil, statistics, subprocess, sys, time
rounds, work = int(sys.argv[1]), sys.argv[2]
arms = [a.split("=", 1) for a in sys.argv[3:]]
times = {n: [] for n, _ in arms}
log = open(os.path.join(work, "bench.err"), "w")
def run(cmd, out=subprocess.DEVNULL):
    if subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=log).returncode:
        log.flush(); sys.exit("bench: %s failed: %s" % (" ".join(cmd), open(log.name).read()[-300:]))
for i in range(rounds + 3):
    order = list(arms); random.shuffle(order)
    for name, prefix in order:
        b = os.path.join(work, "bundle-" + name)
        shutil.copyfile(os.path.join(b, "config.pristine"), os.path.join(b, "config.json"))
        cmd, cid = prefix.split(), "fb-%s-%d" % (name.replace("+", "-"), i)
        t0 = time.perf_counter_ns()
        run(cmd + ["create", "--bundle", b, cid]); run(cmd + ["start", cid])
        with open(os.path.join(work, "bench.state"), "w+") as st:
            for _ in range(5000):
                st.seek(0); st.truncate(); run(cmd + ["state", cid], st); st.seek(0)
                if '"stopped"' in st.read(): break
        run(cmd + ["delete", cid])
        if i >= 3: times[name].append((time.perf_counter_ns() - t0) / 1e6)
base = statistics.median(times["runc"])
for name, _ in arms:
    m = statistics.median(times[name])
    print("%-22s median %7.2f ms  (+%.2f ms, x%.3f over runc, %d rounds)" % (name, m, m - base, m / base, rounds))
PY
echo "== FUSE: in-process cost of the edit (parse + grant + serialize, 1000 times)"
gcc -std=gnu11 -O2 -Iinclude $(pkg-config --cflags jansson) -o "$T/edit-cost" "$TOP/tests/fuse/edit-cost.c" \
    "$BUILD/libresview.a" $(pkg-config --libs jansson libseccomp) || exit 1
echo "spec without seccomp (loads profiles/seccomp.json):"
"$T/edit-cost" "$T/bundle-resview+fuse/config.pristine" "$TOP/profiles/seccomp.json" 1000
echo "spec with docker's profile shape:"
"$T/edit-cost" "$T/bundle-resview+fuse+docker/config.pristine" "$TOP/profiles/seccomp.json" 1000

echo
echo "== FUSE: one mount through the broker vs the same mount by a process with CAP_SYS_ADMIN ($MOUNTS mounts, each unmounted)"
echo "   (userns: the broker's mount for a container in its own user namespace, made as that namespace;"
echo "    user: by uid 1000 of the container, whom a child of the broker checks as fusermount would)"
fuse_probe_build || exit 1
fuse_rootfs "$T/rootfs"
for arm in broker userns user direct; do
    rv_bundle "$T/m-$arm" ".root.path = \"$T/rootfs\" | .root.readonly = true
        | .process.args = [\"fuse-probe\", \"loop\", \"/mnt/fuse\", \"$MOUNTS\"]
        | .annotations[\"resview.io/lxcfs\"] = \"false\""
done
jq '.annotations["resview.io/fuse"] = "true"' "$T/m-broker/config.json" >"$T/c.json" && mv "$T/c.json" "$T/m-broker/config.json"
# ids 0-65535 as 100000+, on a copy of the rootfs they own; the host's
# /dev/fuse as udev makes it (runc binds it in)
chmod 0755 "$T"
cp -a "$T/rootfs" "$T/rootfs-userns" && chown -R 100000:100000 "$T/rootfs-userns"
t_cleanup "chmod $(stat -c %a /dev/fuse) /dev/fuse"
chmod 0666 /dev/fuse
jq --arg r "$T/rootfs-userns" '.annotations["resview.io/fuse"] = "true" | .root.path = $r
    | .linux.namespaces += [{type: "user"}] | .mounts |= map(select(.type != "cgroup"))
    | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
    | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]' \
    "$T/m-userns/config.json" >"$T/c.json" && mv "$T/c.json" "$T/m-userns/config.json"
cp -a "$T/rootfs" "$T/rootfs-user" && chown 1000:1000 "$T/rootfs-user/mnt/fuse"
jq --arg r "$T/rootfs-user" '.annotations["resview.io/fuse"] = "true" | .root.path = $r | .root.readonly = false
    | .process.args = ["fuse-probe", "as", "1000", "1000"] + .process.args[1:]
    | .process.capabilities |= with_entries(.value += ["CAP_SETUID", "CAP_SETGID"])' \
    "$T/m-user/config.json" >"$T/c.json" && mv "$T/c.json" "$T/m-user/config.json"
jq '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])
    | .linux.devices += [{path: "/dev/fuse", type: "c", major: 10, minor: 229, fileMode: 438, uid: 0, gid: 0}]
    | .linux.resources.devices += [{allow: true, type: "c", major: 10, minor: 229, access: "rwm"}]' \
    "$T/m-direct/config.json" >"$T/c.json" && mv "$T/c.json" "$T/m-direct/config.json"
for round in 1 2 3; do
    for arm in broker userns user direct; do
        if [ $arm != direct ]; then out=$(cd "$T/m-$arm" && "$T/shim" --root "$T/rm" run "m-$arm-$round" 2>&1)
        else out=$(cd "$T/m-$arm" && runc --root "$T/rm" run "m-$arm-$round" 2>&1); fi
        grep -q "ok $MOUNTS" <<<"$out" || { echo "bench: $arm: $out" >&2; exit 1; }
        sed -n "s/^loop-time /$arm /p" <<<"$out" >>"$T/mounts"
    done
done
/usr/bin/python3 - "$T/mounts" <<'PY'
import re, statistics, sys
arms = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) mount\+umount (\d+) us, mount (\d+) us", line)
    arms.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
b = [statistics.median(x) for x in zip(*arms["broker"])]
u = [statistics.median(x) for x in zip(*arms["userns"])]
n = [statistics.median(x) for x in zip(*arms["user"])]
d = [statistics.median(x) for x in zip(*arms["direct"])]
for i, what in ((1, "mount         "), (0, "mount + umount")):
    print("%s  broker %6.0f us  userns %6.0f us  user %6.0f us  direct (CAP_SYS_ADMIN) %6.0f us"
          "  added %+6.0f / %+6.0f / %+6.0f us" % (what, b[i], u[i], n[i], d[i], b[i] - d[i], u[i] - d[i], n[i] - d[i]))
PY

echo
echo "== FUSE: memory of the brokers of $CONTAINERS FUSE containers (each with a FUSE mount, sleeping)"
mkdir -p "$T/ctl"
for i in $(seq 1 "$CONTAINERS"); do
    rv_bundle "$T/c/$i" ".root.path = \"$T/rootfs\" | .root.readonly = true
        | .process.args = [\"/bin/sh\", \"-c\", \"fuse-probe mount /mnt/fuse >/dev/null; touch /ctl/$i; while [ ! -e /ctl/stop ]; do sleep 1; done\"]
        | .annotations[\"resview.io/lxcfs\"] = \"false\" | .annotations[\"resview.io/fuse\"] = \"true\"
        | .mounts += [{destination: \"/ctl\", type: \"bind\", source: \"$T/ctl\", options: [\"rbind\", \"rw\"]}]"
    (cd "$T/c/$i" && "$T/shim" --root "$T/rc" run -d "c-$i" >/dev/null 2>&1 </dev/null)
done
t_cleanup "touch $T/ctl/stop; for c in \$(seq 1 $CONTAINERS); do runc --root $T/rc delete -f c-\$c; done"
for _ in $(seq 1 600); do [ "$(ls "$T/ctl" | wc -l)" -ge "$CONTAINERS" ] && break; sleep 0.1; done
pids=$(pgrep -f "resview-fuse-broker --id c-[0-9]* .*$T/")
rss=0 pss=0 n=0
for p in $pids; do
    rss=$((rss + $(awk '/^Rss:/ {print $2}' "/proc/$p/smaps_rollup")))
    pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup")))
    n=$((n + 1))
done
echo "$(ls "$T/ctl" | wc -l) containers with a FUSE mount, $n broker processes"
printf 'RSS %d KiB in total (%d KiB per container); PSS %d KiB in total (%d KiB per container)\n' \
    "$rss" $((rss / CONTAINERS)) "$pss" $((pss / CONTAINERS))
touch "$T/ctl/stop"

echo
echo "== FUSE: kernel memory per FUSE mount, and who pays (64 mounts, kept)"
kmem() { cat "/sys/fs/cgroup/memory$1/memory.kmem.usage_in_bytes" 2>/dev/null || cat "/sys/fs/cgroup$1/memory.current"; }
rtcg=/resview-test/$(basename "$T")/runtime
mkdir -p "$T/kvol"
mkdir -p "/sys/fs/cgroup/memory$rtcg" 2>/dev/null
rv_bundle "$T/k" ".root.path = \"$T/rootfs\" | .root.readonly = true
    | .process.args = [\"/bin/sh\", \"-c\", \"touch /ctl/k-up; while [ ! -e /ctl/k-go ]; do sleep 0.1; done; fuse-probe mounts /vol/m 64 >/ctl/k-out; touch /ctl/k-done; while [ ! -e /ctl/k-end ]; do sleep 0.1; done\"]
    | .mounts += [{destination: \"/vol\", type: \"bind\", source: \"$T/kvol\", options: [\"rbind\", \"rw\"]}]
    | .annotations[\"resview.io/lxcfs\"] = \"false\" | .annotations[\"resview.io/fuse\"] = \"true\"
    | .mounts += [{destination: \"/ctl\", type: \"bind\", source: \"$T/ctl\", options: [\"rbind\", \"rw\"]}]"
(echo $BASHPID >"/sys/fs/cgroup/memory$rtcg/cgroup.procs" 2>/dev/null; cd "$T/k" && "$T/shim" --root "$T/rc" run k >/dev/null 2>&1 </dev/null) &
for _ in $(seq 1 300); do [ -e "$T/ctl/k-up" ] && break; sleep 0.1; done
c0=$(kmem "$CG_PARENT/k"); r0=$(kmem "$rtcg")
touch "$T/ctl/k-go"
for _ in $(seq 1 300); do [ -e "$T/ctl/k-done" ] && break; sleep 0.1; done
c1=$(kmem "$CG_PARENT/k"); r1=$(kmem "$rtcg")
touch "$T/ctl/k-end"; wait
echo "$(cat "$T/ctl/k-out")"
printf 'per mount: container %d bytes, runtime (and broker) %d bytes\n' $(( (c1 - c0) / 64 )) $(( (r1 - r0) / 64 ))

echo
echo "== FUSE: the caps' bookkeeping per mount, under the node's table lock (tests/fuse/held-cost.c; real FUSE file systems, fusectl)"
gcc -std=gnu11 -O2 -Iinclude -Isrc -o "$T/held-cost" "$TOP/tests/fuse/held-cost.c" "$BUILD/libresview.a" \
    $(pkg-config --libs jansson libseccomp mount) || { echo "bench: build held-cost" >&2; exit 1; }
for a in "1 64 64" "63 64 4096" "64 64 64" "64 64 4096"; do
    mkdir -p "$T/held" && "$T/held-cost" "$T/held" $a 2000 && rm -rf "$T/held"
done
