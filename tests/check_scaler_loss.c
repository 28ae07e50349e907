/* Check suite: loss scalers (sim/scaler_loss.c).
 *
 * Expected values come from (1) a golden trace typed in from the frameworks' rules (docs/scalers.md),
 * typed in; (2) a tiny separate transcription of each rule written here
 * straight from the frameworks' rules as docs/scalers.md states them (ref_* below; torch's reference
 * takes the literal reading "if isfinite(new): scale = new; tracker = 0"),
 * run against the library over long scripted and random I/F sequences and
 * compared step by step (skipped, scale used, scale after); (3) closed forms
 * (2^(16-k) decay, tie-to-even at 2^-150, 2^127 growth limit). adaptive and
 * underflow: tests/check_scaler_adaptive.c. */
#include "ampsim.h"
#include "scaler_test.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ck_assert records a checkpoint (a write) on every call: loops use REQUIRE. */
#define REQUIRE(c, ...) do { if (!(c)) ck_abort_msg(__VA_ARGS__); } while (0)

/* ---- the golden trace ------------------------------------------------------ */
static const char golden_pattern[] = "FFFIFFFFIIIFFFIIIII";
static const float golden_torch[19] = { 1024, 1024, 1024, 2048, 1024, 1024, 1024, 2048, 2048, 1024,
                                        512, 256, 256, 256, 512, 256, 128, 64, 32 };
static const float golden_megatron[19] = { 1024, 1024, 1024, 2048, 2048, 2048, 2048, 4096, 4096, 4096,
                                           2048, 1024, 1024, 1024, 2048, 2048, 1024, 512, 256 };

static void run_golden(const char *spec, const float *want)
{
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, spec), AMP_OK);
    for (int i = 0; golden_pattern[i]; i++) {
        amp_scaler_obs obs = { .found_inf = golden_pattern[i] == 'I' };
        float before = amp_scaler_scale(&sc);
        ck_assert_msg(before == want[i], "%s step %d: scale before %.9g, want %.9g", spec, i, before, want[i]);
        amp_scaler_result r;
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        ck_assert_msg(r.scale_used == want[i], "%s step %d: used %.9g, want %.9g", spec, i, r.scale_used, want[i]);
        ck_assert_int_eq(r.skipped, obs.found_inf);
        ck_assert_int_eq(r.step, i);
    }
    amp_scaler_free(&sc);
}

START_TEST(golden_torch_trace) { run_golden("torch:init=1024,interval=3", golden_torch); }
END_TEST
START_TEST(golden_megatron_trace) { run_golden("megatron:init=1024,interval=3,hysteresis=2,min=256", golden_megatron); }
END_TEST

/* ---- independent transcriptions of the frameworks' rules ----------------------------- */
typedef struct ref {
    int kind;               /* amp_scaler_kind */
    float fscale;           /* torch, megatron, keras */
    double dscale;          /* apex, deepspeed */
    long tracker, unskipped, it, last_overflow, cur_hyst, hyst_tracker;
    /* params */
    double growth, backoff, min, max;
    long interval, hysteresis;
    int consecutive, raise;
} ref;

static void ref_init(ref *r, int kind, double init, double growth, double backoff, double min,
                     double max, long interval, long hysteresis, int consecutive, int raise)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->fscale = (float)init;
    r->dscale = init;
    r->growth = growth; r->backoff = backoff; r->min = min; r->max = max;
    r->interval = interval; r->hysteresis = hysteresis;
    r->consecutive = consecutive; r->raise = raise;
    r->last_overflow = -1;
    r->cur_hyst = hysteresis;
    r->hyst_tracker = hysteresis;
}

static float ref_scale(const ref *r)
{
    return (r->kind == AMP_SCALER_APEX || r->kind == AMP_SCALER_DEEPSPEED) ? (float)r->dscale : r->fscale;
}

/* One step; returns 1 if the rule raised ("Current loss scale already at
 * minimum"), 2 if DeepSpeed's overflow message raised (int() of an inf scale). */
