/* Loss scalers: none, static, torch, apex, deepspeed, megatron, keras (each
 * framework's update rule, bit for bit in the number type it keeps its scale
 * in; docs/scalers-arith.md states the rules), adaptive (layer-wise, Zhao et
 * al.) and underflow (ours).
 *
 * Number types: torch, megatron, keras, underflow and static keep a float32
 * scale. torch (and underflow) apply factors in double and store float32;
 * megatron and keras multiply float32 tensors by float32 factors. apex and
 * deepspeed keep a Python float (double): sc->dscale, which may pass FLT_MAX
 * (and, with scripted inputs, reach inf); the scale that multiplies the loss
 * is that double converted to float32 (amp_scaler_scale). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_scaler.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const event_names[AMP_SEV_COUNT] = {
    "backoff", "growth", "hysteresis", "growth_refused", "at_min", "min_error", "zero", "inf",
    "underflow_raise", "layer_scales", "error",
};
_Static_assert(AMP_SEV_COUNT == 11, "event_names covers every event");

const char *amp_scaler_event_name(amp_scaler_event_kind k)
{
    return (k >= 0 && k < AMP_SEV_COUNT) ? event_names[k] : "?";
}

static void event(amp_scaler_result *r, amp_scaler_event_kind k, long tensor, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void event(amp_scaler_result *r, amp_scaler_event_kind k, long tensor, const char *fmt, ...)
{
    if (r->n_events >= AMP_SCALER_MAX_EVENTS) { r->events_dropped++; return; }
    amp_scaler_event *e = &r->events[r->n_events++];
    e->kind = k;
    e->tensor = tensor;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof e->detail, fmt, ap);
    va_end(ap);
}

/* adaptive keeps per-tensor exponents; scale = 2^e. */
static int ilog2_exact(double p) { return ilogb(p); }

amp_status amp_scaler_init(amp_scaler *sc, const amp_scaler_spec *spec)
{
    if (amp_scaler_kind_is_fp8(spec->kind))
        return amp_fail(AMP_EINVAL, "scaler spec '%s': %s is an FP8 scaling strategy, not a loss scaler",
                        spec->text, amp_scaler_kind_name(spec->kind));
    memset(sc, 0, sizeof *sc);
    sc->spec = *spec;
    sc->scale = spec->kind == AMP_SCALER_NONE ? 1.0f : (float)spec->init;
    sc->dscale = spec->kind == AMP_SCALER_NONE ? 1.0 : spec->init;
    /* apex: _loss_scale = min(max_loss_scale, init_scale) */
    if (spec->kind == AMP_SCALER_APEX && spec->max < spec->init) sc->dscale = spec->max;
    sc->hyst = spec->hysteresis;
    sc->last_overflow = -1;
    if (spec->kind == AMP_SCALER_ADAPTIVE) sc->gexp = ilog2_exact(spec->init);
    return AMP_OK;
}

amp_status amp_scaler_init_str(amp_scaler *sc, const char *text)
{
    amp_scaler_spec s;
    amp_status st = amp_scaler_spec_parse(text, &s);
    if (st) return st;
    return amp_scaler_init(sc, &s);
}

void amp_scaler_free(amp_scaler *sc)
{
    free(sc->texp);
    sc->texp = NULL;
    sc->n_tensors = 0;
}

float amp_scaler_scale(const amp_scaler *sc)
{
    switch (sc->spec.kind) {
    case AMP_SCALER_APEX: case AMP_SCALER_DEEPSPEED: return (float)sc->dscale;
    case AMP_SCALER_ADAPTIVE: return ldexpf(1.0f, sc->gexp);
    default: return sc->scale;
    }
}

double amp_scaler_held(const amp_scaler *sc)
{
    if (amp_scaler_kind_held_double(sc->spec.kind)) return sc->dscale;
    return (double)amp_scaler_scale(sc);
}

int amp_scaler_fmt_scale(amp_scaler_kind k, double v, char *buf, size_t len)
{
    if (!amp_scaler_kind_held_double(k) || !isfinite(v)) return snprintf(buf, len, "%.9g", v);
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    return snprintf(buf, len, "%s", tmp);
}

