/* The collective memo's key and the shape cache's key (coll.c make_key, shape_key_of, shape_is)
 * hold every field a result depends on: after a call primes both, the same call with one cluster
 * field, the HBD size or one call field changed gives the bits of that call timed with the memo
 * and shapes emptied (hl_coll_shape_cache(1)). A key without the field would hand back the primed
 * result. Each field must change the result of some random calls (counted), else the test could
 * not see the field dropped. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll_int.h"
#include "coll_random.h"
#include "hbdlab/hbdlab.h"

enum { SEED = 4107, TRIALS = 400 };

/* The fields under test: 0..11 the link parameters of the key, then the rest. */
enum {
    F_SCALEUP_BW,
    F_SCALEOUT_BW,
    F_SCALEUP_LAT,
    F_SCALEOUT_LAT,
    F_LAUNCH,
    F_EFF_UP,
    F_EFF_OUT,
    F_NVLS_EFF,
    F_NVLS_LAT,
    F_PEER,
    F_CUSTOM_LAT,
    F_CUSTOM_EFF,
    F_FABRIC,
    F_NVLS_ON,
    F_HBD,
    F_BYTES,
    F_RPH,
    F_IMB,
    F_ALGO,
    F_COUNT
};
static const char *const field_names[F_COUNT] = {"scaleup_bw",
                                                 "scaleout_bw",
                                                 "scaleup_latency",
                                                 "scaleout_latency",
                                                 "coll_launch",
                                                 "eff_scaleup",
                                                 "eff_scaleout",
                                                 "in_switch_eff",
                                                 "in_switch_latency",
                                                 "peer_cost",
                                                 "custom_ar_latency",
                                                 "custom_ar_eff",
                                                 "fabric",
                                                 "in_switch_reduce",
                                                 "hbd",
                                                 "bytes",
                                                 "ranks_per_hbd",
                                                 "imbalance",
                                                 "algo"};

/* c, hbd, in with field f changed (a value the validation accepts where one exists). */
static void change(int f, hl_cluster *c, int64_t *hbd, hl_coll_in *in)
{
    double *links[] = {&c->scaleup_bw,        &c->scaleout_bw, &c->scaleup_latency,   &c->scaleout_latency,
                       &c->coll_launch,       &c->eff_scaleup, &c->eff_scaleout,      &c->in_switch_eff,
                       &c->in_switch_latency, &c->peer_cost,   &c->custom_ar_latency, &c->custom_ar_eff};
    if (f <= F_CUSTOM_EFF) {
        double *v = links[f];
        *v = *v > 0 ? *v * (f == F_EFF_UP || f == F_EFF_OUT || f == F_CUSTOM_EFF ? 0.7 : 1.5) : 1e-6;
    } else if (f == F_FABRIC) {
        c->fabric = c->fabric == HL_FABRIC_SWITCH ? HL_FABRIC_MESH : HL_FABRIC_SWITCH;
    } else if (f == F_NVLS_ON) {
        c->in_switch_reduce = !c->in_switch_reduce;
    } else if (f == F_HBD) { /* the next smaller divisor of the HBD (ranks_per_hbd left to the call) */
        int64_t h = *hbd > 1 ? *hbd - 1 : 1;
        while (h > 1 && c->hbd % h != 0)
            h--;
        *hbd = h;
        in->ranks_per_hbd = 0;
    } else if (f == F_BYTES) {
        in->bytes *= 3;
    } else if (f == F_RPH) { /* another divisor of ranks at most hbd, or the default */
        int64_t g = in->ranks_per_hbd > 0 ? in->ranks_per_hbd - 1 : (in->ranks < *hbd ? in->ranks : *hbd) - 1;
        while (g > 1 && in->ranks % g != 0)
            g--;
        in->ranks_per_hbd = g;
    } else if (f == F_IMB) {
        in->imbalance = in->imbalance > 0 ? in->imbalance * 1.5 : 2;
    } else {
        in->algo = in->algo == HL_ALGO_AUTO ? HL_ALGO_RING : HL_ALGO_AUTO;
    }
}

/* status and result of (c, hbd, in) */
typedef struct timing {
    int ok;
    hl_coll_out o;
} timing;

static timing time_of(const hl_cluster *c, int64_t hbd, const hl_coll_in *in)
{
    timing t;
    memset(&t, 0, sizeof t);
    t.ok = timed(c, hbd, in, &t.o);
    return t;
}

static int same_bits(const hl_coll_out *a, const hl_coll_out *b)
{
    return a->time_s == b->time_s && a->latency_s == b->latency_s && a->algo == b->algo &&
           a->scaleup_bytes == b->scaleup_bytes && a->scaleout_bytes == b->scaleout_bytes;
}

static void test_every_field_in_the_keys(void **state)
{
    (void)state;
    srand(SEED);
    int changed[F_COUNT] = {0};
    for (int t = 0; t < TRIALS; t++) {
        hl_cluster c0 = random_cluster();
        int64_t hbd0;
        hl_coll_in in0 = random_call(&c0, &hbd0);
        in0.bytes = logrand(1, 1e10);
        c0.custom_ar_latency = logrand(1e-7, 1e-5);
        c0.custom_ar_eff = frand(0.3, 1);
        if (in0.op == HL_ALLREDUCE && rand() % 2) { /* the engines' all-reduces read custom_ar_* */
            static const hl_coll_algo custom[] = {HL_ALGO_ONESHOT, HL_ALGO_TWOSHOT, HL_ALGO_TRTLLM_AR, HL_ALGO_VLLM_AR};
            in0.algo = custom[rand() % 4];
        }
        for (int f = 0; f < F_COUNT; f++) {
            hl_cluster c = c0;
            int64_t hbd = hbd0;
            hl_coll_in in = in0;
            change(f, &c, &hbd, &in);
            hl_coll_shape_cache(1); /* memo and shapes empty: the reference */
            timing want = time_of(&c, hbd, &in);
            hl_coll_shape_cache(1);
            timing primed = time_of(&c0, hbd0, &in0); /* primes the memo and the shape slot */
            timing got = time_of(&c, hbd, &in);
            if (got.ok != want.ok)
                fail_msg("trial %d, %s changed: status %d, %d with the memo emptied", t, field_names[f], got.ok,
                         want.ok);
            if (!got.ok)
                continue;
            assert_same(&got.o, &want.o, &in, hbd);
            changed[f] += primed.ok && !same_bits(&primed.o, &want.o);
        }
    }
    for (int f = 0; f < F_COUNT; f++) /* each field changed some results: dropping it would show */
        if (changed[f] < 3)
            fail_msg("%s changed only %d results of %d trials", field_names[f], changed[f], TRIALS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_in_the_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
