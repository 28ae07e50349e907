/* Check suite: block-scaled formats (sim/block.c) against an implementation
 * written here from the specifications, element by element, bit for bit:
 *  - OCP MX v1.0 (section 6.3): X = 2^(floor(log2 amax) - emax_elem), the
 *    E8M0 range -127..127, elements V/X rounded to nearest-even and clamped
 *    to the element's max normal; and the ceil and rne variants of the scale
 *    (smallest power of two with amax/X <= max_elem; amax/max_elem rounded
 *    to E8M0 by MPFR); every element format (e4m3, e5m2, e3m2, e2m3, e2m1);
 *  - NVFP4 (NVIDIA's recipe, 1x16 and 16x16): S_enc = 6*448/amax in float32,
 *    block decode scale amax_b * (S_enc * (1/6)) cast to E4M3 (rne, satfinite),
 *    element scale 1/(s_e4m3 * (1/S_enc)), elements x * scale cast to E2M1
 *    (the caller's mode, satfinite), dequantised as q * s_e4m3 / S_enc;
 *  - DeepSeek-V3 blocks (1x128, 128x128): s = amax / 448 in float32,
 *    x / s cast to E4M3 (saturating), dequantised as q * s;
 * with the elements rounded by the MPFR reference (amp_round1_mpfr), never by
 * the code under test. Tensors: random, with block maxima planted at the
 * element format's boundaries (max finite, the tie above it, 2^(emax+1)
 * less an ulp) and elements at the subnormal boundaries, partial blocks,
 * zero, NaN and inf blocks. The block statistics are checked the same way.
 * Seed: fixed, AMP_TEST_SEED=<n> to change; printed on failure. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t seed = 4242;

static double urand(uint64_t i) { return amp_rand_uniform(seed, 31, i); }

/* The MX element formats with the spec's emax and max normal (OCP MX v1.0, Table 1-3). */
static const struct { const char *name; int emax; double maxn; } mx_elems[] = {
    { "e4m3", 8, 448 }, { "e5m2", 15, 57344 }, { "e3m2", 4, 28 }, { "e2m3", 2, 7.5 }, { "e2m1", 2, 6 },
};
#define N_MX 5

typedef struct ref_stats { uint64_t blocks, scale_hi, scale_lo, amax_sat, nan_blocks, zero_blocks; } ref_stats;

static float mpfr_elem(const char *fmt, const amp_round_opts *o, double v, uint64_t idx, amp_class *c)
{
    amp_format f;
    ck_assert(amp_format_parse(fmt, &f) == AMP_OK);
    amp_round_opts so = *o;
    so.flags |= AMP_SATURATE;
    return amp_round1_mpfr(&f, &so, v, idx, c);
}

/* ---- the reference: one block at a time ---------------------------------------------- */
typedef struct ref {
    int kind;                /* 0 mx, 1 nvfp4, 2 fp32 blocks */
    int elem;                /* mx: index in mx_elems */
    int rule;                /* mx: 0 floor, 1 ceil, 2 rne */
    const char *efmt;
    double emaxn;            /* max normal of the element */
    float s_enc;
} ref;

