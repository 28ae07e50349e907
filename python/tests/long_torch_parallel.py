"""The heavier checks of ampsim.torch across processes (make check-long): a
compare grid under mpirun (same bytes as one process; a rerun after a rank
is killed mid-grid completes it), and gloo DDP runs on localhost with
ampsim.torch.allreduce_hook against a single-process reference that applies
the documented order and roundings itself. Every test bounds its own time and
uses the loopback interface only."""
import datetime
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

import numpy as np

from support import HAVE_TORCH, HERE, NO_TORCH, PYDIR, import_torch, tmpdir

import ampsim

if HAVE_TORCH:
    torch = import_torch()
    import torch.distributed as dist
    import torch.multiprocessing as tmp_mp
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import ampsim.torch as at
    from test_torch_parallel import RUNS, folder, train
    from torch_models import TinyGPT, token_batches
try:
    import mpi4py  # noqa: F401
    HAVE_MPI4PY = shutil.which("mpirun") is not None
except ImportError:
    HAVE_MPI4PY = False
NO_MPI4PY = "mpi4py (python3-mpi4py) or mpirun (openmpi-bin) is not installed"

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
          "--mca", "oob_tcp_if_include", "lo", "-x", "KILL_AT", "-x", "PYTHONPATH"]
SCRIPT = r'''
import os, signal, sys
sys.path[:0] = [%r]
from test_torch_parallel import train, RUNS
import ampsim.torch as at

def kill(run, step):
    if os.environ.get("KILL_AT") == run.name and step == 1:
        os.kill(os.getpid(), signal.SIGKILL)

at.compare(lambda r: train(r, after_step=kill), runs=RUNS, out=sys.argv[1], log_every=1, hist_every=2)
''' % HERE


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
@unittest.skipUnless(HAVE_MPI4PY, NO_MPI4PY)
class TestMpiCompare(unittest.TestCase):
    def mpirun(self, out, kill_at=""):
        script = os.path.join(os.path.dirname(out), "grid.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        env = dict(os.environ, KILL_AT=kill_at, PYTHONPATH=PYDIR)
        return subprocess.run(MPIRUN + ["-np", "2", sys.executable, script, out], capture_output=True, text=True,
                              env=env, timeout=240)

    def test_mpirun_same_bytes_and_resume_after_a_killed_rank(self):
        d = tmpdir(self)
        serial = os.path.join(d, "serial")
        at.compare(train, runs=RUNS, out=serial, log_every=1, hist_every=2)
        out = os.path.join(d, "mpi")
        p = self.mpirun(out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(folder(out), folder(serial))
        # rank 1 (runs 1, 3, ...) killed in the middle of its run: the job ends, the run is half-written
        out = os.path.join(d, "killed")
        p = self.mpirun(out, kill_at="fp16-amp__torch-init-1024")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("rank 1", p.stdout + p.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "summary.csv")))
        self.assertFalse(os.path.exists(os.path.join(out, "fp16-amp__torch-init-1024", "summary.json")))
        self.assertTrue(os.path.exists(os.path.join(out, "fp16-amp__torch-init-1024", "config.json")))
        p = self.mpirun(out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(folder(out), folder(serial))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCompareProcesses(unittest.TestCase):
    def test_merge_module(self):
        d = tmpdir(self)
        out = os.path.join(d, "m")
        at.compare(train, runs=RUNS[:2], out=out, log_every=1)
        want = folder(out)
        os.remove(os.path.join(out, "summary.csv"))
        p = subprocess.run([sys.executable, "-m", "ampsim.torch.merge", out], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=PYDIR), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 of 2 runs finished", p.stdout)
        self.assertEqual(folder(out), want)
        p = subprocess.run([sys.executable, "-m", "ampsim.torch.merge", "--help"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=PYDIR), timeout=120)
        self.assertEqual(p.returncode, 0)
        self.assertIn("DIR", p.stdout)

    def test_threads_fix_the_bytes(self):
        # PyTorch's CPU kernels give other bits at other thread counts (the GPT's
        # losses differ between 1 and 2 threads); compare runs every run with
        # `threads` threads, so a parent with 2 threads matches 2 workers
        data = token_batches(3, 8, 16)

        def gpt(run):
            m = TinyGPT()
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            with run.emulate(m):
                for x, y in data:
                    loss = F.cross_entropy(m(x).flatten(0, 1), y.flatten())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()

        d = tmpdir(self)
        runs = [("fp32", None), ("bf16-amp", None)]
        torch.set_num_threads(2)
        try:
            at.compare(gpt, runs=runs, out=os.path.join(d, "a"), log_every=1)
            self.assertEqual(torch.get_num_threads(), 2)
        finally:
            torch.set_num_threads(1)
        at.compare(gpt, runs=runs, out=os.path.join(d, "b"), log_every=1, jobs=2)
        self.assertEqual(folder(os.path.join(d, "a")), folder(os.path.join(d, "b")))



# ---- DDP ----------------------------------------------------------------------------------------
STEPS = 4
B = 8       # rows per rank and step


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(B, 8, generator=g) * 4, torch.randint(0, 4, (B,), generator=g)


def ddp_worker(rank, R, port, fmt, scaling, d, die_at):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=R, timeout=datetime.timedelta(seconds=30))
        model = make_model()
        dist._DEFAULT_FIRST_BUCKET_BYTES = 512           # several buckets (DDP's first one is 1 MiB)
        ddp = DDP(model, bucket_cap_mb=0.0005)
        emu = at.emulate(model, "fp32", out=os.path.join(d, "run") if rank == 0 else None, log_every=2,
                         hist_every=0)
        ddp.register_comm_hook(None, at.allreduce_hook(fmt, scaling=scaling, emu=emu, grace=3))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with emu:
            for s in range(STEPS):
                x, y = batch(s, rank)
                loss = F.cross_entropy(ddp(x), y)
                if rank == die_at and s == 2:                  # the others wait in the hook's all-gather
                    os._exit(7)
                opt.zero_grad()
                loss.backward()
                opt.step()
                emu.step(loss)
        torch.save(model.state_dict(), os.path.join(d, "rank%d.pt" % rank))
    except Exception as e:
        with open(os.path.join(d, "rank%d.err" % rank), "w") as f:
            f.write(str(e))
        os._exit(1)


