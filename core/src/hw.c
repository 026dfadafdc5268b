/* Accelerator and cluster descriptors, validation and initialisation. */
#include "hbdlab/hw.h"

#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "fields_int.h"
#include "hw_int.h"

_Static_assert(sizeof(((hl_gpu *)0)->peak_flops) == HL_PRECISION_COUNT * sizeof(double), "one peak per hl_precision");

#define BIG 1e30
static const hl_field gpu_fields[] = {
    HL_FS(hl_gpu, name, "name", "accelerator name"),
    HL_FD0(hl_gpu, peak_flops[HL_FP32], "fp32_flops", 1e6, BIG, "FLOP/s", "dense FP32 peak (0 = unsupported)"),
    HL_FD0(hl_gpu, peak_flops[HL_BF16], "bf16_flops", 1e6, BIG, "FLOP/s", "dense BF16 tensor peak"),
    HL_FD0(hl_gpu, peak_flops[HL_FP16], "fp16_flops", 1e6, BIG, "FLOP/s", "dense FP16 tensor peak"),
    HL_FD0(hl_gpu, peak_flops[HL_FP8], "fp8_flops", 1e6, BIG, "FLOP/s", "dense FP8 tensor peak (0 = unsupported)"),
    HL_FD0(hl_gpu, peak_flops[HL_FP4], "fp4_flops", 1e6, BIG, "FLOP/s", "dense FP4 tensor peak (0 = unsupported)"),
    HL_FD0(hl_gpu, peak_flops[HL_INT8], "int8_flops", 1e6, BIG, "OP/s", "dense INT8 tensor peak (0 = unsupported)"),
    HL_FD(hl_gpu, hbm_bytes, "hbm_bytes", 1e6, 1e15, "B", "HBM usable by the application"),
    /* from 1 MB/s: a loaded CPU measured by hl.minitf.cpu_roofline (0.5 GB/s under ASan) is a valid, slow device */
    HL_FD(hl_gpu, hbm_bw, "hbm_bw", 1e6, 1e15, "B/s", "HBM peak bandwidth"),
    HL_FD(hl_gpu, scaleup_bw, "scaleup_bw", 1e6, 1e15, "B/s", "scale-up bandwidth per direction per GPU"),
    HL_FD(hl_gpu, scaleout_bw, "scaleout_bw", 1e6, 1e15, "B/s", "scale-out (NIC) bandwidth per direction per GPU"),
    HL_FD(hl_gpu, scaleup_latency, "scaleup_latency", 0, 1, "s", "latency of one algorithm step inside an HBD"),
    HL_FD(hl_gpu, scaleout_latency, "scaleout_latency", 0, 1, "s", "latency of one algorithm step across HBDs"),
    HL_FD(hl_gpu, coll_launch, "coll_launch", 0, 1, "s", "fixed cost of launching one collective"),
    HL_FD(hl_gpu, kernel_latency, "kernel_latency", 0, 1, "s", "fixed cost added to every kernel (launch, tail)"),
    HL_FD(hl_gpu, kernel_launch, "kernel_launch", 0, 1, "s",
          "host cost of launching one kernel outside a CUDA graph (cuda_graphs off)"),
    HL_FD(hl_gpu, gemm_tile_rows, "gemm_tile_rows", 1, 1024, "", "GEMM kernels compute whole tiles of this many rows"),
    HL_FD(hl_gpu, eff_gemm, "eff_gemm", 0.01, 1, "", "achievable fraction of peak FLOP/s for GEMMs"),
    HL_FD(hl_gpu, eff_attn, "eff_attn", 0.01, 1, "", "achievable fraction of peak FLOP/s for fused attention"),
    HL_FD(hl_gpu, eff_mem, "eff_mem", 0.01, 1, "", "achievable fraction of HBM bandwidth"),
    HL_FD(hl_gpu, gemm_blend, "gemm_blend", 0, 64, "", "p of the GEMM limits' blend (c^p+m^p+k^p)^(1/p), 0 = max"),
    HL_FD(hl_gpu, gemm_k_latency, "gemm_k_latency", 0, 1e-6, "s", "per element of K: serial main loop of a GEMM"),
    HL_FD(hl_gpu, eff_gemm_fp8, "eff_gemm_fp8", 0, 1, "", "fraction of the FP8 peak of large FP8 GEMMs (0 = eff_gemm)"),
    HL_FD(hl_gpu, eff_mem_fp8, "eff_mem_fp8", 0, 1, "", "fraction of HBM bandwidth of FP8 GEMMs (0 = eff_mem)"),
    HL_FD(hl_gpu, gemm_latency_fp8, "gemm_latency_fp8", 0, 1, "s", "fixed cost of an FP8 GEMM beyond kernel_latency"),
    HL_FD(hl_gpu, gemm_k_latency_fp8, "gemm_k_latency_fp8", 0, 1e-6, "s",
          "per element of K of an FP8 GEMM (0 = gemm_k_latency)"),
    HL_FD(hl_gpu, quant_bytes_fp8, "quant_bytes_fp8", 0, 64, "B", "per activation element quantised for an FP8 GEMM"),
    HL_FD(hl_gpu, gemm_k0, "gemm_k0", 0, 1e6, "",
          "K of a dense GEMM tile's fixed part: compute efficiency x K / (K + gemm_k0) (0 = off)"),
    HL_FD(hl_gpu, gemm_k0_fp8, "gemm_k0_fp8", 0, 1e6, "", "gemm_k0 of FP8/INT8/FP4 dense GEMMs (0 = gemm_k0)"),
    HL_FD(hl_gpu, eff_gemm_fp4, "eff_gemm_fp4", 0, 1, "", "fraction of the FP4 peak of large FP4 GEMMs (0 = fp8's)"),
    HL_FD(hl_gpu, eff_mem_fp4, "eff_mem_fp4", 0, 1, "", "fraction of HBM bandwidth of FP4 GEMMs (0 = fp8's)"),
    HL_FD(hl_gpu, gemm_latency_fp4, "gemm_latency_fp4", 0, 1, "s", "fixed cost of an FP4 GEMM beyond kernel_latency"),
    HL_FD(hl_gpu, gemm_k_latency_fp4, "gemm_k_latency_fp4", 0, 1e-6, "s",
          "per element of K of an FP4 GEMM (0 = fp8's)"),
    HL_FD(hl_gpu, quant_bytes_fp4, "quant_bytes_fp4", 0, 64, "B", "per activation element quantised for an FP4 GEMM"),
    HL_FD(hl_gpu, eff_mem_attn, "eff_mem_attn", 0, 1, "",
          "fraction of HBM bandwidth reading the KV cache (0 = eff_mem)"),
    HL_FD(hl_gpu, attn_latency, "attn_latency", 0, 1, "s", "fixed cost of an attention kernel beyond kernel_latency"),
    HL_FD(hl_gpu, attn_unit_s, "attn_unit_s", 0, 1e-3, "s", "per (sequence x KV head) unit of an attention kernel"),
    HL_FD(hl_gpu, attn_blend, "attn_blend", 0, 20, "",
          "power mean p of decode attention's KV stream and work-unit times (0 or 1 = their sum)"),
    HL_FD(hl_gpu, attn_unit_qheads, "attn_unit_qheads", 0, 1, "",
          "1: decode attention runs one work unit (CTA) per sequence x query head, 0: per sequence x KV head"),
    HL_FD(hl_gpu, attn_ctas_per_sm, "attn_ctas_per_sm", 0, 64, "",
          "decode attention CTAs resident per SM relative to the fitted kernels' 1 (units cost attn_unit_s / it; 0 = "
          "1)"),
    HL_FD(hl_gpu, attn_tile_rows, "attn_tile_rows", 0, 1024, "", "prefill attention's query tile rows (0 = none)"),
    HL_FD(hl_gpu, attn_tile_s, "attn_tile_s", 0, 1e-3, "s", "per (sequence x head x query tile) of prefill attention"),
    HL_FD(hl_gpu, attn_prefill_latency, "attn_prefill_latency", 0, 1, "s",
          "fixed cost of a prefill attention kernel beyond attn_latency"),
    HL_FD(hl_gpu, moe_latency, "moe_latency", 0, 1, "s", "fixed cost per MoE layer (routing, permutation)"),
    HL_FD(hl_gpu, grouped_k0, "grouped_k0", 0, 1e6, "",
          "K at which a grouped expert GEMM reaches half its efficiency (0 = off)"),
    HL_FD(hl_gpu, grouped_k0_fp8, "grouped_k0_fp8", 0, 1e6, "",
          "grouped_k0 of FP8/INT8/FP4 expert GEMMs (0 = grouped_k0)"),
    HL_FD(hl_gpu, moe_perm_bytes, "moe_perm_bytes", 0, 1e3, "B",
          "per routed token row per hidden element: MoE permutation and finalize traffic (0 = off)"),
    HL_FD(hl_gpu, eff_grouped, "eff_grouped", 0, 2, "",
          "grouped expert GEMMs' share of a dense GEMM's efficiency (0 = 1)"),
    HL_FD(hl_gpu, eff_scaleup, "eff_scaleup", 0.01, 1, "", "achievable fraction of scale-up bandwidth"),
    HL_FD(hl_gpu, eff_scaleout, "eff_scaleout", 0.01, 1, "", "achievable fraction of scale-out bandwidth"),
    HL_FB(hl_gpu, in_switch_reduce, "in_switch_reduce", "scale-up switch reduces in the network (NVLS)"),
    HL_FD0(hl_gpu, in_switch_eff, "in_switch_eff", 0.01, 2, "",
           "fraction of scale-up bandwidth reached by in-switch AllReduce"),
    HL_FD(hl_gpu, in_switch_latency, "in_switch_latency", 0, 1, "s", "latency of one in-switch (NVLS) operation"),
    HL_FD(hl_gpu, custom_ar_latency, "custom_ar_latency", 0, 1, "s",
          "latency of one stage of an engine's custom (one-/two-shot) all-reduce"),
    HL_FD(hl_gpu, custom_ar_eff, "custom_ar_eff", 0.01, 1, "", "fraction of scale-up bandwidth of a custom all-reduce"),
    HL_FD0(hl_gpu, tdp_w, "tdp_w", 1, 1e5, "W", "board power (informational)"),
    HL_FD(hl_gpu, capex_usd, "capex_usd", 0, 1e8, "USD",
          "GPU and its share of the server, no networking (0 = unknown)"),
    HL_FD(hl_gpu, scaleup_usd, "scaleup_usd", 0, 1e8, "USD", "per-GPU share of scale-up switches and cables"),
    HL_FD(hl_gpu, scaleout_usd, "scaleout_usd", 0, 1e8, "USD", "per-GPU NIC, scale-out switch ports and optics"),
    HL_FD0(hl_gpu, power_w, "power_w", 1, 1e5, "W", "per-GPU server wall power at load (0 = tdp_w)"),
    HL_FD(hl_gpu, idle_w, "idle_w", 0, 1e5, "W", "per-GPU server wall power while waiting"),
    HL_FS(hl_gpu, cost_source, "cost_source", "where the cost and power numbers come from"),
    HL_FS(hl_gpu, source, "source", "where the numbers come from"),
};
/* Friendly names with their unit in the name, in Lua tables and JSON files alike
 * (GB = 1e9 B, TB/s = 1e12 B/s, Gbit/s = 1e9 / 8 B/s, us = 1e-6 s). */