static void ref_block(const ref *R, const amp_round_opts *o, const float *x, float *y, size_t C, size_t r0, size_t r1,
                      size_t c0, size_t c1, ref_stats *rs)
{
    float amax = 0;
    int bad = 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t c = c0; c < c1; c++) {
            float v = x[r * C + c];
            if (isnan(v) || isinf(v)) bad = 1;
            else if (fabsf(v) > amax) amax = fabsf(v);
        }
    rs->blocks++;
    if (bad) rs->nan_blocks++;
    if (!bad && amax == 0) rs->zero_blocks++;
    double X = 0;            /* mx: the shared scale */
    float s8 = 0, s32 = 0, enc = 0;
    if (!bad && amax > 0) {
        if (R->kind == 0) {
            int e;
            if (R->rule == 0) {
                int ex;
                frexp(amax, &ex);                   /* amax = m 2^ex, m in [0.5, 1) */
                e = ex - 1 - mx_elems[R->elem].emax;
            } else if (R->rule == 1) {
                e = -300;
                while (ldexp(R->emaxn, e) < amax) e++;
            } else {
                amp_round_opts rne = amp_round_defaults();
                amp_class c;
                float q = amp_round1_mpfr(amp_format_get(AMP_FMT_E8M0), &rne, (double)amax / R->emaxn, 0, &c);
                e = c == AMP_CLS_OVERFLOW ? 128 : c == AMP_CLS_FLUSHED ? -128 : ilogbf(q);
                if (c == AMP_CLS_FLUSHED) {      /* below 2^-127: the nearest power of two by hand */
                    e = -127;
                    double qq = (double)amax / R->emaxn;
                    while (ldexp(1.5, e - 1) > qq && e > -300) e--;
                }
            }
            if (e >= 127) rs->scale_hi++;
            if (e <= -127) rs->scale_lo++;
            if (e > 127) e = 127;
            if (e < -127) e = -127;
            X = ldexp(1.0, e);
        } else if (R->kind == 1) {
            amp_round_opts rne = amp_round_defaults();
            amp_class c;
            volatile float sixth = 1.0f / 6.0f, t = R->s_enc * sixth, sd = amax * t;
            s8 = mpfr_elem("e4m3", &rne, sd, 0, &c);
            if (c == AMP_CLS_SATURATED || s8 == 448) rs->scale_hi++;
            if (s8 < 0x1p-6f) rs->scale_lo++;
            if (s8 > 0) {
                volatile float dec = 1.0f / R->s_enc, p = s8 * dec, e2 = 1.0f / p;
                enc = e2 > FLT_MAX ? FLT_MAX : e2;
            }
        } else {
            volatile float m = (float)R->emaxn, s = amax / m;
            s32 = s;
            if (s32 < FLT_MIN) rs->scale_lo++;
        }
    }
    int sat = 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t c = c0; c < c1; c++) {
            size_t i = r * C + c;
            float v = x[i];
            amp_class cls = AMP_CLS_EXACT;
            if (bad) { y[i] = NAN; continue; }
            if (v == 0 || amax == 0 || (R->kind == 1 && s8 == 0)) { y[i] = signbit(v) ? -0.0f : 0.0f; continue; }
            float q;
            if (R->kind == 0) {
                q = mpfr_elem(R->efmt, o, v / X, i, &cls);
                y[i] = (float)(q * X);
            } else if (R->kind == 1) {
                volatile float p = v * enc;
                q = mpfr_elem("e2m1", o, p, i, &cls);
                y[i] = (float)((double)q * s8 * (double)(1.0f / R->s_enc));
            } else {
                volatile float p = v / s32;
                q = mpfr_elem(R->efmt, o, p, i, &cls);
                y[i] = (float)((double)q * s32);
            }
            sat |= cls == AMP_CLS_SATURATED;
        }
    rs->amax_sat += (uint64_t)sat;
}

static void ref_round(const ref *R0, int br, int bc, const amp_round_opts *o, const float *x, float *y, size_t Rn,
                      size_t C, ref_stats *rs)
{
    ref R = *R0;
    if (R.kind == 1) {
        float amax = 0;
        for (size_t i = 0; i < Rn * C; i++)
            if (isfinite(x[i]) && fabsf(x[i]) > amax) amax = fabsf(x[i]);
        volatile float num = 2688.0f, e = num / amax;
        float s = e > FLT_MAX ? FLT_MAX : e;
        if (amax == 0 || s == 0) s = 1;
        R.s_enc = s;
    }
    memset(rs, 0, sizeof *rs);
    for (size_t r0 = 0; r0 < Rn; r0 += (size_t)br)
        for (size_t c0 = 0; c0 < C; c0 += (size_t)bc)
            ref_block(&R, o, x, y, C, r0, r0 + (size_t)br < Rn ? r0 + (size_t)br : Rn, c0,
                      c0 + (size_t)bc < C ? c0 + (size_t)bc : C, rs);
}

/* ---- tensors ---------------------------------------------------------------------------- */
/* R x C values: log-uniform magnitudes around 2^center with random signs; in
 * each block of br x bc, the first element is a planted maximum (a boundary
 * of the element format times 2^j) and a few elements sit at its subnormal
 * boundaries; some blocks are zero, NaN or inf. */
