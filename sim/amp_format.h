/* ampsim — the format table (sim/formats.def) and custom eXmY formats.
 *
 * A format is data: code switches on traits, never on names. Table rows and
 * parsed custom formats are both `amp_format` values; pass them by pointer. */
#ifndef AMP_FORMAT_H
#define AMP_FORMAT_H

#include "amp_base.h"

typedef enum amp_nan {
    AMP_NAN_NONE,     /* no NaN encoding (FP6, FP4) */
    AMP_NAN_IEEE,     /* exponent all ones, mantissa != 0 */
    AMP_NAN_ALLONES,  /* S.1..1.1..1 only (OCP e4m3 "fn") */
    AMP_NAN_NEGZERO,  /* the -0 pattern 1000..0 only (FNUZ) */
    AMP_NAN_E8M0,     /* 0xFF of the unsigned MX scale format */
    AMP_NAN_P3109,    /* IEEE P3109 binary8: one NaN (0x80 signed, 0xFF unsigned), no -0,
                       * inf at 0x7F/0xFF (signed) or 0xFE (unsigned); with no mantissa
                       * bits (p1) ties go to the even code */
} amp_nan;

typedef enum amp_format_id {
#define X(id, name, bits, eb, mb, bias, inf, nan, nz, sub, sgn, maxf) AMP_FMT_##id,
#include "formats.def"
#undef X
    AMP_FMT_COUNT,
    AMP_FMT_CUSTOM = AMP_FMT_COUNT,
} amp_format_id;

typedef struct amp_format {
    /* stored traits */
    char name[24];
    amp_format_id id;     /* AMP_FMT_CUSTOM for parsed eXmY formats */
    int bits, ebits, mbits, bias;
    int has_inf;
    amp_nan nan;
    int has_neg_zero, has_subnormals, is_signed;
    double max_finite;
    /* derived by amp_format_derive() */
    int emin;             /* exponent of the smallest normal */
    int emax;             /* floor(log2(max_finite)) */
    double min_normal, min_subnormal, epsilon;  /* epsilon = 2^-mbits */
} amp_format;

/* The built-in table row for `id` (derived fields filled). */
AMP_API const amp_format *amp_format_get(amp_format_id id);
/* 1 if a and b are the same format (same name, hence same traits). */
AMP_API int amp_format_same(const amp_format *a, const amp_format *b);
/* Rows in the built-in table (AMP_FMT_COUNT), for bindings that cannot see the
 * enum: amp_format_get accepts 0 .. amp_format_count() - 1. */
AMP_API int amp_format_count(void);

/* Parses a format name: a table name ("fp16", "e4m3", ...), an alias
 * ("e4m3fn", "float16", "half", "bfloat16", "float32", "fp8e5m2"...), or a
 * custom eXmY / eXmYfn / eXmYfnuz. Fills *out. Returns AMP_EINVAL with a message
 * naming the problem for an unknown or impossible format. */
AMP_API amp_status amp_format_parse(const char *name, amp_format *out);

/* Fills the derived fields of a format whose traits are set; AMP_EINVAL if the
 * traits are inconsistent or the format's values are not all float32 values. */
AMP_API amp_status amp_format_derive(amp_format *f);

/* "name,bits,..." header and one CSV row (numbers %.9g) for `ampsim formats`. */
AMP_API const char *amp_format_csv_header(void);
AMP_API int amp_format_csv_row(const amp_format *f, char *buf, size_t len);
/* A short word for the NaN encoding: "ieee", "s.1..1.1..1", "0x80..0", "none", "0xff". */
AMP_API const char *amp_nan_name(amp_nan nan);

#endif
