/* GEMM with operands already rounded into their formats (sim/amp_gemm.h).
 *
 * Reproducible FP32 accumulation: the order of amp_gemm.h, vectorised over
 * output columns only, so that every SIMD lane is one output element doing the
 * contract's scalar sequence; wider vectors change which elements run side by
 * side, never the operations of one element. A tile of MR x NR outputs keeps
 * its NP x MR partial-sum vectors in registers over the whole of K.
 * B' is packed into panels of NR columns ([panel][K][NR], zero-padded); A' is
 * read in place when untransposed, else packed into rows of K (and a partial
 * last row tile is packed with zero rows); packing only moves values.
 * Where every product is exact in float32 (operands of at most 12 significant
 * bits in a safe exponent range, checked on the operands), the AVX paths use
 * fused multiply-adds: fma(a, b, s) = fl(s + fl(a b)) then, so the bits are
 * the contract's (fp16/bf16/FP8 operands run at FMA speed, float32
 * operands at separate-multiply-and-add speed).
 * Tiles are independent: threads split them, the bits do not depend on it.
 *
 * BLAS: OpenBLAS sgemm on one thread (with FMA: each product exact, each sum
 * rounded), in the order of the kernel OpenBLAS picks for the CPU.
 *
 * Narrow accumulator (DeepSeek-V3 / Wang et al. 2018): the running sum is held
 * in the accumulator format: s = round_acc(s + a*b) after every product (the
 * product is exact in double; the sum s + a*b is formed in double and rounded
 * once into the accumulator: with acc precision p <= 25 and the double sum
 * exact or within 2^-53 relative, this is the correctly rounded narrow
 * addition except in double-rounding corner cases of probability ~2^-28).
 * Every acc_chunk products (0 = never) s is promoted: total = fl32(total + s),
 * s = 0; at the end C = fl32(total + s) (+ C when beta = 1). Only IEEE double
 * operations and amp_round1: the same bits on every CPU, whatever the kind. */
#include "amp_base.h"
#include "amp_gemm.h"
#include "amp_policy.h"
#include "amp_round.h"

#include <cblas.h>
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define NR 16   /* columns per panel */
#define MR 4    /* rows per tile */
#define NP 4    /* partial sums per element (k mod NP) */

void amp_gemm_init(void)
{
    openblas_set_num_threads(1);
}

amp_status amp_gemm_kind_parse(const char *s, amp_gemm_kind *out)
{
    if (s && !strcmp(s, "reproducible")) *out = AMP_GEMM_REPRODUCIBLE;
    else if (s && !strcmp(s, "blas")) *out = AMP_GEMM_BLAS;
    else return amp_fail(AMP_EINVAL, "--gemm %s: expected reproducible or blas", s ? s : "");
    return AMP_OK;
}

const char *amp_gemm_kind_name(amp_gemm_kind k) { return k == AMP_GEMM_BLAS ? "blas" : "reproducible"; }

amp_gemm_cfg amp_gemm_cfg_of(const amp_policy *p)
{
    amp_gemm_cfg g;
    memset(&g, 0, sizeof g);
    g.acc_fp32 = p->acc_fp32;
    g.acc = p->acc;
    g.acc_chunk = p->acc_chunk;
    g.ro = amp_round_defaults();
    g.ro.mode = p->mode == AMP_RND_SR ? AMP_RND_NE : p->mode;   /* accumulators round to nearest */
    g.kind = p->gemm;
    return g;
}

/* ---- kernel paths ---------------------------------------------------------------- */
static amp_gemm_path path_cap = AMP_GEMM_PATH_AUTO;

void amp_gemm_set_path(amp_gemm_path cap) { path_cap = cap; }

