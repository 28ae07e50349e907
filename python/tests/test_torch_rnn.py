"""The fused LSTM/GRU paths against the op-by-op emulation (_rnn.py): the
layer as one Function with the C kernels (_rnn_layer.py) and the fused step
(_rnn_fused.py). Losses, every parameter gradient, tensors.csv and
coverage.csv bit for bit, under every policy, for 1-2 layers and the cells,
both directions, batch_first or not, odd sizes, a module called twice in one
forward, a model that reads h_n only; and each path is taken where it applies."""
import os
import unittest

from support import HAVE_TORCH, NO_TORCH, Counted, assert_same_runs, import_torch, read, tmpdir

if HAVE_TORCH:
    torch = import_torch()
    import torch.nn as nn
    import torch.nn.functional as F

    import ampsim.torch as at
    from ampsim.torch import _emulate, _grad, _rnn_fused, _rnn_layer

POLICIES = ("fp32", "fp16-amp", "bf16-amp", "bf16-amp-cpu", "fp8-hybrid", "fp16-pure", "bf16-pure")
# policies whose steps run fused (elsewhere the op-by-op path runs)
FUSED = ("fp16-amp", "bf16-amp", "fp8-hybrid", "fp16-pure", "bf16-pure")
# policies whose nn.LSTM / nn.GRU layers run as one Function (fp8-hybrid:
# FP8 GEMM operands; its steps run fused one by one)
LAYER = ("fp16-amp", "bf16-amp", "fp16-pure", "bf16-pure")


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
    """form: "" (output and h_n + c_n used), "twice" (the module called on
    two inputs in one forward), "hn" (h_n alone), "time" (batch_first=False),
    "big" (hidden weights that overflow the hidden GEMM: non-finite values
    forward and backward), "hx" (a learned initial state, so h0 and c0 get
    gradients), "eval" (a second forward, without gradients, in each step),
    "nobias" (bias=False), "drop" (dropout between the layers)."""

    def __init__(self, cell, layers, bidirectional, hidden, form=""):
        super().__init__()
        self.emb = nn.Embedding(11, 7)
        self.form = form
        if layers == 0:         # the cell
            self.rnn = CellLoop(nn.LSTMCell if cell == "lstm" else nn.GRUCell, hidden)
        else:
            cls = nn.LSTM if cell == "lstm" else nn.GRU
            self.rnn = cls(7, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=form != "time",
                           bias=form != "nobias", dropout=0.3 if form == "drop" else 0.0)
        self.out = nn.Linear(hidden * (2 if bidirectional and form != "hn" else 1), 11)
        if form == "big":
            with torch.no_grad():
                self.rnn.weight_hh_l0.mul_(2e4)
        if form == "hx":
            self.h0 = nn.Parameter(torch.randn(layers * (2 if bidirectional else 1), 1, hidden))

    def forward(self, idx):
        x = self.emb(idx)
        if self.form == "time":
            y, hn = self.rnn(x.transpose(0, 1))
            y = y.transpose(0, 1)
        elif self.form == "hx":
            h0 = self.h0.expand(-1, idx.shape[0], -1).contiguous()
            y, hn = self.rnn(x, (h0, 0.5 * h0) if isinstance(self.rnn, nn.LSTM) else h0)
        else:
            y, hn = self.rnn(x)
        if self.form == "twice":
            y2, _ = self.rnn(x.flip(1))
            y = y + y2
        if isinstance(hn, tuple):           # c_n too, so its gradient reaches the last step
            hn = hn[0] + hn[1]
        if self.form == "hn":
            return self.out(hn[-1]).unsqueeze(1).expand(-1, idx.shape[1], -1), hn
        return self.out(y), hn


def train(cell, layers, bidir, hidden, policy, path, out, form=""):
    """Losses and the gradients of every step; path "op" (op by op), "step"
    (fused steps) or "layer" (the default: layers as one Function where
    they may, else fused steps)."""
    torch.manual_seed(0)
    m = LM(cell, layers, bidir, hidden, form)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    losses, grads = [], []
    prev = _rnn_fused.ENABLED, _rnn_layer.ENABLED
    _rnn_fused.ENABLED, _rnn_layer.ENABLED = path != "op", path == "layer"
    try:
        with at.emulate(m, policy, out=out, log_every=1, hist_every=1) as emu:
            if policy.endswith("-pure"):
                opt = emu.optimizer(opt)
            sc = at.GradScaler("torch") if policy.startswith("fp16") else None
            for s in range(2):
                g = torch.Generator().manual_seed(s)
                idx = torch.randint(0, 11, (3, 6), generator=g)
                z, hn = m(idx)
                loss = F.cross_entropy(z.flatten(0, 1), idx.roll(1, 1).flatten()) + 0.1 * hn.square().mean()
                opt.zero_grad()
                if form == "eval":      # (after the training forward: the step's weight casts require grad)
                    with torch.no_grad():
                        m(idx.flip(0))
                if sc is not None:
                    sc.scale(loss).backward()
                    grads.append([p.grad.clone() for p in m.parameters()])
                    sc.step(opt)
                    sc.update()
                else:
                    loss.backward()
                    grads.append([p.grad.clone() for p in m.parameters()])
                    opt.step()
                    if not policy.endswith("-pure"):        # (the wrapped optimizer ends the step)
                        emu.step(loss=loss)
                losses.append(loss.detach().clone())
    finally:
        _rnn_fused.ENABLED, _rnn_layer.ENABLED = prev
    return losses, grads


