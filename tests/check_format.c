/* Check suite: the format table (docs/numerics.md) and custom eXmY parsing.
 * Expected figures are typed from the format table of docs/numerics.md (and the definitions
 * min normal = 2^(1-bias), min subnormal = 2^(1-bias-M), epsilon = 2^-M),
 * never taken from the code under test. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct want_fmt {
    const char *name;
    int bits, ebits, mbits, bias;
    double max_finite, min_normal, min_subnormal;
    int has_inf;
    amp_nan nan;
    int has_neg_zero, has_subnormals, is_signed;
    int emax;
} want_fmt;

#define P2(k) ldexp(1.0, (k))

/* docs/numerics.md, "Required rows". */
static want_fmt want_table(int i)
{
    const want_fmt rows[] = {
        { "fp32", 32, 8, 23, 127, 3.4028234663852886e38, 0, 0, 1, AMP_NAN_IEEE, 1, 1, 1, 127 },
        { "tf32", 19, 8, 10, 127, 0, 0, 0, 1, AMP_NAN_IEEE, 1, 1, 1, 127 },
        { "fp16", 16, 5, 10, 15, 65504, 0, 0, 1, AMP_NAN_IEEE, 1, 1, 1, 15 },
        { "bf16", 16, 8, 7, 127, 0, 0, 0, 1, AMP_NAN_IEEE, 1, 1, 1, 127 },
        { "e4m3", 8, 4, 3, 7, 448, 0, 0, 0, AMP_NAN_ALLONES, 1, 1, 1, 8 },
        { "e5m2", 8, 5, 2, 15, 57344, 0, 0, 1, AMP_NAN_IEEE, 1, 1, 1, 15 },
        { "e4m3fnuz", 8, 4, 3, 8, 240, 0, 0, 0, AMP_NAN_NEGZERO, 0, 1, 1, 7 },
        { "e5m2fnuz", 8, 5, 2, 16, 57344, 0, 0, 0, AMP_NAN_NEGZERO, 0, 1, 1, 15 },
        { "e3m2", 6, 3, 2, 3, 28, 0, 0, 0, AMP_NAN_NONE, 1, 1, 1, 4 },
        { "e2m3", 6, 2, 3, 1, 7.5, 0, 0, 0, AMP_NAN_NONE, 1, 1, 1, 2 },
        { "e2m1", 4, 2, 1, 1, 6, 0, 0, 0, AMP_NAN_NONE, 1, 1, 1, 2 },
        { "e8m0", 8, 8, 0, 127, 0, 0, 0, 0, AMP_NAN_E8M0, 0, 0, 0, 127 },
        /* IEEE P3109 binary8pP (interim report, extended domain): signed E = 8-P,
         * bias 2^(7-P), max finite = code 0x7E; unsigned E = 9-P, bias 2^(8-P),
         * max finite = code 0xFD */
        { "binary8p1", 8, 7, 0, 64, 0x1p62, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 62 },
        { "binary8p2", 8, 6, 1, 32, 0x1p31, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 31 },
        { "binary8p3", 8, 5, 2, 16, 49152, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 15 },
        { "binary8p4", 8, 4, 3, 8, 224, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 7 },
        { "binary8p5", 8, 3, 4, 4, 15, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 3 },
        { "binary8p6", 8, 2, 5, 2, 3.875, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 1 },
        { "binary8p7", 8, 1, 6, 1, 1.96875, 0, 0, 1, AMP_NAN_P3109, 0, 1, 1, 0 },
        { "binary8p1u", 8, 8, 0, 128, 0x1p125, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 125 },
        { "binary8p2u", 8, 7, 1, 64, 0x1.8p62, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 62 },
        { "binary8p3u", 8, 6, 2, 32, 0x1.4p31, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 31 },
        { "binary8p4u", 8, 5, 3, 16, 53248, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 15 },
        { "binary8p5u", 8, 4, 4, 8, 232, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 7 },
        { "binary8p6u", 8, 3, 5, 4, 15.25, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 3 },
        { "binary8p7u", 8, 2, 6, 2, 3.90625, 0, 0, 1, AMP_NAN_P3109, 0, 1, 0, 1 },
    };
    /* min subnormal column of the table in docs/numerics.md; min normal = 2^(1-bias)
     * (e8m0: its smallest value 2^-127, no subnormals) */
    const int minsub_exp[] = { -149, -136, -24, -133, -9, -16, -10, -17, -4, -3, -1, -127,
                               -63, -32, -17, -10, -7, -6, -6, -127, -64, -33, -18, -11, -8, -7 };
    const int minnorm_exp[] = { -126, -126, -14, -126, -6, -14, -7, -15, -2, 0, 0, -127,
                                -63, -31, -15, -7, -3, -1, 0, -127, -63, -31, -15, -7, -3, -1 };
    want_fmt w = rows[i];
    if (!strcmp(w.name, "tf32")) w.max_finite = (2 - P2(-10)) * P2(127);
    if (!strcmp(w.name, "bf16")) w.max_finite = (2 - P2(-7)) * P2(127);
    if (!strcmp(w.name, "e8m0")) w.max_finite = P2(127);
    w.min_normal = P2(minnorm_exp[i]);
    w.min_subnormal = P2(minsub_exp[i]);
    return w;
}
#define N_ROWS 26

