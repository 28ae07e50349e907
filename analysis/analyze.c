/* `ampsim analyze`, the library part: every (format, scale) of a tensor in one
 * streamed pass, and the exact choice of the auto power-of-two scale
 * (see amp_analyze.h for the contracts). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements per streamed chunk: a multiple of the rounding drivers' fixed
 * chunk (2^16), so statistics merge in the same order however the tensor is
 * cut, and large enough that each call keeps every thread busy. */
#define AN_CHUNK ((size_t)1 << 20)

/* Signed binade histogram: binade b of |x| (floor(log2|x|), -1074..1023) at
 * index b + HOFF; sign 0 positive, 1 negative. Zero, inf, NaN not counted. */
#define HOFF 1100
#define HBINS 2200

void amp_analyze_defaults(amp_analyze_opts *o)
{
    memset(o, 0, sizeof *o);
    static const amp_format_id def[] = { AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2 };
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++) o->formats[o->n_formats++] = *amp_format_get(def[i]);
    o->n_scales = 1;
    o->scales[0] = 1.0f;
}

/* Splits a comma list into items; calls fn on each (non-empty). */
static amp_status for_each_item(const char *list, const char *what, amp_status (*fn)(const char *, void *), void *ctx)
{
    char item[128];
    const char *s = list;
    if (!s || !*s) return amp_fail(AMP_EINVAL, "empty %s list", what);
    for (;;) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        if (n == 0) return amp_fail(AMP_EINVAL, "empty entry in %s list '%s'", what, list);
        if (n >= sizeof item) return amp_fail(AMP_EINVAL, "%s list entry too long", what);
        memcpy(item, s, n);
        item[n] = 0;
        amp_status st = fn(item, ctx);
        if (st) return st;
        if (!c) return AMP_OK;
        s = c + 1;
    }
}

static amp_status add_format(const char *name, void *ctx)
{
    amp_analyze_opts *o = ctx;
    if (o->n_formats == AMP_ANALYZE_MAX_FORMATS)
        return amp_fail(AMP_EINVAL, "--formats: more than %d formats", AMP_ANALYZE_MAX_FORMATS);
    amp_format f;
    amp_status st = amp_format_parse(name, &f);
    if (st) return st;
    o->formats[o->n_formats++] = f;
    return AMP_OK;
}

amp_status amp_analyze_parse_formats(const char *list, amp_analyze_opts *o)
{
    o->n_formats = 0;
    return for_each_item(list, "format", add_format, o);
}

static amp_status add_scale(const char *s, void *ctx)
{
    amp_analyze_opts *o = ctx;
    if (!strcmp(s, "auto")) { o->auto_scale = 1; return AMP_OK; }
    char *end;
    double d = strtod(s, &end);
    if (*end || !(d > 0) || !isfinite(d) || (float)d == 0 || isinf((float)d))
        return amp_fail(AMP_EINVAL, "--scales: '%s' is not a positive float32 scale (or 'auto')", s);
    if (o->n_scales == AMP_ANALYZE_MAX_SCALES)
        return amp_fail(AMP_EINVAL, "--scales: more than %d scales", AMP_ANALYZE_MAX_SCALES);
    o->scales[o->n_scales++] = (float)d;
    return AMP_OK;
}

amp_status amp_analyze_parse_scales(const char *list, amp_analyze_opts *o)
{
    o->n_scales = 0;
    o->auto_scale = 0;
    amp_status st = for_each_item(list, "scale", add_scale, o);
    if (st) return st;
    if (o->auto_scale) {
        int have1 = 0;
        for (int i = 0; i < o->n_scales; i++) have1 |= o->scales[i] == 1.0f;
        if (!have1) {
            if (o->n_scales == AMP_ANALYZE_MAX_SCALES)
                return amp_fail(AMP_EINVAL, "--scales: more than %d scales", AMP_ANALYZE_MAX_SCALES);
            memmove(o->scales + 1, o->scales, (size_t)o->n_scales * sizeof o->scales[0]);
            o->scales[0] = 1.0f;
            o->n_scales++;
        }
    }
    return AMP_OK;
}

uint64_t amp_analyze_lost(const amp_stats *st)
{
    return st->cls[AMP_CLS_FLUSHED] + st->cls[AMP_CLS_OVERFLOW] + st->cls[AMP_CLS_SATURATED];
}

/* ---- the streamed pass ---------------------------------------------------- */
typedef struct job {
    const amp_format *f;
    float scale;
    amp_stats st;
} job;

