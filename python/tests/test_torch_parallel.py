"""ampsim.torch.compare across processes: jobs=N worker processes, a resumed
grid, Slurm array tasks run one after another, and the merge command; every
folder byte for byte the serial one."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from support import HAVE_TORCH, NO_TORCH, cli, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at

RUNS = [("fp32", None), ("fp16-amp", "torch:init=1024"), ("bf16-amp", None)]


def train(run, steps=3, hidden=16, after_step=None):
    """A two-layer MLP from the run's seed, SGD on fixed batches
    (after_step(run, step) is called after each step)."""
    m = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    g = torch.Generator().manual_seed(7)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    with run.emulate(m):
        for _ in range(steps):
            x = torch.randn(16, 8, generator=g)
            y = torch.randint(0, 4, (16,), generator=g)
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            run.scaler.scale(loss).backward()
            run.scaler.step(opt)
            run.scaler.update()
            if after_step is not None:
                after_step(run, _)


def folder(d):
    """{relative path: bytes} of every file under d."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fp:
                out[os.path.relpath(p, d)] = fp.read()
    return out


def merge(d):
    """python3 -m ampsim.torch.merge d, in this process (long_torch_parallel.py
    runs the module itself)."""
    from ampsim.torch import merge as m
    with contextlib.redirect_stdout(io.StringIO()) as o, contextlib.redirect_stderr(io.StringIO()) as e:
        rc = m.main([d])
    return subprocess.CompletedProcess(["merge", d], rc, o.getvalue(), e.getvalue())


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestParallelCompare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.mkdtemp(prefix="ampsim-py-")
        cls.serial = os.path.join(cls.d, "serial")
        res = at.compare(train, runs=RUNS, out=cls.serial, log_every=1, hist_every=2)
        assert res["errors"] == {}, res["errors"]
        cls.serial_files = folder(cls.serial)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.d, ignore_errors=True)

    def test_serial_folder(self):
        names = sorted(k for k in self.serial_files if k.endswith("summary.json"))
        self.assertEqual(names, ["bf16-amp__none/summary.json", "fp16-amp__torch-init-1024/summary.json",
                                 "ref/summary.json"])
        cfg = json.loads(self.serial_files["ref/config.json"])
        self.assertEqual(cfg["parameters"], ["0.weight", "0.bias", "2.weight", "2.bias"])
        grid = json.loads(self.serial_files["compare.json"])
        self.assertEqual([r["name"] for r in grid["runs"]], ["ref", "fp16-amp__torch-init-1024", "bf16-amp__none"])
        rows = self.serial_files["summary.csv"].decode().splitlines()
        self.assertEqual([r.split(",")[3] for r in rows[1:]], ["ok"] * 3)

    def test_jobs_same_bytes(self):
        out = os.path.join(tmpdir(self), "j2")
        res = at.compare(train, runs=RUNS, out=out, log_every=1, hist_every=2, jobs=2)
        self.assertEqual(res["errors"], {})
        self.assertEqual(folder(out), self.serial_files)

    def test_resume_skips_finished_and_redoes_half_written(self):
        out = os.path.join(tmpdir(self), "r")
        shutil.copytree(self.serial, out)
        os.remove(os.path.join(out, "summary.csv"))
        os.remove(os.path.join(out, "bf16-amp__none", "summary.json"))     # half-written
        with open(os.path.join(out, "bf16-amp__none", "metrics.csv.tmp"), "w") as f:
            f.write("junk")
        called = []

        def counting(run):
            called.append(run.name)
            train(run)

        res = at.compare(counting, runs=RUNS, out=out, log_every=1, hist_every=2)
        self.assertEqual(called, ["bf16-amp__none"])
        self.assertEqual(sorted(res["skipped"]), ["fp16-amp__torch-init-1024", "ref"])
        self.assertEqual(folder(out), self.serial_files)
        called.clear()
        at.compare(counting, runs=RUNS, out=out, log_every=1, hist_every=2, force=True)
        self.assertEqual(called, ["ref", "fp16-amp__torch-init-1024", "bf16-amp__none"])
        self.assertEqual(folder(out), self.serial_files)

    def test_slurm_array_tasks_one_after_another(self):
        out = os.path.join(tmpdir(self), "s")
        ran = {}
        for k in range(4):
            env = {"SLURM_ARRAY_TASK_ID": str(10 + k), "SLURM_ARRAY_TASK_MIN": "10",
                   "SLURM_ARRAY_TASK_COUNT": "4"}

            def counting(run, k=k):
                ran.setdefault(k, []).append(run.name)
                train(run)

            with mock.patch.dict(os.environ, env):
                res = at.compare(counting, runs=RUNS, out=out, log_every=1, hist_every=2)
            if k < 3:
                self.assertIsNone(res["summary"])
                self.assertFalse(os.path.exists(os.path.join(out, "summary.csv")))
        # run i goes to task i mod 4: task 3 has none and writes the summary
        self.assertEqual(ran, {0: ["ref"], 1: ["fp16-amp__torch-init-1024"], 2: ["bf16-amp__none"]})
        self.assertEqual(len(res["runs"]), 3)
        self.assertEqual(folder(out), self.serial_files)

    def test_slurm_task_index(self):
        from ampsim.torch import _parallel
        cases = [({"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_STEP": "2",
                   "SLURM_ARRAY_TASK_COUNT": "4"}, (2, 4)),
                 ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_MAX": "9"}, (2, 7)),
                 ({}, None)]
        for env, want in cases:
            with mock.patch.dict(os.environ, env):
                for k in [k for k in os.environ if k.startswith("SLURM_ARRAY") and k not in env]:
                    del os.environ[k]
                self.assertEqual(_parallel.slurm_task(), want, env)
        # an array given as a list of ids (--array=1,3,7) has no task index
        with mock.patch.dict(os.environ, {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "1",
                                          "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_COUNT": "3"}):
            with self.assertRaisesRegex(RuntimeError, "array task 7 is not one of the 3 tasks"):
                _parallel.slurm_task()

    def test_merge_command_and_parameter_names(self):
        out = os.path.join(tmpdir(self), "m")
        shutil.copytree(self.serial, out)
        os.remove(os.path.join(out, "summary.csv"))
        p = merge(out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("3 of 3 runs finished", p.stdout)
        self.assertEqual(folder(out), self.serial_files)
        # a run of another model (other parameter names) is refused, nothing written
        other = os.path.join(tmpdir(self), "o")
        def two_models(run):
            if run.name == "ref":
                return train(run)
            m = nn.Linear(8, 4)
            with run.emulate(m):
                F.cross_entropy(m(torch.ones(2, 8)), torch.zeros(2, dtype=torch.long)).backward()

        with self.assertRaisesRegex(ValueError, "disagree on the model's parameter names"):
            at.compare(two_models, runs=RUNS[:2], out=other, log_every=1)
        p = merge(other)
        self.assertEqual(p.returncode, 2)
        self.assertIn("runs ref and fp16-amp__torch-init-1024 disagree on the model's parameter names", p.stderr)
        self.assertIn("'0.weight' in ref but 'weight' in fp16-amp__torch-init-1024", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(other, "summary.csv")))
        p = merge(os.path.join(tmpdir(self), "nothing"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no compare.json", p.stderr)

    def test_parameter_names_of_several_models(self):
        def two(run):
            a, b = nn.Linear(8, 4), nn.Linear(4, 2)
            with run.emulate({"student": a, "head": b}):
                F.cross_entropy(b(a(torch.ones(2, 8))), torch.zeros(2, dtype=torch.long)).backward()

        out = os.path.join(tmpdir(self), "two")
        res = at.compare(two, runs=[("fp32", None)], out=out, log_every=1)
        self.assertEqual(res["runs"]["ref"]["config"]["parameters"],
                         ["student.weight", "student.bias", "head.weight", "head.bias"])

    def test_missing_run_is_failed_in_merge(self):
        out = os.path.join(tmpdir(self), "f")
        shutil.copytree(self.serial, out)
        shutil.rmtree(os.path.join(out, "bf16-amp__none"))
        p = merge(out)
        self.assertEqual(p.returncode, 1)
        self.assertIn("2 of 3 runs finished", p.stdout)
        with open(os.path.join(out, "summary.csv")) as f:
            self.assertIn("bf16-amp__none,bf16-amp,\"none\",failed,", f.read())

    def test_seeds_are_sweep_groups(self):
        d = tmpdir(self)
        out = os.path.join(d, "g")
        res = at.compare(train, runs=RUNS[:2], out=out, seeds=[1, 2], log_every=1, jobs=2)
        self.assertEqual(sorted(res["runs"]), ["seed1/fp16-amp__torch-init-1024", "seed1/ref",
                                               "seed2/fp16-amp__torch-init-1024", "seed2/ref"])
        self.assertEqual(res["runs"]["seed2/ref"]["config"]["seed"], "2")
        self.assertNotEqual(res["runs"]["seed1/ref"]["metrics"]["loss"][0],
                            res["runs"]["seed2/ref"]["metrics"]["loss"][0])
        # ampsim sweep's own summary.csv header for a grid with seeds
        grid = os.path.join(d, "grid.json")
        with open(grid, "w") as f:
            json.dump({"train": {"steps": 2}, "precisions": "fp16-amp", "seeds": [1, 2]}, f)
        cli("sweep", grid, "--out", os.path.join(d, "c"))
        with open(os.path.join(d, "c", "summary.csv")) as f, open(os.path.join(out, "summary.csv")) as g:
            self.assertEqual(g.readline(), f.readline())
            rows = [r.split(",")[:3] for r in g.read().splitlines()]
        self.assertEqual(rows, [["seed1", "1", "ref"], ["seed1", "1", "fp16-amp__torch-init-1024"],
                                ["seed2", "2", "ref"], ["seed2", "2", "fp16-amp__torch-init-1024"]])
        self.assertTrue(os.path.exists(os.path.join(out, "seed2", "summary.csv")))

    def test_worker_that_dies_fails_its_run(self):
        out = os.path.join(tmpdir(self), "k")

        def dying(run):
            if run.name == "bf16-amp__none":
                os._exit(3)
            train(run)

        with contextlib.redirect_stderr(io.StringIO()) as err:
            res = at.compare(dying, runs=RUNS, out=out, log_every=1, jobs=2)
        self.assertIn("bf16-amp__none", res["errors"])
        self.assertIn("worker process died", err.getvalue())
        with open(os.path.join(out, "summary.csv")) as f:
            self.assertIn("bf16-amp__none,bf16-amp,\"none\",failed,", f.read())


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestAllreduceHookOneRank(unittest.TestCase):
    """The hook inside a one-process gloo group (the R-rank jobs are in
    long_torch_parallel.py): with R = 1 the reduction is the rounding of the
    scaled contribution, unscaled."""

    def test_one_rank(self):
        import socket
        import numpy as np
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        import ampsim
        with self.assertRaisesRegex(ValueError, "scaling 'block'"):
            at.allreduce_hook("e5m2", scaling="block")
        with self.assertRaises(ValueError):
            at.allreduce_hook("e9m9")
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)
        self.addCleanup(dist.destroy_process_group)
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        ref = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        ref.load_state_dict(m.state_dict())
        d = tmpdir(self)
        emu = at.emulate(m, "fp32", out=d, log_every=1, hist_every=0)
        ddp = DDP(m)
        ddp.register_comm_hook(None, at.allreduce_hook("e5m2", scaling="per-tensor", emu=emu))
        x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
        with emu:
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            emu.step(loss)
        F.cross_entropy(ref(x), y).backward()
        for p, q in zip(m.parameters(), ref.parameters()):
            g = q.grad.numpy()
            s = np.float32(57344.0 / float(np.abs(g).max()))
            want = ampsim.round(g * s, "e5m2") * np.float32(1.0 / float(s))
            self.assertTrue(np.array_equal(p.grad.numpy(), want))
        t = ampsim.read_run(d, pandas=False)["tensors"]
        rows = t[t["tensor"] == "bucket0.allreduce"]
        self.assertEqual(rows["n"].tolist(), [sum(p.numel() for p in m.parameters())])
        self.assertEqual(rows["format"].tolist(), ["e5m2"])
        self.assertIn("bucket0.allreduce_vs_fp32", t["tensor"].tolist())


if __name__ == "__main__":
    unittest.main()
