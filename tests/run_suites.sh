#!/bin/sh
# make check's and make check-long's runner: every Check suite, the layer
# check, the docs' C examples and the Python tests, run side by side
# (AMP_CHECK_JOBS at a time, default: the number of CPUs); prints each one's
# output, grouped under its "== NAME" line and in a fixed order, closed by a
# line "-- NAME: SECONDS s" (its wall time), then the
# closing line "N passed, N failed, N skipped" (tests, not suites) and exits 1
# on any failure. AMP_PYTHON_TESTS=0 leaves the Python tests out (the
# sanitizer and valgrind builds: a Python process cannot load an instrumented
# library).
#   tests/run_suites.sh BUILD SUITE...          make check
#   tests/run_suites.sh --long BUILD SUITE...   make check-long: the suites
#       with AMP_LONG=1 (each runs only its long cases), the Python tests
#       python/tests/long_*.py (python/run_tests.py --long), and the report in
#       headless Chromium with its PDFs through poppler (tests/report_browser.py)
# A test that cannot run here prints a line "skipped: NAME: REASON" (see
# tests/cli_test.h AMP_SKIP) and counts as skipped, not passed. A suite that
# exits non-zero without a Check failure line counts as one failed test.
set -u
long=0
if [ "${1:-}" = --long ]; then long=1; shift; fi
build=$1; shift
pass=0; fail=0; skip=0; failed=""
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
jobs=${AMP_CHECK_JOBS:-$(nproc 2>/dev/null || echo 2)}

# job NAME COMMAND...: queues one job; its output goes to $dir/N.log, its
# status to $dir/N.rc, its name to $dir/N.name (N: the queue order).
n=0
job() {
    n=$((n + 1))
    id=$(printf '%03d' "$n")
    printf '%s\n' "$1" > "$dir/$id.name"; shift
    { printf 'cd %s &&' "'$PWD'"; for a in "$@"; do printf " '%s'" "$a"; done; echo; } > "$dir/$id.cmd"
}

py_modules() {
    # one job per module: they are the longest, so they start first
    if [ "$long" = 1 ]; then pat='long_*.py'; else pat='test*.py'; fi
    for f in python/tests/$pat; do
        [ -f "$f" ] && basename "$f" .py
    done
}

python_jobs() {
    [ -f python/run_tests.py ] && [ "${AMP_PYTHON_TESTS:-1}" != 0 ] || return 0
    for m in $(py_modules); do
        job "python $m" env AMPSIM="$PWD/$build/ampsim" AMPSIM_LIB="$PWD/$build/libampsim.so" \
            /usr/bin/python3 python/run_tests.py $([ "$long" = 1 ] && echo --long) "$m"
    done
}

if [ "$long" = 1 ]; then
    python_jobs
    job report_browser /usr/bin/python3 tests/report_browser.py "$PWD/$build/ampsim"
    for t in "$@"; do job "$t" env AMP_LONG=1 "$t"; done
else
    python_jobs
    for t in "$@"; do job "$t" "$t"; done
    job layers sh -c 'sh tests/layers.sh . "$1" && sh tests/layers.sh --self-test .' layers "$build"
    job sizes sh tests/sizes.sh
    job api sh tests/api.sh "$build"
    job install sh tests/install.sh "$build"
    job use sh tests/use.sh "$build"
    job signals sh tests/signals.sh "$build"
    job doc_examples sh tests/doc_examples.sh "$build"
fi

# Run: the queue order is the start order; the printing order below is the
# suites' order (the Python tests last), whatever finishes first.
ls "$dir" | sed -n 's/\.cmd$//p' | xargs -P "$jobs" -I{} sh -c \
    's=$(date +%s); sh "$1/$2.cmd" > "$1/$2.log" 2>&1; echo $? > "$1/$2.rc"; echo $(($(date +%s) - s)) > "$1/$2.s"' \
    sh "$dir" {}

# count NAME RC LOG: adds the counts in LOG of a Check suite (or of a plain
# command: rc 0 = one pass; or of python/run_tests.py or another script that
# closes with "NAME: N passed, N failed[, N skipped]": that line).
count() {
    name=$1; rc=$2; log=$3
    s=$(grep -c '^skipped: ' "$log")
    # (a suite that runs no test prints "Running suite(s):100%: Checks: 0, ...")
    line=$(grep -oE '[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    pyline=$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
    if [ -n "$pyline" ]; then
        set -- $(echo "$pyline" | sed 's/^[a-z_]*://; s/[^0-9 ]//g') 0
        bad=$2
        [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1
        pass=$((pass + $1)); fail=$((fail + bad)); skip=$((skip + $3))
    elif [ -n "$line" ]; then
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

show() {
    id=$1
    name=$(cat "$dir/$id.name")
    rc=$(cat "$dir/$id.rc" 2>/dev/null || echo 1)
    echo "== $name"
    cat "$dir/$id.log"
    echo "-- $name: $(cat "$dir/$id.s" 2>/dev/null) s"
    count "$(basename "${name#python }")" "$rc" "$dir/$id.log"
}
ids=$(ls "$dir" | sed -n 's/\.name$//p')
for id in $ids; do grep -q '^python ' "$dir/$id.name" || show "$id"; done
for id in $ids; do grep -q '^python ' "$dir/$id.name" && show "$id"; done

[ -n "$failed" ] && echo "FAILED:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
