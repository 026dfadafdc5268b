/* The job: what one simulation runs (model, cluster, precisions, batch and
 * lengths, the parallel mapping, overlap and memory settings). Its fields are
 * declared once, in the descriptor table of core/src/job.c (name, type, unit,
 * range, help); hl.simulate, sweep axes, `hbdlab eval` JSON and the help text
 * all go through that table. */
#ifndef HBDLAB_JOB_H
#define HBDLAB_JOB_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/fields.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kv_precision / wire_precision value meaning "the same as act_precision" (the
 * default): one past the last hl_precision, named "act" in the field table. */
enum { HL_PRECISION_AS_ACT = 6 };

typedef enum hl_dispatch {
    HL_DISPATCH_FLAT = 0,        /* every expert-TP shard receives each routed token's full hidden vector */
    HL_DISPATCH_HIERARCHICAL = 1 /* one copy per expert, then an AllGather inside the expert-TP group */
} hl_dispatch;

/* Collective algorithms a job may use (coll_algo). */
typedef enum hl_coll_choice {
    HL_COLL_ANY = 0, /* fastest of every modelled algorithm (one-shot AllReduce included) */
    HL_COLL_NCCL = 1 /* fastest of the algorithms NCCL implements (ring, tree, NVLS, hierarchical) */
} hl_coll_choice;

/* Serving framework whose measured behaviour a job takes (framework profiles,
 * docs/MODEL.md section 6.1). ideal = the roofline model alone. */
typedef enum hl_framework {
    HL_FW_IDEAL = 0,
    HL_FW_TRTLLM = 1,
    HL_FW_VLLM = 2,
    HL_FW_SGLANG = 3,
    HL_FW_ROCM = 4,       /* vLLM on ROCm (AMD Instinct): the only ROCm engine with public cases here */
    HL_FW_VLLM_V0 = 5,    /* vLLM 0.6.x's V0 engine, one scheduler step per forward pass (2024) */
    HL_FW_TRTLLM_V06 = 6, /* TensorRT-LLM v0.6.1 as its performance page ran it: gptSessionBenchmark (Dec 2023) */
    HL_FW_COUNT = 7
} hl_framework;

/* What a framework adds to the roofline model. Scales multiply the GPU's
 * eff_gemm / eff_attn; the step overhead is s per forward pass (decode step). */
typedef struct hl_fw_profile {
    double step_overhead;  /* s per forward pass not hidden under GPU work (scheduling, sampling, launch) */
    double gemm_scale_16;  /* x eff_gemm for BF16/FP16 (and FP32) GEMMs */
    double gemm_scale_fp8; /* x eff_gemm for FP8/INT8 GEMMs */
    double gemm_scale_fp4; /* x eff_gemm for FP4 GEMMs */
    double attn_scale;     /* x eff_attn */
    int32_t allreduce;     /* hl_coll_algo of its tensor-parallel all-reduce (HL_ALGO_AUTO = the job's coll_algo) */
    int32_t cuda_graphs;   /* 1: its forward passes replay CUDA graphs (each kernel costs kernel_latency) */
    /* Kernels per transformer layer it launches beside hbdlab's operators (docs/MODEL.md 6.1):
     * RoPE, KV-cache append, the FFN activation, the second RMSNorm (the norms operator is one kernel) */
    int32_t rope_kernel, kv_append_kernel, act_kernel, norm_kernel;
    /* 1: the job's mem_util is the KV cache's share of the memory left free once weights and workspace
     * are loaded (TensorRT-LLM's free_gpu_memory_fraction); 0: the share of HBM that weights, workspace
     * and KV together may use (vLLM's gpu_memory_utilization). docs/MODEL.md 4 */
    int32_t kv_of_free;
    /* its decode attention kernel beside the fitted ones (docs/MODEL.md 3, 6.1): 1 = one CTA per
     * sequence x query head (0: per KV head), and the CTAs resident per SM (0: the fitted kernels' 1) */
    double attn_unit_qheads, attn_ctas_per_sm;
} hl_fw_profile;

/* The profile of framework fw (ideal for an unknown value). */
hl_fw_profile hl_framework_profile(int32_t fw);

/* Scales g's GEMM efficiencies by class (BF16/FP16, FP8/INT8, FP4) and its
 * attention efficiency, as a framework profile does (docs/MODEL.md 6.1). */
void hl_gpu_apply_framework(hl_gpu *g, double gemm_scale_16, double gemm_scale_fp8, double gemm_scale_fp4,
                            double attn_scale);

/* Sets g's decode attention kernel fields (attn_unit_qheads, attn_ctas_per_sm) to the profile's
 * where the GPU leaves them 0 (a GPU's own values win). docs/MODEL.md 3. */
void hl_gpu_apply_attn_kernel(hl_gpu *g, const hl_fw_profile *p);

/* Rank order over the cluster, innermost first (ranks fill HBDs in order).
 * dp stands for the data-parallel / expert-parallel groups of a stage. */
