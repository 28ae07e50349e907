/* Block-scaled formats: spec parsing and the reference rounding of MX, NVFP4
 * and FP32-scaled (DeepSeek-V3) blocks (see amp_block.h). Every element goes
 * through the reference path amp_round1 (the fast kernels know no block
 * scales). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_block.h"
#include "round_internal.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int amp_block_is_spec(const char *s)
{
    return s && (!strncasecmp(s, "mx:", 3) || !strncasecmp(s, "nvfp4", 5) || !strncasecmp(s, "block:", 6));
}

static amp_status parse_mx(const char *spec, char *rest, amp_block_spec *b)
{
    char *save = NULL, *tok = strtok_r(rest, ":", &save);
    static const amp_format_id elems[] = { AMP_FMT_E4M3, AMP_FMT_E5M2, AMP_FMT_E3M2, AMP_FMT_E2M3, AMP_FMT_E2M1 };
    int ok = 0;
    if (tok && amp_format_parse(tok, &b->elem) == AMP_OK)
        for (size_t i = 0; i < sizeof elems / sizeof elems[0]; i++) ok |= b->elem.id == elems[i];
    if (!ok) return amp_fail(AMP_EINVAL, "block spec '%s': MX elements are e4m3, e5m2, e3m2, e2m3 or e2m1", spec);
    b->kind = AMP_BLK_MX;
    b->rows = 1;
    b->cols = 32;
    b->rule = AMP_MX_FLOOR;
    while ((tok = strtok_r(NULL, ":", &save))) {
        char *end;
        if (!strncmp(tok, "block=", 6)) {
            long n = strtol(tok + 6, &end, 10);
            if (end == tok + 6 || *end || n < 1 || n > 4096)
                return amp_fail(AMP_EINVAL, "block spec '%s': block=N needs 1 <= N <= 4096", spec);
            b->cols = (int)n;
        } else if (!strcmp(tok, "scale=floor")) b->rule = AMP_MX_FLOOR;
        else if (!strcmp(tok, "scale=ceil")) b->rule = AMP_MX_CEIL;
        else if (!strcmp(tok, "scale=rne")) b->rule = AMP_MX_RNE;
        else return amp_fail(AMP_EINVAL, "block spec '%s': unknown part '%s' (block=N, scale=floor|ceil|rne)", spec, tok);
    }
    static const char *const rules[] = { "floor", "ceil", "rne" };
    snprintf(b->name, sizeof b->name, "mx:%s:block=%d:scale=%s", b->elem.name, b->cols, rules[b->rule]);
    return AMP_OK;
}

static amp_status parse_shape(const char *spec, const char *s, amp_block_spec *b)
{
    char *end;
    long r = strtol(s, &end, 10);
    if (end == s || *end != 'x') goto bad;
    const char *c0 = end + 1;
    long c = strtol(c0, &end, 10);
    if (end == c0 || *end || r < 1 || r > 4096 || c < 1 || c > 4096) goto bad;
    b->rows = (int)r;
    b->cols = (int)c;
    return AMP_OK;
bad:
    return amp_fail(AMP_EINVAL, "block spec '%s': block shape must be RxC with 1 <= R, C <= 4096", spec);
}

amp_status amp_block_parse(const char *s, amp_block_spec *out)
{
    char low[64];
    size_t i;
    if (!s) return amp_fail(AMP_EINVAL, "empty block spec");
    for (i = 0; s[i] && i < sizeof low - 1; i++) low[i] = (char)tolower((unsigned char)s[i]);
    low[i] = 0;
    if (s[i]) return amp_fail(AMP_EINVAL, "block spec '%.40s...' too long", s);
    amp_block_spec b;
    memset(&b, 0, sizeof b);
    amp_status st;
    if (!strncmp(low, "mx:", 3)) {
        if ((st = parse_mx(s, low + 3, &b))) return st;
    } else if (!strcmp(low, "nvfp4") || !strcmp(low, "nvfp4:2d")) {
        b.kind = AMP_BLK_NVFP4;
        b.elem = *amp_format_get(AMP_FMT_E2M1);
        b.rows = low[5] ? 16 : 1;
        b.cols = 16;
        snprintf(b.name, sizeof b.name, "%s", low);
    } else if (!strncmp(low, "block:", 6)) {
        char *elem = low + 6, *shape = strchr(elem, ':');
        if (!shape) return amp_fail(AMP_EINVAL, "block spec '%s': expected block:ELEM:RxC", s);
        *shape++ = 0;
        if (amp_format_parse(elem, &b.elem)) return amp_fail(AMP_EINVAL, "block spec '%s': %s", s, amp_errmsg());
        if (!b.elem.is_signed) return amp_fail(AMP_EINVAL, "block spec '%s': the element format must be signed", s);
        if ((st = parse_shape(s, shape, &b))) return st;
        b.kind = AMP_BLK_FP32;
        snprintf(b.name, sizeof b.name, "block:%s:%dx%d", b.elem.name, b.rows, b.cols);
    } else {
        return amp_fail(AMP_EINVAL, "unknown block spec '%s' (mx:ELEM[:block=N][:scale=floor|ceil|rne], nvfp4[:2d], "
                        "block:ELEM:RxC)", s);
    }
    *out = b;
    return AMP_OK;
}

void amp_block_stats_init(amp_block_stats *bs)
{
    memset(bs, 0, sizeof *bs);
    bs->tensor_scale = 1.0f;
}

void amp_block_exp_summary(const amp_block_stats *bs, int *lo, int *median, int *hi)
{
    uint64_t tot = 0, acc = 0;
    *lo = *median = *hi = 0;
    for (int i = 0; i < AMP_BLOCK_EXP_BINS; i++) tot += bs->exp_hist[i];
    if (!tot) return;
    int first = 1;
    for (int i = 0; i < AMP_BLOCK_EXP_BINS; i++) {
        if (!bs->exp_hist[i]) continue;
        if (first) { *lo = i + AMP_BLOCK_EXP_LO; first = 0; }
        *hi = i + AMP_BLOCK_EXP_LO;
        if (acc < (tot + 1) / 2 && acc + bs->exp_hist[i] >= (tot + 1) / 2) *median = i + AMP_BLOCK_EXP_LO;
        acc += bs->exp_hist[i];
    }
}

static void hist_exp(amp_block_stats *bs, int e)
{
    int b = e - AMP_BLOCK_EXP_LO;
    b = b < 0 ? 0 : b >= AMP_BLOCK_EXP_BINS ? AMP_BLOCK_EXP_BINS - 1 : b;
    bs->exp_hist[b]++;
}

/* The MX shared exponent of a block with amax > 0 (unclamped). */
static int mx_exponent(const amp_block_spec *b, double amax)
{
    double mx = b->elem.max_finite;
    if (b->rule == AMP_MX_FLOOR) return ilogb(amax) - b->elem.emax;
    int e = ilogb(amax) - ilogb(mx) - 2;                 /* largest e with mx * 2^e <= amax, from below */
    while (ldexp(mx, e + 1) <= amax) e++;
    if (b->rule == AMP_MX_CEIL) return ldexp(mx, e) == amax ? e : e + 1;
    return amax >= ldexp(1.5 * mx, e) ? e + 1 : e;       /* rne: ties (1.5 * 2^e) up, E8M0 rne */
}

