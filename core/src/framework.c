/* Framework profiles: what a serving framework adds to the roofline model
 * (per-pass overhead, GEMM and attention efficiency by precision). Values and
 * their sources: docs/MODEL.md section 6.1. */
#include "hbdlab/sim.h"

#include "hbdlab/coll.h"
#include "hbdlab/precision.h"
#include "fmax_int.h"
#include "framework_int.h"

hl_fw_profile hl_framework_profile(int32_t fw)
{
    /* step_overhead (s), gemm_scale_16, gemm_scale_fp8, gemm_scale_fp4, attn_scale.
     * trtllm: fitted by hl.calibrate to TensorRT-LLM's published cases P1-P5
     * (the 2024-25 releases of scripts/validate.lua; its older 2023 cases
     * validate only) as served by hl.serve on the presets' measured kernel
     * model with its per-layer kernels (issue 27; `hbdlab scripts/validate.lua
     * --set fit_profile=trtllm`: 0.681 ms, 0.862, 1.048, rounded (1.056 at session 4's
     * fit; later physics moved it, refitted in session 6); before the
     * kernel inventory 0.980 ms, 0.806, 0.974); no BF16 or attention-bound
     * TensorRT-LLM case, so those stay 1. vllm: 0.4 ms per step, derived from
     * the vLLM v0.6.0 blog (2024-09-05): on Llama-3-8B / 1 H100 a token took
     * 13 ms, 29% of it scheduling and input preparation (3.8 ms); v0.6.0 runs
     * that once per 10 steps (--num-scheduler-steps 10, its benchmark
     * setting), moves the API server to its own process and overlaps output
     * processing: 3.8 / 10 = 0.38 ms. sglang: 0: SGLang v0.4's overlap
     * scheduler runs the CPU one batch ahead, and its Nsight trace shows no
     * idle gap between decode batches (lmsys.org/blog/2024-12-04-sglang-v0-4);
     * its published cases P6-P7 are predicted too slow already at 0.
     * allreduce: the engine's own custom all-reduce inside an HBD
     * (TensorRT-LLM's AUTO strategy, vLLM's custom_all_reduce; MODEL.md 5.1);
     * SGLang's is not modelled yet (the job's coll_algo).
     * cuda_graphs, then the kernels per layer beside hbdlab's operators (RoPE,
     * KV append, activation, second norm), counted from the engines' layer
     * code (docs/MODEL.md 6.1): vLLM llama.py (rotary_emb, the attention
     * backend's reshape_and_cache_flash, SiluAndMul, two fused_add_rms_norm),
     * SGLang llama.py (the same four), TensorRT-LLM's attention op applies
     * RoPE and writes the KV cache itself, so only the SwiGLU and the second
     * norm. rocm (vLLM on ROCm): vLLM's kernels, custom all-reduce and HIP
     * graphs; its step overhead and FP8 scale fitted like trtllm to the public
     * MI300X cases A1-A3 and M1 (`--set fit_profile=rocm`: 1.28 ms, 0.966, on
     * the MI300X preset's sourced kernel costs and its FP8 GEMM shape model
     * fitted to AMD's tuned MI300X kernels (aiter#1092), session 7; 1.32 ms,
     * 0.708 on AMD's max-achievable rate alone; 3.01 ms, 0.563 before the
     * MI300X kernel costs, issue 27); each value rests on one
     * source (leave-one-out in docs/MODEL.md 6.1), no FP4 case.
     * vllm_v0: vLLM 0.6.x's V0 engine run one scheduler step per forward pass
     * (`--num-scheduler-steps` 1, the default, as benchmark_latency runs it):
     * vllm's kernels, all-reduce and graphs, and the whole 3.8 ms of
     * scheduling, result gathering and input preparation of the same v0.6.0
     * blog on every pass instead of once per 10 (vllm's 0.4 ms is 3.8 / 10);
     * the multi-step RFC (vllm#6854, Jul 2024) shows about 4 ms of GPU idle
     * per single-step decode pass. Sourced, not fitted: GEMM scales 1.
     * trtllm_v06: TensorRT-LLM v0.6.1 as docs/source/performance.md of that
     * release built and ran its "Peak Throughput" engines: examples/llama/build.py
     * without --use_custom_all_reduce (store_true, "latency-optimized algorithm
     * for all-reduce instead of NCCL": the NCCL plugin's all-reduce) and
     * gptSessionBenchmark without --enable_cuda_graph (GptSession::setCudaGraphMode
     * off: every kernel launched from the host). No source gives that release's
     * step overhead or GEMM efficiency, so those are trtllm's; its kernels per
     * layer are trtllm's (the GPT attention plugin applies RoPE and writes the
     * KV cache, as today). Its decode attention is v0.6.1's masked multi-head
     * attention (no XQA before v0.7): one CTA of 256 threads per sequence x query
     * head, 4 resident per SM ("the max number of warps we can launch per SM is 32
     * limited by registers", decoderMaskedMultiheadAttentionLaunch.h,
     * mmha_launch_kernel_ex): attn_unit_qheads 1, attn_ctas_per_sm 4 (the last two
     * fields; docs/MODEL.md 3). docs/MODEL.md 6.1.
     * kv_of_free (last): how mem_util sizes the KV cache (docs/MODEL.md 4). TensorRT-LLM gives the
     * cache a fraction of the memory cudaMemGetInfo reports free once the engine is loaded
     * (KVCacheManager::calculateMaxNumBlocks: freeMemFraction * free bytes / bytes per token;
     * KvCacheConfig::kDefaultGpuMemFraction 0.9, batch_manager/kvCacheConfig.h; GptSession's
     * createKvCacheManager of late 2023 hands its config to the same sizing); vLLM's gpu_memory_utilization and SGLang's
     * mem_fraction_static are shares of the whole device. */
    /* every field named (a positional list shifts silently when the struct gains one); an omitted
     * field is 0. The two older releases are their engine's profile with what differs (below). */
#define UNIT_SCALES .gemm_scale_16 = 1, .gemm_scale_fp8 = 1, .gemm_scale_fp4 = 1, .attn_scale = 1
#define VLLM_LAYER_KERNELS .rope_kernel = 1, .kv_append_kernel = 1, .act_kernel = 1, .norm_kernel = 1
    static const hl_fw_profile profiles[HL_FW_COUNT] = {
        [HL_FW_IDEAL] = {.step_overhead = 0, UNIT_SCALES, .allreduce = HL_ALGO_AUTO, .cuda_graphs = 1},
        [HL_FW_TRTLLM] = {.step_overhead = 0.70e-3,
                          .gemm_scale_16 = 1,
                          .gemm_scale_fp8 = 0.86,
                          .gemm_scale_fp4 = 1.05,
                          .attn_scale = 1,
                          .allreduce = HL_ALGO_TRTLLM_AR,
                          .cuda_graphs = 1,
                          .act_kernel = 1,
                          .norm_kernel = 1,
                          .kv_of_free = 1},
        [HL_FW_VLLM] =
            {.step_overhead = 0.4e-3, UNIT_SCALES, .allreduce = HL_ALGO_VLLM_AR, .cuda_graphs = 1, VLLM_LAYER_KERNELS},
        [HL_FW_SGLANG] =
            {.step_overhead = 0, UNIT_SCALES, .allreduce = HL_ALGO_AUTO, .cuda_graphs = 1, VLLM_LAYER_KERNELS},
        [HL_FW_ROCM] = {.step_overhead = 1.28e-3,
                        .gemm_scale_16 = 1,
                        .gemm_scale_fp8 = 0.97,
                        .gemm_scale_fp4 = 1,
                        .attn_scale = 1,
                        .allreduce = HL_ALGO_VLLM_AR,
                        .cuda_graphs = 1,
                        VLLM_LAYER_KERNELS},
    };
#undef UNIT_SCALES
#undef VLLM_LAYER_KERNELS
    hl_fw_profile p;
    switch (fw) {
    case HL_FW_VLLM_V0: /* vllm, with the whole 3.8 ms of scheduling on every pass */
        p = profiles[HL_FW_VLLM];
        p.step_overhead = 3.8e-3;
        return p;
    case HL_FW_TRTLLM_V06: /* trtllm's overhead, scales and layer kernels; NCCL, no graphs, MMHA */
        p = profiles[HL_FW_TRTLLM];
        p.allreduce = HL_ALGO_NCCL;
        p.cuda_graphs = 0;
        p.attn_unit_qheads = 1;
        p.attn_ctas_per_sm = 4;
        return p;
    default: return profiles[(unsigned)fw < HL_FW_COUNT ? fw : HL_FW_IDEAL];
    }
}

