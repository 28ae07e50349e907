/* Stochastic rounding (and e8m0 in every mode) on the fast kernels (sim/round_fast.c) against the
 * reference path (amp_round1, which draws amp_rand64(seed, stream, index0 + i)
 * itself) bit for bit: every format, sr_bits 0 and 1..64, saturate/ftz/daz,
 * inputs across each format's range (its subnormals, float32 subnormals, the
 * overflow edge, specials, random bit patterns), odd lengths and offsets
 * (index0), with and without statistics (class counts against the reference's
 * classes), on the generic path and on the machine's paths; and the same bytes
 * whatever the chunking. AMP_SEED changes the inputs. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ampsim.h"

static uint64_t seed = 4242;

static float input(const amp_format *f, uint64_t i)
{
    uint64_t r = amp_rand64(seed, 11, i);
    double u = amp_rand_uniform(seed, 12, i);
    int sign = (r >> 40) & 1;
    double v;
    switch (r % 6) {
    case 0: return amp_u2f((uint32_t)(r >> 8));                                          /* any pattern */
    case 1: v = ldexp(1.0 + u, f->emin - f->mbits - 2 + (int)((r >> 16) % (uint64_t)(f->mbits + 4))); break;  /* subnormal */
    case 2: v = ldexp(1.0 + u, -149 + (int)((r >> 16) % 24)); break;                    /* float32 subnormal */
    case 3: v = f->max_finite * (0.9 + 0.2 * u); break;                                  /* overflow edge */
    default: v = ldexp(1.0 + u, f->emin + (int)((r >> 16) % (uint64_t)(f->emax - f->emin + 1)));
    }
    float x = (float)v;
    return sign ? -x : x;
}

static void check_one(const amp_format *f, int sr_bits, unsigned flags, size_t n, uint64_t index0, int with_stats,
                      amp_rounding mode)
{
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    ck_assert(x && y);
    for (size_t i = 0; i < n; i++) x[i] = input(f, i * 7 + (uint64_t)sr_bits);
    x[0] = 0.0f;
    if (n > 3) x[1] = INFINITY, x[2] = -NAN, x[3] = -0.0f;
    amp_round_opts o = amp_round_defaults();
    o.mode = mode;
    o.sr_bits = sr_bits;
    o.flags = flags;
    o.seed = seed ^ 0x55;
    o.stream = 17 + (uint64_t)sr_bits;
    o.index0 = index0;
    amp_stats st;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, n, with_stats ? &st : NULL) == AMP_OK);
    uint64_t cls[AMP_CLS_COUNT] = { 0 };
    for (size_t i = 0; i < n; i++) {
        amp_class c;
        float want = amp_round1(f, &o, x[i], i, &c);
        cls[c]++;
        ck_assert_msg(amp_f2u(y[i]) == amp_f2u(want) || (isnan(y[i]) && isnan(want)),
                      "%s %s sr_bits %d flags %u index0 %llu: x[%zu] = 0x%08x -> 0x%08x, reference 0x%08x (%s paths)",
                      f->name, amp_rounding_name(mode), sr_bits, flags, (unsigned long long)index0, i, amp_f2u(x[i]), amp_f2u(y[i]),
                      amp_f2u(want), amp_simd_name(amp_simd_active()));
    }
    if (with_stats)
        for (int c = 0; c < AMP_CLS_COUNT; c++)
            ck_assert_msg(st.cls[c] == cls[c], "%s %s sr_bits %d flags %u: class %d counted %llu, reference %llu",
                          f->name, amp_rounding_name(mode), sr_bits, flags, c, (unsigned long long)st.cls[c], (unsigned long long)cls[c]);
    free(x);
    free(y);
}

START_TEST(test_sr_vs_reference)
{
    static const int bits[] = { 0, 1, 2, 3, 7, 8, 13, 16, 22, 23, 24, 29, 30, 31, 42, 52, 53, 63, 64 };
    static const unsigned flags[] = { 0, AMP_SATURATE, AMP_FTZ, AMP_DAZ, AMP_FTZ | AMP_DAZ | AMP_SATURATE };
    for (int simd = 0; simd < 2; simd++) {
        amp_set_simd(simd ? AMP_SIMD_AUTO : AMP_SIMD_GENERIC);
        for (int fi = 0; fi < AMP_FMT_COUNT; fi++) {
            const amp_format *f = amp_format_get((amp_format_id)fi);
            for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++)
                for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
                    if ((flags[k] & AMP_DAZ) && !f->has_subnormals) continue;
                    check_one(f, bits[b], flags[k], 1000 + b, b * 1000003u, (int)(b + k) & 1, AMP_RND_SR);
                }
        }
    }
    amp_set_simd(AMP_SIMD_AUTO);
}
END_TEST

/* e8m0 has its own kernels for every mode: against the reference path too. */
START_TEST(test_e8m0_modes)
{
    const amp_format *f = amp_format_get(AMP_FMT_E8M0);
    for (int simd = 0; simd < 2; simd++) {
        amp_set_simd(simd ? AMP_SIMD_AUTO : AMP_SIMD_GENERIC);
        for (int m = 0; m < AMP_RND_COUNT; m++)
            for (int sat = 0; sat < 2; sat++)
                for (int st = 0; st < 2; st++)
                    check_one(f, m == AMP_RND_SR ? 5 * sat : 0, sat ? AMP_SATURATE : 0, 5000 + (size_t)m, 3u * (unsigned)m, st,
                              (amp_rounding)m);
    }
    amp_set_simd(AMP_SIMD_AUTO);
}
END_TEST

/* Larger arrays go through chunks (threads) and blocks (statistics): the same
 * bytes for 1 and 3 threads, equal to the reference. */
START_TEST(test_sr_chunks)
{
    const amp_format *f = amp_format_get(AMP_FMT_BF16);
    size_t n = (1u << 20) + 77;
    float *x = malloc(n * 4), *y1 = malloc(n * 4), *y3 = malloc(n * 4);
    ck_assert(x && y1 && y3);
    for (size_t i = 0; i < n; i++) x[i] = input(f, i);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_SR;
    o.seed = 99;
    o.index0 = 5;
    amp_stats s1, s3;
    amp_stats_init(&s1);
    amp_stats_init(&s3);
    amp_set_threads(1);
    ck_assert(amp_round_f32(f, &o, x, y1, n, &s1) == AMP_OK);
    amp_set_threads(3);
    ck_assert(amp_round_f32(f, &o, x, y3, n, &s3) == AMP_OK);
    amp_set_threads(1);
    ck_assert(memcmp(y1, y3, n * 4) == 0);
    ck_assert(memcmp(s1.cls, s3.cls, sizeof s1.cls) == 0);
    for (size_t i = 0; i < n; i += 997) {
        float want = amp_round1(f, &o, x[i], i, NULL);
        ck_assert_msg(amp_f2u(y1[i]) == amp_f2u(want) || (isnan(want) && isnan(y1[i])), "x[%zu]: 0x%08x vs 0x%08x", i,
                      amp_f2u(y1[i]), amp_f2u(want));
    }
    free(x); free(y1); free(y3);
}
END_TEST

int main(void)
{
    amp_check_seed("check_round_sr", "AMP_SEED", &seed);
    Suite *s = suite_create("round_sr");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sr_vs_reference);
    tcase_add_test(tc, test_sr_chunks);
    tcase_add_test(tc, test_e8m0_modes);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
