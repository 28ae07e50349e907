/* Test helpers shared by the report suites (check_report, check_report_trust):
 * a temporary folder per test, small file helpers, a synthetic run directory,
 * the CLI run with its stderr, and the checks that every link of a page
 * resolves and that no temporary file is left. Header only (static inline). */
#ifndef AMP_REPORT_TEST_H
#define AMP_REPORT_TEST_H

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ampsim.h"

static char tmpdir[256];

static inline void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    ck_assert_msg(fp != NULL, "cannot write %s", path);
    fputs(text, fp);
    fclose(fp);
}

static inline char *read_text(const char *path, size_t *len)
{
    char *d = NULL;
    size_t n = 0;
    if (amp_read_file(path, 1 << 26, &d, &n)) return NULL;
    if (len) *len = n;
    return d;
}

static inline void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[1024];
            snprintf(p, sizeof p, "%.700s/%.255s", path, e->d_name);
            rm_rf(p);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_report.XXXXXX");
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static inline void teardown(void)
{
    if (!getenv("AMP_KEEP")) rm_rf(tmpdir);
}

/* ---- strict CSV --------------------------------------------------------- */

/* ---- synthetic run and compare directories ------------------------------ */

/* A run directory of `steps` steps. Gradient magnitudes follow a log-normal
 * shape centred on 2^centre; scale > 1 means a loss-scaled run (static scale
 * with one skipped step at step 7 and one backoff). */
static inline void make_run(const char *dir, const char *precision, const char *fmt, int steps, int centre,
                     double scale)
{
    char p[1024];
    mkdir(dir, 0777);
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *fp = fopen(p, "w");
    fprintf(fp, "{\n  \"ampsim_version\": \"test\",\n  \"precision\": \"%s\",\n  \"scaler\": \"%s\",\n"
                "  \"policy\": {\"roles\": {\"weight_grad\": \"%s\"}}\n}\n",
            precision, scale > 1 ? "static:4096" : "none", fmt);
    fclose(fp);
    snprintf(p, sizeof p, "%s/metrics.csv", dir);
    fp = fopen(p, "w");
    fprintf(fp, "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite\n");
    for (int s = 0; s < steps; s++) {
        double S = scale > 1 ? (s < 8 ? scale : scale / 2) : 1;
        fprintf(fp, "%d,%.9g,%.9g,%d,0.5,0.1,0,0\n", s, 2.3 * exp(-0.05 * s) + 0.01 * (centre & 3),
                S, scale > 1 && s == 7);
    }
    fclose(fp);
    static const char *const names[] = { "fc1.weight", "fc1.weight.grad", "fc1.bias.grad", "fc1.out.grad",
                                         "fc2.weight.grad", "fc2.out.grad" };
    static const char *const roles[] = { "weight", "weight_grad", "weight_grad", "act_grad",
                                         "weight_grad", "act_grad" };
    snprintf(p, sizeof p, "%s/tensors.csv", dir);
    fp = fopen(p, "w");
    fprintf(fp, "step,tensor,role,format,n,zero_in,flushed,subnormal,saturated,overflow,nan,amax,amin_nonzero,rel_err\n");
    for (int s = 0; s < steps; s += 5)
        for (int t = 0; t < 6; t++) {
            int fl = t == 0 ? 0 : (s + 3 * t) % 7 * (scale > 1 ? 1 : 20);
            fprintf(fp, "%d,%s,%s,%s,1000,%d,%d,%d,%d,%d,0,%.9g,%.9g,%.6g\n", s, names[t], roles[t],
                    t == 0 ? "fp32" : fmt, t, fl, 2 * fl, s == 10 && t == 3, 0, 0.5, 1e-6, 1e-3);
        }
    fclose(fp);
    snprintf(p, sizeof p, "%s/hist.csv", dir);
    fp = fopen(p, "w");
    fprintf(fp, "step,tensor,binade,count\n");
    for (int s = 0; s < steps; s += 5)
        for (int t = 0; t < 6; t++) {
            int shift = t == 0 || scale <= 1 ? 0 : (int)lround(log2(s < 8 ? scale : scale / 2));
            fprintf(fp, "%d,%s,zero,%d\n", s, names[t], 10 + t);
            for (int b = -14; b <= 14; b++) {
                long cnt = lround(400 * exp(-(double)b * b / 30));
                if (cnt) fprintf(fp, "%d,%s,%d,%ld\n", s, names[t], centre - 3 * t + b + shift, cnt);
            }
            if (s == 10 && t == 3) fprintf(fp, "%d,%s,inf,2\n", s, names[t]);
        }
    fclose(fp);
    snprintf(p, sizeof p, "%s/events.csv", dir);
    fp = fopen(p, "w");
    fprintf(fp, "step,event,tensor,detail\n");
    if (scale > 1) fprintf(fp, "7,skip,,\"scale 4096, inf in fc1.out.grad\"\n7,first_nonfinite,fc1.out.grad,backward; 2 values\n");
    fclose(fp);
    snprintf(p, sizeof p, "%s/summary.json", dir);
    write_text(p, "{\"final_loss\": 0.2, \"skipped_steps\": 1}\n");
}

/* Runs the CLI; returns its exit code, stderr in *err (malloc'ed). */
static inline int run_cli(const char *args, char **err)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "AMPSIM is not set");
    char cmd[4096], ep[512];
    snprintf(ep, sizeof ep, "%s/stderr.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", bin, args, ep);
    int st = system(cmd);
    if (err) {
        *err = read_text(ep, NULL);
        if (!*err) *err = strdup("");
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}


/* Every href/src of index.html names a file that exists; returns how many. */
static inline int check_links(const char *report)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/index.html", report);
    char *html = read_text(p, NULL);
    ck_assert_msg(html != NULL, "%s missing", p);
    ck_assert(strstr(html, "</html>") != NULL);
    int n = 0;
    for (const char *s = html; (s = strpbrk(s, "hs")); s++) {
        const char *v = NULL;
        if (!strncmp(s, "href=\"", 6)) v = s + 6;
        else if (!strncmp(s, "src=\"", 5)) v = s + 5;
        if (!v) continue;
        const char *e = strchr(v, '"');
        ck_assert(e != NULL);
        if (*v == '#') continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%.*s", (int)(e - v), v);
        ck_assert_msg(!strstr(rel, "://"), "external link %s", rel);
        snprintf(p, sizeof p, "%s/%s", report, rel);
        struct stat sb;
        ck_assert_msg(stat(p, &sb) == 0 && S_ISREG(sb.st_mode), "index.html links %s, which does not exist", rel);
        n++;
    }
    free(html);
    return n;
}

/* No temporary file left anywhere under dir. */
static inline void check_no_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        ck_assert_msg(!strstr(e->d_name, ".tmp.") && strncmp(e->d_name, ".gnuplot", 8), "left behind: %s/%s", dir, e->d_name);
        char p[1024];
        snprintf(p, sizeof p, "%.700s/%.255s", dir, e->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) check_no_tmp(p);
    }
    closedir(d);
}

#endif
