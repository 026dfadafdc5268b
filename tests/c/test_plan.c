/* Mapping search (parallel = "auto") and the largest batch that fits
 * (batch = "max"), core/src/plan.c. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

/* Llama-3.1-8B (32 heads, 32 layers, dense) on 8 GPUs in one HBD, batch 8:
 * tp in {1, 2, 4, 8} (powers of two dividing 32 heads, at most the HBD), pp a
 * power of two with tp * pp dividing 8, ep = 1: (1,1) (1,2) (1,4) (1,8) (2,1)
 * (2,2) (2,4) (4,1) (4,2) (8,1) = 10 mappings, dp = 8 / (tp * pp) divides the batch. */
static void test_auto_enumerates_and_ranks(void **state)
{
    (void)state;
    hl_plan_in in;
    memset(&in, 0, sizeof in);
    in.job = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    in.job.batch = 8;
    in.objective = HL_OBJ_MIN_TTFT;
    hl_candidate c[64];
    int32_t n = 0;
    hl_err e;
    assert_ok(hl_plan_search(&in, c, 64, &n, &e), &e);
    assert_int_equal(n, 10);
    int seen[9][9] = {{0}};
    for (int32_t i = 0; i < n; i++) {
        assert_true(c[i].tp >= 1 && c[i].tp <= 8 && c[i].pp >= 1 && c[i].pp <= 8);
        assert_int_equal(c[i].tp * c[i].pp * c[i].dp, 8);
        assert_int_equal(c[i].ep, 1);
        assert_false(seen[c[i].tp][c[i].pp]);
        seen[c[i].tp][c[i].pp] = 1;
        assert_true(c[i].fits && c[i].meets_limits);
        assert_rel(c[i].score, -c[i].ttft_s, 1e-15, "score = -ttft for objective ttft");
        if (i > 0)
            assert_true(c[i - 1].score >= c[i].score); /* best first */
    }
    /* the winner's numbers are those of a plain run of its mapping */
    hl_job j = in.job;
    j.tp = c[0].tp;
    j.pp = c[0].pp;
    hl_result r;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(c[0].ttft_s, r.ttft_s, 1e-12, "best candidate's TTFT = hl_sim_run of its mapping");
    assert_rel(c[0].tpot_s, r.tpot_s, 1e-12, "best candidate's TPOT");
}

/* A TPOT limit puts the candidates that meet it first; each one that claims to meet it does. */
static void test_auto_limits(void **state)
{
    (void)state;
    hl_plan_in in;
    memset(&in, 0, sizeof in);
    in.job = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    in.job.batch = 8;
    in.objective = HL_OBJ_TPS_PER_GPU;
    hl_candidate c[64];
    int32_t n = 0;
    hl_err e;
    assert_ok(hl_plan_search(&in, c, 64, &n, &e), &e);
    assert_true(n > 1);
    double lo = c[0].tpot_s;
    for (int32_t i = 1; i < n; i++)
        lo = c[i].tpot_s < lo ? c[i].tpot_s : lo;
    in.max_tpot = lo * 1.0000001; /* only the fastest-decoding mapping(s) meet it */
    assert_ok(hl_plan_search(&in, c, 64, &n, &e), &e);
    assert_true(c[0].meets_limits);
    assert_true(c[0].tpot_s <= in.max_tpot);
    int met = 0;
    for (int32_t i = 0; i < n; i++) {
        if (c[i].meets_limits)
            assert_true(c[i].tpot_s <= in.max_tpot);
        if (i > 0 && c[i].meets_limits)
            assert_true(c[i - 1].meets_limits); /* those that meet the limit come first */
        met += c[i].meets_limits;
    }
    assert_true(met >= 1 && met < n);
}

/* batch = "max", worked by hand: Llama-3.1-8B at TP1 on one H100 (81,559 MiB =
 * 85,520,809,984 B as nvidia-smi reports it, mem_util 0.9), workspace fixed at 1e9 B.
 * Weights 8,030,261,248 params x 2 B = 16,060,522,496 B. Budget 76,968,728,985.6 -
 * 16,060,522,496 - 1e9 = 59,908,206,489.6 B. KV per sequence: 131,072 B/token
 * (2 x 32 layers x 8 KV heads x 128 x 2 B) x (1024 + 128) tokens = 150,994,944 B.
 * 396 x 150,994,944 = 59,793,997,824 fits; 397 x = 59,944,992,768 does not: 396. */
static void test_max_batch_by_hand(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.workspace_bytes = 1e9;
    double b = 0;
    hl_err e;
    assert_ok(hl_sim_max_batch(&j, &b, &e), &e);
    assert_rel(b, 396, 0, "largest batch");
    hl_memory mem;
    j.batch = 396;
    assert_ok(hl_memory_per_gpu(&j, &mem, &e), &e);
    assert_rel(mem.weights_bytes, 16060522496.0, 1e-12, "weights per GPU");
    assert_rel(mem.kv_bytes, 396 * 150994944.0, 1e-12, "KV per GPU");
    assert_true(mem.fits);
    j.batch = 397;
    assert_ok(hl_memory_per_gpu(&j, &mem, &e), &e);
    assert_false(mem.fits);
    /* a job that cannot hold even one sequence per group says so */
    hl_job big = job_for("llama-3.1-405b", "H100-SXM", 2, 2);
    big.tp = 2;
    assert_fails_with(hl_sim_max_batch(&big, &b, &e), HL_ENOFIT, &e, "batch = max: even 1 sequence");
}

/* auto + max: every candidate runs at its own largest batch, a multiple of its dp. */
static void test_auto_with_max_batch(void **state)
{
    (void)state;
    hl_plan_in in;
    memset(&in, 0, sizeof in);
    in.job = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    in.max_batch = 1;
    hl_candidate c[64];
    int32_t n = 0;
    hl_err e;
    assert_ok(hl_plan_search(&in, c, 64, &n, &e), &e);
    assert_int_equal(n, 10);
    for (int32_t i = 0; i < n; i++) {
        hl_job j = in.job;
        j.tp = c[i].tp;
        j.pp = c[i].pp;
        double b;
        assert_ok(hl_sim_max_batch(&j, &b, &e), &e);
        assert_rel(c[i].batch, b, 0, "candidate batch = its own largest batch");
        assert_rel(fmod(c[i].batch, (double)c[i].dp), 0, 0, "batch is a multiple of dp");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_enumerates_and_ranks),
        cmocka_unit_test(test_auto_limits),
        cmocka_unit_test(test_max_batch_by_hand),
        cmocka_unit_test(test_auto_with_max_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
