"""The run directory of an emulation, written through ampsim.RunLog."""
import ctypes

from .. import RunLog
from .._lib import check, encode_str, lib
from .._round import Format
from .._runlog import ROLES

_ROLE_ID = {r: i for i, r in enumerate(ROLES)}
_FMT_NAMES = {}     # format name as the policy spells it -> canonical name (bytes)


class RunDir:
    """ampsim.RunLog with the calls emulate makes."""

    def __init__(self, out, config):
        self.log = RunLog(out, config)
        self._names = {}        # tensor name -> its encoded bytes

    def metrics(self, step, **kw):
        self.log.metrics(step, **kw)

    def tensor(self, step, name, role, fmt, st, tensors=True, hist=True):
        """A tensor's rows. RunLog writes the tensors.csv row with every call,
        so a step that logs histograms only writes it too. (RunLog.tensor's
        library call, with the name, role and format converted once per run
        rather than per row: a logged step writes a row per tensor.)"""
        n = self._names.get(name)
        if n is None:
            n = self._names[name] = encode_str(name, "name")
        f = _FMT_NAMES.get(fmt)
        if f is None:
            f = _FMT_NAMES[fmt] = Format(fmt).name.encode()
        log = self.log
        with log._lock:
            check(lib.amp_runlog_tensor(log._handle(), int(step), n, _ROLE_ID[role], f, ctypes.byref(st._s), 1,
                                        int(bool(hist))))

    def event(self, step, event, tensor, detail):
        self.log.event(step, event, tensor or "", detail or "")

    def close(self, **summary):
        self.log.close(**summary)

    def abort(self):
        self.log.abort()


def open_runlog(out, config):
    """The run directory out with config.json = config."""
    return RunDir(out, config)
