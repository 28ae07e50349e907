"""Where the runs of ampsim.torch.compare run: worker processes on this
machine (jobs=N), the ranks of an MPI job (mpi4py, detected under mpirun or
srun), or the tasks of a Slurm job array; and the summary of a compare folder
from what is on disk (compare.json, the runs' summary.json), which any of them,
or ``python3 -m ampsim.torch.merge DIR``, writes.

Shares are fixed: run i (in compare.json's order) belongs to rank i mod R, or
to array task i mod T (the task's index counted from SLURM_ARRAY_TASK_MIN).
A run is finished when its run directory holds summary.json (written last, by
RunLog.close) from a config.json naming the same run; any other run directory
is half-written and is removed before the run is redone. Every run starts from
the same seeds and initial weights with the same number of torch threads
(PyTorch's CPU kernels give other bits at other thread counts) in whichever
process it runs, and the summary reads only the run directories, so a
folder's bytes do not depend on where its runs ran."""
import concurrent.futures as cf
import ctypes
import json
import multiprocessing
import os
import random
import shutil
import sys
import traceback

import torch

from .. import _lib

GRID = "compare.json"
TASKS = ".ampsim-tasks"


class RunCfg(ctypes.Structure):
    """Mirror of amp_run_cfg (analysis/amp_compare.h)."""
    _fields_ = [("name", ctypes.c_char * 160), ("precision", ctypes.c_char * 64),
                ("scaler", ctypes.c_char * 256), ("loss_scaler", ctypes.c_char * 256),
                ("fp8", ctypes.c_char * 256), ("is_ref", ctypes.c_int)]


class SweepGroup(ctypes.Structure):
    """Mirror of amp_sweep_group (analysis/amp_sweep.h)."""
    _fields_ = [("name", ctypes.c_char * 96), ("nopt", ctypes.c_int), ("opt", ctypes.POINTER(ctypes.c_char_p)),
                ("val", ctypes.POINTER(ctypes.c_char_p)), ("seed", ctypes.c_char * 32)]


class Sweep(ctypes.Structure):
    """Mirror of amp_sweep (analysis/amp_sweep.h)."""
    _fields_ = [("npass", ctypes.c_int), ("pass_", ctypes.POINTER(ctypes.c_char_p)), ("nkeys", ctypes.c_int),
                ("keys", ctypes.POINTER(ctypes.c_char_p)), ("ngroups", ctypes.c_int),
                ("groups", ctypes.POINTER(SweepGroup)), ("nruns", ctypes.c_int), ("runs", ctypes.POINTER(RunCfg)),
                ("run_group", ctypes.POINTER(ctypes.c_int)), ("tol", ctypes.c_double)]


_abi = _lib._fn("amp_compare_abi_size", ctypes.c_size_t, ctypes.c_char_p)
for _name, _cls in (("amp_run_cfg", RunCfg), ("amp_sweep", Sweep), ("amp_sweep_group", SweepGroup)):
    if _abi(_name.encode()) != ctypes.sizeof(_cls):
        raise ImportError("ampsim.torch: %s: struct %s is %d bytes in the library but %d in the Python mirror; "
                          "the package and the library come from different versions (rebuild with `make`)"
                          % (_lib.library_path, _name, _abi(_name.encode()), ctypes.sizeof(_cls)))
_summarize = _lib._fn("amp_compare_summarize", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(RunCfg), ctypes.c_int,
                      ctypes.POINTER(ctypes.c_int), ctypes.c_double)
_sweep_summarize = _lib._fn("amp_sweep_summarize", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(Sweep),
                            ctypes.POINTER(ctypes.c_int))


def named_parameters(model):
    """[(name, parameter)] of emulate's model argument (a module, or a list or
    dict of them, named as emulate names them: "0.fc1.weight",
    "student.fc1.weight"); [] for None."""
    if model is None:
        return []
    from ._checks import _models_of
    return [(pre + "." + n if pre else n, p) for pre, m in _models_of(model) for n, p in m.named_parameters()]


# ---- the grid on disk ---------------------------------------------------------------------------
def write_grid(out, grid):
    """DIR/compare.json = grid (atomically; every process writes the same text)."""
    text = json.dumps(grid, indent=1) + "\n"
    path = os.path.join(out, GRID)
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def read_grid(out):
    """The grid of a compare folder (ValueError naming the file if absent or malformed)."""
    path = os.path.join(out, GRID)
    try:
        with open(path) as f:
            grid = json.load(f)
    except FileNotFoundError:
        raise ValueError("%s: no %s: not a folder written by ampsim.torch.compare" % (out, GRID)) from None
    except ValueError as e:
        raise ValueError("%s: malformed JSON: %s" % (path, e)) from None
    if not isinstance(grid, dict) or not isinstance(grid.get("runs"), list) or not grid["runs"]:
        raise ValueError("%s: no runs" % path)
    return grid


