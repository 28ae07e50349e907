/* A small GPT (nanoGPT's model.py without dropout) trained in emulated
 * precision: wte + wpe, L blocks of
 *     x = x + attn.c_proj(attention(attn.c_attn(ln_1(x))))
 *     x = x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))
 * then ln_f and the language-model head, whose weight is TIED to wte (as in
 * nanoGPT and GPT-2: the file holds transformer.wte.weight, no lm_head.weight).
 * Linear layers have biases (nanoGPT bias=True); GELU is the tanh form.
 * Tensor names are nanoGPT's (transformer.h.0.attn.c_attn.weight, ...).
 *
 * Precision (PyTorch autocast semantics, docs/training.md):
 * - GEMMs (c_attn, c_proj, c_fc, lm_head) are the framework's amp_linear or
 *   amp_gemm: operands in the policy's operand formats, FP32 accumulation,
 *   outputs rounded to the activation format.
 * - Weights used outside GEMMs (wte/wpe in the embedding, LayerNorm weights)
 *   are used at full precision when the policy has FP32 masters (autocast does
 *   not cast them) and in the weight format otherwise (pure policies). Their
 *   gradients live in that same format (FP32 under amp).
 * - LayerNorm and softmax outputs take amp_policy_op_format: FP32 when the
 *   policy forces the op (CUDA amp lists), else the input's format (CPU
 *   bf16 autocast: the softmax runs and outputs in bf16).
 * - The attention bmm's (q k^T and prob v) take the forward operand format
 *   (the activation format under fp8-hybrid: Transformer Engine keeps attention
 *   out of FP8); when prob or qkv are in another format they are rounded into
 *   registered operand copies "<name>.input", whose gradients are logged too.
 *   Two roundings are not logged: the raw q k^T before the 1/sqrt(hs) scaling
 *   (PyTorch rounds it, then scales and rounds again) and the scaled gradient of
 *   the scores; both are exact when hs is a power of 4.
 * - Residual adds output the inputs' common format, or FP32 when they differ
 *   (type promotion): the residual stream is FP32 under amp.
 * - The loss is the framework's softmax cross-entropy (FP32), mean over B*T.
 * - Activation gradients take the activation's format (pol->grad for tensors
 *   in the activation format), as autograd gives a gradient its tensor's dtype.
 *
 * Shapes: legend B batch, T context, C width, NH heads, V = 256 bytes,
 * N = B*T rows; activations are [N,C]-like 2-D tensors, attention matrices
 * packed causal [B,NH,T(T+1)/2] (amp_layers_gpt.h). */
#include "amp_math.h"
#include "amp_base.h"
#include "amp_data.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_layers.h"
#include "amp_model.h"
#include "amp_nvfp4.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPT_MAX_LAYERS 64
#define LN_EPS 1e-5

typedef struct gpt_ln {
    amp_tensor *w, *b, *out;      /* weight, bias [C]; out [N,C] */
    float *mean, *rstd;           /* [N] */
} gpt_ln;

typedef struct gpt_block {
    gpt_ln ln_1, ln_2;
    amp_linear c_attn, attn_proj, c_fc, mlp_proj;
    amp_tensor *qkv_op;           /* c_attn.out, or its operand copy */
    amp_tensor *att, *prob;       /* [B,NH,T(T+1)/2] */
    amp_tensor *prob_op;          /* prob, or its operand copy */
    amp_tensor *y;                /* [N,C] attention output (heads re-assembled) */
    amp_tensor *ygrad_op;         /* y->grad as a bmm operand (NULL: y->grad itself) */
    amp_tensor *res_1, *gelu, *res_2;
} gpt_block;

typedef struct gpt {
    int B, T, C, L, NH, V;
    size_t N;
    float scale;                  /* 1/sqrt(hs) */
    amp_format attn_in, attn_gin; /* bmm operand formats: forward, gradient */
    amp_tensor *wte, *wpe, *emb;
    gpt_block h[GPT_MAX_LAYERS];
    gpt_ln ln_f;
    amp_tensor *lnf_op;           /* ln_f.out as the lm_head operand */
    amp_tensor *logits;           /* lm_head.out [N,V] */
    amp_tensor *dlogits_op;       /* lm_head.out.grad.input or NULL */
    amp_tensor *lm_wgrad;         /* lm_head.weight.grad: the head's share of wte's gradient */
    float *probs;                 /* [N,V] softmax for the loss backward */
    float *work1, *work2;         /* private scratch */
    size_t work_n;
} gpt;

/* The gradient format of an activation in format f. */
static const amp_format *grad_fmt(const amp_policy *p, const amp_format *f)
{
    return amp_format_same(f, &p->act) ? &p->grad : f;
}

