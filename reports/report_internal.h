/* ampsim — report internals shared by report.c (loading, validation, HTML)
 * and report_fig.c (figure data files and gnuplot). Not installed. */
#ifndef AMP_REPORT_INTERNAL_H
#define AMP_REPORT_INTERNAL_H

#include <stdio.h>
#include "amp_report.h"
#include "amp_format.h"

#define RP_PATH 4096
/* Binades kept per tensor: floor(log2|x|) in [RP_BLO, RP_BHI] (covers double). */
#define RP_BLO (-1100)
#define RP_BHI 1100
#define RP_NB (RP_BHI - RP_BLO + 1)

/* One tensor of a run, aggregated over the logged steps. */
typedef struct rp_tens {
    char name[160], role[32], fmt[32];
    int grad;              /* role weight_grad or act_grad */
    int wgrad;             /* role weight_grad */
    double n_total, flushed_total;
    double *fl, *so;       /* per logged step (run->nls): flushed/n, (saturated+overflow)/n; NaN = not logged */
    double *hu, *hs;       /* RP_NB binade counts: unscaled (shifted by -log2 S), as logged */
    double zero, inf, nan; /* special bins of hist.csv */
    int in_hist;           /* has rows in hist.csv */
} rp_tens;

typedef struct rp_run {
    char dir[RP_PATH];
    char label[128];       /* directory name, used in legends and file names */
    char slug[128];        /* label reduced to [A-Za-z0-9._-] */
    char precision[64], scaler[160];
    char *config_text, *summary_text;   /* raw JSON (summary may be NULL) */
    size_t nm;             /* metrics rows */
    long *mstep;
    double *loss, *scale;
    int *skipped;
    size_t nt;
    rp_tens *t;
    size_t nls;            /* logged steps of tensors.csv, increasing */
    long *lstep;
    amp_csv ev;            /* events.csv */
    int ev_step, ev_event, ev_tensor, ev_detail;
    int scale_used;        /* some loss_scale != 1 */
    int scale_nonpow2;     /* some loss_scale not a power of two */
    long scale_zero_step;  /* first step with loss_scale 0, -1 if none */
    long hist_steps;       /* distinct steps in hist.csv */
    long hist_first, hist_last;
} rp_run;

typedef struct rp_fig {
    char id[96];           /* file stem, e.g. fig2_loss */
    char script[48];       /* the gnuplot script (reports/figN_x.gp) that draws it */
    char title[200];
    char caption[1200];    /* HTML, already escaped */
    char sources[1600];    /* HTML list of input files */
    unsigned made;         /* AMP_REPORT_* actually written */
} rp_fig;

typedef struct rp_ctx {
    char dir[RP_PATH];     /* the run or compare directory */
    char out[RP_PATH];     /* dir/report */
    char scripts[RP_PATH]; /* where the .gp scripts are read from */
    const amp_report_opts *opts;
    int compare;           /* a compare directory */
    size_t nr;
    rp_run *r;
    int ref;               /* index of the FP32 reference run, -1 if none */
    amp_csv summary;       /* compare: summary.csv */
    int has_accum;
    amp_csv accum;         /* DIR/accum.csv when present (validated at load) */
    rp_fig figs[64];
    int nfig;
    char notes[24][400];    /* figures that were skipped, and why (HTML) */
    int nnotes;
} rp_ctx;

/* report.c */
void rp_html_escape(FILE *fp, const char *s);
/* report_fig.c: draws every figure; fills ctx->figs. */
amp_status rp_draw_all(rp_ctx *ctx);

#endif
