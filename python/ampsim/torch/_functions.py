"""The autograd Functions of ampsim.torch: a weight cast, an op output
rounding, a GEMM-like op and the softmax cross-entropy, each rounding its
gradients in backward as the C emulator does."""
import torch

from . import _gemm_grad, _grad, _kernels, _lowp, _rt
from ._rt import fmt_of as _fmt_of


#: attribute of a weight-gradient share that a GEMM rounded into this format:
#: the cast's backward hands a lone share on as it is (rounding it again
#: would give the same bits)
_SHARE = "_ampsim_share_fmt"


class _CastFn(torch.autograd.Function):
    """A weight cast into its format; backward rounds the (summed) weight gradient."""

    @staticmethod
    def forward(ctx, w, emu, name, fmt, gfmt, saturate):
        ctx.emu, ctx.name, ctx.gfmt = emu, name, gfmt
        y = emu._round(w, fmt, name, "weight", saturate=saturate, fp8_role="weight")
        _grad.prepare(ctx, y)
        return y

    @staticmethod
    def backward(ctx, g):
        g = _grad.begin(ctx, g)
        if getattr(g, _SHARE, None) == ctx.gfmt:
            return g, None, None, None, None, None      # one GEMM's share, rounded into gfmt already
        emu = ctx.emu
        with emu._quiet():
            # the GEMMs rounded and logged their shares; a sum of several is rounded again
            return emu._round(g, ctx.gfmt, None, "weight_grad"), None, None, None, None, None


class _RoundFn(torch.autograd.Function):
    """An op output rounded into fmt; backward rounds its gradient into gfmt."""

    @staticmethod
    def forward(ctx, x, emu, name, fmt, gfmt, check=True, inplace=False):
        """(inplace: x is a fresh tensor only the caller holds, rounded into
        itself; the emulated units pass it, autograd's apply never does)"""
        ctx.emu, ctx.name, ctx.gfmt = emu, name, gfmt
        y = emu._round(x, fmt, name, "act", check=check, inplace=inplace)
        _grad.prepare(ctx, y)
        return y

    @staticmethod
    def backward(ctx, g):
        g = _grad.begin(ctx, g)
        emu = ctx.emu
        with emu._quiet():
            return emu._round(g, ctx.gfmt, ctx.name + ".grad", "act_grad"), None, None, None, None, None, None


_BWD_ORDER = {"w": 0, "b": 1}
_ORDERS = {}


def _bwd_order(kinds, need):
    """The operands of need (indices) in the order their gradients are
    rounded: weight, bias, then the others, each group in argument order
    (kept per (kinds, need))."""
    key = (kinds, tuple(need))
    o = _ORDERS.get(key)
    if o is None:
        o = _ORDERS[key] = tuple(sorted(need, key=lambda i: _BWD_ORDER.get(kinds[i], 2)))
    return o


