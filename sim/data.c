/* Where data files are found. */
#include "amp_base.h"
#include "amp_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

amp_status amp_data_find(const char *file, char *out, size_t len)
{
    char cand[4096];
    const char *env;
    if ((env = getenv("AMP_DATADIR")) && *env) {
        snprintf(cand, sizeof cand, "%s/%s", env, file);
        if (!access(cand, R_OK)) goto found;
    }
    if ((env = getenv("AMP_SRCDIR")) && *env) {
        snprintf(cand, sizeof cand, "%s/datasets/%s", env, file);
        if (!access(cand, R_OK)) goto found;
    }
    snprintf(cand, sizeof cand, "datasets/%s", file);
    if (!access(cand, R_OK)) goto found;
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(cand, sizeof cand, "%s/../datasets/%s", exe, file);
            if (!access(cand, R_OK)) goto found;
            snprintf(cand, sizeof cand, "%s/../share/ampsim/datasets/%s", exe, file);
            if (!access(cand, R_OK)) goto found;
        }
    }
    return amp_fail(AMP_EINVAL, "dataset %s not found (set AMP_DATADIR or pass --data PATH)", file);
found:
    snprintf(out, len, "%s", cand);
    return AMP_OK;
}
