/* Scaler SPEC parsing (docs/scalers.md): `name[:key=value,...]`, defaults, range
 * checks, the canonical form and the help text. The rules themselves live in
 * scaler_loss.c (loss scalers) and scaler_fp8.c (FP8 scaling). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_scaler.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[AMP_SCALER_KIND_COUNT] = {
    [AMP_SCALER_NONE] = "none",         [AMP_SCALER_STATIC] = "static",
    [AMP_SCALER_TORCH] = "torch",       [AMP_SCALER_APEX] = "apex",
    [AMP_SCALER_DEEPSPEED] = "deepspeed", [AMP_SCALER_MEGATRON] = "megatron",
    [AMP_SCALER_KERAS] = "keras",       [AMP_SCALER_ADAPTIVE] = "adaptive",
    [AMP_SCALER_UNDERFLOW] = "underflow", [AMP_SCALER_DELAYED] = "delayed",
    [AMP_SCALER_CURRENT] = "current",   [AMP_SCALER_MX] = "mx",
    [AMP_SCALER_BLOCK] = "block",
};
_Static_assert(AMP_SCALER_KIND_COUNT == 13, "kind_names covers every strategy");

/* Keys accepted by each strategy, in canonical order. */
static const char *const kind_keys[AMP_SCALER_KIND_COUNT] = {
    [AMP_SCALER_NONE] = "",
    [AMP_SCALER_STATIC] = "scale,skip",
    [AMP_SCALER_TORCH] = "init,growth,backoff,interval",
    [AMP_SCALER_APEX] = "init,window,min,max",
    [AMP_SCALER_DEEPSPEED] = "init,window,min,hysteresis,consecutive,raise",
    [AMP_SCALER_MEGATRON] = "init,min,growth,backoff,interval,hysteresis",
    [AMP_SCALER_KERAS] = "init,interval",
    [AMP_SCALER_ADAPTIVE] = "underflow,init,min,max,headroom,fmt",
    [AMP_SCALER_UNDERFLOW] = "init,growth,backoff,interval,flush,headroom,fmt",
    [AMP_SCALER_DELAYED] = "history,algo,margin,fmt",
    [AMP_SCALER_CURRENT] = "pow2,fmt",
    [AMP_SCALER_MX] = "block,exp,fmt",
    [AMP_SCALER_BLOCK] = "size,pow2,fmt",
};

static const char help_text[] =
    "scaler SPEC: name[:key=value,...]; numbers as 65536, 2^16, 1e4 or 0x1p16\n"
    "loss scalers (react to inf/NaN in the gradients):\n"
    "  none                      no scaling (scale 1, never skips)\n"
    "  static:S                  fixed scale S (also static:scale=S); skip=0 (apex static)\n"
    "  torch                     init=65536 growth=2 backoff=0.5 interval=2000 (PyTorch GradScaler)\n"
    "  apex                      init=65536 window=2000 min=none max=16777216 (Apex amp)\n"
    "  deepspeed                 init=65536 window=1000 min=1 hysteresis=2 consecutive=0 raise=1\n"
    "  megatron                  init=2^32 min=1 growth=2 backoff=0.5 interval=1000 hysteresis=2\n"
    "  keras                     init=32768 interval=2000 (Keras 3 LossScaleOptimizer)\n"
    "  adaptive                  underflow=1e-3 init=65536 min=1 max=2^40 headroom=2 fmt=fp16\n"
    "                            layer-wise (Zhao et al.): per tensor, the smallest power of two\n"
    "                            whose predicted underflow rate <= underflow, without overflow;\n"
    "                            one global scale: the largest of those, capped by every\n"
    "                            tensor's overflow bound\n"
    "  underflow                 init=65536 growth=2 backoff=0.5 interval=2000 flush=1e-3\n"
    "                            headroom=2 fmt=fp16: torch's rule, plus an early growth when the\n"
    "                            flushed fraction of gradient values exceeds flush and\n"
    "                            amax*scale*growth*headroom <= the format's max\n"
    "FP8 scaling (fmt=hybrid: E4M3 forward tensors, E5M2 gradients; or one format):\n"
    "  delayed                   history=1024 algo=max|most_recent margin=0 fmt=hybrid (TE)\n"
    "  current                   pow2=0 fmt=hybrid\n"
    "  mx                        block=32 exp=floor|ceil fmt=hybrid (E8M0 block scales)\n"
    "  block                     size=128 pow2=0 fmt=hybrid (1xsize; weights sizexsize)\n";

const char *amp_scaler_spec_help(void) { return help_text; }

