#!/bin/bash
# FUSE grant: what it adds to a container start (interleaved medians), and
# the in-process cost of the edit alone (tests/fuse/edit-cost.c). Arms: plain
# runc; plain runc with docker's profile shape (runc's own cost of compiling a
# seccomp filter); resview without a request; resview with the FUSE request on
# a spec without seccomp (loads profiles/seccomp.json); resview with the
# request on docker's profile shape. No thresholds.
source "$(dirname "$0")/../lib/common.sh"
ROUNDS=${ROUNDS:-100}
SHIM=$BUILD/static/resview-runtime
[ -x "$SHIM" ] || SHIM=$BUILD/resview-runtime
rv_config "$T/config.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" \
    '{log: {level: "warn"}, fuse: {seccomp_profile: $p}, runtimes: ["runc"]}')"
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
echo "== FUSE grant: start latency, runc vs $(basename "$(dirname "$SHIM")")/resview-runtime"
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
echo "== FUSE grant: in-process cost of the edit (parse + grant + serialize, 1000 times)"
gcc -std=gnu11 -O2 -Iinclude $(pkg-config --cflags jansson) -o "$T/edit-cost" "$TOP/tests/fuse/edit-cost.c" \
    "$BUILD/libresview.a" $(pkg-config --libs jansson libseccomp) || exit 1
echo "spec without seccomp (loads profiles/seccomp.json):"
"$T/edit-cost" "$T/bundle-resview+fuse/config.pristine" "$TOP/profiles/seccomp.json" 1000
echo "spec with docker's profile shape:"
"$T/edit-cost" "$T/bundle-resview+fuse+docker/config.pristine" "$TOP/profiles/seccomp.json" 1000
