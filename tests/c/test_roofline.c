#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "powfix_int.h"
#include "powpos_int.h"
#include "roofline_int.h"

/* A round-number GPU: 1000 TFLOP/s BF16, 2 TB/s, efficiencies 0.5 (GEMM),
 * 0.25 (attention), 0.8 (memory), no kernel latency. */
static hl_gpu toy_gpu(void)
{
    hl_gpu g;
    memset(&g, 0, sizeof g);
    strcpy(g.name, "toy");
    g.peak_flops[HL_BF16] = 1000e12;
    g.hbm_bytes = 80e9;
    g.hbm_bw = 2e12;
    g.eff_gemm = 0.5;
    g.eff_attn = 0.25;
    g.eff_mem = 0.8;
    return g;
}

/* GEMM 4096 x 4096 x 4096 BF16: 2*4096^3 = 137,438,953,472 FLOP at 500 TFLOP/s
 * = 274.877906944 us. Bytes 3 * 4096^2 * 2 = 100,663,296 at 1.6 TB/s = 62.91456 us.
 * Compute bound; intensity 1365.33 FLOP/B; ridge 500e12/1.6e12 = 312.5. */
static void test_gemm_compute_bound(void **state)
{
    (void)state;
    hl_gpu g = toy_gpu();
    hl_op op;
    hl_op_time t;
    hl_err e;
    hl_op_gemm(&op, "g", 4096, 4096, 4096, 2, 2, 2, HL_BF16);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 274.877906944e-6, 1e-12, "compute");
    assert_rel(t.memory_s, 62.91456e-6, 1e-12, "memory");
    assert_rel(t.time_s, t.compute_s, 1e-12, "time = max");
    assert_rel(t.intensity, 137438953472.0 / 100663296.0, 1e-12, "intensity");
    assert_rel(t.ridge, 312.5, 1e-12, "ridge");
    assert_int_equal(t.bound, HL_BOUND_COMPUTE);
}

/* Decode GEMV-like GEMM m=1, n=k=8192, FP8 weights (1 B), BF16 activations:
 * bytes = 8192*2 + 8192*8192*1 + 8192*2 = 67,141,632 -> 41.96352 us at 1.6 TB/s;
 * FLOP 2*8192^2 = 134,217,728 -> 0.268435456 us. Memory bound. Adding a kernel
 * latency of 3 us gives 44.96352 us. */
static void test_gemv_memory_bound_and_latency(void **state)
{
    (void)state;
    hl_gpu g = toy_gpu();
    hl_op op;
    hl_op_time t;
    hl_err e;
    hl_op_gemm(&op, "gemv", 1, 8192, 8192, 2, 1, 2, HL_BF16);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.memory_s, 41.96352e-6, 1e-12, "memory");
    assert_int_equal(t.bound, HL_BOUND_MEMORY);
    g.kernel_latency = 3e-6;
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.time_s, 44.96352e-6, 1e-12, "with kernel latency");
}

/* The shape-aware GEMM (docs/MODEL.md section 3), by hand. Peak 1e15 BF16 / 2e15 FP8 FLOP/s,
 * 1e12 B/s, eff_gemm = eff_mem = 0.5, kernel_latency 1 us, tiles of 64 rows, blend p = 2, main
 * loop 1 ns per element of K. GEMM m = 32, n = 1024, k = 2048:
 * BF16: FLOP 2*32*1024*2048 = 134,217,728, padded x64/32 = 2 -> compute 0.536870912 us; bytes
 * 32*2048*2 + 2048*1024*2 + 32*1024*2 = 4,390,912 -> memory 8.781824 us; loop 2.048 us;
 * sqrt(0.536870912^2 + 8.781824^2 + 2.048^2) = 9.033436065 us, + 1 us = 10.033436065 us.
 * FP8 (eff_gemm_fp8 0.4, eff_mem_fp8 0.25, gemm_latency_fp8 2 us, quant_bytes_fp8 3, 1-B weights):
 * compute 268,435,456 / 0.8e15 = 0.33554432 us; bytes 131,072 + 2,097,152 + 65,536 + 3*32*2048 =
 * 2,490,368 -> 9.961472 us; sqrt(0.33554432^2 + 9.961472^2 + 2.048^2) = 10.175353477 us, + 1 + 2 us. */
