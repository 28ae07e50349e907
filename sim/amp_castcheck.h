/* ampsim — judging another library's casts (`ampsim check-cast`): each output
 * of the library is compared with ampsim's exact result for the same input,
 * format and cast options, and every mismatch is put in one class (the first
 * that applies, in this order):
 *   nan        a NaN input, or both results NaN with different encodings
 *              (--bits: payloads, signs, 0x7F vs 0xFF...)
 *   e8m0       the format is E8M0 (libraries differ on its rounding)
 *   max_finite the library gave a finite value beyond the format's max finite
 *              (e.g. an E4M3 whose max is 480, not 448)
 *   saturation one result is +-inf or NaN and the other finite, beyond the
 *              range: saturation against overflow
 *   neg_zero   both zero, with different signs
 *   subnormal  the input or either result is below the min normal (flush,
 *              denormals-as-zero, subnormal rounding)
 *   tie        the input is halfway between the two results (tie direction)
 *   rounding   the two results are the input's two neighbours, not a tie
 *              (a different rounding mode)
 *   other      anything else (not a value of the format, far off)
 * Results are compared as float32 values, or as the format's bit patterns
 * when the library's output is bits. */
#ifndef AMP_CASTCHECK_H
#define AMP_CASTCHECK_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

typedef enum amp_mismatch {
    AMP_MM_NAN, AMP_MM_E8M0, AMP_MM_MAXFINITE, AMP_MM_SATURATION, AMP_MM_NEGZERO, AMP_MM_SUBNORMAL,
    AMP_MM_TIE, AMP_MM_ROUNDING, AMP_MM_OTHER, AMP_MM_COUNT
} amp_mismatch;
AMP_API const char *amp_mismatch_name(amp_mismatch m);

#define AMP_CAST_EXAMPLES 5
typedef struct amp_cast_example {
    size_t index;
    double x;             /* the input */
    float want, got;      /* ampsim's result, the library's */
    int64_t want_bits, got_bits;   /* their patterns in the format (-1: not a value of it) */
} amp_cast_example;

typedef struct amp_cast_check {
    uint64_t n, agree;
    uint64_t count[AMP_MM_COUNT];
    int n_ex[AMP_MM_COUNT];
    amp_cast_example ex[AMP_MM_COUNT][AMP_CAST_EXAMPLES];
} amp_cast_check;

/* The class of one mismatch (want != got). got_bits: the library's pattern
 * (-1 when it gave values, not bits). */
AMP_API amp_mismatch amp_cast_classify(const amp_format *f, double x, float want, float got, int64_t got_bits);

/* Compares n library results with ampsim's: got[i] (values; got_bits NULL)
 * or got_bits[i] (patterns of f, decoded for the comparison) for inputs x[i]
 * (elements index0 + i; sr keys on it). Adds to *c; when cls is non-NULL,
 * cls[i] = the class, or -1 where they agree. AMP_EINVAL for bad options or a
 * pattern wider than the format. */
AMP_API amp_status amp_cast_check_run(const amp_format *f, const amp_round_opts *o, const double *x, const float *got,
                                      const uint32_t *got_bits, size_t n, size_t index0, amp_cast_check *c, int *cls);

#endif
