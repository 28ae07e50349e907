/* FP8 scaling strategies (docs/scalers-arith.md states their arithmetic):
 *   delayed  Transformer Engine DelayedScaling as its fused update kernel does
 *            it: amax history, max|most_recent, scale (fp8_max * 2^-margin) /
 *            amax from amaxes of earlier steps, TE's edge cases
 *   current  TE current scaling (compute_scale_from_amax, amax epsilon 0):
 *            fp8_max / amax of the tensor now, optional power-of-two scale
 *            (float32 mantissa cleared = round down)
 *   mx       OCP Microscaling: 1 x block runs, E8M0 shared scale; exponent by
 *            floor (OCP reference, elements above max_finite clamped) or ceil
 *            (TE: float_to_e8m0(amax * float(1/max)), NaN values skipped)
 *   block    DeepSeek-V3: 1 x size runs (activations, gradients), size x size
 *            tiles (weights), FP32 scale s = amax / fp8_max (or a power of two)
 * Every strategy quantizes with q = cast_sat(x*scale) (RNE, saturating, via
 * amp_round_f32/f64, statistics fused) and dequantizes with the inverse. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_scaler.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

amp_status amp_fp8_init(amp_fp8_scaler *sc, const amp_scaler_spec *spec)
{
    if (!amp_scaler_kind_is_fp8(spec->kind))
        return amp_fail(AMP_EINVAL, "scaler spec '%s': %s is a loss scaler, not an FP8 scaling strategy",
                        spec->text, amp_scaler_kind_name(spec->kind));
    memset(sc, 0, sizeof *sc);
    sc->spec = *spec;
    return AMP_OK;
}

amp_status amp_fp8_init_str(amp_fp8_scaler *sc, const char *text)
{
    amp_scaler_spec s;
    amp_status st = amp_scaler_spec_parse(text, &s);
    if (st) return st;
    return amp_fp8_init(sc, &s);
}

void amp_fp8_free(amp_fp8_scaler *sc)
{
    for (size_t i = 0; i < sc->n; i++) free(sc->t[i].hist);
    free(sc->t);
    sc->t = NULL;
    sc->n = 0;
}

const amp_format *amp_fp8_format(const amp_fp8_scaler *sc, amp_fp8_role role)
{
    if (!sc->spec.fmt_hybrid) return &sc->spec.fmt;
    return amp_format_get(role == AMP_FP8_GRAD ? AMP_FMT_E5M2 : AMP_FMT_E4M3);
}

static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

static int is_tile(const amp_fp8_scaler *sc, amp_fp8_role role, size_t rows)
{
    return sc->spec.kind == AMP_SCALER_BLOCK && role == AMP_FP8_WEIGHT && rows > 1;
}

size_t amp_fp8_nblocks(const amp_fp8_scaler *sc, amp_fp8_role role, size_t rows, size_t cols)
{
    size_t B = (size_t)sc->spec.block;
    switch (sc->spec.kind) {
    case AMP_SCALER_MX: case AMP_SCALER_BLOCK:
        if (is_tile(sc, role, rows)) return cdiv(rows, B) * cdiv(cols, B);
        return rows * cdiv(cols, B);
    default: return 1;
    }
}

/* ---- scale rules (one amax -> one scale) ----------------------------------- */

/* CUDA's fmaxf: the numeric argument when one is NaN, quiet or signaling
 * (glibc's fmaxf returns NaN for a signaling NaN, so it is not used here). */
static float cuda_fmaxf(float a, float b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    return a > b ? a : b;
}

/* max |x| as TE's cast and amax kernels compute it: fmaxf from 0, so NaN
 * values are skipped (an all-NaN tensor gives 0) and inf gives inf. */
static float amax_te(const float *x, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) m = cuda_fmaxf(m, fabsf(x[i]));
    return m;
}

/* max |x| with NaN propagation (a NaN anywhere gives NaN): mx, block. */
static float amax_nan(const float *x, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (isnan(a)) return NAN;
        if (a > m) m = a;
    }
    return m;
}

