/* Check suite: `ampsim round` end to end (the binary in $AMPSIM).
 *  - .npy f4 / f8 / f2 and raw .f32 / .f64 in, .npy and raw .f32 out: every
 *    value equals the MPFR reference (float64 input rounded once from double,
 *    shown on a value where rounding through float32 first would differ);
 *  - shape kept; --encode to uint8 / uint16 (.npy and raw) equals amp_encode1
 *    of the reference; --stats prints the counts the reference gives;
 *  - stochastic rounding: bytes equal the library's one-shot call over the
 *    whole array (chunking and 1 vs 2 threads change nothing);
 *  - bad input: exit 2, one line naming the problem, and nothing left behind. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_cli_round.XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", tmpdir, tmpdir);
    ck_assert(system(cmd) == 0);
}

static void tpath(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", tmpdir, name); }

static int run(const char *args)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s >out 2>err", tmpdir, bin, args);
    int st = system(cmd);
    ck_assert(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

static char *slurp(const char *name, size_t *len)
{
    char p[600], *d;
    size_t l;
    tpath(p, sizeof p, name);
    ck_assert_msg(amp_read_file(p, (size_t)1 << 28, &d, &l) == AMP_OK, "%s", amp_errmsg());
    if (len) *len = l;
    return d;
}

/* Names in tmpdir other than out, err and the inputs listed. */
static int stray_files(const char *const *keep, int nkeep)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "out") || !strcmp(e->d_name, "err")) continue;
        int k = 0;
        for (int i = 0; i < nkeep; i++) k |= !strcmp(e->d_name, keep[i]);
        if (!k) { fprintf(stderr, "stray file: %s\n", e->d_name); n++; }
    }
    if (d) closedir(d);
    return n;
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || amp_f2u(a) == amp_f2u(b); }

static void test_values(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double e = -30 + 50 * amp_rand_uniform(1, 2, i);
        x[i] = (float)(exp2(e) * (i & 1 ? -1 : 1));
    }
    x[0] = 0; x[1] = -0.0f; x[2] = NAN; x[3] = INFINITY; x[4] = 65520; x[5] = 1e-9f; x[6] = 464; x[7] = 465;
}

START_TEST(npy_f4_roundtrip)
{
    enum { N = 1200 };
    static float x[N];
    test_values(x, N);
    size_t shape[3] = { 10, 12, 10 };
    char p[600];
    tpath(p, sizeof p, "in.npy");
    ck_assert(amp_npy_write_f32(p, x, 3, shape) == AMP_OK);
    static const char *const fmts[] = { "fp16", "bf16", "e4m3", "e5m2", "e2m1", "e3m4fnuz", "tf32" };
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        char args[256];
        snprintf(args, sizeof args, "round --format %s in.npy out.npy", fmts[k]);
        ck_assert_int_eq(run(args), 0);
        amp_format f;
        ck_assert(amp_format_parse(fmts[k], &f) == AMP_OK);
        amp_tensor_file tf;
        tpath(p, sizeof p, "out.npy");
        ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
        const amp_tensor_view *v = &tf.tensors[0];
        ck_assert(v->dtype == AMP_DT_F32 && v->ndim == 3 && v->shape[0] == 10 && v->shape[1] == 12 && v->n == N);
        static float y[N];
        amp_tensor_view_to_f32(v, 0, N, y);
        amp_round_opts o = amp_round_defaults();
        for (size_t i = 0; i < N; i++) {
            float w = amp_round1_mpfr(&f, &o, x[i], i, NULL);
            ck_assert_msg(same_float(w, y[i]), "%s x=%a: expected %a got %a", fmts[k], (double)x[i], (double)w,
                          (double)y[i]);
        }
        amp_tensor_file_close(&tf);
    }
}
END_TEST