static void make(float *x, size_t R, size_t C, int br, int bc, double maxn, int emax, double minsub, uint64_t tag,
                 int specials)
{
    for (size_t i = 0; i < R * C; i++) {
        double v = exp2(-12 + 14 * urand(tag * 7919 + i));
        x[i] = (float)(urand(tag * 7919 + i + 1000003) < 0.5 ? -v : v);
    }
    /* max finite, above it (the tie and past it), below 2^(emax+1), powers of
     * two, and the ties of the rne scale (1.5 max) and the ceil scale (max) */
    const double plant[] = { maxn, maxn * (1 + 0x1p-4), maxn * 1.0625, ldexp(1.0, emax + 1) * (1 - 0x1p-24), ldexp(1.0, emax),
                             ldexp(1.5, emax), maxn * 0.999, maxn * 1.5, maxn * 1.5 * (1 - 0x1p-23), maxn * (1 + 0x1p-23),
                             maxn * 0.75 };
#define NPLANT 11
    int nb = 0;
    for (size_t r0 = 0; r0 < R; r0 += (size_t)br)
        for (size_t c0 = 0; c0 < C; c0 += (size_t)bc, nb++) {
            int j = (int)(urand(tag * 31 + (uint64_t)nb) * 40) - 20;
            double m = plant[nb % NPLANT];
            float *b = &x[r0 * C + c0];
            b[0] = (float)ldexp(m, j) * (nb & 1 ? -1 : 1);
            double unit = ldexp(minsub, j);      /* the element's min subnormal, scaled like the block */
            size_t w = c0 + (size_t)bc < C ? (size_t)bc : C - c0;
            if (w >= 6) {
                b[1] = (float)(unit * 0.5);
                b[2] = (float)(unit * 0.75);
                b[3] = (float)(-unit * 1.5);
                b[4] = (float)(unit * 0.25);
                b[5] = (float)(unit * 2.5);
            }
            if (specials && nb % 11 == 5) for (size_t c = c0; c < c0 + w; c++) b[c - c0] = 0;
            if (specials && nb % 13 == 7) b[w - 1] = nb % 2 ? NAN : -INFINITY;
        }
}

static void compare(const char *what, const float *x, const float *want, const float *got, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t a = amp_f2u(want[i]), b = amp_f2u(got[i]);
        int same = a == b || (isnan(want[i]) && isnan(got[i]));
        ck_assert_msg(same, "%s (seed %llu): element %zu x=%a (0x%08x): want %a (0x%08x) got %a (0x%08x)", what,
                      (unsigned long long)seed, i, (double)x[i], amp_f2u(x[i]), (double)want[i], a, (double)got[i], b);
    }
}

static void compare_stats(const char *what, const ref_stats *w, const amp_block_stats *g)
{
    ck_assert_msg(w->blocks == g->blocks && w->scale_hi == g->scale_hi && w->scale_lo == g->scale_lo &&
                      w->amax_sat == g->amax_sat && w->nan_blocks == g->nan_blocks && w->zero_blocks == g->zero_blocks,
                  "%s: blocks %llu/%llu hi %llu/%llu lo %llu/%llu sat %llu/%llu nan %llu/%llu zero %llu/%llu", what,
                  (unsigned long long)w->blocks, (unsigned long long)g->blocks, (unsigned long long)w->scale_hi,
                  (unsigned long long)g->scale_hi, (unsigned long long)w->scale_lo, (unsigned long long)g->scale_lo,
                  (unsigned long long)w->amax_sat, (unsigned long long)g->amax_sat, (unsigned long long)w->nan_blocks,
                  (unsigned long long)g->nan_blocks, (unsigned long long)w->zero_blocks, (unsigned long long)g->zero_blocks);
}

static void run_case(const char *spec, const ref *R, int br, int bc, size_t Rn, size_t C, const amp_round_opts *o,
                     const float *x)
{
    amp_block_spec b;
    ck_assert_msg(amp_block_parse(spec, &b) == AMP_OK, "%s: %s", spec, amp_errmsg());
    ck_assert(b.rows == br && b.cols == bc);
    size_t n = Rn * C;
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    ck_assert(want && got);
    ref_stats rs;
    ref_round(R, br, bc, o, x, want, Rn, C, &rs);
    amp_block_stats bs;
    amp_block_stats_init(&bs);
    amp_stats st;
    amp_stats_init(&st);
    ck_assert_msg(amp_block_round(&b, o, x, got, Rn, C, &st, &bs) == AMP_OK, "%s", amp_errmsg());
    char what[160];
    snprintf(what, sizeof what, "%s %zux%zu %s", spec, Rn, C, amp_rounding_name(o->mode));
    compare(what, x, want, got, n);
    compare_stats(what, &rs, &bs);
    ck_assert(st.n == n);
    free(want);
    free(got);
}

