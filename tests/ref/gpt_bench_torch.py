#!/usr/bin/python3
"""Tokens per second of one float32 training step of the GPT that
`ampsim bench train --model gpt` times (sim/bench_train.c: L=4, C=128, NH=4,
T=64, batch B=4, so B*T = 256 tokens a step), in Debian's PyTorch 1.13 on the
CPU with one thread (torch.set_num_threads(1), as ampsim's bench runs one
thread). Only for the README figure; no test uses PyTorch.

The model is the one of tests/ref/gpt_torch.py (nanoGPT, bias=True, no dropout,
manual causal attention, tanh GELU, lm_head tied to wte), imported from it with
the sizes above. A step is: zero_grad(set_to_none), forward, cross-entropy,
backward, optimizer step, on fixed random tokens (as the ampsim bench). Two
optimizers are timed: SGD with momentum 0.9, lr 0.01 (what ampsim's bench uses:
amp_optim_defaults(AMP_OPT_SGD, 0.01)) and AdamW (lr 1e-3, wd 0.01).

One thread means OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 too, set here
before torch is imported: Debian's torch calls OpenBLAS (pthread build), whose
own thread pool torch.set_num_threads does not limit (without them the process
ran a second busy thread). ampsim sets openblas_set_num_threads(1) likewise.

Timing as in ampsim's bench: CPU time (time.process_time: every thread of this
process, which with one thread is the calling thread's time, as ampsim measures),
so that other processes on a loaded machine count little; rounds alternate
between the two optimizers and the best step of each is kept. Wall-clock best
steps are printed too.

Run:  /usr/bin/python3 tests/ref/gpt_bench_torch.py [--rounds N]"""
import argparse
import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as g  # noqa: E402  (model code; sizes are module globals)

L, NH, C, T, B = 4, 4, 128, 64, 4


def make(optim):
    g.L, g.NH, g.C, g.T = L, NH, C, T
    torch.manual_seed(0)
    model = g.GPT()
    if optim == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    return model, opt


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    opt.step()
    return loss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="timed steps per optimizer (best is kept)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (B, T), generator=gen)
    y = torch.randint(0, 256, (B, T), generator=gen)
    cases = {k: make(k) for k in ("sgd", "adamw")}
    for k, (m, o) in cases.items():          # warm-up (allocator, optimizer state)
        for _ in range(3):
            step(m, o, x, y)
    best_cpu = {k: float("inf") for k in cases}
    best_wall = {k: float("inf") for k in cases}
    for _ in range(args.rounds):
        for k, (m, o) in cases.items():
            c0, w0 = time.process_time(), time.perf_counter()
            step(m, o, x, y)
            c1, w1 = time.process_time(), time.perf_counter()
            best_cpu[k] = min(best_cpu[k], c1 - c0)
            best_wall[k] = min(best_wall[k], w1 - w0)
    ntok = B * T
    print("torch %s, %d thread(s), %d in the process; gpt L=%d C=%d NH=%d T=%d, B=%d (%d tokens a step), float32, best of %d"
          % (torch.__version__, torch.get_num_threads(), len(os.listdir("/proc/self/task")), L, C, NH, T, B, ntok, args.rounds))
    print("%-18s %12s %12s %13s %13s" % ("optimizer", "cpu ms", "tok/s (cpu)", "wall ms", "tok/s (wall)"))
    for k in cases:
        name = "sgd momentum 0.9" if k == "sgd" else "adamw"
        print("%-18s %12.3f %12.0f %13.3f %13.0f" % (name, best_cpu[k] * 1e3, ntok / best_cpu[k],
                                                      best_wall[k] * 1e3, ntok / best_wall[k]))


if __name__ == "__main__":
    main()
