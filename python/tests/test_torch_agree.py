"""ampsim.torch.emulate against the C emulator: the project's MLP written in
PyTorch (fc1, relu1, fc2; tests/ref/mlp_init.safetensors; batches of
``ampsim train --no-shuffle``) trained under emulate(kernels="ampsim") with a
GradScaler gives the same per-step losses and the same tensors.csv rows as
``ampsim train --gemm blas`` (OpenBLAS sums the FP32 GEMMs in the order PyTorch's
CPU GEMM does at these sizes); with PyTorch's own loss and bias-gradient arithmetic
(kernels="torch") the first steps agree the same way.

30 steps per policy here; python/tests/long_torch_agree.py (make check-long)
runs the same tests for 200 steps."""
import json
import os
import sys
import unittest

from support import HAVE_TORCH, NO_TORCH, ampsim, cli, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn.functional as F

    import ampsim.torch as at
    from torch_models import MLP, MLP_INIT, batch_rows, load_digits, load_safetensors

    sys.path.insert(0, os.path.join(os.path.dirname(MLP_INIT)))

COUNTS = ("n", "zero_in", "flushed", "subnormal", "saturated", "overflow", "nan")
_DATA = []


def digits():
    if not _DATA:
        _DATA.append(load_digits())
    return _DATA[0]


