/* The run-directory reader (amp_rundir.h): each file of a run read, checked
 * and returned as typed rows. The file names are the writer's
 * (AMP_RUN_* of amp_runlog.h); the columns required here are the writer's
 * too, which tests/check_report.c checks against a run the writer made. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_runlog.h"
#include "amp_csv.h"
#include "amp_rundir.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JSON_MAX ((size_t)64 << 20)
#define STEP_MAX (1L << 40)
#define COUNT_MAX (1L << 50)

static amp_status open_csv(const char *dir, const char *file, amp_csv *c, char *path, size_t len)
{
    if ((size_t)snprintf(path, len, "%s/%s", dir, file) >= len) return amp_fail(AMP_EINVAL, "%s: path too long", dir);
    return amp_csv_read(path, c);
}

/* ---- metrics.csv ---------------------------------------------------------- */
void amp_run_metrics_free(amp_run_metrics *m)
{
    free(m->step); free(m->loss); free(m->scale); free(m->skipped); free(m->val);
    memset(m, 0, sizeof *m);
}

static amp_status metrics_row(const amp_csv *c, const char *p, size_t i, const int *k, amp_run_metrics *m)
{
    long s, sk;
    amp_status st;
    if ((st = amp_csv_long(c, i, k[0], 0, STEP_MAX, &s))) return st;
    if ((st = amp_csv_num(c, i, k[1], &m->loss[i]))) return st;
    if ((st = amp_csv_num(c, i, k[2], &m->scale[i]))) return st;
    if ((st = amp_csv_long(c, i, k[3], 0, 1, &sk))) return st;
    if (i && s <= m->step[i - 1])
        return amp_fail(AMP_EFORMAT, "%s:%zu: step %ld does not follow step %ld", p, c->line[i], s, m->step[i - 1]);
    if (isnan(m->scale[i]) || m->scale[i] < 0)
        return amp_fail(AMP_EFORMAT, "%s:%zu: column 'loss_scale': %s is not a scale", p, c->line[i], amp_csv_get(c, i, k[2]));
    m->step[i] = s;
    m->skipped[i] = (int)sk;
    m->val[i] = NAN;
    if (k[4] >= 0 && *amp_csv_get(c, i, k[4])) {
        if ((st = amp_csv_num(c, i, k[4], &m->val[i]))) return st;
        m->nval++;
    }
    return AMP_OK;
}

amp_status amp_run_read_metrics(const char *dir, amp_run_metrics *m)
{
    static const char *const need[] = { "step", "loss", "loss_scale", "skipped" };
    char p[4200];
    amp_csv c;
    int k[5];
    memset(m, 0, sizeof *m);
    amp_status st = open_csv(dir, AMP_RUN_METRICS, &c, p, sizeof p);
    if (st) return st;
    if ((st = amp_csv_require(&c, need, 4, k))) goto out;
    k[4] = amp_csv_col(&c, "val_loss");
    if (c.nrows == 0) { st = amp_fail(AMP_EFORMAT, "%s:2: no data rows", p); goto out; }
    m->step = malloc(c.nrows * sizeof *m->step);
    m->loss = malloc(c.nrows * sizeof *m->loss);
    m->scale = malloc(c.nrows * sizeof *m->scale);
    m->skipped = malloc(c.nrows * sizeof *m->skipped);
    m->val = malloc(c.nrows * sizeof *m->val);
    if (!m->step || !m->loss || !m->scale || !m->skipped || !m->val) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", p); goto out; }
    for (size_t i = 0; i < c.nrows && !st; i++) st = metrics_row(&c, p, i, k, m);
    m->n = c.nrows;
out:
    amp_csv_free(&c);
    if (st) amp_run_metrics_free(m);
    return st;
}

/* ---- tensors.csv ---------------------------------------------------------- */
void amp_run_tensors_free(amp_run_tensors *t)
{
    free(t->row);
    amp_csv_free(&t->csv);
    memset(t, 0, sizeof *t);
}

