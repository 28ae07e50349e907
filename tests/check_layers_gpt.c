/* Transformer layers (sim/layer_*.c) and the Austen data (sim/data_austen.c).
 *
 * Gradient checks: every backward is compared with central finite
 * differences of the float32 forward, taken in double: the objective is
 * J = sum_i w_i out_i (random fixed w_i, summed in double), an input x_j is
 * moved to the float32 values just above and below x_j +- h, and
 * dJ/dx_j = (J+ - J-) / (x+ - x-) with the actual float32 step in the
 * denominator. With h = 2^-7 and O(1) data the truncation error is ~h^2 ~ 1e-5
 * and the float32 noise ~1e-7 * sqrt(n) / h ~ 1e-4, so the tolerance is
 * 2e-3 (absolute + relative): a missing term or factor shows up at O(0.1).
 * The backward is run on gradients prefilled with 0.5 to check that it
 * accumulates (+=). Forward values are checked against independent
 * references (a plain double implementation with an explicit -inf mask and
 * full matrices for attention; closed forms elsewhere). */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ampsim.h"

#define FD_H   0x1p-7
#define FD_TOL 2e-3
#define PREFILL 0.5f

/* ---- helpers ------------------------------------------------------------- */

static uint64_t g_seed = 12345;

static float *randn(size_t n, uint64_t stream, double sd)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double u1 = amp_rand_uniform(g_seed, stream, 2 * i) + 0x1p-60;
        double u2 = amp_rand_uniform(g_seed, stream, 2 * i + 1);
        x[i] = (float)(sd * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
    return x;
}

static float *filled(size_t n, float v)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = v;
    return x;
}

static double dotw(const float *out, const float *w, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * out[i];
    return s;
}

/* The objective J(params) of one check. */
typedef double (*objective_fn)(void *ctx);

/* Checks grad (prefilled with PREFILL before the backward) against central
 * differences of obj in every element of x (n). Returns the worst error. */
static double fd_check(const char *what, objective_fn obj, void *ctx, float *x,
                       const float *grad, size_t n)
{
    double worst = 0.0;
    for (size_t j = 0; j < n; j++) {
        float x0 = x[j];
        float xp = (float)(x0 + FD_H), xm = (float)(x0 - FD_H);
        x[j] = xp;
        double jp = obj(ctx);
        x[j] = xm;
        double jm = obj(ctx);
        x[j] = x0;
        double fd = (jp - jm) / ((double)xp - (double)xm);
        double an = (double)grad[j] - PREFILL;
        double err = fabs(fd - an) / (1.0 + fabs(fd));
        if (err > worst) worst = err;
        ck_assert_msg(err <= FD_TOL, "%s: d/dx[%zu]: finite difference %.9g, backward %.9g",
                      what, j, fd, an);
    }
    return worst;
}

/* ---- embedding ----------------------------------------------------------- */

enum { EB = 2, ET = 3, EC = 4, EV = 7 };
typedef struct { int32_t tok[EB * ET]; float *wte, *wpe, *out, *w; } embed_ctx;

static double embed_obj(void *p)
{
    embed_ctx *c = p;
    amp_embed_forward(c->out, c->tok, c->wte, c->wpe, EB, ET, EC, EV);
    return dotw(c->out, c->w, EB * ET * EC);
}

START_TEST(test_embed)
{
    embed_ctx c;
    int32_t tok[EB * ET] = { 3, 0, 3, 6, 3, 1 };   /* repeated token: scatter-add */
    memcpy(c.tok, tok, sizeof tok);
    c.wte = randn(EV * EC, 1, 1.0);
    c.wpe = randn(ET * EC, 2, 1.0);
    c.out = malloc(EB * ET * EC * sizeof(float));
    c.w = randn(EB * ET * EC, 3, 1.0);
    embed_obj(&c);
    for (int b = 0; b < EB; b++)
        for (int t = 0; t < ET; t++)
            for (int k = 0; k < EC; k++)
                ck_assert_float_eq(c.out[(b * ET + t) * EC + k],
                                   c.wte[tok[b * ET + t] * EC + k] + c.wpe[t * EC + k]);
    float *dwte = filled(EV * EC, PREFILL), *dwpe = filled(ET * EC, PREFILL);
    amp_embed_backward(dwte, dwpe, c.w, c.tok, EB, ET, EC, EV);
    /* rows of tokens that never occur keep exactly the prefill */
    for (int k = 0; k < EC; k++) ck_assert_float_eq(dwte[2 * EC + k], PREFILL);
    fd_check("embed wte", embed_obj, &c, c.wte, dwte, EV * EC);
    fd_check("embed wpe", embed_obj, &c, c.wpe, dwpe, ET * EC);
    free(c.wte); free(c.wpe); free(c.out); free(c.w); free(dwte); free(dwpe);
}
END_TEST

/* ---- LayerNorm ------------------------------------------------------------ */

enum { LN_N = 5, LN_C = 7 };
typedef struct { float *x, *wt, *bs, *out, *mean, *rstd, *w; } ln_ctx;

static double ln_obj(void *p)
{
    ln_ctx *c = p;
    amp_layernorm_forward(c->out, c->mean, c->rstd, c->x, c->wt, c->bs, LN_N, LN_C, 1e-5);
    return dotw(c->out, c->w, LN_N * LN_C);
}

