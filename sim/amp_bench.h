/* ampsim — speed measurements behind `ampsim bench` (ratios measured in one run). */
#ifndef AMP_BENCH_H
#define AMP_BENCH_H

#include <stdio.h>
#include "amp_base.h"
#include <stddef.h>

/* The first line of each speed table: which kernel paths ran. */
AMP_API void amp_bench_paths(FILE *out);
/* Rounding kernels vs memcpy on n float32 values, one thread, best of reps. */
AMP_API int amp_bench_round(FILE *out, int csv, int reps, size_t n);
/* GEMM with operand rounding vs plain sgemm, per shape. */
AMP_API int amp_bench_gemm(FILE *out, int csv);
/* Emulated training step vs the fp32 step of the same model ("mlp" or "gpt"). */
AMP_API int amp_bench_train(FILE *out, int csv, const char *model);

#endif
