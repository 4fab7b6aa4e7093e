#!/bin/bash
# Metrics (#44): a real Prometheus (Debian's, on a private port and data
# directory) scrapes `resview watch`'s /metrics; the test asks Prometheus's
# HTTP API for the series and sees them move as containers start with LXCFS
# up, opted out, with LXCFS stopped (reason lxcfs_down) and hung
# (lxcfs_hung), when watch heals them, after `resview repair` run while the
# exporter was down (the counts survive its restart). `promtool check
# metrics` lints a scrape, `promtool check rules` the alert rules of
# resview(8). A hostile tenant (8 MiB of annotations, 300 distinct
# container names) adds no series and no label value; a hung LXCFS does not
# slow a scrape. NRI mode (test_nri_conn's fake runtime): the plugin registered,
# dropped, back and stopped; containers created while it was away. A FUSE
# container's refused mount calls, counted by reason.
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/../lib/lxcfs-helpers.sh"

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    echo "not ok - prometheus and promtool (Debian's prometheus package, tests/deps.d/base.txt) are missing"
    exit 1
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MPORT=$(free_port) PPORT=$(free_port)
export LXCFS_DIR=$T/lxcfs
rv_config "$T/config.json" "{\"metrics\": {\"address\": \"127.0.0.1:$MPORT\"}}"
t_cleanup "lxcfs_stop $LXCFS_DIR"

start_watch() {
    RESVIEW_CONFIG=$T/config.json "$CLI" watch --interval 1 >>"$T/watch.out" 2>&1 & WATCH=$!
    t_cleanup "kill $WATCH"
    wait_for 10 grep -q "watching" "$T/watch.out"
}
scrape() { curl -s --max-time 5 "http://127.0.0.1:$MPORT/metrics"; }

# Prometheus: two scrapes a second of watch's endpoint
mkdir -p "$T/prom"
cat >"$T/prom.yml" <<EOF
global: {scrape_interval: 500ms, scrape_timeout: 500ms, evaluation_interval: 1s}
scrape_configs:
  - job_name: resview
    static_configs: [{targets: ["127.0.0.1:$MPORT"]}]
EOF
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/prom" \
    --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prom.out" 2>&1 & PROM=$!
t_cleanup "kill $PROM; wait $PROM"
# q EXPR: the value of an instant query (empty when none)
q() {
    curl -s --max-time 5 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
        jq -r '.data.result[0].value[1] // empty'
}
# seen NAME EXPR WANT: Prometheus's answer to EXPR becomes WANT within 20 s
seen() {
    local name=$1 expr=$2 want=$3 got
    for _ in $(seq 1 80); do got=$(q "$expr"); [ "$got" = "$want" ] && break; sleep 0.25; done
    t_eq "$name" "$got" "$want"
}
views() { echo "resview_container_views_total{views=\"$1\",reason=\"$2\"}"; }
vars() { echo "resview_container_variables_total{variables=\"$1\",reason=\"$2\"}"; }

# 1. watch up, LXCFS up; Prometheus scrapes it
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
start_watch
seen "Prometheus scrapes watch's endpoint" 'up{job="resview"}' 1
seen "resview_build_info carries the version" "resview_build_info{version=\"$("$CLI" version | awk '{print $2; exit}')\"}" 1
seen "the configuration is valid" resview_config_valid 1
seen "LXCFS up" resview_lxcfs_up 1
t_ok "the counters file is made by the exporter" test -f "$T/state/metrics"
scrape >"$T/scrape1.txt"
t_eq "promtool check metrics: no error, no warning" "$(promtool check metrics <"$T/scrape1.txt" 2>&1; echo "rc=$?")" "rc=0"

