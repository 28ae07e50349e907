/* Check suite: the statistics-driven loss scalers, adaptive (layer-wise,
 * after Zhao et al.) and underflow (ours), in sim/scaler_loss.c.
 * Statistics come from actually rounding constructed or random gradients
 * into fp16 (amp_round_f32); expected scales are worked out by hand in the
 * comments, or checked as properties by rounding again at the chosen scale
 * (and at the next smaller one). */
#include "ampsim.h"
#include "scaler_test.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- adaptive and underflow: statistics from actual rounding ---------------- */

/* Fraction of nonzero g with |g|*2^k below fp16's min subnormal 2^-24 (direct count). */
static double below_minsub(const float *g, size_t n, int k)
{
    size_t nz = 0, lo = 0;
    for (size_t i = 0; i < n; i++)
        if (g[i] != 0) { nz++; if (fabs((double)g[i]) * ldexp(1.0, k) < 0x1p-24) lo++; }
    return nz ? (double)lo / (double)nz : 0;
}

/* One tensor, several distributions: at the chosen 2^k the fraction of values
 * below the min subnormal is <= rate (and the flushed fraction, found by
 * rounding at 2^k, is at most that), amax*2^k*2 <= 65504, and k is the smallest
 * such exponent unless the overflow bound or min=1 decided. */
START_TEST(adaptive_rule_properties)
{
    enum { N = 4096 };
    float *g = malloc(N * sizeof *g);
    lcg_state = 7;
    const double ranges[][2] = { { -40, -20 }, { -30, -28 }, { -20, -5 }, { -60, -2 }, { -12, 3 }, { -45, -44 } };
    for (int t = 0; t < 6; t++) {
        make_grad(g, N, ranges[t][0], ranges[t][1]);
        amp_scaler sc;
        ck_assert_int_eq(amp_scaler_init_str(&sc, "adaptive:init=1,underflow=0.01"), AMP_OK);
        ck_assert(amp_scaler_is_layerwise(&sc) && amp_scaler_needs_stats(&sc));
        amp_stats st;
        round_stats(g, N, amp_scaler_tensor_scale(&sc, 0), &st);
        amp_scaler_tensor tt = { .name = "w", .st = &st };
        amp_scaler_obs obs = { .found_inf = 0, .n_tensors = 1, .tensors = &tt };
        amp_scaler_result r;
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        float s = amp_scaler_tensor_scale(&sc, 0);
        int k = ilogb(s);
        ck_assert(s == ldexpf(1.0f, k));
        amp_stats st2;
        double fl = round_stats(g, N, s, &st2);
        double amax = 0;
        for (int i = 0; i < N; i++) amax = fmax(amax, fabs((double)g[i]));
        int over_ok = amax * ldexp(1.0, k) * 2 <= 65504;
        int over_next = amax * ldexp(1.0, k + 1) * 2 <= 65504;
        ck_assert_msg(over_ok || k == 0, "range %d: k=%d overflows the headroom", t, k);
        ck_assert_msg(fl <= below_minsub(g, N, k), "range %d: flushed %.4f", t, fl);
        if (over_next) ck_assert_msg(below_minsub(g, N, k) <= 0.01, "range %d: k=%d leaves %.4f below", t, k,
                                     below_minsub(g, N, k));
        if (k > 0 && over_ok)
            ck_assert_msg(below_minsub(g, N, k - 1) > 0.01, "range %d: k-1=%d would do (%.4f)", t, k - 1,
                          below_minsub(g, N, k - 1));
        if (t == 4) ck_assert_int_eq(k, 0);            /* big gradients: min=1 */
        ck_assert(amp_scaler_scale(&sc) == s);
        amp_scaler_free(&sc);
    }
    free(g);
}
END_TEST

/* Hand-computed case in fp16 (underflowing: scaled binade < log2(2^-24) = -24;
 * headroom 2: amax*2^k*2 <= 65504).
 * a: 1000 values 2^-30 and 10 values 2^-10: u = 6 (2^-30 -> 2^-24), o = 24.
 * b: one value 2^-3, 99 values 2^-40: u = 16, o = 17 (2^-3*2^17*2 = 2^15).
 * Layer-wise: a 2^6, b 2^16. Global: min(max(6, 16), min(24, 17)) = 2^16. */
