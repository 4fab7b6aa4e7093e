#!/bin/bash
# 40-configure.sh - `resview configure` round trips through the CLI on sample
# files of every format (tests/samples: comments, other runtimes, unusual but
# valid TOML, no final newline): twice = once, byte-for-byte restored by
# --uninstall, --dry-run writes nothing, invalid input refused and untouched.
source "$(dirname "$0")/../lib/common.sh"
S=$TOP/tests/samples
RT=/opt/resview/bin/resview-runtime

round() { # ENGINE SAMPLE [--set-as-default]
    local e=$1 f=$T/$2 d=${3:-}
    cp "$S/$2" "$f"
    "$CLI" configure --engine="$e" --config "$f" --runtime-path "$RT" --dry-run $d >"$T/dry.out" 2>&1
    t_ok "$e $2: --dry-run leaves the file alone" cmp "$f" "$S/$2"
    t_contains "$e $2: --dry-run shows the entry" "$(cat "$T/dry.out")" "$RT"
    t_ok "$e $2: configure $d" "$CLI" configure --engine="$e" --config "$f" --runtime-path "$RT" $d
    cp "$f" "$f.once"
    out=$("$CLI" configure --engine="$e" --config "$f" --runtime-path "$RT" $d 2>&1)
    t_ok "$e $2: twice = once" cmp "$f" "$f.once"
    t_contains "$e $2: says nothing to change" "$out" "nothing to change"
    t_ok "$e $2: backup is the original" cmp "$f.resview-backup" "$S/$2"
    t_ok "$e $2: --uninstall" "$CLI" configure --engine="$e" --config "$f" --uninstall
    t_ok "$e $2: byte-for-byte restored" cmp "$f" "$S/$2"
}
refuse() { # ENGINE SAMPLE MESSAGE
    local e=$1 f=$T/$2
    cp "$S/$2" "$f"
    out=$("$CLI" configure --engine="$e" --config "$f" --runtime-path "$RT" 2>&1); rc=$?
    t_eq "$e $2: refused (exit 1)" "$rc" "1"
    t_contains "$e $2: clear error" "$out" "$3"
    t_ok "$e $2: untouched" cmp "$f" "$S/$2"
}

round containerd containerd-v2.toml --set-as-default
round containerd containerd-v3.toml --set-as-default
round containerd containerd-noeol.toml
round containerd containerd-debian.toml --set-as-default
round crio crio.conf --set-as-default
round podman containers.conf --set-as-default
round docker daemon.json --set-as-default
round slurm oci.conf
# the operator's lines and comments that look like resview's markers survive both ways
round containerd containerd-lookalike.toml --set-as-default

refuse containerd containerd-v1.toml "containerd config migrate"
refuse containerd containerd-dotted.toml "dotted keys"
refuse containerd containerd-taken.toml "not written by resview"
refuse containerd bad-duplicate.toml "line 4: duplicate table"
refuse crio bad-string.toml "line 3: unterminated string"
refuse podman bad-array.toml "not valid TOML"
refuse docker bad-daemon.json "daemon.json"
refuse slurm bad-oci.conf "expected \`Key=Value\`"
# a runtimes.resview entry resview did not write is neither taken over nor removed
refuse docker daemon-foreign.json "not written by resview"
cp "$S/daemon-foreign.json" "$T/foreign.json"
"$CLI" configure --engine=docker --config "$T/foreign.json" --uninstall >/dev/null 2>&1
t_ok "docker daemon-foreign.json: --uninstall leaves the operator's entry and default-runtime" cmp "$T/foreign.json" "$S/daemon-foreign.json"

