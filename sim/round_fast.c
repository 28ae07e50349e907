/* Fast float32 rounding kernels: branch-free, auto-vectorised, one per
 * deterministic mode, with the classification counters, log2 histogram, amax,
 * amin and error sums fused into the same pass over each block.
 *
 * Covered: every signed format with subnormals whose min normal is a float32
 * normal (emin >= -126) — all built-in formats but e8m0 — and the modes rne,
 * rna, rtz, rup, rdn, rto with saturate/ftz/daz. Everything else (sr, e8m0,
 * exotic custom formats) takes the generic path in round.c. Both paths are
 * compared bit for bit with MPFR by tests/check_round*.c and exhaustively by
 * `make check-exhaustive`.
 *
 * How: on the magnitude bits a of x, with sh = 23 - mbits discarded bits,
 *  - where the target quantum is relative (|x| >= min normal, or everywhere
 *    when emin == -126, since float32's own subnormals then share the target's
 *    fixed quantum), rounding is integer arithmetic on the bit pattern:
 *    trunc = a & ~mask, low = a & mask, and a carry out of the mantissa moves
 *    into the exponent by itself;
 *  - where the target is subnormal (|x| < 2^emin, emin > -126) the quantum is
 *    the fixed 2^(emin-mbits): k = |x| * 2^(mbits-emin) < 2^23 is scaled
 *    exactly, split into integer and fraction exactly, rounded, scaled back.
 * The range is checked after rounding (OCP / ONNX Cast-19). */
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
} kparams;

/* Element kernel: result bits of float bits u; if want_cls, adds 1 to the
 * counter of its class in cls_out[] (all but AMP_CLS_EXACT, which is the rest).
 * `mode` and `want_cls` are compile-time constants in every caller; the
 * parameters are scalars so that gcc if-converts and vectorises the loop. */
#define KP_ARGS uint32_t sh, uint32_t mask, uint32_t half, uint32_t minnorm, uint32_t maxbits,     \
                uint32_t int_sub, float sub_mul, float sub_q, uint32_t ovf0, uint32_t ovf1,        \
                uint32_t ovfc0, uint32_t ovfc1, uint32_t inf0, uint32_t inf1, uint32_t zsign,      \
                uint32_t ftz, uint32_t daz
#define KP_PASS(p) (p)->sh, (p)->mask, (p)->half, (p)->minnorm, (p)->maxbits, (p)->int_sub,       \
                (p)->sub_mul, (p)->sub_q, (p)->ovf_res[0], (p)->ovf_res[1], (p)->ovf_cls[0],       \
                (p)->ovf_cls[1], (p)->inf_res[0], (p)->inf_res[1], (p)->zsign, (p)->ftz, (p)->daz

/* Branch-free select: c ? x : y for c in {0,1}. Written with masks because
 * gcc turns chains of ?: into multi-way PHIs that it will not if-convert. */
static inline uint32_t sel(uint32_t c, uint32_t x, uint32_t y)
{
    uint32_t m = 0u - c;
    return (x & m) | (y & ~m);
}

static inline __attribute__((always_inline)) uint32_t
round_elem(uint32_t u, int mode, int want_cls, uint32_t *cls_out, KP_ARGS)
{
    /* Magnitudes, masks and thresholds are below 2^31: compare them as int32
     * (one signed SIMD compare instead of an unsigned emulation). */
    int32_t a = (int32_t)(u & 0x7fffffffu);
    uint32_t s = u & 0x80000000u, neg = s >> 31;
    int32_t imask = (int32_t)mask, ihalf = (int32_t)half, iminn = (int32_t)minnorm;
    /* relative-quantum path on the bit pattern */
    int32_t low = a & imask, tr = a & ~imask;
    uint32_t lsb = ((uint32_t)a >> sh) & 1u;
    uint32_t up_n, rn;
    switch (mode) {
    case AMP_RND_NE: up_n = (uint32_t)(low > ihalf) | ((uint32_t)(low == ihalf) & lsb); break;
    case AMP_RND_NA: up_n = low >= ihalf; break;
    case AMP_RND_UP: up_n = (uint32_t)(low != 0) & (neg ^ 1u); break;
    case AMP_RND_DN: up_n = (uint32_t)(low != 0) & neg; break;
    default: up_n = 0; break;
    }
    rn = mode == AMP_RND_TO ? ((uint32_t)tr | ((uint32_t)(low != 0) << sh)) : (uint32_t)tr + (up_n << sh);
    /* fixed-quantum (target subnormal) path; it is only used where |x| < 2^emin,
     * elsewhere its input is zeroed so that k < 2^mbits and the int conversion
     * stays defined */
    uint32_t is_small = a < iminn;
    float k = amp_u2f((uint32_t)a & (0u - is_small)) * sub_mul;
    int32_t ti = (int32_t)k;
    float fr = k - (float)ti;
    /* comparisons first, into integers: gcc then if-converts and vectorises */
    int32_t f_gt = fr > 0.5f, f_eq = fr == 0.5f, f_ge = fr >= 0.5f, f_nz = fr != 0.0f;
    int32_t up_s;
    switch (mode) {
    case AMP_RND_NE: up_s = f_gt | (f_eq & ti & 1); break;
    case AMP_RND_NA: up_s = f_ge; break;
    case AMP_RND_UP: up_s = f_nz & (int32_t)(neg ^ 1u); break;
    case AMP_RND_DN: up_s = f_nz & (int32_t)neg; break;
    default: up_s = 0; break;
    }
    if (mode == AMP_RND_TO) ti |= f_nz;
    uint32_t rs = amp_f2u((float)(ti + up_s) * sub_q);

    uint32_t in_sub = is_small & (int_sub ^ 1u);
    int32_t r = (int32_t)sel(in_sub, rs, rn);   /* < 2^31: a carry stops at the inf pattern */
    uint32_t ovf = r > (int32_t)maxbits;
    uint32_t zero_res = s & zsign;
    uint32_t flush = (uint32_t)(r == 0) | (ftz & (uint32_t)(r < iminn)) | (daz & is_small);
    uint32_t is_zero = a == 0, is_inf = a == 0x7f800000, is_nan = a > 0x7f800000;
    uint32_t res = sel(flush | is_zero, zero_res, (uint32_t)r | s);
    res = sel(ovf, sel(neg, ovf1, ovf0), res);
    res = sel(is_inf, sel(neg, inf1, inf0), res);
    res = sel(is_nan, u | 0x00400000u, res);
    if (want_cls) {
        /* exclusive class flags, first that applies; "exact" is what is left */
        uint32_t sp = is_nan | is_inf | is_zero;
        uint32_t ov = ovf & (sp ^ 1u);
        uint32_t ov_is_ovf = sel(neg, ovfc1, ovfc0) == AMP_CLS_OVERFLOW;
        uint32_t fl = flush & ((sp | ovf) ^ 1u);
        uint32_t sb = (uint32_t)(r < iminn) & ((sp | ovf | flush) ^ 1u);
        uint32_t inexact = sel(in_sub, (uint32_t)f_nz, low != 0);
        cls_out[AMP_CLS_NAN_IN] += is_nan;
        cls_out[AMP_CLS_INF_IN] += is_inf;
        cls_out[AMP_CLS_ZERO_IN] += is_zero;
        cls_out[AMP_CLS_OVERFLOW] += ov & ov_is_ovf;
        cls_out[AMP_CLS_SATURATED] += ov & (ov_is_ovf ^ 1u);
        cls_out[AMP_CLS_FLUSHED] += fl;
        cls_out[AMP_CLS_SUBNORMAL] += sb;
        cls_out[AMP_CLS_ROUNDED] += inexact & ((sp | ovf | flush | sb) ^ 1u);
    }
    return res;
}

#define BLOCK 4096

/* One kernel per mode, with and without class output. */
#define DEF_KERNEL(NAME, MODE)                                                              \
    AMP_CLONES static void NAME##_body(const uint32_t *restrict x, uint32_t *restrict y,   \
                                       size_t n, KP_ARGS)                                  \
    {                                                                                       \
        uint32_t c_;                                                                        \
        for (size_t i = 0; i < n; i++)                                                      \
            y[i] = round_elem(x[i], MODE, 0, &c_, sh, mask, half, minnorm, maxbits, int_sub, \
                              sub_mul, sub_q, ovf0, ovf1, ovfc0, ovfc1, inf0, inf1, zsign, ftz, daz); \
    }                                                                                       \
    AMP_CLONES static void NAME##_cls_body(const uint32_t *restrict x, uint32_t *restrict y, \
                                           uint32_t *restrict cnt, size_t n, KP_ARGS)      \
    {                                                                                       \
        uint32_t c[AMP_CLS_COUNT] = { 0 };                                                  \
        for (size_t i = 0; i < n; i++)                                                      \
            y[i] = round_elem(x[i], MODE, 1, c, sh, mask, half, minnorm, maxbits, int_sub,  \
                              sub_mul, sub_q, ovf0, ovf1, ovfc0, ovfc1, inf0, inf1, zsign, ftz, daz); \
        for (int k_ = 0; k_ < AMP_CLS_COUNT; k_++) cnt[k_] += c[k_];                       \
    }                                                                                       \
    static void NAME(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)            \
    {                                                                                       \
        NAME##_body(x, y, n, KP_PASS(p));                                                   \
    }                                                                                       \
    static void NAME##_cls(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n) \
    {                                                                                       \
        NAME##_cls_body(x, y, cnt, n, KP_PASS(p));                                          \
    }
