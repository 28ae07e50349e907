/* ampsim — sweep: a grid file (JSON) of precisions, scalers, seeds and train
 * options to vary, planned into compare-style runs (sim/sweep.c). Running them
 * is the CLI's (sim/cli_sweep.c, locally or over MPI ranks: sim/cli_dist.c).
 *
 * Grid file (every key optional except that something must be compared):
 *   {"train":      {"steps": 200, "layers": 6, "no-shuffle": true, ...},
 *    "precisions": ["fp16-amp", "bf16-amp"],          (or one comma-separated string)
 *    "scalers":    ["none", "torch:init=1024,interval=3"],
 *    "runs":       ["fp8-hybrid@delayed"],              (extra P@SPEC pairs)
 *    "ref":        "fp32",
 *    "seeds":      [1, 2],
 *    "vary":       {"hidden": [16, 32], "lr": [0.1, 0.05]},
 *    "diverge_tol": 0.05}
 * "train" keys are `ampsim train` options without the dashes: a string or
 * number value gives "--key value", true gives "--key", false omits it.
 * precision, scaler, out, resume are set per run and refused there.
 *
 * Groups: every seed x every combination of the "vary" values (keys in file
 * order, the first key outermost). Each group is one compare: its reference
 * and every (precision, scaler) of amp_compare_plan, all with the group's
 * options. Group name: "seed<S>" then "<key><value>" per varied key, joined by
 * "__" (characters other than [A-Za-z0-9._-] become '-'); run name
 * "<group>/<compare name>". Without seeds and vary there is one group named ""
 * and the runs are named exactly as compare names them. */
#ifndef AMP_SWEEP_H
#define AMP_SWEEP_H

#include "amp_base.h"
#include "amp_compare.h"

typedef struct amp_sweep_group {
    char name[96];
    int nopt;            /* extra train arguments of this group (--seed S, --hidden 16, ...) */
    char **opt;
    char **val;          /* the varied values as text, one per vary key (for summary.csv) */
    char seed[32];       /* "" without seeds */
} amp_sweep_group;

typedef struct amp_sweep {
    int npass;           /* train options common to every run ("--steps", "200", ...) */
    char **pass;
    int nkeys;           /* vary keys */
    char **keys;
    int ngroups;
    amp_sweep_group *groups;
    int nruns;
    amp_run_cfg *runs;   /* name = "<group>/<compare name>" (or the compare name) */
    int *run_group;      /* group index of each run */
    double tol;          /* diverge_tol (default 0.05) */
} amp_sweep;

/* Parses a grid (text of the JSON file; `path` names it in messages) and plans
 * every run. AMP_EINVAL naming the file and key for anything malformed, unknown
 * or invalid (bad precision or SPEC as amp_compare_plan reports). */
AMP_API amp_status amp_sweep_parse(const char *text, const char *path, amp_sweep *sw);
AMP_API void amp_sweep_free(amp_sweep *sw);

/* The train arguments of run i after `ampsim train` (common options, group
 * options, --precision, --scaler, --out DIR/NAME), NULL-terminated; free with
 * amp_sweep_argv_free. argv[0] is `self`. */
AMP_API char **amp_sweep_argv(const amp_sweep *sw, int i, const char *self, const char *dir);
AMP_API void amp_sweep_argv_free(char **argv);

/* Writes the summaries: for a single unnamed group DIR/summary.csv exactly as
 * compare writes it; otherwise DIR/GROUP/summary.csv for each group (compare's
 * format, its own reference) and DIR/summary.csv with the columns
 * group,seed,<vary keys>, then compare's columns, the groups' rows in order.
 * status[i] is run i's exit code. */
AMP_API amp_status amp_sweep_summarize(const char *dir, const amp_sweep *sw, const int *status);

#endif
