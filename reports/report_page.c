/* The report's HTML page (index.html of a run, compare or overlay): the
 * header, the Findings (report_findings.c), the figures with the exact
 * command that redraws each file, the summary tables folded to their key
 * columns (the rest one click away), the events with repeated rows collapsed
 * into one line, and each configuration as a difference against the
 * reference's. Every link is relative to the page's own folder (ctx->out),
 * so it resolves wherever --out puts the page. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_csv.h"
#include "amp_io.h"
#include "amp_rundir.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rp_html_head(FILE *fp, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n"
          "<meta name=viewport content=\"width=device-width, initial-scale=1\">\n<title>", fp);
    rp_html_escape(fp, title);
    fputs("</title>\n<style>\n"
          "body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}\n"
          "p,li,h1,h2,h3,code,summary{overflow-wrap:anywhere}\n"
          "img{max-width:100%;height:auto;border:1px solid #ddd}\n"
          "table{border-collapse:collapse;font-size:90%;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\n"
          ".tw{overflow-x:auto;max-width:100%}.find li{margin:.2em 0}\n"
          "th{background:#f0f0f0}pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:24em;font-size:85%;white-space:pre-wrap}\n"
          ".cap{font-size:95%}.src{font-size:85%;color:#555}.warn{color:#b00}code{font-size:90%}\n"
          "details{margin:.3em 0}summary{cursor:pointer;color:#555;font-size:90%}\n"
          "</style></head><body>\n", fp);
}

static void table_row(FILE *fp, const amp_csv *c, size_t i, const int *col, int n)
{
    fputs("<tr>", fp);
    for (int k = 0; k < n; k++) {
        fputs("<td>", fp);
        rp_html_escape(fp, i == (size_t)-1 ? c->head[col[k]] : amp_csv_get(c, i, col[k]));
        fputs("</td>", fp);
    }
    fputs("</tr>\n", fp);
}

void rp_html_table(FILE *fp, const amp_csv *c, size_t maxrows, const char *const *keys, int nkeys)
{
    int all[256], key[32], nk = 0, na = c->ncol < 256 ? c->ncol : 256;
    for (int k = 0; k < na; k++) all[k] = k;
    for (int q = 0; q < nkeys && nk < 32; q++) {
        int k = amp_csv_col(c, keys[q]);
        if (k >= 0) key[nk++] = k;
    }
    int fold = na > 8 && nk > 0;   /* a wide table: its key columns, all of them under "details" */
    for (int pass = 0; pass < 1 + fold; pass++) {
        const int *col = pass || !fold ? all : key;
        int n = pass || !fold ? na : nk;
        if (pass) fprintf(fp, "<details><summary>All %d columns</summary>\n", na);
        fputs("<div class=tw><table><tr>", fp);   /* a wide table scrolls inside its own box */
        for (int k = 0; k < n; k++) { fputs("<th>", fp); rp_html_escape(fp, c->head[col[k]]); fputs("</th>", fp); }
        fputs("</tr>\n", fp);
        for (size_t i = 0; i < c->nrows && i < maxrows; i++) table_row(fp, c, i, col, n);
        fputs("</table></div>\n", fp);
        if (pass) fputs("</details>\n", fp);
    }
    if (c->nrows > maxrows) fprintf(fp, "<p>… %zu more rows in the file.</p>\n", c->nrows - maxrows);
}

static int event_is_nonfinite(const char *ev)
{
    return strstr(ev, "finite") || strstr(ev, "nan") || strstr(ev, "NaN") || strstr(ev, "inf");
}

/* events.csv as a table, consecutive rows of the same event and tensor
 * collapsed into one: "nonfinite ×98", steps "3–100", the first detail. */
