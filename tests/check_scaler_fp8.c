/* Check suite: FP8 scaling (sim/scaler_fp8.c).
 *
 * Delayed scaling is compared step by step with a separate transcription of
 * TE's fused update kernel (history array with slot 0 written, roll unless
 * the amax is 0, fmaxf maximum or slot 0, scaled_max / amax with its edge
 * cases), over random amax sequences with zeros, NaN, inf and subnormals. Quantized values are checked against the MPFR reference
 * rounding (amp_round1_mpfr) of the independently computed scaled input.
 * MX and block cases are constructed so the expected scales are known in
 * closed form (a block amax with a known exponent, elements that saturate
 * under floor and not under ceil). */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(c, ...) do { if (!(c)) ck_abort_msg(__VA_ARGS__); } while (0)

static uint64_t lcg_state;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(lcg_state >> 33);
}

static int same(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

/* The oracle: saturating RNE into f, MPFR path. */
static float sat_round(const amp_format *f, double x)
{
    amp_round_opts o = amp_round_defaults();
    o.flags = AMP_SATURATE;
    return amp_round1_mpfr(f, &o, x, 0, NULL);
}

/* ---- delayed: TE transcription ------------------------------------------------
 * Transformer Engine's fused update (common/recipe/delayed_scaling.cu,
 * kernel_bulk, TE 2.x), written out for one tensor and one thread: the new
 * amax is in slot 0 of the history; if it is not 0 the history rolls (slot i
 * gets slot i+1, the last slot gets the new amax, slot 0 is zeroed) while the
 * window's maximum is reduced with fmaxf from 0; the scale is
 * scaled_max / amax with scaled_max = fp8_max * 2^-margin (float32), the
 * previous scale for an amax that is not finite or not > 0, and FLT_MAX for
 * an infinite quotient. */
/* CUDA fmaxf: returns the other argument when one is NaN (any NaN). */
static float dev_fmaxf(float a, float b) { return isnan(a) ? b : isnan(b) ? a : fmax(a, b); }

typedef struct te_ref {
    float hist[64];
    int L;
    float scale;
} te_ref;

static void te_ref_step(te_ref *t, float amax, float fmax, int margin, int most_recent,
                        float *used, float *after)
{
    *used = t->scale;
    t->hist[0] = amax;                     /* the cast kernel writes this step's amax */
    const float last_amax = t->hist[0];
    float m = 0, a[64];
    if (last_amax != 0.0f) {
        for (int i = 0; i < t->L; i++) {
            a[i] = (i < t->L - 1) ? t->hist[i + 1] : last_amax;
            m = dev_fmaxf(m, a[i]);
        }
        for (int i = 0; i < t->L; i++) t->hist[i] = (i > 0) ? a[i] : 0;
    }
    if (most_recent) m = last_amax;
    const float scaled_max = fmax * powf(2.0f, (float)-margin);
    float scale;
    if (isfinite(m) && m > 0) scale = scaled_max / m;
    else scale = t->scale;
    if (isinf(scale)) scale = FLT_MAX;
    t->scale = scale;
    *after = scale;
}

static float random_amax(void)
{
    uint32_t r = lcg() % 100;
    if (r < 5) return 0.0f;
    if (r < 7) return NAN;
    if (r < 9) return INFINITY;
    if (r < 11) return ldexpf(1.0f + (float)(lcg() % 100) / 100, -140);      /* subnormal: scale inf */
    return ldexpf(1.0f + (float)(lcg() % 1000) / 1000, (int)(lcg() % 40) - 20);
}

START_TEST(delayed_matches_te_transcription)
{
    const int Ls[] = { 1, 2, 5, 16, 64 };
    lcg_state = 31 + (uint64_t)_i;
    for (int li = 0; li < 5; li++)
        for (int algo = 0; algo < 2; algo++)
            for (int margin = 0; margin < 3; margin++)
                for (int fi = 0; fi < 2; fi++) {
                    char spec[96];
                    snprintf(spec, sizeof spec, "delayed:history=%d,algo=%s,margin=%d,fmt=%s", Ls[li],
                             algo ? "most_recent" : "max", margin, fi ? "e5m2" : "e4m3");
                    amp_fp8_scaler sc;
                    ck_assert_int_eq(amp_fp8_init_str(&sc, spec), AMP_OK);
                    te_ref t;
                    memset(&t, 0, sizeof t);
                    t.L = Ls[li];
                    t.scale = 1.0f;
                    float fmax = fi ? 57344.0f : 448.0f;
                    for (int k = 0; k < 400; k++) {
                        float a = random_amax(), u1, a1, u2, a2;
                        te_ref_step(&t, a, fmax, margin, algo, &u1, &a1);
                        REQUIRE(amp_fp8_observe_amax(&sc, 3, NULL, a, &u2, &a2) == AMP_OK, "%s", amp_errmsg());
                        REQUIRE(same(u1, u2) && same(a1, a2), "%s step %d amax %a: used %a/%a after %a/%a",
                                spec, k, a, u2, u1, a2, a1);
                    }
                    amp_fp8_free(&sc);
                }
}
END_TEST

static void observe_seq(const char *spec, const float *amax, const float *used, const float *after, int n)
{
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, spec), AMP_OK);
    for (int k = 0; k < n; k++) {
        float u, a;
        ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, amax[k], &u, &a), AMP_OK);
        ck_assert_msg(same(u, used[k]) && same(a, after[k]), "%s step %d: used %.9g after %.9g, want %.9g %.9g",
                      spec, k, u, a, used[k], after[k]);
    }
    amp_fp8_free(&sc);
}

