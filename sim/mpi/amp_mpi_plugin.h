/* ampsim — the MPI plugin's interface. The plain ampsim binary never links
 * MPI: under mpirun/srun, `compare` and `sweep` dlopen() ampsim-mpi.so (built
 * from sim/mpi/mpi_plugin.c with mpicc flags only when pkg-config finds
 * ompi-c) and call MPI through this table. Plain ints only, so the binary
 * needs no MPI header. */
#ifndef AMP_MPI_PLUGIN_H
#define AMP_MPI_PLUGIN_H

#define AMP_MPI_PLUGIN_VERSION 1
#define AMP_MPI_PLUGIN_SYMBOL "ampsim_mpi_plugin_v1"

typedef struct amp_mpi_plugin {
    int version;                                   /* AMP_MPI_PLUGIN_VERSION */
    /* MPI_Init; 0 ok. */
    int (*init)(int *rank, int *size);
    /* Blocking standard send of n ints; 0 ok. */
    int (*send)(const int *buf, int n, int dest, int tag);
    /* MPI_Iprobe(ANY_SOURCE, tag): 1 and *src if a message waits, else 0; <0 error. */
    int (*probe)(int tag, int *src);
    /* Receive n ints from src with tag (after probe said it waits); 0 ok. */
    int (*recv)(int *buf, int n, int src, int tag);
    void (*finalize)(void);
    void (*abort_all)(int code);
} amp_mpi_plugin;

typedef const amp_mpi_plugin *(*amp_mpi_plugin_fn)(void);

#endif
