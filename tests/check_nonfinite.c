/* Check suite: --on-nonfinite continue|skip|stop on a model diverging to NaN
 * (SGD with lr 1e30: the first update blows the weights up), a loss scale
 * collapsing to 0 (torch's scaler backs off on every non-finite step), and
 * NaN in the data (exit 2 at load, naming file:line). */
#include "cli_test.h"

#include <check.h>
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

static void setup(void) { ct_mkdtemp("check_nonfinite"); }
static void teardown(void) { ct_rmtree(); }

/* Counts metrics.csv rows and those with skipped == 1 (column 4). */
static void metrics(const char *dir, int *rows, int *skipped)
{
    char rel[300];
    snprintf(rel, sizeof rel, "%s/metrics.csv", dir);
    char *d = slurp(rel), *line = strchr(d, '\n');
    *rows = *skipped = 0;
    while (line && line[1]) {
        int step, sk;
        char loss[64], scale[64];
        ck_assert(sscanf(line + 1, "%d,%63[^,],%63[^,],%d", &step, loss, scale, &sk) == 4);
        (*rows)++;
        *skipped += sk;
        line = strchr(line + 1, '\n');
    }
    free(d);
}

#define DIVERGE "train --lr 1e30 --steps 6 --log-every 0 --hist-every 0"

START_TEST(diverging_model)
{
    int rows, sk;
    /* continue: every step runs, none skipped (no scaler), the weights stay NaN;
     * the run ended non-finite: exit 1 and one line naming step, tensor, phase */
    ck_assert_int_eq(run(DIVERGE " --on-nonfinite continue --out c"), 1);
    char *e1 = slurp("err");
    ck_assert_msg(strstr(e1, "the loss ended not finite; the first non-finite value was at step ") != NULL &&
                  strstr(e1, " in fc2.out (forward)") != NULL && strchr(e1, '\n') == e1 + strlen(e1) - 1, "%s", e1);
    free(e1);
    metrics("c", &rows, &sk);
    ck_assert_int_eq(rows, 6);
    ck_assert_int_eq(sk, 0);
    char *e = slurp("c/events.csv");
    ck_assert_msg(strstr(e, "first_nonfinite") != NULL, "%s", e);
    free(e);
    /* skip: every non-finite step is skipped (the loss still ends non-finite: exit 1) */
    ck_assert_int_eq(run(DIVERGE " --on-nonfinite skip --out s"), 1);
    metrics("s", &rows, &sk);
    ck_assert_int_eq(rows, 6);
    ck_assert_int_eq(sk, 5);
    /* stop: exit 1 at the first non-finite step, a stop event, summary says stopped */
    ck_assert_int_eq(run(DIVERGE " --on-nonfinite stop --out t"), 1);
    metrics("t", &rows, &sk);
    ck_assert_int_eq(rows, 2);
    e = slurp("t/events.csv");
    ck_assert_msg(strstr(e, ",stop,") != NULL, "%s", e);
    free(e);
    char *sj = slurp("t/summary.json");
    ck_assert_msg(strstr(sj, "\"stopped\":\ttrue") || strstr(sj, "\"stopped\": true") || strstr(sj, "\"stopped\":true"), "%s", sj);
    free(sj);
    char *err = slurp("err");
    ck_assert_msg(strstr(err, "non-finite") != NULL, "%s", err);
    free(err);
    ck_assert_int_eq(run(DIVERGE " --on-nonfinite sometimes --out x"), 2);
}
END_TEST

/* compare: a pair whose loss ends not finite fails the compare (exit 1), and
 * still does when the rerun keeps that finished run instead of training it */
START_TEST(compare_kept_failed_run)
{
    const char *cmd = "compare --precisions fp16-amp --scalers none --lr 1e30 --steps 3 --log-every 0 "
                      "--hist-every 0 --jobs 1 --out k";
    ck_assert_int_eq(run(cmd), 1);
    ck_assert_int_eq(run(cmd), 1);
    char *e = slurp("err");
    ck_assert_msg(strstr(e, "ampsim compare: k/") != NULL && strstr(e, "the loss ended not finite") != NULL, "%s", e);
    free(e);
    ck_assert_int_eq(run("compare --precisions fp16-amp --scalers none --steps 3 --log-every 0 --hist-every 0 "
                         "--jobs 1 --out f"), 0);
    ck_assert_int_eq(run("compare --precisions fp16-amp --scalers none --steps 3 --log-every 0 --hist-every 0 "
                         "--jobs 1 --out f"), 0);
}
END_TEST

START_TEST(loss_scale_collapses_to_zero)
{
    /* torch has no minimum: 200 non-finite steps halve 65536 down to exactly 0 */
    ck_assert_int_eq(run("train --lr 1e30 --steps 200 --log-every 0 --hist-every 0 --scaler torch --out z"), 1);
    char *m = slurp("z/metrics.csv");
    char *last = m + strlen(m) - 2;
    while (last > m && *last != '\n') last--;
    int step, sk;
    char loss[64];
    double scale;
    ck_assert(sscanf(last + 1, "%d,%63[^,],%lf,%d", &step, loss, &scale, &sk) == 4);
    ck_assert_int_eq(step, 199);
    ck_assert(scale == 0.0);
    free(m);
    char *e = slurp("z/events.csv");
    ck_assert_msg(strstr(e, ",zero,") != NULL, "no 'zero' event: %.300s", e);
    free(e);
    /* under stop the run ends at the first non-finite step instead */
    ck_assert_int_eq(run("train --lr 1e30 --steps 200 --log-every 0 --hist-every 0 --scaler torch --on-nonfinite stop --out zs"), 1);
}
END_TEST

START_TEST(nan_in_data_is_bad_input)
{
    char p[600];
    snprintf(p, sizeof p, "%s/bad.csv.gz", tmpdir);
    gzFile g = gzopen(p, "wb");
    ck_assert(g != NULL);
    for (int r = 0; r < 40; r++) {
        for (int c = 0; c < 64; c++) gzprintf(g, r == 7 && c == 3 ? "nan," : "%d,", (r + c) % 17);
        gzprintf(g, "%d\n", r % 10);
    }
    gzclose(g);
    ck_assert_int_eq(run("train --data bad.csv.gz --steps 2 --batch 4 --out d"), 2);
    char *err = slurp("err");
    ck_assert_msg(strstr(err, "bad.csv.gz") != NULL, "%s", err);
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nonfinite");
    TCase *tc = tcase_create("nonfinite");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, diverging_model);
    tcase_add_test(tc, compare_kept_failed_run);
    tcase_add_test(tc, loss_scale_collapses_to_zero);
    tcase_add_test(tc, nan_in_data_is_bad_input);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
