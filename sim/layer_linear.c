/* Linear layer under a precision policy, autocast style:
 *   forward   out = round_act( X_op W^T + b )      X_op = round_fwd_in(in), W = cast cache
 *   backward  dW  = round_wgrad( G^T X_op )        G = round_bwd_in(dout)
 *             db  = round_wgrad( sum_rows G )
 *             dX  = round_grad( G W )      (when in_op is a cast of in, dX is rounded
 *                                         to the policy's grad format first, then
 *                                         accumulated into in->grad's format)
 * Products are exact, accumulation FP32 (or the policy's narrow accumulator),
 * bias added in FP32 before the single output rounding. Gradients accumulate
 * (amp_tensor_accum): a tensor's first write this step is a plain rounding.
 * Shapes: in [B,I] (any leading dims: rows B = n / I), w [O,I], b [O], out [B,O]. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_layers.h"
#include "amp_nvfp4.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

amp_status amp_linear_init(amp_ctx *cx, amp_linear *l, const char *name, amp_tensor *in, int O, int bias)
{
    const amp_policy *p = cx->pol;
    char buf[AMP_TENSOR_NAME + 16];
    amp_status s;
    memset(l, 0, sizeof *l);
    l->in = in;
    l->I = (int)in->shape[in->ndim - 1];
    l->B = (int)(in->n / (size_t)l->I);
    l->O = O;
    size_t wshape[2] = { (size_t)O, (size_t)l->I }, bshape[1] = { (size_t)O }, oshape[2] = { (size_t)l->B, (size_t)O };
    const int nv = amp_nvfp4_layer_on(p, name);   /* NVFP4 operands (sim/amp_nvfp4.h) */
    const amp_format *wf = nv ? amp_format_get(AMP_FMT_E2M1) : &p->weight;

    snprintf(buf, sizeof buf, "%s.weight", name);
    if ((s = amp_ctx_add_weight(cx, buf, wf, &p->wgrad, 2, wshape, &l->w))) return s;
    if (bias) {
        /* the bias is cast like the weight, except that FP8 (and FP4) weights
         * keep their bias in the activation format (as Transformer Engine does) */
        const amp_format *bf = wf->bits <= 8 ? &p->act : &p->weight;
        snprintf(buf, sizeof buf, "%s.bias", name);
        if ((s = amp_ctx_add_weight(cx, buf, bf, &p->wgrad, 1, bshape, &l->b))) return s;
    }
    if (amp_format_same(&in->fmt, &p->fwd_in)) l->in_op = in;
    else {
        snprintf(buf, sizeof buf, "%s.input", name);
        if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_ACT, &p->fwd_in, 2, (size_t[]){ (size_t)l->B, (size_t)l->I },
                                 &l->in_op))) return s;
        l->in_op->rnd_flags = p->op_flags;
    }
    amp_tensor *g;
    snprintf(buf, sizeof buf, "%s.out", name);
    if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_ACT, &p->act, 2, oshape, &l->out))) return s;
    snprintf(buf, sizeof buf, "%s.out.grad", name);
    if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_ACT_GRAD, &p->grad, 2, oshape, &g))) return s;
    l->out->grad = g;
    if (!amp_format_same(&p->grad, &p->bwd_in)) {
        snprintf(buf, sizeof buf, "%s.out.grad.input", name);
        if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_ACT_GRAD, &p->bwd_in, 2, oshape, &l->gout_op))) return s;
        l->gout_op->rnd_flags = p->op_flags;
    }
    return nv ? amp_nvfp4_linear_init(cx, l, name) : AMP_OK;
}

int amp_ctx_pairs(const amp_ctx *cx)
{
    const amp_policy *p = cx->pol;
    return p->torch_cpu && p->fwd_in.bits <= 16 && p->bwd_in.bits <= 16 && cx->gemm.acc_fp32;
}