static void test_shape_aware_gemm_by_hand(void **state)
{
    (void)state;
    hl_gpu g = toy_gpu();
    g.peak_flops[HL_BF16] = 1e15;
    g.peak_flops[HL_FP8] = 2e15;
    g.hbm_bw = 1e12;
    g.eff_mem = 0.5;
    g.kernel_latency = 1e-6;
    g.gemm_tile_rows = 64;
    g.gemm_blend = 2;
    g.gemm_k_latency = 1e-9;
    hl_op op;
    hl_op_time t;
    hl_err e;
    hl_op_gemm(&op, "g", 32, 1024, 2048, 2, 2, 2, HL_BF16);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 0.536870912e-6, 1e-12, "compute (padded to 64 rows)");
    assert_rel(t.memory_s, 8.781824e-6, 1e-12, "memory");
    assert_rel(t.time_s, 10.033436065148617e-6, 1e-9, "blend + kernel latency");
    g.eff_gemm_fp8 = 0.4;
    g.eff_mem_fp8 = 0.25;
    g.gemm_latency_fp8 = 2e-6;
    g.quant_bytes_fp8 = 3;
    hl_op_gemm(&op, "g8", 32, 1024, 2048, 2, 1, 2, HL_FP8);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 0.33554432e-6, 1e-12, "fp8 compute");
    assert_rel(t.memory_s, 9.961472e-6, 1e-12, "fp8 memory with the activation quantisation");
    assert_rel(t.time_s, 13.175353477765196e-6, 1e-9, "fp8 time");
}

/* A dense tile's fixed part (gemm_k0, gemm_k0_fp8; docs/MODEL.md section 3), by hand on the toy GPU:
 * 4096^3 BF16 at eff 0.5 is 274.877906944 us (test_gemm_compute_bound); with gemm_k0 = 1024 the
 * efficiency is 0.5 x 4096 / 5120 = 0.4, so 343.59738368 us. FP8 (peak 2000 TFLOP/s, eff_gemm_fp8 0.5)
 * with gemm_k0_fp8 0 falls back to gemm_k0: 137.438953472 us x 5120 / 4096 = 171.79869184 us; with
 * gemm_k0_fp8 = 4096 the efficiency halves: 274.877906944 us. Grouped GEMMs keep their own k0 (none
 * here: 0 = off), so a grouped GEMM of the same shape is not slowed by gemm_k0. */
static void test_dense_gemm_k0_by_hand(void **state)
{
    (void)state;
    hl_gpu g = toy_gpu();
    g.peak_flops[HL_FP8] = 2000e12;
    g.eff_gemm_fp8 = 0.5;
    g.gemm_k0 = 1024;
    hl_op op;
    hl_op_time t;
    hl_err e;
    hl_op_gemm(&op, "g", 4096, 4096, 4096, 2, 2, 2, HL_BF16);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 343.59738368e-6, 1e-12, "bf16 with gemm_k0");
    hl_op_gemm(&op, "g8", 4096, 4096, 4096, 2, 1, 2, HL_FP8);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 171.79869184e-6, 1e-12, "fp8 falls back to gemm_k0");
    g.gemm_k0_fp8 = 4096;
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 274.877906944e-6, 1e-12, "fp8 with its own gemm_k0_fp8");
    hl_op_gemm(&op, "g", 4096, 4096, 4096, 2, 2, 2, HL_BF16);
    op.kind = HL_OP_GROUPED_GEMM;
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(t.compute_s, 274.877906944e-6, 1e-12, "grouped GEMMs: not gemm_k0");
}

/* The decode the two tests below work by hand: toy_gpu with attn_latency 2 us, attn_unit_s 0.1 us
 * and eff_mem_attn 0.5; 4 sequences, 1 new token after 999 cached, 8 heads / 2 KV heads of 128, BF16. */
static hl_gpu toy_decode_attention(hl_op *op, hl_attn_shape *shape)
{
    hl_gpu g = toy_gpu();
    g.attn_latency = 2e-6;
    g.attn_unit_s = 0.1e-6;
    g.eff_mem_attn = 0.5;
    *shape = (hl_attn_shape){4, 1, 999, 8, 2, 128, 128, 2 * 2 * 128 * 2, 2, 0};
    hl_op_attention(op, "a", shape, HL_BF16);
    return g;
}

