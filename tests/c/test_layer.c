/* One pass's operators and collectives (core/src/layer.c): MoE expert reads at
 * small batch, the collective algorithm inside a job, the all-gather after a
 * sequence-split MoE combine, hierarchical dispatch, redundant experts, and
 * monotonicity in HBD size, bandwidths and peaks. */
#include <stdlib.h>
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

/* Mixtral (8 experts, top-2) on one GPU, batch 1, one decode step: a token
 * picks 2 distinct experts, so exactly 2 experts are read per MoE layer
 * (1.875 with the old with-replacement count 8(1-(7/8)^2)). Per layer, by hand:
 * expert weights 3 * 14336 * 4096 * 2 B = 352,321,536 B each; activations of
 * tok_e = 1 * 2 / 8 = 0.25 tokens per expert over 8 experts:
 * 8 * 0.25 * (4096 + 14336 + 2*14336 + 4096) * 2 B = 204,800 B.
 * Total 2 * 352,321,536 + 204,800 = 704,847,872 B per layer, 32 layers. */
static void test_topk_distinct_experts_exact(void **state)
{
    (void)state;
    hl_job j = job_for("mixtral-8x7b", "H100-SXM", 1, 1);
    j.batch = 1;
    j.input = 100;
    j.output = 2;
    j.ignore_memory = 1;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    const hl_item *it = find_item(r.decode_items, r.n_decode_items, "experts");
    assert_non_null(it);
    assert_rel(it->bytes / 32, 704847872.0, 1e-12, "expert bytes per layer, one decode step");
}

/* DeepSeek-V3 on 32 GPUs, TP32 attention, EP32 (8 experts per rank), batch 1:
 * each layer waits for the busiest rank. The 8 experts of the token land on
 * distinct experts; the busiest rank holds at least one of them, and on average
 * more when two fall on one rank. The expected maximum is measured here by
 * sampling the routing (exact combinatorics, not the model's formula) and the
 * model must agree within 2% (its binomial-per-rank approximation gives 1.591
 * vs the sampled about 1.603); the old count read 0.246 experts. */
static void test_busiest_ep_rank_reads_whole_experts(void **state)
{
    (void)state;
    srand(7);
    double sum = 0;
    const int n = 200000;
    for (int s = 0; s < n; s++) {
        int used[256] = {0}, per_rank[32] = {0}, best = 0;
        for (int picked = 0; picked < 8;) {
            int x = rand() % 256;
            if (used[x])
                continue;
            used[x] = 1;
            picked++;
            if (++per_rank[x / 8] > best)
                best = per_rank[x / 8];
        }
        sum += best;
    }
    double expect = sum / n;
    hl_job j = job_for("deepseek-v3", "H100-SXM", 32, 8);
    j.precision = HL_FP8;
    j.tp = 32;
    j.ep = 32;
    j.batch = 1;
    j.input = 100;
    j.output = 2;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    const hl_item *it = find_item(r.decode_items, r.n_decode_items, "experts");
    assert_non_null(it);
    double expert_bytes = 3.0 * 2048 * 7168 * 1; /* one FP8 expert: 44,040,192 B */
    double read = it->bytes / 58 / expert_bytes; /* 58 MoE layers, one step; activations < 1e-3 expert */
    printf("busiest EP rank reads %.4f experts per layer (sampled exact %.4f)\n", read, expect);
    assert_true(read >= 1);
    assert_rel(read, expect, 0.02, "experts read by the busiest rank");
}

/* coll_algo = nccl: the TP AllReduce of every layer uses NCCL's algorithms.
 * Llama-3.1-70B TP8 on 8 H100, batch 1, one decode step: 2 AllReduces of
 * 1 * 8192 * 2 B per layer, 80 layers; the item time must equal 160 times the
 * collective model's NCCL-set time, and auto (one-shot allowed) is faster. */
