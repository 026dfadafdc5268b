/* Model descriptors, validation and parameter counts (formulas: docs/MODEL.md §2). */
#include "hbdlab/model.h"

#include "err_int.h"
#include "fields_int.h"
#include "model_int.h"

#define BIGI 1e12
static const hl_field model_fields[] = {
    HL_FS(hl_model, name, "name", "model name"),
    HL_FI(hl_model, hidden, "hidden", 1, 1e6, "model width (hidden_size)"),
    HL_FI(hl_model, layers, "layers", 1, 1e5, "decoder layers"),
    HL_FI(hl_model, heads, "heads", 1, 1e5, "query heads"),
    HL_FI(hl_model, kv_heads, "kv_heads", 1, 1e5, "key/value heads (GQA; = heads for MHA)"),
    HL_FI(hl_model, head_dim, "head_dim", 1, 1e5, "per-head width of q, k, v"),
    HL_FI0(hl_model, ffn, "ffn", 1, 1e7, "dense FFN intermediate size (0 when every layer is MoE)"),
    HL_FI(hl_model, vocab, "vocab", 1, 1e8, "vocabulary size"),
    HL_FE(hl_model, attn, "attn", "gqa|mla", "attention kind"),
    HL_FI0(hl_model, q_lora_rank, "q_lora_rank", 1, 1e6, "MLA query down-projection rank"),
    HL_FI0(hl_model, kv_lora_rank, "kv_lora_rank", 1, 1e6, "MLA compressed KV latent width"),
    HL_FI0(hl_model, qk_nope_dim, "qk_nope_dim", 1, 1e5, "MLA per-head q/k width without RoPE"),
    HL_FI0(hl_model, qk_rope_dim, "qk_rope_dim", 1, 1e5, "MLA per-head RoPE width"),
    HL_FI0(hl_model, v_head_dim, "v_head_dim", 1, 1e5, "MLA per-head value width"),
    HL_FI0(hl_model, experts, "experts", 1, 1e5, "routed experts per MoE layer (0 = dense)"),
    HL_FI0(hl_model, topk, "topk", 1, 1e5, "experts per token"),
    HL_FI0(hl_model, shared_experts, "shared_experts", 1, 1e3, "always-active experts per MoE layer"),
    HL_FI0(hl_model, expert_ffn, "expert_ffn", 1, 1e7, "intermediate size of one expert (0 = ffn)"),
    HL_FI0(hl_model, shared_ffn, "shared_ffn", 1, 1e7, "intermediate size of one shared expert (0 = expert_ffn)"),
    HL_FI0(hl_model, dense_layers, "dense_layers", 1, 1e5, "leading layers with a dense FFN in a MoE model"),
    HL_FB(hl_model, qkv_bias, "qkv_bias", "q, k, v projections have biases"),
    HL_FB(hl_model, o_bias, "o_bias", "output projection has a bias"),
    HL_FB(hl_model, expert_bias, "expert_bias", "experts and router have biases"),
    HL_FB(hl_model, tied_embeddings, "tied_embeddings", "LM head shares the embedding matrix"),
    HL_FI0(hl_model, sliding_window, "sliding_window", 1, 1e9, "window of sliding-window layers (0 = none)"),
    HL_FD(hl_model, sliding_fraction, "sliding_fraction", 0, 1, "", "fraction of layers using the sliding window"),
    HL_FI0(hl_model, max_position, "max_position", 1, 1e9, "context limit"),
    HL_FS(hl_model, source, "source", "where the configuration comes from"),
};
static const hl_field_set model_set = {"model", model_fields, (int32_t)(sizeof model_fields / sizeof model_fields[0])};

const hl_field_set *hl_model_fields(void) { return &model_set; }

int64_t hl_model_expert_ffn(const hl_model *m) { return m->expert_ffn > 0 ? m->expert_ffn : m->ffn; }
int64_t hl_model_shared_ffn(const hl_model *m) { return m->shared_ffn > 0 ? m->shared_ffn : hl_model_expert_ffn(m); }
int64_t hl_model_moe_layers(const hl_model *m) { return m->experts > 0 ? m->layers - m->dense_layers : 0; }

