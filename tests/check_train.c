/* `ampsim train` end to end: the PyTorch reference (tests/ref/mlp_torch.py),
 * gradient underflow in a deep narrow MLP under fp16-amp and its removal by a
 * static loss scale, byte-identical logs across --threads, the run directory,
 * --save/--init, and exit 2 on bad options. Needs $AMPSIM and $AMP_SRCDIR. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ampsim.h"
#include "amp_tensorio.h"

static char tmpdir[256];
static const char *ampsim, *srcdir;

static void setup(void)
{
    ampsim = getenv("AMPSIM");
    srcdir = getenv("AMP_SRCDIR");
    ck_assert_msg(ampsim && srcdir, "set AMPSIM and AMP_SRCDIR");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_train.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Runs `ampsim train ARGS` with stderr into tmpdir/err; returns the exit code. */
static int train(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && AMP_SRCDIR='%s' '%s' train %s >'%s/out' 2>'%s/err'", tmpdir, srcdir, ampsim,
             args, tmpdir, tmpdir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    char *d;
    size_t n;
    if (amp_read_file(path, 1 << 28, &d, &n)) return NULL;
    return d;
}

/* Reads column `col` (0-based) of a CSV with a header into v; returns rows. */
static int read_col(const char *path, int col, double *v, int max)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[1024];
    int n = 0;
    if (!fgets(line, sizeof line, fp)) { fclose(fp); return -1; }
    while (n < max && fgets(line, sizeof line, fp)) {
        char *p = line;
        for (int c = 0; c < col && p; c++) p = strchr(p, ','), p = p ? p + 1 : NULL;
        if (!p) break;
        v[n++] = strtod(p, NULL);
    }
    fclose(fp);
    return n;
}

/* tests/ref/mlp_torch.py trained the same MLP in PyTorch 1.13 from the same
 * weights with three optimizers; every step's loss must agree within 1e-5. */
START_TEST(test_torch_reference)
{
    static const struct { const char *optim, *lr, *csv; } runs[] = {
        { "sgd", "0.1", "mlp_losses.csv" },
        { "momentum", "0.05", "mlp_losses_momentum.csv" },
        { "adamw", "0.01", "mlp_losses_adamw.csv" },
    };
    for (int r = 0; r < 3; r++) {
        char args[1024], path[512];
        snprintf(args, sizeof args, "--no-shuffle --init '%s/tests/ref/mlp_init.safetensors' --steps 200 --batch 32 "
                 "--lr %s --hidden 32 --layers 2 --optim %s --precision fp32 --out run_%s", srcdir, runs[r].lr,
                 runs[r].optim, runs[r].optim);
        ck_assert_int_eq(train(args), 0);
        double ref[256], got[256];
        snprintf(path, sizeof path, "%s/tests/ref/%s", srcdir, runs[r].csv);
        ck_assert_int_eq(read_col(path, 1, ref, 256), 200);
        snprintf(path, sizeof path, "%s/run_%s/metrics.csv", tmpdir, runs[r].optim);
        ck_assert_int_eq(read_col(path, 1, got, 256), 200);
        double worst = 0;
        for (int s = 0; s < 200; s++) {
            ck_assert_msg(fabs(got[s] - ref[s]) <= 1e-5, "%s step %d: ampsim %.9g, torch %.9g", runs[r].optim, s,
                          got[s], ref[s]);
            if (fabs(got[s] - ref[s]) > worst) worst = fabs(got[s] - ref[s]);
        }
        printf("torch reference (%s): max |loss diff| over 200 steps = %.3g\n", runs[r].optim, worst);
        ck_assert(ref[199] < 0.6 && ref[0] > 2.0);      /* it did learn */
    }
}
END_TEST

/* Sum of the flushed column over weight_grad rows of tensors.csv. */
static long flushed_weight_grads(const char *run)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/%s/tensors.csv", tmpdir, run);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    long total = 0, rows = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
    ck_assert_str_eq(line, "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n");
    while (fgets(line, sizeof line, fp)) {
        char name[128], role[32], fmt[32];
        long step, n, zero, flushed;
        if (sscanf(line, "%ld,%127[^,],%31[^,],%31[^,],%ld,%ld,%ld", &step, name, role, fmt, &n, &zero, &flushed) != 7) continue;
        if (strcmp(role, "weight_grad")) continue;
        ck_assert_str_eq(fmt, "fp16");
        total += flushed;
        rows++;
    }
    fclose(fp);
    ck_assert_int_eq(rows, 20 * 16);                    /* 8 layers x (weight, bias) x 20 steps */
    return total;
}

