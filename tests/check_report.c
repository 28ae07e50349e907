/* Tests of the report: the strict CSV reader, the accumulation experiment
 * (figure 6) and `ampsim report` on run and compare directories generated
 * here (every figure a valid PNG, PDF and SVG; index.html links only files
 * that exist; a missing or corrupt input is exit 2 naming the file). */
#include <check.h>
#include "check_main.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ampsim.h"
#include "amp_report.h"
#include "report_test.h"


START_TEST(csv_reads_quotes_crlf_and_trailing_blank_lines)
{
    char p[512];
    snprintf(p, sizeof p, "%s/a.csv", tmpdir);
    write_text(p, "step,event,detail\r\n3,\"skip, then \"\"backoff\"\"\",x\r\n4,growth,\r\n\n\n");
    amp_csv c;
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_OK);
    ck_assert_int_eq(c.ncol, 3);
    ck_assert_uint_eq(c.nrows, 2);
    ck_assert_str_eq(amp_csv_get(&c, 0, 1), "skip, then \"backoff\"");
    ck_assert_str_eq(amp_csv_get(&c, 0, 2), "x");
    ck_assert_str_eq(amp_csv_get(&c, 1, 2), "");
    ck_assert_uint_eq(c.line[1], 3);
    ck_assert_int_eq(amp_csv_col(&c, "detail"), 2);
    ck_assert_int_eq(amp_csv_col(&c, "nope"), -1);
    double v;
    ck_assert_int_eq(amp_csv_num(&c, 0, 0, &v), AMP_OK);
    ck_assert(v == 3.0);
    amp_csv_free(&c);
}
END_TEST

START_TEST(csv_errors_name_file_and_line)
{
    char p[512];
    snprintf(p, sizeof p, "%s/b.csv", tmpdir);
    amp_csv c;
    /* a short row (truncated file) */
    write_text(p, "a,b,c\n1,2,3\n4,5\n");
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "b.csv:3:") != NULL, "%s", amp_errmsg());
    /* a blank line inside the data */
    write_text(p, "a,b\n1,2\n\n3,4\n");
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "b.csv:3:") != NULL, "%s", amp_errmsg());
    /* an unterminated quote */
    write_text(p, "a,b\n1,\"2\n");
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "b.csv:") != NULL, "%s", amp_errmsg());
    /* empty file, missing file */
    write_text(p, "");
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "b.csv:1: empty") != NULL, "%s", amp_errmsg());
    snprintf(p, sizeof p, "%s/missing.csv", tmpdir);
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_EIO);
    ck_assert_msg(strstr(amp_errmsg(), "missing.csv") != NULL, "%s", amp_errmsg());
    /* strict numbers */
    snprintf(p, sizeof p, "%s/n.csv", tmpdir);
    write_text(p, "x,y\n1e,0x10\nnan,-inf\n 1,1.5\nnan(1),7\n");
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_OK);
    double v;
    long l;
    ck_assert_int_eq(amp_csv_num(&c, 0, 0, &v), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "n.csv:2: column 'x': '1e'") != NULL, "%s", amp_errmsg());
    ck_assert_int_eq(amp_csv_num(&c, 1, 0, &v), AMP_OK);
    ck_assert(isnan(v));
    ck_assert_int_eq(amp_csv_num(&c, 1, 1, &v), AMP_OK);
    ck_assert(isinf(v) && v < 0);
    ck_assert_int_eq(amp_csv_long(&c, 0, 1, 0, 100, &l), AMP_EFORMAT);   /* no hex */
    ck_assert_int_eq(amp_csv_num(&c, 2, 1, &v), AMP_OK);
    ck_assert(v == 1.5);
    ck_assert_int_eq(amp_csv_long(&c, 2, 1, 0, 100, &l), AMP_EFORMAT);
    ck_assert_int_eq(amp_csv_num(&c, 3, 0, &v), AMP_EFORMAT);
    ck_assert_int_eq(amp_csv_long(&c, 3, 1, 0, 5, &l), AMP_EFORMAT);     /* out of range */
    ck_assert_msg(strstr(amp_errmsg(), "out of range") != NULL, "%s", amp_errmsg());
    static const char *const need[] = { "x", "z" };
    int idx[2];
    ck_assert_int_eq(amp_csv_require(&c, need, 2, idx), AMP_EFORMAT);
    ck_assert_msg(strstr(amp_errmsg(), "n.csv:1: header lacks column 'z'") != NULL, "%s", amp_errmsg());
    amp_csv_free(&c);
}
END_TEST

