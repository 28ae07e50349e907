/* LayerNorm over the last dimension (PyTorch nn.LayerNorm, biased variance). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_math.h"
#include "amp_round.h"

/* The float32 kernels below vectorise across columns only (each element's
 * operations unchanged): compiled for AVX-512 and AVX2 besides the baseline,
 * their column loops run in groups of 16 (a trip count the compiler's -O2
 * vectoriser takes) and a scalar rest. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define LN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LN_CLONES
#endif
#define COLS16(c, n, stmt)                                                   \
    do {                                                                     \
        size_t c##_0 = 0;                                                    \
        for (; c##_0 + 16 <= (n); c##_0 += 16)                               \
            for (size_t c = c##_0; c < c##_0 + 16; c++) { stmt; }            \
        for (size_t c = c##_0; c < (n); c++) { stmt; }                       \
    } while (0)

/* One row of amp_layernorm_forward (o, x: C floats, not overlapping). */
LN_CLONES static void ln_fwd_row(float *restrict o, float *mean, float *rstd, const float *restrict x,
                                 const float *restrict w, const float *restrict b, size_t C, float feps)
{
    const float fc = (float)C;
    float m = amp_sum8f(x, C) / fc;
    COLS16(c, C, float d = x[c] - m; o[c] = d * d);   /* o as scratch */
    float v = amp_sum8f(o, C) / fc;
    float s = 1.0f / sqrtf(v + feps);
    COLS16(c, C, float nrm = (x[c] - m) * s; o[c] = nrm * w[c] + b[c]);
    *mean = m;
    *rstd = s;
}

/* inp, out (N,C); weight, bias (C); mean, rstd (N). Float32 throughout, as
 * PyTorch's float32 kernels: mean = amp_sum8f(x) / C, var = amp_sum8f of
 * float(d * d), d = x - mean (two passes), rstd = 1 / sqrtf(var + eps);
 * n = (x - mean) * rstd, out = n * w + b, each operation rounded (no fused
 * multiply-add). */
void amp_layernorm_forward(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, size_t N, size_t C, double eps)
{
    const float feps = (float)eps;
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < N; r++) ln_fwd_row(out + r * C, mean + r, rstd + r, inp + r * C, weight, bias, C, feps);
}

/* ---- PyTorch CPU moments (float32, 8 lanes) ------------------------------- */
enum { TL = 8, TCHUNK = 16 };

/* Merges moments (n_add, m1_add, m2_add) into (n, m1, m2), float32 throughout. */
static void moments_add(int64_t n_add, float m1_add, float m2_add, int64_t *n, float *m1, float *m2)
{
    int64_t tot = *n + n_add;
    float c = tot == 0 ? 0.0f : (float)n_add / (float)tot;
    float delta = m1_add - *m1;
    *m1 += c * delta;
    *m2 += m2_add + delta * delta * c * (float)*n;
    *n = tot;
}

/* The smallest d >= 1 with 2^d >= m (1 for m <= 2). */
static int ceil_log2_min1(int64_t m)
{
    int d = 1;
    while (((int64_t)1 << d) < m) d++;
    return d;
}