START_TEST(test_deep_fp16_underflow)
{
    const char *common = "--precision fp16-amp --layers 8 --hidden 16 --steps 20 --log-every 1 --hist-every 0";
    char args[512];
    snprintf(args, sizeof args, "%s --scaler none --out plain", common);
    ck_assert_int_eq(train(args), 0);
    snprintf(args, sizeof args, "%s --scaler static:4096 --out scaled", common);
    ck_assert_int_eq(train(args), 0);
    long plain = flushed_weight_grads("plain"), scaled = flushed_weight_grads("scaled");
    printf("deep fp16-amp: %ld weight-gradient values flushed without scaling, %ld with static:4096\n", plain, scaled);
    ck_assert_msg(plain > 0, "expected flushed weight gradients without scaling");
    ck_assert_msg(scaled == 0, "static scale left %ld flushed", scaled);
}
END_TEST

START_TEST(test_threads_identical)
{
    /* SR rounding exercises the counter-based keys; the policy is a JSON file */
    char path[512];
    snprintf(path, sizeof path, "%s/sr.json", tmpdir);
    FILE *fp = fopen(path, "w");
    fputs("{\"base\": \"bf16-pure\", \"rounding\": \"sr\", \"update\": \"sr\"}\n", fp);
    fclose(fp);
    const char *runs[4][2] = {
        /* --hidden 1100: fc1.weight has 70400 values, more than one rounding chunk (65536) */
        { "--precision fp16-amp --hidden 1100 --threads 1 --out t1", "--precision fp16-amp --hidden 1100 --threads 2 --out t2" },
        { "--policy sr.json --threads 1 --out s1", "--policy sr.json --threads 2 --out s2" },
    };
    for (int r = 0; r < 2; r++) {
        char a[512];
        for (int k = 0; k < 2; k++) {
            snprintf(a, sizeof a, "%s --steps 40 --log-every 5 --hist-every 10 --seed 3 --scaler static:1024", runs[r][k]);
            ck_assert_int_eq(train(a), 0);
        }
        const char *files[] = { "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json" };
        for (int f = 0; f < 5; f++) {
            char p1[64], p2[64];
            snprintf(p1, sizeof p1, "%s/%s", r ? "s1" : "t1", files[f]);
            snprintf(p2, sizeof p2, "%s/%s", r ? "s2" : "t2", files[f]);
            char *d1 = slurp(p1), *d2 = slurp(p2);
            ck_assert_msg(d1 && d2, "missing %s", p1);
            ck_assert_msg(!strcmp(d1, d2), "%s differs between --threads 1 and 2", p1);
            free(d1);
            free(d2);
        }
    }
}
END_TEST

