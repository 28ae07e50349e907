/* Check suite: the analysis library and `ampsim analyze`.
 *  - for every built-in format and several scales (powers of two, one that
 *    takes float32 out of range, and non-powers of two), every counter of every
 *    row equals what the MPFR reference (amp_round1_mpfr on the exact product
 *    x*s) gives element by element; amax, amin_nonzero, in_normal_range exactly;
 *    rel_err to 1e-6 relative (the fast kernels form its terms in float32);
 *  - counts known by construction for fp16 and e4m3, scaled and unscaled;
 *  - the auto scale equals a brute force over every k in -126..127 through the
 *    MPFR reference, for every format and tensors built to hit the bounds;
 *  - float32 / float64 / unaligned views, thread counts and chunking do not
 *    change the statistics;
 *  - the CLI: CSV header and rows, JSON, the table, bad files and options.
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed on failure. */
#include "ampsim.h"
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t seed = 12345;
static int quick;   /* AMP_QUICK=1 (make valgrind): smaller tensors */

/* Formats under test: every table row, then a few custom shapes. */
static const char *const customs[] = { "e3m4", "e6m1fn", "e2m2fnuz", "e5m6" };
#define N_FMT (AMP_FMT_COUNT + (int)(sizeof customs / sizeof customs[0]))

static amp_format fmt_at(int i)
{
    amp_format f;
    if (i < AMP_FMT_COUNT) return *amp_format_get((amp_format_id)i);
    ck_assert(amp_format_parse(customs[i - AMP_FMT_COUNT], &f) == AMP_OK);
    return f;
}

static double urand(uint64_t i) { return amp_rand_uniform(seed, 77, i); }

/* A tensor of n float32 values: log-uniform magnitudes over 2^lo..2^hi with
 * random signs, plus (if specials) zeros, NaN, infinities and the format's
 * boundary values and ties. */
static void make_tensor(float *x, size_t n, int lo, int hi, const amp_format *f, int specials, uint64_t tag)
{
    for (size_t i = 0; i < n; i++) {
        double e = lo + (hi - lo) * urand(tag * 1000003 + i);
        double v = exp2(e);
        if (urand(tag * 1000003 + i + 500000) < 0.5) v = -v;
        x[i] = (float)v;
    }
    if (!specials || n < 40) return;
    size_t k = 0;
    x[k++] = 0.0f; x[k++] = -0.0f; x[k++] = NAN; x[k++] = INFINITY; x[k++] = -INFINITY;
    double b[] = { f->min_subnormal / 2, f->min_subnormal, f->min_subnormal * 0.75, f->min_normal,
                   f->min_normal * (1 - f->epsilon / 4), f->max_finite, f->max_finite * (1 + f->epsilon / 2),
                   f->max_finite * (1 + f->epsilon / 4), f->max_finite * 2 };
    for (size_t j = 0; j < sizeof b / sizeof b[0] && k + 2 < n; j++) {
        float v = (float)b[j];
        if (v == 0 || isinf(v)) continue;
        x[k++] = v;
        x[k++] = -v;
    }
}

/* Expected statistics of format f on x*s (exact product) under options o,
 * from MPFR; negative inputs of an unsigned format counted in exp_invalid. */
static uint64_t exp_invalid;   /* set by expected_stats: negative nonzero finite inputs of an unsigned format */

static void expected_stats_o(const amp_format *f, const amp_round_opts *o, const float *x, size_t n, float s,
                             amp_stats *st)
{
    amp_stats_init(st);
    exp_invalid = 0;
    for (size_t i = 0; i < n; i++) {
        double v = (double)x[i] * (double)s;
        amp_class c;
        float y = amp_round1_mpfr(f, o, v, i, &c);
        st->n++;
        if (!f->is_signed && v < 0 && isfinite(v)) {
            ck_assert(c == AMP_CLS_OVERFLOW && isnan(y));   /* the rounding core's class; analyze says invalid */
            exp_invalid++;
        } else {
            st->cls[c]++;
        }
        if (isnan(v)) continue;
        if (fabs(v) > st->amax) st->amax = fabs(v);
        if (isinf(v) || v == 0) continue;
        if (fabs(v) < st->amin_nonzero) st->amin_nonzero = fabs(v);
        if (isfinite(y)) {
            double d = (double)y - v;
            st->sum_rel_sq += (d / v) * (d / v);
            st->n_rel++;
        }
    }
}

static void expected_stats(const amp_format *f, const float *x, size_t n, float s, amp_stats *st)
{
    amp_round_opts o = amp_round_defaults();
    expected_stats_o(f, &o, x, n, s, st);
}

static void compare_stats(const char *what, const amp_stats *want, const amp_stats *got)
{
    ck_assert_msg(want->n == got->n, "%s: n %llu vs %llu", what, (unsigned long long)want->n, (unsigned long long)got->n);
    for (int c = 0; c < AMP_CLS_COUNT; c++)
        ck_assert_msg(want->cls[c] == got->cls[c], "%s (seed %llu): %s expected %llu got %llu", what,
                      (unsigned long long)seed, amp_class_name((amp_class)c), (unsigned long long)want->cls[c],
                      (unsigned long long)got->cls[c]);
    ck_assert_msg(want->amax == got->amax, "%s: amax %a vs %a", what, want->amax, got->amax);
    ck_assert_msg(want->amin_nonzero == got->amin_nonzero, "%s: amin %a vs %a", what, want->amin_nonzero,
                  got->amin_nonzero);
    ck_assert_msg(want->n_rel == got->n_rel, "%s: n_rel", what);
    double a = amp_stats_rel_err(want), b = amp_stats_rel_err(got);
    /* the fast kernels form each term in float32 (round_fast.c): ~1e-7 relative */
    ck_assert_msg(fabs(a - b) <= 1e-6 * a + 1e-300, "%s: rel_err %.17g vs %.17g", what, a, b);
    ck_assert_msg(amp_stats_in_normal_range(want) == amp_stats_in_normal_range(got), "%s: in_normal_range", what);
}