/* Hand-worked sequences (e4m3, 448). */
START_TEST(delayed_edge_cases)
{
    const float am[] = { 2, 1, 1, 1, 1, 0.5f };
    /* history 4, max: the window holds the last 4 amaxes including this one */
    const float u_max[] = { 1, 224, 224, 224, 224, 448 }, a_max[] = { 224, 224, 224, 224, 448, 448 };
    observe_seq("delayed:history=4", am, u_max, a_max, 6);
    const float u_mr[] = { 1, 224, 448, 448, 448, 448 }, a_mr[] = { 224, 448, 448, 448, 448, 896 };
    observe_seq("delayed:history=4,algo=most_recent", am, u_mr, a_mr, 6);
    /* margin 1 halves: 448/2/2 = 112 */
    const float u_m[] = { 1, 112 }, a_m[] = { 112, 224 };
    observe_seq("delayed:margin=1,algo=most_recent", am, u_m, a_m, 2);
    /* amax 0 first: nothing recorded, scale stays 1; a NaN is recorded but the
     * fmaxf reduction skips it (max), most_recent keeps the previous scale */
    const float z[] = { 0, 4, NAN, 8, 8, 8, 8 };
    const float u_z[] = { 1, 1, 112, 112, 56, 56, 56 }, a_z[] = { 1, 112, 112, 56, 56, 56, 56 };
    observe_seq("delayed:history=3", z, u_z, a_z, 7);
    observe_seq("delayed:history=3,algo=most_recent", z, u_z, a_z, 7);
    /* a zero amax does not move the window: 64 stays in a 2-slot window over zeros */
    const float zw[] = { 64, 1, 0, 0, 0, 1 };
    const float u_zw[] = { 1, 7, 7, 7, 7, 7 }, a_zw[] = { 7, 7, 7, 7, 7, 448 };
    observe_seq("delayed:history=2", zw, u_zw, a_zw, 6);
    /* margin: scaled_max = 448 * 2^-1 = 224 first, then / amax: an amax of
     * 0x1.8p-120 gives 224 / amax = 0x1.2aaaaap+127 (finite), not
     * (448 / amax = inf) -> FLT_MAX */
    const float tiny[] = { 0x1.8p-120f };
    const float u_t[] = { 1 }, a_t[] = { 0x1.2aaaaap+127f };
    observe_seq("delayed:margin=1", tiny, u_t, a_t, 1);
    /* inf amax keeps; a subnormal amax gives 448/amax = inf -> FLT_MAX */
    const float s[] = { INFINITY, 0x1p-140f, 1 };
    const float u_s[] = { 1, 1, FLT_MAX }, a_s[] = { 1, FLT_MAX, 448 };
    observe_seq("delayed:history=1", s, u_s, a_s, 3);
    /* e5m2: 57344 */
    const float e[] = { 7 };
    const float u_e[] = { 1 }, a_e[] = { 8192 };
    observe_seq("delayed:fmt=e5m2", e, u_e, a_e, 1);
    /* the history window rolls: a big amax leaves after exactly `history` steps */
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, "delayed:history=10"), AMP_OK);
    float u, a;
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 64, &u, &a), AMP_OK);
    for (int k = 1; k < 10; k++) {
        ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 1, &u, &a), AMP_OK);
        ck_assert(a == 7.0f);
    }
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 1, &u, &a), AMP_OK);
    ck_assert(u == 7.0f && a == 448.0f);
    amp_fp8_free(&sc);
}
END_TEST

