"""ampsim.torch.compare: the user's training function once per (policy, scaler),
each run from the same seed and initial weights, into a compare folder that
``ampsim report`` draws (summary.csv written by the C library's
amp_compare_summarize, so its columns are those of ``ampsim compare``)."""
import ctypes
import os
import random
import re
import sys
import traceback

import torch

from .. import _lib
from .._scaler import LossScaler
from ._emulate import emulate
from ._policy import Policy
from ._scaler import GradScaler

_FP8_KINDS = ("delayed", "current", "mx", "block")


class _RunCfg(ctypes.Structure):
    """Mirror of amp_run_cfg (sim/amp_compare.h)."""
    _fields_ = [("name", ctypes.c_char * 160), ("precision", ctypes.c_char * 64),
                ("scaler", ctypes.c_char * 256), ("loss_scaler", ctypes.c_char * 256),
                ("fp8", ctypes.c_char * 256), ("is_ref", ctypes.c_int)]


_lib.lib.amp_compare_abi_size.restype = ctypes.c_size_t
_lib.lib.amp_compare_abi_size.argtypes = [ctypes.c_char_p]
if _lib.lib.amp_compare_abi_size(b"amp_run_cfg") != ctypes.sizeof(_RunCfg):
    raise ImportError("ampsim.torch: %s: struct amp_run_cfg is %d bytes in the library but %d in the Python "
                      "mirror; the package and the library come from different versions (rebuild with `make`)"
                      % (_lib.library_path, _lib.lib.amp_compare_abi_size(b"amp_run_cfg"), ctypes.sizeof(_RunCfg)))
_lib.lib.amp_compare_summarize.restype = ctypes.c_int
_lib.lib.amp_compare_summarize.argtypes = [ctypes.c_char_p, ctypes.POINTER(_RunCfg), ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_int), ctypes.c_double]


def _run_parts(precision, spec, fp8_policy):
    """(name, loss scaler, FP8 strategy) as ``ampsim compare`` plans a run:
    PRECISION__SCALER, or PRECISION__LOSSSCALER__FP8STRATEGY for a policy with
    per-tensor FP8 scaling (whose strategy is delayed unless the SPEC names
    one); characters other than [A-Za-z0-9._-] become '-'."""
    is_fp8 = spec.split(":")[0] in _FP8_KINDS
    loss = "none" if is_fp8 else spec
    fp8 = (spec if is_fp8 else "delayed") if fp8_policy else ""
    name = ("%.60s__%.45s__%.45s" % (precision, loss, fp8)) if fp8_policy else ("%.60s__%.90s" % (precision, spec))
    return re.sub(r"[^A-Za-z0-9._-]", "-", name), loss, fp8


class Run:
    """What train_fn receives for one run.

    Attributes
    ----------
    name : str
        The run folder ("ref" for the reference).
    policy : Policy
    scaler : GradScaler
        The run's loss scaler (``GradScaler("none")`` for the reference and for
        FP8 strategies).
    fp8 : str or None
        The FP8 strategy of the run (delayed, current, mx, block).
    out : str
        The run directory.
    """

    def __init__(self, name, policy, scaler, fp8, out, emulate_kw):
        self.name, self.policy, self.scaler, self.fp8, self.out = name, policy, scaler, fp8, out
        self._kw = emulate_kw

    def emulate(self, model, **kw):
        """``ampsim.torch.emulate`` of model under this run's policy, writing
        this run's directory, with this run's scaler attached."""
        args = dict(self._kw)
        args.update(kw)
        return emulate(model, self.policy, out=self.out, fp8=self.fp8, scaler=self.scaler, **args)


