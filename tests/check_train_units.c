/* Units of the training emulator: policies (presets, JSON, unknown keys),
 * optimizers (PyTorch's single rounding, vanished updates in bf16, Kahan and
 * stochastic rounding recovering them), the tensor registry (statistics,
 * non-finite detection, SR keys), the digits data (batches, shuffling,
 * validation), SHA-256 against a known digest. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ampsim.h"

START_TEST(test_presets)
{
    amp_policy p;
    ck_assert_int_eq(amp_policy_preset("fp16-amp", &p), AMP_OK);
    ck_assert_str_eq(p.fwd_in.name, "fp16");
    ck_assert_str_eq(p.act.name, "fp16");
    ck_assert_str_eq(p.master.name, "fp32");
    ck_assert(p.has_master && p.acc_fp32);
    ck_assert(p.fp32_ops & (1u << AMP_OP_SOFTMAX));
    ck_assert_str_eq(amp_policy_op_format(&p, AMP_OP_LAYER_NORM, &p.act)->name, "fp32");
    ck_assert_int_eq(amp_policy_preset("bf16-amp-cpu", &p), AMP_OK);
    ck_assert_str_eq(p.act.name, "bf16");
    ck_assert(!(p.fp32_ops & (1u << AMP_OP_SOFTMAX)) && !(p.fp32_ops & (1u << AMP_OP_LAYER_NORM)));
    ck_assert(p.fp32_ops & (1u << AMP_OP_LOSS));
    ck_assert_str_eq(amp_policy_op_format(&p, AMP_OP_SOFTMAX, &p.act)->name, "bf16");
    ck_assert_int_eq(amp_policy_preset("bf16-pure", &p), AMP_OK);
    ck_assert(!p.has_master);
    ck_assert_str_eq(p.weight.name, "bf16");
    ck_assert_str_eq(p.optim.name, "bf16");
    ck_assert_int_eq(amp_policy_preset("fp8-hybrid", &p), AMP_OK);
    ck_assert_str_eq(p.fwd_in.name, "e4m3");
    ck_assert_str_eq(p.bwd_in.name, "e5m2");
    ck_assert_int_eq(amp_policy_preset("fp8-e4m3", &p), AMP_OK);
    ck_assert_str_eq(p.bwd_in.name, "e4m3");
    ck_assert_int_eq(amp_policy_preset("fp32", &p), AMP_OK);
    ck_assert(!p.has_master);
    ck_assert_int_eq(amp_policy_preset("fp12", &p), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "fp12"));
}
END_TEST

START_TEST(test_policy_json)
{
    amp_policy p;
    const char *j = "{\"base\": \"bf16-pure\", \"roles\": {\"weight\": \"fp16\", \"act\": \"e5m2\"},"
                    " \"gemm\": {\"accumulator\": \"e5m10\", \"promote_every\": 128},"
                    " \"fp32_ops\": [\"loss\", \"layer_norm\"], \"rounding\": \"sr\", \"sr_bits\": 8,"
                    " \"update\": \"kahan\"}";
    ck_assert_int_eq(amp_policy_from_json(j, "p.json", &p), AMP_OK);
    ck_assert_str_eq(p.weight.name, "fp16");
    ck_assert_str_eq(p.act.name, "e5m2");
    ck_assert(!p.acc_fp32);
    ck_assert_int_eq(p.acc.mbits, 10);
    ck_assert_int_eq(p.acc_chunk, 128);
    ck_assert_uint_eq(p.fp32_ops, (1u << AMP_OP_LOSS) | (1u << AMP_OP_LAYER_NORM));
    ck_assert_int_eq(p.mode, AMP_RND_SR);
    ck_assert_int_eq(p.sr_bits, 8);
    ck_assert_int_eq(p.update, AMP_UPD_KAHAN);
    ck_assert(!p.has_master);
    /* master fp32 with a narrow weight = an amp policy */
    ck_assert_int_eq(amp_policy_from_json("{\"roles\": {\"weight\": \"bf16\", \"master\": \"fp32\"}}", "q", &p), AMP_OK);
    ck_assert(p.has_master);
    /* the round trip through amp_policy_to_json gives the same policy */
    amp_policy p2;
    ck_assert_int_eq(amp_policy_from_json(j, "p.json", &p), AMP_OK);
    char *s = amp_policy_to_json(&p);
    ck_assert_int_eq(amp_policy_from_json(s, "round trip", &p2), AMP_OK);
    free(s);
    ck_assert_str_eq(p2.weight.name, p.weight.name);
    ck_assert_str_eq(p2.act.name, p.act.name);
    ck_assert_str_eq(p2.acc.name, p.acc.name);
    ck_assert(p2.acc_chunk == p.acc_chunk && p2.fp32_ops == p.fp32_ops && p2.mode == p.mode &&
              p2.sr_bits == p.sr_bits && p2.update == p.update && p2.has_master == p.has_master);
    static const struct { const char *json, *needle; } bad[] = {
        { "{\"bogus\": 1}", "bogus" },
        { "{\"roles\": {\"weights\": \"fp16\"}}", "roles.weights" },
        { "{\"gemm\": {\"acumulator\": \"fp32\"}}", "gemm.acumulator" },
        { "{\"roles\": {\"act\": \"fp7\"}}", "fp7" },
        { "{\"fp32_ops\": [\"softmax\", \"gelu\"]}", "gelu" },
        { "{\"rounding\": \"nearest\"}", "nearest" },
        { "{\"base\": \"fp64-amp\"}", "fp64-amp" },
        { "{\"gemm\": {\"promote_every\": -1}}", "promote_every" },
        { "[1, 2]", "not a JSON object" },
        { "{\"roles\": ", "bad.json:1:11: not valid JSON (the text ends" },      /* truncated: line and column */
        { "{\"name\": \"x\",\n \"roles\": ]}", "bad.json:2:11: not valid JSON (unexpected text here)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(amp_policy_from_json(bad[i].json, "bad.json", &p), AMP_EINVAL);
        ck_assert_msg(strstr(amp_errmsg(), bad[i].needle) && strstr(amp_errmsg(), "bad.json"),
                      "%s: message '%s' lacks '%s'", bad[i].json, amp_errmsg(), bad[i].needle);
    }
}
END_TEST

