"""The run directory of an emulation, written through ampsim.RunLog."""
import ctypes
import json
import math

from .. import _lib
from . import _rt


def open_runlog(out, config):
    """ampsim.RunLog(out, config) (an object with metrics, tensor, event, close, abort)."""
    try:
        from .. import RunLog
    except ImportError:
        RunLog = None
    if RunLog is not None:
        return _Core(RunLog(out, config))
    return _Direct(out, config)


class _Core:
    """Adapter over ampsim.RunLog."""

    def __init__(self, log):
        self.log = log

    def metrics(self, step, **kw):
        self.log.metrics(step, **kw)

    def tensor(self, step, name, role, fmt, st, tensors=True, hist=True):
        self.log.tensor(step, name, role, fmt, st, hist=hist)

    def event(self, step, event, tensor, detail):
        self.log.event(step, event, tensor, detail)

    def close(self, **summary):
        self.log.close(**summary)

    def abort(self):
        ab = getattr(self.log, "abort", None)
        if ab:
            ab()


class _Direct:
    """The same calls straight into the C run-log writer."""

    def __init__(self, out, config):
        self.h = ctypes.c_void_p()
        _lib.check(_lib.lib.amp_runlog_open(ctypes.byref(self.h), out.encode(), json.dumps(config).encode()))

    def metrics(self, step, loss=float("nan"), loss_scale=1.0, skipped=0, grad_norm=0.0, lr=0.0,
                vanished=0, nonfinite=0, val_loss=float("nan")):
        _lib.check(_lib.lib.amp_runlog_metrics(self.h, step, loss, loss_scale, int(skipped), grad_norm, lr,
                                               int(vanished), int(nonfinite), val_loss))

    def tensor(self, step, name, role, fmt, st, tensors=True, hist=True):
        _lib.check(_lib.lib.amp_runlog_tensor(self.h, step, name.encode(), _rt.ROLE_ID[role], fmt.encode(),
                                              ctypes.byref(st._s), int(tensors), int(hist)))

    def event(self, step, event, tensor, detail):
        _lib.check(_lib.lib.amp_runlog_event(self.h, step, event.encode(), (tensor or "").encode(),
                                             (detail or "").encode()))

    def close(self, **summary):
        h, self.h = self.h, None
        _lib.check(_lib.lib.amp_runlog_close(h, json.dumps(summary, indent=2).encode()))

    def abort(self):
        if self.h:
            _lib.lib.amp_runlog_abort(self.h)
            self.h = None
