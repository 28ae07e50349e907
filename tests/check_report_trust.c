/* Tests of what the report says, on run, compare and sweep folders written
 * here: non-finite values counted alike in figures, tables and findings,
 * repeated events collapsed, the loss figure's true start and its non-finite
 * marks, divergence flagged; links that resolve from wherever --out puts the
 * page, the viewport tag, wide tables folded; identical runs merged, ties
 * below the noise floor, validation loss drawn and used, configurations as a
 * difference; sweeps paired per seed; paper-sized PDF/SVG and the redraw
 * command that remakes the page's figure byte for byte. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ampsim.h"
#include "report_test.h"

/* metrics.csv of n steps: loss(s) = 2.3 exp(-0.05 s) + off + amp sin(w s),
 * loss scale S, a val_loss every 10 steps when val (the loss + 0.1). */
static void write_metrics(const char *dir, int n, double off, double amp, double w, double S, int val)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    FILE *fp = fopen(p, "w");
    ck_assert(fp != NULL);
    fprintf(fp, "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite%s\n", val ? ",val_loss" : "");
    for (int s = 0; s < n; s++) {
        double l = 2.3 * exp(-0.05 * s) + off + amp * sin(w * s);
        fprintf(fp, "%d,%.9g,%g,0,0.5,0.1,0,0", s, l, S);
        if (val) { if (s % 10 == 9) fprintf(fp, ",%.9g", l + 0.1); else fputc(',', fp); }
        fputc('\n', fp);
    }
    fclose(fp);
}

static char *page(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/index.html", dir);
    char *h = read_text(p, NULL);
    ck_assert_msg(h != NULL, "%s missing", p);
    return h;
}

static void report_ok(const char *args)
{
    char *err;
    int rc = run_cli(args, &err);
    ck_assert_msg(rc == 0, "report %s: exit %d: %s", args, rc, err);
    free(err);
}

START_TEST(nonfinite_counted_alike)
{
    char run[512], p[1024], args[1200];
    snprintf(run, sizeof run, "%s/bad", tmpdir);
    make_run(run, "fp16-amp", "fp16", 20, -20, 1);
    snprintf(p, sizeof p, "%s/metrics.csv", run);   /* finite at steps 0 and 1, NaN from step 2 */
    FILE *fp = fopen(p, "w");
    fprintf(fp, "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite\n0,2.25,1,0,1,100,0,0\n1,80,1,0,1,100,0,0\n");
    for (int s = 2; s < 20; s++) fprintf(fp, "%d,nan,1,0,nan,100,0,1\n", s);
    fclose(fp);
    snprintf(p, sizeof p, "%s/tensors.csv", run);   /* nothing flushed or overflowed: every value NaN from step 5 */
    fp = fopen(p, "w");
    fprintf(fp, "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n");
    static const char *const names[] = { "fc1.weight.grad", "fc1.bias.grad", "fc2.weight.grad", "fc1.out.grad" };
    for (int s = 0; s < 20; s += 5)
        for (int t = 0; t < 4; t++)
            fprintf(fp, "%d,%s,%s,fp16,100,0,0,0,0,0,%d,1,0.1,0\n", s, names[t], t < 3 ? "weight_grad" : "act_grad", s ? 100 : 0);
    fclose(fp);
    snprintf(p, sizeof p, "%s/hist.csv", run);
    write_text(p, "step,tensor,binade,count\n0,fc1.weight.grad,-3,100\n");
    snprintf(p, sizeof p, "%s/events.csv", run);
    fp = fopen(p, "w");
    fprintf(fp, "step,event,tensor,detail\n2,first_nonfinite,fc2.out,forward; 26 values\n");
    for (int s = 3; s < 20; s++) fprintf(fp, "%d,nonfinite,fc1.weight,forward; %d values\n", s, 300 + s);
    fclose(fp);
    snprintf(args, sizeof args, "report --formats png --quiet '%s'", run);
    report_ok(args);
    snprintf(p, sizeof p, "%s/report", run);
    char *h = page(p);
    /* Figure 4 is drawn (NaN counts as overflow), Figure 5 names the NaN values, Findings counts them */
    ck_assert_msg(strstr(h, "src=\"fig4_heat.png\"") != NULL, "Figure 4 not drawn for an all-NaN run");
    ck_assert(strstr(h, "counted apart from the flushed ones: bad: 900</b>") != NULL);
    ck_assert_msg(strstr(h, "1200 logged values not finite (NaN or inf)") != NULL, "%s", strstr(h, "Findings"));
    ck_assert(strstr(h, "Diverged: its loss ended not finite") != NULL);
    /* the summary says it in words; the 17 repeated events are one line */
    ck_assert(strstr(h, "<td><b class=warn>not finite (NaN)</b></td>") != NULL);
    ck_assert(strstr(h, ">-nan<") == NULL && strstr(h, ">nan<") == NULL);
    ck_assert_msg(strstr(h, "<tr><td>3–19</td><td>nonfinite ×17</td><td>fc1.weight</td><td>forward; 303 values</td></tr>"),
                  "events not collapsed");
    free(h);
    /* Figure 2: the curve starts at the true first loss; NaN steps are marked (column 6) */
    snprintf(p, sizeof p, "%s/report/data/fig2_loss.dat", run);
    fp = fopen(p, "r");
    ck_assert(fp != NULL);
    char line[512];
    int marks = 0, first = 1;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        double c[7];
        char m[6][32];
        ck_assert(sscanf(line, "%lf %31s %31s %31s %31s %31s %31s", &c[0], m[0], m[1], m[2], m[3], m[4], m[5]) == 7);
        if (first) ck_assert_msg(!strcmp(m[2], "2.25"), "the curve starts at %s, not at the step-0 loss 2.25", m[2]);
        first = 0;
        marks += !strcmp(m[4], "1");
        if (c[0] >= 2) ck_assert_msg(!strcmp(m[2], "NaN"), "a mean drawn at NaN step %g: %s", c[0], m[2]);
    }
    fclose(fp);
    ck_assert_int_eq(marks, 18);
}
END_TEST

