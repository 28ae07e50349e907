/* ampsim — GEMM with operands in emulated formats and an FP32 or narrow accumulator. */
#ifndef AMP_GEMM_H
#define AMP_GEMM_H

#include "amp_format.h"
#include "amp_policy.h"
#include "amp_round.h"

/* ---- GEMM ------------------------------------------------------------------------
 * C[M,N] = A'[M,K] B'[K,N] + (beta ? C : 0), A' = A or A^T (ta), B' likewise.
 * Operands must already hold values of their formats (products are exact in
 * double). FP32 accumulation uses OpenBLAS sgemm (1 thread, fixed order);
 * a narrow accumulator rounds the running sum to pol->acc after each product
 * and adds it to an FP32 sum every acc_chunk products. Row-major. */
typedef struct amp_gemm_cfg {
    int acc_fp32;
    amp_format acc;
    int acc_chunk;
    amp_round_opts ro;
} amp_gemm_cfg;
AMP_API amp_gemm_cfg amp_gemm_cfg_of(const amp_policy *p);
AMP_API void amp_gemm(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* Sets OpenBLAS to one thread (results never depend on --threads). */
AMP_API void amp_gemm_init(void);

#endif