/* Attention's fixed part, by hand: attn_latency 2 us + 4 sequences x 2 KV heads x 0.1 us = 2.8 us on
 * both sides. Decode of 4 sequences, 1 new token after 999 cached, 8 heads / 2 KV heads of 128, BF16:
 * bytes read 4*(8*128*2 + 1000*2*2*128*2) = 4,104,192 (the KV of 2 heads), written 4*8*128*2 = 8,192;
 * = 4,112,384 B at 2e12 x eff_mem_attn 0.5 = 4.112384 us, + 2.8 us. FLOP 2*4*8*1000*256 = 16,384,000 at 1e15 x 0.25
 * = 0.065536 us, + 2.8 us. Prefill of 100 tokens with tiles of 32 rows: 4 tiles compute
 * 32*(32*4*5/2) = 10,240 pairs for 5,050 useful (pad 2.0277...), + 4 x 8 x 4 tiles x 0.01 us and 1 us. */
static void test_attention_fixed_parts_by_hand(void **state)
{
    (void)state;
    hl_op op;
    hl_attn_shape s;
    hl_gpu g = toy_decode_attention(&op, &s);
    hl_op_time t;
    hl_err e;
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    assert_rel(op.bytes_read + op.bytes_written, 4104192 + 8192, 1e-12, "bytes");
    assert_rel(t.memory_s, 4.112384e-6 + 2.8e-6, 1e-12, "memory + fixed part");
    assert_rel(t.compute_s, 0.065536e-6 + 2.8e-6, 1e-12, "compute + fixed part");
    g.attn_tile_rows = 32;
    g.attn_tile_s = 0.01e-6;
    g.attn_prefill_latency = 1e-6;
    hl_attn_shape p = {4, 100, 0, 8, 2, 128, 128, 2 * 2 * 128 * 2, 2, 0};
    hl_op_attention(&op, "p", &p, HL_BF16);
    assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
    double flops = 2.0 * 4 * 8 * 5050 * 256, part = 2e-6 + 8 * 0.1e-6 + 4 * 8 * 4 * 0.01e-6 + 1e-6;
    assert_rel(op.flops, flops, 1e-12, "useful prefill FLOPs");
    assert_rel(t.compute_s, flops * (10240.0 / 5050.0) / (1000e12 * 0.25) + part, 1e-12, "tiled prefill");
}

/* Which CTAs a decode kernel runs, and how many per SM (MODEL.md 3), by hand on the decode above
 * (4 sequences, 8 heads / 2 KV heads, 999 cached; memory 4.112384 us, attn_latency 2 us, attn_unit_s
 * 0.1 us): per KV head, 1 resident (the fitted kernels): 4 x 2 x 0.1 = 0.8 us; per query head (MMHA's
 * grid): 4 x 8 x 0.1 = 3.2 us; per query head, 2 resident: 3.2 / 2 = 1.6 us; per KV head, 4 resident:
 * 0.8 / 4 = 0.2 us. */
static void test_attention_cta_grid_by_hand(void **state)
{
    (void)state;
    hl_op op;
    hl_attn_shape s;
    hl_gpu g = toy_decode_attention(&op, &s);
    hl_op_time t;
    hl_err e;
    const double m = 4.112384e-6 + 2e-6;
    const struct {
        double qheads, ctas, units_s;
    } want[] = {{0, 0, 0.8e-6}, {0, 1, 0.8e-6}, {1, 0, 3.2e-6}, {1, 2, 1.6e-6}, {0, 4, 0.2e-6}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        g.attn_unit_qheads = want[i].qheads;
        g.attn_ctas_per_sm = want[i].ctas;
        assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
        assert_rel(t.memory_s, m + want[i].units_s, 1e-12, "memory + units of the CTA grid");
    }
    /* the decode sum's per-context form (hl_attn_decode_init) takes the same units */
    hl_attn_decode d;
    hl_attn_decode_init(&d, &s, HL_BF16, &g);
    assert_true(d.ok);
    assert_rel(d.part, 2e-6 + 0.2e-6, 1e-12, "decode part: KV-head units / 4");
}

/* Causal pairs: prefill of 4 tokens from empty = 1+2+3+4 = 10; 2 tokens after
 * 3 cached = 4+5 = 9; with a window of 3 over 5 new tokens: 1+2+3+3+3 = 12. */
