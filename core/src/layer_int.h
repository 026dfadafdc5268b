/* One forward pass's operators and collectives on the critical-path GPU
 * (core/src/layer.c), and the accumulator of a phase they add into. Shared by
 * the job's phases (sim.c) and the serving step timer (step.c). */
#ifndef HL_LAYER_INT_H
#define HL_LAYER_INT_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hbdlab/coll.h"
#include "hbdlab/roofline.h"
#include "hbdlab/sim.h"
#include "fmax_int.h"
#include "mapping_int.h"
#include "model_int.h"

enum { HL_ITEM_SLOTS = 2 * HL_SIM_MAX_ITEMS }; /* at most half full: probes end at an empty slot */
_Static_assert((HL_ITEM_SLOTS & (HL_ITEM_SLOTS - 1)) == 0 && HL_ITEM_SLOTS <= 256, "HL_ITEM_SLOTS: a power of 2 that "
                                                                                   "fits uint8_t");

/* The sums of one phase, with its breakdown rows and event log (both optional). */
/* The stages of a layer under two-batch overlap (docs/MODEL.md 6.5): the attention side before the
 * attention kernel (norms, projections, the engine's small kernels), the dispatch, the experts, the
 * combine, the attention kernel with what follows it up to the router (output projection, router),
 * the shared experts. Prefill's compute stage c1 is ATTN + CORE + SHARED. */
enum {
    HL_TBO_ATTN = 0,
    HL_TBO_DISPATCH = 1,
    HL_TBO_EXPERTS = 2,
    HL_TBO_COMBINE = 3,
    HL_TBO_CORE = 4,
    HL_TBO_SHARED = 5,
    HL_TBO_STAGES = 6
};

typedef struct hl_acc {
    hl_event *ev; /* event log (NULL = none) */
    int nev;
    int layer_kind; /* current hl_event layer_kind */
    hl_phase ph;
    hl_item *items;                  /* [HL_SIM_MAX_ITEMS] of the result (NULL in summary mode); filled up to n */
    uint64_t tags[HL_SIM_MAX_ITEMS]; /* name_tag of each item's name */
    uint8_t slot[HL_ITEM_SLOTS];     /* open-addressing index of items by tag: i + 1, 0 = empty */
    int n;
    double overlap;
    double tbo_hidden;    /* s of communication two-batch overlap hides (set by the phase; 0: `overlap` rules) */
    int summary;          /* skip items and events */
    double moe_imbalance; /* busiest EP rank's routed tokens / mean, of the MoE layer being built (AllToAll) */
    double kernels;       /* kernels launched so far (operator executions) */
    int stage;            /* two-batch overlap stage of the ops being added (HL_TBO_*) */
    double stage_s[HL_TBO_STAGES];      /* s of the ops and collectives added in each stage (raw, before hiding) */
    double stage_gemm_s[HL_TBO_STAGES]; /* of stage_s, the compute-bound FP8 GEMMs (DeepGEMM: MODEL.md 6.5) */
    int memo_valid;                     /* last collective, for reuse */
    hl_coll_in memo_in;
    hl_coll_out memo_out;
} hl_acc;

/* *a cleared for summary mode (a->summary = 1: no items, no events), but for the items' index
 * (tags, slot), which only item() reads and summary mode never calls (every call returns on
 * a->summary first): 320 of the struct's bytes, a third of a clear the step timer makes per step;
 * and but for the last collective (memo_in, memo_out), which coll_timed reads only while
 * memo_valid is set (cleared here): ~150 bytes more, 19 stores a phase. */
static inline void hl_acc_summary(hl_acc *a)
{
    _Static_assert(offsetof(hl_acc, memo_valid) < offsetof(hl_acc, memo_in) &&
                       offsetof(hl_acc, memo_out) + sizeof(hl_coll_out) == sizeof(hl_acc),
                   "hl_acc_summary: the collective memo must stay last, after memo_valid");
    memset(a, 0, offsetof(hl_acc, tags));
    memset(&a->n, 0, offsetof(hl_acc, memo_in) - offsetof(hl_acc, n));
    a->summary = 1;
}

/* Logs one event (kept only while a->ev is set and has room). */
void hl_acc_event(hl_acc *a, const char *name, int is_comm, int tier, double dur, double bytes, double flops);

/* The breakdown row of `name` (for a collective, of the shape of `o` for `in`), created on first use. */
hl_item *hl_acc_item(hl_acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o);

