/* ampsim CLI — one file per subcommand (sim/cli_<cmd>.c), dispatched by main.c.
 * Each returns the process exit code: 0 ok, 1 run failed, 2 bad usage/input. */
#ifndef AMP_CLI_H
#define AMP_CLI_H

#include "ampsim.h"

#include <signal.h>

int amp_cli_formats(int argc, char **argv);
int amp_cli_round(int argc, char **argv);
int amp_cli_analyze(int argc, char **argv);
int amp_cli_check_cast(int argc, char **argv);
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
/* 1 (and one line on stderr, "ampsim CMD: DIR: ...") when the finished run in
 * DIR ended with a non-finite loss (its summary.json); 0 otherwise. */
int amp_cli_run_failed(const char *cmd, const char *dir);

/* SIGINT/SIGTERM (sim/cli_signal.c): amp_cli_catch_signals installs a handler
 * that records the signal (a second one ends the process); commands poll
 * amp_cli_stop_flag() / amp_cli_interrupted() and, once cleaned up, return
 * amp_cli_interrupt_exit(cmd, msg): prints "ampsim CMD: MSG" (default: the
 * resume hint) and returns 130 for SIGINT, 143 for SIGTERM. */
void amp_cli_catch_signals(void);
const volatile sig_atomic_t *amp_cli_stop_flag(void);
int amp_cli_interrupted(void);
int amp_cli_interrupt_exit(const char *cmd, const char *msg);

/* ---- the option parser (sim/cli_opt.c) -----------------------------------
 * A table of options, ended by an entry with name NULL. Every option is
 * accepted as `--key value` and `--key=value`. */
typedef enum amp_cli_kind {
    AMP_OPT_FLAG,    /* no value: *(int *)dst = lo */
    AMP_OPT_BITS,    /* no value: *(unsigned *)dst |= lo (a flag bit) */
    AMP_OPT_STR,     /* *(const char **)dst = value */
    AMP_OPT_OPTSTR,  /* the value is optional (the next word unless it starts with --; else "") */
    AMP_OPT_INT,     /* *(int *)dst, an integer in [lo, hi] */
    AMP_OPT_I64,     /* *(int64_t *)dst, an integer in [lo, hi] */
    AMP_OPT_U64,     /* *(uint64_t *)dst, any unsigned integer */
    AMP_OPT_DOUBLE,  /* *(double *)dst, a number in [lo, hi] */
    AMP_OPT_LIST,    /* repeatable: appended to the amp_cli_list at dst */
    AMP_OPT_FN,      /* fn(value, dst) parses: non-zero = bad (amp_errmsg says why) */
    AMP_OPT_REFUSE,  /* not accepted here: the message is the string at dst */
} amp_cli_kind;

typedef struct amp_cli_list {
    const char **v;  /* room for max entries */
    int n, max;      /* a word beyond max is an "unexpected argument" error */
} amp_cli_list;

typedef struct amp_cli_opt {
    const char *name;            /* "--steps" */
    amp_cli_kind kind;
    void *dst;
    double lo, hi;
    amp_status (*fn)(const char *v, void *dst);
} amp_cli_opt;

/* What is neither an option of the table nor its value: */
enum {
    AMP_CLI_STRICT,      /* an error */
    AMP_CLI_POSITIONAL,  /* words that do not start with '-' go to *rest; unknown options are errors */
    AMP_CLI_PASS,        /* everything goes to *rest, in order (options for `ampsim train`) */
};

/* Parses argv[1..argc). Returns 0 when parsed, -1 after --help/-h (help()
 * printed the usage: exit 0), 2 after printing a one-line usage error. */
int amp_cli_parse(const char *cmd, int argc, char **argv, const amp_cli_opt *opt, amp_cli_list *rest, int mode,
                  void (*help)(void));
amp_status amp_cli_list_init(amp_cli_list *l, int argc);
/* --rounding's parser (amp_rounding_parse into an amp_rounding). */
amp_status amp_cli_parse_rounding(const char *v, void *dst);
/* The cast options that round, analyze and check-cast share, as table rows
 * that write into the amp_round_opts `o`: --rounding, --saturate, --satprop,
 * --ftz, --daz, --sr-bits, --seed. */
#define AMP_CLI_CAST_OPTS(o)                                                        \
    { "--rounding", AMP_OPT_FN, &(o).mode, 0, 0, amp_cli_parse_rounding },          \
    { "--saturate", AMP_OPT_BITS, &(o).flags, AMP_SATURATE, 0, NULL },              \
    { "--satprop", AMP_OPT_BITS, &(o).flags, AMP_SATPROP, 0, NULL },                \
    { "--ftz", AMP_OPT_BITS, &(o).flags, AMP_FTZ, 0, NULL },                        \
    { "--daz", AMP_OPT_BITS, &(o).flags, AMP_DAZ, 0, NULL },                        \
    { "--sr-bits", AMP_OPT_INT, &(o).sr_bits, 1, 64, NULL },                        \
    { "--seed", AMP_OPT_U64, &(o).seed, 0, 0, NULL }
void amp_cli_list_free(amp_cli_list *l);

#endif
