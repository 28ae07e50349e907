/* Check suite: the rounding core against the MPFR reference, bit for bit.
 *  - every bit pattern of every format of <= 16 bits decodes to the value its
 *    traits give and comes back unchanged from every mode; encode(decode(b)) == b;
 *  - float32 and float64 inputs at and one ulp around every tie (all of them for
 *    formats of <= 9 bits, sampled in every binade for the 16-bit ones) and
 *    boundary, in every deterministic mode with and without saturate/ftz/daz,
 *    through amp_round1, amp_round_f32 (fast kernels) and amp_round_f64;
 *  - the independent grid reference (tests/round_ref.h) agrees with MPFR;
 *  - NaN payloads, signed zeros, infinities; the pinned corners of docs/numerics.md;
 *  - encode/decode errors.
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed with every mismatch. */
#include "round_ref.h"

#include <check.h>
#include "check_main.h"
#include <float.h>

/* Asserts without Check's per-call bookkeeping (ck_assert writes a checkpoint to
 * a pipe on every success, too slow in element loops). */
#define rt_assert(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

static uint64_t seed;
static int quick;   /* AMP_QUICK=1 (valgrind): fewer samples */

/* Formats under test: every table row plus custom formats with unusual shapes. */
static const char *const custom_names[] = { "e3m4", "e5m2fn", "e3m4fnuz", "e6m5", "e8m1", "e3m0fnuz", "e2m2fn" };
#define N_CUSTOM (sizeof custom_names / sizeof custom_names[0])
#define N_FORMATS (AMP_FMT_COUNT + (int)N_CUSTOM)

static amp_format fmt_at(int k)
{
    amp_format f;
    if (k < AMP_FMT_COUNT) return *amp_format_get((amp_format_id)k);
    AMP_ASSERT(amp_format_parse(custom_names[k - AMP_FMT_COUNT], &f) == AMP_OK);
    return f;
}

static const amp_rounding det_modes[] = { AMP_RND_NE, AMP_RND_NA, AMP_RND_TZ, AMP_RND_UP, AMP_RND_DN, AMP_RND_TO };
static const unsigned flag_sets[] = { 0, AMP_SATURATE, AMP_FTZ, AMP_DAZ, AMP_SATURATE | AMP_FTZ | AMP_DAZ };

/* ---- every bit pattern --------------------------------------------------------- */
START_TEST(all_patterns_roundtrip)
{
    amp_format f = fmt_at(_i);
    if (f.bits > 16) return;
    uint32_t np = 1u << f.bits;
    float *x = malloc(np * sizeof *x), *y = malloc(np * sizeof *y);
    ck_assert(x && y);
    size_t bad = 0;
    for (uint32_t b = 0; b < np; b++) {
        x[b] = amp_decode1(&f, b);
        /* the value the traits give (independently of amp_decode1) */
        double want;
        if (f.nan == AMP_NAN_P3109) want = rt_p3109_value(&f, b);
        else if (!f.is_signed) want = b == 0xff ? NAN : ldexp(1.0, (int)b - f.bias);   /* e8m0 */
        else want = rt_pattern_value(&f, b);
        if (!(rt_same(x[b], (float)want) || (isnan(want) && isinf(x[b]) && f.nan == AMP_NAN_IEEE)))
            if (bad++ < 8)
                fprintf(stderr, "DECODE %s pattern 0x%x: expected %a got %a\n", f.name, b, want, (double)x[b]);
        if (isnan(want) && f.nan == AMP_NAN_IEEE) {   /* exponent all ones: inf if mantissa 0 */
            uint32_t man = b & ((1u << f.mbits) - 1);
            int neg = (b >> (f.bits - 1)) & 1;
            float w = man ? NAN : (neg ? -INFINITY : INFINITY);
            if (!rt_same(w, x[b]) && bad++ < 8)
                fprintf(stderr, "DECODE %s pattern 0x%x: expected %a got %a\n", f.name, b, (double)w, (double)x[b]);
        }
        if (!isnan(x[b])) {
            int64_t e = amp_encode1(&f, x[b]);
            if (e != (int64_t)b && bad++ < 8)
                fprintf(stderr, "ENCODE %s: decode(0x%x) = %a encodes to 0x%llx\n", f.name, b, (double)x[b], (long long)e);
        } else if (f.nan != AMP_NAN_NONE) {
            int64_t e = amp_encode1(&f, x[b]);
            if ((e < 0 || !isnan(amp_decode1(&f, (uint32_t)e))) && bad++ < 8)
                fprintf(stderr, "ENCODE %s: NaN pattern 0x%x re-encodes to 0x%llx, not a NaN\n", f.name, b, (long long)e);
        }
    }
    /* every mode (sr too: a value of the format is exact) gives the value back */
    for (int m = 0; m < AMP_RND_COUNT; m++) {
        if (quick && f.bits > 8 && m != AMP_RND_NE && m != AMP_RND_TZ) continue;
        amp_round_opts o = amp_round_defaults();
        o.mode = (amp_rounding)m;
        o.seed = seed;
        ck_assert(amp_round_f32(&f, &o, x, y, np, NULL) == AMP_OK);
        for (uint32_t b = 0; b < np; b++) {
            float r1 = amp_round1(&f, &o, x[b], b, NULL), rm = amp_round1_mpfr(&f, &o, x[b], b, NULL);
            int ok = rt_same(x[b], y[b]) && rt_same(x[b], r1) && rt_same(x[b], rm);
            if (!ok && bad++ < 8)
                fprintf(stderr, "ROUNDTRIP %s %s pattern 0x%x value 0x%08x: array 0x%08x scalar 0x%08x mpfr 0x%08x\n",
                        f.name, amp_rounding_name(o.mode), b, amp_f2u(x[b]), amp_f2u(y[b]), amp_f2u(r1), amp_f2u(rm));
        }
    }
    free(x);
    free(y);
    ck_assert_msg(bad == 0, "%s: %zu pattern mismatches (seed 0x%llx)", f.name, bad, (unsigned long long)seed);
}
END_TEST

