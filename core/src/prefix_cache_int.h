/* The KV block pool of one scheduler with automatic prefix caching and an
 * optional host-memory tier. A block (block_tokens tokens of KV) is referenced
 * by running requests, cached (unreferenced but still holding a prefix, evicted
 * least recently released first) or empty. A full block is known by the hash
 * chain of the tokens up to its end, so two prompts share a block exactly when
 * their contents agree up to that block. The policy is vLLM's (KVCacheManager,
 * BlockPool in vllm/v1/core: hash chains over full blocks, one free queue in
 * eviction order, a prompt's last token always recomputed); SGLang's
 * RadixAttention shares the same prefixes with a radix tree (Zheng et al.,
 * "SGLang", 2024). docs/MODEL.md section 12. */
#ifndef HL_PREFIX_CACHE_INT_H
#define HL_PREFIX_CACHE_INT_H
#include <stdint.h>

#include "hbdlab/status.h"

/* Tokens [0, len) of one content: a system prompt, a conversation's earlier
 * turns, one request's own input or output. A prompt is a list of them. */
typedef struct hl_pc_seg {
    uint64_t id;
    int64_t len; /* tokens */
} hl_pc_seg;

/* Counters of a pool since it was made. */
typedef struct hl_pc_stats {
    int64_t evicted;      /* cached blocks reused for new content (their prefix dropped from the GPU) */
    int64_t offloaded;    /* of those, copied to the host tier */
    int64_t host_loaded;  /* host blocks brought back to the GPU on a hit */
    int64_t host_dropped; /* host blocks dropped to make room (the host tier's own LRU) */
} hl_pc_stats;

typedef struct hl_pcache hl_pcache;

/* A pool of gpu_blocks blocks (>= 1) and a host tier of host_blocks (>= 0, 0 = none).
 * The caller frees it with hl_pcache_free. */
hl_status hl_pcache_new(int64_t gpu_blocks, int64_t host_blocks, hl_pcache **out, hl_err *err);
void hl_pcache_free(hl_pcache *c);

/* The hash chain of the first n full blocks of a prompt made of segs[0..nsegs):
 * out[i] identifies tokens [0, (i + 1) * block_tokens). n must not exceed the
 * prompt's full blocks. */
void hl_pc_hashes(const hl_pc_seg *segs, int32_t nsegs, int64_t block_tokens, int64_t n, uint64_t *out);

/* How many leading blocks of hashes[0..n) are on the GPU (*gpu, from block 0),
 * and how many after those are in the host tier (*host, contiguous). */
void hl_pcache_match(const hl_pcache *c, const uint64_t *hashes, int64_t n, int64_t *gpu, int64_t *host);

/* Of the GPU blocks named hashes[0..n) (all on the GPU, as hl_pcache_match
 * found them), how many no request holds: a hit takes those from the free ones. */
int64_t hl_pcache_unheld(const hl_pcache *c, const uint64_t *hashes, int64_t n);

/* Blocks that a request can take now: empty ones and cached unreferenced ones. */
int64_t hl_pcache_free_blocks(const hl_pcache *c);
/* Unreferenced blocks that still hold a prefix (counted in hl_pcache_free_blocks too). */
int64_t hl_pcache_cached_blocks(const hl_pcache *c);
/* Blocks held in the host tier. */
int64_t hl_pcache_host_blocks(const hl_pcache *c);

/* References the first gpu + host blocks of hashes (as hl_pcache_match found
 * them; the host ones are loaded into GPU blocks taken from the free queue) and
 * writes their block ids to ids[0..gpu + host). Returns 0, or -1 with nothing
 * changed when the free blocks cannot hold the host loads. */
int hl_pcache_acquire(hl_pcache *c, const uint64_t *hashes, int64_t gpu, int64_t host, int32_t *ids);

/* Takes one block from the head of the free queue (an empty one, else the
 * least recently released cached one, whose prefix is evicted: copied to the
 * host tier when there is one). Returns its id, or -1 when none is free. */
int32_t hl_pcache_alloc(hl_pcache *c);

/* Names a block that became full with the hash of its prefix, so later prompts
 * can hit it. When another block already holds that hash, this one stays
 * anonymous (it is freed as empty). */
void hl_pcache_commit(hl_pcache *c, int32_t id, uint64_t hash);

/* Releases a request's blocks ids[0..n) (in prompt order): each loses one
 * reference; an unreferenced named block joins the free queue's tail as cached
 * (the request's last blocks first, so its first blocks, the ones most likely
 * shared, are evicted last), an anonymous one the head as empty. */
void hl_pcache_release(hl_pcache *c, const int32_t *ids, int64_t n);

hl_pc_stats hl_pcache_stats(const hl_pcache *c);

#endif
