/* ampsim — training data: batches, the digits set, the byte-level Austen text,
 * and where data files are found. */
#ifndef AMP_DATA_H
#define AMP_DATA_H

#include <stddef.h>
#include <stdint.h>
#include "amp_base.h"

/* ---- data ---------------------------------------------------------------------- */
typedef struct amp_batch {
    int B;                   /* rows */
    int D;                   /* features per row (x is [B,D]) or tokens per row */
    const float *x;          /* [B,D] inputs (NULL for token models) */
    const int32_t *tok;      /* [B,D] token ids (NULL for feature models) */
    const int32_t *y;        /* [B] labels or [B,D] targets */
} amp_batch;

typedef struct amp_digits {
    int N;                   /* rows (1797) */
    int D, C;                /* features per row (64) and classes (10) */
    float *x;                /* [N,D] (digits: pixel/16) */
    int32_t *y;              /* [N] labels 0..C-1 */
    char sha256[65];
    char path[4096];
    /* batch buffers (for batches of B rows) */
    int B;
    float *bx;
    int32_t *by;
    int *perm;               /* current epoch's permutation */
    int64_t perm_epoch;
} amp_digits;
/* Reads the digits CSV (.gz or plain): 65 ints per row, pixels 0..16, label
 * 0..9; anything else is AMP_EINVAL naming file:line. */
AMP_API amp_status amp_digits_load(const char *path, amp_digits *d);
AMP_API void amp_digits_free(amp_digits *d);
/* Batch of step s: shuffle == 0: rows (B*s + j) mod N; else position p = B*s+j
 * is element p mod N of a permutation of epoch p / N drawn from (seed, epoch). */
AMP_API amp_status amp_digits_batch(amp_digits *d, int64_t step, int B, int shuffle, uint64_t seed, amp_batch *out);
/* Your own data for the MLP, in the same structure: a CSV file (plain or
 * .gz) of float features and an integer label per row, the label column
 * named label, labels, y, target or class in a header line, else the last
 * column; or "FEATURES.npy,LABELS.npy" (features (N,D) f2/f4/f8; labels (N,)
 * integers or whole-valued floats). D is the feature count, C = the largest
 * label + 1 (at least 2). A bad value is AMP_EINVAL naming file:line (the
 * row number for .npy). sha256 is that of the CSV or the features file. */
AMP_API amp_status amp_table_load(const char *spec, amp_digits *d);
/* Where "digits" lives: $AMP_DATADIR, $AMP_SRCDIR/datasets, ./datasets, next to the binary. */
AMP_API amp_status amp_data_find(const char *file, char *out, size_t len);


/* ---- byte-level Austen data -------------------------------------------------
 * Tokens are the bytes of the file (vocabulary V = 256, all byte values, so no
 * vocabulary file is needed; the text uses 82 of them). The split is fixed:
 * the first n - n/10 bytes are training text, the last n/10 validation text
 * (for austen.txt: 3,622,527 and 402,502 bytes; the validation text is the
 * end of the last novel in the file). */
#define AMP_AUSTEN_VOCAB 256

typedef enum amp_split { AMP_SPLIT_TRAIN = 0, AMP_SPLIT_VAL = 1 } amp_split;

typedef struct amp_austen {
    uint8_t *data;     /* the whole file */
    size_t n;          /* its length */
    size_t n_train;    /* data[0 .. n_train) is training text */
} amp_austen;           /* data[n_train .. n) is validation text */

/* Reads the file at path (at most 1 GiB; AMP_EIO / AMP_ERANGE naming it).
 * A file of fewer than 20 bytes is AMP_EINVAL naming it. Release with
 * amp_austen_free (safe on a zeroed or freed struct). */
AMP_API amp_status amp_austen_load(amp_austen *d, const char *path);
AMP_API void amp_austen_free(amp_austen *d);
/* Byte range of a split. */
AMP_API void amp_austen_range(const amp_austen *d, amp_split s, const uint8_t **p, size_t *len);

/* Batch `step` of a split: B windows of T+1 consecutive bytes of that split,
 * window j starting at offset floor(u * (len - T)) with u from
 * amp_rand64(seed, stream, step*B + j) (stream = 0x7a1 for train, 0x7a2 for
 * validation; u = the 64 bits as a fraction, by a 128-bit multiply), so a batch
 * is a pure function of (seed, split, step, B, T). x (B,T) gets bytes 0..T-1
 * of each window, y (B,T) bytes 1..T (the next-byte targets). AMP_EINVAL if
 * the split is shorter than T+1. */
AMP_API amp_status amp_austen_batch(const amp_austen *d, amp_split s, uint64_t seed,
                                    uint64_t step, size_t B, size_t T,
                                    int32_t *x, int32_t *y);

/* Entropy of the empirical byte distribution of a split, in nats (divide by
 * ln 2 for bits): the loss of the best unigram model of that very text. */
AMP_API double amp_austen_unigram_entropy(const amp_austen *d, amp_split s);
/* Cross-entropy (nats) of split `eval` under the byte frequencies of split
 * `fit` with add-one (Laplace) smoothing over all 256 bytes: what a unigram
 * model trained on `fit` scores on `eval`. */
AMP_API double amp_austen_unigram_xent(const amp_austen *d, amp_split fit, amp_split eval);

#endif
