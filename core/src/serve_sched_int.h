/* One data-parallel rank's serving scheduler (serve_sched.c): its queue, KV
 * blocks, admission, preemption and the plan of one iteration; the event loop
 * over ranks, groups and pools is serve.c's. */
#ifndef HL_SERVE_SCHED_INT_H
#define HL_SERVE_SCHED_INT_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_prefix_int.h"
#include "step_int.h"
#include "hbdlab/serve.h"

/* A request's scheduling state. */
typedef struct rq {
    double arrival, input, output;
    double prompt;    /* tokens to prefill: input, or input + generated after a preemption */
    double prefilled; /* of prompt, computed so far */
    double kv;        /* tokens in the KV cache */
    double gen;       /* tokens generated */
    double blocks;    /* KV blocks held */
    double first_tok, last_tok, first_sched, finish;
    double total_out; /* the request's generated tokens (a prefill pool's record has output 1) */
    int64_t seq;      /* its rank's admission count when it was last admitted (the running set's order) */
    int32_t preempt;
    unsigned char done;
    unsigned char member;  /* in its rank's decode set (kv and gen are offsets there) */
    unsigned char counted; /* compact records: past the warmup, its metrics go to the summary */
} rq;

/* Compact records (serve.c, when no per-request output is kept): a pool's records are slots
 * of the requests in flight; a finished request's slot is free again once it leaves its
 * rank's running set (then nothing refers to it), free[0, n_free). */
typedef struct rq_slots {
    int64_t *free;
    int64_t n_free;
} rq_slots;

/* One entry of an iteration's plan. */
typedef struct plan {
    int64_t r;
    double tokens; /* 1 for a decode */
    int decode;
} plan;

/* Buckets of the decode set's calendar of finishes (a power of two): a member that finishes
 * within this many decode steps of the set's count is filed in one, the others in a heap. */
enum { HL_DSET_CAL = 1024 };

/* A decode-set member in its heap: the dc it finishes at (fixed while it is a member: its record
 * holds gen - dc) beside it, so a comparison reads no record. */
typedef struct hl_dheap {
    double key;
    int64_t r;
} hl_dheap;

/* One data-parallel rank's scheduler (serve.c's "unit"); q is shared by the ranks of a pool. */
typedef struct sched {
    const hl_serve_cfg *cfg;
    rq *q;
    int64_t n;
    int64_t *wait; /* ring buffer of request indices, capacity n + 1 */
    int64_t w_head, w_len, w_cap;
    int64_t *run; /* running request indices in admission order */
    int64_t n_run;
    plan *plan;
    int64_t n_plan;
    hl_iter_chunk *chunks;
    double blocks_total, blocks_free, block;
    double state_blocks; /* blocks a sequence's linear-attention state takes, whatever its length */
    int64_t preempted;   /* in this step */
    double out_tok;      /* prompt tokens still to prefill + tokens still to generate, queued and running (router) */
    int64_t *hand;       /* decode pool: requests routed here awaiting KV room (h_head .. h_head + h_len) */
    int64_t h_head, h_len;
    double dq;                  /* tokens a decode schedules per sequence: 1, or 1 + spec_tokens (a verify pass) */
    double spec_seqs, spec_ctx; /* this step: verify passes, and the tokens cached before them */
    /* With a draft model (spec_draft_model): this step's prompt chunks again (the draft prefills
     * them too), n_dchunks of them, d_rows of them ending their prompt; dchunks NULL: no draft. */
    hl_iter_chunk *dchunks;
    int32_t n_dchunks;
    double d_rows;
    struct hl_pcache *pc;  /* prefix cache of this rank's blocks (NULL: off; blocks_free is its free count) */
    hl_pc_req *pcr;        /* with pc: the pool's requests' blocks (n) */
    double pc_saved;       /* prompt tokens found cached at admission, over the run */
    double pc_step_saved;  /* of those, in this step */
    double pc_admitted;    /* prompt tokens admitted (hit or computed) */
    double pc_host_hit;    /* of pc_saved, tokens loaded back from the host tier */
    double pc_step_loaded; /* host blocks loaded for the requests admitted in this step */
    int pc_oom;            /* a request's hashes could not be allocated */
    int64_t finished;      /* requests of this rank that finished in this step (the running set is
                                   compacted only when one did) */
    /* this step's plan summary, accumulated as entries are planned (default scheduler) */
    hl_iter *it_acc;
    double window_acc, ctx_acc, win_acc, tok_acc;
    int64_t first_acc;
    int64_t seq; /* admissions so far */
    /* The decode set (serve_dset.c; docs/MODEL.md, "Serving"): with ev_on the running
     * requests that decode advance together, one token a step, and are touched only
     * when they join, finish or leave the set; their records hold kv - dc and gen - dc,
     * their last token is t_emit and their blocks ceil(kv / block). */
    int ev;            /* this rank may keep a decode set (chunked prefill, integer lengths, no prefix
                           cache, speculation, window, state or reservation; not the reference) */
    int ev_on;         /* the set holds every decoding running request */
    int64_t n_slots;   /* with ev_on: run[0, n_slots) holds the running requests and finished ones */
    double dc;         /* decode steps the set has taken */
    int64_t dc_res;    /* dc mod block */
    double dn, dctx;   /* members; the sum of their kv (whole tokens: exact) */
    double t_emit;     /* s: the end of the set's last step (its members' last token) */
    double ev_planned; /* members planned in this step (0 or dn) */
    double *ring;      /* [block]: members by (kv - dc) mod block: the ones on a block boundary */
    /* The members by the dc they finish at (output - (gen - dc), > dc): those within HL_DSET_CAL
     * steps of dc in a calendar of buckets by that dc mod HL_DSET_CAL (a list of nodes each, its
     * bit set while not empty: the bucket of dc holds exactly the members that finish at dc), the
     * others in a min-heap (outputs longer than the calendar) */
    uint64_t *cal_bits;         /* [HL_DSET_CAL / 64] */
    int32_t *cal_head;          /* [HL_DSET_CAL]: the first node of a bucket whose bit is set */
    int64_t *cal_r;             /* [max_seqs]: a node's member */
    int32_t *cal_next;          /* [max_seqs]: the next node of its bucket, or of the free list */
    int32_t cal_used, cal_free; /* nodes handed out so far; the first free one (-1: none) */
    struct hl_dheap *heap;      /* [max_seqs] */
    int64_t n_heap;
    int64_t *pre; /* running requests still prefilling, in admission order */
    int64_t n_pre;
    int64_t *fin; /* members that finished in this step, admission order (fin_done handled) */
    int64_t n_fin, fin_done;
    rq_slots *slots; /* compact records: where a finished request's slot goes (NULL: one per request) */
} sched;

