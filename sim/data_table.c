/* Your own data for the MLP: a CSV (plain or .gz) or a pair of .npy files,
 * float features of any width and integer class labels of any count, read
 * into the same amp_digits structure the digits set uses (batches are
 * amp_digits_batch's). */
#include "amp_base.h"
#include "amp_data.h"
#include "amp_io.h"
#include "amp_tensorio.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define TABLE_MAX_CLASSES (1 << 20)
#define TABLE_MAX_D (1 << 20)

/* Splits a CSV line in place at commas (no quoting: numbers and plain
 * names); returns the number of fields (at most max), -1 if more. */
static int split(char *s, char **f, int max)
{
    int n = 0;
    s[strcspn(s, "\r\n")] = 0;
    for (;;) {
        if (n == max) return -1;
        while (*s == ' ' || *s == '\t') s++;
        f[n++] = s;
        char *c = strchr(s, ',');
        char *e = c ? c : s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if (!c) { *e = 0; return n; }
        *e = 0;
        s = c + 1;
    }
}

static int is_number(const char *s)
{
    char *e;
    if (!*s) return 0;
    strtod(s, &e);
    return !*e;
}

static int is_label_name(const char *s)
{
    static const char *const names[] = { "label", "labels", "y", "target", "class" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(s, names[i])) return 1;
    return 0;
}

static amp_status label_of(const char *path, long line, double v, int32_t *out)
{
    if (!(v >= 0) || v != floor(v) || v >= TABLE_MAX_CLASSES)
        return amp_fail(AMP_EINVAL, "%s:%ld: label %g is not a class number 0..%d", path, line, v, TABLE_MAX_CLASSES - 1);
    *out = (int32_t)v;
    return AMP_OK;
}

/* Grows x and y to hold row r (D features). */
static amp_status grow(amp_digits *d, int r, int *cap, const char *path)
{
    if (r < *cap) return AMP_OK;
    int nc = *cap ? *cap * 2 : 1024;
    if ((size_t)nc * (size_t)d->D > ((size_t)1 << 31)) return amp_fail(AMP_ERANGE, "%s: too many values", path);
    float *nx = realloc(d->x, (size_t)nc * (size_t)d->D * sizeof *nx);
    if (nx) d->x = nx;
    int32_t *ny = realloc(d->y, (size_t)nc * sizeof *ny);
    if (ny) d->y = ny;
    if (!nx || !ny) return amp_fail(AMP_ENOMEM, "out of memory reading %s", path);
    *cap = nc;
    return AMP_OK;
}

/* One CSV row into row d->N: D features (finite numbers) and the label. */
static amp_status csv_row(amp_digits *d, const char *path, long line, char **f, int nf, int lab)
{
    if (nf != d->D + 1) return amp_fail(AMP_EINVAL, "%s:%ld: %d fields, expected %d", path, line, nf, d->D + 1);
    float *x = d->x + (size_t)d->N * (size_t)d->D;
    for (int k = 0, j = 0; k < nf; k++) {
        char *e;
        double v = strtod(f[k], &e);
        if (!*f[k] || *e) return amp_fail(AMP_EINVAL, "%s:%ld: field %d ('%.40s') is not a number", path, line, k + 1, f[k]);
        if (!isfinite(v) || !isfinite((float)v))
            return amp_fail(AMP_EINVAL, "%s:%ld: field %d is %s", path, line, k + 1, f[k]);
        if (k == lab) {
            amp_status s = label_of(path, line, v, &d->y[d->N]);
            if (s) return s;
        } else {
            x[j++] = (float)v;
        }
    }
    return AMP_OK;
}

