/* The serving scheduler against its kept reference (cfg.sched_reference: the
 * passes over the running set every iteration): 20 random workloads, same
 * seeds, think time and jitter zero, give equal results field by field, per
 * request and per step (aggregated, chunked and unchunked, preemption,
 * replicas, MoE DP ranks in lock-step, speculation, disaggregation, prefix
 * caching, multi-turn sessions). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "serve_int.h"

/* Bit for bit: a double by its bits (+0 and -0 differ, a NaN equals only the same NaN: the cost
 * fields of a GPU without a price, kv_transfer_s when aggregated), an integer by its value. */
static int bits_differ(double x, double y)
{
    uint64_t u, v;
    memcpy(&u, &x, sizeof u);
    memcpy(&v, &y, sizeof v);
    return u != v;
}
static int int_differ(int64_t x, int64_t y) { return x != y; }
#define DIFFERS(x, y) _Generic((x), double : bits_differ, default : int_differ)((x), (y))

#define SAME(f)                                                                                                   \
    do {                                                                                                          \
        if (DIFFERS(a->f, b->f))                                                                                  \
            fail_msg("workload %d: field %s differs: %a vs reference %a", w, #f, (double)(a->f), (double)(b->f)); \
    } while (0)
#define SAME_STATS(s) \
    do {              \
        SAME(s.mean); \
        SAME(s.p50);  \
        SAME(s.p90);  \
        SAME(s.p99);  \
        SAME(s.max);  \
        SAME(s.n);    \
    } while (0)

/* Every field below is compared: a field added to one of these records changes its size and stops
 * the build here until it is compared too (sizes on LP64: doubles and int64 8 B, int32 4 B; the
 * result's kv_link is followed by 4 B of padding, its pointers are not compared but the arrays they
 * hold are). */
_Static_assert(sizeof(hl_stats) == 6 * 8, "hl_stats: a field is not compared");
_Static_assert(sizeof(hl_serve_req) == 10 * 8 + 2 * 4, "hl_serve_req: a field is not compared");
_Static_assert(sizeof(hl_serve_step) == 8 * 8 + 6 * 4, "hl_serve_step: a field is not compared");
_Static_assert(sizeof(hl_serve_sample) == 4 * 8, "hl_serve_sample: a field is not compared");
_Static_assert(sizeof(hl_serve_result) ==
                   4 * 8 + 6 * 8 + 5 * sizeof(hl_stats) + 7 * 8 + 4 * 8 + 3 * 8 + 3 * 8 + 8 + 4 + 4 + 10 * 8 + 7 * 8,
               "hl_serve_result: a field is not compared");

/* The fields of the summary: every result field but the per-request rows and the step log. */
static void compare_summary(int w, const hl_serve_result *a, const hl_serve_result *b)
{
    SAME(requests);
    SAME(steps);
    SAME(preemptions);
    SAME(gpus);
    SAME(duration_s);
    SAME(rps);
    SAME(input_tps);
    SAME(output_tps);
    SAME(input_tps_per_gpu);
    SAME(output_tps_per_gpu);
    SAME_STATS(ttft_s);
    SAME_STATS(tpot_s);
    SAME_STATS(e2e_s);
    SAME_STATS(queue_s);
    SAME_STATS(itl_s);
    SAME(slo_attainment);
    SAME(goodput_rps);
    SAME(goodput_tps_per_gpu);
    SAME(mean_in_system);
    SAME(mean_running);
    SAME(mean_waiting);
    SAME(mean_step_tokens);
    SAME(kv_blocks_total);
    SAME(kv_block_tokens);
    SAME(kv_util_mean);
    SAME(kv_util_max);
    SAME(n_samples);
    SAME(saturated_output_tps);
    SAME(kv_transfer_s);
    SAME(kv_link);
    SAME(usd_per_hour);
    SAME(usd_per_mtok_in);
    SAME(usd_per_mtok_out);
    SAME(usd_per_mtok);
    SAME(joules_per_token);
    SAME(joules_per_token_in);
    SAME(joules_per_token_out);
    SAME(power_w);
    SAME(peak_power_w);
    SAME(tokens_per_mw);
    SAME(prefix_hit_rate);
    SAME(prefill_tokens_saved);
    SAME(kv_cached_mean);
    SAME(kv_cached_max);
    SAME(host_hit_tokens);
    SAME(reload_s);
    SAME(offloaded_blocks);
    for (int64_t i = 0; i < a->n_samples; i++) {
        SAME(samples[i].t_s);
        SAME(samples[i].kv_util);
        SAME(samples[i].running);
        SAME(samples[i].waiting);
    }
}

/* Every per-request record. */
static void compare_requests(int w, const hl_serve_result *a, const hl_serve_result *b)
{
    assert_true(a->reqs && b->reqs);
    for (int64_t i = 0; i < a->requests; i++) {
        SAME(reqs[i].arrival_s);
        SAME(reqs[i].input);
        SAME(reqs[i].output);
        SAME(reqs[i].first_token_s);
        SAME(reqs[i].finish_s);
        SAME(reqs[i].queue_s);
        SAME(reqs[i].ttft_s);
        SAME(reqs[i].tpot_s);
        SAME(reqs[i].e2e_s);
        SAME(reqs[i].preemptions);
        SAME(reqs[i].good);
        SAME(reqs[i].kv_transfer_s);
    }
}

static void compare(int w, const hl_serve_result *a, const hl_serve_result *b)
{
    compare_summary(w, a, b);
    compare_requests(w, a, b);
    SAME(n_steps_log);
    for (int64_t i = 0; i < a->n_steps_log; i++) {
        SAME(steps_log[i].t_s);
        SAME(steps_log[i].dt_s);
        SAME(steps_log[i].decodes);
        SAME(steps_log[i].chunks);
        SAME(steps_log[i].prefill_tokens);
        SAME(steps_log[i].first_req);
        SAME(steps_log[i].preempted);
        SAME(steps_log[i].kv_used);
        SAME(steps_log[i].pool);
        SAME(steps_log[i].group);
        SAME(steps_log[i].stall_s);
        SAME(steps_log[i].cached_blocks);
        SAME(steps_log[i].saved_tokens);
        SAME(steps_log[i].reload_s);
    }
}

/* The iterations a run records, in order (hl_serve_set_probe): HL_SERVE_PROBE_N terms each. Where
 * a step's time or counts move by less than the clock resolves (a one-ulp dt rounds away in t + dt,
 * and in the integrals, on most steps), the results can still agree; the steps cannot. */
typedef struct trace {
    double *v;
    int64_t n, cap; /* values */
} trace;

static void probe(void *ctx, const double v[HL_SERVE_PROBE_N])
{
    trace *t = ctx;
    if (t->n + HL_SERVE_PROBE_N > t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1 << 16;
        double *g = realloc(t->v, sizeof *g * (size_t)t->cap);
        if (!g)
            abort();
        t->v = g;
    }
    memcpy(t->v + t->n, v, sizeof *v * HL_SERVE_PROBE_N);
    t->n += HL_SERVE_PROBE_N;
}

/* Runs c into *r with its iterations kept in *t (freed and refilled). */
static void run_traced(hl_serve_cfg *c, hl_serve_result *r, trace *t)
{
    hl_err e;
    t->n = 0;
    hl_serve_set_probe(probe, t);
    hl_status rc = hl_serve_run(c, r, &e);
    hl_serve_set_probe(NULL, NULL);
    assert_ok(rc, &e);
}

/* The two runs' iterations, term by term, bit for bit (not the path that took them). */
static void compare_traces(int w, const char *what, const trace *a, const trace *b)
{
    static const char *term[HL_SERVE_PROBE_TERMS] = {"t",       "dt",     "in_system", "running", "waiting", "kv_part",
                                                     "kv_util", "tokens", "prefill",   "emitted", "weight"};
    for (int64_t i = 0; i < a->n && i < b->n; i++)
        if (i % HL_SERVE_PROBE_N < HL_SERVE_PROBE_TERMS && bits_differ(a->v[i], b->v[i]))
            fail_msg("workload %d, %s: iteration %lld's %s differs: %a vs reference %a (t = %.17g s; taken by path %g "
                     "and %g)",
                     w, what, (long long)(i / HL_SERVE_PROBE_N), term[i % HL_SERVE_PROBE_N], a->v[i], b->v[i],
                     a->v[i - i % HL_SERVE_PROBE_N], a->v[i - i % HL_SERVE_PROBE_N + HL_SERVE_PROBE_TERMS],
                     b->v[i - i % HL_SERVE_PROBE_N + HL_SERVE_PROBE_TERMS]);
    if (a->n != b->n)
        fail_msg("workload %d, %s: %lld iterations vs reference %lld", w, what, (long long)(a->n / HL_SERVE_PROBE_N),
                 (long long)(b->n / HL_SERVE_PROBE_N));
}

/* xorshift64: the workloads' parameters (the scheduler's own draws use cfg.seed). */
static uint64_t next_u64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_u64(s) >> 11) / 0x1p53;
}

