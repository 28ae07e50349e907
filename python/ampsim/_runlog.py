"""Run directories: writing them through the C run-log writer, reading them back."""
import csv
import ctypes
import json
import math
import operator
import os
import threading

import numpy as np

from . import _lib
from ._lib import lib, check, encode_str
from ._round import Format, Stats

__all__ = ["RunLog", "read_run", "roles"]

ROLES = tuple(_lib.names(lib.amp_role_name))
_ROLE_ID = {r: i for i, r in enumerate(ROLES)}
_FMT_NAMES = {}     # format as given (a name, as a policy spells it) -> the library's name (bytes)


def roles():
    """The tensor roles of tensors.csv ("weight", "act", "act_grad", ...)."""
    return ROLES


def _i64(v, what):
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__)) from None
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("%s out of range: %d" % (what, v))
    return v


def _u64(v, what):
    v = _i64(v, what) if not isinstance(v, bool) else int(v)
    if v < 0:
        raise ValueError("%s must be >= 0, got %d" % (what, v))
    return v


class RunLog:
    """Write a run directory that ``ampsim report`` draws.

    The files are those ``ampsim train`` writes, by the same C writer:
    ``config.json`` (at once), ``metrics.csv``, ``tensors.csv``, ``hist.csv``,
    ``events.csv`` (streamed into temporary files, renamed by ``close``) and
    ``summary.json`` (last). A run that is never closed leaves no
    half-written CSV under a final name.

    Parameters
    ----------
    out : str or os.PathLike
        The run directory (created, with its parents, if missing).
    config : dict or str
        The run's configuration (JSON-serialisable dict, or JSON text). The
        report reads ``precision``, ``scaler`` and ``fp8_scaler`` from it.

    Raises
    ------
    ValueError
        config is not JSON-serialisable, or the path is unusable.
    OSError
        The directory or a file cannot be written.

    Examples
    --------
    >>> with RunLog("runs/a", {"precision": "fp16-amp", "scaler": "torch"}) as log:
    ...     log.metrics(0, loss=2.3, loss_scale=65536.0, skipped=False, lr=0.1)
    ...     log.close(final_loss=2.3)
    """

    def __init__(self, out, config):
        if isinstance(config, str):
            try:
                json.loads(config)
            except ValueError as e:
                raise ValueError("config is not JSON: %s" % e) from None
            text = config
        else:
            try:
                text = json.dumps(config, indent=2, allow_nan=False, sort_keys=False)
            except (TypeError, ValueError) as e:
                raise ValueError("config is not JSON-serialisable: %s" % e) from None
        self.dir = os.fspath(out)
        h = ctypes.c_void_p()
        check(lib.amp_runlog_open(ctypes.byref(h), encode_str(self.dir, "out"),
                                  encode_str(text + "\n", "config")))
        self._h = h
        self._lock = threading.Lock()
        self._names = {}        # tensor name -> its encoded bytes (a logged step writes a row per tensor)

    def _handle(self):
        if self._h is None:
            raise ValueError("%s: the run log is closed" % self.dir)
        return self._h

    def metrics(self, step, loss=math.nan, loss_scale=1.0, skipped=False, lr=math.nan, *,
                grad_norm=math.nan, vanished=0, nonfinite=0, val_loss=None, scaler=None):
        """Append one metrics.csv row.

        Parameters
        ----------
        step : int
        loss : float
        loss_scale : float
            The loss scale of this step (1 without scaling).
        skipped : bool
            The optimizer step was skipped.
        lr : float
        grad_norm : float
            L2 norm of the unscaled FP32 weight gradients.
        vanished : int
            Updates lost in the weights' format.
        nonfinite : int
            Non-finite values found this step.
        val_loss : float or None
            Validation loss (None: not evaluated at this step).
        scaler : str or ampsim.LossScaler, optional
            The loss scaler whose scale `loss_scale` is, by kind name ("deepspeed")
            or object: apex and deepspeed hold a double, written with every digit
            it needs (a scale past 3.4e38 included); every other scale is written
            as the float32 it is.
        """
        from ._scaler import KINDS
        step = _i64(step, "step")
        vl = math.nan if val_loss is None else float(val_loss)
        kind = scaler if isinstance(scaler, str) or scaler is None else scaler.kind
        if kind is not None and kind not in KINDS:
            raise ValueError("scaler: unknown kind %r (%s)" % (kind, ", ".join(KINDS)))
        kind_id = KINDS.index(kind) if kind else 0
        with self._lock:
            check(lib.amp_runlog_metrics(self._handle(), step, float(loss), float(loss_scale), kind_id,
                                         int(bool(skipped)), float(grad_norm), float(lr),
                                         _u64(vanished, "vanished"), _u64(nonfinite, "nonfinite"), vl))

    def tensor(self, step, name, role, fmt, stats, *, hist=True):
        """Append one tensor's tensors.csv row (and its hist.csv rows).

        Parameters
        ----------
        step : int
        name : str
            The tensor's name ("fc1.weight.grad").
        role : str
            One of ``roles()``: weight, act, act_grad, weight_grad, master,
            optim_state, update.
        fmt : str or Format
            The format the tensor was rounded into.
        stats : Stats
            The statistics of that rounding (``round(..., stats=True)``).
        hist : bool
            Also write the log2 histogram rows.
        """
        step = _i64(step, "step")
        if not isinstance(stats, Stats):
            raise TypeError("stats must be ampsim.Stats, not %s" % type(stats).__name__)
        r = _ROLE_ID.get(role)
        if r is None:
            raise ValueError("role must be one of %s, got %r" % (", ".join(ROLES), role))
        # (names and formats converted once, not per row)
        f = _FMT_NAMES.get(fmt) if isinstance(fmt, str) else None
        if f is None:
            f = (fmt if isinstance(fmt, Format) else Format(fmt)).name.encode()
            if isinstance(fmt, str):
                _FMT_NAMES[fmt] = f
        n = self._names.get(name)
        if n is None:
            n = encode_str(name, "name")
            if isinstance(name, str):
                self._names[name] = n
        with self._lock:
            check(lib.amp_runlog_tensor(self._handle(), step, n, r, f, ctypes.byref(stats._s), 1, int(bool(hist))))

    def event(self, step, event, tensor="", detail=""):
        """Append one events.csv row (``event`` e.g. "backoff", "overflow")."""
        step = _i64(step, "step")
        with self._lock:
            check(lib.amp_runlog_event(self._handle(), step, encode_str(event, "event"),
                                       encode_str(tensor, "tensor"), encode_str(detail, "detail")))

    def close(self, **summary):
        """Commit every file and write summary.json from the keyword arguments.

        Raises
        ------
        ValueError
            The summary is not JSON-serialisable (nothing is committed then:
            call close again with a good one, or abort).
        OSError
            A file could not be committed (the temporaries are removed).
        """
        try:
            text = json.dumps(summary, indent=2, allow_nan=True) + "\n"
        except (TypeError, ValueError) as e:
            raise ValueError("summary is not JSON-serialisable: %s" % e) from None
        with self._lock:
            h = self._handle()
            self._h = None
            check(lib.amp_runlog_close(h, text.encode("utf-8")))

    def abort(self):
        """Drop the run: remove the temporary CSV files (config.json stays)."""
        with self._lock:
            if self._h is not None:
                lib.amp_runlog_abort(self._h)
                self._h = None

    @property
    def closed(self):
        """True after close() or abort()."""
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            self.abort()
        elif not self.closed:
            self.close()
        return False

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            lib.amp_runlog_abort(self._h)
            self._h = None


