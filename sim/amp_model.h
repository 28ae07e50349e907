/* ampsim — models: the interface every model implements, the MLP and the GPT. */
#ifndef AMP_MODEL_H
#define AMP_MODEL_H

#include "amp_base.h"
#include "amp_data.h"
#include "amp_layers.h"
#include "amp_policy.h"
#include "amp_tensor.h"

/* ---- models ---------------------------------------------------------------------
 * A model registers its tensors in m->reg and runs forward (loss of a batch,
 * activations kept) and backward (gradients of the loss times loss_scale). */
typedef struct amp_model amp_model;
struct amp_model {
    char kind[16];
    amp_tensors reg;
    amp_policy pol;
    amp_ctx cx;
    int B;                   /* rows per batch */
    int T;                   /* tokens per row (token models; 0 otherwise) */
    void *impl;
    amp_status (*forward)(amp_model *m, const amp_batch *b, float *loss);
    amp_status (*backward)(amp_model *m, const amp_batch *b, float loss_scale);
    void (*destroy)(amp_model *m);   /* frees impl */
    int layerwise_ok;        /* backward sets reg.src_gscale (layer-wise loss scaling) */
};
/* MLP 64-H-...-H-10 with `layers` linear layers and ReLU between them. Weights
 * drawn like PyTorch's nn.Linear default (U(-1/sqrt(I), 1/sqrt(I))) from seed. */
AMP_API amp_status amp_mlp_create(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                                  int classes, uint64_t seed);
/* The same with another activation (tensors <act>1.out, ...: relu1.out or gelu1.out). */
AMP_API amp_status amp_mlp_create_act(amp_model *m, const amp_policy *pol, int B, int in, int hidden, int layers,
                                      int classes, uint64_t seed, amp_act act);
AMP_API void amp_model_free(amp_model *m);
/* --init: every weight (master if any) from a tensor file with the model's
 * names and shapes; AMP_EINVAL naming the tensor otherwise. --save: the same. */
AMP_API amp_status amp_model_load(amp_model *m, const char *path);
AMP_API amp_status amp_model_save(const amp_model *m, const char *path);
/* --save-grads: every weight's unscaled FP32 gradient of the step just taken
 * (grad32, what the optimizer read), under the weight's name, as F32 safetensors. */
AMP_API amp_status amp_model_save_grads(const amp_model *m, const char *path);
/* Weights (role weight) cast from their masters, once per step (cast cache). */
AMP_API amp_status amp_model_cast_weights(amp_model *m);


/* ---- the model (sim/model_gpt.c) -------------------------------------------
 * nanoGPT (bias=True, dropout 0, GELU tanh form, lm_head tied to wte):
 * context T, width C, L blocks, NH heads (NH divides C), vocabulary 256.
 * Weights as nanoGPT initializes them, drawn from seed. Names:
 * transformer.wte.weight [256,C], transformer.wpe.weight [T,C],
 * transformer.h.<l>.{ln_1,ln_2}.{weight,bias} [C],
 * transformer.h.<l>.attn.c_attn.{weight [3C,C], bias [3C]},
 * transformer.h.<l>.attn.c_proj.{weight [C,C], bias [C]},
 * transformer.h.<l>.mlp.c_fc.{weight [4C,C], bias [4C]},
 * transformer.h.<l>.mlp.c_proj.{weight [C,4C], bias [C]},
 * transformer.ln_f.{weight,bias} [C]. Activations and the attention scores
 * (transformer.h.<l>.attn.att) and probabilities (.attn.prob), packed causal,
 * are registered tensors, logged like any other. A batch is amp_batch with
 * B rows of D = T tokens (tok) and next-byte targets (y); the loss is the
 * mean cross-entropy over B*T positions. Bad sizes: AMP_EINVAL naming the
 * option (--layers, --heads, --dim, --ctx, --batch). */
AMP_API amp_status amp_gpt_create(amp_model *m, const amp_policy *pol, int B, int T, int C, int L,
                                  int NH, uint64_t seed);

#endif
