/* Model descriptors, validation and parameter counts (formulas: docs/MODEL.md §2). */
#include "hbdlab/model.h"

#include <math.h>

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
    HL_FB(hl_model, local_chunked, "local_chunked",
          "sliding_fraction layers attend within aligned chunks of sliding_window tokens (Llama-4)"),
    HL_FB(hl_model, attn_sinks, "attn_sinks", "a learned sink logit per head joins each softmax (gpt-oss)"),
    HL_FB(hl_model, attn_gate, "attn_gate", "sigmoid gate on the attention output (Qwen3-Next)"),
    HL_FE(hl_model, expert_precision, "expert_precision", "same|bf16|fp8|mxfp4|fp4",
          "storage of routed-expert weights (same = the job's precision)"),
    HL_FI0(hl_model, moe_every, "moe_every", 1, 1e5, "every n-th layer after dense_layers is MoE (0 = every layer)"),
    HL_FD(hl_model, linear_fraction, "linear_fraction", 0, 1, "", "fraction of layers with linear attention"),
    HL_FI0(hl_model, linear_k_heads, "linear_k_heads", 1, 1e5, "linear attention key heads"),
    HL_FI0(hl_model, linear_v_heads, "linear_v_heads", 1, 1e5, "linear attention value heads (one state each)"),
    HL_FI0(hl_model, linear_k_dim, "linear_k_dim", 1, 1e5, "linear attention per-head key width"),
    HL_FI0(hl_model, linear_v_dim, "linear_v_dim", 1, 1e5, "linear attention per-head value width"),
    HL_FI0(hl_model, linear_conv, "linear_conv", 1, 64, "linear attention causal convolution width"),
    HL_FI0(hl_model, index_topk, "index_topk", 1, 1e9, "sparse attention: keys per query (0 = dense)"),
    HL_FI0(hl_model, index_heads, "index_heads", 1, 1e5, "sparse attention: indexer heads"),
    HL_FI0(hl_model, index_dim, "index_dim", 1, 1e5, "sparse attention: indexer head width"),
    HL_FI0(hl_model, vision_layers, "vision_layers", 1, 1e4, "vision encoder blocks (0 = text only)"),
    HL_FI0(hl_model, vision_hidden, "vision_hidden", 1, 1e6, "vision encoder width"),
    HL_FI0(hl_model, vision_ffn, "vision_ffn", 1, 1e7, "vision encoder SwiGLU intermediate size"),
    HL_FI0(hl_model, vision_heads, "vision_heads", 1, 1e4, "vision encoder attention heads"),
    HL_FI0(hl_model, vision_patch, "vision_patch", 1, 1e4, "vision patch side in pixels"),
    HL_FI0(hl_model, vision_temporal, "vision_temporal", 1, 64, "frames per vision patch"),
    HL_FI0(hl_model, vision_merge, "vision_merge", 1, 64, "merge x merge patches make one LLM token"),
    HL_FI0(hl_model, vision_window, "vision_window", 1, 1e4, "window side in patches (0 = full attention only)"),
    HL_FI0(hl_model, vision_full, "vision_full", 1, 1e4, "vision blocks with full attention"),
    HL_FB(hl_model, vision_siglip, "vision_siglip",
          "a SigLIP vision tower (Gemma 3): LayerNorms, GELU MLP, learned positions, pooled to tokens"),
    HL_FI0(hl_model, vision_positions, "vision_positions", 1, 1e7, "SigLIP: learned position embeddings"),
    HL_FI0(hl_model, vision_adapter, "vision_adapter", 1, 1e6,
           "Llama-4 vision: pixel-shuffle MLP width before the projector (0 = none)"),
    HL_FI0(hl_model, mtp_layers, "mtp_layers", 1, 64,
           "multi-token-prediction modules (DeepSeek, GLM-4.5): a speculative drafter, not in total"),
    HL_FS(hl_model, source, "source", "where the configuration comes from"),
};
static const hl_field_set model_set = {"model", model_fields, (int32_t)(sizeof model_fields / sizeof model_fields[0]),
                                       NULL};

const hl_field_set *hl_model_fields(void) { return &model_set; }

