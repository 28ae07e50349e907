#!/usr/bin/python3
"""ampsim beside PyTorch, measured in one run: CPU time per training step, one
thread, the same model shapes and optimizer (docs/speed-repro.md). No test uses
it; it prints the figures the docs quote.

  mlp  64-32-10 ReLU, batch 32, SGD lr 0.1 (ampsim's default MLP)
  gpt  4 layers, width 128, 4 heads, context 64, batch 16, AdamW lr 1e-3
       (the model of tests/ref/gpt_torch.py: nanoGPT, tanh GELU, tied lm_head)

PyTorch (Debian's 1.13, CPU): float32 steps on fixed random data, timed one by
one with time.process_time after warm-up; the median step is kept.
ampsim: `ampsim train` run twice as a child process, with S and 2S steps and no
logging (--log-every 0 --hist-every 0, or with statistics every 10 steps where
said); the step time is the difference of the children's CPU time divided by
S, so that start-up and data loading cancel. Each ampsim variant:
  fp32 --gemm reproducible, fp32 --gemm blas, fp16-amp (statistics every 10
  steps) --gemm reproducible.
OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 hold for both (Debian's torch
calls OpenBLAS, whose own pool torch.set_num_threads does not limit).

Run:  /usr/bin/python3 tests/ref/bench_vs_torch.py [--ampsim build/ampsim] [--steps S]"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as g  # noqa: E402

GPT = dict(L=4, C=128, NH=4, T=64, B=16)
MLP = dict(B=32, H=32)


def torch_gpt_step_ms(steps):
    g.L, g.NH, g.C, g.T = GPT["L"], GPT["NH"], GPT["C"], GPT["T"]
    torch.manual_seed(0)
    model = g.GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (GPT["B"], GPT["T"]), generator=gen)
    y = torch.randint(0, 256, (GPT["B"], GPT["T"]), generator=gen)
    return torch_time(lambda: step(model, opt, lambda: model(x, y)), steps)


def torch_mlp_step_ms(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, MLP["H"]), torch.nn.ReLU(), torch.nn.Linear(MLP["H"], 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(5)
    x = torch.rand((MLP["B"], 64), generator=gen)
    y = torch.randint(0, 10, (MLP["B"],), generator=gen)
    lossf = torch.nn.CrossEntropyLoss()
    return torch_time(lambda: step(model, opt, lambda: lossf(model(x), y)), steps)


def step(model, opt, loss_fn):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    opt.step()


def torch_time(fn, steps):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(steps):
        c0 = time.process_time()
        fn()
        ts.append(time.process_time() - c0)
    return statistics.median(ts) * 1e3


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ampsim_step_ms(binary, args, steps):
    with tempfile.TemporaryDirectory() as d:
        t = []
        for s in (steps, 2 * steps):
            c0 = child_cpu()
            subprocess.run([binary, "train"] + args + ["--steps", str(s), "--out", os.path.join(d, "r%d" % s)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t.append(child_cpu() - c0)
    return (t[1] - t[0]) / steps * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ampsim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "ampsim"))
    ap.add_argument("--steps", type=int, default=10, help="GPT steps S of the shorter ampsim run (MLP: 400 S)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    gpt = ["--model", "gpt", "--layers", str(GPT["L"]), "--dim", str(GPT["C"]), "--heads", str(GPT["NH"]),
           "--ctx", str(GPT["T"]), "--batch", str(GPT["B"]), "--optim", "adamw", "--lr", "0.001", "--threads", "1"]
    mlp = ["--hidden", str(MLP["H"]), "--batch", str(MLP["B"]), "--lr", "0.1", "--threads", "1"]
    quiet = ["--log-every", "0", "--hist-every", "0"]
    stats10 = ["--log-every", "10", "--hist-every", "0"]
    variants = [("fp32, --gemm reproducible", ["--precision", "fp32", "--gemm", "reproducible"] + quiet),
                ("fp32, --gemm blas", ["--precision", "fp32", "--gemm", "blas"] + quiet),
                ("fp16-amp + stats/10, reproducible", ["--precision", "fp16-amp", "--gemm", "reproducible"] + stats10)]
    print("torch %s, 1 thread; CPU time per step (ms); ratio = PyTorch fp32 / ampsim" % torch.__version__)
    for name, base, steps, tfn in (("mlp 64-32-10, B=32, SGD", mlp, 400 * args.steps, torch_mlp_step_ms),
                                   ("gpt L=4 C=128 T=64, B=16, AdamW", gpt, args.steps, torch_gpt_step_ms)):
        tt = tfn(max(20, min(steps, 400)))
        print("%-34s PyTorch fp32 %9.3f ms" % (name, tt))
        for vname, vargs in variants:
            ta = ampsim_step_ms(args.ampsim, base + vargs, steps)
            print("  ampsim %-34s %9.3f ms   ratio %5.2f" % (vname, ta, tt / ta))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
