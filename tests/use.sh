#!/bin/sh
# The commands as a user meets them: a run that goes NaN gets a report with
# its first non-finite tensor at the top and null losses in summary.json;
# train refuses to overwrite a finished run without --force; compare names
# the pairs it drops and exits 2 when only the reference is left, and marks
# runs that trained identically; report draws only the runs summary.csv
# lists and opens with findings computed from the data.
#   tests/use.sh BUILD        ($AMPSIM overrides BUILD/ampsim)
set -u
A=${AMPSIM:-$PWD/${1:-build}/ampsim}
command -v gnuplot >/dev/null 2>&1 || { echo "skipped: use: gnuplot not installed"; exit 0; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

# a run whose loss is NaN from step 1: summary.json null, report exit 0, banner
"$A" train --lr 1e30 --steps 5 --out nan >/dev/null 2>&1
/usr/bin/python3 -c 'import json,sys; s=json.load(open("nan/summary.json")); sys.exit(0 if s["final_loss"] is None and s["final_loss_finite"] is False else 1)' \
    && ok "summary.json: final_loss null" || bad "summary.json: final_loss of a NaN run is not null: $(grep final_loss nan/summary.json)"
if "$A" report nan --formats png --quiet >out 2>err && [ -f nan/report/index.html ]; then
    grep -q 'first non-finite value appeared in fc2.out at step 1' nan/report/index.html \
        && ok "report of a NaN run names the first non-finite tensor" || bad "report of a NaN run: no first non-finite tensor on the page"
    grep -q 'loss was not finite' nan/report/index.html && ok "NaN steps counted" || bad "NaN steps not counted"
else
    bad "report of a NaN run failed: $(cat err)"
fi

# --force
"$A" train --steps 3 --out fin >/dev/null 2>&1
"$A" train --steps 3 --out fin >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q 'finished run' err && ok "train refuses a finished run" || bad "train over a finished run: exit $rc $(cat err)"
"$A" train --steps 4 --force --out fin >/dev/null 2>&1 && grep -q '"steps":	4' fin/summary.json \
    && ok "train --force overwrites" || bad "train --force did not overwrite"

# compare: dropped pairs and only the reference left
"$A" compare --precisions fp16-amp --scalers delayed --steps 3 --out c0 >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q 'fp16-amp with delayed: not run' err && ok "compare: dropped pair named, exit 2" \
    || bad "compare with only the reference left: exit $rc: $(cat err)"

# compare: names state the FP8 strategy; identical runs are marked
"$A" compare --precisions bf16-amp,fp8-hybrid --scalers 'none,static:1024,delayed' --steps 12 --out c1 >/dev/null 2>err \
    || bad "compare failed: $(cat err)"
grep -q 'fp8-hybrid with delayed: the same run as fp8-hybrid with none' err && ok "duplicate pair named" || bad "duplicate pair not named: $(cat err)"
grep -q '^fp8-hybrid__none__delayed,fp8-hybrid,"none",ok,.*,"none","delayed",$' c1/summary.csv \
    && ok "summary.csv states the FP8 strategy" || bad "summary.csv: $(cat c1/summary.csv)"
grep -q '^bf16-amp__static-1024,.*,bf16-amp__none$' c1/summary.csv && ok "same_as marks bf16 static = none" \
    || bad "same_as: $(cut -d, -f1,16 c1/summary.csv)"

# report: only what summary.csv lists; findings first
cp -r c1/bf16-amp__none c1/stale-run
"$A" report c1 --formats png --quiet >/dev/null 2>err || bad "report c1: $(cat err)"
grep -q 'stale-run' c1/report/index.html && bad "report draws a folder summary.csv does not list" || ok "stale folder left out"
f=$(grep -n 'id=findings' c1/report/index.html | cut -d: -f1); g=$(grep -n '<h2>Figures' c1/report/index.html | cut -d: -f1)
[ -n "$f" ] && [ -n "$g" ] && [ "$f" -lt "$g" ] && ok "findings before the figures" || bad "no findings section before the figures"
grep -q '<b>bf16-amp__none</b> ([^)]*) = <b>bf16-amp__static-1024</b>' c1/report/index.html && ok "page merges identical runs" \
    || bad "page does not merge identical runs"
n=$(sed -n '/<ul class=find>/,/<\/ul>/p' c1/report/index.html | grep -c '^<li>')
[ "$n" -eq 3 ] && ok "one verdict per run, identical runs one" || bad "verdicts: $n, expected 3"

# layout: wide tables scroll in their own box; a run with nothing flushed or
# overflowed gets one line, not two empty heat maps; per-tensor-scaled FP8
# operands are drawn as given; long panel titles wrap; 20 colours
grep -q '<div class=tw><table>' c1/report/index.html && ok "summary table in a scrolling box" || bad "summary table not in a box"
if [ ! -f c1/report/fig4_heat_bf16-amp__none.png ] && grep -q 'not drawn for [^<]*bf16-amp__none' c1/report/index.html; then
    ok "no empty heat maps"; else bad "empty heat maps drawn for bf16-amp__none"; fi
grep -q '^array asgiven\[.*1' c1/report/data/fig1_hist_runs_1.gp && ok "FP8 operands drawn as given" || bad "FP8 operands not marked as given"
grep -q 'fp8-hybrid__none__delayed\\n(e5m2, per-tensor scaled)' c1/report/data/fig1_hist_runs_1.gp && ok "long panel title wraps" \
    || bad "long panel title does not wrap: $(grep ttl c1/report/data/fig1_hist_runs_1.gp)"
grep -q 'xtics add ("zero" xz)' c1/report/scripts/fig1_hist.gp && ok "zero bar labelled zero" || bad "zero bar labelled 0"
grep -q '^array pal\[20\]' c1/report/scripts/fig2_loss.gp && ok "20 colours" || bad "fewer than 20 colours"

# sweep report: aggregated over the seeds, each group's page linked
cat > grid.json <<'G'
{"train": {"steps": 16, "layers": 2, "hidden": 8}, "precisions": ["bf16-amp"], "seeds": [1, 2], "vary": {"lr": [0.1, 1e30]}}
G
"$A" sweep grid.json --jobs 2 --out sw >/dev/null 2>&1; rc=$?   # lr 1e30 ends NaN: exit 1
[ $rc -eq 1 ] || bad "sweep: exit $rc, expected 1 (runs at lr 1e30 end non-finite)"
if "$A" report sw --formats png --quiet >/dev/null 2>err; then
    ok "report of a sweep folder"
    # the mean tail loss of bf16-amp__none at lr 0.1 over the two seeds, from summary.csv
    want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                    $c["name"] == "bf16-amp__none" && $c["lr"] == "0.1" { s += $c["tail_mean_loss"]; n++ }
                    END { printf "%.5g", s / n }' sw/summary.csv)
    grep -q "<td>bf16-amp__none</td><td>lr=0.1</td><td>2</td><td>[^<]*</td><td>[^<]*</td><td>$want</td>" sw/report/index.html \
        && ok "sweep mean over seeds ($want)" || bad "sweep table lacks the mean $want: $(grep -o '<tr><td>bf16-amp__none</td><td>lr=0.1</td>[^\n]*' sw/report/index.html)"
    grep -q '<td>bf16-amp__none</td><td>lr=1e+30</td><td>2</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>0</td><td><b class=warn>2</b>' \
        sw/report/index.html && ok "diverged runs counted" || bad "diverged runs not counted"
    [ -f sw/seed1__lr0.1/report/index.html ] && grep -q 'href="../seed1__lr0.1/report/index.html"' sw/report/index.html \
        && ok "group pages written and linked" || bad "group pages missing"
    [ -f sw/report/fig7_sweep.png ] && ok "sweep figure" || bad "no sweep figure"
else
    bad "report of a sweep folder failed: $(cat err)"
fi
# several folders on one page
if "$A" report c1 nan --out ov --formats png --quiet >/dev/null 2>err; then
    grep -q '<b>c1/bf16-amp__none</b>' ov/index.html && grep -q '<b>nan</b>' ov/index.html \
        && ok "overlay of a compare and a run folder" || bad "overlay lacks runs"
else
    bad "overlay failed: $(cat err)"
fi
"$A" report c1 nan >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && ok "several folders without --out: exit 2" || bad "several folders without --out: exit $rc"

# --data: a CSV of float features with a named label column anywhere, and the
# same data as a .npy pair, train identically; 3 classes, 5 features
awk 'BEGIN { print "f1,label,f2,f3,f4,f5"; s = 7
             for (i = 0; i < 200; i++) { for (k = 0; k < 5; k++) { s = (s * 1103515245 + 12345) % 2147483648; x[k] = s / 2147483648 * 4 - 2 }
                                         y = (x[0] > 0) + (x[1] > 0.5); printf "%.6f,%d,%.6f,%.6f,%.6f,%.6f\n", x[0], y, x[1], x[2], x[3], x[4] } }' > own.csv
