"""ampsim.torch.autocast: a drop-in for torch.autocast that emulates the
autocast policy of a device and dtype on the CPU.

    scaler = ampsim.torch.GradScaler()                  # was torch.cuda.amp.GradScaler()
    for x, y in batches:
        opt.zero_grad()
        with ampsim.torch.autocast(device_type="cuda", dtype=torch.float16):   # was torch.autocast
            loss = model(x, labels=y).loss
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

A training loop enters the block once per step and runs the backward and
the optimizer after it, so the emulation outlives the block: each
``autocast(...)`` with the same settings joins one run (one run directory),
whose ops keep rounding their gradients in the backward that follows the
block. A step ends at GradScaler.update(), at the step of an optimizer
wrapped by ``run.optimizer``, or when a block starts after the parameters
changed. The run is closed (summary.json written) by ``close()``, by an
autocast with other settings, or when the interpreter exits.
"""
import atexit
import functools
import json

import torch

from . import _checks, _emulate
from ._rt import EmulationError

#: (device_type, dtype) -> the ampsim preset with autocast's op lists
POLICIES = {("cuda", torch.float16): "fp16-amp", ("cuda", torch.bfloat16): "bf16-amp",
            ("cpu", torch.bfloat16): "bf16-amp-cpu"}

_OPEN = {"run": None, "key": None}


def open_run():
    """The open autocast run (None when there is none)."""
    r = _OPEN["run"]
    return r if r is not None and not r._closed else None


class _Run(_emulate.emulate):
    """The emulation behind autocast blocks: every op of a block in scope,
    modules named through the global hooks, steps across blocks."""
    _WHO = "autocast"

    def __init__(self, policy, **kw):
        super().__init__(None, policy, **kw)
        self._started = False
        self._held_guard = False
        self._armed = None          # the hooks of _arm_grad_norm, until the backward has run

    def _live(self):
        return self._started and not self._closed

    def _enter_block(self):
        if self._closed:
            raise RuntimeError("autocast: the run %s is closed; a new autocast starts a new run" % (self.out,))
        self._check_entry()
        if not self._started:
            self._started = True
            self._begin_step()
            if _checks.needs_loss_scaler(self.policy):
                _checks._torch_scaler_guard(True)       # held until close: backward runs outside
                self._held_guard = True
        else:
            self._check_updates()
            if self._params_changed():
                self.step()          # no GradScaler.update(): the optimizer step ended the last one
        self._activate(guard=False)

    def _exit_block(self, et, ev, tb):
        self._deactivate(et, ev, tb)
        if et is not None:
            self._abort()
        elif self.out is not None and self.scaler is None:
            self._arm_grad_norm()

    def _arm_grad_norm(self):
        """The backward runs after the block, where the mode does not see it:
        one-shot hooks on the parameters queue a callback at its end, which
        takes the gradient norm for metrics.csv (_after_backward)."""
        if self._armed is not None:
            return
        params = [p for p in self._params if p.requires_grad]
        if not params:
            return
        queued = []

        def done():
            for h in self._armed or ():
                h.remove()
            self._armed = None
            self._after_backward()

        def hook(g):
            if not queued:
                queued.append(True)
                torch.autograd.Variable._execution_engine.queue_callback(done)
        self._armed = [p.register_hook(hook) for p in params]

    def _release(self):
        for h in self._armed or ():
            h.remove()
        self._armed = None
        if self._held_guard:
            self._held_guard = False
            _checks._torch_scaler_guard(False)
        if _OPEN["run"] is self:
            _OPEN["run"], _OPEN["key"] = None, None

    def _abort(self):
        self._closed = True
        self._release()
        if self._whatif is not None:
            self._whatif.abort()
        if self._log is not None:
            self._log.abort()
        self._log = None

    def close(self):
        """Finish the run: its last step and, with out, summary.json."""
        if self._closed:
            self._release()
            return
        try:
            self._check_updates()
            if self.out is None:
                self._closed = True
            else:
                super().close()
        finally:
            self._release()


def _close_open_run():
    r = open_run()
    if r is not None:
        try:
            r.close()
        except Exception:        # at exit: a failed close must not hide the program's own outcome
            r._abort()


atexit.register(_close_open_run)


