/* The KV transfers of concurrent disaggregation (serve_flows.c): flows from
 * prefill to decode instances sharing the links they cross, and the decode
 * ranks' KV room they wait for (back-pressure). docs/MODEL.md 12. */
#ifndef HL_SERVE_FLOWS_INT_H
#define HL_SERVE_FLOWS_INT_H
#include <stdint.h>

#include "err_int.h"
#include "serve_sched_int.h"

/* A KV transfer in flight from a prefill instance to a decode instance: a
 * flow sharing the prefill instance's egress and the decode instance's
 * ingress links (each GPU sends its shard at once: bytes per GPU). */
typedef struct flow {
    int64_t r;        /* request */
    int64_t src, dst; /* prefill unit, decode unit */
    int64_t src_inst, dst_inst;
    double left;  /* bytes per GPU still to move */
    double start; /* s */
} flow;

/* The links of a disaggregated deployment's KV transfers. */
typedef struct xlink {
    int concurrent;    /* 1: one clock over both pools, transfers as flows, back-pressure */
    double bw, lat;    /* per GPU: B/s of a transfer alone, s before its bytes move */
    double kvtok;      /* B of KV per token per prefill GPU */
    int64_t *hand_src; /* per request: the prefill unit holding its KV */
    flow *flows;       /* transfers in flight (owned: hl_flows_free) */
    int64_t n_flows, cap_flows;
    double t_flows; /* the flows' remaining bytes are as of this time */
} xlink;

/* Moves every flow's bytes on to time t. */
void hl_flows_advance(xlink *xl, double t);

/* Time of the next flow event (one leaves its latency, *ends = 0, or moves its
 * last byte, *ends = 1) and its index in *which; INFINITY (and -1) if none. */
double hl_flows_next(const xlink *xl, int64_t *which, int *ends);

/* The decode ranks units[0, U) give KV room to the requests waiting for it
 * (their hand queues), in order: each admitted one's transfer starts at t from
 * the prefill rank xl->hand_src[r] (src_dp, dst_dp: DP ranks per prefill and
 * decode instance, whose links the flow shares). */
hl_status hl_flows_admit(xlink *xl, sched *units, int64_t U, int64_t src_dp, int64_t dst_dp, double t, hl_err *err);

void hl_flows_free(xlink *xl);

#endif
