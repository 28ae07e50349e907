"""Shared helpers of the package's tests: paths, the CLI, test inputs."""
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

# one OpenBLAS thread before any test imports torch, as python/run_tests.py
# sets it (a float32 GEMM's bits depend on OpenBLAS's split on some CPUs), so
# that a module run on its own (python3 -m unittest test_torch_agree) agrees too
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)

import ampsim  # noqa: E402

#: The CLI the package is compared with ($AMPSIM, else build/ampsim).
CLI = os.environ.get("AMPSIM") or os.path.join(ROOT, "build", "ampsim")

#: Fixed seed of every random input (AMPSIM_TEST_SEED overrides it; failures print it).
SEED = int(os.environ.get("AMPSIM_TEST_SEED", "20240601"))

#: Whether PyTorch is installed: looked up without importing it, so that a
#: module without torch tests does not pay for the import.
HAVE_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "PyTorch (python3-torch) is not installed"

#: AMPSIM_FULL=1 runs the larger variants (the MPFR comparison on 10^6 values per case).
FULL = os.environ.get("AMPSIM_FULL") == "1"


def cli(*args, check=True, stdin=None):
    """Run the ampsim CLI; returns CompletedProcess (text)."""
    if not os.path.exists(CLI):
        raise RuntimeError("%s is missing: run `make` first (or set AMPSIM)" % CLI)
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError("ampsim %s: exit %d: %s" % (" ".join(map(str, args)), p.returncode, p.stderr))
    return p


def import_torch():
    """torch, set to one intra-op thread (a float32 op's bits depend on how
    the threads split it): how every torch test module imports it."""
    import torch
    torch.set_num_threads(1)
    return torch


def tmpdir(case):
    """A fresh temporary directory removed with the test."""
    d = tempfile.TemporaryDirectory(prefix="ampsim-py-")
    case.addCleanup(d.cleanup)
    return d.name


def hard_values(fmt, n, seed):
    """See _hard_values (numpy's overflow warnings silenced: the overflows are wanted)."""
    with np.errstate(all="ignore"):
        return _hard_values(fmt, n, seed)


def _hard_values(fmt, n, seed):
    """n float32 values that exercise rounding into fmt: random bit patterns
    (every class: NaN, inf, zero, subnormal), the format's values, the exact
    midpoints between neighbours and one float32 ulp either side of them,
    values around max finite and min subnormal, and log-uniform magnitudes
    over the format's range."""
    f = ampsim.Format(fmt)
    rng = np.random.default_rng(seed)
    parts = []
    k = n // 6
    parts.append(rng.integers(0, 1 << 32, size=k, dtype=np.uint64).astype(np.uint32).view(np.float32))
    # format values: random significands and exponents inside the range
    e = rng.integers(f.emin - f.mbits - 2, f.emax + 2, size=k)
    m = rng.integers(0, 1 << f.mbits, size=k) if f.mbits else np.zeros(k, np.int64)
    v = np.ldexp(1.0 + m / float(1 << f.mbits), e)
    sign = np.where(rng.integers(0, 2, size=k) == 1, -1.0, 1.0)
    v = (sign * v).astype(np.float64)
    ulp = np.ldexp(1.0, np.maximum(e, f.emin) - f.mbits)
    mid = (v + np.sign(v) * ulp / 2).astype(np.float32)
    parts.append(v.astype(np.float32))
    parts.append(mid)
    parts.append(np.nextafter(mid, np.float32(np.inf)))
    parts.append(np.nextafter(mid, np.float32(-np.inf)))
    edges = np.array([f.max_finite, f.min_normal, f.min_subnormal, f.min_subnormal / 2,
                      f.max_finite + f.max_finite * f.epsilon / 2, 0.0, np.inf, np.nan], np.float64)
    edges = np.concatenate([edges, -edges]).astype(np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))])
    parts.append(edges)
    rest = max(0, n - sum(len(p) for p in parts))
    mag = np.exp2(rng.uniform(np.log2(f.min_subnormal) - 4, np.log2(f.max_finite) + 4, size=rest))
    parts.append((mag * np.where(rng.integers(0, 2, size=rest) == 1, -1, 1)).astype(np.float32))
    x = np.concatenate(parts)[:n]
    return rng.permutation(x).astype(np.float32)


def bits_equal(a, b):
    """True if two float32 arrays have the same shape and hold the same bits."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    return a.shape == b.shape and bool((a.view(np.uint32) == b.view(np.uint32)).all())


def bits_equal_nan(a, b):
    """bits_equal, but any NaN equals any NaN (for decoded patterns, whose NaN
    payload is the format's, not the input's)."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    if a.shape != b.shape:
        return False
    return bool(((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))).all())