static void test_coll_algo_nccl(void **state)
{
    (void)state;
    hl_job j = job_for("llama-3.1-70b", "H100-SXM", 8, 8);
    j.tp = 8;
    j.batch = 1;
    j.input = 128;
    j.output = 2;
    hl_result any, nccl;
    hl_err e;
    assert_ok(hl_sim_run(&j, &any, &e), &e);
    j.coll_algo = HL_COLL_NCCL;
    assert_ok(hl_sim_run(&j, &nccl, &e), &e);
    hl_coll_in in = {HL_ALLREDUCE, HL_ALGO_NCCL, 8192 * 2, 8, 8, 0};
    hl_coll_out o;
    assert_ok(hl_coll_time(&j.cluster, &in, &o, &e), &e);
    const hl_item *it = find_item(nccl.decode_items, nccl.n_decode_items, "tp_allreduce");
    assert_non_null(it);
    assert_rel(it->time_s, 160 * o.time_s, 1e-12, "TP AllReduce with NCCL's algorithms");
    assert_true(nccl.tpot_s > any.tpot_s);
}

/* TP4 attention with EP8 (DeepSeek-V3, 8 H200): each TP rank routes and
 * combines T/4 of the group's T = 512 tokens, so attention needs them gathered
 * again: one AllGather of T * h * 2 B over the 4 TP ranks per MoE layer (58). */
static void test_allgather_after_sequence_split_combine(void **state)
{
    (void)state;
    hl_job j = job_for("deepseek-v3", "H200", 8, 8);
    j.precision = HL_FP8;
    j.tp = 4;
    j.ep = 8;
    j.batch = 2; /* dp = 2: one sequence per attention group */
    j.input = 512;
    j.output = 2;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    hl_coll_in in = {HL_ALLGATHER, HL_ALGO_AUTO, 512.0 * 7168 * 2, 4, 4, 0};
    hl_coll_out o;
    assert_ok(hl_coll_time(&j.cluster, &in, &o, &e), &e);
    const hl_item *it = find_item(r.prefill_items, r.n_prefill_items, "moe_allgather");
    assert_non_null(it);
    assert_rel(it->time_s, 58 * o.time_s, 1e-12, "AllGather after the combine");
    j.tp = 1; /* no TP: nothing to gather */
    j.batch = 8;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_null(find_item(r.prefill_items, r.n_prefill_items, "moe_allgather"));
}

/* Hierarchical dispatch: DeepSeek-V3 on 16 H100, EP2 (etp 8), prefill overlap
 * 0.25: TTFT never rises from HBD 1 to 16 (it rose from HBD 1 to 2 when a
 * one-GPU HBD skipped the fan-out of each token to the expert shards). */
static void test_hierarchical_dispatch_larger_hbd_not_slower(void **state)
{
    (void)state;
    for (int64_t tp = 1; tp <= 8; tp *= 8) {
        double last = 1e30;
        for (int64_t hbd = 1; hbd <= 16; hbd *= 2) {
            hl_job j = job_for("deepseek-v3", "H100-SXM", 16, hbd);
            j.precision = HL_FP8;
            j.tp = tp;
            j.ep = 2;
            j.batch = 64;
            j.input = 8192;
            j.output = 2;
            j.overlap_prefill = 0.25;
            j.dispatch = HL_DISPATCH_HIERARCHICAL;
            j.ignore_memory = 1;
            hl_result r;
            hl_err e;
            assert_ok(hl_sim_run(&j, &r, &e), &e);
            printf("tp %lld hbd %2lld: TTFT %.3f s\n", (long long)tp, (long long)hbd, r.ttft_s);
            assert_true(r.ttft_s <= last * (1 + 1e-12));
            last = r.ttft_s;
        }
    }
}

/* The hierarchical-dispatch job both pipelined-legs tests run: DeepSeek-V3 FP8 prefill on 32
 * H100 in HBDs of 8, EP32, TP1, 16 sequences of 1,024 tokens a GPU, FP8 on the wire. */
static hl_job deepep_ep32_prefill_job(void)
{
    hl_job j = job_for("deepseek-v3", "H100-SXM", 32, 8);
    j.precision = HL_FP8;
    j.kv_precision = HL_BF16;
    j.tp = 1;
    j.ep = 32;
    j.batch = 16 * 32;
    j.input = 1024;
    j.output = 1;
    j.dispatch = HL_DISPATCH_HIERARCHICAL;
    j.wire_precision = HL_FP8;
    j.ignore_memory = 1;
    return j;
}