typedef struct bufs {
    float *x32, *xs32, *y;
    double *x64, *xs64;
} bufs;

static void bufs_free(bufs *b)
{
    free(b->x32); free(b->xs32); free(b->y); free(b->x64); free(b->xs64);
    memset(b, 0, sizeof *b);
}

static amp_status bufs_alloc(bufs *b, int is64)
{
    memset(b, 0, sizeof *b);
    b->y = malloc(AN_CHUNK * sizeof(float));
    b->xs32 = malloc(AN_CHUNK * sizeof(float));
    b->xs64 = malloc(AN_CHUNK * sizeof(double));
    if (is64) b->x64 = malloc(AN_CHUNK * sizeof(double));
    else b->x32 = malloc(AN_CHUNK * sizeof(float));
    if (!b->y || !b->xs32 || !b->xs64 || (is64 ? !b->x64 : !b->x32)) {
        bufs_free(b);
        return amp_fail(AMP_ENOMEM, "analyze: out of memory");
    }
    return AMP_OK;
}

static void hist_f32(const float *x, size_t n, uint64_t (*h)[HBINS])
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = amp_f2u(x[i]), a = u & 0x7fffffffu, e = a >> 23;
        int b;
        if (a == 0 || e == 0xff) continue;
        if (e) b = (int)e - 127;
        else b = -149 + 31 - __builtin_clz(a);
        h[u >> 31][b + HOFF]++;
    }
}

static void hist_f64(const double *x, size_t n, uint64_t (*h)[HBINS])
{
    for (size_t i = 0; i < n; i++) {
        if (x[i] == 0 || !isfinite(x[i])) continue;
        h[signbit(x[i]) ? 1 : 0][ilogb(x[i]) + HOFF]++;
    }
}

/* Rounds every job over the whole tensor (jobs sorted so equal scales are
 * adjacent: the scaled chunk is made once per scale). If h is non-NULL the
 * signed binade histogram of the unscaled tensor is added to it. */
static amp_status run_pass(const amp_tensor_view *v, job *jobs, int nj, uint64_t (*h)[HBINS])
{
    int is64 = v->dtype == AMP_DT_F64;
    bufs b;
    amp_status st = bufs_alloc(&b, is64);
    if (st) return st;
    amp_round_opts o = amp_round_defaults();
    for (size_t first = 0; first < v->n && !st; first += AN_CHUNK) {
        size_t m = v->n - first < AN_CHUNK ? v->n - first : AN_CHUNK;
        const float *x32 = NULL;
        if (is64) {
            amp_tensor_view_to_f64(v, first, m, b.x64);
            if (h) hist_f64(b.x64, m, h);
        } else {
            const unsigned char *p = (const unsigned char *)v->data + first * 4;
            if (v->dtype == AMP_DT_F32 && ((uintptr_t)p & 3) == 0) {
                x32 = (const float *)(const void *)p;   /* aligned: round straight from the mapping */
            } else {
                amp_tensor_view_to_f32(v, first, m, b.x32);
                x32 = b.x32;
            }
            if (h) hist_f32(x32, m, h);
        }
        o.index0 = first;
        float have_scale = 0;    /* the scale whose chunk is in xs32/xs64 */
        int scaled64 = 0;
        for (int j = 0; j < nj && !st; j++) {
            float s = jobs[j].scale;
            if (s == 1.0f) {
                st = is64 ? amp_round_f64(jobs[j].f, &o, b.x64, b.y, m, &jobs[j].st)
                          : amp_round_f32(jobs[j].f, &o, x32, b.y, m, &jobs[j].st);
                continue;
            }
            if (s != have_scale) {
                have_scale = s;
                scaled64 = 1;
                if (is64) {
                    for (size_t i = 0; i < m; i++) b.xs64[i] = b.x64[i] * (double)s;
                } else {
                    /* The float32 product is used when it is exact for the whole
                     * chunk; otherwise the exact double product (24 x 24 bits). */
                    int exact = 1;
                    #pragma omp simd reduction(&:exact)
                    for (size_t i = 0; i < m; i++) {
                        double d = (double)x32[i] * (double)s;
                        float f = (float)d;
                        b.xs32[i] = f;
                        exact &= ((double)f == d) | (d != d);
                    }
                    if (exact) scaled64 = 0;
                    else for (size_t i = 0; i < m; i++) b.xs64[i] = (double)x32[i] * (double)s;
                }
            }
            st = scaled64 ? amp_round_f64(jobs[j].f, &o, b.xs64, b.y, m, &jobs[j].st)
                          : amp_round_f32(jobs[j].f, &o, b.xs32, b.y, m, &jobs[j].st);
        }
    }
    bufs_free(&b);
    return st;
}

