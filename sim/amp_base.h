/* ampsim — status codes, error messages, small shared helpers.
 *
 * Library functions never exit, abort or print on bad input: they return an
 * amp_status and leave a one-line message (thread-local) that the CLI prints.
 * Bugs (broken invariants) are asserted with AMP_ASSERT, which is always on. */
#ifndef AMP_BASE_H
#define AMP_BASE_H

#include <stddef.h>
#include <stdint.h>

/* The library's API: the shared library is built with hidden visibility and
 * exports exactly the functions declared with AMP_API in the module headers. */
#define AMP_API __attribute__((visibility("default")))

typedef enum amp_status {
    AMP_OK = 0,
    AMP_EINVAL,   /* bad argument or bad input data */
    AMP_EIO,      /* read/write failure */
    AMP_ENOMEM,   /* allocation failure */
    AMP_EFORMAT,  /* malformed file */
    AMP_ERANGE,   /* value out of range (size overflow, absurd shape, ...) */
    AMP_ERUN,     /* a run failed (diverged and asked to stop, scaler at minimum) */
    AMP_EINTR,    /* stopped on request (a signal): cleaned up, nothing half-written */
} amp_status;

/* Sets the thread-local error message (printf-style) and returns `st`. */
AMP_API amp_status amp_fail(amp_status st, const char *fmt, ...)
            __attribute__((format(printf, 2, 3)));
/* The last message set by amp_fail on this thread ("" if none). */
AMP_API const char *amp_errmsg(void);
/* A short name for a status ("invalid argument", ...). */
AMP_API const char *amp_status_name(amp_status st);

/* The library version ("0.1.0"). */
AMP_API const char *amp_version(void);

/* Always-on assertion for bugs (never for bad input). */
AMP_API void amp_assert_fail(const char *expr, const char *file, int line)
            __attribute__((noreturn));
#define AMP_ASSERT(e) ((e) ? (void)0 : amp_assert_fail(#e, __FILE__, __LINE__))

/* Bit casts. */
static inline uint32_t amp_f2u(float f) { union { float f; uint32_t u; } c = { .f = f }; return c.u; }
static inline float    amp_u2f(uint32_t u) { union { uint32_t u; float f; } c = { .u = u }; return c.f; }
static inline uint64_t amp_d2u(double d) { union { double d; uint64_t u; } c = { .d = d }; return c.u; }
static inline double   amp_u2d(uint64_t u) { union { uint64_t u; double d; } c = { .u = u }; return c.d; }

/* Little-endian 64-bit fields of the binary files (checkpoints, scaler images). */
static inline void amp_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t amp_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Counter-based random numbers: 64 well-mixed bits from (seed, stream, index).
 * Pure function: results never depend on call order or thread count. */
AMP_API uint64_t amp_rand64(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform double in [0,1) from the same key (53 bits). */
AMP_API double amp_rand_uniform(uint64_t seed, uint64_t stream, uint64_t index);

/* Overflow-checked size arithmetic: return 0 on overflow, else 1 and *out. */
AMP_API int amp_mul_size(size_t a, size_t b, size_t *out);
AMP_API int amp_add_size(size_t a, size_t b, size_t *out);

/* Kernels split work over OpenMP threads only when a call does at least this
 * many element operations: below it, starting threads costs more than it
 * saves (and far more on a loaded machine). Results do not depend on it. */
#define AMP_PAR_MIN 65536

#endif
