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

/* Attack pass 12 (attack12): a forked probe of 200 calls of core/include with NULL arguments found 87
 * more that crashed (SIGSEGV). These are the entry points a caller (a C program, LuaJIT FFI's nil)
 * reaches with an output, object, name or text left NULL; each is now refused with HL_EINVAL and a
 * message naming the argument, or answers as for an unknown name. Not guarded, by design: the
 * per-point and per-cell functions (hl_op_time_on, hl_memory_per_gpu, hl_kv_*, hl_csv_*, the field
 * getters), where a caller's NULL is a programming error and a test costs every sweep point. */
static void test_null_entry_points_attack12(void **state)
{
    (void)state;
    hl_model m;
    hl_cluster c;
    hl_err e;
    assert_ok(hl_model_preset("llama-3.1-8b", &m, &e), &e);
    assert_ok(hl_cluster_preset("hgx-h100", &c, &e), &e);
    hl_job job;
    hl_job_init(&job, &m, &c);
    job.tp = 8;
    assert_fails_with(hl_gpu_preset("h100-sxm", NULL, &e), HL_EINVAL, &e, "hl_gpu_preset: the output gpu is NULL");
    assert_fails_with(hl_cluster_preset("hgx-h100", NULL, &e), HL_EINVAL, &e, "the output cluster is NULL");
    assert_fails_with(hl_model_preset("llama-3.1-8b", NULL, &e), HL_EINVAL, &e, "the output model is NULL");
    assert_fails_with(hl_job_set_number(NULL, "batch", 1, &e), HL_EINVAL, &e, "hl_job_set_number: the job is NULL");
    assert_fails_with(hl_job_set_number(&job, NULL, 1, &e), HL_EINVAL, &e, "the field name is NULL");
    assert_fails_with(hl_job_set_string(&job, "precision", NULL, &e), HL_EINVAL, &e,
                      "hl_job_set_string: the value is NULL");
    assert_fails_with(hl_job_set_string(&job, NULL, "bf16", &e), HL_EINVAL, &e, "the field name is NULL");
    assert_fails_with(hl_job_set_string(NULL, "precision", "bf16", &e), HL_EINVAL, &e, "the job is NULL");
    assert_fails_with(hl_job_check_spec(NULL, &e), HL_EINVAL, &e, "hl_job_check_spec: the job is NULL");
    assert_fails_with(hl_job_draft(&job, NULL, &e), HL_EINVAL, &e, "hl_job_draft: the draft job is NULL");
    assert_null(hl_job_field_by_path(NULL));
    assert_int_equal(hl_job_group_size(NULL), 0);
    hl_params par;
    assert_fails_with(hl_model_params(NULL, &par, &e), HL_EINVAL, &e, "hl_model_params: the model is NULL");
    assert_fails_with(hl_model_params(&m, NULL, &e), HL_EINVAL, &e, "hl_model_params: the output is NULL");
    double d;
    int32_t i32;
    int64_t i64;
    assert_fails_with(hl_sim_max_batch(NULL, &d, &e), HL_EINVAL, &e, "hl_sim_max_batch: the job is NULL");
    assert_fails_with(hl_sim_max_batch(&job, NULL, &e), HL_EINVAL, &e, "the batch output is NULL");
    assert_fails_with(hl_sim_max_batch_within(NULL, 1, 1, &d, &i32, &e), HL_EINVAL, &e, "the job is NULL");
    assert_fails_with(hl_sim_max_batch_within(&job, 1, 1, &d, NULL, &e), HL_EINVAL, &e, "the meets output is NULL");
    assert_fails_with(hl_plan_search(NULL, NULL, 0, &i32, &e), HL_EINVAL, &e, "hl_plan_search: the input is NULL");
    hl_sweep_in sw;
    memset(&sw, 0, sizeof sw);
    hl_sweep_csv_opts o;
    memset(&o, 0, sizeof o);
    assert_fails_with(hl_sweep_csv_file(NULL, &o, "x.csv", &i64, &e), HL_EINVAL, &e,
                      "hl_sweep_csv_file: the input is NULL");
    assert_fails_with(hl_sweep_csv_file(&sw, &o, NULL, &i64, &e), HL_EINVAL, &e, "hl_sweep_csv_file: the path is NULL");
    assert_fails_with(hl_sweep_store_init(NULL, 5, &e), HL_EINVAL, &e, "hl_sweep_store_init: the store is NULL");
    hl_trace_req *tr = NULL;
    const char trace[] = "arrival_s,input,output\n0,1,1\n";
    assert_fails_with(hl_serve_trace_parse(NULL, 5, "t", &tr, &i64, &e), HL_EINVAL, &e,
                      "hl_serve_trace_parse: the text is NULL");
    assert_fails_with(hl_serve_trace_parse(trace, sizeof trace - 1, "t", NULL, &i64, &e), HL_EINVAL, &e,
                      "the output is NULL");
    assert_fails_with(hl_serve_trace_parse(trace, sizeof trace - 1, "t", &tr, NULL, &e), HL_EINVAL, &e,
                      "the count is NULL");
    assert_fails_with(hl_serve_load_trace(NULL, &tr, &e), HL_EINVAL, &e,
                      "hl_serve_load_trace: the configuration is NULL");
    assert_fails_with(hl_serve_check_instance(NULL, "pool", &e), HL_EINVAL, &e,
                      "hl_serve_check_instance: the job is NULL");
    assert_fails_with(hl_serve_check_plan(NULL, "pool", &e), HL_EINVAL, &e, "hl_serve_check_plan: the plan is NULL");
    assert_null(hl_serve_field(NULL));
    assert_fails_with(hl_calib_fit(NULL, &d, NULL, &e), HL_EINVAL, &e, "hl_calib_fit: the input is NULL");
    assert_fails_with(hl_calib_loo(NULL, &d, &e), HL_EINVAL, &e, "hl_calib_loo: the input is NULL");
    assert_fails_with(hl_routing_zipf(1, 8, 2, NULL, &e), HL_EINVAL, &e, "hl_routing_zipf: the share output is NULL");
    assert_fails_with(hl_routing_check(NULL, 5, 5, 2, "expert_freq", &e), HL_EINVAL, &e, "5 shares from a NULL vector");
    assert_fails_with(hl_expert_layout_init(NULL, NULL, 8, 0, 8, 2, 0, &e), HL_EINVAL, &e, "the layout is NULL");
    hl_minitf *tf = NULL;
    assert_fails_with(hl_minitf_new(NULL, 1, &tf, &e), HL_EINVAL, &e, "hl_minitf_new: the model is NULL");
    const hl_kernels *k = NULL;
    assert_fails_with(hl_kernels_load(NULL, &k, &e), HL_EINVAL, &e, "field 'kernels': the folder name is NULL");
    assert_fails_with(hl_kernels_load("/tmp", NULL, &e), HL_EINVAL, &e, "field 'kernels': the output is NULL");
    char *text = NULL;
    assert_fails_with(hl_read_file(NULL, &text, &e), HL_EINVAL, &e, "hl_read_file: the path is NULL");
    assert_fails_with(hl_read_file("/dev/null", NULL, &e), HL_EINVAL, &e, "hl_read_file: the text output is NULL");
    assert_fails_with(hl_max_input_bytes(NULL, &e), HL_EINVAL, &e, "hl_max_input_bytes: the output is NULL");
    assert_fails_with(hl_json_parse("{}", 2, "o", NULL, &e), HL_EINVAL, &e, "hl_json_parse: the output is NULL");
    assert_fails_with(hl_precision_parse("bf16", NULL, &e), HL_EINVAL, &e, "hl_precision_parse: the output is NULL");
    assert_fails_with(hl_bench_reference_sweep(NULL, 1, 1, &d, &d, &i64, &e), HL_EINVAL, &e,
                      "hl_bench_reference_sweep: the job is NULL");
    assert_int_equal(hl_result_field_index(NULL), -1);
    hl_sweep_store_free(NULL); /* a free of NULL is a no-op, as hl_serve_result_free(NULL) */
    hl_serve_clear_group(NULL, "input");
    hl_net_need need;
    (void)need;
    assert_fails_with(hl_coll_requirement(1, 1, 1, 1, 1e-6, 0.5, NULL, &e), HL_EINVAL, &e,
                      "hl_coll_requirement: the output is NULL");
    assert_fails_with(hl_minitf_generate(NULL, NULL, 1, NULL, 1, 1, 1, NULL, NULL, NULL, &e), HL_EINVAL, &e,
                      "hl_minitf_generate: the mini-transformer is NULL");
    assert_fails_with(hl_model_validate(NULL, &e), HL_EINVAL, &e, "model: the model is NULL");
    assert_fails_with(hl_gpu_validate(NULL, &e), HL_EINVAL, &e, "gpu: the gpu is NULL");
    assert_fails_with(hl_cluster_validate(NULL, &e), HL_EINVAL, &e, "cluster: the cluster is NULL");
    assert_fails_with(hl_job_check_fields(NULL, &e), HL_EINVAL, &e, "hl_job_check_fields: the job is NULL");
    hl_memory mem;
    assert_fails_with(hl_memory_per_gpu(NULL, &mem, &e), HL_EINVAL, &e, "hl_memory_per_gpu: the job is NULL");
    assert_fails_with(hl_memory_per_gpu(&job, NULL, &e), HL_EINVAL, &e, "hl_memory_per_gpu: the output is NULL");
    e.msg[0] = 0;
    assert_int_equal(hl_open_input(NULL, &i64, &e), -1); /* open(NULL): UBSan's "null pointer passed" */
    assert_non_null(strstr(e.msg, "hl_open_input: the path is NULL"));
    /* and the same calls with good arguments still work */
    hl_gpu g;
    assert_ok(hl_gpu_preset("h100-sxm", &g, &e), &e);
    assert_ok(hl_job_set_number(&job, "batch", 4, &e), &e);
    assert_ok(hl_model_params(&m, &par, &e), &e);
    assert_ok(hl_serve_trace_parse(trace, sizeof trace - 1, "t", &tr, &i64, &e), &e);
    assert_int_equal(i64, 1);
    hl_serve_trace_free(tr);
}

