/* The serving step timer's kept parts (step.c: the kernel of a prompt's first chunk kept per
 * length, the I/O parts of a mixed step summed without the accumulator, the one-chunk kernel
 * and its time) give the same bits as timing each iteration through the accumulator alone
 * (hl_stepper_memo(st, 0)), on random mixed iterations of dense, pipelined, MoE, sliding-window
 * and data-parallel jobs, with comm overlapped and not: the step's time, and the time, compute,
 * memory and comm it is made of (hl_stepper_time_parts). In serving, tests/c/test_serve_reference.c
 * compares the two routes too (the reference scheduler times with the memo off). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"
#include "step_int.h"

static uint64_t next_u64(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double pick(uint64_t *g, int64_t lo, int64_t hi)
{
    return (double)(lo + (int64_t)(next_u64(g) % (uint64_t)(hi - lo + 1)));
}

/* A random iteration within cap tokens: 0-300 decodes at a mean context of 0-8,000, 1-4 chunks
 * (most start their prompt: the kept kernels; some continue one: built each time), a sampling
 * row for each decode and for each chunk that ends its prompt. */
static hl_iter random_iter(uint64_t *g, hl_iter_chunk *ch, int64_t cap)
{
    hl_iter it;
    memset(&it, 0, sizeof it);
    it.decode_seqs = next_u64(g) % 4 ? pick(g, 0, 300) : 0;
    it.decode_ctx_mean = it.decode_seqs > 0 ? pick(g, 0, 8000) + (double)(next_u64(g) % 8) / 8 : 0;
    it.decode_win_mean = it.decode_ctx_mean;
    it.n_chunks = (int32_t)pick(g, 1, 4);
    double left = (double)cap - it.decode_seqs, rows = it.decode_seqs;
    for (int32_t i = 0; i < it.n_chunks; i++) {
        double tok = pick(g, 1, 2048);
        if (tok > left - (it.n_chunks - 1 - i))
            tok = left - (it.n_chunks - 1 - i);
        left -= tok;
        ch[i] = (hl_iter_chunk){tok, next_u64(g) % 4 ? 0 : pick(g, 1, 4000)};
        rows += next_u64(g) % 3 != 0;
    }
    it.chunks = ch;
    it.logits_rows = rows;
    it.images = (double)(next_u64(g) % 2);
    return it;
}

