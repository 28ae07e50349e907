/* The report writer: reads and validates a run or compare directory
 * (docs/design.md), has report_fig.c draw the figures, and writes
 * DIR/report/index.html atomically.
 *
 * Conventions the figures rely on (documented on the page and in the README):
 * - metrics.csv row s: loss_scale is the scale used in step s; skipped is 0/1.
 * - hist.csv counts the values given to the tensor's format, i.e. gradients
 *   after multiplication by the loss scale; "unscaled" shifts them by
 *   -round(log2 S) binades (exact for power-of-two scales).
 * - Compare directory: a folder with summary.csv; every subfolder holding a
 *   config.json or metrics.csv is a run, except those summary.csv marks as
 *   failed (columns name and status, as `ampsim compare` writes them). The
 *   reference is the run named "ref" (as compare names it); failing that, a
 *   run whose config.json says precision "fp32" (the one named "fp32", else
 *   the first by name). */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_csv.h"
#include "amp_rundir.h"
#include "amp_report.h"
#include "report_internal.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}


static void slugify(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (; *s && o + 1 < len; s++)
        out[o++] = ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                    *s == '.' || *s == '-' || *s == '_') ? *s : '_';
    out[o] = 0;
    if (!o) snprintf(out, len, "run");
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Index of step s in the increasing array v[n], or -1. */
static long find_step(const long *v, size_t n, long s)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (v[m] < s) lo = m + 1; else hi = m;
    }
    return lo < n && v[lo] == s ? (long)lo : -1;
}

static void run_free(rp_run *r)
{
    free(r->config_text);
    free(r->summary_text);
    amp_run_metrics_free(&r->m);
    for (size_t i = 0; i < r->nt; i++) {
        free(r->t[i].fl); free(r->t[i].so); free(r->t[i].hu); free(r->t[i].hs);
    }
    free(r->t);
    free(r->lstep);
    amp_run_events_free(&r->ev);
    amp_run_whatif_free(&r->wi);
    memset(r, 0, sizeof *r);
}

/* The loss-scale facts the figures need (metrics.csv was checked by the reader). */
static void scan_scales(rp_run *r)
{
    r->scale_zero_step = -1;
    for (size_t i = 0; i < r->m.n; i++) {
        double S = r->m.scale[i];
        if (S != 1) r->scale_used = 1;
        if (S > 0 && isfinite(S)) {
            int e;
            if (frexp(S, &e) != 0.5) r->scale_nonpow2 = 1;
        }
        if (S == 0 && r->scale_zero_step < 0) r->scale_zero_step = r->m.step[i];
    }
}

static long tens_find(const rp_run *r, const char *name)
{
    for (size_t i = 0; i < r->nt; i++)
        if (!strcmp(r->t[i].name, name)) return (long)i;
    return -1;
}

static amp_status tens_add(rp_run *r, const amp_run_tensor_row *row, long *idx)
{
    rp_tens *nt = realloc(r->t, (r->nt + 1) * sizeof *nt);
    if (!nt) return amp_fail(AMP_ENOMEM, "out of memory");
    r->t = nt;
    rp_tens *t = &r->t[r->nt];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", row->tensor);
    snprintf(t->role, sizeof t->role, "%s", row->role);
    snprintf(t->fmt, sizeof t->fmt, "%s", row->format);
    t->wgrad = !strcmp(t->role, "weight_grad");
    t->grad = t->wgrad || !strcmp(t->role, "act_grad");
    t->hu = calloc(RP_NB, sizeof *t->hu);
    t->hs = calloc(RP_NB, sizeof *t->hs);
    if (!t->hu || !t->hs) { free(t->hu); free(t->hs); return amp_fail(AMP_ENOMEM, "out of memory"); }
    *idx = (long)r->nt++;
    return AMP_OK;
}