DEF_KERNEL(k_ne, AMP_RND_NE)
DEF_KERNEL(k_na, AMP_RND_NA)
DEF_KERNEL(k_tz, AMP_RND_TZ)
DEF_KERNEL(k_up, AMP_RND_UP)
DEF_KERNEL(k_dn, AMP_RND_DN)
DEF_KERNEL(k_to, AMP_RND_TO)

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

#define DEF_RNE(NAME, INT_SUB)                                                                  \
    AMP_CLONES static void NAME##_body(const uint32_t *restrict x, uint32_t *restrict y,       \
                                       size_t n, RNE_ARGS)                                     \
    {                                                                                           \
        for (size_t i = 0; i < n; i++) y[i] = rne_elem(x[i], INT_SUB, RNE_NAMES);              \
    }                                                                                           \
    static void NAME(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)                \
    {                                                                                           \
        NAME##_body(x, y, n, RNE_PASS(p));                                                      \
    }
DEF_RNE(k_rne_sub, 0)
DEF_RNE(k_rne_int, 1)

typedef void (*kern_fn)(const kparams *, const uint32_t *, uint32_t *, size_t);
typedef void (*kern_cls_fn)(const kparams *, const uint32_t *, uint32_t *, uint32_t *, size_t);
static const kern_fn kernels[] = {
    [AMP_RND_NE] = k_ne, [AMP_RND_NA] = k_na, [AMP_RND_TZ] = k_tz,
    [AMP_RND_UP] = k_up, [AMP_RND_DN] = k_dn, [AMP_RND_TO] = k_to,
};
static const kern_cls_fn kernels_cls[] = {
    [AMP_RND_NE] = k_ne_cls, [AMP_RND_NA] = k_na_cls, [AMP_RND_TZ] = k_tz_cls,
    [AMP_RND_UP] = k_up_cls, [AMP_RND_DN] = k_dn_cls, [AMP_RND_TO] = k_to_cls,
};

/* Statistics of one block (BLOCK values, still in L1), block_round_stats:
 *  1. the scan: the float32 exponent field of each x as a byte, amax and amin.
 *     Under rne it runs in the kernel's own loop (k_rne_scan_*, or
 *     k_rne_scan512 with AVX-512) and also counts the classes by thresholds on
 *     |x|: rounding is monotone and sign-symmetric, so each class is a range
 *     of |x| (rne_thresholds). Other modes count classes in their kernel
 *     (round_elem) and scan after it (block_scan). Blocks with NaN, inf or
 *     float32 subnormal inputs take a scalar pass for what the reductions
 *     cannot tell (block_nonfinite, block_rare).
 *  2. the histogram of the exponent fields: byte compares against HIST_WAYS
 *     occupied fields at a time with byte counters (block_hist, block_hist512),
 *     or a scalar loop over 4 copies when a block spans more than HIST_VEC_SPAN
 *     binades. Only the fields that occur are ever cleared (hist_open).
 *  3. the error sums over finite nonzero x with finite y: under rne in float32
 *     with a power-of-two block scale (block_sums_rne, below); otherwise in
 *     double in 8 fixed lanes (block_sums): y - x is exact in double, the
 *     relative error (y - x) / x is divided in float32 (relative error 2^-23
 *     at most per term) and squared in double; a block where that quotient
 *     overflows float32 (a directed mode rounding a tiny x up to a large
 *     quantum) is redone with the quotient in double. Every sum is added in a
 *     fixed order, so the bytes do not depend on the thread count. */
#define HIST_VEC_SPAN 48
#define HIST_WAYS 8                        /* fields counted per pass over the bytes */
#define VB 64                              /* bytes per vector of the histogram pass */
typedef uint8_t vu8 __attribute__((vector_size(VB)));
typedef uint16_t vu16 __attribute__((vector_size(VB)));
typedef uint32_t vu32 __attribute__((vector_size(VB)));
typedef uint64_t vu64 __attribute__((vector_size(VB)));
_Static_assert(BLOCK / VB <= 255, "byte counters of block_hist cannot overflow");

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

/* Small calls pay for what they touch: no clearing of sub_hist or hist here. */
static void acc_init(blockacc *acc)
{
    for (int c = 0; c < AMP_CLS_COUNT; c++) acc->cls[c] = 0;
    acc->amax = 0, acc->amin = 0x7f800000u;
    acc->sum_sq_err = acc->sum_sq = acc->sum_rel_sq = 0;
    acc->n_rel = 0;
    acc->has_sub = 0;
    acc->hlo[0] = acc->hlo[1] = 255, acc->hhi[0] = acc->hhi[1] = 0;
    for (int c = 0; c < 4; c++) acc->hist[c][0] = acc->hist[c][255] = 0;
}

static void zero_fields(blockacc *acc, int copies, uint32_t lo, uint32_t hi)
{
    for (int c = copies ? 1 : 0; c < (copies ? 4 : 1); c++)
        for (uint32_t f = lo; f <= hi; f++) acc->hist[c][f] = 0;
}

/* Makes fields [lo, hi] of hist copy 0 (copies = 0) or of copies 1-3
 * (copies = 1) counted, zeroing those not yet zeroed: the clearing costs
 * what the data touch, not 4 x 256 counters per call. */
static void hist_open(blockacc *acc, int copies, uint32_t lo, uint32_t hi)
{
    uint32_t *hl = &acc->hlo[copies], *hh = &acc->hhi[copies];
    if (*hl > *hh) {
        zero_fields(acc, copies, lo, hi);
        *hl = lo, *hh = hi;
        return;
    }
    if (lo < *hl) {
        zero_fields(acc, copies, lo, *hl - 1);
        *hl = lo;
    }
    if (hi > *hh) {
        zero_fields(acc, copies, *hh + 1, hi);
        *hh = hi;
    }
}

/* Class boundaries of rne on magnitude bits a (int32 compares):
 * a <= tf flushes (or is zero), a < tn is subnormal, a <= tmax stays finite;
 * a normal result is inexact iff a < minnorm (rounded up to it) or a & mask != 0. */
typedef struct rne_thr {
    int32_t tf, tn, tmax, mask, minnorm;
    amp_class ovf_cls;                 /* overflow or saturated (the same for both signs) */
} rne_thr;

static rne_thr rne_thresholds(const kparams *p, const amp_format *f)
{
    rne_thr t;
    uint32_t half = p->sh ? 1u << (p->sh - 1) : 0;
    /* min_subnormal / 2 ties to 0; minnorm - min_subnormal / 2 ties up to minnorm
     * (even): half a quantum is `half` float32 ulps below minnorm when float32's
     * subnormals share the quantum (int_sub), else 2 * half (the binade below
     * minnorm has ulps half as wide); max + ulp/2 ties up (overflow) iff max's
     * last bit is odd. With
     * sh == 0 (float32 itself) nothing flushes, rounds up to normal or overflows. */
    double hs = f->min_subnormal / 2;
    t.tf = p->sh && hs >= 0x1p-149 ? (int32_t)amp_f2u((float)hs) : 0;
    t.tn = (int32_t)(p->minnorm - (p->int_sub ? half : 2 * half));
    t.tmax = (int32_t)(p->maxbits + half - (p->sh ? (p->maxbits >> p->sh) & 1u : 0));
    t.mask = (int32_t)p->mask;
    t.minnorm = (int32_t)p->minnorm;
    t.ovf_cls = (amp_class)p->ovf_cls[0];
    return t;
}

typedef struct scan {
    uint32_t amax;     /* max of the magnitude bits (a NaN if above 0x7f800000) */
    uint32_t amin_m1;  /* min of (magnitude bits - 1), unsigned: zeros do not count */
    uint32_t c[5];     /* rne: zero, <= tf, < tn, inexact normal, <= tmax (see rne_thr) */
} scan;

/* The scan of one block; with `fuse`, the rne kernel (RNE_ARGS) in the same
 * loop, writing y, and the class counts by thresholds t. */
