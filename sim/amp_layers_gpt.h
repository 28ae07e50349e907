/* ampsim — transformer (GPT) layers as forward/backward kernel pairs, and the
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
 * Numerics: the kernels compute in float32 arithmetic on float32 arrays, with
 * reductions (means, variances, softmax sums, loss sums, the dot products and
 * sums of the attention matrices) carried in double in a fixed order and
 * rounded once; they never round to an emulated format, and their bytes do
 * not depend on the thread count. The emulated precision is applied by the caller (the
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
#ifndef AMP_LAYERS_GPT_H
#define AMP_LAYERS_GPT_H

#include <stddef.h>
#include <stdint.h>
#include "amp_base.h"
#include "amp_train.h"

/* Kernels split work over OpenMP threads only when a call does at least this
 * many element operations: below it, starting threads costs more than it
 * saves (and far more on a loaded machine). Results do not depend on it. */
#define AMP_PAR_MIN 65536

/* Floats in one head's packed causal T x T matrix: T(T+1)/2. */
static inline size_t amp_causal_len(size_t T) { return T * (T + 1) / 2; }

/* ---- token + position embedding ------------------------------------------
 * out (B,T,C) = wte[tok[b,t]] + wpe[t]; tok (B,T) in 0..V-1 (asserted);
 * wte (V,C), wpe (maxT,C) with T <= maxT. The add is one float32 rounding. */
void amp_embed_forward(float *out, const int32_t *tok, const float *wte,
                       const float *wpe, size_t B, size_t T, size_t C, size_t V);
/* dwte (V,C) += scatter of dout by token, dwpe (T,C) += sum over b of dout.
 * Accumulation order is fixed (b, then t), whatever the threads. */
void amp_embed_backward(float *dwte, float *dwpe, const float *dout,
                        const int32_t *tok, size_t B, size_t T, size_t C, size_t V);

/* ---- LayerNorm over the last dimension ------------------------------------
 * inp, out (N,C); weight, bias (C); mean, rstd (N) saved for backward.
 * mean and variance (biased, as PyTorch) in double; rstd = 1/sqrt(var+eps)
 * rounded to float; out = float((x-mean)*rstd) * w + b in float32. */
void amp_layernorm_forward(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, size_t N, size_t C, double eps);
/* The same forward in the float32 arithmetic of PyTorch's CPU LayerNorm
 * kernel (AVX2 build, 8 float lanes): mean and variance by Welford's method per
 * lane over chunks of 16 vectors, chunks merged by a cascade, the C % 8 tail by
 * a scalar Welford, the lanes merged into it in lane order; rstd =
 * 1/sqrtf(var + eps); out = fma(fma(x, rstd, -rstd*mean), weight, bias). */
void amp_layernorm_forward_torchcpu(float *out, float *mean, float *rstd,
                                    const float *inp, const float *weight,
                                    const float *bias, size_t N, size_t C, double eps);
/* dinp (N,C) += ..., dweight, dbias (C) += ... Row and column sums in double;
 * the weight/bias sums run over rows in order (deterministic). */
void amp_layernorm_backward(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp,
                            const float *weight, const float *mean,
                            const float *rstd, size_t N, size_t C);

/* ---- GELU, tanh approximation (GPT-2, llm.c; PyTorch approximate='tanh') --
 * out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise, n values,
 * in float32 arithmetic with tanhf (as PyTorch's float kernel does). */
void amp_gelu_forward(float *out, const float *inp, size_t n);
/* dinp += gelu'(inp) * dout (float32 arithmetic). */
void amp_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
/* The same on values held in format f, with every arithmetic operation rounded
 * into f (RNE) and the constants sqrt(2/pi), 0.044715 (and 3 * 0.044715) taken
 * in f, in the order of PyTorch's GELU kernels: what its CPU kernels compute on
 * bf16 tensors (one Vectorized<BFloat16> operation after another). tanh is
 * tanhf of the rounded argument, rounded. Forward: out = r(r(0.5 x) r(1 + th)).
 * Backward: dinp += r(dout * r(r(0.5 r(1 + th)) + r(r(r(0.5 x) r(1 - r(th th)))
 * r(k r(1 + r(r(3 a) r(x x))))))). f = FP32 gives plain float32 arithmetic. */