static int ref_step(ref *r, int overflow, int *skip)
{
    *skip = overflow;
    switch (r->kind) {
    case AMP_SCALER_TORCH:
        if (overflow) { r->fscale = (float)((double)r->fscale * r->backoff); r->tracker = 0; }
        else {
            r->tracker += 1;
            if (r->tracker == r->interval) {
                float nw = (float)((double)r->fscale * r->growth);
                if (isfinite(nw)) { r->fscale = nw; r->tracker = 0; }
            }
        }
        break;
    case AMP_SCALER_APEX:
        if (overflow) {
            r->dscale = r->min != 0 ? fmax(r->min, r->dscale / 2) : r->dscale / 2;
            r->unskipped = 0;
        } else {
            r->unskipped += 1;
        }
        if (r->unskipped == r->interval) { r->dscale = fmin(r->max, r->dscale * 2); r->unskipped = 0; }
        break;
    case AMP_SCALER_DEEPSPEED:
        if (overflow) {
            if (r->hysteresis == 1 || r->cur_hyst == 1) {
                if (r->dscale == r->min && r->raise) return 1;
                if (isinf(r->dscale)) return 2;
                r->dscale = fmax(r->dscale / 2, r->min);
            } else {
                if (isinf(r->dscale)) return 2;
                r->cur_hyst -= 1;
            }
            r->last_overflow = r->it;
        } else {
            if (r->consecutive) r->cur_hyst = r->hysteresis;
            if ((r->it - r->last_overflow) % r->interval == 0) {
                if (!r->consecutive) r->cur_hyst = r->hysteresis;
                r->dscale *= 2;
            }
        }
        r->it += 1;
        break;
    case AMP_SCALER_MEGATRON:
        if (overflow) {
            r->tracker = 0;
            r->hyst_tracker -= 1;
            if (r->hyst_tracker <= 0) r->fscale = fmaxf(r->fscale * (float)r->backoff, (float)r->min);
        } else {
            r->tracker += 1;
            if (r->tracker == r->interval) {
                r->tracker = 0;
                r->hyst_tracker = r->hysteresis;
                r->fscale = r->fscale * (float)r->growth;
            }
        }
        break;
    case AMP_SCALER_KERAS:
        if (overflow) { r->fscale = r->fscale / 2; r->tracker = 0; }
        else if (++r->tracker == r->interval) { r->fscale = r->fscale * 2; r->tracker = 0; }
        break;
    default: ck_abort_msg("no reference for kind %d", r->kind);
    }
    return 0;
}

/* Sequences: 0 random with p_inf = p, 1 scripted runs around the window. */
static void make_seq(int *seq, long n, int mode, double p, long window)
{
    long i = 0;
    if (mode == 0) {
        for (; i < n; i++) seq[i] = (lcg() % 1000000) < (uint32_t)(p * 1e6);
        return;
    }
    while (i < n) {
        long runs_f[] = { 1, window - 1, window, window + 1, 2 * window, 3 * window - 1, 0 };
        long runs_i[] = { 1, 1, 2, 3, 5, 12 };
        long lf = runs_f[lcg() % 7], li = runs_i[lcg() % 6];
        for (long k = 0; k < lf && i < n; k++) seq[i++] = 0;
        for (long k = 0; k < li && i < n; k++) seq[i++] = 1;
    }
}

