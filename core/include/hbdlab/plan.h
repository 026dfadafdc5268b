/* Parallel mappings: the largest batch that fits, and the search for the
 * best TP x PP x EP x DP mapping of a job under an objective. */
#ifndef HBDLAB_PLAN_H
#define HBDLAB_PLAN_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_objective {
    HL_OBJ_TPS_PER_GPU = 0, /* maximise generated tokens/s per GPU */
    HL_OBJ_MIN_TTFT = 1,
    HL_OBJ_MIN_TPOT = 2,
    HL_OBJ_THROUGHPUT = 3 /* maximise decode tokens/s of the whole job */
} hl_objective;

typedef struct hl_plan_in {
    hl_job job;        /* the job; its tp/pp/ep/dp/etp are ignored */
    int32_t objective; /* hl_objective */
    double max_tpot;   /* s; 0 = no limit */
    double max_ttft;   /* s; 0 = no limit */
    int32_t max_batch; /* 1: each candidate runs at the largest batch that fits */
    int64_t max_tp;    /* 0 = up to the HBD size */
    int32_t auto_plan; /* 1: parallel = "auto" (hl_job_resolve searches the mapping) */
} hl_plan_in;

typedef struct hl_candidate {
    int64_t tp, pp, ep, dp, etp;
    double batch;
    double score; /* larger is better (times are negated) */
    double ttft_s, tpot_s, tps_per_gpu, decode_tps;
    int32_t fits;
    int32_t meets_limits;
} hl_candidate;

/* Descriptor table of the search options (objective, max_tpot_s, max_ttft_s). */
const hl_field_set *hl_plan_fields(void);

/* Largest batch (a multiple of the job's dp) whose weights + KV + workspace fit
 * under mem_util; HL_ENOFIT naming the shortfall when even one sequence per
 * group does not fit. */
hl_status hl_sim_max_batch(const hl_job *job, double *batch, hl_err *err);

/* Sets the job's mapping and batch to those of a candidate (tp, pp, ep, dp, etp, batch). */
void hl_candidate_apply(const hl_candidate *c, hl_job *job);

/* batch = "max" under limits: the largest batch that fits HBM and keeps TTFT
 * <= max_ttft and TPOT <= max_tpot (s; 0 = no limit). *meets = 0 when even one
 * sequence per data-parallel group misses them (*batch is then that minimum). */
hl_status hl_sim_max_batch_within(const hl_job *job, double max_ttft, double max_tpot, double *batch, int32_t *meets,
                                  hl_err *err);

/* The one resolver of a job's searches (hl.simulate, every point of hl.sweep,
 * hbdlab eval): with in->auto_plan (parallel = "auto") the best mapping of
 * hl_plan_search, each candidate at its largest batch within the limits when
 * in->max_batch; else with in->max_batch (batch = "max") the largest batch that
 * fits and, with max_ttft/max_tpot, keeps within them: HL_ENOFIT naming the
 * times when even one sequence per data-parallel group misses them; else the
 * job as given (a fixed batch is not searched: check its result with
 * hl_plan_meets_limits). *job receives the job to run. The search's candidates
 * go best first into cands (cap of them; cands may be NULL when cap = 0),
 * their count into *ncand (0 without a search; ncand may be NULL). */
hl_status hl_job_resolve(const hl_plan_in *in, hl_job *job, hl_candidate *cands, int32_t cap, int32_t *ncand,
                         hl_err *err);

/* 1 when the result keeps TTFT <= in->max_ttft and TPOT <= in->max_tpot (0 = no limit). */
int32_t hl_plan_meets_limits(const hl_plan_in *in, const hl_result *r);

/* Enumerates valid mappings (powers of two, dividing heads, experts, GPUs),
 * simulates each, and writes up to `cap` candidates best first into out.
 * *count receives how many were written. HL_ENOFIT when none fits. */
hl_status hl_plan_search(const hl_plan_in *in, hl_candidate *out, int32_t cap, int32_t *count, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
