/* Softmax cross-entropy with mean reduction. Every loss runs in FP32 under
 * autocast (both the CUDA and the CPU lists): the logits are widened, the
 * log-sum-exp and the mean are formed in double and rounded once to float, so
 * the loss is within a few float ulps of PyTorch's float32 result.
 * Shapes: logits [B,C], probs [B,C], y [B] with 0 <= y < C. */
#include "amp_math.h"
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_tensor.h"

#include <math.h>

#define XENT_CHUNK 256   /* exponentials per call of amp_exp_n */

amp_status amp_xent_forward(float *loss, float *probs, const amp_tensor *logits, const int32_t *y, int B, int C)
{
    AMP_ASSERT(logits->n == (size_t)B * C);
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *z = logits->data + (size_t)b * C;
        float *p = probs + (size_t)b * C;
        if (y[b] < 0 || y[b] >= C) return amp_fail(AMP_EINVAL, "label %d out of range 0..%d", (int)y[b], C - 1);
        double m = -INFINITY;
        for (int c = 0; c < C; c++) if (z[c] > m) m = z[c];
        double sum = 0.0, e[XENT_CHUNK];
        for (int c0 = 0; c0 < C; c0 += XENT_CHUNK) {
            int k = C - c0 < XENT_CHUNK ? C - c0 : XENT_CHUNK;
            for (int c = 0; c < k; c++) e[c] = (double)z[c0 + c] - m;
            amp_exp_n(e, e, (size_t)k);
            for (int c = 0; c < k; c++) sum += e[c];
        }
        double lse = m + amp_log(sum);
        for (int c0 = 0; c0 < C; c0 += XENT_CHUNK) {
            int k = C - c0 < XENT_CHUNK ? C - c0 : XENT_CHUNK;
            for (int c = 0; c < k; c++) e[c] = (double)z[c0 + c] - lse;
            amp_exp_n(e, e, (size_t)k);
            for (int c = 0; c < k; c++) p[c0 + c] = (float)e[c];
        }
        total += lse - (double)z[y[b]];
    }
    *loss = (float)(total / B);
    return AMP_OK;
}

// dlogits [B,C] = (probs - onehot(y)) * (scale / B), rounded into dlogits->fmt
amp_status amp_xent_backward(amp_ctx *cx, amp_tensor *dlogits, const float *probs, const int32_t *y,
                             int B, int C, float scale)
{
    float *g;
    amp_status s = amp_ctx_scratch(cx, (size_t)B * C, &g);
    if (s) return s;
    float w = scale / (float)B;              /* autograd: grad of mean = scale / B in float32 */
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)b * C + c;
            g[i] = (c == y[b]) ? (probs[i] - 1.0f) * w : probs[i] * w;
        }
    return amp_tensor_accum(cx->reg, dlogits, g);
}

/* SLEEF's single-precision exp (expf_u10, the vector variant with fused
 * multiply-adds): exp(d) = 2^q (1 + s + s^2 P(s)), q = rint(d / ln 2),
 * s = d - q ln 2 in two fused steps; 0 below -104, inf above 100. */
float amp_sleef_expf(float d)
{
    if (d < -104.0f) return 0.0f;            /* (also -inf) */
    if (d > 100.0f) return INFINITY;
    float qf = nearbyintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    int q = (int)qf;
    float s = fmaf(qf, -0.693145751953125f, d);
    s = fmaf(qf, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    int h = q >> 1;                          /* ldexp in two steps, as SLEEF */
    u *= ldexpf(1.0f, h);
    return u * ldexpf(1.0f, q - h);
}

/* One row of PyTorch's float log_softmax: o (n) from z (n). */
static void log_softmax_row(float *o, const float *z, int n)
{
    float mx = -INFINITY;
    for (int j = 0; j < n; j++) mx = z[j] > mx ? z[j] : mx;
    float sum;
    if (n < 8) {
        sum = 0.0f;
        for (int j = 0; j < n; j++) { float e = amp_sleef_expf(z[j] - mx); sum = j == 0 ? e : sum + e; }
    } else {
        float acc[8];
        for (int l = 0; l < 8; l++) acc[l] = amp_sleef_expf(z[l] - mx);
        for (int d = 8; d < n; d += 8) {
            int k = n - d < 8 ? n - d : 8;
            for (int l = 0; l < k; l++) acc[l] += amp_sleef_expf(z[d + l] - mx);
        }
        sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
    float ls = amp_logf(sum);
    for (int j = 0; j < n; j++) o[j] = (z[j] - mx) - ls;
}

void amp_xent_grad_torchcpu(float *g, const float *logits, const int32_t *y, int B, int C, float scale)
{
    const float nt = -(scale / (float)B);   /* nll_loss backward: -grad / total_weight */
    #pragma omp parallel for schedule(static) if ((size_t)B * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (int b = 0; b < B; b++) {
        float *gr = g + (size_t)b * C;
        log_softmax_row(gr, logits + (size_t)b * C, C);
        for (int c = 0; c < C; c++) gr[c] = fmaf(-amp_sleef_expf(gr[c]), nt, c == y[b] ? nt : 0.0f);
    }
}

amp_status amp_xent_backward_torchcpu(amp_ctx *cx, amp_tensor *dlogits, const amp_tensor *logits,
                                      const int32_t *y, int B, int C, float scale)
{
    float *g;
    AMP_ASSERT(logits->n == (size_t)B * C);
    amp_status s = amp_ctx_scratch(cx, (size_t)B * C, &g);
    if (s) return s;
    amp_xent_grad_torchcpu(g, logits->data, y, B, C, scale);
    return amp_tensor_accum(cx->reg, dlogits, g);
}
