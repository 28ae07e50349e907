/* Checkpoint files: named CRC'ed sections, atomic writes, a strict reader,
 * and the (de)serializers of the training emulator's state. Layout and
 * contracts: amp_checkpoint.h. */
#include "amp_base.h"
#include "amp_checkpoint.h"
#include "amp_io.h"
#include "amp_optim.h"
#include "amp_scaler.h"
#include "amp_tensor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c stores float32 payloads in host order: little-endian hosts only"
#endif

static const char magic[8] = { 'A', 'M', 'P', 'S', 'I', 'M', 'C', 'K' };
static const char endmagic[8] = { 'A', 'M', 'P', 'S', 'I', 'M', 'E', 'N' };
#define HEADER_LEN 16u
#define TRAILER_LEN 16u

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }

/* crc32 over any length (zlib takes uInt lengths). */
static uint32_t crc_add(uint32_t crc, const void *data, size_t len)
{
    const Bytef *p = data;
    while (len) {
        uInt k = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, k);
        p += k;
        len -= k;
    }
    return crc;
}

static int name_ok(const char *name, size_t len)
{
    if (len == 0 || len >= AMP_CKPT_NAME) return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e) return 0;
    return 1;
}

/* ---- writer ------------------------------------------------------------------ */
static amp_status wfail(amp_ckpt_writer *w, int e)
{
    amp_status s = amp_fail(AMP_EIO, "%s: write failed: %s", w->af.path, strerror(e ? e : EIO));
    amp_afile_abort(&w->af);
    w->err = s;
    return s;
}

static amp_status wbytes(amp_ckpt_writer *w, const void *p, size_t len)
{
    if (len && fwrite(p, 1, len, w->af.fp) != len) return wfail(w, errno);
    w->crc = crc_add(w->crc, p, len);
    return AMP_OK;
}

amp_status amp_ckpt_create(amp_ckpt_writer *w, const char *path)
{
    memset(w, 0, sizeof *w);
    w->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    amp_status s = amp_afile_open(&w->af, path);
    if (s) { w->err = s; return s; }
    uint8_t h[HEADER_LEN];
    memcpy(h, magic, 8);
    put32(h + 8, AMP_CKPT_VERSION);
    put32(h + 12, 0);
    return wbytes(w, h, sizeof h);
}

amp_status amp_ckpt_put(amp_ckpt_writer *w, const char *name, const void *data, size_t len)
{
    if (w->err) return w->err;
    size_t nl = strlen(name);
    if (!name_ok(name, nl))
        return amp_fail(AMP_EINVAL, "%s: bad checkpoint section name '%s'", w->af.path, name);
    for (uint32_t i = 0; i < w->n; i++)
        if (!strcmp(w->names[i], name))
            return amp_fail(AMP_EINVAL, "%s: section '%s' written twice", w->af.path, name);
    if (w->n == w->cap) {
        uint32_t nc = w->cap ? w->cap * 2 : 64;
        char (*nn)[AMP_CKPT_NAME] = realloc(w->names, nc * sizeof *nn);
        if (!nn) return amp_fail(AMP_ENOMEM, "%s: out of memory", w->af.path);
        w->names = nn;
        w->cap = nc;
    }
    uint8_t h[2 + AMP_CKPT_NAME + 8 + 4];
    h[0] = (uint8_t)nl;
    h[1] = (uint8_t)(nl >> 8);
    memcpy(h + 2, name, nl);
    amp_put_le64(h + 2 + nl, (uint64_t)len);
    uint32_t c = crc_add((uint32_t)crc32(0L, Z_NULL, 0), h, 2 + nl + 8);
    c = crc_add(c, data, len);
    put32(h + 2 + nl + 8, c);
    amp_status s = wbytes(w, h, 2 + nl + 8 + 4);
    if (!s) s = wbytes(w, data, len);
    if (s) return s;
    memcpy(w->names[w->n], name, nl + 1);
    w->n++;
    return AMP_OK;
}

amp_status amp_ckpt_commit(amp_ckpt_writer *w)
{
    if (w->err) { amp_ckpt_abort(w); return w->err; }
    uint8_t t[TRAILER_LEN];
    memcpy(t, endmagic, 8);
    put32(t + 8, w->n);
    put32(t + 12, w->crc);
    amp_status s = wbytes(w, t, sizeof t);
    if (!s) s = amp_afile_commit(&w->af);
    w->err = s;
    free(w->names);
    w->names = NULL;
    w->cap = 0;
    return s;
}

