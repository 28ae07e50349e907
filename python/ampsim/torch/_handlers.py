"""The op handlers of ampsim.torch.emulate (a mixin of emulate): what a torch
function call becomes under the policy (see _ops.py for the table)."""
import torch
from torch.overrides import TorchFunctionMode

from . import _dtypes, _embed, _functions, _gemm_grad, _grad, _kernels, _lowp, _mha, _ops, _plan, _rnn
from ._functions import _GemmFn, _RoundFn, _XentFn
from . import _rt
from ._rt import FMT_ATTR as _FMT
from ._rt import EmulationError
from ._rt import fmt_of as _fmt_of
from ._scope import join as _join
from ._scope import tensors_in as _tensors_in

from ._plan import PVIEW_ATTR as _PVIEW


# ---- the function mode --------------------------------------------------------------
_BACKWARD = torch.Tensor.backward
_AGRAD = torch.autograd.grad
# (create_graph's position in each signature, Tensor.backward's self included)
_CREATE_GRAPH = {_BACKWARD: 3, _AGRAD: 4}
_GRAD_ON = torch.is_grad_enabled
_RECS = {}          # function -> (op, class, plain): _record's answer, cached
_DECOMPOSED = ("mha", "sdpa")   # kinds whose body runs op by op under the mode


def _record(func):
    """(OPS entry, CLASSES entry, plain) of a torch function; plain: 1 for a
    classified FP32 or no_float function with nothing to do but call it (its
    uses of source outputs taken as uses, _grad.py), 2 for such a tensor
    attribute (__get__, __set__) or a no_float function whose result carries
    no gradient (_ops.NO_USE_NAMES: x.dim(), x == y): not a use; 0 otherwise."""
    op, cls = _ops.OPS.get(func), _ops.CLASSES.get(func)
    plain = 0
    if op is None and cls in ("fp32", "no_float") and func not in _CREATE_GRAPH and func not in _grad.HOOKED \
            and func not in _grad.WIDEN:
        n = getattr(func, "__name__", None)
        plain = 2 if n in ("__get__", "__set__") or cls == "no_float" and n in _ops.NO_USE_NAMES else 1
    rec = _RECS[func] = (op, cls, plain)
    return rec


