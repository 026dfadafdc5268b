/* Sweeps (core/src/sweep.c): point counts, the index decomposition, points
 * equal direct runs, error points, object axes before field axes, memos never stale. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "sim_int.h" /* hl_sim_run_trusted, HL_TRUST_SAME_BUT_INPUT, hl_sim_resolve */

/* Llama-3.1-8B at TP8 on 8 x H100 in one HBD, batch 8. */
static hl_job base_job(void)
{
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    j.batch = 8;
    j.tp = 8;
    return j;
}

/* A sweep of base_job over axes[0..n) with the defaults (one thread per CPU, product). */
static hl_sweep_in base_sweep(hl_axis *axes, int32_t n)
{
    hl_sweep_in in;
    memset(&in, 0, sizeof in);
    in.base = base_job();
    in.axes = axes;
    in.n_axes = n;
    return in;
}

static hl_axis num_axis(const char *name, const double *v, int32_t n)
{
    hl_axis a;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    a.kind = HL_AXIS_NUMBER;
    a.numbers = v;
    a.n = n;
    return a;
}

/* Product: 2 x 3 = 6 points; zip needs equal lengths. Point 4 of a (2, 3)
 * product, last axis fastest: 4 = 1 * 3 + 1 -> values (1, 1). */
static void test_count_and_indices(void **state)
{
    (void)state;
    const double a[] = {1, 2}, b[] = {10, 20, 30};
    hl_axis axes[2] = {num_axis("batch", a, 2), num_axis("input", b, 3)};
    hl_sweep_in in = base_sweep(axes, 2);
    int64_t n = 0;
    hl_err e;
    assert_ok(hl_sweep_count(&in, &n, &e), &e);
    assert_int_equal(n, 6);
    int64_t idx[2];
    hl_sweep_value_indices(axes, 2, 0, 4, idx);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 1);
    hl_sweep_value_indices(axes, 2, 1, 1, idx); /* zipped: both at the point's index */
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 1);
    in.zip = 1;
    assert_fails_with(hl_sweep_count(&in, &n, &e), HL_EINVAL, &e, "zipped axes need equal lengths");
}

/* Every point of a sweep equals hl_point_from_job of the job hl_sweep_job builds,
 * and that job has the axis values; a bad value is an error point, not a failed sweep. */
static void test_points_equal_direct_runs(void **state)
{
    (void)state;
    const double batch[] = {8, 16, 3}; /* tp 8 on 8 GPUs: dp 1, so any whole batch splits */
    const double hbd[] = {8, 4};
    const double imb[] = {1, 0.5}; /* 0.5 is below imbalance's minimum 1: error points */
    hl_axis axes[3] = {num_axis("batch", batch, 3), num_axis("hbd", hbd, 2), num_axis("imbalance", imb, 2)};
    hl_sweep_in in = base_sweep(axes, 3);
    in.threads = 2;
    hl_point pts[12];
    hl_err e;
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    int errors = 0;
    for (int64_t i = 0; i < 12; i++) {
        int64_t idx[3];
        hl_sweep_value_indices(axes, 3, 0, i, idx);
        if (imb[idx[2]] < 1) {
            assert_int_equal(pts[i].status, HL_EINVAL);
            assert_non_null(strstr(pts[i].error, "'imbalance': 0.5 is out of range"));
            errors++;
            continue;
        }
        hl_job j;
        assert_ok(hl_sweep_job(&in, i, &j, &e), &e);
        assert_true(j.batch == batch[idx[0]] && j.cluster.hbd == (int64_t)hbd[idx[1]]);
        hl_point direct;
        hl_point_from_job(&j, &direct);
        assert_int_equal(pts[i].status, direct.status);
        for (int32_t k = 0; k < HL_POINT_VALUES; k++)
            if (pts[i].v[k] != direct.v[k])
                fail_msg("point %lld, %s: sweep %.17g, direct %.17g", (long long)i, hl_result_field_at(k)->name,
                         pts[i].v[k], direct.v[k]);
    }
    assert_int_equal(errors, 6);
}

