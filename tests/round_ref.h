/* Test-only helpers for the rounding suites (header only, static inline).
 *
 *  - a seeded generator: fixed seed by default, AMP_TEST_SEED=<n> to change it
 *    (the suites print the seed on failure);
 *  - NaN-aware bitwise equality of float results;
 *  - an independent grid reference: every finite value of a format built from
 *    its stored traits with ldexp (not ampsim's decode), sorted, plus the
 *    virtual neighbour above max finite (max + its ulp: the OCP/IEEE rule of
 *    rounding with an unbounded exponent), and the rounding rule of each
 *    deterministic mode applied to the two neighbours of x. It uses none of
 *    ampsim's rounding code and no MPFR. Formats with subnormals only. */
#ifndef ROUND_REF_H
#define ROUND_REF_H

#include "ampsim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- seeded generator ---------------------------------------------------- */
static inline uint64_t rt_default_seed(void)
{
    const char *s = getenv("AMP_TEST_SEED");
    return (s && *s) ? strtoull(s, NULL, 0) : 0x5eed2026ULL;
}

typedef struct rt_rng { uint64_t s; } rt_rng;

static inline uint64_t rt_next(rt_rng *r)   /* splitmix64 */
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline double rt_unif(rt_rng *r) { return (double)(rt_next(r) >> 11) * 0x1p-53; }

/* ---- comparisons ----------------------------------------------------------- */
/* Same bits, or both NaN (NaN results carry no meaning beyond being NaN). */
static inline int rt_same(float a, float b)
{
    return amp_f2u(a) == amp_f2u(b) || (isnan(a) && isnan(b));
}

static inline const char *rt_flags_name(unsigned fl, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s", fl ? "" : "none", fl & AMP_SATURATE ? "sat," : "",
             fl & AMP_FTZ ? "ftz," : "", fl & AMP_DAZ ? "daz," : "", fl & AMP_EXACT ? "exact," : "");
    return buf;
}

/* ---- the independent grid reference ------------------------------------------ */
typedef struct rt_grid {
    const amp_format *f;
    double *v;        /* v[0] = 0 < v[1] < ... < v[n-1] = max finite, v[n] = virtual */
    size_t n;         /* number of finite nonnegative values */
    double maxf, minnorm;
} rt_grid;

/* Value of pattern `bits` from the format's stored traits alone, or NAN for a
 * NaN/inf pattern. Formats with subnormals and a sign bit. */
static inline double rt_pattern_value(const amp_format *f, uint32_t bits)
{
    int M = f->mbits, E = f->ebits;
    uint32_t man = bits & ((1u << M) - 1), field = (bits >> M) & ((1u << E) - 1);
    uint32_t fmax = (1u << E) - 1;
    int neg = (bits >> (E + M)) & 1;
    if (f->nan == AMP_NAN_IEEE && field == fmax) return NAN;
    if (f->nan == AMP_NAN_ALLONES && field == fmax && man == (1u << M) - 1) return NAN;
    if (f->nan == AMP_NAN_NEGZERO && neg && field == 0 && man == 0) return NAN;
    /* P3109: NaN at 0x80, +-inf at all ones below the sign */
    if (f->nan == AMP_NAN_P3109 && ((neg && field == 0 && man == 0) || (field == fmax && man == (1u << M) - 1)))
        return NAN;
    double v = field == 0 ? ldexp((double)man, 1 - f->bias - M)
                          : ldexp((double)(man | (1u << M)), (int)field - f->bias - M);
    return neg ? -v : v;
}

/* Value of a P3109 binary8 pattern from the interim report's layout: signed,
 * 0x80 NaN, 0x7F/0xFF +-inf; unsigned (no sign bit), 0xFF NaN, 0xFE +inf;
 * otherwise exponent field e and trailing bits m give m 2^(1-bias-M) (e = 0)
 * or (2^M + m) 2^(e-bias-M). */
static inline double rt_p3109_value(const amp_format *f, uint32_t bits)
{
    int M = f->mbits, E = f->ebits;
    if (f->is_signed) {
        if (bits == 0x80) return NAN;
        if ((bits & 0x7f) == 0x7f) return bits & 0x80 ? -INFINITY : INFINITY;
    } else {
        if (bits == 0xff) return NAN;
        if (bits == 0xfe) return INFINITY;
    }
    uint32_t man = bits & ((1u << M) - 1), field = (bits >> M) & ((1u << E) - 1);
    double v = field == 0 ? ldexp((double)man, 1 - f->bias - M) : ldexp((double)(man | (1u << M)), (int)field - f->bias - M);
    return f->is_signed && (bits & 0x80) ? -v : v;
}

