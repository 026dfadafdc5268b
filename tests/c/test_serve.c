/* Serving scheduler: a hand-worked schedule step by step, concurrency 1 equal
 * to hl_sim_run, Little's law, goodput monotone in the SLO, preemption,
 * traces and bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "serve_int.h"
#include "serve_sched_int.h"
#include "step_int.h"

/* Time of one iteration from the per-step model (the scheduler is under test, not it). */
static double step_time(hl_stepper *st, double dec, double ctx_mean, const hl_iter_chunk *ch, int n, double rows)
{
    hl_iter it = {dec, ctx_mean, ctx_mean, n, ch, rows, 0, 0};
    double t;
    hl_err e;
    assert_ok(hl_stepper_time(st, &it, &t, &e), &e);
    return t;
}

/* The three-request trace workload of the hand-worked schedules. */
static hl_serve_cfg three_requests(const hl_job *j, hl_trace_req *tr, int chunked)
{
    hl_serve_cfg c;
    hl_serve_init(&c, j);
    c.arrival = HL_ARRIVAL_TRACE;
    c.trace = tr;
    c.n_trace = 3;
    c.input.kind = c.output.kind = HL_LEN_TRACE;
    c.token_budget = 8;
    c.chunk = chunked ? 8 : 0; /* a chunk has no effect without chunking (refused) */
    c.chunked_prefill = chunked;
    c.block_tokens = 4;
    c.kv_blocks = 100;
    c.keep_requests = c.keep_steps = 1;
    return c;
}

/* Three requests, token budget 8, chunks of up to 8, blocks of 4 tokens:
 *   A: arrival 0, input 10, output 3     B: arrival 0, input 4, output 2
 *   C: arrival d1/2 (during step 1), input 3, output 1
 * Chunked (decodes first, then running prompts, then the queue FCFS):
 *   step 1 (t=0):   A prefills 8 tokens @0 (budget spent; B waits). KV: A 2 blocks.
 *   step 2:         A 2 @8 (ends its prompt: first token), B 4 @0 (whole prompt: first token),
 *                   C 2 @0 (budget 2 left). Sampling rows: A, B. KV: A 3, B 1, C 1 = 5.
 *   step 3:         A decodes at ctx 10, B at ctx 4 (needs a 2nd block), C 1 @2 (ends: first
 *                   and only token). B reaches 2 tokens: done; C done. KV: A 3 (11 tokens).
 *   step 4:         A decodes at ctx 11: 3rd token, done. KV 0.
 * So TTFT A = TTFT B = d1 + d2; C: ttft = d1/2 + d2 + d3, queue = d1/2; A: finish =
 * d1+d2+d3+d4, TPOT = (d3 + d4) / 2; B: TPOT = d3. */
static void test_hand_worked_schedule_chunked(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_stepper *st;
    hl_err e;
    assert_ok(hl_stepper_new(&j, 64, &st, &e), &e);
    hl_iter_chunk c1[] = {{8, 0}}, c2[] = {{2, 8}, {4, 0}, {2, 0}}, c3[] = {{1, 2}};
    double d1 = step_time(st, 0, 0, c1, 1, 0);
    double d2 = step_time(st, 0, 0, c2, 3, 2);
    double d3 = step_time(st, 2, (10 + 4) / 2.0, c3, 1, 3);
    double d4 = step_time(st, 1, 11, NULL, 0, 1);
    hl_stepper_free(st);
    hl_trace_req tr[] = {{0, 10, 3}, {0, 4, 2}, {d1 / 2, 3, 1}};
    hl_serve_cfg c = three_requests(&j, tr, 1);
    hl_serve_result r;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_int_equal(r.n_steps_log, 4);
    const int dec[] = {0, 0, 2, 1}, chunks[] = {1, 3, 1, 0};
    const double ptok[] = {8, 8, 1, 0}, kv[] = {2, 5, 3, 0}, dt[] = {d1, d2, d3, d4};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r.steps_log[i].decodes, dec[i]);
        assert_int_equal(r.steps_log[i].chunks, chunks[i]);
        assert_rel(r.steps_log[i].prefill_tokens, ptok[i], 0, "prefill tokens of step");
        assert_rel(r.steps_log[i].kv_used, kv[i], 0, "KV blocks after step");
        assert_rel(r.steps_log[i].dt_s, dt[i], 1e-12, "step time");
    }
    assert_rel(r.reqs[0].ttft_s, d1 + d2, 1e-12, "TTFT A");
    assert_rel(r.reqs[1].ttft_s, d1 + d2, 1e-12, "TTFT B");
    assert_rel(r.reqs[2].ttft_s, d1 / 2 + d2 + d3, 1e-12, "TTFT C");
    assert_rel(r.reqs[2].queue_s, d1 / 2, 1e-12, "queue C");
    assert_rel(r.reqs[0].e2e_s, d1 + d2 + d3 + d4, 1e-12, "e2e A");
    assert_rel(r.reqs[0].tpot_s, (d3 + d4) / 2, 1e-12, "TPOT A");
    assert_rel(r.reqs[1].tpot_s, d3, 1e-12, "TPOT B");
    assert_rel(r.duration_s, d1 + d2 + d3 + d4, 1e-12, "duration");
    /* in system: A, B over all of 1-2 (2 * (d1 + d2)); C from d1/2 to its end; A, B, C in 3; A in 4 */
    double area = 2 * d1 + 2 * d2 + (d1 / 2 + d2) + 3 * d3 + d4;
    assert_rel(r.mean_in_system, area / (d1 + d2 + d3 + d4), 1e-12, "mean in system");
    hl_serve_result_free(&r);
}

/* The three requests without chunking (vLLM v0: a prefill-only step when prompts fit, whole
 * prompts), A's prompt now 8 = the budget (a prompt over it is refused: test_unchunked_over_budget):
 *   step 1: A's whole prompt (8, the budget: B waits). step 2: B (4) and C (3) prefill, A waits.
 *   step 3: A decodes at 8, B at 4 (B done).          step 4: A decodes at 9 (done).
 * C arrives at d1/2 < d1 and finishes at the end of step 2. */
static void test_hand_worked_schedule_unchunked(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_stepper *st;
    hl_err e;
    assert_ok(hl_stepper_new(&j, 64, &st, &e), &e);
    hl_iter_chunk c1[] = {{8, 0}}, c2[] = {{4, 0}, {3, 0}};
    double d1 = step_time(st, 0, 0, c1, 1, 1);
    double d2 = step_time(st, 0, 0, c2, 2, 2);
    double d3 = step_time(st, 2, 6, NULL, 0, 2); /* mean context (8 + 4) / 2 */
    double d4 = step_time(st, 1, 9, NULL, 0, 1);
    hl_stepper_free(st);
    hl_trace_req tr[] = {{0, 8, 3}, {0, 4, 2}, {d1 / 2, 3, 1}};
    hl_serve_cfg c = three_requests(&j, tr, 0);
    hl_serve_result r;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_int_equal(r.n_steps_log, 4);
    const int dec[] = {0, 0, 2, 1}, chunks[] = {1, 2, 0, 0};
    const double dt[] = {d1, d2, d3, d4};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r.steps_log[i].decodes, dec[i]);
        assert_int_equal(r.steps_log[i].chunks, chunks[i]);
        assert_rel(r.steps_log[i].dt_s, dt[i], 1e-12, "step time");
    }
    assert_rel(r.reqs[0].ttft_s, d1, 1e-12, "TTFT A");
    assert_rel(r.reqs[1].ttft_s, d1 + d2, 1e-12, "TTFT B");
    assert_rel(r.reqs[2].ttft_s, d1 / 2 + d2, 1e-12, "TTFT C");
    assert_rel(r.reqs[0].tpot_s, (d2 + d3 + d4) / 2, 1e-12, "TPOT A (waits through step 2)");
    hl_serve_result_free(&r);
}