/* The compact store holds what hl_sweep_run's points hold: point by point the same values
 * (bit for bit) or the same status and message; 6 of the 12 points fail with 2 distinct
 * messages (imbalance 0.5 with hbd 8 or 4: the message names the field and value only, so all
 * six say the same), kept once each; a range run fills only its part; a cancelled run leaves
 * its points HL_STORE_NOT_RUN. */
static void test_store_equals_points(void **state)
{
    (void)state;
    const double batch[] = {8, 16, 3};
    const double hbd[] = {8, 4};
    const double imb[] = {1, 0.5};
    hl_axis axes[3] = {num_axis("batch", batch, 3), num_axis("hbd", hbd, 2), num_axis("imbalance", imb, 2)};
    hl_sweep_in in = base_sweep(axes, 3);
    in.threads = 2;
    hl_point pts[12];
    hl_sweep_store s;
    hl_err e;
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    assert_ok(hl_sweep_store_init(&s, 12, &e), &e);
    assert_ok(hl_sweep_run_store(&in, &s, &e), &e);
    int failed = 0;
    for (int64_t i = 0; i < 12; i++) {
        if (pts[i].status != HL_OK) {
            assert_true(s.fault[i] > 0 && s.fault[i] <= s.n_messages);
            assert_int_equal(s.statuses[s.fault[i] - 1], pts[i].status);
            assert_string_equal(s.messages[s.fault[i] - 1], pts[i].error);
            failed++;
            continue;
        }
        assert_int_equal(s.fault[i], 0);
        assert_memory_equal(s.values + i * HL_POINT_VALUES, pts[i].v, sizeof pts[i].v);
    }
    assert_int_equal(failed, 6);
    assert_int_equal(s.n_messages, 1);
    assert_true(hl_sweep_store_point_bytes() == 67 * 8 + 4);
    hl_sweep_store_free(&s);
    hl_sweep_store_free(&s); /* safe twice */
    /* a range: points [4, 7) only */
    in.first = 4;
    in.count = 3;
    assert_ok(hl_sweep_store_init(&s, 12, &e), &e);
    assert_ok(hl_sweep_run_store(&in, &s, &e), &e);
    for (int64_t i = 0; i < 12; i++)
        assert_true((i >= 4 && i < 7) == (s.fault[i] != HL_STORE_NOT_RUN));
    /* messages are kept once per (status, text) */
    int32_t a = hl_sweep_store_fault(&s, HL_EINVAL, "x"), b = hl_sweep_store_fault(&s, HL_EINVAL, "x");
    int32_t c = hl_sweep_store_fault(&s, HL_ENOFIT, "x");
    assert_true(a > 0 && a == b && c != a);
    for (int k = 0; k < 200; k++) { /* past the index's growth */
        char msg[16];
        snprintf(msg, sizeof msg, "m%d", k);
        assert_int_equal(hl_sweep_store_fault(&s, HL_EINVAL, msg), hl_sweep_store_fault(&s, HL_EINVAL, msg));
    }
    assert_int_equal(hl_sweep_store_fault(&s, HL_EINVAL, "x"), a);
    hl_sweep_store_free(&s);
    /* a store of another size is refused; a cancelled run leaves every point not run */
    in.first = in.count = 0;
    assert_ok(hl_sweep_store_init(&s, 11, &e), &e);
    assert_fails_with(hl_sweep_run_store(&in, &s, &e), HL_EINVAL, &e, "a store of 11 points for a sweep of 12");
    hl_sweep_store_free(&s);
    volatile int32_t cancel = 1;
    in.cancel = &cancel;
    assert_ok(hl_sweep_store_init(&s, 12, &e), &e);
    assert_fails_with(hl_sweep_run_store(&in, &s, &e), HL_EINTR, &e, "interrupted");
    for (int64_t i = 0; i < 12; i++)
        assert_int_equal(s.fault[i], HL_STORE_NOT_RUN);
    hl_sweep_store_free(&s);
}

