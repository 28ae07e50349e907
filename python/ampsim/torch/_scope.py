"""Which ops an emulation touches: the scope of ``emulate`` and ``autocast``.

Global module hooks (torch.nn.modules.module.register_module_forward_pre_hook
and register_module_forward_hook) see every module call made while an
emulation is active; a stack of the calls in progress says, for each torch
function the mode sees, where it runs:

- inside a module of an emulated model (or a module that such a module's
  forward calls without holding it as a submodule): emulated, and named by
  the module path;
- inside another module called at the top level of the block (a teacher, an
  EMA copy, a frozen feature extractor): passed through untouched, unnamed,
  even when it reads the model's outputs;
- outside every module: emulated when an input comes from an emulated model
  (its outputs, its parameters, or a tensor such an op made: the loss and
  what the loop does with it), passed through otherwise.

``autocast`` (models=None) has no foreign modules: every op of the block is
in scope, and each module called at the top level becomes a root whose
submodules are named by their paths (the first root with parameters keeps
bare names, later ones are prefixed by their class name).

Also here: the checks that the block is not mixed with another emulation or
with torch.autocast.
"""
import functools
import itertools
import sys
import threading

import torch
from torch.nn.modules import module as _nnmod

from ._rt import FMT_ATTR, EmulationError

#: attribute of a tensor made by an emulated model or by an op on its outputs
#: (the value is the emulation's token)
TAINT_ATTR = "_ampsim_of"
_TOKENS = itertools.count(1)


class Frame:
    """One call of an in-scope module: its path, whether it is a leaf, and
    the op counts that name its ops; rename(op) -> name or None names the
    ops of a decomposed module (attention, recurrent layers: _mha.py, _rnn.py)."""
    __slots__ = ("path", "leaf", "used", "counts", "rename")

    def __init__(self, path, leaf, rename=None):
        self.path, self.leaf, self.used, self.counts, self.rename = path, leaf, False, {}, rename


def join(a, b):
    return a + "." + b if a else b


def _tensors(x, out, depth=0):
    """The tensors of a module output: tensors, lists, tuples, dicts (and
    ModelOutput-like OrderedDicts), dataclasses and objects with a .loss."""
    if depth > 4:
        return
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _tensors(v, out, depth + 1)
    elif isinstance(x, dict):
        for v in x.values():
            _tensors(v, out, depth + 1)
    elif hasattr(x, "__dataclass_fields__"):
        for k in x.__dataclass_fields__:
            _tensors(getattr(x, k, None), out, depth + 1)


def tensors_in(args, kwargs):
    """The tensors among a call's arguments (and in its list arguments)."""
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    yield b
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, torch.Tensor):
                yield a


_AC_GPU, _AC_CPU = torch.is_autocast_enabled, torch.is_autocast_cpu_enabled


def autocast_on():
    """True while torch.autocast (CUDA or CPU) is enabled on this thread."""
    return _AC_GPU() or _AC_CPU()


AUTOCAST_MSG = ("ampsim.torch: torch.autocast is enabled inside %s: the emulation already runs the ops in "
                "the policy's formats, so autocast would round them a second time. Remove torch.autocast "
                "from the code the block runs (ampsim.torch.autocast replaces it: "
                "`with ampsim.torch.autocast(device_type, dtype):`)")


