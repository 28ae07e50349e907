/* ampsim — checkpoint files (DIR/checkpoint.bin; docs/design.md): named, CRC'ed
 * sections written atomically, and a reader that trusts nothing.
 *
 * Layout (all integers little-endian):
 *   header   "AMPSIMCK" (8 bytes), u32 version (AMP_CKPT_VERSION), u32 flags (0)
 *   section  u16 name_len (1..AMP_CKPT_NAME-1), name bytes (printable ASCII, no NUL),
 *            u64 payload_len, u32 crc32 (zlib) of name_len..payload_len fields,
 *            the name and the payload, then the payload
 *   trailer  "AMPSIMEN" (8 bytes), u32 section count, u32 crc32 of every byte
 *            of the file before the trailer
 * The reader checks the magic, the version, that every length lies inside the
 * file, every section CRC, the trailer (count and whole-file CRC), that nothing
 * follows the trailer and that no name appears twice. Any defect is AMP_EFORMAT
 * with "FILE: <defect>" (the section named where one is at fault).
 *
 * Tensors of a registry (amp_tensors, the ONE list) are sections "t/<name>":
 *   u32 role, u32 ndim, u64 shape[ndim], format name (24 bytes, NUL padded),
 *   f32 scale (FP8 scaling), then n float32 values.
 * Loading matches every tensor by name, role, shape and format (all checked
 * before anything is copied: a failed load leaves the registry unchanged). */
#ifndef AMP_CHECKPOINT_H
#define AMP_CHECKPOINT_H

#include <stdint.h>
#include "amp_base.h"
#include "amp_io.h"
#include "amp_optim.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

#define AMP_CKPT_VERSION 1u
#define AMP_CKPT_NAME 128                     /* name buffer, NUL included */
#define AMP_CKPT_MAX_BYTES ((size_t)1 << 34)  /* 16 GiB: larger files are refused */

/* ---- writing ---------------------------------------------------------------- */
typedef struct amp_ckpt_writer {
    amp_afile af;            /* PATH.tmp.<pid> until commit */
    uint32_t n;              /* sections written */
    uint32_t crc;            /* running crc32 of the file */
    amp_status err;          /* first failure (later calls return it) */
    char (*names)[AMP_CKPT_NAME];   /* names written (duplicate check) */
    uint32_t cap;
} amp_ckpt_writer;

/* Opens PATH under a temporary name and writes the header. */
AMP_API amp_status amp_ckpt_create(amp_ckpt_writer *w, const char *path);
/* Appends one section. AMP_EINVAL for a bad or repeated name, AMP_EIO
 * naming the file when writing fails (the writer is then aborted). */
AMP_API amp_status amp_ckpt_put(amp_ckpt_writer *w, const char *name, const void *data, size_t len);
/* Writes the trailer, flushes, fsyncs and renames to PATH. On failure the
 * temporary is removed and PATH is untouched (the previous checkpoint stays). */
AMP_API amp_status amp_ckpt_commit(amp_ckpt_writer *w);
/* Removes the temporary and frees the writer (safe after commit/failure). */
AMP_API void amp_ckpt_abort(amp_ckpt_writer *w);

/* ---- reading ---------------------------------------------------------------- */
typedef struct amp_ckpt_section {
    char name[AMP_CKPT_NAME];
    const uint8_t *data;     /* inside amp_ckpt.buf (or the caller's buffer) */
    size_t len;
} amp_ckpt_section;

typedef struct amp_ckpt {
    char path[4096];         /* for messages */
    uint8_t *owned;          /* file contents when read by amp_ckpt_load */
    uint32_t version;
    uint32_t n;
    amp_ckpt_section *sec;
} amp_ckpt;

/* Validates a checkpoint image of len bytes; sections point into data (which
 * must outlive ck). `what` names it in messages. AMP_EFORMAT on any defect. */
AMP_API amp_status amp_ckpt_parse(const char *what, const uint8_t *data, size_t len, amp_ckpt *ck);
/* Reads and validates PATH (AMP_EIO if unreadable). */
AMP_API amp_status amp_ckpt_load(const char *path, amp_ckpt *ck);
AMP_API void amp_ckpt_free(amp_ckpt *ck);
/* The section called name, or NULL. */
AMP_API const amp_ckpt_section *amp_ckpt_find(const amp_ckpt *ck, const char *name);
/* Copies section name, which must exist and be exactly len bytes long
 * (AMP_EFORMAT naming the file and the section otherwise). */
AMP_API amp_status amp_ckpt_get(const amp_ckpt *ck, const char *name, void *out, size_t len);

/* Typed helpers: 64-bit integers and doubles as 8 little-endian bytes. */
AMP_API amp_status amp_ckpt_put_u64(amp_ckpt_writer *w, const char *name, uint64_t v);
AMP_API amp_status amp_ckpt_get_u64(const amp_ckpt *ck, const char *name, uint64_t *v);
AMP_API amp_status amp_ckpt_put_f64(amp_ckpt_writer *w, const char *name, double v);
AMP_API amp_status amp_ckpt_get_f64(const amp_ckpt *ck, const char *name, double *v);

/* ---- state of the training emulator ----------------------------------------- */
/* Every tensor of r whose role is in `roles` (bit 1u << role) as "t/<name>". */
#define AMP_CKPT_ROLES_ALL (~0u)
AMP_API amp_status amp_ckpt_put_tensors(amp_ckpt_writer *w, const amp_tensors *r, unsigned roles);
/* Loads every tensor of r whose role is in `roles`: each must be in ck with
 * the same role, shape and format, and every "t/" section of ck must be a
 * tensor of r with a role in `roles`. Checked before anything is copied. */
AMP_API amp_status amp_ckpt_get_tensors(const amp_ckpt *ck, amp_tensors *r, unsigned roles);

/* Loss scaler state as section "scaler" (spec text checked on load). */
AMP_API amp_status amp_ckpt_put_scaler(amp_ckpt_writer *w, const amp_scaler *sc);
AMP_API amp_status amp_ckpt_get_scaler(const amp_ckpt *ck, amp_scaler *sc);
/* FP8 scaler state as section "fp8" (spec text, tensor count, per tensor
 * scale, amax count and history). The history length must match the spec. */
AMP_API amp_status amp_ckpt_put_fp8(amp_ckpt_writer *w, const amp_fp8_scaler *sc);
AMP_API amp_status amp_ckpt_get_fp8(const amp_ckpt *ck, amp_fp8_scaler *sc);
/* Optimizer as section "optim" (kind, hyper-parameters, update count t). */
AMP_API amp_status amp_ckpt_put_optim(amp_ckpt_writer *w, const amp_optim *o);
AMP_API amp_status amp_ckpt_get_optim(const amp_ckpt *ck, amp_optim *o);

#endif
