/* ampsim — training: one step (forward -> zero_grad -> backward -> unscale and
 * check -> update -> scaler update), the emulated data-parallel step, and the
 * whole run of `ampsim train` (data, model, steps, logs, summary).
 *
 * The emulated data parallelism of `--dp R`:
 *
 * R ranks hold identical weights; --batch B stays the GLOBAL batch and rank r
 * gets the contiguous micro-batch of rows [r*B/R, (r+1)*B/R) of the global
 * batch of the step (the same rows a single-process run sees, split in order;
 * a DistributedSampler would interleave them, which changes nothing but which
 * rank holds which row). One model object with B/R rows plays every rank in
 * turn. A step:
 *   amp_train_step_begin (loss scale, statistics, gscales), cast the weights
 *   once; for r = 0..R-1: forward micro-batch r (loss_r), backward with the
 *   loss scale, copy every weight gradient (scaled, in the policy's wgrad
 *   format) into rank r's buffer, amp_tensors_zero_grad; then for every weight
 *   amp_allreduce (format, ring|tree, optional per-tensor scaling, mean over the
 *   R ranks) of the R buffers into weight->grad, and amp_train_step_end
 *   (unscale in FP32, found_inf on the REDUCED values, scaler, optimizer).
 * Logged loss: the mean of the R micro-batch losses, summed in double in rank
 * order and rounded once to float. Statistics of every gradient/activation
 * tensor add up over the R micro-batches (n = R x per-rank size).
 * SR: rank 0 uses the run seed, rank r > 0 the seed mixed with r, so ranks draw
 * independent random numbers; the all-reduce's own draws use a separate seed
 * mixed with the step and stream (tensor id << 32) + the library's offsets.
 */
#ifndef AMP_TRAIN_H
#define AMP_TRAIN_H

#include <stdint.h>
#include "amp_base.h"

#include <signal.h>
#include "amp_allreduce.h"
#include "amp_data.h"
#include "amp_model.h"
#include "amp_optim.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

/* ---- loss scaling hook -------------------------------------------------------------
 * The scalers of sim/amp_scaler.h plug in here: amp_train_step asks
 * amp_scaler_scale() before backward, multiplies the loss gradient by it,
 * unscales weight gradients in FP32 with amp_scaler_inv(), sets found_inf, and
 * passes the per-tensor gradient statistics (weight_grad and act_grad tensors
 * in registry order, stable indices) to amp_scaler_update(). Layer-wise
 * strategies (adaptive): gradient tensor i carries amp_scaler_tensor_scale(i)
 * (t->gscale) and is unscaled by it, for models with layerwise_ok (the MLP);
 * other models get the global scale amp_scaler_scale(). */

/* ---- training ---------------------------------------------------------------------- */
typedef struct amp_train_opts {
    const char *model;       /* "mlp" or "gpt" */
    const char *data;        /* "digits", "austen" or a path; NULL = the model's default */
    const char *precision;   /* preset name (ignored when policy_file) */
    const char *policy_file;
    const char *gemm;        /* --gemm reproducible|blas; NULL = the policy's (reproducible) */
    const char *scaler;      /* SPEC */
    int64_t steps;
    int batch;
    double lr;
    const char *optim;
    uint64_t seed;
    const char *init, *save;
    const char *save_grads;  /* the first step's weight gradients (amp_model_save_grads) */
    int shuffle;
    int64_t log_every, hist_every;
    int threads;
    int hidden, layers;      /* layers 0 = the model's default (mlp 2, gpt 4) */
    const char *act;         /* mlp: relu (default) or gelu */
    int heads, dim, ctx;     /* gpt */
    int64_t eval_every;      /* gpt: validation loss every K steps (0 = off) */
    int eval_batches;
    int64_t checkpoint_every; /* DIR/checkpoint.bin every K steps (0 = never) */
    int resume;              /* continue from DIR/checkpoint.bin if there is one */
    int force;               /* overwrite a finished run in DIR (else AMP_EINVAL) */
    /* Polled between steps: when it points at a nonzero value the run stops,
     * removes its temporaries (and the folder it created, unless a checkpoint
     * can resume it) and returns AMP_EINTR. NULL = never. */
    const volatile sig_atomic_t *stop;
    amp_nonfinite_policy on_nonfinite; /* --on-nonfinite continue|skip|stop */
    /* emulated data parallelism (sim/train_dp.c): dp ranks of batch/dp rows each;
     * NULL = option not given (ring, fp32, none when dp > 1) */
    int dp;                  /* 1 = the plain single-process step */
    const char *allreduce, *allreduce_format, *allreduce_scale;
    const char *out;
    int progress;            /* progress line on stderr */
    const char *whatif;      /* --what-if: NULL = off, "" = every loss scaler, else "SPEC;SPEC.." */
    const char *whatif_format; /* --what-if-format: shadows round into FMT (NULL = the wgrad format) */
} amp_train_opts;
AMP_API void amp_train_opts_defaults(amp_train_opts *o);