static int cmp_job_scale(const void *a, const void *b)
{
    float x = ((const job *)a)->scale, y = ((const job *)b)->scale;
    return x < y ? -1 : x > y;
}

/* ---- auto scale -------------------------------------------------------------
 * For format f and shift k, a value in binade b lands in binade B = b + k. The
 * class is monotone in |x| under rne (flushed near zero, overflow/saturated at
 * the top), so the classes of the binade's end points 2^B and (2-2^-52) 2^B
 * bound what its values do: all lost if both ends are lost the same way, none
 * if neither end is. Summing gives lo <= true <= hi for every k. */
typedef struct key { uint64_t lost, ovf; int k; } key;

static int key_cmp(key a, key b)
{
    if (a.lost != b.lost) return a.lost < b.lost ? -1 : 1;
    if (a.ovf != b.ovf) return a.ovf < b.ovf ? -1 : 1;
    int ak = abs(a.k), bk = abs(b.k);
    if (ak != bk) return ak < bk ? -1 : 1;
    return (a.k > b.k) - (a.k < b.k);
}

static int is_lost(amp_class c) { return c == AMP_CLS_FLUSHED || c == AMP_CLS_OVERFLOW || c == AMP_CLS_SATURATED; }
static int is_ovf(amp_class c) { return c == AMP_CLS_OVERFLOW || c == AMP_CLS_SATURATED; }

#define NK (AMP_ANALYZE_KMAX - AMP_ANALYZE_KMIN + 1)

/* Candidates for f: every k whose lower-bound key is not above the smallest
 * upper-bound key. Writes them to cand (at most NK) and returns how many. */
static int auto_candidates(const amp_format *f, uint64_t (*h)[HBINS], int *cand)
{
    amp_round_opts o = amp_round_defaults();
    int bmin = HBINS, bmax = -1;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < HBINS; i++)
            if (h[s][i]) { if (i < bmin) bmin = i; if (i > bmax) bmax = i; }
    key lo[NK], hi[NK];
    for (int ki = 0; ki < NK; ki++) {
        lo[ki] = hi[ki] = (key){ 0, 0, AMP_ANALYZE_KMIN + ki };
    }
    if (bmax >= 0) {
        /* class of each end point, per sign and destination binade */
        int blo = bmin - HOFF + AMP_ANALYZE_KMIN, bhi = bmax - HOFF + AMP_ANALYZE_KMAX;
        int nb = bhi - blo + 1;
        unsigned char *ce = malloc((size_t)nb * 4);
        if (!ce) return -1;
        for (int s = 0; s < 2; s++)
            for (int B = blo; B <= bhi; B++) {
                double a = ldexp(1.0, B), z = ldexp(0x1.fffffffffffffp0, B);
                amp_class c0, c1;
                amp_round1(f, &o, s ? -a : a, 0, &c0);
                amp_round1(f, &o, s ? -z : z, 0, &c1);
                ce[(size_t)(B - blo) * 4 + (size_t)s * 2] = (unsigned char)c0;
                ce[(size_t)(B - blo) * 4 + (size_t)s * 2 + 1] = (unsigned char)c1;
            }
        for (int ki = 0; ki < NK; ki++) {
            int k = AMP_ANALYZE_KMIN + ki;
            for (int s = 0; s < 2; s++)
                for (int i = bmin; i <= bmax; i++) {
                    uint64_t c = h[s][i];
                    if (!c) continue;
                    int B = i - HOFF + k;
                    amp_class c0 = ce[(size_t)(B - blo) * 4 + (size_t)s * 2];
                    amp_class c1 = ce[(size_t)(B - blo) * 4 + (size_t)s * 2 + 1];
                    int both_same_lost = (c0 == AMP_CLS_FLUSHED && c1 == AMP_CLS_FLUSHED) || (is_ovf(c0) && is_ovf(c1));
                    if (both_same_lost) lo[ki].lost += c;
                    if (is_lost(c0) || is_lost(c1)) hi[ki].lost += c;
                    if (is_ovf(c0) && is_ovf(c1)) lo[ki].ovf += c;
                    if (is_ovf(c0) || is_ovf(c1)) hi[ki].ovf += c;
                }
        }
        free(ce);
    }
    key u = hi[0];
    for (int ki = 1; ki < NK; ki++)
        if (key_cmp(hi[ki], u) < 0) u = hi[ki];
    int nc = 0;
    for (int ki = 0; ki < NK; ki++)
        if (key_cmp(lo[ki], u) <= 0) cand[nc++] = AMP_ANALYZE_KMIN + ki;
    return nc;
}

