/* Check suite: the nvfp4 training policy (sim/amp_nvfp4.h, sim/layer_linear.c)
 * against an implementation written here from NVIDIA's recipe as Transformer
 * Engine implements it, bit for bit:
 *  - operand quantization: tensor scale S_enc = 6*448/amax in float32, per
 *    block the decode scale amax_b * (S_enc * (1/6)) cast to E4M3 (rne,
 *    satfinite), elements x * 1/(s_e4m3 * (1/S_enc)) cast to E2M1 (satfinite;
 *    rne, or sr for gradient operands), value q * s_e4m3 / S_enc; 16x16 blocks
 *    for the weight, 1x16 along the GEMM's reduction dimension elsewhere; the
 *    elements rounded by the MPFR reference (amp_round1_mpfr), whose sr draw
 *    is the library's keyed draw (seed, stream = tensor id, element index);
 *  - the transform: Sylvester's Hadamard matrix built here by its recursion,
 *    Transformer Engine's sign vector typed here, y = (sum_i s_i H_ij x_i) / 4
 *    summed in float32 in index order, rounded to bf16 (rne on the bits);
 *    H H^T = 16 I exactly, and in exact arithmetic (small integers) the wgrad
 *    dot products are unchanged;
 *  - the layer's outputs (out, dX, dW, db) from the reference operands through
 *    the FP32 GEMM (tested in check_gemm) and a bf16 rounding;
 *  - ampsim train --precision nvfp4 on the MLP and the GPT: finite losses that
 *    decrease, bf16 first and last layers in tensors.csv, the same bytes with 1
 *    and 2 threads and after a resume; the policy's JSON keys and preset options.
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed on failure. */
#include "ampsim.h"
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 1818;

/* ---- the reference ---------------------------------------------------------------------- */
static float mpfr_e2m1(const amp_round_opts *o, double v, uint64_t idx)
{
    amp_round_opts so = *o;
    so.flags |= AMP_SATURATE;
    amp_class c;
    return amp_round1_mpfr(amp_format_get(AMP_FMT_E2M1), &so, v, idx, &c);
}

/* y = NVFP4 of x (R x C row-major, blocks br x 16), elements rounded with o. */
static void ref_nvfp4(const amp_round_opts *o, const float *x, float *y, size_t R, size_t C, size_t br)
{
    float amax = 0;
    for (size_t i = 0; i < R * C; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    volatile float num = 2688.0f, e = num / amax;
    float s_enc = e > FLT_MAX ? FLT_MAX : e;
    if (amax == 0 || s_enc == 0) s_enc = 1;
    amp_round_opts rne = amp_round_defaults();
    rne.flags = AMP_SATURATE;
    for (size_t r0 = 0; r0 < R; r0 += br)
        for (size_t c0 = 0; c0 < C; c0 += 16) {
            size_t r1 = r0 + br < R ? r0 + br : R, c1 = c0 + 16 < C ? c0 + 16 : C;
            float bmax = 0;
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++)
                    if (fabsf(x[r * C + c]) > bmax) bmax = fabsf(x[r * C + c]);
            volatile float sixth = 1.0f / 6.0f, t = s_enc * sixth, sd = bmax * t;
            amp_class cls;
            float s8 = amp_round1_mpfr(amp_format_get(AMP_FMT_E4M3), &rne, sd, 0, &cls), enc = 0;
            if (s8 > 0) {
                volatile float dec = 1.0f / s_enc, p = s8 * dec, e2 = 1.0f / p;
                enc = e2 > FLT_MAX ? FLT_MAX : e2;
            }
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++) {
                    size_t i = r * C + c;
                    float v = x[i];
                    if (v == 0 || s8 == 0) { y[i] = signbit(v) ? -0.0f : 0.0f; continue; }
                    volatile float p = v * enc;
                    float q = mpfr_e2m1(o, p, i);
                    y[i] = (float)((double)q * s8 * (double)(1.0f / s_enc));
                }
        }
}

