/* libFuzzer harness for block-format specs (amp_block_parse): any text gives
 * AMP_OK or AMP_EINVAL with a message; an accepted spec's canonical name
 * parses to the same spec, and rounds a small tensor (one block and a short
 * one) without error. */
#include "ampsim.h"
#include "fuzz_memfile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    amp_block_spec b, b2;
    amp_status st = amp_block_parse(text, &b);
    free(text);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL);
        AMP_ASSERT(amp_errmsg()[0] != 0);
        return 0;
    }
    AMP_ASSERT(amp_block_parse(b.name, &b2) == AMP_OK);
    AMP_ASSERT(!strcmp(b.name, b2.name) && b.kind == b2.kind && b.rows == b2.rows && b.cols == b2.cols &&
               b.rule == b2.rule && amp_format_same(&b.elem, &b2.elem));
    float x[40], y[40];
    for (int i = 0; i < 40; i++) x[i] = (float)(i - 17) * 0.37f;
    amp_round_opts o = amp_round_defaults();
    amp_block_stats bs;
    amp_block_stats_init(&bs);
    AMP_ASSERT(amp_block_round(&b, &o, x, y, 2, 20, NULL, &bs) == AMP_OK);
    AMP_ASSERT(bs.blocks > 0);
    return 0;
}
