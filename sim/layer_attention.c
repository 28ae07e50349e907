/* Causal multi-head self-attention from the fused qkv (nanoGPT's
 * CausalSelfAttention without dropout, in its non-flash form):
 *   q, k, v = qkv.split(C); per head: att = (q @ k^T) * scale, causal mask,
 *   prob = softmax(att), y = prob @ v, heads re-assembled to (B,T,C).
 * Three kernel pairs so the caller can round between them (amp_layers_gpt.h).
 * att and prob are packed causal matrices (B,NH,T(T+1)/2): entry (t,t2),
 * t2 <= t, at offset t(t+1)/2 + t2 of its head. Work is split over (b,h)
 * (or (b,h,t) rows); every output element is computed by one thread in a
 * fixed order, so the bytes do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "amp_math.h"
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_round.h"

#define ROW(t) ((t) * ((t) + 1) / 2)

/* q . k over n floats, in double with four partial sums (a fixed order). */
static double dot_f32(const float *a, const float *b, size_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)a[i] * b[i];
        s1 += (double)a[i + 1] * b[i + 1];
        s2 += (double)a[i + 2] * b[i + 2];
        s3 += (double)a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += (double)a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* Per-thread accumulators: hs doubles. */
static double *acc_alloc(size_t hs)
{
    double *a = malloc(hs * sizeof *a);
    AMP_ASSERT(a != NULL);
    return a;
}

/* att (B,NH,T(T+1)/2) = float(q . k) * scale, q and k from qkv (B,T,3C). */
void amp_attn_scores_forward(float *att, const float *qkv, float scale,
                             size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) {
            size_t b = bh / NH, h = bh % NH;
            const float *q = qkv + (b * T + t) * C3 + h * hs;
            float *a = att + bh * L + ROW(t);
            for (size_t t2 = 0; t2 <= t; t2++)
                a[t2] = (float)dot_f32(q, qkv + (b * T + t2) * C3 + C + h * hs, hs) * scale;
        }
}

/* dqkv (B,T,3C), q and k parts: with ds = float(datt * scale),
 * dq[t] += sum_{t2<=t} ds[t,t2] k[t2],  dk[t2] += sum_{t>=t2} ds[t,t2] q[t]
 * (sums in double in increasing t2 / t, one rounding each). */
void amp_attn_scores_backward(float *dqkv, const float *datt, const float *qkv,
                              float scale, size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel for schedule(static) if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        const float *da = datt + bh * L;
        const float *base = qkv + b * T * C3 + h * hs;
        float *dbase = dqkv + b * T * C3 + h * hs;
        double *acc = acc_alloc(hs);
        for (size_t t = 0; t < T; t++) {          /* dq */
            for (size_t d = 0; d < hs; d++) acc[d] = 0.0;
            for (size_t t2 = 0; t2 <= t; t2++) {
                double ds = (double)(da[ROW(t) + t2] * scale);
                const float *k = base + t2 * C3 + C;
                for (size_t d = 0; d < hs; d++) acc[d] += ds * k[d];
            }
            for (size_t d = 0; d < hs; d++) dbase[t * C3 + d] += (float)acc[d];
        }
        for (size_t t2 = 0; t2 < T; t2++) {       /* dk */
            for (size_t d = 0; d < hs; d++) acc[d] = 0.0;
            for (size_t t = t2; t < T; t++) {
                double ds = (double)(da[ROW(t) + t2] * scale);
                const float *q = base + t * C3;
                for (size_t d = 0; d < hs; d++) acc[d] += ds * q[d];
            }
            for (size_t d = 0; d < hs; d++) dbase[t2 * C3 + C + d] += (float)acc[d];
        }
        free(acc);
    }
}

/* prob (B,NH,T(T+1)/2) = row-wise softmax of att over t2 <= t. */
void amp_attn_softmax_forward(float *prob, const float *att,
                              size_t B, size_t T, size_t NH)
{
    size_t L = amp_causal_len(T);
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) {
            const float *a = att + bh * L + ROW(t);
            float *p = prob + bh * L + ROW(t);
            float mx = -INFINITY;
            for (size_t t2 = 0; t2 <= t; t2++) if (a[t2] > mx) mx = a[t2];
            double sum = 0.0;
            for (size_t t2 = 0; t2 <= t; t2++) p[t2] = a[t2] - mx;
            amp_expf_n(p, p, t + 1);
            for (size_t t2 = 0; t2 <= t; t2++) sum += p[t2];
            for (size_t t2 = 0; t2 <= t; t2++) p[t2] = (float)(p[t2] / sum);
        }
}

