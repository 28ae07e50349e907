/* The auto power-of-two scale of `ampsim analyze`: class thresholds by
 * bisection, per-k bounds from a signed binade histogram, pruning of every k
 * that another k surely beats, and exact counts of the survivors (see
 * amp_analyze.h for the two rules). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_analyze.h"
#include "analyze_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NK (AMP_ANALYZE_KMAX - AMP_ANALYZE_KMIN + 1)

void an_chunk(const amp_tensor_view *v, size_t first, size_t m, float *buf32, double *x64, const float **x32)
{
    *x32 = NULL;
    if (v->dtype == AMP_DT_F64) {
        amp_tensor_view_to_f64(v, first, m, x64);
        return;
    }
    const unsigned char *p = (const unsigned char *)v->data + first * amp_dtype_size(v->dtype);
    if (v->dtype == AMP_DT_F32 && ((uintptr_t)p & 3) == 0) {
        *x32 = (const float *)(const void *)p;   /* aligned: straight from the mapping */
    } else {
        amp_tensor_view_to_f32(v, first, m, buf32);
        *x32 = buf32;
    }
}


/* Categories of a nonzero finite value's result, monotone in |x| for every
 * deterministic mode: flushed < subnormal < normal < out of range. */
enum { CAT_F, CAT_S, CAT_N, CAT_O, NCAT };

static int category(amp_class c)
{
    switch (c) {
    case AMP_CLS_FLUSHED: return CAT_F;
    case AMP_CLS_SUBNORMAL: return CAT_S;
    case AMP_CLS_OVERFLOW: case AMP_CLS_SATURATED: return CAT_O;
    default: return CAT_N;
    }
}

/* Thresholds of one sign: |x| <= tf flushes; |x| >= tn is normal or above;
 * |x| >= to is out of range (0 / +inf when there is none). */
typedef struct thr { double tf, tn, to; } thr;

static int cat_of(const amp_format *f, const amp_round_opts *o, int neg, uint64_t bits)
{
    amp_class c;
    double a = amp_u2d(bits);
    amp_round1(f, o, neg ? -a : a, 0, &c);
    return category(c);
}

/* Smallest positive finite double whose category is >= want (+inf if none),
 * by bisection on the bit patterns (monotone). */
static double first_at_least(const amp_format *f, const amp_round_opts *o, int neg, int want)
{
    uint64_t lo = 1, hi = 0x7fefffffffffffffULL;
    if (cat_of(f, o, neg, hi) < want) return INFINITY;
    if (cat_of(f, o, neg, lo) >= want) return amp_u2d(lo);
    while (hi - lo > 1) {             /* cat(lo) < want <= cat(hi) */
        uint64_t m = lo + (hi - lo) / 2;
        if (cat_of(f, o, neg, m) >= want) hi = m; else lo = m;
    }
    return amp_u2d(hi);
}

static thr thresholds(const amp_format *f, const amp_round_opts *o, int neg)
{
    thr t;
    double s = first_at_least(f, o, neg, CAT_S);
    t.tf = s == amp_u2d(1) ? 0 : isinf(s) ? 0x1.fffffffffffffp1023 : amp_u2d(amp_d2u(s) - 1);
    t.tn = first_at_least(f, o, neg, CAT_N);
    t.to = first_at_least(f, o, neg, CAT_O);
    return t;
}

static int cat_thr(const thr *t, double a)
{
    return a <= t->tf ? CAT_F : a < t->tn ? CAT_S : a < t->to ? CAT_N : CAT_O;
}

/* Per k: bounds lo/hi of the count of each category. */
typedef struct kb { int64_t lo[NCAT], hi[NCAT]; } kb;

/* The criteria of a rule, from category counts c[]: smaller is better. */
#define NCRIT 3
static void criteria(int count_rule, const int64_t *c, int64_t *out)
{
    if (count_rule) {
        out[0] = c[CAT_F] + c[CAT_O];
        out[1] = c[CAT_O];
        out[2] = 0;
    } else {
        out[0] = c[CAT_O];
        out[1] = c[CAT_F];
        out[2] = -c[CAT_N];
    }
}

static void crit_bounds(int count_rule, const kb *b, int64_t *lo, int64_t *hi)
{
    int64_t a[NCRIT], z[NCRIT];
    criteria(count_rule, b->lo, a);
    criteria(count_rule, b->hi, z);
    for (int i = 0; i < NCRIT; i++) {
        lo[i] = a[i] < z[i] ? a[i] : z[i];   /* -N: the upper count gives the lower bound */
        hi[i] = a[i] < z[i] ? z[i] : a[i];
    }
    if (count_rule) {        /* F + O: the sum of the lower and of the upper bounds */
        lo[0] = b->lo[CAT_F] + b->lo[CAT_O];
        hi[0] = b->hi[CAT_F] + b->hi[CAT_O];
    }
}

static int tie_cmp(int a, int b)
{
    if (abs(a) != abs(b)) return abs(a) < abs(b) ? -1 : 1;
    return (a > b) - (a < b);
}

/* 1 if k = a beats k = b whatever the true counts inside their bounds. */
static int surely_better(const int64_t (*lo)[NCRIT], const int64_t (*hi)[NCRIT], int a, int b)
{
    for (int i = 0; i < NCRIT; i++) {
        if (hi[a][i] < lo[b][i]) return 1;
        if (!(lo[a][i] == hi[a][i] && lo[b][i] == hi[b][i] && lo[a][i] == lo[b][i])) return 0;
    }
    return tie_cmp(a + AMP_ANALYZE_KMIN, b + AMP_ANALYZE_KMIN) < 0;
}