/* Workload w: kind w % 6 (0 aggregated chunked, 1 unchunked, 2 replicas, 3 MoE DP
 * ranks, 4 speculation, 5 disaggregated); rate, lengths, KV size (small enough to
 * preempt in some), closed loop or Poisson, step log drawn from the generator. */
static hl_serve_cfg workload(int w, uint64_t *g)
{
    int kind = w % 6;
    hl_job j = kind == 3   ? job_for("mixtral-8x7b", "H100-SXM", 4, 4)
               : kind == 2 ? job_for("llama-3.1-8b", "H100-SXM", 4, 4)
               : kind == 5 ? job_for("llama-3.1-8b", "H100-SXM", 2, 2)
                           : job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    if (kind == 2 || kind == 5)
        j.gpus = 1; /* four one-GPU replicas; a prefill and a decode GPU */
    if (kind == 3) {
        j.dp = 2;
        j.tp = 2;
        j.ep = 4;
    }
    if (kind == 4) {
        j.spec_tokens = 1 + (double)(next_u64(g) % 3);
        j.spec_accept = uniform(g, 0.5, 0.9);
        j.spec_draft_layers = (double)(next_u64(g) % 2);
    }
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    if (kind == 2) {
        c.replicas = 4;
        c.router = (int32_t)(next_u64(g) % 3);
    }
    if (kind == 5) {
        c.disagg = 1;
        c.decode_job = j;
    }
    c.seed = next_u64(g) % 100000 + 1;
    c.requests = 120 + (int64_t)(next_u64(g) % 120);
    if (next_u64(g) % 3 == 0)
        c.concurrency = 4 + (int64_t)(next_u64(g) % 28); /* think time and jitter stay 0 */
    else
        c.rate = uniform(g, 2, 30) * (kind == 2 ? 4 : 1);
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 64;
    c.input.hi = floor(uniform(g, 200, 3000));
    c.output.lo = kind == 0 || kind == 2 ? 1 : 4; /* some requests end with their prompt (one token) */
    c.output.hi = floor(uniform(g, 40, 400));
    c.chunked_prefill = kind != 1;
    if (kind != 1 && next_u64(g) % 2)
        c.chunk = 256 + (int64_t)(next_u64(g) % 1024);
    if (kind < 3 && next_u64(g) % 2)
        c.kv_blocks = 300 + floor(uniform(g, 0, 900)); /* 16-token blocks: room for ~5k-19k tokens, preemptions */
    if (kind < 2 && next_u64(g) % 2) {                 /* a prefix cache, with a shared system prompt in some */
        c.prefix_cache = 1;
        c.shared_prefix = next_u64(g) % 2 ? 64 : 0;
    }
    c.keep_requests = 1;
    c.keep_steps = next_u64(g) % 4 == 0;             /* the step log (and no run-ahead) in a quarter */
    if ((kind == 0 || kind == 2) && next_u64(g) % 2) /* multi-turn sessions: who finishes first picks the next turn */
        c.session_turns = 2 + (int64_t)(next_u64(g) % 3);
    return c;
}

