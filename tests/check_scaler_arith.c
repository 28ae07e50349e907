/* Check suite: the loss scalers' arithmetic at the limits of the types the
 * frameworks hold their scales in (sim/scaler_loss.c).
 *
 * The expected values come from transcriptions, written here line by line
 * from each framework's own update code (not from ampsim's):
 *   torch      _amp_update_scale_cpu_kernel (aten/src/ATen/native/cpu/
 *              AmpGradScalerKernels.cpp): float32 scale, factors in double
 *   apex       apex/amp/scaler.py LossScaler (init, update_scale): Python float
 *   deepspeed  deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler
 *              .update_scale: Python float, with the overflow log line's
 *              int(cur_scale)
 *   megatron   megatron/core/optimizer/grad_scaler.py DynamicGradScaler.update:
 *              float32 tensors for scale, factors and min
 *   keras      keras/src/optimizers/loss_scale_optimizer.py (Keras 3):
 *              float32 variable, x2.0 / x0.5, no guard
 * In every one of them the loss is multiplied by the scale in float32 (a
 * Python float meets a float32 tensor as a float32), so the scale that
 * reaches the loss is float32(held).
 *
 * Each transcription runs beside the library over random found-inf sequences
 * (overflow rates 0.1% .. 50%, windows 1 .. 2000, inits near both ends of the
 * float32 range) and the regimes that random traces rarely reach: growth up to
 * and past the type's maximum, backoff down to and past the minimum (0 for
 * torch and keras, min_scale with and without raise for deepspeed, double
 * subnormals for apex without a minimum), hysteresis across a growth.
 * Compared each step: status, skipped, the held scale before and after
 * (bit for bit, as double), the float32 scale, the stop message.
 *
 * make check runs 20000 steps per sequence; AMP_SCALER_SWEEP=1 runs 100000
 * steps on a larger grid (9 rates x 9 windows per configuration). */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REQUIRE(c, ...) do { if (!(c)) ck_abort_msg(__VA_ARGS__); } while (0)

static uint64_t rng;
static uint32_t next32(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33);
}

static int sweep(void)
{
    const char *e = getenv("AMP_SCALER_SWEEP");
    return e && *e && strcmp(e, "0");
}

/* ---- transcriptions ----------------------------------------------------------- */
enum { RAISED_NONE = 0, RAISED_MIN = 1, RAISED_OVERFLOW = 2 };

typedef struct fw {
    amp_scaler_kind kind;
    /* parameters as the frameworks take them */
    double init, growth, backoff, min, max;   /* min 0 / max inf: none */
    long interval, hysteresis;
    int consecutive, raise;
    /* state */
    float fscale;                  /* torch, megatron, keras */
    double dscale;                 /* apex, deepspeed */
    long tracker, hyst, cur_iter, last_overflow_iter;
} fw;

static void fw_init(fw *f)
{
    switch (f->kind) {
    case AMP_SCALER_TORCH:                  /* torch.full((), init_scale, dtype=float32) */
    case AMP_SCALER_KERAS:                  /* Constant(initial_scale), float32 variable */
        f->fscale = (float)f->init;
        break;
    case AMP_SCALER_MEGATRON:               /* torch.tensor([initial_scale], dtype=float) */
        f->fscale = (float)f->init;
        f->hyst = f->hysteresis;            /* _hysteresis_tracker = hysteresis */
        break;
    case AMP_SCALER_APEX:                   /* _loss_scale = min(max_loss_scale, init_scale) */
        f->dscale = f->init < f->max ? f->init : f->max;
        break;
    case AMP_SCALER_DEEPSPEED:
        f->dscale = f->init;
        f->cur_iter = 0;
        f->last_overflow_iter = -1;
        f->hyst = f->hysteresis;            /* cur_hysteresis = delayed_shift */
        break;
    default: ck_abort_msg("no transcription for kind %d", (int)f->kind);
    }
    f->tracker = 0;
}

