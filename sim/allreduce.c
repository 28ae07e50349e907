/* Emulated all-reduce (ring, tree) in a reduction format; the order of every
 * rounding is documented in amp_allreduce.h. */
#include "amp_base.h"
#include "amp_allreduce.h"
#include "amp_format.h"
#include "amp_round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

amp_allreduce_opts amp_allreduce_defaults(void)
{
    amp_allreduce_opts o;
    memset(&o, 0, sizeof o);
    o.algo = AMP_AR_RING;
    o.fmt = *amp_format_get(AMP_FMT_FP32);
    o.round = amp_round_defaults();
    o.scaling = AMP_AR_SCALE_NONE;
    return o;
}

amp_status amp_allreduce_algo_parse(const char *s, amp_allreduce_algo *out)
{
    if (s && !strcmp(s, "ring")) *out = AMP_AR_RING;
    else if (s && !strcmp(s, "tree")) *out = AMP_AR_TREE;
    else return amp_fail(AMP_EINVAL, "all-reduce algorithm '%s': expected ring or tree", s ? s : "");
    return AMP_OK;
}

const char *amp_allreduce_algo_name(amp_allreduce_algo a)
{
    return a == AMP_AR_TREE ? "tree" : "ring";
}

amp_status amp_allreduce_scaling_parse(const char *s, amp_allreduce_scaling *out)
{
    if (s && !strcmp(s, "none")) *out = AMP_AR_SCALE_NONE;
    else if (s && !strcmp(s, "amax")) *out = AMP_AR_SCALE_AMAX;
    else if (s && !strcmp(s, "pow2")) *out = AMP_AR_SCALE_POW2;
    else if (s && !strcmp(s, "mx")) *out = AMP_AR_SCALE_MX;
    else return amp_fail(AMP_EINVAL, "all-reduce scaling '%s': expected none, amax, pow2 or mx", s ? s : "");
    return AMP_OK;
}

const char *amp_allreduce_scaling_name(amp_allreduce_scaling s)
{
    return s == AMP_AR_SCALE_AMAX ? "amax" : s == AMP_AR_SCALE_POW2 ? "pow2" : s == AMP_AR_SCALE_MX ? "mx" : "none";
}

size_t amp_allreduce_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_allreduce_opts")) return sizeof(amp_allreduce_opts);
    if (!strcmp(type, "amp_allreduce_info")) return sizeof(amp_allreduce_info);
    return 0;
}

/* y[0..m) = round_F(a[i] + b[i]) for the elements [off, off+m) of the tensor. */
static amp_status add_round(const amp_allreduce_opts *o, const float *a, const float *b, float *y,
                            size_t off, size_t m, uint64_t stream, double *tmp, amp_stats *st,
                            amp_stats *st2)
{
    for (size_t i = 0; i < m; i++) tmp[i] = (double)a[i] + (double)b[i];
    amp_round_opts ro = o->round;
    ro.stream = o->round.stream + stream;
    ro.index0 = off;
    amp_stats local;
    amp_stats_init(&local);
    amp_status s = amp_round_f64(&o->fmt, &ro, tmp, y, m, &local);
    if (s) return s;
    if (st) amp_stats_merge(st, &local);
    if (st2) amp_stats_merge(st2, &local);
    return AMP_OK;
}

/* The power-of-two rule of step 1 for a block (or tensor) with max |g| = amax
 * over R ranks (amax > 0, finite). */
static double pow2_scale(const amp_format *f, int R, double amax)
{
    return ldexp(1.0, (int)floor(log2(f->max_finite / ((double)R * amax))));
}

static float clamp_scale(double s)
{
    if (s < 0x1p-126) s = 0x1p-126;
    if (s > 0x1p127) s = 0x1p127;
    return (float)s;
}

/* amax over ranks of g[.][lo, hi) (finite values); *bad = a NaN/inf among them. */
static double range_amax(const float *const *g, int R, size_t lo, size_t hi, int *bad)
{
    double amax = 0;
    *bad = 0;
    for (int r = 0; r < R; r++)
        for (size_t i = lo; i < hi; i++) {
            double v = fabs((double)g[r][i]);
            if (!isfinite(v)) *bad = 1;
            else if (v > amax) amax = v;
        }
    return amax;
}

static float choose_scale(const amp_allreduce_opts *o, const float *const *g, int R, size_t n, double *amax_out)
{
    int bad;
    double amax = range_amax(g, R, 0, n, &bad);
    *amax_out = amax;
    if (o->scaling == AMP_AR_SCALE_NONE || o->scaling == AMP_AR_SCALE_MX || bad || amax == 0) return 1.0f;
    double s = o->scaling == AMP_AR_SCALE_POW2 ? pow2_scale(&o->fmt, R, amax) : o->fmt.max_finite / ((double)R * amax);
    return clamp_scale(s);
}

/* MX: bs[b] for every block of AMP_AR_MX_BLOCK elements; returns the
 * smallest scale of a block that is scaled (1 if none is). */
