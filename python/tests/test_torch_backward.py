"""The backward of ampsim.torch.emulate follows autocast's autograd graph:
step-0 gradients bit-identical to torch.autocast("cpu", bfloat16) under
bf16-amp-cpu (diagnose.diff_grads), the CUDA-list policies against a graph
written out by hand with every rounding, gradients of emulated tensors seen
by retain_grad and hooks, and the diagnose command line.
(25-step trajectories: long_torch_backward.py, make check-long.)"""
import contextlib
import io
import json
import os
import subprocess
import sys
import unittest

from support import HAVE_TORCH, NO_TORCH, Counted, import_torch  # noqa: F401  (sets AMPSIM_LIB for the package)

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _grad, _rt
    from ampsim.torch.diagnose import diff_grads
    from torch_models import backward_case

HERE = os.path.dirname(os.path.abspath(__file__))

# (kind, shape): odd widths, 3 and 5 heads, odd contexts
CASES = [("mlp", {}), ("mlp", dict(d_in=29, width=61, depth=2, n_out=7, B=24)),
         ("block", {}), ("block", dict(C=30, heads=5, T=11, B=3)),
         ("mha", dict(B=4)), ("mha", dict(C=20, heads=5, batch_first=False, masked=True, T=9, B=3)),
         ("cnn", {}), ("ops", dict(B=33)), ("shared", {}), ("shared", dict(width=45, repeat=5, B=19)),
         ("handback", {}), ("handback", dict(p=0.3)), ("lstm", dict(B=5)), ("gru", dict(C=21, layers=1, bidirectional=True, B=3)),
         ("lstm", dict(batch_first=False, B=4, T=7)), ("lstm", dict(proj=5, bidirectional=True, B=3, T=6)),
         ("pool", {}), ("pool", dict(width=13, B=5)),
         ("inplace", dict(B=4)), ("gpt", dict(vocab=61, C=30, heads=5, layers=2, T=13, B=3))]


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestStep0AgainstAutocast(unittest.TestCase):
    def test_gradients_bit_identical(self):
        """bf16-amp-cpu: every parameter gradient, every forward output and
        every intermediate gradient equal to CPU autocast's, bit for bit."""
        for kind, shape in CASES:
            with self.subTest(kind=kind, **shape):
                m, loss_fn = backward_case(kind, **shape)
                r = diff_grads(m, loss_fn, "bf16-amp-cpu")
                self.assertEqual(r.identical_fraction, 1.0, str(r))
                self.assertIsNone(r.first_forward, str(r))
                self.assertIsNone(r.first_backward, str(r))
                self.assertGreater(r.ops, 5)

    def test_ampsim_kernels_bit_identical(self):
        """kernels="ampsim": the C emulator's torch_cpu kernels (pair-order
        GEMMs forward and backward, the loss gradient, softmax, LayerNorm) give
        CPU autocast's gradients too, on the models they cover; the only
        forward difference is the loss value (formed in double). The pair
        order is oneDNN's AVX512_CORE bf16 kernel's: autocast runs in a child
        process with oneDNN pinned to it (ONEDNN_MAX_CPU_ISA), since on a
        processor with AMX oneDNN's default bf16 kernel sums in another order."""
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE", OMP_NUM_THREADS="1")
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ampsim-kernels"], capture_output=True,
                           text=True, env=env, cwd=HERE)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        res = json.loads(r.stdout)
        self.assertEqual(len(res), len(_ampsim_kernel_cases()))
        for kind, shape, frac, first_bwd, first_fwd_op, text in res:
            with self.subTest(kind=kind, **shape):
                self.assertEqual(frac, 1.0, text)
                self.assertIsNone(first_bwd, text)
                self.assertIn(first_fwd_op, (None, "cross_entropy"), text)

    def test_the_comparison_finds_other_rules(self):
        """The C emulator's FP32 kernels (a bf16-amp-cpu policy with
        "kernels": "default" and kernels="ampsim": its layer norm, softmax and
        products of activations in double, GEMMs in FP32 rounded once) are
        other rules: diff_grads counts the elements and names the first op
        where the gradients part."""
        m, loss_fn = backward_case("block", C=30, heads=5, T=11, B=3)
        pol = at.Policy({"base": "bf16-amp-cpu", "kernels": "default"})
        r = diff_grads(m, loss_fn, pol, kernels="ampsim", reference=("cpu", torch.bfloat16))
        self.assertLess(r.identical_fraction, 0.99)
        self.assertIsNotNone(r.first_backward)
        i, op, module, n, numel = r.first_backward
        self.assertGreater(n, 0)
        self.assertLessEqual(n, numel)
        self.assertIn("first backward divergence: op %d %s" % (i, op), str(r))
        self.assertTrue(any(p[2] > 0 for p in r.params if p[0] == "block.attn.c_attn.weight"), str(r))

    def test_retain_grad_and_hooks_see_the_summed_gradient(self):
        """h.retain_grad() and h.register_hook(fn) on an emulated tensor used
        twice give the gradient autocast gives (summed in bf16)."""
        torch.manual_seed(0)
        lin, x = nn.Linear(12, 9), torch.randn(5, 12)
        grads = {}
        for mode in ("autocast", "emulate"):
            seen = []
            emu = at.emulate(lin, "bf16-amp-cpu") if mode == "emulate" else None
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=emu is None):
                if emu:
                    emu.__enter__()
                h = lin(x)
                h.retain_grad()
                handle = h.register_hook(lambda g: seen.append(g.float()))
                y = torch.tanh(h) * h + h * 0.3
                y.float().sum().backward()
                handle.remove()
                if emu:
                    emu.__exit__(None, None, None)
            self.assertEqual(len(seen), 1)
            grads[mode] = (h.grad.float(), seen[0])
        self.assertTrue(torch.equal(grads["emulate"][0], grads["autocast"][0]))
        self.assertTrue(torch.equal(grads["emulate"][1], grads["autocast"][1]))

    def test_reads_that_carry_no_gradient_are_not_uses(self):
        """x.dim(), x.shape, x.size(0), comparisons and indices of an emulated
        tensor (a BatchNorm's input check) make no use node: the three real
        consumers below make two, and the gradients are those of the same
        model without the reads, bit for bit, and CPU autocast's. Iterating
        over the tensor stays a use (its rows carry gradient)."""
        torch.manual_seed(0)
        lin, x = nn.Linear(6, 5), torch.randn(4, 6)

        def f(h, reads, rows):
            if reads:
                assert h.dim() == 2 and h.shape[0] == h.size(0) == 4
                _ = ((h > 0).any(), h.argmax(), h.isfinite().all(), h.numel())
            y = torch.tanh(h) * h + h * 0.3
            if rows:
                y = y + torch.stack([r * 2 for r in h])
            return y
        for rows in (False, True):
            grads = []
            for reads in (False, True):
                lin.zero_grad()
                with at.emulate(lin, "bf16-amp-cpu"), Counted(_grad._UseFn, "apply") as c:
                    f(lin(x), reads, rows).sum().backward()
                self.assertEqual(c.calls, 3 if rows else 2, (reads, rows))
                grads.append([p.grad.clone() for p in lin.parameters()])
            lin.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                f(lin(x), True, rows).float().sum().backward()
            grads.append([p.grad.clone() for p in lin.parameters()])
            for g in grads[1:]:
                for a, b in zip(grads[0], g):
                    self.assertTrue(torch.equal(a, b), rows)

    def test_a_forward_under_no_grad_before_the_training_forward(self):
        """A forward under torch.no_grad (an evaluation) earlier in the same
        step leaves the training forward's gradients as they are without it:
        the weight copy cast under no_grad is not reused where the gradient is
        needed."""
        for pol in ("bf16-amp", "fp16-amp", "bf16-amp-cpu"):
            grads = []
            for evaluate_first in (False, True):
                m, loss_fn = backward_case("shared")
                with at.emulate(m, pol):
                    if evaluate_first:
                        with torch.no_grad():
                            loss_fn(m)
                    loss_fn(m).backward()
                grads.append([p.grad for p in m.parameters()])
            for a, b in zip(*grads):
                self.assertIsNotNone(b, pol)
                self.assertTrue(torch.equal(a, b), pol)


