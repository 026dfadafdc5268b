/* The MPI calls the bindings make, as a table of functions that the host loads from the plugin
 * hbdlab_mpi.so (lua/mpi/hbdlab_mpi.c) only when it runs under an MPI launcher. The executable
 * itself does not link libmpi: Open MPI and the libraries it pulls in (open-rte, open-pal, hwloc,
 * libevent, udev) cost about 2.4 M instructions of dynamic linking on every start, MPI or not
 * (docs/PERFORMANCE.md "Startup"). */
#ifndef HL_MPI_OPS_H
#define HL_MPI_OPS_H
#include <stddef.h>

/* Raised whenever a member changes; the host refuses a plugin of another version. */
#define HL_MPI_OPS_ABI 1
/* The plugin's one exported symbol: `const hl_mpi_ops *hl_mpi_plugin_ops(void)`. */
#define HL_MPI_OPS_SYMBOL "hl_mpi_plugin_ops"

typedef struct hl_mpi_ops {
    int abi; /* HL_MPI_OPS_ABI */
    /* MPI_Init, then this rank and the number of ranks of MPI_COMM_WORLD; 0 on success */
    int (*init)(int *argc, char ***argv, int *rank, int *size);
    void (*finalize)(void);
    void (*abort_all)(int code); /* MPI_Abort(MPI_COMM_WORLD, code): ends every rank */
    /* Starts the element-wise minimum of n long longs over the ranks into out (MPI_Iallreduce);
     * one at a time: test_reduce reports it done (*done = 1) before the next starts. 0 on success. */
    int (*start_min_reduce)(const long long *in, long long *out, int n);
    int (*test_reduce)(int *done);
    /* In place: every rank holds its records [displs[r], displs[r] + counts[r]) of elem bytes in all;
     * afterwards every rank holds every rank's (MPI_Allgatherv). 0 on success. */
    int (*allgather_records)(void *all, size_t elem, const int *counts, const int *displs);
    /* all[r] = rank r's `mine` (MPI_Allgather of one int). 0 on success. */
    int (*allgather_int)(int mine, int *all);
    /* out = every rank's n bytes at displs[r] (MPI_Allgatherv of bytes). 0 on success. */
    int (*allgather_bytes)(const char *mine, int n, char *out, const int *counts, const int *displs);
} hl_mpi_ops;

typedef const hl_mpi_ops *(*hl_mpi_plugin_fn)(void);

/* The loaded plugin's table; NULL when not running under MPI (always in the Lua module hbdlab.so). */
extern const hl_mpi_ops *hl_bind_mpi;

#endif
