/* sweep: grid file -> groups (seed x varied options) -> compare runs; the
 * sweep's summary.csv from the groups' compare summaries. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_compare.h"
#include "amp_sweep.h"

#include <cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Shortest decimal text that reads back as v. */
static void num_text(double v, char *buf, size_t cap)
{
    if (v == floor(v) && fabs(v) < 1e15) { snprintf(buf, cap, "%.0f", v); return; }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* Text of a scalar JSON value; 1 ok, 0 not a scalar. flag: 1 true, 0 false, -1 value. */
static int scalar_text(const cJSON *v, char *buf, size_t cap, int *flag)
{
    *flag = -1;
    if (cJSON_IsString(v)) snprintf(buf, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) num_text(v->valuedouble, buf, cap);
    else if (cJSON_IsBool(v)) { *flag = cJSON_IsTrue(v); snprintf(buf, cap, "%s", *flag ? "true" : "false"); }
    else return 0;
    return 1;
}

static int push(char ***v, int *n, const char *s)
{
    char **nv = realloc(*v, (size_t)(*n + 2) * sizeof *nv);
    if (!nv) return -1;
    *v = nv;
    if (!(nv[*n] = xstrdup(s))) return -1;
    (*n)++;
    nv[*n] = NULL;
    return 0;
}

static void free_list(char **v, int n)
{
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void amp_sweep_free(amp_sweep *sw)
{
    free_list(sw->pass, sw->npass);
    for (int g = 0; g < sw->ngroups; g++) {
        free_list(sw->groups[g].opt, sw->groups[g].nopt);
        free_list(sw->groups[g].val, sw->nkeys);
    }
    free_list(sw->keys, sw->nkeys);
    free(sw->groups);
    free(sw->runs);
    free(sw->run_group);
    memset(sw, 0, sizeof *sw);
}

static int key_ok(const char *k)
{
    if (!*k || *k == '-') return 0;
    for (const char *c = k; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_') return 0;
    return strcmp(k, "precision") && strcmp(k, "scaler") && strcmp(k, "out") && strcmp(k, "resume");
}

static void sanitize(char *s)
{
    for (char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '.' && *c != '_') *c = '-';
}

/* A list given as a JSON array of strings or one string, joined by sep. */
static amp_status list_text(const cJSON *v, const char *path, const char *key, char sep, char **out)
{
    *out = NULL;
    if (!v) return AMP_OK;
    if (cJSON_IsString(v)) { *out = xstrdup(v->valuestring); return *out ? AMP_OK : amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
    if (!cJSON_IsArray(v)) return amp_fail(AMP_EINVAL, "%s: \"%s\" must be an array of strings", path, key);
    size_t len = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e) || !*e->valuestring) return amp_fail(AMP_EINVAL, "%s: \"%s\" must be an array of non-empty strings", path, key);
        if (strchr(e->valuestring, sep == ';' ? ';' : ',')) return amp_fail(AMP_EINVAL, "%s: \"%s\": '%s' contains '%c'", path, key, e->valuestring, sep);
        len += strlen(e->valuestring) + 1;
    }
    char *s = calloc(len, 1);
    if (!s) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    cJSON_ArrayForEach(e, v) {
        if (*s) strncat(s, &sep, 1);
        strcat(s, e->valuestring);
    }
    *out = s;
    return AMP_OK;
}

static amp_status add_opt(char ***v, int *n, const char *key, const char *val, int flag, const char *path)
{
    char dash[128];
    if (flag == 0) return AMP_OK;   /* false: option omitted */
    snprintf(dash, sizeof dash, "--%s", key);
    if (push(v, n, dash) || (flag < 0 && push(v, n, val))) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    return AMP_OK;
}

/* Group g of the grid: its seed, its varied values and their options, its
 * name, and its runs (the compare plan `base` under the group's folder). */
static amp_status build_group(amp_sweep *sw, int g, int ncomb, const cJSON *seeds, const cJSON *vary,
                              const amp_run_cfg *base, int nbase, const char *path)
{
    amp_status st;
    char buf[256];
    int flag;
    amp_sweep_group *gr = &sw->groups[g];
    int si = g / ncomb, c = g % ncomb;
    char name[512] = "";
    if (seeds) {
        num_text(cJSON_GetArrayItem(seeds, si)->valuedouble, gr->seed, sizeof gr->seed);
        snprintf(name, sizeof name, "seed%s", gr->seed);
        if ((st = add_opt(&gr->opt, &gr->nopt, "seed", gr->seed, -1, path))) return st;
    }
    if (sw->nkeys && !(gr->val = calloc((size_t)sw->nkeys + 1, sizeof *gr->val))) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    /* mixed radix, last key fastest */
    int rest = c;
    int idx[64];
    if (sw->nkeys > 64) return amp_fail(AMP_EINVAL, "%s: vary: too many keys", path);
    for (int k = sw->nkeys - 1; k >= 0; k--) {
        int m = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(vary, sw->keys[k]));
        idx[k] = rest % m;
        rest /= m;
    }
    for (int k = 0; k < sw->nkeys; k++) {
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(vary, sw->keys[k]), idx[k]);
        scalar_text(e, buf, sizeof buf, &flag);
        if (!(gr->val[k] = xstrdup(buf))) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
        if ((st = add_opt(&gr->opt, &gr->nopt, sw->keys[k], buf, flag, path))) return st;
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, "%s%s%s", l ? "__" : "", sw->keys[k], buf);
    }
    sanitize(name);
    if (strlen(name) >= sizeof gr->name) return amp_fail(AMP_EINVAL, "%s: group name '%s' too long", path, name);
    strcpy(gr->name, name);
    for (int b = 0; b < nbase; b++) {
        amp_run_cfg *r = &sw->runs[g * nbase + b];
        *r = base[b];
        if (*name) {
            if (strlen(name) + 1 + strlen(base[b].name) >= sizeof r->name) return amp_fail(AMP_EINVAL, "%s: run name too long", path);
            size_t ln = strlen(name);
            memcpy(r->name, name, ln);
            r->name[ln] = '/';
            memcpy(r->name + ln + 1, base[b].name, strlen(base[b].name) + 1);
        }
        sw->run_group[g * nbase + b] = g;
    }
    return AMP_OK;
}

