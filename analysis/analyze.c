/* `ampsim analyze`, the library part: every (format, scale) of a tensor in
 * streamed passes with the row's cast options, the data-dependent scales
 * (amax, auto: analyze_auto.c), block-scaled formats, and the CSV rows (see
 * amp_analyze.h for the contracts). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_block.h"
#include "amp_analyze.h"
#include "analyze_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void amp_analyze_defaults(amp_analyze_opts *o)
{
    memset(o, 0, sizeof *o);
    static const amp_format_id def[] = { AMP_FMT_FP16, AMP_FMT_BF16, AMP_FMT_E4M3, AMP_FMT_E5M2 };
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++) o->formats[o->n_formats++] = *amp_format_get(def[i]);
    o->n_scales = 1;
    o->scales[0] = (amp_scale_choice){ .kind = AMP_SCALE_FIXED, .value = 1.0f, .spec = "1" };
    o->round = amp_round_defaults();
}

amp_status amp_analyze_set_cast(amp_analyze_opts *o, const amp_round_opts *ro)
{
    amp_status st = amp_round_check_opts(amp_format_get(AMP_FMT_FP16), ro);
    if (st) return st;
    o->round = *ro;
    return AMP_OK;
}

size_t amp_analyze_row_at(const amp_analyze_row *rows, size_t i, char *buf, size_t len, double *nums)
{
    if (nums) amp_analyze_row_nums(&rows[i], nums);
    int n = amp_analyze_csv_row(&rows[i], buf, len);
    return n < 0 ? 0 : (size_t)n;
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
    int i = o->n_formats;
    amp_status st;
    memset(&o->blocks[i], 0, sizeof o->blocks[i]);
    o->is_block[i] = amp_block_is_spec(name);
    if (o->is_block[i]) {
        if ((st = amp_block_parse(name, &o->blocks[i]))) return st;
        o->formats[i] = o->blocks[i].elem;
    } else if ((st = amp_format_parse(name, &o->formats[i]))) {
        return st;
    }
    o->n_formats++;
    return AMP_OK;
}

amp_status amp_analyze_parse_formats(const char *list, amp_analyze_opts *o)
{
    o->n_formats = 0;
    return for_each_item(list, "format", add_format, o);
}

/* "2^k" (k an integer, 2^k a float32) or a positive float32 number. */
static int parse_fixed(const char *s, float *out)
{
    char *end;
    if (!strncmp(s, "2^", 2)) {
        long k = strtol(s + 2, &end, 10);
        if (end == s + 2 || *end || k < -149 || k > 127) return -1;
        *out = ldexpf(1.0f, (int)k);
        return 0;
    }
    double d = strtod(s, &end);
    if (end == s || *end || !(d > 0) || !isfinite(d) || (float)d == 0 || isinf((float)d)) return -1;
    *out = (float)d;
    return 0;
}

static amp_status parse_amax(const char *s, amp_scale_choice *c)
{
    c->kind = AMP_SCALE_AMAX;
    const char *p = s + 4;
    while (*p) {
        char *end;
        if (!strncmp(p, ":pow2", 5) && (p[5] == 0 || p[5] == ':')) { c->pow2 = 1; p += 5; continue; }
        if (!strncmp(p, ":margin=", 8)) {
            long m = strtol(p + 8, &end, 10);
            if (end == p + 8 || (*end && *end != ':') || m < -127 || m > 127)
                return amp_fail(AMP_EINVAL, "--scales: '%s': margin must be an integer in -127..127", s);
            c->margin = (int)m;
            p = end;
            continue;
        }
        return amp_fail(AMP_EINVAL, "--scales: '%s': amax takes :margin=M and :pow2", s);
    }
    return AMP_OK;
}

