/* amp_report_write and amp_report_write_many: a sweep folder is reported
 * here, every other folder by report.c.
 *
 * The report of a sweep folder (written by `ampsim sweep`: DIR/summary.csv
 * with the columns group, seed, the varied options, then compare's columns,
 * and one compare folder per group). Each group's compare page is written
 * (DIR/GROUP/report/index.html); DIR/report/index.html aggregates over the
 * seeds, per run configuration (the compare name: precision, loss scaler,
 * FP8 strategy) and per combination of varied values: mean and spread of
 * the tail-mean loss and of the flushed share of gradient values, and the
 * number of runs that are stuck or diverged; a table and a figure. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_csv.h"
#include "amp_io.h"
#include "amp_rundir.h"
#include "amp_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A run is stuck when its tail-mean loss is still at least this share of its
 * first step's loss (it learned nothing); diverged when it failed or its
 * final or tail loss is not finite. */
#define RP_STUCK 0.95

static int is_sweep(const char *dir)
{
    char p[RP_PATH + 32];
    amp_csv c;
    snprintf(p, sizeof p, "%.4000s/summary.csv", dir);
    if (amp_csv_read(p, &c)) return 0;
    int yes = amp_csv_col(&c, "group") == 0 && amp_csv_col(&c, "name") > 0;
    amp_csv_free(&c);
    return yes;
}

typedef struct cell {            /* one (configuration, varied values) over the seeds */
    char cfg[160], vary[200];
    int n, stuck, diverged;
    double tl, tl2, fl, fl2;     /* sums of tail loss and flushed share (finite runs) and of their squares */
    double gp, gp2;              /* sums of the paired gap: tail loss - the same seed's reference tail loss */
    int ntl, nfl, ngp;
    char same[160];              /* summary.csv's same_as, when every seed's run names the same one */
    int same_ok;
} cell;

/* The cell that cell i trained exactly as at every seed (the same run, by
 * summary.csv's same_as), -1 if none: it is shown as one with it, "A = B". */
static int merged_into(const cell *v, int n, int i)
{
    if (!v[i].same_ok) return -1;
    for (int j = 0; j < n; j++)
        if (j != i && !strcmp(v[j].cfg, v[i].same) && !strcmp(v[j].vary, v[i].vary)) return j;
    return -1;
}

static double mean(double s, int n) { return n ? s / n : NAN; }

static int is_finite_text(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    return *s && !*e && isfinite(v);
}

/* First-step loss of DIR/GROUP/NAME, NaN if unreadable. */
static double first_loss(const char *dir, const char *group, const char *name)
{
    char p[RP_PATH + 400];
    amp_run_metrics m;
    snprintf(p, sizeof p, "%.3000s/%.190s/%.190s", dir, group, name);
    if (amp_run_read_metrics(p, &m)) return NAN;
    double v = m.n ? m.loss[0] : NAN;
    amp_run_metrics_free(&m);
    return v;
}

