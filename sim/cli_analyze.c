/* ampsim analyze: what each format and scale does to the tensors of files
 * (.npy, .safetensors, raw .f32/.f64). A table by default, --csv or --json. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: ampsim analyze [--formats F,..] [--scales auto|S,..] [--csv|--json] [--threads T] FILE..\n"
           "For every tensor of every FILE (.npy, .safetensors, raw .f32/.f64), every format and\n"
           "every scale: the tensor times the scale, rounded into the format (rne), classified.\n"
           "  --formats F,..   formats (default fp16,bf16,e4m3,e5m2; see ampsim formats)\n"
           "  --scales S,..    positive scales, held as float32 (default 1); 'auto' adds, beside\n"
           "                   the unscaled row, the power of two 2^k (k in -126..127) that\n"
           "                   minimises flushed + overflow + saturated (ties: fewer overflow +\n"
           "                   saturated, then smaller |k|); chosen exactly, not estimated\n"
           "  --csv            CSV: %s\n"
           "  --json           JSON: an array of row objects (every class counter included)\n"
           "  --threads T      threads for the rounding kernels (default: all)\n"
           "Columns: n elements; zero_in zero inputs; flushed nonzero inputs that became 0;\n"
           "subnormal results; saturated (clamped to max finite); overflow (became inf/NaN);\n"
           "nan NaN inputs; amax, amin_nonzero of the scaled input; rel_err RMS relative error\n"
           "over nonzero finite inputs; in_normal_range fraction of nonzero finite inputs whose\n"
           "result is normal. The product x*s is exact for float16/bfloat16/float32 tensors\n"
           "(rounded once into the format); for float64 tensors it is formed in double.\n"
           "Tensor names: the tensor's name in .safetensors, the file's basename otherwise.\n",
           amp_analyze_csv_header());
}

static void scale_text(const amp_analyze_row *r, char *buf, size_t len)
{
    if (r->is_auto) snprintf(buf, len, "2^%d auto", r->scale_log2);
    else snprintf(buf, len, "%.9g", (double)r->scale);
}

static void print_table(const amp_analyze_row *rows, size_t n)
{
    enum { NC = 14 };
    static const char *const head[NC] = { "tensor", "format", "scale", "n", "zero_in", "flushed", "subnormal",
                                          "saturated", "overflow", "nan", "amax", "amin_nonzero", "rel_err",
                                          "in_normal_range" };
    size_t w[NC];
    char cell[NC][64];
    for (int c = 0; c < NC; c++) w[c] = strlen(head[c]);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (int c = 0; c < NC; c++) printf(c < 3 ? "%-*s%s" : "%*s%s", (int)w[c], head[c], c + 1 < NC ? "  " : "\n");
        }
        for (size_t i = 0; i < n; i++) {
            const amp_analyze_row *r = &rows[i];
            const amp_stats *s = &r->st;
            scale_text(r, cell[2], sizeof cell[2]);
            snprintf(cell[3], 64, "%llu", (unsigned long long)s->n);
            snprintf(cell[4], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_ZERO_IN]);
            snprintf(cell[5], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_FLUSHED]);
            snprintf(cell[6], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_SUBNORMAL]);
            snprintf(cell[7], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_SATURATED]);
            snprintf(cell[8], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_OVERFLOW]);
            snprintf(cell[9], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_NAN_IN]);
            snprintf(cell[10], 64, "%.6g", s->amax);
            snprintf(cell[11], 64, "%.6g", s->amin_nonzero);
            snprintf(cell[12], 64, "%.3e", amp_stats_rel_err(s));
            snprintf(cell[13], 64, "%.4f", amp_stats_in_normal_range(s));
            const char *txt[NC];
            txt[0] = r->tensor;
            txt[1] = r->format;
            for (int c = 2; c < NC; c++) txt[c] = cell[c];
            for (int c = 0; c < NC; c++) {
                if (pass == 0) {
                    size_t l = strlen(txt[c]);
                    if (l > w[c]) w[c] = l;
                } else {
                    printf(c < 3 ? "%-*s%s" : "%*s%s", (int)w[c], txt[c], c + 1 < NC ? "  " : "\n");
                }
            }
        }
    }
}

static int print_json(const amp_analyze_row *rows, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return -1;
    for (size_t i = 0; i < n; i++) {
        const amp_analyze_row *r = &rows[i];
        const amp_stats *s = &r->st;
        cJSON *o = cJSON_CreateObject();
        if (!o) { cJSON_Delete(arr); return -1; }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "tensor", r->tensor);
        cJSON_AddStringToObject(o, "format", r->format);
        cJSON_AddNumberToObject(o, "scale", (double)r->scale);
        cJSON_AddBoolToObject(o, "auto", r->is_auto);
        if (r->is_auto) cJSON_AddNumberToObject(o, "scale_log2", r->scale_log2);
        cJSON_AddNumberToObject(o, "n", (double)s->n);
        cJSON_AddNumberToObject(o, "zero_in", (double)s->cls[AMP_CLS_ZERO_IN]);
        cJSON_AddNumberToObject(o, "flushed", (double)s->cls[AMP_CLS_FLUSHED]);
        cJSON_AddNumberToObject(o, "subnormal", (double)s->cls[AMP_CLS_SUBNORMAL]);
        cJSON_AddNumberToObject(o, "saturated", (double)s->cls[AMP_CLS_SATURATED]);
        cJSON_AddNumberToObject(o, "overflow", (double)s->cls[AMP_CLS_OVERFLOW]);
        cJSON_AddNumberToObject(o, "nan", (double)s->cls[AMP_CLS_NAN_IN]);
        cJSON_AddNumberToObject(o, "inf_in", (double)s->cls[AMP_CLS_INF_IN]);
        cJSON_AddNumberToObject(o, "exact", (double)s->cls[AMP_CLS_EXACT]);
        cJSON_AddNumberToObject(o, "rounded", (double)s->cls[AMP_CLS_ROUNDED]);
        if (isfinite(s->amax)) cJSON_AddNumberToObject(o, "amax", s->amax);
        else cJSON_AddNullToObject(o, "amax");
        if (isfinite(s->amin_nonzero)) cJSON_AddNumberToObject(o, "amin_nonzero", s->amin_nonzero);
        else cJSON_AddNullToObject(o, "amin_nonzero");
        cJSON_AddNumberToObject(o, "rel_err", amp_stats_rel_err(s));
        cJSON_AddNumberToObject(o, "in_normal_range", amp_stats_in_normal_range(s));
    }
    char *txt = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (!txt) return -1;
    printf("%s\n", txt);
    free(txt);
    return 0;
}

static amp_status parse_formats(const char *v, void *o) { return amp_analyze_parse_formats(v, o); }
static amp_status parse_scales(const char *v, void *o) { return amp_analyze_parse_scales(v, o); }

int amp_cli_analyze(int argc, char **argv)
{
    amp_analyze_opts o;
    amp_analyze_defaults(&o);
    int csv = 0, json = 0, threads = 0;
    amp_cli_list files;
    if (amp_cli_list_init(&files, argc)) return amp_cli_fail(AMP_ENOMEM);
    const amp_cli_opt opts[] = {
        { "--formats", AMP_OPT_FN, &o, 0, 0, parse_formats },
        { "--scales", AMP_OPT_FN, &o, 0, 0, parse_scales },
        { "--csv", AMP_OPT_FLAG, &csv, 1, 0, NULL },
        { "--json", AMP_OPT_FLAG, &json, 1, 0, NULL },
        { "--threads", AMP_OPT_INT, &threads, 1, 4096, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("analyze", argc, argv, opts, &files, AMP_CLI_POSITIONAL, help);
    if (rc < 0) { amp_cli_list_free(&files); return 0; }
    int nfiles = files.n;
    if (!rc && csv && json) rc = amp_cli_usage_error("analyze", "--csv and --json exclude each other");
    if (!rc && !nfiles) rc = amp_cli_usage_error("analyze", "needs at least one FILE (try --help)");
    if (rc) { amp_cli_list_free(&files); return rc; }
    if (threads) amp_set_threads(threads);

    amp_analyze_row *rows = NULL;
    size_t n_rows = 0;
    amp_status st = AMP_OK;
    for (int fi = 0; fi < nfiles && !st; fi++) {
        amp_tensor_file tf;
        if ((st = amp_tensor_file_open(files.v[fi], &tf))) break;
        if (tf.n_skipped)
            fprintf(stderr, "ampsim analyze: %s: skipped %d non-float tensor%s (%s%s)\n", files.v[fi], tf.n_skipped,
                    tf.n_skipped > 1 ? "s" : "", tf.skipped, tf.n_skipped > 1 ? ", ..." : "");
        for (int t = 0; t < tf.n_tensors && !st; t++) st = amp_analyze_view(&tf.tensors[t], &o, &rows, &n_rows);
        if (st && strncmp(amp_errmsg(), files.v[fi], strlen(files.v[fi]))) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", amp_errmsg());
            st = amp_fail(st, "%s: %s", files.v[fi], msg);
        }
        amp_tensor_file_close(&tf);
    }
    amp_cli_list_free(&files);
    if (st) { free(rows); return amp_cli_fail(st); }
    if (csv) {
        char line[1024];
        printf("%s\n", amp_analyze_csv_header());
        for (size_t i = 0; i < n_rows; i++) {
            amp_analyze_csv_row(&rows[i], line, sizeof line);
            printf("%s\n", line);
        }
    } else if (json) {
        if (print_json(rows, n_rows)) { free(rows); return amp_cli_fail(amp_fail(AMP_ENOMEM, "out of memory")); }
    } else {
        print_table(rows, n_rows);
    }
    free(rows);
    if (fflush(stdout) != 0) return amp_cli_fail(amp_fail(AMP_EIO, "stdout: write failed"));
    return 0;
}
