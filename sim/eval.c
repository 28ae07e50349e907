/* Validation loss of a language model on the held-out Austen text. */
#include "amp_base.h"
#include "amp_data.h"
#include "amp_model.h"
#include "amp_tensor.h"
#include "amp_train.h"

#include <stdlib.h>

amp_status amp_gpt_eval(amp_model *m, const amp_austen *d, uint64_t seed, int64_t step,
                        int batches, double *val_loss)
{
    AMP_ASSERT(m->T > 0);
    size_t N = (size_t)m->B * (size_t)m->T;
    if (batches < 1) return amp_fail(AMP_EINVAL, "gpt: evaluation needs at least one batch");
    int32_t *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    if (!x || !y) { free(x); free(y); return amp_fail(AMP_ENOMEM, "out of memory"); }
    amp_tensors_begin_step(&m->reg, step, 0);
    amp_status s = amp_model_cast_weights(m);
    double sum = 0.0;
    for (int i = 0; i < batches && !s; i++) {
        float l;
        s = amp_austen_batch(d, AMP_SPLIT_VAL, seed, (uint64_t)i, (size_t)m->B, (size_t)m->T, x, y);
        amp_batch b = { .B = m->B, .D = m->T, .x = NULL, .tok = x, .y = y };
        if (!s) s = m->forward(m, &b, &l);
        if (!s) sum += l;
    }
    free(x);
    free(y);
    if (!s) *val_loss = sum / batches;
    return s;
}
