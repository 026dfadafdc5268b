/* KV-cache sizes and capacity (formulas: docs/MODEL.md §4). */
#include "hbdlab/kvcache.h"

#include <math.h>

#include "err_int.h"

/* Elements per token per layer for the whole model (all KV heads). */
static double kv_elems_per_layer(const hl_model *m)
{
    if (m->attn == HL_ATTN_MLA)
        return (double)(m->kv_lora_rank + m->qk_rope_dim);
    return 2.0 * (double)m->kv_heads * (double)m->head_dim;
}

double hl_kv_bytes_per_token(const hl_model *m, hl_precision kv)
{
    return kv_elems_per_layer(m) * (double)m->layers * hl_precision_bytes(kv);
}

double hl_kv_bytes_sequence(const hl_model *m, hl_precision kv, double context)
{
    double per_layer = kv_elems_per_layer(m) * hl_precision_bytes(kv);
    double sliding = m->sliding_window > 0 ? m->sliding_fraction * (double)m->layers : 0;
    double full = (double)m->layers - sliding;
    double win = m->sliding_window > 0 ? fmin(context, (double)m->sliding_window) : context;
    return per_layer * (full * context + sliding * win);
}

double hl_kv_heads_per_gpu(const hl_model *m, int64_t tp)
{
    if (m->attn == HL_ATTN_MLA)
        return 1; /* the latent is shared by all heads: every TP rank keeps it whole */
    if (tp <= 0)
        tp = 1;
    return tp >= m->kv_heads ? 1 : (double)m->kv_heads / (double)tp;
}

double hl_kv_token_layer_bytes_per_gpu(const hl_model *m, hl_precision kv, int64_t tp)
{
    double b = hl_precision_bytes(kv);
    if (m->attn == HL_ATTN_MLA)
        return kv_elems_per_layer(m) * b;
    return 2.0 * hl_kv_heads_per_gpu(m, tp) * (double)m->head_dim * b;
}

hl_status hl_kv_capacity_compute(const hl_kv_capacity_in *in, hl_kv_capacity *out, hl_err *err)
{
    if (!(in->hbm_bytes > 0) || !(in->mem_util > 0 && in->mem_util <= 1) || !(in->weights_bytes >= 0) ||
        !(in->workspace_bytes >= 0) || !(in->kv_token_bytes > 0) || !(in->context >= 1) || !(in->block_tokens >= 0) ||
        !isfinite(in->hbm_bytes) || !isfinite(in->context) || !isfinite(in->weights_bytes) ||
        !isfinite(in->workspace_bytes) || !isfinite(in->kv_token_bytes) || !isfinite(in->block_tokens))
        return hl_fail(err, HL_EINVAL,
                       "kv capacity: need hbm_bytes > 0, 0 < mem_util <= 1, weights/workspace >= 0, "
                       "kv_token_bytes > 0, context >= 1, block_tokens >= 0, all finite (got %g, %g, %g, %g, %g, %g, "
                       "%g)",
                       in->hbm_bytes, in->mem_util, in->weights_bytes, in->workspace_bytes, in->kv_token_bytes,
                       in->context, in->block_tokens);
    hl_kv_capacity c = {0};
    c.kv_budget_bytes = in->hbm_bytes * in->mem_util - in->weights_bytes - in->workspace_bytes;
    if (c.kv_budget_bytes <= 0)
        return hl_fail(err, HL_ENOFIT,
                       "weights (%.2f GB) + workspace (%.2f GB) exceed %.0f%% of HBM (%.2f GB) by %.2f GB",
                       in->weights_bytes / 1e9, in->workspace_bytes / 1e9, in->mem_util * 100,
                       in->hbm_bytes * in->mem_util / 1e9, -c.kv_budget_bytes / 1e9);
    if (in->block_tokens > 0) {
        double block_bytes = in->block_tokens * in->kv_token_bytes;
        c.blocks_total = floor(c.kv_budget_bytes / block_bytes);
        c.blocks_per_seq = ceil(in->context / in->block_tokens);
        c.max_tokens = c.blocks_total * in->block_tokens;
        c.max_batch = floor(c.blocks_total / c.blocks_per_seq);
        c.fragmentation = 1 - in->context / (c.blocks_per_seq * in->block_tokens);
    } else {
        c.max_tokens = floor(c.kv_budget_bytes / in->kv_token_bytes);
        c.max_batch = floor(c.max_tokens / in->context);
    }
    *out = c;
    return HL_OK;
}
