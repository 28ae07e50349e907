/* Check suite: the torch_cpu kernels of the backward (sim/amp_layers.h) against
 * independent scalar statements of their documented arithmetic.
 *
 * - amp_gemm_pairs: every transposition, odd and even K, widths across the
 *   64-column blocks, beta 0 and 1, at 1 and 3 threads, bit for bit against a
 *   plain loop over the pairs (k, k+1) adding element k+1 first; and a probe
 *   with cancelling terms (2^26, 1, -2^26) that only that order passes.
 * - amp_layernorm_backward_torchcpu: within float32 rounding of the
 *   double-precision backward (amp_layernorm_backward) at widths below, at and
 *   above the 8 lanes; its bits against PyTorch's are checked through the GPT's
 *   gradients (python/tests/test_gpt_grads.py).
 * - amp_attn_softmax_backward_fmt: the row sum rounded into bf16 before use. */
#include "ampsim.h"
#include "amp_layers.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed = 20261202;

/* A bf16 value from the generator: 8 significant bits, magnitude 2^-6 .. 2^2. */
static float bf16_val(uint64_t i)
{
    double u = amp_rand_uniform(g_seed, 0x70, i), v = amp_rand_uniform(g_seed, 0x71, i);
    float x = (float)ldexp(1.0 + floor(u * 128.0) / 128.0, (int)floor(v * 9.0) - 6);
    return amp_rand_uniform(g_seed, 0x72, i) < 0.5 ? -x : x;
}

/* The documented order, one element at a time. */
static float pairs_ref(int ta, int tb, int K, const float *A, int lda, const float *B, int ldb, int i, int j)
{
    float s = 0.0f;
    for (int k = 0; k < K; k += 2) {
        for (int q = 1; q >= 0; q--) {
            int kk = k + q;
            if (kk >= K) continue;
            float a = ta ? A[(size_t)kk * lda + i] : A[(size_t)i * lda + kk];
            float b = tb ? B[(size_t)j * ldb + kk] : B[(size_t)kk * ldb + j];
            s = s + a * b;
        }
    }
    return s;
}

START_TEST(test_gemm_pairs_order)
{
    static const int shapes[][3] = { { 1, 1, 1 }, { 5, 7, 3 }, { 9, 65, 2 }, { 13, 130, 35 }, { 64, 96, 32 },
                                     { 4, 256, 128 }, { 7, 64, 0 } };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        for (int t = 0; t < 4; t++) {
            int ta = t & 1, tb = t >> 1;
            int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
            size_t na = (size_t)(ta ? K : M) * lda + 1, nb = (size_t)(tb ? N : K) * ldb + 1;
            float *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B);
            float *C = malloc((size_t)M * ldc * sizeof *C), *C0 = malloc((size_t)M * ldc * sizeof *C0);
            ck_assert(A && B && C && C0);
            for (size_t i = 0; i < na; i++) A[i] = bf16_val(i);
            for (size_t i = 0; i < nb; i++) B[i] = bf16_val(1000000 + i);
            for (int beta = 0; beta <= 1; beta++)
                for (int th = 1; th <= 3; th += 2) {
                    amp_set_threads(th);
                    for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = C0[i] = bf16_val(2000000 + i);
                    amp_gemm_pairs(ta, tb, M, N, K, A, lda, B, ldb, (float)beta, C, ldc);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) {
                            float s = pairs_ref(ta, tb, K, A, lda, B, ldb, i, j);
                            float want = beta ? C0[(size_t)i * ldc + j] + s : s;
                            ck_assert_msg(memcmp(&want, &C[(size_t)i * ldc + j], sizeof want) == 0,
                                          "M %d N %d K %d ta %d tb %d beta %d threads %d: C[%d,%d] %a, want %a", M, N,
                                          K, ta, tb, beta, th, i, j, (double)C[(size_t)i * ldc + j], (double)want);
                            ck_assert(C[(size_t)i * ldc + N] == C0[(size_t)i * ldc + N]);   /* past N: untouched */
                        }
                }
            amp_set_threads(1);
            free(A); free(B); free(C); free(C0);
        }
    }
}
END_TEST

/* With 2^26 at position p, 1 at position k and -2^26 at position p+1 (p even),
 * the sum is 1 exactly when k is added after the pair (p, p+1): k > p+1 in the
 * pair order; a sequential order also keeps 1 for k > p+1 but loses it in the
 * pair (K-2, K-1) probe below, which tells the two apart. */
