/* A deployment: replicas behind a router and data-parallel ranks with their
 * own schedulers. A lone request has one replica's TTFT and TPOT whatever the
 * replicas or DP ranks beside it; Little's law over several replicas; the
 * router's policies; errors naming the field. */
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "step_int.h"

/* One request of `input` prompt and `output` generated tokens, alone. */
static hl_serve_result lone(const hl_job *j, int64_t replicas, double input, double output)
{
    hl_serve_cfg c;
    hl_serve_init(&c, j);
    hl_trace_req tr = {0, input, output};
    c.arrival = HL_ARRIVAL_TRACE;
    c.trace = &tr;
    c.n_trace = 1;
    c.input.kind = c.output.kind = HL_LEN_TRACE;
    c.replicas = replicas;
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    return r;
}

/* Llama-3.1-8B on H100s, one 4,000-token prompt and 64 output tokens. The
 * reference is one instance on one GPU. Eight replicas of it on 8 GPUs, and
 * one instance of dp = 8 (tp = 1) on 8 GPUs, hold the request on one GPU
 * (one replica, one DP rank): the same TTFT and TPOT. The DP groups used to be
 * pooled, the prompt split over eight GPUs: TTFT 7.4x lower. */
static void test_lone_request_is_one_replica(void **state)
{
    (void)state;
    hl_job one = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_result r1 = lone(&one, 1, 4000, 64);
    hl_job eight = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    eight.gpus = 1;
    hl_serve_result rr = lone(&eight, 8, 4000, 64);
    assert_rel(rr.ttft_s.mean, r1.ttft_s.mean, 1e-12, "8 replicas: TTFT of one");
    assert_rel(rr.tpot_s.mean, r1.tpot_s.mean, 1e-12, "8 replicas: TPOT of one");
    assert_int_equal(rr.gpus, 8);
    hl_job dp8 = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    dp8.dp = 8;
    hl_serve_result rd = lone(&dp8, 1, 4000, 64);
    assert_rel(rd.ttft_s.mean, r1.ttft_s.mean, 1e-12, "dp 8: TTFT of one rank");
    assert_rel(rd.tpot_s.mean, r1.tpot_s.mean, 1e-12, "dp 8: TPOT of one rank");
    /* and the one-GPU serve equals hl_sim_run's prefill and decode (test_serve.c checks it to 1%) */
    hl_job sj = one;
    sj.batch = 1;
    sj.input = 4000;
    sj.output = 64;
    hl_result s;
    hl_err e;
    assert_ok(hl_sim_run(&sj, &s, &e), &e);
    assert_rel(r1.ttft_s.mean, s.ttft_s, 0.01, "serve = simulate, TTFT");
    /* an MoE instance replicated: each replica alone is the instance alone */
    hl_job moe = job_for("mixtral-8x7b", "H100-SXM", 2, 2);
    moe.tp = 2;
    hl_serve_result m1 = lone(&moe, 1, 2000, 32);
    hl_job moe4 = job_for("mixtral-8x7b", "H100-SXM", 8, 8);
    moe4.tp = 2;
    moe4.gpus = 2;
    hl_serve_result m4 = lone(&moe4, 4, 2000, 32);
    assert_rel(m4.ttft_s.mean, m1.ttft_s.mean, 1e-12, "MoE replicas: TTFT of one");
    assert_rel(m4.tpot_s.mean, m1.tpot_s.mean, 1e-12, "MoE replicas: TPOT of one");
    hl_serve_result_free(&r1);
    hl_serve_result_free(&rr);
    hl_serve_result_free(&rd);
    hl_serve_result_free(&m1);
    hl_serve_result_free(&m4);
}

/* Attention DP with wide EP (Mixtral on 8 GPUs, tp 1, dp 8, ep 8): the lone
 * request lives on one DP rank, whose attention and dense layers take its whole
 * prompt, while its MoE layers span the EP group of 8 GPUs (the other ranks run
 * empty passes in lock-step). Its TTFT is one rank's pass over the 2,000
 * tokens with 2,000 routed (hl_stepper_new_rank), above the pooled instance's
 * pass over the same prompt (2,000 tokens split 250 per rank: the old model).
 * Eight such requests at once, one per rank (round robin), take a pass with
 * 8 x 2,000 routed tokens: no faster than the lone one. */
