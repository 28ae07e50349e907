/* .npy files: the strict reader (format versions 1.0, 2.0, 3.0) and the writers.
 *
 * Layout: "\x93NUMPY", major, minor, header length (u16 LE for v1, u32 LE for
 * v2/v3), then a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n', then the raw elements. The reader
 * accepts exactly the three keys, float dtypes '<f2' '<f4' '<f8' ('=' as well:
 * native order is little-endian here), C order (fortran_order True only when
 * at most one dimension exceeds 1, where both orders are the same bytes), and
 * a data area exactly prod(shape) * itemsize bytes long. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_tensorio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ampsim's tensor readers assume a little-endian host"
#endif

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* ---- a tiny parser for the header's Python literal ---------------------- */
typedef struct hp {
    const char *s, *end;
    const char *path;
} hp;

static void hp_ws(hp *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static int hp_eat(hp *p, char c)
{
    hp_ws(p);
    if (p->s < p->end && *p->s == c) { p->s++; return 1; }
    return 0;
}

/* A quoted string ('...' or "..."; no escapes, as numpy never writes them
 * for these keys and dtypes) copied into out. */
static amp_status hp_string(hp *p, char *out, size_t cap)
{
    hp_ws(p);
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"'))
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: expected a quoted string", p->path);
    char q = *p->s++;
    const char *b = p->s;
    while (p->s < p->end && *p->s != q) {
        if (*p->s == '\\' || *p->s == '\n' || *p->s == 0)
            return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: bad character in a string", p->path);
        p->s++;
    }
    if (p->s >= p->end)
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: unterminated string", p->path);
    size_t n = (size_t)(p->s - b);
    p->s++;
    if (n >= cap)
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: string too long", p->path);
    memcpy(out, b, n);
    out[n] = 0;
    return AMP_OK;
}

/* A non-negative decimal integer (Python 2 files may add an 'L'). */
static amp_status hp_size(hp *p, size_t *out)
{
    hp_ws(p);
    if (p->s >= p->end || *p->s < '0' || *p->s > '9')
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: bad shape entry", p->path);
    size_t v = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
        if (!amp_mul_size(v, 10, &v) || !amp_add_size(v, (size_t)(*p->s - '0'), &v))
            return amp_fail(AMP_EFORMAT, "%s: shape entry too large (size overflow)", p->path);
        p->s++;
    }
    if (p->s < p->end && (*p->s == 'L' || *p->s == 'l')) p->s++;
    *out = v;
    return AMP_OK;
}

static amp_status parse_descr(const char *path, const char *d, amp_tensor_view *v)
{
    if (strlen(d) == 3 && (d[0] == '<' || d[0] == '=') && d[1] == 'f') {
        if (d[2] == '2') { v->dtype = AMP_DT_F16; return AMP_OK; }
        if (d[2] == '4') { v->dtype = AMP_DT_F32; return AMP_OK; }
        if (d[2] == '8') { v->dtype = AMP_DT_F64; return AMP_OK; }
    }
    if (d[0] == '>')
        return amp_fail(AMP_EFORMAT, "%s: big-endian dtype '%s' not supported (little-endian f2, f4, f8 only)", path, d);
    return amp_fail(AMP_EFORMAT, "%s: dtype '%s' not supported (expected '<f2', '<f4' or '<f8')", path, d);
}