/* Per tensor: the flushed and saturated+overflow fractions at each logged step. */
static amp_status load_tensors(rp_run *r)
{
    amp_run_tensors tt;
    amp_status st = amp_run_read_tensors(r->dir, &tt);
    if (st) return st;
    long *steps = malloc((tt.n ? tt.n : 1) * sizeof *steps);
    if (!steps) { amp_run_tensors_free(&tt); return amp_fail(AMP_ENOMEM, "%s: out of memory", tt.path); }
    for (size_t i = 0; i < tt.n && !st; i++) {
        steps[i] = tt.row[i].step;
        long ti = tens_find(r, tt.row[i].tensor);
        if (ti < 0) st = tens_add(r, &tt.row[i], &ti);
    }
    if (st) { free(steps); amp_run_tensors_free(&tt); return st; }
    qsort(steps, tt.n, sizeof *steps, cmp_long);
    size_t u = 0;
    for (size_t i = 0; i < tt.n; i++)
        if (!u || steps[i] != steps[u - 1]) steps[u++] = steps[i];
    r->lstep = steps;
    r->nls = u;
    for (size_t ti = 0; ti < r->nt && !st; ti++) {
        rp_tens *t = &r->t[ti];
        t->fl = malloc((u ? u : 1) * sizeof *t->fl);
        t->so = malloc((u ? u : 1) * sizeof *t->so);
        if (!t->fl || !t->so) st = amp_fail(AMP_ENOMEM, "%s: out of memory", tt.path);
        for (size_t j = 0; j < u && !st; j++) t->fl[j] = t->so[j] = NAN;
    }
    for (size_t i = 0; i < tt.n && !st; i++) {
        const amp_run_tensor_row *w = &tt.row[i];
        rp_tens *t = &r->t[tens_find(r, w->tensor)];
        long j = find_step(r->lstep, r->nls, w->step);
        if (!isnan(t->fl[j])) {
            st = amp_fail(AMP_EFORMAT, "%s:%zu: tensor '%s' logged twice at step %ld", tt.path, w->line, t->name, w->step);
            break;
        }
        t->fl[j] = w->n ? (double)w->flushed / (double)w->n : 0;
        t->so[j] = w->n ? (double)(w->saturated + w->overflow + w->nan) / (double)w->n : 0;
        t->nonfinite_total += (double)(w->overflow + w->nan);
        t->n_total += (double)w->n;
        t->flushed_total += (double)w->flushed;
    }
    amp_run_tensors_free(&tt);
    return st;
}

/* Loss scale of step s (1 if the step is not in metrics.csv). */
static double scale_at(const rp_run *r, long s)
{
    long i = find_step(r->m.step, r->m.n, s);
    return i < 0 ? 1.0 : r->m.scale[i];
}

/* Per tensor: the histogram summed over the logged steps, as logged (hs) and
 * shifted back by the loss scale (hu), and the zero/inf/NaN bins. */
static amp_status load_hist(rp_run *r)
{
    amp_run_hist h;
    amp_status st = amp_run_read_hist(r->dir, &h);
    if (st) return st;
    r->hist_first = -1;
    for (size_t i = 0; i < h.n && r->nt; i++) {   /* --log-every 0: no histograms */
        const amp_run_hist_row *w = &h.row[i];
        long ti = tens_find(r, w->tensor);
        if (ti < 0) {
            st = amp_fail(AMP_EFORMAT, "%s:%zu: tensor '%s' is not in tensors.csv (its role and format are unknown)",
                          h.path, w->line, w->tensor);
            break;
        }
        rp_tens *t = &r->t[ti];
        t->in_hist = 1;
        if (!i || w->step != h.row[i - 1].step) {
            r->hist_steps++;
            if (r->hist_first < 0) r->hist_first = w->step;
            r->hist_last = w->step;
        }
        double dc = (double)w->count;
        if (w->kind == AMP_BIN_ZERO) t->zero += dc;
        else if (w->kind == AMP_BIN_INF) t->inf += dc;
        else if (w->kind == AMP_BIN_NAN) t->nan += dc;
        else {
            t->hs[w->binade - RP_BLO] += dc;
            long sh = 0;
            double S = scale_at(r, w->step);
            if (t->grad && S > 0 && isfinite(S)) sh = lround(log2(S));
            long bu = w->binade - sh;
            if (bu < RP_BLO) bu = RP_BLO;
            if (bu > RP_BHI) bu = RP_BHI;
            t->hu[bu - RP_BLO] += dc;
        }
    }
    amp_run_hist_free(&h);
    return st;
}

