#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

static hl_params params_of(const char *name)
{
    hl_model m;
    hl_err e;
    hl_params p; /* fail_msg does not return, which clang cannot see: zeroed first */
    memset(&p, 0, sizeof p);
    if (hl_model_preset(name, &m, &e) != HL_OK || hl_model_params(&m, &p, &e) != HL_OK)
        fail_msg("%s: %s", name, e.msg);
    return p;
}

/* Qwen1.5-110B worked by hand (hidden h=8192, L=80, H=64, K=8, d=128, f=49152, V=152064):
 *   attention per layer = h*(H+2K)*d + (H+2K)*d (qkv bias) + H*d*h
 *                       = 8192*10240 + 10240 + 8192*8192 = 83,886,080 + 10,240 + 67,108,864 = 151,005,184
 *   FFN per layer       = 3*h*f = 3*8192*49152 = 1,207,959,552
 *   norms               = 2*h*L + h = 1,318,912
 *   embedding + head    = 2*V*h = 2,491,416,576
 *   total = 80*(151,005,184 + 1,207,959,552) + 1,318,912 + 2,491,416,576 = 111,209,914,368 */
static void test_qwen110b_by_hand(void **state)
{
    (void)state;
    hl_params p = params_of("qwen1.5-110b");
    assert_rel(p.total, 111209914368.0, 1e-12, "qwen1.5-110b total (hand)");
    assert_rel(p.active, p.total, 1e-12, "dense: active == total");
}

/* Published totals (model cards / papers); "must agree within 1%". */
static void test_published_totals(void **state)
{
    (void)state;
    assert_rel(params_of("qwen1.5-110b").total, 111.2e9, 0.01, "Qwen1.5-110B 111.2B");
    assert_rel(params_of("llama-3.1-70b").total, 70.6e9, 0.01, "Llama-3.1-70B 70.6B");
    assert_rel(params_of("llama-3.1-405b").total, 405.9e9, 0.01, "Llama-3.1-405B 405.9B");
    assert_rel(params_of("mixtral-8x7b").total, 46.7e9, 0.01, "Mixtral 46.7B total");
    assert_rel(params_of("mixtral-8x7b").active, 12.9e9, 0.01, "Mixtral 12.9B active");
    assert_rel(params_of("deepseek-v3").total, 671e9, 0.01, "DeepSeek-V3 671B total");
    assert_rel(params_of("qwen3-235b-a22b").total, 235.1e9, 0.01, "Qwen3-235B 235.1B total");
    assert_rel(params_of("qwen3-235b-a22b").active, 22.1e9, 0.01, "Qwen3-235B 22.1B active");
    assert_rel(params_of("qwen3-30b-a3b").total, 30.5e9, 0.01, "Qwen3-30B 30.5B total");
}

/* Two published active counts are truncated, not rounded: Qwen writes 22.19B
 * as "22.1B" (test above, +0.4%), so its "3.3B" means [3.3, 3.4) and
 * DeepSeek's "37B" means [37, 38). Our exact counts are 3.353B (+1.6% from
 * 3.3) and 37.55B (+1.5% from 37); each lies inside its truncation interval,
 * which is what these checks assert. Qwen's card also gives 29.9B
 * non-embedding parameters for Qwen3-30B-A3B, checked to 1%. */
static void test_truncated_active_counts(void **state)
{
    (void)state;
    double q = params_of("qwen3-30b-a3b").active;
    assert_true(q >= 3.3e9 && q < 3.4e9);
    double d = params_of("deepseek-v3").active;
    assert_true(d >= 37e9 && d < 38e9);
    hl_params p = params_of("qwen3-30b-a3b");
    assert_rel(p.total - p.embedding - p.lm_head, 29.9e9, 0.01, "Qwen3-30B non-embedding 29.9B");
}