static void test_memo_equals_accumulator(void **state)
{
    (void)state;
    struct {
        const char *model;
        int64_t gpus, tp, pp, dp, ep;
        double overlap; /* of a mixed step's comm under its compute and memory: hl_comm_hidden reads their sum */
    } cases[] = {{"llama-3.1-70b", 8, 8, 1, 1, 1, 0},  {"llama-3.1-70b", 8, 4, 2, 1, 1, 0},
                 {"qwen3-30b-a3b", 4, 2, 1, 2, 4, 0},  {"gemma-3-27b", 4, 4, 1, 1, 1, 0},
                 {"llama-3.1-8b", 2, 1, 1, 2, 1, 0},   {"llama-3.1-70b", 8, 8, 1, 1, 1, 0.9},
                 {"llama-3.1-70b", 8, 4, 2, 1, 1, 0.5}};
    const int64_t cap = 8192;
    int64_t kept_chunks = 0, built_chunks = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hl_job j = job_for(cases[i].model, "H100-SXM", cases[i].gpus, cases[i].gpus);
        j.tp = cases[i].tp;
        j.pp = cases[i].pp;
        j.dp = cases[i].dp;
        j.ep = cases[i].ep;
        j.overlap_prefill = cases[i].overlap;
        hl_stepper *kept, *plain;
        hl_err e;
        assert_ok(hl_stepper_new(&j, cap, &kept, &e), &e);
        assert_ok(hl_stepper_new(&j, cap, &plain, &e), &e);
        hl_stepper_memo(plain, 0);
        uint64_t g = 0x5eed0000ull + i;
        for (int k = 0; k < 3000; k++) {
            hl_iter_chunk ch[4];
            hl_iter it = random_iter(&g, ch, cap);
            if (k % 2) /* half of them a new prompt alone: the one-chunk kernel kept with its time */
                it.n_chunks = 1, ch[0].offset = 0;
            for (int32_t c = 0; c < it.n_chunks; c++)
                *(ch[c].offset == 0 ? &kept_chunks : &built_chunks) += 1;
            double t_kept, t_plain, p_kept[4], p_plain[4];
            assert_ok(hl_stepper_time_parts(kept, &it, &t_kept, p_kept, &e), &e);
            assert_ok(hl_stepper_time_parts(plain, &it, &t_plain, p_plain, &e), &e);
            if (memcmp(&t_kept, &t_plain, sizeof t_kept) != 0)
                fail_msg("%s tp%lld pp%lld dp%lld, iteration %d (%g decodes, %d chunks, %g rows): %a s kept, %a s "
                         "through the accumulator",
                         cases[i].model, (long long)j.tp, (long long)j.pp, (long long)j.dp, k, it.decode_seqs,
                         it.n_chunks, it.logits_rows, t_kept, t_plain);
            /* and the parts the time is made of (a split of compute and memory that moves reaches the
             * time only through the hidden comm's rounding, where comm overlaps) */
            static const char *part[4] = {"time", "compute", "memory", "comm"};
            for (int q = 0; q < 4; q++)
                if (memcmp(&p_kept[q], &p_plain[q], sizeof p_kept[q]) != 0)
                    fail_msg("%s tp%lld pp%lld dp%lld, iteration %d: %s %a s kept, %a s through the accumulator",
                             cases[i].model, (long long)j.tp, (long long)j.pp, (long long)j.dp, k, part[q], p_kept[q],
                             p_plain[q]);
        }
        hl_stepper_free(kept);
        hl_stepper_free(plain);
    }
    printf("%lld chunks from their prompt's start, %lld continuing one\n", (long long)kept_chunks,
           (long long)built_chunks);
    assert_true(kept_chunks > 10000 && built_chunks > 2000); /* both kinds of chunk were timed */
}

/* The stepper keeps its attention shape per side of q <= decode_q (step.c step_attn), as
 * hl_attn_shape_for's: DeepSeek-V3 (MLA) prefills on the expanded K, V (128 heads of qk 192, v 128)
 * and decodes on the latent (one KV head of qk 576, v 512). Two fresh steppers time a prefill
 * iteration (one 1,024-token prompt) and a decode one (64 sequences after 2,000 tokens) in the two
 * orders: each stepper's first iteration builds its own side's shape, so a stepper with one slot
 * for both gives its second iteration the other side's shape, and the two disagree. */
static void test_shapes_kept_per_side(void **state)
{
    (void)state;
    hl_job j = job_for("deepseek-v3", "b200", 8, 8);
    j.tp = 8;
    hl_iter_chunk chunk = {1024, 0};
    hl_iter prefill = {.n_chunks = 1, .chunks = &chunk, .logits_rows = 1};
    hl_iter decode = {.decode_seqs = 64, .decode_ctx_mean = 2000, .decode_win_mean = 2000, .logits_rows = 64};
    hl_stepper *a, *b;
    hl_err e;
    assert_ok(hl_stepper_new(&j, 2048, &a, &e), &e);
    assert_ok(hl_stepper_new(&j, 2048, &b, &e), &e);
    double ap, ad, bd, bp; /* s */
    assert_ok(hl_stepper_time(a, &prefill, &ap, &e), &e);
    assert_ok(hl_stepper_time(a, &decode, &ad, &e), &e);
    assert_ok(hl_stepper_time(b, &decode, &bd, &e), &e);
    assert_ok(hl_stepper_time(b, &prefill, &bp, &e), &e);
    if (memcmp(&ad, &bd, sizeof ad) != 0 || memcmp(&ap, &bp, sizeof ap) != 0)
        fail_msg("decode %.17g s after a prefill, %.17g s first; prefill %.17g s first, %.17g s after a decode", ad, bd,
                 ap, bp);
    hl_stepper_free(a);
    hl_stepper_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_equals_accumulator),
        cmocka_unit_test(test_shapes_kept_per_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
