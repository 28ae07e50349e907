"""ampsim.torch: train your own PyTorch model (python3-torch 1.13, CPU) under any
ampsim precision policy, with per-tensor cast statistics, the frameworks' loss
scalers and run directories that ``ampsim report`` draws.

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
from ._compare import Run, compare
from ._ddp import allreduce_hook
from ._emulate import EmulationError, emulate
from ._policy import Policy, preset_names
from ._scaler import GradScaler

__all__ = ["EmulationError", "allreduce_hook", "GradScaler", "Policy", "Run", "compare", "emulate", "preset_names"]
