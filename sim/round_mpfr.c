/* TEMPORARY (owned by the rounding-tests helper, to be replaced): MPFR reference. */
#include "round_internal.h"

float amp_round1_mpfr(const amp_format *f, const amp_round_opts *o, double x, uint64_t index, amp_class *cls)
{
    amp_round_opts p = *o;
    p.flags &= ~(unsigned)AMP_EXACT;
    return amp_round1(f, &p, x, index, cls);
}