# 2. containers with views and variables (runc and crun), one opted out of both
start_bg m1-$$ && start_bg cm1-$$
seen "two containers with views" "$(views yes ok)" 2
seen "... and with variables" "$(vars yes ok)" 2
rv_bundle "$T/optout" '.annotations["resview.io/lxcfs"] = "false" | .annotations["resview.io/env"] = "false" | .process.args = ["/bin/true"]'
run_shim runc "optout-$$" "$T/optout" >/dev/null 2>&1
seen "opted out: without views, reason opted_out" "$(views no opted_out)" 1
seen "opted out: without variables, reason opted_out" "$(vars no opted_out)" 1

# 3. LXCFS stopped: a container starts without views, counted lxcfs_down
lxcfs_stop "$LXCFS_DIR"
seen "LXCFS stopped: resview_lxcfs_up 0" resview_lxcfs_up 0
start_bg down-$$
seen "LXCFS stopped: without views, reason lxcfs_down" "$(views no lxcfs_down)" 1
seen "... still with variables" "$(vars yes ok)" 3

# 4. LXCFS back: watch sees a new mount and repairs the container
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
seen "LXCFS back: up" resview_lxcfs_up 1
seen "watch saw it come back on a new mount" resview_lxcfs_restarts_total 1
t_ok "the container got its views" wait_for 20 sh -c "[ \"\$(runc --root $T/runc-root exec down-$$ grep MemTotal /proc/meminfo | awk '{print \$2}')\" = 524288 ]"
seen "watch's repairs counted (the three running containers)" 'resview_repair_containers_total{result="repaired"}' 3

# 5. LXCFS hung (stopped; its last answer to watch's prober older than
#    1.5 s): at `start` watch does not vouch for it, a start without views,
#    reason lxcfs_down (nothing asks LXCFS there); the hook (`run`) asks it
#    itself (viewhold.h): reason lxcfs_hung. A scrape is not slowed by it (it
#    never asks LXCFS)
kill -STOP "$LXCFS_PID"
t_cleanup "kill -CONT $LXCFS_PID"
sleep 2
start_bg hung-$$
seen "LXCFS hung, at start: without views, reason lxcfs_down" "$(views no lxcfs_down)" 2
run_bg hungr-$$
seen "LXCFS hung, the hook: without views, reason lxcfs_hung" "$(views no lxcfs_hung)" 1
slow=0
for _ in 1 2 3 4 5; do
    s=$(curl -s -o /dev/null --max-time 5 -w '%{time_total}' "http://127.0.0.1:$MPORT/metrics")
    awk -v s="$s" 'BEGIN { exit !(s < 0.25) }' || slow=$((slow + 1))
done
t_eq "LXCFS hung: five scrapes, each under 250 ms" "$slow" 0
t_ok "LXCFS hung: Prometheus's scrapes still succeed" sh -c "sleep 2; [ \"\$(curl -s 'http://127.0.0.1:$PPORT/api/v1/query' --data-urlencode 'query=up{job=\"resview\"}' | jq -r '.data.result[0].value[1]')\" = 1 ]"
kill -CONT "$LXCFS_PID"

# 6. `resview repair` while the exporter is down: counted in the file, and
#    every count survives the exporter's restart
for id in hung-$$ hungr-$$; do
    t_ok "watch heals the hung ones first ($id)" wait_for 20 sh -c "[ \"\$(runc --root $T/runc-root exec $id grep MemTotal /proc/meminfo | awk '{print \$2}')\" = 524288 ]"
done
seen "watch's repair of those counted" 'resview_repair_containers_total{result="repaired"}' 5
repaired_before=5
kill "$WATCH"; wait "$WATCH" 2>/dev/null
seen "exporter stopped: Prometheus sees it down" 'up{job="resview"}' 0
kill -9 "$LXCFS_PID"; wait "$LXCFS_PID" 2>/dev/null
lxcfs_stop "$LXCFS_DIR"; lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not restart"; exit 1; }
out=$(RESVIEW_CONFIG=$T/config.json "$CLI" repair 2>&1)
n=$(sed -n 's/.*repaired \([0-9]*\).*/\1/p' <<<"$out" | tail -1)
t_ok "resview repair repaired the running containers ($n)" test "${n:-0}" -ge 5
start_watch
seen "exporter back: scraped" 'up{job="resview"}' 1
seen "the repairs of resview repair counted" 'resview_repair_containers_total{result="repaired"}' "$((repaired_before + n))"
seen "counts from before the exporter's restart kept" "$(views yes ok)" 2