#define HL_LINK_ALIASES                                                                        \
    {"scaleup_gbs", "scaleup_bw", 1e9}, {"scaleout_gbps", "scaleout_bw", 1e9 / 8},             \
        {"scaleout_gbs", "scaleout_bw", 1e9}, {"scaleup_latency_us", "scaleup_latency", 1e-6}, \
        {"scaleout_latency_us", "scaleout_latency", 1e-6},                                     \
    {                                                                                          \
        "coll_launch_us", "coll_launch", 1e-6                                                  \
    }
static const hl_field_alias gpu_aliases[] = {{"fp32_tflops", "fp32_flops", 1e12},
                                             {"bf16_tflops", "bf16_flops", 1e12},
                                             {"fp16_tflops", "fp16_flops", 1e12},
                                             {"fp8_tflops", "fp8_flops", 1e12},
                                             {"fp4_tflops", "fp4_flops", 1e12},
                                             {"int8_tops", "int8_flops", 1e12},
                                             {"hbm_gb", "hbm_bytes", 1e9},
                                             {"hbm_tbs", "hbm_bw", 1e12},
                                             {"kernel_latency_us", "kernel_latency", 1e-6},
                                             {"kernel_launch_us", "kernel_launch", 1e-6},
                                             HL_LINK_ALIASES,
                                             {NULL, NULL, 0}};
