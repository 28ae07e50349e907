/* ampsim — the rounding core: float32/float64 arrays to any format, with the
 * classification counters and log2 histogram of docs/numerics.md fused into the pass.
 *
 * Results are float32 values exactly representable in the target format
 * (NaN results are quiet float32 NaNs). Conversion rule (OCP / ONNX Cast-19):
 * round with an unbounded exponent first, then check the range. */
#ifndef AMP_ROUND_H
#define AMP_ROUND_H

#include "amp_base.h"
#include "amp_format.h"

typedef enum amp_rounding {
    AMP_RND_NE,   /* rne: nearest, ties to even (default) */
    AMP_RND_NA,   /* rna: nearest, ties away from zero */
    AMP_RND_TZ,   /* rtz: toward zero */
    AMP_RND_UP,   /* rup: toward +inf */
    AMP_RND_DN,   /* rdn: toward -inf */
    AMP_RND_TO,   /* rto: round to odd (truncate; set the last bit if inexact) */
    AMP_RND_SR,   /* sr : stochastic, P(up) = distance to down / ulp */
    AMP_RND_COUNT
} amp_rounding;

enum {
    AMP_SATURATE = 1u << 0,  /* finite overflow and +-inf go to +-max finite */
    AMP_FTZ      = 1u << 1,  /* subnormal results flush to zero */
    AMP_DAZ      = 1u << 2,  /* inputs below the format's min normal read as zero */
    AMP_EXACT    = 1u << 3,  /* use the MPFR reference path (slow) */
    AMP_SATPROP  = 1u << 4,  /* finite overflow goes to +-max finite, +-inf stays +-inf
                              * (P3109 SatPropagate; AMP_SATURATE is SatFinite) */
};

typedef struct amp_round_opts {
    amp_rounding mode;
    unsigned flags;      /* AMP_SATURATE | AMP_FTZ | AMP_DAZ | AMP_EXACT */
    int sr_bits;         /* sr: random bits used, 1..64; 0 = all discarded bits */
    uint64_t seed;       /* sr: generator key (seed, stream, index0 + i) */
    uint64_t stream;     /* sr: e.g. a tensor id */
    uint64_t index0;     /* sr: index of element 0 (for chunked calls) */
} amp_round_opts;

/* Default options: rne, no flags. */
AMP_API amp_round_opts amp_round_defaults(void);
AMP_API const char *amp_rounding_name(amp_rounding m);
AMP_API amp_status amp_rounding_parse(const char *s, amp_rounding *out);
/* The options as one word, e.g. "rne", "rtz:saturate:ftz", "sr:bits=8:seed=3"
 * (sr always names its seed). Returns what snprintf returns. */
/* AMP_OK if o is valid for f (mode, sr bits, flags), else AMP_EINVAL with a message. */
AMP_API amp_status amp_round_check_opts(const amp_format *f, const amp_round_opts *o);
AMP_API int amp_round_opts_text(const amp_round_opts *o, char *buf, size_t len);

/* Classification: exactly one class per value, the first that applies. */
typedef enum amp_class {
    AMP_CLS_NAN_IN, AMP_CLS_INF_IN, AMP_CLS_ZERO_IN, AMP_CLS_OVERFLOW,
    AMP_CLS_SATURATED, AMP_CLS_FLUSHED, AMP_CLS_SUBNORMAL, AMP_CLS_EXACT,
    AMP_CLS_ROUNDED, AMP_CLS_COUNT
} amp_class;
AMP_API const char *amp_class_name(amp_class c);

/* Histogram of floor(log2|x|) of the *input*, one bin per binade from
 * AMP_HIST_LO to AMP_HIST_LO + AMP_HIST_BINS - 1; binades outside are clamped
 * into the end bins. Zero, inf and NaN inputs are the class counters. */
#define AMP_HIST_LO   (-160)
#define AMP_HIST_BINS 320
/* Relative accuracy of the three error sums of amp_stats. */
#define AMP_STATS_SUM_RTOL 0x1p-18

typedef struct amp_stats {
    uint64_t n;
    uint64_t cls[AMP_CLS_COUNT];
    double amax;           /* max |x| over non-NaN inputs (0 if none) */
    double amin_nonzero;   /* min nonzero finite |x| (+inf if none) */
    double sum_sq_err;     /* sum (y - x)^2 over finite x with finite y */
    double sum_sq;         /* sum x^2 over the same values */
    double sum_rel_sq;     /* sum ((y - x)/x)^2 over nonzero finite x, finite y */
                           /* (each sum within a relative AMP_STATS_SUM_RTOL: the fast
                            * kernels divide and, under rne, square in float32) */
    uint64_t n_rel;        /* how many terms in sum_rel_sq */
    int hist_lo, hist_hi;  /* every hist[b] outside [hist_lo, hist_hi] is 0 (none: lo > hi);
                            * whatever adds to hist widens it */
    uint64_t hist[AMP_HIST_BINS];
} amp_stats;

AMP_API void amp_stats_init(amp_stats *st);
/* The same as amp_stats_init for a st that has been initialised: clears only
 * the histogram bins in use (a training step resets a score of them). */
