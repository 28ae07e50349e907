/* Test helpers shared by the suites that drive the ampsim binary: a temporary
 * folder per test, running `ampsim ARGS` in it (stdout to out, stderr to err),
 * and reading a file back. Header only (static functions): every suite is its
 * own executable. */
#ifndef AMP_CLI_TEST_H
#define AMP_CLI_TEST_H

#include "ampsim.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char tmpdir[256];

/* Creates /tmp/<prefix>.XXXXXX as tmpdir. */
static void ct_mkdtemp(const char *prefix)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/%s.XXXXXX", prefix);
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static void ct_rmtree(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert(system(cmd) == 0);
}

/* Runs `$AMPSIM args` in tmpdir; returns its exit code. */
static int run(const char *args)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "set AMPSIM to the ampsim binary");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s >out 2>err", tmpdir, bin, args);
    int st = system(cmd);
    ck_assert(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* tmpdir/rel, whole, NUL-terminated (caller frees); fails the test if unreadable. */
static char *slurp(const char *rel)
{
    char p[700], *d;
    size_t l;
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    ck_assert_msg(amp_read_file(p, (size_t)1 << 26, &d, &l) == AMP_OK, "%s", amp_errmsg());
    return d;
}

#endif
