/* Prefix caching in the serving scheduler: a 2,000-token shared system prompt
 * saves exactly the hand-worked prefill tokens and steps; the last prompt token
 * is always recomputed; prompts scheduled in one step do not hit each other;
 * the cache off is the run without it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "step_int.h"

/* Time of one iteration from the per-step model (the scheduler is under test, not it). */
static double step_time(const hl_job *j, double dec, double ctx_mean, const hl_iter_chunk *ch, int n, double rows)
{
    hl_stepper *st;
    hl_err e;
    assert_ok(hl_stepper_new(j, 8192, &st, &e), &e);
    hl_iter it = {dec, ctx_mean, ctx_mean, n, ch, rows, 0, 0};
    double t;
    assert_ok(hl_stepper_time(st, &it, &t, &e), &e);
    hl_stepper_free(st);
    return t;
}

static hl_serve_cfg trace_cfg(const hl_job *j, hl_trace_req *tr, int64_t n, int64_t shared, int cache)
{
    hl_serve_cfg c;
    hl_serve_init(&c, j);
    c.trace = tr;
    c.n_trace = n;
    c.block_tokens = 16;
    c.kv_blocks = 1000;
    c.shared_prefix = shared;
    c.prefix_cache = cache;
    c.keep_requests = c.keep_steps = 1;
    return c;
}

/* Four requests of 2,100 prompt tokens whose first 2,000 are one system prompt, 2 output
 * tokens, 10 s apart (each ends long before the next arrives); blocks of 16 tokens.
 * 2,000 / 16 = 125 full blocks hold the system prompt exactly. Request 1 finds nothing and
 * prefills 2,100 tokens (one step: the budget is 8,192), then decodes once. Its 2100 + 1
 * tokens of KV fill 131 blocks, named as they fill; when it ends they stay cached. Requests
 * 2, 3, 4 find blocks 0..124 (block 125 = tokens 2000..2015 are their own tokens) and at most
 * floor((2100 - 1) / 16) = 131 may be hit: 125 blocks = 2,000 tokens each, so 6,000 tokens
 * saved of 4 x 2,100 = 8,400 admitted (hit rate 5/7), and each prefills 100 tokens on a
 * context of 2,000: TTFT = step(chunk of 100 at 2000, one logits row). */
static void test_shared_system_prompt(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_trace_req tr[] = {{0, 2100, 2}, {10, 2100, 2}, {20, 2100, 2}, {30, 2100, 2}};
    hl_serve_cfg c = trace_cfg(&j, tr, 4, 2000, 1);
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_rel(r.prefill_tokens_saved, 6000, 0, "prefill tokens saved");
    assert_rel(r.prefix_hit_rate, 6000.0 / 8400.0, 1e-15, "hit rate");
    hl_iter_chunk whole = {2100, 0}, rest = {100, 2000};
    double full = step_time(&j, 0, 0, &whole, 1, 1), part = step_time(&j, 0, 0, &rest, 1, 1);
    assert_true(part < full / 5); /* the hit is worth having: 100 tokens instead of 2,100 */
    assert_rel(r.reqs[0].ttft_s, full, 1e-12, "TTFT of the first request (no hit)");
    for (int i = 1; i < 4; i++)
        assert_rel(r.reqs[i].ttft_s, part, 1e-12, "TTFT of a request hitting the system prompt");
    /* the step log: 8 steps (a prefill and a decode per request); the prefills of 2..4 say 2000
     * saved, 100 computed; after request 1 ends its 131 blocks are cached (none held) */
    assert_int_equal(r.n_steps_log, 8);
    for (int i = 0; i < 4; i++) {
        assert_rel(r.steps_log[2 * i].saved_tokens, i ? 2000 : 0, 0, "saved tokens of a prefill step");
        assert_rel(r.steps_log[2 * i].prefill_tokens, i ? 100 : 2100, 0, "prefill tokens of a prefill step");
        assert_rel(r.steps_log[2 * i + 1].kv_used, 0, 0, "blocks held after the last step of a request");
    }
    assert_rel(r.steps_log[1].cached_blocks, 131, 0, "blocks of request 1 cached when it ends");
    /* request 2 holds the 125 hit blocks and 7 of its own (2101 tokens: 132 blocks, its last
     * one partial and unnamed); its 6 full own blocks are named and cached with the 131: 137 */
    assert_rel(r.steps_log[3].cached_blocks, 137, 0, "cached blocks after request 2");
    hl_serve_result_free(&r);

    /* the cache off: the same prompts all computed, no prefix fields */
    c.prefix_cache = 0;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_true(isnan(r.prefill_tokens_saved) && isnan(r.prefix_hit_rate));
    for (int i = 0; i < 4; i++)
        assert_rel(r.reqs[i].ttft_s, full, 1e-12, "TTFT without the cache");
    hl_serve_result_free(&r);
}

