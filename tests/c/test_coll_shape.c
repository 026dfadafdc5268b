/* AUTO's winner by bounds (coll.c, above shape_key) against the full loop: the same bits for every
 * field of hl_coll_out on random shapes and sizes, and on sizes within a few ulps of the full loop's
 * own switch points (where the bound must give way to the loop). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll_int.h"
#include "coll_random.h"
#include "hbdlab/hbdlab.h"

enum { SEED = 2812, SHAPES = 600, SIZES = 40, NEAR = 24 };

typedef struct call {
    hl_cluster c;
    int64_t hbd;
    hl_coll_in in;
} call;

/* The full loop's choice at a size: its algorithm, and within one its latency part (the
 * hierarchical all-reduce picks its intra phase by size: the latency tells which). */
static int same_choice(const hl_coll_out *a, const hl_coll_out *b)
{
    return a->algo == b->algo && a->latency_s == b->latency_s;
}

/* Sizes where the full loop's choice changes between two neighbouring doubles: bisection from lo
 * to hi (different choices), then NEAR sizes a few ulps and multiples of 2^-46 around. */
static int near_switch(const call *k, double lo, double hi, double *out)
{
    hl_coll_in in = k->in;
    hl_coll_out a, b;
    in.bytes = lo;
    if (!timed(&k->c, k->hbd, &in, &a))
        return 0;
    in.bytes = hi;
    if (!timed(&k->c, k->hbd, &in, &b) || same_choice(&a, &b))
        return 0;
    hl_coll_out at_lo = a;
    while (nextafter(lo, hi) < hi) {
        in.bytes = lo + (hi - lo) / 2;
        if (in.bytes <= lo || in.bytes >= hi)
            break;
        if (!timed(&k->c, k->hbd, &in, &a))
            return 0;
        if (same_choice(&a, &at_lo))
            lo = in.bytes;
        else
            hi = in.bytes;
    }
    int m = 0;
    for (int i = -4; i <= 4; i++) {
        double x = hi;
        for (int s = 0; s < abs(i); s++)
            x = i < 0 ? nextafter(x, 0) : nextafter(x, INFINITY);
        out[m++] = x;
    }
    for (int i = 1; m < NEAR; i++) {
        out[m++] = hi * (1 + i * 0x1p-46);
        if (m < NEAR)
            out[m++] = hi * (1 - i * 0x1p-46);
    }
    return m;
}

static void test_bound_pick_equals_full_loop(void **state)
{
    (void)state;
    srand(SEED);
    enum { MAX = SHAPES * (SIZES + 3 * NEAR) };
    call *calls = malloc(MAX * sizeof *calls);
    hl_coll_out *full = malloc(MAX * sizeof *full), *fast = malloc(MAX * sizeof *fast);
    int *ok = malloc(MAX * sizeof *ok);
    assert_non_null(calls);
    assert_non_null(full);
    assert_non_null(fast);
    assert_non_null(ok);
    int n = 0, near = 0;
    hl_coll_shape_cache(0);
    for (int s = 0; s < SHAPES; s++) {
        call k;
        k.c = random_cluster();
        k.in = random_call(&k.c, &k.hbd);
        for (int i = 0; i < SIZES; i++) {
            calls[n] = k;
            calls[n].in.bytes = i == 0 ? 0 : i == 1 ? 0.5 : logrand(1, 1e13);
            n++;
        }
        double sizes[NEAR];
        double edges[4] = {1, 1e5, 1e8, 1e13};
        for (int e = 0; e < 3; e++) {
            int m = near_switch(&k, edges[e], edges[e + 1], sizes);
            near += m > 0;
            for (int i = 0; i < m; i++) {
                calls[n] = k;
                calls[n].in.bytes = sizes[i];
                n++;
            }
        }
    }
    for (int i = 0; i < n; i++) /* the full loop, then (memo emptied) the bound */
        ok[i] = timed(&calls[i].c, calls[i].hbd, &calls[i].in, &full[i]);
    hl_coll_shape_cache(1);
    int good = 0;
    for (int i = 0; i < n; i++) {
        int f = timed(&calls[i].c, calls[i].hbd, &calls[i].in, &fast[i]);
        if (f != ok[i])
            fail_msg("call %d: status differs", i);
        if (f) {
            assert_same(&full[i], &fast[i], &calls[i].in, calls[i].hbd);
            good++;
        }
    }
    /* the test must reach both: plenty of timed calls and of switch points probed */
    if (good < n / 2 || near < SHAPES / 4)
        fail_msg("only %d of %d calls timed, %d switch points", good, n, near);
    free(calls);
    free(full);
    free(fast);
    free(ok);
}