void hl_gpu_apply_framework(hl_gpu *g, double g16, double g8, double g4, double attn)
{
    /* resolve the fallbacks first (hw.h: 0 = the 16-bit value, fp4 = the fp8 value) */
    double e8 = g->eff_gemm_fp8 > 0 ? g->eff_gemm_fp8 : g->eff_gemm;
    double e4 = g->eff_gemm_fp4 > 0 ? g->eff_gemm_fp4 : e8;
    /* A scale cannot lift an efficiency past the peak, so each product is capped at 1 (a scale
     * fitted on one GPU family's cases, hl.calibrate's gemm_scale_fp4 of 1.17 on B200, would
     * otherwise make A100's 0.86 an out-of-range 1.002 in its FP4 fallback slot). A class the GPU
     * cannot run keeps its field untouched: no GEMM reads it. docs/MODEL.md 6.1. */
    g->eff_gemm = hl_fmin(1, g->eff_gemm * g16);
    if (g->peak_flops[HL_FP8] > 0 || g->peak_flops[HL_INT8] > 0) /* the FP8/INT8 class */
        g->eff_gemm_fp8 = hl_fmin(1, e8 * g8);
    if (g->peak_flops[HL_FP4] > 0)
        g->eff_gemm_fp4 = hl_fmin(1, e4 * g4);
    g->eff_attn = hl_fmin(1, g->eff_attn * attn);
}

