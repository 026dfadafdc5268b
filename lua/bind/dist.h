/* How this process shares every sweep with others (docs/LUA_API.md "Sweeps on
 * a cluster"): alone (count 1), one of n shards run separately (`--shard i/n`,
 * results merged later with `hbdlab merge`), or one MPI rank of n (blocks
 * gathered so every rank sees every row; only rank 0 writes files and prints). */
#ifndef HL_DIST_H
#define HL_DIST_H
#include <stddef.h>
#include <stdint.h>

#include "hbdlab/sweep.h"

typedef struct hl_dist {
    int32_t index; /* this shard or rank, 0..count-1 */
    int32_t count; /* shards or ranks; 1 = alone */
    int32_t mpi;   /* 1: MPI ranks (gathered); 0: independent shards */
} hl_dist;

/* Set by the host before any script runs; {0, 1, 0} by default. */
extern hl_dist hl_bind_dist;

/* The contiguous block [lo, hi) of n points owned by part `index` of `count`:
 * lo = floor(index * n / count). Blocks in index order tile [0, n). */
void hl_dist_block(int64_t n, int32_t index, int32_t count, int64_t *lo, int64_t *hi);

/* Parses "i/n" (0 <= i < n <= 100000) into *d; 0 on success, else -1. */
int hl_dist_parse_shard(const char *text, hl_dist *d);

/* 1 when built with MPI. */
int hl_dist_have_mpi(void);

/* Starts MPI when the process was launched by mpirun (Open MPI / PMIx
 * environment) and sets hl_bind_dist from the communicator; returns 1 when
 * MPI runs. Without MPI support or launcher, returns 0 and changes nothing. */
int hl_dist_mpi_start(int *argc, char ***argv);

/* Ends MPI (after a failed script: aborts every rank with `code`). */
void hl_dist_mpi_stop(int code);

/* MPI: every rank holds its block [lo, hi) of all[0..n) (hl_dist_block of n);
 * afterwards every rank holds all n points. 0 on success. */
int hl_dist_allgather_points(hl_point *all, int64_t n);

/* MPI: concatenates every rank's text in rank order; on every rank *out is a
 * malloc'd buffer (caller frees) of *out_len bytes. 0 on success. */
int hl_dist_allgather_text(const char *mine, size_t len, char **out, size_t *out_len);

#endif
