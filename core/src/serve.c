/* The serving scheduler: requests arrive, wait, are admitted into the
 * running set when their KV blocks fit, and advance one iteration at a time;
 * each iteration is timed by the per-step model (step_int.h). Policy (vLLM
 * v1 with chunked prefill; vLLM v0 without): docs/MODEL.md, "Serving". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "framework_int.h"
#include "serve_int.h"
#include "step_int.h"
#include "hbdlab/coll.h"
#include "hbdlab/cost.h"
#include "hbdlab/kvcache.h"
#include "hbdlab/memory.h"

void hl_serve_result_free(hl_serve_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->reqs);
    free(r->steps_log);
    r->samples = NULL;
    r->reqs = NULL;
    r->steps_log = NULL;
}

/* A request's scheduling state. */
typedef struct rq {
    double arrival, input, output;
    double prompt;    /* tokens to prefill: input, or input + generated after a preemption */
    double prefilled; /* of prompt, computed so far */
    double kv;        /* tokens in the KV cache */
    double gen;       /* tokens generated */
    double blocks;    /* KV blocks held */
    double first_tok, last_tok, first_sched, finish;
    int32_t preempt;
    int32_t done;
} rq;

/* One entry of an iteration's plan. */
typedef struct plan {
    int64_t r;
    double tokens; /* 1 for a decode */
    int decode;
} plan;

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
    double dq;           /* tokens a decode schedules per sequence: 1, or 1 + spec_tokens (a verify pass) */
} sched;

/* Blocks of a sequence holding `tokens` tokens: its KV, and its fixed-size
 * linear-attention state counted in whole blocks (vLLM's hybrid allocator
 * gives a Mamba-style state pages of the attention page size). */
static double blocks_for(const sched *s, double tokens)
{
    return tokens > 0 ? ceil(tokens / s->block) + s->state_blocks : 0;
}

static void wait_push_back(sched *s, int64_t r) { s->wait[(s->w_head + s->w_len++) % s->w_cap] = r; }
static void wait_push_front(sched *s, int64_t r)
{
    s->w_head = (s->w_head + s->w_cap - 1) % s->w_cap;
    s->wait[s->w_head] = r;
    s->w_len++;
}
static int64_t wait_pop(sched *s)
{
    int64_t r = s->wait[s->w_head];
    s->w_head = (s->w_head + 1) % s->w_cap;
    s->w_len--;
    return r;
}

/* Preemption by recompute (vLLM's default): the last admitted running request
 * gives back its blocks and returns to the head of the queue; it will prefill
 * its prompt and the tokens it generated again. */
static void preempt_last(sched *s)
{
    int64_t r = s->run[--s->n_run];
    rq *x = &s->q[r];
    s->blocks_free += x->blocks;
    x->blocks = 0;
    x->kv = 0;
    x->prefilled = 0;
    x->prompt = x->input + x->gen;
    x->preempt++;
    s->preempted++;
    wait_push_front(s, r);
}

static void plan_add(sched *s, int64_t r, double tokens, int decode, double need)
{
    s->q[r].blocks += need;
    s->blocks_free -= need;
    s->plan[s->n_plan++] = (plan){r, tokens, decode};
}

/* Schedules the running requests (decodes, unfinished prompts) within *budget,
 * preempting from the tail when blocks run out. */
static void schedule_running(sched *s, double *budget, double chunk)
{
    for (int64_t i = 0; i < s->n_run && *budget >= 1; i++) {
        rq *x = &s->q[s->run[i]];
        int decode = x->prefilled >= x->prompt;
        double tok = decode ? s->dq : fmin(fmin(x->prompt - x->prefilled, chunk), *budget);
        if (decode && tok > *budget)
            break; /* a verify pass needs its gamma + 1 slots */
        double end = (decode ? x->kv : x->prefilled) + tok;
        double need = end > x->blocks * s->block ? blocks_for(s, end) - x->blocks : 0;
        while (need > s->blocks_free && s->n_run - 1 > i)
            preempt_last(s);
        if (need > s->blocks_free) { /* it is the last one: preempt itself */
            preempt_last(s);
            break;
        }
        plan_add(s, s->run[i], tok, decode, need > 0 ? need : 0);
        *budget -= tok;
    }
}

/* Admits waiting requests FCFS while a sequence slot, budget and blocks remain.
 * Without chunking a prompt is taken whole (alone if larger than the budget). */
/* Tokens and new blocks the head of the queue would take with `budget` left;
 * 0 when it cannot be admitted now (budget or blocks), 1 when it can. */
static int admission(const sched *s, double budget, double chunk, double *tok_out, double *need_out)
{
    const hl_serve_cfg *c = s->cfg;
    const rq *x = &s->q[s->wait[s->w_head]];
    int arrived_prefilled = x->prefilled >= x->prompt; /* disaggregated: its KV came from a prefill pool */
    double tok = arrived_prefilled ? s->dq : x->prompt;
    if (c->chunked_prefill)
        tok = fmin(fmin(tok, chunk), budget);
    else if (tok > budget && s->n_plan > 0)
        return 0;
    double need = blocks_for(s, c->reserve          ? x->input + x->output - 1 + s->dq - 1
                                : arrived_prefilled ? x->kv + s->dq
                                                    : tok);
    need = need > x->blocks ? need - x->blocks : 0;
    *tok_out = tok;
    *need_out = need;
    return need <= s->blocks_free;
}

static void admit_waiting(sched *s, double *budget, double chunk, double t)
{
    const hl_serve_cfg *c = s->cfg;
    double tok, need;
    while (s->w_len > 0 && s->n_run < c->max_seqs && *budget >= 1 && admission(s, *budget, chunk, &tok, &need)) {
        int64_t r = s->wait[s->w_head];
        rq *x = &s->q[r];
        int arrived_prefilled = x->prefilled >= x->prompt;
        wait_pop(s);
        if (x->first_sched < 0)
            x->first_sched = t;
        s->run[s->n_run++] = r;
        plan_add(s, r, tok, arrived_prefilled, need);
        *budget -= tok;
    }
}

