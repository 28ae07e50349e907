"""Self-attention as one emulated unit: F.multi_head_attention_forward with
one packed input projection (query is key is value), as nn.MultiheadAttention,
nn.TransformerEncoderLayer and torchvision's VisionTransformer call it.

Op by op (_mha.py), attention is about 25 emulated ops, each paying the
function mode's dispatch, and a gradient source node per view. Here the
same computation runs as one autograd Function (_AttnFn):
  - the forward is torch 1.13's body (torch/nn/functional.py) for this case,
    with its emulated ops (the two projections, q / sqrt(head_dim), the two
    attention products) run by the very Functions' forward rules the op-by-op
    path applies (_GemmFn, _RoundFn), called as plain functions on a
    stand-in context (_Ctx), with the same sites, names and formats; its views
    and its FP32 ops (masks, softmax, dropout) are plain torch calls;
  - the backward is autograd's for that body: the same Functions' backward
    rules in reverse, and between them the derivatives autograd applies to
    the views (reshape, transpose, SplitBackward's cat), the softmax
    (_softmax_backward_data), the dropout (times its noise) and the averaged
    weights.
Each view's output inside the body has one use, so its gradient passes
through unrounded in both paths; every rounding is the op-by-op path's, at
the same point, so the two give the same bits (tests compare them).

The unit serves a call when (key() is not None):
  - the policy keeps softmax in FP32 and runs no per-tensor FP8 scaling and
    no torch_cpu kernels (fp16-amp, bf16-amp, fp8-e4m3), kernels="torch";
  - on a step with statistics, the masks are float (or none) and the call
    returns no weights: the unit then also logs the softmax and dropout
    outputs, as the op-by-op path does; other such steps run op by op;
  - PyTorch is 1.13 (the body written out here is that version's);
  - query is key is value, a 3-D batch, the weights and biases parameters
    (or no biases), with the packed in_proj_weight, no
    bias_k/bias_v, add_zero_attn or static keys; masks that are bool or
    float and need no gradient; dropout below 1;
  - the same call (shapes, masks, options) ran op by op once in this
    emulation: its coverage rows were recorded then (_coverage.recorded) and
    are added again at each call (the account stays what the op-by-op path
    writes).
Every other call runs op by op. ``ENABLED`` switches the unit off (tests
compare the two)."""
import math

import torch
import torch.nn.functional as F

from . import _grad
from ._functions import _GemmFn, _RoundFn
from ._rt import FMT_ATTR as _FMT

ENABLED = True
_set_grad = torch._C._set_grad_enabled
_TORCH_OK = torch.__version__.startswith("1.13")


class _Ctx:
    """What the Functions' forward and backward rules read of autograd's ctx."""

    def __init__(self, needs):
        self.needs_input_grad = needs

    def save_for_backward(self, *ts):
        self.saved_tensors = ts

    def set_materialize_grads(self, value):
        pass


def _mask_sig(m):
    return None if m is None else (m.dtype, tuple(m.shape))


def serves(emu):
    """Whether the unit serves calls under this emulation's policy and kernels."""
    if not (ENABLED and _TORCH_OK) or emu.kernels != "torch":
        return False
    pol = emu.policy
    return not (pol.act == "fp32" or pol.fp8_scaling or emu._cpu_lists or "softmax" not in pol.fp32_ops)


def key(emu, p):
    """The unit's key for a call with bound arguments p (their defaults
    applied), or None when the unit does not serve it (see the docstring)."""
    if not serves(emu):
        return None
    x = p["query"]
    if not (x is p["key"] and x is p["value"]) or not isinstance(x, torch.Tensor) or x.dim() != 3:
        return None
    if p["use_separate_proj_weight"] or p["bias_k"] is not None or p["bias_v"] is not None \
            or p["add_zero_attn"] or p["static_k"] is not None or p["static_v"] is not None:
        return None
    w, H = p["in_proj_weight"], p["num_heads"]
    L, N, E = x.shape
    if not isinstance(H, int) or H <= 0 or E != p["embed_dim_to_check"] or E % H or w is None \
            or tuple(w.shape) != (3 * E, E) or x.dtype != torch.float32:
        return None
    # (the weights are the module's parameters: a weight computed by the model
    # is an activation operand, whose gradient the op-by-op path forms)
    for n in ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias"):
        t = p[n]
        if not isinstance(t, torch.nn.Parameter) and (t is not None or n.endswith("weight")):
            return None
    dp = p["dropout_p"] if p["training"] else 0.0
    if not 0.0 <= dp < 1.0:
        return None
    am, kpm = p["attn_mask"], p["key_padding_mask"]
    for m in (am, kpm):
        if m is not None and (not isinstance(m, torch.Tensor) or m.requires_grad
                              or not (m.dtype == torch.bool or m.dtype == torch.float32)):
            return None
    if am is not None and tuple(am.shape) not in ((L, L), (N * H, L, L)):
        return None
    if kpm is not None and (tuple(kpm.shape) != (N, L) or kpm.dtype != torch.bool and am is not None):
        return None
    need_w = bool(p["need_weights"])
    # (last: whether the unit also serves the steps with statistics, where the
    # op-by-op path logs each FP32 op of the body: softmax and dropout here;
    # a bool or padding mask's and the averaged weights' ops are not written out)
    stats = kpm is None and (am is None or am.dtype == torch.float32) and not need_w
    return (tuple(x.shape), H, _mask_sig(am), _mask_sig(kpm), need_w, bool(p["average_attn_weights"]),
            dp > 0.0, p["in_proj_bias"] is None, p["out_proj_bias"] is None, stats)


