"""An emulated nn.LSTM / nn.GRU layer (one direction) as one autograd Function.

Used by _rnn.py for the layers of an nn.LSTM or nn.GRU when the policy's
pointwise ops run in FP32 and are rounded once to nearest (_rnn_fused.usable),
its GEMM operands are in the activation formats (no FP8 scaling), every
gradient format is narrow and the hidden weights are parameters. It gives the
op-by-op emulation's values, gradients, statistics, non-finite report and
coverage rows bit for bit, at a fraction of the cost: per time step one
torch.addmm (the hidden GEMM, bias included, on the rounded operands, as
F.linear runs it), PyTorch's own sigmoid and tanh calls on the same operands
as op by op (its vectorised kernels cannot be reproduced in C bit for bit),
and three calls of the C kernels (sim/amp_rnn.h) that do all the other
arithmetic and roundings of the step; backward the same with the hidden
GEMM's two products (torch.mm, in autograd's operand order for addmm) and the
bias sum. No per-step autograd nodes, gradient buffers or mode dispatch.

What the op-by-op path does across steps, and how it is kept:
- the hidden state h_t feeds the next step's GEMM (its first use) and the
  output stack (and, for the GRU, the next step's h - n): its gradient is
  the gradient buffer's sum of those contributions in autograd's order
  (stack, h - n, GEMM; _grad.py), formed by the C kernels;
- the weight copies of W_hh and b_hh are used by every step, each step's
  share rounded at the weight's name. The cast cache hands the later steps
  the copy through use nodes, so the copy's buffer sums the shares in format
  (autocast's sum of a cached copy's uses): the shares of the later steps are
  added into the buffer by the kernels, and the first step's is returned as
  the first use's contribution. Under no_grad (no use nodes) it hands out the
  copy itself, and autograd would add the shares in float32 as they come,
  later steps first: the Function then takes the copy once per step and
  returns the shares in that order. Either way the sum is op by op's;
- the last step's h is a gradient source (the output stack and h_n use it);
  h0 and c0, the input rows and the weight copies pass through _grad.use
  in the op-by-op order.
``ENABLED`` switches it off (the step-by-step path; tests compare the two)."""
import ctypes

import torch
import torch.nn.functional as F

from .. import _lib
from .._round import Stats
from . import _grad, _rnn_fused, _rt
from ._rt import FMT_ATTR as _FMT
from ._rt import fmt_of as _fmt_of
from ._scope import join as _join

#: False: the layers run step by step
ENABLED = True

_VP, _SZ, _I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_SLOTS = 6


class _Ctx(ctypes.Structure):
    """Mirror of amp_rnn_ctx (sim/amp_rnn.h)."""
    _fields_ = [("fmt", _VP * _SLOTS), ("opts", _VP * _SLOTS), ("stats", _VP), ("scratch", _VP), ("tmp", _VP),
                ("nf_site", _I), ("nf_count", ctypes.c_uint64), ("status", _I)]


_GATES = _lib._fn("amp_rnn_gates", None, _VP, _VP, _VP, _VP, _SZ)
_LSTM_FWD = _lib._fn("amp_lstm_fwd", None, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _SZ)
_LSTM_OUT = _lib._fn("amp_lstm_fwd_out", None, _VP, _VP, _VP, _VP, _SZ)
_LSTM_BWD = _lib._fn("amp_lstm_bwd", None, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _SZ, _SZ)
_GRU_FWD = _lib._fn("amp_gru_fwd", None, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _SZ, _SZ)
_GRU_OUT = _lib._fn("amp_gru_fwd_out", None, _VP, _VP, _VP, _VP, _VP, _VP, _SZ)
_GRU_BWD = _lib._fn("amp_gru_bwd", None, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _SZ, _SZ)
_SHARES = _lib._fn("amp_rnn_shares", None, _VP, _VP, _SZ, _I, _VP, _SZ, _I, _VP, _VP, _VP)

def _ptr(t):
    return None if t is None else t.data_ptr()


