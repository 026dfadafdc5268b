/* The list of collectives a simulated job counted (the collective rows of
 * hl_result's breakdown items, docs/MODEL.md 6.3): bytes, ranks, HBDs and
 * calls worked out by hand for small TP2 x PP2 jobs, and per-call times x
 * calls summing to each phase's communication time. */
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

/* The collective row `name` of a phase with S = bytes per call (any S when bytes < 0); NULL if none. */
static const hl_item *find_coll(const hl_item *items, int n, const char *name, double bytes)
{
    for (int i = 0; i < n; i++)
        if (items[i].is_comm && strcmp(items[i].name, name) == 0 && (bytes < 0 || items[i].call_bytes == bytes))
            return &items[i];
    return NULL;
}

static int count_comm(const hl_item *items, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += items[i].is_comm;
    return c;
}

/* Llama-3.1-8B on 4 H100 in HBDs of 2, tp = 2, pp = 2, batch 2, input 64, output 3. */
static hl_job tp2pp2_job(void)
{
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 4, 2);
    j.tp = 2;
    j.pp = 2;
    j.batch = 2;
    j.input = 64;
    j.output = 3;
    return j;
}

static void check_row(const hl_item *it, const char *label, hl_coll_op op, double bytes, int64_t ranks, int64_t hbds,
                      double calls, int per_pass, double up, double out)
{
    if (!it)
        fail_msg("%s: no such row", label);
    assert_int_equal(it->op, op);
    assert_rel(it->call_bytes, bytes, 0, label);
    assert_int_equal(it->ranks, ranks);
    assert_int_equal(it->hbds, hbds);
    assert_int_equal(it->tier, hbds > 1);
    assert_rel(it->calls, calls, 0, label);
    assert_int_equal(it->per_pass, per_pass);
    assert_rel(it->call_scaleup_bytes, up, 1e-12, label);
    assert_rel(it->call_scaleout_bytes, out, 1e-12, label);
    assert_rel(it->time_s, it->calls * it->call_time_s, 1e-12, label);
    assert_rel(it->bytes, it->calls * (up + out), 1e-12, label);
    assert_true(it->call_latency_s > 0 && it->call_latency_s <= it->call_time_s);
}

/* Llama-3.1-8B (h = 4096, 32 layers, vocab 128256, BF16: a = 2 B) on 4 H100 in
 * HBDs of 2, tp = 2, pp = 2 (dp = 1), batch b = 2, input 64, output 3, no
 * overlap. Ranks tp,dp,pp: TP group {0,1} inside HBD 0; stage neighbours 2
 * ranks apart, in different HBDs. Stage layers 16.
 * Pipeline micro-batches (MODEL.md 6, "Pipeline"): m = min(mb = pp = 2, b = 2)
 * = 2, one sequence each.
 * Prefill, T = b * input = 128 tokens, in 2 micro-batches of 64:
 * - tp_allreduce: S = 64 h a = 64 * 4096 * 2 = 524,288 B over 2 ranks in 1
 *   HBD; 2 per layer (after attention, after the FFN) x 16 x m = 64 calls; every
 *   algorithm on 2 ranks sends S per GPU (ring 2(n-1)/n S = S), all scale-up;
 *   inside the layers, so path_factor = (m + pp - 1) / m = (2 + 1) / 2 = 1.5.
 * - logits_allgather: S = b vocab a = 2 * 128256 * 2 = 513,024 B (the output)
 *   over the 2 TP ranks, 1 call; each GPU sends its (n-1)/n = half: 256,512 B.
 * - token_broadcast: S = b * 4 = 8 B over tp pp = 4 ranks packed in 2 HBDs, 1 call.
 * - pp_sendrecv: over 2 ranks in 2 HBDs, pp - 1 = 1 call, all scale-out:
 *   every prompt token's hidden vector crosses the stage boundary,
 *   S = T h a = 128 * 4096 * 2 = 1,048,576 B (it was b h a = 16,384 B, one
 *   vector per sequence, until the prefill's per-pass operators counted T).
 * Decode, output - 1 = 2 steps, each max(m, pp) = 2 stage slots of one
 * micro-batch (4 stage passes on the critical path):
 * - tp_allreduce: S = (b/m) h a = 8,192 B, 2 x 16 x 4 = 128 calls;
 * - pp_sendrecv: 16,384 B, 2 calls; logits_allgather 513,024 B, 2 calls;
 *   token_broadcast 8 B, 2 calls. */
