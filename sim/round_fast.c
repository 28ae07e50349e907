/* Fast float32 rounding kernels: branch-free, auto-vectorised, one per
 * deterministic mode; their parameters (cached per thread) and the driver.
 * With statistics, the classification counters, log2 histogram, amax, amin
 * and error sums are fused into the same pass over each block
 * (sim/round_stats.c); the hand-written AVX-512 / GFNI paths of the hot loops
 * are in sim/round_avx512.c (rne) and sim/round_avx512_dir.c (the other modes,
 * sr included), the shared definitions in sim/round_kernels.h.
 *
 * Covered: every signed format with subnormals whose min normal is a float32
 * normal (emin >= -126), and e8m0 (its own kernels, below), in the modes rne,
 * rna, rtz, rup, rdn, rto and sr with saturate/ftz/daz. Everything else
 * (exotic custom formats) takes the generic path in round.c.
 *
 * sr: the reference path (round_scalar.c) rounds up iff
 *     (r >> (64 - K)) < (rem >> (sh - K)),  K = min(sr_bits or 64, sh, 64),
 * r = amp_rand64(seed, stream, index), rem/2^sh = frac the discarded fraction
 * of a quantum. That is the same as
 *     (r >> (64 - Kc)) < floor(frac 2^Kc),  Kc = sr_bits or 64 (a constant):
 * for K = Kc both read the same; for Kc > K = sh, frac 2^Kc = rem 2^(Kc-sh) is
 * an integer and both say r < rem 2^(64-sh). frac is low/2^sh on the bit
 * pattern, or the fraction fr of the fixed-quantum path (exact in float).
 * Equivalently r < floor(frac 2^Kc) 2^(64-Kc), which is what the kernels
 * compare, in 32-bit halves (below). The draws are computed
 * here, 64-bit lanes vectorised, from (seed, stream, index0 + i): the bytes do
 * not depend on threads or chunking. Both paths are
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
#include "round_kernels.h"

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

static inline __attribute__((always_inline)) uint32_t
round_elem(uint32_t u, int mode, int want_cls, int fixed, uint32_t *cls_out, uint32_t rhi, uint32_t rlo,
           uint32_t s1, uint32_t s2, uint32_t mhi, uint32_t mlo, KP_ARGS)
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
    case AMP_RND_SR: up_n = (rhi >> s1) < ((uint32_t)low >> s2); break;
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
    case AMP_RND_SR: {
        /* (th:tl) = floor(fr 2^64) with the low 64 - Kc bits cleared, exactly
         * (fr has at most 24 significant bits; each conversion truncates) */
        float F = fr * 0x1p32f;
        uint32_t th = (uint32_t)F, tl = (uint32_t)((F - (float)th) * 0x1p32f);
        th &= mhi;
        tl &= mlo;
        up_s = (int32_t)((uint32_t)(rhi < th) | ((uint32_t)(rhi == th) & (uint32_t)(rlo < tl)));
        break;
    }
    default: up_s = 0; break;
    }
    if (mode == AMP_RND_TO) ti |= f_nz;
    uint32_t rs = amp_f2u((float)(ti + up_s) * sub_q);

    uint32_t in_sub = fixed ? is_small & (int_sub ^ 1u) : 0u;
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

