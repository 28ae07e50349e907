/* Check suite: the fused classification counters, stochastic rounding, thread
 * determinism and the MPFR reference's own hygiene.
 *  - arrays whose classes, amax, amin and histogram are known by construction;
 *  - stats of amp_round_f32/f64 equal the sum of the per-element MPFR classes;
 *  - sr: only the two neighbours come out, the mean is unbiased within 6 sigma
 *    of the binomial, --sr-bits K quantises P(up) to floor(frac 2^K) / 2^K;
 *  - 1 and 2 threads give the same bytes (results and statistics);
 *  - amp_round1_mpfr restores the caller's MPFR exponent range and is
 *    thread-safe.
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed on failure. */
#include "round_ref.h"
#include "skip.h"

#include <check.h>
#include "check_main.h"
#include <mpfr.h>
#include <omp.h>

static uint64_t seed;
static int quick;

/* ---- classes by construction --------------------------------------------------- */
typedef struct item { float x; amp_class c; int binade; } item;   /* binade: floor(log2|x|) or none */
#define NO_BIN 9999

/* Fills x (n elements) with copies of the items, item k taking count[k] slots,
 * in a shuffled order; returns the total. */
static size_t fill(float *x, const item *it, const size_t *count, size_t nit, rt_rng *r)
{
    size_t n = 0;
    for (size_t k = 0; k < nit; k++)
        for (size_t j = 0; j < count[k]; j++) x[n++] = it[k].x;
    for (size_t i = n - 1; i > 0; i--) {          /* Fisher-Yates */
        size_t j = (size_t)(rt_next(r) % (i + 1));
        float t = x[i]; x[i] = x[j]; x[j] = t;
    }
    return n;
}

static void expect_stats(const char *what, const amp_stats *st, const item *it, const size_t *count, size_t nit,
                         double amax, double amin)
{
    uint64_t cls[AMP_CLS_COUNT] = { 0 }, hist[AMP_HIST_BINS] = { 0 }, n = 0;
    for (size_t k = 0; k < nit; k++) {
        cls[it[k].c] += count[k];
        n += count[k];
        if (it[k].binade != NO_BIN) hist[it[k].binade - AMP_HIST_LO] += count[k];
    }
    ck_assert_msg(st->n == n, "%s: n %llu, want %llu", what, (unsigned long long)st->n, (unsigned long long)n);
    for (int c = 0; c < AMP_CLS_COUNT; c++)
        ck_assert_msg(st->cls[c] == cls[c], "%s: class %s: %llu, want %llu", what, amp_class_name((amp_class)c),
                      (unsigned long long)st->cls[c], (unsigned long long)cls[c]);
    for (int b = 0; b < AMP_HIST_BINS; b++)
        ck_assert_msg(st->hist[b] == hist[b], "%s: histogram binade %d: %llu, want %llu", what, b + AMP_HIST_LO,
                      (unsigned long long)st->hist[b], (unsigned long long)hist[b]);
    ck_assert_msg(st->amax == amax, "%s: amax %a, want %a", what, st->amax, amax);
    ck_assert_msg(st->amin_nonzero == amin, "%s: amin_nonzero %a, want %a", what, st->amin_nonzero, amin);
}

START_TEST(classes_by_construction_fp16)
{
    /* fp16: min subnormal 2^-24, min normal 2^-14, max 65504 */
    const item it[] = {
        { NAN, AMP_CLS_NAN_IN, NO_BIN },
        { -NAN, AMP_CLS_NAN_IN, NO_BIN },
        { INFINITY, AMP_CLS_INF_IN, NO_BIN },
        { -INFINITY, AMP_CLS_INF_IN, NO_BIN },
        { 0.0f, AMP_CLS_ZERO_IN, NO_BIN },
        { -0.0f, AMP_CLS_ZERO_IN, NO_BIN },
        { 70000.0f, AMP_CLS_OVERFLOW, 16 },            /* -> inf */
        { -65520.0f, AMP_CLS_OVERFLOW, 15 },           /* tie -> -inf */
        { 0x1p-26f, AMP_CLS_FLUSHED, -26 },            /* -> 0 (below half the min subnormal) */
        { -0x1p-25f, AMP_CLS_FLUSHED, -25 },           /* tie with 0: to even 0 */
        { 0x1p-20f, AMP_CLS_SUBNORMAL, -20 },          /* exact subnormal */
        { 0x1.3p-20f, AMP_CLS_SUBNORMAL, -20 },        /* 19 * 2^-24: exact subnormal */
        { 0x1.31p-20f, AMP_CLS_SUBNORMAL, -20 },       /* rounded subnormal */
        { 0x1.ffep-15f, AMP_CLS_ROUNDED, -15 },        /* 2^-14 - 2^-26: rounds up to min normal */
        { 1.5f, AMP_CLS_EXACT, 0 },
        { -65504.0f, AMP_CLS_EXACT, 15 },
        { 1.0f + 0x1p-20f, AMP_CLS_ROUNDED, 0 },
        { 3.0e-3f, AMP_CLS_ROUNDED, -9 },
    };
    const size_t nit = sizeof it / sizeof it[0];
    item w[sizeof it / sizeof it[0]];
    memcpy(w, it, sizeof w);
    /* 0x1.ffep-15 = 2^-14 - 2^-26 lies above the midpoint of the largest subnormal
     * (2^-14 - 2^-24) and min normal: rne gives 2^-14 (normal, inexact) */
    size_t count[sizeof it / sizeof it[0]];
    size_t total = 0;
    for (size_t k = 0; k < nit; k++) {
        count[k] = (quick ? 100 : 9000) + 1237 * k;
        total += count[k];
    }
    float *x = malloc(total * sizeof *x), *y = malloc(total * sizeof *y);
    double *xd = malloc(total * sizeof *xd);
    ck_assert(x && y && xd);
    rt_rng r = { seed };
    ck_assert(fill(x, w, count, nit, &r) == total);
    for (size_t i = 0; i < total; i++) xd[i] = x[i];
    const amp_format *f = amp_format_get(AMP_FMT_FP16);
    amp_round_opts o = amp_round_defaults();
    amp_stats st;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total, &st) == AMP_OK);
    expect_stats("fp16 rne f32", &st, w, count, nit, INFINITY, 0x1p-26);
    amp_stats_init(&st);
    ck_assert(amp_round_f64(f, &o, xd, y, total, &st) == AMP_OK);
    expect_stats("fp16 rne f64", &st, w, count, nit, INFINITY, 0x1p-26);
    /* the generic path (sr) classifies the same way for inputs it rounds the same */
    /* saturate: the overflows become saturated; ftz: subnormals are flushed; daz
     * (inputs below 2^-14 read as zero): subnormal-range inputs are flushed */
    item ws[sizeof it / sizeof it[0]];
    memcpy(ws, w, sizeof ws);
    ws[6].c = ws[7].c = AMP_CLS_SATURATED;
    ws[10].c = ws[11].c = ws[12].c = AMP_CLS_FLUSHED;
    o.flags = AMP_SATURATE | AMP_FTZ;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total, &st) == AMP_OK);
    expect_stats("fp16 rne sat+ftz", &st, ws, count, nit, INFINITY, 0x1p-26);
    memcpy(ws, w, sizeof ws);
    ws[10].c = ws[11].c = ws[12].c = ws[13].c = AMP_CLS_FLUSHED;
    o.flags = AMP_DAZ;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total, &st) == AMP_OK);
    expect_stats("fp16 rne daz", &st, ws, count, nit, INFINITY, 0x1p-26);
    /* rtz: 70000 truncates to 69952 > max: clamped (saturated); -65520 truncates to
     * -65504 (rounded, in range); 0x1.ffep-15 truncates to the largest subnormal */
    memcpy(ws, w, sizeof ws);
    ws[6].c = AMP_CLS_SATURATED;
    ws[7].c = AMP_CLS_ROUNDED;
    ws[13].c = AMP_CLS_SUBNORMAL;
    o.mode = AMP_RND_TZ;
    o.flags = 0;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total, &st) == AMP_OK);
    expect_stats("fp16 rtz", &st, ws, count, nit, INFINITY, 0x1p-26);
    /* stats accumulate: a second call adds */
    o = amp_round_defaults();
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total / 2, &st) == AMP_OK);
    ck_assert(amp_round_f32(f, &o, x + total / 2, y, total - total / 2, &st) == AMP_OK);
    expect_stats("fp16 rne in two calls", &st, w, count, nit, INFINITY, 0x1p-26);
    free(x);
    free(y);
    free(xd);
}
END_TEST