def rows(run):
    t = run["tensors"]
    cols = [c for c in t.dtype.names] if hasattr(t, "dtype") else list(t.keys())
    out = {}
    for i in range(len(t["step"])):
        out[(int(t["step"][i]), str(t["tensor"][i]))] = {c: t[c][i] for c in cols}
    return out


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestAgreeWithC(unittest.TestCase):
    steps = 30   # per run (long_torch_agree.py: 200)

    def train_c(self, d, policy, scaler, steps=None, extra=()):
        # --gemm blas: the C emulator sums its FP32 GEMMs in OpenBLAS's order,
        # which PyTorch's CPU GEMM shares at these sizes (the default,
        # reproducible order differs from it in the last bit)
        args = ["train", "--model", "mlp", "--scaler", scaler, "--steps", steps or self.steps, "--no-shuffle",
                "--init", MLP_INIT, "--log-every", 1, "--hist-every", 5, "--gemm", "blas", "--out", os.path.join(d, "c")]
        if isinstance(policy, dict):
            path = os.path.join(d, "policy.json")
            with open(path, "w") as f:
                json.dump(policy, f)
            args += ["--policy", path]
        else:
            args += ["--precision", policy]
        cli(*args, *extra)
        return ampsim.read_run(os.path.join(d, "c"))

    def train_torch(self, d, policy, scaler, fp8, **kw):
        x, y = digits()
        m = MLP()
        m.load_state_dict(load_safetensors(MLP_INIT))
        sc = at.GradScaler(scaler)
        out = os.path.join(d, "py")
        with at.emulate(m, policy, out=out, log_every=1, hist_every=5, fp8=fp8, kernels="ampsim", **kw) as emu:
            opt = emu.optimizer(torch.optim.SGD(m.parameters(), lr=0.1))
            for s in range(self.steps):
                i = batch_rows(s, 32, x.shape[0])
                loss = F.cross_entropy(m(x[i]), y[i])
                opt.zero_grad()
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
        return ampsim.read_run(out)

    def agree(self, policy, scaler, c_scaler=None, fp8=None, exact_weights_at_0=True, exact_values=True):
        """exact_values: amax, amin_nonzero, rel_err and hist.csv equal too;
        exact_weights_at_0: also for step 0's weight rows (not for pure
        policies, whose C weights start in the low format)."""
        d = tmpdir(self)
        c = self.train_c(d, policy, c_scaler or scaler)
        p = self.train_torch(d, policy, scaler, fp8)
        cl, pl = list(c["metrics"]["loss"]), list(p["metrics"]["loss"])
        self.assertEqual(len(cl), self.steps)
        self.assertEqual(len(pl), self.steps)
        for s, (a, b) in enumerate(zip(cl, pl)):
            self.assertLessEqual(abs(a - b), 1e-6, "step %d: loss %r (C) vs %r (torch)" % (s, a, b))
        for col in ("loss_scale", "skipped", "vanished"):
            self.assertEqual(list(c["metrics"][col]), list(p["metrics"][col]), col)
        cr, pr = rows(c), rows(p)
        self.assertEqual(sorted({k[1] for k in cr}), sorted({k[1] for k in pr}))
        self.assertEqual(sorted(cr), sorted(pr))
        for k, v in cr.items():
            w = pr[k]
            for col in COUNTS:
                self.assertEqual(int(v[col]), int(w[col]), "step %d %s: %s %s (C) vs %s" % (k[0], k[1], col, v[col], w[col]))
            if exact_values and (exact_weights_at_0 or k[0] > 0 or v["role"] != "weight"):
                for col in ("amax", "amin_nonzero", "rel_err"):
                    self.assertEqual(float(v[col]), float(w[col]), "step %d %s: %s" % (k[0], k[1], col))
        with open(os.path.join(d, "c", "hist.csv")) as f, open(os.path.join(d, "py", "hist.csv")) as g:
            hc, hp = f.read(), g.read()
        if exact_weights_at_0 and exact_values:
            self.assertEqual(hc, hp)
        return c, p

    def test_fp16_amp_torch_scaler(self):
        c, _ = self.agree("fp16-amp", "torch")
        self.assertEqual(float(c["metrics"]["loss_scale"][0]), 65536.0)

    def test_fp16_amp_every_loss_scaler(self):
        """Each framework's scaler through GradScaler: the same metrics.csv and
        events.csv bytes as ampsim train (scales, skips, overflow events and
        the first non-finite tensor, named as the C emulator names it)."""
        for spec in ("apex", "deepspeed", "megatron", "keras", "underflow", "adaptive"):
            with self.subTest(spec=spec):
                d = tmpdir(self)
                self.train_c(d, "fp16-amp", spec)
                self.train_torch(d, "fp16-amp", spec, None)
                for f in ("metrics.csv", "events.csv"):
                    with open(os.path.join(d, "c", f)) as a, open(os.path.join(d, "py", f)) as b:
                        self.assertEqual(b.read(), a.read(), "%s: %s" % (spec, f))

    def test_other_presets_and_fp8_strategies(self):
        """The remaining presets, and fp8-hybrid under each FP8 strategy."""
        for policy, spec, fp8 in (("fp8-hybrid", "none", "current"), ("fp8-hybrid", "none", "mx"),
                                  ("fp8-hybrid", "none", "block"), ("fp8-e4m3", "none", None),
                                  ("bf16-amp-cpu", "none", None), ("fp16-pure", "none", None),
                                  ("fp32", "none", None)):
            with self.subTest(policy=policy, fp8=fp8):
                self.agree(policy, spec, c_scaler=fp8, fp8=fp8, exact_weights_at_0=policy != "fp16-pure")

    def test_torch_kernels_first_steps(self):
        """kernels="torch": PyTorch's cross-entropy and bias-gradient sums. The
        counts of the first 10 steps still equal the C emulator's; the losses
        agree within 1e-6."""
        d = tmpdir(self)
        c = self.train_c(d, "fp16-amp", "torch", steps=10)
        x, y = digits()
        m = MLP()
        m.load_state_dict(load_safetensors(MLP_INIT))
        sc = at.GradScaler("torch")
        with at.emulate(m, "fp16-amp", out=os.path.join(d, "py"), log_every=1) as emu:
            opt = emu.optimizer(torch.optim.SGD(m.parameters(), lr=0.1))
            for s in range(10):
                i = batch_rows(s, 32, x.shape[0])
                loss = F.cross_entropy(m(x[i]), y[i])
                opt.zero_grad()
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
        p = ampsim.read_run(os.path.join(d, "py"))
        self.assertEqual(len(p["metrics"]["loss"]), 10)
        for a, b in zip(c["metrics"]["loss"], p["metrics"]["loss"]):
            self.assertLessEqual(abs(a - b), 1e-6)
        cr, pr = rows(c), rows(p)
        self.assertEqual(sorted(cr), sorted(pr))
        for k, v in cr.items():
            for col in COUNTS:
                self.assertEqual(int(v[col]), int(pr[k][col]), "step %d %s: %s" % (k[0], k[1], col))

    def test_bf16_amp(self):
        self.agree("bf16-amp", "none")

    def test_what_if(self):
        """emulate(what_if=...) writes ampsim train --what-if's whatif.csv bytes:
        every loss scaler as a shadow, on an fp16-amp run and, rounding into
        fp16, on an fp32 run."""
        for policy, scaler, fmt in (("fp16-amp", "torch", None), ("fp32", "none", "fp16")):
            with self.subTest(policy=policy):
                d = tmpdir(self)
                extra = ["--what-if"] + (["--what-if-format", fmt] if fmt else [])
                self.train_c(d, policy, scaler, extra=extra)
                self.train_torch(d, policy, scaler, None, what_if=True, what_if_format=fmt)
                with open(os.path.join(d, "c", "whatif.csv")) as a, open(os.path.join(d, "py", "whatif.csv")) as b:
                    c, p = a.read(), b.read()
                self.assertEqual(p, c)
                self.assertEqual(len(c.splitlines()), 1 + 9 * self.steps)
                w = ampsim.read_run(os.path.join(d, "py"))["whatif"]
                self.assertEqual(sorted(set(w["scaler"]))[:2], ["adaptive", "apex"])
                # ampsim report draws the shadows (figure 8)
                cli("report", "--formats", "png", os.path.join(d, "py"))
                self.assertTrue(os.path.exists(os.path.join(d, "py", "report", "fig8_whatif.png")))

    def test_what_if_arguments(self):
        m = MLP()
        with self.assertRaisesRegex(ValueError, "out=DIR"):
            at.emulate(m, "fp16-amp", what_if=True)
        with self.assertRaisesRegex(ValueError, "bogus"):
            at.emulate(m, "fp16-amp", out=tmpdir(self), what_if="torch;bogus")
        with self.assertRaises(TypeError):
            at.emulate(m, "fp16-amp", out=tmpdir(self), what_if=3)

    def test_fp8_hybrid_delayed(self):
        c, _ = self.agree("fp8-hybrid", "none", c_scaler="delayed", fp8="delayed")
        names = set(c["tensors"]["tensor"])
        self.assertIn("fc2.out.grad.input", names)      # E5M2 gradient operands, scaled

    def test_bf16_pure_sr(self):
        # C stores its initial weights in bf16; here they are cast from the FP32
        # model at step 0: the counts agree, amax/rel_err of step 0's weight rows not
        pol = {"base": "bf16-pure", "update": "sr", "name": "bf16-pure-sr"}
        self.agree(pol, "none", exact_weights_at_0=False)

    def test_bf16_pure_kahan(self):
        pol = {"base": "bf16-pure", "update": "kahan", "name": "bf16-pure-kahan"}
        self.agree(pol, "none", exact_weights_at_0=False)

    def test_fp16_pure_sr_everywhere(self):
        # every rounding stochastic: the same draws as the C emulator's registry
        pol = {"base": "fp16-pure", "rounding": "sr", "name": "fp16-pure-sr"}
        self.agree(pol, "none", exact_weights_at_0=False)