/* Adds the iterations of t by the path that took them to paths[HL_SERVE_PATHS]. */
static void count_paths(const trace *t, int64_t *paths)
{
    for (int64_t i = HL_SERVE_PROBE_TERMS; i < t->n; i += HL_SERVE_PROBE_N)
        paths[(int)t->v[i]]++;
}

/* Workload w >= 20: where the event-driven scheduler takes its own paths (the decode set, its
 * finishing step set_step, the run-ahead, from a decode-only step or right after a prompt step,
 * compact records): one group, chunked prefill, no prefix cache, no step log; Poisson or a closed
 * loop, sessions in some, a KV pool small enough to preempt in some, one-token outputs in some,
 * chunk, budget and block size drawn. (Drawn after the first 20, which stay as they were.) */
static hl_serve_cfg event_workload(uint64_t *g)
{
    int big = next_u64(g) % 3 == 0;
    hl_job j = big ? job_for("llama-3.1-70b", "H100-SXM", 4, 4) : job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    if (big)
        j.tp = 4; /* one instance of four GPUs */
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.seed = next_u64(g) % 100000 + 1;
    c.requests = 150 + (int64_t)(next_u64(g) % 150);
    if (next_u64(g) % 4 == 0)
        c.concurrency = 2 + (int64_t)(next_u64(g) % 30);
    else
        c.rate = uniform(g, 0.5, 25);
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 1 + (double)(next_u64(g) % 64);
    c.input.hi = floor(uniform(g, 100, 4000));
    c.output.lo = next_u64(g) % 3 ? 1 : 16;
    c.output.hi = floor(uniform(g, 20, 600));
    if (next_u64(g) % 2)
        c.chunk = 64 + (int64_t)(next_u64(g) % 2048);
    if (next_u64(g) % 3 == 0)
        c.token_budget = 512 + (int64_t)(next_u64(g) % 4096);
    if (next_u64(g) % 3 == 0)
        c.block_tokens = (int64_t[]){1, 8, 32, 128}[next_u64(g) % 4];
    if (next_u64(g) % 3 == 0) /* room for 1.5-5 of the longest requests: preemptions */
        c.kv_blocks = ceil((c.input.hi + c.output.hi) * uniform(g, 1.5, 5) / (double)c.block_tokens) + 1;
    if (next_u64(g) % 4 == 0)
        c.session_turns = 2 + (int64_t)(next_u64(g) % 3);
    c.keep_requests = 1;
    return c;
}