START_TEST(classes_by_construction_e4m3)
{
    /* e4m3: min subnormal 2^-9, min normal 2^-6, max 448, no inf */
    const item it[] = {
        { NAN, AMP_CLS_NAN_IN, NO_BIN },
        { INFINITY, AMP_CLS_INF_IN, NO_BIN },          /* -> NaN, class inf_in */
        { -0.0f, AMP_CLS_ZERO_IN, NO_BIN },
        { 465.0f, AMP_CLS_OVERFLOW, 8 },               /* -> NaN */
        { 464.0f, AMP_CLS_ROUNDED, 8 },                /* -> 448 */
        { 0x1p-11f, AMP_CLS_FLUSHED, -11 },
        { 0x1.8p-9f, AMP_CLS_SUBNORMAL, -9 },          /* tie 1.5 * 2^-9 -> 2^-8 (even) */
        { 0.5f, AMP_CLS_EXACT, -1 },
        { 0.3f, AMP_CLS_ROUNDED, -2 },
        { 1e-30f, AMP_CLS_FLUSHED, -100 },
        { 1e30f, AMP_CLS_OVERFLOW, 99 },
    };
    const size_t nit = sizeof it / sizeof it[0];
    size_t count[sizeof it / sizeof it[0]], total = 0;
    for (size_t k = 0; k < nit; k++) total += count[k] = (quick ? 50 : 20000) + 777 * k;
    float *x = malloc(total * sizeof *x), *y = malloc(total * sizeof *y);
    ck_assert(x && y);
    rt_rng r = { seed + 1 };
    fill(x, it, count, nit, &r);
    const amp_format *f = amp_format_get(AMP_FMT_E4M3);
    amp_round_opts o = amp_round_defaults();
    amp_stats st;
    amp_stats_init(&st);
    ck_assert(amp_round_f32(f, &o, x, y, total, &st) == AMP_OK);
    expect_stats("e4m3 rne", &st, it, count, nit, INFINITY, 1e-30f);
    size_t wrong = 0;   /* (no ck_assert in element loops: each one writes to Check's pipe) */
    for (size_t i = 0; i < total; i++)
        if (x[i] == 465.0f || x[i] == 1e30f || isinf(x[i])) wrong += !isnan(y[i]);
        else if (x[i] == 464.0f) wrong += y[i] != 448.0f;
    ck_assert_msg(wrong == 0, "e4m3: %zu of 465, 1e30, inf -> NaN and 464 -> 448 wrong", wrong);
    free(x);
    free(y);
}
END_TEST

/* Statistics of the array paths equal the per-element MPFR classes (random
 * mixtures, every format and mode, > 1 chunk so chunk merging counts). */
START_TEST(stats_equal_mpfr_classes)
{
    amp_format_id id = (amp_format_id)_i;
    const amp_format *f = amp_format_get(id);
    size_t n = quick ? 2000 : ((size_t)1 << 16) + 4321;   /* > 1 chunk */
    float *x = malloc(n * sizeof *x);
    double *xd = malloc(n * sizeof *xd);
    ck_assert(x && xd);
    rt_rng r = { seed + 31 * (uint64_t)_i };
    for (size_t i = 0; i < n; i++) {
        uint64_t u = rt_next(&r);
        if ((u & 15) == 0) xd[i] = amp_u2d(rt_next(&r));                   /* anything, NaN and inf included */
        else if ((u & 15) == 1) xd[i] = (u & 16) ? 0.0 : -0.0;
        else xd[i] = ldexp((u & 32) ? -1.0 - rt_unif(&r) : 1.0 + rt_unif(&r),
                           f->emin - f->mbits - 3 + (int)(rt_next(&r) % (uint64_t)(f->emax - f->emin + f->mbits + 6)));
        x[i] = (float)xd[i];
    }
    size_t bad = 0;
    for (int m = 0; m < AMP_RND_COUNT; m++) {
        amp_round_opts o = amp_round_defaults();
        o.mode = (amp_rounding)m;
        o.seed = seed;
        o.flags = (unsigned)(m % 4 == 3 ? AMP_SATURATE | AMP_FTZ : m % 4 == 2 ? AMP_DAZ : 0);
        rt_batch b = { f, &o, "stats f32", seed, 0 };
        bad += rt_check_batch(&b, x, 0, n);
        b.what = "stats f64";
        bad += rt_check_batch(&b, xd, 1, n);
    }
    free(x);
    free(xd);
    ck_assert_msg(bad == 0, "%s: %zu statistics/result mismatches (seed 0x%llx)", f->name, bad, (unsigned long long)seed);
}
END_TEST

