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
    double peak_flops[6];     /* FLOP/s dense, indexed by hl_precision; 0 = unsupported */
    double hbm_bytes;         /* B usable by the application */
    double hbm_bw;            /* B/s peak */
    double scaleup_bw;        /* B/s per direction per GPU, all scale-up links together */
    double scaleout_bw;       /* B/s per direction per GPU (its NIC) */
    double scaleup_latency;   /* s per algorithm step between GPUs of one HBD */
    double scaleout_latency;  /* s per algorithm step across HBDs */
    double coll_launch;       /* s fixed cost of launching one collective */
    double kernel_latency;    /* s fixed cost added to every kernel (launch and tail) */
    double gemm_tile_rows;    /* GEMM kernels compute whole tiles of this many rows (1 = no padding) */
    double eff_gemm;          /* fraction of peak FLOP/s reached by large GEMMs */
    double eff_attn;          /* fraction of peak FLOP/s reached by fused attention */
    double eff_mem;           /* fraction of hbm_bw reached by streaming kernels */
    double eff_scaleup;       /* fraction of scaleup_bw reached by bandwidth-bound collectives */
    double eff_scaleout;      /* fraction of scaleout_bw reached by bandwidth-bound collectives */
    int32_t in_switch_reduce; /* 1 when the scale-up switch can reduce (NVLS) */
    double in_switch_eff;     /* fraction of scaleup_bw reached by in-switch AllReduce */
    double in_switch_latency; /* s per in-switch (NVLS) operation */
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
    double peer_cost;    /* s per remote peer a GPU exchanges with (message setup); default 0 */
    double scaleup_usd;  /* USD per GPU share of the scale-up fabric (from gpu unless overridden) */
    double scaleout_usd; /* USD per GPU share of the scale-out network (from gpu unless overridden) */
    double amort_years;  /* years over which capex is amortised (docs/MODEL.md section 10) */
    double pue;          /* power usage effectiveness: facility power / IT power (>= 1) */
    double usd_per_kwh;  /* electricity price, USD per kWh */
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