START_TEST(f8_rounds_from_double)
{
    /* 1 + 2^-11 + 2^-40: correctly rounded to fp16 it is 1 + 2^-10 (above the
     * tie); through float32 first it would be the tie 1 + 2^-11 -> 1. */
    double x[6] = { 1 + 0x1p-11 + 0x1p-40, -(1 + 0x1p-11 + 0x1p-40), 0x1p-1074, 1e300, 65519.99, 0.1 };
    char p[600];
    tpath(p, sizeof p, "in.f64");
    ck_assert(amp_write_file_atomic(p, x, sizeof x) == AMP_OK);
    ck_assert_int_eq(run("round --format fp16 --saturate in.f64 out.f32"), 0);
    size_t len;
    char *d = slurp("out.f32", &len);
    ck_assert(len == 6 * 4);
    float y[6];
    memcpy(y, d, sizeof y);
    free(d);
    ck_assert(y[0] == 1 + 0x1p-10f && y[1] == -(1 + 0x1p-10f));
    const amp_format *f = amp_format_get(AMP_FMT_FP16);
    amp_round_opts o = amp_round_defaults();
    o.flags = AMP_SATURATE;
    for (int i = 0; i < 6; i++) ck_assert(same_float(y[i], amp_round1_mpfr(f, &o, x[i], (uint64_t)i, NULL)));
    ck_assert(y[3] == 65504.0f && y[4] == 65504.0f);

    /* the same through a '<f8' .npy (written by hand) */
    char hdr[256];
    size_t hl, sh[1] = { 6 };
    ck_assert(amp_npy_header("<f8", 1, sh, hdr, sizeof hdr - sizeof x, &hl) == AMP_OK);
    memcpy(hdr + hl, x, sizeof x);
    tpath(p, sizeof p, "in8.npy");
    ck_assert(amp_write_file_atomic(p, hdr, hl + sizeof x) == AMP_OK);
    ck_assert_int_eq(run("round --format fp16 --saturate in8.npy out.npy"), 0);
    amp_tensor_file tf;
    tpath(p, sizeof p, "out.npy");
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK);
    float z[6];
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 6, z);
    ck_assert(!memcmp(z, y, sizeof z));
    amp_tensor_file_close(&tf);
}
END_TEST

START_TEST(f2_and_raw)
{
    uint16_t h[4] = { 0x3c01, 0x0001, 0xfbff, 0x7e00 };   /* 1+2^-10, 2^-24, -65504, NaN */
    char hdr[256], p[600];
    size_t hl, sh[1] = { 4 };
    ck_assert(amp_npy_header("<f2", 1, sh, hdr, sizeof hdr - 8, &hl) == AMP_OK);
    memcpy(hdr + hl, h, 8);
    tpath(p, sizeof p, "h.npy");
    ck_assert(amp_write_file_atomic(p, hdr, hl + 8) == AMP_OK);
    ck_assert_int_eq(run("round --format bf16 h.npy o.f32"), 0);
    size_t len;
    char *d = slurp("o.f32", &len);
    float y[4];
    ck_assert(len == 16);
    memcpy(y, d, 16);
    free(d);
    /* bf16 of 1+2^-10 -> 1 (below half an ulp 2^-8); 2^-24 exact; -65504 -> -65536 */
    ck_assert(y[0] == 1.0f && y[1] == 0x1p-24f && y[2] == -65536.0f && isnan(y[3]));

    float x[3] = { 0.3f, -5, 1e-3f };
    tpath(p, sizeof p, "r.f32");
    ck_assert(amp_write_file_atomic(p, x, sizeof x) == AMP_OK);
    ck_assert_int_eq(run("round --format=e4m3 --rounding=rtz r.f32 o.npy"), 0);
    amp_tensor_file tf;
    tpath(p, sizeof p, "o.npy");
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.tensors[0].ndim == 1 && tf.tensors[0].n == 3);
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 3, y);
    amp_tensor_file_close(&tf);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_TZ;
    for (int i = 0; i < 3; i++)
        ck_assert(same_float(y[i], amp_round1_mpfr(amp_format_get(AMP_FMT_E4M3), &o, x[i], 0, NULL)));
    ck_assert(y[0] == 0.28125f);   /* 0.3 toward zero in e4m3: 1.001b * 2^-2 */

    /* --ftz flushes subnormal results, --daz subnormal inputs, --exact agrees */
    float sub[3] = { 0x1p-20f, 0x1p-14f, -0x1.8p-24f };
    tpath(p, sizeof p, "sub.f32");
    ck_assert(amp_write_file_atomic(p, sub, sizeof sub) == AMP_OK);
    static const struct { const char *opt; float want[3]; } fz[] = {
        { "", { 0x1p-20f, 0x1p-14f, -0x1p-23f } },
        { "--ftz", { 0, 0x1p-14f, -0.0f } },
        { "--daz", { 0, 0x1p-14f, -0.0f } },
        { "--exact --rounding rtz", { 0x1p-20f, 0x1p-14f, -0x1p-24f } },
    };
    for (int k = 0; k < 4; k++) {
        char args[128];
        snprintf(args, sizeof args, "round --format fp16 %s sub.f32 sub_out.f32", fz[k].opt);
        ck_assert_int_eq(run(args), 0);
        size_t l2;
        char *q = slurp("sub_out.f32", &l2);
        ck_assert(l2 == 12);
        for (int i = 0; i < 3; i++) {
            float g;
            memcpy(&g, q + 4 * i, 4);
            ck_assert_msg(amp_f2u(g) == amp_f2u(fz[k].want[i]), "%s element %d: expected %a got %a", fz[k].opt, i,
                          (double)fz[k].want[i], (double)g);
        }
        free(q);
    }

    /* a .safetensors with one tensor is accepted, with two it is not */
    amp_st_entry e[2] = { { .name = "a", .ndim = 1, .shape = { 3 }, .data = x },
                          { .name = "b", .ndim = 1, .shape = { 1 }, .data = x } };
    tpath(p, sizeof p, "one.safetensors");
    ck_assert(amp_safetensors_write_f32(p, e, 1) == AMP_OK);
    tpath(p, sizeof p, "two.safetensors");
    ck_assert(amp_safetensors_write_f32(p, e, 2) == AMP_OK);
    ck_assert_int_eq(run("round --format fp16 one.safetensors s.f32"), 0);
    ck_assert_int_eq(run("round --format fp16 two.safetensors s2.f32"), 2);
    char *err = slurp("err", NULL);
    ck_assert(strstr(err, "two.safetensors") && strstr(err, "2 tensors"));
    free(err);
}
END_TEST

