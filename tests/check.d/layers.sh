#!/bin/bash
# make check stage: the subsystems of src/ (src/README.md "The subsystems")
# import only downwards. Each src/<subsystem>/*.c and src/<subsystem>/*.h may
# include headers of its own subsystem and of those below it; a header of
# include/resview/ belongs to the subsystem holding the .c of its name (or
# the one named in OWNER below). Also: no .c file at the top of src/.
# Last line: "layers: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
# lowest first: a subsystem may use those before it on this list
ORDER="common metrics limits broker lxcfs engine runtime nri node cli"
declare -A OWNER=([sys.h]=common [syscalls.h]=common [cli.h]=cli [node.h]=node [nri.h]=nri)
declare -A RANK
i=0; for s in $ORDER; do RANK[$s]=$i; i=$((i + 1)); done
pass=0 fail=0
ok() { echo "ok - layers: $1"; pass=$((pass + 1)); }
bad() { echo "not ok - layers: $1"; fail=$((fail + 1)); }

owner_of() { # header file name -> subsystem
    local h=$1 c
    [ -n "${OWNER[$h]:-}" ] && { echo "${OWNER[$h]}"; return; }
    c=$(ls src/*/"${h%.h}.c" 2>/dev/null | head -1)
    [ -n "$c" ] && { basename "$(dirname "$c")"; return; }
    echo "?"
}
for d in src/*/; do
    s=$(basename "$d"); [ "$s" = bin ] && continue
    [ -n "${RANK[$s]:-}" ] || { bad "src/$s is not in the order of src/README.md"; continue; }
done
for h in include/resview/*.h; do
    [ "$(owner_of "$(basename "$h")")" = "?" ] && bad "$h belongs to no subsystem"
done
n=0 up=0
for f in src/*/*.c src/*/*.h include/resview/*.h; do
    case $f in src/bin/*) continue ;; esac
    if [[ $f == include/* ]]; then from=$(owner_of "$(basename "$f")"); else from=$(basename "$(dirname "$f")"); fi
    [ "$from" = "?" ] && continue
    while read -r inc; do
        case $inc in
            resview/*) to=$(owner_of "${inc#resview/}") ;;
            */*) to=${inc%%/*} ;;
            *) continue ;;   # its own subsystem's, beside it
        esac
        [ "$to" = "?" ] && continue
        n=$((n + 1))
        if [ "${RANK[$to]}" -gt "${RANK[$from]}" ]; then
            bad "$f ($from) includes $inc ($to, a higher subsystem)"; up=$((up + 1))
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
[ "$up" -eq 0 ] && ok "$n includes between files of src/ and include/, none from a lower subsystem to a higher one"
top=$(ls src/*.c 2>/dev/null | wc -l)
[ "$top" -eq 0 ] && ok "no .c file at the top of src/" || bad "$top .c files at the top of src/"
echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
