/* The training step: forward -> zero_grad -> backward -> unscale/check ->
 * update -> scaler update. */
#include "amp_base.h"
#include "amp_data.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAD_ROLES ((1u << AMP_ROLE_WEIGHT_GRAD) | (1u << AMP_ROLE_ACT_GRAD))

float amp_train_step_begin(amp_model *m, amp_scaler *sc, int64_t step, unsigned stats_roles,
                           amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    memset(info, 0, sizeof *info);
    memset(res, 0, sizeof *res);
    float scale = sc ? amp_scaler_scale(sc) : 1.0f;
    if (sc && amp_scaler_needs_stats(sc)) stats_roles |= GRAD_ROLES;
    amp_tensors_begin_step(r, step, stats_roles);
    info->scale = scale;
    info->scale_held = sc ? amp_scaler_held(sc) : 1.0;
    info->scale_kind = sc ? sc->spec.kind : AMP_SCALER_NONE;

    /* gradient scales: the loss scale, or each gradient tensor's own (layer-wise) */
    r->layerwise = sc && amp_scaler_is_layerwise(sc) && m->layerwise_ok;
    r->src_gscale = scale;                   /* the loss gradient is computed times `scale` */
    for (int k = 0; k < r->ngrads; k++)
        r->grads[k]->gscale = r->layerwise ? amp_scaler_tensor_scale(sc, (size_t)k) : scale;
    return scale;
}

amp_status amp_train_step(amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                          int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    amp_status s;
    float scale = amp_train_step_begin(m, sc, step, stats_roles, info, res);

    /* forward (weights cast once from their masters: the cast cache) */
    r->phase = AMP_PHASE_FORWARD;
    if ((s = amp_model_cast_weights(m))) return s;
    if ((s = m->forward(m, b, &info->loss))) return s;
    /* zero_grad: begin_step cleared every 'written' flag, so the first backward
     * write of each gradient is a plain rounding (amp_tensor_accum) */
    if ((s = m->backward(m, b, scale))) return s;
    return amp_train_step_end(m, opt, sc, scale, info, res);
}

/* One gradient value unscaled by inv in float32 (none when inv is 1): the
 * unscaling of amp_train_step_end and amp_sumsq_unscaled_f32. */
static inline float unscale1(float g, float inv) { return inv == 1.0f ? g : g * inv; }

/* The sums of squares of the Python bindings run over SQ_LANES interleaved
 * double partial sums (element k into lane k % SQ_LANES), added in lane order
 * at the end: a fixed order, so the same bits on every machine, and no chain
 * of dependent additions through the whole tensor. */
#define SQ_LANES 8
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define SQ_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default"), optimize("tree-vectorize")))
#else
#define SQ_CLONES
#endif

/* One pass of both over g: each value unscaled, written back when write is
 * set (amp_unscale_sumsq_f32), its square added to its lane, and its being
 * inf or NaN counted into *bad when bad is not NULL. Inlined with constant
 * write and bad, so each caller's loop has only its own work; g is written
 * only when write is set. */
static inline __attribute__((always_inline)) double sq_pass(float *g, int write, size_t n, float inv, size_t *bad)
{
    double l[SQ_LANES] = {0};
    size_t nb = 0, k = 0;
    for (; k + SQ_LANES <= n; k += SQ_LANES)
        for (int j = 0; j < SQ_LANES; j++) {
            float v = unscale1(g[k + j], inv);
            if (write) g[k + j] = v;
            l[j] += (double)v * v;
            if (bad) nb += !isfinite(v);
        }
    for (int j = 0; k < n; k++, j++) {
        float v = unscale1(g[k], inv);
        if (write) g[k] = v;
        l[j] += (double)v * v;
        if (bad) nb += !isfinite(v);
    }
    if (bad) *bad = nb;
    double s = 0.0;
    for (int j = 0; j < SQ_LANES; j++) s += l[j];
    return s;
}

SQ_CLONES double amp_sumsq_unscaled_f32(const float *g, size_t n, float inv)
{
    return sq_pass((float *)g, 0, n, inv, NULL);     /* (read only: write is 0) */
}

SQ_CLONES double amp_unscale_sumsq_f32(float *g, size_t n, float inv, size_t *nonfinite)
{
    size_t bad = 0;
    double sq = sq_pass(g, 1, n, inv, &bad);
    if (nonfinite) *nonfinite = bad;
    return sq;
}

void amp_unscale_sumsq_f32_many(size_t k, float *const *g, const size_t *n, float inv, double *sq,
                                size_t *nonfinite)
{
    for (size_t j = 0; j < k; j++) sq[j] = amp_unscale_sumsq_f32(g[j], n[j], inv, &nonfinite[j]);
}

amp_status amp_train_step_end(amp_model *m, amp_optim *opt, amp_scaler *sc, float scale,
                              amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    amp_status s;
    /* unscale in FP32 and check */
    float inv = sc ? amp_scaler_inv(scale) : 1.0f;
    int found_inf = 0;
    double sq = 0.0;
    size_t ngrads = (size_t)r->ngrads;
    for (int i = 0; i < r->n; i++) {
        amp_tensor *w = r->t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        const float *g = w->grad->data;
        float winv = r->layerwise ? amp_scaler_inv(w->grad->gscale) : inv;
        for (size_t k = 0; k < w->n; k++) {
            float v = unscale1(g[k], winv);
            w->grad32[k] = v;
            found_inf |= !isfinite(v);
            sq += (double)v * v;
        }
    }
    info->grad_norm = sqrt(sq);
    info->nonfinite = r->nonfinite_tensor ? r->nonfinite_count : 0;

    /* the scaler decides whether the step is skipped */
    res->skipped = 0;
    amp_status srun = AMP_OK;
    if (sc) {
        amp_scaler_tensor *ts = calloc(ngrads ? ngrads : 1, sizeof *ts);
        if (!ts) return amp_fail(AMP_ENOMEM, "out of memory");
        for (size_t k = 0; k < ngrads; k++) {
            const amp_tensor *t = r->grads[k];
            ts[k].name = t->name;
            ts[k].is_act = t->role == AMP_ROLE_ACT_GRAD;
            ts[k].fmt = &t->fmt;
            ts[k].st = t->stats_valid ? t->stats : NULL;
            ts[k].scale = r->layerwise ? t->gscale : 0.0f;
        }
        amp_scaler_obs obs = { .found_inf = found_inf, .n_tensors = ngrads, .tensors = ts };
        srun = amp_scaler_update(sc, &obs, res);
        free(ts);
        if (srun && srun != AMP_ERUN) return srun;
    }
    /* --on-nonfinite: a non-finite loss or gradient (and, under stop, a loss
     * scale that collapsed to 0) overrides the scaler's decision */
    int bad = found_inf || !isfinite(info->loss);
    if (bad && opt->on_nonfinite == AMP_NF_SKIP) res->skipped = 1;
    if (!srun && opt->on_nonfinite == AMP_NF_STOP) {
        if (bad) {
            res->skipped = 1;
            srun = amp_fail(AMP_ERUN, "non-finite %s at this step (--on-nonfinite stop)",
                            !isfinite(info->loss) ? "loss" : "weight gradients");
        } else if (sc && !(res->scale_after > 0)) {
            srun = amp_fail(AMP_ERUN, "loss scale collapsed to 0 (--on-nonfinite stop)");
        }
    }
    info->skipped = res->skipped;
    if (!res->skipped && !srun && (s = amp_optim_step(opt, m, &info->vanished))) return s;
    return srun;
}

