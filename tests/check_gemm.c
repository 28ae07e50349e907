/* The reproducible GEMM: every kernel path (generic C, AVX2, AVX-512) and
 * every thread count against the generic path and against an independent
 * scalar transcription of the order in sim/amp_gemm.h (a chain of C99 fmaf,
 * k ascending), bit for bit, on float32 operands, on fp16- and bf16-valued
 * operands, on values near the ends of the exponent range, and on shapes
 * that are not multiples of the tile, with K cut into blocks or not. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ampsim.h"
#include "skip.h"

static uint64_t seed = 20261;

/* The contract, one element at a time: s = +0, then s = fmaf(a_ik, b_kj, s)
 * for k ascending, in volatile float32 steps (the C library's fmaf: one
 * correctly rounded operation). */
static float ref_elem(int ta, int tb, int i, int j, int K, const float *A, int lda, const float *B, int ldb)
{
    volatile float s = 0.0f;
    for (int k = 0; k < K; k++) {
        volatile float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        volatile float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s = fmaf(a, b, s);
    }
    return s;
}

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

enum { VAL_F32, VAL_F16, VAL_BF16, VAL_EDGE };

/* n values of kind v from stream st */
static void fill(float *x, size_t n, int v, uint64_t st)
{
    const amp_format *f16 = amp_format_get(AMP_FMT_FP16), *bf16 = amp_format_get(AMP_FMT_BF16);
    amp_round_opts ro = amp_round_defaults();
    for (size_t i = 0; i < n; i++) {
        double u = 2.0 * amp_rand_uniform(seed, st, i) - 1.0;
        x[i] = (float)(u * 4.0);
        if (v == VAL_EDGE) {
            /* bf16 values around 2^-62 and 2^63 (the exactness test's edges) and zeros */
            uint64_t r = amp_rand64(seed, st + 100, i) % 4;
            x[i] = r == 0 ? 0.0f : (float)ldexp(u, r == 1 ? -61 : r == 2 ? -63 : 62);
        }
    }
    if (v == VAL_F16) amp_round_f32(f16, &ro, x, x, n, NULL);
    if (v == VAL_BF16 || v == VAL_EDGE) amp_round_f32(bf16, &ro, x, x, n, NULL);
}

/* amp_gemm on path p with T threads equals the transcription bit for bit,
 * and the generic path on one thread. */
static void check_case(int M, int N, int K, int ta, int tb, float beta, int v, amp_gemm_path p, int T)
{
    int lda = ta ? M + 1 : K + 2, ldb = tb ? K + 3 : N + 1, ldc = N + 2;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = malloc(na * 4 + 4), *B = malloc(nb * 4 + 4), *C = malloc(nc * 4 + 4), *C0 = malloc(nc * 4 + 4);
    float *Cg = malloc(nc * 4 + 4);
    ck_assert(A && B && C && C0 && Cg);
    fill(A, na, v, 1);
    fill(B, nb, v, 2);
    fill(C0, nc, VAL_F32, 3);
    memcpy(C, C0, nc * 4);
    memcpy(Cg, C0, nc * 4);
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp32", &pol), AMP_OK);
    amp_gemm_cfg g = amp_gemm_cfg_of(&pol);
    ck_assert_int_eq(g.kind, AMP_GEMM_REPRODUCIBLE);
    amp_gemm_set_path(AMP_GEMM_PATH_GENERIC);
    amp_set_threads(1);
    amp_gemm(&g, ta, tb, M, N, K, A, lda, B, ldb, beta, Cg, ldc);
    amp_gemm_set_path(p);
    amp_set_threads(T);
    amp_gemm(&g, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    amp_gemm_path used = amp_gemm_path_active();
    amp_gemm_set_path(AMP_GEMM_PATH_AUTO);
    amp_set_threads(1);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            float want = C0[(size_t)i * ldc + j];
            if (j < N) {
                float t = ref_elem(ta, tb, i, j, K, A, lda, B, ldb);
                volatile float c = want;
                want = beta != 0.0f ? c + t : t;
            }
            float got = C[(size_t)i * ldc + j], gen = Cg[(size_t)i * ldc + j];
            ck_assert_msg(bits(got) == bits(gen), "path %s T=%d %dx%dx%d ta=%d tb=%d beta=%g values %d: C[%d,%d] = %a, "
                          "generic path %a", amp_gemm_path_name(used), T, M, N, K, ta, tb, beta, v, i, j, got, gen);
            ck_assert_msg(bits(got) == bits(want),
                          "path %s T=%d %dx%dx%d ta=%d tb=%d beta=%g values %d: C[%d,%d] = %a (0x%08x), want %a (0x%08x)",
                          amp_gemm_path_name(used), T, M, N, K, ta, tb, beta, v, i, j, got, bits(got), want, bits(want));
        }
    free(A); free(B); free(C); free(C0); free(Cg);
}