static double fw_held(const fw *f)
{
    return (f->kind == AMP_SCALER_APEX || f->kind == AMP_SCALER_DEEPSPEED) ? f->dscale : (double)f->fscale;
}

/* One update; returns RAISED_* (the state is then as the framework left it). */
static int fw_update(fw *f, int found_inf)
{
    switch (f->kind) {
    case AMP_SCALER_TORCH:
        if (found_inf) {
            f->fscale = (float)((double)f->fscale * f->backoff);
            f->tracker = 0;
        } else {
            long successful = f->tracker + 1;
            if (successful == f->interval) {
                float new_scale = (float)((double)f->fscale * f->growth);
                if (isfinite(new_scale)) f->fscale = new_scale;
                f->tracker = 0;
            } else {
                f->tracker = successful;
            }
        }
        return RAISED_NONE;
    case AMP_SCALER_APEX:
        if (found_inf) {
            if (f->min != 0) {                          /* if(self._min_loss_scale) */
                double half = f->dscale / 2.;
                f->dscale = half > f->min ? half : f->min;   /* max(min, scale/2.) */
            } else {
                f->dscale = f->dscale / 2.;
            }
            f->tracker = 0;
        } else {
            f->tracker += 1;
        }
        if (f->tracker == f->interval) {
            double twice = f->dscale * 2.;
            f->dscale = twice < f->max ? twice : f->max;     /* min(max, scale*2.) */
            f->tracker = 0;
        }
        return RAISED_NONE;
    case AMP_SCALER_DEEPSPEED:
        if (found_inf) {
            if (f->hysteresis == 1 || f->hyst == 1) {
                if (f->dscale == f->min && f->raise) return RAISED_MIN;
                double half = f->dscale / 2.;
                double next_scale = f->min > half ? f->min : half;   /* max(cur/2, min) */
                if (isinf(f->dscale)) return RAISED_OVERFLOW;        /* int(self.cur_scale) */
                f->dscale = next_scale;
            } else {
                if (isinf(f->dscale)) return RAISED_OVERFLOW;        /* int(self.cur_scale) */
                f->hyst -= 1;
            }
            f->last_overflow_iter = f->cur_iter;
        } else {
            if (f->consecutive) f->hyst = f->hysteresis;
            if ((f->cur_iter - f->last_overflow_iter) % f->interval == 0) {
                if (!f->consecutive) f->hyst = f->hysteresis;
                f->dscale *= 2.;
            }
        }
        f->cur_iter += 1;
        return RAISED_NONE;
    case AMP_SCALER_MEGATRON: {
        const float growth_factor = (float)f->growth, backoff_factor = (float)f->backoff;
        const float min_scale = (float)f->min;
        if (found_inf) {
            f->tracker = 0;
            f->hyst -= 1;
            if (f->hyst <= 0) {
                float b = f->fscale * backoff_factor;
                f->fscale = b >= min_scale ? b : min_scale;        /* torch.max */
            }
        } else {
            f->tracker += 1;
            if (f->tracker == f->interval) {
                f->tracker = 0;
                f->hyst = f->hysteresis;
                f->fscale = f->fscale * growth_factor;
            }
        }
        return RAISED_NONE;
    }
    case AMP_SCALER_KERAS:
        if (!found_inf) {
            if (f->tracker == f->interval - 1) {   /* step_counter == dynamic_growth_steps - 1 */
                f->tracker = 0;
                f->fscale = f->fscale * 2.0f;
            } else {
                f->tracker += 1;
            }
        } else {
            f->tracker = 0;
            f->fscale = f->fscale * 0.5f;
        }
        return RAISED_NONE;
    default: ck_abort_msg("no transcription for kind %d", (int)f->kind);
    }
    return RAISED_NONE;
}

