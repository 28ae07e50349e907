/* A small strict CSV reader for the report: header check, numeric parsing,
 * errors that name file:line. The file is read whole and split in place. */
#include "amp_base.h"
#include "amp_io.h"
#include "amp_csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CSV_MAX_BYTES ((size_t)1 << 31)

void amp_csv_free(amp_csv *c)
{
    free(c->buf);
    free(c->head);
    free(c->cell);
    free(c->line);
    memset(c, 0, sizeof *c);
}

/* Splits one record starting at *p (NUL-terminated buffer) into fields,
 * unquoting in place. Appends field pointers to *v (grown as needed).
 * Leaves *p after the record's line end. Returns the field count or -1 on an
 * unterminated quote (line advanced past embedded newlines in *lineno). */
static long split_record(char **p, char ***v, size_t *cap, size_t *nv, size_t *lineno,
                         int *bad_quote)
{
    char *s = *p;
    long nf = 0;
    *bad_quote = 0;
    for (;;) {
        if (*nv == *cap) {
            size_t nc = *cap ? *cap * 2 : 1024;
            char **nvp = realloc(*v, nc * sizeof *nvp);
            if (!nvp) return -2;
            *v = nvp;
            *cap = nc;
        }
        char *start = s, *w = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == 0) { *bad_quote = 1; *p = s; return -1; }
                if (*s == '"') {
                    if (s[1] == '"') { *w++ = '"'; s += 2; continue; }
                    s++;
                    break;
                }
                if (*s == '\n') (*lineno)++;
                *w++ = *s++;
            }
            if (*s != ',' && *s != '\n' && *s != '\r' && *s != 0) { *bad_quote = 2; *p = s; return -1; }
        } else {
            while (*s != ',' && *s != '\n' && *s != 0) s++;
            w = s;
            if (w > start && w[-1] == '\r') w--;
        }
        (*v)[(*nv)++] = start;
        nf++;
        char sep = *s;
        if (sep == '\r') { s++; sep = *s; }
        *w = 0;
        if (sep == ',') { s++; continue; }
        if (sep == '\n') s++;
        *p = s;
        return nf;
    }
}

