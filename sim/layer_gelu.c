/* GELU with the tanh approximation (GPT-2, llm.c, PyTorch
 * F.gelu(x, approximate='tanh')). nanoGPT's nn.GELU() is the erf form; the two
 * differ by at most ~5e-4 absolute. We follow GPT-2. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "amp_format.h"
#include "amp_layers.h"
#include "amp_math.h"
#include "amp_round.h"

#define GELU_K 0.7978845608028654f  /* sqrt(2/pi) */
#define GELU_A 0.044715f

/* The float32 kernels use 0.5 (1 + tanh u) = 1 / (1 + e^t), t = -2u,
 * u = k (x + a x^3): out = x s, s = 1 / (1 + e^t), and
 * gelu'(x) = s + 2 x s (1 - s) k (1 + 3 a x^2), 1 - s = e^t s.
 * Every operation is a float32 + - * / or an exact conversion, in a fixed
 * order (no FMA, no library call), so the loops vectorise over elements with
 * the same bits on every SIMD path. e^t (t clamped to [-18, 18]): t = j ln2 + r,
 * j the nearest integer to t / ln2, r = (t - j ln2_hi) - j ln2_lo (j ln2_hi and
 * the subtraction exact), e^r by its Taylor polynomial to degree 7 (truncation
 * < 2^-27 relative on |r| <= 0.35), times 2^j built from its bits: within
 * 3 float ulps. Where t > 18, s is taken as 0 exactly (and gelu' as s), and
 * where t < -18 it is 1 (the rounding of 1 + e^t): there tanh u is within
 * 2^-25 of -1 or 1, so this is where PyTorch's float32 tanh reaches +-1 too.
 * The error of out (and gelu') is then a few float ulps of the largest term,
 * plus that cut: |out - gelu(x)| <= 1e-6 |gelu(x)| + 1e-7 (tests/check_layers_gpt.c). */
#define GELU_CUT 18.0f

static inline __attribute__((always_inline)) float gelu_exp(float t)
{
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f;   /* 15 significant bits */
    const float ln2_lo = (float)(0.69314718055994531 - 0.693145751953125);
    float j = (t * log2e + 0x1.8p23f) - 0x1.8p23f;   /* nearest integer, exact for |t| <= 18 */
    float r = (t - j * ln2_hi) - j * ln2_lo;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    float e = 1.0f + (r + (r * r) * p);
    uint32_t b = (uint32_t)((int32_t)j + 127) << 23;
    float scale;
    memcpy(&scale, &b, sizeof scale);
    return e * scale;
}

/* t = -2 k (x + a x^3), clamped to [-18, 18], NaN taken as 0 (x NaN gives NaN anyway);
 * *tu the unclamped t (NaN stays NaN). Returns e^t of the clamped t. */
static inline __attribute__((always_inline)) float gelu_et(float x, float *tu)
{
    float t = -2.0f * (GELU_K * (x + GELU_A * x * x * x));
    *tu = t;
    float tc = t == t ? t : 0.0f;
    tc = tc > GELU_CUT ? GELU_CUT : tc;
    tc = tc < -GELU_CUT ? -GELU_CUT : tc;
    return gelu_exp(tc);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define GELU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define GELU_CLONES
#endif
#define GELU_BLOCK 2048   /* values per thread task */

/* 1 when v is inf or NaN (a bit test, so that the counting loops vectorise) */
static inline __attribute__((always_inline)) uint32_t nonfinite1(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x7f800000u) == 0x7f800000u;
}

/* One block of m values (compiled for AVX-512 and AVX2 too: the loops vectorise
 * over elements, each element the same float32 operations); returns how many
 * outputs are inf or NaN. */
GELU_CLONES static uint32_t gelu_fwd_block(float *out, const float *xv, size_t m)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < m; i++) {
        float x = xv[i], t, e = gelu_et(x, &t);
        float s = 1.0f / (1.0f + e);
        s = t > GELU_CUT ? 0.0f : s;
        float y = x * s;
        out[i] = y;
        bad += nonfinite1(y);
    }
    return bad;
}

size_t amp_gelu_forward_counted(float *out, const float *inp, size_t n)
{
    size_t bad = 0;
    #pragma omp parallel for schedule(static) reduction(+:bad) if (8 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c0 = 0; c0 < n; c0 += GELU_BLOCK)
        bad += gelu_fwd_block(out + c0, inp + c0, n - c0 < GELU_BLOCK ? n - c0 : GELU_BLOCK);
    return bad;
}

void amp_gelu_forward(float *out, const float *inp, size_t n)
{
    (void)amp_gelu_forward_counted(out, inp, n);
}

