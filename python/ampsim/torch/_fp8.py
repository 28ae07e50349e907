"""Per-tensor FP8 scaling of GEMM operands (policies with fp8_scaling, e.g.
fp8-hybrid): the C library's FP8 scalers through ampsim.FP8Scaler, one state
per tensor (op site and operand), as the training emulator keeps them."""
import torch

from .. import FP8Scaler


class Fp8State:
    """The FP8 scaler of one emulation."""

    def __init__(self, spec, policy):
        self.sc = FP8Scaler(spec)
        for role, fmt in (("act", policy.fwd_in), ("weight", policy.weight), ("grad", policy.bwd_in)):
            got = self.sc.format(role).name
            if got != fmt:
                raise ValueError("FP8 scaler %s puts %s operands into %s, but policy %s says %s"
                                 % (self.sc.spec, role, got, policy.name, fmt))

    def begin_step(self):
        pass

    def quantize(self, x, fmt, tid, role, due):
        """x quantized with its tensor's scale: (dequantized float32 tensor,
        Stats or None, its count of non-finite values)."""
        xa = x.detach().contiguous().numpy()
        if xa.ndim >= 2:
            xa = xa.reshape(-1, xa.shape[-1])
        elif xa.ndim == 0:
            xa = xa.reshape(1)
        r = self.sc.quantize(xa, tensor=tid, role=role, stats=due)
        return torch.from_numpy(r["y"]).reshape(x.shape), r["stats"], r["nonfinite"]
