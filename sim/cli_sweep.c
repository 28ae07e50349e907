/* ampsim sweep GRID.json: every (seed, varied options) group of a grid file
 * as a compare (reference + (precision, scaler) runs), run locally up to
 * --jobs at a time or, under mpirun/srun, over the MPI ranks; then summary.csv. */
#include "cli.h"
#include "cli_dist.h"
#include "amp_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(void)
{
    printf("usage: ampsim sweep GRID.json --out DIR [--jobs N] [--force] [--dry-run]\n"
           "Runs a grid of configurations. GRID.json:\n"
           "  {\"train\": {\"steps\": 200, \"layers\": 6},        ampsim train options (true = a flag)\n"
           "   \"precisions\": [\"fp16-amp\", \"bf16-amp\"], \"scalers\": [\"none\", \"torch\"],\n"
           "   \"runs\": [\"fp8-hybrid@delayed\"], \"ref\": \"fp32\", \"diverge_tol\": 0.05,\n"
           "   \"seeds\": [1, 2], \"vary\": {\"hidden\": [16, 32]}}\n"
           "Each seed x combination of the \"vary\" values is a group: a compare (see ampsim compare\n"
           "--help) with its own FP32 reference, in DIR/GROUP/ (GROUP = seed1__hidden16, ...); without\n"
           "seeds and vary the runs go straight into DIR as compare's would. Each run is\n"
           "'ampsim train ... --out DIR/[GROUP/]NAME', its log in NAME.log, its command in NAME.cmd.\n"
           "Then DIR/GROUP/summary.csv per group and DIR/summary.csv (group, seed, the varied values,\n"
           "then compare's columns). A run whose summary.json exists with the same command is kept\n"
           "(unless --force), so a sweep killed midway resumes where it stopped.\n"
           "Under mpirun (or srun) the runs spread over the ranks: rank 0 hands the next run to\n"
           "whichever rank is free (rank 0 runs runs too), one run per rank at a time (--jobs is\n"
           "ignored), DIR must be on a file system every rank sees, and rank 0 writes the summary.\n"
           "This needs the MPI plugin ampsim-mpi.so next to the binary (built when pkg-config finds\n"
           "ompi-c); without it rank 0 runs everything locally. AMPSIM_NO_MPI=1 forces local runs.\n"
           "--jobs N: local parallel runs (default: the number of cores). --dry-run: print the runs'\n"
           "commands and exit. Exit: 0 all runs ok, 1 some run failed, 2 bad usage or bad grid.\n");
}

int amp_cli_sweep(int argc, char **argv)
{
    const char *grid = NULL, *out = NULL;
    int force = 0, dry = 0, rc = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    int njobs = jobs < 1 ? 1 : jobs > 1024 ? 1024 : (int)jobs;
    const char *pos[1];
    amp_cli_list words = { pos, 0, 1 };
    const amp_cli_opt opts[] = {
        { "--out", AMP_OPT_STR, &out, 0, 0, NULL },
        { "--force", AMP_OPT_FLAG, &force, 1, 0, NULL },
        { "--dry-run", AMP_OPT_FLAG, &dry, 1, 0, NULL },
        { "--jobs", AMP_OPT_INT, &njobs, 1, 1024, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    rc = amp_cli_parse("sweep", argc, argv, opts, &words, AMP_CLI_POSITIONAL, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (words.n) grid = words.v[0];
    jobs = njobs;
    if (!grid) return amp_cli_usage_error("sweep", "GRID.json is required (ampsim sweep --help)");
    if (!out && !dry) return amp_cli_usage_error("sweep", "--out DIR is required");
    if (!out) out = ".";

    char *text;
    size_t len;
    amp_status st = amp_read_file(grid, (size_t)1 << 24, &text, &len);
    if (st) return amp_cli_fail(st);
    amp_sweep sw;
    st = amp_sweep_parse(text, grid, &sw);
    free(text);
    if (st) return amp_cli_fail(st);

    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) { amp_sweep_free(&sw); return amp_cli_fail(amp_fail(AMP_EIO, "sweep: cannot find the ampsim binary")); }
    self[sl] = 0;
    int n = sw.nruns;
    char ***argvs = calloc((size_t)n, sizeof *argvs);
    int *status = calloc((size_t)n, sizeof *status);
    if (!argvs || !status) { rc = amp_cli_fail(AMP_ENOMEM); goto done; }
    for (int i = 0; i < n; i++)
        if (!(argvs[i] = amp_sweep_argv(&sw, i, self, out))) { rc = amp_cli_fail(AMP_ENOMEM); goto done; }
    if (dry) {
        for (int i = 0; i < n; i++) {
            printf("%s:", sw.runs[i].name);
            for (int k = 1; argvs[i][k]; k++) printf(" '%s'", argvs[i][k]);
            putchar('\n');
        }
        goto done;
    }
    if ((st = amp_mkdir_p(out))) { rc = amp_cli_fail(st); goto done; }
    amp_cli_catch_signals();
    int d = amp_cli_dist_run("sweep", out, sw.runs, argvs, n, jobs, force, status);
    if (d == 3) { rc = amp_cli_interrupt_exit("sweep", NULL); goto done; }
    if (d) { rc = d == 1 ? 0 : 2; goto done; }
    if ((st = amp_sweep_summarize(out, &sw, status))) { rc = amp_cli_fail(st); goto done; }
    for (int i = 0; i < n; i++)
        if (status[i]) rc = 1;
    printf("%s/summary.csv\n", out);
done:
    if (argvs)
        for (int i = 0; i < n; i++) amp_sweep_argv_free(argvs[i]);
    free(argvs);
    free(status);
    amp_sweep_free(&sw);
    return rc;
}
