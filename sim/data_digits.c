/* The digits data set (datasets/digits.csv.gz, 1797 rows of 64 pixels 0..16
 * and a label 0..9, no header), batches by step, and file helpers (locating
 * data files, SHA-256). */
#include "ampsim.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DIGITS_D 64

amp_status amp_data_find(const char *file, char *out, size_t len)
{
    char cand[4096];
    const char *env;
    if ((env = getenv("AMP_DATADIR")) && *env) {
        snprintf(cand, sizeof cand, "%s/%s", env, file);
        if (!access(cand, R_OK)) goto found;
    }
    if ((env = getenv("AMP_SRCDIR")) && *env) {
        snprintf(cand, sizeof cand, "%s/datasets/%s", env, file);
        if (!access(cand, R_OK)) goto found;
    }
    snprintf(cand, sizeof cand, "datasets/%s", file);
    if (!access(cand, R_OK)) goto found;
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(cand, sizeof cand, "%s/../datasets/%s", exe, file);
            if (!access(cand, R_OK)) goto found;
            snprintf(cand, sizeof cand, "%s/../share/ampsim/datasets/%s", exe, file);
            if (!access(cand, R_OK)) goto found;
        }
    }
    return amp_fail(AMP_EINVAL, "dataset %s not found (set AMP_DATADIR or pass --data PATH)", file);
found:
    snprintf(out, len, "%s", cand);
    return AMP_OK;
}

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
    if (!d->bx) {
        d->B = B;
        d->bx = malloc((size_t)B * DIGITS_D * sizeof(float));
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
        memcpy(d->bx + (size_t)j * DIGITS_D, d->x + (size_t)row * DIGITS_D, DIGITS_D * sizeof(float));
        d->by[j] = d->y[row];
    }
    out->B = B;
    out->D = DIGITS_D;
    out->x = d->bx;
    out->tok = NULL;
    out->y = d->by;
    return AMP_OK;
}

/* ---- SHA-256 (FIPS 180-4) ---------------------------------------------------- */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};
#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], dd = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = dd + t1; dd = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += dd; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

amp_status amp_sha256_file(const char *path, char hex[65])
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return amp_fail(AMP_EINVAL, "%s: cannot open: %s", path, strerror(errno));
    uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    unsigned char buf[64 * 256];
    uint64_t total = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) == sizeof buf) {
        for (size_t i = 0; i < n; i += 64) sha256_block(h, buf + i);
        total += n;
    }
    int err = ferror(fp);
    fclose(fp);
    if (err) return amp_fail(AMP_EIO, "%s: read error", path);
    total += n;
    size_t full = n / 64 * 64;
    for (size_t i = 0; i < full; i += 64) sha256_block(h, buf + i);
    unsigned char tail[128] = { 0 };
    size_t rem = n - full;
    memcpy(tail, buf + full, rem);
    tail[rem] = 0x80;
    size_t tl = rem + 9 <= 64 ? 64 : 128;
    uint64_t bits = total * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < tl; i += 64) sha256_block(h, tail + i);
    for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", h[i]);
    return AMP_OK;
}
