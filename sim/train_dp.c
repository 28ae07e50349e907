/* Emulated data parallelism (`ampsim train --dp R`): R micro-batches through
 * one model, per-rank weight gradients, amp_allreduce in the chosen format and
 * algorithm, then the single-process unscale/scaler/optimizer path. The rules
 * (row split, loss, statistics, SR keys) are in sim/amp_train_dp.h. */
#include "amp_base.h"
#include "amp_allreduce.h"
#include "amp_data.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_round.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct amp_dp {
    int R;
    amp_allreduce_opts ao;
    int nw;                       /* weights with a gradient, registry order */
    amp_tensor **w;
    float **g;                    /* g[k * R + r]: rank r's gradient of weight k */
    amp_tensors ar;               /* "<grad>.allreduce" pseudo-tensors, one per weight */
    amp_allreduce_info *info;     /* this step's reduction of weight k */
};

void amp_dp_free(amp_dp *dp)
{
    if (!dp) return;
    if (dp->g)
        for (int i = 0; i < dp->nw * dp->R; i++) free(dp->g[i]);
    free(dp->g);
    free(dp->w);
    free(dp->info);
    amp_tensors_free(&dp->ar);
    free(dp);
}

amp_status amp_dp_create(amp_dp **out, amp_model *m, int R, const amp_allreduce_opts *ao)
{
    *out = NULL;
    if (R < 2) return amp_fail(AMP_EINVAL, "--dp: the data-parallel step needs at least 2 ranks");
    amp_dp *dp = calloc(1, sizeof *dp);
    if (!dp) return amp_fail(AMP_ENOMEM, "out of memory");
    dp->R = R;
    dp->ao = *ao;
    dp->ao.average = 1;
    amp_tensors_init(&dp->ar, 0, AMP_RND_NE, 0);
    const amp_tensors *r = &m->reg;
    for (int i = 0; i < r->n; i++) dp->nw += r->t[i]->role == AMP_ROLE_WEIGHT && r->t[i]->grad;
    amp_status s = AMP_OK;
    dp->w = calloc((size_t)dp->nw + 1, sizeof *dp->w);
    dp->g = calloc((size_t)dp->nw * (size_t)R + 1, sizeof *dp->g);
    dp->info = calloc((size_t)dp->nw + 1, sizeof *dp->info);
    if (!dp->w || !dp->g || !dp->info) s = amp_fail(AMP_ENOMEM, "out of memory");
    for (int i = 0, k = 0; i < r->n && !s; i++) {
        amp_tensor *w = r->t[i];
        if (w->role != AMP_ROLE_WEIGHT || !w->grad) continue;
        dp->w[k] = w;
        for (int q = 0; q < R && !s; q++)
            if (!(dp->g[k * R + q] = malloc(w->n * sizeof(float))))
                s = amp_fail(AMP_ENOMEM, "out of memory for the gradients of %d ranks", R);
        char name[AMP_TENSOR_NAME + 16];
        snprintf(name, sizeof name, "%s.allreduce", w->grad->name);
        amp_tensor *t = NULL;
        if (!s) s = amp_tensors_add(&dp->ar, name, AMP_ROLE_WEIGHT_GRAD, &dp->ao.fmt, w->grad->ndim, w->grad->shape, &t);
        if (!s && !(t->stats = malloc(sizeof *t->stats))) s = amp_fail(AMP_ENOMEM, "out of memory");
        k++;
    }
    if (s) { amp_dp_free(dp); return s; }
    *out = dp;
    return AMP_OK;
}

/* Rank rr's rows of the global batch b (Br rows each, contiguous). */
static amp_batch micro_batch(const amp_batch *b, int rr, int Br)
{
    amp_batch mb = *b;
    size_t off = (size_t)rr * (size_t)Br;
    mb.B = Br;
    if (b->x) mb.x = b->x + off * (size_t)b->D;
    if (b->tok) {                            /* token model: [B,D] tokens and targets */
        mb.tok = b->tok + off * (size_t)b->D;
        mb.y = b->y + off * (size_t)b->D;
    } else {
        mb.y = b->y + off;
    }
    return mb;
}

