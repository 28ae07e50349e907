"""ampsim.torch's op coverage: every torch function classified (walk of
torch.overrides), in-place ops, nn.MultiheadAttention, LSTM/GRU/RNN and
embeddings emulated and named, fp32 bit-identical to plain PyTorch,
coverage.csv and strict mode. A quick subset of the model zoo
(long_torch_zoo.py has the full one)."""
import csv
import inspect
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, Counted, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _dtypes, _ops, _rnn
    from torch_models import MHANet, PrivateKernelNet



def overridable():
    """(owner, name, function) of every function of torch, torch.nn.functional
    and Tensor that torch.overrides lists, and of F's Python functions that
    dispatch torch functions."""
    T = torch.Tensor
    out = []
    for f in torch.overrides.get_testing_overrides():
        n = getattr(f, "__name__", None)
        if n == "__get__":
            out.append(("Tensor", getattr(f.__self__, "__name__", "property"), f))
            continue
        for owner, ns in (("F", F), ("torch", torch), ("Tensor", T)):
            obj = ns.__dict__.get(n) if ns is T else getattr(ns, n, None)
            if obj is f:
                out.append((owner, n, f))
                break
    for n in dir(F):
        f = getattr(F, n)
        if inspect.isfunction(f) and "handle_torch_function" in f.__code__.co_names:
            out.append(("F", n, f))
    # the wider list (in-place forms such as addmm_), and every method of Tensor
    # (x.new_zeros reaches the function mode though torch lists it as ignored)
    for ns, fs in torch.overrides.get_overridable_functions().items():
        out.extend(("Tensor" if ns is T else getattr(ns, "__name__", "torch"), _ops.func_name(f), f) for f in fs)
    for n in dir(T):
        f = getattr(T, n, None)
        # (the class protocol and the mode's own hook never reach the mode)
        if callable(f) and not isinstance(f, type) and n not in (
                "__init_subclass__", "__subclasshook__", "__torch_function__", "__class__", "__new__", "__init__"):
            out.append(("Tensor", n, f))
    return out


def run_steps(model, make_loss, policy, steps=2, out=None, **kw):
    """Loss values and final parameters after SGD steps (plain when policy is None)."""
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []

    def loop():
        for s in range(steps):
            loss = make_loss(model, s)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.detach().clone())
    if policy is None:
        loop()
    else:
        with at.emulate(model, policy, out=out, log_every=1, **kw):
            loop()
    return losses, [p.detach().clone() for p in model.parameters()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b)) and len(a) == len(b)


def rows(d, name):
    with open(os.path.join(d, name)) as f:
        return list(csv.DictReader(f))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestClassification(unittest.TestCase):
    def test_every_function_handled_or_classified(self):
        fs = overridable()
        self.assertGreater(len(fs), 700)
        missing = sorted({"%s.%s" % (o, n) for o, n, f in fs if _ops.classify(f)[0] == "unclassified"})
        self.assertEqual(missing, [])

    def test_the_reported_gaps_are_emulated(self):
        T = torch.Tensor
        for f, kind in ((F.hardswish, "elementwise"), (F.hardsigmoid, "elementwise"), (T.__iadd__, "inplace"),
                        (T.add_, "inplace"), (T.mul_, "inplace"), (torch.relu_, "inplace"),
                        (F.multi_head_attention_forward, "mha"), (torch.lstm, "rnn"), (torch.gru, "rnn"),
                        (torch.gru_cell, "rnn_cell"), (F.embedding, "embedding"), (F.max_pool2d, "view"),
                        (F.interpolate, "elementwise"), (F.pad, "elementwise"), (torch.Tensor.T.__get__, "view")):
            self.assertEqual(_ops.classify(f)[:2], ("emulated", kind), f)
        for f, name in ((T.addmm_, "addmm"), (T.baddbmm_, "baddbmm"), (T.cumsum_, "cumsum")):
            self.assertEqual(_ops.classify(f), ("emulated", "inplace", name))
        self.assertEqual(_ops.classify(T.new_zeros)[:2], ("classified", "fp32"))
        self.assertEqual(_ops.classify(torch.argmax)[:2], ("classified", "no_float"))
        self.assertEqual(_ops.classify(torch.linalg.svd)[:2], ("classified", "fp32"))
        self.assertEqual(_ops.classify(torch.hspmm)[:2], ("classified", "gemm_unrounded"))


class _OpNet(nn.Module if HAVE_TORCH else object):
    """A Linear (a bf16 tensor under CPU autocast), then fn of its output."""

    def __init__(self, n, fn):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.fc(x))


