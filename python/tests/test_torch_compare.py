"""ampsim.torch.compare: a compare folder like ``ampsim compare``'s, drawn by
``ampsim report``; every run from the same seed and initial weights."""
import contextlib
import io
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, cli, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn.functional as F

    import ampsim.torch as at
    from torch_models import TinyGPT, token_batches



@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCompare(unittest.TestCase):
    def test_compare_folder(self):
        d = tmpdir(self)
        out = os.path.join(d, "cmp")
        data = token_batches(8, 2, 16)
        inits, first = {}, {}

        def train(run):
            m = TinyGPT()
            inits[run.name] = {k: v.clone() for k, v in m.state_dict().items()}
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            with run.emulate(m):
                for x, y in data:
                    loss = F.cross_entropy(m(x).flatten(0, 1), y.flatten())
                    first.setdefault(run.name, loss.item())
                    opt.zero_grad()
                    run.scaler.scale(loss).backward()
                    run.scaler.step(opt)
                    run.scaler.update()

        res = at.compare(train, runs=[("fp32", None), ("fp16-amp", "torch"), ("bf16-amp", None),
                                      ("fp8-hybrid", "delayed")], out=out, log_every=2, hist_every=4)
        self.assertEqual(res["errors"], {})
        names = ["ref", "fp16-amp__torch", "bf16-amp__none", "fp8-hybrid__none__delayed"]
        self.assertEqual(sorted(inits), sorted(names))
        for n in names[1:]:
            for k, v in inits[n].items():
                self.assertTrue(torch.equal(v, inits["ref"][k]), "%s: %s" % (n, k))
        # ampsim compare's own summary.csv header, from a two-step compare of the C MLP
        cdir = os.path.join(d, "c")
        cli("compare", "--precisions", "fp16-amp", "--steps", 2, "--out", cdir)
        with open(os.path.join(cdir, "summary.csv")) as f, open(os.path.join(out, "summary.csv")) as g:
            self.assertEqual(g.readline(), f.readline())
            rows = [l.split(",") for l in g.read().splitlines()]
        self.assertEqual([r[0] for r in rows], names)
        self.assertEqual([r[3] for r in rows], ["ok"] * 4)
        self.assertEqual([r[4] for r in rows], ["8"] * 4)
        self.assertEqual(float(rows[0][6]), 0.0)            # the reference against itself
        self.assertGreater(float(rows[3][6]), 0.0)          # fp8 differs from fp32
        self.assertEqual(rows[1][2], '"torch"')
        cli("report", out)
        self.assertTrue(os.path.exists(os.path.join(out, "report", "index.html")))
        self.assertTrue(os.path.exists(os.path.join(out, "report", "fig2_loss.png")))

    def test_failed_run_is_recorded(self):
        d = tmpdir(self)
        out = os.path.join(d, "cmp")

        def train(run):
            if run.policy.name == "bf16-amp":
                raise RuntimeError("boom")
            m = TinyGPT()
            with run.emulate(m):
                x, y = token_batches(1, 2, 16)[0]
                F.cross_entropy(m(x).flatten(0, 1), y.flatten()).backward()

        with contextlib.redirect_stderr(io.StringIO()) as err:
            res = at.compare(train, runs=[("fp32", None), ("bf16-amp", None)], out=out)
        self.assertIn("run bf16-amp__none failed", err.getvalue())
        self.assertIn("boom", res["errors"]["bf16-amp__none"])
        with open(os.path.join(out, "summary.csv")) as f:
            self.assertIn("bf16-amp__none,bf16-amp,\"none\",failed,,,,,,,,,,\"none\",\"none\",", f.read())

    def test_bad_spec_fails_before_running(self):
        called = []
        with self.assertRaisesRegex(ValueError, "FP8 strategy"):
            at.compare(called.append, runs=[("fp16-amp", "delayed")], out=os.path.join(tmpdir(self), "x"))
        with self.assertRaises(ValueError):
            at.compare(called.append, runs=[("fp16-amp", "tourch")], out=os.path.join(tmpdir(self), "y"))
        self.assertEqual(called, [])


if __name__ == "__main__":
    unittest.main()
