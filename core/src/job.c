/* The job's fields, declared once: defaults, ranges, units and help in one
 * descriptor table, setters by name (job, then cluster, model and GPU fields),
 * and the precision rule "KV and wire precision follow the activations". */
#include "hbdlab/job.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/expert_load.h"
#include "hbdlab/io.h"
#include "hbdlab/precision.h"
#include "job_int.h"

_Static_assert(sizeof(((hl_job *)0)->expert_freq) / sizeof(double) == HL_EXPERTS_MAX, "hl_job.expert_freq holds "
                                                                                      "HL_EXPERTS_MAX shares");
_Static_assert((int)HL_PRECISION_AS_ACT == (int)HL_PRECISION_COUNT, "\"act\" is the name after the last precision");

#define PRECISIONS "fp32|bf16|fp16|fp8|fp4|int8"

/* Row initialisers. M: hl_job member; NM: the name in hl.simulate, sweep axes,
 * JSON and --set; PATH: the nested name in an hl.simulate table when it is not
 * NM ("parallel.tp"), else NULL; DEF: the default (enums: the index of the name). */
#define ROW(M, NM, PATH, TYPE, SIZE, LO, HI, UNIT, DEF, HELP, NAMES, ZERO_OK)                                 \
    {                                                                                                         \
        .name = NM, .type = TYPE, .offset = (int32_t)offsetof(hl_job, M), .size = SIZE, .min = LO, .max = HI, \
        .unit = UNIT, .help = HELP, .enum_names = NAMES, .zero_ok = ZERO_OK, .path = PATH, .def = DEF         \
    }
/* a double in [LO, HI] (ZERO_OK: 0 is also allowed and means "derived") */
#define NUM(M, NM, PATH, LO, HI, ZERO_OK, UNIT, DEF, HELP) \
    ROW(M, NM, PATH, HL_FIELD_DOUBLE, (int32_t)sizeof(double), LO, HI, UNIT, DEF, HELP, NULL, ZERO_OK)
/* an int64_t in [LO, HI] (ZERO_OK: 0 is also allowed and means "derived") */
#define INT(M, NM, PATH, LO, HI, ZERO_OK, DEF, HELP) \
    ROW(M, NM, PATH, HL_FIELD_INT64, (int32_t)sizeof(int64_t), LO, HI, "", DEF, HELP, NULL, ZERO_OK)
/* an int32_t 0/1 */
#define BOOL(M, NM, DEF, HELP) ROW(M, NM, NULL, HL_FIELD_BOOL, (int32_t)sizeof(int32_t), 0, 1, "", DEF, HELP, NULL, 0)
/* a NUL-terminated char array (its size from the member) */
#define STR(M, NM, HELP) \
    ROW(M, NM, NULL, HL_FIELD_STRING, (int32_t)sizeof(((hl_job *)0)->M), 0, 0, "", 0, HELP, NULL, 0)
/* an int32_t index into NAMES ('|'-separated) */
#define ENUM(M, NM, NAMES, DEF, HELP) \
    ROW(M, NM, NULL, HL_FIELD_ENUM, (int32_t)sizeof(int32_t), 0, 0, "", DEF, HELP, NAMES, 0)

/* THE job field table: the only place a job field is named.
 *
 * To add a job field: (1) add a member to hl_job in core/include/hbdlab/job.h
 * with its unit in a comment; (2) add one row below. Give it a default that
 * leaves existing results unchanged. hl_job_init applies the default; the
 * setters, range checks, hl.simulate{...} (as `name = value`), sweep axes,
 * `hbdlab eval` JSON and hl.help "simulate" pick the row up by themselves.
 * Nothing else needs to change unless the simulation reads the new member.
 * Units are SI ("s", "B", "B/s"); friendly units belong to Lua aliases. */