float amp_scaler_tensor_scale(const amp_scaler *sc, size_t i)
{
    if (sc->spec.kind != AMP_SCALER_ADAPTIVE) return amp_scaler_scale(sc);
    if (i >= sc->n_tensors) return (float)sc->spec.init;
    return ldexpf(1.0f, sc->texp[i]);
}

int amp_scaler_is_layerwise(const amp_scaler *sc) { return sc->spec.kind == AMP_SCALER_ADAPTIVE; }

int amp_scaler_needs_stats(const amp_scaler *sc)
{
    return sc->spec.kind == AMP_SCALER_ADAPTIVE || sc->spec.kind == AMP_SCALER_UNDERFLOW;
}

float amp_scaler_inv(float s) { return (float)(1.0 / (double)s); }

/* ---- the framework rules ---------------------------------------------------- */

/* PyTorch GradScaler (_amp_update_scale_): factors in double, stored float32,
 * no minimum. The tracker is reset after a growth attempt whether or not the
 * grown scale was finite (as torch does; a plain reading of the rule leaves this
 * open, and both readings give the same scales: a refused growth leaves the
 * scale unchanged and only a backoff, which resets the tracker, changes it). */
static void torch_update(amp_scaler *sc, int found, int early, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    float s = sc->scale;
    if (found) {
        sc->scale = (float)((double)s * p->backoff);
        sc->tracker = 0;
        if (s == 0) event(r, AMP_SEV_AT_MIN, -1, "inf/NaN with the scale at 0: it cannot recover");
        else event(r, AMP_SEV_BACKOFF, -1, "%.9g -> %.9g", s, sc->scale);
        return;
    }
    long succ = sc->tracker + 1;
    if (succ == p->interval || early) {
        float ns = (float)((double)s * p->growth);
        if (isfinite(ns)) {
            sc->scale = ns;
            if (succ == p->interval && ns != s) event(r, AMP_SEV_GROWTH, -1, "%.9g -> %.9g", s, ns);
        } else {
            event(r, AMP_SEV_GROWTH_REFUSED, -1, "%.9g * %.9g is not a finite float32", s, p->growth);
        }
        sc->tracker = 0;
    } else {
        sc->tracker = succ;
    }
}

/* Apex amp LossScaler.update_scale (dynamic, apex/amp/scaler.py): a Python
 * float, x2 / /2 in double, max(min, s/2) when min is set, min(max, 2s); with
 * max=none the double can pass FLT_MAX (and reach inf with scripted inputs). */
static void apex_update(amp_scaler *sc, int found, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    double d = sc->dscale;
    if (found) {
        double nd = d / 2.0;
        if (p->min > 0) nd = p->min > nd ? p->min : nd;     /* max(min, scale/2) */
        sc->dscale = nd;
        sc->tracker = 0;
        if (nd == d) event(r, AMP_SEV_AT_MIN, -1, "inf/NaN with the scale at its minimum %.17g", d);
        else event(r, AMP_SEV_BACKOFF, -1, "%.17g -> %.17g", d, nd);
    } else {
        sc->tracker++;
    }
    if (sc->tracker == p->interval) {
        double nd = d * 2.0;
        nd = p->max < nd ? p->max : nd;                    /* min(max, scale*2) */
        sc->dscale = nd;
        sc->tracker = 0;
        if (nd != d) event(r, AMP_SEV_GROWTH, -1, "%.17g -> %.17g", d, nd);
    }
}

/* DeepSpeed DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py);
 * cur_iter is sc->step. cur_scale is a Python float: halving and doubling are
 * exact in double, growth passes FLT_MAX (2^128 is a fine double; in training
 * its float32 image inf makes the scaled loss overflow, which backs it off) and
 * with scripted inputs can reach inf after 2^1023. At an overflow DeepSpeed
 * logs int(cur_scale) (rank 0, fp16); int(inf) raises OverflowError before
 * anything changes, so an inf scale stops the run at its next overflow. */