/* Decode run-ahead: while the running requests only decode, none finishes,
 * nothing waits and nothing arrives, every iteration has the same members and
 * a mean context one token longer than the last; such iterations are advanced
 * here without the per-request bookkeeping (the result is the same as
 * scheduling each one: tests/c/test_serve.c compares both). Needs
 * hl_stepper_window() == 0 (the mean of min(ctx + 1, window) is not linear).
 * cnt: block_tokens counters, scratch. Updates *t and the integrals in acc. */
/* Appends to a growable array of `size`-byte elements. */
static int grow(void **arr, int64_t n, int64_t *cap, size_t size)
{
    if (n < *cap)
        return 1;
    int64_t nc = *cap ? *cap * 2 : 256;
    void *g = realloc(*arr, (size_t)nc * size);
    if (!g)
        return 0;
    *arr = g;
    *cap = nc;
    return 1;
}

typedef struct recorder {
    hl_serve_result *r;
    double little, run, wait, kv, kv_max, tokens; /* integrals over time (s) and sums */
    double sat_tokens, sat_time;                  /* tokens emitted and time spent while requests waited (saturated) */
    double busy, busy_prefill; /* s of iterations, and their prefill share (each step split by its tokens) */
    double t_end;              /* s: end of the last iteration */
    int64_t steps, samp_cap, stride, max_samples;
} recorder;

/* Accounts one iteration [t, t + dt]: time integrals, and a KV sample every
 * `stride` iterations (when the series is full, every other sample is dropped
 * and the stride doubles). */
static hl_status record(recorder *rc, double t, double dt, double in_system, double running, double waiting,
                        double kv_util, double tokens, double prefill_tokens, double emitted, hl_err *err)
{
    hl_serve_result *r = rc->r;
    rc->busy += dt;
    rc->busy_prefill += tokens > 0 ? dt * prefill_tokens / tokens : 0;
    rc->t_end = t + dt;
    if (waiting > 0) {
        rc->sat_tokens += emitted;
        rc->sat_time += dt;
    }
    rc->little += in_system * dt;
    rc->run += running * dt;
    rc->wait += waiting * dt;
    rc->kv += kv_util * dt;
    rc->kv_max = fmax(rc->kv_max, kv_util);
    rc->tokens += tokens;
    if (rc->steps % rc->stride == 0 && r->n_samples == rc->max_samples) {
        for (int64_t k = 0; k < rc->max_samples / 2; k++)
            r->samples[k] = r->samples[2 * k];
        r->n_samples = rc->max_samples / 2;
        rc->stride *= 2;
    }
    if (rc->steps % rc->stride == 0) {
        if (!grow((void **)&r->samples, r->n_samples, &rc->samp_cap, sizeof *r->samples))
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for samples");
        r->samples[r->n_samples++] = (hl_serve_sample){t, kv_util, running, waiting};
    }
    rc->steps++;
    return HL_OK;
}

static hl_status run_ahead(sched *s, hl_stepper *st, hl_itl_hist *itl, double t_arr, double *t, double *cnt,
                           recorder *rec, hl_err *err)
{
    /* waiting requests stay out while no slot opens and the blocks only shrink */
    const hl_serve_cfg *c = s->cfg;
    double w = (double)s->w_len, tok, need0;
    /* the budget a waiting request would meet: after the decodes (chunked), whole (unchunked: admission first) */
    double budget = c->chunked_prefill ? (double)c->token_budget - (double)s->n_run : (double)c->token_budget;
    s->n_plan = 0;
    if (s->w_len > 0 && s->n_run < c->max_seqs && budget >= 1 &&
        admission(s, budget, c->chunk > 0 ? (double)c->chunk : (double)c->token_budget, &tok, &need0))
        return HL_OK;
    int64_t m = s->n_run, bt = (int64_t)s->block;
    double left = INFINITY, ctx0 = 0;
    memset(cnt, 0, sizeof *cnt * (size_t)bt);
    for (int64_t k = 0; k < m; k++) {
        const rq *x = &s->q[s->run[k]];
        left = fmin(left, x->output - x->gen - 1); /* the finishing iteration goes the normal way */
        ctx0 += x->kv;
        if (x->blocks == blocks_for(s, x->kv)) /* blocks as tokens come (reserved ones cover the sequence) */
            cnt[(int64_t)x->kv % bt] += 1;
    }
    ctx0 /= (double)m;
    double j = 0;
    while (j < left && *t < t_arr && !hl_interrupt_pending()) { /* Ctrl-C: the caller's loop reports it */
        int64_t res = (int64_t)j % bt;
        double need = cnt[(bt - res) % bt]; /* requests whose cache sits on a block boundary */
        if (need > s->blocks_free)
            break;
        hl_iter it = {(double)m, ctx0 + j, ctx0 + j, 0, NULL, (double)m, 0};
        double dt;
        hl_status rc = hl_stepper_time(st, &it, &dt, err);
        if (rc)
            return rc;
        s->blocks_free -= need;
        double util = (s->blocks_total - s->blocks_free) / s->blocks_total;
        if ((rc = record(rec, *t, dt, (double)m + w, (double)m, w, util, (double)m, 0, (double)m, err)))
            return rc;
        hl_itl_add(itl, dt, (double)m);
        *t += dt;
        j++;
    }
    for (int64_t k = 0; k < m && j > 0; k++) {
        rq *x = &s->q[s->run[k]];
        x->kv += j;
        x->gen += j;
        x->blocks = fmax(x->blocks, blocks_for(s, x->kv));
        x->last_tok = *t;
    }
    return HL_OK;
}

/* KV blocks of the instance: HBM left after weights and workspace, per GPU of
 * a data-parallel group, times the groups. */
