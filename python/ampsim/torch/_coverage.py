"""The coverage account of an emulation: every torch function the model's
forward and its loss called, its class (_ops.py), calls, output elements and
GEMM multiply-adds; written as coverage.csv into the run directory.

Columns: op (the function's short name), class (an emulated kind or
fp32 / no_float / gemm_unrounded / unclassified), emulated (yes/no), calls,
elements (floating output elements, summed over calls; 0 for views and
functions with no floating output), gemm_macs (multiply-adds of GEMM-like
calls). Rows of one name and class add up (torch.add and Tensor.add)."""
import os

import torch

from . import _ops

_NOT = ("fp32", "no_float", "gemm_unrounded", "unclassified")


class Coverage:
    """Counts per torch function: [class, calls, elements, macs]."""

    __slots__ = ("_rows", "_merged")

    def __init__(self):
        self._rows = {}
        self._merged = {}       # id(rows) -> [rows, times]: merges not yet added (see merge)

    @property
    def rows(self):
        """{func: [class, calls, elements, macs]}, every merge added."""
        if self._merged:
            merged, self._merged = self._merged, {}
            for rows, times in merged.values():
                for func, (cls, calls, el, macs) in rows.items():
                    self.count(func, cls, calls * times, el * times, macs * times)
        return self._rows

    def _row(self, func, cls):
        r = self._rows.get(func)
        if r is None:
            r = self._rows[func] = [cls, 0, 0, 0]
        return r

    def add(self, func, cls, out=None, macs=0):
        """One call of func (class cls); out: its result when its floating
        elements count."""
        r = self._row(func, cls)
        r[1] += 1
        if out is not None and isinstance(out, torch.Tensor) and out.is_floating_point():
            r[2] += out.numel()
        r[3] += macs

    def count(self, func, cls, calls, elements, macs=0):
        """calls calls of func (class cls) with these totals, added at once
        (the calls a fused unit stands for, counted from their shapes)."""
        r = self._row(func, cls)
        r[1] += calls
        r[2] += elements
        r[3] += macs

    def merge(self, rows):
        """Counts {func: [class, calls, elements, macs]} added (the rows of
        calls that an emulated unit stands for; a unit merges the same rows,
        which nothing changes after they are recorded, at each call: they
        are counted here and added when the rows are read)."""
        m = self._merged.get(id(rows))
        if m is None:
            self._merged[id(rows)] = [rows, 1]
        else:
            m[1] += 1

    def table(self):
        """[(op, class, emulated, calls, elements, macs)], sorted by class and op."""
        agg = {}
        for func, (cls, calls, el, macs) in self.rows.items():
            key = (_ops.func_name(func), cls)
            a = agg.setdefault(key, [0, 0, 0])
            a[0] += calls
            a[1] += el
            a[2] += macs
        return sorted((op, cls, "no" if cls in _NOT else "yes", a[0], a[1], a[2])
                      for (op, cls), a in agg.items())

    def shares(self):
        """(share of GEMM multiply-adds emulated, share of the elements written
        by non-GEMM ops that were emulated; classified FP32 ops count on
        neither side), each None when there was nothing to count."""
        g = [0, 0]
        e = [0, 0]
        for op, cls, emu, calls, el, macs in self.table():
            if macs or cls in ("gemm", "gemm_unrounded"):
                g[0] += macs if emu == "yes" else 0
                g[1] += macs
            elif cls not in ("view", "fp32", "no_float"):
                e[0] += el if emu == "yes" else 0
                e[1] += el
        return (g[0] / g[1] if g[1] else None, e[0] / e[1] if e[1] else None)

    def write(self, out):
        """coverage.csv in the run directory out (written whole, then renamed)."""
        if out is None:
            return
        path = os.path.join(out, "coverage.csv")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("op,class,emulated,calls,elements,gemm_macs\n")
            for row in self.table():
                f.write("%s,%s,%s,%d,%d,%d\n" % row)
        os.replace(tmp, path)


class _Recorder:
    """The coverage account during one op-by-op call: passed on, and kept."""

    def __init__(self, inner):
        self.inner, self.kept = inner, Coverage()

    def add(self, func, cls, out=None, macs=0):
        self.inner.add(func, cls, out, macs)
        self.kept.add(func, cls, out, macs)

    def merge(self, rows):
        """(a unit served inside the recorded call: its rows count in both)"""
        self.inner.merge(rows)
        self.kept.merge(rows)

    def count(self, func, cls, calls, elements, macs=0):
        self.inner.count(func, cls, calls, elements, macs)
        self.kept.count(func, cls, calls, elements, macs)


def recorded(emu, fn, *args):
    """(fn(*args), its coverage rows {func: [class, calls, elements, macs]}):
    an emulated unit's first call, run op by op, its rows kept to be added
    again (Coverage.merge) at each later call the unit serves."""
    rec = _Recorder(emu._cov)
    emu._cov = rec
    try:
        out = fn(*args)
    finally:
        emu._cov = rec.inner
    return out, rec.kept.rows