def _gemm_cases():
    """(op, function, operands) of the written-out GEMM backward: odd sizes,
    transposed operands, size-1 dimensions, broadcast masks."""
    g = torch.Generator().manual_seed(7)

    def r(*s):
        return torch.randn(*s, generator=g)
    F_ = F.linear
    return [("linear", F_, [r(5, 3), r(4, 3), r(4)]), ("linear", F_, [r(2, 7, 3), r(4, 3), r(4)]),
            ("linear", F_, [r(3, 5).t(), r(4, 3), r(4)]), ("linear", F_, [r(5, 3), r(3, 4).t(), r(4)]),
            ("linear", F_, [r(1, 3), r(4, 3), r(4)]), ("linear", F_, [r(6, 1), r(1, 1), r(1)]),
            ("linear", F_, [r(1, 1), r(9, 1), r(9)]), ("linear", F_, [r(1, 9, 3), r(2, 3), r(2)]),
            ("linear", F_, [r(5, 3), r(4, 3)]), ("linear", F_, [r(3, 5).t(), r(4, 3)]),
            ("linear", F_, [r(2, 7, 3), r(4, 3)]), ("linear", F_, [r(7, 2, 3).transpose(0, 1), r(4, 3)]),
            ("linear", F_, [r(7, 2, 3).transpose(0, 1), r(4, 3), r(4)]),
            ("linear", F_, [r(2, 7, 5)[:, :, 1:4], r(4, 3), r(4)]), ("linear", F_, [r(1, 1, 3), r(1, 3), r(1)]),
            ("linear", F_, [r(9, 1, 3).transpose(0, 1), r(2, 3), r(2)]),
            ("bmm", torch.bmm, [r(3, 5, 2), r(3, 2, 7)]), ("bmm", torch.bmm, [r(3, 2, 5).transpose(1, 2), r(3, 2, 7)]),
            ("bmm", torch.bmm, [r(1, 1, 4), r(1, 4, 1)]),
            ("baddbmm", torch.baddbmm, [r(5, 7), r(3, 5, 2), r(3, 2, 7)]),
            ("baddbmm", torch.baddbmm, [r(1, 5, 1), r(3, 5, 2), r(3, 2, 7)]),
            ("baddbmm", torch.baddbmm, [r(3, 5, 7), r(3, 5, 2), r(3, 7, 2).transpose(1, 2)])]


