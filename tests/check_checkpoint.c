/* Check suite: checkpoint files (sim/checkpoint.c). Round trips of blobs,
 * registry tensors, scaler, FP8 scaler and optimizer state; every kind of
 * damage (truncation at every byte, every single flipped bit, bad version,
 * lengths past the end, duplicate sections, trailing bytes) is AMP_EFORMAT
 * naming the file. Damaged images with *valid* checksums are built here by an
 * independent little writer (zlib crc32 straight from the documented layout). */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/amp_ckpt_XXXXXX");
    ck_assert(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert(system(cmd) == 0);
}

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmpdir, name);
}

/* ---- an independent image builder (layout of amp_checkpoint.h) ---------- */
typedef struct img { uint8_t b[4096]; size_t n; uint32_t nsec; } img;
static void ib(img *m, const void *p, size_t n) { ck_assert(m->n + n <= sizeof m->b); memcpy(m->b + m->n, p, n); m->n += n; }
static void i32(img *m, uint32_t v) { uint8_t x[4] = { v, v >> 8, v >> 16, v >> 24 }; ib(m, x, 4); }
static void i64(img *m, uint64_t v) { for (int i = 0; i < 8; i++) { uint8_t x = (uint8_t)(v >> (8 * i)); ib(m, &x, 1); } }
static void img_head(img *m, uint32_t version)
{
    m->n = 0;
    m->nsec = 0;
    ib(m, "AMPSIMCK", 8);
    i32(m, version);
    i32(m, 0);
}
/* A section whose declared length may differ from the bytes that follow. */
static void img_sec(img *m, const char *name, const void *p, size_t n, uint64_t declared)
{
    size_t at = m->n, nl = strlen(name);
    uint8_t h[2] = { (uint8_t)nl, (uint8_t)(nl >> 8) };
    ib(m, h, 2);
    ib(m, name, nl);
    i64(m, declared);
    uLong c = crc32(0, m->b + at, (uInt)(2 + nl + 8));
    c = crc32(c, p, (uInt)n);
    i32(m, (uint32_t)c);
    ib(m, p, n);
    m->nsec++;
}
static void img_tail(img *m, uint32_t count)
{
    uLong c = crc32(0, m->b, (uInt)m->n);
    ib(m, "AMPSIMEN", 8);
    i32(m, count);
    i32(m, (uint32_t)c);
}

static void expect_bad(const uint8_t *p, size_t n, const char *needle)
{
    amp_ckpt ck;
    amp_status st = amp_ckpt_parse("dmg.bin", p, n, &ck);
    ck_assert_msg(st == AMP_EFORMAT, "len %zu: status %d (%s)", n, st, amp_errmsg());
    ck_assert_msg(!strncmp(amp_errmsg(), "dmg.bin: ", 9), "message '%s' does not name the file", amp_errmsg());
    if (needle) ck_assert_msg(strstr(amp_errmsg(), needle), "message '%s' lacks '%s'", amp_errmsg(), needle);
    ck_assert(ck.sec == NULL && ck.n == 0);
}

START_TEST(independent_image_reads)
{
    img m;
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "alpha", "hello", 5, 5);
    img_sec(&m, "b", "", 0, 0);
    img_tail(&m, 2);
    amp_ckpt ck;
    ck_assert_msg(amp_ckpt_parse("ok.bin", m.b, m.n, &ck) == AMP_OK, "%s", amp_errmsg());
    ck_assert_uint_eq(ck.n, 2);
    const amp_ckpt_section *s = amp_ckpt_find(&ck, "alpha");
    ck_assert(s && s->len == 5 && !memcmp(s->data, "hello", 5));
    ck_assert(amp_ckpt_find(&ck, "b") && amp_ckpt_find(&ck, "b")->len == 0);
    ck_assert(amp_ckpt_find(&ck, "c") == NULL);
    char out[5];
    ck_assert(amp_ckpt_get(&ck, "alpha", out, 4) == AMP_EFORMAT);
    ck_assert(amp_ckpt_get(&ck, "nope", out, 5) == AMP_EFORMAT);
    ck_assert(amp_ckpt_get(&ck, "alpha", out, 5) == AMP_OK && !memcmp(out, "hello", 5));
    amp_ckpt_free(&ck);
}
END_TEST