static amp_status tensor_row(const amp_csv *c, const char *p, size_t i, const int *k, amp_run_tensor_row *r)
{
    long v[7];
    double d[3];
    amp_status st;
    if ((st = amp_csv_long(c, i, k[0], 0, STEP_MAX, &r->step))) return st;
    for (int q = 0; q < 7; q++) /* n, zero_in, flushed, subnormal, saturated, overflow, nan */
        if ((st = amp_csv_long(c, i, k[4 + q], 0, COUNT_MAX, &v[q]))) return st;
    if (v[1] + v[2] + v[3] + v[4] + v[5] + v[6] > v[0])
        return amp_fail(AMP_EFORMAT, "%s:%zu: class counts add up to more than n=%ld", p, c->line[i], v[0]);
    for (int q = 0; q < 3; q++)
        if ((st = amp_csv_num(c, i, k[11 + q], &d[q]))) return st;
    amp_format f;
    if (amp_format_parse(amp_csv_get(c, i, k[3]), &f))
        return amp_fail(AMP_EFORMAT, "%s:%zu: column 'format': %s", p, c->line[i], amp_errmsg());
    r->tensor = amp_csv_get(c, i, k[1]);
    r->role = amp_csv_get(c, i, k[2]);
    r->format = amp_csv_get(c, i, k[3]);
    if (!*r->tensor || strlen(r->tensor) >= 160)
        return amp_fail(AMP_EFORMAT, "%s:%zu: bad tensor name '%.40s'", p, c->line[i], r->tensor);
    r->n = v[0]; r->zero_in = v[1]; r->flushed = v[2]; r->subnormal = v[3];
    r->saturated = v[4]; r->overflow = v[5]; r->nan = v[6];
    r->amax = d[0]; r->amin_nonzero = d[1]; r->rel_err = d[2];
    r->line = c->line[i];
    return AMP_OK;
}

amp_status amp_run_read_tensors(const char *dir, amp_run_tensors *t)
{
    static const char *const need[] = { "step", "tensor", "role", "format", "n", "zero_in", "flushed",
                                        "subnormal", "saturated", "overflow", "nan", "amax",
                                        "amin_nonzero", "rel_err" };
    int k[14];
    memset(t, 0, sizeof *t);
    amp_status st = open_csv(dir, AMP_RUN_TENSORS, &t->csv, t->path, sizeof t->path);
    if (st) return st;
    if ((st = amp_csv_require(&t->csv, need, 14, k))) goto out;
    t->row = calloc(t->csv.nrows ? t->csv.nrows : 1, sizeof *t->row);
    if (!t->row) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", t->path); goto out; }
    for (size_t i = 0; i < t->csv.nrows && !st; i++) st = tensor_row(&t->csv, t->path, i, k, &t->row[i]);
    t->n = t->csv.nrows;
out:
    if (st) amp_run_tensors_free(t);
    return st;
}

/* ---- hist.csv ------------------------------------------------------------- */
void amp_run_hist_free(amp_run_hist *h)
{
    free(h->row);
    amp_csv_free(&h->csv);
    memset(h, 0, sizeof *h);
}

static amp_status hist_row(const amp_csv *c, const char *p, size_t i, const int *k, long last, amp_run_hist_row *r)
{
    amp_status st;
    if ((st = amp_csv_long(c, i, k[0], 0, STEP_MAX, &r->step))) return st;
    if ((st = amp_csv_long(c, i, k[3], 0, COUNT_MAX, &r->count))) return st;
    const char *bs = amp_csv_get(c, i, k[2]);
    r->kind = !strcmp(bs, "zero") ? AMP_BIN_ZERO : !strcmp(bs, "inf") ? AMP_BIN_INF
            : !strcmp(bs, "nan") ? AMP_BIN_NAN : AMP_BIN_BINADE;
    r->binade = 0;
    if (r->kind == AMP_BIN_BINADE &&
        amp_csv_long(c, i, k[2], AMP_RUN_BINADE_MIN, AMP_RUN_BINADE_MAX, &r->binade))
        return amp_fail(AMP_EFORMAT, "%s:%zu: column 'binade': '%s' is neither an integer in [%d, %d] nor zero/inf/nan",
                        p, c->line[i], bs, AMP_RUN_BINADE_MIN, AMP_RUN_BINADE_MAX);
    if (r->step < last)
        return amp_fail(AMP_EFORMAT, "%s:%zu: step %ld after step %ld (rows must be in step order)", p, c->line[i],
                        r->step, last);
    r->tensor = amp_csv_get(c, i, k[1]);
    r->line = c->line[i];
    return AMP_OK;
}

