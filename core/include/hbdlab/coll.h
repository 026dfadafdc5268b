/* Collective communication: time of one NCCL-style primitive over a group of
 * ranks laid out on a cluster's HBDs, with the bytes each tier carries.
 * Alpha-beta model per tier (formulas: docs/MODEL.md section 5). */
#ifndef HBDLAB_COLL_H
#define HBDLAB_COLL_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/hw.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_coll_op {
    HL_ALLREDUCE = 0,
    HL_ALLGATHER = 1,
    HL_REDUCESCATTER = 2,
    HL_ALLTOALL = 3,
    HL_BROADCAST = 4,
    HL_REDUCE = 5,
    HL_GATHER = 6,
    HL_SCATTER = 7,
    HL_SENDRECV = 8,
    HL_COLL_OP_COUNT = 9
} hl_coll_op;

typedef enum hl_coll_algo {
    HL_ALGO_AUTO = 0, /* fastest of all applicable algorithms */
    HL_ALGO_RING = 1,
    HL_ALGO_TREE = 2,             /* NCCL tree: chain inside an HBD, double binary tree across */
    HL_ALGO_DIRECT = 3,           /* one-shot full mesh: every rank talks to every peer at once */
    HL_ALGO_HALVING_DOUBLING = 4, /* recursive halving/doubling (power-of-two groups) */
    HL_ALGO_IN_SWITCH = 5,        /* in-network reduction (NVLS) inside one HBD */
    HL_ALGO_HIERARCHICAL = 6,     /* intra-HBD step, cross-HBD step on scale-out, intra-HBD step */
    HL_ALGO_NCCL = 7,             /* NCCL's choice: its tuning model over ring/tree x LL/LL128/Simple, NVLS (one
                                     HBD), or the fastest of ring, tree, hierarchical across HBDs */
    HL_ALGO_ONESHOT = 8,          /* engines' custom one-shot all-reduce: read every peer's buffer, reduce (one HBD) */
    HL_ALGO_TWOSHOT = 9,          /* engines' custom two-shot all-reduce: reduce-scatter then all-gather (one HBD) */
    HL_ALGO_TRTLLM_AR = 10,       /* TensorRT-LLM's AUTO all-reduce: fastest of one-/two-shot, NCCL (workspace cap) */
    HL_ALGO_VLLM_AR = 11,         /* vLLM's custom all-reduce: one-/two-shot by its switch sizes, NCCL above 8 MiB */
    HL_COLL_ALGO_COUNT = 12
} hl_coll_algo;

typedef struct hl_coll_in {
    int32_t op;            /* hl_coll_op */
    int32_t algo;          /* hl_coll_algo */
    double bytes;          /* S, as nccl-tests counts it: AllReduce/Broadcast/Reduce/SendRecv the
                               buffer; AllGather/Gather the output; ReduceScatter/Scatter the input;
                               AllToAll the data one rank sends (all destinations together) */
    int64_t ranks;         /* n */
    int64_t ranks_per_hbd; /* g; 0 = packed into as few HBDs as possible */
    double imbalance;      /* AllToAll: busiest receiver's bytes / mean (>= 1; 0 means 1) */
} hl_coll_in;

typedef struct hl_coll_out {
    double time_s;
    int32_t algo;          /* the algorithm used (auto resolved) */
    double algbw;          /* B/s = S / time_s */
    double busbw;          /* B/s = algbw * nccl-tests bus factor */
    double scaleup_bytes;  /* B sent per GPU over scale-up links (mean over ranks) */
    double scaleout_bytes; /* B sent per GPU over the scale-out network (mean over ranks) */
    double latency_s;      /* the part of time_s that does not depend on S */
    double latency_share;  /* latency_s / time_s */
    int64_t hbds;          /* N: HBDs the group spans */
    int64_t ranks_per_hbd; /* g as placed */
} hl_coll_out;

/* Time of one collective. HL_EUNSUPPORTED when a named algorithm does not
 * apply (e.g. in-switch reduction on a mesh, halving-doubling on 6 ranks). */
hl_status hl_coll_time(const hl_cluster *c, const hl_coll_in *in, hl_coll_out *out, hl_err *err);

/* Bytes one rank sends in an MoE token exchange (dispatch, or combine on the
 * way back): tokens x topk routed copies, each to `copies` expert shards, of a
 * hidden-wide vector at bytes_per_element (docs/MODEL.md section 6). */
double hl_coll_moe_bytes(double tokens, double topk, double copies, double hidden, double bytes_per_element);

/* The network one traffic class needs so that `count` collectives of `bytes`
 * each per step (the algorithm moves factor x bytes per link) stay under a
 * share x of a step whose compute takes compute_s, on a tier whose
 * per-collective latency is latency_s. Derived: count (alpha + factor S / B)
 * <= x / (1 - x) C gives B >= count factor S / (x / (1 - x) C - count alpha)
 * (infinite when the latency alone exceeds the budget), and the largest
 * tolerable latency at infinite bandwidth x / (1 - x) C / count. */
typedef struct hl_net_need {
    double budget_s;      /* x / (1 - x) * compute_s: communication time allowed per step */
    double bandwidth;     /* B/s per direction per GPU needed (INFINITY when latency alone exceeds the budget) */
    double max_latency_s; /* largest per-collective latency at infinite bandwidth */
} hl_net_need;

hl_status hl_coll_requirement(double count, double bytes, double factor, double compute_s, double latency_s,
                              double share, hl_net_need *out, hl_err *err);

/* nccl-tests bus-bandwidth factor of op for n ranks (AllReduce 2(n-1)/n, ...). */
double hl_coll_bus_factor(hl_coll_op op, int64_t n);

/* Names: "allreduce", ...; "auto", "ring", ... Static storage; "?" if invalid. */
const char *hl_coll_op_name(hl_coll_op op);
const char *hl_coll_algo_name(hl_coll_algo algo);
hl_status hl_coll_op_parse(const char *name, hl_coll_op *out, hl_err *err);
hl_status hl_coll_algo_parse(const char *name, hl_coll_algo *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
