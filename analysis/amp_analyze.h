/* ampsim — what each format and scale does to a tensor (`ampsim analyze`).
 *
 * For each tensor x format x scale, the tensor multiplied by the scale is
 * rounded into the format (rne, no flags) and the classification counters of
 * docs/numerics.md are collected in one streamed pass (fixed chunks: results do not
 * depend on the thread count or on how the tensor is stored).
 *
 * Scaling: a scale is held as a float32 (as the frameworks hold loss and FP8
 * scales). For float16/bfloat16/float32 tensors the product x*s is formed
 * exactly (24 x 24 bits fit in a double) and rounded once into the format, so
 * every row is the correctly rounded image of the exact product, for any
 * scale, with no float32 overflow or underflow in between. For float64
 * tensors the product is formed in double: exact for powers of two (unless it
 * leaves the double range), rounded to double first otherwise.
 *
 * Auto scale: per tensor and format, the power-of-two scale 2^k (k in
 * -126..127) that minimises the values that lose their magnitude,
 * flushed + overflow + saturated (formats without inf or NaN saturate instead
 * of overflowing, and count the same way), ties toward fewer overflow +
 * saturated, then toward smaller |k|, then toward the smaller k. It is found
 * from a signed per-binade histogram of the tensor (lower and upper bounds of
 * both counts for every k, from the class of each binade's end points), and
 * every k that the bounds cannot rule out is then rounded for real, so the
 * choice is exact, not an estimate. */
#ifndef AMP_ANALYZE_H
#define AMP_ANALYZE_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"

#define AMP_ANALYZE_MAX_FORMATS 32
#define AMP_ANALYZE_MAX_SCALES  32
#define AMP_ANALYZE_KMIN (-126)
#define AMP_ANALYZE_KMAX 127

typedef struct amp_analyze_opts {
    int n_formats;
    amp_format formats[AMP_ANALYZE_MAX_FORMATS];
    int n_scales;
    float scales[AMP_ANALYZE_MAX_SCALES];  /* positive, finite; in row order */
    int auto_scale;                        /* add an auto row after each scale-1 row */
} amp_analyze_opts;

typedef struct amp_analyze_row {
    char tensor[256];
    char format[24];
    float scale;
    int is_auto;          /* the auto-scale row */
    int scale_log2;       /* auto rows: scale = 2^scale_log2 */
    amp_stats st;         /* statistics of the scaled tensor */
} amp_analyze_row;

/* Defaults: formats fp16, bf16, e4m3, e5m2; scales {1}; no auto. */
AMP_API void amp_analyze_defaults(amp_analyze_opts *o);
/* "fp16,e4m3,e3m4fn": replaces the format list. AMP_EINVAL naming a bad entry. */
AMP_API amp_status amp_analyze_parse_formats(const char *list, amp_analyze_opts *o);
/* "auto", "1,1024", "auto,0.5": replaces the scales; with auto, 1 is added
 * (first) if missing, so the auto row sits beside the unscaled one. */
AMP_API amp_status amp_analyze_parse_scales(const char *list, amp_analyze_opts *o);

/* Analyses one tensor: appends its rows to *rows (realloc'ed; start with
 * NULL / 0), format-major, the scales in order, each auto row right after the
 * scale-1 row of its format. */
AMP_API amp_status amp_analyze_view(const amp_tensor_view *v, const amp_analyze_opts *o, amp_analyze_row **rows,
                                    size_t *n_rows);

/* flushed + overflow + saturated: what the auto scale minimises. */
AMP_API uint64_t amp_analyze_lost(const amp_stats *st);

/* "tensor,format,scale,n,zero_in,flushed,subnormal,saturated,overflow,nan,
 *  amax,amin_nonzero,rel_err,in_normal_range"; nan counts NaN inputs. */
AMP_API const char *amp_analyze_csv_header(void);
/* One CSV row (numbers %.9g; a tensor name with ',' or '"' is quoted). */
AMP_API int amp_analyze_csv_row(const amp_analyze_row *r, char *buf, size_t len);

/* sizeof of "amp_analyze_opts", "amp_analyze_row" or "amp_tensor_view", 0 for
 * any other name: for foreign-function bindings to check their struct mirrors. */
AMP_API size_t amp_analyze_abi_size(const char *type);

#endif
