/* Check suite: tensor files (.npy, .safetensors, raw .f32/.f64).
 *  - valid files of every version / dtype / kind read back the values written
 *    (files built byte by byte here, independently of the writers);
 *  - every defect of a table of malformed files is AMP_EFORMAT with a message
 *    that starts with the file's path and names the defect;
 *  - float16 / bfloat16 widening agrees with amp_decode1 on all 65536 patterns;
 *  - writers: npy f32/u8/u16 and safetensors f32 round-trip through the readers,
 *    and a failed write leaves nothing behind. */
#include "ampsim.h"
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void setup(void) { ct_mkdtemp("check_tensorio"); }

static void teardown(void) { ct_rmtree(); }

static int count_files(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static void path_of(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", tmpdir, name); }

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    ck_assert(fp);
    ck_assert(n == 0 || fwrite(b, 1, n, fp) == n);
    fclose(fp);
}

/* An .npy file: magic, version, header length, dict text padded to 64 with
 * '\n', then payload. */
static size_t make_npy(unsigned char *out, int major, const char *dict, const void *payload, size_t plen)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)(hl & 0xff);
    out[9] = (unsigned char)(hl >> 8);
    if (major != 1) { out[10] = 0; out[11] = 0; }
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', hl - dl - 1);
    out[total - 1] = '\n';
    if (plen) memcpy(out + total, payload, plen);
    return total + plen;
}

/* A .safetensors file from a JSON text and a data area. */
static size_t make_st(unsigned char *out, const char *json, const void *data, size_t dlen)
{
    uint64_t n = strlen(json);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(n >> (8 * i));
    memcpy(out + 8, json, n);
    if (dlen) memcpy(out + 8 + n, data, dlen);
    return 8 + n + dlen;
}

/* ---- valid .npy --------------------------------------------------------------- */
START_TEST(npy_versions_and_dtypes)
{
    static const int majors[] = { 1, 2, 3 };
    unsigned char buf[1024];
    char p[512];
    float f4[6] = { 1.5f, -2.0f, 0x1p-140f, 65520.0f, -0.0f, 3.0e38f };
    double f8[3] = { 0.1, -1e300, 0x1p-1074 };
    uint16_t f2[4] = { 0x3c00, 0x8001, 0x7bff, 0xfc00 };   /* 1, -2^-24, 65504, -inf */
    float f2want[4] = { 1.0f, -0x1p-24f, 65504.0f, -INFINITY };
    for (int k = 0; k < 3; k++) {
        path_of(p, sizeof p, "a.npy");
        size_t n = make_npy(buf, majors[k], "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f4, sizeof f4);
        write_bytes(p, buf, n);
        amp_tensor_file tf;
        ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
        ck_assert_int_eq(tf.n_tensors, 1);
        amp_tensor_view *v = &tf.tensors[0];
        ck_assert_int_eq(v->dtype, AMP_DT_F32);
        ck_assert_int_eq(v->ndim, 2);
        ck_assert(v->shape[0] == 2 && v->shape[1] == 3 && v->n == 6);
        ck_assert_str_eq(v->name, "a.npy");
        float got[6];
        amp_tensor_view_to_f32(v, 0, 6, got);
        ck_assert(memcmp(got, f4, sizeof f4) == 0);
        double g64[2];
        amp_tensor_view_to_f64(v, 4, 2, g64);
        ck_assert(g64[0] == 0 && signbit(g64[0]) && g64[1] == (double)3.0e38f);
        amp_tensor_file_close(&tf);
        amp_tensor_file_close(&tf);   /* twice is safe */

        path_of(p, sizeof p, "b.npy");
        n = make_npy(buf, majors[k], "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3,)}", f8, sizeof f8);
        write_bytes(p, buf, n);
        ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
        v = &tf.tensors[0];
        ck_assert(v->dtype == AMP_DT_F64 && v->ndim == 1 && v->n == 3);
        double d[3];
        amp_tensor_view_to_f64(v, 0, 3, d);
        ck_assert(memcmp(d, f8, sizeof d) == 0);
        amp_tensor_file_close(&tf);

        path_of(p, sizeof p, "c.npy");
        n = make_npy(buf, majors[k], "{'shape': (2,2), 'fortran_order': False, 'descr': '<f2'}", f2, sizeof f2);
        write_bytes(p, buf, n);
        ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
        v = &tf.tensors[0];
        ck_assert(v->dtype == AMP_DT_F16 && v->n == 4);
        float h[4];
        amp_tensor_view_to_f32(v, 0, 4, h);
        ck_assert(memcmp(h, f2want, sizeof h) == 0);
        amp_tensor_file_close(&tf);
    }
}
END_TEST

START_TEST(npy_edge_shapes)
{
    unsigned char buf[1024];
    char p[512];
    amp_tensor_file tf;
    float one = 7.0f, two[2] = { 1, 2 };
    path_of(p, sizeof p, "s.npy");   /* 0-d array: one element */
    write_bytes(p, buf, make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &one, 4));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].ndim == 0 && tf.tensors[0].n == 1);
    amp_tensor_file_close(&tf);
    path_of(p, sizeof p, "e.npy");   /* empty */
    write_bytes(p, buf, make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", NULL, 0));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].n == 0);
    amp_tensor_file_close(&tf);
    path_of(p, sizeof p, "f.NPY");   /* fortran order of a 1-D array: same bytes; '=' order; upper-case ext */
    write_bytes(p, buf, make_npy(buf, 1, "{'descr': '=f4', 'fortran_order': True, 'shape': (2,), }", two, 8));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].n == 2);
    amp_tensor_file_close(&tf);
    path_of(p, sizeof p, "l.npy");   /* Python 2 long suffix */
    write_bytes(p, buf, make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }", two, 8));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    amp_tensor_file_close(&tf);
}
END_TEST