/* ---- the suites ------------------------------------------------------------------------- */
START_TEST(mx_every_element_and_rule)
{
    static const char *const rules[] = { "floor", "ceil", "rne" };
    int e = _i / 3, rule = _i % 3;
    amp_format f;
    ck_assert(amp_format_parse(mx_elems[e].name, &f) == AMP_OK);
    ref R = { .kind = 0, .elem = e, .rule = rule, .efmt = mx_elems[e].name, .emaxn = mx_elems[e].maxn };
    size_t Rn = 7, C = 100;           /* 100 = 3 blocks of 32 and a short one */
    float *x = malloc(Rn * C * sizeof *x);
    for (int t = 0; t < 3; t++) {
        make(x, Rn, C, 1, 32, mx_elems[e].maxn, mx_elems[e].emax, f.min_subnormal, (uint64_t)(_i * 10 + t), t > 0);
        if (t == 2) x[3] = 0x1p-149f, x[C + 1] = 0x1p-140f, x[4] = FLT_MAX;   /* scale clamps */
        char spec[64];
        snprintf(spec, sizeof spec, "mx:%s:scale=%s", mx_elems[e].name, rules[rule]);
        amp_round_opts o = amp_round_defaults();
        run_case(spec, &R, 1, 32, Rn, C, &o, x);
        snprintf(spec, sizeof spec, "mx:%s:block=16:scale=%s", mx_elems[e].name, rules[rule]);
        o.mode = AMP_RND_SR;              /* the element rounding follows the caller's mode */
        o.seed = 3;
        run_case(spec, &R, 1, 16, Rn, C, &o, x);
    }
    free(x);
}
END_TEST

START_TEST(nvfp4_1d_2d)
{
    ref R = { .kind = 1, .efmt = "e2m1", .emaxn = 6 };
    size_t Rn = 40, C = 72;           /* 16x16 tiles with short ones at both edges */
    float *x = malloc(Rn * C * sizeof *x);
    amp_format f = *amp_format_get(AMP_FMT_E2M1);
    for (int t = 0; t < 4; t++) {
        make(x, Rn, C, t & 1 ? 16 : 1, 16, 6, 2, f.min_subnormal, 500 + (uint64_t)t, t >= 2);
        if (t == 3) for (size_t i = 0; i < 16; i++) x[C * 20 + i] *= 0x1p-40f;   /* a block whose E4M3 scale flushes */
        amp_round_opts o = amp_round_defaults();
        run_case(t & 1 ? "nvfp4:2d" : "nvfp4", &R, t & 1 ? 16 : 1, 16, Rn, C, &o, x);
        o.mode = AMP_RND_SR;
        o.seed = 11 + (uint64_t)t;
        run_case(t & 1 ? "nvfp4:2d" : "nvfp4", &R, t & 1 ? 16 : 1, 16, Rn, C, &o, x);
    }
    free(x);
}
END_TEST

START_TEST(deepseek_blocks)
{
    ref R = { .kind = 2, .efmt = "e4m3", .emaxn = 448 };
    size_t Rn = 130, C = 300;
    float *x = malloc(Rn * C * sizeof *x);
    amp_format f = *amp_format_get(AMP_FMT_E4M3);
    for (int t = 0; t < 2; t++) {
        make(x, Rn, C, t ? 128 : 1, 128, 448, 8, f.min_subnormal, 900 + (uint64_t)t, 1);
        amp_round_opts o = amp_round_defaults();
        run_case(t ? "block:e4m3:128x128" : "block:e4m3:1x128", &R, t ? 128 : 1, 128, Rn, C, &o, x);
    }
    free(x);
}
END_TEST

