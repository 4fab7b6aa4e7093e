#!/usr/bin/python3
"""Interleaved start-latency benchmark: create+start+delete of a busybox
/bin/true container under each arm, ROUNDS times, arms in a shuffled order
each round; prints medians and the difference to each plain runtime.

usage: bench.py ROUNDS WORKDIR ARM=COMMAND... (COMMAND: runtime argv prefix,
       split on spaces, leading NAME=VALUE words are its environment, and an
       optional "|STATE-COMMAND" suffix polls for "stopped" outside resview, as
       an engine waits on the exit fifo rather than calling `state`). The
       bundle's pristine config.json is restored before every create, as an
       engine writes a fresh one; bundles live in WORKDIR (put it on tmpfs, as
       engines put bundles under /run)."""
import json, os, random, shutil, statistics, subprocess, sys, time

rounds, work = int(sys.argv[1]), sys.argv[2]
arms = [a.split("=", 1) for a in sys.argv[3:]]
# BENCH_ARMS: a regular expression, the arms to run (their runtimes with them)
if os.environ.get("BENCH_ARMS"):
    import re
    want = re.compile(os.environ["BENCH_ARMS"])
    arms = [(n, c) for n, c in arms if want.search(n) or "+" not in n]
times = {name: [] for name, _ in arms}

# Never a pipe for the container's stdio: `create` hands it to the container,
# which keeps it open until it exits.
errlog = open(os.path.join(work, "bench.err"), "w+")

def parse(prefix):
    cmd, _, poll = prefix.partition("|")
    words, env = cmd.split(), dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("/"):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    return words, env, (poll.split() or words)

def run(cmd, env=None):
    errlog.seek(0)
    errlog.truncate()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, env=env)
    if r.returncode != 0:
        errlog.seek(0)
        sys.exit("bench: %s failed: %s" % (" ".join(cmd), errlog.read().strip()))

# NRI mode (arms named nri+X, with BENCH_NRI="FAKE SOCKET PLUGIN-COMMAND"):
# the runtime's side of NRI is test_nri_conn's fake (the messages
# containerd sends, on the plugin's socket), the plugin `resview nri`; before
# create the plugin's CreateContainer answer, between create and start its
# StartContainer (the views given there), as containerd orders them.
nri = None
if os.environ.get("BENCH_NRI") and any(n.startswith("nri+") for n, _ in arms):
    fake_bin, nri_sock, plugin_cmd = os.environ["BENCH_NRI"].split(" ", 2)
    env = dict(os.environ, RESVIEW_NRI_FAKE="%s bench-sync 999999 /bench" % nri_sock)
    nri = subprocess.Popen([fake_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    def nri_say(line, want):
        nri.stdin.write(line + "\n")
        nri.stdin.flush()
        while True:
            got = nri.stdout.readline()
            if not got:
                sys.exit("bench: the fake NRI runtime ended")
            if got.startswith(want):
                return got
    while not nri.stdout.readline().startswith("listening"):
        pass
    plugin = subprocess.Popen(plugin_cmd.split(), stdout=subprocess.DEVNULL, stderr=errlog)
    nri_say("accept", "synchronized")

def nri_pid(poll, cid):
    st = subprocess.run(poll + ["state", cid], stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout
    return json.loads(st)["pid"]

# BENCH_EXEC: a static no-op, spawned and waited for 10 times each round: the
# VM's exec, the unit of the ratios below (the day's speed cancels out)
noop, execs = os.environ.get("BENCH_EXEC"), []

for i in range(rounds + 3):           # 3 warm-up rounds, not counted
    for _ in range(10 if noop else 0):
        t_exec = time.perf_counter_ns()
        os.waitpid(os.posix_spawn(noop, [noop], {}), 0)
        if i >= 3:
            execs.append((time.perf_counter_ns() - t_exec) / 1e6)
    order = list(arms)
    random.shuffle(order)
    for name, prefix in order:
        bundle = os.path.join(work, "bundle-" + name)
        shutil.copyfile(os.path.join(bundle, "config.pristine"), os.path.join(bundle, "config.json"))
        cid = "bench-%s-%d" % (name, i)
        cmd, env, poll = parse(prefix)
        t0 = time.perf_counter_ns()
        if nri and name.startswith("nri+"):
            nri_say("create " + cid, "created " + cid + " ")
        run(cmd + ["create", "--bundle", bundle, cid], env)
        if nri and name.startswith("nri+"):
            # containerd has the pid from the shim's answer: its lookup
            # here (`runc state`) is not counted
            t_pid = time.perf_counter_ns()
            pid = nri_pid(poll, cid)
            t0 += time.perf_counter_ns() - t_pid
            nri_say("start %s %d" % (cid, pid), "started " + cid + " ")
        run(cmd + ["start", cid], env)
        # /bin/true exits at once; wait for "stopped" before delete
        for _ in range(2000):
            st = subprocess.run(poll + ["state", cid], stdin=subprocess.DEVNULL, capture_output=True,
                                text=True).stdout
            if '"stopped"' in st:
                break
        run(cmd + ["delete", cid], env)
        t1 = time.perf_counter_ns()
        if i >= 3:
            times[name].append((t1 - t0) / 1e6)

if nri:
    plugin.terminate()
    plugin.wait()
    nri.stdin.close()
    nri.terminate()
    nri.wait()
med = {n: statistics.median(v) for n, v in times.items()}
print("start latency, create+start+delete of busybox /bin/true, %d interleaved rounds" % rounds)
print("%-22s %10s %10s %10s" % ("arm", "median ms", "p10 ms", "p90 ms"))
for n, v in times.items():
    q = statistics.quantiles(v, n=10)
    print("%-22s %10.2f %10.2f %10.2f" % (n, med[n], q[0], q[-1]))
# Differences: the median of the per-round differences (each round runs
# every arm once, back to back, so a slow moment of the VM weighs on both
# sides of a difference, which a difference of medians does not cancel).
def over(a, b):
    return statistics.median([x - y for x, y in zip(times[a], times[b])])
print("differences: medians of the per-round differences")
for n in med:
    base = n.split("+")[-1]
    if base != n and base in med:
        print("%-14s over %-5s: %+.2f ms median (%.3fx)" % (n, base, over(n, base), med[n] / med[base]))
for n in med:
    wrapper, _, base = n.partition("+")
    if not base or not wrapper.startswith("resview"):
        continue
    for floor in [f for f in med if f.endswith("exec+" + base)]:
        print("%-14s over %-16s: %+.2f ms median (%s's own work beyond one exec per call)"
              % (n, floor, over(n, floor), wrapper))
# The way to the views against the floor (X binding them itself from the
# spec's mounts), in bare execs of this VM (BENCH_EXEC's, same rounds).
unit = statistics.median(execs) if execs else 0
for base in [b for b in med if "+" not in b]:
    floor = "views-mounts+" + base
    if not unit or floor not in med:
        continue
    print("over %s binding the views itself (%s, %+.2f ms over %s), in bare execs (%.2f ms):"
          % (base, floor, over(floor, base), base, unit))
    for n in [n for n in med if n.endswith("+" + base) and n.split("+")[0] in ("resview", "nri", "nri-hook")]:
        print("    %-22s %+.2f ms = %+.2f execs" % (n, over(n, floor), over(n, floor) / unit))