hl_status hl_serve_kv_blocks(const hl_serve_cfg *c, const hl_stepper *st, double *blocks, hl_err *err)
{
    if (c->kv_blocks > 0) {
        *blocks = floor(c->kv_blocks);
        return HL_OK;
    }
    hl_job j = c->job;
    j.batch = (double)hl_stepper_dp(st);
    j.input = (double)c->token_budget; /* workspace sized for a full iteration */
    j.output = 1;
    hl_memory mem;
    hl_status rc = hl_memory_per_gpu(&j, &mem, err);
    if (rc)
        return rc;
    hl_kv_capacity_in in = {c->job.cluster.gpu.hbm_bytes,
                            c->job.mem_util,
                            mem.weights_bytes,
                            mem.workspace_bytes,
                            hl_stepper_kv_token_bytes(st),
                            1,
                            (double)c->block_tokens};
    hl_kv_capacity cap;
    if ((rc = hl_kv_capacity_compute(&in, &cap, err)))
        return rc;
    *blocks = cap.blocks_total * (double)hl_stepper_dp(st);
    return HL_OK;
}

double hl_serve_memory_bytes(const hl_serve_cfg *c)
{
    int trace = c->arrival == HL_ARRIVAL_TRACE || (c->arrival == HL_ARRIVAL_AUTO && c->trace && c->n_trace > 0);
    double n = trace ? (c->requests > 0 && c->requests < c->n_trace ? c->requests : c->n_trace)
                     : (c->requests > 0 ? c->requests : 1000);
    /* per request: the requests and a sorted copy of a trace, the scheduler's state, the queue,
     * the summary record (kept with keep_requests), one metric's sorted copy for its percentiles */
    double per = 2.0 * sizeof(hl_trace_req) + sizeof(rq) + sizeof(int64_t) + sizeof(hl_serve_req) + sizeof(double);
    if (c->disagg) /* the prompt and decode copies, maps and the decode pool's state */
        per += 2.0 * sizeof(hl_trace_req) + 4.0 * sizeof(double) + sizeof(rq) + sizeof(int64_t);
    return n * per;
}

/* Everything run() allocates, freed in one place. */
typedef struct owned {
    hl_stepper *st;
    hl_stepper *draft;  /* speculative decoding: the drafter's layers (spec_draft_layers of the target's shape) */
    hl_stepper *draft2; /* spec_draft_layers = 0: drafters of 1 and 2 layers give the LM head alone */
    hl_trace_req *reqs;
    rq *q;
    int64_t *wait, *run;
    plan *plan;
    hl_iter_chunk *chunks;
    hl_itl_hist *itl;
    double *cnt; /* block_tokens counters of the decode run-ahead */
} owned;

static void owned_free(owned *o)
{
    hl_stepper_free(o->st);
    hl_stepper_free(o->draft);
    hl_stepper_free(o->draft2);
    free(o->reqs);
    free(o->q);
    free(o->wait);
    free(o->run);
    free(o->plan);
    free(o->chunks);
    free(o->itl);
    free(o->cnt);
}

/* Speculative decoding in the scheduler (docs/MODEL.md 12): each decoding sequence's step is a
 * verify pass of gamma + 1 positions (the target's layers over its cached context, logits of every
 * position, as hl.simulate's decode_speculative), after gamma draft passes of the drafter
 * (spec_draft_layers layers of the target's shape and an LM head, one token per sequence; with no
 * layers the LM head alone, from drafters of 1 and 2 layers, linear in layers); the
 * step keeps the accepted drafts + 1, each draft accepted with probability alpha until the first
 * rejection (Leviathan et al. 2023). */
typedef struct spec_model {
    double gamma, alpha; /* draft tokens per step (0: off), acceptance of each */
    double overhead_s;   /* the drafter stepper's per-pass framework overhead, not charged to drafts */
} spec_model;

static hl_status spec_setup(const hl_job *job, int64_t cap, hl_job *target, spec_model *sp, hl_stepper **draft,
                            hl_stepper **draft2, hl_err *err)
{
    *target = *job;
    target->spec_tokens = target->spec_accept = 0;
    target->spec_draft_layers = 1;
    memset(sp, 0, sizeof *sp);
    *draft = *draft2 = NULL;
    if (!(job->spec_tokens > 0))
        return HL_OK;
    if (job->spec_tokens != floor(job->spec_tokens))
        return hl_fail(err, HL_EINVAL, "field 'spec_tokens': %g is not a whole number of draft tokens (0..64)",
                       job->spec_tokens);
    if (!(job->spec_accept > 0))
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_accept': %g with spec_tokens = %g; give the probability that a draft token is "
                       "accepted (0 < spec_accept <= 1)",
                       job->spec_accept, job->spec_tokens);
    if (job->pp > 1)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_tokens': speculative decoding in serving is modelled for pp = 1 (got pp = %lld)",
                       (long long)job->pp);
    if (job->spec_draft_layers != floor(job->spec_draft_layers))
        return hl_fail(err, HL_EINVAL, "field 'spec_draft_layers': %g is not a whole number of layers in serving",
                       job->spec_draft_layers);
    sp->gamma = job->spec_tokens;
    sp->alpha = job->spec_accept;
    hl_job d = *target;
    d.model.layers = job->spec_draft_layers >= 1 ? (int64_t)job->spec_draft_layers : 1;
    if (d.model.dense_layers >= d.model.layers)
        d.model.dense_layers = 0; /* the drafter takes the shape of the model's MoE layers */
    hl_job fw;
    sp->overhead_s = hl_job_with_framework(&d, &fw)->step_overhead;
    hl_status rc = hl_stepper_new(&d, cap, draft, err);
    if (!rc && job->spec_draft_layers < 1) { /* no layers: the LM head alone, 2 t(1 layer) - t(2 layers) */
        d.model.layers = 2;
        rc = hl_stepper_new(&d, cap, draft2, err);
    }
    if (rc)
        hl_err_prefix(err, "the drafter (spec_draft_layers)");
    return rc;
}

/* Seconds of the gamma draft passes for `seqs` sequences at mean context ctx. */
static hl_status draft_time(const spec_model *sp, hl_stepper *draft, hl_stepper *draft2, double seqs, double ctx,
                            double *t, hl_err *err)
{
    double w = hl_stepper_window(draft);
    hl_iter it = {seqs, ctx, w > 0 ? fmin(ctx + 1, w) - 1 : ctx, 0, NULL, seqs, 0};
    double one, two = 0;
    hl_status rc = hl_stepper_time(draft, &it, &one, err);
    if (!rc && draft2)
        rc = hl_stepper_time(draft2, &it, &two, err);
    *t = sp->gamma * ((draft2 ? 2 * one - two : one) - sp->overhead_s);
    return rc;
}

