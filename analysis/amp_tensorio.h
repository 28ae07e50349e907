/* ampsim — tensor files: .npy (v1-3; f2, f4, f8, little-endian, C order),
 * .safetensors (F16, BF16, F32, F64), raw .f32 / .f64.
 *
 * Readers are strict (header bounds, offsets inside the file, shape x dtype
 * size equal to the byte range, no overlap, no size overflow) and return
 * AMP_EFORMAT / AMP_EIO with a message naming the file and the defect.
 * Data are mapped read-only (mmap), not copied. */
#ifndef AMP_TENSORIO_H
#define AMP_TENSORIO_H

#include "amp_base.h"

typedef enum amp_dtype { AMP_DT_F16, AMP_DT_BF16, AMP_DT_F32, AMP_DT_F64 } amp_dtype;
#define AMP_MAX_DIMS 8

typedef struct amp_tensor_view {
    char name[256];            /* "" for .npy / raw files */
    amp_dtype dtype;
    int ndim;
    size_t shape[AMP_MAX_DIMS];
    size_t n;                  /* number of elements */
    const void *data;          /* little-endian elements inside the mapping */
} amp_tensor_view;

typedef struct amp_tensor_file {
    char path[4096];
    void *map;                 /* the whole file, mapped */
    size_t map_len;
    int n_tensors;
    amp_tensor_view *tensors;  /* in file order (safetensors: by data offset) */
} amp_tensor_file;

/* Opens and validates a tensor file; the kind is chosen by extension
 * (.npy, .safetensors, .f32, .f64). Close with amp_tensor_file_close. */
amp_status amp_tensor_file_open(const char *path, amp_tensor_file *tf);
void amp_tensor_file_close(amp_tensor_file *tf);

/* Converts n elements of a view starting at element `first` to float32 or
 * float64 (exact widening; f64 -> f32 only via amp_round). */
void amp_tensor_view_to_f32(const amp_tensor_view *v, size_t first, size_t n, float *out);
void amp_tensor_view_to_f64(const amp_tensor_view *v, size_t first, size_t n, double *out);

/* Writers (atomic: temporary name + rename). */
amp_status amp_npy_write_f32(const char *path, const float *x, int ndim, const size_t *shape);
amp_status amp_npy_write_u8(const char *path, const uint8_t *x, int ndim, const size_t *shape);
amp_status amp_npy_write_u16(const char *path, const uint16_t *x, int ndim, const size_t *shape);

/* One tensor to write into a .safetensors file (float32 data). */
typedef struct amp_st_entry {
    const char *name;
    int ndim;
    size_t shape[AMP_MAX_DIMS];
    const float *data;
} amp_st_entry;
amp_status amp_safetensors_write_f32(const char *path, const amp_st_entry *entries, int n);

#endif
