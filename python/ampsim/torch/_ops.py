"""Which torch functions ampsim.torch emulates, and how.

Every entry maps a function as TorchFunctionMode sees it (torch.nn.functional,
torch.*, torch.Tensor methods and operators) to (kind, short name):

- "gemm": operands rounded into the policy's GEMM operand format, FP32
  product and accumulation, bias added before the one output rounding;
- a class of sim/policy.c ("softmax", "log_softmax", "layer_norm", "loss",
  "reduction"): computed in FP32, output FP32 when the policy forces the class,
  else in the format of its first input (PyTorch: output dtype = input dtype);
- "elementwise": output in the common format of its inputs (an FP32 input
  makes it FP32, as type promotion does), rounded once;
- "view": values unchanged, the output keeps its input's format.
Anything else passes through unchanged; when it receives a low-precision
tensor and returns a floating tensor it is listed once in the run's events.
"""
import torch
import torch.nn.functional as F

T = torch.Tensor

# (kind, name, [functions]); a missing attribute (older/newer torch) is skipped
_TABLE = [
    ("gemm", "linear", ["F.linear"]),
    ("gemm", "matmul", ["torch.matmul", "T.matmul", "T.__matmul__", "T.__rmatmul__"]),
    ("gemm", "mm", ["torch.mm", "T.mm"]),
    ("gemm", "bmm", ["torch.bmm", "T.bmm"]),
    ("gemm", "addmm", ["torch.addmm", "T.addmm"]),
    ("gemm", "baddbmm", ["torch.baddbmm", "T.baddbmm"]),
    ("gemm", "einsum", ["torch.einsum"]),
    ("gemm", "conv1d", ["F.conv1d"]),
    ("gemm", "conv2d", ["F.conv2d"]),
    ("gemm", "conv3d", ["F.conv3d"]),
    ("gemm", "conv_transpose1d", ["F.conv_transpose1d"]),
    ("gemm", "conv_transpose2d", ["F.conv_transpose2d"]),
    ("gemm", "conv_transpose3d", ["F.conv_transpose3d"]),
    ("softmax", "softmax", ["F.softmax", "torch.softmax", "T.softmax"]),
    ("log_softmax", "log_softmax", ["F.log_softmax", "torch.log_softmax", "T.log_softmax"]),
    ("layer_norm", "layer_norm", ["F.layer_norm"]),
    ("layer_norm", "group_norm", ["F.group_norm"]),
    ("layer_norm", "batch_norm", ["F.batch_norm"]),
    ("layer_norm", "instance_norm", ["F.instance_norm"]),
    ("loss", "cross_entropy", ["F.cross_entropy"]),
    ("loss", "nll_loss", ["F.nll_loss"]),
    ("loss", "mse_loss", ["F.mse_loss"]),
    ("loss", "l1_loss", ["F.l1_loss"]),
    ("loss", "smooth_l1_loss", ["F.smooth_l1_loss"]),
    ("loss", "huber_loss", ["F.huber_loss"]),
    ("loss", "binary_cross_entropy", ["F.binary_cross_entropy"]),
    ("loss", "binary_cross_entropy_with_logits", ["F.binary_cross_entropy_with_logits"]),
    ("loss", "kl_div", ["F.kl_div"]),
    ("reduction", "sum", ["torch.sum", "T.sum"]),
    ("reduction", "mean", ["torch.mean", "T.mean"]),
    ("reduction", "norm", ["torch.norm", "T.norm"]),
    ("reduction", "prod", ["torch.prod", "T.prod"]),
    ("reduction", "cumsum", ["torch.cumsum", "T.cumsum"]),
    ("reduction", "logsumexp", ["torch.logsumexp", "T.logsumexp"]),
    ("reduction", "var", ["torch.var", "T.var"]),
    ("reduction", "std", ["torch.std", "T.std"]),
    ("elementwise", "add", ["torch.add", "T.add", "T.__add__", "T.__radd__"]),
    ("elementwise", "sub", ["torch.sub", "T.sub", "T.__sub__", "T.__rsub__"]),
    ("elementwise", "mul", ["torch.mul", "T.mul", "T.__mul__", "T.__rmul__"]),
    ("elementwise", "div", ["torch.div", "T.div", "T.__truediv__", "T.__rtruediv__", "torch.true_divide"]),
    ("elementwise", "neg", ["torch.neg", "T.neg", "T.__neg__"]),
    ("elementwise", "pow", ["torch.pow", "T.pow", "T.__pow__"]),
    ("elementwise", "exp", ["torch.exp", "T.exp"]),
    ("elementwise", "log", ["torch.log", "T.log"]),
    ("elementwise", "sqrt", ["torch.sqrt", "T.sqrt"]),
    ("elementwise", "rsqrt", ["torch.rsqrt", "T.rsqrt"]),
    ("elementwise", "abs", ["torch.abs", "T.abs"]),
    ("elementwise", "clamp", ["torch.clamp", "T.clamp"]),
    ("elementwise", "maximum", ["torch.maximum"]),
    ("elementwise", "minimum", ["torch.minimum"]),
    ("elementwise", "where", ["torch.where"]),
    ("elementwise", "masked_fill", ["torch.masked_fill", "T.masked_fill"]),
    ("elementwise", "tanh", ["torch.tanh", "T.tanh", "F.tanh"]),
    ("elementwise", "sigmoid", ["torch.sigmoid", "T.sigmoid", "F.sigmoid"]),
    ("elementwise", "relu", ["F.relu", "torch.relu", "T.relu"]),
    ("elementwise", "relu6", ["F.relu6"]),
    ("elementwise", "leaky_relu", ["F.leaky_relu"]),
    ("elementwise", "elu", ["F.elu"]),
    ("elementwise", "gelu", ["F.gelu"]),
    ("elementwise", "silu", ["F.silu"]),
    ("elementwise", "mish", ["F.mish"]),
    ("elementwise", "softplus", ["F.softplus"]),
    ("elementwise", "hardtanh", ["F.hardtanh"]),
    ("elementwise", "dropout", ["F.dropout"]),
    ("elementwise", "max_pool1d", ["F.max_pool1d", "F._max_pool1d"]),
    ("elementwise", "max_pool2d", ["F.max_pool2d", "F._max_pool2d"]),
    ("elementwise", "max_pool3d", ["F.max_pool3d", "F._max_pool3d"]),
    ("elementwise", "avg_pool1d", ["F.avg_pool1d"]),
    ("elementwise", "avg_pool2d", ["F.avg_pool2d"]),
    ("elementwise", "avg_pool3d", ["F.avg_pool3d"]),
    ("elementwise", "adaptive_avg_pool1d", ["F.adaptive_avg_pool1d"]),
    ("elementwise", "adaptive_avg_pool2d", ["F.adaptive_avg_pool2d"]),
    ("elementwise", "adaptive_avg_pool3d", ["F.adaptive_avg_pool3d"]),
    ("elementwise", "pad", ["F.pad"]),
    ("elementwise", "cat", ["torch.cat"]),
    ("elementwise", "stack", ["torch.stack"]),
    ("view", "view", ["T.view", "T.reshape", "torch.reshape", "T.flatten", "torch.flatten", "T.unflatten",
                      "T.t", "torch.t", "T.transpose", "torch.transpose", "T.permute", "torch.permute",
                      "T.contiguous", "T.squeeze", "torch.squeeze", "T.unsqueeze", "torch.unsqueeze",
                      "T.expand", "T.expand_as", "T.__getitem__", "T.split", "torch.split", "T.chunk",
                      "torch.chunk", "T.narrow", "T.select", "T.unbind", "torch.unbind", "T.clone",
                      "T.detach", "T.view_as", "T.reshape_as", "T.mT", "T.T", "T.repeat"]),
]

