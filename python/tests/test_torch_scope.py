"""ampsim.torch's scope and entry checks: emulate(model) touches only the
model, the ops on its outputs and their backward (a teacher inside the block
is bit-identical to plain PyTorch, without rows); several models; nested
emulations and torch.autocast refused; bad arguments refused at
construction; pure policies need emu.optimizer; fp16 without a loss scaler
is reported; torch's disabled GradScaler refused; ampsim.torch.autocast and
GradScaler as drop-ins for PyTorch's AMP loop."""
import csv
import dataclasses
import os
import subprocess
import unittest
import warnings

from support import CLI, HAVE_TORCH, NO_TORCH, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _autocast
    from torch_models import MLP


def rows_of(d, name="tensors.csv"):
    with open(os.path.join(d, name)) as f:
        return list(csv.DictReader(f))


def names_of(d):
    return {r["tensor"] for r in rows_of(d)}


if HAVE_TORCH:
    class Teacher(nn.Module):
        """Another model: module names of its own (enc, head)."""

        def __init__(self, n_in=64, n_out=10):
            super().__init__()
            self.enc = nn.Linear(n_in, 24)
            self.head = nn.Linear(24, n_out)

        def forward(self, x):
            return self.head(torch.tanh(self.enc(x)) * 0.5)

    @dataclasses.dataclass
    class LMOutput:
        """What a transformers model returns: .loss and .logits."""
        loss: "torch.Tensor" = None
        logits: "torch.Tensor" = None

    class TinyLM(nn.Module):
        """A model called as model(inputs, labels=targets) that returns outputs.loss."""

        def __init__(self, vocab=32, width=16):
            super().__init__()
            self.emb = nn.Linear(vocab, width)
            self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width))
            self.lm_head = nn.Linear(width, vocab)

        def forward(self, inputs, labels=None):
            h = self.emb(inputs)
            h = h + self.mlp(h)
            logits = self.lm_head(h)
            loss = F.cross_entropy(logits, labels) if labels is not None else None
            return LMOutput(loss=loss, logits=logits)

    def lm_batches(steps, B=8, vocab=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        return [(torch.randn(B, vocab, generator=g), torch.randint(0, vocab, (B,), generator=g))
                for _ in range(steps)]


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestScope(unittest.TestCase):
    def test_teacher_inside_the_block_is_untouched(self):
        """Distillation: the teacher's forward (on the input and on the
        student's output), ops on its outputs alone and its backward are
        bit-identical to plain PyTorch and log no rows; the loss on the
        student's outputs is emulated."""
        torch.manual_seed(0)
        student, teacher, critic = MLP(), Teacher(), Teacher(10, 1)
        x = torch.rand(16, 64)
        W = torch.randn(10, 10)
        t_ref = teacher(x)
        proj_ref = t_ref @ W
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(student, "bf16-amp", out=d, log_every=1) as emu:
            s = student(x)
            t = teacher(x)
            proj = t @ W                                  # outside modules, on the teacher's output only
            c = critic(s)                                 # a foreign module reading the student's output
            loss = F.mse_loss(s, t) + (s * 2.0).mean() + c.mean()
            loss.backward()
            emu.step()
        self.assertTrue(torch.equal(t, t_ref))
        self.assertTrue(torch.equal(proj, proj_ref))
        self.assertFalse(hasattr(t, "_ampsim_fmt"))
        s_plain = s.detach().clone()
        self.assertTrue(torch.equal(c, critic(s_plain)))
        # the critic's gradients are those of plain PyTorch on the same input
        g_ref = [p.grad.clone() for p in critic.parameters()]
        for p in critic.parameters():
            p.grad = None
        critic(s_plain).mean().backward()
        for a, b in zip(g_ref, critic.parameters()):
            self.assertTrue(torch.equal(a, b.grad))
        names = names_of(d)
        self.assertFalse([n for n in names if n.startswith(("enc", "head", "tanh", "matmul"))], names)
        self.assertIn("fc1.out", names)
        self.assertIn("fc2.out.grad", names)
        self.assertIn("mul1.out", names)                  # s * 2.0: an op on the student's output

    def test_several_models_are_prefixed(self):
        torch.manual_seed(0)
        a, b = MLP(), MLP()
        x = torch.rand(4, 64)
        d = os.path.join(tmpdir(self), "list")
        with at.emulate([a, b], "bf16-amp", out=d, log_every=1) as emu:
            (a(x) - b(x)).pow(2).sum().backward()
            emu.step()
        names = names_of(d)
        for n in ("0.fc1.out", "1.fc1.out", "0.fc1.weight", "1.fc2.weight.grad", "0.relu1.out"):
            self.assertIn(n, names)
        self.assertNotIn("fc1.out", names)
        d = os.path.join(tmpdir(self), "dict")
        with at.emulate({"student": a, "teacher": b}, "bf16-amp", out=d, log_every=1) as emu:
            (a(x) - b(x)).pow(2).sum().backward()
            emu.step()
        self.assertIn("student.fc1.out", names_of(d))
        self.assertIn("teacher.fc2.weight", names_of(d))
        with self.assertRaises(ValueError):
            at.emulate([a, a])
        with self.assertRaises(TypeError):
            at.emulate([a, "b"])

    def test_model_inside_a_foreign_wrapper_and_unregistered_modules(self):
        class Wrapper(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m
                self.post = nn.Linear(10, 10)

            def forward(self, x):
                return self.post(self.m(x))

        class Loose(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
                self.extra = [nn.Linear(8, 8)]           # not a submodule: part of this forward all the same

            def forward(self, x):
                return self.extra[0](self.fc(x))

        torch.manual_seed(0)
        m = MLP()
        w = Wrapper(m)
        x = torch.rand(4, 64)
        outs = []
        h = m.register_forward_hook(lambda mod, a, o: outs.append(o.detach().clone()))
        with at.emulate(m, "bf16-amp") as emu:
            emu.collect_stats()
            y = w(x)
        h.remove()
        y_m = outs[0]
        names = set(emu.stats)
        self.assertIn("fc1.out", names)
        self.assertFalse([n for n in names if "post" in n], names)
        self.assertTrue(torch.equal(y, w.post(y_m)))      # the wrapper's own layer is plain PyTorch
        lo = Loose()
        with at.emulate(lo, "bf16-amp") as emu:
            emu.collect_stats()
            lo(torch.rand(4, 8))
        self.assertIn("linear1.out", emu.stats)           # the loose Linear, named under the model

    def test_exception_caught_inside_the_block(self):
        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(4, 64)
        with at.emulate(m, "bf16-amp") as emu:
            emu.collect_stats()
            m(x)
            ref = set(emu.stats)
            emu.step()
            with self.assertRaises(RuntimeError):
                m(torch.rand(4, 7))                       # fails inside fc1
            m(x)
            self.assertEqual(set(emu.stats), ref)

    def test_exception_caught_in_a_foreign_module(self):
        torch.manual_seed(0)
        m, teacher = MLP(), Teacher()
        x = torch.rand(4, 64)
        with at.emulate(m, "bf16-amp") as emu:
            emu.collect_stats()
            s = m(x)
            with self.assertRaises(RuntimeError):
                teacher(torch.rand(4, 7))                  # fails inside teacher.enc
            (s * 2.0).sum()                                # the loss is emulated all the same
            self.assertIn("mul1.out", emu.stats)
            with self.assertRaises(RuntimeError):
                teacher(torch.rand(4, 7))
            m(x)                                           # and so is the next forward
            self.assertIn("fc1.out", emu.stats)

    def test_modules_of_another_thread_are_not_followed(self):
        import threading
        started, go = threading.Event(), threading.Event()

        class Waiter(nn.Module):
            def forward(self, x):
                started.set()
                go.wait(10)
                return x

        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(4, 64)
        with at.emulate(m, "bf16-amp") as emu:
            emu.collect_stats()
            t = threading.Thread(target=Waiter(), args=(x,))
            t.start()                                      # another thread is inside a module call...
            started.wait(10)
            (m(x) * 2.0).sum()                             # ...while the model and its loss run here
            go.set()
            t.join()
        for n in ("fc1.out", "relu1.out", "mul1.out"):
            self.assertIn(n, emu.stats)

    def test_other_function_modes_inside_and_around(self):
        """Another TorchFunctionMode entered inside the block, or around it,
        sees the model's torch calls while the emulation rounds as it does
        alone (same bits, same tensors); PyTorch's own mode-stack helper is
        back in place after the block."""
        from torch.overrides import TorchFunctionMode
        helper = getattr(torch.overrides, "_TorchFunctionStackMode", None)

        class Recorder(TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.seen = []

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.seen.append(getattr(func, "__name__", ""))
                return func(*args, **(kwargs or {}))

        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(8, 64)

        def run(inner=None):
            with at.emulate(m, "fp16-amp") as emu:
                emu.collect_stats()
                if inner is None:
                    y = m(x)
                else:
                    with inner:
                        y = m(x)
                y.sum().backward()
                g = m.fc1.weight.grad.clone()
                m.zero_grad()
                return y.detach(), g, set(emu.stats)

        y0, g0, names0 = run()
        rec = Recorder()
        y1, g1, names1 = run(rec)
        self.assertIn("linear", rec.seen)
        self.assertIn("relu", rec.seen)
        outer = Recorder()
        with outer:
            y2, g2, names2 = run()
        self.assertIn("linear", outer.seen)
        for y, g, names in ((y1, g1, names1), (y2, g2, names2)):
            self.assertTrue(torch.equal(y, y0))
            self.assertTrue(torch.equal(g, g0))
            self.assertEqual(names, names0)
        self.assertIn("fc1.out", names0)
        self.assertIs(getattr(torch.overrides, "_TorchFunctionStackMode", None), helper)
        # with no emulation active the ops are plain PyTorch, and modes work as before
        after = Recorder()
        with after:
            y3 = m(x)
        self.assertIn("linear", after.seen)
        self.assertTrue(torch.equal(y3, m(x)))

    def test_nested_emulate_raises(self):
        a, b = MLP(), MLP()
        with at.emulate(a, "bf16-amp"):
            with self.assertRaisesRegex(at.EmulationError, r"do not nest.*emulate\(\[student, teacher\]"):
                with at.emulate(b, "bf16-amp"):
                    pass
            with self.assertRaisesRegex(at.EmulationError, "do not nest"):
                with at.autocast("cpu", dtype=torch.bfloat16):
                    pass
        with at.autocast("cpu", dtype=torch.bfloat16) as ac:
            with self.assertRaisesRegex(at.EmulationError, "do not nest"):
                with at.emulate(b, "bf16-amp"):
                    pass
        ac.close()

    def test_torch_autocast_inside_raises(self):
        m = MLP()
        x = torch.rand(4, 64)
        with at.emulate(m, "bf16-amp-cpu"):
            with self.assertRaisesRegex(at.EmulationError, "torch.autocast is enabled inside "
                                        "ampsim.torch.emulate.*ampsim.torch.autocast"):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    m(x)
            m(x)                                           # fine again once autocast is left
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with self.assertRaisesRegex(at.EmulationError, "torch.autocast is enabled"):
                with at.emulate(m, "bf16-amp-cpu"):
                    pass
        with at.emulate(m, "bf16-amp-cpu"):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
                m(x)                                       # a disabled autocast region is fine


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestChecksBeforeTheFirstStep(unittest.TestCase):
    def test_bad_arguments_raise_at_construction(self):
        m = MLP()
        with self.assertRaisesRegex(ValueError, "delayd"):
            at.emulate(m, "fp8-hybrid", fp8="delayd")
        with self.assertRaisesRegex(ValueError, "no per-tensor FP8 scaling"):
            at.emulate(m, "fp16-amp", fp8="delayed")
        d = tmpdir(self)
        with self.assertRaises(ValueError):
            at.emulate(m, "fp16-amp", what_if="torhc", out=os.path.join(d, "w"))
        self.assertFalse(os.path.exists(os.path.join(d, "w", "config.json")))
        with self.assertRaises(ValueError):
            at.emulate(m, "fp16-amp", what_if="torch", what_if_format="fp17", out=os.path.join(d, "w"))
        with self.assertRaises(ValueError):
            at.emulate(m, "fp16-amp-typo")
        with self.assertRaises(ValueError):
            at.autocast("cuda", dtype=torch.float16, fp8="delayed")

    def test_out_that_cannot_be_created(self):
        d = tmpdir(self)
        blocker = os.path.join(d, "file")
        open(blocker, "w").close()
        with self.assertRaisesRegex(OSError, "file/run: cannot write the run directory"):
            at.emulate(MLP(), "fp16-amp", out=os.path.join(blocker, "run"))
        with self.assertRaises(OSError):
            at.autocast("cuda", out=os.path.join(blocker, "run"))

    def loop(self, policy, wrap, use_scaler, steps=2):
        torch.manual_seed(0)
        m = MLP()
        x, y = torch.rand(8, 64), torch.randint(0, 10, (8,))
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sc = at.GradScaler() if use_scaler else None
        with at.emulate(m, policy) as emu:
            o = emu.optimizer(opt) if wrap else opt
            for _ in range(steps):
                loss = F.cross_entropy(m(x), y)
                o.zero_grad()
                if sc is None:
                    loss.backward()
                    o.step()
                else:
                    sc.scale(loss).backward()
                    sc.step(o)
                    sc.update()

    def test_pure_policy_needs_emu_optimizer(self):
        for policy in ("fp16-pure", "bf16-pure"):
            with self.subTest(policy=policy):
                with self.assertRaisesRegex(at.EmulationError, r"fc\d.(weight|bias) was updated by an optimizer that "
                                            r"emu.optimizer did not wrap.*emu.optimizer\(torch.optim.SGD"):
                    self.loop(policy, wrap=False, use_scaler=False)
                with self.assertRaisesRegex(at.EmulationError, "GradScaler.step got an optimizer that emu.optimizer "
                                            "did not wrap"):
                    self.loop(policy, wrap=False, use_scaler=True)
                with self.assertRaisesRegex(at.EmulationError, "did not wrap"):
                    self.loop(policy, wrap=False, use_scaler=False, steps=1)     # found at exit
                self.loop(policy, wrap=True, use_scaler=False)
                self.loop(policy, wrap=True, use_scaler=True)
        self.loop("fp16-amp", wrap=False, use_scaler=True)                      # FP32 masters: any optimizer

    def run_events(self, policy, scaler):
        torch.manual_seed(0)
        m = MLP()
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(m, policy, out=d, log_every=1, scaler=scaler):
            for _ in range(2):
                loss = F.cross_entropy(m(torch.rand(8, 64)), torch.randint(0, 10, (8,)))
                if scaler is None:
                    loss.backward()
                    m.fc1.weight.data.add_(0.0)           # the parameters change: the next forward is a new step
                else:
                    scaler.scale(loss).backward()
                    scaler.update()
        return d, [r for r in rows_of(d, "events.csv") if r["event"] == "no_loss_scaler"]

    def test_no_loss_scaler_event(self):
        d, ev = self.run_events("fp16-amp", None)
        self.assertEqual(len(ev), 1)
        self.assertEqual(ev[0]["step"], "0")
        self.assertIn("ampsim.torch.GradScaler()", ev[0]["detail"])
        p = subprocess.run([CLI, "report", d], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(d, "report", "index.html")) as f:
            self.assertIn("no_loss_scaler", f.read())
        self.assertEqual(len(self.run_events("fp16-pure", None)[1]), 1)
        self.assertEqual(len(self.run_events("fp16-amp", at.GradScaler("none"))[1]), 1)
        self.assertEqual(self.run_events("fp16-amp", at.GradScaler())[1], [])
        self.assertEqual(self.run_events("bf16-amp", None)[1], [])
        self.assertEqual(self.run_events("fp8-hybrid", None)[1], [])

    def test_torch_grad_scaler_disabled_on_the_cpu(self):
        m = MLP()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tsc = torch.cuda.amp.GradScaler()
        if tsc.is_enabled():
            self.skipTest("CUDA is available: torch's GradScaler is enabled")
        cls = type(tsc)
        orig = cls.__dict__["scale"]
        with at.emulate(m, "fp16-amp"):
            loss = m(torch.rand(2, 64)).sum()
            with self.assertRaisesRegex(at.EmulationError, "GradScaler is disabled here.*fp16 gradients of policy "
                                        "fp16-amp would run unscaled.*ampsim.torch.GradScaler"):
                tsc.scale(loss)
        self.assertIs(cls.__dict__["scale"], orig)        # restored on exit
        with at.emulate(m, "bf16-amp"):
            loss = m(torch.rand(2, 64)).sum()
            self.assertIs(tsc.scale(loss), loss)         # bf16 needs no loss scale
        # the AMP loop scales after the autocast block: refused there too, until the run closes
        with at.autocast("cuda", dtype=torch.float16) as ac:
            loss = m(torch.rand(2, 64)).sum()
        with self.assertRaisesRegex(at.EmulationError, "ampsim.torch.autocast: .*GradScaler is disabled here"):
            tsc.scale(loss)
        ac.close()
        self.assertIs(cls.__dict__["scale"], orig)
        self.assertIs(tsc.scale(loss), loss)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestAutocastDropIn(unittest.TestCase):
    def amp_loop(self, d, device, dtype, steps=6, *, emulated_by="autocast", use_scaler=True):
        """PyTorch's AMP loop: the loss inside the block, the backward and
        the scaler outside. emulated_by="emulate": the same loop with the
        whole step inside emulate (the reference)."""
        torch.manual_seed(0)
        model = TinyLM()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = at.GradScaler(enabled=use_scaler)
        losses = []
        policy = _autocast.POLICIES[(device, dtype)]
        emu = at.emulate(model, policy, out=d, log_every=2) if emulated_by == "emulate" else None
        if emu is not None:
            emu.__enter__()
        for inputs, targets in lm_batches(steps):
            opt.zero_grad()
            if emu is None:
                with at.autocast(device_type=device, dtype=dtype, out=d, log_every=2):
                    outputs = model(inputs, labels=targets)
                    loss = outputs.loss
            else:
                loss = model(inputs, labels=targets).loss
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(float(loss))
        if emu is not None:
            emu.__exit__(None, None, None)
        else:
            _autocast.open_run().close()
        return losses, model

    def test_amp_loop_equals_emulate(self):
        for device, dtype in (("cuda", torch.float16), ("cuda", torch.bfloat16), ("cpu", torch.bfloat16)):
            with self.subTest(device=device, dtype=dtype):
                da, de = os.path.join(tmpdir(self), "ac"), os.path.join(tmpdir(self), "em")
                la, ma = self.amp_loop(da, device, dtype)
                le, me = self.amp_loop(de, device, dtype, emulated_by="emulate")
                self.assertEqual(la, le)
                for a, b in zip(ma.parameters(), me.parameters()):
                    self.assertTrue(torch.equal(a, b))
                for f in ("tensors.csv", "metrics.csv", "hist.csv"):
                    with open(os.path.join(da, f)) as fa, open(os.path.join(de, f)) as fe:
                        self.assertEqual(fa.read(), fe.read(), f)
                names = names_of(da)
                # the backward ran after the block and was rounded all the same
                for n in ("emb.out.grad", "lm_head.weight.grad", "mlp.0.out", "mlp.1.out"):
                    self.assertIn(n, names)
                with open(os.path.join(da, "config.json")) as f:
                    cfg = f.read()
                self.assertIn('"precision": "%s"' % _autocast.POLICIES[(device, dtype)], cfg)
                self.assertIn('"model": "TinyLM"', cfg)
                self.assertTrue(os.path.exists(os.path.join(da, "summary.json")))

    def test_amp_loop_without_scaler_equals_emulate(self):
        """No GradScaler (bf16): the steps end when a block starts after the
        optimizer changed the weights, and the loss is the one backward ran
        from, after the block."""
        da, de = os.path.join(tmpdir(self), "ac"), os.path.join(tmpdir(self), "em")
        la, _ = self.amp_loop(da, "cpu", torch.bfloat16, use_scaler=False)
        le, _ = self.amp_loop(de, "cpu", torch.bfloat16, emulated_by="emulate", use_scaler=False)
        self.assertEqual(la, le)
        for f in ("tensors.csv", "metrics.csv"):
            with open(os.path.join(da, f)) as fa, open(os.path.join(de, f)) as fe:
                self.assertEqual(fa.read(), fe.read(), f)
        m = rows_of(da, "metrics.csv")
        self.assertEqual(len(m), 6)
        self.assertEqual([float(r["loss"]) for r in m], [float("%.9g" % v) for v in la])
        # (the backward ran after each block: its gradient norm was still taken)
        self.assertTrue(all(float(r["grad_norm"]) > 0 for r in m), m)

    def test_cpu_bf16_matches_torch_autocast(self):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 10))
        x = torch.rand(16, 64)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ref = m(x)
        with at.autocast("cpu", dtype=torch.bfloat16) as ac:
            got = m(x)
        ac.close()
        self.assertEqual(ref.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(got, ref.float()))

    def test_disabled_and_unsupported(self):
        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(4, 64)
        ref = m(x)
        with at.autocast("cuda", enabled=False):
            self.assertTrue(torch.equal(m(x), ref))
        self.assertIsNone(_autocast.open_run())
        with self.assertRaisesRegex(ValueError, "bfloat16 only.*dtype=torch.bfloat16"):
            at.autocast("cpu", dtype=torch.float16)
        with self.assertRaises(ValueError):
            at.autocast("tpu")
        with at.autocast("cuda", dtype=torch.float16) as ac:
            self.assertFalse(torch.equal(m(x), ref))
            with at.autocast("cuda", enabled=False):      # a disabled region: plain FP32
                self.assertTrue(torch.equal(m(x), ref))
            with at.autocast("cuda", dtype=torch.float16):  # the same settings nested: no change
                self.assertFalse(torch.equal(m(x), ref))
        ac.close()
        self.assertIsNone(_autocast.open_run())

    def test_blocks_join_one_run_and_other_settings_start_another(self):
        d1, d2 = os.path.join(tmpdir(self), "a"), os.path.join(tmpdir(self), "b")
        a = at.autocast("cuda", out=d1)
        b = at.autocast("cuda", out=d1)
        self.assertIs(a.run, b.run)
        c = at.autocast("cuda", dtype=torch.bfloat16, out=d2)
        self.assertIsNot(c.run, a.run)
        self.assertTrue(a.run._closed)
        self.assertTrue(os.path.exists(os.path.join(d1, "summary.json")))
        c.close()
        self.assertTrue(os.path.exists(os.path.join(d2, "summary.json")))

    def test_grad_scaler_takes_torch_arguments(self):
        self.assertEqual(at.GradScaler().get_scale(), 65536.0)
        self.assertEqual(at.GradScaler().spec, at.GradScaler("cuda").spec)
        self.assertEqual(at.GradScaler("cpu", 1024.0).get_scale(), 1024.0)
        a = at.GradScaler(2.0 ** 10, 4.0, 0.25, 3)           # torch.cuda.amp.GradScaler's order
        b = at.GradScaler("cuda", init_scale=2.0 ** 10, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
        self.assertEqual(a.spec, b.spec)
        for key in ("init=1024", "growth=4", "backoff=0.25", "interval=3"):
            self.assertIn(key, a.spec)
        self.assertEqual((a.get_growth_factor(), a.get_backoff_factor(), a.get_growth_interval()), (4.0, 0.25, 3))
        self.assertEqual((at.GradScaler().get_growth_factor(), at.GradScaler().get_growth_interval()), (2.0, 2000))
        self.assertFalse(at.GradScaler(enabled=False).is_enabled())
        for f in (False, False, False, True):
            a._found_inf, a._used_scale = f, a.get_scale()
            a.update()
        self.assertEqual(a.get_scale(), 2.0 ** 12 * 0.25)
        c = at.GradScaler(2.0 ** 10, 4.0, 0.25, 3)
        c.load_state_dict(a.state_dict())
        self.assertEqual(c.get_scale(), a.get_scale())


if __name__ == "__main__":
    unittest.main()