amp_gemm_path amp_gemm_path_active(void)
{
    static int machine = -1;
    if (machine < 0) {
        __builtin_cpu_init();
        machine = __builtin_cpu_supports("avx512f") ? AMP_GEMM_PATH_AVX512
                  : __builtin_cpu_supports("avx2") ? AMP_GEMM_PATH_AVX2 : AMP_GEMM_PATH_GENERIC;
    }
    int p = machine;
    if (path_cap != AMP_GEMM_PATH_AUTO && (int)path_cap < p) p = path_cap;
    if (amp_simd_active() == AMP_SIMD_GENERIC) p = AMP_GEMM_PATH_GENERIC;
    return (amp_gemm_path)p;
}

amp_status amp_gemm_path_parse(const char *s, amp_gemm_path *out)
{
    for (int p = AMP_GEMM_PATH_GENERIC; p <= AMP_GEMM_PATH_AVX512; p++)
        if (s && !strcmp(s, amp_gemm_path_name((amp_gemm_path)p))) {
            *out = (amp_gemm_path)p;
            return AMP_OK;
        }
    return amp_fail(AMP_EINVAL, "gemm path '%s': expected generic, avx2 or avx512", s ? s : "");
}

static int fma_ok(void)
{
    static int ok = -1;
    if (ok < 0) ok = __builtin_cpu_supports("fma");
    return ok;
}

const char *amp_gemm_path_name(amp_gemm_path p)
{
    return p == AMP_GEMM_PATH_AVX512 ? "avx512" : p == AMP_GEMM_PATH_AVX2 ? "avx2" : "generic";
}

/* ---- tiles: t (MR,NR) = the contract's t for rows a (MR,K) and panel b (K,NR) ----
 * Row i of the tile goes to t + i ldt: t itself (beta 0) or fl(t + the value)
 * (beta 1, the contract's c + t). K may come in blocks (k0 a multiple of NP,
 * so that k mod NP is the same inside a block): ph & PH_FIRST starts the
 * partial sums at +0, else loads them from st (MR NP NR floats); ph & PH_LAST
 * finishes the tile into t, else stores the partial sums into st. The partial
 * sums go through memory unchanged: the same operations as one pass. */
#define PH_FIRST 1
#define PH_LAST 2
typedef void (*tile_fn)(int K, const float *a, size_t as, const float *b, size_t bs, float *t, size_t ldt, int beta,
                        float *st, int ph);

static void tile_generic(int K, const float *a, size_t as, const float *b, size_t bs, float *t, size_t ldt, int beta,
                         float *st, int ph)
{
    float s[MR][NP][NR];
    if (ph & PH_FIRST) memset(s, 0, sizeof s);
    else memcpy(s, st, sizeof s);
    for (int k = 0; k < K; k++) {
        const float *bk = b + (size_t)k * bs;
        int r = k % NP;
        for (int i = 0; i < MR; i++) {
            float ai = a[(size_t)i * as + k];
            for (int j = 0; j < NR; j++) s[i][r][j] = s[i][r][j] + ai * bk[j];
        }
    }
    if (!(ph & PH_LAST)) {
        memcpy(st, s, sizeof s);
        return;
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) {
            float v = (s[i][0][j] + s[i][1][j]) + (s[i][2][j] + s[i][3][j]);
            t[i * ldt + j] = beta ? t[i * ldt + j] + v : v;
        }
}

/* The SIMD tiles: one SIMD lane per output column, the same per-element
 * operations as tile_generic. MADD(s, x, y) is s + x*y: two roundings
 * (MUL_ADD*) or, for operands whose products are exact in float32 (see
 * short_operands), one fused multiply-add, which then gives the same bits. */
#define MUL_ADD512(s, x, y) _mm512_add_ps(s, _mm512_mul_ps(x, y))
#define FMA512(s, x, y) _mm512_fmadd_ps(x, y, s)
#define MUL_ADD256(s, x, y) _mm256_add_ps(s, _mm256_mul_ps(x, y))
#define FMA256(s, x, y) _mm256_fmadd_ps(x, y, s)
#define STEP512(MADD, i, r, kk) s##i##r = MADD(s##i##r, _mm512_set1_ps(a[(size_t)(i) * as + (kk)]), b##r)
#define ROWS512(MADD, r, kk) \
    STEP512(MADD, 0, r, kk); STEP512(MADD, 1, r, kk); STEP512(MADD, 2, r, kk); STEP512(MADD, 3, r, kk)
