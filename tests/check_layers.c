/* Layers of the training emulator: every backward against central finite
 * differences of an independent double-precision forward, autocast rounding
 * semantics against the compiler's _Float16 conversion, the narrow
 * accumulator against the known swamping result. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ampsim.h"

static uint64_t seed = 12345;

static double urand(uint64_t stream, uint64_t i) { return 2.0 * amp_rand_uniform(seed, stream, i) - 1.0; }

/* relative-or-absolute closeness */
static int close_to(double got, double want, double tol)
{
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* ---- linear: double forward for the finite differences -------------------- */
typedef struct lin_ref { int B, I, O; double *x, *w, *b, *r; } lin_ref;

/* objective sum_{b,o} r[b,o] * (x w^T + b)[b,o] in double */
static double lin_obj(const lin_ref *p)
{
    double L = 0;
    for (int b = 0; b < p->B; b++)
        for (int o = 0; o < p->O; o++) {
            double y = p->b[o];
            for (int i = 0; i < p->I; i++) y += p->x[b * p->I + i] * p->w[o * p->I + i];
            L += p->r[b * p->O + o] * y;
        }
    return L;
}

static double fd(double *v, double (*f)(const void *), const void *ctx)
{
    const double h = 1e-6;
    double save = *v;
    *v = save + h;
    double lp = f(ctx);
    *v = save - h;
    double lm = f(ctx);
    *v = save;
    return (lp - lm) / (2 * h);
}
static double lin_obj_v(const void *p) { return lin_obj(p); }

START_TEST(test_linear_fd)
{
    const int B = 3, I = 5, O = 4;
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp32", &pol), AMP_OK);
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    amp_ctx_init(&cx, &reg, &pol);
    amp_tensor *in, *gin;
    ck_assert_int_eq(amp_tensors_add(&reg, "x", AMP_ROLE_ACT, &pol.act, 2, (size_t[]){ B, I }, &in), AMP_OK);
    ck_assert_int_eq(amp_tensors_add(&reg, "x.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 2, (size_t[]){ B, I }, &gin), AMP_OK);
    in->grad = gin;
    amp_linear l;
    ck_assert_int_eq(amp_linear_init(&cx, &l, "fc", in, O, 1), AMP_OK);
    double x[15], w[20], b[4], r[12];
    lin_ref p = { B, I, O, x, w, b, r };
    for (int k = 0; k < B * I; k++) in->data[k] = (float)urand(1, k), x[k] = in->data[k];
    for (int k = 0; k < O * I; k++) l.w->data[k] = (float)urand(2, k), w[k] = l.w->data[k];
    for (int k = 0; k < O; k++) l.b->data[k] = (float)urand(3, k), b[k] = l.b->data[k];
    for (int k = 0; k < B * O; k++) r[k] = (float)urand(4, k);
    amp_tensors_begin_step(&reg, 0, 0);
    ck_assert_int_eq(amp_linear_forward(&cx, &l), AMP_OK);
    /* forward against double */
    for (int bb = 0; bb < B; bb++)
        for (int o = 0; o < O; o++) {
            double y = b[o];
            for (int i = 0; i < I; i++) y += x[bb * I + i] * w[o * I + i];
            ck_assert_msg(close_to(l.out->data[bb * O + o], y, 1e-6), "forward %d,%d: %g vs %g", bb, o, l.out->data[bb * O + o], y);
        }
    for (int k = 0; k < B * O; k++) l.out->grad->data[k] = (float)r[k];
    ck_assert_int_eq(amp_linear_backward(&cx, &l), AMP_OK);
    for (int k = 0; k < O * I; k++) {
        double want = fd(&w[k], lin_obj_v, &p);
        ck_assert_msg(close_to(l.w->grad->data[k], want, 1e-5), "dW[%d]: %.9g vs fd %.9g", k, l.w->grad->data[k], want);
    }
    for (int k = 0; k < O; k++) {
        double want = fd(&b[k], lin_obj_v, &p);
        ck_assert_msg(close_to(l.b->grad->data[k], want, 1e-5), "db[%d]: %.9g vs fd %.9g", k, l.b->grad->data[k], want);
    }
    for (int k = 0; k < B * I; k++) {
        double want = fd(&x[k], lin_obj_v, &p);
        ck_assert_msg(close_to(gin->data[k], want, 1e-5), "dX[%d]: %.9g vs fd %.9g", k, gin->data[k], want);
    }
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}
END_TEST

/* ---- ReLU and cross-entropy ------------------------------------------------- */
typedef struct act_ref { int n; double *x, *r; } act_ref;
static double relu_obj(const void *pp)
{
    const act_ref *p = pp;
    double L = 0;
    for (int i = 0; i < p->n; i++) L += p->r[i] * (p->x[i] > 0 ? p->x[i] : 0);
    return L;
}

START_TEST(test_relu_fd)
{
    enum { N = 12 };
    amp_policy pol;
    amp_policy_preset("fp32", &pol);
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    amp_ctx_init(&cx, &reg, &pol);
    amp_tensor *in, *gin, *out, *gout;
    amp_tensors_add(&reg, "a", AMP_ROLE_ACT, &pol.act, 1, (size_t[]){ N }, &in);
    amp_tensors_add(&reg, "a.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 1, (size_t[]){ N }, &gin);
    amp_tensors_add(&reg, "relu.out", AMP_ROLE_ACT, &pol.act, 1, (size_t[]){ N }, &out);
    amp_tensors_add(&reg, "relu.out.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 1, (size_t[]){ N }, &gout);
    double x[N], r[N];
    act_ref p = { N, x, r };
    for (int i = 0; i < N; i++) {
        double v = urand(5, i);
        if (fabs(v) < 0.05) v = 0.3;                 /* keep clear of the kink */
        in->data[i] = (float)v, x[i] = in->data[i];
        r[i] = gout->data[i] = (float)urand(6, i);
    }
    amp_tensors_begin_step(&reg, 0, 0);
    ck_assert_int_eq(amp_relu_forward(&cx, out, in), AMP_OK);
    ck_assert_int_eq(amp_relu_backward(&cx, gin, gout, out), AMP_OK);
    for (int i = 0; i < N; i++) {
        ck_assert(out->data[i] == (x[i] > 0 ? (float)x[i] : 0.0f));
        double want = fd(&x[i], relu_obj, &p);
        ck_assert_msg(close_to(gin->data[i], want, 1e-6), "relu d[%d]: %g vs %g", i, gin->data[i], want);
    }
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}
END_TEST

static double gelu_d(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
static double gelu_obj(const void *pp)
{
    const act_ref *p = pp;
    double L = 0;
    for (int i = 0; i < p->n; i++) L += p->r[i] * gelu_d(p->x[i]);
    return L;
}

START_TEST(test_gelu_fd)
{
    enum { N = 16 };
    amp_policy pol;
    amp_policy_preset("fp32", &pol);
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    amp_ctx_init(&cx, &reg, &pol);
    amp_tensor *in, *gin, *out, *gout;
    amp_tensors_add(&reg, "a", AMP_ROLE_ACT, &pol.act, 1, (size_t[]){ N }, &in);
    amp_tensors_add(&reg, "a.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 1, (size_t[]){ N }, &gin);
    amp_tensors_add(&reg, "gelu.out", AMP_ROLE_ACT, &pol.act, 1, (size_t[]){ N }, &out);
    amp_tensors_add(&reg, "gelu.out.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 1, (size_t[]){ N }, &gout);
    double x[N], r[N];
    act_ref p = { N, x, r };
    for (int i = 0; i < N; i++) {
        in->data[i] = (float)(4 * urand(8, i)), x[i] = in->data[i];
        r[i] = gout->data[i] = (float)urand(9, i);
    }
    amp_tensors_begin_step(&reg, 0, 0);
    ck_assert_int_eq(amp_act_gelu_forward(&cx, out, in), AMP_OK);
    ck_assert_int_eq(amp_act_gelu_backward(&cx, gin, gout, in), AMP_OK);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(close_to(out->data[i], gelu_d(x[i]), 1e-6), "gelu(%g) = %g vs %g", x[i], out->data[i], gelu_d(x[i]));
        double want = fd(&x[i], gelu_obj, &p);
        ck_assert_msg(close_to(gin->data[i], want, 1e-5), "gelu d[%d]: %g vs %g", i, gin->data[i], want);
    }
    /* under bf16-amp the output is rounded into the input's format (bf16) */
    amp_policy_preset("bf16-amp", &pol);
    out->fmt = pol.act;
    ck_assert_int_eq(amp_act_gelu_forward(&cx, out, in), AMP_OK);
    for (int i = 0; i < N; i++) ck_assert(amp_encode1(&out->fmt, out->data[i]) >= 0);
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}
END_TEST

typedef struct xent_ref { int B, C; double *z; const int32_t *y; } xent_ref;
static double xent_obj(const void *pp)
{
    const xent_ref *p = pp;
    double L = 0;
    for (int b = 0; b < p->B; b++) {
        double s = 0;
        for (int c = 0; c < p->C; c++) s += exp(p->z[b * p->C + c]);
        L += log(s) - p->z[b * p->C + p->y[b]];
    }
    return L / p->B;
}

START_TEST(test_xent_fd)
{
    enum { B = 4, C = 6 };
    amp_policy pol;
    amp_policy_preset("fp32", &pol);
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    amp_ctx_init(&cx, &reg, &pol);
    amp_tensor *z, *gz;
    amp_tensors_add(&reg, "logits", AMP_ROLE_ACT, &pol.act, 2, (size_t[]){ B, C }, &z);
    amp_tensors_add(&reg, "logits.grad", AMP_ROLE_ACT_GRAD, &pol.grad, 2, (size_t[]){ B, C }, &gz);
    double zd[B * C];
    int32_t y[B] = { 0, 5, 2, 2 };
    xent_ref p = { B, C, zd, y };
    for (int i = 0; i < B * C; i++) z->data[i] = (float)(3 * urand(7, i)), zd[i] = z->data[i];
    float loss, probs[B * C];
    amp_tensors_begin_step(&reg, 0, 0);
    ck_assert_int_eq(amp_xent_forward(&loss, probs, z, y, B, C), AMP_OK);
    ck_assert_msg(close_to(loss, xent_obj(&p), 1e-6), "loss %.9g vs %.9g", loss, xent_obj(&p));
    const float scale = 8.0f;
    ck_assert_int_eq(amp_xent_backward(&cx, gz, probs, y, B, C, scale), AMP_OK);
    for (int i = 0; i < B * C; i++) {
        double want = scale * fd(&zd[i], xent_obj, &p);
        ck_assert_msg(close_to(gz->data[i], want, 1e-5), "dz[%d]: %g vs %g", i, gz->data[i], want);
    }
    int32_t bad[B] = { 0, 6, 0, 0 };
    ck_assert_int_eq(amp_xent_forward(&loss, probs, z, bad, B, C), AMP_EINVAL);
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}
END_TEST

/* ---- the whole MLP: weight gradients vs FD of an independent double MLP ------ */
typedef struct mlp_ref { int L, B, D, H, C; double *w[4], *b[4]; const float *x; const int32_t *y; } mlp_ref;
static double mlp_obj(const void *pp)
{
    const mlp_ref *p = pp;
    double a[16 * 64], z[16 * 64];   /* B * max(D, H, C) <= 1024 */
    int in = p->D;
    for (int i = 0; i < p->B * p->D; i++) a[i] = p->x[i];
    for (int l = 0; l < p->L; l++) {
        int out = l == p->L - 1 ? p->C : p->H;
        for (int bb = 0; bb < p->B; bb++)
            for (int o = 0; o < out; o++) {
                double s = p->b[l][o];
                for (int i = 0; i < in; i++) s += a[bb * in + i] * p->w[l][o * in + i];
                z[bb * out + o] = s;
            }
        for (int i = 0; i < p->B * out; i++) a[i] = (l < p->L - 1 && z[i] < 0) ? 0 : z[i];
        in = out;
    }
    double L = 0;
    for (int bb = 0; bb < p->B; bb++) {
        double s = 0;
        for (int c = 0; c < p->C; c++) s += exp(a[bb * p->C + c]);
        L += log(s) - a[bb * p->C + p->y[bb]];
    }
    return L / p->B;
}

START_TEST(test_mlp_fd)
{
    enum { L = 3, B = 4, D = 64, H = 6, C = 10 };
    amp_policy pol;
    amp_policy_preset("fp32", &pol);
    amp_model m;
    ck_assert_int_eq(amp_mlp_create(&m, &pol, B, D, H, L, C, 7), AMP_OK);
    float x[B * D];
    int32_t y[B] = { 3, 1, 4, 1 };
    for (int i = 0; i < B * D; i++) x[i] = (float)((amp_rand64(9, 0, i) % 17) / 16.0);
    amp_batch batch = { .B = B, .D = D, .x = x, .y = y };
    mlp_ref p = { L, B, D, H, C, { 0 }, { 0 }, x, y };
    amp_tensor *w[L], *bias[L];
    char name[32];
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "fc%d.weight", l + 1);
        w[l] = amp_tensors_find(&m.reg, name);
        snprintf(name, sizeof name, "fc%d.bias", l + 1);
        bias[l] = amp_tensors_find(&m.reg, name);
        ck_assert(w[l] && bias[l]);
        p.w[l] = malloc(w[l]->n * sizeof(double));
        p.b[l] = malloc(bias[l]->n * sizeof(double));
        for (size_t i = 0; i < w[l]->n; i++) p.w[l][i] = w[l]->data[i];
        for (size_t i = 0; i < bias[l]->n; i++) p.b[l][i] = bias[l]->data[i];
    }
    float loss;
    amp_tensors_begin_step(&m.reg, 0, 0);
    ck_assert_int_eq(m.forward(&m, &batch, &loss), AMP_OK);
    ck_assert_msg(close_to(loss, mlp_obj(&p), 1e-6), "loss %.9g vs %.9g", loss, mlp_obj(&p));
    ck_assert_int_eq(m.backward(&m, &batch, 1.0f), AMP_OK);
    for (int l = 0; l < L; l++) {
        for (size_t i = 0; i < w[l]->n; i += 7) {
            double want = fd(&p.w[l][i], mlp_obj, &p);
            ck_assert_msg(fabs(w[l]->grad->data[i] - want) <= 1e-6 + 1e-4 * fabs(want),
                          "fc%d.weight.grad[%zu]: %.9g vs fd %.9g", l + 1, i, w[l]->grad->data[i], want);
        }
        for (size_t i = 0; i < bias[l]->n; i++) {
            double want = fd(&p.b[l][i], mlp_obj, &p);
            ck_assert_msg(fabs(bias[l]->grad->data[i] - want) <= 1e-6 + 1e-4 * fabs(want),
                          "fc%d.bias.grad[%zu]: %.9g vs fd %.9g", l + 1, i, bias[l]->grad->data[i], want);
        }
    }
    for (int l = 0; l < L; l++) free(p.w[l]), free(p.b[l]);
    amp_model_free(&m);
}
END_TEST

/* ---- autocast semantics: fp16 operands, FP32 sum, bias, one rounding -------- */
START_TEST(test_linear_fp16_amp_rounding)
{
    enum { B = 5, I = 8, O = 7 };
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp16-amp", &pol), AMP_OK);
    amp_tensors reg;
    amp_ctx cx;
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    amp_ctx_init(&cx, &reg, &pol);
    amp_tensor *in;
    const amp_format *f32 = amp_format_get(AMP_FMT_FP32);
    amp_tensors_add(&reg, "x", AMP_ROLE_ACT, f32, 2, (size_t[]){ B, I }, &in);
    amp_linear l;
    ck_assert_int_eq(amp_linear_init(&cx, &l, "fc", in, O, 1), AMP_OK);
    ck_assert_ptr_nonnull(l.in_op);                     /* fp32 input -> an fp16 operand copy */
    ck_assert_ptr_ne(l.in_op, in);
    ck_assert_str_eq(l.in_op->name, "fc.input");
    /* inputs are multiples of 1/64 with up to 14 significant bits: the fp16
     * cast rounds them; products and sums of the rounded values are exact in
     * float32, so the result must be exactly (_Float16)(sum + bias). */
    for (int k = 0; k < B * I; k++) in->data[k] = (float)((int)(amp_rand64(3, 1, k) % 16384) - 8192) / 64.0f;
    for (int k = 0; k < O * I; k++) l.w->data[k] = (float)(_Float16)((float)((int)(amp_rand64(3, 2, k) % 64) - 32) / 16.0f);
    for (int k = 0; k < O; k++) l.b->data[k] = (float)(_Float16)((float)((int)(amp_rand64(3, 3, k) % 64) - 32) / 8.0f);
    amp_tensors_begin_step(&reg, 0, AMP_ROLES_LOGGED);
    ck_assert_int_eq(amp_linear_forward(&cx, &l), AMP_OK);
    for (int b = 0; b < B; b++)
        for (int o = 0; o < O; o++) {
            double s = 0;
            for (int i = 0; i < I; i++) s += (double)(float)(_Float16)in->data[b * I + i] * l.w->data[o * I + i];
            float want = (float)(_Float16)(float)(s + l.b->data[o]);
            float got = l.out->data[b * O + o];
            ck_assert_msg(got == want, "out[%d,%d] = %a, want %a", b, o, got, want);
        }
    ck_assert(l.in_op->stats_valid && l.in_op->stats->n == (uint64_t)B * I);
    ck_assert(l.out->stats_valid && l.out->stats->n == (uint64_t)B * O);
    amp_ctx_free(&cx);
    amp_tensors_free(&reg);
}
END_TEST

/* ---- narrow accumulator: 10,000 U(0,1) summed in bf16 stops at 256 ---------- */
START_TEST(test_narrow_accumulator)
{
    enum { K = 10000 };
    float *a = malloc(K * sizeof(float)), *ones = malloc(K * sizeof(float));
    double exact = 0;
    for (int k = 0; k < K; k++) {
        a[k] = (float)amp_rand_uniform(77, 0, k);
        a[k] = amp_u2f(amp_f2u(a[k]) & 0xffff0000u);    /* a bf16 value (truncated) */
        ones[k] = 1.0f;
        exact += a[k];
    }
    amp_gemm_cfg g = { .acc_fp32 = 0, .acc = *amp_format_get(AMP_FMT_BF16), .acc_chunk = 0, .ro = amp_round_defaults() };
    float c = 0;
    amp_gemm(&g, 0, 0, 1, 1, K, a, K, ones, 1, 0.0f, &c, 1);
    ck_assert_msg(c == 256.0f, "bf16 running sum = %g, want 256 (swamping)", c);
    g.acc_chunk = 128;                                  /* promote every 128 products */
    amp_gemm(&g, 0, 0, 1, 1, K, a, K, ones, 1, 0.0f, &c, 1);
    ck_assert_msg(fabs(c - exact) < 0.01 * exact, "promoted sum %g vs exact %g", c, exact);
    g.acc_fp32 = 1;
    amp_gemm(&g, 0, 0, 1, 1, K, a, K, ones, 1, 0.0f, &c, 1);
    ck_assert_msg(fabs(c - exact) < 1e-4 * exact, "fp32 sum %g vs exact %g", c, exact);
    free(a);
    free(ones);
}
END_TEST

int main(void)
{
    amp_check_seed("check_layers", "AMP_SEED", &seed);
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_linear_fd);
    tcase_add_test(tc, test_relu_fd);
    tcase_add_test(tc, test_xent_fd);
    tcase_add_test(tc, test_gelu_fd);
    tcase_add_test(tc, test_mlp_fd);
    tcase_add_test(tc, test_linear_fp16_amp_rounding);
    tcase_add_test(tc, test_narrow_accumulator);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