static amp_status deepspeed_update(amp_scaler *sc, int found, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    double d = sc->dscale;
    long it = sc->step;
    if (found) {
        int shift = p->hysteresis == 1 || sc->hyst == 1;
        if (shift && d == p->min && p->raise) {
            sc->failed = 1;
            event(r, AMP_SEV_MIN_ERROR, -1,
                  "Current loss scale already at minimum - cannot decrease scale anymore (%.17g)", d);
            return amp_fail(AMP_ERUN, "scaler %s: Current loss scale already at minimum - cannot "
                            "decrease scale anymore (scale %.17g, step %ld)", p->text, d, it);
        }
        if (isinf(d)) {
            sc->failed = 1;
            event(r, AMP_SEV_ERROR, -1, "OverflowError: cannot convert float infinity to integer");
            return amp_fail(AMP_ERUN, "scaler %s: OverflowError: cannot convert float infinity to "
                            "integer (the overflow message prints int(cur_scale) with the scale at "
                            "inf, step %ld)", p->text, it);
        }
        if (shift) {
            double nd = d / 2.0;
            nd = nd > p->min ? nd : p->min;                 /* max(scale/2, min) */
            sc->dscale = nd;
            if (nd == d) event(r, AMP_SEV_AT_MIN, -1, "inf/NaN with the scale at its minimum %.17g", d);
            else event(r, AMP_SEV_BACKOFF, -1, "%.17g -> %.17g", d, nd);
        } else {
            sc->hyst--;
            event(r, AMP_SEV_HYSTERESIS, -1, "scale %.17g kept, hysteresis now %ld", d, sc->hyst);
        }
        sc->last_overflow = it;
    } else {
        if (p->consecutive) sc->hyst = p->hysteresis;
        if ((it - sc->last_overflow) % p->interval == 0) {
            if (!p->consecutive) sc->hyst = p->hysteresis;
            sc->dscale = d * 2.0;
            event(r, AMP_SEV_GROWTH, -1, "%.17g -> %.17g", d, sc->dscale);
        }
    }
    return AMP_OK;
}

/* Megatron DynamicGradScaler.update: float32 tensors; hysteresis refilled only
 * at growth. */
static void megatron_update(amp_scaler *sc, int found, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    float s = sc->scale;
    if (found) {
        sc->tracker = 0;
        sc->hyst--;
        if (sc->hyst <= 0) {
            float b = s * (float)p->backoff, mn = (float)p->min;
            sc->scale = b > mn ? b : mn;                    /* torch.max(scale*backoff, min) */
            if (sc->scale == s) event(r, AMP_SEV_AT_MIN, -1, "inf/NaN with the scale at its minimum %.9g", s);
            else event(r, AMP_SEV_BACKOFF, -1, "%.9g -> %.9g", s, sc->scale);
        } else {
            event(r, AMP_SEV_HYSTERESIS, -1, "scale %.9g kept, hysteresis now %ld", s, sc->hyst);
        }
    } else {
        sc->tracker++;
        if (sc->tracker == p->interval) {
            sc->tracker = 0;
            sc->hyst = p->hysteresis;
            sc->scale = s * (float)p->growth;
            event(r, AMP_SEV_GROWTH, -1, "%.9g -> %.9g", s, sc->scale);
        }
    }
}

/* Keras 3 LossScaleOptimizer: float32 variable, x2 after `interval` finite
 * steps (counter == interval-1 before the increment), /2 on inf/NaN. */
static void keras_update(amp_scaler *sc, int found, amp_scaler_result *r)
{
    float s = sc->scale;
    if (found) {
        sc->tracker = 0;
        sc->scale = s / 2.0f;
        if (s == 0) event(r, AMP_SEV_AT_MIN, -1, "inf/NaN with the scale at 0: it cannot recover");
        else event(r, AMP_SEV_BACKOFF, -1, "%.9g -> %.9g", s, sc->scale);
    } else if (sc->tracker == sc->spec.interval - 1) {
        sc->tracker = 0;
        sc->scale = s * 2.0f;
        event(r, AMP_SEV_GROWTH, -1, "%.9g -> %.9g", s, sc->scale);
    } else {
        sc->tracker++;
    }
}