/* A one-layer model holding one weight tensor of n values, for optimizer tests. */
static void one_weight_model(amp_model *m, const char *policy, int n)
{
    amp_policy p;
    ck_assert_int_eq(amp_policy_preset(policy, &p), AMP_OK);
    ck_assert_int_eq(amp_mlp_create(m, &p, 1, n, 1, 1, 2, 1), AMP_OK);
}

START_TEST(test_sgd_fp32_single_rounding)
{
    amp_model m;
    one_weight_model(&m, "fp32", 64);
    amp_optim o;
    amp_optim_defaults(&o, AMP_OPT_SGD, 0.1f);
    ck_assert_int_eq(amp_optim_attach(&o, &m), AMP_OK);
    amp_tensor *w = amp_tensors_find(&m.reg, "fc1.weight");
    ck_assert_ptr_nonnull(w);
    float before[128];
    for (size_t i = 0; i < w->n; i++) {
        w->data[i] = (float)(amp_rand_uniform(3, 0, i) - 0.5);
        w->grad32[i] = (float)(amp_rand_uniform(3, 1, i) - 0.5) * 3.0f;
        before[i] = w->data[i];
    }
    amp_tensor *b = amp_tensors_find(&m.reg, "fc1.bias");
    memset(b->grad32, 0, b->n * sizeof(float));
    uint64_t van;
    amp_tensors_begin_step(&m.reg, 0, 0);
    ck_assert_int_eq(amp_optim_step(&o, &m, &van), AMP_OK);
    for (size_t i = 0; i < w->n; i++) {
        /* exact p - lr*g in double (lr*g is exact: 24x24 bits), rounded once */
        float want = (float)((double)before[i] - (double)0.1f * (double)w->grad32[i]);
        ck_assert_msg(w->data[i] == want, "w[%zu] = %a, want %a", i, w->data[i], want);
    }
    amp_model_free(&m);
}
END_TEST

/* bf16 weights at 1.0, updates of -1e-3 per step: rne loses every one (ulp(1) =
 * 2^-7 in bf16), kahan and sr recover the drift of 100 steps (-0.1). */