typedef enum hl_placement {
    HL_PLACE_TP_DP_PP = 0, /* default: TP groups inside an HBD, then DP/EP, pipeline stages outermost */
    HL_PLACE_TP_PP_DP = 1, /* TP, then pipeline neighbours, then DP/EP */
    HL_PLACE_PP_TP_DP = 2, /* pipeline neighbours innermost */
    HL_PLACE_DP_TP_PP = 3  /* DP/EP innermost: TP groups strided across the HBD */
} hl_placement;

/* Most draft positions a per-position acceptance vector may give (spec_accept = {...}). */
enum { HL_SPEC_POSITIONS_MAX = 16 };

typedef struct hl_job {
    hl_model model;
    hl_cluster cluster;
    int32_t precision;      /* hl_precision of weights and GEMM math */
    int32_t kv_precision;   /* hl_precision of the KV cache, or HL_PRECISION_AS_ACT (the default) */
    int32_t act_precision;  /* hl_precision of activations (attention math, norms, TP AllReduce) */
    int32_t wire_precision; /* hl_precision of MoE dispatch payloads (combine uses act_precision),
                                or HL_PRECISION_AS_ACT (the default) */
    double batch;           /* concurrent sequences in the whole job */
    double input;           /* prompt tokens per sequence */
    double output;          /* generated tokens per sequence (first one comes from prefill) */
    int64_t tp;             /* attention (and dense FFN) tensor parallelism */
    int64_t pp;             /* pipeline stages */
    int64_t ep;             /* expert parallelism (MoE): experts spread over ep groups */
    int64_t dp;             /* attention data parallelism; 0 = gpus / (tp * pp) */
    int64_t etp;            /* tensor parallelism inside each expert; 0 = gpus / (pp * ep) */
    int64_t gpus;           /* GPUs used; 0 = the whole cluster */
    double overlap_prefill; /* fraction 0..1 of communication hidden under compute */
    double overlap_decode;
    double imbalance;          /* tokens of the busiest EP rank / mean (>= 1); 0 = from the routing model */
    double layer_overhead;     /* s added per layer per forward pass (launch, sync) */
    int32_t dispatch;          /* hl_dispatch */
    double microbatches;       /* pipeline micro-batches in flight; 0 = pp */
    double mem_util;           /* fraction of HBM usable (default 0.9) */
    double workspace_bytes;    /* activation workspace per GPU; 0 = estimated */
    int32_t exact_steps;       /* 1: sum decode step by step (reference mode) */
    int32_t summary_only;      /* 1: skip the per-operator breakdown and events (sweeps) */
    int32_t sequence_parallel; /* 1: TP AllReduce -> ReduceScatter + AllGather; norms on T/tp tokens */
    int32_t placement;         /* hl_placement: which dimension is innermost in the HBD */
    int32_t ignore_memory;     /* 1: a job that does not fit HBM still runs (fits = 0); 0: HL_ENOFIT */
    int32_t coll_algo;         /* hl_coll_choice: collective algorithms allowed (default any) */
    int32_t framework;         /* hl_framework (default ideal) */
    /* Overrides of the framework profile; 0 = the profile's value. */
    double step_overhead; /* s per forward pass */
    double gemm_scale_16, gemm_scale_fp8, gemm_scale_fp4, attn_scale;
    int64_t redundant_experts; /* extra expert replicas (EPLB): experts + redundant_experts slots over ep */
    /* Speculative decoding / MTP (docs/MODEL.md 6.2); spec_tokens = 0: off. */
    double spec_tokens;       /* draft tokens proposed per decode step (gamma) */
    double spec_accept;       /* probability that each draft token is accepted (alpha, i.i.d. per position) */
    double spec_draft_layers; /* target-shaped layers the drafter runs per draft token (MTP module / EAGLE head: 1) */
    /* Per-position acceptance (spec_accept = {a1, ..., a_gamma}): entry k-1 is the probability that
     * draft position k is accepted given positions < k were; spec_accept_n = 0: the scalar
     * spec_accept, i.i.d. per position. Entries past spec_accept_n are 0 (hl_job_set_spec_accept). */
    int32_t spec_accept_n;
    double spec_accept_pos[HL_SPEC_POSITIONS_MAX];
    /* A draft model of its own (spec_draft_model = <model>; docs/MODEL.md 6.2): spec_draft = 1 and
     * its shape in spec_draft_model, run with the target's TP on the same GPUs; 0: the drafter is
     * spec_draft_layers layers of the target's shape (the bytes of spec_draft_model are then zero). */
    int32_t spec_draft;
    hl_model spec_draft_model;
    double image_tokens; /* of `input`, the prompt tokens that are image tokens (vision-language models):
                            the vision encoder runs on image_tokens * vision_merge^2 patches in prefill */
    /* Routing statistics (docs/MODEL.md 6, expert load): uniform by default. */
    double routing_skew;       /* Zipf exponent of expert popularity (0 = uniform) */
    int32_t eplb;              /* 1: experts placed by DeepSeek's EPLB for the routing shares (implied by replicas) */
    int32_t expert_freq_n;     /* entries of expert_freq; 0 = none (uniform or routing_skew) */
    double expert_freq[1024];  /* measured share of routed picks per expert (sum 1); HL_EXPERTS_MAX entries */
    int32_t cuda_graphs;       /* 0: the framework's; 1: kernels replayed from CUDA graphs; 2: launched one by one */
    int32_t fp8_dequant;       /* 0: FP8/INT8 GEMMs dequantise in their epilogue; 1: unfused, three elementwise kernels
                                  over each GEMM's FP32 output (per-channel scales without CUTLASS, docs/MODEL.md 6.1) */
    int32_t two_batch_overlap; /* 1: MoE layers run as two micro-batches, each one's dispatch/combine under the
                                  other's compute (SGLang's TBO, docs/MODEL.md 6.5); hl.simulate only */
    double tbo_comm_sms;       /* fraction of the SMs the EP communication kernels hold while they run in
                                  prefill under TBO (compute there runs on the rest; default 24/132) */
    char kernels[256];         /* folder of measured kernel tables (kernels.h), "" = none: the analytic model */
} hl_job;