static void test_attention_pairs(void **state)
{
    (void)state;
    assert_rel(hl_attn_pairs(4, 0, 0), 10, 1e-12, "prefill 4");
    assert_rel(hl_attn_pairs(2, 3, 0), 9, 1e-12, "2 after 3");
    assert_rel(hl_attn_pairs(5, 0, 3), 12, 1e-12, "window 3");
    assert_rel(hl_attn_pairs(1, 999, 128), 128, 1e-12, "decode in window");
}

/* GQA decode reads KV heads, not query heads. Llama-3.1-70B-like layer on one
 * GPU: 64 q heads, 8 KV heads, d=128, batch 16, context 4096 (+1 new), BF16.
 * KV per token per layer = 2*8*128*2 = 4,096 B. Reads = 16*(1*64*128*2 +
 * 4097*4096) = 16*(16,384 + 16,781,312) = 268,763,136 B. Reading per query head
 * instead would be 8x larger for the cache term. FLOP = 2*16*64*4097*(128+128). */
static void test_gqa_decode_reads_kv_heads(void **state)
{
    (void)state;
    hl_attn_shape s = {16, 1, 4096, 64, 8, 128, 128, 4096, 2, 0};
    hl_op op;
    hl_op_attention(&op, "attn", &s, HL_BF16);
    assert_rel(op.bytes_read, 268763136.0, 1e-12, "kv heads read");
    assert_rel(op.flops, 2.0 * 16 * 64 * 4097 * 256, 1e-12, "flops");
    assert_rel(op.bytes_written, 16.0 * 64 * 128 * 2, 1e-12, "out");
}

static void test_unsupported_precision(void **state)
{
    (void)state;
    hl_gpu g;
    hl_err e;
    assert_ok(hl_gpu_preset("H100-SXM", &g, &e), &e);
    hl_op op;
    hl_op_time t;
    hl_op_gemm(&op, "g", 64, 64, 64, 0.5, 0.5, 0.5, HL_FP4);
    assert_fails_with(hl_op_time_on(&op, &g, &t, &e), HL_EUNSUPPORTED, &e, "has no fp4 tensor support");
}

/* The toy GPU with a B200-like blended decode kernel (attn_latency, attn_unit_s, eff_mem_attn). */
static hl_gpu blended_gpu(void)
{
    hl_gpu g = toy_gpu();
    g.peak_flops[HL_FP8] = 2e15;
    g.attn_latency = 4.78e-6;
    g.attn_unit_s = 8.228e-9;
    g.eff_mem_attn = 0.8823;
    return g;
}

/* A seeded one-row attention shape from the bits of r (batch 1..max_batch, 1..8 KV heads,
 * 1..8 query heads each, head dim 64..544, 1 or 2 B KV), with g's blend power and attention
 * efficiency and the math precision drawn too. */
static hl_attn_shape seeded_decode_shape(uint64_t r, int max_batch, double window, hl_gpu *g, hl_precision *math)
{
    static const double ps[] = {1.5, 2.7, 16, 20};
    g->attn_blend = ps[r % 4];
    double kvh = (double)(1 + (r >> 2) % 8), heads = kvh * (double)(1 + (r >> 5) % 8);
    double dim = (double)(64 + 32 * ((r >> 8) % 16)), kvb = (double)(1 + (r >> 12) % 2);
    double batch = (double)(1 + (r >> 13) % (uint64_t)max_batch);
    *math = (r >> 24) % 2 ? HL_FP8 : HL_BF16;
    g->eff_attn = (r >> 25) % 2 ? 0.25 : 0.005; /* the second: compute-bound at 8 query heads per KV head */
    hl_attn_shape sh = {batch, 1, 0, heads, kvh, dim, dim, 2 * kvh * dim * kvb, 2, window};
    return sh;
}

/* hl_attn_stream_at (sim.c's blended decode sums) against hl_op_time_on on hl_op_attention of
 * the same shape: wherever it answers, the same bits as max(compute_s, memory_s); it must answer
 * far past the knee (KV stream >> units) and decline near it, where the blend term is not lost
 * (there attn_latency + m differs from the full time, which the second check shows). Seeded
 * shapes: batch 1-512, 1-64 query heads over 1-8 KV heads, head dims 64-576, KV 1-2 B, windows,
 * p in {1.5, 2.7, 16, 20}, contexts 1 .. 4e6 log-spaced, some kernels compute-bound. */
