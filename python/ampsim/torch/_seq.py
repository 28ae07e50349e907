"""An MLP as one emulated unit: an nn.Sequential (or a subclass that keeps its
forward, as torchvision's MLPBlock and MLP) of nn.Linear layers, GELU or ReLU
activations and dropouts that draw nothing.

Op by op, each child is a module call and an emulated op: the function mode's
dispatch, an autograd Function with its rounding, a gradient source per
output. Here the chain runs as one autograd Function (_SeqFn), as _attn.py
runs self-attention:
  - the forward calls, in each child's frame (so its sites and names are the
    op-by-op path's), the very rules the op-by-op path applies: _GemmFn's
    forward for a Linear (its operand and output roundings, its weight casts),
    the activation on the rounded input and _RoundFn's forward on its output;
    a dropout that draws nothing hands its input on, as PyTorch's does;
  - the backward runs the same rules' backward in reverse, with autograd's
    derivative of the activation between them (gelu_backward on its input,
    threshold_backward on the ReLU's output, as GeluBackward0 and
    ReluBackward0 call them).
Each intermediate output has one use (the next child), so its gradient passes
as it comes in both paths; the two give the same bits (tests compare them).

The unit serves a call (run() returns True) when:
  - the Sequential is the model's (in scope, its frame on top), its children
    are exactly nn.Linear (parameter weights), nn.GELU, nn.ReLU and nn.Dropout
    with p = 0 or in eval, every activation follows a Linear, none has hooks,
    and no module hooks but the emulation's are registered;
  - the policy rounds elementwise outputs into its activation format with
    PyTorch's kernels (kernels="torch", not a torch_cpu policy, no FP8
    scaling);
  - gradients are enabled (on a step with statistics the rules log each
    child's roundings under the op-by-op path's names, as they do op by op;
    the first call of each key, on any step, runs op by op and records it);
  - the input is a float32 CPU tensor of 2 or more dimensions;
  - the same call (shapes, children) ran op by op once in this emulation: its
    coverage rows were recorded then and are added again at each call.
Every other call runs op by op. ``ENABLED`` switches the unit off.
"""
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _attn, _coverage, _grad
from ._functions import _GemmFn, _RoundFn
from ._rt import FMT_ATTR as _FMT
from ._rt import fmt_of as _fmt_of
from ._scope import Frame

ENABLED = True
_MOD = nn.modules.module


def _child_kind(c):
    """The child's part in the unit ("linear", "gelu", "relu", "pass"), or None."""
    t = type(c)
    if c._forward_hooks or c._forward_pre_hooks or c._backward_hooks:
        return None
    if t is nn.Linear:
        ok = isinstance(c.weight, nn.Parameter) and (c.bias is None or isinstance(c.bias, nn.Parameter))
        return "linear" if ok else None
    if t is nn.GELU:
        return "gelu"
    if t is nn.ReLU:
        return "relu"
    if t is nn.Dropout and (c.p == 0 or not c.training):
        return "pass"
    return None


def _plan(emu, seq, x):
    """[(child, kind, path)] of a call the unit serves, else None."""
    pol = emu.policy
    if not ENABLED or emu.kernels != "torch" or pol.torch_cpu or pol.fp8_scaling or pol.act == "fp32" \
            or "elementwise" in pol.fp32_ops or not torch.is_grad_enabled():
        return None
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() < 2 or not x.is_cpu:
        return None
    if len(_MOD._global_forward_pre_hooks) != 1 or len(_MOD._global_forward_hooks) != 1 \
            or _MOD._global_backward_hooks:
        return None
    paths = emu._scope.paths
    me = paths.get(id(seq))
    if me is None or not emu._stack or emu._stack[-1].path != me[0] or emu._scope.foreign:
        return None
    plan, after_linear = [], False
    for c in seq._modules.values():
        kind = _child_kind(c) if c is not None else None
        info = paths.get(id(c))
        if kind is None or info is None or kind in ("gelu", "relu") and not after_linear:
            return None
        after_linear = kind == "linear" or kind == "pass" and after_linear
        plan.append((c, kind, info[0]))
    return plan if any(k == "linear" for _, k, _ in plan) else None


def _key(plan, x):
    sig = []
    for c, kind, path in plan:
        if kind == "linear":
            sig.append((kind, path, c.in_features, c.out_features, c.bias is None))
        else:
            sig.append((kind, path, getattr(c, "approximate", None)))
    return tuple(sig), tuple(x.shape), x.requires_grad