static amp_tensor_view view_f32(const float *x, size_t n, const char *name)
{
    amp_tensor_view v = { .dtype = AMP_DT_F32, .ndim = 1, .n = n, .data = x };
    v.shape[0] = n;
    snprintf(v.name, sizeof v.name, "%s", name);
    return v;
}

/* ---- every format, several scales, against MPFR ------------------------------ */
static const float scales[] = { 1.0f, 0x1p-10f, 0x1p12f, 0x1p100f, 3.0f, 0.1f, 0x1.fffffep-3f };
#define NSCALES ((int)(sizeof scales / sizeof scales[0]))

/* _i: the format; N_FMT + the format in the test case "long" (full size,
 * make check-long; make check takes a tenth) */
START_TEST(every_format_against_mpfr)
{
    int lng = _i >= N_FMT;
    _i %= N_FMT;
    amp_format ff = fmt_at(_i);
    const amp_format *f = &ff;
    enum { NMAX = 3000 };
    static float x[NMAX];
    const int N = quick ? 300 : lng ? NMAX : NMAX / 10;
    make_tensor(x, (size_t)N, -152, 130, f, 1, (uint64_t)_i);
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    o.n_formats = 1;
    o.formats[0] = *f;
    o.n_scales = NSCALES;
    for (int s = 0; s < NSCALES; s++) o.scales[s] = (amp_scale_choice){ .kind = AMP_SCALE_FIXED, .value = scales[s] };
    amp_tensor_view v = view_f32(x, N, "t");
    amp_analyze_row *rows = NULL;
    size_t nr = 0;
    ck_assert_msg(amp_analyze_view(&v, &o, &rows, &nr) == AMP_OK, "%s", amp_errmsg());
    ck_assert_int_eq((int)nr, NSCALES);
    for (int s = 0; s < NSCALES; s++) {
        amp_stats want;
        char what[128];
        snprintf(what, sizeof what, "%s scale %a", f->name, (double)scales[s]);
        expected_stats(f, x, N, scales[s], &want);
        ck_assert_str_eq(rows[s].format, f->name);
        ck_assert_str_eq(rows[s].tensor, "t");
        ck_assert(rows[s].scale == scales[s] && !rows[s].is_auto);
        compare_stats(what, &want, &rows[s].st);
        ck_assert_msg(rows[s].invalid == exp_invalid, "%s: invalid %llu vs %llu", what,
                      (unsigned long long)rows[s].invalid, (unsigned long long)exp_invalid);
    }
    /* the same values as a float64 tensor give the same rows (doubles of
     * float32 values times float32 scales: the products are exact either way) */
    static double xd[NMAX];
    for (int i = 0; i < N; i++) xd[i] = x[i];
    amp_tensor_view vd = v;
    vd.dtype = AMP_DT_F64;
    vd.data = xd;
    amp_analyze_row *rd = NULL;
    size_t nd = 0;
    ck_assert(amp_analyze_view(&vd, &o, &rd, &nd) == AMP_OK && nd == nr);
    for (int s = 0; s < NSCALES; s++) compare_stats("float64 view", &rows[s].st, &rd[s].st);
    free(rows);
    free(rd);
}
END_TEST

/* ---- counts by construction ---------------------------------------------------- */
static size_t fill(float *x, size_t k, float v, int count)
{
    for (int i = 0; i < count; i++) x[k++] = v;
    return k;
}

START_TEST(counts_by_construction)
{
    float x[64];
    size_t k = 0;
    k = fill(x, k, 0.0f, 3);          /* zero_in 3 */
    k = fill(x, k, 1e-10f, 5);        /* fp16: < 2^-25: flushed 5; e4m3 too */
    k = fill(x, k, 1e6f, 7);          /* fp16 overflow (inf) 7; e4m3 overflow (NaN) 7 */
    k = fill(x, k, 1.0f, 11);         /* exact in both */
    k = fill(x, k, NAN, 2);           /* nan 2 */
    k = fill(x, k, 0x1p-20f, 4);      /* fp16 subnormal (exact); e4m3 flushed */
    k = fill(x, k, 0.1f, 6);          /* rounded in both */
    amp_tensor_view v = view_f32(x, k, "c");
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    ck_assert(amp_analyze_parse_formats("fp16,e4m3", &o) == AMP_OK);
    ck_assert(amp_analyze_parse_scales("1,0x1p-6", &o) == AMP_OK);
    amp_analyze_row *r = NULL;
    size_t n = 0;
    ck_assert(amp_analyze_view(&v, &o, &r, &n) == AMP_OK && n == 4);
    /* fp16 scale 1 */
    const amp_stats *s = &r[0].st;
    ck_assert(s->n == 38 && s->cls[AMP_CLS_ZERO_IN] == 3 && s->cls[AMP_CLS_FLUSHED] == 5 &&
              s->cls[AMP_CLS_OVERFLOW] == 7 && s->cls[AMP_CLS_EXACT] == 11 && s->cls[AMP_CLS_NAN_IN] == 2 &&
              s->cls[AMP_CLS_SUBNORMAL] == 4 && s->cls[AMP_CLS_ROUNDED] == 6 && s->cls[AMP_CLS_SATURATED] == 0);
    ck_assert(s->amax == 1e6f && s->amin_nonzero == (double)1e-10f);
    ck_assert(fabs(amp_stats_in_normal_range(s) - 17.0 / 33.0) < 1e-15);
    /* fp16 scale 2^-6: 1e6/64 = 15625 is exact in fp16 (14 bits? 15625 = 0b11110100001001: 14
     * significant bits -> rounded); 1 -> 2^-6 exact; 2^-26 flushes (below 2^-25); 0.1/64 normal */
    s = &r[1].st;
    ck_assert(r[1].scale == 0x1p-6f);
    ck_assert(s->cls[AMP_CLS_OVERFLOW] == 0 && s->cls[AMP_CLS_FLUSHED] == 5 + 4 && s->cls[AMP_CLS_EXACT] == 11 &&
              s->cls[AMP_CLS_ROUNDED] == 7 + 6 && s->cls[AMP_CLS_SUBNORMAL] == 0);
    /* e4m3 scale 1: 2^-20 flushes; 1e6 -> NaN (overflow) */
    s = &r[2].st;
    ck_assert(s->cls[AMP_CLS_FLUSHED] == 9 && s->cls[AMP_CLS_OVERFLOW] == 7 && s->cls[AMP_CLS_EXACT] == 11 &&
              s->cls[AMP_CLS_ROUNDED] == 6);
    /* e4m3 scale 2^-6: 15625 > 464 still overflows; 0.1/64 = 1.5625e-3 is subnormal in e4m3 (< 2^-6) */
    s = &r[3].st;
    ck_assert(s->cls[AMP_CLS_OVERFLOW] == 7 && s->cls[AMP_CLS_FLUSHED] == 9 && s->cls[AMP_CLS_EXACT] == 11 &&
              s->cls[AMP_CLS_SUBNORMAL] == 6);
    free(r);
}
END_TEST

