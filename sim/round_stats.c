/* The statistics of the fast rounding kernels: per block of BLOCK values
 * (still in L1) the scan, the histogram and the error sums, fused with the
 * rounding (see the numbered list below), and their sum into amp_stats. The
 * AVX-512 / GFNI versions of the hot loops are in sim/round_avx512.c. */
#include "round_kernels.h"

/* Statistics of one block (BLOCK values, still in L1), block_round_stats:
 *  1. the scan: the float32 exponent field of each x as a byte, amax and amin.
 *     Under rne it runs in the kernel's own loop (k_rne_scan_*, or
 *     amp_rne_scan512 with AVX-512) and also counts the classes by thresholds on
 *     |x|: rounding is monotone and sign-symmetric, so each class is a range
 *     of |x| (rne_thresholds). Other modes count classes in their kernel
 *     (round_elem) and scan after it (block_scan); with AVX-512, kernel,
 *     class counters and scan are one loop (amp_dir_scan512, sr draws
 *     included). Blocks with NaN, inf or
 *     float32 subnormal inputs take a scalar pass for what the reductions
 *     cannot tell (block_nonfinite, block_rare).
 *  2. the histogram of the exponent fields: with GFNI, 8 fields per window
 *     counted by bit transposes (amp_hist_gfni) for blocks spanning up to
 *     HIST_GF_SPAN binades; else byte compares against HIST_WAYS occupied
 *     fields at a time with byte counters (block_hist, amp_hist512) up to
 *     HIST_VEC_SPAN; else a scalar loop over 4 copies. Only the fields that
 *     occur are ever cleared (hist_open).
 *  3. the error sums over finite nonzero x with finite y: under rne in float32
 *     with a power-of-two block scale (block_sums_rne, below, or
 *     amp_sums_rne512; only x^2 when every value rounds exactly); otherwise in
 *     double in 8 fixed lanes (block_sums): y - x is exact in double, the
 *     relative error (y - x) / x is divided in float32 (relative error 2^-23
 *     at most per term) and squared in double; a block where that quotient
 *     overflows float32 (a directed mode rounding a tiny x up to a large
 *     quantum) is redone with the quotient in double (with AVX-512:
 *     amp_sums_dbl512, the same lanes and bits). Every sum is added in a
 *     fixed order, so the bytes do not depend on the thread count. */
#define HIST_VEC_SPAN 48
typedef uint8_t vu8 __attribute__((vector_size(VB)));
typedef uint16_t vu16 __attribute__((vector_size(VB)));
typedef uint32_t vu32 __attribute__((vector_size(VB)));
typedef uint64_t vu64 __attribute__((vector_size(VB)));
_Static_assert(BLOCK / VB <= 255, "byte counters of block_hist cannot overflow");

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
            c3 += (ia >= t.tn) & (ia <= t.tmax) & (((ia & (int32_t)mask) != 0) | (ia < (int32_t)minnorm));
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
    rne_thr t = { 0, 0, 0 };                      /* unused: no classes here */
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
/* one term of block_sums_rne: value i of X, Y into lane j; with `masked`,
 * a value whose y is not finite is left out; with `ident` (y == x) only x^2 */
#define SUM_TERM(X, Y, i, j)                                                                    \
    do {                                                                                        \
        float xx = X[i], yy = Y[i];                                                             \
        if (ident) {                                                                            \
            float xs = xx * scale;                                                              \
            lsq[j] += xs * xs;                                                                  \
            break;                                                                              \
        }                                                                                       \
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
              double unscale2, int masked, int ident)
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
    if (!ident) acc->sum_sq_err += dse[0] * unscale2;   /* else += 0 */
    acc->sum_sq += dsq[0] * unscale2;
    if (!ident) acc->sum_rel_sq += dsr[0];
}
#undef SUM_TERM

AMP_CLONES static void block_sums_rne(blockacc *acc, const float *restrict x, const float *restrict y, size_t n,
                                      float scale, double unscale2)
{
    sums_rne_body(acc, x, y, n, scale, unscale2, 0, 0);
}

AMP_CLONES static void block_sums_rne_masked(blockacc *acc, const float *restrict x, const float *restrict y,
                                             size_t n, float scale, double unscale2)
{
    sums_rne_body(acc, x, y, n, scale, unscale2, 1, 0);
}