/* ---- ties and boundaries ----------------------------------------------------- */
typedef struct inputs { double *v; size_t n, cap; } inputs;

static void push(inputs *in, double v)
{
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 1024;
        in->v = realloc(in->v, in->cap * sizeof *in->v);
        AMP_ASSERT(in->v);
    }
    in->v[in->n++] = v;
}

/* v, the float32 values one ulp either side, and the double values one ulp
 * either side (the float32 ones only where v is a float32 value). */
static void push_around(inputs *in32, inputs *in64, double v)
{
    push(in64, v);
    push(in64, nextafter(v, 0));
    push(in64, nextafter(v, INFINITY));
    float fv = (float)v;
    if ((double)fv == v && isfinite(fv)) {
        push(in32, fv);
        push(in32, nextafterf(fv, 0));
        push(in32, nextafterf(fv, INFINITY));
    }
}

/* The binade of grid point i: its mantissa field position (i mod 2^M) and so on.
 * Samples per binade: the first 4 and last 4 ties and 8 random ones; all ties
 * for formats of <= 9 bits. */
static void tie_inputs(const amp_format *f, rt_rng *rng, inputs *in32, inputs *in64)
{
    if (f->is_signed && f->has_subnormals && f->bits <= 24) {
        rt_grid g;
        ck_assert_msg(rt_grid_build(&g, f), "%s: grid", f->name);
        uint32_t per = 1u << f->mbits;
        for (size_t i = 0; i < g.n; i++) {      /* ties v[i]..v[i+1], i = n-1: overflow threshold */
            uint32_t pos = (uint32_t)(i % per);
            int take = quick ? f->bits <= 6 || pos < 1 || pos >= per - 1
                             : f->bits <= 9 || pos < 4 || pos >= per - 4 || (rt_next(rng) % (per / 8 + 1)) == 0;
            if (!take) continue;
            push_around(in32, in64, g.v[i]);
            push_around(in32, in64, (g.v[i] + g.v[i + 1]) / 2);
        }
        push_around(in32, in64, g.v[g.n]);       /* the virtual neighbour */
        push_around(in32, in64, 2 * g.v[g.n]);
        rt_grid_free(&g);
    } else if (f->bits <= 16) {                  /* e8m0: powers of two, ties at 1.5 * 2^k */
        for (int k = -f->bias - 3; k <= f->emax + 2; k++) {
            push_around(in32, in64, ldexp(1.0, k));
            push_around(in32, in64, ldexp(1.5, k));
        }
    } else {                                     /* fp32, tf32: sampled ties across binades */
        for (int k = f->emin - f->mbits - 2; k <= f->emax + 1; k++) {
            for (int j = 0; j < 6; j++) {
                uint64_t man = j < 2 ? (uint64_t)j : j < 4 ? (1ULL << f->mbits) - (uint64_t)(j - 1)
                                                           : rt_next(rng) & ((1ULL << f->mbits) - 1);
                double v = ldexp((double)((1ULL << f->mbits) | man), k - f->mbits);
                double q = ldexp(1.0, (k < f->emin ? f->emin : k) - f->mbits);
                if (k < f->emin) v = ldexp((double)man, f->emin - f->mbits);
                push_around(in32, in64, v);
                push_around(in32, in64, v + q / 2);
            }
        }
    }
    /* boundaries: min subnormal and half of it, min normal, max finite, overflow threshold */
    double ms = f->min_subnormal, mn = f->min_normal, mx = f->max_finite;
    double ulp_max = ldexp(1.0, f->emax - f->mbits);
    double bnd[] = { ms, ms / 2, ms * 0.75, ms * 1.5, mn, mn - ms / 2, mn / 2, mx, mx + ulp_max / 2,
                     mx + ulp_max, mx - ulp_max / 2, 2 * mx, FLT_MIN, 0x1p-149, 0x1p-150, FLT_MAX, 1.0, 3.0 };
    for (size_t k = 0; k < sizeof bnd / sizeof bnd[0]; k++) push_around(in32, in64, bnd[k]);
    /* both signs */
    size_t n32 = in32->n, n64 = in64->n;
    for (size_t k = 0; k < n32; k++) push(in32, -in32->v[k]);
    for (size_t k = 0; k < n64; k++) push(in64, -in64->v[k]);
}

