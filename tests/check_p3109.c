/* Check suite: the IEEE P3109 binary8 formats (binary8p1..p7, signed and
 * unsigned, extended domain) of the format table.
 *  - all 256 codes: decoded values against the interim report's layout
 *    (tests/round_ref.h rt_p3109_value), encode(decode(code)) == code, every
 *    value rounds to itself in every mode and saturation mode;
 *  - float32 inputs around every boundary (each value, the midpoints between
 *    neighbours, one ulp either side of both; zero, the overflow threshold,
 *    infinities, negative inputs of the unsigned formats) in every mode, with
 *    OvfInf (no flag), SatFinite (AMP_SATURATE), SatPropagate (AMP_SATPROP),
 *    ftz and daz: the array path and amp_round1 against the MPFR reference,
 *    bit for bit, classes too;
 *  - special values and saturation modes typed from the report: NaN 0x80 /
 *    0xFF, +-inf 0x7F/0xFF / 0xFE, no -0, ties to the even code at P = 1. */
#include "ampsim.h"
#include "round_ref.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "binary8p1", "binary8p2", "binary8p3", "binary8p4", "binary8p5", "binary8p6",
                                     "binary8p7", "binary8p1u", "binary8p2u", "binary8p3u", "binary8p4u",
                                     "binary8p5u", "binary8p6u", "binary8p7u" };
#define N_FMT 14
static const unsigned flag_sets[] = { 0, AMP_SATURATE, AMP_SATPROP, AMP_FTZ, AMP_DAZ, AMP_SATPROP | AMP_FTZ | AMP_DAZ };
#define N_FLAGS 6

static amp_format fmt(int i)
{
    amp_format f;
    ck_assert(amp_format_parse(names[i], &f) == AMP_OK);
    ck_assert(f.nan == AMP_NAN_P3109);
    return f;
}

START_TEST(all_codes)
{
    amp_format f = fmt(_i);
    int nan = 0, inf = 0, zero = 0;
    for (uint32_t b = 0; b < 256; b++) {
        double want = rt_p3109_value(&f, b);
        float got = amp_decode1(&f, b);
        ck_assert_msg(rt_same((float)want, got), "%s code 0x%02x: want %a got %a", f.name, b, want, (double)got);
        nan += isnan(got) != 0;
        inf += isinf(got) != 0;
        zero += got == 0;
        ck_assert_msg(!(got == 0 && signbit(got)), "%s code 0x%02x decodes to -0", f.name, b);
        int64_t e = amp_encode1(&f, got);
        ck_assert_msg(e == (int64_t)b, "%s: code 0x%02x -> %a -> 0x%llx", f.name, b, (double)got, (long long)e);
        for (int m = 0; m < AMP_RND_COUNT; m++)
            for (int k = 0; k < N_FLAGS; k++) {
                amp_round_opts o = amp_round_defaults();
                o.mode = (amp_rounding)m;
                o.flags = flag_sets[k];
                if (isinf(got) && (o.flags & AMP_SATURATE)) continue;   /* SatFinite: inf -> max */
                float y, r1 = amp_round1(&f, &o, got, b, NULL), rm = amp_round1_mpfr(&f, &o, got, b, NULL);
                ck_assert(amp_round_f32(&f, &o, &got, &y, 1, NULL) == AMP_OK);
                int keep = !(o.flags & (AMP_FTZ | AMP_DAZ)) || !(fabs(got) < f.min_normal);
                if (keep)
                    ck_assert_msg(rt_same(got, y) && rt_same(got, r1) && rt_same(got, rm),
                                  "%s %s flags %u code 0x%02x: %a -> array %a scalar %a mpfr %a", f.name,
                                  amp_rounding_name(o.mode), o.flags, b, (double)got, (double)y, (double)r1, (double)rm);
            }
    }
    ck_assert_int_eq(nan, 1);                      /* one NaN */
    ck_assert_int_eq(inf, (f.is_signed ? 2 : 1));    /* +-inf, or +inf */
    ck_assert_int_eq(zero, 1);                     /* one zero, no -0 */
}
END_TEST

