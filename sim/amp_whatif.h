/* ampsim — `--what-if`: shadow loss scalers that ride along a training run.
 *
 * One shadow amp_scaler per strategy (by default every loss scaler kind with
 * its default SPEC: none, static:65536 (static needs a scale), torch, apex,
 * deepspeed, megatron, keras, adaptive, underflow; or the SPECs the user
 * lists, separated by ';'). Once per training step the trainer hands over the
 * step's weight gradients as unscaled FP32 values (the t->grad32 buffers
 * after unscale) and their format (the policy's wgrad format). For each
 * shadow scaler, at its current scale S (per tensor for
 * layer-wise strategies, amp_scaler_tensor_scale):
 *     x = S * g            (float32 product)
 *     amp_round_f32(x -> gradient format) with statistics
 *     found_inf = any value that overflows to inf or is non-finite
 *     amp_scaler_update(found_inf, per-tensor statistics when the strategy
 *                       reads them: adaptive, underflow)
 * so each shadow's scale follows the trajectory that system would have taken.
 * On logged steps one CSV row per shadow:
 *     step,scaler,scale,skipped,flushed,overflow,n
 *   scale    the shadow's global scale used at this step (%.9g)
 *   skipped  1 if that system would have skipped this step
 *   flushed  weight-gradient values nonzero before rounding, zero after
 *            (class flushed) at that scale, summed over the weight gradients
 *   overflow values beyond the format's range at that scale (classes
 *            overflow + saturated) plus values already non-finite (inf/NaN in
 *            the run's gradient, or S*g overflowing float32)
 *   n        weight-gradient values (the same for every shadow)
 *   scaler   the SPEC as given (CSV-quoted when it holds a comma)
 * A shadow whose rule stops the run (deepspeed at its minimum scale with
 * raise=1) writes a row at the step it stops (skipped 1), logged or not, and no
 * rows afterwards.
 *
 * WHAT THIS APPROXIMATES. The shadows see the run's actual FP32 weight
 * gradients, rescaled by their own scale and rounded once into the gradient
 * format. They do not see gradients recomputed through a low-precision
 * backward pass at their scale: in a real run at scale S, activation gradients
 * upstream would be rounded (and flushed or overflowed) at S too, so the
 * weight gradients would differ, and the weights themselves would follow the
 * shadow's own skipped/applied steps. What the shadows do capture exactly is
 * each rule's reaction to the gradient magnitudes of this run. Values the run
 * itself already flushed are zero in grad32 and stay zero at every scale; an
 * inf/NaN in the run's gradient is found_inf for every shadow.
 * The run itself is unchanged: the shadows read grad32 and write only their
 * own buffers, their own statistics and whatif.csv (metrics.csv and the other
 * files of the run are byte-identical with and without --what-if). */
#ifndef AMP_WHATIF_H
#define AMP_WHATIF_H

#include <stdio.h>
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_runlog.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

/* The default list: every loss scaler kind with its default SPEC. */
#define AMP_WHATIF_DEFAULT "none;static:65536;torch;apex;deepspeed;megatron;keras;adaptive;underflow"
#define AMP_WHATIF_HEADER AMP_RUN_WHATIF_COLS "\n"

/* One weight gradient of a step. */
typedef struct amp_whatif_grad {
    const char *name;          /* may be NULL */
    const float *g;            /* n unscaled FP32 gradient values (not modified) */
    size_t n;
    const amp_format *fmt;     /* the gradient format (policy wgrad) */
    amp_round_opts ro;         /* rounding options of that gradient's rounding */
} amp_whatif_grad;

/* The last step of one shadow (for tests and summaries). */
typedef struct amp_whatif_row {
    int64_t step;
    float scale;               /* global scale used at this step */
    float scale_after;
    int skipped;
    int stopped;               /* the rule stopped the run (at this step or earlier) */
    int found_inf;
    uint64_t flushed, overflow, n;
} amp_whatif_row;

typedef struct amp_whatif amp_whatif;

/* Creates the shadows from `specs` ("SPEC;SPEC;..."; NULL or "" = the default
 * list). Each SPEC must be a loss scaler (FP8 strategies are AMP_EINVAL), and
 * no SPEC may appear twice; messages name the SPEC ("--what-if SPEC: ..."). */
AMP_API amp_status amp_whatif_create(amp_whatif **out, const char *specs);
/* Frees (aborts an open whatif.csv). NULL is a no-op. */
AMP_API void amp_whatif_free(amp_whatif *w);
AMP_API size_t amp_whatif_count(const amp_whatif *w);
/* Shadow i: its SPEC as given, its scaler state, its last row. */
AMP_API const char *amp_whatif_name(const amp_whatif *w, size_t i);
AMP_API const amp_scaler *amp_whatif_scaler(const amp_whatif *w, size_t i);
AMP_API const amp_whatif_row *amp_whatif_last(const amp_whatif *w, size_t i);

/* One training step (call once per step, in step order, with the same
 * gradient list every step: tensor i keeps its index). Rows go to `out` when
 * `logged` (and the row of a stop, see above); out NULL = the file of
 * amp_whatif_open, or nowhere. The thread's error message is left as it was
 * (a shadow's stop is not an error of the run). AMP_ENOMEM / AMP_EIO /
 * AMP_EINVAL (bad rounding options) only. */
AMP_API amp_status amp_whatif_step(amp_whatif *w, int64_t step, const amp_whatif_grad *g, size_t n_grads,
                                   int logged, FILE *out);
/* The same for a model registry: every tensor of role weight with a gradient
 * and grad32, in registry order; g = w->grad32, fmt = w->grad->fmt, rounding
 * options amp_tensor_opts(r, w->grad). Call after amp_train_step has unscaled
 * (grad32 holds this step's gradients). */
AMP_API amp_status amp_whatif_step_reg(amp_whatif *w, const amp_tensors *r, int64_t step, int logged);

/* Rounds every gradient into `f` instead of the format each amp_whatif_grad
 * (or the registry's gradient tensor) names; NULL restores that. Useful on a
 * run whose gradients lose nothing themselves (an fp32 run: "what would fp16
 * gradients have flushed under each scaler"). The rounding options keep their
 * mode; saturation follows the caller's flags. */
AMP_API void amp_whatif_set_format(amp_whatif *w, const amp_format *f);

/* sizeof of a public struct of this header by name ("amp_whatif_grad",
 * "amp_whatif_row"), 0 for any other name: for foreign-function bindings to
 * check their struct mirrors. */
AMP_API size_t amp_whatif_abi_size(const char *type);

/* Writes AMP_WHATIF_HEADER. */
AMP_API amp_status amp_whatif_write_header(FILE *out);
/* amp_whatif_create + DIR/whatif.csv opened under a temporary name (sim/io.c),
 * header written. DIR is created if missing. */
AMP_API amp_status amp_whatif_open(amp_whatif **out, const char *dir, const char *specs);
/* Commits whatif.csv (renamed to its final name) and frees w. On failure the
 * temporary is removed and AMP_EIO names the file; w is freed either way. */
AMP_API amp_status amp_whatif_close(amp_whatif *w);

#endif
