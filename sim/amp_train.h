/* ampsim — training emulation: tensors, precision policies, GEMM, layers,
 * models, optimizers, the training step and the run directory writer.
 *
 * Contracts (DESIGN §3):
 * - Every amp_tensor holds float32 values exactly representable in its format
 *   t->fmt (exceptions: FP8-scaled operands hold the dequantized q * scale_inv;
 *   gradients hold true gradient x t->gscale, the loss scale). Every rounding of a tensor into its format goes through
 *   amp_tensor_round() (-> amp_round_f32), which adds the fused statistics to
 *   t->stats when statistics are due at this step, so tensors.csv / hist.csv
 *   come from the rounding kernel's counters, never from a second pass.
 * - ONE list of tensors (amp_tensors): logging, the optimizer and checkpoints
 *   iterate it. Links between tensors (weight -> grad, master, update, states)
 *   are pointers inside the tensors, not parallel lists.
 * - Stochastic rounding is keyed by (seed mixed with the step, tensor id as the
 *   stream, element index): results never depend on the thread count.
 * - Layers are forward/backward pairs (llm.c style): outputs first, then
 *   inputs; backward accumulates into gradients (amp_tensor_accum).
 * Dimensions: B batch, I inputs, O outputs, C classes, H hidden. */
#ifndef AMP_TRAIN_H
#define AMP_TRAIN_H

#include <stdio.h>
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_scaler.h"

/* ---- roles and tensors ------------------------------------------------------ */
typedef enum amp_role {
    AMP_ROLE_WEIGHT, AMP_ROLE_ACT, AMP_ROLE_ACT_GRAD, AMP_ROLE_WEIGHT_GRAD,
    AMP_ROLE_MASTER, AMP_ROLE_OPTIM_STATE, AMP_ROLE_UPDATE, AMP_ROLE_COUNT
} amp_role;
const char *amp_role_name(amp_role r);   /* "weight", "act", "act_grad", ... */

typedef enum amp_phase { AMP_PHASE_FORWARD, AMP_PHASE_BACKWARD, AMP_PHASE_UPDATE } amp_phase;
const char *amp_phase_name(amp_phase p);

#define AMP_TENSOR_MAXDIM 4
#define AMP_TENSOR_NAME 96

typedef struct amp_tensor amp_tensor;
struct amp_tensor {
    char name[AMP_TENSOR_NAME];  /* PyTorch style: fc1.weight, fc1.out, fc1.out.grad */
    amp_role role;
    int id;                      /* position in the registry: SR stream, log order */
    int ndim;
    size_t shape[AMP_TENSOR_MAXDIM];
    size_t n;                    /* elements */
    amp_format fmt;              /* every value of data is a value of fmt */
    unsigned rnd_flags;          /* extra rounding flags (AMP_SATURATE for fp8 casts) */
    float *data;                 /* n floats, owned (64-byte aligned) */
    int log;                     /* appears in tensors.csv / hist.csv */
    int written;                 /* set by amp_tensor_round / accum; cleared per step */
    amp_stats *stats;            /* this step's fused counters (NULL until needed) */
    int stats_valid;             /* stats hold data of the current step */
    float scale;                 /* FP8 scaling: the scale of the last quantize (1 = none) */
    float gscale;                /* gradients: data = true gradient x gscale (the loss
                                    scale, or this tensor's own under layer-wise scaling) */
    /* links (NULL when absent) */
    amp_tensor *grad;            /* weight -> weight_grad; act -> act_grad */
    amp_tensor *master;          /* weight -> fp32 master copy (amp policies) */
    amp_tensor *update;          /* weight -> its update (role update) */
    amp_tensor *state[3];        /* weight -> optimizer states (momentum / exp_avg, exp_avg_sq, kahan) */
    float *grad32;               /* weight: unscaled FP32 gradient, the optimizer's input */
    int decay;                   /* weight: AdamW weight decay applies */
};

/* The registry: the one list of every tensor of a model. Also carries the
 * per-step context of roundings (step, seed, which roles gather statistics,
 * the phase, the first non-finite value seen). */
