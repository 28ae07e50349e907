/* ampsim report — the coverage account of an ampsim.torch run (coverage.csv:
 * op, class, emulated, calls, elements, gemm_macs) on the page's first
 * screen: per run the share of GEMM multiply-adds and of the elements written
 * by other ops that were emulated, and the functions neither emulated nor
 * classified. Classified FP32 ops, views and ops without floating output
 * count on neither side. Nothing for a run without coverage.csv. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "amp_csv.h"
#include "report_internal.h"

#define COV_LIST 8

static void pct(FILE *fp, double part, double all, const char *what)
{
    if (all > 0) fprintf(fp, "%.1f%% of %.4g %s", 100.0 * part / all, all, what);
    else fprintf(fp, "none (no %s)", what);
}

static void html_run(FILE *fp, const rp_ctx *ctx, const rp_run *r)
{
    char p[RP_PATH + 16];
    struct stat sb;
    snprintf(p, sizeof p, "%s/coverage.csv", r->dir);
    if (stat(p, &sb) != 0) return;
    amp_csv c;
    static const char *const cols[] = {"op", "class", "emulated", "elements", "gemm_macs"};
    int ix[5];
    fputs("<p><b>Coverage</b>", fp);
    if (ctx->compare) { fputs(" of <code>", fp); rp_html_escape(fp, r->label); fputs("</code>", fp); }
    if (amp_csv_read(p, &c) != AMP_OK) {
        fputs(": <b class=warn>", fp); rp_html_escape(fp, amp_errmsg()); fputs("</b></p>\n", fp);
        return;
    }
    if (amp_csv_require(&c, cols, 5, ix) != AMP_OK) {
        fputs(": <b class=warn>", fp); rp_html_escape(fp, amp_errmsg()); fputs("</b></p>\n", fp);
        amp_csv_free(&c);
        return;
    }
    double g_yes = 0, g_all = 0, e_yes = 0, e_all = 0;
    const char *bad[COV_LIST];
    int nbad = 0, more = 0;
    for (size_t i = 0; i < c.nrows; i++) {
        char **row = c.cell + i * (size_t)c.ncol;
        const char *cls = row[ix[1]];
        int yes = strcmp(row[ix[2]], "yes") == 0;
        double el = strtod(row[ix[3]], NULL), macs = strtod(row[ix[4]], NULL);
        if (macs > 0 || !strcmp(cls, "gemm") || !strcmp(cls, "gemm_unrounded")) {
            g_all += macs;
            if (yes) g_yes += macs;
        } else if (strcmp(cls, "view") && strcmp(cls, "fp32") && strcmp(cls, "no_float")) {
            e_all += el;
            if (yes) e_yes += el;
        }
        if (!strcmp(cls, "unclassified") || !strcmp(cls, "gemm_unrounded")) {
            if (nbad < COV_LIST) bad[nbad++] = row[ix[0]];
            else more++;
        }
    }
    fprintf(fp, " (<a href=\"%s/coverage.csv\">coverage.csv</a>): GEMM work emulated: ", r->link);
    pct(fp, g_yes, g_all, "multiply-adds");
    fputs("; elementwise outputs emulated: ", fp);
    pct(fp, e_yes, e_all, "elements");
    fputs(".", fp);
    if (nbad) {
        fputs(" <b class=warn>Run unemulated:", fp);
        for (int k = 0; k < nbad; k++) { fputs(" <code>", fp); rp_html_escape(fp, bad[k]); fputs("</code>", fp); }
        if (more) fprintf(fp, " and %d more", more);
        fputs("</b>", fp);
    }
    fputs("</p>\n", fp);
    amp_csv_free(&c);
}

void rp_html_coverage(FILE *fp, const rp_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nr; i++) html_run(fp, ctx, &ctx->r[i]);
}
