"""Gradient buffers on the outputs of autograd's own nodes (views, pieces
of a chunk, a decomposed module's outputs: _grad.LAZY, a tensor hook added
at the second use) against a source node per tensor: losses, every
parameter gradient, the gradients that retain_grad() and register_hook()
see, and the run directory's files bit for bit, for a tensor used once, one
used three times, a first use off the loss path (it delivers no gradient)
with one and with two later uses, the pieces of one node, watched tensors
under several policies and with statistics at every step; and no source
node is made. A tensor changed in place after its first use leaves its later
uses to autograd in both ways, whose FP32 sums then fall in other places:
the same forward, gradients that differ in the last bits."""
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, assert_same_runs, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn

    import ampsim.torch as at
    from ampsim.torch import _grad


class ViewNet(nn.Module if HAVE_TORCH else object):
    """Linears around views of their low-precision outputs, used as the
    case says (CASES)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 12)
        self.fc2 = nn.Linear(12, 12)
        self.fc3 = nn.Linear(12, 4)
        self.case, self.seen = None, []

    def forward(self, x):
        v = self.fc1(x).view(-1, 3, 4)
        t = v.transpose(1, 2)
        case = self.case
        if case == "once":
            h = t.reshape(-1, 12)
        elif case == "many":
            h = (t * 2.0 + t.sin() - t).reshape(-1, 12)
        elif case in ("off_path_one", "off_path_two"):
            aux = t * 3.0                       # (the first use: not on the loss's path)
            self.seen.append(aux.detach())
            h = t.cos() if case == "off_path_one" else t.cos() * t
            h = h.reshape(-1, 12)
        elif case == "pieces":
            a, b = self.fc2(t.reshape(-1, 12)).chunk(2, -1)
            h = torch.cat([a * b, b.tanh() + a - b], -1)
        elif case == "watched":
            t.retain_grad()
            t.register_hook(lambda g: self.seen.append(g.clone()))
            w = v.reshape(-1, 12)
            w.register_hook(lambda g: self.seen.append(g.clone()))
            h = (t * t.sigmoid()).reshape(-1, 12) + w
            self.watched = t
        else:                                   # in_place: changed after its first use
            h = t.exp()
            t.mul_(0.5)
            h = (h + t + t.sin()).reshape(-1, 12)
        return self.fc3(h).square().mean()


CASES = ("once", "many", "off_path_one", "off_path_two", "pieces", "watched")


def train(case, policy, lazy, out, every=3, steps=4):
    """Losses, gradients (and the watched ones) of a few steps."""
    torch.manual_seed(0)
    m = ViewNet()
    m.case = case
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    prev = _grad.LAZY
    _grad.LAZY = lazy
    losses, grads = [], []
    try:
        with at.emulate(m, policy, out=out, log_every=every, hist_every=every, strict=True) as emu:
            if "-pure" in policy:
                opt = emu.optimizer(opt)
            sc = at.GradScaler("torch" if "fp16" in policy else "none")
            for s in range(steps):
                m.seen = []
                opt.zero_grad(set_to_none=True)
                x = torch.randn(6, 8, generator=torch.Generator().manual_seed(s))
                loss = m(x)
                sc.scale(loss).backward()
                losses.append(loss.detach().clone())
                gs = [p.grad.clone() if p.grad is not None else torch.zeros(1) for p in m.parameters()] + m.seen
                if case == "watched":
                    gs.append(m.watched.grad.clone())
                grads.append(gs)
                sc.step(opt)
                sc.update()
    finally:
        _grad.LAZY = prev
    return losses, grads


class SourceNodes:
    """Counts the source nodes made while in use (not the use nodes, whose
    class shares the source's forward)."""

    def __enter__(self):
        self.calls = 0
        self.orig = _grad._SourceFn.__dict__["forward"]
        fwd = self.orig.__func__

        def forward(ctx, *args):
            if type(ctx) is _grad._SourceFn._backward_cls:
                self.calls += 1
            return fwd(ctx, *args)
        _grad._SourceFn.forward = staticmethod(forward)
        return self

    def __exit__(self, *exc):
        _grad._SourceFn.forward = self.orig


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestLazySources(unittest.TestCase):
    def check(self, case, policy, every=3):
        d = tmpdir(self)
        a, b = os.path.join(d, "node"), os.path.join(d, "lazy")
        what = "%s %s every %d" % (case, policy, every)
        with SourceNodes() as nodes:
            la, ga = train(case, policy, False, a, every)
        with SourceNodes() as lazy:
            lb, gb = train(case, policy, True, b, every)
        self.assertGreater(nodes.calls, 0, what)
        self.assertEqual(lazy.calls, 0, what)
        self.assertEqual([len(g) for g in ga], [len(g) for g in gb], what)
        assert_same_runs(self, la, ga, lb, gb, a, b, what)

    def test_cases(self):
        for case in CASES:
            self.check(case, "fp16-amp")
            self.check(case, "fp16-amp", every=1)

    def test_policies(self):
        for policy in ("bf16-amp-cpu", "bf16-pure", "fp8-hybrid"):
            for case in ("many", "off_path_one", "off_path_two", "pieces", "watched"):
                self.check(case, policy)

    def test_in_place_after_a_use(self):
        d = tmpdir(self)
        la, ga = train("in_place", "fp16-amp", False, os.path.join(d, "node"), steps=1)
        lb, gb = train("in_place", "fp16-amp", True, os.path.join(d, "lazy"), steps=1)
        self.assertTrue(torch.equal(la[0].view(torch.int32), lb[0].view(torch.int32)))
        for p, q in zip(ga[0], gb[0]):
            self.assertTrue(torch.allclose(p, q, rtol=1e-2, atol=1e-3 * float(p.abs().max())))

    def test_hook_only_when_summed(self):
        """A tensor used once gets no hook; one used twice gets one."""
        torch.manual_seed(0)
        x = torch.randn(2, 4)
        lin = nn.Linear(4, 6)
        with at.emulate(lin, "fp16-amp"):
            h = lin(x).view(3, 4)
            self.assertIsNone(h._backward_hooks)
            (h.sin() * 2).sum().backward()
            self.assertIsNone(h._backward_hooks)
            h = lin(x).view(3, 4)
            (h.sin() + h.cos()).sum().backward()
            self.assertIsNotNone(h._backward_hooks)


if __name__ == "__main__":
    unittest.main()
