"""The C emulator's kernels as autograd Functions, for
``emulate(kernels="ampsim")``: layer norm, tanh GELU, softmax over the last
dimension and products of two activations (attention's ``q @ k^T`` and
``prob @ v``) compute every element as the C GPT does (sim/layer_norm.c,
sim/layer_gelu.c, sim/layer_attention.c), so a PyTorch model and the C emulator
give the same bits where their models agree. Under a torch_cpu policy
(bf16-amp-cpu) they are the C emulator's torch_cpu kernels, PyTorch's CPU
arithmetic: GEMM-like products in oneDNN's pair order (``pairs_gemm``, forward
and backward), the softmax and LayerNorm backward as PyTorch's CPU kernels.
Each entry point returns None for a call it does not cover; such calls keep
PyTorch's kernels."""
import ctypes

import torch

from .. import _lib
from . import _rt

_VP, _SZ, _D, _I, _F = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double, ctypes.c_int, ctypes.c_float
_lib._fn("amp_layernorm_forward", None, *[_VP] * 6, _SZ, _SZ, _D)
_lib._fn("amp_layernorm_forward_torchcpu", None, *[_VP] * 6, _SZ, _SZ, _D)
_lib._fn("amp_layernorm_backward", None, *[_VP] * 8, _SZ, _SZ)
_lib._fn("amp_layernorm_backward_torchcpu", None, *[_VP] * 8, _SZ, _SZ)
_lib._fn("amp_gelu_forward", None, _VP, _VP, _SZ)
_lib._fn("amp_gelu_backward", None, _VP, _VP, _VP, _SZ)
_lib._fn("amp_gelu_forward_fmt", None, _VP, _VP, _SZ, _VP)
_lib._fn("amp_gelu_backward_fmt", None, _VP, _VP, _VP, _SZ, _VP)
_lib._fn("amp_softmax_rows_forward", None, _VP, _VP, _SZ, _SZ)
_lib._fn("amp_softmax_rows_backward", None, _VP, _VP, _VP, _SZ, _SZ)
_lib._fn("amp_softmax_rows_forward_torchcpu", None, _VP, _VP, _SZ, _SZ)
_lib._fn("amp_softmax_rows_backward_fmt", None, _VP, _VP, _VP, _SZ, _SZ, _VP)
_lib._fn("amp_gemm_pairs", None, _I, _I, _I, _I, _I, _VP, _I, _VP, _I, _F, _VP, _I)
_lib._fn("amp_xent_grad_torchcpu", None, _VP, _VP, _VP, _I, _I, _F)
_lib._fn("amp_bmm_f64", None, _VP, _VP, _VP, _SZ, _SZ, _SZ, _SZ, ctypes.c_int)
_L = _lib.lib


def _p(t):
    return t.data_ptr()


def _dense(t):
    return t.detach().contiguous()