static amp_status load_run(rp_run *r, const char *dir, const char *label)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    snprintf(r->label, sizeof r->label, "%s", label);
    slugify(label, r->slug, sizeof r->slug);
    amp_status st = amp_run_read_config(dir, &r->config_text);
    if (st) return st;
    char f8[160];
    if (!amp_run_json_str(r->config_text, "precision", r->precision, sizeof r->precision))
        snprintf(r->precision, sizeof r->precision, "?");
    if (!amp_run_json_str(r->config_text, "scaler", r->scaler, sizeof r->scaler))
        snprintf(r->scaler, sizeof r->scaler, "none");
    if (amp_run_json_str(r->config_text, "fp8_scaler", f8, sizeof f8) && strcmp(f8, "none"))
        snprintf(r->fp8_scaler, sizeof r->fp8_scaler, "%s", f8);
    if ((st = amp_run_read_summary(dir, &r->summary_text))) return st;
    if ((st = amp_run_read_metrics(dir, &r->m))) return st;
    scan_scales(r);
    if ((st = load_tensors(r))) return st;
    if ((st = load_hist(r))) return st;
    if (amp_run_has_whatif(dir)) {
        if ((st = amp_run_read_whatif(dir, &r->wi))) return st;
        r->has_wi = 1;
    }
    return amp_run_read_events(dir, &r->ev);
}

/* 1 if summary.csv has a row for run `name` whose status is "failed" (a run
 * that ended non-finite, status "nonfinite", has complete logs and is drawn). */
static int summary_says_failed(const amp_csv *c, const char *name)
{
    int cn = amp_csv_col(c, "name"), cs = amp_csv_col(c, "status");
    if (cn < 0 || cs < 0) return 0;
    for (size_t i = 0; i < c->nrows; i++)
        if (!strcmp(amp_csv_get(c, i, cn), name)) return !strcmp(amp_csv_get(c, i, cs), "failed");
    return 0;
}

/* The reference: the run named "ref" (what compare writes); else one whose
 * precision is fp32, preferring the one named "fp32", then the first by name.
 * It is moved first; the others stay by name. */
static void pick_reference(rp_ctx *ctx)
{
    ctx->ref = -1;
    for (size_t i = 0; i < ctx->nr && ctx->ref < 0; i++)
        if (!strcmp(ctx->r[i].label, "ref")) ctx->ref = (int)i;
    for (size_t i = 0; i < ctx->nr && ctx->ref < 0; i++)
        if (!strcmp(ctx->r[i].precision, "fp32") && !strcmp(ctx->r[i].label, "fp32")) ctx->ref = (int)i;
    for (size_t i = 0; i < ctx->nr && ctx->ref < 0; i++)
        if (!strcmp(ctx->r[i].precision, "fp32")) ctx->ref = (int)i;
    if (ctx->ref > 0) {
        rp_run tmp = ctx->r[ctx->ref];
        memmove(&ctx->r[1], &ctx->r[0], (size_t)ctx->ref * sizeof *ctx->r);
        ctx->r[0] = tmp;
        ctx->ref = 0;
    }
}