/* ---- underflow (ours) -----------------------------------------------------
 * torch's rule plus one trigger: on a finite step, let F = sum of flushed
 * counts / sum of nonzero finite inputs over every reported gradient tensor
 * (weight and activation gradients, statistics of this step's scaled values),
 * A = max amax of the scaled gradients, M = smallest max_finite among their
 * formats. If F > flush and A * growth * headroom <= M, grow now (as torch
 * grows, float(double(scale)*growth), refused if not finite) and reset the
 * tracker -- but never to the ceiling: the last scale that overflowed. Some
 * values flush at any safe scale (a deep network's far layers), so without
 * the ceiling the scale would climb back into the overflow it just left at
 * every step. torch's periodic growth (interval clean steps) lifts the
 * ceiling: that growth is the probe the frameworks make. inf/NaN backs off
 * exactly as torch does. */
static void underflow_update(amp_scaler *sc, const amp_scaler_obs *obs, int found, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    int early = 0, periodic = !found && sc->tracker + 1 == p->interval;
    double frac = 0, amax = 0, maxf = INFINITY;
    float s = sc->scale;
    if (!found && obs) {
        double nz = 0, fl = 0;
        for (size_t i = 0; i < obs->n_tensors; i++) {
            const amp_scaler_tensor *t = &obs->tensors[i];
            if (!t->st) continue;
            const amp_stats *st = t->st;
            const amp_format *f = t->fmt ? t->fmt : &p->fmt;
            nz += (double)(st->n - st->cls[AMP_CLS_NAN_IN] - st->cls[AMP_CLS_INF_IN] - st->cls[AMP_CLS_ZERO_IN]);
            fl += (double)st->cls[AMP_CLS_FLUSHED];
            if (st->amax > amax) amax = st->amax;
            if (f->max_finite < maxf) maxf = f->max_finite;
        }
        if (nz > 0) {
            frac = fl / nz;
            early = frac > p->flush && amax * p->growth * p->headroom <= maxf && !periodic &&
                    (sc->ceiling == 0 || (double)s * p->growth < (double)sc->ceiling);
        }
    }
    torch_update(sc, found, early, r);
    if (found) sc->ceiling = s;
    else if (periodic) sc->ceiling = 0;
    if (early && sc->scale != s)
        event(r, AMP_SEV_UNDERFLOW_RAISE, -1, "%.9g -> %.9g: flushed fraction %.3g > %.3g, amax %.3g",
              s, sc->scale, frac, p->flush, amax);
}

/* ---- adaptive (layer-wise, after Zhao et al.) -----------------------------
 * Scales are powers of two (scaling is exact). From gradient tensor i's
 * statistics (log2 histogram of its values at the scale 2^s_i they were
 * rounded at: tensors[i].scale, or the step's global scale), shifting each
 * binade b to b + k - s_i predicts the histogram at scale 2^k. A value counts
 * as underflowing when it lands below L = log2(min_subnormal), i.e. |x| <
 * min_subnormal: below half of it the value flushes to 0, between half and
 * min_subnormal it becomes 0 or min_subnormal (a relative error of at least
 * 1/3), so both are lost signal (this makes the prediction conservative: the
 * flushed fraction at the chosen scale is at most the predicted one). Per
 * tensor, with nz its nonzero finite values and A_i their amax at 2^s_i
 * (st->amax when finite, else the upper edge of the top histogram bin):
 *   u_i = smallest k with (count of binades b + k - s_i < L) <= underflow * nz
 *   o_i = largest k with  A_i * 2^(k - s_i) * headroom <= max_finite
 * Layer-wise target of tensor i: clamp(min(u_i, o_i)).
 * Global target (one loss scale for every tensor): clamp(min(U, min_i o_i)),
 * where U is the smallest k whose predicted underflow count summed over all
 * tensors is <= underflow * (sum of their nz): the same rate, over every
 * gradient value (small tensors such as biases do not make it jitter), never
 * above any tensor's overflow bound. clamp = to [log2 min, log2 max].
 * Damping (the low tail of a histogram is noisy): a scale moves to a higher
 * target at once, and to a lower one at once only when the overflow bound
 * demands it (o < current); otherwise it steps down one binade per step.
 * Tensors without statistics or without nonzero finite values keep their
 * scale and do not vote. If the step found inf/NaN but no reported tensor shows
 * any (overflow, inf or NaN in its statistics), every scale is halved. */
