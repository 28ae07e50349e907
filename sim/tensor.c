/* The tensor registry: the one list of a model's tensors, and the single place
 * where values are rounded into a tensor's format (with fused statistics). */
#include "amp_base.h"
#include "amp_block.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[AMP_ROLE_COUNT] = {
    "weight", "act", "act_grad", "weight_grad", "master", "optim_state", "update",
};
_Static_assert(AMP_ROLE_COUNT == 7, "role_names covers every role");

const char *amp_role_name(amp_role r) { return (r >= 0 && r < AMP_ROLE_COUNT) ? role_names[r] : "?"; }

const char *amp_phase_name(amp_phase p)
{
    return p == AMP_PHASE_FORWARD ? "forward" : p == AMP_PHASE_BACKWARD ? "backward" : "update";
}

void amp_tensors_init(amp_tensors *r, uint64_t seed, amp_rounding mode, int sr_bits)
{
    memset(r, 0, sizeof *r);
    r->seed = seed;
    r->mode = mode;
    r->sr_bits = sr_bits;
}

void amp_tensors_free(amp_tensors *r)
{
    for (int i = 0; i < r->n; i++) {
        amp_tensor *t = r->t[i];
        if (!t->borrowed) free(t->data);
        free(t->stats);
        free(t->grad32);
        free(t);
    }
    free(r->t);
    free(r->grads);
    r->t = r->grads = NULL;
    r->n = r->cap = r->ngrads = 0;
}

amp_status amp_tensor_share(amp_tensor *t, const amp_tensor *owner)
{
    if (t == owner) return AMP_OK;
    if (t->n != owner->n || owner->borrowed)
        return amp_fail(AMP_EINVAL, "tensor %s cannot share the storage of %s", t->name, owner->name);
    if (!t->borrowed) free(t->data);
    t->data = owner->data;
    t->borrowed = 1;
    return AMP_OK;
}

amp_tensor *amp_tensors_find(const amp_tensors *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->t[i]->name, name)) return r->t[i];
    return NULL;
}

amp_status amp_tensors_add(amp_tensors *r, const char *name, amp_role role, const amp_format *fmt,
                           int ndim, const size_t *shape, amp_tensor **out)
{
    if (strlen(name) >= AMP_TENSOR_NAME) return amp_fail(AMP_EINVAL, "tensor name too long: %s", name);
    if (amp_tensors_find(r, name)) return amp_fail(AMP_EINVAL, "tensor %s registered twice", name);
    if (ndim < 1 || ndim > AMP_TENSOR_MAXDIM) return amp_fail(AMP_EINVAL, "tensor %s: %d dimensions", name, ndim);
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        if (!shape[d] || !amp_mul_size(n, shape[d], &n) || n > ((size_t)1 << 34))
            return amp_fail(AMP_ERANGE, "tensor %s: bad shape", name);
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        amp_tensor **nt = realloc(r->t, (size_t)cap * sizeof *nt);
        if (!nt) return amp_fail(AMP_ENOMEM, "out of memory for the tensor list");
        r->t = nt;
        amp_tensor **ng = realloc(r->grads, (size_t)cap * sizeof *ng);
        if (!ng) return amp_fail(AMP_ENOMEM, "out of memory for the tensor list");
        r->grads = ng;
        r->cap = cap;
    }
    amp_tensor *t = calloc(1, sizeof *t);
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *data = t ? aligned_alloc(64, bytes) : NULL;
    if (!data) {
        free(t);
        return amp_fail(AMP_ENOMEM, "out of memory for tensor %s (%zu values)", name, n);
    }
    memset(data, 0, bytes);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->role = role;
    t->id = r->n;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->n = n;
    t->fmt = *fmt;
    t->data = data;
    t->scale = 1.0f;
    t->gscale = 1.0f;
    t->log = role != AMP_ROLE_MASTER && role != AMP_ROLE_OPTIM_STATE;
    r->t[r->n++] = t;
    if (role == AMP_ROLE_WEIGHT_GRAD || role == AMP_ROLE_ACT_GRAD) r->grads[r->ngrads++] = t;
    if (out) *out = t;
    return AMP_OK;
}

void amp_tensors_begin_step(amp_tensors *r, int64_t step, unsigned stats_roles)
{
    r->step = step;
    r->stats_roles = stats_roles;
    r->phase = AMP_PHASE_FORWARD;
    r->nonfinite_tensor = NULL;
    r->nonfinite_count = 0;
    for (int i = 0; i < r->n; i++) {
        r->t[i]->written = 0;
        r->t[i]->stats_valid = 0;
    }
}

void amp_tensors_zero_grad(amp_tensors *r)
{
    for (int i = 0; i < r->n; i++) r->t[i]->written = 0;
}

