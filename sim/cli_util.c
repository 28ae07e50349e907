/* Helpers shared by the subcommands: errors, strict number parsing. */
#include "cli.h"
#include "amp_rundir.h"

#include <cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int amp_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ampsim %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

int amp_cli_fail(amp_status st)
{
    fprintf(stderr, "ampsim: %s\n", *amp_errmsg() ? amp_errmsg() : amp_status_name(st));
    return st == AMP_ERUN ? 1 : 2;
}

int amp_cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int amp_cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int amp_cli_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || (errno == ERANGE && isinf(v))) return -1;
    *out = v;
    return 0;
}

int amp_cli_is_help(const char *a) { return a && (!strcmp(a, "--help") || !strcmp(a, "-h")); }

int amp_cli_progress_ok(void) { return isatty(2); }

/* A finished run whose loss ended not finite (summary.json final_loss_finite
 * false) is a failed run: one line naming the first non-finite step, tensor
 * and phase, and exit 1. 0 when the run ended finite (or has no summary). CMD names the
 * command in the line. */
int amp_cli_run_failed(const char *cmd, const char *dir)
{
    char *text = NULL;
    if (amp_run_read_summary(dir, &text) || !text) { free(text); return 0; }
    cJSON *j = cJSON_Parse(text);
    free(text);
    cJSON *fin = j ? cJSON_GetObjectItemCaseSensitive(j, "final_loss_finite") : NULL;
    int bad = fin && cJSON_IsFalse(fin);
    if (bad) {
        cJSON *nf = cJSON_GetObjectItemCaseSensitive(j, "first_nonfinite");
        cJSON *st = nf ? cJSON_GetObjectItemCaseSensitive(nf, "step") : NULL;
        cJSON *te = nf ? cJSON_GetObjectItemCaseSensitive(nf, "tensor") : NULL;
        cJSON *ph = nf ? cJSON_GetObjectItemCaseSensitive(nf, "phase") : NULL;
        if (cJSON_IsNumber(st) && cJSON_IsString(te) && cJSON_IsString(ph))
            fprintf(stderr, "ampsim %s: %s: the loss ended not finite; the first non-finite value was at step %.0f in %s (%s)\n",
                    cmd, dir, st->valuedouble, te->valuestring, ph->valuestring);
        else
            fprintf(stderr, "ampsim %s: %s: the loss ended not finite\n", cmd, dir);
    }
    cJSON_Delete(j);
    return bad;
}
