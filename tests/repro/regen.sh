#!/bin/sh
# Rewrites tests/repro/golden.sha256 from the runs of tests/repro/runs.txt,
# with the binary given (default build/ampsim). Only when results change on
# purpose: the commit says why. Run from the source tree.
set -eu
bin=$(cd "$(dirname "${1:-build/ampsim}")" && pwd)/$(basename "${1:-build/ampsim}")
src=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' tests/repro/runs.txt | grep -v '^$' | while read -r name args; do
    args=$(echo "$args" | sed "s|@SRC@|$src|g")
    # shellcheck disable=SC2086
    (cd "$tmp" && "$bin" train $args --out "$name" >/dev/null 2>&1)
done
(cd "$tmp" && for d in $(grep -v '^#' "$src/tests/repro/runs.txt" | grep -v '^$' | cut -d' ' -f1); do
    sha256sum "$d/metrics.csv" "$d/tensors.csv" "$d/hist.csv"; done) > tests/repro/golden.sha256
echo "wrote tests/repro/golden.sha256 ($(wc -l < tests/repro/golden.sha256) sums)"
