#!/usr/bin/python3
"""Cost of a training step under ampsim.torch.emulate against plain PyTorch FP32.

Models: a GPT-like model (4 blocks, width 128, 4 heads, context 64, batch 16,
vocabulary 96; functional attention) and the model zoo of the coverage test
(python/tests/zoo_models.py: resnet18, mobilenet_v3_small, a small
VisionTransformer, nn.TransformerEncoder, an LSTM and a GRU language model;
batches --scale times the test's), and, when named, torchvision models that
are not in the zoo (MORE below),
SGD with momentum (AdamW for the GPT), one thread. Three configurations each:
  plain      the FP32 step without emulate
  every 10   emulate(fp16-amp, or --policy) with GradScaler("torch") (for bf16
             policies "none"); statistics and their
             tensors.csv/hist.csv rows on every 10th step (log_every=10)
  every 1    the same with statistics on every step (log_every=1)
They run in blocks of 10 steps, taking turns, for several rounds. An emulated
block is the second 10 steps of one emulate context with its run directory:
the steady state of a training run, whose every 10th step has statistics and
writes its tensors.csv/hist.csv rows (step 10 here), and the scaler's work
and the metrics row in every step. What a run pays once is timed apart: the
context's first 10 steps (the run log's opening, the first call of each
module and of each unit, which runs op by op and records its coverage rows,
each GEMM site's first setup) cost this much more than the steady block,
printed as "first10 +ms"; entering the context (its hooks, the run
directory's check) and leaving it (the run directory's files committed,
summary.json written) are printed as "open+close ms". --first-block times the
context's first 10 steps instead of its second, as a 10-step run pays them
(and --with-open-close adds open and close to them). Each round gives a ratio
to that round's plain block, and the median over the rounds is printed. Times
are the process's CPU time (one thread; every pool pinned to one thread before
torch loads), which the other processes of a loaded machine change less than
the wall time. The targets are at most 2x (every 10) and 3x (every 1). --phases
also prints where a step's time goes: its forward and loss, its backward
(with zero_grad) and its optimizer step (with the scaler's unscaling and
update, which ends an emulated step and writes its rows), and the minor page
faults of a step (fresh pages that the kernel zeroed). --spread prints
the lowest and highest round's ratio next to each median: on shared cores a
round's ratio moves by a tenth or more. --off PART adds a fourth
configuration, every 10 with that part of the emulation switched off
(SWITCHES), which takes its turn in each round, and prints the median over
the rounds of every 10's time over its turn's: a change of a few percent,
which the spread between runs hides, measured within one process. Not a
test.

Usage: /usr/bin/python3 python/bench_torch.py [--rounds R] [--scale S] [--policy P] [--op-by-op]
       [--first-block] [--with-open-close] [--phases] [--spread] [--off PART] [MODEL ...]
(models: gpt and the zoo's names, the default; and MORE's names)"""
import argparse
import importlib
import os
import resource
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
from zoo_models import _img, _tv, _xent, train_step, zoo  # noqa: E402

BLOCK = 10


def _gpt():
    data = token_batches(BLOCK, 16, 64, vocab=96)
    return (lambda: TinyGPT(vocab=96, C=128, heads=4, layers=4, ctx=64), lambda s: data[s % len(data)],
            lambda m, x, y: F.cross_entropy(m(x).flatten(0, 1), y.flatten()), "adamw")


# torchvision models outside the zoo, run only when named: 10 classes, 32x32
# images, batches of this many (times --scale / 8)
MORE = {"shufflenet_v2_x0_5": 8, "regnet_x_400mf": 8, "efficientnet_b0": 8, "convnext_tiny": 4}