START_TEST(specs)
{
    amp_block_spec b;
    ck_assert(amp_block_parse("mx:e4m3", &b) == AMP_OK && b.kind == AMP_BLK_MX && b.cols == 32 && b.rows == 1 &&
              b.rule == AMP_MX_FLOOR && !strcmp(b.name, "mx:e4m3:block=32:scale=floor"));
    ck_assert(amp_block_parse("MX:E2M1:block=16:scale=rne", &b) == AMP_OK && b.cols == 16 && b.rule == AMP_MX_RNE);
    ck_assert(amp_block_parse("mx:fp4:scale=ceil", &b) == AMP_OK && b.elem.id == AMP_FMT_E2M1 && b.rule == AMP_MX_CEIL);
    ck_assert(amp_block_parse("nvfp4", &b) == AMP_OK && b.kind == AMP_BLK_NVFP4 && b.rows == 1 && b.cols == 16);
    ck_assert(amp_block_parse("nvfp4:2d", &b) == AMP_OK && b.rows == 16 && b.cols == 16);
    ck_assert(amp_block_parse("block:e4m3:128x128", &b) == AMP_OK && b.kind == AMP_BLK_FP32 && b.rows == 128 &&
              !strcmp(b.name, "block:e4m3:128x128"));
    static const char *const bad[] = { "mx:fp16", "mx:e4m3:block=0", "mx:e4m3:block=5000", "mx:e4m3:scale=up",
                                       "mx:e4m3:frob", "mx:", "nvfp4:3d", "block:e4m3", "block:e4m3:0x128",
                                       "block:e4m3:1x", "block:e8m0:1x32", "block:nope:1x32", "mxe4m3", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(amp_block_parse(bad[i], &b) == AMP_EINVAL && *amp_errmsg(), "'%s' accepted", bad[i]);
    ck_assert(amp_block_is_spec("nvfp4") && amp_block_is_spec("mx:e4m3") && !amp_block_is_spec("e4m3"));
}
END_TEST

/* `ampsim round --format BLOCKSPEC` and `ampsim analyze --formats BLOCKSPEC`
 * give the library's bits and statistics. */
START_TEST(cli_round_analyze)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
    char dir[] = "/tmp/check_block.XXXXXX";
    ck_assert(mkdtemp(dir) != NULL);
    enum { R = 20, C = 48 };
    static float x[R * C], y[R * C];
    make(x, R, C, 16, 16, 6, 2, 0.5, 77, 1);
    size_t sh[2] = { R, C };
    char p[300], cmd[1200];
    snprintf(p, sizeof p, "%s/x.npy", dir);
    ck_assert(amp_npy_write_f32(p, x, 2, sh) == AMP_OK);
    static const char *const cli_specs[] = { "nvfp4:2d", "mx:e4m3:scale=ceil", "block:e5m2:1x8" };
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s round --format %s --rounding sr --seed 9 x.npy y.npy >out 2>err", dir, bin,
                 cli_specs[k]);
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
        amp_tensor_file tf;
        snprintf(p, sizeof p, "%s/y.npy", dir);
        ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.n_tensors == 1 && tf.tensors[0].ndim == 2);
        amp_tensor_view_to_f32(&tf.tensors[0], 0, R * C, y);
        amp_tensor_file_close(&tf);
        amp_block_spec b;
        ck_assert(amp_block_parse(cli_specs[k], &b) == AMP_OK);
        amp_round_opts o = amp_round_defaults();
        o.mode = AMP_RND_SR;
        o.seed = 9;
        static float want[R * C];
        ck_assert(amp_block_round(&b, &o, x, want, R, C, NULL, NULL) == AMP_OK);
        compare(cli_specs[k], x, want, y, R * C);
    }
    snprintf(cmd, sizeof cmd, "cd %s && %s analyze --csv --formats nvfp4,e4m3 x.npy >out 2>err", dir, bin);
    ck_assert(system(cmd) == 0);
    char *out;
    size_t len;
    snprintf(p, sizeof p, "%s/out", dir);
    ck_assert(amp_read_file(p, 1 << 20, &out, &len) == AMP_OK);
    amp_block_spec b;
    amp_block_stats bs;
    amp_block_stats_init(&bs);
    ck_assert(amp_block_parse("nvfp4", &b) == AMP_OK);
    amp_round_opts o = amp_round_defaults();
    ck_assert(amp_block_round(&b, &o, x, y, R, C, NULL, &bs) == AMP_OK);
    char want[200];
    snprintf(want, sizeof want, "\nx.npy,nvfp4,rne,block,1,0,%d,", R * C);
    ck_assert_msg(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, ",%llu,%llu,%llu,", (unsigned long long)bs.blocks, (unsigned long long)bs.scale_hi,
             (unsigned long long)bs.scale_lo);
    ck_assert_msg(strstr(out, want) && bs.blocks == 60, "%s in %s", want, out);
    free(out);
    snprintf(cmd, sizeof cmd, "cd %s && %s round --format nvfp4 --encode x.npy y.npy 2>err; test $? = 2", dir, bin);
    ck_assert(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert(system(cmd) == 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("block");
    TCase *t = tcase_create("block");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, mx_every_element_and_rule, 0, N_MX * 3);
    tcase_add_test(t, nvfp4_1d_2d);
    tcase_add_test(t, deepseek_blocks);
    tcase_add_test(t, specs);
    tcase_add_test(t, cli_round_analyze);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    amp_check_seed("check_block", "AMP_TEST_SEED", &seed);
    return amp_check_failures(suite()) ? 1 : 0;
}