/* Quantize with delayed scaling: step 0 at scale 1, step 1 at 448/amax(step 0);
 * values that grew saturate at 448; the gradient role goes to e5m2. */
START_TEST(delayed_quantize)
{
    enum { N = 777 };
    float x[N], q[N], y[N], sinv;
    lcg_state = 5;
    for (int i = 0; i < N; i++) x[i] = ((float)(lcg() % 20001) - 10000.0f) / 10000.0f * 0.01f;
    x[3] = 0.01f;   /* amax */
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, "delayed"), AMP_OK);
    const amp_format *e4 = amp_format_get(AMP_FMT_E4M3), *e5 = amp_format_get(AMP_FMT_E5M2);
    ck_assert(amp_fp8_format(&sc, AMP_FP8_ACT) == e4 && amp_fp8_format(&sc, AMP_FP8_WEIGHT) == e4);
    ck_assert(amp_fp8_format(&sc, AMP_FP8_GRAD) == e5);
    ck_assert_int_eq(amp_fp8_nblocks(&sc, AMP_FP8_ACT, 7, 111), 1);
    amp_fp8_info info;
    amp_stats st;
    amp_stats_init(&st);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_ACT, x, 7, 111, q, y, &sinv, &st, &info), AMP_OK);
    ck_assert(info.scale == 1.0f && info.amax == 0.01f && info.fmt == e4);
    ck_assert(info.scale_next == 448.0f / 0.01f);
    for (int i = 0; i < N; i++) {
        float want = sat_round(e4, x[i]);
        REQUIRE(q[i] == want && y[i] == want, "i=%d x=%a q=%a want %a", i, x[i], q[i], want);
    }
    ck_assert(st.cls[AMP_CLS_FLUSHED] > 0);   /* unscaled: values below 2^-10 flush */
    /* step 1: the tensor doubled: the largest values saturate */
    for (int i = 0; i < N; i++) x[i] *= 2;
    amp_stats_init(&st);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_ACT, x, 1, N, q, y, &sinv, &st, &info), AMP_OK);
    float scale = 448.0f / 0.01f;
    ck_assert(info.scale == scale && sinv == 1.0f / scale);
    for (int i = 0; i < N; i++) {
        float want = sat_round(e4, x[i] * scale);
        REQUIRE(q[i] == want && y[i] == want * (1.0f / scale), "i=%d q=%a want %a", i, q[i], want);
    }
    ck_assert(q[3] == 448.0f && st.cls[AMP_CLS_SATURATED] >= 1);
    /* gradient role, another tensor id: its own state, e5m2 */
    ck_assert_int_eq(amp_fp8_quantize(&sc, 1, AMP_FP8_GRAD, x, 1, N, q, NULL, NULL, NULL, &info), AMP_OK);
    ck_assert(info.fmt == e5 && info.scale == 1.0f && info.scale_next == 57344.0f / 0.02f);
    for (int i = 0; i < N; i++) REQUIRE(q[i] == sat_round(e5, x[i]), "i=%d", i);
    /* y may alias x and q may be NULL */
    ck_assert_int_eq(amp_fp8_quantize(&sc, 1, AMP_FP8_GRAD, x, 1, N, NULL, x, NULL, NULL, &info), AMP_OK);
    ck_assert(info.scale == 57344.0f / 0.02f);
    amp_fp8_free(&sc);
}
END_TEST

START_TEST(current_scaling)
{
    amp_fp8_scaler sc;
    float u, a;
    ck_assert_int_eq(amp_fp8_init_str(&sc, "current"), AMP_OK);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 3, &u, &a), AMP_OK);
    ck_assert(u == 448.0f / 3.0f && a == u);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 0, &u, &a), AMP_OK);
    ck_assert(u == 1.0f);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, NAN, &u, &a), AMP_OK);
    ck_assert(u == 1.0f);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, INFINITY, &u, &a), AMP_OK);
    ck_assert(u == 1.0f);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 0x1p-140f, &u, &a), AMP_OK);
    ck_assert(u == FLT_MAX);
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, amp_format_get(AMP_FMT_E5M2), 7, &u, &a), AMP_OK);
    ck_assert(u == 8192.0f);
    amp_fp8_free(&sc);
    /* pow2 rounds down: 448/3 = 149.33 -> 128; 448/448 = 1; 448/500 -> 0.5; FLT_MAX -> 2^127 */
    ck_assert_int_eq(amp_fp8_init_str(&sc, "current:pow2=1"), AMP_OK);
    const float am[] = { 3, 448, 500, 0x1p-140f, 1e-3f };
    const float want[] = { 128, 1, 0.5f, 0x1p127f, 262144 };
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, am[k], &u, &a), AMP_OK);
        ck_assert_msg(u == want[k], "amax %a: %a want %a", am[k], u, want[k]);
    }
    /* quantize: the tensor's own amax now */
    float x[5] = { 1, -3, 0.1f, 2.5f, 0 }, q[5], y[5];
    amp_fp8_info info;
    ck_assert_int_eq(amp_fp8_quantize(&sc, 9, AMP_FP8_ACT, x, 1, 5, q, y, NULL, NULL, &info), AMP_OK);
    ck_assert(info.scale == 128 && info.amax == 3);
    for (int i = 0; i < 5; i++) ck_assert(q[i] == sat_round(amp_format_get(AMP_FMT_E4M3), x[i] * 128.0f) && y[i] == q[i] / 128);
    amp_fp8_free(&sc);
}
END_TEST

