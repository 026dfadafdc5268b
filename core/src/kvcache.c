/* KV-cache sizes and capacity (formulas: docs/MODEL.md §4). */
#include "hbdlab/kvcache.h"

#include <math.h>

#include "err_int.h"
#include "kvcache_int.h"

/* Elements per token per softmax-attention layer for the whole model (all KV
 * heads); DSA adds the indexer's key (index_dim) to MLA's latent. */
static double index_elems(const hl_model *m) { return m->index_topk > 0 ? (double)m->index_dim : 0; }

static double kv_elems_per_layer(const hl_model *m)
{
    if (m->attn == HL_ATTN_MLA)
        return (double)(m->kv_lora_rank + m->qk_rope_dim) + index_elems(m);
    return 2.0 * (double)m->kv_heads * (double)m->head_dim + index_elems(m);
}

/* Layers that cache keys per token: all but the linear-attention ones. */
static double attention_layers(const hl_model *m) { return (double)(m->layers - hl_model_linear_layers(m)); }

double hl_kv_bytes_per_token(const hl_model *m, hl_precision kv)
{
    return kv_elems_per_layer(m) * attention_layers(m) * hl_precision_bytes(kv);
}

void hl_kv_seq_line_of(const hl_model *m, hl_precision kv, hl_kv_seq_line *l)
{
    l->per_layer = kv_elems_per_layer(m) * hl_precision_bytes(kv);
    l->local = (double)hl_model_local_layers(m);
    l->full = attention_layers(m) - l->local;
    l->window = m->sliding_window > 0 ? (double)m->sliding_window : 0;
    l->index_layers = index_elems(m) * attention_layers(m);
    l->bytes = hl_precision_bytes(kv);
}

double hl_kv_bytes_sequence(const hl_model *m, hl_precision kv, double context)
{
    hl_kv_seq_line l;
    hl_kv_seq_line_of(m, kv, &l);
    return hl_kv_seq_bytes(&l, context);
}

double hl_kv_index_bytes_sequence(const hl_model *m, hl_precision kv, double context)
{
    hl_kv_seq_line l;
    hl_kv_seq_line_of(m, kv, &l);
    return hl_kv_seq_index_bytes(&l, context);
}

double hl_kv_state_elems_layer(const hl_model *m)
{
    if (hl_model_linear_layers(m) <= 0)
        return 0;
    double Vh = (double)m->linear_v_heads, dk = (double)m->linear_k_dim, dv = (double)m->linear_v_dim;
    double conv_channels = 2 * (double)m->linear_k_heads * dk + Vh * dv; /* q, k, v go through the conv */
    double conv_keep = m->linear_conv > 1 ? (double)(m->linear_conv - 1) : 0;
    return Vh * dk * dv + conv_channels * conv_keep;
}

double hl_kv_state_bytes(const hl_model *m, hl_precision state)
{
    return hl_kv_state_elems_layer(m) * (double)hl_model_linear_layers(m) * hl_precision_bytes(state);
}

double hl_kv_state_share_per_gpu(const hl_model *m, int64_t tp)
{
    if (tp <= 1 || m->linear_v_heads <= 0)
        return 1;
    /* heads split over TP (vLLM shards the DeltaNet heads); replicated past one head per GPU */
    return tp >= m->linear_k_heads ? 1.0 / (double)m->linear_k_heads : 1.0 / (double)tp;
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
    if (m->attn == HL_ATTN_MLA) /* the attention's latent; the indexer's key is read by the indexer */
        return (kv_elems_per_layer(m) - index_elems(m)) * b;
    return 2.0 * hl_kv_heads_per_gpu(m, tp) * (double)m->head_dim * b;
}

double hl_kv_usable_bytes(double hbm_bytes, double mem_util, int32_t of_free, double weights_bytes,
                          double workspace_bytes)
{
    /* TensorRT-LLM: freeMemFraction x what cudaMemGetInfo reports free after the engine is loaded
     * (KVCacheManager::calculateMaxNumBlocks), on top of what is already in use */
    double free_bytes = hbm_bytes - weights_bytes - workspace_bytes;
    if (of_free) /* nothing free: the engine does not load, so no more than the device */
        return free_bytes > 0 ? weights_bytes + workspace_bytes + mem_util * free_bytes : hbm_bytes;
    return hbm_bytes * mem_util;
}

hl_status hl_kv_capacity_compute(const hl_kv_capacity_in *in, hl_kv_capacity *out, hl_err *err)
{
    if (!in || !out)
        return hl_fail(err, HL_EINVAL, "kv capacity: the %s is NULL", !in ? "input" : "output");
    /* each field by name (the message listed every rule and all seven values, naming none) */
    const struct {
        const char *name, *rule;
        double v;
        int ok;
    } f[] = {
        {"hbm_bytes", "a finite number > 0", in->hbm_bytes, in->hbm_bytes > 0 && isfinite(in->hbm_bytes)},
        {"mem_util", "a fraction in (0, 1]", in->mem_util, in->mem_util > 0 && in->mem_util <= 1},
        {"weights_bytes", "a finite number >= 0", in->weights_bytes,
         in->weights_bytes >= 0 && isfinite(in->weights_bytes)},
        {"workspace_bytes", "a finite number >= 0", in->workspace_bytes,
         in->workspace_bytes >= 0 && isfinite(in->workspace_bytes)},
        {"kv_token_bytes", "a finite number > 0", in->kv_token_bytes,
         in->kv_token_bytes > 0 && isfinite(in->kv_token_bytes)},
        {"context", "a finite number >= 1", in->context, in->context >= 1 && isfinite(in->context)},
        {"block_tokens", "a finite number >= 0", in->block_tokens, in->block_tokens >= 0 && isfinite(in->block_tokens)},
    };
    for (int i = 0; i < (int)(sizeof f / sizeof f[0]); i++)
        if (!f[i].ok)
            return hl_fail(err, HL_EINVAL, "kv capacity field '%s': %g is not allowed (%s)", f[i].name, f[i].v,
                           f[i].rule);
    if (in->of_free != 0 && in->of_free != 1)
        return hl_fail(err, HL_EINVAL, "kv capacity field 'of_free': %d is not allowed (0 or 1)", (int)in->of_free);
    hl_kv_capacity c = {0};
    c.kv_budget_bytes =
        hl_kv_usable_bytes(in->hbm_bytes, in->mem_util, in->of_free, in->weights_bytes, in->workspace_bytes) -
        in->weights_bytes - in->workspace_bytes;
    if (c.kv_budget_bytes <= 0 && in->of_free)
        return hl_fail(err, HL_ENOFIT, "weights (%.2f GB) + workspace (%.2f GB) exceed HBM (%.2f GB) by %.2f GB",
                       in->weights_bytes / 1e9, in->workspace_bytes / 1e9, in->hbm_bytes / 1e9,
                       (in->weights_bytes + in->workspace_bytes - in->hbm_bytes) / 1e9);
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
