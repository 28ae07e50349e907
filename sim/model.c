/* What every model shares: freeing, the per-step weight cast (autocast's cast
 * cache), and --init / --save through tensor files. */
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_model.h"
#include "amp_tensor.h"
#include "amp_tensorio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void amp_model_free(amp_model *m)
{
    if (m->destroy) m->destroy(m);
    amp_ctx_free(&m->cx);
    amp_tensors_free(&m->reg);
}

amp_status amp_model_cast_weights(amp_model *m)
{
    for (int i = 0; i < m->reg.n; i++) {
        amp_tensor *w = m->reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        amp_status s = w->master ? amp_tensor_round(&m->reg, w, w->master->data) : amp_tensor_observe(&m->reg, w);
        if (s) return s;
    }
    return AMP_OK;
}

amp_status amp_model_load(amp_model *m, const char *path)
{
    amp_tensor_file tf;
    amp_status s = amp_tensor_file_open(path, &tf);
    if (s) return s;
    int used = 0;
    for (int i = 0; i < m->reg.n && !s; i++) {
        amp_tensor *w = m->reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        const amp_tensor_view *v = NULL;
        for (int k = 0; k < tf.n_tensors; k++)
            if (!strcmp(tf.tensors[k].name, w->name)) v = &tf.tensors[k];
        if (!v) { s = amp_fail(AMP_EINVAL, "%s: tensor %s missing", path, w->name); break; }
        used++;
        int ok = v->ndim == w->ndim;
        for (int d = 0; ok && d < w->ndim; d++) ok = v->shape[d] == w->shape[d];
        if (!ok) {
            char want[64] = "", got[64] = "";
            for (int d = 0; d < w->ndim; d++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%zu", d ? "," : "", w->shape[d]);
            for (int d = 0; d < v->ndim && d < AMP_MAX_DIMS; d++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", d ? "," : "", v->shape[d]);
            s = amp_fail(AMP_EINVAL, "%s: tensor %s has shape [%s], expected [%s]", path, w->name, got, want);
            break;
        }
        float *buf = malloc(w->n * sizeof(float));
        if (!buf) { s = amp_fail(AMP_ENOMEM, "out of memory"); break; }
        amp_tensor_view_to_f32(v, 0, w->n, buf);
        for (size_t j = 0; j < w->n && !s; j++)
            if (!isfinite(buf[j])) s = amp_fail(AMP_EINVAL, "%s: tensor %s holds a non-finite value at %zu", path, w->name, j);
        if (!s) s = amp_ctx_set_weight(&m->cx, w, buf);
        free(buf);
    }
    if (!s && used != tf.n_tensors)
        for (int k = 0; k < tf.n_tensors; k++) {
            amp_tensor *w = amp_tensors_find(&m->reg, tf.tensors[k].name);
            if (!w || w->role != AMP_ROLE_WEIGHT) {
                s = amp_fail(AMP_EINVAL, "%s: tensor %s is not a weight of this model", path, tf.tensors[k].name);
                break;
            }
        }
    amp_tensor_file_close(&tf);
    return s;
}

/* Writes every weight's values (grads 0) or its unscaled FP32 gradient
 * grad32 (grads 1) under the weight's name. */
static amp_status save_weights(const amp_model *m, const char *path, int grads)
{
    amp_st_entry *e = calloc((size_t)m->reg.n, sizeof *e);
    if (!e) return amp_fail(AMP_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < m->reg.n; i++) {
        const amp_tensor *w = m->reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        e[n].name = w->name;
        e[n].ndim = w->ndim;
        for (int d = 0; d < w->ndim; d++) e[n].shape[d] = w->shape[d];
        e[n].data = grads ? w->grad32 : w->master ? w->master->data : w->data;
        n++;
    }
    amp_status s = amp_safetensors_write_f32(path, e, n);
    free(e);
    return s;
}

amp_status amp_model_save(const amp_model *m, const char *path)
{
    return save_weights(m, path, 0);
}

amp_status amp_model_save_grads(const amp_model *m, const char *path)
{
    return save_weights(m, path, 1);
}
