/* Collective times: alpha-beta per tier, one function per algorithm.
 * Formulas and sources: docs/MODEL.md section 5. */
#include "hbdlab/coll.h"

#include <math.h>
#include <string.h>

#include "coll_int.h"
#include "err_int.h"
#include "fmax_int.h"

static const char *const op_names[HL_COLL_OP_COUNT] = {
    "allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "gather", "scatter", "sendrecv"};
static const char *const algo_names[HL_COLL_ALGO_COUNT] = {
    "auto",         "ring", "tree",    "direct",  "halving_doubling", "in_switch",
    "hierarchical", "nccl", "oneshot", "twoshot", "trtllm_ar",        "vllm_ar"};

const char *hl_coll_op_name(hl_coll_op op) { return (unsigned)op < HL_COLL_OP_COUNT ? op_names[op] : "?"; }
const char *hl_coll_algo_name(hl_coll_algo a) { return (unsigned)a < HL_COLL_ALGO_COUNT ? algo_names[a] : "?"; }

hl_status hl_coll_op_parse(const char *name, hl_coll_op *out, hl_err *err)
{
    int i;
    hl_status s = hl_name_lookup(op_names, HL_COLL_OP_COUNT, "collective op", name, &i, err);
    if (!s)
        *out = (hl_coll_op)i;
    return s;
}

hl_status hl_coll_algo_parse(const char *name, hl_coll_algo *out, hl_err *err)
{
    int i;
    hl_status s = hl_name_lookup(algo_names, HL_COLL_ALGO_COUNT, "collective algo", name, &i, err);
    if (!s)
        *out = (hl_coll_algo)i;
    return s;
}

double hl_coll_bus_factor(hl_coll_op op, int64_t n)
{
    double dn = (double)n;
    switch (op) {
    case HL_ALLREDUCE: return 2 * (dn - 1) / dn;
    case HL_ALLGATHER:
    case HL_REDUCESCATTER:
    case HL_ALLTOALL:
    case HL_GATHER:
    case HL_SCATTER: return (dn - 1) / dn;
    default: return 1;
    }
}

/* The group as placed, and each tier's effective parameters. */
typedef struct group {
    double S;       /* bytes */
    double n, g, N; /* ranks, ranks per HBD, HBDs */
    double bu, bo;  /* B/s per direction per GPU: scale-up usable by this group, scale-out */
    double au, ao;  /* s per step inside / across HBDs */
    double L;       /* s launch */
    double peer;    /* s per remote peer */
    double imb;     /* all-to-all imbalance */
    int nvls;       /* in-switch reduction usable */
    double nvls_bw, nvls_lat;
    int custom;        /* an engine's custom all-reduce applies: one HBD of a switched fabric */
    double cu_lat;     /* s per custom all-reduce stage */
    double cu_bw;      /* B/s a custom all-reduce reads peers at */
    double lg_g, lg_N; /* lg2(g), lg2(N): once per call, not in each algorithm */
    int pow2_ng;       /* n and g both powers of two */
} group;

typedef struct cost {
    int ok;
    double lat; /* s, independent of S */
    double bw;  /* s, proportional to S */
    double up;  /* B per GPU on scale-up */
    double out; /* B per GPU on scale-out */
    int algo;   /* hl_coll_algo chosen inside a selecting algorithm (nccl, trtllm_ar, vllm_ar); 0 = itself */
} cost;

static const cost NA = {0, 0, 0, 0, 0, 0};

/* Whether candidate k is usable and takes less time than best (an unusable best loses to any). */
static int faster(cost k, cost best) { return k.ok && (!best.ok || k.lat + k.bw < best.lat + best.bw); }

/* ceil(log2(x)) of a whole count x >= 1 (0 for x <= 1). */
static double lg2_count(int64_t x) { return x <= 1 ? 0 : (double)(64 - __builtin_clzll((uint64_t)x - 1)); }
static int pow2_count(int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }
/* Bandwidth of an algorithm whose links cross both tiers: the slower tier binds. */
static double flat_bw(const group *G) { return G->N > 1 ? (G->g > 1 ? hl_fmin(G->bu, G->bo) : G->bo) : G->bu; }

/* Splits `total` bytes of a flat ring between tiers: N of its n edges cross HBDs. */
static void ring_split(const group *G, double total, cost *c)
{
    double frac_out = G->N > 1 ? (G->g > 1 ? G->N / G->n : 1) : 0;
    c->out = total * frac_out;
    c->up = total - c->out;
}

/* Ring latency of `steps` steps, `inter` of them bound by the scale-out hop (NCCL-T). */
static double ring_lat(const group *G, double steps, double inter)
{
    if (G->N > 1 && G->g == 1)
        return G->L + steps * G->ao;
    return G->L + (steps - inter) * G->au + inter * G->ao;
}

static cost ring(hl_coll_op op, const group *G)
{
    cost c = {1, 0, 0, 0, 0, 0};
    double n = G->n, B = flat_bw(G), k;
    switch (op) {
    case HL_ALLREDUCE:
        k = 2 * (n - 1) / n;
        c.lat = ring_lat(G, 2 * (n - 1), G->N > 1 ? 2 * (G->N - 1) : 0);
        break;
    case HL_ALLGATHER:
    case HL_REDUCESCATTER:
        k = (n - 1) / n;
        c.lat = ring_lat(G, n - 1, G->N > 1 ? G->N - 1 : 0);
        break;
    case HL_BROADCAST:
    case HL_REDUCE: /* pipelined chain: latency of n-1 hops, bandwidth of one link */
        k = 1;
        c.lat = ring_lat(G, n - 1, G->N > 1 ? G->N - 1 : 0);
        break;
    default: return NA;
    }
    c.bw = k * G->S / B;
    ring_split(G, k * G->S, &c);
    return c;
}

/* NCCL's tree: a chain inside each HBD, a double binary tree across HBDs. */
static cost tree(hl_coll_op op, const group *G)
{
    cost c = {1, 0, 0, 0, 0, 0};
    double B = flat_bw(G);
    double hops = (G->g - 1) * G->au + G->lg_N * G->ao;
    double k; /* passes over the tree */
    switch (op) {
    case HL_ALLREDUCE: k = 2; break; /* reduce up, broadcast down: each moves S over the bottleneck link */
    case HL_BROADCAST:
    case HL_REDUCE: k = 1; break;
    default: return NA;
    }
    c.lat = G->L + k * hops;
    c.bw = k * G->S / B;
    c.out = G->N > 1 ? k * G->S / G->g : 0;
    c.up = k * G->S * (G->g - 1) / G->g;
    return c;
}

/* One-shot: every rank exchanges with all peers at once; the two tiers run
 * concurrently, each carrying its share; a setup cost per remote peer. */
static cost direct(hl_coll_op op, const group *G)
{
    cost c = {1, 0, 0, 0, 0, 0};
    double n = G->n, g = G->g, S = G->S;
    double per_peer; /* bytes exchanged with each peer */
    switch (op) {
    case HL_ALLREDUCE: per_peer = S; break; /* fetch every peer's whole buffer, reduce locally */
    case HL_ALLGATHER:
    case HL_REDUCESCATTER:
    case HL_GATHER:
    case HL_SCATTER: per_peer = S / n; break;
    case HL_ALLTOALL: per_peer = S / n * (G->imb > 1 ? G->imb : 1); break;
    case HL_BROADCAST:
    case HL_REDUCE: per_peer = S; break; /* the root's link carries S to each peer */
    case HL_SENDRECV: per_peer = S; break;
    default: return NA;
    }
    double local = op == HL_SENDRECV ? (g > 1 ? 1 : 0) : g - 1;
    double remote = op == HL_SENDRECV ? (g > 1 ? 0 : 1) : n - g;
    c.up = local * per_peer;
    c.out = remote * per_peer;
    c.bw = hl_fmax(c.up / G->bu, remote > 0 ? c.out / G->bo : 0);
    c.lat = G->L + (remote > 0 ? G->ao : G->au) + remote * G->peer;
    if (op == HL_ALLTOALL) {
        double mean = S / n;
        c.up = local * mean;
        c.out = remote * mean;
    }
    return c;
}

/* Recursive halving (reduce-scatter) then doubling (all-gather), intra-HBD
 * distances first so the scale-out steps carry the smallest pieces. */
static cost halving_doubling(hl_coll_op op, const group *G)
{
    double k;
    switch (op) {
    case HL_ALLREDUCE: k = 2; break;
    case HL_ALLGATHER:
    case HL_REDUCESCATTER: k = 1; break;
    default: return NA;
    }
    if (!G->pow2_ng)
        return NA;
    cost c = {1, 0, 0, 0, 0, 0};
    double up = (1 - 1 / G->g) * G->S, out = (1 - 1 / G->N) * G->S / G->g;
    double lat = G->lg_g * G->au + G->lg_N * G->ao;
    c.lat = G->L + k * lat;
    c.bw = k * (up / G->bu + (G->N > 1 ? out / G->bo : 0));
    c.up = k * up;
    c.out = k * out;
    return c;
}

/* In-switch reduction (NVLS): each rank pushes S into the switch, which
 * reduces and multicasts back; one HBD only. */
static cost in_switch(hl_coll_op op, const group *G)
{
    if (!G->nvls || G->N > 1 || op != HL_ALLREDUCE || G->n < 2)
        return NA;
    cost c = {1, G->L + G->nvls_lat, G->S / G->nvls_bw, G->S, 0, 0};
    return c;
}

/* Two levels: an intra-HBD phase, the cross-HBD phase on each GPU's own NIC
 * (g rails in parallel), and the mirror intra phase. */
static cost hierarchical(hl_coll_op op, const group *G)
{
    if (G->N <= 1 || G->g <= 1)
        return NA;
    cost c = {1, 0, 0, 0, 0, 0};
    double g = G->g, N = G->N, S = G->S;
    switch (op) {
    case HL_ALLREDUCE: {
        double intra_lat = 2 * (g - 1) * G->au, intra_bw = 2 * (g - 1) / g * S / G->bu;
        if (G->nvls && G->nvls_bw > 0 && G->L + G->nvls_lat + S / G->nvls_bw < G->L + intra_lat + intra_bw) {
            intra_lat = G->nvls_lat; /* NVLSTree: the switch does both intra phases */
            intra_bw = S / G->nvls_bw;
        }
        c.lat = G->L + intra_lat + 2 * (N - 1) * G->ao;
        c.bw = intra_bw + 2 * (N - 1) / N * (S / g) / G->bo;
        c.up = 2 * (g - 1) / g * S;
        c.out = 2 * (N - 1) / N * S / g;
        return c;
    }
    case HL_ALLGATHER:
    case HL_REDUCESCATTER:
        c.lat = G->L + (g - 1) * G->au + (N - 1) * G->ao;
        c.bw = (g - 1) / g * S / G->bu + (N - 1) / N * (S / g) / G->bo;
        c.up = (g - 1) / g * S;
        c.out = (N - 1) / N * S / g;
        return c;
    case HL_ALLTOALL: {
        double imb = G->imb > 1 ? G->imb : 1;
        /* gather per-rail data inside the HBD, then one message per remote HBD */
        c.lat = G->L + G->au + G->ao + (N - 1) * G->peer;
        c.up = (g - 1) / g * S;
        c.out = (N - 1) / N * S;
        c.bw = imb * (c.up / G->bu + c.out / G->bo);
        return c;
    }
    case HL_BROADCAST:
    case HL_REDUCE:
        c.lat = G->L + G->lg_N * G->ao + G->lg_g * G->au;
        c.bw = S / G->bo + S / G->bu;
        c.up = S * (g - 1) / g;
        c.out = S / g;
        return c;
    default: return NA;
    }
}

/* NCCL's tuning model inside one HBD (src/graph/tuning.cc of NCCL 2.30.7,
 * ncclTopoTuneModel and ncclTopoGetAlgoTime; docs/MODEL.md 5.1). Per
 * algorithm (tree, ring) and protocol (LL, LL128, Simple): NCCL's base
 * latencies and NVLink per-hop latencies, in us. The preset's coll_launch and
 * scaleup_latency take the place of ring/LL's base (6.6) and hop (0.6): the
 * other entries keep NCCL's offsets and ratios to it. */
enum { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };
static const double nccl_base_us[2][PROTO_COUNT] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}}; /* tree, ring */
static const double nccl_hop_us[2][PROTO_COUNT] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};   /* NVLink */
/* Bus bandwidth of each protocol as a fraction of Simple's: ring LL x0.5, LL128 x0.92 (120/128);
 * tree all-reduce x0.92, then LL x1/3.8, LL128 x7/9 on one node. */