/* An activation (role act) with its gradient "<name>.grad". */
static amp_status add_act(amp_model *m, const char *name, const amp_format *fmt, int ndim,
                          const size_t *shape, amp_tensor **out)
{
    char buf[AMP_TENSOR_NAME + 16];
    amp_tensor *t, *g;
    amp_status s = amp_tensors_add(&m->reg, name, AMP_ROLE_ACT, fmt, ndim, shape, &t);
    if (s) return s;
    snprintf(buf, sizeof buf, "%s.grad", name);
    if ((s = amp_tensors_add(&m->reg, buf, AMP_ROLE_ACT_GRAD, grad_fmt(&m->pol, fmt), ndim, shape, &g))) return s;
    t->grad = g;
    *out = t;
    return AMP_OK;
}

/* src itself when it already is in fmt, else a registered copy "<src>.input"
 * (role of src; with a gradient in the policy's gradient format if with_grad). */
static amp_status add_operand(amp_model *m, amp_tensor *src, const amp_format *fmt, int with_grad,
                              amp_tensor **out)
{
    char buf[AMP_TENSOR_NAME + 16];
    amp_tensor *t, *g;
    if (amp_format_same(&src->fmt, fmt)) { *out = src; return AMP_OK; }
    snprintf(buf, sizeof buf, "%s.input", src->name);
    amp_status s = amp_tensors_add(&m->reg, buf, src->role, fmt, src->ndim, src->shape, &t);
    if (s) return s;
    t->rnd_flags = fmt->bits <= 8 ? m->pol.op_flags : 0;
    if (with_grad) {
        snprintf(buf, sizeof buf, "%s.input.grad", src->name);
        if ((s = amp_tensors_add(&m->reg, buf, AMP_ROLE_ACT_GRAD, &m->pol.grad, src->ndim, src->shape, &g))) return s;
        t->grad = g;
    }
    *out = t;
    return AMP_OK;
}

/* Format of weights used outside GEMMs, and of their gradients. */
static const amp_format *plain_wfmt(const amp_policy *p) { return p->has_master ? &p->master : &p->weight; }
static const amp_format *plain_gfmt(const amp_policy *p) { return p->has_master ? &p->master : &p->wgrad; }
/* The values a non-GEMM op reads for weight w (the master under amp). */
static const float *plain_w(const amp_tensor *w) { return w->master ? w->master->data : w->data; }

/* Rounds src (n floats, in place) into fmt with t's options: the unlogged
 * roundings of the attention scaling. */
static amp_status round_hidden(amp_model *m, const amp_tensor *t, const amp_format *fmt, float *x, size_t n)
{
    amp_round_opts o = amp_tensor_opts(&m->reg, t);
    o.flags |= fmt->bits <= 8 ? m->pol.op_flags : 0;
    return amp_round_f32(fmt, &o, x, x, n, NULL);
}

/* Whether round_hidden(m, t, fmt, ...) leaves every float32 value as it is
 * (FP32, no flags, no stochastic rounding): then it can be skipped. */
static int identity_round(const amp_model *m, const amp_tensor *t, const amp_format *fmt)
{
    amp_round_opts o = amp_tensor_opts(&m->reg, t);
    return fmt->id == AMP_FMT_FP32 && !t->rnd_flags && !o.flags && o.mode != AMP_RND_SR;
}

/* Format of a + b: their common format, FP32 when they differ. */
static const amp_format *promote(const amp_format *a, const amp_format *b)
{
    return amp_format_same(a, b) ? a : amp_format_get(AMP_FMT_FP32);
}

/* Where a kernel puts values that are then rounded into t: t's own data when
 * that rounding is the float32 identity (amp_tensor_round then copies
 * nothing), else the scratch w. For an accumulation (amp_tensor_accum) only
 * while t has not been written this step (the first write is a rounding). */
static float *out_buf(const amp_tensor *t, float *w)
{
    return t->fmt.id == AMP_FMT_FP32 && !t->rnd_flags && !t->written ? t->data : w;
}

static amp_status ln_init(amp_model *m, gpt_ln *ln, const char *prefix, const amp_tensor *in, int C, size_t N)
{
    char buf[AMP_TENSOR_NAME];
    const amp_policy *p = &m->pol;
    amp_status s;
    snprintf(buf, sizeof buf, "%s.weight", prefix);
    if ((s = amp_ctx_add_weight(&m->cx, buf, plain_wfmt(p), plain_gfmt(p), 1, (size_t[]){ (size_t)C }, &ln->w))) return s;
    snprintf(buf, sizeof buf, "%s.bias", prefix);
    if ((s = amp_ctx_add_weight(&m->cx, buf, plain_wfmt(p), plain_gfmt(p), 1, (size_t[]){ (size_t)C }, &ln->b))) return s;
    snprintf(buf, sizeof buf, "%s.out", prefix);
    if ((s = add_act(m, buf, amp_policy_op_format(p, AMP_OP_LAYER_NORM, &in->fmt), 2,
                     (size_t[]){ N, (size_t)C }, &ln->out))) return s;
    ln->mean = malloc(N * sizeof(float));
    ln->rstd = malloc(N * sizeof(float));
    if (!ln->mean || !ln->rstd) return amp_fail(AMP_ENOMEM, "out of memory for %s", prefix);
    return AMP_OK;
}