static float drift(const char *update_mode, uint64_t *vanished_total)
{
    amp_policy p;
    char json[128];
    snprintf(json, sizeof json, "{\"base\": \"bf16-pure\", \"update\": \"%s\"}", update_mode);
    ck_assert_int_eq(amp_policy_from_json(json, "t", &p), AMP_OK);
    amp_model m;
    ck_assert_int_eq(amp_mlp_create(&m, &p, 1, 256, 1, 1, 2, 1), AMP_OK);
    amp_optim o;
    amp_optim_defaults(&o, AMP_OPT_SGD, 1e-3f);
    ck_assert_int_eq(amp_optim_attach(&o, &m), AMP_OK);
    amp_tensor *w = amp_tensors_find(&m.reg, "fc1.weight"), *b = amp_tensors_find(&m.reg, "fc1.bias");
    for (size_t i = 0; i < w->n; i++) w->data[i] = 1.0f, w->grad32[i] = 1.0f;
    memset(b->grad32, 0, b->n * sizeof(float));
    *vanished_total = 0;
    for (int s = 0; s < 100; s++) {
        uint64_t v;
        amp_tensors_begin_step(&m.reg, s, 0);
        ck_assert_int_eq(amp_optim_step(&o, &m, &v), AMP_OK);
        *vanished_total += v;
    }
    double mean = 0;
    for (size_t i = 0; i < w->n; i++) {
        ck_assert(amp_encode1(&w->fmt, w->data[i]) >= 0);   /* still a bf16 value */
        mean += w->data[i];
    }
    mean /= (double)w->n;
    amp_model_free(&m);
    return (float)mean;
}

START_TEST(test_pure_bf16_updates)
{
    uint64_t v;
    float rne = drift("round", &v);
    ck_assert_msg(rne == 1.0f, "rne: %g", rne);
    ck_assert_uint_eq(v, 100 * 512);                      /* every update of fc1.weight [2,256] vanished */
    float kahan = drift("kahan", &v);
    ck_assert_msg(fabsf(kahan - 0.9f) < 0.008f, "kahan: %g", kahan);
    ck_assert_uint_lt(v, 100 * 512);
    float sr = drift("sr", &v);
    ck_assert_msg(fabsf(sr - 0.9f) < 0.01f, "sr: mean %g", sr);
}
END_TEST

/* amp_unscale_sumsq_f32: the products g * inv as float32 multiplies (g
 * unchanged at inv 1), the double sum of their squares (fewer elements than
 * lanes: in element order; the same value as amp_sumsq_unscaled_f32 of the
 * original tensor), and the count of inf and NaN results. */
START_TEST(test_unscale_sumsq)
{
    float g[7] = { 3.0f, -1.5e-30f, 65504.0f, 0.1f, 1e38f, -2.5f, 7.0f };
    float inv = 1.0f / 3.0f, ref[7];
    double sq = 0.0;
    for (int k = 0; k < 7; k++) {
        volatile float v = g[k] * inv;
        ref[k] = v;
        sq += (double)v * v;
    }
    double want = amp_sumsq_unscaled_f32(g, 7, inv);
    size_t bad = 99;
    ck_assert(amp_unscale_sumsq_f32(g, 7, inv, &bad) == sq);
    ck_assert(sq == want);
    ck_assert_uint_eq(bad, 0);
    ck_assert(memcmp(g, ref, sizeof g) == 0);
    /* inv 1 leaves g as it is; 1e38 * 8 overflows to inf, and a NaN counts too */
    float h[4] = { 1e38f, NAN, 2.0f, -0.0f }, h0[4];
    memcpy(h0, h, sizeof h);
    ck_assert(isnan(amp_unscale_sumsq_f32(h, 4, 1.0f, &bad)));
    ck_assert_uint_eq(bad, 1);
    ck_assert(memcmp(h, h0, sizeof h) == 0);
    h[1] = 0.5f;
    ck_assert(isinf(amp_unscale_sumsq_f32(h, 4, 8.0f, NULL)));
    ck_assert(isinf(h[0]) && h[1] == 4.0f && h[2] == 16.0f && h[3] == 0.0f && signbit(h[3]));
}
END_TEST

/* amp_unscale_sumsq_f32_many: the values, sums and counts of one
 * amp_unscale_sumsq_f32 call per array (an empty one, an inf, a NaN). */
START_TEST(test_unscale_sumsq_many)
{
    enum { K = 4 };
    static const size_t n[K] = { 5, 0, 1000, 17 };
    float *g[K], *ref[K];
    double sq[K], want[K];
    size_t bad[K], want_bad[K];
    uint32_t x = 777;
    for (int j = 0; j < K; j++) {
        g[j] = malloc((n[j] + 1) * sizeof *g[j]);
        ref[j] = malloc((n[j] + 1) * sizeof *ref[j]);
        ck_assert(g[j] && ref[j]);
        for (size_t i = 0; i < n[j]; i++) {
            x = x * 1664525u + 1013904223u;
            g[j][i] = ldexpf((float)(x >> 8) / 16777216.0f - 0.5f, (int)(x % 30) - 10);
        }
    }
    g[2][7] = INFINITY;
    g[3][2] = NAN;
    float inv = 0.0009765625f * 3.0f;
    for (int j = 0; j < K; j++) {
        memcpy(ref[j], g[j], n[j] * sizeof *g[j]);
        want[j] = amp_unscale_sumsq_f32(ref[j], n[j], inv, &want_bad[j]);
    }
    amp_unscale_sumsq_f32_many(K, g, n, inv, sq, bad);
    for (int j = 0; j < K; j++) {
        ck_assert_msg(sq[j] == want[j] || (isnan(sq[j]) && isnan(want[j])), "array %d", j);
        ck_assert_uint_eq(bad[j], want_bad[j]);
        ck_assert(n[j] == 0 || memcmp(g[j], ref[j], n[j] * sizeof *g[j]) == 0);
        free(g[j]);
        free(ref[j]);
    }
    ck_assert_uint_eq(want_bad[2], 1);
    ck_assert_uint_eq(want_bad[3], 1);
}
END_TEST

