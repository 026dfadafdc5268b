/* Framework profiles: the per-pass overhead and the per-precision GEMM
 * efficiency scales reach the operators as stated in docs/MODEL.md 6.1. */
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

/* One GPU, batch 4, 2048 + 64 tokens at precision `prec`. */
static hl_job one_gpu(const char *model, const char *gpu, hl_precision prec)
{
    hl_job j = job_for(model, gpu, 1, 1);
    j.precision = prec;
    j.batch = 4;
    j.input = 2048;
    j.output = 64;
    j.ignore_memory = 1;
    /* the plain max(compute, memory) roofline: with the fitted blend and fixed GEMM costs of the
     * preset a compute-bound GEMM's time is not exactly its compute time (docs/MODEL.md section 3) */
    hl_gpu *g = &j.cluster.gpu;
    g->gemm_blend = g->gemm_k_latency = g->gemm_k_latency_fp8 = g->gemm_k_latency_fp4 = 0;
    g->gemm_latency_fp8 = g->gemm_latency_fp4 = 0;
    return j;
}

static double item_time(const hl_item *items, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].name, name) == 0)
            return items[i].time_s;
    fail_msg("no item %s", name);
    return 0;
}

/* The step overhead (the profile's value, or a job override): TTFT grows by
 * one pass's overhead and TPOT by one per step, nothing else changes when the
 * efficiency scales are overridden to 1. */
static void test_step_overhead(void **state)
{
    (void)state;
    hl_job j = one_gpu("llama-3.1-8b", "H100-SXM", HL_FP8);
    hl_result base, trt;
    hl_err e;
    j.framework = HL_FW_TRTLLM;
    j.gemm_scale_fp8 = 1;
    /* the base: the same profile (its kernel inventory, docs/MODEL.md 6.1) with a 1 ps step overhead */
    j.step_overhead = 1e-12;
    assert_ok(hl_sim_run(&j, &base, &e), &e);
    j.step_overhead = 0; /* 0 = the profile's value */
    assert_ok(hl_sim_run(&j, &trt, &e), &e);
    double ov = hl_framework_profile(HL_FW_TRTLLM).step_overhead;
    assert_rel(trt.ttft_s - base.ttft_s, ov - 1e-12, 1e-9, "TTFT: one pass");
    assert_rel(trt.tpot_s - base.tpot_s, ov - 1e-12, 1e-9, "TPOT: one per step");
    j.step_overhead = 2e-3; /* an override replaces the profile's value */
    assert_ok(hl_sim_run(&j, &trt, &e), &e);
    assert_rel(trt.ttft_s - base.ttft_s, 2e-3 - 1e-12, 1e-9, "TTFT with an override");
    assert_rel(trt.tpot_s - base.tpot_s, 2e-3 - 1e-12, 1e-9, "TPOT with an override");
}

/* A compute-bound prefill GEMM of the profile takes (t - kernel latency) /
 * scale of the ideal one, with the scale of the job's precision: FP8 and FP4
 * differ, BF16 keeps 1 (trtllm has no BF16 case). */
static void test_gemm_scale_per_precision(void **state)
{
    (void)state;
    const struct {
        const char *gpu;
        hl_precision p;
        double scale;
    } cases[] = {{"H100-SXM", HL_FP8, hl_framework_profile(HL_FW_TRTLLM).gemm_scale_fp8},
                 {"B200", HL_FP4, hl_framework_profile(HL_FW_TRTLLM).gemm_scale_fp4},
                 {"H100-SXM", HL_BF16, 1}};
    assert_true(cases[0].scale != cases[1].scale);
    for (int i = 0; i < 3; i++) {
        hl_job j = one_gpu("llama-3.1-8b", cases[i].gpu, cases[i].p);
        hl_result a, b;
        hl_err e;
        assert_ok(hl_sim_run(&j, &a, &e), &e);
        j.framework = HL_FW_TRTLLM;
        assert_ok(hl_sim_run(&j, &b, &e), &e);
        double lat = j.cluster.gpu.kernel_latency, L = (double)j.model.layers;
        double ta = item_time(a.prefill_items, a.n_prefill_items, "ffn_up_gate") / L - lat;
        double tb = item_time(b.prefill_items, b.n_prefill_items, "ffn_up_gate") / L - lat;
        assert_rel(tb, ta / cases[i].scale, 1e-9, "compute-bound GEMM time / scale");
    }
}

/* Scales that would lift an efficiency past 1 are capped at 1, and a class the GPU lacks is not
 * touched. A100-SXM has no FP8 or FP4 but has INT8 (the FP8/INT8 class); its FP8 and FP4 slots fall
 * back to the 16-bit 0.8587, so 1.4 x 0.8587 = 1.20 would be out of range. The BF16 job is unchanged. */
static void test_scale_capped_and_missing_class(void **state)
{
    (void)state;
    hl_job j = one_gpu("llama-3.1-8b", "A100-SXM", HL_BF16);
    hl_err e;
    double f;
    assert_true(hl_gpu_peak(&j.cluster.gpu, HL_FP4, &f, &e) != HL_OK);
    assert_true(1.4 * j.cluster.gpu.eff_gemm > 1);
    hl_result a, b;
    assert_ok(hl_sim_run(&j, &a, &e), &e);
    j.gemm_scale_fp8 = 1.4;
    j.gemm_scale_fp4 = 1.4;
    assert_ok(hl_sim_run(&j, &b, &e), &e);
    assert_rel(b.total_s, a.total_s, 0, "BF16 job unchanged by FP8/FP4 scales");
    hl_gpu g = j.cluster.gpu;
    hl_gpu_apply_framework(&g, 1, 1.4, 1.4, 1);
    assert_true(g.eff_gemm_fp8 == 1);                          /* INT8 class present: capped */
    assert_true(g.eff_gemm_fp4 == j.cluster.gpu.eff_gemm_fp4); /* no FP4: untouched */
    /* where the product stays below 1 the scale applies as before: B200's FP4 0.463 x 1.4 = 0.648 */
    hl_job k = one_gpu("llama-3.1-8b", "B200", HL_FP4);
    hl_gpu h = k.cluster.gpu;
    hl_gpu_apply_framework(&h, 1, 1, 1.4, 1);
    assert_rel(h.eff_gemm_fp4, k.cluster.gpu.eff_gemm_fp4 * 1.4, 1e-15, "B200 FP4 scaled");
}

static void test_bad_framework_named(void **state)
{
    (void)state;
    hl_job j = one_gpu("llama-3.1-8b", "H100-SXM", HL_FP8);
    hl_err e;
    hl_result r;
    assert_fails_with(hl_job_set_string(&j, "framework", "tgi", &e), HL_EINVAL, &e, "framework");
    assert_fails_with(hl_job_set_number(&j, "gemm_scale_fp4", 20, &e), HL_EINVAL, &e, "gemm_scale_fp4");
    j.framework = 9;
    assert_true(hl_sim_run(&j, &r, &e) != HL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_overhead),
        cmocka_unit_test(test_gemm_scale_per_precision),
        cmocka_unit_test(test_scale_capped_and_missing_class),
        cmocka_unit_test(test_bad_framework_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
