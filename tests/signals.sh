#!/bin/sh
# SIGINT and SIGTERM at random points of train, compare, sweep and report:
# the command exits 130 / 143 (or 0 if it had finished), leaves no temporary
# (*.tmp.<pid>, *.sync.<pid>, .gnuplot.*.log), and running the same command
# again completes with files byte-identical to an uninterrupted run.
# The delays come from SIGNALS_SEED (default: random); it is printed.
#   tests/signals.sh BUILD        ($AMPSIM overrides BUILD/ampsim)
set -u
A=${AMPSIM:-$PWD/${1:-build}/ampsim}
command -v gnuplot >/dev/null 2>&1 || { echo "skipped: signals: gnuplot not installed"; exit 0; }
seed=${SIGNALS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "signals: SIGNALS_SEED=$seed"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
k=0
sigs="INT TERM"
# delay MAX K: a pseudo-random delay in [0, MAX) seconds from the seed and K
delay() { awk -v s="$seed" -v k="$2" -v m="$1" 'BEGIN { x = ((s % 100003) * 7919 + k * k * 48271 + k * 104729) % 100003; printf "%.3f", 0.8 * x / 100003 * m }'; }
now() { date +%s.%N; }

litter() {
    find "$1" \( -name '*.tmp.*' -o -name '*.sync.*' -o -name '.gnuplot.*' \) | head -n 5
}

# trial NAME CMD...: in $tmp/ref/ (a copy of $tmp/base/) run CMD once and time
# it; then per signal of $sigs (INT, TERM, or GROUP: SIGINT to the command's
# whole process group), twice, in $tmp/try/ (another copy of $tmp/base/):
# start CMD, send the signal at a random point of that time, check, rerun,
# compare the folders.
trial() {
    name=$1; shift
    rm -rf "$tmp/ref" && cp -r "$tmp/base" "$tmp/ref"
    t0=$(now)
    (cd "$tmp/ref" && "$@" >/dev/null 2>&1) || { echo "FAIL $name: the uninterrupted run failed"; fails=$((fails + 1)); return; }
    max=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
    for sig in $sigs; do
        want=130; [ $sig = TERM ] && want=143
        for rep in 1 2; do
            k=$((k + 1))
            rm -rf "$tmp/try" && cp -r "$tmp/base" "$tmp/try"
            d=$(delay "$max" $k)
            if [ $sig = GROUP ]; then   # a process group of its own, signalled whole
                (cd "$tmp/try" && exec setsid "$@" >/dev/null 2>"$tmp/err") &
            else
                (cd "$tmp/try" && exec "$@" >/dev/null 2>"$tmp/err") &
            fi
            pid=$!
            sleep "$d"
            if [ $sig = GROUP ]; then
                pg=$(ps -o pgid= -p $pid 2>/dev/null | tr -d ' ')
                [ -n "$pg" ] && kill -s INT -- "-$pg" 2>/dev/null
            else
                kill -s $sig $pid 2>/dev/null
            fi
            wait $pid; rc=$?
            [ $sig = GROUP ] && sleep 0.2   # runs that outlived their launcher would still be writing
            if [ $rc -ne $want ] && [ $rc -ne 0 ]; then
                echo "FAIL $name SIG$sig after ${d}s: exit $rc, expected $want (or 0 if it had finished)"; cat "$tmp/err"
                fails=$((fails + 1)); continue
            fi
            # a signal that lands before main() installs the handler ends the
            # process silently: fine only if it had not touched the folder yet
            if [ $rc -ne 0 ] && ! grep -q 'interrupted' "$tmp/err" && ! diff -r -q "$tmp/base" "$tmp/try" >/dev/null 2>&1; then
                echo "FAIL $name SIG$sig: no 'interrupted' message"; cat "$tmp/err"; fails=$((fails + 1))
            fi
            l=$(litter "$tmp/try")
            [ -n "$l" ] && { echo "FAIL $name SIG$sig after ${d}s: temporaries left: $l"; fails=$((fails + 1)); }
            (cd "$tmp/try" && "$@" >/dev/null 2>"$tmp/err") || { echo "FAIL $name: rerun failed"; cat "$tmp/err"; fails=$((fails + 1)); continue; }
            if ! diff -r "$tmp/ref" "$tmp/try" >"$tmp/diff" 2>&1; then
                echo "FAIL $name SIG$sig after ${d}s (exit $rc): the rerun differs from an uninterrupted run:"; head -n 5 "$tmp/diff"
                fails=$((fails + 1))
            else
                echo "ok $name SIG$sig after ${d}s of ${max}s: exit $rc, no temporaries, rerun identical"
            fi
        done
    done
}

mkdir -p "$tmp/base"
trial train "$A" train --steps 1500 --checkpoint-every 100 --resume --out out
trial compare "$A" compare --precisions fp16-amp --scalers none,torch --steps 800 --jobs 2 --out out
cat > "$tmp/grid.json" <<'G'
{"train": {"steps": 300}, "precisions": ["bf16-amp"], "seeds": [1, 2]}
G
trial sweep "$A" sweep "$tmp/grid.json" --jobs 2 --out out
# Ctrl-C at a terminal: SIGINT to the whole process group (compare and its
# runs at once, signal "GROUP" of trial).
if command -v setsid >/dev/null 2>&1; then
    sigs="GROUP"
    trial compare-group "$A" compare --precisions fp16-amp --scalers none,torch --steps 800 --jobs 2 --out out
    sigs="INT TERM"
fi
(cd "$tmp/base" && "$A" compare --precisions fp16-amp --scalers none,torch --steps 60 --out out >/dev/null 2>&1) \
    || { echo "FAIL: compare for the report trial"; exit 1; }
trial report "$A" report out --formats png,svg --quiet
[ $fails -eq 0 ] || { echo "signals: $fails failures (SIGNALS_SEED=$seed)"; exit 1; }
echo "signals: all ok"
