/* Sweeps: the cartesian product (or zip) of axes over a base job, evaluated
 * on threads into compact per-point summaries. */
#ifndef HBDLAB_SWEEP_H
#define HBDLAB_SWEEP_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"
#include "hbdlab/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_axis_kind {
    HL_AXIS_NUMBER = 0,  /* numbers[] */
    HL_AXIS_STRING = 1,  /* strings[]: enum fields (precision, dispatch, fabric) */
    HL_AXIS_MODEL = 2,   /* models[] replace the job's model */
    HL_AXIS_CLUSTER = 3, /* clusters[] replace the job's cluster */
    HL_AXIS_GPU = 4      /* gpus[] replace the cluster's GPU (links re-derived from it) */
} hl_axis_kind;

typedef struct hl_axis {
    char name[32]; /* a job, cluster, model or gpu field name */
    int32_t kind;  /* hl_axis_kind */
    int32_t n;     /* number of values */
    const double *numbers;
    const char *const *strings;
    const hl_model *models;
    const hl_cluster *clusters;
    const hl_gpu *gpus;
} hl_axis;

/* axes: every job, cluster, GPU and model field can be one at once (139 in 2026-12) */
enum { HL_POINT_VALUES = 67, HL_SWEEP_MAX_AXES = 256 };

/* Summary of one point: the result fields in the order of the result table (hl_result_field_at). */
typedef struct hl_point {
    double v[67];    /* HL_POINT_VALUES: one per row of the result table (core/src/result.c) */
    int32_t status;  /* hl_status of the point */
    char error[512]; /* message when status != 0 (the size of hl_err.msg: never cut) */
} hl_point;

typedef struct hl_sweep_in {
    hl_job base;
    const hl_axis *axes;
    int32_t n_axes;
    int32_t zip;                /* 1: axes advance together (equal lengths); 0: cartesian product */
    int32_t threads;            /* 0 = all online CPUs */
    volatile int64_t *progress; /* points finished so far, updated atomically (may be NULL) */
    volatile int32_t *cancel;   /* workers stop when *cancel != 0 (may be NULL) */
    int64_t first;              /* evaluate points [first, first + count); count 0 = all from first */
    int64_t count;
    /* Per-point searches (docs/MODEL.md section 7); an axis named "batch" whose value is 0
     * means "max" at that point, an axis named "parallel" takes "auto" or "fixed". */
    int32_t batch_max; /* 1: every point runs at the largest batch that fits */
    int32_t auto_plan; /* 1: every point searches its mapping (parallel = "auto") */
    int32_t objective; /* hl_objective of the search */
    double max_tpot;   /* s; 0 = no limit (search) */
    double max_ttft;   /* s; 0 = no limit (search) */
} hl_sweep_in;

/* Name of summary value i ("ttft_s", "prefill.comm_share", ...); NULL past the end. */
const char *hl_point_field_name(int32_t i);

/* Number of points (product of lengths, or the common length when zipped). */
hl_status hl_sweep_count(const hl_sweep_in *in, int64_t *count, hl_err *err);

/* The value index on each axis of point `index` (last axis fastest; all equal to
 * index when zipped): value_index[a] for a in 0..n_axes-1. */
void hl_sweep_value_indices(const hl_axis *axes, int32_t n_axes, int32_t zip, int64_t index, int64_t *value_index);

/* Builds the job of point `index`. */
hl_status hl_sweep_job(const hl_sweep_in *in, int64_t index, hl_job *job, hl_err *err);

/* Runs one job into a summary point (status and message on failure). */
void hl_point_from_job(const hl_job *job, hl_point *out);

/* Evaluates the points of the range [first, first + count) into out[0..);
 * (count 0: every point from first). Returns HL_EINTR when cancelled (points
 * not reached get status HL_EINTR). */
hl_status hl_sweep_run(const hl_sweep_in *in, hl_point *out, hl_err *err);

/* ---- A sweep's points kept compactly in memory (the in-memory hl.sweep) -------------------
 * A point is its HL_POINT_VALUES result values and a 4-byte fault code (540 bytes, where an
 * hl_point is 1,048: its 512-byte message buffer is not kept per point). The messages of failed
 * points are kept once each, however many points fail with the same one. */
/* fault codes: a point not reached (the sweep was cancelled); a point failed whose message could
 * not be kept (out of memory) */
enum { HL_STORE_NOT_RUN = -1, HL_STORE_LOST = -2 };

