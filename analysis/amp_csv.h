/* ampsim — a strict CSV reader for the run directory's files. */
#ifndef AMP_CSV_H
#define AMP_CSV_H

#include <stddef.h>
#include "amp_base.h"

/* ---- strict CSV (analysis/csv.c) ------------------------------------------
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
AMP_API amp_status amp_csv_read(const char *path, amp_csv *out);
AMP_API void amp_csv_free(amp_csv *c);
/* Index of the column called name, or -1. */
AMP_API int amp_csv_col(const amp_csv *c, const char *name);
/* Looks up n required columns into idx[]; AMP_EFORMAT naming the first one
 * missing ("path:1: header lacks column 'x' (header: ...)"). */
AMP_API amp_status amp_csv_require(const amp_csv *c, const char *const *names, int n, int *idx);
static inline const char *amp_csv_get(const amp_csv *c, size_t row, int col)
{
    return c->cell[row * (size_t)c->ncol + (size_t)col];
}
/* Parses a field as a number: strict (whole field), "nan"/"inf"/"-inf"
 * accepted. AMP_EFORMAT "path:line: column 'x': 'abc' is not a number". */
AMP_API amp_status amp_csv_num(const amp_csv *c, size_t row, int col, double *out);
/* The same for integers in [lo, hi]. */
AMP_API amp_status amp_csv_long(const amp_csv *c, size_t row, int col, long lo, long hi, long *out);

#endif