void amp_ckpt_abort(amp_ckpt_writer *w)
{
    amp_afile_abort(&w->af);
    free(w->names);
    w->names = NULL;
    w->cap = 0;
}

/* ---- reader ------------------------------------------------------------------ */
void amp_ckpt_free(amp_ckpt *ck)
{
    free(ck->owned);
    free(ck->sec);
    memset(ck, 0, sizeof *ck);
}

amp_status amp_ckpt_parse(const char *what, const uint8_t *data, size_t len, amp_ckpt *ck)
{
    memset(ck, 0, sizeof *ck);
    snprintf(ck->path, sizeof ck->path, "%s", what);
    amp_status s = AMP_OK;
#define BAD(...) do { s = amp_fail(AMP_EFORMAT, __VA_ARGS__); goto fail; } while (0)
    if (len < HEADER_LEN || memcmp(data, magic, 8))
        BAD("%s: not an ampsim checkpoint (no AMPSIMCK magic)", what);
    ck->version = get32(data + 8);
    if (ck->version != AMP_CKPT_VERSION)
        BAD("%s: checkpoint version %u, this ampsim reads version %u", what, ck->version, AMP_CKPT_VERSION);
    if (get32(data + 12) != 0) BAD("%s: unknown header flags 0x%x", what, get32(data + 12));
    if (len < HEADER_LEN + TRAILER_LEN) BAD("%s: truncated (no trailer)", what);
    size_t end = len - TRAILER_LEN, pos = HEADER_LEN;
    const uint8_t *tr = data + end;
    if (memcmp(tr, endmagic, 8)) BAD("%s: truncated or corrupt (no AMPSIMEN trailer at the end)", what);
    if (crc_add((uint32_t)crc32(0L, Z_NULL, 0), data, end) != get32(tr + 12))
        BAD("%s: file checksum mismatch (corrupt)", what);
    uint32_t want = get32(tr + 8);
    /* a section takes at least 2 + 1 + 8 + 4 bytes: bounds the count */
    if (want > (end - pos) / 15) BAD("%s: trailer claims %u sections, more than fit", what, want);
    ck->sec = calloc(want ? want : 1, sizeof *ck->sec);
    if (!ck->sec) { s = amp_fail(AMP_ENOMEM, "%s: out of memory", what); goto fail; }
    while (pos < end) {
        if (ck->n == want) BAD("%s: more sections than the trailer's %u", what, want);
        if (end - pos < 2) BAD("%s: truncated section header at byte %zu", what, pos);
        size_t nl = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        if (nl == 0 || nl >= AMP_CKPT_NAME) BAD("%s: bad section name length %zu at byte %zu", what, nl, pos);
        if (end - pos < 2 + nl + 12) BAD("%s: truncated section header at byte %zu", what, pos);
        const char *nm = (const char *)data + pos + 2;
        if (!name_ok(nm, nl)) BAD("%s: bad section name at byte %zu", what, pos);
        amp_ckpt_section *sec = &ck->sec[ck->n];
        memcpy(sec->name, nm, nl);
        sec->name[nl] = 0;
        uint64_t pl = amp_get_le64(data + pos + 2 + nl);
        uint32_t crc = get32(data + pos + 2 + nl + 8);
        size_t hdr = 2 + nl + 12;
        if (pl > end - pos - hdr)
            BAD("%s: section '%s': length %llu runs past the end of the file", what, sec->name,
                (unsigned long long)pl);
        sec->data = data + pos + hdr;
        sec->len = (size_t)pl;
        uint32_t c = crc_add((uint32_t)crc32(0L, Z_NULL, 0), data + pos, 2 + nl + 8);
        if (crc_add(c, sec->data, sec->len) != crc) BAD("%s: section '%s': checksum mismatch", what, sec->name);
        for (uint32_t i = 0; i < ck->n; i++)
            if (!strcmp(ck->sec[i].name, sec->name)) BAD("%s: section '%s' appears twice", what, sec->name);
        ck->n++;
        pos += hdr + sec->len;
    }
    if (ck->n != want) BAD("%s: %u sections, the trailer says %u", what, ck->n, want);
#undef BAD
    return AMP_OK;
fail:
    free(ck->sec);
    ck->sec = NULL;
    ck->n = 0;
    return s;
}

