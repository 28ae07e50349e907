"""What each format and scale does to tensors (``ampsim analyze``)."""
import csv
import ctypes
import math

import numpy as np

from . import _lib
from ._lib import lib, check, encode_str
from ._round import Format
from ._round import _opts as _round_opts

__all__ = ["analyze"]

_DTYPES = {np.dtype(np.float16): _lib.AMP_DT_F16, np.dtype(np.float32): _lib.AMP_DT_F32,
           np.dtype(np.float64): _lib.AMP_DT_F64}
_CSV_COLUMNS = tuple(lib.amp_analyze_csv_header().decode().split(","))
COLUMNS = _CSV_COLUMNS + ("auto",)
_STR_COLUMNS = ("tensor", "format", "cast", "scale_spec")
_INT_COLUMNS = ("n", "zero_in", "flushed", "subnormal", "saturated", "overflow", "invalid", "nan", "lost",
                "blocks", "scale_hi", "scale_lo")
_OPTS_SIZE = lib.amp_analyze_abi_size(b"amp_analyze_opts")


def _scale_text(s):
    if isinstance(s, str):
        if not s or "," in s:
            raise ValueError("scale %r: a number, '2^k', 'auto', 'auto:count' or 'amax[:margin=m][:pow2]'" % s)
        return s
    v = float(s)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError("scale %r: scales must be positive and finite" % s)
    t = repr(v)                     # shortest text that reads back: 1024.0 -> "1024", as typed on a command line
    return t[:-2] if t.endswith(".0") else t


_NUMS = len(_CSV_COLUMNS) - len(_STR_COLUMNS)    # AMP_ANALYZE_NUMS: the numeric columns, after the strings


def _row(cells, nums):
    """A row: the string columns from the CSV line, the numbers exact from
    the C row (a count is an int, -1 where it does not apply)."""
    out = list(cells[:len(_STR_COLUMNS)])
    for col, v in zip(_CSV_COLUMNS[len(_STR_COLUMNS):], nums):
        out.append((-1 if math.isnan(v) else int(v)) if col in _INT_COLUMNS else float(v))
    return tuple(out)


def analyze(tensors, formats=("fp16", "bf16", "e4m3", "e5m2"), scales=(1.0,), auto=False, *,
            rounding="rne", saturate=False, ftz=False, daz=False, sr_bits=None, seed=0, pandas=None):
    """For every tensor x format x scale: the tensor times the scale, rounded
    into the format with the given cast options, classified; the numbers
    ``ampsim analyze --csv`` prints, computed by the same C code.

    Parameters
    ----------
    tensors : dict of str -> array_like (float16, float32 or float64)
        The tensors by name (a single array is analysed under the name "x").
    formats : sequence of str or Format
        At most 32: format names, custom eXmY formats, or block-scaled specs
        (``mx:e4m3``, ``nvfp4``, ``block:e4m3:1x128``).
    scales : sequence of float or str
        At most 32: positive numbers (held as float32), ``"2^k"``, ``"auto"``
        (the power of two that keeps every value in range if any does, then
        flushes fewest, then keeps most values normal), ``"auto:count"`` (the
        older rule) or ``"amax[:margin=m][:pow2]"`` (Transformer Engine's
        current scaling).
    auto : bool
        Add ``"auto"`` to the scales.
    rounding, saturate, ftz, daz, sr_bits, seed
        The cast options, as for :func:`ampsim.round`.
    pandas : bool or None
        None: a DataFrame if pandas is importable, else a record array.

    Returns
    -------
    numpy record array (or pandas DataFrame)
        The columns of ``ampsim analyze --csv`` (tensor, format, cast,
        scale_spec, scale, scale_log2, n, the class counts, invalid, lost,
        lost_frac, amax, amin_nonzero, rel_err_finite, rel_err_all,
        in_normal_range and the block-scale columns; -1 or NaN where a
        column does not apply) plus ``auto`` (bool: an auto row). Rows are
        tensor-major, then format-major, scales in order.

    Raises
    ------
    ValueError
        A bad format, scale or cast option, too many of them, or an empty name.
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
    o = ctypes.create_string_buffer(_OPTS_SIZE)
    lib.amp_analyze_defaults(o)
    for f in fl:
        if "," in f:
            raise ValueError("format %r: ',' in a format name" % f)
    check(lib.amp_analyze_parse_formats(",".join(fl).encode(), o))
    check(lib.amp_analyze_parse_scales(",".join(sl).encode(), o))
    ro = _round_opts(None, rounding, saturate, ftz, daz, sr_bits, seed, 0, 0, False)
    check(lib.amp_analyze_set_cast(o, ctypes.byref(ro)))
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
        rows = ctypes.c_void_p()
        nr = ctypes.c_size_t(0)
        buf = ctypes.create_string_buffer(4096)
        nums = (ctypes.c_double * _NUMS)()
        try:
            check(lib.amp_analyze_view(ctypes.byref(v), o, ctypes.byref(rows), ctypes.byref(nr)))
            for i in range(nr.value):
                lib.amp_analyze_row_at(rows, i, buf, len(buf), nums)
                cells = next(csv.reader([buf.value.decode("utf-8", "replace")]))
                row = _row(cells, nums)
                out.append(row + (row[_CSV_COLUMNS.index("scale_spec")].startswith("auto"),))
        finally:
            if rows:
                _lib.libc.free(rows)
    cols = list(zip(*out)) if out else [[] for _ in COLUMNS]
    arrays = []
    for name, col in zip(COLUMNS, cols):
        if name in _STR_COLUMNS:
            arrays.append(np.array(col, dtype=str) if col else np.array([], "<U1"))
        elif name == "auto":
            arrays.append(np.array(col, dtype=bool))
        elif name in _INT_COLUMNS:
            arrays.append(np.array(col, dtype=np.int64))
        else:
            arrays.append(np.array(col, dtype=np.float64))
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