void amp_gelu_forward_fmt(float *out, const float *inp, size_t n, const amp_format *f);
void amp_gelu_backward_fmt(float *dinp, const float *inp, const float *dout, size_t n, const amp_format *f);
/* GELU as policy p computes it on tensor in (n values, into out before the
 * rounding into the output's format): amp_gelu_forward_fmt in in->fmt when
 * p->torch_cpu and in->fmt is narrower than FP32, else amp_gelu_forward.
 * Backward likewise in dout->fmt (when in has the same format). */
void amp_gelu_policy_forward(const amp_policy *p, float *out, const amp_tensor *in);
void amp_gelu_policy_backward(const amp_policy *p, float *dinp, const amp_tensor *in, const amp_tensor *dout);

/* ---- residual add ----------------------------------------------------------
 * out = a + b (n values, one float32 rounding); backward da += dout, db += dout. */
void amp_residual_forward(float *out, const float *a, const float *b, size_t n);
void amp_residual_backward(float *da, float *db, const float *dout, size_t n);

/* ---- causal multi-head self-attention, from the fused qkv -----------------
 * qkv (B,T,3C): q at channels [0,C), k at [C,2C), v at [2C,3C); head h uses
 * channels h*hs .. h*hs+hs-1 of each (nanoGPT's split + view + transpose).
 * att, prob (B,NH,T(T+1)/2) packed causal (see top of file). */

/* att[b,h,t,t2] = scale * (q[b,t,h,:] . k[b,t2,h,:]) for t2 <= t: the dot
 * product in double rounded to float, then multiplied by scale in float32
 * (PyTorch: (q @ k^T) * scale). nanoGPT's scale is 1/sqrt(hs); pass 1 to get
 * the raw bmm output when the caller wants to round before scaling. */
void amp_attn_scores_forward(float *att, const float *qkv, float scale,
                             size_t B, size_t T, size_t C, size_t NH);
/* The q and k parts of dqkv (B,T,3C) += scale * (datt k) and scale * (datt^T q)
 * (datt first multiplied by scale in float32, then the dot products in
 * double); the v part is untouched. */
void amp_attn_scores_backward(float *dqkv, const float *datt, const float *qkv,
                              float scale, size_t B, size_t T, size_t C, size_t NH);

/* prob = softmax over t2 <= t of att, row by row: max subtracted, expf in
 * float, the row sum in double, prob = float(e / sum). */
void amp_attn_softmax_forward(float *prob, const float *att,
                              size_t B, size_t T, size_t NH);
/* datt += prob * (dprob - sum_t2 prob dprob)   (the row sum in double). */
void amp_attn_softmax_backward(float *datt, const float *dprob, const float *prob,
                               size_t B, size_t T, size_t NH);

/* out (B,T,C), channel h*hs+d: sum over t2 <= t of prob[b,h,t,t2] v[b,t2,h,d]
 * (the sum in double, rounded once). */
void amp_attn_values_forward(float *out, const float *prob, const float *qkv,
                             size_t B, size_t T, size_t C, size_t NH);
/* dprob += dout . v (per entry), and the v part of dqkv += prob^T dout. */
void amp_attn_values_backward(float *dprob, float *dqkv, const float *dout,
                              const float *prob, const float *qkv,
                              size_t B, size_t T, size_t C, size_t NH);

/* The three in a row in plain float32, scale 1/sqrt(hs): out (B,T,C), keeps
 * att and prob (B,NH,T(T+1)/2) for logging and backward. */
void amp_attention_forward(float *out, float *att, float *prob, const float *qkv,
                           size_t B, size_t T, size_t C, size_t NH);
/* dqkv (B,T,3C) += the gradient through all three; datt and dprob
 * (B,NH,T(T+1)/2) are scratch, OVERWRITTEN (they hold the gradients of the
 * scores and probabilities on return). */
void amp_attention_backward(float *dqkv, float *datt, float *dprob,
                            const float *dout, const float *prob, const float *qkv,
                            size_t B, size_t T, size_t C, size_t NH);

/* ---- language-model head loss ---------------------------------------------
 * The model uses the framework's softmax cross-entropy (amp_xent_forward /
 * amp_xent_backward of sim/amp_train.h) over N = B*T rows of V logits: FP32,
 * mean over the N positions, as F.cross_entropy(logits.view(-1, V), ...). */

