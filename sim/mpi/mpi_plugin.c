/* ampsim-mpi.so: the MPI calls of distributed compare/sweep (see
 * amp_mpi_plugin.h). Built only when pkg-config finds ompi-c. */
#include "amp_mpi_plugin.h"

#include <dlfcn.h>
#include <mpi.h>

/* The plugin's one entry point, found by dlsym: exported although the
 * project builds with hidden visibility. */
__attribute__((visibility("default"))) const amp_mpi_plugin *ampsim_mpi_plugin_v1(void);

static int p_init(int *rank, int *size)
{
    /* Open MPI loads its components with dlopen: its symbols must be global
     * even though ampsim loaded us (and libmpi) from a plugin. */
    dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return -1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS) return -1;
    if (MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS) return -1;
    return 0;
}

static int p_send(const int *buf, int n, int dest, int tag)
{
    return MPI_Send(buf, n, MPI_INT, dest, tag, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int p_probe(int tag, int *src)
{
    int flag = 0;
    MPI_Status s;
    if (MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS) return -1;
    if (flag) *src = s.MPI_SOURCE;
    return flag ? 1 : 0;
}

static int p_recv(int *buf, int n, int src, int tag)
{
    return MPI_Recv(buf, n, MPI_INT, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
}

static void p_finalize(void)
{
    MPI_Finalize();
}

static void p_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
}

static const amp_mpi_plugin plugin = {
    AMP_MPI_PLUGIN_VERSION, p_init, p_send, p_probe, p_recv, p_finalize, p_abort,
};

const amp_mpi_plugin *ampsim_mpi_plugin_v1(void)
{
    return &plugin;
}
