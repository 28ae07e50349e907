#!/bin/sh
# make shots: report pages screenshotted in headless Chromium, to look at
# before a change to the page is called done. Builds small examples -- a
# compare, a GPT run, a run that goes NaN, a sweep, an overlay of three
# folders -- reports them, and writes
# SHOTS/<name>-1400.png and SHOTS/<name>-900.png (page widths 1400 and 900 px).
#   sh reports/shots.sh PATH_TO_AMPSIM [SHOTS]      (default SHOTS: shots)
set -eu
A=$1
OUT=${2:-shots}
command -v chromium >/dev/null 2>&1 || { echo "shots: chromium is not installed (.ci/deps.sh browser)" >&2; exit 2; }
mkdir -p "$OUT/runs"
R=$(cd "$OUT/runs" && pwd)
"$A" compare --precisions fp16-amp,bf16-amp --scalers none,static:1024,torch --run fp8-hybrid@delayed \
    --layers 4 --steps 200 --jobs 2 --out "$R/compare" >/dev/null
"$A" train --model gpt --layers 1 --dim 32 --heads 2 --ctx 16 --batch 4 --steps 20 --precision fp16-amp \
    --log-every 5 --hist-every 10 --force --out "$R/gpt" >/dev/null
"$A" train --lr 1e30 --steps 5 --force --out "$R/nan" >/dev/null || true
cat > "$R/grid.json" <<'G'
{"train": {"steps": 100, "layers": 3}, "precisions": ["fp16-amp", "bf16-amp"], "scalers": ["none", "torch"],
 "seeds": [1, 2], "vary": {"lr": [0.1, 0.3]}}
G
"$A" sweep "$R/grid.json" --jobs 2 --force --out "$R/sweep" >/dev/null
for d in compare gpt nan sweep overlay; do
    if [ $d = overlay ]; then
        "$A" report "$R/compare" "$R/gpt" "$R/sweep/seed1__lr0.3" --out "$R/overlay/report" --formats png --quiet >/dev/null
    else
        "$A" report "$R/$d" --formats png --quiet >/dev/null
    fi
    for w in 1400 900; do
        prof=$(mktemp -d)
        chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
            --disable-component-update --disable-sync --user-data-dir="$prof" --screenshot="$OUT/$d-$w.png" \
            --window-size=$w,3000 "file://$R/$d/report/index.html" >/dev/null 2>&1
        rm -rf "$prof"
        echo "$OUT/$d-$w.png"
    done
done
