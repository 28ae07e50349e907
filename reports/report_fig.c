/* The report's figures 2-6 (figure 1 is in report_hist.c). For each figure,
 * a data file (data/<id>.dat) and a parameter file (data/<id>.gp: sizes,
 * labels, format bands) computed here, drawn by one of the scripts
 * reports/fig*.gp through gnuplot (report_gp.c), once per output format. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_io.h"
#include "amp_csv.h"
#include "amp_report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>



/* Centred running mean of v[0..n) over w points, the window narrowed
 * symmetrically at both ends (out[0] = v[0]: the curve starts at the true
 * first value), skipping NaN; NaN where v[i] itself is not finite. */
static void running_mean(const double *v, size_t n, size_t w, double *out)
{
    for (size_t i = 0; i < n; i++) {
        size_t hw = w / 2;
        if (hw > i) hw = i;
        if (hw > n - 1 - i) hw = n - 1 - i;
        size_t lo = i - hw, hi = i + hw + 1;
        if (!isfinite(v[i])) { out[i] = NAN; continue; }
        double sum = 0;
        size_t k = 0;
        for (size_t j = lo; j < hi; j++)
            if (isfinite(v[j])) { sum += v[j]; k++; }
        out[i] = k ? sum / (double)k : NAN;
    }
}

