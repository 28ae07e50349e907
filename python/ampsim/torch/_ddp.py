"""ampsim.torch.allreduce_hook: a DistributedDataParallel communication hook
that emulates the gradient all-reduce in a low-precision format with the C
library's amp_allreduce (sim/amp_allreduce.h), the collective ``ampsim train
--dp`` runs, so a PyTorch model's reduced gradients are rounded exactly where
the built-in models' are.

Per bucket, every rank all-gathers the float32 gradients of every rank
(torch.distributed.all_gather: an exact copy, whatever gloo's algorithm), then
each rank runs the same emulated reduction on the same R arrays, parameter by
parameter, so every rank gets the same bits. The order of the roundings is the
C all-reduce's: rank r's contribution scaled and rounded into the format, then
the partial sums of the ring (chunk c starts at rank c and travels c, c+1, ...)
or of the pairwise tree, each rounded into the format, then unscaled and
divided by R (docs/parallel.md)."""
import ctypes
import datetime
import time

import torch
import torch.distributed as dist

from .. import _lib
from .._round import Stats
from ._parallel import named_parameters

_SCALINGS = {None: 0, "none": 0, "per-tensor": 1, "amax": 1, "pow2": 2, "mx": 3}
_SCALING_NAMES = {1: "amax", 2: "pow2", 3: "mx"}
_ALGOS = {"ring": 0, "tree": 1}


class _Opts(ctypes.Structure):
    """Mirror of amp_allreduce_opts."""
    _fields_ = [("algo", ctypes.c_int), ("fmt", _lib.AmpFormat), ("round", _lib.AmpRoundOpts),
                ("scaling", ctypes.c_int), ("average", ctypes.c_int)]


class _Info(ctypes.Structure):
    """Mirror of amp_allreduce_info."""
    _fields_ = [("scale", ctypes.c_float), ("amax", ctypes.c_double), ("quant", _lib.AmpStats),
                ("sums", _lib.AmpStats), ("result", _lib.AmpStats)]


_abi = _lib._fn("amp_allreduce_abi_size", ctypes.c_size_t, ctypes.c_char_p)
for _name, _cls in (("amp_allreduce_opts", _Opts), ("amp_allreduce_info", _Info)):
    if _abi(_name.encode()) != ctypes.sizeof(_cls):
        raise ImportError("ampsim.torch: %s: struct %s is %d bytes in the library but %d in the Python mirror; "
                          "the package and the library come from different versions (rebuild with `make`)"
                          % (_lib.library_path, _name, _abi(_name.encode()), ctypes.sizeof(_cls)))
_allreduce = _lib._fn("amp_allreduce", ctypes.c_int, ctypes.POINTER(_Opts), ctypes.POINTER(ctypes.c_void_p),
                      ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.POINTER(_Info))


def _opts(fmt, scaling, algo):
    o = _Opts()
    f = _lib.AmpFormat()
    _lib.check(_lib.lib.amp_format_parse(fmt.encode(), ctypes.byref(f)))
    o.fmt = f
    o.round = _lib.lib.amp_round_defaults()
    o.algo, o.scaling, o.average = _ALGOS[algo], _SCALINGS[scaling], 1
    return o


def reduce_arrays(parts, fmt="fp32", scaling=None, algo="ring"):
    """The emulated all-reduce (mean) of R equal-shaped float32 tensors, in one
    process: (result tensor, amp_allreduce_info). The rounding order is
    amp_allreduce's (sim/amp_allreduce.h)."""
    return _reduce(_opts(fmt, scaling, algo), [p.contiguous() for p in parts], torch.empty_like(parts[0]), 0,
                   parts[0].numel())


def _reduce(o, parts, y, off, n):
    """amp_allreduce of parts[r][off:off+n) into y[off:off+n)."""
    R = len(parts)
    ptrs = (ctypes.c_void_p * R)(*[p.data_ptr() + 4 * off for p in parts])
    info = _Info()
    _lib.check(_allreduce(ctypes.byref(o), ptrs, R, n, y.data_ptr() + 4 * off, ctypes.byref(info)))
    return y, info