static amp_status load_compare(rp_ctx *ctx)
{
    char p[RP_PATH + 600];
    snprintf(p, sizeof p, "%s/summary.csv", ctx->dir);
    amp_status st = amp_csv_read(p, &ctx->summary);
    if (st) return st;
    char **names;
    size_t n, keep = 0;
    if ((st = amp_run_list(ctx->dir, &names, &n))) return st;
    int cn = amp_csv_col(&ctx->summary, "name");
    for (size_t i = 0; i < n; i++) {
        int listed = cn < 0;   /* only the runs summary.csv lists: a rerun with fewer runs leaves old folders */
        for (size_t k = 0; k < ctx->summary.nrows && !listed; k++) listed = !strcmp(amp_csv_get(&ctx->summary, k, cn), names[i]);
        if (!listed) { free(names[i]); continue; }
        if (summary_says_failed(&ctx->summary, names[i])) {
            if (ctx->nskipped < 8) snprintf(ctx->skipped[ctx->nskipped], sizeof ctx->skipped[0], "%.120s", names[i]);
            ctx->nskipped++;
            free(names[i]);
            continue;
        }
        names[keep++] = names[i];
    }
    if (!keep) {
        amp_run_names_free(names, keep);
        return amp_fail(AMP_EFORMAT, "%s: has summary.csv but no run folders (each needs config.json and metrics.csv)", ctx->dir);
    }
    ctx->r = calloc(keep, sizeof *ctx->r);
    if (!ctx->r) { amp_run_names_free(names, keep); return amp_fail(AMP_ENOMEM, "out of memory"); }
    for (size_t i = 0; i < keep && !st; i++) {
        snprintf(p, sizeof p, "%s/%s", ctx->dir, names[i]);
        st = load_run(&ctx->r[i], p, names[i]);
        snprintf(ctx->r[i].link, sizeof ctx->r[i].link, "../%.200s", names[i]);
        ctx->nr = i + 1;
    }
    amp_run_names_free(names, keep);
    if (st) return st;
    pick_reference(ctx);
    return AMP_OK;
}

/* accum.csv (figure 6): the columns amp_bench_accum writes, numbers checked. */
static amp_status load_accum(rp_ctx *ctx, const char *p)
{
    amp_status st = amp_csv_read(p, &ctx->accum);
    if (st) return st;
    static const char *const need[] = { "K", "operands", "accumulator", "rounding", "promote_every",
                                        "mean_rel_err", "max_rel_err" };
    int k[7];
    if ((st = amp_csv_require(&ctx->accum, need, 7, k))) return st;
    if (!ctx->accum.nrows) return amp_fail(AMP_EFORMAT, "%s:2: no data rows", p);
    for (size_t i = 0; i < ctx->accum.nrows; i++) {
        long v;
        double m, mx;
        if ((st = amp_csv_long(&ctx->accum, i, k[0], 1, 1L << 40, &v))) return st;
        if ((st = amp_csv_long(&ctx->accum, i, k[4], 0, 1L << 40, &v))) return st;
        if ((st = amp_csv_num(&ctx->accum, i, k[5], &m))) return st;
        if ((st = amp_csv_num(&ctx->accum, i, k[6], &mx))) return st;
        if (!(m >= 0) || !(mx >= 0) || isinf(m) || isinf(mx))
            return amp_fail(AMP_EFORMAT, "%s:%zu: relative errors must be finite and >= 0", p, ctx->accum.line[i]);
    }
    return AMP_OK;
}

/* After the new page is in place: removes figures and data files of an
 * earlier report that this one did not write, so the folder holds only
 * what index.html describes. Files not named like ours are left alone. */
