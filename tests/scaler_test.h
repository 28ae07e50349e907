/* Test helpers shared by the loss-scaler suites (check_scaler_loss,
 * check_scaler_adaptive): a fixed linear congruential generator, a test for an
 * event in an update's result, log-uniform gradients, and their statistics
 * from an actual fp16 rounding. Header only (static inline). */
#ifndef AMP_SCALER_TEST_H
#define AMP_SCALER_TEST_H

#include "ampsim.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

static uint64_t lcg_state;
static inline uint32_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static inline int has_event(const amp_scaler_result *r, amp_scaler_event_kind k)
{
    for (int i = 0; i < r->n_events; i++) if (r->events[i].kind == k) return 1;
    return 0;
}

/* Rounds g*scale into fp16 and returns its statistics and the exact flushed fraction. */
static inline double round_stats(const float *g, size_t n, float scale, amp_stats *st)
{
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = g[i] * scale;
    amp_stats_init(st);
    amp_round_opts o = amp_round_defaults();
    ck_assert_int_eq(amp_round_f32(amp_format_get(AMP_FMT_FP16), &o, x, y, n, st), AMP_OK);
    size_t nz = 0, fl = 0;
    for (size_t i = 0; i < n; i++) if (x[i] != 0) { nz++; if (y[i] == 0) fl++; }
    free(x);
    free(y);
    return nz ? (double)fl / (double)nz : 0;
}

/* log-uniform magnitudes over [2^lo, 2^hi), random signs */
static inline void make_grad(float *g, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        double u = (lcg() + 0.5) / 4294967296.0 * 2;
        if (u >= 1) u -= 1;
        double v = exp2(lo + (hi - lo) * u);
        g[i] = (float)((lcg() & 1) ? v : -v);
    }
}

#endif
