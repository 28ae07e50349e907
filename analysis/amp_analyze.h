/* ampsim — what each format and scale does to a tensor (`ampsim analyze`).
 *
 * For each tensor x format x scale, the tensor multiplied by the scale is
 * rounded into the format with the cast options of `ampsim round` (rounding
 * mode, saturate, ftz, daz, sr bits and seed; default rne, no flags) and the
 * classification counters of docs/numerics.md are collected in streamed passes
 * (fixed chunks: results do not depend on the thread count or on how the
 * tensor is stored). Block-scaled formats (amp_block.h) take the whole tensor
 * at once and give one row each, with their block-scale statistics.
 *
 * Scaling: a scale is held as a float32 (as the frameworks hold loss and FP8
 * scales). For float16/bfloat16/float32 tensors the product x*s is formed
 * exactly (24 x 24 bits fit in a double) and rounded once into the format, so
 * every row is the correctly rounded image of the exact product, for any
 * scale, with no float32 overflow or underflow in between. For float64
 * tensors the product is formed in double: exact for powers of two (unless it
 * leaves the double range), rounded to double first otherwise.
 *
 * Scale choices (--scales, comma-separated, rows in that order):
 *   S, 2^k         a fixed positive float32 scale
 *   amax[:margin=m][:pow2]   Transformer Engine's current scaling:
 *                  s = float32(max_finite * 2^-m) / float32(amax) in float32,
 *                  rounded down to a power of two with pow2; amax 0 or
 *                  non-finite gives 1, an infinite quotient FLT_MAX
 *   auto           the power of two 2^k, k in -126..127, that, in order:
 *                  (1) minimises the values that leave the range (overflow to
 *                  inf/NaN or saturate), so none does when some k avoids it;
 *                  (2) minimises flushed values; (3) maximises the values whose
 *                  result is normal; (4) minimises |k|, then k
 *   auto:count     the older rule: minimise flushed + overflow + saturated,
 *                  then overflow + saturated, then |k|, then k
 * Both auto rules are exact, not estimates: the classes are monotone in |x|,
 * so a signed per-binade histogram bounds every k's counts, and every k the
 * bounds cannot rule out is counted exactly from class thresholds (found by
 * bisection through the rounding path with the row's cast options). Under sr
 * the thresholds are those of rne (the counts of sr are random); the row's
 * statistics are those of the sr rounding at the chosen k. With a
 * data-dependent scale (auto, amax) and no scale 1 in the list, 1 is added
 * first, so the unscaled row is always there to compare with. */
#ifndef AMP_ANALYZE_H
#define AMP_ANALYZE_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_block.h"

#define AMP_ANALYZE_MAX_FORMATS 32
#define AMP_ANALYZE_MAX_SCALES  32
#define AMP_ANALYZE_KMIN (-126)
#define AMP_ANALYZE_KMAX 127

typedef enum amp_scale_kind {
    AMP_SCALE_FIXED,       /* value */
    AMP_SCALE_AUTO,        /* the default auto rule */
    AMP_SCALE_AUTO_COUNT,  /* auto:count */
    AMP_SCALE_AMAX,        /* amax[:margin=m][:pow2] */
} amp_scale_kind;

typedef struct amp_scale_choice {
    amp_scale_kind kind;
    float value;           /* FIXED: the scale */
    int margin;            /* AMAX: m (-127..127) */
    int pow2;              /* AMAX: round the scale down to a power of two */
    char spec[40];         /* as rows print it: "1", "2^6", "0.5", "auto", "amax:margin=1" */
} amp_scale_choice;

typedef struct amp_analyze_opts {
    int n_formats;
    amp_format formats[AMP_ANALYZE_MAX_FORMATS];
    int is_block[AMP_ANALYZE_MAX_FORMATS];        /* formats[i] unused: blocks[i] */
    amp_block_spec blocks[AMP_ANALYZE_MAX_FORMATS];
    int n_scales;
    amp_scale_choice scales[AMP_ANALYZE_MAX_SCALES];
    amp_round_opts round;  /* cast options of every row (stream = the tensor's index) */
} amp_analyze_opts;