class _Mode(TorchFunctionMode):
    def __init__(self, emu):
        super().__init__()
        self.emu = emu

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        emu = self.emu
        # the scope (_scope.py): foreign modules and tensors pass through
        if emu._quiet_depth or emu._scope.skip(args, kwargs):
            return func(*args, **kwargs)
        rec = _RECS.get(func) or _record(func)
        stack = emu._stack
        plain = rec[2]
        if plain:
            # a classified FP32 or no_float function: called as it is, counted
            count = stack or (not emu._bwd_done and _GRAD_ON())
            if plain == 1:
                args, kwargs = _grad.uses(args, kwargs)
            out = func(*args, **kwargs)
            if count:
                emu._cov.add(func, rec[1], out if rec[1] != "no_float" else None)
            if not stack:
                emu._scope.mark(out)
            return out
        if stack:
            return self._dispatch(emu, func, args, kwargs)
        out = self._dispatch(emu, func, args, kwargs)
        emu._scope.mark(out)
        return out

    @staticmethod
    def _dispatch(emu, func, args, kwargs):
        # the coverage account counts the model's forward and its loss (not
        # the scaler's and optimizer's work after the backward)
        count = emu._stack or (not emu._bwd_done and torch.is_grad_enabled())
        op = _ops.OPS.get(func)
        if op is None:
            if func in _CREATE_GRAPH:
                _refuse_create_graph(emu, func, args, kwargs)
            if func is _BACKWARD:
                emu._on_backward(args[0] if args else kwargs.get("self"))
            elif getattr(func, "__name__", None) not in ("__get__", "__set__"):   # not an attribute
                done, res = _grad.tensor_hook(func, args, kwargs)
                if done:
                    return res
                args, kwargs = _grad.uses(args, kwargs)
            cls = _ops.CLASSES.get(func)
            if (cls is None or cls == "gemm_unrounded") and emu.strict:
                raise EmulationError(
                    "ampsim.torch: %s in %s: %s (strict=True)"
                    % (_ops.func_name(func), emu._where(), "a GEMM-like op that would run unrounded"
                       if cls else "neither emulated nor classified (ampsim/torch/_ops.py)"))
            out = _grad.widened(func, args, func(*args, **kwargs))
            if func is _BACKWARD:
                emu._after_backward()
            if cls is None or cls == "gemm_unrounded":
                emu._other(func, args, kwargs, out)
            if count:
                emu._cov.add(func, cls or "unclassified", out if cls != "no_float" else None)
            return out
        kind, name = op
        if emu._cpu_lists and kind not in _DECOMPOSED:
            if _ops.cpu_fp32(func, name, args, kwargs):
                return _cpu_fp32_call(emu, func, args, kwargs, count)
            if func in _ops.CPU_UNLISTED_GEMMS:
                kind = "elementwise"
            if name in _dtypes.CPU_NORMS:
                _dtypes.cpu_norm(emu, name, args, kwargs)
        # gradients kept in format: each use of an emulated tensor, each output
        # (_grad.py); attention runs its body op by op, and those ops are the
        # uses (a self-attention's query, key and value, one tensor, stay one)
        args0, kwargs0 = args, kwargs
        if name == "dropout" and _dropout_noop(args, kwargs):
            # (PyTorch's CPU dropout hands back its input: nothing is computed,
            # and the input's next consumer is its use, as under autocast)
            out = func(*args, **kwargs)
            if out is args[0]:
                if count:
                    emu._cov.add(func, kind, out)
                return out
        if name == "setitem":
            if count:
                emu._cov.add(func, kind)
            return emu._setitem(func, args)
        if kind not in _DECOMPOSED:
            args, kwargs = _grad.uses(args, kwargs)
        if kind == "view":
            if count:
                emu._cov.add(func, kind)
            out = _lowp_selection(emu, func, args, kwargs)
            if out is None:
                out = emu._view(func, args, kwargs)
            if args and out is args[0]:         # (x.contiguous() of a contiguous x: x itself)
                return _grad.handed_back(out, args0, kwargs0, args, kwargs)
        elif kind == "gemm":
            out = emu._gemm(func, name, args, kwargs)
            if count:
                emu._cov.add(func, kind, out, _ops.gemm_macs(name, args, kwargs, out))
        else:
            if kind == "inplace":
                out = emu._inplace(func, name, args, kwargs)
            elif kind == "embedding":
                out = _embed.run(emu, func, name, args, kwargs)
            elif kind == "mha":
                out = _mha.run(emu, emu._mode, func, args, kwargs)
            elif kind == "sdpa":
                out = _mha.sdpa(emu, emu._mode, func, args, kwargs)
            elif kind in ("rnn", "rnn_cell"):
                out = _rnn.run(emu, emu._mode, func, name, kind, args, kwargs)
            else:
                out = emu._pointwise(func, kind, name, args, kwargs)
                if isinstance(out, torch.Tensor) and any(out is t for t in _tensors_in(args, kwargs)):
                    if count:
                        emu._cov.add(func, kind, out)
                    return _grad.handed_back(out, args0, kwargs0, args, kwargs)
            if count:
                # a decomposed module's ops are counted one by one
                emu._cov.add(func, kind, out if kind not in ("mha", "sdpa", "rnn", "rnn_cell") else None)
            if kind in ("mha", "sdpa", "rnn", "rnn_cell"):
                return out          # its ops made their own gradient sources
        return _grad.sources(out, emu._grad_fmt)


def _f32_out(t):
    """True for a float32 tensor output (one an elementwise rule rounds)."""
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype == torch.float32


def _refuse_create_graph(emu, func, args, kwargs):
    """A backward that would build a graph of the gradients (a gradient
    penalty, higher-order gradients): the emulation's backward, which rounds
    through foreign calls, is not differentiable, so it is refused."""
    i = _CREATE_GRAPH[func]
    if args[i] if len(args) > i else kwargs.get("create_graph", False):
        raise EmulationError(
            "ampsim.torch: %s(create_graph=True) in %s: gradients of gradients (a gradient penalty, "
            "double backward) are not emulated; compute that term outside the emulate block"
            % ("backward" if func is _BACKWARD else "torch.autograd.grad", emu._where()))


