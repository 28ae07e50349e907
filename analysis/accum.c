/* The accumulation experiment behind figure 6 (Wang et al. 2018; DeepSeek-V3
 * §3.3): relative error of a dot product of length K whose running sum is
 * kept in a narrow float, with and without promotion of the partial sum to an
 * FP32 accumulator every N_C products.
 *
 * Operands: a_i, b_i uniform in [0,1), rounded to e4m3 (RNE). Products of two
 * e4m3 values have at most 8 significant bits and are exact in float32, as
 * on FP8 tensor cores. Exact reference: the sum in double. It is exact: every
 * product is a multiple of 2^-18 (e4m3's min subnormal 2^-9, squared) and
 * the sum is below 2^15 for K <= 2^15, so 33 bits suffice (< 53).
 * Narrow step: acc = round_fmt(acc + p), where acc + p is exact in double
 * (acc has <= 14 significant bits, p <= 8, both multiples of 2^-18, below 2^15)
 * and amp_round1 rounds it correctly once. Promotion: every N_C products
 * the narrow partial sum is added into a float32 total (float32 addition,
 * correctly rounded) and reset to 0, as in DeepSeek-V3's FP8 GEMMs. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_accum.h"

#include <math.h>
#include <stdio.h>

#define ACC_SEED 20180101u
#define ACC_TRIALS 24
#define ACC_KMIN_LOG2 4
#define ACC_KMAX_LOG2 14
#define ACC_NC 128

typedef struct acc_cfg {
    const char *fmt;       /* accumulator format */
    amp_rounding mode;     /* rounding of each accumulation step */
    int promote;           /* N_C, 0 = never */
} acc_cfg;

static const acc_cfg cfgs[] = {
    { "fp32",  AMP_RND_NE, 0 },
    { "e8m13", AMP_RND_TZ, 0 },   /* ~14-bit accumulator that truncates (DeepSeek-V3's H800 estimate) */
    { "e8m13", AMP_RND_TZ, ACC_NC },
    { "e8m13", AMP_RND_NE, 0 },
    { "e8m13", AMP_RND_NE, ACC_NC },
    { "bf16",  AMP_RND_NE, 0 },
    { "bf16",  AMP_RND_NE, ACC_NC },
    { "fp16",  AMP_RND_NE, 0 },
    { "fp16",  AMP_RND_NE, ACC_NC },
};

/* One dot product of length K (trial t): returns the relative error. */
static double one_dot(const amp_format *op, const amp_format *acc, const amp_round_opts *ro,
                      int promote, long K, int trial)
{
    amp_round_opts rne = amp_round_defaults();
    double exact = 0, part = 0;
    float total = 0;
    for (long i = 0; i < K; i++) {
        uint64_t idx = ((uint64_t)K << 32) | ((uint64_t)i << 1);
        double a = amp_round1(op, &rne, amp_rand_uniform(ACC_SEED, (uint64_t)trial, idx), 0, NULL);
        double b = amp_round1(op, &rne, amp_rand_uniform(ACC_SEED, (uint64_t)trial, idx | 1), 0, NULL);
        double p = a * b;                 /* exact: <= 8 significant bits */
        exact += p;                       /* exact, see above */
        part = amp_round1(acc, ro, part + p, 0, NULL);
        if (promote && (i + 1) % promote == 0) {
            total = (float)((double)total + part);  /* float32 add, correctly rounded */
            part = 0;
        }
    }
    double got = promote ? (double)(float)((double)total + part) : part;
    return exact > 0 ? fabs(got - exact) / exact : 0;
}

int amp_bench_accum(FILE *out, int csv)
{
    amp_format op, acc;
    AMP_ASSERT(amp_format_parse("e4m3", &op) == AMP_OK);
    if (csv)
        fprintf(out, "K,operands,accumulator,rounding,promote_every,trials,mean_rel_err,max_rel_err\n");
    else
        fprintf(out, "dot products of K e4m3 products of U[0,1) values, %d trials each;\n"
                     "relative error of the narrow accumulator against the exact sum\n"
                     "%7s %-8s %-5s %8s %14s %14s\n", ACC_TRIALS,
                "K", "accum", "mode", "promote", "mean_rel_err", "max_rel_err");
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        AMP_ASSERT(amp_format_parse(cfgs[c].fmt, &acc) == AMP_OK);
        amp_round_opts ro = amp_round_defaults();
        ro.mode = cfgs[c].mode;
        for (int e = ACC_KMIN_LOG2; e <= ACC_KMAX_LOG2; e++) {
            long K = 1L << e;
            double sum = 0, mx = 0;
            for (int t = 0; t < ACC_TRIALS; t++) {
                double r = one_dot(&op, &acc, &ro, cfgs[c].promote, K, t);
                sum += r;
                if (r > mx) mx = r;
            }
            if (csv)
                fprintf(out, "%ld,e4m3,%s,%s,%d,%d,%.6e,%.6e\n", K, cfgs[c].fmt,
                        amp_rounding_name(cfgs[c].mode), cfgs[c].promote, ACC_TRIALS,
                        sum / ACC_TRIALS, mx);
            else
                fprintf(out, "%7ld %-8s %-5s %8d %14.4e %14.4e\n", K, cfgs[c].fmt,
                        amp_rounding_name(cfgs[c].mode), cfgs[c].promote, sum / ACC_TRIALS, mx);
        }
    }
    if (fflush(out) != 0 || ferror(out)) return amp_fail(AMP_EIO, "accum: write failed");
    return AMP_OK;
}