static void check_fmt(const amp_format *f, const want_fmt *w)
{
    ck_assert_msg(f->bits == w->bits, "%s: bits %d, want %d", w->name, f->bits, w->bits);
    ck_assert_msg(f->ebits == w->ebits && f->mbits == w->mbits, "%s: E/M %d/%d, want %d/%d", w->name,
                  f->ebits, f->mbits, w->ebits, w->mbits);
    ck_assert_msg(f->bias == w->bias, "%s: bias %d, want %d", w->name, f->bias, w->bias);
    ck_assert_msg(f->max_finite == w->max_finite, "%s: max finite %a, want %a", w->name, f->max_finite, w->max_finite);
    ck_assert_msg(f->min_normal == w->min_normal, "%s: min normal %a, want %a", w->name, f->min_normal, w->min_normal);
    ck_assert_msg(f->min_subnormal == w->min_subnormal, "%s: min subnormal %a, want %a", w->name,
                  f->min_subnormal, w->min_subnormal);
    ck_assert_msg(f->epsilon == P2(-w->mbits), "%s: epsilon %a", w->name, f->epsilon);
    ck_assert_msg(f->has_inf == w->has_inf, "%s: has_inf %d", w->name, f->has_inf);
    ck_assert_msg(f->nan == w->nan, "%s: nan encoding %d, want %d", w->name, (int)f->nan, (int)w->nan);
    ck_assert_msg(f->has_neg_zero == w->has_neg_zero, "%s: has_neg_zero %d", w->name, f->has_neg_zero);
    ck_assert_msg(f->has_subnormals == w->has_subnormals, "%s: subnormals %d", w->name, f->has_subnormals);
    ck_assert_msg(f->is_signed == w->is_signed, "%s: signed %d", w->name, f->is_signed);
    ck_assert_msg(f->emax == w->emax, "%s: emax %d, want %d", w->name, f->emax, w->emax);
    ck_assert_msg(f->min_normal == P2(f->emin), "%s: emin %d vs min normal", w->name, f->emin);
}

START_TEST(table_rows)
{
    ck_assert_int_eq(AMP_FMT_COUNT, N_ROWS);
    for (int i = 0; i < N_ROWS; i++) {
        want_fmt w = want_table(i);
        amp_format f;
        ck_assert_msg(amp_format_parse(w.name, &f) == AMP_OK, "parse %s: %s", w.name, amp_errmsg());
        ck_assert_str_eq(f.name, w.name);
        ck_assert_int_eq(f.id, i);
        check_fmt(&f, &w);
        check_fmt(amp_format_get((amp_format_id)i), &w);
    }
}
END_TEST

/* The largest value of every format, counted from its bit patterns, is its
 * stored max finite (catches E4M3's 480-vs-448 kind of drift). */
START_TEST(max_finite_is_largest_pattern)
{
    for (int i = 0; i < N_ROWS; i++) {
        const amp_format *f = amp_format_get((amp_format_id)i);
        if (f->bits > 16) continue;
        double mx = 0;
        for (uint32_t b = 0; b < (1u << f->bits); b++) {
            float v = amp_decode1(f, b);
            if (isfinite(v) && v > mx) mx = v;
        }
        ck_assert_msg(mx == f->max_finite, "%s: largest decoded %a, max finite %a", f->name, mx, f->max_finite);
    }
}
END_TEST