START_TEST(test_layernorm)
{
    ln_ctx c;
    c.x = randn(LN_N * LN_C, 10, 1.0);
    for (int i = 0; i < LN_N * LN_C; i++) c.x[i] += 0.5f * (float)(i / LN_C);  /* row offsets */
    c.wt = randn(LN_C, 11, 1.0);
    c.bs = randn(LN_C, 12, 1.0);
    c.out = malloc(LN_N * LN_C * sizeof(float));
    c.mean = malloc(LN_N * sizeof(float));
    c.rstd = malloc(LN_N * sizeof(float));
    c.w = randn(LN_N * LN_C, 13, 1.0);
    ln_obj(&c);
    /* independent: with weight 1, bias 0, each row has mean 0 and
     * (biased) variance var/(var+eps) */
    float *one = filled(LN_C, 1.0f), *zero = filled(LN_C, 0.0f);
    float *o2 = malloc(LN_N * LN_C * sizeof(float));
    amp_layernorm_forward(o2, c.mean, c.rstd, c.x, one, zero, LN_N, LN_C, 1e-5);
    for (int r = 0; r < LN_N; r++) {
        double m = 0, v = 0, mo = 0, vo = 0;
        for (int k = 0; k < LN_C; k++) m += c.x[r * LN_C + k];
        m /= LN_C;
        for (int k = 0; k < LN_C; k++) v += pow(c.x[r * LN_C + k] - m, 2);
        v /= LN_C;
        for (int k = 0; k < LN_C; k++) mo += o2[r * LN_C + k];
        mo /= LN_C;
        for (int k = 0; k < LN_C; k++) vo += pow(o2[r * LN_C + k] - mo, 2);
        vo /= LN_C;
        ck_assert_double_eq_tol(mo, 0.0, 1e-6);
        ck_assert_double_eq_tol(vo, v / (v + 1e-5), 1e-6);
        ck_assert_double_eq_tol(c.mean[r], m, 1e-6);
        ck_assert_double_eq_tol(c.rstd[r], 1.0 / sqrt(v + 1e-5), 1e-5);
    }
    ln_obj(&c);
    float *dx = filled(LN_N * LN_C, PREFILL), *dw = filled(LN_C, PREFILL), *db = filled(LN_C, PREFILL);
    amp_layernorm_backward(dx, dw, db, c.w, c.x, c.wt, c.mean, c.rstd, LN_N, LN_C);
    fd_check("layernorm x", ln_obj, &c, c.x, dx, LN_N * LN_C);
    fd_check("layernorm weight", ln_obj, &c, c.wt, dw, LN_C);
    fd_check("layernorm bias", ln_obj, &c, c.bs, db, LN_C);
    free(c.x); free(c.wt); free(c.bs); free(c.out); free(c.mean); free(c.rstd); free(c.w);
    free(one); free(zero); free(o2); free(dx); free(dw); free(db);
}
END_TEST

/* ---- GELU ------------------------------------------------------------------ */

enum { GN = 41 };
typedef struct { float *x, *out, *w; } gelu_ctx;

static double gelu_obj(void *p)
{
    gelu_ctx *c = p;
    amp_gelu_forward(c->out, c->x, GN);
    return dotw(c->out, c->w, GN);
}

START_TEST(test_gelu)
{
    /* values of 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) from Python's
     * math module (the same expression as torch's approximate='tanh') */
    static const struct { float x; double y; } known[] = {
        { 1.0f, 0.8411919906082768 }, { -1.0f, -0.15880800939172324 },
        { 0.5f, 0.34571400982514394 }, { 3.0f, 2.996362607918227 },
        { -3.0f, -0.0036373920817729943 }, { 0.0f, 0.0 },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        float y;
        amp_gelu_forward(&y, &known[i].x, 1);
        /* float32 evaluation: a few ulps, more where 1 + tanh cancels (x = -3) */
        ck_assert_msg(fabs(y - known[i].y) <= 1e-6 * (1 + fabs(known[i].y)),
                      "gelu(%g) = %.9g, want %.9g", known[i].x, y, known[i].y);
    }
    gelu_ctx c;
    c.x = malloc(GN * sizeof(float));
    for (int i = 0; i < GN; i++) c.x[i] = -5.0f + 0.25f * (float)i + 0.01f;
    c.out = malloc(GN * sizeof(float));
    c.w = randn(GN, 20, 1.0);
    float *dx = filled(GN, PREFILL);
    amp_gelu_backward(dx, c.x, c.w, GN);
    fd_check("gelu", gelu_obj, &c, c.x, dx, GN);
    free(c.x); free(c.out); free(c.w); free(dx);
}
END_TEST

/* The float32 GELU against gelu(x) and gelu'(x) in long double (tanhl) on a
 * grid of [-12, 12] (step 2^-9) and some larger values: the bounds of
 * sim/amp_layers.h (forward |err| <= 1e-6 |gelu| + 1e-7; backward |err| <=
 * 1e-5 (|s| + |t2|) + 1e-6, s and t2 its two terms 0.5 (1 + tanh u) and
 * 0.5 x (1 - tanh^2 u) k (1 + 3 a x^2)); amp_gelu_backward_set gives the bits
 * of amp_gelu_backward on zeros. Each value computed alone gets the
 * bits it gets inside a long vector (the lanes are independent), and the
 * special values follow PyTorch's 0.5 x (1 + tanh u): NaN -> NaN,
 * +inf -> +inf, -inf -> NaN, -0 -> -0. */
