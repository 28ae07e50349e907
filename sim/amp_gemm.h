/* ampsim — GEMM with operands in emulated formats and an FP32 or narrow accumulator. */
#ifndef AMP_GEMM_H
#define AMP_GEMM_H

#include "amp_format.h"
#include "amp_policy.h"
#include "amp_round.h"

/* ---- GEMM ------------------------------------------------------------------------
 * C[M,N] = A'[M,K] B'[K,N] + (beta ? C : 0), A' = A or A^T (ta), B' likewise.
 * Operands must already hold values of their formats. Row-major.
 *
 * FP32 accumulation, kind AMP_GEMM_REPRODUCIBLE (the default): every element is
 * one chain of fused multiply-adds, k ascending (docs/speed-repro.md):
 *     s = +0; for k = 0..K-1: s = fmaf(a_ik, b_kj, s)     (one rounding each)
 *     c_ij = beta ? fl(c_ij + s) : s
 * for float32 operands and operands of every narrower format alike. fmaf is
 * one correctly rounded IEEE 754 operation, so the AVX-512, AVX2+FMA and
 * generic C paths and any thread count give the same bits on every CPU; FMA
 * hardware decides the speed only (without it the generic path calls the C
 * library's fmaf).
 * Kind AMP_GEMM_BLAS: OpenBLAS sgemm on one thread (its summation order
 * depends on the kernel OpenBLAS picks for the CPU).
 *
 * Narrow accumulator (acc_fp32 == 0, either kind): the running sum is rounded
 * to the accumulator format after each product, k ascending, and added to an
 * FP32 sum every acc_chunk products (sim/gemm.c); sequential by definition. */
typedef struct amp_gemm_cfg {
    int acc_fp32;
    amp_format acc;
    int acc_chunk;
    amp_round_opts ro;
    amp_gemm_kind kind;
} amp_gemm_cfg;
AMP_API amp_gemm_cfg amp_gemm_cfg_of(const amp_policy *p);
AMP_API void amp_gemm(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K,
                      const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* amp_gemm, returning how many of the M x N results in C are inf or NaN:
 * counted tile by tile as the reproducible FP32 kernel finishes each tile
 * (read back from L1), by a pass over C on the other paths. */
AMP_API size_t amp_gemm_count(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K,
                              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* The summation order of oneDNN's bf16 GEMM (AVX512_CORE, the vdpbf16ps
 * pairing) as PyTorch 1.13's CPU bf16 matmuls run it: per output element one
 * float32 sum from +0 over the pairs (k, k+1), k = 0, 2, 4, ..., adding the
 * product of element k+1 before that of element k (an odd K ends with its
 * last element alone); then C = sum, or C + sum with beta 1 (the bias added
 * last, as oneDNN's sum post-op). The products must be exact in float32
 * (operands of at most 12 significant bits: bf16, fp16 values), so each step
 * is one rounding, as the fused multiply-add of the hardware. The same bits at
 * any thread count and on any CPU. */
AMP_API void amp_gemm_pairs(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                            float beta, float *C, int ldc);
/* Sets OpenBLAS to one thread (results never depend on --threads). */
AMP_API void amp_gemm_init(void);
/* "reproducible" or "blas" -> kind; AMP_EINVAL naming the value otherwise. */
AMP_API amp_status amp_gemm_kind_parse(const char *s, amp_gemm_kind *out);
AMP_API const char *amp_gemm_kind_name(amp_gemm_kind k);

/* Kernel paths of the reproducible GEMM (all give the same bits). The
 * active path is the best the machine has, capped by amp_gemm_set_path and
 * by amp_set_simd (AMP_SIMD=generic selects the generic path here too). */
typedef enum { AMP_GEMM_PATH_AUTO = -1, AMP_GEMM_PATH_GENERIC, AMP_GEMM_PATH_AVX2, AMP_GEMM_PATH_AVX512 } amp_gemm_path;
AMP_API void amp_gemm_set_path(amp_gemm_path cap);
AMP_API amp_gemm_path amp_gemm_path_active(void);
AMP_API const char *amp_gemm_path_name(amp_gemm_path p);
/* "generic", "avx2" or "avx512"; AMP_EINVAL naming the value otherwise. */
AMP_API amp_status amp_gemm_path_parse(const char *s, amp_gemm_path *out);

#endif