/* Draft tokens a verify pass accepts: each with probability alpha, until the first rejection. */
static double accepted(const spec_model *sp, hl_rng *rng)
{
    double k = 0;
    while (k < sp->gamma && hl_rng_uniform(rng) < sp->alpha)
        k++;
    return k;
}

/* Seconds one request of mean lengths takes alone: its prompt in one step,
 * then output - 1 decode steps at its mean context (docs/MODEL.md 12). */
static hl_status time_alone(const hl_serve_cfg *c, hl_stepper *st, double *t, hl_err *err)
{
    double in = hl_serve_mean_length(c, 0), out = hl_serve_mean_length(c, 1), dt;
    hl_iter_chunk ch = {fmin(in, (double)c->token_budget), 0};
    hl_iter pre = {0, 0, 0, 1, &ch, 1, 1};
    hl_status rc = hl_stepper_time(st, &pre, t, err);
    double ctx = in + out / 2, w = hl_stepper_window(st);
    hl_iter dec = {1, ctx, w > 0 ? fmin(ctx + 1, w) - 1 : ctx, 0, NULL, 1, 0};
    if (!rc && out > 1 && !(rc = hl_stepper_time(st, &dec, &dt, err)))
        *t += (out - 1) * dt;
    return rc;
}

/* A client's first request in the start order: its arrival (s) and its index. */
typedef struct start_key {
    double arrival;
    int64_t i;
} start_key;

/* Sorts k[0, n) by arrival, stably (equal arrivals keep their order), through
 * tmp (n / 2 + 1 entries): a top-down merge sort, O(n log n). */
static void sort_starts(start_key *k, start_key *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_starts(k, tmp, h);
    sort_starts(k + h, tmp, n - h);
    if (!(k[h].arrival < k[h - 1].arrival))
        return; /* already in order */
    memcpy(tmp, k, sizeof *k * (size_t)h);
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        k[o++] = k[j].arrival < tmp[i].arrival ? k[j++] : tmp[i++]; /* a tie takes the left: stable */
    while (i < h)
        k[o++] = tmp[i++];
}

/* The closed loop's first requests: client k's at a uniform time in [0,
 * start_jitter_s) (default: one request's time alone), in time order (ties in
 * client order, as the insertion sort this replaces left them: it was O(n^2)
 * moves of 120-byte entries, half of hl.serve's instructions for 1,000
 * clients). Clients that start together with identical requests would prefill
 * together forever. */
static hl_status start_clients(const hl_serve_cfg *c, hl_stepper *st, rq *q, int64_t clients, hl_rng *rng, hl_err *err)
{
    double jitter = c->start_jitter_s;
    hl_status rc = jitter < 0 ? time_alone(c, st, &jitter, err) : HL_OK;
    if (rc || !(jitter > 0)) {
        for (int64_t i = 0; !rc && i < clients; i++)
            q[i].arrival = 0;
        return rc;
    }
    size_t n = (size_t)clients;
    start_key *key = malloc(sizeof *key * (n + n / 2 + 1)); /* n keys, then the merge's n / 2 + 1 */
    rq *old = malloc(sizeof *old * n);
    if (!key || !old) {
        free(key);
        free(old);
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld clients", (long long)clients);
    }
    for (int64_t i = 0; i < clients; i++)
        key[i] = (start_key){hl_rng_uniform(rng) * jitter, i};
    sort_starts(key, key + n, clients);
    memcpy(old, q, sizeof *old * n);
    for (int64_t i = 0; i < clients; i++) {
        q[i] = old[key[i].i];
        q[i].arrival = key[i].arrival;
    }
    free(key);
    free(old);
    return HL_OK;
}

/* A client whose request ended at t sends request `r` after its think time
 * (exponential, mean think_s); the requests not yet arrived, next .. r, stay
 * in time order (none is queued yet, so they may move). */
static void release_next(sched *s, int64_t next, int64_t r, double t, double think_s, hl_rng *rng)
{
    rq *q = s->q;
    q[r].arrival = t + (think_s > 0 ? -log(hl_rng_uniform(rng)) * think_s : 0);
    for (int64_t k = r; k > next && q[k - 1].arrival > q[k].arrival; k--) {
        rq x = q[k];
        q[k] = q[k - 1];
        q[k - 1] = x;
    }
}

/* One pool of GPUs (the whole instance, or a disaggregated prefill or decode
 * pool) serving reqs[0..n): its stepper, KV cache and scheduler. A request of
 * a decode pool (first_tok != NULL) arrives with its prompt's KV and its first
 * token (at first_tok[i]). Fills o->q (one rq per request), rec, *preempts and
 * *blocks; the step log and samples go to r. */
