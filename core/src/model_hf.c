/* Import of Hugging Face config.json files into hl_model. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/model.h"
#include "json_int.h"

static const char *const supported[] = {"llama",     "mistral",     "qwen2",       "qwen3",       "qwen2_moe",
                                        "qwen3_moe", "mixtral",     "deepseek_v2", "deepseek_v3", "deepseek_v32",
                                        "kimi_k2",   "gpt_oss",     "qwen3_next",  "llama4",      "glm4_moe",
                                        "gemma3",    "gemma3_text", "qwen2_5_vl",  NULL};

typedef struct reader {
    const cJSON *root; /* the object fields are read from (a text_config, or the file's root) */
    const char *origin;
    hl_err *err;
    hl_status status; /* first failure, sticky */
} reader;

/* Reads an integer field; required ones fail when absent; null counts as absent. */
static int64_t get_int(reader *r, const char *key, int required, int64_t def)
{
    if (r->status)
        return def;
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it)) {
        if (required)
            r->status = hl_fail(r->err, HL_EPARSE, "%s: required field '%s' is missing", r->origin, key);
        return def;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || it->valuedouble < 0 ||
        it->valuedouble > 1e12) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': expected a non-negative integer", r->origin, key);
        return def;
    }
    return (int64_t)it->valuedouble;
}

/* The SigLIP-style ViT tower of a vision_config (Llama 4, Gemma 3): its shape into m; returns
 * the patches per image side (image_size / patch_size; 0 when patch_size is missing). */
static int64_t read_siglip_tower(reader *v, hl_model *m)
{
    m->vision_siglip = 1;
    m->vision_layers = get_int(v, "num_hidden_layers", 1, 0);
    m->vision_hidden = get_int(v, "hidden_size", 1, 0);
    m->vision_ffn = get_int(v, "intermediate_size", 1, 0);
    m->vision_heads = get_int(v, "num_attention_heads", 1, 0);
    m->vision_patch = get_int(v, "patch_size", 1, 0);
    return m->vision_patch > 0 ? get_int(v, "image_size", 1, 0) / m->vision_patch : 0;
}

static int get_bool(reader *r, const char *key, int def)
{
    if (r->status)
        return def;
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it))
        return def;
    if (!cJSON_IsBool(it)) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': expected true or false", r->origin, key);
        return def;
    }
    return cJSON_IsTrue(it);
}

static int is(const char *type, const char *a) { return strcmp(type, a) == 0; }

/* Fraction of the `layers` entries of the integer or string array `key` equal
 * to `want` (a layer_types string, or the integer `flag` when want is NULL);
 * -1 when the array is absent or empty. */
static double array_fraction(reader *r, const char *key, const char *want, int flag, int64_t layers)
{
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!lt || cJSON_IsNull(lt) || r->status)
        return -1;
    if (!cJSON_IsArray(lt)) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': expected an array", r->origin, key);
        return -1;
    }
    int n = 0, hit = 0;
    for (const cJSON *e = lt->child; e; e = e->next, n++) {
        if (want ? !cJSON_IsString(e) : !cJSON_IsNumber(e)) {
            r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s[%d]': expected a %s", r->origin, key, n,
                                want ? "string" : "number");
            return -1;
        }
        hit += want ? strcmp(e->valuestring, want) == 0 : e->valueint == flag;
    }
    if (n == 0) /* an empty list means the default pattern (transformers' Llama4TextConfig) */
        return -1;
    if (n != layers) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': %d entries, expected one per layer (%lld)", r->origin,
                            key, n, (long long)layers);
        return -1;
    }
    return n ? (double)hit / n : 0;
}

/* Fraction of layers i = 0..layers-1 with (i + 1) % every != 0 (the layers
 * between the periodic ones). */
static double between_fraction(int64_t layers, int64_t every)
{
    if (every <= 1 || layers <= 0)
        return 0;
    int64_t n = 0;
    for (int64_t i = 0; i < layers; i++)
        n += (i + 1) % every != 0;
    return (double)n / (double)layers;
}

static const cJSON *object_item(reader *r, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it) || r->status)
        return NULL;
    if (!cJSON_IsObject(it)) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': expected an object", r->origin, key);
        return NULL;
    }
    return it;
}

/* Number of entries of the array `key` (0 when absent). */
static int64_t array_length(reader *r, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!it || cJSON_IsNull(it) || r->status)
        return 0;
    if (!cJSON_IsArray(it)) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field '%s': expected an array", r->origin, key);
        return 0;
    }
    return cJSON_GetArraySize(it);
}

