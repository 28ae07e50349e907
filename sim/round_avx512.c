/* The hand-written AVX-512 and GFNI paths of the rounding kernels, chosen at
 * run time (amp_set_simd caps them): the fused rne kernel and scan, the rne
 * kernel alone, the histogram passes and the error sums. Each gives the bits
 * of its generic counterpart in sim/round_stats.c and sim/round_fast.c
 * (tests/check_round_stats.c paths_same_bits; make check-exhaustive). */
#include "round_kernels.h"

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
    _mm_prefetch((const char *)(x + BLOCK), _MM_HINT_T1);   /* the next block, while this one's */
    _mm_prefetch((const char *)(y + BLOCK), _MM_HINT_ET1);  /* statistics run (no fault past the end) */
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
T512 int amp_rne_scan512(const kparams *p, scan *sc, const uint32_t *x, uint32_t *y, uint8_t *e8, size_t n,
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
    const rne512 k = rne512_params(p, (rne_thr){ 0, 0, 0 });
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

T512 void amp_rne512(const kparams *p, const uint32_t *x, uint32_t *y, size_t n)
{
    int negz = p->zsign != 0;
    if (p->int_sub) negz ? rne512_body(p, x, y, n, 1, 1) : rne512_body(p, x, y, n, 1, 0);
    else negz ? rne512_body(p, x, y, n, 0, 1) : rne512_body(p, x, y, n, 0, 0);
}

/* block_hist with AVX-512BW: a compare into a mask and a masked byte add per
 * field and 64 bytes (the generic vectors need three operations), and the
 * byte counters summed by vpsadbw. Same counts, about 20% faster. */
__attribute__((target("avx512bw"))) void amp_hist512(uint32_t *hist, const uint8_t *e8, size_t n,
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
 * amp_hist512 takes 16. Byte counters (at most 8 per add) go into 16-bit
 * ones every 31 vectors. Same counts. */
#define GF_WIN 4                           /* windows of 8 fields per pass over the bytes */
#define TGF __attribute__((target("avx512f,avx512bw,avx512vl,gfni,avx512bitalg")))
/* fields [f, f + 8 nw) of amp_hist_gfni: nw windows in one pass */
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

TGF void amp_hist_gfni(uint32_t *hist, const uint8_t *e8, size_t n, uint32_t lo, uint32_t hi)
{
    for (uint32_t f = lo; f <= hi; f += 8 * GF_WIN) {
        uint32_t nw = (hi - f) / 8 + 1;
        if (nw >= 4) hist_gfni_pass(hist, e8, n, f, hi, 4);
        else if (nw == 3) hist_gfni_pass(hist, e8, n, f, hi, 3);
        else if (nw == 2) hist_gfni_pass(hist, e8, n, f, hi, 2);
        else hist_gfni_pass(hist, e8, n, f, hi, 1);
    }
}

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
T512 void amp_sums_rne512(blockacc *acc, const float *x, const float *y, size_t n, float scale,
                                   double unscale2, int masked, int ident)
{
    if (ident) sums512_body(acc, x, y, n, scale, unscale2, 0, 1);
    else if (masked) sums512_body(acc, x, y, n, scale, unscale2, 1, 0);
    else sums512_body(acc, x, y, n, scale, unscale2, 0, 0);
}
#endif
