/* Prefix caching in a serving scheduler (serve_prefix.c): a request's content
 * and block hashes, its hit at admission, its blocks named and released; the
 * KV offload tier's link; the checks of those fields (docs/MODEL.md 12). */
#ifndef HL_SERVE_PREFIX_INT_H
#define HL_SERVE_PREFIX_INT_H
#include <stdint.h>

#include "hbdlab/serve.h"
#include "hbdlab/status.h"

/* The names of hl_offload_link's values, in its order: the field kv_offload.link's and its messages'. */
#define HL_OFFLOAD_LINK_NAMES "custom|pcie_gen4|pcie_gen5|gh200|gb200"

/* The checks of prefix_cache and shared_prefix against the other fields (hl_serve_check calls it). */
hl_status hl_serve_check_prefix(const hl_serve_cfg *cfg, hl_err *err);

struct hl_pcache;

/* One request's blocks in a scheduler with a prefix cache. Its content is the
 * shared prefix (`shared` tokens, the same for every request) followed by a
 * stream of its own (`stream`: the request, or its conversation): hash[b]
 * names tokens [0, (b + 1) * block) of it. ids: the blocks it holds, in token
 * order (ids[b] holds tokens [b * block, (b + 1) * block)); the first
 * `committed` are named. hash and ids are malloc'd on first use and freed by
 * hl_spc_done. */
typedef struct hl_pc_req {
    uint64_t *hash;
    int32_t *ids;
    int64_t n_hash;    /* full blocks of its longest sequence (input + output - 1 tokens) */
    int64_t n_ids;     /* blocks held */
    int64_t cap_ids;   /* blocks it can ever hold */
    int64_t committed; /* of ids, the first ones named by their hash */
    uint64_t stream;   /* content id of its tokens after the shared prefix */
    uint64_t prefix;   /* content id of its shared prefix */
    double shared;     /* its leading tokens that are the shared prefix */
} hl_pc_req;

/* The content of request i of a run (reqs as hl_serve_make_requests made them): a trace row's
 * prefix (its length from `prefix_len`, given on some row of that prefix id) and session, else
 * the shared_prefix tokens and a stream of its own. */
hl_status hl_spc_content(const hl_serve_cfg *cfg, const hl_trace_req *reqs, const hl_trace_content *content, int64_t n,
                         hl_pc_req *out, hl_err *err);

/* Makes r's hashes and block list for a sequence of `input` prompt tokens and
 * `output` generated ones (no-op when made). -1 when out of memory. */
int hl_spc_prepare(hl_pc_req *r, double input, double output, int64_t block);

/* The cache hit of a prompt of `prompt` tokens: *gpu leading blocks on the GPU,
 * *host after them in the host tier, at most floor((prompt - 1) / block) in
 * all (the last prompt token is always computed, as in vLLM: its logits are
 * needed); *taken: blocks the hit takes from the free ones (the GPU hits no
 * request holds, and one free block per host block loaded). */
void hl_spc_match(const struct hl_pcache *pc, const hl_pc_req *r, double prompt, int64_t block, int64_t *gpu,
                  int64_t *host, int64_t *taken);

/* References the hit found by hl_spc_match (r holds no block yet). */
void hl_spc_acquire(struct hl_pcache *pc, hl_pc_req *r, int64_t gpu, int64_t host);

/* Takes `count` more blocks from the free ones (the caller checked they are free). */
void hl_spc_alloc(struct hl_pcache *pc, hl_pc_req *r, int64_t count);

/* Names r's blocks that are full now that it holds `kv_tokens` tokens of KV. */
void hl_spc_commit(struct hl_pcache *pc, hl_pc_req *r, double kv_tokens, int64_t block);

/* Gives back r's blocks (finished or preempted): named ones stay cached. */
void hl_spc_release(struct hl_pcache *pc, hl_pc_req *r);

/* The KV offload tier's host-to-GPU bandwidth and host memory per GPU: given, else the link's
 * preset (0 when neither says). */
void hl_spc_offload_link(const hl_serve_cfg *cfg, double *bw, double *host_bytes);

/* Frees r's arrays (it holds no block). */
void hl_spc_done(hl_pc_req *r);

#endif