START_TEST(ties_and_boundaries)
{
    amp_format f = fmt_at(_i);
    rt_rng rng = { seed ^ (uint64_t)_i };
    inputs in32 = { 0 }, in64 = { 0 };
    tie_inputs(&f, &rng, &in32, &in64);
    float *x32 = malloc(in32.n * sizeof *x32);
    ck_assert(x32);
    for (size_t k = 0; k < in32.n; k++) x32[k] = (float)in32.v[k];
    size_t bad = 0;
    char what[96];
    for (size_t m = 0; m < sizeof det_modes / sizeof det_modes[0]; m++)
        for (size_t k = 0; k < sizeof flag_sets / sizeof flag_sets[0]; k++) {
            if (quick && k != 0 && k != 4) continue;
            amp_round_opts o = amp_round_defaults();
            o.mode = det_modes[m];
            o.flags = flag_sets[k];
            snprintf(what, sizeof what, "ties/boundaries f32 (%zu inputs)", in32.n);
            rt_batch b = { &f, &o, what, seed, 1 };
            bad += rt_check_batch(&b, x32, 0, in32.n);
            snprintf(what, sizeof what, "ties/boundaries f64 (%zu inputs)", in64.n);
            b.what = what;
            bad += rt_check_batch(&b, in64.v, 1, in64.n);
        }
    free(x32);
    free(in32.v);
    free(in64.v);
    ck_assert_msg(bad == 0, "%s: %zu mismatches at ties/boundaries (seed 0x%llx)", f.name, bad,
                  (unsigned long long)seed);
}
END_TEST

/* The two oracles (MPFR and the grid of tests/round_ref.h, which exhaustive_round
 * uses) agree: random inputs near each format's range, every deterministic mode
 * and flag set. */
START_TEST(grid_reference_agrees_with_mpfr)
{
    amp_format f = fmt_at(_i);
    if (!f.is_signed || !f.has_subnormals || f.bits > 24) return;
    rt_grid g;
    ck_assert(rt_grid_build(&g, &f));
    rt_rng rng = { seed + 77 * (uint64_t)_i };
    size_t bad = 0, n = 4000;
    for (size_t m = 0; m < sizeof det_modes / sizeof det_modes[0]; m++)
        for (size_t k = 0; k < sizeof flag_sets / sizeof flag_sets[0]; k++) {
            amp_round_opts o = amp_round_defaults();
            o.mode = det_modes[m];
            o.flags = flag_sets[k];
            size_t hint = 0;
            for (size_t i = 0; i < n; i++) {
                int ex = f.emin - f.mbits - 3 + (int)(rt_next(&rng) % (uint64_t)(f.emax - f.emin + f.mbits + 6));
                double x = ldexp(1.0 + rt_unif(&rng), ex);
                if (i & 1) x = (float)x;
                if (i & 2) x = -x;
                float want = amp_round1_mpfr(&f, &o, x, i, NULL), got = rt_grid_round(&g, o.mode, o.flags, x, &hint);
                if (!rt_same(want, got) && bad++ < 8)
                    fprintf(stderr, "GRID %s %s flags 0x%x: input %a: mpfr %a grid %a\n", f.name,
                            amp_rounding_name(o.mode), o.flags, x, (double)want, (double)got);
            }
        }
    rt_grid_free(&g);
    ck_assert_msg(bad == 0, "%s: grid reference and MPFR differ on %zu inputs (seed 0x%llx)", f.name, bad,
                  (unsigned long long)seed);
}
END_TEST

/* The array path at every alignment and length around the kernels' vector
 * width and the chunk size, in place and not, against MPFR. */
