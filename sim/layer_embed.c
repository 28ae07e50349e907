/* Token + position embedding (GPT-2 / nanoGPT: wte and wpe). */
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_round.h"

/* out (B,T,C) = wte (V,C)[tok (B,T)] + wpe (maxT,C)[t]. */
void amp_embed_forward(float *out, const int32_t *tok, const float *wte,
                       const float *wpe, size_t B, size_t T, size_t C, size_t V)
{
    #pragma omp parallel for schedule(static) if (B * T * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t bt = 0; bt < B * T; bt++) {
        size_t t = bt % T;
        int32_t ix = tok[bt];
        AMP_ASSERT(ix >= 0 && (size_t)ix < V);
        const float *we = wte + (size_t)ix * C, *pe = wpe + t * C;
        float *o = out + bt * C;
        for (size_t c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
}

/* dwte (V,C) += dout (B,T,C) scattered by tok (B,T); dwpe (T,C) += dout summed
 * over b. Float32 accumulation in the fixed order b = 0.., t = 0.. for each
 * channel; the channels are split over threads, so any thread count gives the
 * same bytes. */
void amp_embed_backward(float *dwte, float *dwpe, const float *dout,
                        const int32_t *tok, size_t B, size_t T, size_t C, size_t V)
{
    #pragma omp parallel for schedule(static) if (B * T * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c = 0; c < C; c++) {
        for (size_t bt = 0; bt < B * T; bt++) {
            int32_t ix = tok[bt];
            AMP_ASSERT(ix >= 0 && (size_t)ix < V);
            float g = dout[bt * C + c];
            dwte[(size_t)ix * C + c] += g;
            dwpe[(bt % T) * C + c] += g;
        }
    }
}