def _mask(am, kpm, N, H, L):
    """The additive mask of torch 1.13's body (None when there is none)."""
    if am is not None and am.dim() == 2:
        am = am.unsqueeze(0)
    if kpm is not None:
        kpm = kpm.view(N, 1, 1, L).expand(-1, H, -1, -1).reshape(N * H, 1, L)
        if am is None:
            am = kpm
        elif am.dtype == torch.bool:
            am = am.logical_or(kpm)
        else:
            am = am.masked_fill(kpm, float("-inf"))
    if am is not None and am.dtype == torch.bool:
        new = torch.zeros_like(am, dtype=torch.float32)
        new.masked_fill_(am, float("-inf"))
        am = new
    return am


def _fmt(t, f):
    setattr(t, _FMT, f)
    return t


class _Unit:
    """One call's state: shapes, the rules' contexts and what the backward reads."""
    __slots__ = ("emu", "L", "N", "E", "H", "scale", "dp", "noise", "P", "avg", "c", "slots", "logged")


def _gemm(emu, u, i, func, name, args, acts):
    """A GEMM of the body through _GemmFn's forward rule (its weights cast
    under the caller's grad mode, as the op-by-op call casts them); acts:
    whether each activation operand, in order, needs its gradient."""
    site, call, kinds, ts = emu._gemm_setup(func, name, args, {})
    grad = torch.is_grad_enabled()
    needs, j = [False] * 4, 0
    for t, k in zip(ts, kinds):
        if k == "act":
            needs.append(grad and acts[j])
            j += 1
        else:
            needs.append(grad and t.requires_grad)
    c = u.c[i] = _Ctx(tuple(needs))
    _set_grad(False)                # (torch.no_grad(), without its context object)
    try:
        y = _GemmFn.forward(c, emu, site, call, kinds, *ts)
    finally:
        _set_grad(grad)
    return _fmt(y, emu.policy.act), ts, kinds


def _logged(emu, u, i, op, y):
    """An FP32 output y of the body's op under the _RoundFn the op-by-op path
    puts it behind on a step with statistics."""
    c = u.c[i] = _Ctx((True,))
    return _RoundFn.forward(c, y, emu, emu._out_site(op) + ".out", "fp32", "fp32", True)


