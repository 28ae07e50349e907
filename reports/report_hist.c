/* Figure 1 of the report: gradient-magnitude histograms (log2|g| per binade,
 * a zero bin, inf/NaN) over the bands of the gradients' format -- normal,
 * subnormal, flushed to zero, overflow -- unscaled and after the loss scale
 * (Micikevicius et al. 2018, Fig. 3). Drawn by reports/fig1_hist.gp: a pooled
 * panel and pages of per-tensor panels for a run, one pooled panel per run
 * for a compare. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- figure 1: gradient histograms with format bands -------------------- */

typedef struct hpanel {
    char title[200];
    const double *hu, *hs;   /* RP_NB counts */
    double zero, infnan, total;
    amp_format f;
    int scaled;              /* a loss scale other than 1: unscaled (grey) and as given (blue) */
    int asgiven;             /* per-tensor FP8 scaled: only the values as given to the format (blue) */
} hpanel;

/* A panel title "NAME (WHAT)", on two lines when it would not fit over a
 * panel of a three-column page. */
static void panel_title(char *out, size_t len, const char *name, const char *what)
{
    int wrap = strlen(name) + strlen(what) + 3 > 34;
    snprintf(out, len, "%.130s%s(%.60s)", name, wrap ? "\n" : " ", what);
}