START_TEST(array_offsets_and_tails)
{
    const amp_format_id ids[] = { AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2, AMP_FMT_E2M1, AMP_FMT_TF32 };
    const size_t big = ((size_t)1 << 16) + 40;
    float *x = malloc((big + 8) * sizeof *x), *y = malloc((big + 8) * sizeof *y), *z = malloc((big + 8) * sizeof *z);
    ck_assert(x && y && z);
    rt_rng r = { seed + 3 };
    size_t bad = 0;
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        const amp_format *f = amp_format_get(ids[k]);
        for (size_t i = 0; i < big + 8; i++) {
            double v = ldexp(1.0 + rt_unif(&r), f->emin - f->mbits - 2 + (int)(rt_next(&r) % (uint64_t)(f->emax - f->emin + f->mbits + 4)));
            x[i] = (float)((rt_next(&r) & 1) ? -v : v);
        }
        for (int m = 0; m < 6; m++) {
            amp_round_opts o = amp_round_defaults();
            o.mode = det_modes[m];
            o.flags = m == 5 ? AMP_SATURATE : 0;
            static const size_t lens_big[] = { ((size_t)1 << 16) - 1, (size_t)1 << 16, ((size_t)1 << 16) + 1,
                                               ((size_t)1 << 16) + 37 };
            for (size_t off = 0; off < 4; off++)
                for (size_t li = 0; li < 70 + 4; li++) {
                    size_t len = li < 70 ? li : lens_big[li - 70];
                    int in_place = (int)((off + li) & 1);
                    amp_stats st;
                    amp_stats_init(&st);
                    float *dst = in_place ? z + off : y + off;
                    if (in_place) memcpy(z + off, x + off, len * sizeof *x);
                    ck_assert(amp_round_f32(f, &o, in_place ? z + off : x + off, dst, len, (li & 2) ? &st : NULL) == AMP_OK);
                    for (size_t i = 0; i < len; i++) {
                        /* long arrays: the ends and around the chunk boundary */
                        if (len > 70 && i == 64) i = ((size_t)1 << 16) - 64;
                        if (len > 70 && i >= ((size_t)1 << 16) + 64 && i < len - 64) i = len - 64;
                        float want = amp_round1_mpfr(f, &o, x[off + i], i, NULL);
                        if (!rt_same(want, dst[i]) && bad++ < 8)
                            fprintf(stderr, "MISMATCH tails %s %s offset %zu length %zu%s element %zu: input 0x%08x "
                                    "expected 0x%08x got 0x%08x\n", f->name, amp_rounding_name(o.mode), off, len,
                                    in_place ? " in place" : "", i, amp_f2u(x[off + i]), amp_f2u(want), amp_f2u(dst[i]));
                    }
                }
        }
    }
    free(x);
    free(y);
    free(z);
    ck_assert_msg(bad == 0, "%zu mismatches at offsets/tails (seed 0x%llx)", bad, (unsigned long long)seed);
}
END_TEST

/* ---- special values ------------------------------------------------------------ */
START_TEST(nan_payloads)
{
    amp_format f = fmt_at(_i);
    const uint32_t nan32[] = { 0x7f800001, 0xff800001, 0x7fc00000, 0xffc00000, 0x7fffffff, 0xffffffff,
                               0x7fa00000, 0xffbfffff, 0x7fc00001 };
    const uint64_t nan64[] = { 0x7ff0000000000001ULL, 0xfff0000000000001ULL, 0x7ff8000000000000ULL,
                               0xfff8000000000000ULL, 0x7fffffffffffffffULL, 0x7ff0000020000000ULL,
                               0x7ff000001fffffffULL, 0xfff4000000000000ULL };
    const size_t n32 = sizeof nan32 / sizeof nan32[0], n64 = sizeof nan64 / sizeof nan64[0];
    float x[16], y[16];
    double xd[16];
    for (size_t k = 0; k < n32; k++) x[k] = amp_u2f(nan32[k]);
    for (size_t k = 0; k < n64; k++) xd[k] = amp_u2d(nan64[k]);
    for (int m = 0; m < AMP_RND_COUNT; m++)
        for (unsigned fl = 0; fl < 8; fl++) {
            amp_round_opts o = amp_round_defaults();
            o.mode = (amp_rounding)m;
            o.flags = fl;
            amp_stats st;
            amp_stats_init(&st);
            rt_assert(amp_round_f32(&f, &o, x, y, n32, &st) == AMP_OK, "%s: amp_round_f32(&f, &o, x, y, n32, &st) == AMP_OK", f.name);
            rt_assert(st.cls[AMP_CLS_NAN_IN] == n32, "%s: nan_in count %llu", f.name, (unsigned long long)st.cls[AMP_CLS_NAN_IN]);
            for (size_t k = 0; k < n32; k++) {
                amp_class c;
                rt_assert(isnan(y[k]), "%s %s flags %u: f32 NaN 0x%08x -> 0x%08x (array)", f.name,
                              amp_rounding_name(o.mode), fl, nan32[k], amp_f2u(y[k]));
                float r = amp_round1(&f, &o, x[k], k, &c);
                rt_assert(isnan(r) && c == AMP_CLS_NAN_IN, "%s %s: f32 NaN 0x%08x -> 0x%08x (scalar)", f.name,
                              amp_rounding_name(o.mode), nan32[k], amp_f2u(r));
                r = amp_round1_mpfr(&f, &o, x[k], k, &c);
                rt_assert(isnan(r) && c == AMP_CLS_NAN_IN, "%s %s: f32 NaN 0x%08x -> 0x%08x (mpfr)", f.name,
                              amp_rounding_name(o.mode), nan32[k], amp_f2u(r));
            }
            rt_assert(amp_round_f64(&f, &o, xd, y, n64, NULL) == AMP_OK, "%s: amp_round_f64(&f, &o, xd, y, n64, NULL) == AMP_OK", f.name);
            for (size_t k = 0; k < n64; k++) {
                rt_assert(isnan(y[k]), "%s %s flags %u: f64 NaN 0x%016llx -> 0x%08x (array)", f.name,
                              amp_rounding_name(o.mode), fl, (unsigned long long)nan64[k], amp_f2u(y[k]));
                rt_assert(isnan(amp_round1_mpfr(&f, &o, xd[k], k, NULL)), "%s: isnan(amp_round1_mpfr(&f, &o, xd[k], k, NULL))", f.name);
            }
            /* in place (y aliases x) */
            float z[16];
            memcpy(z, x, sizeof z);
            rt_assert(amp_round_f32(&f, &o, z, z, n32, NULL) == AMP_OK, "%s: amp_round_f32(&f, &o, z, z, n32, NULL) == AMP_OK", f.name);
            for (size_t k = 0; k < n32; k++) rt_assert(isnan(z[k]), "%s: isnan(z[k])", f.name);
        }
}
END_TEST