/* The library's SPEC for a transcription's parameters. */
static void fw_spec(const fw *f, char *buf, size_t len)
{
    switch (f->kind) {
    case AMP_SCALER_TORCH:
        snprintf(buf, len, "torch:init=%a,growth=%a,backoff=%a,interval=%ld", f->init, f->growth,
                 f->backoff, f->interval);
        break;
    case AMP_SCALER_APEX: {
        char mn[40] = "none", mx[40] = "none";
        if (f->min != 0) snprintf(mn, sizeof mn, "%a", f->min);
        if (!isinf(f->max)) snprintf(mx, sizeof mx, "%a", f->max);
        snprintf(buf, len, "apex:init=%a,window=%ld,min=%s,max=%s", f->init, f->interval, mn, mx);
        break;
    }
    case AMP_SCALER_DEEPSPEED:
        snprintf(buf, len, "deepspeed:init=%a,window=%ld,min=%a,hysteresis=%ld,consecutive=%d,raise=%d",
                 f->init, f->interval, f->min, f->hysteresis, f->consecutive, f->raise);
        break;
    case AMP_SCALER_MEGATRON:
        snprintf(buf, len, "megatron:init=%a,min=%a,growth=%a,backoff=%a,interval=%ld,hysteresis=%ld",
                 f->init, f->min, f->growth, f->backoff, f->interval, f->hysteresis);
        break;
    case AMP_SCALER_KERAS:
        snprintf(buf, len, "keras:init=%a,interval=%ld", f->init, f->interval);
        break;
    default: ck_abort_msg("no spec for kind %d", (int)f->kind);
    }
}

