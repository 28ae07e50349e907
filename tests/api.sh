#!/bin/sh
# The shared library's surface is the documented API: libampsim.so exports
# exactly the functions of docs/api.md (made from the AMP_API declarations of
# the module headers), nothing internal, and carries its SONAME. Names with a
# dot are the compiler's own (the resolvers of target_clones functions).
#   tests/api.sh BUILD
set -u
build=$1
lib="$build/libampsim.so"
status=0
/usr/bin/python3 tests/api_doc.py --check || status=1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRiW]$/ && $3 !~ /\./ {print $3}' | sort -u > "$tmp/exported"
sed -n 's/^### `\(amp_[A-Za-z0-9_]*\)`$/\1/p' docs/api.md | sort -u > "$tmp/documented"
dup=$(sed -n 's/^### `\(amp_[A-Za-z0-9_]*\)`$/\1/p' docs/api.md | sort | uniq -d)
[ -z "$dup" ] || { echo "api: declared twice:" $dup; status=1; }
extra=$(comm -23 "$tmp/exported" "$tmp/documented")
missing=$(comm -13 "$tmp/exported" "$tmp/documented")
[ -z "$extra" ] || { echo "api: exported but not documented:" $extra; status=1; }
[ -z "$missing" ] || { echo "api: documented but not exported:" $missing; status=1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libampsim\.so\.0\]' || { echo "api: $lib has no SONAME libampsim.so.0"; status=1; }
[ $status = 0 ] && echo "api: libampsim.so exports exactly the $(wc -l < "$tmp/exported") documented functions (SONAME libampsim.so.0)"
exit $status