def _dense(t):
    return t if t is None or t.is_contiguous() else t.contiguous()


def applies(emu, kind, xw, hid, w_hh, b_hh):
    """Whether a layer with these operands may run as one Function."""
    with emu._quiet():
        return _usable(emu, kind, xw, hid, w_hh, b_hh)


def _usable(emu, kind, xw, hid, w_hh, b_hh):
    if not ENABLED or kind not in ("lstm", "gru") or not _rnn_fused.usable(emu):
        return False
    pol = emu.policy
    if pol.rounding != "rne" or pol.fp8_scaling or emu.kernels != "torch" or pol.fwd_in != pol.act \
            or pol.bwd_in != pol.act_grad or "fp32" in (pol.act_grad, pol.weight_grad):
        return False
    if not isinstance(w_hh, torch.nn.Parameter) or not (b_hh is None or isinstance(b_hh, torch.nn.Parameter)):
        return False
    ts = list(hid) if kind == "lstm" else [hid]
    if not (xw.dim() == 3 and xw.is_contiguous() and xw.dtype == torch.float32 and _fmt_of(xw) == pol.act):
        return False
    return all(t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous() and t.dim() == 2
               and _fmt_of(t) == pol.act for t in ts)


class _Plan:
    """One layer call: names, formats, the C context and statistics."""

    def __init__(self, emu, kind, path, sfx, wnames, B, H, order):
        pol = emu.policy
        self.emu, self.kind, self.B, self.H, self.order = emu, kind, B, H, order
        ops = _rnn_fused.LSTM_OPS if kind == "lstm" else _rnn_fused.GRU_OPS
        fwd = [_join(path, "hh" + sfx) + ".out"] + [_join(path, op + sfx) + ".out" for op in ops]
        self.names = fwd + [s + ".grad" for s in fwd] + [n + ".grad" if n else None for n in wnames]
        nf = len(fwd)
        self.nfwd = nf
        self.roles = ["act"] * nf + ["act_grad"] * nf + ["weight_grad"] * 2
        self.fmts = [pol.act] * nf + [pol.act_grad] * nf + [pol.weight_grad] * 2
        c = self.c = _Ctx()
        sr = pol.sr_bits
        for k, (fmt, mode, bits) in enumerate(((pol.act, "rne", sr), (pol.act_grad, "rne", sr),
                                               (pol.weight_grad, "rne", sr), (pol.act, "rne", 0),
                                               (pol.act_grad, "rne", 0), (pol.weight_grad, "rne", 0))):
            a = _rt.round_addrs(fmt, mode, False, bits)
            c.fmt[k], c.opts[k] = a[0], a[1]
        self.scratch = _lib.AmpStats()
        _lib.lib.amp_stats_init(ctypes.byref(self.scratch))
        c.scratch = ctypes.addressof(self.scratch)
        self.tmp = torch.empty(32 * B * H)
        c.tmp = self.tmp.data_ptr()
        self.cp = ctypes.addressof(c)
        self.runs = None

    def begin(self, backward):
        """Statistics pointers for the sites of the coming pass (forward or backward)."""
        emu, c = self.emu, self.c
        c.nf_site, c.nf_count, c.status = -1, 0, 0
        due = emu._stats_due("act_grad" if backward else "act")
        if not due:
            c.stats, self.runs = None, None
            return
        lo, hi = (self.nfwd, len(self.names)) if backward else (0, self.nfwd)
        arr = (_VP * len(self.names))()
        block = (_lib.AmpStats * (hi - lo))()       # (all zero: the kernels take them as initialised)
        runs = []
        for k in range(lo, hi):
            name = self.names[k]
            if name is None:
                continue
            st = block[k - lo]
            prev = emu._stats.get(name)
            if prev is not None:
                ctypes.pointer(st)[0] = prev[2]._s
            arr[k] = ctypes.addressof(st)
            runs.append((k, st, prev is not None))
        self.arr, self.runs = arr, runs
        c.stats = ctypes.addressof(arr)

    def end(self, backward):
        """The pass's statistics and its first non-finite result, into the emulation."""
        emu, c = self.emu, self.c
        if c.status:
            _lib.check(c.status)
        if self.runs:
            for k, st, had in self.runs:
                if st.n or had:         # (a site this pass never rounded gets no row, as op by op)
                    fmt = self.fmts[k]
                    emu._stats[self.names[k]] = (self.roles[k], fmt, Stats._wrap(st, _rt.fmt_struct(fmt)))
        if c.nf_site >= 0 and emu._nf is None:
            emu._nf = (self.names[c.nf_site], "backward" if backward else "forward", int(c.nf_count))
        c.stats, self.runs = None, None