START_TEST(divergence_flagged)
{
    char run[512], p[1024], args[1200];
    snprintf(run, sizeof run, "%s/up", tmpdir);          /* ends above where it started */
    make_run(run, "fp32", "fp32", 40, -20, 1);
    snprintf(p, sizeof p, "%s/metrics.csv", run);
    FILE *fp = fopen(p, "w");
    fprintf(fp, "step,loss,loss_scale,skipped\n");
    for (int s = 0; s < 40; s++) fprintf(fp, "%d,%g,1,0\n", s, s < 20 ? 2.3 - 0.05 * s : 1.3 + 0.15 * (s - 20));
    fclose(fp);
    snprintf(args, sizeof args, "report --formats png --quiet '%s'", run);
    report_ok(args);
    char rep[600];
    snprintf(rep, sizeof rep, "%s/report", run);
    char *h = page(rep);
    ck_assert_msg(strstr(h, "Diverged: its loss ended above where it started") != NULL, "%s", strstr(h, "Findings"));
    free(h);
    /* below its start, but rising after the first overflow (step 10 in tensors.csv) */
    snprintf(p, sizeof p, "%s/metrics.csv", run);
    fp = fopen(p, "w");
    fprintf(fp, "step,loss,loss_scale,skipped\n");
    for (int s = 0; s < 40; s++) fprintf(fp, "%d,%g,1,0\n", s, s <= 10 ? 2.3 - 0.13 * s : 1.0 + 0.02 * (s - 10));
    fclose(fp);
    report_ok(args);
    h = page(rep);
    ck_assert_msg(strstr(h, "Diverged: its loss rose after the first overflow at step 10") != NULL, "%s", strstr(h, "Findings"));
    free(h);
    /* a run that learns is not flagged */
    write_metrics(run, 40, 0, 0, 0, 1, 0);
    report_ok(args);
    h = page(rep);
    ck_assert(strstr(h, "Diverged") == NULL);
    free(h);
}
END_TEST

/* A compare folder: ref; a and b trained alike (b: another loss scale, the same
 * losses); d within the noise of a; c 0.2 above the reference. Each has
 * validation losses; b's and d's configs differ from the reference's. */
