/* ampsim — the run-directory reader: the one place that knows how the files
 * of a run directory are read and checked (the writer is sim/runlog.c; the
 * file names and columns are those of amp_runlog.h). compare, sweep and the
 * report read runs only through it.
 *
 * Every reader validates what it returns: a missing file, a missing column, a
 * field that is not a number, counts that add up to more than n, steps out of
 * order, an unknown format, ... is AMP_EFORMAT (AMP_EIO for an unreadable
 * file) with the message "path:line: problem", never a silent default.
 * Rows keep the file's order. Strings point into the reader's own buffer:
 * valid until the matching _free. */
#ifndef AMP_RUNDIR_H
#define AMP_RUNDIR_H

#include <stddef.h>
#include "amp_base.h"
#include "amp_csv.h"

/* metrics.csv: at least one row; steps strictly increasing; loss any number
 * (NaN and inf included); loss_scale >= 0 and not NaN; skipped 0 or 1. The
 * optional column val_loss (`train --eval-every`): a number where the step
 * was evaluated, empty elsewhere (val NaN there; nval counts the numbers). */
typedef struct amp_run_metrics {
    size_t n;
    long *step;
    double *loss, *scale;
    int *skipped;
    double *val;             /* n values, NaN where not evaluated (or no column) */
    size_t nval;             /* steps with a validation loss */
} amp_run_metrics;
AMP_API amp_status amp_run_read_metrics(const char *dir, amp_run_metrics *m);
AMP_API void amp_run_metrics_free(amp_run_metrics *m);

/* tensors.csv: one row per tensor per logged step (may be empty: --log-every 0);
 * counts are integers >= 0 whose classes add up to at most n; format a known
 * format name; amax, amin_nonzero, rel_err numbers; no tensor twice at a step. */
typedef struct amp_run_tensor_row {
    long step;
    const char *tensor, *role, *format;
    long n, zero_in, flushed, subnormal, saturated, overflow, nan;
    double amax, amin_nonzero, rel_err;
    size_t line;             /* line in the file, for messages */
} amp_run_tensor_row;
typedef struct amp_run_tensors {
    char path[4200];
    size_t n;
    amp_run_tensor_row *row;
    amp_csv csv;
} amp_run_tensors;
AMP_API amp_status amp_run_read_tensors(const char *dir, amp_run_tensors *t);
AMP_API void amp_run_tensors_free(amp_run_tensors *t);

/* hist.csv: rows in step order; binade an integer in [AMP_RUN_BINADE_MIN,
 * AMP_RUN_BINADE_MAX] or one of zero / inf / nan (kind); count >= 0. */
#define AMP_RUN_BINADE_MIN (-1100)
#define AMP_RUN_BINADE_MAX 1100
typedef enum amp_run_bin { AMP_BIN_BINADE, AMP_BIN_ZERO, AMP_BIN_INF, AMP_BIN_NAN } amp_run_bin;
typedef struct amp_run_hist_row {
    long step;
    const char *tensor;
    amp_run_bin kind;
    long binade;             /* kind == AMP_BIN_BINADE */
    long count;
    size_t line;
} amp_run_hist_row;
typedef struct amp_run_hist {
    char path[4200];
    size_t n;
    amp_run_hist_row *row;
    amp_csv csv;
} amp_run_hist;
AMP_API amp_status amp_run_read_hist(const char *dir, amp_run_hist *h);
AMP_API void amp_run_hist_free(amp_run_hist *h);

/* events.csv: step (an integer >= -1), event, tensor, detail, as strings. */
typedef struct amp_run_events {
    amp_csv csv;
    int step, event, tensor, detail;   /* column indices */
} amp_run_events;
AMP_API amp_status amp_run_read_events(const char *dir, amp_run_events *e);
AMP_API void amp_run_events_free(amp_run_events *e);

/* whatif.csv (optional; amp_run_has_whatif): rows of shadow loss scalers
 * (amp_whatif.h). step >= 0, never decreasing; scaler a non-empty SPEC;
 * scale >= 0 and not NaN; skipped 0 or 1; 0 <= flushed + overflow <= n. */
typedef struct amp_run_whatif_row {
    long step;
    const char *scaler;
    double scale;
    int skipped;
    long flushed, overflow, n;
} amp_run_whatif_row;
typedef struct amp_run_whatif {
    char path[4200];
    size_t n;
    amp_run_whatif_row *row;
    amp_csv csv;
} amp_run_whatif;
AMP_API int amp_run_has_whatif(const char *dir);
AMP_API amp_status amp_run_read_whatif(const char *dir, amp_run_whatif *w);
AMP_API void amp_run_whatif_free(amp_run_whatif *w);

/* config.json (required) and summary.json (optional: *text NULL when the run
 * did not finish) as text, checked to be JSON; errors name file and line. */
AMP_API amp_status amp_run_read_config(const char *dir, char **text);
AMP_API amp_status amp_run_read_summary(const char *dir, char **text);
/* The first string stored under `key` anywhere in a JSON text (depth first),
 * copied into out (len bytes); 0 if there is none. */
AMP_API int amp_run_json_str(const char *json, const char *key, char *out, size_t len);

/* 1 if run directories a and b hold metrics.csv files that are
 * byte-identical apart from the loss_scale column: the same losses, gradient
 * norms, skipped and vanished updates at every step, i.e. the same training
 * (a static scale that changes nothing, an FP8 default spelled out); 0
 * otherwise, also when a file is missing. */
AMP_API int amp_run_identical(const char *a, const char *b);

/* The runs of a compare directory: every subfolder holding config.json or
 * metrics.csv, except report/. Names sorted; *names malloc'ed (free with
 * amp_run_names_free). */
AMP_API amp_status amp_run_list(const char *dir, char ***names, size_t *n);
AMP_API void amp_run_names_free(char **names, size_t n);

#endif
