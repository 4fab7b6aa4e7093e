#!/bin/bash
# make check stage: the manuals hold together.
#  - README.md is the entry: at most 300 lines; every other manual (*.md under
#    hooks/ profiles/ src/ tests/) at most 600;
#  - every citation of a manual in the code, `FILE "Heading"` (FILE a path
#    ending in .md, or README; plain README is README.md), in src/ include/
#    hooks/ profiles/ tests/ .ci/ Makefile install.sh, names a file that exists
#    and a heading (# to ####) of it with exactly that text; a citation may
#    break the line between FILE and "Heading", and `FILE "A", "B"` cites both;
#  - no citation of a DESIGN.md section (DESIGN.md is not in this tree);
#  - every relative link [text](path#anchor) of a manual names a file that
#    exists and, with an anchor into a manual, one of its headings.
# Needs bash, grep, sed, awk. Last line: "docs: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C
pass=0 fail=0
ok()     { pass=$((pass + 1)); echo "ok - $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $*"; }

manuals=(README.md)
while IFS= read -r f; do manuals+=("$f"); done < <(find hooks profiles src tests -name '*.md' -type f 2>/dev/null | sort)

# 1. lengths
for f in "${manuals[@]}"; do
    max=600; [ "$f" = README.md ] && max=300
    n=$(wc -l <"$f")
    if [ "$n" -le "$max" ]; then ok "$f: $n lines (at most $max)"
    else not_ok "$f: $n lines, more than $max"; fi
done

