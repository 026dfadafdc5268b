/* One inference job on a cluster: prefill and decode of a batch, with the
 * model mapped by tensor, pipeline, expert and data parallelism onto HBDs.
 * Formulas: docs/MODEL.md section 6. */
#ifndef HBDLAB_SIM_H
#define HBDLAB_SIM_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"
#include "hbdlab/cost.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    HL_FW_COUNT = 4
} hl_framework;

/* What a framework adds to the roofline model. Scales multiply the GPU's
 * eff_gemm / eff_attn; the step overhead is s per forward pass (decode step). */
typedef struct hl_fw_profile {
    double step_overhead;   /* s per forward pass not hidden under GPU work (scheduling, sampling, launch) */
    double gemm_scale_16;   /* x eff_gemm for BF16/FP16 (and FP32) GEMMs */
    double gemm_scale_fp8;  /* x eff_gemm for FP8/INT8 GEMMs */
    double gemm_scale_fp4;  /* x eff_gemm for FP4 GEMMs */
    double attn_scale;      /* x eff_attn */
} hl_fw_profile;

/* The profile of framework fw (ideal for an unknown value). */
hl_fw_profile hl_framework_profile(int32_t fw);

/* Rank order over the cluster, innermost first (ranks fill HBDs in order).
 * dp stands for the data-parallel / expert-parallel groups of a stage. */
typedef enum hl_placement {
    HL_PLACE_TP_DP_PP = 0, /* default: TP groups inside an HBD, then DP/EP, pipeline stages outermost */
    HL_PLACE_TP_PP_DP = 1, /* TP, then pipeline neighbours, then DP/EP */
    HL_PLACE_PP_TP_DP = 2, /* pipeline neighbours innermost */
    HL_PLACE_DP_TP_PP = 3  /* DP/EP innermost: TP groups strided across the HBD */
} hl_placement;

typedef struct hl_job {
    hl_model model;
    hl_cluster cluster;
    int32_t precision;       /* hl_precision of weights and GEMM math */
    int32_t kv_precision;    /* hl_precision of the KV cache */
    int32_t act_precision;   /* hl_precision of activations (attention math, norms, TP AllReduce) */
    int32_t wire_precision;  /* hl_precision of MoE dispatch payloads (combine uses act_precision) */
    double batch;            /* concurrent sequences in the whole job */
    double input;            /* prompt tokens per sequence */
    double output;           /* generated tokens per sequence (first one comes from prefill) */
    int64_t tp;              /* attention (and dense FFN) tensor parallelism */
    int64_t pp;              /* pipeline stages */
    int64_t ep;              /* expert parallelism (MoE): experts spread over ep groups */
    int64_t dp;              /* attention data parallelism; 0 = gpus / (tp * pp) */
    int64_t etp;             /* tensor parallelism inside each expert; 0 = gpus / (pp * ep) */
    int64_t gpus;            /* GPUs used; 0 = the whole cluster */
    double overlap_prefill;  /* fraction 0..1 of communication hidden under compute */
    double overlap_decode;
    double imbalance;        /* tokens of the busiest expert / mean (>= 1) */
    double layer_overhead;   /* s added per layer per forward pass (launch, sync) */
    int32_t dispatch;        /* hl_dispatch */
    double microbatches;     /* pipeline micro-batches in prefill; 0 = pp */
    double mem_util;         /* fraction of HBM usable (default 0.9) */
    double workspace_bytes;  /* activation workspace per GPU; 0 = estimated */
    int32_t exact_steps;     /* 1: sum decode step by step (reference mode) */
    int32_t summary_only;    /* 1: skip the per-operator breakdown and events (sweeps) */
    int32_t sequence_parallel; /* 1: TP AllReduce -> ReduceScatter + AllGather; norms on T/tp tokens */
    int32_t placement;       /* hl_placement: which dimension is innermost in the HBD */
    int32_t ignore_memory;   /* 1: a job that does not fit HBM still runs (fits = 0); 0: HL_ENOFIT */
    int32_t coll_algo;       /* hl_coll_choice: collective algorithms allowed (default any) */
    int32_t framework;       /* hl_framework (default ideal) */
    /* Overrides of the framework profile; 0 = the profile's value. */
    double step_overhead;    /* s per forward pass */
    double gemm_scale_16, gemm_scale_fp8, gemm_scale_fp4, attn_scale;
} hl_job;

