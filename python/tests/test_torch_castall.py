"""A step's weight casts in one node (_castall.py) against one node per cast:
losses, every parameter gradient (and which stay None) and the run
directory's files bit for bit, for a weight shared by two GEMMs, a frozen
weight, a parameter the model uses on some steps only, two micro-batches
per step, a weight changed in place between them, a non-finite weight,
stochastic rounding and several policies; and the batch runs on the steps
without statistics, and only there."""
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, Counted, assert_same_runs, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _castall


class CastNet(nn.Module if HAVE_TORCH else object):
    """Linears, a weight shared by two GEMMs, a frozen Linear, a branch used
    on even steps only, a convolution and an embedding (whose output takes
    the format of its weight's copy under the pure policies)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3, padding=1)
        self.fc1 = nn.Linear(12, 10)
        self.shared = nn.Parameter(torch.randn(10, 10) * 0.3)
        self.frozen = nn.Linear(10, 10)
        self.frozen.requires_grad_(False)
        self.branch = nn.Linear(10, 10)
        self.head = nn.Linear(10, 4, bias=False)
        self.emb = nn.Embedding(5, 10)
        self.register_buffer("idx", torch.tensor([1, 4, 1]))
        self.step, self.change_at = 0, None

    def forward(self, x):
        h = self.conv(x).flatten(1)[:, :12]
        h = torch.tanh(self.fc1(h))
        h = F.linear(h, self.shared).relu()
        if self.step == self.change_at:
            with torch.no_grad():
                self.shared.mul_(0.5)         # (changed between its two uses: cast again)
        h = F.linear(h, self.shared)
        h = self.frozen(h) + self.emb(self.idx)
        if self.step % 2 == 0:
            h = h + self.branch(h)
        return self.head(h).square().mean()


def train(policy, batched, out, every=3, micro=1, poke=None, steps=6, change_at=None):
    """Losses, gradients and None-gradient flags of a few steps; poke(m, s, k)
    runs before micro-batch k of step s; the shared weight changes in place
    inside the forward of step change_at."""
    torch.manual_seed(0)
    m = CastNet()
    m.change_at = change_at
    opt = torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.05)
    prev = _castall.ENABLED
    _castall.ENABLED = batched
    losses, grads, nones = [], [], []
    try:
        with at.emulate(m, policy, out=out, log_every=every, hist_every=every, strict=True) as emu:
            if "-pure" in str(policy):
                opt = emu.optimizer(opt)
            sc = at.GradScaler("torch" if "fp16" in str(policy) else "none")
            for s in range(steps):
                m.step = s
                opt.zero_grad(set_to_none=True)
                for k in range(micro):
                    if poke is not None:
                        poke(m, s, k)
                    x = torch.randn(3, 2, 6, generator=torch.Generator().manual_seed(10 * s + k))
                    loss = m(x)
                    sc.scale(loss).backward()
                    losses.append(loss.detach().clone())
                ps = list(m.parameters())
                nones.append([p.grad is None for p in ps])
                grads.append([p.grad.clone() if p.grad is not None else torch.zeros(1) for p in ps])
                sc.step(opt)
                sc.update()
    finally:
        _castall.ENABLED = prev
    return losses, grads, nones


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestCastAll(unittest.TestCase):
    def check(self, policy, batches, **kw):
        d = tmpdir(self)
        a, b = os.path.join(d, "each"), os.path.join(d, "batch")
        what = "%s %s" % (policy if isinstance(policy, str) else policy["name"], kw)
        la, ga, na = train(policy, False, a, **kw)
        with Counted(_castall._CastAllFn, "apply") as c:
            lb, gb, nb = train(policy, True, b, **kw)
        self.assertEqual(c.calls, batches, what)
        self.assertEqual(na, nb, what)
        assert_same_runs(self, la, ga, lb, gb, a, b, what)
        return la, na

    def test_policies(self):
        """Steps 1, 2, 4, 5 (no statistics) cast in one node; the branch used on
        even steps only gets no gradient on odd ones."""
        for policy in ("fp16-amp", "bf16-amp", "fp8-e4m3", "bf16-amp-cpu", "fp16-pure"):
            _, nones = self.check(policy, 4)
            self.assertEqual([n[7] for n in nones], [False, True] * 3, policy)     # branch.weight

    def test_not_batched(self):
        """Statistics at every step, FP8 scaling and fp32: one node per cast."""
        self.check("fp16-amp", 0, every=1)
        self.check("fp8-hybrid", 0)
        self.check("fp32", 0)

    def test_micro_batches_and_in_place_changes(self):
        """Two micro-batches per step: the batch's copies serve both. A weight
        changed in place between two uses in a forward is cast again alone."""
        self.check("fp16-amp", 4, micro=2)
        self.check("bf16-amp", 4, change_at=4)
        self.check("fp16-amp", 4, micro=2, change_at=2)

    def test_nonfinite_weight(self):
        """A weight that overflows its format: noted at the GEMM that asks
        for it, as the single cast notes it (events.csv, summary.json)."""
        def poke(m, s, k):
            if s == 4:
                with torch.no_grad():
                    m.head.weight[0, 0] = 1e6
        self.check("fp16-amp", 4, poke=poke)

    def test_stochastic_rounding(self):
        pol = at.Policy("bf16-amp").json
        pol = dict(pol, name="bf16-amp-sr", rounding="sr")
        self.check(pol, 4)


if __name__ == "__main__":
    unittest.main()