static const double nccl_ring_bw[PROTO_COUNT] = {0.5, 0.92, 1};
static const double nccl_tree_bw[PROTO_COUNT] = {0.92 / 3.8, 0.92 * 7.0 / 9.0, 0.92};
/* treeCorrectionFactor: tree all-reduce bandwidth at 64 B x 2^i (i = 0..23) */
static const double nccl_tree_corr[PROTO_COUNT][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

/* Ring (tree = 0) or tree (1) on one HBD with protocol p. */
static cost nccl_proto(hl_coll_op op, const group *G, int is_tree, int p)
{
    cost c = {1, 0, 0, 0, 0, 0};
    double n = G->n, S = G->S, B = G->bu;
    double steps, k;
    if (op == HL_ALLREDUCE) {
        steps = 2 * (n - 1);
        k = is_tree ? 2 : 2 * (n - 1) / n; /* tree: algbw = busbw / 2 */
    } else if (!is_tree && (op == HL_ALLGATHER || op == HL_REDUCESCATTER)) {
        steps = n - 1;
        k = (n - 1) / n;
    } else {
        return NA;
    }
    int a = is_tree ? 0 : 1;
    double bus = B * (is_tree ? nccl_tree_bw[p] : nccl_ring_bw[p]);
    if (is_tree && S >= 64) {
        int lg = (int)lg2_count((int64_t)floor(S / 64) + 1) - 1; /* floor(log2(S / 64)) (S <= 1e18 B, checked above) */
        if (lg >= 0 && lg < 23)
            bus *= nccl_tree_corr[p][lg];
    }
    c.lat = G->L + (nccl_base_us[a][p] - nccl_base_us[1][PROTO_LL]) * 1e-6 +
            steps * G->au * nccl_hop_us[a][p] / nccl_hop_us[1][PROTO_LL];
    c.bw = k * S / bus;
    c.up = (is_tree ? 2 * (n - 1) / n : k) * S; /* bytes a rank sends: the ring's k S; the chain's 2(n-1)/n S */
    return c;
}

/* NCCL inside one HBD: the fastest of ring and tree in each protocol, and
 * NVLS where the switch reduces (NCCL picks the lowest tuning-model time). */
static cost nccl_intra(hl_coll_op op, const group *G)
{
    cost best = NA;
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < PROTO_COUNT; p++) {
            cost k = nccl_proto(op, G, t, p);
            k.algo = t ? HL_ALGO_TREE : HL_ALGO_RING;
            if (faster(k, best))
                best = k;
        }
    cost v = in_switch(op, G);
    v.algo = HL_ALGO_IN_SWITCH;
    if (faster(v, best))
        best = v;
    return best;
}

