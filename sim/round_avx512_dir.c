/* The AVX-512 paths of the modes other than plain rne (rna, rtz, rup, rdn,
 * rto, sr, and rne with ftz/daz): the rounding of round_elem (sim/round_fast.c),
 * the class counters and the scan of a block in one loop, with the sr draws
 * computed in the same loop; and the double error sums of block_sums
 * (sim/round_stats.c). Each gives the bits of its generic counterpart
 * (tests/check_round_stats.c paths_same_bits; make check-exhaustive).
 *
 * The rounding is round_elem's, written with masks: the relative-quantum
 * result on the bit pattern, the fixed-quantum result (target subnormal,
 * emin > -126) from k = |x| 2^(mbits-emin) split into integer and fraction,
 * then flush, overflow and the sign. Without statistics inf and NaN inputs
 * take their results at the end; with statistics a block with one (amax at
 * or above the inf pattern) is redone by the generic kernels
 * (block_round_stats).
 *
 * The classes, for finite x (r: the magnitude bits after rounding, before the
 * flush and range checks; flush: r == 0, or ftz and r < min normal, or daz and
 * |x| < min normal):
 *   zero      |x| == 0 (every zero flushes),
 *   flushed   flush and not zero,
 *   overflow / saturated   r > max finite, by the sign's overflow class,
 *   subnormal r < min normal and not flush,
 *   rounded   r != |x| (inexact) and none of the above,
 * the same partition as round_elem's first-that-applies flags.
 *
 * sr: the draw of element i is sr_draw(key, index0 + i), eight 64-bit lanes
 * per vector (vpmullq), key + index * golden kept as a running sum; the high
 * 32-bit halves of 16 draws are gathered into one vector in element order;
 * the fixed-quantum path gathers the low halves only for a vector where some
 * high half equals its threshold's. */
#include "round_kernels.h"

#ifdef AMP_HIST512
#define TD __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define AI static inline __attribute__((always_inline))

typedef struct dir512 {
    __m512i absm, mask, half, q1, minnorm, maxbits, ovf0, ovf1, inf0, inf1, one;
    __m512 sub_mul, sub_q;
    __m128i s1, s2;
    __m512i mhi, mlo;
    __mmask16 ftz, daz;
    /* sr: key + index * golden for lanes 0-7 / 8-15, the step of 16 indices */
    __m512i ka, kb, kstep, key, odd, even;
} dir512;

/* the counters of the classes (16 lanes each) and of the scan */
typedef struct dcnt {
    __m512i zero, flush, sub, ovf, ovfneg, rnd, amax, amin;
} dcnt;

#define GOLDEN 0x9e3779b97f4a7c15ULL

/* sr_mix64(z) ^ c (one three-way xor at the end) */
AI TD __m512i mix64v(__m512i z, __m512i c)
{
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ULL));
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0x94d049bb133111ebULL));
    return _mm512_ternarylogic_epi64(z, _mm512_srli_epi64(z, 31), c, 0x96);
}

/* the 16 draws of the next group: values 0-7 in *a, 8-15 in *b; returns
 * their high halves in value order (the low halves: the even words) */
AI TD __m512i draws16(dir512 *k, __m512i *a, __m512i *b)
{
    const __m512i zero = _mm512_setzero_si512();
    *a = mix64v(mix64v(k->ka, k->key), zero);
    *b = mix64v(mix64v(k->kb, k->key), zero);
    k->ka = _mm512_add_epi64(k->ka, k->kstep);
    k->kb = _mm512_add_epi64(k->kb, k->kstep);
    return _mm512_permutex2var_epi32(*a, k->odd, *b);
}

