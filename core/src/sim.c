/* The inference simulation: per-layer operators and collectives of one GPU on
 * the critical path, prefill once, decode summed over every step (closed form
 * or step by step). Formulas: docs/MODEL.md section 6. */
#include "hbdlab/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "coll_int.h"
#include "err_int.h"
#include "hw_int.h"
#include "model_int.h"
#include "sim_int.h"
#include "step_int.h"
#include "hbdlab/coll.h"
#include "hbdlab/kvcache.h"
#include "hbdlab/precision.h"
#include "hbdlab/roofline.h"

const char *hl_bound_name(int32_t b)
{
    static const char *const names[] = {"compute", "hbm", "scale-up", "scale-out", "latency"};
    return b >= 0 && b <= 4 ? names[b] : "?";
}

typedef hl_sim_ctx sim; /* sim_int.h */

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Members of the group of rank 0 inside the first HBD (ranks 0..hbd-1), where
 * the group spans the dims flagged in `in_group`; coords of the others are 0.
 * The result divides the group size (collectives need whole members per HBD). */
static int64_t members_in_hbd(int64_t hbd, const int64_t size[3], const int64_t stride[3], const int in_group[3],
                              int64_t group)
{
    int64_t c = 0;
    for (int64_t r = 0; r < hbd; r++) {
        int ok = 1;
        for (int d = 0; d < 3 && ok; d++)
            if (!in_group[d] && (r / stride[d]) % size[d] != 0)
                ok = 0;
        c += ok;
    }
    if (c < 1)
        c = 1;
    if (c > group)
        c = group;
    return gcd64(group, c);
}

/* Rank layout of the placement: strides of tp, dp, pp and what each group keeps inside an HBD. */
static hl_status place(const hl_job *j, sim *s, hl_err *err)
{
    static const int orders[4][3] = {{0, 1, 2}, {0, 2, 1}, {2, 0, 1}, {1, 0, 2}}; /* dims 0 tp, 1 dp, 2 pp */
    if ((unsigned)j->placement > HL_PLACE_DP_TP_PP)
        return hl_fail(err, HL_EINVAL, "field 'placement': %d is not one of tp,dp,pp | tp,pp,dp | pp,tp,dp | dp,tp,pp",
                       (int)j->placement);
    int64_t size[3] = {s->tp, s->dp, s->pp}, stride[3];
    int64_t acc = 1;
    for (int k = 0; k < 3; k++) {
        int d = orders[j->placement][k];
        stride[d] = acc;
        acc *= size[d];
    }
    int64_t hbd = s->c->hbd;
    if (j->placement == HL_PLACE_TP_DP_PP) { /* the default, in closed form */
        s->rph_tp = s->tp < hbd ? s->tp : gcd64(s->tp, hbd);
        int64_t dom = s->G / s->pp;
        s->rph_domain = dom < hbd ? dom : gcd64(dom, hbd);
    } else {
        const int tp_only[3] = {1, 0, 0}, stage[3] = {1, 1, 0};
        s->rph_tp = members_in_hbd(hbd, size, stride, tp_only, s->tp);
        s->rph_domain = members_in_hbd(hbd, size, stride, stage, s->G / s->pp);
    }
    s->pp_stride = stride[2];
    return HL_OK;
}

hl_status hl_sim_resolve(const hl_job *j, sim *s, int trust, hl_err *err)
{
    const hl_model *m = &j->model;
    const hl_cluster *c = &j->cluster;
    hl_status st = trust & HL_TRUST_MODEL ? HL_OK : hl_model_validate(m, err);
    if (!st && !(trust & HL_TRUST_CLUSTER))
        st = trust & HL_TRUST_CLUSTER_FIELDS ? hl_cluster_check_consistency(c, err) : hl_cluster_validate(c, err);
    if (st)
        return st;
    if (!(trust & HL_TRUST_JOB_FIELDS) && (st = hl_job_check_fields(j, err)))
        return st;
    if (!(j->microbatches == 0 || (j->microbatches >= 1 && j->microbatches == floor(j->microbatches))))
        return hl_fail(err, HL_EINVAL,
                       "field 'microbatches': %g is not allowed (0 = as many as stages, or a whole "
                       "number >= 1)",
                       j->microbatches);
    if (j->batch != floor(j->batch) || j->input != floor(j->input) || j->output != floor(j->output))
        return hl_fail(err, HL_EINVAL, "fields 'batch', 'input', 'output' must be whole numbers (got %g, %g, %g)",
                       j->batch, j->input, j->output);
    double peak;
    if ((st = hl_gpu_peak(&c->gpu, (hl_precision)j->precision, &peak, err)))
        return st;
    if ((st = hl_gpu_peak(&c->gpu, (hl_precision)j->act_precision, &peak, err)))
        return st;
    s->j = j;
    s->m = m;
    s->c = c;
    s->wb = hl_precision_bytes((hl_precision)j->precision);
    s->ab = hl_precision_bytes((hl_precision)j->act_precision);
    s->kvb = hl_precision_bytes((hl_precision)hl_job_kv_precision(j));
    s->wireb = hl_precision_bytes((hl_precision)hl_job_wire_precision(j));
    s->G = j->gpus > 0 ? j->gpus : c->gpus;
    s->tp = j->tp;
    s->pp = j->pp;
    s->ep = j->ep > 0 ? j->ep : 1;
    if (s->G > c->gpus)
        return hl_fail(err, HL_EINVAL, "field 'gpus': %lld exceeds the cluster's %lld GPUs", (long long)s->G,
                       (long long)c->gpus);
    if (s->tp < 1 || s->pp < 1)
        return hl_fail(err, HL_EINVAL, "parallel: tp = %lld and pp = %lld must be >= 1", (long long)s->tp,
                       (long long)s->pp);
    if (m->heads % s->tp != 0)
        return hl_fail(err, HL_EINVAL, "model '%s': tp = %lld does not divide %lld heads", m->name, (long long)s->tp,
                       (long long)m->heads);
    if (s->pp > m->layers)
        return hl_fail(err, HL_EINVAL, "model '%s': pp = %lld exceeds %lld layers", m->name, (long long)s->pp,
                       (long long)m->layers);
    if (s->G % (s->tp * s->pp) != 0)
        return hl_fail(err, HL_EINVAL, "parallel: tp*pp = %lld does not divide gpus = %lld", (long long)(s->tp * s->pp),
                       (long long)s->G);
    s->dp = j->dp > 0 ? j->dp : s->G / (s->tp * s->pp);
    if (s->tp * s->pp * s->dp != s->G)
        return hl_fail(err, HL_EINVAL, "parallel: tp*pp*dp = %lld*%lld*%lld must equal gpus = %lld", (long long)s->tp,
                       (long long)s->pp, (long long)s->dp, (long long)s->G);
    s->slots = (double)(m->experts + j->redundant_experts);
    s->decode_q = 1;
    if (j->spec_tokens > 0) {
        if (j->spec_tokens != floor(j->spec_tokens))
            return hl_fail(err, HL_EINVAL, "field 'spec_tokens': %g is not a whole number of draft tokens (0..64)",
                           j->spec_tokens);
        if (!(j->spec_accept > 0))
            return hl_fail(err, HL_EINVAL,
                           "field 'spec_accept': %g with spec_tokens = %g; give the probability that a draft token "
                           "is accepted (0 < spec_accept <= 1)",
                           j->spec_accept, j->spec_tokens);
        s->decode_q = 1 + j->spec_tokens;
    }
    if (m->experts > 0) {
        if ((m->experts + j->redundant_experts) % s->ep != 0)
            return hl_fail(err, HL_EINVAL,
                           "model '%s': ep = %lld does not divide %lld experts + %lld redundant_experts "
                           "(set redundant_experts so that ep divides the sum)",
                           m->name, (long long)s->ep, (long long)m->experts, (long long)j->redundant_experts);
        if ((s->G / s->pp) % s->ep != 0)
            return hl_fail(err, HL_EINVAL, "parallel: ep = %lld does not divide the %lld GPUs of a pipeline stage",
                           (long long)s->ep, (long long)(s->G / s->pp));
        s->etp = j->etp > 0 ? j->etp : s->G / (s->pp * s->ep);
        if (s->ep * s->etp * s->pp != s->G)
            return hl_fail(err, HL_EINVAL, "parallel: ep*etp*pp = %lld*%lld*%lld must equal gpus = %lld",
                           (long long)s->ep, (long long)s->etp, (long long)s->pp, (long long)s->G);
    } else {
        if (s->ep != 1)
            return hl_fail(err, HL_EINVAL, "model '%s' is dense: ep = %lld needs experts", m->name, (long long)s->ep);
        if (j->redundant_experts != 0)
            return hl_fail(err, HL_EINVAL, "model '%s' is dense: field 'redundant_experts' = %lld needs experts",
                           m->name, (long long)j->redundant_experts);
        s->etp = 1;
    }
    if (fmod(j->batch, (double)s->dp) != 0)
        return hl_fail(err, HL_EINVAL, "field 'batch': %g sequences do not split over dp = %lld groups", j->batch,
                       (long long)s->dp);
    if ((st = place(j, s, err)))
        return st;
    s->stage_layers = (double)m->layers / (double)s->pp;
    s->dense_frac = 1 - (double)hl_model_moe_layers(m) / (double)m->layers;
    s->b_local = j->batch / (double)s->dp;
    return HL_OK;
}