/* ---- malformed .npy ------------------------------------------------------------ */
typedef struct bad_case {
    const char *what;      /* a word the message must contain */
    int major;
    const char *dict;      /* NULL: raw bytes below */
    size_t payload;        /* bytes of payload */
    const char *raw;
    size_t raw_len;
} bad_case;

static const bad_case bad_npy[] = {
    { "bad magic", 0, NULL, 0, "\x93NUMPX\x01\x00\x10\x00", 10 },
    { "truncated header", 0, NULL, 0, "\x93NUMP", 5 },
    { "truncated header", 0, NULL, 0, "\x93NUMPY\x01\x00\x40\x00{'descr'", 17 },
    { "truncated header", 0, NULL, 0, "\x93NUMPY\x02\x00\x01\x00", 10 },
    { "version 4.0", 0, NULL, 0, "\x93NUMPY\x04\x00\x00\x00", 10 },
    { "version 1.1", 0, NULL, 0, "\x93NUMPY\x01\x01\x00\x00", 10 },
    { "NUL", 0, NULL, 0, "\x93NUMPY\x01\x00\x02\x00{\0", 12 },
    { "missing key 'shape'", 1, "{'descr': '<f4', 'fortran_order': False}", 0, NULL, 0 },
    { "unexpected key 'x'", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, NULL, 0 },
    { "duplicate key 'descr'", 1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, NULL, 0 },
    { "big-endian dtype '>f4' not supported", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", 4, NULL, 0 },
    { "dtype '<i4' not supported", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)}", 4, NULL, 0 },
    { "dtype '|u1' not supported", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,)}", 1, NULL, 0 },
    { "dtype '<f16' not supported", 1, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,)}", 16, NULL, 0 },
    { "structured dtype", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4, NULL, 0 },
    { "fortran_order True not supported", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16, NULL, 0 },
    { "fortran_order must be", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4, NULL, 0 },
    { "shape must be a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", 4, NULL, 0 },
    { "bad shape tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", 4, NULL, 0 },
    { "bad shape entry", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 4, NULL, 0 },
    { "size overflow", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}", 0, NULL, 0 },
    { "size overflow", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 0, NULL, 0 },
    { "size overflow", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 0, NULL, 0 },
    { "more than 8 dimensions", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", 4, NULL, 0 },
    { "data truncated", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", 8, NULL, 0 },
    { "trailing bytes", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 8, NULL, 0 },
    { "bad character in a string", 1, "{'descr': '<f4", 0, NULL, 0 },
    { "unterminated string", 0, NULL, 0, "\x93NUMPY\x01\x00\x0b\x00{'descr': '", 21 },
    { "trailing characters", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4, NULL, 0 },
    { "expected '{'", 3, "['descr']", 0, NULL, 0 },
};

START_TEST(npy_malformed)
{
    const bad_case *c = &bad_npy[_i];
    unsigned char buf[1024] = { 0 };
    unsigned char zeros[64] = { 0 };
    char p[512];
    size_t n = c->dict ? make_npy(buf, c->major, c->dict, zeros, c->payload) : c->raw_len;
    if (!c->dict) memcpy(buf, c->raw, c->raw_len);
    path_of(p, sizeof p, "bad.npy");
    write_bytes(p, buf, n);
    amp_tensor_file tf;
    amp_status st = amp_tensor_file_open(p, &tf);
    ck_assert_msg(st == AMP_EFORMAT, "case '%s': status %d (%s)", c->what, (int)st, amp_errmsg());
    ck_assert_msg(!strncmp(amp_errmsg(), p, strlen(p)), "message does not name the file: %s", amp_errmsg());
    ck_assert_msg(strstr(amp_errmsg(), c->what), "case '%s': message '%s'", c->what, amp_errmsg());
    ck_assert(tf.tensors == NULL && tf.map == NULL);
    /* the in-memory parser says the same */
    amp_tensor_view v;
    ck_assert(amp_npy_parse("mem.npy", buf, n, &v) == AMP_EFORMAT);
    ck_assert(strstr(amp_errmsg(), c->what) && !strncmp(amp_errmsg(), "mem.npy: ", 9));
}
END_TEST

/* ---- valid .safetensors --------------------------------------------------------- */
START_TEST(st_valid)
{
    unsigned char buf[2048], data[64];
    char p[512];
    float a[4] = { 1, 2, 3, 4 };
    double b = 0.1;
    uint16_t bf[2] = { 0x3f80, 0xc000 }, h[3] = { 0x3c00, 0x0001, 0x7e00 };
    memcpy(data, &b, 8);                 /* "b" at 0..8 */
    memcpy(data + 8, a, 16);             /* "a.weight" at 8..24 */
    memcpy(data + 24, bf, 4);            /* "c" at 24..28 */
    memcpy(data + 28, h, 6);             /* "d" at 28..34 */
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]},"
                       "\"z\":{\"shape\":[0,3],\"dtype\":\"F32\",\"data_offsets\":[34,34]},"
                       "\"d\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[28,34]},"
                       "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[24,28]},"
                       "\"b\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}   ";
    path_of(p, sizeof p, "m.safetensors");
    write_bytes(p, buf, make_st(buf, json, data, 34));
    amp_tensor_file tf;
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert_int_eq(tf.n_tensors, 5);
    /* in data-offset order */
    ck_assert_str_eq(tf.tensors[0].name, "b");
    ck_assert_str_eq(tf.tensors[1].name, "a.weight");
    ck_assert_str_eq(tf.tensors[2].name, "c");
    ck_assert_str_eq(tf.tensors[3].name, "d");
    ck_assert_str_eq(tf.tensors[4].name, "z");
    double d;
    amp_tensor_view_to_f64(&tf.tensors[0], 0, 1, &d);
    ck_assert(d == 0.1 && tf.tensors[0].ndim == 0 && tf.tensors[0].n == 1);
    float f[4];
    amp_tensor_view_to_f32(&tf.tensors[1], 0, 4, f);
    ck_assert(memcmp(f, a, 16) == 0 && tf.tensors[1].shape[0] == 2 && tf.tensors[1].shape[1] == 2);
    amp_tensor_view_to_f32(&tf.tensors[2], 0, 2, f);
    ck_assert(f[0] == 1.0f && f[1] == -2.0f);
    amp_tensor_view_to_f32(&tf.tensors[3], 0, 3, f);
    ck_assert(f[0] == 1.0f && f[1] == 0x1p-24f && isnan(f[2]));
    ck_assert(tf.tensors[4].n == 0 && tf.tensors[4].ndim == 2);
    amp_tensor_file_close(&tf);

    path_of(p, sizeof p, "empty.safetensors");
    write_bytes(p, buf, make_st(buf, "{}", NULL, 0));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.n_tensors == 0);
    amp_tensor_file_close(&tf);
}
END_TEST