static hl_status simulate_pool(const hl_serve_cfg *c, const hl_job *job, const hl_trace_req *reqs, int64_t n,
                               const double *first_tok, owned *o, recorder *rec, hl_serve_result *r, int64_t *preempts,
                               double *blocks_out, hl_err *err)
{
    hl_status rc;
    int64_t cap = c->token_budget > c->max_seqs ? c->token_budget : c->max_seqs;
    spec_model sp;
    hl_job target;
    if ((rc = spec_setup(job, cap, &target, &sp, &o->draft, &o->draft2, err)))
        return rc;
    if ((rc = hl_stepper_new(&target, cap, &o->st, err)))
        return rc;
    hl_serve_cfg cj = *c;
    cj.job = *job;
    double blocks = 0;
    if ((rc = hl_serve_kv_blocks(&cj, o->st, &blocks, err)))
        return rc;
    *blocks_out = blocks;
    sched s = {0};
    s.cfg = c;
    s.n = n;
    s.dq = 1 + sp.gamma;
    s.block = (double)c->block_tokens;
    s.state_blocks = ceil(hl_stepper_state_bytes(o->st) / (s.block * hl_stepper_kv_token_bytes(o->st)));
    s.blocks_total = s.blocks_free = blocks;
    double group_blocks = floor(blocks / (double)hl_stepper_dp(o->st));
    o->q = calloc((size_t)n, sizeof *o->q);
    o->wait = malloc(sizeof(int64_t) * (size_t)(n + 1));
    o->run = malloc(sizeof(int64_t) * (size_t)c->max_seqs);
    o->plan = malloc(sizeof(plan) * (size_t)c->max_seqs);
    o->chunks = malloc(sizeof(hl_iter_chunk) * (size_t)c->max_seqs);
    o->itl = calloc(1, sizeof *o->itl);
    if (!o->q || !o->wait || !o->run || !o->plan || !o->chunks || !o->itl)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
    s.q = o->q;
    s.wait = o->wait;
    s.w_cap = n + 1;
    s.run = o->run;
    s.plan = o->plan;
    s.chunks = o->chunks;
    for (int64_t i = 0; i < n; i++) {
        rq *x = &s.q[i];
        const hl_trace_req *t = &reqs[i];
        x->arrival = t->arrival_s;
        x->input = x->prompt = t->input;
        x->output = t->output;
        x->first_tok = x->first_sched = -1;
        if (t->input < job->image_tokens)
            return hl_fail(err, HL_EINVAL,
                           "request %lld: input %g tokens is shorter than its image (field 'image_tokens': %g); "
                           "image_tokens must be <= every request's input",
                           (long long)i + 1, t->input, job->image_tokens);
        if (first_tok) { /* prefilled elsewhere: the KV of the prompt is here, the first token out */
            x->prefilled = x->kv = t->input;
            x->gen = 1;
            x->first_tok = x->last_tok = first_tok[i];
        }
        double most = blocks_for(&s, t->input + t->output - 1);
        if (most > group_blocks)
            return hl_fail(err, HL_ENOFIT,
                           "request %lld: %g + %g tokens need %g KV blocks of %lld tokens, a data-parallel group holds "
                           "%g; fewer tokens, more memory or a larger mapping would help",
                           (long long)i + 1, t->input, t->output, most, (long long)c->block_tokens, group_blocks);
    }
    int closed = c->arrival == HL_ARRIVAL_CONCURRENCY;
    int64_t released = closed ? (c->concurrency < n ? c->concurrency : n) : n;
    hl_rng clients; /* think times and starts: a stream of their own, so the lengths stay those of the seed */
    hl_rng_seed(&clients, c->seed ^ 0x636c69656e7473ull);
    if (closed && (rc = start_clients(c, o->st, s.q, released, &clients, err)))
        return rc;
    double chunk = c->chunk > 0 ? (double)c->chunk : (double)c->token_budget;
    double window = hl_stepper_window(o->st);
    double t = 0;
    int64_t next = 0, done = 0, preempt_total = 0, steps_cap = 0;
    int fast = !c->keep_steps && window == 0 && c->block_tokens <= 65536 && sp.gamma == 0; /* speculation: random */
    if (fast && !(o->cnt = malloc(sizeof(double) * (size_t)c->block_tokens)))
        return hl_fail(err, HL_ENOMEM, "serve: out of memory");
    while (done < n) {
        if (hl_interrupt_pending()) /* Ctrl-C / SIGTERM: a long run must not trap the caller */
            return hl_fail(err, HL_EINTR, "serve interrupted at t = %g s with %lld of %lld requests done", t,
                           (long long)done, (long long)n);
        while (next < released && s.q[next].arrival <= t) {
            rec->little += t - s.q[next].arrival;
            wait_push_back(&s, next++);
        }
        if (s.n_run == 0 && s.w_len == 0) {
            t = s.q[next].arrival; /* idle until the next arrival (next < released: done < n) */
            continue;
        }
        s.n_plan = 0;
        s.preempted = 0;
        double budget = (double)c->token_budget;
        if (c->chunked_prefill) {
            schedule_running(&s, &budget, chunk);
            if (s.preempted == 0) /* vLLM v1: no new requests in a step that preempted */
                admit_waiting(&s, &budget, chunk, t);
        } else {
            admit_waiting(&s, &budget, chunk, t); /* vLLM v0: a prefill-only step when prompts fit */
            if (s.n_plan == 0)
                schedule_running(&s, &budget, chunk);
        }
        if (s.n_plan == 0)
            return hl_fail(err, HL_EINVAL,
                           "serve: no request could be scheduled at t = %g s (%lld running, %lld "
                           "waiting); the KV cache or the budget is too small",
                           t, (long long)s.n_run, (long long)s.w_len);
        hl_iter it = {0};
        it.chunks = s.chunks;
        double ctx = 0, win = 0, step_tok = 0, spec_seqs = 0, spec_ctx = 0;
        int64_t first_chunk = -1;
        for (int64_t k = 0; k < s.n_plan; k++) {
            const plan *p = &s.plan[k];
            const rq *x = &s.q[p->r];
            step_tok += p->tokens;
            if (p->decode && sp.gamma > 0) { /* a verify pass: gamma + 1 positions after the cached ones */
                s.chunks[it.n_chunks++] = (hl_iter_chunk){p->tokens, x->kv};
                it.logits_rows += p->tokens;
                spec_seqs++;
                spec_ctx += x->kv;
            } else if (p->decode) {
                it.decode_seqs++;
                ctx += x->kv;
                win += window > 0 ? fmin(x->kv + 1, window) - 1 : x->kv;
                it.logits_rows++;
            } else {
                if (first_chunk < 0)
                    first_chunk = p->r;
                it.images += x->prefilled == 0; /* its image leads the prompt: encoded with the first chunk */
                s.chunks[it.n_chunks++] = (hl_iter_chunk){p->tokens, x->prefilled};
                it.logits_rows += x->prefilled + p->tokens >= x->prompt;
            }
        }
        if (it.decode_seqs > 0) {
            it.decode_ctx_mean = ctx / it.decode_seqs;
            it.decode_win_mean = win / it.decode_seqs;
        }
        double dt;
        if ((rc = hl_stepper_time(o->st, &it, &dt, err)))
            return rc;
        if (spec_seqs > 0) { /* gamma draft passes of the drafter before the verify pass */
            double draft;
            if ((rc = draft_time(&sp, o->draft, o->draft2, spec_seqs, spec_ctx / spec_seqs, &draft, err)))
                return rc;
            dt += draft;
        }
        double t_end = t + dt, same = 0, emitted = 0;
        int64_t in_system = s.n_run + s.w_len;
        for (int64_t k = 0; k < s.n_plan; k++) {
            const plan *p = &s.plan[k];
            rq *x = &s.q[p->r];
            int emits = 1;
            double burst = 1; /* tokens this entry emits: a verify pass keeps the accepted drafts + 1 */
            if (p->decode && sp.gamma > 0) {
                burst = fmin(accepted(&sp, &clients) + 1, x->output - x->gen);
                x->kv += burst;
            } else if (p->decode) {
                x->kv += 1;
            } else {
                x->prefilled += p->tokens;
                x->kv = x->prefilled;
                emits = x->prefilled >= x->prompt;
            }
            if (!emits)
                continue;
            emitted += burst;
            x->gen += burst;
            if (x->first_tok < 0)
                x->first_tok = t_end;
            else if (x->last_tok == t)
                same++;
            else
                hl_itl_add(o->itl, t_end - x->last_tok, 1);
            if (burst > 1) /* the burst's other tokens come with the first: gaps of 0 */
                hl_itl_add(o->itl, 0, burst - 1);
            x->last_tok = t_end;
            if (x->gen >= x->output) {
                x->done = 1;
                x->finish = t_end;
                s.blocks_free += x->blocks;
                x->blocks = 0;
                done++;
                if (closed && released < n)
                    release_next(&s, next, released++, t_end, c->think_s, &clients);
            }
        }
        hl_itl_add(o->itl, dt, same);
        int64_t m = 0; /* drop finished requests, keep admission order */
        for (int64_t k = 0; k < s.n_run; k++)
            if (!s.q[s.run[k]].done)
                s.run[m++] = s.run[k];
        double kv_util = (s.blocks_total - s.blocks_free) / s.blocks_total;
        if ((rc = record(rec, t, dt, (double)in_system, (double)s.n_run, (double)s.w_len, kv_util, step_tok,
                         step_tok - it.decode_seqs - spec_seqs * s.dq, emitted, err)))
            return rc;
        preempt_total += s.preempted;
        if (c->keep_steps) {
            if (r->n_steps_log >= HL_SERVE_MAX_LOG_STEPS)
                return hl_fail(err, HL_EINVAL,
                               "field 'keep_steps': the step log passed %lld iterations (the most "
                               "kept); keep_steps is for short runs: fewer requests or shorter outputs",
                               (long long)HL_SERVE_MAX_LOG_STEPS);
            if (!grow((void **)&r->steps_log, r->n_steps_log, &steps_cap, sizeof *r->steps_log))
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for the step log");
            r->steps_log[r->n_steps_log++] = (hl_serve_step){t,
                                                             dt,
                                                             (int32_t)(it.decode_seqs + spec_seqs),
                                                             it.n_chunks - (int32_t)spec_seqs,
                                                             step_tok - it.decode_seqs - spec_seqs * s.dq,
                                                             (int32_t)(first_chunk + 1),
                                                             (int32_t)s.preempted,
                                                             s.blocks_total - s.blocks_free};
        }
        int all_decoded = it.n_chunks == 0 && s.n_plan == s.n_run && s.preempted == 0;
        s.n_run = m;
        t = t_end;
        if (fast && all_decoded && m > 0) {
            double t_arr = next < released ? s.q[next].arrival : INFINITY;
            if ((rc = run_ahead(&s, o->st, o->itl, t_arr, &t, o->cnt, rec, err)))
                return rc;
        }
    }
    *preempts += preempt_total;
    return HL_OK;
}