static amp_status fig_loss(rp_ctx *ctx)
{
    rp_fig *f = rp_new_fig(ctx, "fig2_loss", "fig2_loss.gp",
                        ctx->compare ? "Loss of each run against the FP32 reference" : "Training loss");
    if (!f) return AMP_OK;
    const rp_run *ref = ctx->compare && ctx->ref >= 0 ? &ctx->r[ctx->ref] : NULL;
    size_t maxn = 0;
    for (size_t i = 0; i < ctx->nr; i++) if (ctx->r[i].m.n > maxn) maxn = ctx->r[i].m.n;
    size_t w = maxn / 40 < 1 ? 1 : maxn / 40;
    if (!(w & 1)) w++;
    double *buf = malloc(4 * maxn * sizeof *buf);
    if (!buf) return amp_fail(AMP_ENOMEM, "out of memory");
    double *loss = buf, *dif = buf + maxn, *ls = buf + 2 * maxn, *ds = buf + 3 * maxn;
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) { free(buf); return st; }
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); free(buf); return st; }
    fprintf(d.fp, "# %s: one block per run (reference first; runs with the same trajectory as an earlier one "
                  "left out): step loss |loss - reference loss| their running means over %zu steps, 1 where the loss "
                  "is not finite, validation loss\n", f->id, w);
    int n = 0, anydiff = 0, hasval = 0;
    long nonfin = 0;
    const char *lbl[ctx->nr ? ctx->nr : 1];
    char (*merged)[400] = calloc(ctx->nr ? ctx->nr : 1, sizeof *merged);
    double isref[ctx->nr ? ctx->nr : 1];
    double lmin = INFINITY, lmax = 0;
    if (!merged) { amp_afile_abort(&d); amp_afile_abort(&g); free(buf); return amp_fail(AMP_ENOMEM, "out of memory"); }
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ctx->nr; i++) {
            const rp_run *r = &ctx->r[i];
            if ((pass == 0) != (r == ref) || r->same_as >= 0) continue;
            /* one curve and one key entry for runs that trained identically: "A = B" */
            snprintf(merged[n], sizeof merged[n], "%.120s", r->label);
            for (size_t j = 0; j < ctx->nr; j++)
                if (ctx->r[j].same_as == (int)i) {
                    size_t o = strlen(merged[n]);
                    snprintf(merged[n] + o, sizeof merged[n] - o, " = %.100s", ctx->r[j].label);
                }
            lbl[n] = merged[n];
            isref[n] = r == ref;
            n++;
            for (size_t s = 0; s < r->m.n; s++) {
                loss[s] = isfinite(r->m.loss[s]) ? r->m.loss[s] : NAN;
                dif[s] = NAN;
                if (ref && r != ref) {
                    size_t lo = 0, hi = ref->m.n;
                    while (lo < hi) { size_t m = (lo + hi) / 2; if (ref->m.step[m] < r->m.step[s]) lo = m + 1; else hi = m; }
                    if (lo < ref->m.n && ref->m.step[lo] == r->m.step[s]) dif[s] = fabs(r->m.loss[s] - ref->m.loss[lo]);
                    if (!isfinite(dif[s])) dif[s] = NAN;
                }
            }
            running_mean(loss, r->m.n, w, ls);
            running_mean(dif, r->m.n, w, ds);
            for (size_t s = 0; s < r->m.n; s++) {
                double v = r->m.val[s];
                if (isfinite(v)) hasval = 1; else v = NAN;
                double lv[2] = { ls[s], v };
                for (int q = 0; q < 2; q++)
                    if (lv[q] > 0) { if (lv[q] < lmin) lmin = lv[q]; if (lv[q] > lmax) lmax = lv[q]; }
                if (ds[s] > 0) anydiff = 1;
                if (!(dif[s] > 0)) dif[s] = NAN;
                if (!(ds[s] > 0)) ds[s] = NAN;
                fprintf(d.fp, "%ld", r->m.step[s]);
                double col[6] = { loss[s], dif[s], ls[s], ds[s], isfinite(r->m.loss[s]) ? NAN : 1.0, v };
                for (int c = 0; c < 6; c++) { fputc(' ', d.fp); rp_gp_num(d.fp, col[c]); }
                nonfin += !isfinite(r->m.loss[s]);
                fputc('\n', d.fp);
            }
            fputs("\n\n", d.fp);
        }
    free(buf);
    long x0 = ctx->r[0].m.step[0], x1 = ctx->r[0].m.step[ctx->r[0].m.n - 1];
    for (size_t i = 0; i < ctx->nr; i++) {
        if (ctx->r[i].m.step[0] < x0) x0 = ctx->r[i].m.step[0];
        if (ctx->r[i].m.step[ctx->r[i].m.n - 1] > x1) x1 = ctx->r[i].m.step[ctx->r[i].m.n - 1];
    }
    if (x1 == x0) x1 = x0 + 1;
    if (!(lmax > 0)) { lmin = 1; lmax = 2; }
    int logloss = lmin > 0 && lmax / lmin > 20;
    /* a flat or single-point curve (a run that went NaN at step 1) still
     * gets a y range gnuplot accepts */
    double pad = 0.05 * fmax(lmax - lmin, 0.02 * fabs(lmax) + 1e-3);
    double ylo = logloss ? lmin / 1.3 : lmin - pad;
    double yhi = logloss ? lmax * 1.3 : lmax + pad;
    double ymark = logloss ? yhi / 1.15 : yhi - 0.4 * pad;   /* where non-finite steps are marked */
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nhasref = %d\nanydiff = %d\n"
                  "logloss = %d\nxmin = %ld\nxmax = %ld\nylo = %.9g\nyhi = %.9g\nwin = %zu\nymark = %.9g\nnonfin = %ld\n"
                  "hasval = %d\n", f->id, f->id, n, ref != NULL, anydiff, logloss, x0, x1, ylo, yhi, w, ymark, nonfin, hasval);
    rp_gp_str_array(g.fp, "lbl", lbl, n);
    rp_gp_num_array(g.fp, "isref", isref, n);
    free(merged);
    if ((st = rp_commit2(&d, &g))) return st;
    rp_add_sources_all(ctx, f, "metrics.csv", 0);
    char win[400] = "";
    if (w > 1) snprintf(win, sizeof win, " Lines are running means over %zu steps, narrowed at both ends so that each "
                        "curve starts at the run's true first loss and is not drawn where the loss is not finite (the "
                        "per-step values are in data/fig2_loss.dat)%s.", w,
                        ref ? "; the reference's per-step loss is drawn in light grey" : "");
    if (hasval) { size_t o = strlen(win); snprintf(win + o, sizeof win - o, " Open circles: validation loss (<code>--eval-every</code>)."); }
    for (size_t i = 0; i < ctx->nr; i++)
        if (ctx->r[i].same_as >= 0) {
            size_t o = strlen(win);
            snprintf(win + o, sizeof win - o, " Runs with identical losses share one curve (\"A = B\").");
            break;
        }
    snprintf(f->caption, sizeof f->caption, "%s%s",
             ref ? "Upper panel: training loss of each run; the FP32 reference is the thick black line. Lower panel: "
                   "|loss − reference loss| at the same step (log scale)."
                 : ctx->compare ? "Training loss of each run (no FP32 reference in this compare: no divergence panel)."
                                : "Training loss (a run directory has no reference; <code>ampsim report</code> on a compare directory adds the divergence panel).",
             win);
    if (nonfin) {
        size_t o = strlen(f->caption);
        snprintf(f->caption + o, sizeof f->caption - o, " <b class=warn>Crosses along the top mark the %ld step%s "
                 "where a run's loss was not finite</b> (no line is drawn there).", nonfin, nonfin > 1 ? "s" : "");
    }
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, ref ? 680 : 480))) return st;
    ctx->nfig++;
    return AMP_OK;
}