static void test_lockstep_dp_moe(void **state)
{
    (void)state;
    hl_job j = job_for("mixtral-8x7b", "H100-SXM", 8, 8);
    j.dp = 8;
    j.ep = 8;
    hl_serve_result r = lone(&j, 1, 2000, 16);
    hl_stepper *rank, *pooled;
    hl_err e;
    assert_ok(hl_stepper_new_rank(&j, 8192, &rank, &e), &e);
    assert_ok(hl_stepper_new(&j, 8192, &pooled, &e), &e);
    hl_iter_chunk ch = {2000, 0};
    hl_iter it = {0, 0, 0, 1, &ch, 1, 0, 2000};
    double t_rank, t_pooled;
    assert_ok(hl_stepper_time(rank, &it, &t_rank, &e), &e);
    it.routed = 0;
    assert_ok(hl_stepper_time(pooled, &it, &t_pooled, &e), &e);
    hl_stepper_free(rank);
    hl_stepper_free(pooled);
    assert_rel(r.ttft_s.mean, t_rank, 1e-12, "lone TTFT = one rank's pass");
    assert_true(t_rank > t_pooled);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    hl_trace_req tr[8];
    for (int i = 0; i < 8; i++)
        tr[i] = (hl_trace_req){0, 2000, 16};
    c.arrival = HL_ARRIVAL_TRACE;
    c.trace = tr;
    c.n_trace = 8;
    c.input.kind = c.output.kind = HL_LEN_TRACE;
    hl_serve_result r8;
    assert_ok(hl_serve_run(&c, &r8, &e), &e);
    assert_true(r.ttft_s.mean < r8.ttft_s.mean);
    printf("lone TTFT %.4g ms (pooled model %.4g ms), eight at once %.4g ms\n", r.ttft_s.mean * 1e3, t_pooled * 1e3,
           r8.ttft_s.mean * 1e3);
    hl_serve_result_free(&r);
    hl_serve_result_free(&r8);
}

/* Little's law over 4 replicas (8 GPUs, TP2 each) behind each router: the time
 * average of requests in the system, integrated over every replica's steps,
 * equals the rate times the mean end-to-end time within 2% (20,000 Poisson
 * arrivals: the sampled rate is within 0.7% of the configured one, one sigma). */
static void test_littles_law_replicas(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    j.tp = 2;
    j.gpus = 2;
    for (int32_t router = 0; router < 3; router++) {
        hl_serve_cfg c;
        hl_serve_init(&c, &j);
        c.replicas = 4;
        c.router = router;
        c.rate = 60;
        c.requests = 20000;
        c.seed = 11;
        c.input.kind = c.output.kind = HL_LEN_UNIFORM;
        c.input.lo = 128;
        c.input.hi = 2048;
        c.output.lo = 16;
        c.output.hi = 512;
        hl_serve_result r;
        hl_err e;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        printf("router %s: L = %.4g, lambda W = %.4g, running %.4g, ttft p99 %.4g s\n", hl_router_name(router),
               r.mean_in_system, c.rate * r.e2e_s.mean, r.mean_running, r.ttft_s.p99);
        assert_true(r.mean_running > 10); /* loaded: several requests per replica */
        assert_rel(r.mean_in_system, c.rate * r.e2e_s.mean, 0.02, "Little's law over replicas");
        hl_serve_result_free(&r);
    }
}

/* A disaggregated Llama-3.1-8B deployment on 2 H100s of one HBD: a prefill
 * GPU and a decode GPU, 300 Poisson requests. */
static hl_serve_cfg disagg_cfg(hl_job *j, double rate)
{
    *j = job_for("llama-3.1-8b", "H100-SXM", 2, 2);
    j->gpus = 1;
    hl_serve_cfg c;
    hl_serve_init(&c, j);
    c.disagg = 1;
    c.decode_job = *j;
    c.rate = rate;
    c.requests = 300;
    c.seed = 5;
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 256;
    c.input.hi = 2048;
    c.output.lo = 16;
    c.output.hi = 256;
    c.keep_requests = 1;
    return c;
}

/* With free transfers (scale-up bandwidth 1e15 B/s, no latency) and decode room
 * for everything, one clock over both pools gives what running the prefill
 * pool and then the decode pool gives: every request's TTFT and end-to-end time. */
static void test_concurrent_equals_sequential(void **state)
{
    (void)state;
    hl_job j;
    hl_serve_cfg c = disagg_cfg(&j, 6);
    for (hl_job *p = &c.job; p; p = p == &c.job ? &c.decode_job : NULL) {
        p->cluster.scaleup_bw = p->cluster.gpu.scaleup_bw = 1e15; /* the largest prompt's KV in 0.3 us */
        p->cluster.scaleup_latency = p->cluster.gpu.scaleup_latency = 0;
    }
    c.kv_blocks = 1e7; /* 1.6e8 tokens in each pool */
    hl_serve_result a, b;
    hl_err e;
    assert_ok(hl_serve_run(&c, &a, &e), &e);
    c.disagg_clock = HL_DISAGG_SEQUENTIAL;
    assert_ok(hl_serve_run(&c, &b, &e), &e);
    for (int64_t i = 0; i < a.requests; i++) {
        assert_rel(a.reqs[i].ttft_s, b.reqs[i].ttft_s, 1e-9, "TTFT, concurrent = sequential");
        assert_rel(a.reqs[i].e2e_s, b.reqs[i].e2e_s, 1e-9, "end-to-end, concurrent = sequential");
    }
    assert_rel(a.tpot_s.mean, b.tpot_s.mean, 1e-9, "mean TPOT");
    assert_rel(a.duration_s, b.duration_s, 1e-9, "duration");
    hl_serve_result_free(&a);
    hl_serve_result_free(&b);
}

