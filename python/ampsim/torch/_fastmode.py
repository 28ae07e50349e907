"""A cheaper entry into the function-mode stack, while an emulation is active.

In torch 1.13 the only mode the C++ dispatcher knows is a helper object,
torch.overrides._TorchFunctionStackMode, whose __torch_function__ pops the
innermost mode off the Python-level stack, runs it, and pushes it back. It
does so through a contextlib generator (_pop_mode_temporarily) and creates a
new helper object at each push onto an empty stack: some microseconds per
torch call, paid by every op of an emulated model.

_StackMode does the same steps with the C functions directly: the stack, the
C-level mode and the mode that runs are the same at every point, so any mode
(an emulation's or another) behaves exactly as under PyTorch's helper.
install() makes torch.overrides create _StackMode objects instead of its own
helper (torch.overrides looks the class up by name each time), uninstall()
restores it when the last active emulation ends. Where torch lacks these
internals (other versions, which dispatch into the stack in C++), both do
nothing.

While an emulation is active, install() also makes Tensor.__getitem__ and
__setitem__ visible to the mode for every index (getitem(), setitem() below), and has torch.optim.Optimizer.zero_grad
and torch.nn.Module.zero_grad run with the emulation's mode off the stack
(``quiet``, set by the emulation: a context manager, or None when none is
active). They touch only the parameters' FP32 .grad tensors, which the
emulation neither rounds nor counts (its coverage account is the model's
forward and its loss), and they make about six torch calls per parameter
between the forward and the backward, each of which would otherwise pay the
mode's dispatch. It also makes nn.Sequential.forward ask the emulation
first (seq_unit: an MLP as one unit, _seq.py; Sequential's own forward
otherwise), and so nn.MultiheadAttention.forward (mha_unit: a self-attention
call as one unit with its layout's transposes, _mha.module_run).
uninstall() puts the originals back with the helper.
"""
import functools
import threading

import torch
from torch import overrides as _ov

_C = torch._C
_ORIG = getattr(_ov, "_TorchFunctionStackMode", None)
_NEEDED = ("_pop_torch_function_stack", "_push_on_torch_function_stack", "_len_torch_function_stack",
           "_set_torch_function_mode")
_OK = _ORIG is not None and all(hasattr(_C, n) for n in _NEEDED)
_lock = threading.Lock()
_users = 0
_CHECKED = set()        # mode classes whose __torch_function__ is a normal method