static amp_status aggregate(rp_ctx *ctx, const amp_csv *c, cell **out, int *ncell)
{
    int cg = 0, cs = amp_csv_col(c, "seed"), cn = amp_csv_col(c, "name"), cst = amp_csv_col(c, "status");
    int cfin = amp_csv_col(c, "final_loss"), ctl = amp_csv_col(c, "tail_mean_loss"), cfl = amp_csv_col(c, "mean_flushed_frac_grads");
    int cgap = amp_csv_col(c, "tail_diff"), csame = amp_csv_col(c, "same_as");
    if (cs < 0 || cst < 0 || cfin < 0 || ctl < 0 || cfl < 0)
        return amp_fail(AMP_EFORMAT, "%s/summary.csv: not a sweep summary (columns seed, status, final_loss, tail_mean_loss, "
                        "mean_flushed_frac_grads needed)", ctx->dir);
    cell *v = calloc(c->nrows ? c->nrows : 1, sizeof *v);
    if (!v) return amp_fail(AMP_ENOMEM, "out of memory");
    int n = 0;
    for (size_t i = 0; i < c->nrows; i++) {
        char vary[200] = "";
        for (int k = cs + 1; k < cn; k++) {
            size_t o = strlen(vary);
            snprintf(vary + o, sizeof vary - o, "%s%.40s=%.40s", o ? ", " : "", c->head[k], amp_csv_get(c, i, k));
        }
        if (!*vary) snprintf(vary, sizeof vary, "all");
        const char *name = amp_csv_get(c, i, cn);
        int k = 0;
        while (k < n && (strcmp(v[k].cfg, name) || strcmp(v[k].vary, vary))) k++;
        if (k == n) { snprintf(v[k].cfg, sizeof v[k].cfg, "%.150s", name); snprintf(v[k].vary, sizeof v[k].vary, "%s", vary); n++; }
        cell *e = &v[k];
        e->n++;
        const char *sa = csame >= 0 ? amp_csv_get(c, i, csame) : "";
        if (e->n == 1) { snprintf(e->same, sizeof e->same, "%.150s", sa); e->same_ok = *sa != 0; }
        else if (strcmp(e->same, sa)) e->same_ok = 0;
        const char *tl = amp_csv_get(c, i, ctl), *fl = amp_csv_get(c, i, cfl);
        if (strcmp(amp_csv_get(c, i, cst), "ok") || !is_finite_text(amp_csv_get(c, i, cfin)) || !is_finite_text(tl)) {
            e->diverged++;
            continue;
        }
        double t = strtod(tl, NULL), l0 = first_loss(ctx->dir, amp_csv_get(c, i, cg), name);
        e->tl += t; e->tl2 += t * t; e->ntl++;
        if (is_finite_text(fl)) { double f = strtod(fl, NULL); e->fl += f; e->fl2 += f * f; e->nfl++; }
        const char *gs = cgap >= 0 ? amp_csv_get(c, i, cgap) : "";
        if (is_finite_text(gs)) { double q = strtod(gs, NULL); e->gp += q; e->gp2 += q * q; e->ngp++; }
        if (isfinite(l0) && t >= RP_STUCK * l0) e->stuck++;
    }
    *out = v;
    *ncell = n;
    return AMP_OK;
}

/* Figure 7: tail loss (mean +- spread over the seeds) per varied value, one line per configuration. */
static amp_status sweep_figure(rp_ctx *ctx, const cell *v, int n)
{
    rp_fig *f = rp_new_fig(ctx, "fig7_sweep", "fig7_sweep.gp", "Tail loss and flushed share over the seeds, per configuration and varied value");
    if (!f) return AMP_OK;
    const char *cfg[64], *vary[64], *lbl[64];
    char lab[64][300];
    int nc = 0, nv = 0;
    for (int i = 0; i < n; i++) {
        int a = 0, b = 0, all = 1;   /* a configuration the same as another at every cell is not drawn again */
        for (int q = 0; q < n; q++) if (!strcmp(v[q].cfg, v[i].cfg) && merged_into(v, n, q) < 0) all = 0;
        while (a < nc && strcmp(cfg[a], v[i].cfg)) a++;
        if (a == nc && nc < 64 && !all) {
            snprintf(lab[nc], sizeof lab[nc], "%.150s", v[i].cfg);
            for (int q = 0; q < n; q++) {
                int j = merged_into(v, n, q);
                size_t o = strlen(lab[nc]);
                if (j >= 0 && !strcmp(v[j].cfg, v[i].cfg) && !strcmp(v[j].vary, v[i].vary) && o + 4 < sizeof lab[nc])
                    snprintf(lab[nc] + o, sizeof lab[nc] - o, " = %.100s", v[q].cfg);
            }
            lbl[nc] = lab[nc];
            cfg[nc++] = v[i].cfg;
        }
        while (b < nv && strcmp(vary[b], v[i].vary)) b++;
        if (b == nv && nv < 64) vary[nv++] = v[i].vary;
    }
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) return st;
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); return st; }
    fprintf(d.fp, "# %s: one block per configuration: varied-value index, mean paired gap (tail loss - the same seed's "
                  "reference tail loss), its sample sd, mean flushed share of gradient values (%%), its sample sd\n", f->id);
    for (int a = 0; a < nc; a++) {
        int rows = 0;
        for (int b = 0; b < nv; b++)
            for (int i = 0; i < n; i++)
                if (!strcmp(v[i].cfg, cfg[a]) && !strcmp(v[i].vary, vary[b]) && v[i].ngp) {
                    fprintf(d.fp, "%g %.9g %.9g ", b + (a - (nc - 1) / 2.0) * 0.04, mean(v[i].gp, v[i].ngp),
                            rp_sdev(v[i].gp, v[i].gp2, v[i].ngp));
                    rp_gp_num(d.fp, 100 * mean(v[i].fl, v[i].nfl));
                    fputc(' ', d.fp);
                    rp_gp_num(d.fp, 100 * rp_sdev(v[i].fl, v[i].fl2, v[i].nfl));
                    fputc('\n', d.fp);
                    rows++;
                }
        if (!rows) fputs("NaN NaN NaN NaN NaN\n", d.fp);
        fputs("\n\n", d.fp);
    }
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nNV = %d\n", f->id, f->id, nc, nv);
    rp_gp_str_array(g.fp, "lbl", lbl, nc);
    rp_gp_str_array(g.fp, "vlbl", vary, nv);
    if ((st = rp_commit2(&d, &g))) return st;
    snprintf(f->caption, sizeof f->caption, "Upper panel: the gap of each configuration's tail-mean loss (mean over the last "
             "quarter of the steps) to the reference's, paired per seed (summary.csv's tail_diff: the same seed, data and "
             "initial weights), averaged over the seeds, with error bars of one sample standard deviation of the gap; lower "
             "panel: the share of gradient values flushed to zero, in percent, the same way; x: the varied options. "
             "Runs that diverged are left out of the means (they are counted in the table).");
    snprintf(f->sources, sizeof f->sources, "<a href=\"%.1000s/summary.csv\">summary.csv</a>", ctx->dirlink);
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, 720))) return st;
    ctx->nfig++;
    return AMP_OK;
}