/* A prompt that is all system prompt (2,000 tokens, 125 full blocks): its last token is
 * recomputed (vLLM's rule: the logits of the last prompt token are needed), so at most
 * floor(1999 / 16) = 124 blocks = 1,984 tokens hit and 16 are prefilled (on 1,984 of context). */
static void test_last_token_recomputed(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_trace_req tr[] = {{0, 2000, 2}, {10, 2000, 2}};
    hl_serve_cfg c = trace_cfg(&j, tr, 2, 2000, 1);
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_rel(r.prefill_tokens_saved, 1984, 0, "saved: all blocks but the last");
    assert_rel(r.steps_log[2].prefill_tokens, 16, 0, "the last block recomputed");
    hl_iter_chunk rest = {16, 1984};
    assert_rel(r.reqs[1].ttft_s, step_time(&j, 0, 0, &rest, 1, 1), 1e-12, "TTFT of the hit");
    hl_serve_result_free(&r);
}

/* Two prompts with the same 2,000-token system prompt arriving together are scheduled in
 * the same step: a block is named when the step that fills it ends, so neither finds the
 * other's (vLLM v1 likewise). A third arriving later hits. */
static void test_same_step_no_hit(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_trace_req tr[] = {{0, 2100, 2}, {0, 2100, 2}, {10, 2100, 2}};
    hl_serve_cfg c = trace_cfg(&j, tr, 3, 2000, 1);
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_rel(r.prefill_tokens_saved, 2000, 0, "only the third request hits");
    assert_rel(r.steps_log[0].prefill_tokens, 4200, 0, "both prompts computed in step 1");
    hl_serve_result_free(&r);
}

/* One client, one conversation of 3 turns, 100 new tokens and 10 generated per turn, 5 s
 * between a reply and the next turn, blocks of 16:
 *   turn 1: prompt 100.                         Its KV at the end: 100 + 10 - 1 = 109 tokens.
 *   turn 2: prompt 100 + 10 + 100 = 210.        Its KV: 219 tokens.
 *   turn 3: prompt 210 + 10 + 100 = 320.
 * Without the cache each turn prefills its whole prompt: TTFT = step(P at 0) for P = 100, 210,
 * 320. With it, turn 2 finds turn 1's full blocks: floor(109 / 16) = 6 (96 tokens; the limit
 * floor(209 / 16) = 13 does not bind) and prefills 114 on 96; turn 3 finds floor(219 / 16) = 13
 * blocks (208 tokens) and prefills 112 on 208. Saved 96 + 208 = 304 of 630 admitted. */