/* ---- every strategy at amax 0, subnormal, inf, NaN ------------------------------
 * amp_fp8_observe_amax against transcriptions of each source's scale rule, over
 * hand-picked amaxes (0, float32 subnormals, the ends of the normal range,
 * values around fp8_max, inf, NaN) and random float32 bit patterns:
 *   current   TE compute_scale_from_amax (common/recipe/recipe_common.cuh),
 *             epsilon 0 (TE's default), value_for_inf FLT_MAX, pow2 mask
 *   mx floor  the OCP reference's exponent-bit path (microxcaling
 *             mx/cpp/shared_exp.cuh, with the block amax's biased exponent)
 *   mx ceil   TE float_to_e8m0(amax * max_norm_rcp) (util/ptx_arch_spec.cuh,
 *             pre-Blackwell path)
 *   block     ampsim's guard (DeepSeek's kernel has none: s = amax / 448 with
 *             0/0 = NaN): amax 0 or non-finite -> divisor 1, a quotient that
 *             underflows to 0 -> FLT_TRUE_MIN; pow2: the smallest 2^k >= amax/max
 * delayed is compared through te_ref_step above. */
static float te_compute_scale_from_amax(float amax, float max_fp8, int pow2)
{
    const float epsilon = 0.0f, value_for_inf = FLT_MAX;
    if (amax < epsilon) amax = epsilon;
    float scale = 1.f;
    if (isinf(amax) || amax == 0.f || isnan(amax)) return scale;
    scale = max_fp8 / amax;
    if (isinf(scale)) scale = value_for_inf;
    if (pow2) {
        uint32_t bits;
        memcpy(&bits, &scale, 4);
        bits &= 0xFF800000u;
        memcpy(&scale, &bits, 4);
    }
    return scale;
}

static float construct_float(uint32_t sign, uint32_t biased_exp, uint32_t mant)
{
    uint32_t u = (sign << 31) | (biased_exp << 23) | mant;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* microxcaling: block scale 2^X from the amax's biased exponent (0 for zero and
 * subnormals, 255 for inf/NaN), elem_emax subtracted, clamped to [-127, 127]
 * with overflow to NaN; X = -127 is the subnormal 2^-127. */
static float ocp_shared_scale(float amax, int elem_emax)
{
    uint32_t u;
    memcpy(&u, &amax, 4);
    int shared_exp = (int)((u >> 23) & 0xff);
    shared_exp = shared_exp != 255 ? shared_exp - elem_emax : shared_exp;
    const int emax = 127;
    int shared_ub = shared_exp - 127;
    shared_exp = shared_ub > emax ? 255 : shared_exp;
    shared_exp = shared_ub < -emax ? 127 - emax : shared_exp;
    uint32_t mant = (shared_exp == 0 || shared_exp == 255) ? (0x800000u >> 1) : 0;
    return construct_float(0, (uint32_t)shared_exp, mant);
}

/* TE: E8M0 exponent (biased) of val rounded up, as a block scale 2^X. */
static float te_e8m0_scale(float amax, float max_norm)
{
    const float max_norm_rcp = (float)(1.0 / max_norm);
    float val = amax * max_norm_rcp;
    uint32_t e;
    if (isnan(val)) e = 0xFF;
    else if (isinf(val)) e = 0xFE;
    else if (val == 0.0f) e = 0x00;
    else {
        uint32_t u;
        memcpy(&u, &val, 4);
        e = u >> 23;
        uint32_t mantissa = u & 0x7FFFFF;
        if ((mantissa > 0 && e != 0xFE) && !(e == 0 && mantissa <= 0x400000)) ++e;
    }
    if (e == 0xFF) return NAN;
    return ldexpf(1.0f, (int)e - 127);
}