/* Draws np panels (cols x rows) into figure `id`. */
static amp_status hist_figure(rp_ctx *ctx, rp_fig *fig, const hpanel *pn, int np, int cols,
                              int h, const char *maintitle)
{
    int dmin = RP_BHI, dmax = RP_BLO;
    double pmin = 100;
    int any_infnan = 0;
    for (int i = 0; i < np; i++) {
        for (int b = 0; b < RP_NB; b++) {
            double c = pn[i].asgiven ? pn[i].hs[b] : pn[i].scaled ? pn[i].hu[b] + pn[i].hs[b] : pn[i].hu[b];
            if (c > 0) {
                if (b + RP_BLO < dmin) dmin = b + RP_BLO;
                if (b + RP_BLO > dmax) dmax = b + RP_BLO;
            }
            if (!pn[i].asgiven && pn[i].hu[b] > 0 && 100 * pn[i].hu[b] / pn[i].total < pmin) pmin = 100 * pn[i].hu[b] / pn[i].total;
            if ((pn[i].scaled || pn[i].asgiven) && pn[i].hs[b] > 0 && 100 * pn[i].hs[b] / pn[i].total < pmin) pmin = 100 * pn[i].hs[b] / pn[i].total;
        }
        if (pn[i].zero > 0 && 100 * pn[i].zero / pn[i].total < pmin) pmin = 100 * pn[i].zero / pn[i].total;
        if (pn[i].infnan > 0) {
            any_infnan = 1;
            if (100 * pn[i].infnan / pn[i].total < pmin) pmin = 100 * pn[i].infnan / pn[i].total;
        }
    }
    if (dmin > dmax) { dmin = -1; dmax = 0; }   /* only zeros: an empty magnitude axis */
    double xlo = dmin - 2, xhi = dmax + 3;
    for (int i = 0; i < np; i++) {
        double esub = pn[i].f.has_subnormals ? log2(pn[i].f.min_subnormal) : pn[i].f.emin;
        double eov = log2(pn[i].f.max_finite);
        if (esub - 1 >= dmin - 16 && esub - 3 < xlo) xlo = esub - 3;
        if (pn[i].f.emin >= dmin - 16 && pn[i].f.emin - 2 < xlo) xlo = pn[i].f.emin - 2;
        if (eov <= dmax + 16 && eov + 2 > xhi) xhi = ceil(eov + 2);
    }
    double xz = xlo - 2.5, xin = xhi + 3;
    double ylo = pow(10, floor(log10(pmin)));
    if (ylo < 1e-9) ylo = 1e-9;
    if (ylo > 1) ylo = 1;

    amp_afile d, g;
    amp_status st = rp_open_data(ctx, fig->id, "dat", &d);
    if (st) return st;
    if ((st = rp_open_data(ctx, fig->id, "gp", &g))) { amp_afile_abort(&d); return st; }
    fprintf(d.fp, "# %s: per panel three blocks: unscaled, as logged (x S), special bins\n"
                  "# columns: log2|x| bin centre, percent of the panel's values\n", fig->id);
    for (int i = 0; i < np; i++) {
        for (int blk = 0; blk < 2; blk++) {
            const double *c = blk == 0 ? pn[i].hu : pn[i].hs;
            int rows = 0;
            if (blk == 0 ? !pn[i].asgiven : pn[i].scaled || pn[i].asgiven)
                for (int b = 0; b < RP_NB; b++)
                    if (c[b] > 0) { fprintf(d.fp, "%g %.9g\n", b + RP_BLO + 0.5, 100 * c[b] / pn[i].total); rows++; }
            if (!rows) fputs("NaN NaN\n", d.fp);
            fputs("\n\n", d.fp);
        }
        fprintf(d.fp, "%g ", xz); rp_gp_num(d.fp, pn[i].zero > 0 ? 100 * pn[i].zero / pn[i].total : NAN);
        fprintf(d.fp, "\n%g ", xin); rp_gp_num(d.fp, pn[i].infnan > 0 ? 100 * pn[i].infnan / pn[i].total : NAN);
        fputs("\n\n\n", d.fp);
    }
    FILE *fp = g.fp;
    int rows = (np + cols - 1) / cols;
    fprintf(fp, "# parameters of %s (written by ampsim report)\ndatafile = \"data/%s.dat\"\n", fig->id, fig->id);
    double xstep = xhi - xlo <= 24 ? 2 : xhi - xlo <= 48 ? 5 : xhi - xlo <= 100 ? 10 : 20;
    if (cols > 2) xstep *= 2;
    fprintf(fp, "W = %d\nH = %d\n", RP_FIG_W, h);
    fprintf(fp, "N = %d\ncols = %d\nrows = %d\nxz = %g\nxin = %g\nxlo = %g\nxhi = %g\nylo = %g\nany_infnan = %d\n"
                "xstep = %g\nxstart = %g\n",
            np, cols, rows, xz, xin, xlo, xhi, ylo, any_infnan, xstep, ceil((xlo + 0.35 * xstep) / xstep) * xstep);
    fprintf(fp, "xend = %g\n", floor((xhi - (any_infnan ? 0.35 * xstep : 0)) / xstep) * xstep);
    fputs("maintitle = ", fp); rp_gp_str(fp, maintitle); fputc('\n', fp);
    const char *tt[np > 0 ? np : 1];
    const char *fn[np > 0 ? np : 1];
    double esub[np > 0 ? np : 1], emin[np > 0 ? np : 1], eov[np > 0 ? np : 1], sc[np > 0 ? np : 1], ag[np > 0 ? np : 1];
    for (int i = 0; i < np; i++) {
        tt[i] = pn[i].title;
        fn[i] = pn[i].f.name;
        esub[i] = pn[i].f.has_subnormals ? log2(pn[i].f.min_subnormal) - 1 : pn[i].f.emin;
        emin[i] = pn[i].f.emin;
        eov[i] = log2(pn[i].f.max_finite);
        sc[i] = pn[i].scaled;
        ag[i] = pn[i].asgiven;
    }
    rp_gp_str_array(fp, "ttl", tt, np);
    rp_gp_str_array(fp, "fmtname", fn, np);
    rp_gp_num_array(fp, "eflush", esub, np);
    rp_gp_num_array(fp, "enorm", emin, np);
    rp_gp_num_array(fp, "eover", eov, np);
    rp_gp_num_array(fp, "scaled", sc, np);
    rp_gp_num_array(fp, "asgiven", ag, np);
    if ((st = rp_commit2(&d, &g))) return st;
    return rp_gp_draw(ctx, fig, RP_FIG_W, h);
}

/* The format of a run's gradient histogram: the narrowest format (fewest
 * bits) that gradient tensors are stored in, ties to the one holding more
 * values. Under fp16-amp every gradient is fp16; under fp8-hybrid this picks
 * the e5m2 GEMM operands rather than the bf16 gradients around them. */
static const char *grad_format(const rp_run *r)
{
    const char *best = NULL;
    int bbits = 1 << 30;
    double bw = -1;
    for (size_t i = 0; i < r->nt; i++) {
        if (!r->t[i].grad || !r->t[i].in_hist) continue;
        amp_format f;
        if (amp_format_parse(r->t[i].fmt, &f)) continue;
        double w = 0;
        for (size_t j = 0; j < r->nt; j++)
            if (r->t[j].grad && r->t[j].in_hist && !strcmp(r->t[j].fmt, r->t[i].fmt)) w += r->t[j].n_total + 1;
        if (f.bits < bbits || (f.bits == bbits && w > bw)) { bbits = f.bits; bw = w; best = r->t[i].fmt; }
    }
    return best;
}