void hl_gpu_apply_attn_kernel(hl_gpu *g, const hl_fw_profile *p)
{
    if (!(g->attn_unit_qheads > 0))
        g->attn_unit_qheads = p->attn_unit_qheads;
    if (!(g->attn_ctas_per_sm > 0))
        g->attn_ctas_per_sm = p->attn_ctas_per_sm;
}

/* The job as the framework runs it: the GPU's GEMM and attention efficiencies
 * scaled by the profile (job overrides first), step_overhead resolved. Returns
 * j itself when nothing changes, else *tmp filled. */
const hl_job *hl_job_with_framework(const hl_job *j, hl_job *tmp)
{
    if (j->framework == HL_FW_IDEAL && j->step_overhead == 0 && j->gemm_scale_16 == 0 && j->gemm_scale_fp8 == 0 &&
        j->gemm_scale_fp4 == 0 && j->attn_scale == 0)
        return j;
    hl_fw_profile p = hl_framework_profile(j->framework);
    *tmp = *j;
    double g16 = j->gemm_scale_16 > 0 ? j->gemm_scale_16 : p.gemm_scale_16;
    double g8 = j->gemm_scale_fp8 > 0 ? j->gemm_scale_fp8 : p.gemm_scale_fp8;
    double g4 = j->gemm_scale_fp4 > 0 ? j->gemm_scale_fp4 : p.gemm_scale_fp4;
    /* each GEMM precision class takes its own scale (docs/MODEL.md 6.1) */
    hl_gpu_apply_framework(&tmp->cluster.gpu, g16, g8, g4, j->attn_scale > 0 ? j->attn_scale : p.attn_scale);
    hl_gpu_apply_attn_kernel(&tmp->cluster.gpu, &p);
    tmp->step_overhead = j->step_overhead > 0 ? j->step_overhead : p.step_overhead;
    return tmp;
}
