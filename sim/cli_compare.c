/* ampsim compare: the FP32 reference and each (precision, scaler), run as
 * parallel `ampsim train` processes (up to --jobs), then DIR/summary.csv.
 * A run whose summary.json exists with the same command line is not run again,
 * so a compare killed midway resumes where it stopped. */
#include "cli.h"
#include "amp_compare.h"
#include "cli_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(void)
{
    printf("usage: ampsim compare [--precisions P,..] [--scalers SPEC,..] [--run P@SPEC].. [--ref P]\n"
           "                      [--jobs N] [--diverge-tol X] [--force] [train options] --out DIR\n"
           "Trains the reference (--ref, default fp32, no loss scaling) and every (precision, scaler)\n"
           "pair of --precisions x --scalers that makes sense (FP8 strategies such as delayed, current,\n"
           "mx and block only with a policy that scales FP8 tensors, e.g. fp8-hybrid), plus each --run\n"
           "pair, on the same data, initial weights and seed. Runs go in parallel up to --jobs (default:\n"
           "the number of cores divided by the train option --threads, at least 1), each as\n"
           "'ampsim train ... --out DIR/NAME' (NAME = ref or\n"
           "PRECISION__SCALER, or PRECISION__LOSSSCALER__FP8STRATEGY for a policy with FP8\n"
           "scaling) with its log in DIR/NAME.log. Then DIR/summary.csv: per run the final\n"
           "loss, max and mean |loss - reference loss|, skipped steps, mean flushed fraction of the\n"
           "gradient tensors, and the first step where |loss - reference| > --diverge-tol (default 0.05).\n"
           "SPECs contain commas (torch:init=1024,interval=3): a piece without ':' that is key=value\n"
           "belongs to the SPEC before it; ';' also separates SPECs.\n"
           "Runs already complete (DIR/NAME/summary.json, same command) are kept unless --force.\n"
           "Every other option is passed to 'ampsim train' (see ampsim train --help).\n"
           "Under mpirun/srun (mpirun -np N ampsim compare ...) the runs spread over the ranks, one at\n"
           "a time each, handed out by rank 0 (needs the MPI plugin, built when Open MPI is present).\n"
           "Exit: 0 all runs ok, 1 some run failed, 2 bad usage.\n");
}

/* The command line of one run (argv for execv), NULL-terminated, malloc'ed. */
static char **run_argv(const char *self, char **pass, int npass, const amp_run_cfg *r, const char *dir)
{
    char **v = calloc((size_t)npass + 12, sizeof *v);
    if (!v) return NULL;
    int k = 0;
    v[k++] = (char *)self;
    v[k++] = "train";
    for (int i = 0; i < npass; i++) v[k++] = pass[i];
    v[k++] = "--precision";
    v[k++] = (char *)r->precision;
    v[k++] = "--scaler";
    v[k++] = (char *)r->scaler;
    v[k++] = "--out";
    size_t len = strlen(dir) + strlen(r->name) + 2;
    char *out = malloc(len);
    if (!out) { free(v); return NULL; }
    snprintf(out, len, "%s/%s", dir, r->name);
    v[k++] = out;
    v[k] = NULL;
    return v;
}

static void free_argv(char **v)
{
    if (!v) return;
    for (int i = 0; v[i]; i++)
        if (i > 0 && !strcmp(v[i - 1], "--out")) free(v[i]);
    free(v);
}

/* Runs at a time when --jobs is not given: the cores divided by the threads
 * each run uses (the train option --threads T passed through, default 1), at
 * least 1, so that jobs x threads does not exceed the cores. */
static int default_jobs(char *const *pass, int npass)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN), threads = 1;
    for (int i = 0; i < npass; i++) {
        const char *v = NULL;
        if (!strcmp(pass[i], "--threads") && i + 1 < npass) v = pass[i + 1];
        else if (!strncmp(pass[i], "--threads=", 10)) v = pass[i] + 10;
        if (v) threads = strtol(v, NULL, 10);
    }
    if (threads < 1) threads = 1;
    long jobs = ncpu / threads;
    return jobs < 1 ? 1 : jobs > 1024 ? 1024 : (int)jobs;
}

