/* Check suite: emulated all-reduce (sim/allreduce.c). Every expectation is
 * built here independently: float32 sums by the C compiler's own float
 * addition, narrow formats by a reference rounding written below (double sum,
 * then RNE to (ebits, mbits) with an unbounded exponent and an overflow check,
 * exact for one addition because double has p >= 2*11+2), and hand-derived
 * cases where ring and tree differ. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int ebits, mbits; double maxf; } rfmt;
static const rfmt R_FP16 = { 5, 10, 65504 }, R_BF16 = { 8, 7, 0x1.fep127 }, R_E5M2 = { 5, 2, 57344 };

/* RNE of x into an IEEE-like format with subnormals and inf. */
static float ref_round(rfmt f, double x)
{
    if (x == 0 || isnan(x) || isinf(x)) return (float)x;
    int emin = 2 - (1 << (f.ebits - 1));
    int e = ilogb(x);
    if (e < emin) e = emin;
    double ulp = ldexp(1.0, e - f.mbits);
    double r = nearbyint(x / ulp) * ulp;
    if (fabs(r) > f.maxf) return x > 0 ? INFINITY : -INFINITY;
    return (float)r;
}

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

/* Mixed magnitudes: 2^[-20, 4) with random sign. */
static void fill(float *g, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double m = 1 + urand();
        g[i] = (float)(ldexp(m, (int)(urand() * 24) - 20) * (urand() < 0.5 ? -1 : 1));
    }
}

static amp_allreduce_opts opts(const char *fmt, amp_allreduce_algo a)
{
    amp_allreduce_opts o = amp_allreduce_defaults();
    ck_assert(amp_format_parse(fmt, &o.fmt) == AMP_OK);
    o.algo = a;
    return o;
}

/* Reference pairwise tree over v[0..m), rounding each sum with rf (NULL: float32 addition). */
static float ref_tree(const float *v0, int m, const rfmt *rf)
{
    float v[64];
    memcpy(v, v0, (size_t)m * sizeof *v);
    while (m > 1) {
        for (int j = 0; j < m / 2; j++)
            v[j] = rf ? ref_round(*rf, (double)v[2 * j] + v[2 * j + 1]) : v[2 * j] + v[2 * j + 1];
        if (m % 2) v[m / 2] = v[m - 1];
        m = (m + 1) / 2;
    }
    return v[0];
}

/* Reference ring for element i of n: its chunk c starts at rank c. */
static float ref_ring(const float *v, int R, size_t i, size_t n, const rfmt *rf)
{
    size_t base = n / (size_t)R, rem = n % (size_t)R;
    int c = 0;
    /* chunk c = last k with lo_k <= i and non-empty */
    for (int k = R - 1; k >= 0; k--) {
        size_t lo = (size_t)k * base + ((size_t)k < rem ? (size_t)k : rem);
        size_t len = base + ((size_t)k < rem ? 1 : 0);
        if (i >= lo && i < lo + len) { c = k; break; }
    }
    float acc = v[c];
    for (int k = 1; k < R; k++) {
        float b = v[(c + k) % R];
        acc = rf ? ref_round(*rf, (double)acc + b) : acc + b;
    }
    return acc;
}

#define NMAX 257
static float G[32][NMAX];

static void check_one(const char *fmt, const rfmt *rf, amp_allreduce_algo a, int R, size_t n)
{
    const float *gp[32];
    float y[NMAX];
    for (int r = 0; r < R; r++) {
        fill(G[r], n);
        gp[r] = G[r];
    }
    amp_allreduce_opts o = opts(fmt, a);
    amp_allreduce_info info;
    ck_assert_msg(amp_allreduce(&o, gp, R, n, y, &info) == AMP_OK, "%s", amp_errmsg());
    ck_assert(info.scale == 1.0f);
    for (size_t i = 0; i < n; i++) {
        float v[32] = { 0 };
        for (int r = 0; r < R; r++) v[r] = rf ? ref_round(*rf, G[r][i]) : G[r][i];
        float e = a == AMP_AR_TREE ? ref_tree(v, R, rf) : ref_ring(v, R, i, n, rf);
        ck_assert_msg(bits(e) == bits(y[i]), "%s %s R=%d i=%zu: got %a want %a", fmt,
                      amp_allreduce_algo_name(a), R, i, (double)y[i], (double)e);
    }
    ck_assert_uint_eq(info.quant.n, (uint64_t)R * n);
    ck_assert_uint_eq(info.sums.n, (uint64_t)(R - 1) * n);
}

