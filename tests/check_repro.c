/* The reproducibility contract (docs/speed-repro.md): the runs of
 * tests/repro/runs.txt give the metrics.csv, tensors.csv and hist.csv whose
 * SHA-256 sums are committed in tests/repro/golden.sha256, with the default
 * kernel paths, with AMP_SIMD=generic, with each GEMM path (AMP_GEMM_PATH),
 * with --threads 2, and under every OPENBLAS_CORETYPE this machine accepts.
 * The sums were made on one machine; any machine that runs this suite checks
 * them. Regenerate them (tests/repro/regen.sh) only when results change on
 * purpose, and say why in the commit. */
#include "check_main.h"
#include "cli_test.h"
#include "skip.h"

#include <ctype.h>

enum { MAX_RUNS = 16, MAX_SUMS = 64 };
static char run_name[MAX_RUNS][64], run_args[MAX_RUNS][1024];
static int n_runs;
static char sum_file[MAX_SUMS][256], sum_hex[MAX_SUMS][65];
static int n_sums;

static const char *srcdir(void)
{
    const char *s = getenv("AMP_SRCDIR");
    return s ? s : ".";
}

/* runs.txt: NAME ARGS per line, '#' comments; @SRC@ -> the source tree */
static void load_runs(void)
{
    char p[512], line[1024];
    snprintf(p, sizeof p, "%s/tests/repro/runs.txt", srcdir());
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "cannot open %s", p);
    n_runs = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        ck_assert(n_runs < MAX_RUNS);
        char *sp = strchr(line, ' ');
        ck_assert_msg(sp != NULL, "%s: line without arguments: %s", p, line);
        *sp = 0;
        snprintf(run_name[n_runs], sizeof run_name[0], "%.63s", line);
        char *o = run_args[n_runs], *end = o + sizeof run_args[0] - 1;
        for (const char *a = sp + 1; *a && o < end;) {
            if (!strncmp(a, "@SRC@", 5)) {
                o += snprintf(o, (size_t)(end - o), "%s", srcdir());
                a += 5;
            } else *o++ = *a++;
        }
        *o = 0;
        n_runs++;
    }
    fclose(f);
    snprintf(p, sizeof p, "%s/tests/repro/golden.sha256", srcdir());
    f = fopen(p, "r");
    ck_assert_msg(f != NULL, "cannot open %s", p);
    n_sums = 0;
    while (fgets(line, sizeof line, f)) {
        char hex[80], name[200];
        if (sscanf(line, "%79s %199s", hex, name) != 2 || strlen(hex) != 64) continue;
        ck_assert(n_sums < MAX_SUMS);
        snprintf(sum_hex[n_sums], 65, "%.64s", hex);
        snprintf(sum_file[n_sums], sizeof sum_file[0], "%s", name);
        n_sums++;
    }
    fclose(f);
    ck_assert_msg(n_runs > 0 && n_sums == 3 * n_runs, "%d runs, %d sums", n_runs, n_sums);
}

static const char *golden(const char *file)
{
    for (int i = 0; i < n_sums; i++)
        if (!strcmp(sum_file[i], file)) return sum_hex[i];
    return NULL;
}

/* Every run under environment env and extra arguments; each file against its sum. */
static void check_variant(const char *what, const char *env, const char *extra)
{
    static const char *const files[3] = { "metrics.csv", "tensors.csv", "hist.csv" };
    ct_mkdtemp("ampsim-repro");
    for (int r = 0; r < n_runs; r++) {
        char args[2200];
        snprintf(args, sizeof args, "train %.1024s %.100s --out %.63s", run_args[r], extra, run_name[r]);
        const char *bin = getenv("AMPSIM");
        ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "cd %s && env %s %s %.2500s >out 2>err", tmpdir, env, bin, args);
        int st = system(cmd);
        ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s failed", what, run_name[r]);
        for (int f = 0; f < 3; f++) {
            char rel[200], path[600], hex[65];
            snprintf(rel, sizeof rel, "%.63s/%s", run_name[r], files[f]);
            snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
            ck_assert_msg(amp_sha256_file(path, hex) == AMP_OK, "%s", amp_errmsg());
            const char *want = golden(rel);
            ck_assert_msg(want != NULL, "no golden sum for %s", rel);
            ck_assert_msg(!strcmp(hex, want), "%s (%s %s): %s has sha256 %s, golden %s", what, env, extra, rel, hex, want);
        }
    }
    ct_rmtree();
    printf("repro: %s: %d runs, %d files match\n", what, n_runs, 3 * n_runs);
}

START_TEST(test_default) { load_runs(); check_variant("default paths", "", ""); }
END_TEST

START_TEST(test_generic) { load_runs(); check_variant("AMP_SIMD=generic", "AMP_SIMD=generic", ""); }
END_TEST

START_TEST(test_gemm_paths)
{
    load_runs();
    check_variant("AMP_GEMM_PATH=avx2", "AMP_GEMM_PATH=avx2", "");
    check_variant("AMP_GEMM_PATH=generic", "AMP_GEMM_PATH=generic", "");
}
END_TEST

START_TEST(test_threads) { load_runs(); check_variant("--threads 2", "", "--threads 2"); }
END_TEST

/* OpenBLAS core types of x86-64 (OpenBLAS's dynamic-arch names). One is
 * accepted when a --gemm blas step runs under it. */
START_TEST(test_openblas_coretypes)
{
    static const char *const cores[] = { "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge",
                                         "Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Opteron", "Barcelona",
                                         "Bobcat", "Bulldozer", "Piledriver", "Steamroller", "Excavator", "Zen" };
    load_runs();
    int accepted = 0;
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
        char env[64];
        snprintf(env, sizeof env, "OPENBLAS_CORETYPE=%s", cores[i]);
        ct_mkdtemp("ampsim-core");
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "cd %s && env %s %s train --gemm blas --steps 2 --log-every 0 --hist-every 0 --out p >out 2>err",
                 tmpdir, env, getenv("AMPSIM"));
        int st = system(cmd);
        ct_rmtree();
        if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("repro: %s: not accepted on this machine\n", env);
            continue;
        }
        check_variant(env, env, "");
        accepted++;
    }
    ck_assert_msg(accepted > 0, "no OpenBLAS core type accepted");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("repro");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_default);
    tcase_add_test(tc, test_generic);
    tcase_add_test(tc, test_gemm_paths);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_openblas_coretypes);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? 1 : 0;
}
