#!/bin/sh
# The layer check: folders are layers (sim <- analysis <- reports <- CLI).
#   tests/layers.sh SRCDIR [OBJDIR]
# 1. includes: a file in sim/ includes only headers of sim/, one in analysis/
#    headers of sim/ and analysis/, one in reports/ any of the three; no library
#    file includes a CLI header (sim/cli*.h); the CLI (sim/main.c, sim/cli_*,
#    sim/mpi/) may include everything.
# 2. file cycles (with OBJDIR, the build folder): no two library object files
#    depend on each other, directly or around a longer loop (the graph "A uses
#    a function B defines", sorted by tsort).
# Prints every violation and exits 1 if there is any; with `--self-test`
# proves on a scratch copy that an upward include and a file cycle are caught.
set -u

layer_of() {  # path -> 0 sim, 1 analysis, 2 reports, 9 CLI
    case "$1" in
        sim/main.c|sim/cli_*|sim/cli.h|sim/mpi/*|sim/ampsim.h) echo 9 ;;
        sim/*) echo 0 ;;
        analysis/*) echo 1 ;;
        reports/*) echo 2 ;;
        *) echo 9 ;;
    esac
}

check_includes() {  # SRCDIR
    src=$1; bad=0
    for f in $(cd "$src" && ls sim/*.[ch] analysis/*.[ch] reports/*.[ch] 2>/dev/null); do
        me=$(layer_of "$f")
        [ "$me" = 9 ] && continue
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src/$f"); do
            case "$h" in
                cli*.h) echo "layers: $f includes $h, a CLI header"; bad=1; continue ;;
            esac
            if [ -f "$src/sim/$h" ]; then hl=0
            elif [ -f "$src/analysis/$h" ]; then hl=1
            elif [ -f "$src/reports/$h" ]; then hl=2
            else continue   # a file of the same folder that is not a header (formats.def) or a system header
            fi
            if [ "$hl" -gt "$me" ]; then
                echo "layers: $f includes $h from a layer above it"; bad=1
            fi
        done
    done
    return $bad
}

check_cycles() {  # OBJDIR: every library object below it
    objs=$(cd "$1" && ls sim/*.o analysis/*.o reports/*.o 2>/dev/null | grep -v -e '^sim/main\.o$' -e '^sim/cli_')
    [ -n "$objs" ] || { echo "layers: no object files in $1"; return 1; }
    edges=$(cd "$1" && for o in $objs; do nm "$o" | awk -v f="$o" '$2 ~ /^[TDBR]$/ {print "D", f, $3} $1 == "U" {print "U", f, $2}'; done |
        awk '$1 == "D" {def[$3] = $2} $1 == "U" {n++; uf[n] = $2; us[n] = $3}
             END {for (i = 1; i <= n; i++) if ((us[i] in def) && def[us[i]] != uf[i]) print uf[i], def[us[i]]}' | sort -u)
    out=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null)
    if [ -n "$out" ]; then
        echo "layers: file cycle among library objects:"
        printf '%s\n' "$out" | sed 's/^tsort: /  /'
        return 1
    fi
    return 0
}

self_test() {  # SRCDIR
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    cp -r "$1/sim" "$1/analysis" "$1/reports" "$tmp/"
    check_includes "$tmp" >/dev/null || { echo "layers: self-test: the clean tree fails"; return 1; }
    sed -i '1i #include "amp_report.h"' "$tmp/analysis/compare.c"
    check_includes "$tmp" >/dev/null && { echo "layers: self-test: an upward include was not caught"; return 1; }
    mkdir -p "$tmp/obj/sim"
    printf 'int b1(void);\nint a1(void) { return b1(); }\n' > "$tmp/a.c"
    printf 'int a1(void);\nint b1(void) { return a1(); }\n' > "$tmp/b.c"
    cc -c -o "$tmp/obj/sim/a.o" "$tmp/a.c" && cc -c -o "$tmp/obj/sim/b.o" "$tmp/b.c" || return 1
    check_cycles "$tmp/obj" >/dev/null && { echo "layers: self-test: a file cycle was not caught"; return 1; }
    echo "layers: self-test: an upward include and a file cycle are caught"
    return 0
}

if [ "${1:-}" = "--self-test" ]; then self_test "${2:-.}"; exit $?; fi
src=${1:-.}
status=0
check_includes "$src" || status=1
if [ -n "${2:-}" ]; then check_cycles "$2" || status=1; fi
[ $status = 0 ] && echo "layers: ok (includes follow sim <- analysis <- reports <- CLI${2:+; no file cycles})"
exit $status
