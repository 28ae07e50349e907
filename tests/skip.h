/* Tests that cannot run on this machine say so: one line
 * "skipped: NAME: REASON" on stdout, which make check counts as skipped
 * (tests/run_suites.sh). Under CI (CI=true) a reason that installing a
 * Debian package would fix fails the test instead: CI must install it. */
#ifndef AMP_TEST_SKIP_H
#define AMP_TEST_SKIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#define AMP_SKIP(name, ...)                                                   \
    do {                                                                      \
        printf("skipped: %s: ", name);                                        \
        printf(__VA_ARGS__);                                                  \
        printf("\n");                                                         \
        fflush(stdout);                                                       \
    } while (0)

/* A skip that a package would cure: a failure under CI=true. */
#define AMP_SKIP_PKG(name, pkg, ...)                                          \
    do {                                                                      \
        const char *ci_ = getenv("CI");                                       \
        if (ci_ && !strcmp(ci_, "true"))                                      \
            ck_abort_msg("%s: cannot run under CI: install %s", name, pkg);  \
        AMP_SKIP(name, __VA_ARGS__);                                          \
    } while (0)

#endif