def _weight_buf(emu, p, fmt):
    """The gradient buffer of the step's cast copy of parameter p (None: none)."""
    hit = emu._casts.get((id(p), fmt))
    if hit is None:
        return None
    buf = getattr(hit[1], _grad.BUF_ATTR, None)
    return buf if buf is not None and _grad.live(hit[1], buf) else None


def _acc_from(buf, like):
    """(sum so far, contributions in it) of a weight copy's buffer, for the kernels."""
    if buf is None or buf.g is None:
        return torch.empty_like(like), 0
    g = buf.g
    if buf.raw:
        g = _rt.round_t(g.float(), buf.fmt)[0]
    return g.clone().contiguous(), 1


# the weight-share sites: AMP_LSTM_W = 22, AMP_GRU_W = 20 (sim/amp_rnn.h)
_SITE_W = {"lstm": 22, "gru": 20}


def _backward_loop(ctx, p, grads, step, carry):
    """The steps' backward, last first; step(t, ext, rec, carry) runs the
    kernel of step t (ext: its output's gradient from outside, rec: the next
    step's GEMM's contribution to it, carry: what the next step passed on,
    writing xw's gradient) and returns (the GEMM output's gradient, carry).
    After each step the hidden GEMM's products, as autograd's addmm backward
    forms them (mat2 = W^T column-major: dW = g^T h, dh = g W, the bias's
    sum over rows); the shares are rounded by the kernel call that follows.
    Returns (h0's gradient, the last carry, the weight copies' gradients)."""
    w = ctx.w
    need_w, need_b = ctx.need_w, ctx.need_b
    n_t = len(p.order)
    cnt = (_I * 2)()
    pc = ctypes.addressof(cnt)
    acw = acb = None
    if not ctx.plain and need_w and n_t > 1:
        # the copies' buffers: every step's share but the first is added as it comes
        aw, cnt[0] = _acc_from(ctx.wbuf, w)
        ab, cnt[1] = _acc_from(ctx.bbuf, ctx.b) if need_b else (None, 0)
        acw, acb = aw.data_ptr(), _ptr(ab)
    sw, cp = _SITE_W[p.kind], p.cp
    nw, nb = w.numel(), ctx.b.numel() if need_b else 0
    dw = db = dh = None
    ws, bs = [], []
    hs = ctx.hs
    last = p.order[0]
    for t in reversed(p.order):
        if dw is not None or db is not None:
            _SHARES(cp, _ptr(dw), nw, sw, _ptr(db), nb, sw + 1, acw, acb, pc)
            ws.append(dw)
            bs.append(db)
        ext = grads[t]
        if ext is not None and not ext.is_contiguous():
            ext = ext.contiguous()
        g, carry = step(t, ext, dh, carry)
        dw = torch.mm(g.t(), hs[t]) if need_w else None
        db = g.sum(0) if need_b else None
        dh = torch.mm(g, w) if t != last or ctx.need_h0 else None
    if dw is not None or db is not None:
        _SHARES(cp, _ptr(dw), nw, sw, _ptr(db), nb, sw + 1, None, None, pc)
    ws.append(dw)
    bs.append(db)
    if acw is not None:
        for buf, acc, k in ((ctx.wbuf, aw, 0), (ctx.bbuf, ab, 1)):
            if buf is not None and acc is not None and cnt[k]:
                buf.g, buf.raw = acc, cnt[k] == 1
    if not ctx.plain:
        ws, bs = ws[-1:], bs[-1:]       # (the first step's share: the copy's first use)
    elif len(ws) < ctx.k:               # (no shares: neither copy needs a gradient)
        ws = bs = [None] * ctx.k
    return dh, carry, tuple(ws) + (tuple(bs) if ctx.has_b else ())


