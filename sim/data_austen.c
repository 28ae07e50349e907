/* Byte-level text data (datasets/austen.txt): fixed train/validation split,
 * batches of random windows that are a pure function of (seed, split, step). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "amp_math.h"
#include "amp_base.h"
#include "amp_data.h"
#include "amp_io.h"

#define AUSTEN_MAX_BYTES ((size_t)1 << 30)
#define STREAM_TRAIN 0x7a1u
#define STREAM_VAL   0x7a2u

amp_status amp_austen_load(amp_austen *d, const char *path)
{
    memset(d, 0, sizeof *d);
    char *buf = NULL;
    size_t len = 0;
    amp_status st = amp_read_file(path, AUSTEN_MAX_BYTES, &buf, &len);
    if (st != AMP_OK) return st;
    if (len < 20) {
        free(buf);
        return amp_fail(AMP_EINVAL, "%s: text too short (%zu bytes, need at least 20)", path, len);
    }
    d->data = (uint8_t *)buf;
    d->n = len;
    d->n_train = len - len / 10;
    return AMP_OK;
}

void amp_austen_free(amp_austen *d)
{
    free(d->data);
    memset(d, 0, sizeof *d);
}

void amp_austen_range(const amp_austen *d, amp_split s, const uint8_t **p, size_t *len)
{
    if (s == AMP_SPLIT_TRAIN) { *p = d->data; *len = d->n_train; }
    else { *p = d->data + d->n_train; *len = d->n - d->n_train; }
}

/* x, y (B,T): window j of batch `step` starts at floor(u * (len - T)),
 * u = amp_rand64(seed, stream, step*B + j) / 2^64. */
amp_status amp_austen_batch(const amp_austen *d, amp_split s, uint64_t seed,
                            uint64_t step, size_t B, size_t T,
                            int32_t *x, int32_t *y)
{
    const uint8_t *p;
    size_t len;
    amp_austen_range(d, s, &p, &len);
    if (T == 0 || len < T + 1)
        return amp_fail(AMP_EINVAL, "austen: %s text (%zu bytes) shorter than a window of %zu",
                        s == AMP_SPLIT_TRAIN ? "training" : "validation", len, T + 1);
    uint64_t stream = s == AMP_SPLIT_TRAIN ? STREAM_TRAIN : STREAM_VAL;
    for (size_t j = 0; j < B; j++) {
        uint64_t r = amp_rand64(seed, stream, step * (uint64_t)B + j);
        size_t off = (size_t)(((unsigned __int128)r * (uint64_t)(len - T)) >> 64);
        for (size_t t = 0; t < T; t++) {
            x[j * T + t] = p[off + t];
            y[j * T + t] = p[off + t + 1];
        }
    }
    return AMP_OK;
}

static void byte_counts(const amp_austen *d, amp_split s, double cnt[256], double *n)
{
    const uint8_t *p;
    size_t len;
    amp_austen_range(d, s, &p, &len);
    uint64_t c[256] = {0};
    for (size_t i = 0; i < len; i++) c[p[i]]++;
    for (int b = 0; b < 256; b++) cnt[b] = (double)c[b];
    *n = (double)len;
}

double amp_austen_unigram_entropy(const amp_austen *d, amp_split s)
{
    double cnt[256], n, h = 0.0;
    byte_counts(d, s, cnt, &n);
    for (int b = 0; b < 256; b++)
        if (cnt[b] > 0) h -= cnt[b] / n * amp_log(cnt[b] / n);
    return h;
}

double amp_austen_unigram_xent(const amp_austen *d, amp_split fit, amp_split eval)
{
    double cf[256], nf, ce[256], ne, h = 0.0;
    byte_counts(d, fit, cf, &nf);
    byte_counts(d, eval, ce, &ne);
    for (int b = 0; b < 256; b++)
        if (ce[b] > 0) h -= ce[b] / ne * amp_log((cf[b] + 1.0) / (nf + 256.0));
    return h;
}
