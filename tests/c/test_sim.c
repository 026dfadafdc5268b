#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

/* Closed-form decode equals the step-by-step reference to 1e-9 relative over
 * many random configurations (dense, GQA, MLA, MoE, sliding windows, TP, PP). */
static void test_closed_form_matches_exact_steps(void **state)
{
    (void)state;
    static const char *const models[] = {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b",
                                         "deepseek-v3",  "gpt-oss-120b",  "qwen3-30b-a3b"};
    static const char *const gpus[] = {"H100-SXM", "B200", "MI300X", "H200"};
    srand(12345);
    int checked = 0;
    for (int i = 0; i < 300; i++) {
        hl_job j = job_for(models[rand() % 6], gpus[rand() % 4], 64, 8 << (rand() % 4));
        j.precision = rand() % 2 ? HL_FP8 : HL_BF16;
        j.kv_precision = rand() % 2 ? HL_FP8 : HL_BF16;
        j.tp = 1 << (rand() % 4);
        j.pp = 1 << (rand() % 2);
        j.ep = j.model.experts > 0 ? 1 << (rand() % 4) : 1;
        j.batch = (double)((1 + rand() % 64) * (64 / (j.tp * j.pp)));
        j.input = 1 + rand() % 8000;
        j.output = 1 + rand() % 600;
        hl_result a, b;
        hl_err e;
        if (hl_sim_run(&j, &a, &e) != HL_OK)
            continue; /* an invalid random mapping */
        j.exact_steps = 1;
        assert_ok(hl_sim_run(&j, &b, &e), &e);
        assert_rel(a.tpot_s, b.tpot_s, 1e-9, "tpot closed form vs exact");
        assert_rel(a.decode.flops, b.decode.flops, 1e-9, "decode flops");
        assert_rel(a.decode.hbm_bytes, b.decode.hbm_bytes, 1e-9, "decode bytes");
        checked++;
    }
    printf("closed form == exact steps on %d random valid configurations\n", checked);
    assert_true(checked >= 100);
}

/* A blended decode kernel (B200: attn_blend > 1, MODEL.md section 3) is not linear in the
 * context: past 64 steps hl_sim_run sums it by Euler-Maclaurin with an adaptive Simpson
 * integral; it stays within 1e-9 of the step-by-step sum (measured at most 6e-11 over these
 * batches and lengths, where the decode kernel goes from unit-bound to KV-bound), and the blend
 * is on in the preset. */
static void test_blended_decode_sum_matches_exact_steps(void **state)
{
    (void)state;
    double bs[] = {1, 64, 512}, outs[] = {65, 300, 2000, 6000};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) {
            hl_job j = job_for("llama-3.1-8b", "B200", 1, 1);
            assert_true(j.cluster.gpu.attn_blend > 1);
            j.batch = bs[i];
            j.input = 100;
            j.output = outs[k];
            j.ignore_memory = 1;
            hl_result a, b;
            hl_err e;
            assert_ok(hl_sim_run(&j, &a, &e), &e);
            j.exact_steps = 1;
            assert_ok(hl_sim_run(&j, &b, &e), &e);
            assert_rel(a.tpot_s, b.tpot_s, 1e-9, "blended tpot: Euler-Maclaurin vs exact");
        }
}

/* Single-GPU decode of Llama-3.1-8B at BF16, batch 1: TPOT is no lower than
 * weights / HBM bandwidth (8.03e9 * 2 B / 3.35e12 B/s = 4.79 ms) and within 1.5x. */
static void test_tpot_bounded_by_weight_reads(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = 1;
    j.input = 1000;
    j.output = 200;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    hl_params p;
    assert_ok(hl_model_params(&j.model, &p, &e), &e);
    double floor_s = p.total * 2 / 3.35e12;
    printf("llama-3.1-8b TPOT %.3f ms, weights/BW %.3f ms, ratio %.3f\n", r.tpot_s * 1e3, floor_s * 1e3,
           r.tpot_s / floor_s);
    assert_true(r.tpot_s >= floor_s);
    assert_true(r.tpot_s <= 1.5 * floor_s);
}

/* Per-layer FLOPs of Llama-3.1-8B prefill on one GPU, one sequence of 1,000
 * tokens, by hand (h = 4096, H = 32, K = 8, d = 128, F = 14336):
 *   qkv  2*T*h*(H+2K)*d = 2*1000*4096*6144   =  50,331,648,000
 *   o    2*T*h*H*d      = 2*1000*4096*4096   =  33,554,432,000
 *   ffn  2*T*h*3F       = 2*1000*4096*43008  = 352,321,536,000
 *   attn 2*H*pairs*(d+d), pairs = 1000*1001/2 = 500,500: 2*32*500500*256 = 8,200,192,000
 *   norms 2 * 4*T*h = 32,768,000
 * per layer 444,440,576,000; 32 layers = 14,222,098,432,000; plus the LM head
 * for the last token 2*1*4096*128256 = 1,050,673,152: total 14,223,149,105,152. */