/* ---- figure 6's experiment ---------------------------------------------- */

START_TEST(accum_experiment)
{
    char p[512];
    snprintf(p, sizeof p, "%s/accum.csv", tmpdir);
    FILE *fp = fopen(p, "w");
    ck_assert(fp != NULL);
    ck_assert_int_eq(amp_bench_accum(fp, 1), AMP_OK);
    fclose(fp);
    amp_csv c;
    ck_assert_int_eq(amp_csv_read(p, &c), AMP_OK);
    static const char *const need[] = { "K", "operands", "accumulator", "rounding", "promote_every",
                                        "trials", "mean_rel_err", "max_rel_err" };
    int k[8];
    ck_assert_int_eq(amp_csv_require(&c, need, 8, k), AMP_OK);
    int seen_bf16 = 0, seen_fp32 = 0;
    for (size_t i = 0; i < c.nrows; i++) {
        long K, pe;
        double m, mx;
        ck_assert_int_eq(amp_csv_long(&c, i, k[0], 1, 1L << 20, &K), AMP_OK);
        ck_assert_int_eq(amp_csv_long(&c, i, k[4], 0, 1L << 20, &pe), AMP_OK);
        ck_assert_int_eq(amp_csv_num(&c, i, k[6], &m), AMP_OK);
        ck_assert_int_eq(amp_csv_num(&c, i, k[7], &mx), AMP_OK);
        ck_assert(m >= 0 && mx >= m);
        const char *acc = amp_csv_get(&c, i, k[2]);
        /* An fp32 sum of n positive terms has relative error <= (n-1) u / (1 - (n-1) u),
         * u = 2^-24 (Higham, Thm 4.4 with the terms exact). */
        if (!strcmp(acc, "fp32")) {
            double u = ldexp(1, -24), b = (K - 1) * u / (1 - (K - 1) * u);
            ck_assert_msg(mx <= b, "fp32 K=%ld error %g > bound %g", K, mx, b);
            seen_fp32++;
        }
        /* bf16 swamping: once the running sum reaches 256 its ulp is 2 and every
         * product (< 1) is lost, while the exact sum of K products of U[0,1) values
         * is about K/3 (5461 for K = 16384): error > 1 - 512/5000. Promotion every
         * 128 products keeps each partial sum below 128, where ulp/2 <= 0.25. */
        if (!strcmp(acc, "bf16") && K == 16384) {
            if (pe == 0) ck_assert_msg(m > 0.85, "bf16 K=16384 unpromoted error %g", m);
            else ck_assert_msg(m < 0.05, "bf16 K=16384 promoted error %g", m);
            seen_bf16++;
        }
    }
    ck_assert_int_eq(seen_fp32, 11);
    ck_assert_int_eq(seen_bf16, 2);
    amp_csv_free(&c);
    /* deterministic: the same bytes twice (skipped under valgrind: make valgrind sets AMP_QUICK) */
    if (getenv("AMP_QUICK")) return;
    char *a = read_text(p, NULL);
    fp = fopen(p, "w");
    amp_bench_accum(fp, 1);
    fclose(fp);
    char *b = read_text(p, NULL);
    ck_assert(a && b && !strcmp(a, b));
    free(a);
    free(b);
}
END_TEST


static void check_png(const char *path)
{
    size_t n;
    unsigned char *d = (unsigned char *)read_text(path, &n);
    ck_assert_msg(d != NULL, "%s missing", path);
    ck_assert_msg(n > 33 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8) && !memcmp(d + 12, "IHDR", 4), "%s: not a PNG", path);
    uint32_t w = (uint32_t)d[16] << 24 | (uint32_t)d[17] << 16 | (uint32_t)d[18] << 8 | d[19];
    uint32_t h = (uint32_t)d[20] << 24 | (uint32_t)d[21] << 16 | (uint32_t)d[22] << 8 | d[23];
    ck_assert_msg(w == 1000 && h >= 300 && h < 5000, "%s: %ux%u", path, w, h);
    ck_assert_msg(n > 8000, "%s: only %zu bytes (blank figure?)", path, n);
    ck_assert_msg(!memcmp(d + n - 8, "IEND", 4), "%s: no IEND chunk at the end", path);
    free(d);
}

