"""Which torch functions ampsim.torch emulates, and how: the one table.

Every torch function a model can call (torch.*, torch.nn.functional.*,
torch.Tensor methods, operators and properties) is in exactly one of these
states; there is no other.

Emulated (OPS maps the function to (kind, short name)):
- "gemm": operands rounded into the policy's GEMM operand format, FP32
  product and accumulation, bias added before the one output rounding;
- a class of sim/policy.c ("softmax", "log_softmax", "layer_norm", "loss",
  "reduction"): computed in FP32, output FP32 when the policy forces the class,
  else in the format of its first input (PyTorch: output dtype = input dtype);
- "batch_norm" (batch and instance norm, on neither autocast's FP32 list):
  computed in FP32, output in the format of its first input, as PyTorch's
  batch norm takes a half or bfloat16 input with FP32 weights and statistics
  (cuDNN's and the native CUDA and CPU kernels) and returns the input's dtype;
- "elementwise": output in the common format of its inputs (an FP32 input
  makes it FP32, as type promotion does), rounded once;
- "view": values unchanged (a view, a copy, a selection such as max pooling
  or gather), the output keeps its input's format;
- "inplace": the in-place form of an elementwise op (``add_``, ``+=``,
  ``relu_``): computed as the out-of-place op, rounded, written back;
- "embedding": the weight read in the policy's weight format;
- "mha", "sdpa", "rnn", "rnn_cell": decomposed into the ops above and
  emulated op by op under the module's name (_mha.py, _rnn.py).

Classified, not emulated (CLASSES maps the function to its class):
- "fp32": the policy runs it in FP32 (autocast's FP32 lists: linear
  algebra, FFTs, histograms, quantization; and values a model creates,
  random fills and factories); its output is FP32;
- "no_float": its result is not a floating tensor (integer or boolean
  output: comparisons, indices; sizes, flags and other metadata);
- "gemm_unrounded": a GEMM-like op ampsim.torch cannot emulate (sparse,
  quantized, vendor kernels); ``emulate(strict=True)`` refuses it.
"""
import math

import torch
import torch.nn.functional as F

T = torch.Tensor
_NN = torch._C._nn        # the C functions under F's Python wrappers
_NS = {"F": F, "torch": torch, "T": T, "nn": _NN}
_SPLIT = str.split

