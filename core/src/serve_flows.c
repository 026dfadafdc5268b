/* The KV transfers of concurrent disaggregation: each transfer is a flow that
 * shares its prefill instance's egress and its decode instance's ingress with
 * the other flows past their latency; a decode rank reserves a request's room
 * before its transfer starts (docs/MODEL.md 12). */
#include "serve_flows_int.h"

#include <math.h>
#include <stdlib.h>

/* Rate (B/s per GPU) of flow f: an equal share of its prefill instance's
 * egress and of its decode instance's ingress, the smaller. */
static double flow_rate(const xlink *xl, const flow *f)
{
    int64_t a = 0, b = 0;
    for (int64_t i = 0; i < xl->n_flows; i++) {
        const flow *g = &xl->flows[i];
        if (g->start + xl->lat > xl->t_flows)
            continue; /* still in its latency */
        a += g->src_inst == f->src_inst;
        b += g->dst_inst == f->dst_inst;
    }
    return xl->bw / (double)(a > b ? (a > 0 ? a : 1) : (b > 0 ? b : 1));
}

/* Rates depend on which flows are past their latency, not on their bytes:
 * updating in place is exact. */
void hl_flows_advance(xlink *xl, double t)
{
    double dt = t - xl->t_flows;
    for (int64_t i = 0; i < xl->n_flows && dt > 0; i++) {
        flow *f = &xl->flows[i];
        if (f->start + xl->lat <= xl->t_flows)
            f->left = fmax(0, f->left - flow_rate(xl, f) * dt);
    }
    xl->t_flows = t;
}

double hl_flows_next(const xlink *xl, int64_t *which, int *ends)
{
    double best = INFINITY;
    *which = -1;
    *ends = 0;
    for (int64_t i = 0; i < xl->n_flows; i++) {
        const flow *f = &xl->flows[i];
        int latent = f->start + xl->lat > xl->t_flows;
        double t = latent ? f->start + xl->lat : xl->t_flows + f->left / flow_rate(xl, f);
        if (t < best) {
            best = t;
            *which = i;
            *ends = !latent;
        }
    }
    return best;
}

/* The prefill rank keeps the KV until the transfer ends. */
hl_status hl_flows_admit(xlink *xl, sched *units, int64_t U, int64_t src_dp, int64_t dst_dp, double t, hl_err *err)
{
    for (int64_t u = 0; u < U; u++) {
        sched *s = &units[u];
        /* a preempted request waiting to recompute has the room first (FCFS, as vLLM's
         * waiting queue): no new transfer starts on this rank until it is admitted */
        int recompute = 0;
        for (int64_t k = 0; k < s->w_len && s->h_len > 0 && !recompute; k++) {
            const rq *y = &s->q[s->wait[(s->w_head + k) % s->w_cap]];
            recompute = y->prefilled < y->prompt;
        }
        while (s->h_len > 0 && !recompute) {
            int64_t r = s->hand[s->h_head];
            rq *x = &s->q[r];
            /* as admission() asks of an arrived-prefilled request: room for its first decode (or verify) */
            double need = hl_sched_blocks_for(s, hl_sched_kv_tokens(s, x, x->kv + s->dq));
            if (need > s->blocks_free)
                break;
            s->blocks_free -= need;
            x->blocks = need;
            s->h_head++;
            s->h_len--;
            if (!hl_sched_grow((void **)&xl->flows, xl->n_flows, &xl->cap_flows, sizeof(flow)))
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for KV transfers");
            int64_t src = xl->hand_src[r];
            xl->flows[xl->n_flows++] = (flow){r, src, u, src / src_dp, u / dst_dp, xl->kvtok * x->input, t};
        }
    }
    return HL_OK;
}

void hl_flows_free(xlink *xl)
{
    free(xl->flows);
    xl->flows = NULL;
    xl->n_flows = xl->cap_flows = 0;
}