/* Expected results for +-0 and +-inf, from docs/numerics.md (typed per trait). */
START_TEST(zeros_and_infinities)
{
    amp_format f = fmt_at(_i);
    for (int m = 0; m < AMP_RND_COUNT; m++)
        for (unsigned fl = 0; fl < 8; fl++) {
            amp_round_opts o = amp_round_defaults();
            o.mode = (amp_rounding)m;
            o.flags = fl;
            float x[4] = { 0.0f, -0.0f, INFINITY, -INFINITY }, y[4], w[4];
            int sat = (fl & AMP_SATURATE) || (!f.has_inf && f.nan == AMP_NAN_NONE);
            float mx = (float)f.max_finite;
            if (!f.has_subnormals) {                 /* e8m0: no zero, unsigned */
                w[0] = w[1] = NAN;
                w[2] = sat ? mx : NAN;
                w[3] = NAN;
            } else {
                w[0] = 0.0f;
                w[1] = f.has_neg_zero ? -0.0f : 0.0f;
                w[2] = sat ? mx : f.has_inf ? INFINITY : NAN;
                w[3] = !f.is_signed ? NAN : sat ? -mx : f.has_inf ? -INFINITY : NAN;   /* unsigned: negative -> NaN */
            }
            rt_assert(amp_round_f32(&f, &o, x, y, 4, NULL) == AMP_OK, "%s: amp_round_f32(&f, &o, x, y, 4, NULL) == AMP_OK", f.name);
            for (int k = 0; k < 4; k++) {
                float s = amp_round1(&f, &o, x[k], 0, NULL), r = amp_round1_mpfr(&f, &o, x[k], 0, NULL);
                double xd = x[k];
                float d;
                rt_assert(amp_round_f64(&f, &o, &xd, &d, 1, NULL) == AMP_OK, "%s: amp_round_f64(&f, &o, &xd, &d, 1, NULL) == AMP_OK", f.name);
                rt_assert(rt_same(w[k], y[k]) && rt_same(w[k], s) && rt_same(w[k], r) && rt_same(w[k], d),
                              "%s %s flags %u: input 0x%08x: expected 0x%08x got array 0x%08x scalar 0x%08x "
                              "mpfr 0x%08x f64 0x%08x", f.name, amp_rounding_name(o.mode), fl, amp_f2u(x[k]),
                              amp_f2u(w[k]), amp_f2u(y[k]), amp_f2u(s), amp_f2u(r), amp_f2u(d));
            }
        }
}
END_TEST

