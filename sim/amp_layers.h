/* ampsim — layers as forward/backward pairs (llm.c style): the MLP's layers
 * on registered tensors, and the transformer's float32 kernels, whose inputs
 * and outputs the model rounds through the policy. */
#ifndef AMP_LAYERS_H
#define AMP_LAYERS_H

#include <stddef.h>
#include <stdint.h>
#include "amp_base.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_policy.h"
#include "amp_tensor.h"

/* ---- layers -------------------------------------------------------------------- */
/* The context a layer needs: registry (roundings, stats), policy, scratch. */
typedef struct amp_ctx {
    amp_tensors *reg;
    const amp_policy *pol;
    amp_gemm_cfg gemm;
    float *scratch;          /* FP32 GEMM results before their rounding */
    size_t scratch_n;
} amp_ctx;
AMP_API amp_status amp_ctx_init(amp_ctx *cx, amp_tensors *reg, const amp_policy *pol);
AMP_API void amp_ctx_free(amp_ctx *cx);
/* scratch of at least n floats (grown as needed). */
AMP_API amp_status amp_ctx_scratch(amp_ctx *cx, size_t n, float **out);
/* Registers weight `name` (role weight, format wf; FP8 formats get the policy's
 * operand flags), its gradient "<name>.grad" (role weight_grad, format gf), its
 * FP32 gradient buffer grad32 and, when the policy keeps masters, its master
 * "<name>.master" (role master, the policy's master format). */
AMP_API amp_status amp_ctx_add_weight(amp_ctx *cx, const char *name, const amp_format *wf, const amp_format *gf,
                                      int ndim, const size_t *shape, amp_tensor **out);
/* Stores initial values v (w->n floats) into weight w: copied into its master
 * and rounded into w's format (the cast), or only rounded when w has no master. */
AMP_API amp_status amp_ctx_set_weight(amp_ctx *cx, amp_tensor *w, const float *v);

/* 1 when the policy's GEMMs run in amp_gemm_pairs' order: "kernels":
 * "torch_cpu" with every GEMM operand of at most 16 bits and FP32 accumulation. */
AMP_API int amp_ctx_pairs(const amp_ctx *cx);
/* C [M,N] (= or +=, beta 0 or 1) A' B' as amp_gemm (A' = A or A^T by ta, B'
 * likewise), through the kernel the policy's GEMMs use: amp_gemm_pairs (the
 * order of PyTorch's CPU bf16 GEMMs, oneDNN's) when amp_ctx_pairs, else amp_gemm. */
AMP_API void amp_ctx_gemm(const amp_ctx *cx, int ta, int tb, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc);
/* amp_ctx_gemm, returning how many results are inf or NaN (amp_gemm_count). */
AMP_API size_t amp_ctx_gemm_count(const amp_ctx *cx, int ta, int tb, int M, int N, int K, const float *A, int lda,
                                  const float *B, int ldb, float beta, float *C, int ldc);

/* Linear: out[B,O] = act( in_op[B,I] @ w[O,I]^T + b[O] ), rounded once into out->fmt.
 * in_op is `in` when in->fmt is the forward operand format, else a registered
 * operand copy "<name>.input" (role act). gout_op likewise for the gradient. */
typedef struct amp_linear {
    amp_tensor *w, *b;       /* weight [O,I], bias [O] (NULL: no bias) */
    amp_tensor *in, *in_op;  /* input [B,I] and the operand the GEMM sees */
    amp_tensor *out;         /* [B,O] */
    amp_tensor *gout_op;     /* out->grad as a backward operand (NULL: same) */
    amp_tensor *wg_in, *wg_gout;  /* NVFP4 layers: the wgrad GEMM's operands, in^T and
                              * out->grad^T (sim/amp_nvfp4.h); NULL: in_op and gout_op */
    int B, I, O;
} amp_linear;
/* Registers <name>.weight, .bias, .out (+ grads, operand copies). in->grad may be NULL. */
AMP_API amp_status amp_linear_init(amp_ctx *cx, amp_linear *l, const char *name, amp_tensor *in, int O, int bias);
AMP_API amp_status amp_linear_forward(amp_ctx *cx, amp_linear *l);
AMP_API amp_status amp_linear_backward(amp_ctx *cx, amp_linear *l);

