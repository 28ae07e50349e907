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

/* The per-(b,h) bodies are compiled for AVX-512 and AVX2 besides the baseline
 * (chosen at run time). Vectorisation runs over output elements only (d, or
 * a block of t2), never across the terms of one sum: every element is the
 * same sequence of float32 fused multiply-adds (fmaf, one correctly rounded
 * operation) on every path, as PyTorch's float32 matrix products keep their
 * sums in float32. The x86-64-v3 and -v4 clones have FMA instructions; the
 * baseline calls the C library's fmaf, with the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define ATTN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), noinline))
#else
#define ATTN_CLONES
#endif

#define TB 16  /* t2 columns per block of dot products */

/* kt (n,Tp) = rows x[t] (t < T, n floats each, row stride ld) transposed,
 * zero past T (Tp = T rounded up to TB). Only moves values. */
static void pack_t(float *kt, const float *x, size_t ld, size_t n, size_t T, size_t Tp)
{
    for (size_t i = 0; i < n; i++) memset(kt + i * Tp + T, 0, (Tp - T) * sizeof *kt);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < n; i++) kt[i * Tp + t] = x[t * ld + i];
}

#define ATTN_INLINE static inline __attribute__((always_inline))   /* (inlined into the clones) */

/* out_r[j] = q_r . k_{t0+j} for j < TB and each of R (1 or 2) rows q_r, k read
 * from kt (n,Tp) columns t0..t0+TB-1, each in float32 with four partial sums
 * from +0 (a fixed order):
 *   s[i mod 4] = fmaf(q_i, k_i, s[i mod 4]) for i < n - n mod 4, then
 *   s0 = fmaf(q_i, k_i, s0) for the rest, result (s0 + s1) + (s2 + s3).
 * Two rows share the loads of k and put twice the independent sums in flight. */
ATTN_INLINE void dots_rows(int R, float *const *out, const float *const *q, const float *kt, size_t Tp, size_t t0,
                           size_t n)
{
    float s[2][4][TB] = { { { 0 } } };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float *k0 = kt + i * Tp + t0, *k1 = k0 + Tp, *k2 = k1 + Tp, *k3 = k2 + Tp;
        for (int r = 0; r < R; r++) {
            float q0 = q[r][i], q1 = q[r][i + 1], q2 = q[r][i + 2], q3 = q[r][i + 3];
            for (size_t j = 0; j < TB; j++) {
                s[r][0][j] = fmaf(q0, k0[j], s[r][0][j]);
                s[r][1][j] = fmaf(q1, k1[j], s[r][1][j]);
                s[r][2][j] = fmaf(q2, k2[j], s[r][2][j]);
                s[r][3][j] = fmaf(q3, k3[j], s[r][3][j]);
            }
        }
    }
    for (; i < n; i++) {
        const float *k0 = kt + i * Tp + t0;
        for (int r = 0; r < R; r++)
            for (size_t j = 0; j < TB; j++) s[r][0][j] = fmaf(q[r][i], k0[j], s[r][0][j]);
    }
    for (int r = 0; r < R; r++)
        for (size_t j = 0; j < TB; j++) out[r][j] = (s[r][0][j] + s[r][1][j]) + (s[r][2][j] + s[r][3][j]);
}

ATTN_INLINE void dots_block(float *out, const float *q, const float *kt, size_t Tp, size_t t0, size_t n)
{
    dots_rows(1, &out, &q, kt, Tp, t0, n);
}

ATTN_INLINE void dots_block2(float *outa, float *outb, const float *qa, const float *qb, const float *kt, size_t Tp,
                             size_t t0, size_t n)
{
    float *out[2] = { outa, outb };
    const float *q[2] = { qa, qb };
    dots_rows(2, out, q, kt, Tp, t0, n);
}

/* The causal dot products of one head: f(t, t2, q_t . k_t2) for t2 <= t < T,
 * rows t of stride ld, k packed in kt (pack_t); two rows at a time. f: store
 * (scale) or add into the packed matrix a. */
