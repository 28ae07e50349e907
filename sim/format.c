/* The format table, derived figures, name parsing and custom eXmY formats. */
#include "amp_base.h"
#include "amp_format.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static amp_format table[AMP_FMT_COUNT] = {
#define X(id_, name_, bits_, eb, mb, bias_, inf, nan_, nz, sub, sgn, maxf)            \
    [AMP_FMT_##id_] = { .name = name_, .id = AMP_FMT_##id_, .bits = bits_, .ebits = eb, \
                        .mbits = mb, .bias = bias_, .has_inf = inf, .nan = nan_,      \
                        .has_neg_zero = nz, .has_subnormals = sub, .is_signed = sgn,  \
                        .max_finite = maxf },
#include "formats.def"
#undef X
};
static int table_ready;

amp_status amp_format_derive(amp_format *f)
{
    if (f->ebits < 1 || f->ebits > 8 || f->mbits < 0 || f->mbits > 23)
        return amp_fail(AMP_EINVAL, "format %s: exponent bits must be 1..8 and mantissa bits 0..23", f->name);
    if (f->bits != f->is_signed + f->ebits + f->mbits)
        return amp_fail(AMP_EINVAL, "format %s: bits != sign + exponent + mantissa", f->name);
    if (!(f->max_finite > 0) || !isfinite(f->max_finite) || (double)(float)f->max_finite != f->max_finite)
        return amp_fail(AMP_EINVAL, "format %s: max finite is not a finite float32", f->name);
    f->emin = f->has_subnormals ? 1 - f->bias : -f->bias;
    f->emax = ilogb(f->max_finite);
    f->min_normal = ldexp(1.0, f->emin);
    f->min_subnormal = f->has_subnormals ? ldexp(1.0, f->emin - f->mbits) : f->min_normal;
    f->epsilon = ldexp(1.0, -f->mbits);
    if (f->emin - (f->has_subnormals ? f->mbits : 0) < -149 || f->emax > 127 || f->emin > f->emax)
        return amp_fail(AMP_EINVAL, "format %s: range does not fit float32", f->name);
    /* max_finite must be a value of the format: at most mbits+1 significant bits. */
    double m = ldexp(f->max_finite, f->mbits - f->emax);
    if (m != floor(m))
        return amp_fail(AMP_EINVAL, "format %s: max finite has more than %d mantissa bits", f->name, f->mbits);
    return AMP_OK;
}

static void init_table(void)
{
    if (table_ready) return;
    for (int i = 0; i < AMP_FMT_COUNT; i++) {
        amp_status st = amp_format_derive(&table[i]);
        AMP_ASSERT(st == AMP_OK);
    }
    table_ready = 1;
}

const amp_format *amp_format_get(amp_format_id id)
{
    AMP_ASSERT(id >= 0 && id < AMP_FMT_COUNT);
    init_table();
    return &table[id];
}

int amp_format_count(void) { return AMP_FMT_COUNT; }

static const struct { const char *alias; amp_format_id id; } aliases[] = {
    { "float32", AMP_FMT_FP32 }, { "f32", AMP_FMT_FP32 }, { "single", AMP_FMT_FP32 },
    { "float16", AMP_FMT_FP16 }, { "half", AMP_FMT_FP16 }, { "f16", AMP_FMT_FP16 },
    { "bfloat16", AMP_FMT_BF16 }, { "e4m3fn", AMP_FMT_E4M3 }, { "fp8e4m3", AMP_FMT_E4M3 },
    { "float8_e4m3fn", AMP_FMT_E4M3 }, { "fp8e5m2", AMP_FMT_E5M2 }, { "float8_e5m2", AMP_FMT_E5M2 },
    { "float8_e4m3fnuz", AMP_FMT_E4M3FNUZ }, { "float8_e5m2fnuz", AMP_FMT_E5M2FNUZ },
    { "fp6e3m2", AMP_FMT_E3M2 }, { "fp6e2m3", AMP_FMT_E2M3 }, { "fp4", AMP_FMT_E2M1 },
    { "fp4e2m1", AMP_FMT_E2M1 }, { "e8m0fnu", AMP_FMT_E8M0 },
    { "p3109_k8p1se", AMP_FMT_B8P1 }, { "p3109_k8p2se", AMP_FMT_B8P2 }, { "p3109_k8p3se", AMP_FMT_B8P3 },
    { "p3109_k8p4se", AMP_FMT_B8P4 }, { "p3109_k8p5se", AMP_FMT_B8P5 }, { "p3109_k8p6se", AMP_FMT_B8P6 },
    { "p3109_k8p7se", AMP_FMT_B8P7 }, { "p3109_k8p1ue", AMP_FMT_B8P1U }, { "p3109_k8p2ue", AMP_FMT_B8P2U },
    { "p3109_k8p3ue", AMP_FMT_B8P3U }, { "p3109_k8p4ue", AMP_FMT_B8P4U }, { "p3109_k8p5ue", AMP_FMT_B8P5U },
    { "p3109_k8p6ue", AMP_FMT_B8P6U }, { "p3109_k8p7ue", AMP_FMT_B8P7U },
};

