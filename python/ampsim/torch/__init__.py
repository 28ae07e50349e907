"""ampsim.torch: train your own PyTorch model (python3-torch 1.13, CPU) under any
ampsim precision policy, with per-tensor cast statistics, the frameworks' loss
scalers and run directories that ``ampsim report`` draws.

A PyTorch AMP loop runs emulated by changing two names:

    scaler = ampsim.torch.GradScaler()                   # torch.amp.GradScaler()
    for x, y in batches:
        opt.zero_grad()
        with ampsim.torch.autocast(device_type="cuda", dtype=torch.float16, out="run"):
            loss = model(x, labels=y).loss               # was torch.autocast
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

or, for a model and any policy:

    emu = ampsim.torch.emulate(model, "fp16-amp", out="run")
    scaler = ampsim.torch.GradScaler("torch")
    with emu:
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()          # ends the step
"""
from ._autocast import autocast
from ._compare import Run, compare
from ._ddp import allreduce_hook
from ._emulate import EmulationError, emulate
from ._policy import Policy, preset_names
from ._scaler import GradScaler


def diff_grads(model, loss_fn, policy="bf16-amp-cpu", **kw):
    """Step-0 gradients under emulate(policy) against torch.autocast, per
    parameter and per op: see ampsim.torch.diagnose.diff_grads."""
    from .diagnose import diff_grads as run   # (not at import: python3 -m ampsim.torch.diagnose)
    return run(model, loss_fn, policy, **kw)


__all__ = ["EmulationError", "GradScaler", "allreduce_hook", "autocast", "Policy", "Run", "compare", "diff_grads",
           "emulate", "preset_names"]