/* The error sums where the fast rne path must fall back or rescale: a block
 * whose largest |x| is exact while every error is 2^-160 below it (scaled
 * errors underflow float32), and one whose largest values overflow and so are
 * out of the sums (the scale must come from the values that stay). */
START_TEST(stats_sums_wide_range)
{
    size_t n = 3000;
    float *x = malloc(n * sizeof *x);
    ck_assert(x);
    const amp_format *bf = amp_format_get(AMP_FMT_BF16), *e4 = amp_format_get(AMP_FMT_E4M3);
    rt_rng r = { seed + 7 };
    for (size_t i = 0; i < n; i++)                    /* bf16: exact 2^100, errors near 2^-68 */
        x[i] = i % 100 == 0 ? 0x1p100f : (float)ldexp(1.0 + rt_unif(&r), -60);
    amp_round_opts o = amp_round_defaults();
    rt_batch b = { bf, &o, "wide range bf16", seed, 0 };
    size_t bad = rt_check_batch(&b, x, 0, n);
    for (size_t i = 0; i < n; i++)                    /* e4m3: 1e30 overflows, the rest near 1 */
        x[i] = i % 7 == 0 ? 1e30f : (float)(1.0 + rt_unif(&r));
    b = (rt_batch){ e4, &o, "overflow-excluded e4m3", seed, 0 };
    bad += rt_check_batch(&b, x, 0, n);
    free(x);
    ck_assert_msg(bad == 0, "%zu statistics mismatches (seed 0x%llx)", bad, (unsigned long long)seed);
}
END_TEST

/* The histogram's vector paths (byte compares, GFNI windows) and its scalar
 * loop are chosen by how many binades a block spans: data spanning 1 to 130
 * binades (once reaching float32's subnormals), a length with a partial
 * vector at the end, with and without a few zeros and NaNs, and as values of
 * the format (every rounding exact), in formats of each rne kernel (float32
 * itself: the identity) and one other mode. */
START_TEST(stats_hist_spans)
{
    static const int spans[] = { 1, 7, 20, 47, 48, 49, 60, 95, 96, 97, 130 };
    static const amp_format_id fmts[] = { AMP_FMT_FP32, AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2FNUZ };
    size_t n = 4096 + 1000 + 37, bad = 0;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    ck_assert(x && y);
    rt_rng r = { seed + 11 };
    for (size_t si = 0; si < sizeof spans / sizeof spans[0]; si++)
        for (int special = 0; special < 3; special++) {
            for (size_t i = 0; i < n; i++) {
                uint64_t u = rt_next(&r);
                int lo = si == 2 ? -140 : -spans[si] / 2 - 8;   /* span 20: float32 subnormals too */
                x[i] = (float)ldexp((u & 1) ? -1.0 - rt_unif(&r) : 1.0 + rt_unif(&r),
                                    lo + (int)(rt_next(&r) % (uint64_t)spans[si]));
                if (special == 1 && u % 97 == 0) x[i] = (u & 2) ? 0.0f : NAN;
            }
            for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++)
                for (int m = 0; m < 2; m++) {
                    amp_round_opts o = amp_round_defaults();
                    o.mode = m ? AMP_RND_TZ : AMP_RND_NE;
                    const amp_format *f = amp_format_get(fmts[fi]);
                    float *xs = x;
                    if (special == 2) {                 /* values of the format: every rounding exact */
                        xs = y;
                        amp_round_opts ne = amp_round_defaults();
                        ne.flags = AMP_SATURATE;
                        ck_assert(amp_round_f32(f, &ne, x, xs, n, NULL) == AMP_OK);
                    }
                    char what[64];
                    snprintf(what, sizeof what, "span %d%s", spans[si], special == 1 ? " +0/NaN" : special ? " exact" : "");
                    rt_batch b = { f, &o, what, seed, 0 };
                    bad += rt_check_batch(&b, xs, 0, n);
                }
        }
    free(x);
    free(y);
    ck_assert_msg(bad == 0, "%zu statistics mismatches (seed 0x%llx)", bad, (unsigned long long)seed);
}
END_TEST

/* The non-finite results told by the class counts (amp_stats_nonfinite, which
 * spares the training loop a second pass) against a count of the results,
 * and amp_count_nonfinite against isfinite, in every format, mode and
 * overflow flag, on data with NaN, inf, overflow and ordinary values. */
START_TEST(stats_nonfinite_counts)
{
    size_t n = 3000;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    ck_assert(x && y);
    rt_rng r = { seed + 13 };
    size_t told = 0;
    for (int fi = 0; fi < AMP_FMT_COUNT; fi++) {
        const amp_format *f = amp_format_get((amp_format_id)fi);
        for (size_t i = 0; i < n; i++) {
            uint64_t u = rt_next(&r);
            x[i] = u % 11 == 0 ? NAN : u % 13 == 0 ? ((u & 64) ? -INFINITY : INFINITY)
                 : (float)ldexp((u & 32) ? -1.0 - rt_unif(&r) : 1.0 + rt_unif(&r), (int)(rt_next(&r) % 60) - 20);
        }
        for (int m = 0; m < AMP_RND_COUNT; m++)
            for (int sat = 0; sat < 2; sat++) {
                amp_round_opts o = amp_round_defaults();
                o.mode = (amp_rounding)m;
                o.flags = sat ? AMP_SATURATE : 0;
                amp_stats st;
                amp_stats_init(&st);
                ck_assert(amp_round_f32(f, &o, x, y, n, &st) == AMP_OK);
                uint64_t want = 0;
                for (size_t i = 0; i < n; i++) want += !isfinite(y[i]);
                ck_assert_uint_eq(amp_count_nonfinite(y, n), want);
                int64_t got = amp_stats_nonfinite(f, &o, st.cls);
                if (got >= 0) {
                    told++;
                    ck_assert_msg((uint64_t)got == want, "%s %s%s: %lld non-finite by the counts, %llu in the results",
                                  f->name, amp_rounding_name(o.mode), sat ? " saturate" : "", (long long)got,
                                  (unsigned long long)want);
                }
            }
    }
    ck_assert(told > 0);
    free(x);
    free(y);
}
END_TEST