START_TEST(crafted_defects)
{
    img m;
    /* bad version, with correct checksums */
    img_head(&m, AMP_CKPT_VERSION + 1);
    img_sec(&m, "a", "x", 1, 1);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, "version");
    /* duplicate section */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "x", 1, 1);
    img_sec(&m, "a", "y", 1, 1);
    img_tail(&m, 2);
    expect_bad(m.b, m.n, "twice");
    /* declared length past the end (CRCs recomputed) */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "xyz", 3, 1000);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, "past the end");
    /* huge length */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "xyz", 3, UINT64_MAX);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, "'a'");
    /* count mismatch both ways */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "x", 1, 1);
    img_tail(&m, 2);
    expect_bad(m.b, m.n, NULL);
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "x", 1, 1);
    img_sec(&m, "b", "x", 1, 1);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, NULL);
    img_head(&m, AMP_CKPT_VERSION);
    img_tail(&m, 0xffffffffu);
    expect_bad(m.b, m.n, NULL);
    /* bad names: empty, control character */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "", "x", 1, 1);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, "name");
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a\nb", "x", 1, 1);
    img_tail(&m, 1);
    expect_bad(m.b, m.n, "name");
    /* section payload shorter than declared, so the next bytes are read as its
     * payload: checksum mismatch */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "x", 1, 2);
    img_sec(&m, "b", "y", 1, 1);
    img_tail(&m, 2);
    expect_bad(m.b, m.n, NULL);
    /* bytes after the trailer */
    img_head(&m, AMP_CKPT_VERSION);
    img_sec(&m, "a", "x", 1, 1);
    img_tail(&m, 1);
    ib(&m, "junk", 4);
    expect_bad(m.b, m.n, NULL);
    /* wrong magic */
    img_head(&m, AMP_CKPT_VERSION);
    img_tail(&m, 0);
    m.b[0] = 'X';
    expect_bad(m.b, m.n, "magic");
    /* empty file and short files */
    expect_bad((const uint8_t *)"", 0, NULL);
    expect_bad((const uint8_t *)"AMPSIMCK", 8, NULL);
}
END_TEST

/* Writes a small checkpoint with amp_ckpt_* and returns its bytes. */
static uint8_t *small_file(size_t *len)
{
    char p[512];
    path_of(p, sizeof p, "small.bin");
    amp_ckpt_writer w;
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    ck_assert(amp_ckpt_put(&w, "step", "\x07\0\0\0\0\0\0\0", 8) == AMP_OK);
    ck_assert(amp_ckpt_put(&w, "blob", "abcdefghij", 10) == AMP_OK);
    ck_assert(amp_ckpt_put_f64(&w, "lr", 0.1) == AMP_OK);
    ck_assert(amp_ckpt_commit(&w) == AMP_OK);
    char *buf;
    ck_assert(amp_read_file(p, 1 << 20, &buf, len) == AMP_OK);
    return (uint8_t *)buf;
}

START_TEST(truncation_every_byte)
{
    size_t len;
    uint8_t *b = small_file(&len);
    amp_ckpt ck;
    ck_assert_msg(amp_ckpt_parse("dmg.bin", b, len, &ck) == AMP_OK, "%s", amp_errmsg());
    amp_ckpt_free(&ck);
    for (size_t n = 0; n < len; n++) {
        /* a private copy of exactly n bytes so ASan sees any read past it */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b, n);
        expect_bad(cut, n, NULL);
        free(cut);
    }
    free(b);
}
END_TEST