/* amp_unscale_sumsq_f32 and amp_sumsq_unscaled_f32 against their contract
 * written out plainly here: element k into the k % 8th double partial sum,
 * the sums added in order; the unscaled values written back, inf and NaN
 * counted. Lengths around the lane width, an inf and a NaN, inv 1 and not. */
static double lanes_ref(const float *g, size_t n, float inv, float *out, size_t *bad)
{
    double l[8] = {0}, s = 0.0;
    *bad = 0;
    for (size_t k = 0; k < n; k++) {
        float v = inv == 1.0f ? g[k] : g[k] * inv;
        out[k] = v;
        l[k % 8] += (double)v * v;
        *bad += !isfinite(v);
    }
    for (int j = 0; j < 8; j++) s += l[j];
    return s;
}

START_TEST(test_sumsq_lanes)
{
    static const size_t ns[] = {0, 1, 7, 8, 9, 15, 16, 17, 1000, 4099};
    static float g[4099], ref[4099], got[4099];
    uint32_t x = 12345;
    for (size_t k = 0; k < 4099; k++) {
        x = x * 1664525u + 1013904223u;
        g[k] = ldexpf((float)(x >> 8) / 16777216.0f - 0.5f, (int)(x % 40) - 20);
    }
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (int v = 0; v < 3; v++) {
            size_t n = ns[i], bad_ref, bad = 99;
            float inv = v == 0 ? 1.0f : v == 1 ? 0.0009765625f : 0.3f;
            if (v == 2 && n > 9) g[3] = INFINITY, g[n - 2] = NAN;
            double want = lanes_ref(g, n, inv, ref, &bad_ref);
            ck_assert(amp_sumsq_unscaled_f32(g, n, inv) == want || (isnan(want) && n > 9));
            memcpy(got, g, n * sizeof *g);
            double have = amp_unscale_sumsq_f32(got, n, inv, &bad);
            ck_assert_msg(have == want || (isnan(have) && isnan(want)), "n %zu inv %g: %.17g vs %.17g", n,
                          (double)inv, have, want);
            ck_assert_uint_eq(bad, bad_ref);
            ck_assert(n == 0 || memcmp(got, ref, n * sizeof *g) == 0);
            if (v == 2 && n > 9) g[3] = 1.0f, g[n - 2] = 2.0f;
        }
}
END_TEST

/* amp_tensor_round_counted: on an fp32 tensor without statistics it takes
 * the writer's count (no pass: a wrong count shows), with statistics due it
 * rounds t->data like amp_tensor_round; the fp32 accumulation counts the
 * non-finite sums it makes. */
