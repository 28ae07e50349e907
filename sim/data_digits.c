/* The digits data set (datasets/digits.csv.gz, 1797 rows of 64 pixels 0..16
 * and a label 0..9, no header) and its batches by step. */
#include "amp_base.h"
#include "amp_data.h"
#include "amp_io.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DIGITS_D 64

void amp_digits_free(amp_digits *d)
{
    free(d->x);
    free(d->y);
    free(d->bx);
    free(d->by);
    free(d->perm);
    memset(d, 0, sizeof *d);
}

/* Parses one line of 65 integers into row r. */
static amp_status parse_row(amp_digits *d, const char *path, long line, char *s, int r)
{
    int k = 0;
    while (1) {
        while (*s == ' ' || *s == '\t') s++;
        if (!isdigit((unsigned char)*s) && *s != '-' && *s != '+')
            return amp_fail(AMP_EINVAL, "%s:%ld: field %d is not an integer", path, line, k + 1);
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno) return amp_fail(AMP_EINVAL, "%s:%ld: field %d is not an integer", path, line, k + 1);
        s = end;
        while (*s == ' ' || *s == '\t') s++;
        if (k >= DIGITS_D + 1) return amp_fail(AMP_EINVAL, "%s:%ld: more than 65 fields", path, line);
        if (k < DIGITS_D) {
            if (v < 0 || v > 16) return amp_fail(AMP_EINVAL, "%s:%ld: pixel %d is %ld, not 0..16", path, line, k + 1, v);
            d->x[(size_t)r * DIGITS_D + k] = (float)v / 16.0f;
        } else {
            if (v < 0 || v > 9) return amp_fail(AMP_EINVAL, "%s:%ld: label is %ld, not 0..9", path, line, v);
            d->y[r] = (int32_t)v;
        }
        k++;
        if (*s == ',') { s++; continue; }
        if (*s == 0 || *s == '\n' || *s == '\r') break;
        return amp_fail(AMP_EINVAL, "%s:%ld: field %d is not an integer", path, line, k);
    }
    if (k != DIGITS_D + 1) return amp_fail(AMP_EINVAL, "%s:%ld: %d fields, expected 65", path, line, k);
    return AMP_OK;
}

amp_status amp_digits_load(const char *path, amp_digits *d)
{
    memset(d, 0, sizeof *d);
    d->D = DIGITS_D;
    d->C = 10;
    snprintf(d->path, sizeof d->path, "%s", path);
    amp_status s = amp_sha256_file(path, d->sha256);
    if (s) return s;
    gzFile gz = gzopen(path, "rb");
    if (!gz) return amp_fail(AMP_EINVAL, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    int cap = 2048;
    d->x = malloc((size_t)cap * DIGITS_D * sizeof(float));
    d->y = malloc((size_t)cap * sizeof(int32_t));
    char line[4096];
    long lineno = 0;
    s = (d->x && d->y) ? AMP_OK : amp_fail(AMP_ENOMEM, "out of memory reading %s", path);
    while (!s && gzgets(gz, line, sizeof line)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') { s = amp_fail(AMP_EINVAL, "%s:%ld: line too long", path, lineno); break; }
        if (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n')) continue;
        if (d->N == cap) {
            cap *= 2;
            float *nx = realloc(d->x, (size_t)cap * DIGITS_D * sizeof(float));
            if (nx) d->x = nx;
            int32_t *ny = realloc(d->y, (size_t)cap * sizeof(int32_t));
            if (ny) d->y = ny;
            if (!nx || !ny || cap > (1 << 24)) { s = amp_fail(AMP_ENOMEM, "%s: too many rows", path); break; }
        }
        s = parse_row(d, path, lineno, line, d->N);
        if (!s) d->N++;
    }
    int err;
    const char *zmsg = gzerror(gz, &err);
    if (!s && err != Z_OK && err != Z_STREAM_END) s = amp_fail(AMP_EINVAL, "%s: %s", path, zmsg);
    gzclose(gz);
    if (!s && d->N == 0) s = amp_fail(AMP_EINVAL, "%s: no rows", path);
    if (s) amp_digits_free(d);
    return s;
}

amp_status amp_digits_batch(amp_digits *d, int64_t step, int B, int shuffle, uint64_t seed, amp_batch *out)
{
    if (d->bx && B != d->B) return amp_fail(AMP_EINVAL, "digits: batch size changed from %d to %d", d->B, B);
    const int D = d->D;
    if (!d->bx) {
        d->B = B;
        d->bx = malloc((size_t)B * (size_t)D * sizeof(float));
        d->by = malloc((size_t)B * sizeof(int32_t));
        d->perm = malloc((size_t)d->N * sizeof(int));
        d->perm_epoch = -1;
        if (!d->bx || !d->by || !d->perm) return amp_fail(AMP_ENOMEM, "out of memory for a batch");
    }
    for (int j = 0; j < B; j++) {
        int64_t pos = (int64_t)B * step + j;
        int64_t row = pos % d->N;
        if (shuffle) {
            int64_t epoch = pos / d->N;
            if (epoch != d->perm_epoch) {
                /* Fisher-Yates from the counter-based generator keyed by (seed, epoch) */
                for (int i = 0; i < d->N; i++) d->perm[i] = i;
                for (int i = d->N - 1; i > 0; i--) {
                    int k = (int)(amp_rand64(seed, 0x6461746100000000ull ^ (uint64_t)epoch, (uint64_t)i) % (uint64_t)(i + 1));
                    int t = d->perm[i]; d->perm[i] = d->perm[k]; d->perm[k] = t;
                }
                d->perm_epoch = epoch;
            }
            row = d->perm[row];
        }
        memcpy(d->bx + (size_t)j * D, d->x + (size_t)row * D, (size_t)D * sizeof(float));
        d->by[j] = d->y[row];
    }
    out->B = B;
    out->D = D;
    out->x = d->bx;
    out->tok = NULL;
    out->y = d->by;
    return AMP_OK;
}