/* ---- auto scale against brute force -------------------------------------------- */
/* Per k, through the MPFR reference: out of range (overflow or saturated),
 * flushed and normal counts; the two rules' choices written out from the
 * definitions of amp_analyze.h. */
typedef struct bkey { int64_t c[3]; int k; } bkey;

static int bkey_less(const bkey *a, const bkey *b)
{
    for (int i = 0; i < 3; i++)
        if (a->c[i] != b->c[i]) return a->c[i] < b->c[i];
    if (abs(a->k) != abs(b->k)) return abs(a->k) < abs(b->k);
    return a->k < b->k;
}

static void brute_best(const amp_format *f, const amp_round_opts *o, const double *x, size_t n, int *k_auto,
                       int *k_count)
{
    bkey ba = { { INT64_MAX, 0, 0 }, 0 }, bc = { { INT64_MAX, 0, 0 }, 0 };
    amp_round_opts od = *o;
    if (od.mode == AMP_RND_SR) od.mode = AMP_RND_NE;
    for (int k = AMP_ANALYZE_KMIN; k <= AMP_ANALYZE_KMAX; k++) {
        int64_t out = 0, fl = 0, nor = 0;
        for (size_t i = 0; i < n; i++) {
            amp_class c;
            amp_round1_mpfr(f, &od, x[i] * ldexp(1.0, k), i, &c);
            if (!f->is_signed && x[i] < 0) continue;            /* invalid whatever k */
            out += c == AMP_CLS_OVERFLOW || c == AMP_CLS_SATURATED;
            fl += c == AMP_CLS_FLUSHED;
            nor += c == AMP_CLS_EXACT || c == AMP_CLS_ROUNDED;
        }
        bkey ka = { { out, fl, -nor }, k }, kc = { { fl + out, out, 0 }, k };
        if (bkey_less(&ka, &ba)) ba = ka;
        if (bkey_less(&kc, &bc)) bc = kc;
    }
    *k_auto = ba.k;
    *k_count = bc.k;
}

static amp_round_opts cast_set(int i)
{
    amp_round_opts o = amp_round_defaults();
    switch (i) {
    case 1: o.flags = AMP_SATURATE; break;
    case 2: o.mode = AMP_RND_TZ; break;
    case 3: o.flags = AMP_FTZ | AMP_DAZ; break;
    case 4: o.mode = AMP_RND_UP; o.flags = AMP_FTZ; break;
    }
    return o;
}

/* _i as in every_format_against_mpfr */
START_TEST(auto_scale_brute_force)
{
    int lng = _i >= N_FMT;
    _i %= N_FMT;
    amp_format ff = fmt_at(_i);
    const amp_format *f = &ff;
    enum { NMAX = 160 };
    float x[NMAX];
    double xd[NMAX];
    const int N = quick || !lng ? 40 : NMAX;
    for (int t = 0; t < 6; t++) {
        switch (t) {
        case 0: make_tensor(x, N, -140, 100, f, 1, 100 + (uint64_t)_i); break;     /* wide */
        case 1: make_tensor(x, N, -30, -12, f, 0, 200 + (uint64_t)_i); break;      /* gradient-like */
        case 2:                                                                  /* ties at binade edges */
            for (int i = 0; i < N; i++) x[i] = (float)ldexp(i % 3 == 0 ? 1.0 : 1.5, -60 + i / 2) * (i & 1 ? -1 : 1);
            break;
        case 3: for (int i = 0; i < N; i++) x[i] = i % 2 ? 0.0f : NAN; break;     /* nothing to scale */
        case 4: make_tensor(x, N, 20, 22, f, 0, 300 + (uint64_t)_i); for (int i = 0; i < N; i++) x[i] = -fabsf(x[i]); break;
        case 5: make_tensor(x, N, -2, 60, f, 0, 400 + (uint64_t)_i); break;       /* too wide for 8 bits */
        }
        for (int i = 0; i < N; i++) xd[i] = x[i];
        for (int oi = 0; oi < 5; oi++) {
            amp_round_opts ro = cast_set(oi);
            int ka, kc;
            brute_best(f, &ro, xd, N, &ka, &kc);
            amp_analyze_opts o;
            amp_analyze_defaults(&o);
            o.n_formats = 1;
            o.formats[0] = *f;
            o.round = ro;
            ck_assert(amp_analyze_parse_scales("auto,auto:count", &o) == AMP_OK);
            amp_tensor_view v = view_f32(x, N, "a");
            if (t == 2) {   /* also through a float64 view */
                v.dtype = AMP_DT_F64;
                v.data = xd;
            }
            amp_analyze_row *r = NULL;
            size_t n = 0;
            ck_assert_msg(amp_analyze_view(&v, &o, &r, &n) == AMP_OK, "%s", amp_errmsg());
            ck_assert_int_eq((int)n, 3);
            ck_assert(!r[0].is_auto && r[0].scale == 1.0f && r[1].is_auto && r[2].is_auto);
            ck_assert_str_eq(r[1].scale_spec, "auto");
            ck_assert_str_eq(r[2].scale_spec, "auto:count");
            ck_assert_msg(r[1].scale_log2 == ka && r[2].scale_log2 == kc,
                          "%s tensor %d cast %d: auto k=%g auto:count k=%g, brute force %d and %d", f->name, t, oi,
                          r[1].scale_log2, r[2].scale_log2, ka, kc);
            ck_assert(r[1].scale == ldexpf(1.0f, ka) && r[2].scale == ldexpf(1.0f, kc));
            amp_stats want;
            expected_stats_o(f, &ro, x, N, r[1].scale, &want);
            compare_stats("auto row", &want, &r[1].st);
            ck_assert(r[1].invalid == exp_invalid);
            free(r);
        }
    }
}
END_TEST