START_TEST(encode_and_stats)
{
    enum { N = 500 };
    static float x[N];
    test_values(x, N);
    char p[600];
    size_t sh[2] = { 25, 20 };
    tpath(p, sizeof p, "in.npy");
    ck_assert(amp_npy_write_f32(p, x, 2, sh) == AMP_OK);
    static const struct { const char *fmt, *out, *descr; int bytes; } cases[] = {
        { "e4m3", "e.npy", "'|u1'", 1 }, { "e5m2", "e.u8", NULL, 1 }, { "bf16", "e16.npy", "'<u2'", 2 },
        { "fp16", "e16.bin", NULL, 2 }, { "e2m3", "e6.npy", "'|u1'", 1 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char args[256];
        snprintf(args, sizeof args, "round --format %s --saturate --encode in.npy %s", cases[k].fmt, cases[k].out);
        x[2] = cases[k].fmt[1] == '2' ? 1.0f : NAN;   /* e2m3 has no NaN to encode */
        ck_assert(amp_npy_write_f32(p, x, 2, sh) == AMP_OK);
        ck_assert_int_eq(run(args), 0);
        size_t len;
        char *d = slurp(cases[k].out, &len);
        size_t off = 0;
        if (cases[k].descr) {
            ck_assert(strstr(d + 10, cases[k].descr) && strstr(d + 10, "(25, 20)"));
            off = len - (size_t)N * cases[k].bytes;
            ck_assert(off == 128);
        } else {
            ck_assert(len == (size_t)N * cases[k].bytes);
        }
        const amp_format *f = NULL;
        amp_format ff;
        ck_assert(amp_format_parse(cases[k].fmt, &ff) == AMP_OK);
        f = &ff;
        amp_round_opts o = amp_round_defaults();
        o.flags = AMP_SATURATE;
        for (int i = 0; i < N; i++) {
            int64_t want = amp_encode1(f, amp_round1_mpfr(f, &o, x[i], (uint64_t)i, NULL));
            uint32_t got = cases[k].bytes == 1 ? (unsigned char)d[off + i]
                                               : (uint32_t)(unsigned char)d[off + 2 * i] | (uint32_t)(unsigned char)d[off + 2 * i + 1] << 8;
            ck_assert_msg(want >= 0 && (uint32_t)want == got, "%s element %d: expected 0x%llx got 0x%x", cases[k].fmt, i,
                          (long long)want, got);
        }
        free(d);
    }

    /* --stats: the counts the reference gives */
    x[2] = NAN;
    ck_assert(amp_npy_write_f32(p, x, 2, sh) == AMP_OK);
    ck_assert_int_eq(run("round --format e4m3 --stats in.npy o.npy"), 0);
    char *out = slurp("out", NULL);
    uint64_t cnt[AMP_CLS_COUNT] = { 0 };
    amp_round_opts o = amp_round_defaults();
    for (int i = 0; i < N; i++) {
        amp_class c;
        amp_round1_mpfr(amp_format_get(AMP_FMT_E4M3), &o, x[i], (uint64_t)i, &c);
        cnt[c]++;
    }
    for (int c = 0; c < AMP_CLS_COUNT; c++) {
        char line[64];
        snprintf(line, sizeof line, "\n%-13s %llu\n", amp_class_name((amp_class)c), (unsigned long long)cnt[c]);
        ck_assert_msg(strstr(out, line), "missing '%s' in:\n%s", line + 1, out);
    }
    ck_assert(strstr(out, "\nn             500\n") && strstr(out, "\namax          inf\n"));
    ck_assert(strstr(out, "\namin_nonzero  ") && strstr(out, "\nrel_err       "));
    free(out);
}
END_TEST

START_TEST(sr_chunking_and_threads)
{
    size_t n = ((size_t)1 << 20) * 2 + 12345;   /* three chunks of the CLI */
    float *x = malloc(n * 4), *y = malloc(n * 4);
    ck_assert(x && y);
    for (size_t i = 0; i < n; i++) x[i] = (float)(amp_rand_uniform(5, 6, i) * 3 - 1.5);
    char p[600];
    tpath(p, sizeof p, "big.f32");
    ck_assert(amp_write_file_atomic(p, x, n * 4) == AMP_OK);
    ck_assert_int_eq(run("round --format e5m2 --rounding sr --seed 42 --sr-bits 8 --threads 1 big.f32 a.f32"), 0);
    ck_assert_int_eq(run("round --format e5m2 --rounding sr --seed 42 --sr-bits 8 --threads 2 big.f32 b.f32"), 0);
    amp_round_opts o = amp_round_defaults();
    o.mode = AMP_RND_SR;
    o.seed = 42;
    o.sr_bits = 8;
    ck_assert(amp_round_f32(amp_format_get(AMP_FMT_E5M2), &o, x, y, n, NULL) == AMP_OK);
    size_t la, lb;
    char *a = slurp("a.f32", &la), *b = slurp("b.f32", &lb);
    ck_assert(la == n * 4 && lb == n * 4);
    ck_assert_msg(!memcmp(a, b, la), "1 and 2 threads differ");
    ck_assert_msg(!memcmp(a, y, la), "CLI chunks differ from one library call over the whole array");
    /* and the draws are really random: both neighbours occur */
    size_t differ = 0;
    ck_assert_int_eq(run("round --format e5m2 --rounding sr --seed 43 --sr-bits 8 big.f32 c.f32"), 0);
    char *c = slurp("c.f32", NULL);
    for (size_t i = 0; i < n; i++) differ += memcmp(a + 4 * i, c + 4 * i, 4) != 0;
    ck_assert(differ > n / 10);
    free(a); free(b); free(c); free(x); free(y);
}
END_TEST

/* ---- bad input: exit 2, one line naming the problem, nothing left behind ---------- */
START_TEST(bad_input)
{
    char p[600];
    float x[4] = { 1, 2, 3, 4 };
    size_t sh[1] = { 4 };
    tpath(p, sizeof p, "in.npy");
    ck_assert(amp_npy_write_f32(p, x, 1, sh) == AMP_OK);
    tpath(p, sizeof p, "trunc.npy");
    ck_assert(amp_write_file_atomic(p, "\x93NUMPY\x01\x00\x76\x00{'descr'", 17) == AMP_OK);
    char hdr[256];
    size_t hl;
    ck_assert(amp_npy_header("<i4", 1, sh, hdr, sizeof hdr - 16, &hl) == AMP_OK);
    memset(hdr + hl, 0, 16);
    tpath(p, sizeof p, "int.npy");
    ck_assert(amp_write_file_atomic(p, hdr, hl + 16) == AMP_OK);
    ck_assert(amp_npy_header("<f4", 1, sh, hdr, sizeof hdr - 16, &hl) == AMP_OK);
    tpath(p, sizeof p, "short.npy");
    ck_assert(amp_write_file_atomic(p, hdr, hl + 8) == AMP_OK);   /* data truncated */
    tpath(p, sizeof p, "odd.f32");
    ck_assert(amp_write_file_atomic(p, x, 6) == AMP_OK);
    tpath(p, sizeof p, "ro");
    ck_assert(mkdir(p, 0500) == 0);
    int root = geteuid() == 0;
    static const char *const keep[] = { "in.npy", "trunc.npy", "int.npy", "short.npy", "odd.f32", "ro", "nan.npy" };
    float nanv[2] = { 1, NAN };
    size_t sh2[1] = { 2 };
    tpath(p, sizeof p, "nan.npy");
    ck_assert(amp_npy_write_f32(p, nanv, 1, sh2) == AMP_OK);

    static const char *const cases[][2] = {
        { "round --format fp99 in.npy out.npy", "fp99" },
        { "round --format fp16 --rounding rnx in.npy out.npy", "rnx" },
        { "round in.npy out.npy", "--format is required" },
        { "round --format fp16 in.npy", "needs IN and OUT" },
        { "round --format fp16 in.npy out.npy extra", "extra" },
        { "round --format fp16 --sr-bits 0 in.npy out.npy", "--sr-bits" },
        { "round --format fp16 --sr-bits 65 in.npy out.npy", "--sr-bits" },
        { "round --format fp16 --seed -1 in.npy out.npy", "--seed" },
        { "round --format fp16 --threads 0 in.npy out.npy", "--threads" },
        { "round --format fp16 --bogus in.npy out.npy", "--bogus" },
        { "round --format fp16 trunc.npy out.npy", "trunc.npy: truncated header" },
        { "round --format fp16 int.npy out.npy", "int.npy: dtype '<i4' not supported" },
        { "round --format fp16 short.npy out.npy", "short.npy: data truncated" },
        { "round --format fp16 odd.f32 out.npy", "odd.f32: size 6 is not a multiple of 4" },
        { "round --format fp16 missing.npy out.npy", "missing.npy: cannot open" },
        { "round --format fp16 in.npy out.txt", "out.txt: output must be" },
        { "round --format fp32 --encode in.npy out.npy", "32 bits" },
        { "round --format fp16 in.npy nodir/out.npy", "nodir/out.npy: cannot write" },
        { "round --format e2m1 --encode nan.npy out.u8", "not a value of e2m1" },
        { "round --format fp16 in.npy ro/out.npy", "ro/out.npy: cannot write" },
        { "round --format fp16 in.npy /proc/ampsim_test_out.npy", "/proc/ampsim_test_out.npy: cannot write" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (root && strstr(cases[i][0], "ro/")) continue;   /* root writes anywhere */
        ck_assert_msg(run(cases[i][0]) == 2, "%s: exit code", cases[i][0]);
        char *err = slurp("err", NULL), *out = slurp("out", NULL);
        int lines = 0;
        for (char *s = err; *s; s++) lines += *s == '\n';
        ck_assert_msg(strstr(err, cases[i][1]) && lines == 1, "%s: stderr '%s'", cases[i][0], err);
        ck_assert_msg(*out == 0, "%s: stdout '%s'", cases[i][0], out);
        free(err);
        free(out);
        ck_assert_msg(stray_files(keep, (int)(sizeof keep / sizeof keep[0])) == 0, "%s left a file", cases[i][0]);
    }
    ck_assert_int_eq(run("round --help"), 0);
    char *out = slurp("out", NULL);
    ck_assert(strstr(out, "usage: ampsim round"));
    free(out);
}
END_TEST

/* A file of several tensors: FILE:NAME picks one (safetensors and npz), a bare
 * FILE is refused with the names' syntax in the message. */
START_TEST(named_tensor)
{
    float a[3] = { 1.1f, -2.2f, 3.3f }, b[2] = { 1e6f, 0.3f };
    amp_st_entry e[2] = { { .name = "w.a", .ndim = 1, .shape = { 3 }, .data = a },
                          { .name = "w.b", .ndim = 1, .shape = { 2 }, .data = b } };
    char p[600];
    tpath(p, sizeof p, "m.safetensors");
    ck_assert(amp_safetensors_write_f32(p, e, 2) == AMP_OK);
    ck_assert_int_eq(run("round --format e4m3 --saturate m.safetensors:w.b out.npy"), 0);
    amp_tensor_file tf;
    tpath(p, sizeof p, "out.npy");
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.tensors[0].n == 2);
    float y[2];
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 2, y);
    amp_tensor_file_close(&tf);
    amp_round_opts o = amp_round_defaults();
    o.flags = AMP_SATURATE;
    for (int i = 0; i < 2; i++) ck_assert(same_float(y[i], amp_round1_mpfr(amp_format_get(AMP_FMT_E4M3), &o, b[i], 0, NULL)));
    ck_assert(y[0] == 448.0f);
    ck_assert_int_eq(run("round --format e4m3 m.safetensors out2.npy"), 2);
    size_t len;
    char *err = slurp("err", &len);
    ck_assert_msg(strstr(err, "m.safetensors: holds 2 tensors; name one as FILE:NAME"), "%s", err);
    free(err);
    ck_assert_int_eq(run("round --format e4m3 m.safetensors:w.c out2.npy"), 2);
    err = slurp("err", &len);
    ck_assert_msg(strstr(err, "no float tensor named 'w.c'"), "%s", err);
    free(err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli_round");
    TCase *t = tcase_create("cli");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, npy_f4_roundtrip);
    tcase_add_test(t, f8_rounds_from_double);
    tcase_add_test(t, f2_and_raw);
    tcase_add_test(t, encode_and_stats);
    tcase_add_test(t, sr_chunking_and_threads);
    tcase_add_test(t, bad_input);
    tcase_add_test(t, named_tensor);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