typedef struct amp_tensors {
    amp_tensor **t;
    int n, cap;
    int64_t step;
    uint64_t seed;
    amp_rounding mode;           /* policy rounding mode for tensor roundings */
    int sr_bits;
    unsigned stats_roles;        /* bit (1u << role): gather statistics this step */
    amp_phase phase;
    /* first non-finite output of this step: tensor or NULL */
    amp_tensor *nonfinite_tensor;
    amp_phase nonfinite_phase;
    uint64_t nonfinite_count;
    /* FP8 per-tensor scaling (fp8-hybrid): when set, every rounding into a
     * format of at most 8 bits goes through amp_fp8_quantize (role: weight ->
     * WEIGHT, act_grad -> GRAD, else ACT; stream = tensor id), and the tensor
     * then holds the dequantized values q * scale_inv (t->scale = the scale). */
    amp_fp8_scaler *fp8;
    /* Layer-wise loss scaling: when set, a rounding into a gradient tensor t
     * (act_grad, weight_grad) whose values were computed from gradients
     * carrying the scale src_gscale first multiplies them by t->gscale /
     * src_gscale. Backward kernels set src_gscale to their input gradient's
     * gscale before rounding (models declare support: amp_model.layerwise_ok). */
    int layerwise;
    float src_gscale;
} amp_tensors;

/* A random-stream key from a tensor's name (FNV-1a): initial weights drawn
 * with it do not depend on the policy (registry ids do: .master and operand
 * copies), so every precision policy starts from the same weights. */
uint64_t amp_tensor_name_key(const char *name);
void amp_tensors_init(amp_tensors *r, uint64_t seed, amp_rounding mode, int sr_bits);
void amp_tensors_free(amp_tensors *r);
/* Adds a zero-filled tensor; name must be unique (AMP_EINVAL otherwise). */
amp_status amp_tensors_add(amp_tensors *r, const char *name, amp_role role, const amp_format *fmt,
                           int ndim, const size_t *shape, amp_tensor **out);
amp_tensor *amp_tensors_find(const amp_tensors *r, const char *name);
/* Starts step `step`: clears written flags, the non-finite record and the
 * statistics; roles in stats_roles gather statistics this step. */
void amp_tensors_begin_step(amp_tensors *r, int64_t step, unsigned stats_roles);
/* Between micro-batches of one step (--dp): clears every 'written' flag, so the
 * next backward starts each gradient with a plain rounding; keeps the step's
 * statistics and non-finite record. */
void amp_tensors_zero_grad(amp_tensors *r);
#define AMP_ROLES_LOGGED ((1u << AMP_ROLE_WEIGHT) | (1u << AMP_ROLE_ACT) | (1u << AMP_ROLE_ACT_GRAD) | \
                          (1u << AMP_ROLE_WEIGHT_GRAD) | (1u << AMP_ROLE_UPDATE))

/* t->data = round_{t->fmt}(src) (n floats; src may be t->data); with FP8
 * scaling (r->fp8) the dequantized round(src * scale) / scale instead.
 * Statistics (of the scaled input) are added to t->stats when t's role is due.
 * Records the first non-finite output of the step. */
amp_status amp_tensor_round(amp_tensors *r, amp_tensor *t, const float *src);
/* Backward accumulation: first write of the step is amp_tensor_round(src);
 * later writes round src into the format, add it to t in double and round
 * again (as autograd sums two low-precision gradients). */
amp_status amp_tensor_accum(amp_tensors *r, amp_tensor *t, const float *src);
/* Statistics of values already in the format (exact ops like ReLU): counts them
 * without changing them, and records non-finite values. */
amp_status amp_tensor_observe(amp_tensors *r, amp_tensor *t);
/* The rounding options of t at the current step (SR key: seed^step, id, index). */
amp_round_opts amp_tensor_opts(const amp_tensors *r, const amp_tensor *t);
/* 1 if statistics are due for t this step. */
int amp_tensor_stats_due(const amp_tensors *r, const amp_tensor *t);

/* ---- precision policies ------------------------------------------------------ */
typedef enum amp_op { AMP_OP_SOFTMAX, AMP_OP_LOG_SOFTMAX, AMP_OP_LAYER_NORM, AMP_OP_LOSS,
                      AMP_OP_REDUCTION, AMP_OP_COUNT } amp_op;
