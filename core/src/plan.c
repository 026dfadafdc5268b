/* Largest batch and mapping search (docs/MODEL.md section 7). */
#include "hbdlab/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/kvcache.h"
#include "fields_int.h"
#include "memory_int.h"
#include "sim_int.h"

/* The options of a mapping search that hl.simulate takes beside the job's
 * fields (parallel = "auto"); declared once here. */
static const hl_field plan_fields[] = {
    HL_FE(hl_plan_in, objective, "objective", "tps_per_gpu|ttft|tpot|throughput",
          "what parallel = \"auto\" optimises: tokens/s per GPU, TTFT, TPOT, or whole-job decode tokens/s"),
    HL_FD0(hl_plan_in, max_tpot, "max_tpot_s", 1e-9, 1e6, "s", "parallel = \"auto\": TPOT limit (0 = none)"),
    HL_FD0(hl_plan_in, max_ttft, "max_ttft_s", 1e-9, 1e6, "s", "parallel = \"auto\": TTFT limit (0 = none)"),
};
static const hl_field_set plan_set = {"simulate", plan_fields, (int32_t)(sizeof plan_fields / sizeof plan_fields[0]),
                                      NULL};

const hl_field_set *hl_plan_fields(void) { return &plan_set; }

/* One probe of the search: does the job fit at another batch? Only the memory
 * model runs (no timing); the first run validated the model and cluster, which
 * the probes do not change. */
static hl_status probe(hl_job *j, double batch, int32_t *fits, hl_err *err)
{
    hl_memory mem;
    j->batch = batch;
    hl_status st = hl_memory_trusted(j, &mem, HL_TRUST_MODEL | HL_TRUST_CLUSTER, err);
    *fits = mem.fits;
    return st;
}

hl_status hl_sim_max_batch(const hl_job *job, double *batch, hl_err *err)
{
    if (!job || !batch)
        return hl_fail(err, HL_EINVAL, "hl_sim_max_batch: the %s is NULL", !job ? "job" : "batch output");
    hl_job j = *job;
    j.ignore_memory = 1; /* the first run reports fits instead of failing */
    j.summary_only = 1;  /* and totals only */
    int64_t gpus = j.gpus > 0 ? j.gpus : j.cluster.gpus;
    int64_t dp = j.dp > 0 ? j.dp : (j.tp * j.pp > 0 ? gpus / (j.tp * j.pp) : 1);
    if (dp < 1)
        dp = 1;
    hl_result r;
    j.batch = (double)dp;
    hl_status st = hl_sim_run(&j, &r, err);
    if (st)
        return st;
    if (!r.fits) { /* the usable bytes as the framework sizes its KV cache (docs/MODEL.md 4) */
        int32_t of_free = hl_framework_profile(j.framework).kv_of_free;
        double cap =
            hl_kv_usable_bytes(j.cluster.gpu.hbm_bytes, j.mem_util, of_free, r.weights_bytes, r.workspace_bytes);
        return hl_fail(err, HL_ENOFIT,
                       "batch = max: even %lld sequence(s) (one per data-parallel group) need %.2f GB per GPU, "
                       "%.2f GB more than %.0f%% of %s (%.2f GB)",
                       (long long)dp, r.per_gpu_bytes / 1e9, (r.per_gpu_bytes - cap) / 1e9, j.mem_util * 100,
                       of_free ? "the HBM weights and workspace leave, on top of them" : "HBM", cap / 1e9);
    }
    /* Memory grows monotonically with batch: double, then bisect on multiples of dp. */
    double lo = 1, hi = 2;
    int32_t fits;
    while (hi < 1e7) {
        if ((st = probe(&j, hi * (double)dp, &fits, err)))
            return st;
        if (!fits)
            break;
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        double mid = floor((lo + hi) / 2);
        if ((st = probe(&j, mid * (double)dp, &fits, err)))
            return st;
        if (fits)
            lo = mid;
        else
            hi = mid;
    }
    *batch = lo * (double)dp;
    return HL_OK;
}

