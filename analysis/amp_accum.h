/* ampsim — the accumulation study: how a narrow accumulator loses a dot
 * product, with and without promotion to FP32. */
#ifndef AMP_ACCUM_H
#define AMP_ACCUM_H

#include <stdio.h>
#include "amp_base.h"

/* ---- figure 6: the accumulation experiment (analysis/accum.c) ------------
 * Dot products of K products of random values in [0,1) rounded to e4m3,
 * accumulated in a narrow float (e8m13 with RNE and with truncation, bf16,
 * fp16) with and without promotion of the partial sum to FP32 every 128
 * products, against the exact sum (in double; exact for these sizes).
 * Writes CSV
 *   K,operands,accumulator,rounding,promote_every,trials,mean_rel_err,max_rel_err
 * (promote_every 0 = never) or, with csv == 0, a readable table. Deterministic.
 * Returns AMP_OK, or AMP_EIO if writing fails. */
AMP_API int amp_bench_accum(FILE *out, int csv);

#endif