typedef struct hl_sweep_store {
    int64_t n;          /* points held: [0, n), the whole sweep (a range run fills its part) */
    double *values;     /* n * HL_POINT_VALUES doubles: point i's values at values + i * HL_POINT_VALUES,
                         * in the order of the result table (meaningless when fault[i] != 0) */
    int32_t *fault;     /* n codes: 0 evaluated, k > 0 failed with message k - 1, or HL_STORE_* */
    int32_t n_messages; /* distinct messages of failed points */
    char **messages;    /* n_messages strings (malloc'd, owned) */
    int32_t *statuses;  /* n_messages: the hl_status of the points that failed with each */
    void *internal;     /* the lock and the message index while a sweep runs (owned) */
} hl_sweep_store;

/* Bytes the store takes per point (the budget check of the in-memory sweep reads it). */
double hl_sweep_store_point_bytes(void);

/* Allocates a store of n points (every fault code HL_STORE_NOT_RUN); HL_ENOMEM when it cannot. */
hl_status hl_sweep_store_init(hl_sweep_store *s, int64_t n, hl_err *err);
void hl_sweep_store_free(hl_sweep_store *s); /* frees what init and the runs allocated; safe twice */

/* Adds message `msg` of a point failed with status `st` (kept once per distinct text); returns its
 * fault code (> 0), or 0 when out of memory. Thread-safe. */
int32_t hl_sweep_store_fault(hl_sweep_store *s, hl_status st, const char *msg);

/* Evaluates the points [in->first, in->first + in->count) into s (point i at index i;
 * s->n is the sweep's whole count). As hl_sweep_run otherwise. */
hl_status hl_sweep_run_store(const hl_sweep_in *in, hl_sweep_store *s, hl_err *err);

/* ---- Streaming a sweep to CSV (core/src/sweep_csv.c) ------------------------------------
 * Points are evaluated and their rows formatted (hbdlab/csv.h) on worker threads started once
 * per call, in blocks of HL_SWEEP_CSV_BLOCK points; the calling thread hands the blocks' text to
 * the sink in point order while the workers go on (at most a few blocks ahead, so memory stays
 * bounded whatever the sweep's size). Row: the axis values (a batch axis value 0 as "max", a
 * model/cluster/gpu by its name), then the columns, then an `error` cell (empty unless the point
 * failed; a failed point's columns are empty). Points stopped by *in->cancel are left out. */
enum { HL_SWEEP_CSV_BLOCK = 4096 };

/* Receives consecutive text in order, one call at a time, on the calling thread (or, with
 * sink_any_thread, on whichever worker finished the block): the header row (when asked), then
 * the rows of each block; points_done counts the points whose rows were handed over so far.
 * Returns 0 to go on; anything else stops the stream (hl_sweep_csv then fails with HL_EIO). */
typedef int32_t (*hl_csv_sink)(void *user, const char *text, int64_t len, int64_t points_done);

typedef struct hl_sweep_csv_opts {
    const int32_t *columns;   /* result field indices (hl_result_field_index); NULL: every field */
    const double *scales;     /* per column factor (a friendly alias's unit); NULL: all 1 */
    const char *const *names; /* header name per column; NULL: the fields' names */
    int32_t n_columns;        /* entries in columns (ignored when columns is NULL) */
    int32_t header;           /* 1: the header row first */
    /* Ranks: evaluate only part `part` of `parts` (points [len part / parts, len (part + 1) /
     * parts) of each block of len points); the sink is still called once per block, so every
     * rank calls it equally often. 0 and 0: the whole block. */
    int32_t part, parts;
    hl_csv_sink sink;
    void *user;
    /* 1: the sink may be called on a worker thread (still one call at a time, in order): the
     * worker that completes the next block in order hands it over itself, from its own cache,
     * and the blocks ready after it too; 0: only on the calling thread (a sink that talks MPI,
     * or that must run there). */
    int32_t sink_any_thread;
} hl_sweep_csv_opts;

/* Streams the points [in->first, in->first + in->count) (count 0: all from first) to
 * o->sink; *rows receives the rows handed over. HL_EINTR when *in->cancel stopped it (the rows
 * done were handed over), HL_EIO when the sink refused text. */
hl_status hl_sweep_csv(const hl_sweep_in *in, const hl_sweep_csv_opts *o, int64_t *rows, hl_err *err);

/* The same into the file `path` (o->sink and o->user are ignored): written to a temp file beside
 * it and renamed into place, so no half-written file is left; the header row is always written.
 * When cancelled, the rows done are kept (the file is renamed) and HL_EINTR returned. */
hl_status hl_sweep_csv_file(const hl_sweep_in *in, const hl_sweep_csv_opts *o, const char *path, int64_t *rows,
                            hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
