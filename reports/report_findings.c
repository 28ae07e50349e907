/* The report's findings: what the runs say, computed from their logs, before
 * any figure. Per run: the share of gradient values flushed to zero, the
 * first tensor and step that underflowed (flushed) and that overflowed, the
 * tail-mean loss gap to the reference and the first step where the loss left
 * it by more than the tolerance, skipped steps and the loss-scale range,
 * and the first non-finite tensor. Then the runs ranked, one verdict each. */
#include "report_internal.h"
#include "amp_base.h"
#include "amp_rundir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Text into HTML (here, the lowest file of the page, so every writer can use it). */
void rp_html_escape(FILE *fp, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

#define RP_TOL 0.05   /* |loss - reference| counted as a departure (compare's default --diverge-tol) */

typedef struct finding {
    const rp_run *r;
    double flushed;          /* share of gradient values flushed (logged steps), NaN if none logged */
    long uf_step, of_step;   /* first logged step with a flush / an overflow or saturation, -1 if none */
    const char *uf_tensor, *of_tensor;
    double tail, gap;        /* tail-mean loss (last quarter); gap to the reference's (NaN without one) */
    long dep_step;           /* first step with |loss - reference| > RP_TOL or a non-finite loss, -1 if none */
    long skipped, nonfinite;
    double smin, smax;
    char nf[200];            /* first non-finite tensor from summary.json / events.csv, "" if none */
    int same_as;             /* index of an earlier run that trained identically, -1 */
} finding;

static double tail_mean(const amp_run_metrics *m)
{
    if (!m->n) return NAN;
    size_t from = m->n - (m->n / 4 ? m->n / 4 : 1);
    double s = 0;
    for (size_t i = from; i < m->n; i++) s += m->loss[i];
    return s / (double)(m->n - from);
}

static void first_nonfinite(const rp_run *r, char *out, size_t len)
{
    *out = 0;
    const amp_csv *c = &r->ev.csv;
    for (size_t i = 0; i < c->nrows; i++)
        if (!strcmp(amp_csv_get(c, i, r->ev.event), "first_nonfinite")) {
            snprintf(out, len, "%.80s at step %.20s (%.60s)", amp_csv_get(c, i, r->ev.tensor), amp_csv_get(c, i, r->ev.step),
                     amp_csv_get(c, i, r->ev.detail));
            return;
        }
}

static void analyse(const rp_ctx *ctx, size_t i, finding *f)
{
    const rp_run *r = &ctx->r[i], *ref = ctx->ref >= 0 && (size_t)ctx->ref != i ? &ctx->r[ctx->ref] : NULL;
    memset(f, 0, sizeof *f);
    f->r = r;
    f->uf_step = f->of_step = f->dep_step = -1;
    f->same_as = -1;
    double fl = 0, n = 0;
    for (size_t k = 0; k < r->nt; k++) {
        const rp_tens *t = &r->t[k];
        if (t->grad && !strstr(t->name, ".allreduce")) { fl += t->flushed_total; n += t->n_total; }
    }
    f->flushed = n > 0 ? fl / n : NAN;
    for (size_t j = 0; j < r->nls && (f->uf_step < 0 || f->of_step < 0); j++)
        for (size_t k = 0; k < r->nt; k++) {
            const rp_tens *t = &r->t[k];
            if (f->uf_step < 0 && t->fl[j] > 0) { f->uf_step = r->lstep[j]; f->uf_tensor = t->name; }
            if (f->of_step < 0 && t->so[j] > 0) { f->of_step = r->lstep[j]; f->of_tensor = t->name; }
        }
    f->tail = tail_mean(&r->m);
    f->gap = ref ? f->tail - tail_mean(&ref->m) : NAN;
    f->smin = INFINITY;
    f->smax = -INFINITY;
    for (size_t s = 0; s < r->m.n; s++) {
        f->skipped += r->m.skipped[s];
        f->nonfinite += !isfinite(r->m.loss[s]);
        if (r->m.scale[s] < f->smin) f->smin = r->m.scale[s];
        if (r->m.scale[s] > f->smax) f->smax = r->m.scale[s];
        if (ref && f->dep_step < 0 && s < ref->m.n && !(fabs(r->m.loss[s] - ref->m.loss[s]) <= RP_TOL))
            f->dep_step = r->m.step[s];
    }
    first_nonfinite(r, f->nf, sizeof f->nf);
    for (size_t j = 0; j < i && f->same_as < 0; j++)
        if (amp_run_identical(ctx->r[j].dir, r->dir)) f->same_as = (int)j;
}

/* What the run is, in words: "fp16-amp, loss scaler torch, FP8 scaling
 * delayed" (strategy names; their options are in config.json). */
static void describe(FILE *fp, const rp_run *r)
{
    int a = (int)strcspn(r->scaler, ":"), b = (int)strcspn(r->fp8_scaler, ":");
    fputs("<b>", fp);
    rp_html_escape(fp, r->label);
    fputs("</b> (", fp);
    rp_html_escape(fp, r->precision);
    if (!strcmp(r->scaler, "none") || !*r->scaler) fputs(", no loss scaling", fp);
    else fprintf(fp, ", loss scaler %.*s", a > 40 ? 40 : a, r->scaler);
    if (*r->fp8_scaler) fprintf(fp, ", FP8 scaling %.*s", b > 40 ? 40 : b, r->fp8_scaler);
    fputs(")", fp);
}

static void verdict(FILE *fp, const rp_ctx *ctx, const finding *f)
{
    const rp_run *r = f->r;
    fputs("<li>", fp);
    describe(fp, r);
    fputs(": ", fp);
    if (f->same_as >= 0) {
        fputs("trained exactly as <code>", fp);
        rp_html_escape(fp, ctx->r[f->same_as].label);
        fputs("</code> (the same losses at every step; not separate evidence). ", fp);
    }
    if (isfinite(f->flushed)) fprintf(fp, "%.3g%% of gradient values flushed to zero", 100 * f->flushed);
    else fputs("no gradient statistics logged", fp);
    if (f->nonfinite) {
        fprintf(fp, "; <b class=warn>the loss was not finite at %ld step%s", f->nonfinite, f->nonfinite > 1 ? "s" : "");
        if (*f->nf) { fputs(", first in ", fp); rp_html_escape(fp, f->nf); }
        fputs("</b>", fp);
    } else if (isfinite(f->gap)) {
        if (fabs(f->gap) <= RP_TOL) fprintf(fp, "; loss within %.2g of the reference", fabs(f->gap));
        else fprintf(fp, "; <b class=warn>loss %.3g %s the reference</b>", fabs(f->gap), f->gap > 0 ? "above" : "below");
        fputs(" (mean of the last quarter of the steps)", fp);
        if (f->dep_step >= 0) fprintf(fp, ", first off by more than %g at step %ld", RP_TOL, f->dep_step);
    } else {
        fprintf(fp, "; final tail-mean loss %.4g", f->tail);
    }
    if (f->uf_step >= 0) {
        fprintf(fp, "; first flush at step %ld in ", f->uf_step);
        rp_html_escape(fp, f->uf_tensor);
    }
    if (f->of_step >= 0) {
        fprintf(fp, "; first overflow or saturation at step %ld in ", f->of_step);
        rp_html_escape(fp, f->of_tensor);
    }
    if (f->skipped) fprintf(fp, "; %ld step%s skipped", f->skipped, f->skipped > 1 ? "s" : "");
    if (f->smax > 1 || f->smin < 1) fprintf(fp, "; loss scale %.3g to %.3g", f->smin, f->smax);
    fputs(".</li>\n", fp);
}

/* Ranking: finite runs first, then by |gap| (or tail loss without a
 * reference), then by flushed share. */
static int better(const finding *a, const finding *b)
{
    if ((a->nonfinite > 0) != (b->nonfinite > 0)) return a->nonfinite == 0;
    double ka = isfinite(a->gap) ? fabs(a->gap) : a->tail, kb = isfinite(b->gap) ? fabs(b->gap) : b->tail;
    if (!(ka == kb)) return ka < kb || isnan(kb);
    return a->flushed < b->flushed;
}

void rp_html_findings(FILE *fp, const rp_ctx *ctx)
{
    size_t n = ctx->nr;
    finding *f = calloc(n ? n : 1, sizeof *f);
    size_t *ord = calloc(n ? n : 1, sizeof *ord);
    if (!f || !ord) { free(f); free(ord); return; }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        analyse(ctx, i, &f[i]);
        if ((int)i != ctx->ref || n == 1) ord[k++] = i;
    }
    for (size_t a = 1; a < k; a++)          /* insertion sort: stable, few runs */
        for (size_t b = a; b > 0 && better(&f[ord[b]], &f[ord[b - 1]]); b--) {
            size_t t = ord[b]; ord[b] = ord[b - 1]; ord[b - 1] = t;
        }
    fputs("<h2 id=findings>Findings</h2>\n", fp);
    for (size_t i = 0; i < n; i++)
        if (*f[i].nf) {
            fputs("<p><b class=warn>", fp);
            rp_html_escape(fp, ctx->r[i].label);
            fputs(": the first non-finite value appeared in ", fp);
            rp_html_escape(fp, f[i].nf);
            fputs(".</b></p>\n", fp);
        }
    if (k > 1) fprintf(fp, "<p>The %zu runs, best first (finite runs first, then by the gap of the tail-mean loss to the "
                       "reference; a departure is |loss − reference| &gt; %g at one step):</p>\n", k, RP_TOL);
    fputs("<ol class=find>\n", fp);
    for (size_t a = 0; a < k; a++) verdict(fp, ctx, &f[ord[a]]);
    fputs("</ol>\n", fp);
    free(f);
    free(ord);
}