static amp_status ranks_forward_backward(amp_dp *dp, amp_model *m, const amp_batch *b, float scale, double *lsum)
{
    amp_tensors *r = &m->reg;
    const uint64_t seed0 = r->seed;
    amp_status s = AMP_OK;
    *lsum = 0.0;
    for (int rr = 0; rr < dp->R && !s; rr++) {
        amp_batch mb = micro_batch(b, rr, m->B);
        float loss = 0.0f;
        if (rr) amp_tensors_zero_grad(r);    /* each rank starts its own gradients */
        r->seed = rr ? amp_rand64(seed0, 0x72616e6b00000000ull, (uint64_t)rr) : seed0;
        r->phase = AMP_PHASE_FORWARD;
        r->src_gscale = scale;
        s = m->forward(m, &mb, &loss);
        if (!s) s = m->backward(m, &mb, scale);
        if (s) break;
        *lsum += (double)loss;
        for (int k = 0; k < dp->nw; k++)
            memcpy(dp->g[k * dp->R + rr], dp->w[k]->grad->data, dp->w[k]->n * sizeof(float));
    }
    r->seed = seed0;
    return s;
}

amp_status amp_train_step_dp(amp_dp *dp, amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                             int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res)
{
    amp_tensors *r = &m->reg;
    const int R = dp->R;
    AMP_ASSERT(b->B == R * m->B);
    float scale = amp_train_step_begin(m, sc, step, stats_roles, info, res);
    r->phase = AMP_PHASE_FORWARD;
    amp_status s = amp_model_cast_weights(m);  /* one cast for every rank */
    double lsum = 0.0;
    if (!s) s = ranks_forward_backward(dp, m, b, scale, &lsum);
    if (s) return s;
    info->loss = (float)(lsum / R);

    /* the all-reduce of every weight gradient (scaled, before unscale/inf check) */
    r->phase = AMP_PHASE_BACKWARD;
    for (int k = 0; k < dp->nw; k++) {
        amp_tensor *gt = dp->w[k]->grad;
        amp_allreduce_opts ao = dp->ao;
        ao.round = amp_tensor_opts(r, gt);
        ao.round.seed = amp_rand64(ao.round.seed, 0x616c6c7265647563ull, 0);
        ao.round.stream = (uint64_t)gt->id << 32;
        amp_allreduce_info *in = &dp->info[k];
        if ((s = amp_allreduce(&ao, (const float *const *)&dp->g[(size_t)k * R], R, gt->n, gt->data, in)))
            return s;
        amp_tensor *t = dp->ar.t[k];
        amp_stats_init(t->stats);
        amp_stats_merge(t->stats, &in->quant);
        amp_stats_merge(t->stats, &in->sums);
        t->stats_valid = 1;
        t->scale = in->scale;
        if (!r->nonfinite_tensor) {
            const uint32_t *u = (const uint32_t *)gt->data;
            uint64_t bad = 0;
            for (size_t i = 0; i < gt->n; i++) bad += (u[i] & 0x7f800000u) == 0x7f800000u;
            if (bad) {
                r->nonfinite_tensor = gt;
                r->nonfinite_phase = AMP_PHASE_BACKWARD;
                r->nonfinite_count = bad;
            }
        }
    }
    return amp_train_step_end(m, opt, sc, scale, info, res);
}

amp_status amp_dp_log(amp_dp *dp, amp_runlog *l, int64_t step, int tensors, int hist)
{
    amp_status s = AMP_OK;
    if (tensors || hist) s = amp_runlog_tensors(l, &dp->ar, step, tensors, hist);
    char detail[200];
    for (int k = 0; k < dp->nw && !s; k++) {
        const amp_allreduce_info *in = &dp->info[k];
        uint64_t oq = in->quant.cls[AMP_CLS_OVERFLOW], os = in->sums.cls[AMP_CLS_OVERFLOW];
        if (oq || os) {
            snprintf(detail, sizeof detail, "%s %s: %llu of %llu quantizations, %llu of %llu partial sums overflowed",
                     amp_allreduce_algo_name(dp->ao.algo), dp->ao.fmt.name, (unsigned long long)oq,
                     (unsigned long long)in->quant.n, (unsigned long long)os, (unsigned long long)in->sums.n);
            s = amp_runlog_event(l, step, "allreduce_overflow", dp->w[k]->grad->name, detail);
        }
        if (!s && tensors && dp->ao.scaling != AMP_AR_SCALE_NONE) {
            snprintf(detail, sizeof detail, "%s scale %.9g amax %.9g", amp_allreduce_scaling_name(dp->ao.scaling),
                     (double)in->scale, in->amax);
            s = amp_runlog_event(l, step, "allreduce_scale", dp->w[k]->grad->name, detail);
        }
    }
    return s;
}
