"""nn.MultiheadAttention / F.multi_head_attention_forward and
F.scaled_dot_product_attention, decomposed and emulated op by op.

F.multi_head_attention_forward runs its own Python body (the same function,
with its torch-function dispatch check turned off) while the emulation's mode
is active again, so each op it calls is emulated like any other and the run
stays bit-identical to PyTorch under fp32. The ops are named under the
module: ``<m>.in_proj`` (packed self-attention; ``in_proj_q``/``in_proj_kv``
when key is value, ``in_proj_q``/``in_proj_k``/``in_proj_v`` otherwise or
with separate kdim/vdim weights), ``<m>.scale`` (q / sqrt(head_dim)),
``<m>.matmul1`` (scores, with the additive mask when there is one),
``<m>.softmax``, ``<m>.dropout``, ``<m>.matmul2``, ``<m>.out_proj``; the
weights keep their parameter names (``<m>.in_proj_weight``,
``<m>.out_proj.weight``). A self-attention call that _attn.py serves runs
there, as one unit, from its second call on (the first, op by op, records
its coverage rows); called through nn.MultiheadAttention.forward, such a call
skips the forward's own dispatch too (module_run)."""
import inspect
import math
import threading
import types

import torch
import torch.nn.functional as F

from . import _attn, _coverage, _grad
from ._scope import Frame


def _body():
    f = F.multi_head_attention_forward
    g = dict(f.__globals__)
    g["has_torch_function"] = lambda *a: False
    b = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    b.__kwdefaults__ = f.__kwdefaults__
    return b


_MHA = _body()
_MHA_SIG = inspect.signature(F.multi_head_attention_forward)
_SEP = list(_MHA_SIG.parameters).index("use_separate_proj_weight")


def _binder(func, skip=0):
    """bind(args, kwargs): the arguments of a call of func by name (its first
    `skip` parameters left out), the defaults applied (inspect's bind,
    without its cost); None when they do not bind, and the call itself
    raises PyTorch's own error."""
    sig = inspect.signature(func)
    names = list(sig.parameters)[skip:]
    defaults = {n: q.default for n, q in sig.parameters.items() if q.default is not q.empty}

    def bind(args, kwargs):
        if len(args) > len(names):
            return None
        p = dict(defaults)
        p.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in names[:len(args)]:
                return None
            p[k] = v
        return p if len(p) == len(names) else None
    return bind


#: the bound arguments of a F.multi_head_attention_forward call
_bound = _binder(F.multi_head_attention_forward)


def _arg(args, kwargs, i, name, default=None):
    """Parameter i (name) of F.multi_head_attention_forward as the call gave it."""
    return args[i] if len(args) > i else kwargs.get(name, default)


def _renamer(linears):
    counts = {}

    def rename(op):
        if op in ("bmm", "baddbmm", "matmul"):
            op = "mm"
        k = counts[op] = counts.get(op, 0) + 1
        if op == "linear":
            return linears[k - 1] if k <= len(linears) else None
        if op == "mm":
            return "matmul%d" % k if k <= 2 else None
        if op in ("softmax", "dropout") and k == 1:
            return op
        if op in ("div", "mul") and k == 1:
            return "scale"
        return None
    return rename


def _named(emu, linears, fn, *a):
    """fn(*a) in a frame of the calling module's path that names the
    attention's ops (_renamer)."""
    path = emu._stack[-1].path if emu._stack else ""
    emu._stack.append(Frame(path, False, _renamer(linears)))
    try:
        return fn(*a)
    finally:
        emu._stack.pop()


def _run_named(emu, mode, linears, fn, args, kwargs):
    """fn(*args, **kwargs) op by op: its ops through the mode, named."""
    def body():
        with mode:
            return fn(*args, **kwargs)
    return _named(emu, linears, body)


def run(emu, mode, func, args, kwargs):
    """F.multi_head_attention_forward(*args, **kwargs), emulated op by op."""
    q, k, v = (_arg(args, kwargs, i, n) for i, n in enumerate(("query", "key", "value")))
    if _arg(args, kwargs, _SEP, "use_separate_proj_weight", False):
        ins = ["in_proj_q", "in_proj_k", "in_proj_v"]
    elif q is k and k is v:
        ins = ["in_proj"]
    elif k is v:
        ins = ["in_proj_q", "in_proj_kv"]
    else:
        ins = ["in_proj_q", "in_proj_k", "in_proj_v"]
    names = ins + ["out_proj"]
    if ins != ["in_proj"] or not _attn.ENABLED:
        return _run_named(emu, mode, names, _MHA, args, kwargs)
    p = _bound(args, kwargs)
    key = _attn.key(emu, p) if p is not None else None
    if key is None:
        return _run_named(emu, mode, names, _MHA, args, kwargs)
    rows = emu._attn_rows.get(key)
    if rows is not None and (key[-1] or not emu._stats_due()):
        return _named(emu, names, _attn.run, emu, p, rows)
    # op by op, its coverage rows kept for the unit's later calls
    out, emu._attn_rows[key] = _coverage.recorded(emu, _run_named, emu, mode, names, _MHA, args, kwargs)
    return out