START_TEST(adaptive_hand_case)
{
    float g[1010];
    for (int i = 0; i < 1000; i++) g[i] = (i & 1) ? 0x1p-30f : -0x1p-30f;
    for (int i = 1000; i < 1010; i++) g[i] = 0x1p-10f;
    float h[100];
    for (int i = 0; i < 100; i++) h[i] = i == 0 ? 0x1p-3f : 0x1p-40f;
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "adaptive:init=1"), AMP_OK);
    amp_stats s0, s1;
    round_stats(g, 1010, 1.0f, &s0);
    round_stats(h, 100, 1.0f, &s1);
    /* scale 0: the statistics were taken at the global scale (1 here) */
    amp_scaler_tensor tt[2] = { { "a", 0, NULL, &s0, 0 }, { "b", 1, NULL, &s1, 0 } };
    amp_scaler_obs obs = { 0, 2, tt };
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert_msg(amp_scaler_tensor_scale(&sc, 0) == 0x1p6f, "%a", amp_scaler_tensor_scale(&sc, 0));
    ck_assert_msg(amp_scaler_tensor_scale(&sc, 1) == 0x1p16f, "%a", amp_scaler_tensor_scale(&sc, 1));
    ck_assert_msg(amp_scaler_scale(&sc) == 0x1p16f, "%a", amp_scaler_scale(&sc));
    ck_assert(r.scale_used == 1.0f && r.scale_after == 0x1p16f);
    ck_assert(has_event(&r, AMP_SEV_LAYER));

    /* layer-wise step: each tensor at its own scale; b's gradient grew 2^4 and
     * overflows at 2^16 (2^1 * 2^16 = 2^17 > 65504). b: o = 13 (2^1*2^13*2 =
     * 2^15), u = 12 (2^-36 -> 2^-24): 2^12. a: stays 2^6. Global: min(max(6,12),
     * min(24,13)) = 2^12. */
    for (int i = 0; i < 100; i++) h[i] *= 16;
    round_stats(h, 100, 0x1p16f, &s1);
    ck_assert(s1.cls[AMP_CLS_OVERFLOW] == 1);
    round_stats(g, 1010, 0x1p6f, &s0);
    tt[0].scale = 0x1p6f;
    tt[1].scale = 0x1p16f;
    obs.found_inf = 1;
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(r.skipped);
    ck_assert_msg(amp_scaler_tensor_scale(&sc, 1) == 0x1p12f, "%a", amp_scaler_tensor_scale(&sc, 1));
    ck_assert(amp_scaler_tensor_scale(&sc, 0) == 0x1p6f);
    ck_assert_msg(amp_scaler_scale(&sc) == 0x1p12f, "%a", amp_scaler_scale(&sc));

    /* global step: both tensors at the global 2^12 (scale field 0). a at 2^12:
     * u = 6, o = 24; b: u = 12, o = 13 -> global stays 2^12, layers as before */
    round_stats(h, 100, 0x1p12f, &s1);
    round_stats(g, 1010, 0x1p12f, &s0);
    tt[0].scale = tt[1].scale = 0;
    obs.found_inf = 0;
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(amp_scaler_scale(&sc) == 0x1p12f);
    ck_assert(amp_scaler_tensor_scale(&sc, 0) == 0x1p6f && amp_scaler_tensor_scale(&sc, 1) == 0x1p12f);

    /* inf found but no tensor shows it: every scale halves */
    amp_scaler_tensor none[2] = { { "a", 0, NULL, NULL, 0 }, { "b", 1, NULL, NULL, 0 } };
    amp_scaler_obs obs2 = { 1, 2, none };
    ck_assert_int_eq(amp_scaler_update(&sc, &obs2, &r), AMP_OK);
    ck_assert(amp_scaler_tensor_scale(&sc, 0) == 0x1p5f && amp_scaler_tensor_scale(&sc, 1) == 0x1p11f);
    ck_assert(amp_scaler_scale(&sc) == 0x1p11f && has_event(&r, AMP_SEV_BACKOFF));
    ck_assert(amp_scaler_tensor_scale(&sc, 7) == 1.0f);   /* unseen tensor: init */
    amp_scaler_free(&sc);
}
END_TEST

/* The global target pools the rate over all values: 10 values at 2^-40 in a
 * small tensor are within 1e-3 of 10010 values, so the global scale stays at
 * min=1 (2^-20 needs no scaling), while that tensor's own scale is 2^16. */