hl_status hl_job_validate(const hl_job *job, hl_err *err)
{
    sim s;
    return hl_sim_resolve(job, &s, 0, err);
}

/* ---- accumulation of one phase ------------------------------------------------ */
enum { ITEM_SLOTS = 2 * HL_SIM_MAX_ITEMS }; /* at most half full: probes end at an empty slot */
_Static_assert((ITEM_SLOTS & (ITEM_SLOTS - 1)) == 0 && ITEM_SLOTS <= 256, "ITEM_SLOTS: a power of 2 that fits uint8_t");
typedef struct acc {
    hl_event *ev; /* event log (NULL = none) */
    int nev;
    int layer_kind; /* current hl_event layer_kind */
    hl_phase ph;
    hl_item *items;                  /* [HL_SIM_MAX_ITEMS] of the result (NULL in summary mode); filled up to n */
    uint64_t tags[HL_SIM_MAX_ITEMS]; /* name_tag of each item's name */
    uint8_t slot[ITEM_SLOTS];        /* open-addressing index of items by tag: i + 1, 0 = empty */
    int n;
    double overlap;
    int summary;    /* skip items and events */
    int memo_valid; /* last collective, for reuse */
    hl_coll_in memo_in;
    hl_coll_out memo_out;
} acc;

enum { MAX_EVENTS = HL_SIM_MAX_EVENTS };
/* the public arrays are sized by literals (ffi.cdef reads them); keep them tied to the constants */
_Static_assert(sizeof(((hl_result *)0)->prefill_items) == HL_SIM_MAX_ITEMS * sizeof(hl_item), "prefill_items");
_Static_assert(sizeof(((hl_result *)0)->decode_items) == HL_SIM_MAX_ITEMS * sizeof(hl_item), "decode_items");
_Static_assert(sizeof(((hl_result *)0)->prefill_events) == HL_SIM_MAX_EVENTS * sizeof(hl_event), "prefill_events");
_Static_assert(sizeof(((hl_result *)0)->decode_events) == HL_SIM_MAX_EVENTS * sizeof(hl_event), "decode_events");