/* Runs library and reference side by side; returns the step where both raised, or -1. */
static long compare_seq(const char *spec, ref *rf, const int *seq, long n)
{
    amp_scaler sc;
    REQUIRE(amp_scaler_init_str(&sc, spec) == AMP_OK, "%s: %s", spec, amp_errmsg());
    long raised = -1;
    for (long i = 0; i < n; i++) {
        float used_ref = ref_scale(rf);
        int skip_ref;
        int rr = ref_step(rf, seq[i], &skip_ref);
        amp_scaler_obs obs = { .found_inf = seq[i] };
        amp_scaler_result res;
        amp_status st = amp_scaler_update(&sc, &obs, &res);
        if (rr) {
            REQUIRE(st == AMP_ERUN, "%s step %ld: reference raised, library returned %d", spec, i, st);
            REQUIRE(strstr(amp_errmsg(), rr == 1 ? "Current loss scale already at minimum"
                                                  : "OverflowError: cannot convert float infinity"),
                    "%s: message '%s'", spec, amp_errmsg());
            raised = i;
            break;
        }
        REQUIRE(st == AMP_OK, "%s step %ld: status %d (%s)", spec, i, st, amp_errmsg());
        float after_ref = ref_scale(rf);
        REQUIRE(res.scale_used == used_ref || (isnan(used_ref) && isnan(res.scale_used)),
                      "%s step %ld (%c): used %.9g, reference %.9g", spec, i, seq[i] ? 'I' : 'F',
                      res.scale_used, used_ref);
        REQUIRE(res.scale_after == after_ref, "%s step %ld (%c): after %.9g, reference %.9g", spec, i,
                      seq[i] ? 'I' : 'F', res.scale_after, after_ref);
        REQUIRE(res.skipped == skip_ref, "%s step %ld: skipped %d, reference %d", spec, i, res.skipped, skip_ref);
    }
    amp_scaler_free(&sc);
    return raised;
}

typedef struct cfg {
    const char *spec;
    int kind;
    double init, growth, backoff, min, max;
    long interval, hysteresis;
    int consecutive, raise;
} cfg;

