/* ampsim — speed measurements behind `ampsim bench` (ratios measured in one run). */
#ifndef AMP_BENCH_H
#define AMP_BENCH_H

#include <stdio.h>
#include <stddef.h>

/* The first line of each speed table: which kernel paths ran. */
void amp_bench_paths(FILE *out);
/* Rounding kernels vs memcpy on n float32 values, one thread, best of reps. */
int amp_bench_round(FILE *out, int csv, int reps, size_t n);

#endif