def run(emu, p, rows):
    """The call (bound arguments p, key(p) not None, coverage rows recorded)
    as one unit: (output, averaged weights or None), as the body returns them."""
    pol, x = emu.policy, p["query"]
    (x,), _ = _grad.uses((x,), {})
    act = pol.act
    u = _Unit()
    u.emu, u.c = emu, [None] * 7
    L, N, E = x.shape
    H = p["num_heads"]
    hd = E // H
    u.L, u.N, u.E, u.H = L, N, E, H
    need = torch.is_grad_enabled() and (x.requires_grad or any(
        t is not None and t.requires_grad for t in (p["in_proj_weight"], p["in_proj_bias"],
                                                  p["out_proj_weight"], p["out_proj_bias"])))
    y, ts1, k1 = _gemm(emu, u, 0, F.linear, "linear", (x, p["in_proj_weight"], p["in_proj_bias"]),
                       (x.requires_grad, need))
    with torch.no_grad():
        q, k, v = y.chunk(3, dim=-1)
        q = _fmt(q.contiguous().view(L, N * H, hd).transpose(0, 1), act)
        k = _fmt(k.contiguous().view(L, N * H, hd).transpose(0, 1), act)
        v = _fmt(v.contiguous().view(L, N * H, hd).transpose(0, 1), act)
        am = _mask(p["attn_mask"], p["key_padding_mask"], N, H, L)
        u.dp = p["dropout_p"] if p["training"] else 0.0
        u.scale = math.sqrt(hd)
        site = emu._out_site("div")
        c = u.c[1] = _Ctx((need,))
        qs = _fmt(_RoundFn.forward(c, q / u.scale, emu, site + ".out", act, pol.act_grad, True, True), act)
        kt = _fmt(k.transpose(-2, -1), act)
    if am is not None:
        s, _, _ = _gemm(emu, u, 2, torch.baddbmm, "baddbmm", (am, qs, kt), (False, need, need))
    else:
        s, _, _ = _gemm(emu, u, 2, torch.bmm, "bmm", (qs, kt), (need, need))
    with torch.no_grad():
        P = u.P = s.softmax(-1)
        # (a step with statistics logs the FP32 outputs of softmax and dropout)
        u.logged = emu._stats_due()
        if u.logged:
            P = _logged(emu, u, 5, "softmax", P)
        u.noise = None
        if u.dp > 0.0:
            u.noise = torch.empty_like(P).bernoulli_(1 - u.dp)
            u.noise.div_(1 - u.dp)
            P = P * u.noise
            if u.logged:
                P = _logged(emu, u, 6, "dropout", P)
    o, _, _ = _gemm(emu, u, 3, torch.bmm, "bmm", (P, v), (need, need))
    with torch.no_grad():
        o = _fmt(o.transpose(0, 1).contiguous().view(L * N, E), act)
    out, ts5, k5 = _gemm(emu, u, 4, F.linear, "linear", (o, p["out_proj_weight"], p["out_proj_bias"]),
                         (need, need))
    u.avg = bool(p["average_attn_weights"])
    weights = None
    if p["need_weights"]:
        with torch.no_grad():
            weights = P.view(N, H, L, L)
            if u.avg:
                weights = weights.sum(dim=1) / H
    # the unit's inputs: the query and the weight casts (their gradients go
    # to the casts' nodes, as the op-by-op GEMMs' do)
    params = [t for t, kd in zip(ts1, k1) if kd in ("w", "b")] + [t for t, kd in zip(ts5, k5) if kd in ("w", "b")]
    u.slots = ([i for i, kd in enumerate(k1) if kd in ("w", "b")], [i for i, kd in enumerate(k5) if kd in ("w", "b")])
    emu._cov.merge(rows)
    res = _AttnFn.apply(u, out.view(L, N, E), weights, x, *params)
    if weights is None:
        res = (res[0], None)
    outp = _grad.sources(_fmt(res[0], act), emu._grad_fmt)
    return outp, res[1]


class _AttnFn(torch.autograd.Function):
    """The unit's node: forward hands on what run() computed; backward is
    autograd's backward of the body (see the docstring)."""

    @staticmethod
    def forward(ctx, u, out, weights, x, *params):
        ctx.u = u
        ctx.save_for_backward(x, *params)      # (autograd's check of in-place changes)
        _grad.prepare(ctx, out)
        if weights is None:
            return out.detach(), None
        return out.detach(), weights.detach()

    @staticmethod
    def backward(ctx, g, gw):
        ctx.saved_tensors                       # noqa: B018 (raises when an input changed in place)
        u = ctx.u
        emu = u.emu
        g = _grad.begin(ctx, g)
        L, N, E, H = u.L, u.N, u.E, u.H
        hd = E // H
        c = u.c
        with emu._quiet():
            r5 = _GemmFn.backward(c[4], g.reshape(L * N, E))[4:]
            go = r5[0]
            go = go.reshape(L, N * H, hd).transpose(0, 1) if go is not None else None
            r4 = _GemmFn.backward(c[3], go)[4:]
            gp, gv = r4
            if gw is not None:
                t = gw / H if u.avg else gw
                if u.avg:
                    t = t.unsqueeze(1).expand(N, H, L, L)
                t = t.reshape(N * H, L, L)
                gp = t if gp is None else gp + t
            if u.noise is not None:
                if u.logged:
                    gp = _RoundFn.backward(c[6], gp)[0]
                gp = gp * u.noise if gp is not None else None
            if u.logged:
                gp = _RoundFn.backward(c[5], gp)[0]
            gs = torch._softmax_backward_data(gp, u.P, -1, torch.float32) if gp is not None else None
            r3 = _GemmFn.backward(c[2], gs)[4:]
            gqs, gkt = r3[-2], r3[-1]
            gq = _RoundFn.backward(c[1], gqs)[0] / u.scale
            pieces = []
            for t in (gq, gkt.transpose(-2, -1) if gkt is not None else None, gv):
                pieces.append(t.transpose(0, 1).reshape(L, N, E) if t is not None else torch.zeros(L, N, E))
            r1 = _GemmFn.backward(c[0], torch.cat(pieces, -1))[4:]
        s1, s5 = u.slots
        return (None, None, None, r1[0]) + tuple(r1[i] for i in s1) + tuple(r5[i] for i in s5)


_grad.MERGED.add(_AttnFn._backward_cls)