static amp_status ln_forward(amp_model *m, gpt *g, gpt_ln *ln, const amp_tensor *in)
{
    float *out = out_buf(ln->out, g->work1);
    if (m->pol.torch_cpu)
        amp_layernorm_forward_torchcpu(out, ln->mean, ln->rstd, in->data, plain_w(ln->w), plain_w(ln->b),
                                       g->N, (size_t)g->C, LN_EPS);
    else
        amp_layernorm_forward(out, ln->mean, ln->rstd, in->data, plain_w(ln->w), plain_w(ln->b),
                              g->N, (size_t)g->C, LN_EPS);
    return amp_tensor_round(&m->reg, ln->out, out);
}

/* in->grad += d ln(in) / d in . ln->out->grad; weight and bias gradients too. */
static amp_status ln_backward(amp_model *m, gpt *g, gpt_ln *ln, const amp_tensor *in)
{
    size_t N = g->N, C = (size_t)g->C;
    float *dw = g->work2, *db = g->work2 + C;
    if (m->pol.torch_cpu)
        amp_layernorm_backward_torchcpu(g->work1, dw, db, ln->out->grad->data, in->data, plain_w(ln->w),
                                        ln->mean, ln->rstd, N, C);
    else {
        memset(g->work1, 0, N * C * sizeof(float));
        memset(g->work2, 0, 2 * C * sizeof(float));
        amp_layernorm_backward(g->work1, dw, db, ln->out->grad->data, in->data, plain_w(ln->w),
                               ln->mean, ln->rstd, N, C);
    }
    amp_status s = amp_tensor_accum(&m->reg, in->grad, g->work1);
    if (!s) s = amp_tensor_accum(&m->reg, ln->w->grad, dw);
    if (!s) s = amp_tensor_accum(&m->reg, ln->b->grad, db);
    return s;
}

/* out = a + b (promoted format), rounded into out. */
static amp_status residual_forward(amp_model *m, gpt *g, amp_tensor *out, const amp_tensor *a, const amp_tensor *b)
{
    float *o = out_buf(out, g->work1);
    size_t bad = amp_residual_forward(o, a->data, b->data, out->n);
    return o == out->data ? amp_tensor_round_counted(&m->reg, out, bad) : amp_tensor_round(&m->reg, out, o);
}

/* a->grad += out->grad, b->grad += out->grad (each rounded into its format,
 * as the cast-back of a promoted add does). */
static amp_status residual_backward(amp_model *m, const amp_tensor *out, amp_tensor *a, amp_tensor *b)
{
    amp_status s = amp_tensor_accum(&m->reg, a->grad, out->grad->data);
    if (!s) s = amp_tensor_accum(&m->reg, b->grad, out->grad->data);
    return s;
}

