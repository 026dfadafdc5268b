/* Roofline operators: FLOPs and bytes of one kernel, and its time on a GPU as
 * max(compute time, memory time) at achievable efficiencies. */
#ifndef HBDLAB_ROOFLINE_H
#define HBDLAB_ROOFLINE_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/precision.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_op_kind {
    HL_OP_GEMM = 0,
    HL_OP_GROUPED_GEMM = 1, /* MoE experts: one GEMM per expert, batched */
    HL_OP_ATTENTION = 2,    /* fused (FlashAttention-style) attention */
    HL_OP_ELEMENTWISE = 3,
    HL_OP_NORM = 4
} hl_op_kind;

typedef enum hl_bound { HL_BOUND_COMPUTE = 0, HL_BOUND_MEMORY = 1 } hl_bound;

typedef struct hl_op {
    char name[32];
    int32_t kind;         /* hl_op_kind */
    int32_t precision;    /* hl_precision of the math (tensor-core input type) */
    double flops;         /* FLOP */
    double bytes_read;    /* B from HBM */
    double bytes_written; /* B to HBM */
    double rows;          /* GEMM M dimension (rows of the activation, per group); 0 for other operators */
    double n;             /* GEMM N (output features); 0 = unknown (no K-loop or quantisation term) */
    double k;             /* GEMM K (input features); 0 = unknown */
    double groups;        /* grouped GEMM: GEMMs of `rows` rows each (experts with tokens); 0 = 1 */
    double units;         /* attention: sequences x KV heads (parallel work units); 0 for other operators */
    double ctx;           /* attention: keys cached before the pass (prefill tiles); 0 otherwise */
    double q_units;       /* attention: sequences x query heads; 0 otherwise */
    double fixed_s;       /* s added to this operator's time beyond the GPU's latencies (e.g. MoE routing) */
} hl_op;

typedef struct hl_op_time {
    double time_s;    /* blend(compute_s, memory_s, loop) + fixed latencies (docs/MODEL.md section 3) */
    double compute_s; /* flops / (peak * efficiency) */
    double memory_s;  /* bytes / (hbm_bw * eff_mem) */
    double intensity; /* FLOP per byte moved */
    double ridge;     /* FLOP per byte where compute and memory time meet */
    int32_t bound;    /* hl_bound */
} hl_op_time;

/* Time of one operator on one GPU. */
hl_status hl_op_time_on(const hl_op *op, const hl_gpu *gpu, hl_op_time *out, hl_err *err);

/* A dense GEMM (m x k) * (k x n): 2mnk FLOP; reads m*k activations and k*n
 * weights, writes m*n outputs, each at its own byte width. Its compute time
 * counts whole tiles of the GPU's gemm_tile_rows rows. */
void hl_op_gemm(hl_op *op, const char *name, double m, double n, double k, double act_bytes, double weight_bytes,
                double out_bytes, hl_precision math);

/* The expert GEMMs of one MoE layer on one GPU as one grouped kernel each
 * (gate/up: n = 2*inter, then down: n = hidden), `active` local experts
 * receiving `tokens_per_expert` rows each on average (docs/MODEL.md section 3). */
typedef struct hl_moe_shape {
    double tokens_per_expert; /* rows per local expert (with the imbalance of the busiest) */
    double local_experts;     /* experts (slots) this GPU holds */
    double active_experts;    /* of them, those that receive at least one token */
    double hidden;            /* model hidden size */
    double inter;             /* one expert's intermediate width on this GPU (after expert TP) */
    double act_bytes;         /* B per activation element */
    double weight_bytes;      /* B per weight element */
} hl_moe_shape;
void hl_op_moe_experts(hl_op *up, hl_op *down, const hl_moe_shape *s, hl_precision math);

/* The fused MoE's permutation and finalize traffic beside its expert GEMMs: bytes_per_row
 * (the GPU's moe_perm_bytes) per routed row (tokens_per_expert x local_experts) per hidden
 * element, a memory-bound elementwise kernel; flops 0. */
void hl_op_moe_permute(hl_op *op, const hl_moe_shape *s, double bytes_per_row, hl_precision math);

/* Attention shapes for one layer on one GPU. */
typedef struct hl_attn_shape {
    double batch;          /* sequences */
    double new_tokens;     /* query tokens per sequence in this pass (prefill: prompt; decode: 1) */
    double context;        /* tokens already in the KV cache before this pass */
    double heads;          /* query heads on this GPU */
    double kv_heads;       /* KV heads on this GPU (after TP split or replication) */
    double qk_dim;         /* per-head q.k width (MLA absorbed: kv_lora + rope) */
    double v_dim;          /* per-head value width (MLA absorbed: kv_lora) */
    double kv_token_bytes; /* B of K and V (or latent) per token per layer on this GPU */
    double act_bytes;      /* B per activation element (q and output) */
    double window;         /* sliding window in tokens, 0 = full causal */
} hl_attn_shape;

/* Causal fused attention: FLOPs over the attended (query, key) pairs, reads
 * of q and the KV cache (KV heads, not query heads), write of the output. */
void hl_op_attention(hl_op *op, const char *name, const hl_attn_shape *s, hl_precision math);

/* Number of attended (query, key) pairs of one causal pass: new tokens at
 * positions context..context+new-1, each seeing min(window, pos+1) keys. */
double hl_attn_pairs(double new_tokens, double context, double window);

#ifdef __cplusplus
}
#endif
#endif
