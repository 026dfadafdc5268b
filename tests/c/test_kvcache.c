#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

static hl_model model(const char *name)
{
    hl_model m;
    hl_err e;
    if (hl_model_preset(name, &m, &e) != HL_OK)
        fail_msg("%s", e.msg);
    return m;
}

/* Llama-3.1-70B BF16: 2 (K,V) * 80 layers * 8 KV heads * 128 * 2 B = 327,680 B/token.
 * DeepSeek-V3 BF16 (MLA): (512 + 64) * 61 layers * 2 B = 70,272 B/token. */
static void test_bytes_per_token(void **state)
{
    (void)state;
    hl_model l = model("llama-3.1-70b"), d = model("deepseek-v3");
    assert_rel(hl_kv_bytes_per_token(&l, HL_BF16), 327680, 1e-12, "llama-3.1-70b bf16");
    assert_rel(hl_kv_bytes_per_token(&d, HL_BF16), 70272, 1e-12, "deepseek-v3 bf16");
    assert_rel(hl_kv_bytes_per_token(&l, HL_FP8), 163840, 1e-12, "llama-3.1-70b fp8");
}

/* TP split: 8 KV heads over TP4 = 2 heads per GPU: 2*2*128*2 B = 1,024 B per
 * token per layer; TP16 > 8 heads: 1 head each (replicated) = 512 B. MLA: the
 * 576-wide latent stays whole on every rank: 1,152 B at BF16. */
static void test_per_gpu_split(void **state)
{
    (void)state;
    hl_model l = model("llama-3.1-70b"), d = model("deepseek-v3");
    assert_rel(hl_kv_token_layer_bytes_per_gpu(&l, HL_BF16, 4), 1024, 1e-12, "tp4");
    assert_rel(hl_kv_token_layer_bytes_per_gpu(&l, HL_BF16, 16), 512, 1e-12, "tp16 replicated");
    assert_rel(hl_kv_heads_per_gpu(&l, 16), 1, 1e-12, "one head when tp > kv_heads");
    assert_rel(hl_kv_token_layer_bytes_per_gpu(&d, HL_BF16, 8), 1152, 1e-12, "mla latent whole");
}

/* gpt-oss-120b: 36 layers, half with a 128-token window. Per layer per token:
 * 2*8*64*2 B = 2,048 B. At 1,000 tokens: 18 full layers * 1000 + 18 * 128 =
 * 20,304 layer-tokens * 2,048 B = 41,582,592 B. */
static void test_sliding_window_sequence(void **state)
{
    (void)state;
    hl_model g = model("gpt-oss-120b");
    assert_rel(hl_kv_bytes_sequence(&g, HL_BF16, 1000), 41582592, 1e-12, "gpt-oss sliding");
    assert_rel(hl_kv_bytes_sequence(&g, HL_BF16, 100), 100 * 36 * 2048.0, 1e-12, "inside the window");
}

/* DeepSeek-V3.2-Exp (DSA): every one of its 61 layers caches MLA's latent, 512 + 64, and the
 * indexer's key, index_dim 128: 704 elements a token a layer. At 1,000 tokens in BF16:
 * 704 * 61 * 1000 * 2 B = 85,888,000 B, of which the indexer's 128 * 61 * 1000 * 2 =
 * 15,616,000 B; in FP8 half of each (the memory model keeps the index part whole on every
 * rank: memory.c). */
static void test_indexer_keys_sequence(void **state)
{
    (void)state;
    hl_model d = model("deepseek-v3.2-exp");
    assert_rel(hl_kv_bytes_sequence(&d, HL_BF16, 1000), 85888000, 1e-12, "dsa sequence bf16");
    assert_rel(hl_kv_index_bytes_sequence(&d, HL_BF16, 1000), 15616000, 1e-12, "dsa index keys bf16");
    assert_rel(hl_kv_index_bytes_sequence(&d, HL_FP8, 1000), 7808000, 1e-12, "dsa index keys fp8");
    hl_model v = model("deepseek-v3"); /* no indexer */
    assert_rel(hl_kv_index_bytes_sequence(&v, HL_BF16, 1000), 0, 0, "no indexer");
}

/* 80 GB at util 0.9 = 72 GB; weights 40 GB, workspace 2 GB: budget 30 GB.
 * 163,840 B/token (Llama-70B FP8 on one GPU): 183,105 tokens (floor).
 * Context 2,000: 91 sequences. Paged with 16-token blocks: block = 2,621,440 B,
 * 11,444 blocks; 125 blocks per sequence; 91 sequences; fragmentation 0. With
 * context 2,001: 126 blocks/seq, 90 sequences, waste 1 - 2001/2016 = 0.00744. */