START_TEST(test_gelu_bounds)
{
    enum { NG = 24 * 512 + 1 + 6 };
    float *x = malloc(NG * sizeof *x), *y = malloc(NG * sizeof *y), *d = malloc(NG * sizeof *d);
    float *one = filled(NG, 1.0f);
    for (int i = 0; i <= 24 * 512; i++) x[i] = -12.0f + (float)i / 512.0f;
    const float big[6] = { 20.0f, -20.0f, 100.0f, -100.0f, 3e5f, -3e5f };
    memcpy(x + 24 * 512 + 1, big, sizeof big);
    memset(d, 0, NG * sizeof *d);
    amp_gelu_forward(y, x, NG);
    amp_gelu_backward(d, x, one, NG);
    float *d2 = filled(NG, NAN);   /* overwritten: the bits of the backward on zeros */
    amp_gelu_backward_set(d2, x, one, NG);
    ck_assert(memcmp(d, d2, NG * sizeof *d) == 0);
    free(d2);
    const long double k = sqrtl(2.0L / 3.14159265358979323846264338327950288L), a = 0.044715L;
    double worst_f = 0, worst_b = 0;
    for (int i = 0; i < NG; i++) {
        long double xl = x[i], u = k * (xl + a * xl * xl * xl), th = tanhl(u);
        long double s = 0.5L * (1 + th), g = xl * s;
        long double t2 = 0.5L * xl * (1 - th * th) * k * (1 + 3 * a * xl * xl);
        double ef = (double)(fabsl(y[i] - g) / (1e-6L * fabsl(g) + 1e-7L));
        double eb = (double)(fabsl(d[i] - (s + t2)) / (1e-5L * (fabsl(s) + fabsl(t2)) + 1e-6L));
        ck_assert_msg(ef <= 1.0, "gelu(%.9g) = %.9g, want %.12Lg", x[i], y[i], g);
        ck_assert_msg(eb <= 1.0, "gelu'(%.9g) = %.9g, want %.12Lg", x[i], d[i], s + t2);
        worst_f = ef > worst_f ? ef : worst_f;
        worst_b = eb > worst_b ? eb : worst_b;
        float y1, d1 = 0.0f;
        amp_gelu_forward(&y1, &x[i], 1);
        amp_gelu_backward(&d1, &x[i], &one[i], 1);
        ck_assert_msg(memcmp(&y1, &y[i], 4) == 0 && memcmp(&d1, &d[i], 4) == 0, "gelu(%g): lane-dependent bits", x[i]);
    }
    if (getenv("AMP_TEST_VERBOSE"))
        printf("gelu: worst forward error %.3f, backward %.3f of the bound\n", worst_f, worst_b);
    const float sp[4] = { NAN, INFINITY, -INFINITY, -0.0f };
    float ys[4];
    ck_assert_uint_eq(amp_gelu_forward_counted(ys, sp, 4), 3);
    ck_assert(isnan(ys[0]) && ys[1] == INFINITY && isnan(ys[2]) && ys[3] == 0.0f && signbit(ys[3]));
    /* gelu' of NaN, +inf, -inf, -0: NaN, 1, 0, 0.5 (tanh taken as +-1 beyond the cut) */
    float ds[4], ones4[4] = { 1, 1, 1, 1 };
    ck_assert_uint_eq(amp_gelu_backward_set(ds, sp, ones4, 4), 1);
    ck_assert(isnan(ds[0]) && ds[1] == 1.0f && ds[2] == 0.0f && ds[3] == 0.5f);
    ck_assert_uint_eq(amp_gelu_forward_counted(y, x, NG), 0);
    ck_assert_uint_eq(amp_gelu_backward_set(d, x, one, NG), 0);
    free(x); free(y); free(d); free(one);
}
END_TEST

/* ---- residual ---------------------------------------------------------------- */

enum { RN = 9 };
typedef struct { float *a, *b, *out, *w; } res_ctx;

static double res_obj(void *p)
{
    res_ctx *c = p;
    amp_residual_forward(c->out, c->a, c->b, RN);
    return dotw(c->out, c->w, RN);
}

START_TEST(test_residual)
{
    res_ctx c = { randn(RN, 30, 1.0), randn(RN, 31, 1.0), malloc(RN * sizeof(float)), randn(RN, 32, 1.0) };
    res_obj(&c);
    for (int i = 0; i < RN; i++) ck_assert_float_eq(c.out[i], c.a[i] + c.b[i]);
    float *da = filled(RN, PREFILL), *db = filled(RN, PREFILL);
    amp_residual_backward(da, db, c.w, RN);
    fd_check("residual a", res_obj, &c, c.a, da, RN);
    fd_check("residual b", res_obj, &c, c.b, db, RN);
    /* the count of inf and NaN sums, in the groups of 16 and in the rest */
    enum { CN = 37 };
    float x[CN], y[CN], o[CN];
    for (int i = 0; i < CN; i++) x[i] = y[i] = 1.0f;
    x[3] = 3e38f, y[3] = 3e38f;          /* overflows */
    x[20] = INFINITY, y[20] = -INFINITY;  /* NaN */
    x[35] = NAN;
    ck_assert_uint_eq(amp_residual_forward(o, x, y, CN), 3);
    ck_assert(isinf(o[3]) && isnan(o[20]) && isnan(o[35]) && o[36] == 2.0f);
    free(c.a); free(c.b); free(c.out); free(c.w); free(da); free(db);
}
END_TEST

/* ---- attention ---------------------------------------------------------------- */

enum { AB = 2, AT = 5, AC = 8, ANH = 2, AHS = AC / ANH };
#define AL ((size_t)AB * ANH * AT * (AT + 1) / 2)

typedef struct {
    float *qkv, *att, *prob, *out;   /* inputs/outputs of the pieces */
    float *w_out, *w_att;            /* objective weights */
    float scale;
} attn_ctx;