#define STEP256(MADD, i, r, kk) s##i##r = MADD(s##i##r, _mm256_set1_ps(a[(size_t)(i) * as + (kk)]), b##r)
#define ROWS256(MADD, r, kk) STEP256(MADD, 0, r, kk); STEP256(MADD, 1, r, kk)
/* partial sums (row i, k mod 4 = r) from / to st, W floats a vector */
#define XFER4(OP, i, W) OP(i, 0, W); OP(i, 1, W); OP(i, 2, W); OP(i, 3, W)
#define LD512(i, r, W) s##i##r = _mm512_loadu_ps(st + (4 * (i) + (r)) * (W))
#define ST512(i, r, W) _mm512_storeu_ps(st + (4 * (i) + (r)) * (W), s##i##r)
#define LD256(i, r, W) s##i##r = _mm256_loadu_ps(st + (4 * (i) + (r)) * (W))
#define ST256(i, r, W) _mm256_storeu_ps(st + (4 * (i) + (r)) * (W), s##i##r)

/* AVX-512: the whole MR x NR tile (16 accumulators: row i, k mod 4 = r). */
#define TILE512(name, target, MADD)                                                                          \
target static void name(int K, const float *a, size_t as, const float *b, size_t bs, float *t, size_t ldt,   \
                        int beta, float *st, int ph)                                                         \
{                                                                                                            \
    __m512 s00 = _mm512_setzero_ps(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00;      \
    __m512 s13 = s00, s20 = s00, s21 = s00, s22 = s00, s23 = s00, s30 = s00, s31 = s00, s32 = s00, s33 = s00; \
    if (!(ph & PH_FIRST)) { XFER4(LD512, 0, 16); XFER4(LD512, 1, 16); XFER4(LD512, 2, 16); XFER4(LD512, 3, 16); } \
    int k = 0;                                                                                               \
    for (; k + NP <= K; k += NP) {                                                                           \
        __m512 b0 = _mm512_loadu_ps(b + (size_t)k * bs), b1 = _mm512_loadu_ps(b + (size_t)(k + 1) * bs);     \
        __m512 b2 = _mm512_loadu_ps(b + (size_t)(k + 2) * bs), b3 = _mm512_loadu_ps(b + (size_t)(k + 3) * bs); \
        ROWS512(MADD, 0, k); ROWS512(MADD, 1, k + 1); ROWS512(MADD, 2, k + 2); ROWS512(MADD, 3, k + 3);      \
    }                                                                                                        \
    __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0;                                                       \
    if (k < K) { b0 = _mm512_loadu_ps(b + (size_t)k * bs); ROWS512(MADD, 0, k); k++; }                       \
    if (k < K) { b1 = _mm512_loadu_ps(b + (size_t)k * bs); ROWS512(MADD, 1, k); k++; }                       \
    if (k < K) { b2 = _mm512_loadu_ps(b + (size_t)k * bs); ROWS512(MADD, 2, k); k++; }                       \
    if (!(ph & PH_LAST)) {                                                                                   \
        XFER4(ST512, 0, 16); XFER4(ST512, 1, 16); XFER4(ST512, 2, 16); XFER4(ST512, 3, 16);                  \
        return;                                                                                              \
    }                                                                                                        \
    __m512 v0 = _mm512_add_ps(_mm512_add_ps(s00, s01), _mm512_add_ps(s02, s03));                             \
    __m512 v1 = _mm512_add_ps(_mm512_add_ps(s10, s11), _mm512_add_ps(s12, s13));                             \
    __m512 v2 = _mm512_add_ps(_mm512_add_ps(s20, s21), _mm512_add_ps(s22, s23));                             \
    __m512 v3 = _mm512_add_ps(_mm512_add_ps(s30, s31), _mm512_add_ps(s32, s33));                             \
    if (beta) {                                                                                              \
        v0 = _mm512_add_ps(_mm512_loadu_ps(t), v0);                                                          \
        v1 = _mm512_add_ps(_mm512_loadu_ps(t + ldt), v1);                                                    \
        v2 = _mm512_add_ps(_mm512_loadu_ps(t + 2 * ldt), v2);                                                \
        v3 = _mm512_add_ps(_mm512_loadu_ps(t + 3 * ldt), v3);                                                \
    }                                                                                                        \
    _mm512_storeu_ps(t, v0);                                                                                 \
    _mm512_storeu_ps(t + ldt, v1);                                                                           \
    _mm512_storeu_ps(t + 2 * ldt, v2);                                                                       \
    _mm512_storeu_ps(t + 3 * ldt, v3);                                                                       \
}
TILE512(tile_avx512, __attribute__((target("avx512f"))), MUL_ADD512)
TILE512(tile_avx512_fma, __attribute__((target("avx512f,fma"))), FMA512)

/* AVX2: the tile in four 2-row x 8-column quarters (8 accumulators each). */
#define QUARTER256(name, tile, target, MADD)                                                                 \
target static void name(int K, const float *a, size_t as, const float *b, size_t bs, float *t, size_t ldt,   \
                        int beta, float *st, int ph)                                                         \
{                                                                                                            \
    __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00;      \
    __m256 s13 = s00;                                                                                        \
    if (!(ph & PH_FIRST)) { XFER4(LD256, 0, 8); XFER4(LD256, 1, 8); }                                        \
    int k = 0;                                                                                               \
    for (; k + NP <= K; k += NP) {                                                                           \
        __m256 b0 = _mm256_loadu_ps(b + (size_t)k * bs), b1 = _mm256_loadu_ps(b + (size_t)(k + 1) * bs);     \
        __m256 b2 = _mm256_loadu_ps(b + (size_t)(k + 2) * bs), b3 = _mm256_loadu_ps(b + (size_t)(k + 3) * bs); \
        ROWS256(MADD, 0, k); ROWS256(MADD, 1, k + 1); ROWS256(MADD, 2, k + 2); ROWS256(MADD, 3, k + 3);      \
    }                                                                                                        \
    __m256 b0 = _mm256_setzero_ps(), b1 = b0, b2 = b0;                                                       \
    if (k < K) { b0 = _mm256_loadu_ps(b + (size_t)k * bs); ROWS256(MADD, 0, k); k++; }                       \
    if (k < K) { b1 = _mm256_loadu_ps(b + (size_t)k * bs); ROWS256(MADD, 1, k); k++; }                       \
    if (k < K) { b2 = _mm256_loadu_ps(b + (size_t)k * bs); ROWS256(MADD, 2, k); k++; }                       \
    if (!(ph & PH_LAST)) {                                                                                   \
        XFER4(ST256, 0, 8); XFER4(ST256, 1, 8);                                                              \
        return;                                                                                              \
    }                                                                                                        \
    __m256 v0 = _mm256_add_ps(_mm256_add_ps(s00, s01), _mm256_add_ps(s02, s03));                             \
    __m256 v1 = _mm256_add_ps(_mm256_add_ps(s10, s11), _mm256_add_ps(s12, s13));                             \
    if (beta) {                                                                                              \
        v0 = _mm256_add_ps(_mm256_loadu_ps(t), v0);                                                          \
        v1 = _mm256_add_ps(_mm256_loadu_ps(t + ldt), v1);                                                    \
    }                                                                                                        \
    _mm256_storeu_ps(t, v0);                                                                                 \
    _mm256_storeu_ps(t + ldt, v1);                                                                           \
}                                                                                                            \
static void tile(int K, const float *a, size_t as, const float *b, size_t bs, float *t, size_t ldt, int beta, \
                 float *st, int ph)                                                                          \
{                                                                                                            \
    for (int i = 0; i < MR; i += 2)                                                                          \
        for (int j = 0; j < NR; j += 8)                                                                      \
            name(K, a + (size_t)i * as, as, b + j, bs, t + i * ldt + j, ldt, beta,                           \
                 st ? st + (i / 2 * 2 + j / 8) * 64 : NULL, ph);                                             \
}
QUARTER256(quarter_avx2, tile_avx2, __attribute__((target("avx2"))), MUL_ADD256)
QUARTER256(quarter_avx2_fma, tile_avx2_fma, __attribute__((target("avx2,fma"))), FMA256)

/* ---- drivers ------------------------------------------------------------------- */
static float aval(int ta, const float *A, int lda, int i, int k)
{
    return ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
}

static float bval(int tb, const float *B, int ldb, int k, int j)
{
    return tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
}

/* The contract element by element without packing (when the buffers cannot be
 * allocated): the same operations, slowly. */
static void gemm_unpacked(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                          float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s[NP] = { 0.0f, 0.0f, 0.0f, 0.0f };
            for (int k = 0; k < K; k++) s[k % NP] = s[k % NP] + aval(ta, A, lda, i, k) * bval(tb, B, ldb, k, j);
            float t = (s[0] + s[1]) + (s[2] + s[3]);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta != 0.0f ? *c + t : t;
        }
}

