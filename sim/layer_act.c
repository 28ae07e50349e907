/* Elementwise activations under a policy. ReLU is exact in every format: its
 * output keeps the input's format ("runs in the dtype it receives") and its
 * statistics are observed, not rounded. GELU and LayerNorm kernels live in
 * sim/layer_gelu.c / sim/layer_norm.c (amp_layers_gpt.h). */
#include "ampsim.h"

#include <string.h>

// out [n] = max(in, 0); NaN stays NaN (as torch.relu)
amp_status amp_relu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in)
{
    AMP_ASSERT(out->n == in->n);
    for (size_t i = 0; i < in->n; i++) {
        float x = in->data[i];
        out->data[i] = x > 0.0f ? x : (x != x ? x : 0.0f);
    }
    return amp_tensor_observe(cx->reg, out);
}

// din [n] += dout * (out > 0)   (PyTorch's threshold_backward on the output)
amp_status amp_relu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *out)
{
    AMP_ASSERT(din->n == dout->n && out->n == dout->n);
    float *g;
    amp_status s = amp_ctx_scratch(cx, din->n, &g);
    if (s) return s;
    for (size_t i = 0; i < din->n; i++) g[i] = out->data[i] > 0.0f ? dout->data[i] : 0.0f;
    return amp_tensor_accum(cx->reg, din, g);
}