/* Sylvester's Hadamard matrix of order 16 by its recursion H_2n = [H H; H -H]. */
static void sylvester16(int h[16][16])
{
    h[0][0] = 1;
    for (int n = 1; n < 16; n *= 2)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                h[i][j + n] = h[i][j];
                h[i + n][j] = h[i][j];
                h[i + n][j + n] = -h[i][j];
            }
}

/* Transformer Engine's wgrad sign vector. */
static const int te_signs[16] = { 1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1 };

/* float32 to bf16, round to nearest even on the bits (finite inputs). */
static float bf16_bits(float v)
{
    uint32_t u = amp_f2u(v);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return amp_u2f(u);
}

/* y (K,B) = x (B,K) transposed, each run of 16 along B times diag(s) H / 4, in bf16. */
static void ref_wgrad_operand(float *y, const float *x, size_t B, size_t K, int rht)
{
    int h[16][16];
    sylvester16(h);
    for (size_t k = 0; k < K; k++)
        for (size_t b0 = 0; b0 < B; b0 += 16)
            for (size_t j = 0; j < 16 && b0 + j < B; j++) {
                if (!rht) { y[k * B + b0 + j] = x[(b0 + j) * K + k]; continue; }
                volatile float acc = 0.0f;
                for (int i = 0; i < 16; i++) {
                    float v = x[(b0 + (size_t)i) * K + k];
                    acc = acc + (te_signs[i] * h[i][j] > 0 ? v : -v);
                }
                y[k * B + b0 + j] = bf16_bits(acc * 0.25f);
            }
}

/* ---- helpers ---------------------------------------------------------------------------- */
static float *randv(size_t n, uint64_t stream, double scale)
{
    float *v = malloc(n * sizeof *v);
    ck_assert(v != NULL);
    for (size_t i = 0; i < n; i++) {
        double u = amp_rand_uniform(seed, stream, 2 * i), w = amp_rand_uniform(seed, stream, 2 * i + 1);
        double mag = scale * exp2(8.0 * u - 4.0);            /* 2^-4 .. 2^4 times scale */
        v[i] = (float)(w < 0.5 ? -mag : mag);
        if (i % 37 == 5) v[i] = 0.0f;
    }
    return v;
}

static void to_bf16(float *v, size_t n)
{
    amp_round_opts o = amp_round_defaults();
    ck_assert(amp_round_f32(amp_format_get(AMP_FMT_BF16), &o, v, v, n, NULL) == AMP_OK);
}

static void same(const char *what, const float *want, const float *got, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(amp_f2u(want[i]) == amp_f2u(got[i]), "%s[%zu]: want 0x%08x (%a) got 0x%08x (%a) (seed %llu)",
                      what, i, amp_f2u(want[i]), (double)want[i], amp_f2u(got[i]), (double)got[i],
                      (unsigned long long)seed);
}

/* ---- the layer ---------------------------------------------------------------------------- */
/* B 32 rows (a multiple of 16 for the transform), I 40 and O 24: short blocks
 * along both axes and partial 16x16 weight tiles. */
