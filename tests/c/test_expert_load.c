/* Expert load from routing: the busiest EP rank against a seeded Monte-Carlo
 * of the multinomial, EPLB placements worked out by hand, Zipf shares, and the
 * errors of a bad histogram. */
#include <math.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

static hl_expert_layout lay; /* ~40 KB: static, not on the stack */

/* Mean over `draws` seeded draws of max_r L_r, (L_r) ~ Multinomial(M, rank_share). */
static double mc_busiest(const hl_expert_layout *l, double tokens, int draws)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 12345);
    unsigned int M = (unsigned int)(tokens * l->topk + 0.5), n[HL_EXPERT_SLOTS_MAX];
    double sum = 0;
    for (int d = 0; d < draws; d++) {
        gsl_ran_multinomial(r, (size_t)l->ranks, M, l->rank_share, n);
        unsigned int mx = 0;
        for (int64_t i = 0; i < l->ranks; i++)
            mx = n[i] > mx ? n[i] : mx;
        sum += mx;
    }
    gsl_rng_free(r);
    return sum / draws;
}

/* Uniform routing, top-8: the analytical E[max] of the ranks' loads (Levin's
 * representation of the multinomial CDF) within 2% of 5,000 multinomial draws,
 * for EP 4 to 256 and 1 to 16,384 tokens (measured: within 0.4% everywhere, and
 * within 0.2% of 20,000 draws, which took 4x the time under valgrind;
 * treating the ranks as independent binomials was 7% low at one token on EP4). */
static void test_uniform_matches_monte_carlo(void **state)
{
    (void)state;
    hl_err e;
    const int64_t eps[] = {4, 8, 32, 64, 256};
    const double toks[] = {1, 16, 256, 4096, 16384};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, eps[i], 8, 0, &e), &e);
        assert_int_equal(lay.uniform, 1);
        for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
            char label[64];
            snprintf(label, sizeof label, "ep %lld, %g tokens", (long long)eps[i], toks[t]);
            assert_rel(hl_expert_busiest_load(&lay, toks[t]), mc_busiest(&lay, toks[t], 5000), 0.02, label);
        }
    }
    /* two ranks are exact (L_1 = M - L_0); EP72 over 288 slots */
    assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, 2, 8, 0, &e), &e);
    assert_rel(hl_expert_busiest_load(&lay, 1), mc_busiest(&lay, 1, 20000), 0.01, "ep 2, 1 token");
    assert_ok(hl_expert_layout_init(&lay, NULL, 288, 0, 72, 8, 0, &e), &e);
    assert_rel(hl_expert_busiest_load(&lay, 64), mc_busiest(&lay, 64, 5000), 0.02, "ep 72, 64 tokens");
    /* one token on EP2, top-8 of 256: 8 picks, Binomial(8, 1/2) on rank 0;
     * E[max(L, 8 - L)] = 4 + E|L - 4| = 4 + 2 (4*1 + 3*8 + 2*28 + 1*56)/256 = 4 + 280/256 = 5.09375 */
    assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, 2, 8, 0, &e), &e);
    assert_rel(hl_expert_busiest_load(&lay, 1), 5.09375, 1e-12, "ep 2 exact");
}

/* Hand-worked skew: 8 experts, top-1, shares 0.40 0.20 0.10 0.10 0.05 x4, 4 ranks.
 * - static (expert e in slot e, 2 per rank): ranks 0.60 0.20 0.10 0.10; at 1,000
 *   tokens rank 0 (mean 600, sd 15.5) is the busiest in every draw (rank 1's 200
 *   is 20 sd below): E[max] = 600.
 * - EPLB, no replica: slots by decreasing share to the lightest rank with room:
 *   0.40->r0, 0.20->r1, 0.10->r2, 0.10->r3, 0.05->r2, 0.05->r3, 0.05->r1 (0.20 <
 *   0.40), 0.05->r0: ranks 0.45 0.25 0.15 0.15, E[max] = 450.
 * - EPLB, R = 4: replicas to argmax share/copies: e0 (0.4 -> 0.2), e0 (tie with
 *   e1 at 0.2, first wins -> 0.1333), e1 (0.2 -> 0.1), e0 (0.1333 -> 0.1): eight
 *   slots of 0.1 and four of 0.05, packed 3 per rank: 0.1 x 8 round the ranks,
 *   then one 0.05 each: every rank 0.25. The loads are then exchangeable with
 *   mean 250 and sd sqrt(1000 * 0.25 * 0.75) = 13.69; normal with the
 *   multinomial's correlation -1/3, E[max] = 250 + 13.69 * sqrt(4/3) * 1.0294
 *   (E[max of 4 standard normals]) = 266.3 (independent ranks would give 264.1).
 * So four replicas lower the busiest rank from 600 to about 266 tokens (-55%);
 * with uniform shares the same replicas change nothing (0.25 per rank either way). */