static inline __attribute__((always_inline)) void
scan_body(scan *sc, const uint32_t *restrict x, uint32_t *restrict y, uint8_t *restrict e8, size_t n,
          int fuse, int int_sub, rne_thr t, RNE_ARGS)
{
    uint32_t amax = 0, amin = 0xffffffffu;
    uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = x[i], a = u & 0x7fffffffu, am1 = a - 1u;
        int32_t ia = (int32_t)a;
        e8[i] = (uint8_t)(a >> 23);
        amax = amax > a ? amax : a;
        amin = amin < am1 ? amin : am1;
        if (fuse) {
            y[i] = rne_elem(u, int_sub, RNE_NAMES);
            c0 += ia == 0;
            c1 += ia <= t.tf;
            c2 += ia < t.tn;
            c3 += (ia >= t.tn) & (ia <= t.tmax) & (((ia & t.mask) != 0) | (ia < t.minnorm));
            c4 += ia <= t.tmax;
        }
    }
    sc->amax = amax;
    sc->amin_m1 = amin;
    sc->c[0] = c0, sc->c[1] = c1, sc->c[2] = c2, sc->c[3] = c3;
    sc->c[4] = c4;
}

AMP_CLONES static void block_scan(scan *sc, const uint32_t *restrict x, uint8_t *restrict e8, size_t n)
{
    rne_thr t = { 0, 0, 0, 0, 0, AMP_CLS_OVERFLOW };   /* unused: no classes here */
    scan_body(sc, x, NULL, e8, n, 0, 0, t, 0, 0, 0, 0, 0, 0, 0.0f, 0, 0, 0);
}

#define DEF_RNE_SCAN(NAME, INT_SUB)                                                            \
    AMP_CLONES static void NAME##_body(scan *sc, const uint32_t *restrict x, uint32_t *restrict y, \
                                       uint8_t *restrict e8, size_t n, rne_thr t, RNE_ARGS)   \
    {                                                                                          \
        scan_body(sc, x, y, e8, n, 1, INT_SUB, t, RNE_NAMES);                                  \
    }                                                                                          \
    static void NAME(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8,  \
                     size_t n, rne_thr t)                                                      \
    {                                                                                          \
        NAME##_body(sc, x, y, e8, n, t, RNE_PASS(p));                                          \
    }
DEF_RNE_SCAN(k_rne_scan_sub, 0)
DEF_RNE_SCAN(k_rne_scan_int, 1)

#ifdef AMP_HIST512
/* The fused rne kernel and scan written with AVX-512 intrinsics: the same
 * results and counts as rne_elem and scan_body in about a third fewer
 * instructions than gcc makes of the generic loop: compares into masks,
 * masked selects, ternary logic for the sign and the overflow result, and the
 * class counters as masked vector adds. The class "inexact normal" is counted
 * as #{a <= tmax, a & mask != 0 or a < minnorm} - #{a < tn} (every a < tn is
 * below minnorm). NaN inputs are not handled: a block with one (amax above
 * the inf pattern) is redone by the generic scan (block_round_stats).
 * tests/check_round*.c and make check-exhaustive run this path on machines
 * that have AVX-512. */
typedef struct scan512 {
    __m512i amax, amin, c0, c1, c2, c3, c4;
} scan512;

/* the parameters of rne_scan512_step as vectors, loaded once (locals: no
 * reloads after every store) */
typedef struct rne512 {
    __m128i sh;
    __m512i lsb1, half_m1, mask, minnorm, maxbits, ovf0, ovfx, tf, tn, tmax;
    __m512 cadd;
    int has_lsb;
} rne512;

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl")))
/* rne_elem of 16 values u (magnitudes a) but NaN; *small: a < minnorm;
 * negz: zeros keep their sign; ovf_on: the overflow result */
static inline __attribute__((always_inline)) T512 __m512i
rne512_round(const rne512 k, __m512i u, __m512i a, int int_sub, int negz, int ovf_on, __mmask16 *small_out)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    __m512i r = _mm512_add_epi32(a, k.half_m1);
    if (k.has_lsb) r = _mm512_add_epi32(r, _mm512_and_si512(_mm512_srl_epi32(a, k.sh), k.lsb1));
    r = _mm512_andnot_si512(k.mask, r);
    __mmask16 small = _mm512_cmplt_epi32_mask(a, k.minnorm);
    if (!int_sub) {                               /* (a + cadd) - cadd where small */
        __m512 ts = _mm512_maskz_add_ps(small, _mm512_castsi512_ps(a), k.cadd);
        r = _mm512_castps_si512(_mm512_mask_sub_ps(_mm512_castsi512_ps(r), small, ts, k.cadd));
    }
    __m512i res = _mm512_ternarylogic_epi32(r, u, absm, 0xf4);          /* r | (u & ~absm) */
    if (!negz) res = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(r, r), res);
    if (ovf_on) {   /* overflow: ovf0 ^ ((x < 0) & (ovf0 ^ ovf1)) */
        __mmask16 ovf = _mm512_cmpgt_epi32_mask(r, k.maxbits);
        __m512i ov = _mm512_ternarylogic_epi32(_mm512_srai_epi32(u, 31), k.ovfx, k.ovf0, 0x6a);   /* (A & B) ^ C */
        res = _mm512_mask_mov_epi32(res, ovf, ov);
    }
    *small_out = small;
    return res;
}

/* 16 values (those in `live`) of rne_scan512_body */
static inline __attribute__((always_inline)) T512 void
rne_scan512_step(const rne512 k, scan512 *a5, const uint32_t *x, uint32_t *y, uint8_t *e8, int int_sub,
                 int negz, int ovf_on, __mmask16 live)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), zero = _mm512_setzero_si512();
    const __m512i m1 = _mm512_set1_epi32(-1);
    __m512i u = live == 0xffff ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(live, x);
    __m512i a = _mm512_and_si512(u, absm);
    __mmask16 small;
    __m512i res = rne512_round(k, u, a, int_sub, negz, ovf_on, &small);
    if (live == 0xffff) _mm512_storeu_si512(y, res);
    else _mm512_mask_storeu_epi32(y, live, res);
    /* scan_body */
    _mm512_mask_cvtepi32_storeu_epi8(e8, live, _mm512_srli_epi32(a, 23));
    a5->amax = _mm512_max_epu32(a5->amax, a);
    a5->amin = _mm512_mask_min_epu32(a5->amin, live, a5->amin, _mm512_add_epi32(a, m1));
    __mmask16 le_max = ovf_on ? _mm512_cmple_epi32_mask(a, k.tmax) & live : live;
    __mmask16 lt_tn = _mm512_cmplt_epi32_mask(a, k.tn) & live;
    __mmask16 inexact = _mm512_mask_test_epi32_mask(le_max, a, k.mask) | (small & live);
    a5->c0 = _mm512_mask_sub_epi32(a5->c0, _mm512_cmpeq_epi32_mask(a, zero) & live, a5->c0, m1);
    a5->c1 = _mm512_mask_sub_epi32(a5->c1, _mm512_cmple_epi32_mask(a, k.tf) & live, a5->c1, m1);
    a5->c2 = _mm512_mask_sub_epi32(a5->c2, lt_tn, a5->c2, m1);
    a5->c3 = _mm512_mask_sub_epi32(a5->c3, inexact, a5->c3, m1);
    if (ovf_on) a5->c4 = _mm512_mask_sub_epi32(a5->c4, le_max, a5->c4, m1);
}

static inline __attribute__((always_inline)) T512 rne512 rne512_params(const kparams *p, rne_thr t)
{
    return (rne512){
        .sh = _mm_cvtsi32_si128((int)p->sh), .lsb1 = _mm512_set1_epi32(1),
        .half_m1 = _mm512_set1_epi32((int)(p->half - 1u)), .mask = _mm512_set1_epi32((int)p->mask),
        .minnorm = _mm512_set1_epi32((int)p->minnorm), .maxbits = _mm512_set1_epi32((int)p->maxbits),
        .ovf0 = _mm512_set1_epi32((int)p->ovf_res[0]), .ovfx = _mm512_set1_epi32((int)(p->ovf_res[0] ^ p->ovf_res[1])),
        .tf = _mm512_set1_epi32(t.tf), .tn = _mm512_set1_epi32(t.tn), .tmax = _mm512_set1_epi32(t.tmax),
        .cadd = _mm512_set1_ps(p->cadd), .has_lsb = p->sh != 0,
    };
}