static void test_capacity_by_hand(void **state)
{
    (void)state;
    hl_kv_capacity_in in = {80e9, 0.9, 40e9, 2e9, 163840, 2000, 0, 0};
    hl_kv_capacity c;
    hl_err e;
    assert_ok(hl_kv_capacity_compute(&in, &c, &e), &e);
    assert_rel(c.kv_budget_bytes, 30e9, 1e-12, "budget");
    assert_rel(c.max_tokens, 183105, 1e-12, "tokens");
    assert_rel(c.max_batch, 91, 1e-12, "batch");
    in.block_tokens = 16;
    assert_ok(hl_kv_capacity_compute(&in, &c, &e), &e);
    assert_rel(c.blocks_total, 11444, 1e-12, "blocks");
    assert_rel(c.max_batch, 91, 1e-12, "paged batch");
    assert_rel(c.fragmentation, 0, 1e-12, "no waste");
    in.context = 2001;
    assert_ok(hl_kv_capacity_compute(&in, &c, &e), &e);
    assert_rel(c.blocks_per_seq, 126, 1e-12, "blocks per seq");
    assert_rel(c.max_batch, 90, 1e-12, "paged batch 2001");
    assert_rel(c.fragmentation, 1 - 2001.0 / 2016.0, 1e-12, "waste");
}

static void test_capacity_does_not_fit(void **state)
{
    (void)state;
    hl_kv_capacity_in in = {80e9, 0.9, 75e9, 1e9, 1000, 100, 0, 0};
    hl_kv_capacity c;
    hl_err e;
    assert_fails_with(hl_kv_capacity_compute(&in, &c, &e), HL_ENOFIT, &e, "by 4.00 GB");
    in.mem_util = 1.5;
    assert_fails_with(hl_kv_capacity_compute(&in, &c, &e), HL_EINVAL, &e,
                      "kv capacity field 'mem_util': 1.5 is not allowed (a fraction in (0, 1])");
}

/* TensorRT-LLM's rule (of_free): the cache gets mem_util of what weights and workspace leave
 * (KVCacheManager::calculateMaxNumBlocks: freeMemFraction x free bytes). The same GPU as
 * test_capacity_by_hand: 0.9 x (80 - 40 - 2) GB = 34.2 GB (the HBM rule gave 30 GB);
 * 34.2e9 / 163,840 = 208,740.23 -> 208,740 tokens, 104 sequences of 2,000; 16-token blocks of
 * 2,621,440 B: floor(13,046.26) = 13,046 blocks, 125 a sequence, 104 sequences.
 * Weights 75 + workspace 1 GB, which overflow 90% of HBM by 4 GB: 0.9 x 4 GB = 3.6 GB of KV;
 * weights 79.5 + 1 GB overflow HBM itself by 0.50 GB. */
static void test_capacity_of_free(void **state)
{
    (void)state;
    hl_kv_capacity_in in = {80e9, 0.9, 40e9, 2e9, 163840, 2000, 0, 1};
    hl_kv_capacity c;
    hl_err e;
    assert_ok(hl_kv_capacity_compute(&in, &c, &e), &e);
    assert_rel(c.kv_budget_bytes, 34.2e9, 1e-12, "budget of free");
    assert_rel(c.max_tokens, 208740, 1e-12, "tokens of free");
    assert_rel(c.max_batch, 104, 1e-12, "batch of free");
    in.block_tokens = 16;
    assert_ok(hl_kv_capacity_compute(&in, &c, &e), &e);
    assert_rel(c.blocks_total, 13046, 1e-12, "blocks of free");
    assert_rel(c.max_batch, 104, 1e-12, "paged batch of free");
    assert_rel(hl_kv_usable_bytes(80e9, 0.9, 1, 40e9, 2e9), 42e9 + 34.2e9, 1e-12, "usable of free");
    assert_rel(hl_kv_usable_bytes(80e9, 0.9, 0, 40e9, 2e9), 72e9, 1e-12, "usable of hbm");
    /* weights past the device leave nothing free: usable is the device, not 0.1 x 90 + 72 = 81 GB */
    assert_rel(hl_kv_usable_bytes(80e9, 0.9, 1, 88e9, 2e9), 80e9, 1e-12, "usable with nothing free");
    hl_kv_capacity_in tight = {80e9, 0.9, 75e9, 1e9, 1000, 100, 0, 1};
    assert_ok(hl_kv_capacity_compute(&tight, &c, &e), &e);
    assert_rel(c.kv_budget_bytes, 3.6e9, 1e-12, "budget past 90% of HBM");
    tight.weights_bytes = 79.5e9;
    assert_fails_with(hl_kv_capacity_compute(&tight, &c, &e), HL_ENOFIT, &e, "exceed HBM (80.00 GB) by 0.50 GB");
    tight.of_free = 2;
    assert_fails_with(hl_kv_capacity_compute(&tight, &c, &e), HL_EINVAL, &e,
                      "kv capacity field 'of_free': 2 is not allowed (0 or 1)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_per_token),         cmocka_unit_test(test_per_gpu_split),
        cmocka_unit_test(test_sliding_window_sequence), cmocka_unit_test(test_capacity_by_hand),
        cmocka_unit_test(test_capacity_does_not_fit),   cmocka_unit_test(test_capacity_of_free),
        cmocka_unit_test(test_indexer_keys_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