# Headings of every manual, outside code fences: "FILE<TAB>heading".
headings=$(awk '
    FNR == 1 { fence = 0 }
    /^[[:space:]]*(```|~~~)/ { fence = !fence; next }
    !fence && /^##?#?#?[[:space:]]/ {
        h = $0; sub(/^#+[[:space:]]+/, "", h); sub(/[[:space:]]+#*[[:space:]]*$/, "", h)
        a = tolower(h); gsub(/[^a-z0-9 _-]/, "", a); gsub(/ /, "-", a)
        print FILENAME "\t" h "\t" a
    }' "${manuals[@]}")
# "FILE<TAB>heading" and "FILE<TAB>anchor" (GitHub's: lower case, punctuation
# dropped, spaces to hyphens), for looking up without a process per question.
declare -A is_manual has_heading has_anchor
while IFS=$'\t' read -r f h a; do
    is_manual[$f]=1; has_heading[$f$'\t'$h]=1; has_anchor[$f$'\t'$a]=1
done <<<"$headings"
for f in "${manuals[@]}"; do is_manual[$f]=1; done
# a path with . and .. resolved, relative to the top of the tree
norm() {
    local IFS=/ part out=()
    for part in $1; do
        case $part in ''|.) ;; ..) [ ${#out[@]} -gt 0 ] && unset 'out[${#out[@]}-1]' ;; *) out+=("$part") ;; esac
    done
    echo "${out[*]}"
}

# 2. citations in the code. awk prints one line per citation or problem:
#    "cite<TAB>where<TAB>file<TAB>heading" or "design<TAB>where<TAB>text".
self=tests/check.d/docs.sh
mapfile -t sources < <(grep -rlIE 'README|\.md|DESIGN' src include hooks profiles tests .ci Makefile install.sh 2>/dev/null |
    grep -vxF "$self" | grep -vE '\.md$' | sort)
citations=$(awk -v OFS='\t' '
    function strip(s) { sub(/^[[:space:]]*(#+|\*+|\/\/+|\/\*+|;+|--)?[[:space:]]*/, "", s); return s }
    FNR == 1 { carry = ""; dcarry = 0 }
    {
        line = $0; gsub(/\\"/, "\"", line)
        text = line
        if (carry != "") text = carry " " strip(line)
        where = FILENAME ":" FNR
        # DESIGN.md sections
        t = (dcarry ? "DESIGN.md " strip(line) : line)
        if (t ~ /DESIGN\.md[[:space:],]*(section|§|")/) print "design", where, t
        dcarry = (line ~ /DESIGN\.md[[:space:],]*$/)
        # FILE "Heading" [, "Heading" ...]
        path_re = "[A-Za-z0-9_./-]*(README(\\.md)?|[A-Za-z0-9_-]\\.md)"
        rest = text
        while (match(rest, path_re "[[:space:]]+\"[^\"]+\"")) {
            pre = (RSTART > 1 ? substr(rest, RSTART - 1, 1) : "")
            m = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
            if (pre ~ /[A-Za-z0-9_]/) continue
            match(m, /[[:space:]]+"/); file = substr(m, 1, RSTART - 1); h = substr(m, RSTART + RLENGTH); sub(/"$/, "", h)
            if (file == "README") file = "README.md"
            print "cite", where, file, h
            while (match(rest, /^[[:space:]]*,[[:space:]]*"[^"]+"/)) {
                h = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
                sub(/^[^"]*"/, "", h); sub(/"$/, "", h)
                print "cite", where, file, h
            }
        }
        carry = ""
        if (match(line, path_re "[[:space:]]*$")) { carry = substr(line, RSTART); sub(/[[:space:]]+$/, "", carry) }
        if (carry ~ /^[A-Za-z0-9_]/ && RSTART > 1 && substr(line, RSTART - 1, 1) ~ /[A-Za-z0-9_]/) carry = ""
    }' "${sources[@]}")

n_cite=0
while IFS=$'\t' read -r kind where a b; do
    [ -n "$kind" ] || continue
    if [ "$kind" = design ]; then
        not_ok "$where cites a section of DESIGN.md, which is not in this tree: $a"
        continue
    fi
    n_cite=$((n_cite + 1))
    file=$a; src_dir=$(dirname "${where%%:*}")
    if [ -f "$file" ]; then :
    elif [ -f "$src_dir/$file" ]; then file=$src_dir/$file
    else not_ok "$where cites $a \"$b\": no file $a"; continue; fi
    file=$(norm "$file")
    if [ -n "${has_heading[$file$'\t'$b]:-}" ]; then ok "$where cites $file \"$b\""
    elif [ -n "${is_manual[$file]:-}" ]; then
        not_ok "$where cites $file \"$b\": no heading with that text in $file"
    else not_ok "$where cites $file \"$b\": $file is not a manual checked here"; fi
done <<<"$citations"
[ "$n_cite" -gt 0 ] || not_ok "no citation found in the code (the scan is broken)"
grep -q '^design' <<<"$citations" || ok "no citation of a DESIGN.md section"

# 3. relative links of the manuals. awk prints "where<TAB>target".
links=$(awk -v OFS='\t' '
    FNR == 1 { fence = 0 }
    /^[[:space:]]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
        line = $0; gsub(/`[^`]*`/, "", line)
        while (match(line, /\]\([^) ]+\)/)) {
            t = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH)
            if (t ~ /^[a-z]+:/) continue
            print FILENAME ":" FNR, t
        }
    }' "${manuals[@]}")
n_link=0 bad_link=0
while IFS=$'\t' read -r where t; do
    [ -n "$where" ] || continue
    n_link=$((n_link + 1))
    from=${where%%:*} path=${t%%#*} anchor=
    [[ "$t" == *'#'* ]] && anchor=${t#*#}
    if [ -z "$path" ]; then target=$from; else target=$(dirname "$from")/$path; fi
    if [ ! -e "$target" ]; then not_ok "$where links to $t: no such file"; bad_link=$((bad_link + 1)); continue; fi
    [ -n "$anchor" ] || continue
    target=$(norm "$target")
    [ -n "${has_anchor[$target$'\t'$anchor]:-}" ] || { not_ok "$where links to $t: no heading of $target has the anchor #$anchor"; bad_link=$((bad_link + 1)); }
done <<<"$links"
[ "$bad_link" -eq 0 ] && ok "$n_link relative links of the manuals resolve"

echo "docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
