/* libFuzzer harness for the report's strict CSV reader (amp_csv_read): any
 * file gives AMP_OK (every row has ncol cells, every cell a NUL-terminated
 * string inside the buffer) or AMP_EFORMAT/AMP_ENOMEM naming the file; every
 * cell of an accepted file goes through amp_csv_num and amp_csv_long. */
#include "amp_csv.h"
#include "fuzz_memfile.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_memfile(data, size);
    amp_csv c;
    amp_status st = amp_csv_read(path, &c);
    if (st) {
        AMP_ASSERT(st == AMP_EFORMAT || st == AMP_ENOMEM);
        AMP_ASSERT(strstr(amp_errmsg(), path) != NULL);
        return 0;
    }
    AMP_ASSERT(c.ncol >= 1);
    size_t total = 0;
    for (int k = 0; k < c.ncol; k++) total += strlen(c.head[k]);
    for (size_t r = 0; r < c.nrows; r++)
        for (int k = 0; k < c.ncol; k++) {
            double v;
            long l;
            total += strlen(amp_csv_get(&c, r, k));
            (void)amp_csv_num(&c, r, k, &v);
            (void)amp_csv_long(&c, r, k, -5, 1000, &l);
        }
    AMP_ASSERT(total <= size);
    if (c.ncol) {
        const char *name = c.head[0];
        AMP_ASSERT(amp_csv_col(&c, name) == 0);
        int idx;
        (void)amp_csv_require(&c, &name, 1, &idx);
    }
    amp_csv_free(&c);
    return 0;
}