/* Every finite value of the format (both signs where signed), sorted. */
static size_t values(const amp_format *f, double *v)
{
    size_t n = 0;
    for (uint32_t b = 0; b < 256; b++) {
        double x = rt_p3109_value(f, b);
        if (isfinite(x)) v[n++] = x;
    }
    qsort(v, n, sizeof *v, rt_cmp_double);
    return n;
}

static void push(float *x, size_t *n, double v)
{
    float f = (float)v;
    if (f != v || !isfinite(f)) {            /* not a float32: its two float32 neighbours */
        x[(*n)++] = nextafterf(f, 0);
        x[(*n)++] = f;
        return;
    }
    x[(*n)++] = f;
    x[(*n)++] = nextafterf(f, INFINITY);
    x[(*n)++] = nextafterf(f, -INFINITY);
}

START_TEST(boundaries_against_mpfr)
{
    amp_format f = fmt(_i);
    double v[256];
    size_t nv = values(&f, v);
    float *x = malloc(20000 * sizeof *x), *y = malloc(20000 * sizeof *y);
    size_t n = 0;
    double q = ldexp(1.0, f.emax - f.mbits);     /* the top binade's quantum */
    for (size_t i = 0; i < nv; i++) {
        push(x, &n, v[i]);
        if (i + 1 < nv) push(x, &n, (v[i] + v[i + 1]) / 2);
        push(x, &n, -v[i]);                      /* negative inputs of the unsigned formats too */
    }
    push(x, &n, f.max_finite + q / 2);           /* the overflow threshold (a tie) */
    push(x, &n, f.max_finite + q);
    push(x, &n, -f.max_finite - q / 2);
    push(x, &n, f.min_subnormal / 2);
    push(x, &n, -f.min_subnormal / 2);
    push(x, &n, f.min_subnormal * 0.75);
    x[n++] = INFINITY; x[n++] = -INFINITY; x[n++] = NAN; x[n++] = 0.0f; x[n++] = -0.0f;
    x[n++] = 3e38f; x[n++] = -3e38f; x[n++] = 0x1p-149f;
    ck_assert(n < 20000);
    size_t bad = 0;
    for (int m = 0; m < AMP_RND_COUNT; m++)
        for (int k = 0; k < N_FLAGS; k++) {
            amp_round_opts o = amp_round_defaults();
            o.mode = (amp_rounding)m;
            o.flags = flag_sets[k];
            o.seed = 99;
            amp_stats st;
            amp_stats_init(&st);
            ck_assert(amp_round_f32(&f, &o, x, y, n, &st) == AMP_OK);
            uint64_t cls[AMP_CLS_COUNT] = { 0 };
            for (size_t i = 0; i < n; i++) {
                amp_class c1, cm;
                float r1 = amp_round1(&f, &o, x[i], i, &c1), rm = amp_round1_mpfr(&f, &o, x[i], i, &cm);
                cls[cm]++;
                if (!(rt_same(rm, y[i]) && rt_same(rm, r1) && c1 == cm) && bad++ < 10)
                    fprintf(stderr, "%s %s flags %u: x %a (0x%08x): mpfr %a (%s) array %a scalar %a (%s)\n", f.name,
                            amp_rounding_name(o.mode), o.flags, (double)x[i], amp_f2u(x[i]), (double)rm,
                            amp_class_name(cm), (double)y[i], (double)r1, amp_class_name(c1));
                if (!isnan(rm)) ck_assert(amp_encode1(&f, rm) >= 0);
            }
            for (int c = 0; c < AMP_CLS_COUNT; c++)
                if (cls[c] != st.cls[c] && bad++ < 10)
                    fprintf(stderr, "%s %s flags %u: class %s: mpfr %llu array %llu\n", f.name, amp_rounding_name(o.mode),
                            o.flags, amp_class_name((amp_class)c), (unsigned long long)cls[c], (unsigned long long)st.cls[c]);
        }
    free(x);
    free(y);
    ck_assert_msg(bad == 0, "%s: %zu mismatches", f.name, bad);
}
END_TEST

static float r(const char *name, unsigned flags, amp_rounding m, float x)
{
    amp_format f;
    ck_assert(amp_format_parse(name, &f) == AMP_OK);
    amp_round_opts o = amp_round_defaults();
    o.mode = m;
    o.flags = flags;
    float y;
    ck_assert(amp_round_f32(&f, &o, &x, &y, 1, NULL) == AMP_OK);
    ck_assert(rt_same(y, amp_round1_mpfr(&f, &o, x, 0, NULL)));
    return y;
}