void amp_ctx_gemm(const amp_ctx *cx, int ta, int tb, int M, int N, int K, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    if (amp_ctx_pairs(cx))
        amp_gemm_pairs(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
        amp_gemm(&cx->gemm, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* acc [B,O] += b [O] on every row, in float32, returning how many results
 * are inf or NaN (a 32-bit count a row, so that the loop vectorises). */
static size_t add_bias_counted(float *acc, const float *b, int B, int O)
{
    size_t bad = 0;
    #pragma omp parallel for schedule(static) reduction(+:bad) if ((size_t)B * O >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (int r = 0; r < B; r++) {
        float *row = acc + (size_t)r * O;
        uint32_t c = 0;
        for (int o = 0; o < O; o++) {
            float v = row[o] + b[o];
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            row[o] = v;
            c += (u & 0x7f800000u) == 0x7f800000u;
        }
        bad += c;
    }
    return bad;
}

size_t amp_ctx_gemm_count(const amp_ctx *cx, int ta, int tb, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    if (!amp_ctx_pairs(cx)) return amp_gemm_count(&cx->gemm, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    amp_gemm_pairs(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    size_t bad = 0;
    for (int i = 0; i < M; i++) bad += amp_count_nonfinite(C + (size_t)i * ldc, (size_t)(N > 0 ? N : 0));
    return bad;
}

/* t = the values a kernel wrote to w, with their inf/NaN count bad: recorded
 * in place when w is t's own data (its first write), else accumulated. */
static amp_status take(amp_ctx *cx, amp_tensor *t, float *w, size_t bad)
{
    return w == t->data ? amp_tensor_round_counted(cx->reg, t, bad) : amp_tensor_accum(cx->reg, t, w);
}

// out [B,O] = in_op [B,I] @ w [O,I]^T + b [O]
amp_status amp_linear_forward(amp_ctx *cx, amp_linear *l)
{
    amp_status s;
    float *acc;
    if (l->in_op != l->in && (s = amp_tensor_round(cx->reg, l->in_op, l->in->data))) return s;
    if (l->out->fmt.id == AMP_FMT_FP32 && !l->out->rnd_flags)
        acc = l->out->data;                  /* the output rounding is the identity: no copy */
    else if ((s = amp_ctx_scratch(cx, (size_t)l->B * l->O, &acc))) return s;
    if (l->b && acc == l->out->data && cx->gemm.acc_fp32 && cx->gemm.kind == AMP_GEMM_REPRODUCIBLE &&
        !amp_ctx_pairs(cx)) {
        /* the reproducible GEMM's beta = 1 ends each chain s with fl(c + s):
         * with c = b that is fl(s + b), added here in the pass that counts */
        amp_ctx_gemm(cx, 0, 1, l->B, l->O, l->I, l->in_op->data, l->I, l->w->data, l->I, 0.0f, acc, l->O);
        return amp_tensor_round_counted(cx->reg, l->out, add_bias_counted(acc, l->b->data, l->B, l->O));
    }
    if (l->b)
        for (int r = 0; r < l->B; r++) memcpy(acc + (size_t)r * l->O, l->b->data, (size_t)l->O * sizeof(float));
    if (!l->b && acc == l->out->data)
        return amp_tensor_round_counted(cx->reg, l->out, amp_ctx_gemm_count(cx, 0, 1, l->B, l->O, l->I,
                                        l->in_op->data, l->I, l->w->data, l->I, 0.0f, acc, l->O));
    amp_ctx_gemm(cx, 0, 1, l->B, l->O, l->I, l->in_op->data, l->I, l->w->data, l->I,
             l->b ? 1.0f : 0.0f, acc, l->O);
    return amp_tensor_round(cx->reg, l->out, acc);
}

/* db [O] = float(sum_r g[r,o]) with the sum in double over r ascending:
 * row by row into double sums of 256 columns at a time (the same order per
 * element; column blocks go to the threads). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define LIN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LIN_CLONES
#endif
enum { CB = 256 };

/* db [o0, o0 + no) of bias_grad (compiled for AVX-512 and AVX2 too: the
 * column loop vectorises, each column's sum in row order). */
LIN_CLONES static void bias_cols(float *db, const float *g, int B, int O, int o0, int no)
{
    double sum[CB];
    for (int o = 0; o < no; o++) sum[o] = 0.0;
    for (int r = 0; r < B; r++) {
        const float *gr = g + (size_t)r * O + o0;
        for (int o = 0; o < no; o++) sum[o] += gr[o];
    }
    for (int o = 0; o < no; o++) db[o0 + o] = (float)sum[o];
}

static void bias_grad(float *db, const float *g, int B, int O)
{
    int nb = (O + CB - 1) / CB, nt = amp_get_threads();
    #pragma omp parallel for schedule(static) num_threads(nt > 1 ? nt : 1) if (nt > 1 && nb > 1 && (size_t)B * O >= AMP_PAR_MIN)
    for (int blk = 0; blk < nb; blk++) bias_cols(db, g, B, O, blk * CB, O - blk * CB < CB ? O - blk * CB : CB);
}

/* Where a gradient GEMM writes: t's own data when this is t's first write of
 * the step and its rounding is the float32 identity (no copy), else w. */
static float *direct(const amp_tensor *t, float *w)
{
    return t->fmt.id == AMP_FMT_FP32 && !t->rnd_flags && !t->written ? t->data : w;
}

amp_status amp_linear_backward(amp_ctx *cx, amp_linear *l)
{
    amp_status s;
    float *acc;
    const amp_tensor *G = l->out->grad;
    cx->reg->src_gscale = G->gscale;         /* everything below derives from G */
    if (l->gout_op) {
        l->gout_op->gscale = G->gscale;      /* an operand copy keeps its source's scale */
        if ((s = amp_tensor_round(cx->reg, l->gout_op, G->data))) return s;
        G = l->gout_op;
    }
    size_t nw = (size_t)l->O * l->I, nx = (size_t)l->B * l->I;
    if ((s = amp_ctx_scratch(cx, nw > nx ? nw : nx, &acc))) return s;
    // dW [O,I] = G^T [O,B] @ X [B,I]
    float *dw = direct(l->w->grad, acc);
    if (l->wg_in) {
        if ((s = amp_nvfp4_wgrad(cx, l, dw))) return s;
        if ((s = amp_tensor_accum(cx->reg, l->w->grad, dw))) return s;
    } else {
        size_t bad = amp_ctx_gemm_count(cx, 1, 0, l->O, l->I, l->B, G->data, l->O, l->in_op->data, l->I, 0.0f, dw, l->I);
        if ((s = take(cx, l->w->grad, dw, bad))) return s;
    }
    if (l->b) {
        // db [O] = sum over rows of G, in double (rows in order), rounded once to float
        // (NVFP4 layers: of the gradient before its quantization, as TE's bgrad_quantize)
        bias_grad(acc, (l->wg_in ? l->out->grad : G)->data, l->B, l->O);
        if ((s = amp_tensor_accum(cx->reg, l->b->grad, acc))) return s;
    }
    if (l->in->grad) {
        // dX [B,I] = G [B,O] @ W [O,I]
        float *dx = l->in_op == l->in ? direct(l->in->grad, acc) : acc;
        if (dx == l->in->grad->data)   /* (then no cast below) */
            return take(cx, l->in->grad, dx, amp_ctx_gemm_count(cx, 0, 0, l->B, l->I, l->O, G->data, l->O, l->w->data,
                                                                 l->I, 0.0f, dx, l->I));
        amp_ctx_gemm(cx, 0, 0, l->B, l->I, l->O, G->data, l->O, l->w->data, l->I, 0.0f, dx, l->I);
        if (l->in_op != l->in && !amp_format_same(&l->in->grad->fmt, &cx->pol->grad)) {
            /* the GEMM ran on a cast of `in`: autograd produces dX in the cast's
             * (gradient) dtype first, and the cast's backward widens it */
            amp_round_opts o = amp_tensor_opts(cx->reg, l->in->grad);
            o.stream |= 1ull << 33;
            if ((s = amp_round_f32(&cx->pol->grad, &o, acc, acc, nx, NULL))) return s;
        }
        if ((s = amp_tensor_accum(cx->reg, l->in->grad, dx))) return s;
    }
    return AMP_OK;
}