/* Copies a NUL-terminated name into a 32-byte field, truncating (no snprintf: hot path). */
static void copy_name(char dst[32], const char *src)
{
    size_t n = strlen(src);
    if (n > 31)
        n = 31;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void log_event(acc *a, const char *name, int is_comm, int tier, double dur, double bytes, double flops)
{
    if (!a->ev || a->nev >= MAX_EVENTS)
        return;
    hl_event *e = &a->ev[a->nev++];
    copy_name(e->name, name);
    e->is_comm = is_comm;
    e->tier = tier;
    e->layer_kind = a->layer_kind;
    e->dur_s = dur;
    e->bytes = bytes;
    e->flops = flops;
}

/* The first 8 bytes of a name as one number: item() finds rows by it through
 * a small hash index and calls strcmp only when it agrees (item() runs for
 * every operator and collective of a phase: a linear scan cost ~0.2 us a run). */
static uint64_t name_tag(const char *name)
{
    uint64_t t = 0;
    for (int i = 0; i < 8 && name[i]; i++)
        t |= (uint64_t)(unsigned char)name[i] << (8 * i);
    return t;
}

/* item() stores each member of a new row: a member added to hl_item must be added there too */
_Static_assert(sizeof(hl_item) == 32 + 4 * 4 + 5 * 8 + 3 * 8 + 5 * 8, "hl_item changed: update item()");

/* The breakdown row of `name` (for a collective, of the shape of `o` for `in`), created on first use. */
static hl_item *item(acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o)
{
    uint64_t tag = name_tag(name);
    unsigned h = (unsigned)((tag * 0x9e3779b97f4a7c15ULL) >> 58) & (ITEM_SLOTS - 1);
    for (; a->slot[h]; h = (h + 1) & (ITEM_SLOTS - 1)) {
        int i = a->slot[h] - 1;
        hl_item *it = &a->items[i];
        if (a->tags[i] == tag && strcmp(it->name, name) == 0 &&
            (!in || (it->op == in->op && it->call_bytes == in->bytes && it->ranks == in->ranks &&
                     it->ranks_per_hbd == o->ranks_per_hbd && it->hbds == o->hbds)))
            return it;
    }
    if (a->n >= HL_SIM_MAX_ITEMS)
        return &a->items[HL_SIM_MAX_ITEMS - 1];
    a->tags[a->n] = tag;
    a->slot[h] = (uint8_t)(a->n + 1);
    hl_item *it = &a->items[a->n++];
    /* every member stored one by one: a memset or a compound literal of the
     * 152-byte row compiles to `rep stos`, which cost a third of item() */
    memset(it->name, 0, sizeof it->name);
    it->is_comm = in != NULL;
    it->tier = in ? o->hbds > 1 : 0;
    it->time_s = it->bytes = it->flops = it->calls = 0;
    it->path_factor = 1;
    it->per_pass = a->layer_kind == 3;
    it->op = in ? in->op : 0;
    it->ranks = in ? in->ranks : 0;
    it->ranks_per_hbd = in ? o->ranks_per_hbd : 0;
    it->hbds = in ? o->hbds : 0;
    it->call_bytes = in ? in->bytes : 0;
    it->call_time_s = in ? o->time_s : 0;
    it->call_latency_s = in ? o->latency_s : 0;
    it->call_scaleup_bytes = in ? o->scaleup_bytes : 0;
    it->call_scaleout_bytes = in ? o->scaleout_bytes : 0;
    copy_name(it->name, name);
    return it;
}

/* Adds `times` executions of op to the phase. */
static hl_status add_op(const sim *s, acc *a, const hl_op *op, double times, hl_err *err)
{
    if (times <= 0)
        return HL_OK;
    hl_op_time t;
    hl_status st = hl_op_time_on(op, &s->c->gpu, &t, err);
    if (st)
        return st;
    double dt = t.time_s * times;
    a->ph.time_s += dt;
    if (t.bound == HL_BOUND_COMPUTE)
        a->ph.compute_s += dt;
    else
        a->ph.memory_s += dt;
    a->ph.flops += op->flops * times;
    a->ph.hbm_bytes += (op->bytes_read + op->bytes_written) * times;
    if (a->summary)
        return HL_OK;
    log_event(a, op->name, 0, 0, t.time_s, op->bytes_read + op->bytes_written, op->flops);
    hl_item *it = item(a, op->name, NULL, NULL);
    it->calls += times;
    it->time_s += dt;
    it->flops += op->flops * times;
    it->bytes += (op->bytes_read + op->bytes_written) * times;
    return HL_OK;
}

static void gemm(hl_op *op, const sim *s, const char *name, double m, double n, double k)
{
    hl_op_gemm(op, name, m, n, k, s->ab, s->wb, s->ab, (hl_precision)s->j->precision);
}

/* The collective algorithm a job allows: every modelled one, or NCCL's set (coll_algo). */
static int32_t job_algo(const sim *s) { return s->j->coll_algo == HL_COLL_NCCL ? HL_ALGO_NCCL : HL_ALGO_AUTO; }

/* Adds `times` executions of a collective (in) already timed (o) to the phase. */
static void account_coll(acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o, double times)
{
    /* Raw times here; finish_phase() hides the overlapped part. */
    double raw = o->time_s * times, lat = o->latency_s * times;
    a->ph.time_s += raw;
    a->ph.comm_s += raw;
    a->ph.latency_comm_s += lat;
    if (o->hbds > 1)
        a->ph.scaleout_comm_s += raw - lat;
    else
        a->ph.scaleup_comm_s += raw - lat;
    if (a->summary)
        return;
    log_event(a, name, 1, o->hbds > 1, o->time_s, o->scaleup_bytes + o->scaleout_bytes, 0);
    hl_item *it = item(a, name, in, o);
    it->calls += times;
    it->time_s += raw;
    it->bytes += (o->scaleup_bytes + o->scaleout_bytes) * times;
}

/* Whether moving peers of an HBD to scale-out can beat the placed time at
 * all. Only the one-shot exchange runs both tiers at once; moving k of its
 * g - 1 scale-up peers to scale-out can beat the placed time only when
 * scale-out bandwidth exceeds k/(g-1) >= 1/2 of scale-up (derived in
 * docs/MODEL.md 6) or its latency is lower: otherwise there is no search. */
static int reroute_can_win(const hl_cluster *c, int64_t g)
{
    return c->fabric == HL_FABRIC_SWITCH && g > 1 &&
           (2 * c->scaleout_bw * c->eff_scaleout > c->scaleup_bw * c->eff_scaleup ||
            c->scaleout_latency < c->scaleup_latency);
}

/* A collective as placed, or routed as a smaller HBD would route it if that is
 * faster: on a switched fabric a runtime can send to some peers of its HBD
 * over the scale-out network instead (both tiers then carry data at once), so
 * a larger HBD keeps every choice of a smaller one. The time is the minimum
 * over the HBD shares g' dividing the group's share g (docs/MODEL.md 6). */
static hl_status best_coll_uncached(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *o, hl_err *err)
{
    hl_status st = hl_coll_time_hbd(c, hbd, in, o, err);
    int64_t g = in->ranks_per_hbd > 0 ? in->ranks_per_hbd : (in->ranks < hbd ? in->ranks : hbd);
    if (st || !reroute_can_win(c, g))
        return st;
    hl_coll_in k = *in;
    hl_coll_out t;
    for (int64_t gs = 1; gs < g; gs++) {
        if (g % gs != 0 || in->ranks % gs != 0)
            continue;
        k.ranks_per_hbd = gs;
        if (hl_coll_time_hbd(c, gs, &k, &t, err) == HL_OK && t.time_s < o->time_s)
            *o = t;
    }
    return HL_OK;
}

/* best_coll_uncached through the collective memo: its result depends only on
 * the call and the link parameters of the key (coll_int.h), so a sweep or a
 * repeated run looks the minimum up once instead of timing every candidate
 * again. Without a search it is the placed time, memoised by hl_coll_time. */
static hl_status best_coll(const hl_cluster *c, const hl_coll_in *in, hl_coll_out *o, hl_err *err)
{
    int64_t g = in->ranks_per_hbd > 0 ? in->ranks_per_hbd : (in->ranks < c->hbd ? in->ranks : c->hbd);
    if (!reroute_can_win(c, g))
        return hl_coll_time(c, in, o, err);
    return hl_coll_memo(best_coll_uncached, c, c->hbd, in, o, err);
}

/* Adds `times` executions of a collective over `ranks` ranks (packed). */
static hl_status add_coll(const sim *s, acc *a, const char *name, hl_coll_op op, double bytes, int64_t ranks,
                          int64_t ranks_per_hbd, double times, hl_err *err)
{
    if (times <= 0 || ranks <= 1 || bytes <= 0)
        return HL_OK;
    hl_coll_in in = {op, job_algo(s), bytes, ranks, ranks_per_hbd, op == HL_ALLTOALL ? s->j->imbalance : 0};
    hl_coll_out o;
    /* The same collective recurs within a pass (TP AllReduce after attention,
     * FFN, shared experts): reuse the last result for identical inputs. */
    if (a->memo_valid && memcmp(&a->memo_in, &in, sizeof in) == 0) {
        o = a->memo_out;
    } else {
        hl_status st = best_coll(s->c, &in, &o, err);
        if (st) {
            hl_err_prefix(err, name);
            return st;
        }
        a->memo_in = in;
        a->memo_out = o;
        a->memo_valid = 1;
    }
    account_coll(a, name, &in, &o, times);
    return HL_OK;
}

/* The reduction of TP partial sums: an AllReduce, or with sequence parallelism
 * a ReduceScatter (before the norm, on T/tp tokens) and an AllGather (after). */
static hl_status tp_reduce(const sim *s, acc *a, double bytes, int64_t ranks, double times, hl_err *err)
{
    int64_t rph = ranks == s->tp ? s->rph_tp : 0; /* the expert-TP group (ep = 1) is the TP group */
    if (!s->j->sequence_parallel)
        return add_coll(s, a, "tp_allreduce", HL_ALLREDUCE, bytes, ranks, rph, times, err);
    hl_status st = add_coll(s, a, "tp_reducescatter", HL_REDUCESCATTER, bytes, ranks, rph, times, err);
    if (!st)
        st = add_coll(s, a, "tp_allgather", HL_ALLGATHER, bytes, ranks, rph, times, err);
    return st;
}

/* Probability that none of the k distinct experts one token picks (top-k,
 * uniform routing) lies among m given experts of E: C(E-m, k) / C(E, k). */
static double miss_prob(double E, double m, double k)
{
    double p = 1;
    for (double i = 0; i < k; i++) {
        if (E - m - i <= 0)
            return 0;
        p *= (E - m - i) / (E - i);
    }
    return p;
}

/* Hierarchical exchange with forwarding domains of gf GPUs (gf divides the
 * stage's HBD share): one copy per destination domain crosses scale-out to the
 * rail peer, which forwards one copy per destination GPU over scale-up.
 * inter/intra get zero times when a step has a single participant. */
static hl_status hier_exchange(const sim *s, double gf, double mine, double width, int64_t domain, hl_coll_in *in_inter,
                               hl_coll_out *inter, hl_coll_in *in_intra, hl_coll_out *intra, hl_err *err)
{
    const hl_model *m = s->m;
    double E = s->slots, k = (double)m->topk, h = (double)m->hidden; /* a token picks k of the slots */
    double D = (double)domain, etp = (double)s->etp, ep = (double)s->ep;
    double dests = ep * (1 - miss_prob(E, E / ep, k)) * etp; /* distinct destination GPUs per token */
    double u = fmax(gf, etp);                                /* GPUs holding whole experts together */
    double units_hit = D / u * (1 - miss_prob(E, E * u / D, k));
    double doms_hit = units_hit * u / gf; /* distinct destination domains per token */
    memset(inter, 0, sizeof *inter);
    memset(intra, 0, sizeof *intra);
    hl_status st = HL_OK;
    int64_t nd = domain / (int64_t)gf;
    *in_inter = (hl_coll_in){HL_ALLTOALL, job_algo(s), mine * doms_hit * h * width, nd, 1, s->j->imbalance};
    *in_intra = (hl_coll_in){HL_ALLTOALL, job_algo(s), mine * dests * h * width, (int64_t)gf, 0, s->j->imbalance};
    if (nd > 1)
        st = hl_coll_time_hbd(s->c, (int64_t)gf, in_inter, inter, err);
    if (!st && gf > 1)
        st = hl_coll_time_hbd(s->c, (int64_t)gf, in_intra, intra, err);
    return st;
}

/* MoE dispatch (or combine: the same bytes back, at activation width) of
 * `mine` tokens per GPU to top-k experts, each expert split over etp GPUs.
 * Flat: every (token, expert, shard) copy is its own message of h elements
 * over the whole domain. Hierarchical (DeepEP-style): one copy per destination
 * forwarding domain crosses scale-out, then one copy per destination GPU over
 * scale-up; the runtime forwards inside the divisor of the HBD share that is
 * fastest (a larger HBD keeps every choice of a smaller one). */
static hl_status moe_exchange(const sim *s, acc *a, const char *name, double mine, double width, int64_t domain,
                              double times, hl_err *err)
{
    const hl_model *m = s->m;
    double h = (double)m->hidden, k = (double)m->topk, etp = (double)s->etp;
    int64_t g = s->rph_domain;
    if (s->j->dispatch == HL_DISPATCH_FLAT)
        return add_coll(s, a, name, HL_ALLTOALL, hl_coll_moe_bytes(mine, k, etp, h, width), domain, g, times, err);
    if (times <= 0 || domain <= 1 || mine <= 0)
        return HL_OK;
    hl_coll_in ii, iu, bii, biu;
    hl_coll_out inter, intra, bi = {0}, bu = {0};
    double best = -1;
    for (int64_t gf = 1; gf <= g; gf++) {
        if (g % gf != 0)
            continue;
        hl_status st = hier_exchange(s, (double)gf, mine, width, domain, &ii, &inter, &iu, &intra, err);
        if (st) {
            hl_err_prefix(err, name);
            return st;
        }
        if (best < 0 || inter.time_s + intra.time_s < best) {
            best = inter.time_s + intra.time_s;
            bi = inter;
            bu = intra;
            bii = ii;
            biu = iu;
        }
    }
    int dispatch = strcmp(name, "ep_dispatch") == 0;
    if (bi.time_s > 0)
        account_coll(a, dispatch ? "ep_dispatch_inter" : "ep_combine_inter", &bii, &bi, times);
    if (bu.time_s > 0)
        account_coll(a, dispatch ? "ep_dispatch_intra" : "ep_combine_intra", &biu, &bu, times);
    return HL_OK;
}

/* Expected experts with at least one token on the busiest of `ranks` EP
 * ranks holding El experts each, for N tokens routed top-k over E experts.
 * One expert is missed by a token with probability 1 - k/E (k distinct
 * picks), so it is hit with p = 1 - (1 - k/E)^N. A rank's count is taken as
 * Binomial(El, p) independently per rank (exact mean; the weak negative
 * correlation between experts is neglected) and E[max] = sum_{x=1..El}
 * (1 - F(x-1)^ranks). With one rank this is El * p. */
static double busiest_rank_experts(double E, double El, double k, double N, double ranks)
{
    double p = 1 - pow(1 - k / E, N);
    if (ranks <= 1 || p <= 0)
        return El * p;
    if (p >= 1)
        return El;
    double pmf = pow(1 - p, El), cdf = 0, sum = 0, r = p / (1 - p);
    for (double x = 1; x <= El; x++) {
        cdf += pmf; /* F(x-1) */
        if (cdf >= 1)
            break;
        sum += 1 - pow(cdf, ranks);
        pmf *= (El - (x - 1)) / x * r;
    }
    return sum;
}

/* One forward pass over the layers of one stage, except the attention kernel:
 * T tokens per attention group (q new tokens for each of b sequences). */
static hl_status layer_ops(const sim *s, acc *a, double b, double q, double passes, int decode, hl_err *err)
{
    const hl_model *m = s->m;
    const hl_job *j = s->j;
    double T = b * q, h = (double)m->hidden, tp = (double)s->tp;
    double Lst = s->stage_layers * passes; /* layer executions on this GPU */
    double Lmoe = Lst * (1 - s->dense_frac), Ldense = Lst * s->dense_frac;
    double Hl = (double)m->heads / tp;
    hl_op op;
    hl_status st = HL_OK;
#define TRY(x)                   \
    do {                         \
        if ((st = (x)) != HL_OK) \
            return st;           \
    } while (0)

    a->layer_kind = 0;
    /* two RMSNorms with residual adds: read x and residual, write x, per norm;
     * with sequence parallelism each TP rank normalises only its T/tp tokens */
    double Tn = j->sequence_parallel ? T / tp : T;
    hl_op norm = {"norms",
                  HL_OP_NORM,
                  j->act_precision,
                  2 * 4 * Tn * h,
                  2 * 2 * Tn * h * s->ab,
                  2 * Tn * h * s->ab,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0,
                  0};
    TRY(add_op(s, a, &norm, Lst, err));
    if (m->attn == HL_ATTN_MLA) {
        double nope = (double)m->qk_nope_dim, rope = (double)m->qk_rope_dim, v = (double)m->v_head_dim;
        double kvl = (double)m->kv_lora_rank, ql = (double)m->q_lora_rank;
        if (ql > 0) {
            gemm(&op, s, "q_proj", T, ql, h);
            TRY(add_op(s, a, &op, Lst, err));
            gemm(&op, s, "q_proj", T, Hl * (nope + rope), ql);
        } else {
            gemm(&op, s, "q_proj", T, Hl * (nope + rope), h);
        }
        TRY(add_op(s, a, &op, Lst, err));
        gemm(&op, s, "kv_proj", T, kvl + rope, h);
        TRY(add_op(s, a, &op, Lst, err));
        if (decode) { /* absorbed: q_nope x W_UK per head, output x W_UV per head */
            gemm(&op, s, "mla_absorb", T, Hl * kvl, nope);
            TRY(add_op(s, a, &op, Lst, err));
            gemm(&op, s, "mla_absorb", T, Hl * v, kvl);
        } else { /* expand K and V for the prompt tokens */
            gemm(&op, s, "kv_proj", T, Hl * (nope + v), kvl);
        }
        TRY(add_op(s, a, &op, Lst, err));
        gemm(&op, s, "o_proj", T, h, Hl * v);
    } else {
        double Kl = hl_kv_heads_per_gpu(m, s->tp), d = (double)m->head_dim;
        gemm(&op, s, "qkv_proj", T, (Hl + 2 * Kl) * d, h);
        TRY(add_op(s, a, &op, Lst, err));
        gemm(&op, s, "o_proj", T, h, Hl * d);
    }
    TRY(add_op(s, a, &op, Lst, err));
    double ar_bytes = T * h * s->ab;
    TRY(tp_reduce(s, a, ar_bytes, s->tp, Lst, err));
    if (Ldense > 0) {
        a->layer_kind = 1;
        double F = (double)m->ffn / tp;
        gemm(&op, s, "ffn_up_gate", T, 2 * F, h);
        TRY(add_op(s, a, &op, Ldense, err));
        gemm(&op, s, "ffn_down", T, h, F);
        TRY(add_op(s, a, &op, Ldense, err));
        TRY(tp_reduce(s, a, ar_bytes, s->tp, Ldense, err));
    }
    if (Lmoe > 0) {
        a->layer_kind = 2;
        /* E expert slots (replicas included: EPLB splits a hot expert's tokens over its
         * copies, so tokens spread over the slots); the router scores the logical experts */
        double E = s->slots, k = (double)m->topk, etp = (double)s->etp;
        /* each expert-TP shard holds ceil(F/etp) columns (the last one padded) */
        double Fe = ceil((double)hl_model_expert_ffn(m) / etp), El = E / (double)s->ep;
        hl_op_gemm(&op, "router", T, (double)m->experts, h, s->ab, s->ab, 4, (hl_precision)j->act_precision);
        TRY(add_op(s, a, &op, Lmoe, err));
        int64_t domain = s->G / s->pp; /* ranks exchanging tokens: every GPU of a stage */
        double mine = T / tp;          /* tokens this GPU routes: its share of the group's tokens */
        /* tokens reaching one expert from the whole stage, with the imbalance of the busiest */
        double tok_e = j->batch * q * k / E * j->imbalance;
        if (s->ep > 1)
            TRY(moe_exchange(s, a, "ep_dispatch", mine, s->wireb, domain, Lmoe, err));
        /* experts of the busiest EP rank that receive at least one token (a layer waits for it) */
        double active = busiest_rank_experts(E, El, k, j->batch * q, (double)s->ep);
        hl_op up, down;
        gemm(&up, s, "experts", tok_e, 2 * Fe, h);
        gemm(&down, s, "experts", tok_e, h, Fe);
        hl_op grouped = {"experts",
                         HL_OP_GROUPED_GEMM,
                         j->precision,
                         (up.flops + down.flops) * El,
                         (up.bytes_read - 2 * Fe * h * s->wb + down.bytes_read - Fe * h * s->wb) * El +
                             3 * Fe * h * s->wb * active,
                         (up.bytes_written + down.bytes_written) * El,
                         up.rows,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0};
        TRY(add_op(s, a, &grouped, Lmoe, err));
        if (s->ep > 1) {
            TRY(moe_exchange(s, a, "ep_combine", mine, s->ab, domain, Lmoe, err));
            /* each TP rank combined only its T/tp tokens: attention TP needs all T again */
            TRY(add_coll(s, a, "moe_allgather", HL_ALLGATHER, ar_bytes, s->tp, s->rph_tp, Lmoe, err));
        } else {
            /* ep = 1: every rank holds 1/etp of every expert and sees every token; the
             * expert outputs are partial sums, reduced like a dense FFN's */
            TRY(tp_reduce(s, a, ar_bytes, s->etp, Lmoe, err));
        }
        if (m->shared_experts > 0) {
            double Fs = (double)hl_model_shared_ffn(m) * (double)m->shared_experts / tp;
            gemm(&op, s, "shared_experts", T, 3 * Fs, h);
            TRY(add_op(s, a, &op, Lmoe, err));
            TRY(tp_reduce(s, a, ar_bytes, s->tp, Lmoe, err));
        }
    }
    a->layer_kind = 0;
    if (j->layer_overhead > 0) {
        log_event(a, "layer_overhead", 0, 0, j->layer_overhead, 0, 0);
        double o = j->layer_overhead * Lst;
        a->ph.time_s += o;
        a->ph.overhead_s += o;
    }
    return HL_OK;
#undef TRY
}

/* Attention kernel of one layer: b sequences, q new tokens after ctx cached ones. */
static void attn_op(const sim *s, hl_op *op, double b, double q, double ctx, double window)
{
    const hl_model *m = s->m;
    hl_attn_shape sh;
    sh.batch = b;
    sh.new_tokens = q;
    sh.context = ctx;
    sh.heads = (double)m->heads / (double)s->tp;
    sh.act_bytes = s->ab;
    sh.window = window;
    if (m->attn == HL_ATTN_MLA) {
        if (q <= s->decode_q) { /* decode (and verify) on the latent: MQA-like, qk = kv_lora + rope, v = kv_lora */
            sh.kv_heads = 1;
            sh.qk_dim = (double)(m->kv_lora_rank + m->qk_rope_dim);
            sh.v_dim = (double)m->kv_lora_rank;
            sh.kv_token_bytes = sh.qk_dim * s->kvb;
        } else { /* prefill on expanded K, V */
            sh.kv_heads = sh.heads;
            sh.qk_dim = (double)(m->qk_nope_dim + m->qk_rope_dim);
            sh.v_dim = (double)m->v_head_dim;
            sh.kv_token_bytes = sh.heads * (sh.qk_dim + sh.v_dim) * s->ab;
        }
    } else {
        sh.kv_heads = hl_kv_heads_per_gpu(m, s->tp);
        sh.qk_dim = sh.v_dim = (double)m->head_dim;
        sh.kv_token_bytes = hl_kv_token_layer_bytes_per_gpu(m, (hl_precision)hl_job_kv_precision(s->j), s->tp);
    }
    hl_op_attention(op, "attention", &sh, (hl_precision)s->j->act_precision);
}

/* Layers of one stage split by attention kind: full, and sliding-window. */
static void layer_split(const sim *s, double *full, double *sliding)
{
    double sl = s->m->sliding_window > 0 ? s->m->sliding_fraction : 0;
    *sliding = s->stage_layers * sl;
    *full = s->stage_layers - *sliding;
}

/* The per-pass operators of `tokens` tokens (per GPU) of which `rows` sample:
 * the embedding lookup and the (pp - 1) stage hand-offs carry every token;
 * the LM head (vocab-parallel), logits AllGather and token broadcast only the
 * sampling rows (none when rows = 0, e.g. a prefill chunk that does not end
 * its prompt). */
static hl_status io_ops(const sim *s, acc *a, double rows, double tokens, double passes, hl_err *err)
{
    const hl_model *m = s->m;
    double h = (double)m->hidden, tp = (double)s->tp;
    a->layer_kind = 3;
    hl_op emb = {"embedding",
                 HL_OP_ELEMENTWISE,
                 s->j->act_precision,
                 0,
                 tokens * h * s->ab,
                 tokens * h * s->ab,
                 0,
                 0,
                 0,
                 0,
                 0,
                 0,
                 0,
                 0};
    hl_status st = add_op(s, a, &emb, passes, err);
    if (rows > 0) {
        hl_op head;
        gemm(&head, s, "lm_head", rows, (double)m->vocab / tp, h);
        if (!st)
            st = add_op(s, a, &head, passes, err);
        if (!st)
            st = add_coll(s, a, "logits_allgather", HL_ALLGATHER, rows * (double)m->vocab * s->ab, s->tp, s->rph_tp,
                          passes, err);
        if (!st)
            st = add_coll(s, a, "token_broadcast", HL_BROADCAST, rows * 4, s->tp * s->pp, 0, passes, err);
    }
    if (!st && s->pp > 1) {
        int64_t rph = s->pp_stride >= s->c->hbd ? 1 : 2; /* stage neighbours are pp_stride ranks apart */
        st = add_coll(s, a, "pp_sendrecv", HL_SENDRECV, tokens * h * s->ab, 2, rph, passes * (double)(s->pp - 1), err);
    }
    return st;
}

/* Sum over integer k in [k0, k1] of max(a1 + b1 k, a2 + b2 k) (two lines). */
static double sum_max_lines(double a1, double b1, double a2, double b2, double k0, double k1)
{
    if (k1 < k0)
        return 0;
    double lo = k0, hi = k1, total = 0;
    if (b1 != b2) {
        double x = (a2 - a1) / (b1 - b2); /* lines cross at x */
        if (x > lo && x < hi) {
            double split = floor(x);
            total += sum_max_lines(a1, b1, a2, b2, lo, split);
            lo = split + 1;
        }
    }
    double n = hi - lo + 1, mid = (lo + hi) / 2;
    double s1 = n * (a1 + b1 * mid), s2 = n * (a2 + b2 * mid);
    return total + fmax(s1, s2);
}

/* Adds an attention sum over `steps` steps to the phase: `sum` s of kernel time
 * per layer plus one kernel latency per step, times `layers`. */
static void add_attention_sum(const sim *s, acc *a, double layers, double sum, double steps, int mem_bound,
                              double flops, double bytes)
{
    double total = (sum + s->c->gpu.kernel_latency * steps) * layers;
    a->ph.time_s += total;
    if (mem_bound)
        a->ph.memory_s += total;
    else
        a->ph.compute_s += total;
    a->ph.flops += flops * layers;
    a->ph.hbm_bytes += bytes * layers;
    if (a->summary)
        return;
    hl_item *it = item(a, "attention", NULL, NULL);
    it->calls += steps * layers;
    it->time_s += total;
    it->flops += flops * layers;
    it->bytes += bytes * layers;
}

/* Attention of n decode steps of q new tokens per sequence, step i = 0..n-1
 * starting after in + tau*i cached keys; with a window w (0 = none) a query
 * sees at most w keys, so the cached context stops growing at w - 1. Compute
 * and memory times are each linear in i until then, constant after: the sum of
 * their max is taken in closed form, split where the two lines cross (derived;
 * plain decode is q = tau = 1). */
static hl_status attention_sum(const sim *s, acc *a, double layers, double w, double q, double tau, double n,
                               hl_err *err)
{
    if (layers <= 0 || n <= 0)
        return HL_OK;
    double b = s->b_local, in = s->j->input, i_grow = n - 1; /* last index still growing */
    if (w > 0)
        i_grow = fmin(i_grow, floor((w - 1 - in) / tau));
    hl_op op;
    hl_op_time t;
    hl_status st;
    double sum = 0, flops = 0, bytes = 0, n_grow = 0;
    int mem_bound = 0;
    if (i_grow >= 0) {
        double c[2], m[2], f[2], by[2]; /* at i = 0 and i = 1 */
        for (int x = 0; x < 2; x++) {
            attn_op(s, &op, b, q, in + tau * x, 0);
            if ((st = hl_op_time_on(&op, &s->c->gpu, &t, err)))
                return st;
            c[x] = t.compute_s;
            m[x] = t.memory_s;
            f[x] = op.flops;
            by[x] = op.bytes_read + op.bytes_written;
        }
        n_grow = i_grow + 1;
        sum += sum_max_lines(c[0], c[1] - c[0], m[0], m[1] - m[0], 0, i_grow);
        flops += n_grow * f[0] + (f[1] - f[0]) * i_grow * n_grow / 2;
        bytes += n_grow * by[0] + (by[1] - by[0]) * i_grow * n_grow / 2;
        mem_bound = m[0] + (m[1] - m[0]) * i_grow >= c[0] + (c[1] - c[0]) * i_grow;
    }
    double n_flat = n - n_grow;
    if (n_flat > 0) { /* context fixed at the window */
        attn_op(s, &op, b, q, w - 1, 0);
        if ((st = hl_op_time_on(&op, &s->c->gpu, &t, err)))
            return st;
        sum += n_flat * fmax(t.compute_s, t.memory_s);
        flops += n_flat * op.flops;
        bytes += n_flat * (op.bytes_read + op.bytes_written);
        if (n_grow == 0)
            mem_bound = t.memory_s >= t.compute_s;
    }
    add_attention_sum(s, a, layers, sum, n, mem_bound, flops, bytes);
    return HL_OK;
}

/* Decode attention over all steps for `layers` layers with window w (0 = none):
 * step j sees keys k = input + j, j = 1..output-1; closed form, or step by step
 * with exact_steps (the reference the closed form is tested against). */
static hl_status decode_attention(const sim *s, acc *a, double layers, double w, hl_err *err)
{
    double b = s->b_local, in = s->j->input, steps = s->j->output - 1;
    if (layers <= 0 || steps <= 0)
        return HL_OK;
    if (!s->j->exact_steps)
        return attention_sum(s, a, layers, w, 1, 1, steps, err);
    hl_op op;
    hl_status st;
    for (double k = in + 1; k <= in + steps; k++) {
        if (fmod(k - in, 4096) == 0 && hl_interrupt_pending()) /* Ctrl-C: a huge output must not trap us */
            return hl_fail(err, HL_EINTR, "interrupted after %.0f of %.0f exact decode steps", k - in - 1, steps);
        attn_op(s, &op, b, 1, k - 1, w);
        if ((st = add_op(s, a, &op, layers, err)))
            return st;
    }
    return HL_OK;
}

/* Expected tokens a decode step adds per sequence. With gamma draft tokens,
 * each accepted with probability alpha independently, the step keeps the
 * accepted prefix plus the target's own next token:
 * E = sum_{i=0..gamma} alpha^i = (1 - alpha^(gamma+1)) / (1 - alpha), and gamma + 1
 * at alpha = 1 (Leviathan, Kalman, Matias 2023, eq. 1). 1 without speculation. */
static double spec_tokens_per_step(const hl_job *j)
{
    double g = j->spec_tokens, al = j->spec_accept;
    if (g <= 0)
        return 1;
    return al >= 1 ? g + 1 : (1 - pow(al, g + 1)) / (1 - al);
}

static void add_overhead(acc *a, double per_pass, double passes);

/* Speculative decode (docs/MODEL.md 6.2): output - 1 tokens in n = (output - 1)/E
 * verify steps of q = gamma + 1 tokens per sequence (every layer, logits of
 * every position), each after gamma draft passes of spec_draft_layers
 * target-shaped layers and an LM head on one token per sequence. */
static hl_status decode_speculative(const sim *s, acc *dec, double steps, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding;
    layer_split(s, &full, &sliding);
    double window = (double)s->m->sliding_window, b = s->b_local, stages = (double)s->pp;
    double g = j->spec_tokens, q = g + 1, tau = spec_tokens_per_step(j), n = steps / tau;
    double draft_layers = g * j->spec_draft_layers; /* per verify step */
    hl_status st;
    if ((st = layer_ops(s, dec, b, q, n * stages, 1, err)))
        return st;
    if (draft_layers > 0 && (st = layer_ops(s, dec, b, 1, n * draft_layers / s->stage_layers, 1, err)))
        return st;
    hl_event *saved = dec->ev;
    dec->ev = NULL; /* closed-form sums are not single events */
    if ((st = attention_sum(s, dec, full * stages, 0, q, tau, n, err)) ||
        (st = attention_sum(s, dec, sliding * stages, window, q, tau, n, err)) ||
        (st = attention_sum(s, dec, draft_layers, 0, 1, tau, n, err)))
        return st;
    dec->ev = saved;
    if ((st = io_ops(s, dec, b * q, b * q, n, err)) || (g > 0 && (st = io_ops(s, dec, b, b, n * g, err))))
        return st;
    add_overhead(dec, j->step_overhead, n);
    return HL_OK;
}

/* The framework's fixed cost per forward pass (scheduling, sampling, launch
 * not hidden under GPU work), `passes` times. */
static void add_overhead(acc *a, double per_pass, double passes)
{
    if (per_pass <= 0 || passes <= 0)
        return;
    a->ph.time_s += per_pass * passes;
    a->ph.overhead_s += per_pass * passes;
    if (a->summary)
        return;
    log_event(a, "step_overhead", 0, 0, per_pass, 0, 0);
    hl_item *it = item(a, "step_overhead", NULL, NULL);
    it->calls += passes;
    it->time_s += per_pass * passes;
}

/* Overlap: a fraction of the communication runs under operators of the same
 * phase, never more than their time: hidden = min(overlap * comm, ops time).
 * Each communication component shrinks in proportion. */
static void finish_phase(acc *a)
{
    double ops = a->ph.compute_s + a->ph.memory_s;
    double hidden = fmin(a->overlap * a->ph.comm_s, ops);
    if (hidden > 0 && a->ph.comm_s > 0) {
        double keep = 1 - hidden / a->ph.comm_s;
        a->ph.time_s -= hidden;
        a->ph.comm_s *= keep;
        a->ph.latency_comm_s *= keep;
        a->ph.scaleup_comm_s *= keep;
        a->ph.scaleout_comm_s *= keep;
    }
    a->ph.comm_share = a->ph.time_s > 0 ? a->ph.comm_s / a->ph.time_s : 0;
}

hl_status hl_sim_run(const hl_job *j, hl_result *r, hl_err *err) { return hl_sim_run_trusted(j, r, 0, err); }

/* An empty phase accumulator logging events into ev (none in summary mode),
 * hiding `overlap` of its communication under compute. */
static void start_phase(const hl_job *j, acc *a, hl_event *ev, hl_item *items, double overlap)
{
    memset(a, 0, sizeof *a);
    a->summary = j->summary_only;
    a->ev = j->summary_only ? NULL : ev;
    a->items = j->summary_only ? NULL : items;
    a->overlap = overlap;
}

/* Prefill: the whole prompt of b_local sequences in one pass per stage, then the
 * pipeline fill of (microbatches + pp - 1) slots. Fills *pre (events into r). */
static hl_status run_prefill(const sim *s, hl_result *r, acc *pre, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding;
    layer_split(s, &full, &sliding);
    double window = (double)s->m->sliding_window;
    hl_status st;
    start_phase(j, pre, r->prefill_events, r->prefill_items, j->overlap_prefill);
    double b = s->b_local, in = j->input;
    if ((st = layer_ops(s, pre, b, in, 1, 0, err)))
        return st;
    hl_op op;
    attn_op(s, &op, b, in, 0, 0);
    if ((st = add_op(s, pre, &op, full, err)))
        return st;
    attn_op(s, &op, b, in, 0, window);
    if ((st = add_op(s, pre, &op, sliding, err)))
        return st;
    /* Pipeline: one stage's time per micro-batch, (mb + pp - 1) slots. The
     * stage time above is for the whole batch; a micro-batch takes 1/mb of it. */
    double stage = pre->ph.time_s;
    double mb = j->microbatches > 0 ? j->microbatches : (double)s->pp;
    double pipe = s->pp > 1 ? stage * (mb + (double)s->pp - 1) / mb : stage;
    double scale = stage > 0 ? pipe / stage : 1;
    pre->ph.time_s *= scale;
    pre->ph.compute_s *= scale;
    pre->ph.memory_s *= scale;
    pre->ph.comm_s *= scale;
    pre->ph.overhead_s *= scale;
    pre->ph.scaleup_comm_s *= scale;
    pre->ph.scaleout_comm_s *= scale;
    pre->ph.latency_comm_s *= scale;
    for (int i = 0; i < pre->n; i++) /* the rows so far lie inside the layers */
        pre->items[i].path_factor = scale;
    if ((st = io_ops(s, pre, b, b * in, 1, err))) /* b sequences of `in` tokens; the last token of each samples */
        return st;
    add_overhead(pre, j->step_overhead, 1);
    finish_phase(pre);
    return HL_OK;
}

/* Decode's layer_ops (every operator and collective but attention) does not
 * depend on the prompt length, and a sweep over input (the usual innermost
 * axis) repeats it with an otherwise equal job. In summary mode the phase it
 * leaves (from zero: it runs first in the phase) is kept per thread, keyed on
 * the job as run, all of it but `input`, and its arguments. hl_job holds no
 * pointers, so equal bytes are an equal job; padding that differs only misses.
 * Results are bit-identical: a hit restores the same sums in the same order. */
typedef struct decode_memo {
    int valid;
    hl_job key; /* key.input is not compared */
    double b, passes;
    hl_phase ph;
} decode_memo;
static _Thread_local decode_memo dmemo;

/* The scalar fields after `input` first, then the HBD size (both often swept),
 * then the model and cluster: a miss is found before most of the 2.7 KB. */
static int same_job_but_input(const hl_job *a, const hl_job *b)
{
    size_t at = offsetof(hl_job, input), after = at + sizeof a->input;
    return memcmp((const char *)a + after, (const char *)b + after, sizeof *a - after) == 0 &&
           a->cluster.hbd == b->cluster.hbd && memcmp(a, b, at) == 0;
}

static hl_status decode_layers(const sim *s, acc *a, double b, double passes, hl_err *err)
{
    static const hl_phase zero;
    if (!a->summary || memcmp(&a->ph, &zero, sizeof zero) != 0) /* breakdown and events come from the pass itself */
        return layer_ops(s, a, b, 1, passes, 1, err);
    decode_memo *d = &dmemo;
    if (d->valid && d->b == b && d->passes == passes && same_job_but_input(&d->key, s->j)) {
        a->ph = d->ph;
        a->layer_kind = 0;
        return HL_OK;
    }
    hl_status st = layer_ops(s, a, b, 1, passes, 1, err);
    d->valid = 0;
    if (st == HL_OK) {
        d->key = *s->j;
        d->b = b;
        d->passes = passes;
        d->ph = a->ph;
        d->valid = 1;
    }
    return st;
}

/* Decode: output - 1 steps, each a pass of every layer (all stages in turn);
 * attention summed in closed form over the growing context. Fills *dec. */
static hl_status run_decode(const sim *s, hl_result *r, acc *dec, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding;
    layer_split(s, &full, &sliding);
    double window = (double)s->m->sliding_window;
    hl_status st;
    start_phase(j, dec, r->decode_events, r->decode_items, j->overlap_decode);
    double steps = j->output - 1, b = s->b_local;
    if (steps > 0 && j->spec_tokens > 0) {
        if ((st = decode_speculative(s, dec, steps, err)))
            return st;
    } else if (steps > 0) {
        double stages = (double)s->pp;
        if ((st = decode_layers(s, dec, b, steps * stages, err)))
            return st;
        /* the attention kernel of a step at the mean context, for the trace */
        hl_op op;
        hl_op_time at;
        attn_op(s, &op, b, 1, j->input + steps / 2, sliding > 0 && full == 0 ? window : 0);
        if (!dec->summary && hl_op_time_on(&op, &j->cluster.gpu, &at, err) == HL_OK) {
            dec->layer_kind = 0;
            log_event(dec, "attention", 0, 0, at.time_s, op.bytes_read + op.bytes_written, op.flops);
        }
        hl_event *saved = dec->ev;
        dec->ev = NULL; /* the closed-form sums below are not single events */
        if ((st = decode_attention(s, dec, full * stages, 0, err)))
            return st;
        if ((st = decode_attention(s, dec, sliding * stages, window, err)))
            return st;
        dec->ev = saved;
        if ((st = io_ops(s, dec, b, b, steps, err)))
            return st;
        add_overhead(dec, j->step_overhead, steps);
    }
    finish_phase(dec);
    return HL_OK;
}

/* The phases, items, events and job-level rates of r from the two phases. */
static void fill_times(const sim *s, const acc *pre, const acc *dec, hl_result *r)
{
    const hl_job *j = s->j;
    double steps = j->output - 1;
    r->n_prefill_events = pre->nev;
    r->n_decode_events = dec->nev;
    r->prefill = pre->ph;
    r->decode = dec->ph;
    r->n_prefill_items = pre->n; /* the rows were written in place (start_phase) */
    r->n_decode_items = dec->n;
    r->ttft_s = pre->ph.time_s;
    r->tpot_s = steps > 0 ? dec->ph.time_s / steps : 0;
    r->total_s = pre->ph.time_s + dec->ph.time_s;
    r->decode_tps = dec->ph.time_s > 0 ? j->batch * steps / dec->ph.time_s : 0;
    r->tps_per_gpu = j->batch * j->output / r->total_s / (double)s->G;
    r->tps_per_gpu_incl_prompt = j->batch * (j->input + j->output) / r->total_s / (double)s->G;
    r->tokens_per_step = spec_tokens_per_step(j);
    r->gpus = s->G;
    r->tp = s->tp;
    r->pp = s->pp;
    r->ep = s->ep;
    r->dp = s->dp;
    r->etp = s->etp;
    r->batch = j->batch;
    r->input = j->input;
    r->output = j->output;
    r->precision = j->precision;
}

/* What bounds the job: the largest of compute, HBM, scale-up, scale-out and
 * latency (+ overhead) time over both phases (hl_bound_name order). */
static int32_t find_bound(const hl_phase *pre, const hl_phase *dec)
{
    double parts[5] = {pre->compute_s + dec->compute_s, pre->memory_s + dec->memory_s,
                       pre->scaleup_comm_s + dec->scaleup_comm_s, pre->scaleout_comm_s + dec->scaleout_comm_s,
                       pre->latency_comm_s + dec->latency_comm_s + pre->overhead_s + dec->overhead_s};
    int32_t bound = 0;
    for (int i = 1; i < 5; i++)
        if (parts[i] > parts[bound])
            bound = i;
    return bound;
}

hl_status hl_sim_run_trusted(const hl_job *job, hl_result *r, int trust, hl_err *err)
{
    sim s;
    hl_job fw;
    const hl_job *j = hl_job_with_framework(job, &fw); /* s.j points to it: both live until return */
    if (j != job) /* the framework scaled the GPU's efficiencies: check them again, as hl.simulate does */
        trust &= ~(HL_TRUST_CLUSTER | HL_TRUST_CLUSTER_FIELDS);
    hl_status st = hl_sim_resolve(j, &s, trust, err);
    if (st)
        return st;
    memset(r, 0, offsetof(hl_result, prefill_items)); /* the arrays are filled up to their counts */

    /* ---- memory per GPU (core/src/memory.c): checked before any time is computed, so a job
     * that does not fit fails at once (exact_steps with a huge output would step first) ---- */
    hl_memory mem;
    if ((st = hl_memory_resolved(&s, &mem, err)))
        return st;
    r->weights_bytes = mem.weights_bytes;
    r->kv_bytes = mem.kv_bytes;
    r->workspace_bytes = mem.workspace_bytes;
    r->per_gpu_bytes = mem.per_gpu_bytes;
    r->fits = mem.fits;

    if (!r->fits && !j->ignore_memory) {
        double cap = j->cluster.gpu.hbm_bytes * j->mem_util;
        return hl_fail(err, HL_ENOFIT,
                       "does not fit HBM by %.2f GB: needs %.2f GB per GPU (weights %.2f + KV %.2f + workspace %.2f), "
                       "has %.2f GB (%.0f%% of %.2f); more GPUs, a smaller batch or a lower precision would help",
                       (r->per_gpu_bytes - cap) / 1e9, r->per_gpu_bytes / 1e9, r->weights_bytes / 1e9,
                       r->kv_bytes / 1e9, r->workspace_bytes / 1e9, cap / 1e9, j->mem_util * 100,
                       j->cluster.gpu.hbm_bytes / 1e9);
    }

    acc pre, dec;
    if ((st = run_prefill(&s, r, &pre, err)) || (st = run_decode(&s, r, &dec, err)))
        return st;
    fill_times(&s, &pre, &dec, r);

    /* Defence in depth: every input passed its checks, yet extreme combinations
     * (subnormal latencies, huge counts) could overflow; never return such a result. */
    if (!isfinite(r->total_s) || !isfinite(r->ttft_s) || !isfinite(r->tpot_s) || r->total_s < 0 ||
        !isfinite(r->per_gpu_bytes))
        return hl_fail(err, HL_EINVAL,
                       "the configuration gives a non-finite or negative time (TTFT %g s, total %g s); "
                       "check extreme field values",
                       r->ttft_s, r->total_s);

    r->bound = find_bound(&pre.ph, &dec.ph);

    /* ---- cost and energy: prefill charged to prompt tokens, decode to decode tokens ---- */
    hl_cost_phase cp = {pre.ph.time_s, pre.ph.compute_s + pre.ph.memory_s, j->batch * j->input};
    hl_cost_phase cd = {dec.ph.time_s, dec.ph.compute_s + dec.ph.memory_s, j->batch * (j->output - 1)};
    hl_cost_compute(&j->cluster, s.G, j->batch, &cp, &cd, &r->cost);
    return HL_OK;
}

/* ---- one serving iteration (continuous batching), for serve.c ------------------
 * The parts of a step that depend only on its token count (every GEMM, norm,
 * MoE exchange and TP collective: layer_ops) and on its sampled rows (io_ops)
 * are cached per count; the attention kernels, which depend on each
 * sequence's context, are built per step. Nothing here differs from
 * hl_sim_run's formulas: a step with only decodes is one step of its decode
 * phase, a step with prefill chunks is its prefill pass. */
struct hl_stepper {
    hl_job job; /* owned copy; batch rewritten to the step's tokens before layer_ops */
    sim s;      /* resolved against job */
    double full, sliding, window;
    int64_t cap;         /* counts 0..cap are cached */
    hl_phase *lin[2];    /* [prefill=0 / decode=1][tokens]: layer_ops of one pass */
    hl_phase *io;        /* [rows]: io_ops of one step */
    unsigned char *have; /* (2 + 1) * (cap + 1) flags */
    struct dline *dl;    /* [sequences]: decode-only steps, NULL until first used */
};

/* A decode-only step of n sequences as a function of their mean context c:
 * base (every operator but attention, and the sampling ops) plus one attention
 * kernel per layer of time max(ac + bc c, am + bm c) + lat (its compute and
 * memory times are linear in c: section 6's closed form uses the same fact). */
struct dline {
    hl_phase base;
    double ac, bc, am, bm, lat;
    int have;
};

hl_status hl_stepper_new(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err)
{
    *out = NULL;
    if (max_tokens < 1 || max_tokens > 100000000)
        return hl_fail(err, HL_EINVAL, "stepper: max_tokens %lld is out of range (1..1e8)", (long long)max_tokens);
    hl_stepper *st = calloc(1, sizeof *st);
    if (!st)
        return hl_fail(err, HL_ENOMEM, "stepper: out of memory");
    if (job->spec_tokens > 0) {
        free(st);
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_tokens': %g; speculative decoding is modelled by hl.simulate, not yet by the "
                       "serving step timer (use spec_tokens = 0 here)",
                       job->spec_tokens);
    }
    hl_job fw;
    st->job = *hl_job_with_framework(job, &fw); /* the framework's efficiencies and step overhead */
    st->job.summary_only = 1;
    st->job.batch = 1; /* hl_sim_resolve() checks batch against dp: any multiple of dp would do */
    hl_status s0 = HL_OK;
    /* dp is resolved from the mapping; make batch a multiple of it for the check */
    hl_job probe = st->job;
    int64_t G = probe.gpus > 0 ? probe.gpus : probe.cluster.gpus;
    if (probe.tp > 0 && probe.pp > 0 && G % (probe.tp * probe.pp) == 0)
        st->job.batch = (double)(probe.dp > 0 ? probe.dp : G / (probe.tp * probe.pp));
    if ((s0 = hl_sim_resolve(&st->job, &st->s, 0, err))) {
        free(st);
        return s0;
    }
    layer_split(&st->s, &st->full, &st->sliding);
    st->window = (double)st->job.model.sliding_window;
    st->cap = max_tokens;
    size_t n = (size_t)max_tokens + 1;
    st->lin[0] = calloc(n, sizeof(hl_phase));
    st->lin[1] = calloc(n, sizeof(hl_phase));
    st->io = calloc(n, sizeof(hl_phase));
    st->have = calloc(3 * n, 1);
    if (!st->lin[0] || !st->lin[1] || !st->io || !st->have) {
        hl_stepper_free(st);
        return hl_fail(err, HL_ENOMEM, "stepper: out of memory for %lld cached counts", (long long)max_tokens);
    }
    *out = st;
    return HL_OK;
}

