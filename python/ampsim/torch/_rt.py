"""The rounding and run-log calls ampsim.torch makes, over the ampsim package.

round_t rounds a float32 torch tensor through the C kernel (ampsim.round's
library call with its argument parsing done once per format and mode), so a
rounding costs one C call; statistics come back as ampsim.Stats.
"""
import ctypes

import numpy as np
import torch

from .. import _lib, _round
from .._round import Stats

class EmulationError(RuntimeError):
    """An op or tensor that the policy cannot express (message names the op and module)."""


#: attribute of an emulated tensor: the name of the format its values are in
FMT_ATTR = "_ampsim_fmt"


def fmt_of(t):
    """The format of a tensor's values ("fp32" for a tensor emulate did not make)."""
    return getattr(t, FMT_ATTR, "fp32")


_fmt_cache = {}
_opts_cache = {}


def fmt_struct(name):
    """The library's amp_format for a format name (cached)."""
    f = _fmt_cache.get(name)
    if f is None:
        f = _fmt_cache[name] = _round._format_arg(name)
    return f


def _opts(fmt, mode, saturate, sr_bits):
    key = (fmt, mode, saturate, sr_bits)
    o = _opts_cache.get(key)
    if o is None:
        o = _opts_cache[key] = _round._opts(fmt_struct(fmt), mode, saturate, False, False,
                                            sr_bits if sr_bits else None, 0, 0, 0, False)
    return o


def keyed_opts(fmt, mode, saturate, sr_bits, seed=0, stream=0, index0=0):
    """The library's amp_round_opts for these options, with the stochastic
    rounding key (seed, stream, index0) filled in (a shared cached struct when
    there is no key)."""
    o = _opts(fmt, mode, saturate, sr_bits)
    if mode == "sr" or seed or stream or index0:
        o = _lib.AmpRoundOpts.from_buffer_copy(o)
        o.seed, o.stream, o.index0 = seed, stream, index0
    return o


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def rand64(seed, stream, index):
    """amp_rand64 (sim/base.c): the counter-based generator the emulator keys SR with."""
    m = 0xFFFFFFFFFFFFFFFF
    k = mix64(seed ^ 0x6a09e667f3bcc909) ^ mix64((stream + 0x3c6ef372fe94f82b) & m)
    return mix64(mix64((k + index * 0x9e3779b97f4a7c15) & m) ^ k)


def step_seed(seed, step):
    """The SR seed of a step, as the tensor registry forms it (sim/tensor.c)."""
    return rand64(seed, 0x7374657000000000 ^ step, 0)


def round_t(x, fmt, mode="rne", *, saturate=False, sr_bits=0, seed=0, stream=0, index0=0,
            stats=False):
    """x (float32 or float64 torch tensor, any shape) rounded into fmt: a new
    float32 tensor (no autograd), and its Stats when stats is true (else None)."""
    xd = x.detach()
    if xd.dtype == torch.float32 and not index0:
        y, st, _ = round_count(xd, fmt, mode, saturate=saturate, sr_bits=sr_bits, seed=seed, stream=stream,
                               stats=stats, count=False)
        return y, st
    if xd.dtype not in (torch.float32, torch.float64):
        raise TypeError("ampsim.torch: unsupported dtype %s (float32 tensors only)" % xd.dtype)
    xa = xd.contiguous().numpy()
    y = np.empty(xa.shape, dtype=np.float32)
    f = fmt_struct(fmt)
    o = keyed_opts(fmt, mode, saturate, sr_bits, seed, stream, index0)
    st = None
    if stats:
        st = _lib.AmpStats()
        _lib.lib.amp_stats_init(ctypes.byref(st))
    fn = _lib.lib.amp_round_f64 if xa.dtype == np.float64 else _lib.lib.amp_round_f32
    _lib.check(fn(ctypes.byref(f._f), ctypes.byref(o), xa.ctypes.data, y.ctypes.data, xa.size,
                  ctypes.byref(st) if st is not None else None))
    return torch.from_numpy(y), (Stats._wrap(st, f) if stats else None)


_VP = ctypes.c_void_p
_lib._fn("amp_round_f32_nonfinite", ctypes.c_int, _VP, _VP, _VP, _VP, ctypes.c_size_t, _VP, _VP)
_addr_cache = {}


def round_addrs(fmt, mode="rne", saturate=False, sr_bits=0):
    """(address of the format, address of the rounding options, the format,
    the options) of a rounding into fmt, made once per (fmt, mode, saturate,
    sr_bits) and kept, for the kernels that take them by address."""
    key = (fmt, mode, saturate, sr_bits)
    a = _addr_cache.get(key)
    if a is None:
        f = fmt_struct(fmt)
        o = _opts(fmt, mode, saturate, sr_bits)
        a = _addr_cache[key] = (ctypes.addressof(f._f), ctypes.addressof(o), f, o)
    return a


