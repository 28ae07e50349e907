/* `ampsim train --dp R` (emulated data parallelism, sim/train_dp.c): --dp 1 is
 * the plain run byte for byte; the fp32 tree reduction equals a hand-made
 * pairwise float sum of the per-rank gradients (computed here by running the
 * model on each micro-batch alone) and single-process training up to the
 * summation order; bf16/e5m2 reductions log "<grad>.allreduce" rows with
 * rounding; overflow inside the reduction is an event and a non-finite step;
 * --resume of a --dp run gives the same bytes; bad options exit 2.
 * Needs $AMPSIM and $AMP_SRCDIR. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ampsim.h"
#include "cli_test.h"
#include "amp_train.h"

static const char *ampsim, *srcdir;

static void setup(void)
{
    ampsim = getenv("AMPSIM");
    srcdir = getenv("AMP_SRCDIR");
    ck_assert_msg(ampsim && srcdir, "set AMPSIM and AMP_SRCDIR");
    ct_mkdtemp("check_dp");
}

static void teardown(void) { ct_rmtree(); }

/* Runs `ampsim train ARGS` in tmpdir, stderr into tmpdir/err; the exit code. */
static int train(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train %s", args);
    return run(cmd);
}

static int same_files(const char *d1, const char *d2, int with_config)
{
    static const char *const files[] = { "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json",
                                         "config.json" };
    return ct_same_files(d1, d2, files, 5 + with_config);
}

/* Column 1 (loss) of DIR/metrics.csv; returns rows. */
static int read_loss(const char *dir, double *v, int max)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/metrics.csv", tmpdir, dir);
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[1024];
    int n = 0;
    if (!fgets(line, sizeof line, fp)) { fclose(fp); return -1; }
    while (n < max && fgets(line, sizeof line, fp)) {
        char *c = strchr(line, ',');
        if (!c) break;
        v[n++] = strtod(c + 1, NULL);
    }
    fclose(fp);
    return n;
}

START_TEST(test_dp1_identical)
{
    /* a loss scaler, statistics and histograms: every file must match */
    const char *A = "--precision fp16-amp --scaler torch --layers 3 --steps 25 --batch 48 --log-every 4 --hist-every 6";
    char args[512];
    snprintf(args, sizeof args, "%s --out plain", A);
    ck_assert_int_eq(train(args), 0);
    snprintf(args, sizeof args, "%s --dp 1 --out dp1", A);
    ck_assert_int_eq(train(args), 0);
    ck_assert(same_files("plain", "dp1", 1));
    char *cfg = ct_read("dp1/config.json");
    ck_assert_ptr_null(strstr(cfg, "allreduce"));   /* --dp 1: config.json unchanged */
    free(cfg);
}
END_TEST

/* One step of the library against an independent emulation: the model run on
 * each micro-batch alone (B/R rows), gradients summed by hand with float32
 * additions in the tree order ((g0+g1)+(g2+g3)), divided by R = 4 (exact), and
 * the loss as the double mean of the micro-batch losses rounded to float. */
