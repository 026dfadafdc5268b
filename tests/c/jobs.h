/* Shared helper of the simulation tests: a job of preset model and GPU on a
 * cluster of `gpus` GPUs in HBDs of `hbd`, with hl_job_init's defaults. */
#ifndef HL_TEST_JOBS_H
#define HL_TEST_JOBS_H
#include "check.h"
#include "hbdlab/hbdlab.h"

static hl_job job_for(const char *model, const char *gpu, int64_t gpus, int64_t hbd)
{
    hl_model m;
    hl_gpu g;
    hl_cluster c;
    hl_err e;
    if (hl_model_preset(model, &m, &e) || hl_gpu_preset(gpu, &g, &e) || hl_cluster_init(&c, &g, gpus, hbd, &e))
        fail_msg("%s", e.msg);
    hl_job j;
    hl_job_init(&j, &m, &c);
    return j;
}

#endif
