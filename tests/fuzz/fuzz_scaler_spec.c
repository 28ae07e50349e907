/* libFuzzer harness for scaler SPECs (amp_scaler_spec_parse): any text gives
 * AMP_OK or AMP_EINVAL; an accepted SPEC prints (amp_scaler_spec_str) to a
 * canonical SPEC that parses to the same canonical text, and initializes its
 * scaler (loss or FP8), which runs one update / observation. */
#include "ampsim.h"
#include "fuzz_memfile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    amp_scaler_spec sp, sp2;
    amp_status st = amp_scaler_spec_parse(text, &sp);
    free(text);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL);
        AMP_ASSERT(amp_errmsg()[0] != 0);
        return 0;
    }
    char c1[1024], c2[1024];
    int n1 = amp_scaler_spec_str(&sp, c1, sizeof c1);
    AMP_ASSERT(n1 > 0 && (size_t)n1 < sizeof c1);
    st = amp_scaler_spec_parse(c1, &sp2);
    AMP_ASSERT(st == AMP_OK);
    amp_scaler_spec_str(&sp2, c2, sizeof c2);
    AMP_ASSERT(!strcmp(c1, c2));
    if (amp_scaler_kind_is_fp8(sp.kind)) {
        amp_fp8_scaler f;
        if (amp_fp8_init(&f, &sp) == AMP_OK) {
            float su, sa;
            (void)amp_fp8_observe_amax(&f, 0, amp_format_get(AMP_FMT_E4M3), 3.0f, &su, &sa);
            amp_fp8_free(&f);
        }
    } else {
        amp_scaler s;
        if (amp_scaler_init(&s, &sp) == AMP_OK) {
            amp_scaler_result r;
            amp_scaler_obs obs = { .found_inf = 1 };
            (void)amp_scaler_update(&s, &obs, &r);
            (void)amp_scaler_update(&s, NULL, &r);
            amp_scaler_free(&s);
        }
    }
    return 0;
}