/* ---- figure 3: loss-scale trajectories ---------------------------------- */

static amp_status fig_scale(rp_ctx *ctx)
{
    int n = 0;
    for (size_t i = 0; i < ctx->nr; i++) n += ctx->r[i].scale_used;
    if (!n) {
        rp_add_note(ctx, "Figure 3 (loss-scale trajectories) not drawn: the loss scale is 1 at every step of %s.",
                 ctx->compare ? "every run" : "this run");
        return AMP_OK;
    }
    rp_fig *f = rp_new_fig(ctx, "fig3_scale", "fig3_scale.gp", "Loss-scale trajectories");
    if (!f) return AMP_OK;
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) return st;
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); return st; }
    fprintf(d.fp, "# %s: per run two blocks: step log2(scale); skipped steps: step log2(scale)\n", f->id);
    const char *lbl[ctx->nr];
    double ymin = INFINITY, ymax = -INFINITY;
    long x0 = 0, x1 = 1, nskip_total = 0;
    int k = 0;
    char zeros[600] = "";
    for (size_t i = 0; i < ctx->nr; i++) {
        const rp_run *r = &ctx->r[i];
        if (!r->scale_used) continue;
        lbl[k] = r->label;
        if (k == 0 || r->m.step[0] < x0) x0 = r->m.step[0];
        if (k == 0 || r->m.step[r->m.n - 1] > x1) x1 = r->m.step[r->m.n - 1];
        k++;
        for (int blk = 0; blk < 2; blk++) {
            int rows = 0;
            for (size_t s = 0; s < r->m.n; s++) {
                if (blk == 1 && !r->m.skipped[s]) continue;
                double y = r->m.scale[s] > 0 && isfinite(r->m.scale[s]) ? log2(r->m.scale[s]) : NAN;
                if (isfinite(y)) { if (y < ymin) ymin = y; if (y > ymax) ymax = y; }
                fprintf(d.fp, "%ld ", r->m.step[s]);
                rp_gp_num(d.fp, y);
                fputc('\n', d.fp);
                rows++;
                nskip_total += blk;
            }
            if (!rows) fputs("NaN NaN\n", d.fp);
            fputs("\n\n", d.fp);
        }
        if (r->scale_zero_step >= 0) {
            size_t o = strlen(zeros);
            snprintf(zeros + o, sizeof zeros - o, " <b class=warn>%.100s: the scale reached 0 at step %ld</b> (not drawn on a log axis).",
                     r->label, r->scale_zero_step);
        }
    }
    if (!isfinite(ymin)) { ymin = 0; ymax = 1; }
    if (x1 == x0) x1 = x0 + 1;
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nymin = %g\nymax = %g\nxmin = %ld\nxmax = %ld\n",
            f->id, f->id, k, floor(ymin) - 1, ceil(ymax) + 1, x0, x1);
    rp_gp_str_array(g.fp, "lbl", lbl, k);
    if ((st = rp_commit2(&d, &g))) return st;
    rp_add_sources_all(ctx, f, "metrics.csv", 1);
    snprintf(f->caption, sizeof f->caption,
             "log<sub>2</sub> of the loss scale used at each step (metrics.csv, loss_scale), one line per run that scales; "
             "filled circles mark skipped steps (%ld in all), drawn at the scale used in that step.%s", nskip_total, zeros);
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, 480))) return st;
    ctx->nfig++;
    return AMP_OK;
}

