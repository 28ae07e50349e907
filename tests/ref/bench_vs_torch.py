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

--large: instead, a GPT of 6 layers, width 384, 6 heads, context 256, batch 8
(about 11M parameters; AdamW lr 6e-4), each side in a child process of its own
so that each peak RSS (getrusage of that child: ru_maxrss) is its own:
  PyTorch fp32: median CPU time of --large-steps steps after 2 warm-up steps.
  ampsim fp16-amp: the difference of S and 2S steps (S = --large-steps) without
  statistics (--log-every 0 --hist-every 0) and with statistics at every step
  (--log-every 1 --hist-every 1); statistics every 50 steps cost
  t_plain + (t_stats - t_plain) / 50 a step. Also ampsim fp32 without statistics.
Tokens/s = B*T / step time; ratio = ampsim tokens/s / PyTorch tokens/s.

--threads: no PyTorch; ampsim's step at --threads 1 and 2 (wall time, the
difference of S and 2S steps, best of --rounds) for the GPT above (fp32) and
the MLP 64-512-512-10 at batch 256 (fp32), and the sha256 of each run's
metrics.csv, tensors.csv and hist.csv (statistics every 10 steps), which must
not depend on the thread count. Prints the load average beside each figure:
two threads only help when two cores are free.

Run:  /usr/bin/python3 tests/ref/bench_vs_torch.py [--ampsim build/ampsim] [--steps S]
      /usr/bin/python3 tests/ref/bench_vs_torch.py --large [--large-steps S]
      /usr/bin/python3 tests/ref/bench_vs_torch.py --threads [--rounds R]"""
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


LARGE = dict(L=6, C=384, NH=6, T=256, B=8)


def torch_large_child(steps):
    """In a child process: PyTorch fp32 step time (ms) of the large GPT."""
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    g.L, g.NH, g.C, g.T = LARGE["L"], LARGE["NH"], LARGE["C"], LARGE["T"]
    torch.manual_seed(0)
    model = g.GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (LARGE["B"], LARGE["T"]), generator=gen)
    y = torch.randint(0, 256, (LARGE["B"], LARGE["T"]), generator=gen)
    ts = []
    for i in range(2 + steps):
        c0 = time.process_time()
        step(model, opt, lambda: model(x, y))
        if i >= 2:
            ts.append(time.process_time() - c0)
    nparams = sum(p.numel() for p in model.parameters())
    print("%.6f %d" % (statistics.median(ts) * 1e3, nparams))


def run_child(cmd):
    """Runs cmd; returns (stdout, CPU seconds, peak RSS in MiB) of that child alone."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d)" % (" ".join(cmd), p.returncode))
    return out.decode(), ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def ampsim_large(binary, args, steps, d):
    """ampsim step time (ms) from S and 2S steps, and the peak RSS (MiB) of the longer run."""
    t, rss = [], 0.0
    for s in (steps, 2 * steps):
        _, cpu, rss = run_child([binary, "train"] + args + ["--steps", str(s), "--out", os.path.join(d, "r%d" % s)])
        t.append(cpu)
    return (t[1] - t[0]) / steps * 1e3, rss


def large(binary, steps):
    L = LARGE
    ntok = L["B"] * L["T"]
    out, _, trss = run_child([sys.executable, os.path.abspath(__file__), "--torch-large-child", str(steps)])
    tt, nparams = float(out.split()[0]), int(out.split()[1])
    print("torch %s, 1 thread; gpt L=%d C=%d NH=%d T=%d, B=%d (%d parameters, %d tokens a step), AdamW; CPU time"
          % (torch.__version__, L["L"], L["C"], L["NH"], L["T"], L["B"], nparams, ntok))
    print("%-40s %10s %9s %9s %8s" % ("", "ms/step", "tok/s", "peak MiB", "ratio"))
    print("%-40s %10.1f %9.0f %9.0f %8s" % ("PyTorch fp32", tt, ntok / tt * 1e3, trss, "1.00"))
    base = ["--model", "gpt", "--layers", str(L["L"]), "--dim", str(L["C"]), "--heads", str(L["NH"]),
            "--ctx", str(L["T"]), "--batch", str(L["B"]), "--optim", "adamw", "--lr", "0.0006", "--threads", "1"]
    quiet = ["--log-every", "0", "--hist-every", "0"]
    every = ["--log-every", "1", "--hist-every", "1"]
    with tempfile.TemporaryDirectory() as d:
        rows = []
        t32, r32 = ampsim_large(binary, base + ["--precision", "fp32"] + quiet, steps, os.path.join(d, "a"))
        rows.append(("ampsim fp32, no statistics", t32, r32))
        tp, rp = ampsim_large(binary, base + ["--precision", "fp16-amp"] + quiet, steps, os.path.join(d, "b"))
        rows.append(("ampsim fp16-amp, no statistics", tp, rp))
        ts, rs = ampsim_large(binary, base + ["--precision", "fp16-amp"] + every, steps, os.path.join(d, "c"))
        rows.append(("ampsim fp16-amp, statistics every step", ts, rs))
        rows.append(("ampsim fp16-amp, statistics every 50", tp + (ts - tp) / 50, max(rp, rs)))
        for name, t, rss in rows:
            print("%-40s %10.1f %9.0f %9.0f %8.2f" % (name, t, ntok / t * 1e3, rss, tt / t))
    sys.stdout.flush()


