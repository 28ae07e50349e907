"""ampsim.torch.emulate: a PyTorch model's forward and backward under an ampsim
precision policy, with per-tensor cast statistics.

How it works. A TorchFunctionMode sees every torch function the model calls
(module forwards call torch.nn.functional; functional code inside forward,
such as ``q @ k.transpose(-2, -1)`` or ``F.softmax``, is seen the same way).
Values stay float32 tensors that hold values of their format; each output
carries its format as an attribute. Rounding is done by the C kernel:
- a GEMM-like op (_ops.py) runs as one autograd Function: operands rounded
  into the policy's operand format, the op itself in FP32 (bias included),
  one rounding of the output into the activation format; its backward rounds
  the incoming gradient into the activation-gradient format (and into the
  gradient operand format), computes the operand gradients in FP32 and rounds
  them into the gradient format;
- weights (nn.Parameter) reach a GEMM through a cast Function: rounded once
  per step into the weight format (the cast cache); its backward rounds the
  weight gradient into the weight-gradient format;
- other emulated ops round their output once (and its gradient in backward);
- gradients keep their format: the contributions of a low-precision tensor's
  uses are added in the gradient format, in autograd's order (_grad.py);
- under a torch_cpu policy (bf16-amp-cpu) with kernels="torch" the ops run on
  real bfloat16 tensors, forward and backward, as under CPU autocast (_lowp.py).
Global module forward hooks (_scope.py) decide which ops are in scope and
give the names: a leaf module's first op is named by the module path
(``fc1``), other ops by the module path, the op name and a count within that
call (``relu1``, ``h.0.attn.matmul2``); tensors are
``<site>.out``, ``<site>.out.grad``, ``<site>.input`` (an operand cast),
``<module>.weight``, ``<module>.weight.grad``, as the C emulator names them.
"""
import torch

from . import _castall, _coverage, _fastmode, _grad, _malloc, _mha, _rt, _seq
from . import _scope
from . import _whatif
from ._checks import _ACTIVE, _Checks, _check_out, _models_of, _torch_scaler_guard, needs_loss_scaler
from ._functions import _CastFn
from ._handlers import _FMT, _Mode, _OpHandlers, _fmt_of, _join
from ._policy import Policy
from ._rt import EmulationError
from .._scaler import format_scale

try:        # the function-mode stack (torch.overrides' helpers; absent: the mode stays on)
    from torch.overrides import _get_current_function_mode as _cur_mode
    from torch.overrides import _pop_mode, _push_mode
    from torch._C import _len_torch_function_stack as _stack_len
except ImportError:
    _cur_mode = _pop_mode = _push_mode = _stack_len = None


def _every(v, what, who):
    """A logging period: an integer >= 0 (0: never)."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError("%s: %s must be an integer >= 0 (0: never), not %r" % (who, what, v))
    v = v.__index__()
    if v < 0:
        raise ValueError("%s: %s must be an integer >= 0 (0: never), not %d" % (who, what, v))
    return v


def _active_quiet():
    """The innermost active emulation's quiet context (None: none is active)."""
    return _ACTIVE[-1]._quiet() if _ACTIVE else None


_fastmode.quiet = _active_quiet


def _checkpoint_run():
    """A checkpointed block run directly (_fastmode): noted once per run."""
    if _ACTIVE:
        e = _ACTIVE[-1]
        if not e._ckpt_noted:
            e._ckpt_noted = True
            e._note_event("checkpoint_direct", e._where(), "activation checkpointing off inside emulate: the "
                          "block runs once with its graph (same values, more memory)")


_fastmode.on_checkpoint = _checkpoint_run


def _seq_unit(seq, x, orig):
    """nn.Sequential.forward while an emulation is active (_fastmode): the
    innermost one's unit (_seq.py), else Sequential's own forward."""
    if _ACTIVE:
        return _seq.run(_ACTIVE[-1], seq, x, orig)
    return orig(seq, x)


_fastmode.seq_unit = _seq_unit