def compare(train_fn, runs=(("fp32", None), ("fp16-amp", "none"), ("fp16-amp", "torch"),
                            ("fp8-hybrid", "delayed")), out="ampsim-compare", seed=0, *, model=None,
            diverge_tol=0.05, log_every=10, hist_every=50):
    """Run ``train_fn(run)`` once per (policy, scaler) and summarise the runs.

    Parameters
    ----------
    train_fn : callable
        ``train_fn(run)`` trains once: it builds (or receives) its model and
        optimizer, and trains inside ``with run.emulate(model):`` using
        ``run.scaler`` as its GradScaler (see Run).
    runs : sequence of (policy, scaler)
        policy: a preset name, policy JSON path or dict; scaler: a loss-scaler
        SPEC, an FP8 strategy (delayed, current, mx, block; policies with FP8
        scaling) or None. The first run with policy "fp32" is the reference
        (folder ``ref``); without one an fp32 reference is run first.
    out : str
        The compare folder: one run directory per run and summary.csv.
    seed : int
        torch.manual_seed (and Python's random) before every run.
    model : torch.nn.Module, optional
        Its state_dict is restored before every run (for a train_fn that
        reuses one model).
    diverge_tol : float
        |loss - reference loss| that marks the first divergence (as
        ``ampsim compare --diverge-tol``).

    Returns
    -------
    dict
        ``ampsim.read_run(out)`` of the compare folder (summary and runs),
        plus ``errors``: {run name: traceback text} of runs that raised.
    """
    plan = []
    have_ref = False
    for pol, sc in runs:
        p = pol if isinstance(pol, Policy) else Policy(pol)
        spec = "none" if sc is None else str(sc)
        if p.name == "fp32" and not have_ref and spec == "none":
            plan.append(("ref", p, spec, True))
            have_ref = True
            continue
        if spec.split(":")[0] in _FP8_KINDS and not p.fp8_scaling:
            raise ValueError("compare: %s is an FP8 strategy but %s has no per-tensor FP8 scaling" % (spec, p.name))
        if spec.split(":")[0] not in _FP8_KINDS:
            LossScaler(spec)                      # a bad SPEC fails before any run
        name = _run_parts(p.name, spec, p.fp8_scaling)[0]
        if all(name != q[0] for q in plan):
            plan.append((name, p, spec, False))
    if not have_ref:
        plan.insert(0, ("ref", Policy("fp32"), "none", True))
    os.makedirs(out, exist_ok=True)
    init = {k: v.detach().clone() for k, v in model.state_dict().items()} if model is not None else None
    status, errors = [], {}
    for name, p, spec, is_ref in plan:
        fp8 = spec if spec.split(":")[0] in _FP8_KINDS else None
        scaler = GradScaler("none" if fp8 or is_ref else spec)
        run = Run(name, p, scaler, fp8, os.path.join(out, name),
                  {"log_every": log_every, "hist_every": hist_every,
                   "config": {"scaler": spec, "compare_run": name}})
        torch.manual_seed(seed)
        random.seed(seed)
        if init is not None:
            model.load_state_dict(init)
        try:
            train_fn(run)
            status.append(0)
        except Exception:
            errors[name] = traceback.format_exc()
            print("ampsim.torch.compare: run %s failed:\n%s" % (name, errors[name]), file=sys.stderr)
            status.append(1)
    arr = (_RunCfg * len(plan))()
    for i, (name, p, spec, is_ref) in enumerate(plan):
        arr[i].name = name.encode()
        arr[i].precision = p.name.encode()[:63]
        arr[i].scaler = spec.encode()[:255]
        _, loss, fp8 = _run_parts(p.name, spec, p.fp8_scaling and not is_ref)
        arr[i].loss_scaler = loss.encode()[:255]
        arr[i].fp8 = fp8.encode()[:255]
        arr[i].is_ref = int(is_ref)
    st = (ctypes.c_int * len(plan))(*status)
    _lib.check(_lib.lib.amp_compare_summarize(out.encode(), arr, len(plan), st, float(diverge_tol)))
    from .. import read_run
    res = read_run(out)
    res["errors"] = errors
    return res
