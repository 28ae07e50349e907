/* ampsim — compare: an FP32 reference plus each (precision, scaler), one run
 * directory each, and DIR/summary.csv (docs/design.md). The planning and the
 * summary live in the library (sim/compare.c); spawning the runs is the CLI's
 * (sim/cli_compare.c, and the MPI launcher for sweeps). */
#ifndef AMP_COMPARE_H
#define AMP_COMPARE_H

#include "amp_base.h"

typedef struct amp_run_cfg {
    char name[160];        /* run folder under DIR: "ref", "<precision>__<scaler>", or for a policy
                              with per-tensor FP8 scaling "<precision>__<loss scaler>__<FP8 strategy>" */
    char precision[64];
    char scaler[256];      /* SPEC as given ("none" for the reference) */
    char loss_scaler[256]; /* the loss scaler that runs ("none" when SPEC is an FP8 strategy) */
    char fp8[256];         /* the FP8 strategy that runs ("delayed" by default), "" without FP8 scaling */
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
/* As amp_compare_plan; *dropped (if non-NULL) receives a malloc'ed text, one
 * line per pair of the cross product that is not run and why (an FP8
 * strategy without FP8 scaling; the same run as another pair), or NULL. */
AMP_API amp_status amp_compare_plan_dropped(const char *precisions, const char *scalers, char *const *extra,
                                            int n_extra, const char *ref_precision, amp_run_cfg **runs, int *n,
                                            char **dropped);

/* Writes DIR/summary.csv (atomically): one row per run with the precision, the
 * SPEC as given, the loss scaler and FP8 strategy that ran, final loss, max and
 * mean |loss - reference loss|, skipped steps, mean flushed fraction of the
 * gradient tensors (weight_grad and act_grad rows of tensors.csv), and the
 * first step where |loss - reference| > tol (or the loss is not finite).
 * status[i] is the run's exit code (0 ok); a failed or missing run gets a row
 * with status "failed" and empty figures. same_as names an earlier run
 * that trained identically (amp_run_identical). */
AMP_API amp_status amp_compare_summarize(const char *dir, const amp_run_cfg *runs, int n,
                                         const int *status, double tol);

/* sizeof of "amp_run_cfg", "amp_sweep" or "amp_sweep_group" (analysis/amp_sweep.h),
 * 0 for any other name: for foreign-function bindings to check their struct mirrors. */
AMP_API size_t amp_compare_abi_size(const char *type);

#endif
