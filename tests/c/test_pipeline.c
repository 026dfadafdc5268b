/* The pipeline rule (docs/MODEL.md 6, "Pipeline"; core/src/layer_int.h) in
 * the serving step timer and hl_sim_run: a serving iteration with pipeline
 * stages worked out by hand, an iteration that carries the decodes of a
 * decode-only one never cheaper than it, and a decode step of the timer equal
 * to a decode step of hl_sim_run at any batch. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "step_int.h"

static double step_time(hl_stepper *st, double dec, double ctx, const hl_iter_chunk *ch, int n, double rows)
{
    hl_iter it = {dec, ctx, ctx, n, ch, rows, 0, 0};
    double t;
    hl_err e;
    assert_ok(hl_stepper_time(st, &it, &t, &e), &e);
    return t;
}

/* Llama-3.1-8B in BF16 on 4 H100, pp = 4 (8 layers a stage), tp = 1, no
 * overlap. Per layer: q/k/v/o 4096 x (4096 + 2 x 1024 + 4096) + FFN 3 x 4096 x
 * 14336 = 218,103,808 parameters, 436,207,616 B; a stage's 8 layers 3.490 GB.
 * LM head 128256 x 4096 x 2 B = 1.051 GB (read once per iteration, last stage).
 * KV per token: 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B.
 * Decode-only, 4 sequences at context 1000: 4 micro-batches of 1 sequence
 * (m = min(pp, 4)), each passing 4 stages; in steady state the iteration is
 * max(m, pp) = 4 stage slots of a 1-token pass: the weights are read 4 x
 * 3.490 = 13.96 GB (each micro-batch reads its stage's weights again), the LM
 * head 1.051 GB, the KV 4 x 1000 x 131,072 = 0.524 GB: 15.53 GB in all, at
 * hbm_bw x eff_mem = 3.35e12 x 0.8382 B/s: 5.53 ms (memory-bound: 2 x 218 M
 * FLOP a token and layer is 0.4 us at the H100's BF16 peak, against 130 us to
 * read the layer). Latencies come on top, at most 40 us a layer and slot
 * (4 GEMMs x 3.0 us launch + 0.45 ns x K = 4096 x 3 + 14336 of their serial
 * loops, 12.0 us; norms and activation 2 x 3.0 us; attention 3.0 + 7.0 us):
 * 32 x 40 us = 1.28 ms, so 5.53 .. 6.81 ms.
 * The same 4 decodes plus one 16-token chunk at offset 0 (5 sequences): m = 4;
 * the busiest micro-batch holds at least the chunk, 16 tokens, still memory-
 * bound, so 4 slots again read the same 15.53 GB (plus the chunk's tiny
 * attention and one more LM-head row): never less than the decodes alone.
 * The old rule timed the mixed iteration as one stage pass over all 20 tokens
 * scaled by (mb + pp - 1)/mb = 7/4: 1.75 x 3.490 + 1.051 + 0.524 = 7.68 GB,
 * half of the decode-only iteration that it contains (3.27 against 6.47 ms
 * measured on that rule). */
static void test_mixed_iteration_by_hand(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 4, 4);
    j.tp = 1;
    j.pp = 4;
    j.overlap_prefill = j.overlap_decode = 0;
    hl_stepper *st;
    hl_err e;
    assert_ok(hl_stepper_new(&j, 64, &st, &e), &e);
    double dec = step_time(st, 4, 1000, NULL, 0, 4);
    hl_iter_chunk ch[] = {{16, 0}};
    double mix = step_time(st, 4, 1000, ch, 1, 4);
    hl_stepper_free(st);
    double bw = j.cluster.gpu.hbm_bw * j.cluster.gpu.eff_mem;
    double hand = (4 * 8 * 436207616.0 + 128256.0 * 4096 * 2 + 4 * 1000 * 131072.0) / bw;
    printf("pp4 decode-only %.4g s, mixed %.4g s, by hand %.4g s\n", dec, mix, hand);
    if (!(dec >= hand && dec <= hand + 32 * 40e-6))
        fail_msg("decode-only iteration %g s, by hand %g .. %g s", dec, hand, hand + 32 * 40e-6);
    /* the old rule's half of the decodes alone fails here */
    if (!(mix >= dec && mix <= 1.1 * dec))
        fail_msg("mixed iteration %g s against the decode-only %g s: want 1 .. 1.1 times", mix, dec);
}

/* Over pipeline depths 1, 2, 4 and 8 (mb = pp, and mb = 1: one batch in flight),
 * decode counts 1..256 and chunk sets from one token to a long prompt, an
 * iteration with the decodes of a decode-only one and chunks besides is never
 * cheaper than the decode-only one (the old rule failed at the first case:
 * pp = 2, one decode plus a 1-token chunk took 1.85 ms, the decode alone 2.14). */
static void test_mixed_never_cheaper(void **state)
{
    (void)state;
    const int64_t pps[] = {1, 2, 4, 8};
    const double decs[] = {1, 2, 3, 4, 7, 8, 64, 256};
    const hl_iter_chunk sets[][3] = {{{1, 0}}, {{16, 0}}, {{512, 100}}, {{1, 0}, {1, 5}, {1, 9}}, {{2048, 0}, {8, 3}}};
    const int nsets[] = {1, 1, 1, 3, 2};
    for (size_t p = 0; p < sizeof pps / sizeof pps[0]; p++)
        for (int mb = 0; mb < 2; mb++) {
            hl_job j = job_for("llama-3.1-8b", "B200", 8, 8);
            j.tp = 8 / pps[p] >= 2 ? 2 : 1;
            j.pp = pps[p];
            j.microbatches = mb ? 1 : 0;
            hl_stepper *st;
            hl_err e;
            assert_ok(hl_stepper_new(&j, 4096, &st, &e), &e);
            for (size_t d = 0; d < sizeof decs / sizeof decs[0]; d++) {
                double alone = step_time(st, decs[d], 3000, NULL, 0, decs[d]);
                for (size_t k = 0; k < sizeof nsets / sizeof nsets[0]; k++) {
                    double with = step_time(st, decs[d], 3000, sets[k], nsets[k], decs[d] + 1);
                    if (!(with >= alone))
                        fail_msg("pp %lld mb %d: %g decodes + chunk set %zu take %g s, the decodes alone %g s",
                                 (long long)j.pp, mb ? 1 : (int)j.pp, decs[d], k, with, alone);
                }
            }
            hl_stepper_free(st);
        }
}

/* The step timer's decode-only iteration of n sequences at context c is one
 * decode step of hl_sim_run at batch n, input c (output 2, exact steps: the
 * single step attends over c cached keys): the same rule in both, at any
 * batch, not only alone (pp 4 keeps min(4, n) micro-batches in flight). */
static void test_decode_step_equals_simulate(void **state)
{
    (void)state;
    const double batches[] = {1, 2, 3, 4, 8, 64};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
        j.tp = 2;
        j.pp = 4;
        j.batch = batches[i];
        j.input = 1500;
        j.output = 2;
        j.exact_steps = 1;
        hl_result r;
        hl_err e;
        assert_ok(hl_sim_run(&j, &r, &e), &e);
        hl_stepper *st;
        assert_ok(hl_stepper_new(&j, 64, &st, &e), &e);
        double t = step_time(st, batches[i], 1500, NULL, 0, batches[i]);
        hl_stepper_free(st);
        assert_rel(t, r.tpot_s, 1e-9, "decode step = hl_sim_run's TPOT");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_iteration_by_hand),
        cmocka_unit_test(test_mixed_never_cheaper),
        cmocka_unit_test(test_decode_step_equals_simulate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
