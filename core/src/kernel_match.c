/* The shapes of a job's kernels in the measured tables' terms (key columns and
 * axes of kernels.h) and their measured times: GEMMs, attention, the fused MoE
 * layer and collectives inside one HBD (docs/MODEL.md 3, "Measured kernels"). */
#include "kernel_match_int.h"

#include <math.h>
#include <stddef.h>

#include "hbdlab/kernels.h"
#include "hbdlab/kvcache.h"
#include "hbdlab/precision.h"

#define TEXT(s) \
    {           \
        (s), 0  \
    }
#define NUM(v)    \
    {             \
        NULL, (v) \
    }

int hl_kmatch_gemm(const hl_sim_ctx *s, const hl_op *op, double *time_s)
{
    if (op->kind != HL_OP_GEMM || !(op->rows > 0 && op->n > 0 && op->k > 0))
        return 0;
    hl_kcell key[1] = {TEXT(hl_kernels_dtype(op->precision))};
    double x[3] = {op->rows, op->n, op->k};
    return hl_kernels_time(s->kern, HL_KT_GEMM, key, x, time_s);
}

int hl_kmatch_attention(const hl_sim_ctx *s, double b, double q, double ctx, double w, double *time_s)
{
    const hl_model *m = s->m;
    int decode = q == 1;
    if (!decode && ctx != 0)
        return 0; /* the prefill tables cache nothing before the pass */
    double heads = (double)m->heads / (double)s->tp, x[2] = {b, decode ? ctx : q};
    const char *act = hl_kernels_dtype(s->j->act_precision), *kv = hl_kernels_dtype(hl_job_kv_precision(s->j));
    if (m->attn == HL_ATTN_MLA) {
        if (w > 0)
            return 0;
        hl_kcell key[3] = {TEXT(act), TEXT(kv), NUM(heads)};
        return hl_kernels_time(s->kern, decode ? HL_KT_MLA_DECODE : HL_KT_MLA_PREFILL, key, x, time_s);
    }
    double kvh = hl_kv_heads_per_gpu(m, s->tp), d = (double)m->head_dim;
    if (decode) {
        hl_kcell key[5] = {NUM(heads), NUM(kvh), NUM(d), NUM(w), TEXT(kv)};
        return hl_kernels_time(s->kern, HL_KT_ATTN_DECODE, key, x, time_s);
    }
    hl_kcell key[6] = {NUM(heads), NUM(kvh), NUM(d), NUM(w), TEXT(act), TEXT(kv)};
    return hl_kernels_time(s->kern, HL_KT_ATTN_PREFILL, key, x, time_s);
}

int hl_kmatch_moe(const hl_sim_ctx *s, double tokens, double *time_s)
{
    const hl_model *m = s->m;
    if (s->slots != (double)m->experts)
        return 0; /* replicated experts (EPLB) were not measured */
    /* the kernels the tables name (kernels.h); an engine runs its fastest for the shape */
    static const char *const kernels[] = {"default", "cutlass", "deepgemm", "min_latency"};
    double best = 0, t;
    int found = 0;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        hl_kcell key[9] = {TEXT(hl_kernels_dtype(s->j->precision)),
                           TEXT(kernels[i]),
                           NUM((double)m->hidden),
                           NUM((double)hl_model_expert_ffn(m)),
                           NUM((double)m->topk),
                           NUM((double)m->experts),
                           NUM((double)s->etp),
                           NUM((double)s->ep),
                           TEXT("balanced")};
        if (hl_kernels_time(s->kern, HL_KT_MOE, key, &tokens, &t) && (!found || t < best)) {
            best = t;
            found = 1;
        }
    }
    if (found)
        *time_s = best;
    return found;
}

int hl_kmatch_coll(const hl_sim_ctx *s, const hl_coll_in *in, hl_coll_out *o)
{
    if (o->hbds != 1)
        return 0; /* the tables measured one node */
    double x[1] = {in->bytes}, t;
    int hit = 0;
    if (in->op == HL_ALLREDUCE && in->algo == HL_ALGO_TRTLLM_AR) {
        hl_kcell key[2] = {TEXT(hl_kernels_dtype(s->j->act_precision)), NUM((double)in->ranks)};
        hit = hl_kernels_time(s->kern, HL_KT_ALLREDUCE, key, x, &t);
    } else if (in->algo != HL_ALGO_VLLM_AR && in->algo != HL_ALGO_ONESHOT && in->algo != HL_ALGO_TWOSHOT) {
        const char *op = in->op == HL_ALLREDUCE       ? "all_reduce"
                         : in->op == HL_ALLGATHER     ? "all_gather"
                         : in->op == HL_REDUCESCATTER ? "reduce_scatter"
                         : in->op == HL_ALLTOALL      ? "alltoall"
                                                      : NULL;
        /* nccl-tests' element types: half (2 bytes) and int8 */
        const char *type = s->ab == 2 ? "half" : s->ab == 1 ? "int8" : NULL;
        if (op && type) {
            hl_kcell key[3] = {TEXT(op), TEXT(type), NUM((double)in->ranks)};
            hit = hl_kernels_time(s->kern, HL_KT_NCCL, key, x, &t);
        }
    }
    if (hit) {
        o->time_s = t;
        o->latency_s = fmin(o->latency_s, t);
    }
    return hit;
}