void hl_stepper_free(hl_stepper *st)
{
    if (!st)
        return;
    free(st->lin[0]);
    free(st->lin[1]);
    free(st->io);
    free(st->have);
    free(st->dl);
    free(st);
}

double hl_stepper_kv_token_bytes(const hl_stepper *st)
{
    const hl_model *m = &st->job.model;
    double share = m->attn == HL_ATTN_MLA ? 1 : hl_kv_heads_per_gpu(m, st->s.tp) / (double)m->kv_heads;
    return hl_kv_bytes_per_token(m, (hl_precision)hl_job_kv_precision(&st->job)) * share / (double)st->s.pp;
}

double hl_stepper_state_bytes(const hl_stepper *st)
{
    const hl_model *m = &st->job.model;
    return hl_kv_state_bytes(m, (hl_precision)st->job.act_precision) * hl_kv_state_share_per_gpu(m, st->s.tp) /
           (double)st->s.pp;
}

int64_t hl_stepper_gpus(const hl_stepper *st) { return st->s.G; }
int64_t hl_stepper_dp(const hl_stepper *st) { return st->s.dp; }
double hl_stepper_window(const hl_stepper *st) { return st->sliding > 0 ? st->window : 0; }

static void phase_add(hl_phase *a, const hl_phase *b, double k)
{
    a->time_s += b->time_s * k;
    a->compute_s += b->compute_s * k;
    a->memory_s += b->memory_s * k;
    a->comm_s += b->comm_s * k;
    a->overhead_s += b->overhead_s * k;
    a->scaleup_comm_s += b->scaleup_comm_s * k;
    a->scaleout_comm_s += b->scaleout_comm_s * k;
    a->latency_comm_s += b->latency_comm_s * k;
    a->flops += b->flops * k;
    a->hbm_bytes += b->hbm_bytes * k;
}