static const hl_field_alias cluster_aliases[] = {{"peer_cost_us", "peer_cost", 1e-6}, HL_LINK_ALIASES, {NULL, NULL, 0}};
static const hl_field_set gpu_set = {"gpu", gpu_fields, (int32_t)(sizeof gpu_fields / sizeof gpu_fields[0]),
                                     gpu_aliases};

const hl_field_set *hl_gpu_fields(void) { return &gpu_set; }

void hl_gpu_init_defaults(hl_gpu *g)
{
    memset(g, 0, sizeof *g);
    /* Defaults documented and sourced in docs/MODEL.md section 1.3; presets override them. */
    g->eff_gemm = 0.6;
    g->eff_attn = 0.6;
    g->eff_mem = 0.8;
    g->eff_scaleup = 0.82;
    g->eff_scaleout = 0.94;
    g->scaleup_latency = 0.6e-6;
    g->scaleout_latency = 15e-6;
    g->coll_launch = 4e-6;
    g->kernel_latency = 3e-6;
    g->kernel_launch = 5e-6;
    g->gemm_tile_rows = 64;
    g->in_switch_latency = 25e-6;
    g->custom_ar_latency = 3e-6;
    g->custom_ar_eff = 0.46;
}

/* The GPU's checks across fields (each field already in range). Sweeps that
 * set GPU fields run these per point through hl_cluster_check_consistency. */
