/* Optimizers over the registry's weights (role weight), from each weight's
 * unscaled FP32 gradient grad32.
 *
 * Storage: the FP32 master when the weight has one (amp policies) or the weight
 * itself (fp32 and pure policies).
 * - FP32 storage follows PyTorch 1.13's single-tensor loops: SGD
 *   p.add_(g, alpha=-lr) is one rounding, fmaf(-lr, g, p); momentum
 *   buf = buf*m + g (two roundings; buf = g at the first step), then
 *   fmaf(-lr, buf, p); AdamW p *= 1 - lr*wd, exp_avg = m*b1 + (1-b1) g,
 *   exp_avg_sq = v*b2 + (1-b2) g^2, p += -lr/bc1 * exp_avg / (sqrt(v)/sqrt(bc2) + eps).
 *   (tests/check_train.c: all three within 1e-5 of PyTorch's loss over 200 steps;
 *   measured 2.4e-7.)
 * - Narrow storage (pure policies): the update u (float32) is computed the
 *   same way and w + u, formed in double, is rounded once into the weight's
 *   format by the policy's update mode: round (the policy's rounding mode),
 *   sr (stochastic), or kahan (compensated: y = u - c; t = round(w + y);
 *   c = round_optim((t - w) - y); w = t; c is an optim_state tensor).
 *   Optimizer states are rounded into the policy's optim format.
 * Every step: the update tensor (role update) gets u rounded into the storage
 * format (its statistics show updates too small for the format), and updates
 * with u != 0 that leave the stored weight unchanged are counted as vanished. */
#include "amp_math.h"
#include "amp_base.h"
#include "amp_format.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_policy.h"
#include "amp_round.h"
#include "amp_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

amp_status amp_optim_parse(const char *name, amp_optim_kind *k)
{
    if (!strcmp(name, "sgd")) *k = AMP_OPT_SGD;
    else if (!strcmp(name, "momentum")) *k = AMP_OPT_MOMENTUM;
    else if (!strcmp(name, "adamw")) *k = AMP_OPT_ADAMW;
    else return amp_fail(AMP_EINVAL, "unknown optimizer '%s' (sgd, momentum, adamw)", name);
    return AMP_OK;
}

void amp_optim_defaults(amp_optim *o, amp_optim_kind k, float lr)
{
    memset(o, 0, sizeof *o);
    o->kind = k;
    o->lr = lr;
    o->momentum = 0.9f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->weight_decay = k == AMP_OPT_ADAMW ? 0.01f : 0.0f;
}

static amp_tensor *storage(amp_tensor *w) { return w->master ? w->master : w; }

amp_status amp_optim_attach(amp_optim *o, amp_model *m)
{
    const amp_policy *p = &m->pol;
    char buf[AMP_TENSOR_NAME + 32];
    int n0 = m->reg.n;
    for (int i = 0; i < n0; i++) {
        amp_tensor *w = m->reg.t[i], *t;
        if (w->role != AMP_ROLE_WEIGHT) continue;
        amp_tensor *st = storage(w);
        const amp_format *sf = w->master ? &p->master : &p->optim;
        amp_status s;
        snprintf(buf, sizeof buf, "%s.update", w->name);
        if ((s = amp_tensors_add(&m->reg, buf, AMP_ROLE_UPDATE, &st->fmt, w->ndim, w->shape, &t))) return s;
        w->update = t;
        w->decay = 1;
        const char *names[3] = { NULL, NULL, NULL };
        if (o->kind == AMP_OPT_MOMENTUM) names[0] = "momentum_buffer";
        if (o->kind == AMP_OPT_ADAMW) { names[0] = "exp_avg"; names[1] = "exp_avg_sq"; }
        if (!w->master && p->update == AMP_UPD_KAHAN) names[2] = "kahan";
        for (int k = 0; k < 3; k++) {
            if (!names[k]) continue;
            snprintf(buf, sizeof buf, "%s.%s", w->name, names[k]);
            if ((s = amp_tensors_add(&m->reg, buf, AMP_ROLE_OPTIM_STATE, sf, w->ndim, w->shape, &t))) return s;
            w->state[k] = t;
        }
    }
    return AMP_OK;
}

/* The double a Python user wrote for the float f: the shortest decimal that
 * reads back as f (0.001f -> 0.001). */
static double shortest(float f)
{
    char buf[32];
    for (int prec = 1; prec < 10; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        double d = strtod(buf, NULL);
        if ((float)d == f) return d;
    }
    return (double)f;
}

/* AdamW's float32 constants for step o->t + 1: PyTorch 1.13's
 * _single_tensor_adamw, its Python-float constants (double) rounded to float
 * by each kernel. */