/* One kernel per mode, with and without class output. */
#define DEF_KERNEL(NAME, MODE)                                                              \
    AMP_CLONES static void NAME##_body(const uint32_t *restrict x, uint32_t *restrict y,   \
                                       size_t n, KP_ARGS)                                  \
    {                                                                                       \
        uint32_t c_;                                                                        \
        for (size_t i = 0; i < n; i++)                                                      \
            y[i] = round_elem(x[i], MODE, 0, 1, &c_, 0, 0, 31, 0, 0, 0, sh, mask, half, minnorm, maxbits, int_sub, \
                              sub_mul, sub_q, ovf0, ovf1, ovfc0, ovfc1, inf0, inf1, zsign, ftz, daz); \
    }                                                                                       \
    AMP_CLONES static void NAME##_cls_body(const uint32_t *restrict x, uint32_t *restrict y, \
                                           uint32_t *restrict cnt, size_t n, KP_ARGS)      \
    {                                                                                       \
        uint32_t c[AMP_CLS_COUNT] = { 0 };                                                  \
        for (size_t i = 0; i < n; i++)                                                      \
            y[i] = round_elem(x[i], MODE, 1, 1, c, 0, 0, 31, 0, 0, 0, sh, mask, half, minnorm, maxbits, int_sub,  \
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

/* sr: the same with the draw of each element (kparams' sr fields). The
 * draws of a group of SR_GROUP values come first (a loop of independent
 * multiply chains, which the CPU overlaps), as high and low 32-bit halves;
 * then the rounding. On the bit-pattern path only the high half is read:
 *     (r >> (64 - Kc)) < floor(low 2^(Kc - sh))  <=>  (hi >> s1) < (low >> s2),
 * ke = min(Kc, sh), s1 = 32 - ke, s2 = sh - ke (both sides drop the same
 * low bits of a multiple of 2^(64 - ke) and of low). On the fixed-quantum
 * path (target subnormal, emin > -126), r < floor(fr 2^Kc) 2^(64-Kc) is
 * compared as two 32-bit halves; a group with no value in that range takes
 * the kernel without it. */
#define SR_GROUP 256
#define SR_ARGS uint32_t s1, uint32_t s2, uint32_t mhi, uint32_t mlo
#define SR_PASS(p) (p)->sr_s1, (p)->sr_s2, (p)->sr_mhi, (p)->sr_mlo
AMP_CLONES static void sr_draws(uint32_t *restrict hi, uint32_t *restrict lo, uint64_t key, uint64_t idx0, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = sr_draw(key, idx0 + i);
        hi[i] = (uint32_t)(r >> 32);
        lo[i] = (uint32_t)r;
    }
}

/* 1 if some x is nonzero and below min normal (the fixed-quantum path) */
AMP_CLONES static uint32_t sr_any_small(const uint32_t *restrict x, size_t n, uint32_t minnorm)
{
    uint32_t any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = x[i] & 0x7fffffffu;
        any |= (uint32_t)(a - 1u < minnorm - 1u);
    }
    return any;
}

#define SR_ELEM(CLS, FIXED, C)                                                                   \
    round_elem(x[i], AMP_RND_SR, CLS, FIXED, C, hi[i], lo[i], s1, s2, mhi, mlo,                    \
               sh, mask, half, minnorm, maxbits, int_sub, sub_mul, sub_q, ovf0, ovf1, ovfc0, ovfc1, inf0, inf1, \
               zsign, ftz, daz)
#define DEF_SR(NAME, FIXED)                                                                         \
    AMP_CLONES static void NAME(const uint32_t *restrict x, uint32_t *restrict y, const uint32_t *restrict hi, \
                                const uint32_t *restrict lo, size_t n, SR_ARGS, KP_ARGS)            \
    {                                                                                               \
        uint32_t c_;                                                                                \
        for (size_t i = 0; i < n; i++) y[i] = SR_ELEM(0, FIXED, &c_);                               \
    }                                                                                               \
    AMP_CLONES static void NAME##_cls(const uint32_t *restrict x, uint32_t *restrict y, const uint32_t *restrict hi, \
                                      const uint32_t *restrict lo, uint32_t *restrict cnt, size_t n, SR_ARGS, KP_ARGS) \
    {                                                                                               \
        uint32_t c[AMP_CLS_COUNT] = { 0 };                                                          \
        for (size_t i = 0; i < n; i++) y[i] = SR_ELEM(1, FIXED, c);                                 \
        for (int k_ = 0; k_ < AMP_CLS_COUNT; k_++) cnt[k_] += c[k_];                               \
    }
DEF_SR(k_sr_rel, 0)
DEF_SR(k_sr_fix, 1)