/* datt += prob (dprob - sum_t2 prob dprob), all (B,NH,T(T+1)/2). */
void amp_attn_softmax_backward(float *datt, const float *dprob, const float *prob,
                               size_t B, size_t T, size_t NH)
{
    size_t L = amp_causal_len(T);
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) {
            size_t o = bh * L + ROW(t);
            double s = 0.0;
            for (size_t t2 = 0; t2 <= t; t2++) s += (double)prob[o + t2] * dprob[o + t2];
            for (size_t t2 = 0; t2 <= t; t2++)
                datt[o + t2] += (float)((double)prob[o + t2] * ((double)dprob[o + t2] - s));
        }
}

/* out (B,T,C) [b,t,h*hs+d] = sum_{t2<=t} prob[b,h,t,t2] v[b,t2,h,d]
 * (in double, increasing t2, one rounding). */
void amp_attn_values_forward(float *out, const float *prob, const float *qkv,
                             size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel for schedule(static) if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        const float *vb = qkv + b * T * C3 + 2 * C + h * hs;
        double *acc = acc_alloc(hs);
        for (size_t t = 0; t < T; t++) {
            const float *p = prob + bh * L + ROW(t);
            for (size_t d = 0; d < hs; d++) acc[d] = 0.0;
            for (size_t t2 = 0; t2 <= t; t2++) {
                double pt = p[t2];
                const float *v = vb + t2 * C3;
                for (size_t d = 0; d < hs; d++) acc[d] += pt * v[d];
            }
            float *o = out + (b * T + t) * C + h * hs;
            for (size_t d = 0; d < hs; d++) o[d] = (float)acc[d];
        }
        free(acc);
    }
}

/* dprob (B,NH,T(T+1)/2) += dout[t] . v[t2];  v part of dqkv (B,T,3C):
 * dv[t2] += sum_{t>=t2} prob[t,t2] dout[t]. dout (B,T,C). */
void amp_attn_values_backward(float *dprob, float *dqkv, const float *dout,
                              const float *prob, const float *qkv,
                              size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel for schedule(static) if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        const float *v = qkv + b * T * C3 + 2 * C + h * hs;
        float *dv = dqkv + b * T * C3 + 2 * C + h * hs;
        const float *go = dout + b * T * C + h * hs;
        const float *p = prob + bh * L;
        float *dp = dprob + bh * L;
        for (size_t t = 0; t < T; t++)
            for (size_t t2 = 0; t2 <= t; t2++)
                dp[ROW(t) + t2] += (float)dot_f32(go + t * C, v + t2 * C3, hs);
        double *acc = acc_alloc(hs);
        for (size_t t2 = 0; t2 < T; t2++) {
            for (size_t d = 0; d < hs; d++) acc[d] = 0.0;
            for (size_t t = t2; t < T; t++) {
                double pt = p[ROW(t) + t2];
                const float *g = go + t * C;
                for (size_t d = 0; d < hs; d++) acc[d] += pt * g[d];
            }
            for (size_t d = 0; d < hs; d++) dv[t2 * C3 + d] += (float)acc[d];
        }
        free(acc);
    }
}

static float attn_scale(size_t C, size_t NH)
{
    return (float)(1.0 / sqrt((double)(C / NH)));
}

void amp_attention_forward(float *out, float *att, float *prob, const float *qkv,
                           size_t B, size_t T, size_t C, size_t NH)
{
    amp_attn_scores_forward(att, qkv, attn_scale(C, NH), B, T, C, NH);
    amp_attn_softmax_forward(prob, att, B, T, NH);
    amp_attn_values_forward(out, prob, qkv, B, T, C, NH);
}

void amp_attention_backward(float *dqkv, float *datt, float *dprob,
                            const float *dout, const float *prob, const float *qkv,
                            size_t B, size_t T, size_t C, size_t NH)
{
    size_t n = B * NH * amp_causal_len(T);
    memset(datt, 0, n * sizeof *datt);
    memset(dprob, 0, n * sizeof *dprob);
    amp_attn_values_backward(dprob, dqkv, dout, prob, qkv, B, T, C, NH);
    amp_attn_softmax_backward(datt, dprob, prob, B, T, NH);
    amp_attn_scores_backward(dqkv, datt, qkv, attn_scale(C, NH), B, T, C, NH);
}
