"""The pointwise part of an LSTM or GRU step as one autograd Function.

Used for the steps of an emulated nn.LSTM / nn.GRU and their cells
(_rnn.py; the layers that _rnn_layer.py does not run whole) when the
policy's activation format is narrow, its pointwise ops run in FP32 and are
rounded once (not a torch_cpu policy, which runs them on real 16-bit
tensors; not a policy that forces elementwise ops to FP32) and every operand
is in that format. It computes what the op-by-op emulation computes, bit
for bit, and saves its per-op dispatch and autograd nodes (about 25 per
step):

- forward: the same torch ops in the same order on the same operands, each
  result rounded into the activation format under its op's name (statistics
  and non-finite checks as _RoundFn's);
- backward: each op's gradient rounded into the gradient format under its
  name (_RoundFn's backward); sigmoid and tanh by the rule that reads the
  rounded output (_functions.py); products and sums by autograd's formulas
  in float32; a tensor with two consumers in the step sums their
  contributions in the gradient format, as its _grad.py buffer does (two
  contributions: the order does not change a bit); the calls that keep
  statistics in the op-by-op backward's order;
- outside the step: the outputs are gradient sources and the inputs are
  uses (_grad.py), as the op-by-op step's first and last ops are, so the
  sums across steps (an LSTM's cell state, a GRU's hidden state) form as
  before;
- the coverage account counts the same calls of the same functions;
- fewer foreign calls: results that do not depend on each other (the four
  gates, fc and ig, their gradients) are rounded in one call on the steps
  without statistics, when the rounding is to nearest (not keyed by name)
  and no result is non-finite; the backward rules' roundings of all gates
  at once (a rounding of an element does not depend on its neighbours).
  The nonlinearities themselves run on each gate's own chunk: PyTorch's
  vectorised kernels give the op-by-op bits on those shapes only.

``ENABLED`` switches it off (the op-by-op path; tests compare the two)."""
import torch

from . import _grad, _rt
from ._functions import _sigmoid_bwd, _tanh_bwd
from ._rt import FMT_ATTR as _FMT
from ._rt import fmt_of as _fmt_of
from ._scope import join as _join

#: False: every step runs op by op
ENABLED = True

LSTM_OPS = ("gates", "in_gate", "forget_gate", "cell_gate", "out_gate", "fc", "ig", "c", "c_tanh", "h")
GRU_OPS = ("gates", "reset_gate", "update_gate", "hn_r", "new_gate_pre", "new_gate", "h_minus_n", "h_z", "h")

T = torch.Tensor
E, V = "elementwise", "view"
# (function, kind, elements per hidden-state element) of each call of the
# op-by-op step, for the coverage account
_LSTM_CALLS = ((T.add, E, 4), (T.unsafe_chunk, V, 0), (torch.sigmoid, E, 1), (torch.sigmoid, E, 1),
               (torch.tanh, E, 1), (torch.sigmoid, E, 1), (T.mul, E, 1), (T.mul, E, 1),
               (T.add, E, 1), (torch.tanh, E, 1), (T.mul, E, 1))
_GRU_CALLS = ((T.add, E, 3), (T.unsafe_chunk, V, 0), (T.unsafe_chunk, V, 0), (T.unsafe_chunk, V, 0),
              (torch.sigmoid, E, 1), (torch.sigmoid, E, 1), (T.mul, E, 1), (T.add, E, 1),
              (torch.tanh, E, 1), (T.sub, E, 1), (T.mul, E, 1), (T.add, E, 1))


def usable(emu, *ts):
    """Whether a step with these operands may run fused (see the module docstring)."""
    if not ENABLED:
        return False
    pol = emu.policy
    act = pol.act
    if act == "fp32" or pol.torch_cpu or "elementwise" in pol.fp32_ops:
        return False
    return all(_fmt_of(t) == act for t in ts)


def _sites(emu, path, sfx, ops):
    """The op sites of one step, registered in the op-by-op order."""
    out = []
    ids = emu._ids
    for op in ops:
        site = _join(path, op + sfx) + ".out"
        if site not in ids:
            emu._tid(site)
            emu._tid(site + ".grad")
        out.append(site)
    return out


def _count(emu, calls, n, steps=1):
    """The coverage rows of the op-by-op step's calls (n: elements of the
    state), for this many steps."""
    if emu._stack or (not emu._bwd_done and torch.is_grad_enabled()):
        for func, kind, m in calls:
            emu._cov.count(func, kind, steps, m * n * steps)


def _sum2(a, b, fmt):
    """Two gradient contributions summed as a _grad.py buffer sums them."""
    buf = _grad._Buffer(fmt)
    buf.add(a)
    buf.add(b)
    return buf.take()


