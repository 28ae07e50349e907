"""nn.RNN / nn.LSTM / nn.GRU and their cells, decomposed and emulated op by op.

torch.lstm / torch.gru / torch.rnn_tanh / torch.rnn_relu (what the modules
call) and the *_cell functions are recomputed here in torch ops, in the order
PyTorch's CPU kernels use (aten RNN.cpp: the input projection of a layer for
all time steps in one GEMM, then per step the hidden GEMM, the gate
nonlinearities and the state update), so that under the fp32 policy the run
is bit-identical to PyTorch. The ops run under the emulation's mode: the
GEMMs round their operands, the gates are rounded into the activation format,
the weights are cast once per step (the cast cache). Where the policy allows,
a whole LSTM or GRU layer (one direction) runs as one autograd Function over
C kernels (_rnn_layer.py), else each step's pointwise part as one
(_rnn_fused.py); both give the same bits as the ops below.

Names, under the module path, per layer and direction (sfx = ``_l0``,
``_l0_reverse``; none for a cell): ``ih<sfx>`` (input GEMM), ``hh<sfx>``
(hidden GEMM), ``gates<sfx>`` (their sum); LSTM ``in_gate``, ``forget_gate``,
``cell_gate``, ``out_gate``, ``fc``, ``ig``, ``c``, ``c_tanh``, ``h``; GRU
``reset_gate``, ``update_gate``, ``hn_r``, ``new_gate_pre``, ``new_gate``, ``h_minus_n``, ``h_z``, ``h``;
RNN ``h``; an LSTM with projections (proj_size) ``proj`` (the hidden state
times weight_hr, after ``h``); ``dropout_l<k>`` between layers, ``output``
(the stacked steps). The weights keep their parameter names
(``<m>.weight_ih_l0``, ``<m>.weight_hh_l0_reverse``, ``<m>.weight_hr_l0``).
Packed sequences are refused."""
import torch
import torch.nn.functional as F

from . import _rnn_fused, _rnn_layer
from . import _rt
from ._functions import _RoundFn
from ._rt import EmulationError
from ._scope import Frame
from ._scope import join as _join


class _Namer:
    """The label of the next op (the decomposed module's rename)."""
    __slots__ = ("label", "emu", "path")

    def __init__(self, emu=None, path=""):
        self.label, self.emu, self.path = None, emu, path

    def __call__(self, op):
        return self.label


def _lstm_step(xw, h, c, w_hh, b_hh, n, sfx, w_hr=None):
    n.label = "hh" + sfx
    hw = F.linear(h, w_hh, b_hh)
    if n.emu is not None and _rnn_fused.usable(n.emu, hw, xw, c):
        hy, cy = _rnn_fused.lstm_step(n.emu, n.path, sfx, hw, xw, c)
        return _project(hy, w_hr, n, sfx), cy
    n.label = "gates" + sfx
    g = hw + xw
    i, f, gg, o = g.unsafe_chunk(4, 1)
    n.label = "in_gate" + sfx
    i = torch.sigmoid(i)
    n.label = "forget_gate" + sfx
    f = torch.sigmoid(f)
    n.label = "cell_gate" + sfx
    gg = torch.tanh(gg)
    n.label = "out_gate" + sfx
    o = torch.sigmoid(o)
    n.label = "fc" + sfx
    fc = f * c
    n.label = "ig" + sfx
    ig = i * gg
    n.label = "c" + sfx
    cy = fc + ig
    n.label = "c_tanh" + sfx
    tc = torch.tanh(cy)
    n.label = "h" + sfx
    return _project(o * tc, w_hr, n, sfx), cy


def _project(h, w_hr, n, sfx):
    """An LSTM's hidden state through its projection (proj_size), as aten's
    matmul_hr forms it: h @ w_hr.t(), which is F.linear without a bias.
    Under CPU autocast's lists (torch_cpu policies) the weight is cast at
    every step: aten passes the view w_hr.t(), which autocast's cast cache
    (parameters themselves only) does not keep, so each step's share of the
    weight gradient is rounded alone and the shares add up in FP32. Other
    policies cast it once per step, as every other recurrent weight."""
    if w_hr is None:
        return h
    n.label = "proj" + sfx
    emu = n.emu
    if emu is not None and emu.policy.torch_cpu and not emu.policy.fp8_scaling:
        name = emu._param_names.get(id(w_hr)) or _join(_join(n.path, "proj" + sfx), "weight")
        w_hr = emu._cast_use(w_hr, name, False)
    return F.linear(h, w_hr)


