/* ampsim — block-scaled formats: a tensor cut into blocks, each block with its
 * own scale, the elements rounded into an element format (see docs/fp8.md).
 *
 * One spec syntax:
 *   mx:ELEM[:block=N][:scale=floor|ceil|rne]   OCP MX v1.0: E8M0 scales,
 *       ELEM e4m3, e5m2, e3m2, e2m3, e2m1; blocks of N (default 32) along
 *       the last axis. floor (the spec): X = 2^(floor(log2 amax) - emax_elem);
 *       ceil: the smallest power of two with amax / X <= max_elem;
 *       rne: amax / max_elem rounded to the nearest power of two (E8M0 rne:
 *       from 1.5 * 2^e up). Exponents clamp to E8M0's -127..127.
 *   nvfp4[:2d]   E2M1 elements, an E4M3 scale per 1x16 block (16x16 with :2d)
 *       and a float32 tensor scale from the tensor amax (NVIDIA's recipe).
 *   block:ELEM:1xN|MxN   FP32 scales amax / max_elem per block (DeepSeek-V3:
 *       block:e4m3:1x128 activations, block:e4m3:128x128 weights).
 * Blocks run over a tensor seen as R rows x C columns (C the last axis, R the
 * product of the others); the last block of a row or column may be short.
 * Elements are rounded with the caller's mode (sr keyed by the element's
 * index) and always saturate (the specs clamp); the results are float32
 * values: element x scale (x scales for nvfp4). */
#ifndef AMP_BLOCK_H
#define AMP_BLOCK_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

typedef enum amp_block_kind { AMP_BLK_MX, AMP_BLK_NVFP4, AMP_BLK_FP32 } amp_block_kind;
typedef enum amp_mx_rule { AMP_MX_FLOOR, AMP_MX_CEIL, AMP_MX_RNE } amp_mx_rule;

typedef struct amp_block_spec {
    char name[48];         /* canonical text, e.g. "mx:e4m3:block=32:scale=floor" */
    amp_block_kind kind;
    amp_format elem;       /* element format */
    int rows, cols;        /* block shape: rows x cols (rows 1: along the last axis) */
    amp_mx_rule rule;      /* MX only */
} amp_block_spec;

/* Scale exponents floor(log2 scale) are histogrammed over -160..159. */
#define AMP_BLOCK_EXP_LO   (-160)
#define AMP_BLOCK_EXP_BINS 320

typedef struct amp_block_stats {
    uint64_t blocks;       /* blocks rounded */
    uint64_t scale_hi;     /* blocks whose scale hit its format's top (E8M0 2^127, E4M3 448 saturated) */
    uint64_t scale_lo;     /* blocks with a nonzero finite amax whose scale hit its format's bottom
                            * (E8M0 2^-127, E4M3 subnormal or 0) */
    uint64_t amax_sat;     /* blocks whose largest element saturated at max_elem (amax/scale > max_elem) */
    uint64_t nan_blocks;   /* blocks holding a NaN or inf (every element NaN) */
    uint64_t zero_blocks;  /* blocks of zeros only */
    float tensor_scale;    /* nvfp4: the float32 decode scale amax / (6 * 448); else 1 */
    uint64_t exp_hist[AMP_BLOCK_EXP_BINS];   /* floor(log2 scale) of the finite nonzero scales */
} amp_block_stats;

/* 1 if s starts like a block spec ("mx:", "nvfp4", "block:"). */
AMP_API int amp_block_is_spec(const char *s);
/* Parses a spec (case-insensitive); AMP_EINVAL naming the problem. */
AMP_API amp_status amp_block_parse(const char *s, amp_block_spec *out);

/* Rounds the R x C float32 matrix x (row-major) into the block format,
 * writing the dequantised values to y (may alias x). Element statistics (the
 * class of each element's cast, errors against x) are added to *st and the
 * block statistics to *bs (either may be NULL; *bs is added to, initialise it
 * with amp_block_stats_init). AMP_EINVAL for bad options, AMP_ENOMEM. */
AMP_API amp_status amp_block_round(const amp_block_spec *b, const amp_round_opts *o, const float *x, float *y,
                                   size_t R, size_t C, amp_stats *st, amp_block_stats *bs);
AMP_API void amp_block_stats_init(amp_block_stats *bs);

/* amp_round_file for a block format (sim/block_file.c): one tensor of `in`
 * (`tensor` names it in a multi-tensor file; NULL: the only one), seen as
 * rows x last axis, rounded and written to `out` (.npy with the tensor's
 * shape, or raw .f32) atomically. float64 input is rounded to float32 (rne)
 * first. Statistics are added to *st and *bs (either may be NULL). */
AMP_API amp_status amp_block_round_file(const char *in, const char *tensor, const char *out, const amp_block_spec *b,
                                        const amp_round_opts *o, amp_stats *st, amp_block_stats *bs);
/* The median of floor(log2 scale) over the blocks (0 if none), and min/max. */
AMP_API void amp_block_exp_summary(const amp_block_stats *bs, int *lo, int *median, int *hi);

#endif