/* Pools a run's gradient tensors into p (arrays allocated into hu and hs). */
static int pool_grads(const rp_run *r, hpanel *p, double **hu, double **hs)
{
    const char *fmt = grad_format(r);
    if (!fmt) return 0;
    *hu = calloc(RP_NB, sizeof **hu);
    *hs = calloc(RP_NB, sizeof **hs);
    if (!*hu || !*hs) return -1;
    memset(p, 0, sizeof *p);
    int nt = 0;
    for (size_t i = 0; i < r->nt; i++) {
        const rp_tens *t = &r->t[i];
        if (!t->grad || !t->in_hist || strcmp(t->fmt, fmt)) continue;
        nt++;
        for (int b = 0; b < RP_NB; b++) { (*hu)[b] += t->hu[b]; (*hs)[b] += t->hs[b]; p->total += t->hu[b]; }
        p->zero += t->zero;
        p->infnan += t->inf + t->nan;
    }
    p->total += p->zero + p->infnan;
    p->hu = *hu;
    p->hs = *hs;
    AMP_ASSERT(amp_format_parse(fmt, &p->f) == AMP_OK);   /* validated when tensors.csv was read */
    p->scaled = r->scale_used;
    p->asgiven = rp_fp8_scaled(r) && p->f.bits <= 8;
    snprintf(p->title, sizeof p->title, "%.90s: the %d gradient tensors stored in %.24s%s", r->label, nt, fmt,
             rp_fp8_scaled(r) ? " (after their per-tensor FP8 scales)" : "");
    return p->total > 0 ? 1 : 0;
}

static void hist_caption(rp_ctx *ctx, rp_fig *f, const rp_run *r)
{
    size_t o = strlen(f->caption);
    snprintf(f->caption + o, sizeof f->caption - o,
             "Share of values per binade of log<sub>2</sub>|g| (one bar per binade; log scale), pooled over the logged steps; "
             "the bar left of the axis break counts exact zeros, the one at the right inf/NaN. Bands: the format's normal range (green), "
             "subnormal range (yellow), flushed to zero (red, below half the smallest subnormal) and overflow (grey). "
             "Grey bars: unscaled gradients; blue bars: as given to the format, after multiplication by the run's loss scale "
             "(shown only where a loss scale other than 1 was used). FP8 tensors under per-tensor scaling (delayed, current, mx, block) "
             "are drawn in blue only: hist.csv holds them after their own scale, as given to the format%s.",
             r && r->scale_nonpow2 ? "; the scale is not a power of two, so the shift is rounded to whole binades" : "");
    (void)ctx;
}

