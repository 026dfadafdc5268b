/* The C API given NULL where an object belongs (attack pass 7, docs/RELIABILITY.md): through
 * LuaJIT FFI a nil is a NULL, and each of these dereferenced it (SIGSEGV, found by a probe that
 * forked once per call). Each is now refused with HL_EINVAL and a message naming the argument, or,
 * for the helpers without a status, answers as for an empty value. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

static void test_null_objects_are_refused(void **state)
{
    (void)state;
    hl_model m;
    hl_cluster c;
    hl_err e;
    assert_ok(hl_model_preset("llama-3.1-8b", &m, &e), &e);
    assert_ok(hl_cluster_preset("hgx-h100", &c, &e), &e);
    hl_job job;
    hl_job_init(&job, &m, &c);
    hl_result r;
    assert_fails_with(hl_sim_run(NULL, &r, &e), HL_EINVAL, &e, "hl_sim_run: the job is NULL");
    assert_fails_with(hl_sim_run(&job, NULL, &e), HL_EINVAL, &e, "hl_sim_run: the result is NULL");
    /* a job made from a NULL model: zero, refused by its fields (hl_job_init copied *NULL) */
    hl_job bare;
    hl_job_init(&bare, NULL, &c);
    assert_fails_with(hl_sim_run(&bare, &r, &e), HL_EINVAL, &e, "model field");
    hl_serve_result sr;
    hl_serve_steady ss;
    assert_fails_with(hl_serve_run(NULL, &sr, &e), HL_EINVAL, &e, "hl_serve_run: the configuration is NULL");
    assert_fails_with(hl_serve_steady_run(NULL, &ss, &e), HL_EINVAL, &e, "the configuration is NULL");
    assert_fails_with(hl_serve_check(NULL, &e), HL_EINVAL, &e, "hl_serve_check: the configuration is NULL");
    hl_serve_cfg cfg;
    hl_serve_init(&cfg, &job);
    assert_fails_with(hl_serve_set_number(&cfg, NULL, 1, &e), HL_EINVAL, &e, "the field name is NULL");
    assert_fails_with(hl_serve_set_string(&cfg, "arrival", NULL, &e), HL_EINVAL, &e, "the value is NULL");
    assert_fails_with(hl_field_set_number(hl_gpu_fields(), NULL, "eff_gemm", 0.5, &e), HL_EINVAL, &e,
                      "the object is NULL");
    assert_null(hl_field_find(hl_gpu_fields(), NULL));
    assert_int_equal(hl_edit_distance(NULL, "a"), 99);
    hl_coll_in in;
    memset(&in, 0, sizeof in);
    hl_coll_out co;
    assert_fails_with(hl_coll_time(NULL, &in, &co, &e), HL_EINVAL, &e, "hl_coll_time: the cluster is NULL");
    hl_kv_capacity kv;
    assert_fails_with(hl_kv_capacity_compute(NULL, &kv, &e), HL_EINVAL, &e, "kv capacity: the input is NULL");
    assert_fails_with(hl_job_set_spec_accept(&job, NULL, 3, &e), HL_EINVAL, &e, "3 positions from a NULL vector");
    hl_sweep_in sw;
    memset(&sw, 0, sizeof sw);
    sw.n_axes = 3; /* and no axes */
    int64_t n;
    assert_fails_with(hl_sweep_count(&sw, &n, &e), HL_EINVAL, &e, "sweep: the axes is NULL");
    double b;
    assert_fails_with(hl_env_bytes(NULL, 1, 2, &b, &e), HL_EINVAL, &e, "the variable name is NULL");
    hl_csv csv; /* a NULL text is an empty cell */
    hl_csv_init(&csv);
    hl_csv_text(&csv, NULL);
    hl_csv_text(&csv, "a");
    hl_csv_end_row(&csv);
    assert_int_equal(csv.len, 3);
    assert_memory_equal(csv.text, ",a\n", 3);
    hl_csv_free(&csv);
    /* and a good job still runs */
    job.tp = 8;
    assert_ok(hl_sim_run(&job, &r, &e), &e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_null_objects_are_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