int amp_tensor_stats_due(const amp_tensors *r, const amp_tensor *t)
{
    return (r->stats_roles >> t->role) & 1u;
}

amp_round_opts amp_tensor_opts(const amp_tensors *r, const amp_tensor *t)
{
    amp_round_opts o = amp_round_defaults();
    o.mode = r->mode;
    o.sr_bits = r->sr_bits;
    o.flags = t->rnd_flags;
    /* SR key: the step is mixed into the seed, the tensor id is the stream and
     * the element index the counter, so no draw depends on thread count. */
    o.seed = amp_rand64(r->seed, 0x7374657000000000ull ^ (uint64_t)r->step, 0);
    o.stream = (uint64_t)t->id;
    o.index0 = 0;
    return o;
}

static amp_stats *stats_of(amp_tensors *r, amp_tensor *t)
{
    if (!amp_tensor_stats_due(r, t)) return NULL;
    if (!t->stats) {
        t->stats = malloc(sizeof *t->stats);
        if (!t->stats) return NULL;
        amp_stats_init(t->stats);
    }
    if (!t->stats_valid) {
        amp_stats_reset(t->stats);
        t->stats_valid = 1;
    }
    return t->stats;
}

/* Records the first non-finite tensor of the step: t, which holds `bad`
 * non-finite values, unless an earlier one did. */
static void note_finite(amp_tensors *r, amp_tensor *t, uint64_t bad)
{
    if (bad && !r->nonfinite_tensor) {
        r->nonfinite_tensor = t;
        r->nonfinite_phase = r->phase;
        r->nonfinite_count = bad;
    }
}

/* Counts the non-finite values of t (a pass over its data: the writes that
 * do not go through round_into). */
static void check_finite(amp_tensors *r, amp_tensor *t)
{
    note_finite(r, t, amp_count_nonfinite(t->data, t->n));
}

/* dst[0..n) = src (unless the same array), returning how many are inf or
 * NaN: counted block by block while the block is in L1 (one pass). */
static size_t copy_counted(float *dst, const float *src, size_t n)
{
    enum { CB = 4096 };
    size_t bad = 0;
    for (size_t i = 0; i < n; i += CB) {
        size_t m = n - i < CB ? n - i : CB;
        if (dst != src) memcpy(dst + i, src + i, m * sizeof *dst);
        bad += amp_count_nonfinite(dst + i, m);
    }
    return bad;
}

/* Rounds t->n values (x32, or x64 if non-NULL) into t->data, adding the
 * statistics to st (may be NULL), and notes t's non-finite results (counted
 * by the rounding in its one pass). */
static amp_status round_into(amp_tensors *r, amp_tensor *t, const amp_round_opts *o, const float *x32,
                             const double *x64, amp_stats *st)
{
    size_t bad = 0;
    amp_status s = x64 ? amp_round_f64_nonfinite(&t->fmt, o, x64, t->data, t->n, st, &bad)
                       : amp_round_f32_nonfinite(&t->fmt, o, x32, t->data, t->n, st, &bad);
    if (s) return s;
    note_finite(r, t, bad);
    return AMP_OK;
}

/* rescale() leaves src as it is. */
static int no_rescale(const amp_tensors *r, const amp_tensor *t)
{
    return !r->layerwise || (t->role != AMP_ROLE_ACT_GRAD && t->role != AMP_ROLE_WEIGHT_GRAD) ||
           t->gscale == r->src_gscale;
}

/* round_scaled is a copy (the identity branch below). */
static int identity_write(amp_tensors *r, const amp_tensor *t)
{
    return no_rescale(r, t) && t->blk.cols <= 0 && t->fmt.id == AMP_FMT_FP32 && !t->rnd_flags &&
           !amp_tensor_stats_due(r, t);
}

/* Layer-wise loss scaling: src * (t->gscale / r->src_gscale) into *tmp when
 * the factor is not 1 (powers of two: exact unless it over/underflows float32). */
static amp_status rescale(amp_tensors *r, const amp_tensor *t, const float **src, float **tmp)
{
    *tmp = NULL;
    if (no_rescale(r, t)) return AMP_OK;
    float f = (float)((double)t->gscale / (double)r->src_gscale);
    *tmp = malloc(t->n * sizeof(float));
    if (!*tmp) return amp_fail(AMP_ENOMEM, "out of memory rescaling %s", t->name);
    for (size_t i = 0; i < t->n; i++) (*tmp)[i] = (*src)[i] * f;
    *src = *tmp;
    return AMP_OK;
}

static amp_status round_scaled(amp_tensors *r, amp_tensor *t, const float *src);