/* 1 if every value of the rows x cols block x (row stride ld) is 0 or has at
 * most 12 significant bits and a magnitude in [2^-62, 2^63): then every
 * product of two such values has at most 24 bits and lies in [2^-124, 2^126),
 * a normal float32: it is exact. fp16, bf16 (down to 2^-62) and the FP8/FP4
 * formats' values pass; NaN and Inf never do. */
typedef uint32_t __attribute__((may_alias)) u32_alias;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define SCAN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define SCAN_CLONES
#endif

SCAN_CLONES static uint32_t long_values(const u32_alias *u, int n)
{
    uint32_t bad = 0;
    for (int c = 0; c < n; c++) {
        uint32_t m = u[c] & 0x7fffffffu, e = m >> 23;
        bad |= (uint32_t)(m != 0) & ((uint32_t)((u[c] & 0xfffu) != 0) | (uint32_t)(e < 127 - 62) | (uint32_t)(e >= 127 + 63));
    }
    return bad;
}

static int short_operands(const float *x, int rows, int cols, int ld)
{
    uint32_t bad = 0;
    for (int r = 0; r < rows && !bad; r++) bad |= long_values((const u32_alias *)(x + (size_t)r * ld), cols);
    return !bad;
}

/* Operands as the tiles read them: row tile it of A' at a + it a_tile with row
 * stride as (or a_tail, packed, for a partial last tile), panel p of B' at
 * b + p b_panel with row stride bs. */
