"""Precision policies for ampsim.torch: the presets and the JSON schema of
``ampsim train --precision / --policy``, read by the C library itself
(amp_policy_preset, amp_policy_from_json, amp_policy_to_json), so a policy
means the same thing here as in the training emulator."""
import ctypes
import json
import os

from .. import _lib

_lib.lib.amp_policy_preset.restype = ctypes.c_int
_lib.lib.amp_policy_preset.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
_lib.lib.amp_policy_from_json.restype = ctypes.c_int
_lib.lib.amp_policy_from_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
_lib.lib.amp_policy_to_json.restype = ctypes.c_void_p
_lib.lib.amp_policy_to_json.argtypes = [ctypes.c_void_p]
_lib.lib.amp_policy_names.restype = ctypes.c_char_p
_lib.lib.amp_policy_names.argtypes = []

# amp_policy is a few hundred bytes (nine amp_format rows); the buffer is ample
_POLICY_BYTES = 1 << 14

#: the op classes a policy may force to FP32 (sim/policy.c)
OP_CLASSES = ("softmax", "log_softmax", "layer_norm", "loss", "reduction")


def preset_names():
    """The preset names of ``ampsim train --precision`` (list of str)."""
    return [s.strip() for s in _lib.lib.amp_policy_names().decode().split(",")]


class Policy:
    """A precision policy, as the C emulator reads it.

    Attributes (format names are str, as ``ampsim formats`` prints them):
    ``name``; ``act``, ``act_grad``, ``weight_grad``, ``weight``, ``master``,
    ``optim_state`` (roles); ``fwd_in``, ``bwd_in`` (GEMM operands: forward,
    and gradients in backward); ``accumulator``; ``fp32_ops`` (set of
    OP_CLASSES computed and output in FP32); ``rounding``, ``sr_bits``;
    ``saturate`` (GEMM operand casts saturate); ``update`` (round, sr, kahan:
    how w + u is rounded when weights live in a narrow format);
    ``fp8_scaling``; ``has_master`` (weights cast once per step from FP32
    masters); ``torch_cpu`` (PyTorch's CPU kernels and CPU autocast's lists:
    ``"kernels": "torch_cpu"``); ``json`` (the policy as the C library writes it).
    """

    def __init__(self, spec="fp32"):
        buf = ctypes.create_string_buffer(_POLICY_BYTES)
        if isinstance(spec, Policy):
            spec = spec.json
        if isinstance(spec, dict):
            text = json.dumps(spec)
            _lib.check(_lib.lib.amp_policy_from_json(text.encode(), b"policy", buf))
        elif isinstance(spec, str) and (spec.endswith(".json") or os.path.sep in spec):
            with open(spec) as f:
                text = f.read()
            _lib.check(_lib.lib.amp_policy_from_json(text.encode(), spec.encode(), buf))
        elif isinstance(spec, str):
            _lib.check(_lib.lib.amp_policy_preset(spec.encode(), buf))
        else:
            raise TypeError("policy must be a preset name, a JSON file path or a dict, not %s"
                            % type(spec).__name__)
        p = _lib.lib.amp_policy_to_json(buf)
        if not p:
            raise MemoryError("out of memory writing the policy")
        try:
            d = json.loads(ctypes.string_at(p).decode())
        finally:
            _lib.libc.free(p)
        self.json = d
        self.name = d["name"]
        r, g = d["roles"], d["gemm"]
        self.weight, self.master, self.act = r["weight"], r["master"], r["act"]
        self.act_grad, self.weight_grad, self.optim_state = r["act_grad"], r["weight_grad"], r["optim_state"]
        self.fwd_in, self.bwd_in = g["input"], g["grad_input"]
        self.accumulator, self.promote_every = g["accumulator"], g["promote_every"]
        self.fp32_ops = set(d["fp32_ops"])
        self.rounding, self.sr_bits = d["rounding"], d["sr_bits"]
        self.saturate = bool(d["saturate_operands"])
        self.update = d["update"]
        self.fp8_scaling = bool(d["fp8_scaling"])
        # PyTorch's CPU kernels and CPU autocast's lists ("kernels": "torch_cpu": bf16-amp-cpu)
        self.torch_cpu = d.get("kernels") == "torch_cpu"
        self.has_master = self.master == "fp32" and self.weight != "fp32"
        # FP8 weights keep their bias in the activation format (sim/layer_linear.c)
        self.bias = self.act if _bits(self.weight) <= 8 else self.weight
        self._fp32 = all(f == "fp32" for f in (self.weight, self.act, self.act_grad, self.weight_grad,
                                               self.fwd_in, self.bwd_in, self.master))

    def is_fp32(self):
        """True when every role and operand is FP32 (nothing is rounded)."""
        return self._fp32

    def __repr__(self):
        return "Policy(%r)" % self.name


def _bits(fmt):
    """Storage bits of a format name, from the format table."""
    from .. import Format
    return Format(fmt).bits