/* DeepSeek-V3 MLA attention of one layer by hand (h=7168, H=128, q_lora=1536,
 * kv_lora=512, nope=128, rope=64, v=128):
 *   q_a 7168*1536 + norm 1536 + q_b 1536*128*192    = 11,010,048 + 1,536 + 37,748,736
 *   kv_a 7168*576 + norm 512 + kv_b 512*128*256     = 4,128,768 + 512 + 16,777,216
 *   o 128*128*7168                                   = 117,440,512
 *   sum = 187,107,328 per layer; 61 layers = 11,413,547,008 */
static void test_mla_attention_by_hand(void **state)
{
    (void)state;
    assert_rel(params_of("deepseek-v3").attention, 11413547008.0, 1e-12, "deepseek-v3 MLA attention");
}

static void test_every_preset_counts(void **state)
{
    (void)state;
    int32_t n = hl_preset_count(HL_PRESET_MODEL);
    assert_true(n >= 11);
    for (int32_t i = 0; i < n; i++) {
        hl_params p = params_of(hl_preset_name(HL_PRESET_MODEL, i));
        assert_true(p.total > 1e9 && p.active > 0 && p.active <= p.total);
    }
}

static void test_validation_messages(void **state)
{
    (void)state;
    hl_model m;
    hl_err e;
    assert_ok(hl_model_preset("llama-3.1-8b", &m, &e), &e);
    m.kv_heads = 7;
    assert_fails_with(hl_model_validate(&m, &e), HL_EINVAL, &e, "kv_heads = 7 does not divide heads = 32");
    assert_ok(hl_model_preset("mixtral-8x7b", &m, &e), &e);
    m.topk = 9;
    assert_fails_with(hl_model_validate(&m, &e), HL_EINVAL, &e, "topk = 9 must be in 1..experts (8)");
    assert_fails_with(hl_field_set_number(hl_model_fields(), &m, "layers", -3, &e), HL_EINVAL, &e,
                      "model field 'layers': -3 is out of range");
    assert_fails_with(hl_field_set_number(hl_model_fields(), &m, "hidden", 10.5, &e), HL_EINVAL, &e,
                      "10.5 is not an integer");
    assert_fails_with(hl_field_set_number(hl_model_fields(), &m, "hiden", 1, &e), HL_EINVAL, &e,
                      "unknown field 'hiden' (did you mean 'hidden'?)");
    assert_fails_with(hl_field_set_string(hl_model_fields(), &m, "attn", "mqa", &e), HL_EINVAL, &e,
                      "'mqa' is not one of gqa, mla");
}

/* MoE layers: layer i (0-based) of [dense_layers, layers) is MoE when (i + 1) % moe_every == 0,
 * counted here layer by layer, against the closed form in the core (e.g. 48 layers, 1 dense,
 * every 2nd: layers 1, 3, ..., 47, 24 of them). */
static void test_moe_layer_count(void **state)
{
    (void)state;
    hl_model m;
    memset(&m, 0, sizeof m);
    m.experts = 8;
    m.layers = 48;
    m.dense_layers = 1;
    m.moe_every = 2;
    assert_int_equal(hl_model_moe_layers(&m), 24);
    for (int64_t L = 1; L <= 40; L++)
        for (int64_t d = 0; d <= L; d++)
            for (int64_t every = 0; every <= 5; every++) {
                m.layers = L;
                m.dense_layers = d;
                m.moe_every = every;
                int64_t step = every > 1 ? every : 1, want = 0;
                for (int64_t i = d; i < L; i++)
                    want += (i + 1) % step == 0;
                assert_int_equal(hl_model_moe_layers(&m), want);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen110b_by_hand),        cmocka_unit_test(test_published_totals),
        cmocka_unit_test(test_truncated_active_counts), cmocka_unit_test(test_mla_attention_by_hand),
        cmocka_unit_test(test_every_preset_counts),     cmocka_unit_test(test_validation_messages),
        cmocka_unit_test(test_moe_layer_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