typedef struct repro_job {
    tile_fn fn;
    int M, N, K, mt, np, ldc;
    int kc;                       /* k per block (K: no blocking) */
    const float *a, *b;           /* A' rows (in place or packed) and B' panels' origin */
    size_t as, bs, a_tile, b_panel;   /* strides: A' row, B' row; tile, panel steps */
    const float *a_tail;          /* packed last partial row tile (NULL: none) */
    float beta, *C;
} repro_job;

/* Tile (it, p), k in [k0, k0 + kl), phase ph (st: its partial sums when K is
 * blocked). A whole tile finishes straight into C, a partial one through t. */
static void run_tile(const repro_job *j, int p, int it, int k0, int kl, int ph, float *st)
{
    int M = j->M, N = j->N, K = j->K;
    int mi = M - it * MR < MR ? M - it * MR : MR, nj = N - p * NR < NR ? N - p * NR : NR;
    const float *a = (mi < MR && j->a_tail ? j->a_tail : j->a + (size_t)it * j->a_tile) + k0;
    const float *b = j->b + (size_t)p * j->b_panel + (size_t)k0 * j->bs;
    size_t as = mi < MR && j->a_tail ? (size_t)K : j->as, bs = j->bs;
    if (mi == MR && nj == NR) {
        j->fn(kl, a, as, b, bs, j->C + (size_t)(it * MR) * j->ldc + (size_t)p * NR, (size_t)j->ldc, j->beta != 0.0f,
              st, ph);
        return;
    }
    float t[MR * NR];
    j->fn(kl, a, as, b, bs, t, NR, 0, st, ph);
    if (!(ph & PH_LAST)) return;
    for (int i = 0; i < mi; i++) {
        float *c = j->C + (size_t)(it * MR + i) * j->ldc + (size_t)p * NR;
        if (j->beta != 0.0f)
            for (int jj = 0; jj < nj; jj++) c[jj] = c[jj] + t[i * NR + jj];
        else
            for (int jj = 0; jj < nj; jj++) c[jj] = t[i * NR + jj];
    }
}

