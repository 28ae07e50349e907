/* ampsim — tensor files: .npy (v1-3; f2, f4, f8, little-endian, C order),
 * .safetensors (F16, BF16, F32, F64, F8_E4M3, F8_E5M2; integer and bool
 * tensors are checked and skipped), raw .f32 / .f64.
 *
 * Readers are strict (header bounds, offsets inside the file, shape x dtype
 * size equal to the byte range, no overlap, no size overflow) and return
 * AMP_EFORMAT / AMP_EIO with a message "FILE: defect" naming the file and the
 * defect. Data are mapped read-only (mmap), never copied whole. */
#ifndef AMP_TENSORIO_H
#define AMP_TENSORIO_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

typedef enum amp_dtype {
    AMP_DT_F16, AMP_DT_BF16, AMP_DT_F32, AMP_DT_F64,
    AMP_DT_F8E4M3, AMP_DT_F8E5M2,   /* OCP FP8 (PyTorch float8_e4m3fn, float8_e5m2) */
    AMP_DT_COUNT
} amp_dtype;
#define AMP_MAX_DIMS 8

/* Bytes per element (2, 2, 4, 8, 1, 1) and a short name ("f16", "bf16", "f32",
 * "f64", "f8e4m3", "f8e5m2"). */
AMP_API size_t amp_dtype_size(amp_dtype dt);
AMP_API const char *amp_dtype_name(amp_dtype dt);

typedef struct amp_tensor_view {
    char name[256];            /* safetensors: the tensor's name; .npy / raw: the file's basename */
    amp_dtype dtype;
    int ndim;
    size_t shape[AMP_MAX_DIMS];
    size_t n;                  /* number of elements (1 for a 0-d array) */
    const void *data;          /* little-endian elements inside the mapping (maybe unaligned) */
} amp_tensor_view;

typedef struct amp_tensor_file {
    char path[4096];
    void *map;                 /* the whole file, mapped read-only (NULL if empty) */
    size_t map_len;
    int n_tensors;
    amp_tensor_view *tensors;  /* in file order (safetensors: by data offset) */
    int n_skipped;             /* safetensors: integer/bool tensors left out */
    char skipped[256];         /* the first of them, "name (I64)" */
    void *arena;               /* .npz: the inflated members (NULL if none) */
} amp_tensor_file;

/* Opens and validates a tensor file; the kind is chosen by extension
 * (.npy, .npz, .safetensors, .f32, .f64; case-insensitive). On failure *tf is left
 * closed (nothing to release) and the message names the file.
 * Close with amp_tensor_file_close (safe to call twice). */
AMP_API amp_status amp_tensor_file_open(const char *path, amp_tensor_file *tf);
AMP_API void amp_tensor_file_close(amp_tensor_file *tf);

/* An input argument "FILE:NAME" names one tensor of FILE: when arg is not an
 * existing path and has a ':' after its last '/', path = the part before the
 * last ':' and *name points at the part after (inside arg); otherwise path =
 * arg and *name = NULL. AMP_EINVAL if the path does not fit in cap. */
AMP_API amp_status amp_tensor_arg_split(const char *arg, char *path, size_t cap, const char **name);
/* The tensor files of a folder (.npy, .npz, .safetensors, .f32, .f64; not
 * recursive; hidden files left out), as "dir/file", sorted by name. *paths is
 * malloc'ed (free with amp_tensor_dir_free); AMP_EIO if the folder cannot be
 * read. */
AMP_API amp_status amp_tensor_dir_list(const char *dir, char ***paths, int *n);
AMP_API void amp_tensor_dir_free(char **paths, int n);

/* The parsers behind amp_tensor_file_open, on a file's bytes in memory
 * (what the fuzz harnesses drive). `path` only names the file in messages.
 * Views point into buf. amp_safetensors_parse returns a malloc'ed array
 * (free() it; NULL when *n == 0) of the float tensors; integer and bool
 * tensors are validated like the others (their bytes count in the layout
 * checks) and left out: *n_skipped of them, the first named in skipped
 * ("name (I64)"); both may be NULL. */
