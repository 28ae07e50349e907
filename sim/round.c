/* The rounding core: the generic exact path (any double input, every mode and
 * option), the array drivers with fused statistics, and the options/names.
 * The fast float32 kernels live in round_fast.c and are checked bit for bit
 * against amp_round1 and the MPFR reference (tests/check_round.c). */
#include "ampsim.h"
#include "round_internal.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *const rounding_names[AMP_RND_COUNT] = {
    [AMP_RND_NE] = "rne", [AMP_RND_NA] = "rna", [AMP_RND_TZ] = "rtz", [AMP_RND_UP] = "rup",
    [AMP_RND_DN] = "rdn", [AMP_RND_TO] = "rto", [AMP_RND_SR] = "sr",
};
_Static_assert(AMP_RND_COUNT == 7, "rounding_names covers every mode");

static const char *const class_names[AMP_CLS_COUNT] = {
    "nan_in", "inf_in", "zero_in", "overflow", "saturated", "flushed", "subnormal", "exact", "rounded",
};
_Static_assert(AMP_CLS_COUNT == 9, "class_names covers every class");

amp_round_opts amp_round_defaults(void)
{
    amp_round_opts o = { .mode = AMP_RND_NE };
    return o;
}

const char *amp_rounding_name(amp_rounding m)
{
    return (m >= 0 && m < AMP_RND_COUNT) ? rounding_names[m] : "?";
}

amp_status amp_rounding_parse(const char *s, amp_rounding *out)
{
    for (int m = 0; m < AMP_RND_COUNT; m++)
        if (s && !strcmp(s, rounding_names[m])) { *out = (amp_rounding)m; return AMP_OK; }
    return amp_fail(AMP_EINVAL, "unknown rounding mode '%s' (rne, rna, rtz, rup, rdn, rto, sr)", s ? s : "");
}

const char *amp_class_name(amp_class c)
{
    return (c >= 0 && c < AMP_CLS_COUNT) ? class_names[c] : "?";
}

amp_status amp_round_check_opts(const amp_format *f, const amp_round_opts *o)
{
    if (!f || !o) return amp_fail(AMP_EINVAL, "null format or options");
    if (o->mode < 0 || o->mode >= AMP_RND_COUNT) return amp_fail(AMP_EINVAL, "bad rounding mode %d", (int)o->mode);
    if (o->sr_bits < 0 || o->sr_bits > 64) return amp_fail(AMP_EINVAL, "--sr-bits must be 1..64 (got %d)", o->sr_bits);
    if (o->flags & ~(unsigned)(AMP_SATURATE | AMP_FTZ | AMP_DAZ | AMP_EXACT))
        return amp_fail(AMP_EINVAL, "unknown rounding flags 0x%x", o->flags);
    return AMP_OK;
}

/* ---- the generic exact path ------------------------------------------------
 * x = sig * 2^(e-52) with 2^52 <= sig < 2^53. The quantum of the result is
 * 2^qe, qe = max(e, emin) - mbits (e - mbits for formats without subnormals):
 * the exponent is unbounded above, so rounding happens first and the range is
 * checked after, as OCP / ONNX Cast-19 prescribe. sh = qe - (e - 52) >= 29 is
 * how many low bits of sig are discarded. */
float amp_round_overflow(const amp_format *f, const amp_round_opts *o, int neg, amp_class *cls)
{
    amp_rounding m = o->mode;
    int toward_zero = m == AMP_RND_TZ || m == AMP_RND_TO || (m == AMP_RND_DN && !neg) ||
                      (m == AMP_RND_UP && neg);
    if (!f->is_signed && neg) { *cls = AMP_CLS_OVERFLOW; return NAN; }
    if ((o->flags & AMP_SATURATE) || toward_zero || (!f->has_inf && f->nan == AMP_NAN_NONE)) {
        *cls = AMP_CLS_SATURATED;
        return (float)(neg ? -f->max_finite : f->max_finite);
    }
    *cls = AMP_CLS_OVERFLOW;
    if (f->has_inf) return neg ? -INFINITY : INFINITY;
    return NAN;
}