START_TEST(fp32_tree_equals_pairwise_sum)
{
    /* the single-process float32 sum in the same pairwise order */
    static const int Rs[] = { 1, 2, 3, 4, 5, 7, 8, 32 };
    for (size_t k = 0; k < sizeof Rs / sizeof Rs[0]; k++) check_one("fp32", NULL, AMP_AR_TREE, Rs[k], 101);
    /* R = 4 written out: ((g0+g1)+(g2+g3)) */
    const float *gp[4] = { G[0], G[1], G[2], G[3] };
    float y[NMAX];
    for (int r = 0; r < 4; r++) fill(G[r], 50);
    amp_allreduce_opts o = opts("fp32", AMP_AR_TREE);
    ck_assert(amp_allreduce(&o, gp, 4, 50, y, NULL) == AMP_OK);
    for (int i = 0; i < 50; i++) {
        volatile float a = G[0][i] + G[1][i], b = G[2][i] + G[3][i];
        volatile float s = a + b;
        ck_assert(bits(s) == bits(y[i]));
    }
}
END_TEST

START_TEST(fp32_ring)
{
    static const int Rs[] = { 2, 3, 4, 8 };
    for (size_t k = 0; k < sizeof Rs / sizeof Rs[0]; k++) {
        check_one("fp32", NULL, AMP_AR_RING, Rs[k], 101);
        check_one("fp32", NULL, AMP_AR_RING, Rs[k], 3);   /* fewer elements than ranks */
    }
}
END_TEST

START_TEST(narrow_formats)
{
    static const int Rs[] = { 2, 3, 8, 32 };
    struct { const char *name; const rfmt *rf; } fm[] = { { "fp16", &R_FP16 }, { "bf16", &R_BF16 }, { "e5m2", &R_E5M2 } };
    for (size_t f = 0; f < 3; f++)
        for (size_t k = 0; k < sizeof Rs / sizeof Rs[0]; k++) {
            check_one(fm[f].name, fm[f].rf, AMP_AR_TREE, Rs[k], 257);
            check_one(fm[f].name, fm[f].rf, AMP_AR_RING, Rs[k], 257);
        }
}
END_TEST

START_TEST(ring_and_tree_differ_by_order)
{
    /* bf16 (8 significand bits): 1 + 2^-8 is a tie that rounds to 1, 2^-8 + 2^-8 = 2^-7 is exact.
     * Every rank r holds v_r in all three elements, v = (1, 2^-8, 2^-8), n = 3, R = 3:
     * ring: element 0 (chunk 0) = (v0+v1)+v2 = 1; element 1 (chunk 1) = (v1+v2)+v0 = 1 + 2^-7;
     * element 2 (chunk 2) = (v2+v0)+v1 = 1.  tree: every element ((v0+v1)+v2) = 1. */
    float v[3] = { 1.0f, 0x1p-8f, 0x1p-8f }, g[3][3], y[3];
    const float *gp[3] = { g[0], g[1], g[2] };
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 3; i++) g[r][i] = v[r];
    amp_allreduce_opts o = opts("bf16", AMP_AR_RING);
    ck_assert(amp_allreduce(&o, gp, 3, 3, y, NULL) == AMP_OK);
    ck_assert(y[0] == 1.0f && y[1] == 1.0f + 0x1p-7f && y[2] == 1.0f);
    o.algo = AMP_AR_TREE;
    ck_assert(amp_allreduce(&o, gp, 3, 3, y, NULL) == AMP_OK);
    ck_assert(y[0] == 1.0f && y[1] == 1.0f && y[2] == 1.0f);
    /* fp32 keeps both: 1 + 2^-7 everywhere */
    o = opts("fp32", AMP_AR_RING);
    ck_assert(amp_allreduce(&o, gp, 3, 3, y, NULL) == AMP_OK);
    ck_assert(y[0] == 1.0f + 0x1p-7f && y[1] == y[0] && y[2] == y[0]);
}
END_TEST

