/* hbdlab_mpi.so: the MPI calls of the bindings (lua/bind/mpi_ops.h), the only code linked
 * against libmpi. The host dlopens it when it starts under an MPI launcher (lua/host/launch.c);
 * a plain run never maps libmpi. */
#include <mpi.h>
#include <stddef.h>

#include "mpi_ops.h"

const hl_mpi_ops *hl_mpi_plugin_ops(void);

static int init(int *argc, char ***argv, int *rank, int *size)
{
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

static void finalize(void) { MPI_Finalize(); }

static void abort_all(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static MPI_Request pending; /* the one reduction in flight (start_min_reduce .. test_reduce) */

static int start_min_reduce(const long long *in, long long *out, int n)
{
    return MPI_Iallreduce(in, out, n, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD, &pending) == MPI_SUCCESS ? 0 : -1;
}

static int test_reduce(int *done) { return MPI_Test(&pending, done, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1; }

static int allgather_records(void *all, size_t elem, const int *counts, const int *displs)
{
    MPI_Datatype record;
    if (MPI_Type_contiguous((int)elem, MPI_BYTE, &record) != MPI_SUCCESS)
        return -1;
    MPI_Type_commit(&record);
    int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, record, MPI_COMM_WORLD);
    MPI_Type_free(&record);
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int allgather_int(int mine, int *all)
{
    return MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static int allgather_bytes(const char *mine, int n, char *out, const int *counts, const int *displs)
{
    return MPI_Allgatherv(mine, n, MPI_CHAR, out, counts, displs, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

const hl_mpi_ops *hl_mpi_plugin_ops(void)
{
    static const hl_mpi_ops ops = {HL_MPI_OPS_ABI,   init,        finalize,          abort_all,
                                   start_min_reduce, test_reduce, allgather_records, allgather_int,
                                   allgather_bytes};
    return &ops;
}