@unittest.skipUnless(HAVE_TORCH, NO_TORCH)
class TestFusedSteps(unittest.TestCase):
    def check(self, cell, layers, bidir, hidden, policy, path="layer", form=""):
        d = tmpdir(self)
        a, b = os.path.join(d, "op"), os.path.join(d, path)
        la, ga = train(cell, layers, bidir, hidden, policy, "op", a, form)
        with Counted(_rnn_fused, cell + "_step") as steps, Counted(_rnn_layer, "layer") as lay:
            lb, gb = train(cell, layers, bidir, hidden, policy, path, b, form)
        what = "%s layers=%d bidir=%s hidden=%d %s %s %s" % (cell, layers, bidir, hidden, policy, path, form)
        whole = path == "layer" and layers > 0 and policy in LAYER
        self.assertEqual(lay.calls > 0, whole, what)
        self.assertEqual(steps.calls > 0, policy in FUSED and not whole, what)
        assert_same_runs(self, la, ga, lb, gb, a, b, what)
        sfx = "_l0" if layers else ""
        self.assertIn(("rnn.cell.c_tanh" if not layers else "rnn.c_tanh") + sfx + ".out.grad" if cell == "lstm"
                      else ("rnn.cell.new_gate" if not layers else "rnn.new_gate") + sfx + ".out.grad",
                      read(b, "tensors.csv"))

    def test_lstm(self):
        for policy in POLICIES:
            self.check("lstm", 2, True, 5, policy)
        self.check("lstm", 2, True, 5, "fp16-amp", "step")
        self.check("lstm", 1, False, 3, "fp16-amp")
        self.check("lstm", 1, False, 32, "bf16-amp", form="time")
        self.check("lstm", 2, False, 4, "fp16-amp", form="twice")
        self.check("lstm", 1, True, 6, "bf16-amp", form="hn")
        self.check("lstm", 1, False, 8, "fp16-amp", form="big")
        self.check("lstm", 2, True, 4, "fp16-amp", form="hx")
        self.check("lstm", 1, False, 4, "bf16-amp", form="eval")
        self.check("lstm", 2, True, 6, "fp16-amp", form="nobias")
        self.check("lstm", 3, False, 5, "bf16-amp", form="drop")
        self.check("lstm", 0, False, 3, "fp16-amp")        # nn.LSTMCell

    def test_gru(self):
        for policy in POLICIES:
            self.check("gru", 2, True, 5, policy)
        self.check("gru", 2, True, 5, "bf16-amp", "step")
        self.check("gru", 1, False, 3, "bf16-amp")
        self.check("gru", 2, True, 16, "fp16-amp", form="time")
        self.check("gru", 1, False, 4, "bf16-amp", form="twice")
        self.check("gru", 2, False, 6, "fp16-amp", form="hn")
        self.check("gru", 2, False, 8, "fp16-amp", form="big")
        self.check("gru", 2, True, 4, "bf16-amp", form="hx")
        self.check("gru", 1, False, 4, "fp16-amp", form="eval")
        self.check("gru", 2, True, 6, "bf16-amp", form="nobias")
        self.check("gru", 3, False, 5, "fp16-amp", form="drop")
        self.check("gru", 0, False, 5, "fp8-hybrid")       # nn.GRUCell

    def test_weight_buffer(self):
        """The layer Function under a weight cache that hands each later use of
        a copy out through a use node (its buffer then sums the steps' shares in
        format): the same bits as op by op too."""
        orig = _emulate.emulate._cast_weight

        def cast(emu, p, site, is_bias):
            hit = emu._casts.get((id(p), emu.policy.bias if is_bias else emu.policy.weight))
            if hit is not None and hit[0] == p._version:
                return _grad.use(hit[1])
            return orig(emu, p, site, is_bias)
        _emulate.emulate._cast_weight = cast
        try:
            self.check("lstm", 2, True, 5, "fp16-amp")
            self.check("gru", 1, False, 4, "bf16-amp", form="twice")
        finally:
            _emulate.emulate._cast_weight = orig


if __name__ == "__main__":
    unittest.main()