static void test_tp2pp2_collectives_by_hand(void **state)
{
    (void)state;
    hl_job j = tp2pp2_job();
    j.overlap_prefill = 0;
    j.overlap_decode = 0;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    const hl_item *p = r.prefill_items, *d = r.decode_items;
    int np = r.n_prefill_items, nd = r.n_decode_items;
    assert_int_equal(count_comm(p, np), 4);
    assert_int_equal(count_comm(d, nd), 4);
    check_row(find_coll(p, np, "tp_allreduce", -1), "prefill tp_allreduce", HL_ALLREDUCE, 524288, 2, 1, 64, 0, 524288,
              0);
    check_row(find_coll(p, np, "logits_allgather", -1), "prefill logits", HL_ALLGATHER, 513024, 2, 1, 1, 1, 256512, 0);
    check_row(find_coll(p, np, "pp_sendrecv", -1), "prefill pp_sendrecv", HL_SENDRECV, 1048576, 2, 2, 1, 1, 0, 1048576);
    const hl_item *tb = find_coll(p, np, "token_broadcast", -1);
    assert_non_null(tb);
    assert_int_equal(tb->op, HL_BROADCAST);
    assert_rel(tb->call_bytes, 8, 0, "token broadcast bytes");
    assert_int_equal(tb->ranks, 4);
    assert_int_equal(tb->hbds, 2);
    assert_int_equal(tb->ranks_per_hbd, 2);
    assert_rel(tb->calls, 1, 0, "token broadcast calls");
    assert_rel(find_coll(p, np, "tp_allreduce", -1)->path_factor, 1.5, 0, "pipeline fill of rows inside the layers");
    assert_rel(tb->path_factor, 1, 0, "once-per-pass rows");

    check_row(find_coll(d, nd, "tp_allreduce", -1), "decode tp_allreduce", HL_ALLREDUCE, 8192, 2, 1, 128, 0, 8192, 0);
    check_row(find_coll(d, nd, "pp_sendrecv", -1), "decode pp_sendrecv", HL_SENDRECV, 16384, 2, 2, 2, 1, 0, 16384);
    check_row(find_coll(d, nd, "logits_allgather", -1), "decode logits", HL_ALLGATHER, 513024, 2, 1, 2, 1, 256512, 0);
    assert_rel(find_coll(d, nd, "token_broadcast", -1)->calls, 2, 0, "decode token broadcast calls");

    /* the listed time of one call is the collective model's time of the listed shape
     * (H100's scale-out is far below scale-up: no rerouting, MODEL.md 6) */
    hl_coll_in in = {HL_ALLREDUCE, HL_ALGO_AUTO, 524288, 2, 2, 0};
    hl_coll_out o;
    assert_ok(hl_coll_time(&j.cluster, &in, &o, &e), &e);
    assert_rel(find_coll(p, np, "tp_allreduce", -1)->call_time_s, o.time_s, 1e-12, "TP AllReduce per call");

    /* calls x time per call (x the pipeline fill inside the layers) = the phase's
     * communication time (no overlap here, so nothing is hidden) */
    double pre = 0, dec = 0;
    for (int i = 0; i < np; i++)
        if (p[i].is_comm)
            pre += p[i].calls * p[i].call_time_s * (p[i].per_pass ? 1 : 1.5);
    for (int i = 0; i < nd; i++)
        if (d[i].is_comm)
            dec += d[i].calls * d[i].call_time_s;
    assert_rel(pre, r.prefill.comm_s, 1e-12, "prefill comm = sum of calls x time");
    assert_rel(dec, r.decode.comm_s, 1e-12, "decode comm = sum of calls x time");
    /* and the scale-up / scale-out split: latency aside, what each tier's rows take */
    double up = 0, lat = 0;
    for (int i = 0; i < nd; i++)
        if (d[i].is_comm) {
            lat += d[i].calls * d[i].call_latency_s;
            if (!d[i].tier)
                up += d[i].calls * (d[i].call_time_s - d[i].call_latency_s);
        }
    assert_rel(lat, r.decode.latency_comm_s, 1e-12, "decode latency part");
    assert_rel(up, r.decode.scaleup_comm_s, 1e-12, "decode scale-up part");
}

/* Speculative decode on the same job with 1 draft token, always accepted, 1
 * draft layer: E = 2 tokens per step, so the 2 tokens take n = 1 verify step
 * of q = 2 tokens per sequence. Verify: layer passes n x stages = 2, 16 layers
 * each, 2 AllReduce per layer = 64 calls of b q h a = 2 * 2 * 4096 * 2 =
 * 32,768 B. Draft: n x 1 draft layer = 1 layer, 2 calls of b h a = 16,384 B.
 * Same name, two shapes: two rows. */
static void test_speculative_rows_by_shape(void **state)
{
    (void)state;
    hl_job j = tp2pp2_job();
    j.spec_tokens = 1;
    j.spec_accept = 1;
    j.spec_draft_layers = 1;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    const hl_item *v = find_coll(r.decode_items, r.n_decode_items, "tp_allreduce", 32768);
    const hl_item *dr = find_coll(r.decode_items, r.n_decode_items, "tp_allreduce", 16384);
    assert_non_null(v);
    assert_non_null(dr);
    assert_rel(v->calls, 64, 1e-12, "verify AllReduce calls");
    assert_rel(dr->calls, 2, 1e-12, "draft AllReduce calls");
}

/* Summary mode lists nothing (and costs nothing): the arrays stay untouched. */
static void test_summary_lists_nothing(void **state)
{
    (void)state;
    hl_job j = tp2pp2_job();
    j.summary_only = 1;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_int_equal(r.n_prefill_items, 0);
    assert_int_equal(r.n_decode_items, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp2pp2_collectives_by_hand),
        cmocka_unit_test(test_speculative_rows_by_shape),
        cmocka_unit_test(test_summary_lists_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