/* amp_round_f32_nonfinite / amp_round_f64_nonfinite, which count the
 * non-finite results in the rounding's own pass: the same bytes as
 * amp_round_f32 / amp_round_f64, and the count of !isfinite over those bytes,
 * with and without statistics, in every format (table and two custom ones),
 * mode and overflow flag, on one block, across blocks and across chunks
 * (threads), on every kernel path (float64 inputs, the generic path, on the
 * short size). */
START_TEST(round_counts_nonfinite)
{
    static const size_t sizes[] = { 37, 3 * 4096 + 5, ((size_t)1 << 16) * 2 + 999 };
    size_t nmax = sizes[2];
    float *x = malloc(nmax * sizeof *x), *y = malloc(nmax * sizeof *y), *y0 = malloc(nmax * sizeof *y0);
    double *xd = malloc(nmax * sizeof *xd);
    ck_assert(x && y && y0 && xd);
    rt_rng r = { seed + 29 };
    for (size_t i = 0; i < nmax; i++) {
        uint64_t u = rt_next(&r);
        x[i] = u % 11 == 0 ? NAN : u % 13 == 0 ? ((u & 64) ? -INFINITY : INFINITY)
             : (float)ldexp((u & 32) ? -1.0 - rt_unif(&r) : 1.0 + rt_unif(&r), (int)(rt_next(&r) % 300) - 150);
        xd[i] = (double)x[i] * (1.0 + 0x1p-30);
    }
    amp_format fm[AMP_FMT_COUNT + 2];
    int nf = 0;
    for (int fi = 0; fi < AMP_FMT_COUNT; fi++) fm[nf++] = *amp_format_get((amp_format_id)fi);
    ck_assert(amp_format_parse("e3m4", &fm[nf++]) == AMP_OK);
    ck_assert(amp_format_parse("e2m2fnuz", &fm[nf++]) == AMP_OK);
    static const amp_simd simds[] = { AMP_SIMD_GENERIC, AMP_SIMD_AUTO };
    for (int pi = 0; pi < 2; pi++) {
        amp_set_simd(simds[pi]);
        for (int fi = 0; fi < nf; fi++)
            for (int m = 0; m < AMP_RND_COUNT; m++)
                for (int v = 0; v < 12; v++) {
                    const amp_format *f = &fm[fi];
                    size_t n = sizes[v % 3];
                    int sat = (v / 3) & 1, with_st = v / 6, is64 = v % 3 == 0 && (fi + m + v) % 2 == 0;
                    if (n > 5000 && (fi + m) % 5 != 0) continue;   /* the long size for a fifth */
                    amp_round_opts o = amp_round_defaults();
                    o.mode = (amp_rounding)m;
                    o.flags = sat ? AMP_SATURATE : 0;
                    o.seed = 5;
                    amp_stats st, st0;
                    amp_stats_init(&st);
                    amp_stats_init(&st0);
                    size_t got = 3;   /* added to */
                    if (is64) {
                        ck_assert(amp_round_f64(f, &o, xd, y0, n, with_st ? &st0 : NULL) == AMP_OK);
                        ck_assert(amp_round_f64_nonfinite(f, &o, xd, y, n, with_st ? &st : NULL, &got) == AMP_OK);
                    } else {
                        ck_assert(amp_round_f32(f, &o, x, y0, n, with_st ? &st0 : NULL) == AMP_OK);
                        ck_assert(amp_round_f32_nonfinite(f, &o, x, y, n, with_st ? &st : NULL, &got) == AMP_OK);
                    }
                    ck_assert_msg(!memcmp(y, y0, n * sizeof *y), "%s %s: other bytes", f->name,
                                  amp_rounding_name(o.mode));
                    size_t want = 3;
                    for (size_t i = 0; i < n; i++) want += !isfinite(y[i]);
                    ck_assert_msg(got == want, "%s %s%s%s n=%zu %s: %zu non-finite counted, %zu in the results",
                                  f->name, amp_rounding_name(o.mode), sat ? " saturate" : "", with_st ? " stats" : "",
                                  n, is64 ? "f64" : "f32", got - 3, want - 3);
                    if (with_st) ck_assert(!memcmp(st.cls, st0.cls, sizeof st.cls));
                }
    }
    amp_set_simd(AMP_SIMD_AUTO);
    free(x); free(y); free(y0); free(xd);
}
END_TEST

/* amp_round_f32_many: the same bytes and non-finite counts as one
 * amp_round_f32_nonfinite call per array, for arrays of several sizes,
 * formats, modes and overflow flags in one call, one of them rounded in
 * place; a bad option stops it with AMP_EINVAL. */