static const hl_field job_fields[] = {
    ENUM(precision, "precision", PRECISIONS, HL_BF16, "weights and GEMM math"),
    ENUM(act_precision, "act_precision", PRECISIONS, HL_BF16, "activations: attention math, norms, TP AllReduce"),
    ENUM(kv_precision, "kv_precision", PRECISIONS "|act", HL_PRECISION_AS_ACT,
         "KV cache (default \"act\": as act_precision)"),
    ENUM(wire_precision, "wire_precision", PRECISIONS "|act", HL_PRECISION_AS_ACT,
         "MoE dispatch payload (default \"act\": as act_precision)"),
    NUM(batch, "batch", NULL, 1, 1e9, 0, "", 1, "concurrent sequences in the whole job (hl.simulate: or \"max\")"),
    NUM(input, "input", NULL, 1, 1e9, 0, "", 1024, "prompt tokens per sequence"),
    NUM(output, "output", NULL, 1, 1e9, 0, "", 128, "generated tokens per sequence (the first comes from prefill)"),
    INT(tp, "tp", "parallel.tp", 1, 1e6, 0, 1, "attention (and dense FFN) tensor parallelism"),
    INT(pp, "pp", "parallel.pp", 1, 1e6, 0, 1, "pipeline stages"),
    INT(ep, "ep", "parallel.ep", 1, 1e6, 0, 1, "expert parallelism"),
    INT(dp, "dp", "parallel.dp", 1, 1e6, 1, 0, "attention data parallelism (0 = gpus / (tp * pp))"),
    INT(etp, "etp", "parallel.etp", 1, 1e6, 1, 0, "tensor parallelism inside an expert (0 = gpus / (pp * ep))"),
    INT(gpus, "instance_gpus", "parallel.gpus", 1, 1e7, 1, 0, "GPUs used (0 = the whole cluster)"),
    NUM(overlap_prefill, "overlap_prefill", "overlap.prefill", 0, 1, 0, "", 0,
        "fraction of prefill communication hidden under compute (overlap = x sets both phases)"),
    NUM(overlap_decode, "overlap_decode", "overlap.decode", 0, 1, 0, "", 0,
        "fraction of decode communication hidden under compute"),
    NUM(imbalance, "imbalance", NULL, 1, 1e3, 1, "", 0,
        "tokens of the busiest EP rank / mean (0 = from the routing model: routing_skew, expert_freq, EPLB)"),
    NUM(layer_overhead, "layer_overhead", NULL, 0, 1, 0, "s", 0, "fixed cost per layer per forward pass"),
    ENUM(dispatch, "dispatch", "flat|hierarchical", HL_DISPATCH_FLAT, "MoE dispatch algorithm"),
    NUM(microbatches, "microbatches", NULL, 1, 1e6, 1, "", 0,
        "pipeline micro-batches in flight (0 = pp; at most one per sequence)"),
    NUM(mem_util, "mem_util", NULL, 0.01, 1, 0, "", 0.9,
        "usable fraction of HBM (trtllm profiles: the KV cache's fraction of the HBM weights and workspace leave)"),
    NUM(workspace_bytes, "workspace_bytes", NULL, 0, 1e15, 0, "B", 0, "activation workspace per GPU (0 = estimated)"),
    BOOL(exact_steps, "exact_steps", 0, "sum decode step by step (reference mode)"),
    BOOL(sequence_parallel, "sequence_parallel", 0, "ReduceScatter + AllGather instead of the TP AllReduce"),
    BOOL(ignore_memory, "ignore_memory", 0, "run even when weights + KV + workspace exceed HBM (fits = false)"),
    ENUM(placement, "placement", "tp,dp,pp|tp,pp,dp|pp,tp,dp|dp,tp,pp", HL_PLACE_TP_DP_PP,
         "rank order in the HBDs, innermost first"),
    ENUM(coll_algo, "coll_algo", "auto|nccl", HL_COLL_ANY, "collective algorithms: every modelled one, or NCCL's only"),
    ENUM(framework, "framework", "ideal|trtllm|vllm|sglang|rocm|vllm_v0|trtllm_v06", HL_FW_IDEAL,
         "serving framework profile: per-pass overhead, GEMM and attention efficiency (docs/MODEL.md 6.1)"),
    NUM(step_overhead, "step_overhead", NULL, 0, 1, 0, "s", 0, "fixed cost per forward pass (0 = the framework's)"),
    NUM(gemm_scale_16, "gemm_scale_16", NULL, 1e-3, 10, 1, "", 0,
        "x eff_gemm for BF16/FP16 GEMMs (0 = the framework's)"),
    NUM(gemm_scale_fp8, "gemm_scale_fp8", NULL, 1e-3, 10, 1, "", 0, "x eff_gemm for FP8 GEMMs (0 = the framework's)"),
    NUM(gemm_scale_fp4, "gemm_scale_fp4", NULL, 1e-3, 10, 1, "", 0, "x eff_gemm for FP4 GEMMs (0 = the framework's)"),
    NUM(attn_scale, "attn_scale", NULL, 1e-3, 10, 1, "", 0, "x eff_attn (0 = the framework's)"),
    INT(redundant_experts, "redundant_experts", NULL, 0, 1e6, 0, 0,
        "extra expert replicas (EPLB): ep divides experts + redundant_experts"),
    NUM(spec_tokens, "spec_tokens", NULL, 0, 64, 0, "", 0,
        "speculative decoding: draft tokens proposed per decode step (0 = off)"),
    NUM(spec_accept, "spec_accept", NULL, 0, 1, 0, "", 0,
        "speculative decoding: acceptance probability of each draft token (needed when spec_tokens > 0); in an "
        "hl.simulate / hl.serve table also a vector {p1, ..., p_gamma}, one per position (docs/MODEL.md 6.2)"),
    NUM(spec_draft_layers, "spec_draft_layers", NULL, 0, 1e3, 0, "", 1,
        "speculative decoding: target-shaped layers run per draft token (MTP module / EAGLE head: 1)"),
    NUM(image_tokens, "image_tokens", NULL, 0, 1e9, 0, "", 0,
        "prompt tokens per sequence that come from images (vision-language models; part of input)"),
    NUM(routing_skew, "routing_skew", NULL, 0, 100, 0, "", 0,
        "Zipf exponent of expert popularity: share of the i-th most popular expert ~ i^-skew (0 = uniform)"),
    BOOL(two_batch_overlap, "two_batch_overlap", 0,
         "MoE layers as two micro-batches, each one's dispatch/combine under the other's compute (SGLang TBO)"),
    NUM(tbo_comm_sms, "tbo_comm_sms", NULL, 0, 0.9, 0, "", 24.0 / 132,
        "share of the SMs the EP kernels hold in prefill under TBO (DeepEP normal kernels: 24 of H100's 132)"),
    BOOL(eplb, "eplb", 0, "place experts on EP ranks by DeepSeek's EPLB for the routing shares (implied by replicas)"),
    ENUM(cuda_graphs, "cuda_graphs", "framework|on|off", 0,
         "kernels replayed from CUDA graphs (on) or launched one by one (off); framework = its profile's"),
    ENUM(fp8_dequant, "fp8_dequant", "fused|unfused", 0,
         "FP8/INT8 GEMMs: scales applied in the GEMM (fused) or, as vLLM's fallback for per-channel weight scales "
         "without CUTLASS (ROCm), by three kernels over an FP32 output (unfused; docs/MODEL.md 6.1)"),
    STR(kernels, "kernels",
        "folder of measured kernel tables (gemm.csv, attention_*.csv, moe.csv, nccl.csv, ...): kernels they "
        "cover take the measured time (docs/MODEL.md 3); \"\" = none"),
};
static const hl_field_set job_set = {"job", job_fields, (int32_t)(sizeof job_fields / sizeof job_fields[0]), NULL};

