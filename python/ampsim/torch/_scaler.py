"""ampsim.torch.GradScaler: a drop-in for torch.cuda.amp.GradScaler and
torch.amp.GradScaler that runs on the CPU, with the state machine of any
framework's loss scaler (ampsim.LossScaler, the C library's scalers)."""
import contextlib
import numbers

import torch

from .. import LossScaler
from . import _rt

_TORCH_KEYS = (("init_scale", "init"), ("growth_factor", "growth"), ("backoff_factor", "backoff"),
               ("growth_interval", "interval"))


class GradScaler:
    """Loss scaling with ampsim's scaler state machines.

    Parameters
    ----------
    spec : str
        A SPEC as ``ampsim train --scaler`` takes it: torch (the default),
        apex, deepspeed, megatron, keras, static, underflow, adaptive, none
        (with keys, e.g. ``"deepspeed:hysteresis=2"``). "cuda" or "cpu"
        (torch.amp.GradScaler's device argument) mean torch; a number is
        torch.cuda.amp.GradScaler's first argument, init_scale.
    init_scale, growth_factor, backoff_factor, growth_interval : optional
        torch.amp.GradScaler's arguments, in its order, added to the SPEC's
        keys; unset, the SPEC's defaults hold (torch: 2**16, 2.0, 0.5, 2000,
        as PyTorch's).
    enabled : bool
        False: every method is a pass-through (scale 1, no skipping).

    Used as PyTorch's::

        scaler.scale(loss).backward()
        scaler.unscale_(opt)        # optional (gradient clipping)
        scaler.step(opt)            # skipped when the scaler says so
        scaler.update()             # ends the step of an active emulate

    Within ``ampsim.torch.emulate`` the scaler is attached to the emulation:
    ``underflow`` and ``adaptive`` read the flushed counts of this step's
    gradient roundings, and metrics.csv gets loss_scale and skipped.
    """

    def __init__(self, spec="torch", init_scale=None, growth_factor=None, backoff_factor=None,
                 growth_interval=None, enabled=True):
        if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
            # torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)
            spec, init_scale, growth_factor, backoff_factor, growth_interval, enabled = (
                "torch", spec, init_scale, growth_factor, backoff_factor,
                enabled if growth_interval is None else growth_interval)
        elif spec in ("cuda", "cpu"):
            spec = "torch"                 # torch.amp.GradScaler(device, ...)
        elif not isinstance(spec, str):
            raise TypeError("GradScaler: spec must be a SPEC string, a device or init_scale, not %s"
                            % type(spec).__name__)
        keys = []
        for arg, key in _TORCH_KEYS:
            v = locals()[arg]
            if v is not None:
                keys.append("%s=%s" % (key, repr(float(v)) if key != "interval" else int(v)))
        if keys:
            spec = spec + (":" if ":" not in spec else ",") + ",".join(keys)
        self._enabled = bool(enabled)
        self._sc = LossScaler(spec)
        self.spec = self._sc.spec
        self._emu = None
        self._used_scale = None
        self._used_held = None       # the same scale as the framework holds it (a double for apex, deepspeed)
        self._unscaled = False
        #: id(gradient) -> (gradient, its version, sum of squares) of this
        #: step's unscaled gradients (the emulation's gradient norm reads it)
        self.sumsq = {}
        self._found_inf = False
        self._updated = False
        self._skipped = False
        self._events = []

    # ---- the torch.cuda.amp.GradScaler API ------------------------------------------------
    def is_enabled(self):
        return self._enabled

    def _key(self, key, cast):
        for kv in self.spec.partition(":")[2].split(","):
            k, _, v = kv.partition("=")
            if k == key:
                return cast(v)
        raise AttributeError("GradScaler(%r) has no %s" % (self.spec, key))

    def get_growth_factor(self):
        """The growth factor of the rule (torch, megatron, underflow)."""
        return self._key("growth", float)

    def get_backoff_factor(self):
        """The backoff factor of the rule (torch, megatron, underflow)."""
        return self._key("backoff", float)

    def get_growth_interval(self):
        """Finite steps between growths (torch, megatron, keras, underflow)."""
        return self._key("interval", int)

    def get_scale(self):
        """The current loss scale (float): the float32 that multiplies the loss,
        as torch.cuda.amp.GradScaler.get_scale returns it."""
        return self._sc.scale_f32 if self._enabled else 1.0

    def _attach(self):
        from ._checks import current
        emu = current()
        if emu is not None and emu.scaler is not self:
            emu.attach_scaler(self)

    def scale(self, outputs):
        """outputs times the loss scale (float32 multiply; tensors, lists or tuples)."""
        if not self._enabled:
            return outputs
        self._attach()
        s = self.get_scale()
        if self._used_scale is None:
            self._used_scale = s
            self._used_held = self._sc.scale
        if self._emu is not None:
            first = outputs if isinstance(outputs, torch.Tensor) else None
            if first is not None and self._emu._loss is None:
                with _quiet(self._emu):         # (reads, not the model's ops)
                    if first.numel() == 1:
                        self._emu._loss = float(first.detach())
        return _apply(outputs, lambda t: t * s)

    def unscale_(self, optimizer):
        """Divide the gradients of optimizer's parameters by the scale, in place
        (multiply by float32(1/scale), as the frameworks do); note non-finite ones."""
        if not self._enabled or self._unscaled:
            return
        s = self._used_scale if self._used_scale is not None else self.get_scale()
        inv = LossScaler.inv(s)
        found = False
        with torch.no_grad(), _quiet(self._emu):
            gs = list(_grads(optimizer))
            # one pass over each (one foreign call for all): the product, the
            # inf check and the tensor's share of the gradient norm, kept for
            # the step's metrics row
            for g, (sq, nf) in zip(gs, _rt.unscale_sumsq_many(gs, inv)):
                found = found or nf > 0
                self.sumsq[id(g)] = (g, g._version, sq)
        self._found_inf = self._found_inf or found
        self._unscaled = True

    def _decide(self):
        if self._updated:
            return self._skipped
        stats, is_act = None, None
        emu = self._emu
        if emu is not None and self._sc.needs_stats:
            gs = emu.grad_stats_ordered()
            stats = {n: st for n, (role, fmt, st) in gs}
            is_act = [role == "act_grad" for n, (role, fmt, st) in gs]
        self._skipped = self._sc.update(self._found_inf, stats, is_act=is_act)
        res = self._sc.last_result or {}
        for e in res.get("events", []):
            name = ""
            if e["tensor"] >= 0 and stats is not None and e["tensor"] < len(stats):
                name = list(stats)[e["tensor"]]
            self._events.append((e["event"], name, e["detail"]))
        self._updated = True
        return self._skipped

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (if not done), let the state machine decide, and run
        optimizer.step() unless the step is skipped. Returns its result or None."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self._attach()
        emu = self._emu
        if emu is not None and emu._narrow_storage() and not hasattr(optimizer, "_unwrap"):
            raise emu._unwrapped_optimizer("GradScaler.step got")
        self.unscale_(optimizer)
        if self._decide():
            if self._emu is not None:
                self._emu._step_skipped = 1
            return None
        with _quiet(self._emu):     # the update is not the model's: no op of it is emulated
            return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """End the step: the state machine's update (if step() did not run it)
        and, inside emulate, the step's logs."""
        if not self._enabled:
            return
        if new_scale is not None:
            raise ValueError("GradScaler.update(new_scale): ampsim's scalers set the scale by their rule")
        if self._used_scale is not None or self._unscaled:
            self._decide()
        emu = self._emu
        if emu is not None and emu._live():
            emu._step_skipped = int(self._skipped)
            emu.step()
        self._used_scale = self._used_held = None
        self._unscaled = self._found_inf = self._updated = self._skipped = False
        self.sumsq = {}

    def _take_events(self):
        ev, self._events = self._events, []
        return ev

    def state_dict(self):
        """The state machine's state (``ampsim.LossScaler.state_dict``)."""
        return self._sc.state_dict()

    def load_state_dict(self, state):
        self._sc.load_state_dict(state)

    def __repr__(self):
        return "GradScaler(%r, scale=%g)" % (self.spec, self.get_scale())


def _quiet(emu):
    """The emulation's quiet context (its mode off the stack), or a no-op."""
    return emu._quiet() if emu is not None and emu._entered else contextlib.nullcontext()


def _apply(x, fn):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_apply(v, fn) for v in x)
    raise TypeError("GradScaler.scale: expected a tensor or a list/tuple of tensors, got %s" % type(x).__name__)


def _grads(optimizer):
    opt = getattr(optimizer, "opt", optimizer)
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                yield p.grad
