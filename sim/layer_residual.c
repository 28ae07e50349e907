/* Residual add: x + f(x). */
#include "amp_layers.h"
#include "amp_round.h"

/* out (n) = a + b, one float32 rounding per element. */
void amp_residual_forward(float *out, const float *a, const float *b, size_t n)
{
    #pragma omp parallel for schedule(static) if (n >= 4 * AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* da (n) += dout, db (n) += dout. da and db may be the same buffer (then it
 * receives 2 dout), but neither may alias dout. */
void amp_residual_backward(float *da, float *db, const float *dout, size_t n)
{
    #pragma omp parallel for schedule(static) if (n >= 4 * AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i++) { da[i] += dout[i]; db[i] += dout[i]; }
}
