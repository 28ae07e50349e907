"""Loading libampsim and the ctypes mirrors of its public structs.

The library is looked for, in this order:

1. next to the package in the source tree (``python/ampsim`` ->
   ``build/libampsim.so``), which is what ``make`` builds;
2. the installed library (``libampsim.so.0`` or ``libampsim.so``, found by the
   dynamic loader or ``ctypes.util.find_library``);
3. the path in the environment variable ``AMPSIM_LIB``.

Only functions declared in the public headers (``sim/amp_*.h``,
``analysis/amp_*.h``, ``reports/amp_report.h``) are bound. Every struct mirror
is checked against the library's own ``sizeof`` at import time, so a library
built from other headers is refused instead of corrupting memory.

Calls go through ``ctypes.CDLL``, which releases the GIL for the duration of
each C call: rounding in several Python threads runs in parallel.
"""
import ctypes
import ctypes.util
import os

__all__ = ["lib", "libc", "AmpsimError", "check", "errmsg", "library_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    yield os.path.normpath(os.path.join(_HERE, "..", "..", "build", "libampsim.so"))
    # installed by `make install`: PREFIX/lib/python3/dist-packages/ampsim -> PREFIX/lib
    parts = _HERE.split(os.sep)
    if parts[-3:-1] == ["python3", "dist-packages"]:
        for name in ("libampsim.so.0", "libampsim.so"):
            yield os.path.normpath(os.path.join(_HERE, "..", "..", "..", name))
    for name in ("libampsim.so.0", "libampsim.so"):
        yield name
    found = ctypes.util.find_library("ampsim")
    if found:
        yield found
    env = os.environ.get("AMPSIM_LIB")
    if env:
        yield env


def _load():
    tried = []
    for cand in _candidates():
        if os.path.sep in cand and not os.path.exists(cand):
            tried.append(cand + " (missing)")
            continue
        try:
            return ctypes.CDLL(cand), cand
        except OSError as e:
            tried.append("%s (%s)" % (cand, e))
    raise ImportError(
        "ampsim: cannot find libampsim.so; run `make` in the ampsim source tree to build it "
        "(or `make install`, or set AMPSIM_LIB to its path). Tried: " + "; ".join(tried))


lib, library_path = _load()
libc = ctypes.CDLL(None)
libc.free.argtypes = [ctypes.c_void_p]
libc.free.restype = None

c_int, c_uint, c_long, c_size_t = ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.c_size_t
c_double, c_float, c_char_p, c_void_p = ctypes.c_double, ctypes.c_float, ctypes.c_char_p, ctypes.c_void_p
c_uint64, c_int64, c_uint8 = ctypes.c_uint64, ctypes.c_int64, ctypes.c_uint8
POINTER = ctypes.POINTER

AMP_OK, AMP_EINVAL, AMP_EIO, AMP_ENOMEM, AMP_EFORMAT, AMP_ERANGE, AMP_ERUN = range(7)

AMP_SATURATE, AMP_FTZ, AMP_DAZ, AMP_EXACT = 1, 2, 4, 8
AMP_HIST_LO, AMP_HIST_BINS = -160, 320
AMP_CLS_COUNT = 9
AMP_SCALER_MAX_EVENTS = 8
AMP_ANALYZE_MAX_FORMATS = AMP_ANALYZE_MAX_SCALES = 32
AMP_MAX_DIMS = 8


class AmpFormat(ctypes.Structure):
    """Mirror of ``amp_format`` (sim/amp_format.h)."""
    _fields_ = [("name", ctypes.c_char * 24), ("id", c_int), ("bits", c_int), ("ebits", c_int),
                ("mbits", c_int), ("bias", c_int), ("has_inf", c_int), ("nan", c_int),
                ("has_neg_zero", c_int), ("has_subnormals", c_int), ("is_signed", c_int),
                ("max_finite", c_double), ("emin", c_int), ("emax", c_int),
                ("min_normal", c_double), ("min_subnormal", c_double), ("epsilon", c_double)]


class AmpRoundOpts(ctypes.Structure):
    """Mirror of ``amp_round_opts`` (sim/amp_round.h)."""
    _fields_ = [("mode", c_int), ("flags", c_uint), ("sr_bits", c_int), ("seed", c_uint64),
                ("stream", c_uint64), ("index0", c_uint64)]


class AmpStats(ctypes.Structure):
    """Mirror of ``amp_stats`` (sim/amp_round.h)."""
    _fields_ = [("n", c_uint64), ("cls", c_uint64 * AMP_CLS_COUNT), ("amax", c_double),
                ("amin_nonzero", c_double), ("sum_sq_err", c_double), ("sum_sq", c_double),
                ("sum_rel_sq", c_double), ("n_rel", c_uint64), ("hist_lo", c_int), ("hist_hi", c_int),
                ("hist", c_uint64 * AMP_HIST_BINS)]


class AmpScalerSpec(ctypes.Structure):
    """Mirror of ``amp_scaler_spec`` (sim/amp_scaler.h)."""
    _fields_ = [("kind", c_int), ("text", ctypes.c_char * 160), ("init", c_double), ("growth", c_double),
                ("backoff", c_double), ("min", c_double), ("max", c_double), ("interval", c_long),
                ("hysteresis", c_long), ("consecutive", c_int), ("raise_", c_int), ("skip", c_int),
                ("pow2", c_int), ("underflow", c_double), ("flush", c_double), ("headroom", c_double),
                ("history", c_long), ("margin", c_long), ("algo", c_int), ("block", c_long),
                ("exp_ceil", c_int), ("fmt_hybrid", c_int), ("fmt", AmpFormat)]


class AmpScaler(ctypes.Structure):
    """Mirror of ``amp_scaler`` (sim/amp_scaler.h)."""
    _fields_ = [("spec", AmpScalerSpec), ("step", c_long), ("scale", c_float), ("dscale", c_double),
                ("tracker", c_long), ("hyst", c_long), ("last_overflow", c_long), ("ceiling", c_float),
                ("failed", c_int), ("gexp", c_int), ("n_tensors", c_size_t), ("texp", POINTER(c_int))]


class AmpScalerEvent(ctypes.Structure):
    """Mirror of ``amp_scaler_event``."""
    _fields_ = [("kind", c_int), ("tensor", c_long), ("detail", ctypes.c_char * 120)]


class AmpScalerResult(ctypes.Structure):
    """Mirror of ``amp_scaler_result``."""
    _fields_ = [("step", c_long), ("skipped", c_int), ("scale_used", c_float), ("scale_after", c_float),
                ("held_used", c_double), ("held_after", c_double), ("n_events", c_int), ("events_dropped", c_int),
                ("events", AmpScalerEvent * AMP_SCALER_MAX_EVENTS)]


class AmpScalerTensor(ctypes.Structure):
    """Mirror of ``amp_scaler_tensor``."""
    _fields_ = [("name", c_char_p), ("is_act", c_int), ("fmt", POINTER(AmpFormat)),
                ("st", POINTER(AmpStats)), ("scale", c_float)]


class AmpScalerObs(ctypes.Structure):
    """Mirror of ``amp_scaler_obs``."""
    _fields_ = [("found_inf", c_int), ("n_tensors", c_size_t), ("tensors", POINTER(AmpScalerTensor))]


class AmpFp8TState(ctypes.Structure):
    """Mirror of ``amp_fp8_tstate``."""
    _fields_ = [("scale", c_float), ("hist", POINTER(c_float)), ("count", c_long)]


class AmpFp8Scaler(ctypes.Structure):
    """Mirror of ``amp_fp8_scaler``."""
    _fields_ = [("spec", AmpScalerSpec), ("n", c_size_t), ("t", POINTER(AmpFp8TState))]


class AmpFp8Info(ctypes.Structure):
    """Mirror of ``amp_fp8_info``."""
    _fields_ = [("fmt", POINTER(AmpFormat)), ("amax", c_float), ("scale", c_float),
                ("scale_next", c_float), ("n_blocks", c_size_t), ("kept", c_int), ("nonfinite", c_size_t)]


class AmpWhatifGrad(ctypes.Structure):
    """Mirror of ``amp_whatif_grad`` (sim/amp_whatif.h)."""
    _fields_ = [("name", c_char_p), ("g", c_void_p), ("n", c_size_t), ("fmt", POINTER(AmpFormat)),
                ("ro", AmpRoundOpts)]


class AmpTensorView(ctypes.Structure):
    """Mirror of ``amp_tensor_view`` (analysis/amp_tensorio.h)."""
    _fields_ = [("name", ctypes.c_char * 256), ("dtype", c_int), ("ndim", c_int),
                ("shape", c_size_t * AMP_MAX_DIMS), ("n", c_size_t), ("data", c_void_p)]


AMP_DT_F16, AMP_DT_BF16, AMP_DT_F32, AMP_DT_F64 = 0, 1, 2, 3


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P = POINTER
# base
_fn("amp_errmsg", c_char_p)
_fn("amp_status_name", c_char_p, c_int)
# formats
_fn("amp_format_count", c_int)
_fn("amp_format_get", P(AmpFormat), c_int)
_fn("amp_format_parse", c_int, c_char_p, P(AmpFormat))
_fn("amp_format_csv_header", c_char_p)
_fn("amp_format_csv_row", c_int, P(AmpFormat), c_char_p, c_size_t)
_fn("amp_nan_name", c_char_p, c_int)
# rounding
_fn("amp_round_abi_size", c_size_t, c_char_p)
_fn("amp_round_defaults", AmpRoundOpts)
_fn("amp_rounding_name", c_char_p, c_int)
_fn("amp_rounding_parse", c_int, c_char_p, P(c_int))
_fn("amp_class_name", c_char_p, c_int)
_fn("amp_stats_init", None, P(AmpStats))
_fn("amp_stats_merge", None, P(AmpStats), P(AmpStats))
_fn("amp_stats_rel_err", c_double, P(AmpStats))
_fn("amp_stats_in_normal_range", c_double, P(AmpStats))
_fn("amp_round_f32", c_int, P(AmpFormat), P(AmpRoundOpts), c_void_p, c_void_p, c_size_t, P(AmpStats))
_fn("amp_round_f64", c_int, P(AmpFormat), P(AmpRoundOpts), c_void_p, c_void_p, c_size_t, P(AmpStats))
_fn("amp_round1", c_float, P(AmpFormat), P(AmpRoundOpts), c_double, c_uint64, P(c_int))
_fn("amp_round1_mpfr", c_float, P(AmpFormat), P(AmpRoundOpts), c_double, c_uint64, P(c_int))
_fn("amp_encode", c_int, P(AmpFormat), c_void_p, c_void_p, c_size_t)
_fn("amp_decode", c_int, P(AmpFormat), c_void_p, c_void_p, c_size_t)
_fn("amp_set_threads", None, c_int)
_fn("amp_get_threads", c_int)
# scalers
_fn("amp_scaler_abi_size", c_size_t, c_char_p)
_fn("amp_scaler_spec_parse", c_int, c_char_p, P(AmpScalerSpec))
_fn("amp_scaler_spec_str", c_int, P(AmpScalerSpec), c_char_p, c_size_t)
_fn("amp_scaler_kind_name", c_char_p, c_int)
_fn("amp_scaler_kind_is_fp8", c_int, c_int)
_fn("amp_scaler_spec_help", c_char_p)
_fn("amp_scaler_event_name", c_char_p, c_int)
_fn("amp_scaler_init", c_int, P(AmpScaler), P(AmpScalerSpec))
_fn("amp_scaler_free", None, P(AmpScaler))
_fn("amp_scaler_scale", c_float, P(AmpScaler))
_fn("amp_scaler_held", c_double, P(AmpScaler))
_fn("amp_scaler_fmt_scale", c_int, c_int, c_double, c_char_p, c_size_t)
_fn("amp_scaler_tensor_scale", c_float, P(AmpScaler), c_size_t)
_fn("amp_scaler_is_layerwise", c_int, P(AmpScaler))
_fn("amp_scaler_needs_stats", c_int, P(AmpScaler))
_fn("amp_scaler_inv", c_float, c_float)
_fn("amp_scaler_update", c_int, P(AmpScaler), P(AmpScalerObs), P(AmpScalerResult))
_fn("amp_scaler_save", c_int, P(AmpScaler), P(c_void_p), P(c_size_t))
_fn("amp_scaler_load", c_int, P(AmpScaler), c_void_p, c_size_t)
_fn("amp_fp8_init", c_int, P(AmpFp8Scaler), P(AmpScalerSpec))
_fn("amp_fp8_free", None, P(AmpFp8Scaler))
_fn("amp_fp8_format", P(AmpFormat), P(AmpFp8Scaler), c_int)
_fn("amp_fp8_nblocks", c_size_t, P(AmpFp8Scaler), c_int, c_size_t, c_size_t)
_fn("amp_fp8_quantize", c_int, P(AmpFp8Scaler), c_size_t, c_int, c_void_p, c_size_t, c_size_t,
    c_void_p, c_void_p, c_void_p, P(AmpStats), P(AmpFp8Info))
_fn("amp_fp8_save", c_int, P(AmpFp8Scaler), P(c_void_p), P(c_size_t))
_fn("amp_fp8_load", c_int, P(AmpFp8Scaler), c_void_p, c_size_t)
_fn("amp_fp8_observe_amax", c_int, P(AmpFp8Scaler), c_size_t, P(AmpFormat), c_float, P(c_float), P(c_float))
# analysis
_fn("amp_analyze_abi_size", c_size_t, c_char_p)
# what-if shadows
_fn("amp_whatif_abi_size", c_size_t, c_char_p)
_fn("amp_whatif_create", c_int, P(c_void_p), c_char_p)
_fn("amp_whatif_open", c_int, P(c_void_p), c_char_p, c_char_p)
_fn("amp_whatif_set_format", None, c_void_p, P(AmpFormat))
_fn("amp_whatif_step", c_int, c_void_p, ctypes.c_int64, P(AmpWhatifGrad), c_size_t, c_int, c_void_p)
_fn("amp_whatif_close", c_int, c_void_p)
_fn("amp_whatif_free", None, c_void_p)
_fn("amp_analyze_defaults", None, c_void_p)
_fn("amp_analyze_parse_formats", c_int, c_char_p, c_void_p)
_fn("amp_analyze_parse_scales", c_int, c_char_p, c_void_p)
_fn("amp_analyze_set_cast", c_int, c_void_p, P(AmpRoundOpts))
_fn("amp_analyze_row_at", c_size_t, c_void_p, c_size_t, c_char_p, c_size_t, P(c_double))
_fn("amp_analyze_view", c_int, P(AmpTensorView), c_void_p, P(c_void_p), P(c_size_t))
_fn("amp_analyze_csv_header", c_char_p)
# run directories and reports
_fn("amp_role_name", c_char_p, c_int)
_fn("amp_runlog_open", c_int, P(c_void_p), c_char_p, c_char_p)
_fn("amp_runlog_metrics", c_int, c_void_p, c_int64, c_float, c_double, c_int, c_int, c_double, c_float,
    c_uint64, c_uint64, c_double)
_fn("amp_runlog_tensor", c_int, c_void_p, c_int64, c_char_p, c_int, c_char_p, P(AmpStats), c_int, c_int)
_fn("amp_runlog_event", c_int, c_void_p, c_int64, c_char_p, c_char_p, c_char_p)
_fn("amp_runlog_close", c_int, c_void_p, c_char_p)
_fn("amp_runlog_abort", None, c_void_p)


def _check_abi():
    mirrors = [("amp_round_abi_size", AmpFormat, "amp_format"),
               ("amp_round_abi_size", AmpRoundOpts, "amp_round_opts"),
               ("amp_round_abi_size", AmpStats, "amp_stats"),
               ("amp_scaler_abi_size", AmpScalerSpec, "amp_scaler_spec"),
               ("amp_scaler_abi_size", AmpScaler, "amp_scaler"),
               ("amp_scaler_abi_size", AmpScalerEvent, "amp_scaler_event"),
               ("amp_scaler_abi_size", AmpScalerResult, "amp_scaler_result"),
               ("amp_scaler_abi_size", AmpScalerTensor, "amp_scaler_tensor"),
               ("amp_scaler_abi_size", AmpScalerObs, "amp_scaler_obs"),
               ("amp_scaler_abi_size", AmpFp8Scaler, "amp_fp8_scaler"),
               ("amp_scaler_abi_size", AmpFp8Info, "amp_fp8_info"),
               ("amp_analyze_abi_size", AmpTensorView, "amp_tensor_view"),
               ("amp_whatif_abi_size", AmpWhatifGrad, "amp_whatif_grad")]
    for fn, cls, cname in mirrors:
        want = getattr(lib, fn)(cname.encode())
        if want != ctypes.sizeof(cls):
            raise ImportError("ampsim: %s: struct %s is %d bytes in the library but %d in the Python "
                              "mirror; the package and the library come from different versions "
                              "(rebuild with `make`)" % (library_path, cname, want, ctypes.sizeof(cls)))


_check_abi()


class AmpsimError(RuntimeError):
    """A library call failed for a reason other than bad input (I/O, memory).

    Attributes
    ----------
    status : int
        The library's ``amp_status`` code.
    """

    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


def errmsg():
    """The library's last error message on this thread (str)."""
    return lib.amp_errmsg().decode("utf-8", "replace")


def check(status, exc=None):
    """Raise for a non-zero ``amp_status``: ``exc`` if given, else ValueError
    for AMP_EINVAL / AMP_ERANGE, OSError for AMP_EIO, MemoryError for
    AMP_ENOMEM and AmpsimError otherwise; the message is the library's."""
    if status == AMP_OK:
        return
    msg = errmsg() or lib.amp_status_name(status).decode()
    if exc is not None:
        raise exc(msg)
    if status in (AMP_EINVAL, AMP_ERANGE):
        raise ValueError(msg)
    if status == AMP_EIO:
        raise OSError(msg)
    if status == AMP_ENOMEM:
        raise MemoryError(msg)
    raise AmpsimError(status, msg)


def names(fn):
    """The names fn(0), fn(1), ... up to the first "?" (an enum's names)."""
    out = []
    i = 0
    while True:
        s = fn(i).decode()
        if s == "?":
            return out
        out.append(s)
        i += 1


def encode_str(s, what):
    """s as a NUL-free UTF-8 bytes object; TypeError if not a str."""
    if isinstance(s, bytes):
        s = s.decode("utf-8", "replace")
    if not isinstance(s, str):
        raise TypeError("%s must be a str, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("%s: NUL character in %r" % (what, s))
    return s.encode("utf-8")