class autocast:
    """``torch.autocast``, emulated on the CPU by ampsim.

    Parameters
    ----------
    device_type : str
        "cuda" or "cpu": whose autocast lists the policy follows
        (the model itself runs on the CPU either way).
    dtype : torch.float16 or torch.bfloat16, optional
        The autocast dtype (default: torch's, float16 for "cuda" and
        bfloat16 for "cpu"). cuda + float16 is ampsim's fp16-amp, cuda +
        bfloat16 bf16-amp, cpu + bfloat16 bf16-amp-cpu (PyTorch's CPU lists
        and CPU kernels). cpu + float16 raises ValueError: PyTorch 1.13's CPU
        autocast supports bfloat16 only (torch.autocast refuses it too).
    enabled : bool
        False: the block runs plain PyTorch; inside an emulated block, its
        ops run in FP32 unrounded, as a disabled autocast region does.
    cache_enabled : bool, optional
        Accepted for torch.autocast's signature (the weight cast is cached
        once per step in any case).
    out : str, optional
        Run directory (``ampsim report OUT``), as for ``emulate``.
    log_every, hist_every, seed, config, kernels, fp8, what_if, what_if_format
        As for ``emulate``.

    Every op run inside the block is emulated (there is no model argument:
    like torch.autocast, the scope is the block); global module hooks name
    the ops by module path. Blocks with the same settings form one run that
    spans steps; its backward, run after the block, is rounded as the
    policy says. ``run`` is that emulation (``stats``, ``optimizer(opt)``,
    ``step()``); ``close()`` finishes it (also done at exit).
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None, *, out=None, log_every=10,
                 hist_every=50, seed=1, config=None, kernels="torch", fp8=None, what_if=None,
                 what_if_format=None):
        if device_type not in ("cuda", "cpu"):
            raise ValueError("autocast: device_type must be 'cuda' or 'cpu', not %r" % (device_type,))
        if dtype is None:
            dtype = torch.get_autocast_gpu_dtype() if device_type == "cuda" else torch.get_autocast_cpu_dtype()
        self.device, self.fast_dtype, self.enabled = device_type, dtype, bool(enabled)
        self._quiet = None
        self.run = None
        if not self.enabled:
            return
        pol = POLICIES.get((device_type, dtype))
        if pol is None:
            if (device_type, dtype) == ("cpu", torch.float16):
                raise ValueError("autocast: device_type='cpu' with dtype=torch.float16: PyTorch %s's CPU autocast "
                                 "supports bfloat16 only (torch.autocast refuses it when entered). Use "
                                 "dtype=torch.bfloat16 (policy bf16-amp-cpu), or device_type='cuda' for CUDA's "
                                 "fp16 lists (fp16-amp)" % torch.__version__.split("+")[0])
            raise ValueError("autocast: dtype must be torch.float16 or torch.bfloat16, not %s" % (dtype,))
        self.policy = pol
        kw = dict(out=out, log_every=log_every, hist_every=hist_every, seed=seed, config=config,
                  kernels=kernels, fp8=fp8, what_if=what_if, what_if_format=what_if_format)
        key = json.dumps([pol, {k: v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
                                for k, v in kw.items()}], sort_keys=True, default=repr)
        run = open_run()
        if run is not None and _OPEN["key"] == key:
            self.run = run
            return
        if run is not None and run._entered:
            raise EmulationError("autocast: a block of another autocast run (%s) is active; autocast "
                                 "blocks with other settings do not nest" % run.policy.name)
        self.run = _Run(pol, **kw)          # checked before the open run is closed
        if run is not None:
            run.close()
        _OPEN["run"], _OPEN["key"] = self.run, key

    def __enter__(self):
        active = _checks._ACTIVE[-1] if _checks._ACTIVE else None
        if not self.enabled:
            if active is not None:          # a disabled region inside an emulated one: plain FP32
                self._quiet = active
                active._quiet_depth += 1
            return self
        if active is self.run:
            self._quiet = False             # nested in a block of the same run: nothing changes
            return self
        self.run._enter_block()
        return self

    def __exit__(self, et, ev, tb):
        if self._quiet is not None:
            q, self._quiet = self._quiet, None
            if q is not False:
                q._quiet_depth -= 1
            return False
        if self.enabled:
            self.run._exit_block(et, ev, tb)
        return False

    def __call__(self, fn):
        """As a decorator: fn runs inside the block."""
        @functools.wraps(fn)
        def wrapped(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapped

    def close(self):
        """Finish the run of this autocast (its last step, summary.json)."""
        if self.run is not None:
            self.run.close()