# the F.*/torch.* objects are fixed at import; T.* methods are the objects
# TorchFunctionMode receives (C methods of _TensorBase or Python functions);
# properties (T, mT) are not mapped
OPS = {}


def _resolve(path):
    ns, _, attr = path.partition(".")
    base = {"F": F, "torch": torch, "T": T}[ns]
    if ns == "T":
        obj = T.__dict__.get(attr)
        if obj is None:
            obj = getattr(T, attr, None)
        if isinstance(obj, property) or type(obj).__name__ == "getset_descriptor":
            return None
        return obj
    return getattr(base, attr, None)


for _kind, _name, _paths in _TABLE:
    for _p in _paths:
        _f = _resolve(_p)
        if _f is not None:
            OPS[_f] = (_kind, _name)

# the bias argument of GEMM-like ops: (position, keyword)
BIAS_ARG = {"linear": (2, "bias"), "addmm": (0, "input"), "baddbmm": (0, "input"),
            "conv1d": (2, "bias"), "conv2d": (2, "bias"), "conv3d": (2, "bias"),
            "conv_transpose1d": (2, "bias"), "conv_transpose2d": (2, "bias"),
            "conv_transpose3d": (2, "bias")}

# functions that carry an inplace= flag, emulated out of place
INPLACE_KW = {"relu", "relu6", "leaky_relu", "elu", "hardtanh", "dropout", "silu", "mish"}

# function names (for the 'not emulated' events)


def func_name(func):
    """A short name for a torch function (str)."""
    n = getattr(func, "__name__", None)
    if n is None:
        n = getattr(getattr(func, "__func__", None), "__name__", None) or repr(func)
    return n
