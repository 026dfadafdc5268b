/* The mapping of a job onto its GPUs: validates the job and resolves its
 * parallel sizes (tp, pp, ep, etp, dp), bytes per element and rank placement
 * (which members of each group share an HBD) into an hl_sim_ctx.
 * Formulas: docs/MODEL.md section 6. */
#include "mapping_int.h"

#include <math.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/precision.h"
#include "hw_int.h"
#include "model_int.h"

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
static hl_status place(const hl_job *j, hl_sim_ctx *s, hl_err *err)
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

/* The framework's kernel inventory and whether kernels replay from CUDA graphs (docs/MODEL.md 6.1):
 * without graphs each kernel costs the host launch, kernel_launch, where it would cost kernel_latency. */
static void launch_model(const hl_job *j, hl_sim_ctx *s)
{
    s->fw = hl_framework_profile(j->framework);
    int graphs = j->cuda_graphs == 0 ? s->fw.cuda_graphs : j->cuda_graphs == 1;
    const hl_gpu *g = &s->c->gpu;
    s->launch_extra = !graphs && g->kernel_launch > g->kernel_latency ? g->kernel_launch - g->kernel_latency : 0;
}

hl_status hl_sim_resolve_draft(const hl_job *job, hl_job *draft, hl_sim_ctx *s, hl_err *err)
{
    hl_status st = hl_job_draft(job, draft, err);
    if (!st && (st = hl_sim_resolve(draft, s, HL_TRUST_CLUSTER, err)))
        hl_err_prefix(err, "field 'spec_draft_model'");
    return st;
}

/* The shares of a model's layers with full and with local attention (hl_layer_split scales them by a
 * context's stage_layers), once per resolve: of L layers, the linear-attention ones have no attention
 * kernel and the local ones see at most hl_local_window keys (sparse attention's indexed layers are all local). */
static void layer_shares(hl_sim_ctx *s)
{
    const hl_model *m = s->m;
    double L = (double)m->layers;
    double lin = (double)hl_model_linear_layers(m) / L, loc = (double)hl_model_local_layers(m) / L;
    if (m->index_topk > 0)
        loc = 1 - lin;
    s->sliding_share = loc;
    s->full_share = 1 - lin - loc;
}

/* The checks of hl_sim_resolve that read the job's input (the others do not). */
static hl_status whole_counts(const hl_job *j, hl_err *err)
{
    if (j->batch != floor(j->batch) || j->input != floor(j->input) || j->output != floor(j->output))
        return hl_fail(err, HL_EINVAL, "fields 'batch', 'input', 'output' must be whole numbers (got %g, %g, %g)",
                       j->batch, j->input, j->output);
    return HL_OK;
}

static hl_status image_tokens_fit(const hl_job *j, hl_err *err)
{
    if (j->image_tokens > 0 && j->model.vision_layers <= 0)
        return hl_fail(err, HL_EINVAL, "field 'image_tokens': %g needs a model with a vision encoder ('%s' has none)",
                       j->image_tokens, j->model.name);
    if (j->image_tokens > j->input || j->image_tokens != floor(j->image_tokens))
        return hl_fail(err, HL_EINVAL, "field 'image_tokens': %g must be a whole number of tokens <= input (%g)",
                       j->image_tokens, j->input);
    return HL_OK;
}

hl_status hl_sim_resolve_input(const hl_job *j, const hl_sim_ctx *prev, hl_sim_ctx *s, int trust, hl_err *err)
{
    hl_status st = trust & HL_TRUST_JOB_FIELDS ? HL_OK : hl_job_check_fields(j, err);
    if (st)
        return st;
    /* prev's job, equal but for input, passed whole_counts and image_tokens_fit (its run took a
     * class: sim.c), so of their tests only those that read input can fail here; a failing one
     * runs the whole check for its message */
    if (j->input != floor(j->input) && (st = whole_counts(j, err)))
        return st;
    if (j->image_tokens > j->input && (st = image_tokens_fit(j, err)))
        return st;
    *s = *prev;
    s->j = j;
    s->m = &j->model;
    s->c = &j->cluster;
    s->job_class = 0;
    return HL_OK;
}

static _Thread_local uint64_t resolves; /* hl_sim_resolve calls on this thread */

uint64_t hl_sim_thread_resolves(void) { return resolves; }