/* ReLU: out = max(in, 0), same format as in (exact); backward dIn += dOut * (out > 0). */
AMP_API amp_status amp_relu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in);
AMP_API amp_status amp_relu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *out);

/* GELU (tanh approximation), output in the input's format; backward needs the input. */
AMP_API amp_status amp_act_gelu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in);
AMP_API amp_status amp_act_gelu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *in);
/* The MLP's activation, by kind. */
typedef enum amp_act { AMP_ACT_RELU, AMP_ACT_GELU } amp_act;
AMP_API amp_status amp_act_parse(const char *name, amp_act *out);
AMP_API const char *amp_act_name(amp_act a);
AMP_API amp_status amp_act_forward(amp_ctx *cx, amp_act a, amp_tensor *out, const amp_tensor *in);
AMP_API amp_status amp_act_backward(amp_ctx *cx, amp_act a, amp_tensor *din, const amp_tensor *dout,
                                    const amp_tensor *in, const amp_tensor *out);

/* Softmax cross-entropy, mean over B rows of C logits, in FP32/double
 * (every loss is FP32 under autocast). probs [B,C] keeps the softmax for the
 * backward. Backward: dlogits = (p - onehot(y)) * (scale / B), rounded into
 * logits->grad's format (the loss gradient in the low format). */
AMP_API amp_status amp_xent_forward(float *loss, float *probs, const amp_tensor *logits, const int32_t *y, int B, int C);
AMP_API amp_status amp_xent_backward(amp_ctx *cx, amp_tensor *dlogits, const float *probs, const int32_t *y,
                                     int B, int C, float scale);
/* The same gradient in the float32 arithmetic of PyTorch's CPU cross_entropy
 * (log_softmax, then nll_loss, mean; AVX2 build, 8 float lanes):
 *   o = (z - max) - log(sum_j exp(z_j - max))   (exp: SLEEF's expf_u10 with
 *       fused multiply-adds; the sum over 8 lanes, then the lanes as a tree
 *       ((0+4)+(2+6))+((1+5)+(3+7)); log correctly rounded),
 *   g_j = fma(-exp(o_j), s, n_j), n = -(scale/B) at the target, 0 elsewhere,
 *       s = -(scale/B)          (log_softmax's backward on nll_loss's),
 * rounded into dlogits' format. logits [B,C]. */
/* SLEEF's expf_u10 with fused multiply-adds (PyTorch's vectorised float exp
 * in its AVX2 kernels): 0 below -104 (and for -inf), inf above 100. */
AMP_API float amp_sleef_expf(float d);
/* The gradient alone: g [B,C] (float32, before the rounding into dlogits). */
AMP_API void amp_xent_grad_torchcpu(float *g, const float *logits, const int32_t *y, int B, int C, float scale);
AMP_API amp_status amp_xent_backward_torchcpu(amp_ctx *cx, amp_tensor *dlogits, const amp_tensor *logits,
                                              const int32_t *y, int B, int C, float scale);