START_TEST(overflow_and_flush_counted)
{
    /* fp16: 40000 + 40000 = 80000 > 65504 -> inf; 2^-25 quantizes to 0 (half of the
     * smallest subnormal 2^-24 is a tie to even -> 0: flushed). */
    float g0[2] = { 40000.0f, 0x1p-25f }, g1[2] = { 40000.0f, 0.0f }, y[2];
    const float *gp[2] = { g0, g1 };
    amp_allreduce_opts o = opts("fp16", AMP_AR_TREE);
    amp_allreduce_info info;
    ck_assert(amp_allreduce(&o, gp, 2, 2, y, &info) == AMP_OK);
    ck_assert(isinf(y[0]) && y[0] > 0);
    ck_assert(y[1] == 0.0f);
    ck_assert_uint_eq(info.quant.cls[AMP_CLS_FLUSHED], 1);
    ck_assert_uint_eq(info.quant.cls[AMP_CLS_ZERO_IN], 1);
    ck_assert_uint_eq(info.sums.cls[AMP_CLS_OVERFLOW], 1);
    ck_assert_uint_eq(info.result.cls[AMP_CLS_OVERFLOW], 1);
    ck_assert_uint_eq(info.result.n, 2);
    /* saturating rounding clamps instead */
    o.round.flags |= AMP_SATURATE;
    ck_assert(amp_allreduce(&o, gp, 2, 2, y, &info) == AMP_OK);
    ck_assert(y[0] == 65504.0f);
}
END_TEST

START_TEST(fp8_scaling)
{
    enum { R = 8, N = 64 };
    const float *gp[R];
    float y[N];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < N; i++) G[r][i] = (float)((urand() - 0.5) * 1e-6);   /* far below e5m2's normals */
        gp[r] = G[r];
    }
    G[3][7] = -3e-6f;   /* the amax */
    for (int mode = 0; mode < 2; mode++) {
        amp_allreduce_opts o = opts("e5m2", AMP_AR_RING);
        o.scaling = mode ? AMP_AR_SCALE_POW2 : AMP_AR_SCALE_AMAX;
        o.average = 1;
        amp_allreduce_info info;
        ck_assert(amp_allreduce(&o, gp, R, N, y, &info) == AMP_OK);
        double sd = 57344.0 / (R * (double)3e-6f);
        float s = mode ? (float)ldexp(1.0, (int)floor(log2(sd))) : (float)sd;
        ck_assert_msg(info.scale == s, "scale %a want %a", (double)info.scale, (double)s);
        ck_assert(info.amax == (double)3e-6f);
        float inv = (float)(1.0 / (double)s);
        for (int i = 0; i < N; i++) {
            float v[R] = { 0 };
            for (int r = 0; r < R; r++) {
                volatile float p = G[r][i] * s;
                v[r] = ref_round(R_E5M2, p);
            }
            volatile float e = ref_ring(v, R, (size_t)i, N, &R_E5M2) * inv;
            float want = (float)((double)e / R);
            ck_assert_msg(bits(want) == bits(y[i]), "mode %d i=%d: got %a want %a", mode, i, (double)y[i], (double)want);
        }
        ck_assert_uint_eq(info.result.cls[AMP_CLS_OVERFLOW], 0);
    }
    /* without scaling almost every value flushes to zero in e5m2 */
    amp_allreduce_opts o = opts("e5m2", AMP_AR_RING);
    amp_allreduce_info info;
    ck_assert(amp_allreduce(&o, gp, R, N, y, &info) == AMP_OK);
    ck_assert(info.quant.cls[AMP_CLS_FLUSHED] > (uint64_t)(R * N) / 2);
}
END_TEST

/* MX: each block of 32 elements has its own power-of-two scale from its amax
 * over the ranks; blocks of very different magnitudes keep their precision. */
