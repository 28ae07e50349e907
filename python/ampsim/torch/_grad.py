"""Gradients that keep their format: autograd's input buffer, in the format.

Under autocast the graph holds bf16/fp16 tensors. When such a tensor feeds
several ops, autograd's input buffer (torch/csrc/autograd/input_buffer.cpp,
InputBuffer::add) adds the gradient contributions in the tensor's dtype:
the first is stored, each later one is added to it (float arithmetic, one
rounding into the dtype), in the order the consumers' backwards deliver them.
Every contribution is itself a gradient of that dtype (rounded).

Emulated tensors are float32 tensors holding values of a format, so autograd
would add their contributions in FP32 and round once. Here every emulated
low-precision output that requires grad passes through a *source* node
(_SourceFn) that owns a buffer, and every use after the first through a *use*
node (_UseFn). A use node's backward adds its contribution into the buffer,
each contribution and each sum rounded into the gradient format
(InputBuffer::add's rule), and passes nothing on to the source. The source's
backward, which the engine runs only after every use (all are its inputs),
adds the first use's contribution and hands the buffer on.

Order. The CPU engine (torch/csrc/autograd/engine.cpp, ReadyQueue) always
runs the ready node with the highest sequence number, and no node waits on
one with a lower number, so a node runs only after every node created after
it: contributions arrive in the reverse order of their consumers' creation.
A use node is created just before its consumer, so it runs right after the
consumer's backward, in that same order; the first use's consumer runs last,
so its contribution, which reaches the source directly, is added last.

A lone contribution is kept as it came: the producer's backward rounds it
(as before, with its statistics). Where the producer is one of the
emulation's own Functions (a rounding, a GEMM, a weight cast: MERGED), its
node plays the source's part: it holds the buffer and its backward starts
from the sum (begin()), so no node is added. Where it is autograd's own node
(a view, a decomposed module's output), the buffer rides on the tensor and
the source's part is a tensor hook on that node's output, which autograd
calls with the node's input when every use has run (the same point, the same
contribution), added at the second use, when there is something to sum, or
when a watcher asks for it. Cost: one more autograd node per use beyond the
first, and a hook per tensor used more than once (docs/torch.md).
A use hidden from the function mode (a tensor handed to code that runs
outside the emulation) reaches the source with the first use's and is added
with it. ``torch.autograd.grad(loss, h)`` for an emulated tensor h sees no
gradient (the uses pass theirs to the buffer); ``h.retain_grad()`` and
``h.register_hook(fn)`` are kept as watchers of the buffer and see it.
"""
import weakref
from collections import OrderedDict

import torch

from . import _rt
from ._plan import PVIEW_ATTR
from ._rt import FMT_ATTR as _FMT
from ._scope import tensors_in

#: attribute of a source node's output: its _Buffer
BUF_ATTR = "_ampsim_gbuf"

#: a buffer on the output of autograd's own node rides on the tensor, with
#: the hook when needed (False: behind a source node; tests compare the two)
LAZY = True