float amp_round1(const amp_format *f, const amp_round_opts *o, double x, uint64_t index, amp_class *cls_out)
{
    amp_class cls;
    float r;
    uint64_t u = amp_d2u(x), a = u & ~(1ULL << 63);
    int neg = (int)(u >> 63);
    if (!cls_out) cls_out = &cls;

    if (o->flags & AMP_EXACT) return amp_round1_mpfr(f, o, x, index, cls_out);
    if (a > 0x7ff0000000000000ULL) {             /* NaN stays NaN (quiet) */
        *cls_out = AMP_CLS_NAN_IN;
        return (float)x;
    }
    if (a == 0x7ff0000000000000ULL) {            /* +-inf */
        *cls_out = AMP_CLS_INF_IN;
        if (!f->is_signed && neg) return NAN;
        if ((o->flags & AMP_SATURATE) || (!f->has_inf && f->nan == AMP_NAN_NONE))
            return (float)(neg ? -f->max_finite : f->max_finite);
        if (f->has_inf) return neg ? -INFINITY : INFINITY;
        return NAN;
    }
    if (a == 0) {
        *cls_out = AMP_CLS_ZERO_IN;
        if (!f->has_subnormals) return NAN;      /* e8m0 has no zero */
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }
    if (!f->is_signed && neg) { *cls_out = AMP_CLS_OVERFLOW; return NAN; }
    if ((o->flags & AMP_DAZ) && f->has_subnormals && fabs(x) < f->min_normal) {
        *cls_out = AMP_CLS_FLUSHED;
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }

    /* decompose |x| = sig * 2^(e-52) */
    int e;
    uint64_t sig;
    if (a >= (1ULL << 52)) {
        e = (int)(a >> 52) - 1023;
        sig = (a & ((1ULL << 52) - 1)) | (1ULL << 52);
    } else {                                      /* double subnormal */
        int lz = __builtin_clzll(a) - 11;         /* shift to put the top bit at 52 */
        sig = a << lz;
        e = -1022 - lz;
    }
    int qe = (f->has_subnormals && e < f->emin ? f->emin : e) - f->mbits;
    int sh = qe - (e - 52);
    AMP_ASSERT(sh >= 29);

    uint64_t kept, rem, half;
    int round_bit, sticky;                        /* bit below the kept ones; any below that */
    if (sh < 64) {
        kept = sig >> sh;
        rem = sig & ((1ULL << sh) - 1);
        half = 1ULL << (sh - 1);
        round_bit = rem >= half;
        sticky = (rem & (half - 1)) != 0;
    } else {
        kept = 0;
        rem = sig;
        round_bit = 0;                            /* sig < 2^53 <= 2^(sh-1) */
        sticky = 1;
    }
    int inexact = round_bit || sticky;
    int up = 0;
    switch (o->mode) {
    case AMP_RND_NE: up = round_bit && (sticky || (kept & 1)); break;
    case AMP_RND_NA: up = round_bit; break;
    case AMP_RND_TZ: break;
    case AMP_RND_UP: up = inexact && !neg; break;
    case AMP_RND_DN: up = inexact && neg; break;
    case AMP_RND_TO: if (inexact) kept |= 1; break;
    case AMP_RND_SR:
        if (inexact) {
            /* P(up) = rem / 2^sh, drawn with K random bits: T = floor(rem * 2^(K-sh)),
             * up iff r < T for r uniform in [0, 2^K). Exact when K = sh <= 64. */
            int K = o->sr_bits ? o->sr_bits : 64;
            if (K > sh) K = sh;
            if (K > 64) K = 64;
            int drop = sh - K;
            uint64_t T = drop >= 64 ? 0 : rem >> drop;
            uint64_t draw = amp_rand64(o->seed, o->stream, o->index0 + index);
            draw = K == 64 ? draw : draw >> (64 - K);
            up = draw < T;
        }
        break;
    default: AMP_ASSERT(0);
    }
    kept += (uint64_t)up;
    double mag = ldexp((double)kept, qe);

    if (mag > f->max_finite) return amp_round_overflow(f, o, neg, cls_out);
    if (mag == 0) {
        *cls_out = AMP_CLS_FLUSHED;
        return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
    }
    if (mag < f->min_normal) {
        if (!f->has_subnormals) {                 /* e8m0: no zero to flush to */
            *cls_out = AMP_CLS_FLUSHED;
            return (float)f->min_normal;
        }
        if (o->flags & AMP_FTZ) {
            *cls_out = AMP_CLS_FLUSHED;
            return (neg && f->has_neg_zero) ? -0.0f : 0.0f;
        }
        *cls_out = AMP_CLS_SUBNORMAL;
    } else {
        *cls_out = inexact ? AMP_CLS_ROUNDED : AMP_CLS_EXACT;
    }
    r = (float)mag;
    return neg ? -r : r;
}

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