START_TEST(test_gemm_pairs_probe)
{
    enum { K = 16 };
    float a[K], b[K], c;
    for (int k = 0; k < K; k++) b[k] = 1.0f;
    for (int k = 0; k < K; k++) {
        memset(a, 0, sizeof a);
        a[0] = 67108864.0f;
        a[K - 1] = -67108864.0f;
        if (k != 0 && k != K - 1) a[k] = 1.0f;
        amp_gemm_pairs(0, 0, 1, 1, K, a, K, b, 1, 0.0f, &c, 1);
        /* the pair (K-2, K-1) adds K-1 (-2^26) first, so 1 at K-2 survives */
        ck_assert_msg(c == (k == K - 2 ? 1.0f : 0.0f), "probe k %d: %g", k, (double)c);
    }
}
END_TEST

START_TEST(test_layernorm_backward_torchcpu)
{
    enum { N = 24 };
    static const size_t widths[] = { 5, 8, 13, 32, 35, 48 };
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        size_t C = widths[wi];
        float x[N * 48], dy[N * 48], w[48], bias[48], out[N * 48], mean[N], rstd[N];
        float dx[N * 48], dw[48], db[48], dx0[N * 48], dw0[48], db0[48];
        for (size_t i = 0; i < N * C; i++) {
            x[i] = (float)(2.0 * amp_rand_uniform(g_seed, 0x80, i) - 0.7);
            dy[i] = (float)(0.01 * (amp_rand_uniform(g_seed, 0x81, i) - 0.5));
        }
        for (size_t c = 0; c < C; c++) {
            w[c] = (float)(0.5 + amp_rand_uniform(g_seed, 0x82, c));
            bias[c] = 0.0f;
        }
        amp_layernorm_forward_torchcpu(out, mean, rstd, x, w, bias, N, C, 1e-5);
        memset(dx0, 0, sizeof dx0);
        memset(dw0, 0, sizeof dw0);
        memset(db0, 0, sizeof db0);
        amp_layernorm_backward(dx0, dw0, db0, dy, x, w, mean, rstd, N, C);
        amp_layernorm_backward_torchcpu(dx, dw, db, dy, x, w, mean, rstd, N, C);
        double top = 0.0;
        for (size_t i = 0; i < N * C; i++) top = fmax(top, fabs(dx0[i]));
        for (size_t i = 0; i < N * C; i++)
            ck_assert_msg(fabs(dx[i] - dx0[i]) <= 1e-5 * top, "C %zu dx[%zu] %g vs %g", C, i, (double)dx[i],
                          (double)dx0[i]);
        for (size_t c = 0; c < C; c++) {
            ck_assert_msg(fabs(dw[c] - dw0[c]) <= 1e-5 * (fabs(dw0[c]) + 1e-3), "C %zu dw[%zu]", C, c);
            ck_assert_msg(fabs(db[c] - db0[c]) <= 1e-5 * (fabs(db0[c]) + 1e-3), "C %zu db[%zu]", C, c);
        }
    }
}
END_TEST

START_TEST(test_softmax_backward_fmt)
{
    /* one head, T = 3: row 2 = (p0, p1, p2); s = bf16(sum p dp) */
    const amp_format *bf = amp_format_get(AMP_FMT_BF16);
    float prob[6] = { 1.0f, 0.5f, 0.5f, 0.25f, 0.25f, 0.5f };
    float dprob[6] = { 0.3f, 0.1f, 0.2f, 0.1015625f, 0.203125f, 0.00390625f };
    float datt[6];
    amp_attn_softmax_backward_fmt(datt, dprob, prob, 1, 3, 1, bf);
    /* row 2: sum = 0.025390625 + 0.05078125 + 0.001953125 = 0.078125 (exact, a bf16 value) */
    ck_assert(datt[3] == (0.1015625f - 0.078125f) * 0.25f);
    ck_assert(datt[5] == (0.00390625f - 0.078125f) * 0.5f);
    /* row 1: sum = 0.05 + 0.1 = 0.15000001 in float, 0.150390625 in bf16 */
    float s = 0.5f * 0.1f + 0.5f * 0.2f;
    amp_round_opts o = amp_round_defaults();
    float sb = amp_round1(bf, &o, (double)s, 0, NULL);
    ck_assert(sb != s);
    ck_assert(datt[1] == (0.1f - sb) * 0.5f);
}
END_TEST

int main(void)
{
    amp_check_seed("check_torch_kernels", "AMP_TEST_SEED", &g_seed);
    Suite *su = suite_create("torch_kernels");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_gemm_pairs_order);
    tcase_add_test(tc, test_gemm_pairs_probe);
    tcase_add_test(tc, test_layernorm_backward_torchcpu);
    tcase_add_test(tc, test_softmax_backward_fmt);
    suite_add_tcase(su, tc);
    return amp_check_failures(su) ? 1 : 0;
}
