/* libFuzzer harness for the sweep grid parser (amp_sweep_parse): any text
 * gives AMP_OK with a plan whose every run has its train arguments (and a
 * name under its group's folder), or an error naming the grid file. */
#include "amp_base.h"
#include "fuzz_memfile.h"
#include "amp_compare.h"
#include "amp_sweep.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0;
    char *text = fuzz_text(data, size);
    if (!text) return 0;
    amp_sweep sw;
    amp_status st = amp_sweep_parse(text, "grid.json", &sw);
    free(text);
    if (st) {
        AMP_ASSERT(st == AMP_EINVAL || st == AMP_ENOMEM);
        AMP_ASSERT(strstr(amp_errmsg(), "grid.json") != NULL);
        return 0;
    }
    AMP_ASSERT(sw.nruns >= 1 && sw.ngroups >= 1);
    for (int i = 0; i < sw.nruns && i < 64; i++) {
        char **argv = amp_sweep_argv(&sw, i, "ampsim", "out");
        AMP_ASSERT(argv && argv[0] && !strcmp(argv[1], "train"));
        int n = 0;
        while (argv[n]) n++;
        AMP_ASSERT(n >= 8 && !strcmp(argv[n - 2], "--out"));
        AMP_ASSERT(sw.run_group[i] >= 0 && sw.run_group[i] < sw.ngroups);
        amp_sweep_argv_free(argv);
    }
    amp_sweep_free(&sw);
    return 0;
}
