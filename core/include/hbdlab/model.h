/* Decoder-only transformer descriptions: dense, GQA/MHA, MLA, MoE, and the
 * layer patterns of hybrid models (sliding or chunked local attention, linear
 * attention, interleaved MoE), sparse attention, sinks and a vision encoder.
 * Parameter counts and Hugging Face config.json import. */
#ifndef HBDLAB_MODEL_H
#define HBDLAB_MODEL_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/fields.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_attn_kind {
    HL_ATTN_GQA = 0, /* grouped-query attention; MHA when kv_heads == heads */
    HL_ATTN_MLA = 1  /* multi-head latent attention (DeepSeek-V2/V3) */
} hl_attn_kind;

/* Storage of the routed experts' weights (the rest follows the job's precision). */
typedef enum hl_expert_precision {
    HL_EXPERT_SAME = 0,  /* the job's weight precision */
    HL_EXPERT_BF16 = 1,  /* 2 B per weight */
    HL_EXPERT_FP8 = 2,   /* 1 B per weight */
    HL_EXPERT_MXFP4 = 3, /* OCP MX: 32 E2M1 values share one E8M0 scale: 4.25 bits per weight */
    HL_EXPERT_FP4 = 4    /* 0.5 B per weight, scales not counted */
} hl_expert_precision;

typedef struct hl_model {
    char name[64];
    int64_t hidden;   /* model width */
    int64_t layers;   /* decoder layers */
    int64_t heads;    /* query heads */
    int64_t kv_heads; /* key/value heads (GQA) */
    int64_t head_dim; /* per-head dimension of q, k, v (GQA) */
    int64_t ffn;      /* dense FFN intermediate size (SwiGLU: 3 matrices) */
    int64_t vocab;
    int32_t attn;           /* hl_attn_kind */
    int64_t q_lora_rank;    /* MLA: query down-projection rank (0 = no q compression) */
    int64_t kv_lora_rank;   /* MLA: compressed KV latent width */
    int64_t qk_nope_dim;    /* MLA: per-head q/k dims without RoPE */
    int64_t qk_rope_dim;    /* MLA: per-head (shared for k) RoPE dims */
    int64_t v_head_dim;     /* MLA: per-head value dims */
    int64_t experts;        /* routed experts per MoE layer; 0 = dense model */
    int64_t topk;           /* experts each token is routed to */
    int64_t shared_experts; /* always-active experts per MoE layer */
    int64_t expert_ffn;     /* intermediate size of one expert; 0 = same as ffn */
    int64_t shared_ffn;     /* intermediate size of one shared expert; 0 = expert_ffn */
    int64_t dense_layers;   /* the first dense_layers layers use the dense FFN */
    int32_t qkv_bias;       /* 1 when q, k, v projections have biases */
    int32_t o_bias;         /* 1 when the output projection has a bias */
    int32_t expert_bias;    /* 1 when expert and router matrices have biases (gpt-oss) */
    int32_t tied_embeddings;
    int64_t sliding_window;  /* tokens seen by sliding-window layers; 0 = none */
    double sliding_fraction; /* fraction of layers using the sliding window */
    int64_t max_position;    /* context limit (informational) */
    /* Layer pattern and attention variants (docs/MODEL.md section 2.3). */
    int32_t local_chunked;    /* 1: the sliding_fraction layers attend within aligned chunks of
                                 sliding_window tokens instead of a sliding window (Llama-4) */
    int32_t attn_sinks;       /* 1: one learned sink logit per head joins every softmax (gpt-oss) */
    int32_t attn_gate;        /* 1: a sigmoid gate on the attention output; q_proj twice as wide (Qwen3-Next) */
    int32_t expert_precision; /* hl_expert_precision of the routed experts' weights */
    int64_t moe_every;        /* after dense_layers, layer i (0-based) is MoE when (i + 1) % moe_every == 0;
                                 0 or 1 = every layer (Llama-4 Maverick: 2) */
    double linear_fraction;   /* fraction of layers with linear attention (gated DeltaNet) */
    int64_t linear_k_heads;   /* linear attention: key (and query) heads */
    int64_t linear_v_heads;   /* linear attention: value heads, one recurrent state each */
    int64_t linear_k_dim;     /* linear attention: per-head key width */
    int64_t linear_v_dim;     /* linear attention: per-head value width */
    int64_t linear_conv;      /* linear attention: causal depthwise convolution width (0 = none) */
    int64_t index_topk;       /* sparse attention (DSA): keys each query attends to; 0 = dense attention */
    int64_t index_heads;      /* sparse attention: lightning-indexer heads */
    int64_t index_dim;        /* sparse attention: indexer head width (one cached key per token) */
    int64_t vision_layers;    /* vision encoder (Qwen2.5-VL style ViT) blocks; 0 = text only */
    int64_t vision_hidden;    /* vision encoder width */
    int64_t vision_ffn;       /* vision encoder SwiGLU intermediate size */
    int64_t vision_heads;     /* vision encoder attention heads */
    int64_t vision_patch;     /* patch side in pixels */
    int64_t vision_temporal;  /* frames per patch (temporal patch size) */
    int64_t vision_merge;     /* spatial merge: merge x merge patches become one LLM token */
    int64_t vision_window;    /* window side in patches of windowed-attention blocks (0 = all full) */
    int64_t vision_full;      /* vision blocks with full attention over the image */
    int64_t mtp_layers;       /* multi-token-prediction modules (HF num_nextn_predict_layers): a drafter */
    int64_t vision_positions; /* SigLIP: learned position embeddings (patches of one image) */
    int64_t vision_adapter;   /* Llama-4: pixel-shuffle MLP width (projector_input_dim); 0 = none */
    int32_t vision_siglip;    /* 1: a SigLIP tower (Gemma 3): LayerNorms, GELU MLP, learned positions, pooling */
    char source[640];
} hl_model;