static void layer_case(int rht, int sr, int stats)
{
    enum { B = 32, I = 40, O = 24 };
    amp_policy pol;
    ck_assert(amp_policy_preset(rht ? (sr ? "nvfp4" : "nvfp4:no-sr") : (sr ? "nvfp4:no-hadamard" : "nvfp4:no-hadamard:no-sr"),
                                &pol) == AMP_OK);
    ck_assert(pol.nvfp4 && pol.nvfp4_rht == rht && pol.nvfp4_sr == sr);
    pol.nvfp4_bf16[0] = 0;                   /* quantize every layer */
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 77, pol.mode, pol.sr_bits);
    ck_assert(amp_ctx_init(&cx, &reg, &pol) == AMP_OK);
    amp_tensor *in, *ing;
    ck_assert(amp_tensors_add(&reg, "x", AMP_ROLE_ACT, &pol.act, 2, (size_t[]){ B, I }, &in) == AMP_OK);
    ck_assert(amp_tensors_add(&reg, "x.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 2, (size_t[]){ B, I }, &ing) == AMP_OK);
    in->grad = ing;
    amp_linear l;
    ck_assert(amp_linear_init(&cx, &l, "fc", in, O, 1) == AMP_OK);
    ck_assert(l.wg_in && l.wg_gout && l.in_op != in && l.gout_op);
    ck_assert_str_eq(l.w->fmt.name, "e2m1");
    ck_assert_str_eq(l.b->fmt.name, "bf16");

    float *w = randv((size_t)O * I, 1, 0.05), *bias = randv(O, 2, 0.01), *x = randv((size_t)B * I, 3, 1.0);
    float *g = randv((size_t)B * O, 4, 1e-3);
    to_bf16(x, (size_t)B * I);
    to_bf16(g, (size_t)B * O);
    ck_assert(amp_ctx_set_weight(&cx, l.w, w) == AMP_OK);
    ck_assert(amp_ctx_set_weight(&cx, l.b, bias) == AMP_OK);
    amp_tensors_begin_step(&reg, 3, stats ? AMP_ROLES_LOGGED : 0);   /* with and without statistics */
    ck_assert(amp_tensor_round(&reg, l.w, l.w->master->data) == AMP_OK);   /* the step's cast */
    ck_assert(amp_tensor_round(&reg, l.b, l.b->master->data) == AMP_OK);
    memcpy(in->data, x, sizeof(float) * B * I);
    ck_assert(amp_linear_forward(&cx, &l) == AMP_OK);

    amp_round_opts rne = amp_round_defaults();
    float *rw = malloc(sizeof(float) * O * I), *rx = malloc(sizeof(float) * B * I), *acc = malloc(sizeof(float) * B * I);
    ref_nvfp4(&rne, w, rw, O, I, 16);
    same("weight (16x16)", rw, l.w->data, (size_t)O * I);
    ref_nvfp4(&rne, x, rx, B, I, 1);
    same("fprop input (1x16 along I)", rx, l.in_op->data, (size_t)B * I);
    /* out = bf16(bias + X W^T) */
    for (int r = 0; r < B; r++) memcpy(acc + r * O, l.b->data, sizeof(float) * O);
    amp_gemm(&cx.gemm, 0, 1, B, O, I, rx, I, rw, I, 1.0f, acc, O);
    to_bf16(acc, (size_t)B * O);
    same("out", acc, l.out->data, (size_t)B * O);

    memcpy(l.out->grad->data, g, sizeof(float) * B * O);
    l.out->grad->written = 1;
    ck_assert(amp_linear_backward(&cx, &l) == AMP_OK);
    /* dgrad operand: G, 1x16 along O, sr keyed by the operand tensor */
    float *rg = malloc(sizeof(float) * B * O), *tx = malloc(sizeof(float) * B * I), *tg = malloc(sizeof(float) * B * O);
    float *qx = malloc(sizeof(float) * B * I), *qg = malloc(sizeof(float) * B * O);
    amp_round_opts og = amp_tensor_opts(&reg, l.gout_op);
    og.mode = sr ? AMP_RND_SR : AMP_RND_NE;
    ref_nvfp4(&og, g, rg, B, O, 1);
    same("dgrad operand G (1x16 along O)", rg, l.gout_op->data, (size_t)B * O);
    /* wgrad operands: transposed, transformed, 1x16 along B */
    ref_wgrad_operand(tx, x, B, I, rht);
    ref_nvfp4(&rne, tx, qx, I, B, 1);
    same("wgrad operand X^T", qx, l.wg_in->data, (size_t)B * I);
    ref_wgrad_operand(tg, g, B, O, rht);
    amp_round_opts owg = amp_tensor_opts(&reg, l.wg_gout);
    owg.mode = sr ? AMP_RND_SR : AMP_RND_NE;
    ck_assert(owg.stream != og.stream);       /* a stream of its own */
    ref_nvfp4(&owg, tg, qg, O, B, 1);
    same("wgrad operand G^T", qg, l.wg_gout->data, (size_t)B * O);
    /* dW = bf16(Gt Xt^T), db = bf16(sum of the unquantized G), dX = bf16(G W) */
    amp_gemm(&cx.gemm, 0, 1, O, I, B, qg, B, qx, B, 0.0f, acc, I);
    to_bf16(acc, (size_t)O * I);
    same("dW", acc, l.w->grad->data, (size_t)O * I);
    for (int o = 0; o < O; o++) {
        double s = 0;
        for (int r = 0; r < B; r++) s += g[r * O + o];
        acc[o] = (float)s;
    }
    to_bf16(acc, O);
    same("db", acc, l.b->grad->data, O);
    amp_gemm(&cx.gemm, 0, 0, B, I, O, rg, O, rw, I, 0.0f, acc, I);
    to_bf16(acc, (size_t)B * I);
    same("dX", acc, in->grad->data, (size_t)B * I);
    /* statistics are gathered like any cast tensor's */
    if (stats) ck_assert(l.wg_gout->stats_valid && l.wg_gout->stats->n == (uint64_t)B * O);
    else ck_assert(!l.wg_gout->stats_valid);
    free(w); free(bias); free(x); free(g); free(rw); free(rx); free(acc); free(rg); free(tx); free(tg); free(qx); free(qg);
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}

START_TEST(linear_operands)
{
    layer_case(_i & 1, (_i >> 1) & 1, (_i >> 2) & 1);
}
END_TEST

/* amp_block_round without statistics (the path training takes) gives the
 * bytes of the path with statistics (checked against MPFR in check_block) and
 * of the reference here, NaN, inf and zero blocks and short blocks included. */
START_TEST(fast_path)
{
    enum { R = 37, C = 45 };
    float *x = randv(R * C, 20, 2.0), y1[R * C], y2[R * C], want[R * C];
    for (int two_d = 0; two_d < 2; two_d++)
        for (int sr = 0; sr < 2; sr++) {
            amp_block_spec b;
            ck_assert(amp_block_parse(two_d ? "nvfp4:2d" : "nvfp4", &b) == AMP_OK);
            amp_round_opts o = amp_round_defaults();
            if (sr) { o.mode = AMP_RND_SR; o.seed = 99; o.stream = 5; o.index0 = 17; }
            ck_assert(amp_block_round(&b, &o, x, y1, R, C, NULL, NULL) == AMP_OK);
            ref_nvfp4(&o, x, want, R, C, two_d ? 16 : 1);   /* sr keyed by index0 + i in both */
            same("fast path vs reference", want, y1, R * C);
            amp_stats st;
            amp_block_stats bs;
            amp_stats_init(&st);
            amp_block_stats_init(&bs);
            ck_assert(amp_block_round(&b, &o, x, y2, R, C, &st, &bs) == AMP_OK);
            same("fast path vs statistics path", y2, y1, R * C);
            memcpy(y1, x, sizeof y1);        /* in place */
            ck_assert(amp_block_round(&b, &o, y1, y1, R, C, NULL, NULL) == AMP_OK);
            same("fast path in place", y2, y1, R * C);
        }
    /* zero, NaN and inf blocks */
    for (int i = 0; i < 16; i++) { x[i] = 0.0f; x[C + i] = 0.0f; x[16 + i] = NAN; x[2 * C + 32 + (i % 13)] = INFINITY; }
    x[3] = -0.0f;
    for (int two_d = 0; two_d < 2; two_d++) {
        amp_block_spec b;
        ck_assert(amp_block_parse(two_d ? "nvfp4:2d" : "nvfp4", &b) == AMP_OK);
        amp_round_opts o = amp_round_defaults();
        amp_block_stats bs;
        amp_block_stats_init(&bs);
        ck_assert(amp_block_round(&b, &o, x, y1, R, C, NULL, NULL) == AMP_OK);
        ck_assert(amp_block_round(&b, &o, x, y2, R, C, NULL, &bs) == AMP_OK);
        ck_assert(bs.nan_blocks > 0);
        for (int i = 0; i < R * C; i++)
            ck_assert_msg(amp_f2u(y1[i]) == amp_f2u(y2[i]) || (isnan(y1[i]) && isnan(y2[i])),
                          "%s [%d]: %a vs %a", b.name, i, (double)y1[i], (double)y2[i]);
        ck_assert(isnan(y1[16]) && signbit(y1[3]) && y1[3] == 0);
    }
    free(x);
}
END_TEST

START_TEST(hadamard)
{
    int h[16][16];
    sylvester16(h);
    float m[256];
    amp_rht_matrix(m);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            ck_assert_msg(m[i * 16 + j] == (float)(te_signs[i] * h[i][j]), "entry %d,%d", i, j);
            float dot = 0;                   /* (diag(s) H)(diag(s) H)^T, exact in float */
            for (int k = 0; k < 16; k++) dot += m[i * 16 + k] * m[j * 16 + k];
            ck_assert_msg(dot == (i == j ? 16.0f : 0.0f), "H H^T [%d,%d] = %g", i, j, (double)dot);
        }
    /* the operand layout and transform, bit for bit, on random float32 values */
    enum { B = 48, K = 5 };
    float *x = randv(B * K, 9, 3.0), y[B * K], want[B * K];
    for (int rht = 0; rht < 2; rht++) {
        ck_assert(amp_nvfp4_wgrad_operand(y, x, B, K, rht) == AMP_OK);
        ref_wgrad_operand(want, x, B, K, rht);
        same(rht ? "transformed operand" : "transposed operand", want, y, B * K);
    }
    free(x);
    /* exact arithmetic: small integers, so every sum is exact; the dot products
     * along B (the wgrad GEMM's) are those of the untransformed operands */
    float a[B * 3], b[B * 2], ta[B * 3], tb[B * 2];
    for (int i = 0; i < B * 3; i++) a[i] = (float)((int)(amp_rand64(seed, 10, (uint64_t)i) % 17) - 8);
    for (int i = 0; i < B * 2; i++) b[i] = (float)((int)(amp_rand64(seed, 11, (uint64_t)i) % 17) - 8);
    ck_assert(amp_nvfp4_wgrad_operand(ta, a, B, 3, 1) == AMP_OK);
    ck_assert(amp_nvfp4_wgrad_operand(tb, b, B, 2, 1) == AMP_OK);
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++) {
            double d0 = 0, d1 = 0;
            for (int r = 0; r < B; r++) {
                d0 += (double)b[r * 2 + p] * a[r * 3 + q];
                d1 += (double)tb[p * B + r] * ta[q * B + r];
            }
            ck_assert_msg(d0 == d1, "dot %d,%d: %g vs %g", p, q, d0, d1);
        }
    /* the transform needs whole runs of 16 */
    ck_assert(amp_nvfp4_wgrad_operand(y, a, 20, 2, 1) == AMP_EINVAL);
    ck_assert(strstr(amp_errmsg(), "multiple of 16") != NULL);
    ck_assert(amp_nvfp4_wgrad_operand(y, a, 20, 2, 0) == AMP_OK);
}
END_TEST

