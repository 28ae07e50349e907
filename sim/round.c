/* The array drivers of the rounding core: fixed chunks over threads, each
 * chunk through the fast kernels (round_fast.c) or the reference path, with
 * fused statistics merged in chunk order. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "round_internal.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- array drivers ----------------------------------------------------------
 * Work is cut into fixed chunks of AMP_CHUNK elements; each chunk's statistics
 * are kept apart and merged in chunk order, so the floating-point sums (and so
 * every output byte) are the same whatever the number of threads. */
static int n_threads;

void amp_set_threads(int n) { n_threads = n > 0 ? n : 0; }
int amp_get_threads(void) { return n_threads > 0 ? n_threads : omp_get_max_threads(); }

/* The generic path over one chunk; returns how many results are inf or NaN. */
static size_t round_chunk_generic_f64(const amp_format *f, const amp_round_opts *o, const double *x,
                                      float *y, size_t n, uint64_t i0, amp_stats *st)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        amp_class c;
        float r = amp_round1(f, o, x[i], i0 + i, &c);
        if (st) amp_stats_add1(st, x[i], r, c);
        bad += !isfinite(r);
        y[i] = r;
    }
    return bad;
}

static size_t round_chunk_generic_f32(const amp_format *f, const amp_round_opts *o, const float *x,
                                      float *y, size_t n, uint64_t i0, amp_stats *st)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        amp_class c;
        double xi = x[i];
        float r = amp_round1(f, o, xi, i0 + i, &c);
        if (st) amp_stats_add1(st, xi, r, c);
        bad += !isfinite(r);
        y[i] = r;
    }
    return bad;
}

/* One chunk through the fast kernels or the generic path; its non-finite
 * results are added to *bad when bad is non-NULL: counted by the generic
 * path element by element, by the fast kernels without statistics block by
 * block, and with statistics told by the class counts (a second look at y
 * only when they cannot tell, see amp_stats_nonfinite). */
static void round_chunk(const amp_format *f, const amp_round_opts *o, const void *x, int is64, float *y, size_t n,
                        amp_stats *st, size_t *bad)
{
    size_t b = 0;
    uint64_t cls0[AMP_CLS_COUNT];
    if (st && bad) memcpy(cls0, st->cls, sizeof cls0);
    if (is64) b = round_chunk_generic_f64(f, o, x, y, n, 0, st);
    else if (!amp_round_fast_f32(f, o, x, y, n, st, bad ? &b : NULL)) b = round_chunk_generic_f32(f, o, x, y, n, 0, st);
    else if (st && bad) {   /* the fused statistics' class counts tell */
        uint64_t d[AMP_CLS_COUNT];
        for (int c = 0; c < AMP_CLS_COUNT; c++) d[c] = st->cls[c] - cls0[c];
        int64_t nb = amp_stats_nonfinite(f, o, d);
        b = nb >= 0 ? (size_t)nb : amp_count_nonfinite(y, n);
    }
    if (bad) *bad += b;
}

static amp_status run_chunks(const amp_format *f, const amp_round_opts *o, const void *x, int is64,
                             float *y, size_t n, amp_stats *st, size_t *nonfinite)
{
    amp_status s = amp_round_check_opts(f, o);
    if (s) return s;
    size_t nchunks = (n + AMP_CHUNK - 1) / AMP_CHUNK;
    if (nchunks <= 1) {                          /* both paths add to st */
        round_chunk(f, o, x, is64, y, n, st, nonfinite);
        return AMP_OK;
    }
    amp_stats *parts = NULL;
    if (st) {
        parts = malloc(nchunks * sizeof *parts);
        if (!parts) return amp_fail(AMP_ENOMEM, "out of memory for %zu statistics chunks", nchunks);
    }
    size_t bad = 0;   /* a sum of counts: the same in any order */
    #pragma omp parallel for schedule(static) num_threads(amp_get_threads()) reduction(+ : bad)
    for (size_t c = 0; c < nchunks; c++) {
        size_t lo = c * AMP_CHUNK, len = n - lo < AMP_CHUNK ? n - lo : AMP_CHUNK;
        amp_stats *ps = st ? &parts[c] : NULL;
        if (ps) amp_stats_init(ps);
        amp_round_opts oc = *o;
        oc.index0 = o->index0 + lo;
        size_t b = 0;
        round_chunk(f, &oc, is64 ? (const void *)((const double *)x + lo) : (const void *)((const float *)x + lo), is64,
                    y + lo, len, ps, nonfinite ? &b : NULL);
        bad += b;
    }
    if (nonfinite) *nonfinite += bad;
    if (st) {
        for (size_t c = 0; c < nchunks; c++) amp_stats_merge(st, &parts[c]);
        free(parts);
    }
    return AMP_OK;
}

amp_status amp_round_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                         size_t n, amp_stats *st)
{
    return run_chunks(f, o, x, 0, y, n, st, NULL);
}

amp_status amp_round_f64(const amp_format *f, const amp_round_opts *o, const double *x, float *y,
                         size_t n, amp_stats *st)
{
    return run_chunks(f, o, x, 1, y, n, st, NULL);
}

amp_status amp_round_f32_nonfinite(const amp_format *f, const amp_round_opts *o, const float *x, float *y, size_t n,
                                   amp_stats *st, size_t *nonfinite)
{
    return run_chunks(f, o, x, 0, y, n, st, nonfinite);
}

amp_status amp_round_f64_nonfinite(const amp_format *f, const amp_round_opts *o, const double *x, float *y, size_t n,
                                   amp_stats *st, size_t *nonfinite)
{
    return run_chunks(f, o, x, 1, y, n, st, nonfinite);
}

amp_status amp_round_f32_many(size_t k, const amp_format *const *f, const amp_round_opts *const *o,
                              const float *const *x, float *const *y, const size_t *n, size_t *nonfinite)
{
    for (size_t j = 0; j < k; j++) {
        nonfinite[j] = 0;
        amp_status s = run_chunks(f[j], o[j], x[j], 0, y[j], n[j], NULL, &nonfinite[j]);
        if (s != AMP_OK) return s;
    }
    return AMP_OK;
}

size_t amp_round_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_format")) return sizeof(amp_format);
    if (!strcmp(type, "amp_round_opts")) return sizeof(amp_round_opts);
    if (!strcmp(type, "amp_stats")) return sizeof(amp_stats);
    return 0;
}