START_TEST(mx_block_scaling)
{
    enum { R = 4, N = 80 };        /* blocks [0,32), [32,64), [64,80) */
    const float *gp[R];
    float y[N];
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < N; i++) {
            double mag = i < 32 ? 1e-9 : i < 64 ? 1e5 : 1e-3;
            G[r][i] = (float)((urand() - 0.5) * mag);
        }
        gp[r] = G[r];
    }
    G[1][70] = INFINITY;           /* the last block is not scaled */
    double amax[2] = { 0, 0 };
    for (int r = 0; r < R; r++)
        for (int i = 0; i < 64; i++)
            if (fabs(G[r][i]) > amax[i / 32]) amax[i / 32] = fabs(G[r][i]);
    float sb[3];
    for (int b = 0; b < 2; b++) sb[b] = (float)ldexp(1.0, (int)floor(log2(57344.0 / (R * amax[b]))));
    sb[2] = 1.0f;
    amp_allreduce_opts o = opts("e5m2", AMP_AR_RING);
    amp_allreduce_scaling sc;
    ck_assert_int_eq(amp_allreduce_scaling_parse("mx", &sc), AMP_OK);
    ck_assert_str_eq(amp_allreduce_scaling_name(sc), "mx");
    o.scaling = sc;
    o.average = 1;
    amp_allreduce_info info;
    ck_assert(amp_allreduce(&o, gp, R, N, y, &info) == AMP_OK);
    ck_assert(sb[1] < 1.0f && sb[0] > 1e8f);
    ck_assert(info.scale == sb[1]);          /* the smallest block scale */
    uint64_t flushed[3] = { 0, 0, 0 };
    for (int i = 0; i < N; i++) {
        float s = sb[i / 32], v[R];
        for (int r = 0; r < R; r++) {
            volatile float p = G[r][i] * s;
            v[r] = ref_round(R_E5M2, p);
            flushed[i / 32] += v[r] == 0 && G[r][i] != 0;
        }
        volatile float e = ref_ring(v, R, (size_t)i, N, &R_E5M2);
        if (s != 1.0f) e = e * (float)(1.0 / (double)s);
        float want = (float)((double)e / R);
        if (isnan(want)) ck_assert(isnan(y[i]));
        else ck_assert_msg(bits(want) == bits(y[i]), "i=%d: got %a want %a", i, (double)y[i], (double)want);
    }
    ck_assert_uint_eq(flushed[0] + flushed[1], 0);
    ck_assert_uint_eq(info.quant.cls[AMP_CLS_FLUSHED], flushed[2]);
    /* one scale for the first two blocks flushes the small block */
    o.scaling = AMP_AR_SCALE_POW2;
    ck_assert(amp_allreduce(&o, gp, R, 64, y, &info) == AMP_OK);
    ck_assert(info.quant.cls[AMP_CLS_FLUSHED] > 32);
}
END_TEST

START_TEST(bad_input)
{
    amp_allreduce_algo a;
    amp_allreduce_scaling s;
    ck_assert_int_eq(amp_allreduce_algo_parse("butterfly", &a), AMP_EINVAL);
    ck_assert(strstr(amp_errmsg(), "butterfly") != NULL);
    ck_assert_int_eq(amp_allreduce_scaling_parse("max", &s), AMP_EINVAL);
    ck_assert_int_eq(amp_allreduce_algo_parse("tree", &a), AMP_OK);
    ck_assert_int_eq(a, AMP_AR_TREE);
    amp_allreduce_opts o = amp_allreduce_defaults();
    float y[1];
    ck_assert_int_eq(amp_allreduce(&o, NULL, 0, 1, y, NULL), AMP_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("allreduce");
    TCase *tc = tcase_create("allreduce");
    tcase_add_test(tc, fp32_tree_equals_pairwise_sum);
    tcase_add_test(tc, fp32_ring);
    tcase_add_test(tc, narrow_formats);
    tcase_add_test(tc, ring_and_tree_differ_by_order);
    tcase_add_test(tc, overflow_and_flush_counted);
    tcase_add_test(tc, fp8_scaling);
    tcase_add_test(tc, mx_block_scaling);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