const char *amp_scaler_kind_name(amp_scaler_kind k)
{
    return (k >= 0 && k < AMP_SCALER_KIND_COUNT) ? kind_names[k] : "?";
}

int amp_scaler_kind_is_fp8(amp_scaler_kind k)
{
    return k == AMP_SCALER_DELAYED || k == AMP_SCALER_CURRENT || k == AMP_SCALER_MX ||
           k == AMP_SCALER_BLOCK;
}

static void set_defaults(amp_scaler_spec *s, amp_scaler_kind k)
{
    memset(s, 0, sizeof *s);
    s->kind = k;
    s->init = 1;
    s->growth = 2;
    s->backoff = 0.5;
    s->max = INFINITY;
    s->interval = 2000;
    s->hysteresis = 1;
    s->headroom = 2;
    s->history = 1024;
    s->block = 32;
    s->fmt_hybrid = amp_scaler_kind_is_fp8(k);
    s->fmt = *amp_format_get(AMP_FMT_FP16);
    switch (k) {
    case AMP_SCALER_NONE: break;
    case AMP_SCALER_STATIC: s->init = 65536; break;
    case AMP_SCALER_TORCH: s->init = 65536; break;
    case AMP_SCALER_APEX: s->init = 65536; s->max = 16777216; break;
    case AMP_SCALER_DEEPSPEED:
        s->init = 65536; s->interval = 1000; s->min = 1; s->hysteresis = 2; s->raise = 1;
        break;
    case AMP_SCALER_MEGATRON:
        s->init = 0x1p32; s->min = 1; s->interval = 1000; s->hysteresis = 2;
        break;
    case AMP_SCALER_KERAS: s->init = 32768; break;
    case AMP_SCALER_ADAPTIVE: s->underflow = 1e-3; s->init = 65536; s->min = 1; s->max = 0x1p40; break;
    case AMP_SCALER_UNDERFLOW: s->init = 65536; s->flush = 1e-3; break;
    case AMP_SCALER_DELAYED: break;
    case AMP_SCALER_CURRENT: break;
    case AMP_SCALER_MX: s->block = 32; break;
    case AMP_SCALER_BLOCK: s->block = 128; break;
    case AMP_SCALER_KIND_COUNT: AMP_ASSERT(0);
    }
}

/* Strict number: decimal, hex float, or a^b (ldexp when a is 2 and b an integer). */
static int parse_number(const char *v, double *out)
{
    char buf[96];
    if (!*v || strlen(v) >= sizeof buf) return -1;
    strcpy(buf, v);
    char *caret = strchr(buf, '^');
    if (caret) {
        *caret = 0;
        double a, b;
        if (parse_number(buf, &a) || parse_number(caret + 1, &b)) return -1;
        if (strchr(caret + 1, '^')) return -1;
        if (a == 2 && b == floor(b) && fabs(b) < 100000) *out = ldexp(1.0, (int)b);
        else *out = pow(a, b);
        return isnan(*out) ? -1 : 0;
    }
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (end == buf || *end || isnan(d)) return -1;
    *out = d;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) { *out = 1; return 0; }
    if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) { *out = 0; return 0; }
    return -1;
}

