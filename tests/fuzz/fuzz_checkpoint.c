/* libFuzzer harness for checkpoint files (amp_ckpt_parse and the state
 * readers): any input gives AMP_OK or AMP_EFORMAT naming the file; never a
 * crash, leak or read outside the buffer. An accepted image is fed to every
 * state reader (tensors of a small registry, loss scaler, FP8 scaler,
 * optimizer), which must either load or refuse with AMP_EFORMAT.
 * Random mutations almost never keep the CRCs right, so each input is also
 * parsed a second time with its section CRCs, count and file CRC repaired
 * (an independent walk of the documented layout): that copy reaches the
 * length, name, duplicate and payload checks and the state readers. */
#include "ampsim.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static amp_tensors reg;
static int reg_ready;

static void make_reg(void)
{
    amp_format f32, f16;
    AMP_ASSERT(amp_format_parse("fp32", &f32) == AMP_OK && amp_format_parse("fp16", &f16) == AMP_OK);
    amp_tensors_init(&reg, 1, AMP_RND_NE, 0);
    size_t s1[2] = { 2, 2 }, s2[1] = { 3 };
    amp_tensor *t;
    AMP_ASSERT(amp_tensors_add(&reg, "w", AMP_ROLE_WEIGHT, &f16, 2, s1, &t) == AMP_OK);
    AMP_ASSERT(amp_tensors_add(&reg, "w.master", AMP_ROLE_MASTER, &f32, 2, s1, &t) == AMP_OK);
    AMP_ASSERT(amp_tensors_add(&reg, "b", AMP_ROLE_WEIGHT, &f16, 1, s2, &t) == AMP_OK);
    reg_ready = 1;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

/* Recomputes every CRC and the trailer of an image of n bytes in place. */
static void repair(uint8_t *b, size_t n)
{
    if (n < 32) return;
    size_t end = n - 16, pos = 16;
    uint32_t count = 0;
    while (end - pos >= 2) {
        size_t nl = (size_t)b[pos] | (size_t)b[pos + 1] << 8;
        if (nl == 0 || end - pos < 2 + nl + 12) break;
        uint64_t pl = (uint64_t)rd32(b + pos + 2 + nl) | (uint64_t)rd32(b + pos + 2 + nl + 4) << 32;
        size_t hdr = 2 + nl + 12;
        if (pl > end - pos - hdr) break;
        uLong c = crc32(0, b + pos, (uInt)(2 + nl + 8));
        c = crc32(c, b + pos + hdr, (uInt)pl);
        wr32(b + pos + 2 + nl + 8, (uint32_t)c);
        pos += hdr + (size_t)pl;
        count++;
    }
    memcpy(b + end, "AMPSIMEN", 8);
    wr32(b + end + 8, count);
    wr32(b + end + 12, (uint32_t)crc32(0, b, (uInt)end));
}

static void one(const uint8_t *data, size_t size, int fix);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!reg_ready) make_reg();
    one(data, size, 0);
    one(data, size, 1);
    return 0;
}

static void one(const uint8_t *data, size_t size, int fix)
{
    /* a private copy of exactly size bytes: ASan sees reads past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return;
    memcpy(buf, data, size);
    if (fix) repair(buf, size);
    amp_ckpt ck;
    amp_status st = amp_ckpt_parse("fuzz.ckpt", buf, size, &ck);
    if (st) {
        AMP_ASSERT(st == AMP_EFORMAT || st == AMP_ENOMEM);
        AMP_ASSERT(!strncmp(amp_errmsg(), "fuzz.ckpt: ", 11));
        AMP_ASSERT(ck.sec == NULL);
        free(buf);
        return;
    }
    for (uint32_t i = 0; i < ck.n; i++) {
        AMP_ASSERT(ck.sec[i].data >= buf && ck.sec[i].data + ck.sec[i].len <= buf + size);
        AMP_ASSERT(amp_ckpt_find(&ck, ck.sec[i].name) == &ck.sec[i]);
    }
    st = amp_ckpt_get_tensors(&ck, &reg, AMP_CKPT_ROLES_ALL);
    AMP_ASSERT(st == AMP_OK || st == AMP_EFORMAT);
    const char *specs[] = { "torch:init=1024", "adaptive", "deepspeed" };
    for (int k = 0; k < 3; k++) {
        amp_scaler sc;
        AMP_ASSERT(amp_scaler_init_str(&sc, specs[k]) == AMP_OK);
        st = amp_ckpt_get_scaler(&ck, &sc);
        AMP_ASSERT(st == AMP_OK || st == AMP_EFORMAT);
        amp_scaler_free(&sc);
    }
    amp_fp8_scaler f;
    AMP_ASSERT(amp_fp8_init_str(&f, "delayed:history=4") == AMP_OK);
    st = amp_ckpt_get_fp8(&ck, &f);
    AMP_ASSERT(st == AMP_OK || st == AMP_EFORMAT);
    amp_fp8_free(&f);
    amp_optim o;
    memset(&o, 0, sizeof o);
    o.kind = AMP_OPT_ADAMW;
    st = amp_ckpt_get_optim(&ck, &o);
    AMP_ASSERT(st == AMP_OK || st == AMP_EFORMAT);
    uint64_t u;
    st = amp_ckpt_get_u64(&ck, "step", &u);
    AMP_ASSERT(st == AMP_OK || st == AMP_EFORMAT);
    amp_ckpt_free(&ck);
    free(buf);
}
