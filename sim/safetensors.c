/* .safetensors files: the strict reader and the float32 writer.
 *
 * Layout: an 8-byte little-endian u64 N, N bytes of JSON (UTF-8, maybe padded
 * with spaces), then the data area. The JSON is an object mapping each tensor
 * name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * (offsets relative to the data area), plus an optional "__metadata__" object
 * of strings. The reader checks what the reference implementation checks:
 * N <= 100 MiB and inside the file; every offset inside the data area;
 * end - begin == prod(shape) * itemsize without overflow; tensors, sorted by
 * offset, neither overlap nor leave gaps, and cover the data area exactly.
 * Float tensors (F16, BF16, F32, F64, F8_E4M3, F8_E5M2) are returned; integer
 * and bool tensors (a state_dict's num_batches_tracked, token ids) pass the
 * same checks and are skipped; any other dtype is an error. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_tensorio.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_item {
    amp_tensor_view v;
    size_t begin, end;
    const char *skip;          /* non-float dtype name: validated, not returned */
} st_item;

/* Every dtype the reader knows: a float one maps to an amp_dtype; the others
 * (dtype -1) are checked by element size and skipped. */
static const struct { const char *name; int dtype; size_t size; } st_dtypes[] = {
    { "F16", AMP_DT_F16, 2 }, { "BF16", AMP_DT_BF16, 2 }, { "F32", AMP_DT_F32, 4 }, { "F64", AMP_DT_F64, 8 },
    { "F8_E4M3", AMP_DT_F8E4M3, 1 }, { "F8_E5M2", AMP_DT_F8E5M2, 1 },
    { "BOOL", -1, 1 }, { "U8", -1, 1 }, { "I8", -1, 1 }, { "I16", -1, 2 }, { "U16", -1, 2 },
    { "I32", -1, 4 }, { "U32", -1, 4 }, { "I64", -1, 8 }, { "U64", -1, 8 },
};

static int cmp_item(const void *a, const void *b)
{
    const st_item *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->v.name, y->v.name);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const st_item *)a)->v.name, ((const st_item *)b)->v.name);
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a double). */
static int json_size(const cJSON *j, size_t *out)
{
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0) || d > 0x1p53 || d != floor(d)) return 0;
    if (d > (double)SIZE_MAX) return 0;
    *out = (size_t)d;
    return 1;
}

static amp_status parse_tensor(const char *path, const cJSON *t, size_t data_len, st_item *it)
{
    const char *name = t->string;
    if (!cJSON_IsObject(t))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': entry is not an object", path, name);
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL, *m;
    cJSON_ArrayForEach(m, t) {
        const cJSON **slot = !strcmp(m->string, "dtype") ? &dt : !strcmp(m->string, "shape") ? &shape
                           : !strcmp(m->string, "data_offsets") ? &offs : NULL;
        if (!slot)
            return amp_fail(AMP_EFORMAT, "%s: tensor '%s': unexpected key '%s'", path, name, m->string);
        if (*slot)
            return amp_fail(AMP_EFORMAT, "%s: tensor '%s': duplicate key '%s'", path, name, m->string);
        *slot = m;
    }
    if (!dt || !shape || !offs)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': missing '%s'", path, name,
                        !dt ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!cJSON_IsString(dt))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': dtype is not a string", path, name);
    const char *d = dt->valuestring;
    amp_tensor_view *v = &it->v;
    size_t k = 0, nk = sizeof st_dtypes / sizeof st_dtypes[0];
    while (k < nk && strcmp(d, st_dtypes[k].name)) k++;
    if (k == nk)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': dtype %.32s not supported (float: F16, BF16, F32, F64, "
                        "F8_E4M3, F8_E5M2; skipped: BOOL, U8..U64, I8..I64)", path, name, d);
    size_t esize = st_dtypes[k].size;
    it->skip = st_dtypes[k].dtype < 0 ? st_dtypes[k].name : NULL;
    v->dtype = it->skip ? AMP_DT_F32 : (amp_dtype)st_dtypes[k].dtype;   /* a skipped view is never returned */

    if (!cJSON_IsArray(shape))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': shape is not an array", path, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > AMP_MAX_DIMS)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': more than %d dimensions not supported", path, name, AMP_MAX_DIMS);
    size_t n = 1, bytes;
    v->ndim = 0;
    cJSON_ArrayForEach(m, shape) {
        if (!json_size(m, &v->shape[v->ndim]))
            return amp_fail(AMP_EFORMAT, "%s: tensor '%s': bad shape entry", path, name);
        if (!amp_mul_size(n, v->shape[v->ndim], &n))
            return amp_fail(AMP_EFORMAT, "%s: tensor '%s': shape too large (size overflow)", path, name);
        v->ndim++;
    }
    if (!amp_mul_size(n, esize, &bytes))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': shape too large (size overflow)", path, name);
    v->n = n;

    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        !json_size(cJSON_GetArrayItem(offs, 0), &it->begin) || !json_size(cJSON_GetArrayItem(offs, 1), &it->end))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': data_offsets must be two non-negative integers", path, name);
    if (it->end < it->begin)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': data_offsets end %zu before begin %zu", path, name, it->end, it->begin);
    if (it->end > data_len)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': offset %zu past end of data (%zu bytes)", path, name, it->end, data_len);
    if (it->end - it->begin != bytes)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': byte range %zu does not match shape x dtype size %zu", path,
                        name, it->end - it->begin, bytes);
    return AMP_OK;
}