#define CAUSAL_DOTS(q, ld, kt, Tp, T, n, STORE)                                                       \
    do {                                                                                           \
        float d_[TB], e_[TB];                                                                      \
        size_t t_ = 0;                                                                             \
        for (; t_ + 2 <= (T); t_ += 2) {                                                           \
            for (size_t t0_ = 0; t0_ <= t_; t0_ += TB) {                                           \
                dots_block2(d_, e_, (q) + t_ * (ld), (q) + (t_ + 1) * (ld), kt, Tp, t0_, n);       \
                size_t na_ = t_ + 1 - t0_ < TB ? t_ + 1 - t0_ : TB, nb_ = t_ + 2 - t0_ < TB ? t_ + 2 - t0_ : TB; \
                for (size_t j_ = 0; j_ < na_; j_++) STORE(t_, t0_ + j_, d_[j_]);                   \
                for (size_t j_ = 0; j_ < nb_; j_++) STORE(t_ + 1, t0_ + j_, e_[j_]);               \
            }                                                                                      \
            if ((t_ + 1) % TB == 0) {   /* row t + 1 reaches into the next block */               \
                dots_block(d_, (q) + (t_ + 1) * (ld), kt, Tp, t_ + 1, n);                          \
                STORE(t_ + 1, t_ + 1, d_[0]);                                                      \
            }                                                                                      \
        }                                                                                          \
        for (; t_ < (T); t_++)                                                                     \
            for (size_t t0_ = 0; t0_ <= t_; t0_ += TB) {                                           \
                dots_block(d_, (q) + t_ * (ld), kt, Tp, t0_, n);                                   \
                size_t na_ = t_ + 1 - t0_ < TB ? t_ + 1 - t0_ : TB;                                \
                for (size_t j_ = 0; j_ < na_; j_++) STORE(t_, t0_ + j_, d_[j_]);                   \
            }                                                                                      \
    } while (0)

/* Per-thread work space: 2 hs floats, 2 T coefficients and a transposed
 * (hs,Tp) block. */
typedef struct attn_ws {
    float *acc;
    float *coef;                  /* T coefficients of one weighted sum */
    float *kt;
    size_t Tp;
} attn_ws;

static void ws_alloc(attn_ws *w, size_t hs, size_t T)
{
    w->Tp = (T + TB - 1) / TB * TB;
    w->acc = malloc(2 * hs * sizeof *w->acc);     /* two sums at a time (wsum2) */
    w->coef = malloc(2 * (T ? T : 1) * sizeof *w->coef);
    w->kt = malloc(hs * w->Tp * sizeof *w->kt);
    AMP_ASSERT(w->acc != NULL && w->coef != NULL && w->kt != NULL);
}

static void ws_free(attn_ws *w)
{
    free(w->acc);
    free(w->coef);
    free(w->kt);
}

/* One head's scores: a (T(T+1)/2) = (q[t] . k[t2]) * scale, with q, k
 * rows of stride C3. */
ATTN_CLONES static void scores_head(float *a, const float *q, const float *k, size_t C3, size_t T, size_t hs, float scale,
                        attn_ws *w)
{
    pack_t(w->kt, k, C3, hs, T, w->Tp);
#define SCORE_STORE(t, t2, v) (a[ROW(t) + (t2)] = (v) * scale)
    CAUSAL_DOTS(q, C3, w->kt, w->Tp, T, hs, SCORE_STORE);
#undef SCORE_STORE
}

/* att (B,NH,T(T+1)/2) = (q . k) * scale, q and k from qkv (B,T,3C). */
void amp_attn_scores_forward(float *att, const float *qkv, float scale,
                             size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    {
        attn_ws w;
        ws_alloc(&w, hs, T);
        #pragma omp for schedule(static)
        for (size_t bh = 0; bh < B * NH; bh++) {
            size_t b = bh / NH, h = bh % NH;
            const float *base = qkv + b * T * C3 + h * hs;
            scores_head(att + bh * L, base, base + C, C3, T, hs, scale, &w);
        }
        ws_free(&w);
    }
}

/* acc (n) = sum_{j0 <= j < j1} coef[j] x_j, x_j = x + j stride (n floats), in
 * float32, j increasing, from +0, acc = fmaf(coef[j], x_j, acc): 32 elements
 * at a time held in registers over the whole sum (the order of each element
 * is the same). */
