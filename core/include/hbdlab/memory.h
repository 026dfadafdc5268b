/* Memory per GPU of a job: weights + KV cache + activation workspace, without
 * the timing model (batch = "max" probes only this). Formulas: docs/MODEL.md
 * section 6 ("memory per GPU"). */
#ifndef HBDLAB_MEMORY_H
#define HBDLAB_MEMORY_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_memory {
    double weights_bytes;   /* B per GPU: this rank's shard of every weight */
    double kv_bytes;        /* B per GPU: KV cache at the largest context (input + output) */
    double workspace_bytes; /* B per GPU: activation workspace and runtime buffers */
    double per_gpu_bytes;   /* weights + KV + workspace */
    double draft_bytes;     /* B per GPU: of weights_bytes + kv_bytes, the draft model's (spec_draft_model) */
    int32_t fits;           /* per_gpu_bytes <= hl_kv_usable_bytes (HBM * mem_util; TensorRT-LLM: of the free HBM) */
} hl_memory;

/* Validates the job and fills *out. A job that does not fit is not an error
 * here (fits = 0); hl_sim_run makes it one unless ignore_memory is set. */
hl_status hl_memory_per_gpu(const hl_job *job, hl_memory *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
