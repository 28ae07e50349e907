"""Formats, exact rounding, bit patterns and cast statistics."""
import ctypes
import operator

import numpy as np

from . import _lib
from ._lib import lib, check, encode_str

__all__ = ["Format", "formats", "round", "encode", "decode", "Stats", "roundings", "classes",
           "set_threads", "get_threads"]

_NAN_NAMES = ["ieee", "s.1..1.1..1", "0x80..0", "none", "0xff"]
CLASSES = tuple(_lib.names(lib.amp_class_name))
ROUNDINGS = tuple(_lib.names(lib.amp_rounding_name))
_U64 = 1 << 64


def classes():
    """The classification counters' names, in the library's order.

    Returns
    -------
    tuple of str
        ``("nan_in", "inf_in", "zero_in", "overflow", "saturated", "flushed",
        "subnormal", "exact", "rounded")``: every rounded value falls in exactly
        one, the first that applies.
    """
    return CLASSES


def roundings():
    """The rounding-mode names ``round`` accepts (tuple of str)."""
    return ROUNDINGS


def set_threads(n):
    """Set the number of OpenMP threads of the rounding kernels (0 = default).

    Results never depend on the thread count.
    """
    n = operator.index(n)
    if n < 0 or n > 4096:
        raise ValueError("threads must be 0..4096, got %d" % n)
    lib.amp_set_threads(n)


def get_threads():
    """The number of threads the rounding kernels use (int)."""
    return lib.amp_get_threads()


class Format:
    """A number format: a table row ("fp16", "e4m3", ...), an alias
    ("float16", "bfloat16", "e4m3fn", ...) or a custom ``eXmY``, ``eXmYfn`` or
    ``eXmYfnuz`` format.

    Parameters
    ----------
    name : str or Format
        The format's name, as ``ampsim round --format`` takes it.

    Raises
    ------
    ValueError
        Unknown or impossible format (the library's message).
    TypeError
        ``name`` is not a str.

    Attributes
    ----------
    name : str
        Canonical name ("e4m3" for "e4m3fn").
    bits, ebits, mbits, bias : int
        Storage bits, exponent bits, mantissa bits, exponent bias.
    has_inf, has_neg_zero, has_subnormals, is_signed : bool
    nan : str
        The NaN encoding: "ieee", "s.1..1.1..1", "0x80..0", "none" or "0xff".
    max_finite, min_normal, min_subnormal, epsilon : float
        Largest finite value, smallest normal, smallest subnormal (the smallest
        normal when there are none), and 2**-mbits.
    emin, emax : int
        Exponent of the smallest normal and floor(log2(max_finite)).

    Examples
    --------
    >>> Format("e4m3").max_finite
    448.0
    >>> Format("e3m4fn").bits
    8
    """

    __slots__ = ("_f", "_ref")

    def __init__(self, name):
        if isinstance(name, Format):
            self._f = _lib.AmpFormat.from_buffer_copy(name._f)
        else:
            f = _lib.AmpFormat()
            check(lib.amp_format_parse(encode_str(name, "format"), ctypes.byref(f)))
            self._f = f
        self._ref = ctypes.byref(self._f)

    @classmethod
    def _from_c(cls, f):
        self = cls.__new__(cls)
        self._f = _lib.AmpFormat.from_buffer_copy(f)
        self._ref = ctypes.byref(self._f)
        return self

    name = property(lambda self: self._f.name.decode(), doc="Canonical name (str).")
    bits = property(lambda self: self._f.bits, doc="Storage bits (int).")
    ebits = property(lambda self: self._f.ebits, doc="Exponent bits (int).")
    mbits = property(lambda self: self._f.mbits, doc="Mantissa bits (int).")
    bias = property(lambda self: self._f.bias, doc="Exponent bias (int).")
    has_inf = property(lambda self: bool(self._f.has_inf), doc="Has infinities (bool).")
    has_neg_zero = property(lambda self: bool(self._f.has_neg_zero), doc="Has -0 (bool).")
    has_subnormals = property(lambda self: bool(self._f.has_subnormals), doc="Has subnormals (bool).")
    is_signed = property(lambda self: bool(self._f.is_signed), doc="Has a sign bit (bool).")
    nan = property(lambda self: lib.amp_nan_name(self._f.nan).decode(), doc="NaN encoding (str).")
    max_finite = property(lambda self: self._f.max_finite, doc="Largest finite value (float).")
    min_normal = property(lambda self: self._f.min_normal, doc="Smallest normal value (float).")
    min_subnormal = property(lambda self: self._f.min_subnormal, doc="Smallest positive value (float).")
    epsilon = property(lambda self: self._f.epsilon, doc="2**-mbits (float).")
    emin = property(lambda self: self._f.emin, doc="Exponent of the smallest normal (int).")
    emax = property(lambda self: self._f.emax, doc="floor(log2(max_finite)) (int).")

    def as_dict(self):
        """The traits as a dict with the fields of ``ampsim formats --csv``."""
        return _csv_dict(self._f)

    def __eq__(self, other):
        if not isinstance(other, Format):
            return NotImplemented
        return bytes(self._f) == bytes(other._f)

    def __hash__(self):
        return hash(bytes(self._f))

    def __reduce__(self):
        return (Format, (self.name,))

    def __repr__(self):
        return "Format(%r)" % self.name

    def __str__(self):
        return self.name