static void test_multi_turn_ttft(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.concurrency = 1;
    c.start_jitter_s = 0;
    c.requests = 3;
    c.input.mean = 100;
    c.output.mean = 10;
    c.session_turns = 3;
    c.session_think_s = 5;
    c.block_tokens = 16;
    c.kv_blocks = 1000;
    c.keep_requests = 1;
    hl_serve_result off, on;
    hl_err e;
    assert_ok(hl_serve_run(&c, &off, &e), &e);
    c.prefix_cache = 1;
    assert_ok(hl_serve_run(&c, &on, &e), &e);
    const double prompt[] = {100, 210, 320}, hit[] = {0, 96, 208};
    for (int i = 0; i < 3; i++) {
        hl_iter_chunk whole = {prompt[i], 0}, rest = {prompt[i] - hit[i], hit[i]};
        assert_rel(off.reqs[i].input, prompt[i], 0, "a turn's prompt holds the history");
        assert_rel(off.reqs[i].ttft_s, step_time(&j, 0, 0, &whole, 1, 1), 1e-12, "TTFT without the cache");
        assert_rel(on.reqs[i].ttft_s, step_time(&j, 0, 0, &rest, 1, 1), 1e-12, "TTFT with the cache");
        if (i > 0) {
            assert_true(on.reqs[i].ttft_s < off.reqs[i].ttft_s);
            assert_rel(off.reqs[i].arrival_s, off.reqs[i - 1].finish_s + 5, 1e-12, "the next turn after 5 s");
        }
    }
    assert_rel(on.prefill_tokens_saved, 304, 0, "tokens saved over the conversation");
    assert_rel(on.prefix_hit_rate, 304.0 / 630.0, 1e-15, "hit rate");
    hl_serve_result_free(&off);
    hl_serve_result_free(&on);
}

/* A trace with conversation and prefix columns, blocks of 16, far-apart arrivals:
 *   1: session 1 turn 1, prefix 7 of 2,000 tokens, prompt 2,100: nothing cached.
 *   2: session 2, prefix 7 (its length from row 1), prompt 2,100: the prefix's 125 blocks, 2,000.
 *   3: session 1 turn 2, prompt 2,300: the prefix and turn 1's own full blocks, KV 2,101 tokens:
 *      floor(2101 / 16) = 131 blocks = 2,096 tokens (limit floor(2299 / 16) = 143).
 * Saved 4,096. The same rows as JSON lines parse to the same requests. */
static void test_trace_columns(void **state)
{
    (void)state;
    const char *csv = "arrival_s,input,output,session,turn,prefix,prefix_len\n"
                      "0,2100,2,1,1,7,2000\n"
                      "10,2100,2,2,1,7,\n"
                      "20,2300,2,1,2,7,\n";
    const char *jl = "{\"arrival_s\": 0, \"input\": 2100, \"output\": 2, \"session\": 1, \"turn\": 1, \"prefix\": 7, "
                     "\"prefix_len\": 2000}\n"
                     "{\"arrival_s\": 10, \"input\": 2100, \"output\": 2, \"session\": 2, \"prefix\": 7}\n"
                     "{\"arrival_s\": 20, \"input\": 2300, \"output\": 2, \"session\": 1, \"turn\": 2, \"prefix\": "
                     "7}\n";
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    for (int k = 0; k < 2; k++) {
        const char *text = k ? jl : csv;
        hl_trace_req *t;
        const hl_trace_content *tc;
        int64_t n;
        hl_err e;
        assert_ok(hl_serve_trace_parse_content(text, strlen(text), "t", &t, &tc, &n, &e), &e);
        assert_int_equal(n, 3);
        assert_non_null(tc);
        assert_rel(tc[2].session, 1, 0, "session column");
        assert_rel(tc[2].turn, 2, 0, "turn column");
        assert_rel(tc[1].prefix_len, 0, 0, "a prefix length left out");
        hl_serve_cfg c = trace_cfg(&j, t, n, 0, 1);
        c.trace_content = tc;
        hl_serve_result r;
        assert_ok(hl_serve_run(&c, &r, &e), &e);
        assert_rel(r.prefill_tokens_saved, 4096, 0, "saved: a shared prefix and a conversation's history");
        assert_rel(r.steps_log[4].saved_tokens, 2096, 0, "turn 2 finds turn 1");
        hl_serve_result_free(&r);
        hl_serve_trace_free(t);
    }
    /* a trace without those columns has no content */
    const char *plain = "arrival_s,input,output\n0,10,2\n";
    hl_trace_req *t;
    const hl_trace_content *tc;
    int64_t n;
    hl_err e;
    assert_ok(hl_serve_trace_parse_content(plain, strlen(plain), "p", &t, &tc, &n, &e), &e);
    assert_null(tc);
    hl_serve_trace_free(t);
}