static int rt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Builds the grid of f (bits <= 24, with subnormals, signed). Returns 0 on
 * failure (allocation; or a trait inconsistency: the largest decoded value is
 * not max_finite). */
static inline int rt_grid_build(rt_grid *g, const amp_format *f)
{
    int nb = f->ebits + f->mbits;             /* magnitude bits */
    size_t cnt = (size_t)1 << nb, k = 0;
    g->f = f;
    g->v = malloc((cnt + 1) * sizeof *g->v);
    if (!g->v) return 0;
    for (uint32_t b = 0; b < cnt; b++) {
        double v = rt_pattern_value(f, b);
        if (!isnan(v)) g->v[k++] = v;
    }
    qsort(g->v, k, sizeof *g->v, rt_cmp_double);
    g->n = k;
    g->maxf = g->v[k - 1];
    g->minnorm = ldexp(1.0, 1 - f->bias);
    if (g->maxf != f->max_finite) return 0;
    /* the virtual neighbour: max finite plus the quantum of its binade */
    g->v[k] = g->maxf + ldexp(1.0, ilogb(g->maxf) - f->mbits);
    return 1;
}

static inline void rt_grid_free(rt_grid *g) { free(g->v); g->v = NULL; }

/* Index i with v[i] <= a < v[i+1] (a >= 0 finite, a < v[n]); hint: a guess. */
static inline size_t rt_grid_find(const rt_grid *g, double a, size_t hint)
{
    size_t lo = 0, hi = g->n;               /* invariant v[lo] <= a < v[hi] */
    if (hint < g->n && g->v[hint] <= a) {
        if (a < g->v[hint + 1]) return hint;
        lo = hint;
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->v[mid] <= a) lo = mid; else hi = mid;
    }
    return lo;
}

/* The docs/numerics.md rule for a result beyond max finite (sign neg). */
static inline float rt_overflow(const amp_format *f, amp_rounding m, unsigned fl, int neg)
{
    int toward_zero = m == AMP_RND_TZ || m == AMP_RND_TO || (m == AMP_RND_DN && !neg) ||
                      (m == AMP_RND_UP && neg);
    if ((fl & AMP_SATURATE) || toward_zero || (!f->has_inf && f->nan == AMP_NAN_NONE))
        return (float)(neg ? -f->max_finite : f->max_finite);
    if (f->has_inf) return neg ? -INFINITY : INFINITY;
    return NAN;
}

static inline float rt_zero(const amp_format *f, int neg)
{
    return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
}

/* Reference result of rounding x into g's format with a deterministic mode.
 * *hint carries the last grid index between calls (monotone sweeps are O(1)). */
#define M0(f) ((f)->mbits == 0)
static inline float rt_grid_round(const rt_grid *g, amp_rounding m, unsigned fl, double x, size_t *hint)
{
    const amp_format *f = g->f;
    int neg = signbit(x) != 0;
    if (isnan(x)) return NAN;
    if (isinf(x)) {
        if ((fl & AMP_SATURATE) || (!f->has_inf && f->nan == AMP_NAN_NONE))
            return (float)(neg ? -f->max_finite : f->max_finite);
        return f->has_inf ? (neg ? -INFINITY : INFINITY) : NAN;
    }
    double a = fabs(x);
    if (a == 0 || ((fl & AMP_DAZ) && a < g->minnorm)) return rt_zero(f, neg);
    double r;
    if (a >= g->v[g->n]) {
        r = INFINITY;                          /* at or beyond the virtual neighbour */
    } else {
        size_t i = rt_grid_find(g, a, *hint);
        *hint = i;
        double lo = g->v[i], hi = g->v[i + 1];
        if (a == lo) {
            r = lo;
        } else {
            double q = hi - lo;                /* exact: one quantum of lo's binade */
            int lo_even = fmod(lo / q, 2.0) == 0.0;
            if (f->nan == AMP_NAN_P3109 && M0(f))   /* no mantissa bits: the even code (exponent field) */
                lo_even = lo == 0 || ((ilogb(lo) + f->bias) & 1) == 0;
            int away = 0;
            switch (m) {
            case AMP_RND_NE: away = 2 * a > lo + hi || (2 * a == lo + hi && !lo_even); break;
            case AMP_RND_NA: away = 2 * a >= lo + hi; break;
            case AMP_RND_TZ: away = 0; break;
            case AMP_RND_UP: away = !neg; break;
            case AMP_RND_DN: away = neg; break;
            case AMP_RND_TO: away = lo_even; break;
            default: return NAN;             /* sr is not a deterministic mode */
            }
            r = away ? hi : lo;
        }
    }
    if (r > g->maxf) return rt_overflow(f, m, fl, neg);
    if (r == 0) return rt_zero(f, neg);
    if (r < g->minnorm && (fl & AMP_FTZ)) return rt_zero(f, neg);
    return neg ? -(float)r : (float)r;
}