static int key_allowed(amp_scaler_kind k, const char *key)
{
    const char *p = kind_keys[k];
    size_t n = strlen(key);
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, key, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

#define BAD(...) amp_fail(AMP_EINVAL, __VA_ARGS__)

/* Integer-valued number in [lo, hi]. */
static amp_status get_long(const char *spec, const char *key, const char *v, long lo, long hi, long *out)
{
    double d;
    if (parse_number(v, &d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return BAD("scaler spec '%s': %s must be an integer in [%ld, %ld] (got '%s')", spec, key, lo, hi, v);
    *out = (long)d;
    return AMP_OK;
}

static amp_status get_num(const char *spec, const char *key, const char *v, double *out)
{
    if (parse_number(v, out))
        return BAD("scaler spec '%s': %s: '%s' is not a number", spec, key, v);
    return AMP_OK;
}

static amp_status set_key(amp_scaler_spec *s, const char *spec, const char *key, const char *v)
{
    amp_scaler_kind k = s->kind;
    if (!strcmp(key, "init") || !strcmp(key, "scale")) return get_num(spec, key, v, &s->init);
    if (!strcmp(key, "growth")) return get_num(spec, key, v, &s->growth);
    if (!strcmp(key, "backoff")) return get_num(spec, key, v, &s->backoff);
    if (!strcmp(key, "underflow")) return get_num(spec, key, v, &s->underflow);
    if (!strcmp(key, "flush")) return get_num(spec, key, v, &s->flush);
    if (!strcmp(key, "headroom")) return get_num(spec, key, v, &s->headroom);
    if (!strcmp(key, "min")) {
        if (!strcmp(v, "none")) { s->min = 0; return AMP_OK; }
        return get_num(spec, key, v, &s->min);
    }
    if (!strcmp(key, "max")) {
        if (!strcmp(v, "none")) { s->max = INFINITY; return AMP_OK; }
        return get_num(spec, key, v, &s->max);
    }
    if (!strcmp(key, "interval") || !strcmp(key, "window"))
        return get_long(spec, key, v, 1, 2147483647L, &s->interval);
    if (!strcmp(key, "hysteresis")) return get_long(spec, key, v, 1, 2147483647L, &s->hysteresis);
    if (!strcmp(key, "history")) return get_long(spec, key, v, 1, 1L << 20, &s->history);
    if (!strcmp(key, "margin")) return get_long(spec, key, v, 0, 64, &s->margin);
    if (!strcmp(key, "block") || !strcmp(key, "size")) return get_long(spec, key, v, 1, 1L << 16, &s->block);
    if (!strcmp(key, "consecutive") || !strcmp(key, "raise") || !strcmp(key, "skip") ||
        !strcmp(key, "pow2")) {
        int *dst = !strcmp(key, "consecutive") ? &s->consecutive : !strcmp(key, "raise") ? &s->raise
                 : !strcmp(key, "skip") ? &s->skip : &s->pow2;
        if (parse_bool(v, dst)) return BAD("scaler spec '%s': %s must be 0 or 1 (got '%s')", spec, key, v);
        return AMP_OK;
    }
    if (!strcmp(key, "algo")) {
        if (!strcmp(v, "max")) s->algo = AMP_AMAX_MAX;
        else if (!strcmp(v, "most_recent")) s->algo = AMP_AMAX_MOST_RECENT;
        else return BAD("scaler spec '%s': algo must be max or most_recent (got '%s')", spec, v);
        return AMP_OK;
    }
    if (!strcmp(key, "exp")) {
        if (!strcmp(v, "floor")) s->exp_ceil = 0;
        else if (!strcmp(v, "ceil")) s->exp_ceil = 1;
        else return BAD("scaler spec '%s': exp must be floor or ceil (got '%s')", spec, v);
        return AMP_OK;
    }
    if (!strcmp(key, "fmt")) {
        if (amp_scaler_kind_is_fp8(k) && !strcmp(v, "hybrid")) { s->fmt_hybrid = 1; return AMP_OK; }
        amp_format f;
        if (amp_format_parse(v, &f) != AMP_OK || !f.is_signed || f.max_finite >= 0x1p127 ||
            f.bits > 16)
            return BAD("scaler spec '%s': fmt '%s' is not a signed format of at most 16 bits%s",
                       spec, v, amp_scaler_kind_is_fp8(k) ? " (or hybrid)" : "");
        s->fmt_hybrid = 0;
        s->fmt = f;
        return AMP_OK;
    }
    AMP_ASSERT(0 && "key listed in kind_keys without a parser");
    return AMP_EINVAL;
}

/* Range checks once every key is read. */
static amp_status check_ranges(const amp_scaler_spec *s, const char *spec)
{
    amp_scaler_kind k = s->kind;
    int uses_init = k != AMP_SCALER_NONE && !amp_scaler_kind_is_fp8(k);
    /* apex and deepspeed hold a double: init and min may be any positive finite double */
    int dbl = amp_scaler_kind_held_double(k);
    double lim = dbl ? DBL_MAX : FLT_MAX;
    if (uses_init && !(s->init > 0 && s->init <= lim && (dbl || (float)s->init > 0)))
        return BAD("scaler spec '%s': %s must be > 0 and a finite %s (got %g)", spec,
                   k == AMP_SCALER_STATIC ? "scale" : "init", dbl ? "double" : "float32", s->init);
    if ((k == AMP_SCALER_TORCH || k == AMP_SCALER_MEGATRON || k == AMP_SCALER_UNDERFLOW) &&
        !(s->growth > 1 && s->growth <= FLT_MAX))
        return BAD("scaler spec '%s': growth must be > 1 (got %g)", spec, s->growth);
    if ((k == AMP_SCALER_TORCH || k == AMP_SCALER_MEGATRON || k == AMP_SCALER_UNDERFLOW) &&
        !(s->backoff > 0 && s->backoff < 1))
        return BAD("scaler spec '%s': backoff must be in (0, 1) (got %g)", spec, s->backoff);
    if (k == AMP_SCALER_APEX || k == AMP_SCALER_DEEPSPEED || k == AMP_SCALER_MEGATRON ||
        k == AMP_SCALER_ADAPTIVE) {
        int need_pos = k != AMP_SCALER_APEX;   /* apex: 0 = none */
        if (!(s->min >= 0 && s->min <= lim) || (need_pos && s->min == 0))
            return BAD("scaler spec '%s': min must be %s a finite %s (got %g)", spec,
                       need_pos ? "> 0 and" : "none, 0 or > 0 and", dbl ? "double" : "float32", s->min);
    }
    if ((k == AMP_SCALER_APEX || k == AMP_SCALER_ADAPTIVE) && !(s->max > 0 && s->max >= s->min))
        return BAD("scaler spec '%s': max must be > 0 and >= min (got %g)", spec, s->max);
    if (k == AMP_SCALER_MEGATRON && s->init < s->min)
        return BAD("scaler spec '%s': init (%g) must be >= min (%g)", spec, s->init, s->min);
    if (k == AMP_SCALER_ADAPTIVE) {
        if (!(s->underflow >= 0 && s->underflow < 1))
            return BAD("scaler spec '%s': underflow must be in [0, 1) (got %g)", spec, s->underflow);
        int e;
        if (frexp(s->init, &e) != 0.5 || frexp(s->min, &e) != 0.5 || frexp(s->max, &e) != 0.5 ||
            s->max > 0x1p127)
            return BAD("scaler spec '%s': init, min and max must be powers of two <= 2^127", spec);
    }
    if (k == AMP_SCALER_UNDERFLOW && !(s->flush > 0 && s->flush < 1))
        return BAD("scaler spec '%s': flush must be in (0, 1) (got %g)", spec, s->flush);
    if ((k == AMP_SCALER_ADAPTIVE || k == AMP_SCALER_UNDERFLOW) && !(s->headroom >= 1 && s->headroom < 0x1p64))
        return BAD("scaler spec '%s': headroom must be >= 1 (got %g)", spec, s->headroom);
    if (k == AMP_SCALER_MX && !s->fmt_hybrid && s->fmt.emax < 1)
        return BAD("scaler spec '%s': fmt %s has no usable exponent range for mx", spec, s->fmt.name);
    return AMP_OK;
}

amp_status amp_scaler_spec_parse(const char *text, amp_scaler_spec *out)
{
    if (!text) return BAD("scaler spec: missing");
    char buf[512];
    if (strlen(text) >= sizeof buf) return BAD("scaler spec '%.40s...': too long", text);
    strcpy(buf, text);
    char *colon = strchr(buf, ':');
    if (colon) *colon = 0;
    int k;
    for (k = 0; k < AMP_SCALER_KIND_COUNT; k++)
        if (!strcmp(buf, kind_names[k])) break;
    if (k == AMP_SCALER_KIND_COUNT)
        return BAD("scaler spec '%s': unknown strategy '%s' (none, static, torch, apex, deepspeed, "
                   "megatron, keras, adaptive, underflow, delayed, current, mx, block)", text, buf);
    amp_scaler_spec s;
    set_defaults(&s, (amp_scaler_kind)k);
    snprintf(s.text, sizeof s.text, "%s", text);
    if (k == AMP_SCALER_STATIC && !colon)
        return BAD("scaler spec '%s': static needs a scale (static:S)", text);
    char seen[16][16];
    int nseen = 0;
    if (colon) {
        char *p = colon + 1;
        if (!*p) return BAD("scaler spec '%s': empty key list after ':'", text);
        int item = 0;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) *comma = 0;
            char *eq = strchr(p, '=');
            const char *key, *val;
            if (!eq) {
                if (k == AMP_SCALER_STATIC && item == 0 && *p) { key = "scale"; val = p; }
                else return BAD("scaler spec '%s': '%s' is not key=value", text, p);
            } else {
                *eq = 0;
                key = p;
                val = eq + 1;
            }
            if (!key_allowed((amp_scaler_kind)k, key) || !*key)
                return BAD("scaler spec '%s': unknown key '%s' for %s (keys: %s)", text, key,
                           kind_names[k], *kind_keys[k] ? kind_keys[k] : "none");
            if (!*val) return BAD("scaler spec '%s': key '%s' has no value", text, key);
            for (int i = 0; i < nseen; i++)
                if (!strcmp(seen[i], key)) return BAD("scaler spec '%s': key '%s' given twice", text, key);
            if (nseen < 16 && strlen(key) < 16) strcpy(seen[nseen++], key);
            amp_status st = set_key(&s, text, key, val);
            if (st) return st;
            item++;
            if (!comma) break;
            p = comma + 1;
        }
    }
    amp_status st = check_ranges(&s, text);
    if (st) return st;
    *out = s;
    return AMP_OK;
}

/* Shortest %g form that reads back to the same double. */
static void fmt_num(char *buf, size_t len, double v)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

int amp_scaler_spec_str(const amp_scaler_spec *s, char *buf, size_t len)
{
    char out[512];
    size_t o = 0;
    o += (size_t)snprintf(out + o, sizeof out - o, "%s", amp_scaler_kind_name(s->kind));
    const char *p = kind_keys[s->kind];
    char sep = ':';
    while (*p) {
        const char *e = strchr(p, ',');
        char key[24];
        size_t kl = e ? (size_t)(e - p) : strlen(p);
        snprintf(key, sizeof key, "%.*s", (int)kl, p);
        char val[64];
        if (!strcmp(key, "init") || !strcmp(key, "scale")) fmt_num(val, sizeof val, s->init);
        else if (!strcmp(key, "growth")) fmt_num(val, sizeof val, s->growth);
        else if (!strcmp(key, "backoff")) fmt_num(val, sizeof val, s->backoff);
        else if (!strcmp(key, "underflow")) fmt_num(val, sizeof val, s->underflow);
        else if (!strcmp(key, "flush")) fmt_num(val, sizeof val, s->flush);
        else if (!strcmp(key, "headroom")) fmt_num(val, sizeof val, s->headroom);
        else if (!strcmp(key, "min")) {
            if (s->min == 0) strcpy(val, "none"); else fmt_num(val, sizeof val, s->min);
        } else if (!strcmp(key, "max")) {
            if (isinf(s->max)) strcpy(val, "none"); else fmt_num(val, sizeof val, s->max);
        } else if (!strcmp(key, "interval") || !strcmp(key, "window")) snprintf(val, sizeof val, "%ld", s->interval);
        else if (!strcmp(key, "hysteresis")) snprintf(val, sizeof val, "%ld", s->hysteresis);
        else if (!strcmp(key, "history")) snprintf(val, sizeof val, "%ld", s->history);
        else if (!strcmp(key, "margin")) snprintf(val, sizeof val, "%ld", s->margin);
        else if (!strcmp(key, "block") || !strcmp(key, "size")) snprintf(val, sizeof val, "%ld", s->block);
        else if (!strcmp(key, "consecutive")) snprintf(val, sizeof val, "%d", s->consecutive);
        else if (!strcmp(key, "raise")) snprintf(val, sizeof val, "%d", s->raise);
        else if (!strcmp(key, "skip")) snprintf(val, sizeof val, "%d", s->skip);
        else if (!strcmp(key, "pow2")) snprintf(val, sizeof val, "%d", s->pow2);
        else if (!strcmp(key, "algo")) strcpy(val, s->algo == AMP_AMAX_MAX ? "max" : "most_recent");
        else if (!strcmp(key, "exp")) strcpy(val, s->exp_ceil ? "ceil" : "floor");
        else if (!strcmp(key, "fmt")) snprintf(val, sizeof val, "%s", s->fmt_hybrid ? "hybrid" : s->fmt.name);
        else AMP_ASSERT(0);
        o += (size_t)snprintf(out + o, sizeof out - o, "%c%s=%s", sep, key, val);
        if (o >= sizeof out) o = sizeof out - 1;
        sep = ',';
        if (!e) break;
        p = e + 1;
    }
    return snprintf(buf, len, "%s", out);
}

int amp_scaler_kind_held_double(amp_scaler_kind k)
{
    return k == AMP_SCALER_APEX || k == AMP_SCALER_DEEPSPEED;
}

size_t amp_scaler_abi_size(const char *type)
{
    static const struct { const char *name; size_t size; } sizes[] = {
        { "amp_scaler_spec", sizeof(amp_scaler_spec) },
        { "amp_scaler", sizeof(amp_scaler) },
        { "amp_scaler_event", sizeof(amp_scaler_event) },
        { "amp_scaler_result", sizeof(amp_scaler_result) },
        { "amp_scaler_tensor", sizeof(amp_scaler_tensor) },
        { "amp_scaler_obs", sizeof(amp_scaler_obs) },
        { "amp_fp8_scaler", sizeof(amp_fp8_scaler) },
        { "amp_fp8_info", sizeof(amp_fp8_info) },
    };
    for (size_t i = 0; type && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(type, sizes[i].name)) return sizes[i].size;
    return 0;
}