/* TE delayed scaling, the fused update (delayed_scaling.cu, kernel_bulk):
 * scaled_max = fp8_max * 2^-margin in float32 (exact), then scale =
 * scaled_max / amax in float32 when amax is finite and > 0, else the previous
 * scale; a scale that is +inf becomes FLT_MAX. */
static float te_scale(float fmax, float amax, long margin, float prev, int *kept)
{
    float scaled_max = fmax * ldexpf(1.0f, -(int)margin);
    float sf;
    *kept = 0;
    if (isfinite(amax) && amax > 0.0f) sf = scaled_max / amax;
    else { sf = prev; *kept = 1; }
    if (isinf(sf)) sf = FLT_MAX;
    return sf;
}

/* Current scaling, TE's compute_scale_from_amax with epsilon 0 (its default:
 * the clamp amax < epsilon never fires): amax 0, inf or NaN -> 1; else
 * fp8_max / amax in float32, +inf -> FLT_MAX; pow2 then clears the float32
 * mantissa (a normal scale rounds down to 2^k; FLT_MAX becomes 2^127). */
static float current_scale(float fmax, float amax, int pow2, int *kept)
{
    *kept = 0;
    if (!(amax > 0.0f) || !isfinite(amax)) { *kept = 1; return 1.0f; }
    float sf = fmax / amax;
    if (isinf(sf)) sf = FLT_MAX;
    if (pow2) sf = amp_u2f(amp_f2u(sf) & 0xff800000u);
    return sf;
}

/* MX shared exponent X (block scale 2^X) of a block with amax a, or INT32_MIN
 * for a NaN scale (E8M0 NaN: the whole block is NaN).
 *   floor (OCP reference, exponent-bit path of its C++/CUDA kernels):
 *         X = floor(log2(amax)) - emax_elem, amax 0 read as FP32_MIN_NORMAL,
 *         X > 127 (amax inf) or amax NaN -> NaN, X < -127 -> -127;
 *   ceil  (TE, float_to_e8m0(amax * max_norm_rcp)): v = amax * float(1/max)
 *         in float32, then the E8M0 exponent of v rounded up: NaN -> NaN,
 *         inf -> 127, 0 -> -127, v <= 2^-127 -> -127, v in (2^-127, 2^-126)
 *         -> -126, a mantissa > 0 adds 1 except at exponent 127. The rounding
 *         of v can land on 2^k while amax / max is just above it, so a block
 *         can saturate by a hair, as in TE. */
#define MX_NAN INT32_MIN
static int mx_exponent(const amp_format *f, double a, int ceil_mode)
{
    if (!ceil_mode) {
        if (!isfinite(a)) return MX_NAN;
        int e = (a == 0 ? -126 : ilogb(a)) - f->emax;
        return e < -127 ? -127 : e > 127 ? MX_NAN : e;
    }
    float v = (float)a * (float)(1.0 / f->max_finite);
    if (isnan(v)) return MX_NAN;
    if (isinf(v)) return 127;
    if (v == 0.0f) return -127;
    uint32_t u = amp_f2u(v), exponent = (u >> 23) & 0xffu, mantissa = u & 0x7fffffu;
    if (mantissa > 0 && exponent != 0xfeu && !(exponent == 0 && mantissa <= 0x400000u)) exponent++;
    return (int)exponent - 127;
}

/* DeepSeek block scale (the divisor s, q = x / s): amax / fp8_max in float32,
 * or the smallest power of two >= it; amax 0 or non-finite -> 1; a quotient
 * that underflows to 0 -> the smallest float32. */
static float block_divisor(float fmax, float amax, int pow2)
{
    if (!(amax > 0.0f) || !isfinite(amax)) return 1.0f;
    if (pow2) {
        int e = ilogb(amax) - ilogb(fmax);
        while (ldexp(fmax, e) < amax) e++;
        while (ldexp(fmax, e - 1) >= amax) e--;
        if (e < -149) e = -149;
        return ldexpf(1.0f, e);
    }
    float s = amax / fmax;
    return s == 0 ? FLT_TRUE_MIN : s;
}