START_TEST(every_flipped_bit)
{
    size_t len;
    uint8_t *b = small_file(&len);
    for (size_t i = 0; i < len; i++)
        for (int k = 0; k < 8; k++) {
            b[i] ^= (uint8_t)(1u << k);
            expect_bad(b, len, NULL);
            b[i] ^= (uint8_t)(1u << k);
        }
    free(b);
}
END_TEST

START_TEST(blobs_and_files)
{
    char p[512], tmpname[4096];
    path_of(p, sizeof p, "c.bin");
    amp_ckpt_writer w;
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    snprintf(tmpname, sizeof tmpname, "%s", w.af.tmp);
    ck_assert(access(p, F_OK) != 0 && access(tmpname, F_OK) == 0);
    ck_assert(amp_ckpt_put_u64(&w, "u", 0x0123456789abcdefull) == AMP_OK);
    ck_assert(amp_ckpt_put_f64(&w, "d", -0.0) == AMP_OK);
    ck_assert(amp_ckpt_put(&w, "u", "x", 1) == AMP_EINVAL);     /* duplicate */
    ck_assert(amp_ckpt_put(&w, "", "x", 1) == AMP_EINVAL);
    ck_assert(amp_ckpt_put(&w, "tab\tname", "x", 1) == AMP_EINVAL);
    static uint8_t big[100000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + 3);
    ck_assert(amp_ckpt_put(&w, "big", big, sizeof big) == AMP_OK);
    ck_assert(amp_ckpt_commit(&w) == AMP_OK);
    ck_assert(access(p, F_OK) == 0 && access(tmpname, F_OK) != 0);
    amp_ckpt ck;
    ck_assert_msg(amp_ckpt_load(p, &ck) == AMP_OK, "%s", amp_errmsg());
    uint64_t u;
    double d;
    ck_assert(amp_ckpt_get_u64(&ck, "u", &u) == AMP_OK && u == 0x0123456789abcdefull);
    ck_assert(amp_ckpt_get_f64(&ck, "d", &d) == AMP_OK && amp_d2u(d) == amp_d2u(-0.0));
    ck_assert(amp_ckpt_get_u64(&ck, "d", &u) == AMP_OK);        /* same size: allowed */
    ck_assert(amp_ckpt_get_u64(&ck, "big", &u) == AMP_EFORMAT);
    const amp_ckpt_section *s = amp_ckpt_find(&ck, "big");
    ck_assert(s && s->len == sizeof big && !memcmp(s->data, big, sizeof big));
    amp_ckpt_free(&ck);
    /* byte 8+ in the file as written: the version is right after the magic */
    char *raw;
    size_t len;
    ck_assert(amp_read_file(p, 1 << 20, &raw, &len) == AMP_OK);
    ck_assert(!memcmp(raw, "AMPSIMCK", 8) && (uint8_t)raw[8] == AMP_CKPT_VERSION && raw[9] == 0);
    free(raw);
    /* abort leaves nothing, and the previous file stays */
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    ck_assert(amp_ckpt_put(&w, "x", "y", 1) == AMP_OK);
    amp_ckpt_abort(&w);
    ck_assert(access(w.af.tmp, F_OK) != 0);
    ck_assert(amp_ckpt_load(p, &ck) == AMP_OK);
    ck_assert(amp_ckpt_find(&ck, "x") == NULL);
    amp_ckpt_free(&ck);
    /* missing and unreadable files */
    path_of(p, sizeof p, "none.bin");
    ck_assert(amp_ckpt_load(p, &ck) == AMP_EIO);
    ck_assert(strstr(amp_errmsg(), "none.bin"));
}
END_TEST