class _Buffer:
    """The gradient of one low-precision tensor, summed in fmt as it arrives.
    node: the source node (uses of a tensor whose grad_fn is another node,
    after an in-place op, are left to autograd), held weakly: the node holds
    the buffer, and a cycle between them would leave both, with the step's
    graph, to Python's cyclic collector, whose passes cost a training step
    several percent. version: instead of a node, for a buffer on the output
    of autograd's own node (whose Python object cannot be held weakly): the
    tensor's version when the buffer was made; an in-place change of the
    tensor, which gives it another node, changes it (marker: set when the
    tensor hook that takes the source's part is in place, _hook). A lone
    contribution is kept
    as it came (raw): the producer's backward rounds it into the format and
    its statistics see the value before that rounding, as the C emulator's."""
    __slots__ = ("fmt", "g", "raw", "_node", "watchers", "used", "version", "marker")

    def __init__(self, fmt):
        self.fmt, self.g, self.raw, self._node, self.watchers, self.used = fmt, None, False, None, None, False
        self.version, self.marker = None, None

    @property
    def node(self):
        """The source node, or None once it is gone."""
        r = self._node
        return r() if r is not None else None

    @node.setter
    def node(self, n):
        self._node = weakref.ref(n) if n is not None else None

    def add(self, g):
        if self.g is None:
            self.g, self.raw = g, True
            return
        a = _round(self.g, self.fmt) if self.raw else self.g
        self.g, self.raw = _round(a + _round(g, self.fmt), self.fmt), False

    def take(self):
        """The summed gradient (None when no use delivered one); the buffer is emptied."""
        g, self.g, self.raw = self.g, None, False
        return g

    def hooked_through(self, g):
        """through() as the tensor hook of a buffer on autograd's own node
        (_hook): the uses' nodes that delivered a contribution hand on the
        marker, -0.0 everywhere, which autograd adds to the first use's
        contribution exactly (x + -0.0 is x, signed zeros and NaNs
        included), so the hook is called with that contribution, or with
        the marker itself when the first use delivered none (then: None)."""
        return self.through(None if g is self.marker else g)

    def through(self, g):
        """The source's backward: g (the first use's contribution, and any
        the mode did not see; None when there is none) added, the sum taken
        and shown to the watchers (None when no use delivered a gradient)."""
        if g is not None:
            self.add(g)
        out = self.take()
        if out is not None and self.watchers:
            r = _round(out, self.fmt)
            for fn in self.watchers:
                new = fn(r)             # a hook may return a replacement, as autograd's do
                if new is not None:
                    r = out = new
        return out


def _round(x, fmt):
    if fmt == "fp32":
        return x.float()
    return _rt.round_t(x.float(), fmt)[0]


class _SourceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, buf):
        ctx.set_materialize_grads(False)
        ctx.buf = buf
        return x.detach()

    @staticmethod
    def backward(ctx, g):
        return ctx.buf.through(g), None


class _UseFn(_SourceFn):
    """(forward: the source's)"""

    @staticmethod
    def backward(ctx, g):
        if g is None:
            return None, None
        buf = ctx.buf
        buf.add(g)
        # (a buffer on autograd's own node: the marker, so that the hook is
        # called with a gradient even when the first use delivers none)
        return (buf.marker if buf.version is not None else None), None


#: backward node classes of the Functions that serve as their output's source
#: (_functions.py: the op's own node holds the buffer, begin() takes it)
MERGED = set()


def prepare(ctx, y):
    """In the forward of a MERGED Function with output y: no buffer yet, and
    gradients left unmaterialized (begin() does it)."""
    ctx.set_materialize_grads(False)
    ctx.buf, ctx.shape = None, y.shape


def begin(ctx, g):
    """The gradient a MERGED Function's backward starts from: its buffer's sum
    when its output is a source (as a source node would hand it on), else g;
    zeros where there is none, as autograd materializes a Function's missing
    gradient."""
    if ctx.buf is not None:
        g = ctx.buf.through(g)
    if g is None:
        g = torch.zeros(ctx.shape)
    return g


def source(y, gfmt):
    """y (an op's float32 output in a low-precision format, requiring grad)
    behind a source node whose gradient is summed in gfmt; y itself when
    there is nothing to do, or when y's own node (a MERGED Function's) takes
    the source's part."""
    if not isinstance(y, torch.Tensor) or not y.requires_grad or gfmt == "fp32":
        return y
    buf = _Buffer(gfmt)
    node = y.grad_fn
    if type(node) in MERGED:
        if node.buf is None:
            node.buf = _owned(y, node, buf)
            return y
    elif node is not None and LAZY:
        # autograd's own node: the buffer on y, the hook when a second use comes
        buf.version = y._version
        setattr(y, BUF_ATTR, buf)
        return y
    s = _SourceFn.apply(y, buf)
    buf.node = s.grad_fn
    setattr(s, BUF_ATTR, buf)
    f = getattr(y, _FMT, None)
    if f is not None:
        setattr(s, _FMT, f)
    return s


