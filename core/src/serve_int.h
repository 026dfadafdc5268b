/* Internals shared by the serving files: workload generation (serve_workload.c),
 * metrics (serve_metrics.c) and the scheduler (serve.c). */
#ifndef HL_SERVE_INT_H
#define HL_SERVE_INT_H
#include <stdint.h>
#include "hbdlab/serve.h"

/* splitmix64 seeding a xoshiro256** stream: reproducible across platforms. */
typedef struct hl_rng {
    uint64_t s[4];
} hl_rng;
void hl_rng_seed(hl_rng *r, uint64_t seed);
double hl_rng_uniform(hl_rng *r); /* in (0, 1) */

/* hl_serve_check, then *out = cfg with the defaults that depend on other
 * fields resolved: a concrete arrival, the request count, concrete length
 * kinds and bounds (core/src/serve_fields.c). */
hl_status hl_serve_resolve(const hl_serve_cfg *cfg, hl_serve_cfg *out, hl_err *err);

/* KV blocks of the instance (cfg->kv_blocks, or from HBM). */
struct hl_stepper;
hl_status hl_serve_kv_blocks(const hl_serve_cfg *cfg, const struct hl_stepper *st, double *blocks, hl_err *err);

/* Mean of a length distribution (the trace's mean for "trace"; `which` 0 input, 1 output). */
double hl_serve_mean_length(const hl_serve_cfg *cfg, int which);

/* The requests (cfg resolved by hl_serve_resolve) of an open-loop workload (poisson, constant, trace) or the
 * lengths of a closed loop (concurrency: arrival_s unset), in arrival order.
 * *out is malloc'd, *n entries. */
hl_status hl_serve_make_requests(const hl_serve_cfg *cfg, hl_trace_req **out, int64_t *n, hl_err *err);

/* The trace content of those n requests in the same order (*out malloc'd), or NULL without any. */
hl_status hl_serve_make_content(const hl_serve_cfg *cfg, int64_t n, hl_trace_content **out, hl_err *err);

/* Log-binned histogram of inter-token gaps (s): 0.5% wide bins from 1 us to 1e4 s. */
enum { HL_ITL_BINS = 4600 };
typedef struct hl_itl_hist {
    double count[HL_ITL_BINS];
    double n, sum, max;
    double edge[HL_ITL_BINS]; /* s: [b] the smallest gap filed in bin b or above (b >= 1), 0 until looked up */
    double last_lo, last_hi;  /* s: the gaps of the bin hl_itl_add filed last (none at first) */
    int last_bin;
    double ahead_lo, ahead_hi; /* s: the same for the decode run-ahead's gaps (serve.c), a bin of its own: */
    int ahead_bin;             /* the steps between two run-aheads, which carry prompts, fall elsewhere */
} hl_itl_hist;
void hl_itl_add(hl_itl_hist *h, double gap_s, double count);

/* The bin hl_itl_add files gap_s in, and the gaps [*lo, *hi) filed in bin b
 * (found once by bisection over the doubles, then cached in h): a caller
 * adding many gaps of one bin looks the bin up once. */
int hl_itl_bin(double gap_s);
void hl_itl_bin_range(hl_itl_hist *h, int b, double *lo, double *hi);

/* Fills the request statistics, goodput and ITL summary of r from reqs. */
hl_status hl_serve_summarise(const hl_serve_cfg *cfg, hl_serve_req *reqs, int64_t n, const hl_itl_hist *itl,
                             hl_serve_result *r, hl_err *err);

/* A multi-turn conversation (sessions = {turns =, think_s =}). */
typedef struct hl_session {
    double history; /* tokens of its turns so far: the last prompt and its reply */
    int64_t turns;  /* turns finished */
} hl_session;

#endif
