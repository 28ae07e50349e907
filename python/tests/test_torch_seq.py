"""An MLP as one unit (_seq.py) against the op-by-op emulation of its
nn.Sequential: losses, every parameter gradient and the run directory's files
bit for bit, for Linear/GELU/ReLU/Dropout chains with and without biases, the
tanh GELU, 2-D and 3-D inputs, an FP32 input (LayerNorm) or a low-precision
one, frozen layers, a Sequential called twice, statistics every 2nd step and
every step, and torchvision's VisionTransformer (whose MLPBlock is such a
Sequential); and the unit is used where it serves, and only there."""
import os
import unittest

from support import (HAVE_TORCH, NO_TORCH, Counted, assert_same_runs, emulated_run, import_torch, read, tmpdir,
                     zoo_run)

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn

    import ampsim.torch as at
    from ampsim.torch import _seq

SERVED = ("fp16-amp", "bf16-amp", "fp8-e4m3", "fp16-pure")
OTHERS = ("fp32", "bf16-amp-cpu", "fp8-hybrid")


def _mlp(form, E):
    bias = "nobias" not in form
    act = nn.ReLU(inplace="inplace" in form) if "relu" in form else \
        nn.GELU(approximate="tanh" if "tanh" in form else "none")
    layers = [nn.Linear(E, 2 * E + 1, bias=bias), act, nn.Dropout(0.0), nn.Linear(2 * E + 1, E, bias=bias),
              nn.Dropout(0.0)]
    if "deep" in form:
        layers += [nn.GELU(), nn.Linear(E, E)]
    return nn.Sequential(*layers)


class SeqNet(nn.Module if HAVE_TORCH else object):
    """A LayerNorm (an FP32 input under autocast) or a Linear, an MLP
    Sequential in one of several forms, then a head."""

    def __init__(self, E, form):
        super().__init__()
        self.form = form
        self.pre = nn.LayerNorm(E) if "ln" in form else nn.Linear(E, E)
        self.mlp = _mlp(form, E)
        if "frozen" in form:
            self.mlp[0].requires_grad_(False)
        self.head = nn.Linear(E, 3)

    def forward(self, x):
        h = self.pre(x)
        y = self.mlp(h)
        if "twice" in self.form:
            y = self.mlp(y) + y
        return self.head(y + h).square().mean()


def train(E, shape, form, policy, unit, out, every=2, steps=4):
    torch.manual_seed(0)
    m = SeqNet(E, form)
    opt = torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.05)
    inputs = [torch.randn(*shape, E, generator=torch.Generator().manual_seed(s)) for s in range(steps)]
    return emulated_run(m, opt, policy, out, every, inputs, (_seq, unit))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestSequentialUnit(unittest.TestCase):
    def check(self, policy, form="", E=6, shape=(5,), every=2, steps=4):
        d = tmpdir(self)
        a, b = os.path.join(d, "op"), os.path.join(d, "unit")
        what = "%s %s E=%d shape=%s every %d" % (policy, form, E, shape, every)
        la, ga = train(E, shape, form, policy, False, a, every, steps)
        with Counted(_seq, "_unit") as c:
            lb, gb = train(E, shape, form, policy, True, b, every, steps)
        calls = 2 if "twice" in form else 1
        # the first call (recorded) runs op by op; the steps with statistics are served too
        self.assertEqual(c.calls, calls * steps - 1 if policy in SERVED else 0, what)
        assert_same_runs(self, la, ga, lb, gb, a, b, what)
        return b

    def test_forms(self):
        for form in ("", "relu", "inplace relu", "tanh", "nobias", "ln", "deep", "twice", "frozen",
                     "ln relu nobias"):
            self.check("fp16-amp", form)

    def test_statistics(self):
        """Statistics at every step: the unit logs each child's roundings as op by op does."""
        for form in ("", "relu", "twice", "frozen"):
            self.check("fp16-amp", form, every=1)
        self.check("bf16-amp", "ln", E=5, shape=(3, 7), every=1)

    def test_shapes(self):
        for E, shape in ((5, (3, 7)), (9, (1,)), (4, (2, 3, 4))):
            self.check("bf16-amp", "", E, shape)

    def test_policies(self):
        for policy in SERVED + OTHERS:
            self.check(policy, "ln")

    def test_names(self):
        """The unit's rows are named after the children, as op by op."""
        b = self.check("fp16-amp", "", every=3, steps=4)
        rows = read(b, "tensors.csv")
        for name in ("mlp.0.out", "mlp.1.out", "mlp.3.out", "mlp.0.weight"):
            self.assertIn(name, rows)

    def test_vit(self):
        """torchvision's VisionTransformer: its MLPBlocks served, bit for bit."""
        d = tmpdir(self)
        runs = []
        for unit in (False, True):
            out = os.path.join(d, str(unit))
            with Counted(_seq, "_unit") as c:
                runs.append(zoo_run("vit", out, 2, 3, (_seq, unit)) + (out, c.calls))
        self.assertEqual(runs[0][3], 0)
        self.assertEqual(runs[1][3], 6)         # steps 1 and 2: both blocks' MLPs and the heads (one Linear)
        assert_same_runs(self, runs[0][0], runs[0][1], runs[1][0], runs[1][1], runs[0][2], runs[1][2], "vit")

if __name__ == "__main__":
    unittest.main()