def round_count(x, fmt, mode="rne", *, saturate=False, sr_bits=0, seed=0, stream=0, stats=False, count=True,
                inplace=False):
    """round_t for a float32 tensor, with the count of non-finite results:
    (y, Stats or None, nonfinite; None when count is false). One foreign call (amp_round_f32_nonfinite); the
    format and options are looked up once per (fmt, mode, saturate, sr_bits)
    and passed by address, the result is written straight into a new tensor,
    or with inplace into x itself (dense x: the caller owns it, nothing else
    reads its old values), which saves a fresh buffer's page faults."""
    if x.dtype != torch.float32:
        y, st = round_t(x, fmt, mode, saturate=saturate, sr_bits=sr_bits, seed=seed, stream=stream, stats=stats)
        return y, st, count_nonfinite(y)
    # (the storage is read by address: no detach needed for a contiguous
    # tensor; a permuted dense one, x.transpose(0, 1), is rounded over its
    # memory into a tensor of the same strides, as PyTorch's .to() keeps them)
    if not stats and count and mode != "sr" and not seed and not stream:
        y, nf = rounder(fmt, mode, saturate, sr_bits)(x, inplace)
        return y, None, nf
    xd, y = _src_dst(x, inplace)
    a = _addr_cache.get((fmt, mode, saturate, sr_bits)) or round_addrs(fmt, mode, saturate, sr_bits)
    oa = a[1]
    if mode == "sr" or seed or stream:
        ok = keyed_opts(fmt, mode, saturate, sr_bits, seed, stream)
        oa = ctypes.addressof(ok)
    st = None
    if stats:
        st = _lib.AmpStats()
        _lib.lib.amp_stats_init(ctypes.byref(st))
    nf = _SIZE_T(0) if count else None
    rc = _ROUND(a[0], oa, xd.data_ptr(), y.data_ptr(), xd.numel(), ctypes.addressof(st) if stats else None,
                ctypes.addressof(nf) if count else None)
    if rc:
        _lib.check(rc)
    return y, (Stats._wrap(st, a[2]) if stats else None), nf.value if count else None


def _src_dst(x, inplace):
    """(the tensor a rounding of float32 x reads, the one it writes): x itself
    when its elements are dense in memory (a contiguous or permuted tensor),
    else its contiguous copy, which is fresh and so rounded in place; the
    result goes into x with inplace (the caller owns x, which needs no
    gradient), else into a new tensor of x's strides."""
    if x.is_contiguous() or dense(x):
        return x, (x if inplace and not x.requires_grad else _empty_like(x))
    xd = x.detach().contiguous()
    return xd, xd


_rounders = {}
_empty_like = torch.empty_like
_addressof = ctypes.addressof


def rounder(fmt, mode="rne", saturate=False, sr_bits=0):
    """round_count without statistics or stochastic draws (mode not "sr"), as a
    function f(x, inplace=False) -> (y, nonfinite) of a float32 tensor x, made
    once per (fmt, mode, saturate, sr_bits) and kept: the hot path of every
    rounding that logs nothing, with round_count's rules for a strided x and
    for inplace."""
    key = (fmt, mode, saturate, sr_bits)
    f = _rounders.get(key)
    if f is not None:
        return f
    a = round_addrs(fmt, mode, saturate, sr_bits)
    fa, oa = a[0], a[1]

    def f(x, inplace=False):
        xd, y = _src_dst(x, inplace)
        nf = _SIZE_T()
        rc = _ROUND(fa, oa, xd.data_ptr(), y.data_ptr(), xd.numel(), None, _addressof(nf))
        if rc:
            _lib.check(rc)
        return y, nf.value
    f.keep = a                  # (the structs the addresses point into)
    _rounders[key] = f
    return f


_lib._fn("amp_round_f32_many", ctypes.c_int, ctypes.c_size_t, _VP, _VP, _VP, _VP, _VP, _VP)


def round_many(xs, fmts, mode="rne", saturate=(), sr_bits=0):
    """[(y, nonfinite)]: each contiguous float32 tensor xs[j] rounded into
    fmts[j] (saturating where saturate[j]; mode not "sr", whose draws are
    keyed per tensor) into a new tensor, as round_count rounds it, in one
    foreign call (amp_round_f32_many)."""
    k = len(xs)
    ys = [torch.empty_like(t) for t in xs]
    addrs = [round_addrs(f, mode, bool(s), sr_bits) for f, s in zip(fmts, saturate or (False,) * k)]
    ptrs = ctypes.c_void_p * k
    nf = (ctypes.c_size_t * k)()
    rc = _lib.lib.amp_round_f32_many(k, ptrs(*[a[0] for a in addrs]), ptrs(*[a[1] for a in addrs]),
                                     ptrs(*[t.data_ptr() for t in xs]), ptrs(*[t.data_ptr() for t in ys]),
                                     (ctypes.c_size_t * k)(*[t.numel() for t in xs]), nf)
    if rc:
        _lib.check(rc)
    return list(zip(ys, nf))


