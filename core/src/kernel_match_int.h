/* Which measured kernel an operator, an attention pass, a fused MoE layer or a
 * collective of a job is, and its time from the job's kernel tables (s->kern,
 * kernels = "dir"; core/src/kernel_match.c, docs/MODEL.md 3 "Measured
 * kernels"). Each returns 1 with the measured s when the table covers the
 * shape, else 0 (the analytic model stands). */
#ifndef HL_KERNEL_MATCH_INT_H
#define HL_KERNEL_MATCH_INT_H
#include "hbdlab/coll.h"
#include "hbdlab/roofline.h"
#include "mapping_int.h"

/* A dense GEMM operator (gemm.csv: its precision, M = rows, N, K). */
int hl_kmatch_gemm(const hl_sim_ctx *s, const hl_op *op, double *time_s);

/* One layer's attention kernel: b sequences, q new tokens each after ctx cached ones, window w
 * (0 = full). Decode (q = 1): attention_decode.csv or mla_decode.csv at (b, ctx); prefill with
 * nothing cached (ctx = 0): attention_prefill.csv or mla_prefill.csv at (b, q). */
int hl_kmatch_attention(const hl_sim_ctx *s, double b, double q, double ctx, double w, double *time_s);

/* One MoE layer's fused expert module (moe.csv: routing, permutation, grouped GEMMs, un-permute)
 * on the busiest EP rank, at `tokens` balanced tokens; the fastest kernel the table holds. */
int hl_kmatch_moe(const hl_sim_ctx *s, double tokens, double *time_s);

/* A collective inside one HBD: TensorRT-LLM's all-reduce from allreduce_custom.csv, NCCL's
 * algorithms from nccl.csv, at (ranks, bytes); o->time_s (and latency_s, at most it) replaced. */
int hl_kmatch_coll(const hl_sim_ctx *s, const hl_coll_in *in, hl_coll_out *o);

#endif