#define WS_D 32
ATTN_INLINE void wsum(float *acc, const float *coef, const float *x, size_t stride, size_t j0, size_t j1, size_t n)
{
    size_t d0 = 0;
    for (; d0 + WS_D <= n; d0 += WS_D) {
        float a[WS_D];
        for (size_t d = 0; d < WS_D; d++) a[d] = 0.0f;
        for (size_t j = j0; j < j1; j++) {
            const float *xj = x + j * stride + d0;
            float c = coef[j];
            for (size_t d = 0; d < WS_D; d++) a[d] = fmaf(c, xj[d], a[d]);
        }
        for (size_t d = 0; d < WS_D; d++) acc[d0 + d] = a[d];
    }
    for (size_t d = d0; d < n; d++) acc[d] = 0.0f;
    for (size_t j = j0; j < j1 && d0 < n; j++) {
        const float *xj = x + j * stride;
        float c = coef[j];
        for (size_t d = d0; d < n; d++) acc[d] = fmaf(c, xj[d], acc[d]);
    }
}

/* wsum for two sums at once, a over [ja0, ja1) with coefficients ca and b
 * over [jb0, jb1) with cb, ranges that overlap (max(ja0, jb0) <= min(ja1,
 * jb1)): each sum's terms in increasing j (its part before the common range,
 * the common range, its part after), the same operations as wsum's, with
 * twice the independent sums in flight. */
ATTN_INLINE void wsum2(float *acca, float *accb, const float *ca, const float *cb, const float *x, size_t stride,
                       size_t ja0, size_t ja1, size_t jb0, size_t jb1, size_t n)
{
    size_t lo = ja0 > jb0 ? ja0 : jb0, hi = ja1 < jb1 ? ja1 : jb1, d0 = 0;
    if (lo > hi) {
        wsum(acca, ca, x, stride, ja0, ja1, n);
        wsum(accb, cb, x, stride, jb0, jb1, n);
        return;
    }
#define WS_STEP(acc, c, j) do { const float *xj_ = x + (j) * stride + d0; float c_ = (c)[j]; \
        for (size_t d = 0; d < WS_D; d++) acc[d] = fmaf(c_, xj_[d], acc[d]); } while (0)
    for (; d0 + WS_D <= n; d0 += WS_D) {
        float a[WS_D], b[WS_D];
        for (size_t d = 0; d < WS_D; d++) a[d] = b[d] = 0.0f;
        for (size_t j = ja0; j < lo; j++) WS_STEP(a, ca, j);
        for (size_t j = jb0; j < lo; j++) WS_STEP(b, cb, j);
        for (size_t j = lo; j < hi; j++) {
            WS_STEP(a, ca, j);
            WS_STEP(b, cb, j);
        }
        for (size_t j = hi; j < ja1; j++) WS_STEP(a, ca, j);
        for (size_t j = hi; j < jb1; j++) WS_STEP(b, cb, j);
        for (size_t d = 0; d < WS_D; d++) {
            acca[d0 + d] = a[d];
            accb[d0 + d] = b[d];
        }
    }
#undef WS_STEP
    if (d0 < n) {   /* the last n mod 32 elements, each sum as wsum does them */
        float ta[WS_D], tb[WS_D];
        wsum(ta, ca, x + d0, stride, ja0, ja1, n - d0);
        wsum(tb, cb, x + d0, stride, jb0, jb1, n - d0);
        memcpy(acca + d0, ta, (n - d0) * sizeof *ta);
        memcpy(accb + d0, tb, (n - d0) * sizeof *tb);
    }
}

/* y (n) += acc (n). */
static void add_rounded(float *y, const float *acc, size_t n)
{
    for (size_t d = 0; d < n; d++) y[d] += acc[d];
}