static double score_of(const hl_plan_in *in, const hl_result *r)
{
    switch (in->objective) {
    case HL_OBJ_MIN_TTFT: return -r->ttft_s;
    case HL_OBJ_MIN_TPOT: return -r->tpot_s;
    case HL_OBJ_THROUGHPUT: return r->decode_tps;
    default: return r->tps_per_gpu;
    }
}

static int cmp_candidates(const void *a, const void *b)
{
    const hl_candidate *x = a, *y = b;
    if (x->meets_limits != y->meets_limits)
        return y->meets_limits - x->meets_limits;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

/* The largest batch (a multiple of the data-parallel groups, at most the job's
 * batch) whose TTFT and TPOT stay within the limits (0 = none): both grow with
 * the batch, so bisection. *r holds the run at the batch chosen; *meets is 0
 * when even one sequence per group misses a limit (the batch then stays at
 * that minimum, the closest to the limits). */
static hl_status batch_within_limits(hl_job *j, double max_ttft, double max_tpot, int trust, hl_result *r,
                                     int32_t *meets, hl_err *err)
{
    hl_status st = hl_sim_run_trusted(j, r, trust, err);
    if (st)
        return st;
#define WITHIN(x) ((max_ttft <= 0 || (x).ttft_s <= max_ttft) && (max_tpot <= 0 || (x).tpot_s <= max_tpot))
    *meets = WITHIN(*r);
    if (*meets)
        return HL_OK;
    double dp = (double)(r->dp > 0 ? r->dp : 1), top = floor(j->batch / dp), lo = 1, hi = top;
    hl_job t = *j;
    hl_result x;
    t.batch = dp; /* one sequence per group first: if it misses, nothing smaller exists */
    if ((st = hl_sim_run_trusted(&t, &x, trust, err)))
        return st;
    if (!WITHIN(x))
        lo = 0;
    while (lo > 0 && hi - lo > 1) { /* lo: a multiple known within, hi: known outside */
        double mid = floor((lo + hi) / 2);
        t.batch = mid * dp;
        if ((st = hl_sim_run_trusted(&t, &x, trust, err)))
            return st;
        if (WITHIN(x))
            lo = mid;
        else
            hi = mid;
    }
#undef WITHIN
    j->batch = (lo > 0 ? lo : 1) * dp;
    *meets = lo > 0;
    return hl_sim_run_trusted(j, r, trust, err);
}

hl_status hl_sim_max_batch_within(const hl_job *job, double max_ttft, double max_tpot, double *batch, int32_t *meets,
                                  hl_err *err)
{
    if (!job || !batch || !meets)
        return hl_fail(err, HL_EINVAL, "hl_sim_max_batch_within: the %s is NULL",
                       !job     ? "job"
                       : !batch ? "batch output"
                                : "meets output");
    hl_job j = *job;
    hl_status st = hl_sim_max_batch(&j, &j.batch, err);
    if (st)
        return st;
    j.ignore_memory = 1;
    j.summary_only = 1;
    hl_result r;
    if ((st = batch_within_limits(&j, max_ttft, max_tpot, 0, &r, meets, err)))
        return st;
    *batch = j.batch;
    return HL_OK;
}

void hl_candidate_apply(const hl_candidate *c, hl_job *job)
{
    job->tp = c->tp;
    job->pp = c->pp;
    job->ep = c->ep;
    job->dp = c->dp;
    job->etp = c->etp;
    job->batch = c->batch;
}

/* The search options' own checks, before any search. */
static hl_status check_options(const hl_plan_in *in, hl_err *err)
{
    if ((unsigned)in->objective > HL_OBJ_THROUGHPUT)
        return hl_fail(err, HL_EINVAL, "plan: objective %d is not valid", (int)in->objective);
    /* limits: 0 means none; NaN would compare false and silently disable the limit */
    if (!(in->max_tpot >= 0 && in->max_tpot <= 1e6))
        return hl_fail(err, HL_EINVAL, "field 'max_tpot_s': %g is out of range (allowed: 0..1e6 s, 0 = no limit)",
                       isnan(in->max_tpot) ? fabs(in->max_tpot) : in->max_tpot);
    if (!(in->max_ttft >= 0 && in->max_ttft <= 1e6))
        return hl_fail(err, HL_EINVAL, "field 'max_ttft_s': %g is out of range (allowed: 0..1e6 s, 0 = no limit)",
                       isnan(in->max_ttft) ? fabs(in->max_ttft) : in->max_ttft);
    return HL_OK;
}

int32_t hl_plan_meets_limits(const hl_plan_in *in, const hl_result *r)
{
    return (in->max_ttft <= 0 || r->ttft_s <= in->max_ttft) && (in->max_tpot <= 0 || r->tpot_s <= in->max_tpot);
}

hl_status hl_job_resolve(const hl_plan_in *in, hl_job *job, hl_candidate *cands, int32_t cap, int32_t *ncand,
                         hl_err *err)
{
    if (ncand)
        *ncand = 0;
    hl_status st = check_options(in, err);
    if (st)
        return st;
    *job = in->job;
    if (in->auto_plan) {
        hl_candidate best;
        int32_t n = 0;
        if ((st = cap > 0 ? hl_plan_search(in, cands, cap, &n, err) : hl_plan_search(in, &best, 1, &n, err)))
            return st;
        hl_candidate_apply(cap > 0 ? &cands[0] : &best, job);
        if (ncand)
            *ncand = cap > 0 ? n : 0;
        return HL_OK;
    }
    if (!in->max_batch)
        return HL_OK;
    if (in->max_ttft <= 0 && in->max_tpot <= 0)
        return hl_sim_max_batch(job, &job->batch, err);
    int32_t within = 1;
    if ((st = hl_sim_max_batch_within(job, in->max_ttft, in->max_tpot, &job->batch, &within, err)))
        return st;
    if (within)
        return HL_OK;
    hl_job t = *job;
    t.summary_only = 1;
    t.ignore_memory = 1;
    hl_result *r = malloc(sizeof *r);
    if (!r)
        return hl_fail(err, HL_ENOMEM, "batch = \"max\": out of memory");
    if ((st = hl_sim_run(&t, r, err)) == HL_OK)
        st = hl_fail(err, HL_ENOFIT,
                     "batch = \"max\": even batch %.14g misses the limits (max_ttft_s %.14g, max_tpot_s %.14g): "
                     "TTFT %.14g s, TPOT %.14g s",
                     t.batch, in->max_ttft, in->max_tpot, r->ttft_s, r->tpot_s);
    free(r);
    return st;
}

hl_status hl_plan_search(const hl_plan_in *in, hl_candidate *out, int32_t cap, int32_t *count, hl_err *err)
{
    if (!in || !count || (!out && cap > 0))
        return hl_fail(err, HL_EINVAL, "hl_plan_search: the %s is NULL",
                       !in      ? "input"
                       : !count ? "count"
                                : "candidate array");
    hl_status cst = check_options(in, err);
    if (cst)
        return cst;
    const hl_job *base = &in->job;
    const hl_model *m = &base->model;
    int64_t G = base->gpus > 0 ? base->gpus : base->cluster.gpus;
    int64_t max_tp = in->max_tp > 0 ? in->max_tp : base->cluster.hbd;
    enum { MAX_CAND = 4096 };
    hl_candidate *all = malloc(sizeof *all * MAX_CAND);
    if (!all)
        return hl_fail(err, HL_ENOMEM, "plan: out of memory");
    /* Candidates change only the mapping: a valid model and cluster are checked once here. */
    int trust = 0;
    hl_err scratch;
    if (hl_model_validate(m, &scratch) == HL_OK && hl_cluster_validate(&base->cluster, &scratch) == HL_OK)
        trust = HL_TRUST_MODEL | HL_TRUST_CLUSTER;
    int32_t n = 0;
    hl_err last = {{0}};
    for (int64_t tp = 1; tp <= G && tp <= max_tp; tp *= 2) {
        if (m->heads % tp)
            continue;
        for (int64_t pp = 1; tp * pp <= G && pp <= m->layers; pp *= 2) {
            if (G % (tp * pp))
                continue;
            int64_t stage = G / pp;
            for (int64_t ep = 1; ep <= (m->experts > 0 ? stage : 1); ep *= 2) {
                if (m->experts > 0 && ((m->experts + base->redundant_experts) % ep || stage % ep))
                    continue;
                if (hl_interrupt_pending()) {
                    free(all);
                    return hl_fail(err, HL_EINTR, "plan search interrupted after %d mappings", (int)n);
                }
                hl_job j = *base;
                j.ignore_memory = 1; /* candidates that do not fit rank last, then are refused */
                j.summary_only = 1;  /* a candidate keeps totals only */
                j.tp = tp;
                j.pp = pp;
                j.ep = ep;
                j.dp = 0;
                j.etp = 0;
                hl_result r;
                hl_err e;
                int32_t within = 1; /* the candidate's meets_limits is set from r below */
                if (in->max_batch) {
                    double b;
                    if (hl_sim_max_batch(&j, &b, &e)) {
                        last = e;
                        continue;
                    }
                    j.batch = b;
                    /* batch = "max" under limits: the largest batch that fits and meets them */
                    if (batch_within_limits(&j, in->max_ttft, in->max_tpot, trust, &r, &within, &e)) {
                        last = e;
                        continue;
                    }
                } else if (hl_sim_run_trusted(&j, &r, trust, &e)) {
                    last = e;
                    continue;
                }
                if (n >= MAX_CAND)
                    continue;
                hl_candidate *c = &all[n++];
                c->tp = r.tp;
                c->pp = r.pp;
                c->ep = r.ep;
                c->dp = r.dp;
                c->etp = r.etp;
                c->batch = j.batch;
                c->ttft_s = r.ttft_s;
                c->tpot_s = r.tpot_s;
                c->tps_per_gpu = r.tps_per_gpu;
                c->decode_tps = r.decode_tps;
                c->fits = r.fits;
                c->meets_limits = hl_plan_meets_limits(in, &r);
                c->score = score_of(in, &r);
            }
        }
    }
    if (n == 0) {
        free(all);
        if (last.msg[0])
            return hl_fail(err, HL_ENOFIT, "plan: no valid mapping (last reason: %s)", last.msg);
        return hl_fail(err, HL_ENOFIT, "plan: no valid mapping of %s on %lld GPUs", m->name, (long long)G);
    }
    qsort(all, (size_t)n, sizeof *all, cmp_candidates);
    if (!all[0].fits) {
        free(all);
        return hl_fail(err, HL_ENOFIT, "plan: no mapping of %s on %lld GPUs fits in memory", m->name, (long long)G);
    }
    if ((in->max_ttft > 0 || in->max_tpot > 0) && !all[0].meets_limits) {
        const hl_candidate *b = &all[0];
        hl_fail(err, HL_ENOFIT,
                "plan: no mapping of %s on %lld GPUs meets the limits (max_ttft_s %g, max_tpot_s %g; 0 = none); the "
                "best found, tp %lld pp %lld ep %lld dp %lld at batch %g, has TTFT %.4g s and TPOT %.4g s",
                m->name, (long long)G, in->max_ttft, in->max_tpot, (long long)b->tp, (long long)b->pp, (long long)b->ep,
                (long long)b->dp, b->batch, b->ttft_s, b->tpot_s);
        free(all);
        return HL_ENOFIT;
    }
    int32_t k = n < cap ? n : cap;
    memcpy(out, all, sizeof *all * (size_t)k);
    *count = k;
    free(all);
    return HL_OK;
}
