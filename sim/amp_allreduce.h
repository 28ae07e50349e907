/* ampsim — emulated data-parallel gradient all-reduce in a chosen format.
 *
 * R ranks each hold a float32 gradient array g[r][0..n). The all-reduce
 * returns, for every element, the sum (or the mean) of the R values computed
 * the way a real collective adds them, with every partial sum rounded to the
 * reduction format F (amp_round_f64, correctly rounded from the exact sum:
 * each addition is done in double, exact for all formats of at most 25
 * significand bits, i.e. every format ampsim has, then rounded once).
 *
 * Exact order of operations (all element-wise, i is the element index):
 *  1. Scale (optional, per tensor): amax = max over r, i of |g[r][i]| (finite
 *     values; a NaN/inf anywhere or amax == 0 gives s = 1). AMP_AR_SCALE_AMAX:
 *     s = float(F.max_finite / (R * amax)); AMP_AR_SCALE_POW2: s = 2^floor(log2(
 *     F.max_finite / (R * amax))); s is clamped to [2^-126, 2^127]. Without
 *     scaling s = 1. AMP_AR_SCALE_MX (MX-style block scaling): the POW2 rule
 *     applied to every block of AMP_AR_MX_BLOCK consecutive elements
 *     [32b, 32b+32) on its own, with the block's amax over every rank, giving
 *     s_b (1 for a block with a NaN/inf or all zeros); info->scale is then the
 *     smallest s_b of the blocks that are scaled (1 if none). Scaled input: float32 product g[r][i] * s (s_b: the
 *     element's block), as an FP8 cast kernel multiplies in fp32 first.
 *  2. Quantize: q[r][i] = round_F(scaled input) (stream base+1+r, see below).
 *  3. Reduce:
 *     ring: the array is cut into R contiguous chunks, chunk c = [lo_c, lo_{c+1})
 *        with lo_c = c*floor(n/R) + min(c, n mod R). Reduce-scatter: chunk c
 *        starts at rank c and travels c -> c+1 -> ... (mod R); at ring step
 *        k = 1..R-1 the receiving rank (c+k) mod R adds its own value:
 *           p_0 = q[c], p_k = round_F(p_{k-1} + q[(c+k) mod R]).
 *        The all-gather then copies p_{R-1} to every rank (no arithmetic).
 *     tree: pairwise binary tree over the ranks in index order. Level values
 *        v_0[r] = q[r]; at each level with m values, v'[j] = round_F(v[2j] +
 *        v[2j+1]) for j < floor(m/2), and if m is odd the last value v[m-1] is
 *        carried up unchanged as v'[floor(m/2)]; repeat until one value is left.
 *        (R = 4: ((q0+q1)+(q2+q3)); R = 3: ((q0+q1)+q2).)
 *  4. Unscale: y = float32(p * float(1/double(s))) (skipped when s == 1; MX:
 *     s_b of the element's block).
 *  5. Mean (opts.average): y = float32(double(y) / R), correctly rounded.
 * With F = fp32, no scaling and tree, the result is bit for bit the float32
 * pairwise sum in the order of step 3 (IEEE addition is commutative, so only
 * the association matters).
 *
 * Stochastic rounding (opts.round.mode = sr) is reproducible: the quantization
 * of rank r uses stream round.stream + 1 + r, the additions of ring step k or
 * tree level k (k = 1, 2, ...) use stream round.stream + R + k; the index is
 * always the element index in the whole tensor. */
#ifndef AMP_ALLREDUCE_H
#define AMP_ALLREDUCE_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

typedef enum amp_allreduce_algo { AMP_AR_RING, AMP_AR_TREE } amp_allreduce_algo;
typedef enum amp_allreduce_scaling {
    AMP_AR_SCALE_NONE,   /* s = 1 */
    AMP_AR_SCALE_AMAX,   /* s = max_finite / (R * amax) */
    AMP_AR_SCALE_POW2,   /* the same, rounded down to a power of two */
    AMP_AR_SCALE_MX,     /* POW2 per block of AMP_AR_MX_BLOCK elements */
} amp_allreduce_scaling;
#define AMP_AR_MX_BLOCK 32

typedef struct amp_allreduce_opts {
    amp_allreduce_algo algo;
    amp_format fmt;               /* reduction format F */
    amp_round_opts round;         /* rounding of every quantization and partial sum */
    amp_allreduce_scaling scaling;
    int average;                  /* 1: divide the reduced result by R */
} amp_allreduce_opts;

typedef struct amp_allreduce_info {
    float scale;        /* s of step 1 (1 without scaling; MX: the smallest s_b) */
    double amax;        /* amax of step 1 over all ranks' inputs */
    amp_stats quant;    /* statistics of the R quantizations (step 2), added */
    amp_stats sums;     /* statistics of every rounded partial sum (step 3), added */
    amp_stats result;   /* classification of the reduced values in F: the last
                           partial sums (ring p_{R-1}, tree root) */
} amp_allreduce_info;

/* ring, tree, fp32 format, rne, no scaling, sum. */
AMP_API amp_allreduce_opts amp_allreduce_defaults(void);
/* "ring" | "tree" */
AMP_API amp_status amp_allreduce_algo_parse(const char *s, amp_allreduce_algo *out);
AMP_API const char *amp_allreduce_algo_name(amp_allreduce_algo a);
/* "none" | "amax" | "pow2" | "mx" */
AMP_API amp_status amp_allreduce_scaling_parse(const char *s, amp_allreduce_scaling *out);
AMP_API const char *amp_allreduce_scaling_name(amp_allreduce_scaling s);

/* Reduces g[0..R)[0..n) into y[0..n) (y may alias none of the inputs).
 * info may be NULL; its stats are initialised here. R >= 1. */
AMP_API amp_status amp_allreduce(const amp_allreduce_opts *o, const float *const *g, int R, size_t n,
                                 float *y, amp_allreduce_info *info);

/* sizeof of "amp_allreduce_opts" or "amp_allreduce_info", 0 for any other
 * name: for foreign-function bindings to check their struct mirrors. */
AMP_API size_t amp_allreduce_abi_size(const char *type);

#endif
