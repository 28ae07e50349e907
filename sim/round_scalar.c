/* The rounding core's reference path: one double input at a time, every mode
 * and option, with its class; and the names and checks of the options. The
 * fast float32 kernels (round_fast.c) are checked bit for bit against it and
 * against the MPFR reference (tests/check_round.c). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "round_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the generic exact path ------------------------------------------------
 * x = sig * 2^(e-52) with 2^52 <= sig < 2^53. The quantum of the result is
 * 2^qe, qe = max(e, emin) - mbits (e - mbits for formats without subnormals):
 * the exponent is unbounded above, so rounding happens first and the range is
 * checked after, as OCP / ONNX Cast-19 prescribe. sh = qe - (e - 52) >= 29 is
 * how many low bits of sig are discarded. */
float amp_round1(const amp_format *f, const amp_round_opts *o, double x, uint64_t index, amp_class *cls_out)
{
    amp_class cls;
    float r;
    uint64_t u = amp_d2u(x), a = u & ~(1ULL << 63);
    int neg = (int)(u >> 63);
    if (!cls_out) cls_out = &cls;

    if (o->flags & AMP_EXACT) return amp_round1_mpfr(f, o, x, index, cls_out);
    if (a > 0x7ff0000000000000ULL) {             /* NaN stays NaN (quiet) */
        *cls_out = AMP_CLS_NAN_IN;
        return (float)x;
    }
    if (a == 0x7ff0000000000000ULL) {            /* +-inf */
        *cls_out = AMP_CLS_INF_IN;
        if (!f->is_signed && neg) return NAN;
        if ((o->flags & AMP_SATURATE) || (!f->has_inf && f->nan == AMP_NAN_NONE))
            return (float)(neg ? -f->max_finite : f->max_finite);
        if (f->has_inf) return neg ? -INFINITY : INFINITY;
        return NAN;
    }
    if (a == 0) {
        *cls_out = AMP_CLS_ZERO_IN;
        if (!f->has_subnormals) return NAN;      /* e8m0 has no zero */
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }
    if (!f->is_signed && neg) { *cls_out = AMP_CLS_OVERFLOW; return NAN; }
    if ((o->flags & AMP_DAZ) && f->has_subnormals && fabs(x) < f->min_normal) {
        *cls_out = AMP_CLS_FLUSHED;
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }

    /* decompose |x| = sig * 2^(e-52) */
    int e;
    uint64_t sig;
    if (a >= (1ULL << 52)) {
        e = (int)(a >> 52) - 1023;
        sig = (a & ((1ULL << 52) - 1)) | (1ULL << 52);
    } else {                                      /* double subnormal */
        int lz = __builtin_clzll(a) - 11;         /* shift to put the top bit at 52 */
        sig = a << lz;
        e = -1022 - lz;
    }
    int qe = (f->has_subnormals && e < f->emin ? f->emin : e) - f->mbits;
    int sh = qe - (e - 52);
    AMP_ASSERT(sh >= 29);

    uint64_t kept, rem, half;
    int round_bit, sticky;                        /* bit below the kept ones; any below that */
    if (sh < 64) {
        kept = sig >> sh;
        rem = sig & ((1ULL << sh) - 1);
        half = 1ULL << (sh - 1);
        round_bit = rem >= half;
        sticky = (rem & (half - 1)) != 0;
    } else {
        kept = 0;
        rem = sig;
        round_bit = 0;                            /* sig < 2^53 <= 2^(sh-1) */
        sticky = 1;
    }
    int inexact = round_bit || sticky;
    int up = 0;
    switch (o->mode) {
    case AMP_RND_NE:
        up = round_bit && (sticky || (amp_round_by_code(f) ? amp_round_code_odd(f, ldexp((double)kept, qe)) : (int)(kept & 1)));
        break;
    case AMP_RND_NA: up = round_bit; break;
    case AMP_RND_TZ: break;
    case AMP_RND_UP: up = inexact && !neg; break;
    case AMP_RND_DN: up = inexact && neg; break;
    case AMP_RND_TO:
        if (inexact && amp_round_by_code(f)) up = !amp_round_code_odd(f, ldexp((double)kept, qe));
        else if (inexact) kept |= 1;
        break;
    case AMP_RND_SR:
        if (inexact) {
            /* P(up) = rem / 2^sh, drawn with K random bits: T = floor(rem * 2^(K-sh)),
             * up iff r < T for r uniform in [0, 2^K). Exact when K = sh <= 64. */
            int K = o->sr_bits ? o->sr_bits : 64;
            if (K > sh) K = sh;
            if (K > 64) K = 64;
            int drop = sh - K;
            uint64_t T = drop >= 64 ? 0 : rem >> drop;
            uint64_t draw = amp_rand64(o->seed, o->stream, o->index0 + index);
            draw = K == 64 ? draw : draw >> (64 - K);
            up = draw < T;
        }
        break;
    default: AMP_ASSERT(0);
    }
    kept += (uint64_t)up;
    double mag = ldexp((double)kept, qe);

    if (mag > f->max_finite) return amp_round_overflow(f, o, neg, cls_out);
    if (mag == 0) {
        *cls_out = AMP_CLS_FLUSHED;
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }
    if (mag < f->min_normal) {
        if (!f->has_subnormals) {                 /* e8m0: no zero to flush to */
            *cls_out = AMP_CLS_FLUSHED;
            return (float)f->min_normal;
        }
        if (o->flags & AMP_FTZ) {
            *cls_out = AMP_CLS_FLUSHED;
            return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
        }
        *cls_out = AMP_CLS_SUBNORMAL;
    } else {
        *cls_out = inexact ? AMP_CLS_ROUNDED : AMP_CLS_EXACT;
    }
    r = (float)mag;
    return neg ? -r : r;
}