static double attn_full_obj(void *p)
{
    attn_ctx *c = p;
    amp_attention_forward(c->out, c->att, c->prob, c->qkv, AB, AT, AC, ANH);
    return dotw(c->out, c->w_out, AB * AT * AC);
}
static double attn_scores_obj(void *p)
{
    attn_ctx *c = p;
    amp_attn_scores_forward(c->att, c->qkv, c->scale, AB, AT, AC, ANH);
    return dotw(c->att, c->w_att, AL);
}
static double attn_softmax_obj(void *p)
{
    attn_ctx *c = p;   /* input: att, output: prob */
    amp_attn_softmax_forward(c->prob, c->att, AB, AT, ANH);
    return dotw(c->prob, c->w_att, AL);
}
static double attn_values_obj(void *p)
{
    attn_ctx *c = p;   /* inputs: prob, qkv */
    amp_attn_values_forward(c->out, c->prob, c->qkv, AB, AT, AC, ANH);
    return dotw(c->out, c->w_out, AB * AT * AC);
}

/* Independent reference: full T x T matrices, -inf mask, all in double. */
static void attn_reference(double *out, double *att_full, double *prob_full, const float *qkv)
{
    double scale = 1.0 / sqrt((double)AHS);
    for (int b = 0; b < AB; b++)
        for (int h = 0; h < ANH; h++) {
            double *A = att_full + (b * ANH + h) * AT * AT;
            double *P = prob_full + (b * ANH + h) * AT * AT;
            for (int t = 0; t < AT; t++) {
                for (int u = 0; u < AT; u++) {
                    double s = 0;
                    for (int d = 0; d < AHS; d++)
                        s += (double)qkv[(b * AT + t) * 3 * AC + h * AHS + d] *
                             qkv[(b * AT + u) * 3 * AC + AC + h * AHS + d];
                    A[t * AT + u] = u <= t ? s * scale : -INFINITY;
                }
                double mx = -INFINITY, sum = 0;
                for (int u = 0; u < AT; u++) mx = fmax(mx, A[t * AT + u]);
                for (int u = 0; u < AT; u++) sum += exp(A[t * AT + u] - mx);
                for (int u = 0; u < AT; u++) P[t * AT + u] = exp(A[t * AT + u] - mx) / sum;
                for (int d = 0; d < AHS; d++) {
                    double s = 0;
                    for (int u = 0; u < AT; u++)
                        s += P[t * AT + u] * qkv[(b * AT + u) * 3 * AC + 2 * AC + h * AHS + d];
                    out[(b * AT + t) * AC + h * AHS + d] = s;
                }
            }
        }
}

static attn_ctx attn_setup(void)
{
    attn_ctx c;
    c.qkv = randn(AB * AT * 3 * AC, 40, 1.0);
    c.att = malloc(AL * sizeof(float));
    c.prob = malloc(AL * sizeof(float));
    c.out = malloc(AB * AT * AC * sizeof(float));
    c.w_out = randn(AB * AT * AC, 41, 1.0);
    c.w_att = randn(AL, 42, 1.0);
    c.scale = (float)(1.0 / sqrt((double)AHS));
    return c;
}

static void attn_teardown(attn_ctx *c)
{
    free(c->qkv); free(c->att); free(c->prob); free(c->out); free(c->w_out); free(c->w_att);
}

START_TEST(test_attention_forward_reference)
{
    attn_ctx c = attn_setup();
    attn_full_obj(&c);
    double *out = malloc(AB * AT * AC * sizeof(double));
    double *A = malloc(AB * ANH * AT * AT * sizeof(double)), *P = malloc(AB * ANH * AT * AT * sizeof(double));
    attn_reference(out, A, P, c.qkv);
    for (int i = 0; i < AB * AT * AC; i++)
        ck_assert_msg(fabs(c.out[i] - out[i]) <= 1e-6 * (1 + fabs(out[i])), "out[%d] %.9g vs %.9g", i, c.out[i], out[i]);
    /* packed layout: (b,h,t,u) at (b*NH+h)*T(T+1)/2 + t(t+1)/2 + u; masked entries: prob 0 */
    double rowsum_max = 0;
    for (int bh = 0; bh < AB * ANH; bh++)
        for (int t = 0; t < AT; t++) {
            double rs = 0;
            for (int u = 0; u <= t; u++) {
                size_t k = (size_t)bh * AT * (AT + 1) / 2 + t * (t + 1) / 2 + u;
                double a = A[(bh * AT + t) * AT + u], p = P[(bh * AT + t) * AT + u];
                ck_assert_msg(fabs(c.att[k] - a) <= 1e-6 * (1 + fabs(a)), "att %d %d %d", bh, t, u);
                ck_assert_msg(fabs(c.prob[k] - p) <= 1e-6, "prob %d %d %d", bh, t, u);
                rs += c.prob[k];
            }
            for (int u = t + 1; u < AT; u++) ck_assert(P[(bh * AT + t) * AT + u] == 0.0);
            rowsum_max = fmax(rowsum_max, fabs(rs - 1.0));
        }
    ck_assert_double_le(rowsum_max, 1e-6);
    /* causality: changing the last position's q, k, v leaves earlier outputs alone */
    float *before = malloc(AB * AT * AC * sizeof(float));
    memcpy(before, c.out, AB * AT * AC * sizeof(float));
    for (int k = 0; k < 3 * AC; k++) c.qkv[(0 * AT + AT - 1) * 3 * AC + k] += 1.0f;
    attn_full_obj(&c);
    for (int t = 0; t < AT - 1; t++)
        for (int k = 0; k < AC; k++) ck_assert_float_eq(c.out[t * AC + k], before[t * AC + k]);
    free(before); free(out); free(A); free(P);
    attn_teardown(&c);
}
END_TEST