amp_status amp_sweep_parse(const char *text, const char *path, amp_sweep *sw)
{
    memset(sw, 0, sizeof *sw);
    sw->tol = 0.05;
    amp_status st = AMP_OK;
    char *precs = NULL, *specs = NULL, **extra = NULL, buf[256];
    int n_extra = 0, flag;
    const char *ref = "fp32";
    amp_run_cfg *base = NULL;
    int nbase = 0;
    cJSON *root = cJSON_Parse(text);
    if (!root) return amp_fail(AMP_EINVAL, "%s: not valid JSON (near '%.20s')", path, cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
    if (!cJSON_IsObject(root)) { st = amp_fail(AMP_EINVAL, "%s: expected a JSON object", path); goto done; }
    const cJSON *it, *train = NULL, *seeds = NULL, *vary = NULL;
    cJSON_ArrayForEach(it, root) {
        const char *k = it->string;
        if (cJSON_GetObjectItemCaseSensitive(root, k) != it) {   /* the first of that name is another */
            st = amp_fail(AMP_EINVAL, "%s: key \"%s\" given twice", path, k);
            goto done;
        }
        if (!strcmp(k, "train")) train = it;
        else if (!strcmp(k, "seeds")) seeds = it;
        else if (!strcmp(k, "vary")) vary = it;
        else if (!strcmp(k, "precisions")) { if ((st = list_text(it, path, k, ',', &precs))) goto done; }
        else if (!strcmp(k, "scalers")) { if ((st = list_text(it, path, k, ';', &specs))) goto done; }
        else if (!strcmp(k, "ref")) {
            if (!cJSON_IsString(it)) { st = amp_fail(AMP_EINVAL, "%s: \"ref\" must be a string", path); goto done; }
            ref = it->valuestring;
        } else if (!strcmp(k, "diverge_tol")) {
            if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0)) { st = amp_fail(AMP_EINVAL, "%s: \"diverge_tol\" must be a number >= 0", path); goto done; }
            sw->tol = it->valuedouble;
        } else if (!strcmp(k, "runs")) {
            if (!cJSON_IsArray(it)) { st = amp_fail(AMP_EINVAL, "%s: \"runs\" must be an array of \"P@SPEC\" strings", path); goto done; }
            const cJSON *e;
            cJSON_ArrayForEach(e, it) {
                if (!cJSON_IsString(e)) { st = amp_fail(AMP_EINVAL, "%s: \"runs\" must be an array of \"P@SPEC\" strings", path); goto done; }
                if (push(&extra, &n_extra, e->valuestring)) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto done; }
            }
        } else { st = amp_fail(AMP_EINVAL, "%s: unknown key \"%s\" (train, precisions, scalers, runs, ref, seeds, vary, diverge_tol)", path, k); goto done; }
    }
    if (!precs && !n_extra) { st = amp_fail(AMP_EINVAL, "%s: nothing to compare: give \"precisions\" or \"runs\"", path); goto done; }
    if (vary && !cJSON_IsObject(vary)) { st = amp_fail(AMP_EINVAL, "%s: \"vary\" must be an object of arrays", path); goto done; }
    if (vary)
        cJSON_ArrayForEach(it, vary) {
            if (!key_ok(it->string) || !strcmp(it->string, "seed")) { st = amp_fail(AMP_EINVAL, "%s: vary: \"%s\" cannot be varied (use \"seeds\" for the seed)", path, it->string); goto done; }
            if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1) { st = amp_fail(AMP_EINVAL, "%s: vary: \"%s\" must be a non-empty array", path, it->string); goto done; }
            const cJSON *e;
            cJSON_ArrayForEach(e, it)
                if (!scalar_text(e, buf, sizeof buf, &flag)) { st = amp_fail(AMP_EINVAL, "%s: vary: \"%s\" values must be strings, numbers or booleans", path, it->string); goto done; }
            if (push(&sw->keys, &sw->nkeys, it->string)) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto done; }
        }
    if (seeds) {
        if (!cJSON_IsArray(seeds) || cJSON_GetArraySize(seeds) < 1) { st = amp_fail(AMP_EINVAL, "%s: \"seeds\" must be a non-empty array of integers", path); goto done; }
        const cJSON *e;
        cJSON_ArrayForEach(e, seeds)
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 || e->valuedouble > 9007199254740992.0) {
                st = amp_fail(AMP_EINVAL, "%s: \"seeds\" must be integers >= 0", path);
                goto done;
            }
    }
    if (train) {
        if (!cJSON_IsObject(train)) { st = amp_fail(AMP_EINVAL, "%s: \"train\" must be an object of options", path); goto done; }
        cJSON_ArrayForEach(it, train) {
            if (!key_ok(it->string)) { st = amp_fail(AMP_EINVAL, "%s: train: \"%s\" is not an option sweep can set", path, it->string); goto done; }
            if (!scalar_text(it, buf, sizeof buf, &flag)) { st = amp_fail(AMP_EINVAL, "%s: train: \"%s\" must be a string, number or boolean", path, it->string); goto done; }
            if ((seeds && !strcmp(it->string, "seed")) || (vary && cJSON_GetObjectItemCaseSensitive(vary, it->string))) continue;
            if ((st = add_opt(&sw->pass, &sw->npass, it->string, buf, flag, path))) goto done;
        }
    }
    if ((st = amp_compare_plan(precs, specs, extra, n_extra, ref, &base, &nbase))) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", amp_errmsg());
        st = amp_fail(st, "%s: %s", path, msg);
        goto done;
    }

    /* groups: seeds (outermost) x vary combinations (first key outermost) */
    int nseeds = seeds ? cJSON_GetArraySize(seeds) : 1;
    int ncomb = 1;
    for (int k = 0; k < sw->nkeys; k++) {
        ncomb *= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(vary, sw->keys[k]));
        if (ncomb > 100000) { st = amp_fail(AMP_EINVAL, "%s: vary: too many combinations", path); goto done; }
    }
    int ngroups = nseeds * ncomb;
    sw->groups = calloc((size_t)ngroups, sizeof *sw->groups);
    sw->runs = calloc((size_t)ngroups * (size_t)nbase, sizeof *sw->runs);
    sw->run_group = calloc((size_t)ngroups * (size_t)nbase, sizeof *sw->run_group);
    if (!sw->groups || !sw->runs || !sw->run_group) { st = amp_fail(AMP_ENOMEM, "%s: out of memory", path); goto done; }
    sw->ngroups = ngroups;
    sw->nruns = ngroups * nbase;
    for (int g = 0; g < sw->ngroups && !st; g++)
        st = build_group(sw, g, ncomb, seeds, vary, base, nbase, path);