static void prune_stale(rp_ctx *ctx)
{
    static const char *const sub[2] = { "", "/data" };
    for (int k = 0; k < 2; k++) {
        char dp[RP_PATH + 16];
        snprintf(dp, sizeof dp, "%s%s", ctx->out, sub[k]);
        DIR *d = opendir(dp);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            const char *nm = e->d_name, *dot = strrchr(nm, '.');
            if (strncmp(nm, "fig", 3) || !dot) continue;
            unsigned flag = !strcmp(dot, ".png") ? AMP_REPORT_PNG : !strcmp(dot, ".pdf") ? AMP_REPORT_PDF
                          : !strcmp(dot, ".svg") ? AMP_REPORT_SVG : 0;
            int is_data = !strcmp(dot, ".dat") || !strcmp(dot, ".gp");
            if (k == 0 ? !flag : !is_data) continue;
            int keep = 0;
            for (int i = 0; i < ctx->nfig && !keep; i++) {
                size_t n = strlen(ctx->figs[i].id);
                keep = (size_t)(dot - nm) == n && !strncmp(nm, ctx->figs[i].id, n) &&
                       (k == 1 || (ctx->figs[i].made & flag));
            }
            if (!keep) {
                char p[RP_PATH + 300];
                snprintf(p, sizeof p, "%s/%.255s", dp, nm);
                unlink(p);
            }
        }
        closedir(d);
    }
}

amp_status amp_report_parse_figsize(const char *s, int *out)
{
    if (s && !strcmp(s, "column")) *out = AMP_REPORT_FIG_COLUMN;
    else if (s && !strcmp(s, "wide")) *out = AMP_REPORT_FIG_WIDE;
    else return amp_fail(AMP_EINVAL, "--figsize: '%s' is neither column (3.5 in) nor wide (7 in)", s ? s : "");
    return AMP_OK;
}

amp_status amp_report_parse_formats(const char *s, unsigned *out)
{
    unsigned f = 0;
    char buf[256];
    if (!s || !*s || strlen(s) >= sizeof buf) return amp_fail(AMP_EINVAL, "--formats: empty or too long");
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < RP_NFORMATS && strcmp(t, rp_formats[k].ext)) k++;
        if (k == RP_NFORMATS) return amp_fail(AMP_EINVAL, "--formats: unknown format '%s' (png, pdf, svg)", t);
        f |= rp_formats[k].flag;
    }
    if (!f) return amp_fail(AMP_EINVAL, "--formats: no format given");
    *out = f;
    return AMP_OK;
}

/* Finds the folder holding the gnuplot scripts (see amp_report_write). */
amp_status rp_find_scripts(rp_ctx *ctx)
{
    char cand[6][RP_PATH];
    int n = 0;
    if (ctx->opts->scripts_dir) snprintf(cand[n++], RP_PATH, "%s", ctx->opts->scripts_dir);
    const char *e = getenv("AMPSIM_REPORT_SCRIPTS");
    if (e && *e) snprintf(cand[n++], RP_PATH, "%s", e);
    char exe[RP_PATH];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = 0;
        char *sl = strrchr(exe, '/');
        if (sl) *sl = 0;
        snprintf(cand[n++], RP_PATH, "%.4000s/../reports", exe);
        snprintf(cand[n++], RP_PATH, "%.4000s/../share/ampsim/reports", exe);
    }
    e = getenv("AMP_SRCDIR");
    if (e && *e) snprintf(cand[n++], RP_PATH, "%.4000s/reports", e);
    for (int i = 0; i < n; i++) {
        char p[RP_PATH + 32];
        snprintf(p, sizeof p, "%.4000s/fig1_hist.gp", cand[i]);
        if (is_file(p)) { snprintf(ctx->scripts, sizeof ctx->scripts, "%.4000s", cand[i]); return AMP_OK; }
        if (i == 0 && ctx->opts->scripts_dir)
            return amp_fail(AMP_EINVAL, "%s: no fig1_hist.gp there (--scripts)", cand[i]);
    }
    return amp_fail(AMP_EIO, "the report's gnuplot scripts (reports/fig*.gp) were not found; "
                    "set AMPSIM_REPORT_SCRIPTS to the folder that holds them");
}

/* DIR is a run folder (metrics.csv or config.json) or a compare folder
 * (summary.csv); anything else is AMP_EIO naming it. */