def _dropout_noop(args, kwargs):
    """True for a dropout call whose p = 0 or training off is given (in the
    arguments or by keyword, as F.dropout hands them to the mode), which
    draws no noise and, on the CPU, returns its input itself."""
    if not args or not isinstance(args[0], torch.Tensor):
        return False
    p = args[1] if len(args) > 1 else kwargs.get("p")
    train = args[2] if len(args) > 2 else kwargs.get("training", kwargs.get("train"))
    return p == 0 or train is False


def _cpu_fp32_call(emu, func, args, kwargs, count):
    """A call on the FP32 list of PyTorch's CPU autocast: run on the float32
    tensors as they are (a low-precision value is exact in float32, as
    autocast's cast to float32 is), output FP32; each low-precision input's
    gradient is rounded by its source, as the cast's backward rounds it."""
    args, kwargs = _grad.uses(args, kwargs)
    out = func(*args, **kwargs)
    if count:
        emu._cov.add(func, "fp32", out)
    return out


def _lowp_selection(emu, func, args, kwargs):
    """The output of a selection whose backward adds repeated picks
    (_ops.SUMMING_SELECTIONS), run on real low-precision tensors under a
    torch_cpu policy, so that those sums are PyTorch's (max_pool2d's backward
    on bf16 adds in bf16, in its order); None: not such a call, or not run so."""
    if _ops.func_name(func) not in _ops.SUMMING_SELECTIONS:
        return None
    ins = [t for t in _tensors_in(args, kwargs) if t.is_floating_point()]
    if not _lowp.applies(emu, "view", ins):
        return None
    low = _lowp.call(func, args, kwargs)
    return low[0] if low is not None else None


def _plain_xent(args, kwargs):
    """F.cross_entropy(z [B,C] float32, y [B] int64) with default options and
    every target in range: the case the C emulator's loss covers."""
    if len(args) != 2 or any(v is not None and k not in ("reduction", "ignore_index", "label_smoothing")
                              for k, v in kwargs.items()):
        return False
    if kwargs.get("reduction", "mean") != "mean" or kwargs.get("label_smoothing", 0.0) != 0.0:
        return False
    z, y = args
    if not (isinstance(z, torch.Tensor) and isinstance(y, torch.Tensor) and z.dim() == 2 and y.dim() == 1
            and z.dtype == torch.float32 and y.dtype == torch.int64 and y.shape[0] == z.shape[0]):
        return False
    ign = kwargs.get("ignore_index", -100)
    return bool(((y >= 0) & (y < z.shape[1]) & (y != ign)).all())


# binary ops whose Python-number operand PyTorch's CPU kernels round into a
# 16-bit tensor's dtype before the float32 arithmetic
_SCALAR_OPS = {"add", "sub", "mul", "div"}
_SCALAR_CACHE = {}


def _scalar_in(a, fmt):
    """The Python number a rounded into fmt (cached)."""
    key = (fmt, a)
    r = _SCALAR_CACHE.get(key)
    if r is None:
        r = _SCALAR_CACHE[key] = float(_rt.round_t(torch.tensor([float(a)]), fmt)[0][0])
    return r


def _cpu_scalars(args):
    """args with each Python number rounded into the format of the 16-bit
    tensor beside it (torch_cpu policies: x_bf16 * 0.3535534 multiplies by
    0.353515625)."""
    fmt = next((_fmt_of(a) for a in args if isinstance(a, torch.Tensor)), "fp32")
    if fmt == "fp32" or _rt.fmt_struct(fmt).bits >= 32:
        return args
    out = []
    for a in args:
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            a = _scalar_in(a, fmt)
        out.append(a)
    return tuple(out)