done:
    free(precs);
    free(specs);
    free_list(extra, n_extra);
    free(base);
    cJSON_Delete(root);
    if (st) amp_sweep_free(sw);
    return st;
}

char **amp_sweep_argv(const amp_sweep *sw, int i, const char *self, const char *dir)
{
    const amp_sweep_group *g = &sw->groups[sw->run_group[i]];
    const amp_run_cfg *r = &sw->runs[i];
    char **v = NULL;
    int n = 0;
    size_t len = strlen(dir) + strlen(r->name) + 2;
    char *out = malloc(len);
    if (!out) return NULL;
    snprintf(out, len, "%s/%s", dir, r->name);
    int bad = push(&v, &n, self) || push(&v, &n, "train");
    for (int k = 0; k < sw->npass && !bad; k++) bad = push(&v, &n, sw->pass[k]);
    for (int k = 0; k < g->nopt && !bad; k++) bad = push(&v, &n, g->opt[k]);
    if (!bad) bad = push(&v, &n, "--precision") || push(&v, &n, r->precision) || push(&v, &n, "--scaler") ||
                    push(&v, &n, r->scaler) || push(&v, &n, "--out") || push(&v, &n, out);
    free(out);
    if (bad) { free_list(v, n); return NULL; }
    return v;
}

void amp_sweep_argv_free(char **argv)
{
    if (!argv) return;
    for (int i = 0; argv[i]; i++) free(argv[i]);
    free(argv);
}

