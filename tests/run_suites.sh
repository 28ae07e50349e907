#!/bin/sh
# make check's runner: every Check suite, the layer check, the docs' C
# examples and the Python tests; prints each one's output, then the closing
# line "N passed, N failed, N skipped" (tests, not suites) and exits 1 on any
# failure. AMP_PYTHON_TESTS=0 leaves the Python tests out (the sanitizer and
# valgrind builds: a Python process cannot load an instrumented library).
#   tests/run_suites.sh BUILD SUITE...
# A test that cannot run here prints a line "skipped: NAME: REASON" (see
# tests/cli_test.h AMP_SKIP) and counts as skipped, not passed. A suite that
# exits non-zero without a Check failure line counts as one failed test.
set -u
build=$1; shift
pass=0; fail=0; skip=0; failed=""
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT

# count NAME RC: adds the counts in $log of a Check suite (or of a plain
# command: rc 0 = one pass) to the totals.
count() {
    name=$1; rc=$2
    s=$(grep -c '^skipped: ' "$log")
    line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        n=$(echo "$line" | sed 's/.*Checks: \([0-9]*\),.*/\1/')
        f=$(echo "$line" | sed 's/.*Failures: \([0-9]*\),.*/\1/')
        e=$(echo "$line" | sed 's/.*Errors: \([0-9]*\).*/\1/')
        bad=$((f + e))
        [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1
        pass=$((pass + n - f - e - s)); fail=$((fail + bad)); skip=$((skip + s))
    elif [ "$rc" -eq 0 ]; then pass=$((pass + 1 - s)); skip=$((skip + s)); bad=0
    else fail=$((fail + 1)); bad=1
    fi
    [ "$bad" -ne 0 ] && failed="$failed $name"
}

for t in "$@"; do
    echo "== $t"
    "$t" >"$log" 2>&1; rc=$?
    cat "$log"
    count "$(basename "$t")" "$rc"
done

# step NAME COMMAND...: one check script, its output shown and counted as one test.
step() {
    name=$1; shift
    echo "== $name"
    "$@" >"$log" 2>&1; rc=$?
    cat "$log"; count "$name" "$rc"
}

step layers sh -c 'sh tests/layers.sh . "$1" && sh tests/layers.sh --self-test .' layers "$build"
step sizes sh tests/sizes.sh
step api sh tests/api.sh "$build"
step install sh tests/install.sh "$build"
step use sh tests/use.sh "$build"
step signals sh tests/signals.sh "$build"
step doc_examples sh tests/doc_examples.sh "$build"

if [ -f python/run_tests.py ] && [ "${AMP_PYTHON_TESTS:-1}" != 0 ]; then
    echo "== python"
    AMPSIM="$PWD/$build/ampsim" AMPSIM_LIB="$PWD/$build/libampsim.so" /usr/bin/python3 python/run_tests.py >"$log" 2>&1; rc=$?
    cat "$log"
    line=$(grep -E '^python: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        set -- $(echo "$line" | sed 's/[^0-9 ]//g')
        pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + $3))
        [ "$2" -ne 0 ] || [ "$rc" -ne 0 ] && failed="$failed python"
        [ "$rc" -ne 0 ] && [ "$2" -eq 0 ] && fail=$((fail + 1))
    else
        fail=$((fail + 1)); failed="$failed python"
    fi
fi

[ -n "$failed" ] && echo "FAILED:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