/* Bad traces name the request and the column. */
static void test_trace_columns_bad(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    const struct {
        const char *text, *want;
    } bad[] = {
        {"arrival_s,input,output,prefix\n0,100,2,9\n", "request 1 references prefix 9, whose length no request gives"},
        {"arrival_s,input,output,prefix,prefix_len\n0,100,2,9,50\n1,100,2,9,60\n", "prefix 9 is 50 tokens on request 1 "
                                                                                   "and 60 on another"},
        {"arrival_s,input,output,session,turn\n0,100,2,1,2\n", "turn 2 of session 1"},
        {"arrival_s,input,output,session,turn\n0,100,2,1,1\n5,100,2,1,1\n", "a turn is repeated"},
        {"arrival_s,input,output,turn\n0,100,2,1\n", "turn 1 but no session"},
        {"arrival_s,input,output,prefix_len\n0,100,2,50\n", "no prefix id"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        hl_trace_req *t;
        const hl_trace_content *tc;
        int64_t n;
        hl_err e;
        assert_ok(hl_serve_trace_parse_content(bad[k].text, strlen(bad[k].text), "b", &t, &tc, &n, &e), &e);
        hl_serve_cfg c = trace_cfg(&j, t, n, 0, 1);
        c.trace_content = tc;
        hl_serve_result r;
        assert_fails_with(hl_serve_run(&c, &r, &e), HL_EINVAL, &e, bad[k].want);
        hl_serve_trace_free(t);
    }
    const char *longer = "arrival_s,input,output,prefix,prefix_len\n0,100,2,3,200\n";
    hl_trace_req *t;
    const hl_trace_content *tc;
    int64_t n;
    hl_err e;
    assert_fails_with(hl_serve_trace_parse_content(longer, strlen(longer), "l.csv", &t, &tc, &n, &e), HL_EPARSE, &e,
                      "l.csv line 2: prefix_len 200 is longer than the prompt");
    const char *frac = "{\"arrival_s\": 0, \"input\": 10, \"output\": 2, \"session\": 1.5}\n";
    assert_fails_with(hl_serve_trace_parse_content(frac, strlen(frac), "f.jsonl", &t, &tc, &n, &e), HL_EPARSE, &e,
                      "f.jsonl line 1: session 1.5");
}

/* An offloaded prefix hit costs the reload of its bytes at the tier's bandwidth. One H100,
 * Llama-3.1-8B in BF16: KV per token = 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B,
 * a block of 16 tokens 2,097,152 B. 140 blocks of HBM cache; three requests far apart:
 *   A1 (session 1): prompt 1,600, 2 out: 100 prompt blocks + 1 for the decode; at its end blocks
 *      0..99 of A stay cached, its partial block 100 is freed empty. Free queue (head first):
 *      the 40 empty blocks, then A's cached ones released last block first: A99, A98, ..., A0.
 *   B1 (session 2): 1,600 + 2 takes 101 blocks: the 40 empty ones and A99..A39, whose 61 prefixes
 *      go to the host tier. A0..A38 (39 blocks) stay in HBM.
 *   A2 (session 1, turn 2): prompt 1,700 starts with A1's 1,601 tokens: its 100 full blocks hit,
 *      39 in HBM and 61 in the host (limit floor(1699 / 16) = 106), 1,600 tokens saved, 976 of
 *      them loaded back: 61 x 2,097,152 B = 127,926,272 B at the link's rate.
 * TTFT of A2 = step(100 tokens on 1,600) + 127,926,272 / bw, or the larger of the two when the
 * reload is overlapped. Without the tier only the 39 HBM blocks hit: 624 tokens. */
static void test_offload_reload(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_stepper *st;
    hl_err e;
    assert_ok(hl_stepper_new(&j, 64, &st, &e), &e);
    assert_rel(hl_stepper_kv_token_bytes(st), 131072, 0, "KV bytes per token");
    hl_stepper_free(st);
    hl_trace_req tr[] = {{0, 1600, 2}, {10, 1600, 2}, {20, 1700, 2}};
    hl_trace_content tc[] = {{1, 1, 0, 0}, {2, 1, 0, 0}, {1, 2, 0, 0}};
    hl_serve_cfg c = trace_cfg(&j, tr, 3, 0, 1);
    c.trace_content = tc;
    c.kv_blocks = 140;
    hl_serve_result r;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    hl_iter_chunk rest0 = {1076, 624};
    assert_rel(r.prefill_tokens_saved, 624, 0, "without the tier: the HBM blocks only");
    assert_rel(r.reqs[2].ttft_s, step_time(&j, 0, 0, &rest0, 1, 1), 1e-12, "TTFT without the tier");
    assert_true(isnan(r.reload_s));
    hl_serve_result_free(&r);

    const double bytes = 61.0 * 16 * 131072, bws[] = {31.5e9, 1e9}; /* PCIe 4.0 x16; a slow link */
    hl_iter_chunk rest = {100, 1600};
    double step = step_time(&j, 0, 0, &rest, 1, 1);
    for (int overlap = 0; overlap < 2; overlap++)
        for (int k = 0; k < 2; k++) {
            c.offload_bytes = 1e9; /* 476 blocks */
            c.offload_link = k == 0 ? HL_OFFLOAD_PCIE_GEN4 : HL_OFFLOAD_CUSTOM;
            c.offload_bw = k == 0 ? 0 : bws[1];
            c.offload_host = 2.56e11; /* a DGX H100: 2 TB of host memory over 8 GPUs */
            c.offload_overlap = overlap;
            assert_ok(hl_serve_run(&c, &r, &e), &e);
            double load = bytes / bws[k];
            assert_rel(r.prefill_tokens_saved, 1600, 0, "with the tier: the whole history");
            assert_rel(r.host_hit_tokens, 976, 0, "tokens loaded from the host");
            assert_rel(r.reload_s, load, 1e-12, "reload time");
            assert_rel(r.reqs[2].ttft_s, overlap ? fmax(step, load) : step + load, 1e-12, "TTFT of the reload");
            /* offloaded: A's 61, then B's blocks evicted by A2's loads and new blocks */
            assert_true(r.offloaded_blocks >= 61);
            hl_serve_result_free(&r);
        }
}

/* Prompts that share nothing: the cache finds nothing, so the run equals the run without it
 * (the same admissions, steps and times), request by request. */
static void test_no_sharing_equals_off(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.rate = 20;
    c.requests = 300;
    c.input = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 100, 3000};
    c.output = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 10, 300};
    c.keep_requests = 1;
    hl_serve_result off, on;
    hl_err e;
    assert_ok(hl_serve_run(&c, &off, &e), &e);
    c.prefix_cache = 1;
    assert_ok(hl_serve_run(&c, &on, &e), &e);
    assert_int_equal(on.preemptions, 0);
    assert_rel(on.prefill_tokens_saved, 0, 0, "nothing shared, nothing found");
    for (int64_t i = 0; i < off.requests; i++) {
        assert_rel(on.reqs[i].ttft_s, off.reqs[i].ttft_s, 1e-9, "TTFT with the cache and nothing shared");
        assert_rel(on.reqs[i].e2e_s, off.reqs[i].e2e_s, 1e-9, "e2e with the cache and nothing shared");
    }
    hl_serve_result_free(&off);
    hl_serve_result_free(&on);
}