/* ==== transformer kernels ====================================================
 * byte-level Austen data.
 *
 * Conventions (llm.c style):
 *  - outputs first, then inputs, then sizes;
 *  - every backward ACCUMULATES (+=) into its gradient outputs, so the caller
 *    zeroes gradient buffers once per step (or before a kernel whose result it
 *    wants to round on its own);
 *  - legend: B batch, T time (context), C channels, V vocabulary, NH heads,
 *    hs = C/NH head size, N = B*T rows.
 *
 * Numerics: the kernels compute in float32 arithmetic on float32 arrays, as
 * PyTorch's float32 kernels do, with every reduction (means, variances,
 * softmax sums, the dot products and sums of the attention matrices) in a
 * fixed order: 8-lane sums (amp_sum8f) or sums in increasing index with fmaf
 * where a comment says so (the loss sums are in double); they never round to
 * an emulated format, and their bytes do not depend on the thread count. The emulated precision is applied by the caller (the
 * model code), which rounds each op's inputs and outputs through the policy
 * between kernels. That is why attention is three separate kernel pairs:
 * scores = scale * q k^T, prob = causal softmax(scores), out = prob v, so the
 * model can round the scores (GEMM output), the probabilities (softmax output
 * / GEMM operand) and every gradient in between. Products of two values of a
 * format with at most 11 significant bits are exact in float32, so a kernel
 * fed with rounded operands is "exact products, FP32 accumulation".
 *
 * Causal attention matrices are PACKED: for each (b, h) the lower triangle
 * row by row, row t holding t2 = 0..t at offset t(t+1)/2, so one head is
 * T(T+1)/2 floats and a tensor (B, NH, T(T+1)/2). Masked entries do not exist
 * (they are neither -inf scores nor 0 probabilities), so the logged
 * statistics of scores and probabilities count only real entries. */

/* Floats in one head's packed causal T x T matrix: T(T+1)/2. */
static inline size_t amp_causal_len(size_t T) { return T * (T + 1) / 2; }

/* ---- token + position embedding ------------------------------------------
 * out (B,T,C) = wte[tok[b,t]] + wpe[t]; tok (B,T) in 0..V-1 (asserted);
 * wte (V,C), wpe (maxT,C) with T <= maxT. The add is one float32 rounding. */
AMP_API void amp_embed_forward(float *out, const int32_t *tok, const float *wte,
                               const float *wpe, size_t B, size_t T, size_t C, size_t V);
/* dwte (V,C) += scatter of dout by token, dwpe (T,C) += sum over b of dout.
 * Accumulation order is fixed (b, then t), whatever the threads. */
AMP_API void amp_embed_backward(float *dwte, float *dwpe, const float *dout,
                                const int32_t *tok, size_t B, size_t T, size_t C, size_t V);

/* ---- LayerNorm over the last dimension ------------------------------------
 * inp, out (N,C); weight, bias (C); mean, rstd (N) saved for backward.
 * Float32: mean = amp_sum8f(x) / C, variance (biased, as PyTorch) =
 * amp_sum8f((x-mean)^2) / C, rstd = 1/sqrtf(var+eps); out = ((x-mean)*rstd)
 * * w + b, each operation rounded. */
AMP_API void amp_layernorm_forward(float *out, float *mean, float *rstd,
                                   const float *inp, const float *weight,
                                   const float *bias, size_t N, size_t C, double eps);
/* The same forward in the float32 arithmetic of PyTorch's CPU LayerNorm
 * kernel (AVX2 build, 8 float lanes): mean and variance by Welford's method per
 * lane over chunks of 16 vectors, chunks merged by a cascade, the C % 8 tail by
 * a scalar Welford, the lanes merged into it in lane order; rstd =
 * 1/sqrtf(var + eps); out = fma(fma(x, rstd, -rstd*mean), weight, bias). */
AMP_API void amp_layernorm_forward_torchcpu(float *out, float *mean, float *rstd,
                                            const float *inp, const float *weight,
                                            const float *bias, size_t N, size_t C, double eps);
/* dinp (N,C) += ..., dweight, dbias (C) += ... Float32: row sums by
 * amp_sum8f; the weight/bias sums run over rows in order (deterministic). */
AMP_API void amp_layernorm_backward(float *dinp, float *dweight, float *dbias,
                                    const float *dout, const float *inp,
                                    const float *weight, const float *mean,
                                    const float *rstd, size_t N, size_t C);
