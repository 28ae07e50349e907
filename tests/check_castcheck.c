/* Check suite: `ampsim check-cast` and its library (sim/castcheck.c). The
 * "other libraries" are written here: the compiler's own float16 conversion
 * (_Float16, which must agree everywhere), and deliberately different rules
 * built from the MPFR reference (ties away, to 480, flush to zero, saturate,
 * toward zero, a floor E8M0 rule, -0 dropped, another NaN encoding); each
 * must land every mismatch in its class, and only there. */
#include "ampsim.h"
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const amp_format *E4M3(void) { return amp_format_get(AMP_FMT_E4M3); }

/* Every value of e4m3 (>= 0), the midpoints between them, +-1 ulp, and their negatives. */
static size_t e4m3_inputs(double *x)
{
    size_t n = 0;
    double v[128];
    int nv = 0;
    for (uint32_t b = 0; b < 0x7f; b++) v[nv++] = amp_decode1(E4M3(), b);
    for (int i = 0; i < nv; i++) {
        double m = i + 1 < nv ? (v[i] + v[i + 1]) / 2 : 464;
        double c[] = { v[i], m, nextafterf((float)m, 0), nextafterf((float)m, INFINITY), 600 + i };
        for (int k = 0; k < 5; k++) { x[n++] = c[k]; x[n++] = -c[k]; }
    }
    return n;
}

static float mpfr_cast(const amp_format *f, amp_rounding m, unsigned flags, double x)
{
    amp_round_opts o = amp_round_defaults();
    o.mode = m;
    o.flags = flags;
    return amp_round1_mpfr(f, &o, x, 0, NULL);
}

/* Runs the check of `got` (values) against ampsim's rne cast with `flags`;
 * every mismatch must be of class `want` and there must be `expect` of them
 * (-1: at least one). */
static void expect_only(const char *what, const amp_format *f, unsigned flags, const double *x, const float *got, size_t n,
                        amp_mismatch want, long expect)
{
    amp_round_opts o = amp_round_defaults();
    o.flags = flags;
    amp_cast_check c;
    memset(&c, 0, sizeof c);
    ck_assert(amp_cast_check_run(f, &o, x, got, NULL, n, 0, &c, NULL) == AMP_OK);
    uint64_t diff = c.n - c.agree;
    for (int m = 0; m < AMP_MM_COUNT; m++)
        ck_assert_msg(m == (int)want || c.count[m] == 0, "%s: %llu mismatches of class %s (first input %a)", what,
                      (unsigned long long)c.count[m], amp_mismatch_name((amp_mismatch)m), c.n_ex[m] ? c.ex[m][0].x : 0.0);
    ck_assert_msg(expect < 0 ? diff > 0 : diff == (uint64_t)expect, "%s: %llu mismatches, want %ld", what,
                  (unsigned long long)diff, expect);
    ck_assert(c.count[want] == diff);
}

START_TEST(compiler_float16_agrees)
{
    /* every float32 whose magnitude is near fp16's range, by a stride through the patterns, plus all fp16 ties */
    size_t n = 0, cap = 1 << 21;
    double *x = malloc(cap * sizeof *x);
    float *g = malloc(cap * sizeof *g);
    for (uint32_t u = 0x30000000u; u < 0x47900000u && n + 2 < cap; u += 97) {
        x[n++] = amp_u2f(u);
        x[n++] = -amp_u2f(u);
    }
    for (uint32_t b = 0; b < 0x7bff && n < cap; b++) {
        double a = amp_decode1(amp_format_get(AMP_FMT_FP16), b), z = amp_decode1(amp_format_get(AMP_FMT_FP16), b + 1);
        x[n++] = (a + z) / 2;
    }
    for (size_t i = 0; i < n; i++) g[i] = (float)(_Float16)(float)x[i];
    expect_only("_Float16", amp_format_get(AMP_FMT_FP16), 0, x, g, n, AMP_MM_OTHER, 0);
    free(x);
    free(g);
}
END_TEST