/* The engines' custom all-reduce kernels (TensorRT-LLM customAllReduceKernels,
 * vLLM csrc/custom_all_reduce.cuh): one-shot reads all n-1 peers' buffers
 * over NVLink and reduces locally (one stage); two-shot reduces its 1/n slice
 * from every peer, then gathers the other slices (two stages). */
static cost oneshot(hl_coll_op op, const group *G)
{
    if (!G->custom || op != HL_ALLREDUCE)
        return NA;
    double v = (G->n - 1) * G->S;
    cost c = {1, G->cu_lat, v / G->cu_bw, v, 0, HL_ALGO_ONESHOT};
    return c;
}
static cost twoshot(hl_coll_op op, const group *G)
{
    if (!G->custom || op != HL_ALLREDUCE)
        return NA;
    double v = 2 * (G->n - 1) / G->n * G->S;
    cost c = {1, 2 * G->cu_lat, v / G->cu_bw, v, 0, HL_ALGO_TWOSHOT};
    return c;
}

/* NCCL as it chooses: its tuning model in one HBD, else the fastest of its
 * multi-HBD algorithms. */
static cost nccl_choice(hl_coll_op op, const group *G);

/* TensorRT-LLM's AUTO strategy (cpp/tensorrt_llm/common/customAllReduceUtils.h,
 * selectStrategyLookUpTable): a table of the fastest of ONESHOT, TWOSHOT and NCCL
 * measured per (SM, TP, hidden, tokens); modelled as that minimum. Messages
 * above the workspace (getMaxRequiredWorkspaceSize: 16e6 B at 2 ranks, 8e6 B
 * above) go to NCCL. */
static cost trtllm_ar(hl_coll_op op, const group *G)
{
    cost best = nccl_choice(op, G);
    if (!G->custom || op != HL_ALLREDUCE || G->S > (G->n <= 2 ? 16e6 : 8e6))
        return best;
    cost o = oneshot(op, G), t = twoshot(op, G);
    if (faster(o, best))
        best = o;
    if (faster(t, best))
        best = t;
    return best;
}

/* vLLM (vllm/distributed/device_communicators/custom_all_reduce.py,
 * should_custom_ar: below max_size = 8 MiB on 2, 4, 6 or 8 ranks; csrc/
 * custom_all_reduce.cuh: one-shot at 2 ranks, below 512 KiB at <= 4 ranks,
 * below 256 KiB at <= 8; two-shot otherwise), NCCL else. */
static cost vllm_ar(hl_coll_op op, const group *G)
{
    double n = G->n, S = G->S;
    int ws_ok = n == 2 || n == 4 || n == 6 || n == 8;
    if (!G->custom || op != HL_ALLREDUCE || !ws_ok || S >= 8 * 1048576.0)
        return nccl_choice(op, G);
    if (n == 2 || (n <= 4 && S < 512 * 1024.0) || (n <= 8 && S < 256 * 1024.0))
        return oneshot(op, G);
    return twoshot(op, G);
}

