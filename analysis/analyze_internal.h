/* Shared by analyze.c (the passes and rows) and analyze_auto.c (the data-
 * dependent scales). Not installed. */
#ifndef AMP_ANALYZE_INTERNAL_H
#define AMP_ANALYZE_INTERNAL_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"

/* Elements per streamed chunk: a multiple of the rounding drivers' fixed
 * chunk (2^16), so statistics merge in the same order however the tensor is
 * cut, and large enough that each call keeps every thread busy. */
#define AN_CHUNK ((size_t)1 << 20)

/* Signed binade histogram: binade b of |x| (floor(log2|x|), -1074..1023) at
 * index b + AN_HOFF; sign 0 positive, 1 negative. Zero, inf, NaN not counted. */
#define AN_HOFF 1100
#define AN_HBINS 2200
typedef uint64_t an_hist[2][AN_HBINS];

/* One (format, scale) rounding of a pass. */
typedef struct an_job {
    const amp_format *f;
    float scale;
    amp_stats st;
    uint64_t invalid;      /* unsigned f: negative nonzero finite inputs, taken out of st.cls[OVERFLOW] */
} an_job;

/* Reads chunk [first, first+m) of v as float32 (x32 points into the mapping
 * when it can) or float64 (into x64). */
void an_chunk(const amp_tensor_view *v, size_t first, size_t m, float *buf32, double *x64, const float **x32);

/* One scan: the signed binade histogram (h, may be NULL; added to) and the
 * largest |x| over non-NaN inputs (*amax, may be NULL). */
amp_status an_scan(const amp_tensor_view *v, an_hist *h, double *amax);

/* The auto scale exponent of f under cast options o (count_rule: auto:count)
 * from the histogram h of v; exact (see amp_analyze.h). */
amp_status an_auto_k(const amp_tensor_view *v, const amp_format *f, const amp_round_opts *o, int count_rule,
                     const an_hist *h, int *k);

#endif
