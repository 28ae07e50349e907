"""The backward of the common GEMM forms, written out with the ops that
autograd itself runs for them, so that an emulated GEMM (_GemmFn) computes
its forward without an inner autograd graph and its backward without a
nested torch.autograd.grad (about 30 microseconds less per GEMM).

The rules are torch 1.13's (tools/autograd/derivatives.yaml and
FunctionsManual.cpp):
  mm / addmm   d mat1 = mm_mat1_backward(g, mat2, mat1):
                   mat1 column-major: (mat2 @ g^T)^T, else g @ mat2^T
               d mat2 = mm_mat2_backward(g, mat1, mat2):
                   mat2 column-major: (g^T @ mat1)^T, else mat1^T @ g
               d self (the bias) = g, reduced by sum_to to the bias's shape
  bmm          d self = g.bmm(mat2^T), d mat2 = self^T.bmm(g)
  baddbmm      the same for batch1, batch2; d self = sum_to(g, self's shape)
  linear       aten's linear is addmm(b, x, w^T) for a 2-D x with bias, and
               addmm on x.view(B*T, I) for a contiguous 3-D x with bias (viewed
               back: a reshape in the backward); w^T's gradient is transposed
               back (TBackward). Otherwise (no bias, or a 3-D x that is not
               contiguous) it is matmul(x, w^T), then x + b: matmul folds a
               3-D x whose last dimension is dense into x.reshape(-1, I)
               (a view or a contiguous copy) and runs mm; the backward is the mm
               rules on that fold, reshaped back, and sum_to(g, b's shape) of
               the add, on the output's gradient as it comes ("linear_mm").
  conv1d/2d/3d on a batched input, with numeric padding: aten's conv<k>d is
               convolution(x, w, b, stride, padding, dilation, transposed=False,
               output_padding=0, groups), whose backward is one call of
               convolution_backward with the same geometry, the bias's sizes and
               the mask of the operands that need a gradient ("conv"; the
               geometry comes from conv_geometry).
Each operand's gradient is the same tensor, with the same strides, as the
nested autograd run returns; the tests compare both paths bit for bit.

plan() answers None for every other form (matmul itself, a linear on a
4-D input or on a 3-D one whose last dimension is strided, keyword
arguments, alpha and beta, low-precision dtypes, transposed or unbatched
convolutions, padding="same"); such a GEMM keeps the inner graph."""
import torch

_CONV_ARGS = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")