static TD dir512 dir_params(const kparams *p)
{
    dir512 k;
    k.absm = _mm512_set1_epi32(0x7fffffff);
    k.mask = _mm512_set1_epi32((int)p->mask);
    k.half = _mm512_set1_epi32((int)p->half);
    k.q1 = _mm512_set1_epi32((int)(1u << p->sh));
    k.minnorm = _mm512_set1_epi32((int)p->minnorm);
    k.maxbits = _mm512_set1_epi32((int)p->maxbits);
    k.ovf0 = _mm512_set1_epi32((int)p->ovf_res[0]);
    k.ovf1 = _mm512_set1_epi32((int)p->ovf_res[1]);
    k.inf0 = _mm512_set1_epi32((int)p->inf_res[0]);
    k.inf1 = _mm512_set1_epi32((int)p->inf_res[1]);
    k.one = _mm512_set1_epi32(1);
    k.sub_mul = _mm512_set1_ps(p->sub_mul);
    k.sub_q = _mm512_set1_ps(p->sub_q);
    k.s1 = _mm_cvtsi32_si128((int)p->sr_s1);
    k.s2 = _mm_cvtsi32_si128((int)p->sr_s2);
    k.mhi = _mm512_set1_epi32((int)p->sr_mhi);
    k.mlo = _mm512_set1_epi32((int)p->sr_mlo);
    k.ftz = p->ftz ? (__mmask16)0xffff : 0;
    k.daz = p->daz ? (__mmask16)0xffff : 0;
    __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i g = _mm512_set1_epi64((long long)GOLDEN);
    k.key = _mm512_set1_epi64((long long)p->sr_key);
    __m512i i0 = _mm512_add_epi64(_mm512_set1_epi64((long long)p->sr_idx0), lane);
    k.ka = _mm512_add_epi64(k.key, _mm512_mullo_epi64(i0, g));
    k.kb = _mm512_add_epi64(k.key, _mm512_mullo_epi64(_mm512_add_epi64(i0, _mm512_set1_epi64(8)), g));
    k.kstep = _mm512_set1_epi64((long long)(16 * GOLDEN));
    k.odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    k.even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    return k;
}

/* round_elem's magnitude r (before flush and range) of 16 values a of sign
 * mask neg; *small: a < min normal */
AI TD __m512i dir_round(const dir512 *k, __m512i a, __mmask16 neg, int mode, int fix, __m512i rhi, __m512i ra,
                        __m512i rb, __mmask16 *small)
{
    __m512i low = _mm512_and_si512(a, k->mask), tr = _mm512_andnot_si512(k->mask, a), rn;
    __mmask16 up = 0;
    switch (mode) {
    case AMP_RND_NE:
        up = _mm512_cmpgt_epi32_mask(low, k->half) |
             (_mm512_cmpeq_epi32_mask(low, k->half) & _mm512_test_epi32_mask(a, k->q1));
        break;
    case AMP_RND_NA: up = _mm512_cmpge_epi32_mask(low, k->half); break;
    case AMP_RND_UP: up = _mm512_mask_test_epi32_mask((__mmask16)~neg, a, k->mask); break;
    case AMP_RND_DN: up = _mm512_mask_test_epi32_mask(neg, a, k->mask); break;
    case AMP_RND_SR: up = _mm512_cmplt_epu32_mask(_mm512_srl_epi32(rhi, k->s1), _mm512_srl_epi32(low, k->s2)); break;
    default: break;
    }
    if (mode == AMP_RND_TO) rn = _mm512_mask_or_epi32(tr, _mm512_test_epi32_mask(a, k->mask), tr, k->q1);
    else rn = _mm512_mask_add_epi32(tr, up, tr, k->q1);
    *small = _mm512_cmplt_epi32_mask(a, k->minnorm);
    if (!fix) return rn;
    /* the fixed quantum where a < min normal (the generic kernel computes it
     * for every value with a zeroed input elsewhere; only these are used) */
    __m512 kf = _mm512_maskz_mul_ps(*small, _mm512_castsi512_ps(a), k->sub_mul);
    __m512i ti = _mm512_cvttps_epi32(kf);
    __m512 fr = _mm512_sub_ps(kf, _mm512_cvtepi32_ps(ti)), half = _mm512_set1_ps(0.5f), zf = _mm512_setzero_ps();
    __mmask16 nz = _mm512_cmp_ps_mask(fr, zf, _CMP_NEQ_OQ), us = 0;
    switch (mode) {
    case AMP_RND_NE:
        us = _mm512_cmp_ps_mask(fr, half, _CMP_GT_OQ) |
             (_mm512_cmp_ps_mask(fr, half, _CMP_EQ_OQ) & _mm512_test_epi32_mask(ti, k->one));
        break;
    case AMP_RND_NA: us = _mm512_cmp_ps_mask(fr, half, _CMP_GE_OQ); break;
    case AMP_RND_UP: us = nz & (__mmask16)~neg; break;
    case AMP_RND_DN: us = nz & neg; break;
    case AMP_RND_SR: {
        __m512 F = _mm512_mul_ps(fr, _mm512_set1_ps(0x1p32f));
        __m512i th = _mm512_cvttps_epu32(F);
        us = _mm512_cmplt_epu32_mask(rhi, _mm512_and_si512(th, k->mhi));
        __mmask16 eq = _mm512_mask_cmpeq_epi32_mask(*small, rhi, _mm512_and_si512(th, k->mhi));
        if (__builtin_expect(eq != 0, 0)) {      /* equal high halves (rare): the low halves decide */
            __m512i tl = _mm512_cvttps_epu32(_mm512_mul_ps(_mm512_sub_ps(F, _mm512_cvtepu32_ps(th)),
                                                           _mm512_set1_ps(0x1p32f)));
            __m512i rlo = _mm512_permutex2var_epi32(ra, k->even, rb);
            us |= eq & _mm512_cmplt_epu32_mask(rlo, _mm512_and_si512(tl, k->mlo));
        }
        break;
    }
    default: break;
    }
    if (mode == AMP_RND_TO) ti = _mm512_mask_or_epi32(ti, nz, ti, k->one);
    ti = _mm512_mask_add_epi32(ti, us, ti, k->one);
    __m512i rs = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(ti), k->sub_q));
    return _mm512_mask_mov_epi32(rn, *small, rs);
}