def held(y, gfmt, i):
    """y, output i of a node that holds a buffer per output (node.bufs[i],
    taken by its backward as begin() takes a MERGED node's), with its
    gradient buffer in gfmt."""
    node = y.grad_fn
    node.bufs[i] = _owned(y, node, _Buffer(gfmt))


def _owned(y, node, buf):
    """buf as output y's gradient buffer, held by y's node (returned)."""
    buf.node = node
    setattr(y, BUF_ATTR, buf)
    return buf


def use(t):
    """One use of t: t behind a use node when t is a source's output (else t).
    The first use needs none: its consumer has the lowest sequence number, so
    its contribution arrives last, and reaches the source directly."""
    buf = getattr(t, BUF_ATTR, None)
    if buf is None or not torch.is_grad_enabled() or not live(t, buf):
        return t
    if not buf.used:
        buf.used = True
        return t
    if buf.version is not None and buf.marker is None:
        _hook(t, buf)
    u = _UseFn.apply(t, buf)
    for a in (_FMT, PVIEW_ATTR):
        v = getattr(t, a, None)
        if v is not None:
            setattr(u, a, v)
    return u


def live(t, buf):
    """True while t (which carries buf) is the tensor whose gradient buf sums:
    no in-place change has given it another node since."""
    if buf.version is not None:
        return t._version == buf.version and t.requires_grad
    return t.grad_fn is buf.node


def _hook(t, buf):
    """The source's part for a buffer on the output t of autograd's own node:
    a tensor hook, which autograd calls with the gradient that reaches t
    directly (the first use's, and any the mode did not see) once every use
    has run, as it would run a source node there; it hands on the buffer's
    sum. (Registered as Tensor.register_hook does, without its function-mode
    dispatch; the hook holds the buffer, which holds neither t nor its node.)"""
    buf.marker = _NEG_ZERO.expand(t.shape)
    hooks = t._backward_hooks
    if hooks is None:
        hooks = t._backward_hooks = OrderedDict()
        t.grad_fn._register_hook_dict(t)
    hooks[_HOOK_KEY] = buf.hooked_through


_HOOK_KEY = "ampsim_gbuf"
_NEG_ZERO = torch.tensor(-0.0)


def origin(t):
    """The gradient buffer that t's gradient goes to: its own as a source's
    output, its source's as a use of one; None for another tensor. Two
    arguments of one call with the same origin are one tensor of the model."""
    buf = getattr(t, BUF_ATTR, None)
    if buf is not None and live(t, buf):
        return buf
    node = t.grad_fn
    if type(node) is _UseFn._backward_cls:
        return node.buf
    return None


def handed_back(out, args0, kwargs0, args, kwargs):
    """The result of an op that handed back one of its inputs (dropout with
    p = 0, x.contiguous() of a contiguous x): that input as the call received
    it, before uses() put it behind a use node. Such an op does not use its
    input: a first use that uses() gave this call is given back, so that the
    next consumer is the first use, as it is in PyTorch's graph."""
    for b, a in zip(tensors_in(args0, kwargs0), tensors_in(args, kwargs)):
        if out is a:
            if a is b:
                buf = getattr(b, BUF_ATTR, None)
                if buf is not None and live(b, buf):
                    buf.used = False
            return b
    return out