/* One head of amp_attn_scores_backward: dq and dk of (b,h). */
ATTN_CLONES static void scores_bwd_head(float *dbase, const float *da, const float *base, size_t C3, size_t C,
                                        size_t T, size_t hs, float scale, attn_ws *w)
{
    float *acc = w->acc, *acc2 = w->acc + hs, *coef = w->coef, *coef2 = w->coef + T;
    size_t t = 0, t2 = 0;
    for (; t + 2 <= T; t += 2) {              /* dq, rows t and t + 1 */
        for (size_t j = 0; j <= t; j++) coef[j] = da[ROW(t) + j] * scale;
        for (size_t j = 0; j <= t + 1; j++) coef2[j] = da[ROW(t + 1) + j] * scale;
        wsum2(acc, acc2, coef, coef2, base + C, C3, 0, t + 1, 0, t + 2, hs);
        add_rounded(dbase + t * C3, acc, hs);
        add_rounded(dbase + (t + 1) * C3, acc2, hs);
    }
    for (; t < T; t++) {
        for (size_t j = 0; j <= t; j++) coef[j] = da[ROW(t) + j] * scale;
        wsum(acc, coef, base + C, C3, 0, t + 1, hs);
        add_rounded(dbase + t * C3, acc, hs);
    }
    for (; t2 + 2 <= T; t2 += 2) {            /* dk, columns t2 and t2 + 1 */
        for (size_t j = t2; j < T; j++) coef[j] = da[ROW(j) + t2] * scale;
        for (size_t j = t2 + 1; j < T; j++) coef2[j] = da[ROW(j) + t2 + 1] * scale;
        wsum2(acc, acc2, coef, coef2, base, C3, t2, T, t2 + 1, T, hs);
        add_rounded(dbase + t2 * C3 + C, acc, hs);
        add_rounded(dbase + (t2 + 1) * C3 + C, acc2, hs);
    }
    for (; t2 < T; t2++) {
        for (size_t j = t2; j < T; j++) coef[j] = da[ROW(j) + t2] * scale;
        wsum(acc, coef, base, C3, t2, T, hs);
        add_rounded(dbase + t2 * C3 + C, acc, hs);
    }
}

/* dqkv (B,T,3C), q and k parts: with ds = datt * scale,
 * dq[t] += sum_{t2<=t} ds[t,t2] k[t2],  dk[t2] += sum_{t>=t2} ds[t,t2] q[t]
 * (sums in float32 in increasing t2 / t (wsum), then one addition each). */
void amp_attn_scores_backward(float *dqkv, const float *datt, const float *qkv,
                              float scale, size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    {
        attn_ws w;
        ws_alloc(&w, hs, T);
        #pragma omp for schedule(static)
        for (size_t bh = 0; bh < B * NH; bh++) {
            size_t b = bh / NH, h = bh % NH;
            scores_bwd_head(dqkv + b * T * C3 + h * hs, datt + bh * L, qkv + b * T * C3 + h * hs, C3, C, T, hs,
                            scale, &w);
        }
        ws_free(&w);
    }
}

/* p (n) = softmax of a (n), float32 throughout: the maximum subtracted, expf
 * (amp_expf_n), the sum amp_sum8f, p = e / sum (one rounding). A -inf entry
 * gives 0 and adds +0. */
static void softmax_row(float *p, const float *a, size_t n)
{
    float mx = -INFINITY;
    for (size_t j = 0; j < n; j++) if (a[j] > mx) mx = a[j];
    for (size_t j = 0; j < n; j++) p[j] = a[j] - mx;
    amp_expf_n(p, p, n);
    float sum = amp_sum8f(p, n);
    for (size_t j = 0; j < n; j++) p[j] = p[j] / sum;
}

/* dx (n) += p (dp - s), s = sum_j p dp (each product rounded to float32,
 * then summed in amp_sum8f's order); float32 throughout. */
static void softmax_row_bwd(float *dx, const float *dp, const float *p, size_t n)
{
    float l[8] = { 0 };
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int i = 0; i < 8; i++) l[i] += p[j + i] * dp[j + i];
    for (int i = 0; j < n; j++, i++) l[i] += p[j] * dp[j];
    float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    for (j = 0; j < n; j++) dx[j] += p[j] * (dp[j] - s);
}

/* prob (B,NH,T(T+1)/2) = row-wise softmax of att over t2 <= t. */
void amp_attn_softmax_forward(float *prob, const float *att,
                              size_t B, size_t T, size_t NH)
{
    size_t L = amp_causal_len(T);
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) softmax_row(prob + bh * L + ROW(t), att + bh * L + ROW(t), t + 1);
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
            softmax_row_bwd(datt + o, dprob + o, prob + o, t + 1);
        }
}