/* FP8 tensors decode exactly (OCP values: e4m3 0x38 = 1, 0x7e = 448, 0xfe = -448,
 * 0x01 = 2^-9, 0x7f = NaN; e5m2 0x3c = 1, 0x7b = 57344, 0x7c = inf, 0x01 = 2^-16);
 * integer and bool tensors are validated, skipped and named. */
START_TEST(st_fp8_and_skipped)
{
    unsigned char buf[2048], data[64] = { 0 };
    char p[512];
    const unsigned char e4[5] = { 0x38, 0x7e, 0xfe, 0x01, 0x7f }, e5[4] = { 0x3c, 0x7b, 0x7c, 0x01 };
    int64_t nbt = 42;
    memcpy(data, &nbt, 8);               /* "bn.num_batches_tracked" I64 at 0..8 */
    memcpy(data + 8, e4, 5);             /* "q" F8_E4M3 at 8..13 */
    memcpy(data + 13, e5, 4);            /* "r" F8_E5M2 at 13..17 */
    data[17] = 1;                        /* "mask" BOOL at 17..18 */
    const char *json = "{\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                       "\"q\":{\"dtype\":\"F8_E4M3\",\"shape\":[5],\"data_offsets\":[8,13]},"
                       "\"r\":{\"dtype\":\"F8_E5M2\",\"shape\":[4],\"data_offsets\":[13,17]},"
                       "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[17,18]}}";
    path_of(p, sizeof p, "fp8.safetensors");
    write_bytes(p, buf, make_st(buf, json, data, 18));
    amp_tensor_file tf;
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert_int_eq(tf.n_tensors, 2);
    ck_assert_int_eq(tf.n_skipped, 2);
    ck_assert_str_eq(tf.skipped, "bn.num_batches_tracked (I64)");
    ck_assert_str_eq(tf.tensors[0].name, "q");
    ck_assert_str_eq(tf.tensors[1].name, "r");
    float f[5];
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 5, f);
    ck_assert(f[0] == 1.0f && f[1] == 448.0f && f[2] == -448.0f && f[3] == 0x1p-9f && isnan(f[4]));
    amp_tensor_view_to_f32(&tf.tensors[1], 0, 4, f);
    ck_assert(f[0] == 1.0f && f[1] == 57344.0f && isinf(f[2]) && f[2] > 0 && f[3] == 0x1p-16f);
    amp_tensor_file_close(&tf);
    /* a skipped tensor still counts in the layout checks: a wrong byte count is an error */
    const char *bad = "{\"n\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    write_bytes(p, buf, make_st(buf, bad, data, 8));
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EFORMAT && strstr(amp_errmsg(), "byte range"));
    const char *unk = "{\"n\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    write_bytes(p, buf, make_st(buf, unk, data, 8));
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EFORMAT && strstr(amp_errmsg(), "C64"));
}
END_TEST