/* chunked_prefill = false with a prompt longer than token_budget is refused (vLLM refuses
 * max_num_batched_tokens < max_model_len without chunked prefill), naming the field, the value
 * and the bound: a trace's first such request, a fixed input or input.max up front, a normal
 * length drawn without max and a session's turn (history + input) when the run makes them. */
static void test_unchunked_over_budget(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_result r;
    hl_err e;
    hl_trace_req tr[] = {{0, 8, 3}, {0, 12, 2}, {0.1, 9, 1}}; /* request 2 is the first over 8 */
    hl_serve_cfg c = three_requests(&j, tr, 0);
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e,
                      "serve field 'trace': request 2 has a prompt of 12 tokens, more than token_budget = 8");
    c.chunked_prefill = 1; /* chunked, the same trace runs */
    c.chunk = 8;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    hl_serve_result_free(&r);

    hl_serve_init(&c, &j);
    c.chunked_prefill = 0;
    c.rate = 1;
    c.requests = 20;
    c.token_budget = 2048;
    c.input.mean = 2049;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e,
                      "serve field 'token_budget': 2048 tokens with chunked_prefill = false, but prompts reach 2049 "
                      "tokens (input)");
    c.input.mean = 2048; /* exactly the budget: runs */
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    hl_serve_result_free(&r);
    c.input.kind = HL_LEN_UNIFORM;
    c.input.mean = 0;
    c.input.lo = 100;
    c.input.hi = 3000;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "but prompts reach 3000 tokens (input.max)");
    c.input.kind = HL_LEN_NORMAL; /* no max: 20 draws of N(2000, 500) pass 2048 (P = 0.46 each) */
    c.input.lo = c.input.hi = 0;
    c.input.mean = 2000;
    c.input.std = 500;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "serve field 'token_budget': request ");

    hl_serve_init(&c, &j); /* turns of 100 + 100: turn 2's prompt is 100 + 100 + 100 = 300 > 250 */
    c.chunked_prefill = 0;
    c.concurrency = 1;
    c.requests = 4;
    c.token_budget = 250;
    c.input.mean = 100;
    c.output.mean = 100;
    c.session_turns = 2;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e,
                      "a conversation's turn 2 has a prompt of 300 tokens, more than token_budget = 250");
}

/* Open-loop sessions (attack pass 5): a later turn is released behind every first turn drawn up
 * front; keeping arrival order by insertion moved it past all of them, about n^2 / 8 record moves
 * (20,000 requests: ~5e7; 1e6 did not end in 300 s). Through the heap each arrival and each release
 * moves at most one record: at most 2 n. A closed loop keeps insertion, bounded by its clients. */
static void test_session_release_is_linear(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_result r;
    hl_err e;
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.rate = 1000;
    c.requests = 20000;
    c.input.mean = 10;
    c.output.mean = 2;
    c.session_turns = 2;
    c.session_think_s = 0.1;
    int64_t m0 = hl_serve_record_moves();
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_int_equal((int64_t)r.requests, 20000);
    hl_serve_result_free(&r);
    int64_t moves = hl_serve_record_moves() - m0;
    assert_true(moves <= 2 * 20000);
    assert_true(moves > 0); /* later turns do land before first turns drawn earlier */
    hl_serve_init(&c, &j);
    c.concurrency = 16;
    c.requests = 4000;
    c.input.mean = 10;
    c.output.mean = 2;
    c.session_turns = 2;
    c.session_think_s = 0.1;
    m0 = hl_serve_record_moves();
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    hl_serve_result_free(&r);
    assert_true(hl_serve_record_moves() - m0 <= 16 * 4000); /* at most past every other client's next */
}

/* One request at a time: TTFT is hl_sim_run's prefill of batch 1 and TPOT its
 * decode, for dense TP, PP and MoE mappings (same operators, one model). */
static void test_concurrency_one_equals_simulate(void **state)
{
    (void)state;
    struct {
        const char *model, *gpu;
        int64_t gpus, tp, pp, ep;
        double in, out;
    } cases[] = {{"llama-3.1-70b", "H100-SXM", 8, 8, 1, 1, 2048, 256},
                 {"llama-3.1-70b", "H100-SXM", 8, 4, 2, 1, 1000, 100},
                 {"qwen3-30b-a3b", "H100-SXM", 2, 2, 1, 2, 4096, 64},
                 {"gpt-oss-120b", "B200", 2, 2, 1, 1, 3000, 300}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hl_job j = job_for(cases[i].model, cases[i].gpu, cases[i].gpus, cases[i].gpus);
        j.tp = cases[i].tp;
        j.pp = cases[i].pp;
        j.ep = cases[i].ep;
        j.input = cases[i].in;
        j.output = cases[i].out;
        hl_result ref;
        hl_err e;
        assert_ok(hl_sim_run(&j, &ref, &e), &e);
        hl_serve_cfg c;
        hl_serve_init(&c, &j);
        c.arrival = HL_ARRIVAL_CONCURRENCY;
        c.concurrency = 1;
        c.requests = 3;
        c.input.mean = cases[i].in;
        c.output.mean = cases[i].out;
        hl_serve_result r;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        printf("%s tp%lld pp%lld ep%lld: TTFT %.6g vs %.6g, TPOT %.6g vs %.6g\n", cases[i].model, (long long)j.tp,
               (long long)j.pp, (long long)j.ep, r.ttft_s.mean, ref.ttft_s, r.tpot_s.mean, ref.tpot_s);
        assert_rel(r.ttft_s.mean, ref.ttft_s, 0.01, "TTFT at concurrency 1");
        assert_rel(r.tpot_s.mean, ref.tpot_s, 0.01, "TPOT at concurrency 1");
        assert_rel(r.ttft_s.p99, ref.ttft_s, 0.01, "TTFT p99 at concurrency 1");
        hl_serve_result_free(&r);
    }
}

static hl_serve_cfg poisson_cfg(const hl_job *j, double rate, int64_t n)
{
    hl_serve_cfg c;
    hl_serve_init(&c, j);
    c.rate = rate;
    c.requests = n;
    c.seed = 7;
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 128;
    c.input.hi = 2048;
    c.output.lo = 16;
    c.output.hi = 512;
    return c;
}