/* The backward in the float32 arithmetic of PyTorch's CPU LayerNorm backward
 * kernel on float tensors (AVX2 build: 8 float lanes, the compiler's fused
 * multiply-adds), one thread. Per row, with a = rstd, m = mean, 1/C in float:
 *   ds = sum dy x w, db = sum dy w: lane j accumulates fma(dy x, w, acc) over
 *        the elements j, j+8, ... (first vector: products), the tail lanes
 *        likewise, then the lanes are added as a tree ((0+4)+(2+6))+((1+5)+(3+7));
 *        rows shorter than 8 add their products in order;
 *   b = fma(db, m, -ds) a a a / C,  c = fma(-b, m, -(db a / C));
 *   dinp = fma(b, x, (a dy) w) + c          (written, not added);
 *   dweight += fma(dy, fma(a, x, -a m), .) and dbias += dy, row by row in order
 *   (written: the sums start from 0). */
AMP_API void amp_layernorm_backward_torchcpu(float *dinp, float *dweight, float *dbias,
                                             const float *dout, const float *inp,
                                             const float *weight, const float *mean,
                                             const float *rstd, size_t N, size_t C);

/* ---- GELU, tanh approximation (GPT-2, llm.c; PyTorch approximate='tanh') --
 * out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise, n values,
 * in float32 arithmetic, as x / (1 + e^-2u) with ampsim's own float32 e^t
 * (sim/layer_gelu.c): |out - gelu(x)| <= 1e-6 |gelu(x)| + 1e-7; where tanh
 * is within 2^-25 of +-1 it is taken as +-1 (PyTorch's float32 tanh rounds
 * there too). The same bits on every SIMD path and thread count. */
AMP_API void amp_gelu_forward(float *out, const float *inp, size_t n);
/* The same, returning how many outputs are inf or NaN (counted as written). */
AMP_API size_t amp_gelu_forward_counted(float *out, const float *inp, size_t n);
/* dinp += gelu'(inp) * dout (float32 arithmetic; tanh evaluated again from
 * inp, as PyTorch's backward does, so the forward keeps nothing). */
AMP_API void amp_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
/* The same writing dinp = +0 + gelu'(inp) * dout (the bits amp_gelu_backward
 * gives on a zeroed dinp, without the zeroing pass); returns how many of
 * those values are inf or NaN. */
AMP_API size_t amp_gelu_backward_set(float *dinp, const float *inp, const float *dout, size_t n);
/* The same on values held in format f, with every arithmetic operation rounded
 * into f (RNE) and the constants sqrt(2/pi), 0.044715 (and 3 * 0.044715) taken
 * in f, in the order of PyTorch's GELU kernels: what its CPU kernels compute on
 * bf16 tensors (one Vectorized<BFloat16> operation after another). tanh is
 * tanhf of the rounded argument, rounded. Forward: out = r(r(0.5 x) r(1 + th)).
 * Backward: dinp += r(dout * r(r(0.5 r(1 + th)) + r(r(r(0.5 x) r(1 - r(th th)))
 * r(k r(1 + r(r(3 a) r(x x))))))). f = FP32 gives plain float32 arithmetic. */
AMP_API void amp_gelu_forward_fmt(float *out, const float *inp, size_t n, const amp_format *f);
AMP_API void amp_gelu_backward_fmt(float *dinp, const float *inp, const float *dout, size_t n, const amp_format *f);
/* GELU as policy p computes it on tensor in (n values, into out before the
 * rounding into the output's format): amp_gelu_forward_fmt in in->fmt when
 * p->torch_cpu and in->fmt is narrower than FP32, else amp_gelu_forward.
 * Backward: dinp (n, overwritten) = gelu'(in) * dout, likewise in dout->fmt
 * (when in has the same format), else amp_gelu_backward_set. Both return how
 * many values written are inf or NaN. */
AMP_API size_t amp_gelu_policy_forward(const amp_policy *p, float *out, const amp_tensor *in);
AMP_API size_t amp_gelu_policy_backward(const amp_policy *p, float *dinp, const amp_tensor *in,
                                        const amp_tensor *dout);