/* A KV cache too small for the load (preemptions, evictions, a host tier filling up), with a
 * shared prefix and conversations: the run ends, and after every step the blocks held and the
 * blocks kept as cache together fit the cache. */
static void test_pressure_keeps_blocks_consistent(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.concurrency = 24;
    c.requests = 240;
    c.input = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 200, 1200};
    c.output = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 20, 400};
    c.shared_prefix = 300;
    c.session_turns = 4;
    c.session_think_s = 0.2;
    c.kv_blocks = 800;
    c.prefix_cache = 1;
    c.offload_bytes = 200 * 16 * 131072.0; /* 200 host blocks */
    c.offload_link = HL_OFFLOAD_PCIE_GEN5;
    c.offload_host = 2.56e11; /* a DGX H100: 2 TB of host memory over 8 GPUs */
    c.keep_steps = 1;
    hl_serve_result r;
    hl_err e;
    assert_ok(hl_serve_run(&c, &r, &e), &e);
    assert_int_equal(r.requests, 240);
    assert_true(r.preemptions > 0);
    assert_true(r.offloaded_blocks > 200); /* the tier filled and dropped its oldest */
    for (int64_t i = 0; i < r.n_steps_log; i++)
        assert_true(r.steps_log[i].kv_used + r.steps_log[i].cached_blocks <= 800);
    assert_rel(r.steps_log[r.n_steps_log - 1].kv_used, 0, 0, "nothing held at the end");
    hl_serve_result_free(&r);
}

