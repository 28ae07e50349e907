/* The MPFR reference of the rounding core: the oracle of the tests and the
 * slow path behind AMP_EXACT (`--exact`). Same contract as amp_round1 (see
 * amp_round.h); every rounding is done by MPFR, not by ampsim's bit code.
 *
 * How a finite nonzero x is rounded into format f (precision p = mbits + 1):
 *  - formats with subnormals: MPFR's exponent range is set so that its
 *    smallest positive number is the format's min subnormal (emin = emin_f -
 *    mbits + 1 in MPFR's [1/2, 1) convention) and the largest is far above any
 *    double (the exponent is unbounded above: round first, check range after),
 *    then mpfr_set_d + mpfr_check_range + mpfr_subnormalize with the mode;
 *  - formats without subnormals (e8m0): the exponent is unbounded both ways;
 *    a result below min normal becomes min normal (class flushed), as there is
 *    no zero to flush to.
 * rne/rtz/rup/rdn are MPFR's RNDN/RNDZ/RNDU/RNDD (rne of a P3109 format
 * without mantissa bits, whose ties go to the even code, as rna below). rna,
 * rto and sr take both
 * neighbours lo (RNDZ) and hi (RNDA) from MPFR and choose: rna by an exact
 * comparison of 2|x| with |lo| + |hi|, rto the neighbour whose last bit
 * (integer significand at the quantum q = |hi| - |lo|) is odd, sr with exactly
 * amp_round1's draw: K = sr_bits (0 = 64), T = floor(frac * 2^K) with
 * frac = (|x| - |lo|) / q computed exactly, up iff draw < T where draw is the
 * top K bits of amp_rand64(seed, stream, index0 + index). (amp_round1 also
 * clamps K to the number of discarded bits sh; frac has at most sh bits, so
 * floor(frac 2^K) < r>>(64-K)  <=>  the same test with K = sh: no difference.)
 * The overflow policy (inf / NaN / max finite by mode and flags) is the shared
 * amp_round_overflow. The caller's MPFR exponent range is restored; MPFR keeps
 * it per thread (Debian builds MPFR thread-safe), so this is thread-safe. */
#include "round_internal.h"

#include <math.h>
#include <mpfr.h>

/* MPFR exponent of 2^k is k + 1 (significands in [1/2, 1)). */
#define MPFR_EXP_OF_POW2(k) ((mpfr_exp_t)(k) + 1)

static float signed_zero(const amp_format *f, int neg)
{
    return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
}

/* Rounds x (finite, nonzero) into y (precision p) with MPFR mode rnd in the
 * format's exponent range (see the file comment). The caller has set the
 * exponent range. Returns the ternary value. */
static int mpfr_round_fmt(const amp_format *f, mpfr_t y, double x, mpfr_rnd_t rnd)
{
    int t = mpfr_set_d(y, x, rnd);
    if (f->has_subnormals) {
        t = mpfr_check_range(y, t, rnd);
        t = mpfr_subnormalize(y, t, rnd);
    }
    return t;
}

/* The inputs that need no rounding: NaN, inf, zero, a negative input of an
 * unsigned format, a subnormal input under DAZ. Returns 1 and *y, *cls for
 * those, 0 otherwise. */
static int special_input(const amp_format *f, const amp_round_opts *o, double x, int neg, amp_class *cls,
                         float *y)
{
    if (isnan(x)) {
        *cls = AMP_CLS_NAN_IN;
        *y = (float)x;                           /* a quiet float32 NaN */
        return 1;
    }
    if (isinf(x)) {
        *cls = AMP_CLS_INF_IN;
        if (neg && !f->is_signed) { *y = NAN; return 1; }
        if ((o->flags & AMP_SATURATE) || (!f->has_inf && f->nan == AMP_NAN_NONE)) {
            *y = (float)(neg ? -f->max_finite : f->max_finite);
            return 1;
        }
        if (f->has_inf) { *y = neg ? -INFINITY : INFINITY; return 1; }
        *y = NAN;
        return 1;
    }
    if (x == 0) {
        *cls = AMP_CLS_ZERO_IN;
        if (!f->has_subnormals) { *y = NAN; return 1; }   /* e8m0: no zero */
        *y = signed_zero(f, neg);
        return 1;
    }
    if (neg && !f->is_signed) {
        *cls = AMP_CLS_OVERFLOW;
        *y = NAN;
        return 1;
    }
    if ((o->flags & AMP_DAZ) && f->has_subnormals && fabs(x) < f->min_normal) {
        *cls = AMP_CLS_FLUSHED;
        *y = signed_zero(f, neg);
        return 1;
    }
    return 0;
}