static amp_status gpt_forward(amp_model *m, const amp_batch *bt, float *loss)
{
    gpt *g = m->impl;
    amp_tensors *reg = &m->reg;
    amp_ctx *cx = &m->cx;
    size_t N = g->N, B = (size_t)g->B, T = (size_t)g->T, C = (size_t)g->C, NH = (size_t)g->NH;
    amp_status s;
    const int pairs = amp_ctx_pairs(cx);     /* the attention products in PyTorch CPU's bf16 order */
    AMP_ASSERT(bt->B == g->B && bt->D == g->T && bt->tok && bt->y);
    reg->phase = AMP_PHASE_FORWARD;
    for (size_t i = 0; i < N; i++)
        if (bt->tok[i] < 0 || bt->tok[i] >= g->V || bt->y[i] < 0 || bt->y[i] >= g->V)
            return amp_fail(AMP_EINVAL, "gpt: token or target at %zu out of range 0..%d", i, g->V - 1);
    amp_embed_forward(g->work1, bt->tok, plain_w(g->wte), plain_w(g->wpe), B, T, C, (size_t)g->V);
    if ((s = amp_tensor_round(reg, g->emb, g->work1))) return s;
    amp_tensor *x = g->emb;
    for (int l = 0; l < g->L; l++) {
        gpt_block *h = &g->h[l];
        if ((s = ln_forward(m, g, &h->ln_1, x))) return s;
        if ((s = amp_linear_forward(cx, &h->c_attn))) return s;
        if (h->qkv_op != h->c_attn.out && (s = amp_tensor_round(reg, h->qkv_op, h->c_attn.out->data))) return s;
        /* scores: raw q k^T rounded to the bmm output format, then scaled
         * (float32 scores: one pass, straight into att) */
        float *ao = out_buf(h->att, g->work1);
        if (!pairs && ao == h->att->data && identity_round(m, h->att, &h->att->fmt))
            amp_attn_scores_forward(ao, h->qkv_op->data, g->scale, B, T, C, NH);
        else {
            if (pairs) amp_attn_pairs_scores(g->work1, h->qkv_op->data, B, T, C, NH);
            else amp_attn_scores_forward(g->work1, h->qkv_op->data, 1.0f, B, T, C, NH);
            if ((s = round_hidden(m, h->att, &h->att->fmt, g->work1, h->att->n))) return s;
            for (size_t i = 0; i < h->att->n; i++) g->work1[i] *= g->scale;
            ao = g->work1;
        }
        if ((s = amp_tensor_round(reg, h->att, ao))) return s;
        float *po = out_buf(h->prob, g->work1);
        if (m->pol.torch_cpu && h->prob->fmt.bits < 32) amp_attn_softmax_forward_torchcpu(po, h->att->data, B, T, NH);
        else amp_attn_softmax_forward(po, h->att->data, B, T, NH);
        if ((s = amp_tensor_round(reg, h->prob, po))) return s;
        if (h->prob_op != h->prob && (s = amp_tensor_round(reg, h->prob_op, h->prob->data))) return s;
        float *yo = out_buf(h->y, g->work1);
        if (pairs) amp_attn_pairs_values(yo, h->prob_op->data, h->qkv_op->data, B, T, C, NH);
        else amp_attn_values_forward(yo, h->prob_op->data, h->qkv_op->data, B, T, C, NH);
        if ((s = amp_tensor_round(reg, h->y, yo))) return s;
        if ((s = amp_linear_forward(cx, &h->attn_proj))) return s;
        if ((s = residual_forward(m, g, h->res_1, x, h->attn_proj.out))) return s;
        if ((s = ln_forward(m, g, &h->ln_2, h->res_1))) return s;
        if ((s = amp_linear_forward(cx, &h->c_fc))) return s;
        float *go = out_buf(h->gelu, g->work1);
        size_t bad = amp_gelu_policy_forward(&m->pol, go, h->c_fc.out);
        if ((s = go == h->gelu->data ? amp_tensor_round_counted(reg, h->gelu, bad) : amp_tensor_round(reg, h->gelu, go)))
            return s;
        if ((s = amp_linear_forward(cx, &h->mlp_proj))) return s;
        if ((s = residual_forward(m, g, h->res_2, h->res_1, h->mlp_proj.out))) return s;
        x = h->res_2;
    }
    if ((s = ln_forward(m, g, &g->ln_f, x))) return s;
    if (g->lnf_op != g->ln_f.out && (s = amp_tensor_round(reg, g->lnf_op, g->ln_f.out->data))) return s;
    /* logits [N,V] = ln_f [N,C] @ wte [V,C]^T (tied head, no bias) */
    amp_ctx_gemm(cx, 0, 1, (int)N, g->V, (int)C, g->lnf_op->data, (int)C, g->wte->data, (int)C,
             0.0f, g->work1, g->V);
    if ((s = amp_tensor_round(reg, g->logits, g->work1))) return s;
    return amp_xent_forward(loss, g->probs, g->logits, bt->y, (int)N, g->V);
}

