/* The rounding options: defaults, names, checks, and the overflow rule that
 * every rounding path shares (inf, NaN or max finite by mode and flags). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "round_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const rounding_names[AMP_RND_COUNT] = {
    [AMP_RND_NE] = "rne", [AMP_RND_NA] = "rna", [AMP_RND_TZ] = "rtz", [AMP_RND_UP] = "rup",
    [AMP_RND_DN] = "rdn", [AMP_RND_TO] = "rto", [AMP_RND_SR] = "sr",
};
_Static_assert(AMP_RND_COUNT == 7, "rounding_names covers every mode");

static const char *const class_names[AMP_CLS_COUNT] = {
    "nan_in", "inf_in", "zero_in", "overflow", "saturated", "flushed", "subnormal", "exact", "rounded",
};
_Static_assert(AMP_CLS_COUNT == 9, "class_names covers every class");

amp_round_opts amp_round_defaults(void)
{
    amp_round_opts o = { .mode = AMP_RND_NE };
    return o;
}

const char *amp_rounding_name(amp_rounding m)
{
    return (m >= 0 && m < AMP_RND_COUNT) ? rounding_names[m] : "?";
}

amp_status amp_rounding_parse(const char *s, amp_rounding *out)
{
    for (int m = 0; m < AMP_RND_COUNT; m++)
        if (s && !strcmp(s, rounding_names[m])) { *out = (amp_rounding)m; return AMP_OK; }
    return amp_fail(AMP_EINVAL, "unknown rounding mode '%s' (rne, rna, rtz, rup, rdn, rto, sr)", s ? s : "");
}

int amp_round_code_odd(const amp_format *f, double mag)
{
    return mag != 0 && ((ilogb(mag) + f->bias) & 1);
}

int amp_round_opts_text(const amp_round_opts *o, char *buf, size_t len)
{
    char bits[24] = "", seed[32] = "";
    if (o->mode == AMP_RND_SR) {
        if (o->sr_bits) snprintf(bits, sizeof bits, ":bits=%d", o->sr_bits);
        snprintf(seed, sizeof seed, ":seed=%llu", (unsigned long long)o->seed);
    }
    return snprintf(buf, len, "%s%s%s%s%s%s%s%s", amp_rounding_name(o->mode), (o->flags & AMP_SATURATE) ? ":saturate" : "",
                    (o->flags & AMP_SATPROP) ? ":satprop" : "",
                    (o->flags & AMP_FTZ) ? ":ftz" : "", (o->flags & AMP_DAZ) ? ":daz" : "",
                    (o->flags & AMP_EXACT) ? ":exact" : "", bits, seed);
}

const char *amp_class_name(amp_class c)
{
    return (c >= 0 && c < AMP_CLS_COUNT) ? class_names[c] : "?";
}

amp_status amp_round_check_opts(const amp_format *f, const amp_round_opts *o)
{
    if (!f || !o) return amp_fail(AMP_EINVAL, "null format or options");
    if (o->mode < 0 || o->mode >= AMP_RND_COUNT) return amp_fail(AMP_EINVAL, "bad rounding mode %d", (int)o->mode);
    if (o->sr_bits < 0 || o->sr_bits > 64) return amp_fail(AMP_EINVAL, "--sr-bits must be 1..64 (got %d)", o->sr_bits);
    if (o->flags & ~(unsigned)(AMP_SATURATE | AMP_FTZ | AMP_DAZ | AMP_EXACT | AMP_SATPROP))
        return amp_fail(AMP_EINVAL, "unknown rounding flags 0x%x", o->flags);
    return AMP_OK;
}

/* The overflow rule: a result beyond max finite becomes inf, NaN or +-max
 * finite by the format, the mode (toward zero saturates) and AMP_SATURATE. */
float amp_round_overflow(const amp_format *f, const amp_round_opts *o, int neg, amp_class *cls)
{
    amp_rounding m = o->mode;
    int toward_zero = m == AMP_RND_TZ || m == AMP_RND_TO || (m == AMP_RND_DN && !neg) ||
                      (m == AMP_RND_UP && neg);
    if (!f->is_signed && neg) { *cls = AMP_CLS_OVERFLOW; return NAN; }
    if ((o->flags & (AMP_SATURATE | AMP_SATPROP)) || toward_zero || (!f->has_inf && f->nan == AMP_NAN_NONE)) {
        *cls = AMP_CLS_SATURATED;
        return (float)(neg ? -f->max_finite : f->max_finite);
    }
    *cls = AMP_CLS_OVERFLOW;
    if (f->has_inf) return neg ? -INFINITY : INFINITY;
    return NAN;
}