static const cfg configs[] = {
    { "torch", AMP_SCALER_TORCH, 65536, 2, 0.5, 0, 0, 2000, 0, 0, 0 },
    { "torch:init=1024,interval=3", AMP_SCALER_TORCH, 1024, 2, 0.5, 0, 0, 3, 0, 0, 0 },
    { "torch:init=1000,growth=3,backoff=0.25,interval=7", AMP_SCALER_TORCH, 1000, 3, 0.25, 0, 0, 7, 0, 0, 0 },
    { "torch:init=2^126,interval=2", AMP_SCALER_TORCH, 0x1p126, 2, 0.5, 0, 0, 2, 0, 0, 0 },
    { "torch:init=0.1,growth=1.5,backoff=0.3,interval=1", AMP_SCALER_TORCH, 0.1, 1.5, 0.3, 0, 0, 1, 0, 0, 0 },
    { "apex", AMP_SCALER_APEX, 65536, 2, 0.5, 0, 16777216, 2000, 0, 0, 0 },
    { "apex:init=1024,window=3,min=256", AMP_SCALER_APEX, 1024, 2, 0.5, 256, 16777216, 3, 0, 0, 0 },
    { "apex:init=1024,window=2,min=3,max=5000", AMP_SCALER_APEX, 1024, 2, 0.5, 3, 5000, 2, 0, 0, 0 },
    { "apex:init=7,window=1,max=none", AMP_SCALER_APEX, 7, 2, 0.5, 0, INFINITY, 1, 0, 0, 0 },
    { "deepspeed:raise=0", AMP_SCALER_DEEPSPEED, 65536, 2, 0.5, 1, 0, 1000, 2, 0, 0 },
    { "deepspeed:init=1024,window=3,min=256,hysteresis=2,raise=0", AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 256, 0, 3, 2, 0, 0 },
    { "deepspeed:init=1024,window=3,min=256,hysteresis=3,consecutive=1,raise=0", AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 256, 0, 3, 3, 1, 0 },
    { "deepspeed:init=1024,window=5,min=3,hysteresis=1,raise=0", AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 3, 0, 5, 1, 0, 0 },
    { "deepspeed:init=1024,window=4,min=16,hysteresis=2,consecutive=1,raise=0", AMP_SCALER_DEEPSPEED, 1024, 2, 0.5, 16, 0, 4, 2, 1, 0 },
    { "megatron", AMP_SCALER_MEGATRON, 0x1p32, 2, 0.5, 1, 0, 1000, 2, 0, 0 },
    { "megatron:init=1024,interval=3,hysteresis=2,min=256", AMP_SCALER_MEGATRON, 1024, 2, 0.5, 256, 0, 3, 2, 0, 0 },
    { "megatron:init=1000,interval=2,hysteresis=3,min=0.7,growth=3,backoff=0.3", AMP_SCALER_MEGATRON, 1000, 3, 0.3, 0.7, 0, 2, 3, 0, 0 },
    { "megatron:init=2^120,interval=1,hysteresis=1", AMP_SCALER_MEGATRON, 0x1p120, 2, 0.5, 1, 0, 1, 1, 0, 0 },
    { "keras", AMP_SCALER_KERAS, 32768, 2, 0.5, 0, 0, 2000, 0, 0, 0 },
    { "keras:init=3,interval=2", AMP_SCALER_KERAS, 3, 2, 0.5, 0, 0, 2, 0, 0, 0 },
    { "keras:init=2^120,interval=1", AMP_SCALER_KERAS, 0x1p120, 2, 0.5, 0, 0, 1, 0, 0, 0 },
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

START_TEST(transcriptions_agree)
{
    const cfg *c = &configs[_i];
    enum { N = 20000 };
    int *seq = malloc(N * sizeof *seq);
    const double probs[] = { 0.0005, 0.01, 0.2, 0.5, 0.9 };
    lcg_state = 12345 + (uint64_t)_i;
    for (int mode = 0; mode < 7; mode++) {
        long n = N;
        if (mode < 5) make_seq(seq, n, 0, probs[mode], c->interval);
        else make_seq(seq, n, 1, 0, c->interval < 50 ? c->interval : 50);
        if (mode == 6) { /* long finite runs of the full default interval, then bursts */
            for (long i = 0; i < n; i++) seq[i] = (i % (c->interval + 7)) >= c->interval;
        }
        ref rf;
        ref_init(&rf, c->kind, c->init, c->growth, c->backoff, c->min, c->max, c->interval,
                 c->hysteresis, c->consecutive, c->raise);
        compare_seq(c->spec, &rf, seq, n);
    }
    free(seq);
}
END_TEST

/* deepspeed with raise=1 (its default): the reference and the library stop at
 * the same step, with AMP_ERUN and the event. */
START_TEST(deepspeed_raise_matches_reference)
{
    enum { N = 5000 };
    int *seq = malloc(N * sizeof *seq);
    lcg_state = 99;
    int stops = 0;
    for (int trial = 0; trial < 40; trial++) {
        make_seq(seq, N, 0, 0.3 + 0.015 * trial, 4);
        ref rf;
        long hy = 1 + trial % 3;
        ref_init(&rf, AMP_SCALER_DEEPSPEED, 64, 2, 0.5, 2, 0, 4, hy, trial % 2, 1);
        char spec[128];
        snprintf(spec, sizeof spec, "deepspeed:init=64,window=4,min=2,hysteresis=%ld,consecutive=%d", hy, trial % 2);
        if (compare_seq(spec, &rf, seq, N) >= 0) stops++;
    }
    ck_assert_msg(stops >= 20, "only %d of 40 trials reached the minimum", stops);
    free(seq);
}
END_TEST

static amp_status step(amp_scaler *sc, int inf, amp_scaler_result *r)
{
    amp_scaler_obs obs = { .found_inf = inf };
    return amp_scaler_update(sc, &obs, r);
}

/* torch: 65536 * 0.5^k = 2^(16-k) down to 2^-149 (k = 165); 2^-150 is a tie
 * between 0 and 2^-149 and rounds to even: 0, where it stays. */
START_TEST(torch_decays_to_zero)
{
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "torch"), AMP_OK);
    amp_scaler_result r;
    int zero_events = 0;
    for (int k = 1; k <= 400; k++) {
        ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
        float want = k <= 165 ? ldexpf(1.0f, 16 - k) : 0.0f;
        ck_assert_msg(r.scale_after == want, "after %d overflows: %a, want %a", k, r.scale_after, want);
        ck_assert_int_eq(r.skipped, 1);
        zero_events += has_event(&r, AMP_SEV_ZERO);
        if (k == 166) ck_assert(has_event(&r, AMP_SEV_ZERO));
        if (k > 166) ck_assert(has_event(&r, AMP_SEV_AT_MIN));
    }
    ck_assert_int_eq(zero_events, 1);
    /* finite steps: 0 * 2 = 0 stays 0 */
    for (int k = 0; k < 5000; k++) ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
    ck_assert(amp_scaler_scale(&sc) == 0.0f);
    ck_assert(isinf(amp_scaler_inv(ldexpf(1.0f, -149))));
    ck_assert(amp_scaler_inv(65536.0f) == 0x1p-16f);
    amp_scaler_free(&sc);
}
END_TEST