GPT_STEPS = 40
GPT_INIT = os.path.join(os.path.dirname(MLP_INIT), "gpt_tiny_init.safetensors") if HAVE_TORCH else None


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestGPTAgreeWithC(unittest.TestCase):
    """tests/ref's nanoGPT (2 layers, 4 heads, width 32, context 16, batch 4;
    functional attention, tanh GELU, lm_head tied to wte) under
    emulate(kernels="ampsim") against ``ampsim train --model gpt --gemm blas``
    on the same batches and initial weights, SGD lr 0.1."""

    def run_both(self, policy, scaler, fp8=None):
        import gpt_torch as g
        d = tmpdir(self)
        cli("train", "--model", "gpt", "--precision", policy, "--scaler", fp8 or scaler, "--gemm", "blas",
            "--layers", g.L, "--heads", g.NH, "--dim", g.C, "--ctx", g.T, "--batch", g.B, "--steps", GPT_STEPS,
            "--lr", 0.1, "--init", GPT_INIT, "--log-every", 1, "--hist-every", 10, "--out", os.path.join(d, "c"))
        with open(g.DATA, "rb") as f:
            text = f.read()
        m = g.GPT()
        sd = load_safetensors(GPT_INIT)
        sd["lm_head.weight"] = sd["transformer.wte.weight"]
        m.load_state_dict(sd)
        sc = at.GradScaler(scaler)
        with at.emulate(m, policy, out=os.path.join(d, "py"), log_every=1, hist_every=10, fp8=fp8,
                        kernels="ampsim") as emu:
            opt = emu.optimizer(torch.optim.SGD(m.parameters(), lr=0.1))
            for s in range(GPT_STEPS):
                x, y = g.batch(text, 0x7A1, 1, s)
                loss = m(x, y)
                opt.zero_grad()
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
        return ampsim.read_run(os.path.join(d, "c")), ampsim.read_run(os.path.join(d, "py"))

    def agree(self, policy, scaler, fp8=None):
        c, p = self.run_both(policy, scaler, fp8)
        cl, pl = list(c["metrics"]["loss"]), list(p["metrics"]["loss"])
        self.assertEqual(len(pl), GPT_STEPS)
        for s, (a, b) in enumerate(zip(cl, pl)):
            self.assertLessEqual(abs(a - b), 1e-6, "step %d: loss %r (C) vs %r (torch)" % (s, a, b))
        self.assertEqual(list(c["metrics"]["loss_scale"]), list(p["metrics"]["loss_scale"]))
        cr, pr = rows(c), rows(p)
        common = sorted(set(cr) & set(pr))
        names = {k[1] for k in common}
        # every GEMM's output, gradient and weight rows, and the tied head's share
        for site in ("transformer.h.1.attn.c_attn", "transformer.h.0.mlp.c_proj", "lm_head"):
            for r in (".out", ".out.grad", ".weight.grad"):
                self.assertIn(site + r, names)
        for k in common:
            for col in COUNTS + ("amax", "amin_nonzero", "rel_err"):
                self.assertEqual(float(cr[k][col]), float(pr[k][col]), "step %d %s: %s" % (k[0], k[1], col))
        return c, p

    def test_fp16_amp_torch_scaler(self):
        c, _ = self.agree("fp16-amp", "torch")
        self.assertEqual(float(c["metrics"]["loss_scale"][0]), 65536.0)

    def test_bf16_amp(self):
        self.agree("bf16-amp", "none")

    def test_bf16_amp_cpu(self):
        """PyTorch's CPU autocast rules: GELU and softmax in bf16, a Python
        scalar rounded to bf16 before it multiplies a bf16 tensor."""
        self.agree("bf16-amp-cpu", "none")

    def test_fp8_hybrid_delayed(self):
        """FP8 GEMMs with delayed scaling; attention's products of activations
        stay in the activation formats."""
        c, _ = self.agree("fp8-hybrid", "none", fp8="delayed")
        self.assertIn("transformer.h.0.attn.c_attn.out.grad.input", set(c["tensors"]["tensor"]))


if __name__ == "__main__":
    unittest.main()
