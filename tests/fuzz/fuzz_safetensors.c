/* libFuzzer harness for the .safetensors reader (amp_safetensors_parse): any
 * input must give AMP_OK with views inside the data area that neither overlap
 * nor leave gaps, or AMP_EFORMAT with a message naming the file; never a
 * crash, hang, leak or read outside the buffer. Every element of every
 * accepted tensor is read (ASan catches a view past the end). */
#include "ampsim.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    amp_tensor_view *t = NULL;
    int n = -1, skipped = -1;
    char first[256];
    amp_status st = amp_safetensors_parse("fuzz.safetensors", data, size, &t, &n, &skipped, first);
    if (st) {
        AMP_ASSERT(st == AMP_EFORMAT);
        AMP_ASSERT(!strncmp(amp_errmsg(), "fuzz.safetensors: ", 18));
        AMP_ASSERT(t == NULL && n == 0);
        return 0;
    }
    AMP_ASSERT(n >= 0 && (n == 0) == (t == NULL));
    const uint8_t *pos = NULL;
    double buf[256], sum = 0;
    for (int k = 0; k < n; k++) {
        const amp_tensor_view *v = &t[k];
        size_t bytes = v->n * amp_dtype_size(v->dtype);
        const uint8_t *b = v->data;
        AMP_ASSERT(b >= data + 8 && b + bytes <= data + size);
        AMP_ASSERT(!pos || (skipped ? b >= pos : b == pos));   /* sorted, contiguous unless some skipped */
        pos = b + bytes;
        AMP_ASSERT(v->name[0] && strlen(v->name) < sizeof v->name);
        for (size_t i = 0; i < v->n; i += 256) {
            size_t m = v->n - i < 256 ? v->n - i : 256;
            amp_tensor_view_to_f64(v, i, m, buf);
            for (size_t j = 0; j < m; j++) sum += buf[j];
        }
    }
    AMP_ASSERT(!pos || skipped || pos == data + size);
    AMP_ASSERT(skipped >= 0 && (skipped == 0) == (first[0] == 0));
    volatile double sink = sum;
    (void)sink;
    free(t);
    return 0;
}
