/* SIGINT and SIGTERM for the long commands (train, compare, sweep, report):
 * the handler only records the signal; the commands poll it between steps,
 * runs and figures, stop their children, remove their temporaries and exit
 * 128 + the signal (130, 143). A second signal ends the process at once. */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
    if (got) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    got = sig;
}

void amp_cli_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;             /* no SA_RESTART: a blocking wait() returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

const volatile sig_atomic_t *amp_cli_stop_flag(void) { return &got; }

int amp_cli_interrupted(void) { return got != 0; }

int amp_cli_interrupt_exit(const char *cmd, const char *msg)
{
    fprintf(stderr, "ampsim %s: %s\n", cmd, msg && *msg ? msg : "interrupted; run the same command again to resume");
    return 128 + (got ? got : SIGINT);
}
