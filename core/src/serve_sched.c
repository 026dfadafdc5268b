/* One data-parallel rank's serving scheduler: requests wait, are admitted
 * into the running set when their KV blocks fit, are preempted by recompute
 * when blocks run out, and each iteration's plan is built within the token
 * budget. Policy (vLLM v1 with chunked prefill; vLLM v0 without):
 * docs/MODEL.md, "Serving". */
#include "serve_sched_int.h"

#include "fmax_int.h"
#include "prefix_cache_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hl_sched_wait_push_back(sched *s, int64_t r) { s->wait[(s->w_head + s->w_len++) % s->w_cap] = r; }
void hl_sched_wait_push_front(sched *s, int64_t r)
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

void hl_sched_release(sched *s, int64_t r)
{
    rq *x = &s->q[r];
    s->blocks_free += x->blocks;
    if (s->pc) {
        hl_spc_release(s->pc, &s->pcr[r]);
        s->blocks_free = (double)hl_pcache_free_blocks(s->pc);
    }
    x->blocks = 0;
}

/* Preemption by recompute (vLLM's default): the last admitted running request
 * gives back its blocks and returns to the head of the queue; it will prefill
 * its prompt and the tokens it generated again. */
static void preempt_last(sched *s)
{
    int64_t r = s->run[--s->n_run];
    rq *x = &s->q[r];
    hl_sched_release(s, r); /* its named blocks stay cached: its readmission may find them */
    x->kv = 0;
    s->out_tok += x->input + x->gen - (x->prompt - x->prefilled); /* the prompt and the generated tokens again */
    x->prefilled = 0;
    x->prompt = x->input + x->gen;
    x->preempt++;
    s->preempted++;
    hl_sched_wait_push_front(s, r);
    /* behind the requests whose KV arrived from a prefill pool and holds its blocks
     * (a decode pool's queue starts with them): they cost no room, and a recompute
     * ahead of them that does not fit would keep them, and their blocks, waiting */
    for (int64_t k = 0; k + 1 < s->w_len; k++) {
        int64_t *a = &s->wait[(s->w_head + k) % s->w_cap], *b = &s->wait[(s->w_head + k + 1) % s->w_cap];
        const rq *y = &s->q[*b];
        if (!(y->blocks > 0 && y->prefilled >= y->prompt))
            break;
        int64_t tmp = *a;
        *a = *b;
        *b = tmp;
    }
}

/* Adds plan entry p to the step's summary (tokens, decode context sums, chunks,
 * sampling rows) in s->it_acc; called as the entry is planned, before any
 * request of the step moves, so the reference's second pass sums the same
 * values in the same order. */
static inline void summarise_entry(sched *s, const plan *p)
{
    hl_iter *it = s->it_acc;
    const rq *x = &s->q[p->r];
    s->tok_acc += p->tokens;
    if (p->decode && s->dq > 1) { /* a verify pass: gamma + 1 positions after the cached ones */
        s->chunks[it->n_chunks++] = (hl_iter_chunk){p->tokens, x->kv};
        it->logits_rows += p->tokens;
        s->spec_seqs++;
        s->spec_ctx += x->kv;
    } else if (p->decode) {
        it->decode_seqs++;
        s->ctx_acc += x->kv;
        s->win_acc += s->window_acc > 0 ? hl_fmin(x->kv + 1, s->window_acc) - 1 : x->kv;
        it->logits_rows++;
    } else {
        if (s->first_acc < 0)
            s->first_acc = p->r;
        it->images += x->prefilled == 0; /* its image leads the prompt: encoded with the first chunk */
        s->chunks[it->n_chunks++] = (hl_iter_chunk){p->tokens, x->prefilled};
        it->logits_rows += x->prefilled + p->tokens >= x->prompt;
        if (s->dchunks) {
            s->dchunks[s->n_dchunks++] = (hl_iter_chunk){p->tokens, x->prefilled};
            s->d_rows += x->prefilled + p->tokens >= x->prompt;
        }
    }
}

static void plan_add(sched *s, int64_t r, double tokens, int decode, double need)
{
    s->q[r].blocks += need;
    s->blocks_free -= need;
    if (s->pc && need > 0)
        hl_spc_alloc(s->pc, &s->pcr[r], (int64_t)need);
    s->plan[s->n_plan++] = (plan){r, tokens, decode};
    if (s->it_acc)
        summarise_entry(s, &s->plan[s->n_plan - 1]);
}

