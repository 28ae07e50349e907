/* The layers' context (registry, policy, scratch) and the tensor families that
 * layers and models register: a weight with its gradient, grad32 and FP32
 * master, and how its initial values are stored. */
#include "amp_base.h"
#include "amp_block.h"
#include "amp_format.h"
#include "amp_gemm.h"
#include "amp_layers.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

amp_status amp_ctx_init(amp_ctx *cx, amp_tensors *reg, const amp_policy *pol)
{
    memset(cx, 0, sizeof *cx);
    cx->reg = reg;
    cx->pol = pol;
    cx->gemm = amp_gemm_cfg_of(pol);
    amp_gemm_init();
    return AMP_OK;
}

void amp_ctx_free(amp_ctx *cx)
{
    free(cx->scratch);
    cx->scratch = NULL;
    cx->scratch_n = 0;
}

amp_status amp_ctx_scratch(amp_ctx *cx, size_t n, float **out)
{
    if (n > cx->scratch_n) {
        float *p = realloc(cx->scratch, n * sizeof *p);
        if (!p) return amp_fail(AMP_ENOMEM, "out of memory for %zu scratch values", n);
        cx->scratch = p;
        cx->scratch_n = n;
    }
    *out = cx->scratch;
    return AMP_OK;
}

amp_status amp_ctx_add_weight(amp_ctx *cx, const char *name, const amp_format *wf, const amp_format *gf,
                              int ndim, const size_t *shape, amp_tensor **out)
{
    const amp_policy *p = cx->pol;
    char buf[AMP_TENSOR_NAME + 16];
    amp_tensor *w, *g, *ms;
    amp_status s = amp_tensors_add(cx->reg, name, AMP_ROLE_WEIGHT, wf, ndim, shape, &w);
    if (s) return s;
    w->rnd_flags = wf->bits <= 8 ? p->op_flags : 0;
    if (p->has_master) {
        snprintf(buf, sizeof buf, "%s.master", name);
        if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_MASTER, &p->master, ndim, shape, &ms))) return s;
        w->master = ms;
    }
    snprintf(buf, sizeof buf, "%s.grad", name);
    if ((s = amp_tensors_add(cx->reg, buf, AMP_ROLE_WEIGHT_GRAD, gf, ndim, shape, &g))) return s;
    w->grad = g;
    w->grad32 = calloc(w->n, sizeof(float));
    if (!w->grad32) return amp_fail(AMP_ENOMEM, "out of memory for %s", buf);
    *out = w;
    return AMP_OK;
}

amp_status amp_ctx_set_weight(amp_ctx *cx, amp_tensor *w, const float *v)
{
    amp_round_opts o = amp_tensor_opts(cx->reg, w);
    if (w->master) memcpy(w->master->data, v, w->n * sizeof(float));
    if (w->blk.cols > 0)                     /* block-scaled (NVFP4) weights: rows x last axis */
        return amp_block_round(&w->blk, &o, v, w->data, w->n / w->shape[w->ndim - 1], w->shape[w->ndim - 1], NULL, NULL);
    return amp_round_f32(&w->fmt, &o, v, w->data, w->n, NULL);
}