static float mx_scales(const amp_allreduce_opts *o, const float *const *g, int R, size_t n, float *bs)
{
    float smin = 0;
    for (size_t b = 0, lo = 0; lo < n; b++, lo += AMP_AR_MX_BLOCK) {
        size_t hi = lo + AMP_AR_MX_BLOCK < n ? lo + AMP_AR_MX_BLOCK : n;
        int bad;
        double amax = range_amax(g, R, lo, hi, &bad);
        bs[b] = bad || amax == 0 ? 1.0f : clamp_scale(pow2_scale(&o->fmt, R, amax));
        if (!bad && amax != 0 && (smin == 0 || bs[b] < smin)) smin = bs[b];
    }
    return smin == 0 ? 1.0f : smin;
}

amp_status amp_allreduce(const amp_allreduce_opts *o, const float *const *g, int R, size_t n,
                         float *y, amp_allreduce_info *info)
{
    amp_allreduce_info dummy;
    amp_status st = AMP_OK;
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    amp_stats_init(&info->quant);
    amp_stats_init(&info->sums);
    amp_stats_init(&info->result);
    if (R < 1) return amp_fail(AMP_EINVAL, "all-reduce: %d ranks (need at least 1)", R);
    if (n == 0) { info->scale = 1; return AMP_OK; }
    float s = choose_scale(o, g, R, n, &info->amax);
    const int mx = o->scaling == AMP_AR_SCALE_MX;

    /* q: R quantized copies; tmp: double work space; bs: MX block scales. */
    float *q = malloc((size_t)R * n * sizeof *q);
    double *tmp = malloc(n * sizeof *tmp);
    float *scaled = malloc(n * sizeof *scaled);
    float *bs = mx ? malloc((n / AMP_AR_MX_BLOCK + 1) * sizeof *bs) : NULL;
    if (!q || !tmp || !scaled || (mx && !bs)) { st = amp_fail(AMP_ENOMEM, "all-reduce: out of memory"); goto done; }
    if (mx) s = mx_scales(o, g, R, n, bs);
    info->scale = s;
    for (int r = 0; r < R; r++) {
        if (mx)
            for (size_t i = 0; i < n; i++) scaled[i] = g[r][i] * bs[i / AMP_AR_MX_BLOCK];
        else
            for (size_t i = 0; i < n; i++) scaled[i] = g[r][i] * s;   /* float32 product */
        amp_round_opts ro = o->round;
        ro.stream = o->round.stream + 1 + (uint64_t)r;
        ro.index0 = 0;
        if ((st = amp_round_f32(&o->fmt, &ro, scaled, q + (size_t)r * n, n, &info->quant))) goto done;
    }
    if (R == 1) {
        memcpy(y, q, n * sizeof *y);
        amp_stats_merge(&info->result, &info->quant);
    } else if (o->algo == AMP_AR_RING) {
        size_t base = n / (size_t)R, rem = n % (size_t)R;
        for (int c = 0; c < R; c++) {
            size_t lo = (size_t)c * base + ((size_t)c < rem ? (size_t)c : rem);
            size_t len = base + ((size_t)c < rem ? 1 : 0);
            if (!len) continue;
            memcpy(y + lo, q + (size_t)c * n + lo, len * sizeof *y);
            for (int k = 1; k < R; k++) {
                const float *own = q + (size_t)((c + k) % R) * n + lo;
                if ((st = add_round(o, y + lo, own, y + lo, lo, len, (uint64_t)R + (uint64_t)k, tmp,
                                    &info->sums, k == R - 1 ? &info->result : NULL))) goto done;
            }
        }
    } else {
        float **v = malloc((size_t)R * sizeof *v);
        if (!v) { st = amp_fail(AMP_ENOMEM, "all-reduce: out of memory"); goto done; }
        for (int r = 0; r < R; r++) v[r] = q + (size_t)r * n;
        int m = R, level = 0;
        while (m > 1) {
            level++;
            for (int j = 0; j < m / 2; j++) {
                if ((st = add_round(o, v[2 * j], v[2 * j + 1], v[2 * j], 0, n, (uint64_t)R + (uint64_t)level,
                                    tmp, &info->sums, m == 2 ? &info->result : NULL))) { free(v); goto done; }
                v[j] = v[2 * j];
            }
            if (m % 2) v[m / 2] = v[m - 1];
            m = (m + 1) / 2;
        }
        memcpy(y, v[0], n * sizeof *y);
        free(v);
    }
    if (mx) {
        for (size_t lo = 0; lo < n; lo += AMP_AR_MX_BLOCK) {
            float b = bs[lo / AMP_AR_MX_BLOCK], inv = (float)(1.0 / (double)b);
            size_t hi = lo + AMP_AR_MX_BLOCK < n ? lo + AMP_AR_MX_BLOCK : n;
            if (b != 1.0f)
                for (size_t i = lo; i < hi; i++) y[i] = y[i] * inv;
        }
    } else if (s != 1.0f) {
        float inv = (float)(1.0 / (double)s);
        for (size_t i = 0; i < n; i++) y[i] = y[i] * inv;
    }
    if (o->average && R > 1)
        for (size_t i = 0; i < n; i++) y[i] = (float)((double)y[i] / (double)R);
done:
    free(q);
    free(tmp);
    free(scaled);
    free(bs);
    return st;
}