/* y == x for every value: only the sum of squares (the others add +0) */
AMP_CLONES static void block_sums_rne_ident(blockacc *acc, const float *restrict x, const float *restrict y,
                                            size_t n, float scale, double unscale2)
{
    sums_rne_body(acc, x, y, n, scale, unscale2, 0, 1);
}

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
                              const uint32_t *x, uint32_t *y, size_t n, int paths, int dir, int *spec)
{
    uint8_t e8[BLOCK + VB];
    scan sc;
    (void)dir, (void)spec;                        /* used by the AVX-512 paths only */
    uint32_t n_fin_y = 0;
    amp_class ovf_cls = (amp_class)p->ovf_cls[0];     /* rne: overflow or saturated, either sign */
    if (thr) {
#ifdef AMP_HIST512
        if (!paths || !amp_rne_scan512(p, &sc, x, y, e8, n, *thr, spec))
#endif
            (p->int_sub ? k_rne_scan_int : k_rne_scan_sub)(p, &sc, x, y, e8, n, *thr);
        uint32_t le = sc.c[4], fin = (uint32_t)n, inf = 0;
        if (sc.amax >= 0x7f800000u) block_nonfinite(x, n, &fin, &inf);   /* NaN or inf inputs */
        n_fin_y = ovf_cls == AMP_CLS_SATURATED ? fin : le;   /* finite x with finite y */
        acc->cls[AMP_CLS_ZERO_IN] += sc.c[0];
        acc->cls[AMP_CLS_FLUSHED] += sc.c[1] - sc.c[0];
        acc->cls[AMP_CLS_SUBNORMAL] += sc.c[2] - sc.c[1];
        acc->cls[AMP_CLS_ROUNDED] += sc.c[3];
        acc->cls[AMP_CLS_INF_IN] += inf;
        acc->cls[AMP_CLS_NAN_IN] += (uint32_t)n - fin - inf;
        acc->cls[ovf_cls] += fin - le;
    } else {
#ifdef AMP_HIST512
        if (!(dir & 2) || !amp_dir_scan512(p, &sc, acc->cls, x, y, e8, n))
#endif
        {
            kc(p, x, y, acc->cls, n);
            block_scan(&sc, x, e8, n);
        }
    }
    uint32_t amax = sc.amax, amin = sc.amin_m1 < 0x7f7fffffu ? sc.amin_m1 + 1u : 0x7f800000u;
    uint32_t nmin = amin, nmax = amax;
    if (amax >= 0x7f800000u || amin < 0x00800000u) block_rare(acc, x, n, &amax, &nmin, &nmax);
    if (amax > acc->amax) acc->amax = amax;
    if (amin < acc->amin) acc->amin = amin;
    if (nmin <= nmax) {                           /* some finite normal input */
        uint32_t lo = nmin >> 23, hi = nmax >> 23;
        hist_open(acc, 0, lo, hi);
        if (hi - lo < (paths > 1 ? HIST_GF_SPAN : HIST_VEC_SPAN)) {
            size_t nv = (n + VB - 1) / VB * VB;
            memset(e8 + n, 0, VB);                /* to nv; field 0 is never counted here */
#ifdef AMP_HIST512
            if (paths > 1) amp_hist_gfni(acc->hist[0], e8, nv, lo, hi);
            else if (paths) amp_hist512(acc->hist[0], e8, nv, lo, hi);
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
        uint32_t top = ovf_cls == AMP_CLS_SATURATED || amax <= (uint32_t)thr->tmax ? amax : (uint32_t)thr->tmax;
        int e = (int)(top >> 23) - 127, k = 60 - e > 127 ? 127 : 60 - e;
        const float *xf = (const float *)(const void *)x, *yf = (const float *)(const void *)y;
        double se0 = acc->sum_sq_err;
        int masked = ovf_cls != AMP_CLS_SATURATED && amax > (uint32_t)thr->tmax;
        float scale = amp_u2f((uint32_t)(127 + k) << 23);
        double unscale2 = amp_u2d((uint64_t)(1023 - 2 * k) << 52);
        /* y == x: float32 itself, or every value exact (no flush, subnormal, inexact or overflow) */
        int ident = (!p->sh && p->int_sub && !masked) ||
                    (sc.c[1] == sc.c[0] && sc.c[2] == sc.c[0] && !sc.c[3] && sc.c[4] == (uint32_t)n);
#ifdef AMP_HIST512
        if (paths) amp_sums_rne512(acc, xf, yf, n, scale, unscale2, masked, ident);
        else
#endif
            (ident ? block_sums_rne_ident : masked ? block_sums_rne_masked : block_sums_rne)(acc, xf, yf, n, scale,
                                                                                            unscale2);
        if (amin < 0x7f800000u && (int)(top >> 23) - (int)(amin >> 23) > 85)   /* see block_sums_rne */
            acc->sum_sq_err = se0 + block_sq_err(xf, yf, n);
        /* finite nonzero x with finite y: overflowing values are out unless saturated */
        acc->n_rel += n_fin_y - sc.c[0];
    } else {
#ifdef AMP_HIST512
        if (!(dir & 1) || !amp_sums_dbl512(acc, x, y, n))
#endif
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

void amp_round_stats_f32(const kparams *p, const rne_thr *thr, kern_cls_fn kc, int paths, const float *x,
                         float *y, size_t n, amp_stats *st)
{
    const uint32_t *xu = (const uint32_t *)(const void *)x;
    uint32_t *yu = (uint32_t *)(void *)y;
    blockacc acc;
    acc_init(&acc);
    uint32_t xin[BLOCK];
    int spec = 1;                                 /* amp_rne_scan512: no overflow so far */
    int dir = 0;                                  /* round_avx512_dir.c: 1 the double sums, 2 the kernel */
#ifdef AMP_HIST512
    if (paths && amp_dir512_ok() && !p->e8) dir = 3;   /* e8m0: its own kernels, faster with block_sums */
#endif
    kparams pb = *p;                              /* sr: the index of each block's first value */
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t len = n - i < BLOCK ? n - i : BLOCK;
        const uint32_t *xb = xu + i;
        if ((const void *)x == (void *)y) {      /* in place: keep the inputs for the stats */
            memcpy(xin, xb, len * sizeof *xin);
            xb = xin;
        }
        pb.sr_idx0 = p->sr_idx0 + i;
        block_round_stats(&acc, &pb, thr, kc, xb, yu + i, len, paths, dir, &spec);
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
}