int64_t hl_model_expert_ffn(const hl_model *m) { return m->expert_ffn > 0 ? m->expert_ffn : m->ffn; }
int64_t hl_model_shared_ffn(const hl_model *m) { return m->shared_ffn > 0 ? m->shared_ffn : hl_model_expert_ffn(m); }
int64_t hl_model_moe_layers(const hl_model *m)
{
    if (m->experts <= 0 || m->dense_layers >= m->layers)
        return 0;
    int64_t step = m->moe_every > 1 ? m->moe_every : 1, n = 0;
    if (m->dense_layers >= 0) /* layers i in [dense, L) with step | i + 1: the multiples of step in (dense, L] */
        return m->layers / step - m->dense_layers / step;
    for (int64_t i = m->dense_layers; i < m->layers; i++) /* (not a valid model; counted as before) */
        n += (i + 1) % step == 0;
    return n;
}

/* No linear layers (most models) skips the libm call: llround(0 x layers) is 0 (a sweep point asks ~7 times) */
int64_t hl_model_linear_layers(const hl_model *m)
{
    return m->linear_fraction == 0 ? 0 : llround(m->linear_fraction * (double)m->layers);
}

int hl_model_layer_is_linear(const hl_model *m, int64_t i)
{
    int64_t L = m->layers, full = L - hl_model_linear_layers(m);
    if (full >= L)
        return 0;
    /* the full layers spread evenly, each closing a group: 3 linear then 1 full at 3/4 */
    return (i + 1) * full / L == i * full / L;
}

double hl_model_indexer_params(const hl_model *m)
{
    if (m->index_topk <= 0)
        return 0;
    /* DeepSeek-V3.2-Exp Indexer: wq_b (q latent -> heads x dim), wk, a LayerNorm on
     * the key (weight, bias), weights_proj (one weight per head); on a model
     * without a q latent the query comes from the hidden state */
    double h = (double)m->hidden, Hi = (double)m->index_heads, di = (double)m->index_dim;
    double qin = m->q_lora_rank > 0 ? (double)m->q_lora_rank : h;
    return qin * Hi * di + h * di + 2 * di + h * Hi;
}

double hl_model_linear_params_layer(const hl_model *m)
{
    if (hl_model_linear_layers(m) <= 0)
        return 0;
    double h = (double)m->hidden, Vh = (double)m->linear_v_heads;
    double kd = (double)(m->linear_k_heads * m->linear_k_dim), vd = Vh * (double)m->linear_v_dim;
    return h * (2 * kd + 2 * vd) + h * 2 * Vh + (2 * kd + vd) * (double)m->linear_conv + 2 * Vh +
           (double)m->linear_v_dim + vd * h;
}

int64_t hl_model_local_layers(const hl_model *m)
{
    return m->sliding_window > 0 ? llround(m->sliding_fraction * (double)m->layers) : 0;
}

double hl_model_expert_weight_bytes(const hl_model *m, double weights)
{
    switch (m->expert_precision) {
    case HL_EXPERT_BF16: return 2;
    case HL_EXPERT_FP8: return 1;
    case HL_EXPERT_MXFP4: return (32 * 4.0 + 8) / 32 / 8; /* 4.25 bits: 32 E2M1 values + one E8M0 scale */
    case HL_EXPERT_FP4: return 0.5;
    default: return weights;
    }
}

