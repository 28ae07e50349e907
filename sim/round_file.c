/* A tensor file rounded into a format and written out, streamed in fixed
 * chunks (bounded memory). Stochastic rounding is keyed by the element's index
 * in the file, so chunking and threads never change the bytes. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_round.h"
#include "amp_tensorio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROUND_CHUNK ((size_t)1 << 20)   /* a multiple of the drivers' 2^16 chunks */

static int has_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) && !strcasecmp(dot, ext);
}

/* The one tensor of the file to round: by name, or the only one. */
static amp_status pick(const amp_tensor_file *tf, const char *in, const char *name, const amp_tensor_view **out)
{
    if (name) {
        for (int i = 0; i < tf->n_tensors; i++)
            if (!strcmp(tf->tensors[i].name, name)) { *out = &tf->tensors[i]; return AMP_OK; }
        return amp_fail(AMP_EINVAL, "%s: no float tensor named '%s'", in, name);
    }
    if (tf->n_tensors != 1)
        return amp_fail(AMP_EINVAL, "%s: holds %d tensors; name one as FILE:NAME", in, tf->n_tensors);
    *out = &tf->tensors[0];
    return AMP_OK;
}

/* Rounds (and encodes) the chunks of v into af, after the .npy header. */
static amp_status stream(const amp_tensor_view *v, const amp_format *f, amp_round_opts o, int encode,
                         int npy, amp_afile *af, const char *in, const char *out, amp_stats *st)
{
    int is64 = v->dtype == AMP_DT_F64;
    size_t esz = encode ? (f->bits <= 8 ? 1 : 2) : 4;
    float *x32 = malloc(ROUND_CHUNK * sizeof *x32), *y = malloc(ROUND_CHUNK * sizeof *y);
    double *x64 = is64 ? malloc(ROUND_CHUNK * sizeof *x64) : NULL;
    void *enc = encode ? malloc(ROUND_CHUNK * esz) : NULL;
    amp_status s = AMP_OK;
    if (!x32 || !y || (is64 && !x64) || (encode && !enc)) s = amp_fail(AMP_ENOMEM, "%s: out of memory", in);
    if (!s && npy) {
        char hdr[512];
        size_t hl;
        const char *descr = !encode ? "<f4" : esz == 1 ? "|u1" : "<u2";
        s = amp_npy_header(descr, v->ndim, v->shape, hdr, sizeof hdr, &hl);
        if (!s && fwrite(hdr, 1, hl, af->fp) != hl) s = amp_fail(AMP_EIO, "%s: write failed: %s", out, strerror(errno ? errno : EIO));
    }
    for (size_t first = 0; first < v->n && !s; first += ROUND_CHUNK) {
        size_t m = v->n - first < ROUND_CHUNK ? v->n - first : ROUND_CHUNK;
        o.index0 = first;
        if (is64) {
            amp_tensor_view_to_f64(v, first, m, x64);
            s = amp_round_f64(f, &o, x64, y, m, st);
        } else {
            amp_tensor_view_to_f32(v, first, m, x32);
            s = amp_round_f32(f, &o, x32, y, m, st);
        }
        const void *w = y;
        if (!s && encode) {
            if ((s = amp_encode(f, y, enc, m))) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", amp_errmsg());
                s = amp_fail(s, "%s: %s (in the chunk of elements from %zu)", in, msg, first);
            }
            w = enc;
        }
        if (!s && fwrite(w, esz, m, af->fp) != m) s = amp_fail(AMP_EIO, "%s: write failed: %s", out, strerror(errno ? errno : EIO));
    }
    free(x32);
    free(y);
    free(x64);
    free(enc);
    return s;
}

amp_status amp_round_file(const char *in, const char *tensor, const char *out, const amp_format *f,
                          const amp_round_opts *o, int encode, amp_stats *st)
{
    if (encode && f->bits > 16)
        return amp_fail(AMP_EINVAL, "encode: format %s has %d bits (bit patterns only for <= 16)", f->name, f->bits);
    int npy = has_ext(out, ".npy");
    if (!encode && !npy && !has_ext(out, ".f32"))
        return amp_fail(AMP_EINVAL, "%s: output must be .npy or raw .f32 (float32 values)", out);
    amp_tensor_file tf;
    amp_status s = amp_tensor_file_open(in, &tf);
    if (s) return s;
    const amp_tensor_view *v = NULL;
    amp_afile af;
    if (!(s = pick(&tf, in, tensor, &v)) && !(s = amp_afile_open(&af, out))) {
        s = stream(v, f, *o, encode, npy, &af, in, out, st);
        if (!s) s = amp_afile_commit(&af);
        else amp_afile_abort(&af);
    }
    amp_tensor_file_close(&tf);
    return s;
}