static amp_status add_scale(const char *s, void *ctx)
{
    amp_analyze_opts *o = ctx;
    if (o->n_scales == AMP_ANALYZE_MAX_SCALES)
        return amp_fail(AMP_EINVAL, "--scales: more than %d scales", AMP_ANALYZE_MAX_SCALES);
    amp_scale_choice c = { .kind = AMP_SCALE_FIXED };
    if (strlen(s) >= sizeof c.spec) return amp_fail(AMP_EINVAL, "--scales: '%.40s' too long", s);
    snprintf(c.spec, sizeof c.spec, "%s", s);
    amp_status st = AMP_OK;
    if (!strcmp(s, "auto")) c.kind = AMP_SCALE_AUTO;
    else if (!strcmp(s, "auto:count")) c.kind = AMP_SCALE_AUTO_COUNT;
    else if (!strncmp(s, "amax", 4) && (s[4] == 0 || s[4] == ':')) st = parse_amax(s, &c);
    else if (parse_fixed(s, &c.value))
        return amp_fail(AMP_EINVAL, "--scales: '%s' is not a positive float32 scale, 2^k, auto, auto:count or "
                        "amax[:margin=M][:pow2]", s);
    if (st) return st;
    o->scales[o->n_scales++] = c;
    return AMP_OK;
}

amp_status amp_analyze_parse_scales(const char *list, amp_analyze_opts *o)
{
    o->n_scales = 0;
    amp_status st = for_each_item(list, "scale", add_scale, o);
    if (st) return st;
    int have1 = 0, data = 0;
    for (int i = 0; i < o->n_scales; i++) {
        have1 |= o->scales[i].kind == AMP_SCALE_FIXED && o->scales[i].value == 1.0f;
        data |= o->scales[i].kind != AMP_SCALE_FIXED;
    }
    if (data && !have1) {
        if (o->n_scales == AMP_ANALYZE_MAX_SCALES)
            return amp_fail(AMP_EINVAL, "--scales: more than %d scales", AMP_ANALYZE_MAX_SCALES);
        memmove(o->scales + 1, o->scales, (size_t)o->n_scales * sizeof o->scales[0]);
        o->scales[0] = (amp_scale_choice){ .kind = AMP_SCALE_FIXED, .value = 1.0f, .spec = "1" };
        o->n_scales++;
    }
    return AMP_OK;
}

/* ---- error measures --------------------------------------------------------- */
static uint64_t nonzero_finite(const amp_stats *s)
{
    return s->n - s->cls[AMP_CLS_NAN_IN] - s->cls[AMP_CLS_INF_IN] - s->cls[AMP_CLS_ZERO_IN];
}

uint64_t amp_analyze_lost(const amp_analyze_row *r)
{
    const amp_stats *s = &r->st;
    return s->cls[AMP_CLS_FLUSHED] + s->cls[AMP_CLS_OVERFLOW] + s->cls[AMP_CLS_SATURATED] + r->invalid;
}

double amp_analyze_lost_frac(const amp_analyze_row *r)
{
    uint64_t nz = nonzero_finite(&r->st);
    return nz ? (double)amp_analyze_lost(r) / (double)nz : 0.0;
}

double amp_analyze_rel_err_finite(const amp_analyze_row *r) { return amp_stats_rel_err(&r->st); }

double amp_analyze_rel_err_all(const amp_analyze_row *r)
{
    const amp_stats *s = &r->st;
    double extra = (double)(s->cls[AMP_CLS_OVERFLOW] + r->invalid);
    double n = (double)s->n_rel + extra;
    return n > 0 ? sqrt((s->sum_rel_sq + extra) / n) : 0.0;
}