def _uses_in(seq):
    """[(index, replacement)] for the items of seq that use() replaces, in
    order (use() is called on every source output among them, once per
    occurrence, as it marks the first use)."""
    rep = None
    for i, a in enumerate(seq):
        if isinstance(a, torch.Tensor):
            if hasattr(a, BUF_ATTR):
                u = use(a)
                if u is not a:
                    if rep is None:
                        rep = []
                    rep.append((i, u))
        elif type(a) in (list, tuple) and any(hasattr(b, BUF_ATTR) for b in a):
            if rep is None:
                rep = []
            rep.append((i, type(a)(use(b) if isinstance(b, torch.Tensor) else b for b in a)))
    return rep


def uses(args, kwargs):
    """args and kwargs of an op call with each source output behind a use node
    (args and kwargs themselves when none needs one, or grad mode is off)."""
    if not torch.is_grad_enabled():
        return args, kwargs
    rep = _uses_in(args)
    if rep is not None:
        args = list(args)
        for i, u in rep:
            args[i] = u
        args = tuple(args)
    if kwargs:
        keys = list(kwargs)
        rep = _uses_in([kwargs[k] for k in keys])
        if rep is not None:
            kwargs = dict(kwargs)
            for i, u in rep:
                kwargs[keys[i]] = u
    return args, kwargs


def sources(out, gfmt_of):
    """An op's output(s) with each low-precision float tensor that requires
    grad behind a source node; gfmt_of(fmt) gives its gradient format."""
    if isinstance(out, torch.Tensor):
        f = getattr(out, _FMT, None)
        if f is None or f == "fp32" or not out.requires_grad or hasattr(out, BUF_ATTR):
            return out
        return source(out, gfmt_of(f))
    if type(out) in (list, tuple) and any(hasattr(o, _FMT) for o in out):
        return type(out)(sources(o, gfmt_of) for o in out)
    return out


def watch(t, fn):
    """Call fn(grad) with t's gradient as autograd forms it: the buffer summed
    in format for an emulated low-precision tensor, else a tensor hook."""
    buf = getattr(t, BUF_ATTR, None)
    if buf is not None and live(t, buf):
        if buf.version is not None and buf.marker is None:
            _hook(t, buf)
        if buf.watchers is None:
            buf.watchers = []
        buf.watchers.append(fn)
    elif t.requires_grad:
        t.register_hook(lambda g: fn(g) and None)


class _Handle:
    """What Tensor.register_hook returns, for a hook kept as a watcher."""

    def __init__(self, buf, fn):
        self.buf, self.fn = buf, fn

    def remove(self):
        if self.buf.watchers and self.fn in self.buf.watchers:
            self.buf.watchers.remove(self.fn)


def _set_grad(t):
    acc = []

    def fn(g):
        acc[:] = [g.clone() if not acc else acc[0] + g]
        t.grad = acc[0]
    return fn


HOOKED = (torch.Tensor.retain_grad, torch.Tensor.register_hook)


def tensor_hook(func, args, kwargs):
    """Tensor.retain_grad() and Tensor.register_hook(fn) on a source's output
    (whose gradient autograd never forms; the buffer holds it): kept as
    watchers of the buffer. Returns (True, result) when handled."""
    if func not in HOOKED or not args:
        return False, None
    t = args[0]
    buf = getattr(t, BUF_ATTR, None)
    if buf is None or not live(t, buf):
        return False, None
    if func is torch.Tensor.retain_grad:
        watch(t, _set_grad(t))
        return True, None
    hook = args[1] if len(args) > 1 else kwargs.get("hook")
    watch(t, hook)
    return True, _Handle(buf, hook)


WIDEN = {torch.Tensor.float, torch.Tensor.to, torch.Tensor.type}


def widened(func, args, out):
    """x.float(), x.to(torch.float32), x.type(torch.float32) on an emulated
    low-precision tensor: PyTorch returns the float32 tensor itself, but under
    autocast it is a cast to FP32 (a new tensor, whose gradient the cast's
    backward rounds into x's format). Returns the FP32-format alias (or out)."""
    if func in WIDEN and args and out is args[0] and getattr(out, _FMT, "fp32") != "fp32":
        return out.view_as(out)
    return out
