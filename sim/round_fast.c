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
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define AMP_CLONES __attribute__((target_clones("avx2", "default")))
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

#define BLOCK 1024

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
                 uint32_t maxbits, float cadd, uint32_t ovf0, uint32_t ovf1, uint32_t ovfc0,   \
                 uint32_t ovfc1, uint32_t zsign
#define RNE_PASS(p) (p)->sh, (p)->mask, (p)->half - 1u, (p)->sh ? 1u : 0u, (p)->minnorm,       \
                 (p)->maxbits, (p)->cadd, (p)->ovf_res[0], (p)->ovf_res[1], (p)->ovf_cls[0],    \
                 (p)->ovf_cls[1], (p)->zsign
#define RNE_NAMES sh, mask, half_m1, one, minnorm, maxbits, cadd, ovf0, ovf1, ovfc0, ovfc1, zsign

static inline __attribute__((always_inline)) uint32_t
rne_elem(uint32_t u, int int_sub, int want_cls, uint32_t *cnt, RNE_ARGS)
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
    uint32_t flush = r == 0;
    uint32_t res = sel(flush, s & zsign, r | s);
    res = sel(ovf, sel(is_nan, u | 0x00400000u, sel(neg, ovf1, ovf0)), res);
    if (want_cls) {
        uint32_t is_zero = a == 0, is_inf = a == 0x7f800000u;
        uint32_t sp = is_nan | is_inf | is_zero;
        uint32_t ov = ovf & (sp ^ 1u);
        uint32_t ov_is_ovf = sel(neg, ovfc1, ovfc0) == AMP_CLS_OVERFLOW;
        uint32_t fl = flush & ((sp | ovf) ^ 1u);
        uint32_t sb = (uint32_t)((int32_t)r < (int32_t)minnorm) & ((sp | ovf | flush) ^ 1u);
        cnt[AMP_CLS_NAN_IN] += is_nan;
        cnt[AMP_CLS_INF_IN] += is_inf;
        cnt[AMP_CLS_ZERO_IN] += is_zero;
        cnt[AMP_CLS_OVERFLOW] += ov & ov_is_ovf;
        cnt[AMP_CLS_SATURATED] += ov & (ov_is_ovf ^ 1u);
        cnt[AMP_CLS_FLUSHED] += fl;
        cnt[AMP_CLS_SUBNORMAL] += sb;
        cnt[AMP_CLS_ROUNDED] += (uint32_t)(r != a) & ((sp | ovf | flush | sb) ^ 1u);
    }
    return res;
}