static amp_status load_csv(const char *path, amp_digits *d)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz) return amp_fail(AMP_EIO, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    size_t cap_line = (size_t)1 << 20;
    char *buf = malloc(cap_line);
    char **f = malloc((TABLE_MAX_D + 1) * sizeof *f);
    amp_status s = buf && f ? AMP_OK : amp_fail(AMP_ENOMEM, "out of memory reading %s", path);
    long line = 0;
    int lab = -1, cap = 0;
    while (!s && gzgets(gz, buf, (int)cap_line)) {
        line++;
        size_t len = strlen(buf);
        if (len == cap_line - 1 && buf[len - 1] != '\n') { s = amp_fail(AMP_EINVAL, "%s:%ld: line too long", path, line); break; }
        if (buf[strspn(buf, " \t\r\n")] == 0) continue;
        int nf = split(buf, f, TABLE_MAX_D + 1);
        if (nf < 0) { s = amp_fail(AMP_EINVAL, "%s:%ld: more than %d fields", path, line, TABLE_MAX_D + 1); break; }
        if (lab < 0) {                       /* the first line: a header, or the first row */
            if (nf < 2) { s = amp_fail(AMP_EINVAL, "%s:%ld: %d field: need features and a label", path, line, nf); break; }
            d->D = nf - 1;
            lab = nf - 1;
            int header = 0;
            for (int k = 0; k < nf; k++) header |= !is_number(f[k]);
            if (header) {
                for (int k = 0; k < nf; k++)
                    if (is_label_name(f[k])) { lab = k; break; }
                continue;
            }
        }
        if ((s = grow(d, d->N, &cap, path))) break;
        if (!(s = csv_row(d, path, line, f, nf, lab))) d->N++;
    }
    int err;
    const char *zmsg = gzerror(gz, &err);
    if (!s && err != Z_OK && err != Z_STREAM_END) s = amp_fail(AMP_EIO, "%s: %s", path, zmsg);
    gzclose(gz);
    free(buf);
    free(f);
    if (!s && d->N == 0) s = amp_fail(AMP_EINVAL, "%s: no data rows", path);
    return s;
}

/* The integer labels of a .npy file (|u1, <i2, <i4, <i8, <u2, <u4, <u8, or
 * whole-valued floats), one per row: shape (N,) or (N, 1). */