/* One causal row (t + 1 entries of a row of T) of amp_attn_softmax_forward_torchcpu. */
static void softmax_row_torchcpu(float *p, const float *a, size_t t, size_t T)
{
    float mx = -INFINITY, acc[8] = { 0 }, sum;
    for (size_t j = 0; j <= t; j++) mx = a[j] > mx ? a[j] : mx;
    size_t nv = T - T % 8;
    for (size_t j = 0; j < nv && j <= t; j++) acc[j % 8] += (p[j] = amp_sleef_expf(a[j] - mx));
    sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    for (size_t j = nv; j <= t; j++) sum += (p[j] = expf(a[j] - mx));
    float inv = 1.0f / sum;
    for (size_t j = 0; j <= t; j++) p[j] *= inv;
}

void amp_attn_softmax_forward_torchcpu(float *prob, const float *att, size_t B, size_t T, size_t NH)
{
    size_t L = amp_causal_len(T);
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++)
            softmax_row_torchcpu(prob + bh * L + ROW(t), att + bh * L + ROW(t), t, T);
}

/* One row of amp_attn_softmax_backward_fmt. */
static void softmax_row_bwd_fmt(float *dx, const float *dp, const float *p, size_t n, const amp_format *f,
                                const amp_round_opts *o)
{
    float lane[8] = { 0 };
    for (size_t j = 0; j < n; j++) lane[j % 8] += p[j] * dp[j];
    float s = lane[0];
    for (int j = 1; j < 8; j++) s += lane[j];
    s = amp_round1(f, o, (double)s, 0, NULL);
    for (size_t j = 0; j < n; j++) dx[j] = (dp[j] - s) * p[j];
}

void amp_attn_softmax_backward_fmt(float *datt, const float *dprob, const float *prob,
                                   size_t B, size_t T, size_t NH, const amp_format *f)
{
    size_t L = amp_causal_len(T);
    const amp_round_opts o = amp_round_defaults();
    #pragma omp parallel for collapse(2) schedule(static) if (B * NH * L >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++)
        for (size_t t = 0; t < T; t++) {
            size_t off = bh * L + ROW(t);
            softmax_row_bwd_fmt(datt + off, dprob + off, prob + off, t + 1, f, &o);
        }
}

/* ---- the same arithmetic in general shapes ---------------------------------
 * For models that form attention from separate matmul and softmax calls
 * (ampsim.torch under kernels="ampsim"): every element as above, so masked
 * entries (-inf scores, zero probabilities) add exact zeros. */
void amp_softmax_rows_forward(float *prob, const float *x, size_t rows, size_t n)
{
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++) softmax_row(prob + r * n, x + r * n, n);
}

void amp_softmax_rows_forward_torchcpu(float *prob, const float *x, size_t rows, size_t n)
{
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++)
        if (n) softmax_row_torchcpu(prob + r * n, x + r * n, n - 1, n);
}

void amp_softmax_rows_backward_fmt(float *dx, const float *dprob, const float *prob, size_t rows, size_t n,
                                   const amp_format *f)
{
    const amp_round_opts o = amp_round_defaults();
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++) softmax_row_bwd_fmt(dx + r * n, dprob + r * n, prob + r * n, n, f, &o);
}

void amp_softmax_rows_backward(float *dx, const float *dprob, const float *prob, size_t rows, size_t n)
{
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++) softmax_row_bwd(dx + r * n, dprob + r * n, prob + r * n, n);
}

/* One product of amp_bmm_f64: b_rows, the scores' dot products (dots_block);
 * else the values' ordered weighted sums (wsum). w: ws_alloc(K, N) for
 * b_rows, ws_alloc(N, K) otherwise. */
ATTN_CLONES static void bmm_one(float *out, const float *a, const float *b, size_t M, size_t N, size_t K, int b_rows,
                                attn_ws *w)
{
    if (b_rows) {
        float d[TB];
        pack_t(w->kt, b, K, K, N, w->Tp);
        for (size_t i = 0; i < M; i++)
            for (size_t j0 = 0; j0 < N; j0 += TB) {
                dots_block(d, a + i * K, w->kt, w->Tp, j0, K);
                size_t nj = N - j0 < TB ? N - j0 : TB;
                for (size_t j = 0; j < nj; j++) out[i * N + j0 + j] = d[j];
            }
        return;
    }
    for (size_t i = 0; i < M; i++) {
        for (size_t k = 0; k < K; k++) w->coef[k] = a[i * K + k];
        wsum(w->acc, w->coef, b, N, 0, K, N);
        memcpy(out + i * N, w->acc, N * sizeof *out);
    }
}

