/* A sweep's bound axes (the plan, made once per sweep) and the evaluation of one point,
 * shared by the in-memory sweep (sweep.c) and the CSV stream (sweep_csv.c). */
#ifndef HL_SWEEP_INT_H
#define HL_SWEEP_INT_H
#include "hbdlab/sweep.h"

typedef struct hl_sweep_plan hl_sweep_plan;

/* Binds each axis to its field and checks every value once; *out is malloc'd
 * (hl_sweep_plan_free(*out, in->n_axes)). */
hl_status hl_sweep_plan_new(const hl_sweep_in *in, hl_sweep_plan **out, hl_err *err);
void hl_sweep_plan_free(hl_sweep_plan *pl, int32_t n_axes);

/* What a thread keeps from one point to its next (zeroed on a new thread). */
typedef struct hl_sweep_cursor {
    int have;                               /* the thread's job holds the last point it bound without
                                               error, and that point was run */
    uint64_t run;                           /* hl_sim_thread_runs() after it ran */
    int64_t value_index[HL_SWEEP_MAX_AXES]; /* the last point evaluated: its value of each axis
                                               (whatever became of it; the job holds it when have) */
} hl_sweep_cursor;

/* Evaluates point i into *p (its status and message on failure). *job is the calling
 * thread's job, reused from the thread's last point when the plan allows; both start zeroed on a
 * new thread. cols NULL: p->v[i] = result field i, all of them; else cols[0, ncols) are gather
 * codes (hl_result_gather_code) and p->v[c] = column c, dense (the others are not written). */
void hl_sweep_eval_point(const hl_sweep_in *in, const hl_sweep_plan *pl, int64_t i, hl_job *job, hl_sweep_cursor *cur,
                         const int32_t *cols, int32_t ncols, hl_point *p);
#endif