/* An unknown axis fails the whole sweep with a suggestion; a cancelled sweep marks its points. */
static void test_unknown_axis_and_cancel(void **state)
{
    (void)state;
    const double v[] = {1, 2};
    hl_axis ax = num_axis("bacth", v, 2);
    hl_sweep_in in = base_sweep(&ax, 1);
    hl_point pts[2];
    hl_err e;
    assert_fails_with(hl_sweep_run(&in, pts, &e), HL_EINVAL, &e, "did you mean 'batch'");
    ax = num_axis("batch", v, 2);
    volatile int32_t cancel = 1;
    in.cancel = &cancel;
    assert_fails_with(hl_sweep_run(&in, pts, &e), HL_EINTR, &e, "interrupted");
    assert_int_equal(pts[0].status, HL_EINTR);
    assert_int_equal(pts[1].status, HL_EINTR);
}

/* A GPU object axis is applied before a field axis on the same GPU, whatever
 * the order given: eff_gemm 0.2 then 0.9 must differ in TTFT. */
static void test_object_axes_first(void **state)
{
    (void)state;
    hl_gpu g;
    hl_err e;
    assert_ok(hl_gpu_preset("H100-SXM", &g, &e), &e);
    const double eff[] = {0.2, 0.9};
    hl_axis axes[2];
    axes[0] = num_axis("eff_gemm", eff, 2);
    memset(&axes[1], 0, sizeof axes[1]);
    snprintf(axes[1].name, sizeof axes[1].name, "gpu");
    axes[1].kind = HL_AXIS_GPU;
    axes[1].gpus = &g;
    axes[1].n = 1;
    hl_sweep_in in = base_sweep(axes, 2);
    in.base.input = 8192;
    int32_t ttft = hl_result_field_index("ttft_s");
    for (int order = 0; order < 2; order++) { /* field axis first, then the GPU axis first */
        if (order) {
            hl_axis t = axes[0];
            axes[0] = axes[1];
            axes[1] = t;
        }
        hl_point pts[2];
        assert_ok(hl_sweep_run(&in, pts, &e), &e);
        assert_int_equal(pts[0].status, HL_OK);
        assert_int_equal(pts[1].status, HL_OK);
        assert_true(pts[0].v[ttft] > pts[1].v[ttft] * 1.5); /* compute-bound prefill: 0.2 is much slower */
    }
}

/* One point run alone on a fresh thread: its per-thread memos are empty. */
typedef struct fresh_run {
    const hl_sweep_in *in;
    int64_t index;
    hl_point point;
    hl_status st;
    hl_err e;
} fresh_run;

static void *run_fresh(void *arg)
{
    fresh_run *f = arg;
    hl_job j;
    f->st = hl_sweep_job(f->in, f->index, &j, &f->e); /* summary_only 0, as the base: no decode memo */
    if (!f->st)
        hl_point_from_job(&j, &f->point);
    return NULL;
}

/* A one-thread sweep over axes of Llama-3.1-8B at TP8, batch 8, on 16 x H100 in HBDs of 8. */
static hl_sweep_in llama16_sweep(hl_axis *axes, int32_t n)
{
    hl_sweep_in in;
    memset(&in, 0, sizeof in);
    in.base = job_for("llama-3.1-8b", "H100-SXM", 16, 8);
    in.base.batch = 8;
    in.base.tp = 8;
    in.axes = axes;
    in.n_axes = n;
    in.threads = 1;
    return in;
}

/* Point i of a sweep (status HL_OK) equals, bit for bit, its job run alone on a fresh thread. */
static void assert_point_is_fresh_run(const hl_sweep_in *in, int64_t i, const hl_point *p, int pass)
{
    fresh_run f;
    memset(&f, 0, sizeof f);
    f.in = in;
    f.index = i;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_fresh, &f), 0);
    pthread_join(t, NULL);
    assert_ok(f.st, &f.e);
    assert_int_equal(p->status, HL_OK);
    assert_int_equal(f.point.status, HL_OK);
    for (int32_t k = 0; k < HL_POINT_VALUES; k++)
        if (memcmp(&p->v[k], &f.point.v[k], sizeof(double)) != 0)
            fail_msg("pass %d, point %lld, %s: sweep %.17g, fresh thread %.17g", pass, (long long)i,
                     hl_result_field_at(k)->name, p->v[k], f.point.v[k]);
}

/* The sweep in run twice into pts[0..n) (the second pass starts with every memo warm): each
 * point, each pass, the same bits as assert_point_is_fresh_run's. */