/* The decode run-ahead (iterations of decodes only, advanced without per-request bookkeeping)
 * takes the blocks its tokens need at its end and names them: the same run as step by step
 * (keep_steps turns the run-ahead off), with conversations, a shared prefix, evictions and a
 * host tier. */
static void test_run_ahead_equals_step_by_step(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_serve_cfg c;
    hl_serve_init(&c, &j);
    c.concurrency = 6;
    c.requests = 120;
    c.input = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 100, 900};
    c.output = (hl_len_dist){HL_LEN_UNIFORM, 0, 0, 50, 600};
    c.shared_prefix = 64;
    c.session_turns = 3;
    c.session_think_s = 0.5;
    c.kv_blocks = 700;
    c.prefix_cache = 1;
    c.offload_bytes = 300 * 16 * 131072.0;
    c.offload_link = HL_OFFLOAD_PCIE_GEN5;
    c.offload_host = 2.56e11; /* a DGX H100: 2 TB of host memory over 8 GPUs */
    c.keep_requests = 1;
    hl_serve_result fast, slow;
    hl_err e;
    assert_ok(hl_serve_run(&c, &fast, &e), &e);
    c.keep_steps = 1;
    assert_ok(hl_serve_run(&c, &slow, &e), &e);
    assert_true(fast.offloaded_blocks > 0 && fast.host_hit_tokens > 0); /* the tier is exercised */
    assert_rel(fast.prefill_tokens_saved, slow.prefill_tokens_saved, 0, "tokens saved");
    assert_rel(fast.host_hit_tokens, slow.host_hit_tokens, 0, "host hits");
    assert_rel(fast.offloaded_blocks, slow.offloaded_blocks, 0, "offloaded blocks");
    assert_rel(fast.kv_cached_mean, slow.kv_cached_mean, 1e-9, "cached KV over time");
    assert_rel(fast.kv_cached_max, slow.kv_cached_max, 1e-12, "largest cached KV");
    assert_int_equal(fast.steps, slow.steps);
    for (int64_t i = 0; i < fast.requests; i++) {
        assert_rel(fast.reqs[i].ttft_s, slow.reqs[i].ttft_s, 1e-9, "TTFT");
        assert_rel(fast.reqs[i].e2e_s, slow.reqs[i].e2e_s, 1e-9, "e2e");
    }
    hl_serve_result_free(&fast);
    hl_serve_result_free(&slow);
}

/* Bad input: prefix caching where it is not modelled names the field. */
static void test_prefix_bad_input(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_trace_req tr[] = {{0, 2100, 2}};
    hl_serve_cfg c = trace_cfg(&j, tr, 1, 2000, 1);
    c.mode = HL_SERVE_ANALYTICAL;
    c.trace = NULL;
    c.n_trace = 0;
    c.rate = 1;
    c.keep_requests = c.keep_steps = 0;
    hl_serve_steady s;
    hl_err e;
    assert_int_equal(hl_serve_steady_run(&c, &s, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "prefix_cache"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_system_prompt),
        cmocka_unit_test(test_last_token_recomputed),
        cmocka_unit_test(test_same_step_no_hit),
        cmocka_unit_test(test_multi_turn_ttft),
        cmocka_unit_test(test_trace_columns),
        cmocka_unit_test(test_trace_columns_bad),
        cmocka_unit_test(test_offload_reload),
        cmocka_unit_test(test_no_sharing_equals_off),
        cmocka_unit_test(test_pressure_keeps_blocks_consistent),
        cmocka_unit_test(test_run_ahead_equals_step_by_step),
        cmocka_unit_test(test_prefix_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