def finished(out, name):
    """The run out/name is complete: summary.json, from a config.json of this run."""
    d = os.path.join(out, name)
    if not os.path.exists(os.path.join(d, "summary.json")):
        return False
    try:
        with open(os.path.join(d, "config.json")) as f:
            return json.load(f).get("compare_run") == name
    except (OSError, ValueError):
        return False


def _parameters(out, name):
    try:
        with open(os.path.join(out, name, "config.json")) as f:
            return json.load(f).get("parameters")
    except (OSError, ValueError):
        return None


def check_parameters(out, grid):
    """ValueError unless every finished run trained a model with the same
    parameter names (config.json "parameters"), naming two runs that differ."""
    first = None
    for r in grid["runs"]:
        if not finished(out, r["name"]):
            continue
        p = _parameters(out, r["name"])
        if p is None:
            continue
        if first is None:
            first = (r["name"], p)
            continue
        if p != first[1]:
            a, b = first[1], p
            diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            what = ("parameter %d is %r in %s but %r in %s" % (diff, a[diff], first[0], b[diff], r["name"])
                    if diff < min(len(a), len(b)) else
                    "%s has %d parameters, %s has %d" % (first[0], len(a), r["name"], len(b)))
            raise ValueError("%s: runs %s and %s disagree on the model's parameter names (%s); refusing to "
                             "merge: rerun the runs of one model into a fresh folder" % (out, first[0], r["name"], what))


def summarize(out, grid=None):
    """Write out/summary.csv (and, with seed groups, out/GROUP/summary.csv) from
    the run directories: a run without summary.json is "failed". Returns the
    number of runs not finished."""
    grid = grid or read_grid(out)
    check_parameters(out, grid)
    runs = grid["runs"]
    arr = (RunCfg * len(runs))()
    for i, r in enumerate(runs):
        arr[i].name = r["name"].encode()
        arr[i].precision = r["precision"].encode()[:63]
        arr[i].scaler = r["scaler"].encode()[:255]
        arr[i].loss_scaler = r["loss_scaler"].encode()[:255]
        arr[i].fp8 = r["fp8"].encode()[:255]
        arr[i].is_ref = int(r["is_ref"])
    status = [0 if finished(out, r["name"]) else 1 for r in runs]
    st = (ctypes.c_int * len(runs))(*status)
    tol = float(grid.get("diverge_tol", 0.05))
    groups = grid.get("groups") or []
    if not groups:
        _lib.check(_summarize(os.fspath(out).encode(), arr, len(runs), st, tol))
        return sum(status)
    g = (SweepGroup * len(groups))()
    for i, gr in enumerate(groups):
        g[i].name = gr["name"].encode()
        g[i].seed = str(gr["seed"]).encode()
    rg = (ctypes.c_int * len(runs))(*[r["group"] for r in runs])
    sw = Sweep(ngroups=len(groups), groups=g, nruns=len(runs), runs=arr, run_group=rg, tol=tol)
    _lib.check(_sweep_summarize(os.fspath(out).encode(), ctypes.byref(sw), st))
    return sum(status)


# ---- running one run ----------------------------------------------------------------------------
class _Job:
    """What every process needs to run any run of the grid."""

    def __init__(self, train_fn, plan, out, model, init, make_run, threads):
        self.train_fn, self.plan, self.out = train_fn, plan, out
        self.model, self.init, self.make_run, self.threads = model, init, make_run, threads

    def run(self, i):
        """Run plan[i] (its half-written directory removed first) with
        `threads` torch threads; the traceback text if train_fn raised, else
        None."""
        e = self.plan[i]
        d = os.path.join(self.out, e.name)
        if os.path.lexists(d):
            shutil.rmtree(d)
        torch.manual_seed(e.seed)
        random.seed(e.seed)
        if self.init is not None:
            self.model.load_state_dict(self.init)
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            self.train_fn(self.make_run(e, d))
            return None
        except Exception:
            err = traceback.format_exc()
            print("ampsim.torch.compare: run %s failed:\n%s" % (e.name, err), file=sys.stderr)
            return err
        finally:
            torch.set_num_threads(before)