/* ---- general-shape forms (layer_attention.c) ------------------------------
 * Each output element computed as the attention kernels compute theirs, for
 * models that form attention from separate matmul and softmax calls.
 * amp_softmax_rows_forward: softmax of each of `rows` rows of n floats, as
 * amp_attn_softmax_forward does for one causal row (-inf entries give 0).
 * amp_softmax_rows_backward: dx += prob (dprob - sum prob dprob), as
 * amp_attn_softmax_backward. */
AMP_API void amp_softmax_rows_forward(float *prob, const float *x, size_t rows, size_t n);
AMP_API void amp_softmax_rows_backward(float *dx, const float *dprob, const float *prob, size_t rows, size_t n);
/* The same rows in PyTorch's CPU bf16 arithmetic: forward as
 * amp_attn_softmax_forward_torchcpu (every row full: -inf entries give 0),
 * backward as amp_attn_softmax_backward_fmt (dx written). */
AMP_API void amp_softmax_rows_forward_torchcpu(float *prob, const float *x, size_t rows, size_t n);
AMP_API void amp_softmax_rows_backward_fmt(float *dx, const float *dprob, const float *prob, size_t rows, size_t n,
                                           const amp_format *f);
/* out[p] (M,N) = a[p] (M,K) @ b[p], P products, every array dense. b_rows = 1:
 * b[p] is stored (N,K) and out[i,j] = the attention scores' dot product of
 * a's row i and b's row j (float32 fmaf, four partial sums); b_rows = 0: b[p]
 * is (K,N) and out[i,j] = sum over k in increasing order with fmaf in float32
 * of a[i,k] b[k,j] (the attention values' and backward kernels' sum). The
 * sums are float32 whatever the name says. */
AMP_API void amp_bmm_f64(float *out, const float *a, const float *b, size_t P, size_t M, size_t N, size_t K,
                         int b_rows);

/* ---- residual add ----------------------------------------------------------
 * out = a + b (n values, one float32 rounding; returns how many sums are inf
 * or NaN); backward da += dout, db += dout. */
AMP_API size_t amp_residual_forward(float *out, const float *a, const float *b, size_t n);
AMP_API void amp_residual_backward(float *da, float *db, const float *dout, size_t n);

/* ---- causal multi-head self-attention, from the fused qkv -----------------
 * qkv (B,T,3C): q at channels [0,C), k at [C,2C), v at [2C,3C); head h uses
 * channels h*hs .. h*hs+hs-1 of each (nanoGPT's split + view + transpose).
 * att, prob (B,NH,T(T+1)/2) packed causal (see top of file). */

/* att[b,h,t,t2] = scale * (q[b,t,h,:] . k[b,t2,h,:]) for t2 <= t: the dot
 * product in float32 (fmaf, four partial sums in a fixed order), then
 * multiplied by scale (PyTorch: (q @ k^T) * scale). nanoGPT's scale is 1/sqrt(hs); pass 1 to get
 * the raw bmm output when the caller wants to round before scaling. */
AMP_API void amp_attn_scores_forward(float *att, const float *qkv, float scale,
                                     size_t B, size_t T, size_t C, size_t NH);
/* The q and k parts of dqkv (B,T,3C) += scale * (datt k) and scale * (datt^T q)
 * (datt first multiplied by scale in float32, then the sums in float32 with
 * fmaf in increasing index); the v part is untouched. */
AMP_API void amp_attn_scores_backward(float *dqkv, const float *datt, const float *qkv,
                                      float scale, size_t B, size_t T, size_t C, size_t NH);

/* The same products in the order of PyTorch's CPU bf16 bmm (oneDNN): per
 * (b,h) the full T x T matrices (masked entries exact zeros) through
 * amp_gemm_pairs, for bf16 (or fp16) operands whose products are exact.
 * scores: att = q k^T (no scaling); values: out = prob v; values_backward:
 * dprob = dout v^T and the v part of dqkv = prob^T dout; scores_backward:
 * the q and k parts of dqkv = datt k and datt^T q. Every output is written,
 * not added to. */
