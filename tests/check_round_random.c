/* Check suite: random float32 and float64 inputs against the MPFR reference,
 * bit for bit, for every format (table rows and custom formats) and mode.
 *
 * Inputs: half random bit patterns, half values concentrated on the format's
 * range (exponent uniform from 4 binades below the min subnormal to 2 above
 * max finite, random sign; of those, a quarter exact format values, a quarter
 * exact ties, the rest random significands). Flags: 1/2 none, 1/6 saturate,
 * 1/6 ftz+daz, 1/6 all three. sr cycles through --sr-bits 0, 3, 8, 23, 64.
 * Float32 inputs go through amp_round_f32 (the fast kernels), float64 through
 * amp_round_f64; 1 in 8 batches also through amp_round1 per element.
 *
 * Counts (float32 + float64 each, per format):
 *   make check:  10^5 under rne, 10^4 under each other mode;
 *   make check-long (AMP_LONG=1, the test case "long"): 10^6 under rne,
 *                10^5 under each other mode;
 *   AMP_FULL=1:  10^6 under every mode (also run by hand for the README);
 *   AMP_QUICK=1: 10^4 / 10^3 (valgrind).
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed on failure. */
#include "round_ref.h"

#include <check.h>
#include "check_main.h"

static uint64_t seed;
static size_t n_rne, n_other;
static int counts_set;   /* AMP_FULL or AMP_QUICK chose the counts */

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

/* A double near f's range (see the file comment). */
static double near_range(const amp_format *f, rt_rng *r)
{
    int lo = f->emin - f->mbits - 4, hi = f->emax + 2;
    int e = lo + (int)(rt_next(r) % (uint64_t)(hi - lo + 1));
    uint64_t man = rt_next(r) >> 12;               /* 52 random bits */
    int kind = (int)(rt_next(r) & 3);
    int keep = f->mbits;                           /* bits kept below the leading one */
    if (kind == 0) man &= ~((1ULL << (52 - keep)) - 1);                             /* a format value */
    else if (kind == 1) man = (man & ~((1ULL << (52 - keep)) - 1)) | (1ULL << (51 - keep)); /* a tie */
    double v = ldexp(1.0 + ldexp((double)man, -52), e);
    return (rt_next(r) & 1) ? -v : v;
}

static size_t run_random(const amp_format *f, amp_rounding m, size_t n, int is64, uint64_t s)
{
    rt_rng r = { s };
    const size_t batch = 1u << 16;
    float *x32 = malloc(batch * sizeof *x32);
    double *x64 = malloc(batch * sizeof *x64);
    size_t bad = 0, done = 0;
    int nb = 0;
    static const unsigned fl_cycle[6] = { 0, 0, 0, AMP_SATURATE, AMP_FTZ | AMP_DAZ, AMP_SATURATE | AMP_FTZ | AMP_DAZ };
    static const int srb_cycle[5] = { 0, 3, 8, 23, 64 };
    ck_assert(x32 && x64);
    while (done < n && bad == 0) {
        size_t len = n - done < batch ? n - done : batch;
        for (size_t i = 0; i < len; i++) {
            if (rt_next(&r) & 1) {
                uint64_t b = rt_next(&r);
                x32[i] = amp_u2f((uint32_t)b);
                x64[i] = amp_u2d(b);
            } else {
                x64[i] = near_range(f, &r);
                x32[i] = (float)x64[i];
            }
        }
        amp_round_opts o = amp_round_defaults();
        o.mode = m;
        o.flags = fl_cycle[nb % 6];
        o.sr_bits = srb_cycle[nb % 5];
        o.seed = rt_next(&r);
        o.stream = rt_next(&r) & 0xff;
        o.index0 = rt_next(&r) & 0xffffff;
        char what[64];
        snprintf(what, sizeof what, "random %s batch %d", is64 ? "f64" : "f32", nb);
        rt_batch b = { f, &o, what, seed, (nb % 8) == 7 };
        bad += rt_check_batch(&b, is64 ? (const void *)x64 : (const void *)x32, is64, len);
        done += len;
        nb++;
    }
    free(x32);
    free(x64);
    return bad;
}

/* _i: the format (the test case "long": N_FORMATS + the format, ten times
 * the inputs, unless AMP_FULL or AMP_QUICK set the counts) */
START_TEST(random_vs_mpfr)
{
    int lng = _i >= N_FORMATS, scale = lng && !counts_set ? 10 : 1;
    _i %= N_FORMATS;
    amp_format f = fmt_at(_i);
    size_t bad = 0;
    for (int m = 0; m < AMP_RND_COUNT; m++) {
        size_t n = (m == AMP_RND_NE ? n_rne : n_other) * (size_t)scale;
        bad += run_random(&f, (amp_rounding)m, n, 0, seed + 1000 * (uint64_t)_i + (uint64_t)m);
        bad += run_random(&f, (amp_rounding)m, n, 1, seed + 1000 * (uint64_t)_i + (uint64_t)m + 500);
    }
    ck_assert_msg(bad == 0, "%s: %zu random mismatches (seed 0x%llx)", f.name, bad, (unsigned long long)seed);
}
END_TEST

int main(void)
{
    seed = rt_default_seed();
    const char *full = getenv("AMP_FULL"), *quick = getenv("AMP_QUICK");
    n_rne = 100000;
    n_other = 10000;
    if (full && *full && strcmp(full, "0")) { n_rne = n_other = 1000000; counts_set = 1; }
    if (quick && *quick && strcmp(quick, "0")) { n_rne = 10000; n_other = 1000; counts_set = 1; }
    printf("random vs MPFR: %zu (rne) / %zu (other modes) float32 and float64 inputs per format"
           " (the test case long: %d times as many)\n", n_rne, n_other, counts_set ? 1 : 10);
    Suite *s = suite_create("round_random");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 1200);
    tcase_add_loop_test(tc, random_vs_mpfr, 0, N_FORMATS);
    suite_add_tcase(s, tc);
    if (amp_check_long()) {
        TCase *tl = tcase_create("long");
        tcase_set_timeout(tl, 1200);
        tcase_add_loop_test(tl, random_vs_mpfr, N_FORMATS, 2 * N_FORMATS);
        suite_add_tcase(s, tl);
    }
    int failed = amp_check_failures(s);
    if (failed) fprintf(stderr, "check_round_random: seed 0x%llx (set AMP_TEST_SEED to repeat)\n", (unsigned long long)seed);
    return failed ? 1 : 0;
}
