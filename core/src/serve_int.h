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
/* The next uniform in (0, 1): 53 random bits, never 0 or 1 (xoshiro256**; inline: three a request). */
static inline double hl_rng_uniform(hl_rng *r)
{
    uint64_t *s = r->s, s1 = s[1];
    uint64_t x = s1 * 5, out = ((x << 7) | (x >> 57)) * 9, t = s1 << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return ((double)(out >> 11) + 0.5) * 0x1.0p-53;
}

/* hl_serve_check, then *out = cfg with the defaults that depend on other
 * fields resolved: a concrete arrival, the request count, concrete length
 * kinds and bounds (core/src/serve_fields.c). */
hl_status hl_serve_resolve(const hl_serve_cfg *cfg, hl_serve_cfg *out, hl_err *err);

/* The error for prompt k (counted from 1) of `prompt` tokens, longer than token_budget under
 * chunked_prefill = false: of trace row k (trace_row = 1: field 'trace', raise token_budget to
 * at least the prompt), or of `what` the run made (a drawn length, a session's turn: field
 * 'token_budget'). */
hl_status hl_serve_unchunked_fail(const hl_serve_cfg *cfg, int trace_row, const char *what, int64_t k, double prompt,
                                  hl_err *err);

/* KV blocks of the instance (cfg->kv_blocks, or from HBM). */
struct hl_stepper;
hl_status hl_serve_kv_blocks(const hl_serve_cfg *cfg, const struct hl_stepper *st, double *blocks, hl_err *err);

/* The least and the most a length of resolved distribution d (fixed, uniform, normal; not a
 * trace) can be as the request stream draws it: the generator's range, not a quantile (a normal
 * with the default max of 1e8 is bounded by mean +/- 8.66 std, what Box-Muller on 53-bit uniforms
 * can give; serve_workload.c). Compact records are taken only where every such length passes. */
void hl_len_draw_range(const hl_len_dist *d, double *lo, double *hi);

/* Mean of a length distribution (the trace's mean for "trace"; `which` 0 input, 1 output). */
double hl_serve_mean_length(const hl_serve_cfg *cfg, int which);

/* The request stream of an open loop or a closed loop's lengths, one request at a time: what
 * hl_serve_make_requests stores, drawn in the same order from the same seed (the scheduler's
 * compact records draw each request when it arrives instead of keeping them all). */
typedef struct hl_serve_gen {
    hl_rng rng;
    double t;  /* s: the last arrival (Poisson, constant) */
    int64_t i; /* requests drawn */
    const hl_serve_cfg *c;
} hl_serve_gen;
void hl_serve_gen_init(hl_serve_gen *g, const hl_serve_cfg *c);
/* Draws request g->i into *q (a trace's arrival and lengths are kept where its kinds say
 * trace: *q holds the trace row on entry) and counts it. */
void hl_serve_gen_next(hl_serve_gen *g, hl_trace_req *q);

/* hl_serve_trace_parse_content that also lists, in unread[0..unread_cap) (NUL-terminated), the
 * CSV columns and JSON keys it reads past: "'user', 'sesion' (did you mean 'session'?)", "" = none. */
hl_status hl_serve_trace_parse_unread(const char *text, size_t len, const char *origin, hl_trace_req **out,
                                      const hl_trace_content **content, int64_t *n, char *unread, size_t unread_cap,
                                      hl_err *err);

/* The requests (cfg resolved by hl_serve_resolve) of an open-loop workload (poisson, constant, trace) or the
 * lengths of a closed loop (concurrency: arrival_s unset), in arrival order.
 * *out is malloc'd, *n entries. */
hl_status hl_serve_make_requests(const hl_serve_cfg *cfg, hl_trace_req **out, int64_t *n, hl_err *err);

/* The trace content of those n requests in the same order (*out malloc'd), or NULL without any. */
hl_status hl_serve_make_content(const hl_serve_cfg *cfg, int64_t n, hl_trace_content **out, hl_err *err);

/* Log-binned histogram of inter-token gaps (s): 0.5% wide bins from 1 us to 1e4 s. */
enum { HL_ITL_BINS = 4600, HL_ITL_SEEN = 256 };
typedef struct hl_itl_hist {
    double count[HL_ITL_BINS];
    double n, sum, max;
    double edge[HL_ITL_BINS]; /* s: [b] the smallest gap filed in bin b or above (b >= 1), 0 until looked up */
    double last_lo, last_hi;  /* s: the gaps of the bin hl_itl_add filed last (none at first) */
    int last_bin;
    double ahead_lo, ahead_hi; /* s: the same for the decode run-ahead's gaps (serve.c), a bin of its own: */
    int ahead_bin;             /* the steps between two run-aheads, which carry prompts, fall elsewhere */
    /* bins hl_itl_add looked up, by a gap's exponent bit and top mantissa bits (HL_ITL_SEEN slots,
     * about a bin each over two octaves): the gaps of steps that carry prompts spread over many bins */
    double seen_lo[HL_ITL_SEEN], seen_hi[HL_ITL_SEEN]; /* s: the bin's gaps [lo, hi); lo = hi = 0: none */
    int seen_bin[HL_ITL_SEEN];
} hl_itl_hist;
void hl_itl_add(hl_itl_hist *h, double gap_s, double count);