START_TEST(round_many_equals_each)
{
    enum { K = 6 };
    static const size_t sizes[K] = { 1, 37, 4096 + 3, 0, 777, ((size_t)1 << 16) + 5 };
    static const amp_format_id fids[K] = { AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_FP16,
                                           AMP_FMT_E5M2, AMP_FMT_BF16 };
    const amp_format *f[K];
    amp_round_opts ob[K];
    const amp_round_opts *o[K];
    const float *x[K];
    float *xs[K], *y[K], *y0[K];
    size_t n[K], got[K];
    rt_rng r = { seed + 41 };
    for (int j = 0; j < K; j++) {
        n[j] = sizes[j];
        f[j] = amp_format_get(fids[j]);
        ob[j] = amp_round_defaults();
        ob[j].mode = (amp_rounding)(j % AMP_RND_COUNT);
        ob[j].flags = j % 2 ? AMP_SATURATE : 0;
        ob[j].seed = 9;
        o[j] = &ob[j];
        xs[j] = malloc((n[j] + 1) * sizeof *xs[j]);
        y0[j] = malloc((n[j] + 1) * sizeof *y0[j]);
        ck_assert(xs[j] && y0[j]);
        for (size_t i = 0; i < n[j]; i++) {
            uint64_t u = rt_next(&r);
            xs[j][i] = u % 17 == 0 ? NAN : (float)ldexp(1.0 + rt_unif(&r), (int)(rt_next(&r) % 60) - 30);
        }
        size_t c = 0;
        ck_assert(amp_round_f32_nonfinite(f[j], o[j], xs[j], y0[j], n[j], NULL, &c) == AMP_OK);
        got[j] = c;                                   /* (the expected count, until the call below) */
        x[j] = xs[j];
        y[j] = j == 2 ? xs[j] : malloc((n[j] + 1) * sizeof *y[j]);    /* one in place */
        ck_assert(y[j]);
    }
    size_t want[K];
    memcpy(want, got, sizeof want);
    memset(got, 0xff, sizeof got);
    ck_assert(amp_round_f32_many(K, f, o, x, y, n, got) == AMP_OK);
    for (int j = 0; j < K; j++) {
        ck_assert_msg(!memcmp(y[j], y0[j], n[j] * sizeof *y[j]), "array %d: other bytes", j);
        ck_assert_msg(got[j] == want[j], "array %d: %zu non-finite counted, %zu expected", j, got[j], want[j]);
    }
    ob[4].sr_bits = 99;                               /* a bad option */
    ob[4].mode = AMP_RND_SR;
    ck_assert(amp_round_f32_many(K, f, o, x, y, n, got) == AMP_EINVAL);
    for (int j = 0; j < K; j++) {
        if (y[j] != xs[j]) free(y[j]);
        free(xs[j]);
        free(y0[j]);
    }
}
END_TEST

/* Every writer of the histogram keeps its bins inside [hist_lo, hist_hi]
 * (fast kernels, the generic path, float64 input, merged chunks), and
 * amp_stats_reset then leaves exactly what amp_stats_init does. */
START_TEST(stats_reset_equals_init)
{
    size_t n = ((size_t)1 << 16) + 777;                 /* two chunks: merged partial stats */
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *xd = malloc(n * sizeof *xd);
    ck_assert(x && y && xd);
    rt_rng r = { seed + 17 };
    for (size_t i = 0; i < n; i++) {
        xd[i] = ldexp(1.0 + rt_unif(&r), (int)(rt_next(&r) % 80) - 60);
        x[i] = (float)xd[i];
    }
    static const struct { amp_format_id f; amp_rounding m; int f64; } cases[] = {
        { AMP_FMT_FP16, AMP_RND_NE, 0 }, { AMP_FMT_E4M3, AMP_RND_TZ, 0 }, { AMP_FMT_BF16, AMP_RND_SR, 0 },
        { AMP_FMT_E8M0, AMP_RND_NE, 0 }, { AMP_FMT_FP16, AMP_RND_NE, 1 },
    };
    amp_stats fresh, st;
    amp_stats_init(&fresh);
    amp_stats_init(&st);
    amp_set_threads(2);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        amp_round_opts o = amp_round_defaults();
        o.mode = cases[k].m;
        const amp_format *f = amp_format_get(cases[k].f);
        size_t m = k == 1 ? 100 : n;                    /* one small call */
        ck_assert(cases[k].f64 ? amp_round_f64(f, &o, xd, y, m, &st) == AMP_OK
                               : amp_round_f32(f, &o, x, y, m, &st) == AMP_OK);
        uint64_t total = 0;
        for (int b = 0; b < AMP_HIST_BINS; b++) {
            if (st.hist[b]) ck_assert_msg(b >= st.hist_lo && b <= st.hist_hi, "%s: bin %d outside [%d, %d]",
                                          f->name, b, st.hist_lo, st.hist_hi);
            total += st.hist[b];
        }
        ck_assert_uint_eq(total, m);
        amp_stats_reset(&st);
        ck_assert_msg(!memcmp(&st, &fresh, sizeof st), "%s: reset differs from init", f->name);
    }
    amp_set_threads(1);
    free(x);
    free(y);
    free(xd);
}
END_TEST

/* Every kernel path (amp_set_simd: generic C, AVX-512, GFNI) gives the same
 * bits: results (with and without statistics) and whole statistics against
 * the generic path, in every format and mode (sr with all, 8 and 40 random
 * bits), with no flag, saturate, and ftz + daz, on data of several kinds
 * (any bit pattern, ordinary values, values of the format, overflowing
 * values), at lengths with partial vectors and blocks. */
START_TEST(paths_same_bits)
{
    size_t n = 4096 + 1000 + 37;
    float *x = malloc(n * sizeof *x), *y0 = malloc(n * sizeof *y0), *y1 = malloc(n * sizeof *y1);
    ck_assert(x && y0 && y1);
    rt_rng r = { seed + 19 };
    size_t compared = 0;
    for (int kind = 0; kind < 4; kind++)
        for (int fi = 0; fi < AMP_FMT_COUNT; fi++) {
            const amp_format *f = amp_format_get((amp_format_id)fi);
            for (size_t i = 0; i < n; i++) {
                uint64_t u = rt_next(&r);
                double e = kind == 3 ? (double)(f->emax - 4) + 8 * rt_unif(&r) : -30 + 40 * rt_unif(&r);
                x[i] = kind == 0 ? amp_u2f((uint32_t)u) : (float)ldexp((u & 1) ? -1.0 : 1.0, 0) * (float)exp2(e);
            }
            if (kind == 2) {
                amp_round_opts ne = amp_round_defaults();
                ne.flags = AMP_SATURATE;
                ck_assert(amp_round_f32(f, &ne, x, x, n, NULL) == AMP_OK);
            }
            for (int m = 0; m < AMP_RND_COUNT; m++)
                for (int sat = 0; sat < 3; sat++)
                    for (int len = 0; len < 2; len++) {
                        size_t cnt = len ? n : 10;
                        amp_round_opts o = amp_round_defaults();
                        o.mode = (amp_rounding)m;
                        o.flags = sat == 1 ? AMP_SATURATE : sat == 2 ? AMP_FTZ | AMP_DAZ : 0;
                        o.seed = seed + (uint64_t)fi;     /* sr: all bits, then 8 and 40 of them */
                        o.index0 = (uint64_t)kind << 40;
                        o.sr_bits = sat == 0 ? 0 : sat == 1 ? 8 : 40;
                        if (amp_round_check_opts(f, &o) != AMP_OK) continue;
                        amp_stats s0, s1;
                        amp_set_simd(AMP_SIMD_GENERIC);
                        amp_stats_init(&s0);
                        ck_assert(amp_round_f32(f, &o, x, y0, cnt, &s0) == AMP_OK);
                        for (int cap = AMP_SIMD_AVX512; cap <= AMP_SIMD_GFNI; cap++) {
                            amp_set_simd((amp_simd)cap);
                            if ((int)amp_simd_active() < cap) continue;   /* the machine has not got it */
                            amp_stats_init(&s1);
                            ck_assert(amp_round_f32(f, &o, x, y1, cnt, &s1) == AMP_OK);
                            ck_assert_msg(!memcmp(y0, y1, cnt * sizeof *y0) && !memcmp(&s0, &s1, sizeof s0),
                                          "%s %s flags %u kind %d n %zu: path %s differs from generic", f->name,
                                          amp_rounding_name(o.mode), o.flags, kind, cnt,
                                          amp_simd_name((amp_simd)cap));
                            ck_assert(amp_round_f32(f, &o, x, y1, cnt, NULL) == AMP_OK);   /* no statistics */
                            ck_assert_msg(!memcmp(y0, y1, cnt * sizeof *y0), "%s %s flags %u kind %d n %zu: path %s "
                                          "without statistics differs", f->name, amp_rounding_name(o.mode),
                                          o.flags, kind, cnt, amp_simd_name((amp_simd)cap));
                            compared++;
                        }
                    }
        }
    amp_set_simd(AMP_SIMD_AUTO);
    printf("paths_same_bits: %zu comparisons with the generic path (machine: %s)\n", compared,
           amp_simd_name(amp_simd_active()));
    if ((int)amp_simd_active() < AMP_SIMD_AVX512)
        AMP_SKIP("round_stats/paths_same_bits", "this CPU has no AVX-512: only the generic path ran");
    else if ((int)amp_simd_active() < AMP_SIMD_GFNI)
        AMP_SKIP("round_stats/paths_same_bits/gfni", "this CPU has no GFNI: the GFNI histogram path did not run");
    free(x);
    free(y0);
    free(y1);
}
END_TEST