const hl_field_set *hl_job_fields(void) { return &job_set; }

void hl_job_init(hl_job *job, const hl_model *m, const hl_cluster *c)
{
    memset(job, 0, sizeof *job);
    if (m) /* a NULL model or cluster stays zero: hl_sim_run then refuses it by its fields */
        job->model = *m;
    if (c)
        job->cluster = *c;
    for (int32_t i = 0; i < job_set.count; i++) {
        const hl_field *f = &job_fields[i];
        char *at = (char *)job + f->offset;
        switch (f->type) {
        case HL_FIELD_DOUBLE: *(double *)at = f->def; break;
        case HL_FIELD_INT64: *(int64_t *)at = (int64_t)f->def; break;
        default: *(int32_t *)at = (int32_t)f->def; break; /* bools and enums */
        }
    }
}

/* Number of names of each enum row, counted once (hl_job_check_fields runs on every hl_sim_run). */
static int32_t enum_counts[sizeof job_fields / sizeof job_fields[0]];
static pthread_once_t counts_once = PTHREAD_ONCE_INIT;

static void count_enum_names(void)
{
    for (int32_t i = 0; i < job_set.count; i++) {
        const char *p = job_fields[i].enum_names;
        int32_t n = p ? 1 : 0;
        for (; p && *p; p++)
            n += *p == '|';
        enum_counts[i] = n;
    }
}

/* The fast path checks each row in place; on the first bad value the generic
 * check (the same order) writes the message naming field, value and range. */
