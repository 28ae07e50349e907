"""ampsim.torch.emulate and GradScaler on their own: nothing left modified,
fp32 bit-identical to plain PyTorch, bf16-amp-cpu against torch.autocast,
a transformer block with functional attention, errors and events."""
import os
import unittest

from support import CLI, HAVE_TORCH, NO_TORCH, ampsim, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from torch_models import CNN, MLP, PrivateKernelNet, TinyGPT, token_batches



def hooks_of(model):
    return [(len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
            for m in model.modules()]


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestNothingModified(unittest.TestCase):
    def test_hooks_removed_weights_restored(self):
        torch.manual_seed(0)
        m = MLP()
        before_hooks, before = hooks_of(m), snapshot(m)
        params = [id(p) for p in m.parameters()]
        x = torch.rand(8, 64)
        ref = m(x)
        glob = torch.nn.modules.module._global_forward_pre_hooks
        n_glob = len(glob)
        with at.emulate(m, "fp8-hybrid"):
            y = m(x)
            self.assertEqual(len(glob), n_glob + 1)     # the scope's global module hooks
            y.sum().backward()
        self.assertEqual(len(glob), n_glob)
        self.assertFalse(torch.equal(y, ref))           # the policy did act
        self.assertEqual(hooks_of(m), before_hooks)
        self.assertEqual([id(p) for p in m.parameters()], params)
        for k, v in snapshot(m).items():
            self.assertTrue(torch.equal(v, before[k]), k)
            self.assertEqual(v.dtype, torch.float32)
        for p in m.parameters():
            self.assertFalse(hasattr(p, "_ampsim_fmt"))
        self.assertTrue(torch.equal(m(x), ref))          # plain again after exit

    def test_exit_on_error_removes_hooks(self):
        m = MLP()
        before = hooks_of(m)
        with self.assertRaises(RuntimeError):
            with at.emulate(m, "fp16-amp"):
                m(torch.rand(3, 5))                      # wrong width
        self.assertEqual(hooks_of(m), before)
        self.assertIsNone(torch.overrides._get_current_function_mode()
                          if hasattr(torch.overrides, "_get_current_function_mode") else None)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestFp32Identical(unittest.TestCase):
    def run_loop(self, model, data, emulated, scaler=False):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = []
        ctx = at.emulate(model, "fp32", log_every=1) if emulated else None
        if ctx:
            ctx.collect_stats()
            ctx.__enter__()
        try:
            for x, y in data:
                loss = F.cross_entropy(model(x).flatten(0, -2) if x.dim() > 1 and x.dtype == torch.long
                                       else model(x), y.flatten())
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.detach().clone())
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
        return losses, snapshot(model)

    def check_identical(self, make, data):
        torch.manual_seed(0)
        a = make()
        b = make()
        b.load_state_dict(a.state_dict())
        la, wa = self.run_loop(a, data, False)
        lb, wb = self.run_loop(b, data, True)
        for s, (u, v) in enumerate(zip(la, lb)):
            self.assertTrue(torch.equal(u, v), "step %d: %r vs %r" % (s, u.item(), v.item()))
        for k in wa:
            self.assertTrue(torch.equal(wa[k], wb[k]), k)

    def test_mlp(self):
        g = torch.Generator().manual_seed(1)
        data = [(torch.rand(16, 64, generator=g), torch.randint(0, 10, (16,), generator=g)) for _ in range(5)]
        self.check_identical(MLP, data)

    def test_gpt_block(self):
        self.check_identical(lambda: TinyGPT(layers=1), token_batches(4, 2, 16))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCpuAutocast(unittest.TestCase):
    def test_bf16_amp_cpu_matches_torch_autocast(self):
        """bf16-amp-cpu against torch.autocast("cpu", bfloat16) on a CNN with
        Conv2d, BatchNorm2d, MaxPool2d, Linear and LayerNorm: 50 steps."""
        g = torch.Generator().manual_seed(0)
        X = torch.rand(64, 1, 8, 8, generator=g)
        Y = torch.randint(0, 10, (64,), generator=g)
        torch.manual_seed(0)
        init = snapshot(CNN())

        def run(mode):
            m = CNN()
            m.load_state_dict(init)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            out = []
            emu = at.emulate(m, "bf16-amp-cpu") if mode == "emulate" else None
            if emu:
                emu.__enter__()
            try:
                for s in range(50):
                    i = torch.arange(16) + 16 * (s % 4)
                    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
                        loss = F.cross_entropy(m(X[i]), Y[i])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    out.append(loss.item())
            finally:
                if emu:
                    emu.__exit__(None, None, None)
            return out

        ref, emu, plain = run("autocast"), run("emulate"), run("plain")
        worst = max(abs(a - b) for a, b in zip(ref, emu))
        self.assertLessEqual(worst, 1e-4, "bf16-amp-cpu vs torch.autocast: max loss difference %g" % worst)
        # the comparison can fail: FP32 training is far from autocast's
        self.assertGreater(max(abs(a - b) for a, b in zip(ref, plain)), 1e-3)

    def test_bf16_amp_cpu_python_scalars(self):
        """Under bf16-amp-cpu, x * c, x / c, x + c, x - c on a bf16 activation
        give the bits of PyTorch's CPU kernels on a bfloat16 tensor (c rounded
        to bf16 first); fp16-amp keeps c in float32, as CUDA's kernels do."""
        lin = nn.Linear(16, 64)
        torch.manual_seed(0)
        x = torch.randn(32, 16) * 3
        for c in (0.35355339059327373, 0.1, 3.7):
            for op in ("mul", "div", "add", "sub"):
                with at.emulate(lin, "bf16-amp-cpu"):
                    h = lin(x)
                    y = getattr(h, op)(c)
                ref = getattr(h.detach().bfloat16(), op)(c).float()
                self.assertTrue(torch.equal(y.detach(), ref), "%s %r" % (op, c))
                with at.emulate(lin, "fp16-amp"):
                    h = lin(x)
                    y = getattr(h, op)(c)
                ref = getattr(h.detach(), op)(c).half().float()
                self.assertTrue(torch.equal(y.detach(), ref), "fp16-amp %s %r" % (op, c))

    def test_bf16_amp_cpu_gelu_is_torch_bf16_gelu(self):
        """Under bf16-amp-cpu, GELU (tanh) of a bf16 activation gives the bits of
        PyTorch's CPU GELU on a bfloat16 tensor, forward and backward, with
        either kernels setting (its arithmetic rounds every operation to bf16;
        float32 arithmetic rounded once differs in about 40% of the values)."""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(16, 64)

            def forward(self, x):
                h = self.lin(x)
                h.retain_grad()
                return h, F.gelu(h, approximate="tanh")
        torch.manual_seed(0)
        m, x = M(), torch.randn(32, 16) * 3
        for kernels in ("torch", "ampsim"):
            with self.subTest(kernels=kernels):
                with at.emulate(m, "bf16-amp-cpu", kernels=kernels):
                    h, y = m(x)
                    gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).bfloat16().float()
                    y.backward(gy)
                hb = h.detach().bfloat16().requires_grad_(True)
                yb = F.gelu(hb, approximate="tanh")
                yb.backward(gy.bfloat16())
                self.assertTrue(torch.equal(y.detach(), yb.detach().float()))
                self.assertTrue(torch.equal(h.grad, hb.grad.float()))
                # float32 arithmetic rounded once is not what PyTorch computes here
                self.assertFalse(torch.equal(F.gelu(h.detach(), approximate="tanh").bfloat16().float(),
                                             yb.detach().float()))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestTransformerBlock(unittest.TestCase):
    def train(self, policy, spec, fp8, out):
        torch.manual_seed(0)
        m = TinyGPT(layers=1)
        opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
        sc = at.GradScaler(spec)
        losses = []
        with at.emulate(m, policy, out=out, log_every=5, hist_every=5, fp8=fp8):
            for x, y in token_batches(12, 4, 16):
                loss = F.cross_entropy(m(x).flatten(0, 1), y.flatten())
                opt.zero_grad()
                sc.scale(loss).backward()
                sc.step(opt)
                sc.update()
                losses.append(loss.item())
        return losses

    def check_run(self, d, losses, n_grad_inputs):
        self.assertLess(losses[-1], losses[0])
        r = ampsim.read_run(d)
        names = set(r["tensors"]["tensor"])
        # the attention scores q @ k^T and their gradient, named by site
        for n in ("h.0.attn.matmul1.out", "h.0.attn.matmul1.out.grad", "h.0.attn.softmax1.out.grad",
                  "h.0.attn.c_attn.weight.grad", "lm_head.out.grad"):
            self.assertIn(n, names)
        self.assertEqual(sum(n.endswith(".out.grad.input") for n in names), n_grad_inputs)
        self.assertEqual(sorted(set(r["tensors"]["step"])), [0, 5, 10])
        self.assertEqual(len(r["metrics"]["step"]), 12)
        with open(os.path.join(d, "events.csv")) as f:
            ev = f.read()
        self.assertNotIn("not_emulated", ev)
        rep = ampsim_report(d)
        for fig in ("fig4_heat.png", "fig1_hist.png", "index.html"):
            self.assertTrue(any(fig in f for f in rep), "%s: no %s figure in %s" % (d, fig, rep))

    def test_fp16_amp_torch_scaler(self):
        d = os.path.join(tmpdir(self), "run")
        losses = self.train("fp16-amp", "torch", None, d)
        self.check_run(d, losses, 0)
        r = ampsim.read_run(d)
        self.assertEqual(float(r["metrics"]["loss_scale"][0]), 65536.0)

    def test_grad_norm_after_unscale_and_clip(self):
        """metrics.csv's grad_norm is the norm of the gradients the optimizer
        sees: unscaled by GradScaler.unscale_ (its one pass keeps each
        tensor's share), and clipped in place after it."""
        for clip in (None, 0.05):
            torch.manual_seed(0)
            m, x = MLP(), torch.rand(8, 64)
            y = torch.arange(8) % 10
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            d = os.path.join(tmpdir(self), "run%s" % clip)
            norms = []
            with at.emulate(m, "fp16-amp", out=d, log_every=1):
                sc = at.GradScaler("torch")
                for _ in range(3):
                    opt.zero_grad()
                    sc.scale(F.cross_entropy(m(x), y)).backward()
                    sc.unscale_(opt)
                    if clip:
                        torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
                    sq = sum(float((p.grad.double() ** 2).sum()) for p in m.parameters())
                    norms.append(sq ** 0.5)
                    sc.step(opt)
                    sc.update()
            logged = [float(v) for v in ampsim.read_run(d)["metrics"]["grad_norm"]]
            for a, b in zip(logged, norms):
                self.assertAlmostEqual(a, b, delta=1e-8 * max(1.0, b))   # (written with 9 digits)
            if clip:
                self.assertTrue(all(abs(v - clip) < 1e-3 * clip for v in logged), logged)

    def test_fp8_hybrid(self):
        d = os.path.join(tmpdir(self), "run")
        losses = self.train("fp8-hybrid", "none", "delayed", d)
        # every GEMM with a weight casts its gradient operand into E5M2: 5 sites
        # (c_attn, attn.c_proj, c_fc, c_proj, lm_head); the products of
        # activations (q @ k^T, att @ v) stay in bf16, as in the C GPT
        self.check_run(d, losses, 5)
        r = ampsim.read_run(d)
        fm = {t: f for t, f in zip(r["tensors"]["tensor"], r["tensors"]["format"])}
        self.assertEqual(fm["h.0.attn.c_attn.out.grad.input"], "e5m2")
        self.assertEqual(fm["h.0.attn.c_attn.weight"], "e4m3")
        self.assertEqual(fm["h.0.attn.matmul1.out.grad"], "bf16")
        self.assertEqual(fm["h.0.attn.matmul2.input"], "bf16")
        self.assertNotIn("h.0.attn.matmul1.out.grad.input", fm)