static inline __attribute__((always_inline)) T512 void
rne_scan512_body(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n, rne_thr t,
                 int int_sub, int negz, int ovf_on)
{
    const rne512 k = rne512_params(p, t);
    const __m512i zero = _mm512_setzero_si512();
    scan512 a5 = { zero, _mm512_set1_epi32(-1), zero, zero, zero, zero, zero };
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        rne_scan512_step(k, &a5, x + i, y + i, e8 + i, int_sub, negz, ovf_on, (__mmask16)0xffff);
    if (i < n) rne_scan512_step(k, &a5, x + i, y + i, e8 + i, int_sub, negz, ovf_on, (__mmask16)((1u << (n - i)) - 1));
    sc->amax = _mm512_reduce_max_epu32(a5.amax);
    sc->amin_m1 = _mm512_reduce_min_epu32(a5.amin);
    sc->c[0] = (uint32_t)_mm512_reduce_add_epi32(a5.c0);
    sc->c[1] = (uint32_t)_mm512_reduce_add_epi32(a5.c1);
    sc->c[2] = (uint32_t)_mm512_reduce_add_epi32(a5.c2);
    sc->c[3] = (uint32_t)_mm512_reduce_add_epi32(a5.c3) - sc->c[2];
    sc->c[4] = ovf_on ? (uint32_t)_mm512_reduce_add_epi32(a5.c4) : (uint32_t)n;
}

/* rne into float32 itself (sh == 0, int_sub) is the identity on finite x: the
 * scan alone, with y = x; nothing flushes (tf = 0), nothing is inexact, and
 * the values below tn are float32's subnormals. NaN and inf are not handled
 * (some |x| > tmax): the caller redoes such a block. */
static inline __attribute__((always_inline)) T512 void
ident_scan512_step(const rne512 k, scan512 *a5, const uint32_t *x, uint32_t *y, uint8_t *e8, __mmask16 live)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), zero = _mm512_setzero_si512();
    const __m512i m1 = _mm512_set1_epi32(-1);
    __m512i u = live == 0xffff ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(live, x);
    __m512i a = _mm512_and_si512(u, absm);
    if (live == 0xffff) _mm512_storeu_si512(y, u);
    else _mm512_mask_storeu_epi32(y, live, u);
    _mm512_mask_cvtepi32_storeu_epi8(e8, live, _mm512_srli_epi32(a, 23));
    a5->amax = _mm512_max_epu32(a5->amax, a);
    a5->amin = _mm512_mask_min_epu32(a5->amin, live, a5->amin, _mm512_add_epi32(a, m1));
    a5->c0 = _mm512_mask_sub_epi32(a5->c0, _mm512_cmpeq_epi32_mask(a, zero) & live, a5->c0, m1);
    a5->c2 = _mm512_mask_sub_epi32(a5->c2, _mm512_cmplt_epi32_mask(a, k.tn) & live, a5->c2, m1);
}

static T512 void ident_scan512(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n,
                               rne_thr t)
{
    const rne512 k = { .tn = _mm512_set1_epi32(t.tn) };
    (void)p;
    const __m512i zero = _mm512_setzero_si512();
    scan512 a5 = { zero, _mm512_set1_epi32(-1), zero, zero, zero, zero, zero };
    size_t i = 0;
    for (; i + 16 <= n; i += 16) ident_scan512_step(k, &a5, x + i, y + i, e8 + i, (__mmask16)0xffff);
    if (i < n) ident_scan512_step(k, &a5, x + i, y + i, e8 + i, (__mmask16)((1u << (n - i)) - 1));
    sc->amax = _mm512_reduce_max_epu32(a5.amax);
    sc->amin_m1 = _mm512_reduce_min_epu32(a5.amin);
    sc->c[0] = sc->c[1] = (uint32_t)_mm512_reduce_add_epi32(a5.c0);
    sc->c[2] = (uint32_t)_mm512_reduce_add_epi32(a5.c2);
    sc->c[3] = 0;
    sc->c[4] = (uint32_t)n;
}

#define RNE512(I, Z, O) rne_scan512_body(p, sc, x, y, e8, n, t, I, Z, O)
/* The variant for (int_sub, negz); *spec: first try the one without the
 * overflow result and the count <= tmax (4 operations in 30), or the
 * identity (float32), redone in full when some |x| > tmax (and from then on
 * for this call). Returns 0
 * (nothing done that counts) for a block with a NaN input. */
static T512 int k_rne_scan512(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n,
                              rne_thr t, int *spec)
{
    int negz = p->zsign != 0;
    if (*spec) {
        if (p->int_sub && !p->sh) ident_scan512(p, sc, x, y, e8, n, t);
        else if (p->int_sub) negz ? RNE512(1, 1, 0) : RNE512(1, 0, 0);
        else negz ? RNE512(0, 1, 0) : RNE512(0, 0, 0);
        if (sc->amax <= (uint32_t)t.tmax) return 1;
        *spec = 0;
    }
    if (p->int_sub) negz ? RNE512(1, 1, 1) : RNE512(1, 0, 1);
    else negz ? RNE512(0, 1, 1) : RNE512(0, 0, 1);
    return sc->amax <= 0x7f800000u;
}
#undef RNE512