# What resview 0.1.0 wrote: tests/samples/v0.1 holds files made by its real
# binary (generate.sh there; committed because CI's checkout may have no history
# to build 0.1 from). configure takes 0.1's entries over (its backup kept, twice
# = once); --uninstall gives back the original byte for byte, or removes a file
# 0.1 created, also straight from 0.1's file.
V=$S/v0.1
mkdir -p "$T/v01/hooks"
up() { # ENGINE NAME [args]
    local e=$1 n=$2 f=$T/v01/$2 b=$V/$2.resview-backup; shift 2
    local c=("$CLI" configure --engine="$e" --config "$f" --hooks-dir "$T/v01/hooks")
    for direct in 0 1; do
        rm -f "$f.resview-backup"; cp "$V/$n" "$f"; [ ! -e "$b" ] || cp "$b" "$f.resview-backup"
        if [ $direct = 0 ]; then
            t_ok "0.1 $n: configure over it" "${c[@]}" --runtime-path "$RT" --hook-path /opt/resview/bin/resview-hook "$@"
            t_ok "0.1 $n: none of 0.1's markers left" sh -c "! grep -Eq 'resview-(begin|was):|resview-added\$' '$f'"
            if [ -e "$b" ]; then t_ok "0.1 $n: 0.1's backup kept" cmp "$f.resview-backup" "$b"
            else t_ok "0.1 $n: no backup of a file resview created" test ! -e "$f.resview-backup"; fi
            cp "$f" "$f.once"
            "${c[@]}" --runtime-path "$RT" --hook-path /opt/resview/bin/resview-hook "$@" >/dev/null 2>&1
            t_ok "0.1 $n: twice = once" cmp "$f" "$f.once"
        fi
        t_ok "0.1 $n: --uninstall$([ $direct = 0 ] || echo " straight from 0.1's file")" "${c[@]}" --uninstall
        if [ -e "$b" ]; then t_ok "0.1 $n: byte-for-byte the original" cmp "$f" "$b"
        # (resview was dockerd's default: dockerd's own is written, since its
        # reload keeps a default no file sets)
        elif [ "$n" = new-daemon.json ]; then
            t_eq "0.1 $n: only dockerd's own default runtime is left" "$(jq -c . "$f")" '{"default-runtime":"runc"}'
        else t_ok "0.1 $n: the file 0.1 created is removed" test ! -e "$f"; fi
    done
}
up containerd containerd-v2.toml --set-as-default
up containerd containerd-v3.toml --set-as-default
up containerd containerd-noeol.toml
up containerd containerd-debian.toml --set-as-default
up crio crio.conf --set-as-default
up podman containers.conf --set-as-default
up podman containers-empty.conf
up docker daemon.json --set-as-default
up slurm oci.conf
up containerd new-containerd.toml --set-as-default
up crio new-crio.conf
up docker new-daemon.json --set-as-default
up slurm new-oci.conf --slurm-version 23.02
up enroot new-enroot.sh
cp "$V/new-hooks.json" "$T/v01/hooks/resview-lxcfs.json"
"$CLI" configure --engine=podman --config "$T/v01/p.conf" --runtime-path "$RT" --hooks-dir "$T/v01/hooks" \
    --hook-path /opt/resview/bin/resview-hook >/dev/null 2>&1
t_ok "0.1's hooks.d file is taken as it is" cmp "$T/v01/hooks/resview-lxcfs.json" "$V/new-hooks.json"
up podman new-podman.conf --set-as-default
t_ok "…and removed by --uninstall" test ! -e "$T/v01/hooks/resview-lxcfs.json"

# an operator's look-alike lines next to 0.1's entries stay, both ways
look='imports = []  # resview-added
# resview-end
# a note  # resview-was: x'
f=$T/v01/look.toml
{ head -3 "$V/containerd-v2.toml"; echo "$look"; tail -n +4 "$V/containerd-v2.toml"; } >"$f"
{ head -3 "$V/containerd-v2.toml.resview-backup"; echo "$look"; tail -n +4 "$V/containerd-v2.toml.resview-backup"; } >"$f.want"
cp "$V/containerd-v2.toml.resview-backup" "$f.resview-backup"
t_ok "0.1 + look-alikes: configure" "$CLI" configure --engine=containerd --config "$f" --runtime-path "$RT" --set-as-default
t_eq "0.1 + look-alikes: the operator's lines are kept" "$(sed -n 4,6p "$f")" "$look"
t_ok "0.1 + look-alikes: --uninstall" "$CLI" configure --engine=containerd --config "$f" --uninstall
t_ok "0.1 + look-alikes: the original with the operator's lines" cmp "$f" "$f.want"