START_TEST(deliberate_differences)
{
    static double x[2048];
    static float g[2048];
    size_t n = e4m3_inputs(x);
    const amp_format *f = E4M3();
    /* ties away from zero: only the ties whose even neighbour is the lower one differ */
    long ties = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] = mpfr_cast(f, AMP_RND_NA, 0, x[i]);
        ties += !isnan(g[i]) && g[i] != mpfr_cast(f, AMP_RND_NE, 0, x[i]);
    }
    ck_assert(ties > 100);
    for (size_t i = 0; i < n; i++)   /* subnormals and the overflow threshold kept: ties only */
        if (fabs(x[i]) < f->min_normal || fabs(x[i]) >= 464) g[i] = mpfr_cast(f, AMP_RND_NE, 0, x[i]);
    long tn = 0;
    for (size_t i = 0; i < n; i++) tn += !isnan(g[i]) && g[i] != mpfr_cast(f, AMP_RND_NE, 0, x[i]);
    expect_only("ties away", f, 0, x, g, n, AMP_MM_TIE, tn);
    /* toward zero (normal range): the other neighbour, not at ties */
    long rz = 0;
    for (size_t i = 0; i < n; i++) {
        float ne = mpfr_cast(f, AMP_RND_NE, AMP_SATURATE, x[i]), tz = mpfr_cast(f, AMP_RND_TZ, AMP_SATURATE, x[i]);
        double lo = fabs(tz), hi = fabs(mpfr_cast(f, AMP_RND_UP, AMP_SATURATE, fabs(x[i])));
        int tie = 2 * fabs(x[i]) == lo + hi;
        g[i] = fabs(x[i]) >= f->min_normal && !tie ? tz : ne;
        rz += g[i] != ne;
    }
    expect_only("toward zero", f, AMP_SATURATE, x, g, n, AMP_MM_ROUNDING, rz);
    /* saturating at 480 instead of 448: what rounds beyond 448 becomes 480 */
    long big = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] = mpfr_cast(f, AMP_RND_NE, AMP_SATURATE, x[i]);
        if (fabs(x[i]) >= 464) { g[i] = x[i] < 0 ? -480.0f : 480.0f; big++; }
    }
    expect_only("max 480", f, AMP_SATURATE, x, g, n, AMP_MM_MAXFINITE, big);
    /* the library saturates, ampsim was asked not to: saturation against overflow (NaN) */
    long past = 0;   /* 464 itself is a tie that rne takes down to 448 */
    for (size_t i = 0; i < n; i++) {
        g[i] = mpfr_cast(f, AMP_RND_NE, AMP_SATURATE, x[i]);
        past += fabs(x[i]) > 464;
    }
    expect_only("saturates", f, 0, x, g, n, AMP_MM_SATURATION, past);
    /* flush to zero */
    long sub = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] = mpfr_cast(f, AMP_RND_NE, AMP_SATURATE | AMP_FTZ, x[i]);
        sub += g[i] != mpfr_cast(f, AMP_RND_NE, AMP_SATURATE, x[i]);
    }
    ck_assert(sub > 10);
    expect_only("ftz", f, AMP_SATURATE, x, g, n, AMP_MM_SUBNORMAL, sub);
    /* -0 dropped: tiny negatives give +0 */
    long nz = 0;
    for (size_t i = 0; i < n; i++) {
        g[i] = mpfr_cast(f, AMP_RND_NE, AMP_SATURATE, x[i]);
        if (g[i] == 0 && signbit(g[i])) { g[i] = 0.0f; nz++; }
    }
    ck_assert(nz > 0);
    expect_only("no -0", f, AMP_SATURATE, x, g, n, AMP_MM_NEGZERO, nz);
    /* E8M0: a floor rule against ampsim's rne */
    long e8 = 0;
    for (size_t i = 0; i < 200; i++) {
        x[i] = ldexp(1.0 + (double)i / 200, (int)i % 40 - 20);
        g[i] = (float)ldexp(1.0, ilogb(x[i]));
        e8 += g[i] != mpfr_cast(amp_format_get(AMP_FMT_E8M0), AMP_RND_NE, 0, x[i]);
    }
    expect_only("e8m0 floor", amp_format_get(AMP_FMT_E8M0), 0, x, g, 200, AMP_MM_E8M0, e8);
}
END_TEST

