"""A GEMM site's setup, kept between calls (emulate._gemm_setup).

Setting up a GEMM call (names, operand kinds, the weights' names, the
product's call and its backward's form) costs more Python than the product
of a small layer, and every GEMM of every step paid it. A site's calls are
almost always of one form, so the setup of the last call is kept as a plan,
per (site, function), and a later call of the same form takes it and only
casts its weights (this step's casts, as the setup casts them). The form
is: the same number of positional arguments, a tensor where the plan has
one, the same parameter objects in the weight and bias slots (float32, on
the CPU), an activation that is not a parameter or a view of one, and equal
values in the other arguments (a convolution's stride, padding, dilation
and groups). Any other call is set up anew and its plan replaces the kept
one. A plan holds its parameters weakly, and no activation. ``ENABLED``
switches plans off (tests compare the two)."""
import weakref

import torch

from . import _rt

ENABLED = True

#: attribute of a view of a parameter: (parameter, fn) (_handlers.py)
PVIEW_ATTR = "_ampsim_pview"


class GemmPlan:
    """A site's GEMM setup for a call of one form, kept: the argument layout
    (which arguments are tensors, the others' values), the parameters in the
    weight and bias slots (the same objects, held weakly), the operand kinds
    and the call.
    operands() gives a later call's operands, its weights cast as the setup
    casts them (this step's casts), or None when the call's form differs (a
    new setup then replaces the plan). Kept only for the forms whose setup
    depends on nothing else: positional arguments, tensors passed alone (not
    in a list), parameters used as they are (not a view of one), PyTorch's
    kernels."""
    __slots__ = ("tmpl", "params", "kinds", "call")

    @staticmethod
    def of(emu, args, kwargs, res):
        """The plan of a call that _gemm_setup_new set up as res, or None."""
        call, kinds = res[1], res[2]
        if not ENABLED or kwargs or emu.kernels == "ampsim":
            return None
        tmpl, params, k = [], [], iter(kinds)
        for a in args:
            if isinstance(a, torch.Tensor):
                kd = next(k, None)
                if kd is None or getattr(a, PVIEW_ATTR, None) is not None:
                    return None
                tmpl.append(_SLOT)
                params.append(weakref.ref(a) if kd in ("w", "b") else None)
            elif type(a) not in _PLAIN or isinstance(a, (list, tuple)) and not all(type(b) in _PLAIN for b in a):
                return None
            else:
                tmpl.append(a)
                params.append(None)
        if next(k, None) is not None:
            return None
        plan = GemmPlan()
        plan.tmpl, plan.params, plan.kinds = tuple(tmpl), tuple(params), kinds
        # (its call's template holds no tensor: a kept plan keeps no activation alive)
        slots = [("a", i) for i, a in enumerate(tmpl) if a is _SLOT]
        targs = [None if a is _SLOT else a for a in tmpl]
        func = call.func
        if len(slots) == len(tmpl):
            def bound(*xs):         # (every argument a tensor: the call as it is)
                return func(*xs)
        else:
            def bound(*xs):
                return func(*_rt.with_tensors(targs, {}, slots, xs)[0])
        for attr in ("op", "wnames", "act_only", "positional", "geometry", "func"):
            setattr(bound, attr, getattr(call, attr))
        plan.call = bound
        return plan

    def operands(self, emu, site, args):
        """A call's operands by this plan, or None: not its form."""
        tmpl, params = self.tmpl, self.params
        if len(args) != len(tmpl):
            return None
        acts, ws = [], []          # (the tensor slots: activations, and parameters with their kinds)
        for a, t, p in zip(args, tmpl, params):
            if t is _SLOT:
                if p is not None:
                    if a is not p() or not a.is_cpu or a.dtype != torch.float32:
                        return None
                    ws.append(a)
                elif not isinstance(a, torch.Tensor) or _is_param(a) or not a.is_cpu \
                        or a.dtype != torch.float32 or getattr(a, PVIEW_ATTR, None) is not None:
                    return None
                else:
                    acts.append(a)
            elif isinstance(a, torch.Tensor) or type(a) is not type(t) or a != t:
                return None
        roots = emu._root_inputs
        if roots:
            for a in acts:
                if id(a) in roots:
                    emu._tid("input")          # the model input comes first, as in the C models
        if not ws:
            return acts
        out, acts, ws = [], iter(acts), iter(ws)
        for k in self.kinds:
            out.append(next(acts) if k == "act" else emu._cast_weight(next(ws), site, k == "b"))
        return out


_SLOT = object()        # a tensor argument's place in a GemmPlan's template
_PLAIN = (type(None), bool, int, float, str, tuple, list)     # the other arguments' types a plan compares
_PARAM, _TENSOR = torch.nn.Parameter, torch.Tensor


def _is_param(a):
    """isinstance(a, nn.Parameter), without the metaclass's check for a plain tensor."""
    t = type(a)
    return t is _PARAM or t is not _TENSOR and isinstance(a, _PARAM)