/* torch: growth stops at 2^127 (2^128 is not a finite float32); megatron and
 * keras have no such check and reach +inf. */
START_TEST(growth_to_float32_limit)
{
    amp_scaler sc;
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "torch:init=2^120,interval=1"), AMP_OK);
    for (int k = 1; k <= 20; k++) {
        ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
        float want = ldexpf(1.0f, k <= 7 ? 120 + k : 127);
        ck_assert_msg(r.scale_after == want, "step %d: %a", k, r.scale_after);
        if (k > 7) ck_assert(has_event(&r, AMP_SEV_GROWTH_REFUSED));
        else ck_assert(has_event(&r, AMP_SEV_GROWTH));
    }
    /* a backoff still works from the limit */
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 0x1p126f);
    amp_scaler_free(&sc);

    /* growth 3 from 1: float(double(s)*3) each time, 3^k exact to 3^15; then rounded;
     * the last finite value is followed by refusals. */
    ck_assert_int_eq(amp_scaler_init_str(&sc, "torch:init=1,growth=3,interval=1"), AMP_OK);
    float s = 1;
    for (int k = 1; k <= 100; k++) {
        float ns = (float)((double)s * 3.0);
        if (isfinite(ns)) s = ns;
        ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
        ck_assert_msg(r.scale_after == s, "k=%d: %a vs %a", k, r.scale_after, s);
        if (k <= 15) ck_assert(r.scale_after == (float)pow(3, k));
    }
    ck_assert(s > 1e38f && isfinite(s));
    amp_scaler_free(&sc);

    const char *nolimit[] = { "megatron:init=2^120,interval=1", "keras:init=2^120,interval=1" };
    for (int j = 0; j < 2; j++) {
        ck_assert_int_eq(amp_scaler_init_str(&sc, nolimit[j]), AMP_OK);
        int inf_ev = 0;
        for (int k = 1; k <= 10; k++) {
            ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
            inf_ev += has_event(&r, AMP_SEV_INF);
            if (k == 8) ck_assert_msg(isinf(r.scale_after), "%s: %a", nolimit[j], r.scale_after);
        }
        ck_assert_int_eq(inf_ev, 1);
        amp_scaler_free(&sc);
    }
}
END_TEST

/* deepspeed: error at the minimum (raise=1), or stuck there (raise=0). */
START_TEST(deepspeed_error_at_minimum)
{
    amp_scaler sc;
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "deepspeed:init=8,min=2,hysteresis=2"), AMP_OK);
    /* I: hysteresis 2 -> 1 (skipped, 8 kept); I: 8 -> 4; I: 4 -> 2; I: raise */
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 8 && has_event(&r, AMP_SEV_HYSTERESIS));
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 4 && has_event(&r, AMP_SEV_BACKOFF));
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 2);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_ERUN);
    ck_assert(r.skipped && r.scale_used == 2 && r.scale_after == 2);
    ck_assert(has_event(&r, AMP_SEV_MIN_ERROR));
    ck_assert_msg(strstr(amp_errmsg(), "Current loss scale already at minimum"), "%s", amp_errmsg());
    ck_assert_int_eq(step(&sc, 0, &r), AMP_ERUN);   /* the run has stopped */
    amp_scaler_free(&sc);

    ck_assert_int_eq(amp_scaler_init_str(&sc, "deepspeed:init=4,min=2,hysteresis=1,raise=0"), AMP_OK);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 2);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
        ck_assert(r.skipped && r.scale_after == 2 && has_event(&r, AMP_SEV_AT_MIN));
    }
    amp_scaler_free(&sc);
}
END_TEST