def _round_cat(emu, xs, fmt, names, role, order):
    """torch.cat(xs, 1) with each x rounded into fmt under its name (None: a
    zero tensor, kept). One foreign call when no statistics are due, the
    rounding is to nearest (not keyed by name) and no result is non-finite;
    else one per name, in the op-by-op order given (so the first non-finite
    result is noted under the same name)."""
    if emu.policy.rounding == "rne" and not emu._stats_due(role):
        y, _, nf = _rt.round_count(torch.cat(xs, 1), fmt)
        if not nf:
            return y
    out = list(xs)
    for j in order:
        if names[j] is not None:
            out[j] = emu._round(xs[j], fmt, names[j], role)
    return torch.cat(out, 1)


def _saved(emu, y, out):
    """y rounded into the activation format as the backward rules read it
    (_SavedOutFn: round to nearest even): out itself when the policy rounds so."""
    return out if emu.policy.rounding == "rne" else _rt.round_t(y, emu.policy.act)[0]


def _gate_rules(g, y, k, r):
    """The sigmoid rule r(r(g * r(1 - y)) * y) on every H-wide chunk of g
    (B, n*H) except chunk k, the tanh rule r(g * r(1 - r(y * y))) on chunk k
    (_functions.py); y: the rounded outputs. Elementwise products and
    differences and their roundings do not depend on the layout, so all chunks
    take one call per operator."""
    w = y.shape[1] // 4
    yt = y[:, k * w:(k + 1) * w]
    u = y.clone()
    u[:, k * w:(k + 1) * w] = r(yt * yt)
    v = g * r(1 - u)
    w1 = r(v)
    out = r(w1 * y)
    out[:, k * w:(k + 1) * w] = w1[:, k * w:(k + 1) * w]
    return out


def _rounder(emu, sites, fmt, sfx):
    """r(x, k): x rounded into fmt under the name sites[k] + sfx (".grad": a
    gradient), as _RoundFn does."""
    role = "act_grad" if sfx else "act"

    def r(x, k):
        return emu._round(x, fmt, sites[k] + sfx, role)
    return r


def _rule_round(fmt):
    """The rounding of the backward rules (_SavedOutFn's r)."""
    return lambda v: _rt.round_t(v, fmt)[0]


def _gates(emu, sites, hw, xw):
    """(act, the forward's rounder, the gates hw + xw rounded): a step's first op."""
    act = emu.policy.act
    r = _rounder(emu, sites, act, "")
    with emu._quiet():
        return act, r, r(hw + xw, 0)


class _LSTMPointwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, emu, sites, hw, xw, c):
        act, r, g = _gates(emu, sites, hw, xw)
        with emu._quiet():
            gi, gf, gg_, go = g.unsafe_chunk(4, 1)
            # (each nonlinearity on its own chunk: PyTorch's vectorised kernels
            # give the bits of the op-by-op calls on these shapes only)
            ys = [torch.sigmoid(gi), torch.sigmoid(gf), torch.tanh(gg_), torch.sigmoid(go)]
            act4 = _round_cat(emu, ys, act, sites[1:5], "act", (0, 1, 2, 3))
            sv = _saved(emu, torch.cat(ys, 1), act4)       # what the backward rules read
            i, f, gg, o = act4.chunk(4, 1)
            fcig = _round_cat(emu, [f * c, i * gg], act, sites[5:7], "act", (0, 1))
            fc, ig = fcig.chunk(2, 1)
            cy = r(fc + ig, 7)
            t = torch.tanh(cy)
            tc = r(t, 8)
            tt = _saved(emu, t, tc)
            hy = r(o * tc, 9)
        ctx.emu, ctx.sites = emu, sites
        ctx.save_for_backward(c, i, f, gg, o, tc, sv, tt)
        ctx.set_materialize_grads(False)
        return hy, cy

    @staticmethod
    def backward(ctx, d_hy, d_cy):
        emu, s = ctx.emu, ctx.sites
        pol = emu.policy
        act, agrad = pol.act, pol.act_grad
        c, i, f, gg, o, tc, ys, tt = ctx.saved_tensors
        G, r = _rounder(emu, s, agrad, ".grad"), _rule_round(act)
        with emu._quiet():
            d_o = None
            dcy = d_cy
            if d_hy is not None:
                dh = G(d_hy, 9)
                d_o, d_tc = dh * tc, dh * o
                dct = _tanh_bwd(G(d_tc, 8), tt, None, r)
                # the cell state's buffer: the next step's (or c_n's) contribution and c_tanh's
                dcy = dct if d_cy is None else _sum2(d_cy, dct, agrad)
            dcy = G(dcy, 7)
            if pol.rounding == "rne" and not emu._stats_due("act_grad") and agrad != "fp32":
                g_ig = g_fc = G(dcy, 6)          # (one value under two names)
            else:
                g_ig = G(dcy, 6)
                g_fc = G(dcy, 5)
            d_i, d_gg = g_ig * gg, g_ig * i
            d_f, d_c = g_fc * c, g_fc * f
            # each gate's gradient rounded under its name (in the op-by-op
            # backward's order), then the four rules at once
            so = s[4] + ".grad" if d_o is not None else None
            if d_o is None:
                d_o = torch.zeros_like(dcy)
            gs = _round_cat(emu, [d_i, d_f, d_gg, d_o], agrad, [s[1] + ".grad", s[2] + ".grad", s[3] + ".grad", so],
                            "act_grad", (3, 2, 1, 0))
            dg = _gate_rules(gs, ys, 2, r)
            if so is None:                      # (no gradient reached the output gate: zeros)
                dg[:, 3 * dcy.shape[1]:] = 0
            dg = G(dg, 0)
        return None, None, dg, dg, d_c