/* The attention kernels' order, bit for bit, against a scalar transcription
 * of sim/layer_attention.c's contract, on shapes the small tests do not
 * reach: T = 37 (rows that cross blocks of 16 columns, an odd last row and
 * column) and head sizes 7, 20 and 36 (n mod 4 != 0; sums of 32 elements and
 * a rest). Scores: q . k with partial sums s[i mod 4] = fmaf(q_i, k_i, s)
 * over i < n - n mod 4, the rest into s[0], (s0 + s1) + (s2 + s3), times
 * scale; the weighted sums one fmaf chain from +0 in increasing index; the
 * backward adds each result once to a zeroed output. */
static float ref_dot(const float *q, const float *k, size_t n)
{
    volatile float s[4] = { 0, 0, 0, 0 };
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int r = 0; r < 4; r++) s[r] = fmaf(q[i + r], k[i + r], s[r]);
    for (; i < n; i++) s[0] = fmaf(q[i], k[i], s[0]);
    volatile float lo = s[0] + s[1], hi = s[2] + s[3];
    return lo + hi;
}

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

START_TEST(test_attention_order)
{
    enum { OT = 37 };
    static const size_t heads[3] = { 7, 20, 36 };
    for (int hi = 0; hi < 3; hi++) {
        size_t hs = heads[hi], NH = 2, C = NH * hs, C3 = 3 * C, L = (size_t)OT * (OT + 1) / 2;
        float *qkv = randn(OT * C3, 70 + hi, 1.0), *dout = randn(OT * C, 80 + hi, 1.0);
        float *da = randn(NH * L, 90 + hi, 1.0), *prob = randn(NH * L, 95 + hi, 0.3);
        float *att = malloc(NH * L * sizeof *att), *y = malloc(OT * C * sizeof *y);
        float *dp = filled(NH * L, 0.0f), *dq1 = filled(OT * C3, 0.0f), *dq2 = filled(OT * C3, 0.0f);
        const float scale = 0.37f;
        amp_attn_scores_forward(att, qkv, scale, 1, OT, C, NH);
        amp_attn_values_forward(y, prob, qkv, 1, OT, C, NH);
        amp_attn_values_backward(dp, dq1, dout, prob, qkv, 1, OT, C, NH);
        amp_attn_scores_backward(dq2, da, qkv, scale, 1, OT, C, NH);
        for (size_t h = 0; h < NH; h++) {
            const float *pr = prob + h * L, *dah = da + h * L;
            for (size_t t = 0; t < OT; t++)
                for (size_t t2 = 0; t2 <= t; t2++) {
                    const float *q = qkv + t * C3 + h * hs, *k = qkv + t2 * C3 + C + h * hs;
                    const float *v = qkv + t2 * C3 + 2 * C + h * hs, *g = dout + t * C + h * hs;
                    size_t o = h * L + t * (t + 1) / 2 + t2;
                    volatile float sc = ref_dot(q, k, hs);
                    ck_assert_msg(fbits(att[o]) == fbits(sc * scale), "hs %zu: att[%zu,%zu]", hs, t, t2);
                    volatile float z = 0.0f, dd = ref_dot(g, v, hs);
                    ck_assert_msg(fbits(dp[o]) == fbits(z + dd), "hs %zu: dprob[%zu,%zu]", hs, t, t2);
                }
            for (size_t t = 0; t < OT; t++)
                for (size_t d = 0; d < hs; d++) {
                    volatile float sy = 0.0f, sq = 0.0f, sk = 0.0f, sv = 0.0f, z = 0.0f;
                    for (size_t j = 0; j <= t; j++) {   /* y[t], dq[t]: j = t2 <= t */
                        sy = fmaf(pr[t * (t + 1) / 2 + j], qkv[j * C3 + 2 * C + h * hs + d], sy);
                        volatile float c = dah[t * (t + 1) / 2 + j] * scale;
                        sq = fmaf(c, qkv[j * C3 + C + h * hs + d], sq);
                    }
                    for (size_t j = t; j < OT; j++) {   /* dk[t], dv[t]: j = t' >= t */
                        volatile float c = dah[j * (j + 1) / 2 + t] * scale;
                        sk = fmaf(c, qkv[j * C3 + h * hs + d], sk);
                        sv = fmaf(pr[j * (j + 1) / 2 + t], dout[j * C + h * hs + d], sv);
                    }
                    ck_assert_msg(fbits(y[t * C + h * hs + d]) == fbits(sy), "hs %zu: y[%zu][%zu]", hs, t, d);
                    ck_assert_msg(fbits(dq2[t * C3 + h * hs + d]) == fbits(z + sq), "hs %zu: dq[%zu][%zu]", hs, t, d);
                    ck_assert_msg(fbits(dq2[t * C3 + C + h * hs + d]) == fbits(z + sk), "hs %zu: dk[%zu][%zu]", hs, t, d);
                    ck_assert_msg(fbits(dq1[t * C3 + 2 * C + h * hs + d]) == fbits(z + sv), "hs %zu: dv[%zu][%zu]", hs, t,
                                  d);
                }
        }
        free(qkv); free(dout); free(da); free(prob); free(att); free(y); free(dp); free(dq1); free(dq2);
    }
}
END_TEST