amp_status amp_run_read_hist(const char *dir, amp_run_hist *h)
{
    static const char *const need[] = { "step", "tensor", "binade", "count" };
    int k[4];
    memset(h, 0, sizeof *h);
    amp_status st = open_csv(dir, AMP_RUN_HIST, &h->csv, h->path, sizeof h->path);
    if (st) return st;
    if ((st = amp_csv_require(&h->csv, need, 4, k))) goto out;
    h->row = calloc(h->csv.nrows ? h->csv.nrows : 1, sizeof *h->row);
    if (!h->row) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", h->path); goto out; }
    for (size_t i = 0; i < h->csv.nrows && !st; i++)
        st = hist_row(&h->csv, h->path, i, k, i ? h->row[i - 1].step : -1, &h->row[i]);
    h->n = h->csv.nrows;
out:
    if (st) amp_run_hist_free(h);
    return st;
}

/* ---- events.csv ----------------------------------------------------------- */
void amp_run_events_free(amp_run_events *e)
{
    amp_csv_free(&e->csv);
    memset(e, 0, sizeof *e);
}

amp_status amp_run_read_events(const char *dir, amp_run_events *e)
{
    static const char *const need[] = { "step", "event", "tensor", "detail" };
    char p[4200];
    int k[4];
    memset(e, 0, sizeof *e);
    amp_status st = open_csv(dir, AMP_RUN_EVENTS, &e->csv, p, sizeof p);
    if (st) return st;
    if ((st = amp_csv_require(&e->csv, need, 4, k))) goto out;
    e->step = k[0]; e->event = k[1]; e->tensor = k[2]; e->detail = k[3];
    for (size_t i = 0; i < e->csv.nrows && !st; i++) {
        long s;
        st = amp_csv_long(&e->csv, i, k[0], -1, STEP_MAX, &s);
    }
out:
    if (st) amp_run_events_free(e);
    return st;
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- whatif.csv ----------------------------------------------------------- */
void amp_run_whatif_free(amp_run_whatif *w)
{
    free(w->row);
    amp_csv_free(&w->csv);
    memset(w, 0, sizeof *w);
}

static amp_status whatif_row(const amp_csv *c, const char *p, size_t i, const int *k, long prev,
                             amp_run_whatif_row *r)
{
    long v[3], sk;
    amp_status st;
    if ((st = amp_csv_long(c, i, k[0], 0, STEP_MAX, &r->step))) return st;
    if (r->step < prev) return amp_fail(AMP_EFORMAT, "%s:%zu: step %ld after step %ld", p, c->line[i], r->step, prev);
    r->scaler = amp_csv_get(c, i, k[1]);
    if (!*r->scaler) return amp_fail(AMP_EFORMAT, "%s:%zu: empty scaler", p, c->line[i]);
    if ((st = amp_csv_num(c, i, k[2], &r->scale))) return st;
    if (!(r->scale >= 0)) return amp_fail(AMP_EFORMAT, "%s:%zu: scale %g", p, c->line[i], r->scale);
    if ((st = amp_csv_long(c, i, k[3], 0, 1, &sk))) return st;
    for (int q = 0; q < 3; q++)
        if ((st = amp_csv_long(c, i, k[4 + q], 0, COUNT_MAX, &v[q]))) return st;
    if (v[0] + v[1] > v[2])
        return amp_fail(AMP_EFORMAT, "%s:%zu: flushed + overflow > n=%ld", p, c->line[i], v[2]);
    r->skipped = (int)sk;
    r->flushed = v[0]; r->overflow = v[1]; r->n = v[2];
    return AMP_OK;
}

int amp_run_has_whatif(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, AMP_RUN_WHATIF);
    return is_file(p);
}

amp_status amp_run_read_whatif(const char *dir, amp_run_whatif *w)
{
    static const char *const need[] = { "step", "scaler", "scale", "skipped", "flushed", "overflow", "n" };
    int k[7];
    memset(w, 0, sizeof *w);
    amp_status st = open_csv(dir, AMP_RUN_WHATIF, &w->csv, w->path, sizeof w->path);
    if (st) return st;
    if ((st = amp_csv_require(&w->csv, need, 7, k))) goto out;
    w->row = calloc(w->csv.nrows ? w->csv.nrows : 1, sizeof *w->row);
    if (!w->row) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", w->path); goto out; }
    for (size_t i = 0; i < w->csv.nrows && !st; i++)
        st = whatif_row(&w->csv, w->path, i, k, i ? w->row[i - 1].step : 0, &w->row[i]);
    w->n = w->csv.nrows;
out:
    if (st) amp_run_whatif_free(w);
    return st;
}

