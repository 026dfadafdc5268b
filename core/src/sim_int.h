/* Internal entry points of the simulation shared with the sweep. */
#ifndef HL_SIM_INT_H
#define HL_SIM_INT_H
#include "hbdlab/sim.h"

enum {
    HL_TRUST_MODEL = 1,  /* the job's model was validated by the caller and not changed since */
    HL_TRUST_CLUSTER = 2, /* likewise for the cluster (and its GPU) */
    HL_TRUST_CLUSTER_FIELDS = 4, /* cluster fields were range-checked by their setters: check only the
                                   cross-field rules (a sweep axis on hbd, gpus, ...) */
    HL_TRUST_JOB_FIELDS = 8      /* the job's own fields were range-checked (the sweep's base once, axes by
                                   their setters) */
};

/* hl_sim_run, skipping the validations named in `trust` (the sweep validates
 * its base job once and trusts the objects no axis touches). */
hl_status hl_sim_run_trusted(const hl_job *job, hl_result *out, int trust, hl_err *err);

/* The job as its framework runs it (profile applied to the GPU's
 * efficiencies, step_overhead resolved): j itself, or *tmp filled. */
const hl_job *hl_job_with_framework(const hl_job *j, hl_job *tmp);

#endif