START_TEST(policy_keys)
{
    amp_policy p;
    ck_assert(amp_policy_preset("nvfp4", &p) == AMP_OK);
    ck_assert(p.nvfp4 && p.nvfp4_rht && p.nvfp4_sr && !strcmp(p.nvfp4_bf16, "first,last"));
    ck_assert_str_eq(p.fwd_in.name, "bf16");
    ck_assert(p.has_master && p.acc_fp32);
    ck_assert(amp_policy_preset("nvfp4:no-sr:no-hadamard", &p) == AMP_OK && !p.nvfp4_rht && !p.nvfp4_sr);
    ck_assert(amp_policy_preset("nvfp4:frob", &p) == AMP_EINVAL);
    ck_assert(amp_policy_preset("nvfp4x", &p) == AMP_EINVAL);
    ck_assert(strstr(amp_policy_names(), "nvfp4") != NULL);
    const char *js = "{\"base\": \"bf16-amp\", \"nvfp4\": {\"hadamard\": false, \"bf16_layers\": [\"fc2\", \"transformer.h.0.\"]}}";
    ck_assert(amp_policy_from_json(js, "t.json", &p) == AMP_OK);
    ck_assert(p.nvfp4 && !p.nvfp4_rht && p.nvfp4_sr);
    ck_assert_str_eq(p.nvfp4_bf16, "fc2,transformer.h.0.");
    ck_assert(!amp_nvfp4_layer_on(&p, "fc2") && amp_nvfp4_layer_on(&p, "fc20") && amp_nvfp4_layer_on(&p, "fc1"));
    ck_assert(!amp_nvfp4_layer_on(&p, "transformer.h.0.mlp.c_fc") && amp_nvfp4_layer_on(&p, "transformer.h.1.mlp.c_fc"));
    char *out = amp_policy_to_json(&p);
    ck_assert(strstr(out, "\"nvfp4\":{\"bf16_layers\":[\"fc2\",\"transformer.h.0.\"],\"hadamard\":false,"
                          "\"stochastic_rounding\":true}") != NULL);
    amp_policy q;
    ck_assert(amp_policy_from_json(out, "config", &q) == AMP_OK);
    ck_assert(q.nvfp4 && !q.nvfp4_rht && q.nvfp4_sr && !strcmp(q.nvfp4_bf16, p.nvfp4_bf16));
    free(out);
    ck_assert(amp_nvfp4_resolve(&q, "fc1", "fc4") == AMP_OK);      /* no first/last: unchanged */
    ck_assert_str_eq(q.nvfp4_bf16, "fc2,transformer.h.0.");
    ck_assert(amp_policy_preset("nvfp4", &p) == AMP_OK && amp_nvfp4_resolve(&p, "fc1", "fc4") == AMP_OK);
    ck_assert_str_eq(p.nvfp4_bf16, "fc1,fc4");
    ck_assert(amp_policy_preset("nvfp4", &p) == AMP_OK && amp_nvfp4_resolve(&p, "a", NULL) == AMP_OK);
    ck_assert_str_eq(p.nvfp4_bf16, "a");
    /* other policies: no nvfp4 key in their JSON (config.json unchanged) */
    ck_assert(amp_policy_preset("fp8-hybrid", &p) == AMP_OK && !p.nvfp4 && amp_nvfp4_layer_on(&p, "fc2") == 0);
    out = amp_policy_to_json(&p);
    ck_assert(strstr(out, "nvfp4") == NULL);
    free(out);
    static const char *const bad[] = {
        "{\"nvfp4\": {\"frob\": 1}}", "{\"nvfp4\": {\"hadamard\": 1}}", "{\"nvfp4\": []}",
        "{\"nvfp4\": {\"bf16_layers\": \"fc1\"}}", "{\"nvfp4\": {\"bf16_layers\": [\"a,b\"]}}",
        "{\"base\": \"bf16-pure\", \"nvfp4\": {}}",
    };
    static const char *const msg[] = { "'nvfp4.frob'", "nvfp4.hadamard", "'nvfp4' must be an object",
                                       "nvfp4.bf16_layers", "nvfp4.bf16_layers", "FP32 master" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(amp_policy_from_json(bad[i], "t.json", &p) == AMP_EINVAL, "%s", bad[i]);
        ck_assert_msg(strstr(amp_errmsg(), msg[i]) && strstr(amp_errmsg(), "t.json"), "%s: %s", bad[i], amp_errmsg());
    }
}
END_TEST

