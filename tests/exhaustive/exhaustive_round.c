/* make check-exhaustive: every float32 input (all 2^32 bit patterns) through
 * the array path amp_round_f32 (so the fast kernels are what is tested),
 * compared with an independent reference (tests/round_ref.h: the sorted grid of
 * every value of the format built from its traits with ldexp, the two
 * neighbours of x, and the mode's rule; no ampsim rounding code, no MPFR).
 *   fp16, bf16, e4m3, e5m2 under rne and sr; fp16 also under rna rtz rup rdn rto.
 * sr: every result must be one of the two neighbours of x (the rtz result and
 * the result rounded away from zero; beyond max + ulp, where both neighbours
 * overflow, the overflow result).
 * Inputs go in blocks of 2^20 patterns over 2 OpenMP threads (the library
 * itself runs one thread per call). Blocks alternate with and without the
 * fused statistics, so both kernel variants are checked; in the blocks with
 * statistics the class counts, histogram, amax, amin and n_rel must equal
 * those derived from the reference results, and the error sums must be
 * within AMP_STATS_SUM_RTOL of long double sums.
 * Prints the mismatch count and the time of each format/mode; exit 1 on any
 * mismatch. AMP_EXH_FORMATS=fp16,e4m3 and AMP_EXH_MODES=rne,... narrow it. */
#include "round_ref.h"

#include <omp.h>
#include <string.h>

#define BLOCK ((uint64_t)1 << 20)

