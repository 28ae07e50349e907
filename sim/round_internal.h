/* Internal interface of the rounding core (not installed). */
#ifndef AMP_ROUND_INTERNAL_H
#define AMP_ROUND_INTERNAL_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

/* Elements per chunk of the array drivers: the unit of parallel work and of
 * statistics merging (fixed, so results do not depend on thread count). */
#define AMP_CHUNK ((size_t)1 << 16)

amp_status amp_round_check_opts(const amp_format *f, const amp_round_opts *o);
/* P3109 formats without mantissa bits break ties by the code: even code wins.
 * amp_round_by_code says whether f does; amp_round_code_odd whether the code
 * of the value mag (0 or a power of two of f) is odd. */
static inline int amp_round_by_code(const amp_format *f) { return f->mbits == 0 && f->nan == AMP_NAN_P3109; }
int amp_round_code_odd(const amp_format *f, double mag);
/* The result and class of an overflowing finite value of sign neg. */
float amp_round_overflow(const amp_format *f, const amp_round_opts *o, int neg, amp_class *cls);
/* Widens st's range of histogram bins in use to take [lo, hi]. */
void amp_stats_widen(amp_stats *st, int lo, int hi);
/* Adds one element to st (scalar form of the fused counters). */
void amp_stats_add1(amp_stats *st, double x, float y, amp_class c);
/* Fast float32 kernel for one chunk: returns 1 if it handled (f, o), else 0
 * and the caller uses the generic path. Adds statistics to st if non-NULL;
 * without statistics and with nonfinite non-NULL, adds to *nonfinite how many
 * results are inf or NaN, counted block by block right after the kernel wrote
 * them (in L1: no second pass over memory); with statistics it leaves
 * *nonfinite alone (the caller reads the class counts, amp_stats_nonfinite). */
int amp_round_fast_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                       size_t n, amp_stats *st, size_t *nonfinite);

#endif