# ---- emulated ---------------------------------------------------------------------------
# (kind, name, functions): a bare word is looked up in F, torch and Tensor
# (each that has it); "ns.word" in that namespace only; missing ones skipped
_TABLE = [
    ("gemm", "linear", ["linear"]),
    ("gemm", "matmul", ["matmul", "T.__matmul__", "T.__rmatmul__"]),
    ("gemm", "mm", ["mm"]), ("gemm", "bmm", ["bmm"]), ("gemm", "addmm", ["addmm"]),
    ("gemm", "baddbmm", ["baddbmm"]), ("gemm", "addbmm", ["addbmm"]), ("gemm", "einsum", ["einsum"]),
    ("gemm", "mv", ["mv"]), ("gemm", "addmv", ["addmv"]), ("gemm", "dot", ["dot", "vdot", "inner"]),
    ("gemm", "outer", ["outer", "ger"]), ("gemm", "addr", ["addr"]), ("gemm", "tensordot", ["tensordot"]),
    ("gemm", "chain_matmul", ["chain_matmul"]), ("gemm", "bilinear", ["bilinear"]),
    ("gemm", "conv1d", ["conv1d"]), ("gemm", "conv2d", ["conv2d"]), ("gemm", "conv3d", ["conv3d"]),
    ("gemm", "conv_transpose1d", ["conv_transpose1d"]), ("gemm", "conv_transpose2d", ["conv_transpose2d"]),
    ("gemm", "conv_transpose3d", ["conv_transpose3d"]), ("gemm", "conv_tbc", ["conv_tbc"]),
    ("gemm", "convolution", ["convolution"]),
    ("embedding", "embedding", ["F.embedding", "torch.embedding"]),
    ("embedding", "embedding_bag", ["F.embedding_bag", "torch.embedding_bag"]),
    ("mha", "mha", ["F.multi_head_attention_forward"]),
    ("sdpa", "sdpa", ["F.scaled_dot_product_attention"]),
    ("rnn", "lstm", ["torch.lstm"]), ("rnn", "gru", ["torch.gru"]),
    ("rnn", "rnn_tanh", ["torch.rnn_tanh"]), ("rnn", "rnn_relu", ["torch.rnn_relu"]),
    ("rnn_cell", "lstm_cell", ["torch.lstm_cell"]), ("rnn_cell", "gru_cell", ["torch.gru_cell"]),
    ("rnn_cell", "rnn_tanh_cell", ["torch.rnn_tanh_cell"]), ("rnn_cell", "rnn_relu_cell", ["torch.rnn_relu_cell"]),
    ("softmax", "softmax", ["softmax", "softmin", "gumbel_softmax"]),
    ("log_softmax", "log_softmax", ["log_softmax"]),
    ("layer_norm", "layer_norm", ["layer_norm", "rms_norm"]), ("layer_norm", "group_norm", ["group_norm"]),
    ("batch_norm", "batch_norm", ["batch_norm"]), ("batch_norm", "instance_norm", ["instance_norm"]),
    ("layer_norm", "local_response_norm", ["local_response_norm"]), ("layer_norm", "normalize", ["normalize"]),
    ("loss", "cross_entropy", ["cross_entropy"]), ("loss", "nll_loss", ["nll_loss"]),
    ("loss", "mse_loss", ["mse_loss"]), ("loss", "l1_loss", ["l1_loss"]),
    ("loss", "smooth_l1_loss", ["smooth_l1_loss"]), ("loss", "huber_loss", ["huber_loss"]),
    ("loss", "binary_cross_entropy", ["binary_cross_entropy"]),
    ("loss", "binary_cross_entropy_with_logits", ["binary_cross_entropy_with_logits"]),
    ("loss", "kl_div", ["kl_div"]),
    ("loss", "other_loss", _SPLIT("cosine_embedding_loss ctc_loss gaussian_nll_loss hinge_embedding_loss "
                                  "margin_ranking_loss multi_margin_loss multilabel_margin_loss "
                                  "multilabel_soft_margin_loss poisson_nll_loss soft_margin_loss "
                                  "triplet_margin_loss triplet_margin_with_distance_loss")),
    ("reduction", "sum", ["sum", "nansum"]), ("reduction", "mean", ["mean", "nanmean"]),
    ("reduction", "norm", ["norm", "frobenius_norm", "nuclear_norm", "renorm", "norm_except_dim"]),
    ("reduction", "prod", ["prod"]), ("reduction", "cumsum", ["cumsum", "cumprod", "logcumsumexp"]),
    ("reduction", "logsumexp", ["logsumexp"]),
    ("reduction", "var", ["var", "var_mean"]), ("reduction", "std", ["std", "std_mean"]),
    ("reduction", "distance", _SPLIT("dist cdist pdist cosine_similarity pairwise_distance")),
    ("reduction", "quantile", ["quantile", "nanquantile"]),
    ("reduction", "trapezoid", _SPLIT("trapezoid trapz cumulative_trapezoid trace diff index_reduce "
                                      "segment_reduce scatter_reduce")),
    ("elementwise", "add", ["add", "T.__add__", "T.__radd__"]),
    ("elementwise", "sub", ["sub", "subtract", "rsub", "T.__sub__", "T.__rsub__"]),
    ("elementwise", "mul", ["mul", "multiply", "T.__mul__", "T.__rmul__"]),
    ("elementwise", "div", ["div", "divide", "true_divide", "T.__truediv__", "T.__rtruediv__",
                            "T.__div__", "T.__rdiv__"]),
    ("elementwise", "floor_divide", ["floor_divide", "T.__floordiv__", "T.__rfloordiv__"]),
    ("elementwise", "remainder", ["remainder", "fmod", "T.__mod__", "T.__rmod__"]),
    ("elementwise", "neg", ["neg", "negative", "T.__neg__"]),
    # autocast's FP32 list of pointwise ops (CUDA): computed in FP32, output FP32
    # where the policy forces its reductions to FP32 (the CUDA lists), else in
    # the input's format (the CPU list, which does not hold them)
    ("reduction", "pow", ["pow", "float_power", "T.__pow__", "T.__rpow__"]),
] + [("reduction", _n, [_n]) for _n in _SPLIT(
    "acos arccos asin arcsin cosh sinh tan erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt softplus")
] + [
    ("elementwise", "abs", ["abs", "absolute", "T.__abs__"]),
    ("elementwise", "clamp", ["clamp", "clip", "clamp_min", "clamp_max"]),
    ("elementwise", "masked_fill", ["masked_fill"]),
    ("elementwise", "where", ["where"]),
    ("elementwise", "dropout", _SPLIT("dropout dropout1d dropout2d dropout3d alpha_dropout "
                                      "feature_alpha_dropout feature_dropout")),
    ("elementwise", "pad", ["pad", "constant_pad_nd"]),
    ("elementwise", "cat", _SPLIT("cat concat concatenate stack hstack vstack dstack column_stack row_stack")),
] + [("elementwise", _n, [_n]) for _n in _SPLIT(
    # pointwise math
    "exp2 sqrt square sin cos atan arctan tanh asinh acosh atanh arcsinh arccosh arctanh atan2 arctan2 "
    "sigmoid logit erf erfc lgamma digamma polygamma mvlgamma i0 sinc igamma igammac xlogy "
    "ceil floor round trunc fix frac sign sgn copysign hypot nextafter ldexp lerp logaddexp logaddexp2 "
    "heaviside cross deg2rad rad2deg nan_to_num maximum minimum fmax fmin addcmul addcdiv "
    # activations
    "relu relu6 leaky_relu elu selu celu gelu silu mish softshrink hardshrink tanhshrink "
    "softsign hardtanh hardswish hardsigmoid threshold _threshold rrelu glu logsigmoid log_sigmoid prelu "
    # pooling, resampling, scattering of values
    "avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d "
    "lp_pool1d lp_pool2d interpolate upsample upsample_nearest upsample_bilinear grid_sample "
    "grid_sampler grid_sampler_2d grid_sampler_3d affine_grid affine_grid_generator fold col2im im2col "
    "upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d upsample_bilinear2d "
    "upsample_bicubic2d upsample_trilinear3d reflection_pad1d reflection_pad2d reflection_pad3d "
    "replication_pad1d replication_pad2d replication_pad3d _pad_circular _pad_enum "
    "index_add index_fill index_copy index_put masked_scatter scatter scatter_add put "
    # composites whose products are matmul's or bmm's (INNER_AUTOCAST)
    "cov corrcoef matrix_power")]

