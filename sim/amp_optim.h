/* ampsim — optimizers (SGD, momentum, AdamW) over a model's weights. */
#ifndef AMP_OPTIM_H
#define AMP_OPTIM_H

#include <stdint.h>
#include "amp_base.h"
#include "amp_model.h"

/* ---- optimizers ------------------------------------------------------------------- */
typedef enum amp_optim_kind { AMP_OPT_SGD, AMP_OPT_MOMENTUM, AMP_OPT_ADAMW } amp_optim_kind;
/* What a step does when its loss or weight gradients are not finite
 * (--on-nonfinite): continue (the loss scaler alone decides whether the step is
 * skipped, as in the frameworks), skip (never apply such an update), stop (end
 * the run: AMP_ERUN, exit 1). A loss scale that reaches 0 also stops under stop. */
typedef enum amp_nonfinite_policy { AMP_NF_CONTINUE, AMP_NF_SKIP, AMP_NF_STOP } amp_nonfinite_policy;
AMP_API amp_status amp_nonfinite_parse(const char *s, amp_nonfinite_policy *out);

typedef struct amp_optim {
    amp_optim_kind kind;
    float lr, momentum, beta1, beta2, eps, weight_decay;
    int64_t t;               /* updates applied (AdamW bias correction) */
    amp_nonfinite_policy on_nonfinite;   /* see above (default continue) */
} amp_optim;
AMP_API amp_status amp_optim_parse(const char *name, amp_optim_kind *k);
AMP_API void amp_optim_defaults(amp_optim *o, amp_optim_kind k, float lr);
/* Registers the states (role optim_state) and update tensors of every weight. */
AMP_API amp_status amp_optim_attach(amp_optim *o, amp_model *m);
/* One update from every weight's grad32. Returns the number of updates that
 * vanished (u != 0 but the stored weight did not change) in *vanished. */
AMP_API amp_status amp_optim_step(amp_optim *o, amp_model *m, uint64_t *vanished);

#endif