/* One block: rows r0..r1, columns c0..c1 of x (row stride C). */
typedef struct blk_ctx {
    const amp_block_spec *b;
    amp_round_opts o;          /* element options (saturating) */
    const float *x;
    float *y;
    size_t C;
    float s_enc, s_dec;        /* nvfp4 tensor scales */
    amp_stats *st;
    amp_block_stats *bs;
} blk_ctx;

static void block_one(blk_ctx *k, size_t r0, size_t r1, size_t c0, size_t c1)
{
    const amp_block_spec *b = k->b;
    float amax = 0;
    int bad = 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t c = c0; c < c1; c++) {
            float a = fabsf(k->x[r * k->C + c]);
            if (!(a <= FLT_MAX)) bad = 1;
            else if (a > amax) amax = a;
        }
    amp_block_stats *bs = k->bs;
    bs->blocks++;
    double mul = 0, post = 1;    /* element = round(x * mul), y = element * post */
    int fmul = 0;                /* multiply in float32 (nvfp4, fp32 blocks) */
    if (bad) {
        bs->nan_blocks++;
    } else if (amax == 0) {
        bs->zero_blocks++;
    } else if (b->kind == AMP_BLK_MX) {
        int e = mx_exponent(b, amax);
        if (e >= 127) bs->scale_hi++;
        if (e <= -127) bs->scale_lo++;
        e = e > 127 ? 127 : e < -127 ? -127 : e;
        hist_exp(bs, e);
        mul = ldexp(1.0, -e);
        post = ldexp(1.0, e);
    } else if (b->kind == AMP_BLK_NVFP4) {
        amp_round_opts so = amp_round_defaults();
        so.flags = AMP_SATURATE;
        amp_class sc;
        float sdec = amax * (k->s_enc * (1.0f / 6.0f));   /* the recipe's float32 steps, in order */
        float s8 = amp_round1(amp_format_get(AMP_FMT_E4M3), &so, sdec, 0, &sc);
        if (sc == AMP_CLS_SATURATED || s8 == 448.0f) bs->scale_hi++;
        if (s8 < 0x1p-6f) bs->scale_lo++;
        if (s8 > 0) {
            hist_exp(bs, ilogbf(s8));
            float enc = 1.0f / (s8 * k->s_dec);
            mul = enc > FLT_MAX ? FLT_MAX : enc;
            post = (double)s8 * (double)k->s_dec;
            fmul = 1;
        }
    } else {
        float s = amax / (float)b->elem.max_finite;
        if (s < FLT_MIN) bs->scale_lo++;
        if (s > 0) hist_exp(bs, ilogbf(s));
        mul = s;                 /* DeepSeek: x / s in float32 */
        post = s;
        fmul = 2;
    }
    int sat = 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t c = c0; c < c1; c++) {
            size_t i = r * k->C + c;
            float xi = k->x[i], yi;
            amp_class cls;
            if (bad) {
                yi = NAN;
                cls = isnan(xi) ? AMP_CLS_NAN_IN : isinf(xi) ? AMP_CLS_INF_IN : AMP_CLS_OVERFLOW;
            } else if (xi == 0 || mul == 0) {
                yi = signbit(xi) ? -0.0f : 0.0f;
                cls = xi == 0 ? AMP_CLS_ZERO_IN : AMP_CLS_FLUSHED;
            } else {
                double v = fmul == 1 ? (double)(xi * (float)mul) : fmul == 2 ? (double)(xi / (float)mul) : xi * mul;
                float q = amp_round1(&b->elem, &k->o, v, i, &cls);
                yi = (float)((double)q * post);
                sat |= cls == AMP_CLS_SATURATED;
            }
            if (k->st) amp_stats_add1(k->st, xi, yi, cls);
            k->y[i] = yi;
        }
    bs->amax_sat += (uint64_t)sat;
}

