/* Bit patterns of formats of at most 16 bits: encode and decode. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

#include <math.h>
#include <string.h>

float amp_decode1(const amp_format *f, uint32_t bits)
{
    int M = f->mbits, E = f->ebits;
    uint32_t man = bits & ((1u << M) - 1);
    uint32_t field = (bits >> M) & ((1u << E) - 1);
    uint32_t fmax = (1u << E) - 1;
    int neg = f->is_signed && ((bits >> (E + M)) & 1);
    switch (f->nan) {
    case AMP_NAN_IEEE:
        if (field == fmax) return man ? NAN : (neg ? -INFINITY : INFINITY);
        break;
    case AMP_NAN_ALLONES:
        if (field == fmax && man == (1u << M) - 1) return NAN;
        break;
    case AMP_NAN_NEGZERO:
        if (neg && field == 0 && man == 0) return NAN;
        break;
    case AMP_NAN_E8M0:
        if (bits == 0xff) return NAN;
        break;
    case AMP_NAN_P3109: {
        uint32_t top = (1u << (E + M)) - 1;    /* all ones below the sign (signed), or all bits */
        if (f->is_signed ? bits == 1u << (E + M) : bits == top) return NAN;
        if (f->is_signed ? (bits & top) == top : bits == top - 1) return neg ? -INFINITY : INFINITY;
        break;
    }
    case AMP_NAN_NONE:
        break;
    }
    double v;
    if (field == 0 && f->has_subnormals) v = ldexp((double)man, f->emin - M);
    else v = ldexp((double)(man | (1u << M)), (int)field - f->bias - M);
    return (float)(neg ? -v : v);
}

static int64_t nan_pattern(const amp_format *f, int neg)
{
    int M = f->mbits, E = f->ebits;
    uint32_t sign = (uint32_t)neg << (E + M);
    switch (f->nan) {
    case AMP_NAN_IEEE: return sign | (((1u << E) - 1) << M) | (1u << (M - 1));
    case AMP_NAN_ALLONES: return sign | ((1u << (E + M)) - 1);
    case AMP_NAN_NEGZERO: return 1u << (E + M);
    case AMP_NAN_E8M0: return 0xff;
    case AMP_NAN_P3109: return f->is_signed ? 1u << (E + M) : (1u << (E + M)) - 1;
    case AMP_NAN_NONE: return -1;
    }
    return -1;
}

int64_t amp_encode1(const amp_format *f, float x)
{
    int M = f->mbits, E = f->ebits;
    uint32_t u = amp_f2u(x);
    int neg = (int)(u >> 31);
    uint32_t sign = f->is_signed ? (uint32_t)neg << (E + M) : 0;
    if (isnan(x)) return nan_pattern(f, neg && f->is_signed && f->nan == AMP_NAN_IEEE);
    if (neg && !f->is_signed) return -1;
    if (isinf(x) && f->nan == AMP_NAN_P3109)
        return f->is_signed ? (int64_t)(sign | ((1u << (E + M)) - 1)) : (int64_t)((1u << (E + M)) - 2);
    if (isinf(x)) return f->has_inf ? (int64_t)(sign | (((1u << E) - 1) << M)) : -1;
    if (x == 0) {
        if (!f->has_subnormals) return -1;
        return f->has_neg_zero ? sign : 0;
    }
    double a = fabs((double)x);
    if (a > f->max_finite || a < f->min_subnormal) return -1;
    int e = ilogb(a);
    uint32_t field, man;
    if (e < f->emin) {
        double m = ldexp(a, M - f->emin);
        if (m != floor(m)) return -1;
        field = 0;
        man = (uint32_t)m;
    } else {
        double m = ldexp(a, M - e);        /* in [2^M, 2^(M+1)) */
        if (m != floor(m)) return -1;
        field = (uint32_t)(e + f->bias);
        man = (uint32_t)m - (1u << M);
    }
    int64_t bits = sign | (field << M) | man;
    AMP_ASSERT(amp_decode1(f, (uint32_t)bits) == (float)a * (neg ? -1.0f : 1.0f));
    return bits;
}

amp_status amp_encode(const amp_format *f, const float *x, void *out, size_t n)
{
    if (f->bits > 16) return amp_fail(AMP_EINVAL, "format %s has %d bits; encoding needs at most 16", f->name, f->bits);
    for (size_t i = 0; i < n; i++) {
        int64_t b = amp_encode1(f, x[i]);
        if (b < 0)
            return amp_fail(AMP_EINVAL, "value %a at index %zu is not a value of %s%s", (double)x[i], i,
                            f->name, isnan(x[i]) ? " (it has no NaN)" : "");
        if (f->bits <= 8) ((uint8_t *)out)[i] = (uint8_t)b;
        else ((uint16_t *)out)[i] = (uint16_t)b;
    }
    return AMP_OK;
}

amp_status amp_decode(const amp_format *f, const void *in, float *y, size_t n)
{
    if (f->bits > 16) return amp_fail(AMP_EINVAL, "format %s has %d bits; decoding needs at most 16", f->name, f->bits);
    uint32_t mask = f->bits >= 32 ? 0xffffffffu : (1u << f->bits) - 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t b = f->bits <= 8 ? ((const uint8_t *)in)[i] : ((const uint16_t *)in)[i];
        if (b & ~mask)
            return amp_fail(AMP_EINVAL, "pattern 0x%x at index %zu has bits above the %d bits of %s", b, i, f->bits, f->name);
        y[i] = amp_decode1(f, b);
    }
    return AMP_OK;
}