def dense(t):
    """True when t's elements fill a span of memory of t.numel() elements,
    in some order of its dimensions (non-overlapping and dense: a permutation
    of a contiguous tensor), so that an elementwise pass over that memory and
    empty_like(t), which keeps such strides, line up."""
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1)
    expect = 1
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


_SIZE_T = ctypes.c_size_t
_ROUND = _lib.lib.amp_round_f32_nonfinite


_lib._fn("amp_sumsq_unscaled_f32", ctypes.c_double, _VP, ctypes.c_size_t, ctypes.c_float)


def sumsq_unscaled(g, inv):
    """Sum of squares of a float32 gradient unscaled by inv (float), as the C
    training step forms the gradient norm: one foreign call."""
    g = g.detach()
    if g.is_sparse:                 # (a sparse gradient, nn.Embedding(sparse=True): its stored values)
        g = g.coalesce()._values()
    if g.dtype != torch.float32:
        return float((g.double() * inv).pow(2).sum())
    if not g.is_contiguous():
        g = g.contiguous()
    return _lib.lib.amp_sumsq_unscaled_f32(g.data_ptr(), g.numel(), inv)


_lib._fn("amp_unscale_sumsq_f32", ctypes.c_double, _VP, ctypes.c_size_t, ctypes.c_float, _VP)


def unscale_sumsq(g, inv):
    """g multiplied by inv (float) in place, as g.mul_(inv) does; returns
    (sumsq_unscaled(g, 1.0) of the result, its count of inf and NaN). One
    pass (amp_unscale_sumsq_f32) for a contiguous float32 tensor."""
    if g.is_sparse or g.dtype != torch.float32 or not g.is_contiguous():
        if inv != 1.0:
            g.mul_(inv)
        v = g.coalesce()._values() if g.is_sparse else g
        return sumsq_unscaled(v, 1.0), int((~torch.isfinite(v)).sum())
    nf = _SIZE_T(0)
    sq = _lib.lib.amp_unscale_sumsq_f32(g.data_ptr(), g.numel(), inv, ctypes.addressof(nf))
    return sq, nf.value


_lib._fn("amp_unscale_sumsq_f32_many", None, ctypes.c_size_t, _VP, _VP, ctypes.c_float, _VP, _VP)


def unscale_sumsq_many(gs, inv):
    """[(sumsq, nonfinite)] of unscale_sumsq(g, inv) for each g of gs, the
    contiguous float32 ones in one foreign call (amp_unscale_sumsq_f32_many),
    any other one alone."""
    many = [i for i, g in enumerate(gs) if not g.is_sparse and g.dtype == torch.float32 and g.is_contiguous()]
    out = [None] * len(gs)
    k = len(many)
    if k:
        sq, nf = (ctypes.c_double * k)(), (ctypes.c_size_t * k)()
        _lib.lib.amp_unscale_sumsq_f32_many(k, (ctypes.c_void_p * k)(*[gs[i].data_ptr() for i in many]),
                                            (ctypes.c_size_t * k)(*[gs[i].numel() for i in many]), inv, sq, nf)
        for j, i in enumerate(many):
            out[i] = (sq[j], nf[j])
    for i, g in enumerate(gs):
        if out[i] is None:
            out[i] = unscale_sumsq(g, inv)
    return out


_lib.lib.amp_count_nonfinite.restype = ctypes.c_size_t
_lib.lib.amp_count_nonfinite.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def count_nonfinite(y):
    """Non-finite values in a contiguous float32 CPU tensor (the library's
    vectorised count)."""
    return int(_lib.lib.amp_count_nonfinite(y.data_ptr(), y.numel()))


def tensor_slots(args, kwargs):
    """(slots, tensors) of a call's tensor arguments, in order: the slots
    with_tensors takes (a non-empty list or tuple of tensors, as einsum's or
    cat's, gives one slot per tensor)."""
    slots, ts = [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            slots.append(("a", i))
            ts.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(b, torch.Tensor) for b in a):
            for j, b in enumerate(a):
                slots.append(("l", (i, j)))
                ts.append(b)
    for k, a in kwargs.items():
        if isinstance(a, torch.Tensor):
            slots.append(("k", k))
            ts.append(a)
    return slots, ts


def with_tensors(args, kwargs, slots, xs):
    """(args, kwargs) of a call with the tensors at slots replaced by xs. A
    slot is ("a", i) for args[i], ("k", name) for kwargs[name] or ("l", (i, j))
    for args[i][j] (a list of tensors, as einsum's)."""
    a2, kw2 = list(args), dict(kwargs)
    for (c, k), x in zip(slots, xs):
        if c == "a":
            a2[k] = x
        elif c == "k":
            kw2[k] = x
        else:
            i, j = k
            lst = list(a2[i])
            lst[j] = x
            a2[i] = lst
    return a2, kw2
