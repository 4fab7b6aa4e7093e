#!/bin/bash
# 44-chain.sh - chaining with nvidia-container-runtime (a stand-in that behaves
# like it: tests/lib/fake-nvidia-runtime), in both orders and with both
# configured to call each other: both sets of edits reach runc, each hook is
# in config.json once, no loop, the container runs.
source "$(dirname "$0")/../lib/common.sh"
NV=$TOP/tests/lib/fake-nvidia-runtime
export FAKE_NVIDIA_LOG=$T/nvidia.log
n=0

# chain NAME ENTRY(resview|nvidia) RESVIEW_RUNTIMES_JSON NVIDIA_RUNTIMES NVIDIA_CALLS
chain() {
    local name=$1 entry=$2 rvr=$3 nvr=$4 calls=$5 b=$T/$1 out rc
    n=$((n + 1))
    rv_bundle "$b" '.process.args = ["/bin/env"] | .linux.resources.cpu = {quota: 150000, period: 100000}'
    rv_config "$T/$name.json" "{\"runtimes\": $rvr}"
    : >"$FAKE_NVIDIA_LOG"
    local first=$RUNTIME; [ "$entry" = nvidia ] && first=$NV
    out=$(cd "$b" && RESVIEW_CONFIG=$T/$name.json FAKE_NVIDIA_RUNTIMES=$nvr \
          timeout 120 "$first" --root "$T/runc-root" run "chain$n-$$" 2>&1); rc=$?
    t_eq "$name: the container ran (no loop)" "$rc" "0"
    t_contains "$name: resview's edit reached runc (GOMAXPROCS=2)" "$out" "GOMAXPROCS=2"
    t_contains "$name: nvidia's edit reached runc (its variable)" "$out" "NVIDIA_FAKE_EDIT=1"
    t_eq "$name: nvidia's hook in config.json once" \
        "$(jq --arg p "$NV" '[.hooks[]?[]? | select(.path == $p)] | length' "$b/config.json")" "1"
    t_eq "$name: resview's hook in config.json once" \
        "$(jq --arg p "$HOOK" '[.hooks[]?[]? | select(.path == $p)] | length' "$b/config.json")" "1"
    t_eq "$name: nvidia's hook ran once" "$(grep -c '^hook ' "$FAKE_NVIDIA_LOG")" "1"
    t_eq "$name: the variable is set once" "$(grep -c '^GOMAXPROCS=' <<<"$out")" "1"
    t_eq "$name: nvidia was called $calls time(s)" "$(grep -c '^runtime run' "$FAKE_NVIDIA_LOG")" "$calls"
}

# resview in front: resview -> nvidia -> runc
chain resview-first resview "[\"$NV\", \"runc\"]" runc 1
# nvidia in front: nvidia -> resview -> runc
chain nvidia-first nvidia '["runc"]' "$RUNTIME:runc" 1
# misconfiguration: each names the other first; entered through resview ...
# (resview -> nvidia -> resview, which skips nvidia as already called -> runc)
chain loop-from-resview resview "[\"$NV\", \"runc\"]" "$RUNTIME:runc" 1
# ... and through nvidia
# (nvidia -> resview -> nvidia -> resview, which skips nvidia -> runc)
chain loop-from-nvidia nvidia "[\"$NV\", \"runc\"]" "$RUNTIME:runc" 2

# each only names the other: a clear error, not a hang
rv_bundle "$T/dead" '.process.args = ["/bin/true"]'
rv_config "$T/dead.json" "{\"runtimes\": [\"$NV\"]}"
out=$(cd "$T/dead" && RESVIEW_CONFIG=$T/dead.json FAKE_NVIDIA_RUNTIMES=$RUNTIME \
      timeout 120 "$RUNTIME" --root "$T/runc-root" run "dead-$$" 2>&1); rc=$?
t_ok "only each other: fails (no loop)" test "$rc" -ne 0 -a "$rc" -ne 124
t_contains "only each other: says the chain came back" "$out" "already called earlier in this chain"