_VIEWS = _SPLIT(
    "view reshape flatten unflatten ravel t transpose swapaxes swapdims moveaxis movedim permute adjoint "
    "contiguous squeeze unsqueeze expand expand_as broadcast_to broadcast_tensors atleast_1d atleast_2d "
    "atleast_3d __getitem__ __setitem__ split split_with_sizes tensor_split hsplit vsplit dsplit chunk "
    "unsafe_chunk unsafe_split unsafe_split_with_sizes narrow select unbind clone detach view_as "
    "reshape_as repeat repeat_interleave tile flip fliplr flipud roll rot90 diag diagonal diag_embed "
    "diagflat tril triu gather take take_along_dim index_select masked_select as_strided unfold "
    "pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle block_diag cartesian_prod "
    "combinations meshgrid positive conj conj_physical resolve_conj resolve_neg copy_ set_ resize_ "
    "resize_as_ resize resize_as sum_to_size align_as align_to refine_names rename "
    "max min amax amin aminmax median nanmedian kthvalue mode sort msort topk cummax cummin "
    "max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices "
    "max_pool3d_with_indices _max_pool1d _max_pool2d _max_pool3d adaptive_max_pool1d adaptive_max_pool2d "
    "adaptive_max_pool3d adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices "
    "adaptive_max_pool3d_with_indices _adaptive_max_pool1d _adaptive_max_pool2d _adaptive_max_pool3d "
    "_fractional_max_pool2d _fractional_max_pool3d _conj_copy _fw_primal_copy _indices_copy _make_dual_copy "
    "_neg_view_copy _reshape_alias_copy _sparse_broadcast_to_copy _values_copy fractional_max_pool2d fractional_max_pool3d "
    "fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices max_unpool1d max_unpool2d "
    "max_unpool3d alias_copy as_strided_copy ccol_indices_copy col_indices_copy crow_indices_copy "
    "detach_copy diagonal_copy expand_copy indices_copy narrow_copy permute_copy row_indices_copy "
    "select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy transpose_copy "
    "unbind_copy unfold_copy unsqueeze_copy values_copy view_as_real_copy view_copy as_strided_scatter "
    "diagonal_scatter select_scatter slice_scatter _autocast_to_full_precision _autocast_to_reduced_precision "
    "_conj _conj_physical _neg_view as_subclass")