# 0.1's block changed since: refused both ways, naming the lines, untouched
f=$T/v01/changed.toml
sed 's|^SystemdCgroup = true|SystemdCgroup = false|' "$V/containerd-v2.toml" >"$f"
cp "$V/containerd-v2.toml.resview-backup" "$f.resview-backup"; cp "$f" "$f.keep"
for u in "" --uninstall; do
    out=$("$CLI" configure --engine=containerd --config "$f" --runtime-path "$RT" $u 2>&1); rc=$?
    t_eq "0.1 block changed: configure $u refused (exit 1)" "$rc" "1"
    t_contains "…naming the lines to take out by hand" "$out" "resview 0.1's entries on lines 16, 55-65 were changed"
    t_ok "…untouched" cmp "$f" "$f.keep"
done

# files that did not exist: created, then removed by --uninstall
for e in containerd docker crio podman slurm enroot; do
    f=$T/new/$e.conf
    t_ok "$e: creates a missing file" "$CLI" configure --engine=$e --config "$f" --runtime-path "$RT" --hook-path "${RT%-runtime}-hook" --slurm-version 23.02
    t_ok "$e: --uninstall removes the file it created" sh -c "'$CLI' configure --engine=$e --config '$f' --uninstall && ! test -e '$f'"
done
t_ok "enroot hook script is executable" sh -c "'$CLI' configure --engine=enroot --config '$T/e.sh' --hook-path /opt/resview/bin/resview-hook && test -x '$T/e.sh'"
if "$HOOK" --enroot 2>&1 </dev/null | grep -q "not available in this build"; then
    out=$("$CLI" configure --engine=enroot --config "$T/e2.sh" --hook-path "$HOOK" 2>&1); rc=$?
    t_eq "enroot: refused while resview-hook has no --enroot mode" "$rc" "1"
    t_ok "enroot: no script written then" test ! -e "$T/e2.sh"
fi

out=$("$CLI" configure --engine=nosuch 2>&1); rc=$?
t_eq "unknown engine: usage error" "$rc" "2"
t_contains "unknown engine: says so" "$out" "unknown engine \`nosuch\`"

# concurrent configure / uninstall runs on one file: every result is whole
cp "$S/containerd-v2.toml" "$T/conc.toml"
for i in $(seq 1 10); do
    "$CLI" configure --engine=containerd --config "$T/conc.toml" --runtime-path "$RT" >/dev/null 2>&1 &
    "$CLI" configure --engine=containerd --config "$T/conc.toml" --uninstall >/dev/null 2>&1 &
done
wait
t_ok "concurrent runs: the file still parses" "$CLI" configure --engine=containerd --config "$T/conc.toml" --runtime-path "$RT" --dry-run
"$CLI" configure --engine=containerd --config "$T/conc.toml" --uninstall >/dev/null 2>&1
t_ok "concurrent runs: uninstall gives back the original" cmp "$T/conc.toml" "$S/containerd-v2.toml"

# the reference snippets under hooks/ are exactly what configure writes
snip() { # ENGINE FILE [extra]
    local e=$1 f=$2; shift 2
    "$CLI" configure --engine=$e --config "$T/snip/$f" --runtime-path /usr/local/bin/resview-runtime \
        --hooks-dir "$T/snip/hooks.d" "$@" >/dev/null 2>&1
    t_ok "hooks/$f is what configure --engine=$e writes" cmp "$T/snip/$f" "$TOP/hooks/$f"
}
snip containerd containerd/config-v2.toml --containerd-version 2
snip containerd containerd/config-v3.toml --containerd-version 3
snip docker docker/daemon.json
snip podman podman/99-resview.conf
snip crio crio/99-resview.conf
snip slurm slurm/oci.conf --slurm-version 23.02

