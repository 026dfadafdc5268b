/* One serving iteration (continuous batching) timed by the per-step model of
 * step.c: the same operators, attention kernels and collectives as hl_sim_run,
 * for a step that decodes some sequences and prefills chunks of others.
 * Used by the serving scheduler (serve.c). Formulas: docs/MODEL.md, "Serving". */
#ifndef HL_STEP_INT_H
#define HL_STEP_INT_H
#include <stdint.h>
#include "hbdlab/sim.h"

/* A chunk of one request's prompt prefilled in this step. */
typedef struct hl_iter_chunk {
    double tokens; /* prompt tokens computed in this step (>= 1) */
    double offset; /* tokens of the same request already in the KV cache */
} hl_iter_chunk;

/* What one iteration computes: over the whole instance (all DP groups pooled,
 * hl_stepper_new), or on one DP rank (hl_stepper_new_rank). */
typedef struct hl_iter {
    double decode_seqs;     /* sequences decoding one token each */
    double decode_ctx_mean; /* mean tokens cached before this step over those sequences */
    double decode_win_mean; /* mean of min(ctx + 1, window) - 1 (sliding-window layers); = ctx mean if no window */
    int32_t n_chunks;
    const hl_iter_chunk *chunks; /* n_chunks, caller-owned */
    double logits_rows;          /* sequences sampling a token: decodes + chunks that end their prompt */
    double images; /* prompts whose vision encoder runs in this step (job image_tokens each): first chunks */
    double routed; /* per-rank stepper: tokens every DP rank of the EP group routes to the experts in this
                      lock-step pass; 0 = this rank's tokens times dp (all ranks alike) */
} hl_iter;

typedef struct hl_stepper hl_stepper;

/* Resolves the job's mapping once (its batch, input and output are ignored)
 * and caches the token-count dependent parts of a step up to max_tokens
 * tokens per step. *out is owned by the caller: hl_stepper_free. */
hl_status hl_stepper_new(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err);
void hl_stepper_free(hl_stepper *st);

/* A stepper whose iterations are one data-parallel rank's (max_tokens per rank):
 * its attention, GEMMs and collectives at the rank's tokens, the MoE experts at
 * the tokens every rank of the EP group routes in the same lock-step pass
 * (hl_iter.routed). */
hl_status hl_stepper_new_rank(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err);

/* Time in s of one iteration on the critical path (one GPU of the slowest stage). */
hl_status hl_stepper_time(hl_stepper *st, const hl_iter *it, double *time_s, hl_err *err);

/* B of KV cache one GPU holds per token of a sequence, all its layers (no window); and
 * the mapping's GPU count and data-parallel groups. */
double hl_stepper_kv_token_bytes(const hl_stepper *st);
/* B of linear-attention state one GPU holds per sequence (0 without linear layers). */
double hl_stepper_state_bytes(const hl_stepper *st);
int64_t hl_stepper_gpus(const hl_stepper *st);
int64_t hl_stepper_dp(const hl_stepper *st);
double hl_stepper_window(const hl_stepper *st);

#endif
