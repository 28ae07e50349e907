/* ampsim — report internals shared by report.c (loading, validation, HTML)
 * and report_fig.c (figure data files and gnuplot). Not installed. */
#ifndef AMP_REPORT_INTERNAL_H
#define AMP_REPORT_INTERNAL_H

#include <stdio.h>
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_csv.h"
#include "amp_rundir.h"
#include "amp_report.h"

#define RP_PATH 4096
/* Binades kept per tensor: floor(log2|x|) in [RP_BLO, RP_BHI] (covers double). */
#define RP_BLO AMP_RUN_BINADE_MIN
#define RP_BHI AMP_RUN_BINADE_MAX
#define RP_NB (RP_BHI - RP_BLO + 1)

/* One tensor of a run, aggregated over the logged steps. */
typedef struct rp_tens {
    char name[160], role[32], fmt[32];
    int grad;              /* role weight_grad or act_grad */
    int wgrad;             /* role weight_grad */
    double n_total, flushed_total;
    double nonfinite_total; /* overflow + nan counts of tensors.csv, over the logged steps */
    double *fl, *so;       /* per logged step (run->nls): flushed/n, (saturated+overflow+nan)/n; NaN = not logged */
    double *hu, *hs;       /* RP_NB binade counts: unscaled (shifted by -log2 S), as logged */
    double zero, inf, nan; /* special bins of hist.csv */
    int in_hist;           /* has rows in hist.csv */
} rp_tens;

typedef struct rp_run {
    char dir[RP_PATH];
    char label[128];       /* directory name, used in legends and file names */
    char link[RP_PATH];    /* the run folder as the page links it ("..", "../NAME", or absolute) */
    char slug[128];        /* label reduced to [A-Za-z0-9._-] */
    char precision[64], scaler[160];
    char fp8_scaler[160];  /* config.json "fp8_scaler" ("" if none): per-tensor FP8 strategy */
    char *config_text, *summary_text;   /* raw JSON (summary may be NULL) */
    amp_run_metrics m;     /* metrics.csv */
    size_t nt;
    rp_tens *t;
    size_t nls;            /* logged steps of tensors.csv, increasing */
    long *lstep;
    amp_run_events ev;     /* events.csv */
    int same_as;           /* index of an earlier run with the same trajectory (amp_run_identical), -1 */
    int scale_used;        /* some loss_scale != 1 */
    int scale_nonpow2;     /* some loss_scale not a power of two */
    long scale_zero_step;  /* first step with loss_scale 0, -1 if none */
    long hist_steps;       /* distinct steps in hist.csv */
    long hist_first, hist_last;
    int has_wi;            /* whatif.csv present */
    amp_run_whatif wi;     /* --what-if shadows */
} rp_run;

/* The figure formats, in the order f->term and rp_redraw_cmd's k index
 * them: flag (AMP_REPORT_*), file extension (also --formats' word) and the
 * name the page shows. */
typedef struct rp_format { unsigned flag; const char *ext, *name; } rp_format;
#define RP_NFORMATS 3
extern const rp_format rp_formats[RP_NFORMATS];

typedef struct rp_fig {
    char id[96];           /* file stem, e.g. fig2_loss */
    char script[48];       /* the gnuplot script (reports/figN_x.gp) that draws it */
    char title[200];
    char caption[1200];    /* HTML, already escaped */
    char sources[1600];    /* HTML list of input files */
    unsigned made;         /* AMP_REPORT_* actually written */
    char term[RP_NFORMATS][300]; /* the gnuplot terminal of each of rp_formats as drawn (rp_gp_term) */
} rp_fig;

typedef struct rp_ctx {
    char dir[RP_PATH];     /* the run or compare directory */
    char out[RP_PATH];     /* dir/report, or --out */
    char dirlink[RP_PATH]; /* dir as the page links it (relative to out) */
    char scripts[RP_PATH]; /* where the .gp scripts are read from */
    const amp_report_opts *opts;
    int compare;           /* several runs: a compare directory, or an overlay of folders */
    int overlay;           /* runs gathered from several folders (amp_report_write_many) */
    size_t nr;
    rp_run *r;
    int ref;               /* index of the reference run, -1 if none */
    char skipped[8][128];  /* runs summary.csv marks as failed (left out) */
    int nskipped;
    amp_csv summary;       /* compare: summary.csv */
    int has_accum;
    amp_csv accum;         /* DIR/accum.csv when present (validated at load) */
    rp_fig figs[64];
    int nfig;
    char notes[24][400];    /* figures that were skipped, and why (HTML) */
    char calm[300];         /* runs whose Fig. 4 would be empty (nothing flushed or overflowed), comma-separated */
    int ncalm;
    int nnotes;
} rp_ctx;

