/* ampsim check-cast: judge another library's casts. INPUT holds the values
 * the library cast, OUTPUT what it produced (decoded values, or with --bits
 * the format's bit patterns); every element is compared with ampsim's exact
 * result, and the mismatches are classified (amp_castcheck.h), shown with
 * examples in hex and written out as .npy test vectors. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static void help(void)
{
    printf("usage: ampsim check-cast --format F [--rounding M] [--saturate|--satprop] [--ftz] [--daz]\n"
           "                         [--sr-bits K] [--seed S] [--bits] [--vectors DIR] INPUT OUTPUT\n"
           "Compares another library's cast of INPUT into format F (OUTPUT) with ampsim's exact\n"
           "result under the same cast options, element by element.\n"
           "  INPUT      the values cast (.npy, .npz, .safetensors, .f32, .f64; FILE:NAME)\n"
           "  OUTPUT     the library's results: float values (any INPUT kind), or with --bits the\n"
           "             format's bit patterns: .npy '|u1' / '<u2', or raw bytes (one byte per value\n"
           "             for formats of <= 8 bits, two little-endian bytes for <= 16)\n"
           "  --vectors DIR  write the mismatching inputs of each class as DIR/<class>.npy\n"
           "                 (float32, or float64 for a float64 INPUT) and ampsim's results as\n"
           "                 DIR/<class>_expected.npy\n"
           "Mismatch classes, the first that applies: nan (NaN input, or NaN encodings differ),\n"
           "e8m0 (the E8M0 rounding rule), max_finite (a finite result beyond the format's max),\n"
           "saturation (saturate vs overflow), neg_zero, subnormal (flush / subnormal handling),\n"
           "tie (tie direction), rounding (the other neighbour, not a tie), other.\n"
           "Exit status: 0 when every element agrees, 1 when some differ, 2 on bad input.\n");
}


/* One tensor of a file (FILE or FILE:NAME) as float64 values. */
static amp_status read_values(const char *arg, double **out, size_t *n, int *is64)
{
    char path[4096];
    const char *name;
    amp_status st = amp_tensor_arg_split(arg, path, sizeof path, &name);
    if (st) return st;
    amp_tensor_file tf;
    if ((st = amp_tensor_file_open(path, &tf))) return st;
    const amp_tensor_view *v = NULL;
    for (int i = 0; i < tf.n_tensors; i++)
        if (name ? !strcmp(tf.tensors[i].name, name) : tf.n_tensors == 1) v = &tf.tensors[i];
    if (!v) st = name ? amp_fail(AMP_EINVAL, "%s: no float tensor named '%s'", path, name)
                      : amp_fail(AMP_EINVAL, "%s: holds %d tensors; name one as FILE:NAME", path, tf.n_tensors);
    if (!st && !(*out = malloc((v->n ? v->n : 1) * sizeof **out))) st = amp_fail(AMP_ENOMEM, "%s: out of memory", path);
    if (!st) {
        amp_tensor_view_to_f64(v, 0, v->n, *out);
        *n = v->n;
        *is64 = v->dtype == AMP_DT_F64;
    }
    amp_tensor_file_close(&tf);
    return st;
}