static void make_reg(amp_tensors *r, const char *wfmt, int with_extra, size_t cols)
{
    amp_format f32, fw;
    ck_assert(amp_format_parse("fp32", &f32) == AMP_OK);
    ck_assert(amp_format_parse(wfmt, &fw) == AMP_OK);
    amp_tensors_init(r, 1, AMP_RND_NE, 0);
    size_t s1[2] = { 3, cols }, s2[1] = { 5 }, s3[1] = { 4 };
    amp_tensor *t;
    ck_assert(amp_tensors_add(r, "fc1.weight", AMP_ROLE_WEIGHT, &fw, 2, s1, &t) == AMP_OK);
    ck_assert(amp_tensors_add(r, "fc1.weight.master", AMP_ROLE_MASTER, &f32, 2, s1, &t) == AMP_OK);
    ck_assert(amp_tensors_add(r, "fc1.out", AMP_ROLE_ACT, &fw, 1, s2, &t) == AMP_OK);
    ck_assert(amp_tensors_add(r, "fc1.weight.exp_avg", AMP_ROLE_OPTIM_STATE, &f32, 2, s1, &t) == AMP_OK);
    if (with_extra) ck_assert(amp_tensors_add(r, "fc2.bias", AMP_ROLE_WEIGHT, &fw, 1, s3, &t) == AMP_OK);
}

static void fill_reg(amp_tensors *r, float base)
{
    for (int i = 0; i < r->n; i++) {
        for (size_t k = 0; k < r->t[i]->n; k++) r->t[i]->data[k] = base + (float)(i * 100 + (int)k) * 0.25f;
        r->t[i]->scale = base + (float)i;
    }
}

START_TEST(tensors_round_trip)
{
    char p[512];
    path_of(p, sizeof p, "t.bin");
    amp_tensors a, b;
    make_reg(&a, "fp16", 1, 2);
    fill_reg(&a, 1.0f);
    a.t[0]->data[0] = -0.0f;
    a.t[1]->data[1] = amp_u2f(0x7fc00001u);
    amp_ckpt_writer w;
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    unsigned roles = (1u << AMP_ROLE_WEIGHT) | (1u << AMP_ROLE_MASTER) | (1u << AMP_ROLE_OPTIM_STATE);
    ck_assert(amp_ckpt_put_tensors(&w, &a, roles) == AMP_OK);
    ck_assert(amp_ckpt_commit(&w) == AMP_OK);
    amp_ckpt ck;
    ck_assert(amp_ckpt_load(p, &ck) == AMP_OK);
    ck_assert_uint_eq(ck.n, 4);                 /* fc1.out (act) was not saved */
    make_reg(&b, "fp16", 1, 2);
    fill_reg(&b, 7.0f);
    ck_assert_msg(amp_ckpt_get_tensors(&ck, &b, roles) == AMP_OK, "%s", amp_errmsg());
    for (int i = 0; i < a.n; i++) {
        int saved = (roles >> a.t[i]->role) & 1;
        if (saved) {
            ck_assert(!memcmp(a.t[i]->data, b.t[i]->data, a.t[i]->n * 4));
            ck_assert(amp_f2u(a.t[i]->scale) == amp_f2u(b.t[i]->scale));
        } else {
            ck_assert(b.t[i]->data[0] == 7.0f + (float)(i * 100) * 0.25f);
        }
    }
    amp_tensors_free(&b);
    /* every mismatch is AMP_EFORMAT naming the tensor, and changes nothing */
    struct { const char *fmt; int extra; size_t cols; unsigned roles; const char *needle; } bad[] = {
        { "bf16", 1, 2, roles, "fc1.weight" },                 /* format differs */
        { "fp16", 1, 3, roles, "shape" },                      /* shape differs */
        { "fp16", 0, 2, roles, "fc2.bias" },                   /* checkpoint has an extra tensor */
        { "fp16", 1, 2, roles | (1u << AMP_ROLE_ACT), "fc1.out" },  /* model tensor missing from file */
        { "fp16", 1, 2, (1u << AMP_ROLE_WEIGHT), "fc1.weight.master" }, /* unexpected role in file */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        make_reg(&b, bad[k].fmt, bad[k].extra, bad[k].cols);
        fill_reg(&b, 7.0f);
        ck_assert_int_eq(amp_ckpt_get_tensors(&ck, &b, bad[k].roles), AMP_EFORMAT);
        ck_assert_msg(strstr(amp_errmsg(), bad[k].needle) && strstr(amp_errmsg(), "t.bin"), "case %zu: %s", k,
                      amp_errmsg());
        for (int i = 0; i < b.n; i++) ck_assert(b.t[i]->data[0] == 7.0f + (float)(i * 100) * 0.25f);
        amp_tensors_free(&b);
    }
    amp_ckpt_free(&ck);
    amp_tensors_free(&a);
}
END_TEST

