/* Memory per GPU: weights + KV + workspace (docs/MODEL.md section 6). */
#include "hbdlab/memory.h"

#include <math.h>

#include "err_int.h"
#include "fmax_int.h"
#include "hbdlab/kvcache.h"
#include "kvcache_int.h"
#include "model_int.h"
#include "memory_int.h"

/* The weights on the critical-path GPU, B. */
static hl_status weights_bytes(const hl_sim_ctx *s, double *out, hl_err *err)
{
    const hl_job *j = s->j;
    const hl_model *m = s->m;
    hl_params p;
    hl_status st = hl_model_params_unchecked(m, &p, err);
    if (st)
        return st;
    double moe_layers = (double)hl_model_moe_layers(m);
    double lin_layers = (double)hl_model_linear_layers(m), full_layers = (double)m->layers - lin_layers;
    double lin_layer = hl_model_linear_params_layer(m), idx = hl_model_indexer_params(m);
    double per_layer_attn = full_layers > 0 ? (p.attention - lin_layers * lin_layer) / full_layers : 0;
    /* the lightning indexer is replicated on every TP rank (DeepSeek's reference code) */
    double full_gpu = (per_layer_attn - idx) / (double)s->tp + idx;
    if (m->attn == HL_ATTN_GQA) {
        /* K and V projections follow the KV heads: split over TP, or replicated
         * (one head per GPU) when TP exceeds them; Q and O split over TP */
        double kv_w = 2.0 * (double)m->hidden * (double)m->head_dim + (m->qkv_bias ? 2.0 * (double)m->head_dim : 0);
        full_gpu = (per_layer_attn - kv_w * (double)m->kv_heads - idx) / (double)s->tp +
                   kv_w * hl_kv_heads_per_gpu(m, s->tp) + idx;
    }
    /* gated DeltaNet: heads split over TP; the gated norm's weight (v_dim) is shared by all heads */
    double lin_gpu =
        lin_layer > 0 ? (lin_layer - (double)m->linear_v_dim) / (double)s->tp + (double)m->linear_v_dim : 0;
    double attn_gpu = (full_layers * full_gpu + lin_layers * lin_gpu) / (double)m->layers;
    double w = attn_gpu * s->stage_layers + p.norms / (double)s->pp + p.dense_ffn / (double)s->tp / (double)s->pp +
               (moe_layers > 0 ? (p.experts * (s->slots / (double)m->experts) / (double)s->ep / (double)s->etp +
                                  p.shared / (double)s->tp + p.router) /
                                     (double)s->pp
                               : 0) + /* the router is replicated on every rank */
               (p.embedding + p.lm_head + p.vision) / (double)s->tp / (double)s->pp;
    /* routed experts may be stored narrower (gpt-oss: MXFP4) than the rest */
    double experts_gpu =
        moe_layers > 0 ? p.experts * (s->slots / (double)m->experts) / (double)s->ep / (double)s->etp / (double)s->pp
                       : 0;
    if (j->spec_tokens > 0 && m->mtp_layers > 0) { /* the MTP modules draft: loaded on the last stage */
        double n = (double)m->mtp_layers, h = (double)m->hidden;
        double routed = moe_layers > 0 ? (double)m->experts * p.per_expert : 0, eh = 2 * h * h + 3 * h;
        /* the decoder layer split as the model's layers (its router and norms, < 0.1 %, taken as split);
         * eh_proj and the three norms replicated (vLLM deepseek_mtp.py: a plain Linear) */
        double routed_gpu = n * routed * (s->slots / fmax(1, (double)m->experts)) / (double)s->ep / (double)s->etp;
        w += n * ((p.mtp / n - routed - eh) / (double)s->tp + eh) + routed_gpu;
        experts_gpu += routed_gpu;
    }
    *out = w * s->wb + experts_gpu * (hl_model_expert_weight_bytes(m, s->wb) - s->wb);
    return HL_OK;
}

/* What kv_bytes takes from s but not from the context: this rank's share of the KV heads,
 * each sequence's linear-attention state, B, and a sequence's KV bytes as a function of the
 * context (kvcache_int.h). */
typedef struct kv_factors {
    double share, state;
    hl_kv_seq_line line;
} kv_factors;

static kv_factors kv_factors_of(const hl_sim_ctx *s)
{
    const hl_model *m = s->m;
    kv_factors k;
    k.share = m->attn == HL_ATTN_MLA ? 1 : hl_kv_heads_per_gpu(m, s->tp) / (double)m->kv_heads;
    /* linear-attention state: one per sequence, whatever its context, at the
     * activation precision (vLLM's mamba_ssm_cache_dtype "auto" = model dtype) */
    k.state = hl_kv_state_bytes(m, (hl_precision)s->j->act_precision) * hl_kv_state_share_per_gpu(m, s->tp);
    hl_kv_seq_line_of(m, (hl_precision)hl_job_kv_precision(s->j), &k.line);
    return k;
}

