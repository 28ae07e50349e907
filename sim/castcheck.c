/* Judging another library's casts against ampsim's exact rounding (see
 * amp_castcheck.h for the classes). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_castcheck.h"

#include <math.h>
#include <string.h>

static const char *const mm_names[AMP_MM_COUNT] = {
    "nan", "e8m0", "max_finite", "saturation", "neg_zero", "subnormal", "tie", "rounding", "other",
};
_Static_assert(AMP_MM_COUNT == 9, "mm_names covers every class");

const char *amp_mismatch_name(amp_mismatch m) { return m >= 0 && m < AMP_MM_COUNT ? mm_names[m] : "?"; }

/* The two values of f around |x| (lo <= |x| <= hi, magnitudes), by rtz and
 * round-away through the reference path. */
static void neighbours(const amp_format *f, double x, double *lo, double *hi)
{
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_TZ;
    *lo = fabs(amp_round1(f, &o, fabs(x), 0, NULL));
    o.mode = AMP_RND_UP;
    *hi = fabs(amp_round1(f, &o, fabs(x), 0, NULL));
}

amp_mismatch amp_cast_classify(const amp_format *f, double x, float want, float got, int64_t got_bits)
{
    (void)got_bits;
    if (isnan(x) || (isnan(want) && isnan(got))) return AMP_MM_NAN;
    if (f->nan == AMP_NAN_E8M0) return AMP_MM_E8M0;
    if (isfinite(got) && fabs(got) > f->max_finite) return AMP_MM_MAXFINITE;
    int wf = isfinite(want), gf = isfinite(got);
    if (wf != gf && (fabs(x) > f->max_finite || isinf(x))) return AMP_MM_SATURATION;
    if (want == 0 && got == 0) return AMP_MM_NEGZERO;
    if (!wf || !gf) return AMP_MM_OTHER;
    if (fabs(x) < f->min_normal || (want != 0 && fabs(want) < f->min_normal) || (got != 0 && fabs(got) < f->min_normal))
        return AMP_MM_SUBNORMAL;
    if ((want < 0) != (got < 0)) return AMP_MM_OTHER;
    double lo, hi;
    neighbours(f, x, &lo, &hi);
    double a = fabs(want), b = fabs(got);
    if ((a == lo && b == hi) || (a == hi && b == lo)) return 2 * fabs(x) == lo + hi ? AMP_MM_TIE : AMP_MM_ROUNDING;
    return AMP_MM_OTHER;
}

amp_status amp_cast_check_run(const amp_format *f, const amp_round_opts *o, const double *x, const float *got,
                              const uint32_t *got_bits, size_t n, size_t index0, amp_cast_check *c, int *cls)
{
    amp_status st = amp_round_check_opts(f, o);
    if (st) return st;
    if (got_bits && f->bits > 16) return amp_fail(AMP_EINVAL, "--bits: format %s has %d bits (at most 16)", f->name, f->bits);
    for (size_t i = 0; i < n; i++) {
        float want = amp_round1(f, o, x[i], index0 + i, NULL);
        float g;
        int64_t gb = -1, wb = isnan(want) && f->nan == AMP_NAN_NONE ? -1 : amp_encode1(f, want);
        if (got_bits) {
            if (got_bits[i] >> f->bits)
                return amp_fail(AMP_EINVAL, "pattern 0x%x at index %zu has bits above the %d bits of %s", got_bits[i],
                                index0 + i, f->bits, f->name);
            gb = got_bits[i];
            g = amp_decode1(f, got_bits[i]);
        } else {
            g = got[i];
            gb = isnan(g) && f->nan == AMP_NAN_NONE ? -1 : amp_encode1(f, g);
        }
        c->n++;
        int same = got_bits ? gb == wb : (amp_f2u(g) == amp_f2u(want) || (isnan(g) && isnan(want)));
        if (same) {
            c->agree++;
            if (cls) cls[i] = -1;
            continue;
        }
        amp_mismatch m = amp_cast_classify(f, x[i], want, g, got_bits ? gb : -1);
        c->count[m]++;
        if (cls) cls[i] = (int)m;
        if (c->n_ex[m] < AMP_CAST_EXAMPLES)
            c->ex[m][c->n_ex[m]++] = (amp_cast_example){ index0 + i, x[i], want, g, wb, gb };
    }
    return AMP_OK;
}