hl_status hl_job_check_fields(const hl_job *job, hl_err *err)
{
    if (!job)
        return hl_fail(err, HL_EINVAL, "hl_job_check_fields: the job is NULL");
    pthread_once(&counts_once, count_enum_names);
    for (int32_t i = 0; i < job_set.count; i++) {
        const hl_field *f = &job_fields[i];
        const char *at = (const char *)job + f->offset;
        int ok = 1;
        double v;
        switch (f->type) {
        case HL_FIELD_DOUBLE:
        case HL_FIELD_INT64:
            v = f->type == HL_FIELD_DOUBLE ? *(const double *)at : (double)*(const int64_t *)at;
            ok = (v >= f->min && v <= f->max) || (v == 0 && f->zero_ok);
            break;
        case HL_FIELD_BOOL: ok = *(const int32_t *)at == 0 || *(const int32_t *)at == 1; break;
        case HL_FIELD_ENUM: ok = *(const int32_t *)at >= 0 && *(const int32_t *)at < enum_counts[i]; break;
        case HL_FIELD_STRING: ok = at[f->size - 1] == '\0' || memchr(at, '\0', (size_t)f->size) != NULL; break;
        default: break;
        }
        if (!ok)
            return hl_field_check_all(&job_set, job, err);
    }
    /* the draft model's flag has no descriptor row (spec_draft_model is set as an object): 7 or -1
     * from C or the FFI ran as 1, where every boolean field refuses them */
    if (job->spec_draft != 0 && job->spec_draft != 1)
        return hl_fail(err, HL_EINVAL,
                       "job field 'spec_draft': %d is not a boolean (0 or 1; 1: spec_draft_model holds the draft "
                       "model)",
                       (int)job->spec_draft);
    return HL_OK;
}

int32_t hl_job_kv_precision(const hl_job *job)
{
    return job->kv_precision == HL_PRECISION_AS_ACT ? job->act_precision : job->kv_precision;
}

int32_t hl_job_wire_precision(const hl_job *job)
{
    return job->wire_precision == HL_PRECISION_AS_ACT ? job->act_precision : job->wire_precision;
}

const hl_field *hl_job_field_by_path(const char *path)
{
    if (!path)
        return NULL;
    for (int32_t i = 0; i < job_set.count; i++) {
        const hl_field *f = &job_fields[i];
        if (strcmp(f->path ? f->path : f->name, path) == 0)
            return f;
    }
    return NULL;
}

int hl_job_group_size(const char *group)
{
    if (!group)
        return 0;
    size_t n = strlen(group);
    int count = 0;
    for (int32_t i = 0; i < job_set.count; i++) {
        const char *p = job_fields[i].path;
        count += p && strncmp(p, group, n) == 0 && p[n] == '.';
    }
    return count;
}

const hl_field_set *hl_job_target_set(int target)
{
    switch (target) {
    case HL_TARGET_JOB: return &job_set;
    case HL_TARGET_CLUSTER: return hl_cluster_fields();
    case HL_TARGET_MODEL: return hl_model_fields();
    default: return hl_gpu_fields();
    }
}

void *hl_job_target_ptr(hl_job *job, int target)
{
    switch (target) {
    case HL_TARGET_JOB: return job;
    case HL_TARGET_CLUSTER: return &job->cluster;
    case HL_TARGET_MODEL: return &job->model;
    default: return &job->cluster.gpu;
    }
}

int hl_job_field_target(const char *name, const hl_field **field)
{
    for (int t = 0; t < HL_TARGETS; t++)
        if ((*field = hl_field_find(hl_job_target_set(t), name)) != NULL)
            return t;
    return -1;
}

/* A number given to a group name ("overlap") sets each field of the group; the
 * group's fields must all be doubles. Returns 0 when `name` is no such group. */
static int set_group(hl_job *job, const char *name, double value, hl_status *st, hl_err *err)
{
    size_t n = strlen(name);
    int found = 0;
    for (int32_t i = 0; i < job_set.count; i++) {
        const hl_field *f = &job_fields[i];
        if (!f->path || strncmp(f->path, name, n) != 0 || f->path[n] != '.' || f->type != HL_FIELD_DOUBLE)
            continue;
        found = 1;
        if ((*st = hl_field_set_number_at(&job_set, f, job, value, err)))
            return 1;
    }
    *st = HL_OK;
    return found;
}

hl_status hl_job_set_number(hl_job *job, const char *name, double value, hl_err *err)
{
    if (!job || !name)
        return hl_fail(err, HL_EINVAL, "hl_job_set_number: the %s is NULL", !job ? "job" : "field name");
    const hl_field *f;
    int t = hl_job_field_target(name, &f);
    if (t >= 0)
        return hl_field_set_number_at(hl_job_target_set(t), f, hl_job_target_ptr(job, t), value, err);
    hl_status st;
    if (set_group(job, name, value, &st, err))
        return st;
    return hl_unknown_field(&job_set, name, err);
}