hl_status hl_sim_resolve(const hl_job *j, hl_sim_ctx *s, int trust, hl_err *err)
{
    resolves++; /* (the layout cache may change below) */
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
    if ((st = whole_counts(j, err)))
        return st;
    double peak;
    if ((st = hl_gpu_peak(&c->gpu, (hl_precision)j->precision, &peak, err)))
        return st;
    if ((st = hl_gpu_peak(&c->gpu, (hl_precision)j->act_precision, &peak, err)))
        return st;
    s->j = j;
    s->m = m;
    s->c = c;
    s->kern = NULL;
    if (j->kernels[0] && (st = hl_kernels_load(j->kernels, &s->kern, err)))
        return st;
    launch_model(j, s);
    s->job_class = 0; /* hl_sim_run_trusted sets it for its memos */
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
    if ((st = image_tokens_fit(j, err)))
        return st;
    s->slots = (double)(m->experts + j->redundant_experts);
    s->decode_q = 1;
    if (j->spec_tokens > 0) {
        if ((st = hl_job_check_spec(j, err)))
            return st;
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
        if ((st = hl_sim_layout(j, s->ep, &s->layout, err)))
            return st;
    } else {
        if (j->routing_skew != 0 || j->expert_freq_n != 0)
            return hl_fail(err, HL_EINVAL, "model '%s' is dense: field '%s' needs experts", m->name,
                           j->routing_skew != 0 ? "routing_skew" : "expert_freq");
        s->layout = NULL;
        if (s->ep != 1)
            return hl_fail(err, HL_EINVAL, "model '%s' is dense: ep = %lld needs experts", m->name, (long long)s->ep);
        if (j->redundant_experts != 0)
            return hl_fail(err, HL_EINVAL, "model '%s' is dense: field 'redundant_experts' = %lld needs experts",
                           m->name, (long long)j->redundant_experts);
        s->etp = 1;
    }
    if (fmod(j->batch, (double)s->dp) != 0) {
        if (j->dp > 0)
            return hl_fail(err, HL_EINVAL, "field 'batch': %g sequences do not split over dp = %lld groups", j->batch,
                           (long long)s->dp);
        return hl_fail(err, HL_EINVAL,
                       "field 'batch': %g sequences do not split over dp = %lld groups (dp = gpus / (tp * pp) = "
                       "%lld / (%lld * %lld) when not given: give a batch that is a multiple of dp, or "
                       "parallel.gpus (instance_gpus) to run on fewer GPUs)",
                       j->batch, (long long)s->dp, (long long)s->G, (long long)s->tp, (long long)s->pp);
    }
    if ((st = place(j, s, err)))
        return st;
    s->stage_layers = (double)m->layers / (double)s->pp;
    s->dense_frac = 1 - (double)hl_model_moe_layers(m) / (double)m->layers;
    layer_shares(s);
    s->b_local = j->batch / (double)s->dp;
    return HL_OK;
}

/* One layout per thread, keyed by everything it is computed from. */
typedef struct layout_cache {
    int valid;
    int64_t experts, redundant, ep, topk, freq_n;
    int32_t eplb;
    double skew;
    double freq[HL_EXPERTS_MAX];
    hl_expert_layout lay;
} layout_cache;
static _Thread_local layout_cache lcache;

hl_status hl_sim_layout(const hl_job *j, int64_t ep, const hl_expert_layout **out, hl_err *err)
{
    const hl_model *m = &j->model;
    int32_t eplb = j->eplb || j->redundant_experts > 0;
    layout_cache *c = &lcache;
    if (c->valid && c->experts == m->experts && c->redundant == j->redundant_experts && c->ep == ep &&
        c->topk == m->topk && c->eplb == eplb && c->skew == j->routing_skew && c->freq_n == j->expert_freq_n &&
        memcmp(c->freq, j->expert_freq, (size_t)j->expert_freq_n * sizeof(double)) == 0) {
        *out = &c->lay;
        return HL_OK;
    }
    if (j->routing_skew != 0 && j->expert_freq_n != 0)
        return hl_fail(err, HL_EINVAL,
                       "fields 'routing_skew' = %g and 'expert_freq' both describe the routing: give one of them",
                       j->routing_skew);
    double zipf[HL_EXPERTS_MAX];
    const double *share = NULL;
    hl_status st = HL_OK;
    if (j->expert_freq_n != 0) {
        if (j->expert_freq_n != m->experts)
            return hl_fail(err, HL_EINVAL, "field 'expert_freq': %d shares for model '%s' of %lld experts",
                           (int)j->expert_freq_n, m->name, (long long)m->experts);
        share = j->expert_freq;
    } else if (j->routing_skew != 0) {
        if ((st = hl_routing_zipf(j->routing_skew, m->experts, (double)m->topk, zipf, err)))
            return st;
        share = zipf;
    }
    c->valid = 0;
    if ((st = hl_expert_layout_init(&c->lay, share, m->experts, j->redundant_experts, ep, (double)m->topk, eplb, err)))
        return st;
    c->experts = m->experts;
    c->redundant = j->redundant_experts;
    c->ep = ep;
    c->topk = m->topk;
    c->eplb = eplb;
    c->skew = j->routing_skew;
    c->freq_n = j->expert_freq_n;
    memcpy(c->freq, j->expert_freq, (size_t)j->expert_freq_n * sizeof(double));
    c->valid = 1;
    *out = &c->lay;
    return HL_OK;
}