_worker_job = None


def _worker_init(job):
    global _worker_job
    torch.set_num_threads(job.threads)
    _lib.lib.amp_set_threads(job.threads)      # the library's results do not depend on it
    _worker_job = job


def _worker_run(i):
    return i, _worker_job.run(i)


def run_local(job, todo, jobs, start_method=None):
    """Run plan[i] for i in todo: in this process (jobs <= 1) or in `jobs`
    worker processes (each with job.threads torch and library threads). Returns {run name: traceback text} of the runs that
    failed (a worker that died fails the runs it had not finished)."""
    errors = {}
    if jobs <= 1 or len(todo) <= 1:
        for i in todo:
            err = job.run(i)
            if err:
                errors[job.plan[i].name] = err
        return errors
    ctx = multiprocessing.get_context(start_method or "fork")
    with cf.ProcessPoolExecutor(min(jobs, len(todo)), mp_context=ctx, initializer=_worker_init,
                                initargs=(job,)) as pool:
        futs = {pool.submit(_worker_run, i): i for i in todo}
        for f in cf.as_completed(futs):
            name = job.plan[futs[f]].name
            try:
                _, err = f.result()
            except cf.process.BrokenProcessPool as e:
                err = "a worker process died before run %s finished (%s)" % (name, e)
                print("ampsim.torch.compare: %s" % err, file=sys.stderr)
            if err:
                errors[name] = err
    return errors


# ---- who runs what ------------------------------------------------------------------------------
_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE")


def mpi_comm():
    """COMM_WORLD when this process is one of several MPI ranks (launched by
    mpirun/srun and mpi4py importable), else None. AMPSIM_NO_MPI=1 forces None.
    RuntimeError under a launcher of several ranks without mpi4py: each rank
    would run the whole grid into the same folder."""
    if os.environ.get("AMPSIM_NO_MPI") == "1" or not any(k in os.environ for k in _MPI_ENV):
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        n = os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE")
        if n is not None and n != "1":
            raise RuntimeError("ampsim.torch.compare: running as one of %s MPI ranks but mpi4py is not installed "
                               "(Debian: apt-get install python3-mpi4py); set AMPSIM_NO_MPI=1 to run the whole "
                               "grid in every rank" % n) from None
        return None
    comm = MPI.COMM_WORLD
    return comm if comm.Get_size() > 1 else None


def slurm_task():
    """(index, count) of this Slurm array task, or None outside an array.
    index = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
    (MIN 0 and STEP 1 if unset); count is SLURM_ARRAY_TASK_COUNT (or
    (MAX - MIN) / STEP + 1). The array must be a range (--array=0-7 or 0-14:2),
    not a list of ids."""
    tid = os.environ.get("SLURM_ARRAY_TASK_ID")
    if tid is None:
        return None
    try:
        lo = int(os.environ.get("SLURM_ARRAY_TASK_MIN", "0"))
        step = int(os.environ.get("SLURM_ARRAY_TASK_STEP", "1"))
        if "SLURM_ARRAY_TASK_COUNT" in os.environ:
            n = int(os.environ["SLURM_ARRAY_TASK_COUNT"])
        else:
            n = (int(os.environ["SLURM_ARRAY_TASK_MAX"]) - lo) // step + 1
        k, off = divmod(int(tid) - lo, step)
    except (KeyError, ValueError, ZeroDivisionError):
        raise RuntimeError("ampsim.torch.compare: SLURM_ARRAY_TASK_ID=%s without a usable SLURM_ARRAY_TASK_COUNT "
                           "(or SLURM_ARRAY_TASK_MIN/MAX/STEP)" % tid) from None
    if off or not 0 <= k < n:
        raise RuntimeError("ampsim.torch.compare: array task %s is not one of the %d tasks %d, %d, ... of the "
                           "array: give the array as a range (--array=0-%d)" % (tid, n, lo, lo + step, n - 1))
    return k, n


def task_done(out, k, n):
    """Mark array task k of n finished; True when every task of the array is
    (the caller then writes the summary and calls tasks_clear)."""
    d = os.path.join(out, TASKS)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "task%dof%d" % (k, n)), "w"):
        pass
    return all(os.path.exists(os.path.join(d, "task%dof%d" % (j, n))) for j in range(n))


def tasks_clear(out):
    shutil.rmtree(os.path.join(out, TASKS), ignore_errors=True)
