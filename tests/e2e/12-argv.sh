#!/bin/bash
# 12-argv.sh - resview-runtime reads each command line as the real runc and
# crun read it: the spec it edits is the one the runtime then runs. Three
# specs: A/config.json, A/other.json and the working directory's C/config.json,
# each printing its own name; resview's edit is seen as GOMAXPROCS. A line the
# runtime refuses edits nothing.
source "$(dirname "$0")/../lib/common.sh"

rv_config "$T/config.json" "$(jq -n --arg l "$T/no-lxcfs" '{lxcfs: {root: $l}}')"
for rt in runc crun; do
    jq --arg n "$([ $rt = crun ] && echo "$CRUN_V1" || echo runc)" '.runtimes = [$n]' "$T/config.json" >"$T/config.$rt"
done
rv_bundle "$T/A" '.process.args = ["/bin/sh", "-c", "echo ran=A GOMAXPROCS=$GOMAXPROCS"]'
jq '.process.args = ["/bin/sh", "-c", "echo ran=A/other.json GOMAXPROCS=$GOMAXPROCS"]' "$T/A/config.json" >"$T/A/other.json"
rv_bundle "$T/C" '.process.args = ["/bin/sh", "-c", "echo ran=C GOMAXPROCS=$GOMAXPROCS"]'
for f in A/config.json A/other.json C/config.json; do cp "$T/$f" "$T/$f.orig"; done

n=0
# edited FILE: resview's variables are in the spec's env
edited() { [ "$(jq '[.process.env[] | select(startswith("GOMAXPROCS="))] | length' "$1")" = 1 ]; }
# argv RUNTIME WANT ARGS...: run resview-runtime with ARGS (after --root) in C;
# WANT is the spec the runtime runs, edited by resview ("-": the runtime refuses)
argv() {
    local rt=$1 want=$2 root=$T/$1-root out rc edited f
    shift 2
    n=$((n + 1))
    for f in A/config.json A/other.json C/config.json; do cp "$T/$f.orig" "$T/$f"; done
    out=$(cd "$T/C" && RESVIEW_CONFIG=$T/config.$rt timeout 60 "$RUNTIME" --root "$root" "$@" 2>&1); rc=$?
    edited=$(for f in A/config.json A/other.json C/config.json; do edited "$T/$f" && echo "$f"; done | tr '\n' ' ')
    if [ "$want" = - ]; then
        t_eq "$rt $*: refused by $rt, nothing edited" "$rc:$edited" "$rc:"
        [ "$rc" != 0 ] || echo "not ok - $rt $*: $rt was expected to refuse it"
    else
        t_eq "$rt $*: $rt runs $want, as resview edited it" "$(grep -oE "^ran=[^ ]* GOMAXPROCS=[0-9]+" <<<"$out")" \
            "ran=$want GOMAXPROCS=$(nproc)"
        t_eq "$rt $*: only $want edited" "$edited" "$([ "${want%/*}" = "$want" ] && echo "$want/config.json" || echo "$want") "
    fi
}

for rt in runc crun; do
    argv $rt A run --bundle "$T/A" c$n
    argv $rt A run -b "$T/A" c$n
    argv $rt A run --bundle="$T/A" c$n
    argv $rt C run --no-new-keyring c$n
    argv $rt C run --pid-file "$T/pid$n" c$n
    argv $rt C run -- c$n
    argv $rt A --log "$T/log" --log-format json run --bundle "$T/A" --no-pivot c$n
done
# runc (urfave/cli) takes flags after the id; crun (argp) stops at the id
argv runc A run c$n --bundle "$T/A"
argv runc A run c$n -b "$T/A" --no-pivot
argv crun - run c$n --bundle "$T/A"
# runc: after a bool flag the id ends the flags, and runc refuses the three arguments
argv runc - run --no-pivot c$n --bundle "$T/A"
# crun only: its spec file (--config: from the working directory, but config.json is
# the bundle's), abbreviations, short options with the value attached
argv crun A/other.json run -f ../A/other.json --bundle "$T/A" c$n
argv crun A run -f config.json --bundle "$T/A" c$n
argv crun - run -f other.json --bundle "$T/A" c$n
argv crun A/other.json run --config="$T/A/other.json" c$n
argv crun A run --bund "$T/A" c$n
argv crun A run -b"$T/A" c$n
argv runc - run -f other.json --bundle "$T/A" c$n
argv runc - run --bund "$T/A" c$n
# runc 1.2's --pidfd-socket takes a value (runc 1.1 refuses the flag, after the edit)
for f in A/config.json C/config.json; do cp "$T/$f.orig" "$T/$f"; done
(cd "$T/C" && RESVIEW_CONFIG=$T/config.runc "$RUNTIME" --root "$T/runc-root" run --pidfd-socket "$T/p.sock" \
    --bundle "$T/A" pf >/dev/null 2>&1)
t_ok "runc run --pidfd-socket S --bundle A: A edited, not C" sh -c "$(declare -f edited); edited '$T/A/config.json' && ! edited '$T/C/config.json'"

# create: the bundle runc records is the one edited
for f in A/config.json C/config.json; do cp "$T/$f.orig" "$T/$f"; done
(cd "$T/C" && RESVIEW_CONFIG=$T/config.runc "$RUNTIME" --root "$T/runc-root" create cr1 --bundle "$T/A" >/dev/null 2>&1)
t_eq "runc create ID --bundle A: runc's bundle" "$(runc --root "$T/runc-root" state cr1 | jq -r .bundle)" "$T/A"
t_ok "runc create ID --bundle A: A edited, C not" sh -c "$(declare -f edited); edited '$T/A/config.json' && ! edited '$T/C/config.json'"
runc --root "$T/runc-root" delete -f cr1 >/dev/null 2>&1