/* Result of one step. */
typedef struct amp_step_info {
    float loss, scale;           /* scale: the float32 loss scale of the step */
    double scale_held;           /* the same scale as the scaler holds it (amp_scaler_held) */
    amp_scaler_kind scale_kind;  /* the scaler's kind (AMP_SCALER_NONE without one) */
    int skipped;
    double grad_norm;
    uint64_t vanished;
    uint64_t nonfinite;
} amp_step_info;

/* forward -> zero_grad -> backward -> unscale/check -> update -> scaler update.
 * stats_roles as in amp_tensors_begin_step (gradient roles are added when the
 * scaler needs statistics). sc may be NULL (no scaling). *res gets the
 * scaler's result (events). AMP_ERUN when the scaler stops the run. */
AMP_API amp_status amp_train_step(amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                                  int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res);
/* The whole run of `ampsim train`: data, model, steps, logs, summary. */
AMP_API amp_status amp_train_run(const amp_train_opts *o);

/* ---- the data-parallel step (sim/train_dp.c) ------------------------------------ */
/* The two halves of amp_train_step (sim/train.c) around forward/backward:
 * begin returns the loss scale of the step; end unscales, checks, runs the
 * scaler and the optimizer. */
AMP_API float amp_train_step_begin(amp_model *m, amp_scaler *sc, int64_t step, unsigned stats_roles,
                                   amp_step_info *info, amp_scaler_result *res);
AMP_API amp_status amp_train_step_end(amp_model *m, amp_optim *opt, amp_scaler *sc, float scale,
                                      amp_step_info *info, amp_scaler_result *res);
/* sum over k of ((float)(g[k] * inv))^2 in double: one tensor's share of the
 * gradient norm (for the Python bindings, which unscale outside the C step).
 * Element k goes into the k % 8th of eight double partial sums, which are
 * then added in order: a fixed order (the same bits everywhere), not
 * amp_train_step_end's single chain; the two agree to about 1e-15 relative. */
AMP_API double amp_sumsq_unscaled_f32(const float *g, size_t n, float inv);
/* g[k] = (float)(g[k] * inv) in place (unchanged when inv is 1), in one pass
 * that also returns amp_sumsq_unscaled_f32(g, n, 1) of the results and sets
 * *nonfinite (if not NULL) to the number of inf and NaN results: a GradScaler's
 * unscaling, its inf check and the tensor's share of the norm together. */
AMP_API double amp_unscale_sumsq_f32(float *g, size_t n, float inv, size_t *nonfinite);
/* amp_unscale_sumsq_f32 over k arrays in one call (a step's gradients):
 * g[j][0..n[j]) unscaled in place, sq[j] and nonfinite[j] set as one call
 * per array sets them. */
AMP_API void amp_unscale_sumsq_f32_many(size_t k, float *const *g, const size_t *n, float inv, double *sq,
                                        size_t *nonfinite);

typedef struct amp_dp amp_dp;
/* Per-rank gradient buffers and the "<grad>.allreduce" pseudo-tensors of every
 * weight of m (R >= 2; m built with B/R rows). */
AMP_API amp_status amp_dp_create(amp_dp **out, amp_model *m, int R, const amp_allreduce_opts *ao);
AMP_API void amp_dp_free(amp_dp *dp);
/* One data-parallel step on the global batch b (b->B = R * m->B). */
AMP_API amp_status amp_train_step_dp(amp_dp *dp, amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                                     int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res);
/* tensors.csv/hist.csv rows "<grad>.allreduce" (when tensors/hist are due at
 * this step) and the events of the step's reductions: allreduce_overflow
 * (every step with an overflow in a quantization or partial sum) and, with
 * --allreduce-scale, allreduce_scale at steps with tensors.csv rows. */
AMP_API amp_status amp_dp_log(amp_dp *dp, amp_runlog *l, int64_t step, int tensors, int hist);

/* ---- evaluation (sim/eval.c) ------------------------------------------------------- */
/* Mean loss over `batches` fixed validation batches (batch i =
 * amp_austen_batch(d, AMP_SPLIT_VAL, seed, i, B, T)), forward only. Starts
 * step `step` without statistics (amp_tensors_begin_step(reg, step, 0)) and
 * casts the weights itself: call it before amp_train_step of that step. */
AMP_API amp_status amp_gpt_eval(amp_model *m, const amp_austen *d, uint64_t seed, int64_t step,
                                int batches, double *val_loss);

#endif
