/* ampsim — reports: the report writer (figures through gnuplot and an HTML
 * page) for a run, compare or sweep directory.
 *
 * A run directory (docs/design.md) holds config.json, metrics.csv, tensors.csv,
 * hist.csv, events.csv and optionally summary.json, accum.csv. A compare
 * directory holds summary.csv and one run directory per configuration.
 * amp_report_write() validates every file it reads: a missing or malformed
 * file is AMP_EFORMAT/AMP_EIO with a message "path:line: problem", never a
 * blank figure. */
#ifndef AMP_REPORT_H
#define AMP_REPORT_H

#include <signal.h>
#include <stdio.h>
#include "amp_base.h"

/* ---- the report (reports/report.c, reports/report_fig.c) ---------------- */
enum {
    AMP_REPORT_PNG = 1u << 0,
    AMP_REPORT_PDF = 1u << 1,
    AMP_REPORT_SVG = 1u << 2,
};

typedef struct amp_report_opts {
    unsigned formats;        /* AMP_REPORT_* (PNG is always drawn: the page needs it) */
    const char *scripts_dir; /* folder with the fig*.gp scripts; NULL = search (see below) */
    const char *gnuplot;     /* gnuplot program; NULL = "gnuplot" on PATH */
    int quiet;               /* no progress lines on stderr */
    /* Polled before and after each gnuplot call: nonzero = stop, remove this
     * call's temporaries and return AMP_EINTR (a rerun redraws). NULL = never. */
    const volatile sig_atomic_t *stop;
    const char *out;         /* the page's folder; NULL = DIR/report (required for several folders) */
    int figsize;             /* PDF and SVG size: AMP_REPORT_FIG_WIDE (7 in, the default) or _COLUMN (3.5 in) */
} amp_report_opts;

enum { AMP_REPORT_FIG_WIDE = 0, AMP_REPORT_FIG_COLUMN = 1 };

/* Parses "column" or "wide" into AMP_REPORT_FIG_*. */
AMP_API amp_status amp_report_parse_figsize(const char *s, int *out);

/* Writes DIR/report/index.html and the figures for a run or compare
 * directory. The gnuplot scripts are looked for in opts->scripts_dir, then
 * $AMPSIM_REPORT_SCRIPTS, then <exe dir>/../reports, <exe dir>/../share/ampsim/reports
 * and $AMP_SRCDIR/reports. Every output file is written atomically.
 * On success *index_path (if non-NULL, size len) receives the page's path. */
AMP_API amp_status amp_report_write(const char *dir, const amp_report_opts *opts,
                                    char *index_path, size_t len);

/* Several run, compare (or a mix of) folders on one page in opts->out:
 * every run of every folder, labelled FOLDER or FOLDER/RUN, linked by a path
 * relative to opts->out (as every page's links are); the reference is the first run named ref, else the first
 * fp32 run. n == 1 is amp_report_write. A sweep folder (summary.csv with a
 * group column, written by `ampsim sweep`) gets each group's compare page and
 * a page aggregating over the seeds. */
AMP_API amp_status amp_report_write_many(const char *const *dirs, int n, const amp_report_opts *opts,
                                         char *index_path, size_t len);

/* Parses "png,pdf,svg" (any subset) into AMP_REPORT_* flags. */
AMP_API amp_status amp_report_parse_formats(const char *s, unsigned *out);

#endif