/* A number for the table, "–" when there is none (every run diverged). */
static void cellnum(FILE *fp, const char *fmt, double v)
{
    fputs("<td>", fp);
    if (isfinite(v)) fprintf(fp, fmt, v);
    else fputs("–", fp);
    fputs("</td>", fp);
}

static void cellcount(FILE *fp, int k)
{
    fprintf(fp, k ? "<td><b class=warn>%d</b></td>" : "<td>%d</td>", k);
}

static void sweep_table(FILE *fp, const cell *v, int n)
{
    fputs("<div class=tw><table><tr><th>configuration</th><th>varied</th><th>runs</th><th>gap to reference (paired) mean</th>"
          "<th>± sd</th><th>tail loss mean</th><th>± sd</th><th>flushed (%) mean</th><th>± sd</th><th>stuck</th>"
          "<th>diverged</th></tr>\n", fp);
    for (int i = 0; i < n; i++) {
        fputs("<tr><td>", fp); rp_html_escape(fp, v[i].cfg);
        fputs("</td><td>", fp); rp_html_escape(fp, v[i].vary);
        fprintf(fp, "</td><td>%d</td>", v[i].n);
        cellnum(fp, "%.3g", mean(v[i].gp, v[i].ngp));
        cellnum(fp, "%.2g", rp_sdev(v[i].gp, v[i].gp2, v[i].ngp));
        cellnum(fp, "%.5g", mean(v[i].tl, v[i].ntl));
        cellnum(fp, "%.2g", rp_sdev(v[i].tl, v[i].tl2, v[i].ntl));
        cellnum(fp, "%.3g", 100 * mean(v[i].fl, v[i].nfl));
        cellnum(fp, "%.2g", 100 * rp_sdev(v[i].fl, v[i].fl2, v[i].nfl));
        cellcount(fp, v[i].stuck);
        cellcount(fp, v[i].diverged);
        fputs("</tr>\n", fp);
    }
    fputs("</table></div>\n", fp);
}

/* The sweep's verdict per cell: the gap to the reference paired per seed
 * (each seed's run against the same seed's reference), its mean and sample
 * sd over the seeds; "no effect beyond seed noise" when |mean| is at most
 * twice its standard error (sd / sqrt(n)), i.e. the seeds do not agree on a
 * sign and size. One seed gives no noise estimate and says so. */
