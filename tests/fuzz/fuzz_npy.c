/* libFuzzer harness for the .npy reader (amp_npy_parse): any input must give
 * AMP_OK with a view inside the buffer, or AMP_EFORMAT with a message naming
 * the file; never a crash, hang, leak or read outside the buffer. Every
 * element of an accepted view is read (ASan catches a view past the end). */
#include "ampsim.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amp_tensor_view v;
    amp_status st = amp_npy_parse("fuzz.npy", data, size, &v);
    if (st) {
        AMP_ASSERT(st == AMP_EFORMAT);
        AMP_ASSERT(!strncmp(amp_errmsg(), "fuzz.npy: ", 10));
        return 0;
    }
    AMP_ASSERT((const uint8_t *)v.data >= data && v.n * amp_dtype_size(v.dtype) <= size);
    AMP_ASSERT((const uint8_t *)v.data + v.n * amp_dtype_size(v.dtype) == data + size);
    double buf[256], sum = 0;
    for (size_t i = 0; i < v.n; i += 256) {
        size_t m = v.n - i < 256 ? v.n - i : 256;
        amp_tensor_view_to_f64(&v, i, m, buf);
        for (size_t j = 0; j < m; j++) sum += buf[j];
    }
    volatile double sink = sum;
    (void)sink;
    return 0;
}