def run(emu, seq, x, orig):
    """seq(x) (orig: Sequential's own forward): as one unit where it serves,
    else op by op (the first call of a key records its coverage rows). The
    unit's own torch calls run with the mode off the stack, as inside the
    mode's handlers."""
    if emu._quiet_depth or threading.get_ident() != emu._scope.thread:     # (another thread's call: foreign)
        return orig(seq, x)
    with emu._quiet():
        plan = _plan(emu, seq, x)
        key = _key(plan, x) if plan is not None else None
    rows = emu._seq_rows.get(key) if key is not None else None
    if plan is None:
        return orig(seq, x)
    if rows is None:
        out, emu._seq_rows[key] = _coverage.recorded(emu, orig, seq, x)
        return out
    with emu._quiet():
        return _unit(emu, plan, x, rows)


class _Unit:
    __slots__ = ("emu", "c", "kinds", "saved", "approx", "slots")


def _unit(emu, plan, x, rows):
    (x,), _ = _grad.uses((x,), {})
    u = _Unit()
    n = len(plan)
    u.emu, u.c, u.kinds, u.saved, u.approx = emu, [None] * n, [k for _, k, _ in plan], [None] * n, [None] * n
    params, slots = [], []
    up = x.requires_grad        # (whether the tensor reaching a child needs its gradient)
    h = x
    for i, (c, kind, path) in enumerate(plan):
        if kind == "pass":
            continue
        emu._stack.append(Frame(path, True))
        try:
            if kind == "linear":
                h, ts, kinds = _attn._gemm(emu, u, i, F.linear, "linear", (h, c.weight, c.bias), (up,))
                at = [j for j, k in enumerate(kinds) if k in ("w", "b")]
                slots.append((i, at))
                params += [ts[j] for j in at]
                up = up or any(ts[j].requires_grad for j in at)
            else:
                h = _activation(emu, u, i, c, kind, h, up)
        finally:
            emu._stack.pop()
    u.slots = slots
    emu._cov.merge(rows)
    fmt = _fmt_of(h)
    out = _SeqFn.apply(u, h, x, *params)
    setattr(out, _FMT, fmt)
    return _grad.sources(out, emu._grad_fmt)


def _activation(emu, u, i, c, kind, h, need):
    """The activation's output in its input's format (the elementwise rule:
    PyTorch's op, then _RoundFn's forward), its derivative's operand saved."""
    site = emu._out_site(kind)
    with torch.no_grad():
        if kind == "gelu":
            u.approx[i] = c.approximate
            out = F.gelu(h, approximate=c.approximate)
            u.saved[i] = h
        else:
            out = torch.relu(h)
            u.saved[i] = out
    fmt = _fmt_of(h)
    c_ = u.c[i] = _attn._Ctx((need,))
    # (GELU's output is fresh and not saved: rounded in place; ReLU's is saved as it is)
    y = _RoundFn.forward(c_, out, emu, site + ".out", fmt, emu.policy.act_grad, True, kind == "gelu")
    setattr(y, _FMT, fmt)
    return y


class _SeqFn(torch.autograd.Function):
    """The unit's node: forward hands on what _unit() computed; backward runs
    the children's rules in reverse (see the docstring)."""

    @staticmethod
    def forward(ctx, u, out, x, *params):
        ctx.u = u
        ctx.save_for_backward(x, *params)      # (autograd's check of in-place changes)
        _grad.prepare(ctx, out)
        return out.detach()

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors                       # noqa: B018 (raises when an input changed in place)
        u = ctx.u
        g = _grad.begin(ctx, g)
        grads = {}
        with u.emu._quiet():
            for i in range(len(u.kinds) - 1, -1, -1):
                kind = u.kinds[i]
                if kind == "linear":
                    r = _GemmFn.backward(u.c[i], g)[4:]
                    grads[i] = r
                    g = r[0]
                elif kind in ("gelu", "relu"):
                    g = _RoundFn.backward(u.c[i], g)[0]
                    if g is not None:
                        g = (torch.ops.aten.gelu_backward(g, u.saved[i], approximate=u.approx[i]) if kind == "gelu"
                             else torch.ops.aten.threshold_backward(g, u.saved[i], 0))
                if g is None:
                    break
        res = []
        for i, at in u.slots:
            r = grads.get(i)
            res += [r[j] if r is not None else None for j in at]
        return (None, None, g) + tuple(res)


_grad.MERGED.add(_SeqFn._backward_cls)
