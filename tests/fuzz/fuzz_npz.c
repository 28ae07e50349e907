/* libFuzzer harness for the .npz reader (amp_npz_parse): any input must give
 * AMP_OK with views inside the buffer or the inflated arena, or AMP_EFORMAT /
 * AMP_ENOMEM with a message naming the file; never a crash, hang, leak or
 * read outside the buffer. Every element of every accepted view is read. */
#include "ampsim.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amp_tensor_view *v = NULL;
    int n = 0;
    void *arena = NULL;
    int ns = 0;
    char skipped[256];
    amp_status st = amp_npz_parse("fuzz.npz", data, size, &v, &n, &arena, &ns, skipped);
    if (st) {
        AMP_ASSERT(st == AMP_EFORMAT || st == AMP_ENOMEM);
        AMP_ASSERT(!strncmp(amp_errmsg(), "fuzz.npz", 8));
        AMP_ASSERT(v == NULL && arena == NULL);
        return 0;
    }
    double buf[256], sum = 0;
    for (int t = 0; t < n; t++) {
        AMP_ASSERT(v[t].name[0] != 0);
        for (size_t i = 0; i < v[t].n; i += 256) {
            size_t m = v[t].n - i < 256 ? v[t].n - i : 256;
            amp_tensor_view_to_f64(&v[t], i, m, buf);
            for (size_t j = 0; j < m; j++) sum += buf[j];
        }
    }
    volatile double sink = sum;
    (void)sink;
    free(v);
    free(arena);
    return 0;
}
