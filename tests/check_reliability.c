/* Check suite: full disks and unwritable outputs. `ampsim train`,
 * `round`, `report` and `compare` run with a file-size limit
 * (setrlimit(RLIMIT_FSIZE) in the child, SIGXFSZ ignored, so writes fail with
 * EFBIG as on a full disk) and, when we may mount one, on a 64 KiB tmpfs
 * (ENOSPC). Each must exit non-zero with a one-line error naming a file under
 * the output folder, and leave no temporary and no incomplete file under a
 * final name: every file left is checked by its type (JSON parses, CSV ends
 * with a newline, .npy parses and holds exactly its data, PNG ends with the
 * IEND chunk, SVG with </svg>, PDF with %%EOF, HTML with </html>).
 * Outputs under a path that cannot be a directory (a regular file in the way:
 * works for root too, who ignores permission bits) give exit 2 and a message. */
#include "ampsim.h"
#include "skip.h"

#include <check.h>
#include "check_main.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char basedir[64];    /* made by main, removed at the end even after failures */
static char tmpdir[128];
static const char *ampsim;

static void setup(void)
{
    ampsim = getenv("AMPSIM");
    ck_assert_msg(ampsim && *ampsim, "set AMPSIM to the ampsim binary");
    snprintf(tmpdir, sizeof tmpdir, "%s/t_XXXXXX", basedir);
    ck_assert(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert(system(cmd) == 0);
}

/* Runs argv with stdout to /dev/null, stderr captured into err; fsize > 0
 * limits the size of every file the command (and its children) writes.
 * Returns the exit status, or 128 + signal. */
static int run(long fsize, char *const argv[], char *err, size_t errlen)
{
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmpdir);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        if (fd < 0 || nul < 0) _exit(120);
        dup2(fd, 2);
        dup2(nul, 1);
        signal(SIGXFSZ, SIG_IGN);
        if (fsize > 0) {
            struct rlimit rl = { (rlim_t)fsize, (rlim_t)fsize };
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(121);
        }
        execv(argv[0], argv);
        _exit(122);
    }
    int wst;
    ck_assert(waitpid(pid, &wst, 0) == pid);
    FILE *fp = fopen(errpath, "r");
    ck_assert(fp);
    size_t n = fread(err, 1, errlen - 1, fp);
    err[n] = 0;
    fclose(fp);
    unlink(errpath);
    return WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
}

static int ends_with(const char *buf, size_t n, const char *tail)
{
    size_t k = strlen(tail);
    /* ignore trailing whitespace */
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    return n >= k && !memcmp(buf + n - k, tail, k);
}

static int allow_tmp;   /* a SIGKILLed process cannot remove its temporaries */

/* Checks one file left under a final name: complete for its type. Returns
 * NULL or a description of the defect (static buffer). Frees everything
 * before returning, so a failing check leaks nothing under CK_FORK=no. */
static const char *file_defect(const char *path)
{
    static char msg[8192];
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    if (strstr(name, ".tmp.")) {
        if (allow_tmp) return NULL;
        snprintf(msg, sizeof msg, "temporary left behind: %s", path);
        return msg;
    }
    const char *ext = strrchr(name, '.');
    if (!ext || !strcmp(ext, ".log") || !strcmp(ext, ".txt") || !strcmp(ext, ".gp") || !strcmp(ext, ".dat"))
        return NULL;   /* logs of child runs and gnuplot inputs: not results */
    char *buf;
    size_t n;
    if (amp_read_file(path, (size_t)1 << 30, &buf, &n) != AMP_OK) {
        snprintf(msg, sizeof msg, "%s", amp_errmsg());
        return msg;
    }
    const char *bad = NULL;
    if (!strcmp(ext, ".json")) {
        cJSON *j = cJSON_Parse(buf);
        if (!j) bad = "incomplete JSON";
        cJSON_Delete(j);
    } else if (!strcmp(ext, ".csv")) {
        if (!(n > 0 && buf[n - 1] == '\n')) bad = "CSV does not end with a newline";
    } else if (!strcmp(ext, ".npy")) {
        amp_tensor_view v;
        if (amp_npy_parse(path, buf, n, &v) != AMP_OK) bad = "not a complete .npy";
    } else if (!strcmp(ext, ".png")) {
        static const char iend[8] = { 'I', 'E', 'N', 'D', (char)0xae, 0x42, 0x60, (char)0x82 };
        if (!(n >= 8 && !memcmp(buf + n - 8, iend, 8))) bad = "PNG without its IEND chunk";
    } else if (!strcmp(ext, ".svg")) {
        if (!ends_with(buf, n, "</svg>")) bad = "SVG truncated";
    } else if (!strcmp(ext, ".pdf")) {
        if (!ends_with(buf, n, "%%EOF")) bad = "PDF truncated";
    } else if (!strcmp(ext, ".html")) {
        if (!ends_with(buf, n, "</html>")) bad = "HTML truncated";
    }
    free(buf);
    if (!bad) return NULL;
    snprintf(msg, sizeof msg, "%s: %s (%zu bytes)", path, bad, n);
    return msg;
}