static void test_attn_stream_matches_full_time(void **state)
{
    (void)state;
    hl_gpu g = blended_gpu();
    g.kernel_latency = 2e-6;
    uint64_t x = 12345;
    int fast = 0, slow = 0, differs = 0;
    for (int n = 0; n < 4000; n++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = x >> 11;
        hl_precision math;
        hl_attn_shape sh = seeded_decode_shape(r, 512, (r >> 22) % 4 == 0 ? 4096 : 0, &g, &math);
        hl_attn_stream a;
        hl_attn_stream_init(&a, &sh, math, &g);
        assert_true(a.ok);
        for (int k = 0; k < 12; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            sh.context = floor(pow(4e6, (double)((x >> 20) % 1000) / 1000.0));
            hl_op op;
            hl_op_time t;
            hl_err e;
            hl_op_attention(&op, "attention", &sh, math);
            assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
            double full = fmax(t.compute_s, t.memory_s), got = -1;
            if (hl_attn_stream_at(&a, sh.context, &got)) {
                fast++;
                if (memcmp(&got, &full, sizeof got) != 0)
                    fail_msg("context %.17g p %g: stream %.17g, full %.17g", sh.context, g.attn_blend, got, full);
            } else {
                slow++;
                double m = (op.bytes_read + op.bytes_written) / (g.hbm_bw * g.eff_mem_attn);
                differs += g.attn_latency + m != full;
            }
        }
    }
    assert_true(fast > 5000 && slow > 5000);
    assert_true(differs > 5000); /* declined where the shortcut would have been wrong */
    /* not a blended kernel, or more than one query row: never answers */
    g.attn_blend = 1;
    hl_attn_shape sh = {1, 1, 1e6, 8, 1, 128, 128, 256, 2, 0};
    hl_attn_stream a;
    double t;
    hl_attn_stream_init(&a, &sh, HL_BF16, &g);
    assert_false(hl_attn_stream_at(&a, 1e6, &t));
    g.attn_blend = 16;
    sh.new_tokens = 2;
    hl_attn_stream_init(&a, &sh, HL_BF16, &g);
    assert_false(hl_attn_stream_at(&a, 1e6, &t));
}

/* hl_attn_stream_mem_side says "memory side above the compute line" only when it is: on seeded
 * blended decode shapes (knee region included), with the steps' compute_s and memory_s from
 * hl_op_time_on, the line c0 + (c1 - c0) i at whole i up to 1e6; when it answers 1 for the
 * memory line, that line is >= the compute line, and it never answers 1 for a value below the
 * compute line (probes down to 2^-52 under it: a bound without 2^(1/p), or a smaller margin,
 * fails them in the knee, where the blend is up to 2^(1/p) x its larger term). */
static void test_attn_stream_mem_side(void **state)
{
    (void)state;
    hl_gpu g = blended_gpu();
    uint64_t x = 777;
    int decided = 0, undecided = 0, probes = 0;
    for (int n = 0; n < 3000; n++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = x >> 11;
        hl_precision math;
        hl_attn_shape sh = seeded_decode_shape(r, 64, 0, &g, &math);
        hl_attn_stream a;
        hl_attn_stream_init(&a, &sh, math, &g);
        assert_true(a.ok);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double ctx0 = floor(pow(1e6, (double)((x >> 20) % 1000) / 1000.0));
        double i = floor(pow(1e6, (double)((x >> 40) % 1000) / 1000.0)) - 1; /* 0 .. 1e6 - 1 */
        double c[2], m[2], f[2]; /* f: the steps' flops, which the caller hands on */
        for (int k = 0; k < 2; k++) {
            hl_op op;
            hl_op_time t;
            hl_err e;
            sh.context = ctx0 + k;
            hl_op_attention(&op, "attention", &sh, math);
            assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
            f[k] = op.flops;
            c[k] = t.compute_s;
            m[k] = t.memory_s;
        }
        double cline = c[0] + (c[1] - c[0]) * i, mline = m[0] + (m[1] - m[0]) * i;
        if (hl_attn_stream_mem_side(&a, f, ctx0, 1, i, mline)) {
            decided++;
            if (!(mline >= cline))
                fail_msg("p %g ctx %g i %g: memory line %.17g below compute line %.17g", g.attn_blend, ctx0, i, mline,
                         cline);
        } else {
            undecided++;
        }
        for (int k = 1; k <= 52; k++) {
            double below = cline * (1 - ldexp(1, -k));
            probes++;
            if (hl_attn_stream_mem_side(&a, f, ctx0, 1, i, below))
                fail_msg("p %g ctx %g i %g: says %.17g is above the compute line %.17g", g.attn_blend, ctx0, i, below,
                         cline);
        }
    }
    assert_true(decided > 500 && undecided > 500);
    assert_int_equal(probes, 3000 * 52);
    /* not a blended kernel: never answers */
    g.attn_blend = 1;
    hl_attn_shape sh = {1, 1, 1e6, 8, 1, 128, 128, 256, 2, 0};
    hl_attn_stream a;
    hl_attn_stream_init(&a, &sh, HL_BF16, &g);
    double f[2] = {1, 1};
    assert_false(hl_attn_stream_mem_side(&a, f, 1e6, 1, 10, 1));
}