/* ---- pinned corners of docs/numerics.md ------------------------------------------------ */
/* Rounds x by every path (array f32, array f64, amp_round1, MPFR) and checks want. */
static void pin(amp_format_id id, amp_rounding m, unsigned flags, float x, float want)
{
    const amp_format *f = amp_format_get(id);
    amp_round_opts o = amp_round_defaults();
    o.mode = m;
    o.flags = flags;
    float arr[3] = { 1.0f, x, 1.0f }, y[3], yd;
    double xd = x;
    ck_assert(amp_round_f32(f, &o, arr, y, 3, NULL) == AMP_OK);
    ck_assert(amp_round_f64(f, &o, &xd, &yd, 1, NULL) == AMP_OK);
    float s = amp_round1(f, &o, x, 0, NULL), r = amp_round1_mpfr(f, &o, x, 0, NULL);
    ck_assert_msg(rt_same(want, y[1]) && rt_same(want, yd) && rt_same(want, s) && rt_same(want, r),
                  "%s %s flags 0x%x: input 0x%08x (%a): expected 0x%08x (%a) got array 0x%08x f64 0x%08x "
                  "scalar 0x%08x mpfr 0x%08x", f->name, amp_rounding_name(m), flags, amp_f2u(x), (double)x,
                  amp_f2u(want), (double)want, amp_f2u(y[1]), amp_f2u(yd), amp_f2u(s), amp_f2u(r));
}

START_TEST(pin_fp16_65520_to_inf)
{
    pin(AMP_FMT_FP16, AMP_RND_NE, 0, 65520.0f, INFINITY);
    pin(AMP_FMT_FP16, AMP_RND_NE, 0, -65520.0f, -INFINITY);
    pin(AMP_FMT_FP16, AMP_RND_NE, AMP_SATURATE, 65520.0f, 65504.0f);
}
END_TEST

START_TEST(pin_fp16_65519_996_to_65504)
{
    float below = nextafterf(65520.0f, 0);          /* 65519.996 */
    ck_assert(below > 65519.99f && below < 65520.0f);
    pin(AMP_FMT_FP16, AMP_RND_NE, 0, below, 65504.0f);
    pin(AMP_FMT_FP16, AMP_RND_NE, 0, -below, -65504.0f);
}
END_TEST

START_TEST(pin_e4m3_464_to_448)
{
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, 464.0f, 448.0f);
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, -464.0f, -448.0f);
}
END_TEST

START_TEST(pin_e4m3_465_to_nan)
{
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, 465.0f, NAN);
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, nextafterf(464.0f, INFINITY), NAN);
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, -465.0f, NAN);
}
END_TEST

START_TEST(pin_e4m3_saturating_465_to_448)
{
    pin(AMP_FMT_E4M3, AMP_RND_NE, AMP_SATURATE, 465.0f, 448.0f);
    pin(AMP_FMT_E4M3, AMP_RND_NE, AMP_SATURATE, -465.0f, -448.0f);
    pin(AMP_FMT_E4M3, AMP_RND_NE, AMP_SATURATE, 1e30f, 448.0f);
}
END_TEST

START_TEST(pin_e5m2_61440_overflows)
{
    pin(AMP_FMT_E5M2, AMP_RND_NE, 0, 61440.0f, INFINITY);
    pin(AMP_FMT_E5M2, AMP_RND_NE, 0, 61441.0f, INFINITY);
    pin(AMP_FMT_E5M2, AMP_RND_NE, 0, -61440.0f, -INFINITY);
    pin(AMP_FMT_E5M2, AMP_RND_NE, 0, nextafterf(61440.0f, 0), 57344.0f);   /* just below does not */
    pin(AMP_FMT_E5M2, AMP_RND_NE, 0, -nextafterf(61440.0f, 0), -57344.0f);
}
END_TEST

START_TEST(pin_bf16_7f7f8000_to_inf)
{
    pin(AMP_FMT_BF16, AMP_RND_NE, 0, amp_u2f(0x7f7f8000), INFINITY);
    pin(AMP_FMT_BF16, AMP_RND_NE, 0, amp_u2f(0xff7f8000), -INFINITY);
    pin(AMP_FMT_BF16, AMP_RND_NE, 0, amp_u2f(0x7f7f7fff), amp_u2f(0x7f7f0000));
}
END_TEST

START_TEST(pin_fnuz_inf_to_nan)
{
    pin(AMP_FMT_E4M3FNUZ, AMP_RND_NE, 0, INFINITY, NAN);
    pin(AMP_FMT_E4M3FNUZ, AMP_RND_NE, 0, -INFINITY, NAN);
    pin(AMP_FMT_E5M2FNUZ, AMP_RND_NE, 0, INFINITY, NAN);
    pin(AMP_FMT_E5M2FNUZ, AMP_RND_NE, 0, -INFINITY, NAN);
    pin(AMP_FMT_E4M3FNUZ, AMP_RND_NE, AMP_SATURATE, INFINITY, 240.0f);
    pin(AMP_FMT_E5M2FNUZ, AMP_RND_NE, AMP_SATURATE, -INFINITY, -57344.0f);
    pin(AMP_FMT_E4M3FNUZ, AMP_RND_NE, 0, -0.0f, 0.0f);                    /* no -0 */
    pin(AMP_FMT_E4M3FNUZ, AMP_RND_NE, 0, -0x1p-20f, 0.0f);                /* underflow to +0 */
    pin(AMP_FMT_E4M3, AMP_RND_NE, 0, -0x1p-20f, -0.0f);                   /* e4m3 keeps -0 */
}
END_TEST

