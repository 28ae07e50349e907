/* ampsim analyze: what each format and scale does to the tensors of files
 * (.npy, .npz, .safetensors, raw .f32/.f64; a folder; FILE:NAME). A table by default, --csv or --json. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(void)
{
    printf("usage: ampsim analyze [--formats F,..] [--scales S,..] [cast options] [--csv|--json] [--threads T]\n"
           "                      INPUT..\n"
           "For every tensor of every INPUT, every format and every scale: the tensor times the\n"
           "scale, rounded into the format with the cast options, classified.\n"
           "  INPUT            .npy, .npz (stored or deflated members), .safetensors, raw .f32/.f64,\n"
           "                   FILE:NAME for one tensor of a file, or a folder (every tensor file in it)\n"
           "  --formats F,..   formats (default fp16,bf16,e4m3,e5m2; see ampsim formats) and block\n"
           "                   formats mx:ELEM[:block=N][:scale=floor|ceil|rne], nvfp4[:2d],\n"
           "                   block:ELEM:RxC (one row each, with block-scale statistics)\n"
           "  --scales S,..    scales, in row order (default 1):\n"
           "                   S or 2^k       a positive float32 scale\n"
           "                   amax[:margin=M][:pow2]  float32(max_finite * 2^-M) / amax (Transformer\n"
           "                                  Engine's current scaling), pow2: down to a power of two\n"
           "                   auto           the 2^k (k in -126..127) with the fewest values out of\n"
           "                                  range (overflow or saturated), then fewest flushed, then\n"
           "                                  most normal results, then smallest |k|; exact\n"
           "                   auto:count     the 2^k with the fewest flushed + overflow + saturated,\n"
           "                                  then fewest overflow + saturated, then smallest |k|\n"
           "                   with amax or auto, the unscaled row 1 is added first if missing\n"
           "  --rounding M     rne (default), rna, rtz, rup, rdn, rto, sr\n"
           "  --saturate       overflow and +-inf go to +-max finite (P3109 SatFinite)\n"
           "  --satprop        overflow goes to +-max finite, +-inf stays (P3109 SatPropagate)\n"
           "  --ftz / --daz    flush subnormal results / read subnormal inputs as zero\n"
           "  --sr-bits K      sr: random bits used (1..64); --seed S: sr seed (default 0)\n"
           "  --exact          use the MPFR reference path (slow)\n"
           "  --csv            CSV: %s\n"
           "  --json           JSON: an array of row objects (every class counter; non-finite amax\n"
           "                   and amin_nonzero as the strings \"inf\", \"-inf\", \"nan\")\n"
           "  --threads T      threads for the rounding kernels (default: all)\n"
           "Columns: cast the cast options; scale_spec the --scales entry; scale and scale_log2 the\n"
           "scale used; n elements; zero_in zero inputs; flushed nonzero inputs that became 0;\n"
           "subnormal results; saturated (clamped to max finite); overflow (became inf/NaN);\n"
           "invalid negative inputs of an unsigned format (e8m0); nan NaN inputs; lost = flushed +\n"
           "overflow + saturated + invalid, lost_frac its fraction of the nonzero finite inputs;\n"
           "amax, amin_nonzero of the scaled input; rel_err_finite RMS relative error over the\n"
           "nonzero finite inputs whose result is finite (values lost to inf/NaN left out);\n"
           "rel_err_all the same over every nonzero finite input, a value lost to inf/NaN or invalid\n"
           "counting 1; in_normal_range fraction of nonzero finite inputs whose result is normal.\n"
           "Block formats: blocks, scale_hi / scale_lo blocks whose scale hit the top / bottom of its\n"
           "format, amax_sat_frac fraction of blocks whose largest element saturated,\n"
           "scale_exp_min/median/max of floor(log2 block scale).\n"
           "The product x*s is exact for float16/bfloat16/float32 tensors (rounded once into the\n"
           "format); for float64 tensors it is formed in double.\n"
           "Tensor names: the tensor's name in .safetensors and .npz, the file's basename otherwise.\n",
           amp_analyze_csv_header());
}

static void scale_text(const amp_analyze_row *r, char *buf, size_t len)
{
    if (r->is_block) snprintf(buf, len, "block");
    else if (!strcmp(r->scale_spec, "1")) snprintf(buf, len, "1");
    else if (r->scale_log2 == floor(r->scale_log2) && strncmp(r->scale_spec, "2^", 2))
        snprintf(buf, len, "%s = 2^%d", r->scale_spec, (int)r->scale_log2);
    else if (strcmp(r->scale_spec, "1") && strncmp(r->scale_spec, "2^", 2))
        snprintf(buf, len, "%s = %.6g", r->scale_spec, (double)r->scale);
    else snprintf(buf, len, "%s", r->scale_spec);
}

static void print_table(const amp_analyze_row *rows, size_t n)
{
    enum { NC = 17 };
    static const char *const head[NC] = { "tensor", "format", "cast", "scale", "n", "zero_in", "flushed", "subnormal",
                                          "saturated", "overflow", "invalid", "nan", "lost_frac", "amax",
                                          "rel_err_finite", "rel_err_all", "in_normal_range" };
    size_t w[NC];
    char cell[NC][64];
    for (int c = 0; c < NC; c++) w[c] = strlen(head[c]);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (int c = 0; c < NC; c++) printf(c < 4 ? "%-*s%s" : "%*s%s", (int)w[c], head[c], c + 1 < NC ? "  " : "\n");
        }
        for (size_t i = 0; i < n; i++) {
            const amp_analyze_row *r = &rows[i];
            const amp_stats *s = &r->st;
            scale_text(r, cell[3], sizeof cell[3]);
            snprintf(cell[4], 64, "%llu", (unsigned long long)s->n);
            snprintf(cell[5], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_ZERO_IN]);
            snprintf(cell[6], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_FLUSHED]);
            snprintf(cell[7], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_SUBNORMAL]);
            snprintf(cell[8], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_SATURATED]);
            snprintf(cell[9], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_OVERFLOW]);
            snprintf(cell[10], 64, "%llu", (unsigned long long)r->invalid);
            snprintf(cell[11], 64, "%llu", (unsigned long long)s->cls[AMP_CLS_NAN_IN]);
            snprintf(cell[12], 64, "%.4f", amp_analyze_lost_frac(r));
            snprintf(cell[13], 64, "%.6g", s->amax);
            snprintf(cell[14], 64, "%.3e", amp_analyze_rel_err_finite(r));
            snprintf(cell[15], 64, "%.3e", amp_analyze_rel_err_all(r));
            snprintf(cell[16], 64, "%.4f", amp_stats_in_normal_range(s));
            const char *txt[NC];
            txt[0] = r->tensor;
            txt[1] = r->format;
            txt[2] = r->cast;
            for (int c = 3; c < NC; c++) txt[c] = cell[c];
            for (int c = 0; c < NC; c++) {
                if (pass == 0) {
                    size_t l = strlen(txt[c]);
                    if (l > w[c]) w[c] = l;
                } else {
                    printf(c < 4 ? "%-*s%s" : "%*s%s", (int)w[c], txt[c], c + 1 < NC ? "  " : "\n");
                }
            }
        }
    }
}

/* The block-scale statistics of the block-format rows, as a second table. */
static void print_block_table(const amp_analyze_row *rows, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= rows[i].is_block;
    if (!any) return;
    size_t wt = 6, wf = 6;
    for (size_t i = 0; i < n; i++)
        if (rows[i].is_block) {
            if (strlen(rows[i].tensor) > wt) wt = strlen(rows[i].tensor);
            if (strlen(rows[i].format) > wf) wf = strlen(rows[i].format);
        }
    printf("\n%-*s  %-*s  %10s  %8s  %8s  %13s  %10s  %11s  %19s  %12s\n", (int)wt, "tensor", (int)wf, "format", "blocks",
           "scale_hi", "scale_lo", "amax_sat_frac", "nan_blocks", "zero_blocks", "scale_exp lo/med/hi", "tensor_scale");
    for (size_t i = 0; i < n; i++) {
        const amp_analyze_row *r = &rows[i];
        if (!r->is_block) continue;
        int lo, med, hi;
        amp_block_exp_summary(&r->bs, &lo, &med, &hi);
        char e[48];
        snprintf(e, sizeof e, "%d/%d/%d", lo, med, hi);
        printf("%-*s  %-*s  %10llu  %8llu  %8llu  %13.4f  %10llu  %11llu  %19s  %12.6g\n", (int)wt, r->tensor, (int)wf,
               r->format, (unsigned long long)r->bs.blocks, (unsigned long long)r->bs.scale_hi,
               (unsigned long long)r->bs.scale_lo, r->bs.blocks ? (double)r->bs.amax_sat / (double)r->bs.blocks : 0.0,
               (unsigned long long)r->bs.nan_blocks, (unsigned long long)r->bs.zero_blocks, e, (double)r->bs.tensor_scale);
    }
}