#define RP_FIG_W 1000      /* figure width in pixels of the page's PNG; PDF and SVG: --figsize (rp_gp_term) */

/* report.c: the folder holding the fig*.gp scripts into ctx->scripts. */
amp_status rp_find_scripts(rp_ctx *ctx);
/* report.c: the page of one run or compare folder, or of several folders
 * (amp_report_write_many without the sweep case). */
amp_status rp_report_dirs(const char *const *dirs, int n, const amp_report_opts *opts, char *index_path, size_t len);

/* report_gp.c: the path of `to` relative to the folder `from` (both exist),
 * e.g. "../run"; "." when they are the same; `to` itself when either cannot
 * be resolved. Links written this way resolve wherever --out puts the page. */
void rp_relpath(const char *from, const char *to, char *out, size_t len);

/* report_page.c: the page (index.html) of a run, compare or overlay; the
 * <head> every page shares (viewport, styles); a CSV table with more than 8
 * columns shown as its key columns plus all of them under <details>. */
amp_status rp_write_index(rp_ctx *ctx, char *index_path, size_t len);
void rp_html_head(FILE *fp, const char *title);
void rp_html_table(FILE *fp, const amp_csv *c, size_t maxrows, const char *const *keys, int nkeys);

/* report_findings.c */
void rp_html_escape(FILE *fp, const char *s);

/* report_fig.c: draws every figure; fills ctx->figs. */
amp_status rp_draw_all(rp_ctx *ctx);
/* Helpers of the figure writers (report_gp.c). */
void rp_gp_str(FILE *fp, const char *s);                     /* a gnuplot "string" */
void rp_gp_str_array(FILE *fp, const char *name, const char *const *v, int n);
void rp_gp_num_array(FILE *fp, const char *name, const double *v, int n);
void rp_gp_num(FILE *fp, double v);                          /* NaN for non-finite */
/* From the sum s and the sum of squares s2 of n values: their sample
 * standard deviation (0 for one value, NaN for none), and the noise floor of
 * their mean, twice its standard error (2 sd / sqrt(n)): the one threshold
 * the compare findings (ties) and the sweep findings (seed noise) use. */
double rp_sdev(double s, double s2, size_t n);
double rp_noise_floor(double s, double s2, size_t n);
void rp_add_note(rp_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Opens report/data/<id>.<ext> atomically. */
amp_status rp_open_data(rp_ctx *ctx, const char *id, const char *ext, amp_afile *af);
amp_status rp_commit2(amp_afile *a, amp_afile *b);
/* The next figure slot (NULL when full); counted once drawn (ctx->nfig++). */
rp_fig *rp_new_fig(rp_ctx *ctx, const char *id, const char *script, const char *title);
/* Appends a link to run r's file (r NULL: the directory's own) to f->sources. */
void rp_add_source(rp_ctx *ctx, rp_fig *f, const rp_run *r, const char *file);
void rp_add_sources_all(rp_ctx *ctx, rp_fig *f, const char *file, int skip_ref);
/* The terminal (and the scripts' "paper" variable) of format fmt for a
 * figure of w x h screen pixels; rp_redraw_cmd: the shell command that
 * redraws format k (rp_formats[k]) of f in the report folder. */
void rp_gp_term(const rp_ctx *ctx, unsigned fmt, int w, int h, char *term, size_t len);
void rp_redraw_cmd(const rp_fig *f, int k, char *buf, size_t len);
/* Runs gnuplot for every requested format of figure f (w x h pixels). */
amp_status rp_gp_draw(rp_ctx *ctx, rp_fig *f, int w, int h);

/* report_findings.c: the page's opening section, computed from the runs:
 * per run the flushed share of gradient values, the first underflow and
 * overflow, the gap to the reference and where it first exceeded the
 * tolerance, skipped steps and scale range; then a ranking with one verdict
 * sentence per run. */
void rp_html_findings(FILE *fp, const rp_ctx *ctx);

/* report_coverage.c: per run with coverage.csv (ampsim.torch) the shares of
 * GEMM work and elementwise outputs emulated, on the first screen. */
void rp_html_coverage(FILE *fp, const rp_ctx *ctx);

/* report_whatif.c: the --what-if figure of every run with whatif.csv, and
 * the run's table of shadows (nothing when it has none). */
amp_status rp_fig_whatif(rp_ctx *ctx);
void rp_html_whatif(FILE *fp, const rp_run *r);

/* report_hist.c */
amp_status rp_fig_hist(rp_ctx *ctx);
/* report_gp.c */
/* 1 if the run scales FP8 tensors per tensor (delayed, current, mx, block). */
int rp_fp8_scaled(const rp_run *r);
/* "scaler X[, FP8 scaling Y]" with strategy names only, for titles. */
const char *rp_scaler_desc(const rp_run *r, char *buf, size_t len);

#endif
