/* ampsim — command-line entry point: dispatches to sim/cli_<cmd>.c. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Subcommands live in their own files; one not linked in is reported, not a crash. */
#pragma weak amp_cli_round
#pragma weak amp_cli_analyze
#pragma weak amp_cli_check_cast
#pragma weak amp_cli_train
#pragma weak amp_cli_compare
#pragma weak amp_cli_scaler_replay
#pragma weak amp_cli_report
#pragma weak amp_cli_bench
#pragma weak amp_cli_sweep

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} commands[] = {
    { "formats", amp_cli_formats, "list the format table" },
    { "round", amp_cli_round, "round a tensor file into a format" },
    { "analyze", amp_cli_analyze, "what each format and scale does to tensors in files" },
    { "check-cast", amp_cli_check_cast, "judge another library's casts against exact rounding" },
    { "train", amp_cli_train, "train a model in an emulated precision policy" },
    { "compare", amp_cli_compare, "train an FP32 reference and each (precision, scaler)" },
    { "sweep", amp_cli_sweep, "run a grid of configurations (under mpirun: over the ranks)" },
    { "scaler-replay", amp_cli_scaler_replay, "replay a scaler over a scripted sequence" },
    { "report", amp_cli_report, "write the HTML report and figures of a run" },
    { "bench", amp_cli_bench, "measure speed ratios (round, gemm, train)" },
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: ampsim COMMAND [options]   (ampsim COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(fp, "  %-14s %s\n", commands[i].name, commands[i].what);
    fprintf(fp, "\nampsim %s — emulated low-precision training with exact rounding\n", amp_version());
}

/* AMP_SIMD=generic|avx512|gfni caps the rounding kernels' hand-written paths,
 * AMP_GEMM_PATH=generic|avx2|avx512 the reproducible GEMM's (the results are
 * the same bits; for comparing speed and testing). */
static int simd_from_env(void)
{
    const char *g = getenv("AMP_GEMM_PATH");
    amp_gemm_path gp;
    if (g && *g) {
        if (amp_gemm_path_parse(g, &gp)) {
            fprintf(stderr, "ampsim: AMP_GEMM_PATH: %s\n", amp_errmsg());
            return -1;
        }
        amp_gemm_set_path(gp);
    }
    const char *v = getenv("AMP_SIMD");
    amp_simd cap;
    if (!v || !*v) return 0;
    if (amp_simd_parse(v, &cap)) {
        fprintf(stderr, "ampsim: AMP_SIMD: %s\n", amp_errmsg());
        return -1;
    }
    amp_set_simd(cap);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    if (simd_from_env()) return 2;
    if (amp_cli_is_help(argv[1]) || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
    if (!strcmp(argv[1], "--version")) { printf("ampsim %s\n", amp_version()); return 0; }
    /* the long commands take SIGINT/SIGTERM from the start (they poll the flag) */
    if (!strcmp(argv[1], "train") || !strcmp(argv[1], "compare") || !strcmp(argv[1], "sweep") ||
        !strcmp(argv[1], "report"))
        amp_cli_catch_signals();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            if (!commands[i].fn) {
                fprintf(stderr, "ampsim: command '%s' is not built into this binary\n", argv[1]);
                return 2;
            }
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "ampsim: unknown command '%s' (try ampsim --help)\n", argv[1]);
    return 2;
}
