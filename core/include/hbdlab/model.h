/* Decoder-only transformer descriptions: dense, GQA/MHA, MLA, MoE. Parameter
 * counts and Hugging Face config.json import. */
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
} hl_params;

const hl_field_set *hl_model_fields(void);

/* Checks ranges and consistency (kv_heads divides heads, topk <= experts, ...). */
hl_status hl_model_validate(const hl_model *m, hl_err *err);

/* Counts parameters. */
hl_status hl_model_params(const hl_model *m, hl_params *out, hl_err *err);

/* Effective sizes after defaults: expert_ffn or ffn, shared_ffn or expert_ffn. */
int64_t hl_model_expert_ffn(const hl_model *m);
int64_t hl_model_shared_ffn(const hl_model *m);

/* Number of MoE layers (layers - dense_layers, or 0 for a dense model). */
int64_t hl_model_moe_layers(const hl_model *m);

/* Reads a Hugging Face config.json text. origin names the file in messages.
 * Supported model_type: llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe,
 * mixtral, deepseek_v2, deepseek_v3, gpt_oss. */
hl_status hl_model_from_hf_json(const char *text, const char *origin, hl_model *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