void amp_bmm_f64(float *out, const float *a, const float *b, size_t P, size_t M, size_t N, size_t K, int b_rows)
{
    if (!K || !N) {                                /* empty sums are +0 */
        memset(out, 0, P * M * N * sizeof *out);
        return;
    }
    #pragma omp parallel if (P * M * N * K >= AMP_PAR_MIN) num_threads(amp_get_threads())
    {
        attn_ws w;
        ws_alloc(&w, b_rows ? K : N, b_rows ? N : K);
        #pragma omp for schedule(static)
        for (size_t p = 0; p < P; p++) bmm_one(out + p * M * N, a + p * M * K, b + p * N * K, M, N, K, b_rows, &w);
        ws_free(&w);
    }
}

/* One head of amp_attn_values_forward: o rows of stride C, p its packed prob. */
ATTN_CLONES static void values_fwd_head(float *o, const float *p, const float *vb, size_t C3, size_t C, size_t T,
                                        size_t hs)
{
    size_t t = 0;
    for (; t + 2 <= T; t += 2)                /* rows t and t + 1: p's rows are the coefficients */
        wsum2(o + t * C, o + (t + 1) * C, p + ROW(t), p + ROW(t + 1), vb, C3, 0, t + 1, 0, t + 2, hs);
    if (t < T) wsum(o + t * C, p + ROW(t), vb, C3, 0, t + 1, hs);
}

/* out (B,T,C) [b,t,h*hs+d] = sum_{t2<=t} prob[b,h,t,t2] v[b,t2,h,d]
 * (in float32, increasing t2, fused multiply-adds: wsum). */
void amp_attn_values_forward(float *out, const float *prob, const float *qkv,
                             size_t B, size_t T, size_t C, size_t NH)
{
    AMP_ASSERT(NH > 0 && C % NH == 0);
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    #pragma omp parallel for schedule(static) if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        values_fwd_head(out + b * T * C + h * hs, prob + bh * L, qkv + b * T * C3 + 2 * C + h * hs, C3, C, T, hs);
    }
}