class _LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, eps, torch_cpu):
        x, w, b = _dense(x), _dense(w), _dense(b)
        C = x.shape[-1]
        N = x.numel() // C if C else 0
        out = torch.empty_like(x)
        mean, rstd = torch.empty(N, dtype=torch.float32), torch.empty(N, dtype=torch.float32)
        f = _L.amp_layernorm_forward_torchcpu if torch_cpu else _L.amp_layernorm_forward
        f(_p(out), _p(mean), _p(rstd), _p(x), _p(w), _p(b), N, C, float(eps))
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.torch_cpu = torch_cpu
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, mean, rstd = ctx.saved_tensors
        g = _dense(g)
        C = x.shape[-1]
        dx, dw, db = torch.zeros_like(x), torch.zeros_like(w), torch.zeros_like(w)
        f = _L.amp_layernorm_backward_torchcpu if ctx.torch_cpu else _L.amp_layernorm_backward
        f(_p(dx), _p(dw), _p(db), _p(g), _p(x), _p(w), _p(mean), _p(rstd), x.numel() // C if C else 0, C)
        return dx, dw, db, None, None


class _GeluFn(torch.autograd.Function):
    """tanh GELU in float32 arithmetic with ampsim's tanhf; with fmt (a 16-bit
    format) in that format's arithmetic, one rounded operation after another
    (PyTorch's CPU bf16 kernel; the C emulator's torch_cpu policies), and the
    backward likewise in the gradient's format gfmt when it equals fmt."""

    @staticmethod
    def forward(ctx, x, fmt, gfmt):
        x = _dense(x)
        out = torch.empty_like(x)
        if fmt:
            _L.amp_gelu_forward_fmt(_p(out), _p(x), x.numel(), ctypes.addressof(_rt.fmt_struct(fmt)._f))
        else:
            _L.amp_gelu_forward(_p(out), _p(x), x.numel())
        ctx.save_for_backward(x)
        ctx.fmt = fmt if fmt and gfmt == fmt else None
        return out

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        g = _dense(g)
        dx = torch.zeros_like(x)
        if ctx.fmt:
            _L.amp_gelu_backward_fmt(_p(dx), _p(x), _p(g), x.numel(), ctypes.addressof(_rt.fmt_struct(ctx.fmt)._f))
        else:
            _L.amp_gelu_backward(_p(dx), _p(x), _p(g), x.numel())
        return dx, None, None


class _SoftmaxFn(torch.autograd.Function):
    """Softmax over the last axis; the backward reads the output as the
    model keeps it (rounded into fmt when the op's output is low-precision).
    torch_cpu with a 16-bit fmt: PyTorch's CPU kernels on such a tensor
    (amp_softmax_rows_forward_torchcpu, amp_softmax_rows_backward_fmt)."""

    @staticmethod
    def forward(ctx, x, fmt, torch_cpu=False):
        x = _dense(x)
        n = x.shape[-1] if x.dim() else 1
        rows = x.numel() // n if n else 0
        out = torch.empty_like(x)
        ctx.fmt = fmt if torch_cpu and fmt != "fp32" and _rt.fmt_struct(fmt).bits < 32 else None
        f = _L.amp_softmax_rows_forward_torchcpu if ctx.fmt else _L.amp_softmax_rows_forward
        f(_p(out), _p(x), rows, n)
        ctx.save_for_backward(out if fmt == "fp32" else _rt.round_t(out, fmt)[0])
        return out

    @staticmethod
    def backward(ctx, g):
        p, = ctx.saved_tensors
        g = _dense(g)
        n = p.shape[-1] if p.dim() else 1
        rows = p.numel() // n if n else 0
        dx = torch.zeros_like(p)
        if ctx.fmt:
            _L.amp_softmax_rows_backward_fmt(_p(dx), _p(g), _p(p), rows, n,
                                             ctypes.addressof(_rt.fmt_struct(ctx.fmt)._f))
        else:
            _L.amp_softmax_rows_backward(_p(dx), _p(g), _p(p), rows, n)
        return dx, None, None


def _bmm(a, b, b_rows):
    """a (..., M, K) @ b: b_rows: b is (..., N, K), else (..., K, N); both dense."""
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-2] if b_rows else b.shape[-1]
    P = a.numel() // (M * K) if M * K else 0
    out = torch.empty(a.shape[:-2] + (M, N), dtype=torch.float32)
    if out.numel():
        _L.amp_bmm_f64(_p(out), _p(a), _p(b), P, M, N, K, 1 if b_rows else 0)
    else:
        out.zero_()
    return out


class _MatmulFn(torch.autograd.Function):
    """out = a @ b for two activations. The scores form (b's reduction axis
    innermost in memory, as k.transpose(-2, -1)): each element a double dot
    product with four partial sums; otherwise a double sum over k in order.
    Backward as the attention kernels: dA by the other form, dB in order."""

    @staticmethod
    def forward(ctx, a, b, rows):
        ad = _dense(a)
        bt = _dense(b.transpose(-2, -1)) if rows else _dense(b)
        ctx.save_for_backward(ad, _dense(b))
        ctx.rows = rows
        return _bmm(ad, bt, rows)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        g = _dense(g)
        da = db = None
        if ctx.needs_input_grad[0]:
            # dA = g @ b^T: rows form on b itself, else the ordered sum on b^T
            da = _bmm(g, b, True) if not ctx.rows else _bmm(g, _dense(b.transpose(-2, -1)), False)
        if ctx.needs_input_grad[1]:
            db = _bmm(_dense(a.transpose(-2, -1)), g, False)
        return da, db, None