float amp_round1_mpfr(const amp_format *f, const amp_round_opts *o, double x, uint64_t index,
                      amp_class *cls_out)
{
    amp_class cls_local;
    amp_class *cls = cls_out ? cls_out : &cls_local;
    int neg = signbit(x) != 0;

    float sy = 0;
    if (special_input(f, o, x, neg, cls, &sy)) return sy;

    const mpfr_prec_t p = f->mbits + 1;
    mpfr_exp_t old_emin = mpfr_get_emin(), old_emax = mpfr_get_emax();
    /* Set emax first to a value >= any emin we set: the range stays valid. */
    int ok = mpfr_set_emax(MPFR_EXP_OF_POW2(4096)) == 0;
    ok &= mpfr_set_emin(f->has_subnormals ? MPFR_EXP_OF_POW2(f->emin - f->mbits) : mpfr_get_emin_min()) == 0;
    AMP_ASSERT(ok);

    mpfr_t y, lo, hi, s, d;
    mpfr_inits2(p, y, lo, hi, (mpfr_ptr)0);
    double r;                                    /* |result|, exact */
    int by_code = amp_round_by_code(f);
    switch (o->mode) {
    case AMP_RND_TZ: mpfr_round_fmt(f, y, x, MPFR_RNDZ); break;
    case AMP_RND_UP: mpfr_round_fmt(f, y, x, MPFR_RNDU); break;
    case AMP_RND_DN: mpfr_round_fmt(f, y, x, MPFR_RNDD); break;
    case AMP_RND_NE:
        if (!by_code) { mpfr_round_fmt(f, y, x, MPFR_RNDN); break; }
        /* ties to the even code, from both neighbours: */
        /* fall through */
    case AMP_RND_NA:
    case AMP_RND_TO:
    case AMP_RND_SR: {
        int t = mpfr_round_fmt(f, lo, x, MPFR_RNDZ);
        mpfr_round_fmt(f, hi, x, MPFR_RNDA);
        if (t == 0) {                            /* exact: both are x */
            mpfr_set(y, lo, MPFR_RNDN);
            break;
        }
        /* exact arithmetic on the neighbours, in the full exponent range */
        mpfr_set_emin(mpfr_get_emin_min());
        mpfr_abs(lo, lo, MPFR_RNDN);
        mpfr_abs(hi, hi, MPFR_RNDN);
        double qd = mpfr_get_d(hi, MPFR_RNDN) - mpfr_get_d(lo, MPFR_RNDN);   /* exact: one quantum */
        double ax = fabs(x);
        int up = 0;
        if (o->mode == AMP_RND_NA || o->mode == AMP_RND_NE) {
            mpfr_inits2(p + 2, s, (mpfr_ptr)0);
            AMP_ASSERT(mpfr_add(s, lo, hi, MPFR_RNDN) == 0);
            mpfr_init2(d, 64);
            mpfr_set_d(d, ax, MPFR_RNDN);
            mpfr_mul_2ui(d, d, 1, MPFR_RNDN);    /* 2|x|, exact */
            int c = mpfr_cmp(d, s);
            up = o->mode == AMP_RND_NA ? c >= 0 : c > 0 || (c == 0 && amp_round_code_odd(f, mpfr_get_d(lo, MPFR_RNDN)));
            mpfr_clears(s, d, (mpfr_ptr)0);
        } else if (o->mode == AMP_RND_TO && by_code) {
            up = !amp_round_code_odd(f, mpfr_get_d(lo, MPFR_RNDN));   /* lo's code even: take hi */
        } else if (o->mode == AMP_RND_TO) {
            double k = mpfr_get_d(lo, MPFR_RNDN) / qd;   /* integer significand of lo */
            up = fmod(k, 2.0) == 0.0;                     /* lo even: take hi */
        } else {
            int K = o->sr_bits ? o->sr_bits : 64;
            mpfr_init2(d, 2200);                 /* |x| - |lo| spans < 2200 bits: exact */
            AMP_ASSERT(mpfr_set_d(d, ax, MPFR_RNDN) == 0);
            AMP_ASSERT(mpfr_sub(d, d, lo, MPFR_RNDN) == 0);
            AMP_ASSERT(mpfr_div_d(d, d, qd, MPFR_RNDN) == 0);   /* frac in (0, 1); q = 2^j */
            mpfr_mul_2ui(d, d, (unsigned long)K, MPFR_RNDN);
            mpfr_rint_floor(d, d, MPFR_RNDN);
            uint64_t T = (uint64_t)mpfr_get_uj(d, MPFR_RNDN);
            uint64_t draw = amp_rand64(o->seed, o->stream, o->index0 + index);
            if (K < 64) draw >>= 64 - K;
            up = draw < T;
            mpfr_clear(d);
        }
        mpfr_set(y, up ? hi : lo, MPFR_RNDN);
        if (neg) mpfr_neg(y, y, MPFR_RNDN);
        break;
    }
    default:
        AMP_ASSERT(0);
    }
    r = fabs(mpfr_get_d(y, MPFR_RNDN));          /* exact: p <= 24, |y| < 2^1025 */
    mpfr_clears(y, lo, hi, (mpfr_ptr)0);
    mpfr_set_emin(old_emin);
    mpfr_set_emax(old_emax);

    if (r > f->max_finite) return amp_round_overflow(f, o, neg, cls);
    if (r == 0) {
        *cls = AMP_CLS_FLUSHED;
        return signed_zero(f, neg);
    }
    if (r < f->min_normal) {
        if (!f->has_subnormals) {                /* e8m0: no zero to flush to */
            *cls = AMP_CLS_FLUSHED;
            return (float)f->min_normal;
        }
        if (o->flags & AMP_FTZ) {
            *cls = AMP_CLS_FLUSHED;
            return signed_zero(f, neg);
        }
        *cls = AMP_CLS_SUBNORMAL;
    } else {
        *cls = r == fabs(x) ? AMP_CLS_EXACT : AMP_CLS_ROUNDED;
    }
    return neg ? -(float)r : (float)r;
}