/* ---- figure 4: heat maps tensor x step ---------------------------------- */

/* Whether tensor t gets a row in the heat map: logged, and (when filtering)
 * flushed, saturated or overflowed at some logged step. */
static int heat_row(const rp_tens *t, size_t nls, int filter)
{
    if (t->n_total <= 0) return 0;
    if (!filter) return 1;
    for (size_t j = 0; j < nls; j++)
        if (t->fl[j] > 0 || t->so[j] > 0) return 1;
    return 0;
}

static amp_status fig_heat_run(rp_ctx *ctx, const rp_run *r)
{
    char id[200];
    snprintf(id, sizeof id, ctx->compare ? "fig4_heat_%s" : "fig4_heat", r->slug);
    char title[300];
    snprintf(title, sizeof title, "Underflow and overflow per tensor and step%s%s", ctx->compare ? ": " : "", ctx->compare ? r->label : "");
    rp_fig *f = rp_new_fig(ctx, id, "fig4_heat.gp", title);
    if (!f) return AMP_OK;
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) return st;
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); return st; }
    int nt = 0, nlogged = 0;
    size_t maxlen = 4;
    double vmin = 1;
    for (size_t i = 0; i < r->nt; i++) nlogged += r->t[i].n_total > 0;
    int filter = nlogged > 80;   /* big models: only the tensors where something happened */
    int eventful = 0;
    for (size_t i = 0; i < r->nt; i++) eventful += heat_row(&r->t[i], r->nls, 1);
    if (nlogged && !eventful) {  /* one line instead of two empty maps */
        amp_afile_abort(&d); amp_afile_abort(&g);
        size_t o = strlen(ctx->calm);
        if (ctx->ncalm++ < 12) snprintf(ctx->calm + o, sizeof ctx->calm - o, "%s%.60s", o ? ", " : "", r->label);
        return AMP_OK;
    }
    for (size_t i = 0; i < r->nt; i++)
        if (heat_row(&r->t[i], r->nls, filter)) {
            nt++;
            if (strlen(r->t[i].name) + strlen(r->t[i].fmt) + 3 > maxlen) maxlen = strlen(r->t[i].name) + strlen(r->t[i].fmt) + 3;
        }
    if (!nt) {
        amp_afile_abort(&d); amp_afile_abort(&g);
        if (nlogged)
            rp_add_note(ctx, "Figure 4 for %.100s not drawn: none of its %d logged tensors was flushed, saturated, overflowed or NaN at any logged step.",
                     r->label, nlogged);
        else
            rp_add_note(ctx, "Figure 4 for %.100s not drawn: its tensors.csv has no rows (trained with --log-every 0?).", r->label);
        return AMP_OK;
    }
    /* at most 240 columns: wider runs average neighbouring logged steps */
    size_t G = r->nls < 240 ? r->nls : 240;
    double lo0 = r->nls > 1 ? (r->lstep[1] - r->lstep[0]) / 2.0 : 0.5;
    double hiN = r->nls > 1 ? (r->lstep[r->nls - 1] - r->lstep[r->nls - 2]) / 2.0 : 0.5;
    fprintf(d.fp, "# %s: two blocks (flushed/n; (saturated+overflow)/n): step row half_width half_height value\n", f->id);
    for (int blk = 0; blk < 2; blk++) {
        int row = 0;
        for (size_t i = 0; i < r->nt; i++) {
            const rp_tens *t = &r->t[i];
            if (!heat_row(t, r->nls, filter)) continue;
            double y = nt - 1 - row++;
            for (size_t c = 0; c < G; c++) {
                size_t j0 = c * r->nls / G, j1 = (c + 1) * r->nls / G;   /* steps [j0, j1) */
                double v = 0;
                int k = 0;
                for (size_t j = j0; j < j1; j++) {
                    double q = blk ? t->so[j] : t->fl[j];
                    if (!isnan(q)) { v += q; k++; }
                }
                if (!k) continue;
                v /= k;
                double left = j0 ? (r->lstep[j0] + r->lstep[j0 - 1]) / 2.0 : r->lstep[0] - lo0;
                double right = j1 < r->nls ? (r->lstep[j1] + r->lstep[j1 - 1]) / 2.0 : r->lstep[r->nls - 1] + hiN;
                if (v > 0 && v < vmin) vmin = v;
                fprintf(d.fp, "%g %g %g 0.5 %.9g\n", (left + right) / 2, y, (right - left) / 2, v);
            }
        }
        fputs("NaN NaN NaN NaN NaN\n\n\n", d.fp);
    }
    double cbmin = pow(10, floor(log10(vmin)));
    if (cbmin < 1e-7) cbmin = 1e-7;
    if (cbmin > 1e-2) cbmin = 1e-2;
    int hpx = 170 + 18 * (nt < 12 ? 12 : nt);
    fprintf(g.fp, "W = %d\nH = %d\n", RP_FIG_W, hpx);
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nNT = %d\nxmin = %g\nxmax = %g\ncbmin = %g\n"
                  "lmargin_px = %d\n", f->id, f->id, nt, r->lstep[0] - lo0, r->lstep[r->nls - 1] + hiN, cbmin,
            (int)(maxlen * 8 + 24));
    fputs("maintitle = ", g.fp);
    char mt[600];
    char sd[160];
    snprintf(mt, sizeof mt, "%.100s (%s, %s): share of each tensor's values", r->label, r->precision,
             rp_scaler_desc(r, sd, sizeof sd));
    rp_gp_str(g.fp, mt);
    fputs("\nset ytics (", g.fp);
    int row = 0;
    for (size_t i = 0; i < r->nt; i++) {
        if (!heat_row(&r->t[i], r->nls, filter)) continue;
        char nm[220];
        snprintf(nm, sizeof nm, "%s (%s)", r->t[i].name, r->t[i].fmt);
        if (row) fputs(", ", g.fp);
        rp_gp_str(g.fp, nm);
        fprintf(g.fp, " %d", nt - 1 - row++);
    }
    fputs(")\n", g.fp);
    if ((st = rp_commit2(&d, &g))) return st;
    rp_add_source(ctx, f, r, "tensors.csv");
    snprintf(f->caption, sizeof f->caption,
             "Left: fraction of each tensor's values flushed to zero by its format (nonzero input, zero result) at each logged step. "
             "Right: fraction saturated to the maximum, overflowed to inf or NaN (columns saturated + overflow + nan: every non-finite value counts). Log colour scale; light grey cells: none; "
             "white: not logged. Rows in the order the tensors first appear in tensors.csv.%s", G < r->nls ? " Each column averages about " : "");
    if (G < r->nls) {
        size_t o = strlen(f->caption);
        snprintf(f->caption + o, sizeof f->caption - o, "%zu logged steps.", (r->nls + G - 1) / G);
    }
    if (filter) {
        size_t o = strlen(f->caption);
        snprintf(f->caption + o, sizeof f->caption - o, " Of the %d logged tensors, the %d with no flushed, saturated or "
                 "overflowed value at any logged step are left out.", nlogged, nlogged - nt);
    }
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, hpx))) return st;
    ctx->nfig++;
    return AMP_OK;
}