/* Time of one phase (prefill, or the whole decode) on the critical path. */
typedef struct hl_phase {
    double time_s;        /* phase duration */
    double compute_s;     /* operators whose roofline is compute-bound */
    double memory_s;      /* operators whose roofline is HBM-bound */
    double comm_s;        /* exposed communication (after overlap) */
    double overhead_s;    /* fixed per-layer overhead */
    double comm_share;    /* comm_s / time_s */
    double scaleup_comm_s;   /* exposed communication bound by scale-up links */
    double scaleout_comm_s;  /* exposed communication that crosses HBDs */
    double latency_comm_s;   /* latency (size-independent) part of communication */
    double flops;         /* FLOP per GPU */
    double hbm_bytes;     /* B moved to/from HBM per GPU */
} hl_phase;

enum { HL_SIM_MAX_ITEMS = 16 };

/* One row of a breakdown: an operator or a collective, per layer-pass summed over the phase. */
typedef struct hl_item {
    char name[32];
    int32_t is_comm;      /* 1 for a collective */
    int32_t tier;         /* collectives: 0 inside one HBD, 1 crosses HBDs */
    double time_s;        /* summed over the phase (collectives before overlap) */
    double bytes;         /* B per GPU (HBM for operators, sent for collectives) */
    double flops;         /* FLOP per GPU */
} hl_item;

/* One kernel or collective of one layer pass (prefill) or one decode step, in
 * issue order, for traces. */
typedef struct hl_event {
    char name[32];
    int32_t is_comm;
    int32_t tier;         /* collectives: 0 scale-up, 1 scale-out */
    int32_t layer_kind;   /* 0 every layer, 1 dense-FFN layers, 2 MoE layers, 3 once per pass */
    double dur_s;         /* one execution */
    double bytes;         /* HBM bytes (operators) or bytes sent per GPU (collectives) */
    double flops;
} hl_event;

typedef struct hl_result {
    double ttft_s;
    double tpot_s;             /* mean over the output-1 decode steps */
    double total_s;            /* ttft + decode time */
    double decode_tps;         /* decode-phase tokens / decode-phase time (whole job) */
    double tps_per_gpu;        /* generated tokens / total_s / gpus */
    double tps_per_gpu_incl_prompt; /* (prompt + generated) tokens / total_s / gpus */
    hl_phase prefill;
    hl_phase decode;
    int32_t bound;             /* 0 compute, 1 HBM, 2 scale-up, 3 scale-out, 4 latency */
    double weights_bytes;      /* per GPU */
    double kv_bytes;           /* per GPU at the largest context */
    double workspace_bytes;    /* per GPU */
    double per_gpu_bytes;      /* weights + KV + workspace */
    int32_t fits;              /* per_gpu_bytes <= hbm * mem_util */
    int64_t gpus, tp, pp, ep, dp, etp; /* mapping as resolved */
    hl_cost cost;              /* cost and energy per token (docs/MODEL.md section 11) */
    int32_t n_prefill_items, n_decode_items;
    hl_item prefill_items[16]; /* HL_SIM_MAX_ITEMS */
    hl_item decode_items[16];
    int32_t n_prefill_events, n_decode_events;
    hl_event prefill_events[40]; /* one layer of each kind + the per-pass ops */
    hl_event decode_events[40];  /* one decode step at the mean context */
} hl_result;

/* Fills documented defaults: bf16 everywhere, batch 1, input 1024, output 128,
 * tp = pp = ep = 1, mem_util 0.9, imbalance 1, flat dispatch. */
void hl_job_init(hl_job *job, const hl_model *m, const hl_cluster *c);

/* Resolves dp/etp/gpus and checks the mapping; names the violated rule. */
hl_status hl_job_validate(const hl_job *job, hl_err *err);

/* Runs the job. A job whose weights + KV + workspace exceed mem_util of HBM
 * fails with HL_ENOFIT saying by how many GB, unless ignore_memory is set (then
 * it runs with fits = 0); invalid input returns an error. */
hl_status hl_sim_run(const hl_job *job, hl_result *out, hl_err *err);

/* Name of a bound value ("compute", "hbm", "scale-up", "scale-out", "latency"). */
const char *hl_bound_name(int32_t bound);

#ifdef __cplusplus
}
#endif
#endif