# Columns of ampsim's CSV files that hold text (even when every cell is empty).
_TEXT_COLUMNS = {"tensor", "role", "format", "event", "detail", "binade", "name", "precision", "scaler",
                 "status", "operands", "accumulator", "rounding"}


def _column(vals, name=""):
    """A column's strings as int64, float64 or str array (empty -> nan)."""
    if name in _TEXT_COLUMNS:
        return np.array(vals, dtype=str) if vals else np.array([], dtype="<U1")
    try:
        return np.array([int(v) for v in vals], dtype=np.int64)
    except (ValueError, OverflowError):
        pass
    try:
        return np.array([float(v) if v != "" else math.nan for v in vals], dtype=np.float64)
    except ValueError:
        return np.array(vals, dtype=str) if vals else np.array([], dtype="<U1")


def _read_csv(path, pandas):
    with open(path, newline="") as fp:
        rows = list(csv.reader(fp))
    if not rows:
        raise ValueError("%s: empty file (no header)" % path)
    head = rows[0]
    body = [r for r in rows[1:] if r]
    for i, r in enumerate(body):
        if len(r) != len(head):
            raise ValueError("%s: row %d has %d fields, the header %d" % (path, i + 2, len(r), len(head)))
    cols = [_column([r[j] for r in body], head[j]) for j in range(len(head))]
    if pandas is not None:
        return pandas.DataFrame({h: c for h, c in zip(head, cols)}, columns=head)
    return np.rec.fromarrays(cols, names=head)


def _read_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as fp:
        return json.load(fp)


def _pandas(use_pandas):
    if use_pandas is False:
        return None
    try:
        import pandas
        return pandas
    except ImportError:
        if use_pandas:
            raise
        return None


def _read_one(d, pd):
    out = {"config": _read_json(os.path.join(d, "config.json")),
           "summary": _read_json(os.path.join(d, "summary.json"))}
    for k in ("metrics", "tensors", "hist", "events", "whatif"):
        p = os.path.join(d, k + ".csv")
        out[k] = _read_csv(p, pd) if os.path.exists(p) else None
    return out


def read_run(dir, pandas=None):
    """Load a run directory or a compare directory.

    Parameters
    ----------
    dir : str or os.PathLike
        A run directory (``metrics.csv``...) or a compare directory (a
        ``summary.csv`` and one run directory per configuration).
    pandas : bool or None
        None: DataFrames if pandas is importable, else record arrays.
        False: always record arrays. True: DataFrames (ImportError without
        pandas).

    Returns
    -------
    dict
        A run: ``metrics``, ``tensors``, ``hist``, ``events``, ``whatif`` (numpy
        record arrays, or pandas DataFrames; None for a missing file), ``config`` and
        ``summary`` (dicts; None if missing). Integer columns are int64,
        numeric ones float64 (empty cells nan), others str.
        A compare directory: ``{"summary": table of summary.csv, "runs":
        {name: run dict}}``.

    Raises
    ------
    FileNotFoundError
        dir holds neither metrics.csv nor summary.csv.
    ValueError
        A malformed CSV (named with its line).
    """
    d = os.fspath(dir)
    pd = _pandas(pandas)
    if os.path.exists(os.path.join(d, "summary.csv")):
        runs = {}
        for name in sorted(os.listdir(d)):
            sub = os.path.join(d, name)
            if name == "report" or not os.path.isdir(sub):
                continue
            if os.path.exists(os.path.join(sub, "metrics.csv")) or \
                    os.path.exists(os.path.join(sub, "config.json")):
                runs[name] = _read_one(sub, pd)
        return {"summary": _read_csv(os.path.join(d, "summary.csv"), pd), "runs": runs}
    if not os.path.exists(os.path.join(d, "metrics.csv")):
        raise FileNotFoundError("%s: neither a run directory (no metrics.csv) nor a compare directory "
                                "(no summary.csv)" % d)
    return _read_one(d, pd)