static void make_compare(const char *cmp)
{
    char p[1024];
    mkdir(cmp, 0777);
    static const struct { const char *name, *prec, *scaler; double off, amp, w, S; } r[] = {
        { "ref", "fp32", "none", 0, 0.01, 0.7, 1 },         { "fp16-amp__a", "fp16-amp", "none", 1e-4, 0.012, 1.7, 1 },
        { "fp16-amp__b", "fp16-amp", "static:1024", 1e-4, 0.012, 1.7, 1024 },
        { "fp16-amp__d", "fp16-amp", "torch", -1e-4, 0.012, 2.9, 1 }, { "fp16-amp__c", "fp16-amp", "apex", 0.2, 0.01, 1.3, 1 },
    };
    FILE *sum;
    snprintf(p, sizeof p, "%s/summary.csv", cmp);
    sum = fopen(p, "w");
    fprintf(sum, "name,precision,scaler,status,steps,final_loss,max_abs_diff,mean_abs_diff,skipped_steps,"
                 "mean_flushed_frac_grads,first_divergence_step,tail_mean_loss,tail_diff,loss_scaler,fp8_scaling,same_as\n");
    for (int i = 0; i < 5; i++) {
        char d[800];
        snprintf(d, sizeof d, "%s/%s", cmp, r[i].name);
        make_run(d, r[i].prec, r[i].prec[0] == 'f' && r[i].prec[2] == '6' ? "fp16" : "fp32", 40, -20, 1);
        write_metrics(d, 40, r[i].off, r[i].amp, r[i].w, r[i].S, 1);
        snprintf(p, sizeof p, "%s/config.json", d);
        FILE *fp = fopen(p, "w");
        fprintf(fp, "{\"precision\": \"%s\", \"scaler\": \"%s\", \"lr\": 0.1, \"steps\": 40}\n", r[i].prec, r[i].scaler);
        fclose(fp);
        fprintf(sum, "%s,%s,\"%s\",ok,40,1,0,0,0,0,,1,0,\"%s\",\"none\",%s\n", r[i].name, r[i].prec, r[i].scaler,
                r[i].scaler, i == 2 ? "fp16-amp__a" : "");
    }
    fclose(sum);
}

START_TEST(verdict_respects_noise)
{
    char cmp[512], p[1024], args[1200];
    snprintf(cmp, sizeof cmp, "%s/cmp", tmpdir);
    make_compare(cmp);
    snprintf(args, sizeof args, "report --formats png --quiet '%s'", cmp);
    report_ok(args);
    snprintf(p, sizeof p, "%s/report", cmp);
    char *h = page(p);
    char *f = strstr(h, "<h2 id=findings>");
    ck_assert(f != NULL);
    /* a = b is one entry; a and d tie; c is third */
    ck_assert_msg(strstr(f, "<li>1=. <b>fp16-amp__a</b> (fp16-amp, no loss scaling) = <b>fp16-amp__b</b>") != NULL, "%s", f);
    ck_assert_msg(strstr(f, "<li>1=. <b>fp16-amp__d</b>") != NULL, "%s", f);
    ck_assert_msg(strstr(f, "<li>3. <b>fp16-amp__c</b>") != NULL, "%s", f);
    ck_assert(strstr(f, "<li>2") == NULL);
    ck_assert(strstr(f, "loss within the noise of the reference") != NULL);
    ck_assert_msg(strstr(f, "validation loss 0.") != NULL, "validation loss not used");
    /* configurations: the reference's in full, the others as what differs */
    ck_assert(strstr(h, "scaler: &quot;none&quot; → &quot;static:1024&quot;") != NULL);
    ck_assert(strstr(h, "precision: &quot;fp32&quot; → &quot;fp16-amp&quot;") != NULL);
    ck_assert(strstr(h, "\"lr\": 0.1") == NULL || strstr(h, "(the reference)") != NULL);
    /* the summary table: key columns, all 16 under details; the viewport tag */
    ck_assert(strstr(h, "<details><summary>All 16 columns</summary>") != NULL);
    ck_assert(strstr(h, "<meta name=viewport content=\"width=device-width, initial-scale=1\">") != NULL);
    free(h);
    /* Figure 2: b drawn once, labelled with a; the validation losses in column 7 */
    snprintf(p, sizeof p, "%s/report/data/fig2_loss.gp", cmp);
    h = read_text(p, NULL);
    ck_assert_msg(strstr(h, "N = 4\n") && strstr(h, "hasval = 1\n") && strstr(h, "\"fp16-amp__a = fp16-amp__b\""), "%s", h);
    free(h);
    snprintf(p, sizeof p, "%s/report/data/fig2_loss.dat", cmp);
    h = read_text(p, NULL);
    ck_assert(strstr(h, "\n9 ") != NULL);
    free(h);
}
END_TEST

