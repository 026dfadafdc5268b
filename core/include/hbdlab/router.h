/* The request router of a deployment: which instance (or data-parallel rank)
 * a new request goes to, from each candidate's load (docs/MODEL.md 12). */
#ifndef HBDLAB_ROUTER_H
#define HBDLAB_ROUTER_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_router_kind {
    HL_ROUTER_ROUND_ROBIN = 0,  /* in turn, whatever the load */
    HL_ROUTER_LEAST_LOADED = 1, /* the fewest queued + running tokens still to process */
    HL_ROUTER_KV_AWARE = 2      /* the longest cached prefix of the request, then the most free KV blocks, then the
                                   fewest tokens */
} hl_router_kind;

/* What the router sees of one candidate at the moment a request arrives. */
typedef struct hl_router_load {
    double tokens;      /* prompt tokens still to prefill + tokens still to generate, queued and running */
    double free_blocks; /* KV blocks not held by any request */
    double cached;      /* prompt tokens of the request the candidate's prefix cache holds (0 without one) */
} hl_router_load;

/* The state a round-robin router carries from pick to pick (zero it to start). */
typedef struct hl_router {
    int32_t kind; /* hl_router_kind */
    int32_t pad;
    int64_t next; /* round robin: the candidate of the next pick */
} hl_router;

/* Index in [0, n) of the candidate a request goes to; ties go to the lowest index.
 * n >= 1. */
int64_t hl_router_pick(hl_router *r, const hl_router_load *loads, int64_t n);

/* The name of a router kind ("round_robin", ...), or NULL. */
const char *hl_router_name(int32_t kind);

#ifdef __cplusplus
}
#endif
#endif
