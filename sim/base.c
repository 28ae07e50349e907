/* Status messages, assertions, counter-based random numbers, size arithmetic. */
#include "amp_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char errbuf[512];

amp_status amp_fail(amp_status st, const char *fmt, ...)
{
    /* Format into a local buffer first: callers may pass amp_errmsg() itself
     * as an argument ("%s: ...", amp_errmsg()), which lives in errbuf. */
    char tmp[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(errbuf, tmp, sizeof errbuf);
    return st;
}

const char *amp_errmsg(void) { return errbuf; }

const char *amp_status_name(amp_status st)
{
    switch (st) {
    case AMP_OK: return "ok";
    case AMP_EINVAL: return "invalid argument";
    case AMP_EIO: return "i/o error";
    case AMP_ENOMEM: return "out of memory";
    case AMP_EFORMAT: return "malformed file";
    case AMP_ERANGE: return "out of range";
    case AMP_ERUN: return "run failed";
    case AMP_EINTR: return "interrupted";
    }
    return "unknown status";
}

void amp_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "ampsim: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}

const char *amp_version(void) { return AMP_VERSION; }

/* splitmix64's finalizer: a bijective 64-bit mix with full avalanche. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Counter-based: the key (seed, stream) selects a sequence, index a point on
 * it; two rounds of mixing decorrelate neighbouring keys. */
uint64_t amp_rand64(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t k = mix64(seed ^ 0x6a09e667f3bcc909ULL) ^ mix64(stream + 0x3c6ef372fe94f82bULL);
    return mix64(mix64(k + index * 0x9e3779b97f4a7c15ULL) ^ k);
}

double amp_rand_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(amp_rand64(seed, stream, index) >> 11) * 0x1p-53;
}

int amp_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

int amp_add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a) return 0;
    *out = a + b;
    return 1;
}