/* ---- the streamed passes ------------------------------------------------------ */
amp_status an_scan(const amp_tensor_view *v, an_hist *h, double *amax)
{
    float *b32 = malloc(AN_CHUNK * sizeof *b32);
    double *x64 = malloc(AN_CHUNK * sizeof *x64);
    if (!b32 || !x64) { free(b32); free(x64); return amp_fail(AMP_ENOMEM, "analyze: out of memory"); }
    double am = 0;
    for (size_t first = 0; first < v->n; first += AN_CHUNK) {
        size_t m = v->n - first < AN_CHUNK ? v->n - first : AN_CHUNK;
        const float *x32;
        an_chunk(v, first, m, b32, x64, &x32);
        for (size_t i = 0; i < m; i++) {
            double x = x32 ? (double)x32[i] : x64[i], a = fabs(x);
            if (a > am) am = a;                  /* NaN compares false */
            if (!h || !(a > 0) || a == INFINITY) continue;
            (*h)[signbit(x) ? 1 : 0][ilogb(x) + AN_HOFF]++;
        }
    }
    free(b32);
    free(x64);
    if (amax) *amax = am;
    return AMP_OK;
}

/* Negative nonzero finite values of x[0..m) (double if x64 else float). */
static uint64_t count_neg(const float *x32, const double *x64, size_t m)
{
    uint64_t c = 0;
    for (size_t i = 0; i < m; i++) {
        double x = x64 ? x64[i] : (double)x32[i];
        c += x < 0 && x > -INFINITY;
    }
    return c;
}

typedef struct bufs { float *x32, *xs32, *y; double *x64, *xs64; } bufs;

static void bufs_free(bufs *b)
{
    free(b->x32); free(b->xs32); free(b->y); free(b->x64); free(b->xs64);
    memset(b, 0, sizeof *b);
}

static amp_status bufs_alloc(bufs *b)
{
    b->y = malloc(AN_CHUNK * sizeof(float));
    b->xs32 = malloc(AN_CHUNK * sizeof(float));
    b->xs64 = malloc(AN_CHUNK * sizeof(double));
    b->x64 = malloc(AN_CHUNK * sizeof(double));
    b->x32 = malloc(AN_CHUNK * sizeof(float));
    if (!b->y || !b->xs32 || !b->xs64 || !b->x64 || !b->x32) {
        bufs_free(b);
        return amp_fail(AMP_ENOMEM, "analyze: out of memory");
    }
    return AMP_OK;
}

/* Scales chunk x (float32 x32 or double x64) by s into b: float32 when the
 * product is exact for the whole chunk, else the double product. Returns 1 if
 * the scaled chunk is in b->xs64. */
static int scale_chunk(bufs *b, const float *x32, const double *x64, size_t m, float s)
{
    if (x64) {
        for (size_t i = 0; i < m; i++) b->xs64[i] = x64[i] * (double)s;
        return 1;
    }
    int exact = 1;
    #pragma omp simd reduction(&:exact)
    for (size_t i = 0; i < m; i++) {
        double d = (double)x32[i] * (double)s;
        float f = (float)d;
        b->xs32[i] = f;
        exact &= ((double)f == d) | (d != d);
    }
    if (exact) return 0;
    for (size_t i = 0; i < m; i++) b->xs64[i] = (double)x32[i] * (double)s;   /* exact: 24 x 24 bits */
    return 1;
}

/* Rounds every job over the whole tensor with options ro; jobs sorted by
 * scale, so the scaled chunk is made once per scale. */
static amp_status run_pass(const amp_tensor_view *v, const amp_round_opts *ro, an_job *jobs, int nj)
{
    bufs b = { 0 };
    amp_status st = bufs_alloc(&b);
    if (st) return st;
    amp_round_opts o = *ro;
    for (size_t first = 0; first < v->n && !st; first += AN_CHUNK) {
        size_t m = v->n - first < AN_CHUNK ? v->n - first : AN_CHUNK;
        const float *x32;
        an_chunk(v, first, m, b.x32, b.x64, &x32);
        const double *x64 = x32 ? NULL : b.x64;
        o.index0 = ro->index0 + first;
        float have = 0;          /* the scale whose chunk is in xs32/xs64 */
        int sc64 = 0;
        for (int j = 0; j < nj && !st; j++) {
            float s = jobs[j].scale;
            const float *in32 = x32;
            const double *in64 = x64;
            if (s != 1.0f) {
                if (s != have) { have = s; sc64 = scale_chunk(&b, x32, x64, m, s); }
                in32 = sc64 ? NULL : b.xs32;
                in64 = sc64 ? b.xs64 : NULL;
            }
            st = in64 ? amp_round_f64(jobs[j].f, &o, in64, b.y, m, &jobs[j].st)
                      : amp_round_f32(jobs[j].f, &o, in32, b.y, m, &jobs[j].st);
            if (!jobs[j].f->is_signed) {
                uint64_t neg = count_neg(in32, in64, m);
                jobs[j].invalid += neg;
                jobs[j].st.cls[AMP_CLS_OVERFLOW] -= neg;
            }
        }
    }
    bufs_free(&b);
    return st;
}

