"""Self-attention as one unit (_attn.py) against the op-by-op emulation of
F.multi_head_attention_forward (_mha.py): losses, every parameter gradient
and the run directory's files bit for bit, for masks of each kind, key
padding, dropout, returned attention weights (averaged or per head), both
layouts, odd sizes, a query that is a low-precision tensor or an FP32 one,
a module called twice in one forward, a module in eval mode,
nn.TransformerEncoder and torchvision's VisionTransformer; and the unit is
used where it serves, and only there, through the module's forward."""
import os
import unittest

from support import (HAVE_TORCH, NO_TORCH, Counted, assert_same_runs, emulated_run, import_torch, read, tmpdir,
                     zoo_run)

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _attn, _mha

SERVED = ("fp16-amp", "bf16-amp", "fp8-e4m3")
OTHERS = ("fp32", "bf16-amp-cpu", "fp8-hybrid", "fp16-pure")


class AttnNet(nn.Module if HAVE_TORCH else object):
    """A Linear (or a LayerNorm: an FP32 query under autocast), then
    nn.MultiheadAttention in one of several forms, then a head."""

    def __init__(self, E, H, batch_first, form):
        super().__init__()
        self.form, self.bf = form, batch_first
        self.pre = nn.LayerNorm(E) if "ln" in form else nn.Linear(E, E)
        self.attn = nn.MultiheadAttention(E, H, dropout=0.3 if "drop" in form else 0.0, batch_first=batch_first,
                                          bias="nobias" not in form)
        self.head = nn.Linear(E, 3)
        if "eval" in form:
            self.attn.eval()

    def forward(self, x):
        B, T = (x.shape[0], x.shape[1]) if self.bf else (x.shape[1], x.shape[0])
        h = self.pre(x)
        kw = {"need_weights": "weights" in self.form, "average_attn_weights": "perhead" not in self.form}
        if "causal" in self.form:
            kw["attn_mask"] = torch.triu(torch.full((T, T), float("-inf")), 1)
        if "bool" in self.form:
            kw["attn_mask"] = torch.ones(T, T, dtype=torch.bool).triu(1)
        if "kpm" in self.form:
            kpm = torch.zeros(B, T, dtype=torch.bool)
            kpm[0, -2:] = True
            kw["key_padding_mask"] = kpm
        a, w = self.attn(h, h, h, **kw)
        if "twice" in self.form:
            a = a + self.attn(a, a, a, need_weights=False)[0]
        y = self.head(a + h).mean()
        if w is not None:
            y = y + 0.5 * w.square().sum()
        return y


