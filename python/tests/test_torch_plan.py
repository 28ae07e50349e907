"""A GEMM site's kept setup (_plan.py) against a setup at every call: losses,
every parameter gradient and the run directory's files bit for bit, over
sites whose calls change form between steps (a bias on some steps only, a
convolution's stride, one of two weights, a parameter as the activation
operand, a view of a parameter), the attention and MLP units, and several
policies; and a site of one form is set up once."""
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, Counted, assert_same_runs, emulated_run, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _emulate, _plan


class FormNet(nn.Module if HAVE_TORCH else object):
    """GEMM sites whose calls change form with the step (forward counts the
    steps), beside an attention and an MLP Sequential."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, 3, padding=1)
        self.fc = nn.Linear(12, 8)
        self.wa = nn.Parameter(torch.randn(8, 8) * 0.3)
        self.wb = nn.Parameter(torch.randn(8, 8) * 0.3)
        self.bias = nn.Parameter(torch.randn(8) * 0.1)
        self.pin = nn.Parameter(torch.randn(3, 8) * 0.3)
        self.attn = nn.MultiheadAttention(8, 2)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.step = 0

    def forward(self, x):
        s = self.step
        self.step += 1
        h = F.conv1d(x, self.conv.weight, self.conv.bias, 1 + s % 2, 1).flatten(1)[:, :12]
        h = torch.tanh(self.fc(h))
        h = F.linear(h, self.wa if s % 3 else self.wb, self.bias if s % 2 else None)
        if s % 4 == 1:
            h = h + F.linear(self.pin, h) @ h      # (a parameter as the activation operand)
        else:
            h = h + F.linear(h, self.wa.t())                   # (a view of a parameter as the weight)
        u = h.unsqueeze(1)
        a, _ = self.attn(u, u, u, need_weights=False)
        h = self.mlp(h + a.squeeze(1))
        return h.square().mean()


def run(policy, plans, out, steps=8, every=4):
    torch.manual_seed(0)
    m = FormNet()
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(3)
    inputs = [torch.randn(3, 2, 6, generator=g) for _ in range(steps)]
    return emulated_run(m, opt, policy, out, every, inputs, switch=(_plan, plans))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestGemmPlan(unittest.TestCase):
    def test_same_runs(self):
        for policy in ("fp16-amp", "bf16-amp-cpu", "fp8-hybrid", "bf16-pure"):
            d = tmpdir(self)
            a, b = os.path.join(d, "each"), os.path.join(d, "plan")
            la, ga = run(policy, False, a)
            lb, gb = run(policy, True, b)
            assert_same_runs(self, la, ga, lb, gb, a, b, policy)

    def test_set_up_once(self):
        """A site of one form is set up at its first call only: over 8 steps,
        the Linear, the MLP and the attention's GEMMs take their plan; the sites
        that change form are set up again."""
        counts = []
        for plans in (False, True):
            with Counted(_emulate.emulate, "_gemm_setup_new") as c:
                run("fp16-amp", plans, os.path.join(tmpdir(self), "r"), every=0)
            counts.append(c.calls)
        per_step = counts[0] // 8
        self.assertGreaterEqual(per_step, 9)
        # fc, mlp.0, mlp.2, in_proj, out_proj and the two attention products: once each
        self.assertLessEqual(counts[1], counts[0] - 7 * 7)

    def test_switch(self):
        """emulate under ENABLED False keeps no plan."""
        d = tmpdir(self)
        _plan.ENABLED = False
        try:
            torch.manual_seed(0)
            m = FormNet()
            with at.emulate(m, "fp16-amp", out=os.path.join(d, "r")) as emu:
                m(torch.randn(3, 2, 6)).backward()
                self.assertEqual(emu._gemm_plans, {})
        finally:
            _plan.ENABLED = True


if __name__ == "__main__":
    unittest.main()