static void check_pdf(const char *path)
{
    size_t n;
    char *d = read_text(path, &n);
    ck_assert_msg(d != NULL, "%s missing", path);
    ck_assert_msg(n > 1000 && !memcmp(d, "%PDF-", 5), "%s: not a PDF", path);
    size_t tail = n > 64 ? n - 64 : 0;
    ck_assert_msg(memmem(d + tail, n - tail, "%%EOF", 5) != NULL, "%s: no %%%%EOF at the end", path);
    free(d);
}

static void check_svg(const char *path)
{
    size_t n;
    char *d = read_text(path, &n);
    ck_assert_msg(d != NULL, "%s missing", path);
    ck_assert_msg(n > 1000 && strstr(d, "<?xml") != NULL && strstr(d, "<svg") != NULL &&
                  strstr(d, "</svg>") != NULL, "%s: not an SVG document", path);
    free(d);
}

static void check_figure(const char *report, const char *id)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s.png", report, id); check_png(p);
    snprintf(p, sizeof p, "%s/%s.pdf", report, id); check_pdf(p);
    snprintf(p, sizeof p, "%s/%s.svg", report, id); check_svg(p);
}

START_TEST(report_of_a_run)
{
    char run[512], rep[600], args[1200];
    snprintf(run, sizeof run, "%s/run", tmpdir);
    make_run(run, "fp16-amp", "fp16", 20, -20, 4096);
    char *err;
    snprintf(args, sizeof args, "report '%s'", run);
    int rc = run_cli(args, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(*err == 0, "unexpected stderr: %s", err);
    free(err);
    snprintf(rep, sizeof rep, "%s/report", run);
    static const char *const figs[] = { "fig1_hist", "fig1_hist_tensors_1", "fig2_loss", "fig3_scale",
                                        "fig4_heat", "fig5_layers" };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) check_figure(rep, figs[i]);
    ck_assert_int_gt(check_links(rep), 30);
    check_no_tmp(run);
    char p[700];
    snprintf(p, sizeof p, "%s/index.html", rep);
    char *html = read_text(p, NULL);
    ck_assert(strstr(html, "First non-finite: step 7") != NULL);        /* the event */
    ck_assert(strstr(html, "fc1.out.grad") != NULL);
    ck_assert(strstr(html, "href=\"../hist.csv\"") != NULL);            /* its sources */
    ck_assert(strstr(html, "accum.csv") != NULL);                       /* why figure 6 is absent */
    ck_assert(strstr(html, "What-if") == NULL);                         /* no whatif.csv, no section */
    free(html);
    /* whatif.csv: figure 8 and the table of shadows with their summaries */
    snprintf(p, sizeof p, "%s/whatif.csv", run);
    write_text(p, "step,scaler,scale,skipped,flushed,overflow,n\n"
                  "0,none,1,0,40,0,100\n0,torch,65536,1,0,2,100\n0,\"deepspeed:init=2^20\",1048576,0,0,0,100\n"
                  "10,none,1,0,20,0,100\n10,torch,32768,0,1,0,100\n10,\"deepspeed:init=2^20\",524288,1,0,1,100\n");
    ck_assert_int_eq(run_cli(args, NULL), 0);
    check_figure(rep, "fig8_whatif");
    snprintf(p, sizeof p, "%s/index.html", rep);
    html = read_text(p, NULL);
    /* shadow, logged steps, final scale, skipped, mean flushed share, steps with overflow */
    ck_assert_msg(strstr(html, "<code>none</code></td><td>2</td><td>1</td><td>0</td><td>0.3</td><td>0</td>"), "%s", html);
    ck_assert(strstr(html, "<code>torch</code></td><td>2</td><td>32768</td><td>1</td><td>0.005</td><td>1</td>"));
    ck_assert(strstr(html, "<code>deepspeed:init=2^20</code></td><td>2</td><td>524288</td><td>1</td><td>0</td><td>1</td>"));
    ck_assert(strstr(html, "href=\"../whatif.csv\"") != NULL);
    free(html);
    snprintf(p, sizeof p, "%s/whatif.csv", run);
    unlink(p);
    /* the pooled histogram's data: percentages of all gradient values add up to 100 */
    snprintf(p, sizeof p, "%s/data/fig1_hist.dat", rep);
    FILE *fp = fopen(p, "r");
    ck_assert(fp != NULL);
    char line[256];
    int block = 0, blank = 0;
    double sum_u = 0, sum_spec = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        if (line[0] == '\n') { if (++blank == 2) { block++; blank = 0; } continue; }
        blank = 0;
        double x, y;
        if (sscanf(line, "%lf %lf", &x, &y) == 2 && !isnan(y)) {
            if (block == 0) sum_u += y;
            if (block == 2) sum_spec += y;
        }
    }
    fclose(fp);
    ck_assert_msg(fabs(sum_u + sum_spec - 100) < 1e-6, "percentages add up to %g", sum_u + sum_spec);
    /* --formats png: only PNG; a second report over the first works */
    snprintf(args, sizeof args, "report --formats png --quiet '%s'", run);
    ck_assert_int_eq(run_cli(args, NULL), 0);
    ck_assert_int_gt(check_links(rep), 10);
    /* trained with --log-every 0 --hist-every 0: header-only files; the per-tensor
     * figures are left out (and the old ones removed), the rest is drawn */
    snprintf(p, sizeof p, "%s/tensors.csv", run);
    write_text(p, "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n");
    snprintf(p, sizeof p, "%s/hist.csv", run);
    write_text(p, "step,tensor,binade,count\n");
    ck_assert_int_eq(run_cli(args, NULL), 0);
    check_links(rep);
    snprintf(p, sizeof p, "%s/fig2_loss.png", rep);
    check_png(p);
    snprintf(p, sizeof p, "%s/fig4_heat.png", rep);
    ck_assert_msg(access(p, F_OK) != 0, "stale figure left: %s", p);
    snprintf(p, sizeof p, "%s/index.html", rep);
    html = read_text(p, NULL);
    ck_assert(strstr(html, "tensors.csv has no rows") != NULL);
    free(html);
}
END_TEST