_TABLE.append(("view", "view", _VIEWS))

#: views whose backward adds the gradients of an element picked more than once
#: (overlapping pooling windows, repeated indices): under a torch_cpu policy
#: they run on real low-precision tensors (_handlers._lowp_selection)
SUMMING_SELECTIONS = frozenset(
    "max_pool1d max_pool2d max_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d "
    "fractional_max_pool2d fractional_max_pool3d gather take take_along_dim index_select".split())

# ---- classified, not emulated -------------------------------------------------------------
_FP32 = _SPLIT(
    # dtype and device conversions: an FP32 (or other dtype) tensor; x.float() of
    # an emulated tensor is a cast to FP32 (_grad.widened)
    "to type_as float cpu cuda ipu xpu half bfloat16 double cfloat cdouble chalf type "
    # linear algebra, spectral, statistics: autocast's FP32 lists
    "cholesky cholesky_inverse cholesky_solve det logdet slogdet inverse pinverse lu lu_solve lu_unpack "
    "qr svd svd_lowrank pca_lowrank symeig geqrf orgqr ormqr triangular_solve matrix_exp "
    "lobpcg native_norm stft istft polar complex view_as_complex view_as_complex_copy "
    "view_as_real real imag angle histc histogram histogramdd frexp gradient kron "
    # values a model creates: factories, random fills, fills
    "empty_like zeros_like ones_like full_like rand_like randn_like normal_ uniform_ bernoulli bernoulli_ "
    "binomial poisson multinomial exponential_ cauchy_ geometric_ log_normal_ random_ fill_ zero_ "
    "fill_diagonal_ zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "as_tensor from_numpy empty_strided scalar_tensor normal full_like range tril_indices triu_indices "
    "new_zeros new_ones new_full new_empty new_tensor new_empty_strided "
    # batch norm internals, native kernels, quantization, sparse
    "batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats "
    "batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats native_batch_norm "
    "native_dropout native_group_norm native_layer_norm miopen_batch_norm quantized_batch_norm "
    "quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic dequantize "
    "fake_quantize_per_channel_affine fake_quantize_per_tensor_affine fused_moving_avg_obs_fake_quant "
    "choose_qparams_optimized quantized_max_pool1d quantized_max_pool2d int_repr q_per_channel_scales "
    "q_per_channel_zero_points coalesce _coalesced_ indices values _indices _values to_dense _to_dense "
    "to_sparse to_mkldnn sparse_mask sparse_resize_ sparse_resize_and_clear_ resize_as_sparse_ "
    "crow_indices col_indices ccol_indices row_indices apply_ map_ map2_ numpy _rowwise_prune "
    "eig lstsq solve new to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc to_padded_tensor "
    "_nested_tensor_layer_norm _weight_norm _weight_norm_interface")