amp_status rp_fig_hist(rp_ctx *ctx)
{
    amp_status st = AMP_OK;
    if (!ctx->compare) {
        rp_run *r = &ctx->r[0];
        hpanel p;
        double *hu = NULL, *hs = NULL;
        int ok = pool_grads(r, &p, &hu, &hs);
        if (ok < 0) { free(hu); free(hs); return amp_fail(AMP_ENOMEM, "out of memory"); }
        if (ok == 0) {
            free(hu); free(hs);
            rp_add_note(ctx, "Figure 1 (gradient histograms) not drawn: hist.csv has no weight_grad or act_grad tensor.");
            return AMP_OK;
        }
        rp_fig *f = rp_new_fig(ctx, "fig1_hist", "fig1_hist.gp", "Gradient magnitudes, pooled over all gradient tensors");
        char mt[600];
        char sd[160];
        snprintf(mt, sizeof mt, "Gradient magnitudes of %.100s (%s, %s), %ld logged steps (%ld..%ld)",
                 r->label, r->precision, rp_scaler_desc(r, sd, sizeof sd), r->hist_steps, r->hist_first, r->hist_last);
        hist_caption(ctx, f, r);
        rp_add_source(ctx, f, r, "hist.csv"); rp_add_source(ctx, f, r, "tensors.csv"); rp_add_source(ctx, f, r, "metrics.csv");
        st = hist_figure(ctx, f, &p, 1, 1, 560, mt);
        free(hu); free(hs);
        if (st) return st;
        ctx->nfig++;
        /* per tensor, 12 panels a page */
        hpanel *pp = calloc(r->nt ? r->nt : 1, sizeof *pp);
        if (!pp) return amp_fail(AMP_ENOMEM, "out of memory");
        int n = 0;
        for (size_t i = 0; i < r->nt; i++) {
            const rp_tens *t = &r->t[i];
            if (!t->grad || !t->in_hist) continue;
            hpanel *q = &pp[n];
            q->hu = t->hu; q->hs = t->hs; q->zero = t->zero; q->infnan = t->inf + t->nan;
            for (int b = 0; b < RP_NB; b++) q->total += t->hu[b];
            q->total += q->zero + q->infnan;
            if (q->total <= 0) continue;
            AMP_ASSERT(amp_format_parse(t->fmt, &q->f) == AMP_OK);
            q->scaled = r->scale_used;
            q->asgiven = rp_fp8_scaled(r) && q->f.bits <= 8;
            char what[64];
            snprintf(what, sizeof what, "%.24s%s", t->fmt, q->asgiven ? ", per-tensor scaled" : "");
            panel_title(q->title, sizeof q->title, t->name, what);
            n++;
        }
        int per = 12, pages = (n + per - 1) / per;
        for (int pg = 0; pg < pages && !st; pg++) {
            int k = n - pg * per < per ? n - pg * per : per;
            char id[64], title[200];
            snprintf(id, sizeof id, "fig1_hist_tensors_%d", pg + 1);
            snprintf(title, sizeof title, "Gradient magnitudes per tensor (%d of %d)", pg + 1, pages);
            f = rp_new_fig(ctx, id, "fig1_hist.gp", title);
            if (!f) break;
            hist_caption(ctx, f, r);
            rp_add_source(ctx, f, r, "hist.csv"); rp_add_source(ctx, f, r, "tensors.csv"); rp_add_source(ctx, f, r, "metrics.csv");
            int cols = k <= 4 ? 2 : 3, rows = (k + cols - 1) / cols;
            snprintf(mt, sizeof mt, "Gradient magnitudes per tensor of %s, page %d of %d", r->label, pg + 1, pages);
            st = hist_figure(ctx, f, pp + pg * per, k, cols, 160 + 240 * rows, mt);
            if (!st) ctx->nfig++;
        }
        free(pp);
        return st;
    }
    /* compare: one pooled panel per run, 9 a page */
    hpanel *pp = calloc(ctx->nr, sizeof *pp);
    double **bufs = calloc(2 * ctx->nr, sizeof *bufs);
    if (!pp || !bufs) { free(pp); free(bufs); return amp_fail(AMP_ENOMEM, "out of memory"); }
    int n = 0;
    for (size_t i = 0; i < ctx->nr; i++) {
        int ok = pool_grads(&ctx->r[i], &pp[n], &bufs[2 * i], &bufs[2 * i + 1]);
        if (ok < 0) { st = amp_fail(AMP_ENOMEM, "out of memory"); goto out; }
        if (ok) {
            char what[64];
            snprintf(what, sizeof what, "%.24s%s", pp[n].f.name, pp[n].asgiven ? ", per-tensor scaled" : "");
            panel_title(pp[n].title, sizeof pp[n].title, ctx->r[i].label, what);
            n++;
        }
    }
    if (!n) {
        rp_add_note(ctx, "Figure 1 (gradient histograms) not drawn: no run's hist.csv has a weight_grad or act_grad tensor.");
        goto out;
    }
    int per = 9, pages = (n + per - 1) / per;
    for (int pg = 0; pg < pages && !st; pg++) {
        int k = n - pg * per < per ? n - pg * per : per;
        char id[64], title[200], mt[200];
        snprintf(id, sizeof id, "fig1_hist_runs_%d", pg + 1);
        snprintf(title, sizeof title, "Gradient magnitudes of each run, pooled over gradient tensors (%d of %d)", pg + 1, pages);
        rp_fig *f = rp_new_fig(ctx, id, "fig1_hist.gp", title);
        if (!f) break;
        hist_caption(ctx, f, NULL);
        rp_add_sources_all(ctx, f, "hist.csv", 0);
        int cols = k == 1 ? 1 : k <= 4 ? 2 : 3, rows = (k + cols - 1) / cols;
        snprintf(mt, sizeof mt, "Gradient magnitudes per run (all gradient tensors, all logged steps)");
        st = hist_figure(ctx, f, pp + pg * per, k, cols, 160 + 250 * rows, mt);
        if (!st) ctx->nfig++;
    }
out:
    for (size_t i = 0; i < 2 * ctx->nr; i++) free(bufs[i]);
    free(bufs);
    free(pp);
    return st;
}