int amp_cli_compare(int argc, char **argv)
{
    const char *precisions = NULL, *scalers = NULL, *out = NULL, *ref = "fp32";
    amp_cli_list extra, pass;
    int force = 0, rc = 0;
    int jobs = 0;                            /* 0: cores / threads per run (below) */
    double tol = 0.05;
    if (amp_cli_list_init(&extra, argc) || amp_cli_list_init(&pass, argc)) {
        amp_cli_list_free(&extra);
        return amp_cli_fail(AMP_ENOMEM);
    }
    static const char *const per_run = "is set per run by compare; use --precisions/--scalers/--run";
    const amp_cli_opt opts[] = {
        { "--precisions", AMP_OPT_STR, &precisions, 0, 0, NULL },
        { "--scalers", AMP_OPT_STR, &scalers, 0, 0, NULL },
        { "--run", AMP_OPT_LIST, &extra, 0, 0, NULL },
        { "--ref", AMP_OPT_STR, &ref, 0, 0, NULL },
        { "--out", AMP_OPT_STR, &out, 0, 0, NULL },
        { "--force", AMP_OPT_FLAG, &force, 1, 0, NULL },
        { "--jobs", AMP_OPT_INT, &jobs, 1, 1024, NULL },
        { "--diverge-tol", AMP_OPT_DOUBLE, &tol, 0, 1e300, NULL },
        { "--precision", AMP_OPT_REFUSE, (void *)per_run, 0, 0, NULL },
        { "--scaler", AMP_OPT_REFUSE, (void *)per_run, 0, 0, NULL },
        { "--resume", AMP_OPT_REFUSE, (void *)per_run, 0, 0, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    /* every other word is an `ampsim train` option or its value (train checks them) */
    rc = amp_cli_parse("compare", argc, argv, opts, &pass, AMP_CLI_PASS, help);
    if (rc) { rc = rc < 0 ? 0 : rc; goto done; }
    int n_extra = extra.n, npass = pass.n;
    if (!jobs) jobs = default_jobs((char *const *)pass.v, npass);
    if (!out) { rc = amp_cli_usage_error("compare", "--out DIR is required"); goto done; }
    if (!precisions && !n_extra) { rc = amp_cli_usage_error("compare", "nothing to compare: give --precisions (and --scalers) or --run P@SPEC"); goto done; }

    amp_run_cfg *runs;
    int n;
    char *dropped = NULL;
    amp_status st = amp_compare_plan_dropped(precisions, scalers, (char *const *)extra.v, n_extra, ref, &runs, &n,
                                             &dropped);
    if (st) { rc = amp_cli_fail(st); goto done; }
    for (char *line = dropped; line && *line;) {          /* every pair that is not run, and why */
        size_t len = strcspn(line, "\n");
        fprintf(stderr, "ampsim compare: %.*s\n", (int)len, line);
        line += len + (line[len] != 0);
    }
    free(dropped);
    if (n < 2) {
        free(runs);
        rc = amp_cli_usage_error("compare", "nothing to compare: every pair was dropped (see above); only the reference is left");
        goto done;
    }
    if ((st = amp_mkdir_p(out))) { free(runs); rc = amp_cli_fail(st); goto done; }

    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) { free(runs); rc = amp_cli_fail(amp_fail(AMP_EIO, "compare: cannot find the ampsim binary")); goto done; }
    self[sl] = 0;

    int *status = calloc((size_t)n, sizeof *status);
    char ***argvs = calloc((size_t)n, sizeof *argvs);
    if (!status || !argvs) { rc = amp_cli_fail(AMP_ENOMEM); goto cleanup; }
    for (int i = 0; i < n; i++) {
        argvs[i] = run_argv(self, (char **)pass.v, npass, &runs[i], out);
        if (!argvs[i]) { rc = amp_cli_fail(AMP_ENOMEM); goto cleanup; }
    }
    /* locally up to --jobs processes; under mpirun/srun spread over the ranks */
    amp_cli_catch_signals();
    int d = amp_cli_dist_run("compare", out, runs, argvs, n, jobs, force, status);
    if (d == 3) { rc = amp_cli_interrupt_exit("compare", NULL); goto cleanup; }
    if (d) { rc = d == 1 ? 0 : 2; goto cleanup; }
    st = amp_compare_summarize(out, runs, n, status, tol);
    if (st) { rc = amp_cli_fail(st); goto cleanup; }
    for (int i = 0; i < n; i++)
        if (status[i]) rc = 1;
    printf("%s/summary.csv\n", out);
cleanup:
    if (argvs)
        for (int i = 0; i < n; i++) free_argv(argvs[i]);
    free(argvs);
    free(status);
    free(runs);
done:
    amp_cli_list_free(&extra);
    amp_cli_list_free(&pass);
    return rc;
}