/* ---- determinism ------------------------------------------------------------------ */
START_TEST(threads_chunks_alignment)
{
    size_t n = quick ? ((size_t)1 << 17) + 4099 : ((size_t)1 << 20) + 4099;
    float *x = malloc(n * sizeof *x + 8);
    unsigned char *raw = malloc(n * 4 + 1);
    ck_assert(x && raw);
    make_tensor(x, n, -40, 20, amp_format_get(AMP_FMT_E4M3), 1, 9);
    memcpy(raw + 1, x, n * 4);
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    ck_assert(amp_analyze_parse_formats("e4m3,bf16", &o) == AMP_OK);
    ck_assert(amp_analyze_parse_scales("auto,0.75", &o) == AMP_OK);
    amp_tensor_view v = view_f32(x, n, "d");
    amp_analyze_row *r1 = NULL, *r2 = NULL, *r3 = NULL;
    size_t n1 = 0, n2 = 0, n3 = 0;
    int saved = amp_get_threads();
    amp_set_threads(1);
    ck_assert(amp_analyze_view(&v, &o, &r1, &n1) == AMP_OK);
    amp_set_threads(2);
    ck_assert(amp_analyze_view(&v, &o, &r2, &n2) == AMP_OK);
    v.data = raw + 1;   /* unaligned: the copying path */
    ck_assert(amp_analyze_view(&v, &o, &r3, &n3) == AMP_OK);
    amp_set_threads(saved);
    ck_assert(n1 == 6 && n2 == 6 && n3 == 6);
    for (size_t i = 0; i < n1; i++) {
        ck_assert_msg(!memcmp(&r1[i], &r2[i], sizeof r1[i]), "row %zu differs between 1 and 2 threads", i);
        ck_assert_msg(!memcmp(&r1[i], &r3[i], sizeof r1[i]), "row %zu differs for an unaligned view", i);
    }
    ck_assert(r1[0].scale == 1.0f && r1[1].is_auto && r1[2].scale == 0.75f);
    free(r1); free(r2); free(r3); free(x); free(raw);
}
END_TEST