static void expect_alias(const char *alias, const char *table_name)
{
    amp_format f;
    ck_assert_msg(amp_format_parse(alias, &f) == AMP_OK, "parse %s: %s", alias, amp_errmsg());
    ck_assert_msg(!strcmp(f.name, table_name), "%s resolved to %s, want %s", alias, f.name, table_name);
}

START_TEST(aliases)
{
    expect_alias("e4m3fn", "e4m3");
    expect_alias("E4M3FN", "e4m3");
    expect_alias("float16", "fp16");
    expect_alias("half", "fp16");
    expect_alias("bfloat16", "bf16");
    expect_alias("float32", "fp32");
    expect_alias("fp8e5m2", "e5m2");
    expect_alias("FP16", "fp16");
}
END_TEST

/* Custom IEEE-like eXmY reproduce the IEEE rows of the table. */
START_TEST(custom_ieee_like_equals_table)
{
    const struct { const char *custom; int row; } pairs[] = {
        { "e5m10", AMP_FMT_FP16 }, { "e8m7", AMP_FMT_BF16 }, { "e8m10", AMP_FMT_TF32 }, { "e8m23", AMP_FMT_FP32 },
    };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        amp_format f;
        ck_assert_msg(amp_format_parse(pairs[k].custom, &f) == AMP_OK, "parse %s: %s", pairs[k].custom, amp_errmsg());
        ck_assert_int_eq(f.id, AMP_FMT_CUSTOM);
        ck_assert_str_eq(f.name, pairs[k].custom);
        want_fmt w = want_table(pairs[k].row);
        w.name = pairs[k].custom;
        check_fmt(&f, &w);
    }
}
END_TEST

START_TEST(custom_variants)
{
    amp_format f;
    /* e5m2fn: bias 15, top exponent used, S.11111.11 the NaN: max 1.5 * 2^16 */
    want_fmt fn = { "e5m2fn", 8, 5, 2, 15, 98304, P2(-14), P2(-16), 0, AMP_NAN_ALLONES, 1, 1, 1, 16 };
    ck_assert_msg(amp_format_parse("e5m2fn", &f) == AMP_OK, "%s", amp_errmsg());
    check_fmt(&f, &fn);
    /* e3m2fn: bias 3, max 1.5 * 2^4 = 24 (the FP6 row without NaN has 28) */
    want_fmt fn2 = { "e3m2fn", 6, 3, 2, 3, 24, P2(-2), P2(-4), 0, AMP_NAN_ALLONES, 1, 1, 1, 4 };
    ck_assert_msg(amp_format_parse("e3m2fn", &f) == AMP_OK, "%s", amp_errmsg());
    check_fmt(&f, &fn2);
    /* e3m4fnuz: bias 4, no inf, no -0, NaN 0x80; max (2 - 2^-4) * 2^3 = 15.5 */
    want_fmt uz = { "e3m4fnuz", 8, 3, 4, 4, 15.5, P2(-3), P2(-7), 0, AMP_NAN_NEGZERO, 0, 1, 1, 3 };
    ck_assert_msg(amp_format_parse("e3m4fnuz", &f) == AMP_OK, "%s", amp_errmsg());
    check_fmt(&f, &uz);
    ck_assert_msg(isnan(amp_decode1(&f, 0x80)), "e3m4fnuz 0x80 is NaN");
    /* the fnuz recipe reproduces the e4m3fnuz row: use its figures through e4m3fnuz's
     * cousin e4m4fnuz: bias 8, max (2 - 2^-4) * 2^7 = 248 */
    want_fmt uz2 = { "e4m4fnuz", 9, 4, 4, 8, 248, P2(-7), P2(-11), 0, AMP_NAN_NEGZERO, 0, 1, 1, 7 };
    ck_assert_msg(amp_format_parse("e4m4fnuz", &f) == AMP_OK, "%s", amp_errmsg());
    check_fmt(&f, &uz2);
    /* e3m0fnuz: no mantissa is fine for fnuz (NaN is 0x80); bias 4, max 2^3 */
    want_fmt uz3 = { "e3m0fnuz", 4, 3, 0, 4, 8, P2(-3), P2(-3), 0, AMP_NAN_NEGZERO, 0, 1, 1, 3 };
    ck_assert_msg(amp_format_parse("e3m0fnuz", &f) == AMP_OK, "%s", amp_errmsg());
    check_fmt(&f, &uz3);
    /* e4m3 itself, as a custom fn, is the table row (the alias takes precedence,
     * but the figures must agree either way) */
    ck_assert_msg(amp_format_parse("e4m3fn", &f) == AMP_OK, "%s", amp_errmsg());
    want_fmt e43 = want_table(AMP_FMT_E4M3);
    check_fmt(&f, &e43);
}
END_TEST