/* The KV cache of the b_local sequences of s at context ctx on one GPU, B: each sequence's
 * keys and values (this rank's heads), the indexer's keys (whole on every rank) and the
 * linear-attention state, over the stages
 * (k: kv_factors_of(s)). */
static double kv_bytes_with(const hl_sim_ctx *s, double ctx, const kv_factors *k)
{
    double index = hl_kv_seq_index_bytes(&k->line, ctx); /* whole on every rank */
    return s->b_local * ((hl_kv_seq_bytes(&k->line, ctx) - index) * k->share + index + k->state) / (double)s->pp;
}

static double kv_bytes(const hl_sim_ctx *s, double ctx)
{
    kv_factors k = kv_factors_of(s);
    return kv_bytes_with(s, ctx, &k);
}

/* The draft model's weights and KV per GPU (spec_draft_model; 0 and 0 without one): it runs as
 * hl_job_draft, with the target's TP on the same GPUs, so each GPU holds 1/tp of its weights and
 * its KV for the same sequences and context (docs/MODEL.md 6.2). */
static hl_status draft_bytes(const hl_sim_ctx *s, double ctx, double *weights, double *kv, hl_err *err)
{
    *weights = *kv = 0;
    if (!(s->j->spec_tokens > 0 && s->j->spec_draft))
        return HL_OK;
    static _Thread_local hl_job dj; /* 11 KB: off the stack */
    hl_sim_ctx ds;
    hl_status st = hl_sim_resolve_draft(s->j, &dj, &ds, err);
    if (st || (st = weights_bytes(&ds, weights, err)))
        return st;
    *kv = kv_bytes(&ds, ctx);
    return HL_OK;
}

hl_status hl_memory_draft_token_bytes(const hl_job *job, double *out, hl_err *err)
{
    *out = 0;
    if (!(job->spec_tokens > 0 && job->spec_draft))
        return HL_OK;
    static _Thread_local hl_job dj; /* 11 KB: off the stack */
    hl_sim_ctx ds;
    hl_status st = hl_sim_resolve_draft(job, &dj, &ds, err);
    if (st)
        return st;
    /* kv_bytes is linear in the context (the state is per sequence): one more token's bytes */
    *out = (kv_bytes(&ds, 2) - kv_bytes(&ds, 1)) / ds.b_local;
    return HL_OK;
}

/* The weights and the KV factors of the last job class (sim.c's job_class_of: the job but its
 * input) this thread ran: they do not depend on the prompt, so a sweep over input counts them
 * once. */
typedef struct weights_memo {
    uint64_t job_class; /* 0: empty */
    double bytes;
    kv_factors kv;
} weights_memo;
static _Thread_local weights_memo wmemo;

hl_status hl_memory_resolved(const hl_sim_ctx *s, hl_memory *out, hl_err *err)
{
    const hl_job *j = s->j;
    const hl_model *m = s->m;
    if (s->job_class && wmemo.job_class == s->job_class) {
        out->weights_bytes = wmemo.bytes;
    } else {
        hl_status st = weights_bytes(s, &out->weights_bytes, err);
        if (st)
            return st;
        wmemo.job_class = s->job_class;
        wmemo.bytes = out->weights_bytes;
        wmemo.kv = kv_factors_of(s);
    }
    double ctx = j->input + j->output, dw, dkv;
    hl_status st = draft_bytes(s, ctx, &dw, &dkv, err);
    if (st)
        return st;
    out->draft_bytes = dw + dkv;
    out->weights_bytes += dw;
    out->kv_bytes = kv_bytes_with(s, ctx, &wmemo.kv) + dkv;
    double b = s->b_local;
    /* Workspace: activations of a prefill chunk of up to 8192 tokens, 16 hidden-wide
     * buffers, plus 0.5 GB of runtime buffers (documented heuristic). */
    out->workspace_bytes = j->workspace_bytes > 0
                               ? j->workspace_bytes
                               : hl_fmin(b * j->input, 8192) * (double)m->hidden * s->ab * 16 + 0.5e9;
    out->per_gpu_bytes = out->weights_bytes + out->kv_bytes + out->workspace_bytes;
    out->fits = out->per_gpu_bytes <= hl_kv_usable_bytes(j->cluster.gpu.hbm_bytes, j->mem_util, s->fw.kv_of_free,
                                                         out->weights_bytes, out->workspace_bytes);
    return HL_OK;
}

hl_status hl_memory_trusted(const hl_job *job, hl_memory *out, int trust, hl_err *err)
{
    hl_sim_ctx s;
    hl_status st = hl_sim_resolve(job, &s, trust, err);
    return st ? st : hl_memory_resolved(&s, out, err);
}

hl_status hl_memory_per_gpu(const hl_job *job, hl_memory *out, hl_err *err)
{
    if (!job || !out) /* the public entry; the sweep's points call hl_memory_trusted */
        return hl_fail(err, HL_EINVAL, "hl_memory_per_gpu: the %s is NULL", !job ? "job" : "output");
    return hl_memory_trusted(job, out, 0, err);
}