static void torch_moments(const float *x, size_t C, float *mean, float *var)
{
    const int64_t n = (int64_t)C / TL, chunks = (n + TCHUNK - 1) / TCHUNK;
    const int depth = ceil_log2_min1(chunks);
    int64_t sn[64] = { 0 };
    float s1[64][TL], s2[64][TL];
    memset(s1, 0, sizeof s1);
    memset(s2, 0, sizeof s2);
    for (int64_t i = 0; i < chunks; i++) {
        const float *xp = x + i * TCHUNK * TL;
        int64_t k = n - i * TCHUNK < TCHUNK ? n - i * TCHUNK : TCHUNK;
        float m1[TL] = { 0 }, m2[TL] = { 0 };
        for (int64_t j = 0; j < k; j++) {
            const float cj = 1.0f / (float)(j + 1);
            for (int l = 0; l < TL; l++) {
                float xv = xp[j * TL + l], d = xv - m1[l];
                m1[l] += d * cj;
                m2[l] += d * (xv - m1[l]);
            }
        }
        /* every lane shares the counts, so the lane-wise merge keeps one count */
        int64_t cnt = sn[0];
        for (int l = 0; l < TL; l++) { int64_t c0 = cnt; moments_add(k, m1[l], m2[l], &c0, &s1[0][l], &s2[0][l]); }
        sn[0] = cnt + k;
        int64_t mask = i + 1;
        for (int j = 1; j < depth && (mask & 1) == 0; j++) {
            for (int l = 0; l < TL; l++) {
                int64_t c0 = sn[j];
                moments_add(sn[j - 1], s1[j - 1][l], s2[j - 1][l], &c0, &s1[j][l], &s2[j][l]);
            }
            sn[j] += sn[j - 1];
            sn[j - 1] = 0;
            memset(s1[j - 1], 0, sizeof s1[j - 1]);
            memset(s2[j - 1], 0, sizeof s2[j - 1]);
            mask >>= 1;
        }
    }
    for (int i = 1; i < depth; i++) {
        for (int l = 0; l < TL; l++) {
            int64_t c0 = sn[0];
            moments_add(sn[i], s1[i][l], s2[i][l], &c0, &s1[0][l], &s2[0][l]);
        }
        sn[0] += sn[i];
    }
    int64_t m0 = 0;
    float m1 = 0, m2 = 0;
    for (size_t i = (size_t)n * TL; i < C; i++) {
        float d = x[i] - m1;
        m0++;
        m1 += d / (float)m0;
        m2 += d * (x[i] - m1);
    }
    for (int l = 0; l < TL; l++) moments_add(n, s1[0][l], s2[0][l], &m0, &m1, &m2);
    *mean = m1;
    *var = m2 / (float)C;
}

void amp_layernorm_forward_torchcpu(float *out, float *mean, float *rstd,
                                    const float *inp, const float *weight,
                                    const float *bias, size_t N, size_t C, double eps)
{
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < N; r++) {
        const float *x = inp + r * C;
        float m, v;
        torch_moments(x, C, &m, &v);
        float s = 1.0f / sqrtf(v + (float)eps);
        float b = -s * m;
        float *o = out + r * C;
        for (size_t c = 0; c < C; c++) o[c] = fmaf(fmaf(x[c], s, b), weight[c], bias[c]);
        mean[r] = m;
        rstd[r] = s;
    }
}

/* One row of amp_layernorm_backward's dinp (gv, gn: C floats of scratch). */
LN_CLONES static void ln_bwd_row(float *restrict di, float *restrict gv, float *restrict gn, const float *restrict go,
                                 const float *restrict x, const float *restrict w, float m, float s, size_t C)
{
    const float fc = (float)C;
    COLS16(c, C, gv[c] = go[c] * w[c]; gn[c] = gv[c] * ((x[c] - m) * s));
    float sg = amp_sum8f(gv, C) / fc, sgn = amp_sum8f(gn, C) / fc;
    COLS16(c, C, float nrm = (x[c] - m) * s; di[c] += s * ((gv[c] - sg) - nrm * sgn));
}

/* sw (C) += go n, sb (C) += go for one row (n = (x - m) s). */
LN_CLONES static void ln_bwd_cols(float *restrict sw, float *restrict sb, const float *restrict go,
                                  const float *restrict x, float m, float s, size_t C)
{
    COLS16(c, C, sw[c] += go[c] * ((x[c] - m) * s); sb[c] += go[c]);
}