typedef struct adamw_k { float decay, b1, b2, a1, a2, bc2s, eps, nstep; } adamw_k;

static adamw_k adamw_consts(const amp_optim *o, const amp_tensor *w)
{
    double lrd = shortest(o->lr), b1 = shortest(o->beta1), b2 = shortest(o->beta2), t = (double)(o->t + 1);
    double bc1 = 1.0 - pow(b1, t), bc2s = sqrt(1.0 - pow(b2, t));
    adamw_k k;
    k.decay = w->decay ? (float)(1.0 - lrd * shortest(o->weight_decay)) : 1.0f;
    k.b1 = (float)b1;
    k.b2 = (float)b2;
    k.a1 = (float)(1.0 - b1);
    k.a2 = (float)(1.0 - b2);
    k.bc2s = (float)bc2s;
    k.eps = (float)shortest(o->eps);
    k.nstep = (float)(-(lrd / bc1));
    return k;
}

/* One element: the states updated in place, the new value returned
 * (add_(alpha) and addcmul_ fused multiply-adds as in PyTorch's AVX2
 * kernels; addcdiv (v t1) / t2). Weights without decay multiply by 1, exact. */
static inline __attribute__((always_inline)) float adamw1(const adamw_k *k, float g, float p, float *s0, float *s1)
{
    float m = fmaf(g, k->a1, *s0 * k->b1);
    float v = fmaf(k->a2 * g, g, *s1 * k->b2);
    *s0 = m;
    *s1 = v;
    float denom = sqrtf(v) / k->bc2s + k->eps;
    return p * k->decay + (k->nstep * m) / denom;
}

/* The update of one weight into u[] (float32); states updated in place (in FP32,
 * rounded into their format afterwards by the caller). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define OPT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define OPT_CLONES
#endif
/* (Compiled for AVX-512 and AVX2 too: the loops vectorise over elements, each
 * element the same float32 operations, sqrtf and division being IEEE.) */
OPT_CLONES static void update_range(const amp_optim *o, const amp_tensor *w, const float *g, const float *p, float *u,
                                    float *s0, float *s1, size_t n)
{
    float lr = o->lr;
    switch (o->kind) {
    case AMP_OPT_SGD:
        for (size_t i = 0; i < n; i++) u[i] = -lr * g[i];
        break;
    case AMP_OPT_MOMENTUM:
        for (size_t i = 0; i < n; i++) {
            s0[i] = o->t == 0 ? g[i] : s0[i] * o->momentum + g[i];
            u[i] = -lr * s0[i];
        }
        break;
    case AMP_OPT_ADAMW: {
        const adamw_k k = adamw_consts(o, w);
        for (size_t i = 0; i < n; i++) u[i] = adamw1(&k, g[i], p[i], &s0[i], &s1[i]) - p[i];
        break;
    }
    }
}

/* AdamW on FP32 storage in one pass: p (n) becomes the new value, u (n) the
 * update pn - p; returns how many updates u != 0 left p unchanged (the
 * same operations as update_range, element by element). */
OPT_CLONES static uint64_t adamw_inplace(const adamw_k *kp, const float *restrict g, float *restrict p,
                                         float *restrict u, float *restrict s0, float *restrict s1, size_t n)
{
    const adamw_k k = *kp;   /* (locals and restrict: the loop vectorises) */
    uint32_t lost = 0;       /* n <= 2^32 - 1 a call */
    for (size_t i = 0; i < n; i++) {
        float pi = p[i], pn = adamw1(&k, g[i], pi, &s0[i], &s1[i]), ui = pn - pi;
        u[i] = ui;
        p[i] = pn;
        lost += (uint32_t)((ui != 0.0f) & (pn == pi));
    }
    return lost;
}

/* update_range over the whole weight, in blocks over the threads (each
 * element's operations do not depend on the split). */
static void compute_update(const amp_optim *o, amp_tensor *w, const float *p, float *u, float *s0, float *s1)
{
    enum { BLK = 16384 };
    long nb = (long)((w->n + BLK - 1) / BLK);
    int nt = amp_get_threads();
    #pragma omp parallel for schedule(static) num_threads(nt > 1 ? nt : 1) if (nt > 1 && nb >= 4)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * BLK, len = w->n - lo < BLK ? w->n - lo : BLK;
        update_range(o, w, w->grad32 + lo, p + lo, u + lo, s0 ? s0 + lo : NULL, s1 ? s1 + lo : NULL, len);
    }
}

/* AdamW on an FP32 storage p: adamw_inplace over the threads in blocks, the
 * update written into w->update's own data and then rounded there (in place),
 * like the states. */