class Scope:
    """The module calls of one emulation and the decision, per op, whether
    it is in scope. models: [(prefix, module)] (emulate) or None (autocast:
    every module)."""

    def __init__(self, emu, models):
        self.emu = emu
        self.fixed = models is not None
        self.token = next(_TOKENS)
        self.paths = {}          # id(module) -> (path, leaf, is_root)
        self.keep = []           # the modules of self.paths (their ids stay theirs)
        self.calls = []          # one (module, Frame or None, Python frame) per module call in progress
        self.foreign = False     # the innermost call in progress is a foreign module's
        self.roots = []          # (prefix, module) of every root
        self.thread = None
        self._handles = []
        for prefix, m in models or ():
            self.add_root(prefix, m)

    # ---- modules ----------------------------------------------------------------------------
    def add_root(self, prefix, root):
        """Name root's modules by their paths under prefix; its parameters
        become the emulation's (emu._register_params)."""
        self.roots.append((prefix, root))
        for path, m in root.named_modules(prefix=prefix):
            if id(m) in self.paths:
                continue
            leaf = next(iter(m.children()), None) is None
            self.paths[id(m)] = (path, leaf, m is root)
            self.keep.append(m)
        self.emu._register_params(prefix, root)

    def _learn(self, mod):
        """autocast: a module first called at the top level becomes a root."""
        prefix = ""
        if next(iter(mod.parameters()), None) is not None:
            if any(next(iter(r.parameters()), None) is not None for _, r in self.roots):
                base = type(mod).__name__.lower()
                taken = {p for p, _ in self.roots}
                prefix, k = base, 1
                while prefix in taken:
                    k += 1
                    prefix = "%s%d" % (base, k)
        self.add_root(prefix, mod)
        return self.paths[id(mod)]

    # ---- hooks ------------------------------------------------------------------------------
    def install(self):
        self.calls = []
        self.foreign = False
        self.thread = threading.get_ident()      # the module hooks are global: other threads are not ours
        self._handles = [_nnmod.register_module_forward_pre_hook(self._pre),
                         _nnmod.register_module_forward_hook(self._post)]

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        self.calls = []
        self.foreign = False

    def _pre(self, mod, args):
        if threading.get_ident() != self.thread:
            return
        emu = self.emu
        caller = sys._getframe(1)            # the module call's own frame (live until it returns)
        if emu._quiet_depth:
            self.calls.append((mod, None, caller))
            self.foreign = True
            return
        info = self.paths.get(id(mod))
        if info is not None and info[2] and self.calls:
            self._drop_ended()
        inside = bool(emu._stack) and not self.foreign
        if info is None:
            if inside:
                # called by the model's forward without being its submodule:
                # part of the model, its ops named under the caller
                parent = emu._stack[-1]
                fr = Frame(parent.path, False)
                fr.counts = parent.counts
                self._push(mod, fr, caller)
                return
            if self.fixed:
                self._push(mod, None, caller)
                return
            info = self._learn(mod)
        path, leaf, is_root = info
        if is_root and not inside:
            emu._on_root_call(args)
        self._push(mod, Frame(path, leaf), caller)

    def _push(self, mod, fr, caller):
        self.calls.append((mod, fr, caller))
        if fr is not None:
            self.emu._stack.append(fr)
        self.foreign = fr is None

    def _truncate(self, i):
        del self.calls[i:]
        self.emu._stack[:] = [c[1] for c in self.calls if c[1] is not None]
        self.foreign = bool(self.calls) and self.calls[-1][1] is None

    def _drop_ended(self):
        """Drop the innermost calls that ended in an exception the loop caught
        (no forward hook ran for them): their frames are no longer on the
        Python stack."""
        calls, n = self.calls, len(self.calls)
        while n:
            target, f = calls[n - 1][2], sys._getframe(1)
            while f is not None and f is not target:
                f = f.f_back
            if f is not None:
                break
            n -= 1
        if n != len(calls):
            self._truncate(n)

    def _post(self, mod, args, out):
        if threading.get_ident() != self.thread:
            return
        calls = self.calls
        if calls and calls[-1][0] is mod:
            fr = calls.pop()[1]
            if fr is not None and self.emu._stack:
                self.emu._stack.pop()
        else:
            for i in range(len(calls) - 1, -1, -1):
                if calls[i][0] is mod:
                    fr = calls[i][1]
                    self._truncate(i)
                    break
            else:
                return
        self.foreign = bool(calls) and calls[-1][1] is None
        if fr is not None and not self.emu._stack:
            self.emu._on_root_return()
            self.mark(out)

    # ---- ops --------------------------------------------------------------------------------
    def skip(self, args, kwargs):
        """True when the op must pass through untouched."""
        if _AC_GPU() or _AC_CPU():
            raise EmulationError(AUTOCAST_MSG % self.emu._kind_name())
        if self.foreign:
            self._drop_ended()
            if self.foreign:
                return True
        if self.emu._stack or not self.fixed:
            return False
        tok, params = self.token, self.emu._param_names
        for t in tensors_in(args, kwargs):
            if getattr(t, TAINT_ATTR, None) == tok or id(t) in params or hasattr(t, FMT_ATTR):
                return False
        return True

    def mark(self, out):
        """The output of a model, or of an op outside every module: emulate
        marks its tensors as coming from the model; autocast watches its
        scalars for the loss."""
        if self.fixed and isinstance(out, torch.Tensor):
            try:
                setattr(out, TAINT_ATTR, self.token)
            except (AttributeError, RuntimeError):
                pass
            return
        if out is None or isinstance(out, (bool, int, float, torch.Size, torch.dtype, torch.device)):
            return
        ts = []
        _tensors(out, ts)
        if not self.fixed:
            self._watch_loss(ts)
            return
        for t in ts:
            try:
                setattr(t, TAINT_ATTR, self.token)
            except (AttributeError, RuntimeError):
                pass

    def _watch_loss(self, ts):
        """autocast: the backward runs after the block, where the mode does
        not see Tensor.backward; the first scalar of the block whose gradient
        the backward computes is the step's loss (the one backward started
        from: its gradient comes first)."""
        for t in ts:
            if t.requires_grad and t.numel() == 1 and t.is_floating_point():
                t.register_hook(functools.partial(_loss_grad, self.emu, t.detach()))


def _loss_grad(emu, value, grad):
    emu._bwd_done = True
    if emu._loss is None:
        emu._loss = float(value)