/* Sums of a pool's run: what the result reports over both pools. */
static hl_status summarise(const hl_serve_cfg *c, const rq *qp, const rq *qd, const int64_t *dmap, int64_t n,
                           const double *transfer, hl_itl_hist *itl, const recorder *rec, double transfer_sum,
                           hl_serve_result *r, hl_err *err)
{
    hl_serve_req *out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    if (!out)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const rq *x = &qp[i];
        const rq *d = qd && dmap[i] >= 0 ? &qd[dmap[i]] : NULL;
        out[i] = (hl_serve_req){x->arrival,
                                x->input,
                                x->output,
                                x->first_tok,
                                d ? d->finish : x->finish,
                                x->first_sched - x->arrival,
                                0,
                                0,
                                0,
                                x->preempt + (d ? d->preempt : 0),
                                0,
                                transfer ? transfer[i] : 0};
    }
    int64_t w = c->warmup < n ? c->warmup : 0; /* checked: warmup < requests */
    hl_status rc = hl_serve_summarise(c, out + w, n - w, itl, r, err);
    if (rc || !c->keep_requests)
        free(out);
    else
        r->reqs = out;
    if (rc)
        return rc;
    double T = r->duration_s > 0 ? r->duration_s : 1;
    r->steps = rec->steps;
    r->mean_in_system = (rec->little + transfer_sum) / T;
    r->mean_running = rec->run / T;
    r->mean_waiting = rec->wait / T;
    r->mean_step_tokens = rec->steps ? rec->tokens / (double)rec->steps : 0;
    r->kv_util_mean = rec->kv / T;
    r->kv_util_max = rec->kv_max;
    r->kv_block_tokens = (double)c->block_tokens;
    r->saturated_output_tps = rec->sat_time > 0 ? rec->sat_tokens / rec->sat_time : 0;
    return HL_OK;
}

/* Seconds to move one request's KV cache (input tokens) from a prefill GPU to
 * its decode peer: a Send/Recv of the prefill GPU's share (every GPU of the
 * instance sends its shard at once), inside one HBD or across the scale-out
 * network (docs/MODEL.md section 12). */