static void sweep_findings(FILE *fp, const cell *v, int n)
{
    fputs("<h2 id=findings>Findings</h2>\n<p>Each configuration against the reference, paired per seed: the gap of the "
          "tail-mean loss to the same seed's reference run, averaged over the seeds (± one sample sd of the gap). A gap "
          "whose mean is within twice its standard error (sd/√n) of zero is <i>no effect beyond seed noise</i>. "
          "Configurations that trained exactly alike at every seed are one entry (“A = B”).</p>\n"
          "<ul class=find>\n", fp);
    for (int i = 0; i < n; i++) {
        if (!strcmp(v[i].cfg, "ref") || merged_into(v, n, i) >= 0) continue;
        fputs("<li><b>", fp);
        rp_html_escape(fp, v[i].cfg);
        for (int q = 0; q < n; q++)
            if (merged_into(v, n, q) == i) { fputs("</b> = <b>", fp); rp_html_escape(fp, v[q].cfg); }
        fputs("</b> (", fp);
        rp_html_escape(fp, v[i].vary);
        fputs("): ", fp);
        double m = mean(v[i].gp, v[i].ngp), sd = rp_sdev(v[i].gp, v[i].gp2, v[i].ngp);
        if (!v[i].ngp) fputs("no finite paired gap", fp);
        else if (v[i].ngp < 2) fprintf(fp, "gap %+.3g on one seed (no estimate of the seed noise)", m);
        else if (fabs(m) <= rp_noise_floor(v[i].gp, v[i].gp2, v[i].ngp))
            fprintf(fp, "gap %+.3g ± %.2g over %d seeds: <b>no effect beyond seed noise</b>", m, sd, v[i].ngp);
        else fprintf(fp, "<b>loss %s the reference by %.3g ± %.2g</b> over %d seeds (beyond seed noise)",
                     m > 0 ? "above" : "below", fabs(m), sd, v[i].ngp);
        if (v[i].diverged) fprintf(fp, "; <b class=warn>%d of %d runs diverged</b>", v[i].diverged, v[i].n);
        if (v[i].stuck) fprintf(fp, "; <b class=warn>%d stuck</b>", v[i].stuck);
        fputs(".</li>\n", fp);
    }
    fputs("</ul>\n", fp);
}

/* Each group's own compare page, and the list of links to them. */
static amp_status group_pages(rp_ctx *ctx, const amp_csv *c, FILE *fp)
{
    fputs("<h2 id=groups>Groups</h2>\n<ul>\n", fp);
    for (size_t i = 0; i < c->nrows; i++) {
        const char *g = amp_csv_get(c, i, 0);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(amp_csv_get(c, j, 0), g);
        if (seen) continue;
        char gd[RP_PATH + 200];
        snprintf(gd, sizeof gd, "%.4000s/%.190s", ctx->dir, g);
        amp_report_opts o = *ctx->opts;
        o.out = NULL;
        const char *one = gd;
        amp_status st = rp_report_dirs(&one, 1, &o, NULL, 0);
        if (st == AMP_EINTR) return st;
        fputs("<li>", fp);
        if (st) {
            rp_html_escape(fp, g);
            fputs(" <b class=warn>(no page: ", fp); rp_html_escape(fp, amp_errmsg()); fputs(")</b>", fp);
        } else {
            char link[RP_PATH];
            snprintf(gd + strlen(gd), sizeof gd - strlen(gd), "/report");
            rp_relpath(ctx->out, gd, link, sizeof link);
            fputs("<a href=\"", fp); rp_html_escape(fp, link); fputs("/index.html\">", fp);
            rp_html_escape(fp, g);
            fputs("</a>", fp);
        }
        fputs("</li>\n", fp);
    }
    fputs("</ul>\n", fp);
    return AMP_OK;
}

