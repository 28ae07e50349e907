/* Helpers shared by the subcommands: errors, strict number parsing. */
#include "cli.h"

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