/* block_sums (sim/round_stats.c) with AVX-512, the same bits: lane j of each
 * sum takes the values i = j mod 8 in order, in double; the quotient
 * (float)(y - x) / x in float32 (y - x rounded once to float32 is the same
 * number as rounded to double first, 53 >= 2 * 24 + 2). Values that are not
 * finite nonzero x with finite y add +0, as there. Returns 0 (nothing added)
 * when some quotient is not finite: then block_sums redoes it in double. */
AI TD void sums_terms(__m512i xu, __m512i yu, __mmask16 ok, __m512d *se, __m512d *sq, __m512d *sr, __m512i *qmax,
                      __m512i *nr)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), m1 = _mm512_set1_epi32(-1);
    __m512 xf = _mm512_castsi512_ps(_mm512_maskz_mov_epi32(ok, xu)), yf = _mm512_castsi512_ps(_mm512_maskz_mov_epi32(ok, yu));
    __m512 q = _mm512_div_ps(_mm512_sub_ps(yf, xf), _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), ok, xf));
    *qmax = _mm512_max_epu32(*qmax, _mm512_and_si512(_mm512_castps_si512(q), absm));
    *nr = _mm512_mask_sub_epi32(*nr, ok, *nr, m1);
    __m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xf));
    __m512d x1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xf), 1)));
    __m512d y0 = _mm512_cvtps_pd(_mm512_castps512_ps256(yf));
    __m512d y1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(yf), 1)));
    __m512d q0 = _mm512_cvtps_pd(_mm512_castps512_ps256(q));
    __m512d q1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1)));
    __m512d d0 = _mm512_sub_pd(y0, x0), d1 = _mm512_sub_pd(y1, x1);
    *se = _mm512_add_pd(_mm512_add_pd(*se, _mm512_mul_pd(d0, d0)), _mm512_mul_pd(d1, d1));
    *sq = _mm512_add_pd(_mm512_add_pd(*sq, _mm512_mul_pd(x0, x0)), _mm512_mul_pd(x1, x1));
    *sr = _mm512_add_pd(_mm512_add_pd(*sr, _mm512_mul_pd(q0, q0)), _mm512_mul_pd(q1, q1));
}