/* Adds `times` executions of op to the phase. */
hl_status hl_acc_op(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, double times, hl_err *err);

/* hl_acc_op in its two halves, for a caller that keeps an operator's time: the time of one
 * execution (*measured: from the job's kernel tables), then the adding of `times` executions
 * so timed (nothing for times <= 0, where hl_acc_op times nothing either). */
hl_status hl_acc_op_time(const hl_sim_ctx *s, const hl_op *op, hl_op_time *t, int *measured, hl_err *err);
void hl_acc_op_timed(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, hl_op_time t, double times, int measured);

/* Adds the framework's fixed cost per forward pass, `passes` times. */
void hl_acc_overhead(hl_acc *a, double per_pass, double passes);

/* The one overlap rule of every phase and step: a fraction `overlap` of the
 * communication (comm_s) runs under the operators of the same phase (ops_s),
 * never more than their time; returns the hidden s, min(overlap * comm, ops),
 * or 0 when nothing hides. */
static inline double hl_comm_hidden(double overlap, double comm_s, double ops_s)
{
    double want = overlap * comm_s, hidden = want < ops_s ? want : ops_s; /* fmin, inline (finite values) */
    return hidden > 0 && comm_s > 0 ? hidden : 0;
}

/* Ends a phase: hides the overlapped communication (hl_comm_hidden), each
 * communication component shrinking in proportion, and sets comm_share
 * (inline, as the functions below: the phases call them once each). */
static inline void hl_acc_finish(hl_acc *a)
{
    double hidden = a->tbo_hidden > 0 ? hl_fmin(a->tbo_hidden, a->ph.comm_s)
                                      : hl_comm_hidden(a->overlap, a->ph.comm_s, a->ph.compute_s + a->ph.memory_s);
    if (hidden > 0) {
        double keep = 1 - hidden / a->ph.comm_s;
        a->ph.time_s -= hidden;
        a->ph.comm_s *= keep;
        a->ph.latency_comm_s *= keep;
        a->ph.scaleup_comm_s *= keep;
        a->ph.scaleout_comm_s *= keep;
    }
    a->ph.comm_share = a->ph.time_s > 0 ? a->ph.comm_s / a->ph.time_s : 0;
}

/* The pipeline rule (docs/MODEL.md 6, "Pipeline"), one for the job's phases and
 * the serving step timer. An engine keeps up to `microbatches` (0 = pp: vLLM's
 * max_concurrent_batches) micro-batches in flight over the pp stages; a
 * sequence rides in one micro-batch (its next token needs the previous one), so
 * `seqs` sequences fill at most `seqs` of them (a real count in the
 * analytical steady state). 1 with one stage. */
static inline double hl_pipeline_microbatches(const hl_sim_ctx *s, double seqs)
{
    if (s->pp <= 1)
        return 1;
    double mb = s->j->microbatches > 0 ? s->j->microbatches : (double)s->pp;
    return hl_fmax(1, hl_fmin(mb, seqs));
}

/* Stage slots (each one micro-batch's pass over one stage) on the critical
 * path of m micro-batches: m + pp - 1 from an empty pipeline that drains at the
 * end (a batch of prompts arriving at once: GPipe's fill and drain); max(m, pp)
 * in steady state, where each micro-batch re-enters the first stage as soon as
 * its token is sampled (every step of a decode phase, every serving iteration). */
static inline double hl_pipeline_slots(const hl_sim_ctx *s, double m, int from_empty)
{
    return from_empty ? m + (double)s->pp - 1 : hl_fmax(m, (double)s->pp);
}

/* The pipeline fill of a phase from an empty pipeline: ph holds m micro-batch
 * passes over one stage; every time of *ph is scaled by the returned factor
 * (m + pp - 1)/m so that it holds the critical path (1 with one stage). */
static inline double hl_pipeline_fill(const hl_sim_ctx *s, hl_phase *ph, double m)
{
    double scale = hl_pipeline_slots(s, m, 1) / m;
    ph->time_s *= scale;
    ph->compute_s *= scale;
    ph->memory_s *= scale;
    ph->comm_s *= scale;
    ph->overhead_s *= scale;
    ph->scaleup_comm_s *= scale;
    ph->scaleout_comm_s *= scale;
    ph->latency_comm_s *= scale;
    return scale;
}

/* One forward pass over the layers of one stage, except the attention kernel:
 * b sequences per attention group, q new tokens each, `routed` tokens routed
 * to the experts over the whole stage (every data-parallel group), `passes`
 * passes; decode selects MLA's absorbed form. */
