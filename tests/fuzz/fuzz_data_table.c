/* libFuzzer harness for --data's own-data loader (amp_table_load). Input
 * byte 0 picks the kind: even, a CSV file (the rest of the input); odd, a
 * "FEATURES.npy,LABELS.npy" pair (the rest cut at the byte 0x1e). Every input
 * gives AMP_OK with N rows of D finite features and labels in 0..C-1 (C >= 2),
 * batches that stay inside them, or an error naming the file. */
#include "amp_base.h"
#include "amp_data.h"
#include "fuzz_memfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fuzz_dir(void)
{
    static char dir[64];
    if (!*dir) {
        snprintf(dir, sizeof dir, "%s/ampsim-fuzz-data-XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
        if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
    }
    return dir;
}

static void put(const char *path, const uint8_t *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || (n && fwrite(p, 1, n, fp) != n) || fclose(fp)) { perror(path); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    char spec[256], xp[128], yp[128];
    const char *name;
    if (!(data[0] & 1)) {
        name = fuzz_memfile(data + 1, size - 1);
        snprintf(spec, sizeof spec, "%s", name);
    } else {
        const uint8_t *rest = data + 1, *cut = memchr(rest, 0x1e, size - 1);
        size_t nx = cut ? (size_t)(cut - rest) : size - 1;
        snprintf(xp, sizeof xp, "%s/x.npy", fuzz_dir());
        snprintf(yp, sizeof yp, "%s/y.npy", fuzz_dir());
        put(xp, rest, nx);
        put(yp, cut ? cut + 1 : rest, cut ? size - 1 - nx - 1 : 0);
        snprintf(spec, sizeof spec, "%s,%s", xp, yp);
        name = fuzz_dir();
    }
    amp_digits d;
    amp_status st = amp_table_load(spec, &d);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL || st == AMP_EIO || st == AMP_ENOMEM || st == AMP_ERANGE || st == AMP_EFORMAT);
        AMP_ASSERT(strstr(amp_errmsg(), name) != NULL);
        return 0;
    }
    AMP_ASSERT(d.N >= 1 && d.D >= 1 && d.C >= 2);
    for (size_t i = 0; i < (size_t)d.N * (size_t)d.D; i++) AMP_ASSERT(isfinite(d.x[i]));
    for (int i = 0; i < d.N; i++) AMP_ASSERT(d.y[i] >= 0 && d.y[i] < d.C);
    amp_batch b;
    int B = d.N < 5 ? d.N : 5;
    for (int64_t s = 0; s < 3; s++) {
        if (amp_digits_batch(&d, s, B, (int)(s & 1), 7, &b)) break;
        AMP_ASSERT(b.B == B && b.D == d.D);
        for (int j = 0; j < B; j++) AMP_ASSERT(b.y[j] >= 0 && b.y[j] < d.C);
    }
    amp_digits_free(&d);
    return 0;
}
