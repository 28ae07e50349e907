"""A step's weight casts in one autograd node.

Each GEMM casts its weight and bias into their formats once per step
(emulate._cast_weight: a _CastFn node and a foreign call per parameter,
most of its cost autograd's and the rule's Python). On a step without
statistics, the first cast that the step asks for casts at once every
parameter that the previous step cast (the plan), in one _CastAllFn node:

- forward: each parameter rounded exactly as _CastFn rounds it (emulate._round,
  with its name, so stochastic rounding draws the same stream); a copy holds
  the format and, when it requires grad, a gradient buffer of its own, which
  the node's backward takes, as a MERGED node's buffer (_grad.py);
- backward: each copy's gradient handed on as _CastFn hands it (one GEMM's
  share, rounded already, as it came; a sum of shares rounded into the
  weight-gradient format). A copy that no GEMM asked for this step (a
  parameter the model did not use) passes no gradient (None), so the
  parameter's .grad is untouched, as without emulation.

A copy is handed out by _cast_weight from the step's cache as the single
cast's would be; its non-finite count is noted then, when it is asked for,
so a parameter the step does not use notes nothing. Steps with statistics
(the batch's foreign call forms none, and a parameter the step does not use
would get a row), FP8 scaling (whose amax histories move at each cast), and
casts under no_grad keep one node per cast. The parameters' AccumulateGrad nodes run when this node
does, after every GEMM's backward, instead of after each cast's; the
gradients are the same. ``ENABLED`` switches the batch off (tests, comparison).
"""
import torch

from . import _grad, _rt
from ._functions import _SHARE
from ._rt import FMT_ATTR as _FMT


ENABLED = True


class Slot:
    """A copy of the step's batch: its plan item (p, fmt, name, saturate) and
    its count of non-finite values, noted when a GEMM first asks for it."""
    __slots__ = ("item", "nf")

    def __init__(self, item, nf):
        self.item, self.nf = item, nf


def plan_of(seen):
    """The next step's plan from the casts this step made (or None)."""
    return list(seen.values()) if seen else None


def run(emu):
    """Cast the plan's parameters (emu._cast_plan: [(p, fmt, name, saturate)])
    in one node into emu._casts, when the step allows it (see the docstring)."""
    plan, emu._cast_plan = emu._cast_plan, None
    pol = emu.policy
    if not (ENABLED and plan) or pol.fp8_scaling or emu._stats_due() or not torch.is_grad_enabled():
        return
    items = [it for it in plan if (id(it[0]), it[1]) not in emu._casts]
    if not items:
        return
    nfs = []
    outs = _CastAllFn.apply(emu, items, nfs, *[it[0] for it in items])
    gfmt = pol.weight_grad
    for i, (it, w, nf) in enumerate(zip(items, outs, nfs)):
        p, fmt = it[0], it[1]
        setattr(w, _FMT, fmt)
        if w.requires_grad and gfmt != "fp32":
            _grad.held(w, gfmt, i)
        emu._casts[(id(p), fmt)] = (p._version, w, Slot(it, nf))


def asked(emu, slot):
    """A copy of the batch handed out: its non-finite count noted, as the
    single cast notes it."""
    if slot.nf and emu._nf is None:
        emu._nf = (slot.item[2], "forward", slot.nf)
    slot.nf = 0


def _round_one(emu, p, fmt, name, sat):
    """(copy, non-finite count) of one parameter, as _CastFn rounds it."""
    nf = []
    y = emu._round(p, fmt, name, "weight", saturate=sat, fp8_role="weight", check=nf)
    return y, nf[0] if nf else 0


class _CastAllFn(torch.autograd.Function):
    """The casts of a step's planned parameters (see the docstring)."""

    @staticmethod
    def forward(ctx, emu, items, nfs, *ps):
        """nfs: filled with each copy's count of non-finite values."""
        ctx.set_materialize_grads(False)
        ctx.emu, ctx.gfmt = emu, emu.policy.weight_grad
        ctx.bufs = [None] * len(ps)
        mode = emu.policy.rounding
        # one foreign call for the plain casts (amp_round_f32_many); a cast
        # into FP32, a stochastic one (its draws keyed by its name) or one of
        # an odd tensor through the single cast's rounding
        many = [i for i, (p, it) in enumerate(zip(ps, items)) if mode != "sr" and it[1] != "fp32"
                and p.dtype == torch.float32 and p.is_contiguous() and not p.is_sparse]
        done = dict(zip(many, _rt.round_many([ps[i] for i in many], [items[i][1] for i in many], mode,
                                             [items[i][3] for i in many], emu.policy.sr_bits))) if many else {}
        outs = []
        for i, (p, (_, fmt, name, sat)) in enumerate(zip(ps, items)):
            y, nf = done.get(i) or _round_one(emu, p, fmt, name, sat)
            outs.append(y)
            nfs.append(nf)
        frozen = [y for p, y in zip(ps, outs) if not p.requires_grad]
        if frozen:
            ctx.mark_non_differentiable(*frozen)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *gs):
        emu, gfmt = ctx.emu, ctx.gfmt
        res = [None, None, None]
        with emu._quiet():
            for i, g in enumerate(gs):
                buf = ctx.bufs[i]
                if buf is not None:
                    g = buf.through(g)
                if g is not None and getattr(g, _SHARE, None) != gfmt:
                    # (a sum of several GEMMs' shares: rounded again)
                    g = emu._round(g, gfmt, None, "weight_grad")
                res.append(g)
        return tuple(res)