/* An undersized decode pool (its GPU keeps 24% of HBM: 1,378 blocks of KV after
 * 16 GB of weights, room for about 19 mean requests; the prefill GPU likewise) at 20 requests/s: decode
 * room runs out, the prefill GPU keeps finished prompts' KV until the decode
 * side admits them, and with its own cache full of them it stalls: prefill
 * steps in the step log (pool 1) carry stall time. A closed loop (8 clients)
 * runs on the same deployment. */
static void test_backpressure_and_closed_loop(void **state)
{
    (void)state;
    hl_job j;
    hl_serve_cfg c = disagg_cfg(&j, 20);
    c.decode_job.mem_util = 0.24;
    c.job.mem_util = 0.24;
    c.keep_steps = 1;
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    double stalled = 0;
    int64_t prefill_steps = 0;
    for (int64_t i = 0; i < r.n_steps_log; i++)
        if (r.steps_log[i].pool == 1) {
            prefill_steps++;
            stalled += r.steps_log[i].stall_s;
        }
    printf("prefill steps %lld, stalled %.3f s of %.3f s; decode KV blocks %g\n", (long long)prefill_steps, stalled,
           r.duration_s, r.kv_blocks_total);
    assert_true(prefill_steps > 0);
    assert_true(stalled > 0.05 * r.duration_s);
    assert_int_equal(r.requests, 300);
    hl_serve_result_free(&r);
    c = disagg_cfg(&j, 1);
    c.rate = 0;
    c.arrival = HL_ARRIVAL_CONCURRENCY;
    c.concurrency = 8;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_int_equal(r.requests, 300);
    printf("closed loop: %.3g requests in the system on average\n", r.mean_in_system);
    assert_true(r.mean_in_system > 6 && r.mean_in_system <= 8 + 1e-9);
    hl_serve_result_free(&r);
}

/* Preemption in an undersized decode pool (600 KV blocks of 16 tokens per pool: a
 * prompt of up to 2,048 + 256 tokens takes up to 144 blocks, so about 5 fit) under a
 * closed loop of 24 clients: decoding requests run out of blocks and are preempted
 * to recompute while the pool holds room for transfers in flight. The recompute
 * waits behind the requests whose KV has arrived (they cost no room) and ahead of
 * new transfers, and a decode rank with only recomputes that do not fit waits for
 * the transfers in flight to land. It used to stop with "no request could be
 * scheduled" (a recompute at the head of the queue, the blocks it needed held for
 * arrived requests behind it). Every request finishes, and Little's law holds with
 * the stalls counted (a stalled group's queue is in the system). */
static void test_decode_preemption_with_transfers(void **state)
{
    (void)state;
    hl_job j;
    hl_serve_cfg c = disagg_cfg(&j, 0);
    c.arrival = HL_ARRIVAL_CONCURRENCY;
    c.concurrency = 24;
    c.kv_blocks = 600;
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    printf("decode preemptions %lld, %.3g requests in the system\n", (long long)r.preemptions, r.mean_in_system);
    assert_int_equal(r.requests, 300);
    assert_true(r.preemptions > 0);
    for (int64_t i = 0; i < r.requests; i++) {
        assert_true(r.reqs[i].e2e_s >= r.reqs[i].ttft_s);
        assert_true(r.reqs[i].output >= 16);
    }
    double w = 0; /* Little's law: L = the requests' time in the system over the run */
    for (int64_t i = 0; i < r.requests; i++)
        w += r.reqs[i].e2e_s;
    assert_rel(r.mean_in_system, w / r.duration_s, 0.02, "Little's law with stalls and preemption");
    hl_serve_result_free(&r);
}

static void test_errors(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    j.gpus = 2;
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.replicas = 5; /* 5 x 2 GPUs on 8 */
    hl_serve_result r;
    hl_err e;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "'replicas'");
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "do not fit");
    assert_fails_with(hl_serve_set_string(&c, "router", "fastest", &e), HL_EINVAL, &e, "router");
    j.gpus = 0;
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.replicas = 3; /* 8 GPUs do not split in 3 */
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "'replicas'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lone_request_is_one_replica),
        cmocka_unit_test(test_lockstep_dp_moe),
        cmocka_unit_test(test_littles_law_replicas),
        cmocka_unit_test(test_concurrent_equals_sequential),
        cmocka_unit_test(test_backpressure_and_closed_loop),
        cmocka_unit_test(test_decode_preemption_with_transfers),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