# (input shape, fn): ops on torch 1.13's CPU FP32 list, ops on neither list and
# a few on the low-precision list, each on a bf16 input
CPU_LIST_CASES = {
    "conv_transpose2d": ((1, 2, 6, 6), lambda h: F.conv_transpose2d(h, torch.randn(2, 3, 3, 3))),
    "conv_transpose1d": ((1, 2, 6), lambda h: F.conv_transpose1d(h, torch.randn(2, 3, 3), stride=2)),
    "avg_pool3d": ((1, 2, 4, 4, 4), lambda h: F.avg_pool3d(h, 2)),
    "max_pool3d": ((1, 2, 4, 4, 4), lambda h: F.max_pool3d(h, 2)),
    "adaptive_avg_pool3d": ((1, 2, 4, 4, 4), lambda h: F.adaptive_avg_pool3d(h, 2)),
    "reflect_pad2d": ((1, 2, 6, 6), lambda h: F.pad(h, (1, 1, 1, 1), mode="reflect")),
    "reflect_pad3d": ((1, 2, 4, 4, 4), lambda h: F.pad(h, (1, 1, 1, 1, 1, 1), mode="reflect")),
    "replicate_pad1d": ((1, 2, 6), lambda h: F.pad(h, (2, 1), mode="replicate")),
    "circular_pad2d": ((1, 2, 6, 6), lambda h: F.pad(h, (1, 1, 1, 1), mode="circular")),
    "grid_sample": ((1, 2, 5, 5), lambda h: F.grid_sample(h, torch.rand(1, 3, 3, 2) * 2 - 1, align_corners=False)),
    "prod": ((3, 4), lambda h: h.prod(1)),
    "cdist": ((1, 3, 4), lambda h: torch.cdist(h, h)),
    "trace": ((4, 4), lambda h: h.trace()),
    "mv": ((4, 5), lambda h: h.mv(h[0])),
    "outer": ((5,), lambda h: torch.outer(h, h)),
    "dot": ((5,), lambda h: h.dot(h)),
    "outer_fp32": ((5,), lambda h: torch.outer(h.float(), h.float())),
    "addmv_fp32": ((4, 5), lambda h: torch.addmv(torch.ones(4), h.float(), h[0].float())),
    # (on neither list, but _trilinear's products are bmm's, which autocast casts even on FP32
    # inputs; its backward, after the autocast block, is FP32; on a bf16 input with FP32 weights
    # that backward raises: test_bilinear_on_bf16_as_under_cpu_autocast)
    "bilinear_fp32": ((3, 5), lambda h: F.bilinear(h.float(), h.float() * 2, torch.randn(4, 5, 5))),
    "bilinear_fp32_bias": ((3, 5), lambda h: F.bilinear(h.float(), h.float(), torch.randn(4, 5, 5), torch.randn(4))),
    # (more composites whose C++ bodies multiply with bmm, matmul or mm)
    "affine_grid": ((2, 6), lambda h: F.affine_grid(h.view(2, 2, 3), (2, 1, 3, 4), align_corners=False)),
    "affine_grid_fp32": ((2, 6), lambda h: F.affine_grid(h.float().view(2, 2, 3) * 2, (2, 1, 5, 3),
                                                         align_corners=True)),
    "matrix_power": ((4, 4), lambda h: h.matrix_power(3)),
    "matrix_power_fp32": ((4, 4), lambda h: torch.linalg.matrix_power(h.float() * 0.5, 5)),
    "cov_fp32": ((3, 5), lambda h: torch.cov(h.float())),
    # (its inner vector_norm, which autocast runs in FP32 on the bf16 values)
    "matrix_norm": ((2, 8), lambda h: torch.linalg.matrix_norm(h.view(2, 2, 4))),
    # (one bf16 tensor three times in one op, and in others: its gradient shares add up in bf16 in
    # autograd's order, the edges of one node in argument order)
    "addcmul_same": ((3, 5), lambda h: torch.addcmul(h, h, h, value=0.5) + h * h + torch.where(h > 0, h, h * 0.5)),
    # (two outputs, each in the input's dtype)
    "var_mean": ((3, 5), lambda h: (lambda v, m: v * m)(*torch.var_mean(h, 1))),
    "std_mean_fp32": ((3, 5), lambda h: (lambda s, m: s + m)(*torch.std_mean(h.float() * 3, 1, keepdim=True))),
    "corrcoef": ((3, 5), lambda h: torch.corrcoef(h)),
    "max_pool2d": ((1, 2, 4, 4), lambda h: F.max_pool2d(h, 2)),
    "conv2d": ((1, 2, 6, 6), lambda h: F.conv2d(h, torch.randn(3, 2, 3, 3))),
    "softmax": ((3, 4), lambda h: F.softmax(h, -1)),
    # (a dropout that draws nothing hands back its input, whose two uses sum in bf16)
    "dropout_p0": ((3, 4), lambda h: F.dropout(h, 0.0, True) * h + h),
}