/* ---- stochastic rounding ---------------------------------------------------------- */
/* The neighbours of x: MPFR toward zero, and away from zero (rup for positive,
 * rdn for negative x; same overflow policy as sr since neither is toward zero). */
static void neighbours(const amp_format *f, double x, float *lo, float *hi)
{
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_TZ;
    *lo = amp_round1_mpfr(f, &o, x, 0, NULL);
    o.mode = x < 0 ? AMP_RND_DN : AMP_RND_UP;
    *hi = amp_round1_mpfr(f, &o, x, 0, NULL);
}

START_TEST(sr_only_neighbours)
{
    const amp_format_id ids[] = { AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2, AMP_FMT_E2M1,
                                  AMP_FMT_E4M3FNUZ, AMP_FMT_E8M0, AMP_FMT_TF32 };
    rt_rng r = { seed + 9 };
    const size_t draws = quick ? 64 : 1000;
    float *x = malloc(draws * sizeof *x), *y = malloc(draws * sizeof *y);
    ck_assert(x && y);
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const amp_format *f = amp_format_get(ids[k]);
        for (int t = 0; t < (quick ? 20 : 200); t++) {
            double v = ldexp(1.0 + rt_unif(&r), f->emin - f->mbits - 1 + (int)(rt_next(&r) % (uint64_t)(f->emax - f->emin + f->mbits + 3)));
            if (f->is_signed && (t & 1)) v = -v;
            float xv = (float)v, lo, hi;
            neighbours(f, xv, &lo, &hi);
            for (size_t i = 0; i < draws; i++) x[i] = xv;
            amp_round_opts o = amp_round_defaults();
            o.mode = AMP_RND_SR;
            o.seed = rt_next(&r);
            o.sr_bits = (int)(t % 3 == 0 ? 0 : 1 + rt_next(&r) % 30);
            ck_assert(amp_round_f32(f, &o, x, y, draws, NULL) == AMP_OK);
            size_t i = 0;
            while (i < draws && (rt_same(y[i], lo) || rt_same(y[i], hi))) i++;
            ck_assert_msg(i == draws,
                          "%s sr bits %d: input 0x%08x draw %zu: got 0x%08x, neighbours 0x%08x 0x%08x (seed 0x%llx)",
                          f->name, o.sr_bits, amp_f2u(xv), i, i < draws ? amp_f2u(y[i]) : 0, amp_f2u(lo), amp_f2u(hi),
                          (unsigned long long)seed);
        }
    }
    free(x);
    free(y);
}
END_TEST

/* Counts how often x rounds up (away from zero) over n draws with sr bits K. */
static size_t count_up(const amp_format *f, float xv, int K, size_t n, uint64_t s, uint64_t index0)
{
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), lo, hi;
    ck_assert(x && y);
    for (size_t i = 0; i < n; i++) x[i] = xv;
    neighbours(f, xv, &lo, &hi);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_SR;
    o.sr_bits = K;
    o.seed = s;
    o.index0 = index0;
    ck_assert(amp_round_f32(f, &o, x, y, n, NULL) == AMP_OK);
    size_t up = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        other += !rt_same(y[i], lo) && !rt_same(y[i], hi);
        up += rt_same(y[i], hi) && !rt_same(lo, hi);
    }
    ck_assert_msg(other == 0, "%s sr: %zu results of 0x%08x are neither neighbour", f->name, other, amp_f2u(xv));
    free(x);
    free(y);
    return up;
}

/* |ups - n p| <= 6 sqrt(n p (1-p)) (+1 for the discreteness at p near 0 or 1):
 * a correct generator fails this with probability about 2e-9 per check. */
static void expect_binomial(const char *what, size_t ups, size_t n, double p)
{
    double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));
    ck_assert_msg(fabs((double)ups - mean) <= 6 * sd + 1, "%s: %zu ups in %zu draws, expected %.1f +- 6*%.1f (seed 0x%llx)",
                  what, ups, n, mean, sd, (unsigned long long)seed);
}