static float block_rule(float amax, float fmax, int pow2)
{
    if (!(amax > 0.0f) || !isfinite(amax)) return 1.0f;
    if (pow2) {
        double r = (double)amax / fmax;      /* exact: both float32, the quotient's binade is found below */
        int k = -160;
        while (ldexp(1.0, k) < r) k++;
        return ldexpf(1.0f, k < -149 ? -149 : k);
    }
    float sdiv = amax / fmax;
    return sdiv == 0 ? FLT_TRUE_MIN : sdiv;
}

START_TEST(special_amax_every_strategy)
{
    static const float picks[] = { 0.0f, FLT_TRUE_MIN, 0x1p-140f, 0x1.8p-130f, 0x1p-127f, 0x1.fffffcp-127f,
                                   FLT_MIN, 0x1.000002p-126f, 0x1p-120f, 1e-30f, 0x1.fffffep-9f, 0x1p-8f,
                                   1.0f, 3.0f, 447.99997f, 448.0f, 448.00003f, 480.0f, 57344.0f, 1e30f,
                                   0x1p127f, FLT_MAX, INFINITY, NAN };
    const int np = (int)(sizeof picks / sizeof picks[0]);
    const char *fmts[] = { "e4m3", "e5m2", "e2m1", "e3m2" };
    lcg_state = 777;
    for (int fi = 0; fi < 4; fi++) {
        const amp_format *f;
        amp_format fbuf;
        ck_assert_int_eq(amp_format_parse(fmts[fi], &fbuf), AMP_OK);
        f = &fbuf;
        const float fmax = (float)f->max_finite;
        char spec[7][64];
        snprintf(spec[0], 64, "current:fmt=%s", fmts[fi]);
        snprintf(spec[1], 64, "current:pow2=1,fmt=%s", fmts[fi]);
        snprintf(spec[2], 64, "mx:fmt=%s", fmts[fi]);
        snprintf(spec[3], 64, "mx:exp=ceil,fmt=%s", fmts[fi]);
        snprintf(spec[4], 64, "block:fmt=%s", fmts[fi]);
        snprintf(spec[5], 64, "block:pow2=1,fmt=%s", fmts[fi]);
        snprintf(spec[6], 64, "delayed:history=4,margin=%d,fmt=%s", fi, fmts[fi]);
        amp_fp8_scaler sc[7];
        for (int k = 0; k < 7; k++) REQUIRE(amp_fp8_init_str(&sc[k], spec[k]) == AMP_OK, "%s", amp_errmsg());
        te_ref t;
        memset(&t, 0, sizeof t);
        t.L = 4;
        t.scale = 1.0f;
        for (int it = 0; it < 20000 + np; it++) {
            float a;
            if (it < np) a = picks[it];
            else {
                uint32_t u = lcg() & 0x7fffffffu;
                if (lcg() % 4 == 0) u &= 0x007fffffu;            /* a quarter subnormal or 0 */
                memcpy(&a, &u, 4);
            }
            float want[7], u_, got;
            want[0] = te_compute_scale_from_amax(a, fmax, 0);
            want[1] = te_compute_scale_from_amax(a, fmax, 1);
            want[2] = 1.0f / ocp_shared_scale(a, f->emax);
            want[3] = 1.0f / te_e8m0_scale(a, fmax);
            want[4] = (float)(1.0 / (double)block_rule(a, fmax, 0));
            want[5] = (float)(1.0 / (double)block_rule(a, fmax, 1));
            te_ref_step(&t, a, fmax, fi, 0, &u_, &want[6]);
            for (int k = 0; k < 7; k++) {
                float used;
                REQUIRE(amp_fp8_observe_amax(&sc[k], 0, f, a, &used, &got) == AMP_OK, "%s", amp_errmsg());
                REQUIRE(same(got, want[k]), "%s amax %a: scale %a, want %a", spec[k], (double)a, (double)got,
                        (double)want[k]);
            }
        }
        for (int k = 0; k < 7; k++) amp_fp8_free(&sc[k]);
    }
}
END_TEST

/* amp_fp8_info.nonfinite, counted while y is written, equals a count over y
 * for every strategy, with NaN and inf among the inputs (the NaN of an MX
 * block spreads over the block); without y it is 0. */