START_TEST(test_fp32_tree_bitwise)
{
    enum { R = 4, B = 64, Br = B / R, H = 24, L = 3 };
    char path[4096];
    ck_assert_int_eq(amp_data_find("digits.csv.gz", path, sizeof path), AMP_OK);
    amp_digits d;
    ck_assert_int_eq(amp_digits_load(path, &d), AMP_OK);
    amp_batch b;
    ck_assert_int_eq(amp_digits_batch(&d, 3, B, 1, 5, &b), AMP_OK);
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset("fp32", &pol), AMP_OK);

    amp_model a, m;
    amp_optim oa;
    ck_assert_int_eq(amp_mlp_create(&a, &pol, Br, 64, H, L, 10, 9), AMP_OK);
    ck_assert_int_eq(amp_mlp_create(&m, &pol, Br, 64, H, L, 10, 9), AMP_OK);
    amp_optim_defaults(&oa, AMP_OPT_SGD, 0.1f);
    ck_assert_int_eq(amp_optim_attach(&oa, &a), AMP_OK);
    amp_allreduce_opts ao = amp_allreduce_defaults();
    ao.algo = AMP_AR_TREE;
    amp_dp *dp;
    ck_assert_int_eq(amp_dp_create(&dp, &a, R, &ao), AMP_OK);
    amp_step_info info;
    amp_scaler_result res;
    ck_assert_int_eq(amp_train_step_dp(dp, &a, &oa, NULL, &b, 0, 0, &info, &res), AMP_OK);

    /* the reference: per micro-batch gradients of the same (initial) weights */
    float *g[64][R];
    int nw = 0;
    double lsum = 0.0;
    for (int r = 0; r < R; r++) {
        amp_batch mb = { .B = Br, .D = 64, .x = b.x + (size_t)r * Br * 64, .y = b.y + (size_t)r * Br };
        amp_tensors_begin_step(&m.reg, 0, 0);
        ck_assert_int_eq(amp_model_cast_weights(&m), AMP_OK);
        float loss;
        ck_assert_int_eq(m.forward(&m, &mb, &loss), AMP_OK);
        ck_assert_int_eq(m.backward(&m, &mb, 1.0f), AMP_OK);
        lsum += loss;
        nw = 0;
        for (int i = 0; i < m.reg.n; i++) {
            amp_tensor *w = m.reg.t[i];
            if (w->role != AMP_ROLE_WEIGHT) continue;
            ck_assert_int_lt(nw, 64);
            g[nw][r] = malloc(w->n * sizeof(float));
            memcpy(g[nw][r], w->grad->data, w->n * sizeof(float));
            nw++;
        }
    }
    ck_assert_int_eq(nw, 2 * L);
    ck_assert(info.loss == (float)(lsum / R));
    int k = 0, differs = 0;
    for (int i = 0; i < a.reg.n; i++) {
        amp_tensor *w = a.reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        for (size_t j = 0; j < w->n; j++) {
            float s01 = g[k][0][j] + g[k][1][j], s23 = g[k][2][j] + g[k][3][j];
            float want = (s01 + s23) / 4.0f;     /* division by 4: exact */
            ck_assert_msg(!memcmp(&want, &w->grad->data[j], sizeof want), "%s[%zu]: %.9g, expected %.9g",
                          w->grad->name, j, (double)w->grad->data[j], (double)want);
            /* the ring order ((g0+g1)+g2)+g3 rounds differently somewhere */
            differs |= ((s01 + g[k][2][j]) + g[k][3][j]) / 4.0f != want;
        }
        for (int r = 0; r < R; r++) free(g[k][r]);
        k++;
    }
    ck_assert_msg(differs, "the tree order never mattered: the test does not separate the algorithms");
    amp_dp_free(dp);
    amp_model_free(&a);
    amp_model_free(&m);
    amp_digits_free(&d);
}
END_TEST

/* fp32 tree reduction vs single-process training on the global batch: only
 * the summation order differs (each rank's weight-gradient GEMM sums B/R rows,
 * then the ranks are added pairwise; the single run's GEMM sums all B rows;
 * the loss is a mean of R means instead of one mean of B terms). Each ordering
 * perturbs a gradient by a few float32 ulps (relative ~1e-7), SGD with lr 0.1
 * moves the weights by ~1e-8 per step, and the logged loss (~2.3, ulp 2.4e-7)
 * then differs by a few ulps over 20 steps: 1e-6 (4 ulps) bounds it, while a
 * real error (wrong rows, missing 1/R, a rank dropped) changes the loss by
 * more than 1e-3 within a step or two. Measured: max 2.4e-7 (R = 2). */
START_TEST(test_fp32_tree_vs_single)
{
    const char *A = "--precision fp32 --layers 4 --hidden 32 --batch 64 --steps 20 --log-every 0 --hist-every 0";
    char args[512];
    double l1[32], l2[32], l4[32];
    snprintf(args, sizeof args, "%s --out single", A);
    ck_assert_int_eq(train(args), 0);
    snprintf(args, sizeof args, "%s --dp 2 --allreduce tree --allreduce-format fp32 --out dp2", A);
    ck_assert_int_eq(train(args), 0);
    snprintf(args, sizeof args, "%s --dp 4 --allreduce tree --allreduce-format fp32 --out dp4", A);
    ck_assert_int_eq(train(args), 0);
    ck_assert_int_eq(read_loss("single", l1, 32), 20);
    ck_assert_int_eq(read_loss("dp2", l2, 32), 20);
    ck_assert_int_eq(read_loss("dp4", l4, 32), 20);
    for (int s = 0; s < 20; s++) {
        ck_assert_msg(fabs(l2[s] - l1[s]) <= 1e-6, "step %d: dp2 %.9g vs single %.9g", s, l2[s], l1[s]);
        ck_assert_msg(fabs(l4[s] - l1[s]) <= 1e-6, "step %d: dp4 %.9g vs single %.9g", s, l4[s], l1[s]);
    }
    char *cfg = ct_read("dp4/config.json");
    ck_assert_ptr_nonnull(strstr(cfg, "\"dp\":\t4"));
    ck_assert_ptr_nonnull(strstr(cfg, "\"allreduce\":\t\"tree\""));
    ck_assert_ptr_nonnull(strstr(cfg, "\"allreduce_format\":\t\"fp32\""));
    ck_assert_ptr_nonnull(strstr(cfg, "\"allreduce_scale\":\t\"none\""));
    free(cfg);
}
END_TEST