amp_status amp_safetensors_parse(const char *path, const void *buf, size_t len, amp_tensor_view **tensors, int *n_out,
                                 int *n_skipped, char skipped[256])
{
    const unsigned char *b = buf;
    *tensors = NULL;
    *n_out = 0;
    if (n_skipped) *n_skipped = 0;
    if (skipped) skipped[0] = 0;
    if (len < 8) return amp_fail(AMP_EFORMAT, "%s: truncated header (%zu bytes)", path, len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    if (hl > AMP_SAFETENSORS_MAX_HEADER)
        return amp_fail(AMP_EFORMAT, "%s: header length %llu larger than %llu", path, (unsigned long long)hl,
                        (unsigned long long)AMP_SAFETENSORS_MAX_HEADER);
    if (hl > len - 8)
        return amp_fail(AMP_EFORMAT, "%s: truncated header (header length %llu past end of file)", path,
                        (unsigned long long)hl);
    if (hl < 2) return amp_fail(AMP_EFORMAT, "%s: header too short", path);
    const char *h = (const char *)b + 8;
    if (memchr(h, 0, hl)) return amp_fail(AMP_EFORMAT, "%s: NUL byte in the JSON header", path);
    if (h[0] != '{') return amp_fail(AMP_EFORMAT, "%s: JSON header does not start with '{'", path);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)hl, &end, 0);
    if (!root) {
        size_t at = end && end >= h && end <= h + hl ? (size_t)(end - h) : 0;
        return amp_fail(AMP_EFORMAT, "%s: malformed JSON header (near byte %zu)", path, at);
    }
    amp_status st = AMP_OK;
    st_item *items = NULL;
    int n = 0;
    for (const char *q = end; q < h + hl; q++)
        if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t') {
            st = amp_fail(AMP_EFORMAT, "%s: trailing characters after the JSON header", path);
            goto out;
        }
    if (!cJSON_IsObject(root)) {
        st = amp_fail(AMP_EFORMAT, "%s: JSON header is not an object", path);
        goto out;
    }
    size_t data_len = len - 8 - (size_t)hl;
    int cap = cJSON_GetArraySize(root);
    items = calloc(cap > 0 ? (size_t)cap : 1, sizeof *items);
    if (!items) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto out; }
    const cJSON *t;
    int have_meta = 0;
    cJSON_ArrayForEach(t, root) {
        if (!strcmp(t->string, "__metadata__")) {
            const cJSON *m;
            if (have_meta++ || !cJSON_IsObject(t)) {
                st = amp_fail(AMP_EFORMAT, "%s: __metadata__ must be one object of strings", path);
                goto out;
            }
            cJSON_ArrayForEach(m, t)
                if (!cJSON_IsString(m)) {
                    st = amp_fail(AMP_EFORMAT, "%s: __metadata__ must be one object of strings", path);
                    goto out;
                }
            continue;
        }
        size_t nl = strlen(t->string);
        if (nl == 0) { st = amp_fail(AMP_EFORMAT, "%s: empty tensor name", path); goto out; }
        if (nl >= sizeof items[0].v.name) {
            st = amp_fail(AMP_EFORMAT, "%s: tensor name longer than %zu bytes", path, sizeof items[0].v.name - 1);
            goto out;
        }
        st_item *it = &items[n];
        memcpy(it->v.name, t->string, nl + 1);
        if ((st = parse_tensor(path, t, data_len, it))) goto out;
        n++;
    }
    qsort(items, (size_t)n, sizeof *items, cmp_name);
    for (int i = 1; i < n; i++)
        if (!strcmp(items[i - 1].v.name, items[i].v.name)) {
            st = amp_fail(AMP_EFORMAT, "%s: duplicate tensor name '%s'", path, items[i].v.name);
            goto out;
        }
    qsort(items, (size_t)n, sizeof *items, cmp_item);
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].begin < pos) {
            st = amp_fail(AMP_EFORMAT, "%s: tensors '%s' and '%s' overlap", path, items[i - 1].v.name, items[i].v.name);
            goto out;
        }
        if (items[i].begin > pos) {
            st = amp_fail(AMP_EFORMAT, "%s: gap of %zu bytes in the data area before tensor '%s'", path,
                          items[i].begin - pos, items[i].v.name);
            goto out;
        }
        pos = items[i].end;
    }
    if (pos != data_len) {
        st = amp_fail(AMP_EFORMAT, "%s: %zu trailing bytes after the last tensor", path, data_len - pos);
        goto out;
    }
    int nf = 0, ns = 0;
    for (int i = 0; i < n; i++) {
        if (!items[i].skip) { nf++; continue; }
        if (!ns++ && skipped) snprintf(skipped, 256, "%.200s (%s)", items[i].v.name, items[i].skip);
    }
    if (n_skipped) *n_skipped = ns;
    if (nf > 0) {
        amp_tensor_view *vs = malloc((size_t)nf * sizeof *vs);
        if (!vs) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto out; }
        for (int i = 0, k = 0; i < n; i++) {
            if (items[i].skip) continue;
            vs[k] = items[i].v;
            vs[k++].data = b + 8 + hl + items[i].begin;
        }
        *tensors = vs;
        *n_out = nf;
    }