/* Custom eXmY (IEEE-like), eXmYfn (OCP-style: no inf, NaN S.1..1.1..1) and
 * eXmYfnuz (bias 2^(X-1), no inf, no -0, NaN 0x80). */
static amp_status parse_custom(const char *name, amp_format *out)
{
    int e, m, n = 0;
    char tail[8] = "";
    /* e<digits>m<digits>[fn|fnuz], nothing else (no signs, blanks or leading zeros) */
    const char *mp = strchr(name, 'm');
    if (name[0] != 'e' || !isdigit((unsigned char)name[1]) || name[1] == '0' || !mp ||
        !isdigit((unsigned char)mp[1]) || (mp[1] == '0' && isdigit((unsigned char)mp[2])) ||
        sscanf(name, "e%dm%d%n", &e, &m, &n) != 2)
        return amp_fail(AMP_EINVAL, "unknown format '%s' (see 'ampsim formats')", name);
    snprintf(tail, sizeof tail, "%s", name + n);
    if (strlen(name + n) >= sizeof tail || (tail[0] && strcmp(tail, "fn") && strcmp(tail, "fnuz")))
        return amp_fail(AMP_EINVAL, "unknown format '%s' (suffix must be none, 'fn' or 'fnuz')", name);
    if (e < 2 || e > 8 || m < 0 || m > 23)
        return amp_fail(AMP_EINVAL, "format '%s': need 2 <= exponent bits <= 8 and 0 <= mantissa bits <= 23", name);
    amp_format f = { .id = AMP_FMT_CUSTOM, .bits = 1 + e + m, .ebits = e, .mbits = m,
                     .has_subnormals = 1, .is_signed = 1 };
    if (strlen(name) >= sizeof f.name) return amp_fail(AMP_EINVAL, "unknown format '%.40s'", name);
    memcpy(f.name, name, strlen(name) + 1);
    int fields = (1 << e) - 1;   /* largest exponent field */
    if (!tail[0]) {              /* IEEE-like: top exponent for inf/NaN */
        if (m < 1) return amp_fail(AMP_EINVAL, "format '%s': IEEE-like formats need a mantissa bit for NaN (try %sfnuz)", name, name);
        f.bias = (1 << (e - 1)) - 1; f.has_inf = 1; f.nan = AMP_NAN_IEEE; f.has_neg_zero = 1;
        f.max_finite = ldexp(2.0 - ldexp(1.0, -m), fields - 1 - f.bias);
    } else if (!strcmp(tail, "fn")) {
        if (m < 1) return amp_fail(AMP_EINVAL, "format '%s': the fn variant needs a mantissa bit", name);
        f.bias = (1 << (e - 1)) - 1; f.has_inf = 0; f.nan = AMP_NAN_ALLONES; f.has_neg_zero = 1;
        f.max_finite = ldexp(2.0 - ldexp(1.0, 1 - m), fields - f.bias);
    } else {
        f.bias = 1 << (e - 1); f.has_inf = 0; f.nan = AMP_NAN_NEGZERO; f.has_neg_zero = 0;
        f.max_finite = ldexp(2.0 - ldexp(1.0, -m), fields - f.bias);
    }
    if (amp_format_derive(&f) != AMP_OK)
        return amp_fail(AMP_EINVAL, "format '%s' does not fit in float32 (its values must be float32 values)", name);
    *out = f;
    return AMP_OK;
}

amp_status amp_format_parse(const char *name, amp_format *out)
{
    char low[32];
    size_t i;
    if (!name || !*name) return amp_fail(AMP_EINVAL, "empty format name");
    for (i = 0; name[i] && i < sizeof low - 1; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = 0;
    if (name[i]) return amp_fail(AMP_EINVAL, "unknown format '%.40s'", name);
    init_table();
    for (int k = 0; k < AMP_FMT_COUNT; k++)
        if (!strcmp(low, table[k].name)) { *out = table[k]; return AMP_OK; }
    for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
        if (!strcmp(low, aliases[k].alias)) { *out = table[aliases[k].id]; return AMP_OK; }
    return parse_custom(low, out);
}

const char *amp_nan_name(amp_nan nan)
{
    switch (nan) {
    case AMP_NAN_NONE: return "none";
    case AMP_NAN_IEEE: return "ieee";
    case AMP_NAN_ALLONES: return "s.1..1.1..1";
    case AMP_NAN_NEGZERO: return "0x80..0";
    case AMP_NAN_E8M0: return "0xff";
    case AMP_NAN_P3109: return "p3109";
    }
    return "?";
}

const char *amp_format_csv_header(void)
{
    return "name,bits,exp_bits,man_bits,bias,max_finite,min_normal,min_subnormal,has_inf,nan";
}

int amp_format_csv_row(const amp_format *f, char *buf, size_t len)
{
    return snprintf(buf, len, "%s,%d,%d,%d,%d,%.9g,%.9g,%.9g,%d,%s", f->name, f->bits, f->ebits,
                    f->mbits, f->bias, f->max_finite, f->min_normal, f->min_subnormal,
                    f->has_inf, amp_nan_name(f->nan));
}

int amp_format_same(const amp_format *a, const amp_format *b)
{
    return !strcmp(a->name, b->name);
}