hl_status hl_job_set_string(hl_job *job, const char *name, const char *value, hl_err *err)
{
    if (!job || !name || !value)
        return hl_fail(err, HL_EINVAL, "hl_job_set_string: the %s is NULL",
                       !job    ? "job"
                       : !name ? "field name"
                               : "value");
    const hl_field *f;
    int t = hl_job_field_target(name, &f);
    return t < 0 ? hl_unknown_field(&job_set, name, err)
                 : hl_field_set_string(hl_job_target_set(t), hl_job_target_ptr(job, t), name, value, err);
}

hl_status hl_job_set_expert_freq(hl_job *job, const double *share, int64_t n, hl_err *err)
{
    if (n == 0) {
        job->expert_freq_n = 0;
        return HL_OK;
    }
    if (job->model.experts <= 0)
        return hl_fail(err, HL_EINVAL, "field 'expert_freq': model '%s' is dense (no experts to route to)",
                       job->model.name);
    hl_status st = hl_routing_check(share, n, job->model.experts, (double)job->model.topk, "expert_freq", err);
    if (st)
        return st;
    memset(job->expert_freq, 0, sizeof job->expert_freq);
    memcpy(job->expert_freq, share, (size_t)n * sizeof share[0]);
    job->expert_freq_n = (int32_t)n;
    return HL_OK;
}

hl_status hl_job_set_spec_accept(hl_job *job, const double *accept, int64_t n, hl_err *err)
{
    if (n > 0 && !accept)
        return hl_fail(err, HL_EINVAL, "field 'spec_accept': %lld positions from a NULL vector", (long long)n);
    if (n < 0 || n > HL_SPEC_POSITIONS_MAX)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_accept': a vector of %lld positions (allowed: 1 to %d, one per draft token)",
                       (long long)n, (int)HL_SPEC_POSITIONS_MAX);
    for (int64_t k = 0; k < n; k++)
        if (!(accept[k] > 0 && accept[k] <= 1)) { /* NaN fails too */
            char shown[32];
            hl_field_shown(accept[k], 0x1p-1074, 1, shown); /* 0 < p <= 1 */
            return hl_fail(err, HL_EINVAL,
                           "field 'spec_accept': entry %lld is %s (allowed: 0 < p <= 1, the probability that draft "
                           "position %lld is accepted given the positions before it were)",
                           (long long)k + 1, shown, (long long)k + 1);
        }
    memset(job->spec_accept_pos, 0, sizeof job->spec_accept_pos);
    job->spec_accept_n = (int32_t)n;
    if (n > 0) {
        memcpy(job->spec_accept_pos, accept, (size_t)n * sizeof accept[0]);
        job->spec_accept = 0;
    }
    return HL_OK;
}

hl_status hl_job_check_spec(const hl_job *j, hl_err *err)
{
    if (!j)
        return hl_fail(err, HL_EINVAL, "hl_job_check_spec: the job is NULL");
    if (j->spec_tokens != floor(j->spec_tokens))
        return hl_fail(err, HL_EINVAL, "field 'spec_tokens': %g is not a whole number of draft tokens (0..64)",
                       j->spec_tokens);
    if (j->spec_draft && j->spec_draft_layers > 0)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_draft_layers': %g with spec_draft_model set; give one drafter (the draft "
                       "model, or layers of the target's shape)",
                       j->spec_draft_layers);
    if (j->spec_draft) {
        static _Thread_local hl_job d; /* 11 KB: off the stack */
        hl_status st = hl_job_draft(j, &d, err);
        if (st)
            return st;
        if ((st = hl_model_validate(&j->spec_draft_model, err))) {
            hl_err_prefix(err, "field 'spec_draft_model'");
            return st;
        }
    }
    if (j->spec_accept_n == 0) {
        if (!(j->spec_accept > 0))
            return hl_fail(err, HL_EINVAL,
                           "field 'spec_accept': %g with spec_tokens = %g; give the probability that a draft token "
                           "is accepted (0 < spec_accept <= 1) or one per position ({p1, ..., p%g})",
                           j->spec_accept, j->spec_tokens, j->spec_tokens);
        return HL_OK;
    }
    if (j->spec_accept != 0)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_accept': both a number (%g) and a vector of %d positions were set; give one "
                       "(a sweep axis over the number needs a base job without the vector)",
                       j->spec_accept, (int)j->spec_accept_n);
    if (j->spec_accept_n < 0 || j->spec_accept_n > HL_SPEC_POSITIONS_MAX || (double)j->spec_accept_n != j->spec_tokens)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_accept': a vector of %d positions with spec_tokens = %g (allowed: exactly one "
                       "acceptance per draft token)",
                       (int)j->spec_accept_n, j->spec_tokens);
    for (int32_t k = 0; k < j->spec_accept_n; k++)
        if (!(j->spec_accept_pos[k] > 0 && j->spec_accept_pos[k] <= 1)) {
            char shown[32];
            hl_field_shown(j->spec_accept_pos[k], 0x1p-1074, 1, shown);
            return hl_fail(err, HL_EINVAL, "field 'spec_accept': entry %d is %s (allowed: 0 < p <= 1)", (int)k + 1,
                           shown);
        }
    return HL_OK;
}