out:
    free(items);
    cJSON_Delete(root);
    return st;
}

/* ---- writer ------------------------------------------------------------ */
amp_status amp_safetensors_write_f32(const char *path, const amp_st_entry *e, int n)
{
    if (n < 0) return amp_fail(AMP_EINVAL, "%s: negative tensor count", path);
    cJSON *root = cJSON_CreateObject();
    size_t off = 0;
    size_t *bytes = calloc(n > 0 ? (size_t)n : 1, sizeof *bytes);
    amp_status st = AMP_OK;
    char *json = NULL;
    if (!root || !bytes) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto out; }
    for (int i = 0; i < n; i++) {
        size_t cnt = 1;
        if (!e[i].name || !*e[i].name || strlen(e[i].name) > 255 || !strcmp(e[i].name, "__metadata__")) {
            st = amp_fail(AMP_EINVAL, "%s: bad tensor name", path);
            goto out;
        }
        if (cJSON_GetObjectItemCaseSensitive(root, e[i].name)) {
            st = amp_fail(AMP_EINVAL, "%s: duplicate tensor name '%s'", path, e[i].name);
            goto out;
        }
        if (e[i].ndim < 0 || e[i].ndim > AMP_MAX_DIMS) {
            st = amp_fail(AMP_EINVAL, "%s: tensor '%s': %d dimensions", path, e[i].name, e[i].ndim);
            goto out;
        }
        cJSON *t = cJSON_AddObjectToObject(root, e[i].name);
        cJSON *sh = t ? cJSON_AddArrayToObject(t, "shape") : NULL;
        cJSON *of = t ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        if (!t || !sh || !of || !cJSON_AddStringToObject(t, "dtype", "F32")) {
            st = amp_fail(AMP_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        for (int d = 0; d < e[i].ndim; d++) {
            if (!amp_mul_size(cnt, e[i].shape[d], &cnt)) { st = amp_fail(AMP_ERANGE, "%s: shape too large", path); goto out; }
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)e[i].shape[d]));
        }
        if (!amp_mul_size(cnt, 4, &bytes[i]) || bytes[i] > ((size_t)1 << 53) - off) {
            st = amp_fail(AMP_ERANGE, "%s: tensor '%s' too large", path, e[i].name);
            goto out;
        }
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        off += bytes[i];
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
    }
    json = cJSON_PrintUnformatted(root);
    if (!json) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto out; }
    size_t jl = strlen(json), padded = (jl + 7) / 8 * 8;
    unsigned char hdr[8];
    for (int i = 0; i < 8; i++) hdr[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    amp_afile af;
    if ((st = amp_afile_open(&af, path))) goto out;
    int ok = fwrite(hdr, 1, 8, af.fp) == 8 && fwrite(json, 1, jl, af.fp) == jl;
    for (size_t i = jl; ok && i < padded; i++) ok = fputc(' ', af.fp) != EOF;
    for (int i = 0; ok && i < n; i++)
        ok = !bytes[i] || fwrite(e[i].data, 1, bytes[i], af.fp) == bytes[i];
    if (!ok) {
        int er = errno;
        amp_afile_abort(&af);
        st = amp_fail(AMP_EIO, "%s: write failed: %s", path, strerror(er ? er : EIO));
        goto out;
    }
    st = amp_afile_commit(&af);
out:
    free(json);
    free(bytes);
    cJSON_Delete(root);
    return st;
}