static amp_status folder_kind(const char *dir, int *compare)
{
    char p[RP_PATH + 32], q[RP_PATH + 32];
    if (!is_dir(dir)) return amp_fail(AMP_EIO, "%s: not a directory", dir);
    snprintf(p, sizeof p, "%.4000s/summary.csv", dir);
    if ((*compare = is_file(p))) return AMP_OK;
    snprintf(p, sizeof p, "%.4000s/metrics.csv", dir);
    snprintf(q, sizeof q, "%.4000s/config.json", dir);
    if (!is_file(p) && !is_file(q))
        return amp_fail(AMP_EIO, "%s: neither a run directory (no metrics.csv) nor a compare directory (no summary.csv)", dir);
    return AMP_OK;
}

/* Overlay: every run of every folder, labelled by folder (and run name for
 * a compare folder), linked by absolute path; the reference is the first
 * run named ref, else the first fp32 run. */
static amp_status load_overlay(rp_ctx *ctx, const char *const *dirs, int n)
{
    amp_status st = AMP_OK;
    for (int d = 0; d < n && !st; d++) {
        int cmp;
        char abs[RP_PATH];
        if ((st = folder_kind(dirs[d], &cmp))) return st;
        if (!realpath(dirs[d], abs)) return amp_fail(AMP_EIO, "%s: %s", dirs[d], strerror(errno));
        const char *base = strrchr(abs, '/');
        base = base && base[1] ? base + 1 : abs;
        rp_ctx sub;   /* a compare folder's runs, as its own page would list them */
        memset(&sub, 0, sizeof sub);
        sub.opts = ctx->opts;
        snprintf(sub.dir, sizeof sub.dir, "%s", abs);
        if (cmp) st = load_compare(&sub);
        else {
            sub.r = calloc(1, sizeof *sub.r);
            if (!sub.r) return amp_fail(AMP_ENOMEM, "out of memory");
            sub.nr = 1;
            st = load_run(&sub.r[0], abs, base);
        }
        rp_run *nr = st ? NULL : realloc(ctx->r, (ctx->nr + sub.nr) * sizeof *nr);
        if (!st && !nr) st = amp_fail(AMP_ENOMEM, "out of memory");
        for (size_t i = 0; i < sub.nr; i++) {
            if (st) { run_free(&sub.r[i]); continue; }
            rp_run *r = &nr[ctx->nr++];
            *r = sub.r[i];
            char lbl[300];
            snprintf(lbl, sizeof lbl, cmp ? "%.60s/%.60s" : "%.120s", base, sub.r[i].label);
            snprintf(r->link, sizeof r->link, "%s", r->dir);
            for (size_t j = 0; j + 1 < ctx->nr; j++)   /* two folders with the same name */
                if (!strcmp(nr[j].label, lbl)) { size_t o = strlen(lbl); snprintf(lbl + o, sizeof lbl - o, "#%d", d + 1); }
            snprintf(r->label, sizeof r->label, "%.120s", lbl);
            slugify(r->label, r->slug, sizeof r->slug);
        }
        if (nr) ctx->r = nr;
        for (int i = 0; i < sub.nskipped && i < 8 && ctx->nskipped < 8; i++)
            snprintf(ctx->skipped[ctx->nskipped++], sizeof ctx->skipped[0], "%.60s/%.60s", base, sub.skipped[i]);
        free(sub.r);
        amp_csv_free(&sub.summary);
    }
    if (st) return st;
    ctx->ref = -1;
    for (size_t i = 0; i < ctx->nr && ctx->ref < 0; i++) {
        const char *sl = strrchr(ctx->r[i].label, '/');
        if (sl && !strcmp(sl + 1, "ref")) ctx->ref = (int)i;
    }
    for (size_t i = 0; i < ctx->nr && ctx->ref < 0; i++)
        if (!strcmp(ctx->r[i].precision, "fp32")) ctx->ref = (int)i;
    if (ctx->ref > 0) {
        rp_run tmp = ctx->r[ctx->ref];
        memmove(&ctx->r[1], &ctx->r[0], (size_t)ctx->ref * sizeof *ctx->r);
        ctx->r[0] = tmp;
        ctx->ref = 0;
    }
    return AMP_OK;
}