typedef enum amp_update_mode { AMP_UPD_ROUND, AMP_UPD_SR, AMP_UPD_KAHAN } amp_update_mode;

typedef struct amp_policy {
    char name[64];
    amp_format fwd_in;       /* forward GEMM operands: activations and (cast) weights */
    amp_format bwd_in;       /* backward GEMM operands that hold gradients */
    amp_format act;          /* GEMM outputs / activations */
    amp_format grad;         /* activation gradients (loss gradient, backward GEMM outputs) */
    amp_format wgrad;        /* weight gradients as the backward GEMMs produce them */
    amp_format weight;       /* weights as the GEMMs see them (the cast cache) */
    amp_format master;       /* master weights (== weight when !has_master) */
    amp_format optim;        /* optimizer states */
    int has_master;          /* weights cast once per step from an FP32 master */
    int acc_fp32;            /* 1: FP32 accumulation (OpenBLAS sgemm) */
    amp_format acc;          /* narrow accumulator format (acc_fp32 == 0) */
    int acc_chunk;           /* promote the narrow sum to FP32 every N_C products (0: never) */
    unsigned fp32_ops;       /* bit (1u << amp_op): op computed and output in FP32 */
    amp_rounding mode;       /* rounding of tensors into formats */
    int sr_bits;
    unsigned op_flags;       /* flags for GEMM-operand casts (AMP_SATURATE for fp8) */
    amp_update_mode update;  /* how w + u is rounded when weights live in a narrow format */
    int fp8_scaling;         /* 1: GEMM operands scaled per tensor (fp8-hybrid) */
} amp_policy;

/* Presets: fp32 fp16-amp bf16-amp bf16-amp-cpu fp16-pure bf16-pure fp8-e4m3
 * fp8-hybrid. AMP_EINVAL naming the preset if unknown. */
amp_status amp_policy_preset(const char *name, amp_policy *p);
/* A policy from JSON (see policy.c for the keys); unknown keys are AMP_EINVAL
 * naming the key. */
amp_status amp_policy_from_json(const char *text, const char *what, amp_policy *p);
amp_status amp_policy_load(const char *path, amp_policy *p);
/* The preset names, comma separated (help text). */
const char *amp_policy_names(void);
/* The format op's output takes when its input is in `in`: FP32 if forced. */
const amp_format *amp_policy_op_format(const amp_policy *p, amp_op op, const amp_format *in);
/* The policy as a JSON object (config.json); caller frees. */
char *amp_policy_to_json(const amp_policy *p);

/* ---- GEMM ------------------------------------------------------------------------
 * C[M,N] = A'[M,K] B'[K,N] + (beta ? C : 0), A' = A or A^T (ta), B' likewise.
 * Operands must already hold values of their formats (products are exact in
 * double). FP32 accumulation uses OpenBLAS sgemm (1 thread, fixed order);
 * a narrow accumulator rounds the running sum to pol->acc after each product
 * and adds it to an FP32 sum every acc_chunk products. Row-major. */
typedef struct amp_gemm_cfg {
    int acc_fp32;
    amp_format acc;
    int acc_chunk;
    amp_round_opts ro;
} amp_gemm_cfg;
amp_gemm_cfg amp_gemm_cfg_of(const amp_policy *p);
void amp_gemm(const amp_gemm_cfg *g, int ta, int tb, int M, int N, int K,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* Sets OpenBLAS to one thread (results never depend on --threads). */
void amp_gemm_init(void);

/* ---- layers -------------------------------------------------------------------- */
/* The context a layer needs: registry (roundings, stats), policy, scratch. */
typedef struct amp_ctx {
    amp_tensors *reg;
    const amp_policy *pol;
    amp_gemm_cfg gemm;
    float *scratch;          /* FP32 GEMM results before their rounding */
    size_t scratch_n;
} amp_ctx;
amp_status amp_ctx_init(amp_ctx *cx, amp_tensors *reg, const amp_policy *pol);
void amp_ctx_free(amp_ctx *cx);
/* scratch of at least n floats (grown as needed). */
amp_status amp_ctx_scratch(amp_ctx *cx, size_t n, float **out);

/* Linear: out[B,O] = act( in_op[B,I] @ w[O,I]^T + b[O] ), rounded once into out->fmt.
 * in_op is `in` when in->fmt is the forward operand format, else a registered
 * operand copy "<name>.input" (role act). gout_op likewise for the gradient. */
typedef struct amp_linear {
    amp_tensor *w, *b;       /* weight [O,I], bias [O] (NULL: no bias) */
    amp_tensor *in, *in_op;  /* input [B,I] and the operand the GEMM sees */
    amp_tensor *out;         /* [B,O] */
    amp_tensor *gout_op;     /* out->grad as a backward operand (NULL: same) */
    int B, I, O;
} amp_linear;
/* Registers <name>.weight, .bias, .out (+ grads, operand copies). in->grad may be NULL. */
amp_status amp_linear_init(amp_ctx *cx, amp_linear *l, const char *name, amp_tensor *in, int O, int bias);
amp_status amp_linear_forward(amp_ctx *cx, amp_linear *l);
amp_status amp_linear_backward(amp_ctx *cx, amp_linear *l);

/* ReLU: out = max(in, 0), same format as in (exact); backward dIn += dOut * (out > 0). */
amp_status amp_relu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in);
amp_status amp_relu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *out);

