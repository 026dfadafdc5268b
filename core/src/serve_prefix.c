/* Prefix caching in the serving scheduler: a request's content and its block
 * hashes, the hit at admission, blocks named as they fill and released to the
 * cache; and the checks of the prefix-caching fields. The pool itself (hash
 * map, LRU free queue, host tier) is prefix_cache.c; the policy is vLLM's
 * automatic prefix caching (docs/MODEL.md 12). */
#include <math.h>
#include <stdlib.h>

#include "err_int.h"
#include "prefix_cache_int.h"
#include "serve_int.h"

/* The content id of the shared prefix (every request's first segment). */
enum { SHARED_PREFIX_ID = 0x5c };

int hl_spc_prepare(hl_pc_req *r, double input, double output, int64_t block)
{
    if (r->ids)
        return 0;
    double longest = input + output - 1; /* tokens whose KV a request ever holds */
    r->n_hash = (int64_t)floor(longest / (double)block);
    r->cap_ids = (int64_t)ceil(longest / (double)block);
    r->hash = malloc(sizeof *r->hash * (size_t)(r->n_hash > 0 ? r->n_hash : 1));
    r->ids = malloc(sizeof *r->ids * (size_t)(r->cap_ids > 0 ? r->cap_ids : 1));
    if (!r->hash || !r->ids) {
        hl_spc_done(r);
        return -1;
    }
    /* the stream has no end: its blocks depend on its id and their place only */
    hl_pc_seg segs[2] = {{SHARED_PREFIX_ID, (int64_t)r->shared}, {r->stream, INT64_MAX / 2}};
    hl_pc_hashes(segs, 2, block, r->n_hash, r->hash);
    r->n_ids = r->committed = 0;
    return 0;
}

void hl_spc_match(const hl_pcache *pc, const hl_pc_req *r, double prompt, int64_t block, int64_t *gpu, int64_t *host,
                  int64_t *taken)
{
    int64_t most = (int64_t)floor((prompt - 1) / (double)block);
    if (most > r->n_hash)
        most = r->n_hash;
    hl_pcache_match(pc, r->hash, most > 0 ? most : 0, gpu, host);
    *taken = hl_pcache_unheld(pc, r->hash, *gpu) + *host;
}

void hl_spc_acquire(hl_pcache *pc, hl_pc_req *r, int64_t gpu, int64_t host)
{
    /* the free blocks were checked by the caller: this cannot fail */
    if (gpu + host > 0 && hl_pcache_acquire(pc, r->hash, gpu, host, r->ids) == 0)
        r->n_ids = r->committed = gpu + host;
}

void hl_spc_alloc(hl_pcache *pc, hl_pc_req *r, int64_t count)
{
    for (int64_t k = 0; k < count && r->n_ids < r->cap_ids; k++) {
        int32_t b = hl_pcache_alloc(pc);
        if (b < 0)
            return;
        r->ids[r->n_ids++] = b;
    }
}

void hl_spc_commit(hl_pcache *pc, hl_pc_req *r, double kv_tokens, int64_t block)
{
    int64_t full = (int64_t)floor(kv_tokens / (double)block);
    if (full > r->n_ids)
        full = r->n_ids;
    if (full > r->n_hash)
        full = r->n_hash;
    for (; r->committed < full; r->committed++)
        hl_pcache_commit(pc, r->ids[r->committed], r->hash[r->committed]);
}

void hl_spc_release(hl_pcache *pc, hl_pc_req *r)
{
    hl_pcache_release(pc, r->ids, r->n_ids);
    r->n_ids = r->committed = 0;
}

void hl_spc_done(hl_pc_req *r)
{
    free(r->hash);
    free(r->ids);
    r->hash = NULL;
    r->ids = NULL;
    r->n_hash = r->n_ids = r->cap_ids = r->committed = 0;
}

hl_status hl_serve_check_prefix(const hl_serve_cfg *c, hl_err *err)
{
    if (c->prefix_cache && c->disagg)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'prefix_cache': not modelled with disagg yet (a prefill pool's cache and the "
                       "decode pool's blocks); serve one instance or replicas");
    if (c->prefix_cache && c->mode == HL_SERVE_ANALYTICAL)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'prefix_cache' has no effect with mode = \"analytical\" (the steady state has no "
                       "blocks); simulate instead");
    int trace = c->trace != NULL || c->n_trace > 0 || c->trace_file[0];
    if (c->session_think_s != 0 && c->session_turns == 0)
        return hl_fail(err, HL_EINVAL, "serve field 'sessions.think_s' has no effect without sessions.turns");
    if (c->session_turns > 0 && trace)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'sessions' has no effect with field 'trace' (a trace's conversations are its "
                       "session and turn columns)");
    if (c->session_turns > 0 && c->disagg)
        return hl_fail(err, HL_EINVAL, "serve field 'sessions': not modelled with disagg yet");
    if (c->session_turns > 0 && c->mode == HL_SERVE_ANALYTICAL)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'sessions' has no effect with mode = \"analytical\" (the steady state has mean "
                       "lengths); simulate instead");
    return HL_OK;
}