_NO_FLOAT = _SPLIT(
    "eq ne lt le gt ge greater greater_equal less less_equal not_equal equal allclose isclose isfinite "
    "isinf isnan isneginf isposinf isreal isin signbit logical_and logical_or logical_xor logical_not "
    "bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift gcd lcm "
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __or__ __xor__ __invert__ __lshift__ __rshift__ "
    "__rand__ __ror__ __rxor__ __rlshift__ __rrshift__ __iand__ __ior__ __ixor__ __ilshift__ __irshift__ "
    "__getstate__ __reduce__ __sizeof__ __str__ __delattr__ __delitem__ __dir__ __getattribute__ __setattr__ "
    "__torch_dispatch__ __torch_function__ _fix_weakref _is_zerotensor _make_subclass _make_wrapper_subclass "
    "_reduce_ex_internal reinforce argmax argmin argsort argwhere nonzero "
    "count_nonzero bincount bucketize searchsorted all any unique unique_consecutive one_hot "
    "randint_like long int short char byte bool size dim numel nelement ndimension element_size stride "
    "storage_offset data_ptr item tolist __len__ __bool__ __float__ __int__ __index__ __complex__ "
    "__long__ __nonzero__ __repr__ __format__ __reduce_ex__ __deepcopy__ __setstate__ __array__ "
    "__array_wrap__ __dlpack__ __dlpack_device__ __contains__ __reversed__ __iter__ __hash__ get_device "
    "has_names dense_dim sparse_dim storage storage_type _storage qscheme q_scale q_zero_point "
    "q_per_channel_axis record_stream pin_memory share_memory_ backward register_hook retain_grad "
    "requires_grad_ detach_ is_coalesced is_complex is_conj is_contiguous is_distributed "
    "is_floating_point is_inference is_neg is_nonzero is_pinned is_same_size is_set_to is_shared "
    "is_signed is_nonzero _dimI _dimV _is_view _nested_tensor_size _nnz _update_names is_tensor "
    "is_storage numel result_type can_cast promote_types _assert_async _assert")
# no_float functions whose results carry no gradient at all (metadata, flags,
# comparisons, indices, Python numbers): not uses of their tensors (_grad.py),
# so x.dim() before x's consumer (a BatchNorm's input check) adds no use node.
# (__iter__, copies, in-place flag setters and the like stay uses.)
NO_USE_NAMES = frozenset(_SPLIT(
    "eq ne lt le gt ge greater greater_equal less less_equal not_equal equal allclose isclose isfinite "
    "isinf isnan isneginf isposinf isreal isin signbit logical_and logical_or logical_xor logical_not "
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ argmax argmin argsort argwhere nonzero count_nonzero "
    "size dim numel nelement ndimension element_size stride storage_offset data_ptr item tolist __len__ "
    "__bool__ __float__ __int__ __index__ __complex__ __long__ __nonzero__ __repr__ __format__ __hash__ "
    "get_device has_names dense_dim sparse_dim is_coalesced is_complex is_conj is_contiguous "
    "is_distributed is_floating_point is_inference is_neg is_nonzero is_pinned is_same_size is_set_to "
    "is_shared is_signed _is_view _nnz is_tensor result_type can_cast promote_types _assert _assert_async"))
_GEMM_UNROUNDED = _SPLIT(
    "dsmm hsmm smm saddmm spmm sspaddmm hspmm fbgemm_linear_fp16_weight "
    "fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight "
    "fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight fbgemm_pack_gemm_matrix_fp16 "
    "fbgemm_pack_quantized_matrix miopen_convolution miopen_convolution_add_relu miopen_convolution_relu "
    "miopen_convolution_transpose miopen_depthwise_convolution miopen_rnn quantized_gru_cell "
    "quantized_lstm_cell quantized_rnn_relu_cell quantized_rnn_tanh_cell matrix_rank "
    "_addmm_activation")
# Tensor properties (the mode sees their __get__): the views keep the format
_VIEW_PROPS = ("T", "mT", "H", "mH", "real")
# accessors of a tensor's FP32 companions (its gradient, its storage view)
_FP32_PROPS = ("data", "grad", "_grad", "_base")
_INIT = ("uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
         "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_", "sparse_")

OPS = {}            # function -> (kind, name): emulated
CLASSES = {}        # function -> "fp32" | "no_float" | "gemm_unrounded": classified
INPLACE_OF = {}     # in-place function -> its out-of-place form
KIND = {}           # short name -> kind


def _resolve(path):
    """The function objects a table word names (list)."""
    ns, _, attr = path.rpartition(".")
    spaces = [_NS[ns]] if ns else [F, torch, T, _NN]
    out = []
    for base in spaces:
        obj = base.__dict__.get(attr) if base is T else getattr(base, attr, None)
        if obj is None and base is T:
            obj = getattr(T, attr, None)
        if obj is None or isinstance(obj, property) or type(obj).__name__ == "getset_descriptor":
            continue
        if not callable(obj) or isinstance(obj, type):
            continue
        out.append(obj)
    return out