/* The rne kernel of calls without statistics, NaN included (rne_elem). */
static inline __attribute__((always_inline)) T512 void
rne512_body(const kparams *p, const uint32_t *x, uint32_t *y, size_t n, int int_sub, int negz)
{
    const rne512 k = rne512_params(p, (rne_thr){ 0, 0, 0, 0, 0, AMP_CLS_OVERFLOW });
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i quiet = _mm512_set1_epi32(0x00400000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {               /* whole vectors: plain loads and stores */
        __m512i u = _mm512_loadu_si512(x + i), a = _mm512_and_si512(u, absm);
        __mmask16 small;
        __m512i res = rne512_round(k, u, a, int_sub, negz, 1, &small);
        _mm512_storeu_si512(y + i, _mm512_mask_or_epi32(res, _mm512_cmpgt_epi32_mask(a, inf), u, quiet));   /* NaN */
    }
    if (i < n) {
        __mmask16 live = (__mmask16)((1u << (n - i)) - 1);
        __m512i u = _mm512_maskz_loadu_epi32(live, x + i), a = _mm512_and_si512(u, absm);
        __mmask16 small;
        __m512i res = rne512_round(k, u, a, int_sub, negz, 1, &small);
        _mm512_mask_storeu_epi32(y + i, live, _mm512_mask_or_epi32(res, _mm512_cmpgt_epi32_mask(a, inf), u, quiet));
    }
}

static T512 void k_rne512(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)
{
    int negz = p->zsign != 0;
    if (p->int_sub) negz ? rne512_body(p, x, y, n, 1, 1) : rne512_body(p, x, y, n, 1, 0);
    else negz ? rne512_body(p, x, y, n, 0, 1) : rne512_body(p, x, y, n, 0, 0);
}
#endif

/* Adds to hist[f] the number of bytes e8[0..n) equal to f, for every f in
 * [lo, hi] (1 <= lo <= hi <= 254); n is a multiple of VB. HIST_WAYS fields
 * per pass: independent chains of byte counters. */
AMP_CLONES static void block_hist(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t lo, uint32_t hi)
{
    for (uint32_t f = lo; f <= hi; f += HIST_WAYS) {
        vu8 acc[HIST_WAYS] = { { 0 } }, want[HIST_WAYS];
        for (int k = 0; k < HIST_WAYS; k++)
            for (int j = 0; j < VB; j++) want[k][j] = (uint8_t)(f + (uint32_t)k);
        for (size_t i = 0; i < n; i += VB) {
            vu8 v;
            memcpy(&v, e8 + i, VB);
            for (int k = 0; k < HIST_WAYS; k++) acc[k] -= (vu8)(v == want[k]);   /* true is -1 */
        }
        for (int k = 0; k < HIST_WAYS && f + (uint32_t)k <= hi; k++) {
            vu16 s16 = ((vu16)acc[k] & 0xff) + ((vu16)acc[k] >> 8);
            vu32 s32 = ((vu32)s16 & 0xffff) + ((vu32)s16 >> 16);
            vu64 s64 = ((vu64)s32 & 0xffffffffu) + ((vu64)s32 >> 32);
            uint64_t c = 0;
            for (int j = 0; j < VB / 8; j++) c += s64[j];
            hist[f + (uint32_t)k] += (uint32_t)c;
        }
    }
}

#ifdef AMP_HIST512
/* block_hist with AVX-512BW: a compare into a mask and a masked byte add per
 * field and 64 bytes (the generic vectors need three operations), and the
 * byte counters summed by vpsadbw. Same counts, about 20% faster. */
__attribute__((target("avx512bw"))) static void block_hist512(uint32_t *hist, const uint8_t *e8, size_t n,
                                                              uint32_t lo, uint32_t hi)
{
    const __m512i one = _mm512_set1_epi8(1);
    for (uint32_t f = lo; f <= hi; f += HIST_WAYS) {
        __m512i acc[HIST_WAYS], want[HIST_WAYS];
        for (int k = 0; k < HIST_WAYS; k++) {
            acc[k] = _mm512_setzero_si512();
            want[k] = _mm512_set1_epi8((char)(uint8_t)(f + (uint32_t)k));
        }
        for (size_t i = 0; i < n; i += 64) {
            __m512i v = _mm512_loadu_si512(e8 + i);
            for (int k = 0; k < HIST_WAYS; k++)
                acc[k] = _mm512_mask_add_epi8(acc[k], _mm512_cmpeq_epi8_mask(v, want[k]), acc[k], one);
        }
        for (int k = 0; k < HIST_WAYS && f + (uint32_t)k <= hi; k++)
            hist[f + (uint32_t)k] += (uint32_t)_mm512_reduce_add_epi64(_mm512_sad_epu8(acc[k], _mm512_setzero_si512()));
    }
}

/* block_hist with GFNI and AVX-512 BITALG, 8 fields per window: each byte
 * d = e8 - base below 8 becomes the one-hot byte 1 << d (vpshufb), the 8x8 bit
 * matrix of every 8 bytes is transposed (vgf2p8affineqb with the bytes as the
 * matrix), and vpopcntb then counts, in byte j of each 8, how many of those
 * bytes are field base + j. Five operations per 8 fields and 64 values, where
 * block_hist512 takes 16. Byte counters (at most 8 per add) go into 16-bit
 * ones every 31 vectors. Same counts. */
#define HIST_GF_SPAN 96                    /* fields spanned up to which it beats the scalar loop */
#define GF_WIN 4                           /* windows of 8 fields per pass over the bytes */
#define TGF __attribute__((target("avx512f,avx512bw,avx512vl,gfni,avx512bitalg")))
/* fields [f, f + 8 nw) of block_hist_gfni: nw windows in one pass */
static inline __attribute__((always_inline)) TGF void
hist_gfni_pass(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t f, uint32_t hi, int nw)
{
    const __m512i bit = _mm512_set1_epi64((long long)0x8040201008040201ull);   /* byte i: 1 << i */
    const __m512i lut = _mm512_set4_epi32(0, 0, (int)0x80402010u, 0x08040201);   /* 1 << d for d < 8 */
    const __m512i eight = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    __m512i base[GF_WIN], acc16[GF_WIN];
    for (int w = 0; w < nw; w++) {
        base[w] = _mm512_set1_epi8((char)(uint8_t)(f + 8u * (uint32_t)w));
        acc16[w] = zero;
    }
    for (size_t i0 = 0; i0 < n; i0 += 31 * 64) {
        size_t i1 = n - i0 < 31 * 64 ? n : i0 + 31 * 64;
        __m512i acc[GF_WIN];
        for (int w = 0; w < nw; w++) acc[w] = zero;
        for (size_t i = i0; i < i1; i += 64) {
            __m512i v = _mm512_loadu_si512(e8 + i);
            for (int w = 0; w < nw; w++) {
                __m512i d = _mm512_sub_epi8(v, base[w]);
                __m512i oh = _mm512_maskz_shuffle_epi8(_mm512_cmplt_epu8_mask(d, eight), lut, d);
                acc[w] = _mm512_add_epi8(acc[w], _mm512_popcnt_epi8(_mm512_gf2p8affine_epi64_epi8(bit, oh, 0)));
            }
        }
        for (int w = 0; w < nw; w++)              /* word j of each 128-bit lane: field base + j */
            acc16[w] = _mm512_add_epi16(acc16[w], _mm512_add_epi16(_mm512_unpacklo_epi8(acc[w], zero),
                                                                   _mm512_unpackhi_epi8(acc[w], zero)));
    }
    for (int w = 0; w < nw; w++) {                /* hist[base + j] += word j, for base + j <= hi */
        __m256i s = _mm256_add_epi16(_mm512_castsi512_si256(acc16[w]), _mm512_extracti64x4_epi64(acc16[w], 1));
        __m128i q = _mm_add_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        uint32_t f0 = f + 8u * (uint32_t)w, left = hi - f0 + 1;
        __mmask8 live = (__mmask8)(left >= 8 ? 0xffu : (1u << left) - 1);
        __m256i h = _mm256_maskz_loadu_epi32(live, hist + f0);
        _mm256_mask_storeu_epi32(hist + f0, live, _mm256_add_epi32(h, _mm256_cvtepu16_epi32(q)));
    }
}

static TGF void block_hist_gfni(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t lo, uint32_t hi)
{
    for (uint32_t f = lo; f <= hi; f += 8 * GF_WIN) {
        uint32_t nw = (hi - f) / 8 + 1;
        if (nw >= 4) hist_gfni_pass(hist, e8, n, f, hi, 4);
        else if (nw == 3) hist_gfni_pass(hist, e8, n, f, hi, 3);
        else if (nw == 2) hist_gfni_pass(hist, e8, n, f, hi, 2);
        else hist_gfni_pass(hist, e8, n, f, hi, 1);
    }
}
#endif

/* finite nonzero x with finite y, as bits */
static inline uint32_t rel_ok(uint32_t xu, uint32_t yu)
{
    return ((xu & 0x7fffffffu) - 1u < 0x7f7fffffu) & ((yu & 0x7fffffffu) < 0x7f800000u);
}

AMP_CLONES static void block_sums(blockacc *acc, const uint32_t *restrict x, const uint32_t *restrict y,
                                  size_t n)
{
    /* the masked operands and the float32 quotients, gathered in arrays (vectorised) */
    float yv[BLOCK], xv[BLOCK], qv[BLOCK];
    uint32_t nr = 0, qbad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t ok = rel_ok(x[i], y[i]);
        float yy = amp_u2f(sel(ok, y[i], 0u)), xx = amp_u2f(sel(ok, x[i], 0u));
        float q = (float)((double)yy - (double)xx) / amp_u2f(sel(ok, x[i], 0x3f800000u));
        yv[i] = yy;
        xv[i] = xx;
        qv[i] = q;
        qbad |= (amp_f2u(q) & 0x7fffffffu) >= 0x7f800000u;
        nr += ok;
    }
    size_t n8 = n & ~(size_t)7;
    double lse[8] = { 0 }, lsq[8] = { 0 }, lsr[8] = { 0 };
    for (size_t i = 0; i < n8; i += 8)
        for (int j = 0; j < 8; j++) {
            double xx = xv[i + j], d = (double)yv[i + j] - xx, r = qv[i + j];
            lse[j] += d * d;
            lsq[j] += xx * xx;
            lsr[j] += r * r;
        }
    for (size_t i = n8; i < n; i++) {
        double xx = xv[i], d = (double)yv[i] - xx, r = qv[i];
        lse[i - n8] += d * d;
        lsq[i - n8] += xx * xx;
        lsr[i - n8] += r * r;
    }
    if (qbad) {                                   /* rare: redo the quotients in double */
        for (int j = 0; j < 8; j++) lsr[j] = 0;
        for (size_t i = 0; i < n; i++) {
            double xx = xv[i] != 0.0f ? xv[i] : 1.0, r = ((double)yv[i] - (double)xv[i]) / xx;
            lsr[i & 7] += r * r;
        }
    }
    double se = 0, sq = 0, sr = 0;
    for (int j = 0; j < 8; j++) {
        se += lse[j];
        sq += lsq[j];
        sr += lsr[j];
    }
    acc->sum_sq_err += se;
    acc->sum_sq += sq;
    acc->sum_rel_sq += sr;
    acc->n_rel += nr;
}

/* The error sums of an rne block without NaN or inf inputs (the scan tells):
 * the values with a finite y are those of the sums (all of them when nothing
 * overflows or when overflow saturates: the unmasked variant), and for them
 * |y - x| <= |x| (a saturated x is above max finite); a zero x adds 0 to each
 * sum (its divisor is 1). In float32, 32 lanes of at most 32 terms, then added
 * in double: y - x, and x and y - x scaled by the power of two `scale`
 * (exact), chosen from the block's amax so that no square overflows. Each sum
 * is within a relative 2^-18 (AMP_STATS_SUM_RTOL) as long as every scaled
 * square is a normal float32: a nonzero |y - x| is at least 2^-23 of |x| (its
 * float32 ulp) or |x| itself (flushed), so this holds when the block's |x|
 * span fewer than 86 binades; a wider block's sum of squared errors is redone
 * in double (block_sq_err). */
#define SUM_LANES 32
#define SUM_GROUP 1024                     /* values per float partial sum: 32 per lane */
/* one term of block_sums_rne: value i of X, Y into lane j; with `masked`,
 * a value whose y is not finite is left out */