/* Bit patterns: .npy '|u1' / '<u2' (C order) or raw bytes. */
static amp_status read_bits(const char *path, int wide, uint32_t **out, size_t *n)
{
    char *d;
    size_t len;
    amp_status st = amp_read_file(path, (size_t)1 << 34, &d, &len);
    if (st) return st;
    size_t off = 0, esz = wide ? 2 : 1;
    const char *dot = strrchr(path, '.');
    if (dot && !strcasecmp(dot, ".npy")) {
        if (len < 10 || memcmp(d, "\x93NUMPY", 6)) { free(d); return amp_fail(AMP_EFORMAT, "%s: not a .npy file", path); }
        size_t hl = d[6] == 1 ? (size_t)(unsigned char)d[8] | (size_t)(unsigned char)d[9] << 8
                              : len >= 12 ? (size_t)(unsigned char)d[8] | (size_t)(unsigned char)d[9] << 8 |
                                                (size_t)(unsigned char)d[10] << 16 | (size_t)(unsigned char)d[11] << 24 : len;
        off = (d[6] == 1 ? 10 : 12) + hl;
        if (off > len) { free(d); return amp_fail(AMP_EFORMAT, "%s: truncated .npy header", path); }
        char hdr[512];
        snprintf(hdr, sizeof hdr, "%.*s", (int)(hl < 511 ? hl : 511), d + (d[6] == 1 ? 10 : 12));
        const char *want = wide ? "'<u2'" : "'|u1'";
        if (!strstr(hdr, want) || strstr(hdr, "'fortran_order': True")) {
            free(d);
            return amp_fail(AMP_EFORMAT, "%s: --bits needs a C-order .npy of dtype %s for this format", path, want);
        }
    }
    if ((len - off) % esz) { free(d); return amp_fail(AMP_EFORMAT, "%s: %zu data bytes is not a whole number of patterns", path, len - off); }
    *n = (len - off) / esz;
    *out = malloc((*n ? *n : 1) * sizeof **out);
    if (!*out) { free(d); return amp_fail(AMP_ENOMEM, "%s: out of memory", path); }
    const unsigned char *p = (const unsigned char *)d + off;
    for (size_t i = 0; i < *n; i++) (*out)[i] = wide ? (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) : p[i];
    free(d);
    return AMP_OK;
}

static amp_status write_vec(const char *dir, const char *name, const double *v, size_t n, int as64)
{
    char path[4600];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    size_t shape[1] = { n };
    if (!as64) {
        float *f = malloc((n ? n : 1) * sizeof *f);
        if (!f) return amp_fail(AMP_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) f[i] = (float)v[i];
        amp_status st = amp_npy_write_f32(path, f, 1, shape);
        free(f);
        return st;
    }
    char hdr[256];
    size_t hl;
    amp_status st = amp_npy_header("<f8", 1, shape, hdr, sizeof hdr, &hl);
    if (st) return st;
    char *buf = malloc(hl + n * 8);
    if (!buf) return amp_fail(AMP_ENOMEM, "out of memory");
    memcpy(buf, hdr, hl);
    if (n) memcpy(buf + hl, v, n * 8);
    st = amp_write_file_atomic(path, buf, hl + n * 8);
    free(buf);
    return st;
}

/* DIR/<class>.npy and DIR/<class>_expected.npy for every class with mismatches. */
static amp_status write_vectors(const char *dir, const amp_format *f, const amp_round_opts *o, const double *x,
                                const int *cls, size_t n, const amp_cast_check *c, int as64)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return amp_fail(AMP_EIO, "%s: cannot create: %s", dir, strerror(errno));
    double *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
    amp_status st = v && w ? AMP_OK : amp_fail(AMP_ENOMEM, "out of memory");
    for (int m = 0; m < AMP_MM_COUNT && !st; m++) {
        if (!c->count[m]) continue;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (cls[i] == m) {
                v[k] = x[i];
                w[k++] = amp_round1(f, o, x[i], i, NULL);
            }
        char name[64];
        snprintf(name, sizeof name, "%s_expected", amp_mismatch_name((amp_mismatch)m));
        if (!(st = write_vec(dir, amp_mismatch_name((amp_mismatch)m), v, k, as64))) st = write_vec(dir, name, w, k, 0);
    }
    free(v);
    free(w);
    return st;
}

