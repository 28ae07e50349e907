#!/bin/sh
# make check-long: the slow checks that make check leaves out. Each step is one
# test: the report pages in headless Chromium and the report's PDFs through
# poppler (tests/report_browser.py; needs the browser group of .ci/deps.sh and
# poppler-utils). Prints each step's output, then "N passed, N failed" over
# every check (a step that prints its own "NAME: N passed, N failed" counts those).
#   tests/long.sh BUILD
set -u
build=${1:-build}
A=${AMPSIM:-$PWD/$build/ampsim}
pass=0; fail=0; failed=""
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT

step() {
    name=$1; shift
    echo "== $name"
    "$@" >"$log" 2>&1; rc=$?
    cat "$log"
    # a step that prints "NAME: N passed, N failed" counts its own checks
    line=$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        set -- $(echo "$line" | sed 's/[^0-9 ]//g')
        pass=$((pass + $1)); fail=$((fail + $2))
        [ "$2" -eq 0 ] && [ $rc -ne 0 ] && fail=$((fail + 1))
    elif [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    [ $rc -ne 0 ] && failed="$failed $name"
}

step report_browser /usr/bin/python3 tests/report_browser.py "$A"

[ -n "$failed" ] && echo "FAILED:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