/* ---- rows ----------------------------------------------------------------------- */
static amp_status push_row(amp_analyze_row **rows, size_t *n_rows, size_t *cap, amp_analyze_row **out)
{
    if (*n_rows == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        amp_analyze_row *nr = realloc(*rows, nc * sizeof *nr);
        if (!nr) return amp_fail(AMP_ENOMEM, "analyze: out of memory");
        *rows = nr;
        *cap = nc;
    }
    *out = &(*rows)[(*n_rows)++];
    memset(*out, 0, sizeof **out);
    return AMP_OK;
}

/* The amax scale of f: TE's current scaling (see amp_analyze.h). */
static float amax_scale(const amp_format *f, const amp_scale_choice *c, double amax)
{
    float a = (float)amax;
    if (!(a > 0) || !isfinite(a)) return 1.0f;
    float num = (float)ldexp(f->max_finite, -c->margin);
    float s = num / a;
    if (isinf(s)) s = FLT_MAX;
    if (s == 0) s = 0x1p-149f;
    if (c->pow2) s = ldexpf(1.0f, ilogbf(s));
    return s;
}

static amp_status block_row(const amp_tensor_view *v, const amp_analyze_opts *o, int fi, amp_analyze_row *r)
{
    float *x = malloc((v->n ? v->n : 1) * sizeof *x);
    if (!x) return amp_fail(AMP_ENOMEM, "analyze: out of memory for %zu values", v->n);
    if (v->dtype == AMP_DT_F64) {   /* block formats take float32 input: rne into float32 first */
        amp_round_opts d = amp_round_defaults();
        double tmp[1024];
        for (size_t i = 0; i < v->n; i += 1024) {
            size_t m = v->n - i < 1024 ? v->n - i : 1024;
            amp_tensor_view_to_f64(v, i, m, tmp);
            amp_round_f64(amp_format_get(AMP_FMT_FP32), &d, tmp, x + i, m, NULL);
        }
    } else {
        amp_tensor_view_to_f32(v, 0, v->n, x);
    }
    size_t C = v->ndim ? v->shape[v->ndim - 1] : 1, R = C ? v->n / C : 0;
    amp_stats_init(&r->st);
    amp_block_stats_init(&r->bs);
    amp_status st = amp_block_round(&o->blocks[fi], &o->round, x, x, R, C, &r->st, &r->bs);
    free(x);
    r->is_block = 1;
    r->scale = 1.0f;
    snprintf(r->scale_spec, sizeof r->scale_spec, "block");
    snprintf(r->format, sizeof r->format, "%s", o->blocks[fi].name);
    return st;
}