START_TEST(quantize_counts_nonfinite)
{
    enum { R = 3, C = 40, N = R * C };
    static const char *specs[] = { "delayed", "current", "current:pow2=1", "mx", "mx:exp=ceil", "block",
                                   "block:size=16" };
    float x[N], y[N];
    lcg_state = 91;
    for (int i = 0; i < N; i++) x[i] = ((float)(lcg() % 2001) - 1000.0f) / 7.0f;
    x[5] = NAN;
    x[C + 1] = INFINITY;
    x[2 * C + 39] = -INFINITY;
    for (int k = 0; k < (int)(sizeof specs / sizeof specs[0]); k++) {
        for (int role = AMP_FP8_ACT; role <= AMP_FP8_GRAD; role++) {
            amp_fp8_scaler sc;
            REQUIRE(amp_fp8_init_str(&sc, specs[k]) == AMP_OK, "%s: %s", specs[k], amp_errmsg());
            amp_fp8_info info;
            for (int step = 0; step < 2; step++) {
                REQUIRE(amp_fp8_quantize(&sc, 0, (amp_fp8_role)role, x, R, C, NULL, y, NULL, NULL, &info) == AMP_OK,
                        "%s", amp_errmsg());
                size_t want = amp_count_nonfinite(y, N);
                REQUIRE(info.nonfinite == want && want >= 1, "%s role %d step %d: counted %zu, y has %zu",
                        specs[k], role, step, info.nonfinite, want);
            }
            ck_assert_int_eq(amp_fp8_quantize(&sc, 1, (amp_fp8_role)role, x, R, C, NULL, NULL, NULL, NULL, &info),
                             AMP_OK);
            ck_assert_uint_eq(info.nonfinite, 0);
            amp_fp8_free(&sc);
        }
    }
}
END_TEST

/* ---- MX ---------------------------------------------------------------------- */
/* rows 2, cols 40: blocks (0,0) 32 elements, (0,1) 8, (1,0) 32, (1,1) 8.
 * (0,0): amax 480 (binade 8 = e4m3 emax): floor X = 2^0, 480 saturates to 448;
 *        ceil X = 2^ceil(log2(480/448)) = 2, 480/2 = 240 exact.
 * (0,1): amax 300: both 2^0 (300/448 < 1); 300 -> 288.
 * (1,0): amax 2^-130: floor -130-8 -> clamped -127; ceil: 448*2^-139 < 2^-130
 *        -> -138 -> clamped -127; 2^-130 / 2^-127 = 0.125.
 * (1,1): a NaN: floor (OCP reference, torch.max propagates it): the block's
 *        scale is NaN and all its values NaN; ceil (TE: fmaxf skips it): the
 *        amax of the others, 0.9, gives 2^ceil(log2(0.9/448)) = 2^-8 and only
 *        the NaN element is NaN. */
static void mx_case(int ceil_mode)
{
    enum { R = 2, C = 40 };
    float x[R * C], q[R * C], y[R * C], sinv[4];
    for (int i = 0; i < R * C; i++) x[i] = 0.3f * (float)((i % 7) - 3);
    x[0] = 480;
    x[32] = 300;
    for (int c = 0; c < 32; c++) x[C + c] = c == 5 ? -0x1p-130f : 0x1p-133f * (float)(c % 3);
    x[C + 35] = NAN;
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, ceil_mode ? "mx:exp=ceil" : "mx"), AMP_OK);
    ck_assert_int_eq(amp_fp8_nblocks(&sc, AMP_FP8_ACT, R, C), 4);
    amp_fp8_info info;
    amp_stats st;
    amp_stats_init(&st);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_ACT, x, R, C, q, y, sinv, &st, &info), AMP_OK);
    const float X[4] = { ceil_mode ? 2.0f : 1.0f, 1.0f, 0x1p-127f, ceil_mode ? 0x1p-8f : NAN };
    for (int b = 0; b < 4; b++) ck_assert_msg(same(sinv[b], X[b]), "block %d: %a want %a", b, sinv[b], X[b]);
    ck_assert(info.n_blocks == 4 && info.scale == 1.0f / X[0]);
    const amp_format *e4 = amp_format_get(AMP_FMT_E4M3);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            int i = r * C + c, b = r * 2 + c / 32;
            if (b == 3 && (!ceil_mode || isnan(x[i]))) { ck_assert(isnan(y[i])); continue; }
            float qq = sat_round(e4, (double)x[i] / X[b]);
            float yy = (float)((double)qq * X[b]);
            ck_assert_msg(q[i] == qq && y[i] == yy, "(%d,%d) x=%a: q %a want %a, y %a want %a", r, c, x[i], q[i], qq, y[i], yy);
        }
    ck_assert(y[0] == (ceil_mode ? 480.0f : 448.0f));
    ck_assert(y[32] == 288.0f);
    ck_assert(y[C + 5] == -0x1p-130f);
    ck_assert_int_eq(st.cls[AMP_CLS_SATURATED], ceil_mode ? 0 : 1);
    amp_fp8_free(&sc);
}