/* layer_ops of one pass over `tokens` tokens of the whole instance (decode: all
 * stages in turn, as hl_sim_run's decode; prefill: one stage, scaled later). */
static hl_status step_linear(hl_stepper *st, int decode, double tokens, hl_phase *out, hl_err *err)
{
    int64_t k = (int64_t)tokens;
    int cached = tokens == (double)k && k <= st->cap;
    size_t slot = (size_t)decode * (size_t)(st->cap + 1) + (size_t)k;
    if (cached && st->have[slot]) {
        *out = st->lin[decode][k];
        return HL_OK;
    }
    acc a;
    memset(&a, 0, sizeof a);
    a.summary = 1;
    st->job.batch = tokens; /* MoE routing counts the stage's tokens from job->batch (q = 1) */
    hl_status rc = layer_ops(&st->s, &a, tokens / (double)st->s.dp, 1, decode ? (double)st->s.pp : 1, decode, err);
    if (rc)
        return rc;
    *out = a.ph;
    if (cached) {
        st->lin[decode][k] = a.ph;
        st->have[slot] = 1;
    }
    return HL_OK;
}

/* io_ops of one step: `tokens` tokens of which `rows` sample (cached by count
 * when every token samples, as in a decode-only step). */
static hl_status step_io(hl_stepper *st, double rows, double tokens, hl_phase *out, hl_err *err)
{
    int64_t k = (int64_t)rows;
    int cached = rows == tokens && rows == (double)k && k <= st->cap;
    size_t slot = 2 * (size_t)(st->cap + 1) + (size_t)k;
    if (cached && st->have[slot]) {
        *out = st->io[k];
        return HL_OK;
    }
    acc a;
    memset(&a, 0, sizeof a);
    a.summary = 1;
    hl_status rc = io_ops(&st->s, &a, rows / (double)st->s.dp, tokens / (double)st->s.dp, 1, err);
    if (rc)
        return rc;
    *out = a.ph;
    if (cached) {
        st->io[k] = a.ph;
        st->have[slot] = 1;
    }
    return HL_OK;
}