/* Runs workload w with the event-driven scheduler into a, then with the kept reference into b
 * (c->sched_reference is left set), and compares them field by field and iteration by iteration;
 * adds the event runs' iterations by path to paths (NULL: not counted); returns the iterations
 * compared. The caller frees a and b. */
static int64_t run_both(int w, hl_serve_cfg *c, hl_serve_result *a, hl_serve_result *b, int64_t *paths)
{
    trace ta = {0}, tb = {0};
    run_traced(c, a, &ta);
    c->sched_reference = 1;
    run_traced(c, b, &tb);
    compare(w, a, b);
    compare_traces(w, "records kept", &ta, &tb);
    /* without per-request output or a step log (compact records where the workload allows:
     * open loops without prefix caching, sessions or disaggregation), both schedulers give
     * the same summary and iterations as with one record per request (and, where a's kept the
     * step log, which stops the run-ahead, as step by step) */
    hl_serve_cfg plain = *c;
    plain.keep_requests = plain.keep_steps = 0;
    for (int ref = 0; ref < 2; ref++) {
        hl_serve_result p;
        plain.sched_reference = ref;
        run_traced(&plain, &p, &tb);
        assert_true(p.reqs == NULL && p.n_steps_log == 0);
        compare_summary(w, &p, a);
        compare_traces(w, ref ? "reference, no records" : "no records", &tb, &ta);
        if (!ref && paths)
            count_paths(&tb, paths);
        hl_serve_result_free(&p);
    }
    /* the old scheduler step by step: the reference's passes, and no run-ahead (the step log
     * stops it; the reference's own run-ahead, ahead_reference, shares the event one's start and
     * means, so only this run checks them) */
    hl_serve_cfg one = *c;
    one.keep_requests = one.keep_steps = one.sched_reference = 1;
    hl_serve_result p;
    run_traced(&one, &p, &tb);
    compare_summary(w, a, &p);
    compare_requests(w, a, &p);
    compare_traces(w, "step by step", &ta, &tb);
    if (paths)
        count_paths(&ta, paths);
    hl_serve_result_free(&p);
    c->sched_reference = 0;
    int64_t n = ta.n / HL_SERVE_PROBE_N;
    free(ta.v);
    free(tb.v);
    return n;
}

