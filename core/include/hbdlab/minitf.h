/* The native CPU mini-transformer: a real FP32 forward pass of a small
 * decoder-only model (RMSNorm, RoPE, GQA attention with a KV cache, SwiGLU,
 * MoE top-k), run unsharded or as virtual ranks (TP, EP, PP) in one process,
 * counting FLOPs, weight bytes, KV bytes and collective bytes in the
 * conventions of the analytical model. Weights come from a seed. */
#ifndef HBDLAB_MINITF_H
#define HBDLAB_MINITF_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_minitf hl_minitf;

enum { HL_MINITF_MAX_RANKS = 16 };

typedef struct hl_minitf_layout {
    int32_t tp; /* attention heads, FFN and expert columns split over tp ranks; AllReduce of partial sums */
    int32_t ep; /* experts split over ep groups; sequences split over the same groups; All-to-All */
    int32_t pp; /* layers split into pp stages; activations sent between stages */
} hl_minitf_layout;

/* Counters of one run. "model" FLOPs are the ones the analytical model counts
 * (GEMMs 2mnk, attention 2*heads*pairs*(d_qk+d_v), 4 per element of each layer
 * RMSNorm); "extra" FLOPs are the rest (RoPE, softmax, SwiGLU, residual adds,
 * final norm). Per-rank arrays are indexed by rank = (stage*ep + group)*tp + t. */
typedef struct hl_minitf_stats {
    int32_t ranks;
    double prefill_model_flops[16]; /* HL_MINITF_MAX_RANKS */
    double decode_model_flops[16];
    double expert_flops[16];    /* part of the above spent in routed experts */
    double extra_flops;         /* all ranks */
    double weight_bytes[16];    /* weights each rank holds */
    double kv_bytes[16];        /* KV cache each rank holds at the end */
    double allreduce_bytes[16]; /* sent by each rank (ring: 2(n-1)/n of each buffer) */
    double alltoall_bytes[16];  /* sent to other ranks in dispatch + combine */
    double alltoall_volume;     /* all routed copies, local ones included (all ranks) */
    double sendrecv_bytes[16];  /* pipeline hand-offs sent */
    double allgather_bytes[16]; /* vocab-parallel logits gathered (ring: (n-1)/n) */
    double prefill_s;           /* wall time of the first pass (all ranks, one thread) */
    double decode_s;            /* wall time of the remaining passes */
} hl_minitf_stats;

/* Builds a model with weights drawn from `seed` (uniform, scaled by 1/sqrt(fan-in)).
 * The model must be GQA (no MLA) and small (at most 2e8 parameters). Free with hl_minitf_free. */
hl_status hl_minitf_new(const hl_model *m, uint64_t seed, hl_minitf **out, hl_err *err);
void hl_minitf_free(hl_minitf *tf);

/* Greedy generation for `batch` sequences with the same prompt length:
 * prompts is (batch, n_prompt) token ids; writes (batch, n_new) tokens and, if
 * logits is not NULL, (batch, n_new, vocab) logits of each generated position.
 * use_kv_cache = 0 recomputes the whole sequence at every step. */
hl_status hl_minitf_generate(hl_minitf *tf, const hl_minitf_layout *layout, int32_t batch, const int32_t *prompts,
                             int32_t n_prompt, int32_t n_new, int32_t use_kv_cache, int32_t *tokens, float *logits,
                             hl_minitf_stats *stats, hl_err *err);

/* Measures this CPU with the mini-transformer's own kernels: GEMM FLOP/s
 * (n x n x n, single thread) and memory bandwidth (a streaming triad over
 * `bytes` bytes). */
hl_status hl_minitf_measure_cpu(int32_t n, double bytes, double *gemm_flops, double *mem_bw, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