/* Little's law L = lambda W: the time-average number of requests in the system
 * (integrated step by step) equals the configured arrival rate times the mean
 * end-to-end time, within 2% over 50,000 Poisson arrivals (the sampled rate
 * itself is within 1/sqrt(50000) = 0.45% of the configured one, one sigma). */
static void test_littles_law(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 8;
    const double rate = 8;
    hl_serve_cfg c = poisson_cfg(&j, rate, 50000);
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    printf("L = %.4g, lambda W = %.4g * %.4g = %.4g, running %.4g\n", r.mean_in_system, rate, r.e2e_s.mean,
           rate * r.e2e_s.mean, r.mean_running);
    assert_true(r.mean_running > 5); /* a loaded system, not one request at a time */
    assert_rel(r.mean_in_system, rate * r.e2e_s.mean, 0.02, "Little's law");
    hl_serve_result_free(&r);
}

/* The decode run-ahead (iterations with the same members advanced without the
 * per-request bookkeeping) gives the results of scheduling every iteration
 * (keep_steps turns the run-ahead off). */
static void test_run_ahead_equals_step_by_step(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 8;
    for (int load = 0; load < 2; load++) {
        hl_serve_cfg c = poisson_cfg(&j, load ? 12 : 1.5, 1500);
        c.kv_blocks = load ? 6000 : 0; /* the loaded run also preempts */
        hl_serve_result a, b;
        hl_err e;
        assert_ok(hl_serve_run(&c, &a, &e), &e);
        c.keep_steps = 1;
        assert_ok(hl_serve_run(&c, &b, &e), &e);
        assert_int_equal(a.steps, b.steps);
        assert_int_equal(a.preemptions, b.preemptions);
        assert_rel(a.ttft_s.mean, b.ttft_s.mean, 1e-9, "TTFT mean");
        assert_rel(a.tpot_s.p99, b.tpot_s.p99, 1e-9, "TPOT p99");
        assert_rel(a.e2e_s.mean, b.e2e_s.mean, 1e-9, "e2e mean");
        assert_rel(a.itl_s.mean, b.itl_s.mean, 1e-9, "ITL mean");
        assert_rel(a.mean_in_system, b.mean_in_system, 1e-9, "in system");
        assert_rel(a.kv_util_mean, b.kv_util_mean, 1e-9, "KV utilisation");
        printf("load %d: %lld steps, %lld preemptions\n", load, (long long)a.steps, (long long)a.preemptions);
        hl_serve_result_free(&a);
        hl_serve_result_free(&b);
    }
}

/* The memory budget (cfg.memory_budget; hl.serve: $HBDLAB_SERVE_MEMORY_BYTES) is checked in the run,
 * where the compact decision is made. By hand: one record per request is hl_serve_memory_bytes
 * (two trace rows, the scheduler's record, the queue entry, the summary row and a sort key: about
 * 270 B a request); compact records keep 5 doubles (40 B) per counted request (4 metrics and the
 * summary's sort scratch) and the records in flight, each sizeof(rq) plus its free-list entry and
 * its queue slot (8 B each, one unit), 1,024 at first. */
static void test_memory_budget_in_run(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c = poisson_cfg(&j, 20, 5000);
    c.input.hi = 512;
    c.output.hi = 128;
    hl_serve_result r;
    hl_err e;
    /* 5,000 requests: ~1.35 MB with a record each, which a budget of 1 MB refused; on compact records
     * 5,000 x 40 B = 0.2 MB of metrics + 1,024 x (sizeof(rq) + 16) B of records: it runs */
    c.memory_budget = 1e6;
    assert_true(hl_serve_memory_bytes(&c) > c.memory_budget);
    int64_t compact0 = hl_serve_compact_runs();
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_true(hl_serve_compact_runs() == compact0 + 1 && r.requests == 5000);
    hl_serve_result_free(&r);
    /* a budget under the metrics alone (0.2 MB) is refused before the run, naming the field and bytes */
    c.memory_budget = 1e5;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'requests': 5000 requests would take about");
    assert_non_null(strstr(e.msg, "on compact records, more than the budget of 0.0001 GB (HBDLAB_SERVE_MEMORY_BYTES)"));
    /* one record per request (a closed loop is never compact) is held to its own estimate */
    c.rate = 0;
    c.concurrency = 8;
    c.memory_budget = 1e6;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'requests': 5000 requests would take about");
    assert_null(strstr(e.msg, "compact"));
    c.memory_budget = 2 * hl_serve_memory_bytes(&c);
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    hl_serve_result_free(&r);
    /* records in flight: 3,000 requests within 3 ms all queue (test_serve_reference's growth case);
     * a budget for the 2,900 counted requests' metrics and 1,500 records lets the run start (1,024)
     * and refuses it as the queue passes 1,500, naming the requests in flight; twice that runs */
    hl_serve_cfg b = poisson_cfg(&j, 1e6, 3000);
    b.input.lo = 16;
    b.input.hi = 200;
    b.output.lo = 1;
    b.output.hi = 30;
    b.warmup = 100;
    double per = (double)sizeof(rq) + 16, metrics = 2900 * 40.0;
    b.memory_budget = metrics + 1500 * per;
    assert_fails_with(hl_serve_run(&b, &r, &e), HL_EINVAL, &e, "field 'requests': ");
    assert_non_null(strstr(e.msg, "requests in flight at t = "));
    b.memory_budget = metrics + 3100 * per;
    assert_ok(hl_serve_run(&b, &r, &e), &e);
    assert_true(r.requests == 2900);
    hl_serve_result_free(&r);
}

/* The ITL histogram's cached bin edges (the run-ahead files a run of gaps by
 * them without a log each): the edge of bin b is the first gap hl_itl_add
 * files in b, and the gap just below it falls in b - 1 (1.005^b us, the bin
 * width: 1e-6 * exp(b ln 1.005); ln(2e-3 / 1e-6) / ln 1.005 = 1523.9 puts
 * 2 ms in bin 1523). */