#define SUM_TERM(X, Y, i, j)                                                                    \
    do {                                                                                        \
        float xx = X[i], yy = Y[i];                                                             \
        if (masked) {                                                                           \
            uint32_t fin = (amp_f2u(yy) & 0x7fffffffu) < 0x7f800000u;                           \
            xx = amp_u2f(sel(fin, amp_f2u(xx), 0u));                                            \
            yy = amp_u2f(sel(fin, amp_f2u(yy), 0u));                                            \
        }                                                                                       \
        float d = yy - xx, xs = xx * scale, ds = d * scale;                                     \
        float q = d / (xx != 0.0f ? xx : 1.0f);                                                 \
        lse[j] += ds * ds;                                                                      \
        lsq[j] += xs * xs;                                                                      \
        lsr[j] += q * q;                                                                        \
    } while (0)

static inline __attribute__((always_inline)) void
sums_rne_body(blockacc *acc, const float *restrict x, const float *restrict y, size_t n, float scale,
              double unscale2, int masked)
{
    double dse[SUM_LANES], dsq[SUM_LANES], dsr[SUM_LANES];
    for (size_t i0 = 0; i0 < n; i0 += SUM_GROUP) {
        size_t m = n - i0 < SUM_GROUP ? n - i0 : SUM_GROUP, ml = m & ~(size_t)(SUM_LANES - 1);
        const float *restrict xg = x + i0, *restrict yg = y + i0;
        float lse[SUM_LANES] = { 0 }, lsq[SUM_LANES] = { 0 }, lsr[SUM_LANES] = { 0 };
        for (size_t i = 0; i < ml; i += SUM_LANES)
            for (size_t j = 0; j < SUM_LANES; j++) SUM_TERM(xg, yg, i + j, j);
        if (ml < m) {                             /* the rest in lanes 0.., the others add +0 */
            float xt[SUM_LANES] = { 0 }, yt[SUM_LANES] = { 0 };
            memcpy(xt, xg + ml, (m - ml) * sizeof *xt);
            memcpy(yt, yg + ml, (m - ml) * sizeof *yt);
            for (size_t j = 0; j < SUM_LANES; j++) SUM_TERM(xt, yt, j, j);
        }
        for (int j = 0; j < SUM_LANES; j++) {    /* the first group: 0 + lse[j], exactly */
            dse[j] = i0 ? dse[j] + lse[j] : lse[j];
            dsq[j] = i0 ? dsq[j] + lsq[j] : lsq[j];
            dsr[j] = i0 ? dsr[j] + lsr[j] : lsr[j];
        }
    }
    if (!n)
        for (int j = 0; j < SUM_LANES; j++) dse[j] = dsq[j] = dsr[j] = 0;
    for (int w = SUM_LANES / 2; w > 0; w /= 2)   /* pairwise: log-depth, fixed order */
        for (int j = 0; j < w; j++) {
            dse[j] += dse[j + w];
            dsq[j] += dsq[j + w];
            dsr[j] += dsr[j + w];
        }
    acc->sum_sq_err += dse[0] * unscale2;
    acc->sum_sq += dsq[0] * unscale2;
    acc->sum_rel_sq += dsr[0];
}
#undef SUM_TERM

AMP_CLONES static void block_sums_rne(blockacc *acc, const float *restrict x, const float *restrict y, size_t n,
                                      float scale, double unscale2)
{
    sums_rne_body(acc, x, y, n, scale, unscale2, 0);
}

AMP_CLONES static void block_sums_rne_masked(blockacc *acc, const float *restrict x, const float *restrict y,
                                             size_t n, float scale, double unscale2)
{
    sums_rne_body(acc, x, y, n, scale, unscale2, 1);
}

#ifdef AMP_HIST512
/* block_sums_rne with AVX-512 intrinsics: the same lanes (two vectors of 16
 * floats per sum), the same operations in the same order and the same
 * pairwise reduction in double, so the same bits; the end of a group by
 * masked loads (the lanes past it add +0, as in sums_rne_body) and every
 * partial sum in registers, which is what small tensors pay for. */
static inline __attribute__((always_inline)) T512 void
sums512_term(__m512 xx, __m512 yy, __m512 scale, int masked, __m512 *se, __m512 *sq, __m512 *sr, int ident)
{
    const __m512 zero = _mm512_setzero_ps();
    if (ident) {                                  /* y == x: only x^2 adds anything */
        __m512 xs = _mm512_mul_ps(xx, scale);
        *sq = _mm512_add_ps(*sq, _mm512_mul_ps(xs, xs));
        return;
    }
    if (masked) {
        __mmask16 fin = _mm512_cmplt_epi32_mask(_mm512_and_si512(_mm512_castps_si512(yy), _mm512_set1_epi32(0x7fffffff)),
                                               _mm512_set1_epi32(0x7f800000));
        xx = _mm512_maskz_mov_ps(fin, xx);
        yy = _mm512_maskz_mov_ps(fin, yy);
    }
    __m512 d = _mm512_sub_ps(yy, xx), xs = _mm512_mul_ps(xx, scale), ds = _mm512_mul_ps(d, scale);
    __m512 q = _mm512_mask_div_ps(d, _mm512_cmp_ps_mask(xx, zero, _CMP_NEQ_UQ), d, xx);   /* d / 1 where x == 0 */
    *se = _mm512_add_ps(*se, _mm512_mul_ps(ds, ds));
    *sq = _mm512_add_ps(*sq, _mm512_mul_ps(xs, xs));
    *sr = _mm512_add_ps(*sr, _mm512_mul_ps(q, q));
}

/* lanes 0-31 of a double sum as four vectors: += the float lanes lo, hi */
static inline __attribute__((always_inline)) T512 void
sums512_widen(__m512d *dd, __m512 lo, __m512 hi, int first)
{
    __m512d w[4] = { _mm512_cvtps_pd(_mm512_castps512_ps256(lo)),
                     _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lo), 1))),
                     _mm512_cvtps_pd(_mm512_castps512_ps256(hi)),
                     _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(hi), 1))) };
    for (int k = 0; k < 4; k++) dd[k] = first ? w[k] : _mm512_add_pd(dd[k], w[k]);
}

/* the pairwise reduction of sums_rne_body: j += j + w for w = 16, 8, 4, 2, 1 */
static inline __attribute__((always_inline)) T512 double sums512_reduce(const __m512d *dd)
{
    __m512d a = _mm512_add_pd(_mm512_add_pd(dd[0], dd[2]), _mm512_add_pd(dd[1], dd[3]));
    __m256d b = _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1));
    __m128d c = _mm_add_pd(_mm256_castpd256_pd128(b), _mm256_extractf128_pd(b, 1));
    return _mm_cvtsd_f64(_mm_add_sd(c, _mm_unpackhi_pd(c, c)));
}

static inline __attribute__((always_inline)) T512 void
sums512_body(blockacc *acc, const float *x, const float *y, size_t n, float scale_f, double unscale2, int masked,
             int ident)
{
    const __m512 scale = _mm512_set1_ps(scale_f), zero = _mm512_setzero_ps();
    __m512d dse[4], dsq[4], dsr[4];
    for (int k = 0; k < 4; k++) dse[k] = dsq[k] = dsr[k] = _mm512_setzero_pd();
    for (size_t i0 = 0; i0 < n; i0 += SUM_GROUP) {
        size_t m = n - i0 < SUM_GROUP ? n - i0 : SUM_GROUP;
        const float *xg = x + i0, *yg = y + i0;
        __m512 se0 = zero, sq0 = zero, sr0 = zero, se1 = zero, sq1 = zero, sr1 = zero;   /* lanes 0-15, 16-31 */
        size_t i = 0;
        for (; i + 32 <= m; i += 32) {
            sums512_term(_mm512_loadu_ps(xg + i), _mm512_loadu_ps(yg + i), scale, masked, &se0, &sq0, &sr0, ident);
            sums512_term(_mm512_loadu_ps(xg + i + 16), _mm512_loadu_ps(yg + i + 16), scale, masked, &se1, &sq1, &sr1, ident);
        }
        int half = 0;                               /* the rest: lanes 0-15, then 16-31 */
        if (i + 16 <= m) {
            sums512_term(_mm512_loadu_ps(xg + i), _mm512_loadu_ps(yg + i), scale, masked, &se0, &sq0, &sr0, ident);
            i += 16;
            half = 1;
        }
        if (i < m) {
            __mmask16 live = (__mmask16)((1u << (m - i)) - 1);
            __m512 xt = _mm512_maskz_loadu_ps(live, xg + i), yt = _mm512_maskz_loadu_ps(live, yg + i);
            if (half) sums512_term(xt, yt, scale, masked, &se1, &sq1, &sr1, ident);
            else sums512_term(xt, yt, scale, masked, &se0, &sq0, &sr0, ident);
        }
        sums512_widen(dse, se0, se1, i0 == 0);
        sums512_widen(dsq, sq0, sq1, i0 == 0);
        sums512_widen(dsr, sr0, sr1, i0 == 0);
    }
    if (!ident) acc->sum_sq_err += sums512_reduce(dse) * unscale2;   /* else += 0 */
    acc->sum_sq += sums512_reduce(dsq) * unscale2;
    if (!ident) acc->sum_rel_sq += sums512_reduce(dsr);
}