/* NVFP4 without statistics (st and bs NULL), as training rounds its GEMM
 * operands: the E4M3 block scales first, exactly as block_one computes them,
 * then every element scaled in float32 into p and rounded by one
 * amp_round_f32 call over the tensor (the fast kernels, which agree with
 * amp_round1 bit for bit; sr keyed by index0 + the element's index, as in
 * block_one), then dequantised. The same bytes as block_one. */
static amp_status nvfp4_fast(const blk_ctx *k, size_t R, size_t C)
{
    const amp_block_spec *b = k->b;
    size_t br = (size_t)b->rows, bc = (size_t)b->cols, nbr = (R + br - 1) / br, nbc = (C + bc - 1) / bc;
    float *p = malloc(R * C * sizeof *p), *mul = malloc(nbr * nbc * sizeof *mul);
    double *post = malloc(nbr * nbc * sizeof *post);
    if (!p || !mul || !post) {
        free(p); free(mul); free(post);
        return amp_fail(AMP_ENOMEM, "out of memory rounding %zu x %zu values into %s", R, C, b->name);
    }
    amp_round_opts so = amp_round_defaults();
    so.flags = AMP_SATURATE;
    for (size_t r0 = 0, bi = 0; r0 < R; r0 += br)
        for (size_t c0 = 0; c0 < C; c0 += bc, bi++) {
            size_t r1 = r0 + br < R ? r0 + br : R, c1 = c0 + bc < C ? c0 + bc : C;
            float amax = 0;
            int bad = 0;
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++) {
                    float a = fabsf(k->x[r * C + c]);
                    if (!(a <= FLT_MAX)) bad = 1;
                    else if (a > amax) amax = a;
                }
            mul[bi] = 0;
            post[bi] = bad ? NAN : 0;
            if (!bad && amax > 0) {
                float sdec = amax * (k->s_enc * (1.0f / 6.0f));
                float s8 = amp_round1(amp_format_get(AMP_FMT_E4M3), &so, sdec, 0, NULL);
                if (s8 > 0) {
                    float enc = 1.0f / (s8 * k->s_dec);
                    mul[bi] = enc > FLT_MAX ? FLT_MAX : enc;
                    post[bi] = (double)s8 * (double)k->s_dec;
                }
            }
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++) p[r * C + c] = mul[bi] > 0 ? k->x[r * C + c] * mul[bi] : 0.0f;
        }
    amp_status s = amp_round_f32(&b->elem, &k->o, p, p, R * C, NULL);
    for (size_t r = 0; r < R && !s; r++)
        for (size_t c = 0; c < C; c++) {
            size_t i = r * C + c, bi = (r / br) * nbc + c / bc;
            float xi = k->x[i];
            if (isnan(post[bi])) k->y[i] = NAN;
            else if (xi == 0 || mul[bi] == 0) k->y[i] = signbit(xi) ? -0.0f : 0.0f;
            else k->y[i] = (float)((double)p[i] * post[bi]);
        }
    free(p); free(mul); free(post);
    return s;
}