typedef cost (*algo_fn)(hl_coll_op, const group *);
static const algo_fn algos[HL_COLL_ALGO_COUNT] = {NULL,         ring, tree,    direct,  halving_doubling, in_switch,
                                                  hierarchical, NULL, oneshot, twoshot, trtllm_ar,        vllm_ar};

static int in_nccl_set(hl_coll_algo a, hl_coll_op op)
{
    if (a == HL_ALGO_RING || a == HL_ALGO_TREE || a == HL_ALGO_IN_SWITCH || a == HL_ALGO_HIERARCHICAL)
        return 1;
    /* NCCL runs all-to-all, gather, scatter and send/recv as point-to-point to every peer. */
    return a == HL_ALGO_DIRECT && (op == HL_ALLTOALL || op == HL_GATHER || op == HL_SCATTER || op == HL_SENDRECV);
}

static cost nccl_choice(hl_coll_op op, const group *G)
{
    if (G->N == 1 && (op == HL_ALLREDUCE || op == HL_ALLGATHER || op == HL_REDUCESCATTER))
        return nccl_intra(op, G);
    cost best = NA;
    for (int a = 1; a <= HL_ALGO_HIERARCHICAL; a++) {
        if (!in_nccl_set((hl_coll_algo)a, op))
            continue;
        cost k = algos[a](op, G);
        k.algo = a;
        if (faster(k, best))
            best = k;
    }
    return best;
}

/* Everything a memoised function of a collective depends on: which function,
 * the call and the cluster's link parameters. Equal keys give equal results. */
typedef struct coll_key {
    hl_coll_in in;
    double links[12];
    int64_t gpus, hbd;
    int32_t fabric, nvls;
    hl_coll_fn fn;
} coll_key;
/* memcmp compares keys: no padding bytes may exist (so no memset per lookup) */
_Static_assert(sizeof(coll_key) == sizeof(hl_coll_in) + 12 * sizeof(double) + 2 * sizeof(int64_t) +
                                       2 * sizeof(int32_t) + sizeof(hl_coll_fn),
               "coll_key has padding");
_Static_assert(sizeof(hl_coll_in) == 2 * sizeof(int32_t) + 2 * sizeof(double) + 2 * sizeof(int64_t), "hl_coll_in has "
                                                                                                     "padding");

static void make_key(hl_coll_fn fn, const hl_cluster *c, int64_t hbd, const hl_coll_in *in, coll_key *k)
{
    k->in = *in;
    const double links[12] = {c->scaleup_bw,        c->scaleout_bw, c->scaleup_latency,   c->scaleout_latency,
                              c->coll_launch,       c->eff_scaleup, c->eff_scaleout,      c->in_switch_eff,
                              c->in_switch_latency, c->peer_cost,   c->custom_ar_latency, c->custom_ar_eff};
    memcpy(k->links, links, sizeof links);
    k->gpus = c->gpus;
    k->hbd = hbd;
    k->fabric = c->fabric;
    k->nvls = c->in_switch_reduce;
    k->fn = fn;
}

/* Per-thread memo of recent results (sweeps repeat most calls): 2-way set
 * associative, the newer entry of a set first. About 64 KiB per thread. */
enum { MEMO_SETS = 128 };
typedef struct memo_slot {
    int valid;
    coll_key key;
    hl_coll_out out;
} memo_slot;
static _Thread_local memo_slot memo[MEMO_SETS][2];

/* Mixes the fields that differ most between calls; memcmp settles equality. */
static unsigned key_hash(const coll_key *k)
{
    uint64_t bits;
    memcpy(&bits, &k->in.bytes, sizeof bits);
    uint64_t h = bits ^ ((uint64_t)k->in.op << 56) ^ ((uint64_t)k->in.ranks << 32) ^ ((uint64_t)k->hbd << 16) ^
                 (uint64_t)k->in.ranks_per_hbd ^ ((uint64_t)k->in.algo << 48);
    uint64_t f = 0;
    memcpy(&f, &k->fn, sizeof k->fn < sizeof f ? sizeof k->fn : sizeof f); /* which function */
    h ^= f;
    memcpy(&bits, &k->links[1], sizeof bits); /* scale-out bandwidth: swept in HBD studies */
    h ^= bits * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (unsigned)(h % MEMO_SETS);
}

/* A sweep over a size (input, batch) gives every collective new bytes: there the memo never
 * hits, and building and comparing its 160-byte key costs ~200 instructions a call (callgrind,
 * bench's stream sweep: 3 calls a point, none hit). So a thread whose last MEMO_WINDOW lookups
 * all missed computes its next MEMO_SKIP calls directly, neither looking up nor storing, then
 * looks again. Results are the same either way (the memo only stores what fn returns). A miss
 * saved is worth ~3 lookups (an uncached collective ~700 instructions), so skipping pays below
 * a hit rate of ~25%, and a thread hitting 25% of its calls misses 64 in a row with a
 * probability of 0.75^64 ~ 1e-8. (derived) */
enum { MEMO_WINDOW = 64, MEMO_SKIP = 1024 };
typedef struct memo_run {
    int misses; /* consecutive misses so far */
    int skip;   /* calls still to compute without the memo */
} memo_run;
static _Thread_local memo_run mrun;

hl_status hl_coll_memo(hl_coll_fn fn, const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out,
                       hl_err *err)
{
    memo_run *r = &mrun;
    if (r->skip > 0) {
        r->skip--;
        return fn(c, hbd, in, out, err);
    }
    coll_key k;
    make_key(fn, c, hbd, in, &k);
    memo_slot *set = memo[key_hash(&k)];
    for (int w = 0; w < 2; w++)
        if (set[w].valid && memcmp(&set[w].key, &k, sizeof k) == 0) {
            r->misses = 0;
            *out = set[w].out;
            return HL_OK;
        }
    if (++r->misses >= MEMO_WINDOW) {
        r->misses = 0;
        r->skip = MEMO_SKIP;
    }
    hl_status st = fn(c, hbd, in, out, err); /* may use the memo itself: no slot is held across the call */
    if (st == HL_OK) {
        set[1] = set[0];
        set[0].valid = 1;
        set[0].key = k;
        set[0].out = *out;
    }
    return st;
}

static hl_status coll_time_uncached(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out,
                                    hl_err *err);

