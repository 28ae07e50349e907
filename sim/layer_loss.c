/* Softmax cross-entropy with mean reduction. Every loss runs in FP32 under
 * autocast (both the CUDA and the CPU lists): the logits are widened, the
 * log-sum-exp and the mean are formed in double and rounded once to float, so
 * the loss is within a few float ulps of PyTorch's float32 result.
 * Shapes: logits [B,C], probs [B,C], y [B] with 0 <= y < C. */
#include "amp_math.h"
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_tensor.h"

#include <math.h>

#define XENT_CHUNK 256   /* exponentials per call of amp_exp_n */

amp_status amp_xent_forward(float *loss, float *probs, const amp_tensor *logits, const int32_t *y, int B, int C)
{
    AMP_ASSERT(logits->n == (size_t)B * C);
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *z = logits->data + (size_t)b * C;
        float *p = probs + (size_t)b * C;
        if (y[b] < 0 || y[b] >= C) return amp_fail(AMP_EINVAL, "label %d out of range 0..%d", (int)y[b], C - 1);
        double m = -INFINITY;
        for (int c = 0; c < C; c++) if (z[c] > m) m = z[c];
        double sum = 0.0, e[XENT_CHUNK];
        for (int c0 = 0; c0 < C; c0 += XENT_CHUNK) {
            int k = C - c0 < XENT_CHUNK ? C - c0 : XENT_CHUNK;
            for (int c = 0; c < k; c++) e[c] = (double)z[c0 + c] - m;
            amp_exp_n(e, e, (size_t)k);
            for (int c = 0; c < k; c++) sum += e[c];
        }
        double lse = m + amp_log(sum);
        for (int c0 = 0; c0 < C; c0 += XENT_CHUNK) {
            int k = C - c0 < XENT_CHUNK ? C - c0 : XENT_CHUNK;
            for (int c = 0; c < k; c++) e[c] = (double)z[c0 + c] - lse;
            amp_exp_n(e, e, (size_t)k);
            for (int c = 0; c < k; c++) p[c0 + c] = (float)e[c];
        }
        total += lse - (double)z[y[b]];
    }
    *loss = (float)(total / B);
    return AMP_OK;
}

// dlogits [B,C] = (probs - onehot(y)) * (scale / B), rounded into dlogits->fmt
amp_status amp_xent_backward(amp_ctx *cx, amp_tensor *dlogits, const float *probs, const int32_t *y,
                             int B, int C, float scale)
{
    float *g;
    amp_status s = amp_ctx_scratch(cx, (size_t)B * C, &g);
    if (s) return s;
    float w = scale / (float)B;              /* autograd: grad of mean = scale / B in float32 */
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)b * C + c;
            g[i] = (c == y[b]) ? (probs[i] - 1.0f) * w : probs[i] * w;
        }
    return amp_tensor_accum(cx->reg, dlogits, g);
}