/* The next exponent from the current one, the underflow target u and the
 * overflow bound o (see above). */
static long damp(long cur, long u, long o, int emin, int emax)
{
    long k = u < o ? u : o;
    if (k < emin) k = emin;
    if (k > emax) k = emax;
    if (k < cur && o >= cur) k = cur - 1;
    return k;
}

static amp_status adaptive_update(amp_scaler *sc, const amp_scaler_obs *obs, int found, amp_scaler_result *r)
{
    const amp_scaler_spec *p = &sc->spec;
    size_t n = obs ? obs->n_tensors : 0;
    if (n > sc->n_tensors) {
        int *ne = realloc(sc->texp, n * sizeof *ne);
        if (!ne) return amp_fail(AMP_ENOMEM, "scaler adaptive: out of memory for %zu tensors", n);
        for (size_t i = sc->n_tensors; i < n; i++) ne[i] = ilog2_exact(p->init);
        sc->texp = ne;
        sc->n_tensors = n;
    }
    int emin = ilog2_exact(p->min), emax = ilog2_exact(p->max);
    int gexp_old = sc->gexp;
    long go = LONG_MAX;
    /* pooled histogram of m = b - s_i - L_i (a value underflows at 2^k iff m + k < 0) */
    enum { MOFF = 512, MBINS = 1280 };
    uint64_t *pool = calloc(MBINS, sizeof *pool);
    if (!pool) return amp_fail(AMP_ENOMEM, "scaler adaptive: out of memory");
    double pool_nz = 0;
    int any_bad = 0, voted = 0, up = 0, down = 0;
    for (size_t i = 0; i < n; i++) {
        const amp_scaler_tensor *t = &obs->tensors[i];
        if (!t->st) continue;
        const amp_stats *st = t->st;
        if (st->cls[AMP_CLS_OVERFLOW] || st->cls[AMP_CLS_SATURATED] || st->cls[AMP_CLS_INF_IN] ||
            st->cls[AMP_CLS_NAN_IN])
            any_bad = 1;
        const amp_format *f = t->fmt ? t->fmt : &p->fmt;
        uint64_t nz = 0;
        int top = -1;
        for (int b = 0; b < AMP_HIST_BINS; b++)
            if (st->hist[b]) { nz += st->hist[b]; top = b; }
        if (!nz) continue;
        /* exponent of the scale the statistics were taken at */
        double sused = t->scale > 0 ? (double)t->scale : ldexp(1.0, gexp_old);
        int e = ilogb(sused);
        /* t* = the largest binade t with (count below t) <= underflow*nz. */
        double allowed = p->underflow * (double)nz;
        uint64_t below = 0;
        int tstar = AMP_HIST_LO;
        for (int b = 0; b < AMP_HIST_BINS; b++) {
            if ((double)(below + st->hist[b]) > allowed) { tstar = b + AMP_HIST_LO; break; }
            below += st->hist[b];
            tstar = b + 1 + AMP_HIST_LO;
        }
        int L = ilogb(f->min_subnormal);
        long k_under = (long)L + e - tstar;            /* tstar + (k - e) >= L */
        double a = isfinite(st->amax) ? st->amax : ldexp(1.0, top + AMP_HIST_LO + 1);
        /* largest d with a * 2^d * headroom <= max_finite */
        long d = (long)ilogb(f->max_finite) - ilogb(a) + 1;
        while (ldexp(a, (int)d) * p->headroom > f->max_finite) d--;
        long k_over = e + d;
        long k = damp(sc->texp[i], k_under, k_over, emin, emax);
        if (k > sc->texp[i]) up++;
        if (k < sc->texp[i]) down++;
        sc->texp[i] = (int)k;
        for (int b = 0; b < AMP_HIST_BINS; b++) {
            if (!st->hist[b]) continue;
            long m = (long)b + AMP_HIST_LO - e - L + MOFF;
            pool[m < 0 ? 0 : m >= MBINS ? MBINS - 1 : m] += st->hist[b];
        }
        pool_nz += (double)nz;
        if (k_over < go) go = k_over;
        voted = 1;
    }
    if (voted) {
        /* largest t with (pooled count below t) <= underflow * pool_nz; U = -t */
        double allowed = p->underflow * pool_nz;
        uint64_t below = 0;
        long t = 0;
        for (long m = 0; m < MBINS; m++) {
            if ((double)(below + pool[m]) > allowed) { t = m - MOFF; break; }
            below += pool[m];
            t = m + 1 - MOFF;
        }
        sc->gexp = (int)damp(sc->gexp, -t, go, emin, emax);
    }
    free(pool);
    if (found && !any_bad) {
        for (size_t i = 0; i < sc->n_tensors; i++)
            if (sc->texp[i] > emin) sc->texp[i]--;
        if (sc->gexp > emin) sc->gexp--;
        event(r, AMP_SEV_BACKOFF, -1, "inf/NaN outside the reported tensors: every scale halved");
    }
    if (sc->gexp != gexp_old && sc->n_tensors) {
        int lo = sc->texp[0], hi = sc->texp[0];
        for (size_t i = 1; i < sc->n_tensors; i++) {
            if (sc->texp[i] < lo) lo = sc->texp[i];
            if (sc->texp[i] > hi) hi = sc->texp[i];
        }
        event(r, AMP_SEV_LAYER, -1, "%d tensor scales up, %d down; now 2^%d .. 2^%d; global 2^%d -> 2^%d",
              up, down, lo, hi, gexp_old, sc->gexp);
    }
    return AMP_OK;
}