#define DEF_RNE(NAME, INT_SUB)                                                                  \
    AMP_CLONES static void NAME##_body(const uint32_t *restrict x, uint32_t *restrict y,       \
                                       size_t n, RNE_ARGS)                                     \
    {                                                                                           \
        uint32_t c_[AMP_CLS_COUNT];                                                             \
        for (size_t i = 0; i < n; i++) y[i] = rne_elem(x[i], INT_SUB, 0, c_, RNE_NAMES);       \
    }                                                                                           \
    AMP_CLONES static void NAME##_cls_body(const uint32_t *restrict x, uint32_t *restrict y,   \
                                           uint32_t *restrict cnt, size_t n, RNE_ARGS)         \
    {                                                                                           \
        uint32_t c[AMP_CLS_COUNT] = { 0 };                                                      \
        for (size_t i = 0; i < n; i++) y[i] = rne_elem(x[i], INT_SUB, 1, c, RNE_NAMES);        \
        for (int k_ = 0; k_ < AMP_CLS_COUNT; k_++) cnt[k_] += c[k_];                           \
    }                                                                                           \
    static void NAME(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)                \
    {                                                                                           \
        NAME##_body(x, y, n, RNE_PASS(p));                                                      \
    }                                                                                           \
    static void NAME##_cls(const kparams *p, const uint32_t *x, uint32_t *y, uint32_t *cnt, size_t n) \
    {                                                                                           \
        NAME##_cls_body(x, y, cnt, n, RNE_PASS(p));                                             \
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

/* Statistics of one block: x, y as bits, cls from the kernel. Error sums only
 * over finite nonzero x with finite y. The histogram is kept by float32
 * exponent field in 4 interleaved copies (no store-to-load stalls when
 * neighbouring values share a binade) and folded per chunk. */
typedef struct blockacc {
    uint32_t cls[AMP_CLS_COUNT];       /* all but exact (the rest) */
    uint32_t hist[4][256];
    uint64_t sub_hist[32];             /* float32 subnormal inputs by bit length */
    uint32_t amax, amin;               /* magnitude bits */
    double sum_sq_err, sum_sq, sum_rel_sq;
    uint64_t n_rel;
} blockacc;

AMP_CLONES static void block_stats(blockacc *acc, const uint32_t *restrict x, const uint32_t *restrict y,
                                   size_t n)
{
    /* amax over non-NaN, amin over finite nonzero: two plain min/max reductions */
    uint32_t amax = acc->amax, amin = acc->amin;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = x[i] & 0x7fffffffu;
        uint32_t mx = sel(a <= 0x7f800000u, a, 0u);
        amax = amax > mx ? amax : mx;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t a = x[i] & 0x7fffffffu;
        uint32_t mn = sel(a - 1u < 0x7f7fffffu, a, 0x7f800000u);   /* 0 < a < inf */
        amin = amin < mn ? amin : mn;
    }
    acc->amax = amax;
    acc->amin = amin;
    /* Error sums: the masked operands are gathered in float32 arrays
     * (vectorised), then the terms are formed and summed in double in 4 fixed
     * lanes (a float sum cannot be reordered, so the lanes are explicit; the
     * order is fixed, hence deterministic). y - x of two floats is exact in
     * double; the quotient too is taken in double (in float it could overflow:
     * a tiny x rounded up to a huge ulp by a directed mode). */
    float yv[BLOCK], xv[BLOCK], qv[BLOCK];
    uint32_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t xu = x[i], yu = y[i];
        uint32_t a = xu & 0x7fffffffu, b = yu & 0x7fffffffu;
        uint32_t ok = (a - 1u < 0x7f7fffffu) & (b < 0x7f800000u);   /* finite nonzero x, finite y */
        yv[i] = amp_u2f(sel(ok, yu, 0u));
        xv[i] = amp_u2f(sel(ok, xu, 0u));
        qv[i] = amp_u2f(sel(ok, xu, 0x3f800000u));                     /* 1.0f where not ok */
        nr += ok;
    }
    size_t n4 = n & ~(size_t)3;
    double lse[4] = { 0 }, lsq[4] = { 0 }, lsr[4] = { 0 };
    for (size_t i = 0; i < n4; i += 4)
        for (int j = 0; j < 4; j++) {
            double xx = xv[i + j], d = (double)yv[i + j] - xx, r = d / (double)qv[i + j];
            lse[j] += d * d;
            lsq[j] += xx * xx;
            lsr[j] += r * r;
        }
    for (size_t i = n4; i < n; i++) {
        double xx = xv[i], d = (double)yv[i] - xx, r = d / (double)qv[i];
        lse[0] += d * d;
        lsq[0] += xx * xx;
        lsr[0] += r * r;
    }
    double se = 0, sq = 0, sr = 0;
    for (int j = 0; j < 4; j++) {
        se += lse[j];
        sq += lsq[j];
        sr += lsr[j];
    }
    acc->sum_sq_err += se;
    acc->sum_sq += sq;
    acc->sum_rel_sq += sr;
    acc->n_rel += nr;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        acc->hist[0][(x[i] >> 23) & 0xff]++;
        acc->hist[1][(x[i + 1] >> 23) & 0xff]++;
        acc->hist[2][(x[i + 2] >> 23) & 0xff]++;
        acc->hist[3][(x[i + 3] >> 23) & 0xff]++;
    }
    for (; i < n; i++) acc->hist[0][(x[i] >> 23) & 0xff]++;
    /* field 0 holds zeros and float32 subnormals: split them by bit length */
    if (acc->hist[0][0] | acc->hist[1][0] | acc->hist[2][0] | acc->hist[3][0]) {
        for (size_t j = 0; j < n; j++) {
            uint32_t a = x[j] & 0x7fffffffu;
            if (a != 0 && a < 0x00800000u) acc->sub_hist[31 - __builtin_clz(a)]++;
        }
        acc->hist[0][0] = acc->hist[1][0] = acc->hist[2][0] = acc->hist[3][0] = 0;
    }
}

static void hist_add(amp_stats *st, int binade, uint64_t count)
{
    int b = binade - AMP_HIST_LO;
    st->hist[b < 0 ? 0 : b >= AMP_HIST_BINS ? AMP_HIST_BINS - 1 : b] += count;
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

int amp_round_fast_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                       size_t n, amp_stats *st)
{
    kparams p;
    if (!fast_params(f, o, &p)) return 0;
    const uint32_t *xu = (const uint32_t *)(const void *)x;
    uint32_t *yu = (uint32_t *)(void *)y;
    if (!st) {
        kern_fn k = p.rne_ok ? (p.int_sub ? k_rne_int : k_rne_sub) : kernels[o->mode];
        k(&p, xu, yu, n);
        return 1;
    }
    blockacc acc;
    memset(&acc, 0, sizeof acc);
    acc.amin = 0x7f800000u;
    uint32_t xin[BLOCK];
    kern_cls_fn kc = p.rne_ok ? (p.int_sub ? k_rne_int_cls : k_rne_sub_cls) : kernels_cls[o->mode];
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t len = n - i < BLOCK ? n - i : BLOCK;
        const uint32_t *xb = xu + i;
        if ((const void *)x == (void *)y) {      /* in place: keep the inputs for the stats */
            memcpy(xin, xb, len * sizeof *xin);
            xb = xin;
        }
        kc(&p, xb, yu + i, acc.cls, len);
        block_stats(&acc, xb, yu + i, len);
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
    for (int field = 1; field < 255; field++) {
        uint64_t c = (uint64_t)acc.hist[0][field] + acc.hist[1][field] + acc.hist[2][field] + acc.hist[3][field];
        if (c) hist_add(st, field - 127, c);
    }
    for (int bl = 0; bl < 32; bl++)
        if (acc.sub_hist[bl]) hist_add(st, bl - 149, acc.sub_hist[bl]);
    return 1;
}