def _f32_cpu(*ts):
    return all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.device.type == "cpu" for t in ts)


def layer_norm(args, kwargs, torch_cpu):
    """F.layer_norm over the last axis with weight and bias, else None."""
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    a = dict(zip(names, args))
    a.update(kwargs)
    x, shape, w, b = a.get("input"), a.get("normalized_shape"), a.get("weight"), a.get("bias")
    if not _f32_cpu(x, w, b) or len(tuple(shape)) != 1 or x.dim() < 1 or x.shape[-1] != tuple(shape)[0]:
        return None
    if w.shape != (x.shape[-1],) or b.shape != (x.shape[-1],):
        return None
    return _LayerNormFn.apply(x, w, b, a.get("eps", 1e-5), torch_cpu)


def gelu(args, kwargs, fmt=None, gfmt=None):
    """F.gelu(x, approximate="tanh"), else None. fmt: the input's 16-bit
    format when the policy computes GELU in it (torch_cpu), gfmt the
    gradient's."""
    x = args[0] if args else kwargs.get("input")
    approx = args[1] if len(args) > 1 else kwargs.get("approximate", "none")
    if approx != "tanh" or not _f32_cpu(x):
        return None
    return _GeluFn.apply(x, fmt, gfmt)


def softmax(args, kwargs, fmt="fp32", torch_cpu=False):
    """softmax over the last axis of a float32 tensor, else None. fmt: the
    format its output is rounded into; torch_cpu: the policy's kernels are
    PyTorch's CPU kernels."""
    x = args[0] if args else kwargs.get("input")
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if kwargs.get("dtype") is not None or len(args) > 3 or not _f32_cpu(x) or x.dim() == 0:
        return None
    if dim is None or dim not in (-1, x.dim() - 1):
        return None
    return _SoftmaxFn.apply(x, fmt, torch_cpu)


def matmul_form(a, b):
    """For a @ b of two float32 activations of equal batch shape: True for the
    scores form, False for the ordered form; None when not covered."""
    if not _f32_cpu(a, b) or a.dim() < 2 or a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2]:
        return None
    if a.shape[-1] != b.shape[-2]:
        return None
    return b.stride(-2) == 1 and b.stride(-1) != 1 and b.shape[-2] > 1


def matmul(a, b, rows):
    return _MatmulFn.apply(a, b, rows)


# ---- GEMM-like products in oneDNN's bf16 order (torch_cpu policies) ----------------
def pairs_policy(pol):
    """True when the C emulator runs pol's GEMMs in amp_gemm_pairs' order
    (amp_ctx_pairs): "kernels": "torch_cpu", GEMM operands of at most 16 bits,
    FP32 accumulation."""
    return (pol.torch_cpu and pol.accumulator == "fp32"
            and _rt.fmt_struct(pol.fwd_in).bits <= 16 and _rt.fmt_struct(pol.bwd_in).bits <= 16)


def _pairs(a, b, ta=0, tb=0):
    """A' @ B' per batch element, each output element summed as amp_gemm_pairs
    sums it (pairs (k, k+1) from k = 0, element k+1's product first, one float
    rounding per step). a, b dense float32 with equal batch shapes; A' is a
    (..., M, K), or a^T when ta (a stored (..., K, M)); B' is b (..., K, N), or
    b^T when tb (b stored (..., N, K)). Returns (..., M, N)."""
    M, K = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    N = b.shape[-2] if tb else b.shape[-1]
    out = torch.empty(a.shape[:-2] + (M, N), dtype=torch.float32)
    if out.numel() == 0:
        return out
    P = out.numel() // (M * N)
    lda, ldb = a.shape[-1], b.shape[-1]
    pa, pb, po = _p(a), _p(b), _p(out)
    for i in range(P):
        _L.amp_gemm_pairs(ta, tb, M, N, K, pa + 4 * i * M * K, lda, pb + 4 * i * K * N, ldb, 0.0,
                          po + 4 * i * M * N, N)
    return out