/* ident: y == x for every value (no NaN or inf) */
static T512 void block_sums_rne512(blockacc *acc, const float *x, const float *y, size_t n, float scale,
                                   double unscale2, int masked, int ident)
{
    if (ident) sums512_body(acc, x, y, n, scale, unscale2, 0, 1);
    else if (masked) sums512_body(acc, x, y, n, scale, unscale2, 1, 0);
    else sums512_body(acc, x, y, n, scale, unscale2, 0, 0);
}
#endif

/* sum (y - x)^2 over finite y, in double (x finite): for blocks whose scaled
 * errors could underflow float32 */
AMP_CLONES static double block_sq_err(const float *restrict x, const float *restrict y, size_t n)
{
    double l[8] = { 0 };
    size_t n8 = n & ~(size_t)7;
    for (size_t i = 0; i < n8; i += 8)
        for (int j = 0; j < 8; j++) {
            uint32_t fin = (amp_f2u(y[i + j]) & 0x7fffffffu) < 0x7f800000u;
            double d = (double)amp_u2f(sel(fin, amp_f2u(y[i + j]), 0u)) - (double)amp_u2f(sel(fin, amp_f2u(x[i + j]), 0u));
            l[j] += d * d;
        }
    for (size_t i = n8; i < n; i++)
        if ((amp_f2u(y[i]) & 0x7fffffffu) < 0x7f800000u) l[i - n8] += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
    double se = 0;
    for (int j = 0; j < 8; j++) se += l[j];
    return se;
}

/* Blocks with float32 subnormal, infinite or NaN inputs: amax over non-NaN,
 * the exponent range of the finite normal inputs, the subnormals by bit length. */
/* Blocks with NaN or inf inputs: how many inputs are finite, and infinite. */
AMP_CLONES static void block_nonfinite(const uint32_t *restrict x, size_t n, uint32_t *fin, uint32_t *inf)
{
    uint32_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t ia = (int32_t)(x[i] & 0x7fffffffu);
        c1 += ia < 0x7f800000;
        c2 += ia == 0x7f800000;
    }
    *fin = c1, *inf = c2;
}

static void block_rare(blockacc *acc, const uint32_t *x, size_t n, uint32_t *amax, uint32_t *nmin, uint32_t *nmax)
{
    uint32_t mx = 0, lo = 0x7f800000u, hi = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t a = x[j] & 0x7fffffffu;
        if (a > 0x7f800000u) continue;
        if (a > mx) mx = a;
        if (a == 0x7f800000u) continue;
        if (a >= 0x00800000u) {
            if (a < lo) lo = a;
            if (a > hi) hi = a;
        } else if (a != 0) {
            if (!acc->has_sub) memset(acc->sub_hist, 0, sizeof acc->sub_hist);
            acc->has_sub = 1;
            acc->sub_hist[31 - __builtin_clz(a)]++;
        }
    }
    *amax = mx, *nmin = lo, *nmax = hi;
}

/* Rounds block x -> y (n <= BLOCK) and adds its statistics to acc: with
 * thr, by the fused rne kernel and scan (class counts by thresholds);
 * otherwise by the mode's kernel with class counters, then the scan. */
static void block_round_stats(blockacc *acc, const kparams *p, const rne_thr *thr, kern_cls_fn kc,
                              const uint32_t *x, uint32_t *y, size_t n, int use512, int *spec)
{
    uint8_t e8[BLOCK + VB];
    scan sc;
    uint32_t n_fin_y = 0;
    if (thr) {
#ifdef AMP_HIST512
        if (!use512 || !k_rne_scan512(p, &sc, x, y, e8, n, *thr, spec))
#endif
            (p->int_sub ? k_rne_scan_int : k_rne_scan_sub)(p, &sc, x, y, e8, n, *thr);
        uint32_t le = sc.c[4], fin = (uint32_t)n, inf = 0;
        if (sc.amax >= 0x7f800000u) block_nonfinite(x, n, &fin, &inf);   /* NaN or inf inputs */
        n_fin_y = thr->ovf_cls == AMP_CLS_SATURATED ? fin : le;   /* finite x with finite y */
        acc->cls[AMP_CLS_ZERO_IN] += sc.c[0];
        acc->cls[AMP_CLS_FLUSHED] += sc.c[1] - sc.c[0];
        acc->cls[AMP_CLS_SUBNORMAL] += sc.c[2] - sc.c[1];
        acc->cls[AMP_CLS_ROUNDED] += sc.c[3];
        acc->cls[AMP_CLS_INF_IN] += inf;
        acc->cls[AMP_CLS_NAN_IN] += (uint32_t)n - fin - inf;
        acc->cls[thr->ovf_cls] += fin - le;
    } else {
        kc(p, x, y, acc->cls, n);
        block_scan(&sc, x, e8, n);
    }
    uint32_t amax = sc.amax, amin = sc.amin_m1 < 0x7f7fffffu ? sc.amin_m1 + 1u : 0x7f800000u;
    uint32_t nmin = amin, nmax = amax;
    if (amax >= 0x7f800000u || amin < 0x00800000u) block_rare(acc, x, n, &amax, &nmin, &nmax);
    if (amax > acc->amax) acc->amax = amax;
    if (amin < acc->amin) acc->amin = amin;
    if (nmin <= nmax) {                           /* some finite normal input */
        uint32_t lo = nmin >> 23, hi = nmax >> 23;
        hist_open(acc, 0, lo, hi);
        if (hi - lo < (use512 > 1 ? HIST_GF_SPAN : HIST_VEC_SPAN)) {
            size_t nv = (n + VB - 1) / VB * VB;
            memset(e8 + n, 0, VB);                /* to nv; field 0 is never counted here */
#ifdef AMP_HIST512
            if (use512 > 1) block_hist_gfni(acc->hist[0], e8, nv, lo, hi);
            else if (use512) block_hist512(acc->hist[0], e8, nv, lo, hi);
            else
#endif
                block_hist(acc->hist[0], e8, nv, lo, hi);
        } else {                                  /* 4 copies: no store-to-load chains */
            hist_open(acc, 1, lo, hi);
            size_t i = 0;
            for (; i + 4 <= n; i += 4) {
                acc->hist[0][e8[i]]++;
                acc->hist[1][e8[i + 1]]++;
                acc->hist[2][e8[i + 2]]++;
                acc->hist[3][e8[i + 3]]++;
            }
            for (; i < n; i++) acc->hist[0][e8[i]]++;
        }
    }
    if (thr && sc.amax < 0x7f800000u) {          /* rne, no NaN or inf input (sc.amax counts NaN) */
        /* scale: the largest |x| with a finite y (overflowing values are out unless
         * saturated) to [2^60, 2^61); no float scale above 2^127 is needed */
        uint32_t top = thr->ovf_cls == AMP_CLS_SATURATED || amax <= (uint32_t)thr->tmax ? amax : (uint32_t)thr->tmax;
        int e = (int)(top >> 23) - 127, k = 60 - e > 127 ? 127 : 60 - e;
        const float *xf = (const float *)(const void *)x, *yf = (const float *)(const void *)y;
        double se0 = acc->sum_sq_err;
        int masked = thr->ovf_cls != AMP_CLS_SATURATED && amax > (uint32_t)thr->tmax;
        float scale = amp_u2f((uint32_t)(127 + k) << 23);
        double unscale2 = amp_u2d((uint64_t)(1023 - 2 * k) << 52);
#ifdef AMP_HIST512
        /* y == x: float32 itself, or every value exact (no flush, subnormal, inexact or overflow) */
        int ident = (!p->sh && p->int_sub && !masked) ||
                    (sc.c[1] == sc.c[0] && sc.c[2] == sc.c[0] && !sc.c[3] && sc.c[4] == (uint32_t)n);
        if (use512) block_sums_rne512(acc, xf, yf, n, scale, unscale2, masked, ident);
        else
#endif
            (masked ? block_sums_rne_masked : block_sums_rne)(acc, xf, yf, n, scale, unscale2);
        if (amin < 0x7f800000u && (int)(top >> 23) - (int)(amin >> 23) > 85)   /* see block_sums_rne */
            acc->sum_sq_err = se0 + block_sq_err(xf, yf, n);
        /* finite nonzero x with finite y: overflowing values are out unless saturated */
        acc->n_rel += n_fin_y - sc.c[0];
    } else {
        block_sums(acc, x, y, n);
    }
}

/* adds count to the bin of binade; [*lo, *hi] takes the bin (the caller
 * widens st's range once) */
