/* The array drivers of the rounding core: fixed chunks over threads, each
 * chunk through the fast kernels (round_fast.c) or the reference path, with
 * fused statistics merged in chunk order. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "round_internal.h"

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

static void round_chunk_generic_f64(const amp_format *f, const amp_round_opts *o, const double *x,
                                    float *y, size_t n, uint64_t i0, amp_stats *st)
{
    for (size_t i = 0; i < n; i++) {
        amp_class c;
        float r = amp_round1(f, o, x[i], i0 + i, &c);
        if (st) amp_stats_add1(st, x[i], r, c);
        y[i] = r;
    }
}

static void round_chunk_generic_f32(const amp_format *f, const amp_round_opts *o, const float *x,
                                    float *y, size_t n, uint64_t i0, amp_stats *st)
{
    for (size_t i = 0; i < n; i++) {
        amp_class c;
        double xi = x[i];
        float r = amp_round1(f, o, xi, i0 + i, &c);
        if (st) amp_stats_add1(st, xi, r, c);
        y[i] = r;
    }
}

static amp_status run_chunks(const amp_format *f, const amp_round_opts *o, const void *x, int is64,
                             float *y, size_t n, amp_stats *st)
{
    amp_status s = amp_round_check_opts(f, o);
    if (s) return s;
    size_t nchunks = (n + AMP_CHUNK - 1) / AMP_CHUNK;
    if (nchunks <= 1) {                          /* both paths add to st */
        if (is64) round_chunk_generic_f64(f, o, x, y, n, 0, st);
        else if (!amp_round_fast_f32(f, o, x, y, n, st)) round_chunk_generic_f32(f, o, x, y, n, 0, st);
        return AMP_OK;
    }
    amp_stats *parts = NULL;
    if (st) {
        parts = malloc(nchunks * sizeof *parts);
        if (!parts) return amp_fail(AMP_ENOMEM, "out of memory for %zu statistics chunks", nchunks);
    }
    #pragma omp parallel for schedule(static) num_threads(amp_get_threads())
    for (size_t c = 0; c < nchunks; c++) {
        size_t lo = c * AMP_CHUNK, len = n - lo < AMP_CHUNK ? n - lo : AMP_CHUNK;
        amp_stats *ps = st ? &parts[c] : NULL;
        if (ps) amp_stats_init(ps);
        amp_round_opts oc = *o;
        oc.index0 = o->index0 + lo;
        if (is64) round_chunk_generic_f64(f, &oc, (const double *)x + lo, y + lo, len, 0, ps);
        else if (!amp_round_fast_f32(f, &oc, (const float *)x + lo, y + lo, len, ps))
            round_chunk_generic_f32(f, &oc, (const float *)x + lo, y + lo, len, 0, ps);
    }
    if (st) {
        for (size_t c = 0; c < nchunks; c++) amp_stats_merge(st, &parts[c]);
        free(parts);
    }
    return AMP_OK;
}

amp_status amp_round_f32(const amp_format *f, const amp_round_opts *o, const float *x, float *y,
                         size_t n, amp_stats *st)
{
    return run_chunks(f, o, x, 0, y, n, st);
}

amp_status amp_round_f64(const amp_format *f, const amp_round_opts *o, const double *x, float *y,
                         size_t n, amp_stats *st)
{
    return run_chunks(f, o, x, 1, y, n, st);
}

size_t amp_round_abi_size(const char *type)
{
    if (!type) return 0;
    if (!strcmp(type, "amp_format")) return sizeof(amp_format);
    if (!strcmp(type, "amp_round_opts")) return sizeof(amp_round_opts);
    if (!strcmp(type, "amp_stats")) return sizeof(amp_stats);
    return 0;
}