/* ---- figure 5: per-layer underflow rate of the weight gradients --------- */

/* The layer of a weight-gradient tensor: its name without a ".grad" suffix
 * and without the last component (fc1.weight.grad, fc1.bias.grad -> fc1). */
static void layer_of(const char *tensor, char *out, size_t len)
{
    snprintf(out, len, "%s", tensor);
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".grad")) out[n - 5] = 0;   /* fc1.weight.grad -> fc1.weight */
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
}

static amp_status fig_layers(rp_ctx *ctx)
{
    /* layers in order of first appearance over the runs */
    char (*lay)[160] = NULL;
    int nl = 0;
    for (size_t i = 0; i < ctx->nr; i++)
        for (size_t t = 0; t < ctx->r[i].nt; t++) {
            if (!ctx->r[i].t[t].wgrad || ctx->r[i].t[t].n_total <= 0) continue;
            char l[160];
            layer_of(ctx->r[i].t[t].name, l, sizeof l);
            int found = 0;
            for (int k = 0; k < nl && !found; k++) found = !strcmp(lay[k], l);
            if (found) continue;
            char (*nlay)[160] = realloc(lay, (size_t)(nl + 1) * sizeof *lay);
            if (!nlay) { free(lay); return amp_fail(AMP_ENOMEM, "out of memory"); }
            lay = nlay;
            snprintf(lay[nl++], 160, "%s", l);
        }
    if (!nl) {
        free(lay);
        rp_add_note(ctx, "Figure 5 (per-layer underflow) not drawn: tensors.csv has no weight_grad tensor.");
        return AMP_OK;
    }
    rp_fig *f = rp_new_fig(ctx, "fig5_layers", "fig5_layers.gp", "Per-layer underflow rate of the weight gradients");
    if (!f) { free(lay); return AMP_OK; }
    amp_afile d, g;
    amp_status st = rp_open_data(ctx, f->id, "dat", &d);
    if (st) { free(lay); return st; }
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); free(lay); return st; }
    fprintf(d.fp, "# %s: one block per run: layer_index flushed/n (summed over the layer's weight_grad tensors and logged steps)\n", f->id);
    const char *lbl[ctx->nr];
    int k = 0;
    double ymin = 1, ymax = 0, fl[nl], nn[nl], nonfin = 0;
    char nfruns[400] = "";
    for (size_t i = 0; i < ctx->nr; i++) {
        const rp_run *r = &ctx->r[i];
        if (ctx->compare && (int)i == ctx->ref) continue;
        lbl[k++] = r->label;
        for (int q = 0; q < nl; q++) fl[q] = nn[q] = 0;
        double rnf = 0;
        for (size_t t = 0; t < r->nt; t++) {
            if (!r->t[t].wgrad) continue;
            rnf += r->t[t].nonfinite_total;
            char l[160];
            layer_of(r->t[t].name, l, sizeof l);
            for (int q = 0; q < nl; q++)
                if (!strcmp(lay[q], l)) { fl[q] += r->t[t].flushed_total; nn[q] += r->t[t].n_total; }
        }
        if (rnf > 0) {
            size_t o = strlen(nfruns);
            snprintf(nfruns + o, sizeof nfruns - o, "%s%.60s: %.0f", o ? "; " : "", r->label, rnf);
            nonfin += rnf;
        }
        for (int q = 0; q < nl; q++) {
            if (nn[q] <= 0) continue;
            double v = fl[q] / nn[q];
            if (v > 0 && v < ymin) ymin = v;
            if (v > ymax) ymax = v;
            fprintf(d.fp, "%d %.9g\n", q + 1, v);
        }
        fputs("NaN NaN\n\n\n", d.fp);
    }
    if (!k) {  /* only the reference: draw it */
        amp_afile_abort(&d); amp_afile_abort(&g); free(lay);
        rp_add_note(ctx, "Figure 5 (per-layer underflow) not drawn: the compare has only the FP32 reference.");
        return AMP_OK;
    }
    double yfloor = pow(10, floor(log10(ymin)) - 1);
    if (yfloor < 1e-9) yfloor = 1e-9;
    double ymaxv = ymax > 0 ? pow(10, ceil(log10(ymax)) + 0.2) : yfloor * 100;
    if (ymaxv > 1.5) ymaxv = 1.5;
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nNL = %d\nyfloor = %g\nymaxv = %g\nallzero = %d\n"
                  "nonfin = %.0f\n", f->id, f->id, k, nl, yfloor, ymaxv, !(ymax > 0), nonfin);
    size_t maxlen = 0;
    for (int q = 0; q < nl; q++) if (strlen(lay[q]) > maxlen) maxlen = strlen(lay[q]);
    rp_gp_str_array(g.fp, "lbl", lbl, k);
    /* gnuplot takes a font from a string constant or variable, not an expression */
    if (nl > 12) fputs("xtfont = exists(\"paper\") ? (paper > 0 ? \",8\" : \",9\") : \",9\"\n", g.fp);
    fputs("set xtics (", g.fp);
    for (int q = 0; q < nl; q++) {
        char t[200];
        const char *nm = lay[q];
        if (!strncmp(nm, "transformer.", 12) && nm[12]) nm += 12;   /* nanoGPT names: h.0.attn.c_attn */
        if (nl > 12) snprintf(t, sizeof t, "%s", nm);
        else snprintf(t, sizeof t, "%d %s", q + 1, nm);
        if (q) fputs(", ", g.fp);
        rp_gp_str(g.fp, t);
        fprintf(g.fp, " %d", q + 1);
    }
    fputs(nl > 12 ? ") rotate by 90 right font xtfont\n" : maxlen > 8 ? ") rotate by -30\n" : ")\n", g.fp);
    free(lay);
    if ((st = rp_commit2(&d, &g))) return st;
    rp_add_sources_all(ctx, f, "tensors.csv", 1);
    snprintf(f->caption, sizeof f->caption,
             "Share of weight-gradient values flushed to zero (flushed / n in tensors.csv, summed over each layer's weight and bias "
             "gradients and over the logged steps) against the layer's position in the network, one line per %s. "
             "Points on the bottom line (labelled 0) are layers where nothing was flushed.%s",
             ctx->compare ? "run (the FP32 reference is left out)" : "run",
             ctx->compare ? "" : " Run <code>ampsim report</code> on a compare directory for one line per scaler.");
    if (nonfin > 0) {
        size_t o = strlen(f->caption);
        snprintf(f->caption + o, sizeof f->caption - o, " <b class=warn>Weight-gradient values that were not finite (NaN or inf), "
                 "counted apart from the flushed ones: %s</b>.", nfruns);
    }
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, 520 + (int)(nl > 12 ? maxlen * 6 : maxlen > 12 ? (maxlen - 12) * 4 : 0)))) return st;
    ctx->nfig++;
    return AMP_OK;
}