static int same_d(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Runs the library and the transcription side by side over seq[0..n);
 * returns the step where both stopped, or -1. */
static long compare(fw *f, const unsigned char *seq, long n)
{
    char spec[256];
    fw_spec(f, spec, sizeof spec);
    fw_init(f);
    amp_scaler sc;
    REQUIRE(amp_scaler_init_str(&sc, spec) == AMP_OK, "%s: %s", spec, amp_errmsg());
    long stopped = -1;
    for (long i = 0; i < n; i++) {
        double used = fw_held(f);
        REQUIRE(amp_scaler_scale(&sc) == (float)used, "%s step %ld: float32 scale %a, want %a", spec, i,
                (double)amp_scaler_scale(&sc), (double)(float)used);
        int raised = fw_update(f, seq[i]);
        amp_scaler_obs obs = { .found_inf = seq[i] };
        amp_scaler_result r;
        amp_status st = amp_scaler_update(&sc, &obs, &r);
        REQUIRE(same_d(r.held_used, used), "%s step %ld: held used %a, want %a", spec, i, r.held_used, used);
        if (raised) {
            REQUIRE(st == AMP_ERUN, "%s step %ld: the framework raised, status %d", spec, i, st);
            REQUIRE(strstr(amp_errmsg(), raised == RAISED_MIN ? "Current loss scale already at minimum"
                                                              : "OverflowError: cannot convert float infinity"),
                    "%s step %ld: message '%s'", spec, i, amp_errmsg());
            REQUIRE(r.skipped && same_d(r.held_after, used), "%s step %ld: state changed by a raise", spec, i);
            amp_scaler_result r2;
            REQUIRE(amp_scaler_update(&sc, &obs, &r2) == AMP_ERUN, "%s: update after the stop", spec);
            stopped = i;
            break;
        }
        REQUIRE(st == AMP_OK, "%s step %ld (%c): status %d (%s)", spec, i, seq[i] ? 'I' : 'F', st, amp_errmsg());
        double after = fw_held(f);
        REQUIRE(same_d(r.held_after, after), "%s step %ld (%c): held after %a, want %a", spec, i,
                seq[i] ? 'I' : 'F', r.held_after, after);
        REQUIRE(r.scale_after == (float)after || (isnan(after) && isnan(r.scale_after)),
                "%s step %ld: float32 after %a, want %a", spec, i, (double)r.scale_after, (double)(float)after);
        REQUIRE(r.scale_used == (float)used, "%s step %ld: float32 used %a", spec, i, (double)r.scale_used);
        REQUIRE(r.skipped == seq[i], "%s step %ld: skipped %d", spec, i, r.skipped);
    }
    amp_scaler_free(&sc);
    return stopped;
}

/* ---- random sequences --------------------------------------------------------- */
typedef struct cfg {
    amp_scaler_kind kind;
    double init, growth, backoff, min, max;
    long hysteresis;
    int consecutive, raise;
} cfg;

static const cfg configs[] = {
    { AMP_SCALER_TORCH, 65536, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_TORCH, 0x1p120, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_TORCH, 0x1p-140, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_TORCH, 1000, 3, 0.3, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_TORCH, 0.1, 1.5, 0.75, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_APEX, 65536, 2, 0.5, 0, 16777216, 0, 0, 0 },
    { AMP_SCALER_APEX, 0x1p126, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_APEX, 0.1, 2, 0.5, 3, INFINITY, 0, 0, 0 },
    { AMP_SCALER_APEX, 0x1p30, 2, 0.5, 1, 0x1p20, 0, 0, 0 },          /* init above max */
    { AMP_SCALER_DEEPSPEED, 65536, 2, 0.5, 1, INFINITY, 2, 0, 0 },
    { AMP_SCALER_DEEPSPEED, 65536, 2, 0.5, 1, INFINITY, 2, 0, 1 },
    { AMP_SCALER_DEEPSPEED, 0x1p120, 2, 0.5, 256, INFINITY, 2, 0, 0 },
    { AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 256, INFINITY, 3, 1, 0 },
    { AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 3, INFINITY, 1, 0, 1 },
    { AMP_SCALER_DEEPSPEED, 0.1, 2, 0.5, 0x1p-1070, INFINITY, 1, 0, 0 },
    { AMP_SCALER_MEGATRON, 0x1p32, 2, 0.5, 1, INFINITY, 2, 0, 0 },
    { AMP_SCALER_MEGATRON, 0x1p120, 2, 0.5, 1, INFINITY, 1, 0, 0 },
    { AMP_SCALER_MEGATRON, 1000, 3, 0.3, 0.7, INFINITY, 3, 0, 0 },
    { AMP_SCALER_MEGATRON, 0.1, 1.5, 0.75, 0x1p-149, INFINITY, 2, 0, 0 },
    { AMP_SCALER_KERAS, 32768, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_KERAS, 0x1p120, 2, 0.5, 0, INFINITY, 0, 0, 0 },
    { AMP_SCALER_KERAS, 3, 2, 0.5, 0, INFINITY, 0, 0, 0 },
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

/* Found-inf flags with probability p each. */
static void fill_rate(unsigned char *seq, long n, double p)
{
    for (long i = 0; i < n; i++) seq[i] = (double)next32() / 4294967296.0 < p;
}

START_TEST(random_sequences)
{
    const cfg *c = &configs[_i];
    const double rates_quick[] = { 0.001, 0.01, 0.05, 0.5 };
    const double rates_full[] = { 0.001, 0.003, 0.01, 0.03, 0.05, 0.1, 0.2, 0.35, 0.5 };
    const long windows_quick[] = { 1, 3, 100, 2000 };
    const long windows_full[] = { 1, 2, 3, 5, 17, 100, 500, 1000, 2000 };
    int full = sweep();
    long n = full ? 100000 : 20000;
    const double *rates = full ? rates_full : rates_quick;
    const long *windows = full ? windows_full : windows_quick;
    int nr = full ? 9 : 4, nw = full ? 9 : 4;
    unsigned char *seq = malloc((size_t)n);
    rng = 0x5eed0000u + (uint64_t)_i;
    long stops = 0;
    for (int ri = 0; ri < nr; ri++)
        for (int wi = 0; wi < nw; wi++) {
            fill_rate(seq, n, rates[ri]);
            fw f = { .kind = c->kind, .init = c->init, .growth = c->growth, .backoff = c->backoff,
                     .min = c->min, .max = c->max, .interval = windows[wi], .hysteresis = c->hysteresis,
                     .consecutive = c->consecutive, .raise = c->raise };
            stops += compare(&f, seq, n) >= 0;
        }
    free(seq);
    /* the deepspeed configurations with raise=1 reach their minimum at 50% */
    if (c->kind == AMP_SCALER_DEEPSPEED && c->raise) ck_assert_msg(stops > 0, "no sequence reached the raise");
}
END_TEST

/* ---- regimes ----------------------------------------------------------------- */
static unsigned char *pattern(const char *p, long *n)
{
    /* "F*k" / "I*k" runs, e.g. "F300 I2 F5" */
    unsigned char *s = malloc(1 << 20);
    long k = 0;
    for (const char *q = p; *q;) {
        while (*q == ' ') q++;
        if (!*q) break;
        int v = *q == 'I';
        long cnt = strtol(q + 1, (char **)&q, 10);
        for (long j = 0; j < cnt; j++) s[k++] = (unsigned char)v;
    }
    *n = k;
    return s;
}

static long run_pattern(fw f, const char *p)
{
    long n;
    unsigned char *s = pattern(p, &n);
    long r = compare(&f, s, n);
    free(s);
    return r;
}

/* Runs SPEC over the pattern and returns the held scale after the last step. */
static double held_after(const char *spec, const char *p, amp_scaler_result *last)
{
    long n;
    unsigned char *s = pattern(p, &n);
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, spec), AMP_OK);
    for (long i = 0; i < n; i++) {
        amp_scaler_obs obs = { .found_inf = s[i] };
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, last), AMP_OK);
    }
    double h = amp_scaler_held(&sc);
    amp_scaler_free(&sc);
    free(s);
    return h;
}