hl_status hl_job_draft(const hl_job *job, hl_job *d, hl_err *err)
{
    if (!job || !d)
        return hl_fail(err, HL_EINVAL, "hl_job_draft: the %s is NULL", !job ? "job" : "draft job");
    const hl_model *t = &job->model, *m = &job->spec_draft_model;
    if (job->pp > 1)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_draft_model': a draft model is modelled for pp = 1 (got pp = %lld); it runs "
                       "with the target's TP on the target's GPUs",
                       (long long)job->pp);
    if (m->vocab != t->vocab)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_draft_model': '%s' has a vocabulary of %lld tokens, the target '%s' %lld "
                       "(allowed: the same vocabulary; vLLM's draft-model speculation requires it)",
                       m->name, (long long)m->vocab, t->name, (long long)t->vocab);
    *d = *job;
    d->model = *m;
    memset(&d->spec_draft_model, 0, sizeof d->spec_draft_model);
    d->spec_draft = 0;
    d->spec_tokens = d->spec_accept = 0;
    d->spec_accept_n = 0;
    memset(d->spec_accept_pos, 0, sizeof d->spec_accept_pos);
    d->spec_draft_layers = 0;
    /* the target's TP groups and DP ranks, one stage, experts (if any) over the TP group */
    d->pp = 1;
    d->ep = 1;
    d->etp = 0;
    d->gpus = job->gpus; /* one stage: dp (0 = gpus / tp) as the target's */
    d->dp = job->dp;
    d->microbatches = 0;
    d->two_batch_overlap = 0;
    d->redundant_experts = 0;
    d->eplb = 0;
    d->routing_skew = 0;
    if (d->expert_freq_n > 0)
        memset(d->expert_freq, 0, (size_t)d->expert_freq_n * sizeof d->expert_freq[0]);
    d->expert_freq_n = 0;
    d->imbalance = 0;
    d->image_tokens = 0;
    return HL_OK;
}

hl_status hl_job_read_expert_freq(hl_job *job, const char *path, hl_err *err)
{
    char *text = NULL;
    hl_status st = hl_read_file(path, &text, err);
    if (st) {
        hl_err_prefix(err, "field 'expert_freq'");
        return st;
    }
    double share[HL_EXPERTS_MAX];
    int64_t n = 0, line = 1;
    for (char *p = text; *p;) {
        if (*p == '#') { /* comment to the end of the line */
            while (*p && *p != '\n')
                p++;
        } else if (*p == '\n') {
            line++;
            p++;
        } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == ',' || *p == '[' || *p == ']') {
            p++;
        } else {
            char *end;
            double v = strtod(p, &end);
            if (end == p || (*end && !strchr(" \t\r\n,]#", *end))) {
                st = hl_fail(err, HL_EINVAL, "field 'expert_freq': %s:%lld: '%.20s' is not a number", path,
                             (long long)line, p);
                break;
            }
            if (n == HL_EXPERTS_MAX) {
                st = hl_fail(err, HL_EINVAL, "field 'expert_freq': %s holds more than %d shares", path,
                             (int)HL_EXPERTS_MAX);
                break;
            }
            share[n++] = v;
            p = end;
        }
    }
    hl_free(text);
    if (!st && n == 0)
        st = hl_fail(err, HL_EINVAL, "field 'expert_freq': %s holds no shares", path);
    if (!st && (st = hl_job_set_expert_freq(job, share, n, err)) != HL_OK)
        hl_err_prefix(err, path);
    return st;
}