static amp_status ensure_state(amp_fp8_scaler *sc, size_t tensor)
{
    if (tensor >= ((size_t)1 << 24))
        return amp_fail(AMP_EINVAL, "fp8 scaler: tensor id %zu too large", tensor);
    if (tensor < sc->n) return AMP_OK;
    amp_fp8_tstate *nt = realloc(sc->t, (tensor + 1) * sizeof *nt);
    if (!nt) return amp_fail(AMP_ENOMEM, "fp8 scaler: out of memory for tensor state");
    for (size_t i = sc->n; i <= tensor; i++) {
        nt[i].scale = 1.0f;
        nt[i].hist = NULL;
        nt[i].count = 0;
    }
    sc->t = nt;
    sc->n = tensor + 1;
    return AMP_OK;
}

/* TE delayed scaling for one tensor, as TE's fused update kernel does it
 * (the default; NVTE_UNFUSED_FP8_UPDATE=1 selects a Python path that differs,
 * see docs/scalers-arith.md). The amax of this step sits in history slot 0:
 *   - amax == 0: the kernel skips the roll and its maxima stay 0, so nothing
 *     is recorded, the window does not move and the scale is kept;
 *   - otherwise (NaN and inf included) the history rolls with this amax as
 *     the newest of `history` entries, and the amax for the scale is this one
 *     (most_recent) or the fmaxf-reduction of the window from 0 (max): NaN
 *     entries are skipped, an inf entry gives inf;
 *   - te_scale: a non-finite or zero amax keeps the previous scale.
 * The ring holds the last `history` recorded amaxes (zeros before any). */
static amp_status delayed_record(amp_fp8_scaler *sc, size_t tensor, float fmax, float amax, int *kept)
{
    amp_fp8_tstate *ts = &sc->t[tensor];
    long L = sc->spec.history;
    if (!ts->hist) {
        ts->hist = calloc((size_t)L, sizeof *ts->hist);
        if (!ts->hist) return amp_fail(AMP_ENOMEM, "fp8 scaler: out of memory for amax history");
    }
    float m = 0;
    if (amax != 0.0f) {
        ts->hist[ts->count % L] = amax;
        ts->count++;
        if (sc->spec.algo == AMP_AMAX_MOST_RECENT) m = amax;
        else for (long i = 0; i < L; i++) m = cuda_fmaxf(m, ts->hist[i]);
    }
    ts->scale = te_scale(fmax, m, sc->spec.margin, ts->scale, kept);
    return AMP_OK;
}

amp_status amp_fp8_observe_amax(amp_fp8_scaler *sc, size_t tensor, const amp_format *fmt,
                                float amax, float *scale_used, float *scale_after)
{
    if (!fmt) fmt = amp_fp8_format(sc, AMP_FP8_ACT);
    float fmax = (float)fmt->max_finite;
    int kept;
    switch (sc->spec.kind) {
    case AMP_SCALER_DELAYED: {
        amp_status st = ensure_state(sc, tensor);
        if (st) return st;
        *scale_used = sc->t[tensor].scale;
        st = delayed_record(sc, tensor, fmax, amax, &kept);
        if (st) return st;
        *scale_after = sc->t[tensor].scale;
        return AMP_OK;
    }
    case AMP_SCALER_CURRENT:
        *scale_used = *scale_after = current_scale(fmax, amax, sc->spec.pow2, &kept);
        return AMP_OK;
    case AMP_SCALER_MX: {
        int e = mx_exponent(fmt, amax, sc->spec.exp_ceil);
        *scale_used = *scale_after = e == MX_NAN ? NAN : ldexpf(1.0f, -e);
        return AMP_OK;
    }
    case AMP_SCALER_BLOCK:
        *scale_used = *scale_after = (float)(1.0 / (double)block_divisor(fmax, amax, sc->spec.pow2));
        return AMP_OK;
    default:
        return amp_fail(AMP_EINVAL, "fp8 scaler: %s is not an FP8 strategy", amp_scaler_kind_name(sc->spec.kind));
    }
}