typedef struct amp_analyze_row {
    char tensor[256];
    char format[48];       /* a format name or a block spec */
    char scale_spec[40];   /* the --scales entry ("block" for block formats) */
    char cast[64];         /* the cast options (amp_round_opts_text) */
    float scale;
    int is_auto;           /* an auto or auto:count row */
    double scale_log2;     /* log2(scale), exact for powers of two */
    uint64_t invalid;      /* unsigned formats: negative nonzero finite inputs (not in st.cls[OVERFLOW]) */
    amp_stats st;          /* statistics of the scaled tensor */
    int is_block;
    amp_block_stats bs;    /* block formats: the block-scale statistics */
} amp_analyze_row;

/* Defaults: formats fp16, bf16, e4m3, e5m2; scales {1}; rne, no flags. */
AMP_API void amp_analyze_defaults(amp_analyze_opts *o);
/* The cast options of every row (mode, flags, sr bits and seed); AMP_EINVAL
 * for options amp_round_f32 would refuse. */
AMP_API amp_status amp_analyze_set_cast(amp_analyze_opts *o, const amp_round_opts *ro);
/* rows[i] as a CSV line (amp_analyze_csv_row) into buf, and its numeric
 * columns into nums (AMP_ANALYZE_NUMS doubles; may be NULL); returns the
 * line's length (>= len: cut). For bindings that keep the rows opaque. */
AMP_API size_t amp_analyze_row_at(const amp_analyze_row *rows, size_t i, char *buf, size_t len, double *nums);
/* "fp16,e4m3,e3m4fn,mx:e2m1,nvfp4": replaces the format list (block specs
 * as amp_block_parse reads them). AMP_EINVAL naming a bad entry. */
AMP_API amp_status amp_analyze_parse_formats(const char *list, amp_analyze_opts *o);
/* "auto", "1,2^10", "auto:count,0.5", "amax:margin=1:pow2": replaces the
 * scales (see above). AMP_EINVAL naming a bad entry. */
AMP_API amp_status amp_analyze_parse_scales(const char *list, amp_analyze_opts *o);

/* Analyses one tensor: appends its rows to *rows (realloc'ed; start with
 * NULL / 0), format-major, the scales in list order; a block format gives one
 * row. */
AMP_API amp_status amp_analyze_view(const amp_tensor_view *v, const amp_analyze_opts *o, amp_analyze_row **rows,
                                    size_t *n_rows);

/* lost = flushed + overflow + saturated + invalid. */
AMP_API uint64_t amp_analyze_lost(const amp_analyze_row *r);
/* lost / nonzero finite inputs (0 if none). */
AMP_API double amp_analyze_lost_frac(const amp_analyze_row *r);
/* RMS relative error over the nonzero finite inputs whose result is finite
 * (amp_stats_rel_err): the column rel_err_finite. */
AMP_API double amp_analyze_rel_err_finite(const amp_analyze_row *r);
/* RMS relative error over every nonzero finite input, a value that overflows
 * to inf/NaN or is invalid counting 1 (a value flushed to 0 has error 1 by
 * itself; a saturated one its own error). */
AMP_API double amp_analyze_rel_err_all(const amp_analyze_row *r);

/* The CSV header (see docs/fp8.md for the columns) and one row (numbers
 * %.9g; a tensor name with ',' or '"' is quoted; block columns empty for
 * plain formats). */
AMP_API const char *amp_analyze_csv_header(void);
/* The numeric columns of a row, in header order from "scale" on, as doubles
 * (counts exact below 2^53); the block columns NaN for plain formats. */
#define AMP_ANALYZE_NUMS 24
AMP_API void amp_analyze_row_nums(const amp_analyze_row *r, double v[AMP_ANALYZE_NUMS]);
AMP_API int amp_analyze_csv_row(const amp_analyze_row *r, char *buf, size_t len);

/* sizeof of "amp_analyze_opts", "amp_analyze_row" or "amp_tensor_view", 0 for
 * any other name: for foreign-function bindings to check their struct mirrors. */
AMP_API size_t amp_analyze_abi_size(const char *type);

#endif