/* The decode line of n sequences (cached for n <= cap). */
static hl_status decode_line(hl_stepper *st, double n, struct dline *out, hl_err *err)
{
    int64_t k = (int64_t)n;
    if (st->dl && st->dl[k].have) {
        *out = st->dl[k];
        return HL_OK;
    }
    struct dline d;
    memset(&d, 0, sizeof d);
    hl_status rc = step_linear(st, 1, n, &d.base, err);
    hl_phase io;
    if (!rc)
        rc = step_io(st, n, n, &io, err);
    if (rc)
        return rc;
    phase_add(&d.base, &io, 1);
    hl_op op;
    hl_op_time t0, t1;
    attn_op(&st->s, &op, n / (double)st->s.dp, 1, 0, 0);
    if ((rc = hl_op_time_on(&op, &st->job.cluster.gpu, &t0, err)))
        return rc;
    attn_op(&st->s, &op, n / (double)st->s.dp, 1, 1, 0);
    if ((rc = hl_op_time_on(&op, &st->job.cluster.gpu, &t1, err)))
        return rc;
    d.ac = t0.compute_s;
    d.bc = t1.compute_s - t0.compute_s;
    d.am = t0.memory_s;
    d.bm = t1.memory_s - t0.memory_s;
    d.lat = st->job.cluster.gpu.kernel_latency;
    d.have = 1;
    if (!st->dl)
        st->dl = calloc((size_t)st->cap + 1, sizeof *st->dl);
    if (st->dl)
        st->dl[k] = d;
    *out = d;
    return HL_OK;
}