def setups(scale):
    out = {"gpt": _gpt()}
    for name, (make, batch, loss) in zoo(scale).items():
        out[name] = (make, batch, loss, "sgd")
    for name, n in MORE.items():
        out[name] = (_tv(name, num_classes=10), _img(32, 10, max(1, n * scale // 8)), _xent, "sgd")
    return out


PHASES = ("forward", "backward", "optimizer")      # the parts train_step times



# --off: switches of ampsim.torch that an extra configuration turns off
SWITCHES = {"castall": (("_castall", "ENABLED"),), "plans": (("_plan", "ENABLED"),),
            "lazy-sources": (("_grad", "LAZY"),),
            "units": (("_attn", "ENABLED"), ("_seq", "ENABLED"), ("_rnn_fused", "ENABLED"))}


class _Off:
    """The switches of SWITCHES[name] off while in use (a context manager;
    name None: nothing)."""

    def __init__(self, name):
        self.flags = [(importlib.import_module("ampsim.torch." + m), f) for m, f in SWITCHES.get(name, ())]

    def __enter__(self):
        self.old = [getattr(m, f) for m, f in self.flags]
        for m, f in self.flags:
            setattr(m, f, False)

    def __exit__(self, *exc):
        for (m, f), v in zip(self.flags, self.old):
            setattr(m, f, v)


def block(model, opt, batch, loss_fn, steps, log_every, out, policy="fp16-amp", first=False):
    """(CPU seconds of this process per step over one block, CPU seconds of
    entering and leaving its emulate context, [CPU seconds per step of each
    of PHASES, minor page faults per step], CPU seconds by which the
    context's first block of steps exceeds the timed one). log_every None:
    plain (0.0 for the others). An emulated block is the second of two blocks of steps in one emulate
    context (first: the first block, and no second). CPU time, not wall time:
    on a loaded machine the wall time also counts the other processes' turns."""
    emu = sc = None
    if log_every is not None:
        emu = at.emulate(model, policy, out=out, log_every=log_every, hist_every=log_every)
        sc = at.GradScaler("torch" if policy.startswith("fp16") else "none")
    data = [batch(s) for s in range(steps)]
    blocks = 1 if emu is None or first else 2
    phases = [[0.0] * len(PHASES) for _ in range(blocks)]
    times, faults = [], []
    t0 = time.process_time()
    if emu:
        emu.__enter__()
    t1 = time.process_time()
    try:
        for b in range(blocks):
            tb, fb = time.process_time(), _faults()
            for x, y in data:
                train_step(model, opt, loss_fn, x, y, sc, phases[b])
            times.append(time.process_time() - tb)
            faults.append(_faults() - fb)
    finally:
        t2 = time.process_time()
        if emu:
            emu.__exit__(None, None, None)
    t3 = time.process_time()
    extra = times[0] - times[1] if blocks == 2 else 0.0
    return times[-1] / steps, (t1 - t0) + (t3 - t2), [t / steps for t in phases[-1]] + [faults[-1] / steps], extra


def _faults():
    """The process's minor page faults so far (each a fresh page the kernel zeroed)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def bench(name, setup, rounds, policy="fp16-amp", with_open_close=False, first=False, off=None):
    """{config: (median ms per step, median ratio to plain, median open+close ms,
    [median ms per step of each of PHASES, median page faults per step],
    (lowest, highest) ratio of a round,
    median ms by which a context's first block exceeds its second)}; with
    off (a name of SWITCHES), also "off": every 10 with those switches off,
    taking its turn with the others, and "on/off": (the median over the
    rounds of every 10's time over its turn's, lowest, highest)."""
    make, batch, loss_fn, optname = setup
    configs = (("plain", None), ("every 10", 10), ("every 1", 1)) + ((("off", 10),) if off else ())
    models, opts = {}, {}
    for c, _ in configs:
        torch.manual_seed(0)
        models[c] = make()
        models[c].train()
        opts[c] = (torch.optim.AdamW(models[c].parameters(), lr=1e-3) if optname == "adamw" else
                   torch.optim.SGD(models[c].parameters(), lr=0.01, momentum=0.9))
    times = {c: [] for c, _ in configs}
    opens = {c: [] for c, _ in configs}
    parts = {c: [] for c, _ in configs}
    extras = {c: [] for c, _ in configs}
    with tempfile.TemporaryDirectory() as d:
        for c, le in configs:                      # warm-up block of each
            block(models[c], opts[c], batch, loss_fn, 2, le, os.path.join(d, "warm-" + c.replace(" ", "")), policy,
                  True)
        for r in range(rounds):
            k = r % len(configs)
            order = configs[k:] + configs[:k]
            for c, le in order:
                out = os.path.join(d, "%s-%d" % (c.replace(" ", ""), r))
                with _Off(off if c == "off" else None):
                    t, oc, ph, ex = block(models[c], opts[c], batch, loss_fn, BLOCK, le, out, policy, first)
                times[c].append(t + oc / BLOCK if with_open_close else t)
                opens[c].append(oc)
                parts[c].append(ph)
                extras[c].append(ex)
    res = {}
    for c, _ in configs:
        ratios = [t / p for t, p in zip(times[c], times["plain"])]
        res[c] = (statistics.median(times[c]) * 1e3, statistics.median(ratios), statistics.median(opens[c]) * 1e3,
                  [statistics.median(p[i] for p in parts[c]) * 1e3 for i in range(len(PHASES))]
                  + [statistics.median(p[len(PHASES)] for p in parts[c])],
                  (min(ratios), max(ratios)), statistics.median(extras[c]) * 1e3)
    if off:
        q = [t / u for t, u in zip(times["every 10"], times["off"])]
        res["on/off"] = (statistics.median(q), min(q), max(q))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=int, default=8,
                    help="zoo batches this many times the test's (default 8: 16 images, 32 sequences)")
    ap.add_argument("--policy", default="fp16-amp", help="policy of the emulated steps (default fp16-amp; "
                    "the GradScaler is 'torch' for fp16 policies, else 'none')")
    ap.add_argument("--op-by-op", action="store_true",
                    help="run LSTM/GRU steps, self-attention and MLP Sequentials op by op (not as fused Functions), "
                    "for comparison")
    ap.add_argument("--first-block", action="store_true",
                    help="time each emulate context's first 10 steps (its first calls) instead of its second 10 "
                    "(the steady state)")
    ap.add_argument("--with-open-close", action="store_true",
                    help="count entering and leaving each block's emulate context in its steps (with "
                    "--first-block: a 10-step run)")
    ap.add_argument("--phases", action="store_true",
                    help="also print each configuration's step split into its forward (and loss), backward "
                    "(and zero_grad) and optimizer step (and the scaler's), medians in CPU ms, and its minor page "
                    "faults")
    ap.add_argument("--spread", action="store_true",
                    help="also print the lowest and highest of the rounds' ratios, next to each median")
    ap.add_argument("--off", choices=sorted(SWITCHES),
                    help="also run the every-10 configuration with these parts off (castall: one node per weight "
                    "cast; plans: every GEMM set up anew; lazy-sources: a source node per view; units: as "
                    "--op-by-op), taking its turn in each round, and print each round's time with them on "
                    "over off (median, lowest, highest): a change measured within one process")
    ap.add_argument("models", nargs="*", help="gpt, the zoo's names (default: these) and, by name only, "
                    + ", ".join(MORE))
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.op_by_op:
        _Off("units").__enter__()       # (for the whole run)
    su = setups(a.scale)
    names = a.models or [n for n in su if n not in MORE]
    for n in names:
        if n not in su:
            ap.error("unknown model %r (known: %s)" % (n, ", ".join(su)))
    print("torch %s, 1 thread; %d rounds of %d-step blocks (%s of each emulate context); %s; zoo batch "
          "scale %d%s%s"
          % (torch.__version__, a.rounds, BLOCK, "the first" if a.first_block else "the second", a.policy, a.scale,
             "; RNN steps, attention and MLPs op by op" if a.op_by_op else "",
             "; steps include the context's open+close" if a.with_open_close else ""))
    print("%-20s %10s %12s %10s %12s %10s %15s %12s" % ("model", "plain ms", "every10 ms", "ratio", "every1 ms", "ratio",
                                                      "open+close ms", "first10 +ms"))
    results = []
    for n in names:
        r = bench(n, su[n], a.rounds, a.policy, a.with_open_close, a.first_block, a.off)
        results.append((n, r))
        spread = "   (rounds: %.2f-%.2fx, %.2f-%.2fx)" % (r["every 10"][4] + r["every 1"][4]) if a.spread else ""
        print("%-20s %10.1f %12.1f %9.2fx %12.1f %9.2fx %15.1f %12s%s"
              % (n, r["plain"][0], r["every 10"][0], r["every 10"][1], r["every 1"][0], r["every 1"][1],
                 r["every 10"][2], "-" if a.first_block else "%.1f" % r["every 10"][5], spread), flush=True)
        if a.off:
            print("%-20s %10s %12.1f %9.2fx   every 10 with %s off; on/off %.3f (rounds %.3f-%.3f)"
                  % (("", "", r["off"][0], r["off"][1], a.off) + r["on/off"]), flush=True)
    print("targets: every 10 <= 2.00x, every 1 <= 3.00x")
    if a.phases:
        print("\nphases, CPU ms per step (medians): %s; and minor page faults per step" % " / ".join(PHASES))
        print("%-20s %30s %30s %30s" % ("model", "plain", "every 10", "every 1"))
        for n, r in results:
            print("%-20s %30s %30s %30s" % ((n,) + tuple(" / ".join("%.2f" % v for v in r[c][3][:len(PHASES)])
                                                        + "; %.0f" % r[c][3][len(PHASES)]
                                                        for c in ("plain", "every 10", "every 1"))))


if __name__ == "__main__":
    main()
