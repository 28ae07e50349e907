/* Check suite: `ampsim compare` — planning, SPEC-list splitting, fairness (each
 * run equals the same configuration trained alone), summary.csv figures
 * recomputed here from the runs' metrics.csv, resume, and bad input. */
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void setup(void) { ct_mkdtemp("check_compare"); }
static void teardown(void) { ct_rmtree(); }

/* The losses of a metrics.csv, parsed here with sscanf (not the library's reader). */
static int losses(const char *rel, double *out, int max)
{
    char *d = slurp(rel), *line = strchr(d, '\n');
    int n = 0;
    while (line && line[1] && n < max) {
        int step;
        double loss;
        ck_assert(sscanf(line + 1, "%d,%lf", &step, &loss) == 2);
        ck_assert_int_eq(step, n);
        out[n++] = loss;
        line = strchr(line + 1, '\n');
    }
    free(d);
    return n;
}

START_TEST(split_specs)
{
    char s[8][256];
    int n = amp_compare_split_specs("none,torch:init=1024,interval=3,static:8;delayed:history=16,margin=1", s, 8);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(s[0], "none");
    ck_assert_str_eq(s[1], "torch:init=1024,interval=3");
    ck_assert_str_eq(s[2], "static:8");
    ck_assert_str_eq(s[3], "delayed:history=16,margin=1");
}
END_TEST

