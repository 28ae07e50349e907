/* Elementwise activations under a policy. Both keep the input's format
 * ("runs in the dtype it receives", autocast's rule for relu and gelu).
 * ReLU is exact in every format: its statistics are observed, not rounded.
 * GELU (tanh approximation, the float kernels of sim/layer_gelu.c) is
 * evaluated in double, rounded to float and then once into the format.
 * Shapes: any; in, out, din, dout have the same n. */
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_tensor.h"

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
    cx->reg->src_gscale = dout->gscale;
    return amp_tensor_accum(cx->reg, din, g);
}

// out [n] = round_fmt(gelu(in))
amp_status amp_act_gelu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in)
{
    AMP_ASSERT(out->n == in->n);
    float *g;
    amp_status s = amp_ctx_scratch(cx, in->n, &g);
    if (s) return s;
    amp_gelu_forward(g, in->data, in->n);
    return amp_tensor_round(cx->reg, out, g);
}

// din [n] += round_fmt(gelu'(in) * dout)
amp_status amp_act_gelu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *in)
{
    AMP_ASSERT(din->n == dout->n && in->n == dout->n);
    float *g;
    amp_status s = amp_ctx_scratch(cx, din->n, &g);
    if (s) return s;
    memset(g, 0, din->n * sizeof *g);
    amp_gelu_backward(g, in->data, dout->data, din->n);
    cx->reg->src_gscale = dout->gscale;
    return amp_tensor_accum(cx->reg, din, g);
}

amp_status amp_act_parse(const char *name, amp_act *out)
{
    if (!strcmp(name, "relu")) *out = AMP_ACT_RELU;
    else if (!strcmp(name, "gelu")) *out = AMP_ACT_GELU;
    else return amp_fail(AMP_EINVAL, "unknown activation '%s' (relu, gelu)", name);
    return AMP_OK;
}

const char *amp_act_name(amp_act a) { return a == AMP_ACT_GELU ? "gelu" : "relu"; }

amp_status amp_act_forward(amp_ctx *cx, amp_act a, amp_tensor *out, const amp_tensor *in)
{
    return a == AMP_ACT_GELU ? amp_act_gelu_forward(cx, out, in) : amp_relu_forward(cx, out, in);
}

amp_status amp_act_backward(amp_ctx *cx, amp_act a, amp_tensor *din, const amp_tensor *dout,
                            const amp_tensor *in, const amp_tensor *out)
{
    return a == AMP_ACT_GELU ? amp_act_gelu_backward(cx, din, dout, in) : amp_relu_backward(cx, din, dout, out);
}
