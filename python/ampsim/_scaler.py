"""Loss scalers and FP8 scaling strategies: the library's C state machines."""
import ctypes
import operator
import threading

import numpy as np

from . import _lib
from ._lib import lib, check, encode_str
from ._round import Format, Stats

__all__ = ["LossScaler", "FP8Scaler", "ScalerStopped", "scaler_kinds", "scaler_help"]

EVENTS = tuple(_lib.names(lib.amp_scaler_event_name))
KINDS = tuple(_lib.names(lib.amp_scaler_kind_name))
FP8_ROLES = ("act", "weight", "grad")


def format_scale(kind, value):
    """A scale as ampsim writes it (metrics.csv, scaler-replay): every digit
    that the double of apex and deepspeed needs, '%.9g' of the float32 scale
    of every other kind."""
    buf = ctypes.create_string_buffer(64)
    lib.amp_scaler_fmt_scale(KINDS.index(kind), float(value), buf, len(buf))
    return buf.value.decode()


def scaler_kinds():
    """Every strategy name a SPEC may start with (tuple of str)."""
    return KINDS


def scaler_help():
    """The library's SPEC help: every strategy with its keys and defaults (str)."""
    return lib.amp_scaler_spec_help().decode()


class ScalerStopped(RuntimeError):
    """The scaler's rule stopped the run (DeepSpeed's raise at the minimum
    scale). ``LossScaler.last_result`` holds the refused step."""


def _parse_spec(spec):
    if isinstance(spec, (LossScaler, FP8Scaler)):
        spec = spec.spec
    s = _lib.AmpScalerSpec()
    check(lib.amp_scaler_spec_parse(encode_str(spec, "SPEC"), ctypes.byref(s)))
    return s


def _spec_str(spec):
    buf = ctypes.create_string_buffer(1024)
    lib.amp_scaler_spec_str(ctypes.byref(spec), buf, len(buf))
    return buf.value.decode()


def _take_image(fn, obj):
    p = ctypes.c_void_p()
    n = ctypes.c_size_t()
    check(fn(ctypes.byref(obj), ctypes.byref(p), ctypes.byref(n)))
    try:
        return ctypes.string_at(p, n.value)
    finally:
        _lib.libc.free(p)


class _CScaler:
    """What both scaler classes share: the C state's lifetime, its SPEC and kind."""
    _free = None  # the C function that releases the state

    def _start(self, state, init, sp):
        self._sc = state
        check(init(ctypes.byref(self._sc), ctypes.byref(sp)))
        self._live = True
        self._lock = threading.Lock()

    def __del__(self):
        if getattr(self, "_live", False):
            self._live = False
            type(self)._free(ctypes.byref(self._sc))

    @property
    def spec(self):
        """The canonical SPEC with every key of the strategy (str)."""
        return _spec_str(self._sc.spec)

    @property
    def kind(self):
        """The strategy's name ("torch", "apex", "delayed", ...)."""
        return KINDS[self._sc.spec.kind]