START_TEST(options_and_csv)
{
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    ck_assert(o.n_formats == 4 && !strcmp(o.formats[0].name, "fp16") && !strcmp(o.formats[3].name, "e5m2"));
    ck_assert(amp_analyze_parse_formats("fp16,nope", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_formats("fp16,,e4m3", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_formats("", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_formats("e3m4,e5m2fnuz", &o) == AMP_OK && o.n_formats == 2);
    ck_assert(amp_analyze_parse_scales("0", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("-2", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("1e39", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("1e-50", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("2x", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("1024,auto", &o) == AMP_OK);
    ck_assert(o.n_scales == 3 && o.scales[0].value == 1.0f && o.scales[1].value == 1024.0f &&
              o.scales[2].kind == AMP_SCALE_AUTO);
    /* 2^k, as the table prints scales */
    ck_assert(amp_analyze_parse_scales("2^6,2^-149,2^127", &o) == AMP_OK);
    ck_assert(o.n_scales == 3 && o.scales[0].value == 64.0f && o.scales[1].value == 0x1p-149f &&
              o.scales[2].value == 0x1p127f && !strcmp(o.scales[0].spec, "2^6"));
    ck_assert(amp_analyze_parse_scales("2^128", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("2^", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("2^1.5", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("amax:margin=2:pow2,auto:count", &o) == AMP_OK);
    ck_assert(o.n_scales == 3 && o.scales[1].kind == AMP_SCALE_AMAX && o.scales[1].margin == 2 && o.scales[1].pow2 &&
              o.scales[2].kind == AMP_SCALE_AUTO_COUNT);
    ck_assert(amp_analyze_parse_scales("amax:margin=x", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("amax:pow3", &o) == AMP_EINVAL);
    ck_assert(amp_analyze_parse_scales("auto:cont", &o) == AMP_EINVAL);
    ck_assert_str_eq(amp_analyze_csv_header(),
                     "tensor,format,cast,scale_spec,scale,scale_log2,n,zero_in,flushed,subnormal,saturated,overflow,"
                     "invalid,nan,lost,lost_frac,amax,amin_nonzero,rel_err_finite,rel_err_all,in_normal_range,"
                     "blocks,scale_hi,scale_lo,amax_sat_frac,scale_exp_min,scale_exp_median,scale_exp_max");
    amp_analyze_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.tensor, sizeof r.tensor, "a,\"b\"");
    snprintf(r.format, sizeof r.format, "fp16");
    snprintf(r.cast, sizeof r.cast, "rne");
    snprintf(r.scale_spec, sizeof r.scale_spec, "0.5");
    r.scale = 0.5f;
    r.scale_log2 = -1;
    amp_stats_init(&r.st);
    r.st.n = 4;
    r.st.cls[AMP_CLS_ZERO_IN] = 1;
    r.st.cls[AMP_CLS_FLUSHED] = 2;
    r.st.cls[AMP_CLS_EXACT] = 1;
    r.st.amax = 2;
    r.st.amin_nonzero = 0.25;
    r.st.sum_rel_sq = 2;
    r.st.n_rel = 3;
    char buf[1024];
    amp_analyze_csv_row(&r, buf, sizeof buf);
    ck_assert_str_eq(buf, "\"a,\"\"b\"\"\",fp16,rne,0.5,0.5,-1,4,1,2,0,0,0,0,0,2,0.666666667,2,0.25,0.816496581,"
                          "0.816496581,0.333333333,,,,,,,");
    /* rel_err_all: an overflow and an invalid value count 1 each */
    r.st.cls[AMP_CLS_OVERFLOW] = 1;
    r.st.n = 6;
    r.invalid = 1;
    ck_assert(fabs(amp_analyze_rel_err_all(&r) - sqrt(4.0 / 5.0)) < 1e-15);
    ck_assert(amp_analyze_rel_err_finite(&r) == sqrt(2.0 / 3.0));
    ck_assert(amp_analyze_lost(&r) == 4 && amp_analyze_lost_frac(&r) == 0.8);
}
END_TEST

/* ---- the findings of a first-time user, one check each ------------------------- */
static amp_analyze_row *analyze1(const float *x, size_t n, const char *formats, const char *scale_list,
                                 const amp_round_opts *ro, size_t *nr)
{
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    ck_assert(amp_analyze_parse_formats(formats, &o) == AMP_OK);
    ck_assert(amp_analyze_parse_scales(scale_list, &o) == AMP_OK);
    if (ro) o.round = *ro;
    amp_tensor_view v = view_f32(x, n, "t");
    amp_analyze_row *r = NULL;
    *nr = 0;
    ck_assert_msg(amp_analyze_view(&v, &o, &r, nr) == AMP_OK, "%s", amp_errmsg());
    return r;
}

START_TEST(auto_never_overflows)
{
    /* one large value and many small ones: losing the large one to NaN flushes
     * nothing at k = 3, so the count rule takes it; auto must not */
    float x[41];
    x[0] = 1e6f;
    for (int i = 1; i < 41; i++) x[i] = 0x1p-12f * (1 + (float)i / 64);
    size_t n;
    amp_analyze_row *r = analyze1(x, 41, "e4m3", "auto,auto:count", NULL, &n);
    ck_assert(n == 3);
    ck_assert_msg(r[1].st.cls[AMP_CLS_OVERFLOW] == 0 && r[1].st.cls[AMP_CLS_SATURATED] == 0, "auto overflowed");
    /* 1e6 * 2^-11 = 488.3 is past e4m3's overflow threshold 464, 1e6 * 2^-12 = 244.1 is not */
    ck_assert(r[1].scale_log2 == -12 && r[1].st.cls[AMP_CLS_FLUSHED] == 40);
    ck_assert(r[2].st.cls[AMP_CLS_OVERFLOW] == 1 && r[2].st.cls[AMP_CLS_FLUSHED] == 0);
    free(r);
}
END_TEST

START_TEST(auto_prefers_normal_range)
{
    /* a bias gradient below fp16's subnormals (amax 3.6e-8): the count rule
     * stops at the first k that flushes nothing, where the values are
     * subnormal; auto moves every value into the normal range */
    float x[200];
    for (int i = 0; i < 200; i++) x[i] = (float)(3.6e-8 * (0.05 + 0.95 * urand(9000 + (uint64_t)i))) * (i & 1 ? -1 : 1);
    size_t n;
    amp_analyze_row *r = analyze1(x, 200, "fp16", "auto,auto:count", NULL, &n);
    ck_assert(n == 3);
    ck_assert(amp_stats_in_normal_range(&r[0].st) == 0 && amp_analyze_rel_err_finite(&r[0]) > 1e-3);
    ck_assert_msg(amp_stats_in_normal_range(&r[1].st) == 1.0, "auto k=%g in_normal %g", r[1].scale_log2,
                  amp_stats_in_normal_range(&r[1].st));
    ck_assert(amp_analyze_rel_err_finite(&r[1]) < 1e-3);
    ck_assert(r[2].st.cls[AMP_CLS_FLUSHED] == 0 && r[2].st.cls[AMP_CLS_SUBNORMAL] > 0 && r[2].scale_log2 < r[1].scale_log2);
    /* the smallest |k| that makes them all normal: min|x| * 2^k >= 2^-14 */
    double amin = r[0].st.amin_nonzero;
    int k = (int)r[1].scale_log2;
    ck_assert(ldexp(amin, k) >= 0x1p-14 * (1 - 0x1p-11) && ldexp(amin, k - 1) < 0x1p-14 * (1 - 0x1p-12));
    free(r);
}
END_TEST

START_TEST(cast_options_in_rows)
{
    float x[300];
    make_tensor(x, 300, -30, 20, amp_format_get(AMP_FMT_E4M3), 1, 77);
    static const unsigned flags[] = { AMP_SATURATE, AMP_FTZ, AMP_DAZ, AMP_SATURATE | AMP_FTZ | AMP_DAZ };
    static const char *const texts[] = { "rtz:saturate", "rtz:ftz", "rtz:daz", "rtz:saturate:ftz:daz" };
    for (int i = 0; i < 4; i++) {
        amp_round_opts ro = amp_round_defaults();
        ro.mode = AMP_RND_TZ;
        ro.flags = flags[i];
        size_t n;
        amp_analyze_row *r = analyze1(x, 300, "e4m3,fp16", "1,2^-3", &ro, &n);
        ck_assert(n == 4);
        for (size_t j = 0; j < n; j++) {
            ck_assert_str_eq(r[j].cast, texts[i]);
            amp_stats want;
            expected_stats_o(j < 2 ? amp_format_get(AMP_FMT_E4M3) : amp_format_get(AMP_FMT_FP16), &ro, x, 300, r[j].scale,
                             &want);
            compare_stats(texts[i], &want, &r[j].st);
        }
        free(r);
    }
    /* sr: the seed is in the row and changes the rounding */
    amp_round_opts ro = amp_round_defaults();
    ro.mode = AMP_RND_SR;
    ro.seed = 5;
    ro.sr_bits = 8;
    size_t n;
    amp_analyze_row *r = analyze1(x, 300, "e4m3", "1", &ro, &n);
    ck_assert_str_eq(r[0].cast, "sr:bits=8:seed=5");
    amp_stats want;
    expected_stats_o(amp_format_get(AMP_FMT_E4M3), &ro, x, 300, 1.0f, &want);
    compare_stats("sr", &want, &r[0].st);
    free(r);
}
END_TEST

START_TEST(lost_values_show)
{
    /* 926 of 1699 values overflow e4m3: rel_err_finite stays small, rel_err_all
     * and lost_frac do not */
    float x[1699];
    for (int i = 0; i < 1699; i++) x[i] = i < 926 ? 1000.0f + (float)i : 1.0f + (float)i / 4096;
    size_t n;
    amp_analyze_row *r = analyze1(x, 1699, "e4m3", "1", NULL, &n);
    ck_assert(r[0].st.cls[AMP_CLS_OVERFLOW] == 926 && amp_analyze_lost(&r[0]) == 926);
    ck_assert(amp_analyze_lost_frac(&r[0]) == 926.0 / 1699.0);
    ck_assert(amp_analyze_rel_err_finite(&r[0]) < 0.05);
    double want = sqrt((r[0].st.sum_rel_sq + 926) / 1699.0);
    ck_assert(fabs(amp_analyze_rel_err_all(&r[0]) - want) < 1e-12 && want > 0.7);
    free(r);
}
END_TEST

START_TEST(rows_say_their_scale)
{
    /* --scales 64,auto where auto picks 64: the rows differ in scale_spec */
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = 5.0f + (float)i / 16;   /* e4m3: 2^6 keeps 9*64 = 576 > 448? */
    size_t n;
    amp_analyze_row *r = analyze1(x, 64, "fp16", "64,auto", NULL, &n);
    ck_assert(n == 3);
    ck_assert_str_eq(r[0].scale_spec, "1");
    ck_assert_str_eq(r[1].scale_spec, "64");
    ck_assert_str_eq(r[2].scale_spec, "auto");
    char a[1024], b[1024];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            amp_analyze_csv_row(&r[i], a, sizeof a);
            amp_analyze_csv_row(&r[j], b, sizeof b);
            ck_assert_msg(strcmp(a, b), "two identical rows: %s", a);
        }
    free(r);
    /* 2^6 and 64 are the same scale */
    r = analyze1(x, 64, "e4m3", "2^6,64", NULL, &n);
    ck_assert(n == 2 && r[0].scale == 64.0f && r[0].scale_log2 == 6 && !memcmp(&r[0].st, &r[1].st, sizeof r[0].st));
    free(r);
}
END_TEST

START_TEST(e8m0_negatives_invalid)
{
    float x[6] = { 1, -2, -0.0f, 4, -INFINITY, 1e38f };
    size_t n;
    amp_analyze_row *r = analyze1(x, 6, "e8m0", "1", NULL, &n);
    ck_assert(r[0].invalid == 1 && r[0].st.cls[AMP_CLS_OVERFLOW] == 0 && r[0].st.cls[AMP_CLS_INF_IN] == 1);
    ck_assert(r[0].st.cls[AMP_CLS_ZERO_IN] == 1 && amp_analyze_lost(&r[0]) == 1);
    free(r);
}
END_TEST

START_TEST(amax_scale_current_scaling)
{
    /* scale = float32(max * 2^-m) / float32(amax), in float32; pow2 rounds down */
    float x[5] = { 0.3f, -3.3f, 1e-3f, 2.0f, NAN };
    size_t n;
    amp_analyze_row *r = analyze1(x, 5, "e4m3,e5m2", "amax,amax:margin=1,amax:margin=1:pow2", NULL, &n);
    ck_assert(n == 8);
    volatile float am = 3.3f, m448 = 448.0f, m224 = 224.0f, m57344 = 57344.0f;
    ck_assert(r[1].scale == m448 / am && r[2].scale == m224 / am);
    ck_assert(r[3].scale == 64.0f);   /* 224 / 3.3 = 67.9 -> 64 */
    ck_assert(r[5].scale == m57344 / am);
    ck_assert_str_eq(r[3].scale_spec, "amax:margin=1:pow2");
    /* the amax element lands on max finite (rne) */
    ck_assert(r[1].st.amax <= 448.0001 && r[1].st.cls[AMP_CLS_OVERFLOW] == 0);
    free(r);
    /* all zeros: scale 1 */
    float z[3] = { 0, 0, -0.0f };
    r = analyze1(z, 3, "e4m3", "amax", NULL, &n);
    ck_assert(n == 2 && r[1].scale == 1.0f);
    free(r);
}
END_TEST

/* ---- the CLI ----------------------------------------------------------------------- */
static void cli_setup(void) { ct_mkdtemp("check_analyze"); }

static void cli_teardown(void) { ct_rmtree(); }

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

START_TEST(cli_analyze)
{
    char p[600];
    float x[5] = { 1, 1e-9f, 70000, 0, 0.1f };
    size_t sh[1] = { 5 };
    snprintf(p, sizeof p, "%s/g.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, x, 1, sh) == AMP_OK);
    amp_st_entry e[2] = { { .name = "fc1.weight", .ndim = 1, .shape = { 5 }, .data = x },
                          { .name = "fc2.bias", .ndim = 1, .shape = { 2 }, .data = x } };
    snprintf(p, sizeof p, "%s/m.safetensors", tmpdir);
    ck_assert(amp_safetensors_write_f32(p, e, 2) == AMP_OK);

    ck_assert_int_eq(run("analyze --csv g.npy m.safetensors"), 0);
    char *out = slurp("out");
    char head[600];
    snprintf(head, sizeof head, "%s\n", amp_analyze_csv_header());
    ck_assert_msg(!strncmp(out, head, strlen(head)), "%s", out);
    ck_assert(strstr(head, ",rel_err_finite,rel_err_all,") && !strstr(head, ",rel_err,"));
    ck_assert_int_eq(count_lines(out), 1 + 3 * 4);
    ck_assert(strstr(out, "\ng.npy,fp16,rne,1,1,0,5,1,1,0,0,1,0,0,2,0.5,70000,"));
    ck_assert(strstr(out, "\nfc1.weight,e4m3,rne,1,1,0,5,1,1,0,0,1,0,0,2,0.5,"));
    ck_assert(strstr(out, "\nfc2.bias,e5m2,rne,1,1,0,2,0,1,0,0,0,0,0,1,0.5,1,9.99999972e-10,"));
    free(out);

    /* FILE:NAME picks one tensor; the cast options reach the rows */
    ck_assert_int_eq(run("analyze --csv --formats e4m3 --saturate --rounding rtz m.safetensors:fc1.weight"), 0);
    out = slurp("out");
    ck_assert_int_eq(count_lines(out), 2);
    ck_assert_msg(strstr(out, "\nfc1.weight,e4m3,rtz:saturate,1,1,0,5,1,1,0,1,0,0,0,2,0.5,"), "%s", out);
    free(out);

    ck_assert_int_eq(run("analyze --json --formats e4m3 --scales auto g.npy"), 0);
    out = slurp("out");
    cJSON *j = cJSON_Parse(out);
    ck_assert_msg(j && cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2, "%s", out);
    cJSON *a = cJSON_GetArrayItem(j, 1);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(a, "auto")));
    ck_assert_str_eq(cJSON_GetObjectItem(a, "scale_spec")->valuestring, "auto");
    /* e4m3: 70000 needs k <= -8 not to overflow; then 1e-9 and 0.1*2^-8 flush */
    ck_assert(cJSON_GetObjectItem(a, "scale_log2")->valuedouble == -8);
    ck_assert(cJSON_GetObjectItem(a, "flushed")->valuedouble == 2);
    ck_assert(cJSON_GetObjectItem(a, "overflow")->valuedouble == 0);
    cJSON_Delete(j);
    free(out);

    /* JSON: inf as a string */
    float xi[3] = { INFINITY, 1, 2 };
    size_t s3[1] = { 3 };
    snprintf(p, sizeof p, "%s/inf.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, xi, 1, s3) == AMP_OK);
    ck_assert_int_eq(run("analyze --json --formats fp16 inf.npy"), 0);
    out = slurp("out");
    j = cJSON_Parse(out);
    ck_assert_msg(j && cJSON_IsArray(j), "%s", out);
    a = cJSON_GetArrayItem(j, 0);
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(a, "amax")) && !strcmp(cJSON_GetObjectItem(a, "amax")->valuestring, "inf"));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(a, "amin_nonzero")));
    cJSON_Delete(j);
    free(out);

    ck_assert_int_eq(run("analyze --formats fp16 g.npy"), 0);
    out = slurp("out");
    ck_assert(!strncmp(out, "tensor ", 7) && strstr(out, "in_normal_range\n") && count_lines(out) == 2);
    ck_assert(strstr(out, "rel_err_finite"));
    free(out);

    /* a folder: every tensor file in it, sorted by name */
    ck_assert_int_eq(run("analyze --csv --formats bf16 ."), 0);
    out = slurp("out");
    ck_assert_int_eq(count_lines(out), 1 + 4);
    char *g = strstr(out, "\ng.npy,"), *i = strstr(out, "\ninf.npy,"), *f = strstr(out, "\nfc1.weight,");
    ck_assert(g && i && f && g < i && i < f);
    free(out);

    ck_assert_int_eq(run("analyze --help"), 0);
    out = slurp("out");
    ck_assert(strstr(out, "rel_err_finite RMS relative error over the\nnonzero finite inputs whose result is finite"));
    free(out);
}
END_TEST

START_TEST(cli_analyze_npz)
{
    /* numpy's own savez and savez_compressed (tests/ref/make_npz.py) */
    const char *src = getenv("AMP_SRCDIR");
    ck_assert_msg(src != NULL, "set AMP_SRCDIR");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "analyze --csv --formats fp32,e4m3 %s/tests/ref/npz_stored.npz %s/tests/ref/npz_deflated.npz",
             src, src);
    ck_assert_int_eq(run(cmd), 0);
    char *out = slurp("out");
    ck_assert_int_eq(count_lines(out), 1 + 2 * 3 * 2);
    /* w = arange(12)/4 - 1: one zero, amax 1.75; h: float16 65504 overflows e4m3; d: 1e300 overflows fp32 */
    const char *want[] = { "\nw,fp32,rne,1,1,0,12,1,0,0,0,0,0,0,0,0,1.75,0.25,0,0,1,",
                           "\nh,e4m3,rne,1,1,0,4,0,1,0,0,1,0,0,2,0.5,65504,",
                           "\nd,fp32,rne,1,1,0,3,0,0,0,0,1,0,0,1,0.333333333,1e+300,0.1," };
    for (int k = 0; k < 3; k++) {
        char *a = strstr(out, want[k]);
        ck_assert_msg(a && strstr(a + 1, want[k]), "%s: not twice in\n%s", want[k], out);
    }
    free(out);
    snprintf(cmd, sizeof cmd, "analyze --csv --formats fp16 %s/tests/ref/npz_deflated.npz:h", src);
    ck_assert_int_eq(run(cmd), 0);
    out = slurp("out");
    ck_assert(count_lines(out) == 2 && strstr(out, "\nh,fp16,rne,1,1,0,4,0,0,1,0,0,0,0,0,0,65504,"));
    free(out);
}
END_TEST

START_TEST(cli_analyze_errors)
{
    static const char *const cases[][2] = {
        { "analyze bad.npy", "bad.npy: truncated header" },
        { "analyze missing.npy", "missing.npy: cannot open" },
        { "analyze --formats fp99 g.npy", "fp99" },
        { "analyze --scales -1 g.npy", "-1" },
        { "analyze --csv --json g.npy", "exclude" },
        { "analyze", "needs at least one INPUT" },
        { "analyze --scales 2^x g.npy", "2^x" },
        { "analyze --rounding rnx g.npy", "rnx" },
        { "analyze m.safetensors:nope", "no float tensor named 'nope'" },
        { "analyze --formats mx:e4m3:block=0 g.npy", "block=N" },
        { "analyze empty", "folder holds no tensor file" },
        { "analyze --frobnicate g.npy", "--frobnicate" },
        { "analyze g.txt", "g.txt: unknown tensor file type" },
        { "analyze g.npy i4.npy", "i4.npy: dtype '<i4' not supported" },
    };
    char p[600];
    float x[2] = { 1, 2 };
    size_t sh[1] = { 2 };
    snprintf(p, sizeof p, "%s/g.npy", tmpdir);
    ck_assert(amp_npy_write_f32(p, x, 1, sh) == AMP_OK);
    snprintf(p, sizeof p, "%s/bad.npy", tmpdir);
    ck_assert(amp_write_file_atomic(p, "\x93NUMPY\x01", 7) == AMP_OK);
    snprintf(p, sizeof p, "%s/g.txt", tmpdir);
    ck_assert(amp_write_file_atomic(p, "1", 1) == AMP_OK);
    amp_st_entry e[1] = { { .name = "a", .ndim = 1, .shape = { 2 }, .data = x } };
    snprintf(p, sizeof p, "%s/m.safetensors", tmpdir);
    ck_assert(amp_safetensors_write_f32(p, e, 1) == AMP_OK);
    snprintf(p, sizeof p, "%s/empty", tmpdir);
    ck_assert(mkdir(p, 0700) == 0);
    snprintf(p, sizeof p, "%s/i4.npy", tmpdir);
    char i4[256];
    size_t hl;
    ck_assert(amp_npy_header("<i4", 1, sh, i4, sizeof i4 - 8, &hl) == AMP_OK);
    memset(i4 + hl, 0, 8);
    ck_assert(amp_write_file_atomic(p, i4, hl + 8) == AMP_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(run(cases[i][0]) == 2, "%s: exit code", cases[i][0]);
        char *err = slurp("err"), *out = slurp("out");
        ck_assert_msg(strstr(err, cases[i][1]) && count_lines(err) == 1, "%s: stderr '%s'", cases[i][0], err);
        ck_assert_msg(*out == 0, "%s: printed to stdout", cases[i][0]);
        free(err);
        free(out);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("analyze");
    TCase *t = tcase_create("lib");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, every_format_against_mpfr, 0, N_FMT);
    tcase_add_test(t, counts_by_construction);
    tcase_add_loop_test(t, auto_scale_brute_force, 0, N_FMT);
    tcase_add_test(t, threads_chunks_alignment);
    tcase_add_test(t, options_and_csv);
    tcase_add_test(t, auto_never_overflows);
    tcase_add_test(t, auto_prefers_normal_range);
    tcase_add_test(t, cast_options_in_rows);
    tcase_add_test(t, lost_values_show);
    tcase_add_test(t, rows_say_their_scale);
    tcase_add_test(t, e8m0_negatives_invalid);
    tcase_add_test(t, amax_scale_current_scaling);
    suite_add_tcase(s, t);
    if (amp_check_long()) {
        TCase *l = tcase_create("long");
        tcase_set_timeout(l, 600);
        tcase_add_loop_test(l, every_format_against_mpfr, N_FMT, 2 * N_FMT);
        tcase_add_loop_test(l, auto_scale_brute_force, N_FMT, 2 * N_FMT);
        suite_add_tcase(s, l);
    }
    TCase *c = tcase_create("cli");
    tcase_add_checked_fixture(c, cli_setup, cli_teardown);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, cli_analyze);
    tcase_add_test(c, cli_analyze_errors);
    tcase_add_test(c, cli_analyze_npz);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    amp_check_seed("check_analyze", "AMP_TEST_SEED", &seed);
    quick = getenv("AMP_QUICK") && atoi(getenv("AMP_QUICK"));
    return amp_check_failures(suite()) ? 1 : 0;
}