# Slurm 22.05 has no %U: no new file, a clear message (site lines are rewritten, as above)
out=$("$CLI" configure --engine=slurm --config "$T/old-slurm/oci.conf" --runtime-path "$RT" --slurm-version 22.05 2>&1); rc=$?
t_eq "slurm 22.05, no oci.conf: refused" "$rc" "1"
t_contains "slurm 22.05: says what to do" "$out" "write the RunTime* lines for your site"
t_ok "slurm 22.05: nothing written" test ! -e "$T/old-slurm/oci.conf"

# enroot: the script configure writes runs resview-hook --enroot (which reads ENROOT_*)
if ! "$HOOK" --enroot 2>&1 </dev/null | grep -q "not available in this build"; then
    t_ok "enroot: configure with the real hook" "$CLI" configure --engine=enroot --config "$T/enroot/50-resview.sh" --hook-path "$HOOK"
    out=$(env -i "$T/enroot/50-resview.sh" 2>&1)
    t_contains "enroot: the script runs resview-hook --enroot" "$out" "--enroot: ENROOT_PID"
fi

for e in containerd docker crio podman slurm enroot; do
    t_ok "$e: --uninstall of a missing file creates nothing" sh -c "'$CLI' configure --engine=$e --config '$T/absent/$e' --uninstall && ! test -e '$T/absent/$e'"
done

# podman and CRI-O also get the OCI hooks.d file; a foreign file of that name is left alone
mkdir -p "$T/hd"
"$CLI" configure --engine=crio --config "$T/hd/crio.conf" --hook-path /opt/rv/resview-hook --hooks-dir "$T/hd/hooks" >/dev/null
t_eq "crio: the hooks.d file runs resview-hook" "$(jq -c '[.version, .hook.path, .stages, .when]' "$T/hd/hooks/resview-lxcfs.json")" \
    '["1.0.0","/opt/rv/resview-hook",["prestart"],{"always":true}]'
sum=$(sha256sum <"$T/hd/hooks/resview-lxcfs.json")
"$CLI" configure --engine=crio --config "$T/hd/crio.conf" --hook-path /opt/rv/resview-hook --hooks-dir "$T/hd/hooks" >/dev/null
t_eq "crio: twice = once for the hooks.d file" "$(sha256sum <"$T/hd/hooks/resview-lxcfs.json")" "$sum"
"$CLI" configure --engine=crio --config "$T/hd/crio.conf" --hooks-dir "$T/hd/hooks" --uninstall >/dev/null
t_ok "crio --uninstall removes the hooks.d file" test ! -e "$T/hd/hooks/resview-lxcfs.json"
echo '{"version": "1.0.0", "hook": {"path": "/usr/bin/other-hook"}, "when": {"always": true}, "stages": ["prestart"]}' \
    >"$T/hd/hooks/resview-lxcfs.json"
cp "$T/hd/hooks/resview-lxcfs.json" "$T/hd/foreign.json"
out=$("$CLI" configure --engine=podman --config "$T/hd/containers.conf" --hooks-dir "$T/hd/hooks" 2>&1); rc=$?
t_ok "podman: a foreign hooks.d file of the same name is refused (exit $rc)" test "$rc" -ne 0
t_contains "podman: the refusal says why" "$out" "does not run resview-hook"
t_ok "podman: the foreign file is untouched" cmp "$T/hd/hooks/resview-lxcfs.json" "$T/hd/foreign.json"
"$CLI" configure --engine=podman --config "$T/hd/containers.conf" --hooks-dir "$T/hd/hooks" --uninstall >/dev/null 2>&1
t_ok "podman --uninstall leaves the foreign file alone" cmp "$T/hd/hooks/resview-lxcfs.json" "$T/hd/foreign.json"