/* The GEMM blend (a^p + b^p + c^p)^(1/p) as roofline.c writes it without its shortcut for
 * vanishing terms, with the power `pw`: hl_pow_pos gives the reference the shortcut must equal
 * bit for bit, libm pow the one the result must stay within 1e-14 of. */
static double blend_by(double (*pw)(double, double), double a, double b, double c, double p)
{
    double hi = fmax(a, fmax(b, c));
    if (p <= 0 || hi <= 0)
        return hi;
    double ta = a == hi ? 1 : a == 0 ? 0 : pw(a / hi, p);
    double tb = b == hi ? 1 : b == 0 ? 0 : pw(b / hi, p);
    double tc = c == hi ? 1 : c == 0 ? 0 : pw(c / hi, p);
    return hi * pw(ta + tb + tc, 1 / p);
}

/* The same for 1 <= p <= 4, where roofline.c takes the powers from powfix.c's tables (the terms'
 * for p, the root's for 1/p). */
static double blend_by_tables(double a, double b, double c, double p)
{
    double hi = fmax(a, fmax(b, c));
    hl_powfix_pair *f = hl_powfix_of(p);
    assert_non_null(f);
    double ta = a == hi ? 1 : a == 0 ? 0 : hl_powfix(&f->pow, a / hi);
    double tb = b == hi ? 1 : b == 0 ? 0 : hl_powfix(&f->pow, b / hi);
    double tc = c == hi ? 1 : c == 0 ? 0 : hl_powfix(&f->pow, c / hi);
    return hi * hl_powfix(&f->root, ta + tb + tc);
}

/* hl_op_time_on's GEMM time (no fixed latencies: time = blend(compute, memory, K loop)) equals
 * blend_by on seeded shapes from one-row GEMVs (memory dwarfs the rest) to huge GEMMs
 * (compute does), p from 1 to 40; many of them take the shortcut (a term ratio whose
 * pow(r, floor(p)) is under 2^-55). */
static void test_gemm_blend_shortcut_same_bits(void **state)
{
    (void)state;
    hl_gpu g = toy_gpu();
    g.gemm_k_latency = 1e-12;
    const double ps[] = {1, 1.2, 1.702, 2.435, 16, 40};
    uint64_t x = 987654321;
    int tiny = 0;
    for (int n = 0; n < 20000; n++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = x >> 11;
        g.gemm_blend = ps[r % 6];
        double m = pow(2, (double)((r >> 3) % 24)), nn = pow(2, (double)((r >> 8) % 16)),
               k = pow(2, (double)((r >> 12) % 16));
        hl_op op;
        hl_op_time t;
        hl_err e;
        hl_op_gemm(&op, "g", m, nn, k, 2, 2, 2, HL_BF16);
        assert_ok(hl_op_time_on(&op, &g, &t, &e), &e);
        double loop = g.gemm_k_latency * op.k;
        double want = g.gemm_blend <= 4 ? blend_by_tables(t.compute_s, t.memory_s, loop, g.gemm_blend)
                                        : blend_by(hl_pow_pos, t.compute_s, t.memory_s, loop, g.gemm_blend);
        if (memcmp(&want, &t.time_s, sizeof want) != 0)
            fail_msg("m %g n %g k %g p %g: %.17g, by the powers %.17g", m, nn, k, g.gemm_blend, t.time_s, want);
        double libm = blend_by(pow, t.compute_s, t.memory_s, loop, g.gemm_blend);
        if (!(fabs(t.time_s - libm) <= 1e-14 * libm))
            fail_msg("m %g n %g k %g p %g: %.17g, by libm pow %.17g", m, nn, k, g.gemm_blend, t.time_s, libm);
        double hi = fmax(t.compute_s, fmax(t.memory_s, loop));
        double mid = t.compute_s + t.memory_s + loop - hi - fmin(t.compute_s, fmin(t.memory_s, loop));
        tiny += pow(mid / hi, floor(g.gemm_blend)) < 0x1p-56; /* so the smallest too */
    }
    assert_true(tiny > 1000);
}

