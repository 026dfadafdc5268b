/* The prefix-caching KV block pool: hash chains share exactly the blocks of an
 * equal prefix, hits are referenced, released blocks stay cached and are evicted
 * least recently released first, evicted prefixes go to the host tier and come
 * back on a hit; a random workload keeps every count consistent. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "prefix_cache_int.h"

static void test_hashes_share_exactly_the_common_prefix(void **state)
{
    (void)state;
    /* a 2,000-token system prompt then 100 (request A) or 50 (request B) tokens of their own, blocks
     * of 16: blocks 0..124 cover tokens 0..1999, all system prompt: 125 shared; block 125 covers
     * 2000..2015, A's or B's own tokens: different */
    hl_pc_seg a[2] = {{7, 2000}, {101, 100}}, b[2] = {{7, 2000}, {102, 50}};
    uint64_t ha[131], hb[128]; /* 2100 / 16 = 131 full blocks, 2050 / 16 = 128 */
    hl_pc_hashes(a, 2, 16, 131, ha);
    hl_pc_hashes(b, 2, 16, 128, hb);
    int shared = 0;
    while (shared < 128 && ha[shared] == hb[shared])
        shared++;
    assert_int_equal(shared, 125);
    for (int i = shared; i < 128; i++)
        assert_true(ha[i] != hb[i]);
    /* the same tokens split into segments differently are still different content: a segment is
     * a content identity, not a token string ({7, 2000} is not {7, 1000} + {7, 1000}) */
    hl_pc_seg c[2] = {{7, 1000}, {7, 1000}};
    uint64_t hc[125];
    hl_pc_hashes(c, 2, 16, 125, hc);
    assert_true(hc[0] == ha[0]);   /* tokens 0..15 of content 7 */
    assert_true(hc[62] != ha[62]); /* block 62 = tokens 992..1007: straddles the second segment start */
    assert_true(hc[124] != ha[124]);
}

static void test_hits_reference_release_caches_evict_lru(void **state)
{
    (void)state;
    hl_err err;
    hl_pcache *c;
    assert_ok(hl_pcache_new(8, 0, &c, &err), &err);
    /* request 1: 3 full blocks of prefix P, computed and named */
    hl_pc_seg p = {1, 48};
    uint64_t h[3];
    hl_pc_hashes(&p, 1, 16, 3, h);
    int32_t ids1[3];
    for (int i = 0; i < 3; i++) {
        ids1[i] = hl_pcache_alloc(c);
        hl_pcache_commit(c, ids1[i], h[i]);
    }
    assert_int_equal(hl_pcache_free_blocks(c), 5);
    /* request 2 with the same prefix while 1 runs: 3 hits, shared blocks, no new ones taken */
    int64_t g, ho;
    hl_pcache_match(c, h, 3, &g, &ho);
    assert_int_equal(g, 3);
    assert_int_equal(ho, 0);
    int32_t ids2[3];
    assert_int_equal(hl_pcache_acquire(c, h, 3, 0, ids2), 0);
    assert_memory_equal(ids1, ids2, sizeof ids1);
    assert_int_equal(hl_pcache_free_blocks(c), 5);
    /* both finish: the 3 blocks become free but stay cached */
    hl_pcache_release(c, ids1, 3);
    assert_int_equal(hl_pcache_cached_blocks(c), 0); /* still referenced by request 2 */
    hl_pcache_release(c, ids2, 3);
    assert_int_equal(hl_pcache_free_blocks(c), 8);
    assert_int_equal(hl_pcache_cached_blocks(c), 3);
    /* new content takes the 5 empty blocks first, then evicts the cached ones, request 2's last
     * block (released first) before its first */
    for (int i = 0; i < 5; i++)
        assert_true(hl_pcache_alloc(c) >= 0);
    assert_int_equal(hl_pcache_cached_blocks(c), 3);
    int32_t e = hl_pcache_alloc(c);
    assert_int_equal(e, ids1[2]);
    hl_pcache_match(c, h, 3, &g, &ho);
    assert_int_equal(g, 2); /* blocks 0 and 1 still hit */
    assert_int_equal(hl_pcache_stats(c).evicted, 1);
    assert_int_equal(hl_pcache_alloc(c), ids1[1]);
    assert_int_equal(hl_pcache_alloc(c), ids1[0]);
    assert_int_equal(hl_pcache_alloc(c), -1); /* all 8 referenced */
    hl_pcache_free(c);
}

