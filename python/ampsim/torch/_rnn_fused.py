"""The pointwise part of an LSTM or GRU step as one autograd Function, for
the steps of an emulated nn.LSTM / nn.GRU whose operands are all in the activation
format: the same torch ops in the same order as the op-by-op emulation
(_rnn.py), each output rounded once into the activation format under the
same name, and a backward that forms the same gradients (PyTorch's own
sigmoid/tanh backward kernels, products, one rounding into the gradient
format per op output), so the values equal the op-by-op run's; it saves the
per-op dispatch and autograd nodes of ten small ops per step. Every tensor
here has at most two consumers, so the order in which autograd would sum
their gradients does not change a bit."""
import torch

from ._rt import FMT_ATTR as _FMT
from ._rt import fmt_of as _fmt_of

_SIGB = torch.ops.aten.sigmoid_backward
_TANHB = torch.ops.aten.tanh_backward
LSTM_OPS = ("gates", "in_gate", "forget_gate", "cell_gate", "out_gate", "fc", "ig", "c", "c_tanh", "h")
GRU_OPS = ("gates", "reset_gate", "update_gate", "hn_r", "new_gate_pre", "new_gate", "h_minus_n", "h_z", "h")


def lstm_gates():
    """(coverage account key: the fused pointwise part of an LSTM step)"""


def gru_gates():
    """(coverage account key: the fused pointwise part of a GRU step)"""


def usable(emu, *ts):
    """Whether an LSTM step with these operands may run fused: a narrow
    activation format that every operand is in."""
    act = emu.policy.act
    return act != "fp32" and all(_fmt_of(t) == act for t in ts)


def names(emu, path, sfx, ops=LSTM_OPS):
    """The op sites of one step (registered in the op-by-op order)."""
    out = []
    for op in ops:
        site = (path + "." if path else "") + op + sfx
        if site + ".out" not in emu._ids:
            emu._tid(site + ".out")
            emu._tid(site + ".out.grad")
        out.append(site)
    return out


def _rounder(emu, sites, fmt, suffix, role):
    """r(x, k): x rounded into fmt under the name sites[k] + suffix."""
    def r(x, k):
        return emu._round(x, fmt, sites[k] + suffix, role)
    return r


class _LSTMPointwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, emu, sites, hw, xw, c):
        agrad = emu.policy.act_grad
        r = _rounder(emu, sites, emu.policy.act, ".out", "act")
        with emu._quiet():
            g = r(hw + xw, 0)
            gi, gf, gg_, go = g.unsafe_chunk(4, 1)
            # the nonlinearities' backward reads their own (unrounded) outputs, as
            # autograd's does; the products read their rounded operands
            si, sf, tg, so = torch.sigmoid(gi), torch.sigmoid(gf), torch.tanh(gg_), torch.sigmoid(go)
            i, f, gg, o = r(si, 1), r(sf, 2), r(tg, 3), r(so, 4)
            fc = r(f * c, 5)
            ig = r(i * gg, 6)
            cy = r(fc + ig, 7)
            t = torch.tanh(cy)
            tc = r(t, 8)
            hy = r(o * tc, 9)
        ctx.emu, ctx.sites, ctx.agrad = emu, sites, agrad
        ctx.save_for_backward(c, i, f, gg, o, tc, si, sf, tg, so, t)
        ctx.set_materialize_grads(False)
        return hy, cy

    @staticmethod
    def backward(ctx, d_hy, d_cy):
        emu, s, agrad = ctx.emu, ctx.sites, ctx.agrad
        c, i, f, gg, o, tc, si, sf, tg, so, t = ctx.saved_tensors
        G = _rounder(emu, s, agrad, ".out.grad", "act_grad")
        with emu._quiet():
            if d_hy is None:
                d_hy = torch.zeros_like(tc)
            dh = G(d_hy, 9)
            d_o = dh * tc
            d_tc = G(dh * o, 8)
            d_int = _TANHB(d_tc, t)
            dcy = G(d_int if d_cy is None else d_cy + d_int, 7)
            d_fc, d_ig = G(dcy, 5), G(dcy, 6)
            d_f, d_c = d_fc * c, d_fc * f
            d_i, d_gg = d_ig * gg, d_ig * i
            dg = torch.cat([_SIGB(G(d_i, 1), si), _SIGB(G(d_f, 2), sf), _TANHB(G(d_gg, 3), tg),
                            _SIGB(G(d_o, 4), so)], 1)
            dg = G(dg, 0)
        return None, None, dg, dg, d_c