/* Tiles q in [q0, q1): panel-major (a panel of B stays in cache while the row
 * tiles pass over it). When K > kc, groups of up to GT row tiles of one panel
 * go through K in blocks of kc, so that a block of the panel stays in L1 while
 * the group passes over it; each tile's partial sums wait in st between
 * blocks. (Only the fused path blocks K: it waits on memory, while the
 * separate multiply and add keep the other paths busy enough.) */
#define KC 256   /* a multiple of NP */
#define GT 16
static void run_tiles(const repro_job *j, long q0, long q1)
{
    int K = j->K, KB = j->kc;
    float st[GT][MR * NP * NR];
    for (long q = q0; q < q1;) {
        int p = (int)(q / j->mt), it0 = (int)(q % j->mt);
        long ng = q1 - q < GT ? q1 - q : GT;
        if (ng > j->mt - it0) ng = j->mt - it0;
        if (K <= KB)
            for (int g = 0; g < ng; g++) run_tile(j, p, it0 + g, 0, K, PH_FIRST | PH_LAST, NULL);
        else
            for (int k0 = 0; k0 < K; k0 += KB) {
                int kl = K - k0 < KB ? K - k0 : KB;
                int ph = (k0 == 0 ? PH_FIRST : 0) | (k0 + kl == K ? PH_LAST : 0);
                for (int g = 0; g < ng; g++) run_tile(j, p, it0 + g, k0, kl, ph, st[g]);
            }
        q += ng;
    }
}

/* dst (rows,K) = rows r0.. of A' (zero past M); transposed A is read along
 * its rows, 16 output rows at a time. */
static void pack_a(int ta, const float *A, int lda, int M, int K, int r0, int rows, float *dst)
{
    for (int i0 = 0; i0 < rows; i0 += 16) {
        int i1 = i0 + 16 < rows ? i0 + 16 : rows;
        for (int i = i0; i < i1; i++)
            if (r0 + i >= M) memset(dst + (size_t)i * K, 0, (size_t)K * sizeof *dst);
            else if (!ta) memcpy(dst + (size_t)i * K, A + (size_t)(r0 + i) * lda, (size_t)K * sizeof *dst);
        if (!ta) continue;
        int iv = M - r0 < i1 ? M - r0 : i1;
        for (int k0 = 0; k0 < K; k0 += 16) {         /* 16 x 16 blocks: few lines in flight */
            int k1 = k0 + 16 < K ? k0 + 16 : K;
            for (int i = i0; i < iv; i++) {
                const float *src = A + r0 + i;
                float *d = dst + (size_t)i * K;
                for (int k = k0; k < k1; k++) d[k] = src[(size_t)k * lda];
            }
        }
    }
}