START_TEST(test_attention_gradients)
{
    attn_ctx c = attn_setup();
    size_t nq = AB * AT * 3 * AC;
    /* whole chain, gradient w.r.t. the fused qkv */
    attn_full_obj(&c);
    float *dqkv = filled(nq, PREFILL), *datt = malloc(AL * sizeof(float)), *dprob = malloc(AL * sizeof(float));
    amp_attention_backward(dqkv, datt, dprob, c.w_out, c.prob, c.qkv, AB, AT, AC, ANH);
    fd_check("attention qkv", attn_full_obj, &c, c.qkv, dqkv, nq);

    /* scores alone (a scale that is not a power of two) */
    c.scale = 0.3f;
    for (size_t i = 0; i < nq; i++) dqkv[i] = PREFILL;
    amp_attn_scores_backward(dqkv, c.w_att, c.qkv, c.scale, AB, AT, AC, ANH);
    for (size_t bt = 0; bt < AB * AT; bt++)       /* v part untouched */
        for (int k = 2 * AC; k < 3 * AC; k++) ck_assert_float_eq(dqkv[bt * 3 * AC + k], PREFILL);
    fd_check("attn scores qkv", attn_scores_obj, &c, c.qkv, dqkv, nq);

    /* softmax alone, from O(1) scores */
    amp_attn_scores_forward(c.att, c.qkv, 1.0f, AB, AT, AC, ANH);
    amp_attn_softmax_forward(c.prob, c.att, AB, AT, ANH);
    float *da = filled(AL, PREFILL);
    amp_attn_softmax_backward(da, c.w_att, c.prob, AB, AT, ANH);
    fd_check("attn softmax", attn_softmax_obj, &c, c.att, da, AL);

    /* values alone: w.r.t. prob (any values, not only a softmax) and v */
    float *dp = filled(AL, PREFILL);
    for (size_t i = 0; i < nq; i++) dqkv[i] = PREFILL;
    amp_attn_values_backward(dp, dqkv, c.w_out, c.prob, c.qkv, AB, AT, AC, ANH);
    for (size_t bt = 0; bt < AB * AT; bt++)       /* q, k parts untouched */
        for (int k = 0; k < 2 * AC; k++) ck_assert_float_eq(dqkv[bt * 3 * AC + k], PREFILL);
    fd_check("attn values prob", attn_values_obj, &c, c.prob, dp, AL);
    fd_check("attn values qkv", attn_values_obj, &c, c.qkv, dqkv, nq);
    free(dqkv); free(datt); free(dprob); free(da); free(dp);
    attn_teardown(&c);
}
END_TEST

/* ---- data ------------------------------------------------------------------------ */

/* ---- the general-shape forms give the attention kernels' bits ------------ */
enum { RB = 2, RT = 7, RC = 20, RNH = 2, RHS = RC / RNH, RP = RB * RNH };
#define RL (RT * (RT + 1) / 2)

/* (P, T, hs) copy of part `part` (0 q, 1 k, 2 v) of qkv (B, T, 3C). */
static float *split_head(const float *qkv, int part)
{
    float *o = malloc((size_t)RP * RT * RHS * sizeof *o);
    for (int b = 0; b < RB; b++)
        for (int h = 0; h < RNH; h++)
            for (int t = 0; t < RT; t++)
                for (int d = 0; d < RHS; d++)
                    o[((b * RNH + h) * RT + t) * RHS + d] = qkv[(b * RT + t) * 3 * RC + part * RC + h * RHS + d];
    return o;
}

/* full (P, T, T) of packed (P, RL): fill above the diagonal. */
static float *unpack(const float *packed, float fill)
{
    float *o = malloc((size_t)RP * RT * RT * sizeof *o);
    for (int p = 0; p < RP; p++)
        for (int t = 0; t < RT; t++)
            for (int u = 0; u < RT; u++)
                o[(p * RT + t) * RT + u] = u <= t ? packed[p * RL + t * (t + 1) / 2 + u] : fill;
    return o;
}

/* full (P, T, T) lower triangles (and, when upper, the rest) equal packed bit for bit. */
static void same_lower(const char *what, const float *full, const float *packed, int upper_zero)
{
    for (int p = 0; p < RP; p++)
        for (int t = 0; t < RT; t++)
            for (int u = 0; u < RT; u++) {
                float f = full[(p * RT + t) * RT + u];
                if (u <= t)
                    ck_assert_msg(memcmp(&f, &packed[p * RL + t * (t + 1) / 2 + u], 4) == 0,
                                  "%s: [%d,%d,%d] %a vs %a", what, p, t, u, f, packed[p * RL + t * (t + 1) / 2 + u]);
                else if (upper_zero)
                    ck_assert_msg(f == 0.0f, "%s: masked [%d,%d,%d] = %a", what, p, t, u, f);
            }
}

/* (P, T, hs) equals part `part` of the (B, T, n*C) layout dst (n = 3: qkv; 1: y). */
static void same_heads(const char *what, const float *ph, const float *dst, int n, int part)
{
    for (int b = 0; b < RB; b++)
        for (int h = 0; h < RNH; h++)
            for (int t = 0; t < RT; t++)
                for (int d = 0; d < RHS; d++) {
                    float a = ph[((b * RNH + h) * RT + t) * RHS + d];
                    float c = dst[(b * RT + t) * n * RC + part * RC + h * RHS + d];
                    ck_assert_msg(memcmp(&a, &c, 4) == 0, "%s: [%d,%d,%d,%d] %a vs %a", what, b, h, t, d, a, c);
                }
}

static float *transpose_last(const float *x, int P, int M, int N)
{
    float *o = malloc((size_t)P * M * N * sizeof *o);
    for (int p = 0; p < P; p++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) o[(p * N + j) * M + i] = x[(p * M + i) * N + j];
    return o;
}