/* dout, inp, dinp (N,C); weight, dweight, dbias (C); mean, rstd (N).
 * With n = (x - mean) rstd and g = dout * w:
 *   dinp += rstd (g - mean_c(g) - n mean_c(g n)),
 *   dweight += sum_rows dout n,  dbias += sum_rows dout.
 * Float32 throughout, each operation rounded: the row sums of g and g n by
 * amp_sum8f, divided by C; the column sums over rows in increasing order from
 * +0, then added to dweight, dbias. One thread per row, the column sums on
 * one thread, so the bytes do not depend on the thread count. */
void amp_layernorm_backward(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp,
                            const float *weight, const float *mean,
                            const float *rstd, size_t N, size_t C)
{
    #pragma omp parallel if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    {
        float *buf = malloc(2 * C * sizeof *buf);
        AMP_ASSERT(buf != NULL);
        #pragma omp for schedule(static)
        for (size_t r = 0; r < N; r++)
            ln_bwd_row(dinp + r * C, buf, buf + C, dout + r * C, inp + r * C, weight, mean[r], rstd[r], C);
        free(buf);
    }
    float *sw = malloc(2 * C * sizeof *sw), *sb = sw + C;
    AMP_ASSERT(sw != NULL);
    for (size_t c = 0; c < C; c++) sw[c] = sb[c] = 0.0f;
    for (size_t r = 0; r < N; r++) ln_bwd_cols(sw, sb, dout + r * C, inp + r * C, mean[r], rstd[r], C);
    for (size_t c = 0; c < C; c++) {
        dweight[c] += sw[c];
        dbias[c] += sb[c];
    }
    free(sw);
}

/* ---- PyTorch CPU backward (float32, 8 lanes, fused multiply-adds) --------- */

/* sum over j < n of (p[j] q[j]) r[j] (q NULL: p[j] r[j]) as PyTorch's
 * map3_reduce_all / map2_reduce_all on 8 float lanes (amp_layers.h). */
static float lane_dot(const float *p, const float *q, const float *r, size_t n)
{
    float acc[TL];
    if (n < TL) {
        float s = 0.0f;
        for (size_t j = 0; j < n; j++) {
            float v = (q ? p[j] * q[j] : p[j]) * r[j];
            s = j == 0 ? v : s + v;
        }
        return s;
    }
    for (int l = 0; l < TL; l++) acc[l] = (q ? p[l] * q[l] : p[l]) * r[l];
    for (size_t d = TL; d < n; d += TL) {
        size_t k = n - d < TL ? n - d : TL;
        for (size_t l = 0; l < k; l++) acc[l] = fmaf(q ? p[d + l] * q[d + l] : p[d + l], r[d + l], acc[l]);
    }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

void amp_layernorm_backward_torchcpu(float *dinp, float *dweight, float *dbias,
                                     const float *dout, const float *inp,
                                     const float *weight, const float *mean,
                                     const float *rstd, size_t N, size_t C)
{
    const float scale = 1.0f / (float)C;
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < N; r++) {
        const float *x = inp + r * C, *dy = dout + r * C;
        float ds = lane_dot(dy, x, weight, C), db = lane_dot(dy, NULL, weight, C);
        float a = rstd[r], m = mean[r];
        float b = fmaf(db, m, -ds) * a * a * a * scale;
        float c = fmaf(-b, m, -(db * a * scale));
        float *di = dinp + r * C;
        for (size_t j = 0; j < C; j++) di[j] = fmaf(b, x[j], (a * dy[j]) * weight[j]) + c;
    }
    for (size_t j = 0; j < C; j++) { dweight[j] = 0.0f; dbias[j] = 0.0f; }
    for (size_t r = 0; r < N; r++) {          /* rows in order (one thread's buffer) */
        const float *x = inp + r * C, *dy = dout + r * C;
        float a = rstd[r], b = -a * mean[r];
        for (size_t j = 0; j < C; j++) {
            dweight[j] = fmaf(dy[j], fmaf(a, x[j], b), dweight[j]);
            dbias[j] += dy[j];
        }
    }
}