def _word(path):
    return path.rpartition(".")[2]


def _add_inplace(path, name):
    """The in-place forms of an elementwise function: word_ in torch and
    Tensor, and the augmented operator (__iadd__ for __add__)."""
    ns, _, w = path.rpartition(".")
    forms = []
    if w.startswith("__") and not w.startswith("__r"):
        forms.append(("T.__i" + w[2:], "T." + w))
    elif not w.startswith("_"):
        for n in ("torch", "T", "F", "nn"):
            if not ns or ns == n:
                forms.append((n + "." + w + "_", n + "." + w))
    for ip, op in forms:
        fi, fo = _resolve(ip), _resolve(op)
        if fi and fo and fi[0] not in OPS:
            OPS[fi[0]] = ("inplace", name)
            INPLACE_OF[fi[0]] = fo[0]


# autocast's FP32 pointwise ops: "reduction" kind, in-place forms as any pointwise op's
_FP32_POINTWISE = set(_SPLIT("pow acos arccos asin arcsin cosh sinh tan erfinv exp expm1 log log10 log2 "
                             "log1p reciprocal rsqrt softplus"))
for _kind, _name, _paths in _TABLE:
    KIND[_name] = _kind
    for _p in _paths:
        for _f in _resolve(_p):
            OPS.setdefault(_f, (_kind, _name))
        if _kind == "elementwise" or _name in _FP32_POINTWISE:
            _add_inplace(_p, _name)
        elif _kind == "view":          # squeeze_, t_, transpose_ ...: still a view
            for _f in _resolve(_word(_p) + "_"):
                OPS.setdefault(_f, ("view", "view"))
# the in-place GEMMs (x.addmm_(a, b): the product emulated, written back) and
# in-place reductions along a dimension (x.cumsum_(0): in x's format, as an
# in-place op keeps its tensor's dtype under autocast)
for _w in ("addmm", "baddbmm", "addbmm", "addmv", "addr", "cumsum", "cumprod", "renorm", "scatter_reduce",
           "index_reduce"):
    _fo = _resolve("T." + _w)
    _add_inplace("T." + _w, OPS[_fo[0]][1] if _fo and _fo[0] in OPS else _w)
for _cls, _words in (("fp32", _FP32), ("no_float", _NO_FLOAT), ("gemm_unrounded", _GEMM_UNROUNDED)):
    for _w in _words:
        for _f in _resolve(_w) + _resolve(_w + "_"):
            if _f not in OPS:
                CLASSES.setdefault(_f, _cls)
for _w in ("_record_function_enter", "_record_function_enter_new", "_record_function_exit",
           "_record_function_exit_new"):         # the profiler's markers (optimizers' step)
    _f = getattr(getattr(torch.ops, "profiler", None), _w, None)
    if _f is not None:
        CLASSES[_f] = "no_float"
CLASSES[torch.autograd.grad] = "no_float"          # (a backward: create_graph is refused, _handlers.py)
for _w in _INIT:
    _f = getattr(torch.nn.init, _w, None)
    if _f is not None:
        CLASSES[_f] = "fp32"
for _n, _d in list(torch._C._TensorBase.__dict__.items()) + list(T.__dict__.items()):
    if type(_d).__name__ == "getset_descriptor" or isinstance(_d, property):
        _g = _d.__get__
        if _n in _VIEW_PROPS:
            OPS[_g] = ("view", "view")
        else:
            CLASSES[_g] = "fp32" if _n in _FP32_PROPS else "no_float"
for _n in ("T", "mT", "H", "mH", "data", "grad", "real", "imag", "shape", "dtype", "device", "ndim",
           "requires_grad", "is_leaf", "grad_fn", "layout", "names", "is_cuda", "is_cpu", "_version"):
    _d = getattr(torch._C._TensorBase, _n, None)
    if _d is not None and hasattr(_d, "__get__"):
        _g = _d.__get__
        if _g not in OPS and _g not in CLASSES:
            if _n in _VIEW_PROPS:
                OPS[_g] = ("view", "view")
            else:
                CLASSES[_g] = "fp32" if _n in _FP32_PROPS else "no_float"