static void test_eplb_hand_worked(void **state)
{
    (void)state;
    hl_err e;
    const double share[8] = {0.40, 0.20, 0.10, 0.10, 0.05, 0.05, 0.05, 0.05};
    assert_ok(hl_expert_layout_init(&lay, share, 8, 0, 4, 1, 0, &e), &e);
    assert_rel(lay.rank_share[0], 0.60, 1e-12, "static rank 0");
    assert_rel(hl_expert_busiest_load(&lay, 1000), 600, 0.005, "static busiest");
    assert_ok(hl_expert_layout_init(&lay, share, 8, 0, 4, 1, 1, &e), &e);
    const double r0[4] = {0.45, 0.25, 0.15, 0.15};
    for (int r = 0; r < 4; r++)
        assert_rel(lay.rank_share[r], r0[r], 1e-12, "eplb R=0 rank share");
    assert_rel(hl_expert_busiest_load(&lay, 1000), 450, 0.005, "eplb R=0 busiest");
    assert_ok(hl_expert_layout_init(&lay, share, 8, 4, 4, 1, 1, &e), &e);
    int copies[8] = {0};
    for (int s = 0; s < 12; s++)
        copies[lay.slot_expert[s]]++;
    assert_int_equal(copies[0], 4);
    assert_int_equal(copies[1], 2);
    assert_int_equal(copies[2], 1);
    for (int r = 0; r < 4; r++)
        assert_rel(lay.rank_share[r], 0.25, 1e-12, "eplb R=4 rank share");
    double busiest = hl_expert_busiest_load(&lay, 1000);
    assert_rel(busiest, 266.3, 0.005, "eplb R=4 busiest");
    assert_rel(busiest, mc_busiest(&lay, 1000, 20000), 0.02, "eplb R=4 vs Monte-Carlo");
    /* uniform shares: the replicas leave every rank at 0.25 */
    const double flat[8] = {0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125};
    assert_ok(hl_expert_layout_init(&lay, flat, 8, 4, 4, 1, 1, &e), &e);
    for (int r = 0; r < 4; r++)
        assert_rel(lay.rank_share[r], 0.25, 1e-12, "uniform eplb rank share");
    assert_rel(hl_expert_busiest_load(&lay, 1000), busiest, 1e-9, "replicas do not help uniform routing");
}

/* Zipf exponent 1 over 4 experts: weights 1, 1/2, 1/3, 1/4 (sum 25/12), shares
 * 0.48 0.24 0.16 0.12. Top-3 caps a share at 1/3: 0.48 -> 1/3, the other 2/3
 * over weights 1/2, 1/3, 1/4 (sum 13/12): 0.30769 0.20513 0.15385. */
static void test_zipf_shares(void **state)
{
    (void)state;
    hl_err e;
    double s[4], sorted[4];
    assert_ok(hl_routing_zipf(1, 4, 1, s, &e), &e);
    memcpy(sorted, s, sizeof s);
    for (int a = 0; a < 4; a++) /* descending */
        for (int b = a + 1; b < 4; b++)
            if (sorted[b] > sorted[a]) {
                double t = sorted[a];
                sorted[a] = sorted[b];
                sorted[b] = t;
            }
    const double want[4] = {0.48, 0.24, 0.16, 0.12};
    for (int i = 0; i < 4; i++)
        assert_rel(sorted[i], want[i], 1e-12, "zipf 1, top-1");
    assert_ok(hl_routing_zipf(1, 4, 3, s, &e), &e);
    double mx = 0, sum = 0;
    for (int i = 0; i < 4; i++) {
        mx = s[i] > mx ? s[i] : mx;
        sum += s[i];
    }
    assert_rel(mx, 1.0 / 3, 1e-12, "capped at 1/topk");
    assert_rel(sum, 1, 1e-12, "zipf sums to 1");
    assert_ok(hl_routing_check(s, 4, 4, 3, "expert_freq", &e), &e);
    /* skew 0 is uniform: the same busiest load as the closed form */
    double u[256];
    assert_ok(hl_routing_zipf(0, 256, 8, u, &e), &e);
    assert_ok(hl_expert_layout_init(&lay, u, 256, 0, 32, 8, 0, &e), &e);
    double zipf0 = hl_expert_busiest_load(&lay, 64), hits0 = hl_expert_busiest_hits(&lay, 64);
    assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, 32, 8, 0, &e), &e);
    assert_rel(zipf0, hl_expert_busiest_load(&lay, 64), 1e-9, "zipf 0 load = uniform");
    assert_rel(hits0, hl_expert_busiest_hits(&lay, 64), 1e-9, "zipf 0 hits = uniform (Poisson-binomial path)");
    /* skew raises the busiest rank's load */
    assert_ok(hl_routing_zipf(1, 256, 8, u, &e), &e);
    assert_ok(hl_expert_layout_init(&lay, u, 256, 0, 32, 8, 0, &e), &e);
    assert_true(hl_expert_busiest_load(&lay, 64) > 1.2 * zipf0);
}