_FLOAT_FIELDS = ("max_finite", "min_normal", "min_subnormal")


def _csv_dict(f):
    head = lib.amp_format_csv_header().decode().split(",")
    buf = ctypes.create_string_buffer(512)
    lib.amp_format_csv_row(ctypes.byref(f), buf, len(buf))
    vals = buf.value.decode().split(",")
    out = {}
    for k, v in zip(head, vals):
        if k in _FLOAT_FIELDS:
            out[k] = float(v)
        else:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return out


def formats():
    """The built-in format table.

    Returns
    -------
    list of dict
        One dict per format, with the fields (and numbers, as printed with
        ``%.9g``) of ``ampsim formats --csv``: name, bits, exp_bits, man_bits,
        bias, max_finite, min_normal, min_subnormal, has_inf, nan.
    """
    return [_csv_dict(lib.amp_format_get(i).contents) for i in range(lib.amp_format_count())]


def _format_arg(fmt):
    if isinstance(fmt, Format):
        return fmt
    if isinstance(fmt, (str, bytes)):
        return Format(fmt)
    raise TypeError("format must be a str or ampsim.Format, not %s" % type(fmt).__name__)


class Stats:
    """What a rounding did: classification counts, range and error.

    ``round(x, fmt, stats=True)`` returns one. ``a + b`` merges two (the
    counts and histograms add, ``amax`` is the larger, ...). ``Stats()`` is
    empty, the neutral element of ``+``.

    Attributes
    ----------
    n : int
        Values rounded.
    counts : dict
        The nine class counts, ``{class name: count}`` (see ``classes()``):
        nan_in, inf_in, zero_in, overflow (finite input -> inf/NaN),
        saturated (clamped to max finite), flushed (nonzero -> 0), subnormal
        (subnormal result), exact, rounded.
    amax : float
        max |x| over non-NaN inputs (0.0 if none).
    amin_nonzero : float
        min nonzero finite |x| (inf if none).
    rel_err : float
        RMS relative error over nonzero finite inputs with finite results.
    in_normal_range : float
        Fraction of nonzero finite inputs whose result is normal.
    hist : dict
        ``{binade: count}`` of floor(log2|x|) of the finite nonzero inputs
        (binades beyond -160..159 are clamped into the end bins).
    format : Format or None
        The format the values were rounded into, when known.

    The class counts are also attributes (``st.flushed``, ``st.overflow``...).
    """

    __slots__ = ("_s", "format")

    def __init__(self):
        self._s = _lib.AmpStats()
        lib.amp_stats_init(ctypes.byref(self._s))
        self.format = None

    @classmethod
    def _wrap(cls, s, fmt=None):
        self = cls.__new__(cls)
        self._s = s
        self.format = fmt
        return self

    n = property(lambda self: int(self._s.n), doc="Values rounded (int).")
    amax = property(lambda self: self._s.amax, doc="max |x| over non-NaN inputs (float).")
    amin_nonzero = property(lambda self: self._s.amin_nonzero, doc="min nonzero finite |x| (float).")

    @property
    def counts(self):
        """The nine class counts as ``{name: int}`` (library order)."""
        return {name: int(self._s.cls[i]) for i, name in enumerate(CLASSES)}

    @property
    def rel_err(self):
        """RMS relative rounding error (float)."""
        return lib.amp_stats_rel_err(ctypes.byref(self._s))

    @property
    def in_normal_range(self):
        """Fraction of nonzero finite inputs whose result is normal (float)."""
        return lib.amp_stats_in_normal_range(ctypes.byref(self._s))

    @property
    def hist(self):
        """``{binade: count}`` of the finite nonzero inputs (dict of int)."""
        s = self._s
        lo, hi = s.hist_lo, s.hist_hi
        if lo > hi:
            return {}
        h = np.frombuffer(s.hist, dtype=np.uint64)
        return {b + _lib.AMP_HIST_LO: int(h[b]) for b in range(lo, hi + 1) if h[b]}

    def __getattr__(self, name):
        if name in CLASSES:
            return int(self._s.cls[CLASSES.index(name)])
        raise AttributeError("'Stats' object has no attribute %r" % name)

    def __add__(self, other):
        if not isinstance(other, Stats):
            return NotImplemented
        s = _lib.AmpStats.from_buffer_copy(self._s)
        lib.amp_stats_merge(ctypes.byref(s), ctypes.byref(other._s))
        if self.format is None or other.format is None:
            fmt = self.format if other.format is None else other.format
        else:
            fmt = self.format if self.format == other.format else None
        return Stats._wrap(s, fmt)

    def __radd__(self, other):
        if other == 0:  # sum() starts from 0
            return Stats._wrap(_lib.AmpStats.from_buffer_copy(self._s), self.format)
        return NotImplemented

    def as_dict(self):
        """Everything as plain Python values.

        Returns
        -------
        dict
            n, the nine class counts, amax, amin_nonzero, rel_err,
            in_normal_range, hist (``{binade: count}``) and format (name or
            None).
        """
        d = {"n": self.n}
        d.update(self.counts)
        d.update(amax=self.amax, amin_nonzero=self.amin_nonzero, rel_err=self.rel_err,
                 in_normal_range=self.in_normal_range, hist=self.hist,
                 format=self.format.name if self.format is not None else None)
        return d

    def __eq__(self, other):
        if not isinstance(other, Stats):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None

    def __repr__(self):
        c = ", ".join("%s=%d" % kv for kv in self.counts.items() if kv[1])
        return "Stats(n=%d, %s, amax=%g, rel_err=%g)" % (self.n, c or "empty", self.amax, self.rel_err)