/* Directed modes toward zero give max finite (IEEE); away from zero overflow. */
START_TEST(pin_directed_overflow)
{
    pin(AMP_FMT_FP16, AMP_RND_TZ, 0, 1e6f, 65504.0f);
    pin(AMP_FMT_FP16, AMP_RND_DN, 0, 1e6f, 65504.0f);
    pin(AMP_FMT_FP16, AMP_RND_UP, 0, -1e6f, -65504.0f);
    pin(AMP_FMT_FP16, AMP_RND_UP, 0, 65504.5f, INFINITY);
    pin(AMP_FMT_FP16, AMP_RND_DN, 0, -65504.5f, -INFINITY);
    pin(AMP_FMT_E4M3, AMP_RND_UP, 0, 449.0f, NAN);
    pin(AMP_FMT_E4M3, AMP_RND_TO, 0, 1000.0f, 448.0f);
    pin(AMP_FMT_E2M1, AMP_RND_NE, 0, 100.0f, 6.0f);                      /* FP4 has no inf/NaN */
    pin(AMP_FMT_E2M1, AMP_RND_UP, 0, INFINITY, 6.0f);
    pin(AMP_FMT_E3M2, AMP_RND_NE, 0, -INFINITY, -28.0f);
}
END_TEST

/* ---- encode / decode errors ----------------------------------------------------- */
START_TEST(encode_decode_errors)
{
    const amp_format *fp16 = amp_format_get(AMP_FMT_FP16), *e2m1 = amp_format_get(AMP_FMT_E2M1);
    const amp_format *e4m3 = amp_format_get(AMP_FMT_E4M3), *e8m0 = amp_format_get(AMP_FMT_E8M0);
    const amp_format *e3m2 = amp_format_get(AMP_FMT_E3M2), *fp32 = amp_format_get(AMP_FMT_FP32);
    const amp_format *fnuz = amp_format_get(AMP_FMT_E4M3FNUZ);
    uint8_t b8[4];
    uint16_t b16[4];
    float y[4];
    float x1[3] = { 1.0f, 1.0f + 0x1p-12f, 2.0f };                 /* not an fp16 value at index 1 */
    ck_assert_int_eq(amp_encode(fp16, x1, b16, 3), AMP_EINVAL);
    ck_assert_msg(strstr(amp_errmsg(), "index 1") != NULL, "message names the index: %s", amp_errmsg());
    float x2[2] = { 2.0f, NAN };                                  /* NaN in FP4 */
    ck_assert_int_eq(amp_encode(e2m1, x2, b8, 2), AMP_EINVAL);
    ck_assert_msg(strstr(amp_errmsg(), "index 1") != NULL, "%s", amp_errmsg());
    float x3[1] = { INFINITY };                                   /* no inf in e4m3 */
    ck_assert_int_eq(amp_encode(e4m3, x3, b8, 1), AMP_EINVAL);
    float x4[1] = { 480.0f };                                     /* above max finite */
    ck_assert_int_eq(amp_encode(e4m3, x4, b8, 1), AMP_EINVAL);
    float x5[1] = { -1.0f };                                      /* e8m0 is unsigned */
    ck_assert_int_eq(amp_encode(e8m0, x5, b8, 1), AMP_EINVAL);
    float x6[1] = { 0x1p-25f };                                   /* below fp16's min subnormal */
    ck_assert_int_eq(amp_encode(fp16, x6, b16, 1), AMP_EINVAL);
    float x7[1] = { 0.0f };                                       /* e8m0 has no zero */
    ck_assert_int_eq(amp_encode(e8m0, x7, b8, 1), AMP_EINVAL);
    float x8[1] = { 1.0f };                                       /* fp32 has 32 bits */
    ck_assert_int_eq(amp_encode(fp32, x8, b16, 1), AMP_EINVAL);
    ck_assert_int_eq(amp_decode(fp32, b16, y, 1), AMP_EINVAL);
    /* -0 in fnuz encodes as 0 (no -0 pattern); NaN as 0x80 */
    float x9[2] = { -0.0f, NAN };
    ck_assert_int_eq(amp_encode(fnuz, x9, b8, 2), AMP_OK);
    ck_assert_int_eq(b8[0], 0x00);
    ck_assert_int_eq(b8[1], 0x80);
    /* bits above the width */
    uint8_t p1[2] = { 0x0f, 0x10 };
    ck_assert_int_eq(amp_decode(e2m1, p1, y, 2), AMP_EINVAL);
    ck_assert_msg(strstr(amp_errmsg(), "index 1") != NULL, "%s", amp_errmsg());
    uint8_t p2[1] = { 0x40 };
    ck_assert_int_eq(amp_decode(e3m2, p2, y, 1), AMP_EINVAL);
    uint8_t p3[2] = { 0x3f, 0x0f };
    ck_assert_int_eq(amp_decode(e3m2, p3, y, 2), AMP_OK);
    ck_assert(y[0] == -28.0f && y[1] == 1.75f);           /* 1.111.11 = -1.75 * 2^4; 0.011.11 = 1.75 */
    uint16_t p4[2] = { 0xffff, 0x0001 };                          /* fp16: every pattern is valid */
    ck_assert_int_eq(amp_decode(fp16, p4, y, 2), AMP_OK);
    ck_assert(isnan(y[0]) && y[1] == 0x1p-24f);
    /* scalar encode: -1 for a value not in the format */
    ck_assert_int_eq(amp_encode1(e4m3, 3.3f), -1);
    ck_assert_int_eq(amp_encode1(e4m3, 448.0f), 0x7e);
    ck_assert_int_eq(amp_encode1(e4m3, -448.0f), 0xfe);
    ck_assert_int_eq(amp_encode1(e4m3, NAN), 0x7f);
    ck_assert_int_eq(amp_encode1(e2m1, NAN), -1);
}
END_TEST