static amp_status gpt_backward(amp_model *m, const amp_batch *bt, float loss_scale)
{
    gpt *g = m->impl;
    amp_tensors *reg = &m->reg;
    amp_ctx *cx = &m->cx;
    size_t N = g->N, B = (size_t)g->B, T = (size_t)g->T, C = (size_t)g->C, NH = (size_t)g->NH, V = (size_t)g->V;
    amp_status s;
    const int pairs = amp_ctx_pairs(cx);
    reg->phase = AMP_PHASE_BACKWARD;
    s = m->pol.torch_cpu ? amp_xent_backward_torchcpu(cx, g->logits->grad, g->logits, bt->y, (int)N, g->V, loss_scale)
                         : amp_xent_backward(cx, g->logits->grad, g->probs, bt->y, (int)N, g->V, loss_scale);
    if (s) return s;
    const amp_tensor *G = g->logits->grad;
    if (g->dlogits_op) {
        if ((s = amp_tensor_round(reg, g->dlogits_op, G->data))) return s;
        G = g->dlogits_op;
    }
    /* the head's share of wte's gradient: dW [V,C] = G^T [V,N] @ ln_f [N,C] */
    amp_ctx_gemm(cx, 1, 0, (int)V, (int)C, (int)N, G->data, (int)V, g->lnf_op->data, (int)C, 0.0f, g->work1, (int)C);
    if ((s = amp_tensor_round(reg, g->lm_wgrad, g->work1))) return s;
    if ((s = amp_tensor_accum(reg, g->wte->grad, g->lm_wgrad->data))) return s;
    /* d ln_f [N,C] = G [N,V] @ wte [V,C] */
    amp_ctx_gemm(cx, 0, 0, (int)N, (int)C, (int)V, G->data, (int)V, g->wte->data, (int)C, 0.0f, g->work1, (int)C);
    if (g->lnf_op != g->ln_f.out && !amp_format_same(&g->ln_f.out->grad->fmt, &m->pol.grad)) {
        /* as amp_linear_backward: the GEMM ran on a cast of ln_f, so autograd
         * produces the gradient in the cast's (gradient) dtype first */
        amp_round_opts o = amp_tensor_opts(reg, g->ln_f.out->grad);
        o.stream |= 1ull << 33;
        if ((s = amp_round_f32(&m->pol.grad, &o, g->work1, g->work1, N * C, NULL))) return s;
    }
    if ((s = amp_tensor_accum(reg, g->ln_f.out->grad, g->work1))) return s;
    amp_tensor *x = g->L > 0 ? g->h[g->L - 1].res_2 : g->emb;
    if ((s = ln_backward(m, g, &g->ln_f, x))) return s;
    for (int l = g->L - 1; l >= 0; l--) {
        gpt_block *h = &g->h[l];
        amp_tensor *xin = l > 0 ? g->h[l - 1].res_2 : g->emb;
        if ((s = residual_backward(m, h->res_2, h->res_1, h->mlp_proj.out))) return s;
        if ((s = amp_linear_backward(cx, &h->mlp_proj))) return s;
        float *dg = out_buf(h->c_fc.out->grad, g->work1);
        size_t bad = amp_gelu_policy_backward(&m->pol, dg, h->c_fc.out, h->gelu->grad);
        amp_tensor *dfc = h->c_fc.out->grad;   /* dg is its data on its first write */
        if ((s = dg == dfc->data ? amp_tensor_round_counted(reg, dfc, bad) : amp_tensor_accum(reg, dfc, dg))) return s;
        if ((s = amp_linear_backward(cx, &h->c_fc))) return s;
        if ((s = ln_backward(m, g, &h->ln_2, h->res_1))) return s;
        if ((s = residual_backward(m, h->res_1, xin, h->attn_proj.out))) return s;
        if ((s = amp_linear_backward(cx, &h->attn_proj))) return s;
        const amp_tensor *dy = h->y->grad;
        if (h->ygrad_op) {
            if ((s = amp_tensor_round(reg, h->ygrad_op, dy->data))) return s;
            dy = h->ygrad_op;
        }
        /* values: dprob -> work1, dv -> work2 (the v part of dqkv) */
        size_t na = h->att->n, nq = h->c_attn.out->n;
        memset(g->work1, 0, na * sizeof(float));
        memset(g->work2, 0, nq * sizeof(float));
        if (pairs)
            amp_attn_pairs_values_backward(g->work1, g->work2, dy->data, h->prob_op->data, h->qkv_op->data, B, T, C, NH);
        else
            amp_attn_values_backward(g->work1, g->work2, dy->data, h->prob_op->data, h->qkv_op->data, B, T, C, NH);
        if (h->prob_op != h->prob) {
            if ((s = amp_tensor_round(reg, h->prob_op->grad, g->work1))) return s;
            if ((s = amp_tensor_accum(reg, h->prob->grad, h->prob_op->grad->data))) return s;
        } else if ((s = amp_tensor_accum(reg, h->prob->grad, g->work1))) return s;
        float *da = out_buf(h->att->grad, g->work1);
        memset(da, 0, na * sizeof(float));
        if (m->pol.torch_cpu && h->prob->fmt.bits < 32)
            amp_attn_softmax_backward_fmt(da, h->prob->grad->data, h->prob->data, B, T, NH, &h->prob->fmt);
        else
            amp_attn_softmax_backward(da, h->prob->grad->data, h->prob->data, B, T, NH);
        if ((s = amp_tensor_accum(reg, h->att->grad, da))) return s;
        /* gradient of the raw scores: att.grad * scale, rounded (unlogged);
         * float32: the kernel scales as it reads */
        if (!pairs && identity_round(m, h->att->grad, &g->attn_gin))
            amp_attn_scores_backward(g->work2, h->att->grad->data, h->qkv_op->data, g->scale, B, T, C, NH);
        else {
            for (size_t i = 0; i < na; i++) g->work1[i] = h->att->grad->data[i] * g->scale;
            if ((s = round_hidden(m, h->att->grad, &g->attn_gin, g->work1, na))) return s;
            if (pairs) amp_attn_pairs_scores_backward(g->work2, g->work1, h->qkv_op->data, B, T, C, NH);
            else amp_attn_scores_backward(g->work2, g->work1, h->qkv_op->data, 1.0f, B, T, C, NH);
        }
        if (h->qkv_op != h->c_attn.out) {
            if ((s = amp_tensor_round(reg, h->qkv_op->grad, g->work2))) return s;
            if ((s = amp_tensor_accum(reg, h->c_attn.out->grad, h->qkv_op->grad->data))) return s;
        } else if ((s = amp_tensor_accum(reg, h->c_attn.out->grad, g->work2))) return s;
        if ((s = amp_linear_backward(cx, &h->c_attn))) return s;
        if ((s = ln_backward(m, g, &h->ln_1, xin))) return s;
    }
    /* embedding: wte [V,C] and wpe [T,C] gradients */
    memset(g->work1, 0, V * C * sizeof(float));
    memset(g->work2, 0, T * C * sizeof(float));
    amp_embed_backward(g->work1, g->work2, g->emb->grad->data, bt->tok, B, T, C, V);
    if ((s = amp_tensor_accum(reg, g->wte->grad, g->work1))) return s;
    return amp_tensor_accum(reg, g->wpe->grad, g->work2);
}