START_TEST(test_round_counted)
{
    amp_tensors r;
    amp_tensors_init(&r, 9, AMP_RND_NE, 0);
    amp_tensor *t, *g;
    const amp_format *f32 = amp_format_get(AMP_FMT_FP32);
    ck_assert_int_eq(amp_tensors_add(&r, "a", AMP_ROLE_ACT, f32, 1, (size_t[]){ 5000 }, &t), AMP_OK);
    ck_assert_int_eq(amp_tensors_add(&r, "g", AMP_ROLE_ACT_GRAD, f32, 1, (size_t[]){ 5000 }, &g), AMP_OK);
    for (int i = 0; i < 5000; i++) t->data[i] = (float)i;
    amp_tensors_begin_step(&r, 0, 0);
    ck_assert_int_eq(amp_tensor_round_counted(&r, t, 0), AMP_OK);
    ck_assert(t->written && !t->stats_valid);
    ck_assert_ptr_null(r.nonfinite_tensor);
    ck_assert_int_eq(amp_tensor_round_counted(&r, t, 7), AMP_OK);   /* the count is the writer's */
    ck_assert_ptr_eq(r.nonfinite_tensor, t);
    ck_assert_uint_eq(r.nonfinite_count, 7);
    /* statistics due: a real rounding of t->data, which counts for itself */
    t->data[4321] = INFINITY;
    amp_tensors_begin_step(&r, 1, 1u << AMP_ROLE_ACT);
    ck_assert_int_eq(amp_tensor_round_counted(&r, t, 0), AMP_OK);
    ck_assert(t->stats_valid);
    ck_assert_uint_eq(t->stats->n, 5000);
    ck_assert_ptr_eq(r.nonfinite_tensor, t);
    ck_assert_uint_eq(r.nonfinite_count, 1);
    /* fp32 accumulation: sums overflowing to inf, in the second of three blocks */
    float *big = malloc(5000 * sizeof *big);
    for (int i = 0; i < 5000; i++) big[i] = i >= 3000 && i < 3003 ? 3e38f : 1.0f;
    amp_tensors_begin_step(&r, 2, 0);
    ck_assert_int_eq(amp_tensor_accum(&r, g, big), AMP_OK);
    ck_assert_ptr_null(r.nonfinite_tensor);
    ck_assert_int_eq(amp_tensor_accum(&r, g, big), AMP_OK);
    ck_assert(isinf(g->data[3001]) && g->data[0] == 2.0f);
    ck_assert_ptr_eq(r.nonfinite_tensor, g);
    ck_assert_uint_eq(r.nonfinite_count, 3);
    free(big);
    amp_tensors_free(&r);
}
END_TEST

START_TEST(test_registry_stats_and_nonfinite)
{
    amp_tensors r;
    amp_tensors_init(&r, 9, AMP_RND_NE, 0);
    amp_tensor *t, *u;
    const amp_format *f16 = amp_format_get(AMP_FMT_FP16);
    ck_assert_int_eq(amp_tensors_add(&r, "a", AMP_ROLE_ACT, f16, 1, (size_t[]){ 6 }, &t), AMP_OK);
    ck_assert_int_eq(amp_tensors_add(&r, "a", AMP_ROLE_ACT, f16, 1, (size_t[]){ 6 }, &u), AMP_EINVAL);
    ck_assert_int_eq(amp_tensors_add(&r, "g", AMP_ROLE_ACT_GRAD, f16, 1, (size_t[]){ 6 }, &u), AMP_OK);
    ck_assert_ptr_eq(amp_tensors_find(&r, "g"), u);
    float x[6] = { 1.0f, 1e-9f, 0.0f, 1e5f, 3e-6f, 1.0009765625f };
    amp_tensors_begin_step(&r, 0, 1u << AMP_ROLE_ACT);
    ck_assert_int_eq(amp_tensor_round(&r, t, x), AMP_OK);
    ck_assert(t->stats_valid);
    ck_assert_uint_eq(t->stats->n, 6);
    ck_assert_uint_eq(t->stats->cls[AMP_CLS_FLUSHED], 1);
    ck_assert_uint_eq(t->stats->cls[AMP_CLS_OVERFLOW], 1);
    ck_assert_uint_eq(t->stats->cls[AMP_CLS_ZERO_IN], 1);
    ck_assert_uint_eq(t->stats->cls[AMP_CLS_SUBNORMAL], 1);
    ck_assert(isinf(t->data[3]) && t->data[1] == 0.0f);
    ck_assert_ptr_eq(r.nonfinite_tensor, t);
    ck_assert_int_eq(r.nonfinite_phase, AMP_PHASE_FORWARD);
    /* the gradient role is not due: no statistics, still checked for non-finite */
    r.phase = AMP_PHASE_BACKWARD;
    ck_assert_int_eq(amp_tensor_round(&r, u, x), AMP_OK);
    ck_assert(!u->stats_valid);
    ck_assert_ptr_eq(r.nonfinite_tensor, t);             /* the first one is kept */
    /* accumulation: a second write adds (in double) and rounds again */
    float ones[6] = { 1, 1, 1, 1, 1, 1 };
    amp_tensors_begin_step(&r, 1, 0);
    ck_assert_ptr_null(r.nonfinite_tensor);
    ck_assert_int_eq(amp_tensor_accum(&r, u, ones), AMP_OK);
    ck_assert_int_eq(amp_tensor_accum(&r, u, x), AMP_OK);
    ck_assert(u->data[0] == 2.0f && u->data[2] == 1.0f && isinf(u->data[3]) && u->data[5] == 2.0f);
    /* SR keys: same step same draws, another step other draws */
    amp_tensors_free(&r);
    amp_tensors_init(&r, 9, AMP_RND_SR, 0);
    amp_tensors_add(&r, "s", AMP_ROLE_ACT, f16, 1, (size_t[]){ 4096 }, &t);
    float *v = malloc(4096 * sizeof(float)), y1[4096], y2[4096];
    for (int i = 0; i < 4096; i++) v[i] = 1.0f + 0x1p-12f;
    amp_tensors_begin_step(&r, 5, 0);
    amp_tensor_round(&r, t, v);
    memcpy(y1, t->data, sizeof y1);
    amp_tensors_begin_step(&r, 5, 0);
    amp_tensor_round(&r, t, v);
    ck_assert(!memcmp(y1, t->data, sizeof y1));
    amp_tensors_begin_step(&r, 6, 0);
    amp_tensor_round(&r, t, v);
    memcpy(y2, t->data, sizeof y2);
    ck_assert(memcmp(y1, y2, sizeof y1) != 0);
    int up = 0;
    for (int i = 0; i < 4096; i++) up += y1[i] != 1.0f;
    /* 1 + 2^-12 is a quarter of an fp16 ulp above 1: P(up) = 1/4 */
    ck_assert_msg(up > 850 && up < 1200, "sr rounded up %d of 4096 (expected ~1024)", up);
    free(v);
    amp_tensors_free(&r);
}
END_TEST