/* ---- training ------------------------------------------------------------------------------ */
/* loss column of DIR/metrics.csv: n values into v; all finite. */
static int losses(const char *dir, double *v, int max)
{
    char rel[300];
    snprintf(rel, sizeof rel, "%s/metrics.csv", dir);
    char *t = slurp(rel), *line = strchr(t, '\n');
    int n = 0;
    while (line && line[1] && n < max) {
        char *c = strchr(line + 1, ',');
        ck_assert(c != NULL);
        v[n] = strtod(c + 1, NULL);
        ck_assert_msg(isfinite(v[n]), "%s: loss %d not finite", dir, n);
        n++;
        line = strchr(line + 1, '\n');
    }
    free(t);
    return n;
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s / n;
}

/* The format of tensor `name` in DIR/tensors.csv at step 0 ("" if absent). */
static void fmt_of(const char *dir, const char *name, char *out, size_t len)
{
    char rel[300], key[200];
    snprintf(rel, sizeof rel, "%s/tensors.csv", dir);
    snprintf(key, sizeof key, "\n0,%s,", name);
    char *t = slurp(rel), *p = strstr(t, key);
    out[0] = 0;
    if (p) {
        p = strchr(p + strlen(key), ',');    /* after the role */
        char *e = p ? strchr(p + 1, ',') : NULL;
        if (e && (size_t)(e - p - 1) < len) {
            memcpy(out, p + 1, (size_t)(e - p - 1));
            out[e - p - 1] = 0;
        }
    }
    free(t);
}