typedef struct bad_st {
    const char *what;
    const char *json;       /* NULL: raw bytes */
    size_t dlen;            /* data bytes after the header */
    const char *raw;
    size_t raw_len;
} bad_st;

#define T1(dt, shape, offs) "{\"t\":{\"dtype\":" dt ",\"shape\":" shape ",\"data_offsets\":" offs "}}"
static const bad_st bad_sts[] = {
    { "truncated header", NULL, 0, "\x02\0\0\0\0\0", 6 },
    { "truncated header", NULL, 0, "\x40\0\0\0\0\0\0\0{}", 10 },
    { "larger than", NULL, 0, "\0\0\0\0\0\1\0\0{}", 10 },
    { "larger than", NULL, 0, "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10 },
    { "header too short", NULL, 0, "\0\0\0\0\0\0\0\0", 8 },
    { "NUL byte", NULL, 0, "\x03\0\0\0\0\0\0\0{\0}", 11 },
    { "malformed JSON", "{\"t\":", 0, NULL, 0 },
    { "does not start with '{'", "[1,2]", 0, NULL, 0 },
    { "trailing characters", "{} x", 0, NULL, 0 },
    { "dtype C64 not supported", T1("\"C64\"", "[1]", "[0,8]"), 8, NULL, 0 },
    { "dtype F8_E8M0 not supported", T1("\"F8_E8M0\"", "[1]", "[0,1]"), 1, NULL, 0 },
    { "dtype is not a string", T1("4", "[1]", "[0,4]"), 4, NULL, 0 },
    { "missing 'dtype'", "{\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, 0 },
    { "missing 'data_offsets'", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, NULL, 0 },
    { "unexpected key 'x'", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, NULL, 0 },
    { "duplicate key 'dtype'", "{\"t\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, 0 },
    { "entry is not an object", "{\"t\":[1]}", 0, NULL, 0 },
    { "shape is not an array", T1("\"F32\"", "1", "[0,4]"), 4, NULL, 0 },
    { "bad shape entry", T1("\"F32\"", "[-1]", "[0,4]"), 4, NULL, 0 },
    { "bad shape entry", T1("\"F32\"", "[1.5]", "[0,4]"), 4, NULL, 0 },
    { "bad shape entry", T1("\"F32\"", "[\"1\"]", "[0,4]"), 4, NULL, 0 },
    { "bad shape entry", T1("\"F32\"", "[1e300]", "[0,4]"), 4, NULL, 0 },
    { "size overflow", T1("\"F32\"", "[4294967296,4294967296]", "[0,4]"), 4, NULL, 0 },
    { "size overflow", T1("\"F64\"", "[4503599627370496,4096]", "[0,4]"), 4, NULL, 0 },
    { "more than 8 dimensions", T1("\"F32\"", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), 4, NULL, 0 },
    { "data_offsets must be", T1("\"F32\"", "[1]", "[0]"), 4, NULL, 0 },
    { "data_offsets must be", T1("\"F32\"", "[1]", "[0,-4]"), 4, NULL, 0 },
    { "end 0 before begin 4", T1("\"F32\"", "[1]", "[4,0]"), 4, NULL, 0 },
    { "offset 8 past end", T1("\"F32\"", "[2]", "[0,8]"), 4, NULL, 0 },
    { "data_offsets must be", T1("\"F32\"", "[1]", "[0,18446744073709551615]"), 4, NULL, 0 },
    { "offset 4096 past end", T1("\"F32\"", "[1024]", "[0,4096]"), 4, NULL, 0 },
    { "does not match shape", T1("\"F32\"", "[2]", "[0,4]"), 4, NULL, 0 },
    { "overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0 },
    { "gap of 4 bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0 },
    { "4 trailing bytes", T1("\"F32\"", "[1]", "[0,4]"), 8, NULL, 0 },
    { "duplicate tensor name 't'", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                  "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0 },
    { "__metadata__ must be", "{\"__metadata__\":{\"a\":1}}", 0, NULL, 0 },
    { "__metadata__ must be", "{\"__metadata__\":[]}", 0, NULL, 0 },
    { "empty tensor name", "{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, 0 },
    { "malformed JSON", NULL, 0, "\x02\0\0\0\0\0\0\0{]", 10 },
};

START_TEST(st_malformed)
{
    const bad_st *c = &bad_sts[_i];
    static unsigned char buf[4096];
    unsigned char zeros[64] = { 0 };
    char p[512];
    size_t n;
    if (c->json) n = make_st(buf, c->json, zeros, c->dlen);
    else { memcpy(buf, c->raw, c->raw_len); n = c->raw_len; }
    path_of(p, sizeof p, "bad.safetensors");
    write_bytes(p, buf, n);
    amp_tensor_file tf;
    amp_status st = amp_tensor_file_open(p, &tf);
    ck_assert_msg(st == AMP_EFORMAT, "case '%s': status %d (%s)", c->what, (int)st, amp_errmsg());
    ck_assert_msg(!strncmp(amp_errmsg(), p, strlen(p)), "message does not name the file: %s", amp_errmsg());
    ck_assert_msg(strstr(amp_errmsg(), c->what), "case '%s': message '%s'", c->what, amp_errmsg());
    ck_assert(tf.tensors == NULL && tf.map == NULL && tf.n_tensors == 0);
}
END_TEST

START_TEST(st_long_name)
{
    static unsigned char buf[4096];
    static char json[1024];
    char name[300], p[512];
    memset(name, 'x', 256);
    name[256] = 0;
    snprintf(json, sizeof json, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    unsigned char z[4] = { 0 };
    path_of(p, sizeof p, "long.safetensors");
    write_bytes(p, buf, make_st(buf, json, z, 4));
    amp_tensor_file tf;
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EFORMAT);
    ck_assert(strstr(amp_errmsg(), "tensor name longer than 255"));
    name[255] = 0;   /* 255 bytes is fine */
    snprintf(json, sizeof json, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    write_bytes(p, buf, make_st(buf, json, z, 4));
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert_str_eq(tf.tensors[0].name, name);
    amp_tensor_file_close(&tf);
}
END_TEST

/* ---- raw files, kinds, system errors ------------------------------------------- */
START_TEST(raw_and_kinds)
{
    char p[512];
    double d[3] = { 1, -2, 0.5 };
    amp_tensor_file tf;
    path_of(p, sizeof p, "x.f64");
    write_bytes(p, d, sizeof d);
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].dtype == AMP_DT_F64 && tf.tensors[0].n == 3 && tf.tensors[0].ndim == 1);
    ck_assert_str_eq(tf.tensors[0].name, "x.f64");
    amp_tensor_file_close(&tf);
    path_of(p, sizeof p, "x.f32");
    write_bytes(p, d, 10);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EFORMAT);
    ck_assert(strstr(amp_errmsg(), "not a multiple of 4") && !strncmp(amp_errmsg(), p, strlen(p)));
    path_of(p, sizeof p, "empty.f32");
    write_bytes(p, d, 0);
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].n == 0);
    amp_tensor_file_close(&tf);
    path_of(p, sizeof p, "empty.npy");
    write_bytes(p, d, 0);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EFORMAT && strstr(amp_errmsg(), "truncated header"));
    path_of(p, sizeof p, "x.txt");
    write_bytes(p, d, 8);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EINVAL && strstr(amp_errmsg(), "unknown tensor file type"));
    path_of(p, sizeof p, "missing.npy");
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EIO && strstr(amp_errmsg(), "cannot open"));
    ck_assert(!strncmp(amp_errmsg(), p, strlen(p)));
    path_of(p, sizeof p, "dir.npy");
    ck_assert(mkdir(p, 0700) == 0);
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_EIO && strstr(amp_errmsg(), "not a regular file"));
    rmdir(p);
}
END_TEST