START_TEST(adaptive_global_pools)
{
    static float big[10000];
    float small[10];
    for (int i = 0; i < 10000; i++) big[i] = 0x1p-20f;
    for (int i = 0; i < 10; i++) small[i] = 0x1p-40f;
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "adaptive:init=1"), AMP_OK);
    amp_stats s0, s1;
    round_stats(big, 10000, 1.0f, &s0);
    round_stats(small, 10, 1.0f, &s1);
    amp_scaler_tensor tt[2] = { { "w", 0, NULL, &s0, 0 }, { "b", 0, NULL, &s1, 0 } };
    amp_scaler_obs obs = { 0, 2, tt };
    amp_scaler_result r;
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert_msg(amp_scaler_scale(&sc) == 1.0f, "%a", amp_scaler_scale(&sc));
    ck_assert(amp_scaler_tensor_scale(&sc, 0) == 1.0f && amp_scaler_tensor_scale(&sc, 1) == 0x1p16f);
    /* 11 small values: one too many -> the global scale must lift them: 2^16 */
    float small2[11];
    for (int i = 0; i < 11; i++) small2[i] = 0x1p-40f;
    round_stats(small2, 11, 1.0f, &s1);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert_msg(amp_scaler_scale(&sc) == 0x1p16f, "%a", amp_scaler_scale(&sc));
    amp_scaler_free(&sc);
}
END_TEST

/* Damping: a tensor at 2^16 whose underflow target drops to 2^6 with room
 * under its overflow bound (o = 17) steps down one binade per step; when the
 * bound itself falls below the current scale it drops at once. */
START_TEST(adaptive_damping)
{
    float h[100];
    for (int i = 0; i < 100; i++) h[i] = i == 0 ? 0x1p-3f : 0x1p-40f;
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "adaptive:init=1"), AMP_OK);
    amp_stats st;
    amp_scaler_tensor tt = { "b", 0, NULL, &st, 0 };
    amp_scaler_obs obs = { 0, 1, &tt };
    amp_scaler_result r;
    round_stats(h, 100, 1.0f, &st);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(amp_scaler_scale(&sc) == 0x1p16f);
    for (int i = 1; i < 100; i++) h[i] = 0x1p-30f;          /* u = 6, o = 17 */
    for (int k = 1; k <= 12; k++) {
        round_stats(h, 100, amp_scaler_scale(&sc), &st);
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        float want = ldexpf(1.0f, k <= 10 ? 16 - k : 6);
        ck_assert_msg(amp_scaler_scale(&sc) == want && amp_scaler_tensor_scale(&sc, 0) == want,
                      "step %d: %a want %a", k, amp_scaler_scale(&sc), want);
    }
    /* the largest value grows to 2^9: at 2^6 its scaled amax 2^15 gives o = 5
     * (2^15 * 2^-1 * 2 <= 65504) < 6: down at once to 2^5 */
    h[0] = 0x1p9f;
    round_stats(h, 100, amp_scaler_scale(&sc), &st);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert_msg(amp_scaler_scale(&sc) == 0x1p5f, "%a", amp_scaler_scale(&sc));
    amp_scaler_free(&sc);
}
END_TEST

/* underflow: with a flushed fraction above the threshold and headroom it grows
 * at once; without headroom it does not; inf/NaN backs off as torch. */