/* Parameter counts (elements, not bytes). */
typedef struct hl_params {
    double total;      /* every parameter, embeddings and LM head included */
    double active;     /* parameters a token uses: top-k + shared experts only */
    double embedding;  /* input embedding table */
    double lm_head;    /* output projection (0 when tied) */
    double attention;  /* all layers' attention projections and norms */
    double dense_ffn;  /* all dense FFN layers */
    double experts;    /* all routed experts of all MoE layers */
    double shared;     /* all shared experts */
    double router;     /* all routers */
    double norms;      /* layer norms and the final norm */
    double per_expert; /* one routed expert */
    double vision;     /* vision encoder and its merger into the LLM width */
    double mtp;        /* the MTP modules' own parameters (embedding and head shared): not in total */
    double mtp_active; /* of those, what one draft token uses: not in active */
} hl_params;

const hl_field_set *hl_model_fields(void);

/* Checks ranges and consistency (kv_heads divides heads, topk <= experts, ...). */
hl_status hl_model_validate(const hl_model *m, hl_err *err);

/* Counts parameters. */
hl_status hl_model_params(const hl_model *m, hl_params *out, hl_err *err);

/* Effective sizes after defaults: expert_ffn or ffn, shared_ffn or expert_ffn. */
int64_t hl_model_expert_ffn(const hl_model *m);
int64_t hl_model_shared_ffn(const hl_model *m);

/* Number of MoE layers: of layers dense_layers..layers-1, those where
 * (i + 1) % moe_every == 0 (every one when moe_every <= 1); 0 for a dense model. */
int64_t hl_model_moe_layers(const hl_model *m);

/* Layers by attention kind: linear (gated DeltaNet), local (sliding window or
 * chunked) and full; they sum to layers (fractions times layers, rounded). */
int64_t hl_model_linear_layers(const hl_model *m);
int64_t hl_model_local_layers(const hl_model *m);

/* Bytes per weight of the routed experts; `weights` is the job's weight bytes. */
double hl_model_expert_weight_bytes(const hl_model *m, double weights);

/* Vision-encoder patches behind one LLM image token: vision_merge^2 (an image
 * is one temporal patch; Qwen2.5-VL: 4); 0 for a text-only model. */
double hl_model_image_patches_per_token(const hl_model *m);

/* Reads a Hugging Face config.json text. origin names the file in messages.
 * Supported model_type: llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe,
 * mixtral, deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, gpt_oss,
 * qwen3_next, llama4 (text_config), glm4_moe, gemma3 (text_config),
 * gemma3_text, qwen2_5_vl. */
hl_status hl_model_from_hf_json(const char *text, const char *origin, hl_model *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
