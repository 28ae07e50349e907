/* .npz files (numpy.savez / savez_compressed): a zip archive of .npy members,
 * stored (method 0) or deflated (method 8, through zlib). The reader walks the
 * central directory (zip64 sizes and offsets included), checks every member's
 * local header, sizes and CRC-32, and parses each member with the .npy reader.
 * Stored members are views into the mapping; deflated ones are inflated into
 * one arena that the caller frees. Strict like the other readers: AMP_EFORMAT
 * naming the file (and member) and the defect. */
#include "amp_base.h"
#include "amp_tensorio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

#define NPZ_MAX_MEMBERS 65536
/* deflate expands at most ~1032:1; a member that claims more is malformed */
#define NPZ_MAX_RATIO 1040

typedef struct member {
    char name[256];
    int method;
    uint32_t crc;
    uint64_t csize, usize, off;   /* compressed, uncompressed sizes; local header offset */
    uint64_t data;                /* offset of the data (after the local header) */
} member;

/* The zip64 extra field of a central directory entry: the fields that were
 * 0xFFFFFFFF, in order usize, csize, offset. */
static amp_status zip64_extra(const char *path, const unsigned char *x, size_t n, member *m, int need_u, int need_c,
                              int need_o)
{
    while (n >= 4) {
        uint16_t id = rd16(x), len = rd16(x + 2);
        if ((size_t)len + 4 > n) break;
        if (id == 1) {
            const unsigned char *p = x + 4, *e = x + 4 + len;
            if (need_u) { if (p + 8 > e) break; m->usize = rd64(p); p += 8; }
            if (need_c) { if (p + 8 > e) break; m->csize = rd64(p); p += 8; }
            if (need_o) { if (p + 8 > e) break; m->off = rd64(p); }
            return AMP_OK;
        }
        x += 4 + len;
        n -= 4 + (size_t)len;
    }
    return amp_fail(AMP_EFORMAT, "%s: member '%s': bad zip64 extra field", path, m->name);
}

/* End of central directory: entries, directory offset and size. */
static amp_status find_dir(const char *path, const unsigned char *b, size_t len, uint64_t *count, uint64_t *off,
                           uint64_t *size)
{
    if (len < 22) return amp_fail(AMP_EFORMAT, "%s: not a zip archive (too short)", path);
    size_t lo = len > 22 + 65535 ? len - 22 - 65535 : 0;
    size_t e = len - 22;
    while (!(rd32(b + e) == 0x06054b50 && e + 22 + rd16(b + e + 20) == len)) {
        if (e == lo) return amp_fail(AMP_EFORMAT, "%s: not a zip archive (no end of central directory)", path);
        e--;
    }
    if (rd16(b + e + 4) || rd16(b + e + 6)) return amp_fail(AMP_EFORMAT, "%s: multi-disk zip archives are not supported", path);
    *count = rd16(b + e + 10);
    *size = rd32(b + e + 12);
    *off = rd32(b + e + 16);
    if (*count == 0xFFFF || *size == 0xFFFFFFFFu || *off == 0xFFFFFFFFu) {
        /* zip64: the locator (20 bytes) right before, pointing at the zip64 end record */
        if (e < 20 || rd32(b + e - 20) != 0x07064b50) return amp_fail(AMP_EFORMAT, "%s: zip64 locator missing", path);
        uint64_t r = rd64(b + e - 20 + 8);
        if (r > len || len - r < 56 || rd32(b + r) != 0x06064b50) return amp_fail(AMP_EFORMAT, "%s: bad zip64 end record", path);
        *count = rd64(b + r + 32);
        *size = rd64(b + r + 40);
        *off = rd64(b + r + 48);
    }
    if (*off > len || *size > len - *off) return amp_fail(AMP_EFORMAT, "%s: central directory outside the file", path);
    if (*count > NPZ_MAX_MEMBERS) return amp_fail(AMP_EFORMAT, "%s: more than %d members", path, NPZ_MAX_MEMBERS);
    return AMP_OK;
}

