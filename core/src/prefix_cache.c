/* The KV block pool with automatic prefix caching and a host tier
 * (prefix_cache_int.h says the policy and its sources). */
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "prefix_cache_int.h"

/* Open-addressing map from a block hash (never 0) to an int32 value, linear
 * probing, deletion by backward shift (no tombstones). Capacity a power of two,
 * at least twice the entries it can hold. */
typedef struct pc_map {
    uint64_t *keys; /* 0 = empty slot */
    int32_t *vals;
    uint64_t mask;
} pc_map;

static int map_init(pc_map *m, int64_t entries)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)entries * 2)
        cap <<= 1;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->mask = cap - 1;
    return m->keys && m->vals ? 0 : -1;
}

static void map_free(pc_map *m)
{
    free(m->keys);
    free(m->vals);
}

static uint64_t slot_of(uint64_t key) { return key * 0x9e3779b97f4a7c15ull; }

static int32_t map_get(const pc_map *m, uint64_t key)
{
    for (uint64_t i = slot_of(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return -1;
    }
}

static void map_put(pc_map *m, uint64_t key, int32_t val)
{
    uint64_t i = slot_of(key) & m->mask;
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & m->mask;
    m->keys[i] = key;
    m->vals[i] = val;
}

static void map_del(pc_map *m, uint64_t key)
{
    uint64_t i = slot_of(key) & m->mask;
    while (m->keys[i] != key) {
        if (m->keys[i] == 0)
            return;
        i = (i + 1) & m->mask;
    }
    /* backward shift: move later entries of the run into the hole when their home allows */
    for (uint64_t j = (i + 1) & m->mask; m->keys[j] != 0; j = (j + 1) & m->mask) {
        uint64_t home = slot_of(m->keys[j]) & m->mask;
        /* the entry at j may fill i when i lies cyclically in [home, j) */
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
}

/* A doubly linked list over indices 0..n-1 (the free queue of GPU blocks, the
 * LRU order of host slots): head is evicted first. */
typedef struct pc_list {
    int32_t *prev, *next;
    uint8_t *in;
    int32_t head, tail;
    int64_t len;
} pc_list;

static int list_init(pc_list *l, int64_t n)
{
    l->prev = malloc((size_t)n * sizeof *l->prev);
    l->next = malloc((size_t)n * sizeof *l->next);
    l->in = calloc((size_t)n, 1);
    l->head = l->tail = -1;
    l->len = 0;
    return l->prev && l->next && l->in ? 0 : -1;
}

static void list_free(pc_list *l)
{
    free(l->prev);
    free(l->next);
    free(l->in);
}

static void list_remove(pc_list *l, int32_t i)
{
    if (!l->in[i])
        return;
    if (l->prev[i] >= 0)
        l->next[l->prev[i]] = l->next[i];
    else
        l->head = l->next[i];
    if (l->next[i] >= 0)
        l->prev[l->next[i]] = l->prev[i];
    else
        l->tail = l->prev[i];
    l->in[i] = 0;
    l->len--;
}

static void list_push(pc_list *l, int32_t i, int at_head)
{
    list_remove(l, i);
    if (at_head) {
        l->prev[i] = -1;
        l->next[i] = l->head;
        if (l->head >= 0)
            l->prev[l->head] = i;
        else
            l->tail = i;
        l->head = i;
    } else {
        l->next[i] = -1;
        l->prev[i] = l->tail;
        if (l->tail >= 0)
            l->next[l->tail] = i;
        else
            l->head = i;
        l->tail = i;
    }
    l->in[i] = 1;
    l->len++;
}

struct hl_pcache {
    int64_t n_gpu, n_host;
    uint64_t *hash;      /* per GPU block: its prefix hash, 0 = anonymous */
    int32_t *ref;        /* per GPU block: running requests holding it */
    pc_list free_q;      /* unreferenced GPU blocks in eviction order */
    pc_map gpu;          /* hash -> GPU block */
    int64_t cached;      /* unreferenced named blocks */
    uint64_t *host_hash; /* per host slot, 0 = unused */
    pc_list host_lru;    /* host slots, least recently used first */
    pc_map host;         /* hash -> host slot */
    int32_t host_unused; /* slots never used yet: host_unused .. n_host-1 */
    hl_pc_stats st;
};

hl_status hl_pcache_new(int64_t gpu_blocks, int64_t host_blocks, hl_pcache **out, hl_err *err)
{
    *out = NULL;
    if (gpu_blocks < 1 || gpu_blocks > ((int64_t)1 << 30))
        return hl_fail(err, HL_EINVAL,
                       "serve field 'kv_blocks': %lld KV blocks on one DP rank with prefix_cache, out of the block "
                       "pool's range 1..2^30 (fewer kv_blocks, or a larger block_tokens)",
                       (long long)gpu_blocks);
    if (host_blocks < 0 || host_blocks > ((int64_t)1 << 30))
        return hl_fail(err, HL_EINVAL,
                       "serve field 'kv_offload.capacity_bytes': a host tier of %lld host blocks per DP rank, out of "
                       "the "
                       "block pool's range 0..2^30 (a smaller tier, or a larger block_tokens)",
                       (long long)host_blocks);
    hl_pcache *c = calloc(1, sizeof *c);
    if (!c)
        return hl_fail(err, HL_ENOMEM, "prefix cache: out of memory");
    c->n_gpu = gpu_blocks;
    c->n_host = host_blocks;
    c->hash = calloc((size_t)gpu_blocks, sizeof *c->hash);
    c->ref = calloc((size_t)gpu_blocks, sizeof *c->ref);
    int bad = !c->hash || !c->ref || list_init(&c->free_q, gpu_blocks) || map_init(&c->gpu, gpu_blocks);
    if (!bad && host_blocks > 0) {
        c->host_hash = calloc((size_t)host_blocks, sizeof *c->host_hash);
        bad = !c->host_hash || list_init(&c->host_lru, host_blocks) || map_init(&c->host, host_blocks);
    }
    if (bad) {
        hl_pcache_free(c);
        return hl_fail(err, HL_ENOMEM, "prefix cache: out of memory for %lld blocks", (long long)gpu_blocks);
    }
    for (int64_t i = 0; i < gpu_blocks; i++)
        list_push(&c->free_q, (int32_t)i, 0);
    *out = c;
    return HL_OK;
}

void hl_pcache_free(hl_pcache *c)
{
    if (!c)
        return;
    free(c->hash);
    free(c->ref);
    if (c->free_q.prev || c->free_q.next || c->free_q.in)
        list_free(&c->free_q);
    map_free(&c->gpu);
    free(c->host_hash);
    if (c->n_host > 0) {
        list_free(&c->host_lru);
        map_free(&c->host);
    }
    free(c);
}

/* splitmix64's finaliser: a well-mixed 64-bit value of x (Steele et al.). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void hl_pc_hashes(const hl_pc_seg *segs, int32_t nsegs, int64_t block_tokens, int64_t n, uint64_t *out)
{
    uint64_t h = 0x6a09e667f3bcc909ull;
    int32_t s = 0;
    int64_t off = 0; /* tokens of segs[s] already covered */
    for (int64_t b = 0; b < n; b++) {
        /* the pieces (content id, first token, tokens) that make up block b, chained onto h */
        int64_t need = block_tokens;
        while (need > 0 && s < nsegs) {
            int64_t take = segs[s].len - off < need ? segs[s].len - off : need;
            if (take > 0) {
                h = mix(h ^ mix(segs[s].id));
                h = mix(h ^ (uint64_t)off);
                h = mix(h ^ (uint64_t)take);
            }
            need -= take;
            off += take;
            if (off >= segs[s].len) {
                s++;
                off = 0;
            }
        }
        out[b] = h | 1; /* never 0 (the maps' empty key) */
    }
}

void hl_pcache_match(const hl_pcache *c, const uint64_t *hashes, int64_t n, int64_t *gpu, int64_t *host)
{
    int64_t i = 0;
    while (i < n && map_get(&c->gpu, hashes[i]) >= 0)
        i++;
    *gpu = i;
    int64_t j = i;
    if (c->n_host > 0)
        while (j < n && map_get(&c->host, hashes[j]) >= 0)
            j++;
    *host = j - i;
}

int64_t hl_pcache_unheld(const hl_pcache *c, const uint64_t *hashes, int64_t n)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t b = map_get(&c->gpu, hashes[i]);
        k += b >= 0 && c->ref[b] == 0;
    }
    return k;
}

