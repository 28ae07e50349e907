/* Check suite: the .npz reader (sim/npz.c) on files numpy wrote
 * (tests/ref/make_npz.py: numpy.savez and numpy.savez_compressed of the same
 * three arrays), whose values are typed here from that script; and on broken
 * copies: every truncation, a flipped data byte (CRC-32), an unknown
 * compression method, a member that is not a .npy, duplicate names. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *fixture(const char *name, size_t *len)
{
    const char *src = getenv("AMP_SRCDIR");
    ck_assert_msg(src != NULL, "set AMP_SRCDIR");
    char p[1024];
    snprintf(p, sizeof p, "%s/tests/ref/%s", src, name);
    char *d;
    ck_assert_msg(amp_read_file(p, 1 << 20, &d, len) == AMP_OK, "%s", amp_errmsg());
    return d;
}

static void check_arrays(const amp_tensor_view *v, int n)
{
    ck_assert_int_eq(n, 3);
    /* w = arange(12).reshape(3, 4) * 0.25 - 1, float32 */
    ck_assert_str_eq(v[0].name, "w");
    ck_assert(v[0].dtype == AMP_DT_F32 && v[0].ndim == 2 && v[0].shape[0] == 3 && v[0].shape[1] == 4);
    float w[12];
    amp_tensor_view_to_f32(&v[0], 0, 12, w);
    for (int i = 0; i < 12; i++) ck_assert(w[i] == (float)i * 0.25f - 1);
    /* h = [1, -2, 65504, 6e-8] as float16 (6e-8 -> the subnormal 2^-24 = 5.96e-8) */
    ck_assert_str_eq(v[1].name, "h");
    ck_assert(v[1].dtype == AMP_DT_F16 && v[1].ndim == 1 && v[1].n == 4);
    float h[4];
    amp_tensor_view_to_f32(&v[1], 0, 4, h);
    ck_assert(h[0] == 1 && h[1] == -2 && h[2] == 65504 && h[3] == 0x1p-24f);
    /* d = [0.1, 1e300, -3] float64 */
    ck_assert_str_eq(v[2].name, "d");
    double d[3];
    ck_assert(v[2].dtype == AMP_DT_F64 && v[2].n == 3);
    amp_tensor_view_to_f64(&v[2], 0, 3, d);
    ck_assert(d[0] == 0.1 && d[1] == 1e300 && d[2] == -3);
}

START_TEST(numpy_files)
{
    static const char *const names[] = { "npz_stored.npz", "npz_deflated.npz" };
    for (int k = 0; k < 2; k++) {
        size_t len;
        char *buf = fixture(names[k], &len);
        amp_tensor_view *v;
        int n;
        void *arena;
        ck_assert_msg(amp_npz_parse(names[k], buf, len, &v, &n, &arena, NULL, NULL) == AMP_OK, "%s", amp_errmsg());
        check_arrays(v, n);
        ck_assert(k == 0 ? arena == NULL : arena != NULL);   /* stored: views into the file */
        if (k == 0) ck_assert((const char *)v[0].data > buf && (const char *)v[0].data < buf + len);
        free(v);
        free(arena);
        /* the same through amp_tensor_file_open */
        const char *src = getenv("AMP_SRCDIR");
        char p[1024];
        snprintf(p, sizeof p, "%s/tests/ref/%s", src, names[k]);
        amp_tensor_file tf;
        ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK);
        check_arrays(tf.tensors, tf.n_tensors);
        amp_tensor_file_close(&tf);
        amp_tensor_file_close(&tf);
        free(buf);
    }
}
END_TEST

static amp_status parse(const char *buf, size_t len)
{
    amp_tensor_view *v = NULL;
    int n = 0;
    void *arena = NULL;
    amp_status st = amp_npz_parse("x.npz", buf, len, &v, &n, &arena, NULL, NULL);
    if (st) ck_assert(v == NULL && arena == NULL && !strncmp(amp_errmsg(), "x.npz", 5));
    free(v);
    free(arena);
    return st;
}

START_TEST(broken_files)
{
    static const char *const names[] = { "npz_stored.npz", "npz_deflated.npz" };
    for (int k = 0; k < 2; k++) {
        size_t len;
        char *buf = fixture(names[k], &len);
        for (size_t l = 0; l < len; l++) ck_assert_msg(parse(buf, l) == AMP_EFORMAT, "%s cut at %zu accepted", names[k], l);
        /* a flipped byte in the first member's data */
        char *c = malloc(len);
        memcpy(c, buf, len);
        size_t at = 30 + 5 + 40;          /* local header, "w.npy", well inside the data */
        c[at] ^= 0x10;
        ck_assert(parse(c, len) == AMP_EFORMAT);
        ck_assert_msg(strstr(amp_errmsg(), "CRC-32") || strstr(amp_errmsg(), "deflate"), "%s", amp_errmsg());
        /* compression method 12 (bzip2) in the central directory */
        memcpy(c, buf, len);
        char *cd = memmem(c, len, "PK\x01\x02", 4);
        ck_assert(cd != NULL);
        cd[10] = 12;
        ck_assert(parse(c, len) == AMP_EFORMAT && strstr(amp_errmsg(), "compression method 12"));
        /* a member that is not a .npy: rename w.npy to w.npz in the central directory */
        memcpy(c, buf, len);
        cd = memmem(c, len, "PK\x01\x02", 4);
        ck_assert(!memcmp(cd + 46, "w.npy", 5));
        cd[46 + 4] = 'z';
        ck_assert(parse(c, len) == AMP_EFORMAT && strstr(amp_errmsg(), "is not a .npy"));
        /* two members with one name: h.npy renamed w.npy */
        memcpy(c, buf, len);
        char *cd2 = memmem(cd + 4, len - (size_t)(cd + 4 - c), "PK\x01\x02", 4);
        ck_assert(cd2 && !memcmp(cd2 + 46, "h.npy", 5));
        cd2[46] = 'w';
        ck_assert_msg(parse(c, len) == AMP_EFORMAT && strstr(amp_errmsg(), "appears twice"), "%s", amp_errmsg());
        free(c);
        free(buf);
    }
}
END_TEST

START_TEST(non_float_members_left_out)
{
    size_t len;
    char *buf = fixture("npz_mixed.npz", &len);   /* labels int64, x float32, mask bool */
    amp_tensor_view *v;
    int n, ns;
    void *arena;
    char skipped[256];
    ck_assert_msg(amp_npz_parse("m.npz", buf, len, &v, &n, &arena, &ns, skipped) == AMP_OK, "%s", amp_errmsg());
    ck_assert(n == 1 && ns == 2 && !strcmp(v[0].name, "x"));
    ck_assert_str_eq(skipped, "labels.npy (<i8)");
    float x[2];
    amp_tensor_view_to_f32(&v[0], 0, 2, x);
    ck_assert(x[0] == 0.5f && x[1] == -1.5f);
    free(v);
    free(arena);
    free(buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("npz");
    TCase *t = tcase_create("npz");
    tcase_add_test(t, numpy_files);
    tcase_add_test(t, broken_files);
    tcase_add_test(t, non_float_members_left_out);
    suite_add_tcase(s, t);
    return amp_check_failures(s) ? 1 : 0;
}