/* AMP_EXACT routes amp_round1 (and the array path) to MPFR: same results. */
START_TEST(exact_flag_routes_to_mpfr)
{
    rt_rng rng = { seed + 5 };
    for (int k = 0; k < N_FORMATS; k++) {
        amp_format f = fmt_at(k);
        for (int m = 0; m < AMP_RND_COUNT; m++) {
            amp_round_opts o = amp_round_defaults(), oe;
            o.mode = (amp_rounding)m;
            o.seed = seed;
            oe = o;
            oe.flags |= AMP_EXACT;
            float x[300], y[300];
            for (int i = 0; i < 300; i++)
                x[i] = (float)ldexp(rt_unif(&rng) + 0.5, f.emin - f.mbits - 2 + (int)(rt_next(&rng) % (uint64_t)(f.emax - f.emin + f.mbits + 5)));
            ck_assert(amp_round_f32(&f, &oe, x, y, 300, NULL) == AMP_OK);
            for (int i = 0; i < 300; i++) {
                amp_class c1, c2;
                float a = amp_round1(&f, &oe, x[i], (uint64_t)i, &c1), b = amp_round1_mpfr(&f, &o, x[i], (uint64_t)i, &c2);
                if (!(rt_same(a, b) && rt_same(b, y[i]) && c1 == c2))
                    ck_abort_msg("%s %s exact: input 0x%08x: mpfr 0x%08x scalar+exact 0x%08x array+exact 0x%08x",
                                 f.name, amp_rounding_name(o.mode), amp_f2u(x[i]), amp_f2u(b), amp_f2u(a), amp_f2u(y[i]));
            }
        }
    }
}
END_TEST

int main(void)
{
    seed = rt_default_seed();
    const char *q = getenv("AMP_QUICK");
    quick = q && *q && strcmp(q, "0");
    Suite *s = suite_create("round");
    TCase *tc = tcase_create("exact");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, all_patterns_roundtrip, 0, N_FORMATS);
    tcase_add_loop_test(tc, ties_and_boundaries, 0, N_FORMATS);
    tcase_add_loop_test(tc, grid_reference_agrees_with_mpfr, 0, N_FORMATS);
    tcase_add_loop_test(tc, nan_payloads, 0, N_FORMATS);
    tcase_add_loop_test(tc, zeros_and_infinities, 0, N_FORMATS);
    tcase_add_test(tc, exact_flag_routes_to_mpfr);
    tcase_add_test(tc, array_offsets_and_tails);
    tcase_add_test(tc, encode_decode_errors);
    suite_add_tcase(s, tc);
    TCase *pins = tcase_create("pinned");
    tcase_add_test(pins, pin_fp16_65520_to_inf);
    tcase_add_test(pins, pin_fp16_65519_996_to_65504);
    tcase_add_test(pins, pin_e4m3_464_to_448);
    tcase_add_test(pins, pin_e4m3_465_to_nan);
    tcase_add_test(pins, pin_e4m3_saturating_465_to_448);
    tcase_add_test(pins, pin_e5m2_61440_overflows);
    tcase_add_test(pins, pin_bf16_7f7f8000_to_inf);
    tcase_add_test(pins, pin_fnuz_inf_to_nan);
    tcase_add_test(pins, pin_directed_overflow);
    suite_add_tcase(s, pins);
    int failed = amp_check_failures(s);
    if (failed) fprintf(stderr, "check_round: seed 0x%llx (set AMP_TEST_SEED to repeat)\n", (unsigned long long)seed);
    return failed ? 1 : 0;
}
