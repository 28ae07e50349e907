/* The statistics every rounding can report (amp_stats): clearing, merging,
 * one value at a time, and the figures derived from the counters. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "round_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- statistics ------------------------------------------------------------ */
void amp_stats_init(amp_stats *st)
{
    memset(st, 0, sizeof *st);
    st->amin_nonzero = INFINITY;
    st->hist_lo = AMP_HIST_BINS, st->hist_hi = -1;
}

void amp_stats_reset(amp_stats *st)
{
    if (st->hist_lo <= st->hist_hi)
        memset(&st->hist[st->hist_lo], 0, (size_t)(st->hist_hi - st->hist_lo + 1) * sizeof st->hist[0]);
    memset(st, 0, offsetof(amp_stats, hist));
    st->amin_nonzero = INFINITY;
    st->hist_lo = AMP_HIST_BINS, st->hist_hi = -1;
}

void amp_stats_widen(amp_stats *st, int lo, int hi)
{
    if (lo < st->hist_lo) st->hist_lo = lo;
    if (hi > st->hist_hi) st->hist_hi = hi;
}

void amp_stats_merge(amp_stats *dst, const amp_stats *src)
{
    dst->n += src->n;
    for (int c = 0; c < AMP_CLS_COUNT; c++) dst->cls[c] += src->cls[c];
    if (src->amax > dst->amax) dst->amax = src->amax;
    if (src->amin_nonzero < dst->amin_nonzero) dst->amin_nonzero = src->amin_nonzero;
    dst->sum_sq_err += src->sum_sq_err;
    dst->sum_sq += src->sum_sq;
    dst->sum_rel_sq += src->sum_rel_sq;
    dst->n_rel += src->n_rel;
    for (int b = src->hist_lo; b <= src->hist_hi; b++) dst->hist[b] += src->hist[b];
    if (src->hist_lo <= src->hist_hi) amp_stats_widen(dst, src->hist_lo, src->hist_hi);
}

double amp_stats_rel_err(const amp_stats *st)
{
    return st->n_rel ? sqrt(st->sum_rel_sq / (double)st->n_rel) : 0.0;
}

double amp_stats_in_normal_range(const amp_stats *st)
{
    uint64_t nonzero = st->n - st->cls[AMP_CLS_NAN_IN] - st->cls[AMP_CLS_INF_IN] - st->cls[AMP_CLS_ZERO_IN];
    uint64_t normal = st->cls[AMP_CLS_EXACT] + st->cls[AMP_CLS_ROUNDED];
    return nonzero ? (double)normal / (double)nonzero : 0.0;
}

int64_t amp_stats_nonfinite(const amp_format *f, const amp_round_opts *o, const uint64_t *cls)
{
    uint64_t bad = cls[AMP_CLS_NAN_IN] + cls[AMP_CLS_OVERFLOW];
    if (cls[AMP_CLS_INF_IN]) {
        int pos = isfinite(amp_round1(f, o, INFINITY, 0, NULL)), neg = isfinite(amp_round1(f, o, -INFINITY, 0, NULL));
        if (pos != neg) return -1;
        if (!pos) bad += cls[AMP_CLS_INF_IN];
    }
    return (int64_t)bad;
}

/* Adds one element (input x, result y, class c) to st: the scalar form of the
 * counters that the fast kernels fuse. */
void amp_stats_add1(amp_stats *st, double x, float y, amp_class c)
{
    double ax = fabs(x);
    st->n++;
    st->cls[c]++;
    if (c == AMP_CLS_NAN_IN) return;
    if (ax > st->amax) st->amax = ax;
    if (c == AMP_CLS_INF_IN || c == AMP_CLS_ZERO_IN) return;
    if (ax < st->amin_nonzero) st->amin_nonzero = ax;
    int b = ilogb(ax) - AMP_HIST_LO;
    b = b < 0 ? 0 : b >= AMP_HIST_BINS ? AMP_HIST_BINS - 1 : b;
    st->hist[b]++;
    amp_stats_widen(st, b, b);
    if (isfinite(y)) {
        double d = (double)y - x;
        st->sum_sq_err += d * d;
        st->sum_sq += x * x;
        st->sum_rel_sq += (d / x) * (d / x);
        st->n_rel++;
    }
}