static void test_host_tier_offloads_and_reloads(void **state)
{
    (void)state;
    hl_err err;
    hl_pcache *c;
    assert_ok(hl_pcache_new(4, 2, &c, &err), &err);
    hl_pc_seg p = {9, 64};
    uint64_t h[4];
    hl_pc_hashes(&p, 1, 16, 4, h);
    int32_t ids[4];
    for (int i = 0; i < 4; i++) {
        ids[i] = hl_pcache_alloc(c);
        hl_pcache_commit(c, ids[i], h[i]);
    }
    hl_pcache_release(c, ids, 4);
    /* 3 blocks of other content evict blocks 3, 2, 1 (last released first): copied to a host tier
     * of 2 slots, so block 3 is dropped from it when block 1 arrives */
    int32_t other[3];
    for (int i = 0; i < 3; i++)
        other[i] = hl_pcache_alloc(c);
    hl_pc_stats st = hl_pcache_stats(c);
    assert_int_equal(st.evicted, 3);
    assert_int_equal(st.offloaded, 3);
    assert_int_equal(st.host_dropped, 1);
    assert_int_equal(hl_pcache_host_blocks(c), 2);
    int64_t g, ho;
    hl_pcache_match(c, h, 4, &g, &ho);
    assert_int_equal(g, 1);  /* block 0 still on the GPU */
    assert_int_equal(ho, 2); /* blocks 1 and 2 on the host; block 3 is gone */
    /* a hit on them needs 2 free GPU blocks: only 0 free now (1 cached, 3 held) -> refused */
    hl_pcache_release(c, other, 3);
    int32_t got[3];
    assert_int_equal(hl_pcache_acquire(c, h, 1, 2, got), 0);
    assert_int_equal(hl_pcache_stats(c).host_loaded, 2);
    hl_pcache_match(c, h, 4, &g, &ho);
    assert_int_equal(g, 3);
    hl_pcache_free(c);
}

static void test_acquire_refuses_host_loads_without_room(void **state)
{
    (void)state;
    hl_err err;
    hl_pcache *c;
    assert_ok(hl_pcache_new(2, 2, &c, &err), &err);
    hl_pc_seg p = {3, 32};
    uint64_t h[2];
    hl_pc_hashes(&p, 1, 16, 2, h);
    int32_t ids[2];
    for (int i = 0; i < 2; i++) {
        ids[i] = hl_pcache_alloc(c);
        hl_pcache_commit(c, ids[i], h[i]);
    }
    hl_pcache_release(c, ids, 2);
    int32_t x = hl_pcache_alloc(c), y = hl_pcache_alloc(c); /* both prefixes go to the host */
    int64_t g, ho;
    hl_pcache_match(c, h, 2, &g, &ho);
    assert_int_equal(g, 0);
    assert_int_equal(ho, 2);
    int32_t got[2];
    assert_int_equal(hl_pcache_acquire(c, h, 0, 2, got), -1); /* no free GPU block */
    assert_int_equal(hl_pcache_stats(c).host_loaded, 0);
    int32_t xy[2] = {x, y};
    hl_pcache_release(c, xy, 2);
    assert_int_equal(hl_pcache_acquire(c, h, 0, 2, got), 0);
    hl_pcache_free(c);
}

/* A random workload of requests over 6 prefixes: every block is free or referenced, the free
 * count equals the blocks minus the distinct referenced ones, and a hit is never a block that
 * holds other content. */
static void test_random_workload_keeps_counts(void **state)
{
    (void)state;
    hl_err err;
    hl_pcache *c;
    enum { BLOCKS = 64, REQS = 12, MAXB = 10 };
    assert_ok(hl_pcache_new(BLOCKS, 16, &c, &err), &err);
    int32_t held[REQS][MAXB];
    int nheld[REQS] = {0};
    srand(5);
    for (int step = 0; step < 20000; step++) {
        int r = rand() % REQS;
        if (nheld[r] > 0) {
            hl_pcache_release(c, held[r], nheld[r]);
            nheld[r] = 0;
        } else {
            hl_pc_seg s[2] = {{(uint64_t)(rand() % 6), (rand() % 5 + 1) * 16}, {1000u + (uint64_t)step, 16}};
            uint64_t h[MAXB];
            int n = (int)((s[0].len + s[1].len) / 16);
            hl_pc_hashes(s, 2, 16, n, h);
            int64_t g, ho;
            hl_pcache_match(c, h, n, &g, &ho);
            if (hl_pcache_acquire(c, h, g, ho, held[r]) != 0)
                continue;
            int k = (int)(g + ho);
            for (; k < n; k++) {
                int32_t b = hl_pcache_alloc(c);
                if (b < 0)
                    break;
                held[r][k] = b;
                hl_pcache_commit(c, b, h[k]);
            }
            nheld[r] = k;
        }
        int used[BLOCKS] = {0}, distinct = 0;
        for (int q = 0; q < REQS; q++)
            for (int i = 0; i < nheld[q]; i++)
                if (!used[held[q][i]]++)
                    distinct++;
        assert_int_equal(hl_pcache_free_blocks(c), BLOCKS - distinct);
        assert_true(hl_pcache_cached_blocks(c) <= hl_pcache_free_blocks(c));
    }
    hl_pcache_free(c);
}

static void test_bad_sizes_are_named(void **state)
{
    (void)state;
    hl_err err;
    hl_pcache *c;
    assert_fails_with(hl_pcache_new(0, 0, &c, &err), HL_EINVAL, &err, "0 KV blocks");
    assert_fails_with(hl_pcache_new(4, -1, &c, &err), HL_EINVAL, &err, "host blocks");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashes_share_exactly_the_common_prefix),
        cmocka_unit_test(test_hits_reference_release_caches_evict_lru),
        cmocka_unit_test(test_host_tier_offloads_and_reloads),
        cmocka_unit_test(test_acquire_refuses_host_loads_without_room),
        cmocka_unit_test(test_random_workload_keeps_counts),
        cmocka_unit_test(test_bad_sizes_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