static void html_events(FILE *fp, const rp_run *r, const char *rel)
{
    const amp_csv *c = &r->ev.csv;
    fprintf(fp, "<p>From <a href=\"%s/events.csv\">", rel);
    rp_html_escape(fp, rel);
    fprintf(fp, "/events.csv</a>: %zu events.", c->nrows);
    for (size_t i = 0; i < c->nrows; i++) {
        if (!event_is_nonfinite(amp_csv_get(c, i, r->ev.event))) continue;
        fputs(" <b class=warn>First non-finite: step ", fp);
        rp_html_escape(fp, amp_csv_get(c, i, r->ev.step));
        fputs(", ", fp);
        rp_html_escape(fp, amp_csv_get(c, i, r->ev.event));
        fputs(", tensor ", fp);
        rp_html_escape(fp, amp_csv_get(c, i, r->ev.tensor));
        fputs(" (", fp);
        rp_html_escape(fp, amp_csv_get(c, i, r->ev.detail));
        fputs(").</b>", fp);
        break;
    }
    if (r->scale_zero_step >= 0)
        fprintf(fp, " <b class=warn>The loss scale reached 0 at step %ld (it cannot recover).</b>", r->scale_zero_step);
    fputs("</p>\n", fp);
    if (!c->nrows) return;
    fputs("<div class=tw><table><tr><th>step</th><th>event</th><th>tensor</th><th>detail (first)</th></tr>\n", fp);
    size_t shown = 0;
    for (size_t i = 0; i < c->nrows; shown++) {
        size_t j = i + 1;
        while (j < c->nrows && !strcmp(amp_csv_get(c, j, r->ev.event), amp_csv_get(c, i, r->ev.event)) &&
               !strcmp(amp_csv_get(c, j, r->ev.tensor), amp_csv_get(c, i, r->ev.tensor))) j++;
        if (shown < 60) {
            fputs("<tr><td>", fp);
            rp_html_escape(fp, amp_csv_get(c, i, r->ev.step));
            if (j - i > 1) { fputs("–", fp); rp_html_escape(fp, amp_csv_get(c, j - 1, r->ev.step)); }
            fputs("</td><td>", fp);
            rp_html_escape(fp, amp_csv_get(c, i, r->ev.event));
            if (j - i > 1) fprintf(fp, " ×%zu", j - i);
            fputs("</td><td>", fp);
            rp_html_escape(fp, amp_csv_get(c, i, r->ev.tensor));
            fputs("</td><td>", fp);
            rp_html_escape(fp, amp_csv_get(c, i, r->ev.detail));
            fputs("</td></tr>\n", fp);
        }
        i = j;
    }
    fputs("</table></div>\n", fp);
    if (shown > 60) fprintf(fp, "<p>… %zu more lines; the file has them all.</p>\n", shown - 60);
}

static void html_pre(FILE *fp, const char *text)
{
    fputs("<pre>", fp);
    rp_html_escape(fp, text);
    fputs("</pre>\n", fp);
}

/* Run r's config.json against the reference's: one line per top-level key
 * whose value differs ("key: reference value → this run's"), or the whole
 * file when it cannot be compared. */