def lstm_step(emu, path, sfx, hw, xw, c):
    """(hy, cy) of one LSTM step from the hidden GEMM hw, the input GEMM's row
    xw and the cell state c, fused (see the module docstring)."""
    hy, cy = _LSTMPointwise.apply(emu, names(emu, path, sfx), hw, xw, c)
    act = emu.policy.act
    setattr(hy, _FMT, act)
    setattr(cy, _FMT, act)
    if emu._stack or torch.is_grad_enabled():
        n = hy.numel()
        emu._cov.add(lstm_gates, "elementwise", None)
        emu._cov.rows[lstm_gates][2] += 4 * n + 9 * n
    return hy, cy


class _GRUPointwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, emu, sites, hw, xw, h):
        agrad = emu.policy.act_grad
        r = _rounder(emu, sites, emu.policy.act, ".out", "act")
        with emu._quiet():
            g = r(hw + xw, 0)
            r_pre, z_pre, _ = g.unsafe_chunk(3, 1)
            i_n = xw.unsafe_chunk(3, 1)[2]
            h_n = hw.unsafe_chunk(3, 1)[2]
            sr, sz = torch.sigmoid(r_pre), torch.sigmoid(z_pre)
            rg, z = r(sr, 1), r(sz, 2)
            hn = r(h_n * rg, 3)
            npre = r(i_n + hn, 4)
            t = torch.tanh(npre)
            nn_ = r(t, 5)
            d = r(h - nn_, 6)
            dz = r(d * z, 7)
            hy = r(dz + nn_, 8)
        ctx.emu, ctx.sites, ctx.agrad = emu, sites, agrad
        ctx.save_for_backward(rg, z, h_n, d, sr, sz, t)
        return hy

    @staticmethod
    def backward(ctx, d_hy):
        emu, s, agrad = ctx.emu, ctx.sites, ctx.agrad
        rg, z, h_n, d, sr, sz, t = ctx.saved_tensors
        G = _rounder(emu, s, agrad, ".out.grad", "act_grad")
        with emu._quiet():
            dh = G(d_hy, 8)
            d_dz = G(dh, 7)
            d_d, d_z = d_dz * z, d_dz * d
            d_d = G(d_d, 6)
            d_n = G(dh + d_d.neg(), 5)
            d_npre = G(_TANHB(d_n, t), 4)
            d_hn = G(d_npre, 3)
            d_h_n, d_r = d_hn * rg, d_hn * h_n
            zero = torch.zeros_like(d_h_n)
            dg = G(torch.cat([_SIGB(G(d_r, 1), sr), _SIGB(G(d_z, 2), sz), zero], 1), 0)
            d_hw = dg + torch.cat([zero, zero, d_h_n], 1)
            d_xw = dg + torch.cat([zero, zero, d_npre], 1)
        return None, None, d_hw, d_xw, d_d


def gru_step(emu, path, sfx, hw, xw, h):
    """hy of one GRU step from the hidden GEMM hw, the input GEMM's row xw and
    the hidden state h, fused (see the module docstring)."""
    hy = _GRUPointwise.apply(emu, names(emu, path, sfx, GRU_OPS), hw, xw, h)
    setattr(hy, _FMT, emu.policy.act)
    if emu._stack or torch.is_grad_enabled():
        n = hy.numel()
        emu._cov.add(gru_gates, "elementwise", None)
        emu._cov.rows[gru_gates][2] += 3 * n + 8 * n
    return hy