START_TEST(scaler_optim_round_trip)
{
    char p[512];
    path_of(p, sizeof p, "s.bin");
    /* a torch scaler with some history: 3 finite steps, an overflow, growth */
    amp_scaler a, b, c;
    ck_assert(amp_scaler_init_str(&a, "torch:init=1024,interval=2") == AMP_OK);
    amp_scaler_result res;
    int infs[] = { 0, 0, 1, 0 };
    for (int i = 0; i < 4; i++) {
        amp_scaler_obs obs = { .found_inf = infs[i] };
        ck_assert(amp_scaler_update(&a, &obs, &res) == AMP_OK);
    }
    amp_fp8_scaler fa, fb;
    ck_assert(amp_fp8_init_str(&fa, "delayed:history=4") == AMP_OK);
    float su, sa;
    ck_assert(amp_fp8_observe_amax(&fa, 2, amp_format_get(AMP_FMT_E4M3), 3.5f, &su, &sa) == AMP_OK);
    ck_assert(amp_fp8_observe_amax(&fa, 2, amp_format_get(AMP_FMT_E4M3), 7.0f, &su, &sa) == AMP_OK);
    amp_optim oa, ob;
    amp_optim_defaults(&oa, AMP_OPT_ADAMW, 0.003f);
    oa.t = 42;
    amp_ckpt_writer w;
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    ck_assert(amp_ckpt_put_scaler(&w, &a) == AMP_OK);
    ck_assert(amp_ckpt_put_fp8(&w, &fa) == AMP_OK);
    ck_assert(amp_ckpt_put_optim(&w, &oa) == AMP_OK);
    ck_assert(amp_ckpt_commit(&w) == AMP_OK);
    amp_ckpt ck;
    ck_assert(amp_ckpt_load(p, &ck) == AMP_OK);
    ck_assert(amp_scaler_init_str(&b, "torch:init=1024,interval=2") == AMP_OK);
    ck_assert_msg(amp_ckpt_get_scaler(&ck, &b) == AMP_OK, "%s", amp_errmsg());
    ck_assert(b.step == a.step && amp_f2u(b.scale) == amp_f2u(a.scale) && b.tracker == a.tracker);
    /* the restored scaler continues exactly like the original */
    for (int i = 0; i < 5; i++) {
        amp_scaler_obs obs = { .found_inf = i == 3 };
        amp_scaler_result ra, rb;
        ck_assert(amp_scaler_update(&a, &obs, &ra) == AMP_OK);
        ck_assert(amp_scaler_update(&b, &obs, &rb) == AMP_OK);
        ck_assert(amp_f2u(ra.scale_after) == amp_f2u(rb.scale_after) && ra.skipped == rb.skipped);
    }
    /* another SPEC is refused */
    ck_assert(amp_scaler_init_str(&c, "torch:init=2048,interval=2") == AMP_OK);
    ck_assert_int_eq(amp_ckpt_get_scaler(&ck, &c), AMP_EFORMAT);
    amp_scaler_free(&c);
    ck_assert(amp_fp8_init_str(&fb, "delayed:history=4") == AMP_OK);
    ck_assert_msg(amp_ckpt_get_fp8(&ck, &fb) == AMP_OK, "%s", amp_errmsg());
    ck_assert(fb.n == fa.n && fb.n == 3 && fb.t[0].hist == NULL && fb.t[2].count == 2);
    ck_assert(!memcmp(fb.t[2].hist, fa.t[2].hist, 4 * sizeof(float)));
    float ua, ub, aa, ab;
    ck_assert(amp_fp8_observe_amax(&fa, 2, amp_format_get(AMP_FMT_E4M3), 1.0f, &ua, &aa) == AMP_OK);
    ck_assert(amp_fp8_observe_amax(&fb, 2, amp_format_get(AMP_FMT_E4M3), 1.0f, &ub, &ab) == AMP_OK);
    ck_assert(amp_f2u(ua) == amp_f2u(ub) && amp_f2u(aa) == amp_f2u(ab));
    amp_fp8_free(&fb);
    ck_assert(amp_fp8_init_str(&fb, "delayed:history=8") == AMP_OK);
    ck_assert_int_eq(amp_ckpt_get_fp8(&ck, &fb), AMP_EFORMAT);
    amp_fp8_free(&fb);
    amp_optim_defaults(&ob, AMP_OPT_ADAMW, 0.5f);
    ck_assert(amp_ckpt_get_optim(&ck, &ob) == AMP_OK);
    ck_assert(!memcmp(&oa, &ob, sizeof oa) || (ob.t == 42 && ob.lr == oa.lr && ob.beta2 == oa.beta2));
    amp_optim_defaults(&ob, AMP_OPT_SGD, 0.5f);
    ck_assert_int_eq(amp_ckpt_get_optim(&ck, &ob), AMP_EFORMAT);
    amp_ckpt_free(&ck);
    amp_scaler_free(&a);
    amp_scaler_free(&b);
    amp_fp8_free(&fa);
}
END_TEST