static void test_prefill_flops_by_hand(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = 1;
    j.input = 1000;
    j.output = 1;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.prefill.flops, 14223149105152.0, 1e-12, "prefill flops");
    assert_rel(r.tpot_s, 0, 1e-12, "no decode steps");
}

/* HBM bytes of one decode step of Llama-3.1-8B BF16 on one GPU, batch 1,
 * input 1000 (the step attends over 1,001 keys), by hand (h = 4096, H = 32,
 * K = 8, d = 128, F = 14336, V = 128256; 2 B per element):
 *   norms    2 norms x (read x, residual; write x) = 6*h*2                 =          49,152
 *   qkv      read h*2 + h*6144*2, write 6144*2                               =      50,352,128
 *   attn     read 32*128*2 (q) + 1001 keys * 4096 B (K,V of 8 heads), write 8192 = 4,116,480
 *   o        read h*2 + 4096*4096*2, write h*2                               =      33,570,816
 *   up+gate  read h*2 + 4096*28672*2, write 28672*2                          =     234,946,560
 *   down     read 14336*2 + 14336*4096*2, write h*2                          =     117,477,376
 *   per layer 440,512,512; 32 layers 14,096,400,384
 *   embedding read + write 2*h*2 = 16,384; LM head read h*2 + h*V*2, write V*2 = 1,050,937,856
 *   total 15,147,354,624 B. */
static void test_decode_step_bytes_by_hand(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = 1;
    j.input = 1000;
    j.output = 2; /* one decode step */
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.decode.hbm_bytes, 15147354624.0, 1e-12, "decode step HBM bytes");
}

/* Weights per GPU: Llama-3.1-70B BF16 over TP4 = 70.55e9 * 2 / 4 (norms are
 * replicated, a 0.0002% difference). */
static void test_weights_per_gpu(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 4;
    j.dp = 2;
    j.batch = 2;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.weights_bytes, 70553706496.0 * 2 / 4, 1e-4, "weights per gpu");
}

static void test_mapping_errors(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    hl_result r;
    hl_err e;
    j.tp = 6;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EINVAL, &e, "tp = 6 does not divide 64 heads");
    j.tp = 8;
    j.pp = 2;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EINVAL, &e, "tp*pp = 16 does not divide gpus = 8");
    j = job_for("mixtral-8x7b", "H100-SXM", 8, 8);
    j.ep = 3;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EINVAL, &e, "ep = 3 does not divide 8 experts");
    j = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    j.batch = 3;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EINVAL, &e, "'batch': 3 sequences do not split over dp = 8");
    j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.precision = HL_FP4;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EUNSUPPORTED, &e, "no fp4 tensor support");
    j.precision = HL_BF16;
    j.input = -5;
    assert_fails_with(hl_sim_run(&j, &r, &e), HL_EINVAL, &e, "'input': -5 is out of range");
}

/* A larger HBD never slows the same job down (more bytes on the faster tier). */
static void test_larger_hbd_is_not_slower(void **state)
{
    (void)state;
    double last = 1e30;
    for (int64_t hbd = 8; hbd <= 128; hbd *= 2) {
        hl_job j = job_for("qwen1.5-110b", "B200", 128, hbd);
        j.model.experts = 16;
        j.model.topk = 2;
        j.precision = HL_FP8;
        j.batch = 16;
        j.input = 4096;
        j.output = 64;
        j.tp = 8;
        j.ep = 16;
        hl_result r;
        hl_err e;
        assert_ok(hl_sim_run(&j, &r, &e), &e);
        assert_true(r.total_s <= last * (1 + 1e-12));
        last = r.total_s;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_form_matches_exact_steps),
        cmocka_unit_test(test_blended_decode_sum_matches_exact_steps),
        cmocka_unit_test(test_tpot_bounded_by_weight_reads),
        cmocka_unit_test(test_prefill_flops_by_hand),
        cmocka_unit_test(test_decode_step_bytes_by_hand),
        cmocka_unit_test(test_weights_per_gpu),
        cmocka_unit_test(test_mapping_errors),
        cmocka_unit_test(test_larger_hbd_is_not_slower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