/* cnt == NULL: no class counts */
static void sr_run(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n)
{
    uint32_t hi[SR_GROUP], lo[SR_GROUP];
    for (size_t i = 0; i < n; i += SR_GROUP) {
        size_t m = n - i < SR_GROUP ? n - i : SR_GROUP;
        sr_draws(hi, lo, p->sr_key, p->sr_idx0 + i, m);
        int fix = !p->int_sub && sr_any_small(x + i, m, p->minnorm);
        if (cnt) (fix ? k_sr_fix_cls : k_sr_rel_cls)(x + i, y + i, hi, lo, cnt, m, SR_PASS(p), KP_PASS(p));
        else (fix ? k_sr_fix : k_sr_rel)(x + i, y + i, hi, lo, m, SR_PASS(p), KP_PASS(p));
    }
}

static void k_sr(const kparams *p, const uint32_t *x, uint32_t *y, size_t n) { sr_run(p, x, y, NULL, n); }

static void k_sr_cls(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n)
{
    sr_run(p, x, y, cnt, n);
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

/* e8m0: unsigned powers of two 2^-127..2^127, no zero, NaN 0xFF. A positive
 * normal float32 x = 2^e (1 + M 2^-23) rounds to 2^e or 2^(e+1), on the bit
 * pattern: (E + up) << 23, where up is the mode's rule on the 23 discarded
 * bits M. The kept significand is 1, which is odd: rne breaks ties up (as
 * rna) and rto is rtz. Beyond 2^127 is the overflow result; a negative or
 * zero x gives NaN (class overflow / zero), as the reference path does. The
 * rare positive float32 subnormals (E == 0) round below 2^-127 or to it;
 * they are redone by amp_round1 after the vector pass (e8_run). */
#define E8_ARGS uint32_t s1, uint32_t s2, uint32_t ovf0, uint32_t ovfc0, uint32_t inf0, uint32_t inf1
#define E8_PASS(p) (p)->sr_s1, (p)->sr_s2, (p)->ovf_res[0], (p)->ovf_cls[0], (p)->inf_res[0], (p)->inf_res[1]

static inline __attribute__((always_inline)) uint32_t
e8_elem(uint32_t u, int mode, int want_cls, uint32_t *cls_out, uint32_t rhi, E8_ARGS)
{
    uint32_t a = u & 0x7fffffffu, neg = u >> 31, E = a >> 23, M = a & 0x7fffffu;
    uint32_t up;
    switch (mode) {
    case AMP_RND_NE: case AMP_RND_NA: up = M >= 0x400000u; break;
    case AMP_RND_UP: up = M != 0; break;
    case AMP_RND_SR: up = (rhi >> s1) < (M >> s2); break;
    default: up = 0; break;                  /* rtz, rdn (x > 0), rto */
    }
    uint32_t ovf = E + up > 254u;
    uint32_t is_nan = a > 0x7f800000u, is_inf = a == 0x7f800000u, is_zero = a == 0;
    uint32_t res = sel(ovf, ovf0, (E + up) << 23);
    res = sel(neg | is_zero, 0x7fc00000u, res);
    res = sel(is_inf, sel(neg, inf1, inf0), res);
    res = sel(is_nan, u | 0x00400000u, res);
    if (want_cls) {
        uint32_t sp = is_nan | is_inf | is_zero, sub = (E == 0) & (M != 0) & (neg ^ 1u);
        uint32_t negf = neg & (sp ^ 1u), ov = ovf & ((sp | neg | sub) ^ 1u);
        cls_out[AMP_CLS_NAN_IN] += is_nan;
        cls_out[AMP_CLS_INF_IN] += is_inf;
        cls_out[AMP_CLS_ZERO_IN] += is_zero;
        cls_out[AMP_CLS_OVERFLOW] += negf + (ov & (ovfc0 == AMP_CLS_OVERFLOW));
        cls_out[AMP_CLS_SATURATED] += ov & (ovfc0 != AMP_CLS_OVERFLOW);
        cls_out[AMP_CLS_ROUNDED] += (M != 0) & ((sp | neg | sub | ovf) ^ 1u);
    }
    return res;
}

#define DEF_E8(NAME, MODE)                                                                          \
    AMP_CLONES static void NAME(const uint32_t *restrict x, uint32_t *restrict y, const uint32_t *restrict hi, \
                                uint32_t *restrict cnt, size_t n, E8_ARGS)                          \
    {                                                                                               \
        uint32_t c[AMP_CLS_COUNT] = { 0 };                                                          \
        if (!cnt)                                                                                   \
            for (size_t i = 0; i < n; i++) y[i] = e8_elem(x[i], MODE, 0, c, hi[i], s1, s2, ovf0, ovfc0, inf0, inf1); \
        else {                                                                                      \
            for (size_t i = 0; i < n; i++) y[i] = e8_elem(x[i], MODE, 1, c, hi[i], s1, s2, ovf0, ovfc0, inf0, inf1); \
            for (int k_ = 0; k_ < AMP_CLS_COUNT; k_++) cnt[k_] += c[k_];                           \
        }                                                                                           \
    }
DEF_E8(k_e8_ne, AMP_RND_NE)
DEF_E8(k_e8_up, AMP_RND_UP)
DEF_E8(k_e8_tz, AMP_RND_TZ)
DEF_E8(k_e8_sr, AMP_RND_SR)

typedef void (*e8_fn)(const uint32_t *, uint32_t *, const uint32_t *, uint32_t *, size_t, E8_ARGS);

/* cnt == NULL: no class counts */
static void e8_run(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n)
{
    amp_rounding m = p->ro->mode;
    e8_fn k = m == AMP_RND_NE || m == AMP_RND_NA ? k_e8_ne : m == AMP_RND_UP ? k_e8_up : m == AMP_RND_SR ? k_e8_sr : k_e8_tz;
    uint32_t hi[SR_GROUP], lo[SR_GROUP];
    memset(hi, 0, sizeof hi);
    for (size_t i = 0; i < n; i += SR_GROUP) {
        size_t g = n - i < SR_GROUP ? n - i : SR_GROUP;
        if (m == AMP_RND_SR) sr_draws(hi, lo, p->sr_key, p->sr_idx0 + i, g);
        k(x + i, y + i, hi, cnt, g, E8_PASS(p));
        uint32_t any = 0;
        for (size_t j = 0; j < g; j++) any |= (x[i + j] - 1u) < 0x007fffffu;   /* positive subnormal */
        for (size_t j = 0; any && j < g; j++)
            if ((x[i + j] - 1u) < 0x007fffffu) {
                amp_class c;
                y[i + j] = amp_f2u(amp_round1(p->fmt, p->ro, amp_u2f(x[i + j]), p->sr_idx0 - p->ro->index0 + i + j, &c));
                if (cnt && c != AMP_CLS_EXACT) cnt[c]++;
            }
    }
}

static void k_e8(const kparams *p, const uint32_t *x, uint32_t *y, size_t n) { e8_run(p, x, y, NULL, n); }

static void k_e8_cls(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n)
{
    e8_run(p, x, y, cnt, n);
}

static const kern_fn kernels[] = {
    [AMP_RND_NE] = k_ne, [AMP_RND_NA] = k_na, [AMP_RND_TZ] = k_tz,
    [AMP_RND_UP] = k_up, [AMP_RND_DN] = k_dn, [AMP_RND_TO] = k_to, [AMP_RND_SR] = k_sr,
};
static const kern_cls_fn kernels_cls[] = {
    [AMP_RND_NE] = k_ne_cls, [AMP_RND_NA] = k_na_cls, [AMP_RND_TZ] = k_tz_cls,
    [AMP_RND_UP] = k_up_cls, [AMP_RND_DN] = k_dn_cls, [AMP_RND_TO] = k_to_cls, [AMP_RND_SR] = k_sr_cls,
};

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
    return t;
}