static amp_status sweep_write(rp_ctx *ctx, char *index_path, size_t len)
{
    char p[RP_PATH + 64];
    amp_csv c;
    snprintf(p, sizeof p, "%s/summary.csv", ctx->dir);
    amp_status st = amp_csv_read(p, &c);
    if (st) return st;
    cell *v = NULL;
    int n = 0;
    amp_afile af = { 0 };
    if ((st = aggregate(ctx, &c, &v, &n)) || (st = rp_find_scripts(ctx))) goto out;
    snprintf(ctx->out, sizeof ctx->out, "%.4000s", ctx->opts->out ? ctx->opts->out : "");
    if (!ctx->opts->out) snprintf(ctx->out, sizeof ctx->out, "%.4000s/report", ctx->dir);
    snprintf(p, sizeof p, "%s/data", ctx->out);
    if ((st = amp_mkdir_p(p))) goto out;
    snprintf(p, sizeof p, "%s/scripts", ctx->out);
    if ((st = amp_mkdir_p(p))) goto out;
    rp_relpath(ctx->out, ctx->dir, ctx->dirlink, sizeof ctx->dirlink);
    if ((st = sweep_figure(ctx, v, n))) goto out;
    snprintf(p, sizeof p, "%s/index.html", ctx->out);
    if ((st = amp_afile_open(&af, p))) goto out;
    FILE *fp = af.fp;
    rp_html_head(fp, "ampsim sweep report");
    fputs("<h1>ampsim sweep report</h1>\n<p>Sweep directory <code>", fp);
    rp_html_escape(fp, ctx->dir);
    fprintf(fp, "</code>, written by ampsim %s: %zu runs in %d cells (configuration × varied options), aggregated over "
                "the seeds from <a href=\"%s/summary.csv\">summary.csv</a>. A run is <i>stuck</i> when its tail-mean loss "
                "is still at least %g of its first step's loss, <i>diverged</i> when it failed or its loss is not finite.</p>\n",
            amp_version(), c.nrows, n, ctx->dirlink, RP_STUCK);
    sweep_findings(fp, v, n);
    fputs("<h2>Per configuration and varied options</h2>\n", fp);
    sweep_table(fp, v, n);
    for (int i = 0; i < ctx->nfig; i++) {
        const rp_fig *f = &ctx->figs[i];
        fprintf(fp, "<div class=fig id=\"%s\"><h3>", f->id);
        rp_html_escape(fp, f->title);
        fprintf(fp, "</h3>\n<a href=\"%s.png\"><img src=\"%s.png\" alt=\"", f->id, f->id);
        rp_html_escape(fp, f->title);
        fprintf(fp, "\"></a>\n<p class=cap>%s</p><p class=src>Drawn from %s by <a href=\"scripts/%s\">scripts/%s</a>.</p></div>\n",
                f->caption, f->sources, f->script, f->script);
    }
    if ((st = group_pages(ctx, &c, fp))) goto out;
    fputs("</body></html>\n", fp);
    st = amp_afile_commit(&af);
    if (!st && index_path) snprintf(index_path, len, "%s", p);
out:
    if (st) amp_afile_abort(&af);
    free(v);
    amp_csv_free(&c);
    return st;
}

amp_status amp_report_write(const char *dir, const amp_report_opts *opts, char *index_path, size_t len)
{
    return amp_report_write_many(&dir, 1, opts, index_path, len);
}

amp_status amp_report_write_many(const char *const *dirs, int n, const amp_report_opts *opts, char *index_path,
                                 size_t len)
{
    if (n != 1 || !dirs || !dirs[0] || !is_sweep(dirs[0])) return rp_report_dirs(dirs, n, opts, index_path, len);
    rp_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return amp_fail(AMP_ENOMEM, "out of memory");
    amp_report_opts defo = { .formats = AMP_REPORT_PNG | AMP_REPORT_PDF | AMP_REPORT_SVG };
    ctx->opts = opts ? opts : &defo;
    size_t dl = strlen(dirs[0]);
    while (dl > 1 && dirs[0][dl - 1] == '/') dl--;
    amp_status st = AMP_OK;
    if (dl + 64 >= sizeof ctx->dir) st = amp_fail(AMP_EINVAL, "%s: path too long", dirs[0]);
    else {
        memcpy(ctx->dir, dirs[0], dl);
        ctx->dir[dl] = 0;
        st = sweep_write(ctx, index_path, len);
    }
    free(ctx);
    return st;
}
