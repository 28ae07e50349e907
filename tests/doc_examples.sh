#!/bin/sh
# Compiles and runs every C example of the manual: a fenced ```c block right
# after a line "<!-- example: NAME.c -->" in docs/*.md. Each is built as a
# user would build it: the module headers it names (-Isim -Ianalysis
# -Ireports) and the shared library's exported API only (BUILD/libampsim.so).
#   tests/doc_examples.sh BUILD      (EXAMPLE_LDFLAGS: extra link flags, e.g. a sanitizer)
set -u
build=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
for md in docs/*.md; do
    [ -f "$md" ] || continue
    awk -v dir="$tmp" '
        /^<!-- example: [A-Za-z0-9_.-]+\.c -->/ { name = $3; want = 1; next }
        want && /^```c/ { inside = 1; want = 0; out = dir "/" name; printf "" > out; next }
        inside && /^```/ { inside = 0; close(out); next }
        inside { print >> out }
    ' "$md"
done
for src in "$tmp"/*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    if ! cc -std=c11 -Wall -Werror -Isim -Ianalysis -Ireports -o "$tmp/$name" "$src" \
            -L"$build" -lampsim -lm -Wl,-rpath,"$PWD/$build" ${EXAMPLE_LDFLAGS:-}; then
        echo "doc example $name.c: does not compile"; exit 1
    fi
    if ! "$tmp/$name" >"$tmp/$name.out" 2>&1; then
        echo "doc example $name.c: exits non-zero:"; cat "$tmp/$name.out"; exit 1
    fi
    echo "doc example $name.c: compiled against the exported API and ran"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "doc examples: none found in docs/*.md"; exit 1; }