static void test_itl_bin_edges(void **state)
{
    (void)state;
    static hl_itl_hist h;
    assert_int_equal(hl_itl_bin(2e-3), 1523);
    assert_int_equal(hl_itl_bin(0), 0);
    assert_int_equal(hl_itl_bin(1e9), HL_ITL_BINS - 1);
    for (int b = 1; b < HL_ITL_BINS; b += 37) {
        double lo, hi;
        hl_itl_bin_range(&h, b, &lo, &hi);
        assert_true(lo > 0 && lo < hi);
        assert_int_equal(hl_itl_bin(lo), b);
        assert_int_equal(hl_itl_bin(nextafter(lo, 0)), b - 1);
        if (b + 1 < HL_ITL_BINS) {
            assert_int_equal(hl_itl_bin(nextafter(hi, 0)), b);
            assert_int_equal(hl_itl_bin(hi), b + 1);
        } else {
            assert_true(isinf(hi));
        }
        assert_rel(lo, 1e-6 * pow(1.005, b), 1e-9, "bin edge"); /* bins 0.5% wide */
    }
    /* hl_itl_add finds a gap's bin from the edges, without the log: the same bin as hl_itl_bin for
     * gaps log-uniform over 1e-8 .. 1e6 s, at every 13th edge and the doubles either side of it,
     * and at 0, 1e-6 (bin 0's top) and beyond the last bin */
    static hl_itl_hist g;
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double gap = 1e-8 * pow(1e14, (double)(x >> 11) / 0x1p53);
        hl_itl_add(&g, gap, 1);
        if (g.last_bin != hl_itl_bin(gap))
            fail_msg("gap %.17g: bin %d, hl_itl_bin %d", gap, g.last_bin, hl_itl_bin(gap));
    }
    for (int b = 1; b < HL_ITL_BINS; b += 13) {
        double lo, hi, at[3];
        hl_itl_bin_range(&h, b, &lo, &hi);
        at[0] = nextafter(lo, 0), at[1] = lo, at[2] = nextafter(lo, INFINITY);
        for (int k = 0; k < 3; k++) {
            g.last_lo = g.last_hi = 0; /* no last bin: looked up */
            hl_itl_add(&g, at[k], 1);
            assert_int_equal(g.last_bin, hl_itl_bin(at[k]));
        }
    }
    double odd[] = {0, 1e-6, 1e9, 1e300};
    for (int k = 0; k < 4; k++) {
        g.last_lo = g.last_hi = 0;
        hl_itl_add(&g, odd[k], 1);
        assert_int_equal(g.last_bin, hl_itl_bin(odd[k]));
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The metrics' sort (a radix sort from 4,096 values): the mean, percentiles and
 * max of 20,000 values of both signs, with ties, zeros and a wide range, equal
 * those of a qsort'ed copy bit for bit (nearest rank: p50 of 20,000 is the
 * 10,000th, p90 the 18,000th, p99 the 19,800th; the mean sums them in order);
 * with a -0 among them the same values come out too. */
static void test_metric_sort(void **state)
{
    (void)state;
    enum { N = 20000 };
    static hl_serve_req q[N];
    static double want[N];
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    uint64_t g = 12345;
    for (int neg0 = 0; neg0 < 2; neg0++) {
        for (int i = 0; i < N; i++) {
            g ^= g << 13;
            g ^= g >> 7;
            g ^= g << 17;
            double u = (double)(g >> 11) / 0x1p53;
            double v = i % 7 == 0 ? 0.25 : i % 11 == 0 ? 0 : (u - 0.3) * pow(10, (double)(g % 13) - 6);
            if (neg0 && i == 77)
                v = -0.0;
            q[i] = (hl_serve_req){
                .arrival_s = 0, .input = 1, .output = 2, .first_token_s = 1, .finish_s = 2, .queue_s = v};
            want[i] = v;
        }
        hl_serve_result r = {0};
        r.gpus = 1;
        hl_itl_hist itl = {0};
        hl_err e;
        assert_ok(hl_serve_summarise(&c, q, N, &itl, &r, &e), &e);
        qsort(want, N, sizeof *want, cmp_d);
        double sum = 0;
        for (int i = 0; i < N; i++)
            sum += want[i];
        assert_true(r.queue_s.mean == sum / N);
        assert_true(r.queue_s.p50 == want[9999] && r.queue_s.p90 == want[17999] && r.queue_s.p99 == want[19799]);
        assert_true(r.queue_s.max == want[N - 1] && r.queue_s.n == N);
        hl_serve_result_free(&r);
    }
}

/* The metrics' sort on shapes of data its buckets meet (the MSD pass splits the keys' span, so
 * a narrow range, an atom, few values or a span of 17 decades each fill its buckets differently),
 * at sizes from the radix path's least (4,096, one MSD bit and six passes of a bucket) to
 * 300,000: mean, p50, p90, p99 and max equal those of a qsort'ed copy bit for bit. */
static void test_metric_sort_shapes(void **state)
{
    (void)state;
    enum { N = 300000 };
    hl_serve_req *q = calloc(N, sizeof *q);
    double *want = malloc(N * sizeof *want);
    hl_itl_hist *itl = calloc(1, sizeof *itl);
    assert_true(q && want && itl);
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    uint64_t g = 99;
    const int64_t sizes[3] = {4096, 50021, N};
    for (int t = 0; t < 18; t++) {
        int64_t n = sizes[t % 3];
        for (int64_t i = 0; i < n; i++) {
            g ^= g << 13;
            g ^= g >> 7;
            g ^= g << 17;
            double u = (double)(g >> 11) / 0x1p53, v;
            switch (t / 3) {
            case 0: v = u; break;                                        /* uniform */
            case 1: v = 0.05 + u * 1e-9; break;                          /* narrow */
            case 2: v = i % 3 ? 0.25 : u * 100; break;                   /* an atom */
            case 3: v = exp((u - 0.5) * 40); break;                      /* 17 decades */
            case 4: v = (u - 0.5) * pow(10, (double)(g % 9) - 4); break; /* both signs */
            default: v = (double)(g % 1000) * 0.001; break;              /* few values */
            }
            q[i] = (hl_serve_req){
                .arrival_s = 0, .input = 1, .output = 2, .first_token_s = 1, .finish_s = 2, .queue_s = v};
            want[i] = v;
        }
        hl_serve_result r = {0};
        r.gpus = 1;
        hl_err e;
        assert_ok(hl_serve_summarise(&c, q, n, itl, &r, &e), &e);
        qsort(want, (size_t)n, sizeof *want, cmp_d);
        double sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += want[i];
        int64_t k50 = (int64_t)ceil(0.5 * (double)n) - 1, k90 = (int64_t)ceil(0.9 * (double)n) - 1,
                k99 = (int64_t)ceil(0.99 * (double)n) - 1;
        assert_true(r.queue_s.mean == sum / (double)n);
        assert_true(r.queue_s.p50 == want[k50] && r.queue_s.p90 == want[k90] && r.queue_s.p99 == want[k99]);
        assert_true(r.queue_s.max == want[n - 1] && r.queue_s.n == n);
        hl_serve_result_free(&r);
    }
    free(q);
    free(want);
    free(itl);
}

/* The analytical steady state follows the scheduler below saturation: TPOT and
 * the running count within 10%, TTFT within 40% (it leaves out the queueing of
 * prompts behind each other), and it marks an overloaded rate unstable. */
static void test_steady_state_follows_scheduler(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 8;
    const double rates[] = {1, 4, 8, 12};
    for (int i = 0; i < 4; i++) {
        hl_serve_cfg c = poisson_cfg(&j, rates[i], 3000);
        hl_serve_steady a;
        hl_serve_result r;
        hl_err e;
        assert_ok(hl_serve_steady_run(&c, &a, &e), &e);
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        printf("rate %g: TPOT %.4g vs %.4g, TTFT %.4g vs %.4g, running %.4g vs %.4g\n", rates[i], a.tpot_s,
               r.tpot_s.mean, a.ttft_s, r.ttft_s.mean, a.running, r.mean_running);
        assert_true(a.stable);
        assert_rel(a.tpot_s, r.tpot_s.mean, 0.10, "steady TPOT");
        assert_rel(a.running, r.mean_running, 0.10, "steady running");
        assert_rel(a.ttft_s, r.ttft_s.mean, 0.40, "steady TTFT");
        hl_serve_result_free(&r);
    }
    hl_serve_cfg c = poisson_cfg(&j, 30, 100);
    hl_serve_steady a;
    hl_err e;
    assert_ok(hl_serve_steady_run(&c, &a, &e), &e);
    assert_false(a.stable); /* 30 req/s x ~1350 tokens exceeds what TP8 H100 serves (~14 req/s) */
}