static int has_event(const amp_scaler_result *r, amp_scaler_event_kind k)
{
    for (int i = 0; i < r->n_events; i++) if (r->events[i].kind == k) return 1;
    return 0;
}

/* Growth to and past each type's maximum. */
START_TEST(growth_past_the_maximum)
{
    amp_scaler_result r;
    /* torch: 2^127 is the last finite growth; later growths are refused */
    ck_assert(held_after("torch:init=2^120,interval=1", "F7", &r) == 0x1p127);
    ck_assert(held_after("torch:init=2^120,interval=1", "F50", &r) == 0x1p127);
    ck_assert(has_event(&r, AMP_SEV_GROWTH_REFUSED));
    fw t = { .kind = AMP_SCALER_TORCH, .init = 0x1p120, .growth = 2, .backoff = 0.5, .interval = 1 };
    run_pattern(t, "F50 I1 F3 I200 F10");
    /* megatron and keras: float32 growth reaches inf and stays (inf * 0.5 = inf) */
    ck_assert(isinf(held_after("megatron:init=2^120,interval=1,hysteresis=1", "F8", &r)));
    ck_assert(has_event(&r, AMP_SEV_INF));
    ck_assert(isinf(held_after("megatron:init=2^120,interval=1,hysteresis=1", "F8 I20", &r)));
    ck_assert(isinf(held_after("keras:init=2^120,interval=1", "F8 I20 F3", &r)));
    fw m = { .kind = AMP_SCALER_MEGATRON, .init = 0x1p120, .growth = 2, .backoff = 0.5, .min = 1,
             .interval = 1, .hysteresis = 1 };
    run_pattern(m, "F10 I5 F2 I1");
    fw k = { .kind = AMP_SCALER_KERAS, .init = 0x1p120, .interval = 1 };
    run_pattern(k, "F10 I5 F2 I1");
    /* deepspeed: a double: 2^128 and 2^129 are held, the float32 image is inf,
     * and backoff comes down again */
    ck_assert(held_after("deepspeed:init=2^127,window=1,hysteresis=1", "F1", &r) == 0x1p128);
    ck_assert(isinf(r.scale_after) && r.held_after == 0x1p128 && has_event(&r, AMP_SEV_INF));
    ck_assert(held_after("deepspeed:init=2^127,window=1,hysteresis=1", "F2", &r) == 0x1p129);
    char buf[40];
    amp_scaler_fmt_scale(AMP_SCALER_DEEPSPEED, 0x1p129, buf, sizeof buf);
    ck_assert_str_eq(buf, "6.80564733841877e+38");
    amp_scaler_fmt_scale(AMP_SCALER_DEEPSPEED, 65536, buf, sizeof buf);
    ck_assert_str_eq(buf, "65536");
    amp_scaler_fmt_scale(AMP_SCALER_DEEPSPEED, 0x1p32, buf, sizeof buf);
    ck_assert_str_eq(buf, "4294967296");
    amp_scaler_fmt_scale(AMP_SCALER_TORCH, 0x1p32, buf, sizeof buf);
    ck_assert_str_eq(buf, "4.2949673e+09");              /* float32 scalers print as before */
    ck_assert(held_after("deepspeed:init=2^127,window=1,hysteresis=1", "F2 I1", &r) == 0x1p128);
    ck_assert(held_after("deepspeed:init=2^127,window=1,hysteresis=1", "F2 I2", &r) == 0x1p127);
    ck_assert(r.scale_after == 0x1p127f);
    /* ... up to the double's own limit: 2^1023 * 2 = inf, and the next overflow
     * raises in DeepSpeed's log line (int(inf)) */
    fw d = { .kind = AMP_SCALER_DEEPSPEED, .init = 0x1p1000, .min = 1, .interval = 1, .hysteresis = 2 };
    ck_assert_int_eq(run_pattern(d, "F30 I1"), 30);
    fw d2 = { .kind = AMP_SCALER_DEEPSPEED, .init = 0x1p1000, .min = 1, .interval = 1, .hysteresis = 1 };
    ck_assert_int_eq(run_pattern(d2, "F23 I1"), -1);        /* 2^1023: halves to 2^1022 */
    ck_assert_int_eq(run_pattern(d2, "F24 I1"), 24);
    /* apex: max=none passes FLT_MAX too; inf / 2 stays inf (no raise) */
    fw a = { .kind = AMP_SCALER_APEX, .init = 0x1p120, .max = INFINITY, .interval = 1 };
    ck_assert_int_eq(run_pattern(a, "F10 I3 F1000 I5 F2"), -1);
    ck_assert(held_after("apex:init=2^127,window=1,max=none", "F1", &r) == 0x1p128);
    ck_assert(isinf(held_after("apex:init=2^1000,window=1,max=none", "F24 I3", &r)));
    /* apex starts at min(max, init) */
    ck_assert(held_after("apex:init=2^30,max=2^20", "", &r) == 0x1p20);
}
END_TEST