static void assert_sweep_is_fresh_runs(const hl_sweep_in *in, hl_point *pts, int64_t n)
{
    hl_err e;
    for (int pass = 0; pass < 2; pass++) {
        assert_ok(hl_sweep_run(in, pts, &e), &e);
        for (int64_t i = 0; i < n; i++)
            assert_point_is_fresh_run(in, i, &pts[i], pass);
    }
}

/* The memos never return a stale result: coll.c's per-thread collective memo
 * (and its search minimum in layer.c's best_coll), sim.c's decode-layer memo and layer.c's
 * LM-head memo (both keyed by sim.c's job class), which
 * hits while only input changes. The sweep runs on one thread, input
 * innermost, over output (a job field after input), hbd (inside the cluster)
 * and scaleout_bw (a link parameter: at 25 and 50 GB/s the placed time of the
 * TP group, which spans two HBDs of 4, changes with it; at 400 GB/s, above
 * half of H100's scale-up, best_coll searches smaller HBD shares), outermost
 * tp (weights per GPU, the LM head: memory.c's and layer.c's memos). Each of
 * its 72 points must equal, bit for bit, the same job run alone on a fresh
 * thread. */
static void test_memos_never_stale(void **state)
{
    (void)state;
    const double tp[] = {8, 4}, out[] = {64, 128}, hbd[] = {8, 4}, so[] = {25e9, 50e9, 400e9},
                 input[] = {512, 1024, 2048};
    hl_axis axes[5] = {num_axis("tp", tp, 2), num_axis("output", out, 2), num_axis("hbd", hbd, 2),
                       num_axis("scaleout_bw", so, 3), num_axis("input", input, 3)};
    hl_sweep_in in = llama16_sweep(axes, 5);
    hl_point pts[72];
    assert_sweep_is_fresh_runs(&in, pts, 72);
}

/* The same on B200, whose decode attention is a blended kernel (attn_blend > 1): sim.c keeps its
 * KV stream per job class, batch and new tokens, layer.c the attention shape per class. tp moves
 * the heads per GPU and batch the sequences per group (both a new class); every point must equal
 * the same job run alone on a fresh thread. */
static void test_memos_never_stale_blended(void **state)
{
    (void)state;
    const double tp[] = {8, 4}, batch[] = {8, 32}, input[] = {512, 1500, 6000};
    hl_axis axes[3] = {num_axis("tp", tp, 2), num_axis("batch", batch, 2), num_axis("input", input, 3)};
    hl_sweep_in in = llama16_sweep(axes, 3);
    in.base = job_for("llama-3.1-8b", "B200", 16, 8);
    in.base.batch = 8;
    in.base.tp = 8;
    assert_true(in.base.cluster.gpu.attn_blend > 1);
    hl_point pts[12];
    assert_sweep_is_fresh_runs(&in, pts, 12);
}

/* layer.c's collective shape hints (one per job class and (op, algo, ranks, ranks_per_hbd)) never
 * hand a call another shape's slot: an MoE job whose passes hold all-reduces, all-gathers and
 * all-to-alls over TP groups and the EP domain, with ep = 1 (the experts' reduction over etp =
 * 16 ranks beside attention's over tp = 4) and pp = 2 (stage hand-offs, the token broadcast),
 * over hbd and input; every point must equal the same job run alone on a fresh thread. A hint
 * keyed without the op (the TP all-reduce and the MoE all-gather share the rest) fails it; keyed
 * without ranks or without ranks_per_hbd it passes: no job's calls today differ in those alone
 * (the key holds them because the shape does; test_coll_shape.c's test_hint_never_stale checks
 * the slot side). */
static void test_coll_hints_never_stale(void **state)
{
    (void)state;
    const double ep[] = {16, 1}, pp[] = {1, 2}, hbd[] = {8, 4}, input[] = {512, 1500, 6000};
    hl_axis axes[4] = {num_axis("ep", ep, 2), num_axis("pp", pp, 2), num_axis("hbd", hbd, 2),
                       num_axis("input", input, 3)};
    hl_sweep_in in = llama16_sweep(axes, 4);
    in.base = job_for("qwen3-30b-a3b", "H100-SXM", 16, 8);
    in.base.batch = 16;
    in.base.tp = 4;
    hl_point pts[24];
    hl_err e;
    for (int pass = 0; pass < 2; pass++) {
        assert_ok(hl_sweep_run(&in, pts, &e), &e);
        int good = 0;
        for (int64_t i = 0; i < 24; i++)
            if (pts[i].status == HL_OK) {
                assert_point_is_fresh_run(&in, i, &pts[i], pass);
                good++;
            }
        assert_true(good >= 18);
    }
}