def first_diff(x, a, b):
    """A message naming the first element where a and b differ (hex)."""
    a = np.asarray(a, np.float32).ravel()
    b = np.asarray(b, np.float32).ravel()
    bad = np.nonzero(a.view(np.uint32) != b.view(np.uint32))[0]
    if not len(bad):
        return "no difference"
    i = int(bad[0])
    xi = np.asarray(x).ravel()[i]
    return "%d differences; first at %d: input %s (%r), expected %s (%r), got %s (%r); seed %d" % (
        len(bad), i, float(xi).hex(), float(xi), float(a[i]).hex(), float(a[i]), float(b[i]).hex(),
        float(b[i]), SEED)


def read(d, name):
    """The text of file name in folder d."""
    with open(os.path.join(d, name)) as f:
        return f.read()


#: the run-directory files two emulated runs that should agree are compared on
RUN_FILES = ("tensors.csv", "coverage.csv", "hist.csv", "events.csv", "metrics.csv", "summary.json")


def assert_same_runs(case, la, ga, lb, gb, a, b, what):
    """Two training runs agree bit for bit: their losses la, lb, their
    per-step parameter gradients ga, gb, and the files of their run
    directories a, b (RUN_FILES that the first wrote)."""
    import torch
    for x, y in zip(la, lb):
        case.assertTrue(torch.equal(x.view(torch.int32), y.view(torch.int32)), "%s: loss %r %r" % (what, x, y))
    for s, (x, y) in enumerate(zip(ga, gb)):
        for i, (p, q) in enumerate(zip(x, y)):
            case.assertTrue(torch.equal(p.view(torch.int32), q.view(torch.int32)),
                            "%s: step %d parameter %d gradient differs" % (what, s, i))
    for f in RUN_FILES:
        if os.path.exists(os.path.join(a, f)):
            case.assertEqual(read(a, f), read(b, f), "%s: %s differs" % (what, f))


class Counted:
    """Counts the calls of module.name while in use (a context manager). On
    exit module's own entry is put back as it was, or removed when name was
    inherited (a class's classmethod from its base), so that the class and
    its subclasses look it up as before."""

    def __init__(self, module, name):
        self.module, self.name, self.calls = module, name, 0

    def __enter__(self):
        fn = getattr(self.module, self.name)
        self.own = vars(self.module).get(self.name, _MISSING)

        def counted(*a, **k):
            self.calls += 1
            return fn(*a, **k)
        setattr(self.module, self.name, counted)
        return self

    def __exit__(self, *a):
        if self.own is _MISSING:
            delattr(self.module, self.name)
        else:
            setattr(self.module, self.name, self.own)


_MISSING = object()


def emulated_run(m, opt, policy, out, every, inputs, switch=None, loss=None, strict=True):
    """(losses, per-step parameter gradients) of a training run of m under
    emulate(policy, strict=strict) with statistics every `every` steps, one
    step per input (loss(m, input), default m(input)); a pure policy's
    optimizer is wrapped, fp16 policies scale the loss (GradScaler "torch");
    a gradient that is None is zeros(1). switch: (module, value) sets
    module.ENABLED for the run (a unit's switch: _attn, _seq)."""
    import torch

    import ampsim.torch as at
    prev = switch[0].ENABLED if switch else None
    if switch:
        switch[0].ENABLED = switch[1]
    losses, grads = [], []
    try:
        with at.emulate(m, policy, out=out, log_every=every, hist_every=every, strict=strict) as emu:
            if policy.endswith("-pure"):
                opt = emu.optimizer(opt)
            sc = at.GradScaler("torch" if policy.startswith("fp16") else "none")
            for x in inputs:
                value = m(x) if loss is None else loss(m, x)
                opt.zero_grad()
                sc.scale(value).backward()
                grads.append([p.grad.clone() if p.grad is not None else torch.zeros(1) for p in m.parameters()])
                sc.step(opt)
                sc.update()
                losses.append(value.detach().clone())
    finally:
        if switch:
            switch[0].ENABLED = prev
    return losses, grads


def zoo_run(name, out, every, steps, switch):
    """emulated_run of the zoo's model `name` (zoo_models.py: its batches and
    loss, SGD with momentum) under fp16-amp for `steps` steps."""
    import torch
    from zoo_models import zoo
    make, batch, loss_fn = zoo(1)[name]
    torch.manual_seed(0)
    m = make()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    return emulated_run(m, opt, "fp16-amp", out, every, [batch(s) for s in range(steps)], switch,
                        lambda mod, xy: loss_fn(mod, *xy), strict=False)
