/* ampsim — compare: an FP32 reference plus each (precision, scaler), one run
 * directory each, and DIR/summary.csv (docs/design.md). The planning and the
 * summary live in the library (sim/compare.c); spawning the runs is the CLI's
 * (sim/cli_compare.c, and the MPI launcher for sweeps). */
#ifndef AMP_COMPARE_H
#define AMP_COMPARE_H

#include "amp_base.h"

typedef struct amp_run_cfg {
    char name[160];        /* run folder under DIR: "ref" or "<precision>__<scaler>" */
    char precision[64];
    char scaler[256];      /* SPEC as given ("none" for the reference) */
    int is_ref;
} amp_run_cfg;

/* Splits a list of scaler SPECs. SPECs contain commas themselves
 * ("torch:init=1024,interval=3"), so a comma-separated piece without ':' that
 * looks like key=value continues the SPEC before it; ';' always separates.
 * Returns the number of SPECs written to out[] (at most max), -1 if too many. */
AMP_API int amp_compare_split_specs(const char *list, char out[][256], int max);

/* Plans the runs: the reference (ref_precision with no scaler) first, then the
 * cross product of precisions x scalers, keeping only pairs that make sense
 * (FP8 per-tensor strategies only with a policy that scales FP8 per tensor),
 * then each extra "P@SPEC" pair. Every precision and SPEC is validated
 * (AMP_EINVAL naming it). *runs is malloc'ed. */
AMP_API amp_status amp_compare_plan(const char *precisions, const char *scalers, char *const *extra,
                                    int n_extra, const char *ref_precision, amp_run_cfg **runs, int *n);

/* Writes DIR/summary.csv (atomically): one row per run with final loss, max and
 * mean |loss - reference loss|, skipped steps, mean flushed fraction of the
 * gradient tensors (weight_grad and act_grad rows of tensors.csv), and the
 * first step where |loss - reference| > tol (or the loss is not finite).
 * status[i] is the run's exit code (0 ok); a failed or missing run gets a row
 * with status "failed" and empty figures. */
AMP_API amp_status amp_compare_summarize(const char *dir, const amp_run_cfg *runs, int n,
                                         const int *status, double tol);

#endif