def _u64(v, what):
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__)) from None
    if v < 0 or v >= _U64:
        raise ValueError("%s must be in 0..2**64-1, got %d" % (what, v))
    return v


def _opts(fmt, rounding, saturate, ftz, daz, sr_bits, seed, stream, index0, exact):
    o = lib.amp_round_defaults()
    mode = ctypes.c_int()
    check(lib.amp_rounding_parse(encode_str(rounding, "rounding"), ctypes.byref(mode)))
    o.mode = mode.value
    flags = 0
    for on, bit in ((saturate, _lib.AMP_SATURATE), (ftz, _lib.AMP_FTZ), (daz, _lib.AMP_DAZ),
                    (exact, _lib.AMP_EXACT)):
        if on:
            flags |= bit
    o.flags = flags
    if sr_bits is not None:
        try:
            k = operator.index(sr_bits)
        except TypeError:
            raise TypeError("sr_bits must be an int or None, not %s" % type(sr_bits).__name__) from None
        if not 1 <= k <= 64:
            raise ValueError("sr_bits must be 1..64, got %d" % k)
        o.sr_bits = k
    o.seed = _u64(seed, "seed")
    o.stream = _u64(stream, "stream")
    o.index0 = _u64(index0, "index0")
    return o


_F32_NUM = np.dtype(np.float32).num
_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def _addr(a):
    """The address of a C-contiguous array's first element (the quick way
    for writeable, non-empty arrays)."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data
_FORMATS = {}    # format name -> Format (parsed once)
_OPTS = {}       # option tuple -> byref(AmpRoundOpts) (the C side only reads them)


def _cached_opts(rounding, saturate, ftz, daz, sr_bits, seed, stream, index0, exact):
    try:
        key = (rounding, saturate, ftz, daz, sr_bits, seed, stream, index0, exact, type(rounding), type(sr_bits),
               type(seed), type(stream), type(index0))
        o = _OPTS.get(key)
    except TypeError:  # unhashable argument: the full check names it
        key, o = None, None
    if o is None:
        o = ctypes.byref(_opts(None, rounding, saturate, ftz, daz, sr_bits, seed, stream, index0, exact))
        if key is not None and len(_OPTS) < 1024:
            _OPTS[key] = o
    return o


_FLOAT_KINDS = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


def _float_input(x):
    """x as a C-contiguous native float32 or float64 array (float16 widened)."""
    if not isinstance(x, np.ndarray):
        if isinstance(x, (str, bytes)) or x is None:
            raise TypeError("expected a float array, got %s" % type(x).__name__)
        try:
            x = np.asarray(x)
        except Exception as e:
            raise TypeError("cannot make an array of %s: %s" % (type(x).__name__, e)) from None
    dt = x.dtype
    if dt.kind != "f" or dt.newbyteorder("=") not in _FLOAT_KINDS:
        raise TypeError("unsupported dtype %s: ampsim rounds float16, float32 or float64 arrays" % dt)
    if dt.itemsize == 2:
        return np.asarray(x, dtype=np.float32, order="C")
    native = dt.newbyteorder("=")
    return np.asarray(x, dtype=native, order="C")


def _out_array(out, shape):
    if out is None:
        return np.empty(shape, dtype=np.float32)
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy float32 array, not %s" % type(out).__name__)
    if out.dtype != np.float32:
        raise TypeError("out must be float32, not %s" % out.dtype)
    if out.shape != tuple(shape):
        raise ValueError("out has shape %s, the input %s" % (out.shape, tuple(shape)))
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    return out


def round(x, fmt, rounding="rne", *, saturate=False, ftz=False, daz=False, sr_bits=None, seed=0,
          stream=0, stats=False, out=None, index0=0, exact=False):
    """Round every element of an array into a format, exactly.

    Parameters
    ----------
    x : array_like of float16, float32 or float64, any shape
        The values. float16 widens exactly to float32 first; float64 is
        rounded once, directly. Non-contiguous input is copied; contiguous
        native float32 is not.
    fmt : str or Format
        Target format ("fp16", "bf16", "e4m3", "e5m2", "e2m1", "e3m4fn", ...).
    rounding : str
        "rne" (nearest, ties to even), "rna" (ties away), "rtz", "rup", "rdn",
        "rto" (round to odd) or "sr" (stochastic).
    saturate : bool
        Finite overflow and +-inf go to +-max finite.
    ftz : bool
        Subnormal results flush to zero.
    daz : bool
        Inputs below the format's min normal read as zero.
    sr_bits : int or None
        sr: random bits used (1..64); None = every discarded bit.
    seed, stream : int
        sr: the generator key; element i (in C order) uses index ``index0 + i``.
    stats : bool
        Also return the ``Stats`` of this rounding.
    out : ndarray of float32, optional
        Where to write (C-contiguous, writeable, x's shape; may be x itself).
    index0 : int
        sr: index of element 0 (to round a large array in pieces).
    exact : bool
        Use the library's MPFR reference path (slow; same bits).

    Returns
    -------
    y : ndarray of float32
        x's shape; every value is a value of the format (NaN results are quiet
        float32 NaNs), bit-identical to ``ampsim round``.
    stats : Stats
        Only with ``stats=True``.

    Raises
    ------
    ValueError
        Bad format, rounding mode or option, or a bad ``out`` shape.
    TypeError
        x is not a float16/float32/float64 array (ints, complex, objects...).

    Notes
    -----
    The C call releases the GIL: rounding in several threads runs in parallel.

    Examples
    --------
    >>> import numpy as np, ampsim
    >>> ampsim.round(np.array([1.0, 1e-9, 70000.0], np.float32), "fp16")
    array([ 1.,  0., inf], dtype=float32)
    """
    f = _FORMATS.get(fmt) if type(fmt) is str else None
    if f is None:
        f = _format_arg(fmt)
        if type(fmt) is str and len(_FORMATS) < 256:
            _FORMATS[fmt] = f
    o = _cached_opts(rounding, saturate, ftz, daz, sr_bits, seed, stream, index0, exact)
    # fast path: a C-contiguous native float32 array is used as it is
    if type(x) is np.ndarray and x.dtype.num == _F32_NUM and x.flags.c_contiguous and x.dtype.isnative:
        xa = x
    else:
        xa = _float_input(x)
    if out is None:
        y = np.empty(xa.shape, dtype=np.float32)
    else:
        y = _out_array(out, xa.shape)
        if xa is not y and np.may_share_memory(xa, y) and \
                (xa.dtype.num != _F32_NUM or _addr(xa) != _addr(y)):
            xa = xa.copy()
    st = None
    if stats:
        st = _lib.AmpStats()
        lib.amp_stats_init(st)
    fn = lib.amp_round_f32 if xa.dtype.num == _F32_NUM else lib.amp_round_f64
    status = fn(f._ref, o, _addr(xa), _addr(y), xa.size, st)
    if status:
        check(status)
    if stats:
        return y, Stats._wrap(st, f)
    return y


def encode(x, fmt, rounding="rne", **kwargs):
    """Round x into a format and return the format's bit patterns.

    Parameters
    ----------
    x : array_like of float16, float32 or float64
    fmt : str or Format
        A format of at most 16 bits.
    rounding, **kwargs
        As for ``round`` (saturate, ftz, daz, sr_bits, seed, stream, index0,
        exact; not ``stats`` or ``out``).

    Returns
    -------
    ndarray of uint8 (formats of <= 8 bits; FP6/FP4 in the low bits) or uint16
        x's shape; the same bytes as ``ampsim round --encode``.

    Raises
    ------
    ValueError
        Bad format or option; a format of more than 16 bits; a NaN result in
        a format without NaN.
    TypeError
        Unsupported dtype.
    """
    for k in ("stats", "out"):
        if k in kwargs:
            raise TypeError("encode() got an unexpected keyword argument %r" % k)
    f = _format_arg(fmt)
    if f.bits > 16:
        raise ValueError("format %s has %d bits; bit patterns need at most 16" % (f.name, f.bits))
    y = round(x, f, rounding, **kwargs)
    bits = np.empty(y.shape, dtype=np.uint8 if f.bits <= 8 else np.uint16)
    check(lib.amp_encode(ctypes.byref(f._f), y.ctypes.data, bits.ctypes.data, y.size))
    return bits


def decode(bits, fmt):
    """Turn a format's bit patterns back into float32 values.

    Parameters
    ----------
    bits : array_like of unsigned or signed integers
        Patterns in the low ``fmt.bits`` bits (higher bits must be zero).
    fmt : str or Format
        A format of at most 16 bits.

    Returns
    -------
    ndarray of float32
        bits' shape.

    Raises
    ------
    ValueError
        Bad format, a format of more than 16 bits, or a pattern with bits set
        above the format's width.
    TypeError
        bits is not an integer array.
    """
    f = _format_arg(fmt)
    if f.bits > 16:
        raise ValueError("format %s has %d bits; bit patterns need at most 16" % (f.name, f.bits))
    if not isinstance(bits, np.ndarray):
        if isinstance(bits, (str, bytes)) or bits is None:
            raise TypeError("expected an integer array, got %s" % type(bits).__name__)
        bits = np.asarray(bits)
    if bits.dtype.kind not in "ui" or bits.dtype == np.bool_:
        raise TypeError("unsupported dtype %s: bit patterns are integers" % bits.dtype)
    limit = 1 << f.bits
    if bits.size and (int(bits.min()) < 0 or int(bits.max()) >= limit):
        bad = bits[(bits < 0) | (bits >= limit)].flat[0]
        raise ValueError("pattern %d has bits above the %d bits of %s" % (int(bad), f.bits, f.name))
    b = np.asarray(bits, dtype=np.uint8 if f.bits <= 8 else np.uint16, order="C")
    y = np.empty(b.shape, dtype=np.float32)
    check(lib.amp_decode(ctypes.byref(f._f), b.ctypes.data, y.ctypes.data, b.size))
    return y