# 7. A hostile tenant: 8 MiB of annotations, thousands of distinct container
#    names (METRICS_NAMES, 2000) (the shim's create, next runtime /bin/true): no new series, no
#    label value of theirs, the scrape the same size
series() {
    curl -s "http://127.0.0.1:$PPORT/api/v1/series" --data-urlencode 'match[]={__name__=~"resview_.*"}' |
        jq -c '.data[] | del(.instance, .job)' | sort
}
shape() { scrape | sed 's/ [0-9.e+-]*$//' | sort; }
sleep 1.5
series >"$T/series.before"
shape >"$T/shape.before"
jq '.runtimes = ["/bin/true"]' "$T/config.json" >"$T/config.true"
head -c 3000000 /dev/urandom | base64 -w0 >"$T/big.txt"   # 4 MiB
rv_bundle "$T/small" '.process.args = ["/bin/true"]'
rv_bundle "$T/hostile" '.annotations["io.kubernetes.pod.name"] = "tenant-\"}x{evil=\"1\n"'
jq --rawfile v "$T/big.txt" '.annotations.big = $v | .annotations.big2 = $v' "$T/hostile/config.json" >"$T/h.json" &&
    mv "$T/h.json" "$T/hostile/config.json"
vars_before=$(q "$(vars yes ok)")
NAMES=${METRICS_NAMES:-2000}   # ~10 ms each here
t0=$(date +%s%N)
for i in $(seq 1 "$NAMES"); do
    b=$T/small; [ $((i % 100)) -eq 1 ] && b=$T/hostile   # some with 8 MiB of annotations
    RESVIEW_CONFIG=$T/config.true "$RUNTIME" --root "$T/r" create --bundle "$b" "tenant-$i-$RANDOM$RANDOM" \
        </dev/null >/dev/null 2>&1
done
echo "# $NAMES creates in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
seen "$NAMES creates counted" "$(vars yes ok)" "$((vars_before + NAMES))"
sleep 1.5
series >"$T/series.after"
shape >"$T/shape.after"
t_eq "hostile tenant: the same series in Prometheus ($(wc -l <"$T/series.before"))" "$(diff "$T/series.before" "$T/series.after")" ""
t_eq "hostile tenant: the same scrape, line for line (values aside)" "$(diff "$T/shape.before" "$T/shape.after")" ""
t_not_contains "hostile tenant: no name of theirs in a scrape" "$(scrape)" "tenant-"
t_not_contains "hostile tenant: no annotation of theirs in a scrape" "$(scrape)" "evil"
t_eq "promtool check metrics: still clean" "$(scrape | promtool check metrics 2>&1; echo "rc=$?")" "rc=0"

# 8. The documented alert rules (resview(8), "MONITORING") load in promtool,
#    and their expressions evaluate against this Prometheus
awk '/^```yaml/ && seen { on = 1; next } /^```/ { on = 0 } on { print } /alert rules/ { seen = 1 }' \
    "$TOP/src/cli/resview.8.md" >"$T/alerts.yml"
t_contains "the rules are in resview.8.md" "$(cat "$T/alerts.yml")" "ResviewContainersWithoutViews"
t_eq "promtool check rules: the documented rules" "$(promtool check rules "$T/alerts.yml" 2>&1 | grep -c 'SUCCESS: 3 rules found')" 1
bad=0
while read -r expr; do
    r=$(curl -s "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$expr" | jq -r .status)
    [ "$r" = success ] || { echo "# $expr: $r"; bad=$((bad + 1)); }