/* ---- quantize ------------------------------------------------------------- */

/* Block index of element (r, c). */
static size_t block_index(const amp_fp8_scaler *sc, int tile, size_t r, size_t c, size_t cols)
{
    size_t B = (size_t)sc->spec.block;
    if (tile) return (r / B) * cdiv(cols, B) + c / B;
    return r * cdiv(cols, B) + c / B;
}

static amp_status quantize_tensor(amp_fp8_scaler *sc, size_t tensor, const amp_format *f,
                                  const float *x, size_t n, float *tmp, float *y,
                                  float *scale_inv, amp_stats *st, amp_fp8_info *info)
{
    float fmax = (float)f->max_finite, amax = amax_te(x, n), scale;
    int kept = 0;
    if (sc->spec.kind == AMP_SCALER_DELAYED) {
        amp_status s = ensure_state(sc, tensor);
        if (s) return s;
        scale = sc->t[tensor].scale;
    } else {
        scale = current_scale(fmax, amax, sc->spec.pow2, &kept);
    }
    for (size_t i = 0; i < n; i++) tmp[i] = x[i] * scale;
    amp_round_opts o = amp_round_defaults();
    o.flags = AMP_SATURATE;
    amp_status s = amp_round_f32(f, &o, tmp, tmp, n, st);
    if (s) return s;
    float inv = 1.0f / scale;
    size_t bad = 0;
    if (y)
        for (size_t i = 0; i < n; i++) {
            y[i] = tmp[i] * inv;
            bad += !isfinite(y[i]);
        }
    info->nonfinite = bad;
    if (scale_inv) scale_inv[0] = inv;
    info->amax = amax;
    info->scale = info->scale_next = scale;
    info->n_blocks = 1;
    if (sc->spec.kind == AMP_SCALER_DELAYED) {
        s = delayed_record(sc, tensor, fmax, amax, &kept);
        if (s) return s;
        info->scale_next = sc->t[tensor].scale;
    }
    info->kept = kept;
    return AMP_OK;
}