if "$A" train --data own.csv --steps 30 --out own1 >/dev/null 2>err; then
    ok "--data CSV with a label column"
    grep -q '"data":	"own.csv"' own1/config.json || bad "config.json does not name own.csv"
    if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
        /usr/bin/python3 -c '
import numpy as np
a = np.loadtxt("own.csv", delimiter=",", skiprows=1, dtype=np.float64)
np.save("own_x.npy", np.delete(a, 1, axis=1).astype(np.float32)); np.save("own_y.npy", a[:, 1].astype(np.int64))'
        "$A" train --data own_x.npy,own_y.npy --steps 30 --out own2 >/dev/null 2>err || bad "--data .npy pair: $(cat err)"
        cmp -s own1/metrics.csv own2/metrics.csv && ok "CSV and .npy pair train identically" || bad "CSV and .npy pair differ"
    else
        echo "skipped: use: --data .npy pair: /usr/bin/python3 has no numpy to write one"
    fi
else
    bad "--data CSV: $(cat err)"
fi
sed '5s/.*/0.5,1,oops,0,0,0/' own.csv > bad.csv
"$A" train --data bad.csv --steps 3 --out own3 >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q "bad.csv:5: field 3 ('oops') is not a number" err && ok "a bad row names file:line" || bad "bad row: exit $rc: $(cat err)"

