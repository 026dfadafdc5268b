/* Prefix caching in the serving scheduler: a request's content and its block
 * hashes, the hit at admission, blocks named as they fill and released to the
 * cache; and the checks of the prefix-caching fields. The pool itself (hash
 * map, LRU free queue, host tier) is prefix_cache.c; the policy is vLLM's
 * automatic prefix caching (docs/MODEL.md 12). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fields_int.h"
#include "prefix_cache_int.h"
#include "serve_prefix_int.h"

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
    hl_pc_seg segs[2] = {{r->prefix, (int64_t)r->shared}, {r->stream, INT64_MAX / 2}};
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
    if (kv_tokens < (double)(r->committed + 1) * (double)block) /* most steps fill no block */
        return;
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

/* A trace row's place in the checks below: sorted by (key, arrival, row). */
typedef struct row_key {
    double key, arrival, len;
    int64_t row;
} row_key;

static int by_key(const void *a, const void *b)
{
    const row_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The trace's prefix lengths per row (len[i], 0 without a prefix) and its conversations' turn
 * numbers: a prefix id whose length no row gives, two lengths for one id, a turn out of order. */
static hl_status trace_content(const hl_trace_req *q, const hl_trace_content *t, int64_t n, double *len, hl_err *err)
{
    row_key *k = malloc(sizeof *k * (size_t)(n > 0 ? n : 1));
    if (!k)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for the trace's prefixes");
    hl_status st = HL_OK;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (t[i].prefix > 0)
            k[m++] = (row_key){t[i].prefix, 0, t[i].prefix_len, i};
        else if (t[i].prefix_len > 0 && !st)
            st = hl_fail(err, HL_EINVAL,
                         "serve field 'trace': request %lld gives prefix_len %g but no prefix id (column prefix)",
                         (long long)i + 1, t[i].prefix_len);
    if (len)
        for (int64_t i = 0; i < n; i++)
            len[i] = 0;
    qsort(k, (size_t)m, sizeof *k, by_key);
    for (int64_t a = 0; a < m && !st;) {
        int64_t b = a;
        double L = 0;
        for (; b < m && k[b].key == k[a].key; b++)
            L = fmax(L, k[b].len);
        for (int64_t j = a; j < b && !st; j++)
            if (L == 0)
                st = hl_fail(err, HL_EINVAL,
                             "serve field 'trace': request %lld references prefix %.0f, whose length no request "
                             "gives (a prefix_len column on one of its requests at least)",
                             (long long)k[j].row + 1, k[a].key);
            else if (k[j].len != 0 && k[j].len != L)
                st = hl_fail(err, HL_EINVAL,
                             "serve field 'trace': prefix %.0f is %g tokens on request %lld and %g on another "
                             "(one prefix, one length)",
                             k[a].key, k[j].len, (long long)k[j].row + 1, L);
            else if (L > q[k[j].row].input)
                st = hl_fail(err, HL_EINVAL,
                             "serve field 'trace': request %lld has %g prompt tokens, fewer than its prefix %.0f "
                             "(%g tokens)",
                             (long long)k[j].row + 1, q[k[j].row].input, k[a].key, L);
            else if (len)
                len[k[j].row] = L;
        a = b;
    }
    m = 0; /* conversations: turns 1, 2, ... in arrival order where given */
    for (int64_t i = 0; i < n && !st; i++)
        if (t[i].session > 0)
            k[m++] = (row_key){t[i].session, q[i].arrival_s, t[i].turn, i};
        else if (t[i].turn > 0)
            st = hl_fail(err, HL_EINVAL, "serve field 'trace': request %lld gives turn %g but no session",
                         (long long)i + 1, t[i].turn);
    qsort(k, (size_t)m, sizeof *k, by_key);
    for (int64_t j = 0, pos = 1; j < m && !st; j++) {
        pos = j > 0 && k[j].key == k[j - 1].key ? pos + 1 : 1;
        if (k[j].len > 0 && k[j].len != (double)pos)
            st = hl_fail(err, HL_EINVAL,
                         "serve field 'trace': request %lld is turn %g of session %.0f but the conversation's "
                         "request %lld by arrival (%s)",
                         (long long)k[j].row + 1, k[j].len, k[j].key, (long long)pos,
                         k[j].len > (double)pos ? "an earlier turn is missing" : "a turn is repeated");
        /* a later turn's prompt continues the earlier one's sequence (its prompt and reply): a shorter
         * one cannot, and its blocks would be credited with content it does not hold */
        const hl_trace_req *now = &q[k[j].row], *was = pos > 1 ? &q[k[j - 1].row] : NULL;
        if (!st && was && now->input < was->input + was->output)
            st = hl_fail(err, HL_EINVAL,
                         "serve field 'trace': request %lld (session %.0f, its request %lld by arrival) has a prompt "
                         "of %g tokens, shorter than the conversation's previous request, request %lld: %g prompt + "
                         "%g generated tokens (a later turn's prompt holds the history; a conversation that drops "
                         "it is a new session)",
                         (long long)k[j].row + 1, k[j].key, (long long)pos, now->input, (long long)k[j - 1].row + 1,
                         was->input, was->output);
    }
    free(k);
    return st;
}

hl_status hl_spc_content(const hl_serve_cfg *c, const hl_trace_req *reqs, const hl_trace_content *t, int64_t n,
                         hl_pc_req *out, hl_err *err)
{
    int trace = t != NULL;
    double *len = trace ? malloc(sizeof *len * (size_t)(n > 0 ? n : 1)) : NULL;
    if (trace && !len)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for the trace's prefixes");
    hl_status st = trace ? trace_content(reqs, t, n, len, err) : HL_OK;
    for (int64_t i = 0; i < n && !st; i++) {
        hl_pc_req *r = &out[i];
        int own = trace && t[i].prefix > 0;
        r->prefix = own ? ((uint64_t)1 << 61) | (uint64_t)t[i].prefix : SHARED_PREFIX_ID;
        r->shared = own ? len[i] : fmin((double)c->shared_prefix, reqs[i].input);
        r->stream = trace && t[i].session > 0 ? ((uint64_t)1 << 62) | (uint64_t)t[i].session : (uint64_t)i + 1;
    }
    free(len);
    return st;
}

/* Host links of a KV offload tier, per GPU, host to GPU (docs/MODEL.md 12, KV offload):
 * PCIe x16 at 16 GT/s (4.0) and 32 GT/s (5.0) with 128b/130b coding: 16 x 16e9 x 128/130 / 8
 * = 31.5 GB/s and 63.0 GB/s per direction (PCI-SIG, PCI Express Base Specification 4.0 and 5.0);
 * the host memory of a PCIe server is the server's, not the link's (0: host_bytes is required).
 * GH200: NVLink-C2C 900 GB/s bidirectional = 450 GB/s per direction, up to 480 GB LPDDR5X per
 * superchip of one GPU (NVIDIA GH200 Grace Hopper Superchip datasheet). GB200: one Grace and
 * two Blackwell GPUs on a 900 GB/s bidirectional NVLink-C2C (NVIDIA GB200 NVL72 page) and up to
 * 480 GB LPDDR5X per Grace (17 TB over the 36 of an NVL72); how the C2C splits between the two
 * GPUs is not stated: taken as shared evenly, 225 GB/s and 240 GB per GPU (an assumption). Peak
 * link rates: copies reach less (no efficiency is applied; give bw to use a measured rate). */
static const struct {
    double bw, host;
} links[] = {{0, 0}, {31.5e9, 0}, {63.0e9, 0}, {450e9, 480e9}, {225e9, 240e9}};

void hl_spc_offload_link(const hl_serve_cfg *c, double *bw, double *host)
{
    int k = c->offload_link >= 0 && c->offload_link <= HL_OFFLOAD_GB200 ? c->offload_link : 0;
    *bw = c->offload_bw > 0 ? c->offload_bw : links[k].bw;
    *host = c->offload_host > 0 ? c->offload_host : links[k].host;
}

hl_status hl_serve_check_prefix(const hl_serve_cfg *c, hl_err *err)
{
    int offload_given = c->offload_bytes > 0 || c->offload_bw > 0 || c->offload_host > 0 || c->offload_link != 0 ||
                        c->offload_overlap != 0;
    if (offload_given && !c->prefix_cache)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'kv_offload' has no effect without prefix_cache = true (the host tier holds "
                       "prefix blocks evicted from the cache)");
    if (offload_given) {
        double bw, host;
        hl_spc_offload_link(c, &bw, &host);
        if (c->offload_bytes <= 0)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'kv_offload.capacity_bytes' is required with kv_offload (host memory per "
                           "GPU for the tier, B)");
        if (c->offload_bw > 0 && c->offload_link != HL_OFFLOAD_CUSTOM)
            return hl_fail(err, HL_EINVAL,
                           "serve fields 'kv_offload.bw' and 'kv_offload.link' both give the tier's bandwidth (give "
                           "one)");
        if (bw <= 0) {
            char presets[128] = "", name[32]; /* every link but custom, quoted: "pcie_gen4", ... */
            for (int32_t i = 1; hl_enum_name(HL_OFFLOAD_LINK_NAMES, i, name, sizeof name); i++)
                snprintf(presets + strlen(presets), sizeof presets - strlen(presets), "%s\"%s\"", i > 1 ? ", " : "",
                         name);
            return hl_fail(err, HL_EINVAL,
                           "serve field 'kv_offload.bw' is required without kv_offload.link (host-to-GPU B/s per GPU; "
                           "or link = %s)",
                           presets);
        }
        if (host <= 0) { /* a PCIe or custom link: the host memory is the server's, which no preset knows */
            char name[32];
            if (!hl_enum_name(HL_OFFLOAD_LINK_NAMES, c->offload_link, name, sizeof name) || c->offload_link < 0)
                hl_enum_name(HL_OFFLOAD_LINK_NAMES, HL_OFFLOAD_CUSTOM, name, sizeof name);
            return hl_fail(err, HL_EINVAL,
                           "serve field 'kv_offload.host_bytes' is required with link = \"%s\" (the link does not "
                           "say how much host memory the server has, which bounds capacity_bytes): give the host "
                           "memory per GPU in B, e.g. 2.56e11 for a DGX H100 (2 TB over 8 GPUs)",
                           name);
        }
        if (c->offload_bytes > host)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'kv_offload.capacity_bytes': %g B per GPU is more than the host memory, %g B "
                           "per GPU (%s); a smaller tier",
                           c->offload_bytes, host,
                           c->offload_host > 0 ? "kv_offload.host_bytes" : "the link preset's part of the host");
    }
    hl_status st0 = c->trace && c->trace_content && c->n_trace > 0
                        ? trace_content(c->trace, c->trace_content, c->n_trace, NULL, err)
                        : HL_OK;
    if (st0)
        return st0;
    if (c->prefix_cache && c->disagg)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'prefix_cache': not modelled with disagg yet (a prefill pool's cache and the "
                       "decode pool's blocks); serve one instance or replicas");
    if (c->prefix_cache && c->job.image_tokens > 0)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'prefix_cache': not modelled with image_tokens (each prompt starts with its own "
                       "image, whose content the block hashes would have to carry)");
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