static amp_status parse_dict(hp *p, amp_tensor_view *v)
{
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    char key[32], descr[64];
    if (!hp_eat(p, '{'))
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: expected '{'", p->path);
    for (;;) {
        if (hp_eat(p, '}')) break;
        amp_status st = hp_string(p, key, sizeof key);
        if (st) return st;
        if (!hp_eat(p, ':'))
            return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: expected ':' after '%s'", p->path, key);
        if (!strcmp(key, "descr")) {
            if (have_descr++) goto dup;
            hp_ws(p);
            if (p->s < p->end && *p->s == '[')
                return amp_fail(AMP_EFORMAT, "%s: structured dtype not supported (expected '<f2', '<f4' or '<f8')", p->path);
            if ((st = hp_string(p, descr, sizeof descr))) return st;
            if ((st = parse_descr(p->path, descr, v))) return st;
        } else if (!strcmp(key, "fortran_order")) {
            if (have_order++) goto dup;
            hp_ws(p);
            if ((size_t)(p->end - p->s) >= 4 && !memcmp(p->s, "True", 4)) { fortran = 1; p->s += 4; }
            else if ((size_t)(p->end - p->s) >= 5 && !memcmp(p->s, "False", 5)) p->s += 5;
            else return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: fortran_order must be True or False", p->path);
        } else if (!strcmp(key, "shape")) {
            if (have_shape++) goto dup;
            if (!hp_eat(p, '('))
                return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: shape must be a tuple", p->path);
            v->ndim = 0;
            int need_comma = 0;     /* "(5)" is not a tuple: a 1-tuple needs "(5,)" */
            for (;;) {
                if (hp_eat(p, ')')) break;
                if (v->ndim == AMP_MAX_DIMS)
                    return amp_fail(AMP_EFORMAT, "%s: more than %d dimensions not supported", p->path, AMP_MAX_DIMS);
                if ((st = hp_size(p, &v->shape[v->ndim]))) return st;
                v->ndim++;
                if (hp_eat(p, ',')) { need_comma = 0; continue; }
                need_comma = v->ndim == 1;
                if (!hp_eat(p, ')'))
                    return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: bad shape tuple", p->path);
                break;
            }
            if (need_comma)
                return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: bad shape tuple", p->path);
        } else {
            return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: unexpected key '%s'", p->path, key);
        }
        if (hp_eat(p, ',')) continue;
        if (hp_eat(p, '}')) break;
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: expected ',' or '}'", p->path);
    }
    hp_ws(p);
    if (p->s != p->end)
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: trailing characters after the dictionary", p->path);
    if (!have_descr || !have_order || !have_shape)
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: missing key '%s'", p->path,
                        !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (fortran) {
        int big = 0;
        for (int i = 0; i < v->ndim; i++) big += v->shape[i] > 1;
        if (big > 1)
            return amp_fail(AMP_EFORMAT, "%s: fortran_order True not supported (C order only; save np.ascontiguousarray(x))", p->path);
    }
    return AMP_OK;
dup:
    return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: duplicate key '%s'", p->path, key);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

amp_status amp_npy_parse(const char *path, const void *buf, size_t len, amp_tensor_view *v)
{
    const unsigned char *b = buf;
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", base_name(path));
    if (len < 10 || memcmp(b, npy_magic, 6) != 0) {
        if (len >= 6 && memcmp(b, npy_magic, 6) != 0)
            return amp_fail(AMP_EFORMAT, "%s: not a .npy file (bad magic)", path);
        return amp_fail(AMP_EFORMAT, "%s: truncated header (%zu bytes)", path, len);
    }
    int major = b[6], minor = b[7];
    size_t hlen, pre;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return amp_fail(AMP_EFORMAT, "%s: truncated header (%zu bytes)", path, len);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pre = 12;
    } else {
        return amp_fail(AMP_EFORMAT, "%s: .npy format version %d.%d not supported (1.0, 2.0, 3.0)", path, major, minor);
    }
    if (minor != 0)
        return amp_fail(AMP_EFORMAT, "%s: .npy format version %d.%d not supported (1.0, 2.0, 3.0)", path, major, minor);
    if (hlen > len - pre)
        return amp_fail(AMP_EFORMAT, "%s: truncated header (header length %zu past end of file)", path, hlen);
    if (memchr(b + pre, 0, hlen))
        return amp_fail(AMP_EFORMAT, "%s: malformed .npy header: NUL byte", path);
    hp p = { (const char *)b + pre, (const char *)b + pre + hlen, path };
    amp_status st = parse_dict(&p, v);
    if (st) return st;

    size_t n = 1, bytes;
    for (int i = 0; i < v->ndim; i++)
        if (!amp_mul_size(n, v->shape[i], &n))
            return amp_fail(AMP_EFORMAT, "%s: shape too large (size overflow)", path);
    if (!amp_mul_size(n, amp_dtype_size(v->dtype), &bytes))
        return amp_fail(AMP_EFORMAT, "%s: shape too large (size overflow)", path);
    size_t have = len - pre - hlen;
    if (have < bytes)
        return amp_fail(AMP_EFORMAT, "%s: data truncated: shape needs %zu bytes, file has %zu", path, bytes, have);
    if (have > bytes)
        return amp_fail(AMP_EFORMAT, "%s: %zu trailing bytes after the data", path, have - bytes);
    v->n = n;
    v->data = b + pre + hlen;
    return AMP_OK;
}