/* layer.c's hint entries keep reroute_can_win of their shape per job class (taken when the entry
 * is filled, not per call): at scaleout_bw 400 GB/s, above half of H100's scale-up, the EP
 * all-to-all over two HBDs of 8 is faster with some HBD peers sent over scale-out (best_coll's
 * search), at 50 GB/s it is not searched. The axis runs 50, 400, 50 GB/s over input, one thread:
 * each class refills the same keys. Every point must equal its job run alone on a fresh thread
 * (no class: reroute_can_win per call). An entry that kept the flag of the class before (not
 * taken at the fill) times the 400 GB/s points placed and fails it (planted, tried); so does one
 * with the search skipped. The 400 GB/s points must differ from the 50 GB/s ones. */
static void test_coll_reroute_flag_per_class(void **state)
{
    (void)state;
    const double so[] = {50e9, 400e9, 50e9}, input[] = {512, 1500};
    hl_axis axes[2] = {num_axis("scaleout_bw", so, 3), num_axis("input", input, 2)};
    hl_sweep_in in = llama16_sweep(axes, 2);
    in.base = job_for("qwen3-30b-a3b", "H100-SXM", 16, 8);
    in.base.batch = 16;
    in.base.tp = 4;
    in.base.ep = 16;
    hl_point pts[6];
    hl_err e;
    for (int pass = 0; pass < 2; pass++) {
        assert_ok(hl_sweep_run(&in, pts, &e), &e);
        for (int64_t i = 0; i < 6; i++)
            assert_point_is_fresh_run(&in, i, &pts[i], pass);
    }
    int32_t ttft = hl_result_field_index("ttft_s");
    assert_true(pts[2].v[ttft] < pts[0].v[ttft]); /* the faster scale-out shows in the exchange */
}

/* layer.c's lean_inline (an operator's time from hl_gemm_time_parts, hl_attn_time or hl_plain_time
 * in a run with a job class) gives the bits of hl_op_time_lean for every GEMM, norm, elementwise
 * kernel and prefill attention kernel of a pass. FP8 MoE jobs, whose layers hold dense FP8 GEMMs,
 * a BF16 router, grouped FP8 experts, the norms and the MoE permutation: on B200 (the FP8
 * quantisation bytes, eff_grouped, grouped_k0, moe_latency as the experts' fixed_s), on MI300X
 * (dense_k0 and tile rows) and on H100 with the unfused FP8 dequantisation; over eff_gemm_fp8 (a
 * GPU field: a new job class), tp (other N and K) and input. Every point must equal, bit for bit,
 * its job run alone on a fresh thread, which takes hl_op_time_on (no class). lean_inline without
 * the experts' fixed_s, timing grouped GEMMs as dense ones, with the plain kernels' fixed latency
 * dropped or with attention's bytes written dropped fails it (planted). */
static void test_lean_ops_same_bits(void **state)
{
    (void)state;
    const char *gpus[] = {"B200", "MI300X", "H100-SXM"};
    const double eff[] = {0.6, 0.45}, tp[] = {4, 2}, input[] = {512, 1500, 6000};
    for (int g = 0; g < 3; g++) {
        hl_axis axes[3] = {num_axis("eff_gemm_fp8", eff, 2), num_axis("tp", tp, 2), num_axis("input", input, 3)};
        hl_sweep_in in = llama16_sweep(axes, 3);
        in.base = job_for("qwen3-30b-a3b", gpus[g], 16, 8);
        in.base.batch = 16;
        in.base.tp = 4;
        in.base.ep = 16;
        in.base.precision = HL_FP8;
        in.base.fp8_dequant = g == 2;
        hl_point pts[12];
        assert_sweep_is_fresh_runs(&in, pts, 12);
    }
}