/* Disaggregated prefill/decode, one request at a time (Llama-3.1-70B, prefill
 * pool TP4 on GPUs of an H100 cluster of 16 in HBDs of 8, decode pool TP8):
 * TTFT is the prefill pool's hl_sim_run prefill; the KV cache of the prompt
 * moves as one Send/Recv per GPU of the prefill pool's shard: 2 (K, V) * 80
 * layers * 8 KV heads * 128 * 2 B = 327,680 B per token, a quarter per GPU at
 * TP4 = 81,920 B per token, times the input; over scale-up when both pools fit
 * one HBD (4 + 4 <= 8), over scale-out otherwise (4 + 8 > 8). The request then
 * decodes on the decode pool: e2e = TTFT + transfer + (output - 1) TPOT of the
 * decode pool's hl_sim_run. */
static void test_disaggregated_one_request(void **state)
{
    (void)state;
    for (int wide = 0; wide < 2; wide++) {
        hl_job p = job_for("llama-3.1-70b", "H100-SXM", 16, 8), d = p;
        p.tp = 4;
        p.gpus = 4;
        d.tp = wide ? 8 : 4;
        d.gpus = wide ? 8 : 4;
        p.input = d.input = 3000;
        p.output = d.output = 200;
        hl_result rp, rd;
        hl_err e;
        assert_ok(hl_sim_run(&p, &rp, &e), &e);
        assert_ok(hl_sim_run(&d, &rd, &e), &e);
        hl_coll_in in = {HL_SENDRECV, HL_ALGO_AUTO, 81920.0 * 3000, 2, wide ? 1 : 2, 0};
        hl_coll_out co;
        assert_ok(hl_coll_time(&p.cluster, &in, &co, &e), &e);
        hl_serve_cfg c;
        hl_serve_init(&c, &p);
        c.disagg = 1;
        c.decode_job = d;
        hl_trace_req tr[] = {{0, 3000, 200}, {100, 3000, 200}}; /* far apart: one at a time */
        c.arrival = HL_ARRIVAL_TRACE;
        c.trace = tr;
        c.n_trace = 2;
        c.input.kind = c.output.kind = HL_LEN_TRACE;
        c.keep_requests = 1;
        hl_serve_result r;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        printf("disagg %s: TTFT %.6g vs %.6g, transfer %.6g vs %.6g (%s)\n", wide ? "TP4 -> TP8" : "TP4 -> TP4",
               r.ttft_s.mean, rp.ttft_s, r.reqs[0].kv_transfer_s, co.time_s,
               r.kv_link == HL_KV_LINK_SCALEUP ? "scale-up" : "scale-out");
        assert_int_equal(r.kv_link, wide ? HL_KV_LINK_SCALEOUT : HL_KV_LINK_SCALEUP);
        assert_int_equal(co.hbds, wide ? 2 : 1);
        assert_rel(r.reqs[0].kv_transfer_s, co.time_s, 1e-12, "KV transfer = Send/Recv of the shard");
        assert_rel(r.ttft_s.mean, rp.ttft_s, 0.01, "TTFT = prefill pool's prefill");
        assert_rel(r.e2e_s.mean, rp.ttft_s + co.time_s + 199 * rd.tpot_s, 0.01, "e2e");
        assert_int_equal(r.gpus, 4 + d.gpus);
        hl_serve_result_free(&r);
    }
}

/* Looser SLOs never lower the attainment or the goodput. */
static void test_goodput_monotone_in_slo(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 8;
    hl_serve_cfg c = poisson_cfg(&j, 12, 3000);
    const double ttft[] = {0.05, 0.1, 0.2, 0.5, 1, 5}, tpot[] = {0.01, 0.02, 0.03, 0.05, 0.1};
    double prev = -1, first = -1, last = -1;
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 5; b++) {
            c.slo_ttft_s = ttft[a];
            c.slo_tpot_s = tpot[b];
            hl_serve_result r;
            hl_err e;
            assert_ok(hl_serve_run(&c, &r, &e), &e);
            if (b == 0)
                prev = -1;
            assert_true(r.goodput_rps >= prev);
            prev = r.goodput_rps;
            if (a == 0 && b == 0)
                first = r.slo_attainment;
            last = r.slo_attainment;
            hl_serve_result_free(&r);
        }
    printf("attainment %.3f at the tightest SLO, %.3f at the loosest\n", first, last);
    assert_true(first < last);    /* the SLOs bite: the test can fail */
    for (int b = 0; b < 5; b++) { /* and along the TTFT axis */
        prev = -1;
        for (int a = 0; a < 6; a++) {
            c.slo_ttft_s = ttft[a];
            c.slo_tpot_s = tpot[b];
            hl_serve_result r;
            hl_err e;
            assert_ok(hl_serve_run(&c, &r, &e), &e);
            assert_true(r.slo_attainment >= prev);
            prev = r.slo_attainment;
            hl_serve_result_free(&r);
        }
    }
}

/* A KV cache too small for the load preempts (recompute) and still finishes
 * every request with all its tokens; utilisation never exceeds 1. */
static void test_preemption(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c = poisson_cfg(&j, 50, 400);
    c.kv_blocks = 600; /* 9600 tokens: a few sequences of up to 2560 */
    c.keep_requests = 1;
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    printf("preemptions %lld, KV max %.3f\n", (long long)r.preemptions, r.kv_util_max);
    assert_true(r.preemptions > 0);
    assert_true(r.kv_util_max <= 1);
    int64_t pre = 0;
    for (int64_t i = 0; i < r.requests; i++) {
        assert_true(r.reqs[i].finish_s >= r.reqs[i].first_token_s);
        assert_true(r.reqs[i].first_token_s > r.reqs[i].arrival_s);
        pre += r.reqs[i].preemptions;
    }
    assert_int_equal(pre, r.preemptions);
    hl_serve_result_free(&r);
    /* reserving each sequence's blocks at admission never preempts, and admits fewer at once */
    c.reserve = 1;
    hl_serve_result q;
    assert_ok(hl_serve_run(&c, &q, &e), &e);
    assert_int_equal(q.preemptions, 0);
    assert_true(q.kv_util_max <= 1);
    /* warm-up requests run but are not counted */
    c.warmup = 100;
    hl_serve_result w;
    assert_ok(hl_serve_run(&c, &w, &e), &e);
    assert_int_equal(w.ttft_s.n, 300);
    assert_int_equal(w.steps, q.steps);
    assert_true(w.saturated_output_tps > 0);
    hl_serve_result_free(&q);
    hl_serve_result_free(&w);
}

