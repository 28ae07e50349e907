/* ampsim tests — the end of every Check suite's main. */
#ifndef AMP_CHECK_MAIN_H
#define AMP_CHECK_MAIN_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs every test of s (CK_NORMAL output) and returns how many failed. */
static inline int amp_check_failures(Suite *s)
{
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