static void expect_fmt(const char *dir, const char *name, const char *want)
{
    char f[32];
    fmt_of(dir, name, f, sizeof f);
    ck_assert_msg(!strcmp(f, want), "%s: %s has format '%s', want '%s'", dir, name, f, want);
}

START_TEST(train_mlp)
{
    ct_mkdtemp("ampsim_nvfp4");
    ck_assert_int_eq(run("train --model mlp --layers 4 --hidden 64 --precision nvfp4 --steps 200 --out m"), 0);
    double v[200];
    ck_assert_int_eq(losses("m", v, 200), 200);
    ck_assert_msg(mean(v + 180, 20) < mean(v, 20) - 0.5, "loss %g -> %g", mean(v, 20), mean(v + 180, 20));
    expect_fmt("m", "fc1.weight", "bf16");
    expect_fmt("m", "fc4.weight", "bf16");
    expect_fmt("m", "fc2.weight", "e2m1");
    expect_fmt("m", "fc3.weight", "e2m1");
    expect_fmt("m", "fc2.input", "e2m1");
    expect_fmt("m", "fc3.out.grad.input", "e2m1");
    expect_fmt("m", "fc3.input.wgrad", "e2m1");
    expect_fmt("m", "fc2.out.grad.wgrad", "e2m1");
    expect_fmt("m", "fc1.input.wgrad", "");
    char *cfg = slurp("m/config.json");
    ck_assert_msg(strstr(cfg, "\"bf16_layers\":\t[\"first\", \"last\"],\n\t\t\t\"hadamard\":\ttrue,\n\t\t\t"
                       "\"stochastic_rounding\":\ttrue"), "%s", cfg);
    free(cfg);
    /* the four variants run; the transform and sr change the bytes */
    ck_assert_int_eq(run("train --model mlp --layers 4 --hidden 64 --precision nvfp4:no-hadamard:no-sr --steps 20 --out n"), 0);
    ck_assert_int_eq(run("train --model mlp --layers 4 --hidden 64 --precision nvfp4:no-sr --steps 20 --out h"), 0);
    ck_assert_int_eq(losses("n", v, 20), 20);
    char *mn = slurp("n/metrics.csv"), *mh = slurp("h/metrics.csv");
    ck_assert(strcmp(mn, mh) != 0);
    free(mn);
    free(mh);
    /* a batch that is not a multiple of 16: the transform refuses, without it trains */
    ck_assert_int_eq(run("train --model mlp --layers 3 --batch 24 --precision nvfp4 --steps 2 --out b"), 2);
    char *err = slurp("err");
    ck_assert_msg(strstr(err, "multiple of 16") && strstr(err, "nvfp4:no-hadamard"), "%s", err);
    free(err);
    ck_assert_int_eq(run("train --model mlp --layers 3 --batch 24 --precision nvfp4:no-hadamard --steps 2 --out b2"), 0);
    /* a resumed run is the run made in one go (the operands are recomputed, the
     * NVFP4 weights restored) */
    const char *a = "train --model mlp --layers 4 --hidden 64 --precision nvfp4 --log-every 1 --hist-every 5";
    char cmd[400];
    snprintf(cmd, sizeof cmd, "%s --steps 20 --out full", a);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s --steps 10 --checkpoint-every 10 --out part", a);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s --steps 20 --checkpoint-every 10 --resume --out part", a);
    ck_assert_int_eq(run(cmd), 0);
    static const char *const rf[] = { "metrics.csv", "tensors.csv", "hist.csv", "summary.json" };
    ck_assert(ct_same_files("full", "part", rf, 4));
    ct_rmtree();
}
END_TEST