amp_status amp_tensor_round(amp_tensors *r, amp_tensor *t, const float *src)
{
    float *tmp;
    amp_status s = rescale(r, t, &src, &tmp);
    if (!s) s = round_scaled(r, t, src);
    free(tmp);
    return s;
}

amp_status amp_tensor_round_counted(amp_tensors *r, amp_tensor *t, size_t nonfinite)
{
    if (!identity_write(r, t)) return amp_tensor_round(r, t, t->data);
    note_finite(r, t, nonfinite);
    t->written = 1;
    return AMP_OK;
}

static amp_status round_scaled(amp_tensors *r, amp_tensor *t, const float *src)
{
    amp_stats *st = stats_of(r, t);
    if (amp_tensor_stats_due(r, t) && !st) return amp_fail(AMP_ENOMEM, "out of memory for statistics");
    amp_round_opts o = amp_tensor_opts(r, t);
    amp_status s;
    int checked = 0;                         /* round_into notes the non-finite results */
    if (t->blk.cols > 0) {
        size_t cols = t->shape[t->ndim - 1];
        if (t->blk_sr) o.mode = AMP_RND_SR;
        s = amp_block_round(&t->blk, &o, src, t->data, t->n / cols, cols, st, NULL);
    } else if (r->fp8 && t->fmt.bits <= 8) {
        amp_fp8_role role = t->role == AMP_ROLE_WEIGHT ? AMP_FP8_WEIGHT
                          : t->role == AMP_ROLE_ACT_GRAD ? AMP_FP8_GRAD : AMP_FP8_ACT;
        const amp_format *qf = amp_fp8_format(r->fp8, role);
        if (strcmp(qf->name, t->fmt.name))
            return amp_fail(AMP_EINVAL, "FP8 scaler puts %s into %s, but the policy says %s", t->name, qf->name, t->fmt.name);
        size_t rows = t->ndim >= 2 ? t->n / t->shape[t->ndim - 1] : 1;
        amp_fp8_info info;
        s = amp_fp8_quantize(r->fp8, (size_t)t->id, role, src, rows, t->n / rows, NULL, t->data, NULL, st, &info);
        t->scale = info.scale;
        if (!s) note_finite(r, t, info.nonfinite);
        checked = 1;
    } else if (t->fmt.id == AMP_FMT_FP32 && !st && !t->rnd_flags) {
        s = AMP_OK;                          /* identity: float32 values are fp32 values */
        note_finite(r, t, copy_counted(t->data, src, t->n));
        checked = 1;
    } else {
        s = round_into(r, t, &o, src, NULL, st);
        checked = 1;
    }
    if (s) return s;
    t->written = 1;
    if (!checked) check_finite(r, t);
    return AMP_OK;
}

/* amp_round_sum2 on a block of at most SUM2_BLOCK values: a sum that float32
 * holds exactly goes through the float32 kernel (every path gives a value's
 * bits whatever its width), the others through amp_round1 with the same SR
 * key (index0 + i). Into fp32 under rne without flags the rounding of the
 * double sum is the IEEE conversion (which is also what amp_round1 returns
 * for a NaN), in a loop that vectorises. bad (when not NULL) gets the count
 * of inf and NaN results, taken while the block is in L1. */
#define SUM2_BLOCK 2048
static amp_status sum2_block(const amp_format *f, const amp_round_opts *o, const float *a, const float *b,
                             float *y, size_t n, size_t *bad)
{
    if (f->id == AMP_FMT_FP32 && !o->flags && o->mode == AMP_RND_NE) {
        size_t i = 0;
        for (; i + 16 <= n; i += 16) {   /* groups through locals: y may be a (in place) */
            float ta[16], tb[16], ty[16];
            memcpy(ta, a + i, sizeof ta);
            memcpy(tb, b + i, sizeof tb);
            for (int j = 0; j < 16; j++) ty[j] = (float)((double)ta[j] + (double)tb[j]);
            memcpy(y + i, ty, sizeof ty);
        }
        for (; i < n; i++) y[i] = (float)((double)a[i] + (double)b[i]);
        if (bad) *bad = amp_count_nonfinite(y, n);
        return AMP_OK;
    }
    float v[SUM2_BLOCK];
    uint32_t odd[SUM2_BLOCK];
    if (n == 0) return AMP_OK;
    size_t n_odd = 0;
    for (size_t i = 0; i < n; i++) {
        double sum = (double)a[i] + (double)b[i];
        v[i] = (float)sum;
        odd[n_odd] = (uint32_t)i;
        n_odd += (double)v[i] != sum;            /* inexact in float32, or NaN */
    }
    amp_status s = amp_round_f32(f, o, v, v, n, NULL);
    if (s) return s;
    for (size_t k = 0; k < n_odd; k++) {
        size_t i = odd[k];
        v[i] = amp_round1(f, o, (double)a[i] + (double)b[i], i, NULL);
    }
    memcpy(y, v, n * sizeof(float));
    if (bad) *bad = amp_count_nonfinite(y, n);
    return AMP_OK;
}