AMP_API void amp_stats_reset(amp_stats *st);
/* dst += src. Callers combine partial stats in a fixed order (determinism). */
AMP_API void amp_stats_merge(amp_stats *dst, const amp_stats *src);
/* RMS relative error over nonzero finite inputs (0 if none). */
AMP_API double amp_stats_rel_err(const amp_stats *st);
/* Fraction of nonzero finite inputs whose result is a normal number. */
AMP_API double amp_stats_in_normal_range(const amp_stats *st);

/* Rounds n values x[i] into format f, writing float32 results y[i] (y may alias
 * x for the f32 version). If st is non-NULL the statistics of this call are
 * *added* to *st. Deterministic whatever the thread count (fixed chunking).
 * Returns AMP_EINVAL for bad options (message set). */
AMP_API amp_status amp_round_f32(const amp_format *f, const amp_round_opts *o,
                                 const float *x, float *y, size_t n, amp_stats *st);
AMP_API amp_status amp_round_f64(const amp_format *f, const amp_round_opts *o,
                                 const double *x, float *y, size_t n, amp_stats *st);
/* The same, also adding to *nonfinite how many results y[i] are inf or NaN,
 * found in the same pass: the rounding kernels count them block by block
 * while each block is in L1, or tell them from the statistics' class counts
 * (amp_stats_nonfinite; only where those cannot tell, a format whose two
 * infinities round one to a finite value and one not, is y looked at again). */
AMP_API amp_status amp_round_f32_nonfinite(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                                           size_t n, amp_stats *st, size_t *nonfinite);
AMP_API amp_status amp_round_f64_nonfinite(const amp_format *f, const amp_round_opts *o, const double *x, float *y,
                                           size_t n, amp_stats *st, size_t *nonfinite);

/* k roundings in one call (a step's weight casts): for each j < k, x[j][0..n[j])
 * into f[j] with o[j], results to y[j] (may alias x[j]), nonfinite[j] set to
 * how many results are inf or NaN; no statistics. The same bytes and counts
 * as k calls of amp_round_f32_nonfinite, in order; stops at the first
 * failure and returns it (message set). */
AMP_API amp_status amp_round_f32_many(size_t k, const amp_format *const *f, const amp_round_opts *const *o,
                                      const float *const *x, float *const *y, const size_t *n, size_t *nonfinite);

/* The hand-written SIMD paths of the rounding kernels: GENERIC is the
 * compiler-vectorised C alone; AVX512 adds the fused rne scan and error sums
 * in AVX-512 intrinsics; GFNI adds the GFNI histogram. Every path gives the
 * same bits (the tests run each). amp_set_simd caps the paths used
 * (AMP_SIMD_AUTO: what the machine has); amp_simd_active says which is used. */
typedef enum { AMP_SIMD_AUTO = -1, AMP_SIMD_GENERIC, AMP_SIMD_AVX512, AMP_SIMD_GFNI } amp_simd;
AMP_API void amp_set_simd(amp_simd cap);
AMP_API amp_simd amp_simd_active(void);
AMP_API const char *amp_simd_name(amp_simd s);
/* "auto", "generic", "avx512" or "gfni"; AMP_EINVAL (message set) otherwise. */
AMP_API amp_status amp_simd_parse(const char *s, amp_simd *out);

/* How many results of a rounding with class counts cls[] (a difference of two
 * amp_stats) are inf or NaN: the NaN inputs, the overflows, and the inf inputs
 * when the format has no finite result for them. -1 if the two infinities
 * round one to a finite value and one not (then count the results). */
AMP_API int64_t amp_stats_nonfinite(const amp_format *f, const amp_round_opts *o, const uint64_t *cls);
/* How many of x[0..n) are inf or NaN. */
AMP_API size_t amp_count_nonfinite(const float *x, size_t n);

/* One value, generic exact path (any double input). `index` keys sr.
 * *cls (if non-NULL) receives the class. */
AMP_API float amp_round1(const amp_format *f, const amp_round_opts *o, double x,
                         uint64_t index, amp_class *cls);

/* The MPFR reference for the same conversion: the oracle of the tests and the
 * path behind AMP_EXACT. Same contract as amp_round1 (sr uses the same random
 * draw, so results agree bit for bit). */
AMP_API float amp_round1_mpfr(const amp_format *f, const amp_round_opts *o, double x,
                              uint64_t index, amp_class *cls);

/* Bit patterns, for formats of at most 16 bits (one uint8 per value for
 * bits <= 8, else uint16; FP6/FP4 in the low bits of a byte).
 * encode: x must hold values of the format (as amp_round produces); a value
 * that is not, or NaN in a format without NaN, is AMP_EINVAL naming index.
 * decode: every pattern is accepted; bits above f->bits must be zero. */
AMP_API amp_status amp_encode(const amp_format *f, const float *x, void *out, size_t n);
AMP_API amp_status amp_decode(const amp_format *f, const void *in, float *y, size_t n);
/* Scalar forms. amp_encode1 returns -1 if x is not a value of the format. */
AMP_API int64_t amp_encode1(const amp_format *f, float x);
AMP_API float amp_decode1(const amp_format *f, uint32_t bits);

/* sizeof of a public type by name ("amp_format", "amp_round_opts",
 * "amp_stats"), 0 for any other name: lets foreign-function bindings check
 * their mirrors of these structs against the library they load. */
AMP_API size_t amp_round_abi_size(const char *type);

/* Threads used by array kernels (OpenMP); 0 = the OpenMP default. */
AMP_API void amp_set_threads(int n);
AMP_API int amp_get_threads(void);

#endif
