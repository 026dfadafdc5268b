/* Expert load from routing statistics: the share of routed picks each expert
 * receives (uniform, Zipf-skewed, or a measured histogram), the placement of
 * experts and their replicas on the expert-parallel ranks (static, or DeepSeek's
 * EPLB), and the expected load of the busiest rank in one step (docs/MODEL.md 6). */
#ifndef HBDLAB_EXPERT_LOAD_H
#define HBDLAB_EXPERT_LOAD_H
#include <stdint.h>
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    HL_EXPERTS_MAX = 1024,     /* logical experts a routing histogram may describe */
    HL_EXPERT_SLOTS_MAX = 2048 /* physical expert slots (experts + redundant replicas) a layout holds */
};

/* Experts and replicas on the EP ranks. Rank r holds slots
 * [r * slots / ranks, (r + 1) * slots / ranks). Caller-owned (about 40 KB). */
typedef struct hl_expert_layout {
    int64_t experts; /* E logical experts */
    int64_t slots;   /* E + R physical expert slots */
    int64_t ranks;   /* EP ranks (divides slots) */
    double topk;     /* k distinct experts per token */
    int32_t uniform; /* 1: every slot and rank gets the same share (the closed forms apply) */
    int32_t pad;
    int32_t slot_expert[HL_EXPERT_SLOTS_MAX]; /* logical expert of each slot */
    double slot_share[HL_EXPERT_SLOTS_MAX];   /* probability that one routed pick lands on the slot (sum 1) */
    double rank_share[HL_EXPERT_SLOTS_MAX];   /* sum of the shares of the rank's slots ([0, ranks)) */
} hl_expert_layout;

/* Shares of a Zipf popularity: the expert of popularity rank i (1-based) gets
 * i^-skew / sum, capped at 1/topk (a token picks an expert at most once; the
 * excess goes to the others in proportion), the popularity ranks assigned to
 * expert ids by one fixed pseudo-random permutation. skew 0 = uniform.
 * share has `experts` entries. */
hl_status hl_routing_zipf(double skew, int64_t experts, double topk, double *share, hl_err *err);

/* Checks a measured histogram of n shares for a model of `experts` experts and
 * top-k routing: n == experts, every share finite and in [0, 1/topk], sum 1
 * within 1e-6. The error names `field` (e.g. "expert_freq"). */
hl_status hl_routing_check(const double *share, int64_t n, int64_t experts, double topk, const char *field,
                           hl_err *err);

/* Places E = experts logical experts and R = redundant replicas on `ranks` EP
 * ranks for the routing shares `share` (NULL = uniform). eplb = 0 and R = 0:
 * static placement, expert e on rank e / (E / ranks). Otherwise DeepSeek's
 * EPLB global policy (github.com/deepseek-ai/EPLB, eplb.py: replicate_experts
 * then balanced_packing): each replica goes to the expert with the largest
 * share / copies, then slots in decreasing share fill the least loaded rank
 * that has room. ranks must divide E + R. */
hl_status hl_expert_layout_init(hl_expert_layout *lay, const double *share, int64_t experts, int64_t redundant,
                                int64_t ranks, double topk, int32_t eplb, hl_err *err);

/* Expected routed picks on the busiest rank in a step of `tokens` tokens:
 * round(tokens * topk) picks, (L_r) ~ Multinomial(picks, rank_share), E[max_r L_r]
 * (exact for one or two ranks; Levin's representation of the multinomial CDF
 * with an Edgeworth term for more, docs/MODEL.md 6). */
double hl_expert_busiest_load(const hl_expert_layout *lay, double tokens);

/* Expected slots holding at least one pick on the rank with the most of them
 * (the expert weights the busiest rank reads), for `tokens` tokens: slot s is
 * hit with p = 1 - (1 - topk * share_s)^tokens, independently. */
double hl_expert_busiest_hits(const hl_expert_layout *lay, double tokens);

#ifdef __cplusplus
}
#endif
#endif