def _start(p, xw, wb):
    """A forward's operands (W, b, W^T, the rows of xw) and its lists of
    inputs, saved tensors and outputs per step; statistics begin."""
    w, b = wb[0], wb[p.k] if len(wb) > p.k else None
    p.begin(False)
    T = xw.shape[0]
    return (w, b, w.t(), xw.unbind(0)) + tuple([None] * T for _ in range(3))


class _LSTMLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, h0, c0, xw, *wb):
        B, H, cp = p.B, p.H, p.cp
        n, n4 = B * H, 4 * B * H
        w, b, wt, xw, hs, sv, hys = _start(p, xw, wb)
        h, cx = h0, c0
        sig, tanh, empty = torch.sigmoid, torch.tanh, torch.empty_like
        for t in p.order:
            g = torch.addmm(b, h, wt) if b is not None else torch.mm(h, wt)
            pg = g.data_ptr()
            _GATES(cp, pg, xw[t].data_ptr(), pg, n4)        # (the gates over the GEMM's output)
            yi, yf, yg, yo = g.unsafe_chunk(4, 1)
            yi, yf, yg, yo = sig(yi), sig(yf), tanh(yg), sig(yo)
            cy = empty(cx)
            po = yo.data_ptr()
            _LSTM_FWD(cp, yi.data_ptr(), yf.data_ptr(), yg.data_ptr(), po, cx.data_ptr(), cy.data_ptr(), n)
            tc = tanh(cy)
            hy = empty(cy)
            _LSTM_OUT(cp, tc.data_ptr(), po, hy.data_ptr(), n)
            hs[t], sv[t], hys[t] = h, (cx, yi, yf, yg, yo, tc), hy
            h, cx = hy, cy
        p.end(False)
        _save(ctx, p, w, b, hs, sv)
        ctx.need_c0 = ctx.needs_input_grad[2]
        return tuple(hys) + (cx,)

    @staticmethod
    def backward(ctx, *grads):
        dh, dc, gx, gw = _backward(ctx, grads, _lstm_steps, grads[-1])
        return (None, dh if ctx.need_h0 else None, dc if ctx.need_c0 else None, gx) + gw


def _lstm_steps(p, sv):
    """(xw's gradient, the step function of _backward_loop) of an LSTM layer."""
    B, H, cp = p.B, p.H, p.cp
    gx = torch.empty(len(p.order), B, 4 * H)
    dgs = gx.unbind(0)
    dcs = torch.empty(len(p.order), B, H).unbind(0)

    def step(t, ext, rec, dcn):
        cx, yi, yf, yg, yo, tc = sv[t]
        dg, dc = dgs[t], dcs[t]
        _LSTM_BWD(cp, _ptr(ext), _ptr(rec), _ptr(dcn), yi.data_ptr(), yf.data_ptr(), yg.data_ptr(), yo.data_ptr(),
                  cx.data_ptr(), tc.data_ptr(), dg.data_ptr(), dc.data_ptr(), B, H)
        return dg, dc
    return gx, step