/* ---- writers ----------------------------------------------------------- */
amp_status amp_npy_header(const char *descr, int ndim, const size_t *shape, char *buf, size_t cap,
                          size_t *len)
{
    char dict[64 + AMP_MAX_DIMS * 24];
    if (ndim < 0 || ndim > AMP_MAX_DIMS)
        return amp_fail(AMP_EINVAL, "npy header: %d dimensions (0..%d)", ndim, AMP_MAX_DIMS);
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, ndim == 1 ? "%zu," : i ? ", %zu" : "%zu", shape[i]);
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    AMP_ASSERT(k > 0 && (size_t)k < sizeof dict);
    /* total = pre + dict + padding + '\n', a multiple of 64 */
    size_t pre = 10, total = ((pre + (size_t)k + 1 + 63) / 64) * 64;
    int major = 1;
    if (total - pre > 65535) { major = 2; pre = 12; total = ((pre + (size_t)k + 1 + 63) / 64) * 64; }
    if (total > cap) return amp_fail(AMP_ERANGE, "npy header: %zu bytes do not fit in %zu", total, cap);
    size_t hl = total - pre;
    memcpy(buf, npy_magic, 6);
    buf[6] = (char)major;
    buf[7] = 0;
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)((hl >> 8) & 0xff);
    if (major == 2) { buf[10] = (char)((hl >> 16) & 0xff); buf[11] = (char)((hl >> 24) & 0xff); }
    memcpy(buf + pre, dict, (size_t)k);
    memset(buf + pre + k, ' ', total - pre - (size_t)k - 1);
    buf[total - 1] = '\n';
    *len = total;
    return AMP_OK;
}

static amp_status npy_write(const char *path, const char *descr, size_t elsize, const void *x, int ndim,
                            const size_t *shape)
{
    char hdr[512];
    size_t hl, n = 1, bytes;
    amp_status st = amp_npy_header(descr, ndim, shape, hdr, sizeof hdr, &hl);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", amp_errmsg());
        return amp_fail(st, "%s: %s", path, msg);
    }
    for (int i = 0; i < ndim; i++)
        if (!amp_mul_size(n, shape[i], &n)) return amp_fail(AMP_ERANGE, "%s: shape too large", path);
    if (!amp_mul_size(n, elsize, &bytes)) return amp_fail(AMP_ERANGE, "%s: shape too large", path);
    amp_afile af;
    if ((st = amp_afile_open(&af, path))) return st;
    if (fwrite(hdr, 1, hl, af.fp) != hl || (bytes && fwrite(x, 1, bytes, af.fp) != bytes)) {
        int e = errno;
        amp_afile_abort(&af);
        return amp_fail(AMP_EIO, "%s: write failed: %s", path, strerror(e ? e : EIO));
    }
    return amp_afile_commit(&af);
}

amp_status amp_npy_write_f32(const char *path, const float *x, int ndim, const size_t *shape)
{
    return npy_write(path, "<f4", 4, x, ndim, shape);
}

amp_status amp_npy_write_u8(const char *path, const uint8_t *x, int ndim, const size_t *shape)
{
    return npy_write(path, "|u1", 1, x, ndim, shape);
}

amp_status amp_npy_write_u16(const char *path, const uint16_t *x, int ndim, const size_t *shape)
{
    return npy_write(path, "<u2", 2, x, ndim, shape);
}