/* ---- byte-level Austen data -------------------------------------------------
 * Tokens are the bytes of the file (vocabulary V = 256, all byte values, so no
 * vocabulary file is needed; the text uses 82 of them). The split is fixed:
 * the first n - n/10 bytes are training text, the last n/10 validation text
 * (for austen.txt: 3,622,527 and 402,502 bytes; the validation text is the
 * end of the last novel in the file). */
#define AMP_AUSTEN_VOCAB 256

typedef enum amp_split { AMP_SPLIT_TRAIN = 0, AMP_SPLIT_VAL = 1 } amp_split;

typedef struct amp_austen {
    uint8_t *data;     /* the whole file */
    size_t n;          /* its length */
    size_t n_train;    /* data[0 .. n_train) is training text */
} amp_austen;           /* data[n_train .. n) is validation text */

/* Reads the file at path (at most 1 GiB; AMP_EIO / AMP_ERANGE naming it).
 * A file of fewer than 20 bytes is AMP_EINVAL naming it. Release with
 * amp_austen_free (safe on a zeroed or freed struct). */
amp_status amp_austen_load(amp_austen *d, const char *path);
void amp_austen_free(amp_austen *d);
/* Byte range of a split. */
void amp_austen_range(const amp_austen *d, amp_split s, const uint8_t **p, size_t *len);

/* Batch `step` of a split: B windows of T+1 consecutive bytes of that split,
 * window j starting at offset floor(u * (len - T)) with u from
 * amp_rand64(seed, stream, step*B + j) (stream = 0x7a1 for train, 0x7a2 for
 * validation; u = the 64 bits as a fraction, by a 128-bit multiply), so a batch
 * is a pure function of (seed, split, step, B, T). x (B,T) gets bytes 0..T-1
 * of each window, y (B,T) bytes 1..T (the next-byte targets). AMP_EINVAL if
 * the split is shorter than T+1. */
amp_status amp_austen_batch(const amp_austen *d, amp_split s, uint64_t seed,
                            uint64_t step, size_t B, size_t T,
                            int32_t *x, int32_t *y);

/* Entropy of the empirical byte distribution of a split, in nats (divide by
 * ln 2 for bits): the loss of the best unigram model of that very text. */
double amp_austen_unigram_entropy(const amp_austen *d, amp_split s);
/* Cross-entropy (nats) of split `eval` under the byte frequencies of split
 * `fit` with add-one (Laplace) smoothing over all 256 bytes: what a unigram
 * model trained on `fit` scores on `eval`. */
double amp_austen_unigram_xent(const amp_austen *d, amp_split fit, amp_split eval);

/* ---- the model (sim/model_gpt.c) -------------------------------------------
 * nanoGPT (bias=True, dropout 0, GELU tanh form, lm_head tied to wte):
 * context T, width C, L blocks, NH heads (NH divides C), vocabulary 256.
 * Weights as nanoGPT initializes them, drawn from seed. Names:
 * transformer.wte.weight [256,C], transformer.wpe.weight [T,C],
 * transformer.h.<l>.{ln_1,ln_2}.{weight,bias} [C],
 * transformer.h.<l>.attn.c_attn.{weight [3C,C], bias [3C]},
 * transformer.h.<l>.attn.c_proj.{weight [C,C], bias [C]},
 * transformer.h.<l>.mlp.c_fc.{weight [4C,C], bias [4C]},
 * transformer.h.<l>.mlp.c_proj.{weight [C,4C], bias [C]},
 * transformer.ln_f.{weight,bias} [C]. Activations and the attention scores
 * (transformer.h.<l>.attn.att) and probabilities (.attn.prob), packed causal,
 * are registered tensors, logged like any other. A batch is amp_batch with
 * B rows of D = T tokens (tok) and next-byte targets (y); the loss is the
 * mean cross-entropy over B*T positions. Bad sizes: AMP_EINVAL naming the
 * option (--layers, --heads, --dim, --ctx, --batch). */
amp_status amp_gpt_create(amp_model *m, const amp_policy *pol, int B, int T, int C, int L,
                          int NH, uint64_t seed);
/* Mean loss over `batches` fixed validation batches (batch i =
 * amp_austen_batch(d, AMP_SPLIT_VAL, seed, i, B, T)), forward only. Starts
 * step `step` without statistics (amp_tensors_begin_step(reg, step, 0)) and
 * casts the weights itself: call it before amp_train_step of that step. */
amp_status amp_gpt_eval(amp_model *m, const amp_austen *d, uint64_t seed, int64_t step,
                        int batches, double *val_loss);

#endif
