/* ampsim — elementary functions with fixed results: the same bits on every
 * CPU, compiler path and C library (sim/mathfn.c, docs/speed-repro.md).
 *
 * They use only IEEE-754 basic operations (+ - * /, sqrt, conversions), which
 * are correctly rounded everywhere, in a fixed order with no FMA contraction
 * (the build passes -ffp-contract=off): glibc's exp/log/tanh dispatch
 * different code on FMA and non-FMA CPUs, and other C libraries differ again.
 * Error bounds (tested against MPFR in tests/check_mathfn.c):
 *   amp_exp, amp_log            < 1 ulp (double)
 *   amp_pown                    < 1 ulp where x and x^n lie in [2^-500, 2^500] and [2^-900, 2^900]
 *   amp_cos2pi                  < 2^-52 absolute
 *   amp_expf, amp_logf, amp_tanhf  < 0.5 + 2^-20 ulp (float32; computed in
 *                                  double and rounded once)
 *   sqrt / sqrtf                correctly rounded (IEEE-754), used as they are. */
#ifndef AMP_MATH_H
#define AMP_MATH_H

#include "amp_base.h"

#include <stddef.h>

AMP_API double amp_exp(double x);
AMP_API double amp_log(double x);
/* x^n by binary powering in double-double arithmetic (AdamW's bias correction). */
AMP_API double amp_pown(double x, int64_t n);
/* cos(2 pi u) (Box-Muller initialisation). */
AMP_API double amp_cos2pi(double u);
AMP_API float amp_expf(float x);
AMP_API float amp_logf(float x);
AMP_API float amp_tanhf(float x);
/* y[i] = f(x[i]), i < n (y may be x): the same bits as the scalar functions, vectorised. */
AMP_API void amp_exp_n(const double *x, double *y, size_t n);
AMP_API void amp_expf_n(const float *x, float *y, size_t n);
AMP_API void amp_tanhf_n(const float *x, float *y, size_t n);
/* The float32 sum of v (n) in a fixed order: lane l (of 8) adds v[j], j = l
 * mod 8, in increasing j from +0; then ((l0 + l4) + (l2 + l6)) + ((l1 + l5) +
 * (l3 + l7)), the shape of PyTorch's vectorised CPU sums. n = 0 gives +0. */
AMP_API float amp_sum8f(const float *v, size_t n);

#endif