/* Along an input axis the sweep tells the simulation that a point's job is its previous
 * one's but for input (HL_TRUST_SAME_BUT_INPUT), so the job class is not compared again.
 * A point that fails before taking a class (input 1000.5: not whole, refused in
 * hl_sim_resolve) must not let the next one take a stale class: points 3 and 4 are (hbd 4,
 * input 1000.5) and (hbd 4, input 1000); 4 differs from 3 only in input, but the last class
 * taken is the hbd-8 job's (point 2). Taking it would give point 4 the hbd-8 job's decode
 * (its TP-8 all-reduce within one HBD instead of across two; decode_layers' memo keys on
 * the class). Every successful point must equal the same job run alone on a fresh thread. */
static void test_input_hint_after_failed_point(void **state)
{
    (void)state;
    const double hbd[] = {8, 4}, input[] = {1000.5, 1000, 2000};
    hl_axis axes[2] = {num_axis("hbd", hbd, 2), num_axis("input", input, 3)};
    hl_sweep_in in = llama16_sweep(axes, 2);
    hl_point pts[6];
    hl_err e;
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    for (int64_t i = 0; i < 6; i++) {
        if (i % 3 == 0) {
            assert_int_equal(pts[i].status, HL_EINVAL);
            assert_non_null(strstr(pts[i].error, "must be whole numbers"));
            continue;
        }
        assert_point_is_fresh_run(&in, i, &pts[i], 0);
    }
    /* the two HBD sizes differ in decode (else the check above could not see a stale class) */
    int32_t tpot = hl_result_field_index("tpot_s");
    assert_true(pts[4].v[tpot] != pts[1].v[tpot]);
}

/* Along an input axis a point after a good one is resolved from that one's context
 * (mapping.c hl_sim_resolve_input), which runs only the checks that read input: a fractional
 * input (point 1) and an input below image_tokens (point 3, 256 image tokens, input 200) must
 * still be refused there with the full checks' messages; points 2 and 4 follow failed points
 * (full resolve) and, like point 0, equal their job run alone. */
static void test_input_checks_on_reused_context(void **state)
{
    (void)state;
    const double input[] = {1000, 1000.5, 1000, 200, 2000};
    hl_axis axes[1] = {num_axis("input", input, 5)};
    hl_sweep_in in;
    memset(&in, 0, sizeof in);
    in.base = job_for("qwen2.5-vl-7b", "h200", 1, 1);
    in.base.image_tokens = 256;
    in.base.output = 8;
    in.axes = axes;
    in.n_axes = 1;
    in.threads = 1;
    hl_point pts[5];
    hl_err e;
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    assert_int_equal(pts[1].status, HL_EINVAL);
    assert_non_null(strstr(pts[1].error, "fields 'batch', 'input', 'output' must be whole numbers"));
    assert_int_equal(pts[3].status, HL_EINVAL);
    assert_non_null(strstr(pts[3].error, "field 'image_tokens': 256 must be a whole number of tokens <= input (200)"));
    for (int64_t i = 0; i < 5; i += 2)
        assert_point_is_fresh_run(&in, i, &pts[i], 0);
}

/* A worker's job goes from one point to the next by applying only the axes whose value moved
 * (the others' values are in it already), unless two axes write the same field: then every
 * axis is applied again, in the usual order (the first axis last, so its value wins). Two
 * axes on input: each point's input is the first axis's value, as hl_sweep_job builds it, and
 * equals the direct run of that job (skipping the second axis's unchanged value would leave
 * the first axis's write undone after the second changes). */
static void test_axes_on_one_field(void **state)
{
    (void)state;
    const double first[] = {500, 700}, second[] = {100, 200, 300};
    hl_axis axes[2] = {num_axis("input", first, 2), num_axis("input", second, 3)};
    hl_sweep_in in = base_sweep(axes, 2);
    in.threads = 1;
    hl_point pts[6];
    hl_err e;
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    int32_t input = hl_result_field_index("input");
    for (int64_t i = 0; i < 6; i++) {
        hl_job j;
        assert_ok(hl_sweep_job(&in, i, &j, &e), &e);
        assert_true(j.input == first[i / 3]);
        hl_point direct;
        hl_point_from_job(&j, &direct);
        assert_int_equal(pts[i].status, HL_OK);
        assert_true(pts[i].v[input] == first[i / 3]);
        for (int32_t k = 0; k < HL_POINT_VALUES; k++)
            if (memcmp(&pts[i].v[k], &direct.v[k], sizeof(double)) != 0)
                fail_msg("point %lld, %s: sweep %.17g, direct %.17g", (long long)i, hl_result_field_at(k)->name,
                         pts[i].v[k], direct.v[k]);
    }
}