START_TEST(apex_clamps)
{
    amp_scaler sc;
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "apex:init=8,min=2,window=2"), AMP_OK);
    const float down[] = { 4, 2, 2, 2 };
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
        ck_assert(r.skipped && r.scale_after == down[k]);
    }
    ck_assert(has_event(&r, AMP_SEV_AT_MIN));
    amp_scaler_free(&sc);
    ck_assert_int_eq(amp_scaler_init_str(&sc, "apex:init=4,max=16,window=1"), AMP_OK);
    const float up[] = { 8, 16, 16, 16 };
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
        ck_assert(!r.skipped && r.scale_after == up[k]);
    }
    amp_scaler_free(&sc);
    /* min=none: halves below 1 */
    ck_assert_int_eq(amp_scaler_init_str(&sc, "apex:init=1"), AMP_OK);
    for (int k = 0; k < 3; k++) ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 0.125f);
    /* default max 2^24 */
    amp_scaler_free(&sc);
    ck_assert_int_eq(amp_scaler_init_str(&sc, "apex:init=2^23,window=1"), AMP_OK);
    for (int k = 0; k < 3; k++) ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
    ck_assert(r.scale_after == 16777216.0f);
    amp_scaler_free(&sc);
}
END_TEST

/* megatron: hysteresis is refilled only at growth (finite steps between two
 * infs do not refill it). */
START_TEST(megatron_hysteresis)
{
    amp_scaler sc;
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "megatron:init=1024,interval=5,hysteresis=2"), AMP_OK);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 1024 && has_event(&r, AMP_SEV_HYSTERESIS));
    for (int k = 0; k < 4; k++) ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);            /* not refilled: backoff now */
    ck_assert(r.scale_after == 512 && has_event(&r, AMP_SEV_BACKOFF));
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);            /* tracker below 0: backoff again */
    ck_assert(r.scale_after == 256);
    for (int k = 0; k < 5; k++) ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
    ck_assert(r.scale_after == 512 && has_event(&r, AMP_SEV_GROWTH));   /* refilled to 2 */
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 512);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.scale_after == 256);
    amp_scaler_free(&sc);
    /* deepspeed with consecutive=1 refills on every finite step */
    ck_assert_int_eq(amp_scaler_init_str(&sc, "deepspeed:init=1024,window=100,hysteresis=2,consecutive=1"), AMP_OK);
    for (int k = 0; k < 10; k++) {
        ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
        ck_assert(r.skipped && r.scale_after == 1024);
        ck_assert_int_eq(step(&sc, 0, &r), AMP_OK);
    }
    amp_scaler_free(&sc);
}
END_TEST

START_TEST(none_and_static)
{
    amp_scaler sc;
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "none"), AMP_OK);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(!r.skipped && r.scale_used == 1 && r.scale_after == 1);
    amp_scaler_free(&sc);
    ck_assert_int_eq(amp_scaler_init_str(&sc, "static:2^10"), AMP_OK);
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(step(&sc, k & 1, &r), AMP_OK);
        ck_assert(!r.skipped && r.scale_after == 1024);
    }
    amp_scaler_free(&sc);
    ck_assert_int_eq(amp_scaler_init_str(&sc, "static:scale=8,skip=1"), AMP_OK);
    ck_assert_int_eq(step(&sc, 1, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 8);
    ck_assert(!amp_scaler_is_layerwise(&sc) && !amp_scaler_needs_stats(&sc));
    amp_scaler_free(&sc);
}
END_TEST

