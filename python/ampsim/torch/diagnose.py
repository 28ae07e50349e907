"""Step-0 gradients of a model under emulate against real torch.autocast.

    report = ampsim.torch.diff_grads(model, loss_fn, policy="bf16-amp-cpu")
    print(report)

loss_fn(model) runs one forward and returns the loss (a scalar tensor). The
model is copied twice (its state as given): one copy runs under
``torch.autocast`` with the policy's device and dtype, one under
``emulate(policy)``; each calls ``loss.backward()`` once. A function mode that
sits above both records every torch function the model calls, in order, and
watches the gradient of each floating output as autograd forms it (for an
emulated low-precision tensor: the buffer summed in format, see _grad.py).

The report gives, per parameter, how many gradient elements differ; and, in
the order the reference's backward formed them, the first op output whose
gradient differs (with the op, its module and how many elements differ),
plus the first op whose forward output differs.

Command line (the module names a function that returns (model, loss_fn)):

    python3 -m ampsim.torch.diagnose mypkg.models:make --policy bf16-amp-cpu
"""
import argparse
import copy
import importlib
import sys

import torch
from torch.overrides import TorchFunctionMode

from . import _fastmode, _grad
from ._emulate import emulate
from ._policy import Policy
from ._scope import tensors_in

#: policies and the autocast that is their reference: (device, dtype)
_REFERENCE = {"bf16-amp-cpu": ("cpu", torch.bfloat16), "bf16-amp": ("cuda", torch.bfloat16),
              "fp16-amp": ("cuda", torch.float16)}


class _Recorder(TorchFunctionMode):
    """Records each call's floating tensor outputs and, as backward forms
    them, their gradients (in arrival order)."""

    def __init__(self, model):
        super().__init__()
        self.ops = []            # (index, function name, module path, [forward outputs])
        self.grads = {}          # (op index, output index) -> gradient (float32)
        self.order = []          # (op index, output index) in arrival order
        self.path = []
        self._hooks = []
        for n, m in model.named_modules():
            self._hooks.append(m.register_forward_pre_hook(lambda mod, a, n=n: self.path.append(n)))
            self._hooks.append(m.register_forward_hook(self._pop))

    def _pop(self, mod, args, out):
        self.path.pop()

    def close(self):
        for h in self._hooks:
            h.remove()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", None) or getattr(getattr(func, "__func__", None), "__name__", repr(func))
        if func is torch.Tensor.backward or name in ("__get__", "__set__"):
            return out             # (attribute reads: emulate's own hooks read p._version)
        outs = out if type(out) in (list, tuple) else (out,)
        rec = []
        i = len(self.ops)
        ins = [id(a) for a in tensors_in(args, kwargs or {})]
        for j, o in enumerate(outs):
            if isinstance(o, torch.Tensor) and o.is_floating_point():
                rec.append(o.detach().float().clone())
                # (an in-place op's output is its input: the gradient watched
                # on that tensor object is not the same graph position in the
                # two runs, so in-place outputs are compared forward only)
                if o.requires_grad and id(o) not in ins:
                    _grad.watch(o, self._keep(i, j))
            else:
                rec.append(None)
        self.ops.append((i, name, self.path[-1] if self.path else "", rec))
        return out

    def _keep(self, i, j):
        def fn(g):
            if g is None:               # (an output the loss does not use: autograd formed no gradient)
                return
            key = (i, j)
            if key not in self.grads:
                self.order.append(key)
                self.grads[key] = g.detach().float().clone()
            else:                       # a second backward through the same tensor
                self.grads[key] = self.grads[key] + g.detach().float()
        return fn


def _ndiff(a, b):
    if a is None or b is None:
        return None
    if a.shape != b.shape:
        return a.numel()
    return int((a != b).sum()) - int(((a != a) & (b != b)).sum())


class GradDiff:
    """The result of diff_grads.

    Attributes: ``params``, a list of (name, numel, differing, max_abs) per
    parameter; ``first_backward``, (op index, op, module, differing, numel)
    of the first op output, in the reference's backward order, whose
    gradient differs (None when all agree); ``first_forward``, the same for
    the forward outputs; ``ops``, the number of op calls recorded.
    """

    def __init__(self, params, first_forward, first_backward, ops, policy):
        self.params, self.first_forward, self.first_backward = params, first_forward, first_backward
        self.ops, self.policy = ops, policy

    @property
    def identical_fraction(self):
        """Fraction of all parameter-gradient elements that are bit-identical."""
        n = sum(p[1] for p in self.params)
        return 1.0 - sum(p[2] for p in self.params) / n if n else 1.0

    def __str__(self):
        lines = ["diff_grads (%s against autocast): %d op calls; %.4f%% of the gradient elements identical"
                 % (self.policy, self.ops, 100 * self.identical_fraction)]
        lines.append("%-40s %10s %10s %12s" % ("parameter", "elements", "differ", "max |diff|"))
        for n, k, d, m in self.params:
            lines.append("%-40s %10d %10d %12.3g" % (n, k, d, m))
        for what, f in (("forward", self.first_forward), ("backward", self.first_backward)):
            if f is None:
                lines.append("first %s divergence: none" % what)
            else:
                lines.append("first %s divergence: op %d %s in %s, %d of %d elements"
                             % (what, f[0], f[1], f[2] or "(model)", f[3], f[4]))
        return "\n".join(lines)


