/* ampsim bench round|gemm|train|accum [--csv]: speed as ratios measured in one run. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

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
    int csv = 0, reps = 5;
    int64_t n = 1L << 24;
    const char *what = NULL, *model = "mlp";
    const char *pos[1];
    amp_cli_list words = { pos, 0, 1 };
    const amp_cli_opt opts[] = {
        { "--csv", AMP_OPT_FLAG, &csv, 1, 0, NULL },
        { "--reps", AMP_OPT_INT, &reps, 1, 1000, NULL },
        { "--n", AMP_OPT_I64, &n, 1024, 1L << 30, NULL },
        { "--model", AMP_OPT_STR, &model, 0, 0, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("bench", argc, argv, opts, &words, AMP_CLI_POSITIONAL, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (words.n) what = words.v[0];
    if (!what) return amp_cli_usage_error("bench", "which benchmark? round, gemm, train or accum");
    if (!strcmp(what, "round")) rc = amp_bench_round(stdout, csv, reps, (size_t)n);
    else if (!strcmp(what, "gemm")) rc = amp_bench_gemm(stdout, csv);
    else if (!strcmp(what, "train")) rc = amp_bench_train(stdout, csv, model);
    else if (!strcmp(what, "accum")) rc = amp_bench_accum(stdout, csv);
    else return amp_cli_usage_error("bench", "unknown benchmark '%s' (round, gemm, train, accum)", what);
    if (rc != 0) return amp_cli_fail(AMP_ENOMEM);
    return 0;
}
