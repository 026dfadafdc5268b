/* Accelerators and clusters: what a GPU can do and how GPUs are wired into
 * high-bandwidth domains (HBDs) and a scale-out network. SI units throughout. */
#ifndef HBDLAB_HW_H
#define HBDLAB_HW_H
#include "hbdlab/status.h"
#include "hbdlab/fields.h"
#include "hbdlab/precision.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- accelerator --------------------------------------------------------- */
typedef struct hl_gpu {
    char name[48];
    double peak_flops[6];    /* FLOP/s dense, indexed by hl_precision; 0 = unsupported */
    double hbm_bytes;        /* B usable by the application */
    double hbm_bw;           /* B/s peak */
    double scaleup_bw;       /* B/s per direction per GPU, all scale-up links together */
    double scaleout_bw;      /* B/s per direction per GPU (its NIC) */
    double scaleup_latency;  /* s per algorithm step between GPUs of one HBD */
    double scaleout_latency; /* s per algorithm step across HBDs */
    double coll_launch;      /* s fixed cost of launching one collective */
    double kernel_latency;   /* s fixed cost added to every kernel (launch and tail; replayed from a CUDA graph) */
    double kernel_launch;    /* s host cost of launching one kernel outside a CUDA graph (eager mode) */
    double gemm_tile_rows;   /* GEMM kernels compute whole tiles of this many rows (1 = no padding) */
    double eff_gemm;         /* fraction of peak FLOP/s reached by large BF16/FP16 GEMMs */
    double eff_attn;         /* fraction of peak FLOP/s reached by fused (prefill) attention */
    double eff_mem;          /* fraction of hbm_bw reached by streaming kernels and BF16 GEMMs */
    /* Shape-aware kernel model (docs/MODEL.md section 3; 0 = the field it falls back to, or none) */
    double gemm_blend;         /* p of the blend (c^p + m^p + k^p)^(1/p) of GEMM limits; 0 = max */
    double gemm_k_latency;     /* s per element of K: the serial main loop of a BF16 GEMM */
    double eff_gemm_fp8;       /* fraction of the FP8 peak reached by large FP8 GEMMs (0 = eff_gemm) */
    double eff_mem_fp8;        /* fraction of hbm_bw reached by FP8 GEMMs (0 = eff_mem) */
    double gemm_latency_fp8;   /* s fixed per FP8 GEMM beyond kernel_latency (scales, quantisation launch) */
    double gemm_k_latency_fp8; /* s per element of K of an FP8 GEMM (0 = gemm_k_latency) */
    double quant_bytes_fp8;    /* B moved per activation element by the FP8 GEMM's activation quantisation */
    double gemm_k0;            /* elements of K of a dense GEMM tile's fixed prologue/epilogue: compute efficiency
                                  x K / (K + gemm_k0) (0 = off) */
    double gemm_k0_fp8;        /* the same for FP8/INT8/FP4 dense GEMMs (0 = gemm_k0) */
    double eff_gemm_fp4;       /* as the fp8 fields, for FP4 GEMMs (0 = the fp8 value) */
    double eff_mem_fp4;
    double gemm_latency_fp4;
    double gemm_k_latency_fp4;
    double quant_bytes_fp4;
    double eff_mem_attn;         /* fraction of hbm_bw reached reading the KV cache in decode (0 = eff_mem) */
    double attn_latency;         /* s fixed per attention kernel beyond kernel_latency */
    double attn_unit_s;          /* s per (sequence x KV head) work unit of an attention kernel */
    double attn_blend;           /* p of a decode kernel's (stream^p + units^p)^(1/p); 0 or 1 = their sum */
    double attn_unit_qheads;     /* 1: the decode kernel runs one CTA per sequence x query head (TensorRT-LLM's
                                    MMHA), 0: per sequence x KV head (the fitted kernels) */
    double attn_ctas_per_sm;     /* decode CTAs resident per SM, relative to the fitted kernels' 1: the units'
                                    cost is attn_unit_s / attn_ctas_per_sm (0 = 1) */
    double attn_tile_rows;       /* prefill attention computes whole tiles of this many query rows (0 = none) */
    double attn_tile_s;          /* s per (sequence x query head x query tile) of prefill attention */
    double attn_prefill_latency; /* s fixed per prefill attention (more than one query row) beyond attn_latency */
    double moe_latency;          /* s fixed per MoE layer: routing, permutation, un-permutation kernels */
    double grouped_k0;     /* elements of K at which a grouped expert GEMM reaches half its efficiency (0 = off) */
    double grouped_k0_fp8; /* the same for FP8/INT8/FP4 expert GEMMs (0 = grouped_k0) */
    double moe_perm_bytes; /* B moved per routed token row per hidden element outside the expert GEMMs (0 = off) */
    double eff_grouped;    /* grouped (expert) GEMMs reach this fraction of a dense GEMM's compute efficiency (0 = 1) */
    double eff_scaleup;    /* fraction of scaleup_bw reached by bandwidth-bound collectives */
    double eff_scaleout;   /* fraction of scaleout_bw reached by bandwidth-bound collectives */
    int32_t in_switch_reduce; /* 1 when the scale-up switch can reduce (NVLS) */
    double in_switch_eff;     /* fraction of scaleup_bw reached by in-switch AllReduce */
    double in_switch_latency; /* s per in-switch (NVLS) operation */
    double custom_ar_latency; /* s per stage of an engine's custom (one-/two-shot) all-reduce kernel */
    double custom_ar_eff;     /* fraction of scaleup_bw a custom all-reduce kernel reads peers at */
    double tdp_w;             /* W, informational */
    double capex_usd;         /* USD per GPU: the GPU and its share of the server, without networking; 0 = unknown */
    double scaleup_usd;    /* USD per GPU: its share of scale-up switches, NVLink cables (default of the cluster's) */
    double scaleout_usd;   /* USD per GPU: NIC, scale-out switch ports, optics (default of the cluster's) */
    double power_w;        /* W per GPU at the wall of the server while kernels run (0 = tdp_w) */
    double idle_w;         /* W per GPU at the wall of the server while waiting (communication, idle) */
    char cost_source[400]; /* where the cost and power numbers come from */
    char source[640];      /* where the numbers come from */
} hl_gpu;