def ref_allreduce(gs, fmt, scaling):
    """The documented reduction, written here from its description
    (docs/parallel.md): per-tensor scale, rounding of each contribution, ring
    chunks with every partial sum rounded, unscale, mean."""
    R = len(gs)
    g = [x.detach().flatten().numpy().astype(np.float32) for x in gs]
    n = g[0].size
    s = np.ones(n, np.float32)
    if fmt != "fp32":
        maxf = ampsim.Format(fmt).max_finite
        blocks = [(0, n)] if scaling != "mx" else [(lo, min(n, lo + 32)) for lo in range(0, n, 32)]
        for lo, hi in blocks:
            amax = max(float(np.abs(a[lo:hi]).max()) for a in g)
            if scaling is not None and amax > 0:
                v = maxf / (R * amax)
                if scaling == "mx":
                    v = 2.0 ** np.floor(np.log2(v))
                s[lo:hi] = np.float32(min(max(v, 2.0 ** -126), 2.0 ** 127))
        q = [ampsim.round(a * s, fmt) for a in g]                        # float32 product, then rounded
        add = lambda a, b: ampsim.round(a.astype(np.float64) + b.astype(np.float64), fmt)  # noqa: E731
    else:
        q = g
        add = lambda a, b: a + b    # noqa: E731  float32 addition
    y = np.empty(n, np.float32)
    base, rem = divmod(n, R)
    for c in range(R):
        lo = c * base + min(c, rem)
        hi = lo + base + (1 if c < rem else 0)
        acc = q[c][lo:hi]
        for k in range(1, R):
            acc = add(acc, q[(c + k) % R][lo:hi])
        y[lo:hi] = acc
    y = y * (1.0 / s.astype(np.float64)).astype(np.float32)          # float32 product; 1 where unscaled
    y = (y.astype(np.float64) / R).astype(np.float32)
    return torch.from_numpy(y).reshape(gs[0].shape)