/* GELU (tanh approximation), output in the input's format; backward needs the input. */
amp_status amp_act_gelu_forward(amp_ctx *cx, amp_tensor *out, const amp_tensor *in);
amp_status amp_act_gelu_backward(amp_ctx *cx, amp_tensor *din, const amp_tensor *dout, const amp_tensor *in);
/* The MLP's activation, by kind. */
typedef enum amp_act { AMP_ACT_RELU, AMP_ACT_GELU } amp_act;
amp_status amp_act_parse(const char *name, amp_act *out);
const char *amp_act_name(amp_act a);
amp_status amp_act_forward(amp_ctx *cx, amp_act a, amp_tensor *out, const amp_tensor *in);
amp_status amp_act_backward(amp_ctx *cx, amp_act a, amp_tensor *din, const amp_tensor *dout,
                            const amp_tensor *in, const amp_tensor *out);

/* Softmax cross-entropy, mean over B rows of C logits, in FP32/double
 * (every loss is FP32 under autocast). probs [B,C] keeps the softmax for the
 * backward. Backward: dlogits = (p - onehot(y)) * (scale / B), rounded into
 * logits->grad's format (the loss gradient in the low format). */
amp_status amp_xent_forward(float *loss, float *probs, const amp_tensor *logits, const int32_t *y, int B, int C);
amp_status amp_xent_backward(amp_ctx *cx, amp_tensor *dlogits, const float *probs, const int32_t *y,
                             int B, int C, float scale);

/* ---- data ---------------------------------------------------------------------- */
typedef struct amp_batch {
    int B;                   /* rows */
    int D;                   /* features per row (x is [B,D]) or tokens per row */
    const float *x;          /* [B,D] inputs (NULL for token models) */
    const int32_t *tok;      /* [B,D] token ids (NULL for feature models) */
    const int32_t *y;        /* [B] labels or [B,D] targets */
} amp_batch;

typedef struct amp_digits {
    int N;                   /* rows (1797) */
    float *x;                /* [N,64] pixel/16 */
    int32_t *y;              /* [N] */
    char sha256[65];
    char path[4096];
    /* batch buffers (for batches of B rows) */
    int B;
    float *bx;
    int32_t *by;
    int *perm;               /* current epoch's permutation */
    int64_t perm_epoch;
} amp_digits;
/* Reads the digits CSV (.gz or plain): 65 ints per row, pixels 0..16, label
 * 0..9; anything else is AMP_EINVAL naming file:line. */
amp_status amp_digits_load(const char *path, amp_digits *d);
void amp_digits_free(amp_digits *d);
/* Batch of step s: shuffle == 0: rows (B*s + j) mod N; else position p = B*s+j
 * is element p mod N of a permutation of epoch p / N drawn from (seed, epoch). */
amp_status amp_digits_batch(amp_digits *d, int64_t step, int B, int shuffle, uint64_t seed, amp_batch *out);
/* Where "digits" lives: $AMP_DATADIR, $AMP_SRCDIR/datasets, ./datasets, next to the binary. */
amp_status amp_data_find(const char *file, char *out, size_t len);
/* SHA-256 of a file as 64 hex digits. */
amp_status amp_sha256_file(const char *path, char hex[65]);