static void hist_add(amp_stats *st, int binade, uint64_t count, int *lo, int *hi)
{
    int b = binade - AMP_HIST_LO;
    b = b < 0 ? 0 : b >= AMP_HIST_BINS ? AMP_HIST_BINS - 1 : b;
    st->hist[b] += count;
    if (b < *lo) *lo = b;
    if (b > *hi) *hi = b;
}

static int fast_params(const amp_format *f, const amp_round_opts *o, kparams *p)
{
    if (o->mode == AMP_RND_SR || (o->flags & AMP_EXACT) || !f->has_subnormals || !f->is_signed ||
        f->emin < -126 || f->mbits > 23 || f->mbits == 0)
        return 0;   /* no mantissa bits: the significand 1 is odd (ties, rto): generic path */
    memset(p, 0, sizeof *p);
    p->sh = (uint32_t)(23 - f->mbits);
    p->mask = (1u << p->sh) - 1;
    p->half = p->sh ? 1u << (p->sh - 1) : 1u;   /* sh == 0: low is always 0, never > or == 1 */
    p->minnorm = amp_f2u((float)f->min_normal);
    p->maxbits = amp_f2u((float)f->max_finite);
    p->int_sub = f->emin == -126;
    p->sub_mul = p->int_sub ? 1.0f : (float)ldexp(1.0, f->mbits - f->emin);
    p->sub_q = p->int_sub ? 1.0f : (float)f->min_subnormal;
    amp_round_opts oo = *o;
    for (int neg = 0; neg < 2; neg++) {
        amp_class c;
        float r = amp_round_overflow(f, &oo, neg, &c);
        p->ovf_res[neg] = amp_f2u(r);
        p->ovf_cls[neg] = (uint32_t)c;
        float ri = amp_round1(f, &oo, neg ? -INFINITY : INFINITY, 0, NULL);
        p->inf_res[neg] = amp_f2u(ri);
    }
    p->zsign = f->has_neg_zero ? 0x80000000u : 0;
    p->cadd = (float)ldexp(f->min_subnormal, 23);
    p->rne_ok = o->mode == AMP_RND_NE && !(o->flags & (AMP_FTZ | AMP_DAZ)) &&
                p->inf_res[0] == p->ovf_res[0] && p->inf_res[1] == p->ovf_res[1];
    p->ftz = (o->flags & AMP_FTZ) != 0;
    p->daz = (o->flags & AMP_DAZ) != 0;
    return 1;
}

/* The hand-written paths this machine has (asked once), under the cap of
 * amp_set_simd: AMP_SIMD_GENERIC (none), AMP_SIMD_AVX512 (AVX-512BW/VL),
 * AMP_SIMD_GFNI (also GFNI and BITALG: the histogram). */
static int simd_cap = AMP_SIMD_GFNI;

void amp_set_simd(amp_simd cap)
{
    __atomic_store_n(&simd_cap, cap == AMP_SIMD_AUTO ? AMP_SIMD_GFNI : (int)cap, __ATOMIC_RELAXED);
}

static int machine_paths(void)
{
    int m = 0;
#ifdef AMP_HIST512
    static int known = -1;
    m = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (m < 0) {
        m = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
        m += m && __builtin_cpu_supports("gfni") && __builtin_cpu_supports("avx512bitalg");
        __atomic_store_n(&known, m, __ATOMIC_RELAXED);
    }
    int cap = __atomic_load_n(&simd_cap, __ATOMIC_RELAXED);
    if (m > cap) m = cap;
#endif
    return m;
}

amp_simd amp_simd_active(void) { return (amp_simd)machine_paths(); }

const char *amp_simd_name(amp_simd s)
{
    return s == AMP_SIMD_GFNI ? "gfni" : s == AMP_SIMD_AVX512 ? "avx512" : s == AMP_SIMD_GENERIC ? "generic" : "auto";
}

/* fast_params and rne_thresholds of the last few (format, mode, flags) this
 * thread has seen: a training step rounds a score of small tensors into two
 * or three formats, and the parameters cost as much as rounding 50 values. */
#define PCACHE 4
typedef struct pcache {
    int valid, ok;
    amp_format f;
    amp_rounding mode;
    unsigned flags;
    kparams p;
    rne_thr thr;
} pcache;

/* the stored traits, which determine the derived fields */
static int same_traits(const amp_format *a, const amp_format *b)
{
    return a->ebits == b->ebits && a->mbits == b->mbits && a->bias == b->bias && a->has_inf == b->has_inf &&
           a->nan == b->nan && a->has_neg_zero == b->has_neg_zero && a->has_subnormals == b->has_subnormals &&
           a->is_signed == b->is_signed && a->max_finite == b->max_finite;
}

static const pcache *cached_params(const amp_format *f, const amp_round_opts *o)
{
    static _Thread_local pcache c[PCACHE];
    static _Thread_local unsigned next;
    for (int i = 0; i < PCACHE; i++)
        if (c[i].valid && c[i].mode == o->mode && c[i].flags == o->flags && same_traits(&c[i].f, f))
            return &c[i];
    pcache *e = &c[next++ % PCACHE];
    e->valid = 1;
    e->f = *f;
    e->mode = o->mode;
    e->flags = o->flags;
    e->ok = fast_params(f, o, &e->p);
    if (e->ok) e->thr = rne_thresholds(&e->p, f);
    return e;
}

int amp_round_fast_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                       size_t n, amp_stats *st)
{
    const pcache *pc = cached_params(f, o);
    if (!pc->ok) return 0;
    const kparams p = pc->p;
    const uint32_t *xu = (const uint32_t *)(const void *)x;
    uint32_t *yu = (uint32_t *)(void *)y;
    if (!st) {
        kern_fn k = p.rne_ok ? (p.int_sub ? k_rne_int : k_rne_sub) : kernels[o->mode];
#ifdef AMP_HIST512
        if (p.rne_ok && machine_paths()) k = k_rne512;
#endif
        k(&p, xu, yu, n);
        return 1;
    }
    blockacc acc;
    acc_init(&acc);
    int use512 = machine_paths();
    uint32_t xin[BLOCK];
    rne_thr thr = pc->thr;
    int spec = 1;                                 /* k_rne_scan512: no overflow so far */
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t len = n - i < BLOCK ? n - i : BLOCK;
        const uint32_t *xb = xu + i;
        if ((const void *)x == (void *)y) {      /* in place: keep the inputs for the stats */
            memcpy(xin, xb, len * sizeof *xin);
            xb = xin;
        }
        block_round_stats(&acc, &p, p.rne_ok ? &thr : NULL, kernels_cls[o->mode], xb, yu + i, len, use512, &spec);
    }
    st->n += n;
    uint64_t others = 0;
    for (int c = 0; c < AMP_CLS_COUNT; c++) {
        st->cls[c] += acc.cls[c];
        others += acc.cls[c];
    }
    st->cls[AMP_CLS_EXACT] += n - others;
    double amax = amp_u2f(acc.amax);
    if (amax > st->amax) st->amax = amax;
    if (acc.amin < 0x7f800000u && amp_u2f(acc.amin) < st->amin_nonzero) st->amin_nonzero = amp_u2f(acc.amin);
    st->sum_sq_err += acc.sum_sq_err;
    st->sum_sq += acc.sum_sq;
    st->sum_rel_sq += acc.sum_rel_sq;
    st->n_rel += acc.n_rel;
    int blo = AMP_HIST_BINS, bhi = -1;
    for (uint32_t field = acc.hlo[0]; field <= acc.hhi[0]; field++)
        if (acc.hist[0][field]) hist_add(st, (int)field - 127, acc.hist[0][field], &blo, &bhi);
    for (uint32_t field = acc.hlo[1]; field <= acc.hhi[1]; field++) {
        uint64_t c = (uint64_t)acc.hist[1][field] + acc.hist[2][field] + acc.hist[3][field];
        if (c) hist_add(st, (int)field - 127, c, &blo, &bhi);
    }
    for (int bl = 0; acc.has_sub && bl < 32; bl++)
        if (acc.sub_hist[bl]) hist_add(st, bl - 149, acc.sub_hist[bl], &blo, &bhi);
    if (blo <= bhi) amp_stats_widen(st, blo, bhi);
    return 1;
}

/* Counts inf and NaN values: 32-bit counters per block, so that it vectorises. */
AMP_CLONES size_t amp_count_nonfinite(const float *x, size_t n)
{
    const uint32_t *u = (const uint32_t *)(const void *)x;
    size_t bad = 0;
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;
        uint32_t c = 0;
        for (size_t i = 0; i < m; i++) c += (u[i0 + i] & 0x7f800000u) == 0x7f800000u;
        bad += c;
    }
    return bad;
}