START_TEST(train_gpt)
{
    ct_mkdtemp("ampsim_nvfp4");
    const char *g = "train --model gpt --layers 2 --heads 2 --dim 32 --ctx 16 --batch 4 --optim adamw --lr 0.003 "
                    "--log-every 10 --steps 60 --precision nvfp4";
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s --out g1 --threads 1", g);
    ck_assert_int_eq(run(cmd), 0);
    double v[60];
    ck_assert_int_eq(losses("g1", v, 60), 60);
    ck_assert_msg(mean(v + 50, 10) < mean(v, 10) - 0.5, "loss %g -> %g", mean(v, 10), mean(v + 50, 10));
    expect_fmt("g1", "transformer.h.0.attn.c_attn.weight", "bf16");
    expect_fmt("g1", "transformer.h.0.attn.c_attn.input", "bf16");
    expect_fmt("g1", "transformer.h.0.attn.c_proj.weight", "e2m1");
    expect_fmt("g1", "transformer.h.1.attn.c_attn.weight", "e2m1");
    expect_fmt("g1", "transformer.h.1.mlp.c_proj.out.grad.wgrad", "e2m1");
    expect_fmt("g1", "transformer.wte.weight", "bf16");       /* the tied lm_head's weight */
    expect_fmt("g1", "lm_head.out", "bf16");
    expect_fmt("g1", "transformer.h.1.attn.prob.input", "bf16");   /* attention stays out of NVFP4 */
    /* sr keyed by element: the same bytes with 2 threads */
    snprintf(cmd, sizeof cmd, "%s --steps 6 --log-every 1 --hist-every 2 --out t1 --threads 1", g);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s --steps 6 --log-every 1 --hist-every 2 --out t2 --threads 2", g);
    ck_assert_int_eq(run(cmd), 0);
    static const char *const files[] = { "metrics.csv", "tensors.csv", "hist.csv", "summary.json" };
    ck_assert(ct_same_files("t1", "t2", files, 4));
    ct_rmtree();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nvfp4");
    TCase *t = tcase_create("nvfp4");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, linear_operands, 0, 8);
    tcase_add_test(t, fast_path);
    tcase_add_test(t, hadamard);
    tcase_add_test(t, policy_keys);
    tcase_add_test(t, train_mlp);
    tcase_add_test(t, train_gpt);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    amp_check_seed("check_nvfp4", "AMP_TEST_SEED", &seed);
    return amp_check_failures(suite()) ? 1 : 0;
}
