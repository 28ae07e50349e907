"""The checks of ampsim.torch.emulate and autocast: the model argument, the
run directory, the parameters, pure policies' optimizer, the loss scaler of
fp16 policies (and PyTorch's own GradScaler, disabled without CUDA), and
emulations that would nest. A mixin of emulate, with the module functions
it uses."""
import os
import tempfile

import torch

from . import _scope
from ._scope import join as _join
from ._rt import EmulationError

_ACTIVE = []          # emulations entered, innermost last


def current():
    """The active emulation, else the open ``autocast`` run whose block has
    ended but whose step goes on (backward and scaler outside the block), or None."""
    if _ACTIVE:
        return _ACTIVE[-1]
    from ._autocast import open_run
    return open_run()


def _models_of(model):
    """[(name prefix, module)] of emulate's model argument: one module keeps
    bare names; a list or tuple is named by index ("0.fc1", "1.fc1", as
    nn.ModuleList does) and a dict by its keys ("student.fc1")."""
    if isinstance(model, torch.nn.Module):
        return [("", model)]
    if isinstance(model, dict):
        items = list(model.items())
    elif isinstance(model, (list, tuple)):
        items = [(str(i), m) for i, m in enumerate(model)]
    else:
        raise TypeError("emulate: model must be a torch.nn.Module, or a list or dict of them, not %s"
                        % type(model).__name__)
    if not items:
        raise ValueError("emulate: no model given")
    seen = set()
    for k, m in items:
        if not isinstance(m, torch.nn.Module):
            raise TypeError("emulate: model %s must be a torch.nn.Module, not %s" % (k, type(m).__name__))
        if not isinstance(k, str) or not k or "." in k:
            raise ValueError("emulate: model name %r must be a non-empty str without '.'" % (k,))
        if id(m) in seen:
            raise ValueError("emulate: model %s is given twice" % k)
        seen.add(id(m))
    return items if len(items) > 1 else [("", items[0][1])]


