/* libFuzzer harness for JSON precision policies (amp_policy_from_json): any
 * text gives AMP_OK or AMP_EINVAL naming the source; never a crash or leak.
 * An accepted policy is written back with amp_policy_to_json, which must be
 * read again to the same JSON (the policy survives config.json). */
#include "ampsim.h"
#include "fuzz_memfile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    amp_policy p;
    amp_status st = amp_policy_from_json(text, "fuzz.json", &p);
    free(text);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL);
        AMP_ASSERT(!strncmp(amp_errmsg(), "fuzz.json:", 10));   /* "fuzz.json: ..." or "fuzz.json:LINE:COL: ..." */
        return 0;
    }
    char *j1 = amp_policy_to_json(&p);
    AMP_ASSERT(j1 != NULL);
    amp_policy q;
    st = amp_policy_from_json(j1, "round-trip", &q);
    AMP_ASSERT(st == AMP_OK);
    char *j2 = amp_policy_to_json(&q);
    AMP_ASSERT(j2 != NULL && !strcmp(j1, j2));
    free(j1);
    free(j2);
    return 0;
}
