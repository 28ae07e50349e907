/* ampsim — reports: a strict CSV reader, the report writer (figures through
 * gnuplot + an HTML page) and the accumulation experiment behind figure 6.
 *
 * A run directory (DESIGN §5) holds config.json, metrics.csv, tensors.csv,
 * hist.csv, events.csv and optionally summary.json, accum.csv. A compare
 * directory holds summary.csv and one run directory per configuration.
 * amp_report_write() validates every file it reads: a missing or malformed
 * file is AMP_EFORMAT/AMP_EIO with a message "path:line: problem", never a
 * blank figure. */
#ifndef AMP_REPORT_H
#define AMP_REPORT_H

#include <stdio.h>
#include "amp_base.h"

/* ---- strict CSV (reports/csv.c) ------------------------------------------
 * A header line, then rows with exactly as many fields as the header. Fields
 * are separated by commas; a field may be double-quoted ("" is a quote).
 * Blank lines at the end are ignored; a blank line in the middle is an error.
 * Line numbers in messages count from 1 (the header). */
typedef struct amp_csv {
    char path[4096];
    char *buf;            /* the file, split in place */
    int ncol;
    char **head;          /* ncol column names */
    size_t nrows;
    char **cell;          /* nrows * ncol fields, row-major */
    size_t *line;         /* line number of each row */
} amp_csv;

/* Reads and splits path. Errors name the file (and line). */
amp_status amp_csv_read(const char *path, amp_csv *out);
void amp_csv_free(amp_csv *c);
/* Index of the column called name, or -1. */
int amp_csv_col(const amp_csv *c, const char *name);
/* Looks up n required columns into idx[]; AMP_EFORMAT naming the first one
 * missing ("path:1: header lacks column 'x' (header: ...)"). */
amp_status amp_csv_require(const amp_csv *c, const char *const *names, int n, int *idx);
static inline const char *amp_csv_get(const amp_csv *c, size_t row, int col)
{
    return c->cell[row * (size_t)c->ncol + (size_t)col];
}
/* Parses a field as a number: strict (whole field), "nan"/"inf"/"-inf"
 * accepted. AMP_EFORMAT "path:line: column 'x': 'abc' is not a number". */
amp_status amp_csv_num(const amp_csv *c, size_t row, int col, double *out);
/* The same for integers in [lo, hi]. */
amp_status amp_csv_long(const amp_csv *c, size_t row, int col, long lo, long hi, long *out);

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
} amp_report_opts;

/* Writes DIR/report/index.html and the figures for a run or compare
 * directory. The gnuplot scripts are looked for in opts->scripts_dir, then
 * $AMPSIM_REPORT_SCRIPTS, then <exe dir>/../reports, <exe dir>/../share/ampsim/reports
 * and $AMP_SRCDIR/reports. Every output file is written atomically.
 * On success *index_path (if non-NULL, size len) receives the page's path. */
amp_status amp_report_write(const char *dir, const amp_report_opts *opts,
                            char *index_path, size_t len);

/* Parses "png,pdf,svg" (any subset) into AMP_REPORT_* flags. */
amp_status amp_report_parse_formats(const char *s, unsigned *out);

/* ---- figure 6: the accumulation experiment (reports/accum.c) ------------
 * Dot products of K products of random values in [0,1) rounded to e4m3,
 * accumulated in a narrow float (e8m13 with RNE and with truncation, bf16,
 * fp16) with and without promotion of the partial sum to FP32 every 128
 * products, against the exact sum (in double; exact for these sizes).
 * Writes CSV
 *   K,operands,accumulator,rounding,promote_every,trials,mean_rel_err,max_rel_err
 * (promote_every 0 = never) or, with csv == 0, a readable table. Deterministic.
 * Returns AMP_OK, or AMP_EIO if writing fails. */
int amp_bench_accum(FILE *out, int csv);

#endif
