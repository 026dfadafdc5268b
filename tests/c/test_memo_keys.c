/* The simulator's per-thread memos keyed on a job class (summary mode: sim.c job_class_of) hold
 * every argument their result depends on: layer.c's attention shapes (smemo, one per side of
 * q <= decode_q), sim.c's blended decode stream (stream_of, keyed on b and q), and the class
 * itself, which must hold every field of the job but input (same_job_but_input). Each case runs
 * a job in summary mode on this thread, where the job's own calls share the memo's class but
 * differ in the argument under test, and compares it with the same job run in full mode (no job
 * class: the memos are not used) on a fresh thread. A key missing the argument hands one call
 * the other's entry, and the times differ. (stream_of is called only for q <= 1, the blended
 * kernel's condition, and every caller passes q = 1 or gamma + 1: its q is always 1, so no job can
 * tell a key without it.) */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

typedef struct full_run {
    hl_job job;
    hl_result r;
    hl_status st;
    hl_err e;
} full_run;

static void *run_full(void *arg)
{
    full_run *f = arg;
    f->job.summary_only = 0;
    f->st = hl_sim_run(&f->job, &f->r, &f->e);
    return NULL;
}

/* j on this thread (in summary mode where `summary`), then in full mode on a fresh one: ttft,
 * tpot and total the same bits. Returns the tpot (s). */
static double assert_run_is_fresh_full_run(const char *what, hl_job j, int summary)
{
    j.summary_only = summary;
    hl_result r;
    hl_err e;
    assert_ok(hl_sim_run(&j, &r, &e), &e);
    full_run f;
    memset(&f, 0, sizeof f);
    f.job = j;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_full, &f), 0);
    pthread_join(t, NULL);
    assert_ok(f.st, &f.e);
    const double got[] = {r.ttft_s, r.tpot_s, r.total_s}, want[] = {f.r.ttft_s, f.r.tpot_s, f.r.total_s};
    const char *names[] = {"ttft", "tpot", "total"};
    for (int k = 0; k < 3; k++)
        if (memcmp(&got[k], &want[k], sizeof got[k]) != 0)
            fail_msg("%s: %s %.17g s on this thread, %.17g s on a fresh one", what, names[k], got[k], want[k]);
    return r.tpot_s;
}

static double assert_class_run_is_full_run(const char *what, hl_job j)
{
    return assert_run_is_fresh_full_run(what, j, 1);
}

/* DeepSeek-V3 (MLA) on 8 B200: prefill attends on the expanded K, V (128 heads of qk 192, v 128)
 * and decode on the latent (one KV head of qk 576 = 512 + 64, v 512), so the two sides of
 * q <= decode_q have different shapes within one run. A shape memo with one slot for both gives
 * decode the prefill's shape (or the other way round). Two inputs of the same class: the second
 * run reads the shapes the first one kept. */
static void test_mla_shapes_kept_per_side(void **state)
{
    (void)state;
    hl_job j = job_for("deepseek-v3", "b200", 8, 8);
    j.tp = 8;
    j.batch = 8;
    j.input = 2000;
    j.output = 64;
    j.ignore_memory = 1;
    assert_class_run_is_full_run("deepseek-v3 tp8, input 2000", j);
    j.input = 3000;
    assert_class_run_is_full_run("deepseek-v3 tp8, input 3000", j);
}

/* Two-batch overlap's decode (sim.c run_decode) times the overlapped layers' attention on half
 * the sequences (b_local / 2) and the leading dense layer (GLM-4.5-Air: dense_layers 1) on all of
 * them, in one run of one class, both through the blended stream (B200: attn_blend 16). A stream
 * memo without b gives the leading layer the half batch's stream. EP8 with DP attention: b_local
 * = 64 / 8 = 8 sequences per rank, 4 per half. The stream is read only where the KV stream dwarfs
 * the rest (hl_attn_stream_at), so the model is GQA (96 heads on 8 KV heads): DeepSeek-V3's MLA
 * decode (128 heads on one latent head) is compute-bound there, never reads the stream, and hides
 * the bug. */