/* Backoff to and past the minimum. */
START_TEST(backoff_past_the_minimum)
{
    amp_scaler_result r;
    /* torch: float(double(2^-149) * 0.5) = 0 (a tie, to even), and 0 stays: the
     * growth 0 * 2 = 0 is finite and taken */
    ck_assert(held_after("torch:init=2^-148,interval=2", "I1", &r) == 0x1p-149);
    ck_assert(held_after("torch:init=2^-148,interval=2", "I2", &r) == 0.0);
    ck_assert(has_event(&r, AMP_SEV_ZERO));
    ck_assert(held_after("torch:init=2^-148,interval=2", "I2 F10", &r) == 0.0);
    fw t = { .kind = AMP_SCALER_TORCH, .init = 3, .growth = 2, .backoff = 0.5, .interval = 2 };
    run_pattern(t, "I160 F10 I2 F4");
    /* backoff 0.3 in double then rounded: the subnormal tail of 0.3^k */
    fw t3 = { .kind = AMP_SCALER_TORCH, .init = 1, .growth = 2, .backoff = 0.3, .interval = 2 };
    run_pattern(t3, "I100 F3");
    /* keras: float32 * 0.5 down to 0 */
    ck_assert(held_after("keras:init=2^-148,interval=2", "I2", &r) == 0.0);
    fw k = { .kind = AMP_SCALER_KERAS, .init = 3, .interval = 2 };
    run_pattern(k, "I160 F10");
    /* deepspeed at min_scale: raise (default) or stay */
    fw d = { .kind = AMP_SCALER_DEEPSPEED, .init = 8, .min = 2, .interval = 100, .hysteresis = 1, .raise = 1 };
    ck_assert_int_eq(run_pattern(d, "I5"), 2);
    fw dn = d;
    dn.raise = 0;
    ck_assert_int_eq(run_pattern(dn, "I20 F100 I3"), -1);
    ck_assert(held_after("deepspeed:init=8,min=2,hysteresis=1,raise=0", "I20", &r) == 2);
    /* a min that init * 2^-k never hits exactly: max(s/2, min) lands on min */
    fw d3 = { .kind = AMP_SCALER_DEEPSPEED, .init = 10, .min = 3, .interval = 100, .hysteresis = 1, .raise = 1 };
    ck_assert_int_eq(run_pattern(d3, "I5"), 2);
    /* with hysteresis 2 the raise waits for the second consecutive overflow */
    fw d4 = { .kind = AMP_SCALER_DEEPSPEED, .init = 2, .min = 2, .interval = 100, .hysteresis = 2, .raise = 1 };
    ck_assert_int_eq(run_pattern(d4, "I1 F3 I1"), 4);
    /* megatron: max(scale * backoff, min) in float32 */
    fw m = { .kind = AMP_SCALER_MEGATRON, .init = 1000, .growth = 3, .backoff = 0.3, .min = 0.7,
             .interval = 5, .hysteresis = 1 };
    run_pattern(m, "I30 F5 I1");
    /* apex without a minimum: the double halves through its subnormals to 0,
     * where float32 already read 0 long before */
    fw a = { .kind = AMP_SCALER_APEX, .init = 1, .max = 16777216, .interval = 2000 };
    run_pattern(a, "I1100 F10");
    ck_assert(held_after("apex:init=1,max=2^24", "I150", &r) == 0x1p-150);
    ck_assert(r.scale_after == 0.0f && r.held_after > 0);
    ck_assert(held_after("apex:init=1,max=2^24", "I1075", &r) == 0.0);
}
END_TEST

