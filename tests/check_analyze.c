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
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Expected statistics of format f on x*s (exact product), from MPFR. */
static void expected_stats(const amp_format *f, const float *x, size_t n, float s, amp_stats *st)
{
    amp_round_opts o = amp_round_defaults();
    amp_stats_init(st);
    for (size_t i = 0; i < n; i++) {
        double v = (double)x[i] * (double)s;
        amp_class c;
        float y = amp_round1_mpfr(f, &o, v, i, &c);
        st->n++;
        st->cls[c]++;
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

START_TEST(every_format_against_mpfr)
{
    amp_format ff = fmt_at(_i);
    const amp_format *f = &ff;
    enum { NMAX = 3000 };
    static float x[NMAX];
    const int N = quick ? 300 : NMAX;
    make_tensor(x, (size_t)N, -152, 130, f, 1, (uint64_t)_i);
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    o.n_formats = 1;
    o.formats[0] = *f;
    o.n_scales = NSCALES;
    memcpy(o.scales, scales, sizeof scales);
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
static int brute_best(const amp_format *f, const double *x, size_t n, uint64_t *lost_out, uint64_t *ovf_out)
{
    amp_round_opts o = amp_round_defaults();
    int best = 0;
    uint64_t bl = UINT64_MAX, bo = UINT64_MAX;
    for (int k = AMP_ANALYZE_KMIN; k <= AMP_ANALYZE_KMAX; k++) {
        uint64_t lost = 0, ovf = 0;
        for (size_t i = 0; i < n; i++) {
            amp_class c;
            amp_round1_mpfr(f, &o, x[i] * ldexp(1.0, k), i, &c);
            lost += c == AMP_CLS_FLUSHED || c == AMP_CLS_OVERFLOW || c == AMP_CLS_SATURATED;
            ovf += c == AMP_CLS_OVERFLOW || c == AMP_CLS_SATURATED;
        }
        int better = lost < bl || (lost == bl && (ovf < bo || (ovf == bo && (abs(k) < abs(best) ||
                                                                              (abs(k) == abs(best) && k < best)))));
        if (better) { best = k; bl = lost; bo = ovf; }
    }
    *lost_out = bl;
    *ovf_out = bo;
    return best;
}

START_TEST(auto_scale_brute_force)
{
    amp_format ff = fmt_at(_i);
    const amp_format *f = &ff;
    enum { NMAX = 160 };
    float x[NMAX];
    double xd[NMAX];
    const int N = quick ? 40 : NMAX;
    for (int t = 0; t < 5; t++) {
        switch (t) {
        case 0: make_tensor(x, N, -140, 100, f, 1, 100 + (uint64_t)_i); break;     /* wide */
        case 1: make_tensor(x, N, -30, -12, f, 0, 200 + (uint64_t)_i); break;      /* gradient-like */
        case 2:                                                                  /* ties at binade edges */
            for (int i = 0; i < N; i++) x[i] = (float)ldexp(i % 3 == 0 ? 1.0 : 1.5, -60 + i / 2) * (i & 1 ? -1 : 1);
            break;
        case 3: for (int i = 0; i < N; i++) x[i] = i % 2 ? 0.0f : NAN; break;     /* nothing to scale */
        case 4: make_tensor(x, N, 20, 22, f, 0, 300 + (uint64_t)_i); for (int i = 0; i < N; i++) x[i] = -fabsf(x[i]); break;
        }
        for (int i = 0; i < N; i++) xd[i] = x[i];
        uint64_t bl, bo;
        int bk = brute_best(f, xd, N, &bl, &bo);
        amp_analyze_opts o;
        amp_analyze_defaults(&o);
        o.n_formats = 1;
        o.formats[0] = *f;
        ck_assert(amp_analyze_parse_scales("auto", &o) == AMP_OK);
        amp_tensor_view v = view_f32(x, N, "a");
        if (t == 2) {   /* also through a float64 view */
            v.dtype = AMP_DT_F64;
            v.data = xd;
        }
        amp_analyze_row *r = NULL;
        size_t n = 0;
        ck_assert_msg(amp_analyze_view(&v, &o, &r, &n) == AMP_OK, "%s", amp_errmsg());
        ck_assert_int_eq((int)n, 2);
        ck_assert(!r[0].is_auto && r[0].scale == 1.0f && r[1].is_auto);
        uint64_t lost = amp_analyze_lost(&r[1].st);
        ck_assert_msg(r[1].scale_log2 == bk && lost == bl, "%s tensor %d: auto k=%d lost=%llu, brute force k=%d lost=%llu",
                      f->name, t, r[1].scale_log2, (unsigned long long)lost, bk, (unsigned long long)bl);
        ck_assert(r[1].scale == ldexpf(1.0f, bk));
        amp_stats want;
        expected_stats(f, x, N, r[1].scale, &want);
        compare_stats("auto row", &want, &r[1].st);
        free(r);
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
    ck_assert(o.auto_scale && o.n_scales == 2 && o.scales[0] == 1.0f && o.scales[1] == 1024.0f);
    ck_assert_str_eq(amp_analyze_csv_header(), "tensor,format,scale,n,zero_in,flushed,subnormal,saturated,overflow,nan,"
                                               "amax,amin_nonzero,rel_err,in_normal_range");
    amp_analyze_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.tensor, sizeof r.tensor, "a,\"b\"");
    snprintf(r.format, sizeof r.format, "fp16");
    r.scale = 0.5f;
    amp_stats_init(&r.st);
    r.st.n = 4;
    r.st.cls[AMP_CLS_ZERO_IN] = 1;
    r.st.cls[AMP_CLS_FLUSHED] = 2;
    r.st.cls[AMP_CLS_EXACT] = 1;
    r.st.amax = 2;
    r.st.amin_nonzero = 0.25;
    char buf[512];
    amp_analyze_csv_row(&r, buf, sizeof buf);
    ck_assert_str_eq(buf, "\"a,\"\"b\"\"\",fp16,0.5,4,1,2,0,0,0,0,2,0.25,0,0.333333333");
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
    static const char head[] = "tensor,format,scale,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,"
                               "amin_nonzero,rel_err,in_normal_range\n";
    ck_assert_msg(!strncmp(out, head, sizeof head - 1), "%s", out);
    ck_assert_int_eq(count_lines(out), 1 + 3 * 4);
    ck_assert(strstr(out, "\ng.npy,fp16,1,5,1,1,0,0,1,0,70000,"));
    ck_assert(strstr(out, "\nfc1.weight,e4m3,1,5,1,1,0,0,1,0,"));
    ck_assert(strstr(out, "\nfc2.bias,e5m2,1,2,0,1,0,0,0,0,1,9.99999972e-10,"));
    free(out);

    ck_assert_int_eq(run("analyze --json --formats e4m3 --scales auto g.npy"), 0);
    out = slurp("out");
    cJSON *j = cJSON_Parse(out);
    ck_assert_msg(j && cJSON_IsArray(j) && cJSON_GetArraySize(j) == 2, "%s", out);
    cJSON *a = cJSON_GetArrayItem(j, 1);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(a, "auto")));
    /* e4m3: 70000 needs k <= -8; then 1e-9 and 0.1*2^-8 flush (2 lost), while
     * k = 0 loses 1e-9 and 70000 (2 lost, one an overflow): k = -8 wins on overflows */
    ck_assert(cJSON_GetObjectItem(a, "scale_log2")->valuedouble == -8);
    ck_assert(cJSON_GetObjectItem(a, "flushed")->valuedouble == 2);
    ck_assert(cJSON_GetObjectItem(a, "overflow")->valuedouble == 0);
    cJSON_Delete(j);
    free(out);

    ck_assert_int_eq(run("analyze --formats fp16 g.npy"), 0);
    out = slurp("out");
    ck_assert(!strncmp(out, "tensor ", 7) && strstr(out, "in_normal_range\n") && count_lines(out) == 2);
    free(out);

    ck_assert_int_eq(run("analyze --help"), 0);
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
        { "analyze", "needs at least one FILE" },
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
    suite_add_tcase(s, t);
    TCase *c = tcase_create("cli");
    tcase_add_checked_fixture(c, cli_setup, cli_teardown);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, cli_analyze);
    tcase_add_test(c, cli_analyze_errors);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    const char *e = getenv("AMP_TEST_SEED");
    if (e) seed = strtoull(e, NULL, 0);
    quick = getenv("AMP_QUICK") && atoi(getenv("AMP_QUICK"));
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