/* ---- AUTO's choice by bounds (docs/MODEL.md 5): a call's shape, its candidates' lines ----
 *
 * A sweep over a size gives a collective new bytes at every point, but the same shape: the call but
 * its bytes and imbalance, and the link parameters (everything group G holds but S and imb). For
 * AUTO, each plain algorithm a (ring .. hierarchical) either never applies to a shape or costs
 *   T_a(S) = fl(lat_a + bw_a(S)),
 * where lat_a does not depend on S (the same double every call) and bw_a(S) is a chain of at most
 * 5 roundings of +, *, / and max over positive operands, whose exact value is beta_a x, linear in
 * x = S (x = S imb' for an all-to-all, imb' = max(imb, 1): direct and hierarchical scale by it).
 * The one exception is hierarchical's all-reduce with in-switch reduction, which picks its intra
 * phase by S: shapes with it take the full loop. Derived bound: each rounding of a positive
 * result multiplies it by a factor in [1 - u, 1 + u] (u = 2^-53; max is exact; a sum of positive
 * terms keeps the worst factor of its terms), so with f_a(x) = lat_a + beta_a x exactly
 *   T_a in f_a [(1 - u)^6, (1 + u)^6]                     (5 roundings of bw_a, 1 of the sum).
 * The shape keeps lat_a and b_a = bw_a(1) computed (x = 1: S = 1, imb' = 1), b_a in
 * beta_a [(1 - u)^5, (1 + u)^5]; a call computes v_a = fl(lat_a + fl(b_a fl(x))), within
 * f_a [(1 - u)^8, (1 + u)^8], so T_a / v_a lies in [1 - 15u, 1 + 15u] (first order; the u^2 terms
 * are far below the margin). With w the least v and M = 2^-44 = 512u: where
 *   fl(v_w (1 + M)) < fl(v_j (1 - M))   for every other applicable j,
 * T_w <= v_w (1 + 15u) < v_j (1 - M)(1 + u)(1 + 15u) / ((1 + M)(1 - u)) < v_j (1 - 15u) <= T_j,
 * so w is the strict least time, the one the full loop (first strictly faster candidate) keeps
 * whatever the order: w alone is evaluated, the same function on the same G, the same bits.
 * Elsewhere (a near tie, x outside [1, 1e24], a lat or b outside the normal range) the full loop
 * runs. tests/c/test_coll_shape.c compares both on random shapes and sizes, near ties included. */
enum { SHAPE_SLOTS = 16, SHAPE_ALGOS = HL_ALGO_HIERARCHICAL };
typedef struct shape_key {
    int32_t op, algo;
    int64_t ranks, ranks_per_hbd, hbd, gpus;
    int32_t fabric, nvls;
    double links[12];
} shape_key;
_Static_assert(sizeof(shape_key) == 4 * sizeof(int32_t) + 4 * sizeof(int64_t) + 12 * sizeof(double), "shape_key has "
                                                                                                     "padding");
typedef struct shape {
    int valid;
    int fast;       /* AUTO's choice by bounds applies */
    uint64_t stamp; /* this fill's number (shape_fills): a hint that saw it still names this shape */
    shape_key key;
    group G;                  /* the shape's group; S and imb set by each call */
    int n_alive;              /* applicable algorithms */
    int alive[SHAPE_ALGOS];   /* their numbers, in loop order */
    double lat[SHAPE_ALGOS];  /* s, lat_a */
    double beta[SHAPE_ALGOS]; /* s per byte of x, b_a */
    int won;                  /* index (in alive) of the winner on [won_lo, won_hi]; empty: lo > hi */
    double won_lo, won_hi;    /* x, the least and greatest x where shape_pick found it */
} shape;
static _Thread_local shape shapes[SHAPE_SLOTS];
static _Thread_local int shapes_off;       /* tests: 1 runs the full loop always (hl_coll_shape_cache) */
static _Thread_local uint64_t shape_fills; /* slots filled on this thread so far (never reset) */

void hl_coll_shape_cache(int on)
{
    shapes_off = !on;
    memset(shapes, 0, sizeof shapes);
    memset(memo, 0, sizeof memo); /* no result of the other mode is returned after the switch */
    mrun = (memo_run){0, 0};
}

static void shape_key_of(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, shape_key *k)
{
    k->op = in->op;
    k->algo = in->algo;
    k->ranks = in->ranks;
    k->ranks_per_hbd = in->ranks_per_hbd;
    k->hbd = hbd;
    k->gpus = c->gpus;
    k->fabric = c->fabric;
    k->nvls = c->in_switch_reduce;
    const double links[12] = {c->scaleup_bw,        c->scaleout_bw, c->scaleup_latency,   c->scaleout_latency,
                              c->coll_launch,       c->eff_scaleup, c->eff_scaleout,      c->in_switch_eff,
                              c->in_switch_latency, c->peer_cost,   c->custom_ar_latency, c->custom_ar_eff};
    memcpy(k->links, links, sizeof links);
}

static unsigned shape_slot(const hl_coll_in *in, int64_t hbd)
{
    uint64_t h = (uint64_t)in->op ^ ((uint64_t)in->algo << 8) ^ ((uint64_t)in->ranks << 16) ^
                 ((uint64_t)in->ranks_per_hbd << 36) ^ ((uint64_t)hbd << 44);
    h *= 0x9e3779b97f4a7c15ULL;
    return (unsigned)(h >> 60) & (SHAPE_SLOTS - 1);
}

static int same_bits(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y;
}

/* Whether sh holds the shape of (c, hbd, in): shape_key_of's fields compared where they lie, the
 * doubles bit for bit (as memcmp of the key would), without building a key per call. */
static int shape_is(const shape *sh, const hl_cluster *c, int64_t hbd, const hl_coll_in *in)
{
    const shape_key *k = &sh->key;
    const double *l = k->links;
    return sh->valid && k->op == in->op && k->algo == in->algo && k->ranks == in->ranks &&
           k->ranks_per_hbd == in->ranks_per_hbd && k->hbd == hbd && k->gpus == c->gpus && k->fabric == c->fabric &&
           k->nvls == c->in_switch_reduce && same_bits(l[0], c->scaleup_bw) && same_bits(l[1], c->scaleout_bw) &&
           same_bits(l[2], c->scaleup_latency) && same_bits(l[3], c->scaleout_latency) &&
           same_bits(l[4], c->coll_launch) && same_bits(l[5], c->eff_scaleup) && same_bits(l[6], c->eff_scaleout) &&
           same_bits(l[7], c->in_switch_eff) && same_bits(l[8], c->in_switch_latency) &&
           same_bits(l[9], c->peer_cost) && same_bits(l[10], c->custom_ar_latency) &&
           same_bits(l[11], c->custom_ar_eff);
}

