/* Shared helpers of the collective tests: random clusters and calls over the validated ranges'
 * useful part, a call timed through hl_coll_time_hbd, and a bit-for-bit comparison of results.
 * Callers seed rand(). */
#ifndef HL_TEST_COLL_RANDOM_H
#define HL_TEST_COLL_RANDOM_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "coll_int.h"
#include "hbdlab/hbdlab.h"

static inline double frand(double lo, double hi) { return lo + (hi - lo) * (rand() / (double)RAND_MAX); }
static inline double logrand(double lo, double hi) { return exp(frand(log(lo), log(hi))); }

/* A random cluster: link parameters over the validated ranges' useful part, either fabric. */
static inline hl_cluster random_cluster(void)
{
    static const int64_t gpus[] = {8, 16, 32, 64, 72, 128, 256};
    hl_gpu g; /* a preset's compute and memory: only the links matter here */
    hl_err e;
    if (hl_gpu_preset("B200", &g, &e))
        fail_msg("%s", e.msg);
    g.scaleup_bw = logrand(1e9, 2e12);
    g.scaleout_bw = logrand(1e9, 1e12);
    g.eff_scaleup = frand(0.3, 1);
    g.eff_scaleout = frand(0.3, 1);
    g.scaleup_latency = rand() % 8 ? logrand(1e-7, 1e-5) : 0;
    g.scaleout_latency = rand() % 8 ? logrand(1e-6, 1e-4) : 0;
    g.coll_launch = rand() % 4 ? logrand(1e-6, 2e-5) : 0;
    g.in_switch_eff = frand(0.3, 1.5);
    g.in_switch_latency = logrand(1e-6, 1e-5);
    int64_t n = gpus[rand() % 7], hbd = n;
    while (hbd > 1 && rand() % 3)
        for (hbd--; n % hbd != 0; hbd--) {
        }
    hl_cluster c;
    if (hl_cluster_init(&c, &g, n, hbd, &e))
        fail_msg("%s", e.msg);
    c.fabric = rand() % 4 ? HL_FABRIC_SWITCH : HL_FABRIC_MESH;
    c.in_switch_reduce = rand() % 2;
    c.peer_cost = rand() % 2 ? logrand(1e-8, 1e-6) : 0;
    return c;
}

/* A random call on c with HBDs of *hbd GPUs (c->hbd or a divisor of it). */
static inline hl_coll_in random_call(const hl_cluster *c, int64_t *hbd)
{
    static const hl_coll_op ops[] = {HL_ALLREDUCE, HL_ALLGATHER, HL_REDUCESCATTER, HL_ALLTOALL, HL_BROADCAST,
                                     HL_REDUCE,    HL_GATHER,    HL_SCATTER,       HL_SENDRECV};
    *hbd = c->hbd;
    while (*hbd > 1 && rand() % 4 == 0)
        for ((*hbd)--; c->hbd % *hbd != 0; (*hbd)--) {
        }
    hl_coll_in in = {ops[rand() % 2 ? 0 : rand() % 9], HL_ALGO_AUTO, 1, 2, 0, 0}; /* all-reduce half the time */
    int64_t n = 2;
    if (in.op != HL_SENDRECV)
        for (n = c->gpus; n > 2 && rand() % 2; n /= 2) {
        }
    while (c->gpus % n != 0)
        n--;
    in.ranks = n < 1 ? 1 : n;
    if (rand() % 3 == 0) { /* a placement: a divisor of ranks at most hbd */
        int64_t g = in.ranks < *hbd ? in.ranks : *hbd;
        while (g > 1 && (in.ranks % g != 0 || rand() % 2))
            g--;
        in.ranks_per_hbd = g;
    }
    if (in.op == HL_ALLTOALL && rand() % 2)
        in.imbalance = frand(1, 3);
    return in;
}

static inline int timed(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *o)
{
    hl_err e;
    return hl_coll_time_hbd(c, hbd, in, o, &e) == HL_OK;
}

static inline void assert_same(const hl_coll_out *a, const hl_coll_out *b, const hl_coll_in *in, int64_t hbd)
{
    const double fa[] = {a->time_s,         a->algbw,     a->busbw,        a->scaleup_bytes,
                         a->scaleout_bytes, a->latency_s, a->latency_share};
    const double fb[] = {b->time_s,         b->algbw,     b->busbw,        b->scaleup_bytes,
                         b->scaleout_bytes, b->latency_s, b->latency_share};
    if (memcmp(fa, fb, sizeof fa) != 0 || a->algo != b->algo || a->hbds != b->hbds ||
        a->ranks_per_hbd != b->ranks_per_hbd)
        fail_msg("op %d, %lld ranks (%lld per HBD), hbd %lld, %.17g B, imbalance %g: algo %d vs %d, time %.17g vs "
                 "%.17g",
                 (int)in->op, (long long)in->ranks, (long long)in->ranks_per_hbd, (long long)hbd, in->bytes,
                 in->imbalance, (int)a->algo, (int)b->algo, a->time_s, b->time_s);
}

#endif
