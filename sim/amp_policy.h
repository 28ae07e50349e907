/* ampsim — precision policies: which format each role and op uses (autocast
 * style), presets and the JSON schema. */
#ifndef AMP_POLICY_H
#define AMP_POLICY_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

/* ---- precision policies ------------------------------------------------------ */
typedef enum amp_op { AMP_OP_SOFTMAX, AMP_OP_LOG_SOFTMAX, AMP_OP_LAYER_NORM, AMP_OP_LOSS,
                      AMP_OP_REDUCTION, AMP_OP_COUNT } amp_op;
typedef enum amp_update_mode { AMP_UPD_ROUND, AMP_UPD_SR, AMP_UPD_KAHAN } amp_update_mode;
/* FP32-accumulated GEMMs: ampsim's fixed-order kernel (same bits on every CPU)
 * or OpenBLAS sgemm (sim/amp_gemm.h). */
typedef enum amp_gemm_kind { AMP_GEMM_REPRODUCIBLE, AMP_GEMM_BLAS } amp_gemm_kind;

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
    int acc_fp32;            /* 1: FP32 accumulation */
    amp_format acc;          /* narrow accumulator format (acc_fp32 == 0) */
    int acc_chunk;           /* promote the narrow sum to FP32 every N_C products (0: never) */
    unsigned fp32_ops;       /* bit (1u << amp_op): op computed and output in FP32 */
    amp_rounding mode;       /* rounding of tensors into formats */
    int sr_bits;
    unsigned op_flags;       /* flags for GEMM-operand casts (AMP_SATURATE for fp8) */
    amp_update_mode update;  /* how w + u is rounded when weights live in a narrow format */
    int fp8_scaling;         /* 1: GEMM operands scaled per tensor (fp8-hybrid) */
    int torch_cpu;           /* 1: GELU and LayerNorm follow the arithmetic of PyTorch's CPU
                              * kernels (bf16-amp-cpu): GELU on a narrow tensor rounds after
                              * every operation, LayerNorm takes float32 Welford moments and
                              * a fused affine; 0: both computed in higher precision and
                              * rounded once */
    amp_gemm_kind gemm;      /* FP32 GEMM kernel (reproducible by default) */
    /* NVFP4 training (the nvfp4 preset; sim/amp_nvfp4.h, docs/fp8.md): the
     * GEMM operands of every linear layer not named in nvfp4_bf16 are NVFP4
     * blocks (16x16 weights, 1x16 along the reduction dimension elsewhere) */
    int nvfp4;               /* 1: on */
    int nvfp4_rht;           /* 16x16 random Hadamard transform on both wgrad operands */
    int nvfp4_sr;            /* stochastic rounding of the gradient operands */
    char nvfp4_bf16[256];    /* layers kept in the policy's formats: comma-separated layer
                              * names or prefixes ("transformer.h.0."), or first / last */
} amp_policy;

/* Presets: fp32 fp16-amp bf16-amp bf16-amp-cpu fp16-pure bf16-pure fp8-e4m3
 * fp8-hybrid nvfp4 (nvfp4 takes the options :no-hadamard and :no-sr, e.g.
 * "nvfp4:no-hadamard:no-sr"). AMP_EINVAL naming the preset if unknown. */
AMP_API amp_status amp_policy_preset(const char *name, amp_policy *p);
/* A policy from JSON (see policy.c for the keys); unknown keys are AMP_EINVAL
 * naming the key. */
AMP_API amp_status amp_policy_from_json(const char *text, const char *what, amp_policy *p);
AMP_API amp_status amp_policy_load(const char *path, amp_policy *p);
/* The preset names, comma separated (help text). */
AMP_API const char *amp_policy_names(void);
/* The format op's output takes when its input is in `in`: FP32 if forced. */
AMP_API const amp_format *amp_policy_op_format(const amp_policy *p, amp_op op, const amp_format *in);
/* The policy as a JSON object (config.json); caller frees. */
AMP_API char *amp_policy_to_json(const amp_policy *p);

#endif