def run_sha(d, name):
    import hashlib
    h = hashlib.sha256()
    for f in ("metrics.csv", "tensors.csv", "hist.csv"):
        with open(os.path.join(d, name, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def threads(binary, rounds):
    gpt = ["--model", "gpt", "--layers", str(GPT["L"]), "--dim", str(GPT["C"]), "--heads", str(GPT["NH"]),
           "--ctx", str(GPT["T"]), "--batch", str(GPT["B"]), "--optim", "adamw", "--lr", "0.001", "--precision", "fp32"]
    mlp = ["--hidden", "512", "--layers", "3", "--batch", "256", "--lr", "0.1", "--precision", "fp32"]
    stats = ["--log-every", "10", "--hist-every", "10"]
    print("ampsim --threads 2 against --threads 1: wall time per step (difference of S and 2S steps, best of %d)" % rounds)
    print("%-34s %12s %12s %8s %18s %18s  %s" % ("model", "1 thread ms", "2 threads ms", "speed-up", "sha256 (1)",
                                                  "sha256 (2)", "load average"))
    for name, base, steps in (("gpt L=4 C=128 T=64, B=16, AdamW", gpt, 10), ("mlp 64-512-512-10, B=256", mlp, 200)):
        t, sha = {}, {}
        with tempfile.TemporaryDirectory() as d:
            for th in (1, 2):
                best = float("inf")
                for r in range(rounds):
                    w = []
                    for s in (steps, 2 * steps):
                        nm = "t%d_r%d_s%d" % (th, r, s)
                        w0 = time.perf_counter()
                        subprocess.run([binary, "train"] + base + stats + ["--threads", str(th), "--steps", str(s),
                                       "--out", os.path.join(d, nm)], check=True, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                        w.append(time.perf_counter() - w0)
                    best = min(best, (w[1] - w[0]) / steps * 1e3)
                t[th] = best
                sha[th] = run_sha(d, "t%d_r0_s%d" % (th, 2 * steps))
        load = " ".join("%.2f" % x for x in os.getloadavg())
        print("%-34s %12.2f %12.2f %8.2f %18s %18s  %s%s" % (name, t[1], t[2], t[1] / t[2], sha[1], sha[2], load,
                                                           "" if sha[1] == sha[2] else "  BYTES DIFFER"))
    sys.stdout.flush()


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
    ap.add_argument("--large", action="store_true", help="the 6-layer, width-384, context-256 GPT instead")
    ap.add_argument("--large-steps", type=int, default=3, help="steps S of --large (ampsim runs S and 2S)")
    ap.add_argument("--torch-large-child", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--threads", action="store_true", help="ampsim at --threads 1 and 2 (no PyTorch)")
    ap.add_argument("--rounds", type=int, default=3, help="--threads: best of R rounds")
    args = ap.parse_args()
    if args.threads:
        threads(args.ampsim, args.rounds)
        return
    if args.torch_large_child:
        torch_large_child(args.torch_large_child)
        return
    if args.large:
        large(args.ampsim, args.large_steps)
        return
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
        ts = []
        for vname, vargs in variants:
            ta = ampsim_step_ms(args.ampsim, base + vargs, steps)
            ts.append(ta)
            print("  ampsim %-34s %9.3f ms   ratio %5.2f" % (vname, ta, tt / ta))
        print("  ampsim fp16-amp + stats/10 over ampsim fp32 (reproducible): %.2f" % (ts[2] / ts[0]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