AI TD void sums_dbl_step(const uint32_t *x, const uint32_t *y, __mmask16 live, __m512d *se, __m512d *sq,
                         __m512d *sr, __m512i *qmax, __m512i *nr)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), m1 = _mm512_set1_epi32(-1);
    __m512i xu = live == 0xffff ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(live, x);
    __m512i yu = live == 0xffff ? _mm512_loadu_si512(y) : _mm512_maskz_loadu_epi32(live, y);
    __m512i xa = _mm512_and_si512(xu, absm), ya = _mm512_and_si512(yu, absm);
    __mmask16 ok = _mm512_cmplt_epu32_mask(_mm512_add_epi32(xa, m1), _mm512_set1_epi32(0x7f7fffff)) &
                   _mm512_cmplt_epu32_mask(ya, _mm512_set1_epi32(0x7f800000)) & live;
    sums_terms(xu, yu, ok, se, sq, sr, qmax, nr);
}

/* 16 values (those in live) of x -> y, the counters if cnt, the exponent bytes */
AI TD void dir_step(dir512 *k, dcnt *c, const uint32_t *x, uint32_t *y, uint8_t *e8, int mode, int fix, int fd,
                    int negz, int cnt, __mmask16 live)
{
    const __m512i m1 = _mm512_set1_epi32(-1);
    __m512i u = live == 0xffff ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi32(live, x);
    if (cnt) {                                    /* the next block, while this one's statistics run
                                                   * (a prefetch past the end does not fault) */
        _mm_prefetch((const char *)(x + BLOCK), _MM_HINT_T1);
        _mm_prefetch((const char *)(y + BLOCK), _MM_HINT_ET1);
    }
    __m512i a = _mm512_and_si512(u, k->absm), rhi = m1, ra = m1, rb = m1;
    __mmask16 neg = _mm512_movepi32_mask(u), small;
    if (mode == AMP_RND_SR) rhi = draws16(k, &ra, &rb);
    __m512i r = dir_round(k, a, neg, mode, fix, rhi, ra, rb, &small);
    __mmask16 ovf = _mm512_cmpgt_epi32_mask(r, k->maxbits), sub = _mm512_cmplt_epi32_mask(r, k->minnorm);
    __mmask16 flush = _mm512_cmpeq_epi32_mask(r, _mm512_setzero_si512());
    if (fd) flush |= (sub & k->ftz) | (small & k->daz);
    __m512i res;
    if (negz) res = _mm512_ternarylogic_epi32(_mm512_maskz_mov_epi32((__mmask16)~flush, r), u, k->absm, 0xf4);
    else res = _mm512_maskz_mov_epi32((__mmask16)~flush, _mm512_ternarylogic_epi32(r, u, k->absm, 0xf4));
    res = _mm512_mask_mov_epi32(res, ovf, _mm512_mask_blend_epi32(neg, k->ovf0, k->ovf1));
    if (!cnt) {                                   /* inf and NaN inputs (with statistics: redone) */
        const __m512i inf = _mm512_set1_epi32(0x7f800000);
        res = _mm512_mask_mov_epi32(res, _mm512_cmpeq_epi32_mask(a, inf), _mm512_mask_blend_epi32(neg, k->inf0, k->inf1));
        res = _mm512_mask_or_epi32(res, _mm512_cmpgt_epi32_mask(a, inf), u, _mm512_set1_epi32(0x00400000));
    }
    if (live == 0xffff) _mm512_storeu_si512(y, res);
    else _mm512_mask_storeu_epi32(y, live, res);
    if (!cnt) return;
    c->amax = _mm512_max_epu32(c->amax, a);
    _mm512_mask_cvtepi32_storeu_epi8(e8, live, _mm512_srli_epi32(a, 23));
    c->amin = _mm512_mask_min_epu32(c->amin, live, c->amin, _mm512_add_epi32(a, m1));
    __mmask16 z = _mm512_cmpeq_epi32_mask(a, _mm512_setzero_si512()) & live;
    __mmask16 sbx = sub & (__mmask16)~flush & live, fl = flush & live, ov = ovf & live;
    __mmask16 rnd = _mm512_mask_cmpneq_epi32_mask((__mmask16)~(sub | ovf | flush) & live, r, a);
    c->zero = _mm512_mask_sub_epi32(c->zero, z, c->zero, m1);
    c->flush = _mm512_mask_sub_epi32(c->flush, fl, c->flush, m1);
    c->sub = _mm512_mask_sub_epi32(c->sub, sbx, c->sub, m1);
    c->ovf = _mm512_mask_sub_epi32(c->ovf, ov, c->ovf, m1);
    c->ovfneg = _mm512_mask_sub_epi32(c->ovfneg, ov & neg, c->ovfneg, m1);
    c->rnd = _mm512_mask_sub_epi32(c->rnd, rnd, c->rnd, m1);
}