def _check_out(out, who):
    """Create the run directory now and check that a file can be written in
    it, so that a bad out fails before the first step (OSError)."""
    try:
        os.makedirs(out, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ampsim-probe.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OSError(e.errno, "%s: out=%s: cannot write the run directory: %s" % (who, out, e.strerror or e)) \
            from None


def needs_loss_scaler(pol):
    """True when the policy rounds gradients into a format of fp16's range
    (5 exponent bits or fewer) without per-tensor FP8 scaling."""
    if pol.fp8_scaling:
        return False
    from .. import Format
    return any(f != "fp32" and Format(f).emax <= 15 for f in (pol.act_grad, pol.weight_grad, pol.bwd_in))


class _Checks:
    """The checks, mixed into emulate."""

    def _register_params(self, prefix, root):
        """root's parameters become the emulation's, named under prefix."""
        for n, p in root.named_parameters(prefix=prefix):
            if p.device.type != "cpu":
                raise EmulationError("%s: parameter %s is on %s: ampsim.torch emulates on the CPU "
                                     "(move the model with .cpu())" % (self._WHO, n, p.device))
            if p.dtype != torch.float32:
                raise EmulationError("%s: parameter %s is %s: the model must be float32 (the policy "
                                     "sets the formats)" % (self._WHO, n, p.dtype))
            if id(p) not in self._param_names:
                self._param_names[id(p)] = n
                self._params.append(p)
                self._trained[id(p)] = p._version
        for n, b in root.named_buffers(prefix=prefix):
            if b.device.type != "cpu":
                raise EmulationError("%s: buffer %s is on %s: ampsim.torch emulates on the CPU"
                                     % (self._WHO, n, b.device))
        # every module-local name of each parameter: a tied weight (lm_head.weight
        # is transformer.wte.weight) has one per module that holds it
        for mn, mod in root.named_modules(prefix=prefix):
            for pn, p in mod._parameters.items():
                if p is not None:
                    self._param_sites.setdefault(id(p), set()).add(_join(mn, pn))

    def _narrow_storage(self):
        pol = self.policy
        return pol.weight != "fp32" and not pol.has_master

    def _note_updates(self):
        """emu.optimizer updated the parameters: their versions are the new baseline."""
        for p in self._params:
            self._trained[id(p)] = p._version

    def _check_updates(self):
        """Under a pure policy the weights live in the narrow format and only
        emu.optimizer may update them: raise when a trained parameter changed
        outside it."""
        if not self._narrow_storage():
            return
        for p in self._params:
            if p.grad is not None and p._version != self._trained.get(id(p), p._version):
                raise self._unwrapped_optimizer("parameter %s was updated by" % self._param_names[id(p)])

    def _unwrapped_optimizer(self, what):
        pol = self.policy
        return EmulationError(
            "%s: policy %s keeps the weights in %s, but %s an optimizer that emu.optimizer did not wrap, "
            "so the weights would stay FP32. Wrap the optimizer: `opt = emu.optimizer(torch.optim.SGD("
            "model.parameters(), lr=...))` (any torch.optim optimizer; `emu` is the emulate or autocast "
            "object, `.run` of an autocast), then call opt.step() or scaler.step(opt) as before"
            % (self._WHO, pol.name, pol.weight, what))

    def _check_entry(self):
        if _ACTIVE:
            raise EmulationError(
                "%s: already inside %s: emulations do not nest (the inner one would round every op a "
                "second time). Emulate several models with one block, `emulate([student, teacher], ...)`, "
                "or leave the outer block first" % (self._WHO, _ACTIVE[-1]._kind_name()))
        if _scope.autocast_on():
            raise EmulationError(_scope.AUTOCAST_MSG % self._kind_name())

    def _no_scaler_detail(self, sc):
        pol = self.policy
        how = ("GradScaler(%r) does not scale" % sc.spec.split(":")[0]) if sc is not None and sc._enabled \
            else "a disabled GradScaler" if sc is not None else "no loss scaler"
        return ("policy %s rounds gradients into %s with %s: gradients below %s's smallest value flush to "
                "zero; use ampsim.torch.GradScaler() (torch's rule) or another loss scaler"
                % (pol.name, pol.act_grad, how, pol.act_grad))


# ---- torch's own GradScaler, disabled on a machine without CUDA ---------------------------------
_GUARD = {"depth": 0, "saved": []}


def _torch_scaler_classes():
    out = []
    for mod in (getattr(torch, "amp", None), getattr(getattr(torch, "cuda", None), "amp", None)):
        cls = getattr(mod, "GradScaler", None) if mod is not None else None
        if cls is not None and "scale" in cls.__dict__ and cls not in out:
            out.append(cls)
    return out


def _torch_scaler_guard(on):
    """While an emulation whose policy needs a loss scaler is active,
    torch's GradScaler refuses to run disabled (on the CPU it is: scale 1,
    never a skip), which would leave the fp16 gradients unscaled."""
    g = _GUARD
    if on:
        g["depth"] += 1
        if g["depth"] > 1:
            return
        for cls in _torch_scaler_classes():
            orig = cls.__dict__["scale"]

            def scale(self, outputs, _orig=orig):
                emu = current()
                if emu is not None and not self.is_enabled() and needs_loss_scaler(emu.policy):
                    raise EmulationError(
                        "%s: %s.%s is disabled here (no CUDA: scale 1, it never skips a step), so the %s "
                        "gradients of policy %s would run unscaled. Use ampsim.torch.GradScaler() in its "
                        "place: the same arguments and methods, torch's rule, on the CPU"
                        % (emu._kind_name(), type(self).__module__, type(self).__name__,
                           emu.policy.act_grad, emu.policy.name))
                return _orig(self, outputs)
            g["saved"].append((cls, orig))
            cls.scale = scale
    else:
        g["depth"] = max(0, g["depth"] - 1)
        if g["depth"] == 0:
            for cls, orig in g["saved"]:
                cls.scale = orig
            g["saved"] = []