double hl_model_image_patches_per_token(const hl_model *m)
{
    return m->vision_layers > 0 ? (double)(m->vision_merge * m->vision_merge) : 0;
}

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
    if ((m->experts == 0 || m->dense_layers > 0 || m->moe_every > 1) && m->ffn <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': dense FFN layers need ffn > 0", n);
    if (m->sliding_fraction > 0 && m->sliding_window <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': sliding_fraction > 0 needs sliding_window > 0", n);
    if (m->local_chunked && m->sliding_window <= 0)
        return hl_fail(err, HL_EINVAL, "model '%s': local_chunked needs sliding_window > 0 (the chunk size)", n);
    if (m->sliding_fraction + m->linear_fraction > 1 + 1e-12)
        return hl_fail(err, HL_EINVAL, "model '%s': sliding_fraction (%g) + linear_fraction (%g) exceed 1", n,
                       m->sliding_fraction, m->linear_fraction);
    if (m->linear_fraction > 0 &&
        (m->linear_k_heads <= 0 || m->linear_v_heads <= 0 || m->linear_k_dim <= 0 || m->linear_v_dim <= 0))
        return hl_fail(err, HL_EINVAL,
                       "model '%s': linear_fraction > 0 needs linear_k_heads, linear_v_heads, linear_k_dim and "
                       "linear_v_dim > 0",
                       n);
    if (m->linear_fraction > 0 && m->linear_v_heads % m->linear_k_heads != 0)
        return hl_fail(err, HL_EINVAL, "model '%s': linear_k_heads = %lld does not divide linear_v_heads = %lld", n,
                       (long long)m->linear_k_heads, (long long)m->linear_v_heads);
    if (m->linear_fraction > 0 && hl_model_linear_layers(m) >= m->layers)
        return hl_fail(err, HL_EINVAL,
                       "model '%s': linear_fraction = %g makes all %lld layers linear; at least one must attend "
                       "(at most %g)",
                       n, m->linear_fraction, (long long)m->layers, 1 - 1.0 / (double)m->layers);
    if (hl_model_linear_layers(m) + hl_model_local_layers(m) > m->layers)
        return hl_fail(err, HL_EINVAL, "model '%s': %lld linear + %lld sliding layers exceed %lld layers", n,
                       (long long)hl_model_linear_layers(m), (long long)hl_model_local_layers(m), (long long)m->layers);
    if (m->index_topk > 0 && (m->index_heads <= 0 || m->index_dim <= 0))
        return hl_fail(err, HL_EINVAL,
                       "model '%s': index_topk > 0 (sparse attention) needs index_heads and index_dim > 0", n);
    if (m->index_topk > 0 && m->sliding_fraction > 0)
        return hl_fail(err, HL_EINVAL, "model '%s': sparse attention with sliding-window layers is not modelled", n);
    if (m->vision_layers > 0 && (m->vision_hidden <= 0 || m->vision_ffn <= 0 || m->vision_heads <= 0 ||
                                 m->vision_patch <= 0 || m->vision_temporal <= 0 || m->vision_merge <= 0))
        return hl_fail(err, HL_EINVAL,
                       "model '%s': vision_layers > 0 needs vision_hidden, vision_ffn, vision_heads, vision_patch, "
                       "vision_temporal and vision_merge > 0",
                       n);
    if (m->vision_layers > 0 && m->vision_hidden % m->vision_heads != 0)
        return hl_fail(err, HL_EINVAL, "model '%s': vision_heads = %lld does not divide vision_hidden = %lld", n,
                       (long long)m->vision_heads, (long long)m->vision_hidden);
    if (m->vision_full > m->vision_layers)
        return hl_fail(err, HL_EINVAL, "model '%s': vision_full = %lld exceeds vision_layers = %lld", n,
                       (long long)m->vision_full, (long long)m->vision_layers);
    return HL_OK;
}

/* Attention parameters of one softmax-attention layer (projections and their
 * biases, MLA's norms, the output gate, sinks, DSA's lightning indexer). */
static double attention_params(const hl_model *m)
{
    double h = (double)m->hidden, H = (double)m->heads;
    double extra = (m->attn_sinks ? H : 0); /* one sink logit per head */
    extra += hl_model_indexer_params(m);
    if (m->attn == HL_ATTN_MLA) {
        double qk = (double)(m->qk_nope_dim + m->qk_rope_dim);
        double q =
            m->q_lora_rank > 0 ? h * m->q_lora_rank + m->q_lora_rank + (double)m->q_lora_rank * H * qk : h * H * qk;
        double kv_a = h * (double)(m->kv_lora_rank + m->qk_rope_dim) + (double)m->kv_lora_rank;
        double kv_b = (double)m->kv_lora_rank * H * (double)(m->qk_nope_dim + m->v_head_dim);
        double o = H * (double)m->v_head_dim * h + (m->o_bias ? h : 0);
        return q + kv_a + kv_b + o + extra;
    }
    double d = (double)m->head_dim, K = (double)m->kv_heads;
    double qkv = h * (H + 2 * K) * d + (m->qkv_bias ? (H + 2 * K) * d : 0);
    double gate = m->attn_gate ? h * H * d : 0; /* q_proj also emits the per-channel gate */
    double o = H * d * h + (m->o_bias ? h : 0);
    return qkv + gate + o + extra;
}

/* Gated DeltaNet layer (Qwen3-Next): in_proj_qkvz h x (2 Kh dk + 2 Vh dv),
 * in_proj_ba h x 2 Vh, depthwise conv over q, k, v ((2 Kh dk + Vh dv) x conv),
 * dt_bias and A_log (Vh each), gated RMSNorm (dv), out_proj Vh dv x h. */
static double linear_attention_params(const hl_model *m) { return hl_model_linear_params_layer(m); }

/* Qwen2.5-VL vision tower: Conv3d patch embedding (3 x temporal x patch^2 -> V,
 * no bias); per block two RMSNorms, qkv and proj with biases, a SwiGLU with
 * biases; the merger: RMSNorm(V), Linear(V m^2, V m^2) and Linear(V m^2, h),
 * both with biases. */
static double vision_params(const hl_model *m)
{
    if (m->vision_layers <= 0)
        return 0;
    double V = (double)m->vision_hidden, F = (double)m->vision_ffn, h = (double)m->hidden;
    if (m->vision_siglip) { /* SigLIP (transformers SiglipVisionModel) and Gemma3MultiModalProjector */
        double Ps = (double)m->vision_patch;
        double block = 4 * (V * V + V) + 2 * 2 * V + (V * F + F) + (F * V + V); /* attention, 2 LayerNorms, MLP */
        if (m->vision_adapter > 0) { /* Llama4VisionModel: bias-free patch linear, class token, pre/post LayerNorm,
                                        pixel-shuffle MLP (m^2 V -> A -> A), projector A -> h (no biases) */
            double A = (double)m->vision_adapter, M = (double)(m->vision_merge * m->vision_merge);
            return 3 * Ps * Ps * V + V + (double)m->vision_positions * V + (double)m->vision_layers * block +
                   2 * 2 * V + M * V * A + A * A + A * h;
        }
        return 3 * Ps * Ps * V + V + (double)m->vision_positions * V + (double)m->vision_layers * block + 2 * V + V +
               V * h; /* patch conv with bias, positions, blocks, post LayerNorm; RMSNorm and projection */
    }
    double P = (double)m->vision_patch, T = (double)m->vision_temporal, M = (double)(m->vision_merge * m->vision_merge);
    double block = 2 * V + (V * 3 * V + 3 * V) + (V * V + V) + 2 * (V * F + F) + (F * V + V);
    double merger = V + (V * M * V * M + V * M) + (V * M * h + h);
    return 3 * T * P * P * V + (double)m->vision_layers * block + merger;
}

/* SwiGLU FFN of width f: gate, up (h x f) and down (f x h), plus biases if any. */
static double swiglu_params(double h, double f, int bias) { return 3 * h * f + (bias ? 2 * f + h : 0); }

hl_status hl_model_params(const hl_model *m, hl_params *out, hl_err *err)
{
    if (!m || !out)
        return hl_fail(err, HL_EINVAL, "hl_model_params: the %s is NULL", !m ? "model" : "output");
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
    double Llin = (double)hl_model_linear_layers(m);
    p.attention = (L - Llin) * attention_params(m) + (Llin > 0 ? Llin * linear_attention_params(m) : 0);
    p.vision = vision_params(m);
    p.norms = 2 * h * L + h;
    p.dense_ffn = dense * swiglu_params(h, (double)m->ffn, 0);
    p.per_expert = m->experts > 0 ? swiglu_params(h, (double)hl_model_expert_ffn(m), m->expert_bias) : 0;
    p.experts = moe * (double)m->experts * p.per_expert;
    p.shared = moe * (double)m->shared_experts * swiglu_params(h, (double)hl_model_shared_ffn(m), 0);
    p.router = moe * (h * (double)m->experts + (m->expert_bias ? (double)m->experts : 0));
    double common = p.embedding + p.lm_head + p.attention + p.norms + p.dense_ffn + p.shared + p.router + p.vision;
    p.total = common + p.experts;
    p.active = common + moe * (double)m->topk * p.per_expert;
    if (m->mtp_layers > 0) { /* docs/MODEL.md 2: enorm, hnorm, eh_proj (2h -> h), one decoder layer, the head's norm */
        double layer = attention_params(m) + 2 * h, n = (double)m->mtp_layers;
        double ffn = moe > 0 ? (double)m->shared_experts * swiglu_params(h, (double)hl_model_shared_ffn(m), 0) +
                                   h * (double)m->experts + (m->expert_bias ? (double)m->experts : 0)
                             : swiglu_params(h, (double)m->ffn, 0);
        double own = 3 * h + 2 * h * h + layer + ffn;
        p.mtp = n * (own + (moe > 0 ? (double)m->experts * p.per_expert : 0));
        p.mtp_active = n * (own + (moe > 0 ? (double)m->topk * p.per_expert : 0));
    }
    *out = p;
    return HL_OK;
}