/* "<grad>.allreduce" rows: one per weight gradient per logged step, format F,
 * n = R*size quantizations + (R-1)*size partial sums, rel_err > 0. */
static void check_rows(const char *dir, const char *fmt, int R, int want_rows)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/tensors.csv", dir);
    char *t = ct_read(rel);
    ck_assert_ptr_nonnull(t);
    int rows = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, ".allreduce,")) continue;
        char name[128], role[32], f[32];
        unsigned long long n;
        double amax, amin, rel_err;
        char *c = line;
        long step = strtol(c, &c, 10);
        ck_assert(sscanf(c, ",%127[^,],%31[^,],%31[^,],%llu", name, role, f, &n) == 4);
        /* last three fields: amax, amin_nonzero, rel_err */
        char *e = strrchr(line, ',');
        rel_err = strtod(e + 1, NULL);
        *e = 0;
        e = strrchr(line, ',');
        amin = strtod(e + 1, NULL);
        *e = 0;
        e = strrchr(line, ',');
        amax = strtod(e + 1, NULL);
        ck_assert_str_eq(role, "weight_grad");
        ck_assert_str_eq(f, fmt);
        /* size of the gradient from its name: fcL.weight [out,in] / fcL.bias [out] (64-16-16-10) */
        int layer = name[2] - '0';
        unsigned long long size = strstr(name, ".bias") ? (layer == 3 ? 10 : 16)
                                                       : (unsigned long long)(layer == 1 ? 64 : 16) * (layer == 3 ? 10 : 16);
        ck_assert_msg(n == (unsigned long long)(2 * R - 1) * size, "%s step %ld: n %llu", name, step, n);
        ck_assert_msg(rel_err > 0 && amax > 0 && amin >= 0, "%s step %ld: rel_err %g", name, step, rel_err);
        rows++;
    }
    ck_assert_int_eq(rows, want_rows);
    free(t);
}

START_TEST(test_lowp_rows)
{
    const char *A = "--precision fp32 --layers 3 --hidden 16 --batch 32 --steps 12 --log-every 5 --hist-every 0";
    char args[512];
    snprintf(args, sizeof args, "%s --dp 4 --allreduce-format bf16 --out bf", A);
    ck_assert_int_eq(train(args), 0);
    check_rows("bf", "bf16", 4, 3 * 6);       /* steps 0, 5, 10; 6 gradients */
    snprintf(args, sizeof args, "%s --dp 2 --allreduce tree --allreduce-format e5m2 --allreduce-scale pow2 --out e5", A);
    ck_assert_int_eq(train(args), 0);
    check_rows("e5", "e5m2", 2, 3 * 6);
    char *ev = ct_read("e5/events.csv");
    ck_assert_ptr_nonnull(strstr(ev, "allreduce_scale,fc1.weight.grad,pow2 scale"));
    free(ev);
    /* the low-precision reduction changes training: the losses differ from fp32's */
    snprintf(args, sizeof args, "%s --dp 4 --allreduce-format fp32 --out f32", A);
    ck_assert_int_eq(train(args), 0);
    double a[16], b[16];
    ck_assert_int_eq(read_loss("bf", a, 16), 12);
    ck_assert_int_eq(read_loss("f32", b, 16), 12);
    ck_assert(a[0] == b[0]);                 /* step 0: same weights, loss before the reduction */
    ck_assert(a[11] != b[11]);
}
END_TEST

/* A loss scale that overflows e5m2 (max 57344) but not fp32: the reduction
 * overflows, the event names the tensor, the step is non-finite (the static
 * scale applies it, so the loss ends non-finite: exit 1); the fp32
 * reduction of the same run has no such event. */