START_TEST(plan_pairs)
{
    amp_run_cfg *r;
    int n;
    ck_assert_int_eq(amp_compare_plan("fp16-amp,fp8-hybrid", "none,delayed,current", NULL, 0, "fp32", &r, &n), AMP_OK);
    /* ref, fp16-amp x none, fp8-hybrid x {none (= delayed), current}; fp16-amp x delayed makes no sense */
    ck_assert_int_eq(n, 4);
    ck_assert(r[0].is_ref);
    ck_assert_str_eq(r[0].name, "ref");
    ck_assert_str_eq(r[1].name, "fp16-amp__none");
    ck_assert_str_eq(r[2].name, "fp8-hybrid__none__delayed");
    ck_assert_str_eq(r[3].name, "fp8-hybrid__none__current");
    ck_assert_str_eq(r[3].loss_scaler, "none");
    ck_assert_str_eq(r[3].fp8, "current");
    ck_assert_str_eq(r[1].fp8, "");
    free(r);
    /* every pair that is not run is named with its reason */
    char *dropped = NULL;
    ck_assert_int_eq(amp_compare_plan_dropped("fp16-amp,fp8-hybrid", "none,delayed,current", NULL, 0, "fp32", &r, &n,
                                              &dropped), AMP_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_ptr_nonnull(dropped);
    ck_assert_msg(strstr(dropped, "fp16-amp with delayed: not run") && strstr(dropped, "fp16-amp with current: not run") &&
                  strstr(dropped, "fp8-hybrid with delayed: the same run as fp8-hybrid with none"), "%s", dropped);
    free(dropped);
    free(r);
    ck_assert_int_eq(amp_compare_plan("fp16-amp", "torch:nosuchkey=1", NULL, 0, "fp32", &r, &n), AMP_EINVAL);
    ck_assert_int_eq(amp_compare_plan("fp17-amp", "none", NULL, 0, "fp32", &r, &n), AMP_EINVAL);
    char *extra[] = { "fp16-amp@current" };
    ck_assert_int_eq(amp_compare_plan(NULL, NULL, extra, 1, "fp32", &r, &n), AMP_EINVAL);
}
END_TEST

#define TRAIN "--layers 3 --hidden 16 --steps 30 --batch 16 --log-every 5 --hist-every 0 --seed 3"

START_TEST(compare_runs_fair_and_summarised)
{
    ck_assert_int_eq(run("compare --precisions fp16-amp --scalers 'none,static:4096' --jobs 2 " TRAIN " --out cmp"), 0);
    /* fairness: a run inside compare is byte-identical to the same configuration alone */
    ck_assert_int_eq(run("train --precision fp16-amp --scaler static:4096 " TRAIN " --out alone"), 0);
    char *a = slurp("alone/metrics.csv"), *b = slurp("cmp/fp16-amp__static-4096/metrics.csv");
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    /* summary.csv: recompute final loss and max/mean |loss - ref| from the metrics */
    double ref[64], l[64];
    int nr = losses("cmp/ref/metrics.csv", ref, 64), nl = losses("cmp/fp16-amp__none/metrics.csv", l, 64);
    ck_assert_int_eq(nr, 30);
    ck_assert_int_eq(nl, 30);
    double mx = 0, sum = 0;
    for (int i = 0; i < 30; i++) {
        double d = fabs(l[i] - ref[i]);
        mx = d > mx ? d : mx;
        sum += d;
    }
    char *s = slurp("cmp/summary.csv");
    static const char head[] = "name,precision,scaler,status,steps,final_loss,max_abs_diff,mean_abs_diff,"
                               "skipped_steps,mean_flushed_frac_grads,first_divergence_step,tail_mean_loss,tail_diff,"
                               "loss_scaler,fp8_scaling,same_as\n";
    ck_assert_msg(!strncmp(s, head, strlen(head)), "%s", s);
    char *row = strstr(s, "\nfp16-amp__none,");
    ck_assert_msg(row != NULL, "%s", s);
    double fin, dmax, dmean;
    int steps;
    ck_assert(sscanf(row, "\nfp16-amp__none,fp16-amp,\"none\",ok,%d,%lf,%lf,%lf", &steps, &fin, &dmax, &dmean) == 4);
    ck_assert_int_eq(steps, 30);
    ck_assert(fabs(fin - l[29]) <= 1e-8 * fabs(l[29]));
    ck_assert(fabs(dmax - mx) <= 1e-8 + 1e-7 * mx);
    ck_assert(fabs(dmean - sum / 30) <= 1e-8 + 1e-7 * dmean);
    /* tail_mean_loss, tail_diff: mean loss of steps 23..29 (the last quarter, 7 steps)
     * and its difference to the reference's */
    double tl = 0, tr = 0, tail, tdiff;
    for (int i = 23; i < 30; i++) tl += l[i] / 7, tr += ref[i] / 7;
    char *eol = strchr(row + 1, '\n'), *c = eol;
    ck_assert(eol != NULL);
    for (int k = 0; k < 5; k++)   /* then loss_scaler, fp8_scaling, same_as */
        do c--; while (*c != ',');
    ck_assert(sscanf(c, ",%lf,%lf", &tail, &tdiff) == 2);
    ck_assert_msg(fabs(tail - tl) <= 1e-7 * tl && fabs(tdiff - (tl - tr)) <= 1e-7 * tl, "%g %g vs %g %g", tail, tdiff, tl, tl - tr);
    ck_assert(strstr(s, "\nref,fp32,\"none\",ok,30,") != NULL);
    free(s);
    /* resume: the same command runs nothing again and writes the same summary */
    struct stat before, after;
    char p[600];
    snprintf(p, sizeof p, "%s/cmp/ref/metrics.csv", tmpdir);
    ck_assert(stat(p, &before) == 0);
    char *s1 = slurp("cmp/summary.csv");
    ck_assert_int_eq(run("compare --precisions fp16-amp --scalers 'none,static:4096' --jobs 2 " TRAIN " --out cmp"), 0);
    ck_assert(stat(p, &after) == 0);
    ck_assert(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
    char *s2 = slurp("cmp/summary.csv");
    ck_assert_str_eq(s1, s2);
    free(s1);
    free(s2);
}
END_TEST

START_TEST(compare_bad_input)
{
    ck_assert_int_eq(run("compare --precisions fp16-amp --scalers 'torch:bogus=1' --out x"), 2);
    char *e = slurp("err");
    ck_assert_msg(strstr(e, "bogus") != NULL, "%s", e);
    free(e);
    ck_assert_int_eq(run("compare --precisions nope --out x"), 2);
    ck_assert_int_eq(run("compare --precisions fp16-amp"), 2);          /* no --out */
    ck_assert_int_eq(run("compare --precisions fp16-amp --precision fp32 --out x"), 2);
    ck_assert_int_eq(run("compare --precisions fp16-amp --jobs 0 --out x"), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("compare");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, split_specs);
    tcase_add_test(tc, plan_pairs);
    tcase_add_test(tc, compare_runs_fair_and_summarised);
    tcase_add_test(tc, compare_bad_input);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