amp_status amp_ckpt_load(const char *path, amp_ckpt *ck)
{
    char *buf;
    size_t len;
    memset(ck, 0, sizeof *ck);
    amp_status s = amp_read_file(path, AMP_CKPT_MAX_BYTES, &buf, &len);
    if (s) return s;
    s = amp_ckpt_parse(path, (const uint8_t *)buf, len, ck);
    if (s) { free(buf); return s; }
    ck->owned = (uint8_t *)buf;
    return AMP_OK;
}

const amp_ckpt_section *amp_ckpt_find(const amp_ckpt *ck, const char *name)
{
    for (uint32_t i = 0; i < ck->n; i++)
        if (!strcmp(ck->sec[i].name, name)) return &ck->sec[i];
    return NULL;
}

amp_status amp_ckpt_get(const amp_ckpt *ck, const char *name, void *out, size_t len)
{
    const amp_ckpt_section *sec = amp_ckpt_find(ck, name);
    if (!sec) return amp_fail(AMP_EFORMAT, "%s: no section '%s'", ck->path, name);
    if (sec->len != len)
        return amp_fail(AMP_EFORMAT, "%s: section '%s' has %zu bytes, expected %zu", ck->path, name, sec->len, len);
    if (len) memcpy(out, sec->data, len);
    return AMP_OK;
}

amp_status amp_ckpt_put_u64(amp_ckpt_writer *w, const char *name, uint64_t v)
{
    uint8_t b[8];
    amp_put_le64(b, v);
    return amp_ckpt_put(w, name, b, 8);
}

amp_status amp_ckpt_get_u64(const amp_ckpt *ck, const char *name, uint64_t *v)
{
    uint8_t b[8];
    amp_status s = amp_ckpt_get(ck, name, b, 8);
    if (!s) *v = amp_get_le64(b);
    return s;
}

amp_status amp_ckpt_put_f64(amp_ckpt_writer *w, const char *name, double v)
{
    return amp_ckpt_put_u64(w, name, amp_d2u(v));
}

amp_status amp_ckpt_get_f64(const amp_ckpt *ck, const char *name, double *v)
{
    uint64_t u;
    amp_status s = amp_ckpt_get_u64(ck, name, &u);
    if (!s) *v = amp_u2d(u);
    return s;
}

/* ---- a small cursor for structured payloads ------------------------------------ */
typedef struct buf { uint8_t *p; size_t n, cap; int oom; } buf;

