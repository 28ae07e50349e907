"""What each format and scale does to tensors (``ampsim analyze``)."""
import ctypes
import math

import numpy as np

from . import _lib
from ._lib import lib, check, encode_str
from ._round import Format, Stats

__all__ = ["analyze"]

_DTYPES = {np.dtype(np.float16): _lib.AMP_DT_F16, np.dtype(np.float32): _lib.AMP_DT_F32,
           np.dtype(np.float64): _lib.AMP_DT_F64}
COLUMNS = tuple(lib.amp_analyze_csv_header().decode().split(",")) + ("auto", "scale_log2")


def _scale_text(s):
    if isinstance(s, str):
        if s != "auto":
            raise ValueError("scale %r: a scale is a positive number (or 'auto')" % s)
        return s
    v = float(s)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError("scale %r: scales must be positive and finite" % s)
    return repr(v)


def analyze(tensors, formats=("fp16", "bf16", "e4m3", "e5m2"), scales=(1.0,), auto=False, *,
            pandas=None):
    """For every tensor x format x scale: the tensor times the scale, rounded
    into the format (rne), classified; the numbers ``ampsim analyze`` prints.

    Parameters
    ----------
    tensors : dict of str -> array_like (float16, float32 or float64)
        The tensors by name (a single array is analysed under the name "x").
    formats : sequence of str or Format
        At most 32 formats.
    scales : sequence of float
        Positive scales, held as float32 (at most 32).
    auto : bool
        Add, after each format's scale-1 row, a row with the power of two
        2^k (k in -126..127) that minimises flushed + overflow + saturated
        (chosen exactly). Scale 1 is added first if missing.
    pandas : bool or None
        None: a DataFrame if pandas is importable, else a record array.

    Returns
    -------
    numpy record array (or pandas DataFrame)
        Columns of ``ampsim analyze --csv`` (tensor, format, scale, n,
        zero_in, flushed, subnormal, saturated, overflow, nan, amax,
        amin_nonzero, rel_err, in_normal_range) plus ``auto`` (bool) and
        ``scale_log2`` (auto rows: scale = 2**scale_log2; else 0). Rows are
        tensor-major, then format-major, scales in order.

    Raises
    ------
    ValueError
        A bad format or scale, too many of them, or an empty name.
    TypeError
        A tensor that is not a float array.
    """
    if isinstance(tensors, dict):
        items = list(tensors.items())
    else:
        items = [("x", tensors)]
    fl = []
    for f in formats if not isinstance(formats, (str, Format)) else [formats]:
        fl.append(f.name if isinstance(f, Format) else encode_str(f, "format").decode())
    if not fl:
        raise ValueError("analyze needs at least one format")
    sl = [_scale_text(s) for s in (scales if not isinstance(scales, (int, float, str)) else [scales])]
    if auto and "auto" not in sl:
        sl.append("auto")
    if not sl:
        raise ValueError("analyze needs at least one scale")
    o = _lib.AmpAnalyzeOpts()
    lib.amp_analyze_defaults(ctypes.byref(o))
    for f in fl:
        if "," in f:
            raise ValueError("format %r: ',' in a format name" % f)
    check(lib.amp_analyze_parse_formats(",".join(fl).encode(), ctypes.byref(o)))
    check(lib.amp_analyze_parse_scales(",".join(sl).encode(), ctypes.byref(o)))
    out = []
    for name, x in items:
        name = encode_str(name, "tensor name")
        if not name or len(name) >= 256:
            raise ValueError("tensor names must be 1..255 bytes, got %r" % name)
        if not isinstance(x, np.ndarray):
            if isinstance(x, (str, bytes)) or x is None:
                raise TypeError("tensor %r: expected a float array, got %s" % (name, type(x).__name__))
            x = np.asarray(x)
        dt = x.dtype.newbyteorder("=") if x.dtype.kind == "f" else x.dtype
        if dt not in _DTYPES:
            raise TypeError("tensor %r: unsupported dtype %s (float16, float32, float64)" % (name, x.dtype))
        xa = np.asarray(x, dtype=dt, order="C")
        if xa.ndim > _lib.AMP_MAX_DIMS:
            xa = xa.reshape(-1)
        v = _lib.AmpTensorView()
        v.name = name
        v.dtype = _DTYPES[dt]
        v.ndim = xa.ndim
        for i, s in enumerate(xa.shape):
            v.shape[i] = s
        v.n = xa.size
        v.data = xa.ctypes.data
        rows = ctypes.POINTER(_lib.AmpAnalyzeRow)()
        nr = ctypes.c_size_t(0)
        try:
            check(lib.amp_analyze_view(ctypes.byref(v), ctypes.byref(o), ctypes.byref(rows), ctypes.byref(nr)))
            for i in range(nr.value):
                r = rows[i]
                st = Stats._wrap(_lib.AmpStats.from_buffer_copy(r.st))
                c = st.counts
                out.append((r.tensor.decode("utf-8", "replace"), r.format.decode(), float(r.scale), st.n,
                            c["zero_in"], c["flushed"], c["subnormal"], c["saturated"], c["overflow"],
                            c["nan_in"], st.amax, st.amin_nonzero, st.rel_err, st.in_normal_range,
                            bool(r.is_auto), int(r.scale_log2) if r.is_auto else 0))
        finally:
            if rows:
                _lib.libc.free(rows)
    cols = list(zip(*out)) if out else [[] for _ in COLUMNS]
    arrays = []
    for name, col in zip(COLUMNS, cols):
        if name in ("tensor", "format"):
            arrays.append(np.array(col, dtype=str) if col else np.array([], "<U1"))
        elif name == "auto":
            arrays.append(np.array(col, dtype=bool))
        elif name in ("scale", "amax", "amin_nonzero", "rel_err", "in_normal_range"):
            arrays.append(np.array(col, dtype=np.float64))
        else:
            arrays.append(np.array(col, dtype=np.int64))
    pd = None
    if pandas is not False:
        try:
            import pandas as pd
        except ImportError:
            if pandas:
                raise
    if pd is not None:
        return pd.DataFrame(dict(zip(COLUMNS, arrays)), columns=list(COLUMNS))
    return np.rec.fromarrays(arrays, names=list(COLUMNS))