hl_status hl_model_validate(const hl_model *m, hl_err *err)
{
    hl_status s = hl_field_check_all(&model_set, m, err);
    if (s)
        return s;
    const char *n = m->name;
    if (m->attn == HL_ATTN_GQA && m->heads % m->kv_heads != 0)
        return hl_fail(err, HL_EINVAL, "model '%s': kv_heads = %lld does not divide heads = %lld", n,
                       (long long)m->kv_heads, (long long)m->heads);
    if (m->attn == HL_ATTN_MLA &&
        (m->kv_lora_rank <= 0 || m->qk_nope_dim <= 0 || m->qk_rope_dim <= 0 || m->v_head_dim <= 0))
        return hl_fail(err, HL_EINVAL,
                       "model '%s': attn = mla needs kv_lora_rank, qk_nope_dim, qk_rope_dim and v_head_dim > 0", n);
    if (m->experts == 0 && (m->topk > 0 || m->shared_experts > 0))
        return hl_fail(err, HL_EINVAL, "model '%s': topk = %lld / shared_experts = %lld need experts > 0", n,
                       (long long)m->topk, (long long)m->shared_experts);
    if (m->experts > 0 && (m->topk < 1 || m->topk > m->experts))
        return hl_fail(err, HL_EINVAL, "model '%s': topk = %lld must be in 1..experts (%lld)", n, (long long)m->topk,
                       (long long)m->experts);
    if (m->experts > 0 && hl_model_expert_ffn(m) <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': a MoE model needs expert_ffn > 0 (or ffn)", n);
    if (m->dense_layers > m->layers)
        return hl_fail(err, HL_EINVAL, "model '%s': dense_layers = %lld exceeds layers = %lld", n,
                       (long long)m->dense_layers, (long long)m->layers);
    if ((m->experts == 0 || m->dense_layers > 0) && m->ffn <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': dense FFN layers need ffn > 0", n);
    if (m->sliding_fraction > 0 && m->sliding_window <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': sliding_fraction > 0 needs sliding_window > 0", n);
    return HL_OK;
}

/* Attention parameters of one layer (projections and their biases, plus MLA's norms). */
static double attention_params(const hl_model *m)
{
    double h = (double)m->hidden, H = (double)m->heads;
    if (m->attn == HL_ATTN_MLA) {
        double qk = (double)(m->qk_nope_dim + m->qk_rope_dim);
        double q =
            m->q_lora_rank > 0 ? h * m->q_lora_rank + m->q_lora_rank + (double)m->q_lora_rank * H * qk : h * H * qk;
        double kv_a = h * (double)(m->kv_lora_rank + m->qk_rope_dim) + (double)m->kv_lora_rank;
        double kv_b = (double)m->kv_lora_rank * H * (double)(m->qk_nope_dim + m->v_head_dim);
        double o = H * (double)m->v_head_dim * h + (m->o_bias ? h : 0);
        return q + kv_a + kv_b + o;
    }
    double d = (double)m->head_dim, K = (double)m->kv_heads;
    double qkv = h * (H + 2 * K) * d + (m->qkv_bias ? (H + 2 * K) * d : 0);
    double o = H * d * h + (m->o_bias ? h : 0);
    return qkv + o;
}

/* SwiGLU FFN of width f: gate, up (h x f) and down (f x h), plus biases if any. */
static double swiglu_params(double h, double f, int bias) { return 3 * h * f + (bias ? 2 * f + h : 0); }

hl_status hl_model_params(const hl_model *m, hl_params *out, hl_err *err)
{
    hl_status s = hl_model_validate(m, err);
    if (s)
        return s;
    return hl_model_params_unchecked(m, out, err);
}

hl_status hl_model_params_unchecked(const hl_model *m, hl_params *out, hl_err *err)
{
    (void)err;
    double h = (double)m->hidden, L = (double)m->layers;
    double moe = (double)hl_model_moe_layers(m), dense = L - moe;
    hl_params p = {0};
    p.embedding = (double)m->vocab * h;
    p.lm_head = m->tied_embeddings ? 0 : (double)m->vocab * h;
    p.attention = L * attention_params(m);
    p.norms = 2 * h * L + h;
    p.dense_ffn = dense * swiglu_params(h, (double)m->ffn, 0);
    p.per_expert = m->experts > 0 ? swiglu_params(h, (double)hl_model_expert_ffn(m), m->expert_bias) : 0;
    p.experts = moe * (double)m->experts * p.per_expert;
    p.shared = moe * (double)m->shared_experts * swiglu_params(h, (double)hl_model_shared_ffn(m), 0);
    p.router = moe * (h * (double)m->experts + (m->expert_bias ? (double)m->experts : 0));
    double common = p.embedding + p.lm_head + p.attention + p.norms + p.dense_ffn + p.shared + p.router;
    p.total = common + p.experts;
    p.active = common + moe * (double)m->topk * p.per_expert;
    *out = p;
    return HL_OK;
}