static int normal_pos(double v) { return v >= 0x1p-500 && v <= 0x1p500; }

/* The shape's lines (G validated, its S and imb not read): which algorithms apply and, for
 * each, lat_a and b_a = bw_a at x = 1; fast = 0 where the bounds above do not hold. */
static void shape_lines(shape *sh, hl_coll_op op)
{
    group G = sh->G;
    G.S = 1;
    G.imb = 0;
    sh->n_alive = 0;
    sh->won = 0;
    sh->won_lo = 1, sh->won_hi = 0;
    /* bandwidths in the normal range and counts under 2^40: with 1 <= x <= 1e24 every
     * intermediate of bw_a stays a normal number (no underflow, no overflow) */
    sh->fast = sh->key.algo == HL_ALGO_AUTO && sh->key.ranks > 1 && G.n <= 0x1p40 && normal_pos(G.bu) &&
               normal_pos(G.bo) && (!G.nvls || normal_pos(G.nvls_bw)) &&
               !(op == HL_ALLREDUCE && G.N > 1 && G.g > 1 && G.nvls && G.nvls_bw > 0);
    for (int a = 1; a <= HL_ALGO_HIERARCHICAL && sh->fast; a++) {
        cost k = algos[a](op, &G);
        if (!k.ok)
            continue;
        if (!(k.lat == 0 || normal_pos(k.lat)) || !normal_pos(k.bw))
            sh->fast = 0;
        int i = sh->n_alive++;
        sh->alive[i] = a;
        sh->lat[i] = k.lat;
        sh->beta[i] = k.bw;
    }
    sh->fast = sh->fast && sh->n_alive > 0;
}

/* Whether the bound picks alive[w] at x: fl(v_w (1 + M)) below every other fl(v_j (1 - M)), v as
 * shape_pick computes it. */
static int bound_picks(const shape *sh, int w, double x)
{
    double lim = (sh->lat[w] + sh->beta[w] * x) * (1 + 0x1p-44);
    for (int i = 0; i < sh->n_alive; i++)
        if (i != w && !(lim < (sh->lat[i] + sh->beta[i] * x) * (1 - 0x1p-44)))
            return 0;
    return 1;
}

/* The range of x where alive[w], just picked at x, is kept as the winner (shape_pick). Between two
 * sizes where the bound picks the same w, w is the strict least time too. Derived: with X the exact
 * x (S imb') and f_a(X) = lat_a + beta_a X, the bound passing at X0 gives (v_a within f_a [(1 - u)^8,
 * (1 + u)^8], one rounding of each side) A f_w(X0) < B f_j(X0), A = (1 + M)(1 - u)^9, B = (1 - M)
 * (1 + u)^9. B f_j - A f_w is affine in X, so positive between two such X0. An X outside whose fl(X)
 * is inside rounds as the end does, within 2u of it, and lines with lat, beta >= 0 move by that
 * factor at most: A f_w(X) < B f_j(X) (1 + 2u)^2 / (1 - 2u)^2. So T_w <= f_w (1 + u)^6 < f_j (1 - u)^6
 * <= T_j, as (B / A)(1 + 2u)^2 / (1 - 2u)^2 < (1 - u)^6 / (1 + u)^6 (2M = 1024u against about 34u).
 * The ends are guesses (each line's crossing of w's with twice the margin, clamped to [1, 1e24]),
 * kept only where the bound picks w at both; else the range is x alone. */
static void won_range(shape *sh, int w, double x)
{
    double lo = 1, hi = 1e24, a = 1 + 0x1p-43, b = 1 - 0x1p-43;
    for (int j = 0; j < sh->n_alive; j++) {
        double d = a * sh->beta[w] - b * sh->beta[j], r = (b * sh->lat[j] - a * sh->lat[w]) / d;
        if (j != w && d > 0) /* w's line is steeper: it wins below r */
            hi = hl_fmin(hi, r);
        else if (j != w && d < 0)
            lo = hl_fmax(lo, r);
    }
    sh->won = w;
    sh->won_lo = sh->won_hi = x;
    if (lo <= x && x <= hi && bound_picks(sh, w, lo) && bound_picks(sh, w, hi)) {
        sh->won_lo = lo;
        sh->won_hi = hi;
    }
}

/* AUTO's winner for G's S and imb by the bound above (1, *algo), or 0: run the full loop. Inside
 * the range of its last winner (won_range) that winner, without the lines: a sweep over a size
 * stays in one winner's range for most of its points. */
static int shape_pick(shape *sh, hl_coll_op op, const group *G, int *algo)
{
    double x = G->S;
    if (op == HL_ALLTOALL)
        x *= G->imb > 1 ? G->imb : 1;
    if (x >= sh->won_lo && x <= sh->won_hi) { /* inside [1, 1e24] */
        *algo = sh->alive[sh->won];
        return 1;
    }
    if (!(x >= 1 && x <= 1e24))
        return 0;
    double v[SHAPE_ALGOS];
    int w = 0;
    for (int i = 0; i < sh->n_alive; i++) {
        v[i] = sh->lat[i] + sh->beta[i] * x;
        if (v[i] < v[w])
            w = i;
    }
    double lim = v[w] * (1 + 0x1p-44);
    for (int i = 0; i < sh->n_alive; i++)
        if (i != w && !(lim < v[i] * (1 - 0x1p-44)))
            return 0;
    won_range(sh, w, x);
    *algo = sh->alive[w];
    return 1;
}

hl_status hl_coll_time_hbd(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out, hl_err *err)
{
    if (hbd < 1 || hbd > c->gpus)
        return hl_fail(err, HL_EINVAL, "collective: HBDs of %lld GPUs in a cluster of %lld", (long long)hbd,
                       (long long)c->gpus);
    return hl_coll_memo(coll_time_uncached, c, hbd, in, out, err);
}

