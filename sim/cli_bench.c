/* ampsim bench round|gemm|train|accum [--csv]: speed as ratios measured in one run. */
#include "cli.h"
#include "amp_bench.h"

#include <stdio.h>
#include <string.h>

#include "amp_report.h"

static void help(void)
{
    printf("usage: ampsim bench round|gemm|train|accum [--csv] [--reps N] [--n N] [--model mlp|gpt]\n"
           "  round  rounding kernels (every format and mode, statistics off/on) vs memcpy of the\n"
           "         same 2^24-value array, one thread, best of --reps (default 5)\n"
           "  gemm   rounded-operand GEMM vs plain OpenBLAS sgemm on the models' shapes\n"
           "  train  emulated fp16-amp step (statistics on) vs ampsim's own fp32 step\n"
           "  accum  dot-product relative error vs length K for narrow accumulators (CSV for figure 6)\n"
           "Ratios are measured back to back in one run; absolute times depend on the machine.\n");
}

int amp_cli_bench(int argc, char **argv)
{
    int csv = 0;
    long reps = 5, n = 1L << 24;
    const char *what = NULL, *model = "mlp";
    for (int i = 1; i < argc; i++) {
        if (amp_cli_is_help(argv[i])) { help(); return 0; }
        else if (!strcmp(argv[i], "--csv")) csv = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            if (amp_cli_parse_long(argv[++i], 1, 1000, &reps)) return amp_cli_usage_error("bench", "--reps must be 1..1000");
        } else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            if (amp_cli_parse_long(argv[++i], 1024, 1L << 30, &n)) return amp_cli_usage_error("bench", "--n must be 1024..2^30");
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (argv[i][0] != '-' && !what) what = argv[i];
        else return amp_cli_usage_error("bench", "unknown option '%s' (see --help)", argv[i]);
    }
    if (!what) return amp_cli_usage_error("bench", "which benchmark? round, gemm, train or accum");
    int rc;
    if (!strcmp(what, "round")) rc = amp_bench_round(stdout, csv, (int)reps, (size_t)n);
    else if (!strcmp(what, "gemm")) rc = amp_bench_gemm(stdout, csv);
    else if (!strcmp(what, "train")) rc = amp_bench_train(stdout, csv, model);
    else if (!strcmp(what, "accum")) rc = amp_bench_accum(stdout, csv);
    else return amp_cli_usage_error("bench", "unknown benchmark '%s' (round, gemm, train, accum)", what);
    if (rc != 0) return amp_cli_fail(AMP_ENOMEM);
    return 0;
}