START_TEST(underflow_strategy)
{
    float g[1000];
    for (int i = 0; i < 1000; i++) g[i] = i < 10 ? 0x1p-8f : 0x1p-27f;  /* 99% tiny */
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "underflow:init=1,interval=1000,flush=0.01"), AMP_OK);
    ck_assert(amp_scaler_needs_stats(&sc) && !amp_scaler_is_layerwise(&sc));
    amp_stats st;
    amp_scaler_tensor tt = { "w", 0, NULL, &st, 0 };
    amp_scaler_obs obs = { 0, 1, &tt };
    amp_scaler_result r;
    /* 2^-27 * s flushes while s <= 4 (2^-25 is the tie between 0 and 2^-24: even, 0);
     * at s = 8 it is 2^-24 and survives */
    float want[] = { 2, 4, 8, 8, 8 };
    for (int k = 0; k < 5; k++) {
        double fl = round_stats(g, 1000, amp_scaler_scale(&sc), &st);
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        ck_assert_msg(r.scale_after == want[k], "step %d: %.9g (flushed %.3f)", k, r.scale_after, fl);
        if (k < 3) ck_assert(has_event(&r, AMP_SEV_UNDERFLOW_RAISE));
        else ck_assert_int_eq(r.n_events, 0);
    }
    amp_scaler_free(&sc);
    /* no headroom: amax 2^-8 * 2^20 = 2^12; 2^12*2*2 = 2^14 <= 65504 still ok; at
     * 2^22: 2^14*4 = 2^16 > 65504 -> no raise even though 99% flush */
    for (int i = 0; i < 1000; i++) g[i] = i < 10 ? 0x1p-8f : 0x1p-60f;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "underflow:init=2^20,interval=1000,flush=0.01"), AMP_OK);
    float want2[] = { 0x1p21f, 0x1p22f, 0x1p22f, 0x1p22f };
    for (int k = 0; k < 4; k++) {
        round_stats(g, 1000, amp_scaler_scale(&sc), &st);
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        ck_assert_msg(r.scale_after == want2[k], "step %d: %a", k, r.scale_after);
    }
    /* inf: torch backoff */
    obs.found_inf = 1;
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 0x1p21f);
    amp_scaler_free(&sc);
}
END_TEST

/* underflow's ceiling: after an overflow at S it backs off to S/2 and, although
 * values still flush and there is headroom, does not grow early to S again;
 * the periodic growth after `interval` clean steps lifts the ceiling, and the
 * early growth resumes above it. The ceiling survives a checkpoint image. */
START_TEST(underflow_ceiling)
{
    float g[1000];
    for (int i = 0; i < 1000; i++) g[i] = i < 10 ? 0x1p-8f : 0x1p-60f;   /* 99% flush at any safe scale */
    amp_scaler sc;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "underflow:init=2^10,interval=5,flush=0.01"), AMP_OK);
    amp_stats st;
    amp_scaler_tensor tt = { "w", 0, NULL, &st, 0 };
    amp_scaler_obs obs = { 0, 1, &tt };
    amp_scaler_result r;
    round_stats(g, 1000, amp_scaler_scale(&sc), &st);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);          /* early: 2^11 */
    ck_assert(r.scale_after == 0x1p11f);
    obs.found_inf = 1;                                                      /* overflow at 2^11 */
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(r.skipped && r.scale_after == 0x1p10f);
    obs.found_inf = 0;
    /* clean steps 1..4 at 2^10: no early growth to the ceiling 2^11 */
    for (int k = 0; k < 4; k++) {
        round_stats(g, 1000, amp_scaler_scale(&sc), &st);
        ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
        ck_assert_msg(r.scale_after == 0x1p10f && !has_event(&r, AMP_SEV_UNDERFLOW_RAISE), "step %d: %a", k, r.scale_after);
    }
    uint8_t *img;
    size_t len;
    ck_assert_int_eq(amp_scaler_save(&sc, &img, &len), AMP_OK);
    amp_scaler back;
    ck_assert_int_eq(amp_scaler_init_str(&back, "underflow:init=2^10,interval=5,flush=0.01"), AMP_OK);
    ck_assert_int_eq(amp_scaler_load(&back, img, len), AMP_OK);
    ck_assert(back.ceiling == 0x1p11f && back.scale == 0x1p10f && back.tracker == 4);
    free(img);
    amp_scaler_free(&back);
    /* the 5th clean step is torch's periodic growth: 2^11, ceiling lifted */
    round_stats(g, 1000, amp_scaler_scale(&sc), &st);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(r.scale_after == 0x1p11f && has_event(&r, AMP_SEV_GROWTH) && sc.ceiling == 0);
    /* and the early growth goes on from there */
    round_stats(g, 1000, amp_scaler_scale(&sc), &st);
    ck_assert_int_eq(amp_scaler_update(&sc, &obs, &r), AMP_OK);
    ck_assert(r.scale_after == 0x1p12f && has_event(&r, AMP_SEV_UNDERFLOW_RAISE));
    amp_scaler_free(&sc);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scaler_adaptive");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, adaptive_rule_properties);
    tcase_add_test(tc, adaptive_hand_case);
    tcase_add_test(tc, adaptive_global_pools);
    tcase_add_test(tc, adaptive_damping);
    tcase_add_test(tc, underflow_strategy);
    tcase_add_test(tc, underflow_ceiling);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