/* e8m0 by its traits (the exponent-only kernels above) */
static int e8_params(const amp_format *f, const amp_round_opts *o, kparams *p)
{
    if ((o->flags & AMP_EXACT) || f->mbits != 0 || f->has_subnormals || f->is_signed || f->has_inf ||
        f->nan != AMP_NAN_E8M0 || f->emin != -127 || f->emax != 127 || f->max_finite != 0x1p127)
        return 0;
    memset(p, 0, sizeof *p);
    p->e8 = 1;
    p->sh = 23;
    for (int neg = 0; neg < 2; neg++) {
        amp_class c;
        p->ovf_res[neg] = amp_f2u(amp_round_overflow(f, o, neg, &c));
        p->ovf_cls[neg] = (uint32_t)c;
        p->inf_res[neg] = amp_f2u(amp_round1(f, o, neg ? -INFINITY : INFINITY, 0, NULL));
    }
    return 1;
}

static int fast_params(const amp_format *f, const amp_round_opts *o, kparams *p)
{
    if (e8_params(f, o, p)) return 1;
    if ((o->flags & AMP_EXACT) || !f->has_subnormals || !f->is_signed ||
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

static const char *const simd_names[] = { [AMP_SIMD_GENERIC] = "generic", [AMP_SIMD_AVX512] = "avx512",
                                           [AMP_SIMD_GFNI] = "gfni" };

const char *amp_simd_name(amp_simd s)
{
    return s >= AMP_SIMD_GENERIC && s <= AMP_SIMD_GFNI ? simd_names[s] : "auto";
}

amp_status amp_simd_parse(const char *s, amp_simd *out)
{
    for (int i = AMP_SIMD_AUTO; i <= AMP_SIMD_GFNI; i++)
        if (!strcmp(s, amp_simd_name((amp_simd)i))) {
            *out = (amp_simd)i;
            return AMP_OK;
        }
    return amp_fail(AMP_EINVAL, "unknown kernel paths '%s' (auto, generic, avx512, gfni)", s);
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

/* k over x[0..n) in blocks that stay in L1, each block's non-finite results
 * counted into *bad while it is there (the SR index moves with the block). */
static void run_counted(kern_fn k, const kparams *p, const uint32_t *x, uint32_t *y, size_t n, size_t *bad)
{
    size_t b = 0;
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        kparams pb = *p;
        pb.sr_idx0 = p->sr_idx0 + i;
        k(&pb, x + i, y + i, m);
        b += amp_count_nonfinite((const float *)(const void *)(y + i), m);
    }
    *bad += b;
}

int amp_round_fast_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                       size_t n, amp_stats *st, size_t *nonfinite)
{
    const pcache *pc = cached_params(f, o);
    if (!pc->ok) return 0;
    kparams p = pc->p;
    p.fmt = f;
    p.ro = o;
    p.sr_idx0 = o->index0;
    if (o->mode == AMP_RND_SR) {
        uint32_t kc = o->sr_bits > 0 && o->sr_bits < 64 ? (uint32_t)o->sr_bits : 64u;
        p.sr_key = sr_key(o->seed, o->stream);
        uint32_t ke = kc < p.sh ? kc : p.sh;
        p.sr_s1 = ke ? 32 - ke : 31;        /* sh == 0 (float32): low is 0, never rounds up */
        p.sr_s2 = p.sh - ke;
        p.sr_mhi = kc >= 32 ? ~0u : ~((1u << (32 - kc)) - 1u);
        p.sr_mlo = kc == 64 ? ~0u : kc <= 32 ? 0u : ~((1u << (64 - kc)) - 1u);
    }
    const uint32_t *xu = (const uint32_t *)(const void *)x;
    uint32_t *yu = (uint32_t *)(void *)y;
    if (p.e8) {
        if (!st && nonfinite) run_counted(k_e8, &p, xu, yu, n, nonfinite);
        else if (!st) k_e8(&p, xu, yu, n);
        else amp_round_stats_f32(&p, NULL, k_e8_cls, machine_paths(), x, y, n, st);
        return 1;
    }
    if (!st) {
        kern_fn k = p.rne_ok ? (p.int_sub ? k_rne_int : k_rne_sub) : kernels[o->mode];
#ifdef AMP_HIST512
        if (p.rne_ok && machine_paths()) k = amp_rne512;
        else if (machine_paths() && amp_dir512_ok()) k = amp_dir512;
#endif
        if (nonfinite) run_counted(k, &p, xu, yu, n, nonfinite);
        else k(&p, xu, yu, n);
        return 1;
    }
    amp_round_stats_f32(&p, p.rne_ok ? &pc->thr : NULL, kernels_cls[o->mode], machine_paths(), x, y, n, st);
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
