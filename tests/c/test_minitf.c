/* The native mini-transformer (core/src/minitf.c) from C: determinism, KV cache
 * = recomputation, sharded = unsharded, and its counters worked out by hand. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

/* hidden 32, 2 layers, 4 heads of 8, 2 KV heads, SwiGLU FFN 64, vocab 64, untied head. */
static hl_model tiny(void)
{
    hl_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    m.hidden = 32;
    m.layers = 2;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 8;
    m.ffn = 64;
    m.vocab = 64;
    m.attn = HL_ATTN_GQA;
    return m;
}

enum { B = 2, P = 5, N = 3, V = 64 };

static void run(hl_minitf *tf, int tp, int ep, int pp, int kv, int32_t *tokens, float *logits, hl_minitf_stats *st)
{
    int32_t prompts[B * P];
    for (int i = 0; i < B * P; i++)
        prompts[i] = (i * 7 + 3) % V;
    hl_minitf_layout lay = {tp, ep, pp};
    hl_err e;
    assert_ok(hl_minitf_generate(tf, &lay, B, prompts, P, N, kv, tokens, logits, st, &e), &e);
}

static void test_minitf_by_hand(void **state)
{
    (void)state;
    hl_model m = tiny();
    hl_err e;
    assert_ok(hl_model_validate(&m, &e), &e);
    hl_minitf *tf = NULL;
    assert_ok(hl_minitf_new(&m, 42, &tf, &e), &e);
    int32_t t1[B * N], t2[B * N], t3[B * N];
    static float l1[B * N * V], l2[B * N * V], l3[B * N * V];
    hl_minitf_stats s1, s2, s3;
    run(tf, 1, 1, 1, 1, t1, l1, &s1);
    /* Weights, FP32 (4 B): embedding 64 x 32 = 2,048; per layer q 32 x 32 + k 32 x 16 + v 32 x 16
     * + o 32 x 32 = 3,072, norms 2 x 32 = 64, SwiGLU 3 x 32 x 64 = 6,144: 9,280 x 2 layers = 18,560;
     * final norm 32; LM head 64 x 32 = 2,048. Total 22,688 parameters = 90,752 B. */
    assert_rel(s1.weight_bytes[0], 90752, 0, "weight bytes, one rank");
    /* KV: P + N - 1 = 7 tokens cached x 2 sequences x 2 layers x (K, V) x 2 KV heads x 8 dims x 4 B = 3,584 B */
    assert_rel(s1.kv_bytes[0], 3584, 0, "KV bytes, one rank");
    assert_int_equal(s1.ranks, 1);
    assert_rel(s1.allreduce_bytes[0], 0, 0, "no collectives on one rank");
    /* the same seed gives the same tokens; recomputation gives the same logits */
    run(tf, 1, 1, 1, 0, t2, l2, &s2);
    assert_memory_equal(t1, t2, sizeof t1);
    for (int i = 0; i < B * N * V; i++)
        assert_rel(l2[i], l1[i], 1e-4, "recompute = KV cache");
    /* TP2: two ranks, each half the attention heads and FFN columns; same tokens */
    run(tf, 2, 1, 1, 1, t3, l3, &s3);
    assert_int_equal(s3.ranks, 2);
    assert_memory_equal(t1, t3, sizeof t1);
    for (int i = 0; i < B * N * V; i++)
        assert_rel(l3[i], l1[i], 1e-4, "tp2 = unsharded");
    /* KV under TP2: one KV head per rank, half of 3,584 B each */
    assert_rel(s3.kv_bytes[0], 1792, 0, "KV bytes per rank at tp2");
    assert_rel(s3.kv_bytes[1], 1792, 0, "KV bytes per rank at tp2");
    assert_true(s3.allreduce_bytes[0] > 0);
    hl_minitf_free(tf);
    hl_minitf_free(NULL); /* safe */
}

/* tiny() with 4 layers, 3 of them gated DeltaNet (linear_fraction 0.75: layers
 * 0-2 linear, layer 3 full), 2 key heads and 4 value heads of width 4, conv 4.
 * Weights per linear layer: norms 64, in_proj_qkvz 32 x (2*8 + 2*16) = 1,536,
 * in_proj_ba 32 x 8 = 256, conv 32 channels x 4 = 128, dt_bias + A_log 8,
 * gated norm 4, out_proj 16 x 32 = 512, SwiGLU 6,144: 8,652. The full layer
 * 9,280 (above). Total 2,048 + 3 x 8,652 + 9,280 + 32 + 2,048 = 39,364 = 157,456 B.
 * KV: the full layer caches 7 tokens x 2 sequences x (K, V) x 2 heads x 8 x 4 B
 * = 1,792 B; the state per sequence per linear layer is 4 x 4 x 4 = 64 plus the
 * conv's last 3 inputs of 32 channels = 96: 160 floats x 3 layers x 2
 * sequences x 4 B = 3,840 B, whatever the length. Total 5,632 B. */
static void test_minitf_linear_attention_by_hand(void **state)
{
    (void)state;
    hl_model m = tiny();
    m.layers = 4;
    m.linear_fraction = 0.75;
    m.linear_k_heads = 2;
    m.linear_v_heads = 4;
    m.linear_k_dim = 4;
    m.linear_v_dim = 4;
    m.linear_conv = 4;
    hl_err e;
    hl_minitf *tf = NULL;
    assert_ok(hl_minitf_new(&m, 42, &tf, &e), &e);
    int32_t t1[B * N], t2[B * N], t3[B * N];
    static float l1[B * N * V], l2[B * N * V], l3[B * N * V];
    hl_minitf_stats s1, s2, s3;
    run(tf, 1, 1, 1, 1, t1, l1, &s1);
    assert_rel(s1.weight_bytes[0], 157456, 0, "weight bytes, one rank");
    assert_rel(s1.kv_bytes[0], 5632, 0, "KV + state bytes, one rank");
    run(tf, 1, 1, 1, 0, t2, l2, &s2); /* the recurrence restarted from position 0 every step */
    assert_memory_equal(t1, t2, sizeof t1);
    for (int i = 0; i < B * N * V; i++)
        assert_rel(l2[i], l1[i], 1e-4, "recompute = cached state");
    run(tf, 2, 1, 1, 1, t3, l3, &s3); /* one key head, two value heads per rank */
    assert_memory_equal(t1, t3, sizeof t1);
    for (int i = 0; i < B * N * V; i++)
        assert_rel(l3[i], l1[i], 1e-4, "tp2 = unsharded");
    /* per rank: the full layer's KV halves (896 B), the state halves (1,920 B) */
    assert_rel(s3.kv_bytes[0], 2816, 0, "KV + state per rank at tp2");
    hl_minitf_free(tf);
}

static void test_minitf_rejects(void **state)
{
    (void)state;
    hl_model m = tiny();
    m.attn = HL_ATTN_MLA;
    hl_minitf *tf = NULL;
    hl_err e;
    assert_true(hl_minitf_new(&m, 1, &tf, &e) != HL_OK);
    assert_null(tf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minitf_by_hand),
        cmocka_unit_test(test_minitf_linear_attention_by_hand),
        cmocka_unit_test(test_minitf_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