def _conv_cases():
    """(op, function, operands, geometry arguments) of the written-out
    convolution backward: 1-D, 2-D and 3-D, strides, padding, dilation,
    groups (depthwise included), no bias, a channels-last input."""
    g = torch.Generator().manual_seed(8)

    def r(*s):
        return torch.randn(*s, generator=g)
    return [("conv2d", F.conv2d, [r(2, 3, 9, 9), r(4, 3, 3, 3), r(4)], ((2, 2), (1, 1), (1, 1), 1)),
            ("conv2d", F.conv2d, [r(1, 3, 8, 8), r(5, 3, 8, 8)], (8, 0, 1, 1)),
            ("conv2d", F.conv2d, [r(2, 6, 7, 5), r(6, 1, 3, 3), r(6)], (1, (1, 2), (2, 1), 6)),
            ("conv2d", F.conv2d, [r(2, 4, 6, 6), r(6, 2, 1, 1), r(6)], (1, 0, 1, 2)),
            ("conv2d", F.conv2d, [r(2, 3, 7, 7).contiguous(memory_format=torch.channels_last), r(4, 3, 3, 3),
                                  r(4)], (1, 1, 1, 1)),
            ("conv1d", F.conv1d, [r(3, 2, 11), r(4, 2, 3), r(4)], ((2,), (1,), (1,), 1)),
            ("conv3d", F.conv3d, [r(1, 2, 5, 4, 6), r(3, 2, 2, 3, 1), r(3)], (1, (0, 1, 0), 1, 1))]


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestWrittenOutGemmBackward(unittest.TestCase):
    def test_grads_equal_autograds(self):
        """Every operand gradient of the written-out backward is autograd's,
        bit for bit and with its strides, for each operand alone and all
        together."""
        from ampsim.torch import _gemm_grad
        for op, fn, ts in _gemm_cases():
            form = _gemm_grad.plan(op, ts)
            self.assertIsNotNone(form, "%s %s" % (op, [t.shape for t in ts]))
            out = fn(*ts)
            gy = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
            for need in [[True] * len(ts)] + [[j == i for j in range(len(ts))] for i in range(len(ts))]:
                with self.subTest(op=op, shapes=[tuple(t.shape) for t in ts], need=need):
                    ls = [t.detach().requires_grad_(n) for t, n in zip(ts, need)]
                    ref = torch.autograd.grad(fn(*ls), [lf for lf in ls if lf.requires_grad], gy)
                    got = [x for x in _gemm_grad.grads(form, ts, gy, need) if x is not None]
                    self.assertEqual(len(got), len(ref))
                    for a, b in zip(got, ref):
                        self.assertTrue(torch.equal(a, b))
                        self.assertEqual(a.stride(), b.stride())

    def test_conv_grads_equal_autograds(self):
        """The same for convolutions: convolution_backward with the call's
        geometry gives autograd's gradients, bit for bit and stride for stride."""
        from ampsim.torch import _gemm_grad
        for op, fn, ts, geo in _conv_cases():
            nob = [None] if len(ts) == 2 else []        # (no bias: None in its place)
            geometry = _gemm_grad.conv_geometry(op, ts + nob + list(geo), {})
            form = _gemm_grad.plan(op, ts, geometry)
            self.assertEqual(form, "conv", op)
            out = fn(*ts, *nob, *geo)
            gy = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
            for need in [[True] * len(ts)] + [[j == i for j in range(len(ts))] for i in range(len(ts))]:
                with self.subTest(op=op, shapes=[tuple(t.shape) for t in ts], geo=geo, need=need):
                    ls = [t.detach().requires_grad_(n) for t, n in zip(ts, need)]
                    ref = torch.autograd.grad(fn(*ls, *nob, *geo), [lf for lf in ls if lf.requires_grad], gy)
                    got = [x for x in _gemm_grad.grads(form, ts, gy, need, geometry) if x is not None]
                    self.assertEqual(len(got), len(ref))
                    for a, b in zip(got, ref):
                        self.assertTrue(torch.equal(a, b))
                        self.assertEqual(a.stride(), b.stride())

    def test_conv_geometry(self):
        from ampsim.torch import _gemm_grad
        x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
        self.assertEqual(_gemm_grad.conv_geometry("conv2d", (x, w), {}), ([1, 1], [0, 0], [1, 1], 1))
        self.assertEqual(_gemm_grad.conv_geometry("conv2d", (x, w, None, 2), {"padding": (1, 0), "groups": 1}),
                         ([2, 2], [1, 0], [1, 1], 1))
        for name, args, kw in (("conv2d", (x, w, None, 1, "same"), {}), ("conv2d", (x, w), {"padding": "valid"}),
                               ("conv2d", (x, w), {"out": x}), ("conv_transpose2d", (x, w), {}),
                               ("conv2d", (x, w, None, (1, 2, 3)), {}), ("conv2d", (x, w, None, True), {})):
            self.assertIsNone(_gemm_grad.conv_geometry(name, args, kw), (name, args, kw))
        # an unbatched input keeps the inner graph
        self.assertIsNone(_gemm_grad.plan("conv2d", [x[0], w], ([1, 1], [0, 0], [1, 1], 1)))

    def test_other_forms_keep_the_inner_graph(self):
        from ampsim.torch import _gemm_grad
        x3 = torch.randn(4, 3, 2).transpose(1, 2)       # (matmul may run bmm: not folded)
        for op, ts in (("linear", [x3, torch.randn(5, 3), torch.randn(5)]),
                       ("linear", [torch.randn(2, 2, 2, 3), torch.randn(5, 3), torch.randn(5)]),
                       ("matmul", [torch.randn(2, 3), torch.randn(3, 4)])):
            self.assertIsNone(_gemm_grad.plan(op, ts))

    def test_emulated_runs_equal_the_inner_graph(self):
        """fp16-amp, bf16-amp, bf16-pure and fp8-hybrid (FP8 operands, delayed
        scaling): the parameter gradients with the written-out backward equal
        those through the inner autograd graph, on an attention block with 5
        heads, a masked encoder and an MLP."""
        from ampsim.torch import _gemm_grad
        from zoo_models import EncoderLM
        from zoo_models import ZOO
        idx = torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(5))
        img = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(6))
        cases = [backward_case("block", C=30, heads=5, T=11, B=3), backward_case("mlp", B=7),
                 (EncoderLM(), lambda mod: F.cross_entropy(mod(idx).flatten(0, 1), idx.flatten()))]
        # convolutions: grouped, depthwise, strided, 1x1 (mobilenet_v3_small); the ViT's patches
        for name in ("mobilenet_v3_small", "vit"):
            torch.manual_seed(0)
            cases.append((ZOO[name][0](), lambda mod: mod(img).square().mean()))
        plan = _gemm_grad.plan
        for k, (m, loss_fn) in enumerate(cases):
            m.eval()            # (no dropout draws)
            for pol in ("fp16-amp", "bf16-amp", "bf16-pure", "fp8-hybrid"):
                with self.subTest(case=k, policy=pol):
                    grads = []
                    for written in (True, False):
                        m.zero_grad()
                        _gemm_grad.plan = plan if written else (lambda op, ts, geometry=None: None)
                        try:
                            with at.emulate(m, pol):
                                loss_fn(m).backward()
                        finally:
                            _gemm_grad.plan = plan
                        grads.append([p.grad.clone() for p in m.parameters()])
                    for a, b in zip(*grads):
                        self.assertTrue(torch.equal(a, b))

    def test_rounding_in_place_equals_a_new_tensor(self):
        """round_count(inplace=True) writes over its input the values, counts
        and statistics of a rounding into a new tensor (inf, NaN, subnormal
        and overflowing inputs; lengths below and above a chunk)."""
        g = torch.Generator().manual_seed(11)
        for fmt in ("fp16", "bf16", "e4m3", "e5m2"):
            for n in (7, 1000, 300000):
                x = torch.randn(n, generator=g) * torch.exp(torch.randn(n, generator=g) * 8)
                x[::97] = float("inf")
                x[::101] = float("nan")
                y1, s1, n1 = _rt.round_count(x.clone(), fmt, stats=True)
                x2 = x.clone()
                y2, s2, n2 = _rt.round_count(x2, fmt, stats=True, inplace=True)
                self.assertIs(y2, x2)
                self.assertTrue(torch.equal(y1.view(torch.int32), y2.view(torch.int32)))
                self.assertEqual(n1, n2)
                for k in ("n", "flushed", "subnormal", "saturated", "overflow", "rel_err", "amax"):
                    self.assertEqual(getattr(s1, k), getattr(s2, k), k)

    def test_an_operand_changed_in_place_raises(self):
        """As autograd raises for a saved tensor changed in place (here PyTorch
        would find h saved by the second GEMM)."""
        lin = nn.Linear(4, 4)
        x = torch.randn(5, 4)
        with at.emulate(lin, "bf16-amp"):
            h = lin(x) * 0.5                # bf16: the second GEMM takes h as it is
            h2 = nn.functional.linear(h, lin.weight, lin.bias)
            h.mul_(2)
            with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
                h2.sum().backward()
        h = lin(x) * 0.5
        h2 = nn.functional.linear(h, lin.weight, lin.bias)
        h.mul_(2)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            h2.sum().backward()