static const amp_gemm_path paths[] = { AMP_GEMM_PATH_GENERIC, AMP_GEMM_PATH_AVX2, AMP_GEMM_PATH_AVX512 };

START_TEST(test_paths_shapes)
{
    /* partial and whole tiles (8 x 32; 8 x 16 when N <= 16), K below, at and
     * above the block of 256 */
    static const int shapes[][3] = { { 1, 1, 1 }, { 1, 1, 0 }, { 3, 5, 2 }, { 4, 16, 4 }, { 5, 17, 7 },
                                     { 7, 33, 67 }, { 32, 10, 32 }, { 13, 40, 129 }, { 9, 21, 515 }, { 5, 16, 1030 },
                                     { 16, 64, 256 }, { 17, 65, 257 }, { 8, 32, 600 } };
    int tested = 0;
    for (size_t pi = 0; pi < 3; pi++) {
        amp_gemm_set_path(paths[pi]);
        int active = amp_gemm_path_active();
        amp_gemm_set_path(AMP_GEMM_PATH_AUTO);
        if (active != (int)paths[pi]) {
            AMP_SKIP("gemm path", "%s: this CPU lacks it", amp_gemm_path_name(paths[pi]));
            continue;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++)
                for (int v = VAL_F32; v <= VAL_EDGE; v++)
                    check_case(shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, (float)(v & 1), v, paths[pi], 1);
        tested++;
    }
    ck_assert_msg(tested >= 1, "no GEMM path ran");
}
END_TEST

/* Large enough to split between threads: 1, 2 and 3 threads give the bits
 * (K unblocked and blocked). */
START_TEST(test_threads)
{
    for (int T = 1; T <= 3; T++)
        for (int v = VAL_F32; v <= VAL_F16; v++) {
            check_case(130, 100, 97, 0, 1, 0.0f, v, AMP_GEMM_PATH_AUTO, T);
            check_case(70, 90, 300, 1, 0, 1.0f, v, AMP_GEMM_PATH_AUTO, T);
        }
}
END_TEST

/* amp_gemm_count: the bits of amp_gemm, and the count of inf and NaN results
 * (overflowing products from a few huge A values, a NaN in B) equal to a
 * count over C written here, on every path, on 1 and 2 threads, with partial
 * tiles and K blocked; the BLAS kind counts in a pass. */