START_TEST(test_run_directory_and_save)
{
    ck_assert_int_eq(train("--steps 5 --hidden 12 --layers 3 --save w.safetensors --out run"), 0);
    const char *files[] = { "config.json", "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json" };
    for (int f = 0; f < 6; f++) {
        char rel[64];
        snprintf(rel, sizeof rel, "run/%s", files[f]);
        char *d = slurp(rel);
        ck_assert_msg(d != NULL, "missing %s", rel);
        free(d);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls '%s/run' | grep -q tmp", tmpdir);
    ck_assert_msg(system(cmd) != 0, "temporary files left in the run directory");
    char *m = slurp("run/metrics.csv");
    ck_assert(!strncmp(m, "step,loss,loss_scale,skipped,grad_norm,lr,", 42));
    free(m);
    char *cfg = slurp("run/config.json");
    ck_assert_ptr_nonnull(strstr(cfg, "\"data_sha256\""));
    free(cfg);
    char path[512];
    snprintf(path, sizeof path, "%s/w.safetensors", tmpdir);
    amp_tensor_file tf;
    ck_assert_int_eq(amp_tensor_file_open(path, &tf), AMP_OK);
    ck_assert_int_eq(tf.n_tensors, 6);
    const char *names[6] = { "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias" };
    const size_t shapes[6][2] = { { 12, 64 }, { 12, 0 }, { 12, 12 }, { 12, 0 }, { 10, 12 }, { 10, 0 } };
    for (int k = 0; k < 6; k++) {
        const amp_tensor_view *v = NULL;
        for (int j = 0; j < tf.n_tensors; j++)
            if (!strcmp(tf.tensors[j].name, names[k])) v = &tf.tensors[j];
        ck_assert_msg(v != NULL, "missing %s", names[k]);
        ck_assert_int_eq(v->ndim, shapes[k][1] ? 2 : 1);
        ck_assert_uint_eq(v->shape[0], shapes[k][0]);
        if (shapes[k][1]) ck_assert_uint_eq(v->shape[1], shapes[k][1]);
    }
    amp_tensor_file_close(&tf);
    /* the saved weights load back; a model of another width refuses them, naming the tensor */
    ck_assert_int_eq(train("--steps 1 --hidden 12 --layers 3 --init w.safetensors --out run2"), 0);
    ck_assert_int_eq(train("--steps 1 --hidden 16 --layers 3 --init w.safetensors --out run3"), 2);
    char *err = slurp("err");
    ck_assert_msg(strstr(err, "fc1.weight"), "message does not name the tensor: %s", err);
    free(err);
    ck_assert_int_eq(train("--steps 1 --hidden 12 --layers 2 --init w.safetensors --out run4"), 2);
    err = slurp("err");
    ck_assert_msg(strstr(err, "fc2.weight") || strstr(err, "fc3"), "message does not name the tensor: %s", err);
    free(err);
}
END_TEST

static void expect_bad(const char *args, const char *needle)
{
    int rc = train(args);
    char *err = slurp("err");
    ck_assert_msg(rc == 2, "'%s' exited %d (stderr: %s)", args, rc, err ? err : "");
    ck_assert_msg(err && strstr(err, needle), "'%s': stderr '%s' does not name '%s'", args, err ? err : "", needle);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "'%s': not one line: %s", args, err);
    free(err);
}

START_TEST(test_bad_options)
{
    expect_bad("--precision fp13-amp", "fp13-amp");
    expect_bad("--steps 0", "--steps");
    expect_bad("--steps -5", "--steps");
    expect_bad("--batch x", "--batch");
    expect_bad("--lr nan", "--lr");
    expect_bad("--optim lion", "lion");
    expect_bad("--scaler bogus", "bogus");
    expect_bad("--frobnicate 1", "--frobnicate");
    expect_bad("--data /nonexistent/digits.csv.gz", "/nonexistent/digits.csv.gz");
    expect_bad("--init /nonexistent/w.safetensors", "/nonexistent/w.safetensors");
    char path[512];
    snprintf(path, sizeof path, "%s/p.json", tmpdir);
    FILE *fp = fopen(path, "w");
    fputs("{\"base\": \"fp16-amp\", \"gemm\": {\"input\": \"fp16\", \"acumulator\": \"fp32\"}}", fp);
    fclose(fp);
    expect_bad("--policy p.json", "acumulator");
    fp = fopen(path, "w");
    fputs("{\"roles\": {\"weight\": \"fp17\"}}", fp);
    fclose(fp);
    expect_bad("--policy p.json", "fp17");
    /* data with NaN and with a bad pixel: the message names file:line */
    snprintf(path, sizeof path, "%s/d.csv", tmpdir);
    fp = fopen(path, "w");
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 64; k++) fprintf(fp, "%s,", (r == 2 && k == 5) ? "nan" : "1");
        fputs("3\n", fp);
    }
    fclose(fp);
    expect_bad("--data d.csv", "d.csv:3");
    fp = fopen(path, "w");
    for (int k = 0; k < 64; k++) fprintf(fp, "%d,", k == 9 ? 17 : 0);
    fputs("3\n", fp);
    fclose(fp);
    expect_bad("--data d.csv", "d.csv:1");
    fp = fopen(path, "w");
    for (int k = 0; k < 63; k++) fprintf(fp, "0,");
    fputs("3\n", fp);
    fclose(fp);
    expect_bad("--data d.csv", "d.csv:1");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_torch_reference);
    tcase_add_test(tc, test_deep_fp16_underflow);
    tcase_add_test(tc, test_threads_identical);
    tcase_add_test(tc, test_run_directory_and_save);
    tcase_add_test(tc, test_bad_options);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