static amp_status adamw_fp32(const amp_optim *o, amp_tensors *r, amp_tensor *w, float *p, uint64_t *lost)
{
    enum { BLK = 16384 };
    const adamw_k k = adamw_consts(o, w);
    float *u = w->update->data, *s0 = w->state[0]->data, *s1 = w->state[1]->data;
    const float *g = w->grad32;
    long nb = (long)((w->n + BLK - 1) / BLK);
    int nt = amp_get_threads();
    uint64_t l = 0;
    #pragma omp parallel for schedule(static) reduction(+:l) num_threads(nt > 1 ? nt : 1) if (nt > 1 && nb >= 4)
    for (long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * BLK, len = w->n - lo < BLK ? w->n - lo : BLK;
        l += adamw_inplace(&k, g + lo, p + lo, u + lo, s0 + lo, s1 + lo, len);
    }
    *lost += l;
    amp_status s = AMP_OK;
    for (int j = 0; j < 2 && !s; j++) s = amp_tensor_round(r, w->state[j], w->state[j]->data);
    return s ? s : amp_tensor_round(r, w->update, u);
}

amp_status amp_optim_step(amp_optim *o, amp_model *m, uint64_t *vanished)
{
    amp_tensors *r = &m->reg;
    const amp_policy *pol = &m->pol;
    uint64_t lost = 0;
    r->phase = AMP_PHASE_UPDATE;
    for (int i = 0; i < r->n; i++) {
        amp_tensor *w = r->t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        amp_tensor *st = storage(w);
        size_t n = w->n;
        if (o->kind == AMP_OPT_ADAMW && st->fmt.id == AMP_FMT_FP32) {
            amp_status s = adamw_fp32(o, r, w, st->data, &lost);
            if (s) return s;
            continue;
        }
        float *u = malloc(n * sizeof(float));
        double *sum = malloc(n * sizeof(double));
        float *old = malloc(n * sizeof(float));
        if (!u || !sum || !old) { free(u); free(sum); free(old); return amp_fail(AMP_ENOMEM, "out of memory in the optimizer"); }
        memcpy(old, st->data, n * sizeof(float));
        float *s0 = w->state[0] ? w->state[0]->data : NULL, *s1 = w->state[1] ? w->state[1]->data : NULL;
        compute_update(o, w, st->data, u, s0, s1);
        amp_status s = AMP_OK;
        for (int k = 0; k < 2 && !s; k++)
            if (w->state[k]) s = amp_tensor_round(r, w->state[k], w->state[k]->data);
        if (!s) s = amp_tensor_round(r, w->update, u);
        if (!s && st->fmt.id == AMP_FMT_FP32) {
            const float *d = o->kind == AMP_OPT_MOMENTUM ? s0 : w->grad32;
            for (size_t k = 0; k < n; k++) st->data[k] = fmaf(-o->lr, d[k], st->data[k]);
        } else if (!s) {
            amp_round_opts ro = amp_tensor_opts(r, w);
            ro.stream |= 1ull << 32;         /* a draw apart from the weight's other roundings */
            if (pol->update == AMP_UPD_SR) ro.mode = AMP_RND_SR;
            if (pol->update == AMP_UPD_KAHAN && w->state[2]) {
                float *c = w->state[2]->data;
                for (size_t k = 0; k < n; k++) sum[k] = (double)st->data[k] + ((double)u[k] - (double)c[k]);
                s = amp_round_f64(&st->fmt, &ro, sum, st->data, n, NULL);
                for (size_t k = 0; k < n && !s; k++) sum[k] = ((double)st->data[k] - (double)old[k]) - ((double)u[k] - (double)c[k]);
                if (!s) {
                    amp_round_opts co = amp_tensor_opts(r, w->state[2]);
                    s = amp_round_f64(&w->state[2]->fmt, &co, sum, c, n, NULL);
                }
            } else {
                s = amp_round_sum2(&st->fmt, &ro, st->data, u, st->data, n);   /* round(p + u) */
            }
        }
        for (size_t k = 0; k < n; k++) lost += u[k] != 0.0f && st->data[k] == old[k];
        free(u);
        free(sum);
        free(old);
        if (s) return s;
    }
    o->t++;
    *vanished = lost;
    return AMP_OK;
}

amp_status amp_nonfinite_parse(const char *s, amp_nonfinite_policy *out)
{
    static const char *const names[] = { "continue", "skip", "stop" };
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, names[i])) { *out = (amp_nonfinite_policy)i; return AMP_OK; }
    return amp_fail(AMP_EINVAL, "--on-nonfinite: '%s' is not continue, skip or stop", s ? s : "");
}