class _Hook:
    def __init__(self, fmt, scaling, emu, algo, grace):
        if scaling not in _SCALINGS:
            raise ValueError("allreduce_hook: scaling %r: expected None, 'per-tensor' (or 'amax'), 'pow2' or 'mx'"
                             % (scaling,))
        if algo not in _ALGOS:
            raise ValueError("allreduce_hook: algo %r: expected 'ring' or 'tree'" % (algo,))
        self.fmt, self.scaling, self.emu, self.algo, self.grace = str(fmt), scaling, emu, algo, float(grace)
        self.opts = _opts(self.fmt, scaling, algo)
        self.ref_opts = _opts("fp32", None, algo)
        self.calls = 0
        self._names = None
        self.__name__ = self.__qualname__ = "allreduce_hook(%r)" % self.fmt     # register_comm_hook logs it

    def __call__(self, state, bucket):
        group = state if state is not None else dist.group.WORLD
        R = dist.get_world_size(group)
        buf = bucket.buffer()
        if buf.dtype != torch.float32 or buf.device.type != "cpu":
            raise TypeError("allreduce_hook: bucket %d is %s on %s; the emulated all-reduce takes float32 CPU "
                            "gradients" % (bucket.index(), buf.dtype, buf.device))
        self.calls += 1
        parts = [torch.empty_like(buf) for _ in range(R)]
        try:
            dist.all_gather(parts, buf.contiguous(), group=group)
        except RuntimeError as e:
            raise RuntimeError(self._failure(group, bucket.index(), e)) from e
        y = torch.empty_like(buf)
        emu = self.emu
        due = emu is not None and emu._stats_due()
        name = "bucket%d.allreduce" % bucket.index()
        st = _lib.AmpStats()
        res = _lib.AmpStats()
        for a in (st, res):
            _lib.lib.amp_stats_init(ctypes.byref(a))
        off, events = 0, []
        names = self._param_names()
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            n = g.numel()
            where = names.get(id(p)) or "%s[%d:%d]" % (name, off, off + n)
            _, info = _reduce(self.opts, parts, y, off, n)
            for a in (info.quant, info.sums):
                _lib.lib.amp_stats_merge(ctypes.byref(st), ctypes.byref(a))
            _lib.lib.amp_stats_merge(ctypes.byref(res), ctypes.byref(info.result))
            oq, os_ = Stats._wrap(info.quant).overflow, Stats._wrap(info.sums).overflow
            if oq or os_:
                events.append(("allreduce_overflow", where,
                               "%s %s: %d of %d quantizations, %d of %d partial sums overflowed"
                               % (self.algo, self.fmt, oq, info.quant.n, os_, info.sums.n)))
            if due and emu._do_t and self.opts.scaling:
                events.append(("allreduce_scale", where, "%s scale %.9g amax %.9g"
                               % (_SCALING_NAMES[self.opts.scaling], info.scale, info.amax)))
            off += n
        if off != buf.numel():
            raise RuntimeError("allreduce_hook: bucket %d holds %d values but its gradients %d"
                               % (bucket.index(), buf.numel(), off))
        if due:
            self._log(emu, name, st, res, parts, y)
        if emu is not None:
            emu._pending_events.extend(events)     # written with the step's rows, every step
        fut = torch.futures.Future()
        fut.set_result(y)
        return fut

    def _param_names(self):
        """{id(parameter): "<name>.grad"} of emu's model (empty without emu)."""
        if self._names is None:
            model = getattr(self.emu, "model", None)
            self._names = {id(p): n + ".grad" for n, p in named_parameters(model)}
        return self._names

    def _log(self, emu, name, st, res, parts, y):
        """Two rows per bucket: NAME (every rounding of the collective) and
        NAME_vs_fp32 (the classes of the final partial sums; rel_err of the
        reduced gradient against the same reduction in FP32)."""
        ref = torch.empty_like(y)
        _reduce(self.ref_opts, parts, ref, 0, y.numel())
        x, v = ref.double(), y.double()
        fin = torch.isfinite(x) & torch.isfinite(v)
        d = (v - x)[fin]
        nz = fin & (x != 0)
        res.sum_sq_err = float((d * d).sum())
        res.sum_sq = float((x[fin] * x[fin]).sum())
        rel = (v[nz] - x[nz]) / x[nz]
        res.sum_rel_sq = float((rel * rel).sum())
        res.n_rel = int(nz.sum())
        for key, s in ((name, st), (name + "_vs_fp32", res)):
            prev = emu._stats.get(key)
            w = Stats._wrap(s)
            emu._stats[key] = ("weight_grad", self.fmt, w if prev is None else prev[2] + w)

    def _failure(self, group, index, err):
        """The message of a failed all-gather, naming the ranks that did not
        report to the rendezvous store within `grace` seconds."""
        rank, R = dist.get_rank(group), dist.get_world_size(group)
        head = ("allreduce_hook: rank %d of %d: the all-gather of bucket %d (call %d) failed: %s"
                % (rank, R, index, self.calls, str(err).splitlines()[0] if str(err) else type(err).__name__))
        missing = None
        try:
            store = dist.distributed_c10d._get_default_store()
            store.set_timeout(datetime.timedelta(seconds=max(self.grace, 1.0)))
            key = "ampsim-allreduce-failed/%d/" % self.calls
            store.add(key + str(rank), 1)
            t0 = time.monotonic()
            while True:
                missing = [r for r in range(R) if not store.add(key + str(r), 0)]
                if not missing or time.monotonic() - t0 > self.grace:
                    break
                time.sleep(0.05)
        except Exception as e:     # the store lives in rank 0's process, which may be gone
            if missing is None:
                return head + "; the rendezvous store is unreachable (%s): rank 0 died or exited" % e
        if not missing:
            return head + "; every rank is alive (a timeout or a network error)"
        return head + "; %s did not answer within %g s (died, exited or stuck)" % (
            ", ".join("rank %d" % r for r in missing), self.grace)