def _run(model, loss_fn, ctx, backward_inside=True):
    """The forward in ctx, then the backward: inside ctx (the emulation's
    step), or after it (autocast: PyTorch's AMP recipe runs the backward
    outside the autocast block, so an op whose backward calls listed ops,
    as bilinear's _trilinear_backward calls bmm, runs them uncast)."""
    rec = _Recorder(model)
    # (both runs see every indexing call, as the emulation does: _fastmode.getitem)
    _fastmode.install()
    try:
        with ctx:
            with rec:
                loss = loss_fn(model)
            if backward_inside:
                loss.backward()
        if not backward_inside:
            loss.backward()
    finally:
        _fastmode.uninstall()
        rec.close()
    return rec


def _two_copies(model):
    """Two deep copies of model. A module attribute that is a computed tensor
    (torch.nn.utils.weight_norm's weight, recomputed before each forward),
    which deepcopy refuses, is copied detached; the model keeps its own."""
    held = []
    for mod in model.modules():
        for k, v in list(vars(mod).items()):
            if isinstance(v, torch.Tensor) and not v.is_leaf:
                held.append((mod, k, v))
                mod.__dict__[k] = v.detach()
    try:
        return copy.deepcopy(model), copy.deepcopy(model)
    finally:
        for mod, k, v in held:
            mod.__dict__[k] = v


def diff_grads(model, loss_fn, policy="bf16-amp-cpu", *, kernels="torch", reference=None):
    """Compare step-0 gradients of emulate(policy) with torch.autocast.

    model: a float32 torch.nn.Module on the CPU (copied; not modified).
    loss_fn(model) -> scalar loss tensor (one forward); with a CUDA reference
    it is called with the model on CUDA too, so it should move its inputs to
    the model's device. Both runs start from the same state of the CPU
    random generator, so that dropout draws the same masks on the CPU.
    policy: a preset or
    Policy; its reference autocast is CPU bf16 for bf16-amp-cpu, CUDA for
    fp16-amp and bf16-amp (on a machine with CUDA), or reference=(device,
    dtype). Returns a GradDiff (print it).
    """
    pol = policy if isinstance(policy, Policy) else Policy(policy)
    dev, dt = reference or _REFERENCE.get(pol.name, (None, None))
    if dev is None:
        raise ValueError("diff_grads: policy %s has no autocast reference; give reference=(device, dtype)"
                         % pol.name)
    if dev != "cpu" and not (dev == "cuda" and torch.cuda.is_available()):
        raise ValueError("diff_grads: policy %s is compared with autocast on %s, which this machine lacks"
                         % (pol.name, dev))
    ref_m, emu_m = _two_copies(model)
    if dev != "cpu":
        ref_m = ref_m.to(dev)
    # both runs draw the same random numbers (dropout masks): the CPU
    # generator is put back where the reference run found it
    rng = torch.get_rng_state()
    ref = _run(ref_m, loss_fn, torch.autocast(dev, dtype=dt), backward_inside=False)
    torch.set_rng_state(rng)
    emu = _run(emu_m, loss_fn, emulate(emu_m, pol, kernels=kernels))
    params = []
    rp = dict(ref_m.named_parameters())
    for n, p in emu_m.named_parameters():
        a, b = p.grad, rp[n].grad
        if a is None and b is None:
            continue
        if a is None or b is None:
            params.append((n, p.numel(), p.numel(), float("inf")))
            continue
        b = b.detach().float().cpu()
        params.append((n, p.numel(), _ndiff(a, b), float((a - b).abs().max()) if a.numel() else 0.0))
    if len(ref.ops) != len(emu.ops) or any(x[1] != y[1] for x, y in zip(ref.ops, emu.ops)):
        raise RuntimeError("diff_grads: the two runs called different ops (%d and %d calls): is the "
                           "model's forward deterministic?" % (len(ref.ops), len(emu.ops)))
    first_f = None
    for (i, name, path, outs), (_, _, _, eouts) in zip(ref.ops, emu.ops):
        for a, b in zip(outs, eouts):
            d = _ndiff(a.cpu() if a is not None else None, b)
            if d:
                first_f = (i, name, path, d, a.numel())
                break
        if first_f:
            break
    first_b = None
    for key in ref.order:
        d = _ndiff(ref.grads[key].cpu(), emu.grads.get(key))
        if d:
            i, name, path, outs = ref.ops[key[0]]
            first_b = (i, name, path, d, ref.grads[key].numel())
            break
    return GradDiff(params, first_f, first_b, len(ref.ops), pol.name)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ampsim.torch.diagnose",
                                 description="Compare a model's step-0 gradients under ampsim.torch.emulate "
                                             "with torch.autocast: per parameter the elements that differ, "
                                             "and the first op where forward and backward diverge.")
    ap.add_argument("factory", help="MODULE:FUNCTION returning (model, loss_fn); loss_fn(model) -> loss")
    ap.add_argument("--policy", default="bf16-amp-cpu", help="precision policy (default bf16-amp-cpu)")
    ap.add_argument("--kernels", default="torch", choices=("torch", "ampsim"))
    a = ap.parse_args(argv)
    mod, _, fn = a.factory.partition(":")
    if not fn:
        ap.error("factory must be MODULE:FUNCTION, not %r" % a.factory)
    try:
        make = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        print("diagnose: %s: %s" % (a.factory, e), file=sys.stderr)
        return 2
    model, loss_fn = make()
    try:
        print(diff_grads(model, loss_fn, a.policy, kernels=a.kernels))
    except ValueError as e:
        print("diagnose: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
