/* ampsim CLI — running a list of `ampsim train` runs to completion, for
 * compare and sweep (sim/cli_dist.c): locally as up to --jobs child processes,
 * or, under mpirun/srun, spread over the MPI ranks with dynamic assignment
 * through the MPI plugin (sim/mpi/amp_mpi_plugin.h). */
#ifndef AMP_CLI_DIST_H
#define AMP_CLI_DIST_H

#include "ampsim.h"

/* 1 if this process was started by an MPI launcher (Open MPI's mpirun, or a
 * PMI/PMIx launcher such as srun) and AMPSIM_NO_MPI is not set. */
int amp_cli_dist_active(void);

/* Runs run i as argvs[i] (argv[0] = the plain ampsim binary, "train", ...,
 * "--out", DIR/NAME) with stdout+stderr in DIR/NAME.log and its command in
 * DIR/NAME.cmd, skipping runs whose DIR/NAME/summary.json exists and whose
 * .cmd is the same command (unless force). status[i] = exit code (128+signal
 * if killed). Locally (not under MPI) up to `jobs` at a time. Under MPI every
 * rank runs one run at a time and rank 0 hands out the next run to whichever
 * rank asks; `jobs` is ignored. Without the plugin (a build without MPI) rank
 * 0 runs everything locally and the other ranks do nothing.
 * Returns 0: this process has every status and writes the summary (local, or
 * MPI rank 0); 1: an MPI rank other than 0, nothing more to do; 2: error
 * (message printed); 3: interrupted (local runs: SIGINT/SIGTERM seen, the running
 * runs stopped with SIGTERM and waited for, their .cmd and .log removed).
 * `cmd` names the subcommand in messages. */
int amp_cli_dist_run(const char *cmd, const char *out, const amp_run_cfg *runs, char ***argvs, int n,
                     long jobs, int force, int *status);

#endif
