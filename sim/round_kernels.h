/* Internal interface of the fast float32 rounding kernels (not installed),
 * shared by sim/round_fast.c (the kernels, their parameters, the driver),
 * sim/round_stats.c (the statistics of a block) and sim/round_avx512.c (the
 * hand-written AVX-512 and GFNI paths). */
#ifndef AMP_ROUND_KERNELS_H
#define AMP_ROUND_KERNELS_H

#include "round_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define AMP_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#define AMP_HIST512 1                     /* AVX-512 paths (histogram, rne scan), chosen at run time */
#include <immintrin.h>
#else
#define AMP_CLONES
#endif

typedef struct kparams {
    uint32_t sh, mask, half;          /* discarded bits, their mask, half an ulp */
    uint32_t minnorm, maxbits;        /* magnitude bits of min normal / max finite */
    uint32_t int_sub;                 /* 1: integer path covers subnormals (emin == -126) */
    float sub_mul, sub_q;             /* 2^(mbits-emin), 2^(emin-mbits) */
    uint32_t ovf_res[2], ovf_cls[2];  /* overflow result bits / class, by sign */
    uint32_t inf_res[2];              /* result bits of +-inf input */
    uint32_t zsign;                   /* sign mask kept on zero results (0 for fnuz) */
    uint32_t ftz, daz;
    float cadd;                       /* rne, fixed quantum: 2^23 * min subnormal */
    int rne_ok;                       /* the specialised rne kernel applies */
    /* sr, set per call (not cached): the generator's key for (seed, stream),
     * the index of x[0], and the comparison of sr_elem's contract */
    uint64_t sr_key, sr_idx0;
    uint32_t sr_s1, sr_s2;            /* shifts of the bit-pattern path (round_fast.c) */
    uint32_t sr_mhi, sr_mlo;          /* masks clearing the low 64 - Kc bits, Kc = sr_bits or 64 */
    int e8;                           /* e8m0: the exponent-only kernels (round_fast.c) */
    const amp_format *fmt;            /* per call: the format and options (e8m0's rare */
    const amp_round_opts *ro;         /* float32-subnormal inputs take amp_round1) */
} kparams;

/* amp_rand64 (sim/base.c) split in two: the key of (seed, stream) once per
 * call, then one draw per index. The same mixing, bit for bit (the SR tests
 * compare this path with the reference path, which calls amp_rand64). */
static inline uint64_t sr_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t sr_key(uint64_t seed, uint64_t stream)
{
    return sr_mix64(seed ^ 0x6a09e667f3bcc909ULL) ^ sr_mix64(stream + 0x3c6ef372fe94f82bULL);
}

static inline uint64_t sr_draw(uint64_t key, uint64_t index)
{
    return sr_mix64(sr_mix64(key + index * 0x9e3779b97f4a7c15ULL) ^ key);
}

/* Branch-free select: c ? x : y for c in {0,1}. Written with masks because
 * gcc turns chains of ?: into multi-way PHIs that it will not if-convert. */
static inline uint32_t sel(uint32_t c, uint32_t x, uint32_t y)
{
    uint32_t m = 0u - c;
    return (x & m) | (y & ~m);
}

#define BLOCK 4096                         /* values per block of the statistics path (L1) */
#define VB 64                              /* bytes per vector of the histogram passes */

/* The common case, specialised: rne without ftz/daz. Round to nearest even
 * on the bit pattern is one add and one mask (a + half - 1 + lsb, carries
 * move into the exponent); the target-subnormal range is rounded by the FPU
 * itself ((f + C) - C with C = 2^23 * min subnormal, exact in the default
 * rne mode that ampsim never changes), and not computed at all when emin is
 * float32's (bf16, tf32, fp32: float32 subnormals share the target's quantum).
 * A +-inf input takes the overflow result (equal for rne, checked in
 * fast_params) and a zero input rounds to zero by itself. */
#define RNE_ARGS uint32_t sh, uint32_t mask, uint32_t half_m1, uint32_t one, uint32_t minnorm,   \
                 uint32_t maxbits, float cadd, uint32_t ovf0, uint32_t ovf1, uint32_t zsign
#define RNE_PASS(p) (p)->sh, (p)->mask, (p)->half - 1u, (p)->sh ? 1u : 0u, (p)->minnorm,       \
                 (p)->maxbits, (p)->cadd, (p)->ovf_res[0], (p)->ovf_res[1], (p)->zsign
#define RNE_NAMES sh, mask, half_m1, one, minnorm, maxbits, cadd, ovf0, ovf1, zsign