def _mha_unit(mod, args, kwargs, orig):
    """nn.MultiheadAttention.forward while an emulation is active (_fastmode):
    the innermost one's module_run (_mha.py), else the module's own forward."""
    if _ACTIVE:
        return _mha.module_run(_ACTIVE[-1], mod, args, kwargs, orig)
    return orig(mod, *args, **kwargs)


_fastmode.mha_unit = _mha_unit


class emulate(_OpHandlers, _Checks):
    """Run a PyTorch model's forward and backward under an ampsim precision policy.

    Parameters
    ----------
    model : torch.nn.Module, or a list or dict of them
        A float32 model on the CPU. It is not modified: hooks are added on
        entry and removed on exit, parameters stay the same objects. Only
        the model's forward, the ops applied to its outputs (the loss) and
        their backward are emulated: another module called inside the block
        (a teacher, an EMA copy) runs untouched. Several models
        (``[student, teacher]`` or ``{"student": s, "teacher": t}``) are all
        emulated; their names get the index or key as a prefix
        (``0.fc1``, ``student.fc1``).
    policy : str, dict or path
        A preset of ``ampsim train --precision`` (fp32, fp16-amp, bf16-amp,
        bf16-amp-cpu, fp16-pure, bf16-pure, fp8-e4m3, fp8-hybrid), a policy
        JSON file or a dict in the same schema. Pure policies need
        ``emu.optimizer(opt)``: an optimizer step that bypasses it raises.
    out : str, optional
        Run directory written through ampsim.RunLog (config.json, metrics.csv,
        tensors.csv, hist.csv, events.csv, summary.json): ``ampsim report OUT``.
    log_every, hist_every : int
        Steps whose tensors (resp. histograms) are logged (0: never).
    fp8 : str, optional
        FP8 scaling strategy for policies with fp8_scaling (default delayed).
    what_if : bool, str or list of str, optional
        Shadow loss scalers (``ampsim train --what-if``): True for every loss
        scaler, or SPECs ("torch;apex" or ["torch", "static:1024"]). Each
        step they rescale the unscaled weight gradients by their own scale,
        round them into the gradient format and follow their own rule;
        whatif.csv in ``out`` (required) gets a row per shadow on logged
        steps. The run itself is unchanged.
    what_if_format : str, optional
        The format the shadows round into (default: the policy's weight
        gradient format), e.g. "fp16" on an fp32 run.
    scaler : GradScaler, optional
        Logged (loss_scale, skipped); its update() ends the step. A GradScaler
        used inside the context is attached on its first call anyway.
    seed : int
        Key of stochastic rounding (as ``ampsim train --seed``).
    config : dict, optional
        Extra keys for config.json.
    kernels : str
        "torch" (default): the FP32 arithmetic of the ops is PyTorch's own
        (under bf16-amp-cpu: PyTorch's bfloat16 CPU kernels).
        "ampsim": the C emulator's kernels wherever a call has a form they
        cover: the softmax cross-entropy, a linear layer's bias gradient,
        layer norm over the last axis, tanh GELU, softmax over the last axis
        and products of two activations (attention), so that a model written
        like ampsim's own gives ``ampsim train``'s bits (docs/torch.md).
        Under bf16-amp-cpu these are its torch_cpu kernels (GEMM-like
        products in oneDNN's pair order, PyTorch's CPU loss gradient, softmax
        and LayerNorm): PyTorch's CPU arithmetic, without oneDNN.
    strict : bool
        Raise EmulationError at the first torch function that is neither
        emulated nor classified (_ops.py) and at any GEMM-like op that would
        run unrounded. Either way ``out`` gets coverage.csv: each function
        called, its class, calls, output elements, GEMM multiply-adds.

    Inside ``with emulate(...) as emu:`` every forward and backward of the model
    runs as the policy says. ``emu.step(loss=..., lr=...)`` ends a training
    step (GradScaler.update() and an optimizer wrapped by ``emu.optimizer``
    do it themselves); without any of them a forward that follows a backward
    and an optimizer update (the parameters changed) starts the next step.
    """

    _WHO = "emulate"

    def __init__(self, model, policy="fp32", *, out=None, log_every=10, hist_every=50, fp8=None,
                 what_if=None, what_if_format=None, scaler=None, seed=1, config=None, kernels="torch",
                 strict=False):
        models = None if model is None and self._WHO != "emulate" else _models_of(model)
        if kernels not in ("torch", "ampsim"):
            raise ValueError("emulate: kernels must be 'torch' or 'ampsim', not %r" % (kernels,))
        self.kernels = kernels
        self.strict = bool(strict)
        self._cov = _coverage.Coverage()
        self.model = models[0][1] if models and len(models) == 1 else model
        self.policy = policy if isinstance(policy, Policy) else Policy(policy)
        pol = self.policy
        # PyTorch's CPU autocast lists, where they differ from CUDA's (_ops.cpu_fp32)
        self._cpu_lists = pol.torch_cpu and not pol.is_fp32()
        if pol.accumulator != "fp32":
            raise EmulationError("emulate: policy %s accumulates GEMMs in %s: ampsim.torch emulates FP32 "
                                 "accumulation only (use ampsim train for narrow accumulators)"
                                 % (pol.name, pol.accumulator))
        if "nvfp4" in pol.json:
            raise EmulationError("emulate: policy %s has NVFP4 GEMM operands: ampsim.torch does not emulate "
                                 "them (use ampsim train --precision nvfp4)" % pol.name)
        self._whatif = None
        specs = _whatif.specs_of(what_if)
        if specs is not None:
            if out is None:
                raise ValueError("emulate: what_if writes whatif.csv into the run directory: give out=DIR")
            if what_if_format is not None:
                _rt.fmt_struct(what_if_format)
            self._whatif = _whatif.WhatIf(specs, what_if_format)
        self.out = out
        self.log_every = _every(log_every, "log_every", self._WHO)
        self.hist_every = _every(hist_every, "hist_every", self._WHO)
        self.seed = int(seed)
        self.scaler = None
        self._fp8_spec = fp8
        self._fp8 = None
        if fp8 is not None and not pol.fp8_scaling:
            raise ValueError("%s: fp8=%r: policy %s has no per-tensor FP8 scaling (fp8 sets the strategy of "
                             "fp8-hybrid and other policies with fp8_scaling)" % (self._WHO, fp8, pol.name))
        if pol.fp8_scaling:
            from ._fp8 import Fp8State
            if fp8 is not None and not isinstance(fp8, str):
                raise TypeError("%s: fp8 must be a SPEC string, not %s" % (self._WHO, type(fp8).__name__))
            self._fp8 = Fp8State(fp8 or "delayed", pol)       # a bad SPEC fails here
        if out is not None:
            _check_out(out, self._WHO)
        self._config = dict(config or {})
        self._mode = None
        self._quiet_depth = 0
        self.step_index = 0
        self._ids = {}
        self._stats = {}
        self._stack = []
        self._root_inputs = set()
        self._casts = {}
        self._cast_seen = {}        # _castall.py: this step's casts, the next step's plan
        self._cast_plan = None
        self._attn_rows = {}        # _attn.py: coverage rows of an attention call, by its key
        self._mha_rows = {}         # _mha.module_run: the same for a module call (its transposes too)
        self._gemm_plans = {}       # _plan.py: (site, function) -> GemmPlan
        self._seq_rows = {}         # _seq.py: the same for an MLP Sequential
        self._bwd_done = False
        self._pver = None
        self._events_seen = set()
        self._nf = None
        self._nf_first = None
        self._loss = None
        self._log = None
        self._entered = False
        self._closed = False
        self._summary = {"skipped": 0, "nonfinite_steps": 0, "vanished": 0, "last": float("nan"),
                         "min": float("inf")}
        self._step_vanished = 0
        self._step_skipped = 0
        self._optimizers = []
        self._param_names = {}
        self._param_sites = {}
        self._params = []
        self._trained = {}      # id(parameter) -> its version after the last emu.optimizer step
        self._root_inputs = set()
        self._root_refs = []
        self._scope = _scope.Scope(self, models)
        if scaler is not None:
            self.attach_scaler(scaler)

    def _kind_name(self):
        return "ampsim.torch.%s" % self._WHO

    # ---- context ---------------------------------------------------------------------
    def __enter__(self):
        if self._entered:
            raise RuntimeError("%s: already entered" % self._WHO)
        if self._closed:
            raise RuntimeError("%s: the run directory %s is complete; use a new emulate for more steps"
                               % (self._WHO, self.out))
        self._check_entry()
        self._activate()
        self._begin_step()
        return self

    def _live(self):
        """True while steps may end (GradScaler.update, emu.optimizer)."""
        return self._entered

    def _params_changed(self):
        """The parameters changed since the step's first forward."""
        pv = self._pver
        return pv is not None and self._versions(self._params[:len(pv)]) != pv

    def _versions(self, params):
        """The parameters' version counters, read with the mode off the stack
        (each attribute read would otherwise be a dispatched torch call)."""
        with self._quiet():
            return tuple(p._version for p in params)

    def _activate(self, guard=True):
        """Hooks and the function mode on; this emulation is the active one."""
        self._scope.install()
        self._stack = []
        _malloc.keep()
        _fastmode.install()
        try:
            self._mode = _Mode(self)
            self._mode.__enter__()
        except BaseException:
            _fastmode.uninstall()
            self._scope.remove()
            self._mode = None
            raise
        _ACTIVE.append(self)
        self._entered = True
        self._guarded = guard and needs_loss_scaler(self.policy)
        if self._guarded:
            _torch_scaler_guard(True)

    def __exit__(self, et, ev, tb):
        self._deactivate(et, ev, tb)
        self._casts.clear()
        for o in self._optimizers:
            o._unwrap()
        self._optimizers = []
        if et is None:
            self._check_updates()
            self.close()
        else:
            if self._whatif is not None:
                self._whatif.abort()
            if self._log is not None:
                self._log.abort()
            self._log = None
        return False

    def _deactivate(self, et=None, ev=None, tb=None):
        try:
            if self._mode is not None:
                self._mode.__exit__(et, ev, tb)
        finally:
            if self._mode is not None:
                _fastmode.uninstall()
            self._mode = None
            self._scope.remove()
            if self in _ACTIVE:
                _ACTIVE.remove(self)
                if self._guarded:
                    _torch_scaler_guard(False)
            self._entered = False
            self._stack = []
            self._root_inputs = set()
            self._root_refs = []

    def _on_root_call(self, args):
        """A model's root module is called (from the scope's hooks)."""
        self._check_updates()
        # a forward after a backward and an optimizer update (the parameters
        # changed) starts the next step; micro-batches of gradient
        # accumulation stay in one step
        if self._bwd_done and self._params_changed():
            self.step()
        if self._pver is None:
            self._pver = self._versions(self._params)
        self._root_inputs = {id(a) for a in args if isinstance(a, torch.Tensor)}
        self._root_refs = [a for a in args if isinstance(a, torch.Tensor)]

    def _on_root_return(self):
        self._root_inputs = set()
        self._root_refs = []

    class _QuietCtx:
        """The emulation's own torch calls (roundings, backward rules, the
        gradient norm): not emulated, and the mode is taken off the stack
        while they run, so they do not pay its dispatch."""
        __slots__ = ("emu", "popped")

        def __init__(self, emu):
            self.emu = emu
            self.popped = None

        def __enter__(self):
            emu = self.emu
            emu._quiet_depth += 1
            self.popped = None
            # (inside the mode's handlers the stack is empty: nothing to take off)
            if _cur_mode is not None and emu._mode is not None and _stack_len() and _cur_mode() is emu._mode:
                self.popped = _pop_mode()

        def __exit__(self, *a):
            if self.popped is not None:
                _push_mode(self.popped)
                self.popped = None
            self.emu._quiet_depth -= 1

    def _quiet(self):
        return emulate._QuietCtx(self)

    # ---- names and statistics ------------------------------------------------------------
    def _site(self, op):
        """The name of the op site being called now (module path, op, count)."""
        if self._stack:
            fr = self._stack[-1]
            if fr.rename is not None:          # a decomposed module (_mha.py, _rnn.py) names its ops
                r = fr.rename(op)
                if r is not None:
                    return _join(fr.path, r)
            if fr.leaf and not fr.used and fr.path:
                fr.used = True
                name = fr.path
            else:
                fr.used = True
                k = fr.counts.get(op, 0) + 1
                fr.counts[op] = k
                name = _join(fr.path, "%s%d" % (op, k))
        else:
            fr = self._outside
            k = fr.get(op, 0) + 1
            fr[op] = k
            name = "%s%d" % (op, k)
        # a site called again in the same step (micro-batches, a shared module)
        # keeps its name: its statistics add up, as the C emulator's do
        return name

    def _tid(self, name):
        """Registry id of a tensor name (registration order; keys SR draws)."""
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self._ids)
        return i

    _needs_stats = None         # (loss scaler, whether its strategy reads statistics): constant per scaler

    def _stats_due(self, role=None):
        if self._do_t or self._do_h:
            return True
        sc = self.scaler
        if sc is None or role not in ("act_grad", "weight_grad"):
            return False
        c = self._needs_stats
        if c is None or c[0] is not sc._sc:
            c = self._needs_stats = (sc._sc, bool(sc._sc.needs_stats))
        return c[1]

    def _round(self, x, fmt, name, role, *, saturate=False, fp8_role=None, mode=None, stream_or=0,
               check=True, inplace=False):
        """x rounded into fmt (a new float32 tensor; with inplace, x itself
        where it can be: a fresh tensor only the caller holds); statistics
        under name on logged steps; the first non-finite result of the step
        is noted (check False: not; a list: its count is appended instead)."""
        if x.dtype != torch.float32:
            raise EmulationError("ampsim.torch: %s is %s: emulate runs float32 tensors" % (name or "a tensor", x.dtype))
        if x.is_sparse:         # (a sparse gradient: its stored values rounded, counted and logged)
            x = x.coalesce()
            v = self._round(x._values(), fmt, name, role, saturate=saturate, fp8_role=fp8_role, mode=mode,
                            stream_or=stream_or, check=check)
            return torch.sparse_coo_tensor(x._indices(), v, x.shape)
        pol = self.policy
        due = name is not None and self._stats_due(role)
        if fmt == "fp32" and not due and not saturate:
            return x.detach().clone() if x.requires_grad else x
        if not due and (fp8_role is None or not pol.fp8_scaling) and (mode or pol.rounding) != "sr":
            # (the common case: nothing logged, no draws, no FP8 scaling)
            y, bad = _rt.rounder(fmt, mode or pol.rounding, saturate, pol.sr_bits)(x, inplace)
            if name is not None:
                self._note_nonfinite(name, role, bad, check)
            return y
        if fp8_role is not None and pol.fp8_scaling and _rt.fmt_struct(fmt).bits <= 8 and name is not None:
            y, st, nf = self._fp8_round(x, fmt, name, fp8_role, due)
        else:
            mode = mode or pol.rounding
            seed = stream = 0
            if mode == "sr" and name is not None:
                seed, stream = _rt.step_seed(self.seed, self.step_index), self._tid(name) | stream_or
            y, st, nf = _rt.round_count(x, fmt, mode, saturate=saturate, sr_bits=pol.sr_bits, seed=seed,
                                        stream=stream, stats=due, inplace=inplace)
        if name is not None:
            if st is not None:
                prev = self._stats.get(name)
                self._stats[name] = (role, fmt, st if prev is None else prev[2] + st)
            self._note_nonfinite(name, role, nf, check)
        return y

    def _note_nonfinite(self, name, role, bad, check):
        """A named rounding's count of non-finite results: the step's first
        such rounding is noted (check False: not; a list: the count is
        appended to it instead)."""
        if isinstance(check, list):
            check.append(bad)
        elif bad and check and self._nf is None:
            self._nf = (name, "backward" if role in ("act_grad", "weight_grad") else "forward", bad)

    def _fp8_round(self, x, fmt, name, role, due):
        return self._fp8.quantize(x, fmt, self._tid(name), role, due)

    def _operand(self, t, site, i, act_only=False):
        """An activation operand of a GEMM in the forward operand format (in
        the activation format for a product of activations under FP8 scaling)."""
        pol = self.policy
        if t.dtype != torch.float32:
            raise EmulationError("ampsim.torch: operand %d of %s is %s: emulate runs float32 tensors" % (i, site, t.dtype))
        fp8 = pol.fp8_scaling and not act_only
        fmt = pol.act if pol.fp8_scaling and act_only else pol.fwd_in
        root = id(t) in self._root_inputs
        # the model input is always a tensor of the run ("input"), as in the C models
        if not (root and self._stats_due()):
            if _fmt_of(t) == fmt and not fp8:
                return t
            if fmt == "fp32" and not self._stats_due():
                return t
        if root:
            name = "input"
        else:
            name = site + (".input" if i == 0 else ".input%d" % (i + 1))
        if not fp8 and fmt != pol.fwd_in:
            return self._round(t, fmt, name, "act")
        return self._round(t, fmt, name, "act", saturate=pol.saturate, fp8_role="act")

    def _cast_use(self, t, name, is_bias):
        """A cast of t (a parameter or a view of one) into the weight (or bias)
        format for one use, outside the step's cast cache, as autocast casts
        what its cache does not keep (all but the parameters themselves): its
        backward rounds this use's share of the gradient into the weight-
        gradient format and hands it to t, so the shares of several uses add
        up in FP32 on the parameter's gradient; its statistics count each use."""
        pol = self.policy
        fmt = pol.bias if is_bias else pol.weight
        self._register_weight(name)
        w = _CastFn.apply(t, self, name, fmt, pol.weight_grad, self._weight_saturates(fmt))
        setattr(w, _FMT, fmt)
        return w

    def _weight_saturates(self, fmt):
        """Whether a weight cast into fmt saturates (an 8-bit format under a saturating policy)."""
        return self.policy.saturate and _rt.fmt_struct(fmt).bits <= 8

    def _cast_weight(self, p, site, is_bias):
        """The per-step cast of a parameter into the weight (or bias) format
        (on a step without statistics, the first one casts the previous
        step's parameters at once: _castall.py)."""
        pol = self.policy
        fmt = pol.bias if is_bias else pol.weight
        key = (id(p), fmt)
        hit = self._casts.get(key)
        if hit is None and self._cast_plan is not None:
            _castall.run(self)
            hit = self._casts.get(key)
        # (a copy made under no_grad serves no later forward that needs the
        # weight's gradient: that one casts again)
        if hit is not None and hit[0] == p._version and (
                hit[1].requires_grad or not (p.requires_grad and torch.is_grad_enabled())):
            if len(hit) > 2:
                _castall.asked(self, hit[2])
                self._cast_seen[key] = hit[2].item
            return _grad.use(hit[1])
        name = self._param_names.get(id(p)) or _join(site, "bias" if is_bias else "weight")
        if hit is None and not self._stats_due() and fmt == "fp32" and pol.weight_grad == "fp32":
            w = p
        else:
            # the cached low-precision copy sums its uses' gradients in format
            w = _grad.source(self._cast_use(p, name, is_bias), pol.weight_grad)
            self._cast_seen[key] = (p, fmt, name, self._weight_saturates(fmt))
        self._casts[key] = (p._version, w)
        return _grad.use(w)

    def _grad_fmt(self, fmt):
        """The gradient format of a tensor held in fmt."""
        pol = self.policy
        return pol.weight_grad if fmt == pol.weight and fmt != pol.act else pol.act_grad

    def _register_weight(self, name):
        if name in self._ids:
            return
        self._tid(name)
        if self.policy.has_master:
            self._tid(name + ".master")
        self._tid(name + ".grad")

    def _note_event(self, event, tensor, detail):
        key = (event, tensor, detail)
        if key in self._events_seen:
            return
        self._events_seen.add(key)
        self._pending_events.append((event, tensor, detail))

    def _where(self):
        return self._stack[-1].path if self._stack and self._stack[-1].path else "(model)" if self._stack else "(outside the model)"

    # ---- steps ------------------------------------------------------------------------------
    def _begin_step(self):
        s = self.step_index
        logging = self.out is not None
        self._do_t = self.log_every > 0 and s % self.log_every == 0 and logging
        self._do_h = self.hist_every > 0 and s % self.hist_every == 0 and logging
        if not logging and self._collect:
            self._do_t = self._collect
        self._stats = {}
        self._casts = {}
        self._cast_plan = _castall.plan_of(self._cast_seen)
        self._cast_seen = {}
        self._outside = {}
        self._nf = None
        self._loss = None
        self._bwd_done = False
        self._bwd_grad_norm = None
        self._pver = None
        self._pending_events = []
        self._step_vanished = 0
        self._step_skipped = 0
        if self._fp8 is not None:
            self._fp8.begin_step()

    _collect = False

    def collect_stats(self, on=True):
        """Gather statistics on every step even without a run directory
        (``emu.stats`` then holds the last step's)."""
        self._collect = bool(on)
        if self._entered and on and self.out is None:
            self._do_t = True

    @property
    def stats(self):
        """The statistics of the current step so far: ``{name: (role, format, Stats)}``."""
        return dict(self._stats)

    def step(self, loss=None, lr=None, *, skipped=None, loss_scale=None, grad_norm=None):
        """End the current training step: its metrics row, tensor rows (on
        logged steps) and events are written, and the next step begins.

        loss: the step's loss (default: the value ``backward()`` was called on,
        or the unscaled loss of GradScaler.scale). lr: the learning rate
        (default: the first param group of a wrapped optimizer)."""
        if loss is not None:
            self._loss = float(loss.detach()) if isinstance(loss, torch.Tensor) else float(loss)
        if lr is None and self._optimizers:
            lr = self._optimizers[0].opt.param_groups[0].get("lr")
        sc = self.scaler
        kind = sc._sc.kind if sc is not None else None
        if loss_scale is None:
            loss_scale = sc._used_held if sc is not None and sc._used_held is not None else 1.0
        if skipped is None:
            skipped = self._step_skipped
        self._check_updates()
        if not self._scaler_noted:
            self._scaler_noted = True
            if needs_loss_scaler(self.policy) and (sc is None or not sc._enabled or kind == "none"):
                self._note_event("no_loss_scaler", "", self._no_scaler_detail(sc))
        self.last_step_stats = dict(self._stats)
        self.last_nonfinite = self._nf
        s = self.step_index
        lv = self._loss if self._loss is not None else float("nan")
        sm = self._summary
        sm["skipped"] += int(bool(skipped))
        sm["vanished"] += self._step_vanished
        if self._nf is not None:
            sm["nonfinite_steps"] += 1
        sm["last"] = lv
        if lv < sm["min"]:
            sm["min"] = lv
        if self.out is not None and self._log is None:
            self._open_log()        # at the first step's end: the config knows the scaler
        if self._log is not None:
            if grad_norm is not None:
                gn = grad_norm
            elif self._bwd_grad_norm is not None and self.scaler is None:
                gn = self._bwd_grad_norm
            else:
                with self._quiet():
                    gn = self._grad_norm()
            nfc = self._nf[2] if self._nf else 0
            self._log.metrics(s, loss=lv, loss_scale=loss_scale, skipped=int(bool(skipped)), grad_norm=gn,
                              lr=float(lr) if lr is not None else 0.0, vanished=self._step_vanished,
                              nonfinite=nfc, scaler=kind)
            if self._do_t or self._do_h:
                for name, (role, fmt, st) in sorted(self._stats.items(),
                                                    key=lambda kv: self._ids.get(kv[0], 1 << 30)):
                    self._log.tensor(s, name, role, fmt, st, tensors=self._do_t, hist=self._do_h)
            if self._nf is not None:
                name, phase, cnt = self._nf
                ev = "first_nonfinite" if self._nf_first is None else "nonfinite"
                self._log.event(s, ev, name, "%s; %d values" % (phase, cnt))
            if skipped:
                self._log.event(s, "skip", "", "scale %s" % format_scale(kind or "none", loss_scale))
            if sc is not None:
                for ev, tn, det in sc._take_events():
                    self._log.event(s, ev, tn, det)
            for ev, tn, det in self._pending_events:
                self._log.event(s, ev, tn, det)
            if self._whatif is not None:
                self._whatif.step(self, self._do_t)
        if self._nf is not None and self._nf_first is None:
            self._nf_first = (s,) + self._nf
        self.step_index += 1
        self._begin_step()

    _scaler_noted = False
    _guarded = False
    _ckpt_noted = False
    _bwd_grad_norm = None

    def _grad_norm(self):
        sq = 0.0
        inv = 1.0
        sc = self.scaler
        kept = {}
        if sc is not None and sc._used_scale and not sc._unscaled:
            inv = 1.0 / sc._used_scale
        elif sc is not None:
            kept = sc.sumsq        # (shares the unscaling pass summed, unless changed since)
        for p in self._params:
            g = p.grad
            if g is not None:
                k = kept.get(id(g))
                sq += k[2] if k is not None and k[0] is g and k[1] == g._version else _rt.sumsq_unscaled(g, inv)
        return sq ** 0.5

    # ---- scaler and optimizer ---------------------------------------------------------------
    def attach_scaler(self, scaler):
        """Log this GradScaler's scale and skips; its update() ends the step."""
        self.scaler = scaler
        scaler._emu = self

    def grad_stats(self):
        """``{name: (role, format, Stats)}`` of this step's gradient tensors."""
        return dict(self.grad_stats_ordered())

    def grad_stats_ordered(self):
        """[(name, (role, format, Stats))] of this step's gradient tensors, in
        registration order (the C emulator's tensor order)."""
        items = [(n, v) for n, v in self._stats.items() if v[0] in ("act_grad", "weight_grad")]
        items.sort(key=lambda kv: self._ids.get(kv[0], 1 << 30))
        return items

    def optimizer(self, opt):
        """Wrap a torch.optim optimizer: its step() rounds every update into the
        weight format when the policy keeps weights in a narrow format (pure
        policies; the policy's update mode: round, sr or kahan), counts
        vanished updates, logs the updates' statistics and ends the step."""
        from ._optim import EmulatedOptimizer
        w = EmulatedOptimizer(self, opt)
        self._optimizers.append(w)
        return w

    # ---- run directory ------------------------------------------------------------------------
    def _open_log(self):
        from ._runlog import open_runlog
        cfg = {"command": "train", "model": self._model_name(), "data": "user",
               "precision": self.policy.name, "policy": self.policy.json,
               "scaler": self.scaler.spec if self.scaler is not None else "none",
               "log_every": self.log_every, "hist_every": self.hist_every, "seed": str(self.seed),
               "framework": "torch %s" % torch.__version__, "kernels": self.kernels}
        if self.policy.fp8_scaling:
            cfg["fp8_scaler"] = self._fp8_spec or "delayed"
        cfg.update(self._config)
        if self._whatif is not None:
            cfg["what_if"] = self._whatif.specs or "default"
        self._log = open_runlog(self.out, cfg)
        if self._whatif is not None:
            self._whatif.open(self.out)

    def _model_name(self):
        roots = [m for _, m in self._scope.roots if next(iter(m.parameters()), None) is not None]
        roots = roots or [m for _, m in self._scope.roots]
        return "+".join(type(m).__name__ for m in roots) or "none"

    def close(self):
        """Finish the run directory (summary.json); called on exit."""
        if self.out is None or self._closed:
            return
        self._closed = True
        if self._bwd_done or self._stats:
            self.step()
        if self._log is None:
            self._open_log()
        sm = self._summary
        last, mn = sm["last"], sm["min"]
        fin = last == last and abs(last) != float("inf")
        summary = {"steps": self.step_index, "final_loss": last if fin else 0.0, "final_loss_finite": fin,
                   "min_loss": mn if mn == mn and abs(mn) != float("inf") else 0.0,
                   "skipped_steps": sm["skipped"], "nonfinite_steps": sm["nonfinite_steps"],
                   "vanished_updates": sm["vanished"],
                   "final_scale": self.scaler._sc.scale if self.scaler is not None and self.scaler._enabled else 1.0,
                   "divergence_from_reference": None, "stopped": False,
                   "first_nonfinite": None if self._nf_first is None else
                   {"step": self._nf_first[0], "phase": self._nf_first[2], "tensor": self._nf_first[1]}}
        if self._whatif is not None:
            self._whatif.close()
        self._cov.write(self.out)
        self._log.close(**summary)
        self._log = None