static void b_put(buf *b, const void *p, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u32(buf *b, uint32_t v) { uint8_t x[4]; put32(x, v); b_put(b, x, 4); }
static void b_u64(buf *b, uint64_t v) { uint8_t x[8]; amp_put_le64(x, v); b_put(b, x, 8); }

static amp_status b_emit(amp_ckpt_writer *w, const char *name, buf *b)
{
    amp_status s = b->oom ? amp_fail(AMP_ENOMEM, "%s: out of memory", w->af.path)
                          : amp_ckpt_put(w, name, b->p, b->n);
    free(b->p);
    memset(b, 0, sizeof *b);
    return s;
}

typedef struct cur { const uint8_t *p; size_t n, pos; int bad; } cur;
static const uint8_t *c_take(cur *c, size_t n)
{
    if (c->bad || n > c->n - c->pos) { c->bad = 1; return NULL; }
    const uint8_t *p = c->p + c->pos;
    c->pos += n;
    return p;
}
static uint32_t c_u32(cur *c) { const uint8_t *p = c_take(c, 4); return p ? get32(p) : 0; }
static uint64_t c_u64(cur *c) { const uint8_t *p = c_take(c, 8); return p ? amp_get_le64(p) : 0; }
static int64_t c_i64(cur *c) { return (int64_t)c_u64(c); }

static amp_status c_open(const amp_ckpt *ck, const char *name, cur *c)
{
    const amp_ckpt_section *sec = amp_ckpt_find(ck, name);
    if (!sec) return amp_fail(AMP_EFORMAT, "%s: no section '%s'", ck->path, name);
    c->p = sec->data;
    c->n = sec->len;
    c->pos = 0;
    c->bad = 0;
    return AMP_OK;
}

static amp_status c_done(const amp_ckpt *ck, const char *name, const cur *c)
{
    if (c->bad || c->pos != c->n)
        return amp_fail(AMP_EFORMAT, "%s: section '%s': wrong length (%zu bytes)", ck->path, name, c->n);
    return AMP_OK;
}

/* ---- tensors ------------------------------------------------------------------- */
#define FMT_NAME 24

amp_status amp_ckpt_put_tensors(amp_ckpt_writer *w, const amp_tensors *r, unsigned roles)
{
    char name[AMP_CKPT_NAME];
    for (int i = 0; i < r->n; i++) {
        const amp_tensor *t = r->t[i];
        if (!(roles & (1u << t->role))) continue;
        if ((size_t)snprintf(name, sizeof name, "t/%s", t->name) >= sizeof name)
            return amp_fail(AMP_EINVAL, "%s: tensor name '%s' too long for a checkpoint", w->af.path, t->name);
        buf b = { 0 };
        char fmt[FMT_NAME] = { 0 };
        snprintf(fmt, sizeof fmt, "%s", t->fmt.name);
        b_u32(&b, (uint32_t)t->role);
        b_u32(&b, (uint32_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) b_u64(&b, t->shape[d]);
        b_put(&b, fmt, FMT_NAME);
        b_u32(&b, amp_f2u(t->scale));
        if (t->n) b_put(&b, t->data, t->n * sizeof(float));
        amp_status s = b_emit(w, name, &b);
        if (s) return s;
    }
    return AMP_OK;
}

/* Checks section sec against tensor t; on success *vals points at its values. */
static amp_status tensor_match(const amp_ckpt *ck, const amp_ckpt_section *sec, const amp_tensor *t,
                               const uint8_t **vals, float *scale)
{
    cur c = { sec->data, sec->len, 0, 0 };
    uint32_t role = c_u32(&c), ndim = c_u32(&c);
    if (c.bad || ndim > AMP_TENSOR_MAXDIM)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': bad header", ck->path, t->name);
    if (role != (uint32_t)t->role)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': role %u, the model has %s", ck->path, t->name, role,
                        amp_role_name(t->role));
    int same = (int)ndim == t->ndim;
    for (uint32_t d = 0; d < ndim; d++) {
        uint64_t v = c_u64(&c);
        if (same && v != t->shape[d]) same = 0;
    }
    if (c.bad || !same) return amp_fail(AMP_EFORMAT, "%s: tensor '%s': shape differs from the model's", ck->path, t->name);
    const uint8_t *fmt = c_take(&c, FMT_NAME);
    if (!fmt || memchr(fmt, 0, FMT_NAME) == NULL || strcmp((const char *)fmt, t->fmt.name))
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': format differs from the model's %s", ck->path, t->name,
                        t->fmt.name);
    *scale = amp_u2f(c_u32(&c));
    *vals = c_take(&c, t->n * sizeof(float));
    if (c.bad || c.pos != c.n)
        return amp_fail(AMP_EFORMAT, "%s: tensor '%s': %zu bytes of values, expected %zu", ck->path, t->name,
                        c.n - (c.pos < c.n ? c.pos : c.n), t->n * sizeof(float));
    return AMP_OK;
}

amp_status amp_ckpt_get_tensors(const amp_ckpt *ck, amp_tensors *r, unsigned roles)
{
    char name[AMP_CKPT_NAME];
    /* pass 1: everything matches */
    for (int i = 0; i < r->n; i++) {
        const amp_tensor *t = r->t[i];
        if (!(roles & (1u << t->role))) continue;
        snprintf(name, sizeof name, "t/%s", t->name);
        const amp_ckpt_section *sec = amp_ckpt_find(ck, name);
        if (!sec) return amp_fail(AMP_EFORMAT, "%s: no tensor '%s' (the model has it)", ck->path, t->name);
        const uint8_t *v;
        float sc;
        amp_status s = tensor_match(ck, sec, t, &v, &sc);
        if (s) return s;
    }
    for (uint32_t i = 0; i < ck->n; i++) {
        if (strncmp(ck->sec[i].name, "t/", 2)) continue;
        const amp_tensor *t = amp_tensors_find(r, ck->sec[i].name + 2);
        if (!t) return amp_fail(AMP_EFORMAT, "%s: tensor '%s' is not in the model", ck->path, ck->sec[i].name + 2);
        if (!(roles & (1u << t->role)))
            return amp_fail(AMP_EFORMAT, "%s: tensor '%s' (role %s) was not expected in the checkpoint", ck->path,
                            t->name, amp_role_name(t->role));
    }
    /* pass 2: copy */
    for (int i = 0; i < r->n; i++) {
        amp_tensor *t = r->t[i];
        if (!(roles & (1u << t->role))) continue;
        snprintf(name, sizeof name, "t/%s", t->name);
        const uint8_t *v;
        float sc;
        AMP_ASSERT(tensor_match(ck, amp_ckpt_find(ck, name), t, &v, &sc) == AMP_OK);
        if (t->n) memcpy(t->data, v, t->n * sizeof(float));
        t->scale = sc;
    }
    return AMP_OK;
}

