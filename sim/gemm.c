/* GEMM with operands already rounded into their formats (sim/amp_gemm.h).
 *
 * Reproducible FP32 accumulation: the order of amp_gemm.h (one chain of
 * fused multiply-adds per output element, k ascending), vectorised over
 * output elements only, so that every SIMD lane is one output element doing
 * the contract's scalar sequence; wider vectors change which elements run
 * side by side, never the operations of one element. A tile of MR x NR
 * outputs keeps its accumulators in registers over a block of K.
 * B' is packed into panels of NR columns ([panel][K][NR], zero columns past
 * N; 16 on the AVX-512 path when N <= 16); A' is read in place when
 * untransposed (a partial last row tile packed with zero rows), else packed
 * into row tiles ([tile][K][MR]); packing only moves values. K is cut into blocks of KC without reordering: between blocks
 * a tile's running sums wait in memory, unchanged (the same operations as one
 * pass), while a group of row tiles passes over one block of a panel in L1.
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
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define MR 8     /* rows per tile */
#define NR 32    /* columns per panel */
#define KC 256   /* k per block */
#define GT 16    /* row tiles that pass over one block of a panel */

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
        int fma = __builtin_cpu_supports("fma");
        machine = fma && __builtin_cpu_supports("avx512f") ? AMP_GEMM_PATH_AVX512
                  : fma && __builtin_cpu_supports("avx2") ? AMP_GEMM_PATH_AVX2 : AMP_GEMM_PATH_GENERIC;
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

const char *amp_gemm_path_name(amp_gemm_path p)
{
    return p == AMP_GEMM_PATH_AVX512 ? "avx512" : p == AMP_GEMM_PATH_AVX2 ? "avx2" : "generic";
}

/* ---- tiles: t (MR,NR) = the contract's sums for a row tile and a panel --------
 * a: A' rows, element (i, k) at a[i as + k] (A read in place, as = lda) or,
 * for as = 0, packed [K][MR]; b: packed panel [K][NR]. Row i of the tile goes to
 * t + i ldt: the sum itself (beta 0) or fl(t + the sum) (beta 1, the
 * contract's c + s). K may come in blocks: ph & PH_FIRST starts the sums at
 * +0, else loads them from st (MR NR floats, [i][j]); ph & PH_LAST finishes
 * the tile into t, else stores the sums into st. With ph & PH_COUNT (and
 * PH_LAST) it returns how many of the values it finished are inf or NaN
 * (AVX-512: from the registers it stores), else 0. */
#define PH_FIRST 1
#define PH_LAST 2
#define PH_COUNT 4
typedef uint32_t (*tile_fn)(int K, const float *a, size_t as, const float *b, float *t, size_t ldt, int beta,
                            float *st, int ph);

/* How many of the m x n values at c (row stride ldc) are inf or NaN. */
static uint32_t tile_nonfinite(const float *c, size_t ldc, int m, int n)
{
    uint32_t bad = 0;
    for (int i = 0; i < m; i++) {
        const float *ci = c + (size_t)i * ldc;
        for (int j = 0; j < n; j++) {
            uint32_t u;
            memcpy(&u, &ci[j], sizeof u);
            bad += (u & 0x7f800000u) == 0x7f800000u;
        }
    }
    return bad;
}