class _GemmFn(torch.autograd.Function):
    """A GEMM-like op: rounded operands, FP32 op, one output rounding."""

    @staticmethod
    def forward(ctx, emu, site, call, kinds, *ts):
        pol = emu.policy
        ctx.bias_rows = call.op in ("linear", "addmm") and emu.kernels == "ampsim"
        ctx.wnames = call.wnames
        leaves = []
        pre = []             # operands cast from an FP32 tensor: dX is rounded first
        casts = []
        for i, (t, k) in enumerate(zip(ts, kinds)):
            if k == "act":
                c = emu._operand(t, site, i, call.act_only)
                pre.append(c is not t and _fmt_of(t) == "fp32")
                t = c
            else:
                pre.append(False)
            casts.append(t)
        # torch_cpu policies: the GEMM itself on real low-precision tensors
        # (oneDNN's bf16 kernels, forward and backward, as under CPU autocast)
        dt = _lowp.gemm_dtype(emu)
        # a common form: the forward without a graph, the backward written out (_gemm_grad.py)
        form = None
        if dt is None and (call.positional or call.geometry is not None):
            form = _gemm_grad.plan(call.op, casts, call.geometry)
        ctx.form, ctx.geometry = form, call.geometry
        if form is not None:
            out = call(*casts)
            # autograd's saved tensors (freed after a backward that does not
            # retain the graph, checked for in-place changes): the operands
            # the backward reads; the others are kept for their shapes
            read = _gemm_grad.SAVED[form]
            ctx.save_for_backward(*[t if i in read else None for i, t in enumerate(casts)])
            ctx.others = {i: t for i, t in enumerate(casts) if i not in read}
        else:
            prev = torch.is_grad_enabled()          # (torch.enable_grad(), without its context object)
            torch._C._set_grad_enabled(True)
            try:
                for i, t in enumerate(casts):
                    leaf = t.detach() if dt is None else t.detach().to(dt)
                    leaves.append(leaf.requires_grad_(ctx.needs_input_grad[4 + i]))
                out = call(*leaves)
                if dt is not None:
                    out = out.float()
            finally:
                torch._C._set_grad_enabled(prev)
            # (kept with the node for a backward that retains the graph; the
            # inner graph checks the in-place changes PyTorch checks)
            ctx.out, ctx.leaves = out, leaves
        ctx.emu, ctx.site, ctx.kinds, ctx.pre = emu, site, kinds, pre
        ctx.fp8 = pol.fp8_scaling and not call.act_only
        if dt is not None and emu._stats_due("act"):
            # the output's statistics: the FP32 product that the bf16 kernel rounded
            with torch.no_grad():
                emu._round(call(*[t.detach() for t in casts]), pol.act, site + ".out", "act")
            y = emu._round(out, pol.act, None, "act")
        else:
            # (the written-out form's product is fresh and not saved: rounded in place)
            y = emu._round(out, pol.act, site + ".out", "act", inplace=form is not None)
        _grad.prepare(ctx, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        gy = _grad.begin(ctx, gy)
        emu, pol, site = ctx.emu, ctx.emu.policy, ctx.site
        with emu._quiet():
            g = emu._round(gy, pol.act_grad, site + ".out.grad", "act_grad")
            # (a product of activations under FP8 scaling keeps act_grad operands)
            if ctx.fp8 or pol.bwd_in != pol.act_grad and not pol.fp8_scaling:
                g = emu._round(g, pol.bwd_in, site + ".out.grad.input", "act_grad",
                               saturate=pol.saturate, fp8_role="grad")
            nin = ctx.needs_input_grad[4:]
            need = [i for i, n in enumerate(nin) if n]
            res = [None] * len(nin)
            if need:
                if ctx.form is not None:
                    ts = [ctx.others.get(i, t) for i, t in enumerate(ctx.saved_tensors)]
                    gs = dict(enumerate(_gemm_grad.grads(ctx.form, ts, g, nin, ctx.geometry)))
                else:
                    # (the inner graph is kept for a backward that retains the outer one)
                    out, leaves = ctx.out, ctx.leaves
                    gs = torch.autograd.grad(out, [leaves[i] for i in need], g, allow_unused=True,
                                             retain_graph=True)
                    gs = dict(zip(need, (x.float() if x is not None else None for x in gs)))
                # the C emulator's order: weight gradient, bias gradient, input gradient
                for i in _bwd_order(ctx.kinds, need):
                    gi, k = gs[i], ctx.kinds[i]
                    if gi is None:
                        continue
                    if k == "b" and ctx.bias_rows and gi.dim() == 1:
                        # a linear bias: the sum over rows in double, rounded once to
                        # float (as the C emulator forms it)
                        gi = g.reshape(-1, gi.shape[0]).sum(0, dtype=torch.float64).float()
                    if k in ("w", "b"):
                        # this site's share of the weight gradient (a weight used by
                        # several sites: the cast's backward rounds the sum again)
                        # (a weight's gradient is a fresh product: rounded in place)
                        gi = emu._round(gi, pol.weight_grad, ctx.wnames[i] + ".grad", "weight_grad",
                                        inplace=k == "w")
                        setattr(gi, _SHARE, pol.weight_grad)
                    elif ctx.pre[i] and pol.act_grad != "fp32":
                        # (a product, fresh, unless it is g or part of it: baddbmm's added term)
                        fresh = gi._base is None and gi.data_ptr() != g.data_ptr()
                        gi = emu._round(gi, pol.act_grad, None, "act_grad", inplace=fresh)
                    res[i] = gi
        return (None, None, None, None) + tuple(res)


_grad.MERGED.update((_CastFn._backward_cls, _RoundFn._backward_cls, _GemmFn._backward_cls))


class _XentFn(torch.autograd.Function):
    """Softmax cross-entropy with mean reduction as the C emulator forms it
    (sim/layer_loss.c): log-sum-exp and mean in double, rounded once to float;
    gradient (p - onehot(y)) * (g / B) in float32 from the float softmax p,
    or, torch_cpu, in the float32 arithmetic of PyTorch's CPU log_softmax and
    nll_loss backward (amp_xent_grad_torchcpu)."""

    @staticmethod
    def forward(ctx, z, y, torch_cpu=False):
        z64 = z.detach().double()
        m = z64.max(1, keepdim=True).values
        lse = m + torch.log(torch.exp(z64 - m).sum(1, keepdim=True))
        ctx.torch_cpu = torch_cpu
        ctx.p = z.detach().contiguous() if torch_cpu else torch.exp(z64 - lse).float()
        ctx.y = y
        B = z.shape[0]
        return ((lse.squeeze(1) - z64.gather(1, y.view(-1, 1)).squeeze(1)).sum() / B).float()

    @staticmethod
    def backward(ctx, g):
        p, y = ctx.p, ctx.y
        if ctx.torch_cpu:
            return _kernels.xent_grad_torchcpu(p, y, float(g)), None, None
        w = g.float() / float(p.shape[0])
        out = p * w
        rows = torch.arange(p.shape[0])
        out[rows, y] = (p[rows, y] - 1.0) * w
        return out, None, None


# ---- backward rules that read the rounded output (CUDA-list policies) ----------------
# Under autocast the saved output of tanh, sigmoid, exp, sqrt, softmax and
# log_softmax is the low-precision tensor the forward returned, and their
# backward reads it (derivatives.yaml: tanh_backward(grad, result),
# sigmoid_backward(grad, result), grad * result, grad / (2 * result),
# _softmax_backward_data(grad, result),
# _log_softmax_backward_data). An FP32 graph would read the unrounded output.
# CUDA's tanh_backward and sigmoid_backward for Half and BFloat16
# (aten/src/ATen/native/cuda/BinaryMiscBackwardOpsKernels.cu) are written in
# scalar_t arithmetic, whose every operator (c10/util/Half-inl.h,
# BFloat16-inl.h) computes in float and rounds into the dtype: a * (1 - b * b)
# rounds three times, a * (1 - b) * b three times. grad * result is one
# multiplication (float, one rounding), grad / (2 * result) one division
# (2 * result is exact); the softmax backward kernels
# accumulate in float and round once. r(x) rounds into the format.
def _tanh_bwd(g, y, dim, r):
    return r(g * r(1 - r(y * y)))


def _sigmoid_bwd(g, y, dim, r):
    return r(r(g * r(1 - y)) * y)


def _exp_bwd(g, y, dim, r):
    return g * y


def _sqrt_bwd(g, y, dim, r):
    return g / (2 * y)


def _softmax_bwd(g, y, dim, r):
    return y * (g - (g * y).sum(dim, keepdim=True))


def _log_softmax_bwd(g, y, dim, r):
    return g - torch.exp(y) * g.sum(dim, keepdim=True)


_OUT_RULES = {"tanh": (torch.tanh, _tanh_bwd), "sigmoid": (torch.sigmoid, _sigmoid_bwd),
              "exp": (torch.exp, _exp_bwd), "sqrt": (torch.sqrt, _sqrt_bwd),
              "softmax": (torch.softmax, _softmax_bwd), "log_softmax": (torch.log_softmax, _log_softmax_bwd)}


class _SavedOutFn(torch.autograd.Function):
    """y = op(x) in FP32; backward from the output rounded into fmt."""

    @staticmethod
    def forward(ctx, x, name, fmt, dim, per_op):
        fn, ctx.bwd = _OUT_RULES[name]
        y = fn(x, dim) if dim is not None else fn(x)
        ctx.save_for_backward(_rt.round_t(y, fmt)[0])
        ctx.dim, ctx.fmt, ctx.per_op = dim, fmt, per_op
        return y

    @staticmethod
    def backward(ctx, g):
        fmt = ctx.fmt
        r = (lambda v: _rt.round_t(v, fmt)[0]) if ctx.per_op else (lambda v: v)
        y, = ctx.saved_tensors
        return ctx.bwd(g, y, ctx.dim, r), None, None, None, None


class _DivFn(torch.autograd.Function):
    """a / b of two low-precision tensors (same shape). derivatives.yaml:
    grad / other for a, and -grad * ((self / other) / other) for b, each of
    those ops rounded into fmt (a / b is one op; the divisor's gradient three)."""

    @staticmethod
    def forward(ctx, a, b, fmt):
        ctx.save_for_backward(a, b)
        ctx.fmt = fmt
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        f = ctx.fmt
        ga = g / b if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            q = _rt.round_t(_rt.round_t(a / b, f)[0] / b, f)[0]
            gb = -g * q
        return ga, gb, None


def saved_output_rule(name, args, kwargs, fmt, per_op=True):
    """The call under the rule above (FP32 output, rounded by the caller), or
    None when the call is not one it covers. per_op: tanh and sigmoid backward
    round after each operator (CUDA); else in float, rounded once (PyTorch's
    CPU kernels, aten/src/ATen/native/cpu/BinaryOpsKernel.cpp)."""
    if name in _OUT_RULES:
        x = args[0] if args else kwargs.get("input")
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        extra = {k: v for k, v in kwargs.items() if k not in ("input", "dim", "_stacklevel")}
        if not isinstance(x, torch.Tensor) or len(args) > 2 or any(v is not None for v in extra.values()):
            return None
        if (dim is None) != (name in ("tanh", "sigmoid", "exp", "sqrt")):
            return None
        return _SavedOutFn.apply(x, name, fmt, dim, per_op)
    if name == "div" and len(args) == 2 and not kwargs:
        a, b = args
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
                and _fmt_of(a) == fmt and _fmt_of(b) == fmt:
            return _DivFn.apply(a, b, fmt)
    return None