/* ---- figure 6: accumulation error vs K ---------------------------------- */

static amp_status fig_accum(rp_ctx *ctx)
{
    if (!ctx->has_accum) {
        rp_add_note(ctx, "Figure 6 (accumulation error vs K) not drawn: no accum.csv in this directory "
                      "(make one with <code>ampsim bench accum --csv &gt; DIR/accum.csv</code>).");
        return AMP_OK;
    }
    const amp_csv c = ctx->accum;   /* validated by load_accum */
    amp_status st = AMP_OK;
    static const char *const need[] = { "K", "accumulator", "rounding", "promote_every", "mean_rel_err", "max_rel_err", "operands" };
    int k[7];
    if ((st = amp_csv_require(&c, need, 7, k))) return st;
    /* groups in order of appearance; rows of a group in K order as written */
    int ng = 0;
    int *grp = malloc(c.nrows * sizeof *grp);
    char (*gname)[160] = malloc(c.nrows * sizeof *gname);
    double *gcol = malloc(c.nrows * sizeof *gcol), *gdash = malloc(c.nrows * sizeof *gdash);
    const char **lbl = malloc(c.nrows * sizeof *lbl);
    if (!grp || !gname || !gcol || !gdash || !lbl) { st = amp_fail(AMP_ENOMEM, "out of memory"); goto out; }
    char accs[16][64];
    int nacc = 0;
    double emin = 1;
    for (size_t i = 0; i < c.nrows; i++) {
        long K, pe;
        double m, mx;
        if ((st = amp_csv_long(&c, i, k[0], 1, 1L << 40, &K))) goto out;
        if ((st = amp_csv_long(&c, i, k[3], 0, 1L << 40, &pe))) goto out;
        if ((st = amp_csv_num(&c, i, k[4], &m))) goto out;
        if ((st = amp_csv_num(&c, i, k[5], &mx))) goto out;
        if (m > 0 && m < emin) emin = m;
        char nm[160], acc[64];
        snprintf(acc, sizeof acc, "%.30s %.20s", amp_csv_get(&c, i, k[1]), amp_csv_get(&c, i, k[2]));
        if (pe) snprintf(nm, sizeof nm, "%.60s accumulator, promoted every %ld", acc, pe);
        else snprintf(nm, sizeof nm, "%.60s accumulator", acc);
        int gi = -1;
        for (int q = 0; q < ng && gi < 0; q++) if (!strcmp(gname[q], nm)) gi = q;
        if (gi < 0) {
            gi = ng++;
            snprintf(gname[gi], 160, "%s", nm);
            int ai = -1;
            for (int q = 0; q < nacc && ai < 0; q++) if (!strcmp(accs[q], acc)) ai = q;
            if (ai < 0 && nacc < 16) { ai = nacc; snprintf(accs[nacc++], 64, "%s", acc); }
            gcol[gi] = ai < 0 ? 15 : ai;
            gdash[gi] = pe ? 2 : 1;
        }
        grp[i] = gi;
    }
    rp_fig *f = rp_new_fig(ctx, "fig6_accum", "fig6_accum.gp", "Dot-product error of narrow accumulators vs length K");
    if (!f) goto out;
    amp_afile d, g;
    if ((st = rp_open_data(ctx, f->id, "dat", &d))) goto out;
    if ((st = rp_open_data(ctx, f->id, "gp", &g))) { amp_afile_abort(&d); goto out; }
    fprintf(d.fp, "# %s: one block per accumulator configuration: K mean_rel_err max_rel_err\n", f->id);
    for (int q = 0; q < ng; q++) {
        lbl[q] = gname[q];
        for (size_t i = 0; i < c.nrows; i++) {
            if (grp[i] != q) continue;
            fprintf(d.fp, "%s %s %s\n", amp_csv_get(&c, i, k[0]), amp_csv_get(&c, i, k[4]), amp_csv_get(&c, i, k[5]));
        }
        fputs("\n\n", d.fp);
    }
    fprintf(g.fp, "# parameters of %s\ndatafile = \"data/%s.dat\"\nN = %d\nymin = %g\n", f->id, f->id, ng,
            pow(10, floor(log10(emin))));
    rp_gp_str_array(g.fp, "lbl", lbl, ng);
    rp_gp_num_array(g.fp, "col", gcol, ng);
    rp_gp_num_array(g.fp, "dash", gdash, ng);
    fputs("operands = ", g.fp);
    rp_gp_str(g.fp, amp_csv_get(&c, 0, k[6]));
    fputc('\n', g.fp);
    if ((st = rp_commit2(&d, &g))) goto out;
    rp_add_source(ctx, f, NULL, "accum.csv");
    snprintf(f->caption, sizeof f->caption,
             "Mean relative error (lines; the shaded points are the maximum over the trials) of a dot product of K products of "
             "random values in [0,1) rounded to %s, summed in a narrow accumulator, against the exact sum. Dashed: the partial sum "
             "is promoted into an FP32 accumulator every N<sub>C</sub> products (DeepSeek-V3). Made by <code>ampsim bench accum --csv</code>.",
             amp_csv_get(&c, 0, k[6]));
    if ((st = rp_gp_draw(ctx, f, RP_FIG_W, 560))) goto out;
    ctx->nfig++;
out:
    free(grp); free(gname); free(gcol); free(gdash); free(lbl);
    return st;
}

amp_status rp_draw_all(rp_ctx *ctx)
{
    amp_status st;
    if ((st = rp_fig_hist(ctx))) return st;
    if ((st = fig_loss(ctx))) return st;
    if ((st = fig_scale(ctx))) return st;
    for (size_t i = 0; i < ctx->nr; i++)
        if ((st = fig_heat_run(ctx, &ctx->r[i]))) return st;
    if (ctx->ncalm)   /* one line for every run whose heat maps would be empty */
        rp_add_note(ctx, "Figure 4 (underflow and overflow per tensor and step) not drawn for %s%s: nothing was flushed, "
                    "saturated, overflowed or NaN at any logged step.", ctx->calm, ctx->ncalm > 12 ? ", …" : "");
    if ((st = fig_layers(ctx))) return st;
    if ((st = rp_fig_whatif(ctx))) return st;
    return fig_accum(ctx);
}