/* Finished request r has left s's running set: with compact records its slot is free. */
static inline void hl_sched_drop(sched *s, int64_t r)
{
    if (s->slots)
        s->slots->free[s->slots->n_free++] = r;
}

/* Blocks of a sequence holding `tokens` tokens: its KV, and its fixed-size
 * linear-attention state counted in whole blocks (vLLM's hybrid allocator
 * gives a Mamba-style state pages of the attention page size). */
static inline double hl_sched_blocks_for(const sched *s, double tokens)
{
    return tokens > 0 ? ceil(tokens / s->block) + s->state_blocks : 0;
}

/* Tokens x's blocks must cover for its next `next` tokens: all it will ever
 * hold (prompt, outputs and a verify pass's drafts) when the blocks are
 * reserved up front, else `next`. */
static inline double hl_sched_kv_tokens(const sched *s, const rq *x, double next)
{
    return s->cfg->reserve ? x->input + x->output - 1 + s->dq - 1 : next;
}

/* Queues request r at the back (an arrival) or the front (a preempted or
 * KV-holding request, admitted before the others) of s's ring buffer. */
void hl_sched_wait_push_back(sched *s, int64_t r);
void hl_sched_wait_push_front(sched *s, int64_t r);

/* Request r gives back its KV blocks; with a prefix cache the blocks it named
 * stay cached (free, but findable by a later prompt). */
void hl_sched_release(sched *s, int64_t r);

/* Tokens and new blocks the head of the queue would take with `budget` left;
 * 0 when it cannot be admitted now (budget or blocks), 1 when it can. With a
 * prefix cache, hit[0..3) = the hit's GPU blocks, host blocks, and the free
 * blocks it takes (need counts them; NULL: none looked up). */
int hl_sched_admission(const sched *s, double budget, double chunk, double *tok_out, double *need_out, int64_t *hit);

/* Plans s's iteration at time t into s->plan and *it (a DP rank's counts: decodes,
 * prefill chunks, verify passes as chunks of dq tokens); 0 when it schedules nothing.
 * *step_tok: tokens scheduled; *first_chunk: the first prefilling request (-1: none). */
int64_t hl_sched_plan(sched *s, double t, double chunk, double window, hl_iter *it, double *step_tok,
                      int64_t *first_chunk);

/* The decode set (serve_dset.c). hl_dset_join: running request r, which decodes
 * from now (its record is true), joins the set of s, whose last step ended at
 * its last token; a request that cannot join turns the set off. */
void hl_dset_join(sched *s, int64_t r);
/* Writes every member's record back (kv, gen, last token, blocks), drops the
 * finished requests from run[] and turns the set off. */
void hl_dset_off(sched *s);
/* After a step of the per-request scheduler that ended at t_end: takes the
 * running decoders into a set when each emitted at t_end and holds its blocks
 * as tokens came. */
void hl_dset_try_on(sched *s, double t_end);
/* The set's part of a step that ended at t_end: every member emits one token;
 * those that reach their output are written back, leave the set and are
 * listed in s->fin in admission order. */
void hl_dset_emit(sched *s, double t_end);
/* After a step: the planned requests now decoding join, the finished leave. */
void hl_dset_after_step(sched *s);
/* The decode run-ahead over the set (every running request a member): *left,
 * the steps before its first member's last; *ctx, the sum of their kv; the
 * members on a block boundary before the run-ahead's step j are s->ring[(*slot0
 * - j) mod block]. hl_dset_advance: the members took j steps, the last one
 * ending at t. */
void hl_dset_ahead(const sched *s, double *left, double *ctx, int64_t *slot0);
void hl_dset_advance(sched *s, double j, double t);
/* Drops finished requests from run[0, n_slots) (admission order kept). */
void hl_dset_compact(sched *s);

/* Makes room for element n of a growable array of `size`-byte elements
 * (*arr realloc'd, *cap doubled from 256); 0 when out of memory. */
int hl_sched_grow(void **arr, int64_t n, int64_t *cap, size_t size);

#endif