AMP_API amp_status amp_npy_parse(const char *path, const void *buf, size_t len, amp_tensor_view *v);
AMP_API amp_status amp_safetensors_parse(const char *path, const void *buf, size_t len,
                                         amp_tensor_view **tensors, int *n, int *n_skipped, char skipped[256]);
/* .npz (numpy.savez, savez_compressed): every member a .npy, stored or
 * deflated; views of the float members named after the members without
 * ".npy", pointing into buf (stored) or into *arena (deflated; malloc'ed,
 * free() it; NULL if none). *tensors is malloc'ed (free() it; NULL when
 * *n == 0). Members of integer, bool or other non-float dtypes are checked
 * like the others and left out: *n_skipped of them, the first named in
 * skipped ("name.npy (<i8)"); both may be NULL. */
AMP_API amp_status amp_npz_parse(const char *path, const void *buf, size_t len, amp_tensor_view **tensors, int *n,
                                 void **arena, int *n_skipped, char skipped[256]);
AMP_API amp_status amp_raw_parse(const char *path, const void *buf, size_t len, amp_dtype dt,
                                 amp_tensor_view *v);

/* Upper bound on a safetensors JSON header (the reference implementation's). */
#define AMP_SAFETENSORS_MAX_HEADER ((uint64_t)100 << 20)

/* Converts n elements of a view starting at element `first` to float32 or
 * float64 (exact widening). amp_tensor_view_to_f32 on an F64 view is a bug
 * (narrowing goes through amp_round_f64). first + n <= v->n. */
AMP_API void amp_tensor_view_to_f32(const amp_tensor_view *v, size_t first, size_t n, float *out);
AMP_API void amp_tensor_view_to_f64(const amp_tensor_view *v, size_t first, size_t n, double *out);

/* Writers (atomic: temporary name + rename; nothing is left on failure).
 * ndim 0 writes a 0-d array (one element). */
AMP_API amp_status amp_npy_write_f32(const char *path, const float *x, int ndim, const size_t *shape);
AMP_API amp_status amp_npy_write_u8(const char *path, const uint8_t *x, int ndim, const size_t *shape);
AMP_API amp_status amp_npy_write_u16(const char *path, const uint16_t *x, int ndim, const size_t *shape);

/* The .npy header (v1.0, or v2.0 if it does not fit; padded to 64 bytes) for
 * streaming writers: descr is "<f4", "|u1", "<u2", "<f8", ... Writes at most
 * cap bytes into buf and the header's length into *len. AMP_ERANGE if it
 * does not fit, AMP_EINVAL for a bad shape. */
AMP_API amp_status amp_npy_header(const char *descr, int ndim, const size_t *shape, char *buf, size_t cap,
                                  size_t *len);

/* One tensor to write into a .safetensors file (float32 data). */
typedef struct amp_st_entry {
    const char *name;
    int ndim;
    size_t shape[AMP_MAX_DIMS];
    const float *data;
} amp_st_entry;
/* Writes the entries (names unique, non-empty, < 256 bytes) as F32 tensors in
 * the order given, with the header padded to a multiple of 8 bytes as the
 * reference implementation does. */
AMP_API amp_status amp_safetensors_write_f32(const char *path, const amp_st_entry *entries, int n);

/* ---- rounding a file (sim/round_file.c) -----------------------------------
 * Rounds every element of one tensor of file `in` (any format that
 * amp_tensor_file_open reads) into f with options o and writes `out`: .npy
 * (the tensor's shape) or raw .f32 of float32 values; with encode, the
 * format's bit patterns (uint8 for formats of <= 8 bits, uint16 for <= 16;
 * .npy '|u1'/'<u2', any other name raw bytes). `tensor` names the tensor of a
 * multi-tensor file (NULL: the file must hold exactly one). Streams fixed
 * chunks; sr draws are keyed by the element's index in the tensor (o->seed,
 * o->stream), so chunks and threads never change the bytes. Statistics are
 * added to *st (may be NULL). `out` is written atomically: on any error
 * nothing is left under its name. */
AMP_API amp_status amp_round_file(const char *in, const char *tensor, const char *out, const amp_format *f,
                                  const amp_round_opts *o, int encode, amp_stats *st);

#endif