/* The generic path: C, vectorised by the compiler over j where the clone has
 * FMA instructions (fmaf is one correctly rounded operation either way). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define FMA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FMA_CLONES
#endif

FMA_CLONES static uint32_t tile_generic(int K, const float *a, size_t as, const float *b, float *t, size_t ldt,
                                        int beta, float *st, int ph)
{
    float s[MR][NR];
    if (ph & PH_FIRST) memset(s, 0, sizeof s);
    else memcpy(s, st, sizeof s);
    for (int k = 0; k < K; k++) {
        const float *bk = b + (size_t)k * NR;
        for (int i = 0; i < MR; i++) {
            float ai = as ? a[i * as + k] : a[(size_t)k * MR + i];
            for (int j = 0; j < NR; j++) s[i][j] = fmaf(ai, bk[j], s[i][j]);
        }
    }
    if (!(ph & PH_LAST)) {
        memcpy(st, s, sizeof s);
        return 0;
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) t[i * ldt + j] = beta ? t[i * ldt + j] + s[i][j] : s[i][j];
    return ph & PH_COUNT ? tile_nonfinite(t, ldt, MR, NR) : 0;
}

/* AVX-512: the whole 8 x 32 tile, 16 accumulators (row i, half h). */
/* AVX-512: 1 in each lane of cnt where v is inf or NaN (all exponent bits set). */
__attribute__((target("avx512f"))) static inline __m512i count16(__m512i cnt, __m512 v)
{
    const __m512i e = _mm512_set1_epi32(0x7f800000);
    __mmask16 k = _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(v), e), e);
    return _mm512_mask_add_epi32(cnt, k, cnt, _mm512_set1_epi32(1));
}