/* Runs a hierarchical-dispatch job and returns its two dispatch rows (RDMA leg `inter`, NVLink
 * leg `intra`, both pointing into *r) and `up`: the intra All-to-All of the NVLink row's bytes
 * timed alone on one HBD of 8 GPUs (balanced), the leg the pipelined cost is checked against. */
static void run_dispatch_legs(const hl_job *j, hl_result *r, const hl_item **inter, const hl_item **intra,
                              hl_coll_out *up)
{
    hl_err e;
    assert_ok(hl_sim_run(j, r, &e), &e);
    *inter = find_item(r->prefill_items, r->n_prefill_items, "ep_dispatch_inter");
    *intra = find_item(r->prefill_items, r->n_prefill_items, "ep_dispatch_intra");
    assert_non_null(*inter);
    assert_non_null(*intra);
    hl_coll_in in = {HL_ALLTOALL, HL_ALGO_AUTO, (*intra)->call_bytes, 8, 8, 1};
    hl_cluster one = j->cluster;
    one.gpus = 8;
    assert_ok(hl_coll_time(&one, &in, up, &e), &e);
}

/* DeepEP's normal internode kernels pipeline the RDMA and NVLink legs in one kernel
 * (csrc/kernels/legacy/internode.cu: sender, forwarder and receiver warps at once), so a
 * hierarchical exchange costs both latencies plus the slower leg's streaming time
 * (docs/MODEL.md 6). DeepSeek-V3 prefill on 32 H100 in HBDs of 8, EP32, TP1 (nothing
 * else uses scale-up): per call the dispatch sends 424.5 MB over RDMA at ~62 GB/s
 * (6.8 ms) and 853 MB over NVLink at ~336 GB/s (2.5 ms), so the NVLink leg is hidden:
 * (1) its row costs exactly the intra All-to-All's latency per call (its bytes cost
 * nothing past the RDMA leg); (2) doubling the NVLink bandwidth leaves TTFT unchanged,
 * where the sum of the legs of before fell by half the 2.5 ms per call. */
static void test_hierarchical_legs_pipelined(void **state)
{
    (void)state;
    hl_job j = deepep_ep32_prefill_job();
    hl_result r;
    hl_err e;
    const hl_item *inter, *intra;
    hl_coll_out o;
    run_dispatch_legs(&j, &r, &inter, &intra, &o);
    assert_true(o.time_s - o.latency_s < inter->call_time_s); /* the NVLink leg streams faster */
    assert_rel(intra->call_time_s, o.latency_s, 1e-9, "NVLink leg past the RDMA leg: its latency alone");
    double ttft = r.ttft_s;
    j.cluster.scaleup_bw *= 2;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    assert_rel(r.ttft_s, ttft, 1e-12, "TTFT with twice the NVLink bandwidth (leg hidden)");
}

/* The other side of the pipelined legs (revfid): with NVLink at a third of its bandwidth (~112
 * GB/s) the 853 MB scale-up leg (~7.6 ms) is slower than the 424.5 MB RDMA leg (~6.8 ms), and
 * sending every copy over RDMA instead (g' = 1, 853 MB at ~62 GB/s, ~13.8 ms) is slower still, so
 * the runtime keeps forwarding domains of 8. Then t = l_out + l_up + (t_up - l_up) = l_out + t_up:
 * the RDMA row is its own leg's time, the NVLink row what its leg adds past it,
 * t_up - (t_out - l_out), where t_up is the intra All-to-All of the row's bytes timed alone
 * (hl_coll_time, 8 GPUs); the rows sum to l_out + t_up. Fails on the old sum of the legs (the
 * NVLink row was t_up) and on a max that dropped either latency. */
static void test_hierarchical_legs_pipelined_nvlink_slower(void **state)
{
    (void)state;
    hl_job j = deepep_ep32_prefill_job();
    j.cluster.scaleup_bw /= 3;
    j.imbalance = 1; /* balanced routing: the legs' All-to-Alls carry no imbalance factor */
    hl_result r;
    const hl_item *inter, *intra;
    hl_coll_out o;
    run_dispatch_legs(&j, &r, &inter, &intra, &o);
    double out_stream = inter->call_time_s - inter->call_latency_s;
    assert_true(o.time_s - o.latency_s > out_stream); /* the NVLink leg is the slower one here */
    assert_rel(intra->call_latency_s, o.latency_s, 1e-12, "NVLink row's latency: its leg's");
    assert_rel(intra->call_time_s, o.time_s - out_stream, 1e-9, "NVLink row: t_up - (t_out - l_out)");
    assert_rel(inter->call_time_s + intra->call_time_s, inter->call_latency_s + o.time_s, 1e-9,
               "both rows: l_out + t_up");
}