START_TEST(sr_unbiased)
{
    const size_t n = quick ? 20000 : 1000000;
    struct { amp_format_id id; float x; } cases[] = {
        { AMP_FMT_FP16, 1.0f + 77 * 0x1p-18f },        /* frac 77/256 of an ulp 2^-10 */
        { AMP_FMT_FP16, -(1.0f + 0x1p-11f + 0x1p-13f) },/* frac 0.625 */
        { AMP_FMT_FP16, 0x1p-24f * 0.1f },             /* below the min subnormal: frac 0.1 (approx) */
        { AMP_FMT_BF16, 3.0f + 0x1p-8f },              /* frac 0.25 of ulp 2^-6 */
        { AMP_FMT_E4M3, 0.3f },
        { AMP_FMT_E5M2, 40000.0f },
        { AMP_FMT_E2M1, 2.4f },                        /* between 2 and 3: frac 0.4 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const amp_format *f = amp_format_get(cases[k].id);
        float lo, hi;
        neighbours(f, cases[k].x, &lo, &hi);
        double p = ((double)fabsf(cases[k].x) - fabsf(lo)) / ((double)fabsf(hi) - fabsf(lo));   /* exact here */
        size_t ups = count_up(f, cases[k].x, 0, n, seed + k, 0);
        char what[96];
        snprintf(what, sizeof what, "%s sr x=%a p=%.6f", f->name, (double)cases[k].x, p);
        expect_binomial(what, ups, n, p);
        /* the mean of the results is x within the same bound */
        double mean = fabs(lo) + (fabs(hi) - fabs(lo)) * (double)ups / (double)n;
        ck_assert_msg(fabs(mean - fabs(cases[k].x)) <= (fabs(hi) - fabs(lo)) * (6 * sqrt(p * (1 - p) / (double)n) + 1.0 / (double)n),
                      "%s: mean %.9g vs x %.9g", what, mean, (double)fabsf(cases[k].x));
    }
}
END_TEST

START_TEST(sr_bits_quantise_probability)
{
    const size_t n = quick ? 20000 : 400000;
    const amp_format *f = amp_format_get(AMP_FMT_FP16);
    float x = 1.0f + 77 * 0x1p-18f;                    /* frac = 77/256 exactly */
    /* K bits: P(up) = floor(frac 2^K) / 2^K */
    ck_assert_int_eq(count_up(f, x, 1, n, seed, 0), 0);                       /* floor(0.6)/2 = 0 */
    expect_binomial("fp16 sr K=2", count_up(f, x, 2, n, seed, 0), n, 0.25);   /* floor(1.2)/4 */
    expect_binomial("fp16 sr K=3", count_up(f, x, 3, n, seed, 0), n, 0.25);   /* floor(2.4)/8 */
    expect_binomial("fp16 sr K=5", count_up(f, x, 5, n, seed, 0), n, 9.0 / 32);
    expect_binomial("fp16 sr K=8", count_up(f, x, 8, n, seed, 0), n, 77.0 / 256);
    expect_binomial("fp16 sr K=0", count_up(f, x, 0, n, seed, 0), n, 77.0 / 256);
    expect_binomial("fp16 sr K=64", count_up(f, x, 64, n, seed, 0), n, 77.0 / 256);
    /* K=2 is distinguishable from the unquantised 0.3: the bound excludes it */
    size_t u2 = count_up(f, x, 2, n, seed + 1, 0);
    ck_assert_msg(fabs((double)u2 - (double)n * 77 / 256) > 6 * sqrt((double)n * 0.3 * 0.7), "K=2 looks unquantised");
    /* frac 0.75 with K=1: P = 1/2; frac 1/2^10 of an ulp with K=8: never */
    float x2 = 1.0f + 0x1p-11f + 0x1p-12f;            /* frac 0.75 */
    expect_binomial("fp16 sr frac .75 K=1", count_up(f, x2, 1, n, seed, 0), n, 0.5);
    float x3 = 1.0f + 0x1p-20f;                        /* frac 2^-10 */
    ck_assert_int_eq(count_up(f, x3, 8, n, seed, 0), 0);
    expect_binomial("fp16 sr frac 2^-10 K=10", count_up(f, x3, 10, n, seed, 0), n, 0x1p-10);
    /* sr matches MPFR element by element, with a non-zero index0 */
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_SR;
    o.sr_bits = 5;
    o.seed = seed;
    o.stream = 3;
    o.index0 = 1000;
    float xs[64], ys[64];
    for (int i = 0; i < 64; i++) xs[i] = x;
    ck_assert(amp_round_f32(f, &o, xs, ys, 64, NULL) == AMP_OK);
    int i = 0;
    while (i < 64 && rt_same(ys[i], amp_round1_mpfr(f, &o, x, (uint64_t)i, NULL))) i++;
    ck_assert_msg(i == 64, "sr with index0: element %d differs from MPFR", i);
}
END_TEST

/* ---- thread-count independence ------------------------------------------------------ */
static int stats_equal(const amp_stats *a, const amp_stats *b)
{
    if (a->n != b->n || a->amax != b->amax || a->amin_nonzero != b->amin_nonzero || a->n_rel != b->n_rel) return 0;
    if (memcmp(&a->sum_sq_err, &b->sum_sq_err, sizeof(double)) || memcmp(&a->sum_sq, &b->sum_sq, sizeof(double)) ||
        memcmp(&a->sum_rel_sq, &b->sum_rel_sq, sizeof(double)))
        return 0;
    return !memcmp(a->cls, b->cls, sizeof a->cls) && !memcmp(a->hist, b->hist, sizeof a->hist);
}