START_TEST(test_count)
{
    static const int shapes[][3] = { { 13, 40, 300 }, { 130, 100, 97 }, { 5, 7, 3 } };
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp32", &pol), AMP_OK);
    for (int kind = 0; kind < 2; kind++)
        for (size_t pi = 0; pi < 3; pi++)
            for (size_t sh = 0; sh < 3; sh++)
                for (int T = 1; T <= 2; T++) {
                    int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2], ta = (int)sh & 1;
                    int lda = ta ? M : K;
                    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
                    float *C = malloc((size_t)M * N * 4), *C1 = malloc((size_t)M * N * 4);
                    fill(A, (size_t)M * K, VAL_F32, 11);
                    fill(B, (size_t)K * N, VAL_F32, 12);
                    A[3] = 3e38f;                           /* a row (or column) of overflows */
                    A[(size_t)M * K - 1] = -3e38f;
                    B[(size_t)K * N / 2] = NAN;
                    amp_gemm_cfg g = amp_gemm_cfg_of(&pol);
                    g.kind = kind ? AMP_GEMM_BLAS : AMP_GEMM_REPRODUCIBLE;
                    amp_gemm_set_path(paths[pi]);
                    amp_set_threads(T);
                    size_t got = amp_gemm_count(&g, ta, 0, M, N, K, A, lda, B, N, 0.0f, C, N);
                    amp_gemm(&g, ta, 0, M, N, K, A, lda, B, N, 0.0f, C1, N);
                    amp_gemm_set_path(AMP_GEMM_PATH_AUTO);
                    amp_set_threads(1);
                    size_t want = 0;
                    for (size_t i = 0; i < (size_t)M * N; i++) want += !isfinite(C[i]);
                    ck_assert_msg(got == want && want > 0, "kind %d path %zu %dx%dx%d T=%d: counted %zu, C holds %zu",
                                  kind, pi, M, N, K, T, got, want);
                    for (size_t i = 0; i < (size_t)M * N; i++) ck_assert(bits(C[i]) == bits(C1[i]));
                    free(A); free(B); free(C); free(C1);
                }
}
END_TEST

/* Every step is one fused multiply-add, in k order, with the values written
 * out: a0 = b0 = 1 + 2^-12, a0 b0 = 1 + 2^-11 + 2^-24 exactly; after
 * a1 b1 = -(1 + 2^-11) the fused step gives 2^-24 (a separate multiply would
 * round a0 b0 to 1 + 2^-11, a tie to even, and give +0); summed the other way
 * round, fma(a1, b1, 1 + 2^-11 + 2^-24 rounded) = 0 exactly. */
START_TEST(test_fused_in_order)
{
    const float u = 1.0f + 0x1p-12f, w = 1.0f + 0x1p-11f;
    amp_policy pol;
    amp_policy_preset("fp32", &pol);
    amp_gemm_cfg g = amp_gemm_cfg_of(&pol);
    for (size_t pi = 0; pi < 3; pi++) {
        amp_gemm_set_path(paths[pi]);
        for (int n = 1; n <= 40; n += 39) {   /* one column; 40: across panels and lanes */
            float A2[2] = { w, u }, B2[80], C[40], A3[2] = { u, w };
            for (int j = 0; j < n; j++) B2[j] = -1.0f, B2[n + j] = u;
            amp_gemm(&g, 0, 0, 1, n, 2, A2, 2, B2, n, 0.0f, C, n);
            for (int j = 0; j < n; j++)
                ck_assert_msg(C[j] == 0x1p-24f, "path %s: got %a, want 0x1p-24", amp_gemm_path_name(paths[pi]), C[j]);
            for (int j = 0; j < n; j++) B2[j] = u, B2[n + j] = -1.0f;
            amp_gemm(&g, 0, 0, 1, n, 2, A3, 2, B2, n, 0.0f, C, n);
            for (int j = 0; j < n; j++)
                ck_assert_msg(C[j] == 0.0f && !signbit(C[j]), "path %s: got %a, want +0", amp_gemm_path_name(paths[pi]),
                              C[j]);
        }
    }
    amp_gemm_set_path(AMP_GEMM_PATH_AUTO);
}
END_TEST

START_TEST(test_kind_names)
{
    amp_gemm_kind k;
    ck_assert_int_eq(amp_gemm_kind_parse("blas", &k), AMP_OK);
    ck_assert_int_eq(k, AMP_GEMM_BLAS);
    ck_assert_int_eq(amp_gemm_kind_parse("reproducible", &k), AMP_OK);
    ck_assert_int_eq(k, AMP_GEMM_REPRODUCIBLE);
    ck_assert_int_eq(amp_gemm_kind_parse("fast", &k), AMP_EINVAL);
    ck_assert_msg(strstr(amp_errmsg(), "fast") != NULL, "message: %s", amp_errmsg());
}
END_TEST

int main(void)
{
    amp_check_seed("check_gemm", "AMP_SEED", &seed);
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_paths_shapes);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_count);
    tcase_add_test(tc, test_fused_in_order);
    tcase_add_test(tc, test_kind_names);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