AMP_API void amp_attn_pairs_scores(float *att, const float *qkv, size_t B, size_t T, size_t C, size_t NH);
AMP_API void amp_attn_pairs_values(float *out, const float *prob, const float *qkv, size_t B, size_t T, size_t C,
                                   size_t NH);
AMP_API void amp_attn_pairs_values_backward(float *dprob, float *dqkv, const float *dout, const float *prob,
                                            const float *qkv, size_t B, size_t T, size_t C, size_t NH);
AMP_API void amp_attn_pairs_scores_backward(float *dqkv, const float *datt, const float *qkv, size_t B, size_t T,
                                            size_t C, size_t NH);

/* prob = softmax over t2 <= t of att, row by row, float32: max subtracted,
 * amp_expf_n, the row sum by amp_sum8f, prob = e / sum. */
AMP_API void amp_attn_softmax_forward(float *prob, const float *att,
                                      size_t B, size_t T, size_t NH);
/* The same softmax in the float32 arithmetic of PyTorch's CPU kernel for a
 * bf16 tensor (each row of T entries, the masked ones -inf): the maximum; e =
 * amp_sleef_expf(x - max) over the first T - T % 8 entries, summed on 8 lanes
 * then added as the tree ((0+4)+(2+6))+((1+5)+(3+7)), the last T % 8 entries by
 * the C library's expf, added in order; prob = e * (1 / sum), to be rounded
 * into bf16 by the caller. */
AMP_API void amp_attn_softmax_forward_torchcpu(float *prob, const float *att, size_t B, size_t T, size_t NH);
/* datt += prob * (dprob - sum_t2 prob dprob)   (float32; the row sum of the
 * rounded products in amp_sum8f's order). */
AMP_API void amp_attn_softmax_backward(float *datt, const float *dprob, const float *prob,
                                       size_t B, size_t T, size_t NH);
/* The same as PyTorch's CPU softmax backward on a low-precision tensor (prob
 * and dprob in format f): the row sum of prob dprob in float32 over 8 lanes
 * (lane j takes the terms j, j+8, ... in order; the lanes are then added 0..7),
 * rounded into f; datt = float((dprob - sum) prob), rounded by the caller.
 * datt is written, not added to. */
AMP_API void amp_attn_softmax_backward_fmt(float *datt, const float *dprob, const float *prob,
                                           size_t B, size_t T, size_t NH, const amp_format *f);

/* out (B,T,C), channel h*hs+d: sum over t2 <= t of prob[b,h,t,t2] v[b,t2,h,d]
 * (float32, fmaf in increasing t2). */
AMP_API void amp_attn_values_forward(float *out, const float *prob, const float *qkv,
                                     size_t B, size_t T, size_t C, size_t NH);
/* dprob += dout . v (per entry), and the v part of dqkv += prob^T dout. */
AMP_API void amp_attn_values_backward(float *dprob, float *dqkv, const float *dout,
                                      const float *prob, const float *qkv,
                                      size_t B, size_t T, size_t C, size_t NH);

/* The three in a row in plain float32, scale 1/sqrt(hs): out (B,T,C), keeps
 * att and prob (B,NH,T(T+1)/2) for logging and backward. */
AMP_API void amp_attention_forward(float *out, float *att, float *prob, const float *qkv,
                                   size_t B, size_t T, size_t C, size_t NH);
/* dqkv (B,T,3C) += the gradient through all three; datt and dprob
 * (B,NH,T(T+1)/2) are scratch, OVERWRITTEN (they hold the gradients of the
 * scores and probabilities on return). */
AMP_API void amp_attention_backward(float *dqkv, float *datt, float *dprob,
                                    const float *dout, const float *prob, const float *qkv,
                                    size_t B, size_t T, size_t C, size_t NH);

/* ---- language-model head loss ---------------------------------------------
 * The model uses the framework's softmax cross-entropy (amp_xent_forward /
 * amp_xent_backward above) over N = B*T rows of V logits: FP32,
 * mean over the N positions, as F.cross_entropy(logits.view(-1, V), ...). */

#endif
