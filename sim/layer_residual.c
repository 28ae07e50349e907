/* Residual add: x + f(x). */
#include "amp_layers.h"
#include "amp_round.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define RES_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define RES_CLONES
#endif
#define RES_BLOCK 4096

/* out (m) = a + b, counting inf and NaN sums (groups of 16 through locals:
 * a trip count the -O2 vectoriser takes, whatever the overlap). */
RES_CLONES static uint32_t add_block(float *out, const float *a, const float *b, size_t m)
{
    uint32_t bad = 0;
    size_t i = 0;
    for (; i + 16 <= m; i += 16) {
        float ta[16], tb[16], to[16];
        memcpy(ta, a + i, sizeof ta);
        memcpy(tb, b + i, sizeof tb);
        for (int j = 0; j < 16; j++) {
            uint32_t u;
            to[j] = ta[j] + tb[j];
            memcpy(&u, &to[j], sizeof u);
            bad += (u & 0x7f800000u) == 0x7f800000u;
        }
        memcpy(out + i, to, sizeof to);
    }
    size_t i0 = i;
    for (; i < m; i++) out[i] = a[i] + b[i];
    return bad + (uint32_t)amp_count_nonfinite(out + i0, m - i0);
}

/* out (n) = a + b, one float32 rounding per element. */
size_t amp_residual_forward(float *out, const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    #pragma omp parallel for schedule(static) reduction(+:bad) if (n >= 4 * AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i += RES_BLOCK)
        bad += add_block(out + i, a + i, b + i, n - i < RES_BLOCK ? n - i : RES_BLOCK);
    return bad;
}

/* da (n) += dout, db (n) += dout. da and db may be the same buffer (then it
 * receives 2 dout), but neither may alias dout. */
void amp_residual_backward(float *da, float *db, const float *dout, size_t n)
{
    #pragma omp parallel for schedule(static) if (n >= 4 * AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t i = 0; i < n; i++) { da[i] += dout[i]; db[i] += dout[i]; }
}