class _GRULayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, h0, h0b, xw, *wb):
        B, H, cp = p.B, p.H, p.cp
        n, n3 = B * H, 3 * B * H
        w, b, wt, xw, hs, sv, hys = _start(p, xw, wb)
        T = len(xw)
        h = h0
        hn, npre = torch.empty(2, B, H).unbind(0)        # (scratch)
        phn, pnp = hn.data_ptr(), npre.data_ptr()
        ds = torch.empty(T, B, H).unbind(0)
        sig, tanh, empty = torch.sigmoid, torch.tanh, torch.empty_like
        for t in p.order:
            hw = torch.addmm(b, h, wt) if b is not None else torch.mm(h, wt)
            g = empty(hw)
            phw, px = hw.data_ptr(), xw[t].data_ptr()
            _GATES(cp, phw, px, g.data_ptr(), n3)
            gr, gz, _ = g.unsafe_chunk(3, 1)
            yr, yz = sig(gr), sig(gz)
            pz = yz.data_ptr()
            _GRU_FWD(cp, yr.data_ptr(), pz, phw, px, phn, pnp, B, H)
            nt = tanh(npre)
            d = ds[t]
            hy = empty(h)
            _GRU_OUT(cp, nt.data_ptr(), h.data_ptr(), pz, d.data_ptr(), hy.data_ptr(), n)
            hs[t], sv[t], hys[t] = h, (hw, yr, yz, d, nt), hy
            h = hy
        p.end(False)
        _save(ctx, p, w, b, hs, sv)
        ctx.need_h0b = ctx.needs_input_grad[2]
        return tuple(hys)

    @staticmethod
    def backward(ctx, *grads):
        dh, gd, gx, gw = _backward(ctx, grads, _gru_steps, None)
        return (None, dh if ctx.need_h0 else None, gd if ctx.need_h0b else None, gx) + gw


def _gru_steps(p, sv):
    """(xw's gradient, the step function of _backward_loop) of a GRU layer."""
    B, H, cp = p.B, p.H, p.cp
    gx = torch.empty(len(p.order), B, 3 * H)
    dxws = gx.unbind(0)
    dhws = torch.empty(len(p.order), B, 3 * H).unbind(0)
    gds = torch.empty(len(p.order), B, H).unbind(0)

    def step(t, ext, rec, gdn):
        hw, yr, yz, d, nt = sv[t]
        dhw, gd = dhws[t], gds[t]
        _GRU_BWD(cp, _ptr(ext), _ptr(gdn), _ptr(rec), yr.data_ptr(), yz.data_ptr(), hw.data_ptr(), d.data_ptr(),
                 nt.data_ptr(), dhw.data_ptr(), dxws[t].data_ptr(), gd.data_ptr(), B, H)
        return dhw, gd
    return gx, step


def _backward(ctx, grads, steps, carry):
    """A layer's backward: (h0's gradient, the first step's carry, xw's
    gradient, the weight copies' gradients); steps(p, saved) gives xw's
    gradient and the step function, carry is the last step's (c_n's gradient)."""
    p = ctx.p
    sv = _restore(ctx)
    p.begin(True)
    with p.emu._quiet():
        gx, step = steps(p, sv)
        dh, carry, gw = _backward_loop(ctx, p, grads, step, _dense(carry))
    p.end(True)
    _free(ctx)
    return dh, carry, gx, gw


def _save(ctx, p, w, b, hs, sv):
    """The forward's tensors as autograd's saved tensors (kept for a backward
    that retains the graph, freed after one that does not; the outputs among
    them without a reference cycle through ctx) and the layer's plan."""
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(w, b, *hs, *[x for st in sv for x in st])
    ctx.p, ctx.T, ctx.nsv = p, len(hs), len(sv[0]) if sv else 0
    ctx.need_h0 = ctx.needs_input_grad[1]
    ctx.need_w = ctx.needs_input_grad[4]
    ctx.has_b = b is not None
    # (the plan is shared by later calls, which may take the weight copies
    # the other way (under no_grad): the forward's way is kept here)
    ctx.plain, ctx.k = p.plain, p.k
    ctx.need_b = b is not None and ctx.needs_input_grad[4 + p.k]
    emu = p.emu
    pol = emu.policy
    ctx.wbuf = _weight_buf(emu, p.wparam, pol.weight) if ctx.need_w else None
    ctx.bbuf = _weight_buf(emu, p.bparam, pol.bias) if ctx.need_b else None