static amp_status npy_labels(const char *path, int N, int32_t *y)
{
    char *buf;
    size_t len;
    amp_status s = amp_read_file(path, (size_t)1 << 34, &buf, &len);
    if (s) return s;
    const unsigned char *u = (const unsigned char *)buf;
    if (len < 12 || memcmp(u, "\x93NUMPY", 6)) { free(buf); return amp_fail(AMP_EFORMAT, "%s: not a .npy file", path); }
    size_t hl = u[6] == 1 ? (size_t)u[8] | (size_t)u[9] << 8 : (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24;
    size_t off = (u[6] == 1 ? 10 : 12) + hl;
    char hdr[512];
    snprintf(hdr, sizeof hdr, "%.*s", (int)(hl < 500 ? hl : 500), buf + (u[6] == 1 ? 10 : 12));
    const char *dq = strstr(hdr, "'descr'");
    char descr[8] = "";
    if (dq) sscanf(dq, "'descr': '%7[^']'", descr);
    int isz = !strcmp(descr, "|u1") || !strcmp(descr, "|i1") ? 1 : !strcmp(descr, "<i2") || !strcmp(descr, "<u2") ? 2
            : !strcmp(descr, "<i4") || !strcmp(descr, "<u4") ? 4 : !strcmp(descr, "<i8") || !strcmp(descr, "<u8") ? 8 : 0;
    if (!isz) {   /* floats go through the tensor reader */
        free(buf);
        amp_tensor_file tf;
        if ((s = amp_tensor_file_open(path, &tf))) return s;
        const amp_tensor_view *v = &tf.tensors[0];
        if (v->n != (size_t)N) s = amp_fail(AMP_EINVAL, "%s: %zu labels for %d rows", path, v->n, N);
        for (int i = 0; i < N && !s; i++) {
            double t;
            amp_tensor_view_to_f64(v, (size_t)i, 1, &t);
            s = label_of(path, i + 1, t, &y[i]);   /* "line" = the row number */
        }
        amp_tensor_file_close(&tf);
        return s;
    }
    if (strstr(hdr, "'fortran_order': True")) s = amp_fail(AMP_EFORMAT, "%s: Fortran order is not supported", path);
    else if (off + (size_t)N * (size_t)isz != len)
        s = amp_fail(AMP_EINVAL, "%s: %zu labels for %d rows", path, off < len ? (len - off) / (size_t)isz : 0, N);
    for (int i = 0; i < N && !s; i++) {
        const unsigned char *p = u + off + (size_t)i * (size_t)isz;
        uint64_t w = 0;
        for (int b = 0; b < isz; b++) w |= (uint64_t)p[b] << (8 * b);
        int sgn = descr[1] == 'i';
        double v = sgn ? (double)(int64_t)(w << (64 - 8 * isz)) / ldexp(1, 64 - 8 * isz) : (double)w;
        s = label_of(path, i + 1, v, &y[i]);
    }
    free(buf);
    return s;
}

static amp_status load_npy_pair(const char *xp, const char *yp, amp_digits *d)
{
    amp_tensor_file tf;
    amp_status s = amp_tensor_file_open(xp, &tf);
    if (s) return s;
    const amp_tensor_view *v = &tf.tensors[0];
    if (v->ndim != 2 || v->shape[0] < 1 || v->shape[1] < 1 || v->shape[0] > (1u << 30) || v->shape[1] > TABLE_MAX_D)
        s = amp_fail(AMP_EINVAL, "%s: features must be a 2-d array (rows, features), not %d-d", xp, v->ndim);
    if (!s) {
        d->N = (int)v->shape[0];
        d->D = (int)v->shape[1];
        d->x = malloc(v->n * sizeof *d->x);
        d->y = malloc((size_t)d->N * sizeof *d->y);
        if (!d->x || !d->y) s = amp_fail(AMP_ENOMEM, "out of memory reading %s", xp);
    }
    if (!s && v->dtype == AMP_DT_F64) {
        for (size_t i = 0; i < v->n && !s; i++) {
            double t;
            amp_tensor_view_to_f64(v, i, 1, &t);
            d->x[i] = (float)t;
        }
    } else if (!s) amp_tensor_view_to_f32(v, 0, v->n, d->x);
    for (size_t i = 0; !s && i < v->n; i++)
        if (!isfinite(d->x[i]))
            s = amp_fail(AMP_EINVAL, "%s: row %zu, feature %zu is not finite (or overflows float32)", xp, i / (size_t)d->D + 1,
                         i % (size_t)d->D + 1);
    amp_tensor_file_close(&tf);
    if (!s) s = npy_labels(yp, d->N, d->y);
    return s;
}

static int ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && !strncasecmp(s + n - k, suf, k);
}

amp_status amp_table_load(const char *spec, amp_digits *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", spec);
    const char *comma = strchr(spec, ',');
    amp_status s;
    if (comma) {
        char xp[4096];
        size_t n = (size_t)(comma - spec);
        if (n >= sizeof xp || !ends_with(spec, n, ".npy") || !ends_with(comma + 1, strlen(comma + 1), ".npy"))
            return amp_fail(AMP_EINVAL, "--data %s: expected FEATURES.npy,LABELS.npy", spec);
        memcpy(xp, spec, n);
        xp[n] = 0;
        s = amp_sha256_file(xp, d->sha256);
        if (!s) s = load_npy_pair(xp, comma + 1, d);
    } else if (ends_with(spec, strlen(spec), ".npy")) {
        return amp_fail(AMP_EINVAL, "--data %s: a .npy file holds features only: give FEATURES.npy,LABELS.npy", spec);
    } else {
        s = amp_sha256_file(spec, d->sha256);
        if (!s) s = load_csv(spec, d);
    }
    for (int i = 0; !s && i < d->N; i++)
        if (d->y[i] + 1 > d->C) d->C = d->y[i] + 1;
    if (!s && d->C < 2) s = amp_fail(AMP_EINVAL, "%s: every label is 0: need at least two classes", spec);
    if (s) amp_digits_free(d);
    return s;
}
