/* Elementwise activations under a policy. Both keep the input's format
 * ("runs in the dtype it receives", autocast's rule for relu and gelu).
 * ReLU is exact in every format: its statistics are observed, not rounded.
 * GELU (tanh approximation, the kernels of sim/layer_gelu.c) is evaluated
 * in float32 and rounded once into the format, or, under a policy with
 * torch_cpu (bf16-amp-cpu), rounded after every operation as PyTorch's CPU
 * bf16 kernel does.
 * Shapes: any; in, out, din, dout have the same n. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_layers.h"
#include "amp_policy.h"
#include "amp_round.h"
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

static int per_op(const amp_policy *p, const amp_format *f)
{
    return p && p->torch_cpu && f->id != AMP_FMT_FP32 && f->bits < 32;
}

size_t amp_gelu_policy_forward(const amp_policy *p, float *out, const amp_tensor *in)
{
    if (!per_op(p, &in->fmt)) return amp_gelu_forward_counted(out, in->data, in->n);
    amp_gelu_forward_fmt(out, in->data, in->n, &in->fmt);
    return amp_count_nonfinite(out, in->n);
}

size_t amp_gelu_policy_backward(const amp_policy *p, float *dinp, const amp_tensor *in, const amp_tensor *dout)
{
    if (!per_op(p, &dout->fmt) || in->fmt.id != dout->fmt.id)
        return amp_gelu_backward_set(dinp, in->data, dout->data, in->n);
    memset(dinp, 0, in->n * sizeof *dinp);
    amp_gelu_backward_fmt(dinp, in->data, dout->data, in->n, &dout->fmt);
    return amp_count_nonfinite(dinp, in->n);
}

// out [n] = round_fmt(gelu(in))
amp_status amp_act_gelu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in)
{
    AMP_ASSERT(out->n == in->n);
    float *g;
    amp_status s = amp_ctx_scratch(cx, in->n, &g);
    if (s) return s;
    amp_gelu_policy_forward(cx->pol, g, in);
    return amp_tensor_round(cx->reg, out, g);
}

// din [n] += round_fmt(gelu'(in) * dout)
amp_status amp_act_gelu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *in)
{
    AMP_ASSERT(din->n == dout->n && in->n == dout->n);
    float *g;
    amp_status s = amp_ctx_scratch(cx, din->n, &g);
    if (s) return s;
    amp_gelu_policy_backward(cx->pol, g, in, dout);
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
