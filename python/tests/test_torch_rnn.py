"""The fused LSTM/GRU step (ampsim/torch/_rnn_fused.py) against the op-by-op
emulation (_rnn.py): losses, every parameter gradient, tensors.csv and
coverage.csv bit for bit, under every policy, for 1-2 layers and the cells, both
directions and odd sizes; and the fused path is taken where it applies."""
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, import_torch, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _rnn_fused

POLICIES = ("fp32", "fp16-amp", "bf16-amp", "bf16-amp-cpu", "fp8-hybrid")
# policies whose steps run fused (elsewhere the op-by-op path runs)
FUSED = ("fp16-amp", "bf16-amp", "fp8-hybrid")


class CellLoop(nn.Module if HAVE_TORCH else object):
    """An nn.LSTMCell / nn.GRUCell run over the time steps (batch first)."""

    def __init__(self, cls, hidden):
        super().__init__()
        self.cell = cls(7, hidden)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        hx = (h, h) if isinstance(self.cell, nn.LSTMCell) else h
        ys = []
        for t in range(x.shape[1]):
            hx = self.cell(x[:, t], hx)
            ys.append(hx[0] if isinstance(hx, tuple) else hx)
        return torch.stack(ys, 1), hx


class LM(nn.Module if HAVE_TORCH else object):
    def __init__(self, cell, layers, bidirectional, hidden):
        super().__init__()
        self.emb = nn.Embedding(11, 7)
        if layers == 0:         # the cell
            self.rnn = CellLoop(nn.LSTMCell if cell == "lstm" else nn.GRUCell, hidden)
        else:
            cls = nn.LSTM if cell == "lstm" else nn.GRU
            self.rnn = cls(7, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        self.out = nn.Linear(hidden * (2 if bidirectional else 1), 11)

    def forward(self, idx):
        y, hn = self.rnn(self.emb(idx))
        if isinstance(hn, tuple):           # c_n too, so its gradient reaches the last step
            hn = hn[0] + hn[1]
        return self.out(y), hn


def train(cell, layers, bidir, hidden, policy, fused, out):
    """Losses and the gradients of every step, fused or op by op."""
    torch.manual_seed(0)
    m = LM(cell, layers, bidir, hidden)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    losses, grads = [], []
    prev = _rnn_fused.ENABLED
    _rnn_fused.ENABLED = fused
    try:
        with at.emulate(m, policy, out=out, log_every=1, hist_every=1) as emu:
            sc = at.GradScaler("torch") if policy.startswith("fp16") else None
            for s in range(2):
                g = torch.Generator().manual_seed(s)
                idx = torch.randint(0, 11, (3, 6), generator=g)
                z, hn = m(idx)
                loss = F.cross_entropy(z.flatten(0, 1), idx.roll(1, 1).flatten()) + 0.1 * hn.square().mean()
                opt.zero_grad()
                if sc is not None:
                    sc.scale(loss).backward()
                    grads.append([p.grad.clone() for p in m.parameters()])
                    sc.step(opt)
                    sc.update()
                else:
                    loss.backward()
                    grads.append([p.grad.clone() for p in m.parameters()])
                    opt.step()
                    emu.step(loss=loss)
                losses.append(loss.detach().clone())
    finally:
        _rnn_fused.ENABLED = prev
    return losses, grads


def read(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read()


def bits(t):
    return t.view(torch.int32)


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestFusedSteps(unittest.TestCase):
    def check(self, cell, layers, bidir, hidden, policy):
        calls = [0]
        step = getattr(_rnn_fused, cell + "_step")

        def counted(*a):
            calls[0] += 1
            return step(*a)
        d = tmpdir(self)
        a, b = os.path.join(d, "op"), os.path.join(d, "fused")
        la, ga = train(cell, layers, bidir, hidden, policy, False, a)
        setattr(_rnn_fused, cell + "_step", counted)
        try:
            lb, gb = train(cell, layers, bidir, hidden, policy, True, b)
        finally:
            setattr(_rnn_fused, cell + "_step", step)
        what = "%s layers=%d bidir=%s hidden=%d %s" % (cell, layers, bidir, hidden, policy)
        self.assertEqual(calls[0] > 0, policy in FUSED, what)
        for x, y in zip(la, lb):
            self.assertTrue(torch.equal(bits(x), bits(y)), "%s: loss %r %r" % (what, x, y))
        for s, (x, y) in enumerate(zip(ga, gb)):
            for i, (p, q) in enumerate(zip(x, y)):
                self.assertTrue(torch.equal(bits(p), bits(q)),
                                "%s: step %d parameter %d gradient differs" % (what, s, i))
        for f in ("tensors.csv", "coverage.csv", "hist.csv", "events.jsonl"):
            if os.path.exists(os.path.join(a, f)):
                self.assertEqual(read(a, f), read(b, f), "%s: %s differs" % (what, f))
        sfx = "_l0" if layers else ""
        self.assertIn(("rnn.cell.c_tanh" if not layers else "rnn.c_tanh") + sfx + ".out.grad" if cell == "lstm"
                      else ("rnn.cell.new_gate" if not layers else "rnn.new_gate") + sfx + ".out.grad",
                      read(b, "tensors.csv"))

    def test_lstm(self):
        for policy in POLICIES:
            self.check("lstm", 2, True, 5, policy)
        self.check("lstm", 1, False, 3, "fp16-amp")
        self.check("lstm", 0, False, 3, "fp16-amp")        # nn.LSTMCell

    def test_gru(self):
        for policy in POLICIES:
            self.check("gru", 2, True, 5, policy)
        self.check("gru", 1, False, 3, "bf16-amp")
        self.check("gru", 0, False, 5, "fp8-hybrid")       # nn.GRUCell


if __name__ == "__main__":
    unittest.main()
