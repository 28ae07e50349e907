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

/* out (n) = 0.5 x (1 + tanh(k (x + a x^3))), in float32 arithmetic (as
 * PyTorch's float kernel): within a few float ulps of the exact value. */
#define GELU_CHUNK 256   /* values per call of amp_tanhf_n */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define GELU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define GELU_CLONES
#endif

/* One chunk of m <= GELU_CHUNK values (compiled for AVX-512 and AVX2 too: the
 * loops vectorise over elements, each element the same float32 operations). */
GELU_CLONES static void gelu_fwd_chunk(float *out, float *keep, const float *x, size_t m)
{
    float buf[GELU_CHUNK], *th = keep ? keep : buf;
    if (m == 0) return;
    for (size_t i = 0; i < m; i++) th[i] = GELU_K * (x[i] + GELU_A * x[i] * x[i] * x[i]);
    amp_tanhf_n(th, th, m);
    for (size_t i = 0; i < m; i++) out[i] = 0.5f * x[i] * (1.0f + th[i]);
}

void amp_gelu_forward_th(float *out, float *th, const float *inp, size_t n)
{
    #pragma omp parallel for schedule(static) if (8 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c0 = 0; c0 < n; c0 += GELU_CHUNK)
        gelu_fwd_chunk(out + c0, th ? th + c0 : NULL, inp + c0, n - c0 < GELU_CHUNK ? n - c0 : GELU_CHUNK);
}

void amp_gelu_forward(float *out, const float *inp, size_t n)
{
    amp_gelu_forward_th(out, NULL, inp, n);
}

/* dinp (n) += gelu'(x) dout, in float32 arithmetic, with
 * gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) k (1 + 3 a x^2), th = tanh(k (x + a x^3)).
 * Large |x|: th = +-1 exactly, and gelu' is taken as 1 or 0. */
GELU_CLONES static void gelu_bwd_chunk(float *dinp, const float *xv, const float *kept, const float *dout, size_t m)
{
    float buf[GELU_CHUNK];
    const float *tv = kept;
    if (m == 0) return;
    if (!tv) {
        for (size_t i = 0; i < m; i++) buf[i] = GELU_K * (xv[i] + GELU_A * xv[i] * xv[i] * xv[i]);
        amp_tanhf_n(buf, buf, m);
        tv = buf;
    }
    for (size_t i = 0; i < m; i++) {
        float x = xv[i], th = tv[i];
        float d = th == 1.0f || th == -1.0f ? 0.5f * (1.0f + th)   /* (no 0 * inf for huge x) */
                : 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_K * (1.0f + 3.0f * GELU_A * x * x);
        dinp[i] += d * dout[i];
    }
}

void amp_gelu_backward_th(float *dinp, const float *inp, const float *th, const float *dout, size_t n)
{
    #pragma omp parallel for schedule(static) if (8 * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c0 = 0; c0 < n; c0 += GELU_CHUNK)
        gelu_bwd_chunk(dinp + c0, inp + c0, th ? th + c0 : NULL, dout + c0, n - c0 < GELU_CHUNK ? n - c0 : GELU_CHUNK);
}

void amp_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    amp_gelu_backward_th(dinp, inp, NULL, dout, n);
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