static amp_status push_row(amp_analyze_row **rows, size_t *n_rows, size_t *cap, const amp_tensor_view *v,
                           const amp_format *f, float scale, int is_auto, int k, const amp_stats *st)
{
    if (*n_rows == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        amp_analyze_row *nr = realloc(*rows, nc * sizeof *nr);
        if (!nr) return amp_fail(AMP_ENOMEM, "analyze: out of memory");
        *rows = nr;
        *cap = nc;
    }
    amp_analyze_row *r = &(*rows)[(*n_rows)++];
    memset(r, 0, sizeof *r);
    snprintf(r->tensor, sizeof r->tensor, "%s", v->name);
    snprintf(r->format, sizeof r->format, "%s", f->name);
    r->scale = scale;
    r->is_auto = is_auto;
    r->scale_log2 = k;
    r->st = *st;
    return AMP_OK;
}

/* Largest positive double that f (rne) flushes, and smallest that overflows or
 * saturates, by bisection on the bit patterns (the classes are monotone in
 * |x|): 0 if nothing flushes, +inf if nothing overflows. */
static void lost_thresholds(const amp_format *f, double *fl_max, double *ov_min)
{
    amp_round_opts o = amp_round_defaults();
    amp_class c;
    uint64_t lo = 1, hi = 0x7fefffffffffffffULL;   /* smallest / largest positive finite */
    amp_round1(f, &o, amp_u2d(lo), 0, &c);
    if (c != AMP_CLS_FLUSHED) {
        *fl_max = 0;
    } else {                                         /* invariant: lo flushed */
        uint64_t a = lo, b = hi;
        while (b - a > 1) {
            uint64_t m = a + (b - a) / 2;
            amp_round1(f, &o, amp_u2d(m), 0, &c);
            if (c == AMP_CLS_FLUSHED) a = m; else b = m;
        }
        *fl_max = amp_u2d(a);
    }
    amp_round1(f, &o, amp_u2d(hi), 0, &c);
    if (!is_ovf(c)) {
        *ov_min = INFINITY;
    } else {                                         /* invariant: b overflows */
        uint64_t a = lo, b = hi;
        while (b - a > 1) {
            uint64_t m = a + (b - a) / 2;
            amp_round1(f, &o, amp_u2d(m), 0, &c);
            if (is_ovf(c)) b = m; else a = m;
        }
        *ov_min = amp_u2d(b);
    }
}

/* For each candidate job (format formats[cf[j]], scale 2^k), counts the values
 * whose scaled image would be lost, into st.cls[FLUSHED] and st.cls[OVERFLOW]
 * (overflow + saturated), from the thresholds: x*2^k is exact, so
 * |x| <= fl_max*2^-k flushes and |x| >= ov_min*2^-k overflows; an unsigned
 * format loses every negative nonzero finite value (to NaN). */