/* hl_expert_busiest_load keeps its last 4 results per thread: six token counts on two layouts,
 * asked again in another order after the memo has cycled, give the first answers bit for bit,
 * and a layout changed in place (same object, ranks and tokens) is not answered from it. */
static void test_busiest_memo_never_stale(void **state)
{
    (void)state;
    hl_err e;
    static hl_expert_layout a, b;
    double u[256];
    assert_ok(hl_expert_layout_init(&a, NULL, 256, 0, 32, 8, 0, &e), &e);
    assert_ok(hl_routing_zipf(1, 256, 8, u, &e), &e);
    assert_ok(hl_expert_layout_init(&b, u, 256, 0, 32, 8, 0, &e), &e);
    const double toks[6] = {1, 7, 64, 300, 4096, 16384};
    double first[2][6];
    for (int i = 0; i < 6; i++) {
        first[0][i] = hl_expert_busiest_load(&a, toks[i]);
        first[1][i] = hl_expert_busiest_load(&b, toks[i]);
    }
    for (int i = 5; i >= 0; i--) {
        assert_true(hl_expert_busiest_load(&b, toks[i]) == first[1][i]);
        assert_true(hl_expert_busiest_load(&a, toks[i]) == first[0][i]);
        assert_true(hl_expert_busiest_load(&a, toks[i]) == first[0][i]); /* now a hit */
    }
    assert_true(first[1][2] > 1.2 * first[0][2]);                      /* skewed shares: a busier rank */
    assert_ok(hl_expert_layout_init(&a, u, 256, 0, 32, 8, 0, &e), &e); /* a becomes b's layout */
    assert_true(hl_expert_busiest_load(&a, 64) == first[1][2]);
}

/* The memo's key holds topk: two uniform layouts of 256 experts on EP32, top-8 and top-4, have the
 * same rank shares (8 slots of 1/256 each: 1/32 exactly) and differ only in topk, as the points of
 * a sweep over a model's topk do. At 64 tokens, by the normal estimate mean + sd E[max of 32
 * standard normals] (E ~ 2.07): top-8, 512 picks, 16 + sqrt(16 x 31/32) x 2.07 = 24.2; top-4, 256
 * picks, 8 + sqrt(8 x 31/32) x 2.07 = 13.8 (the model gives 24.8 and 14.4), a ratio of ~1.75, so
 * > 1.5 below; a key without topk hands the second call the first's load. Then each again: hits. */
static void test_busiest_memo_keeps_topk(void **state)
{
    (void)state;
    hl_err e;
    static hl_expert_layout k8, k4;
    assert_ok(hl_expert_layout_init(&k8, NULL, 256, 0, 32, 8, 0, &e), &e);
    assert_ok(hl_expert_layout_init(&k4, NULL, 256, 0, 32, 4, 0, &e), &e);
    assert_memory_equal(k8.rank_share, k4.rank_share, 32 * sizeof k8.rank_share[0]);
    double t8 = hl_expert_busiest_load(&k8, 64), t4 = hl_expert_busiest_load(&k4, 64);
    assert_true(t8 > 1.5 * t4);
    assert_true(hl_expert_busiest_load(&k4, 64) == t4);
    assert_true(hl_expert_busiest_load(&k8, 64) == t8);
}