static void test_trace_parse(void **state)
{
    (void)state;
    const char *csv = "output,arrival_s,input\n# comment\n10,0.5,100\n\n20,0,200\n";
    hl_trace_req *t;
    int64_t n;
    hl_err e;
    assert_ok(hl_serve_trace_parse(csv, strlen(csv), "t.csv", &t, &n, &e), &e);
    assert_int_equal(n, 2);
    assert_rel(t[0].arrival_s, 0.5, 0, "arrival");
    assert_rel(t[0].input, 100, 0, "input");
    assert_rel(t[1].output, 20, 0, "output");
    hl_serve_trace_free(t);
    const char *jl = "{\"arrival_s\": 1.5, \"input\": 7, \"output\": 3}\n{\"input\":8,\"output\":4,\"arrival_s\":2}\n";
    assert_ok(hl_serve_trace_parse(jl, strlen(jl), "t.jsonl", &t, &n, &e), &e);
    assert_int_equal(n, 2);
    assert_rel(t[1].input, 8, 0, "jsonl input");
    hl_serve_trace_free(t);
    const char *bad = "arrival_s,input,output\n0,10,5\n0.1,ten,5\n";
    assert_fails_with(hl_serve_trace_parse(bad, strlen(bad), "t.csv", &t, &n, &e), HL_EPARSE, &e, "t.csv line 3");
    const char *badj = "{\"arrival_s\": 1, \"input\": 7, \"output\": 3}\n{\"arrival_s\": 1, \"input\": 7}\n";
    assert_fails_with(hl_serve_trace_parse(badj, strlen(badj), "t.jsonl", &t, &n, &e), HL_EPARSE, &e, "t.jsonl line 2");
    const char *empty = "arrival_s,input,output\n\n";
    assert_fails_with(hl_serve_trace_parse(empty, strlen(empty), "e.csv", &t, &n, &e), HL_EPARSE, &e, "empty");
    const char *neg = "arrival_s,input,output\n-1,10,5\n";
    assert_fails_with(hl_serve_trace_parse(neg, strlen(neg), "n.csv", &t, &n, &e), HL_EPARSE, &e, "n.csv line 2");
    const char *nohdr = "a,b,c\n1,2,3\n";
    assert_fails_with(hl_serve_trace_parse(nohdr, strlen(nohdr), "h.csv", &t, &n, &e), HL_EPARSE, &e,
                      "h.csv line 1: the CSV header");
}

static void test_bad_input(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_result r;
    hl_err e;
    hl_serve_init(&c, &j);
    c.rate = -1;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'rate': -1");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.slo_ttft_s = 0;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'slo.ttft_s': 0");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.slo_tpot_s = 0;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'slo.tpot_s': 0");
    hl_serve_init(&c, &j);
    c.arrival = HL_ARRIVAL_TRACE;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "\"trace\" needs field 'trace'");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.input.kind = HL_LEN_UNIFORM;
    c.input.lo = 10;
    c.input.hi = 5;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'input'");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.token_budget = 0;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'token_budget'");
    hl_serve_init(&c, &j);
    c.disagg = 1;
    c.decode_job = j;
    c.arrival = HL_ARRIVAL_CONCURRENCY;
    c.concurrency = 2;
    c.disagg_clock = HL_DISAGG_SEQUENTIAL; /* one pool after the other: no closed loop */
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "closed loop");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.kv_blocks = 10; /* 160 tokens < 1024 + 128 */
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_ENOFIT, &e, "request 1");
}

/* Trace lines that the substring search got wrong: a string value "output" (refused as
 * malformed), a key inside a string ("input": 999 read as the input), a repeated key (the first
 * taken silently), a field under both names; a CSV with a byte-order mark (header refused). */
static void test_trace_hostile(void **state)
{
    (void)state;
    hl_trace_req *t;
    int64_t n;
    hl_err e;
    const char *val = "{\"type\": \"output\", \"arrival_s\": 0, \"input\": 10, \"output\": 4}\n";
    assert_ok(hl_serve_trace_parse(val, strlen(val), "v.jsonl", &t, &n, &e), &e);
    assert_true(n == 1 && t[0].input == 10 && t[0].output == 4);
    hl_serve_trace_free(t);
    const char *inner = "{\"note\": \"\\\"input\\\": 999\", \"arrival_s\": 0, \"input\": 10, \"output\": 4}\n";
    assert_ok(hl_serve_trace_parse(inner, strlen(inner), "i.jsonl", &t, &n, &e), &e);
    assert_true(n == 1 && t[0].input == 10);
    hl_serve_trace_free(t);
    const char *dup = "{\"arrival_s\": 0, \"input\": 10, \"output\": 4, \"input\": 5}\n";
    assert_fails_with(hl_serve_trace_parse(dup, strlen(dup), "d.jsonl", &t, &n, &e), HL_EPARSE, &e,
                      "d.jsonl line 1: malformed line (a key is repeated");
    const char *both = "{\"arrival_s\": 0, \"arrival\": 1, \"input\": 10, \"output\": 4}\n";
    assert_fails_with(hl_serve_trace_parse(both, strlen(both), "b.jsonl", &t, &n, &e), HL_EPARSE, &e,
                      "field 'arrival_s' is given under two names ('arrival')"); /* the field named (attack pass 4) */
    const char *sid = "{\"arrival_s\": 0, \"input\": 10, \"output\": 4, \"session\": \"a\"}\n";
    assert_fails_with(hl_serve_trace_parse(sid, strlen(sid), "s.jsonl", &t, &n, &e), HL_EPARSE, &e,
                      "field 'session' is a string, not a finite number (ids are whole numbers");
    const char *miss = "{\"arrival_s\": 0, \"input\": 10}\n";
    assert_fails_with(hl_serve_trace_parse(miss, strlen(miss), "m.jsonl", &t, &n, &e), HL_EPARSE, &e,
                      "malformed line (field 'output' is missing;");
    const char nul[] = "{\"arrival_s\": 0, \"input\": 10, \"output\": 4}\0x\n";
    assert_fails_with(hl_serve_trace_parse(nul, sizeof nul - 1, "n.jsonl", &t, &n, &e), HL_EPARSE, &e,
                      "n.jsonl line 1");
    const char *bom = "\xef\xbb\xbf"
                      "arrival_s,input,output\n0,10,4\n";
    assert_ok(hl_serve_trace_parse(bom, strlen(bom), "bom.csv", &t, &n, &e), &e);
    assert_true(n == 1 && t[0].input == 10);
    hl_serve_trace_free(t);
}

/* Ctrl-C while the summary sorts: 200,000 requests' TTFT, TPOT, end-to-end and queue times (the
 * radix sort's path, n >= 4096) stop with HL_EINTR at the first block of the first pass (they ran
 * to the end); without the flag the same summary sorts: p50 of TTFT 0..199,999 ms is rank
 * ceil(0.5 n) - 1 = 99,999, 99.999 s. */