/* ---- scalers and optimizer ----------------------------------------------------- */
static void b_text(buf *b, const char *s, size_t field)
{
    char tmp[256] = { 0 };
    AMP_ASSERT(field <= sizeof tmp);
    snprintf(tmp, field, "%s", s);
    b_put(b, tmp, field);
}

static int c_text_eq(cur *c, const char *s, size_t field)
{
    const uint8_t *p = c_take(c, field);
    char tmp[256] = { 0 };
    snprintf(tmp, field, "%s", s);
    return p && !memcmp(p, tmp, field);
}

amp_status amp_ckpt_put_scaler(amp_ckpt_writer *w, const amp_scaler *sc)
{
    buf b = { 0 };
    b_text(&b, sc->spec.text, sizeof sc->spec.text);
    b_u64(&b, (uint64_t)(int64_t)sc->step);
    b_u32(&b, amp_f2u(sc->scale));
    b_u64(&b, amp_d2u(sc->dscale));
    b_u64(&b, (uint64_t)(int64_t)sc->tracker);
    b_u64(&b, (uint64_t)(int64_t)sc->hyst);
    b_u64(&b, (uint64_t)(int64_t)sc->last_overflow);
    b_u32(&b, (uint32_t)sc->failed);
    b_u32(&b, (uint32_t)sc->gexp);
    b_u64(&b, sc->n_tensors);
    for (size_t i = 0; i < sc->n_tensors; i++) b_u32(&b, (uint32_t)sc->texp[i]);
    return b_emit(w, "scaler", &b);
}

amp_status amp_ckpt_get_scaler(const amp_ckpt *ck, amp_scaler *sc)
{
    cur c = { 0 };
    amp_status s = c_open(ck, "scaler", &c);
    if (s) return s;
    if (!c_text_eq(&c, sc->spec.text, sizeof sc->spec.text))
        return amp_fail(AMP_EFORMAT, "%s: section 'scaler': saved for another --scaler than '%s'", ck->path,
                        sc->spec.text);
    amp_scaler v = *sc;
    v.step = (long)c_i64(&c);
    v.scale = amp_u2f(c_u32(&c));
    v.dscale = amp_u2d(c_u64(&c));
    v.tracker = (long)c_i64(&c);
    v.hyst = (long)c_i64(&c);
    v.last_overflow = (long)c_i64(&c);
    v.failed = (int)c_u32(&c);
    v.gexp = (int32_t)c_u32(&c);
    uint64_t nt = c_u64(&c);
    if (c.bad || nt > (c.n - c.pos) / 4)
        return amp_fail(AMP_EFORMAT, "%s: section 'scaler': bad tensor count", ck->path);
    int *texp = NULL;
    if (nt) {
        texp = malloc((size_t)nt * sizeof *texp);
        if (!texp) return amp_fail(AMP_ENOMEM, "%s: out of memory", ck->path);
        for (uint64_t i = 0; i < nt; i++) texp[i] = (int32_t)c_u32(&c);
    }
    if ((s = c_done(ck, "scaler", &c))) { free(texp); return s; }
    free(sc->texp);
    v.texp = texp;
    v.n_tensors = (size_t)nt;
    *sc = v;
    return AMP_OK;
}