int64_t hl_pcache_free_blocks(const hl_pcache *c) { return c->free_q.len; }
int64_t hl_pcache_cached_blocks(const hl_pcache *c) { return c->cached; }
int64_t hl_pcache_host_blocks(const hl_pcache *c) { return c->n_host > 0 ? c->host_lru.len : 0; }
hl_pc_stats hl_pcache_stats(const hl_pcache *c) { return c->st; }

/* Puts a hash in the host tier (its least recently used slot makes room when full). */
static void host_store(hl_pcache *c, uint64_t h)
{
    int32_t slot = map_get(&c->host, h);
    if (slot < 0) {
        if (c->host_unused < c->n_host)
            slot = c->host_unused++;
        else {
            slot = c->host_lru.head;
            map_del(&c->host, c->host_hash[slot]);
            c->st.host_dropped++;
        }
        c->host_hash[slot] = h;
        map_put(&c->host, h, slot);
    }
    list_push(&c->host_lru, slot, 0);
}

int32_t hl_pcache_alloc(hl_pcache *c)
{
    int32_t b = c->free_q.head;
    if (b < 0)
        return -1;
    list_remove(&c->free_q, b);
    if (c->hash[b] != 0) { /* a cached prefix leaves the GPU */
        map_del(&c->gpu, c->hash[b]);
        c->cached--;
        c->st.evicted++;
        if (c->n_host > 0) {
            host_store(c, c->hash[b]);
            c->st.offloaded++;
        }
        c->hash[b] = 0;
    }
    c->ref[b] = 1;
    return b;
}

