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
    uint64_t run;  /* shards: a hash of the command line and the files it names (hl_dist_run_id), the
                    * same in every shard of one run; written in each shard file's fingerprint */
} hl_dist;

/* Set by the host before any script runs (lua/host/launch.c: --shard, mpirun);
 * {0, 1, 0} by default, and always in the Lua module hbdlab.so. */
extern hl_dist hl_bind_dist;

/* The contiguous block [lo, hi) of n points owned by part `index` of `count`:
 * lo = floor(index * n / count). Blocks in index order tile [0, n). */
void hl_dist_block(int64_t n, int32_t index, int32_t count, int64_t *lo, int64_t *hi);

/* The file a result written to `path` goes to in this process: `path` itself when alone or an
 * MPI rank, else _shard<i>of<n> before the extension ("out.csv" -> "out_shard1of4.csv", "out"
 * -> "out_shard1of4"). Writes at most n bytes (NUL included) to out; returns the length the
 * whole name needs, as snprintf. */
int hl_dist_shard_path(const char *path, char *out, size_t n);

/* FNV-1a 64 of n bytes, continuing from h (start with HL_DIST_HASH_START). */
#define HL_DIST_HASH_START 0xcbf29ce484222325ull
uint64_t hl_dist_hash(uint64_t h, const void *bytes, size_t n);

/* The fingerprint line that starts every CSV file a shard writes (hbdlab merge checks it and
 * drops it): "#hbdlab-shard I/N run=HEX16 rows=LO-HI/TOTAL file=NAME\n", where rows is this
 * shard's block of the sweep the rows came from ("rows=LO-HI/TOTALf": filtered, so fewer
 * rows; "rows=-": not a sweep's block, every shard holds the same rows) and NAME the file's
 * name as the script gave it (its last component, bytes outside [A-Za-z0-9._+-] as %XX).
 * lo < 0: not a sweep's block. Writes "" when this process is not a shard. As snprintf. */
int hl_dist_shard_line(const char *path, int64_t lo, int64_t hi, int64_t total, int filtered, char *out, size_t n);

/* 1 when built with MPI. */
int hl_dist_have_mpi(void);

/* MPI: every rank holds its block [lo, hi) of all[0..n) (hl_dist_block of n);
 * afterwards every rank holds all n points. 0 on success. */
int hl_dist_allgather_points(hl_point *all, int64_t n);

/* MPI: concatenates every rank's text in rank order; on every rank *out is a
 * malloc'd buffer (caller frees) of *out_len bytes. 0 on success. */
int hl_dist_allgather_text(const char *mine, size_t len, char **out, size_t *out_len);

#endif
