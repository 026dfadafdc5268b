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

/* What a rank is about to do, for hl_dist_agree. */
typedef enum hl_dist_step {
    HL_DIST_SWEEP = 1,  /* start a C sweep (hl.sweep with base/axes): count = points, hash = axes */
    HL_DIST_STREAM = 2, /* start hl.sweep_to_csv: count = points, hash = axes */
    HL_DIST_FN = 3,     /* start a function-form hl.sweep: count = points, hash = axes */
    HL_DIST_GATHER = 4, /* gather a sweep's rows: count = 0 when this rank's block ran, else 1 */
    HL_DIST_CHUNK = 5,  /* sweep_to_csv, after each chunk: count = 0 to go on, else 1 */
    HL_DIST_END = 9     /* the script ended: count = 0 on success, 1 after an error */
} hl_dist_step;

/* MPI (issue 22): every collective the bindings make is preceded by this agreement, so ranks
 * that disagree on a sweep's size or axes, or that are at different steps (one rank runs one
 * more sweep, another ended the script), fail together instead of corrupting memory in a
 * gather or waiting forever. One allreduce of (step, count, hash) with their minima and maxima;
 * 0 when every rank gave the same, else -1 with msg (n bytes) the same sentence on every rank.
 * After a disagreement every later call fails at once without MPI (the ranks are out of step).
 * Waits poll the interrupt flag: Ctrl-C or SIGTERM while a rank waits ends the job
 * (MPI_Abort). Without MPI, or alone: 0. */
int hl_dist_agree(hl_dist_step step, int64_t count, uint64_t hash, char *msg, size_t n);

/* 1 when hl_dist_agree talks to other ranks (MPI with more than one); 0: it returns 0 at once,
 * so a caller need not compute the hash it would pass (a 2M-value axis: ~0.03 s). */
int hl_dist_agreeing(void);

/* 1 once hl_dist_agree has failed (the host then ends MPI without another collective). */
int hl_dist_out_of_step(void);

/* MPI: every rank holds its block [lo, hi) of the store's points (hl_dist_block of s->n);
 * afterwards every rank holds all of them (values, fault codes, messages). 0 on success. */
int hl_dist_allgather_store(hl_sweep_store *s);

/* MPI: concatenates every rank's text in rank order; on every rank *out is a
 * malloc'd buffer (caller frees) of *out_len bytes. 0 on success. */
int hl_dist_allgather_text(const char *mine, size_t len, char **out, size_t *out_len);

#endif
