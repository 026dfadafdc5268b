/* Internal entry points of the memory model (core/src/memory.c). */
#ifndef HL_MEMORY_INT_H
#define HL_MEMORY_INT_H
#include "hbdlab/memory.h"
#include "mapping_int.h"

/* Weights + KV + workspace per GPU of a resolved job. */
hl_status hl_memory_resolved(const hl_sim_ctx *s, hl_memory *out, hl_err *err);

/* hl_memory_per_gpu, skipping the validations named in `trust` (batch = "max" probes). */
hl_status hl_memory_trusted(const hl_job *job, hl_memory *out, int trust, hl_err *err);

/* KV bytes per token per GPU of the draft model of job (spec_draft_model with spec_tokens > 0;
 * 0 without one): its layers and heads as it runs, with the target's TP (hl_job_draft). */
hl_status hl_memory_draft_token_bytes(const hl_job *job, double *out, hl_err *err);

#endif
