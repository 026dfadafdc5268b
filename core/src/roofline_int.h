/* Roofline helpers internal to the core (core/src/roofline.c). */
#ifndef HL_ROOFLINE_INT_H
#define HL_ROOFLINE_INT_H
#include "hbdlab/roofline.h"

/* The parts of an attention shape's FLOPs and bytes that do not depend on its context. */
typedef struct hl_attn_line {
    double flops_per_pair, pair_dims; /* FLOP per (query, key) pair = their product */
    double q, q_pairs;                /* new tokens per sequence, q (q + 1) / 2 */
    double window, batch;
    double q_read, kv_token_bytes, written; /* B: q read per sequence, KV per key, output written */
} hl_attn_line;

/* A blended decode attention kernel (attn_blend > 1) along its context, for the sums of many
 * steps: hl_attn_stream_at gives, where it is so bit for bit, max(compute_s, memory_s) of
 * hl_op_time_on on hl_op_attention of the shape at that context as attn_latency + its KV
 * stream (the work units and compute vanish beside it), without the blend's pow calls. */
typedef struct hl_attn_stream {
    int ok; /* a blended one-row kernel with a known peak */
    hl_attn_line line;
    double bw, peak_eff, units, latency; /* B/s, FLOP/s, s, s */
    double r_max;                        /* largest units / KV-stream ratio whose blend term vanishes */
} hl_attn_stream;

void hl_attn_stream_init(hl_attn_stream *a, const hl_attn_shape *s, hl_precision math, const hl_gpu *gpu);
/* 1 and *t (s) at `context` cached keys; 0 where it is not so (hl_op_time_on decides then). */
int hl_attn_stream_at(const hl_attn_stream *a, double context, double *t);

#endif