amp_status amp_scaler_update(amp_scaler *sc, const amp_scaler_obs *obs, amp_scaler_result *res)
{
    memset(res, 0, sizeof *res);
    int found = obs ? obs->found_inf != 0 : 0;
    res->step = sc->step;
    res->scale_used = amp_scaler_scale(sc);
    res->held_used = amp_scaler_held(sc);
    if (sc->failed) {
        res->skipped = 1;
        res->scale_after = res->scale_used;
        res->held_after = res->held_used;
        return amp_fail(AMP_ERUN, "scaler %s: the run already stopped", sc->spec.text);
    }
    amp_status st = AMP_OK;
    res->skipped = found;
    switch (sc->spec.kind) {
    case AMP_SCALER_NONE: res->skipped = 0; break;
    case AMP_SCALER_STATIC: res->skipped = found && sc->spec.skip; break;
    case AMP_SCALER_TORCH: torch_update(sc, found, 0, res); break;
    case AMP_SCALER_APEX: apex_update(sc, found, res); break;
    case AMP_SCALER_DEEPSPEED: st = deepspeed_update(sc, found, res); break;
    case AMP_SCALER_MEGATRON: megatron_update(sc, found, res); break;
    case AMP_SCALER_KERAS: keras_update(sc, found, res); break;
    case AMP_SCALER_ADAPTIVE: st = adaptive_update(sc, obs, found, res); break;
    case AMP_SCALER_UNDERFLOW: underflow_update(sc, obs, found, res); break;
    default: AMP_ASSERT(0 && "FP8 kind in a loss scaler");
    }
    res->scale_after = amp_scaler_scale(sc);
    res->held_after = amp_scaler_held(sc);
    if (st == AMP_ENOMEM) return st;
    if (res->scale_after == 0 && res->scale_used != 0)
        event(res, AMP_SEV_ZERO, -1, "loss scale collapsed to 0 (no minimum): every later step "
              "overflows and is skipped");
    if (isinf(res->scale_after) && !isinf(res->scale_used)) {
        if (isinf(res->held_after)) event(res, AMP_SEV_INF, -1, "loss scale grew to inf (no maximum)");
        else event(res, AMP_SEV_INF, -1, "loss scale %.17g (a double) is inf as float32: the "
                   "scaled loss overflows", res->held_after);
    }
    if (st == AMP_OK) sc->step++;
    return st;
}

