/* ampsim — the rounding entry point of the Python bindings (ampsim.torch):
 * one foreign call per rounded tensor, with the non-finite count that the
 * emulation checks after every rounding; the gradient norm's sum of squares. */
#include "amp_round.h"

/* y[i] = x[i] rounded into f (options o; statistics added to *st when st is
 * not NULL), as amp_round_f32; then *nonfinite (when not NULL) = the number
 * of NaN and ±inf results. y may alias x. Returns amp_round_f32's status;
 * *nonfinite is left unchanged on error. */
AMP_API amp_status amp_round_f32_count(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                                       size_t n, amp_stats *st, size_t *nonfinite)
{
    amp_status s = amp_round_f32(f, o, x, y, n, st);
    if (s == AMP_OK && nonfinite) *nonfinite = amp_count_nonfinite(y, n);
    return s;
}

/* The sum of squares of n gradient values unscaled by inv, as the training
 * step forms the gradient norm (sim/train.c): each value multiplied by inv
 * in float (none when inv is 1), squared and summed in double, in order. */
AMP_API double amp_sumsq_unscaled_f32(const float *g, size_t n, float inv)
{
    double sq = 0.0;
    for (size_t k = 0; k < n; k++) {
        float v = inv == 1.0f ? g[k] : g[k] * inv;
        sq += (double)v * v;
    }
    return sq;
}
