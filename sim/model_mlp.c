/* The MLP model (64-H-...-H-10, ReLU between linear layers).
 * Tensor names follow PyTorch's nn.Sequential-free naming used by
 * tests/ref/mlp_torch.py: fc1.weight [H,64], fc1.bias [H], ..., fcL.weight [10,H];
 * activations input, fc1.out, relu1.out (gelu1.out with --act gelu), ...;
 * gradients <name>.grad. */
#include "amp_base.h"
#include "amp_data.h"
#include "amp_layers.h"
#include "amp_model.h"
#include "amp_nvfp4.h"
#include "amp_policy.h"
#include "amp_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MLP_MAX_LAYERS 64

typedef struct mlp {
    int L, C;
    amp_act act;
    amp_tensor *input;              /* [B,D] the batch in the forward operand format */
    amp_linear fc[MLP_MAX_LAYERS];
    amp_tensor *relu[MLP_MAX_LAYERS];
    float *probs;                   /* [B,C] softmax for the loss backward */
} mlp;

static amp_status mlp_forward(amp_model *m, const amp_batch *b, float *loss)
{
    mlp *p = m->impl;
    amp_status s;
    AMP_ASSERT(b->B == m->B && b->x);
    m->reg.phase = AMP_PHASE_FORWARD;
    if ((s = amp_tensor_round(&m->reg, p->input, b->x))) return s;
    for (int l = 0; l < p->L; l++) {
        if ((s = amp_linear_forward(&m->cx, &p->fc[l]))) return s;
        if (l < p->L - 1 && (s = amp_act_forward(&m->cx, p->act, p->relu[l], p->fc[l].out))) return s;
    }
    return amp_xent_forward(loss, p->probs, p->fc[p->L - 1].out, b->y, m->B, p->C);
}

static amp_status mlp_backward(amp_model *m, const amp_batch *b, float loss_scale)
{
    mlp *p = m->impl;
    amp_status s;
    m->reg.phase = AMP_PHASE_BACKWARD;
    s = m->pol.torch_cpu ? amp_xent_backward_torchcpu(&m->cx, p->fc[p->L - 1].out->grad, p->fc[p->L - 1].out, b->y,
                                                      m->B, p->C, loss_scale)
                         : amp_xent_backward(&m->cx, p->fc[p->L - 1].out->grad, p->probs, b->y, m->B, p->C, loss_scale);
    if (s) return s;
    for (int l = p->L - 1; l >= 0; l--) {
        if ((s = amp_linear_backward(&m->cx, &p->fc[l]))) return s;
        if (l > 0 && (s = amp_act_backward(&m->cx, p->act, p->fc[l - 1].out->grad, p->relu[l - 1]->grad,
                                           p->fc[l - 1].out, p->relu[l - 1])))
            return s;
    }
    return AMP_OK;
}

static void mlp_destroy(amp_model *m)
{
    mlp *p = m->impl;
    if (p) free(p->probs);
    free(p);
    m->impl = NULL;
}

amp_status amp_mlp_create(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                          int classes, uint64_t seed)
{
    return amp_mlp_create_act(m, pol, B, in, hidden, layers, classes, seed, AMP_ACT_RELU);
}

amp_status amp_mlp_create_act(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                              int classes, uint64_t seed, amp_act act)
{
    memset(m, 0, sizeof *m);
    if (layers < 1 || layers > MLP_MAX_LAYERS) return amp_fail(AMP_EINVAL, "--layers must be 1..%d", MLP_MAX_LAYERS);
    if (B < 1 || hidden < 1 || in < 1 || classes < 2) return amp_fail(AMP_EINVAL, "bad MLP sizes");
    snprintf(m->kind, sizeof m->kind, "mlp");
    m->pol = *pol;
    m->B = B;
    if (pol->nvfp4) {                        /* NVFP4: the first and last layers are fc1 and fcL */
        char last[16];
        snprintf(last, sizeof last, "fc%d", layers);
        amp_status s0 = amp_nvfp4_resolve(&m->pol, "fc1", last);
        if (s0) return s0;
    }
    amp_tensors_init(&m->reg, seed, pol->mode, pol->sr_bits);
    amp_ctx_init(&m->cx, &m->reg, &m->pol);
    mlp *p = calloc(1, sizeof *p);
    if (!p) return amp_fail(AMP_ENOMEM, "out of memory for the model");
    m->impl = p;
    m->forward = mlp_forward;
    m->backward = mlp_backward;
    m->destroy = mlp_destroy;
    m->layerwise_ok = 1;                     /* linear, act and xent backward set src_gscale */
    p->L = layers;
    p->C = classes;
    p->act = act;
    p->probs = malloc((size_t)B * classes * sizeof(float));
    amp_status s = p->probs ? AMP_OK : amp_fail(AMP_ENOMEM, "out of memory for the model");
    if (!s) s = amp_tensors_add(&m->reg, "input", AMP_ROLE_ACT, &m->pol.fwd_in, 2, (size_t[]){ (size_t)B, (size_t)in }, &p->input);
    if (!s) p->input->rnd_flags = m->pol.op_flags;
    amp_tensor *x = p->input;
    char name[64];
    for (int l = 0; l < layers && !s; l++) {
        snprintf(name, sizeof name, "fc%d", l + 1);
        s = amp_linear_init(&m->cx, &p->fc[l], name, x, l == layers - 1 ? classes : hidden, 1);
        if (s || l == layers - 1) break;
        amp_tensor *r, *g;
        const amp_tensor *o = p->fc[l].out;
        snprintf(name, sizeof name, "%s%d.out", amp_act_name(act), l + 1);
        if ((s = amp_tensors_add(&m->reg, name, AMP_ROLE_ACT, &o->fmt, 2, o->shape, &r))) break;
        snprintf(name, sizeof name, "%s%d.out.grad", amp_act_name(act), l + 1);
        if ((s = amp_tensors_add(&m->reg, name, AMP_ROLE_ACT_GRAD, &o->grad->fmt, 2, o->shape, &g))) break;
        r->grad = g;
        p->relu[l] = x = r;
    }
    /* nn.Linear's default init: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    for (int l = 0; l < layers && !s; l++) {
        amp_tensor *ws[2] = { p->fc[l].w, p->fc[l].b };
        float bound = (float)(1.0 / sqrt((double)p->fc[l].I));
        for (int k = 0; k < 2 && !s; k++) {
            float *v = malloc(ws[k]->n * sizeof(float));
            if (!v) { s = amp_fail(AMP_ENOMEM, "out of memory"); break; }
            /* keyed by the name, not the registry id: the same weights in every policy */
            uint64_t h = amp_tensor_name_key(ws[k]->name);
            for (size_t i = 0; i < ws[k]->n; i++)
                v[i] = (float)(2.0 * amp_rand_uniform(seed, h, i) - 1.0) * bound;
            s = amp_ctx_set_weight(&m->cx, ws[k], v);
            free(v);
        }
    }
    if (s) amp_model_free(m);
    return s;
}

