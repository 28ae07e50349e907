/* A tensor file rounded into a block-scaled format (`ampsim round --format
 * mx:...|nvfp4|block:...`): the whole tensor is read (NVFP4 needs the tensor
 * amax, 2D blocks span rows), rounded by amp_block_round and written as
 * float32 values. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_round.h"
#include "amp_tensorio.h"
#include "amp_block.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

amp_status amp_block_round_file(const char *in, const char *tensor, const char *out, const amp_block_spec *b,
                                const amp_round_opts *o, amp_stats *st, amp_block_stats *bs)
{
    const char *dot = strrchr(out, '.');
    int npy = dot && !strcasecmp(dot, ".npy");
    if (!npy && !(dot && !strcasecmp(dot, ".f32")))
        return amp_fail(AMP_EINVAL, "%s: output must be .npy or raw .f32 (float32 values)", out);
    amp_tensor_file tf;
    amp_status s = amp_tensor_file_open(in, &tf);
    if (s) return s;
    const amp_tensor_view *v = NULL;
    for (int i = 0; i < tf.n_tensors && tensor; i++)
        if (!strcmp(tf.tensors[i].name, tensor)) v = &tf.tensors[i];
    if (tensor && !v) s = amp_fail(AMP_EINVAL, "%s: no float tensor named '%s'", in, tensor);
    else if (!tensor && tf.n_tensors != 1) s = amp_fail(AMP_EINVAL, "%s: holds %d tensors; name one as FILE:NAME", in, tf.n_tensors);
    else if (!tensor) v = &tf.tensors[0];
    float *x = NULL;
    if (!s && !(x = malloc((v->n ? v->n : 1) * sizeof *x))) s = amp_fail(AMP_ENOMEM, "%s: out of memory", in);
    if (!s) {
        if (v->dtype == AMP_DT_F64) {      /* float64: rne into float32 first */
            amp_round_opts d = amp_round_defaults();
            double tmp[1024];
            for (size_t i = 0; i < v->n && !s; i += 1024) {
                size_t m = v->n - i < 1024 ? v->n - i : 1024;
                amp_tensor_view_to_f64(v, i, m, tmp);
                s = amp_round_f64(amp_format_get(AMP_FMT_FP32), &d, tmp, x + i, m, NULL);
            }
        } else {
            amp_tensor_view_to_f32(v, 0, v->n, x);
        }
    }
    size_t C = v && v->ndim ? v->shape[v->ndim - 1] : 1, R = C ? (v ? v->n / C : 0) : 0;
    if (!s) s = amp_block_round(b, o, x, x, R, C, st, bs);
    if (!s) {
        if (npy) {
            s = amp_npy_write_f32(out, x, v->ndim, v->shape);
        } else {
            s = amp_write_file_atomic(out, x, v->n * sizeof *x);
        }
    }
    free(x);
    amp_tensor_file_close(&tf);
    return s;
}