static void test_summary_interrupt(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    enum { N = 200000 };
    hl_serve_req *q = calloc(N, sizeof *q);
    hl_itl_hist *itl = calloc(1, sizeof *itl);
    assert_non_null(q);
    assert_non_null(itl);
    for (int64_t i = 0; i < N; i++) { /* TTFT i ms, in reverse order */
        q[i].arrival_s = 0;
        q[i].first_token_s = (double)(N - 1 - i) * 1e-3;
        q[i].finish_s = q[i].first_token_s + 1;
        q[i].input = 100;
        q[i].output = 10;
    }
    hl_serve_result r;
    memset(&r, 0, sizeof r);
    r.gpus = 1;
    hl_err e;
    volatile int32_t flag = 1;
    hl_set_interrupt_flag(&flag);
    hl_status st = hl_serve_summarise(&c, q, N, itl, &r, &e);
    hl_set_interrupt_flag(NULL);
    assert_fails_with(st, HL_EINTR, &e, "serve interrupted while summarising 200000 requests");
    assert_ok(hl_serve_summarise(&c, q, N, itl, &r, &e), &e);
    assert_rel(r.ttft_s.p50, 99.999, 1e-12, "TTFT p50 after an uninterrupted sort");
    free(q);
    free(itl);
}

/* Limits that keep a hostile run from trapping or exhausting the caller. */
static void test_limits(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_result r;
    hl_err e;
    /* an interrupt requested before the run stops it at its first iteration (it used to run on) */
    volatile int32_t flag = 1;
    hl_serve_init(&c, &j);
    c.rate = 1;
    hl_set_interrupt_flag(&flag);
    hl_status st = hl_serve_run(&c, &r, &e);
    hl_set_interrupt_flag(NULL);
    assert_fails_with(st, HL_EINTR, &e, "serve interrupted at t = 0 s with 0 of 1000 requests done");
    /* the step log is capped: 300 requests 100 s apart, each alone (4,000 tokens take ~20 s), need
     * 1 prefill + 3,999 decode iterations each: 1.2e6 > 1e6 */
    hl_serve_init(&c, &j);
    c.arrival = HL_ARRIVAL_CONSTANT;
    c.rate = 0.01;
    c.requests = 300;
    c.output.mean = 4000;
    c.keep_steps = 1;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'keep_steps': the step log passed 1000000");
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.max_samples = 0;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "field 'max_samples': 0");
    /* memory per request, worked out from the structs: two trace copies 2 x 24 B, the
     * scheduler's state 13 doubles + an int64 + an int32 + 2 chars = 118 B, padded to 120 B, the
     * queue 8 B, the summary record 10 doubles + 2 int32 = 88 B, a sorted metric 8 B: 272 B;
     * 1e8 requests = 2.72e10 B */
    hl_serve_init(&c, &j);
    c.rate = 1;
    c.requests = 100000000;
    assert_rel(hl_serve_memory_bytes(&c), 2.72e10, 1e-12, "serve memory of 1e8 requests");
}

/* A closed loop of identical requests: with the default jittered starts the five clients never
 * prefill in one iteration; started together (start_jitter_s = 0, the old behaviour) every round
 * of five prompts is one iteration. Think time: a closed loop's throughput is clients / (e2e +
 * think), Little's law over the clients. */
static void test_closed_loop_desynchronises(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_result r;
    hl_err e;
    for (int jitter = 0; jitter < 2; jitter++) {
        hl_serve_init(&c, &j);
        c.concurrency = 5;
        c.requests = 200;
        c.input.mean = 1024;
        c.output.mean = 64;
        c.keep_steps = 1;
        if (!jitter)
            c.start_jitter_s = 0;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        int64_t together = 0, alone = 0;
        for (int64_t i = 0; i < r.n_steps_log; i++) {
            together += r.steps_log[i].chunks == 5;
            alone += r.steps_log[i].chunks == 1;
        }
        printf("start jitter %s: %lld iterations prefill 5 prompts, %lld one\n", jitter ? "default" : "0",
               (long long)together, (long long)alone);
        if (jitter) {
            assert_int_equal(together, 0);
            assert_true(alone > 100); /* most (more than half) of the 200 prompts alone in their iteration */
        } else {
            assert_int_equal(together, 40); /* 200 requests in 40 rounds of 5 */
        }
        hl_serve_result_free(&r);
    }
    hl_serve_init(&c, &j);
    c.concurrency = 4;
    c.requests = 400;
    c.input.mean = 512;
    c.output.mean = 32;
    c.think_s = 0.5;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    double little = 4 / (r.e2e_s.mean + 0.5); /* requests/s of 4 clients each cycling e2e + think */
    printf("think 0.5 s: %.4g req/s, Little %.4g\n", r.rps, little);
    assert_rel(r.rps, little, 0.1, "closed loop with think time");
    hl_serve_result_free(&r);
    hl_serve_init(&c, &j);
    c.rate = 2;
    c.think_s = 1;
    assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, "'think_s' has no effect without a closed loop");
}

/* Cost and energy at the served rate, recomputed from the step log: the GPU is provisioned
 * over the whole run (span = end of the last iteration) and busy during iterations, so
 *   energy = n pue (idle span + (load - idle) busy),
 *   USD    = n usd_per_gpu_hour span / 3600 + usd_per_kwh energy / 3.6e6,
 * and the in and out shares add up to it. A GPU without a price: USD fields NaN, energy kept. */
static void test_serve_cost(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_result r;
    hl_err e;
    hl_serve_init(&c, &j);
    c.arrival = HL_ARRIVAL_CONSTANT;
    c.rate = 2;
    c.requests = 40;
    c.input.mean = 512;
    c.output.mean = 32;
    c.keep_steps = 1;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    double busy = 0, span = 0;
    for (int64_t i = 0; i < r.n_steps_log; i++) {
        busy += r.steps_log[i].dt_s;
        span = r.steps_log[i].t_s + r.steps_log[i].dt_s;
    }
    const hl_cluster *cl = &j.cluster;
    double load = cl->gpu.power_w > 0 ? cl->gpu.power_w : cl->gpu.tdp_w;
    double energy = cl->pue * (cl->gpu.idle_w * span + (load - cl->gpu.idle_w) * busy);
    double per_hour = (cl->gpu.capex_usd + cl->scaleup_usd + cl->scaleout_usd) / (cl->amort_years * 8766.0);
    double usd = per_hour * span / 3600 + cl->usd_per_kwh * energy / 3.6e6;
    double generated = 40.0 * 32, in = 40.0 * 512, later = 40.0 * 31;
    printf("cost: %.6g USD over %.4g s (%.4g busy), %.4g J; $%.4g/Mtok in, $%.4g/Mtok out\n", usd, span, busy, energy,
           r.usd_per_mtok_in, r.usd_per_mtok_out);
    assert_true(cl->gpu.capex_usd > 0 && load > cl->gpu.idle_w && busy < span);
    assert_rel(r.usd_per_mtok * generated / 1e6, usd, 1e-9, "USD of the run");
    assert_rel(r.usd_per_mtok_in * in / 1e6 + r.usd_per_mtok_out * later / 1e6, usd, 1e-9, "in + out = the run");
    assert_rel(r.joules_per_token * generated, energy, 1e-9, "energy of the run");
    assert_rel(r.power_w, energy / span, 1e-9, "mean power");
    assert_rel(r.peak_power_w, load * cl->pue, 1e-12, "provisioned power");
    assert_rel(r.tokens_per_mw, r.output_tps / (load * cl->pue / 1e6), 1e-12, "tokens per MW");
    assert_rel(r.usd_per_hour, per_hour, 1e-12, "USD per hour");
    hl_serve_result_free(&r);
    c.job.cluster.gpu.capex_usd = 0; /* no price: unknown, never 0 */
    c.keep_steps = 0;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_true(isnan(r.usd_per_mtok) && isnan(r.usd_per_mtok_in) && isnan(r.usd_per_mtok_out));
    assert_rel(r.joules_per_token * generated, energy, 1e-9, "energy without a price");
    hl_serve_result_free(&r);
}