#: nn.MultiheadAttention.forward's bound arguments (self left out)
_mod_bound = _binder(torch.nn.MultiheadAttention.forward, 1)
_TRANSPOSE = torch.Tensor.transpose


def _mod_p(mod, b, x):
    """The bound arguments of the F.multi_head_attention_forward call that
    the module's forward (torch 1.13) makes for query = key = value = x."""
    return _bound((x, x, x, mod.embed_dim, mod.num_heads, mod.in_proj_weight, mod.in_proj_bias, mod.bias_k,
                   mod.bias_v, mod.add_zero_attn, mod.dropout, mod.out_proj.weight, mod.out_proj.bias),
                  {"training": mod.training, "key_padding_mask": b["key_padding_mask"],
                   "need_weights": b["need_weights"], "attn_mask": b["attn_mask"],
                   "average_attn_weights": b["average_attn_weights"]})


def _mod_key(emu, mod, b):
    """(the attention unit's key, layout, training) of a module call whose
    F.multi_head_attention_forward the unit would serve now, and the bound
    arguments of that call (on a stand-in for the transposed query), or
    None (run with the mode off the stack: its torch calls are not the
    model's)."""
    if not mod._qkv_same_embed_dim:
        return None
    q = b["query"]
    if not (q is b["key"] and q is b["value"]) or not isinstance(q, torch.Tensor) or q.dim() != 3:
        return None
    me = emu._scope.paths.get(id(mod))
    if me is None or not emu._stack or emu._stack[-1].path != me[0] or emu._scope.foreign:
        return None
    bf = bool(mod.batch_first)
    p = _mod_p(mod, b, q.transpose(1, 0) if bf else q)
    key = _attn.key(emu, p) if p is not None else None
    if key is None or not key[-1] and emu._stats_due():
        return None
    return (key, bf, bool(mod.training)), p


def module_run(emu, mod, args, kwargs, orig):
    """nn.MultiheadAttention.forward(mod, *args, **kwargs) while emu is active.
    A self-attention call that the unit serves (_mod_key) runs, from its
    second call on, as what the module's forward does op by op: the batch-
    first query's transpose (the view rule: emulate._view, a gradient
    source), the unit in place of F.multi_head_attention_forward (its
    frame's names, run()) and the output's transpose back, without the
    mode's dispatch of each of these calls and of the forward's checks
    (query.dim(), the dtype and is_nested attributes). The first call of a
    key runs the module's own forward and records its coverage rows, which
    each later call adds again. Any other call: the module's own forward."""
    if not _attn.serves(emu) or emu._quiet_depth or threading.get_ident() != emu._scope.thread:
        return orig(mod, *args, **kwargs)
    b = _mod_bound(args, kwargs)
    if b is None:
        return orig(mod, *args, **kwargs)
    with emu._quiet():
        kp = _mod_key(emu, mod, b)
        rows = emu._mha_rows.get(kp[0]) if kp is not None else None
        if rows is not None:
            return _module_unit(emu, b["query"], kp[1], kp[0][1], rows)
    if kp is None:
        return orig(mod, *args, **kwargs)
    out, emu._mha_rows[kp[0]] = _coverage.recorded(emu, lambda: orig(mod, *args, **kwargs))
    return out


def _module_unit(emu, q, p, bf, rows):
    """The module's forward as one unit: query q (batch first when bf), p
    the bound arguments of its F.multi_head_attention_forward call."""
    x = _transposed(emu, q) if bf else q
    p["query"] = p["key"] = p["value"] = x
    out, w = _named(emu, ["in_proj", "out_proj"], _attn.run, emu, p, rows)
    if bf:
        out = _transposed(emu, out)
    return out, w


def _transposed(emu, t):
    """t.transpose(1, 0) as the mode runs it (a use of t, the view rule, a
    gradient source for a low-precision view), with the mode off the stack."""
    (t,), _ = _grad.uses((t,), {})
    return _grad.sources(emu._view(_TRANSPOSE, (t, 1, 0), {}), emu._grad_fmt)


def sdpa_body(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    """Scaled dot-product attention as its reference formula: softmax(q k^T *
    scale + mask) (dropout) v, op by op."""
    L, S = query.size(-2), key.size(-2)
    s = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    w = torch.matmul(query, key.transpose(-2, -1))
    w = w * s
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool).tril()
        w = w.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            w = w.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            w = w + attn_mask
    w = F.softmax(w, dim=-1)
    if dropout_p > 0.0:
        w = F.dropout(w, dropout_p, training=True)
    return torch.matmul(w, value)


def sdpa(emu, mode, func, args, kwargs):
    """F.scaled_dot_product_attention (torch 2.x), emulated op by op; under
    the fp32 policy without statistics PyTorch's own kernel."""
    if emu.policy.is_fp32() and not emu._stats_due():
        return func(*args, **kwargs)
    return _run_named(emu, mode, [], sdpa_body, args, kwargs)
