"""The real run's dtype rules that make PyTorch raise, mirrored.

The emulation holds every value in a float32 tensor and its format in an
attribute, so PyTorch's own dtype checks never fire on it. Where the real
run (autocast, or the installed torch's kernels) refuses a call because two
of its tensors have different dtypes, the emulation raises EmulationError at
the same call, so that a run which cannot happen on the device does not run
here silently:
  - one_dtype: the ops that need one dtype and that autocast does not cast
    (_ops.SAME_DTYPE; an assignment through a tensor index, which is
    aten's index_put_);
  - cpu_norm: layer_norm and group_norm under CPU autocast's lists, where
    the installed torch's kernel refuses a bf16 input with FP32 parameters.
An FP32 tensor where a low-precision one is expected passes in both: the
emulation cannot tell it from t.to(x.dtype), which reads float32 here and
converts in the real run.
"""
import torch

from ._plan import PVIEW_ATTR as _PVIEW
from ._rt import EmulationError
from ._rt import fmt_of as _fmt_of


def one_dtype(emu, name, ts):
    """Raise when the source (ts[1:]) of a call that needs one dtype holds a
    low-precision format other than its destination's (ts[0]). Each format
    is a dtype of the real run; not under FP8 scaling, whose formats live
    inside GEMMs."""
    dst = _fmt_of(ts[0])
    bad = sorted({f for f in map(_fmt_of, ts[1:]) if f not in (dst, "fp32")})
    if bad and not emu.policy.fp8_scaling:
        raise EmulationError(
            "ampsim.torch: %s in %s: the source holds %s values and the destination %s ones: PyTorch raises "
            "here under autocast (the op needs one dtype, and autocast does not cast it); convert the source "
            "first, for example `src.to(dst.dtype)`" % (name, emu._where(), bad[0], dst))


def advanced_index(idx):
    """True for an index that makes x[idx] = v an index_put (a tensor, a
    list or a sequence holding one), not a copy into a view."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, (torch.Tensor, list)) for i in items)


#: norms on neither CPU list: (position of the weight, of the bias) in the call
CPU_NORMS = {"layer_norm": (2, 3), "group_norm": (2, 3)}
_MIXED_OK = {}          # name -> whether this torch runs bf16 with FP32 parameters (asked once)
_MIXED_PROBES = {"layer_norm": lambda x, w: torch.layer_norm(x, (4,), w, w),
                 "group_norm": lambda x, w: torch.group_norm(x, 2, w, w)}


def mixed_ok(name):
    """Whether this torch's CPU kernel of name runs a bf16 input with FP32
    weight and bias (later versions have mixed-dtype kernels; torch 1.13
    raises: expected scalar type BFloat16 but found Float). Asked once."""
    ok = _MIXED_OK.get(name)
    if ok is None:
        try:
            _MIXED_PROBES[name](torch.ones(2, 4, dtype=torch.bfloat16), torch.ones(4))
            ok = True
        except RuntimeError:
            ok = False
        _MIXED_OK[name] = ok
    return ok


def cpu_norm(emu, name, args, kwargs):
    """Under CPU autocast's lists: raise where this torch's kernel refuses a
    parameter (or a view of one) in FP32 met by an input in a low-precision
    format (torchvision's ConvNeXt and Swin under torch 1.13)."""
    x = args[0] if args else kwargs.get("input")
    f = _fmt_of(x) if isinstance(x, torch.Tensor) else "fp32"
    if f == "fp32" or mixed_ok(name):
        return
    for i, k in zip(CPU_NORMS[name], ("weight", "bias")):
        t = args[i] if len(args) > i else kwargs.get(k)
        if isinstance(t, torch.Tensor) and _fmt_of(t) == "fp32" and (
                isinstance(t, torch.nn.Parameter) or getattr(t, _PVIEW, None) is not None):
            raise EmulationError(
                "ampsim.torch: %s in %s: a %s input with the FP32 %s: CPU autocast leaves %s off its lists "
                "and this torch's kernel needs one dtype, so PyTorch raises here (expected scalar type BFloat16 "
                "but found Float); normalize a float32 input (`x.float()`) or emulate the CUDA lists (policy "
                "bf16-amp)" % (name, emu._where(), f, k, name))