START_TEST(rejected_names)
{
    const char *bad[] = {
        "", "fp17", "e4m", "em3", "e1m2", "e9m2", "e5m24", "e4m0", "e4m0fn", "e4m3xyz", "e4m3fnu",
        "e4m3fnuzz", "e8m23fn", "e8m23fnuz", "e-4m3", "e4m-3", "e4m3 ", "e+4m3", "e 4m3", "e4m 3",
        "e4m3fnuzfnuz", "bfloat17", "e4m3fnx",
        "a_name_that_is_much_longer_than_the_buffers_hold_for_format_names",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        amp_format f;
        amp_status s = amp_format_parse(bad[k], &f);
        ck_assert_msg(s == AMP_EINVAL, "format '%s' accepted (status %d)", bad[k], (int)s);
        ck_assert_msg(amp_errmsg()[0] != 0, "format '%s': no message", bad[k]);
    }
    ck_assert_int_eq(amp_format_parse(NULL, &(amp_format){ 0 }), AMP_EINVAL);
}
END_TEST

/* ampsim formats --csv: header (from the issue text) and every row's numbers. */
START_TEST(cli_formats_csv)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin && *bin, "AMPSIM is not set (run through make check)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' formats --csv", bin);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    char line[512];
    ck_assert_msg(fgets(line, sizeof line, p) != NULL, "no output from %s", cmd);
    ck_assert_str_eq(line, "name,bits,exp_bits,man_bits,bias,max_finite,min_normal,min_subnormal,has_inf,nan\n");
    int rows = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        char *fld[16];
        int nf = 0;
        for (char *s = line, *tok; nf < 16 && (tok = strsep(&s, ",")); ) fld[nf++] = tok;
        ck_assert_msg(nf == 10, "row '%s': %d fields", line, nf);
        ck_assert_msg(rows < N_ROWS, "more rows than the table");
        want_fmt w = want_table(rows);
        ck_assert_str_eq(fld[0], w.name);
        char buf[64];
        snprintf(buf, sizeof buf, "%d", w.bits); ck_assert_str_eq(fld[1], buf);
        snprintf(buf, sizeof buf, "%d", w.ebits); ck_assert_str_eq(fld[2], buf);
        snprintf(buf, sizeof buf, "%d", w.mbits); ck_assert_str_eq(fld[3], buf);
        snprintf(buf, sizeof buf, "%d", w.bias); ck_assert_str_eq(fld[4], buf);
        snprintf(buf, sizeof buf, "%.9g", w.max_finite); ck_assert_str_eq(fld[5], buf);
        snprintf(buf, sizeof buf, "%.9g", w.min_normal); ck_assert_str_eq(fld[6], buf);
        snprintf(buf, sizeof buf, "%.9g", w.min_subnormal); ck_assert_str_eq(fld[7], buf);
        snprintf(buf, sizeof buf, "%d", w.has_inf); ck_assert_str_eq(fld[8], buf);
        ck_assert_str_eq(fld[9], amp_nan_name(w.nan));
        rows++;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(rows, N_ROWS);
    /* one row typed out in full */
    snprintf(cmd, sizeof cmd, "'%s' formats --csv | grep '^e4m3,'", bin);
    p = popen(cmd, "r");
    ck_assert(p != NULL);
    ck_assert(fgets(line, sizeof line, p) != NULL);
    pclose(p);
    ck_assert_msg(!strncmp(line, "e4m3,8,4,3,7,448,0.015625,0.001953125,0,", 40), "e4m3 row: %s", line);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("format");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, table_rows);
    tcase_add_test(tc, max_finite_is_largest_pattern);
    tcase_add_test(tc, aliases);
    tcase_add_test(tc, custom_ieee_like_equals_table);
    tcase_add_test(tc, custom_variants);
    tcase_add_test(tc, rejected_names);
    tcase_add_test(tc, cli_formats_csv);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