def train(E, H, T, B, bf, form, policy, fused, out, every=2):
    """Losses and the gradients of 4 steps (statistics every 2nd step, or every step)."""
    torch.manual_seed(0)
    m = AttnNet(E, H, bf, form)
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    inputs = [torch.randn((B, T, E) if bf else (T, B, E), generator=torch.Generator().manual_seed(s))
              for s in range(4)]
    return emulated_run(m, opt, policy, out, every, inputs, (_attn, fused))


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestAttentionUnit(unittest.TestCase):
    def check(self, policy, form="", E=12, H=3, T=5, B=2, bf=True, every=2):
        d = tmpdir(self)
        a, b = os.path.join(d, "op"), os.path.join(d, "unit")
        what = "%s E=%d H=%d T=%d B=%d batch_first=%s %s every %d" % (policy, E, H, T, B, bf, form, every)
        la, ga = train(E, H, T, B, bf, form, policy, False, a, every)
        with Counted(_attn, "run") as c, Counted(_mha, "run") as f, Counted(_mha, "_module_unit") as u:
            lb, gb = train(E, H, T, B, bf, form, policy, True, b, every)
        # the first call runs op by op; steps with statistics run op by op
        # where the masks are bool or padding or the weights are returned
        logged = not any(f in form for f in ("bool", "kpm", "weights"))
        n = 2 if "twice" in form else 1
        calls = 4 * n - 1 if logged else (0 if every == 1 else 2 * n)
        self.assertEqual(c.calls, calls if policy in SERVED else 0, what)
        # a call the unit serves after the first of its kind skips the module
        # forward's dispatch (_mha.module_run); the others go through it
        self.assertEqual(f.calls + u.calls, 4 * n, what)
        self.assertTrue(0 < u.calls <= c.calls if c.calls else u.calls == 0, what)
        assert_same_runs(self, la, ga, lb, gb, a, b, what)
        self.assertIn("attn.matmul2.out", read(b, "tensors.csv"), what)

    def test_forms(self):
        for form in ("", "causal", "bool", "kpm", "causal kpm", "bool kpm", "drop", "weights", "weights perhead drop",
                     "ln", "twice", "nobias", "ln causal drop weights", "eval", "eval drop kpm"):
            self.check("fp16-amp", form)

    def test_statistics(self):
        """Statistics at every step: the unit logs softmax and dropout as op by op does."""
        for form in ("", "causal drop", "ln causal", "bool", "kpm drop", "weights", "twice drop"):
            self.check("fp16-amp", form, every=1)
        self.check("bf16-amp", "causal drop", E=16, H=2, T=9, B=1, bf=False, every=1)

    def test_computed_weight(self):
        """A projection weight computed by the model (not a parameter) runs op
        by op, and its gradient reaches the parameter it came from."""
        grads = []
        for fused in (False, True):
            torch.manual_seed(0)
            m = nn.MultiheadAttention(8, 2)
            scale = nn.Parameter(torch.tensor(1.5))
            prev, _attn.ENABLED = _attn.ENABLED, fused
            try:
                with at.emulate(m, "fp16-amp", log_every=0), Counted(_attn, "run") as c:
                    for s in range(2):
                        x = torch.randn(4, 3, 8, generator=torch.Generator().manual_seed(s))
                        out, _ = F.multi_head_attention_forward(
                            x, x, x, 8, 2, m.in_proj_weight * scale, m.in_proj_bias, None, None, False, 0.0,
                            m.out_proj.weight, m.out_proj.bias, need_weights=False)
                        out.square().sum().backward()
            finally:
                _attn.ENABLED = prev
            self.assertEqual(c.calls, 0)
            grads.append((scale.grad.clone(), m.in_proj_bias.grad.clone()))
        self.assertIsNotNone(grads[0][0])
        for a, b in zip(*grads):
            self.assertTrue(torch.equal(a, b))

    def test_policies(self):
        for policy in SERVED + OTHERS:
            self.check(policy, "causal drop")

    def test_shapes(self):
        self.check("bf16-amp", "causal", E=8, H=1, T=1, B=1)
        self.check("fp16-amp", "kpm", E=20, H=4, T=7, B=3, bf=False)
        self.check("bf16-amp", "ln drop", E=16, H=2, T=9, B=1, bf=False)

    def test_zoo(self):
        """nn.TransformerEncoder (dropout, a causal mask) and the ViT, a few
        steps each, both ways."""
        for name in ("transformer_encoder", "vit"):
            d = tmpdir(self)
            (la, ga), (lb, gb) = [zoo_run(name, os.path.join(d, str(fused)), 3, 4, (_attn, fused))
                                  for fused in (False, True)]
            assert_same_runs(self, la, ga, lb, gb, os.path.join(d, "False"), os.path.join(d, "True"), name)

    def test_module_forward(self):
        """While an emulation is active nn.MultiheadAttention.forward asks it
        first; a module outside the model runs untouched, and PyTorch's own
        forward is back after the block."""
        orig = nn.MultiheadAttention.forward
        torch.manual_seed(0)
        m, other = AttnNet(8, 2, True, ""), nn.MultiheadAttention(8, 2, batch_first=True)
        x = torch.randn(2, 3, 8)
        plain = other(x, x, x)[0]
        with at.emulate(m, "fp16-amp", log_every=0), Counted(_mha, "_module_unit") as u:
            self.assertIsNot(nn.MultiheadAttention.forward, orig)
            for _ in range(3):
                m(x).backward()
                self.assertTrue(torch.equal(other(x, x, x)[0], plain))
        self.assertEqual(u.calls, 2)
        self.assertIs(nn.MultiheadAttention.forward, orig)


if __name__ == "__main__":
    unittest.main()
