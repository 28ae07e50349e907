"""Ops run on real low-precision tensors, forward and backward, for the
policies whose kernels are PyTorch's CPU kernels (``"kernels": "torch_cpu"``,
bf16-amp-cpu).

Under ``torch.autocast("cpu", bfloat16)`` an op that is on neither autocast
list runs on the bf16 tensors it is given, and so does its backward: every
formula of tools/autograd/derivatives.yaml is a sequence of ATen ops on bf16
tensors, each rounding its result into bf16 (``div``'s divisor gradient
``-grad * ((self / other) / other)`` rounds three times), and the fused
backward kernels (softmax_backward_data, threshold_backward, gelu_backward,
batch_norm_backward with FP32 weights) use bf16 saved tensors (the softmax
output as the forward rounded it) and PyTorch's own CPU arithmetic
(aten/src/ATen/native/cpu/*). Writing each of these out would copy PyTorch;
instead the call runs on bfloat16 copies of its bf16-valued inputs (exact)
inside an autograd Function, under torch.autocast("cpu", bfloat16) as in the
real run (an op whose C++ body calls listed ops has them cast there), and
its backward asks autograd for the gradients of that graph: the rules are
PyTorch's by construction.
"""
import torch

from . import _grad, _ops, _rt
from ._rt import FMT_ATTR as _FMT
from ._rt import fmt_of as _fmt_of

#: formats that are torch dtypes
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
_FMT_OF_DTYPE = {v: k for k, v in DTYPES.items()}


def _torch_cpu(emu):
    """PyTorch's kernels under a torch_cpu policy that rounds to nearest (as
    PyTorch's dtype conversions do)."""
    pol = emu.policy
    return emu.kernels == "torch" and pol.torch_cpu and pol.rounding == "rne"


def applies(emu, kind, ins):
    """True when this call runs on real low-precision tensors: a torch_cpu
    policy with PyTorch's kernels, an op class the policy does not force to
    FP32, and at least one input in a format that is a torch dtype."""
    pol = emu.policy
    if not _torch_cpu(emu) or kind in pol.fp32_ops:
        return False
    low = False
    for t in ins:
        f = _fmt_of(t)
        if t.dtype != torch.float32:
            return False
        if f != "fp32":
            if f not in DTYPES:
                return False
            low = True
    return low


def inner_autocast(emu, name):
    """True when this call runs under CPU autocast itself (_ops.INNER_AUTOCAST)."""
    return name in _ops.INNER_AUTOCAST and _torch_cpu(emu) and gemm_dtype(emu) is not None


def gemm_dtype(emu):
    """The torch dtype GEMM-like calls run in under a torch_cpu policy with
    PyTorch's kernels (operands, weights and biases all cast into one format
    that is a torch dtype), else None."""
    pol = emu.policy
    if not _torch_cpu(emu) or pol.fp8_scaling:
        return None
    if not pol.fwd_in == pol.weight == pol.bias == "bf16":
        return None           # (PyTorch 1.13 has no float16 GEMM on the CPU)
    return torch.bfloat16


class _LowFn(torch.autograd.Function):
    """func on low-precision copies of its inputs; backward through that graph."""

    @staticmethod
    def forward(ctx, call, *ts):
        leaves, xs = [], []
        # (the call runs under autocast: an input that is not a leaf of the
        # model's graph goes in as a view, as autocast's cast cache keeps the
        # casts of leaves that need a gradient only, and each other cast is its own)
        # (a low-precision tensor of the model given several times, as its
        # uses: its shares go into its gradient buffer here, in argument
        # order, as autograd adds the edges of one node on one tensor)
        origins = [_grad.origin(t) if t.requires_grad else None for t in ts]
        ctx.shared = [o if o is not None and sum(p is o for p in origins) > 1 else None for o in origins]
        with torch.enable_grad():
            for t in ts:
                dt = DTYPES.get(_fmt_of(t)) if t.is_floating_point() else None
                x = t.detach().to(dt) if dt is not None else t.detach()
                if t.is_floating_point() and t.requires_grad:
                    x.requires_grad_(True)
                leaves.append(x)
                xs.append(x.view_as(x) if x.requires_grad and not t.is_leaf else x)
            out = call(*xs)
        # (one floating tensor, or a tuple of them: var_mean, std_mean)
        many = type(out) is tuple
        outs = out if many else (out,)
        if not outs or not all(isinstance(o, torch.Tensor) and o.is_floating_point() for o in outs):
            raise TypeError("not a floating tensor")
        # (kept with the node, for a backward that retains the graph: not
        # autograd's saved tensors, whose version check would refuse in-place
        # changes that the inner graph, which saved what PyTorch saves, allows)
        ctx.outs, ctx.leaves = outs, leaves
        ys = tuple(o.detach().float() for o in outs)
        return ys if many else ys[0]

    @staticmethod
    def backward(ctx, *gs):
        leaves = ctx.leaves
        # (an output the loss does not use comes with zeros, as autograd
        # materializes them: its share of the sum is zero)
        pairs = [(o, g) for o, g in zip(ctx.outs, gs) if g is not None and o.requires_grad]
        need = [i for i, x in enumerate(leaves) if x.requires_grad]
        res = [None] * len(leaves)
        if need and pairs:
            got = torch.autograd.grad([o for o, _ in pairs], [leaves[i] for i in need],
                                      [g.to(o.dtype) for o, g in pairs], allow_unused=True, retain_graph=True)
            for i, gi in zip(need, got):
                res[i] = gi.float() if gi is not None else None
        for i, buf in enumerate(ctx.shared):
            if buf is not None:
                if res[i] is not None:
                    buf.add(res[i])
                res[i] = None
        return (None,) + tuple(res)


def call(func, args, kwargs, raising=False):
    """(output float32 tensor, or tuple of them, and its format) of func run
    in the inputs' dtypes under torch.autocast("cpu", bfloat16), as the real
    run calls it: an op on neither list runs as it is given, and one whose
    C++ body calls ops that are (_ops.INNER_AUTOCAST; linalg.matrix_norm's inner
    vector_norm, which autocast runs in FP32) has them cast as autocast casts
    them. An op that hands back its input gives that input itself. None when
    PyTorch cannot run it so (mixed dtypes it rejects, an output that is not
    floating), or with raising, PyTorch's error."""
    slots, ts = _rt.tensor_slots(args, kwargs)

    def run(*xs):
        a2, kw2 = _rt.with_tensors(args, kwargs, slots, xs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            r = func(*a2, **kw2)
        first = r[0] if type(r) is tuple and r else r
        run.dtype = first.dtype if isinstance(first, torch.Tensor) else None
        run.same = next((i for i, x in enumerate(xs) if r is x), None)
        return r
    try:
        y = _LowFn.apply(run, *ts)
    except (RuntimeError, TypeError):
        if raising:             # (PyTorch refuses the call under autocast: its own error)
            raise
        return None
    if run.same is not None:        # (the op handed back its input: that input)
        t = ts[run.same]
        return t, _fmt_of(t)
    fmt = _FMT_OF_DTYPE.get(run.dtype, "fp32")
    if fmt != "fp32":
        for t in (y if type(y) is tuple else (y,)):
            setattr(t, _FMT, fmt)
    return y, fmt