static amp_status load_single(rp_ctx *ctx)
{
    ctx->r = calloc(1, sizeof *ctx->r);
    if (!ctx->r) return amp_fail(AMP_ENOMEM, "out of memory");
    const char *base = strrchr(ctx->dir, '/');
    ctx->nr = 1;
    amp_status st = load_run(&ctx->r[0], ctx->dir, base ? base + 1 : ctx->dir);
    snprintf(ctx->r[0].link, sizeof ctx->r[0].link, "..");
    if (!st && !strcmp(ctx->r[0].precision, "fp32")) ctx->ref = 0;
    return st;
}

amp_status rp_report_dirs(const char *const *dirs, int ndirs, const amp_report_opts *opts, char *index_path, size_t len)
{
    if (ndirs < 1) return amp_fail(AMP_EINVAL, "report: no folder given");
    if (ndirs > 1 && !(opts && opts->out)) return amp_fail(AMP_EINVAL, "report: several folders need --out DIR");
    rp_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return amp_fail(AMP_ENOMEM, "out of memory");
    amp_report_opts defo = { .formats = AMP_REPORT_PNG | AMP_REPORT_PDF | AMP_REPORT_SVG };
    ctx->opts = opts ? opts : &defo;
    amp_status st = AMP_OK;
    const char *dir = dirs[0];
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    if (dl + 64 >= sizeof ctx->dir) { st = amp_fail(AMP_EINVAL, "%s: path too long", dir); goto out; }
    memcpy(ctx->dir, dir, dl);
    ctx->dir[dl] = 0;
    ctx->ref = -1;
    char p[RP_PATH + 32];
    if (ndirs > 1) {
        ctx->compare = ctx->overlay = 1;
        if ((st = load_overlay(ctx, dirs, ndirs))) goto out;
    } else {
        if ((st = folder_kind(ctx->dir, &ctx->compare))) goto out;
        if ((st = ctx->compare ? load_compare(ctx) : load_single(ctx))) goto out;
        snprintf(p, sizeof p, "%s/accum.csv", ctx->dir);
        ctx->has_accum = is_file(p);
        if (ctx->has_accum && (st = load_accum(ctx, p))) goto out;
    }
    if ((st = rp_find_scripts(ctx))) goto out;
    if (ctx->opts->out) snprintf(ctx->out, sizeof ctx->out, "%.4000s", ctx->opts->out);
    else snprintf(ctx->out, sizeof ctx->out, "%.4000s/report", ctx->dir);
    snprintf(p, sizeof p, "%s/data", ctx->out);
    if ((st = amp_mkdir_p(p))) goto out;
    snprintf(p, sizeof p, "%s/scripts", ctx->out);
    if ((st = amp_mkdir_p(p))) goto out;
    for (size_t i = 0; i < ctx->nr; i++) {   /* links relative to the page's folder, wherever --out put it */
        rp_relpath(ctx->out, ctx->r[i].dir, ctx->r[i].link, sizeof ctx->r[i].link);
        ctx->r[i].same_as = -1;
        for (size_t j = 0; j < i && ctx->r[i].same_as < 0; j++)
            if (amp_run_identical(ctx->r[j].dir, ctx->r[i].dir))
                ctx->r[i].same_as = ctx->r[j].same_as >= 0 ? ctx->r[j].same_as : (int)j;
    }
    rp_relpath(ctx->out, ctx->dir, ctx->dirlink, sizeof ctx->dirlink);
    if ((st = rp_draw_all(ctx))) goto out;
    if (!(st = rp_write_index(ctx, index_path, len))) prune_stale(ctx);
out:
    for (size_t i = 0; i < ctx->nr; i++) run_free(&ctx->r[i]);
    free(ctx->r);
    amp_csv_free(&ctx->summary);
    amp_csv_free(&ctx->accum);
    free(ctx);
    return st;
}