/* ---- batch comparison against the MPFR reference ------------------------------
 * Rounds x[0..n) (float32 or float64 inputs) with the array path (with and
 * without statistics), optionally with amp_round1 per element, and compares
 * every result and class with amp_round1_mpfr, bit for bit and NaN-aware. The
 * statistics of the array call must equal what the MPFR classes and the inputs
 * give: class counts, n, amax, amin_nonzero and histogram exactly, error sums
 * to 1e-9 relative. Prints the first mismatches (format, mode, flags, input,
 * expected, got in hex) and returns how many there were. */
typedef struct rt_batch {
    const amp_format *f;
    const amp_round_opts *o;
    const char *what;        /* label printed on failure */
    uint64_t seed;           /* test seed, printed on failure */
    int scalar;              /* also compare amp_round1 element by element */
} rt_batch;

static inline int rt_hist_bin(double ax)   /* floor(log2 ax), clamped, via frexp */
{
    int e;
    frexp(ax, &e);
    int b = e - 1 - AMP_HIST_LO;
    return b < 0 ? 0 : b >= AMP_HIST_BINS ? AMP_HIST_BINS - 1 : b;
}

static inline void rt_report(const rt_batch *b, size_t *bad, const char *path, size_t i, double x,
                             int x_is64, float want, float got, int wc, int gc)
{
    if (++*bad > 8) return;
    char fl[64];
    if (x_is64)
        fprintf(stderr, "MISMATCH %s [%s] %s mode %s flags %s sr_bits %d: input 0x%016llx (%a) index %zu: "
                "expected 0x%08x (%a, %s) got 0x%08x (%a, %s) seed 0x%llx\n",
                b->what, path, b->f->name, amp_rounding_name(b->o->mode), rt_flags_name(b->o->flags, fl, sizeof fl),
                b->o->sr_bits, (unsigned long long)amp_d2u(x), x, i, amp_f2u(want), (double)want,
                amp_class_name((amp_class)wc), amp_f2u(got), (double)got, gc < 0 ? "-" : amp_class_name((amp_class)gc),
                (unsigned long long)b->seed);
    else
        fprintf(stderr, "MISMATCH %s [%s] %s mode %s flags %s sr_bits %d: input 0x%08x (%a) index %zu: "
                "expected 0x%08x (%a, %s) got 0x%08x (%a, %s) seed 0x%llx\n",
                b->what, path, b->f->name, amp_rounding_name(b->o->mode), rt_flags_name(b->o->flags, fl, sizeof fl),
                b->o->sr_bits, amp_f2u((float)x), x, i, amp_f2u(want), (double)want,
                amp_class_name((amp_class)wc), amp_f2u(got), (double)got, gc < 0 ? "-" : amp_class_name((amp_class)gc),
                (unsigned long long)b->seed);
}

/* The error sums' contract (amp_round.h): within a relative AMP_STATS_SUM_RTOL. */
static inline int rt_close(double got, long double want)
{
    if (isinf(got) || got > 1e300) return want > 1e300L || isinf((double)want);
    long double d = (long double)got - want;
    if (d < 0) d = -d;
    return d <= (long double)AMP_STATS_SUM_RTOL * (want < 0 ? -want : want) + 1e-300L;
}

