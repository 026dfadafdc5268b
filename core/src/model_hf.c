/* Import of Hugging Face config.json files into hl_model. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/model.h"
#include "json_int.h"

static const char *const supported[] = {"llama",   "mistral",     "qwen2",       "qwen3",   "qwen2_moe", "qwen3_moe",
                                        "mixtral", "deepseek_v2", "deepseek_v3", "gpt_oss", NULL};

typedef struct reader {
    const cJSON *root;
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

/* Fraction of layers whose layer_types entry is "sliding_attention" (gpt-oss). */
static double sliding_fraction(reader *r)
{
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(r->root, "layer_types");
    if (!lt || r->status)
        return 0;
    if (!cJSON_IsArray(lt)) {
        r->status = hl_fail(r->err, HL_EPARSE, "%s: field 'layer_types': expected an array", r->origin);
        return 0;
    }
    int n = 0, sliding = 0;
    for (const cJSON *e = lt->child; e; e = e->next, n++) {
        if (!cJSON_IsString(e)) {
            r->status = hl_fail(r->err, HL_EPARSE, "%s: field 'layer_types[%d]': expected a string", r->origin, n);
            return 0;
        }
        sliding += strcmp(e->valuestring, "sliding_attention") == 0;
    }
    return n ? (double)sliding / n : 0;
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
                "qwen2_moe, qwen3_moe, mixtral, deepseek_v2, deepseek_v3, gpt_oss)",
                origin, type);
        cJSON_Delete(root);
        return HL_EUNSUPPORTED;
    }
    reader r = {root, origin, err, HL_OK};
    hl_model m;
    memset(&m, 0, sizeof m);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "_name_or_path");
    snprintf(m.name, sizeof m.name, "%s", cJSON_IsString(nm) && nm->valuestring[0] ? nm->valuestring : type);
    snprintf(m.source, sizeof m.source, "Hugging Face config %s", origin);
    m.hidden = get_int(&r, "hidden_size", 1, 0);
    m.layers = get_int(&r, "num_hidden_layers", 1, 0);
    m.heads = get_int(&r, "num_attention_heads", 1, 0);
    m.kv_heads = get_int(&r, "num_key_value_heads", 0, m.heads);
    m.head_dim = get_int(&r, "head_dim", 0, m.heads ? m.hidden / m.heads : 0);
    m.vocab = get_int(&r, "vocab_size", 1, 0);
    m.max_position = get_int(&r, "max_position_embeddings", 0, 0);
    m.tied_embeddings = get_bool(&r, "tie_word_embeddings", 0);
    int moe = is(type, "mixtral") || is(type, "qwen2_moe") || is(type, "qwen3_moe") || is(type, "deepseek_v2") ||
              is(type, "deepseek_v3") || is(type, "gpt_oss");
    m.ffn = get_int(&r, "intermediate_size", !moe || is(type, "mixtral") || is(type, "gpt_oss"), 0);
    int bias = get_bool(&r, "attention_bias", 0);
    m.qkv_bias = is(type, "qwen2") || is(type, "qwen2_moe") ? 1 : bias;
    m.o_bias = is(type, "gpt_oss") ? bias : 0;
    if (moe) {
        if (is(type, "mixtral") || is(type, "gpt_oss"))
            m.experts = get_int(&r, "num_local_experts", 1, 0);
        else if (is(type, "deepseek_v2") || is(type, "deepseek_v3"))
            m.experts = get_int(&r, "n_routed_experts", 1, 0);
        else
            m.experts = get_int(&r, "num_experts", 1, 0);
        m.topk = get_int(&r, "num_experts_per_tok", 1, 0);
        if (is(type, "mixtral") || is(type, "gpt_oss"))
            m.expert_ffn = m.ffn;
        else
            m.expert_ffn = get_int(&r, "moe_intermediate_size", 1, 0);
        m.expert_bias = is(type, "gpt_oss");
        if (is(type, "deepseek_v2") || is(type, "deepseek_v3")) {
            m.shared_experts = get_int(&r, "n_shared_experts", 0, 0);
            m.dense_layers = get_int(&r, "first_k_dense_replace", 0, 0);
        } else if (is(type, "qwen2_moe")) {
            int64_t sh = get_int(&r, "shared_expert_intermediate_size", 0, 0);
            m.shared_experts = sh > 0;
            m.shared_ffn = sh;
        }
    }
    if (is(type, "deepseek_v2") || is(type, "deepseek_v3")) {
        m.attn = HL_ATTN_MLA;
        m.q_lora_rank = get_int(&r, "q_lora_rank", 0, 0);
        m.kv_lora_rank = get_int(&r, "kv_lora_rank", 1, 0);
        m.qk_nope_dim = get_int(&r, "qk_nope_head_dim", 1, 0);
        m.qk_rope_dim = get_int(&r, "qk_rope_head_dim", 1, 0);
        m.v_head_dim = get_int(&r, "v_head_dim", 1, 0);
        m.head_dim = m.qk_nope_dim + m.qk_rope_dim;
        m.kv_heads = m.heads;
    }
    if (is(type, "gpt_oss")) {
        m.sliding_window = get_int(&r, "sliding_window", 0, 0);
        m.sliding_fraction = sliding_fraction(&r);
        if (m.sliding_window == 0)
            m.sliding_fraction = 0;
    } else if (is(type, "mistral") || is(type, "mixtral")) {
        m.sliding_window = get_int(&r, "sliding_window", 0, 0);
        m.sliding_fraction = m.sliding_window > 0 ? 1 : 0;
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
