"""ampsim.torch.compare: the user's training function once per (policy, scaler),
each run from the same seed and initial weights, into a compare folder that
``ampsim report`` draws (summary.csv written by the C library's
amp_compare_summarize, so its columns are those of ``ampsim compare``)."""
import collections
import os
import re
import sys

from .. import _lib
from .._scaler import LossScaler
from . import _parallel
from ._emulate import emulate
from ._policy import Policy
from ._scaler import GradScaler

_FP8_KINDS = ("delayed", "current", "mx", "block")


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
        The run folder under the compare folder ("ref" for the reference;
        "seed<S>/<name>" with seeds).
    policy : Policy
    scaler : GradScaler
        The run's loss scaler (``GradScaler("none")`` for the reference and for
        FP8 strategies).
    fp8 : str or None
        The FP8 strategy of the run (delayed, current, mx, block).
    seed : int
        The seed torch and Python's random were given before the run.
    out : str
        The run directory.
    """

    def __init__(self, name, policy, scaler, fp8, out, emulate_kw, seed=0):
        self.name, self.policy, self.scaler, self.fp8, self.out = name, policy, scaler, fp8, out
        self.seed = seed
        self._kw = emulate_kw

    def emulate(self, model, **kw):
        """``ampsim.torch.emulate`` of model under this run's policy, writing
        this run's directory, with this run's scaler attached. A ``config``
        given here adds keys to config.json; config.json also gets the run's
        name (``compare_run``) and the model's parameter names
        (``parameters``), which resuming and merging the folder check."""
        args = dict(self._kw)
        args.update(kw)
        cfg = dict(kw.get("config") or {})
        cfg.update(self._kw["config"])           # the run's own keys win: resuming reads compare_run
        cfg["parameters"] = [n for n, _ in _parallel.named_parameters(model)]
        args["config"] = cfg
        return emulate(model, self.policy, out=self.out, fp8=self.fp8, scaler=self.scaler, **args)


_Entry = collections.namedtuple("_Entry", "name group seed policy spec is_ref")


def _plan(runs, seeds, grouped):
    """The runs of the grid in their fixed order: per seed (group), the
    reference then the (policy, scaler) pairs; ValueError for a bad pair."""
    pairs = []
    have_ref = False
    for pol, sc in runs:
        p = pol if isinstance(pol, Policy) else Policy(pol)
        spec = "none" if sc is None else str(sc)
        if p.name == "fp32" and not have_ref and spec == "none":
            pairs.append(("ref", p, spec, True))
            have_ref = True
            continue
        if spec.split(":")[0] in _FP8_KINDS and not p.fp8_scaling:
            raise ValueError("compare: %s is an FP8 strategy but %s has no per-tensor FP8 scaling" % (spec, p.name))
        if spec.split(":")[0] not in _FP8_KINDS:
            LossScaler(spec)                      # a bad SPEC fails before any run
        name = _run_parts(p.name, spec, p.fp8_scaling)[0]
        if all(name != q[0] for q in pairs):
            pairs.append((name, p, spec, False))
    if not have_ref:
        pairs.insert(0, ("ref", Policy("fp32"), "none", True))
    plan, groups = [], []
    for g, seed in enumerate(seeds):
        gname = "seed%d" % seed if grouped else ""
        if grouped:
            groups.append({"name": gname, "seed": seed})
        for name, p, spec, is_ref in pairs:
            plan.append(_Entry(gname + "/" + name if grouped else name, g, seed, p, spec, is_ref))
    return plan, groups


def _grid(plan, groups, diverge_tol):
    runs = []
    for e in plan:
        _, loss, fp8 = _run_parts(e.policy.name, e.spec, e.policy.fp8_scaling and not e.is_ref)
        runs.append({"name": e.name, "group": e.group, "seed": e.seed, "precision": e.policy.name,
                     "scaler": e.spec, "loss_scaler": loss, "fp8": fp8, "is_ref": bool(e.is_ref)})
    return {"runs": runs, "groups": groups, "diverge_tol": float(diverge_tol)}


class _MakeRun:
    """Run object of a plan entry (picklable for spawned workers)."""

    def __init__(self, log_every, hist_every, grouped):
        self.log_every, self.hist_every, self.grouped = log_every, hist_every, grouped

    def __call__(self, e, d):
        fp8 = e.spec if e.spec.split(":")[0] in _FP8_KINDS else None
        scaler = GradScaler("none" if fp8 or e.is_ref else e.spec)
        kw = {"log_every": self.log_every, "hist_every": self.hist_every,
              "config": {"scaler": e.spec, "compare_run": e.name}}
        if self.grouped:
            kw["seed"] = e.seed
        return Run(e.name, e.policy, scaler, fp8, d, kw, e.seed)


def _result(out, grid, errors, skipped):
    from .. import read_run
    res = read_run(out)
    if grid["groups"]:
        res["runs"] = {}
        for gr in grid["groups"]:
            for k, v in read_run(os.path.join(out, gr["name"]))["runs"].items():
                res["runs"][gr["name"] + "/" + k] = v
    res["errors"] = errors
    res["skipped"] = skipped
    return res


def compare(train_fn, runs=(("fp32", None), ("fp16-amp", "none"), ("fp16-amp", "torch"),
                            ("fp8-hybrid", "delayed")), out="ampsim-compare", seed=0, *, seeds=None, jobs=1,
            model=None, diverge_tol=0.05, log_every=10, hist_every=50, force=False, start_method=None,
            threads=1):
    """Run ``train_fn(run)`` once per (policy, scaler) (and seed) and summarise the runs.

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
        The compare folder: one run directory per run, summary.csv, and
        compare.json (the grid, which ``python3 -m ampsim.torch.merge`` reads).
    seed : int
        torch.manual_seed (and Python's random) before every run.
    seeds : sequence of int, optional
        One compare per seed, as ``ampsim sweep`` groups them: folder
        ``seed<S>`` with its own reference and summary.csv, every run of it
        seeded with S (emulate's seed too), and a summary.csv over all groups
        (columns group, seed, then compare's). Replaces ``seed``.
    jobs : int
        Runs at a time on this machine, each in its own worker process (1:
        every run in this process).
    threads : int
        torch.set_num_threads during every run, wherever it runs (restored
        after a run in this process). PyTorch's CPU kernels give other bits
        at other thread counts, so this, not jobs or the ranks, fixes the
        bytes; jobs x threads should not exceed the cores.
    model : torch.nn.Module, optional
        Its state_dict is restored before every run (for a train_fn that
        reuses one model).
    diverge_tol : float
        |loss - reference loss| that marks the first divergence (as
        ``ampsim compare --diverge-tol``).
    force : bool
        Run every run again; by default a run whose directory holds
        summary.json is kept (an interrupted grid resumes; a half-written run
        is redone).
    start_method : str, optional
        multiprocessing start method of the workers: "fork" (default; train_fn
        may be any callable) or "spawn" (train_fn and model must pickle, and
        the script must guard its entry point with ``if __name__ ==
        "__main__":``).

    Under ``mpirun -np R`` (with mpi4py) rank r runs the runs i with
    i mod R = r and rank 0 writes the summary when every rank is done; in a
    Slurm job array task k of T runs the runs i mod T = k and the last task to
    finish writes it. The folder is byte for byte the one a single process
    writes (docs/parallel.md).

    Returns
    -------
    dict
        ``ampsim.read_run(out)`` of the compare folder (summary and runs; with
        seeds the runs are named "seed<S>/<run>"), plus ``errors``: {run name:
        traceback text} of runs that raised here (under MPI: on any rank), and
        ``skipped``: the runs found finished and not run again. A Slurm array
        task that is not the last has ``summary`` None and no ``runs``.

    Raises
    ------
    ValueError
        A bad policy or SPEC (before any run), or finished runs that disagree
        on the model's parameter names (no summary is written then).
    """
    grouped = seeds is not None
    seeds = [int(s) for s in (seeds if grouped else [seed])]
    if not seeds:
        raise ValueError("compare: seeds is empty")
    plan, groups = _plan(runs, seeds, grouped)
    grid = _grid(plan, groups, diverge_tol)
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    comm = _parallel.mpi_comm()
    task = _parallel.slurm_task() if comm is None else None
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm is not None else task if task else (0, 1)
    init = {k: v.detach().clone() for k, v in model.state_dict().items()} if model is not None else None
    if int(threads) < 1:
        raise ValueError("compare: threads must be >= 1, got %r" % (threads,))
    job = _parallel._Job(train_fn, plan, out, model, init, _MakeRun(log_every, hist_every, grouped), int(threads))
    try:
        _parallel.write_grid(out, grid)
        mine = [i for i in range(len(plan)) if i % size == rank]
        skipped = [] if force else [plan[i].name for i in mine if _parallel.finished(out, plan[i].name)]
        todo = [i for i in mine if plan[i].name not in skipped]
        errors = _parallel.run_local(job, todo, int(jobs), start_method)
    except BaseException:
        if comm is None:
            raise
        import traceback
        print("ampsim.torch.compare: rank %d of %d failed:\n%s" % (rank, size, traceback.format_exc()),
              file=sys.stderr, flush=True)
        comm.Abort(1)
    if comm is not None:
        errors = {k: v for part in comm.allgather(errors) for k, v in part.items()}
        skipped = [n for part in comm.allgather(skipped) for n in part]
        msg = None
        if rank == 0:
            try:
                _parallel.summarize(out, grid)
            except (ValueError, _lib.AmpsimError) as e:
                msg = str(e)
        msg = comm.bcast(msg, root=0)
        if msg is not None:
            raise ValueError(msg)
    elif task is not None:
        if not _parallel.task_done(out, rank, size):
            return {"summary": None, "runs": {}, "errors": errors, "skipped": skipped}
        _parallel.summarize(out, grid)
        _parallel.tasks_clear(out)
    else:
        _parallel.summarize(out, grid)
    return _result(out, grid, errors, skipped)