/* Walks dir recursively; *defect gets the first defect found (NULL: none).
 * Returns the number of regular files. */
static int walk_tree(const char *dir, char *defect, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) count += walk_tree(p, defect, len);
        else {
            const char *m = file_defect(p);
            if (m && !*defect) snprintf(defect, len, "%s", m);
            count++;
        }
    }
    closedir(d);
    return count;
}

/* Every file under dir is complete; returns the number of files. */
static int check_tree(const char *dir)
{
    char defect[8192] = "";
    int n = walk_tree(dir, defect, sizeof defect);
    ck_assert_msg(!*defect, "%s", defect);
    return n;
}

/* The error output: one line (or more for compare: the last line counts)
 * naming something under `under`. */
static void check_error(const char *what, const char *err, const char *under, int one_line)
{
    size_t n = strlen(err);
    ck_assert_msg(n > 1 && err[n - 1] == '\n', "%s: no error line on stderr: '%s'", what, err);
    if (one_line) ck_assert_msg(strchr(err, '\n') == err + n - 1, "%s: more than one line: '%s'", what, err);
    ck_assert_msg(strstr(err, under), "%s: message does not name a file under %s: '%s'", what, under, err);
}

static void mkfile(const char *path, const char *text)
{
    ck_assert(amp_write_file_atomic(path, text, strlen(text)) == AMP_OK);
}

/* ---- full disk by RLIMIT_FSIZE ------------------------------------------------- */
START_TEST(train_full_disk)
{
    long limits[] = { 600, 3000, 20000 };
    for (int k = 0; k < 3; k++) {
        char out[512], err[8192];
        snprintf(out, sizeof out, "%s/run%d", tmpdir, k);
        char *argv[] = { (char *)ampsim, "train", "--steps", "30", "--log-every", "1", "--hist-every", "1",
                         "--out", out, NULL };
        int rc = run(limits[k], argv, err, sizeof err);
        ck_assert_msg(rc != 0 && rc < 128, "limit %ld: exit %d (%s)", limits[k], rc, err);
        check_error("train", err, out, 1);
        check_tree(out);
        char p[600];
        snprintf(p, sizeof p, "%s/summary.json", out);
        ck_assert_msg(access(p, F_OK) != 0, "limit %ld: summary.json of a failed run", limits[k]);
        snprintf(p, sizeof p, "%s/metrics.csv", out);
        ck_assert_msg(access(p, F_OK) != 0, "limit %ld: metrics.csv of a failed run", limits[k]);
    }
}
END_TEST

static void make_input(const char *path, size_t n)
{
    /* .f32: n raw little-endian floats */
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)i * 0.37f - 100.0f;
    ck_assert(amp_write_file_atomic(path, v, n * sizeof *v) == AMP_OK);
    free(v);
}

START_TEST(round_full_disk)
{
    char in[512], out[600], err[8192];
    snprintf(in, sizeof in, "%s/in.f32", tmpdir);
    make_input(in, 20000);
    const char *names[] = { "out.npy", "out.f32" };
    for (int k = 0; k < 2; k++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/r%d", tmpdir, k);
        ck_assert(mkdir(dir, 0755) == 0);
        snprintf(out, sizeof out, "%s/%s", dir, names[k]);
        char *argv[] = { (char *)ampsim, "round", "--format", "fp16", "--stats", in, out, NULL };
        int rc = run(30000, argv, err, sizeof err);
        ck_assert_msg(rc != 0 && rc < 128, "exit %d (%s)", rc, err);
        check_error("round", err, out, 1);
        ck_assert_msg(check_tree(dir) == 0, "round left a file in %s", dir);
        /* without the limit it works (the test input is fine) */
        rc = run(0, argv, err, sizeof err);
        ck_assert_msg(rc == 0, "exit %d (%s)", rc, err);
        ck_assert(check_tree(dir) == 1);
    }
}
END_TEST

static void make_run(const char *out, int steps)
{
    char err[8192], st[16];
    snprintf(st, sizeof st, "%d", steps);
    char *argv[] = { (char *)ampsim, "train", "--steps", st, "--precision", "fp16-amp", "--scaler",
                     "torch:init=1024,interval=3", "--log-every", "2", "--hist-every", "4", "--out", (char *)out, NULL };
    int rc = run(0, argv, err, sizeof err);
    ck_assert_msg(rc == 0, "train: exit %d (%s)", rc, err);
}

