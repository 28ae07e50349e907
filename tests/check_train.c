/* `ampsim train` end to end: the PyTorch reference (tests/ref/mlp_torch.py),
 * gradient underflow in a deep narrow MLP under fp16-amp and its removal by a
 * static loss scale, byte-identical logs across --threads, the run directory,
 * --save/--init, and exit 2 on bad options. Needs $AMPSIM and $AMP_SRCDIR. */
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
#include "amp_tensorio.h"

static const char *ampsim, *srcdir;

static void setup(void)
{
    ampsim = getenv("AMPSIM");
    srcdir = getenv("AMP_SRCDIR");
    ck_assert_msg(ampsim && srcdir, "set AMPSIM and AMP_SRCDIR");
    ct_mkdtemp("check_train");
}

static void teardown(void) { ct_rmtree(); }

/* Runs `ampsim train ARGS` in tmpdir, stderr into tmpdir/err; the exit code. */
static int train(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train %s", args);
    return run(cmd);
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
 * weights with three optimizers in float32, and with SGD under CPU autocast
 * (bfloat16); every step's loss must agree within 1e-5 (float32) or 1e-4
 * (bf16: a different FP32 summation order may flip a bf16 rounding; measured
 * 2.4e-7 for all four). */
START_TEST(test_torch_reference)
{
    static const struct { const char *optim, *lr, *precision, *csv; double tol; } runs[] = {
        { "sgd", "0.1", "fp32", "mlp_losses.csv", 1e-5 },
        { "momentum", "0.05", "fp32", "mlp_losses_momentum.csv", 1e-5 },
        { "adamw", "0.01", "fp32", "mlp_losses_adamw.csv", 1e-5 },
        { "sgd", "0.1", "bf16-amp-cpu", "mlp_losses_bf16_autocast.csv", 1e-4 },
    };
    for (int r = 0; r < 4; r++) {
        char args[1024], path[512];
        snprintf(args, sizeof args, "--no-shuffle --init '%s/tests/ref/mlp_init.safetensors' --steps 200 --batch 32 "
                 "--lr %s --hidden 32 --layers 2 --optim %s --precision %s --out run_%d", srcdir, runs[r].lr,
                 runs[r].optim, runs[r].precision, r);
        ck_assert_int_eq(train(args), 0);
        double ref[256], got[256];
        snprintf(path, sizeof path, "%s/tests/ref/%s", srcdir, runs[r].csv);
        ck_assert_int_eq(read_col(path, 1, ref, 256), 200);
        snprintf(path, sizeof path, "%s/run_%d/metrics.csv", tmpdir, r);
        ck_assert_int_eq(read_col(path, 1, got, 256), 200);
        double worst = 0;
        for (int s = 0; s < 200; s++) {
            ck_assert_msg(fabs(got[s] - ref[s]) <= runs[r].tol, "%s %s step %d: ampsim %.9g, torch %.9g",
                          runs[r].precision, runs[r].optim, s, got[s], ref[s]);
            if (fabs(got[s] - ref[s]) > worst) worst = fabs(got[s] - ref[s]);
        }
        printf("torch reference (%s, %s): max |loss diff| over 200 steps = %.3g\n", runs[r].precision, runs[r].optim, worst);
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
            char *d1 = ct_read(p1), *d2 = ct_read(p2);
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
    ck_assert_int_eq(train("--steps 5 --hidden 12 --layers 3 --act gelu --log-every 1 --save w.safetensors --out g"), 0);
    char *tg = ct_read("g/tensors.csv");
    ck_assert_ptr_nonnull(strstr(tg, "\n0,gelu2.out.grad,act_grad,fp32,"));
    free(tg);
    ck_assert_int_eq(train("--steps 5 --hidden 12 --layers 3 --save w.safetensors --out run"), 0);
    const char *files[] = { "config.json", "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json" };
    for (int f = 0; f < 6; f++) {
        char rel[64];
        snprintf(rel, sizeof rel, "run/%s", files[f]);
        char *d = ct_read(rel);
        ck_assert_msg(d != NULL, "missing %s", rel);
        free(d);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls '%s/run' | grep -q tmp", tmpdir);
    ck_assert_msg(system(cmd) != 0, "temporary files left in the run directory");
    char *m = ct_read("run/metrics.csv");
    ck_assert(!strncmp(m, "step,loss,loss_scale,skipped,grad_norm,lr,", 42));
    free(m);
    char *cfg = ct_read("run/config.json");
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
    char *err = ct_read("err");
    ck_assert_msg(strstr(err, "fc1.weight"), "message does not name the tensor: %s", err);
    free(err);
    ck_assert_int_eq(train("--steps 1 --hidden 12 --layers 2 --init w.safetensors --out run4"), 2);
    err = ct_read("err");
    ck_assert_msg(strstr(err, "fc2.weight") || strstr(err, "fc3"), "message does not name the tensor: %s", err);
    free(err);
}
END_TEST

/* Overflow under a loss scale that is far too high: the first non-finite value
 * is reported (backward, the loss gradient), every overflowing step is
 * skipped and the torch scaler backs off until the scale fits. */
START_TEST(test_overflow_events)
{
    ck_assert_int_eq(train("--precision fp16-amp --scaler torch:init=2^30 --steps 40 --out e"), 0);
    char *ev = ct_read("e/events.csv"), *sum = ct_read("e/summary.json"), *met = ct_read("e/metrics.csv");
    ck_assert_ptr_nonnull(ev);
    ck_assert_msg(strstr(ev, "\n0,first_nonfinite,fc2.out.grad,backward;") != NULL, "events: %s", ev);
    ck_assert_ptr_nonnull(strstr(ev, "\n0,skip,,"));
    ck_assert_ptr_nonnull(strstr(ev, "\n0,backoff,,"));
    /* 2^30 halves to 2^18 = 262144: loss gradients ~ 2^18/32 * p fit in fp16 */
    int skips = 0, backoffs = 0;
    for (const char *p = ev; (p = strstr(p, ",skip,")); p++) skips++;
    for (const char *p = ev; (p = strstr(p, ",backoff,")); p++) backoffs++;
    ck_assert_int_eq(skips, backoffs);
    ck_assert_int_gt(skips, 5);
    ck_assert_int_lt(skips, 40);
    char want[64];
    snprintf(want, sizeof want, "\"skipped_steps\":\t%d,", skips);
    ck_assert_msg(strstr(sum, want) != NULL, "summary lacks %s: %s", want, sum);
    ck_assert_ptr_nonnull(strstr(met, "\n0,"));
    ck_assert_ptr_nonnull(strstr(met, ",1.07374182e+09,1,"));   /* step 0: scale 2^30 (%.9g), skipped */
    free(ev);
    free(sum);
    free(met);
}
END_TEST

/* fp8-hybrid with per-tensor scaling strategies from sim/amp_scaler.h. */
START_TEST(test_fp8_hybrid)
{
    ck_assert_int_eq(train("--precision fp8-hybrid --scaler delayed --steps 30 --log-every 10 --out d"), 0);
    ck_assert_int_eq(train("--precision fp8-hybrid --scaler current --steps 30 --log-every 10 --out c"), 0);
    char *cd = ct_read("d/config.json"), *md = ct_read("d/metrics.csv"), *mc = ct_read("c/metrics.csv"), *td = ct_read("d/tensors.csv");
    ck_assert_ptr_nonnull(strstr(cd, "\"fp8_scaler\":\t\"delayed:"));
    ck_assert_msg(strcmp(md, mc) != 0, "delayed and current scaling gave the same run");
    ck_assert_ptr_nonnull(strstr(td, ",fc2.input,act,e4m3,"));
    ck_assert_ptr_nonnull(strstr(td, ",fc2.out.grad.input,act_grad,e5m2,"));
    ck_assert_ptr_nonnull(strstr(td, ",fc1.weight,weight,e4m3,"));
    free(cd); free(md); free(mc); free(td);
    /* an FP8 strategy needs an FP8-scaled policy */
    ck_assert_int_eq(train("--precision fp16-amp --scaler delayed --steps 3 --out x"), 2);
}
END_TEST

/* Layer-wise loss scaling (adaptive): every gradient tensor carries its own
 * power-of-two scale. In fp32 nothing rounds away, so the run must be the
 * unscaled run exactly (the scales are applied and removed exactly); under
 * fp16-amp the scales differ between tensors. */
START_TEST(test_layerwise_scaling)
{
    ck_assert_int_eq(train("--precision fp32 --layers 4 --hidden 16 --steps 60 --scaler none --out n"), 0);
    ck_assert_int_eq(train("--precision fp32 --layers 4 --hidden 16 --steps 60 --scaler adaptive --out a"), 0);
    double ln[64], la[64];
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/n/metrics.csv", tmpdir);
    snprintf(p2, sizeof p2, "%s/a/metrics.csv", tmpdir);
    ck_assert_int_eq(read_col(p1, 1, ln, 64), 60);
    ck_assert_int_eq(read_col(p2, 1, la, 64), 60);
    for (int s = 0; s < 60; s++) ck_assert_msg(ln[s] == la[s], "step %d: %.9g vs %.9g", s, ln[s], la[s]);
    double sc[64];
    ck_assert_int_eq(read_col(p2, 2, sc, 64), 60);
    ck_assert(sc[0] != 1.0);                            /* a scale was in use */
    ck_assert_int_eq(train("--precision fp16-amp --layers 8 --hidden 16 --steps 30 --scaler adaptive --out f"), 0);
    char *ev = ct_read("f/events.csv");
    ck_assert_msg(strstr(ev, "layer_scales") != NULL, "no layer-wise scale events: %s", ev);
    free(ev);
}
END_TEST

/* --checkpoint-every / --resume: a run killed with SIGKILL and resumed writes
 * the same bytes as an uninterrupted run (check_resume runs the many-trial version). */
static int same_files(const char *d1, const char *d2)
{
    static const char *const files[] = { "metrics.csv", "tensors.csv", "hist.csv", "events.csv", "summary.json" };
    return ct_same_files(d1, d2, files, 5);
}

START_TEST(test_checkpoint_resume)
{
    const char *A = "--precision fp16-amp --scaler torch:init=2^20,interval=7 --hidden 256 --batch 128 --steps 300 "
                    "--log-every 7 --hist-every 13 --checkpoint-every 20 --optim adamw --lr 0.003";
    char args[1024];
    snprintf(args, sizeof args, "%s --out ref", A);
    ck_assert_int_eq(train(args), 0);
    /* resuming a finished run re-runs the tail from the last checkpoint: same bytes */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp -r '%s/ref' '%s/again'", tmpdir, tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(args, sizeof args, "%s --out again --resume", A);
    ck_assert_int_eq(train(args), 0);
    ck_assert(same_files("ref", "again"));
    /* killed at some point, then resumed */
    for (int trial = 0; trial < 2; trial++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf k && { AMP_SRCDIR='%s' '%s' train %s --out k 2>/dev/null & p=$!; "
                 "sleep 0.%d; kill -9 $p; wait $p; } >/dev/null 2>&1; true", tmpdir, srcdir, ampsim, A, 2 + 3 * trial);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(args, sizeof args, "%s --out k --resume", A);
        ck_assert_int_eq(train(args), 0);
        ck_assert_msg(same_files("ref", "k"), "trial %d: resumed run differs", trial);
        snprintf(cmd, sizeof cmd, "ls '%s/k' | grep -q -E 'tmp|sync'", tmpdir);
        ck_assert_msg(system(cmd) != 0, "temporaries left after resume");
    }
    /* other options: refused */
    snprintf(args, sizeof args, "%s --lr 0.1 --out k --resume", A);
    ck_assert_int_eq(train(args), 2);
}
END_TEST

static void expect_bad(const char *args, const char *needle)
{
    int rc = train(args);
    char *err = ct_read("err");
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
    expect_bad("--act swish", "swish");
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
    /* a label that is not a class number (a pixel of 17 is now just a feature of a CSV of your own) */
    fp = fopen(path, "w");
    for (int k = 0; k < 64; k++) fprintf(fp, "%d,", k == 9 ? 17 : 0);
    fputs("2.5\n", fp);
    fclose(fp);
    expect_bad("--data d.csv", "d.csv:1");
    /* a row of another width than the first */
    fp = fopen(path, "w");
    for (int k = 0; k < 64; k++) fprintf(fp, "0,");
    fputs("3\n", fp);
    for (int k = 0; k < 63; k++) fprintf(fp, "0,");
    fputs("3\n", fp);
    fclose(fp);
    expect_bad("--data d.csv", "d.csv:2");
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
    tcase_add_test(tc, test_overflow_events);
    tcase_add_test(tc, test_fp8_hybrid);
    tcase_add_test(tc, test_layerwise_scaling);
    tcase_add_test(tc, test_checkpoint_resume);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