START_TEST(links_survive_out)
{
    char cmp[512], out[600], args[2000];
    snprintf(cmp, sizeof cmp, "%s/cmp", tmpdir);
    make_compare(cmp);
    snprintf(out, sizeof out, "%s/pages/a/b", tmpdir);
    snprintf(args, sizeof args, "report --formats png --quiet '%s' --out '%s'", cmp, out);
    report_ok(args);
    ck_assert_int_gt(check_links(out), 60);
    char *h = page(out);
    ck_assert_msg(strstr(h, "href=\"/") == NULL && strstr(h, "href=\"../../../cmp/summary.csv\"") != NULL, "absolute or wrong links");
    free(h);
    /* a run folder, and an overlay, elsewhere */
    snprintf(out, sizeof out, "%s/one", tmpdir);
    snprintf(args, sizeof args, "report --formats png --quiet '%s/ref' --out '%s'", cmp, out);
    report_ok(args);
    ck_assert_int_gt(check_links(out), 20);
    snprintf(out, sizeof out, "%s/over/lay", tmpdir);
    snprintf(args, sizeof args, "report --formats png --quiet '%s/ref' '%s' --out '%s'", cmp, cmp, out);
    report_ok(args);
    ck_assert_int_gt(check_links(out), 60);
}
END_TEST

/* A sweep folder: seeds 1 and 2, one group each; per seed a reference and
 * three configurations, "noisy" (paired gaps 0.001, 0.004: within the seed
 * noise), "worse" (0.05, 0.052) and "twin" (the same runs as noisy: same_as). */
START_TEST(sweep_paired_per_seed)
{
    char sw[512], p[1200], args[1400];
    snprintf(sw, sizeof sw, "%s/sweep", tmpdir);
    mkdir(sw, 0777);
    static const char *const cfg[4] = { "ref", "noisy", "worse", "twin" };
    double gap[2][4] = { { 0, 0.001, 0.05, 0.001 }, { 0, 0.004, 0.052, 0.004 } };
    snprintf(p, sizeof p, "%s/summary.csv", sw);
    FILE *top = fopen(p, "w");
    fprintf(top, "group,seed,name,status,final_loss,tail_mean_loss,mean_flushed_frac_grads,tail_diff,same_as\n");
    for (int s = 0; s < 2; s++) {
        char g[700];
        snprintf(g, sizeof g, "%s/seed%d", sw, s + 1);
        mkdir(g, 0777);
        snprintf(p, sizeof p, "%s/summary.csv", g);
        FILE *gs = fopen(p, "w");
        fprintf(gs, "name,status\n");
        for (int c = 0; c < 4; c++) {
            snprintf(p, sizeof p, "%s/%s", g, cfg[c]);
            make_run(p, c ? "fp16-amp" : "fp32", c ? "fp16" : "fp32", 20, -20, 1);
            fprintf(gs, "%s,ok\n", cfg[c]);
            fprintf(top, "seed%d,%d,%s,ok,0.5,%.6g,0.02,%.6g,%s\n", s + 1, s + 1, cfg[c], 0.5 + gap[s][c], gap[s][c],
                    c == 3 ? "noisy" : "");
        }
        fclose(gs);
    }
    fclose(top);
    char out[600];
    snprintf(out, sizeof out, "%s/elsewhere/sw", tmpdir);
    snprintf(args, sizeof args, "report --formats png --quiet '%s' --out '%s'", sw, out);
    report_ok(args);
    ck_assert_int_gt(check_links(out), 4);
    char *h = page(out);
    ck_assert_msg(strstr(h, "<b>noisy</b> = <b>twin</b> (all): gap +0.0025 ± 0.0021 over 2 seeds: <b>no effect beyond seed noise</b>"),
                  "%s", strstr(h, "Findings"));
    ck_assert(strstr(h, "<b>worse</b> (all): <b>loss above the reference by 0.051 ± 0.0014</b> over 2 seeds"));
    ck_assert(strstr(h, "<th>flushed (%) mean</th>") && strstr(h, "<td>2</td>"));   /* percent, as in Figure 7 */
    ck_assert(strstr(h, "href=\"../../sweep/seed1/report/index.html\"") != NULL);
    ck_assert(strstr(h, "<li><b>twin") == NULL);
    free(h);
    snprintf(p, sizeof p, "%s/data/fig7_sweep.gp", out);
    h = read_text(p, NULL);
    ck_assert_msg(strstr(h, "array lbl[3] = [\"ref\", \"noisy = twin\", \"worse\"]") != NULL, "%s", h);
    free(h);
    snprintf(p, sizeof p, "%s/data/fig7_sweep.dat", out);
    h = read_text(p, NULL);
    ck_assert_msg(strstr(h, " 0.0025 0.00212132034 2 0\n") != NULL, "%s", h);   /* gap mean, sd, flushed % */
    free(h);
}
END_TEST