static void test_equals_reference(void **state)
{
    (void)state;
    uint64_t g = 0x9e3779b97f4a7c15ull;
    int64_t preempting = 0, caching = 0, sessions = 0, steps = 0, compact0 = hl_serve_compact_runs();
    int64_t reached[HL_SERVE_PATHS] = {0}; /* workloads whose event runs took each path */
    for (int w = 0; w < 30; w++) {
        hl_serve_cfg c = w < 20 ? workload(w, &g) : event_workload(&g);
        hl_serve_result a, b;
        int64_t paths[HL_SERVE_PATHS] = {0};
        int64_t compact1 = hl_serve_compact_runs();
        run_both(w, &c, &a, &b, paths);
        preempting += a.preemptions > 0;
        caching += a.prefill_tokens_saved > 0;
        sessions += c.session_turns > 0;
        steps += a.steps;
        for (int k = 0; k < HL_SERVE_PATHS; k++)
            reached[k] += paths[k] > 0;
        printf("workload %2d (kind %d): %lld requests, %lld steps, %lld preemptions%s%s%s; event iterations: %lld "
               "step, %lld set_step, %lld run-ahead (%lld its step 0 after a prompt step)\n",
               w, w < 20 ? w % 6 : 6, (long long)a.requests, (long long)a.steps, (long long)a.preemptions,
               c.prefix_cache ? ", prefix cache" : "", c.session_turns > 0 ? ", sessions" : "",
               hl_serve_compact_runs() > compact1 ? ", compact records" : "", (long long)paths[HL_SERVE_PATH_STEP],
               (long long)paths[HL_SERVE_PATH_SET_STEP],
               (long long)(paths[HL_SERVE_PATH_AHEAD] + paths[HL_SERVE_PATH_AHEAD_FIRST]),
               (long long)paths[HL_SERVE_PATH_AHEAD_FIRST]);
        hl_serve_result_free(&a);
        hl_serve_result_free(&b);
    }
    int64_t compact = hl_serve_compact_runs() - compact0;
    assert_true(preempting > 0 && caching > 0 && sessions > 0); /* it covered preemption, prefix hits, sessions */
    assert_true(compact >= 10);                                 /* and compact records */
    /* and each of the event scheduler's own paths, in several workloads */
    assert_true(reached[HL_SERVE_PATH_SET_STEP] >= 5 && reached[HL_SERVE_PATH_AHEAD] >= 5 &&
                reached[HL_SERVE_PATH_AHEAD_FIRST] >= 5);
    assert_true(reached[HL_SERVE_PATH_AHEAD_REF] == 0); /* (the reference's own, never an event run's) */
    printf("%lld steps compared, %lld workloads preempted, %lld hit a prefix cache, %lld runs on compact records; "
           "workloads reaching set_step %lld, the run-ahead %lld, its step 0 after a prompt step %lld\n",
           (long long)steps, (long long)preempting, (long long)caching, (long long)compact,
           (long long)reached[HL_SERVE_PATH_SET_STEP], (long long)reached[HL_SERVE_PATH_AHEAD],
           (long long)reached[HL_SERVE_PATH_AHEAD_FIRST]);
}

/* Attack pass 4: the event-driven decode set against the reference at the edges of its inputs
 * (hand-picked, not drawn): a budget of 1 or 2 tokens (every decode step exceeds it: the per-request
 * path), one sequence at a time, a KV pool of one request's blocks (preemption each step), blocks of
 * one token and of 4,096, one-token outputs, a burst of 10^6 req/s, chunks of one token, a closed loop
 * with as many clients as requests. */