amp_status amp_ckpt_put_fp8(amp_ckpt_writer *w, const amp_fp8_scaler *sc)
{
    buf b = { 0 };
    b_text(&b, sc->spec.text, sizeof sc->spec.text);
    b_u64(&b, (uint64_t)sc->spec.history);
    b_u64(&b, sc->n);
    for (size_t i = 0; i < sc->n; i++) {
        const amp_fp8_tstate *t = &sc->t[i];
        b_u32(&b, amp_f2u(t->scale));
        b_u64(&b, (uint64_t)(int64_t)t->count);
        b_u32(&b, t->hist != NULL);
        if (t->hist)
            for (long k = 0; k < sc->spec.history; k++) b_u32(&b, amp_f2u(t->hist[k]));
    }
    return b_emit(w, "fp8", &b);
}

amp_status amp_ckpt_get_fp8(const amp_ckpt *ck, amp_fp8_scaler *sc)
{
    cur c = { 0 };
    amp_status s = c_open(ck, "fp8", &c);
    if (s) return s;
    if (!c_text_eq(&c, sc->spec.text, sizeof sc->spec.text))
        return amp_fail(AMP_EFORMAT, "%s: section 'fp8': saved for another FP8 scaler than '%s'", ck->path,
                        sc->spec.text);
    uint64_t L = c_u64(&c), n = c_u64(&c);
    if (c.bad || L != (uint64_t)sc->spec.history || n > (c.n - c.pos) / 16)
        return amp_fail(AMP_EFORMAT, "%s: section 'fp8': bad header", ck->path);
    amp_fp8_tstate *t = calloc(n ? (size_t)n : 1, sizeof *t);
    if (!t) return amp_fail(AMP_ENOMEM, "%s: out of memory", ck->path);
    for (uint64_t i = 0; i < n && !c.bad; i++) {
        t[i].scale = amp_u2f(c_u32(&c));
        t[i].count = (long)c_i64(&c);
        uint32_t has = c_u32(&c);
        if (has > 1 || (has && (L == 0 || L > (c.n - c.pos) / 4))) { c.bad = 1; break; }
        if (has) {
            t[i].hist = malloc((size_t)L * sizeof *t[i].hist);
            if (!t[i].hist) { c.bad = 1; break; }
            for (uint64_t k = 0; k < L; k++) t[i].hist[k] = amp_u2f(c_u32(&c));
        }
    }
    s = c_done(ck, "fp8", &c);
    if (s) {
        for (uint64_t i = 0; i < n; i++) free(t[i].hist);
        free(t);
        return s;
    }
    for (size_t i = 0; i < sc->n; i++) free(sc->t[i].hist);
    free(sc->t);
    sc->t = t;
    sc->n = (size_t)n;
    return AMP_OK;
}

amp_status amp_ckpt_put_optim(amp_ckpt_writer *w, const amp_optim *o)
{
    buf b = { 0 };
    b_u32(&b, (uint32_t)o->kind);
    b_u32(&b, amp_f2u(o->lr));
    b_u32(&b, amp_f2u(o->momentum));
    b_u32(&b, amp_f2u(o->beta1));
    b_u32(&b, amp_f2u(o->beta2));
    b_u32(&b, amp_f2u(o->eps));
    b_u32(&b, amp_f2u(o->weight_decay));
    b_u64(&b, (uint64_t)o->t);
    return b_emit(w, "optim", &b);
}

amp_status amp_ckpt_get_optim(const amp_ckpt *ck, amp_optim *o)
{
    cur c = { 0 };
    amp_status s = c_open(ck, "optim", &c);
    if (s) return s;
    amp_optim v = *o;
    uint32_t kind = c_u32(&c);
    v.kind = (amp_optim_kind)kind;
    v.lr = amp_u2f(c_u32(&c));
    v.momentum = amp_u2f(c_u32(&c));
    v.beta1 = amp_u2f(c_u32(&c));
    v.beta2 = amp_u2f(c_u32(&c));
    v.eps = amp_u2f(c_u32(&c));
    v.weight_decay = amp_u2f(c_u32(&c));
    v.t = c_i64(&c);
    if ((s = c_done(ck, "optim", &c))) return s;
    if (kind != (uint32_t)o->kind)
        return amp_fail(AMP_EFORMAT, "%s: section 'optim': saved for another optimizer", ck->path);
    *o = v;
    return AMP_OK;
}