/* Speculative decoding in the scheduler: at concurrency 1 over 2,000 requests the mean TPOT is
 * hl_sim_run's expected TPOT (verify passes of gamma + 1 tokens after gamma draft passes, E =
 * (1 - alpha^(gamma+1)) / (1 - alpha) tokens a step) within 2%, for a dense and a MoE model and
 * a drafter of 1 or 0 layers; gamma = 0 is no speculation, field by field. */
static void test_speculative_decoding(void **state)
{
    (void)state;
    const struct {
        const char *model;
        int64_t gpus, tp, ep;
        double gamma, alpha, layers;
        int64_t npos;  /* > 0: per-position acceptance pos[0..npos) instead of alpha */
        double pos[3]; /* {0.9, 0.6, 0.3}: E = 1 + 0.9 + 0.54 + 0.162 = 2.602 tokens a step */
    } cases[] = {{"llama-3.1-8b", 1, 1, 1, 3, 0.7, 1, 0, {0}},
                 {"llama-3.1-8b", 1, 1, 1, 3, 0.8, 0, 0, {0}},
                 {"qwen3-30b-a3b", 2, 2, 2, 2, 0.6, 1, 0, {0}},
                 {"llama-3.1-8b", 1, 1, 1, 3, 0, 1, 3, {0.9, 0.6, 0.3}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hl_job j = job_for(cases[i].model, "H100-SXM", cases[i].gpus, cases[i].gpus);
        j.tp = cases[i].tp;
        j.ep = cases[i].ep;
        j.input = 1024;
        j.output = 128;
        j.spec_tokens = cases[i].gamma;
        j.spec_accept = cases[i].alpha;
        j.spec_draft_layers = cases[i].layers;
        hl_result ref;
        hl_err e;
        if (cases[i].npos > 0)
            assert_ok(hl_job_set_spec_accept(&j, cases[i].pos, cases[i].npos, &e), &e);
        assert_ok(hl_sim_run(&j, &ref, &e), &e);
        if (cases[i].npos > 0)
            assert_rel(ref.tokens_per_step, 2.602, 1e-12, "E of {0.9, 0.6, 0.3}, by hand");
        hl_serve_cfg c;
        hl_serve_init(&c, &j);
        c.concurrency = 1;
        c.requests = 2000;
        c.input.mean = 1024;
        c.output.mean = 128;
        hl_serve_result r;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        printf("%s gamma %g alpha %g (%lld positions) drafter %g layers: TPOT %.6g vs hl_sim_run %.6g (%+.2f%%)\n",
               cases[i].model, cases[i].gamma, cases[i].alpha, (long long)cases[i].npos, cases[i].layers, r.tpot_s.mean,
               ref.tpot_s, 100 * (r.tpot_s.mean / ref.tpot_s - 1));
        assert_rel(r.tpot_s.mean, ref.tpot_s, 0.02, "speculative TPOT at concurrency 1");
        hl_serve_result_free(&r);
    }
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_result a, b;
    hl_err e;
    hl_serve_init(&c, &j);
    c.rate = 20;
    c.requests = 300;
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 100;
    c.input.hi = 2000;
    c.output.lo = 10;
    c.output.hi = 300;
    assert_ok(hl_serve_run(&c, &a, &e), &e);
    c.job.spec_tokens = 0; /* gamma = 0 with an acceptance given: no speculation */
    c.job.spec_accept = 0.9;
    assert_ok(hl_serve_run(&c, &b, &e), &e);
    assert_true(a.steps == b.steps && a.ttft_s.mean == b.ttft_s.mean && a.tpot_s.mean == b.tpot_s.mean &&
                a.tpot_s.p99 == b.tpot_s.p99 && a.itl_s.p99 == b.itl_s.p99 && a.e2e_s.max == b.e2e_s.max &&
                a.duration_s == b.duration_s && a.kv_util_mean == b.kv_util_mean);
    hl_serve_result_free(&b);
    c.job.spec_tokens = 3; /* under load: fewer steps, bursts of tokens */
    c.job.spec_accept = 0.7;
    assert_ok(hl_serve_run(&c, &b, &e), &e);
    printf("rate 20: TPOT %.4g ms without, %.4g ms with speculation; ITL p50 %.3g ms\n", a.tpot_s.mean * 1e3,
           b.tpot_s.mean * 1e3, b.itl_s.p50 * 1e3);
    assert_true(b.tpot_s.mean < a.tpot_s.mean && b.steps < a.steps);
    hl_serve_result_free(&a);
    hl_serve_result_free(&b);
    c.job.pp = 2;
    c.job.cluster = job_for("llama-3.1-8b", "H100-SXM", 2, 2).cluster;
    assert_fails_with(hl_serve_run(&c, &b, &e), HL_EINVAL, &e, "modelled for pp = 1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_schedule_chunked),
        cmocka_unit_test(test_hand_worked_schedule_unchunked),
        cmocka_unit_test(test_unchunked_over_budget),
        cmocka_unit_test(test_concurrency_one_equals_simulate),
        cmocka_unit_test(test_littles_law),
        cmocka_unit_test(test_run_ahead_equals_step_by_step),
        cmocka_unit_test(test_memory_budget_in_run),
        cmocka_unit_test(test_itl_bin_edges),
        cmocka_unit_test(test_metric_sort),
        cmocka_unit_test(test_metric_sort_shapes),
        cmocka_unit_test(test_steady_state_follows_scheduler),
        cmocka_unit_test(test_disaggregated_one_request),
        cmocka_unit_test(test_goodput_monotone_in_slo),
        cmocka_unit_test(test_preemption),
        cmocka_unit_test(test_trace_parse),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_summary_interrupt),
        cmocka_unit_test(test_trace_hostile),
        cmocka_unit_test(test_session_release_is_linear),
        cmocka_unit_test(test_closed_loop_desynchronises),
        cmocka_unit_test(test_serve_cost),
        cmocka_unit_test(test_speculative_decoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