static hl_status kv_transfer_time(const hl_serve_cfg *c, double kv_token_bytes, double tokens, double *t, hl_err *err)
{
    hl_coll_in in = {
        HL_SENDRECV, HL_ALGO_AUTO, kv_token_bytes * tokens, 2, c->kv_link == HL_KV_LINK_SCALEUP ? 2 : 1, 0};
    hl_coll_out o;
    /* A scale-out transfer leaves the prefill pool's HBD: when the pools have
     * clusters of their own, the prefill cluster may be one HBD, so it is
     * timed on that cluster widened to two HBDs (the same links). */
    hl_cluster cl = c->job.cluster;
    if (c->kv_link != HL_KV_LINK_SCALEUP && cl.gpus < 2 * cl.hbd)
        cl.gpus = 2 * cl.hbd;
    hl_status rc = hl_coll_time(&cl, &in, &o, err);
    if (rc)
        hl_err_prefix(err, "KV transfer");
    *t = o.time_s;
    return rc;
}

/* Order of requests reaching the decode pool: prefill end + transfer. qsort
 * has no context argument; the run sets sort_ctx first (one run per thread at
 * a time: _Thread_local). */
typedef struct dec_order {
    const rq *q;
    const double *xfer;
} dec_order;
static _Thread_local const dec_order *sort_ctx;