/* One head of amp_attn_values_backward. */
ATTN_CLONES static void values_bwd_head(float *dp, float *dv, const float *go, const float *p, const float *v,
                                        size_t C3, size_t C, size_t T, size_t hs, attn_ws *w)
{
    pack_t(w->kt, v, C3, hs, T, w->Tp);
#define DP_ADD(t, t2, v) (dp[ROW(t) + (t2)] += (v))
    CAUSAL_DOTS(go, C, w->kt, w->Tp, T, hs, DP_ADD);
#undef DP_ADD
    float *acc = w->acc, *acc2 = w->acc + hs, *coef = w->coef, *coef2 = w->coef + T;
    size_t t2 = 0;
    for (; t2 + 2 <= T; t2 += 2) {            /* columns t2 and t2 + 1 */
        for (size_t t = t2; t < T; t++) coef[t] = p[ROW(t) + t2];
        for (size_t t = t2 + 1; t < T; t++) coef2[t] = p[ROW(t) + t2 + 1];
        wsum2(acc, acc2, coef, coef2, go, C, t2, T, t2 + 1, T, hs);
        add_rounded(dv + t2 * C3, acc, hs);
        add_rounded(dv + (t2 + 1) * C3, acc2, hs);
    }
    for (; t2 < T; t2++) {
        for (size_t t = t2; t < T; t++) coef[t] = p[ROW(t) + t2];
        wsum(acc, coef, go, C, t2, T, hs);
        add_rounded(dv + t2 * C3, acc, hs);
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
    #pragma omp parallel if (B * NH * L * hs >= AMP_PAR_MIN) num_threads(amp_get_threads())
    {
        attn_ws w;
        ws_alloc(&w, hs, T);
        #pragma omp for schedule(static)
        for (size_t bh = 0; bh < B * NH; bh++) {
            size_t b = bh / NH, h = bh % NH;
            const float *v = qkv + b * T * C3 + 2 * C + h * hs;
            float *dv = dqkv + b * T * C3 + 2 * C + h * hs;
            const float *go = dout + b * T * C + h * hs;
            const float *p = prob + bh * L;
            float *dp = dprob + bh * L;
            values_bwd_head(dp, dv, go, p, v, C3, C, T, hs, &w);
        }
        ws_free(&w);
    }
}

/* ---- PyTorch CPU bf16 order (amp_gemm_pairs per head) ------------------
 * Each head's product as the full T x T matrix (masked entries exact zeros,
 * which add nothing), through amp_gemm_pairs. */

/* full (T,T) from packed causal p (zeros above the diagonal), or back. */
static void unpack(float *full, const float *p, size_t T)
{
    for (size_t t = 0; t < T; t++) {
        memcpy(full + t * T, p + ROW(t), (t + 1) * sizeof *full);
        memset(full + t * T + t + 1, 0, (T - t - 1) * sizeof *full);
    }
}

static void pack(float *p, const float *full, size_t T)
{
    for (size_t t = 0; t < T; t++) memcpy(p + ROW(t), full + t * T, (t + 1) * sizeof *p);
}

void amp_attn_pairs_scores(float *att, const float *qkv, size_t B, size_t T, size_t C, size_t NH)
{
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    float *full = malloc(T * T * sizeof *full);
    AMP_ASSERT(full != NULL);
    for (size_t bh = 0; bh < B * NH; bh++) {
        const float *q = qkv + bh / NH * T * C3 + bh % NH * hs;
        amp_gemm_pairs(0, 1, (int)T, (int)T, (int)hs, q, (int)C3, q + C, (int)C3, 0.0f, full, (int)T);
        pack(att + bh * L, full, T);
    }
    free(full);
}

void amp_attn_pairs_values(float *out, const float *prob, const float *qkv, size_t B, size_t T, size_t C, size_t NH)
{
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    float *full = malloc(T * T * sizeof *full);
    AMP_ASSERT(full != NULL);
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        unpack(full, prob + bh * L, T);
        amp_gemm_pairs(0, 0, (int)T, (int)hs, (int)T, full, (int)T, qkv + b * T * C3 + 2 * C + h * hs, (int)C3, 0.0f,
                       out + b * T * C + h * hs, (int)C);
    }
    free(full);
}

void amp_attn_pairs_values_backward(float *dprob, float *dqkv, const float *dout, const float *prob,
                                    const float *qkv, size_t B, size_t T, size_t C, size_t NH)
{
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    float *full = malloc(T * T * sizeof *full);
    AMP_ASSERT(full != NULL);
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t b = bh / NH, h = bh % NH;
        const float *v = qkv + b * T * C3 + 2 * C + h * hs, *go = dout + b * T * C + h * hs;
        amp_gemm_pairs(0, 1, (int)T, (int)T, (int)hs, go, (int)C, v, (int)C3, 0.0f, full, (int)T);
        pack(dprob + bh * L, full, T);
        unpack(full, prob + bh * L, T);
        amp_gemm_pairs(1, 0, (int)T, (int)hs, (int)T, full, (int)T, go, (int)C, 0.0f,
                       dqkv + b * T * C3 + 2 * C + h * hs, (int)C3);
    }
    free(full);
}

void amp_attn_pairs_scores_backward(float *dqkv, const float *datt, const float *qkv, size_t B, size_t T, size_t C,
                                    size_t NH)
{
    size_t hs = C / NH, C3 = 3 * C, L = amp_causal_len(T);
    float *full = malloc(T * T * sizeof *full);
    AMP_ASSERT(full != NULL);
    for (size_t bh = 0; bh < B * NH; bh++) {
        size_t off = bh / NH * T * C3 + bh % NH * hs;
        unpack(full, datt + bh * L, T);
        amp_gemm_pairs(0, 0, (int)T, (int)hs, (int)T, full, (int)T, qkv + off + C, (int)C3, 0.0f, dqkv + off, (int)C3);
        amp_gemm_pairs(1, 0, (int)T, (int)hs, (int)T, full, (int)T, qkv + off, (int)C3, 0.0f, dqkv + off + C, (int)C3);
    }
    free(full);
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