def _restore(ctx):
    """ctx.w, ctx.b, ctx.hs from the saved tensors; returns the steps' saved lists."""
    saved = ctx.saved_tensors
    T, k = ctx.T, ctx.nsv
    ctx.w, ctx.b, ctx.hs = saved[0], saved[1], list(saved[2:2 + T])
    rest = saved[2 + T:]
    return [tuple(rest[t * k:(t + 1) * k]) for t in range(T)]


def _free(ctx):
    """The backward's references dropped (the saved tensors stay autograd's)."""
    ctx.hs = ctx.w = ctx.b = None


def _wname(emu, p, site, bias):
    """The name of parameter p's gradient share at GEMM site (as _handlers._gemm names it)."""
    own = _join(site, "bias" if bias else "weight")
    tied = own in emu._param_sites.get(id(p), ()) and own != emu._param_names.get(id(p))
    return own if tied else emu._param_names.get(id(p)) or own


def layer(emu, kind, xw, hid, w, path, sfx, reverse):
    """One layer in one direction over xw, the input GEMM's output (T, B, G*H):
    (its T outputs, the final hidden state) as _rnn._layer returns them."""
    w_ih, w_hh, b_ih, b_hh = w[:4]
    h0 = hid[0] if kind == "lstm" else hid
    site = _join(path, "hh" + sfx)
    with emu._quiet():
        B, H = h0.shape
        T = xw.shape[0]
        order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
        # the op-by-op first step's registrations and uses, in its order
        hu = _grad.use(h0)
        wc = emu._cast_weight(w_hh, site, False)
        bc = emu._cast_weight(b_hh, site, True) if b_hh is not None else None
        # the steps after the first take the cached copy again: through a use
        # node (its gradient buffer sums their shares) or as it is (autograd
        # adds their shares to its gradient in float32, in the order they
        # come: then the Function takes the copy once per step, and returns
        # the shares in that order); asked of the cache itself
        hit = emu._casts.get((id(w_hh), emu.policy.weight))
        plain = hit is not None and emu._cast_weight(w_hh, site, False) is hit[1]
        emu._register_site(site, (h0, wc) + ((bc,) if bc is not None else ()), ())
        wnames = (_wname(emu, w_hh, site, False), _wname(emu, b_hh, site, True) if b_hh is not None else None)
        ops = _rnn_fused.LSTM_OPS if kind == "lstm" else _rnn_fused.GRU_OPS
        _rnn_fused._sites(emu, path, sfx, ops)
        key = (kind, path, sfx, B, H, T, reverse, wnames)
        plans = emu.__dict__.setdefault("_rnn_layer_plans", {})
        p = plans.get(key)
        if p is None:
            p = plans[key] = _Plan(emu, kind, path, sfx, wnames, B, H, order)
        p.wparam, p.bparam, p.plain = w_hh, b_hh, plain
        p.k = T if plain else 1
        if kind == "lstm":
            second = _grad.use(hid[1])
        else:
            second = _grad.use(h0)
        # (the op-by-op path's xw.unbind(0), a view, with a gradient source per row)
        emu._cov.add(torch.Tensor.unbind, "view")
        fn = _LSTMLayer if kind == "lstm" else _GRULayer
        wb = (wc,) * p.k + ((bc,) * p.k if bc is not None else ())
        outs = fn.apply(p, hu, second, _grad.use(xw), *wb)
        act = emu.policy.act
        for o in outs:
            setattr(o, _FMT, act)
        _count(emu, kind, T, B, H, w_hh.shape[1])
        hys = list(outs[:T])
        last = order[-1]
        hys[last] = _grad.source(hys[last], emu._grad_fmt(act))
        if kind == "lstm":
            return hys, (hys[last], outs[T])
        return hys, hys[last]


def _count(emu, kind, T, B, H, K):
    """The coverage rows of the op-by-op steps' calls: T hidden GEMMs and T pointwise parts."""
    G = 4 if kind == "lstm" else 3
    emu._cov.count(F.linear, "gemm", T, T * B * G * H, T * B * G * H * K)
    _rnn_fused._count(emu, _rnn_fused._LSTM_CALLS if kind == "lstm" else _rnn_fused._GRU_CALLS, B * H, T)