amp_status amp_csv_read(const char *path, amp_csv *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    size_t len;
    amp_status st = amp_read_file(path, CSV_MAX_BYTES, &out->buf, &len);
    if (st) {
        if (st == AMP_EIO) return amp_fail(AMP_EIO, "%s: missing or unreadable: %s", path, amp_errmsg());
        return st;
    }
    if (memchr(out->buf, 0, len)) {
        amp_csv_free(out);
        return amp_fail(AMP_EFORMAT, "%s: binary data (NUL byte) in a CSV file", path);
    }
    if (len == 0) {
        amp_csv_free(out);
        return amp_fail(AMP_EFORMAT, "%s:1: empty file (no header line)", path);
    }
    char **v = NULL;
    size_t cap = 0, nv = 0, lineno = 1, nlines = 0, lcap = 0;
    size_t *lines = NULL;
    char *p = out->buf;
    int bq;
    long nf = split_record(&p, &v, &cap, &nv, &lineno, &bq);
    if (nf < 0) goto fail_record;
    out->ncol = (int)nf;
    for (int k = 0; k < out->ncol; k++)
        if (!*v[k]) {
            free(v);
            amp_csv_free(out);
            return amp_fail(AMP_EFORMAT, "%s:1: header has an empty column name (column %d)", path, k + 1);
        }
    lineno++;
    while (*p) {
        /* blank lines: allowed only at the end */
        char *q = p;
        while (*q == '\r' || *q == '\n') q++;
        if (*q == 0) break;
        if (*p == '\n' || *p == '\r') {
            free(v); free(lines);
            amp_csv_free(out);
            return amp_fail(AMP_EFORMAT, "%s:%zu: blank line inside the data", path, lineno);
        }
        size_t first = lineno;
        nf = split_record(&p, &v, &cap, &nv, &lineno, &bq);
        if (nf < 0) goto fail_record;
        if (nf != out->ncol) {
            int nc = out->ncol;
            free(v); free(lines);
            amp_csv_free(out);
            return amp_fail(AMP_EFORMAT, "%s:%zu: %ld fields, the header has %d (truncated or corrupt row?)",
                            path, first, nf, nc);
        }
        if (nlines == lcap) {
            size_t nc = lcap ? lcap * 2 : 1024;
            size_t *nl = realloc(lines, nc * sizeof *nl);
            if (!nl) { free(v); free(lines); amp_csv_free(out); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
            lines = nl;
            lcap = nc;
        }
        lines[nlines++] = first;
        lineno++;
    }
    out->head = malloc((size_t)out->ncol * sizeof *out->head);
    if (!out->head) { free(v); free(lines); amp_csv_free(out); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
    memcpy(out->head, v, (size_t)out->ncol * sizeof *out->head);
    out->nrows = nlines;
    out->line = lines;
    if (nlines) {
        out->cell = malloc(nlines * (size_t)out->ncol * sizeof *out->cell);
        if (!out->cell) { free(v); amp_csv_free(out); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
        memcpy(out->cell, v + out->ncol, nlines * (size_t)out->ncol * sizeof *out->cell);
    }
    free(v);
    return AMP_OK;

fail_record:
    free(v); free(lines);
    amp_csv_free(out);
    if (nf == -2) return amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    return amp_fail(AMP_EFORMAT, "%s:%zu: %s", path, lineno,
                    bq == 1 ? "unterminated quoted field" : "text after a closing quote");
}

int amp_csv_col(const amp_csv *c, const char *name)
{
    for (int k = 0; k < c->ncol; k++)
        if (!strcmp(c->head[k], name)) return k;
    return -1;
}

amp_status amp_csv_require(const amp_csv *c, const char *const *names, int n, int *idx)
{
    for (int i = 0; i < n; i++) {
        idx[i] = amp_csv_col(c, names[i]);
        if (idx[i] < 0) {
            char h[512];
            size_t o = 0;
            h[0] = 0;
            for (int k = 0; k < c->ncol && o + 2 < sizeof h; k++)
                o += (size_t)snprintf(h + o, sizeof h - o, "%s%s", k ? "," : "", c->head[k]);
            return amp_fail(AMP_EFORMAT, "%s:1: header lacks column '%s' (header: %s)", c->path, names[i], h);
        }
    }
    return AMP_OK;
}

amp_status amp_csv_num(const amp_csv *c, size_t row, int col, double *out)
{
    const char *s = amp_csv_get(c, row, col);
    char *end;
    errno = 0;
    double v = *s ? strtod(s, &end) : 0;
    if (!*s || *end || (errno == ERANGE && isinf(v)))
        return amp_fail(AMP_EFORMAT, "%s:%zu: column '%s': '%s' is not a number", c->path,
                        c->line[row], c->head[col], s);
    /* strtod also takes hex and "nan(...)": allow only the plain spellings */
    if (isnan(v) && strcasecmp(s, "nan") && strcasecmp(s, "-nan") && strcasecmp(s, "+nan"))
        return amp_fail(AMP_EFORMAT, "%s:%zu: column '%s': '%s' is not a number", c->path,
                        c->line[row], c->head[col], s);
    *out = v;
    return AMP_OK;
}

amp_status amp_csv_long(const amp_csv *c, size_t row, int col, long lo, long hi, long *out)
{
    const char *s = amp_csv_get(c, row, col);
    char *end;
    errno = 0;
    long v = *s ? strtol(s, &end, 10) : 0;
    if (!*s || *end || errno)
        return amp_fail(AMP_EFORMAT, "%s:%zu: column '%s': '%s' is not an integer", c->path,
                        c->line[row], c->head[col], s);
    if (v < lo || v > hi)
        return amp_fail(AMP_EFORMAT, "%s:%zu: column '%s': %ld out of range [%ld, %ld]", c->path,
                        c->line[row], c->head[col], v, lo, hi);
    *out = v;
    return AMP_OK;
}
