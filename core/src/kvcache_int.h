/* The KV bytes of one sequence as a function of its context (kvcache.c). */
#ifndef HL_KVCACHE_INT_H
#define HL_KVCACHE_INT_H

#include "fmax_int.h"
#include "hbdlab/kvcache.h"

/* What hl_kv_bytes_sequence and hl_kv_index_bytes_sequence compute from the model and the
 * KV precision alone, for a caller that evaluates many contexts (memory.c keeps one per job
 * class): the functions below are those two's expressions on the same values, so the same bits. */
typedef struct hl_kv_seq_line {
    double per_layer;    /* B per token per attention layer (all KV heads, the indexer's key) */
    double full, local;  /* attention layers caching every token, and the last window only */
    double window;       /* sliding_window as a double, 0 for none */
    double index_layers; /* the indexer's key elements per token x attention layers */
    double bytes;        /* B per element */
} hl_kv_seq_line;

void hl_kv_seq_line_of(const hl_model *m, hl_precision kv, hl_kv_seq_line *l);

/* hl_kv_bytes_sequence(m, kv, context) for l = hl_kv_seq_line_of(m, kv). */
static inline double hl_kv_seq_bytes(const hl_kv_seq_line *l, double context)
{
    /* a sliding layer keeps the last window; a chunked one at most one chunk */
    double win = l->window > 0 ? hl_fmin(context, l->window) : context;
    return l->per_layer * (l->full * context + l->local * win);
}

/* hl_kv_index_bytes_sequence(m, kv, context) likewise. */
static inline double hl_kv_seq_index_bytes(const hl_kv_seq_line *l, double context)
{
    return l->index_layers * context * l->bytes;
}

#endif