START_TEST(report_of_a_compare)
{
    char cmp[512], p[1024], rep[600], args[1200];
    snprintf(cmp, sizeof cmp, "%s/cmp", tmpdir);
    mkdir(cmp, 0777);
    snprintf(p, sizeof p, "%s/fp32", cmp); make_run(p, "fp32", "fp32", 20, -20, 1);
    snprintf(p, sizeof p, "%s/fp16-amp_none", cmp); make_run(p, "fp16-amp", "fp16", 20, -21, 1);
    snprintf(p, sizeof p, "%s/fp16-amp_static", cmp); make_run(p, "fp16-amp", "fp16", 20, -21, 4096);
    snprintf(p, sizeof p, "%s/fp8-hybrid_delayed", cmp); make_run(p, "fp8-hybrid", "e5m2", 20, -19, 1);
    /* a run that failed: its folder has only config.json, summary.csv says so */
    snprintf(p, sizeof p, "%s/broken", cmp);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/broken/config.json", cmp);
    write_text(p, "{\"precision\": \"fp16-pure\"}\n");
    snprintf(p, sizeof p, "%s/summary.csv", cmp);
    write_text(p, "name,precision,scaler,status,final_loss,max_abs_diff\nfp32,fp32,\"none\",ok,1,0\n"
                  "fp16-amp_none,fp16-amp,\"none\",ok,0.9,0.1\nfp16-amp_static,fp16-amp,\"static:4096\",ok,0.8,0.01\n"
                  "fp8-hybrid_delayed,fp8-hybrid,\"delayed\",ok,0.85,0.05\nbroken,fp16-pure,\"none\",failed,,\n");
    snprintf(p, sizeof p, "%s/accum.csv", cmp);
    FILE *fp = fopen(p, "w");
    fprintf(fp, "K,operands,accumulator,rounding,promote_every,trials,mean_rel_err,max_rel_err\n");
    for (int c = 0; c < 4; c++)
        for (int e = 4; e <= 14; e++)
            fprintf(fp, "%d,e4m3,%s,%s,%d,8,%.6e,%.6e\n", 1 << e, c < 2 ? "bf16" : "e8m13", c == 3 ? "rtz" : "rne",
                    c & 1 ? 128 : 0, ldexp(1, e - (c & 1 ? 20 : 14)), ldexp(1.5, e - (c & 1 ? 20 : 14)));
    fclose(fp);
    char *err;
    snprintf(args, sizeof args, "report --formats png,pdf,svg '%s'", cmp);
    int rc = run_cli(args, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(*err == 0, "unexpected stderr: %s", err);
    free(err);
    snprintf(rep, sizeof rep, "%s/report", cmp);
    static const char *const figs[] = { "fig1_hist_runs_1", "fig2_loss", "fig3_scale", "fig4_heat_fp32",
                                        "fig4_heat_fp16-amp_none", "fig4_heat_fp16-amp_static",
                                        "fig4_heat_fp8-hybrid_delayed", "fig5_layers", "fig6_accum" };
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) check_figure(rep, figs[i]);
    ck_assert_int_gt(check_links(rep), 50);
    check_no_tmp(cmp);
    snprintf(p, sizeof p, "%s/index.html", rep);
    char *html = read_text(p, NULL);
    ck_assert(strstr(html, "reference: <code>fp32</code> (precision fp32)") != NULL);
    ck_assert(strstr(html, "failed according to summary.csv and is left out: <code>broken</code>") != NULL);
    ck_assert(strstr(html, "<td>static:4096</td>") != NULL);             /* summary.csv as a table */
    free(html);
    /* the loss data: the reference first, |loss - ref| computed at equal steps */
    snprintf(p, sizeof p, "%s/data/fig2_loss.gp", rep);
    html = read_text(p, NULL);
    ck_assert(strstr(html, "array lbl[4] = [\"fp32\", \"fp16-amp_none\"") != NULL);
    free(html);
    /* per-layer figure: one line per non-reference run, layers fc1 and fc2 */
    snprintf(p, sizeof p, "%s/data/fig5_layers.gp", rep);
    html = read_text(p, NULL);
    ck_assert(strstr(html, "N = 3\nNL = 2\n") != NULL);
    free(html);
}
END_TEST