int hl_pcache_acquire(hl_pcache *c, const uint64_t *hashes, int64_t gpu, int64_t host, int32_t *ids)
{
    /* GPU hits that are unreferenced leave the free queue, so they are not free for the host loads */
    int64_t free_after = c->free_q.len;
    for (int64_t i = 0; i < gpu; i++) {
        int32_t b = map_get(&c->gpu, hashes[i]);
        if (b >= 0 && c->ref[b] == 0)
            free_after--;
    }
    if (host > free_after)
        return -1;
    for (int64_t i = 0; i < gpu; i++) {
        int32_t b = map_get(&c->gpu, hashes[i]);
        if (c->ref[b]++ == 0) {
            list_remove(&c->free_q, b);
            c->cached--;
        }
        ids[i] = b;
    }
    /* the host copies stay, now the most recently used (touched first, in order: the blocks the
     * loads below evict to the host drop the least recently used slots, never one still to load) */
    for (int64_t i = gpu; i < gpu + host; i++)
        list_push(&c->host_lru, map_get(&c->host, hashes[i]), 0);
    for (int64_t i = gpu; i < gpu + host; i++) {
        int32_t b = hl_pcache_alloc(c);
        c->hash[b] = hashes[i];
        map_put(&c->gpu, hashes[i], b);
        c->st.host_loaded++;
        ids[i] = b;
    }
    return 0;
}

void hl_pcache_commit(hl_pcache *c, int32_t id, uint64_t hash)
{
    if (c->hash[id] != 0 || map_get(&c->gpu, hash) >= 0)
        return;
    c->hash[id] = hash;
    map_put(&c->gpu, hash, id);
}

void hl_pcache_release(hl_pcache *c, const int32_t *ids, int64_t n)
{
    for (int64_t i = n - 1; i >= 0; i--) {
        int32_t b = ids[i];
        if (b < 0 || --c->ref[b] > 0)
            continue;
        if (c->hash[b] != 0) {
            list_push(&c->free_q, b, 0);
            c->cached++;
        } else {
            list_push(&c->free_q, b, 1);
        }
    }
}
