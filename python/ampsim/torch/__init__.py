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
from ._emulate import EmulationError, emulate
from ._policy import Policy, preset_names

__all__ = ["EmulationError", "Policy", "emulate", "preset_names"]

try:
    from ._scaler import GradScaler
    __all__.append("GradScaler")
except ImportError:  # pragma: no cover
    pass
try:
    from ._compare import compare
    __all__.append("compare")
except ImportError:  # pragma: no cover
    pass