/* Reads central directory entry at *p (advanced) into m and checks its local header. */
static amp_status read_entry(const char *path, const unsigned char *b, size_t len, const unsigned char **p,
                             const unsigned char *end, member *m)
{
    const unsigned char *q = *p;
    if (end - q < 46 || rd32(q) != 0x02014b50) return amp_fail(AMP_EFORMAT, "%s: bad central directory entry", path);
    memset(m, 0, sizeof *m);
    uint16_t flags = rd16(q + 8), nl = rd16(q + 28), xl = rd16(q + 30), cl = rd16(q + 32);
    m->method = rd16(q + 10);
    m->crc = rd32(q + 16);
    m->csize = rd32(q + 20);
    m->usize = rd32(q + 24);
    m->off = rd32(q + 42);
    if ((size_t)(end - q) < 46u + nl + xl + cl) return amp_fail(AMP_EFORMAT, "%s: central directory entry truncated", path);
    if (nl == 0 || nl >= sizeof m->name || memchr(q + 46, 0, nl)) return amp_fail(AMP_EFORMAT, "%s: bad member name", path);
    memcpy(m->name, q + 46, nl);
    int nu = m->usize == 0xFFFFFFFFu, nc = m->csize == 0xFFFFFFFFu, no = m->off == 0xFFFFFFFFu;
    if ((nu || nc || no) && zip64_extra(path, q + 46 + nl, xl, m, nu, nc, no)) return AMP_EFORMAT;
    *p = q + 46 + nl + xl + cl;
    if (flags & 1) return amp_fail(AMP_EFORMAT, "%s: member '%s' is encrypted", path, m->name);
    if (m->method != 0 && m->method != 8)
        return amp_fail(AMP_EFORMAT, "%s: member '%s': compression method %d (only stored and deflated)", path, m->name, m->method);
    if (m->method == 0 && m->csize != m->usize) return amp_fail(AMP_EFORMAT, "%s: member '%s': stored sizes differ", path, m->name);
    if (m->usize > m->csize * NPZ_MAX_RATIO + 1024)
        return amp_fail(AMP_EFORMAT, "%s: member '%s': uncompressed size too large for its data", path, m->name);
    if (m->off > len || len - m->off < 30 || rd32(b + m->off) != 0x04034b50)
        return amp_fail(AMP_EFORMAT, "%s: member '%s': bad local header", path, m->name);
    uint64_t d = m->off + 30 + rd16(b + m->off + 26) + rd16(b + m->off + 28);
    if (d > len || m->csize > len - d) return amp_fail(AMP_EFORMAT, "%s: member '%s': data outside the file", path, m->name);
    m->data = d;
    return AMP_OK;
}

static amp_status inflate_member(const char *path, const member *m, const unsigned char *src, unsigned char *dst)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) return amp_fail(AMP_ENOMEM, "%s: zlib: cannot start inflate", path);
    uint64_t in_left = m->csize, out_left = m->usize;
    int rc = Z_OK;
    z.next_out = dst;
    z.next_in = (unsigned char *)(uintptr_t)src;
    while (rc == Z_OK) {
        if (!z.avail_in && in_left) { z.avail_in = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left; in_left -= z.avail_in; }
        if (!z.avail_out && out_left) { z.avail_out = out_left > (1u << 30) ? (1u << 30) : (uInt)out_left; out_left -= z.avail_out; }
        uInt ai = z.avail_in, ao = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR || (rc == Z_OK && ai == z.avail_in && ao == z.avail_out)) break;
    }
    uint64_t got = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != m->usize)
        return amp_fail(AMP_EFORMAT, "%s: member '%s': deflate data corrupt or size wrong", path, m->name);
    return AMP_OK;
}

