/* ampsim — NVFP4 training (the nvfp4 policy, docs/fp8.md): which linear layers
 * quantize their GEMM operands, the 16x16 random Hadamard transform and the
 * operands of the weight-gradient GEMM.
 *
 * A quantized linear layer (out [B,O] = in [B,I] W [O,I]^T) registers
 *   <name>.weight            NVFP4 16x16 blocks (nvfp4:2d), cast from the FP32 master
 *   <name>.input             in, NVFP4 1x16 blocks along I              (fprop)
 *   <name>.out.grad.input    out.grad, 1x16 along O, stochastic rounding (dgrad)
 *   <name>.input.wgrad       in^T [I,B], 1x16 along B, after the transform (wgrad)
 *   <name>.out.grad.wgrad    out.grad^T [O,B], 1x16 along B, after the
 *                            transform, stochastic rounding          (wgrad)
 * all with format e2m1 in tensors.csv; each holds the dequantised values
 * (element x E4M3 block scale x FP32 tensor scale, amp_block_round). The GEMMs
 * multiply those in FP32 (exact products of dequantised values, FP32
 * accumulation): fprop in W^T, dgrad G W, wgrad dW [O,I] = Gt [O,B] Xt [I,B]^T.
 *
 * The transform: for every run of 16 values v along B (the reduction
 * dimension of the wgrad GEMM), v <- v (1/4) diag(s) H, H the 16x16
 * Sylvester Hadamard matrix (H_ij = (-1)^popcount(i & j)) and s Transformer
 * Engine's fixed sign vector. (1/4) diag(s) H is orthogonal, so the exact
 * product Gt Xt^T is unchanged. Arithmetic: y_j = bf16(fl32(fl32(sum_i s_i
 * H_ij v_i) * 0.25)), the sum in float32 in index order i = 0..15 (each term
 * is +-v_i, exact), the 1/4 an exact float32 multiply unless the sum is below
 * 2^-124, then one rne rounding to bf16: Transformer Engine writes the
 * transform's output in its input type, bf16, before the amax and the cast. */
#ifndef AMP_NVFP4_H
#define AMP_NVFP4_H

#include <stddef.h>
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_policy.h"

#define AMP_RHT_N 16

/* The transform's 16 x 16 matrix without its 1/4: h[16 i + j] = s_i H_ij (+-1). */
AMP_API void amp_rht_matrix(float h[AMP_RHT_N * AMP_RHT_N]);
/* y (K,B) = x (B,K) transposed; when rht, each run y[k, 16c .. 16c+15] then
 * multiplied by (1/4) diag(s) H and rounded to bf16 as above. y and x do not
 * alias. AMP_EINVAL if rht and B is not a multiple of 16. */
AMP_API amp_status amp_nvfp4_wgrad_operand(float *y, const float *x, size_t B, size_t K, int rht);

/* Rewrites the policy's "first" and "last" entries of nvfp4_bf16 into the
 * names of the model's first and last GEMM layers (either may be NULL: the
 * entry is dropped). AMP_EINVAL if the result does not fit. */
AMP_API amp_status amp_nvfp4_resolve(amp_policy *p, const char *first, const char *last);
/* 1 if linear layer `name` quantizes its GEMM operands under p: p->nvfp4 and
 * no entry of p->nvfp4_bf16 names it (an entry names a layer when equal to
 * its name, or when it ends with '.' and the name starts with it). */
AMP_API int amp_nvfp4_layer_on(const amp_policy *p, const char *name);

/* Called by amp_linear_init for a layer with amp_nvfp4_layer_on: registers
 * (or converts) its operand tensors as listed above. l->w is already NVFP4. */
AMP_API amp_status amp_nvfp4_linear_init(amp_ctx *cx, amp_linear *l, const char *name);
/* dW [O,I] = the wgrad GEMM of l from its NVFP4 wgrad operands, into acc
 * (O*I floats): transposes (and transforms) l->in and l->out->grad, rounds
 * them into their tensors, then acc = Gt Xt^T in FP32. */
AMP_API amp_status amp_nvfp4_wgrad(amp_ctx *cx, amp_linear *l, float *acc);

#endif