amp_status amp_round_sum2(const amp_format *f, const amp_round_opts *o, const float *a, const float *b, float *y,
                          size_t n)
{
    amp_status s = AMP_OK;
    long nb = (long)((n + SUM2_BLOCK - 1) / SUM2_BLOCK);
    int nt = amp_get_threads();
    #pragma omp parallel for schedule(static) num_threads(nt > 1 ? nt : 1) if (nt > 1 && nb >= 16)
    for (long k = 0; k < nb; k++) {
        size_t lo = (size_t)k * SUM2_BLOCK, len = n - lo < SUM2_BLOCK ? n - lo : SUM2_BLOCK;
        amp_round_opts ob = *o;
        ob.index0 = o->index0 + lo;
        amp_status sb = sum2_block(f, &ob, a + lo, b + lo, y + lo, len, NULL);
        if (sb) {
            #pragma omp critical(amp_sum2_status)
            s = sb;
        }
    }
    return s;
}

/* accum without statistics, block [lo, lo+len) of t: src rounded into the
 * format (into fp32 without flags: itself), then amp_round_sum2 with data. */
static amp_status accum_block(amp_tensor *t, const amp_round_opts *o, const float *src, size_t lo, size_t len,
                              size_t *bad)
{
    float tmp[SUM2_BLOCK];
    amp_round_opts ob = *o;
    ob.index0 = o->index0 + lo;
    const float *a = src + lo;
    if (t->fmt.id != AMP_FMT_FP32 || o->flags) {
        amp_status s = amp_round_f32(&t->fmt, &ob, a, tmp, len, NULL);
        if (s) return s;
        a = tmp;
    }
    return sum2_block(&t->fmt, &ob, t->data + lo, a, t->data + lo, len, bad);
}

amp_status amp_tensor_accum(amp_tensors *r, amp_tensor *t, const float *src)
{
    if (!t->written) return amp_tensor_round(r, t, src);
    float *scaled;
    amp_status s0 = rescale(r, t, &src, &scaled);
    if (s0) return s0;
    amp_round_opts o = amp_tensor_opts(r, t);
    o.index0 = t->n;                         /* a different SR draw from the first write */
    amp_stats *st = stats_of(r, t);
    if (!st && !amp_tensor_stats_due(r, t)) {
        amp_status s = AMP_OK;
        long nb = (long)((t->n + SUM2_BLOCK - 1) / SUM2_BLOCK);
        int nt = amp_get_threads();
        size_t bad = 0;
        #pragma omp parallel for schedule(static) reduction(+:bad) num_threads(nt > 1 ? nt : 1) if (nt > 1 && nb >= 16)
        for (long b = 0; b < nb; b++) {
            size_t lo = (size_t)b * SUM2_BLOCK, len = t->n - lo < SUM2_BLOCK ? t->n - lo : SUM2_BLOCK, nbad = 0;
            amp_status sb = accum_block(t, &o, src, lo, len, &nbad);
            bad += nbad;
            if (sb) {
                #pragma omp critical(amp_accum_status)
                s = sb;
            }
        }
        free(scaled);
        if (!s) note_finite(r, t, bad);   /* counted block by block (check_finite's count) */
        return s;
    }
    /* second contribution: round it into the format, add in double, round again */
    float *tmp = malloc(t->n * sizeof(float));
    if (!tmp) { free(scaled); return amp_fail(AMP_ENOMEM, "out of memory accumulating %s", t->name); }
    amp_status s = amp_round_f32(&t->fmt, &o, src, tmp, t->n, NULL);
    if (!s) {
        double *sum = malloc(t->n * sizeof(double));
        if (!sum) s = amp_fail(AMP_ENOMEM, "out of memory accumulating %s", t->name);
        else {
            for (size_t i = 0; i < t->n; i++) sum[i] = (double)t->data[i] + (double)tmp[i];
            s = round_into(r, t, &o, NULL, sum, st);
            free(sum);
        }
    }
    free(tmp);
    free(scaled);
    return s;
}

amp_status amp_tensor_observe(amp_tensors *r, amp_tensor *t)
{
    amp_stats *st = stats_of(r, t);
    if (st) {
        amp_round_opts o = amp_tensor_opts(r, t);
        o.mode = AMP_RND_NE;                 /* values are in the format: the rounding is exact */
        amp_status s = round_into(r, t, &o, t->data, NULL, st);
        if (s) return s;
    } else {
        check_finite(r, t);
    }
    t->written = 1;
    return AMP_OK;
}

uint64_t amp_tensor_name_key(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    return h;
}