static void test_tbo_streams_kept_per_batch(void **state)
{
    (void)state;
    hl_job j = job_for("glm-4.5-air", "b200", 8, 8);
    j.ep = 8;
    j.dp = 8;
    j.two_batch_overlap = 1;
    j.batch = 64;
    j.input = 2000;
    j.output = 64;
    j.ignore_memory = 1;
    assert_class_run_is_full_run("glm-4.5-air ep8 tbo, input 2000", j);
    j.input = 3000;
    assert_class_run_is_full_run("glm-4.5-air ep8 tbo, input 3000", j);
}

/* The job class itself (sim.c same_job_but_input) tells apart jobs that differ in a field after
 * expert_freq (cuda_graphs, two_batch_overlap) or only in expert_freq's shares: a class that took
 * either for the last job's gives a summary run that job's kept decode layers (decode_memo). Each
 * changed job runs right after its unchanged one on this thread, and must change the full run's
 * TPOT (else the case could not fail). Qwen3-30B-A3B EP8 with DP attention on 8 H100, 64
 * sequences. The two histograms, of 160 parts over the 128 experts (shares at most 3/160 < 1/8):
 * the first 16 experts 3 parts each, or the first 32 experts 2 parts each, the rest 1. */
static void test_class_keeps_every_field(void **state)
{
    (void)state;
    hl_job base = job_for("qwen3-30b-a3b", "H100-SXM", 8, 8);
    base.ep = 8;
    base.dp = 8;
    base.batch = 64;
    base.input = 1000;
    base.output = 32;
    double hot16[128], hot32[128];
    for (int x = 0; x < 128; x++) {
        hot16[x] = (x < 16 ? 3 : 1) / 160.0;
        hot32[x] = (x < 32 ? 2 : 1) / 160.0;
    }
    for (int k = 0; k < 3; k++) {
        hl_job before = base, after = base;
        hl_err e;
        const char *what = k == 0 ? "cuda_graphs off" : k == 1 ? "two_batch_overlap" : "expert_freq";
        if (k == 0) {
            after.cuda_graphs = 2;
        } else if (k == 1) {
            after.two_batch_overlap = 1;
        } else {
            assert_ok(hl_job_set_expert_freq(&before, hot16, 128, &e), &e);
            assert_ok(hl_job_set_expert_freq(&after, hot32, 128, &e), &e);
        }
        double was = assert_class_run_is_full_run("the unchanged job", before);
        if (assert_class_run_is_full_run(what, after) == was)
            fail_msg("%s: the TPOT of the unchanged job, %.17g s (the case cannot fail)", what, was);
    }
}

/* The thread's expert layout (mapping.c hl_sim_layout's cache) is keyed on all it is built from:
 * a job that differs from the last one only in the model's topk, in eplb or in redundant_experts
 * must not get that job's layout. Full mode (no job class), the changed job right after the
 * unchanged one on this thread, against a fresh thread; each change must move the TPOT (else
 * the case could not fail). Qwen3-30B-A3B EP8 with DP attention on 8 H100, Zipf routing of skew 1
 * (so that EPLB and replicas move the busiest rank); 128 + 8 slots are 17 per rank. The replicas
 * case runs after an EPLB job: the key's eplb (implied by replicas) would tell them apart anyway. */
static void test_layout_keeps_every_field(void **state)
{
    (void)state;
    hl_job base = job_for("qwen3-30b-a3b", "H100-SXM", 8, 8);
    base.ep = 8;
    base.dp = 8;
    base.batch = 64;
    base.input = 1000;
    base.output = 32;
    base.routing_skew = 1;
    for (int k = 0; k < 3; k++) {
        hl_job before = base, after = base;
        const char *what = k == 0 ? "topk 4" : k == 1 ? "eplb" : "8 redundant experts";
        if (k == 0) {
            after.model.topk = 4;
        } else if (k == 1) {
            after.eplb = 1;
        } else { /* both with EPLB (replicas imply it): only the replicas differ */
            before.eplb = after.eplb = 1;
            after.redundant_experts = 8;
        }
        double was = assert_run_is_fresh_full_run("the unchanged job", before, 0);
        if (assert_run_is_fresh_full_run(what, after, 0) == was)
            fail_msg("%s: the TPOT of the unchanged job, %.17g s (the case cannot fail)", what, was);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_shapes_kept_per_side),
        cmocka_unit_test(test_tbo_streams_kept_per_batch),
        cmocka_unit_test(test_class_keeps_every_field),
        cmocka_unit_test(test_layout_keeps_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