/* attack12: hl_sweep_count (every sweep's first check) let through axes that the run then read out
 * of bounds: n_axes = 100000 with one axis (read past the array: "sweep axis 'llama-3.1-8b' has no
 * values", a model name from the stack), an axis of kind 99 or a number axis whose array is NULL
 * (SIGSEGV in hl_sweep_run), a name with no NUL within its 32 bytes (printed past its end). */
static void test_sweep_axes_out_of_range_attack12(void **state)
{
    (void)state;
    hl_model m;
    hl_cluster c;
    hl_err e;
    assert_ok(hl_model_preset("llama-3.1-8b", &m, &e), &e);
    assert_ok(hl_cluster_preset("hgx-h100", &c, &e), &e);
    hl_sweep_in sw;
    memset(&sw, 0, sizeof sw);
    hl_job_init(&sw.base, &m, &c);
    sw.base.tp = 8;
    sw.threads = 1;
    hl_axis ax;
    memset(&ax, 0, sizeof ax);
    strcpy(ax.name, "batch");
    ax.kind = HL_AXIS_NUMBER;
    ax.n = 3;
    sw.axes = &ax;
    sw.n_axes = 1;
    hl_point pts[3];
    int64_t n;
    assert_fails_with(hl_sweep_run(&sw, pts, &e), HL_EINVAL, &e,
                      "sweep axis 'batch': its numbers array is NULL (3 values)");
    const double batches[] = {1, 2, 4};
    ax.numbers = batches;
    ax.kind = 99;
    assert_fails_with(hl_sweep_run(&sw, pts, &e), HL_EINVAL, &e, "sweep axis 'batch': kind 99 is not one of 0..4");
    ax.kind = HL_AXIS_NUMBER;
    sw.n_axes = 100000;
    assert_fails_with(hl_sweep_count(&sw, &n, &e), HL_EINVAL, &e, "sweep: n_axes is 100000 (allowed: 0..256)");
    sw.n_axes = -1;
    assert_fails_with(hl_sweep_count(&sw, &n, &e), HL_EINVAL, &e, "sweep: n_axes is -1");
    sw.n_axes = 1;
    memcpy(ax.name, "batchbatchbatchbatchbatchbatchba", sizeof ax.name); /* 32 bytes, no NUL */
    assert_fails_with(hl_sweep_count(&sw, &n, &e), HL_EINVAL, &e,
                      "sweep axis 1: its name 'batchbatchbatchbatchbatchbatchba' has no end");
    /* the same axis, well formed, runs its 3 points */
    strcpy(ax.name, "batch");
    assert_ok(hl_sweep_count(&sw, &n, &e), &e);
    assert_int_equal(n, 3);
    assert_ok(hl_sweep_run(&sw, pts, &e), &e);
    assert_int_equal(pts[2].error[0], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_null_objects_are_refused),
                                       cmocka_unit_test(test_null_entry_points_attack12),
                                       cmocka_unit_test(test_sweep_axes_out_of_range_attack12)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