START_TEST(report_full_disk)
{
    char rund[512], rep[600], err[8192];
    snprintf(rund, sizeof rund, "%s/run", tmpdir);
    make_run(rund, 12);
    snprintf(rep, sizeof rep, "%s/report", rund);
    long limits[] = { 3000, 12000, 40000 };
    int failures = 0;
    for (int k = 0; k < 3; k++) {
        char *argv[] = { (char *)ampsim, "report", rund, "--formats", "png,svg,pdf", "--quiet", NULL };
        int rc = run(limits[k], argv, err, sizeof err);
        ck_assert_msg(rc < 128, "limit %ld: killed (%d)", limits[k], rc);
        check_tree(rund);
        char p[4096];
        snprintf(p, sizeof p, "%s/index.html", rep);
        if (rc == 0) {   /* every file fitted under the per-file limit */
            ck_assert_msg(access(p, F_OK) == 0, "limit %ld: exit 0 without index.html", limits[k]);
            continue;
        }
        failures++;
        check_error("report", err, rund, 1);
        ck_assert_msg(access(p, F_OK) != 0, "limit %ld: index.html of a failed report", limits[k]);
    }
    ck_assert_msg(failures > 0, "no limit made the report fail");
}
END_TEST

START_TEST(compare_full_disk)
{
    char out[512], err[8192];
    snprintf(out, sizeof out, "%s/cmp", tmpdir);
    char *argv[] = { (char *)ampsim, "compare", "--precisions", "fp16-amp", "--scalers", "none",
                     "--steps", "20", "--log-every", "1", "--jobs", "1", "--out", out, NULL };
    int rc = run(4000, argv, err, sizeof err);
    ck_assert_msg(rc != 0 && rc < 128, "exit %d (%s)", rc, err);
    check_error("compare", err, out, 0);
    check_tree(out);
    /* summary.csv, if written, is complete (checked above) and marks the runs failed */
    char p[600], *text;
    size_t n;
    snprintf(p, sizeof p, "%s/summary.csv", out);
    if (amp_read_file(p, 1 << 20, &text, &n) == AMP_OK) {
        ck_assert_msg(strstr(text, ",failed,") && !strstr(text, ",ok,"), "summary.csv: %s", text);
        free(text);
    }
}
END_TEST

/* ---- a real full disk: a 64 KiB tmpfs (root only; skipped otherwise) ---------- */
START_TEST(tmpfs_full_disk)
{
    char mnt[512], err[8192];
    snprintf(mnt, sizeof mnt, "%s/tmpfs", tmpdir);
    ck_assert(mkdir(mnt, 0755) == 0);
    if (geteuid() != 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) {
        AMP_SKIP("reliability/tmpfs_full_disk", "cannot mount a tmpfs here (%s)", strerror(errno));
        return;
    }
    char out[600], in[512], rout[600];
    snprintf(out, sizeof out, "%s/run", mnt);
    char *targv[] = { (char *)ampsim, "train", "--steps", "30", "--log-every", "1", "--hist-every", "1",
                      "--out", out, NULL };
    int rc = run(0, targv, err, sizeof err);
    int rc2;
    snprintf(in, sizeof in, "%s/in.f32", tmpdir);
    make_input(in, 40000);
    snprintf(rout, sizeof rout, "%s/out.npy", mnt);
    char *rargv[] = { (char *)ampsim, "round", "--format", "bf16", in, rout, NULL };
    char err2[8192];
    /* free the space the train test may have used first */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    int cleaned = system(cmd);
    rc2 = run(0, rargv, err2, sizeof err2);
    int files = check_tree(mnt);
    umount2(mnt, MNT_DETACH);
    ck_assert(cleaned == 0);
    ck_assert_msg(rc != 0 && rc < 128, "train on a full tmpfs: exit %d (%s)", rc, err);
    check_error("train (tmpfs)", err, out, 1);
    ck_assert_msg(rc2 != 0 && rc2 < 128, "round on a full tmpfs: exit %d (%s)", rc2, err2);
    check_error("round (tmpfs)", err2, rout, 1);
    ck_assert_msg(files == 0, "files left on the full tmpfs");
}
END_TEST

