/* Tensor files: open by extension, map read-only, raw .f32/.f64, and the
 * conversion of views (maybe unaligned, little-endian) to float32/float64. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"
#include "amp_tensorio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

amp_status amp_raw_parse(const char *path, const void *buf, size_t len, amp_dtype dt, amp_tensor_view *v)
{
    size_t es = amp_dtype_size(dt);
    memset(v, 0, sizeof *v);
    const char *b = strrchr(path, '/');
    snprintf(v->name, sizeof v->name, "%s", b ? b + 1 : path);
    if (len % es)
        return amp_fail(AMP_EFORMAT, "%s: size %zu is not a multiple of %zu bytes (%s elements)", path, len, es,
                        amp_dtype_name(dt));
    v->dtype = dt;
    v->ndim = 1;
    v->n = v->shape[0] = len / es;
    v->data = buf;
    return AMP_OK;
}

typedef enum { K_NPY, K_NPZ, K_SAFETENSORS, K_F32, K_F64, K_UNKNOWN } file_kind;

static file_kind kind_of(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return K_UNKNOWN;
    if (!strcasecmp(dot, ".npy")) return K_NPY;
    if (!strcasecmp(dot, ".npz")) return K_NPZ;
    if (!strcasecmp(dot, ".safetensors")) return K_SAFETENSORS;
    if (!strcasecmp(dot, ".f32")) return K_F32;
    if (!strcasecmp(dot, ".f64")) return K_F64;
    return K_UNKNOWN;
}

void amp_tensor_file_close(amp_tensor_file *tf)
{
    if (tf->map && tf->map_len) munmap(tf->map, tf->map_len);
    free(tf->tensors);
    free(tf->arena);
    tf->arena = NULL;
    tf->map = NULL;
    tf->map_len = 0;
    tf->tensors = NULL;
    tf->n_tensors = 0;
}

amp_status amp_tensor_file_open(const char *path, amp_tensor_file *tf)
{
    memset(tf, 0, sizeof *tf);
    file_kind k = kind_of(path);
    if (k == K_UNKNOWN)
        return amp_fail(AMP_EINVAL, "%s: unknown tensor file type (expected .npy, .npz, .safetensors, .f32 or .f64)", path);
    if (strlen(path) >= sizeof tf->path) return amp_fail(AMP_EINVAL, "%s: path too long", path);
    snprintf(tf->path, sizeof tf->path, "%s", path);

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return amp_fail(AMP_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return amp_fail(AMP_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return amp_fail(AMP_EIO, "%s: not a regular file", path);
    }
    size_t len = (size_t)sb.st_size;
    void *map = NULL;
    if (len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return amp_fail(AMP_EIO, "%s: cannot map: %s", path, strerror(e));
        }
        madvise(map, len, MADV_SEQUENTIAL);
    }
    close(fd);
    tf->map = map;
    tf->map_len = len;

    amp_status st;
    if (k == K_SAFETENSORS) {
        st = amp_safetensors_parse(path, map, len, &tf->tensors, &tf->n_tensors, &tf->n_skipped, tf->skipped);
    } else if (k == K_NPZ) {
        st = amp_npz_parse(path, map ? map : "", len, &tf->tensors, &tf->n_tensors, &tf->arena, &tf->n_skipped,
                           tf->skipped);
    } else {
        tf->tensors = calloc(1, sizeof *tf->tensors);
        if (!tf->tensors) st = amp_fail(AMP_ENOMEM, "%s: out of memory", path);
        else if (k == K_NPY) st = amp_npy_parse(path, map ? map : "", len, tf->tensors);
        else st = amp_raw_parse(path, map ? map : "", len, k == K_F32 ? AMP_DT_F32 : AMP_DT_F64, tf->tensors);
        if (!st) tf->n_tensors = 1;
    }
    if (st) amp_tensor_file_close(tf);
    return st;
}

amp_status amp_tensor_arg_split(const char *arg, char *path, size_t cap, const char **name)
{
    *name = NULL;
    if (strlen(arg) >= cap) return amp_fail(AMP_EINVAL, "%.200s...: path too long", arg);
    snprintf(path, cap, "%s", arg);
    const char *colon = strrchr(arg, ':'), *slash = strrchr(arg, '/');
    if (colon && (!slash || colon > slash) && access(arg, F_OK) != 0) {
        path[colon - arg] = 0;
        *name = colon + 1;
    }
    return AMP_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void amp_tensor_dir_free(char **paths, int n)
{
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

amp_status amp_tensor_dir_list(const char *dir, char ***paths, int *n)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return amp_fail(AMP_EIO, "%s: cannot read folder: %s", dir, strerror(errno));
    char **v = NULL;
    int cnt = 0, cap = 0;
    amp_status st = AMP_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (e->d_name[0] == '.' || kind_of(e->d_name) == K_UNKNOWN) continue;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", dir); break; }
            v = nv;
        }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        if (!(v[cnt] = malloc(l))) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", dir); break; }
        snprintf(v[cnt++], l, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (st) { amp_tensor_dir_free(v, cnt); return st; }
    if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *paths = v;
    *n = cnt;
    return AMP_OK;
}

/* ---- view conversion (exact widening) ------------------------------------ */
static inline float half_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return amp_u2f(s | 0x7f800000u | m << 13);   /* inf, NaN (payload kept) */
    if (e == 0) {
        float v = (float)m * 0x1p-24f;                            /* exact: m < 2^10 */
        return s ? -v : v;
    }
    return amp_u2f(s | (e + 112) << 23 | m << 13);
}

void amp_tensor_view_to_f32(const amp_tensor_view *v, size_t first, size_t n, float *out)
{
    AMP_ASSERT(first <= v->n && n <= v->n - first);
    const unsigned char *p = (const unsigned char *)v->data + first * amp_dtype_size(v->dtype);
    switch (v->dtype) {
    case AMP_DT_F32:
        if (n) memcpy(out, p, n * 4);
        break;
    case AMP_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = half_to_f32(h);
        }
        break;
    case AMP_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = amp_u2f((uint32_t)h << 16);
        }
        break;
    case AMP_DT_F8E4M3:
    case AMP_DT_F8E5M2: {
        /* exact: every FP8 value is a float32; the format table's decoder */
        const amp_format *f = amp_format_get(v->dtype == AMP_DT_F8E4M3 ? AMP_FMT_E4M3 : AMP_FMT_E5M2);
        for (size_t i = 0; i < n; i++) out[i] = amp_decode1(f, p[i]);
        break;
    }
    default:
        AMP_ASSERT(!"amp_tensor_view_to_f32 on a float64 view (use amp_tensor_view_to_f64 + amp_round_f64)");
    }
}

void amp_tensor_view_to_f64(const amp_tensor_view *v, size_t first, size_t n, double *out)
{
    AMP_ASSERT(first <= v->n && n <= v->n - first);
    const unsigned char *p = (const unsigned char *)v->data + first * amp_dtype_size(v->dtype);
    if (v->dtype == AMP_DT_F64) {
        if (n) memcpy(out, p, n * 8);
        return;
    }
    enum { B = 1024 };
    float tmp[B];
    amp_tensor_view sub = *v;
    sub.data = p;
    sub.n = n;
    for (size_t i = 0; i < n; i += B) {
        size_t m = n - i < B ? n - i : B;
        amp_tensor_view_to_f32(&sub, i, m, tmp);
        for (size_t j = 0; j < m; j++) out[i + j] = tmp[j];
    }
}