# small things: limits named, batch larger than the data, truncated policy JSON
"$A" train --batch 100000000 >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q -- '--batch 100000000: the limit is 1048576' err && ok "--batch limit named" || bad "--batch limit: $(cat err)"
"$A" train --batch 5000 --steps 2 --out big >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q 'larger than the data set (1797 rows' err && ok "--batch larger than the data refused" || bad "--batch 5000: exit $rc $(cat err)"
printf '{"name": "mine",\n  "roles": {"weight": ' > trunc.json
"$A" train --policy trunc.json --steps 2 --out tp >/dev/null 2>err; rc=$?
[ $rc -eq 2 ] && grep -q 'trunc.json:2:23: not valid JSON' err && ok "truncated policy: line and column" || bad "truncated policy: $(cat err)"

# progress: on a terminal a line per finished run with its time, and a step
# counter for train; nothing extra when stderr is not a terminal
if command -v script >/dev/null 2>&1; then
    script -qec "'$A' compare --precisions fp16-amp --scalers none,torch --steps 20 --out p1" /dev/null >tty.txt 2>&1
    grep -Eq '\[3/3\] [a-z0-9_-]+ ok [0-9]+\.[0-9] s' tty.txt && ok "compare progress on a terminal" || bad "compare progress: $(cat tty.txt)"
    script -qec "'$A' train --steps 20 --out p2" /dev/null >tty.txt 2>&1
    grep -q 'step 20/20 loss' tty.txt && ok "train step counter on a terminal" || bad "train progress: $(cat tty.txt)"
else
    echo "skipped: use: progress on a terminal: no script(1) to make one"
fi
"$A" compare --precisions fp16-amp --scalers none,torch --steps 20 --out p3 >/dev/null 2>err
[ ! -s err ] && ok "compare quiet without a terminal" || bad "compare printed on a non-terminal: $(cat err)"
"$A" train --steps 20 --out p4 >/dev/null 2>err
[ ! -s err ] && ok "train quiet without a terminal" || bad "train printed on a non-terminal: $(cat err)"

[ $fails -eq 0 ] || { echo "use: $fails failures"; exit 1; }
echo "use: all ok"