static void print_report(const amp_format *f, const amp_round_opts *o, const amp_cast_check *c)
{
    char cast[64];
    amp_round_opts_text(o, cast, sizeof cast);
    printf("format %s, cast %s: %llu values, %llu agree, %llu differ\n", f->name, cast, (unsigned long long)c->n,
           (unsigned long long)c->agree, (unsigned long long)(c->n - c->agree));
    if (c->n == c->agree) return;
    printf("%-11s %10s  %s\n", "class", "count", "first examples: index  input (float32 bits)  ampsim -> library (patterns)");
    for (int m = 0; m < AMP_MM_COUNT; m++) {
        if (!c->count[m]) continue;
        printf("%-11s %10llu\n", amp_mismatch_name((amp_mismatch)m), (unsigned long long)c->count[m]);
        for (int e = 0; e < c->n_ex[m]; e++) {
            const amp_cast_example *x = &c->ex[m][e];
            char wb[24] = "-", gb[24] = "-", xb[16] = "";
            if (x->want_bits >= 0) snprintf(wb, sizeof wb, "0x%02llx", (unsigned long long)x->want_bits);
            if (x->got_bits >= 0) snprintf(gb, sizeof gb, "0x%02llx", (unsigned long long)x->got_bits);
            if ((double)(float)x->x == x->x || isnan(x->x)) snprintf(xb, sizeof xb, "0x%08x", amp_f2u((float)x->x));
            printf("%23s  %-10zu %-14.9g %-10s  %-12.9g (%s) -> %-12.9g (%s)\n", "", x->index, x->x, xb, (double)x->want,
                   wb, (double)x->got, gb);
        }
    }
}

int amp_cli_check_cast(int argc, char **argv)
{
    const char *fmt_name = NULL, *vectors = NULL;
    amp_round_opts o = amp_round_defaults();
    int bits = 0;
    const char *pos[2];
    amp_cli_list files = { pos, 0, 2 };
    const amp_cli_opt opts[] = {
        { "--format", AMP_OPT_STR, &fmt_name, 0, 0, NULL },
        AMP_CLI_CAST_OPTS(o),
        { "--bits", AMP_OPT_FLAG, &bits, 1, 0, NULL },
        { "--vectors", AMP_OPT_STR, &vectors, 0, 0, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("check-cast", argc, argv, opts, &files, AMP_CLI_POSITIONAL, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (!fmt_name) return amp_cli_usage_error("check-cast", "--format is required (try --help)");
    if (files.n < 2) return amp_cli_usage_error("check-cast", "needs INPUT and OUTPUT (try --help)");
    amp_format f;
    if (amp_format_parse(fmt_name, &f)) return amp_cli_usage_error("check-cast", "--format: %s", amp_errmsg());
    if (bits && f.bits > 16) return amp_cli_usage_error("check-cast", "--bits: %s has %d bits (at most 16)", f.name, f.bits);
    double *x = NULL, *gv = NULL;
    uint32_t *gb = NULL;
    float *g = NULL;
    int *cls = NULL, is64 = 0, dummy;
    size_t n = 0, ng = 0;
    amp_cast_check c;
    memset(&c, 0, sizeof c);
    amp_status st = read_values(files.v[0], &x, &n, &is64);
    if (!st) st = bits ? read_bits(files.v[1], f.bits > 8, &gb, &ng) : read_values(files.v[1], &gv, &ng, &dummy);
    if (!st && ng != n) st = amp_fail(AMP_EINVAL, "%s has %zu values, %s has %zu", files.v[0], n, files.v[1], ng);
    if (!st && !bits && !(g = malloc((n ? n : 1) * sizeof *g))) st = amp_fail(AMP_ENOMEM, "out of memory");
    if (!st && !(cls = malloc((n ? n : 1) * sizeof *cls))) st = amp_fail(AMP_ENOMEM, "out of memory");
    if (!st && g)
        for (size_t i = 0; i < n; i++) g[i] = (float)gv[i];   /* the library's values: float32 or narrower */
    if (!st) st = amp_cast_check_run(&f, &o, x, g, gb, n, 0, &c, cls);
    if (!st) print_report(&f, &o, &c);
    if (!st && vectors && c.agree != c.n) st = write_vectors(vectors, &f, &o, x, cls, n, &c, is64);
    free(x); free(gv); free(gb); free(g); free(cls);
    if (st) return amp_cli_fail(st);
    if (fflush(stdout) != 0) return amp_cli_fail(amp_fail(AMP_EIO, "stdout: write failed"));
    return c.agree == c.n ? 0 : 1;
}