class Residual(nn.Module if HAVE_TORCH else object):
    """conv, batch norm, hardswish, in-place residual add (+=) and relu_."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        out = F.hardswish(self.bn(self.conv(x)))
        out += x
        out.mul_(F.hardsigmoid(x))
        out = torch.relu_(out)
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


class Attn(nn.Module if HAVE_TORCH else object):
    def __init__(self, batch_first=False, kdim=None):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=batch_first, kdim=kdim, vdim=kdim)
        self.kv = nn.Linear(8, kdim) if kdim else None
        self.head = nn.Linear(8, 5)

    def forward(self, x, mask=None, kpm=None):
        kv = self.kv(x) if self.kv is not None else x
        y, _ = self.self_attn(x, kv, kv, attn_mask=mask, key_padding_mask=kpm, need_weights=kpm is None)
        return self.head(y)


class LM(nn.Module if HAVE_TORCH else object):
    def __init__(self, cell="lstm", bidirectional=False, batch_first=True, **kw):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell]
        self.rnn = cls(8, 6, num_layers=2, dropout=0.1, bidirectional=bidirectional, batch_first=batch_first, **kw)
        width = kw.get("proj_size") or 6
        self.out = nn.Linear(2 * width if bidirectional else width, 20)
        self.batch_first = batch_first

    def forward(self, idx):
        x = self.emb(idx)
        if not self.batch_first:
            x = x.transpose(0, 1)
        y = self.rnn(x)[0]
        if not self.batch_first:
            y = y.transpose(0, 1)
        return self.out(y)


def lm_loss(m, s):
    g = torch.Generator().manual_seed(s)
    idx = torch.randint(0, 20, (3, 5), generator=g)
    return F.cross_entropy(m(idx).flatten(0, 1), idx.roll(1, 1).flatten())


def img_loss(m, s):
    g = torch.Generator().manual_seed(s)
    return F.cross_entropy(m(torch.randn(2, 4, 5, 5, generator=g)), torch.tensor([0, 2]))


def attn_loss(m, s, **kw):
    g = torch.Generator().manual_seed(s)
    x = torch.randn(4, 2, 8, generator=g)
    return m(x, **kw).square().mean()


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestFp32BitIdentical(unittest.TestCase):
    """Under fp32 (statistics on every step, so every op takes the emulated
    path) the run equals plain PyTorch bit for bit, backward included."""

    def check(self, make, loss, **kw):
        torch.manual_seed(1)
        ref = run_steps(make(), loss, None)
        torch.manual_seed(1)
        got = run_steps(make(), loss, "fp32", out=os.path.join(tmpdir(self), "run"), **kw)
        self.assertTrue(same(ref[0], got[0]), (ref[0], got[0]))
        self.assertTrue(same(ref[1], got[1]))

    def test_residual_inplace(self):
        self.check(Residual, img_loss)

    def test_mha(self):
        mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
        kpm = torch.tensor([[False, False, False, True], [False] * 4])
        self.check(Attn, attn_loss)
        self.check(lambda: Attn(kdim=6), lambda m, s: attn_loss(m, s, mask=mask, kpm=kpm))
        self.check(lambda: Attn(batch_first=True),
                   lambda m, s: attn_loss(m, s, mask=torch.triu(torch.full((2, 2), -1e4), 1)))

    def test_rnns(self):
        for cell in ("lstm", "gru", "rnn"):
            for bi, bf in ((False, True), (True, False)):
                with self.subTest(cell=cell, bidirectional=bi, batch_first=bf):
                    self.check(lambda: LM(cell, bi, bf), lm_loss)
        # an LSTM with projections (proj_size), with and without biases
        for bi, bias in ((False, True), (True, False)):
            with self.subTest(proj_size=4, bidirectional=bi, bias=bias):
                self.check(lambda: LM("lstm", bi, True, proj_size=4, bias=bias), lm_loss)

    def test_cells_match_pytorch(self):
        torch.manual_seed(0)
        for cls, kind in ((nn.LSTMCell, "lstm"), (nn.GRUCell, "gru"), (nn.RNNCell, "rnn_tanh")):
            m = cls(6, 9)
            x, h, c = torch.randn(3, 6), torch.randn(3, 9), torch.randn(3, 9)
            hx = (h, c) if kind == "lstm" else h
            ref = m(x, hx)
            got = _rnn.cell(kind, x, hx, m.weight_ih, m.weight_hh, m.bias_ih, m.bias_hh)
            ref, got = (ref, got) if kind == "lstm" else ((ref,), (got,))
            self.assertTrue(same(ref, got), kind)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestEmulatedAndNamed(unittest.TestCase):
    def test_mha_names_and_rows(self):
        torch.manual_seed(0)
        m = Attn()
        d = os.path.join(tmpdir(self), "run")
        run_steps(m, attn_loss, "fp16-amp", out=d, steps=1)
        names = {r["tensor"] for r in rows(d, "tensors.csv")}
        for n in ("self_attn.in_proj.out", "self_attn.matmul1.out", "self_attn.softmax.out",
                  "self_attn.dropout.out", "self_attn.matmul2.out", "self_attn.out_proj.out",
                  "self_attn.in_proj_weight", "self_attn.out_proj.weight", "self_attn.in_proj.out.grad"):
            self.assertIn(n, names)

    def test_self_attention_on_an_emulated_tensor_is_packed(self):
        """query, key and value one low-precision tensor (a Linear's output):
        one packed in_proj GEMM, as in PyTorch, not three."""
        for bf in (True, False):
            torch.manual_seed(0)
            m = MHANet(batch_first=bf)
            d = os.path.join(tmpdir(self), "run%d" % bf)
            x = torch.randn(2, 5, 12)
            run_steps(m, lambda mod, s: mod(x).square().mean(), "fp16-amp", out=d, steps=1)
            names = {r["tensor"] for r in rows(d, "tensors.csv")}
            self.assertIn("attn.in_proj.out", names)
            self.assertFalse([n for n in names if "in_proj_q" in n], names)
            cov = {r["op"]: r for r in rows(d, "coverage.csv")}
            # inp, in_proj, out_proj, head: 4 linear GEMMs
            self.assertEqual(int(cov["linear"]["calls"]), 4)

    def test_cross_attention_weight_pieces_are_the_weight(self):
        """in_proj_weight split (key is value) or chunked (all three differ):
        its pieces are the weight, cast once per step, with its rows."""
        for kv_same in (True, False):
            torch.manual_seed(0)
            m = nn.MultiheadAttention(8, 2, batch_first=True)
            q, k = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
            v = k if kv_same else torch.randn(2, 5, 8)
            d = os.path.join(tmpdir(self), "run%d" % kv_same)
            with at.emulate(m, "fp16-amp", out=d, log_every=1, strict=True) as emu:
                m(q, k, v)[0].square().mean().backward()
                emu.step()
            t = {r["tensor"]: r for r in rows(d, "tensors.csv")}
            self.assertIn("in_proj_weight.grad", t)
            self.assertEqual(int(t["in_proj_weight"]["n"]), m.in_proj_weight.numel())
            self.assertFalse([n for n in t if n.endswith((".input2", ".input3"))], sorted(t))

    def test_inplace_gemms_and_reductions(self):
        """x.addmm_(a, w) is the emulated addmm written back; x.cumsum_(1)
        stays in x's format."""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(6, 6))
                self.fc = nn.Linear(6, 6)

            def forward(self, x):
                out = x.clone().addmm_(x, self.w)
                return out, torch.addmm(x, x, self.w), self.fc(x).clone().cumsum_(1)
        torch.manual_seed(0)
        m = M()
        x = torch.randn(3, 6) / 3
        with at.emulate(m, "fp16-amp", strict=True):
            a, b, c = m(x)
        self.assertTrue(torch.equal(a, b))
        self.assertTrue(torch.equal(a, a.half().float()))
        self.assertFalse(torch.equal(a, torch.addmm(x, x, m.w)))
        self.assertTrue(torch.equal(c, c.half().float()))

    def test_basic_indexing_keeps_the_format(self):
        """x[0], x[1:3], x[..., 2] (torch 1.13's fast path, which skips the
        function mode) keep their input's format, and arithmetic on them is
        rounded as on any emulated tensor; Tensor.__getitem__ is PyTorch's
        again after the block."""
        torch.manual_seed(0)
        m = _OpNet(5, lambda h: (h[0], h[1:3], h[..., 2], h[0] * 2.1))
        with at.emulate(m, "fp16-amp", strict=True):
            outs = m(torch.randn(4, 5))
        for o in outs:
            self.assertEqual(getattr(o, "_ampsim_fmt", None), "fp16")
        self.assertTrue(torch.equal(outs[3], (outs[0] * 2.1).half().float()))
        self.assertNotIn("__getitem__", torch.Tensor.__dict__)

    def test_writes_into_an_emulated_tensor_are_rounded(self):
        """x[0] = v, x[idx] = v, x[i, j] = 0.1 into a low-precision tensor:
        the value rounded into its format, as the copy into an fp16 tensor
        rounds it; under fp32 the run equals PyTorch's."""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(5, 5)
                self.v = nn.Parameter(torch.randn(5))

            def forward(self, x):
                h = self.fc(x) * 1.0
                self.before = h * 2         # (a use of h before the writes)
                h[0] = self.v * 1.0001
                h[torch.tensor([1, 2])] = self.v * 1.0003
                h[3, 1] = 0.1
                return h
        torch.manual_seed(0)
        m = M()
        x = torch.randn(4, 5)
        with at.emulate(m, "fp16-amp", strict=True):
            h = m(x)
            (h.sum() + m.before.sum()).backward()
        with torch.no_grad():
            self.assertTrue(torch.equal(h, h.half().float()))
            self.assertTrue(torch.equal(h[0], (m.v * 1.0001).half().float()))
            self.assertEqual(float(h[3, 1]), float(torch.tensor(0.1).half()))
        self.assertNotIn("__setitem__", torch.Tensor.__dict__)
        # the writes are on h's graph: v receives its gradient, and the
        # overwritten rows pass none back to fc
        self.assertTrue(torch.allclose(m.v.grad, torch.full((5,), 1.0001 + 2 * 1.0003), rtol=1e-6))
        # (bias: 2 from each of the 4 rows of before; 1 from row 3 but at its written column 1)
        self.assertTrue(torch.equal(m.fc.bias.grad, torch.tensor([9.0, 8.0, 9.0, 9.0, 9.0])), m.fc.bias.grad)
        self.check_fp32(M, lambda mod, s: mod(x).square().sum())

    def check_fp32(self, make, loss):
        torch.manual_seed(1)
        ref = run_steps(make(), loss, None)
        torch.manual_seed(1)
        got = run_steps(make(), loss, "fp32", out=os.path.join(tmpdir(self), "fp32"))
        self.assertTrue(same(ref[0], got[0]) and same(ref[1], got[1]))

    def test_mha_output_in_format(self):
        torch.manual_seed(0)
        m = Attn()
        x = torch.randn(4, 2, 8)
        with at.emulate(m, "bf16-amp"):
            y = m.self_attn(x, x, x)[0]
        self.assertTrue(torch.equal(y, y.bfloat16().float()))
        self.assertFalse(torch.equal(y, m.self_attn(x, x, x)[0]))

    def test_rnn_names_rows_and_one_cast_per_step(self):
        torch.manual_seed(0)
        m = LM("lstm", True, True)
        d = os.path.join(tmpdir(self), "run")
        run_steps(m, lm_loss, "fp16-amp", out=d, steps=1)
        t = {r["tensor"]: r for r in rows(d, "tensors.csv")}
        for n in ("rnn.weight_ih_l0", "rnn.weight_hh_l1_reverse", "rnn.ih_l0.out", "rnn.hh_l0_reverse.out",
                  "rnn.in_gate_l1.out", "rnn.c_l0.out", "rnn.h_l1_reverse.out", "rnn.weight_hh_l0.grad"):
            self.assertIn(n, t)
        # the weight is cast once per step: its statistics count its elements once
        self.assertEqual(int(t["rnn.weight_hh_l0"]["n"]), m.rnn.weight_hh_l0.numel())

    def test_lstm_projection_named_and_in_format(self):
        """proj_size: the projection is a GEMM of its own (proj_l<k>), its
        weight weight_hr_l<k> cast once per step, the hidden state it makes in
        the activation format (the next step's operand)."""
        torch.manual_seed(0)
        m = LM("lstm", True, True, proj_size=4)
        d = os.path.join(tmpdir(self), "run")
        run_steps(m, lm_loss, "fp16-amp", out=d, steps=1)
        t = {r["tensor"]: r for r in rows(d, "tensors.csv")}
        for n in ("rnn.weight_hr_l0", "rnn.weight_hr_l1_reverse", "rnn.proj_l0.out", "rnn.proj_l1_reverse.out",
                  "rnn.weight_hr_l0.grad"):
            self.assertIn(n, t)
        self.assertEqual(int(t["rnn.weight_hr_l1"]["n"]), m.rnn.weight_hr_l1.numel())
        with at.emulate(m, "fp16-amp"):
            y, (h, c) = m.rnn(m.emb(torch.randint(0, 20, (2, 4))))
        self.assertEqual(tuple(h.shape), (4, 2, 4))
        self.assertEqual(tuple(c.shape), (4, 2, 6))
        for v in (y, h):
            self.assertTrue(torch.equal(v, v.half().float()))

    def test_gru_gates_in_format(self):
        torch.manual_seed(0)
        m = LM("gru")
        idx = torch.randint(0, 20, (2, 4))
        with at.emulate(m, "fp16-amp"):
            y = m.rnn(m.emb(idx))[0]
        self.assertTrue(torch.equal(y, y.half().float()))

    def test_ops_that_need_one_dtype_raise_as_under_autocast(self):
        """index_add, scatter_add, masked_scatter, an assignment through a
        tensor index: a bf16 source into an FP32 tensor raises under CPU
        autocast, and under the emulation; converted first, both run, with
        the same bits."""
        torch.manual_seed(0)
        lin = nn.Linear(4, 4)
        x, i = torch.randn(5, 4), torch.tensor([0, 2, 2, 4, 1])
        mask = torch.tensor([True, False, True, True, False])
        calls = {"index_add": lambda d, s: d.index_add(0, i, s),
                 "scatter_add": lambda d, s: d.scatter_add(0, i.unsqueeze(1).expand(5, 4), s),
                 "masked_scatter": lambda d, s: d.masked_scatter(mask.unsqueeze(1), s),
                 "index_put": lambda d, s: d.__setitem__(mask, s[:3]) or d}
        for name, call in calls.items():
            for fix in (False, True):
                def f():
                    dst = torch.zeros(5, 4)
                    src = lin(x)                # bf16 under CPU autocast
                    return call(dst, src.to(dst.dtype) if fix else src)
                with self.subTest(op=name, converted=fix):
                    if not fix:
                        with self.assertRaises(RuntimeError), torch.autocast("cpu", dtype=torch.bfloat16):
                            f()
                        with self.assertRaisesRegex(at.EmulationError, "needs one dtype"), \
                                at.emulate(lin, "bf16-amp-cpu"):
                            f()
                        continue
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        ref = f()
                    with at.emulate(lin, "bf16-amp-cpu"):
                        got = f()
                    self.assertTrue(torch.equal(ref.float(), got))

    def test_views_of_a_parameter_as_under_cpu_autocast(self):
        """A parameter used as it is and through views (W, W.t() twice):
        CPU autocast's cast cache keeps the parameter's cast only, so each
        view is cast at its use and the gradient shares add up in FP32 on W;
        bf16-amp-cpu gives its step-0 gradients bit for bit."""
        from ampsim.torch.diagnose import diff_grads

        class ViewUses(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(6, 6)
                self.W = nn.Parameter(torch.randn(6, 6) * 0.3)
                self.b = nn.Parameter(torch.randn(6))

            def forward(self, x):
                h = self.fc(x)
                return torch.einsum("bi,ij->bj", h, self.W) + torch.addmm(self.b, h, self.W.t()) + h @ self.W.t()
        torch.manual_seed(0)
        x = torch.randn(5, 6)
        r = diff_grads(ViewUses(), lambda m: m(x).square().sum(), "bf16-amp-cpu")
        self.assertEqual(r.identical_fraction, 1.0, str(r))

    def test_bilinear_on_bf16_as_under_cpu_autocast(self):
        """F.bilinear on a bf16 input with FP32 weights: the forward runs under
        CPU autocast (its products are bf16 bmm's), with the same bits under
        bf16-amp-cpu, and the backward, outside the autocast block, meets a
        bf16 gradient and the FP32 weight in _trilinear_backward, which
        PyTorch refuses: so does the emulation's backward (PyTorch's own
        graph, the same error)."""
        torch.manual_seed(0)
        bil = nn.Bilinear(5, 5, 4)
        m = _OpNet(5, lambda h: bil(h, h))
        m.bil = bil
        x = torch.randn(3, 5)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ref = m(x)
        with self.assertRaisesRegex(RuntimeError, "expected scalar type"):
            ref.float().sum().backward()
        with at.emulate(m, "bf16-amp-cpu"):
            got = m(x)
            self.assertTrue(torch.equal(got, ref.float()))
            with self.assertRaisesRegex(RuntimeError, "expected scalar type"):
                got.sum().backward()

    def test_cpu_norms_need_the_inputs_dtype_as_under_cpu_autocast(self):
        """CPU autocast leaves layer_norm and group_norm off its lists: on a
        bf16 input their FP32 parameters make torch 1.13's kernels raise, and
        bf16-amp-cpu raises too; without parameters both run, with the same
        bits; bf16-amp (CUDA lists) runs them in FP32."""
        torch.manual_seed(0)
        x = torch.randn(3, 8)
        cases = {"layer_norm": lambda affine: nn.LayerNorm(8, elementwise_affine=affine),
                 "group_norm": lambda affine: nn.Sequential(nn.Unflatten(1, (8, 1)), nn.GroupNorm(2, 8, affine=affine))}
        for name, norm in cases.items():
            for affine in (True, False):
                m = nn.Sequential(nn.Linear(8, 8), norm(affine))
                with self.subTest(op=name, affine=affine):
                    if affine and not _dtypes.mixed_ok(name):
                        with self.assertRaises(RuntimeError), torch.autocast("cpu", dtype=torch.bfloat16):
                            m(x)
                        with self.assertRaisesRegex(at.EmulationError, "off its lists"), \
                                at.emulate(m, "bf16-amp-cpu"):
                            m(x)
                        with at.emulate(m, "bf16-amp"):
                            m(x)
                        continue
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        ref = m(x)
                    with at.emulate(m, "bf16-amp-cpu"):
                        got = m(x)
                    self.assertTrue(torch.equal(ref.float(), got))

    def test_packed_refused(self):
        m = nn.LSTM(4, 3)
        p = nn.utils.rnn.pack_padded_sequence(torch.randn(5, 2, 4), [5, 3])
        with self.assertRaisesRegex(at.EmulationError, "packed sequences"):
            with at.emulate(m, "fp16-amp"):
                m(p)

    def test_inplace_rounded(self):
        torch.manual_seed(0)
        m = Residual()
        x = torch.randn(2, 4, 5, 5)
        seen = {}
        orig = Residual.forward

        def fwd(self, x):
            out = F.hardswish(self.bn(self.conv(x)))
            seen["hs"] = out
            out += x
            seen["add"] = out.clone()
            return orig(self, x)
        with at.emulate(m, "bf16-amp-cpu"):
            Residual.forward = fwd
            try:
                m(x)
            finally:
                Residual.forward = orig
        for k in ("hs", "add"):
            self.assertTrue(torch.equal(seen[k], seen[k].bfloat16().float()), k)

    def test_autocast_fp32_pointwise(self):
        """exp, log, pow... are on autocast's CUDA FP32 list: FP32 output under
        fp16-amp, the input's format under the CPU lists (bf16-amp-cpu)."""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(6, 6)

            def forward(self, x):
                y = self.fc(x)
                return y, torch.exp(y), y.pow(2), F.softplus(y)
        torch.manual_seed(0)
        m = M()
        x = torch.randn(3, 6)
        for pol, fmt in (("fp16-amp", None), ("bf16-amp-cpu", "bf16")):
            with at.emulate(m, pol):
                outs = m(x)
            y = outs[0]
            for o, ref in zip(outs[1:], (torch.exp(y), y.pow(2), F.softplus(y))):
                self.assertEqual(getattr(o, "_ampsim_fmt", None), fmt, pol)
                want = ref if fmt is None else ref.bfloat16().float()
                self.assertTrue(torch.equal(o, want), pol)

    def test_batch_norm_in_its_input_format(self):
        """batch_norm and instance_norm are on neither autocast FP32 list:
        under the CUDA lists (fp16-amp, bf16-amp) each computes in FP32 from
        its input's values and returns that input's format, and its output
        gradient is rounded into the gradient format before its backward, as
        PyTorch's batch norm on a half or bfloat16 input with FP32 weights
        runs; layer_norm and group_norm, on the FP32 list, stay FP32."""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.bn = nn.BatchNorm2d(4)
                self.gn = nn.GroupNorm(2, 4)

            def forward(self, x):
                h = self.conv(x)
                return h, self.bn(h), F.instance_norm(h), self.gn(h), F.layer_norm(h, h.shape[-1:])
        x = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(3))
        g = torch.randn(2, 4, 4, 4, generator=torch.Generator().manual_seed(4))
        for pol, fmt, dt in (("fp16-amp", "fp16", torch.float16), ("bf16-amp", "bf16", torch.bfloat16)):
            torch.manual_seed(0)
            m = M()
            with at.emulate(m, pol):
                h, b, i, gn, ln = m(x)
                (b * g).sum().backward()
            self.assertEqual(getattr(h, "_ampsim_fmt", None), fmt, pol)
            h = h.detach()
            w = torch.ones(4, requires_grad=True)
            ref = F.batch_norm(h, None, None, w, torch.zeros(4), True, 0.1, 1e-5)
            for got, want, what in ((b, ref, "batch_norm"), (i, F.instance_norm(h), "instance_norm")):
                self.assertEqual(getattr(got, "_ampsim_fmt", None), fmt, "%s %s" % (pol, what))
                self.assertTrue(torch.equal(got, want.detach().to(dt).float()), "%s %s" % (pol, what))
            for got, want, what in ((gn, F.group_norm(h, 2, m.gn.weight, m.gn.bias), "group_norm"),
                                    (ln, F.layer_norm(h, h.shape[-1:]), "layer_norm")):
                self.assertIsNone(getattr(got, "_ampsim_fmt", None), "%s %s" % (pol, what))
                self.assertTrue(torch.equal(got, want), "%s %s" % (pol, what))
            ref.backward(g.to(dt).float())
            self.assertTrue(torch.equal(m.bn.weight.grad, w.grad), pol)

    def test_cpu_lists_against_cpu_autocast(self):
        """bf16-amp-cpu follows torch.autocast("cpu")'s own lists where they
        differ from CUDA's: each op's output format is autocast's dtype, its
        values are autocast's, and so are the gradients."""
        from ampsim.torch.diagnose import diff_grads
        for name, (shape, fn) in CPU_LIST_CASES.items():
            with self.subTest(op=name):
                torch.manual_seed(0)
                m = _OpNet(shape[-1], fn)
                x = torch.randn(*shape)
                torch.manual_seed(1)
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    ref = m(x)
                torch.manual_seed(1)
                with at.emulate(m, "bf16-amp-cpu", strict=True):
                    got = m(x)
                want = "fp32" if ref.dtype == torch.float32 else "bf16"
                self.assertEqual(getattr(got, "_ampsim_fmt", "fp32"), want)
                self.assertTrue(torch.equal(got, ref.float()))
                torch.manual_seed(2)
                r = diff_grads(m, lambda mod: mod(x).square().sum(), "bf16-amp-cpu")
                self.assertEqual(r.identical_fraction, 1.0, str(r))

    def test_dropout_that_draws_nothing_hands_back_its_input(self):
        """F.dropout with p = 0, or with training off, returns its input
        itself on the CPU (no new tensor, no rounding, no noise drawn) under
        every policy, and is counted in the coverage account."""
        torch.manual_seed(0)
        m = _OpNet(4, nn.Dropout(0.0))
        x = torch.randn(3, 4)
        calls = ((0.0, True), (0.5, False))
        for pol in ("fp16-amp", "bf16-amp", "bf16-amp-cpu", "fp8-hybrid", "fp16-pure"):
            with self.subTest(policy=pol), at.emulate(m, pol, strict=True) as emu, \
                    Counted(type(emu), "_pointwise") as elementwise:
                h = m.fc(x)
                state = torch.get_rng_state()
                for p, training in calls:
                    self.assertIs(F.dropout(h, p, training), h)
                    self.assertIs(F.dropout(h, p=p, training=training, inplace=True), h)
                self.assertIs(m.fn(h), h)
                self.assertTrue(torch.equal(torch.get_rng_state(), state))
                self.assertEqual(emu._cov.rows[F.dropout][1:3], [5, 5 * h.numel()])
                self.assertEqual(elementwise.calls, 0, pol)     # (called and counted, nothing else)

    def test_embedding_pure_policy(self):
        torch.manual_seed(0)
        m = LM("gru")
        idx = torch.randint(0, 20, (2, 4))
        with at.emulate(m, "fp16-pure"):
            e = m.emb(idx)
        self.assertTrue(torch.equal(e, m.emb.weight[idx].half().float()))
        with at.emulate(m, "fp16-amp"):
            e = m.emb(idx)
        self.assertTrue(torch.equal(e, m.emb.weight[idx]))      # autocast leaves it FP32


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCoverageAccount(unittest.TestCase):
    def test_coverage_csv(self):
        torch.manual_seed(0)
        d = os.path.join(tmpdir(self), "run")
        run_steps(LM("lstm"), lm_loss, "fp16-amp", out=d, steps=1)
        r = rows(d, "coverage.csv")
        self.assertEqual(list(r[0].keys()), ["op", "class", "emulated", "calls", "elements", "gemm_macs"])
        by = {(x["op"], x["class"]): x for x in r}
        lin = by[("linear", "gemm")]
        self.assertEqual(lin["emulated"], "yes")
        # 2 layers x (one input GEMM + 5 hidden GEMMs) + the output layer: 13 calls
        self.assertEqual(int(lin["calls"]), 13)
        # multiply-adds: input GEMMs 15x8x24 + 15x6x24, hidden 10 x 3x6x24, output 15x6x20
        self.assertEqual(int(lin["gemm_macs"]), 15 * 8 * 24 + 15 * 6 * 24 + 10 * 3 * 6 * 24 + 15 * 6 * 20)
        self.assertEqual(int(by[("sigmoid", "elementwise")]["elements"]), 2 * 5 * 3 * 3 * 6)
        self.assertFalse([x for x in r if x["class"] == "unclassified"])

    def test_convolution_macs(self):
        """A convolution's multiply-adds: each output value takes one row of
        the weight (in/groups x kernel); a transposed one, each input value."""
        class Convs(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv1d(4, 6, 3, groups=2)
                self.c2 = nn.Conv2d(6, 5, (2, 3), stride=2)
                self.t2 = nn.ConvTranspose2d(5, 4, 3, groups=1)

            def forward(self, x):
                h = self.c1(x)                          # (2, 6, 8)
                h = self.c2(h.view(2, 6, 2, 4))         # (2, 5, 1, 1)
                return self.t2(h).square().mean()       # (2, 4, 3, 3)

        torch.manual_seed(0)
        d = os.path.join(tmpdir(self), "run")
        run_steps(Convs(), lambda m, s: m(torch.randn(2, 4, 10)), "fp16-amp", out=d, steps=1)
        by = {x["op"]: int(x["gemm_macs"]) for x in rows(d, "coverage.csv") if x["class"] == "gemm"}
        self.assertEqual(by["conv1d"], 2 * 6 * 8 * (2 * 3))
        self.assertEqual(by["conv2d"], 2 * 5 * 1 * 1 * (6 * 2 * 3))
        self.assertEqual(by["conv_transpose2d"], 2 * 5 * 1 * 1 * (4 * 3 * 3))

    def test_zero_grad_is_not_the_models(self):
        """opt.zero_grad() between the forward and the backward (run_steps)
        runs with the mode off: its calls are not in coverage.csv, the
        gradients it zeroes are those of a plain run, and PyTorch's zero_grad
        is back after the block."""
        orig_opt, orig_mod = torch.optim.Optimizer.zero_grad, nn.Module.zero_grad
        d = os.path.join(tmpdir(self), "run")
        seen = []

        def make_loss(m, s):
            if s == 1:
                seen.append(torch.optim.Optimizer.zero_grad is not orig_opt)
            return lm_loss(m, s)
        torch.manual_seed(1)
        losses, params = run_steps(LM("gru"), make_loss, "fp32", out=d, steps=3)
        torch.manual_seed(1)
        plain = run_steps(LM("gru"), lm_loss, None, steps=3)
        self.assertTrue(same(losses, plain[0]) and same(params, plain[1]))
        self.assertEqual(seen, [True])
        ops = {x["op"] for x in rows(d, "coverage.csv")}
        self.assertFalse(ops & {"zero_", "requires_grad_", "detach_", "grad"}, ops)
        self.assertIs(torch.optim.Optimizer.zero_grad, orig_opt)
        self.assertIs(nn.Module.zero_grad, orig_mod)

    def test_strict(self):
        m = PrivateKernelNet()
        with at.emulate(m, "fp16-amp"):
            m(torch.rand(2, 8))                       # not strict: passes (and is listed)
        with self.assertRaisesRegex(at.EmulationError, "_upsample_bilinear2d_aa in \\(model\\): neither"):
            with at.emulate(m, "fp16-amp", strict=True):
                m(torch.rand(2, 8))
        with at.emulate(LM("gru"), "fp16-amp", strict=True) as emu:   # a classified model passes
            lm_loss(emu.model, 0).backward()


if __name__ == "__main__":
    unittest.main()
