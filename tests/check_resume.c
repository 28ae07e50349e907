/* Check suite: `ampsim train --checkpoint-every K` killed with SIGKILL at
 * random points and continued with `--resume` writes exactly the bytes of an
 * uninterrupted run: config.json, metrics.csv, tensors.csv,
 * hist.csv, events.csv, summary.json; no temporary is left behind. Some trials
 * die before the first checkpoint, some after the end, some are killed twice.
 * The kill schedule comes from a fixed seed (AMP_RESUME_SEED overrides; it is
 * printed on failure). Also: a damaged checkpoint and resuming with other
 * options are exit 2. */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OPTS "--steps 150 --log-every 1 --hist-every 5 --precision fp16-amp " \
             "--scaler torch:init=65536,interval=5 --optim adamw --lr 0.01 --checkpoint-every 7"

static char tmpdir[256];
static uint64_t seed = 2026;

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_resume.XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
    const char *s = getenv("AMP_RESUME_SEED");
    if (s) seed = strtoull(s, NULL, 0);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert(system(cmd) == 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Starts `ampsim train OPTS [extra] --out tmpdir/name` (stdout/stderr to
 * tmpdir/name.err); returns the pid. */
static pid_t start(const char *name, const char *extra)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s train " OPTS " %s --out %s/%s 2>>%s/%s.err >/dev/null", bin, extra,
             tmpdir, name, tmpdir, name);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int finish(pid_t pid)
{
    int st;
    ck_assert(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void kill_after(pid_t pid, double seconds)
{
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    finish(pid);
}

static char *slurp(const char *dir, const char *file)
{
    char p[700], *d;
    size_t l;
    snprintf(p, sizeof p, "%s/%s/%s", tmpdir, dir, file);
    if (amp_read_file(p, (size_t)1 << 28, &d, &l) != AMP_OK) return NULL;
    return d;
}

static int tmp_left(const char *dir)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", tmpdir, dir);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    if (!d) return 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static const char *const files[] = { "config.json", "metrics.csv", "tensors.csv", "hist.csv",
                                     "events.csv", "summary.json" };

START_TEST(killed_and_resumed_runs_are_byte_identical)
{
    double t0 = now_s();
    ck_assert_int_eq(finish(start("ref", "")), 0);
    double T = now_s() - t0;
    char *ref[6];
    for (int f = 0; f < 6; f++) {
        ref[f] = slurp("ref", files[f]);
        ck_assert_msg(ref[f] != NULL, "reference run lacks %s", files[f]);
    }
    int trials = 12, before_first = 0, double_kills = 0;
    for (int i = 0; i < trials; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        /* first kill uniform in [0, 1.2 T]: some before the first checkpoint, some after the end */
        double u = amp_rand_uniform(seed, 1, (uint64_t)i);
        kill_after(start(name, ""), 1.2 * T * u);
        char *ck = slurp(name, "checkpoint.bin");
        if (!ck) before_first++;
        free(ck);
        if (i % 4 == 3) {   /* kill the resumed run too */
            kill_after(start(name, "--resume"), T * amp_rand_uniform(seed, 2, (uint64_t)i));
            double_kills++;
        }
        int rc = finish(start(name, "--resume"));
        ck_assert_msg(rc == 0, "seed %llu trial %d: --resume exit %d (see %s/%s.err)", (unsigned long long)seed, i,
                      rc, tmpdir, name);
        for (int f = 0; f < 6; f++) {
            char *got = slurp(name, files[f]);
            ck_assert_msg(got != NULL, "seed %llu trial %d: %s missing", (unsigned long long)seed, i, files[f]);
            ck_assert_msg(!strcmp(got, ref[f]), "seed %llu trial %d (first kill at %.3f of the run): %s differs",
                          (unsigned long long)seed, i, 1.2 * amp_rand_uniform(seed, 1, (uint64_t)i), files[f]);
            free(got);
        }
        ck_assert_msg(tmp_left(name) == 0, "seed %llu trial %d: temporaries left", (unsigned long long)seed, i);
    }
    fprintf(stderr, "resume: %d trials (%d killed before the first checkpoint, %d killed twice), run %.2f s\n",
            trials, before_first, double_kills, T);
    for (int f = 0; f < 6; f++) free(ref[f]);
}
END_TEST

START_TEST(bad_checkpoint_and_other_options_refused)
{
    pid_t p = start("b", "--steps 30");
    ck_assert_int_eq(finish(p), 0);
    /* resuming a complete run changes nothing */
    char *m0 = slurp("b", "metrics.csv");
    ck_assert_int_eq(finish(start("b", "--steps 30 --resume")), 0);
    char *m1 = slurp("b", "metrics.csv");
    ck_assert_str_eq(m0, m1);
    free(m0);
    free(m1);
    /* other options */
    ck_assert_int_eq(finish(start("b", "--steps 30 --lr 0.02 --resume")), 2);
    /* one flipped byte in the checkpoint */
    char path[600];
    snprintf(path, sizeof path, "%s/b/checkpoint.bin", tmpdir);
    FILE *fp = fopen(path, "r+b");
    ck_assert(fp != NULL);
    ck_assert(fseek(fp, 40, SEEK_SET) == 0);
    int c = fgetc(fp);
    ck_assert(c != EOF);
    ck_assert(fseek(fp, 40, SEEK_SET) == 0);
    fputc(c ^ 0x10, fp);
    fclose(fp);
    ck_assert_int_eq(finish(start("b", "--steps 30 --resume")), 2);
    char *err = slurp("", "b.err");
    ck_assert_msg(err && strstr(err, "checkpoint.bin"), "error does not name the checkpoint: %s", err ? err : "");
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, killed_and_resumed_runs_are_byte_identical);
    tcase_add_test(tc, bad_checkpoint_and_other_options_refused);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