/* dinp (m) += gelu'(x) dout (acc 0: dinp = +0 + gelu'(x) dout, the same bits
 * as on a zeroed dinp); where |t| > 18, gelu' = s (0 or 1: no 0 * inf for huge x). */
static inline __attribute__((always_inline)) uint32_t gelu_bwd(float *dinp, const float *xv, const float *dout,
                                                             size_t m, int acc)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < m; i++) {
        float x = xv[i], t, e = gelu_et(x, &t);
        float s = 1.0f / (1.0f + e);
        s = t > GELU_CUT ? 0.0f : s;
        float d = s + ((2.0f * x) * (s * (e * s))) * (GELU_K * (1.0f + 3.0f * GELU_A * x * x));
        float at = t < 0.0f ? -t : t;
        d = at > GELU_CUT ? s : d;
        float r = (acc ? dinp[i] : 0.0f) + d * dout[i];
        dinp[i] = r;
        bad += nonfinite1(r);
    }
    return bad;
}

GELU_CLONES static uint32_t gelu_bwd_block(float *dinp, const float *xv, const float *dout, size_t m, int acc)
{
    return acc ? gelu_bwd(dinp, xv, dout, m, 1) : gelu_bwd(dinp, xv, dout, m, 0);
}

static size_t gelu_backward(float *dinp, const float *inp, const float *dout, size_t n, int acc)
{
    size_t bad = 0;
    #pragma omp parallel for schedule(static) reduction(+:bad) if (8 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c0 = 0; c0 < n; c0 += GELU_BLOCK)
        bad += gelu_bwd_block(dinp + c0, inp + c0, dout + c0, n - c0 < GELU_BLOCK ? n - c0 : GELU_BLOCK, acc);
    return bad;
}

void amp_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    (void)gelu_backward(dinp, inp, dout, n, 1);
}

size_t amp_gelu_backward_set(float *dinp, const float *inp, const float *dout, size_t n)
{
    return gelu_backward(dinp, inp, dout, n, 0);
}

/* x rounded to nearest even into bf16 (finite x; NaN stays NaN, an overflow
 * goes to inf as in RNE). */
static inline float bf16_rne(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Rounding into f after each operation (RNE, no statistics). */
static float rf(const amp_format *f, const amp_round_opts *o, float x)
{
    return f->id == AMP_FMT_FP32 ? x : f->id == AMP_FMT_BF16 ? bf16_rne(x) : amp_round1(f, o, (double)x, 0, NULL);
}

void amp_gelu_forward_fmt(float *out, const float *inp, size_t n, const amp_format *f)
{
    const amp_round_opts o = amp_round_defaults();
    const float kb = rf(f, &o, GELU_K), kk = rf(f, &o, GELU_A), half = rf(f, &o, 0.5f), one = rf(f, &o, 1.0f);
    #pragma omp parallel for schedule(static) if (32 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float x_cube = rf(f, &o, rf(f, &o, x * x) * x);
        float inner = rf(f, &o, kb * rf(f, &o, x + rf(f, &o, kk * x_cube)));
        float th = rf(f, &o, amp_tanhf(inner));
        out[i] = rf(f, &o, rf(f, &o, half * x) * rf(f, &o, one + th));
    }
}

void amp_gelu_backward_fmt(float *dinp, const float *inp, const float *dout, size_t n, const amp_format *f)
{
    const amp_round_opts o = amp_round_defaults();
    const float kb = rf(f, &o, GELU_K), kk = rf(f, &o, GELU_A), half = rf(f, &o, 0.5f), one = rf(f, &o, 1.0f);
    const float three_kk = rf(f, &o, rf(f, &o, 3.0f) * kk);
    #pragma omp parallel for schedule(static) if (32 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float x_sq = rf(f, &o, x * x);
        float x_cube = rf(f, &o, x_sq * x);
        float inner = rf(f, &o, kb * rf(f, &o, x + rf(f, &o, kk * x_cube)));
        float th = rf(f, &o, amp_tanhf(inner));
        float left = rf(f, &o, half * x), right = rf(f, &o, one + th);
        float left_d = rf(f, &o, half * right);
        float tanh_d = rf(f, &o, one - rf(f, &o, th * th));
        float inner_d = rf(f, &o, kb * rf(f, &o, one + rf(f, &o, three_kk * x_sq)));
        float right_d = rf(f, &o, rf(f, &o, left * tanh_d) * inner_d);
        dinp[i] += rf(f, &o, dout[i] * rf(f, &o, left_d + right_d));
    }
}