START_TEST(test_rows_forms_equal_attention)
{
    float *qkv = randn((size_t)RB * RT * 3 * RC, 71, 1.0);
    /* q.k terms 0 and 2 are +2^60 and -2^60: the small terms between them
     * survive only in the kernels' order of partial sums */
    for (int r = 0; r < RB * RT; r++)
        for (int h = 0; h < RNH; h++) {
            float *row = qkv + (size_t)r * 3 * RC + h * RHS;
            row[0] = 0x1p30f, row[2] = -0x1p30f, row[RC] = 0x1p30f, row[RC + 2] = 0x1p30f;
        }
    float *q = split_head(qkv, 0), *k = split_head(qkv, 1), *v = split_head(qkv, 2);
    size_t F = (size_t)RP * RT * RT;
    /* forward: scores, softmax (masked by -inf), values */
    float *att = malloc(RP * RL * sizeof *att), *full = malloc(F * sizeof *full);
    amp_attn_scores_forward(att, qkv, 1.0f, RB, RT, RC, RNH);
    amp_bmm_f64(full, q, k, RP, RT, RT, RHS, 1);
    same_lower("scores", full, att, 0);
    float *prob = malloc(RP * RL * sizeof *prob), *pfull = malloc(F * sizeof *pfull);
    float *masked = unpack(att, -INFINITY);
    amp_attn_softmax_forward(prob, att, RB, RT, RNH);
    amp_softmax_rows_forward(pfull, masked, (size_t)RP * RT, RT);
    same_lower("softmax", pfull, prob, 1);
    float *y = malloc((size_t)RB * RT * RC * sizeof *y), *yh = malloc((size_t)RP * RT * RHS * sizeof *yh);
    amp_attn_values_forward(y, prob, qkv, RB, RT, RC, RNH);
    amp_bmm_f64(yh, pfull, v, RP, RT, RHS, RT, 0);
    same_heads("values", yh, y, 1, 0);
    /* backward: values (dprob, dv), softmax, scores (dq, dk) */
    float *dy = randn((size_t)RB * RT * RC, 72, 1.0), *dyh = malloc((size_t)RP * RT * RHS * sizeof *dyh);
    for (int b = 0; b < RB; b++)
        for (int h = 0; h < RNH; h++)
            for (int t = 0; t < RT; t++)
                for (int d = 0; d < RHS; d++)
                    dyh[((b * RNH + h) * RT + t) * RHS + d] = dy[(b * RT + t) * RC + h * RHS + d];
    float *dprob = calloc(RP * RL, sizeof *dprob), *dqkv = calloc((size_t)RB * RT * 3 * RC, sizeof *dqkv);
    amp_attn_values_backward(dprob, dqkv, dy, prob, qkv, RB, RT, RC, RNH);
    float *dpfull = malloc(F * sizeof *dpfull), *pT = transpose_last(pfull, RP, RT, RT);
    float *dv = malloc((size_t)RP * RT * RHS * sizeof *dv);
    amp_bmm_f64(dpfull, dyh, v, RP, RT, RT, RHS, 1);
    amp_bmm_f64(dv, pT, dyh, RP, RT, RHS, RT, 0);
    same_lower("dprob", dpfull, dprob, 0);
    same_heads("dv", dv, dqkv, 3, 2);
    float *datt = calloc(RP * RL, sizeof *datt), *dafull = calloc(F, sizeof *dafull);
    amp_attn_softmax_backward(datt, dprob, prob, RB, RT, RNH);
    amp_softmax_rows_backward(dafull, dpfull, pfull, (size_t)RP * RT, RT);
    same_lower("dsoftmax", dafull, datt, 1);
    amp_attn_scores_backward(dqkv, datt, qkv, 1.0f, RB, RT, RC, RNH);
    float *dq = malloc((size_t)RP * RT * RHS * sizeof *dq), *dkT = malloc((size_t)RP * RHS * RT * sizeof *dkT);
    float *qT = transpose_last(q, RP, RT, RHS);
    amp_bmm_f64(dq, dafull, k, RP, RT, RHS, RT, 0);
    amp_bmm_f64(dkT, qT, dafull, RP, RHS, RT, RT, 0);
    float *dk = transpose_last(dkT, RP, RHS, RT);
    same_heads("dq", dq, dqkv, 3, 0);
    same_heads("dk", dk, dqkv, 3, 1);
    float *bufs[] = { qkv, q, k, v, att, full, prob, pfull, masked, y, yh, dy, dyh, dprob, dqkv,
                      dpfull, pT, dv, datt, dafull, dq, dkT, qT, dk };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}
END_TEST

static char g_tmpdir[256];

static char *write_tmp(const char *name, const void *data, size_t len)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
    return path;
}

