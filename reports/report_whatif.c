/* ampsim report — the --what-if shadow loss scalers of a run (whatif.csv):
 * per run a figure (each shadow's scale and the share of weight-gradient
 * values it flushed, at every logged step) and a table (final scale, skipped
 * steps, mean flushed share, steps with overflow). */
#include <math.h>
#include <string.h>
#include "amp_runlog.h"
#include "report_internal.h"

#define WI_MAX 32

/* The shadows of w in order of first appearance (at most max). */
static int shadows(const amp_run_whatif *w, const char **out, int max)
{
    int k = 0;
    for (size_t i = 0; i < w->n; i++) {
        int j = 0;
        while (j < k && strcmp(out[j], w->row[i].scaler)) j++;
        if (j == k && k < max) out[k++] = w->row[i].scaler;
    }
    return k;
}

/* Writes one block per shadow: step log2(scale) flushed/n overflow/n skipped. */
static void write_blocks(FILE *fp, const amp_run_whatif *w, const char *const *sh, int k, double *lim)
{
    /* lim: log2 scale min, max; smallest nonzero share */
    lim[0] = INFINITY, lim[1] = -INFINITY, lim[2] = 1.0;
    for (int j = 0; j < k; j++) {
        int rows = 0;
        for (size_t i = 0; i < w->n; i++) {
            const amp_run_whatif_row *r = &w->row[i];
            if (strcmp(r->scaler, sh[j])) continue;
            double y = r->scale > 0 && isfinite(r->scale) ? log2(r->scale) : NAN;
            double fl = r->n ? (double)r->flushed / (double)r->n : 0.0;
            double ov = r->n ? (double)r->overflow / (double)r->n : 0.0;
            if (isfinite(y)) { lim[0] = fmin(lim[0], y); lim[1] = fmax(lim[1], y); }
            if (fl > 0) lim[2] = fmin(lim[2], fl);
            if (ov > 0) lim[2] = fmin(lim[2], ov);
            fprintf(fp, "%ld ", r->step);
            rp_gp_num(fp, y);
            fprintf(fp, " %.9g %.9g %d\n", fl, ov, r->skipped);
            rows++;
        }
        if (!rows) fputs("NaN NaN NaN NaN 0\n", fp);
        fputs("\n\n", fp);
    }
    if (!isfinite(lim[0])) lim[0] = 0, lim[1] = 1;
}

static amp_status fig_whatif_run(rp_ctx *ctx, const rp_run *r)
{
    const char *sh[WI_MAX];
    int k = shadows(&r->wi, sh, WI_MAX);
    if (!k) return AMP_OK;
    char id[96], title[200];
    snprintf(id, sizeof id, ctx->compare ? "fig8_whatif_%s" : "fig8_whatif", r->slug);
    snprintf(title, sizeof title, "What-if loss scalers%s%.120s", ctx->compare ? ": " : "", ctx->compare ? r->label : "");
    rp_fig *f = rp_new_fig(ctx, id, "fig8_whatif.gp", title);
    if (!f) return AMP_OK;
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) return st;
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); return st; }
    fprintf(d.fp, "# %s: per shadow one block: step log2(scale) flushed/n overflow/n skipped\n", f->id);
    double lim[3];
    write_blocks(d.fp, &r->wi, sh, k, lim);
    long x0 = r->wi.row[0].step, x1 = r->wi.row[r->wi.n - 1].step;
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nymin = %g\nymax = %g\n"
            "xmin = %ld\nxmax = %ld\nfmin = %g\n", f->id, f->id, k, floor(lim[0]) - 1, ceil(lim[1]) + 1,
            x0, x1 > x0 ? x1 : x0 + 1, pow(10.0, floor(log10(lim[2]))));
    rp_gp_str_array(g.fp, "lbl", sh, k);
    if ((st = rp_commit2(&d, &g))) return st;
    rp_add_source(ctx, f, r, AMP_RUN_WHATIF);
    snprintf(f->caption, sizeof f->caption,
             "The shadow loss scalers of <code>--what-if</code> (whatif.csv), one line each, at every logged step. "
             "Top: log<sub>2</sub> of the scale each shadow would have used (filled circles: a step that shadow "
             "would have skipped). Bottom: the share of the run's weight-gradient values that shadow's scale "
             "flushes to zero in the gradient format (lines) and sends beyond its range (crosses); zero is not "
             "drawn. The shadows see this run's gradients, rescaled; they do not change the run.");
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, 640))) return st;
    ctx->nfig++;
    return AMP_OK;
}

amp_status rp_fig_whatif(rp_ctx *ctx)
{
    amp_status st;
    for (size_t i = 0; i < ctx->nr; i++)
        if (ctx->r[i].has_wi && (st = fig_whatif_run(ctx, &ctx->r[i]))) return st;
    return AMP_OK;
}

void rp_html_whatif(FILE *fp, const rp_run *r)
{
    const char *sh[WI_MAX];
    int k = r->has_wi ? shadows(&r->wi, sh, WI_MAX) : 0;
    if (!k) return;
    fprintf(fp, "<p>What-if loss scalers (<a href=\"%s/%s\">%s</a>; logged steps only):</p>\n"
            "<div class=tw><table><tr><th>shadow</th><th>logged steps</th><th>scale at the end</th>"
            "<th>skipped</th><th>mean flushed share</th><th>steps with overflow</th></tr>\n",
            r->link, AMP_RUN_WHATIF, AMP_RUN_WHATIF);
    for (int j = 0; j < k; j++) {
        long steps = 0, skipped = 0, over = 0;
        double fl = 0, last = 0;
        for (size_t i = 0; i < r->wi.n; i++) {
            const amp_run_whatif_row *w = &r->wi.row[i];
            if (strcmp(w->scaler, sh[j])) continue;
            steps++;
            skipped += w->skipped;
            over += w->overflow > 0;
            fl += w->n ? (double)w->flushed / (double)w->n : 0.0;
            last = w->scale;
        }
        fputs("<tr><td style=\"text-align:left\"><code>", fp);
        rp_html_escape(fp, sh[j]);
        fprintf(fp, "</code></td><td>%ld</td><td>%.6g</td><td>%ld</td><td>%.3g</td><td>%ld</td></tr>\n",
                steps, last, skipped, steps ? fl / (double)steps : 0.0, over);
    }
    fputs("</table></div>\n", fp);
}