/* Qwen2.5-VL's vision_config: the ViT and its patch merger. */
static void read_vision(reader *r, hl_model *m)
{
    const cJSON *vc = object_item(r, "vision_config");
    if (!vc)
        return;
    reader v = {vc, r->origin, r->err, r->status};
    m->vision_layers = get_int(&v, "depth", 1, 0);
    m->vision_hidden = get_int(&v, "hidden_size", 1, 0);
    m->vision_ffn = get_int(&v, "intermediate_size", 1, 0);
    m->vision_heads = get_int(&v, "num_heads", 1, 0);
    m->vision_patch = get_int(&v, "patch_size", 0, 14);
    m->vision_temporal = get_int(&v, "temporal_patch_size", 0, 2);
    m->vision_merge = get_int(&v, "spatial_merge_size", 0, 2);
    int64_t window_px = get_int(&v, "window_size", 0, 0);
    m->vision_window = m->vision_patch > 0 ? window_px / m->vision_patch : 0;
    m->vision_full = array_length(&v, "fullatt_block_indexes");
    if (m->vision_window == 0)
        m->vision_full = m->vision_layers;
    r->status = v.status;
}

hl_status hl_model_from_hf_json(const char *text, const char *origin, hl_model *out, hl_err *err)
{
    cJSON *root = NULL;
    hl_status s = hl_json_parse_object(text, origin, &root, err);
    if (s)
        return s;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt)) {
        cJSON_Delete(root);
        return hl_fail(err, HL_EPARSE, "%s: field 'model_type' is missing or not a string", origin);
    }
    const char *type = mt->valuestring;
    int ok = 0;
    for (int i = 0; supported[i]; i++)
        ok |= is(type, supported[i]);
    if (!ok) {
        hl_fail(err, HL_EUNSUPPORTED,
                "%s: field 'model_type': '%s' is not supported (supported: llama, mistral, qwen2, qwen3, "
                "qwen2_moe, qwen3_moe, mixtral, deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, gpt_oss, "
                "qwen3_next, llama4, glm4_moe, gemma3, gemma3_text, qwen2_5_vl)",
                origin, type);
        cJSON_Delete(root);
        return HL_EUNSUPPORTED;
    }
    reader top = {root, origin, err, HL_OK};
    /* multimodal configs keep the language model in text_config */
    const cJSON *tc = is(type, "llama4") || is(type, "gemma3") ? object_item(&top, "text_config") : NULL;
    if (!tc && !top.status && (is(type, "llama4") || is(type, "gemma3")))
        top.status = hl_fail(err, HL_EPARSE, "%s: required field 'text_config' is missing", origin);
    reader r = {tc ? tc : root, origin, err, top.status};
    hl_model m;
    memset(&m, 0, sizeof m);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    snprintf(m.name, sizeof m.name, "%s", cJSON_IsString(nm) && nm->valuestring[0] ? nm->valuestring : type);
    snprintf(m.source, sizeof m.source, "Hugging Face config %s", origin);
    int gemma = is(type, "gemma3") || is(type, "gemma3_text");
    int mla = is(type, "deepseek_v2") || is(type, "deepseek_v3") || is(type, "deepseek_v32") || is(type, "kimi_k2");
    m.hidden = get_int(&r, "hidden_size", 1, 0);
    m.layers = get_int(&r, "num_hidden_layers", 1, 0);
    m.heads = get_int(&r, "num_attention_heads", 1, 0);
    m.kv_heads = get_int(&r, "num_key_value_heads", 0, m.heads);
    m.head_dim = get_int(&r, "head_dim", 0, gemma ? 256 : m.heads ? m.hidden / m.heads : 0);
    /* Gemma3TextConfig's defaults: vocab 262,208, tied embeddings (transformers) */
    m.vocab = get_int(&r, "vocab_size", !gemma, gemma ? 262208 : 0);
    m.max_position = get_int(&r, "max_position_embeddings", 0, 0);
    m.tied_embeddings = get_bool(&r, "tie_word_embeddings", gemma);
    int moe = is(type, "mixtral") || is(type, "qwen2_moe") || is(type, "qwen3_moe") || mla || is(type, "gpt_oss") ||
              is(type, "qwen3_next") || is(type, "llama4") || is(type, "glm4_moe");
    if (is(type, "llama4"))
        m.ffn = get_int(&r, "intermediate_size_mlp", 1, 0); /* the dense layers' width */
    else
        m.ffn = get_int(&r, "intermediate_size", !moe || is(type, "mixtral") || is(type, "gpt_oss"), 0);
    int bias = get_bool(&r, "attention_bias", 0);
    m.qkv_bias = is(type, "qwen2") || is(type, "qwen2_moe") || is(type, "qwen2_5_vl") ? 1 : bias;
    m.o_bias = is(type, "gpt_oss") ? bias : 0;
    if (moe) {
        if (is(type, "mixtral") || is(type, "gpt_oss") || is(type, "llama4"))
            m.experts = get_int(&r, "num_local_experts", 1, 0);
        else if (mla || is(type, "glm4_moe"))
            m.experts = get_int(&r, "n_routed_experts", 1, 0);
        else
            m.experts = get_int(&r, "num_experts", 1, 0);
        m.topk = get_int(&r, "num_experts_per_tok", 1, 0);
        if (is(type, "mixtral") || is(type, "gpt_oss"))
            m.expert_ffn = m.ffn;
        else if (is(type, "llama4"))
            m.expert_ffn = get_int(&r, "intermediate_size", 1, 0);
        else
            m.expert_ffn = get_int(&r, "moe_intermediate_size", 1, 0);
        m.expert_bias = is(type, "gpt_oss");
        if (mla || is(type, "glm4_moe")) {
            m.shared_experts = get_int(&r, "n_shared_experts", 0, 0);
            m.dense_layers = get_int(&r, "first_k_dense_replace", 0, 0);
        } else if (is(type, "qwen2_moe") || is(type, "qwen3_next")) {
            int64_t sh = get_int(&r, "shared_expert_intermediate_size", 0, 0);
            m.shared_experts = sh > 0;
            m.shared_ffn = sh;
        } else if (is(type, "llama4")) { /* one shared expert of the routed experts' width */
            m.shared_experts = 1;
            m.moe_every = get_int(&r, "interleave_moe_layer_step", 0, 1);
        }
        if (is(type, "qwen2_moe") || is(type, "qwen3_moe") || is(type, "qwen3_next")) {
            m.moe_every = get_int(&r, "decoder_sparse_step", 0, 1);
            if (array_length(&r, "mlp_only_layers") > 0 && !r.status)
                r.status = hl_fail(err, HL_EUNSUPPORTED,
                                   "%s: field 'mlp_only_layers': dense layers at listed positions are not supported "
                                   "(only an empty list)",
                                   origin);
        }
    }
    if (mla) {
        m.attn = HL_ATTN_MLA;
        m.q_lora_rank = get_int(&r, "q_lora_rank", 0, 0);
        m.kv_lora_rank = get_int(&r, "kv_lora_rank", 1, 0);
        m.qk_nope_dim = get_int(&r, "qk_nope_head_dim", 1, 0);
        m.qk_rope_dim = get_int(&r, "qk_rope_head_dim", 1, 0);
        m.v_head_dim = get_int(&r, "v_head_dim", 1, 0);
        m.head_dim = m.qk_nope_dim + m.qk_rope_dim;
        m.kv_heads = m.heads;
    }
    if (mla || is(type, "glm4_moe")) /* MTP modules (DeepSeek-V3 README_WEIGHTS.md) */
        m.mtp_layers = get_int(&r, "num_nextn_predict_layers", 0, 0);
    if (is(type, "deepseek_v32")) { /* DeepSeek Sparse Attention: lightning indexer, then top-k */
        m.index_topk = get_int(&r, "index_topk", 1, 0);
        m.index_heads = get_int(&r, "index_n_heads", 1, 0);
        m.index_dim = get_int(&r, "index_head_dim", 1, 0);
    }
    if (is(type, "gpt_oss")) {
        m.sliding_window = get_int(&r, "sliding_window", 0, 0);
        m.sliding_fraction = array_fraction(&r, "layer_types", "sliding_attention", -1, m.layers);
        if (m.sliding_window == 0 || m.sliding_fraction < 0)
            m.sliding_fraction = 0;
        m.attn_sinks = 1; /* GptOssAttention.sinks: one logit per head */
        const cJSON *q = object_item(&r, "quantization_config");
        const cJSON *qm = q ? cJSON_GetObjectItemCaseSensitive(q, "quant_method") : NULL;
        if (cJSON_IsString(qm) && strcmp(qm->valuestring, "mxfp4") == 0)
            m.expert_precision = HL_EXPERT_MXFP4; /* the experts; attention, router, embeddings stay bf16 */
    } else if (is(type, "mistral") || is(type, "mixtral")) {
        m.sliding_window = get_int(&r, "sliding_window", 0, 0);
        m.sliding_fraction = m.sliding_window > 0 ? 1 : 0;
    } else if (gemma) { /* sliding layers between the periodic global ones */
        m.sliding_window = get_int(&r, "sliding_window", 0, 4096);
        m.sliding_fraction = array_fraction(&r, "layer_types", "sliding_attention", -1, m.layers);
        if (m.sliding_fraction < 0)
            m.sliding_fraction = between_fraction(m.layers, get_int(&r, "sliding_window_pattern", 0, 6));
    } else if (is(type, "llama4")) { /* chunked local attention with RoPE; NoPE layers attend globally */
        m.sliding_window = get_int(&r, "attention_chunk_size", 0, 0);
        m.local_chunked = m.sliding_window > 0;
        m.sliding_fraction = array_fraction(&r, "no_rope_layers", NULL, 1, m.layers);
        if (m.sliding_fraction < 0)
            m.sliding_fraction = between_fraction(m.layers, get_int(&r, "no_rope_layer_interval", 0, 4));
        if (!m.local_chunked)
            m.sliding_fraction = 0;
    } else if (is(type, "qwen3_next")) { /* gated DeltaNet layers, gated full attention every few */
        m.linear_fraction = array_fraction(&r, "layer_types", "linear_attention", -1, m.layers);
        if (m.linear_fraction < 0)
            m.linear_fraction = between_fraction(m.layers, get_int(&r, "full_attention_interval", 0, 4));
        m.linear_k_heads = get_int(&r, "linear_num_key_heads", 1, 0);
        m.linear_v_heads = get_int(&r, "linear_num_value_heads", 1, 0);
        m.linear_k_dim = get_int(&r, "linear_key_head_dim", 1, 0);
        m.linear_v_dim = get_int(&r, "linear_value_head_dim", 1, 0);
        m.linear_conv = get_int(&r, "linear_conv_kernel_dim", 0, 4);
        m.attn_gate = 1;
    }
    if (is(type, "qwen2_5_vl")) {
        reader v = {root, origin, err, r.status};
        read_vision(&v, &m);
        r.status = v.status;
    } else if (is(type, "llama4") && !r.status) { /* Llama4VisionModel: ViT, pixel shuffle, MLP, projector */
        reader t = {root, origin, err, r.status};
        const cJSON *vc = object_item(&t, "vision_config");
        if (vc && cJSON_GetObjectItemCaseSensitive(vc, "projector_input_dim")) {
            reader v = {vc, origin, err, t.status};
            int64_t side = read_siglip_tower(&v, &m);
            m.vision_positions = side * side + 1; /* and the class token */
            m.vision_temporal = 1;
            m.vision_full = m.vision_layers;
            m.vision_adapter = get_int(&v, "projector_input_dim", 1, 0);
            int64_t out_dim = get_int(&v, "projector_output_dim", 1, 0);
            const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(vc, "pixel_shuffle_ratio");
            double rr = cJSON_IsNumber(ratio) ? ratio->valuedouble : 0;
            m.vision_merge = rr > 0 ? (int64_t)llround(1 / rr) : 0;
            if (!v.status &&
                (out_dim != m.vision_adapter || m.vision_merge < 1 || fabs(rr * m.vision_merge - 1) > 1e-9))
                v.status = hl_fail(err, HL_EUNSUPPORTED,
                                   "%s: vision_config: projector_output_dim %lld must equal projector_input_dim %lld "
                                   "and pixel_shuffle_ratio (%g) be 1/n",
                                   origin, (long long)out_dim, (long long)m.vision_adapter, rr);
            t.status = v.status;
        }
        r.status = t.status;
    } else if (is(type, "gemma3") && !r.status) { /* SigLIP tower, pooled to mm_tokens_per_image tokens */
        reader t = {root, origin, err, r.status};
        const cJSON *vc = object_item(&t, "vision_config");
        if (vc) {
            reader v = {vc, origin, err, t.status};
            int64_t side = read_siglip_tower(&v, &m);
            int64_t tokens = get_int(&t, "mm_tokens_per_image", 0, 256),
                    pooled = (int64_t)llround(sqrt((double)tokens));
            m.vision_positions = side * side;
            m.vision_temporal = 1;
            m.vision_merge = pooled > 0 && side % pooled == 0 ? side / pooled : 0; /* avg-pool side */
            m.vision_full = m.vision_layers;
            if (!v.status && (pooled * pooled != tokens || m.vision_merge <= 0))
                v.status = hl_fail(err, HL_EUNSUPPORTED,
                                   "%s: field 'mm_tokens_per_image': %lld is not a square dividing the %lld x %lld "
                                   "patches of an image",
                                   origin, (long long)tokens, (long long)side, (long long)side);
            t.status = v.status;
        }
        r.status = t.status;
    }
    s = r.status;
    cJSON_Delete(root);
    if (s)
        return s;
    s = hl_model_validate(&m, err);
    if (s) {
        hl_err_prefix(err, origin);
        return s;
    }
    *out = m;
    return HL_OK;
}