/* amp_round_sum2 (float sums, blocks, the float32 kernel where the sum is
 * exact in float32) against amp_round_f64 on the double sums, bit for bit:
 * formats, modes and flags, sums that are exact, inexact, overflowing,
 * subnormal, NaN and inf, across block boundaries and an index0 offset. */
START_TEST(test_round_sum2)
{
    static const amp_format_id fmts[] = { AMP_FMT_FP32, AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2, AMP_FMT_E2M1 };
    static const amp_rounding modes[] = { AMP_RND_NE, AMP_RND_SR, AMP_RND_TZ, AMP_RND_UP };
    enum { N = 5000 };
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *y = malloc(N * sizeof *y), *ref = malloc(N * sizeof *ref);
    double *sum = malloc(N * sizeof *sum);
    ck_assert(a && b && y && ref && sum);
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        const amp_format *fmt = amp_format_get(fmts[f]);
        for (int i = 0; i < N; i++) {              /* values of the format, exponents far apart */
            double u = amp_rand_uniform(7, f, 2 * (uint64_t)i), v = amp_rand_uniform(7, f, 2 * (uint64_t)i + 1);
            a[i] = (float)((u < 0.5 ? -1 : 1) * ldexp(1.0 + v, (int)(u * 1000) % 80 - 40));
            b[i] = (float)((v < 0.3 ? -1 : 1) * ldexp(1.0 + u, (int)(v * 1000) % 80 - 40));
            if (i % 97 == 0) b[i] = -a[i];
            if (i % 101 == 0) b[i] = 0x1p127f;
            if (i % 103 == 0) a[i] = NAN;
            if (i % 107 == 0) a[i] = INFINITY;
            if (i % 109 == 0) { a[i] = 0x1p-149f; b[i] = 0x1p-148f; }
        }
        amp_round_opts r0 = amp_round_defaults();
        amp_round_f32(fmt, &r0, a, a, N, NULL);
        amp_round_f32(fmt, &r0, b, b, N, NULL);
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (unsigned flags = 0; flags <= AMP_SATURATE; flags += AMP_SATURATE) {
                amp_round_opts o = amp_round_defaults();
                o.mode = modes[m];
                o.flags = flags;
                o.seed = 11;
                o.stream = 5;
                o.index0 = 77;
                for (int i = 0; i < N; i++) sum[i] = (double)a[i] + (double)b[i];
                ck_assert_int_eq(amp_round_f64(fmt, &o, sum, ref, N, NULL), AMP_OK);
                ck_assert_int_eq(amp_round_sum2(fmt, &o, a, b, y, N), AMP_OK);
                for (int i = 0; i < N; i++) {
                    uint32_t ub, ur;
                    memcpy(&ub, &y[i], 4);
                    memcpy(&ur, &ref[i], 4);
                    ck_assert_msg(ub == ur, "%s %s flags %u: %a + %a: sum2 %08x, f64 %08x", fmt->name,
                                  amp_rounding_name(o.mode), flags, (double)a[i], (double)b[i], ub, ur);
                }
                memcpy(y, a, N * sizeof *y);     /* in place */
                ck_assert_int_eq(amp_round_sum2(fmt, &o, y, b, y, N), AMP_OK);
                for (int i = 0; i < N; i++) ck_assert(!memcmp(&y[i], &ref[i], 4));
            }
    }
    free(a); free(b); free(y); free(ref); free(sum);
}
END_TEST

