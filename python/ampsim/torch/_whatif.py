"""``emulate(what_if=...)``: the C emulator's shadow loss scalers
(sim/amp_whatif.h) riding along a PyTorch run. Once per step they receive the
unscaled FP32 weight gradients (``p.grad``) and write ``whatif.csv`` in the
run directory, as ``ampsim train --what-if`` does: each shadow rescales the
gradients by its own scale, rounds them into the gradient format and follows
its own rule. The run itself is unchanged."""
import ctypes

import torch

from .. import _lib
from . import _rt


def specs_of(what_if):
    """The SPEC list string of a what_if argument: True or "" = every loss
    scaler; a string "torch;apex"; or a list of SPECs. None/False = off."""
    if what_if is None or what_if is False:
        return None
    if what_if is True:
        return ""
    if isinstance(what_if, str):
        return what_if
    if isinstance(what_if, (list, tuple)) and all(isinstance(s, str) for s in what_if):
        return ";".join(what_if)
    raise TypeError("emulate: what_if must be True, a SPEC string ('torch;apex') or a list of SPECs, not %r"
                    % (what_if,))


class WhatIf:
    """The shadows of one emulate run (whatif.csv under out)."""

    def __init__(self, specs, fmt):
        # checked now, so a bad SPEC fails at emulate(), before any training
        w = ctypes.c_void_p()
        _lib.check(_lib.lib.amp_whatif_create(ctypes.byref(w), specs.encode()), ValueError)
        _lib.lib.amp_whatif_free(w)
        self.specs, self.fmt = specs, fmt
        self._w = None

    def open(self, out):
        w = ctypes.c_void_p()
        _lib.check(_lib.lib.amp_whatif_open(ctypes.byref(w), str(out).encode(), self.specs.encode()))
        self._w = w

    def step(self, emu, logged):
        """One training step: the weight gradients of emu's model, unscaled."""
        pol, sc = emu.policy, emu.scaler
        inv = 1.0
        if sc is not None and sc._used_scale and not sc._unscaled:
            inv = 1.0 / sc._used_scale
        fmt = self.fmt or pol.weight_grad
        f = _rt.fmt_struct(fmt)
        keep, grads = [], []
        for p in emu._params:
            name = emu._param_names.get(id(p), "param")
            g = p.grad.detach() if p.grad is not None else torch.zeros_like(p)
            g = (g * inv if inv != 1.0 else g).to(torch.float32).contiguous()
            sr = pol.rounding == "sr"
            o = _rt.keyed_opts(fmt, pol.rounding, False, pol.sr_bits,
                               _rt.step_seed(emu.seed, emu.step_index) if sr else 0,
                               emu._tid(name + ".grad") if sr else 0)
            nm = name.encode()
            keep += [g, nm]
            grads.append(_lib.AmpWhatifGrad(nm, g.data_ptr(), g.numel(), ctypes.pointer(f._f), o))
        arr = (_lib.AmpWhatifGrad * len(grads))(*grads)
        _lib.check(_lib.lib.amp_whatif_step(self._w, emu.step_index, arr, len(grads), int(bool(logged)), None))
        del keep

    def close(self):
        if self._w is not None:
            w, self._w = self._w, None
            _lib.check(_lib.lib.amp_whatif_close(w))

    def abort(self):
        if self._w is not None:
            w, self._w = self._w, None
            _lib.lib.amp_whatif_free(w)