static amp_status quantize_blocks(amp_fp8_scaler *sc, amp_fp8_role role, const amp_format *f,
                                  const float *x, size_t rows, size_t cols, float *q, float *y,
                                  float *scale_inv, amp_stats *st, amp_fp8_info *info)
{
    size_t n = rows * cols, nb = amp_fp8_nblocks(sc, role, rows, cols);
    int tile = is_tile(sc, role, rows), mx = sc->spec.kind == AMP_SCALER_MX;
    float *bamax = calloc(nb, sizeof *bamax);
    int *bexp = mx ? malloc(nb * sizeof *bexp) : NULL;       /* mx: 2^bexp, MX_NAN */
    float *bdiv = mx ? NULL : malloc(nb * sizeof *bdiv);     /* block: divisor s */
    double *t64 = mx ? malloc(n * sizeof *t64) : NULL;
    float *t32 = q ? q : malloc(n * sizeof *t32);
    amp_status s = AMP_OK;
    int te = mx && sc->spec.exp_ceil;       /* TE's kernels: fmaxf, NaN values skipped */
    info->amax = te ? amax_te(x, n) : amax_nan(x, n);
    if (!bamax || (mx && (!bexp || !t64)) || (!mx && !bdiv) || !t32) {
        s = amp_fail(AMP_ENOMEM, "fp8 scaler: out of memory for %zu values", n);
        goto out;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            size_t b = block_index(sc, tile, r, c, cols);
            float a = fabsf(x[r * cols + c]);
            if (te) bamax[b] = cuda_fmaxf(bamax[b], a);
            else if (isnan(a) || isnan(bamax[b])) bamax[b] = NAN;
            else if (a > bamax[b]) bamax[b] = a;
        }
    for (size_t b = 0; b < nb; b++) {
        if (mx) bexp[b] = mx_exponent(f, bamax[b], sc->spec.exp_ceil);
        else bdiv[b] = block_divisor((float)f->max_finite, bamax[b], sc->spec.pow2);
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            size_t i = r * cols + c, b = block_index(sc, tile, r, c, cols);
            if (mx) t64[i] = bexp[b] == MX_NAN ? (double)x[i] : ldexp((double)x[i], -bexp[b]);
            else t32[i] = x[i] / bdiv[b];
        }
    amp_round_opts o = amp_round_defaults();
    o.flags = AMP_SATURATE;
    s = mx ? amp_round_f64(f, &o, t64, t32, n, st) : amp_round_f32(f, &o, t32, t32, n, st);
    if (s) goto out;
    if (y)
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) {
                size_t i = r * cols + c, b = block_index(sc, tile, r, c, cols);
                if (mx) y[i] = bexp[b] == MX_NAN ? NAN : (float)ldexp((double)t32[i], bexp[b]);
                else y[i] = t32[i] * bdiv[b];
                info->nonfinite += !isfinite(y[i]);
            }
    if (scale_inv)
        for (size_t b = 0; b < nb; b++)
            scale_inv[b] = mx ? (bexp[b] == MX_NAN ? NAN : ldexpf(1.0f, bexp[b])) : bdiv[b];
    info->n_blocks = nb;
    if (nb) info->scale = mx ? (bexp[0] == MX_NAN ? NAN : ldexpf(1.0f, -bexp[0]))
                             : (float)(1.0 / (double)bdiv[0]);
    info->scale_next = info->scale;
out:
    free(bamax);
    free(bexp);
    free(bdiv);
    free(t64);
    if (t32 != q) free(t32);
    return s;
}

amp_status amp_fp8_quantize(amp_fp8_scaler *sc, size_t tensor, amp_fp8_role role,
                            const float *x, size_t rows, size_t cols, float *q, float *y,
                            float *scale_inv, amp_stats *st, amp_fp8_info *info)
{
    amp_fp8_info dummy;
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    size_t n;
    if (!amp_mul_size(rows, cols, &n)) return amp_fail(AMP_ERANGE, "fp8 scaler: %zu x %zu too large", rows, cols);
    if (role < AMP_FP8_ACT || role > AMP_FP8_GRAD) return amp_fail(AMP_EINVAL, "fp8 scaler: bad role %d", (int)role);
    const amp_format *f = amp_fp8_format(sc, role);
    info->fmt = f;
    if (sc->spec.kind == AMP_SCALER_MX || sc->spec.kind == AMP_SCALER_BLOCK)
        return quantize_blocks(sc, role, f, x, rows, cols, q, y, scale_inv, st, info);
    if (!amp_scaler_kind_is_fp8(sc->spec.kind))
        return amp_fail(AMP_EINVAL, "fp8 scaler: %s is not an FP8 strategy", amp_scaler_kind_name(sc->spec.kind));
    float *tmp = q ? q : malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return amp_fail(AMP_ENOMEM, "fp8 scaler: out of memory for %zu values", n);
    amp_status s = quantize_tensor(sc, tensor, f, x, n, tmp, y, scale_inv, st, info);
    if (tmp != q) free(tmp);
    return s;
}

/* ---- checkpoint image -------------------------------------------------------
 * "AMPFP81\0", canonical spec (160 bytes, NUL padded), u64 tensor count,
 * u64 history length, then per tensor: u64 float32 bits of scale, u64 count, u64 has_history, and
 * `history` u64 float32 bits when it has one. All little-endian. */
#define FP8_MAGIC "AMPFP81"
#define FP8_TEXT ((size_t)160)