/* A second write into a tensor (amp_tensor_accum) gives the same bits whether
 * statistics are due (the double-array path) or not (amp_round_sum2). */
START_TEST(test_accum_paths_agree)
{
    static const amp_format_id fmts[] = { AMP_FMT_FP32, AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3 };
    enum { N = 4500 };
    float x1[N], x2[N], y[2][N];
    for (int i = 0; i < N; i++) {
        x1[i] = (float)ldexp(amp_rand_uniform(3, 1, i) - 0.5, (int)(amp_rand_uniform(3, 2, i) * 30) - 15);
        x2[i] = (float)ldexp(amp_rand_uniform(3, 3, i) - 0.5, (int)(amp_rand_uniform(3, 4, i) * 30) - 15);
    }
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (int mode = AMP_RND_NE; mode <= AMP_RND_SR; mode += AMP_RND_SR - AMP_RND_NE)
            for (int with_stats = 0; with_stats < 2; with_stats++) {
                amp_tensors r;
                amp_tensor *t;
                amp_tensors_init(&r, 4, (amp_rounding)mode, 0);
                ck_assert_int_eq(amp_tensors_add(&r, "g", AMP_ROLE_ACT_GRAD, amp_format_get(fmts[f]), 1,
                                                 (size_t[]){ N }, &t), AMP_OK);
                amp_tensors_begin_step(&r, 2, with_stats ? AMP_ROLES_LOGGED : 0);
                ck_assert_int_eq(amp_tensor_stats_due(&r, t), with_stats);
                ck_assert_int_eq(amp_tensor_accum(&r, t, x1), AMP_OK);
                ck_assert_int_eq(amp_tensor_accum(&r, t, x2), AMP_OK);
                memcpy(y[with_stats], t->data, sizeof y[0]);
                amp_tensors_free(&r);
                if (with_stats)
                    ck_assert_msg(!memcmp(y[0], y[1], sizeof y[0]), "%s mode %d: accum paths differ",
                                  amp_format_get(fmts[f])->name, mode);
            }
}
END_TEST

START_TEST(test_digits_batches)
{
    char path[4096];
    ck_assert_int_eq(amp_data_find("digits.csv.gz", path, sizeof path), AMP_OK);
    amp_digits d;
    ck_assert_int_eq(amp_digits_load(path, &d), AMP_OK);
    ck_assert_int_eq(d.N, 1797);
    amp_batch b;
    /* file order: step 56 with B=32 takes rows 1792..1796 then 0..26 */
    ck_assert_int_eq(amp_digits_batch(&d, 56, 32, 0, 1, &b), AMP_OK);
    for (int j = 0; j < 32; j++) {
        int row = (32 * 56 + j) % 1797;
        ck_assert(!memcmp(b.x + 64 * j, d.x + 64 * row, 64 * sizeof(float)));
        ck_assert_int_eq(b.y[j], d.y[row]);
    }
    ck_assert(d.x[0] == 0.0f && d.x[2] == 5.0f / 16.0f && d.y[0] == 0);   /* first row: 0,0,5,... label 0 */
    ck_assert_int_eq(amp_digits_batch(&d, 0, 16, 0, 1, &b), AMP_EINVAL);   /* one batch size per loader */
    amp_digits_free(&d);
    ck_assert_int_eq(amp_digits_load(path, &d), AMP_OK);
    /* shuffled: every epoch visits every row once */
    int *seen = calloc(1797, sizeof *seen);
    for (int64_t s = 0; s < 1797; s++) {
        ck_assert_int_eq(amp_digits_batch(&d, s, 1, 1, 42, &b), AMP_OK);
        for (int r = 0; r < 1797; r++)
            if (!memcmp(b.x, d.x + 64 * r, 64 * sizeof(float)) && b.y[0] == d.y[r]) { seen[r]++; break; }
    }
    int missing = 0;
    for (int r = 0; r < 1797; r++) missing += seen[r] == 0;
    ck_assert_int_lt(missing, 40);                        /* duplicate images exist; most rows matched */
    free(seen);
    /* sha256 of "abc" (FIPS 180-2 example) */
    char tmp[] = "/tmp/check_units.XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert(write(fd, "abc", 3) == 3);
    close(fd);
    char hex[65];
    ck_assert_int_eq(amp_sha256_file(tmp, hex), AMP_OK);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(tmp);
    amp_digits_free(&d);
}
END_TEST

/* Every precision policy starts from the same weights (fair comparisons):
 * the FP32 values (master, or the weight itself) do not depend on the policy,
 * and a policy without master holds their rounding. */