def ampsim_report(d):
    import subprocess
    p = subprocess.run([CLI, "report", d], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("ampsim report %s: %s" % (d, p.stderr))
    files = []
    for root, _, fs in os.walk(d):
        files += [os.path.relpath(os.path.join(root, f), d) for f in fs]
    return files


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestErrorsAndEvents(unittest.TestCase):
    def test_float64_model(self):
        m = MLP().double()
        with self.assertRaisesRegex(at.EmulationError, "fc1.weight is torch.float64"):
            with at.emulate(m, "fp16-amp"):
                pass

    def test_model_off_the_cpu(self):
        # the check a CUDA model meets (this machine has no GPU: the meta device)
        m = MLP().to("meta")
        with self.assertRaisesRegex(at.EmulationError, "parameter fc1.weight is on meta"):
            with at.emulate(m, "fp16-amp"):
                pass
        self.assertEqual(hooks_of(m), [(0, 0, 0)] * 3)

    def test_float64_operand_names_op_and_module(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Identity()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                return self.lin(x) @ torch.ones(4, 4, dtype=torch.float64)

        m = M()
        with self.assertRaisesRegex(at.EmulationError, r"matmul in \(model\).*float64"):
            with at.emulate(m, "bf16-amp"):
                m(torch.rand(2, 4))

    def test_bad_logging_periods(self):
        m = MLP()
        for v, err in ((-1, ValueError), (2.5, TypeError), (None, TypeError), (True, TypeError)):
            with self.assertRaisesRegex(err, "log_every must be an integer >= 0"):
                at.emulate(m, "fp32", log_every=v)
        with self.assertRaisesRegex(ValueError, "hist_every must be an integer >= 0"):
            at.emulate(m, "fp32", hist_every=-5)
        self.assertEqual(at.emulate(m, "fp32", log_every=0).log_every, 0)

    def test_bad_policy(self):
        with self.assertRaisesRegex(ValueError, "unknown precision 'fp17'"):
            at.emulate(MLP(), "fp17")
        with self.assertRaisesRegex(ValueError, "unknown policy key 'colour'"):
            at.emulate(MLP(), {"base": "fp16-amp", "colour": "red"})

    def test_inexpressible_policy(self):
        with self.assertRaisesRegex(at.EmulationError, "accumulates GEMMs in fp16"):
            at.emulate(MLP(), {"base": "fp16-amp", "gemm": {"accumulator": "fp16"}})
        with self.assertRaisesRegex(at.EmulationError, "NVFP4 GEMM operands"):
            at.emulate(MLP(), "nvfp4")

    def test_policy_dict_and_json(self):
        p = at.Policy({"base": "bf16-amp", "roles": {"act_grad": "fp16"}})
        self.assertEqual((p.act, p.act_grad, p.weight, p.master), ("bf16", "fp16", "bf16", "fp32"))
        self.assertEqual(at.Policy("bf16-amp-cpu").fp32_ops, {"loss"})
        self.assertEqual(at.Policy("fp8-hybrid").bwd_in, "e5m2")

    def test_unsupported_op_listed_once(self):
        m = PrivateKernelNet()
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(m, "fp16-amp", out=d, log_every=1) as emu:
            for _ in range(3):
                m(torch.rand(2, 8)).sum().backward()
                emu.step()
        rows = [l for l in open(os.path.join(d, "events.csv")) if "not_emulated" in l]
        self.assertEqual(rows, ["0,not_emulated,(model),_upsample_bilinear2d_aa (on a fp16 tensor)\n"])

    def test_first_nonfinite_event(self):
        torch.manual_seed(0)
        m = MLP()
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(m, "fp16-amp", out=d, log_every=1) as emu:
            x = torch.rand(4, 64)
            m(x).sum().backward()
            emu.step()
            x[0, 0] = 1e6                                # overflows fp16 at the input cast
            m(x).sum().backward()
            emu.step()
        ev = [l.strip() for l in open(os.path.join(d, "events.csv"))][1:]
        self.assertEqual(ev[0].split(",")[:3], ["0", "no_loss_scaler", ""])     # fp16 without a scaler
        self.assertEqual(ev[1:], ["1,first_nonfinite,input,forward; 1 values"])
        r = ampsim.read_run(d)
        self.assertEqual(r["summary"]["first_nonfinite"], {"step": 1, "phase": "forward", "tensor": "input"})


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestSteps(unittest.TestCase):
    def test_micro_batches_add_up(self):
        """Two forward/backward passes in one step: the same names, statistics
        of both (gradient accumulation), one metrics row."""
        torch.manual_seed(0)
        m = MLP()
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(m, "bf16-amp", out=d, log_every=1) as emu:
            for _ in range(2):
                m(torch.rand(4, 64)).sum().backward()
            emu.step(loss=1.5, lr=0.1)
        r = ampsim.read_run(d)
        n = {t: int(k) for t, k in zip(r["tensors"]["tensor"], r["tensors"]["n"])}
        self.assertEqual(n["fc1.out"], 2 * 4 * 32)
        self.assertEqual(n["input"], 2 * 4 * 64)
        self.assertEqual(n["fc1.weight"], 32 * 64)       # cast once per step (cast cache)
        # each backward rounds its share; autograd sums them into the FP32 .grad
        self.assertEqual(n["fc1.weight.grad"], 2 * 32 * 64)
        self.assertEqual(list(r["metrics"]["loss"]), [1.5])

    def test_grad_norm_without_a_scaler(self):
        """A plain loop (zero_grad, backward, step; no GradScaler, no wrapped
        optimizer): metrics.csv's gradient norm is the one the optimizer saw,
        though the step ends at the next forward, after zero_grad."""
        torch.manual_seed(0)
        m = MLP()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        d = os.path.join(tmpdir(self), "run")
        norms = []
        with at.emulate(m, "bf16-amp", out=d, log_every=1):
            for _ in range(3):
                opt.zero_grad()
                m(torch.rand(4, 64)).square().sum().backward()
                norms.append(float(torch.cat([p.grad.double().flatten() for p in m.parameters()]).norm()))
                opt.step()
        got = [float(v) for v in ampsim.read_run(d)["metrics"]["grad_norm"]]
        self.assertEqual(len(got), 3)
        for a, b in zip(got, norms):
            self.assertAlmostEqual(a, b, delta=1e-6 * b)

    def test_checkpointed_block_runs_directly(self):
        """torch.utils.checkpoint (both forms, imported by name or not) inside
        emulate: the block's values and gradients are those of the model
        without checkpointing, an event says so, and the module is PyTorch's
        again after the block."""
        import torch.utils.checkpoint as ckpt
        from torch.utils.checkpoint import checkpoint
        orig = ckpt.CheckpointFunction

        class Net(nn.Module):
            def __init__(self, mode):
                super().__init__()
                self.a, self.b, self.mode = nn.Linear(6, 6), nn.Linear(6, 3), mode

            def forward(self, x):
                h = torch.tanh(self.a(x))
                if self.mode is not None:
                    return self.b(checkpoint(lambda t: F.gelu(self.b.weight.t().matmul(self.b(t).t()).t()), h,
                                             use_reentrant=self.mode))
                return self.b(F.gelu(self.b.weight.t().matmul(self.b(h).t()).t()))
        x = torch.randn(4, 6)
        for mode in (True, False):
            grads = []
            for m_ in (None, mode):
                torch.manual_seed(0)
                m = Net(m_)
                d = os.path.join(tmpdir(self), "run%s%s" % (mode, m_))
                with at.emulate(m, "fp16-amp", out=d, log_every=1) as emu:
                    m(x).square().sum().backward()
                    emu.step()
                grads.append([p.grad for p in m.parameters()])
                events = list(ampsim.read_run(d)["events"]["event"])
                self.assertEqual("checkpoint_direct" in events, m_ is not None)
            for a, b in zip(*grads):
                self.assertTrue(torch.equal(a, b))
        self.assertIs(ckpt.CheckpointFunction, orig)

    def test_sparse_embedding_gradients(self):
        """nn.Embedding(sparse=True): fp32 equal to PyTorch, and the pure
        policies round the sparse gradient's values (and its update)."""
        def run(policy):
            torch.manual_seed(0)
            m = nn.Sequential(nn.Embedding(20, 8, sparse=True), nn.Flatten(), nn.Linear(24, 3))
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            g = torch.Generator().manual_seed(1)
            ctx = at.emulate(m, policy, out=os.path.join(tmpdir(self), policy)) if policy else None
            if ctx is not None:
                emu = ctx.__enter__()
                opt = emu.optimizer(opt) if "pure" in policy else opt
            try:
                for _ in range(2):
                    opt.zero_grad()
                    m(torch.randint(0, 20, (5, 3), generator=g)).square().mean().backward()
                    opt.step()
            finally:
                if ctx is not None:
                    ctx.__exit__(None, None, None)
            return [p.detach().clone() for p in m.parameters()]
        ref = run(None)
        for a, b in zip(ref, run("fp32")):
            self.assertTrue(torch.equal(a, b))
        w = run("bf16-pure")[0]
        self.assertTrue(torch.equal(w, w.bfloat16().float()))

    def test_create_graph_is_refused(self):
        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(3, 64, requires_grad=True)
        with at.emulate(m, "fp16-amp"):
            y = m(x).sum()
            with self.assertRaisesRegex(at.EmulationError, "create_graph=True.*outside the emulate block"):
                torch.autograd.grad(y, x, create_graph=True)
            with self.assertRaisesRegex(at.EmulationError, "create_graph=True"):
                y.backward(create_graph=True)
            g, = torch.autograd.grad(y, x)          # (without a graph: as PyTorch)
            self.assertEqual(g.shape, x.shape)

    def test_inference_under_no_grad(self):
        torch.manual_seed(0)
        m = MLP()
        x = torch.rand(3, 64)
        with torch.no_grad(), at.emulate(m, "fp8-e4m3") as emu:
            emu.collect_stats()
            y = m(x)
            st = emu.stats
        self.assertEqual(st["fc1.weight"][1], "e4m3")
        self.assertFalse(torch.equal(y, m(x)))
        # the same values as rounding by hand: e4m3 operands (saturating), FP32 GEMM, bf16 output
        def r(t, f, sat=False):
            return torch.from_numpy(ampsim.round(t.detach().numpy(), f, saturate=sat))
        h = F.linear(r(x, "e4m3", True), r(m.fc1.weight, "e4m3", True), r(m.fc1.bias, "bf16"))
        h = r(F.relu(r(h, "bf16")), "bf16")
        ref = r(F.linear(r(h, "e4m3", True), r(m.fc2.weight, "e4m3", True), r(m.fc2.bias, "bf16")), "bf16")
        self.assertTrue(torch.equal(y, ref))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestGradScaler(unittest.TestCase):
    def test_skip_and_backoff_like_torch(self):
        m = nn.Linear(2, 1)
        opt = torch.optim.SGD(m.parameters(), lr=1.0)
        sc = at.GradScaler("torch", init_scale=2.0 ** 16, growth_interval=2)
        w0 = m.weight.detach().clone()
        loss = m(torch.tensor([[1e35, 1.0]])).sum()     # scaled gradient overflows float32
        opt.zero_grad()
        sc.scale(loss).backward()
        self.assertIsNone(sc.step(opt))
        sc.update()
        self.assertTrue(torch.equal(m.weight, w0))      # skipped
        self.assertEqual(sc.get_scale(), 2.0 ** 15)
        for _ in range(2):
            opt.zero_grad()
            sc.scale(m(torch.ones(1, 2)).sum()).backward()
            sc.step(opt)
            sc.update()
        self.assertEqual(sc.get_scale(), 2.0 ** 16)     # grown after 2 good steps
        self.assertTrue(torch.equal(m.weight.grad, torch.ones(1, 2)))   # unscaled exactly

    def test_state_dict_roundtrip(self):
        a = at.GradScaler("deepspeed:hysteresis=2")
        b = at.GradScaler("deepspeed:hysteresis=2")
        m = nn.Linear(1, 1)
        opt = torch.optim.SGD(m.parameters(), lr=0.0)
        for bad in (True, False, True):
            opt.zero_grad()
            a.scale(m(torch.tensor([[1e38 if bad else 1.0]])).sum()).backward()
            a.step(opt)
            a.update()
        b.load_state_dict(a.state_dict())
        self.assertEqual(b.get_scale(), a.get_scale())
        self.assertEqual(b.state_dict(), a.state_dict())

    def test_underflow_scaler_reads_emulated_counts(self):
        torch.manual_seed(0)
        m = MLP()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sc = at.GradScaler("underflow")
        d = os.path.join(tmpdir(self), "run")
        with at.emulate(m, "fp16-amp", out=d, log_every=0, hist_every=0) as emu:
            for _ in range(3):
                loss = F.cross_entropy(m(torch.rand(8, 64)), torch.randint(0, 10, (8,)))
                opt.zero_grad()
                sc.scale(loss).backward()
                self.assertIn("fc1.weight.grad", emu.grad_stats())
                sc.step(opt)
                sc.update()
        r = ampsim.read_run(d)
        self.assertEqual(len(r["metrics"]["step"]), 3)
        self.assertEqual(len(r["tensors"]["step"]), 0)   # statistics gathered, not logged


if __name__ == "__main__":
    unittest.main()
