/* Test helpers shared by the suites that drive the ampsim binary or write
 * files: a temporary folder per test, running `ampsim ARGS` in it (stdout to
 * out, stderr to err), reading a file back, comparing run directories. Header
 * only (static inline: a suite uses what it needs); every suite is its own
 * executable. */
#ifndef AMP_CLI_TEST_H
#define AMP_CLI_TEST_H

#include "ampsim.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

/* Creates /tmp/<prefix>.XXXXXX as tmpdir. */
static inline void ct_mkdtemp(const char *prefix)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/%s.XXXXXX", prefix);
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static inline void ct_rmtree(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert(system(cmd) == 0);
}

/* Runs `$AMPSIM args` in tmpdir; returns its exit code. */
static inline int run(const char *args)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s >out 2>err", tmpdir, bin, args);
    int st = system(cmd);
    ck_assert(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* tmpdir/rel, whole, NUL-terminated (caller frees); NULL if unreadable. */
static inline char *ct_read(const char *rel)
{
    char p[700], *d;
    size_t l;
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    return amp_read_file(p, (size_t)1 << 28, &d, &l) == AMP_OK ? d : NULL;
}

/* As ct_read, but fails the test if unreadable. */
static inline char *slurp(const char *rel)
{
    char *d = ct_read(rel);
    ck_assert_msg(d != NULL, "%s", amp_errmsg());
    return d;
}

/* 1 if files[0..n) are byte-identical in run directories d1 and d2 (relative
 * to tmpdir); names the first that differs on stderr. */
static inline int ct_same_files(const char *d1, const char *d2, const char *const *files, int n)
{
    for (int f = 0; f < n; f++) {
        char p1[300], p2[300];
        snprintf(p1, sizeof p1, "%s/%s", d1, files[f]);
        snprintf(p2, sizeof p2, "%s/%s", d2, files[f]);
        char *a = ct_read(p1), *b = ct_read(p2);
        int same = a && b && !strcmp(a, b);
        if (!same) fprintf(stderr, "%s and %s differ\n", p1, p2);
        free(a);
        free(b);
        if (!same) return 0;
    }
    return 1;
}

#endif