hl_status hl_coll_time(const hl_cluster *c, const hl_coll_in *in, hl_coll_out *out, hl_err *err)
{
    if (!c || !in || !out)
        return hl_fail(err, HL_EINVAL, "hl_coll_time: the %s is NULL", !c ? "cluster" : !in ? "input" : "output");
    return hl_coll_memo(coll_time_uncached, c, c->hbd, in, out, err);
}

/* The checks of a call whose shape passed all of them before: bytes and imbalance only (in the
 * order of the full checks below, which the shape's other fields passed). */
static hl_status check_bytes(const hl_coll_in *in, hl_err *err)
{
    if (!(in->bytes >= 0 && in->bytes <= 1e18)) /* NaN and inf fail too */
        return hl_fail(err, HL_EINVAL, "collective field 'bytes': %g is not in 0..1e18",
                       isnan(in->bytes) ? fabs(in->bytes) : in->bytes);
    return HL_OK;
}

static hl_status check_imbalance(const hl_coll_in *in, hl_err *err)
{
    if (!(in->imbalance == 0 || (in->imbalance >= 1 && in->imbalance <= 1e6)))
        return hl_fail(err, HL_EINVAL, "collective field 'imbalance': %g is not >= 1", in->imbalance);
    return HL_OK;
}

static hl_status check_sized(const hl_coll_in *in, hl_err *err)
{
    hl_status st = check_bytes(in, err);
    return st ? st : check_imbalance(in, err);
}

/* The checks of a call and its group G (every field). */
static hl_status group_of(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, group *Gp, hl_err *err)
{
    if ((unsigned)in->op >= HL_COLL_OP_COUNT)
        return hl_fail(err, HL_EINVAL, "collective field 'op': %d is not a collective", (int)in->op);
    if ((unsigned)in->algo >= HL_COLL_ALGO_COUNT)
        return hl_fail(err, HL_EINVAL, "collective field 'algo': %d is not an algorithm", (int)in->algo);
    hl_status st;
    if ((st = check_bytes(in, err)))
        return st;
    if (in->ranks < 1 || in->ranks > c->gpus)
        return hl_fail(err, HL_EINVAL, "collective field 'ranks': %lld is not in 1..%lld (the cluster's GPUs)",
                       (long long)in->ranks, (long long)c->gpus);
    if ((st = check_imbalance(in, err)))
        return st;
    if (in->op == HL_SENDRECV && in->ranks != 2)
        return hl_fail(err, HL_EINVAL, "collective sendrecv: ranks must be 2 (got %lld)", (long long)in->ranks);
    int64_t n = in->ranks, g = in->ranks_per_hbd;
    if (g == 0) {
        g = n < hbd ? n : hbd;
        if (n % g != 0)
            return hl_fail(err, HL_EINVAL,
                           "collective: %lld ranks do not fill HBDs of %lld evenly; give ranks_per_hbd (a divisor of "
                           "ranks, at most %lld)",
                           (long long)n, (long long)hbd, (long long)hbd);
    } else if (g < 1 || g > hbd || n % g != 0) {
        return hl_fail(err, HL_EINVAL,
                       "collective field 'ranks_per_hbd': %lld must divide ranks = %lld and be at most hbd = %lld",
                       (long long)g, (long long)n, (long long)hbd);
    }
    if (n / g > c->gpus / hbd)
        return hl_fail(err, HL_EINVAL, "collective: %lld ranks at %lld per HBD need %lld HBDs; the cluster has %lld",
                       (long long)n, (long long)g, (long long)(n / g), (long long)(c->gpus / hbd));
    group G;
    G.S = in->bytes;
    G.n = (double)n;
    G.g = (double)g;
    G.N = (double)(n / g);
    double up_raw = c->scaleup_bw;
    if (c->fabric == HL_FABRIC_MESH && hbd > 1) /* a switchless mesh: g-1 of the hbd-1 links reach the group */
        up_raw = c->scaleup_bw * (double)(g > 1 ? g - 1 : 1) / (double)(hbd - 1);
    G.bu = up_raw * c->eff_scaleup;
    G.bo = c->scaleout_bw * c->eff_scaleout;
    G.au = c->scaleup_latency;
    G.ao = c->scaleout_latency;
    G.L = c->coll_launch;
    G.peer = c->peer_cost;
    G.imb = in->imbalance;
    G.nvls = c->in_switch_reduce && c->fabric == HL_FABRIC_SWITCH && g > 1;
    G.nvls_bw = c->scaleup_bw * c->in_switch_eff;
    G.nvls_lat = c->in_switch_latency;
    G.custom = G.N == 1 && n > 1; /* NVLink/NVSwitch or a full xGMI mesh: peers' buffers are mapped */
    G.cu_lat = c->custom_ar_latency;
    G.cu_bw = up_raw * c->custom_ar_eff;
    G.lg_g = lg2_count(g);
    G.lg_N = lg2_count(n / g);
    G.pow2_ng = pow2_count(n) && pow2_count(g);
    *Gp = G;
    return HL_OK;
}

/* The collective with HBDs of `hbd` GPUs; c->hbd is not read. The group of a shape seen before
 * comes from the thread's shapes (the same values group_of gives: it reads only the key); with a
 * hint h (hl_coll_time_hinted) from the slot it names while that slot holds the fill it saw
 * (every fill takes a new stamp, hl_coll_shape_cache zeroes them: a hint's stamp is never 0), so
 * the shape its caller vouches for, which shape_is would find there. */