static void gpt_destroy(amp_model *m)
{
    gpt *g = m->impl;
    if (!g) return;
    for (int l = 0; l < g->L; l++) {
        free(g->h[l].ln_1.mean); free(g->h[l].ln_1.rstd);
        free(g->h[l].ln_2.mean); free(g->h[l].ln_2.rstd);
    }
    free(g->ln_f.mean); free(g->ln_f.rstd);
    free(g->probs); free(g->work1); free(g->work2);
    free(g);
    m->impl = NULL;
}

/* nanoGPT's _init_weights: Linear and Embedding weights N(0, 0.02), the
 * c_proj weights N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weight 1 bias 0.
 * Normal values by Box-Muller from amp_rand_uniform(seed, stream, i), the
 * stream keyed by the tensor's name (not its registry id, which depends on the
 * policy), so every precision policy starts from the same weights. */
static amp_status init_weights(amp_model *m, gpt *g, uint64_t seed)
{
    amp_status s = AMP_OK;
    for (int i = 0; i < m->reg.n && !s; i++) {
        amp_tensor *w = m->reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        float *v = malloc(w->n * sizeof(float));
        if (!v) return amp_fail(AMP_ENOMEM, "out of memory");
        const char *nm = w->name;
        size_t len = strlen(nm);
        int is_bias = len >= 5 && !strcmp(nm + len - 5, ".bias");
        int is_ln = strstr(nm, ".ln_") != NULL;
        double sd = strstr(nm, "c_proj.weight") ? 0.02 / sqrt(2.0 * g->L) : 0.02;
        uint64_t stream = 0x6770745f696e6974ull ^ amp_tensor_name_key(w->name);
        for (size_t k = 0; k < w->n; k++) {
            if (is_bias) v[k] = 0.0f;
            else if (is_ln) v[k] = 1.0f;
            else {
                double u1 = 1.0 - amp_rand_uniform(seed, stream, 2 * k);   /* (0,1] */
                double u2 = amp_rand_uniform(seed, stream, 2 * k + 1);
                v[k] = (float)(sd * sqrt(-2.0 * amp_log(u1)) * amp_cos2pi(u2));
            }
        }
        s = amp_ctx_set_weight(&m->cx, w, v);
        free(v);
    }
    return s;
}

/* Activation gradients inside block l >= 1 use the storage of the earliest
 * block that has the same tensor (block 0, unless the policy gives block 0
 * other tensors, as nvfp4 does by keeping its first layer in bf16): each is
 * written and read only during its block's backward, and the blocks run one
 * after another (statistics are taken as values are rounded). The residual
 * stream's gradients (res_2.out.grad) cross blocks and keep their own. So do
 * the activations that no backward reads (dead once the next forward op has
 * read them): the raw scores att (softmax's backward reads prob) and the
 * projections' outputs (the residual adds' backward reads only gradients).
 * This keeps that memory at one block's instead of L blocks'. Called as soon
 * as block l is built, so its own storage is given back at once. */
static int shared_in_blocks(const amp_tensor *t, const char *local)
{
    if (t->role == AMP_ROLE_ACT_GRAD) return strcmp(local, "res_2.out.grad") != 0;
    return t->role == AMP_ROLE_ACT &&
           (!strcmp(local, "attn.att") || !strcmp(local, "attn.c_proj.out") || !strcmp(local, "mlp.c_proj.out"));
}