/* Corrupts one file of a fresh run directory, runs report, expects exit 2 and
 * a message naming `want`, and no index.html. */
static void expect_bad(const char *file, const char *content, const char *want)
{
    char run[512], p[1024], args[1200];
    static int k;
    snprintf(run, sizeof run, "%s/bad%d", tmpdir, k++);
    make_run(run, "fp16-amp", "fp16", 12, -20, 4096);
    snprintf(p, sizeof p, "%s/%s", run, file);
    if (content) write_text(p, content);
    else unlink(p);
    char *err;
    snprintf(args, sizeof args, "report '%s'", run);
    int rc = run_cli(args, &err);
    ck_assert_msg(rc == 2, "%s: exit %d (want 2), stderr: %s", file, rc, err);
    ck_assert_msg(strstr(err, want) != NULL, "%s: stderr '%s' does not name '%s'", file, err, want);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
    snprintf(p, sizeof p, "%s/report/index.html", run);
    ck_assert_msg(access(p, F_OK) != 0, "index.html written for a bad run");
    check_no_tmp(run);
}

START_TEST(bad_inputs_exit_2_naming_the_file)
{
    expect_bad("metrics.csv", NULL, "metrics.csv");
    expect_bad("tensors.csv", NULL, "tensors.csv");
    expect_bad("hist.csv", NULL, "hist.csv");
    expect_bad("events.csv", NULL, "events.csv");
    expect_bad("config.json", "{\"precision\": \"fp16-amp\",\n", "config.json");
    expect_bad("metrics.csv", "step,loss,loss_scale,skipped\n0,2.3,1,0\n1,abc,1,0\n", "metrics.csv:3: column 'loss': 'abc'");
    expect_bad("metrics.csv", "step,loss,skipped\n0,2.3,0\n", "metrics.csv:1: header lacks column 'loss_scale'");
    expect_bad("metrics.csv", "step,loss,loss_scale,skipped\n0,2.3,1,0\n0,2.2,1,0\n", "metrics.csv:3: step 0");
    expect_bad("metrics.csv", "step,loss,loss_scale,skipped\n", "metrics.csv:2: no data rows");
    expect_bad("tensors.csv",
               "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n"
               "0,fc1.weight.grad,weight_grad,fp16,100,0,0,0,0,0,0,1,0.1,0\n0,fc1.out.grad,act_grad,fp16,100,0,0\n",
               "tensors.csv:3: 7 fields");
    expect_bad("tensors.csv",
               "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n"
               "0,fc1.weight.grad,weight_grad,fp99,100,0,0,0,0,0,0,1,0.1,0\n", "tensors.csv:2: column 'format'");
    expect_bad("tensors.csv",
               "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n"
               "0,fc1.weight.grad,weight_grad,fp16,10,0,8,8,0,0,0,1,0.1,0\n", "tensors.csv:2: class counts");
    expect_bad("hist.csv", "step,tensor,binade,count\n0,fc1.weight.grad,huge,3\n", "hist.csv:2: column 'binade'");
    expect_bad("hist.csv", "step,tensor,binade,count\n0,nosuch.grad,-3,3\n", "hist.csv:2: tensor 'nosuch.grad'");
    expect_bad("hist.csv", "step,tensor,binade,count\n0,fc1.weight.grad,-3,-1\n", "hist.csv:2: column 'count'");
    expect_bad("events.csv", "step,event\n", "events.csv:1: header lacks column 'tensor'");
    expect_bad("whatif.csv", "step,scaler,scale,skipped,flushed,overflow\n", "whatif.csv:1: header lacks column 'n'");
    expect_bad("whatif.csv", "step,scaler,scale,skipped,flushed,overflow,n\n0,torch,65536,0,3,0,10\n"
                             "0,apex,nan,0,0,0,10\n", "whatif.csv:3: scale");
    expect_bad("whatif.csv", "step,scaler,scale,skipped,flushed,overflow,n\n0,torch,1,0,8,3,10\n",
               "whatif.csv:2: flushed + overflow > n=10");
    expect_bad("whatif.csv", "step,scaler,scale,skipped,flushed,overflow,n\n5,torch,1,0,0,0,10\n"
                             "4,torch,1,0,0,0,10\n", "whatif.csv:3: step 4 after step 5");
    expect_bad("accum.csv", "", "accum.csv:1: empty");
    expect_bad("accum.csv", "K,operands,accumulator,rounding,promote_every,trials,mean_rel_err,max_rel_err\n"
                            "16,e4m3,bf16,rne,0,4,oops,1\n", "accum.csv:2: column 'mean_rel_err'");
}
END_TEST