START_TEST(mx_floor_vs_ceil) { mx_case(0); mx_case(1); }
END_TEST

/* FP4 elements: amax 7 (binade 2 = e2m1 emax): floor X = 1, 7 -> 6 (clamped);
 * ceil X = 2^ceil(log2(7/6)) = 2: 3.5 ties to 4 (even mantissa), y = 8. */
START_TEST(mx_fp4)
{
    float x[32], y[32], sinv;
    for (int i = 0; i < 32; i++) x[i] = 1.0f;
    x[7] = 7;
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, "mx:fmt=e2m1"), AMP_OK);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_WEIGHT, x, 1, 32, NULL, y, &sinv, NULL, NULL), AMP_OK);
    ck_assert(sinv == 1.0f && y[7] == 6.0f && y[0] == 1.0f);
    amp_fp8_free(&sc);
    ck_assert_int_eq(amp_fp8_init_str(&sc, "mx:fmt=e2m1,exp=ceil"), AMP_OK);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_WEIGHT, x, 1, 32, NULL, y, &sinv, NULL, NULL), AMP_OK);
    ck_assert(sinv == 2.0f && y[7] == 8.0f && y[0] == 1.0f);
    float u, a;
    ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, 7, &u, &a), AMP_OK);
    ck_assert(u == 0.5f);
    amp_fp8_free(&sc);
}
END_TEST

/* ---- block ------------------------------------------------------------------- */
static void check_blocks(const char *spec, amp_fp8_role role, int R, int C, int tile, int pow2)
{
    int n = R * C;
    float *x = malloc((size_t)n * sizeof *x), *q = malloc((size_t)n * sizeof *q), *y = malloc((size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) x[i] = ((float)(lcg() % 2001) - 1000.0f) * 1e-3f;
    /* one large value per block-row/tile region so block amaxes differ */
    for (int i = 0; i < n; i += 97) x[i] *= (float)(1 + i % 13);
    amp_fp8_scaler sc;
    ck_assert_int_eq(amp_fp8_init_str(&sc, spec), AMP_OK);
    size_t nb = amp_fp8_nblocks(&sc, role, (size_t)R, (size_t)C);
    int nbc = (C + 127) / 128;
    size_t want_nb = tile ? (size_t)((R + 127) / 128 * nbc) : (size_t)(R * nbc);
    ck_assert_int_eq(nb, want_nb);
    float *sinv = malloc(nb * sizeof *sinv), *bam = calloc(nb, sizeof *bam);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, role, x, (size_t)R, (size_t)C, q, y, sinv, NULL, NULL), AMP_OK);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            int b = tile ? (r / 128) * nbc + c / 128 : r * nbc + c / 128;
            bam[b] = fmaxf(bam[b], fabsf(x[r * C + c]));
        }
    const amp_format *e4 = amp_fp8_format(&sc, role);   /* hybrid: e5m2 for gradients */
    float fmax = (float)e4->max_finite;
    ck_assert(fmax == (role == AMP_FP8_GRAD && !strstr(spec, "fmt") ? 57344.0f : 448.0f));
    for (size_t b = 0; b < nb; b++) {
        float s = bam[b] / fmax;
        if (pow2) s = exp2f(ceilf(log2f(bam[b] / fmax)));   /* checked below against the definition */
        if (pow2) REQUIRE(s >= bam[b] / (double)fmax && s / 2 < bam[b] / (double)fmax, "pow2 block %zu", b);
        REQUIRE(sinv[b] == s, "%s block %zu: s %a want %a (amax %a)", spec, b, sinv[b], s, bam[b]);
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            int i = r * C + c, b = tile ? (r / 128) * nbc + c / 128 : r * nbc + c / 128;
            float qq = sat_round(e4, x[i] / sinv[b]);
            REQUIRE(q[i] == qq && y[i] == qq * sinv[b], "%s (%d,%d): q %a want %a", spec, r, c, q[i], qq);
        }
    free(x); free(q); free(y); free(sinv); free(bam);
    amp_fp8_free(&sc);
}