# torch.linalg, torch.fft, torch.special, whole namespaces: linear algebra and
# FFTs run in FP32 (autocast's lists) but for the products and norms;
# the special functions are pointwise
for _mod, _cls in ((getattr(torch, "linalg", None), "fp32"), (getattr(torch, "fft", None), "fp32"),
                   (getattr(torch, "special", None), "elementwise")):
    if _mod is None:
        continue
    for _n in dir(_mod):
        _f = getattr(_mod, _n)
        if _n.startswith("_") or not callable(_f) or _f in OPS or _f in CLASSES:
            continue
        if _n in ("matmul", "multi_dot", "vecdot"):
            OPS[_f] = ("gemm", "matmul" if _n != "vecdot" else "dot")
        elif _n == "matrix_power":
            OPS[_f] = ("elementwise", _n)
        elif _n in ("vector_norm", "norm", "matrix_norm", "logsumexp"):
            OPS[_f] = ("reduction", "norm" if _n != "logsumexp" else "logsumexp")
        elif _n in ("softmax", "log_softmax"):
            OPS[_f] = (_n, _n)
        elif _cls == "elementwise" and _n not in ("zeta",):
            OPS[_f] = ("elementwise", _n)
        else:
            CLASSES[_f] = "fp32"

# ---- PyTorch's CPU autocast lists (policies with "kernels": "torch_cpu") ----------------
# Where torch 1.13's CPU lists differ from the CUDA ones the table above follows:
# these functions are on its FP32 list (inputs cast to float32, output
# float32, whatever the input's dtype), measured against torch.autocast("cpu")
# by test_torch_cover.py; F.pad with mode "reflect" on 3-D and 4-D inputs and
# "replicate" on 3-D to 5-D inputs runs its reflection_pad / replication_pad
# kernels, also on that list.
_CPU_FP32 = _SPLIT(
    "conv_transpose1d conv_transpose2d conv_transpose3d avg_pool3d adaptive_avg_pool3d max_pool3d "
    "max_pool3d_with_indices adaptive_max_pool3d adaptive_max_pool3d_with_indices max_unpool2d max_unpool3d "
    "fractional_max_pool2d fractional_max_pool3d fractional_max_pool2d_with_indices "
    "fractional_max_pool3d_with_indices reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d "
    "replication_pad3d grid_sample grid_sampler grid_sampler_2d grid_sampler_3d prod quantile nanquantile "
    "cdist trace")
#: GEMM-like functions on neither CPU list: they run in the dtype they are
#: given (bf16 operands: a bf16 product; float32 ones: float32)
_CPU_UNLISTED_GEMMS = _SPLIT("mv addmv dot vdot outer ger addr bilinear convolution")
CPU_FP32 = set()
CPU_UNLISTED_GEMMS = set()
for _words, _set in ((_CPU_FP32, CPU_FP32), (_CPU_UNLISTED_GEMMS, CPU_UNLISTED_GEMMS)):
    for _w in _words:
        _set.update(_f for _f in _resolve(_w) if _f in OPS)
_CPU_FP32_PAD = {"reflect": (3, 4), "replicate": (3, 4, 5)}

#: functions on neither of torch 1.13's CPU autocast lists whose C++ bodies
#: call ops that are, which CPU autocast casts to bf16 even on FP32 inputs:
#: F.bilinear's _trilinear multiplies with bmm (the sum with the bias then
#: promotes to FP32; autograd records _trilinear itself, whose backward runs
#: in the dtypes it saved), affine_grid's generator with bmm, matrix_power
#: and cov (and corrcoef, over cov) with matmul and mm. The function mode
#: sees only the outer call: under a torch_cpu policy it runs under autocast
#: even when its inputs are all FP32 (_lowp.call() runs every call it makes so).
INNER_AUTOCAST = frozenset(("bilinear", "affine_grid", "affine_grid_generator", "cov", "corrcoef",
                            "matrix_power"))


def cpu_fp32(func, name, args, kwargs):
    """True when torch 1.13's CPU autocast runs this call in FP32 (its FP32 list)."""
    if func in CPU_FP32:
        return True
    if name != "pad":
        return False
    x = args[0] if args else kwargs.get("input")
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    return isinstance(x, torch.Tensor) and x.dim() in _CPU_FP32_PAD.get(mode, ())