/* ---- widening: all 65536 patterns against amp_decode1 -------------------------- */
START_TEST(widen_all_patterns)
{
    static uint16_t pat[65536];
    static float got[65536];
    for (uint32_t i = 0; i < 65536; i++) pat[i] = (uint16_t)i;
    amp_tensor_view v = { .dtype = AMP_DT_F16, .ndim = 1, .n = 65536, .data = pat };
    const amp_format *fp16 = amp_format_get(AMP_FMT_FP16), *bf16 = amp_format_get(AMP_FMT_BF16);
    amp_tensor_view_to_f32(&v, 0, 65536, got);
    for (uint32_t i = 0; i < 65536; i++) {
        float w = amp_decode1(fp16, i);
        int ok = isnan(w) ? isnan(got[i]) && (amp_f2u(got[i]) >> 31) == (i >> 15)
                          : amp_f2u(w) == amp_f2u(got[i]);
        ck_assert_msg(ok, "f16 0x%04x: expected %a got %a", i, (double)w, (double)got[i]);
    }
    v.dtype = AMP_DT_BF16;
    amp_tensor_view_to_f32(&v, 0, 65536, got);
    for (uint32_t i = 0; i < 65536; i++) {
        float w = amp_decode1(bf16, i);
        int ok = isnan(w) ? isnan(got[i]) : amp_f2u(w) == amp_f2u(got[i]);
        ck_assert_msg(ok, "bf16 0x%04x: expected %a got %a", i, (double)w, (double)got[i]);
        ck_assert(amp_f2u(got[i]) == i << 16);   /* bit-exact, payloads too */
    }
    /* unaligned views read the same values */
    static unsigned char raw[8 * 5 + 1];
    double d[5] = { 1, 2, 3, 4, 5 }, e[5];
    memcpy(raw + 1, d, sizeof d);
    amp_tensor_view u = { .dtype = AMP_DT_F64, .ndim = 1, .n = 5, .data = raw + 1 };
    amp_tensor_view_to_f64(&u, 1, 4, e);
    ck_assert(e[0] == 2 && e[3] == 5);
}
END_TEST