hl_status hl_stepper_time(hl_stepper *st, const hl_iter *it, double *time_s, hl_err *err)
{
    int64_t nd = (int64_t)it->decode_seqs;
    if (it->n_chunks == 0 && it->decode_seqs >= 1 && it->decode_seqs == (double)nd && nd <= st->cap &&
        it->logits_rows == it->decode_seqs) { /* decode only: evaluate the cached line (hot path) */
        struct dline d;
        hl_status rc = decode_line(st, it->decode_seqs, &d, err);
        if (rc)
            return rc;
        double stages = (double)st->s.pp;
        double c = it->decode_ctx_mean, w = it->decode_win_mean;
        double att = (fmax(d.ac + d.bc * c, d.am + d.bm * c) + d.lat) * st->full * stages +
                     (fmax(d.ac + d.bc * w, d.am + d.bm * w) + d.lat) * st->sliding * stages;
        double time = d.base.time_s + att, ops = d.base.compute_s + d.base.memory_s + att;
        double hidden = fmin(st->job.overlap_decode * d.base.comm_s, ops); /* finish_phase() */
        *time_s = (hidden > 0 && d.base.comm_s > 0 ? time - hidden : time) + st->job.step_overhead;
        if (!isfinite(*time_s) || *time_s < 0)
            return hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", *time_s);
        return HL_OK;
    }
    *time_s = 0;
    double tokens = it->decode_seqs;
    for (int32_t i = 0; i < it->n_chunks; i++)
        tokens += it->chunks[i].tokens;
    if (tokens <= 0)
        return HL_OK;
    const sim *s = &st->s;
    int decode = it->n_chunks == 0;
    double stages = decode ? (double)s->pp : 1, dp = (double)s->dp;
    acc a;
    memset(&a, 0, sizeof a);
    a.summary = 1;
    a.overlap = decode ? st->job.overlap_decode : st->job.overlap_prefill;
    hl_status rc = step_linear(st, decode, tokens, &a.ph, err);
    if (rc)
        return rc;
    hl_op op;
    if (it->decode_seqs > 0) { /* one decode kernel at the mean context: time is linear in the context */
        attn_op(s, &op, it->decode_seqs / dp, 1, it->decode_ctx_mean, 0);
        if ((rc = add_op(s, &a, &op, st->full * stages, err)))
            return rc;
        attn_op(s, &op, it->decode_seqs / dp, 1, it->decode_win_mean, 0);
        if ((rc = add_op(s, &a, &op, st->sliding * stages, err)))
            return rc;
    }
    if (it->n_chunks > 0) { /* one variable-length prefill kernel over every chunk of the group */
        for (int w = 0; w < 2; w++) {
            double layers = w ? st->sliding : st->full;
            if (layers <= 0)
                continue;
            hl_op sum;
            memset(&sum, 0, sizeof sum);
            for (int32_t i = 0; i < it->n_chunks; i++) {
                attn_op(s, &op, 1, it->chunks[i].tokens, it->chunks[i].offset, w ? st->window : 0);
                if (i == 0)
                    sum = op;
                else {
                    sum.flops += op.flops;
                    sum.bytes_read += op.bytes_read;
                    sum.bytes_written += op.bytes_written;
                }
            }
            sum.flops /= dp; /* the chunks spread over the data-parallel groups */
            sum.bytes_read /= dp;
            sum.bytes_written /= dp;
            if ((rc = add_op(s, &a, &sum, layers, err)))
                return rc;
        }
        if (s->pp > 1) { /* pipelined over micro-batches, as hl_sim_run's prefill */
            double mb = st->job.microbatches > 0 ? st->job.microbatches : (double)s->pp;
            hl_phase ph = a.ph;
            memset(&a.ph, 0, sizeof a.ph);
            phase_add(&a.ph, &ph, (mb + (double)s->pp - 1) / mb);
        }
    }
    /* embedding and stage hand-offs for every token; LM head, logits gather,
     * token broadcast only for the sequences that sample */
    hl_phase io;
    if ((rc = step_io(st, it->logits_rows, tokens, &io, err)))
        return rc;
    phase_add(&a.ph, &io, 1);
    finish_phase(&a);
    *time_s = a.ph.time_s + st->job.step_overhead; /* the framework's cost per iteration */
    if (!isfinite(*time_s) || *time_s < 0)
        return hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", *time_s);
    return HL_OK;
}
