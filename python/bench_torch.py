#!/usr/bin/python3
"""Cost of a training step under ampsim.torch.emulate against plain PyTorch FP32.

A GPT-like model (4 blocks, width 128, 4 heads, context 64, batch 16, vocabulary
96; functional attention), AdamW, one thread. Three configurations:
  plain      the FP32 step without emulate
  every 10   emulate(fp16-amp, or --policy) with GradScaler("torch") (for bf16
             policies "none"); statistics and their
             tensors.csv/hist.csv rows on every 10th step (log_every=10)
  every 1    the same with statistics on every step (log_every=1)
They run in blocks of 10 steps, taking turns, for several rounds. A block of an
emulated configuration is one emulate context with its run directory, so its
cost includes the hooks and the run log. Each round gives a ratio to that
round's plain block, and the median over the rounds is printed. Times are the
process's CPU time (one thread), which the other processes of a loaded machine
change less than the wall time. The targets are at
most 2x (every 10) and 3x (every 1). Not a test.

Usage: /usr/bin/python3 python/bench_torch.py [--rounds R]"""
import argparse
import os
import statistics
import sys
import tempfile
import time

# one thread for every pool before torch loads: torch.set_num_threads(1) leaves
# the BLAS and OpenMP pools free to spin on another core, which CPU time counts
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tests"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ampsim.torch as at  # noqa: E402
from torch_models import TinyGPT, token_batches  # noqa: E402

BLOCK = 10


def block(model, opt, data, log_every, out, policy="fp16-amp"):
    """CPU seconds of this process per step over one block of BLOCK steps
    (log_every None: plain). CPU time, not wall time: on a loaded machine the
    wall time also counts the other processes' turns."""
    emu = sc = None
    if log_every is not None:
        emu = at.emulate(model, policy, out=out, log_every=log_every, hist_every=log_every)
        sc = at.GradScaler("torch" if policy.startswith("fp16") else "none")
    t0 = time.process_time()
    if emu:
        emu.__enter__()
    try:
        for x, y in data:
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            if sc:
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
            else:
                loss.backward()
                opt.step()
    finally:
        if emu:
            emu.__exit__(None, None, None)
    return (time.process_time() - t0) / len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--policy", default="fp16-amp", help="policy of the emulated steps (default fp16-amp; "
                    "the GradScaler is 'torch' for fp16 policies, else 'none')")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = token_batches(BLOCK, 16, 64, vocab=96)
    configs = (("plain", None), ("every 10", 10), ("every 1", 1))
    models, opts = {}, {}
    for name, _ in configs:
        torch.manual_seed(0)
        models[name] = TinyGPT(vocab=96, C=128, heads=4, layers=4, ctx=64)
        opts[name] = torch.optim.AdamW(models[name].parameters(), lr=1e-3)
    times = {name: [] for name, _ in configs}
    with tempfile.TemporaryDirectory() as d:
        for name, le in configs:                      # warm-up block of each
            block(models[name], opts[name], data[:2], le, os.path.join(d, "warm-" + name.replace(" ", "")),
                  a.policy)
        for r in range(a.rounds):
            order = configs[r % 3:] + configs[:r % 3]
            for name, le in order:
                out = os.path.join(d, "%s-%d" % (name.replace(" ", ""), r))
                times[name].append(block(models[name], opts[name], data, le, out, a.policy))
    print("torch %s, 1 thread, GPT-like 4x128, ctx 64, batch 16, %s; %d rounds of %d-step blocks"
          % (torch.__version__, a.policy, a.rounds, BLOCK))
    print("%-10s %12s %14s %7s" % ("step", "median CPU ms", "median ratio", "target"))
    for name, target in (("plain", ""), ("every 10", "2.0"), ("every 1", "3.0")):
        ratios = [t / p for t, p in zip(times[name], times["plain"])]
        print("%-10s %12.1f %14.2f %7s" % (name, statistics.median(times[name]) * 1e3,
                                           statistics.median(ratios), target))


if __name__ == "__main__":
    main()