static inline __attribute__((always_inline)) uint32_t
rne_elem(uint32_t u, int int_sub, RNE_ARGS)
{
    uint32_t a = u & 0x7fffffffu, s = u & 0x80000000u, neg = s >> 31;
    uint32_t r = (a + half_m1 + (((a >> sh) & one))) & ~mask;
    uint32_t small = (int32_t)a < (int32_t)minnorm;
    if (!int_sub) {
        float fs = amp_u2f(a & (0u - small));
        uint32_t rs = amp_f2u((fs + cadd) - cadd);
        r = sel(small, rs, r);
    }
    uint32_t is_nan = (int32_t)a > 0x7f800000;
    uint32_t ovf = ((int32_t)r > (int32_t)maxbits) | is_nan;
    uint32_t res = sel(r == 0, s & zsign, r | s);
    return sel(ovf, sel(is_nan, u | 0x00400000u, sel(neg, ovf1, ovf0)), res);
}

typedef void (*kern_fn)(const kparams *, const uint32_t *, uint32_t *, size_t);
typedef void (*kern_cls_fn)(const kparams *, const uint32_t *, uint32_t *, uint32_t *, size_t);

/* Class boundaries of rne on magnitude bits a (int32 compares):
 * a <= tf flushes (or is zero), a < tn is subnormal, a <= tmax stays finite;
 * a normal result is inexact iff a < minnorm (rounded up to it) or a & mask != 0
 * (kparams). Beyond tmax the class is kparams.ovf_cls (the same for both signs). */
typedef struct rne_thr {
    int32_t tf, tn, tmax;
} rne_thr;

typedef struct scan {
    uint32_t amax;     /* max of the magnitude bits (a NaN if above 0x7f800000) */
    uint32_t amin_m1;  /* min of (magnitude bits - 1), unsigned: zeros do not count */
    uint32_t c[5];     /* rne: zero, <= tf, < tn, inexact normal, <= tmax (see rne_thr) */
} scan;

typedef struct blockacc {
    uint32_t cls[AMP_CLS_COUNT];       /* all but exact (the rest) */
    uint32_t amax, amin;               /* magnitude bits */
    double sum_sq_err, sum_sq, sum_rel_sq;
    uint64_t n_rel;
    int has_sub;                       /* sub_hist is initialised */
    uint32_t hlo[2], hhi[2];           /* fields of hist copy 0 / copies 1-3 zeroed so far
                                        * (none: hlo > hhi) */
    uint64_t sub_hist[32];             /* float32 subnormal inputs by bit length */
    uint32_t hist[4][256];             /* by float32 exponent field (1..254 counted); only
                                        * fields 0, 255 and those zeroed are initialised */
} blockacc;

#define SUM_LANES 32                       /* float lanes of the error sums (block_sums_rne) */
#define SUM_GROUP 1024                     /* values per float partial sum: 32 per lane */
#define HIST_GF_SPAN 96                    /* binades a block may span for amp_hist_gfni */
#define HIST_WAYS 8                        /* fields counted per pass of the byte compares */

/* sim/round_stats.c: rounds x -> y (n values; y may be x) block by block and
 * adds the statistics to st. thr: the fused rne kernel and scan, else the
 * mode's class kernel kc; paths: the amp_simd level to use. */
void amp_round_stats_f32(const kparams *p, const rne_thr *thr, kern_cls_fn kc, int paths, const float *x,
                         float *y, size_t n, amp_stats *st);

/* sim/round_avx512.c, on machines with AVX-512 (paths >= 1; GFNI: 2): the
 * same results, counts and sums as the generic loops, bit for bit. */
int amp_rne_scan512(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n, rne_thr t,
                    int *spec);
void amp_rne512(const kparams *p, const uint32_t *x, uint32_t *y, size_t n);
void amp_hist512(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t lo, uint32_t hi);
void amp_hist_gfni(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t lo, uint32_t hi);
void amp_sums_rne512(blockacc *acc, const float *x, const float *y, size_t n, float scale, double unscale2,
                     int masked, int ident);

/* sim/round_avx512_dir.c, on machines with AVX-512 F/BW/VL/DQ (amp_dir512_ok):
 * the modes but plain rne (round_elem, e8m0 aside) with the class counters and
 * the scan in one loop, and block_sums; the same bits as the generic code.
 * amp_dir_scan512 (the kernel, the class counters and the scan of a block)
 * returns 0, having counted nothing, for a block with a NaN or inf input;
 * amp_sums_dbl512 (block_sums) returns 0, having added nothing, for a block
 * with a quotient that is not finite: the generic code redoes those. */
int amp_dir512_ok(void);
int amp_dir_scan512(const kparams *p, scan *sc, uint32_t *cls, const uint32_t *x, uint32_t *y, uint8_t *e8,
                    size_t n);
void amp_dir512(const kparams *p, const uint32_t *x, uint32_t *y, size_t n);
int amp_sums_dbl512(blockacc *acc, const uint32_t *x, const uint32_t *y, size_t n);

#endif
