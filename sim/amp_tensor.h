/* ampsim — tensors: roles, the registry (the one list of a model's tensors)
 * and every rounding of a tensor into its format.
 *
 * Contracts (docs/training.md):
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
#ifndef AMP_TENSOR_H
#define AMP_TENSOR_H

#include "amp_base.h"
#include "amp_block.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_scaler.h"

/* ---- roles and tensors ------------------------------------------------------ */
typedef enum amp_role {
    AMP_ROLE_WEIGHT, AMP_ROLE_ACT, AMP_ROLE_ACT_GRAD, AMP_ROLE_WEIGHT_GRAD,
    AMP_ROLE_MASTER, AMP_ROLE_OPTIM_STATE, AMP_ROLE_UPDATE, AMP_ROLE_COUNT
} amp_role;
AMP_API const char *amp_role_name(amp_role r);   /* "weight", "act", "act_grad", ... */

typedef enum amp_phase { AMP_PHASE_FORWARD, AMP_PHASE_BACKWARD, AMP_PHASE_UPDATE } amp_phase;
AMP_API const char *amp_phase_name(amp_phase p);

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
    amp_block_spec blk;          /* blk.cols > 0: a block-scaled tensor (NVFP4 GEMM
                                    operands): amp_tensor_round rounds it with
                                    amp_block_round over rows x last axis, fmt is
                                    the element format, data the dequantised values */
    int blk_sr;                  /* its elements are rounded stochastically */
    /* links (NULL when absent) */
    amp_tensor *grad;            /* weight -> weight_grad; act -> act_grad */
    amp_tensor *master;          /* weight -> fp32 master copy (amp policies) */
    amp_tensor *update;          /* weight -> its update (role update) */
    amp_tensor *state[3];        /* weight -> optimizer states (momentum / exp_avg, exp_avg_sq, kahan) */
    float *grad32;               /* weight: unscaled FP32 gradient, the optimizer's input */
    int decay;                   /* weight: AdamW weight decay applies */
    int borrowed;                /* data is another tensor's (amp_tensor_share): not freed */
};

/* The registry: the one list of every tensor of a model. Also carries the
 * per-step context of roundings (step, seed, which roles gather statistics,
 * the phase, the first non-finite value seen). */
typedef struct amp_tensors {
    amp_tensor **t;
    int n, cap;
    /* The gradient tensors (roles weight_grad and act_grad) in registry order:
     * their positions are the stable indices the loss scalers know them by. */
    amp_tensor **grads;
    int ngrads;
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
AMP_API uint64_t amp_tensor_name_key(const char *name);
AMP_API void amp_tensors_init(amp_tensors *r, uint64_t seed, amp_rounding mode, int sr_bits);
AMP_API void amp_tensors_free(amp_tensors *r);
/* Adds a zero-filled tensor; name must be unique (AMP_EINVAL otherwise). */
AMP_API amp_status amp_tensors_add(amp_tensors *r, const char *name, amp_role role, const amp_format *fmt,
                                   int ndim, const size_t *shape, amp_tensor **out);
AMP_API amp_tensor *amp_tensors_find(const amp_tensors *r, const char *name);
/* Starts step `step`: clears written flags, the non-finite record and the
 * statistics; roles in stats_roles gather statistics this step. */
AMP_API void amp_tensors_begin_step(amp_tensors *r, int64_t step, unsigned stats_roles);
/* Between micro-batches of one step (--dp): clears every 'written' flag, so the
 * next backward starts each gradient with a plain rounding; keeps the step's
 * statistics and non-finite record. */
AMP_API void amp_tensors_zero_grad(amp_tensors *r);
#define AMP_ROLES_LOGGED ((1u << AMP_ROLE_WEIGHT) | (1u << AMP_ROLE_ACT) | (1u << AMP_ROLE_ACT_GRAD) | \
                          (1u << AMP_ROLE_WEIGHT_GRAD) | (1u << AMP_ROLE_UPDATE))

/* t->data = round_{t->fmt}(src) (n floats; src may be t->data); with FP8
 * scaling (r->fp8) the dequantized round(src * scale) / scale instead.
 * Statistics (of the scaled input) are added to t->stats when t's role is due.
 * Records the first non-finite output of the step. */
AMP_API amp_status amp_tensor_round(amp_tensors *r, amp_tensor *t, const float *src);
/* amp_tensor_round(r, t, t->data) for a kernel that wrote t's float32 values
 * into t->data and counted how many are inf or NaN (nonfinite): where that
 * rounding is the identity (FP32 without rounding flags, no block format, no
 * statistics due, no layerwise rescaling) it only records the write and the
 * count, without a pass over the data; else it is amp_tensor_round. */
AMP_API amp_status amp_tensor_round_counted(amp_tensors *r, amp_tensor *t, size_t nonfinite);
/* Backward accumulation: first write of the step is amp_tensor_round(src);
 * later writes round src into the format, add it to t in double and round
 * again (as autograd sums two low-precision gradients). */
AMP_API amp_status amp_tensor_accum(amp_tensors *r, amp_tensor *t, const float *src);
/* Statistics of values already in the format (exact ops like ReLU): counts them
 * without changing them, and records non-finite values. */
AMP_API amp_status amp_tensor_observe(amp_tensors *r, amp_tensor *t);
/* The rounding options of t at the current step (SR key: seed^step, id, index). */
AMP_API amp_round_opts amp_tensor_opts(const amp_tensors *r, const amp_tensor *t);
/* 1 if statistics are due for t this step. */
AMP_API int amp_tensor_stats_due(const amp_tensors *r, const amp_tensor *t);
/* t's values live in owner's storage from now on (t's own is freed): for
 * tensors whose values are never needed at the same time, such as the
 * activation gradients inside different layers (each is dead once its layer's
 * backward is done; statistics are taken when a value is rounded). Same n
 * required (AMP_EINVAL otherwise). Internal (not exported). */
amp_status amp_tensor_share(amp_tensor *t, const amp_tensor *owner);
/* y[i] = round(f, o, (double)a[i] + (double)b[i]) for i < n, without
 * statistics: the bits of amp_round_f64 on the double sums (SR key index0 + i),
 * without a double array. y may alias a or b. Internal (not exported). */
amp_status amp_round_sum2(const amp_format *f, const amp_round_opts *o, const float *a, const float *b, float *y,
                          size_t n);

#endif
