/* Check suite: `ampsim sweep` and compare/sweep under mpirun — grid planning,
 * every run of an MPI sweep byte-identical to the same configuration trained
 * alone, MPI summaries equal to the local ones, a failing run marked failed
 * while the others finish, a sweep killed with SIGKILL resuming only the
 * missing runs, and the fallback of a build without the MPI plugin.
 * mpirun tests are skipped (with a message) only when mpirun is absent. */
#include "ampsim.h"
#include "skip.h"

#include <check.h>
#include "check_main.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_sweep.XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert(system(cmd) == 0);
}

static const char *bin(void)
{
    const char *b = getenv("AMPSIM");
    ck_assert_msg(b != NULL, "set AMPSIM to the ampsim binary");
    return b;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char body[6000], cmd[6400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd %s && %s", tmpdir, body);
    int st = system(cmd);
    ck_assert(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int have_mpirun(void)
{
    if (system("command -v mpirun >/dev/null 2>&1") == 0) return 1;
    AMP_SKIP_PKG("sweep/mpirun", "openmpi-bin", "mpirun not found (install openmpi-bin); the MPI test is not run");
    return 0;
}

/* "mpirun -np N --oversubscribe [--allow-run-as-root]". Open MPI itself leaks
 * at MPI_Finalize, so under `make sanitize` LeakSanitizer is off for the
 * processes mpirun starts (the same commands run locally keep it on). */
static const char *mpirun(int np)
{
    static char buf[300];
    snprintf(buf, sizeof buf, "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun -np %d --oversubscribe%s",
             np, geteuid() == 0 ? " --allow-run-as-root" : "");
    return buf;
}

static char *slurp(const char *rel)
{
    char p[700], *d;
    size_t l;
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    ck_assert_msg(amp_read_file(p, (size_t)1 << 26, &d, &l) == AMP_OK, "%s", amp_errmsg());
    return d;
}

static int exists(const char *rel)
{
    char p[1200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    return stat(p, &sb) == 0;
}

static void same_file(const char *a, const char *b)
{
    char *x = slurp(a), *y = slurp(b);
    ck_assert_msg(!strcmp(x, y), "%s differs from %s", a, b);
    free(x);
    free(y);
}

static void write_file(const char *rel, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    FILE *fp = fopen(p, "w");
    ck_assert(fp != NULL);
    fputs(text, fp);
    fclose(fp);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

#define TRAIN_JSON "\"train\": {\"layers\": 3, \"hidden\": 16, \"steps\": 20, \"batch\": 16, \"log-every\": 5, \"hist-every\": 0}"
#define TRAIN_ARGS "--layers 3 --hidden 16 --steps 20 --batch 16 --log-every 5 --hist-every 0"

START_TEST(grid_plan)
{
    amp_sweep sw;
    const char *g = "{" TRAIN_JSON ", \"precisions\": [\"fp16-amp\", \"fp8-hybrid\"], \"scalers\": [\"none\", \"delayed:margin=1\"],"
                    " \"seeds\": [1, 7], \"vary\": {\"hidden\": [8, 16], \"no-shuffle\": [false, true]}}";
    ck_assert_msg(amp_sweep_parse(g, "g.json", &sw) == AMP_OK, "%s", amp_errmsg());
    /* per group: ref, fp16-amp__none, fp8-hybrid__none__delayed, fp8-hybrid__none__delayed-margin-1
     * (fp16-amp x delayed dropped) */
    ck_assert_int_eq(sw.ngroups, 8);
    ck_assert_int_eq(sw.nruns, 32);
    ck_assert_str_eq(sw.groups[0].name, "seed1__hidden8__no-shufflefalse");
    ck_assert_str_eq(sw.groups[1].name, "seed1__hidden8__no-shuffletrue");
    ck_assert_str_eq(sw.groups[2].name, "seed1__hidden16__no-shufflefalse");
    ck_assert_str_eq(sw.groups[7].name, "seed7__hidden16__no-shuffletrue");
    ck_assert_str_eq(sw.runs[0].name, "seed1__hidden8__no-shufflefalse/ref");
    ck_assert_str_eq(sw.runs[3].name, "seed1__hidden8__no-shufflefalse/fp8-hybrid__none__delayed-margin-1");
    ck_assert_str_eq(sw.runs[3].scaler, "delayed:margin=1");
    /* argv of the last group's fp16-amp run: common options without the varied hidden, then
     * the group's options (false flags omitted), then precision/scaler/out */
    char **v = amp_sweep_argv(&sw, 29, "/x/ampsim", "D");
    const char *want[] = { "/x/ampsim", "train", "--layers", "3", "--steps", "20", "--batch", "16", "--log-every", "5",
                           "--hist-every", "0", "--seed", "7", "--hidden", "16", "--no-shuffle", "--precision",
                           "fp16-amp", "--scaler", "none", "--out", "D/seed7__hidden16__no-shuffletrue/fp16-amp__none", NULL };
    for (int i = 0; want[i] || v[i]; i++) {
        ck_assert_msg(want[i] && v[i], "argv length differs at %d", i);
        ck_assert_str_eq(v[i], want[i]);
    }
    amp_sweep_argv_free(v);
    amp_sweep_free(&sw);
    /* no seeds, no vary: one unnamed group, compare's names */
    ck_assert(amp_sweep_parse("{\"precisions\": \"fp16-amp,bf16-amp\", \"scalers\": [\"torch:init=1024,interval=3\"]}", "g", &sw) == AMP_OK);
    ck_assert_int_eq(sw.nruns, 3);
    ck_assert_str_eq(sw.runs[1].name, "fp16-amp__torch-init-1024-interval-3");
    ck_assert_str_eq(sw.runs[1].scaler, "torch:init=1024,interval=3");
    amp_sweep_free(&sw);
    /* bad grids name the file and the problem */
    static const struct { const char *g, *needle; } bad[] = {
        { "{\"precisions\": [\"fp16-amp\"], \"bogus\": 1}", "bogus" },
        { "{\"precisions\": [\"fp17\"]}", "fp17" },
        { "{\"precisions\": [\"fp16-amp\"], \"scalers\": [\"torch:nokey=1\"]}", "nokey" },
        { "{\"precisions\": [\"fp16-amp\"], \"train\": {\"precision\": \"fp32\"}}", "precision" },
        { "{\"precisions\": [\"fp16-amp\"], \"vary\": {\"seed\": [1, 2]}}", "seed" },
        { "{\"precisions\": [\"fp16-amp\"], \"seeds\": [1.5]}", "seeds" },
        { "{\"precisions\": [\"fp16-amp\"], \"vary\": {\"hidden\": []}}", "hidden" },
        { "{\"train\": {\"steps\": 3}}", "nothing to compare" },
        { "[1, 2]", "object" },
        { "{\"precisions\": ", "JSON" },
        { "{\"precisions\": \"fp16-amp\", \"precisions\": \"bf16-amp\"}", "given twice" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(amp_sweep_parse(bad[i].g, "grid.json", &sw), AMP_EINVAL);
        ck_assert_msg(strstr(amp_errmsg(), bad[i].needle) && strstr(amp_errmsg(), "grid.json"), "%zu: %s", i, amp_errmsg());
    }
}
END_TEST

START_TEST(cli_bad_usage)
{
    write_file("bad.json", "{\"precisions\": [\"fp16-amp\"], \"vary\": {\"lr\": 0.1}}");
    ck_assert_int_eq(sh("%s sweep bad.json --out o 2>err", bin()), 2);
    char *e = slurp("err");
    ck_assert_msg(strstr(e, "bad.json") && strstr(e, "lr") && !strchr(strchr(e, '\n') + 1, '\n'), "%s", e);
    free(e);
    ck_assert_int_eq(sh("%s sweep --out o 2>/dev/null", bin()), 2);
    ck_assert_int_eq(sh("%s sweep bad.json 2>/dev/null", bin()), 2);
    ck_assert_int_eq(sh("%s sweep nosuch.json --out o 2>err", bin()), 2);
    ck_assert_int_eq(sh("%s sweep bad.json --steps 3 --out o 2>/dev/null", bin()), 2);
    ck_assert_int_eq(sh("%s sweep --help >/dev/null", bin()), 0);
}
END_TEST

/* The MPI sweep: each run equals the same configuration trained alone, the
 * summaries equal the local sweep's and a local compare's. */
START_TEST(mpi_sweep_identical_to_local)
{
    if (!have_mpirun()) return;
    write_file("grid.json", "{" TRAIN_JSON ", \"precisions\": [\"fp16-amp\"], \"scalers\": [\"none\", \"static:4096\"],"
                            " \"seeds\": [1, 2]}");
    ck_assert_int_eq(sh("%s %s sweep grid.json --out m >out 2>err", mpirun(2), bin()), 0);
    char *e = slurp("err");
    /* both ranks ran runs (rank 0 hands out and runs too) */
    ck_assert_msg(count(e, " ok on rank 0 ") + count(e, " ok on rank 1 ") == 6, "%s", e);
    ck_assert_msg(count(e, " ok on rank 1 ") >= 1, "%s", e);
    free(e);
    static const char *const seeds[] = { "1", "2" };
    static const struct { const char *name, *prec, *scaler; } cfg[] = {
        { "ref", "fp32", "none" }, { "fp16-amp__none", "fp16-amp", "none" }, { "fp16-amp__static-4096", "fp16-amp", "static:4096" },
    };
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 3; c++) {
            ck_assert_int_eq(sh("%s train " TRAIN_ARGS " --seed %s --precision %s --scaler %s --force --out alone >/dev/null 2>&1",
                                bin(), seeds[s], cfg[c].prec, cfg[c].scaler), 0);
            char p[800];
            snprintf(p, sizeof p, "m/seed%s/%s/metrics.csv", seeds[s], cfg[c].name);
            same_file("alone/metrics.csv", p);
            snprintf(p, sizeof p, "m/seed%s/%s/tensors.csv", seeds[s], cfg[c].name);
            same_file("alone/tensors.csv", p);
        }
    /* local sweep (no MPI) writes the same summaries */
    ck_assert_int_eq(sh("AMPSIM_NO_MPI=1 %s sweep grid.json --jobs 2 --out l >/dev/null 2>&1", bin()), 0);
    same_file("m/summary.csv", "l/summary.csv");
    same_file("m/seed2/summary.csv", "l/seed2/summary.csv");
    /* a group's summary is the compare summary of the same options */
    ck_assert_int_eq(sh("%s compare --precisions fp16-amp --scalers 'none,static:4096' --jobs 2 " TRAIN_ARGS
                        " --seed 2 --out c >/dev/null 2>&1", bin()), 0);
    same_file("m/seed2/summary.csv", "c/summary.csv");
    char *s = slurp("m/summary.csv");
    ck_assert_msg(!strncmp(s, "group,seed,name,precision,scaler,status,", 40), "%s", s);
    ck_assert_msg(strstr(s, "\nseed2,2,fp16-amp__static-4096,fp16-amp,\"static:4096\",ok,20,") != NULL, "%s", s);
    free(s);
}
END_TEST

START_TEST(mpi_compare_equals_local_compare)
{
    if (!have_mpirun()) return;
    const char *args = "compare --precisions fp16-amp,bf16-amp --scalers 'none;static:4096' " TRAIN_ARGS " --seed 5";
    ck_assert_int_eq(sh("%s %s %s --out m >out 2>err", mpirun(2), bin(), args), 0);
    ck_assert_int_eq(sh("%s %s --jobs 2 --out l >/dev/null 2>&1", bin(), args), 0);
    same_file("m/summary.csv", "l/summary.csv");
    static const char *const names[] = { "ref", "fp16-amp__none", "fp16-amp__static-4096", "bf16-amp__none", "bf16-amp__static-4096" };
    for (int i = 0; i < 5; i++) {
        char a[800], b[800];
        snprintf(a, sizeof a, "m/%s/metrics.csv", names[i]);
        snprintf(b, sizeof b, "l/%s/metrics.csv", names[i]);
        same_file(a, b);
        snprintf(a, sizeof a, "m/%s/tensors.csv", names[i]);
        snprintf(b, sizeof b, "l/%s/tensors.csv", names[i]);
        same_file(a, b);
    }
    /* the same command again under MPI: nothing runs, same summary */
    ck_assert_int_eq(sh("%s %s %s --out m >out 2>err", mpirun(2), bin(), args), 0);
    char *e = slurp("err");
    ck_assert_msg(count(e, " ok on rank ") == 0, "%s", e);
    free(e);
    same_file("m/summary.csv", "l/summary.csv");
}
END_TEST

START_TEST(mpi_failed_run_marked)
{
    if (!have_mpirun()) return;
    /* batch 0 is refused by train (exit 2): that group's runs fail, the others finish */
    write_file("grid.json", "{\"train\": {\"layers\": 2, \"hidden\": 8, \"steps\": 5, \"hist-every\": 0},"
                            " \"precisions\": [\"bf16-amp\"], \"vary\": {\"batch\": [0, 8]}}");
    ck_assert_int_eq(sh("%s %s sweep grid.json --out m >out 2>err", mpirun(2), bin()), 1);
    char *s = slurp("m/summary.csv");
    ck_assert_msg(strstr(s, "\nbatch0,,0,ref,fp32,\"none\",failed,,,,,,,,,,\"none\",\"none\",\n") != NULL, "%s", s);
    ck_assert_msg(strstr(s, "\nbatch0,,0,bf16-amp__none,bf16-amp,\"none\",failed,") != NULL, "%s", s);
    ck_assert_msg(strstr(s, "\nbatch8,,8,ref,fp32,\"none\",ok,5,") != NULL, "%s", s);
    ck_assert_msg(strstr(s, "\nbatch8,,8,bf16-amp__none,bf16-amp,\"none\",ok,5,") != NULL, "%s", s);
    free(s);
    ck_assert(exists("m/batch0/ref.log") && exists("m/batch8/ref/summary.json"));
}
END_TEST

static long mtime_ns(const char *rel)
{
    char p[1200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    if (stat(p, &sb) != 0) return -1;
    return (long)sb.st_mtim.tv_sec * 1000000000L + sb.st_mtim.tv_nsec;
}

START_TEST(killed_sweep_resumes)
{
    enum { N = 8 };
    /* 8 runs of a few tenths of a second each, one at a time */
    write_file("grid.json", "{\"train\": {\"layers\": 3, \"hidden\": 32, \"steps\": 150, \"batch\": 32, \"hist-every\": 0},"
                            " \"precisions\": [\"fp16-amp\", \"bf16-amp\", \"fp16-pure\"], \"scalers\": [\"none\"],"
                            " \"seeds\": [1, 2]}");
    char names[N][64];
    int k = 0;
    for (int s = 1; s <= 2; s++) {
        static const char *const r[] = { "ref", "fp16-amp__none", "bf16-amp__none", "fp16-pure__none" };
        for (int j = 0; j < 4; j++) snprintf(names[k++], 64, "seed%d/%s", s, r[j]);
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd %s && exec env AMPSIM_NO_MPI=1 %s sweep grid.json --jobs 1 --out s >/dev/null 2>&1", tmpdir, bin());
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);   /* own process group: the kill takes the sweep and its train child */
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    /* wait until at least 2 runs finished (at most 30 s), then SIGKILL everything */
    int done = 0;
    for (int t = 0; t < 3000 && done < 2; t++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        done = 0;
        for (int i = 0; i < N; i++) {
            char p[800];
            snprintf(p, sizeof p, "s/%s/summary.json", names[i]);
            done += exists(p);
        }
    }
    /* SIGKILL the sweep process only: its running train child must die with it */
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int ws, orphans = 1;
    ck_assert(waitpid(pid, &ws, 0) == pid);
    for (int t = 0; t < 500 && orphans; t++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        orphans = kill(-pid, 0) == 0;
    }
    if (orphans) kill(-pid, SIGKILL);
    ck_assert_msg(!orphans, "a train child outlived the killed sweep");
    ck_assert_msg(done >= 2 && done < N, "%d runs done when killed (runs too fast or too slow to test)", done);
    long before[N];
    int was_done[N], ndone = 0;
    for (int i = 0; i < N; i++) {
        char p[800];
        snprintf(p, sizeof p, "s/%s/summary.json", names[i]);
        was_done[i] = exists(p);
        ndone += was_done[i];
        snprintf(p, sizeof p, "s/%s/metrics.csv", names[i]);
        before[i] = mtime_ns(p);
    }
    ck_assert(!exists("s/summary.csv"));
    /* start it again (under mpirun when there is one): only the missing runs run */
    int mpi = system("command -v mpirun >/dev/null 2>&1") == 0;
    if (mpi) ck_assert_int_eq(sh("%s %s sweep grid.json --out s >out 2>err", mpirun(2), bin()), 0);
    else ck_assert_int_eq(sh("AMPSIM_NO_MPI=1 %s sweep grid.json --jobs 2 --out s >out 2>err", bin()), 0);
    for (int i = 0; i < N; i++) {
        char p[800];
        snprintf(p, sizeof p, "s/%s/metrics.csv", names[i]);
        long after = mtime_ns(p);
        if (was_done[i]) ck_assert_msg(after == before[i], "%s was run again", names[i]);
        else ck_assert_msg(after != before[i] && after > 0, "%s was not run", names[i]);
        snprintf(p, sizeof p, "s/%s/summary.json", names[i]);
        ck_assert(exists(p));
    }
    if (mpi) {
        char *e = slurp("err");
        ck_assert_msg(count(e, " ok on rank ") == N - ndone, "%d runs missing, log:\n%s", N - ndone, e);
        free(e);
    }
    /* and the result is the sweep run in one go */
    ck_assert_int_eq(sh("AMPSIM_NO_MPI=1 %s sweep grid.json --jobs 2 --out whole >/dev/null 2>&1", bin()), 0);
    same_file("s/summary.csv", "whole/summary.csv");
    for (int i = 0; i < N; i++) {
        char a[800], b[800];
        snprintf(a, sizeof a, "s/%s/metrics.csv", names[i]);
        snprintf(b, sizeof b, "whole/%s/metrics.csv", names[i]);
        same_file(a, b);
    }
}
END_TEST

START_TEST(mpi_without_plugin_runs_on_rank0)
{
    if (!have_mpirun()) return;
    /* a copy of the binary with no ampsim-mpi.so beside it: rank 0 runs everything locally */
    ck_assert_int_eq(sh("mkdir nompi && cp %s nompi/ampsim", bin()), 0);
    write_file("grid.json", "{" TRAIN_JSON ", \"precisions\": [\"bf16-amp\"]}");
    ck_assert_int_eq(sh("%s nompi/ampsim sweep grid.json --jobs 1 --out m >out 2>err", mpirun(2)), 0);
    char *e = slurp("err");
    ck_assert_msg(strstr(e, "rank 0 runs everything locally") && strstr(e, "rank 1 leaves the runs to rank 0"), "%s", e);
    free(e);
    ck_assert_int_eq(sh("AMPSIM_NO_MPI=1 %s sweep grid.json --out l >/dev/null 2>&1", bin()), 0);
    same_file("m/summary.csv", "l/summary.csv");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("sweep");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, grid_plan);
    tcase_add_test(tc, cli_bad_usage);
    tcase_add_test(tc, mpi_sweep_identical_to_local);
    tcase_add_test(tc, mpi_compare_equals_local_compare);
    tcase_add_test(tc, mpi_failed_run_marked);
    tcase_add_test(tc, killed_sweep_resumes);
    tcase_add_test(tc, mpi_without_plugin_runs_on_rank0);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