/* Schedules the running requests (decodes, unfinished prompts) within *budget,
 * preempting from the tail when blocks run out. */
static void schedule_running(sched *s, double *budget, double chunk)
{
    for (int64_t i = 0; i < s->n_run && *budget >= 1; i++) {
        rq *x = &s->q[s->run[i]];
        int decode = x->prefilled >= x->prompt;
        double tok = decode ? s->dq : hl_fmin(hl_fmin(x->prompt - x->prefilled, chunk), *budget);
        if (decode && tok > *budget)
            break; /* a verify pass needs its gamma + 1 slots */
        double end = (decode ? x->kv : x->prefilled) + tok;
        double need = end > x->blocks * s->block ? hl_sched_blocks_for(s, end) - x->blocks : 0;
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

int hl_sched_admission(const sched *s, double budget, double chunk, double *tok_out, double *need_out, int64_t *hit)
{
    const hl_serve_cfg *c = s->cfg;
    int64_t r = s->wait[s->w_head];
    const rq *x = &s->q[r];
    int arrived_prefilled = x->prefilled >= x->prompt; /* disaggregated: its KV came from a prefill pool */
    double cached = 0, held = x->blocks;
    if (s->pc && hit && !arrived_prefilled) {
        hit[0] = hit[1] = hit[2] = 0;
        sched *m = (sched *)s; /* the request's hashes, made on first look */
        if (hl_spc_prepare(&s->pcr[r], x->input, x->output + s->dq - 1, c->block_tokens)) {
            m->pc_oom = 1;
            return 0;
        }
        hl_spc_match(s->pc, &s->pcr[r], x->prompt, c->block_tokens, &hit[0], &hit[1], &hit[2]);
        cached = (double)(hit[0] + hit[1]) * s->block;
        held = (double)(hit[0] + hit[1]);
    }
    double tok = arrived_prefilled ? s->dq : x->prompt - cached;
    if (c->chunked_prefill)
        tok = hl_fmin(hl_fmin(tok, chunk), budget);
    else if (tok > budget && s->n_plan > 0)
        return 0;
    double need = hl_sched_blocks_for(s, hl_sched_kv_tokens(s, x, arrived_prefilled ? x->kv + s->dq : cached + tok));
    need = need > held ? need - held : 0;
    if (s->pc && hit)
        need += (double)hit[2];
    *tok_out = tok;
    *need_out = need;
    return need <= s->blocks_free;
}

/* Admits waiting requests FCFS while a sequence slot, budget and blocks remain.
 * Without chunking a prompt is taken whole (alone if larger than the budget). */
static void admit_waiting(sched *s, double *budget, double chunk, double t)
{
    const hl_serve_cfg *c = s->cfg;
    double tok, need;
    int64_t hit[3] = {0, 0, 0};
    while (s->w_len > 0 && s->n_run < c->max_seqs && *budget >= 1 &&
           hl_sched_admission(s, *budget, chunk, &tok, &need, hit)) {
        int64_t r = s->wait[s->w_head];
        rq *x = &s->q[r];
        int arrived_prefilled = x->prefilled >= x->prompt;
        wait_pop(s);
        if (s->pc && !arrived_prefilled) { /* the cached prefix is the request's without computing it */
            double cached = (double)(hit[0] + hit[1]) * s->block;
            hl_spc_acquire(s->pc, &s->pcr[r], hit[0], hit[1]);
            x->prefilled = x->kv = cached;
            x->blocks = (double)(hit[0] + hit[1]);
            s->blocks_free -= (double)hit[2];
            need -= (double)hit[2];
            s->out_tok -= cached;
            s->pc_saved += cached;
            s->pc_step_saved += cached;
            s->pc_admitted += x->prompt;
            s->pc_host_hit += (double)hit[1] * s->block;
            s->pc_step_loaded += (double)hit[1];
        }
        if (x->first_sched < 0)
            x->first_sched = t;
        x->seq = s->seq++;
        if (s->ev_on) { /* finished requests stay in run[] until their slots are wanted */
            if (s->n_slots == c->max_seqs)
                hl_dset_compact(s);
            s->run[s->n_slots++] = r;
            s->n_run++;
            if (!arrived_prefilled)
                s->pre[s->n_pre++] = r;
        } else {
            s->run[s->n_run++] = r;
        }
        plan_add(s, r, tok, arrived_prefilled, need);
        *budget -= tok;
    }
}

/* The decode set's step (chunked prefill): its members decode and the prefilling
 * requests take their next chunks, in admission order, when all of them fit the
 * budget and the free blocks (then schedule_running would take each one without
 * preempting); 0 (nothing planned) otherwise. The members' summary is the set's
 * count and context sum: whole numbers, the sums schedule_running makes. */
static int plan_set(sched *s, double t, double *budget, double chunk)
{
    if (s->t_emit != t && s->dn > 0)
        return 0; /* its members did not emit at the end of the last step */
    int64_t bt = (int64_t)s->block;
    double set_need = s->dn > 0 ? s->ring[(bt - s->dc_res) % bt] : 0; /* members at kv = 0 mod block */
    double tok = s->dn, need = set_need;
    for (int64_t k = 0; k < s->n_pre; k++) {
        const rq *x = &s->q[s->pre[k]];
        double c = hl_fmin(x->prompt - x->prefilled, chunk), end = x->prefilled + c;
        tok += c;
        need += end > x->blocks * s->block ? hl_sched_blocks_for(s, end) - x->blocks : 0;
    }
    if (tok > *budget || need > s->blocks_free)
        return 0;
    if (s->dn > 0) {
        hl_iter *it = s->it_acc;
        s->blocks_free -= set_need;
        s->ev_planned = s->dn;
        it->decode_seqs += s->dn;
        it->logits_rows += s->dn;
        s->ctx_acc += s->dctx;
        s->win_acc += s->dctx; /* no window */
        s->tok_acc += s->dn;
    }
    for (int64_t k = 0; k < s->n_pre; k++) {
        const rq *x = &s->q[s->pre[k]];
        double c = hl_fmin(x->prompt - x->prefilled, chunk), end = x->prefilled + c;
        double nk = end > x->blocks * s->block ? hl_sched_blocks_for(s, end) - x->blocks : 0;
        plan_add(s, s->pre[k], c, 0, nk > 0 ? nk : 0);
    }
    *budget -= tok;
    return 1;
}

int64_t hl_sched_plan(sched *s, double t, double chunk, double window, hl_iter *it, double *step_tok,
                      int64_t *first_chunk)
{
    const hl_serve_cfg *c = s->cfg;
    s->n_plan = 0;
    s->ev_planned = 0;
    s->preempted = 0;
    s->spec_seqs = s->spec_ctx = 0;
    s->n_dchunks = 0;
    s->d_rows = 0;
    s->finished = 0;
    memset(it, 0, sizeof *it);
    it->chunks = s->chunks;
    *step_tok = 0;
    *first_chunk = -1;
    s->it_acc = c->sched_reference ? NULL : it; /* NULL: summarised after planning */
    s->window_acc = window;
    s->ctx_acc = s->win_acc = s->tok_acc = 0;
    s->first_acc = -1;
    if (s->n_run == 0 && s->w_len == 0)
        return 0;
    double budget = (double)c->token_budget;
    if (c->chunked_prefill) {
        if (!(s->ev_on && plan_set(s, t, &budget, chunk))) {
            hl_dset_off(s); /* the per-request scheduler takes this step */
            schedule_running(s, &budget, chunk);
        }
        if (s->preempted == 0) /* vLLM v1: no new requests in a step that preempted */
            admit_waiting(s, &budget, chunk, t);
    } else {
        admit_waiting(s, &budget, chunk, t); /* vLLM v0: a prefill-only step when prompts fit */
        if (s->n_plan == 0)
            schedule_running(s, &budget, chunk);
    }
    if (c->sched_reference) { /* the reference: a second pass over the plan */
        s->it_acc = it;
        for (int64_t k = 0; k < s->n_plan; k++)
            summarise_entry(s, &s->plan[k]);
    }
    double ctx = s->ctx_acc, win = s->win_acc;
    *step_tok = s->tok_acc;
    *first_chunk = s->first_acc;
    if (it->decode_seqs > 0) {
        it->decode_ctx_mean = ctx / it->decode_seqs;
        it->decode_win_mean = win / it->decode_seqs;
    }
    return s->n_plan + (int64_t)s->ev_planned;
}

int hl_sched_grow(void **arr, int64_t n, int64_t *cap, size_t size)
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