hl_status hl_layer_ops(const hl_sim_ctx *s, hl_acc *a, double b, double q, double routed, double passes, int decode,
                       hl_err *err);

/* Attention kernel of one layer: b sequences, q new tokens after ctx cached ones (window w, 0 = none). */
void hl_attn_op(const hl_sim_ctx *s, hl_op *op, double b, double q, double ctx, double window);
/* Its shape (hl_attn_op is hl_op_attention of it, at the job's activation precision). */
void hl_attn_shape_of(const hl_sim_ctx *s, hl_attn_shape *out, double b, double q, double ctx, double window);

/* hl_attn_op in two parts, for a caller that builds many kernels of one job (step.c): the
 * shape's per-job fields for q new tokens, which depend on q only through q <= s->decode_q;
 * then the kernel from them (the same operator, bit for bit, as hl_attn_op). */
void hl_attn_shape_for(const hl_sim_ctx *s, double q, hl_attn_shape *sh);
void hl_attn_op_shaped(const hl_sim_ctx *s, hl_op *op, const hl_attn_shape *per_job, double b, double q, double ctx,
                       double window);

/* The vision encoder of a vision-language model over the image tokens of b
 * sequences (job image_tokens): patch embedding, vision_layers ViT blocks
 * (windowed or full attention), the patch merger (docs/MODEL.md 6.4). */
hl_status hl_vision_ops(const hl_sim_ctx *s, hl_acc *a, double b, hl_err *err);

/* The lightning indexer of sparse attention (DeepSeek-V3.2-Exp): an
 * attention-shaped scoring of every cached key by index_heads heads of
 * index_dim, weighted over the heads (d_v = 1); replicated on every TP rank. */
void hl_indexer_op(const hl_sim_ctx *s, hl_op *op, double b, double q, double ctx);

/* Layers of one stage split by attention kind: full, and local (a window of
 * hl_local_window keys: sliding, chunked, or sparse attention's top-k, where
 * every attention layer is local). Linear-attention layers are in neither:
 * they have no attention kernel (their recurrence is part of hl_layer_ops). */
static inline void hl_layer_split(const hl_sim_ctx *s, double *full, double *sliding)
{
    *sliding = s->stage_layers * s->sliding_share; /* shares: hl_sim_resolve (mapping.c layer_shares) */
    *full = hl_fmax(0, s->stage_layers * s->full_share);
}

/* Keys a local layer's query sees at most: sparse attention's top-k, or the sliding window / chunk. */
static inline double hl_local_window(const hl_sim_ctx *s)
{
    return s->m->index_topk > 0 ? (double)s->m->index_topk : (double)s->m->sliding_window;
}

/* The per-pass operators of `tokens` tokens (per GPU) of which `rows` sample:
 * embedding, stage hand-offs, LM head, logits gather, token broadcast. */
hl_status hl_io_ops(const hl_sim_ctx *s, hl_acc *a, double rows, double tokens, double passes, hl_err *err);

/* hl_io_ops in parts, for a caller that keeps them per count (step.c): the embedding and
 * the stage hand-offs of `tokens` tokens, and the sampling of `rows` rows (LM head, logits
 * AllGather, token broadcast), each timed on its own; hl_io_ops_timed adds them to the phase
 * (ho = NULL: no row samples), the same sums in the same order as hl_io_ops. */
typedef struct hl_io_tok {
    hl_op emb;
    hl_op_time t;
    int measured;       /* t from the job's kernel tables */
    hl_coll_in pp_in;   /* the pp_sendrecv of one hand-off (pp_in.ranks = 0: pp = 1, none) */
    hl_coll_out pp_out; /* its time */
    int pp_measured;    /* pp_out from the job's kernel tables */
} hl_io_tok;
typedef struct hl_io_head {
    hl_op head;
    hl_op_time head_t;
    int head_measured;
    hl_coll_in in[2]; /* in[i].ranks = 0: that collective does not run */
    hl_coll_out out[2];
    int measured[2];
} hl_io_head;
hl_status hl_io_tok_time(const hl_sim_ctx *s, double tokens, hl_io_tok *e, hl_err *err);
hl_status hl_io_head_time(const hl_sim_ctx *s, double rows, hl_io_head *h, hl_err *err);
void hl_io_ops_timed(const hl_sim_ctx *s, hl_acc *a, const hl_io_tok *e, const hl_io_head *ho, double passes);

#endif