static amp_status count_pass(const amp_tensor_view *v, job *cj, const int *cf, int nc, const amp_format *formats)
{
    double *x = malloc(AN_CHUNK * sizeof *x);
    double *tf = malloc((size_t)(nc ? nc : 1) * 2 * sizeof *tf);
    if (!x || !tf) { free(x); free(tf); return amp_fail(AMP_ENOMEM, "analyze: out of memory"); }
    int last = -1;
    double flm = 0, ovm = 0;
    for (int j = 0; j < nc; j++) {
        if (cf[j] != last) { lost_thresholds(&formats[cf[j]], &flm, &ovm); last = cf[j]; }
        int k = ilogbf(cj[j].scale);
        tf[2 * j] = ldexp(flm, -k);
        tf[2 * j + 1] = ldexp(ovm, -k);
    }
    int is64 = v->dtype == AMP_DT_F64;
    for (size_t first = 0; first < v->n; first += AN_CHUNK) {
        size_t m = v->n - first < AN_CHUNK ? v->n - first : AN_CHUNK;
        const float *x32 = NULL;
        if (is64) {
            amp_tensor_view_to_f64(v, first, m, x);
        } else {
            const unsigned char *p = (const unsigned char *)v->data + first * 4;
            if (v->dtype == AMP_DT_F32 && ((uintptr_t)p & 3) == 0) {
                x32 = (const float *)(const void *)p;
            } else {
                amp_tensor_view_to_f32(v, first, m, (float *)x);
                x32 = (const float *)x;
            }
        }
        for (int j = 0; j < nc; j++) {
            double lo = tf[2 * j], hi = tf[2 * j + 1];
            int uns = !formats[cf[j]].is_signed;
            uint64_t fl = 0, ov = 0;
            if (is64) {
                #pragma omp parallel for simd reduction(+:fl, ov) num_threads(amp_get_threads())
                for (size_t i = 0; i < m; i++) {
                    double a = fabs(x[i]);
                    int fin = a < INFINITY, nz = a > 0;
                    int o = (fin & (a >= hi)) | (uns & nz & fin & (x[i] < 0));
                    fl += (uint64_t)(nz & (a <= lo) & !o);
                    ov += (uint64_t)o;
                }
            } else {
                /* For a float32 |x|: |x| <= lo iff |x| <= the largest float <= lo,
                 * |x| >= hi iff |x| >= the smallest float >= hi (inf: never). */
                float lof = (float)lo, hif = (float)hi;
                if ((double)lof > lo) lof = nextafterf(lof, 0);
                if ((double)hif < hi) hif = nextafterf(hif, INFINITY);
                #pragma omp parallel for simd reduction(+:fl, ov) num_threads(amp_get_threads())
                for (size_t i = 0; i < m; i++) {
                    float a = fabsf(x32[i]);
                    int fin = a < INFINITY, nz = a > 0;
                    int o = (fin & (a >= hif)) | (uns & nz & fin & (x32[i] < 0));
                    fl += (uint64_t)(nz & (a <= lof) & !o);
                    ov += (uint64_t)o;
                }
            }
            cj[j].st.cls[AMP_CLS_FLUSHED] += fl;
            cj[j].st.cls[AMP_CLS_OVERFLOW] += ov;
        }
    }
    free(x);
    free(tf);
    return AMP_OK;
}