amp_status amp_fp8_save(const amp_fp8_scaler *sc, uint8_t **buf, size_t *len)
{
    size_t L = (size_t)sc->spec.history, n = 8 + FP8_TEXT + 16;
    for (size_t i = 0; i < sc->n; i++) n += 24 + (sc->t[i].hist ? 8 * L : 0);
    uint8_t *b = calloc(1, n);
    if (!b) return amp_fail(AMP_ENOMEM, "fp8 scaler: out of memory for its checkpoint");
    memcpy(b, FP8_MAGIC, 8);
    char canon[FP8_TEXT] = { 0 };
    amp_scaler_spec_str(&sc->spec, canon, sizeof canon);
    memcpy(b + 8, canon, FP8_TEXT);
    uint8_t *p = b + 8 + FP8_TEXT;
    amp_put_le64(p, sc->n); p += 8;
    amp_put_le64(p, L); p += 8;
    for (size_t i = 0; i < sc->n; i++) {
        const amp_fp8_tstate *t = &sc->t[i];
        amp_put_le64(p, amp_f2u(t->scale)); p += 8;
        amp_put_le64(p, (uint64_t)t->count); p += 8;
        amp_put_le64(p, t->hist != NULL); p += 8;
        if (t->hist) for (size_t k = 0; k < L; k++, p += 8) amp_put_le64(p, amp_f2u(t->hist[k]));
    }
    *buf = b;
    *len = n;
    return AMP_OK;
}

amp_status amp_fp8_load(amp_fp8_scaler *sc, const uint8_t *b, size_t len)
{
    if (len < 8 + FP8_TEXT + 16 || memcmp(b, FP8_MAGIC, 8))
        return amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: not an FP8 scaler state image");
    char canon[FP8_TEXT] = { 0 };
    amp_scaler_spec_str(&sc->spec, canon, sizeof canon);
    if (memcmp(b + 8, canon, FP8_TEXT))
        return amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: saved for '%.*s', not '%s'",
                        (int)strnlen((const char *)b + 8, FP8_TEXT), (const char *)b + 8, canon);
    const uint8_t *p = b + 8 + FP8_TEXT, *end = b + len;
    uint64_t n = amp_get_le64(p), L = amp_get_le64(p + 8);
    p += 16;
    if (L != (uint64_t)sc->spec.history || n > len / 24)
        return amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: %llu tensors, history %llu do not fit the spec",
                        (unsigned long long)n, (unsigned long long)L);
    amp_fp8_tstate *t = calloc(n ? n : 1, sizeof *t);
    if (!t) return amp_fail(AMP_ENOMEM, "fp8 scaler checkpoint: out of memory");
    amp_status st = AMP_OK;
    for (uint64_t i = 0; i < n && !st; i++) {
        if (end - p < 24) { st = amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: truncated at tensor %llu", (unsigned long long)i); break; }
        t[i].scale = amp_u2f((uint32_t)amp_get_le64(p));
        t[i].count = (long)amp_get_le64(p + 8);
        uint64_t has = amp_get_le64(p + 16);
        p += 24;
        if (has) {
            if ((uint64_t)(end - p) / 8 < L) { st = amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: truncated history of tensor %llu", (unsigned long long)i); break; }
            t[i].hist = malloc(L * sizeof *t[i].hist);
            if (!t[i].hist) { st = amp_fail(AMP_ENOMEM, "fp8 scaler checkpoint: out of memory"); break; }
            for (uint64_t k = 0; k < L; k++, p += 8) t[i].hist[k] = amp_u2f((uint32_t)amp_get_le64(p));
        }
    }
    if (!st && p != end) st = amp_fail(AMP_EFORMAT, "fp8 scaler checkpoint: %td trailing bytes", end - p);
    if (st) {
        for (uint64_t i = 0; i < n; i++) free(t[i].hist);
        free(t);
        return st;
    }
    amp_fp8_free(sc);
    sc->t = t;
    sc->n = (size_t)n;
    return AMP_OK;
}