static hl_status gpu_check_consistency(const hl_gpu *gpu, hl_err *err)
{
    if (gpu->peak_flops[HL_BF16] <= 0 && gpu->peak_flops[HL_FP16] <= 0)
        return hl_fail(err, HL_EINVAL, "gpu '%s': needs bf16_flops or fp16_flops (both are unsupported)", gpu->name);
    if (gpu->in_switch_reduce && gpu->in_switch_eff <= 0)
        return hl_fail(err, HL_EINVAL, "gpu '%s': in_switch_reduce is set but in_switch_eff is 0", gpu->name);
    /* power at load: power_w, or tdp_w when power_w is 0 (cost.c) */
    double load_w = gpu->power_w > 0 ? gpu->power_w : gpu->tdp_w;
    if (load_w > 0 && gpu->idle_w > load_w)
        return hl_fail(err, HL_EINVAL,
                       "gpu '%s' field 'idle_w': %g W is above the power at load, %g W (%s; allowed: 0..%g)", gpu->name,
                       gpu->idle_w, load_w, gpu->power_w > 0 ? "power_w" : "tdp_w", load_w);
    return HL_OK;
}

hl_status hl_gpu_validate(const hl_gpu *gpu, hl_err *err)
{
    hl_status s = hl_field_check_all(&gpu_set, gpu, err);
    return s ? s : gpu_check_consistency(gpu, err);
}

