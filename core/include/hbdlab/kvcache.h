/* KV-cache sizes: bytes per token (GQA, MLA, sliding windows), per-GPU share
 * under tensor and pipeline parallelism, and capacity with paged blocks. */
#ifndef HBDLAB_KVCACHE_H
#define HBDLAB_KVCACHE_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/precision.h"
#include "hbdlab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes per token over the softmax-attention layers (all but linear ones) at full context:
 * GQA: 2 * kv_heads * head_dim * bytes per layer; MLA: (kv_lora + rope) * bytes,
 * plus index_dim with sparse attention (the indexer's key). */
double hl_kv_bytes_per_token(const hl_model *m, hl_precision kv);

/* Bytes of one sequence of `context` tokens over the attention layers, with
 * sliding-window (or chunked) layers holding at most `sliding_window` tokens.
 * The linear-attention state is apart: hl_kv_state_bytes. */
double hl_kv_bytes_sequence(const hl_model *m, hl_precision kv, double context);

/* The part of hl_kv_bytes_sequence that is sparse attention's indexer keys
 * (index_dim per token per attention layer); whole on every TP rank. */
double hl_kv_index_bytes_sequence(const hl_model *m, hl_precision kv, double context);

/* Linear attention's state per sequence per layer, elements: the recurrent
 * state linear_v_heads * k_dim * v_dim plus the convolution's last
 * (linear_conv - 1) inputs of its 2 k_heads * k_dim + v_heads * v_dim channels. */
double hl_kv_state_elems_layer(const hl_model *m);

/* Bytes of one sequence's linear-attention state over all linear layers, at
 * precision `state`: constant in the context. 0 without linear layers. */
double hl_kv_state_bytes(const hl_model *m, hl_precision state);

/* Fraction of a sequence's linear-attention state one GPU holds under tensor
 * parallelism tp: 1/tp, or 1/linear_k_heads when tp exceeds the key heads. */
double hl_kv_state_share_per_gpu(const hl_model *m, int64_t tp);

/* KV heads one GPU holds under tensor parallelism tp: kv_heads/tp, or 1 when
 * tp > kv_heads (each KV head then replicated on tp/kv_heads GPUs). MLA: 1 latent. */
double hl_kv_heads_per_gpu(const hl_model *m, int64_t tp);

/* Bytes per token per layer on one GPU under tensor parallelism tp that the
 * attention kernel reads (K and V, or MLA's latent; not the indexer's key). */
double hl_kv_token_layer_bytes_per_gpu(const hl_model *m, hl_precision kv, int64_t tp);

typedef struct hl_kv_capacity_in {
    double hbm_bytes;       /* B usable on the GPU */
    double mem_util;        /* fraction of hbm_bytes the server may use (default 0.9) */
    double weights_bytes;   /* B of weights on this GPU */
    double workspace_bytes; /* B for activations and buffers */
    double kv_token_bytes;  /* B per token on this GPU, all its layers */
    double context;         /* tokens per sequence (input + output) */
    double block_tokens;    /* paged-attention block size in tokens; 0 = unpaged */
    int32_t of_free;        /* 1: mem_util is the KV's share of hbm - weights - workspace (TensorRT-LLM) */
} hl_kv_capacity_in;

typedef struct hl_kv_capacity {
    double kv_budget_bytes; /* B left for KV: hl_kv_usable_bytes - weights - workspace */
    double max_tokens;      /* tokens that fit (whole blocks when paged) */
    double max_batch;       /* whole sequences of `context` tokens that fit */
    double blocks_total;    /* blocks in the budget (paged) */
    double blocks_per_seq;  /* ceil(context / block_tokens) */
    double fragmentation;   /* fraction of allocated KV bytes holding no token */
} hl_kv_capacity;

/* Bytes of HBM a job may fill with weights, workspace and KV: hbm * mem_util, or with of_free
 * (TensorRT-LLM) weights + workspace + mem_util * (hbm - weights - workspace), hbm when weights
 * and workspace leave nothing free. docs/MODEL.md 4. */
double hl_kv_usable_bytes(double hbm_bytes, double mem_util, int32_t of_free, double weights_bytes,
                          double workspace_bytes);

/* Fails with HL_ENOFIT (saying by how many GB) when the weights alone do not fit. */
hl_status hl_kv_capacity_compute(const hl_kv_capacity_in *in, hl_kv_capacity *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