/* ---- writers ---------------------------------------------------------------- */
START_TEST(npy_writers)
{
    char p[512];
    float x[6] = { 1, -2, 3.5f, 0x1p-149f, INFINITY, -0.0f };
    size_t shape[2] = { 2, 3 };
    amp_tensor_file tf;
    path_of(p, sizeof p, "w.npy");
    ck_assert_msg(amp_npy_write_f32(p, x, 2, shape) == AMP_OK, "%s", amp_errmsg());
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert(tf.tensors[0].dtype == AMP_DT_F32 && tf.tensors[0].ndim == 2 && tf.tensors[0].shape[1] == 3);
    ck_assert((size_t)((const char *)tf.tensors[0].data - (const char *)tf.map) % 64 == 0);
    float y[6];
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 6, y);
    ck_assert(memcmp(x, y, sizeof x) == 0);
    amp_tensor_file_close(&tf);
    ck_assert_msg(amp_npy_write_f32(p, x, 0, shape) == AMP_OK, "%s", amp_errmsg());   /* 0-d */
    ck_assert(amp_tensor_file_open(p, &tf) == AMP_OK && tf.tensors[0].ndim == 0 && tf.tensors[0].n == 1);
    amp_tensor_file_close(&tf);

    /* u8/u16: the reader refuses integer dtypes, so check the bytes */
    uint8_t b[3] = { 0, 0x7f, 0xff };
    uint16_t w[3] = { 1, 0x8000, 0xffff };
    size_t s3 = 3;
    char *data;
    size_t len;
    path_of(p, sizeof p, "u8.npy");
    ck_assert(amp_npy_write_u8(p, b, 1, &s3) == AMP_OK);
    ck_assert(amp_read_file(p, 1 << 20, &data, &len) == AMP_OK);
    ck_assert(len == 128 + 3 && !memcmp(data, "\x93NUMPY\x01\x00\x76\x00", 10) && data[127] == '\n');
    ck_assert(strstr(data + 10, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }") == data + 10);
    ck_assert(!memcmp(data + 128, b, 3));
    free(data);
    path_of(p, sizeof p, "u16.npy");
    ck_assert(amp_npy_write_u16(p, w, 1, &s3) == AMP_OK);
    ck_assert(amp_read_file(p, 1 << 20, &data, &len) == AMP_OK);
    ck_assert(len == 128 + 6 && strstr(data + 10, "'<u2'") && !memcmp(data + 128, w, 6));
    free(data);

    /* nothing left behind when the folder does not exist */
    int before = count_files();
    path_of(p, sizeof p, "nodir/w.npy");
    ck_assert(amp_npy_write_f32(p, x, 2, shape) == AMP_EIO);
    ck_assert(strstr(amp_errmsg(), "nodir/w.npy"));
    ck_assert_int_eq(count_files(), before);
}
END_TEST

