/* `--what-if`: shadow loss scalers fed with the run's FP32 weight gradients
 * rescaled to their own scale (contract and approximation: amp_whatif.h). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_round.h"
#include "amp_scaler.h"
#include "amp_tensor.h"
#include "amp_whatif.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shadow {
    char name[160];          /* the SPEC as given */
    amp_scaler sc;
    int needs_stats;
    int layerwise;
    amp_whatif_row last;
} shadow;

struct amp_whatif {
    size_t n;
    shadow *s;
    float *buf;              /* scratch: S*g, rounded in place */
    size_t buf_n;
    amp_stats *st;           /* per-tensor statistics of one shadow */
    amp_scaler_tensor *ts;
    size_t st_n;
    amp_afile af;
    int open;
    int has_fmt;             /* amp_whatif_set_format */
    amp_format fmt;
};

static void trim(const char *a, const char *b, const char **ta, size_t *len)
{
    while (a < b && (*a == ' ' || *a == '\t')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    *ta = a;
    *len = (size_t)(b - a);
}

amp_status amp_whatif_create(amp_whatif **out, const char *specs)
{
    *out = NULL;
    if (!specs || !*specs) specs = AMP_WHATIF_DEFAULT;
    amp_whatif *w = calloc(1, sizeof *w);
    if (!w) return amp_fail(AMP_ENOMEM, "--what-if: out of memory");
    size_t cap = 1;
    for (const char *p = specs; *p; p++) cap += *p == ';';
    w->s = calloc(cap, sizeof *w->s);
    if (!w->s) { free(w); return amp_fail(AMP_ENOMEM, "--what-if: out of memory"); }
    amp_status st = AMP_OK;
    const char *p = specs;
    for (;;) {
        const char *e = strchr(p, ';');
        if (!e) e = p + strlen(p);
        const char *t;
        size_t len;
        trim(p, e, &t, &len);
        shadow *sh = &w->s[w->n];
        if (!len) { st = amp_fail(AMP_EINVAL, "--what-if %s: empty SPEC in the list", specs); break; }
        if (len >= sizeof sh->name) {
            st = amp_fail(AMP_EINVAL, "--what-if %.*s: SPEC too long", (int)len, t);
            break;
        }
        memcpy(sh->name, t, len);
        sh->name[len] = 0;
        for (size_t j = 0; j < w->n; j++)
            if (!strcmp(w->s[j].name, sh->name)) {
                st = amp_fail(AMP_EINVAL, "--what-if %s: SPEC given twice", sh->name);
                break;
            }
        if (st) break;
        amp_scaler_spec spec;
        if ((st = amp_scaler_spec_parse(sh->name, &spec))) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", amp_errmsg());
            st = amp_fail(st, "--what-if %s: %s", sh->name, msg);
            break;
        }
        if (amp_scaler_kind_is_fp8(spec.kind)) {
            st = amp_fail(AMP_EINVAL, "--what-if %s: an FP8 scaling strategy, not a loss scaler", sh->name);
            break;
        }
        if ((st = amp_scaler_init(&sh->sc, &spec))) break;
        sh->needs_stats = amp_scaler_needs_stats(&sh->sc);
        sh->layerwise = amp_scaler_is_layerwise(&sh->sc);
        sh->last.step = -1;
        w->n++;
        if (!*e) break;
        p = e + 1;
    }
    if (st) { amp_whatif_free(w); return st; }
    *out = w;
    return AMP_OK;
}

void amp_whatif_free(amp_whatif *w)
{
    if (!w) return;
    if (w->open) amp_afile_abort(&w->af);
    for (size_t i = 0; i < w->n; i++) amp_scaler_free(&w->s[i].sc);
    free(w->s);
    free(w->buf);
    free(w->st);
    free(w->ts);
    free(w);
}

size_t amp_whatif_count(const amp_whatif *w) { return w->n; }
const char *amp_whatif_name(const amp_whatif *w, size_t i) { AMP_ASSERT(i < w->n); return w->s[i].name; }
const amp_scaler *amp_whatif_scaler(const amp_whatif *w, size_t i) { AMP_ASSERT(i < w->n); return &w->s[i].sc; }
const amp_whatif_row *amp_whatif_last(const amp_whatif *w, size_t i) { AMP_ASSERT(i < w->n); return &w->s[i].last; }