START_TEST(special_values_and_saturation)
{
    amp_format f;
    ck_assert(amp_format_parse("binary8p3", &f) == AMP_OK);
    ck_assert(amp_encode1(&f, NAN) == 0x80 && amp_encode1(&f, INFINITY) == 0x7f && amp_encode1(&f, -INFINITY) == 0xff);
    ck_assert(amp_encode1(&f, 49152) == 0x7e && amp_encode1(&f, 0.0f) == 0 && amp_encode1(&f, -0.0f) == 0);
    ck_assert(amp_format_parse("binary8p4u", &f) == AMP_OK);
    ck_assert(amp_encode1(&f, NAN) == 0xff && amp_encode1(&f, INFINITY) == 0xfe && amp_encode1(&f, 53248) == 0xfd);
    ck_assert(amp_encode1(&f, -1.0f) == -1);
    /* OvfInf / SatFinite / SatPropagate on binary8p3 (max 49152, next 57344: threshold 53248, a tie to 49152) */
    ck_assert(r("binary8p3", 0, AMP_RND_NE, 53248) == 49152);
    ck_assert(r("binary8p3", 0, AMP_RND_NE, 53249) == INFINITY);
    ck_assert(r("binary8p3", AMP_SATURATE, AMP_RND_NE, 1e9f) == 49152);
    ck_assert(r("binary8p3", AMP_SATURATE, AMP_RND_NE, -INFINITY) == -49152);
    ck_assert(r("binary8p3", AMP_SATPROP, AMP_RND_NE, 1e9f) == 49152);
    ck_assert(r("binary8p3", AMP_SATPROP, AMP_RND_NE, -1e9f) == -49152);
    ck_assert(r("binary8p3", AMP_SATPROP, AMP_RND_NE, INFINITY) == INFINITY);
    ck_assert(r("binary8p3", AMP_SATPROP, AMP_RND_NE, -INFINITY) == -INFINITY);
    ck_assert(r("binary8p3", 0, AMP_RND_TZ, 1e9f) == 49152);   /* toward zero never overflows */
    /* no -0: a negative value that rounds to zero is +0 */
    float z = r("binary8p3", 0, AMP_RND_NE, -1e-30f);
    ck_assert(z == 0 && !signbit(z));
    /* unsigned: negative -> NaN, -0 -> +0, +inf -> +inf */
    ck_assert(isnan(r("binary8p4u", 0, AMP_RND_NE, -1.0f)));
    z = r("binary8p4u", 0, AMP_RND_NE, -0.0f);
    ck_assert(z == 0 && !signbit(z));
    ck_assert(r("binary8p4u", 0, AMP_RND_NE, INFINITY) == INFINITY);
    /* P = 1: ties go to the even code (exponent field e + 64) */
    ck_assert(r("binary8p1", 0, AMP_RND_NE, 1.5f) == 1.0f);     /* 1 = field 64 (even), 2 = field 65 */
    ck_assert(r("binary8p1", 0, AMP_RND_NE, 3.0f) == 4.0f);     /* 2 = field 65 (odd), 4 = field 66 */
    ck_assert(r("binary8p1", 0, AMP_RND_NE, -6.0f) == -4.0f);    /* 4 = field 66 (even), 8 = field 67 */
    ck_assert(r("binary8p1", 0, AMP_RND_TO, 1.25f) == 2.0f);    /* to odd: the odd code */
    ck_assert(r("binary8p1", 0, AMP_RND_TO, 2.5f) == 2.0f);
    ck_assert(r("binary8p1u", 0, AMP_RND_NE, 1.5f) == 1.0f);    /* unsigned bias 128: 1 = field 128 (even), 2 = 129 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("p3109");
    TCase *t = tcase_create("p3109");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, all_codes, 0, N_FMT);
    tcase_add_loop_test(t, boundaries_against_mpfr, 0, N_FMT);
    tcase_add_test(t, special_values_and_saturation);
    suite_add_tcase(s, t);
    return amp_check_failures(s) ? 1 : 0;
}
