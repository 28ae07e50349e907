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
"""
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


def install():
    """Use _StackMode while at least one emulation is active (counted)."""
    global _users
    if not _OK:
        return
    with _lock:
        _users += 1
        if _users == 1 and _ov._TorchFunctionStackMode is _ORIG:
            _ov._TorchFunctionStackMode = _StackMode


def uninstall():
    """Undo one install(); the last one restores PyTorch's helper."""
    global _users
    if not _OK:
        return
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0 and _ov._TorchFunctionStackMode is _StackMode:
            _ov._TorchFunctionStackMode = _ORIG