# Tensor.__getitem__ as an emulation installs it (_fastmode.getitem): a view
from . import _fastmode as _fm  # noqa: E402
OPS[_fm.getitem] = ("view", "view")
# x[idx] = v: a write into x, whose value is rounded into x's format (_handlers._setitem)
for _f in (_fm.setitem, T.__setitem__):
    OPS[_f] = ("view", "setitem")

# the bias argument of GEMM-like ops: (position, keyword)
BIAS_ARG = {"linear": (2, "bias"), "addmm": (0, "input"), "baddbmm": (0, "input"), "addbmm": (0, "input"),
            "addmv": (0, "input"), "addr": (0, "input"), "bilinear": (3, "bias"), "convolution": (2, "bias"),
            "conv_tbc": (2, "bias"),
            "conv1d": (2, "bias"), "conv2d": (2, "bias"), "conv3d": (2, "bias"),
            "conv_transpose1d": (2, "bias"), "conv_transpose2d": (2, "bias"),
            "conv_transpose3d": (2, "bias")}

# functions whose floating tensors PyTorch's kernels require in one dtype and
# which autocast does not cast (on none of its lists): under autocast, a bf16
# source into an FP32 tensor raises (index_add_(): self (Float) and source
# (BFloat16) must have the same scalar type), and so does the emulation
SAME_DTYPE = frozenset(("index_add", "index_copy", "index_put", "masked_scatter", "scatter", "scatter_add", "put",
                        "lerp"))

# functions that carry an inplace= flag, emulated out of place
INPLACE_KW = {"relu", "relu6", "leaky_relu", "elu", "selu", "celu", "hardtanh", "dropout", "silu", "mish",
              "hardswish", "hardsigmoid", "threshold", "rrelu"}


def classify(func):
    """(state, kind or class, name) of a torch function: ("emulated", kind,
    name), ("classified", class, name) or ("unclassified", None, name)."""
    op = OPS.get(func)
    if op is not None:
        return ("emulated", op[0], op[1])
    c = CLASSES.get(func)
    if c is not None:
        return ("classified", c, func_name(func))
    return ("unclassified", None, func_name(func))


def func_name(func):
    """A short name for a torch function (str)."""
    n = getattr(func, "__name__", None)
    if n == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", "property")
    if n is None:
        n = getattr(getattr(func, "__func__", None), "__name__", None) or repr(func)
    return n


def gemm_macs(name, args, kwargs, out):
    """Multiply-adds of a GEMM-like call from its operands and output (0 where
    the form is not known)."""
    try:
        if not isinstance(out, torch.Tensor):
            return 0
        n = out.numel()
        a = [x for x in args if isinstance(x, torch.Tensor)]
        if name in ("linear", "mm", "bmm", "matmul", "mv", "dot", "outer", "addr"):
            return n * (a[0].shape[-1] if a[0].dim() and name not in ("outer", "addr") else 1)
        if name in ("addmm", "baddbmm", "addbmm", "addmv"):
            return n * a[1].shape[-1] * (a[1].shape[0] if name == "addbmm" else 1)
        # (a weight's row, w[0], counted from its shape: no view made)
        if name.startswith("conv_transpose"):
            return a[0].numel() * (math.prod(a[1].shape[1:]) if a[1].dim() else 1)
        if name.startswith("conv"):
            w = a[1] if len(a) > 1 else kwargs.get("weight")
            if not w.dim():
                return 0
            return n * (math.prod(w.shape[1:]) // (w.shape[-1] if name == "conv_tbc" else 1))
        if name == "bilinear":
            return n * a[0].shape[-1] * a[1].shape[-1]
        if name == "einsum":
            eq = args[0]
            ops = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:]
            if "..." in eq:
                return 0
            sizes = {}
            for term, t in zip(eq.split("->")[0].split(","), ops):
                for c, s in zip(term.strip(), t.shape):
                    sizes[c] = s
            m = 1
            for s in sizes.values():
                m *= s
            return m
    except (IndexError, AttributeError, TypeError, ValueError):
        return 0
    return 0
