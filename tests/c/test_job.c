/* The job field table (core/src/job.c): defaults, setters, the precision rule,
 * groups and the table's own consistency. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

/* Llama-3.1-8B on the hgx-h100 preset (8 x H100 in one HBD), job table defaults. */
static hl_job small_job(void) { return job_for("llama-3.1-8b", "H100-SXM", 8, 8); }

/* hl_job_init applies the documented defaults (the table's `def` column). */
static void test_defaults(void **state)
{
    (void)state;
    hl_job j = small_job();
    assert_int_equal(j.precision, HL_BF16);
    assert_int_equal(j.act_precision, HL_BF16);
    assert_int_equal(j.kv_precision, HL_PRECISION_AS_ACT);
    assert_int_equal(j.wire_precision, HL_PRECISION_AS_ACT);
    assert_true(j.batch == 1 && j.input == 1024 && j.output == 128);
    assert_true(j.tp == 1 && j.pp == 1 && j.ep == 1 && j.dp == 0 && j.etp == 0 && j.gpus == 0);
    assert_true(j.mem_util == 0.9 && j.imbalance == 0 && j.overlap_prefill == 0 && j.overlap_decode == 0);
    assert_int_equal(j.dispatch, HL_DISPATCH_FLAT);
    assert_int_equal(j.placement, HL_PLACE_TP_DP_PP);
    hl_err e;
    assert_ok(hl_job_check_fields(&j, &e), &e);
}

/* Every row: a unique name (also against the plan options), a default inside
 * its own range, a unit and a help line. */
static void test_table_consistent(void **state)
{
    (void)state;
    const hl_field_set *js = hl_job_fields(), *ps = hl_plan_fields();
    assert_true(js->count >= 25);
    for (int32_t i = 0; i < js->count; i++) {
        const hl_field *f = &js->fields[i];
        assert_non_null(f->help);
        assert_true(f->help[0] != '\0');
        assert_non_null(f->unit);
        for (int32_t k = i + 1; k < js->count; k++)
            if (strcmp(f->name, js->fields[k].name) == 0)
                fail_msg("job field '%s' declared twice", f->name);
        for (int32_t k = 0; k < ps->count; k++)
            if (strcmp(f->name, ps->fields[k].name) == 0)
                fail_msg("'%s' is both a job field and a plan option", f->name);
        if (f->type == HL_FIELD_DOUBLE || f->type == HL_FIELD_INT64)
            if (!((f->def >= f->min && f->def <= f->max) || (f->def == 0 && f->zero_ok)))
                fail_msg("job field '%s': default %g outside %g..%g", f->name, f->def, f->min, f->max);
    }
}

/* Setters by name reach job, cluster, model and GPU fields; groups set each member. */
static void test_setters(void **state)
{
    (void)state;
    hl_job j = small_job();
    hl_err e;
    assert_ok(hl_job_set_number(&j, "tp", 4, &e), &e);
    assert_int_equal(j.tp, 4);
    assert_ok(hl_job_set_number(&j, "hbd", 4, &e), &e); /* cluster */
    assert_int_equal(j.cluster.hbd, 4);
    assert_ok(hl_job_set_number(&j, "experts", 8, &e), &e); /* model */
    assert_int_equal(j.model.experts, 8);
    assert_ok(hl_job_set_number(&j, "eff_gemm", 0.5, &e), &e); /* gpu */
    assert_true(j.cluster.gpu.eff_gemm == 0.5);
    assert_ok(hl_job_set_string(&j, "kv_precision", "fp8", &e), &e);
    assert_int_equal(j.kv_precision, HL_FP8);
    assert_ok(hl_job_set_number(&j, "overlap", 0.25, &e), &e); /* the overlap group: both phases */
    assert_true(j.overlap_prefill == 0.25 && j.overlap_decode == 0.25);
    assert_int_equal(hl_job_group_size("overlap"), 2);
    assert_int_equal(hl_job_group_size("parallel"), 6);
    assert_int_equal(hl_job_group_size("batch"), 0);
    const hl_field *f = hl_job_field_by_path("parallel.gpus");
    assert_non_null(f);
    assert_string_equal(f->name, "instance_gpus");
    assert_fails_with(hl_job_set_number(&j, "bacth", 8, &e), HL_EINVAL, &e, "did you mean 'batch'");
    assert_fails_with(hl_job_set_number(&j, "overlap", 1.5, &e), HL_EINVAL, &e,
                      "'overlap_prefill': 1.5 is out of range");
    assert_fails_with(hl_job_set_number(&j, "tp", 2.5, &e), HL_EINVAL, &e, "not an integer");
    assert_fails_with(hl_job_set_string(&j, "dispatch", "smart", &e), HL_EINVAL, &e, "not one of flat, hierarchical");
}

/* KV and wire precision follow act_precision unless set. */
static void test_precision_rule(void **state)
{
    (void)state;
    hl_job j = small_job();
    j.act_precision = HL_FP32;
    assert_int_equal(hl_job_kv_precision(&j), HL_FP32);
    assert_int_equal(hl_job_wire_precision(&j), HL_FP32);
    j.kv_precision = HL_FP8;
    assert_int_equal(hl_job_kv_precision(&j), HL_FP8);
    assert_int_equal(hl_job_wire_precision(&j), HL_FP32);
    /* and the simulation uses it: Llama-3.1-8B KV per token = 2 (K, V) x 32 layers x 8 KV heads
     * x 128 dims = 65,536 elements; batch 1 x (1024 + 128) tokens at tp 1: 75,497,472 elements,
     * 301,989,888 B at fp32 (act), 75,497,472 B at fp8 */
    hl_result r;
    hl_err e;
    j.kv_precision = HL_PRECISION_AS_ACT;
    j.cluster.gpus = 1;
    j.cluster.hbd = 1;
    j.ignore_memory = 1;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.kv_bytes, 301989888.0, 1e-12, "kv bytes, kv as act (fp32)");
    j.kv_precision = HL_FP8;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.kv_bytes, 75497472.0, 1e-12, "kv bytes, fp8");
}

/* hl_job_check_fields names the field, the value and the range. */
static void test_check_fields(void **state)
{
    (void)state;
    hl_job j = small_job();
    hl_err e;
    j.mem_util = 1.5;
    assert_fails_with(hl_job_check_fields(&j, &e), HL_EINVAL, &e, "'mem_util': 1.5 is out of range (allowed: 0.01..1)");
    j = small_job();
    j.precision = 17;
    assert_fails_with(hl_job_check_fields(&j, &e), HL_EINVAL, &e, "'precision': 17 is not one of fp32, bf16");
    j = small_job();
    j.exact_steps = 2;
    assert_fails_with(hl_job_check_fields(&j, &e), HL_EINVAL, &e, "'exact_steps': 2 is not a boolean");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_table_consistent), cmocka_unit_test(test_setters),
        cmocka_unit_test(test_precision_rule), cmocka_unit_test(test_check_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
