/* The request router: each policy's pick on hand-made loads. */
#include "check.h"
#include "hbdlab/hbdlab.h"

/* Loads (tokens, free blocks): A (500, 10), B (200, 40), C (200, 90), D (900, 90).
 * round robin: 0 1 2 3 0 whatever the loads; least loaded: B (200; C ties and
 * loses on index); kv_aware: C (90 free blocks, ties with D, fewer tokens; no cached prefix anywhere). */
static void test_policies(void **state)
{
    (void)state;
    const hl_router_load l[4] = {{500, 10, 0}, {200, 40, 0}, {200, 90, 0}, {900, 90, 0}};
    hl_router rr = {HL_ROUTER_ROUND_ROBIN, 0, 0};
    const int64_t want[5] = {0, 1, 2, 3, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(hl_router_pick(&rr, l, 4), want[i]);
    hl_router ll = {HL_ROUTER_LEAST_LOADED, 0, 0};
    assert_int_equal(hl_router_pick(&ll, l, 4), 1);
    hl_router kv = {HL_ROUTER_KV_AWARE, 0, 0};
    assert_int_equal(hl_router_pick(&kv, l, 4), 2);
    assert_int_equal(hl_router_pick(&kv, l, 1), 0);
    /* with a prefix cache: A holds 2,000 tokens of the request's prefix, D 1,984: A, whatever its
     * load and free blocks; D and B tied on 16 would go to D (more free blocks) */
    const hl_router_load p[4] = {{500, 10, 2000}, {200, 40, 16}, {200, 90, 0}, {900, 90, 1984}};
    assert_int_equal(hl_router_pick(&kv, p, 4), 0);
    const hl_router_load q[3] = {{500, 10, 0}, {200, 40, 16}, {900, 90, 16}};
    assert_int_equal(hl_router_pick(&kv, q, 3), 2);
    assert_string_equal(hl_router_name(HL_ROUTER_KV_AWARE), "kv_aware");
    assert_null(hl_router_name(7));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_policies)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