def _gru_step(xw, h, w_hh, b_hh, n, sfx):
    n.label = "hh" + sfx
    hw = F.linear(h, w_hh, b_hh)
    if n.emu is not None and _rnn_fused.usable(n.emu, hw, xw, h):
        return _rnn_fused.gru_step(n.emu, n.path, sfx, hw, xw, h)
    # the sums of all three chunks at once (the third is not used): the
    # nonlinearities then run over views with PyTorch's strides, which its
    # vectorised kernels give the same bits as its in-place chunks
    n.label = "gates" + sfx
    g = hw + xw
    r, z, _ = g.unsafe_chunk(3, 1)
    i_n = xw.unsafe_chunk(3, 1)[2]
    h_n = hw.unsafe_chunk(3, 1)[2]
    n.label = "reset_gate" + sfx
    r = torch.sigmoid(r)
    n.label = "update_gate" + sfx
    z = torch.sigmoid(z)
    n.label = "hn_r" + sfx
    hn = h_n * r
    n.label = "new_gate_pre" + sfx
    nn_ = i_n + hn
    n.label = "new_gate" + sfx
    nn_ = torch.tanh(nn_)
    n.label = "h_minus_n" + sfx
    d = h - nn_
    n.label = "h_z" + sfx
    d = d * z
    n.label = "h" + sfx
    return d + nn_


def _simple_step(xw, h, w_hh, b_hh, n, sfx, relu):
    n.label = "hh" + sfx
    hw = F.linear(h, w_hh, b_hh)
    n.label = "gates" + sfx
    g = hw + xw
    n.label = "h" + sfx
    return torch.relu(g) if relu else torch.tanh(g)


def _step(kind, xw, hid, w_hh, b_hh, n, sfx, w_hr=None):
    if kind == "lstm":
        return _lstm_step(xw, hid[0], hid[1], w_hh, b_hh, n, sfx, w_hr)
    if kind == "gru":
        return _gru_step(xw, hid, w_hh, b_hh, n, sfx)
    return _simple_step(xw, hid, w_hh, b_hh, n, sfx, kind == "rnn_relu")