static hl_status coll_time_at(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out, hl_coll_hint *h,
                              int lean, hl_err *err)
{
    shape *sh = NULL;
    group local, *G = &local;
    hl_status st;
    if (!shapes_off) {
        int seen = h && h->stamp != 0 && shapes[h->slot].stamp == h->stamp;
        unsigned slot = seen ? h->slot : shape_slot(in, hbd);
        sh = &shapes[slot];
        if (seen || shape_is(sh, c, hbd, in)) {
            if ((st = check_sized(in, err)))
                return st;
            G = &sh->G;
            G->S = in->bytes;
            G->imb = in->imbalance;
        } else {
            if ((st = group_of(c, hbd, in, &local, err)))
                return st;
            sh->valid = 1;
            sh->stamp = ++shape_fills;
            shape_key_of(c, hbd, in, &sh->key);
            sh->G = local;
            shape_lines(sh, (hl_coll_op)in->op);
            G = &sh->G;
        }
        if (h) {
            h->slot = slot;
            h->stamp = sh->stamp;
        }
    } else if ((st = group_of(c, hbd, in, &local, err))) {
        return st;
    }
    int64_t n = in->ranks, g = (int64_t)G->g;

    memset(out, 0, sizeof *out);
    out->hbds = n / g;
    out->ranks_per_hbd = g;
    if (n == 1) { /* nothing to exchange */
        out->algo = in->algo == HL_ALGO_AUTO || in->algo == HL_ALGO_NCCL ? HL_ALGO_RING : in->algo;
        return HL_OK;
    }
    cost best = NA;
    int best_algo = -1;
    int w;
    if (in->algo == HL_ALGO_NCCL) {
        best = nccl_choice((hl_coll_op)in->op, G);
        best_algo = HL_ALGO_NCCL;
    } else if (in->algo == HL_ALGO_AUTO && sh && sh->fast && shape_pick(sh, (hl_coll_op)in->op, G, &w)) {
        best = algos[w]((hl_coll_op)in->op, G); /* the loop's winner for sure (bound above shape_key) */
        best_algo = w;
    } else if (in->algo == HL_ALGO_AUTO) {
        for (int a = 1; a <= HL_ALGO_HIERARCHICAL; a++) { /* the plain alpha-beta algorithms */
            if (!algos[a])
                continue;
            cost k = algos[a]((hl_coll_op)in->op, G);
            if (faster(k, best)) {
                best = k;
                best_algo = a;
            }
        }
    } else {
        best = algos[in->algo]((hl_coll_op)in->op, G);
        best_algo = in->algo;
    }
    if (!best.ok)
        return hl_fail(err, HL_EUNSUPPORTED,
                       "collective: algorithm %s does not apply to %s over %lld ranks "
                       "(%lld per HBD%s)",
                       hl_coll_algo_name((hl_coll_algo)in->algo), hl_coll_op_name((hl_coll_op)in->op), (long long)n,
                       (long long)g, c->in_switch_reduce ? "" : ", no in-switch reduction");
    out->algo = best.algo ? best.algo : best_algo;
    out->time_s = best.lat + best.bw;
    out->latency_s = best.lat;
    if (!lean) { /* lean (hinted): left 0, as hl_coll_time_hinted's callers never read them */
        out->latency_share = out->time_s > 0 ? best.lat / out->time_s : 0;
        out->algbw = out->time_s > 0 ? in->bytes / out->time_s : 0;
        out->busbw = out->algbw * hl_coll_bus_factor((hl_coll_op)in->op, n);
    }
    out->scaleup_bytes = best.up;
    out->scaleout_bytes = best.out;
    return HL_OK;
}

static hl_status coll_time_uncached(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out,
                                    hl_err *err)
{
    return coll_time_at(c, hbd, in, out, NULL, 0, err);
}

/* A hint that still names its slot's fill, on a shape where AUTO's winner is picked by the bound:
 * coll_time_at's steps for that case alone (the size's checks, the shape's G, shape_pick, the
 * winner's cost, the same fields from the same values), without its lookups and branches. Else
 * coll_time_at, lean. Either way algbw, busbw and latency_share are 0. */
hl_status hl_coll_time_hinted(const hl_cluster *c, const hl_coll_in *in, hl_coll_out *out, hl_coll_hint *h, hl_err *err)
{
    shape *sh = &shapes[h->slot];
    int w;
    if (h->stamp != 0 && sh->stamp == h->stamp && sh->fast) { /* fast: AUTO over ranks > 1 */
        hl_status st = check_sized(in, err);
        if (st)
            return st;
        group *G = &sh->G;
        G->S = in->bytes;
        G->imb = in->imbalance;
        if (shape_pick(sh, (hl_coll_op)in->op, G, &w)) {
            cost best = algos[w]((hl_coll_op)in->op, G);
            if (best.ok) { /* always: shape_lines keeps only applicable algorithms */
                memset(out, 0, sizeof *out);
                out->hbds = (int64_t)G->N; /* n / g, exactly */
                out->ranks_per_hbd = (int64_t)G->g;
                out->algo = best.algo ? best.algo : w;
                out->time_s = best.lat + best.bw;
                out->latency_s = best.lat;
                out->scaleup_bytes = best.up;
                out->scaleout_bytes = best.out;
                return HL_OK;
            }
        }
    }
    return coll_time_at(c, c->hbd, in, out, h, 1, err);
}

double hl_coll_moe_bytes(double tokens, double topk, double copies, double hidden, double bytes_per_element)
{
    return tokens * topk * copies * hidden * bytes_per_element;
}

hl_status hl_coll_requirement(double count, double bytes, double factor, double compute_s, double latency_s,
                              double share, hl_net_need *out, hl_err *err)
{
    if (!out)
        return hl_fail(err, HL_EINVAL, "hl_coll_requirement: the output is NULL");
    if (!(count >= 1 && count <= 1e12) || !(bytes >= 0 && bytes <= 1e18) || !(factor >= 0 && factor <= 100) ||
        !(compute_s >= 0 && compute_s <= 1e9) || !(latency_s >= 0 && latency_s <= 1) || !(share > 0 && share < 1))
        return hl_fail(err, HL_EINVAL,
                       "requirement: need count >= 1, bytes >= 0, factor 0..100, compute_s >= 0, latency_s 0..1 s, "
                       "0 < share < 1 (got %g, %g, %g, %g, %g, %g)",
                       count, bytes, factor, compute_s, latency_s, share);
    double budget = share / (1 - share) * compute_s;
    double slack = budget - count * latency_s;
    out->budget_s = budget;
    out->bandwidth = slack > 0 ? count * factor * bytes / slack : INFINITY;
    out->max_latency_s = budget / count;
    return HL_OK;
}