/* Hysteresis across a growth: DeepSpeed (non-consecutive) and Megatron refill
 * it only when the scale grows; consecutive DeepSpeed on every clean step. */
START_TEST(hysteresis_across_growth)
{
    amp_scaler_result r;
    /* deepspeed window 3, hysteresis 2: I (2->1, kept) F F F (growth, refilled
     * to 2) I (2->1, kept: no backoff) */
    ck_assert(held_after("deepspeed:init=1024,window=3,hysteresis=2", "I1 F3 I1", &r) == 2048);
    ck_assert(has_event(&r, AMP_SEV_HYSTERESIS));
    /* without the growth in between the second overflow backs off */
    ck_assert(held_after("deepspeed:init=1024,window=3,hysteresis=2", "I1 F2 I1", &r) == 512);
    /* megatron: the same refill at growth */
    ck_assert(held_after("megatron:init=1024,interval=3,hysteresis=2", "I1 F3 I1", &r) == 2048);
    ck_assert(held_after("megatron:init=1024,interval=3,hysteresis=2", "I1 F2 I1", &r) == 512);
    const char *pats[] = { "I1 F3 I1 F3 I2 F3 I3", "F2 I1 F1 I1 F3 I1 F6 I4", "I2 F3 I1 F3 I1 F3 I1 F3 I1" };
    for (int h = 1; h <= 3; h++)
        for (int p = 0; p < 3; p++)
            for (int cons = 0; cons < 2; cons++) {
                fw d = { .kind = AMP_SCALER_DEEPSPEED, .init = 1024, .min = 1, .interval = 3, .hysteresis = h,
                         .consecutive = cons };
                run_pattern(d, pats[p]);
                fw m = { .kind = AMP_SCALER_MEGATRON, .init = 1024, .growth = 2, .backoff = 0.5, .min = 1,
                         .interval = 3, .hysteresis = h };
                run_pattern(m, pats[p]);
            }
}
END_TEST