def allreduce_hook(fmt, *, scaling=None, emu=None, algo="ring", grace=5.0):
    """A DDP communication hook that all-reduces (means) the gradients in an
    emulated format.

    ``ddp.register_comm_hook(None, ampsim.torch.allreduce_hook("e5m2",
    scaling="per-tensor"))`` (gloo, CPU, float32 gradients).

    Parameters
    ----------
    fmt : str
        The reduction format: fp32, bf16, fp16, e5m2, e4m3, any eXmY of
        ``ampsim formats``.
    scaling : None, "per-tensor", "pow2" or "mx"
        None: no scaling. "per-tensor" (alias "amax"): each parameter's
        gradient is multiplied by s = max_finite / (R * amax) (amax over every
        rank) before it is rounded, and divided by s after the reduction;
        "pow2": s rounded down to a power of two; "mx": the pow2 rule for
        every block of 32 consecutive values of a parameter's gradient, each
        block with its own amax (``ampsim train --dp --allreduce-scale
        amax|pow2|mx``).
    emu : ampsim.torch.emulate, optional
        On its logged steps, two tensors.csv rows per bucket:
        ``bucket<i>.allreduce`` (every rounding of the collective: flushed,
        saturated, overflow... and rel_err of the roundings) and
        ``bucket<i>.allreduce_vs_fp32`` (the classes of the final partial
        sums; rel_err of the reduced gradient against the FP32 reduction in
        the same order); events ``allreduce_overflow`` (any step) and
        ``allreduce_scale`` (logged steps, with scaling), for the parameter's
        gradient ("fc1.weight.grad").
    algo : "ring" or "tree"
        The summation order (amp_allreduce's ring or pairwise tree).
    grace : float
        Seconds a rank whose all-gather failed waits for the others to report
        before naming those that did not (dead, exited or stuck) in its
        RuntimeError. Bound the all-gather itself with
        ``init_process_group(timeout=...)``.

    Returns
    -------
    callable
        hook(state, bucket) -> torch.futures.Future; state is the process
        group (None: the default group).
    """
    return _Hook(fmt, scaling, emu, algo, grace)