START_TEST(test_austen_synthetic)
{
    /* 200 bytes: train = first 180 ("ab" repeated), validation = last 20
     * (all 'c' and 'd', half each): unigram entropy of validation is ln 2 */
    char text[200];
    for (int i = 0; i < 180; i++) text[i] = i % 2 ? 'b' : 'a';
    for (int i = 180; i < 200; i++) text[i] = i < 190 ? 'c' : 'd';
    amp_austen d;
    ck_assert_int_eq(amp_austen_load(&d, write_tmp("syn.txt", text, sizeof text)), AMP_OK);
    ck_assert_uint_eq(d.n, 200);
    ck_assert_uint_eq(d.n_train, 180);
    ck_assert_double_eq_tol(amp_austen_unigram_entropy(&d, AMP_SPLIT_VAL), log(2.0), 1e-12);
    ck_assert_double_eq_tol(amp_austen_unigram_entropy(&d, AMP_SPLIT_TRAIN), log(2.0), 1e-12);
    /* 'c','d' unseen in training: each has probability 1/(180+256) */
    ck_assert_double_eq_tol(amp_austen_unigram_xent(&d, AMP_SPLIT_TRAIN, AMP_SPLIT_VAL),
                            log(436.0), 1e-12);
    int32_t x[4 * 8], y[4 * 8], x2[4 * 8], y2[4 * 8];
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_VAL, 7, 3, 4, 8, x, y), AMP_OK);
    for (int i = 0; i < 32; i++) {
        ck_assert(x[i] == 'c' || x[i] == 'd');
        if (i % 8 < 7) ck_assert_int_eq(y[i], x[i + 1]);
    }
    /* a window of T+1 = 20 bytes fits the 20 validation bytes exactly once */
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_VAL, 7, 0, 1, 19, x, y), AMP_OK);
    ck_assert_int_eq(x[0], 'c');
    ck_assert_int_eq(y[18], 'd');
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_VAL, 7, 0, 1, 20, x, y), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "validation"));
    /* pure function of (seed, split, step) */
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_TRAIN, 7, 5, 4, 8, x, y), AMP_OK);
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_TRAIN, 7, 4, 4, 8, x2, y2), AMP_OK);
    ck_assert_int_eq(amp_austen_batch(&d, AMP_SPLIT_TRAIN, 7, 5, 4, 8, x2, y2), AMP_OK);
    ck_assert_mem_eq(x, x2, sizeof x);
    ck_assert_mem_eq(y, y2, sizeof y);
    amp_austen_free(&d);
    ck_assert_int_eq(amp_austen_load(&d, write_tmp("short.txt", "tiny", 4)), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "short.txt"));
    char missing[512];
    snprintf(missing, sizeof missing, "%s/missing.txt", g_tmpdir);
    ck_assert_int_ne(amp_austen_load(&d, missing), AMP_OK);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "missing.txt"));
}
END_TEST

START_TEST(test_austen_real)
{
    const char *src = getenv("AMP_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/datasets/austen.txt", src ? src : ".");
    amp_austen d;
    ck_assert_int_eq(amp_austen_load(&d, path), AMP_OK);
    ck_assert_uint_eq(d.n, 4025029);              /* datasets/README.md */
    ck_assert_uint_eq(d.n_train, 4025029 - 402502);
    const uint8_t *p;
    size_t len;
    amp_austen_range(&d, AMP_SPLIT_VAL, &p, &len);
    ck_assert_uint_eq(len, 402502);
    enum { B = 16, T = 64 };
    static int32_t x[B * T], y[B * T];
    for (int split = 0; split < 2; split++) {
        amp_austen_range(&d, (amp_split)split, &p, &len);
        for (uint64_t s = 0; s < 20; s++) {
            ck_assert_int_eq(amp_austen_batch(&d, (amp_split)split, 1, s, B, T, x, y), AMP_OK);
            for (int j = 0; j < B; j++) {
                /* the window is bytes of this split, with y = x shifted by one */
                uint8_t w[T + 1];
                for (int t = 0; t < T; t++) w[t] = (uint8_t)x[j * T + t];
                w[T] = (uint8_t)y[j * T + T - 1];
                for (int t = 0; t + 1 < T; t++) ck_assert_int_eq(y[j * T + t], x[j * T + t + 1]);
                ck_assert_ptr_nonnull(memmem(p, len, w, T + 1));
            }
        }
    }
    double h = amp_austen_unigram_entropy(&d, AMP_SPLIT_VAL);
    double hx = amp_austen_unigram_xent(&d, AMP_SPLIT_TRAIN, AMP_SPLIT_VAL);
    fprintf(stderr, "austen: validation unigram entropy %.4f nats = %.4f bits; "
            "cross-entropy under training unigram %.4f nats = %.4f bits\n",
            h, h / log(2.0), hx, hx / log(2.0));
    /* English text: between 4 and 4.6 bits per character */
    ck_assert_double_ge(h / log(2.0), 4.0);
    ck_assert_double_le(h / log(2.0), 4.6);
    ck_assert_double_ge(hx, h);                   /* Gibbs */
    amp_austen_free(&d);
}
END_TEST

static void make_tmpdir(void)
{
    snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/check_layers_gpt.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_tmpdir));
}

static void remove_tmpdir(void)
{
    const char *names[] = { "syn.txt", "short.txt" };
    char path[512];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", g_tmpdir, names[i]);
        unlink(path);
    }
    rmdir(g_tmpdir);
}

int main(void)
{
    amp_check_seed("check_layers_gpt", "AMP_TEST_SEED", &g_seed);
    Suite *su = suite_create("layers_gpt");
    TCase *tc = tcase_create("layers");
    tcase_add_test(tc, test_embed);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_gelu);
    tcase_add_test(tc, test_gelu_bounds);
    tcase_add_test(tc, test_residual);
    tcase_add_test(tc, test_attention_forward_reference);
    tcase_add_test(tc, test_attention_gradients);
    tcase_add_test(tc, test_attention_order);
    tcase_add_test(tc, test_rows_forms_equal_attention);
    suite_add_tcase(su, tc);
    TCase *td = tcase_create("data");
    tcase_add_unchecked_fixture(td, make_tmpdir, remove_tmpdir);
    tcase_add_test(td, test_austen_synthetic);
    tcase_add_test(td, test_austen_real);
    tcase_set_timeout(td, 30);
    suite_add_tcase(su, td);
    return amp_check_failures(su) ? 1 : 0;
}