class _Mixed(nn.Module if HAVE_TORCH else object):
    """A conv (the inner-graph GEMM), an LSTM layer, attention, tanh and
    softmax (rules that read the rounded output), linear GEMMs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, padding=1)
        self.rnn = nn.LSTM(6, 6, batch_first=True)
        self.attn = nn.MultiheadAttention(6, 2, batch_first=True)
        self.out = nn.Linear(6, 3)

    def forward(self, x):
        h = self.conv(x).transpose(1, 2)
        h = self.rnn(h)[0]
        h = torch.tanh(h + self.attn(h, h, h)[0])
        return self.out(F.softmax(h, -1) * h)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestRetainedGraph(unittest.TestCase):
    def test_a_second_backward_adds_the_same_gradients(self):
        """loss.backward(retain_graph=True) then loss.backward(): every
        parameter's gradient is twice the first, under every policy, as in
        PyTorch (fp8-hybrid: the first backward's amaxes move the gradients'
        delayed scales, so the second is only checked to run); without
        retain_graph the second raises PyTorch's error."""
        x = torch.randn(2, 4, 5)
        for pol in ("fp32", "fp16-amp", "bf16-amp-cpu", "bf16-pure", "fp8-hybrid"):
            with self.subTest(policy=pol):
                torch.manual_seed(0)
                m = _Mixed()
                with at.emulate(m, pol):
                    loss = m(x).square().mean()
                    loss.backward(retain_graph=True)
                    once = [p.grad.clone() for p in m.parameters()]
                    loss.backward()
                    for p, g in zip(m.parameters(), once):
                        if pol == "fp8-hybrid":
                            self.assertTrue(bool(torch.isfinite(p.grad).all()))
                        else:
                            self.assertTrue(torch.equal(p.grad, 2 * g))
                    loss = m(x).square().mean()
                    loss.backward()
                    with self.assertRaisesRegex(RuntimeError, "backward through the graph a second time"):
                        loss.backward()


    def test_in_place_change_of_an_unsaved_output(self):
        """y = h * noise on real bf16 tensors (bf16-amp-cpu), then y += h (as
        torchvision's stochastic depth and residual do): PyTorch's mul saves
        its inputs, not its output, so the change is allowed, as under CPU
        autocast."""
        torch.manual_seed(0)
        lin = nn.Linear(6, 6)
        x, noise = torch.randn(3, 6), torch.rand(3, 1)
        for ctx in (torch.autocast("cpu", dtype=torch.bfloat16), at.emulate(lin, "bf16-amp-cpu")):
            with ctx:
                h = lin(x)
                y = h * noise
                y += h
                y.float().sum().backward()


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestGraphLifetime(unittest.TestCase):
    def test_steps_leave_no_cyclic_garbage(self):
        """Training steps (attention, views with several uses, shared weights)
        free their graphs by reference counting: none of the emulation's
        nodes or gradient buffers is left to the cyclic collector."""
        import gc
        for kind, shape in (("block", dict(C=30, heads=5, T=11, B=3)), ("shared", {})):
            m, loss_fn = backward_case(kind, **shape)
            opt = torch.optim.SGD(m.parameters(), lr=0.01)
            with at.emulate(m, "fp16-amp"):
                sc = at.GradScaler("torch")

                def step():
                    opt.zero_grad()
                    sc.scale(loss_fn(m)).backward()
                    sc.step(opt)
                    sc.update()
                step()
                gc.collect()
                was = gc.isenabled()
                gc.disable()
                gc.set_debug(gc.DEBUG_SAVEALL)
                try:
                    for _ in range(3):
                        step()
                    gc.collect()
                    left = [type(o).__name__ for o in gc.garbage]
                finally:
                    gc.set_debug(0)
                    gc.garbage.clear()
                    if was:
                        gc.enable()
            ours = [n for n in left if n == "_Buffer" or n.endswith("FnBackward")]
            self.assertEqual(ours, [], kind)