/* ---- killed midway: every file under a final name is complete ------------------ */
START_TEST(killed_midway)
{
    char rund[512], err[8192];
    snprintf(rund, sizeof rund, "%s/run", tmpdir);
    make_run(rund, 12);
    char *argv[] = { (char *)ampsim, "report", rund, "--formats", "png,svg", "--quiet", NULL };
    ck_assert_msg(run(0, argv, err, sizeof err) == 0, "report: %s", err);
    allow_tmp = 1;
    /* kill a second report (over the complete first one) after 0.1 .. 1.5 s */
    const int ms[] = { 100, 400, 800, 1500 };
    for (int k = 0; k < 4; k++) {
        pid_t pid = fork();
        ck_assert(pid >= 0);
        if (pid == 0) {
            int nul = open("/dev/null", O_WRONLY);
            dup2(nul, 1);
            dup2(nul, 2);
            execv(argv[0], argv);
            _exit(122);
        }
        usleep((useconds_t)ms[k] * 1000);
        kill(pid, SIGKILL);
        int wst;
        ck_assert(waitpid(pid, &wst, 0) == pid);
        check_tree(rund);
    }
    /* a killed compare leaves no incomplete summary.csv or run files */
    char out[512];
    snprintf(out, sizeof out, "%s/cmp", tmpdir);
    char *cargv[] = { (char *)ampsim, "compare", "--precisions", "fp16-amp", "--scalers", "none",
                      "--steps", "200", "--log-every", "1", "--jobs", "1", "--out", out, NULL };
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        setpgid(0, 0);
        execv(cargv[0], cargv);
        _exit(122);
    }
    setpgid(pid, pid);
    usleep(700 * 1000);
    kill(-pid, SIGKILL);       /* compare and its train children */
    int wst;
    ck_assert(waitpid(pid, &wst, 0) == pid);
    usleep(100 * 1000);
    check_tree(out);
    allow_tmp = 0;
}
END_TEST

/* ---- unwritable output folders -------------------------------------------------- */
START_TEST(unwritable_outputs)
{
    char blocker[512], out[600], err[8192], in[512];
    snprintf(blocker, sizeof blocker, "%s/file.txt", tmpdir);
    mkfile(blocker, "a file where a folder should be\n");
    /* train --out under a file */
    snprintf(out, sizeof out, "%s/sub", blocker);
    char *targv[] = { (char *)ampsim, "train", "--steps", "2", "--out", out, NULL };
    int rc = run(0, targv, err, sizeof err);
    ck_assert_msg(rc == 2, "train: exit %d (%s)", rc, err);
    check_error("train", err, blocker, 1);
    /* round OUT under a file */
    snprintf(in, sizeof in, "%s/in.f32", tmpdir);
    make_input(in, 10);
    snprintf(out, sizeof out, "%s/out.npy", blocker);
    char *rargv[] = { (char *)ampsim, "round", "--format", "fp16", in, out, NULL };
    rc = run(0, rargv, err, sizeof err);
    ck_assert_msg(rc == 2, "round: exit %d (%s)", rc, err);
    check_error("round", err, blocker, 1);
    /* compare --out under a file */
    snprintf(out, sizeof out, "%s/cmp", blocker);
    char *cargv[] = { (char *)ampsim, "compare", "--precisions", "fp16-amp", "--scalers", "none", "--steps", "2",
                      "--jobs", "1", "--out", out, NULL };
    rc = run(0, cargv, err, sizeof err);
    ck_assert_msg(rc == 2, "compare: exit %d (%s)", rc, err);
    check_error("compare", err, blocker, 0);
    /* report: DIR/report is a file */
    char rund[512], rp[600];
    snprintf(rund, sizeof rund, "%s/run", tmpdir);
    make_run(rund, 4);
    snprintf(rp, sizeof rp, "%s/report", rund);
    mkfile(rp, "in the way\n");
    char *pargv[] = { (char *)ampsim, "report", rund, "--quiet", NULL };
    rc = run(0, pargv, err, sizeof err);
    ck_assert_msg(rc == 2, "report: exit %d (%s)", rc, err);
    check_error("report", err, rp, 1);
}
END_TEST

int main(void)
{
    snprintf(basedir, sizeof basedir, "/tmp/amp_rel_XXXXXX");
    if (!mkdtemp(basedir)) { perror("mkdtemp"); return 1; }
    Suite *s = suite_create("reliability");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, train_full_disk);
    tcase_add_test(tc, round_full_disk);
    tcase_add_test(tc, report_full_disk);
    tcase_add_test(tc, compare_full_disk);
    tcase_add_test(tc, tmpfs_full_disk);
    tcase_add_test(tc, killed_midway);
    tcase_add_test(tc, unwritable_outputs);
    suite_add_tcase(s, tc);
    int failed = amp_check_failures(s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", basedir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", basedir);
    return failed ? 1 : 0;
}