amp_status amp_analyze_view(const amp_tensor_view *v, const amp_analyze_opts *o, amp_analyze_row **rows,
                            size_t *n_rows)
{
    int nf = o->n_formats, ns = o->n_scales;
    if (nf < 1 || ns < 1) return amp_fail(AMP_EINVAL, "analyze: no formats or no scales");
    job *jobs = calloc((size_t)nf * (size_t)ns, sizeof *jobs);
    int *jobidx = calloc((size_t)nf * (size_t)ns, sizeof *jobidx);   /* (format, scale) -> job */
    uint64_t (*h)[HBINS] = o->auto_scale ? calloc(2, sizeof *h) : NULL;
    job *cj = NULL, *autoj = NULL;   /* auto: candidates; the chosen scale per format */
    int *cf = NULL, *cand = NULL, ncj = 0;
    amp_status st = AMP_OK;
    if (!jobs || !jobidx || (o->auto_scale && !h)) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
    for (int s = 0, j = 0; s < ns; s++)
        for (int fi = 0; fi < nf; fi++, j++) {
            jobs[j].f = &o->formats[fi];
            jobs[j].scale = o->scales[s];
            amp_stats_init(&jobs[j].st);
        }
    /* stable: sort by scale, remembering where each (format, scale) went */
    {
        int nj = nf * ns;
        for (int j = 0; j < nj; j++) jobs[j].st.n = (uint64_t)j;   /* tag, reset below */
        qsort(jobs, (size_t)nj, sizeof *jobs, cmp_job_scale);
        for (int j = 0; j < nj; j++) {
            jobidx[jobs[j].st.n] = j;
            jobs[j].st.n = 0;
        }
    }
    if ((st = run_pass(v, jobs, nf * ns, h))) goto out;

    if (o->auto_scale) {
        cand = malloc((size_t)nf * NK * sizeof *cand);
        cf = malloc((size_t)nf * NK * sizeof *cf);
        cj = calloc((size_t)nf * NK, sizeof *cj);
        if (!cand || !cf || !cj) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
        for (int fi = 0; fi < nf; fi++) {
            int nc = auto_candidates(&o->formats[fi], h, cand + fi * NK);
            if (nc < 0) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
            for (int c = 0; c < nc; c++) {
                cj[ncj].f = &o->formats[fi];
                cj[ncj].scale = ldexpf(1.0f, cand[fi * NK + c]);
                amp_stats_init(&cj[ncj].st);
                cf[ncj++] = fi;
            }
        }
        /* Exact lost/overflow counts of every candidate by threshold compares
         * (one light pass), then one real rounding pass per format at its
         * chosen k: that pass's statistics are the auto row. */
        if ((st = count_pass(v, cj, cf, ncj, o->formats))) goto out;
        autoj = calloc((size_t)nf, sizeof *autoj);
        if (!autoj) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
        int nreal = 0;
        for (int fi = 0; fi < nf; fi++) {
            int best = -1;
            key bk = { 0, 0, 0 };
            for (int j = 0; j < ncj; j++) {
                if (cf[j] != fi) continue;
                key kk = { cj[j].st.cls[AMP_CLS_FLUSHED], cj[j].st.cls[AMP_CLS_OVERFLOW], ilogbf(cj[j].scale) };
                kk.lost += kk.ovf;
                if (best < 0 || key_cmp(kk, bk) < 0) { best = j; bk = kk; }
            }
            AMP_ASSERT(best >= 0);
            autoj[fi].f = &o->formats[fi];
            autoj[fi].scale = cj[best].scale;
            amp_stats_init(&autoj[fi].st);
            int reuse = -1;         /* k = 0: the unscaled row already has the statistics */
            for (int s = 0; s < ns; s++)
                if (o->scales[s] == 1.0f && autoj[fi].scale == 1.0f) reuse = s;
            if (reuse >= 0) autoj[fi].st = jobs[jobidx[reuse * nf + fi]].st;
            else cj[nreal++] = autoj[fi];   /* cj is free now: the real rounding pass */
        }
        if ((st = run_pass(v, cj, nreal, NULL))) goto out;
        for (int fi = 0, j = 0; fi < nf; fi++)
            if (j < nreal && cj[j].f == autoj[fi].f) autoj[fi].st = cj[j++].st;
    }

    size_t cap = *n_rows;   /* realloc grows from the current size */
    int one = ns - 1;       /* the auto row follows the first scale-1 row (else the last row) */
    for (int s = ns - 1; s >= 0; s--)
        if (o->scales[s] == 1.0f) one = s;
    for (int fi = 0; fi < nf && !st; fi++)
        for (int s = 0; s < ns && !st; s++) {
            const job *jb = &jobs[jobidx[s * nf + fi]];
            st = push_row(rows, n_rows, &cap, v, &o->formats[fi], o->scales[s], 0, 0, &jb->st);
            if (!st && o->auto_scale && s == one) {
                const job *a = &autoj[fi];
                st = push_row(rows, n_rows, &cap, v, &o->formats[fi], a->scale, 1, ilogbf(a->scale), &a->st);
            }
        }
out:
    free(jobs);
    free(jobidx);
    free(h);
    free(cj);
    free(cf);
    free(cand);
    free(autoj);
    return st;
}

/* ---- CSV -------------------------------------------------------------------- */
const char *amp_analyze_csv_header(void)
{
    return "tensor,format,scale,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err,"
           "in_normal_range";
}

int amp_analyze_csv_row(const amp_analyze_row *r, char *buf, size_t len)
{
    char name[600];
    if (strpbrk(r->tensor, ",\"\n\r")) {
        size_t k = 0;
        name[k++] = '"';
        for (const char *p = r->tensor; *p && k < sizeof name - 3; p++) {
            if (*p == '"') name[k++] = '"';
            name[k++] = *p;
        }
        name[k++] = '"';
        name[k] = 0;
    } else {
        snprintf(name, sizeof name, "%s", r->tensor);
    }
    const amp_stats *s = &r->st;
    return snprintf(buf, len, "%s,%s,%.9g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.9g,%.9g,%.9g,%.9g", name, r->format,
                    (double)r->scale, (unsigned long long)s->n, (unsigned long long)s->cls[AMP_CLS_ZERO_IN],
                    (unsigned long long)s->cls[AMP_CLS_FLUSHED], (unsigned long long)s->cls[AMP_CLS_SUBNORMAL],
                    (unsigned long long)s->cls[AMP_CLS_SATURATED], (unsigned long long)s->cls[AMP_CLS_OVERFLOW],
                    (unsigned long long)s->cls[AMP_CLS_NAN_IN], s->amax, s->amin_nonzero, amp_stats_rel_err(s),
                    amp_stats_in_normal_range(s));
}

size_t amp_analyze_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_analyze_opts")) return sizeof(amp_analyze_opts);
    if (!strcmp(type, "amp_analyze_row")) return sizeof(amp_analyze_row);
    if (!strcmp(type, "amp_tensor_view")) return sizeof(amp_tensor_view);
    return 0;
}