done < <(sed -n 's/^ *expr: *//p' "$T/alerts.yml")
t_eq "each rule's expression evaluates" "$bad" 0

# 9. NRI mode (the runtime's side: test_nri_conn's fake, as 57-nri-sync.sh):
#    a container created while the plugin was away is counted at
#    Synchronize; the plugin registered, dropped by the runtime, back, and
#    stopped; the documented alert's expression fires once it is gone
FAKE=$BUILD/tests/test_nri_conn
if [ ! -x "$FAKE" ]; then
    echo "not ok - $FAKE missing: make BUILD=$BUILD $FAKE"
else
    id=away-$$ SOCK=$T/nri.sock
    rv_bundle "$T/b-$id" ".process.args = [\"/bin/sleep\", \"3600\"] | $LIMITS"
    (cd "$T/b-$id" && runc --root "$T/runc-root" create "$id" </dev/null >/dev/null 2>&1 && runc --root "$T/runc-root" start "$id")
    mkfifo "$T/fake.in"
    RESVIEW_NRI_FAKE="$SOCK $id $(pid_of "$id") $CG_PARENT/b-$id" "$FAKE" <"$T/fake.in" >"$T/fake.out" 2>&1 & FAKE_PID=$!
    exec 7>"$T/fake.in"
    t_cleanup "kill $FAKE_PID"
    wait_for 10 grep -q "^listening" "$T/fake.out"
    RESVIEW_CONFIG=$T/config.json "$CLI" nri --socket "$SOCK" >"$T/nri.out" 2>&1 & PLUGIN=$!
    t_cleanup "kill $PLUGIN"
    echo accept >&7
    seen "NRI: the plugin registered" resview_nri_registered 1
    seen "NRI: created while it was away: without views, reason nri_away" "$(views no nri_away)" 1
    seen "... and without variables, reason nri_away" "$(vars no nri_away)" 1
    seen "NRI: its calls timed (Configure, Synchronize)" 'resview_nri_call_duration_seconds_count >= bool 2' 1
    echo close >&7
    seen "NRI: the runtime dropped it: not registered" resview_nri_registered 0
    echo accept >&7
    seen "NRI: back: registered" resview_nri_registered 1
    kill "$PLUGIN"; wait "$PLUGIN" 2>/dev/null
    seen "NRI: the plugin stopped: not registered" resview_nri_registered 0
    seen "NRI: the alert's expression fires" \
        'count(resview_nri_registered == 0 and on (instance) resview_nri_call_duration_seconds_count > 0)' 1
    exec 7>&-
fi

# 10. The FUSE broker's answers: a FUSE container (no capability added)
#     asks for a tmpfs mount twice and to unmount /proc: refused, counted by
#     reason, not by what it asked
rv_config "$T/config-fuse.json" "$(jq -n --arg p "$TOP/profiles/seccomp.json" --arg m "127.0.0.1:$MPORT" \
    '{fuse: {allowed: true, seccomp_profile: $p}, metrics: {address: $m}}')"
rv_bundle "$T/fuse" '.annotations["resview.io/fuse"] = "true" | .annotations["resview.io/lxcfs"] = "false"
    | .process.args = ["/bin/sh", "-c", "mount -t tmpfs none /tmp; mount -t tmpfs tenant-x /tmp; umount /proc; echo asked"]'
out=$(run_shim runc "fuse-$$" "$T/fuse" "$T/config-fuse.json" 2>&1)
t_contains "a FUSE container asked the broker" "$out" "asked"
seen "the broker's three refusals counted, reason not_allowed" \
    'sum(resview_fuse_calls_total{result="refused",reason="not_allowed"})' 3
t_not_contains "no name of theirs in a scrape" "$(scrape)" "tenant-x"

kill "$WATCH"; wait "$WATCH"; rc=$?
t_eq "watch exits 0 on SIGTERM, its endpoint with it" "$rc" 0
