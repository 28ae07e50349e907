/* ampsim CLI — one file per subcommand (sim/cli_<cmd>.c), dispatched by main.c.
 * Each returns the process exit code: 0 ok, 1 run failed, 2 bad usage/input. */
#ifndef AMP_CLI_H
#define AMP_CLI_H

#include "ampsim.h"

int amp_cli_formats(int argc, char **argv);
int amp_cli_round(int argc, char **argv);
int amp_cli_analyze(int argc, char **argv);
int amp_cli_train(int argc, char **argv);
int amp_cli_compare(int argc, char **argv);
int amp_cli_scaler_replay(int argc, char **argv);
int amp_cli_report(int argc, char **argv);
int amp_cli_bench(int argc, char **argv);
int amp_cli_sweep(int argc, char **argv);

/* Helpers shared by the subcommands (sim/cli_util.c). */
/* Prints "ampsim <cmd>: <msg>\n" to stderr; returns 2. */
int amp_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "ampsim: <amp_errmsg()>" and returns the exit code for a status
 * (AMP_ERUN -> 1, everything else -> 2). */
int amp_cli_fail(amp_status st);
/* Strict numeric parsing: whole string, range-checked. 0 on success. */
int amp_cli_parse_long(const char *s, long lo, long hi, long *out);
int amp_cli_parse_u64(const char *s, uint64_t *out);
int amp_cli_parse_double(const char *s, double *out);
/* 1 if argv[i] is "--help" or "-h". */
int amp_cli_is_help(const char *a);
/* 1 if stderr is a terminal (progress output allowed). */
int amp_cli_progress_ok(void);

#endif
