"""F.embedding / F.embedding_bag under a policy. Autocast policies (FP32
master weights cast per step for the GEMMs) leave them in FP32, as
torch.autocast does, with an FP32 weight gradient. Pure policies read the
weight in its format and round the weight gradient into the weight-gradient
format, logged as ``<parameter>.grad`` like a GEMM's share."""
import torch

from ._functions import _RoundFn
from ._rt import FMT_ATTR as _FMT


class _WeightGradFn(torch.autograd.Function):
    """Identity forward; backward rounds the embedding's weight gradient into
    the weight-gradient format under the parameter's name."""

    @staticmethod
    def forward(ctx, w, emu, name):
        ctx.emu, ctx.name = emu, name
        return w.view_as(w)

    @staticmethod
    def backward(ctx, g):
        emu = ctx.emu
        with emu._quiet():
            return emu._round(g, emu.policy.weight_grad, ctx.name + ".grad", "weight_grad"), None, None


def run(emu, func, name, args, kwargs):
    """An embedding call as the policy says (see the module docstring)."""
    pol = emu.policy
    args = list(args)
    # F.embedding(input, weight, ...); torch.embedding(weight, input, ...)
    wi = 0 if func in (torch.embedding, torch.embedding_bag) else 1
    wkey = None
    if len(args) > wi:
        w = args[wi]
    else:
        wkey = "weight"
        w = kwargs.get("weight")
    # autocast policies (FP32 masters cast per step for the GEMMs) leave the
    # embedding in FP32, as torch.autocast does: its gradient is FP32 too
    if not isinstance(w, torch.nn.Parameter) or pol.has_master or pol.weight == "fp32":
        out = func(*args, **kwargs)
        f = getattr(w, _FMT, None)
        if f is not None and isinstance(out, torch.Tensor):
            setattr(out, _FMT, f)
        return out
    if wi == 1:
        # max_norm renormalises the parameter's rows in place, as F.embedding does
        mn = args[3] if len(args) > 3 else kwargs.get("max_norm")
        if mn is not None:
            idx = args[0] if args else kwargs.get("input")
            nt = args[4] if len(args) > 4 else kwargs.get("norm_type", 2.0)
            with emu._quiet(), torch.no_grad():
                torch.embedding_renorm_(w, idx.contiguous() if idx.dim() else idx, mn, nt)
            if len(args) > 3:
                args[3] = None
            else:
                kwargs = dict(kwargs, max_norm=None)
    site = emu._site(name)
    pname = emu._param_names.get(id(w)) or site + ".weight"
    wc = _WeightGradFn.apply(emu._cast_weight(w, site, False), emu, pname)
    if wkey is None:
        args[wi] = wc
    else:
        kwargs = dict(kwargs, weight=wc)
    out = func(*args, **kwargs)
    if pol.weight != "fp32":
        if name == "embedding_bag" and isinstance(out, torch.Tensor):
            # sums and means of rows: one rounding into the weight format
            emu._tid(site + ".out")
            emu._tid(site + ".out.grad")
            out = _RoundFn.apply(out, emu, site + ".out", pol.weight, pol.act_grad)
        setattr(out[0] if isinstance(out, tuple) else out, _FMT, pol.weight)
    return out