START_TEST(block_scaling)
{
    lcg_state = 77;
    check_blocks("block", AMP_FP8_ACT, 3, 300, 0, 0);          /* 1x128, partial last block */
    check_blocks("block", AMP_FP8_GRAD, 2, 256, 0, 0);         /* gradients: 1x128, e5m2 */
    check_blocks("block:fmt=e4m3", AMP_FP8_GRAD, 2, 256, 0, 0);
    check_blocks("block", AMP_FP8_WEIGHT, 256, 200, 1, 0);     /* 128x128 tiles */
    check_blocks("block", AMP_FP8_WEIGHT, 1, 300, 0, 0);       /* a 1-D weight: 1x128 */
    check_blocks("block:pow2=1", AMP_FP8_ACT, 2, 256, 0, 1);
    check_blocks("block:pow2=1", AMP_FP8_WEIGHT, 130, 130, 1, 1);
    /* closed forms: s = amax/448 (float); pow2: 448 -> 1, 449 -> 2, 1 -> 2^-8 */
    amp_fp8_scaler sc;
    float u, a;
    ck_assert_int_eq(amp_fp8_init_str(&sc, "block:pow2=1"), AMP_OK);
    const float am[] = { 448, 449, 1, 0 }, inv[] = { 1, 0.5f, 256, 1 };
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(amp_fp8_observe_amax(&sc, 0, NULL, am[k], &u, &a), AMP_OK);
        ck_assert_msg(u == inv[k], "amax %g: %a", am[k], u);
    }
    amp_fp8_free(&sc);
    /* a tile with one large value: only that tile's scale changes */
    float w[256 * 256];
    for (int i = 0; i < 256 * 256; i++) w[i] = 1.0f;
    w[200 * 256 + 10] = 896;     /* row 200, col 10: tile (1,0) = index 2 */
    float s4[4];
    ck_assert_int_eq(amp_fp8_init_str(&sc, "block"), AMP_OK);
    ck_assert_int_eq(amp_fp8_quantize(&sc, 0, AMP_FP8_WEIGHT, w, 256, 256, NULL, w, s4, NULL, NULL), AMP_OK);
    ck_assert(s4[0] == 1.0f / 448.0f && s4[1] == 1.0f / 448.0f && s4[2] == 2.0f && s4[3] == 1.0f / 448.0f);
    ck_assert(w[200 * 256 + 10] == 896.0f);
    amp_fp8_free(&sc);
}
END_TEST

START_TEST(save_load_roundtrip)
{
    amp_fp8_scaler a, b;
    ck_assert_int_eq(amp_fp8_init_str(&a, "delayed:history=16"), AMP_OK);
    ck_assert_int_eq(amp_fp8_init_str(&b, "delayed:history=16"), AMP_OK);
    lcg_state = 11;
    for (int k = 0; k < 200; k++) {
        if (k == 100) {
            uint8_t *img;
            size_t len;
            ck_assert_int_eq(amp_fp8_save(&a, &img, &len), AMP_OK);
            ck_assert_int_eq(amp_fp8_load(&b, img, len - 8), AMP_EFORMAT);
            ck_assert_int_eq(amp_fp8_load(&b, img, len), AMP_OK);
            amp_fp8_scaler c;
            ck_assert_int_eq(amp_fp8_init_str(&c, "delayed:history=8"), AMP_OK);
            ck_assert_int_eq(amp_fp8_load(&c, img, len), AMP_EFORMAT);
            amp_fp8_free(&c);
            free(img);
        }
        for (size_t t = 0; t < 4; t += 1 + (k % 2)) {   /* tensors 1 and 3 skip some steps */
            float am = random_amax(), u1, a1, u2, a2;
            ck_assert_int_eq(amp_fp8_observe_amax(&a, t, NULL, am, &u1, &a1), AMP_OK);
            if (k >= 100) {
                ck_assert_int_eq(amp_fp8_observe_amax(&b, t, NULL, am, &u2, &a2), AMP_OK);
                REQUIRE(same(u1, u2) && same(a1, a2), "step %d tensor %zu", k, t);
            }
        }
    }
    amp_fp8_free(&a);
    amp_fp8_free(&b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scaler_fp8");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, delayed_matches_te_transcription, 0, 3);
    tcase_add_test(tc, delayed_edge_cases);
    tcase_add_test(tc, delayed_quantize);
    tcase_add_test(tc, current_scaling);
    tcase_add_test(tc, special_amax_every_strategy);
    tcase_add_test(tc, quantize_counts_nonfinite);
    tcase_add_test(tc, mx_floor_vs_ceil);
    tcase_add_test(tc, mx_fp4);
    tcase_add_test(tc, block_scaling);
    tcase_add_test(tc, save_load_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