/* A shape's checks are kept, a size's are not: a bad size after a good one on the same shape
 * still fails with the size's message, and a bad imbalance with its own. */
static void test_shape_hit_checks_size(void **state)
{
    (void)state;
    hl_coll_shape_cache(1);
    srand(SEED + 1);
    hl_cluster c = random_cluster();
    hl_coll_in in = {HL_ALLTOALL, HL_ALGO_AUTO, 1e6, c.gpus, 0, 0};
    hl_coll_out o;
    hl_err e;
    assert_ok(hl_coll_time_hbd(&c, c.hbd, &in, &o, &e), &e);
    in.bytes = -1;
    assert_fails_with(hl_coll_time_hbd(&c, c.hbd, &in, &o, &e), HL_EINVAL, &e, "'bytes'");
    in.bytes = 1e6;
    in.imbalance = 0.5;
    assert_fails_with(hl_coll_time_hbd(&c, c.hbd, &in, &o, &e), HL_EINVAL, &e, "'imbalance'");
}

/* hl_coll_time_hinted (layer.c's path for a job class's collectives) against hl_coll_time, bit for
 * bit but the rates it leaves 0: one hint kept over sizes of its shape while other shapes, on other clusters, refill the
 * thread's 16 shape slots between the calls. A hint that took its slot without its fill's stamp
 * (the slot then holds another shape) fails here. */
static void test_hint_never_stale(void **state)
{
    (void)state;
    hl_coll_shape_cache(1);
    srand(SEED + 2);
    int timed_calls = 0, reused = 0;
    for (int t = 0; t < 200; t++) {
        hl_cluster c = random_cluster();
        int64_t hbd;
        hl_coll_in in = random_call(&c, &hbd);
        if (hbd != c.hbd)
            continue;
        hl_coll_hint h = {0, 0};
        for (int r = 0; r < 6; r++) {
            in.bytes = logrand(1, 1e13);
            hl_coll_out a, b;
            hl_err e;
            uint64_t before = h.stamp;
            int fa = hl_coll_time_hinted(&c, &in, &a, &h, &e) == HL_OK;
            int fb = hl_coll_time(&c, &in, &b, &e) == HL_OK;
            if (fa != fb)
                fail_msg("trial %d: status differs", t);
            if (fa) {
                /* the hinted call leaves the three rates 0 (coll_int.h); the rest bit for bit */
                if (a.algbw != 0 || a.busbw != 0 || a.latency_share != 0)
                    fail_msg("trial %d: hinted algbw %g, busbw %g, latency_share %g", t, a.algbw, a.busbw,
                             a.latency_share);
                a.algbw = b.algbw;
                a.busbw = b.busbw;
                a.latency_share = b.latency_share;
                assert_same(&a, &b, &in, hbd);
                timed_calls++;
                reused += before != 0 && before == h.stamp;
            }
            for (int k = 0; k < 24; k++) { /* other shapes take the slots */
                hl_cluster o = random_cluster();
                int64_t ohbd;
                hl_coll_in oin = random_call(&o, &ohbd);
                oin.bytes = logrand(1, 1e13);
                (void)timed(&o, ohbd, &oin, &b);
            }
        }
    }
    /* the test must reach both ways: hints taken and hints refused after a refill */
    if (timed_calls < 300 || reused == 0 || reused == timed_calls)
        fail_msg("%d timed calls, %d through a kept hint", timed_calls, reused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_pick_equals_full_loop),
        cmocka_unit_test(test_shape_hit_checks_size),
        cmocka_unit_test(test_hint_never_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