/* underflow (ours): without statistics it is exactly torch. */
START_TEST(underflow_without_stats_is_torch)
{
    enum { N = 20000 };
    int *seq = malloc(N * sizeof *seq);
    lcg_state = 4242;
    make_seq(seq, N, 0, 0.01, 0);
    ref rf;
    ref_init(&rf, AMP_SCALER_TORCH, 1024, 2, 0.5, 0, 0, 50, 0, 0, 0);
    compare_seq("underflow:init=1024,interval=50", &rf, seq, N);
    free(seq);
}
END_TEST

/* Checkpoint: save mid-run, load into a fresh scaler of the same SPEC, and
 * both continue identically; bad images are AMP_EFORMAT. */
START_TEST(save_load_roundtrip)
{
    const char *specs[] = { "torch:interval=7", "apex:window=5,min=4", "deepspeed:init=2^20,window=5,hysteresis=3,raise=0",
                            "megatron:interval=4", "keras:interval=3", "adaptive", "underflow:interval=9" };
    lcg_state = 2024;
    float g[256];
    for (int si = 0; si < 7; si++) {
        amp_scaler a, b;
        ck_assert_int_eq(amp_scaler_init_str(&a, specs[si]), AMP_OK);
        ck_assert_int_eq(amp_scaler_init_str(&b, specs[si]), AMP_OK);
        amp_stats st[3];
        amp_scaler_tensor tt[3];
        for (int k = 0; k < 600; k++) {
            int inf = lcg() % 10 == 0;
            for (int t = 0; t < 3; t++) {
                make_grad(g, 256, -40 + 5 * t - (k % 50) * 0.1, -20 + 5 * t);
                round_stats(g, 256, amp_scaler_scale(&a), &st[t]);
                tt[t] = (amp_scaler_tensor){ "t", 0, NULL, &st[t], 0 };
            }
            amp_scaler_obs obs = { inf, 3, tt };
            amp_scaler_result ra, rb;
            if (k == 300) {
                uint8_t *img;
                size_t len;
                ck_assert_int_eq(amp_scaler_save(&a, &img, &len), AMP_OK);
                ck_assert_int_eq(amp_scaler_load(&b, img, len - 1), AMP_EFORMAT);
                ck_assert_int_eq(amp_scaler_load(&b, img, len), AMP_OK);
                amp_scaler other;
                ck_assert_int_eq(amp_scaler_init_str(&other, si ? "torch" : "apex"), AMP_OK);
                ck_assert_int_eq(amp_scaler_load(&other, img, len), AMP_EFORMAT);
                amp_scaler_free(&other);
                free(img);
            }
            amp_status sa = amp_scaler_update(&a, &obs, &ra);
            if (k >= 300) {
                amp_status sb = amp_scaler_update(&b, &obs, &rb);
                REQUIRE(sa == sb && ra.scale_used == rb.scale_used && ra.scale_after == rb.scale_after &&
                        ra.skipped == rb.skipped && ra.step == rb.step && ra.n_events == rb.n_events,
                        "%s step %d differs after load", specs[si], k);
                for (int t = 0; t < 3; t++)
                    REQUIRE(amp_scaler_tensor_scale(&a, (size_t)t) == amp_scaler_tensor_scale(&b, (size_t)t), "%s", specs[si]);
            }
        }
        amp_scaler_free(&a);
        amp_scaler_free(&b);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scaler_loss");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, golden_torch_trace);
    tcase_add_test(tc, golden_megatron_trace);
    tcase_add_loop_test(tc, transcriptions_agree, 0, N_CONFIGS);
    tcase_add_test(tc, deepspeed_raise_matches_reference);
    tcase_add_test(tc, torch_decays_to_zero);
    tcase_add_test(tc, growth_to_float32_limit);
    tcase_add_test(tc, deepspeed_error_at_minimum);
    tcase_add_test(tc, apex_clamps);
    tcase_add_test(tc, megatron_hysteresis);
    tcase_add_test(tc, none_and_static);
    tcase_add_test(tc, underflow_without_stats_is_torch);
    tcase_add_test(tc, save_load_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