START_TEST(nan_encodings_in_bits)
{
    /* e5m2: ampsim's NaN for a NaN input is 0x7e (quiet, sign kept); a library writing 0x7f differs in encoding only */
    const amp_format *f = amp_format_get(AMP_FMT_E5M2);
    double x[3] = { NAN, 1.0, -2.0 };
    uint32_t bits[3] = { 0x7f, 0x3c, 0xc0 };
    amp_round_opts o = amp_round_defaults();
    amp_cast_check c;
    memset(&c, 0, sizeof c);
    int cls[3];
    ck_assert(amp_cast_check_run(f, &o, x, NULL, bits, 3, 0, &c, cls) == AMP_OK);
    ck_assert_msg(c.agree == 2 && c.count[AMP_MM_NAN] == 1 && cls[0] == AMP_MM_NAN && cls[1] == -1, "agree %llu",
                  (unsigned long long)c.agree);
    ck_assert(c.ex[AMP_MM_NAN][0].want_bits == 0x7e && c.ex[AMP_MM_NAN][0].got_bits == 0x7f);
    bits[1] = 0x100;
    ck_assert(amp_cast_check_run(f, &o, x, NULL, bits, 3, 0, &c, cls) == AMP_EINVAL);
}
END_TEST

static void cli_setup(void) { ct_mkdtemp("check_castcheck"); }
static void cli_teardown(void) { ct_rmtree(); }

START_TEST(cli)
{
    static double x[2048];
    static float xf[2048], g[2048];
    size_t n = e4m3_inputs(x);
    for (size_t i = 0; i < n; i++) {
        xf[i] = (float)x[i];
        g[i] = mpfr_cast(E4M3(), AMP_RND_NE, AMP_SATURATE, x[i]);
    }
    char p[600];
    size_t sh[1] = { n };
    snprintf(p, sizeof p, "%s/in.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, xf, 1, sh) == AMP_OK);
    snprintf(p, sizeof p, "%s/same.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, g, 1, sh) == AMP_OK);
    ck_assert_int_eq(run("check-cast --format e4m3 --saturate in.npy same.npy"), 0);
    char *out = slurp("out");
    char want[128];
    snprintf(want, sizeof want, "format e4m3, cast rne:saturate: %zu values, %zu agree, 0 differ\n", n, n);
    ck_assert_str_eq(out, want);
    free(out);
    /* the same as bit patterns */
    static uint8_t b[2048];
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)amp_encode1(E4M3(), g[i]);
    snprintf(p, sizeof p, "%s/bits.npy", tmpdir);
    ck_assert(amp_npy_write_u8(p, b, 1, sh) == AMP_OK);
    ck_assert_int_eq(run("check-cast --format e4m3 --saturate --bits in.npy bits.npy"), 0);
    /* 480 instead of 448: exit 1, the class in the table, the inputs as test vectors */
    size_t big = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) >= 464) { g[i] = x[i] < 0 ? -480.0f : 480.0f; big++; }
    snprintf(p, sizeof p, "%s/480.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, g, 1, sh) == AMP_OK);
    ck_assert_int_eq(run("check-cast --format e4m3 --saturate --vectors vec in.npy 480.npy"), 1);
    out = slurp("out");
    snprintf(want, sizeof want, "\n%-11s %10zu\n", "max_finite", big);
    ck_assert_msg(strstr(out, want), "%s", out);
    ck_assert(strstr(out, "0x7e) -> 480"));
    free(out);
    amp_tensor_file tf;
    snprintf(p, sizeof p, "%s/vec/max_finite.npy", tmpdir);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.tensors[0].n == big);
    float v0;
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 1, &v0);
    ck_assert(fabsf(v0) >= 464);
    amp_tensor_file_close(&tf);
    snprintf(p, sizeof p, "%s/vec/max_finite_expected.npy", tmpdir);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.tensors[0].n == big);
    amp_tensor_file_close(&tf);
    ck_assert_int_eq(run("check-cast --format e4m3 in.npy"), 2);
    ck_assert_int_eq(run("check-cast --format e4m3 --bits in.npy 480.npy"), 2);
    out = slurp("err");
    ck_assert_msg(strstr(out, "480.npy: --bits needs a C-order .npy of dtype '|u1'"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("castcheck");
    TCase *t = tcase_create("lib");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, compiler_float16_agrees);
    tcase_add_test(t, deliberate_differences);
    tcase_add_test(t, nan_encodings_in_bits);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("cli");
    tcase_add_checked_fixture(c, cli_setup, cli_teardown);
    tcase_add_test(c, cli);
    suite_add_tcase(s, c);
    return amp_check_failures(s) ? 1 : 0;
}
