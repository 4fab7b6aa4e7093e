#!/bin/bash
# make check stage: the man pages (src/man.mk).
#  1. `make man` builds them; each renders with `man -l` (groff's warnings all
#     on, 80 columns) without one warning, its header names resview's version;
#  2. every option the code accepts has its entry, **--option**, found from the
#     code itself, not from a list here:
#     - resview(8): the commands `resview --help` lists, the options each
#       command's --help prints and those its parser in src/cli/cmd_CMD.c
#       compares or lists (strcmp(argv[i], "--x"), getopt_long tables), in
#       the section "## resview CMD"; src/bin/resview.c's own; the node
#       agent's RESVIEW_NODE_* variables;
#     - resview-runtime(8): the flags src/runtime/args.c reads (IS("x")), the
#       subcommands src/runtime/runtime.c handles, the annotations
#       (RV_ANN_* of include/), the RESVIEW_* variables of the runtime's
#       parts, the injected variables of src/common/config.c;
#     - resview-hook(8): the arguments src/lxcfs/hook.c compares (and
#       RV_HOOK_ARG_ROOTFS), its RESVIEW_* and getenv() variables;
#     - resview.json(5): every key src/common/config.c parses, as a term.
# Uses $BUILD (default build). Last line: "man: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
BUILD=${BUILD:-build}
pass=0 fail=0
ok()     { pass=$((pass + 1)); echo "ok - man: $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - man: $*"; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

declare -A SRC=([resview.8]=src/cli/resview.8.md [resview-runtime.8]=src/runtime/resview-runtime.8.md
                [resview-hook.8]=src/lxcfs/resview-hook.8.md [resview.json.5]=src/common/resview.json.5.md)

# 1. build and render
if out=$(make -s --no-print-directory BUILD="$BUILD" all man 2>&1); then ok "make man builds the pages"
else not_ok "make man: $(tail -n 3 <<<"$out")"; fi
for page in "${!SRC[@]}"; do
    f=$BUILD/man/$page
    [ -s "$f" ] || { not_ok "$page: not built ($f)"; continue; }
    [ "$f" -nt "${SRC[$page]}" ] || not_ok "$page: older than ${SRC[$page]}"
    warn=$(MANWIDTH=80 MANPAGER=cat man --warnings=w -E UTF-8 -l "$f" 2>&1 >"$T/$page.txt")
    name=$(sed -n 's/^\.TH \([^ ]*\) .*/\1/p' "$f")
    if [ -n "$warn" ]; then not_ok "$page: man -l warns: $(head -n 3 <<<"$warn")"
    elif ! grep -q '^NAME' "$T/$page.txt" || [ "$name" != "$(tr a-z A-Z <<<"${page%.*}")" ]; then
        not_ok "$page: rendered without its NAME or title ($name)"
    else ok "$page renders with man -l without a warning ($(wc -l <"$T/$page.txt") lines)"; fi
    if grep -q '^\.TH [^ ]* [0-9] "[0-9-]*" "resview [0-9][^"]*"' "$f" && ! grep -q '@[A-Z]*@' "$f"; then
        ok "$page: header $(sed -n 's/^\.TH //p' "$f")"
    else not_ok "$page: no version and date in the header: $(grep '^\.TH\|@[A-Z]*@' "$f" | head -2)"; fi
done

# has [-t] SOURCE SECTION OPT...: each OPT has an entry, the term of a
# definition ("**OPT**", "**OPT=" or "**OPT:" in a line followed by ":   "),
# within "## SECTION" when SECTION is not empty; -t: anywhere in the text
has() {
    local terms=1 src sec text o missing=()
    [ "$1" = -t ] && { terms=0; shift; }
    src=$1 sec=$2; shift 2
    text=$(awk -v s="## $sec" -v all="$([ -z "$sec" ] && echo 1)" -v terms=$terms '
        $0 == s { on = 1; next } on && /^##? / { on = 0 }
        all || on { if (!terms) print; else if (/^:   / && prev != "") print prev; prev = $0 }' "$src")
    for o in "$@"; do
        o=${o%=}
        grep -qE -- "\*\*${o//./\\.}[*=: ]" <<<"$text" || missing+=("$o")
    done
    local where="$src${sec:+ \"$sec\"}"
    if [ ${#missing[@]} -eq 0 ]; then ok "$where: all $# entries ($*)"
    else not_ok "$where: no entry for ${missing[*]}"; fi
}
# the long and short options a parser compares or lists, "--x" and "-x"
parsed_opts() {
    { grep -oE 'strn?cmp\(argv\[[a-z0-9]+\], "-[-A-Za-z0-9=]*"' "$@" | sed 's/.*"\(.*\)"/\1/'
      grep -oE '\{ "[a-z][a-z0-9-]*", (no|required|optional)_argument' "$@" | sed 's/{ "\([^"]*\)".*/--\1/'
    } | sed 's/=$//' | grep -vxE -- '-h|--help|-' | sort -u
}

# 2. resview(8)
page=src/cli/resview.8.md cli=$BUILD/resview
printf '{"log": {"file": "%s/log"}, "state_dir": "%s/state"}\n' "$T" "$T" >"$T/config.json"
export RESVIEW_CONFIG=$T/config.json
cmds=$("$cli" --help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || not_ok "$cli --help lists no commands"
for c in $cmds; do
    help=$("$cli" "$c" --help 2>&1)
    opts=$( { grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help"
              [ -f "src/cli/cmd_$c.c" ] && parsed_opts "src/cli/cmd_$c.c"; } | grep -vx -- '--help' | sort -u)
    has "$page" "resview $c" $opts
    vars=$(grep -oE 'RESVIEW_[A-Z_]+' <<<"$help" | sort -u)
    [ -z "$vars" ] || has -t "$page" "resview $c" $vars
done
for f in src/cli/cmd_*.c; do
    c=${f#src/cli/cmd_}; c=${c%.c}
    grep -qxF "$c" <<<"$cmds" || not_ok "$f: command $c is not in resview --help"
done
has "$page" "" --help -h $(grep -oE 'strcmp\(argv\[1\], "--?[a-z-]*"' src/bin/resview.c | sed 's/.*"\(.*\)"/\1/' | grep '^-' | sort -u)

# 3. resview-runtime(8)
page=src/runtime/resview-runtime.8.md
has "$page" "" $(sed -n '/^static bool apply(/,/^}/p' src/runtime/args.c | grep -oE 'IS\("[a-z-]+"\)' |
    sed 's/IS("\(.*\)")/--\1/' | sort -u)
has "$page" "" $(grep -oE 'strcmp\(a\.sub, "[a-z]+"\)' src/runtime/runtime.c | sed 's/.*"\(.*\)".*/\1/' | sort -u)
has "$page" "" $(grep -hoE '#define RV_ANN_[A-Z_]+ "resview\.io/[a-z]+"' include/resview/*.h | sed 's/.*"\(.*\)"/\1/' | sort -u)
has "$page" "" $(grep -rhoE '"RESVIEW_[A-Z_]+"' src/runtime src/limits src/broker src/nri include | tr -d '"' | sort -u)
has "$page" "" $(sed -n '/default_vars\[\] = {/,/^};/p' src/common/config.c | grep -oE '\{ "[A-Z_]+"' | tr -d '{" ' | sort -u)

# 4. resview-hook(8)
page=src/lxcfs/resview-hook.8.md
has "$page" "" --help $(grep -oE 'strn?cmp\(argv\[1\], "--[a-z-]+"' src/lxcfs/hook.c | sed 's/.*"\(.*\)"/\1/' | sort -u) \
    $(sed -n 's/^#define RV_HOOK_ARG_ROOTFS "\(.*\)"/\1/p' include/resview/hook.h)
has "$page" "" $( { grep -rhoE '"RESVIEW_[A-Z_]+"' src/lxcfs; grep -hoE 'getenv\("[A-Z_]+"\)' src/lxcfs/hook.c; } |
    grep -oE '[A-Z_]{3,}' | sort -u)

# 5. resview.json(5): "key" of the top level, "section.key" within a section
# (FOREACH_KEY(val, "section", ...) or a message naming "section.key")
keys=$(awk '
    match($0, /strcmp\(key, "[a-z_]+"\)/) { top = substr($0, RSTART + 13, RLENGTH - 15); seen[top] = 1 }
    match($0, /FOREACH_KEY\([a-z0-9]+, "[a-z_]+"/) { s = $0; sub(/.*FOREACH_KEY\([a-z0-9]+, "/, "", s); sub(/".*/, "", s); section[s] = 1 }
    top != "" && match($0, /strcmp\(k[a-z0-9]*, "[a-z_]+"\)/) && substr($0, RSTART, 11) != "strcmp(key," {
        k = substr($0, RSTART, RLENGTH); sub(/.*, "/, "", k); sub(/".*/, "", k); key[top "." k] = 1; section[top] = 1 }
    { s = $0; while (match(s, /"[a-z_]+\.[a-z_]+[":]/)) {
          k = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
          key[k] = 1; split(k, p, "."); section[p[1]] = 1 } }
    END { for (k in seen) if (!(k in section)) print k; for (k in key) print k }' src/common/config.c | sort -u)
has src/common/resview.json.5.md "" $keys

echo "man: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