/* A run told its job is the last run's but for input (HL_TRUST_SAME_BUT_INPUT) reuses that
 * run's resolved context, whose expert layout is the thread's one-entry cache; a resolve in
 * between (here of the same model with a skewed routing: another layout in the cache) must
 * make it resolve again. Each run equals the same job run plainly on a fresh thread. */
typedef struct plain_run {
    hl_job job;
    hl_result r;
    hl_status st;
} plain_run;

static void *run_plain(void *arg)
{
    plain_run *p = arg;
    hl_err e;
    p->st = hl_sim_run(&p->job, &p->r, &e);
    return NULL;
}

static void assert_same_as_fresh(const hl_job *j, const hl_result *r)
{
    plain_run p;
    memset(&p, 0, sizeof p);
    p.job = *j;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_plain, &p), 0);
    pthread_join(t, NULL);
    assert_int_equal(p.st, HL_OK);
    const double got[] = {r->ttft_s, r->tpot_s, r->total_s}, want[] = {p.r.ttft_s, p.r.tpot_s, p.r.total_s};
    for (int k = 0; k < 3; k++)
        if (memcmp(&got[k], &want[k], sizeof got[k]) != 0)
            fail_msg("time %d: %.17g, fresh %.17g", k, got[k], want[k]);
}

static void test_same_but_input_after_other_resolve(void **state)
{
    (void)state;
    hl_job j = job_for("qwen3-30b-a3b", "H100-SXM", 8, 8);
    j.batch = 64;
    j.ep = 8;
    j.input = 1000;
    j.summary_only = 1;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run_trusted(&j, &r, 0, &e), &e);
    hl_job skewed = j;
    skewed.routing_skew = 1.5;
    hl_sim_ctx sc;
    assert_ok(hl_sim_resolve(&skewed, &sc, 0, &e), &e);
    hl_result rs;
    assert_ok(hl_sim_run(&skewed, &rs, &e), &e);
    j.input = 2000;
    assert_ok(hl_sim_run_trusted(&j, &r, 0, &e), &e); /* a run between: the next is its job but input */
    assert_ok(hl_sim_resolve(&skewed, &sc, 0, &e), &e);
    j.input = 3000;
    assert_ok(hl_sim_run_trusted(&j, &r, HL_TRUST_SAME_BUT_INPUT, &e), &e);
    assert_same_as_fresh(&j, &r);
    j.input = 4000; /* nothing between: the context is reused */
    assert_ok(hl_sim_run_trusted(&j, &r, HL_TRUST_SAME_BUT_INPUT, &e), &e);
    assert_same_as_fresh(&j, &r);
    /* the skewed routing changes the times (else this could not see a stale layout) */
    skewed.input = 3000;
    hl_result r3;
    assert_ok(hl_sim_run(&skewed, &rs, &e), &e);
    j.input = 3000;
    assert_ok(hl_sim_run(&j, &r3, &e), &e);
    assert_true(rs.ttft_s != r3.ttft_s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_and_indices),
        cmocka_unit_test(test_points_equal_direct_runs),
        cmocka_unit_test(test_unknown_axis_and_cancel),
        cmocka_unit_test(test_object_axes_first),
        cmocka_unit_test(test_memos_never_stale),
        cmocka_unit_test(test_memos_never_stale_blended),
        cmocka_unit_test(test_coll_hints_never_stale),
        cmocka_unit_test(test_coll_reroute_flag_per_class),
        cmocka_unit_test(test_lean_ops_same_bits),
        cmocka_unit_test(test_store_equals_points),
        cmocka_unit_test(test_input_hint_after_failed_point),
        cmocka_unit_test(test_input_checks_on_reused_context),
        cmocka_unit_test(test_axes_on_one_field),
        cmocka_unit_test(test_same_but_input_after_other_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