static void bounds(const an_hist *h, const thr *t, int uns, kb *b)
{
    memset(b, 0, NK * sizeof *b);
    for (int s = 0; s < 2; s++) {
        if (uns && s) continue;      /* negatives of an unsigned format: invalid for every k */
        for (int i = 0; i < AN_HBINS; i++) {
            uint64_t c = (*h)[s][i];
            if (!c) continue;
            for (int ki = 0; ki < NK; ki++) {
                int B = i - AN_HOFF + AMP_ANALYZE_KMIN + ki;
                int c0 = cat_thr(&t[s], ldexp(1.0, B)), c1 = cat_thr(&t[s], ldexp(0x1.fffffffffffffp0, B));
                if (c0 == c1) {
                    b[ki].lo[c0] += (int64_t)c;
                    b[ki].hi[c0] += (int64_t)c;
                } else {
                    for (int q = c0; q <= c1; q++) b[ki].hi[q] += (int64_t)c;
                }
            }
        }
    }
}

/* Exact category counts of the candidate exponents ks[0..nc) over v. */
static amp_status exact_counts(const amp_tensor_view *v, const thr *t, int uns, const int *ks, int nc, int64_t (*cnt)[NCAT])
{
    float *b32 = malloc(AN_CHUNK * sizeof *b32);
    double *x64 = malloc(AN_CHUNK * sizeof *x64);
    double *tt = malloc((size_t)nc * 6 * sizeof *tt);
    if (!b32 || !x64 || !tt) { free(b32); free(x64); free(tt); return amp_fail(AMP_ENOMEM, "analyze: out of memory"); }
    for (int j = 0; j < nc; j++)
        for (int s = 0; s < 2; s++) {
            tt[j * 6 + s * 3] = ldexp(t[s].tf, -ks[j]);
            tt[j * 6 + s * 3 + 1] = ldexp(t[s].tn, -ks[j]);
            tt[j * 6 + s * 3 + 2] = ldexp(t[s].to, -ks[j]);
        }
    memset(cnt, 0, (size_t)nc * sizeof *cnt);
    int is64 = v->dtype == AMP_DT_F64;
    for (size_t first = 0; first < v->n; first += AN_CHUNK) {
        size_t m = v->n - first < AN_CHUNK ? v->n - first : AN_CHUNK;
        const float *x32 = NULL;
        an_chunk(v, first, m, b32, x64, &x32);
        for (int j = 0; j < nc; j++) {
            const double *q = &tt[j * 6];
            int64_t f = 0, n = 0, o = 0, nz = 0;
            #pragma omp parallel for reduction(+:f, n, o, nz) num_threads(amp_get_threads())
            for (size_t i = 0; i < m; i++) {
                double x = is64 ? x64[i] : (double)x32[i], a = fabs(x);
                if (!(a > 0) || a == INFINITY) continue;
                int s = x < 0;
                if (uns && s) continue;
                const double *p = q + 3 * s;
                nz++;
                f += a <= p[0];
                o += a >= p[2];
                n += a >= p[1] && a < p[2];
            }
            cnt[j][CAT_F] += f;
            cnt[j][CAT_N] += n;
            cnt[j][CAT_O] += o;
            cnt[j][CAT_S] += nz - f - n - o;
        }
    }
    free(b32);
    free(x64);
    free(tt);
    return AMP_OK;
}

amp_status an_auto_k(const amp_tensor_view *v, const amp_format *f, const amp_round_opts *o, int count_rule,
                     const an_hist *h, int *kout)
{
    amp_round_opts od = *o;
    if (od.mode == AMP_RND_SR) od.mode = AMP_RND_NE;   /* sr: chosen with the rne thresholds */
    od.flags &= ~(unsigned)AMP_EXACT;
    thr t[2] = { thresholds(f, &od, 0), thresholds(f, &od, 1) };
    int uns = !f->is_signed;
    kb *b = malloc(NK * sizeof *b);
    int64_t (*lo)[NCRIT] = malloc(NK * sizeof *lo), (*hi)[NCRIT] = malloc(NK * sizeof *hi);
    int *ks = malloc(NK * sizeof *ks);
    int64_t (*cnt)[NCAT] = malloc(NK * sizeof *cnt);
    amp_status st = AMP_OK;
    if (!b || !lo || !hi || !ks || !cnt) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
    bounds(h, t, uns, b);
    for (int ki = 0; ki < NK; ki++) crit_bounds(count_rule, &b[ki], lo[ki], hi[ki]);
    int nc = 0;
    for (int ki = 0; ki < NK; ki++) {
        int beaten = 0;
        for (int kj = 0; kj < NK && !beaten; kj++) beaten = kj != ki && surely_better((const int64_t (*)[NCRIT])lo, (const int64_t (*)[NCRIT])hi, kj, ki);
        if (!beaten) ks[nc++] = AMP_ANALYZE_KMIN + ki;
    }
    AMP_ASSERT(nc > 0);
    int best = 0;
    if (nc > 1) {
        if ((st = exact_counts(v, t, uns, ks, nc, cnt))) goto out;
        int64_t cb[NCRIT], cc[NCRIT];
        criteria(count_rule, cnt[0], cb);
        for (int j = 1; j < nc; j++) {
            criteria(count_rule, cnt[j], cc);
            int cmp = 0;
            for (int i = 0; i < NCRIT && !cmp; i++) cmp = (cc[i] > cb[i]) - (cc[i] < cb[i]);
            if (!cmp) cmp = tie_cmp(ks[j], ks[best]);
            if (cmp < 0) { best = j; memcpy(cb, cc, sizeof cb); }
        }
    }
    *kout = ks[best];
out:
    free(b);
    free(lo);
    free(hi);
    free(ks);
    free(cnt);
    return st;
}