hl_status hl_gpu_peak(const hl_gpu *gpu, hl_precision p, double *flops, hl_err *err)
{
    if ((unsigned)p >= HL_PRECISION_COUNT)
        return hl_fail(err, HL_EINVAL, "precision %d is not a valid precision", (int)p);
    double f = gpu->peak_flops[p];
    if (f <= 0)
        return hl_fail(err, HL_EUNSUPPORTED, "gpu '%s' has no %s tensor support (its %s_flops is unsupported)",
                       gpu->name, hl_precision_name(p), hl_precision_name(p));
    *flops = f;
    return HL_OK;
}

static const hl_field cluster_fields[] = {
    HL_FS(hl_cluster, name, "name", "cluster name"),
    HL_FI(hl_cluster, gpus, "gpus", 1, 1e7, "GPUs in the cluster"),
    HL_FI(hl_cluster, hbd, "hbd", 1, 1e7, "GPUs per high-bandwidth domain (must divide gpus)"),
    HL_FE(hl_cluster, fabric, "fabric", "switch|mesh", "scale-up topology: switched, or switchless full mesh"),
    HL_FD(hl_cluster, scaleup_bw, "scaleup_bw", 1e6, 1e15, "B/s", "scale-up bandwidth per direction per GPU"),
    HL_FD(hl_cluster, scaleout_bw, "scaleout_bw", 1e6, 1e15, "B/s", "scale-out bandwidth per direction per GPU"),
    HL_FD(hl_cluster, scaleup_latency, "scaleup_latency", 0, 1, "s", "latency per step inside an HBD"),
    HL_FD(hl_cluster, scaleout_latency, "scaleout_latency", 0, 1, "s", "latency per step across HBDs"),
    HL_FD(hl_cluster, coll_launch, "coll_launch", 0, 1, "s", "fixed cost of launching one collective"),
    HL_FD(hl_cluster, eff_scaleup, "eff_scaleup", 0.01, 1, "", "achievable fraction of scale-up bandwidth"),
    HL_FD(hl_cluster, eff_scaleout, "eff_scaleout", 0.01, 1, "", "achievable fraction of scale-out bandwidth"),
    HL_FB(hl_cluster, in_switch_reduce, "in_switch_reduce", "scale-up switch reduces in the network (NVLS)"),
    HL_FD0(hl_cluster, in_switch_eff, "in_switch_eff", 0.01, 2, "",
           "fraction of scale-up bandwidth reached by in-switch AllReduce"),
    HL_FD(hl_cluster, in_switch_latency, "in_switch_latency", 0, 1, "s", "latency of one in-switch (NVLS) operation"),
    HL_FD(hl_cluster, custom_ar_latency, "custom_ar_latency", 0, 1, "s",
          "latency of one stage of an engine's custom (one-/two-shot) all-reduce"),
    HL_FD(hl_cluster, custom_ar_eff, "custom_ar_eff", 0.01, 1, "",
          "fraction of scale-up bandwidth of a custom all-reduce"),
    HL_FD(hl_cluster, peer_cost, "peer_cost", 0, 1e-3, "s", "setup cost per remote peer in an exchange"),
    HL_FD(hl_cluster, scaleup_usd, "scaleup_usd", 0, 1e8, "USD", "per-GPU share of scale-up switches and cables"),
    HL_FD(hl_cluster, scaleout_usd, "scaleout_usd", 0, 1e8, "USD", "per-GPU NIC, scale-out switch ports and optics"),
    HL_FD(hl_cluster, amort_years, "amort_years", 0.1, 100, "years", "capex amortisation period"),
    HL_FD(hl_cluster, pue, "pue", 1, 5, "", "power usage effectiveness (facility / IT power)"),
    HL_FD(hl_cluster, usd_per_kwh, "usd_per_kwh", 0, 100, "USD/kWh", "electricity price"),
};
static const hl_field_set cluster_set = {"cluster", cluster_fields,
                                         (int32_t)(sizeof cluster_fields / sizeof cluster_fields[0]), cluster_aliases};