class _PairsFn(torch.autograd.Function):
    """out = a @ B' in pair order, B' = b, or b^T when tb (a linear weight
    (N, K)); equal batch shapes. Backward as the C emulator's layers
    (sim/layer_linear.c, layer_attention.c): dA = g @ B'^T and dB' = a^T @ g
    (for a weight, dW = g^T @ a), each in pair order over its own reduction."""

    @staticmethod
    def forward(ctx, a, b, tb):
        a, b = _dense(a), _dense(b)
        ctx.save_for_backward(a, b)
        ctx.tb = tb
        return _pairs(a, b, 0, 1 if tb else 0)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        g, (need_a, need_b) = _dense(g), ctx.needs_input_grad[:2]
        da = _pairs(g, b, 0, 0 if ctx.tb else 1) if need_a else None
        db = (_pairs(g, a, 1, 0) if ctx.tb else _pairs(a, g, 1, 0)) if need_b else None
        return da, db, None


def _pairs_mm(a, b, tb=False):
    """a (..., M, K) @ B' (K, N) (b 2-D: a's leading axes folded into rows, as
    PyTorch folds them into one GEMM) or with equal batch shapes; None when
    the shapes are another case."""
    K = b.shape[-1] if tb else b.shape[-2]
    if a.dim() < 1 or b.dim() < 2 or a.shape[-1] != K:
        return None
    if b.dim() == 2 and (a.dim() != 2 or tb):
        n = b.shape[0] if tb else b.shape[1]
        return _PairsFn.apply(a.reshape(-1, K), b, tb).reshape(a.shape[:-1] + (n,))
    if a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2]:
        return None
    return _PairsFn.apply(a, b, tb)


def pairs_gemm(name, func, args, kwargs):
    """The call (linear, matmul, mm, bmm, addmm; the tensors already cast) with
    its products in pair order, or None when it has another form (einsum,
    convolutions, baddbmm, 1-D or broadcast matmul operands, scaled addmm)."""
    if name == "linear":
        a = dict(zip(("input", "weight", "bias"), args))
        a.update(kwargs)
        x, w, b = a.get("input"), a.get("weight"), a.get("bias")
        if len(a) > 3 or not _f32_cpu(x, w) or w.dim() != 2 or b is not None and not _f32_cpu(b):
            return None
        y = _pairs_mm(x, w, True)
        return y if y is None or b is None else y + b      # the bias added last, as oneDNN's sum post-op
    if name in ("matmul", "mm", "bmm"):
        if kwargs or len(args) != 2 or func is torch.Tensor.__rmatmul__ or not _f32_cpu(*args):
            return None
        return _pairs_mm(args[0], args[1])
    if name == "addmm":
        if len(args) != 3 or any(kwargs.get(k, 1) != 1 for k in ("beta", "alpha")) \
                or set(kwargs) - {"beta", "alpha"} or not _f32_cpu(*args) or args[1].dim() != 2:
            return None
        y = _pairs_mm(args[1], args[2])
        return None if y is None else args[0] + y
    return None


def xent_grad_torchcpu(z, y, scale):
    """The gradient of the mean softmax cross-entropy of logits z [B, C]
    (dense float32) at targets y, times scale, in the float32 arithmetic of
    PyTorch's CPU log_softmax and nll_loss backward (amp_xent_grad_torchcpu)."""
    B, C = z.shape
    g = torch.empty_like(z)
    y32 = y.detach().to(torch.int32).contiguous()
    if g.numel():
        _L.amp_xent_grad_torchcpu(_p(g), _p(z), _p(y32), B, C, scale)
    return g
