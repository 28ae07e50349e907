/* ampsim — the run-directory writer. */
#ifndef AMP_RUNLOG_H
#define AMP_RUNLOG_H

#include <stdint.h>
#include "amp_base.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

/* ---- run directory -----------------------------------------------------------------
 * DIR/config.json, metrics.csv, tensors.csv, hist.csv, events.csv, summary.json and
 * (with --checkpoint-every) checkpoint.bin; columns documented in sim/runlog.c. */
/* The files of a run directory (read back by analysis/amp_rundir.h). */
#define AMP_RUN_CONFIG "config.json"
#define AMP_RUN_METRICS "metrics.csv"
#define AMP_RUN_TENSORS "tensors.csv"
#define AMP_RUN_HIST "hist.csv"
#define AMP_RUN_EVENTS "events.csv"
#define AMP_RUN_SUMMARY "summary.json"
#define AMP_RUN_CHECKPOINT "checkpoint.bin"
#define AMP_RUN_WHATIF "whatif.csv"            /* --what-if shadows (amp_whatif.h) */
/* Their CSV header lines. */
#define AMP_RUN_METRICS_COLS "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite,val_loss"
#define AMP_RUN_TENSORS_COLS "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan," \
                             "amax,amin_nonzero,rel_err"
#define AMP_RUN_HIST_COLS "step,tensor,binade,count"
#define AMP_RUN_EVENTS_COLS "step,event,tensor,detail"
#define AMP_RUN_WHATIF_COLS "step,scaler,scale,skipped,flushed,overflow,n"

typedef struct amp_runlog amp_runlog;
/* Creates DIR and opens metrics/tensors/hist/events CSVs under temporary names;
 * config_json (complete JSON text) is written atomically at once. */
AMP_API amp_status amp_runlog_open(amp_runlog **out, const char *dir, const char *config_json);
/* One metrics.csv row; val_loss NaN = empty cell (no evaluation at this step).
 * scale is the loss scale as the scaler of kind scale_kind holds it, printed by
 * amp_scaler_fmt_scale (a double for apex and deepspeed). */
AMP_API amp_status amp_runlog_metrics(amp_runlog *l, int64_t step, float loss, double scale,
                                      amp_scaler_kind scale_kind, int skipped,
                                      double grad_norm, float lr, uint64_t vanished, uint64_t nonfinite,
                                      double val_loss);
/* One row per logged tensor with valid stats (tensors.csv); hist rows if hist. */
AMP_API amp_status amp_runlog_tensors(amp_runlog *l, const amp_tensors *r, int64_t step, int tensors, int hist);
/* One tensor's rows from its statistics: a tensors.csv row if `tensors`, its
 * hist.csv rows if `hist` (what amp_runlog_tensors writes per tensor; for
 * callers without a registry). name is quoted if it holds ',' or '"';
 * AMP_EINVAL for a role out of range, an empty name or format, or no st. */
AMP_API amp_status amp_runlog_tensor(amp_runlog *l, int64_t step, const char *name, amp_role role,
                                     const char *format, const amp_stats *st, int tensors, int hist);
AMP_API amp_status amp_runlog_event(amp_runlog *l, int64_t step, const char *event, const char *tensor,
                                    const char *detail);
/* Checkpoint support. The CSV streams are metrics, tensors, hist,
 * events (in that order). amp_runlog_sync flushes them, publishes complete
 * copies under their final names (atomically: what a checkpoint refers to is
 * never half-written) and returns each stream's length in bytes, to be stored
 * in the checkpoint. amp_runlog_reopen (for --resume) starts new temporary
 * streams holding the first offsets[i] bytes of each published file and
 * continues appending; config.json is left as it is. */
#define AMP_RUNLOG_FILES 4
AMP_API amp_status amp_runlog_sync(amp_runlog *l, uint64_t offsets[AMP_RUNLOG_FILES]);
AMP_API amp_status amp_runlog_reopen(amp_runlog **out, const char *dir, const uint64_t offsets[AMP_RUNLOG_FILES]);
/* Commits every file (renames) and writes summary.json; or aborts all. */
AMP_API amp_status amp_runlog_close(amp_runlog *l, const char *summary_json);
AMP_API void amp_runlog_abort(amp_runlog *l);

#endif