def reference(R, fmt, scaling):
    """Single process: each rank's gradient on its rows, the reference
    reduction per parameter, the same SGD step."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    params = list(model.parameters())
    for s in range(STEPS):
        per = []
        for r in range(R):
            x, y = batch(s, r)
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
            per.append([p.grad.clone() for p in params])
        for k, p in enumerate(params):
            p.grad = ref_allreduce([per[r][k] for r in range(R)], fmt, scaling)
        opt.step()
    return model.state_dict()


def read(path):
    with open(path) as f:
        return f.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestDdpHook(unittest.TestCase):
    def launch(self, R, fmt, scaling, die_at=-1, limit=120):
        d = tmpdir(self)
        ctx = tmp_mp.get_context("fork")
        port = free_port()
        procs = [ctx.Process(target=ddp_worker, args=(r, R, port, fmt, scaling, d, die_at)) for r in range(R)]
        t0 = time.monotonic()
        for p in procs:
            p.start()
        for p in procs:
            p.join(max(1, limit - (time.monotonic() - t0)))
        alive = [p for p in procs if p.is_alive()]
        for p in alive:
            os.kill(p.pid, signal.SIGKILL)
            p.join()
        self.assertEqual(alive, [], "ranks still running after %d s" % limit)
        return d, [p.exitcode for p in procs], time.monotonic() - t0

    def check_run(self, R, fmt, scaling):
        d, codes, _ = self.launch(R, fmt, scaling)
        errs = {r: read(os.path.join(d, "rank%d.err" % r)) for r in range(R)
                if os.path.exists(os.path.join(d, "rank%d.err" % r))}
        self.assertEqual(codes, [0] * R, errs)
        ref = reference(R, fmt, scaling)
        for r in range(R):
            w = torch.load(os.path.join(d, "rank%d.pt" % r))
            for k, v in ref.items():
                self.assertTrue(torch.equal(w[k], v), "R=%d %s rank %d %s: max diff %g"
                                % (R, fmt, r, k, float((w[k] - v).abs().max())))
        return d

    def test_e5m2_per_tensor_two_and_four_ranks(self):
        for R in (2, 4):
            d = self.check_run(R, "e5m2", "per-tensor")
            run = ampsim.read_run(os.path.join(d, "run"), pandas=False)
            t = run["tensors"]
            rows = t[np.char.startswith(t["tensor"], "bucket")]
            self.assertEqual(sorted(set(rows["step"].tolist())), [0, 2])
            names = sorted(set(rows["tensor"].tolist()))
            self.assertGreater(len(names), 2, names)                    # several buckets, two rows each
            n_params = sum(p.numel() for p in make_model().parameters())
            main = rows[~np.char.endswith(rows["tensor"], "_vs_fp32")]
            vs = rows[np.char.endswith(rows["tensor"], "_vs_fp32")]
            for s in (0, 2):
                # R quantizations and R - 1 partial sums of every gradient value
                self.assertEqual(int(main["n"][main["step"] == s].sum()), (2 * R - 1) * n_params)
                self.assertEqual(int(vs["n"][vs["step"] == s].sum()), n_params)
            self.assertTrue((main["format"] == "e5m2").all())
            # step 0 (one bucket): RMS relative error of the reduced gradient against the FP32 reduction
            model = make_model()
            per = []
            for r in range(R):
                model.zero_grad()
                x, y = batch(0, r)
                F.cross_entropy(model(x), y).backward()
                per.append([p.grad.clone() for p in model.parameters()])
            rel = []
            for k in range(len(per[0])):
                a = ref_allreduce([g[k] for g in per], "e5m2", "per-tensor").double().flatten()
                b = ref_allreduce([g[k] for g in per], "fp32", None).double().flatten()
                rel.append(((a - b) / b)[b != 0])
            rel = torch.cat(rel)
            want = float((rel * rel).mean().sqrt())
            got = vs["rel_err"][vs["step"] == 0]
            self.assertEqual(len(got), 1)
            self.assertAlmostEqual(float(got[0]) / want, 1.0, places=4)
            for col in ("flushed", "saturated", "overflow"):
                self.assertIn(col, t.dtype.names)
            self.assertEqual(int(main["overflow"].sum()), 0)            # the scale leaves R-fold headroom
            ev = run["events"]
            sc = ev[ev["event"] == "allreduce_scale"]
            # one per parameter on each logged step (0 and 2), named as its gradient
            self.assertEqual(sorted(sc["tensor"].tolist()),
                             sorted(["0.weight.grad", "0.bias.grad", "2.weight.grad", "2.bias.grad"] * 2))

    def test_e4m3_mx_three_ranks(self):
        self.check_run(3, "e4m3", "mx")

    def test_fp32_is_the_float32_ring_sum(self):
        self.check_run(4, "fp32", None)

    def test_dead_rank_is_named(self):
        d, codes, took = self.launch(3, "bf16", None, die_at=1, limit=90)
        self.assertEqual(codes[1], 7)
        for r in (0, 2):
            self.assertEqual(codes[r], 1)
            msg = read(os.path.join(d, "rank%d.err" % r))
            self.assertIn("rank %d of 3" % r, msg)
            self.assertIn("rank 1 did not answer", msg)
        self.assertLess(took, 60)
        # rank 0 holds the rendezvous store: the others say so
        d, codes, took = self.launch(2, "bf16", None, die_at=0, limit=90)
        self.assertEqual(codes, [7, 1])
        msg = read(os.path.join(d, "rank1.err"))
        self.assertIn("rank 1 of 2", msg)
        self.assertIn("rank 0", msg)
        self.assertLess(took, 60)


if __name__ == "__main__":
    unittest.main()