def _layer(kind, x, hid, w, n, sfx, reverse):
    """One layer in one direction over x (T, B, I): (output (T, B, H), final hidden)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    n.label = "ih" + sfx
    xw = F.linear(x, w_ih, b_ih)
    # (a projected LSTM runs step by step: the layer kernel has no projection)
    if n.emu is not None and w_hr is None and _rnn_layer.applies(n.emu, kind, xw, hid, w_hh, b_hh):
        outs, hid = _rnn_layer.layer(n.emu, kind, xw, hid, w, n.path, sfx, reverse)
        n.label = "output" + sfx
        return torch.stack(outs, 0), hid
    xw = xw.unbind(0)
    steps = len(xw)
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        hid = _step(kind, xw[t], hid, w_hh, b_hh, n, sfx, w_hr)
        outs[t] = hid[0] if kind == "lstm" else hid
    n.label = "output" + sfx
    return torch.stack(outs, 0), hid


def full(kind, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, n=None):
    """torch.<kind>(x, hx, params, ...) (kind lstm, gru, rnn_tanh, rnn_relu) in torch ops."""
    n = n or _Namer()
    dirs = 2 if bidirectional else 1
    # an LSTM with projections (proj_size): its hidden state is narrower than
    # its cell state, and each layer and direction has a fifth (or, without
    # biases, third) weight, weight_hr, last (aten tells them apart so)
    proj = kind == "lstm" and hx[0].size(-1) != hx[1].size(-1)
    per = (4 if has_biases else 2) + proj
    if len(params) != num_layers * dirs * per:
        raise EmulationError("ampsim.torch: %s: %d weights for %d layers and %d directions (expected %d each)"
                             % (kind, len(params), num_layers, dirs, per))
    if batch_first:
        x = x.transpose(0, 1)
    # unbind (a torch function: the views keep the state's format)
    if kind == "lstm":
        h0, c0 = hx[0].unbind(0), hx[1].unbind(0)
    else:
        hx = hx.unbind(0)
    finals_h, finals_c = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            j = (layer * dirs + d) * per
            w = (params[j], params[j + 1], params[j + 2] if has_biases else None,
                 params[j + 3] if has_biases else None, params[j + per - 1] if proj else None)
            k = layer * dirs + d
            hid = (h0[k], c0[k]) if kind == "lstm" else hx[k]
            sfx = "_l%d%s" % (layer, "_reverse" if d else "")
            out, hid = _layer(kind, x, hid, w, n, sfx, d == 1)
            outs.append(out)
            if kind == "lstm":
                finals_h.append(hid[0])
                finals_c.append(hid[1])
            else:
                finals_h.append(hid)
        n.label = "output_l%d" % layer
        x = outs[0] if dirs == 1 else torch.cat(outs, outs[0].dim() - 1)
        if dropout != 0 and train and layer < num_layers - 1:
            n.label = "dropout_l%d" % layer
            x = F.dropout(x, dropout, training=True)
    if batch_first:
        x = x.transpose(0, 1)
    n.label = "h_n"
    hn = torch.stack(finals_h, 0)
    if kind == "lstm":
        n.label = "c_n"
        return x, hn, torch.stack(finals_c, 0)
    return x, hn


def cell(kind, x, hx, w_ih, w_hh, b_ih=None, b_hh=None, n=None):
    """torch.<kind>_cell(x, hx, w_ih, w_hh, b_ih, b_hh) in torch ops."""
    n = n or _Namer()
    n.label = "ih"
    xw = F.linear(x, w_ih, b_ih)
    return _step(kind, xw, tuple(hx) if kind == "lstm" else hx, w_hh, b_hh, n, "")


def _state_in_format(emu, hx, path):
    pol = emu.policy
    if pol.act == "fp32" or hx is None:
        return hx
    if isinstance(hx, (tuple, list)):
        return type(hx)(_state_in_format(emu, h, path) for h in hx)
    if not isinstance(hx, torch.Tensor) or _rt.fmt_of(hx) == pol.act:
        return hx
    site = (path + "." if path else "") + "h0"
    emu._tid(site + ".out")
    emu._tid(site + ".out.grad")
    y = _RoundFn.apply(hx, emu, site + ".out", pol.act, pol.act_grad)
    setattr(y, _rt.FMT_ATTR, pol.act)
    return y


def run(emu, mode, func, name, kind, args, kwargs):
    """A torch.lstm/gru/rnn_* call (kind "rnn") or a *_cell call, emulated."""
    where = emu._where()
    if kind == "rnn":
        base = name
        if kwargs or len(args) != 9:
            raise EmulationError("ampsim.torch: %s in %s: unexpected arguments" % (name, where))
        packed = isinstance(args[1], torch.Tensor) if base == "lstm" else isinstance(args[2], torch.Tensor)
        if packed:
            raise EmulationError("ampsim.torch: %s in %s: packed sequences (nn.utils.rnn.PackedSequence) are "
                                 "not emulated; pass the padded batch as a tensor instead" % (name, where))
    else:
        base = name[:-len("_cell")]
    path = emu._stack[-1].path if emu._stack else ""
    namer = _Namer(emu, path)
    # the initial state is an operand of the gates: in the activation format
    # (CUDA autocast casts an RNN's hx with its input). CPU autocast (torch_cpu
    # policies) leaves torch.lstm/gru/rnn_* and the cells off its lists: only
    # their inner GEMMs (linear) are cast, so the state stays FP32 and the
    # gates' arithmetic promotes with it, as aten's RNN.cpp cells compute
    args = list(args)
    if not emu.policy.torch_cpu:
        args[1] = _state_in_format(emu, args[1], path)
    emu._stack.append(Frame(path, False, namer))
    try:
        with mode:
            if kind == "rnn":
                return full(base, *args, n=namer)
            return cell(base, *args, n=namer, **kwargs)
    finally:
        emu._stack.pop()