/* ---- models ---------------------------------------------------------------------
 * A model registers its tensors in m->reg and runs forward (loss of a batch,
 * activations kept) and backward (gradients of the loss times loss_scale). */
typedef struct amp_model amp_model;
struct amp_model {
    char kind[16];
    amp_tensors reg;
    amp_policy pol;
    amp_ctx cx;
    int B;
    void *impl;
    amp_status (*forward)(amp_model *m, const amp_batch *b, float *loss);
    amp_status (*backward)(amp_model *m, const amp_batch *b, float loss_scale);
    void (*destroy)(amp_model *m);   /* frees impl */
    int layerwise_ok;        /* backward sets reg.src_gscale (layer-wise loss scaling) */
};
/* MLP 64-H-...-H-10 with `layers` linear layers and ReLU between them. Weights
 * drawn like PyTorch's nn.Linear default (U(-1/sqrt(I), 1/sqrt(I))) from seed. */
amp_status amp_mlp_create(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                          int classes, uint64_t seed);
/* The same with another activation (tensors <act>1.out, ...: relu1.out or gelu1.out). */
amp_status amp_mlp_create_act(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                              int classes, uint64_t seed, amp_act act);
void amp_model_free(amp_model *m);
/* --init: every weight (master if any) from a tensor file with the model's
 * names and shapes; AMP_EINVAL naming the tensor otherwise. --save: the same. */
amp_status amp_model_load(amp_model *m, const char *path);
amp_status amp_model_save(const amp_model *m, const char *path);
/* Weights (role weight) cast from their masters, once per step (cast cache). */
amp_status amp_model_cast_weights(amp_model *m);

/* ---- optimizers ------------------------------------------------------------------- */
typedef enum amp_optim_kind { AMP_OPT_SGD, AMP_OPT_MOMENTUM, AMP_OPT_ADAMW } amp_optim_kind;
/* What a step does when its loss or weight gradients are not finite
 * (--on-nonfinite): continue (the loss scaler alone decides whether the step is
 * skipped, as in the frameworks), skip (never apply such an update), stop (end
 * the run: AMP_ERUN, exit 1). A loss scale that reaches 0 also stops under stop. */
typedef enum amp_nonfinite_policy { AMP_NF_CONTINUE, AMP_NF_SKIP, AMP_NF_STOP } amp_nonfinite_policy;
amp_status amp_nonfinite_parse(const char *s, amp_nonfinite_policy *out);

typedef struct amp_optim {
    amp_optim_kind kind;
    float lr, momentum, beta1, beta2, eps, weight_decay;
    int64_t t;               /* updates applied (AdamW bias correction) */
    amp_nonfinite_policy on_nonfinite;   /* see above (default continue) */
} amp_optim;
amp_status amp_optim_parse(const char *name, amp_optim_kind *k);
void amp_optim_defaults(amp_optim *o, amp_optim_kind k, float lr);
/* Registers the states (role optim_state) and update tensors of every weight. */
amp_status amp_optim_attach(amp_optim *o, amp_model *m);
/* One update from every weight's grad32. Returns the number of updates that
 * vanished (u != 0 but the stored weight did not change) in *vanished. */
amp_status amp_optim_step(amp_optim *o, amp_model *m, uint64_t *vanished);

/* ---- loss scaling hook -------------------------------------------------------------
 * The scalers of sim/amp_scaler.h plug in here: amp_train_step asks
 * amp_scaler_scale() before backward, multiplies the loss gradient by it,
 * unscales weight gradients in FP32 with amp_scaler_inv(), sets found_inf, and
 * passes the per-tensor gradient statistics (weight_grad and act_grad tensors
 * in registry order, stable indices) to amp_scaler_update(). Layer-wise
 * strategies (adaptive): gradient tensor i carries amp_scaler_tensor_scale(i)
 * (t->gscale) and is unscaled by it, for models with layerwise_ok (the MLP);
 * other models get the global scale amp_scaler_scale(). */