START_TEST(threads_same_bytes)
{
    const size_t n = quick ? (size_t)3 * 65536 + 17 : (size_t)7 * 65536 + 4321;   /* > several chunks (AMP_CHUNK = 2^16) */
    float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
    double *xd = malloc(n * sizeof *xd);
    ck_assert(x && y1 && y2 && xd);
    rt_rng r = { seed + 4 };
    for (size_t i = 0; i < n; i++) {
        xd[i] = ldexp(rt_unif(&r) - 0.5, (int)(rt_next(&r) % 60) - 40);
        x[i] = (float)xd[i];
    }
    const amp_format_id ids[] = { AMP_FMT_FP16, AMP_FMT_E4M3, AMP_FMT_BF16, AMP_FMT_E8M0 };
    const amp_rounding modes[] = { AMP_RND_SR, AMP_RND_NE, AMP_RND_TO };
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (int is64 = 0; is64 < 2; is64++) {
                const amp_format *f = amp_format_get(ids[k]);
                amp_round_opts o = amp_round_defaults();
                o.mode = modes[m];
                o.seed = seed;
                o.stream = 7;
                amp_stats s1, s2;
                amp_stats_init(&s1);
                amp_stats_init(&s2);
                amp_set_threads(1);
                ck_assert(is64 ? amp_round_f64(f, &o, xd, y1, n, &s1) == AMP_OK : amp_round_f32(f, &o, x, y1, n, &s1) == AMP_OK);
                amp_set_threads(2);
                ck_assert(is64 ? amp_round_f64(f, &o, xd, y2, n, &s2) == AMP_OK : amp_round_f32(f, &o, x, y2, n, &s2) == AMP_OK);
                amp_set_threads(0);
                ck_assert_msg(!memcmp(y1, y2, n * sizeof *y1), "%s %s %s: 1 and 2 threads give different bytes",
                              f->name, amp_rounding_name(o.mode), is64 ? "f64" : "f32");
                ck_assert_msg(stats_equal(&s1, &s2), "%s %s %s: 1 and 2 threads give different statistics "
                              "(sum_sq_err %a vs %a)", f->name, amp_rounding_name(o.mode), is64 ? "f64" : "f32",
                              s1.sum_sq_err, s2.sum_sq_err);
            }
    /* sr: chunked calls with index0 give the bytes of one call */
    const amp_format *f = amp_format_get(AMP_FMT_E5M2);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_SR;
    o.seed = seed;
    ck_assert(amp_round_f32(f, &o, x, y1, n, NULL) == AMP_OK);
    size_t cut = 100003;
    ck_assert(amp_round_f32(f, &o, x, y2, cut, NULL) == AMP_OK);
    o.index0 = cut;
    ck_assert(amp_round_f32(f, &o, x + cut, y2 + cut, n - cut, NULL) == AMP_OK);
    ck_assert_msg(!memcmp(y1, y2, n * sizeof *y1), "sr: split call with index0 differs from one call");
    free(x);
    free(y1);
    free(y2);
    free(xd);
}
END_TEST

/* ---- the MPFR reference's hygiene --------------------------------------------------- */
START_TEST(mpfr_restores_exponent_range)
{
    ck_assert_int_eq(mpfr_set_emin(-1000), 0);
    ck_assert_int_eq(mpfr_set_emax(1000), 0);
    amp_round_opts o = amp_round_defaults();
    for (int m = 0; m < AMP_RND_COUNT; m++) {
        o.mode = (amp_rounding)m;
        amp_round1_mpfr(amp_format_get(AMP_FMT_FP16), &o, 1e-7, 0, NULL);
        amp_round1_mpfr(amp_format_get(AMP_FMT_E4M3), &o, 1e300, 0, NULL);
        amp_round1_mpfr(amp_format_get(AMP_FMT_E8M0), &o, 1e-300, 0, NULL);
    }
    ck_assert_int_eq(mpfr_get_emin(), -1000);
    ck_assert_int_eq(mpfr_get_emax(), 1000);
}
END_TEST

START_TEST(mpfr_thread_safe)
{
    ck_assert_msg(mpfr_buildopt_tls_p(), "MPFR is not built thread-safe");
    const size_t n = quick ? 2000 : 40000;
    double *x = malloc(n * sizeof *x);
    float *want = malloc(2 * n * sizeof *want), *got = malloc(2 * n * sizeof *got);
    ck_assert(x && want && got);
    rt_rng r = { seed + 8 };
    for (size_t i = 0; i < n; i++) x[i] = ldexp(rt_unif(&r) + 0.5, (int)(rt_next(&r) % 200) - 150);
    const amp_format *fa = amp_format_get(AMP_FMT_E4M3), *fb = amp_format_get(AMP_FMT_BF16);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_NA;
    for (size_t i = 0; i < n; i++) {
        want[i] = amp_round1_mpfr(fa, &o, x[i], i, NULL);
        want[n + i] = amp_round1_mpfr(fb, &o, x[i], i, NULL);
    }
    /* two threads, different formats (so different exponent ranges) at once */
    #pragma omp parallel num_threads(2)
    {
        int t = omp_get_thread_num();
        const amp_format *f = t == 0 ? fa : fb;
        for (size_t i = 0; i < n; i++) got[(size_t)t * n + i] = amp_round1_mpfr(f, &o, x[i], i, NULL);
    }
    size_t i = 0;
    while (i < 2 * n && rt_same(want[i], got[i])) i++;
    ck_assert_msg(i == 2 * n, "element %zu: serial 0x%08x threaded 0x%08x", i, amp_f2u(want[i]), amp_f2u(got[i]));
    free(x);
    free(want);
    free(got);
}
END_TEST

int main(void)
{
    seed = rt_default_seed();
    const char *q = getenv("AMP_QUICK");
    quick = q && *q && strcmp(q, "0");
    Suite *s = suite_create("round_stats");
    TCase *tc = tcase_create("stats");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, classes_by_construction_fp16);
    tcase_add_test(tc, classes_by_construction_e4m3);
    tcase_add_loop_test(tc, stats_equal_mpfr_classes, 0, AMP_FMT_COUNT);
    tcase_add_test(tc, stats_sums_wide_range);
    tcase_add_test(tc, stats_hist_spans);
    tcase_add_test(tc, stats_nonfinite_counts);
    tcase_add_test(tc, round_counts_nonfinite);
    tcase_add_test(tc, round_many_equals_each);
    tcase_add_test(tc, stats_reset_equals_init);
    tcase_add_test(tc, paths_same_bits);
    suite_add_tcase(s, tc);
    TCase *sr = tcase_create("sr");
    tcase_set_timeout(sr, 300);
    tcase_add_test(sr, sr_only_neighbours);
    tcase_add_test(sr, sr_unbiased);
    tcase_add_test(sr, sr_bits_quantise_probability);
    tcase_add_test(sr, threads_same_bytes);
    suite_add_tcase(s, sr);
    TCase *mp = tcase_create("mpfr");
    tcase_add_test(mp, mpfr_restores_exponent_range);
    tcase_add_test(mp, mpfr_thread_safe);
    suite_add_tcase(s, mp);
    int failed = amp_check_failures(s);
    if (failed) fprintf(stderr, "check_round_stats: seed 0x%llx (set AMP_TEST_SEED to repeat)\n", (unsigned long long)seed);
    return failed ? 1 : 0;
}
