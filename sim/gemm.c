/* GEMM with operands already rounded into their formats.
 *
 * FP32 accumulation: OpenBLAS sgemm on one thread. Products of two values with
 * at most 12 significant bits are exact in float32, and sgemm accumulates in
 * float32 (with FMA: each product exact, each sum rounded), which is what
 * autocast on a GPU with FP32 accumulation does up to summation order.
 *
 * Narrow accumulator (DeepSeek-V3 / Wang et al. 2018): the running sum is held
 * in the accumulator format: s = round_acc(s + a*b) after every product (the
 * product is exact in double; the sum s + a*b is formed in double and rounded
 * once into the accumulator: with acc precision p <= 25 and the double sum
 * exact or within 2^-53 relative, this is the correctly rounded narrow
 * addition except in double-rounding corner cases of probability ~2^-28).
 * Every acc_chunk products (0 = never) s is promoted: total = fl32(total + s),
 * s = 0; at the end C = fl32(total + s) (+ C when beta = 1). */
#include "amp_base.h"
#include "amp_gemm.h"
#include "amp_policy.h"
#include "amp_round.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

void amp_gemm_init(void)
{
    openblas_set_num_threads(1);
}

amp_gemm_cfg amp_gemm_cfg_of(const amp_policy *p)
{
    amp_gemm_cfg g;
    memset(&g, 0, sizeof g);
    g.acc_fp32 = p->acc_fp32;
    g.acc = p->acc;
    g.acc_chunk = p->acc_chunk;
    g.ro = amp_round_defaults();
    g.ro.mode = p->mode == AMP_RND_SR ? AMP_RND_NE : p->mode;   /* accumulators round to nearest */
    return g;
}

static void gemm_narrow(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K, const float *A, int lda,
                        const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float total = 0.0f;
            double s = 0.0;
            int cnt = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s = amp_round1(&g->acc, &g->ro, s + a * b, 0, NULL);
                if (g->acc_chunk > 0 && ++cnt == g->acc_chunk) {
                    total = (float)((double)total + s);
                    s = 0.0;
                    cnt = 0;
                }
            }
            total = (float)((double)total + s);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta != 0.0f ? *c + total : total;
        }
}

void amp_gemm(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    AMP_ASSERT(beta == 0.0f || beta == 1.0f);
    if (!g->acc_fp32) {
        gemm_narrow(g, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