/* bp (np,K,NR) = B' in panels of NR columns, zero past N; B is read along its rows. */
static void pack_b(int tb, const float *B, int ldb, int N, int K, int np, float *bp)
{
    for (int p = 0; p < np; p++) {
        int j0 = p * NR, nj = N - j0 < NR ? N - j0 : NR;
        float *dst = bp + (size_t)p * K * NR;
        if (nj < NR) memset(dst, 0, (size_t)K * NR * sizeof *dst);
        if (!tb)
            for (int k = 0; k < K; k++) {
                const float *src = B + (size_t)k * ldb + j0;
                float *d = dst + (size_t)k * NR;
                for (int jj = 0; jj < nj; jj++) d[jj] = src[jj];
            }
        else
            for (int k0 = 0; k0 < K; k0 += 64)      /* blocks of 64 k: the panel rows stay in L1 */
                for (int jj = 0; jj < nj; jj++) {
                    const float *src = B + (size_t)(j0 + jj) * ldb;
                    int k1 = k0 + 64 < K ? k0 + 64 : K;
                    for (int k = k0; k < k1; k++) dst[(size_t)k * NR + jj] = src[k];
                }
    }
}

#define STACK_FLOATS 8192   /* packed operands of small GEMMs live on the stack */

static void gemm_repro(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc)
{
    int mt = (M + MR - 1) / MR, np = (N + NR - 1) / NR;
    int a_part = M % MR != 0;
    /* packed: all of A' when transposed, else only a partial last tile; all of B' */
    size_t na = ta ? (size_t)mt * MR * K : a_part ? (size_t)MR * K : 0;
    size_t nb = (size_t)np * NR * K;
    float stackbuf[STACK_FLOATS], *heap = NULL, *buf = stackbuf;
    if (na + nb > STACK_FLOATS) buf = heap = malloc((na + nb) * sizeof *buf);
    if (!buf) {
        gemm_unpacked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    repro_job job = { NULL, M, N, K, mt, np, ldc, K, A, B, (size_t)lda, (size_t)ldb, (size_t)MR * lda, NR, NULL, beta, C };
    float *ap = buf, *bp = buf + na;
    if (ta) {
        pack_a(ta, A, lda, M, K, 0, mt * MR, ap);
        job.a = ap, job.as = (size_t)K, job.a_tile = (size_t)MR * K;
    } else if (a_part) {
        pack_a(ta, A, lda, M, K, (mt - 1) * MR, MR, ap);
        job.a_tail = ap;
    }
    pack_b(tb, B, ldb, N, K, np, bp);
    job.b = bp, job.bs = NR, job.b_panel = (size_t)K * NR;
    amp_gemm_path path = amp_gemm_path_active();
    int fused = path != AMP_GEMM_PATH_GENERIC && fma_ok() && short_operands(A, ta ? K : M, ta ? M : K, lda) &&
                short_operands(B, tb ? N : K, tb ? K : N, ldb);
    job.kc = fused ? KC : K;
    job.fn = path == AMP_GEMM_PATH_AVX512 ? (fused ? tile_avx512_fma : tile_avx512)
             : path == AMP_GEMM_PATH_AVX2 ? (fused ? tile_avx2_fma : tile_avx2) : tile_generic;
    long tiles = (long)mt * np;
    int nt = amp_get_threads();
    if (nt <= 1 || (double)M * N * K < (double)(1 << 20) || tiles < 2) run_tiles(&job, 0, tiles);
    else {
        #pragma omp parallel num_threads(nt)
        {
            int n = omp_get_num_threads(), t = omp_get_thread_num();
            run_tiles(&job, tiles * t / n, tiles * (t + 1) / n);
        }
    }
    free(heap);
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
                double a = aval(ta, A, lda, i, k), b = bval(tb, B, ldb, k, j);
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
    if (M <= 0 || N <= 0) return;
    if (!g->acc_fp32) {
        gemm_narrow(g, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (g->kind == AMP_GEMM_REPRODUCIBLE) {
        gemm_repro(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