class _OpHandlers:
    """The methods _Mode calls, per kind of op (mixed into emulate)."""

    def _view(self, func, args, kwargs):
        out = func(*args, **kwargs)
        src = args[0] if args else None
        if isinstance(src, torch.Tensor):
            fmt = getattr(src, _FMT, None)
            pv = getattr(src, _PVIEW, None)
            if pv is None and isinstance(src, torch.nn.Parameter):
                pv = (src, None)
            if fmt is not None or pv is not None:
                many = isinstance(out, (tuple, list))
                for i, o in enumerate(out if many else (out,)):
                    if isinstance(o, torch.Tensor) and o.is_floating_point():
                        if fmt is not None:
                            setattr(o, _FMT, fmt)
                        if pv is not None:
                            # (a piece of a split or chunk: the same call, then its item)
                            p, prev = pv
                            rest, kw = args[1:], kwargs

                            def fn(w, prev=prev, rest=rest, kw=kw, i=i if many else None):
                                y = func(prev(w) if prev else w, *rest, **kw)
                                return y if i is None else y[i]
                            setattr(o, _PVIEW, (p, fn))
        return out

    def _setitem(self, func, args):
        """x[idx] = v: v rounded into x's format first, as the copy into a
        low-precision tensor rounds it (a tensor through a rounding whose
        backward rounds its gradient; a Python number once, cached). The
        write goes into x itself, so that autograd records it on x's graph:
        only v is a use."""
        if len(args) != 3:
            return func(*args)
        x, idx, v = args
        if isinstance(v, torch.Tensor) and isinstance(x, torch.Tensor) and v.is_floating_point() \
                and x.is_floating_point() and _dtypes.advanced_index(idx):
            _dtypes.one_dtype(self, "index_put (x[index] = value)", (x, v))      # (aten's index_put_)
        if isinstance(v, torch.Tensor) and torch.is_grad_enabled():
            v = _grad.use(v)
        fmt = _fmt_of(x)
        if fmt != "fp32" and isinstance(x, torch.Tensor) and x.is_floating_point():
            if isinstance(v, torch.Tensor) and v.is_floating_point() and _fmt_of(v) != fmt \
                    and v.dtype == torch.float32:
                site = self._out_site("setitem")
                v = _RoundFn.apply(v, self, site + ".out", fmt, self.policy.act_grad)
            elif isinstance(v, float):
                v = _scalar_in(v, fmt)
        return func(x, idx, v)

    def _out_site(self, op):
        """The site of an op whose output is rounded, its output's and that
        output's gradient's tensor ids registered (in that order) at first use."""
        site = self._site(op)
        if site + ".out" not in self._ids:
            self._register_out(site + ".out")
        return site

    def _register_out(self, name):
        """An op output's tensor id and its gradient's, in that order (no-ops once registered)."""
        self._tid(name)
        self._tid(name + ".grad")

    def _gemm(self, func, name, args, kwargs):
        pol = self.policy
        if pol.is_fp32() and not self._stats_due():
            return func(*args, **kwargs)
        site, call, kinds, ts = self._gemm_setup(func, name, args, kwargs)
        y = _GemmFn.apply(self, site, call, kinds, *ts)
        setattr(y, _FMT, pol.act)
        return y

    def _gemm_setup(self, func, name, args, kwargs):
        """(site, call, kinds, operands) of a GEMM call: its site named and
        registered, its weights cast (this step's casts), and call(*operands)
        the product as _GemmFn runs it. The rest of a site's setup is kept
        as a plan (_plan.GemmPlan) and reused while a call has the same form."""
        site = self._site(name)
        plan = self._gemm_plans.get((site, func))
        if plan is not None and not kwargs:
            ts = plan.operands(self, site, args)
            if ts is not None:
                return site, plan.call, plan.kinds, ts
        res = self._gemm_setup_new(site, func, name, args, kwargs)
        plan = _plan.GemmPlan.of(self, args, kwargs, res)
        if plan is not None:
            self._gemm_plans[(site, func)] = plan
        return res

    def _gemm_setup_new(self, site, func, name, args, kwargs):
        """_gemm_setup's answer for a call at site, set up from its arguments."""
        pol = self.policy
        bias_pos, bias_kw = _ops.BIAS_ARG.get(name, (None, None))
        args = list(args)
        slots, ts = _rt.tensor_slots(args, kwargs)     # einsum(eq, [a, b]): a slot per tensor
        kinds = ["bias" if s == ("a", bias_pos) or s == ("k", bias_kw) else "act" for s in slots]
        wnames = [None] * len(ts)
        roots = self._root_inputs
        if roots:
            for t, k in zip(ts, kinds):
                if k == "act" and id(t) in roots:
                    self._tid("input")          # the model input comes first, as in the C models
        for i, t in enumerate(ts):
            if not t.is_cpu:
                raise EmulationError("ampsim.torch: %s in %s: operand on %s; emulate runs on the CPU"
                                     % (name, self._where(), t.device))
            if t.dtype != torch.float32:
                raise EmulationError("ampsim.torch: %s in %s: operand of dtype %s; emulate runs float32 "
                                     "models (the policy sets the formats)" % (name, self._where(), t.dtype))
            pv = getattr(t, _PVIEW, None)
            if pv is not None or isinstance(t, torch.nn.Parameter):
                p = t if pv is None else pv[0]
                own = _join(site, "bias" if kinds[i] == "bias" else "weight")
                # a tied weight's share is named after the GEMM that uses it, as in the C GPT
                pname = self._param_names.get(id(p))
                tied = own != pname and own in self._param_sites.get(id(p), ())
                wnames[i] = own if tied else pname or own
                if pv is None:
                    ts[i] = self._cast_weight(t, site, kinds[i] == "bias")
                elif pol.has_master and not pol.fp8_scaling:
                    # (autocast's cast cache keeps parameters only: a view of one
                    # is cast at each use, its gradient shares added in FP32)
                    ts[i] = self._cast_use(t, pname or own, kinds[i] == "bias")
                else:
                    p, fn = pv
                    wc = self._cast_weight(p, site, kinds[i] == "bias")
                    ts[i] = fn(wc) if fn else wc
                kinds[i] = "w" if kinds[i] != "bias" else "b"
            elif kinds[i] == "bias":
                kinds[i] = "act"
        self._register_site(site, ts, kinds)
        # kernels="ampsim": the C emulator's products (under torch_cpu policies
        # oneDNN's pair order, forward and backward; else the attention kernels'
        # double sums for products of two activations)
        pairs = form = None
        if self.kernels == "ampsim":
            pairs = _kernels.pairs_policy(pol)
            if not pairs and name in ("matmul", "bmm") and not kwargs and len(args) == 2 and kinds == ["act", "act"]:
                form = _kernels.matmul_form(ts[0], ts[1])

        def call(*xs):
            if form is not None:
                return _kernels.matmul(xs[0], xs[1], form)
            a2, kw2 = _rt.with_tensors(args, kwargs, slots, xs)
            y = _kernels.pairs_gemm(name, func, a2, kw2) if pairs else None
            return func(*a2, **kw2) if y is None else y
        call.op = name
        call.func = func
        call.wnames = wnames
        # a product of activations only (attention) stays in the activation
        # formats under FP8 scaling, as in Transformer Engine's recipes
        call.act_only = "w" not in kinds and "b" not in kinds
        # every argument a tensor or None (a linear's absent bias), PyTorch's
        # own kernel: the backward may be written out (_gemm_grad.py)
        call.positional = form is None and not pairs and not kwargs and \
            all(a is None or isinstance(a, torch.Tensor) for a in args)
        # a convolution's geometry (its backward may be written out too)
        call.geometry = _gemm_grad.conv_geometry(name, args, kwargs) if form is None and not pairs else None
        return site, call, tuple(kinds), ts

    def _register_site(self, site, ts, kinds):
        if site + ".out" in self._ids:
            return
        pol = self.policy
        for t, k in zip(ts, kinds):
            if k == "act" and id(t) in self._root_inputs:
                self._tid("input")
        fp8 = pol.fp8_scaling and "act" not in kinds or any(k != "act" for k in kinds)
        if pol.fwd_in != pol.act or pol.fp8_scaling and fp8:
            self._tid(site + ".input")
        self._tid(site + ".out")
        self._tid(site + ".out.grad")
        if pol.bwd_in != pol.act_grad or pol.fp8_scaling and fp8:
            self._tid(site + ".out.grad.input")

    def _pointwise(self, func, kind, name, args, kwargs, out_fmt=None):
        pol = self.policy
        if name in _ops.INPLACE_KW and kwargs.get("inplace"):
            kwargs = dict(kwargs, inplace=False)
        if name == "dropout" and len(args) >= 4 and args[3]:
            args = tuple(args[:3]) + (False,) + tuple(args[4:])
        if name in _SCALAR_OPS and pol.torch_cpu:
            args = _cpu_scalars(args)
        ins = [t for t in _tensors_in(args, kwargs) if t.is_floating_point()]
        for t in ins:
            if t.dtype != torch.float32 and t.dtype != torch.float64 or not t.is_cpu:
                raise EmulationError("ampsim.torch: %s in %s: input of dtype %s on %s; emulate runs float32 "
                                     "CPU tensors" % (name, self._where(), t.dtype, t.device))
        if name in _ops.SAME_DTYPE and ins:
            # (one dtype in the real run, the destination's: the output's format)
            _dtypes.one_dtype(self, name, ins)
            out_fmt = out_fmt or _fmt_of(ins[0])
        out = low = None
        if _lowp.inner_autocast(self, name):
            low = _lowp.call(func, args, kwargs, raising=True)
        elif _lowp.applies(self, kind, ins):
            low = _lowp.call(func, args, kwargs)       # (output, its format) or None
        if low is not None:
            out = low[0]
        # (GELU under a torch_cpu policy: PyTorch's kernel in the input's format)
        if out is None and (self.kernels == "ampsim" or name == "gelu" and pol.torch_cpu):
            with self._quiet():
                out = self._ampsim_kernel(name, args, kwargs)
        if out is None and kind not in pol.fp32_ops and ins and _fmt_of(ins[0]) != "fp32":
            # backward rules that read the rounded output (tanh, softmax...) or round per op (a / b)
            out = _functions.saved_output_rule(name, args, kwargs, _fmt_of(ins[0]), not pol.torch_cpu)
        if out is None:
            out = func(*args, **kwargs)
        # an op that hands back its input (dropout with p = 0 or in eval, as
        # PyTorch's CPU dropout does): nothing was computed, and the uses of
        # the result are uses of the input, as under autocast
        for t in ins:
            if out is t:
                return out
        # (several floating outputs, as var_mean's and std_mean's: each rounded as one)
        many = type(out) is tuple and out and all(_f32_out(o) for o in out)
        if not many and not _f32_out(out):
            return out
        if low is not None:
            fmt = low[1]
        elif kind == "elementwise":
            shaped = [t for t in ins if t.dim() > 0] or ins
            fmts = {_fmt_of(t) for t in shaped}
            fmt = fmts.pop() if len(fmts) == 1 else "fp32"
        elif kind in pol.fp32_ops:
            fmt = "fp32"
        else:
            fmt = _fmt_of(ins[0]) if ins else "fp32"
        if out_fmt is not None:
            fmt = out_fmt
        inside = bool(self._stack)
        if fmt == "fp32" and not (self._stats_due() and inside):
            return out
        outs = out if many else (out,)
        if fmt == "fp32" and pol.is_fp32() and not any(o.requires_grad for o in outs) and not self._stats_due():
            return out
        site = self._out_site(name)
        gfmt = pol.act_grad if fmt != "fp32" else "fp32"
        ys = []
        for i, o in enumerate(outs):
            n = site + (".out" if i == 0 else ".out%d" % (i + 1))
            if i:
                self._register_out(n)
            # a masked fill writes its -inf on purpose: not a non-finite result
            y = _RoundFn.apply(o, self, n, fmt, gfmt, name not in ("masked_fill", "where"))
            if fmt != "fp32":
                setattr(y, _FMT, fmt)
            ys.append(y)
        return tuple(ys) if many else ys[0]

    def _inplace(self, func, name, args, kwargs):
        """An in-place elementwise op (add_, +=, relu_) or GEMM (x.addmm_(a, b)):
        the out-of-place op emulated as usual (on a copy when autograd may need
        the old value; a GEMM with x as its added term), its result written
        back into the tensor, which takes its format."""
        x = args[0] if args else kwargs.get("input", kwargs.get("self"))
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            return func(*args, **kwargs)
        gemm = _ops.KIND.get(name) == "gemm"
        if gemm and not args or not gemm and all(_fmt_of(t) == "fp32" for t in _tensors_in(args, kwargs)) \
                and not (self._stack and self._stats_due()):
            return func(*args, **kwargs)
        base = _ops.INPLACE_OF[func]
        with self._quiet():
            src = x.clone() if x.requires_grad else x
        rest = tuple(args[1:]) if args else ()
        kw = dict(kwargs)
        if not args:
            kw.pop("input", None)
            kw.pop("self", None)
        if gemm:
            y = self._gemm(base, name, (src,) + rest, kw)
        else:
            # an in-place result keeps the destination's dtype in PyTorch (a
            # bf16 tensor += an FP32 one stays bf16): here its format
            fx = _fmt_of(x)
            y = self._pointwise(base, "elementwise", name, (src,) + rest, kw, None if fx == "fp32" else fx)
        if not isinstance(y, torch.Tensor):
            return func(*args, **kwargs)
        with self._quiet():
            x.copy_(y)
        f = getattr(y, _FMT, None)
        if f is not None:
            setattr(x, _FMT, f)
        elif hasattr(x, _FMT):
            delattr(x, _FMT)
        return x

    def _ampsim_kernel(self, name, args, kwargs):
        """The C emulator's kernel for this call (kernels="ampsim"), or None
        when the call has a form it does not cover. Under a torch_cpu policy
        GELU on a 16-bit tensor runs in that format's arithmetic whatever the
        kernels: that is PyTorch's own CPU kernel on such a tensor."""
        if name == "gelu":
            x = args[0] if args else kwargs.get("input")
            f = _fmt_of(x) if isinstance(x, torch.Tensor) else "fp32"
            per_op = self.policy.torch_cpu and f != "fp32" and _rt.fmt_struct(f).bits < 32
            if not per_op and self.kernels != "ampsim":
                return None
            return _kernels.gelu(args, kwargs, f if per_op else None, self.policy.act_grad)
        torch_cpu = self.policy.torch_cpu
        if name == "cross_entropy":
            return _XentFn.apply(args[0], args[1], torch_cpu) if _plain_xent(args, kwargs) else None
        if name == "layer_norm":
            return _kernels.layer_norm(args, kwargs, torch_cpu)
        if name == "softmax":
            x = args[0] if args else kwargs.get("input")
            fmt = "fp32" if "softmax" in self.policy.fp32_ops or not isinstance(x, torch.Tensor) else _fmt_of(x)
            return _kernels.softmax(args, kwargs, fmt, torch_cpu)
        return None

    def _other(self, func, args, kwargs, out):
        """A function passed through: listed once when it took a low-precision
        tensor and returned a floating one."""
        if not isinstance(out, torch.Tensor) or not out.is_floating_point():
            return
        for t in _tensors_in(args, kwargs):
            f = getattr(t, _FMT, None)
            if f is not None and f != "fp32":
                n = _ops.func_name(func)
                if n.endswith("_") or n.startswith("__i"):
                    where = self._where()
                    self._note_event("not_emulated", where, "%s (in place, on a %s tensor)" % (n, f))
                else:
                    self._note_event("not_emulated", self._where(), "%s (on a %s tensor)" % (n, f))
                return

    def _on_backward(self, loss):
        if isinstance(loss, torch.Tensor) and loss.numel() == 1 and self._loss is None:
            self._loss = float(loss.detach())
        self._bwd_done = True

    def _after_backward(self):
        """Without a loss scaler the step ends at the next forward, after the
        loop's zero_grad: the gradient norm of metrics.csv is taken here, as
        the optimizer will see it (the last backward of an accumulated step)."""
        if self.out is not None and self.scaler is None:
            with self._quiet():
                self._bwd_grad_norm = self._grad_norm()