__attribute__((target("avx512f"))) static uint32_t tile_avx512(int K, const float *a, size_t as, const float *b,
                                                              float *t, size_t ldt, int beta, float *st, int ph)
{
    __m512i cnt = _mm512_setzero_si512();
    __m512 c[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
        for (int h = 0; h < 2; h++)
            c[i][h] = ph & PH_FIRST ? _mm512_setzero_ps() : _mm512_loadu_ps(st + i * NR + 16 * h);
    for (int k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(b + (size_t)k * NR), b1 = _mm512_loadu_ps(b + (size_t)k * NR + 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(as ? a[i * as + k] : a[(size_t)k * MR + i]);
            c[i][0] = _mm512_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(ai, b1, c[i][1]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
        for (int h = 0; h < 2; h++) {
            if (!(ph & PH_LAST)) _mm512_storeu_ps(st + i * NR + 16 * h, c[i][h]);
            else {
                float *ti = t + i * ldt + 16 * h;
                __m512 v = beta ? _mm512_add_ps(_mm512_loadu_ps(ti), c[i][h]) : c[i][h];
                _mm512_storeu_ps(ti, v);
                if (ph & PH_COUNT) cnt = count16(cnt, v);
            }
        }
    return ph & PH_COUNT ? (uint32_t)_mm512_reduce_add_epi32(cnt) : 0;
}

/* AVX-512 on a narrow panel (N <= 16, packed [K][16], st [i][16]): 8 x 16,
 * 8 accumulators, so that a narrow GEMM computes no more padding than 16 - N
 * columns. */
__attribute__((target("avx512f"))) static uint32_t tile_avx512_16(int K, const float *a, size_t as, const float *b,
                                                                 float *t, size_t ldt, int beta, float *st, int ph)
{
    __m512i cnt = _mm512_setzero_si512();
    __m512 c[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) c[i] = ph & PH_FIRST ? _mm512_setzero_ps() : _mm512_loadu_ps(st + i * 16);
    for (int k = 0; k < K; k++) {
        __m512 b0 = _mm512_loadu_ps(b + (size_t)k * 16);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) c[i] = _mm512_fmadd_ps(_mm512_set1_ps(as ? a[i * as + k] : a[(size_t)k * MR + i]), b0, c[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (!(ph & PH_LAST)) _mm512_storeu_ps(st + i * 16, c[i]);
        else {
            float *ti = t + i * ldt;
            __m512 v = beta ? _mm512_add_ps(_mm512_loadu_ps(ti), c[i]) : c[i];
            _mm512_storeu_ps(ti, v);
            if (ph & PH_COUNT) cnt = count16(cnt, v);
        }
    }
    return ph & PH_COUNT ? (uint32_t)_mm512_reduce_add_epi32(cnt) : 0;
}

/* AVX2: the tile in four 4 x 16 quarters, 8 accumulators each. */
__attribute__((target("avx2,fma"))) static void quarter_avx2(int K, const float *a, size_t as, const float *b,
                                                            float *t, size_t ldt, int beta, float *st, int ph)
{
    __m256 c[4][2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++)
            c[i][h] = ph & PH_FIRST ? _mm256_setzero_ps() : _mm256_loadu_ps(st + i * NR + 8 * h);
    for (int k = 0; k < K; k++) {
        __m256 b0 = _mm256_loadu_ps(b + (size_t)k * NR), b1 = _mm256_loadu_ps(b + (size_t)k * NR + 8);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m256 ai = _mm256_set1_ps(as ? a[i * as + k] : a[(size_t)k * MR + i]);
            c[i][0] = _mm256_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(ai, b1, c[i][1]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            if (!(ph & PH_LAST)) _mm256_storeu_ps(st + i * NR + 8 * h, c[i][h]);
            else {
                float *ti = t + i * ldt + 8 * h;
                _mm256_storeu_ps(ti, beta ? _mm256_add_ps(_mm256_loadu_ps(ti), c[i][h]) : c[i][h]);
            }
        }
}

static uint32_t tile_avx2(int K, const float *a, size_t as, const float *b, float *t, size_t ldt, int beta,
                          float *st, int ph)
{
    for (int i = 0; i < MR; i += 4)
        for (int j = 0; j < NR; j += 16)
            quarter_avx2(K, as ? a + i * as : a + i, as, b + j, t + i * ldt + j, ldt, beta, st ? st + i * NR + j : NULL, ph);
    return (ph & PH_LAST) && (ph & PH_COUNT) ? tile_nonfinite(t, ldt, MR, NR) : 0;
}

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
            float s = 0.0f;
            for (int k = 0; k < K; k++) s = fmaf(aval(ta, A, lda, i, k), bval(tb, B, ldb, k, j), s);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta != 0.0f ? *c + s : s;
        }
}

typedef struct repro_job {
    tile_fn fn;
    int nr;                 /* panel width: NR, or 16 (tile_avx512_16) */
    int M, N, K, mt, ldc;
    const float *a;         /* A' in place (as = lda) or packed row tiles (as = 0) */
    size_t as;
    const float *a_tail;    /* the partial last row tile, packed (NULL: none) */
    const float *bp;        /* packed B' panels */
    float beta, *C;
    int count;              /* count the inf and NaN outputs of each finished tile */
} repro_job;


/* Tile (it, p), k in [k0, k0 + kl), phase ph (st: its running sums when K is
 * blocked). A whole tile finishes straight into C, a partial one through t.
 * Returns the count of inf and NaN outputs it finished (j->count), else 0. */
static uint32_t run_tile(const repro_job *j, int p, int it, int k0, int kl, int ph, float *st)
{
    int nr = j->nr;
    int mi = j->M - it * MR < MR ? j->M - it * MR : MR, nj = j->N - p * nr < nr ? j->N - p * nr : nr;
    const float *b = j->bp + ((size_t)p * j->K + k0) * nr, *a;
    size_t as = j->as;
    if (mi < MR && j->a_tail) a = j->a_tail + (size_t)k0 * MR, as = 0;
    else if (as) a = j->a + (size_t)it * MR * as + k0;
    else a = j->a + ((size_t)it * j->K + k0) * MR;
    float *c = j->C + (size_t)it * MR * j->ldc + (size_t)p * nr;
    if (mi == MR && nj == nr)
        return j->fn(kl, a, as, b, c, (size_t)j->ldc, j->beta != 0.0f, st, j->count ? ph | PH_COUNT : ph);
    float t[MR * NR];
    j->fn(kl, a, as, b, t, (size_t)nr, 0, st, ph);
    if (!(ph & PH_LAST)) return 0;
    for (int i = 0; i < mi; i++) {
        float *ci = c + (size_t)i * j->ldc;
        if (j->beta != 0.0f)
            for (int jj = 0; jj < nj; jj++) ci[jj] = ci[jj] + t[i * nr + jj];
        else
            for (int jj = 0; jj < nj; jj++) ci[jj] = t[i * nr + jj];
    }
    return j->count ? tile_nonfinite(c, (size_t)j->ldc, mi, nj) : 0;   /* (the padding is not counted) */
}

/* Tiles q in [q0, q1), q = panel * mt + row tile: panel-major, in groups of up
 * to GT row tiles of one panel; when K > KC the group goes through K in blocks
 * of KC (the block of the panel stays in L1 while the group passes over it),
 * each tile's running sums waiting in st between blocks. */
static uint64_t run_tiles(const repro_job *j, long q0, long q1)
{
    int K = j->K;
    uint64_t bad = 0;
    float st[GT][MR * NR];
    for (long q = q0; q < q1;) {
        int p = (int)(q / j->mt), it0 = (int)(q % j->mt);
        long ng = q1 - q < GT ? q1 - q : GT;
        if (ng > j->mt - it0) ng = j->mt - it0;
        if (K <= KC)
            for (int g = 0; g < ng; g++) bad += run_tile(j, p, it0 + g, 0, K, PH_FIRST | PH_LAST, NULL);
        else
            for (int k0 = 0; k0 < K; k0 += KC) {
                int kl = K - k0 < KC ? K - k0 : KC;
                int ph = (k0 == 0 ? PH_FIRST : 0) | (k0 + kl == K ? PH_LAST : 0);
                for (int g = 0; g < ng; g++) bad += run_tile(j, p, it0 + g, k0, kl, ph, st[g]);
            }
        q += ng;
    }
    return bad;
}

/* ap (mt - it0,K,MR) = A' in row tiles from tile it0 on, zero rows past M.
 * Transposed A (k along its rows) is read in blocks of PK rows across all
 * tiles, so that each block of rows is read from L1, not once per tile. */
#define PK 16
static void pack_a(int ta, const float *A, int lda, int M, int K, int it0, int mt, float *ap)
{
    for (int it = it0; it < mt; it++)
        if (M - it * MR < MR) memset(ap + (size_t)(it - it0) * K * MR, 0, (size_t)K * MR * sizeof *ap);
    if (ta)
        for (int k0 = 0; k0 < K; k0 += PK) {
            int k1 = k0 + PK < K ? k0 + PK : K;
            for (int it = it0; it < mt; it++) {
                float *dst = ap + (size_t)(it - it0) * K * MR;
                int r0 = it * MR, mi = M - r0 < MR ? M - r0 : MR;
                if (mi == MR)   /* a constant size: the copy is inlined, not a call per k */
                    for (int k = k0; k < k1; k++) memcpy(dst + (size_t)k * MR, A + (size_t)k * lda + r0, MR * sizeof *dst);
                else
                    for (int k = k0; k < k1; k++) memcpy(dst + (size_t)k * MR, A + (size_t)k * lda + r0, (size_t)mi * sizeof *dst);
            }
        }
    else
        for (int it = it0; it < mt; it++) {
            float *dst = ap + (size_t)(it - it0) * K * MR;
            int r0 = it * MR, mi = M - r0 < MR ? M - r0 : MR;
            for (int i = 0; i < mi; i++) {
                const float *src = A + (size_t)(r0 + i) * lda;
                for (int k = 0; k < K; k++) dst[(size_t)k * MR + i] = src[k];
            }
        }
}

/* bp (np,K,nr) = B' in panels of nr columns, zero past N; B is read along its
 * rows (untransposed B in blocks of PK rows across all panels, as in pack_a). */
static void pack_b(int tb, const float *B, int ldb, int N, int K, int np, int nr, float *bp)
{
    for (int p = 0; p < np; p++)
        if (N - p * nr < nr) memset(bp + (size_t)p * K * nr, 0, (size_t)K * nr * sizeof *bp);
    if (!tb)
        for (int k0 = 0; k0 < K; k0 += PK) {
            int k1 = k0 + PK < K ? k0 + PK : K;
            for (int p = 0; p < np; p++) {
                int j0 = p * nr, nj = N - j0 < nr ? N - j0 : nr;
                float *dst = bp + (size_t)p * K * nr;
                if (nj == NR)   /* constant sizes: inlined copies */
                    for (int k = k0; k < k1; k++) memcpy(dst + (size_t)k * NR, B + (size_t)k * ldb + j0, NR * sizeof *dst);
                else if (nj == 16)
                    for (int k = k0; k < k1; k++) memcpy(dst + (size_t)k * nr, B + (size_t)k * ldb + j0, 16 * sizeof *dst);
                else
                    for (int k = k0; k < k1; k++) memcpy(dst + (size_t)k * nr, B + (size_t)k * ldb + j0, (size_t)nj * sizeof *dst);
            }
        }
    else
        for (int p = 0; p < np; p++) {
            int j0 = p * nr, nj = N - j0 < nr ? N - j0 : nr;
            float *dst = bp + (size_t)p * K * nr;
            for (int k0 = 0; k0 < K; k0 += 64)      /* blocks of 64 k: the panel rows stay in L1 */
                for (int jj = 0; jj < nj; jj++) {
                    const float *src = B + (size_t)(j0 + jj) * ldb;
                    int k1 = k0 + 64 < K ? k0 + 64 : K;
                    for (int k = k0; k < k1; k++) dst[(size_t)k * nr + jj] = src[k];
                }
        }
}

#define STACK_FLOATS 8192   /* packed operands of small GEMMs live on the stack */

/* Returns the count of inf and NaN values in C when count is set (taken tile
 * by tile as the tiles finish), else 0. */
static size_t gemm_repro(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float beta, float *C, int ldc, int count)
{
    amp_gemm_path path = amp_gemm_path_active();
    int nr = path == AMP_GEMM_PATH_AVX512 && N <= 16 ? 16 : NR;
    int mt = (M + MR - 1) / MR, np = (N + nr - 1) / nr;
    /* packed: all of A' when transposed, else only a partial last row tile; all of B' */
    int part = M % MR != 0;
    size_t na = ta ? (size_t)mt * MR * K : part ? (size_t)MR * K : 0, nb = (size_t)np * nr * K;
    float stackbuf[STACK_FLOATS], *heap = NULL, *buf = stackbuf;
    if (na + nb > STACK_FLOATS) buf = heap = malloc((na + nb) * sizeof *buf);
    if (!buf) {
        gemm_unpacked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return count ? tile_nonfinite(C, (size_t)ldc, M, N) : 0;
    }
    if (ta) pack_a(ta, A, lda, M, K, 0, mt, buf);
    else if (part) pack_a(ta, A, lda, M, K, mt - 1, mt, buf);
    pack_b(tb, B, ldb, N, K, np, nr, buf + na);
    tile_fn fn = nr == 16 ? tile_avx512_16 : path == AMP_GEMM_PATH_AVX512 ? tile_avx512
                 : path == AMP_GEMM_PATH_AVX2 ? tile_avx2 : tile_generic;
    repro_job job = { fn, nr, M, N, K, mt, ldc, ta ? buf : A, ta ? 0 : (size_t)lda, !ta && part ? buf : NULL,
                      buf + na, beta, C, count };
    long tiles = (long)mt * np;
    int nt = amp_get_threads();
    uint64_t bad = 0;
    if (nt <= 1 || (double)M * N * K < (double)(1 << 20) || tiles < 2) bad = run_tiles(&job, 0, tiles);
    else {
        #pragma omp parallel num_threads(nt) reduction(+:bad)
        {
            int n = omp_get_num_threads(), t = omp_get_thread_num();
            bad += run_tiles(&job, tiles * t / n, tiles * (t + 1) / n);
        }
    }
    free(heap);
    return (size_t)bad;
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
        gemm_repro(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, 0);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

size_t amp_gemm_count(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return 0;
    if (g->acc_fp32 && g->kind == AMP_GEMM_REPRODUCIBLE)
        return gemm_repro(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, 1);
    amp_gemm(g, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    return tile_nonfinite(C, (size_t)ldc, M, N);
}

/* ---- amp_gemm_pairs: the order of PyTorch's CPU bf16 GEMMs ---------------- */
#define PAIR_NB 64   /* output columns per block of amp_gemm_pairs */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define PAIR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define PAIR_CLONES
#endif

#define PAIR_MR 4    /* rows per block */

/* Rows i0..i0+mr-1 (mr <= PAIR_MR) of amp_gemm_pairs over the PAIR_NB packed
 * columns bp [K][PAIR_NB] (zero past the nb real ones); a(r, k) = a[r ars + k aks].
 * The loops vectorise over columns with the partial sums in registers: each
 * lane one element, the same operations in the same order on every path. */
PAIR_CLONES static void pairs_block(float *c, size_t ldc, const float *a, size_t ars, size_t aks, const float *bp,
                                    int K, int nb, int mr, float beta)
{
    float acc[PAIR_MR][PAIR_NB];
    float a1[PAIR_MR], a0[PAIR_MR];
    for (int r = 0; r < PAIR_MR; r++)
        for (int j = 0; j < PAIR_NB; j++) acc[r][j] = 0.0f;
    for (int k = 0; k < K; k += 2) {
        const int two = k + 1 < K;
        for (int r = 0; r < PAIR_MR; r++) {
            a1[r] = two && r < mr ? a[(size_t)r * ars + (size_t)(k + 1) * aks] : 0.0f;
            a0[r] = r < mr ? a[(size_t)r * ars + (size_t)k * aks] : 0.0f;
        }
        const float *b0 = bp + (size_t)k * PAIR_NB;
        if (two) {
            const float *b1 = b0 + PAIR_NB;
            for (int r = 0; r < PAIR_MR; r++)
                for (int j = 0; j < PAIR_NB; j++) acc[r][j] = acc[r][j] + a1[r] * b1[j];
        }
        for (int r = 0; r < PAIR_MR; r++)
            for (int j = 0; j < PAIR_NB; j++) acc[r][j] = acc[r][j] + a0[r] * b0[j];
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nb; j++) c[(size_t)r * ldc + j] = beta != 0.0f ? c[(size_t)r * ldc + j] + acc[r][j] : acc[r][j];
}

void amp_gemm_pairs(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    float *bp = malloc((size_t)(K > 0 ? K : 1) * PAIR_NB * sizeof(float));
    AMP_ASSERT(bp != NULL);
    const size_t ars = ta ? 1 : (size_t)lda, aks = ta ? (size_t)lda : 1;
    for (int j0 = 0; j0 < N; j0 += PAIR_NB) {
        int nb = N - j0 < PAIR_NB ? N - j0 : PAIR_NB;
        for (int k = 0; k < K; k++)
            for (int j = 0; j < PAIR_NB; j++)
                bp[(size_t)k * PAIR_NB + j] = j >= nb ? 0.0f
                                            : tb ? B[(size_t)(j0 + j) * ldb + k] : B[(size_t)k * ldb + j0 + j];
        int nblk = (M + PAIR_MR - 1) / PAIR_MR;
        #pragma omp parallel for schedule(static) if ((size_t)M * nb * K >= AMP_PAR_MIN) num_threads(amp_get_threads())
        for (int ib = 0; ib < nblk; ib++) {
            int i0 = ib * PAIR_MR, mr = M - i0 < PAIR_MR ? M - i0 : PAIR_MR;
            pairs_block(C + (size_t)i0 * ldc + j0, (size_t)ldc, A + (size_t)i0 * ars, ars, aks, bp, K, nb, mr, beta);
        }
    }
    free(bp);
}
