#!/usr/bin/python3
"""Cost of a training step under ampsim.torch.emulate against plain PyTorch FP32.

A GPT-like model (4 blocks, width 128, 4 heads, context 64, batch 16, vocabulary
96; functional attention), AdamW, one thread. Measured in one run:
  plain      the FP32 step without emulate
  every 10   emulate(fp16-amp) with a GradScaler("torch"), statistics and
             tensors.csv/hist.csv rows every 10 steps (log_every=10)
  every 1    the same with statistics every step (log_every=1)
and the ratios to plain (targets: at most 2x and 3x). Not a test.

Usage: /usr/bin/python3 python/bench_torch.py [--steps N] [--repeat R]"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tests"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ampsim.torch as at  # noqa: E402
from torch_models import TinyGPT, token_batches  # noqa: E402


def step_time(model, data, mode, log_every, out):
    """Mean seconds per step over the batches after the first (warm-up) one."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    emu = at.emulate(model, "fp16-amp", out=out, log_every=log_every, hist_every=log_every) if mode else None
    sc = at.GradScaler("torch") if mode else None
    times = []
    if emu:
        emu.__enter__()
    try:
        for x, y in data:
            t0 = time.perf_counter()
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad()
            if sc:
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
            else:
                loss.backward()
                opt.step()
            times.append(time.perf_counter() - t0)
    finally:
        if emu:
            emu.__exit__(None, None, None)
    times = times[1:]
    return sum(times) / len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=21)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = token_batches(a.steps, 16, 64, vocab=96)
    init = TinyGPT(vocab=96, C=128, heads=4, layers=4, ctx=64).state_dict()
    best = {}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.repeat):
            for name, mode, le in (("plain", False, 0), ("every 10", True, 10), ("every 1", True, 1)):
                m = TinyGPT(vocab=96, C=128, heads=4, layers=4, ctx=64)
                m.load_state_dict(init)
                v = step_time(m, data, mode, le, os.path.join(d, "%s-%d" % (name.replace(" ", ""), r)))
                best[name] = min(best.get(name, v), v)
    p = best["plain"]
    print("torch %s, 1 thread, GPT-like 4x128, ctx 64, batch 16, %d steps (best of %d)" % (torch.__version__, a.steps, a.repeat))
    print("%-10s %9s %7s %7s" % ("step", "ms", "ratio", "target"))
    for name, target in (("plain", ""), ("every 10", "2.0"), ("every 1", "3.0")):
        print("%-10s %9.2f %7.2f %7s" % (name, best[name] * 1e3, best[name] / p, target))


if __name__ == "__main__":
    main()