static int listed(const char *env, const char *name)
{
    const char *s = getenv(env);
    if (!s || !*s) return 1;
    size_t n = strlen(name);
    for (const char *p = s; (p = strstr(p, name)); p += n)
        if ((p == s || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* The class of x -> want under mode m by docs/numerics.md (want is the reference
 * result). Overflow is decided on the rounding with an unbounded exponent
 * (OCP): beyond max finite it is `saturated` if the result is finite (the
 * directed modes toward zero; no case here sets AMP_SATURATE), else
 * `overflow`. An x above max finite that rounds to it is merely rounded. */
static int ref_class(const amp_format *f, amp_rounding m, float x, float want)
{
    if (isnan(x)) return AMP_CLS_NAN_IN;
    if (isinf(x)) return AMP_CLS_INF_IN;
    if (x == 0) return AMP_CLS_ZERO_IN;
    double mx = f->max_finite, ulp = ldexp(1.0, f->emax - f->mbits), ax = fabs((double)x);
    int odd = fmod(mx / ulp, 2.0) == 1.0, over;
    switch (m) {
    case AMP_RND_NE: over = ax > mx + ulp / 2 || (ax == mx + ulp / 2 && odd); break;
    case AMP_RND_NA: over = ax >= mx + ulp / 2; break;
    case AMP_RND_UP: over = x > 0 ? ax > mx : ax >= mx + ulp; break;
    case AMP_RND_DN: over = x < 0 ? ax > mx : ax >= mx + ulp; break;
    default: over = ax >= mx + ulp; break;               /* rtz, rto */
    }
    if (over) return isfinite(want) ? AMP_CLS_SATURATED : AMP_CLS_OVERFLOW;
    if (want == 0) return AMP_CLS_FLUSHED;
    if (fabs((double)want) < f->min_normal) return AMP_CLS_SUBNORMAL;
    return want == x ? AMP_CLS_EXACT : AMP_CLS_ROUNDED;
}

/* 1 if st holds the statistics of x -> want[0..n) */
static int stats_match(const amp_format *f, amp_rounding m, const float *x, const float *want, size_t n,
                       const amp_stats *st)
{
    uint64_t cls[AMP_CLS_COUNT] = { 0 }, nrel = 0;
    static _Thread_local uint64_t hist[AMP_HIST_BINS];
    memset(hist, 0, sizeof hist);
    double amax = 0, amin = INFINITY;
    long double se = 0, sq = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        cls[ref_class(f, m, x[i], want[i])]++;
        if (isnan(x[i])) continue;
        double ax = fabs((double)x[i]);
        if (ax > amax) amax = ax;
        if (isinf(x[i]) || x[i] == 0) continue;
        if (ax < amin) amin = ax;
        hist[rt_hist_bin(ax)]++;
        if (isfinite(want[i])) {
            long double d = (long double)want[i] - x[i];
            se += d * d;
            sq += (long double)x[i] * x[i];
            sr += (d / x[i]) * (d / x[i]);
            nrel++;
        }
    }
    int ok = st->n == n && st->amax == amax && st->amin_nonzero == amin && st->n_rel == nrel &&
             rt_close(st->sum_sq_err, se) && rt_close(st->sum_sq, sq) && rt_close(st->sum_rel_sq, sr);
    for (int c = 0; c < AMP_CLS_COUNT; c++) ok &= st->cls[c] == cls[c];
    for (int b = 0; b < AMP_HIST_BINS; b++) ok &= st->hist[b] == hist[b];
    return ok;
}

/* sr: got if it is one of x's two neighbours, else the lower one (a mismatch) */
static float sr_neighbour(const rt_grid *g, const amp_format *f, float x, float got, size_t *hint)
{
    float lo = rt_grid_round(g, AMP_RND_TZ, 0, x, hint);
    float hi = rt_grid_round(g, x < 0 ? AMP_RND_DN : AMP_RND_UP, 0, x, hint);
    if (fabs((double)x) >= f->max_finite + ldexp(1.0, f->emax - f->mbits)) lo = hi;   /* both overflow */
    return rt_same(got, hi) ? hi : lo;
}

static uint64_t run_one(const amp_format *f, amp_rounding m)
{
    rt_grid g;
    if (!rt_grid_build(&g, f)) {
        fprintf(stderr, "%s: cannot build the reference grid\n", f->name);
        return 1;
    }
    uint64_t bad = 0;
    int stop = 0;
    amp_round_opts o = amp_round_defaults();
    o.mode = m;
    #pragma omp parallel num_threads(2) reduction(+ : bad)
    {
        float *x = malloc(BLOCK * sizeof *x), *y = malloc(BLOCK * sizeof *y), *ref = malloc(BLOCK * sizeof *ref);
        if (!x || !y || !ref) {
            #pragma omp atomic write
            stop = 1;
        }
        #pragma omp for schedule(dynamic, 1)
        for (uint64_t blk = 0; blk < ((uint64_t)1 << 32) / BLOCK; blk++) {
            int st_on = (int)(blk & 1);
            amp_stats st;
            int s;
            #pragma omp atomic read
            s = stop;
            if (s) continue;
            for (uint64_t i = 0; i < BLOCK; i++) x[i] = amp_u2f((uint32_t)(blk * BLOCK + i));
            amp_stats_init(&st);
            if (amp_round_f32(f, &o, x, y, BLOCK, st_on ? &st : NULL) != AMP_OK) {
                #pragma omp critical
                fprintf(stderr, "%s %s: amp_round_f32 failed: %s\n", f->name, amp_rounding_name(m), amp_errmsg());
                #pragma omp atomic write
                stop = 1;
                bad++;
                continue;
            }
            size_t hint = 0;
            for (uint64_t i = 0; i < BLOCK; i++) {
                float want = m == AMP_RND_SR ? sr_neighbour(&g, f, x[i], y[i], &hint) : rt_grid_round(&g, m, 0, x[i], &hint);
                ref[i] = want;
                if (!rt_same(want, y[i])) {
                    if (bad < 10) {
                        #pragma omp critical
                        fprintf(stderr, "MISMATCH %s %s%s input 0x%08x (%a): expected 0x%08x (%a) got 0x%08x (%a)\n",
                                f->name, amp_rounding_name(m), st_on ? " +stats" : "", amp_f2u(x[i]),
                                (double)x[i], amp_f2u(want), (double)want, amp_f2u(y[i]), (double)y[i]);
                    }
                    bad++;
                }
            }
            if (st_on && m != AMP_RND_SR && !stats_match(f, m, x, ref, BLOCK, &st)) {
                #pragma omp critical
                fprintf(stderr, "STATS MISMATCH %s %s block 0x%08llx\n", f->name, amp_rounding_name(m),
                        (unsigned long long)(blk * BLOCK));
                bad++;
            }
        }
        free(x);
        free(y);
        free(ref);
    }
    rt_grid_free(&g);
    return bad + (uint64_t)stop;
}

int main(void)
{
    static const struct { amp_format_id id; int all_modes; } cases[] = {
        { AMP_FMT_FP16, 1 }, { AMP_FMT_BF16, 0 }, { AMP_FMT_E4M3, 0 }, { AMP_FMT_E5M2, 0 },
    };
    /* rne and sr for every case, then the other modes for all_modes */
    static const amp_rounding modes[] = { AMP_RND_NE, AMP_RND_SR, AMP_RND_NA, AMP_RND_TZ, AMP_RND_UP, AMP_RND_DN, AMP_RND_TO };
    uint64_t total_bad = 0;
    double t_all = omp_get_wtime();
    amp_set_threads(1);
    const char *simd = getenv("AMP_SIMD");               /* generic|avx512|gfni: cap the kernel paths */
    amp_simd cap;
    if (simd && *simd) {
        if (amp_simd_parse(simd, &cap)) {
            fprintf(stderr, "exhaustive_round: AMP_SIMD: %s\n", amp_errmsg());
            return 2;
        }
        amp_set_simd(cap);
    }
    printf("exhaustive: all 2^32 float32 inputs, amp_round_f32 vs an independent grid reference (kernel paths: %s)\n",
           amp_simd_name(amp_simd_active()));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const amp_format *f = amp_format_get(cases[c].id);
        if (!listed("AMP_EXH_FORMATS", f->name)) continue;
        for (size_t k = 0; k < (cases[c].all_modes ? 7u : 2u); k++) {
            if (!listed("AMP_EXH_MODES", amp_rounding_name(modes[k]))) continue;
            double t0 = omp_get_wtime();
            uint64_t bad = run_one(f, modes[k]);
            printf("%-5s %-3s mismatches %llu  time %.1f s\n", f->name, amp_rounding_name(modes[k]),
                   (unsigned long long)bad, omp_get_wtime() - t0);
            fflush(stdout);
            total_bad += bad;
        }
    }
    printf("total mismatches %llu  time %.1f s (2 threads)\n", (unsigned long long)total_bad, omp_get_wtime() - t_all);
    return total_bad ? 1 : 0;
}
