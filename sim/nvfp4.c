/* NVFP4 training after NVIDIA's recipe as Transformer Engine implements it
 * (sim/amp_nvfp4.h): the quantized linear layers' operand tensors, the 16x16
 * random Hadamard transform and the weight-gradient GEMM. */
#include "amp_base.h"
#include "amp_block.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_layers.h"
#include "amp_nvfp4.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Transformer Engine's fixed sign vector of the wgrad transform (its
 * get_wgrad_sign_vector; the same signs at every step and in every layer). */
static const signed char rht_signs[AMP_RHT_N] = { 1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1 };

void amp_rht_matrix(float h[AMP_RHT_N * AMP_RHT_N])
{
    for (int i = 0; i < AMP_RHT_N; i++)
        for (int j = 0; j < AMP_RHT_N; j++)
            h[i * AMP_RHT_N + j] = (float)(rht_signs[i] * (__builtin_popcount((unsigned)(i & j)) & 1 ? -1 : 1));
}

amp_status amp_nvfp4_wgrad_operand(float *y, const float *x, size_t B, size_t K, int rht)
{
    if (rht && B % AMP_RHT_N)
        return amp_fail(AMP_EINVAL, "nvfp4: the Hadamard transform needs the rows of a layer's input (%zu) to be a "
                        "multiple of 16; turn it off with the precision nvfp4:no-hadamard", B);
    if (!rht) {
        for (size_t b0 = 0; b0 < B; b0 += AMP_RHT_N)          /* 16 rows at a time: cache-friendly */
            for (size_t k = 0; k < K; k++)
                for (size_t b = b0; b < B && b < b0 + AMP_RHT_N; b++) y[k * B + b] = x[b * K + k];
        return AMP_OK;
    }
    float h[AMP_RHT_N * AMP_RHT_N];
    amp_rht_matrix(h);
    for (size_t b0 = 0; b0 < B; b0 += AMP_RHT_N)
        for (size_t k = 0; k < K; k++) {
            float acc[AMP_RHT_N] = { 0 }, *row = y + k * B + b0;
            /* acc_j += (+-1) v_i for i = 0..15 in order: float32 sums of exact terms */
            for (int i = 0; i < AMP_RHT_N; i++) {
                float v = x[(b0 + (size_t)i) * K + k];
                for (int j = 0; j < AMP_RHT_N; j++) acc[j] = acc[j] + h[i * AMP_RHT_N + j] * v;
            }
            for (int j = 0; j < AMP_RHT_N; j++) row[j] = acc[j] * 0.25f;
        }
    /* TE writes the transform's output in its (bf16) input type before the
     * amax and the cast (its FP32-to-cast fusion only under NVTE_USE_FAST_MATH) */
    amp_round_opts o = amp_round_defaults();
    return amp_round_f32(amp_format_get(AMP_FMT_BF16), &o, y, y, B * K, NULL);
}

amp_status amp_nvfp4_resolve(amp_policy *p, const char *first, const char *last)
{
    char in[sizeof p->nvfp4_bf16], out[sizeof p->nvfp4_bf16], *save = NULL;
    size_t len = 0;
    memcpy(in, p->nvfp4_bf16, sizeof in);
    out[0] = 0;
    for (char *t = strtok_r(in, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *v = !strcmp(t, "first") ? first : !strcmp(t, "last") ? last : t;
        if (!v) continue;
        int n = snprintf(out + len, sizeof out - len, "%s%s", len ? "," : "", v);
        if (n < 0 || (size_t)n >= sizeof out - len)
            return amp_fail(AMP_EINVAL, "nvfp4: the list of bf16 layers is too long");
        len += (size_t)n;
    }
    memcpy(p->nvfp4_bf16, out, sizeof out);
    return AMP_OK;
}

int amp_nvfp4_layer_on(const amp_policy *p, const char *name)
{
    if (!p->nvfp4) return 0;
    for (const char *c = p->nvfp4_bf16; *c;) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len && !strncmp(name, c, len) && (!name[len] || c[len - 1] == '.')) return 0;
        c += len + (e ? 1 : 0);
    }
    return 1;
}