def _ints(v, k):
    """A geometry argument as the list of k ints that aten's argument parser
    makes of it (an int repeated), or None."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * k
    if isinstance(v, (tuple, list)) and len(v) == k and all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        return list(v)
    return None


def conv_geometry(name, args, kwargs):
    """(stride, padding, dilation, groups) of a conv1d/2d/3d call, its
    defaults applied, or None (another op, an unknown keyword, string padding)."""
    if name not in ("conv1d", "conv2d", "conv3d") or len(args) > len(_CONV_ARGS) \
            or any(k not in _CONV_ARGS[len(args):] for k in kwargs):
        return None
    k = int(name[4])
    p = dict(zip(_CONV_ARGS, args), **kwargs)
    geo = (_ints(p.get("stride", 1), k), _ints(p.get("padding", 0), k), _ints(p.get("dilation", 1), k))
    groups = p.get("groups", 1)
    if any(v is None for v in geo) or not isinstance(groups, int) or isinstance(groups, bool):
        return None
    return geo + (groups,)


def plan(op, ts, geometry=None):
    """The form of a GEMM on operands ts (float32 tensors, in argument order;
    all its arguments, but for a convolution's geometry (conv_geometry),
    positional), or None when its backward is not written out here."""
    if geometry is not None:
        k = len(geometry[0])
        if op in ("conv1d", "conv2d", "conv3d") and len(ts) in (2, 3) and ts[0].dim() == k + 2 \
                and ts[1].dim() == k + 2 and (len(ts) == 2 or ts[2].dim() == 1):
            return "conv"
        return None
    if op == "linear":
        bias = len(ts) == 3
        if len(ts) not in (2, 3) or ts[1].dim() != 2 or bias and ts[2].dim() != 1:
            return None
        x = ts[0]
        if x.dim() == 2:
            return "linear2" if bias else "linear_mm"
        if x.dim() == 3 and x.is_contiguous() and bias:
            return "linear3"
        if x.dim() == 3 and x.stride(2) == 1:
            return "linear_mm"
        return None
    if op == "bmm" and len(ts) == 2 and ts[0].dim() == 3 and ts[1].dim() == 3:
        return "bmm"
    if op == "baddbmm" and len(ts) == 3 and ts[1].dim() == 3 and ts[2].dim() == 3:
        return "baddbmm"
    return None


def _colmajor(m):
    return m.stride(0) == 1 and m.stride(1) == m.size(0)


def _mm_mat1(g, mat2, mat1):
    return mat2.mm(g.t()).t() if _colmajor(mat1) else g.mm(mat2.t())


def _mm_mat2(g, mat1, mat2):
    return g.t().mm(mat1).t() if _colmajor(mat2) else mat1.t().mm(g)


def sum_to(g, shape):
    """at::sum_to: g summed over its leading dimensions and over the
    dimensions where shape has 1, kept, then viewed as shape."""
    shape = tuple(shape)
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [i for i in range(lead, g.dim()) if shape[i - lead] == 1 and g.size(i) != 1]
    if dims:
        g = g.sum(dims, keepdim=True)
    return g.view(shape) if lead > 0 else g


def grads(form, ts, g, need, geometry=None):
    """The gradients of operands ts (None where need[i] is false) for the
    output gradient g, by the rules above (geometry: a convolution's)."""
    out = [None] * len(ts)
    if form == "conv":
        stride, padding, dilation, groups = geometry
        b = ts[2] if len(ts) == 3 else None
        r = torch.ops.aten.convolution_backward(
            g, ts[0], ts[1], list(b.shape) if b is not None else None, stride, padding, dilation, False,
            [0] * len(stride), groups, [bool(need[0]), bool(need[1]), b is not None and bool(need[2])])
        out = [r[i] if need[i] else None for i in range(len(ts))]
    elif form in ("linear2", "linear3", "linear_mm"):
        # the product on x as a matrix (a 3-D x folded: a view when it is
        # contiguous, else the copy that reshape makes, as aten's fold does)
        x, w = ts[0], ts[1]
        mat1 = x if x.dim() == 2 else x.reshape(-1, x.size(-1))
        g2 = g if x.dim() == 2 else g.reshape(mat1.size(0), w.size(0))
        mat2 = w.t()
        if need[0]:
            d = _mm_mat1(g2, mat2, mat1)
            out[0] = d if x.dim() == 2 else d.reshape(x.shape)
        if need[1]:
            out[1] = _mm_mat2(g2, mat1, mat2).t()
        if len(ts) == 3 and need[2]:
            # addmm's bias: summed over the product's rows; the add's: over the output's shape
            out[2] = sum_to(g if form == "linear_mm" else g2, ts[2].shape)
    elif form == "bmm":
        a, m = ts
        if need[0]:
            out[0] = g.bmm(m.transpose(1, 2))
        if need[1]:
            out[1] = a.transpose(1, 2).bmm(g)
    elif form == "baddbmm":
        s, b1, b2 = ts
        if need[0]:
            out[0] = sum_to(g, s.shape)
        if need[1]:
            out[1] = g.bmm(b2.transpose(1, 2))
        if need[2]:
            out[2] = b1.transpose(1, 2).bmm(g)
    else:
        raise ValueError("ampsim.torch: no written-out backward for GEMM form %r" % (form,))
    return out


# the operands each form's backward reads (autograd saves these; an added
# bias or mask it does not, and may be changed in place after the forward)
SAVED = {"linear2": (0, 1), "linear3": (0, 1), "linear_mm": (0, 1), "bmm": (0, 1), "baddbmm": (1, 2),
         "conv": (0, 1)}
