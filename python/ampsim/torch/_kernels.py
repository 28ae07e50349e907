"""The C emulator's FP32 kernels as autograd Functions, for
``emulate(kernels="ampsim")``: layer norm, tanh GELU, softmax over the last
dimension and products of two activations (attention's ``q @ k^T`` and
``prob @ v``) compute every element as the C GPT does (sim/layer_norm.c,
sim/layer_gelu.c, sim/layer_attention.c), so a PyTorch model and the C emulator
give the same bits where their models agree. ``pick`` says whether a call
has a form these kernels cover; other calls keep PyTorch's kernels."""
import ctypes

import torch

from .. import _lib
from . import _rt

_VP, _SZ, _D = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double
_lib._fn("amp_layernorm_forward", None, *[_VP] * 6, _SZ, _SZ, _D)
_lib._fn("amp_layernorm_forward_torchcpu", None, *[_VP] * 6, _SZ, _SZ, _D)
_lib._fn("amp_layernorm_backward", None, *[_VP] * 8, _SZ, _SZ)
_lib._fn("amp_gelu_forward", None, _VP, _VP, _SZ)
_lib._fn("amp_gelu_backward", None, _VP, _VP, _VP, _SZ)
_lib._fn("amp_gelu_forward_fmt", None, _VP, _VP, _SZ, _VP)
_lib._fn("amp_gelu_backward_fmt", None, _VP, _VP, _VP, _SZ, _VP)
_lib._fn("amp_softmax_rows_forward", None, _VP, _VP, _SZ, _SZ)
_lib._fn("amp_softmax_rows_backward", None, _VP, _VP, _VP, _SZ, _SZ)
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
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, mean, rstd = ctx.saved_tensors
        g = _dense(g)
        C = x.shape[-1]
        dx, dw, db = torch.zeros_like(x), torch.zeros_like(w), torch.zeros_like(w)
        _L.amp_layernorm_backward(_p(dx), _p(dw), _p(db), _p(g), _p(x), _p(w), _p(mean), _p(rstd),
                                  x.numel() // C if C else 0, C)
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
    model keeps it (rounded into fmt when the op's output is low-precision)."""

    @staticmethod
    def forward(ctx, x, fmt):
        x = _dense(x)
        n = x.shape[-1] if x.dim() else 1
        out = torch.empty_like(x)
        _L.amp_softmax_rows_forward(_p(out), _p(x), x.numel() // n if n else 0, n)
        ctx.save_for_backward(out if fmt == "fp32" else _rt.round_t(out, fmt)[0])
        return out

    @staticmethod
    def backward(ctx, g):
        p, = ctx.saved_tensors
        g = _dense(g)
        n = p.shape[-1] if p.dim() else 1
        dx = torch.zeros_like(p)
        _L.amp_softmax_rows_backward(_p(dx), _p(g), _p(p), p.numel() // n if n else 0, n)
        return dx, None


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


def softmax(args, kwargs, fmt="fp32"):
    """softmax over the last axis of a float32 tensor, else None. fmt: the
    format its output is rounded into."""
    x = args[0] if args else kwargs.get("input")
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if kwargs.get("dtype") is not None or len(args) > 3 or not _f32_cpu(x) or x.dim() == 0:
        return None
    if dim is None or dim not in (-1, x.dim() - 1):
        return None
    return _SoftmaxFn.apply(x, fmt)


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