static void test_extremes_equal_reference(void **state)
{
    (void)state;
    int64_t compact0 = hl_serve_compact_runs();
    for (int w = 0; w < 10; w++) {
        hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
        hl_serve_cfg c;
        hl_serve_init(&c, &j);
        c.seed = 7 + (uint64_t)w;
        c.requests = 40;
        c.rate = 50;
        c.input.kind = c.output.kind = HL_LEN_UNIFORM;
        c.input.lo = 1;
        c.input.hi = 300;
        c.output.lo = 1;
        c.output.hi = 60;
        c.keep_requests = 1;
        c.keep_steps = w % 2;
        switch (w) {
        case 0: c.token_budget = 1; break;
        case 1: c.token_budget = 2, c.chunk = 1; break;
        case 2: c.max_seqs = 1; break;
        case 3: c.kv_blocks = 23; break; /* 16-token blocks: 300 + 60 tokens need 23, so one request fits */
        case 4: c.block_tokens = 1, c.kv_blocks = 2000; break;
        case 5: c.block_tokens = 4096; break;
        case 6: c.output.lo = c.output.hi = 1; break;
        case 7: c.rate = 1e6; break;
        case 8: c.rate = 0, c.concurrency = 40; break;
        case 9: c.chunked_prefill = 0, c.token_budget = 300; break; /* unchunked at the longest prompt exactly */
        }
        hl_serve_result a, b;
        run_both(w, &c, &a, &b, NULL);
        printf("extreme %d: %lld steps, %lld preemptions\n", w, (long long)a.steps, (long long)a.preemptions);
        hl_serve_result_free(&a);
        hl_serve_result_free(&b);
    }
    assert_true(hl_serve_compact_runs() - compact0 >= 10); /* nine open loops, twice each */
}

/* Runs c with a record per request (keep_requests) and then on compact records (checked to be
 * taken), and compares the summaries field by field; returns the runs' mean_waiting. */
static double compact_equals_records(hl_serve_cfg *c)
{
    c->keep_requests = 1;
    hl_serve_result a, p;
    hl_err e;
    assert_ok(hl_serve_run(c, &a, &e), &e);
    int64_t compact0 = hl_serve_compact_runs();
    c->keep_requests = 0;
    assert_ok(hl_serve_run(c, &p, &e), &e);
    assert_true(hl_serve_compact_runs() == compact0 + 1);
    compare_summary(0, &p, &a);
    double waiting = a.mean_waiting;
    hl_serve_result_free(&a);
    hl_serve_result_free(&p);
    return waiting;
}

/* Compact records grow when every one is in flight: 3,000 requests arriving within 3 ms queue
 * together (the records start at 1,024 and double twice, the queues with them, in order);
 * the summary equals the one with a record per request. */
static void test_compact_records_grow(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.seed = 11;
    c.requests = 3000;
    c.rate = 1e6;
    c.input.kind = c.output.kind = HL_LEN_UNIFORM;
    c.input.lo = 16;
    c.input.hi = 200;
    c.output.lo = 1;
    c.output.hi = 30;
    c.warmup = 100;
    assert_true(compact_equals_records(&c) > 1024); /* more than the first records wait, on average */
}

/* Normal lengths with the default max (1e8, which no KV pool holds) take compact records: the
 * generator's range bounds the draws, not the clamp. By hand: Box-Muller on u1 >= 2^-54 gives
 * |z| <= sqrt(108 ln 2) = 8.652, so N(500, 100) draws lie in round(500 -/+ 865.2) clamped:
 * [1, 1366], inside the range's [1, ceil(500 + 866) + 1 = 1367]; N(100, 30) in [1, 100 + 260 + 1
 * = 361]. The run equals the one with a record per request (keep_requests), field by field. */
static void test_normal_lengths_compact(void **state)
{
    (void)state;
    assert_true(sqrt(-2 * log(0x1p-54)) < 8.6522 && sqrt(-2 * log(0x1p-54)) > 8.6521);
    hl_len_dist in = {.kind = HL_LEN_NORMAL, .mean = 500, .std = 100, .lo = 1, .hi = 1e8};
    double lo, hi;
    hl_len_draw_range(&in, &lo, &hi);
    assert_true(lo == 1 && hi == 1367);
    hl_len_dist tight = {.kind = HL_LEN_NORMAL, .mean = 500, .std = 10, .lo = 1, .hi = 520};
    hl_len_draw_range(&tight, &lo, &hi); /* floor(500 - 86.6) - 1 = 412; the given max 520 stays */
    assert_true(lo == 412 && hi == 520);
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.seed = 5;
    c.requests = 2000;
    c.rate = 20;
    c.input = in;
    c.output = (hl_len_dist){.kind = HL_LEN_NORMAL, .mean = 100, .std = 30, .lo = 1, .hi = 1e8};
    compact_equals_records(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_reference),
        cmocka_unit_test(test_extremes_equal_reference),
        cmocka_unit_test(test_compact_records_grow),
        cmocka_unit_test(test_normal_lengths_compact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