/* A full disk while writing: AMP_EIO naming the file, the previous checkpoint
 * intact, no temporary left (file-size limit in a child, SIGXFSZ ignored). */
START_TEST(full_disk_keeps_previous)
{
    char p[512];
    path_of(p, sizeof p, "c.bin");
    amp_ckpt_writer w;
    ck_assert(amp_ckpt_create(&w, p) == AMP_OK);
    ck_assert(amp_ckpt_put_u64(&w, "step", 3) == AMP_OK);
    ck_assert(amp_ckpt_commit(&w) == AMP_OK);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = { 20000, 20000 };
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        static uint8_t big[100000];
        amp_ckpt_writer w2;
        if (amp_ckpt_create(&w2, p) != AMP_OK) _exit(11);
        amp_status st = amp_ckpt_put_u64(&w2, "step", 4);
        if (!st) st = amp_ckpt_put(&w2, "big", big, sizeof big);
        if (!st) st = amp_ckpt_commit(&w2);
        else amp_ckpt_abort(&w2);
        if (st != AMP_EIO || !strstr(amp_errmsg(), "c.bin")) _exit(12);
        if (access(w2.af.tmp, F_OK) == 0) _exit(13);
        _exit(0);
    }
    int wst;
    ck_assert(waitpid(pid, &wst, 0) == pid);
    ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child status %d", wst);
    amp_ckpt ck;
    uint64_t step;
    ck_assert(amp_ckpt_load(p, &ck) == AMP_OK);
    ck_assert(amp_ckpt_get_u64(&ck, "step", &step) == AMP_OK && step == 3);
    amp_ckpt_free(&ck);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, independent_image_reads);
    tcase_add_test(tc, crafted_defects);
    tcase_add_test(tc, truncation_every_byte);
    tcase_add_test(tc, every_flipped_bit);
    tcase_add_test(tc, blobs_and_files);
    tcase_add_test(tc, tensors_round_trip);
    tcase_add_test(tc, scaler_optim_round_trip);
    tcase_add_test(tc, full_disk_keeps_previous);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