/* ---- checkpoint image -------------------------------------------------------
 * "AMPSCL2\0", canonical spec (160 bytes, NUL padded), then little-endian
 * u64 fields: step, float32 bits of scale, double bits of dscale, tracker, hyst, last_overflow,
 * failed, gexp, n_tensors, float32 bits of ceiling, and n_tensors texp values
 * (signed as two's complement u64). "AMPSCL1" images (no ceiling) still load. */
#define SCL_MAGIC "AMPSCL2"
#define SCL_MAGIC1 "AMPSCL1"
#define SCL_TEXT ((size_t)160)


amp_status amp_scaler_save(const amp_scaler *sc, uint8_t **buf, size_t *len)
{
    size_t n = 8 + SCL_TEXT + 8 * (10 + sc->n_tensors);
    uint8_t *b = calloc(1, n);
    if (!b) return amp_fail(AMP_ENOMEM, "scaler: out of memory for its checkpoint");
    memcpy(b, SCL_MAGIC, 8);
    char canon[SCL_TEXT] = { 0 };
    amp_scaler_spec_str(&sc->spec, canon, sizeof canon);
    memcpy(b + 8, canon, SCL_TEXT);
    uint8_t *p = b + 8 + SCL_TEXT;
    const uint64_t f[10] = { (uint64_t)sc->step, amp_f2u(sc->scale), amp_d2u(sc->dscale),
                             (uint64_t)sc->tracker, (uint64_t)sc->hyst, (uint64_t)sc->last_overflow,
                             (uint64_t)sc->failed, (uint64_t)(int64_t)sc->gexp, (uint64_t)sc->n_tensors,
                             amp_f2u(sc->ceiling) };
    for (int i = 0; i < 10; i++, p += 8) amp_put_le64(p, f[i]);
    for (size_t i = 0; i < sc->n_tensors; i++, p += 8) amp_put_le64(p, (uint64_t)(int64_t)sc->texp[i]);
    *buf = b;
    *len = n;
    return AMP_OK;
}

amp_status amp_scaler_load(amp_scaler *sc, const uint8_t *b, size_t len)
{
    int v1 = len >= 8 && !memcmp(b, SCL_MAGIC1, 8);
    size_t nf = v1 ? 9 : 10, head = 8 + SCL_TEXT + 8 * nf;
    if (len < head || (!v1 && memcmp(b, SCL_MAGIC, 8)))
        return amp_fail(AMP_EFORMAT, "scaler checkpoint: not a scaler state image");
    char canon[SCL_TEXT] = { 0 };
    amp_scaler_spec_str(&sc->spec, canon, sizeof canon);
    if (memcmp(b + 8, canon, SCL_TEXT))
        return amp_fail(AMP_EFORMAT, "scaler checkpoint: saved for scaler '%.*s', not '%s'",
                        (int)strnlen((const char *)b + 8, SCL_TEXT), (const char *)b + 8, canon);
    const uint8_t *p = b + 8 + SCL_TEXT;
    uint64_t f[10] = { 0 };
    for (size_t i = 0; i < nf; i++, p += 8) f[i] = amp_get_le64(p);
    uint64_t nt = f[8];
    if (nt > (len - head) / 8 || len != head + nt * 8)
        return amp_fail(AMP_EFORMAT, "scaler checkpoint: length %zu does not match %llu tensors", len,
                        (unsigned long long)nt);
    int *te = NULL;
    if (nt) {
        te = malloc(nt * sizeof *te);
        if (!te) return amp_fail(AMP_ENOMEM, "scaler checkpoint: out of memory");
        for (uint64_t i = 0; i < nt; i++, p += 8) te[i] = (int)(int64_t)amp_get_le64(p);
    }
    free(sc->texp);
    sc->step = (long)f[0];
    sc->scale = amp_u2f((uint32_t)f[1]);
    sc->dscale = amp_u2d(f[2]);
    sc->tracker = (long)f[3];
    sc->hyst = (long)f[4];
    sc->last_overflow = (long)f[5];
    sc->failed = (int)f[6];
    sc->gexp = (int)(int64_t)f[7];
    sc->n_tensors = (size_t)nt;
    sc->texp = te;
    sc->ceiling = amp_u2f((uint32_t)f[9]);
    return AMP_OK;
}