AI TD void dir_body(dir512 *k, dcnt *c, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n, int mode, int fix,
                    int fd, int negz, int cnt)
{
    dir512 kl = *k;                               /* locals: kept in registers, no reloads after stores */
    dcnt cl = *c;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) dir_step(&kl, &cl, x + i, y + i, e8 + i, mode, fix, fd, negz, cnt, (__mmask16)0xffff);
    if (i < n) dir_step(&kl, &cl, x + i, y + i, e8 + i, mode, fix, fd, negz, cnt, (__mmask16)((1u << (n - i)) - 1));
    *k = kl;
    *c = cl;
}

typedef void (*dir_fn)(dir512 *, dcnt *, const uint32_t *, uint32_t *, uint8_t *, size_t);
#define DIR_V(M, FIX, FD, NZ, CNT)                                                                       \
    static TD void dir_##M##_##FIX##FD##NZ##CNT(dir512 *k, dcnt *c, const uint32_t *x, uint32_t *y,       \
                                                 uint8_t *e8, size_t n)                                  \
    {                                                                                                    \
        dir_body(k, c, x, y, e8, n, M, FIX, FD, NZ, CNT);                                                \
    }
#define DIR_CNT(M, FIX, FD, NZ) DIR_V(M, FIX, FD, NZ, 0) DIR_V(M, FIX, FD, NZ, 1)
#define DIR_NZ(M, FIX, FD) DIR_CNT(M, FIX, FD, 0) DIR_CNT(M, FIX, FD, 1)
#define DIR_FD(M, FIX) DIR_NZ(M, FIX, 0) DIR_NZ(M, FIX, 1)
#define DIR_MODE(M) DIR_FD(M, 0) DIR_FD(M, 1)
DIR_MODE(0) DIR_MODE(1) DIR_MODE(2) DIR_MODE(3) DIR_MODE(4) DIR_MODE(5) DIR_MODE(6)
#define DIR_ROW(M, FIX, FD) { { dir_##M##_##FIX##FD##00, dir_##M##_##FIX##FD##01 }, \
                              { dir_##M##_##FIX##FD##10, dir_##M##_##FIX##FD##11 } }
#define DIR_TAB(M) { { DIR_ROW(M, 0, 0), DIR_ROW(M, 0, 1) }, { DIR_ROW(M, 1, 0), DIR_ROW(M, 1, 1) } }
/* [mode][fix][fd][negz][cnt] */
static const dir_fn dir_tab[AMP_RND_COUNT][2][2][2][2] = {
    DIR_TAB(0), DIR_TAB(1), DIR_TAB(2), DIR_TAB(3), DIR_TAB(4), DIR_TAB(5), DIR_TAB(6),
};
_Static_assert(AMP_RND_NE == 0 && AMP_RND_SR == 6 && AMP_RND_COUNT == 7, "dir_tab rows are the modes");

static dir_fn dir_pick(const kparams *p, int cnt)
{
    return dir_tab[p->ro->mode][!p->int_sub][p->ftz || p->daz][p->zsign != 0][cnt];
}

int amp_dir512_ok(void)
{
    static int dq = -1;
    int m = __atomic_load_n(&dq, __ATOMIC_RELAXED);
    if (m < 0) {
        m = __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl");
        __atomic_store_n(&dq, m, __ATOMIC_RELAXED);
    }
    return m;
}

/* (compiled for AVX-512 like its callers: a 512-bit vector passed to a function
 * built without AVX-512 goes by another ABI, and reads garbage when not inlined) */
AI TD double lanes_in_order(__m512d v)
{
    double l[8], s = 0;
    memcpy(l, &v, sizeof l);
    for (int j = 0; j < 8; j++) s += l[j];
    return s;
}

/* One block with statistics: returns 0 (nothing counted) if the block has a
 * NaN or inf input. */
TD int amp_dir_scan512(const kparams *p, scan *sc, uint32_t *cls, const uint32_t *x, uint32_t *y, uint8_t *e8,
                       size_t n)
{
    dir512 k = dir_params(p);
    const __m512i zero = _mm512_setzero_si512();
    dcnt c = { zero, zero, zero, zero, zero, zero, zero, _mm512_set1_epi32(-1) };
    dir_pick(p, 1)(&k, &c, x, y, e8, n);
    sc->amax = _mm512_reduce_max_epu32(c.amax);
    if (sc->amax >= 0x7f800000u) return 0;
    sc->amin_m1 = _mm512_reduce_min_epu32(c.amin);
    uint32_t nz = (uint32_t)_mm512_reduce_add_epi32(c.zero), nf = (uint32_t)_mm512_reduce_add_epi32(c.flush);
    uint32_t no = (uint32_t)_mm512_reduce_add_epi32(c.ovf), nn = (uint32_t)_mm512_reduce_add_epi32(c.ovfneg);
    cls[AMP_CLS_ZERO_IN] += nz;
    cls[AMP_CLS_FLUSHED] += nf - nz;
    cls[AMP_CLS_SUBNORMAL] += (uint32_t)_mm512_reduce_add_epi32(c.sub);
    cls[AMP_CLS_ROUNDED] += (uint32_t)_mm512_reduce_add_epi32(c.rnd);
    cls[p->ovf_cls[0] == AMP_CLS_OVERFLOW ? AMP_CLS_OVERFLOW : AMP_CLS_SATURATED] += no - nn;
    cls[p->ovf_cls[1] == AMP_CLS_OVERFLOW ? AMP_CLS_OVERFLOW : AMP_CLS_SATURATED] += nn;
    return 1;
}

/* Without statistics, inf and NaN inputs included. */
TD void amp_dir512(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)
{
    dir512 k = dir_params(p);
    dcnt c;
    memset(&c, 0, sizeof c);
    dir_pick(p, 0)(&k, &c, x, y, NULL, n);
}

TD int amp_sums_dbl512(blockacc *acc, const uint32_t *x, const uint32_t *y, size_t n)
{
    __m512d se = _mm512_setzero_pd(), sq = se, sr = se;
    __m512i qmax = _mm512_setzero_si512(), nr = qmax;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) sums_dbl_step(x + i, y + i, (__mmask16)0xffff, &se, &sq, &sr, &qmax, &nr);
    if (i < n) sums_dbl_step(x + i, y + i, (__mmask16)((1u << (n - i)) - 1), &se, &sq, &sr, &qmax, &nr);
    if (_mm512_reduce_max_epu32(qmax) >= 0x7f800000u) return 0;
    acc->sum_sq_err += lanes_in_order(se);
    acc->sum_sq += lanes_in_order(sq);
    acc->sum_rel_sq += lanes_in_order(sr);
    acc->n_rel += (uint32_t)_mm512_reduce_add_epi32(nr);
    return 1;
}
#endif