const hl_field_set *hl_cluster_fields(void) { return &cluster_set; }

hl_status hl_cluster_init(hl_cluster *c, const hl_gpu *gpu, int64_t gpus, int64_t hbd, hl_err *err)
{
    memset(c, 0, sizeof *c);
    c->gpu = *gpu;
    c->gpus = gpus;
    c->hbd = hbd;
    c->fabric = HL_FABRIC_SWITCH;
    c->scaleup_bw = gpu->scaleup_bw;
    c->scaleout_bw = gpu->scaleout_bw;
    c->scaleup_latency = gpu->scaleup_latency;
    c->scaleout_latency = gpu->scaleout_latency;
    c->coll_launch = gpu->coll_launch;
    c->eff_scaleup = gpu->eff_scaleup;
    c->eff_scaleout = gpu->eff_scaleout;
    c->in_switch_reduce = gpu->in_switch_reduce;
    c->in_switch_eff = gpu->in_switch_eff;
    c->in_switch_latency = gpu->in_switch_latency;
    c->custom_ar_latency = gpu->custom_ar_latency;
    c->custom_ar_eff = gpu->custom_ar_eff;
    c->peer_cost = 0;
    c->scaleup_usd = gpu->scaleup_usd;
    c->scaleout_usd = gpu->scaleout_usd;
    /* Datacenter defaults, sourced in docs/MODEL.md section 11 (estimates; override per study). */
    c->amort_years = 5;
    c->pue = 1.3;
    c->usd_per_kwh = 0.08;
    snprintf(c->name, sizeof c->name, "%.20s x%lld hbd%lld", gpu->name, (long long)gpus, (long long)hbd);
    return hl_cluster_validate(c, err);
}

hl_status hl_cluster_validate(const hl_cluster *c, hl_err *err)
{
    if (!c)
        return hl_fail(err, HL_EINVAL, "cluster: the cluster is NULL");
    /* the GPU's field ranges here; its cross-field checks in hl_cluster_check_consistency */
    hl_status s = hl_field_check_all(&gpu_set, &c->gpu, err);
    if (s)
        return s;
    s = hl_field_check_all(&cluster_set, c, err);
    if (s)
        return s;
    return hl_cluster_check_consistency(c, err);
}

hl_status hl_cluster_check_consistency(const hl_cluster *c, hl_err *err)
{
    hl_status s = gpu_check_consistency(&c->gpu, err);
    if (s)
        return s;
    if (c->hbd > c->gpus)
        return hl_fail(err, HL_EINVAL,
                       "cluster field 'hbd': %lld is larger than the cluster (gpus = %lld; allowed: a divisor "
                       "of gpus; for part of a larger domain, e.g. 64 GPUs of an NVL72, set hbd = gpus)",
                       (long long)c->hbd, (long long)c->gpus);
    if (c->gpus % c->hbd != 0)
        return hl_fail(err, HL_EINVAL,
                       "cluster field 'hbd': %lld does not divide gpus = %lld (allowed: a divisor of gpus; "
                       "partial HBDs are not modelled)",
                       (long long)c->hbd, (long long)c->gpus);
    if (c->fabric != HL_FABRIC_SWITCH && c->fabric != HL_FABRIC_MESH)
        return hl_fail(err, HL_EINVAL, "cluster field 'fabric': %d is not switch or mesh", (int)c->fabric);
    if (c->fabric == HL_FABRIC_MESH && c->in_switch_reduce)
        return hl_fail(err, HL_EINVAL, "cluster: in_switch_reduce needs a switched fabric, not a mesh");
    return HL_OK;
}

int64_t hl_cluster_hbds(const hl_cluster *c) { return c->gpus / c->hbd; }