void amp_whatif_set_format(amp_whatif *w, const amp_format *f)
{
    w->has_fmt = f != NULL;
    if (f) w->fmt = *f;
}

amp_status amp_whatif_write_header(FILE *out)
{
    if (fputs(AMP_WHATIF_HEADER, out) == EOF) return amp_fail(AMP_EIO, "whatif.csv: write failed");
    return AMP_OK;
}

/* The SPEC as a CSV field: quoted (quotes doubled) when it holds , or ". */
static int put_name(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n")) return fputs(s, out) == EOF ? -1 : 0;
    if (fputc('"', out) == EOF) return -1;
    for (; *s; s++) {
        if (*s == '"' && fputc('"', out) == EOF) return -1;
        if (fputc(*s, out) == EOF) return -1;
    }
    return fputc('"', out) == EOF ? -1 : 0;
}

static amp_status write_row(FILE *out, const shadow *sh)
{
    const amp_whatif_row *r = &sh->last;
    if (fprintf(out, "%lld,", (long long)r->step) < 0 || put_name(out, sh->name) ||
        fprintf(out, ",%.9g,%d,%llu,%llu,%llu\n", (double)r->scale, r->skipped, (unsigned long long)r->flushed,
                (unsigned long long)r->overflow, (unsigned long long)r->n) < 0)
        return amp_fail(AMP_EIO, "whatif.csv: write failed");
    return AMP_OK;
}

static amp_status reserve(amp_whatif *w, const amp_whatif_grad *g, size_t n_grads)
{
    size_t maxn = 0;
    for (size_t i = 0; i < n_grads; i++)
        if (g[i].n > maxn) maxn = g[i].n;
    if (maxn > w->buf_n) {
        size_t bytes;
        if (!amp_mul_size(maxn, sizeof(float), &bytes)) return amp_fail(AMP_ERANGE, "--what-if: tensor too large");
        float *nb = realloc(w->buf, bytes);
        if (!nb) return amp_fail(AMP_ENOMEM, "--what-if: out of memory");
        w->buf = nb;
        w->buf_n = maxn;
    }
    if (n_grads > w->st_n) {
        amp_stats *ns = realloc(w->st, n_grads * sizeof *ns);
        if (!ns) return amp_fail(AMP_ENOMEM, "--what-if: out of memory");
        w->st = ns;
        amp_scaler_tensor *nt = realloc(w->ts, n_grads * sizeof *nt);
        if (!nt) return amp_fail(AMP_ENOMEM, "--what-if: out of memory");
        w->ts = nt;
        w->st_n = n_grads;
    }
    return AMP_OK;
}

/* One shadow: round every gradient at its scale, update, fill sh->last. */
static amp_status shadow_step(amp_whatif *w, shadow *sh, int64_t step, const amp_whatif_grad *g, size_t n_grads)
{
    amp_whatif_row *row = &sh->last;
    float gscale = amp_scaler_scale(&sh->sc);
    uint64_t flushed = 0, over = 0, n = 0;
    int found = 0;
    for (size_t i = 0; i < n_grads; i++) {
        float s = sh->layerwise ? amp_scaler_tensor_scale(&sh->sc, i) : gscale;
        float *x = w->buf;
        const float *src = g[i].g;
        for (size_t k = 0; k < g[i].n; k++) x[k] = s * src[k];
        amp_stats *st = &w->st[i];
        amp_stats_init(st);
        const amp_format *f = w->has_fmt ? &w->fmt : g[i].fmt;
        amp_status rs = amp_round_f32(f, &g[i].ro, x, x, g[i].n, st);
        if (rs) return rs;
        flushed += st->cls[AMP_CLS_FLUSHED];
        over += st->cls[AMP_CLS_OVERFLOW] + st->cls[AMP_CLS_SATURATED] + st->cls[AMP_CLS_INF_IN] +
                st->cls[AMP_CLS_NAN_IN];
        /* what a framework's check sees: a non-finite value (saturated ones are finite) */
        found |= st->cls[AMP_CLS_OVERFLOW] + st->cls[AMP_CLS_INF_IN] + st->cls[AMP_CLS_NAN_IN] != 0;
        n += st->n;
        w->ts[i] = (amp_scaler_tensor){ .name = g[i].name, .is_act = 0, .fmt = f, .st = st,
                                        .scale = sh->layerwise ? s : 0.0f };
    }
    amp_scaler_obs obs = { .found_inf = found, .n_tensors = sh->needs_stats ? n_grads : 0,
                           .tensors = sh->needs_stats ? w->ts : NULL };
    amp_scaler_result res;
    amp_status us = amp_scaler_update(&sh->sc, &obs, &res);
    if (us && us != AMP_ERUN) return us;
    row->step = step;
    row->scale = res.scale_used;
    row->scale_after = res.scale_after;
    row->skipped = res.skipped;
    row->stopped = us == AMP_ERUN;
    row->found_inf = found;
    row->flushed = flushed;
    row->overflow = over;
    row->n = n;
    return AMP_OK;
}

