/* libFuzzer harness for the digits dataset reader (amp_digits_load, plain or
 * gzip CSV of 65 integers per row): any input gives AMP_OK with every pixel in
 * [0,1] and every label in 0..9, or AMP_EINVAL/AMP_ENOMEM with a message naming
 * the file; never a crash, hang or leak. Accepted data is also batched. */
#include "ampsim.h"
#include "fuzz_memfile.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_memfile(data, size);
    amp_digits d;
    amp_status st = amp_digits_load(path, &d);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL || st == AMP_ENOMEM);
        AMP_ASSERT(strstr(amp_errmsg(), path) != NULL);
        amp_digits_free(&d);
        return 0;
    }
    AMP_ASSERT(d.N > 0 && strlen(d.sha256) == 64);
    for (size_t i = 0; i < (size_t)d.N * 64; i++) AMP_ASSERT(d.x[i] >= 0.0f && d.x[i] <= 1.0f);
    for (int i = 0; i < d.N; i++) AMP_ASSERT(d.y[i] >= 0 && d.y[i] <= 9);
    amp_batch b;
    for (int64_t s = 0; s < 3; s++) {
        AMP_ASSERT(amp_digits_batch(&d, s, 5, (int)(s & 1), 7, &b) == AMP_OK);
        for (int j = 0; j < 5; j++) AMP_ASSERT(b.y[j] >= 0 && b.y[j] <= 9);
    }
    amp_digits_free(&d);
    return 0;
}