/* ---- config.json, summary.json --------------------------------------------- */
static amp_status read_json(const char *path, char **text)
{
    size_t len;
    amp_status st = amp_read_file(path, JSON_MAX, text, &len);
    if (st) return amp_fail(st, "%s: missing or unreadable: %s", path, amp_errmsg());
    cJSON *j = cJSON_ParseWithLength(*text, len);
    if (!j) {
        const char *e = cJSON_GetErrorPtr();
        long off = e && e >= *text && e <= *text + len ? (long)(e - *text) : -1;
        long line = 1;
        for (long i = 0; i < off; i++) line += (*text)[i] == '\n';
        free(*text);
        *text = NULL;
        return amp_fail(AMP_EFORMAT, "%s:%ld: not valid JSON (near byte %ld)", path, line, off);
    }
    cJSON_Delete(j);
    return AMP_OK;
}


amp_status amp_run_read_config(const char *dir, char **text)
{
    char p[4200];
    *text = NULL;
    snprintf(p, sizeof p, "%s/%s", dir, AMP_RUN_CONFIG);
    return read_json(p, text);
}

amp_status amp_run_read_summary(const char *dir, char **text)
{
    char p[4200];
    *text = NULL;
    snprintf(p, sizeof p, "%s/%s", dir, AMP_RUN_SUMMARY);
    return is_file(p) ? read_json(p, text) : AMP_OK;
}

/* First string value stored under `key` anywhere in the JSON tree (depth first). */
static const char *json_find_str(const cJSON *j, const char *key)
{
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
        if (c->string && !strcmp(c->string, key) && cJSON_IsString(c)) return c->valuestring;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            const char *s = json_find_str(c, key);
            if (s) return s;
        }
    }
    return NULL;
}

int amp_run_json_str(const char *json, const char *key, char *out, size_t len)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    const char *s = json_find_str(j, key);
    if (s) snprintf(out, len, "%s", s);
    cJSON_Delete(j);
    return s != NULL;
}

/* ---- the runs of a compare directory ---------------------------------------- */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void amp_run_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

static int is_run_dir(const char *dir, const char *name)
{
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) return 0;
    snprintf(p, sizeof p, "%s/%s/%s", dir, name, AMP_RUN_CONFIG);
    if (is_file(p)) return 1;
    snprintf(p, sizeof p, "%s/%s/%s", dir, name, AMP_RUN_METRICS);
    return is_file(p);
}

amp_status amp_run_list(const char *dir, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return amp_fail(AMP_EIO, "%s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "report") || !is_run_dir(dir, e->d_name)) continue;
        char **nn = realloc(*names, (*n + 1) * sizeof *nn);
        if (!nn || !(nn[*n] = strdup(e->d_name))) {
            closedir(d);
            if (nn) *names = nn;
            amp_run_names_free(*names, *n);
            *names = NULL; *n = 0;
            return amp_fail(AMP_ENOMEM, "out of memory");
        }
        *names = nn;
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(*names, *n, sizeof **names, cmp_str);
    return AMP_OK;
}

/* metrics.csv without its loss_scale column (the third), malloc'ed; NULL if unreadable. */
static char *metrics_unscaled(const char *dir)
{
    char p[4200], *x = NULL;
    size_t n;
    snprintf(p, sizeof p, "%s/%s", dir, AMP_RUN_METRICS);
    if (amp_read_file(p, (size_t)1 << 31, &x, &n)) return NULL;
    size_t o = 0;
    int field = 0;
    for (size_t i = 0; i < n; i++) {
        char c = x[i];
        if (c == '\n') field = 0;
        else if (c == ',') field++;
        if (field == 2 || (field == 3 && c == ',')) continue;   /* drops ",<loss_scale>" */
        x[o++] = c;
    }
    x[o] = 0;
    return x;
}

int amp_run_identical(const char *a, const char *b)
{
    char *x = metrics_unscaled(a), *y = metrics_unscaled(b);
    int same = x && y && !strcmp(x, y);
    free(x);
    free(y);
    return same;
}
