#!/bin/bash
# The event log never fills a disk: what one container start writes at the
# default level (info), the package's logrotate file (hooks/logrotate/resview)
# run by the real logrotate over a thousand starts' lines, the next start
# writing to the new file, no process of resview keeping a rotated file open;
# the log.max_mib backstop on a real log (the unit test test_log holds its
# races).
source "$(dirname "$0")/../lib/common.sh"
command -v logrotate >/dev/null || { echo "not ok - logrotate missing (make deps)"; exit 1; }

export LXCFS_DIR=$T/lxcfs
lxcfs_start "$LXCFS_DIR" || { echo "not ok - lxcfs did not start"; exit 1; }
t_cleanup "lxcfs_stop $LXCFS_DIR"
LOG=$T/resview.log
rv_config "$T/config.json" '{"log": {"level": "info"}}'
rv_bundle "$T/b" '.process.args = ["/bin/true"] | .linux.resources.memory.limit = 536870912'

# One start: the bytes it adds at the default level, said for the manual.
run_shim runc "log1-$$" "$T/b" >/dev/null 2>&1
one=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
echo "# one container start at log.level info wrote $one bytes:"; sed 's/^/#   /' "$LOG"
t_ok "one start writes one or two lines, under 512 bytes ($one)" test "$one" -gt 0 -a "$one" -lt 512 \
    -a "$(wc -l <"$LOG")" -le 2

# `resview watch` runs through it all, as on a node: it must not keep the log open.
RESVIEW_CONFIG=$T/config.json "$CLI" watch >"$T/watch.out" 2>&1 &
WATCH=$!
t_cleanup "kill $WATCH 2>/dev/null; wait $WATCH 2>/dev/null"

# A thousand creates by the real shim, each its own process writing its line
# (the next runtime /bin/true: the shim's part of a start, not runc's); then
# logrotate with the package's file, pointed at this log.
jq '.runtimes = ["/bin/true"]' "$T/config.json" >"$T/true.json"
cp -a "$T/b/config.json" "$T/b/config.json.orig"
t0=$(date +%s%N)
for i in $(seq 1 1000); do
    cp "$T/b/config.json.orig" "$T/b/config.json"
    RESVIEW_CONFIG=$T/true.json "$RUNTIME" --root "$T/true-root" create --bundle "$T/b" "many$i-$$" || break
done
echo "# 1000 creates by the shim: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
cp "$T/b/config.json.orig" "$T/b/config.json"
t_eq "a thousand creates, a line each" "$(grep -c "id=many[0-9]*-$$: create: " "$LOG")" 1000
before=$(wc -l <"$LOG")
sed "s|^/var/log/resview.log |$LOG |" "$TOP/hooks/logrotate/resview" >"$T/logrotate.conf"
t_contains "the package's file names the default log.file" "$(cat "$TOP/hooks/logrotate/resview")" "/var/log/resview.log {"
t_ok "logrotate -f with the package's file" logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf"
t_ok "the log moved to resview.log.1 with every line ($before)" test "$(wc -l <"$LOG.1" 2>/dev/null)" = "$before"
t_ok "no log until the next line" test ! -e "$LOG"

run_shim runc "log2-$$" "$T/b" >/dev/null 2>&1
t_contains "the next start writes to the new file" "$(cat "$LOG" 2>/dev/null)" "log2-$$"
t_ok "the rotated file got nothing more" test "$(wc -l <"$LOG.1")" = "$before"
open=$(ls -l /proc/[0-9]*/fd 2>/dev/null | grep -F "$T/resview.log" || true)
t_eq "no process keeps a resview log open (watch runs: pid $WATCH)" "$open" ""
t_ok "watch still runs" kill -0 $WATCH

# A second rotation compresses the first (delaycompress), as on a node's next day.
run_shim runc "log3-$$" "$T/b" >/dev/null 2>&1
logrotate -f -s "$T/logrotate.state" "$T/logrotate.conf"
t_ok "the day after: resview.log.2.gz, resview.log.1 plain" test -s "$LOG.2.gz" -a -s "$LOG.1"

# The backstop where nothing rotates: log.max_mib 1, a log already past it
# (as a busy node's would be): the next line closes it as resview.log.old.
rv_config "$T/capped.json" '{"log": {"level": "debug", "max_mib": 1}}'
line=$(head -n1 "$LOG.1")
rm -f "$LOG" "$LOG".*
for i in $(seq 1 9000); do printf '%s\n' "${line/log1-$$/fill$i-$$}"; done >"$LOG"
run_shim runc "cap1-$$" "$T/b" "$T/capped.json" >/dev/null 2>&1
sz=$(stat -c %s "$LOG" 2>/dev/null || echo 0) old=$(stat -c %s "$LOG.old" 2>/dev/null || echo 0)
t_ok "log.max_mib 1: past it, the log became resview.log.old ($old bytes), the start's other lines in a new one ($sz)" \
    test "$old" -gt 1048576 -a "$sz" -gt 0 -a "$sz" -lt 1048576
t_contains "log.max_mib 1: resview.log.old ends with the start's first line" "$(tail -n1 "$LOG.old")" "cap1-$$"