#ifndef SEED
#define SEED 16
#endif
#ifndef NCHECK
#define NCHECK 250
#endif

static double frand(double lo, double hi) { return lo + (hi - lo) * rand() / (double)RAND_MAX; }

/* Property: on random valid configurations (dense and MoE models, both
 * dispatch algorithms, random mapping, overlap, precision), TTFT and TPOT
 * never increase when the HBD doubles, when any bandwidth (HBM, scale-up,
 * scale-out) grows, or when any peak FLOP/s grows. HBD sizes nest (the larger
 * is a multiple of the smaller: a group packed in the smaller HBD stays packed)
 * and the HBD stays the faster tier (scale-up bandwidth >= scale-out, latency
 * <= scale-out), which is what makes it a high-bandwidth domain. */
static void test_monotone_in_hbd_bandwidth_peak(void **state)
{
    (void)state;
    static const char *const models[] = {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b",
                                         "deepseek-v3",  "qwen3-30b-a3b", "gpt-oss-120b"};
    static const char *const gpus[] = {"H100-SXM", "B200", "H200", "MI300X"};
    srand(SEED);
    int checked = 0, tried = 0;
    while (checked < NCHECK && tried < 20000 * NCHECK / 250) {
        tried++;
        int64_t G = 8 << (rand() % 3), hbd = 1 << (rand() % 4);
        if (hbd > G)
            hbd = G;
        hl_job j = job_for(models[rand() % 6], gpus[rand() % 4], G, hbd);
        j.cluster.fabric = HL_FABRIC_SWITCH; /* a mesh's per-peer bandwidth depends on the HBD size by design */
        j.precision = rand() % 2 ? HL_FP8 : HL_BF16;
        j.kv_precision = rand() % 2 ? HL_FP8 : HL_BF16;
        j.tp = 1 << (rand() % 4);
        j.pp = 1 << (rand() % 2);
        j.ep = j.model.experts > 0 ? 1 << (rand() % 4) : 1;
        j.batch = (double)((1 + rand() % 8) * 64);
        j.input = 1 + rand() % 4000;
        j.output = 2 + rand() % 200;
        j.overlap_prefill = rand() % 2 ? frand(0, 1) : 0;
        j.overlap_decode = rand() % 2 ? frand(0, 1) : 0;
        j.dispatch = rand() % 2 ? HL_DISPATCH_HIERARCHICAL : HL_DISPATCH_FLAT;
        j.coll_algo = rand() % 2 ? HL_COLL_NCCL : HL_COLL_ANY;
        j.sequence_parallel = rand() % 4 == 0;
        j.ignore_memory = 1;
        j.cluster.scaleout_bw = frand(0.1, 1) * j.cluster.scaleup_bw;
        hl_result base, r;
        hl_err e;
        if (hl_sim_run(&j, &base, &e) != HL_OK)
            continue; /* an invalid random mapping */
        for (int change = 0; change < 4; change++) {
            hl_job k = j;
            double f = frand(1.01, 3);
            switch (change) {
            case 0: /* HBD doubles */
                if (k.cluster.hbd * 2 > G)
                    continue;
                k.cluster.hbd *= 2;
                break;
            case 1: /* HBM bandwidth */ k.cluster.gpu.hbm_bw *= f; break;
            case 2: /* a link: scale-up or scale-out */
                if (rand() % 2)
                    k.cluster.scaleup_bw *= f;
                else
                    k.cluster.scaleout_bw = fmin(k.cluster.scaleout_bw * f, k.cluster.scaleup_bw);
                break;
            default: /* a peak */
                for (int p = 0; p < 6; p++)
                    if (rand() % 2)
                        k.cluster.gpu.peak_flops[p] *= f;
                break;
            }
            assert_ok(hl_sim_run(&k, &r, &e), &e);
            if (!(r.ttft_s <= base.ttft_s * (1 + 1e-9)) || !(r.tpot_s <= base.tpot_s * (1 + 1e-9)))
                fail_msg("change %d (x%.3f) on %s G%lld hbd%lld tp%lld pp%lld ep%lld dispatch %d nccl %d: TTFT %.9g -> "
                         "%.9g, TPOT %.9g -> %.9g",
                         change, f, j.model.name, (long long)G, (long long)j.cluster.hbd, (long long)j.tp,
                         (long long)j.pp, (long long)j.ep, j.dispatch, j.coll_algo, base.ttft_s, r.ttft_s, base.tpot_s,
                         r.tpot_s);
        }
        checked++;
    }
    printf("monotone on %d random valid configurations\n", checked);
    assert_true(checked >= NCHECK);
}

