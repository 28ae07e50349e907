/* The report's findings: what the runs say, computed from their logs, before
 * any figure. Per run: the share of gradient values flushed to zero, the
 * first tensor and step that underflowed (flushed) and that overflowed or
 * became NaN, the non-finite values, the tail-mean loss gap to the reference
 * (and the validation loss's, when logged) and the first step where the loss
 * left it by more than the tolerance, skipped steps and the loss-scale range,
 * the first non-finite tensor, and whether the run diverged. Then the runs
 * ranked, one verdict each: runs with the same trajectory are one entry
 * ("A = B"), and runs whose gaps differ by less than the noise floor share a
 * rank (a tie). */
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
    double nfvals;           /* non-finite values (overflow + nan) over the logged tensors */
    long uf_step, of_step;   /* first logged step with a flush / an overflow, saturation or NaN, -1 if none */
    const char *uf_tensor, *of_tensor;
    double tail, gap;        /* tail-mean loss (last quarter); gap to the reference's (NaN without one) */
    double floor;            /* noise floor of the gap: twice the standard error of the per-step differences */
    double val, valgap;      /* last validation loss and its gap to the reference's at the same step (NaN: none) */
    long val_step;
    double key;              /* what the ranking sorts by */
    long dep_step;           /* first step with |loss - reference| > RP_TOL or a non-finite loss, -1 if none */
    long skipped, nonfinite;
    double smin, smax;
    char nf[200];            /* first non-finite tensor from events.csv, "" if none */
    char diverged[240];      /* why the run counts as diverged, "" if it does not */
} finding;

/* Mean and noise floor (2 sd / sqrt(n)) over the last quarter of the steps of
 * the run's loss minus the reference's (ref NULL: of the loss itself). */
