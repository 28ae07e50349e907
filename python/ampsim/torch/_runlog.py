"""The run directory of an emulation, written through ampsim.RunLog."""
from .. import RunLog


class RunDir:
    """ampsim.RunLog with the calls emulate makes."""

    def __init__(self, out, config):
        self.log = RunLog(out, config)

    def metrics(self, step, **kw):
        self.log.metrics(step, **kw)

    def tensor(self, step, name, role, fmt, st, tensors=True, hist=True):
        """A tensor's rows. RunLog writes the tensors.csv row with every call,
        so a step that logs histograms only writes it too."""
        self.log.tensor(step, name, role, fmt, st, hist=hist)

    def event(self, step, event, tensor, detail):
        self.log.event(step, event, tensor or "", detail or "")

    def close(self, **summary):
        self.log.close(**summary)

    def abort(self):
        self.log.abort()


def open_runlog(out, config):
    """The run directory out with config.json = config."""
    return RunDir(out, config)