/* The bin hl_itl_add files gap_s in, and the gaps [*lo, *hi) filed in bin b
 * (found once by bisection over the doubles, then cached in h): a caller
 * adding many gaps of one bin looks the bin up once. */
int hl_itl_bin(double gap_s);
void hl_itl_bin_range(hl_itl_hist *h, int b, double *lo, double *hi);
/* hl_itl_bin(gap_s) and that bin's [*lo, *hi), without the log (edges cached in h): gap_s >= 0, not NaN */
int hl_itl_find(hl_itl_hist *h, double gap_s, double *lo, double *hi);

/* Fills the request statistics, goodput and ITL summary of r from reqs. */
hl_status hl_serve_summarise(const hl_serve_cfg *cfg, hl_serve_req *reqs, int64_t n, const hl_itl_hist *itl,
                             hl_serve_result *r, hl_err *err);

/* The summary's inputs without per-request records (compact records, serve.c): each request
 * past the warmup adds its metrics as it finishes. The statistics sort each metric, so their
 * order is free; the sums of lengths are exact in any order when the lengths are whole and
 * every sum stays below 2^53 (the caller's condition); the rest are counts, fmin and fmax. */
typedef struct hl_serve_acc {
    double *v[4];              /* s: TTFT, TPOT (outputs > 1), end-to-end, queueing time, held as their radix
                       sort keys (serve_metrics.c); room for cap each */
    int64_t k[4];              /* values in v[m] */
    int plain[4];              /* none of v[m] is NaN or -0 (the radix sort takes them) */
    uint64_t kmin[4], kmax[4]; /* the least and the largest key in v[m] */
    int64_t cap, n;            /* requests it has room for; added */
    double in_tok, out_tok, good, good_tok, t0, t1;
} hl_serve_acc;
/* Room for n requests (pages are touched as values come); HL_ENOMEM. */
hl_status hl_serve_acc_init(hl_serve_acc *a, int64_t n, hl_err *err);
/* A finished request, from its record's times (s) and lengths (tokens). */
void hl_serve_acc_add(hl_serve_acc *a, const hl_serve_cfg *cfg, double arrival, double input, double output,
                      double first_tok, double finish, double first_sched);
/* hl_serve_summarise of the added requests (bit for bit the same fields); a's values sorted. */
hl_status hl_serve_summarise_acc(const hl_serve_cfg *cfg, hl_serve_acc *a, const hl_itl_hist *itl, hl_serve_result *r,
                                 hl_err *err);
void hl_serve_acc_free(hl_serve_acc *a);

/* Runs of hl_serve_run on this thread that kept compact records (for the tests that check
 * them against one record per request). */
int64_t hl_serve_compact_runs(void);

/* Tests only (tests/c/test_serve_reference.c): every iteration a run on this thread records is
 * passed to fn, in order, from each path that takes a step (the loop's step, set_step, the decode
 * run-ahead and its reference): v[0 .. HL_SERVE_PROBE_TERMS - 1] the terms record() takes (t and
 * dt in s, requests in the system, running and waiting, the group's and the pool's KV use over the
 * pool's blocks, tokens, prompt tokens, tokens emitted, the group's weight), v[HL_SERVE_PROBE_TERMS]
 * the path that took it (HL_SERVE_PATH_*: what the tests cover). fn NULL (the default): none. The
 * values end their pass: fn copies what it keeps. */
enum { HL_SERVE_PROBE_TERMS = 11, HL_SERVE_PROBE_N = 12 };
enum {
    HL_SERVE_PATH_STEP = 0,        /* serve_loop's step */
    HL_SERVE_PATH_SET_STEP = 1,    /* set_step: the decode set's finishing step after a run-ahead */
    HL_SERVE_PATH_AHEAD = 2,       /* the decode run-ahead's loop */
    HL_SERVE_PATH_AHEAD_FIRST = 3, /* its step 0 after a prompt step (its own mean context) */
    HL_SERVE_PATH_AHEAD_REF = 4,   /* the run-ahead as the reference scheduler takes it (ahead_reference) */
    HL_SERVE_PATH_END = 5,         /* not a step: a pool's loop ended, v = its integrals (busy, its prefill share,
                                      in system, running, waiting, KV, largest KV, tokens, saturated tokens and
                                      time, the last step's end) */
    HL_SERVE_PATHS = 6
};
typedef void (*hl_serve_probe_fn)(void *ctx, const double v[HL_SERVE_PROBE_N]);
void hl_serve_set_probe(hl_serve_probe_fn fn, void *ctx);

/* Records of requests not yet arrived that changed places on this thread, to keep arrival order
 * as clients and conversations release requests (the tests bound it: it was quadratic). */
int64_t hl_serve_record_moves(void);

/* A multi-turn conversation (sessions = {turns =, think_s =}). */
typedef struct hl_session {
    double history; /* tokens of its turns so far: the last prompt and its reply */
    int64_t turns;  /* turns finished */
} hl_session;

#endif