static amp_status share_block_storage(amp_model *m, int l)
{
    char pre[32], name[AMP_TENSOR_NAME + 16];
    snprintf(pre, sizeof pre, "transformer.h.%d.", l);
    size_t np = strlen(pre);
    for (int i = 0; l > 0 && i < m->reg.n; i++) {
        amp_tensor *t = m->reg.t[i];
        if (strncmp(t->name, pre, np) || !shared_in_blocks(t, t->name + np)) continue;
        /* the earliest block with the same tensor owns the storage (a block
         * the policy keeps in another format may lack it: nvfp4's block 0) */
        const amp_tensor *owner = NULL;
        for (int k = 0; k < l && !owner; k++) {
            snprintf(name, sizeof name, "transformer.h.%d.%s", k, t->name + np);
            owner = amp_tensors_find(&m->reg, name);
        }
        amp_status s = owner ? amp_tensor_share(t, owner) : AMP_OK;
        if (s) return s;
    }
    return AMP_OK;
}

static amp_status build(amp_model *m, gpt *g)
{
    const amp_policy *p = &m->pol;
    amp_ctx *cx = &m->cx;
    size_t N = g->N, C = (size_t)g->C, T = (size_t)g->T, V = (size_t)g->V;
    size_t ashape[3] = { (size_t)g->B, (size_t)g->NH, amp_causal_len(T) };
    char nm[AMP_TENSOR_NAME], pre[AMP_TENSOR_NAME / 2];
    amp_status s;

    if ((s = amp_ctx_add_weight(&m->cx, "transformer.wte.weight", &p->weight, plain_gfmt(p), 2, (size_t[]){ V, C }, &g->wte))) return s;
    if ((s = amp_ctx_add_weight(&m->cx, "transformer.wpe.weight", plain_wfmt(p), plain_gfmt(p), 2, (size_t[]){ T, C }, &g->wpe))) return s;
    if ((s = add_act(m, "transformer.emb.out", plain_wfmt(p), 2, (size_t[]){ N, C }, &g->emb))) return s;
    amp_tensor *x = g->emb;
    for (int l = 0; l < g->L; l++) {
        gpt_block *h = &g->h[l];
        snprintf(pre, sizeof pre, "transformer.h.%d", l);
        snprintf(nm, sizeof nm, "%s.ln_1", pre);
        if ((s = ln_init(m, &h->ln_1, nm, x, g->C, N))) return s;
        snprintf(nm, sizeof nm, "%s.attn.c_attn", pre);
        if ((s = amp_linear_init(cx, &h->c_attn, nm, h->ln_1.out, 3 * g->C, 1))) return s;
        if ((s = add_operand(m, h->c_attn.out, &g->attn_in, 1, &h->qkv_op))) return s;
        snprintf(nm, sizeof nm, "%s.attn.att", pre);
        if ((s = add_act(m, nm, &p->act, 3, ashape, &h->att))) return s;
        snprintf(nm, sizeof nm, "%s.attn.prob", pre);
        if ((s = add_act(m, nm, amp_policy_op_format(p, AMP_OP_SOFTMAX, &p->act), 3, ashape, &h->prob))) return s;
        if ((s = add_operand(m, h->prob, &g->attn_in, 1, &h->prob_op))) return s;
        snprintf(nm, sizeof nm, "%s.attn.y", pre);
        if ((s = add_act(m, nm, &p->act, 2, (size_t[]){ N, C }, &h->y))) return s;
        if (!amp_format_same(&h->y->grad->fmt, &g->attn_gin)) {
            amp_tensor *op;
            if ((s = add_operand(m, h->y->grad, &g->attn_gin, 0, &op))) return s;
            h->ygrad_op = op;
        }
        snprintf(nm, sizeof nm, "%s.attn.c_proj", pre);
        if ((s = amp_linear_init(cx, &h->attn_proj, nm, h->y, g->C, 1))) return s;
        snprintf(nm, sizeof nm, "%s.res_1.out", pre);
        if ((s = add_act(m, nm, promote(&x->fmt, &h->attn_proj.out->fmt), 2, (size_t[]){ N, C }, &h->res_1))) return s;
        snprintf(nm, sizeof nm, "%s.ln_2", pre);
        if ((s = ln_init(m, &h->ln_2, nm, h->res_1, g->C, N))) return s;
        snprintf(nm, sizeof nm, "%s.mlp.c_fc", pre);
        if ((s = amp_linear_init(cx, &h->c_fc, nm, h->ln_2.out, 4 * g->C, 1))) return s;
        snprintf(nm, sizeof nm, "%s.mlp.gelu.out", pre);
        if ((s = add_act(m, nm, &h->c_fc.out->fmt, 2, h->c_fc.out->shape, &h->gelu))) return s;
        snprintf(nm, sizeof nm, "%s.mlp.c_proj", pre);
        if ((s = amp_linear_init(cx, &h->mlp_proj, nm, h->gelu, g->C, 1))) return s;
        snprintf(nm, sizeof nm, "%s.res_2.out", pre);
        if ((s = add_act(m, nm, promote(&h->res_1->fmt, &h->mlp_proj.out->fmt), 2, (size_t[]){ N, C }, &h->res_2))) return s;
        if ((s = share_block_storage(m, l))) return s;
        x = h->res_2;
    }
    if ((s = ln_init(m, &g->ln_f, "transformer.ln_f", x, g->C, N))) return s;
    if ((s = add_operand(m, g->ln_f.out, &p->fwd_in, 0, &g->lnf_op))) return s;
    if ((s = add_act(m, "lm_head.out", &p->act, 2, (size_t[]){ N, V }, &g->logits))) return s;
    if (!amp_format_same(&g->logits->grad->fmt, &p->bwd_in)) {
        amp_tensor *op;
        if ((s = add_operand(m, g->logits->grad, &p->bwd_in, 0, &op))) return s;
        g->dlogits_op = op;
    }
    if ((s = amp_tensors_add(&m->reg, "lm_head.weight.grad", AMP_ROLE_WEIGHT_GRAD, &p->wgrad, 2,
                             (size_t[]){ V, C }, &g->lm_wgrad))) return s;

    /* private scratch: the largest of N*4C (mlp), N*3C (qkv), N*V (logits),
     * V*C (wte gradient), B*NH*T(T+1)/2 (attention) */
    size_t w = N * 4 * C;
    if (N * V > w) w = N * V;
    if (V * C > w) w = V * C;
    if (ashape[0] * ashape[1] * ashape[2] > w) w = ashape[0] * ashape[1] * ashape[2];
    g->work_n = w;
    g->work1 = malloc(w * sizeof(float));
    g->work2 = malloc(w * sizeof(float));
    g->probs = malloc(N * V * sizeof(float));
    if (!g->work1 || !g->work2 || !g->probs) return amp_fail(AMP_ENOMEM, "out of memory for the model");
    return AMP_OK;
}