/* ---- run directory -----------------------------------------------------------------
 * DIR/config.json, metrics.csv, tensors.csv, hist.csv, events.csv, summary.json and
 * (with --checkpoint-every) checkpoint.bin; columns documented in sim/runlog.c. */
typedef struct amp_runlog amp_runlog;
/* Creates DIR and opens metrics/tensors/hist/events CSVs under temporary names;
 * config_json (complete JSON text) is written atomically at once. */
amp_status amp_runlog_open(amp_runlog **out, const char *dir, const char *config_json);
/* One metrics.csv row; val_loss NaN = empty cell (no evaluation at this step). */
amp_status amp_runlog_metrics(amp_runlog *l, int64_t step, float loss, float scale, int skipped,
                              double grad_norm, float lr, uint64_t vanished, uint64_t nonfinite,
                              double val_loss);
/* One row per logged tensor with valid stats (tensors.csv); hist rows if hist. */
amp_status amp_runlog_tensors(amp_runlog *l, const amp_tensors *r, int64_t step, int tensors, int hist);
/* One tensor's rows from its statistics: a tensors.csv row if `tensors`, its
 * hist.csv rows if `hist` (what amp_runlog_tensors writes per tensor; for
 * callers without a registry). name is quoted if it holds ',' or '"';
 * AMP_EINVAL for a role out of range, an empty name or format, or no st. */
amp_status amp_runlog_tensor(amp_runlog *l, int64_t step, const char *name, amp_role role,
                             const char *format, const amp_stats *st, int tensors, int hist);
amp_status amp_runlog_event(amp_runlog *l, int64_t step, const char *event, const char *tensor,
                            const char *detail);
/* Checkpoint support (issue 8). The CSV streams are metrics, tensors, hist,
 * events (in that order). amp_runlog_sync flushes them, publishes complete
 * copies under their final names (atomically: what a checkpoint refers to is
 * never half-written) and returns each stream's length in bytes, to be stored
 * in the checkpoint. amp_runlog_reopen (for --resume) starts new temporary
 * streams holding the first offsets[i] bytes of each published file and
 * continues appending; config.json is left as it is. */
#define AMP_RUNLOG_FILES 4
amp_status amp_runlog_sync(amp_runlog *l, uint64_t offsets[AMP_RUNLOG_FILES]);
amp_status amp_runlog_reopen(amp_runlog **out, const char *dir, const uint64_t offsets[AMP_RUNLOG_FILES]);
/* Commits every file (renames) and writes summary.json; or aborts all. */
amp_status amp_runlog_close(amp_runlog *l, const char *summary_json);
void amp_runlog_abort(amp_runlog *l);

/* ---- training ---------------------------------------------------------------------- */
typedef struct amp_train_opts {
    const char *model;       /* "mlp" or "gpt" */
    const char *data;        /* "digits", "austen" or a path; NULL = the model's default */
    const char *precision;   /* preset name (ignored when policy_file) */
    const char *policy_file;
    const char *scaler;      /* SPEC */
    int64_t steps;
    int batch;
    double lr;
    const char *optim;
    uint64_t seed;
    const char *init, *save;
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
void amp_train_opts_defaults(amp_train_opts *o);

/* Result of one step. */
typedef struct amp_step_info {
    float loss, scale;
    int skipped;
    double grad_norm;
    uint64_t vanished;
    uint64_t nonfinite;
} amp_step_info;

/* forward -> zero_grad -> backward -> unscale/check -> update -> scaler update.
 * stats_roles as in amp_tensors_begin_step (gradient roles are added when the
 * scaler needs statistics). sc may be NULL (no scaling). *res gets the
 * scaler's result (events). AMP_ERUN when the scaler stops the run. */
amp_status amp_train_step(amp_model *m, amp_optim *opt, amp_scaler *sc, const amp_batch *b,
                          int64_t step, unsigned stats_roles, amp_step_info *info, amp_scaler_result *res);
/* The whole run of `ampsim train`: data, model, steps, logs, summary. */
amp_status amp_train_run(const amp_train_opts *o);

/* ---- benchmarks (wired into `ampsim bench gemm|train`) ------------------------------ */
int amp_bench_gemm(FILE *out, int csv);
int amp_bench_train(FILE *out, int csv, const char *model);

#endif
