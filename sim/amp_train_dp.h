/* ampsim — emulated data parallelism for `ampsim train --dp R` (sim/train_dp.c).
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
 * mixed with the step and stream (tensor id << 32) + the library's offsets. */
#ifndef AMP_TRAIN_DP_H
#define AMP_TRAIN_DP_H

#include "amp_train.h"
#include "amp_allreduce.h"

/* The two halves of amp_train_step (sim/train.c) around forward/backward:
 * begin returns the loss scale of the step; end unscales, checks, runs the
 * scaler and the optimizer. */
float amp_train_step_begin(amp_model *m, amp_scaler *sc, int64_t step, unsigned stats_roles,
                           amp_step_info *info, amp_scaler_result *res);
amp_status amp_train_step_end(amp_model *m, amp_optim *opt, amp_scaler *sc, float scale,
                              amp_step_info *info, amp_scaler_result *res);

typedef struct amp_dp amp_dp;
/* Per-rank gradient buffers and the "<grad>.allreduce" pseudo-tensors of every
 * weight of m (R >= 2; m built with B/R rows). */
amp_status amp_dp_create(amp_dp **out, amp_model *m, int R, const amp_allreduce_opts *ao);
void amp_dp_free(amp_dp *dp);
/* One data-parallel step on the global batch b (b->B = R * m->B). */
amp_status amp_train_step_dp(amp_dp *dp, amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                             int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res);
/* tensors.csv/hist.csv rows "<grad>.allreduce" (when tensors/hist are due at
 * this step) and the events of the step's reductions: allreduce_overflow
 * (every step with an overflow in a quantization or partial sum) and, with
 * --allreduce-scale, allreduce_scale at steps with tensors.csv rows. */
amp_status amp_dp_log(amp_dp *dp, amp_runlog *l, int64_t step, int tensors, int hist);

#endif