/* ---- Defaults and validation ---- */

/* Fills the defaults of the field table: bf16 weights and activations, KV and
 * wire precision as the activations, batch 1, input 1024, output 128,
 * tp = pp = ep = 1, mem_util 0.9, imbalance from uniform routing, flat dispatch. */
void hl_job_init(hl_job *job, const hl_model *m, const hl_cluster *c);

/* Checks every job field (not the model or cluster) against its table range;
 * the error names the field, the value and what is allowed. */
hl_status hl_job_check_fields(const hl_job *job, hl_err *err);

/* The precision the KV cache and the MoE dispatch payload are stored in, with
 * HL_PRECISION_AS_ACT resolved to act_precision (an hl_precision). */
int32_t hl_job_kv_precision(const hl_job *job);
int32_t hl_job_wire_precision(const hl_job *job);

/* Sets the measured routing histogram: n shares, one per expert of the job's
 * model, each in [0, 1/topk], summing to 1 (errors name 'expert_freq'); n = 0
 * clears it. */
hl_status hl_job_set_expert_freq(hl_job *job, const double *share, int64_t n, hl_err *err);

/* Reads a routing histogram from a text file (numbers separated by white space
 * or commas, '#' starts a comment; a JSON array also reads) and sets it as
 * hl_job_set_expert_freq does; the error names the field and the file. */
hl_status hl_job_read_expert_freq(hl_job *job, const char *path, hl_err *err);

/* Sets the per-position acceptance vector: n entries, each in (0, 1] (errors name 'spec_accept'
 * with the entry, its value and what is allowed), 1 <= n <= HL_SPEC_POSITIONS_MAX; n = 0 clears it.
 * The scalar spec_accept is set to 0 (the vector replaces it). */
hl_status hl_job_set_spec_accept(hl_job *job, const double *accept, int64_t n, hl_err *err);

/* The acceptance model of a job with spec_tokens > 0, checked: a whole number of draft tokens, a
 * scalar spec_accept in (0, 1] or a vector of exactly spec_tokens entries, not both. Errors name
 * the field, its value and what is allowed. */
hl_status hl_job_check_spec(const hl_job *job, hl_err *err);

/* Probability that draft position k (0-based, k < spec_tokens) is accepted given positions < k
 * were: the vector's entry k, else the scalar spec_accept. */
/* The job the draft model of `job` runs as (spec_draft = 1): the job with the draft's model, no
 * speculation, one stage, no expert parallelism, the target's TP and DP on the target's GPUs.
 * Errors: a pipeline of stages (pp > 1), a draft whose vocabulary differs from the target's
 * (vLLM requires the same tokenizer), named 'spec_draft_model'. */
hl_status hl_job_draft(const hl_job *job, hl_job *draft, hl_err *err);

static inline double hl_job_spec_accept_at(const hl_job *job, int64_t k)
{
    return job->spec_accept_n > 0 ? job->spec_accept_pos[k] : job->spec_accept;
}

/* ---- Fields by name ---- */

/* Descriptor table of the job's own fields. */
const hl_field_set *hl_job_fields(void);

/* Sets one field of a job by name: job fields (batch, tp, precision, ...),
 * then cluster fields (hbd, gpus, scaleout_bw, ...), model fields (experts,
 * topk, ...) and gpu fields (eff_gemm, ...). A group name (the part before the
 * dot of a field's path, e.g. "overlap") given a number sets every field of
 * the group; the error for an unknown name suggests the closest one. */
hl_status hl_job_set_number(hl_job *job, const char *name, double value, hl_err *err);
hl_status hl_job_set_string(hl_job *job, const char *name, const char *value, hl_err *err);

/* The job field whose path is `path` ("parallel.tp", or a plain name such as
 * "batch"); NULL when none. */
const hl_field *hl_job_field_by_path(const char *path);

/* Number of job fields whose path is "<group>.<name>" ("parallel", "overlap");
 * 0 when `group` is no group. */
int hl_job_group_size(const char *group);

#ifdef __cplusplus
}
#endif
#endif