START_TEST(test_init_independent_of_policy)
{
    const char *pols[] = { "fp32", "fp16-amp", "bf16-amp", "fp8-hybrid", "bf16-pure" };
    amp_model ref;
    amp_policy p;
    amp_policy_preset("fp32", &p);
    ck_assert_int_eq(amp_mlp_create(&ref, &p, 4, 64, 16, 3, 10, 3), AMP_OK);
    for (int k = 1; k < 5; k++) {
        amp_model m;
        amp_policy_preset(pols[k], &p);
        ck_assert_int_eq(amp_mlp_create(&m, &p, 4, 64, 16, 3, 10, 3), AMP_OK);
        for (int i = 0; i < ref.reg.n; i++) {
            const amp_tensor *a = ref.reg.t[i];
            if (a->role != AMP_ROLE_WEIGHT) continue;
            const amp_tensor *b = amp_tensors_find(&m.reg, a->name);
            ck_assert_ptr_nonnull(b);
            for (size_t j = 0; j < a->n; j++) {
                float want = a->data[j];
                if (!b->master) want = amp_round1(&b->fmt, &(amp_round_opts){ .mode = AMP_RND_NE }, want, 0, NULL);
                float got = b->master ? b->master->data[j] : b->data[j];
                ck_assert_msg(got == want, "%s %s[%zu]: %a vs %a", pols[k], a->name, j, got, want);
            }
        }
        amp_model_free(&m);
    }
    amp_model_free(&ref);
}
END_TEST

/* Run logs: nothing under a final name until close; sync publishes complete
 * prefixes; reopen continues from a sync point (what --resume needs). */
START_TEST(test_runlog_sync_reopen)
{
    char dir[] = "/tmp/check_runlog.XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    amp_runlog *l;
    ck_assert_int_eq(amp_runlog_open(&l, dir, "{}\n"), AMP_OK);
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    ck_assert_int_ne(access(path, F_OK), 0);                 /* only a temporary so far */
    ck_assert_int_eq(amp_runlog_metrics(l, 0, 2.5f, 1.0, AMP_SCALER_NONE, 0, 0.5, 0.1f, 0, 0, NAN), AMP_OK);
    uint64_t off[AMP_RUNLOG_FILES];
    ck_assert_int_eq(amp_runlog_sync(l, off), AMP_OK);
    ck_assert_int_eq(amp_runlog_metrics(l, 1, 2.25f, 1.0, AMP_SCALER_NONE, 0, 0.5, 0.1f, 0, 0, 3.0), AMP_OK);
    amp_runlog_abort(l);                                       /* a killed run */
    char *d;
    size_t n;
    const char *hdr = "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite,val_loss\n";
    char want[512];
    snprintf(want, sizeof want, "%s0,2.5,1,0,0.5,0.100000001,0,0,\n", hdr);
    ck_assert_int_eq(amp_read_file(path, 1 << 20, &d, &n), AMP_OK);
    ck_assert_str_eq(d, want);
    ck_assert_uint_eq(off[0], strlen(want));
    free(d);
    ck_assert_int_eq(amp_runlog_reopen(&l, dir, off), AMP_OK);
    ck_assert_int_eq(amp_runlog_metrics(l, 1, 2.25f, 1.0, AMP_SCALER_NONE, 0, 0.5, 0.1f, 0, 0, 3.0), AMP_OK);
    ck_assert_int_eq(amp_runlog_close(l, "{\"ok\": true}\n"), AMP_OK);
    ck_assert_int_eq(amp_read_file(path, 1 << 20, &d, &n), AMP_OK);
    snprintf(want + strlen(want), sizeof want - strlen(want), "1,2.25,1,0,0.5,0.100000001,0,0,3\n");
    ck_assert_str_eq(d, want);
    free(d);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", dir);
    ck_assert_int_ne(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train_units");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_presets);
    tcase_add_test(tc, test_round_counted);
    tcase_add_test(tc, test_unscale_sumsq);
    tcase_add_test(tc, test_sumsq_lanes);
    tcase_add_test(tc, test_unscale_sumsq_many);
    tcase_add_test(tc, test_policy_json);
    tcase_add_test(tc, test_sgd_fp32_single_rounding);
    tcase_add_test(tc, test_pure_bf16_updates);
    tcase_add_test(tc, test_registry_stats_and_nonfinite);
    tcase_add_test(tc, test_round_sum2);
    tcase_add_test(tc, test_accum_paths_agree);
    tcase_add_test(tc, test_digits_batches);
    tcase_add_test(tc, test_init_independent_of_policy);
    tcase_add_test(tc, test_runlog_sync_reopen);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
