/* Internal: the structs of a job that setters and sweep axes reach. */
#ifndef HL_JOB_INT_H
#define HL_JOB_INT_H
#include "hbdlab/job.h"

/* Where a field lives, searched in this order; HL_TARGET_OBJECT is a whole
 * model, cluster or GPU (sweep object axes). */
enum { HL_TARGET_OBJECT = -1, HL_TARGET_JOB, HL_TARGET_CLUSTER, HL_TARGET_MODEL, HL_TARGET_GPU, HL_TARGETS };

/* Descriptor set and struct of a target. */
const hl_field_set *hl_job_target_set(int target);
void *hl_job_target_ptr(hl_job *job, int target);

/* The target holding the field `name` (and its descriptor), or -1 when no struct has it. */
int hl_job_field_target(const char *name, const hl_field **field);

#endif