class LossScaler(_CScaler):
    """A framework's loss-scaler state machine, run by the C library.

    Parameters
    ----------
    spec : str
        A SPEC as ``--scaler`` takes it: ``none``, ``static:init=1024``,
        ``torch``, ``apex``, ``deepspeed:hysteresis=2``, ``megatron``,
        ``keras``, ``underflow``, ``adaptive`` (keys and defaults:
        ``scaler_help()``).

    Raises
    ------
    ValueError
        Bad SPEC (the library's message), or an FP8 strategy (use FP8Scaler).

    Notes
    -----
    A training step reads: multiply the loss by ``scale_f32``, backward,
    unscale the gradients (in FP32, by ``LossScaler.inv(scale)``), then
    ``skipped = scaler.update(found_inf, stats)``. The trajectory is the one
    ``ampsim scaler-replay`` prints. One scaler must not be updated from two
    threads at once (calls are serialised by a lock).

    Examples
    --------
    >>> sc = LossScaler("torch:init=2^16,interval=2")
    >>> [sc.update(f) for f in (True, False, False)], sc.scale
    ([True, False, False], 65536.0)
    """

    def __init__(self, spec):
        sp = _parse_spec(spec)
        if lib.amp_scaler_kind_is_fp8(sp.kind):
            raise ValueError("%s: %s is an FP8 scaling strategy; use ampsim.FP8Scaler"
                             % (sp.text.decode(), KINDS[sp.kind]))
        self._start(_lib.AmpScaler(), lib.amp_scaler_init, sp)
        self.last_result = None
        """The last update's result, None before the first: a dict of step,
        skipped, events, scale_used and scale_after (the scale before and
        after the update in the framework's own type, as ``scale``),
        scale_f32_used and scale_f32_after (their float32 images, as
        ``scale_f32``), and held_used/held_after (the same as scale_used and
        scale_after)."""

    @property
    def scale(self):
        """The loss scale as the framework holds it (float), the value
        ``ampsim scaler-replay`` prints: the Python float (a double) of apex
        and deepspeed, which grows past the float32 range (2^128 and up stay
        finite), else the float32 scale of torch, megatron, keras ...
        The number that multiplies the loss is ``scale_f32``."""
        return float(lib.amp_scaler_held(ctypes.byref(self._sc)))

    @property
    def scale_f32(self):
        """The float32 scale that multiplies the float32 loss before backward
        (float; ``inf`` once a double scale passes the float32 range): every
        framework multiplies by a float32."""
        return float(lib.amp_scaler_scale(ctypes.byref(self._sc)))

    @property
    def held(self):
        """The same as ``scale`` (the scale in the framework's own type)."""
        return self.scale

    @property
    def step(self):
        """Updates done (int)."""
        return int(self._sc.step)

    @property
    def layerwise(self):
        """True if the strategy keeps one scale per gradient tensor (adaptive)."""
        return bool(lib.amp_scaler_is_layerwise(ctypes.byref(self._sc)))

    @property
    def needs_stats(self):
        """True if ``update`` reads per-tensor statistics (adaptive, underflow)."""
        return bool(lib.amp_scaler_needs_stats(ctypes.byref(self._sc)))

    def tensor_scale(self, i):
        """Scale of gradient tensor ``i`` (per tensor for layer-wise strategies,
        else the global scale)."""
        i = operator.index(i)
        if i < 0:
            raise ValueError("tensor index must be >= 0, got %d" % i)
        return float(lib.amp_scaler_tensor_scale(ctypes.byref(self._sc), i))

    @staticmethod
    def inv(scale):
        """The unscale factor as the frameworks compute it: float32(1/double(s))."""
        return float(lib.amp_scaler_inv(float(scale)))

    def update(self, found_inf, stats=None, *, is_act=None):
        """Apply one step's observation.

        Parameters
        ----------
        found_inf : bool
            Any inf/NaN in the unscaled gradients this step.
        stats : Stats, sequence of Stats, dict of name -> Stats, or None
            The statistics of rounding each *scaled* gradient tensor into its
            format (``round(g * scale, fmt, stats=True)``), in a fixed tensor
            order from step to step. ``underflow`` and ``adaptive`` read their
            flushed counts and histograms from them; other strategies ignore
            them. A Stats without a format uses the SPEC's format.
        is_act : sequence of bool, optional
            Per tensor: an activation gradient (True) or a weight gradient.

        Returns
        -------
        bool
            True if the optimizer step must be skipped.

        Raises
        ------
        ScalerStopped
            The rule stops the run (DeepSpeed at its minimum scale); every
            later call raises it again.
        TypeError
            stats holds something other than Stats.
        """
        names, items = [], []
        if stats is None:
            pass
        elif isinstance(stats, Stats):
            names, items = [None], [stats]
        elif isinstance(stats, dict):
            for k, v in stats.items():
                names.append(str(k))
                items.append(v)
        else:
            try:
                items = list(stats)
            except TypeError:
                raise TypeError("stats must be Stats, a sequence or dict of Stats, or None") from None
            names = [None] * len(items)
        for v in items:
            if not isinstance(v, Stats):
                raise TypeError("stats entries must be ampsim.Stats, not %s" % type(v).__name__)
        if is_act is not None:
            is_act = [bool(a) for a in is_act]
            if len(is_act) != len(items):
                raise ValueError("is_act has %d entries for %d tensors" % (len(is_act), len(items)))
        n = len(items)
        arr = (_lib.AmpScalerTensor * max(n, 1))()
        keep = []
        with self._lock:
            layerwise = self.layerwise
            for i, v in enumerate(items):
                t = arr[i]
                if names[i] is not None:
                    b = ctypes.create_string_buffer(encode_str(names[i], "tensor name"))
                    keep.append(b)
                    t.name = ctypes.cast(b, ctypes.c_char_p)
                t.is_act = int(bool(is_act[i])) if is_act else 0
                if v.format is not None:
                    t.fmt = ctypes.pointer(v.format._f)
                t.st = ctypes.pointer(v._s)
                t.scale = lib.amp_scaler_tensor_scale(ctypes.byref(self._sc), i) if layerwise else 0.0
            obs = _lib.AmpScalerObs(found_inf=int(bool(found_inf)), n_tensors=n,
                                    tensors=ctypes.cast(arr, ctypes.POINTER(_lib.AmpScalerTensor)))
            res = _lib.AmpScalerResult()
            st = lib.amp_scaler_update(ctypes.byref(self._sc), ctypes.byref(obs), ctypes.byref(res))
            if st not in (_lib.AMP_OK, _lib.AMP_ERUN):
                check(st)
            self.last_result = {
                "step": int(res.step), "skipped": bool(res.skipped),
                "scale_used": float(res.held_used), "scale_after": float(res.held_after),
                "scale_f32_used": float(res.scale_used), "scale_f32_after": float(res.scale_after),
                "held_used": float(res.held_used), "held_after": float(res.held_after),
                "events": [{"event": EVENTS[e.kind], "tensor": int(e.tensor),
                            "detail": e.detail.decode("utf-8", "replace")}
                           for e in res.events[:res.n_events]],
                "events_dropped": int(res.events_dropped)}
            if st == _lib.AMP_ERUN:
                check(st, ScalerStopped)
            return bool(res.skipped)

    def state_dict(self):
        """The scaler's state: ``{"spec": canonical SPEC, "scale": float,
        "state": bytes}`` (the library's versioned checkpoint image)."""
        with self._lock:
            return {"spec": self.spec, "scale": self.scale,
                    "state": _take_image(lib.amp_scaler_save, self._sc)}

    def load_state_dict(self, state):
        """Restore a ``state_dict()`` exactly.

        Raises
        ------
        ValueError
            The image is malformed or comes from another SPEC.
        """
        img = state["state"] if isinstance(state, dict) else state
        if not isinstance(img, (bytes, bytearray, memoryview)):
            raise TypeError("state must be a state_dict() or its bytes")
        img = bytes(img)
        with self._lock:
            st = lib.amp_scaler_load(ctypes.byref(self._sc), img, len(img))
            if st:
                check(st, ValueError)

    def __repr__(self):
        return "LossScaler(%r) scale=%g step=%d" % (self.spec, self.scale, self.step)