amp_status amp_block_round(const amp_block_spec *b, const amp_round_opts *o, const float *x, float *y, size_t R,
                           size_t C, amp_stats *st, amp_block_stats *bs)
{
    const int want_bs = bs != NULL;
    amp_status s = amp_round_check_opts(&b->elem, o);
    if (s) return s;
    if (b->rows < 1 || b->cols < 1) return amp_fail(AMP_EINVAL, "block spec '%s': bad block shape", b->name);
    amp_block_stats tmp;
    if (!bs) bs = &tmp;
    blk_ctx k = { .b = b, .o = *o, .x = x, .y = y, .C = C, .st = st, .bs = bs, .s_enc = 1, .s_dec = 1 };
    k.o.flags |= AMP_SATURATE;       /* the specifications clamp the elements */
    if (b->kind == AMP_BLK_NVFP4) {
        /* the tensor scale: S_enc = 6 * 448 / amax in float32 (finite values) */
        float amax = 0;
        for (size_t i = 0; i < R * C; i++) {
            float a = fabsf(x[i]);
            if (a <= FLT_MAX && a > amax) amax = a;
        }
        float enc = 2688.0f / amax;
        if (enc > FLT_MAX) enc = FLT_MAX;
        if (amax == 0 || enc == 0) enc = 1.0f;
        k.s_enc = enc;
        k.s_dec = 1.0f / enc;
        bs->tensor_scale = k.s_dec;
        if (!st && !want_bs) return nvfp4_fast(&k, R, C);
    }
    size_t br = (size_t)b->rows, bc = (size_t)b->cols;
    for (size_t r0 = 0; r0 < R; r0 += br)
        for (size_t c0 = 0; c0 < C; c0 += bc)
            block_one(&k, r0, r0 + br < R ? r0 + br : R, c0, c0 + bc < C ? c0 + bc : C);
    return AMP_OK;
}