START_TEST(bad_compare_and_usage)
{
    char cmp[512], p[1024], args[1200];
    snprintf(cmp, sizeof cmp, "%s/cmpbad", tmpdir);
    mkdir(cmp, 0777);
    snprintf(p, sizeof p, "%s/fp32", cmp); make_run(p, "fp32", "fp32", 10, -20, 1);
    snprintf(p, sizeof p, "%s/fp16", cmp); make_run(p, "fp16-amp", "fp16", 10, -20, 1);
    snprintf(p, sizeof p, "%s/summary.csv", cmp);
    write_text(p, "precision,scaler\nfp16-amp,none\n");
    snprintf(p, sizeof p, "%s/fp16/tensors.csv", cmp);
    write_text(p, "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n"
                  "0,fc1.weight.grad,weight_grad,fp16,100,0,0,0,0,0,0,1,0.1,0\n5,fc1.weight.grad,weight_grad,fp16,100,0,0");
    char *err;
    snprintf(args, sizeof args, "report '%s'", cmp);
    ck_assert_int_eq(run_cli(args, &err), 2);
    ck_assert_msg(strstr(err, "fp16/tensors.csv:3:") != NULL, "%s", err);
    free(err);
    /* a truncated summary.csv */
    snprintf(p, sizeof p, "%s/summary.csv", cmp);
    write_text(p, "precision,scaler\nfp16-amp\n");
    ck_assert_int_eq(run_cli(args, &err), 2);
    ck_assert_msg(strstr(err, "summary.csv:2:") != NULL, "%s", err);
    free(err);
    /* usage */
    ck_assert_int_eq(run_cli("report", &err), 2);
    ck_assert_msg(strstr(err, "missing DIR") != NULL, "%s", err);
    free(err);
    snprintf(args, sizeof args, "report --formats png,gif '%s'", cmp);
    ck_assert_int_eq(run_cli(args, &err), 2);
    ck_assert_msg(strstr(err, "gif") != NULL, "%s", err);
    free(err);
    snprintf(args, sizeof args, "report '%s/nowhere'", tmpdir);
    ck_assert_int_eq(run_cli(args, &err), 2);
    ck_assert_msg(strstr(err, "nowhere") != NULL, "%s", err);
    free(err);
    ck_assert_int_eq(run_cli("report --help", NULL), 0);
    /* gnuplot missing: a clear message, not a blank report */
    snprintf(p, sizeof p, "%s/fp32", cmp);
    snprintf(args, sizeof args, "report --gnuplot /nonexistent/gnuplot '%s'", p);
    ck_assert_int_eq(run_cli(args, &err), 2);
    ck_assert_msg(strstr(err, "gnuplot not found") != NULL, "%s", err);
    free(err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("csv");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, csv_reads_quotes_crlf_and_trailing_blank_lines);
    tcase_add_test(tc, csv_errors_name_file_and_line);
    suite_add_tcase(s, tc);
    tc = tcase_create("accum");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, accum_experiment);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, report_of_a_run);
    tcase_add_test(tc, report_of_a_compare);
    tcase_add_test(tc, bad_inputs_exit_2_naming_the_file);
    tcase_add_test(tc, bad_compare_and_usage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