class Hand(nn.Module if HAVE_TORCH else object):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(8, 6)
        self.lin2 = nn.Linear(6, 5)

    def forward(self, x):
        h = self.lin1(x)                       # used four times
        t = torch.tanh(h)
        u = h * t
        s = torch.sigmoid(h) + 1
        d = u / s
        return self.lin2(d + h)


def by_hand(m, x, y, fmt, buffer=None):
    """Hand's step-0 weight gradients under a CUDA-list policy, every rounding
    written out (r: into fmt; CUDA's Half/BFloat16 scalar arithmetic rounds
    after each operator). buffer(c_add, c_sig, c_mul, c_tanh) forms h's
    gradient; default: autograd's input buffer in fmt, in arrival order."""
    def r(v):
        return _rt.round_t(v.detach(), fmt)[0]
    W1, b1, W2, b2 = (r(p) for p in (m.lin1.weight, m.lin1.bias, m.lin2.weight, m.lin2.bias))
    xr = r(x)
    h = r(xr @ W1.t() + b1)
    t, u, sg = r(torch.tanh(h)), None, r(torch.sigmoid(h))
    u = r(h * t)
    s = r(sg + 1)
    d = r(u / s)
    e = r(d + h)
    z = r(e @ W2.t() + b2)
    zf = z.clone().requires_grad_(True)          # the loss runs in FP32 (autocast's fp32 list)
    gzf, = torch.autograd.grad(F.cross_entropy(zf, y), zf)
    gz = r(gzf)                                  # the cast's backward rounds into fmt
    gW2, gb2, ge = r(gz.t() @ e), r(gz.sum(0)), r(gz @ W2)
    c_add = ge                                   # e = d + h
    gu = r(ge / s)
    gs = r(-ge * r(r(u / s) / s))                # div's divisor: -grad * ((self / other) / other)
    c_sig = r(r(gs * r(1 - sg)) * sg)            # CUDA sigmoid_backward(grad, result): a * (1 - b) * b
    c_mul, gt = r(gu * t), r(gu * h)
    c_tanh = r(gt * r(1 - r(t * t)))             # CUDA tanh_backward(grad, result): a * (1 - b * b)
    if buffer is None:
        # arrival order: the add's backward, then div -> add(+1) -> sigmoid, then mul, then tanh
        gh = r(r(r(c_add + c_sig) + c_mul) + c_tanh)
    else:
        gh = buffer(r, c_add, c_sig, c_mul, c_tanh)
    gW1, gb1 = r(gh.t() @ xr), r(gh.sum(0))
    return {"lin1.weight": gW1, "lin1.bias": gb1, "lin2.weight": gW2, "lin2.bias": gb2}


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCudaListsByHand(unittest.TestCase):
    def test_fp16_amp_and_bf16_amp(self):
        """fp16-amp and bf16-amp give the weight gradients of the graph written
        out by hand; autograd's FP32 sum of the four contributions, or another
        order, would give other bits."""
        other = {"fp32 sum": lambda r, a, b, c, d: r(a + b + c + d),
                 "reversed": lambda r, a, b, c, d: r(r(r(d + c) + b) + a)}
        for fmt, pol in (("bf16", "bf16-amp"), ("fp16", "fp16-amp")):
            differs = dict.fromkeys(other, 0)
            for seed in range(4):
                with self.subTest(policy=pol, seed=seed):
                    torch.manual_seed(seed)
                    m, x, y = Hand(), torch.randn(4, 8) * 2, torch.randint(0, 5, (4,))
                    ref = by_hand(m, x, y, fmt)
                    with at.emulate(m, pol):
                        F.cross_entropy(m(x), y).backward()
                    for n, p in m.named_parameters():
                        self.assertTrue(torch.equal(p.grad, ref[n]), "%s: %d of %d differ" % (
                            n, int((p.grad != ref[n]).sum()), p.numel()))
                    for k, fn in other.items():
                        differs[k] += int((by_hand(m, x, y, fmt, fn)["lin1.weight"] != ref["lin1.weight"]).sum())
            for k, n in differs.items():
                self.assertGreater(n, 0, "%s: %s gives the same bits" % (pol, k))


    def test_exp_and_sqrt_read_the_rounded_output(self):
        """Under the CUDA lists sqrt stays in the tensor's format and its
        backward grad / (2 * result) reads the result as the forward rounded
        it; exp is on autocast's FP32 list (autocast_mode.cpp), so it runs on
        h cast to float32, returns float32 and its gradient grad * result is
        rounded by the cast's backward. h (used twice) sums in format."""
        for fmt, pol in (("bf16", "bf16-amp"), ("fp16", "fp16-amp")):
            def r(v):
                return _rt.round_t(v.detach(), fmt)[0]
            torch.manual_seed(3)
            lin, x = nn.Linear(6, 7), torch.randn(5, 6)
            g = r(torch.randn(5, 7))
            with at.emulate(lin, pol):
                h = lin(x)
                h.retain_grad()
                e_out, q_out = torch.exp(h), torch.sqrt(h)
                (e_out + q_out).backward(g)     # (NaN where h < 0, in both)
            self.assertEqual(_rt.fmt_of(e_out), "fp32", pol)
            self.assertEqual(_rt.fmt_of(q_out), fmt, pol)
            hd = h.detach()
            q = r(torch.sqrt(hd))
            c_sqrt, c_exp = r(g / (2 * q)), r(g * torch.exp(hd))   # sqrt's use was created last: first
            want = r(c_sqrt + c_exp)
            self.assertTrue(torch.equal(h.grad.nan_to_num(), want.nan_to_num()), pol)
            # sqrt's unrounded result would give other bits
            self.assertFalse(torch.equal(r(g / (2 * torch.sqrt(hd))).nan_to_num(), c_sqrt.nan_to_num()), pol)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestDiagnoseCommand(unittest.TestCase):
    def run_cli(self, *args):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE), HERE, env.get("PYTHONPATH", "")])
        env["OMP_NUM_THREADS"] = "1"
        return subprocess.run([sys.executable, "-m", "ampsim.torch.diagnose", *args], env=env,
                              capture_output=True, text=True)

    def test_reports_a_model(self):
        p = self.run_cli("torch_models:diagnose_demo", "--policy", "bf16-amp-cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("100.0000% of the gradient elements identical", p.stdout)
        self.assertIn("block.attn.c_attn.weight", p.stdout)
        self.assertIn("first backward divergence: none", p.stdout)

    def test_bad_input(self):
        from ampsim.torch import diagnose
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(diagnose.main(["torch_models:no_such_function"]), 2)
            self.assertEqual(diagnose.main(["torch_models:diagnose_demo", "--policy", "fp16-pure"]), 2)
        self.assertIn("no_such_function", err.getvalue())
        self.assertIn("no autocast reference", err.getvalue())
        out = io.StringIO()
        with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as e:
            diagnose.main(["--help"])
        self.assertEqual(e.exception.code, 0)
        self.assertIn("MODULE:FUNCTION", out.getvalue())


def _ampsim_kernel_cases():
    # convolutions, bf16 sums, recurrent cells, dropout's scaling: no C kernel;
    # nn.MultiheadAttention: its products of under 400 multiply-adds per
    # matrix run aten's own loop (sequential float sums), not oneDNN's
    # pairs, and the larger cases still differ after it (not modelled)
    return [(kind, shape) for kind, shape in CASES
            if kind not in ("cnn", "ops", "lstm", "gru", "pool", "inplace", "mha") and not shape.get("p")]


def _ampsim_kernel_results():
    """[(kind, shape, identical fraction, first backward divergence, the op of
    the first forward one, the report)] of diff_grads with kernels="ampsim"."""
    out = []
    for kind, shape in _ampsim_kernel_cases():
        m, loss_fn = backward_case(kind, **shape)
        r = diff_grads(m, loss_fn, "bf16-amp-cpu", kernels="ampsim")
        fb = [str(v) for v in r.first_backward] if r.first_backward else None
        out.append((kind, shape, r.identical_fraction, fb, r.first_forward and r.first_forward[1], str(r)))
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--ampsim-kernels"]:        # (the child process of test_ampsim_kernels_bit_identical)
        json.dump(_ampsim_kernel_results(), sys.stdout)
        sys.exit(0)
    unittest.main()