static void tail_stats(const amp_run_metrics *m, const amp_run_metrics *ref, double *mean, double *floor)
{
    size_t n = ref && ref->n < m->n ? ref->n : m->n;
    *mean = *floor = NAN;
    if (!n) return;
    size_t from = n - (n / 4 ? n / 4 : 1), k = n - from;
    double s = 0, s2 = 0;
    for (size_t i = from; i < n; i++) {
        double d = m->loss[i] - (ref ? ref->loss[i] : 0);
        s += d;
        s2 += d * d;
    }
    *mean = s / (double)k;
    *floor = rp_noise_floor(s, s2, k);
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

/* The last validation loss of r, and the step. */
static double last_val(const rp_run *r, long *step)
{
    for (size_t s = r->m.n; s-- > 0;)
        if (!isnan(r->m.val[s])) { *step = r->m.step[s]; return r->m.val[s]; }
    *step = -1;
    return NAN;
}

/* Diverged: the loss ends non-finite, or its tail mean ends above the first
 * step's loss, or above the loss at the first overflow by more than RP_TOL. */
static void divergence(const rp_run *r, finding *f)
{
    const amp_run_metrics *m = &r->m;
    *f->diverged = 0;
    if (!isfinite(m->loss[m->n - 1])) {
        snprintf(f->diverged, sizeof f->diverged, "its loss ended not finite");
        return;
    }
    if (m->n >= 4 && isfinite(m->loss[0]) && f->tail > m->loss[0]) {
        snprintf(f->diverged, sizeof f->diverged, "its loss ended above where it started (%.4g against %.4g at step %ld)",
                 f->tail, m->loss[0], m->step[0]);
        return;
    }
    long o = f->of_step;
    for (size_t s = 0; s < m->n; s++)   /* an overflow: in a tensor, or a non-finite loss */
        if (!isfinite(m->loss[s])) { if (o < 0 || m->step[s] < o) o = m->step[s]; break; }
    if (o < 0) return;
    size_t s = 0;
    while (s + 1 < m->n && m->step[s] < o) s++;
    double before = NAN;
    for (size_t q = 0; q <= s; q++) if (isfinite(m->loss[q])) before = m->loss[q];
    if (isfinite(before) && f->tail > before + RP_TOL)
        snprintf(f->diverged, sizeof f->diverged, "its loss rose after the first overflow at step %ld (%.4g then, tail mean %.4g)",
                 o, before, f->tail);
}

static void analyse(const rp_ctx *ctx, size_t i, finding *f)
{
    const rp_run *r = &ctx->r[i], *ref = ctx->ref >= 0 && (size_t)ctx->ref != i ? &ctx->r[ctx->ref] : NULL;
    memset(f, 0, sizeof *f);
    f->r = r;
    f->uf_step = f->of_step = f->dep_step = -1;
    double fl = 0, n = 0;
    for (size_t k = 0; k < r->nt; k++) {
        const rp_tens *t = &r->t[k];
        f->nfvals += t->nonfinite_total;
        if (t->grad && !strstr(t->name, ".allreduce")) { fl += t->flushed_total; n += t->n_total; }
    }
    f->flushed = n > 0 ? fl / n : NAN;
    for (size_t j = 0; j < r->nls && (f->uf_step < 0 || f->of_step < 0); j++)
        for (size_t k = 0; k < r->nt; k++) {
            const rp_tens *t = &r->t[k];
            if (f->uf_step < 0 && t->fl[j] > 0) { f->uf_step = r->lstep[j]; f->uf_tensor = t->name; }
            if (f->of_step < 0 && t->so[j] > 0) { f->of_step = r->lstep[j]; f->of_tensor = t->name; }
        }
    double fl0;
    tail_stats(&r->m, NULL, &f->tail, &fl0);
    if (ref) tail_stats(&r->m, &ref->m, &f->gap, &f->floor);
    else { f->gap = NAN; f->floor = fl0; }
    f->val = last_val(r, &f->val_step);
    f->valgap = NAN;
    if (ref && isfinite(f->val))
        for (size_t s = 0; s < ref->m.n; s++)
            if (ref->m.step[s] == f->val_step) f->valgap = f->val - ref->m.val[s];
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
    divergence(r, f);
    f->key = isfinite(f->valgap) ? fabs(f->valgap) : isfinite(f->gap) ? fabs(f->gap) : f->tail;
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

static void verdict(FILE *fp, const rp_ctx *ctx, const finding *f, const char *rank)
{
    const rp_run *r = f->r;
    fprintf(fp, "<li>%s ", rank);
    describe(fp, r);
    for (size_t j = 0; j < ctx->nr; j++)
        if (ctx->r[j].same_as == (int)(r - ctx->r)) {
            fputs(" = ", fp);
            describe(fp, &ctx->r[j]);
        }
    fputs(": ", fp);
    if (isfinite(f->flushed)) fprintf(fp, "%.3g%% of gradient values flushed to zero", 100 * f->flushed);
    else fputs("no gradient statistics logged", fp);
    if (f->nfvals > 0) fprintf(fp, "; <b class=warn>%.0f logged values not finite (NaN or inf)</b>", f->nfvals);
    if (f->nonfinite) {
        fprintf(fp, "; <b class=warn>the loss was not finite at %ld step%s", f->nonfinite, f->nonfinite > 1 ? "s" : "");
        if (*f->nf) { fputs(", first in ", fp); rp_html_escape(fp, f->nf); }
        fputs("</b>", fp);
    } else if (isfinite(f->gap)) {
        if (fabs(f->gap) <= f->floor) fprintf(fp, "; loss within the noise of the reference (gap %+.2g, noise floor %.2g)", f->gap, f->floor);
        else if (fabs(f->gap) <= RP_TOL) fprintf(fp, "; loss %.2g %s the reference (noise floor %.2g)", fabs(f->gap),
                                                   f->gap > 0 ? "above" : "below", f->floor);
        else fprintf(fp, "; <b class=warn>loss %.3g %s the reference</b>", fabs(f->gap), f->gap > 0 ? "above" : "below");
        fputs(" (mean of the last quarter of the steps)", fp);
        if (f->dep_step >= 0) fprintf(fp, ", first off by more than %g at step %ld", RP_TOL, f->dep_step);
    } else {
        fprintf(fp, "; final tail-mean loss %.4g", f->tail);
    }
    if (isfinite(f->val)) {
        fprintf(fp, "; validation loss %.4g at step %ld", f->val, f->val_step);
        if (isfinite(f->valgap)) fprintf(fp, " (%+.3g against the reference)", f->valgap);
    }
    if (f->uf_step >= 0) {
        fprintf(fp, "; first flush at step %ld in ", f->uf_step);
        rp_html_escape(fp, f->uf_tensor);
    }
    if (f->of_step >= 0) {
        fprintf(fp, "; first overflow, saturation or NaN at step %ld in ", f->of_step);
        rp_html_escape(fp, f->of_tensor);
    }
    if (f->skipped) fprintf(fp, "; %ld step%s skipped", f->skipped, f->skipped > 1 ? "s" : "");
    if (f->smax > 1 || f->smin < 1) fprintf(fp, "; loss scale %.3g to %.3g", f->smin, f->smax);
    if (*f->diverged) fprintf(fp, ". <b class=warn>Diverged: %s</b>", f->diverged);
    fputs(".</li>\n", fp);
}

/* Ranking: runs that did not diverge first, then by |gap| (the validation
 * loss's when logged; the tail loss without a reference), then by flushed share. */
static int better(const finding *a, const finding *b)
{
    int da = a->nonfinite > 0 || *a->diverged, db = b->nonfinite > 0 || *b->diverged;
    if (da != db) return !da;
    if (!(a->key == b->key)) return a->key < b->key || isnan(b->key);
    return a->flushed < b->flushed;
}

/* b ties with a (ranked just before it or in its group): both finite, and
 * their keys differ by no more than the larger noise floor. */
static int ties(const finding *a, const finding *b)
{
    if (a->nonfinite || b->nonfinite || *a->diverged || *b->diverged) return 0;
    double fl = fmax(a->floor, b->floor);
    return isfinite(fl) && fabs(a->key - b->key) <= fl;
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
        if (((int)i != ctx->ref || n == 1) && ctx->r[i].same_as < 0) ord[k++] = i;
    }
    for (size_t a = 1; a < k; a++)          /* insertion sort: stable, few runs */
        for (size_t b = a; b > 0 && better(&f[ord[b]], &f[ord[b - 1]]); b--) {
            size_t t = ord[b]; ord[b] = ord[b - 1]; ord[b - 1] = t;
        }
    fputs("<h2 id=findings>Findings</h2>\n", fp);
    for (size_t i = 0; i < n; i++) {
        int bad = *f[i].diverged || f[i].nonfinite;   /* a non-finite value the scaler skipped is not a failure */
        if (!*f[i].nf && !bad) continue;
        fputs(bad ? "<p><b class=warn>" : "<p>", fp);
        rp_html_escape(fp, ctx->r[i].label);
        if (*f[i].nf) { fputs(": the first non-finite value appeared in ", fp); rp_html_escape(fp, f[i].nf); }
        if (*f[i].diverged) fprintf(fp, "%s diverged: %s", *f[i].nf ? "; it" : ":", f[i].diverged);
        else if (!bad) fprintf(fp, "; the loss stayed finite (%ld step%s skipped)", f[i].skipped, f[i].skipped == 1 ? "" : "s");
        fputs(bad ? ".</b></p>\n" : ".</p>\n", fp);
    }
    if (k > 1)
        fprintf(fp, "<p>The runs, best first: runs that did not diverge first, then by the gap of the tail-mean loss to the "
                "reference (of the validation loss, where logged). Runs whose gaps differ by less than the noise floor "
                "(twice the standard error of the per-step differences over the last quarter) tie and share a rank (“2=”); "
                "runs that trained exactly alike are one entry (“A = B”: the same losses at every step, not separate "
                "evidence). A departure is |loss − reference| &gt; %g at one step.</p>\n", RP_TOL);
    fputs("<ul class=find>\n", fp);
    size_t rank = 1, lead = 0;
    for (size_t a = 0; a < k; a++) {
        if (a && !ties(&f[ord[lead]], &f[ord[a]])) { rank = a + 1; lead = a; }
        int tied = (a > lead) || (a + 1 < k && ties(&f[ord[lead]], &f[ord[a + 1]]) && lead == a);
        char rk[32];
        snprintf(rk, sizeof rk, k > 1 ? "%zu%s." : "", rank, tied ? "=" : "");
        verdict(fp, ctx, &f[ord[a]], rk);
    }
    fputs("</ul>\n", fp);
    free(f);
    free(ord);
}