/* A number, or for inf/NaN the string "inf", "-inf", "nan" (JSON has no such numbers). */
static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddStringToObject(o, key, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

static void add_block_json(cJSON *o, const amp_analyze_row *r)
{
    const amp_block_stats *b = &r->bs;
    cJSON_AddNumberToObject(o, "blocks", (double)b->blocks);
    cJSON_AddNumberToObject(o, "scale_hi", (double)b->scale_hi);
    cJSON_AddNumberToObject(o, "scale_lo", (double)b->scale_lo);
    cJSON_AddNumberToObject(o, "amax_sat", (double)b->amax_sat);
    cJSON_AddNumberToObject(o, "nan_blocks", (double)b->nan_blocks);
    cJSON_AddNumberToObject(o, "zero_blocks", (double)b->zero_blocks);
    add_num(o, "tensor_scale", b->tensor_scale);
    cJSON *h = cJSON_AddObjectToObject(o, "scale_exp_hist");
    for (int i = 0; h && i < AMP_BLOCK_EXP_BINS; i++)
        if (b->exp_hist[i]) {
            char k[16];
            snprintf(k, sizeof k, "%d", i + AMP_BLOCK_EXP_LO);
            cJSON_AddNumberToObject(h, k, (double)b->exp_hist[i]);
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
        cJSON_AddStringToObject(o, "cast", r->cast);
        cJSON_AddStringToObject(o, "scale_spec", r->scale_spec);
        cJSON_AddNumberToObject(o, "scale", (double)r->scale);
        cJSON_AddNumberToObject(o, "scale_log2", r->scale_log2);
        cJSON_AddBoolToObject(o, "auto", r->is_auto);
        cJSON_AddNumberToObject(o, "n", (double)s->n);
        cJSON_AddNumberToObject(o, "zero_in", (double)s->cls[AMP_CLS_ZERO_IN]);
        cJSON_AddNumberToObject(o, "flushed", (double)s->cls[AMP_CLS_FLUSHED]);
        cJSON_AddNumberToObject(o, "subnormal", (double)s->cls[AMP_CLS_SUBNORMAL]);
        cJSON_AddNumberToObject(o, "saturated", (double)s->cls[AMP_CLS_SATURATED]);
        cJSON_AddNumberToObject(o, "overflow", (double)s->cls[AMP_CLS_OVERFLOW]);
        cJSON_AddNumberToObject(o, "invalid", (double)r->invalid);
        cJSON_AddNumberToObject(o, "nan", (double)s->cls[AMP_CLS_NAN_IN]);
        cJSON_AddNumberToObject(o, "inf_in", (double)s->cls[AMP_CLS_INF_IN]);
        cJSON_AddNumberToObject(o, "exact", (double)s->cls[AMP_CLS_EXACT]);
        cJSON_AddNumberToObject(o, "rounded", (double)s->cls[AMP_CLS_ROUNDED]);
        cJSON_AddNumberToObject(o, "lost", (double)amp_analyze_lost(r));
        cJSON_AddNumberToObject(o, "lost_frac", amp_analyze_lost_frac(r));
        add_num(o, "amax", s->amax);
        add_num(o, "amin_nonzero", s->amin_nonzero);
        cJSON_AddNumberToObject(o, "rel_err_finite", amp_analyze_rel_err_finite(r));
        cJSON_AddNumberToObject(o, "rel_err_all", amp_analyze_rel_err_all(r));
        cJSON_AddNumberToObject(o, "in_normal_range", amp_stats_in_normal_range(s));
        if (r->is_block) add_block_json(o, r);
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


/* Analyses the tensors of one file (all, or the one named). */
static amp_status analyze_file(const char *path, const char *name, const amp_analyze_opts *o, amp_analyze_row **rows,
                               size_t *n_rows)
{
    amp_tensor_file tf;
    amp_status st = amp_tensor_file_open(path, &tf);
    if (st) return st;
    if (tf.n_skipped && !name)
        fprintf(stderr, "ampsim analyze: %s: skipped %d non-float tensor%s (%s%s)\n", path, tf.n_skipped,
                tf.n_skipped > 1 ? "s" : "", tf.skipped, tf.n_skipped > 1 ? ", ..." : "");
    int found = 0;
    for (int t = 0; t < tf.n_tensors && !st; t++) {
        if (name && strcmp(tf.tensors[t].name, name)) continue;
        found = 1;
        st = amp_analyze_view(&tf.tensors[t], o, rows, n_rows);
    }
    if (!st && name && !found) st = amp_fail(AMP_EINVAL, "%s: no float tensor named '%s'", path, name);
    if (st && strncmp(amp_errmsg(), path, strlen(path))) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", amp_errmsg());
        st = amp_fail(st, "%s: %s", path, msg);
    }
    amp_tensor_file_close(&tf);
    return st;
}

/* One INPUT: a folder (every tensor file in it), FILE:NAME or FILE. */
static amp_status analyze_input(const char *arg, const amp_analyze_opts *o, amp_analyze_row **rows, size_t *n_rows)
{
    char **paths = NULL;
    int np = 0;
    struct stat sb;
    amp_status st;
    if (stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if ((st = amp_tensor_dir_list(arg, &paths, &np))) return st;
        if (np == 0) st = amp_fail(AMP_EINVAL, "%s: folder holds no tensor file (.npy, .npz, .safetensors, .f32, .f64)", arg);
        for (int i = 0; i < np && !st; i++) st = analyze_file(paths[i], NULL, o, rows, n_rows);
        amp_tensor_dir_free(paths, np);
        return st;
    }
    char path[4096];
    const char *name;
    if ((st = amp_tensor_arg_split(arg, path, sizeof path, &name))) return st;
    return analyze_file(path, name, o, rows, n_rows);
}

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
        AMP_CLI_CAST_OPTS(o.round),
        { "--exact", AMP_OPT_BITS, &o.round.flags, AMP_EXACT, 0, NULL },
        { "--csv", AMP_OPT_FLAG, &csv, 1, 0, NULL },
        { "--json", AMP_OPT_FLAG, &json, 1, 0, NULL },
        { "--threads", AMP_OPT_INT, &threads, 1, 4096, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("analyze", argc, argv, opts, &files, AMP_CLI_POSITIONAL, help);
    if (rc < 0) { amp_cli_list_free(&files); return 0; }
    int nfiles = files.n;
    if (!rc && csv && json) rc = amp_cli_usage_error("analyze", "--csv and --json exclude each other");
    if (!rc && !nfiles) rc = amp_cli_usage_error("analyze", "needs at least one INPUT (try --help)");
    if (rc) { amp_cli_list_free(&files); return rc; }
    if (threads) amp_set_threads(threads);

    amp_analyze_row *rows = NULL;
    size_t n_rows = 0;
    amp_status st = AMP_OK;
    for (int fi = 0; fi < nfiles && !st; fi++) st = analyze_input(files.v[fi], &o, &rows, &n_rows);
    amp_cli_list_free(&files);
    if (st) { free(rows); return amp_cli_fail(st); }
    if (csv) {
        char line[2048];
        printf("%s\n", amp_analyze_csv_header());
        for (size_t i = 0; i < n_rows; i++) {
            amp_analyze_csv_row(&rows[i], line, sizeof line);
            printf("%s\n", line);
        }
    } else if (json) {
        if (print_json(rows, n_rows)) { free(rows); return amp_cli_fail(amp_fail(AMP_ENOMEM, "out of memory")); }
    } else {
        print_table(rows, n_rows);
        print_block_table(rows, n_rows);
    }
    free(rows);
    if (fflush(stdout) != 0) return amp_cli_fail(amp_fail(AMP_EIO, "stdout: write failed"));
    return 0;
}