amp_status amp_whatif_step(amp_whatif *w, int64_t step, const amp_whatif_grad *g, size_t n_grads,
                           int logged, FILE *out)
{
    /* a shadow's AMP_ERUN sets the thread's message: keep the run's own */
    char saved[512];
    snprintf(saved, sizeof saved, "%s", amp_errmsg());
    amp_status s = reserve(w, g, n_grads);
    if (!out && w->open) out = w->af.fp;
    for (size_t i = 0; i < w->n && !s; i++) {
        shadow *sh = &w->s[i];
        if (sh->last.stopped) continue;
        if ((s = shadow_step(w, sh, step, g, n_grads))) break;
        if (out && (logged || sh->last.stopped)) s = write_row(out, sh);
    }
    if (!s) amp_fail(AMP_OK, "%s", saved);
    return s;
}

amp_status amp_whatif_step_reg(amp_whatif *w, const amp_tensors *r, int64_t step, int logged)
{
    size_t n = 0;
    for (int i = 0; i < r->n; i++)
        if (r->t[i]->role == AMP_ROLE_WEIGHT && r->t[i]->grad && r->t[i]->grad32) n++;
    amp_whatif_grad *g = calloc(n ? n : 1, sizeof *g);
    if (!g) return amp_fail(AMP_ENOMEM, "--what-if: out of memory");
    size_t k = 0;
    for (int i = 0; i < r->n; i++) {
        const amp_tensor *t = r->t[i];
        if (t->role != AMP_ROLE_WEIGHT || !t->grad || !t->grad32) continue;
        g[k] = (amp_whatif_grad){ .name = t->grad->name, .g = t->grad32, .n = t->n, .fmt = &t->grad->fmt,
                                  .ro = amp_tensor_opts(r, t->grad) };
        k++;
    }
    amp_status s = amp_whatif_step(w, step, g, n, logged, NULL);
    free(g);
    return s;
}

amp_status amp_whatif_open(amp_whatif **out, const char *dir, const char *specs)
{
    *out = NULL;
    amp_whatif *w;
    amp_status s = amp_whatif_create(&w, specs);
    if (s) return s;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/" AMP_RUN_WHATIF, dir) >= sizeof path) {
        amp_whatif_free(w);
        return amp_fail(AMP_EINVAL, "%s: path too long", dir);
    }
    if ((s = amp_mkdir_p(dir)) || (s = amp_afile_open(&w->af, path))) { amp_whatif_free(w); return s; }
    w->open = 1;
    if ((s = amp_whatif_write_header(w->af.fp))) { amp_whatif_free(w); return s; }
    *out = w;
    return AMP_OK;
}

amp_status amp_whatif_close(amp_whatif *w)
{
    amp_status s = AMP_OK;
    if (w->open) {
        w->open = 0;
        s = amp_afile_commit(&w->af);
    }
    amp_whatif_free(w);
    return s;
}

size_t amp_whatif_abi_size(const char *type)
{
    if (type && !strcmp(type, "amp_whatif_grad")) return sizeof(amp_whatif_grad);
    if (type && !strcmp(type, "amp_whatif_row")) return sizeof(amp_whatif_row);
    return 0;
}