/* hl_pow_pos against libm pow: its tables recomputed from their definitions (powpos.c), then
 * seeded x from 2^-60 to 2^60 (and s in [1, 3], the blends' sums) with p from 0.05 to 40
 * within the bound (2 |p ln x| + 4) 2^-52 of the result; x = 1 exactly 1; outside the tables'
 * range (0, subnormal, inf, p ln x past 707) exactly libm pow. */
static void test_pow_pos_against_libm(void **state)
{
    (void)state;
    for (int i = 0; i < 128; i++) {
        double c = 1 + (i + 0.5) / 128;
        assert_true(hl_powpos_invc[i] == 1 / c);
        assert_true(hl_powpos_logc[i] == log(i < 48 ? c : c / 2));
    }
    for (int j = 0; j < 64; j++)
        assert_true(hl_powpos_t2[j] == exp2(j / 64.0));
    uint64_t x = 123456789;
    double worst = 0; /* the largest error seen, in units of the bound */
    for (int n = 0; n < 200000; n++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) * 0x1p-53; /* [0, 1) */
        double b = n % 2 ? exp2(120 * u - 60) : 1 + 2 * u;
        double p = n % 3 == 0 ? 1 / (0.025 + 40 * u * u) : n % 3 == 1 ? 1.702 : 0.05 + 40 * u;
        double got = hl_pow_pos(b, p), want = pow(b, p);
        if (fabs(p * log(b)) > 706) { /* at or near libm's range: libm's own result */
            assert_true(fabs(p * log(b)) < 708 || memcmp(&got, &want, sizeof got) == 0);
            continue;
        }
        double bound = (2 * fabs(p * log(b)) + 4) * 0x1p-52 * want;
        if (!(fabs(got - want) <= bound))
            fail_msg("hl_pow_pos(%a, %a) = %a, pow %a", b, p, got, want);
        worst = fmax(worst, fabs(got - want) / bound);
    }
    assert_true(worst > 0.01); /* the bound is not loose by orders of magnitude */
    assert_true(hl_pow_pos(1, 0.587) == 1 && hl_pow_pos(1, 40) == 1);
    const double edge[][2] = {{0, 1.7}, {0x1p-1070, 1.7}, {INFINITY, 1.7}, {1e-300, 3}, {1e300, 3}, {3, 700}};
    for (int i = 0; i < 6; i++) {
        double got = hl_pow_pos(edge[i][0], edge[i][1]), want = pow(edge[i][0], edge[i][1]);
        assert_true(memcmp(&got, &want, sizeof got) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_compute_bound),
        cmocka_unit_test(test_gemv_memory_bound_and_latency),
        cmocka_unit_test(test_attention_pairs),
        cmocka_unit_test(test_gqa_decode_reads_kv_heads),
        cmocka_unit_test(test_unsupported_precision),
        cmocka_unit_test(test_shape_aware_gemm_by_hand),
        cmocka_unit_test(test_dense_gemm_k0_by_hand),
        cmocka_unit_test(test_attention_fixed_parts_by_hand),
        cmocka_unit_test(test_attention_cta_grid_by_hand),
        cmocka_unit_test(test_attn_stream_matches_full_time),
        cmocka_unit_test(test_attn_stream_mem_side),
        cmocka_unit_test(test_gemm_blend_shortcut_same_bits),
        cmocka_unit_test(test_pow_pos_against_libm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