START_TEST(test_overflow_event)
{
    const char *A = "--precision fp32 --scaler static:4194304 --steps 2 --batch 32 --dp 2";
    char args[512];
    snprintf(args, sizeof args, "%s --allreduce-format e5m2 --out o8", A);
    ck_assert_int_eq(train(args), 1);
    char *ev = ct_read("o8/events.csv");
    ck_assert_msg(strstr(ev, "0,allreduce_overflow,fc1.weight.grad,") != NULL, "%s", ev);
    ck_assert_msg(strstr(ev, "0,first_nonfinite,fc1.weight.grad,backward") != NULL, "%s", ev);
    free(ev);
    snprintf(args, sizeof args, "%s --allreduce-format fp32 --out o32", A);
    ck_assert_int_eq(train(args), 0);
    ev = ct_read("o32/events.csv");
    ck_assert_ptr_null(strstr(ev, "allreduce_overflow"));
    free(ev);
}
END_TEST

/* --checkpoint-every / --resume with --dp: the resumed tail gives the same bytes;
 * another all-reduce format is refused. */
START_TEST(test_dp_resume)
{
    const char *A = "--precision bf16-amp --scaler torch --layers 3 --steps 30 --batch 32 --dp 4 "
                    "--allreduce-format bf16 --log-every 4 --hist-every 5 --checkpoint-every 10";
    char args[1400], cmd[1200];
    snprintf(args, sizeof args, "%s --out ref", A);
    ck_assert_int_eq(train(args), 0);
    snprintf(cmd, sizeof cmd, "cp -r '%s/ref' '%s/again'", tmpdir, tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "%s --out again --resume", A);
    ck_assert_int_eq(train(args), 0);
    ck_assert(same_files("ref", "again", 1));
    char *a = ct_read("again/tensors.csv");
    ck_assert_ptr_nonnull(strstr(a, "\n28,fc1.weight.grad.allreduce,"));
    free(a);
    snprintf(cmd, sizeof cmd, "%s --allreduce-format e5m2", A);
    snprintf(args, sizeof args, "%s --out again --resume", cmd);
    ck_assert_int_eq(train(args), 2);
}
END_TEST

static void expect_bad(const char *args, const char *needle, const char *needle2)
{
    int rc = train(args);
    char *err = ct_read("err");
    ck_assert_msg(rc == 2, "'%s' exited %d (stderr: %s)", args, rc, err ? err : "");
    ck_assert_msg(err && strstr(err, needle), "'%s': stderr '%s' does not name '%s'", args, err ? err : "", needle);
    if (needle2) ck_assert_msg(strstr(err, needle2), "'%s': stderr '%s' does not name '%s'", args, err, needle2);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "'%s': not one line: %s", args, err);
    free(err);
}

START_TEST(test_bad_options)
{
    expect_bad("--batch 30 --dp 4", "--batch 30", "--dp 4");
    expect_bad("--dp 0", "--dp", NULL);
    expect_bad("--dp 2000", "--dp", NULL);
    expect_bad("--dp x", "--dp", NULL);
    expect_bad("--dp 2 --allreduce star", "--allreduce star", NULL);
    expect_bad("--dp 2 --allreduce-format fp13", "--allreduce-format fp13", NULL);
    expect_bad("--dp 2 --allreduce-scale max", "--allreduce-scale max", NULL);
    expect_bad("--allreduce tree", "--allreduce", "--dp");
    expect_bad("--dp 1 --allreduce-format bf16", "--allreduce-format", "--dp");
    expect_bad("--dp 2 --precision fp8-hybrid", "--dp 2", "fp8-hybrid");
    expect_bad("--dp 2 --model gpt --eval-every 5", "--eval-every", "--dp");
    char *err;
    ck_assert_int_eq(train("--help"), 0);
    err = ct_read("out");
    ck_assert_ptr_nonnull(strstr(err, "--allreduce-format"));
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dp");
    TCase *tc = tcase_create("dp");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_dp1_identical);
    tcase_add_test(tc, test_fp32_tree_bitwise);
    tcase_add_test(tc, test_fp32_tree_vs_single);
    tcase_add_test(tc, test_lowp_rows);
    tcase_add_test(tc, test_overflow_event);
    tcase_add_test(tc, test_dp_resume);
    tcase_add_test(tc, test_bad_options);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
