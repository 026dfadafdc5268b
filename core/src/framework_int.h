/* Internal entry point of the framework profiles (core/src/framework.c). */
#ifndef HL_FRAMEWORK_INT_H
#define HL_FRAMEWORK_INT_H
#include "hbdlab/sim.h"

/* The job as its framework runs it (profile applied to the GPU's
 * efficiencies, step_overhead resolved): j itself, or *tmp filled. */
const hl_job *hl_job_with_framework(const hl_job *j, hl_job *tmp);

#endif