class _GRUPointwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, emu, sites, hw, xw, h):
        act, r, g = _gates(emu, sites, hw, xw)
        with emu._quiet():
            r_pre, z_pre, _ = g.unsafe_chunk(3, 1)
            i_n = xw.unsafe_chunk(3, 1)[2]
            h_n = hw.unsafe_chunk(3, 1)[2]
            ys = [torch.sigmoid(r_pre), torch.sigmoid(z_pre)]
            rz = _round_cat(emu, ys, act, sites[1:3], "act", (0, 1))
            srz = _saved(emu, torch.cat(ys, 1), rz)         # what the backward rule reads
            rg, z = rz.chunk(2, 1)
            hn = r(h_n * rg, 3)
            npre = r(i_n + hn, 4)
            t = torch.tanh(npre)
            tt, nn_ = _rt.round_t(t, act)[0], r(t, 5)
            d = r(h - nn_, 6)
            dz = r(d * z, 7)
            hy = r(dz + nn_, 8)
        ctx.emu, ctx.sites = emu, sites
        ctx.save_for_backward(rg, z, h_n, d, srz, tt)
        return hy

    @staticmethod
    def backward(ctx, d_hy):
        emu, s = ctx.emu, ctx.sites
        pol = emu.policy
        act, agrad = pol.act, pol.act_grad
        rg, z, h_n, d, srz, tt = ctx.saved_tensors
        G, r = _rounder(emu, s, agrad, ".grad"), _rule_round(act)
        with emu._quiet():
            dh = G(d_hy, 8)
            g_dz = G(dh, 7)
            d_d, d_z = g_dz * z, g_dz * d
            gd = G(d_d, 6)
            # the new gate's buffer: h's add (dh), then the subtraction's (-gd)
            gn = G(_sum2(dh, gd.neg(), agrad), 5)
            g_np = G(_tanh_bwd(gn, tt, None, r), 4)
            g_hn = G(g_np, 3)
            d_h_n, d_r = g_hn * rg, g_hn * h_n
            # the two gates' gradients (update first, as op by op), then both rules at once
            grz = _round_cat(emu, [d_r, d_z], agrad, [s[1] + ".grad", s[2] + ".grad"], "act_grad", (1, 0))
            zero = torch.zeros_like(d_r)
            dg = G(torch.cat([_sigmoid_bwd(grz, srz, None, r), zero], 1), 0)
            # hw and xw, side by side: the chunk's contribution (third part), then the sum's
            both = _sum2(torch.cat([zero, zero, d_h_n, zero, zero, g_np], 1), torch.cat([dg, dg], 1), agrad)
            d_hw, d_xw = both.chunk(2, 1)
        return None, None, d_hw, d_xw, gd


def _out(emu, y):
    setattr(y, _FMT, emu.policy.act)
    return _grad.source(y, emu._grad_fmt(emu.policy.act))


def lstm_step(emu, path, sfx, hw, xw, c):
    """(hy, cy) of one LSTM step from the hidden GEMM hw, the input GEMM's row
    xw and the cell state c."""
    with emu._quiet():          # (the mode's handlers run with the mode off)
        hw, xw, c = _grad.use(hw), _grad.use(xw), _grad.use(c)
        hy, cy = _LSTMPointwise.apply(emu, _sites(emu, path, sfx, LSTM_OPS), hw, xw, c)
        _count(emu, _LSTM_CALLS, hy.numel())
        return _out(emu, hy), _out(emu, cy)


def gru_step(emu, path, sfx, hw, xw, h):
    """hy of one GRU step from the hidden GEMM hw, the input GEMM's row xw and
    the hidden state h."""
    with emu._quiet():
        hw, xw, h = _grad.use(hw), _grad.use(xw), _grad.use(h)
        hy = _GRUPointwise.apply(emu, _sites(emu, path, sfx, GRU_OPS), hw, xw, h)
        _count(emu, _GRU_CALLS, hy.numel())
        return _out(emu, hy)