/* After 64 misses in a row the memo is skipped for the next 1,024 calls (an input sweep never
 * hits it): values computed while it is skipped, and after it is looked at again, are the ones the
 * memo path gave, layout by layout; a skip path that answered from a memo entry (or stored while
 * skipping, then matched a stale one) fails here. */
static void test_busiest_memo_skip_same_values(void **state)
{
    (void)state;
    hl_err e;
    static hl_expert_layout a, b;
    double u[256];
    assert_ok(hl_expert_layout_init(&a, NULL, 256, 0, 32, 8, 0, &e), &e);
    assert_ok(hl_routing_zipf(1, 256, 8, u, &e), &e);
    assert_ok(hl_expert_layout_init(&b, u, 256, 0, 32, 8, 0, &e), &e);
    enum { N = 1500 };
    static double first[2][N];
    for (int i = 0; i < N; i++) { /* all misses: the memo is skipped from the 65th call on */
        const hl_expert_layout *l = i % 2 ? &b : &a;
        first[i % 2][i] = hl_expert_busiest_load(l, 100 + i);
    }
    for (int i = 0; i < N; i++) { /* the same calls again, each layout's value and the other's */
        const hl_expert_layout *l = i % 2 ? &b : &a, *o = i % 2 ? &a : &b;
        assert_true(hl_expert_busiest_load(l, 100 + i) == first[i % 2][i]);
        if (i > 0)
            assert_true(hl_expert_busiest_load(o, 100 + i - 1) == first[1 - i % 2][i - 1]);
    }
    assert_true(first[1][N - 1] > 1.2 * first[0][N - 2]); /* the two layouts give different loads */
}

/* Expert hits: one token, top-8 of 256 on EP32 (8 experts per rank): each
 * expert hit with p = 8/256; the busiest rank's count E[max of 32 Binomial(8,
 * 1/32)] = 1.591 (the value docs/MODEL.md 6 quotes). One rank: the mean 8. */
static void test_hits(void **state)
{
    (void)state;
    hl_err e;
    assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, 32, 8, 0, &e), &e);
    assert_rel(hl_expert_busiest_hits(&lay, 1), 1.591, 0.001, "ep32 one token");
    assert_ok(hl_expert_layout_init(&lay, NULL, 256, 0, 1, 8, 0, &e), &e);
    assert_rel(hl_expert_busiest_hits(&lay, 1), 8, 1e-12, "ep1 one token");
}

/* Hit probabilities near 1, where hl_expert_busiest_hits stops calling pow (t topk share >= 64).
 * One rank: the busiest rank's hits are the mean, sum over slots of p_s = 1 - (1 - topk share_s)^t
 * (the header's formula, computed here with libm's pow). 16 experts, top-2, uniform: 16 (1 - 0.875^t)
 * for t = 1..2000 tokens, across t = 512 where the shortcut starts (0.875^512 = 5e-30: 16 exactly);
 * at t = 128, 16 - 16 e^(128 ln 0.875) = 16 - 6.1e-7, so a shortcut from t topk/S >= 16 fails.
 * Zipf-skewed shares (skew 1) take the per-slot path. EP2 (8 slots a rank): E[max of 2 Binomial(8, p)]
 * = sum_{x=1..8} 1 - F(x-1)^2, F summed here from the binomial pmf. */
static void test_hits_near_all(void **state)
{
    (void)state;
    hl_err e;
    double z[16];
    assert_ok(hl_routing_zipf(1, 16, 2, z, &e), &e);
    for (int t = 1; t <= 2000; t++) {
        assert_ok(hl_expert_layout_init(&lay, NULL, 16, 0, 1, 2, 0, &e), &e);
        assert_rel(hl_expert_busiest_hits(&lay, t), 16 * (1 - pow(0.875, t)), 1e-14, "ep1 uniform");
        assert_ok(hl_expert_layout_init(&lay, z, 16, 0, 1, 2, 0, &e), &e);
        double want = 0;
        for (int s = 0; s < 16; s++)
            want += 1 - pow(fmax(0, 1 - 2 * z[s]), t);
        assert_rel(hl_expert_busiest_hits(&lay, t), want, 1e-14, "ep1 zipf");
        assert_ok(hl_expert_layout_init(&lay, NULL, 16, 0, 2, 2, 0, &e), &e);
        double p = 1 - pow(0.875, t), F = 0, pmf = pow(1 - p, 8), sum = 0;
        for (int x = 1; x <= 8; x++) {
            F += pmf; /* F(x-1) */
            sum += 1 - F * F;
            pmf *= (8.0 - (x - 1)) / x * p / (1 - p);
        }
        assert_rel(hl_expert_busiest_hits(&lay, t), p < 1 ? sum : 8, 1e-12, "ep2 uniform");
    }
}