static int by_decode_arrival(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    double x = sort_ctx->q[i].first_tok + sort_ctx->xfer[i], y = sort_ctx->q[j].first_tok + sort_ctx->xfer[j];
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

/* Tokens of a run: prompts, first tokens (one per request) and later ones. */
typedef struct run_tokens {
    double input, first, decode;
} run_tokens;

static run_tokens count_tokens(const hl_trace_req *q, int64_t n)
{
    run_tokens k = {0, (double)n, 0};
    for (int64_t i = 0; i < n; i++) {
        k.input += q[i].input;
        k.decode += q[i].output - 1;
    }
    return k;
}

/* Cost and energy of the run at its served rate (docs/MODEL.md 12): each pool's GPUs are
 * provisioned for the whole run, span_s; hl_cost_compute (cost.h, the cost model of
 * hl.simulate) charges a pool's time to prefill and decode in the shares of its busy time
 * (a step split by its tokens: prefill tokens against decodes); a disaggregated prefill pool
 * is all prefill, its decode pool all decode. Unknown prices and powers stay NaN. */
static void serve_cost(const hl_job *pj, int64_t gp, const recorder *rp, const hl_job *dj, int64_t gd,
                       const recorder *rd, double span_s, run_tokens tok, hl_serve_result *r)
{
    hl_cost cp, cd = {0};
    double fp = rp->busy > 0 ? rp->busy_prefill / rp->busy : 1;
    hl_cost_phase pre = {span_s * fp, rp->busy * fp, tok.input};
    hl_cost_phase dec = {span_s * (1 - fp), rp->busy * (1 - fp), dj ? 0 : tok.decode};
    hl_cost_compute(&pj->cluster, gp, dj ? 0 : tok.first, &pre, &dec, &cp);
    double usd = cp.prefill_usd + cp.decode_usd, usd_in = cp.prefill_usd, usd_out = cp.decode_usd;
    double j_in = cp.prefill_j, j_out = cp.decode_j, peak = cp.peak_power_w, per_hour = cp.usd_per_gpu_hour * gp;
    if (dj) { /* the decode pool: all of it decode */
        hl_cost_phase none = {0, 0, 0}, d = {span_s, rd->busy, tok.decode};
        hl_cost_compute(&dj->cluster, gd, tok.first, &none, &d, &cd);
        usd_in = usd; /* the prefill pool serves the prompts */
        usd_out = cd.decode_usd;
        usd += cd.decode_usd;
        j_in = cp.prefill_j + cp.decode_j;
        j_out = cd.decode_j;
        peak += cd.peak_power_w;
        per_hour += cd.usd_per_gpu_hour * gd;
    }
    double generated = tok.first + tok.decode;
    r->usd_per_hour = per_hour;
    r->usd_per_mtok_in = tok.input > 0 ? usd_in / tok.input * 1e6 : NAN;
    r->usd_per_mtok_out = tok.decode > 0 ? usd_out / tok.decode * 1e6 : NAN;
    r->usd_per_mtok = generated > 0 ? usd / generated * 1e6 : NAN;
    r->joules_per_token = generated > 0 ? (j_in + j_out) / generated : NAN;
    r->joules_per_token_in = tok.input > 0 ? j_in / tok.input : NAN;
    r->joules_per_token_out = tok.decode > 0 ? j_out / tok.decode : NAN;
    r->power_w = span_s > 0 ? (j_in + j_out) / span_s : NAN;
    r->peak_power_w = peak;
    r->tokens_per_mw = peak > 0 ? r->output_tps / (peak / 1e6) : NAN;
}

static hl_status run(const hl_serve_cfg *c0, hl_serve_result *r, owned *o, hl_err *err)
{
    hl_serve_cfg cc;
    hl_status rc = hl_serve_resolve(c0, &cc, err);
    if (rc)
        return rc;
    const hl_serve_cfg *c = &cc;
    if (c->mode != HL_SERVE_SIMULATE)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'mode': hl_serve_run simulates; the steady state is "
                       "hl_serve_steady_run");
    if (cc.disagg) {
        /* Pools described by the same cluster share it (unless kv_link =
         * scaleout says they are apart): they must fit in it side by side.
         * kv_link auto: one HBD holds both pools, or not. */
        const hl_cluster *a = &cc.job.cluster, *b = &cc.decode_job.cluster;
        int64_t gp = cc.job.gpus > 0 ? cc.job.gpus : a->gpus,
                gd = cc.decode_job.gpus > 0 ? cc.decode_job.gpus : b->gpus;
        int same = a->gpus == b->gpus && a->hbd == b->hbd && strcmp(a->gpu.name, b->gpu.name) == 0;
        if (same && cc.kv_link != HL_KV_LINK_SCALEOUT && gp + gd > a->gpus)
            return hl_fail(err, HL_EINVAL,
                           "field 'disagg': the prefill pool (%lld GPUs) and the decode pool (%lld GPUs) share one "
                           "cluster of %lld GPUs and need %lld (give each pool parallel.gpus, where 0 or none is the "
                           "whole cluster, or say kv_link = \"scaleout\" for pools on separate clusters)",
                           (long long)gp, (long long)gd, (long long)a->gpus, (long long)(gp + gd));
        if (cc.kv_link == HL_KV_LINK_AUTO)
            cc.kv_link = same && gp + gd <= a->hbd ? HL_KV_LINK_SCALEUP : HL_KV_LINK_SCALEOUT;
    }
    r->kv_link = cc.disagg ? cc.kv_link : 0;
    int64_t n;
    if ((rc = hl_serve_make_requests(c, &o->reqs, &n, err)))
        return rc;
    recorder rec = {0};
    rec.r = r;
    rec.stride = 1;
    rec.max_samples = c->max_samples > 1 ? c->max_samples : 2;
    int64_t preempts = 0;
    double blocks = 0;
    if (!c->disagg) {
        if ((rc = simulate_pool(c, &c->job, o->reqs, n, NULL, o, &rec, r, &preempts, &blocks, err)))
            return rc;
        r->gpus = hl_stepper_gpus(o->st);
        r->kv_blocks_total = blocks;
        r->preemptions = preempts;
        rc = summarise(c, o->q, NULL, NULL, n, NULL, o->itl, &rec, 0, r, err);
        if (!rc)
            serve_cost(&c->job, r->gpus, &rec, NULL, 0, NULL, rec.t_end, count_tokens(o->reqs, n), r);
        return rc;
    }
    /* disaggregated: the prefill pool serves every prompt (one token each), then each request's KV
     * moves to the decode pool, which receives it as an arrival that decodes from its first token */
    hl_trace_req *pre = malloc(sizeof *pre * (size_t)n), *dec = malloc(sizeof *dec * (size_t)n);
    double *first = malloc(sizeof *first * (size_t)n), *xfer = calloc((size_t)n, sizeof *xfer);
    int64_t *dmap = malloc(sizeof *dmap * (size_t)n), *xmap = malloc(sizeof *xmap * (size_t)n);
    dec_order dec_ctx;
    owned od = {0};
    recorder rec_p = {0};
    hl_serve_result scratch = {0};
    rec_p.r = &scratch; /* the prefill pool's KV samples are not reported */
    rec_p.stride = 1;
    rec_p.max_samples = 2;
    double xfer_sum = 0, blocks_p = 0;
    int64_t nd = 0;
    if (!pre || !dec || !first || !xfer || !dmap || !xmap) {
        rc = hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        pre[i] = o->reqs[i];
        pre[i].output = 1;
    }
    if ((rc = simulate_pool(c, &c->job, pre, n, NULL, o, &rec_p, &scratch, &preempts, &blocks_p, err)))
        goto out;
    r->gpus = hl_stepper_gpus(o->st);
    int64_t gpus_prefill = r->gpus;
    double kvtok = hl_stepper_kv_token_bytes(o->st);
    for (int64_t i = 0; i < n; i++) {
        dmap[i] = -1;
        if ((rc = kv_transfer_time(c, kvtok, o->reqs[i].input, &xfer[i], err)))
            goto out;
        xfer_sum += xfer[i];
        if (o->reqs[i].output > 1) /* dmap holds the request index until sorted */
            dmap[nd++] = i;
    }
    /* the decode pool takes arrivals in time order: prompts finish out of order */
    dec_ctx = (dec_order){o->q, xfer};
    sort_ctx = &dec_ctx;
    qsort(dmap, (size_t)nd, sizeof *dmap, by_decode_arrival);
    for (int64_t k = 0; k < nd; k++) {
        int64_t i = dmap[k];
        first[k] = o->q[i].first_tok;
        dec[k] = (hl_trace_req){o->q[i].first_tok + xfer[i], o->reqs[i].input, o->reqs[i].output};
    }
    for (int64_t i = 0; i < n; i++) /* xmap: request -> its index in the decode pool, -1 if none */
        xmap[i] = -1;
    for (int64_t k = 0; k < nd; k++)
        xmap[dmap[k]] = k;
    if (nd > 0) {
        if ((rc = simulate_pool(c, &c->decode_job, dec, nd, first, &od, &rec, r, &preempts, &blocks, err)))
            goto out;
        r->gpus += hl_stepper_gpus(od.st);
    }
    rec.little += rec_p.little;
    rec.run += rec_p.run;
    rec.wait += rec_p.wait;
    rec.steps += rec_p.steps;
    rec.tokens += rec_p.tokens;
    for (int64_t i = 0; i < n; i++) /* the prefill pool ran every request with one output token */
        o->q[i].output = o->reqs[i].output;
    r->kv_blocks_total = blocks;
    r->preemptions = preempts;
    double busy_d = rec.busy, end_d = rec.t_end;
    rc = summarise(c, o->q, od.q, xmap, n, xfer, od.itl ? od.itl : o->itl, &rec, xfer_sum, r, err);
    r->kv_transfer_s = n > 0 ? xfer_sum / (double)n : 0;
    if (!rc) {
        recorder dpool = {0};
        dpool.busy = busy_d;
        serve_cost(&c->job, gpus_prefill, &rec_p, &c->decode_job, r->gpus - gpus_prefill, &dpool,
                   fmax(end_d, rec_p.t_end), count_tokens(o->reqs, n), r);
    }
out:
    free(pre);
    free(dec);
    free(first);
    free(xfer);
    free(dmap);
    free(xmap);
    owned_free(&od);
    hl_serve_result_free(&scratch);
    return rc;
}

hl_status hl_serve_run(const hl_serve_cfg *cfg, hl_serve_result *out, hl_err *err)
{
    memset(out, 0, sizeof *out);
    out->kv_transfer_s = NAN; /* set when disaggregated */
    out->usd_per_hour = out->usd_per_mtok_in = out->usd_per_mtok_out = out->usd_per_mtok = NAN;
    out->joules_per_token = out->joules_per_token_in = out->joules_per_token_out = NAN;
    out->power_w = out->peak_power_w = out->tokens_per_mw = NAN;
    owned o = {0};
    hl_status rc = run(cfg, out, &o, err);
    owned_free(&o);
    if (rc)
        hl_serve_result_free(out);
    return rc;
}