static void html_config_diff(FILE *fp, const rp_run *r, const rp_run *ref)
{
    cJSON *a = cJSON_Parse(ref->config_text), *b = cJSON_Parse(r->config_text);
    if (!a || !b || !cJSON_IsObject(a) || !cJSON_IsObject(b)) { html_pre(fp, r->config_text); goto out; }
    int nd = 0;
    for (int pass = 0; pass < 2; pass++)
        for (cJSON *e = (pass ? a : b)->child; e; e = e->next) {
            cJSON *o = cJSON_GetObjectItemCaseSensitive(pass ? b : a, e->string);
            if (pass && o) continue;              /* keys of both were seen in the first pass */
            char *x = o ? cJSON_PrintUnformatted(o) : NULL, *y = cJSON_PrintUnformatted(e);
            if (!x || !y || strcmp(x, y)) {
                fputs(nd++ ? "\n" : "<pre>", fp);
                rp_html_escape(fp, e->string);
                fputs(": ", fp);
                rp_html_escape(fp, pass ? (y ? y : "?") : (x ? x : "(absent)"));
                fputs(" → ", fp);
                rp_html_escape(fp, pass ? "(absent)" : (y ? y : "?"));
            }
            free(x);
            free(y);
        }
    fputs(nd ? "</pre>\n" : "<p>The same as the reference's.</p>\n", fp);
out:
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void html_figure(FILE *fp, const rp_fig *f)
{
    const rp_format *fm = rp_formats;
    fprintf(fp, "<div class=fig id=\"%s\"><h3>", f->id);
    rp_html_escape(fp, f->title);
    fprintf(fp, "</h3>\n<a href=\"%s.png\"><img src=\"%s.png\" alt=\"", f->id, f->id);
    rp_html_escape(fp, f->title);
    fputs("\"></a>\n<p class=cap>", fp);
    fputs(f->caption, fp);
    fputs("</p>\n<p class=src>Download:", fp);
    for (int k = 0, n = 0; k < RP_NFORMATS; k++)
        if (f->made & fm[k].flag) fprintf(fp, "%s <a href=\"%s.%s\">%s</a>", n++ ? " ·" : "", f->id, fm[k].ext, fm[k].name);
    fprintf(fp, ". Drawn from %s by <a href=\"scripts/%s\">scripts/%s</a> with <a href=\"data/%s.gp\">data/%s.gp</a>.</p>\n"
            "<details><summary>Redraw (in the report folder; the same command made the file)</summary>\n",
            f->sources, f->script, f->script, f->id, f->id);
    for (int k = 0; k < RP_NFORMATS; k++) {
        if (!(f->made & fm[k].flag)) continue;
        char cmd[1200];
        rp_redraw_cmd(f, k, cmd, sizeof cmd);
        fputs("<pre>", fp);
        rp_html_escape(fp, cmd);
        fputs("</pre>\n", fp);
    }
    fputs("</details></div>\n", fp);
}

/* The per-run summary row: a non-finite number is said in words. */
static void num_cell(FILE *fp, double v)
{
    if (isfinite(v)) fprintf(fp, "<td>%.6g</td>", v);
    else fprintf(fp, "<td><b class=warn>not finite (%s)</b></td>", isnan(v) ? "NaN" : v > 0 ? "inf" : "−inf");
}

static void html_run_summary(FILE *fp, const rp_ctx *ctx, const rp_run *r)
{
    if (ctx->compare) { fputs("<h3>", fp); rp_html_escape(fp, r->label); fputs("</h3>\n", fp); }
    double val = NAN;
    for (size_t s = 0; s < r->m.n; s++) if (isfinite(r->m.val[s]) || (r->m.nval && !isnan(r->m.val[s]))) val = r->m.val[s];
    fprintf(fp, "<div class=tw><table><tr><th>precision</th><th>scaler</th><th>steps</th><th>final loss</th>%s"
                "<th>skipped steps</th><th>loss scale at the end</th></tr><tr><td>", r->m.nval ? "<th>last validation loss</th>" : "");
    rp_html_escape(fp, r->precision);
    fputs("</td><td>", fp);
    rp_html_escape(fp, r->scaler);
    if (*r->fp8_scaler) { fputs("; FP8: ", fp); rp_html_escape(fp, r->fp8_scaler); }
    long skipped = 0;
    for (size_t s = 0; s < r->m.n; s++) skipped += r->m.skipped[s];
    fprintf(fp, "</td><td>%zu</td>", r->m.n);
    num_cell(fp, r->m.loss[r->m.n - 1]);
    if (r->m.nval) num_cell(fp, val);
    fprintf(fp, "<td>%ld</td><td>%.6g</td></tr></table></div>\n", skipped, r->m.scale[r->m.n - 1]);
    rp_html_whatif(fp, r);
    if (r->summary_text) {
        fprintf(fp, "<details><summary>%s/summary.json</summary><p>From <a href=\"%s/summary.json\">%s/summary.json</a>:</p>\n",
                r->link, r->link, r->link);
        html_pre(fp, r->summary_text);
        fputs("</details>\n", fp);
    }
}

static void html_header(FILE *fp, const rp_ctx *ctx)
{
    char title[RP_PATH + 32];
    snprintf(title, sizeof title, "ampsim report: %s", ctx->dir);
    rp_html_head(fp, title);
    fputs("<h1>ampsim report</h1>\n<p>", fp);
    if (ctx->overlay) fputs("Overlay of the runs of several folders (labelled FOLDER or FOLDER/RUN)", fp);
    else {
        fprintf(fp, "%s directory <code>", ctx->compare ? "Compare" : "Run");
        rp_html_escape(fp, ctx->dir);
        fputs("</code>", fp);
    }
    fprintf(fp, ", written by ampsim %s. ", amp_version());
    if (ctx->compare) {
        fprintf(fp, "%zu runs; reference: ", ctx->nr);
        if (ctx->ref >= 0) {
            fputs("<code>", fp); rp_html_escape(fp, ctx->r[ctx->ref].label);
            fputs("</code> (precision ", fp); rp_html_escape(fp, ctx->r[ctx->ref].precision); fputs(")", fp);
        } else {
            fputs("<b class=warn>none found</b> (no run named ref, no run with precision fp32)", fp);
        }
        fputs(" — the run named ref, as <code>ampsim compare</code> names it; failing that, a run with precision fp32.", fp);
    }
    fputs("</p>\n", fp);
}

static const char *const summary_keys[] = { "name", "status", "final_loss", "tail_mean_loss", "tail_diff", "skipped_steps",
                                            "mean_flushed_frac_grads", "first_divergence_step", "same_as" };

amp_status rp_write_index(rp_ctx *ctx, char *index_path, size_t len)
{
    char p[RP_PATH + 32];
    snprintf(p, sizeof p, "%s/index.html", ctx->out);
    amp_afile af;
    amp_status st = amp_afile_open(&af, p);
    if (st) return st;
    FILE *fp = af.fp;
    html_header(fp, ctx);
    rp_html_findings(fp, ctx);
    rp_html_coverage(fp, ctx);
    if (ctx->nskipped) {
        fprintf(fp, "<p><b class=warn>%d run%s failed according to summary.csv and %s left out:", ctx->nskipped,
                ctx->nskipped > 1 ? "s" : "", ctx->nskipped > 1 ? "are" : "is");
        for (int i = 0; i < ctx->nskipped && i < 8; i++) { fputs(" <code>", fp); rp_html_escape(fp, ctx->skipped[i]); fputs("</code>", fp); }
        fputs("</b> (see their .log files next to the run folders).</p>\n", fp);
    }
    fputs("<ul>\n", fp);
    for (int i = 0; i < ctx->nfig; i++) {
        fprintf(fp, "<li><a href=\"#%s\">", ctx->figs[i].id);
        rp_html_escape(fp, ctx->figs[i].title);
        fputs("</a></li>\n", fp);
    }
    fputs("<li><a href=\"#summary\">Summary</a></li><li><a href=\"#events\">Events</a></li>"
          "<li><a href=\"#config\">Configuration</a></li></ul>\n", fp);
    for (int i = 0; i < ctx->nnotes; i++) fprintf(fp, "<p class=src>%s</p>\n", ctx->notes[i]);
    fputs("<h2>Figures</h2>\n", fp);
    for (int i = 0; i < ctx->nfig; i++) html_figure(fp, &ctx->figs[i]);

    fputs("<h2 id=summary>Summary</h2>\n", fp);
    if (ctx->compare && !ctx->overlay) {
        fprintf(fp, "<p>From <a href=\"%s/summary.csv\">summary.csv</a> (its key columns; all of them below).</p>\n", ctx->dirlink);
        rp_html_table(fp, &ctx->summary, 1000, summary_keys, (int)(sizeof summary_keys / sizeof summary_keys[0]));
    }
    for (size_t i = 0; i < ctx->nr; i++) html_run_summary(fp, ctx, &ctx->r[i]);
    fputs("<h2 id=events>Events</h2>\n", fp);
    for (size_t i = 0; i < ctx->nr; i++) {
        if (ctx->compare) { fputs("<h3>", fp); rp_html_escape(fp, ctx->r[i].label); fputs("</h3>\n", fp); }
        html_events(fp, &ctx->r[i], ctx->r[i].link);
    }
    fputs("<h2 id=config>Configuration</h2>\n", fp);
    const rp_run *ref = ctx->nr > 1 ? &ctx->r[ctx->ref >= 0 ? ctx->ref : 0] : NULL;
    if (ref) {
        fputs("<p>The reference's <code>config.json</code> in full; every other run's as the keys where it differs "
              "(reference value → the run's).</p>\n", fp);
    }
    for (size_t i = 0; i < ctx->nr; i++) {
        const rp_run *r = &ctx->r[i];
        fprintf(fp, "<p><b>");
        rp_html_escape(fp, r->label);
        fprintf(fp, "</b>: <a href=\"%s/config.json\">%s/config.json</a>%s</p>\n", r->link, r->link, r == ref ? " (the reference)" : "");
        if (!ref || r == ref) html_pre(fp, r->config_text);
        else html_config_diff(fp, r, ref);
    }
    fputs("<p class=src>Conventions: metrics.csv's loss_scale at step s is the scale used in step s; "
          "hist.csv counts the values given to each tensor's format (gradients after multiplication by the "
          "loss scale); the unscaled histograms shift them by −round(log2 S) binades, exact for power-of-two scales. "
          "Non-finite values (NaN and ±inf) are counted together everywhere: as overflow in Figures 1 and 4, "
          "apart from flushed values in Figure 5, and in the Findings.</p>\n"
          "</body></html>\n", fp);
    if ((st = amp_afile_commit(&af))) return st;
    if (index_path) snprintf(index_path, len, "%s", p);
    return AMP_OK;
}