/* Descriptor table of hl_gpu (JSON keys and Lua fields). */
const hl_field_set *hl_gpu_fields(void);

/* Zeroes g and sets the documented default efficiencies and latencies. */
void hl_gpu_init_defaults(hl_gpu *g);

/* Checks ranges and consistency (a GPU needs BF16 or FP16 compute, HBM, etc.). */
hl_status hl_gpu_validate(const hl_gpu *gpu, hl_err *err);

/* Peak dense FLOP/s at precision p, or HL_EUNSUPPORTED naming the GPU. */
hl_status hl_gpu_peak(const hl_gpu *gpu, hl_precision p, double *flops, hl_err *err);

/* ---- cluster ------------------------------------------------------------- */
typedef enum hl_fabric {
    HL_FABRIC_SWITCH = 0, /* switched scale-up: every GPU reaches any peer at full scaleup_bw */
    HL_FABRIC_MESH = 1    /* switchless full mesh: each peer gets scaleup_bw/(hbd-1) */
} hl_fabric;

typedef struct hl_cluster {
    char name[48];
    hl_gpu gpu;
    int64_t gpus;            /* GPUs in the cluster */
    int64_t hbd;             /* GPUs per high-bandwidth domain; must divide gpus */
    int32_t fabric;          /* hl_fabric */
    double scaleup_bw;       /* B/s per direction per GPU (from gpu unless overridden) */
    double scaleout_bw;      /* B/s per direction per GPU */
    double scaleup_latency;  /* s per step inside an HBD */
    double scaleout_latency; /* s per step across HBDs */
    double coll_launch;      /* s per collective */
    double eff_scaleup;
    double eff_scaleout;
    int32_t in_switch_reduce;
    double in_switch_eff;
    double in_switch_latency;
    double custom_ar_latency; /* s per stage of a custom all-reduce (from gpu unless overridden) */
    double custom_ar_eff;     /* fraction of scaleup_bw of a custom all-reduce */
    double peer_cost;         /* s per remote peer a GPU exchanges with (message setup); default 0 */
    double scaleup_usd;       /* USD per GPU share of the scale-up fabric (from gpu unless overridden) */
    double scaleout_usd;      /* USD per GPU share of the scale-out network (from gpu unless overridden) */
    double amort_years;       /* years over which capex is amortised (docs/MODEL.md section 10) */
    double pue;               /* power usage effectiveness: facility power / IT power (>= 1) */
    double usd_per_kwh;       /* electricity price, USD per kWh */
} hl_cluster;

/* Descriptor table of hl_cluster (without the nested gpu). */
const hl_field_set *hl_cluster_fields(void);

/* Fills a cluster of `gpus` GPUs in HBDs of `hbd`, link fields copied from gpu. */
hl_status hl_cluster_init(hl_cluster *c, const hl_gpu *gpu, int64_t gpus, int64_t hbd, hl_err *err);

/* Checks the cluster: hbd divides gpus, hbd <= gpus, links positive. */
hl_status hl_cluster_validate(const hl_cluster *c, hl_err *err);

/* Number of HBDs (gpus / hbd). */
int64_t hl_cluster_hbds(const hl_cluster *c);

#ifdef __cplusplus
}
#endif
#endif
