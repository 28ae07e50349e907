#!/bin/sh
# make demo: a compare on the digits MLP -- the FP32 reference; fp16-amp with
# no scaling, a static scale and PyTorch's dynamic scaler; bf16-amp; fp8-hybrid
# with Transformer Engine's delayed and current scaling -- then the report.
# Prints the path of index.html. About half a minute on 2 cores.
#
#   sh reports/demo.sh PATH_TO_AMPSIM        (make demo does this)
#   AMPSIM_DEMO_DIR=dir   where to write (default: demo, which git ignores)
#   AMPSIM_DEMO_STEPS=N   training steps (default 800)
set -eu

AMPSIM=${1:-}
if [ -z "$AMPSIM" ] || [ ! -x "$AMPSIM" ]; then
    echo "usage: sh reports/demo.sh PATH_TO_AMPSIM (the built binary, e.g. build/ampsim)" >&2
    exit 2
fi
OUT=${AMPSIM_DEMO_DIR:-demo}
STEPS=${AMPSIM_DEMO_STEPS:-800}
JOBS=$(nproc 2>/dev/null || echo 2)

# The model: a 4-layer, 32-wide ReLU MLP on the 1797 8x8 digits, SGD lr 0.1,
# batch 32. Deep and narrow enough that fp16 without loss scaling flushes about
# 1% of the gradient values to zero, small enough to train in seconds.
TRAIN="--model mlp --data digits --layers 4 --hidden 32 --lr 0.1 --batch 32 --steps $STEPS --seed 1 --log-every 10 --hist-every 50"
# compare trains the FP32 reference (folder ref) and each pair: fp16-amp with no
# scaling, a static scale of 1024 and PyTorch's GradScaler rule; bf16-amp without
# scaling; fp8-hybrid with Transformer Engine's delayed and current scaling.
PAIRS="--precisions fp16-amp --scalers none,static:1024,torch --run bf16-amp@none --run fp8-hybrid@delayed --run fp8-hybrid@current"

need() {
    if ! "$AMPSIM" "$1" --help >/dev/null 2>&1; then
        echo "demo: '$AMPSIM $1' is not available in this build (the demo needs: compare, bench accum, report)." >&2
        echo "demo: build the tree with every subcommand (make) and run make demo again." >&2
        exit 2
    fi
}
need compare
need bench
need report

# Start from a clean folder, but never delete one the demo did not make.
if [ -e "$OUT" ]; then
    if [ -f "$OUT/.ampsim-demo" ]; then
        rm -rf "$OUT"
    else
        echo "demo: $OUT exists and was not made by the demo; move it away or set AMPSIM_DEMO_DIR" >&2
        exit 2
    fi
fi
mkdir -p "$OUT"
: > "$OUT/.ampsim-demo"

start=$(date +%s)
echo "demo: ampsim compare into $OUT (7 runs of $STEPS steps, $JOBS at a time)" >&2
# shellcheck disable=SC2086
"$AMPSIM" compare $PAIRS --jobs "$JOBS" $TRAIN --out "$OUT" >&2

echo "demo: ampsim bench accum (figure 6)" >&2
"$AMPSIM" bench accum --csv > "$OUT/accum.csv.tmp.$$"
mv "$OUT/accum.csv.tmp.$$" "$OUT/accum.csv"

echo "demo: ampsim report $OUT" >&2
index=$("$AMPSIM" report --formats png,pdf,svg "$OUT")
end=$(date +%s)
echo "demo: done in $((end - start)) s; open this page:" >&2
echo "$index"