START_TEST(paper_figures_and_redraw)
{
    char run[512], p[2400], args[1400];
    snprintf(run, sizeof run, "%s/run", tmpdir);
    make_run(run, "fp16-amp", "fp16", 20, -20, 4096);
    snprintf(args, sizeof args, "report --formats png,pdf,svg --figsize column --quiet '%s'", run);
    report_ok(args);
    snprintf(p, sizeof p, "%s/report/fig2_loss.pdf", run);
    size_t n;
    char *d = read_text(p, &n);
    ck_assert_msg(d && memmem(d, n, "/MediaBox [ 0 0 252 ", 20), "not 3.5 in wide");
    free(d);
    snprintf(p, sizeof p, "%s/report/fig2_loss.svg", run);
    d = read_text(p, NULL);
    ck_assert_msg(d && strstr(d, "width=\"252\""), "svg not 252 pt wide");
    free(d);
    snprintf(args, sizeof args, "report --formats pdf --figsize wide --quiet '%s'", run);
    report_ok(args);
    snprintf(p, sizeof p, "%s/report/fig2_loss.pdf", run);
    d = read_text(p, &n);
    ck_assert_msg(d && memmem(d, n, "/MediaBox [ 0 0 504 ", 20), "not 7 in wide");
    free(d);
    ck_assert_int_eq(run_cli("report --figsize huge x", NULL), 2);
    /* the PNG's command on the page, run in a copy of the folder, remakes the same bytes */
    snprintf(p, sizeof p, "%s/report", run);
    char *h = page(p), *c = strstr(h, "<pre>gnuplot -e &quot;set terminal pngcairo"), cmd[1200];
    ck_assert(c != NULL);
    size_t o = 0;
    for (c += 5; *c != '<' && o + 1 < sizeof cmd; c++) {
        if (!strncmp(c, "&quot;", 6)) { cmd[o++] = '"'; c += 5; }
        else if (!strncmp(c, "&amp;", 5)) { cmd[o++] = '&'; c += 4; }
        else cmd[o++] = *c;
    }
    cmd[o] = 0;
    free(h);
    ck_assert_msg(strstr(cmd, "noenhanced") && strstr(cmd, "size 1000,") && strstr(cmd, "fig1_hist.png"), "%s", cmd);
    snprintf(p, sizeof p, "cp -r '%s/report' '%s/redo' && cd '%s/redo' && rm fig1_hist.png && %s", run, tmpdir, tmpdir, cmd);
    ck_assert_int_eq(system(p), 0);
    size_t n1, n2;
    snprintf(p, sizeof p, "%s/report/fig1_hist.png", run);
    char *a = read_text(p, &n1);
    snprintf(p, sizeof p, "%s/redo/fig1_hist.png", tmpdir);
    char *b = read_text(p, &n2);
    ck_assert_msg(a && b && n1 == n2 && !memcmp(a, b, n1), "the redraw command made a different file");
    free(a);
    free(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report_trust");
    TCase *tc = tcase_create("report_trust");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, nonfinite_counted_alike);
    tcase_add_test(tc, divergence_flagged);
    tcase_add_test(tc, verdict_respects_noise);
    tcase_add_test(tc, links_survive_out);
    tcase_add_test(tc, sweep_paired_per_seed);
    tcase_add_test(tc, paper_figures_and_redraw);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
