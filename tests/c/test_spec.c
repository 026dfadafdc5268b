/* Speculative decoding / MTP (docs/MODEL.md 6.2) and its checks. */
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

static const hl_item *find_item(const hl_item *items, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].name, name) == 0)
            return &items[i];
    return NULL;
}

/* Llama-3.1-8B (h 4096, F 14336, 32 layers, BF16) on one H100, batch 1,
 * output 101: 100 decode tokens. ffn_up_gate is a GEMM of m = T rows,
 * n = 2F = 28672, k = h = 4096: reads T*4096*2 + 4096*28672*2 B, writes
 * T*28672*2 B, 2*T*28672*4096 FLOP.
 * - plain decode, T = 1, 100 steps: 234,946,560 B per step, 23,494,656,000 B
 *   and 23,488,102,400 FLOP per layer;
 * - 1 draft token always accepted, no draft cost: 2 tokens per step, 50 verify
 *   steps of T = 2: 235,012,096 B per step, 11,750,604,800 B per layer (the
 *   weights are read half as often) and the same 23,488,102,400 FLOP.
 * Tokens per step with 3 drafts accepted with p = 0.8: 1 + 0.8 + 0.64 + 0.512 = 2.952. */
static void test_speculative_verify_steps(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = 1;
    j.input = 1000;
    j.output = 101;
    hl_result plain, spec;
    hl_err e;
    assert_ok(hl_sim_run(&j, &plain, &e), &e);
    assert_rel(plain.tokens_per_step, 1, 0, "tokens per step without speculation");
    j.spec_tokens = 1;
    j.spec_accept = 1;
    j.spec_draft_layers = 0;
    assert_ok(hl_sim_run(&j, &spec, &e), &e);
    assert_rel(spec.tokens_per_step, 2, 1e-15, "one draft always accepted");
    const hl_item *a = find_item(plain.decode_items, plain.n_decode_items, "ffn_up_gate");
    const hl_item *b = find_item(spec.decode_items, spec.n_decode_items, "ffn_up_gate");
    assert_non_null(a);
    assert_non_null(b);
    assert_rel(a->bytes / 32, 23494656000.0, 1e-12, "plain ffn_up_gate bytes per layer");
    assert_rel(b->bytes / 32, 11750604800.0, 1e-12, "verify ffn_up_gate bytes per layer");
    assert_rel(a->flops / 32, 23488102400.0, 1e-12, "plain ffn_up_gate FLOP per layer");
    assert_rel(b->flops / 32, 23488102400.0, 1e-12, "verify ffn_up_gate FLOP per layer");
    /* memory-bound decode: half the weight reads, so TPOT falls (not exactly by half) */
    assert_true(spec.tpot_s < 0.6 * plain.tpot_s);
    assert_rel(spec.ttft_s, plain.ttft_s, 1e-15, "prefill unchanged");

    j.spec_tokens = 3;
    j.spec_accept = 0.8;
    j.spec_draft_layers = 1;
    assert_ok(hl_sim_run(&j, &spec, &e), &e);
    assert_rel(spec.tokens_per_step, 2.952, 1e-12, "3 drafts at acceptance 0.8");
    /* a drafter costs time: more draft layers never make it faster */
    hl_result heavy;
    j.spec_draft_layers = 8;
    assert_ok(hl_sim_run(&j, &heavy, &e), &e);
    assert_true(heavy.tpot_s > spec.tpot_s);
}

/* Bad speculative inputs name the field; the serving step timer refuses it. */
static void test_speculative_bad_input(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_result r;
    hl_err e;
    j.spec_tokens = 2;
    assert_int_equal(hl_sim_run(&j, &r, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "spec_accept"));
    j.spec_accept = 0.7;
    j.spec_tokens = 2.5;
    assert_int_equal(hl_sim_run(&j, &r, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "spec_tokens"));
}

/* Per-position acceptance (spec_accept = {a1, ..., a_gamma}): a verify pass keeps k drafts with
 * probability a1...ak (1 - a_{k+1}), so E = 1 + a1 + a1 a2 + a1 a2 a3. By hand for {0.9, 0.8, 0.6}:
 * 1 + 0.9 + 0.72 + 0.432 = 3.052 (the i.i.d. 0.8 gives 2.952: position matters). A vector of equal
 * entries is the scalar: E and TPOT equal to rounding. */
static void test_speculative_per_position(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = 8;
    j.input = 1024;
    j.output = 257;
    j.spec_tokens = 3;
    j.spec_accept = 0.8;
    hl_result iid, vec, flat;
    hl_err e;
    assert_ok(hl_sim_run(&j, &iid, &e), &e);
    const double pos[3] = {0.9, 0.8, 0.6}, same[3] = {0.8, 0.8, 0.8};
    assert_ok(hl_job_set_spec_accept(&j, pos, 3, &e), &e);
    assert_true(j.spec_accept == 0); /* the vector replaces the scalar */
    assert_ok(hl_sim_run(&j, &vec, &e), &e);
    assert_rel(vec.tokens_per_step, 3.052, 1e-12, "E of {0.9, 0.8, 0.6}, by hand");
    /* 256 tokens after the first: 256 / 3.052 verify passes against 256 / 2.952, each the same pass */
    assert_rel(vec.decode.time_s / iid.decode.time_s, 2.952 / 3.052, 1e-3, "decode time scales as 1 / E");
    assert_ok(hl_job_set_spec_accept(&j, same, 3, &e), &e);
    assert_ok(hl_sim_run(&j, &flat, &e), &e);
    assert_rel(flat.tokens_per_step, iid.tokens_per_step, 1e-15, "equal entries: the scalar's E");
    assert_rel(flat.tpot_s, iid.tpot_s, 1e-12, "equal entries: the scalar's TPOT");
}

/* Bad acceptance vectors name the field, the entry, its value and what is allowed. */
static void test_speculative_bad_vector(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    hl_result r;
    hl_err e;
    const double two[2] = {0.9, 0.8}, zero[3] = {0.9, 0, 0.5}, big[3] = {0.9, 1.5, 0.5}, many[17] = {0.5};
    assert_int_equal(hl_job_set_spec_accept(&j, zero, 3, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "field 'spec_accept': entry 2 is 0"));
    assert_int_equal(hl_job_set_spec_accept(&j, big, 3, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "entry 2 is 1.5"));
    assert_int_equal(hl_job_set_spec_accept(&j, many, 17, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "17 positions"));
    assert_int_equal(j.spec_accept_n, 0); /* a refused vector leaves the job as it was */
    j.spec_tokens = 3;
    assert_ok(hl_job_set_spec_accept(&j, two, 2, &e), &e);
    assert_int_equal(hl_sim_run(&j, &r, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "a vector of 2 positions with spec_tokens = 3"));
    j.spec_tokens = 2;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.tokens_per_step, 1 + 0.9 + 0.72, 1e-12, "{0.9, 0.8}");
    j.spec_accept = 0.7; /* a number set over the vector (a sweep axis): refused, not guessed */
    assert_int_equal(hl_sim_run(&j, &r, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "both a number (0.7) and a vector of 2 positions"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speculative_verify_steps),
        cmocka_unit_test(test_speculative_bad_input),
        cmocka_unit_test(test_speculative_per_position),
        cmocka_unit_test(test_speculative_bad_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