if _OK:
    _pop = _C._pop_torch_function_stack
    _push = _C._push_on_torch_function_stack
    _len = _C._len_torch_function_stack
    _set = _C._set_torch_function_mode

    class _StackMode(_ORIG):
        """torch.overrides._TorchFunctionStackMode's steps without its
        context-manager and allocation overhead."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            old = _pop()
            try:
                # (_pop_mode: no mode left clears the C-level one; a mode
                # under it dispatches through this helper again)
                _set(self if _len() else None)
                if type(old) not in _CHECKED:
                    if old.__torch_function__.__self__ is type(old):
                        raise RuntimeError("TorchFunctionMode's torch_function function should be a normal "
                                           "method not a class method")
                    _CHECKED.add(type(old))
                return old.__torch_function__(func, types, args, kwargs)
            finally:
                # (_push_mode: a push onto an empty stack sets the helper)
                if not _len():
                    _set(self)
                _push(old)


#: () -> a context manager that takes the active emulation's mode off the
#: stack, or None (set by _emulate.py)
quiet = None
_ZERO_GRAD = [(torch.optim.Optimizer, torch.optim.Optimizer.zero_grad),
              (torch.nn.Module, torch.nn.Module.zero_grad)]


def _quiet_call(orig):
    def zero_grad(self, *args, **kwargs):
        q = quiet() if quiet is not None else None
        if q is None:
            return orig(self, *args, **kwargs)
        with q:
            return orig(self, *args, **kwargs)
    zero_grad.__wrapped__ = orig
    zero_grad.__doc__ = orig.__doc__
    return zero_grad


_QUIET_ZERO_GRAD = [(cls, _quiet_call(f)) for cls, f in _ZERO_GRAD]

# nn.Sequential.forward, while an emulation is active: seq_unit(seq, input,
# orig) runs it (as one unit where it can: _seq.py); set by _emulate.py
seq_unit = None
_SEQ_FORWARD = torch.nn.Sequential.forward


def _sequential_forward(self, input):
    f = seq_unit
    if f is None:
        return _SEQ_FORWARD(self, input)
    return f(self, input, _SEQ_FORWARD)


_sequential_forward.__doc__ = _SEQ_FORWARD.__doc__

# nn.MultiheadAttention.forward, while an emulation is active: mha_unit(mod,
# args, kwargs, orig) runs it (a self-attention as one unit where it can:
# _mha.module_run); set by _emulate.py
mha_unit = None
_MHA_FORWARD = torch.nn.MultiheadAttention.forward


def _mha_forward(self, *args, **kwargs):
    f = mha_unit
    if f is None:
        return _MHA_FORWARD(self, *args, **kwargs)
    return f(self, args, kwargs, _MHA_FORWARD)


functools.update_wrapper(_mha_forward, _MHA_FORWARD)        # (its name, doc and signature)
_FORWARDS = [(torch.nn.Sequential, _SEQ_FORWARD, _sequential_forward),
             (torch.nn.MultiheadAttention, _MHA_FORWARD, _mha_forward)]

# Indexing with integers, slices and Ellipsis (x[0], x[:, 1:], x[0] = v) takes
# a fast path in torch 1.13 that does not consult the function mode, so its
# result would not carry its input's format (nor a written value be rounded).
# While an emulation is active, Tensor.__getitem__ and __setitem__ are
# getitem() and setitem(), which hand such a call to the mode stack
# (torch.overrides.handle_torch_function) when a mode is on it; a mode's
# handler runs with it popped, so the call inside reaches PyTorch's own.
_has_modes = getattr(_C, "_len_torch_function_stack", None)


def _to_modes(name):
    """Tensor.<name> (a _TensorBase slot) as a function that goes through the
    mode stack when a mode is on it."""
    orig = getattr(torch._C._TensorBase, name)

    def fn(self, *args):
        if _has_modes is not None and _has_modes():
            return _ov.handle_torch_function(fn, (self,), self, *args)
        return orig(self, *args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = orig.__doc__
    return fn


getitem, setitem = _to_modes("__getitem__"), _to_modes("__setitem__")
_INDEXING = (("__getitem__", getitem), ("__setitem__", setitem))


# Activation checkpointing (torch.utils.checkpoint.checkpoint): the reentrant
# form runs the block under no_grad and again, on detached copies, inside the
# backward, where the emulation's scope no longer sees the model's tensors;
# the other form repacks the saved tensors of the emulation's own Functions.
# While an emulation is active checkpoint() runs the block directly, once,
# with its graph: the values and gradients of the model without
# checkpointing (its dropout masks drawn once, as the forward draws them),
# at the memory cost of keeping the block's activations. checkpoint() looks
# both helpers up in its module at each call, so a name imported before
# (from torch.utils.checkpoint import checkpoint) is covered too.
try:
    import torch.utils.checkpoint as _ckpt
except ImportError:         # pragma: no cover
    _ckpt = None
#: () -> None: called at each checkpointed block run directly (set by _emulate.py)
on_checkpoint = None


def _direct(function, preserve, *args, **kwargs):
    if on_checkpoint is not None:
        on_checkpoint()
    return function(*args, **kwargs)


class _DirectCheckpoint:
    """CheckpointFunction's apply, running the block directly."""
    apply = staticmethod(_direct)


_CKPT = [("CheckpointFunction", _DirectCheckpoint), ("_checkpoint_without_reentrant", _direct)]
_CKPT_ORIG = {n: getattr(_ckpt, n, None) for n, _ in _CKPT} if _ckpt is not None else {}


def install():
    """Use _StackMode and the quiet zero_grad while at least one emulation is
    active (counted)."""
    global _users
    with _lock:
        _users += 1
        if _users != 1:
            return
        if _OK and _ov._TorchFunctionStackMode is _ORIG:
            _ov._TorchFunctionStackMode = _StackMode
        for name, fn in _INDEXING:
            if _has_modes is not None and name not in torch.Tensor.__dict__:
                setattr(torch.Tensor, name, fn)
        for name, fn in _CKPT:
            if _CKPT_ORIG.get(name) is not None and getattr(_ckpt, name) is _CKPT_ORIG[name]:
                setattr(_ckpt, name, fn)
        for (cls, orig), (_, q) in zip(_ZERO_GRAD, _QUIET_ZERO_GRAD):
            if cls.__dict__.get("zero_grad") is orig:
                cls.zero_grad = q
        for cls, orig, fn in _FORWARDS:
            if cls.__dict__.get("forward") is orig:
                cls.forward = fn


def uninstall():
    """Undo one install(); the last one restores PyTorch's helper and zero_grad."""
    global _users
    with _lock:
        _users = max(0, _users - 1)
        if _users != 0:
            return
        if _OK and _ov._TorchFunctionStackMode is _StackMode:
            _ov._TorchFunctionStackMode = _ORIG
        for name, fn in _INDEXING:
            if torch.Tensor.__dict__.get(name) is fn:
                delattr(torch.Tensor, name)
        for name, fn in _CKPT:
            if _CKPT_ORIG.get(name) is not None and getattr(_ckpt, name) is fn:
                setattr(_ckpt, name, _CKPT_ORIG[name])
        for (cls, orig), (_, q) in zip(_ZERO_GRAD, _QUIET_ZERO_GRAD):
            if cls.__dict__.get("zero_grad") is q:
                cls.zero_grad = orig
        for cls, orig, fn in _FORWARDS:
            if cls.__dict__.get("forward") is fn:
                cls.forward = orig