/* Redundant experts (EPLB): Mixtral's 8 experts on EP3 need one replica slot
 * (9 slots, 3 per GPU). By hand, on 3 GPUs (tp 1, dp 3, ep 3, etp 1):
 * - without a replica the job is refused, naming redundant_experts;
 * - one more slot per GPU (4 replicas: 12 slots, 4 per GPU) adds one expert's
 *   weights per MoE layer: 3 * 14336 * 4096 * 2 B * 32 layers = 11,274,289,152 B;
 * - the expert FLOPs per GPU do not depend on the replicas: tokens spread over
 *   the slots, N k / slots per slot times slots / ep slots per GPU. Prefill of
 *   3 x 100 tokens: 6 * (300 * 2 / 3) * 14336 * 4096 = 70,464,307,200 FLOP per layer.
 * The job states imbalance = 1 (the mean rank): the routing model's busiest rank,
 * which EPLB's packing of 9 slots makes 3/8 of the load instead of 1/3, is
 * tests/c/test_expert_load.c's subject. */
static void test_redundant_experts(void **state)
{
    (void)state;
    hl_job j = job_for("mixtral-8x7b", "H100-SXM", 3, 3);
    j.batch = 3;
    j.input = 100;
    j.output = 2;
    j.ep = 3;
    j.ignore_memory = 1;
    j.imbalance = 1;
    hl_result r1, r4;
    hl_err e;
    assert_int_equal(hl_sim_run(&j, &r1, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "redundant_experts"));
    j.redundant_experts = 1;
    assert_ok(hl_sim_run(&j, &r1, &e), &e);
    j.redundant_experts = 4;
    assert_ok(hl_sim_run(&j, &r4, &e), &e);
    assert_rel(r4.weights_bytes - r1.weights_bytes, 11274289152.0, 1e-9, "one more expert slot per GPU");
    const hl_item *a = find_item(r1.prefill_items, r1.n_prefill_items, "experts");
    const hl_item *b = find_item(r4.prefill_items, r4.n_prefill_items, "experts");
    assert_non_null(a);
    assert_non_null(b);
    assert_rel(a->flops / 32, 70464307200.0, 1e-12, "expert FLOPs per layer, 1 replica");
    assert_rel(b->flops / 32, 70464307200.0, 1e-12, "expert FLOPs per layer, 4 replicas");
    hl_model dense;
    assert_ok(hl_model_preset("llama-3.1-8b", &dense, &e), &e);
    j.model = dense;
    j.ep = 1;
    assert_int_equal(hl_sim_run(&j, &r1, &e), HL_EINVAL);
    assert_non_null(strstr(e.msg, "redundant_experts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk_distinct_experts_exact),
        cmocka_unit_test(test_redundant_experts),
        cmocka_unit_test(test_busiest_ep_rank_reads_whole_experts),
        cmocka_unit_test(test_coll_algo_nccl),
        cmocka_unit_test(test_allgather_after_sequence_split_combine),
        cmocka_unit_test(test_hierarchical_dispatch_larger_hbd_not_slower),
        cmocka_unit_test(test_hierarchical_legs_pipelined),
        cmocka_unit_test(test_hierarchical_legs_pipelined_nvlink_slower),
        cmocka_unit_test(test_monotone_in_hbd_bandwidth_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