/* A uniform layout takes its one group of ranks without grouping the shares: the same bits as the
 * same shares given as a histogram (1/16 each: the grouped path), EP4 and EP8, from 1 to 100,000
 * tokens (Levin's walk below a binomial sd of 30, the normal closed form above: 225 tokens on
 * EP4, top-2 of 16: sd = sqrt(450 / 4 * 3 / 4) = 9.2; 100,000 tokens: 194). */
static void test_uniform_group_same_bits(void **state)
{
    (void)state;
    hl_err e;
    double f[16];
    static hl_expert_layout hist;
    for (int i = 0; i < 16; i++)
        f[i] = 1.0 / 16;
    for (int ep = 4; ep <= 8; ep *= 2) {
        assert_ok(hl_expert_layout_init(&lay, NULL, 16, 0, ep, 2, 0, &e), &e);
        assert_ok(hl_expert_layout_init(&hist, f, 16, 0, ep, 2, 0, &e), &e);
        assert_true(lay.uniform && !hist.uniform);
        /* all of one layout, then the other: the thread's 4 last results (keyed by the shares, not
         * the flag) are the other layout's last tokens, so the second pass computes every one */
        double a[32], b[32], t = 1;
        int n = 0;
        for (; t <= 100000; t = t * 1.7 + 1)
            a[n++] = hl_expert_busiest_load(&lay, t);
        t = 1;
        for (int i = 0; i < n; i++, t = t * 1.7 + 1) {
            b[i] = hl_expert_busiest_load(&hist, t);
            if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
                fail_msg("EP%d, %g tokens: uniform %.17g, histogram %.17g", ep, t, a[i], b[i]);
        }
        assert_true(n > 8);
    }
}

static void test_errors(void **state)
{
    (void)state;
    hl_err e;
    const double low[4] = {0.3, 0.3, 0.2, 0.1}; /* sums to 0.9 */
    assert_fails_with(hl_routing_check(low, 4, 4, 1, "expert_freq", &e), HL_EINVAL, &e, "'expert_freq'");
    assert_fails_with(hl_routing_check(low, 4, 4, 1, "expert_freq", &e), HL_EINVAL, &e, "sum to 0.9");
    const double ok[4] = {0.4, 0.3, 0.2, 0.1};
    assert_fails_with(hl_routing_check(ok, 4, 8, 1, "expert_freq", &e), HL_EINVAL, &e, "4 shares for a model of 8");
    assert_fails_with(hl_routing_check(ok, 4, 4, 4, "expert_freq", &e), HL_EINVAL, &e, "above 1/topk");
    /* ok[0] = 0.4 > 1/4 is the first entry to break the topk bound: named as entry 1. */
    assert_fails_with(hl_routing_check(ok, 4, 4, 4, "expert_freq", &e), HL_EINVAL, &e,
                      "entry 1 (counting from 1) is 0.4");
    const double neg[4] = {0.6, 0.5, -0.2, 0.1};
    assert_fails_with(hl_routing_check(neg, 4, 4, 1, "expert_freq", &e), HL_EINVAL, &e,
                      "entry 3 (counting from 1) is -0.2");
    /* neg[2] is the third entry: Lua's expert_freq[3] and line 3 of a file, so the text says 3. */
    assert_fails_with(hl_expert_layout_init(&lay, NULL, 256, 0, 72, 8, 0, &e), HL_EINVAL, &e, "does not divide");
    assert_fails_with(hl_expert_layout_init(&lay, low, 4, 0, 2, 1, 1, &e), HL_EINVAL, &e, "sum to");
    assert_fails_with(hl_routing_zipf(-1, 4, 1, (double[4]){0}, &e), HL_EINVAL, &e, "routing_skew");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_matches_monte_carlo),
        cmocka_unit_test(test_eplb_hand_worked),
        cmocka_unit_test(test_zipf_shares),
        cmocka_unit_test(test_hits),
        cmocka_unit_test(test_hits_near_all),
        cmocka_unit_test(test_uniform_group_same_bits),
        cmocka_unit_test(test_busiest_memo_never_stale),
        cmocka_unit_test(test_busiest_memo_skip_same_values),
        cmocka_unit_test(test_busiest_memo_keeps_topk),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