static void csv_field(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n")) { fputs(s, fp); return; }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"') fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

amp_status amp_sweep_summarize(const char *dir, const amp_sweep *sw, const int *status)
{
    amp_status st;
    if (sw->ngroups == 1 && !sw->groups[0].name[0]) return amp_compare_summarize(dir, sw->runs, sw->nruns, status, sw->tol);
    int per = sw->nruns / sw->ngroups;
    amp_run_cfg *local = malloc((size_t)(per ? per : 1) * sizeof *local);
    if (!local) return amp_fail(AMP_ENOMEM, "sweep: out of memory");
    char path[4400];
    amp_afile af;
    snprintf(path, sizeof path, "%s/summary.csv", dir);
    if ((st = amp_afile_open(&af, path))) { free(local); return st; }
    for (int g = 0; g < sw->ngroups; g++) {
        const amp_sweep_group *gr = &sw->groups[g];
        for (int b = 0; b < per; b++) {
            local[b] = sw->runs[g * per + b];
            snprintf(local[b].name, sizeof local[b].name, "%s", sw->runs[g * per + b].name + strlen(gr->name) + 1);
        }
        char gdir[4300];
        snprintf(gdir, sizeof gdir, "%s/%s", dir, gr->name);
        if ((st = amp_mkdir_p(gdir)) || (st = amp_compare_summarize(gdir, local, per, status + g * per, sw->tol))) break;
        char *text;
        size_t len;
        snprintf(path, sizeof path, "%s/summary.csv", gdir);
        if ((st = amp_read_file(path, (size_t)1 << 26, &text, &len))) break;
        char *line = text, *nl = strchr(text, '\n');
        if (g == 0) {
            fputs("group,seed", af.fp);
            for (int k = 0; k < sw->nkeys; k++) { fputc(',', af.fp); csv_field(af.fp, sw->keys[k]); }
            fputc(',', af.fp);
            fwrite(line, 1, nl ? (size_t)(nl - line + 1) : strlen(line), af.fp);
        }
        for (line = nl ? nl + 1 : NULL; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            csv_field(af.fp, gr->name);
            fputc(',', af.fp);
            csv_field(af.fp, gr->seed);
            for (int k = 0; k < sw->nkeys; k++) { fputc(',', af.fp); csv_field(af.fp, gr->val[k]); }
            fputc(',', af.fp);
            fwrite(line, 1, nl ? (size_t)(nl - line + 1) : strlen(line), af.fp);
        }
        free(text);
    }
    free(local);
    if (st) { amp_afile_abort(&af); return st; }
    return amp_afile_commit(&af);
}