/* The replay CLI prints the held double (2^129 as 6.8e38) and stops with exit 1
 * at DeepSpeed's OverflowError. */
START_TEST(replay_prints_the_held_double)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin && *bin, "AMPSIM not set (make check sets it)");
    char dir[] = "/tmp/check_scaler_arith.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char in[300], out[300], cmd[1024];
    snprintf(in, sizeof in, "%s/flags.txt", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    FILE *fp = fopen(in, "w");
    fputs("0\n0\n1\n1\n", fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "'%s' scaler-replay --scaler deepspeed:init=2^127,window=1,hysteresis=2 '%s' > '%s'",
             bin, in, out);
    ck_assert_int_eq(system(cmd), 0);
    char *d;
    size_t n;
    ck_assert_int_eq(amp_read_file(out, 1 << 16, &d, &n), AMP_OK);
    ck_assert_str_eq(d, "step,input,skipped,scale_used,scale_after\n"
                        "0,0,0,1.7014118346046923e+38,3.402823669209385e+38\n"
                        "1,0,0,3.402823669209385e+38,6.80564733841877e+38\n"
                        "2,1,1,6.80564733841877e+38,6.80564733841877e+38\n"
                        "3,1,1,6.80564733841877e+38,3.402823669209385e+38\n");
    free(d);
    /* torch prints its float32 with %.9g, as always */
    snprintf(cmd, sizeof cmd, "'%s' scaler-replay --scaler torch:init=2^126,interval=1 '%s' > '%s'", bin, in, out);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(amp_read_file(out, 1 << 16, &d, &n), AMP_OK);
    ck_assert_str_eq(d, "step,input,skipped,scale_used,scale_after\n"
                        "0,0,0,8.50705917e+37,1.70141183e+38\n"
                        "1,0,0,1.70141183e+38,1.70141183e+38\n"
                        "2,1,1,1.70141183e+38,8.50705917e+37\n"
                        "3,1,1,8.50705917e+37,4.25352959e+37\n");
    free(d);
    /* deepspeed at a double inf: exit 1 at the next overflow */
    fp = fopen(in, "w");
    for (int i = 0; i < 30; i++) fputs("0\n", fp);
    fputs("1\n0\n", fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "'%s' scaler-replay --scaler deepspeed:init=2^1000,window=1 '%s' > '%s' 2>/dev/null",
             bin, in, out);
    int rc = system(cmd);
    ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    ck_assert_int_eq(amp_read_file(out, 1 << 16, &d, &n), AMP_OK);
    ck_assert_msg(strstr(d, "\n30,1,1,inf,inf\n") && !strstr(d, "\n31,"), "%s", d);
    free(d);
    remove(in);
    remove(out);
    rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scaler_arith");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, sweep() ? 3600 : 60);
    tcase_add_loop_test(tc, random_sequences, 0, N_CONFIGS);
    tcase_add_test(tc, growth_past_the_maximum);
    tcase_add_test(tc, backoff_past_the_minimum);
    tcase_add_test(tc, hysteresis_across_growth);
    tcase_add_test(tc, replay_prints_the_held_double);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