def _role(role):
    if isinstance(role, str) and role in FP8_ROLES:
        return FP8_ROLES.index(role)
    raise ValueError("role must be one of %s, got %r" % (", ".join(FP8_ROLES), role))


def _tensor_id(tensor):
    t = operator.index(tensor)
    if t < 0 or t >= (1 << 24):
        raise ValueError("tensor id must be in 0..2**24-1, got %d" % t)
    return t


class FP8Scaler(_CScaler):
    """FP8 scaling (Transformer Engine delayed/current, OCP MX, DeepSeek-style
    blocks), run by the C library as the training emulator runs it.

    Parameters
    ----------
    spec : str
        ``delayed[:history=..,margin=..,algo=max|most_recent,fmt=..]``,
        ``current``, ``mx[:block=32]`` or ``block[:block=128]`` (keys:
        ``scaler_help()``). ``fmt=hybrid`` picks E4M3 for activations and
        weights, E5M2 for gradients.

    Raises
    ------
    ValueError
        Bad SPEC, or a loss-scaler SPEC (use LossScaler).

    Notes
    -----
    Scales are multipliers: ``q = cast(x * scale)``, ``x ~ q / scale``. Each
    ``tensor`` id is one stream of values (delayed scaling keeps its amax
    history there).
    """

    def __init__(self, spec):
        sp = _parse_spec(spec)
        if not lib.amp_scaler_kind_is_fp8(sp.kind):
            raise ValueError("%s: %s is a loss scaler; use ampsim.LossScaler"
                             % (sp.text.decode(), KINDS[sp.kind]))
        self._start(_lib.AmpFp8Scaler(), lib.amp_fp8_init, sp)

    def format(self, role="act"):
        """The Format of a role ("act", "weight" or "grad")."""
        return Format._from_c(lib.amp_fp8_format(ctypes.byref(self._sc), _role(role)).contents)

    def update(self, amax, tensor=0, role=None):
        """Record one amax and return the scales, without data.

        Parameters
        ----------
        amax : float
            max |x| of the tensor (held as float32; nan and inf allowed). For
            mx and block: the amax of one block.
        tensor : int
            The tensor stream (delayed scaling's history).
        role : str or None
            "act", "weight" or "grad": the role's format's max; None = the
            SPEC's format (as ``ampsim scaler-replay`` does).

        Returns
        -------
        (scale_used, scale_after) : tuple of float
            The scale this amax is quantized with, and the one for the next
            call (delayed scaling; equal for the others). The same numbers as
            ``ampsim scaler-replay``.
        """
        t = _tensor_id(tensor)
        a = float(amax)
        if a < 0:
            raise ValueError("amax must be >= 0 (or nan), got %r" % a)
        used, after = ctypes.c_float(), ctypes.c_float()
        with self._lock:
            fmt = None if role is None else lib.amp_fp8_format(ctypes.byref(self._sc), _role(role))
            check(lib.amp_fp8_observe_amax(ctypes.byref(self._sc), t, fmt, a, ctypes.byref(used),
                                           ctypes.byref(after)))
        return float(used.value), float(after.value)

    def quantize(self, x, tensor=0, role="act", *, stats=False):
        """Quantize a tensor as the training emulator does.

        Parameters
        ----------
        x : array_like of float32 (float16/float64 are converted), 1-D or 2-D
            A vector is one row. mx: blocks of ``block`` values along rows;
            block: 1 x block runs (act, grad) or block x block tiles (weight).
        tensor : int
            The tensor stream (delayed scaling: one call = one step).
        role : str
            "act", "weight" or "grad".
        stats : bool
            Also gather the Stats of rounding the scaled values.

        Returns
        -------
        dict
            ``q`` (float32 values of the format, x*scale cast with RNE and
            saturation), ``y`` (the dequantized values, x's shape),
            ``scale_inv`` (float32, one per block: the dequantization factors),
            ``amax``, ``scale`` (block 0's for per-block kinds),
            ``scale_next``, ``format`` (Format), ``kept`` (the scale was kept
            for a zero or non-finite amax), ``nonfinite`` (inf and NaN values
            in ``y``) and ``stats`` (Stats or None).
        """
        r = _role(role)
        t = _tensor_id(tensor)
        if not isinstance(x, np.ndarray):
            x = np.asarray(x)
        if x.dtype.kind != "f":
            raise TypeError("unsupported dtype %s: quantize takes float arrays" % x.dtype)
        if x.ndim == 1:
            rows, cols = 1, x.shape[0]
        elif x.ndim == 2:
            rows, cols = x.shape
        else:
            raise ValueError("quantize takes a 1-D or 2-D array, got %d dimensions" % x.ndim)
        xa = np.asarray(x, dtype=np.float32, order="C")
        q = np.empty(xa.shape, np.float32)
        y = np.empty(xa.shape, np.float32)
        info = _lib.AmpFp8Info()
        st = None
        if stats:
            st = _lib.AmpStats()
            lib.amp_stats_init(ctypes.byref(st))
        with self._lock:
            nb = lib.amp_fp8_nblocks(ctypes.byref(self._sc), r, rows, cols)
            sinv = np.empty(max(nb, 1), np.float32)
            check(lib.amp_fp8_quantize(ctypes.byref(self._sc), t, r, xa.ctypes.data, rows, cols,
                                       q.ctypes.data, y.ctypes.data, sinv.ctypes.data,
                                       ctypes.byref(st) if st is not None else None, ctypes.byref(info)))
        fmt = Format._from_c(info.fmt.contents)
        return {"q": q, "y": y, "scale_inv": sinv[:nb], "amax": float(info.amax),
                "scale": float(info.scale), "scale_next": float(info.scale_next), "format": fmt,
                "kept": bool(info.kept), "nonfinite": int(info.nonfinite),
                "stats": Stats._wrap(st, fmt) if st is not None else None}

    def state_dict(self):
        """The per-tensor state: ``{"spec": canonical SPEC, "state": bytes}``."""
        with self._lock:
            return {"spec": self.spec, "state": _take_image(lib.amp_fp8_save, self._sc)}

    def load_state_dict(self, state):
        """Restore a ``state_dict()`` exactly (ValueError for a bad image or
        another SPEC)."""
        img = state["state"] if isinstance(state, dict) else state
        if not isinstance(img, (bytes, bytearray, memoryview)):
            raise TypeError("state must be a state_dict() or its bytes")
        img = bytes(img)
        with self._lock:
            st = lib.amp_fp8_load(ctypes.byref(self._sc), img, len(img))
            if st:
                check(st, ValueError)

    def __repr__(self):
        return "FP8Scaler(%r)" % self.spec


LossScaler._free = lib.amp_scaler_free
FP8Scaler._free = lib.amp_fp8_free