static uint32_t crc_of(const unsigned char *p, uint64_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

/* 1 if the .npy member's dtype is an integer, bool or other non-float kind
 * ('descr' of kind i, u, b, c, U, S, O, V...): such members are left out. */
static int non_float_member(const unsigned char *d, uint64_t len, char *descr, size_t cap)
{
    size_t n = len < 512 ? (size_t)len : 512;
    const unsigned char *k = NULL;
    for (size_t i = 0; i + 9 < n && !k; i++)
        if (!memcmp(d + i, "'descr':", 8)) k = d + i + 8;
    if (!k) return 0;
    while (k < d + n && *k == ' ') k++;
    if (k + 3 >= d + n || (*k != '\'' && *k != '"')) return 0;
    const unsigned char *q = k + 1, *e = memchr(q, *k, (size_t)(d + n - q));
    if (!e || e - q < 2 || (size_t)(e - q) >= cap) return 0;
    memcpy(descr, q, (size_t)(e - q));
    descr[e - q] = 0;
    char kind = (*q == '<' || *q == '>' || *q == '|' || *q == '=') ? (char)q[1] : (char)q[0];
    return kind != 'f';
}

amp_status amp_npz_parse(const char *path, const void *buf, size_t len, amp_tensor_view **tensors, int *n,
                         void **arena, int *n_skipped, char skipped[256])
{
    int skip_local;
    if (!n_skipped) n_skipped = &skip_local;
    *n_skipped = 0;
    if (skipped) skipped[0] = 0;
    const unsigned char *b = buf;
    *tensors = NULL;
    *n = 0;
    *arena = NULL;
    uint64_t count = 0, doff = 0, dsize = 0;
    amp_status st = find_dir(path, b, len, &count, &doff, &dsize);
    if (st) return st;
    member *ms = calloc(count ? count : 1, sizeof *ms);
    if (!ms) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    const unsigned char *p = b + doff, *end = b + doff + dsize;
    uint64_t total = 0;
    int deflated = 0;
    for (uint64_t i = 0; i < count && !st; i++) {
        st = read_entry(path, b, len, &p, end, &ms[i]);
        if (!st && ms[i].method == 8) total += ms[i].usize, deflated = 1;
    }
    unsigned char *ar = NULL;
    amp_tensor_view *v = NULL;
    if (!st && deflated && !(ar = malloc(total ? total : 1))) st = amp_fail(AMP_ENOMEM, "%s: out of memory for %llu bytes", path, (unsigned long long)total);
    if (!st && !(v = calloc(count ? count : 1, sizeof *v))) st = amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    uint64_t at = 0;
    int nt = 0;
    for (uint64_t i = 0; i < count && !st; i++) {
        member *m = &ms[i];
        const unsigned char *data = b + m->data;
        if (m->method == 8) {
            if ((st = inflate_member(path, m, data, ar + at))) break;
            data = ar + at;
            at += m->usize;
        }
        if (crc_of(data, m->usize) != m->crc) { st = amp_fail(AMP_EFORMAT, "%s: member '%s': CRC-32 mismatch", path, m->name); break; }
        size_t nl = strlen(m->name);
        if (nl < 5 || strcmp(m->name + nl - 4, ".npy")) { st = amp_fail(AMP_EFORMAT, "%s: member '%s' is not a .npy", path, m->name); break; }
        for (uint64_t j = 0; j < i; j++)
            if (!strcmp(ms[j].name, m->name)) { st = amp_fail(AMP_EFORMAT, "%s: member '%s' appears twice", path, m->name); break; }
        if (st) break;
        char mp[4400], descr[32];
        snprintf(mp, sizeof mp, "%s:%s", path, m->name);
        if ((st = amp_npy_parse(mp, data, (size_t)m->usize, &v[nt]))) {
            if (!non_float_member(data, m->usize, descr, sizeof descr)) break;
            st = AMP_OK;                          /* an integer/bool/... member: left out */
            if (!(*n_skipped)++ && skipped) snprintf(skipped, 256, "%.200s (%s)", m->name, descr);
            continue;
        }
        snprintf(v[nt].name, sizeof v[nt].name, "%.*s", (int)(nl - 4), m->name);
        nt++;
    }
    free(ms);
    if (st) { free(ar); free(v); return st; }
    if (!nt) { free(v); v = NULL; }
    *tensors = v;
    *n = nt;
    *arena = ar;
    return AMP_OK;
}