/* Makes t an NVFP4 tensor: format e2m1, blocks 1x16 (16x16 if two_d). */
static void make_nvfp4(amp_tensor *t, int two_d, int sr)
{
    amp_status s = amp_block_parse(two_d ? "nvfp4:2d" : "nvfp4", &t->blk);
    AMP_ASSERT(s == AMP_OK);
    t->fmt = *amp_format_get(AMP_FMT_E2M1);
    t->blk_sr = sr;
    t->rnd_flags = 0;
}

/* *op = the operand copy "<layer><suffix>" (registered unless the layer has
 * one already: *op set and not src itself), made NVFP4. */
static amp_status operand(amp_ctx *cx, amp_tensor **op, const amp_tensor *src, const char *layer, const char *suffix,
                          amp_role role, size_t rows, size_t cols, int sr)
{
    char buf[AMP_TENSOR_NAME + 16];
    if (!*op || *op == src) {
        snprintf(buf, sizeof buf, "%s%s", layer, suffix);
        amp_status s = amp_tensors_add(cx->reg, buf, role, amp_format_get(AMP_FMT_E2M1), 2, (size_t[]){ rows, cols }, op);
        if (s) return s;
    }
    make_nvfp4(*op, 0, sr);
    return AMP_OK;
}

amp_status amp_nvfp4_linear_init(amp_ctx *cx, amp_linear *l, const char *name)
{
    const amp_policy *p = cx->pol;
    size_t B = (size_t)l->B, I = (size_t)l->I, O = (size_t)l->O;
    amp_status s;
    if (p->nvfp4_rht && B % AMP_RHT_N)
        return amp_fail(AMP_EINVAL, "nvfp4: layer %s: the Hadamard transform needs the rows of its input (%zu) to be "
                        "a multiple of 16; turn it off with the precision nvfp4:no-hadamard", name, B);
    make_nvfp4(l->w, 1, 0);
    if ((s = operand(cx, &l->in_op, l->in, name, ".input", AMP_ROLE_ACT, B, I, 0))) return s;
    if ((s = operand(cx, &l->gout_op, l->out->grad, name, ".out.grad.input", AMP_ROLE_ACT_GRAD, B, O, p->nvfp4_sr)))
        return s;
    if ((s = operand(cx, &l->wg_in, NULL, name, ".input.wgrad", AMP_ROLE_ACT, I, B, 0))) return s;
    return operand(cx, &l->wg_gout, NULL, name, ".out.grad.wgrad", AMP_ROLE_ACT_GRAD, O, B, p->nvfp4_sr);
}

amp_status amp_nvfp4_wgrad(amp_ctx *cx, amp_linear *l, float *acc)
{
    size_t B = (size_t)l->B, I = (size_t)l->I, O = (size_t)l->O;
    const amp_tensor *G = l->out->grad;
    float *t = malloc((I > O ? I : O) * B * sizeof(float));
    if (!t) return amp_fail(AMP_ENOMEM, "out of memory for the wgrad operands of %s", l->w->name);
    l->wg_gout->gscale = G->gscale;          /* an operand copy keeps its source's scale */
    amp_status s = amp_nvfp4_wgrad_operand(t, l->in->data, B, I, cx->pol->nvfp4_rht);
    if (!s) s = amp_tensor_round(cx->reg, l->wg_in, t);
    if (!s) s = amp_nvfp4_wgrad_operand(t, G->data, B, O, cx->pol->nvfp4_rht);
    if (!s) s = amp_tensor_round(cx->reg, l->wg_gout, t);
    free(t);
    if (s) return s;
    // dW [O,I] = Gt [O,B] @ Xt [I,B]^T
    amp_gemm(&cx->gemm, 0, 1, l->O, l->I, l->B, l->wg_gout->data, l->B, l->wg_in->data, l->B, 0.0f, acc, l->I);
    return AMP_OK;
}