static inline size_t rt_check_batch(const rt_batch *b, const void *xv, int is64, size_t n)
{
    const float *x32 = xv;
    const double *x64 = xv;
    float *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y2);
    size_t bad = 0;
    if (!y || !y2) { free(y); free(y2); fprintf(stderr, "out of memory\n"); return 1; }
    amp_stats st;
    amp_stats_init(&st);
    amp_status s1 = is64 ? amp_round_f64(b->f, b->o, x64, y, n, &st) : amp_round_f32(b->f, b->o, x32, y, n, &st);
    amp_status s2 = is64 ? amp_round_f64(b->f, b->o, x64, y2, n, NULL) : amp_round_f32(b->f, b->o, x32, y2, n, NULL);
    if (s1 != AMP_OK || s2 != AMP_OK) {
        fprintf(stderr, "%s: array rounding failed: %s\n", b->what, amp_errmsg());
        free(y); free(y2);
        return 1;
    }
    uint64_t cls[AMP_CLS_COUNT] = { 0 }, hist[AMP_HIST_BINS] = { 0 };
    double amax = 0, amin = INFINITY;
    long double se = 0, sq = 0, srel = 0;
    uint64_t nrel = 0;
    for (size_t i = 0; i < n; i++) {
        double xi = is64 ? x64[i] : (double)x32[i];
        amp_class wc, gc;
        float want = amp_round1_mpfr(b->f, b->o, xi, i, &wc);
        cls[wc]++;
        if (!rt_same(want, y[i])) rt_report(b, &bad, "array+stats", i, xi, is64, want, y[i], wc, -1);
        if (!rt_same(want, y2[i])) rt_report(b, &bad, "array", i, xi, is64, want, y2[i], wc, -1);
        if (b->scalar) {
            float got = amp_round1(b->f, b->o, xi, i, &gc);
            if (!rt_same(want, got) || gc != wc) rt_report(b, &bad, "amp_round1", i, xi, is64, want, got, wc, gc);
        }
        if (isnan(xi)) continue;
        double ax = fabs(xi);
        if (ax > amax) amax = ax;
        if (isinf(xi) || xi == 0) continue;
        if (ax < amin) amin = ax;
        hist[rt_hist_bin(ax)]++;
        if (isfinite(want)) {
            long double d = (long double)want - xi;
            se += d * d;
            sq += (long double)xi * xi;
            srel += (d / xi) * (d / xi);
            nrel++;
        }
    }
    int stats_ok = st.n == n && st.amax == amax && st.amin_nonzero == amin && st.n_rel == nrel &&
                   rt_close(st.sum_sq_err, se) && rt_close(st.sum_sq, sq) && rt_close(st.sum_rel_sq, srel);
    for (int c = 0; c < AMP_CLS_COUNT; c++) stats_ok &= st.cls[c] == cls[c];
    for (int k = 0; k < AMP_HIST_BINS; k++) stats_ok &= st.hist[k] == hist[k];
    if (!stats_ok) {
        char fl[64];
        bad++;
        fprintf(stderr, "STATS MISMATCH %s %s mode %s flags %s (n %zu, seed 0x%llx): n %llu/%zu amax %a/%a "
                "amin %a/%a n_rel %llu/%llu sum_sq_err %.17g/%.17Lg sum_sq %.17g/%.17Lg sum_rel %.17g/%.17Lg\n",
                b->what, b->f->name, amp_rounding_name(b->o->mode), rt_flags_name(b->o->flags, fl, sizeof fl), n,
                (unsigned long long)b->seed, (unsigned long long)st.n, n, st.amax, amax, st.amin_nonzero, amin,
                (unsigned long long)st.n_rel, (unsigned long long)nrel, st.sum_sq_err, se, st.sum_sq, sq,
                st.sum_rel_sq, srel);
        for (int c = 0; c < AMP_CLS_COUNT; c++)
            if (st.cls[c] != cls[c])
                fprintf(stderr, "  class %s: got %llu expected %llu\n", amp_class_name((amp_class)c),
                        (unsigned long long)st.cls[c], (unsigned long long)cls[c]);
        for (int k = 0; k < AMP_HIST_BINS; k++)
            if (st.hist[k] != hist[k])
                fprintf(stderr, "  hist bin %d (binade %d): got %llu expected %llu\n", k, k + AMP_HIST_LO,
                        (unsigned long long)st.hist[k], (unsigned long long)hist[k]);
    }
    free(y);
    free(y2);
    return bad;
}

#endif
