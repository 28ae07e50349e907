/* ampsim — the gradient norm's sum of squares for the Python bindings
 * (ampsim.torch), which round with amp_round_f32_nonfinite. */
#include "amp_round.h"

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
