/* ampsim tests — the end of every Check suite's main. */
#ifndef AMP_CHECK_MAIN_H
#define AMP_CHECK_MAIN_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 under AMP_LONG=1 (make check-long): a suite then adds its long cases,
 * in a test case named "long", and amp_check_failures runs only them. */
static inline int amp_check_long(void)
{
    const char *l = getenv("AMP_LONG");
    return l && *l && strcmp(l, "0") != 0;
}

/* Runs the tests of s (CK_NORMAL output) and returns how many failed; under
 * AMP_LONG=1 only the test case "long" (unless CK_RUN_CASE says otherwise). */
static inline int amp_check_failures(Suite *s)
{
    if (amp_check_long() && !getenv("CK_RUN_CASE")) setenv("CK_RUN_CASE", "long", 1);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}

/* *seed from the environment variable env when it is set; the seed in use
 * is printed (stderr), so that a failure can be repeated. */
static inline void amp_check_seed(const char *suite, const char *env, uint64_t *seed)
{
    const char *e = getenv(env);
    if (e) *seed = strtoull(e, NULL, 0);
    fprintf(stderr, "%s: seed %llu (set %s to change)\n", suite, (unsigned long long)*seed, env);
}

#endif