START_TEST(npy_header_v2)
{
    /* a header too long for v1 is impossible with <= 8 dims; check the bound
     * logic through the declared limit instead: a small cap is AMP_ERANGE */
    char buf[32];
    size_t len, shape[1] = { 3 };
    ck_assert(amp_npy_header("<f4", 1, shape, buf, sizeof buf, &len) == AMP_ERANGE);
    char big[256];
    ck_assert(amp_npy_header("<f4", 1, shape, big, sizeof big, &len) == AMP_OK && len == 128);
    ck_assert(amp_npy_header("<f4", 9, shape, big, sizeof big, &len) == AMP_EINVAL);
}
END_TEST

START_TEST(safetensors_writer)
{
    char p[512];
    float a[6] = { 1, 2, 3, 4, 5, 6 }, b[1] = { -7 };
    amp_st_entry e[3] = {
        { .name = "fc1.weight", .ndim = 2, .shape = { 2, 3 }, .data = a },
        { .name = "fc1.bias", .ndim = 1, .shape = { 1 }, .data = b },
        { .name = "empty", .ndim = 1, .shape = { 0 }, .data = NULL },
    };
    path_of(p, sizeof p, "w.safetensors");
    ck_assert_msg(amp_safetensors_write_f32(p, e, 3) == AMP_OK, "%s", amp_errmsg());
    char *data;
    size_t len;
    ck_assert(amp_read_file(p, 1 << 20, &data, &len) == AMP_OK);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | (unsigned char)data[i];
    ck_assert(hl % 8 == 0 && len == 8 + hl + 28);
    free(data);
    amp_tensor_file tf;
    ck_assert_msg(amp_tensor_file_open(p, &tf) == AMP_OK, "%s", amp_errmsg());
    ck_assert_int_eq(tf.n_tensors, 3);
    ck_assert_str_eq(tf.tensors[0].name, "fc1.weight");
    ck_assert_str_eq(tf.tensors[1].name, "fc1.bias");
    ck_assert_str_eq(tf.tensors[2].name, "empty");
    float y[6];
    amp_tensor_view_to_f32(&tf.tensors[0], 0, 6, y);
    ck_assert(!memcmp(y, a, sizeof a) && tf.tensors[0].shape[0] == 2 && tf.tensors[0].shape[1] == 3);
    amp_tensor_view_to_f32(&tf.tensors[1], 0, 1, y);
    ck_assert(y[0] == -7);
    amp_tensor_file_close(&tf);
    int before = count_files();
    amp_st_entry dup[2] = { e[1], e[1] };
    ck_assert(amp_safetensors_write_f32(p, dup, 2) == AMP_EINVAL && strstr(amp_errmsg(), "duplicate"));
    amp_st_entry bad = { .name = "", .ndim = 1, .shape = { 1 }, .data = b };
    ck_assert(amp_safetensors_write_f32(p, &bad, 1) == AMP_EINVAL);
    ck_assert_int_eq(count_files(), before);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tensorio");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, npy_versions_and_dtypes);
    tcase_add_test(t, npy_edge_shapes);
    tcase_add_loop_test(t, npy_malformed, 0, (int)(sizeof bad_npy / sizeof bad_npy[0]));
    tcase_add_test(t, st_valid);
    tcase_add_loop_test(t, st_malformed, 0, (int)(sizeof bad_sts / sizeof bad_sts[0]));
    tcase_add_test(t, st_long_name);
    tcase_add_test(t, raw_and_kinds);
    tcase_add_test(t, widen_all_patterns);
    tcase_add_test(t, npy_writers);
    tcase_add_test(t, npy_header_v2);
    tcase_add_test(t, safetensors_writer);
    tcase_add_test(t, st_fp8_and_skipped);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
