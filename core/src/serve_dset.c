/* The decode set of one data-parallel rank's scheduler (the event scheduler):
 * its running requests that decode advance one token a step together, so a
 * step costs the same whatever their number. A member's record holds kv - dc
 * and gen - dc (dc: the set's decode steps); the sum of their contexts is kept
 * as they step, join and leave; their block-boundary crossings are counted by
 * residue of kv mod block (a ring) and their finishes by the dc they end at
 * (a calendar of buckets for the next HL_DSET_CAL steps, a min-heap after). Members are written back when they finish, or when the set is
 * turned off for a step the per-request scheduler takes (preemption, a budget
 * that does not hold every running request). docs/MODEL.md, "Serving". */
#include "serve_sched_int.h"

#include <math.h>
#include <string.h>

/* The dc at which member r has generated its output. */
static double finish_dc(const sched *s, int64_t r) { return s->q[r].output - s->q[r].gen; }

static void heap_push(sched *s, int64_t r, double key)
{
    int64_t i = s->n_heap++;
    while (i > 0) {
        int64_t up = (i - 1) / 2;
        if (s->heap[up].key <= key)
            break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = (hl_dheap){key, r};
}

static int64_t heap_pop(sched *s)
{
    int64_t top = s->heap[0].r, i = 0;
    hl_dheap last = s->heap[--s->n_heap];
    for (;;) {
        int64_t k = 2 * i + 1;
        if (k >= s->n_heap)
            break;
        if (k + 1 < s->n_heap && s->heap[k + 1].key < s->heap[k].key)
            k++;
        if (s->heap[k].key >= last.key)
            break;
        s->heap[i] = s->heap[k];
        i = k;
    }
    if (s->n_heap > 0)
        s->heap[i] = last;
    return top;
}

/* Files member r, which finishes at dc `key` (> s->dc, whole), in the calendar or the heap. */
static void finish_push(sched *s, int64_t r)
{
    double key = finish_dc(s, r);
    if (!(key - s->dc < HL_DSET_CAL)) {
        heap_push(s, r, key);
        return;
    }
    int64_t b = (int64_t)key & (HL_DSET_CAL - 1);
    int32_t node = s->cal_free;
    if (node >= 0)
        s->cal_free = s->cal_next[node];
    else
        node = s->cal_used++;
    uint64_t bit = 1ull << (b & 63);
    s->cal_r[node] = r;
    s->cal_next[node] = s->cal_bits[b >> 6] & bit ? s->cal_head[b] : -1;
    s->cal_head[b] = node;
    s->cal_bits[b >> 6] |= bit;
}

/* The least dc a member finishes at (+inf without members): the calendar's first bucket after
 * dc (every member finishes after dc), or the heap's least. */
static double finish_min(const sched *s)
{
    double least = s->n_heap > 0 ? s->heap[0].key : INFINITY;
    int64_t from = ((int64_t)s->dc + 1) & (HL_DSET_CAL - 1), w = from >> 6;
    uint64_t word = s->cal_bits[w] & (~0ull << (from & 63));
    for (int i = 0; i <= HL_DSET_CAL / 64; i++) { /* the word of `from`, the others, then it again (wrapped) */
        if (word) {
            int64_t b = (w << 6) | __builtin_ctzll(word), off = (b - from) & (HL_DSET_CAL - 1);
            double key = s->dc + 1 + (double)off;
            return key < least ? key : least;
        }
        w = (w + 1) & (HL_DSET_CAL / 64 - 1);
        word = s->cal_bits[w];
        if (i == HL_DSET_CAL / 64 - 1)
            word &= ~(~0ull << (from & 63)); /* back at from's word: the bits below it */
    }
    return least;
}

/* The ring slot of a member whose record holds kv offset k. */
static int64_t ring_slot(const sched *s, double k)
{
    int64_t bt = (int64_t)s->block, m = (int64_t)k % bt;
    return m < 0 ? m + bt : m;
}

/* Member r's true record: kv and gen at the set's dc, its last token, its blocks. */
static void write_back(sched *s, int64_t r)
{
    rq *x = &s->q[r];
    x->kv += s->dc;
    x->gen += s->dc;
    x->last_tok = s->t_emit;
    x->blocks = hl_sched_blocks_for(s, x->kv);
    x->member = 0;
}

void hl_dset_compact(sched *s)
{
    int64_t m = 0;
    for (int64_t k = 0; k < s->n_slots; k++)
        if (!s->q[s->run[k]].done)
            s->run[m++] = s->run[k];
        else
            hl_sched_drop(s, s->run[k]);
    s->n_slots = m;
}

void hl_dset_join(sched *s, int64_t r)
{
    if (!s->ev_on)
        return;
    rq *x = &s->q[r];
    if (s->dn == 0)
        s->t_emit = x->last_tok;
    if (x->last_tok != s->t_emit || x->blocks != hl_sched_blocks_for(s, x->kv) || !(x->gen < x->output)) {
        hl_dset_off(s); /* it does not step with the others: the per-request scheduler takes over */
        return;
    }
    x->member = 1;
    s->dn++;
    s->dctx += x->kv;
    x->kv -= s->dc;
    x->gen -= s->dc;
    s->ring[ring_slot(s, x->kv)]++;
    finish_push(s, r);
}

void hl_dset_off(sched *s)
{
    if (!s->ev_on)
        return;
    int64_t m = 0;
    for (int64_t k = 0; k < s->n_slots; k++) {
        int64_t r = s->run[k];
        const rq *x = &s->q[r];
        if (x->done) {
            hl_sched_drop(s, r);
            continue;
        }
        if (x->member)
            write_back(s, r);
        s->run[m++] = r;
    }
    s->n_slots = s->n_run = m;
    s->ev_on = 0;
    s->n_heap = s->n_pre = s->n_fin = s->fin_done = 0;
    memset(s->cal_bits, 0, sizeof *s->cal_bits * (HL_DSET_CAL / 64));
    s->cal_used = 0;
    s->cal_free = -1;
    s->dn = s->dctx = s->dc = 0;
    s->dc_res = 0;
    memset(s->ring, 0, sizeof *s->ring * (size_t)s->block);
}

void hl_dset_try_on(sched *s, double t_end)
{
    if (!s->ev || s->ev_on)
        return;
    for (int64_t k = 0; k < s->n_run; k++) {
        const rq *x = &s->q[s->run[k]];
        if (x->prefilled >= x->prompt &&
            (x->last_tok != t_end || x->blocks != hl_sched_blocks_for(s, x->kv) || !(x->gen < x->output)))
            return; /* a decoder that did not step, or holds blocks ahead of its tokens */
    }
    s->ev_on = 1;
    s->n_slots = s->n_run;
    s->t_emit = t_end;
    s->n_pre = 0;
    for (int64_t k = 0; k < s->n_run; k++) {
        int64_t r = s->run[k];
        if (s->q[r].prefilled >= s->q[r].prompt)
            hl_dset_join(s, r);
        else
            s->pre[s->n_pre++] = r;
    }
}

void hl_dset_emit(sched *s, double t_end)
{
    s->n_fin = s->fin_done = 0;
    if (!(s->ev_planned > 0))
        return;
    s->dc++;
    s->dc_res = s->dc_res + 1 == (int64_t)s->block ? 0 : s->dc_res + 1; /* (mod block, without a division) */
    s->dctx += s->dn;
    s->t_emit = t_end;
    int64_t b = (int64_t)s->dc & (HL_DSET_CAL - 1);
    uint64_t bit = 1ull << (b & 63);
    int32_t node = s->cal_bits[b >> 6] & bit ? s->cal_head[b] : -1; /* the members that finish at dc */
    s->cal_bits[b >> 6] &= ~bit;
    while (node >= 0 || (s->n_heap > 0 && s->heap[0].key <= s->dc)) {
        int64_t r;
        if (node >= 0) {
            int32_t next = s->cal_next[node];
            r = s->cal_r[node];
            s->cal_next[node] = s->cal_free;
            s->cal_free = node;
            node = next;
        } else
            r = heap_pop(s);
        write_back(s, r);
        rq *x = &s->q[r];
        s->dn--;
        s->dctx -= x->kv;
        s->ring[ring_slot(s, x->kv - s->dc)]--;
        int64_t i = s->n_fin++; /* insertion by admission order (a few a step) */
        while (i > 0 && s->q[s->fin[i - 1]].seq > x->seq) {
            s->fin[i] = s->fin[i - 1];
            i--;
        }
        s->fin[i] = r;
    }
}

void hl_dset_after_step(sched *s)
{
    if (!s->ev_on)
        return;
    s->n_run -= s->finished;
    for (int64_t j = 0; j < s->n_plan && s->ev_on; j++) {
        const rq *x = &s->q[s->plan[j].r];
        if (!x->done && x->prefilled >= x->prompt)
            hl_dset_join(s, s->plan[j].r);
    }
    if (!s->ev_on)
        return;
    int64_t m = 0;
    for (int64_t k = 0; k < s->n_pre; k++) {
        const rq *x = &s->q[s->pre[k]];
        if (!x->done && x->prefilled < x->prompt)
            s->pre[m++] = s->pre[k];
    }
    s->n_pre = m;
}

void hl_dset_ahead(const sched *s, double *left, double *ctx, int64_t *slot0)
{
    int64_t bt = (int64_t)s->block;
    *left = finish_min(s) - s->dc - 1; /* min over members of output - gen - 1 */
    *ctx = s->dctx;                    /* divided by the caller, as its own sum */
    *slot0 = (bt - s->dc_res) % bt;    /* step j crosses at ring slot (-dc - j) mod block */
}

void hl_dset_advance(sched *s, double j, double t)
{
    s->dc += j;
    s->dc_res = (s->dc_res + (int64_t)j) % (int64_t)s->block;
    s->dctx += j * s->dn;
    s->t_emit = t;
}