amp_status amp_analyze_view(const amp_tensor_view *v, const amp_analyze_opts *o, amp_analyze_row **rows,
                            size_t *n_rows)
{
    int nf = o->n_formats, ns = o->n_scales, need_scan = 0, need_hist = 0;
    if (nf < 1 || ns < 1) return amp_fail(AMP_EINVAL, "analyze: no formats or no scales");
    amp_status st = amp_round_check_opts(&o->formats[0], &o->round);
    if (st) return st;
    for (int s = 0; s < ns; s++) {
        need_scan |= o->scales[s].kind != AMP_SCALE_FIXED;
        need_hist |= o->scales[s].kind == AMP_SCALE_AUTO || o->scales[s].kind == AMP_SCALE_AUTO_COUNT;
    }
    an_job *jobs = calloc((size_t)nf * (size_t)ns, sizeof *jobs);
    int *order = calloc((size_t)nf * (size_t)ns, sizeof *order);
    an_hist *h = need_hist ? calloc(1, sizeof *h) : NULL;
    double amax = 0;
    if (!jobs || !order || (need_hist && !h)) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
    if (need_scan && (st = an_scan(v, h, &amax))) goto out;
    int nj = 0;
    for (int fi = 0; fi < nf; fi++) {
        if (o->is_block[fi]) continue;
        for (int s = 0; s < ns; s++) {
            const amp_scale_choice *c = &o->scales[s];
            float sc = c->value;
            if (c->kind == AMP_SCALE_AMAX) sc = amax_scale(&o->formats[fi], c, amax);
            if (c->kind == AMP_SCALE_AUTO || c->kind == AMP_SCALE_AUTO_COUNT) {
                int k;
                if ((st = an_auto_k(v, &o->formats[fi], &o->round, c->kind == AMP_SCALE_AUTO_COUNT, (const an_hist *)h, &k)))
                    goto out;
                sc = ldexpf(1.0f, k);
            }
            jobs[nj] = (an_job){ .f = &o->formats[fi], .scale = sc };
            amp_stats_init(&jobs[nj].st);
            order[nj] = nj;
            nj++;
        }
    }
    /* sort by scale (insertion: stable, and nj is small) so equal scales are adjacent */
    an_job *sorted = malloc((size_t)(nj ? nj : 1) * sizeof *sorted);
    if (!sorted) { st = amp_fail(AMP_ENOMEM, "analyze: out of memory"); goto out; }
    for (int i = 1; i < nj; i++)
        for (int j = i; j > 0 && jobs[order[j - 1]].scale > jobs[order[j]].scale; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    for (int i = 0; i < nj; i++) sorted[i] = jobs[order[i]];
    st = run_pass(v, &o->round, sorted, nj);
    for (int i = 0; i < nj; i++) jobs[order[i]] = sorted[i];
    free(sorted);
    if (st) goto out;

    size_t cap = *n_rows;   /* realloc grows from the current size */
    char cast[64];
    amp_round_opts_text(&o->round, cast, sizeof cast);
    for (int fi = 0, j = 0; fi < nf && !st; fi++) {
        if (o->is_block[fi]) {
            amp_analyze_row *r;
            if (!(st = push_row(rows, n_rows, &cap, &r))) {
                snprintf(r->tensor, sizeof r->tensor, "%s", v->name);
                snprintf(r->cast, sizeof r->cast, "%s", cast);
                st = block_row(v, o, fi, r);
            }
            continue;
        }
        for (int s = 0; s < ns && !st; s++, j++) {
            amp_analyze_row *r;
            if ((st = push_row(rows, n_rows, &cap, &r))) break;
            const amp_scale_choice *c = &o->scales[s];
            snprintf(r->tensor, sizeof r->tensor, "%s", v->name);
            snprintf(r->format, sizeof r->format, "%s", o->formats[fi].name);
            snprintf(r->scale_spec, sizeof r->scale_spec, "%s", c->spec);
            snprintf(r->cast, sizeof r->cast, "%s", cast);
            r->scale = jobs[j].scale;
            r->scale_log2 = log2((double)jobs[j].scale);
            r->is_auto = c->kind == AMP_SCALE_AUTO || c->kind == AMP_SCALE_AUTO_COUNT;
            r->st = jobs[j].st;
            r->invalid = jobs[j].invalid;
        }
    }
out:
    free(jobs);
    free(order);
    free(h);
    return st;
}

/* ---- CSV -------------------------------------------------------------------- */
const char *amp_analyze_csv_header(void)
{
    return "tensor,format,cast,scale_spec,scale,scale_log2,n,zero_in,flushed,subnormal,saturated,overflow,invalid,"
           "nan,lost,lost_frac,amax,amin_nonzero,rel_err_finite,rel_err_all,in_normal_range,"
           "blocks,scale_hi,scale_lo,amax_sat_frac,scale_exp_min,scale_exp_median,scale_exp_max";
}

static void csv_quote(const char *in, char *out, size_t len)
{
    if (!strpbrk(in, ",\"\n\r")) { snprintf(out, len, "%s", in); return; }
    size_t k = 0;
    out[k++] = '"';
    for (const char *p = in; *p && k < len - 3; p++) {
        if (*p == '"') out[k++] = '"';
        out[k++] = *p;
    }
    out[k++] = '"';
    out[k] = 0;
}

void amp_analyze_row_nums(const amp_analyze_row *r, double v[AMP_ANALYZE_NUMS])
{
    const amp_stats *s = &r->st;
    const double u[] = { (double)r->scale, r->scale_log2, (double)s->n, (double)s->cls[AMP_CLS_ZERO_IN],
                         (double)s->cls[AMP_CLS_FLUSHED], (double)s->cls[AMP_CLS_SUBNORMAL],
                         (double)s->cls[AMP_CLS_SATURATED], (double)s->cls[AMP_CLS_OVERFLOW], (double)r->invalid,
                         (double)s->cls[AMP_CLS_NAN_IN], (double)amp_analyze_lost(r), amp_analyze_lost_frac(r),
                         s->amax, s->amin_nonzero, amp_analyze_rel_err_finite(r), amp_analyze_rel_err_all(r),
                         amp_stats_in_normal_range(s) };
    _Static_assert(sizeof u / sizeof u[0] + 7 == AMP_ANALYZE_NUMS, "the numeric columns");
    memcpy(v, u, sizeof u);
    double *b = v + sizeof u / sizeof u[0];
    for (int i = 0; i < 7; i++) b[i] = NAN;
    if (!r->is_block) return;
    int lo, med, hi;
    amp_block_exp_summary(&r->bs, &lo, &med, &hi);
    b[0] = (double)r->bs.blocks;
    b[1] = (double)r->bs.scale_hi;
    b[2] = (double)r->bs.scale_lo;
    b[3] = r->bs.blocks ? (double)r->bs.amax_sat / (double)r->bs.blocks : 0.0;
    b[4] = lo;
    b[5] = med;
    b[6] = hi;
}

int amp_analyze_csv_row(const amp_analyze_row *r, char *buf, size_t len)
{
    /* per numeric column: 'i' a count (an integer), 'g' a number (%.9g) */
    static const char kind[AMP_ANALYZE_NUMS + 1] = "ggiiiiiiiiiggggggiiigiii";
    char name[600];
    double v[AMP_ANALYZE_NUMS];
    csv_quote(r->tensor, name, sizeof name);
    amp_analyze_row_nums(r, v);
    int k = snprintf(buf, len, "%s,%s,%s,%s", name, r->format, r->cast, r->scale_spec);
    for (int i = 0; i < AMP_ANALYZE_NUMS && k >= 0; i++) {
        size_t at = (size_t)k < len ? (size_t)k : len;
        k += isnan(v[i]) && i >= AMP_ANALYZE_NUMS - 7 ? snprintf(buf + at, len - at, ",")
           : kind[i] == 'i' ? snprintf(buf + at, len - at, ",%.0f", v[i])
           : snprintf(buf + at, len - at, ",%.9g", v[i]);
    }
    return k;
}

size_t amp_analyze_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_analyze_opts")) return sizeof(amp_analyze_opts);
    if (!strcmp(type, "amp_analyze_row")) return sizeof(amp_analyze_row);
    if (!strcmp(type, "amp_tensor_view")) return sizeof(amp_tensor_view);
    return 0;
}