amp_status amp_gpt_create(amp_model *m, const amp_policy *pol, int B, int T, int C, int L, int NH, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    if (L < 1 || L > GPT_MAX_LAYERS) return amp_fail(AMP_EINVAL, "gpt: --layers must be 1..%d", GPT_MAX_LAYERS);
    if (B < 1 || B > 65536) return amp_fail(AMP_EINVAL, "gpt: --batch must be 1..65536");
    if (T < 1 || T > 4096) return amp_fail(AMP_EINVAL, "gpt: --ctx must be 1..4096");
    if (C < 1 || C > 16384) return amp_fail(AMP_EINVAL, "gpt: --dim must be 1..16384");
    if (NH < 1 || C % NH) return amp_fail(AMP_EINVAL, "gpt: --heads %d must divide --dim %d", NH, C);
    if ((double)B * T * 4.0 * C > 1e9 || (double)B * T * 256 > 1e9 || (double)B * NH * T * (T + 1) / 2 > 1e9)
        return amp_fail(AMP_ERANGE, "gpt: batch x context x width too large");
    snprintf(m->kind, sizeof m->kind, "gpt");
    m->pol = *pol;
    m->B = B;
    m->T = T;
    /* NVFP4: the first GEMM layer is block 0's c_attn (the embedding is a
     * lookup); the last, the tied lm_head, always runs in the policy's formats */
    if (pol->nvfp4) {
        amp_status s0 = amp_nvfp4_resolve(&m->pol, "transformer.h.0.attn.c_attn", "lm_head");
        if (s0) return s0;
    }
    amp_tensors_init(&m->reg, seed, pol->mode, pol->sr_bits);
    amp_status s = amp_ctx_init(&m->cx, &m->reg, &m->pol);
    if (s) { amp_tensors_free(&m->reg); return s; }
    gpt *g = calloc(1, sizeof *g);
    if (!g) { amp_model_free(m); return amp_fail(AMP_ENOMEM, "out of memory for the model"); }
    m->impl = g;
    m->forward = gpt_forward;
    m->backward = gpt_backward;
    m->destroy = gpt_destroy;
    g->B = B; g->T = T; g->C = C; g->L = L; g->NH = NH; g->V = AMP_AUSTEN_VOCAB;
    g->N = (size_t)B * T;
    g->scale = (float)(1.0 / sqrt((double)(C / NH)));
    /* PyTorch's CPU kernels multiply a bf16 tensor by a Python scalar rounded
     * to bf16 first (1/sqrt(8) = 0.35355339 becomes 0.353515625) */
    if (pol->torch_cpu && pol->act.id != AMP_FMT_FP32) {
        amp_round_opts ro = amp_round_defaults();
        g->scale = amp_round1(&pol->act, &ro, g->scale, 0, NULL);
    }
    g->attn_in = pol->fp8_scaling ? pol->act : pol->fwd_in;
    g->attn_gin = pol->fp8_scaling ? pol->grad : pol->bwd_in;
    s = build(m, g);
    if (!s) s = init_weights(m, g, seed);
    if (s) amp_model_free(m);
    return s;
}

