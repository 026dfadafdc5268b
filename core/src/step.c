/* The serving step timer: the time of one continuous-batching iteration (some
 * sequences decoding, chunks of other prompts prefilling) from the same
 * operators, attention kernels, collectives, overlap rule and pipeline fill as
 * hl_sim_run's phases (layer.c), for the serving scheduler (serve.c).
 * Formulas: docs/MODEL.md, "Serving". */
#include "step_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "framework_int.h"
#include "hbdlab/kvcache.h"
#include "layer_int.h"
#include "mapping_int.h"
#include "roofline_int.h"

/* The parts of a step that depend only on its token count (every GEMM, norm,
 * MoE exchange and TP collective: hl_layer_ops) and on its sampled rows
 * (hl_io_ops) are cached per count; the attention kernels, which depend on
 * each sequence's context, are built per step from a per-job shape kept here. With pipeline stages an
 * iteration's sequences ride in m micro-batches kept in flight (layer_int.h's
 * rule): it lasts max(m, pp) stage slots of its busiest micro-batch, as a step
 * of hl_sim_run's decode phase. */
struct hl_stepper {
    hl_job job;   /* owned copy, as its framework runs it; batch only a multiple of dp for the resolve */
    hl_sim_ctx s; /* resolved against job */
    double full, sliding, window;
    int64_t cap;          /* counts 0..cap are cached */
    hl_phase *lin[2];     /* [prefill=0 / decode=1][tokens]: hl_layer_ops of one pass over one stage */
    hl_phase *io;         /* [rows]: hl_io_ops of one step whose every token samples */
    unsigned char *have;  /* (2 + 1 + 2) * (cap + 1) flags: lin[0], lin[1], io, tok, head */
    struct dline *dl;     /* [sequences]: decode-only steps, NULL until first used */
    hl_io_tok *tok;       /* [tokens]: the embedding part of hl_io_ops, NULL until a mixed step needs it */
    hl_io_head *head;     /* [rows]: its sampling part (LM head, logits gather, token broadcast), the same */
    hl_attn_shape ash[2]; /* hl_attn_shape_for of [q <= s.decode_q], valid where ash_have[] is set */
    int ash_have[2];
    hl_expert_layout *layout; /* owned copy of s.layout (MoE), which points here */
    int per_rank;             /* 1: iterations are one DP rank's (hl_stepper_new_rank) */
    struct pre_attn *pre[2];  /* [full=0 / local=1][tokens]: a one-chunk step's prompt kernel, NULL until used */
    struct new_chunk *nc[2];  /* [full=0 / local=1][tokens]: a prompt's first chunk's kernel, NULL until used */
    int memo;                 /* 1 (default): the kept kernels and I/O parts of a mixed step are used */
    double *parts;            /* tests (hl_stepper_time_parts): the accumulated step's parts go here, or NULL */
    struct dker *dk;          /* [sequences]: a mixed step's decode kernel (decode_kernel), NULL until used */
    struct mix_tok *mt;       /* [tokens], mixed_fast's records (NULL until used) */
    struct mix_head *mh;      /* [rows] */
    struct mix_pre *mp;       /* [prompt tokens] */
    struct mix_chunk *mc;     /* [prompt tokens] */
};

/* The decode attention kernel of a count of sequences along its context (decode_kernel). */
struct dker {
    hl_attn_decode d;
    int have;
};

/* The kernel step_attn builds for a chunk that starts its prompt (offset 0) of a whole number
 * of tokens <= cap, full (0) or local (1) layers: kept per length for the summed kernel of a step
 * of several chunks (at load most chunks are whole new prompts). */
struct new_chunk {
    hl_op op;
    int have;
};

/* The prompt attention of a step whose only chunk starts its prompt (offset 0), in one
 * micro-batch: the kernel chunks_attn builds for it and its time (hl_acc_op_time), kept per
 * chunk length; at load most mixed steps are a whole new prompt beside the decodes. */
struct pre_attn {
    hl_op op;
    hl_op_time t;
    int measured, have;
};

/* A decode-only step of n sequences as a function of their mean context c:
 * base (every operator but attention, and the sampling ops) plus one attention
 * kernel per layer of time max(ac + bc c, am + bm c) + lat (its compute and
 * memory times are linear in c: section 6's closed form uses the same fact). */
struct dline {
    hl_phase base;
    double ac, bc, am, bm, lat;
    double blend, alat, units; /* a blended kernel: p, attn_latency, the units' s (blend 0: none) */
    double stages;             /* pipeline stage slots of the iteration (1 without pp) */
    int have;
};

/* The divisor that takes an iteration's counts to one DP rank's share (1: they are one rank's already). */
static double rank_div(const hl_stepper *st) { return st->per_rank ? 1 : (double)st->s.dp; }

hl_status hl_stepper_new(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err)
{
    *out = NULL;
    if (max_tokens < 1 || max_tokens > 100000000)
        return hl_fail(err, HL_EINVAL, "stepper: max_tokens %lld is out of range (1..1e8)", (long long)max_tokens);
    hl_stepper *st = calloc(1, sizeof *st);
    if (!st)
        return hl_fail(err, HL_ENOMEM, "stepper: out of memory");
    if (job->two_batch_overlap) {
        free(st);
        return hl_fail(err, HL_EINVAL,
                       "field 'two_batch_overlap': true; two-batch overlap is modelled by hl.simulate, not yet by the "
                       "serving step timer (use two_batch_overlap = false here)");
    }
    if (job->spec_tokens > 0) {
        free(st);
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_tokens': %g; speculative decoding is modelled by hl.simulate, not yet by the "
                       "serving step timer (use spec_tokens = 0 here)",
                       job->spec_tokens);
    }
    hl_job fw;
    st->job = *hl_job_with_framework(job, &fw); /* the framework's efficiencies and step overhead */
    st->job.summary_only = 1;
    st->job.batch = 1; /* hl_sim_resolve() checks batch against dp: any multiple of dp would do */
    hl_status s0 = HL_OK;
    /* dp is resolved from the mapping; make batch a multiple of it for the check */
    hl_job probe = st->job;
    int64_t G = probe.gpus > 0 ? probe.gpus : probe.cluster.gpus;
    if (probe.tp > 0 && probe.pp > 0 && G % (probe.tp * probe.pp) == 0)
        st->job.batch = (double)(probe.dp > 0 ? probe.dp : G / (probe.tp * probe.pp));
    if ((s0 = hl_sim_resolve(&st->job, &st->s, 0, err))) {
        free(st);
        return s0;
    }
    if (st->s.layout) { /* the resolver's per-thread cache changes with the next job resolved */
        if (!(st->layout = malloc(sizeof *st->layout))) {
            free(st);
            return hl_fail(err, HL_ENOMEM, "stepper: out of memory");
        }
        *st->layout = *st->s.layout;
        st->s.layout = st->layout;
    }
    hl_layer_split(&st->s, &st->full, &st->sliding);
    st->window = hl_local_window(&st->s); /* a chunked layer is taken as a window of its chunk (an upper bound) */
    st->cap = max_tokens;
    size_t n = (size_t)max_tokens + 1;
    /* an entry is read only once have[] says it was written: not zeroed (a serving run touches
     * the few counts it meets of n, and calloc cleared all 3 x 88 x n bytes every run) */
    st->lin[0] = malloc(n * sizeof(hl_phase));
    st->lin[1] = malloc(n * sizeof(hl_phase));
    st->io = malloc(n * sizeof(hl_phase));
    st->have = calloc(5 * n, 1);
    if (!st->lin[0] || !st->lin[1] || !st->io || !st->have) {
        hl_stepper_free(st);
        return hl_fail(err, HL_ENOMEM, "stepper: out of memory for %lld cached counts", (long long)max_tokens);
    }
    st->memo = 1;
    *out = st;
    return HL_OK;
}

void hl_stepper_memo(hl_stepper *st, int on) { st->memo = on != 0; }

hl_status hl_stepper_new_rank(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err)
{
    hl_status rc = hl_stepper_new(job, max_tokens, out, err);
    if (!rc)
        (*out)->per_rank = 1;
    return rc;
}

void hl_stepper_free(hl_stepper *st)
{
    if (!st)
        return;
    free(st->lin[0]);
    free(st->lin[1]);
    free(st->io);
    free(st->tok);
    free(st->head);
    free(st->have);
    free(st->dl);
    free(st->layout);
    free(st->pre[0]);
    free(st->pre[1]);
    free(st->nc[0]);
    free(st->nc[1]);
    free(st->dk);
    free(st->mt);
    free(st->mh);
    free(st->mp);
    free(st->mc);
    free(st);
}

double hl_stepper_kv_token_bytes(const hl_stepper *st)
{
    const hl_model *m = &st->job.model;
    double share = m->attn == HL_ATTN_MLA ? 1 : hl_kv_heads_per_gpu(m, st->s.tp) / (double)m->kv_heads;
    hl_precision kv = (hl_precision)hl_job_kv_precision(&st->job);
    double index = hl_kv_index_bytes_sequence(m, kv, 1); /* the indexer's keys are whole on every rank */
    return ((hl_kv_bytes_per_token(m, kv) - index) * share + index) / (double)st->s.pp;
}

double hl_stepper_state_bytes(const hl_stepper *st)
{
    const hl_model *m = &st->job.model;
    return hl_kv_state_bytes(m, (hl_precision)st->job.act_precision) * hl_kv_state_share_per_gpu(m, st->s.tp) /
           (double)st->s.pp;
}

int64_t hl_stepper_gpus(const hl_stepper *st) { return st->s.G; }
int64_t hl_stepper_dp(const hl_stepper *st) { return st->s.dp; }
double hl_stepper_window(const hl_stepper *st) { return st->sliding > 0 ? st->window : 0; }

static void phase_add(hl_phase *a, const hl_phase *b, double k)
{
    a->time_s += b->time_s * k;
    a->compute_s += b->compute_s * k;
    a->memory_s += b->memory_s * k;
    a->comm_s += b->comm_s * k;
    a->overhead_s += b->overhead_s * k;
    a->scaleup_comm_s += b->scaleup_comm_s * k;
    a->scaleout_comm_s += b->scaleout_comm_s * k;
    a->latency_comm_s += b->latency_comm_s * k;
    a->flops += b->flops * k;
    a->hbm_bytes += b->hbm_bytes * k;
}

/* Scales every time and count of *ph by k. */
static void phase_scale(hl_phase *ph, double k)
{
    hl_phase one = *ph;
    memset(ph, 0, sizeof *ph);
    phase_add(ph, &one, k);
}

/* hl_layer_ops of `slots` passes over one stage of `tokens` tokens (one
 * micro-batch) of the whole instance, or of one DP rank with `routed` tokens at
 * the experts (0: the rank's tokens times dp); one pass is cached per whole count. */
static hl_status step_linear(hl_stepper *st, int decode, double tokens, double routed, double slots, hl_phase *out,
                             hl_err *err)
{
    int64_t k = (int64_t)tokens;
    double dp = (double)st->s.dp, group = st->per_rank ? tokens : tokens / dp;
    double alike = st->per_rank ? tokens * dp : tokens; /* routed when every rank has the same tokens */
    if (!(routed > 0))
        routed = alike;
    int cached = tokens == (double)k && k <= st->cap && routed == alike;
    size_t slot = (size_t)decode * (size_t)(st->cap + 1) + (size_t)k;
    if (cached && st->have[slot]) {
        *out = st->lin[decode][k];
        if (slots != 1)
            phase_scale(out, slots);
        return HL_OK;
    }
    hl_acc a;
    hl_acc_summary(&a);
    /* every token of the instance is routed to the experts of its stage (q = 1) */
    hl_status rc = hl_layer_ops(&st->s, &a, group, 1, routed, 1, decode, err);
    if (rc)
        return rc;
    *out = a.ph;
    if (cached) {
        st->lin[decode][k] = a.ph;
        st->have[slot] = 1;
    }
    if (slots != 1)
        phase_scale(out, slots);
    return HL_OK;
}

/* The kernel hl_attn_op builds (the same operator), its per-job shape kept on first use. */
static void step_attn(hl_stepper *st, hl_op *op, double b, double q, double ctx, double window)
{
    int i = q <= st->s.decode_q; /* the only way the shape depends on q (hl_attn_shape_for) */
    if (!st->ash_have[i]) {
        hl_attn_shape_for(&st->s, q, &st->ash[i]);
        st->ash_have[i] = 1;
    }
    hl_attn_op_shaped(&st->s, op, &st->ash[i], b, q, ctx, window);
}

/* The timed parts of hl_io_ops for whole counts rows, tokens <= cap, kept per count
 * (*head = NULL when rows = 0); 0 when the caches cannot be had (out of memory). */
static int io_parts(hl_stepper *st, int64_t rows, int64_t tokens, const hl_io_tok **tok, const hl_io_head **head,
                    hl_status *rc, hl_err *err)
{
    size_t n = (size_t)st->cap + 1;
    unsigned char *have_tok = st->have + 3 * n, *have_head = st->have + 4 * n;
    if ((!st->tok && !(st->tok = malloc(n * sizeof *st->tok))) ||
        (!st->head && !(st->head = malloc(n * sizeof *st->head))))
        return 0;
    double per = rank_div(st); /* a rank's share */
    *rc = HL_OK;
    if (!have_tok[tokens]) {
        if ((*rc = hl_io_tok_time(&st->s, (double)tokens / per, &st->tok[tokens], err)))
            return 1;
        have_tok[tokens] = 1;
    }
    *tok = &st->tok[tokens];
    *head = NULL;
    if (rows > 0) {
        if (!have_head[rows]) {
            if ((*rc = hl_io_head_time(&st->s, (double)rows / per, &st->head[rows], err)))
                return 1;
            have_head[rows] = 1;
        }
        *head = &st->head[rows];
    }
    return 1;
}

/* hl_io_ops of one step: `tokens` tokens of which `rows` sample (a mixed step: prompt chunks
 * sample only where they end). Cached by count when every token samples, as in a decode-only
 * step; otherwise added from its two parts kept per count (the same sums: hl_io_ops_timed). */
static hl_status step_io(hl_stepper *st, double rows, double tokens, hl_phase *out, hl_err *err)
{
    int64_t k = (int64_t)rows, kt = (int64_t)tokens;
    int cached = rows == tokens && rows == (double)k && k <= st->cap;
    size_t slot = 2 * (size_t)(st->cap + 1) + (size_t)k;
    if (cached && st->have[slot]) {
        *out = st->io[k];
        return HL_OK;
    }
    hl_acc a;
    hl_acc_summary(&a);
    double per = rank_div(st); /* a rank's share */
    const hl_io_tok *tok;
    const hl_io_head *head;
    hl_status rc;
    if (st->memo && !cached && rows >= 0 && rows == (double)k && k <= st->cap && tokens >= 1 && tokens == (double)kt &&
        kt <= st->cap && io_parts(st, k, kt, &tok, &head, &rc, err)) {
        if (!rc)
            hl_io_ops_timed(&st->s, &a, tok, head, 1);
    } else
        rc = hl_io_ops(&st->s, &a, rows / per, tokens / per, 1, err);
    if (rc)
        return rc;
    *out = a.ph;
    if (cached) {
        st->io[k] = a.ph;
        st->have[slot] = 1;
    }
    return HL_OK;
}

/* step_io of a mixed step added to *ph: the I/O parts kept per count (io_parts) summed as
 * hl_io_ops_timed sums them into a cleared accumulator for one pass (account_op: the kernel's
 * time plus its launch, to compute or memory by its bound; account_coll: the collective's time,
 * also comm), in its order, then added as phase_add adds them (times 1: exact). Only the four
 * fields the step's time is made of (time, compute, memory, comm: hl_acc_finish) are added; the
 * others of *ph are left. Without the parts (rows = tokens, counts not whole or over cap, out of
 * memory, memo off): step_io and phase_add. */
static hl_status step_io_add(hl_stepper *st, double rows, double tokens, hl_phase *ph, hl_err *err)
{
    int64_t k = (int64_t)rows, kt = (int64_t)tokens;
    const hl_io_tok *tok;
    const hl_io_head *head;
    hl_status rc;
    if (st->memo && rows != tokens && rows >= 0 && rows == (double)k && k <= st->cap && tokens >= 1 &&
        tokens == (double)kt && kt <= st->cap && io_parts(st, k, kt, &tok, &head, &rc, err)) {
        if (rc)
            return rc;
        double time = 0, compute = 0, memory = 0, comm = 0, d = tok->t.time_s + st->s.launch_extra;
        time += d;
        if (tok->t.bound == HL_BOUND_COMPUTE)
            compute += d;
        else
            memory += d;
        if (head) {
            d = head->head_t.time_s + st->s.launch_extra;
            time += d;
            if (head->head_t.bound == HL_BOUND_COMPUTE)
                compute += d;
            else
                memory += d;
            for (int i = 0; i < 2; i++)
                if (head->in[i].ranks > 0) {
                    time += head->out[i].time_s;
                    comm += head->out[i].time_s;
                }
        }
        if (tok->pp_in.ranks > 0) { /* one hand-off to each of the pp - 1 later stages */
            d = tok->pp_out.time_s * (double)(st->s.pp - 1);
            time += d;
            comm += d;
        }
        ph->time_s += time;
        ph->compute_s += compute;
        ph->memory_s += memory;
        ph->comm_s += comm;
        return HL_OK;
    }
    hl_phase io;
    if ((rc = step_io(st, rows, tokens, &io, err)))
        return rc;
    phase_add(ph, &io, 1);
    return HL_OK;
}

/* The decode line of n sequences (cached for n <= cap). */
static hl_status decode_line(hl_stepper *st, double n, struct dline *out, hl_err *err)
{
    int64_t k = (int64_t)n;
    if (st->dl && st->dl[k].have) {
        *out = st->dl[k];
        return HL_OK;
    }
    struct dline d;
    memset(&d, 0, sizeof d);
    double m = hl_pipeline_microbatches(&st->s, n); /* n / m sequences in each micro-batch */
    d.stages = hl_pipeline_slots(&st->s, m, 0);
    hl_status rc = step_linear(st, 1, n / m, 0, d.stages, &d.base, err);
    hl_phase io;
    if (!rc)
        rc = step_io(st, n, n, &io, err);
    if (rc)
        return rc;
    phase_add(&d.base, &io, 1);
    hl_op op;
    hl_op_time t0, t1;
    double per = rank_div(st);
    /* a blended kernel (attn_blend > 1, MODEL.md section 3) keeps its lines without the fixed
     * part: attn_latency + the power mean of each line and the units, at evaluation */
    hl_gpu g = st->job.cluster.gpu;
    if (g.attn_blend > 1) {
        d.blend = g.attn_blend;
        d.alat = g.attn_latency;
        g.attn_latency = g.attn_unit_s = g.attn_blend = 0;
    }
    step_attn(st, &op, n / m / per, 1, 0, 0);
    d.units = d.blend > 1 ? hl_attn_units_s(&st->job.cluster.gpu, op.units, op.q_units) : 0;
    if ((rc = hl_op_time_on(&op, &g, &t0, err)))
        return rc;
    step_attn(st, &op, n / m / per, 1, 1, 0);
    if ((rc = hl_op_time_on(&op, &g, &t1, err)))
        return rc;
    d.ac = t0.compute_s;
    d.bc = t1.compute_s - t0.compute_s;
    d.am = t0.memory_s;
    d.bm = t1.memory_s - t0.memory_s;
    d.lat = st->job.cluster.gpu.kernel_latency + st->s.launch_extra; /* host launch without CUDA graphs */
    d.have = 1;
    if (!st->dl)
        st->dl = calloc((size_t)st->cap + 1, sizeof *st->dl);
    if (st->dl)
        st->dl[k] = d;
    *out = d;
    return HL_OK;
}

/* The cached line of n decoding sequences as an hl_decode_fn (n <= cap, no indexer). */
static hl_status decode_fn(hl_stepper *st, double n, hl_decode_fn *f, hl_err *err)
{
    struct dline d;
    hl_status rc = decode_line(st, n, &d, err);
    if (rc)
        return rc;
    *f = (hl_decode_fn){d.base.time_s,
                        d.base.compute_s + d.base.memory_s,
                        d.base.comm_s,
                        d.ac,
                        d.bc,
                        d.am,
                        d.bm,
                        d.lat,
                        st->full,
                        st->sliding,
                        d.stages,
                        st->job.overlap_decode,
                        st->job.step_overhead,
                        d.blend,
                        d.alat,
                        d.units};
    return HL_OK;
}

/* Whether the job's kernel tables hold decode attention: its time is then the table's at the
 * iteration's context, not the cached line's (linear in the context). */
static int measured_decode(const hl_stepper *st)
{
    return st->s.kern &&
           (hl_kernels_rows(st->s.kern, HL_KT_ATTN_DECODE) > 0 || hl_kernels_rows(st->s.kern, HL_KT_MLA_DECODE) > 0);
}

hl_status hl_stepper_decode_fn(hl_stepper *st, double seqs, hl_decode_fn *f, int *ok, hl_err *err)
{
    *ok = !(st->job.model.index_topk > 0) && !measured_decode(st) && seqs >= 1 && seqs == floor(seqs) &&
          seqs <= (double)st->cap;
    return *ok ? decode_fn(st, seqs, f, err) : HL_OK;
}

/* The kernel of chunk c for full (w = 0) or local (w = 1) layers: step_attn's, kept per length
 * when the chunk starts its prompt (struct new_chunk), else built into *tmp. */
static const hl_op *chunk_op(hl_stepper *st, const hl_iter_chunk *c, int w, hl_op *tmp)
{
    int64_t k = (int64_t)c->tokens;
    if (st->memo && c->offset == 0 && c->tokens == (double)k && k >= 1 && k <= st->cap &&
        (st->nc[w] || (st->nc[w] = calloc((size_t)st->cap + 1, sizeof *st->nc[w])))) {
        struct new_chunk *e = &st->nc[w][k];
        if (!e->have) {
            step_attn(st, &e->op, 1, c->tokens, 0, w ? st->window : 0);
            e->have = 1;
        }
        return &e->op;
    }
    step_attn(st, tmp, 1, c->tokens, c->offset, w ? st->window : 0);
    return tmp;
}

/* The variable-length prefill kernel over every chunk of the step (w: 0 full layers, 1 local
 * layers, 2 sparse attention's indexer), as the busiest of m micro-batches' share (at least the
 * largest chunk) over dp data-parallel groups: the first chunk's operator with the chunks'
 * flops and bytes summed in chunk order. */
static void chunks_attn(hl_stepper *st, const hl_iter *it, int w, double m, double dp, hl_op *out)
{
    const hl_sim_ctx *s = &st->s;
    hl_op tmp, sum;
    double big_f = 0, big_r = 0, big_w = 0; /* the chunk of most flops (the first of them) */
    if (it->n_chunks < 1)
        memset(&sum, 0, sizeof sum);
    for (int32_t i = 0; i < it->n_chunks; i++) {
        const hl_op *op = &tmp;
        if (w == 2)
            hl_indexer_op(s, &tmp, 1, it->chunks[i].tokens, it->chunks[i].offset);
        else
            op = chunk_op(st, &it->chunks[i], w, &tmp);
        if (i == 0)
            sum = *op;
        else {
            sum.flops += op->flops;
            sum.bytes_read += op->bytes_read;
            sum.bytes_written += op->bytes_written;
        }
        if (op->flops > big_f) {
            big_f = op->flops;
            big_r = op->bytes_read;
            big_w = op->bytes_written;
        }
    }
    sum.flops = hl_fmax(sum.flops / m, big_f) / dp;
    sum.bytes_read = hl_fmax(sum.bytes_read / m, big_r) / dp;
    sum.bytes_written = hl_fmax(sum.bytes_written / m, big_w) / dp;
    *out = sum;
}

/* chunks_attn of a step whose only chunk, of kt <= cap tokens, starts its prompt, in one
 * micro-batch (a function of kt and w alone), and its time: kept per kt. NULL when out of memory
 * (the caller builds it), or with *rc set when its time fails. */
static const struct pre_attn *one_chunk_attn(hl_stepper *st, const hl_iter *it, int w, int64_t kt, double dp,
                                             hl_status *rc, hl_err *err)
{
    *rc = HL_OK;
    if (!st->pre[w] && !(st->pre[w] = calloc((size_t)st->cap + 1, sizeof *st->pre[w])))
        return NULL;
    struct pre_attn *e = &st->pre[w][kt];
    if (!e->have) {
        chunks_attn(st, it, w, 1, dp, &e->op);
        if ((*rc = hl_acc_op_time(&st->s, &e->op, &e->t, &e->measured, err)))
            return NULL;
        e->have = 1;
    }
    return e;
}

/* What account_op adds to the step's time and its compute or memory part for `times` executions
 * of a kernel timed t (its launch `launch` added); the sums the step's time does not read are left. */
static inline void op_add(hl_phase *ph, hl_op_time t, double launch, double times)
{
    double dt = (t.time_s + launch) * times;
    ph->time_s += dt;
    if (t.bound == HL_BOUND_COMPUTE)
        ph->compute_s += dt;
    else
        ph->memory_s += dt;
}

/* The decode kernel of b sequences (hl_attn_decode), kept per whole b <= cap. */
static const hl_attn_decode *decode_kernel(hl_stepper *st, double b, hl_attn_decode *own)
{
    const hl_sim_ctx *s = &st->s;
    int64_t k = (int64_t)b;
    int keep =
        b == (double)k && k >= 0 && k <= st->cap && (st->dk || (st->dk = calloc((size_t)st->cap + 1, sizeof *st->dk)));
    struct dker *e = keep ? &st->dk[k] : NULL;
    if (e && e->have)
        return &e->d;
    int i = 1 <= s->decode_q; /* step_attn's shape of q = 1 */
    if (!st->ash_have[i]) {
        hl_attn_shape_for(&st->s, 1, &st->ash[i]);
        st->ash_have[i] = 1;
    }
    hl_attn_shape sh = st->ash[i]; /* hl_attn_op_shaped's, but the context */
    sh.batch = b;
    sh.new_tokens = 1;
    sh.context = 0;
    sh.window = 0;
    hl_attn_decode *d = e ? &e->d : own;
    hl_attn_decode_init(d, &sh, (hl_precision)s->j->act_precision, &s->c->gpu);
    if (e)
        e->have = 1;
    return d;
}

/* What step_attn and hl_acc_op add for `times` decode kernels of b sequences at context ctx (full
 * layers), without the operator (hl_attn_decode: the same time): its launch added, to the time
 * and to compute or memory by its bound, as account_op adds them (op_add). 0, with nothing added,
 * where the operator is wanted: memo off, kernel tables (a measured time), or a kernel
 * hl_attn_decode does not take. */
static int decode_kernel_add(hl_stepper *st, hl_phase *ph, double b, double ctx, double times)
{
    hl_attn_decode own;
    hl_op_time t;
    if (!st->memo || st->s.kern || !hl_attn_decode_at(decode_kernel(st, b, &own), ctx, &t))
        return 0;
    if (times > 0) /* (hl_acc_op adds nothing for none) */
        op_add(ph, t, st->s.launch_extra, times);
    return 1;
}

/* A mixed step's kept parts in small records of what its time reads, per count (at load the
 * steps meet thousands of token counts and prompt lengths: read from the kept structs, 88 to 432
 * B apart, they missed the cache, most of mixed_fast's time). Filled from those structs once. */
struct mix_tok {    /* per token count: one 64-byte line (mix_alloc aligns them) */
    double lin[4];  /* s: the linear pass's time, compute, memory, comm (lin[0][k], slots 1) */
    double emb, pp; /* s: the embedding kernel and its launch; the pp - 1 hand-offs (pp_on) */
    uint8_t have_lin, have_io, emb_compute, pp_on;
    uint8_t pad[12];
};
_Static_assert(sizeof(struct mix_tok) == 64, "struct mix_tok: one cache line");
struct mix_head {        /* per count of sampled rows */
    double head, out[2]; /* s: the LM head kernel and its launch; the head collectives (on[i]) */
    uint8_t have, compute, on[2];
};
struct mix_pre {           /* per prompt length: the kernel of a step whose only chunk starts it */
    double time;           /* s: pre_attn's time, launch not added */
    int32_t compute, have; /* its bound is compute */
};
struct mix_chunk { /* per prompt length: the counts of a prompt's first chunk's kernel */
    double flops, read, written;
    int have;
};

/* The mixed-step records (NULL when out of memory: the general route then). */
static int mix_alloc(hl_stepper *st)
{
    size_t n = (size_t)st->cap + 1;
    if (!st->mt && (st->mt = aligned_alloc(64, n * sizeof *st->mt)))
        memset(st->mt, 0, n * sizeof *st->mt);
    if (!st->mh)
        st->mh = calloc(n, sizeof *st->mh);
    if (!st->mp)
        st->mp = calloc(n, sizeof *st->mp);
    if (!st->mc)
        st->mc = calloc(n, sizeof *st->mc);
    return st->mt && st->mh && st->mp && st->mc;
}

/* step_io_add's I/O parts of `rows` sampled rows of k tokens (whole, rows != k, both <= cap) from
 * the records, filled from io_parts; 0 where io_parts has none (out of memory, or *rc: its error). */
static int mix_io(hl_stepper *st, int64_t rows, int64_t k, const struct mix_tok **tk, const struct mix_head **hd,
                  hl_status *rc, hl_err *err)
{
    struct mix_tok *T = &st->mt[k];
    struct mix_head *H = rows > 0 ? &st->mh[rows] : NULL;
    *rc = HL_OK;
    if (!T->have_io || (H && !H->have)) {
        const hl_io_tok *tok;
        const hl_io_head *head;
        if (!io_parts(st, rows, k, &tok, &head, rc, err) || *rc)
            return 0;
        T->emb = tok->t.time_s + st->s.launch_extra;
        T->emb_compute = tok->t.bound == HL_BOUND_COMPUTE;
        T->pp_on = tok->pp_in.ranks > 0;
        T->pp = T->pp_on ? tok->pp_out.time_s * (double)(st->s.pp - 1) : 0;
        T->have_io = 1;
        if (H) {
            H->head = head->head_t.time_s + st->s.launch_extra;
            H->compute = head->head_t.bound == HL_BOUND_COMPUTE;
            for (int i = 0; i < 2; i++) {
                H->on[i] = head->in[i].ranks > 0;
                H->out[i] = head->out[i].time_s;
            }
            H->have = 1;
        }
    }
    *tk = T;
    *hd = H;
    return 1;
}

/* The four sums of a step's time (hl_acc_finish's inputs). */
typedef struct mix_sums {
    double time, compute, memory, comm;
} mix_sums;

/* op_add into the four sums: `times` executions of a kernel of time t (s, launch not added). */
static inline void mix_op(mix_sums *m, double t, int compute, double launch, double times)
{
    double dt = (t + launch) * times;
    m->time += dt;
    if (compute)
        m->compute += dt;
    else
        m->memory += dt;
}

/* chunks_attn of full layers (w = 0) in one micro-batch (m = 1), the counts of chunks after the
 * first that start their prompts from the records; the same sums in the same order. */
static void mix_chunks(hl_stepper *st, const hl_iter *it, double dp, hl_op *out)
{
    hl_op tmp, sum;
    double big_f = 0, big_r = 0, big_w = 0;
    for (int32_t i = 0; i < it->n_chunks; i++) {
        const hl_iter_chunk *c = &it->chunks[i];
        double f, r, w;
        int64_t k = (int64_t)c->tokens;
        if (i == 0) { /* chunk_op's kernel, built (the same op as the kept one: reading that missed the cache) */
            step_attn(st, &sum, 1, c->tokens, c->offset, 0);
            f = sum.flops, r = sum.bytes_read, w = sum.bytes_written;
        } else if (c->offset == 0 && c->tokens == (double)k && k >= 1 && k <= st->cap) {
            struct mix_chunk *e = &st->mc[k];
            if (!e->have) {
                const hl_op *op = chunk_op(st, c, 0, &tmp);
                *e = (struct mix_chunk){op->flops, op->bytes_read, op->bytes_written, 1};
            }
            f = e->flops, r = e->read, w = e->written;
        } else {
            const hl_op *op = chunk_op(st, c, 0, &tmp);
            f = op->flops, r = op->bytes_read, w = op->bytes_written;
        }
        if (i > 0) {
            sum.flops += f;
            sum.bytes_read += r;
            sum.bytes_written += w;
        }
        if (f > big_f) {
            big_f = f;
            big_r = r;
            big_w = w;
        }
    }
    sum.flops = hl_fmax(sum.flops / 1, big_f) / dp;
    sum.bytes_read = hl_fmax(sum.bytes_read / 1, big_r) / dp;
    sum.bytes_written = hl_fmax(sum.bytes_written / 1, big_w) / dp;
    *out = sum;
}

/* hl_stepper_time of a mixed step (prompt chunks, with or without decodes) in the common case:
 * one pipeline stage (m = md = stages = 1), full-attention layers only, no indexer, no vision
 * encoder run, no kernel tables, memo on, the linear part kept for its token count, the I/O
 * parts kept (rows != tokens). The same terms in the same order as the general route below, into
 * the four sums the time is made of instead of the accumulator, from small records per count
 * (struct mix_tok); 0, with nothing done but kept parts filled, where a part is not so (the
 * general route then times it, or gives its error). */
static int mixed_fast(hl_stepper *st, const hl_iter *it, double *time_s, hl_status *rc, hl_err *err)
{
    const hl_sim_ctx *s = &st->s;
    *rc = HL_OK;
    if (!st->memo || s->kern || s->pp > 1 || st->sliding != 0 || st->job.model.index_topk > 0 || it->n_chunks < 1 ||
        (it->images > 0 && s->m->vision_layers > 0 && s->j->image_tokens > 0) || !mix_alloc(st))
        return 0;
    double tokens = it->decode_seqs, largest = 1;
    for (int32_t i = 0; i < it->n_chunks; i++)
        tokens += it->chunks[i].tokens;
    for (int32_t i = 0; i < it->n_chunks; i++)
        largest = hl_fmax(largest, it->chunks[i].tokens);
    if (!(tokens > 0))
        return 0;
    double dp = rank_div(st), mb_tok = hl_fmax(tokens / 1, largest), rows = it->logits_rows;
    double mb_routed = it->routed > 0 ? it->routed * mb_tok / tokens : 0;
    /* step_linear's kept pass (decode = 0, slots = 1) */
    int64_t k = (int64_t)mb_tok, kr = (int64_t)rows, kt = (int64_t)tokens;
    double alike = st->per_rank ? mb_tok * (double)s->dp : mb_tok, routed = mb_routed > 0 ? mb_routed : alike;
    if (!(mb_tok == (double)k && k <= st->cap && routed == alike))
        return 0;
    struct mix_tok *T = &st->mt[k];
    if (!T->have_lin) {
        if (!st->have[k])
            return 0;
        const hl_phase *l = &st->lin[0][k];
        T->lin[0] = l->time_s, T->lin[1] = l->compute_s, T->lin[2] = l->memory_s, T->lin[3] = l->comm_s;
        T->have_lin = 1;
    }
    /* step_io_add's kept parts: whole counts within the cache, rows != tokens */
    if (!(rows != tokens && rows >= 0 && rows == (double)kr && kr <= st->cap && tokens >= 1 && tokens == (double)kt &&
          kt <= st->cap))
        return 0;
    mix_sums m = {T->lin[0], T->lin[1], T->lin[2], T->lin[3]};
    if (it->decode_seqs > 0) {
        hl_phase ph = {.time_s = m.time, .compute_s = m.compute, .memory_s = m.memory, .comm_s = m.comm};
        if (!decode_kernel_add(st, &ph, it->decode_seqs / 1 / dp, it->decode_ctx_mean, st->full))
            return 0;
        m.time = ph.time_s, m.compute = ph.compute_s, m.memory = ph.memory_s;
    }
    if (st->full > 0) { /* the prompts' kernel over the full layers */
        int64_t kc = (int64_t)it->chunks[0].tokens;
        if (it->n_chunks == 1 && it->chunks[0].offset == 0 && it->chunks[0].tokens == (double)kc && kc >= 1 &&
            kc <= st->cap) {
            struct mix_pre *P = &st->mp[kc];
            if (!P->have) {
                const struct pre_attn *e = one_chunk_attn(st, it, 0, kc, dp, rc, err);
                if (*rc || !e)
                    return 0;
                *P = (struct mix_pre){e->t.time_s, e->t.bound == HL_BOUND_COMPUTE, 1};
            }
            mix_op(&m, P->time, P->compute, s->launch_extra, st->full);
        } else {
            hl_op sum;
            hl_op_time t;
            mix_chunks(st, it, dp, &sum);
            if (hl_op_time_on(&sum, &s->c->gpu, &t, NULL))
                return 0;
            mix_op(&m, t.time_s, t.bound == HL_BOUND_COMPUTE, s->launch_extra, st->full);
        }
    }
    const struct mix_tok *tk;
    const struct mix_head *hd;
    if (!mix_io(st, kr, kt, &tk, &hd, rc, err))
        return *rc != HL_OK;
    { /* step_io_add's sums, then added to the step's */
        double time = 0, compute = 0, memory = 0, comm = 0, d = tk->emb;
        time += d;
        if (tk->emb_compute)
            compute += d;
        else
            memory += d;
        if (hd) {
            d = hd->head;
            time += d;
            if (hd->compute)
                compute += d;
            else
                memory += d;
            for (int i = 0; i < 2; i++)
                if (hd->on[i]) {
                    time += hd->out[i];
                    comm += hd->out[i];
                }
        }
        if (tk->pp_on) {
            d = tk->pp;
            time += d;
            comm += d;
        }
        m.time += time;
        m.compute += compute;
        m.memory += memory;
        m.comm += comm;
    }
    double hidden = hl_comm_hidden(st->job.overlap_prefill, m.comm, m.compute + m.memory);
    if (hidden > 0)
        m.time -= hidden;
    if (st->parts) { /* tests: the parts as hl_acc_finish leaves the accumulator's */
        st->parts[0] = m.time;
        st->parts[1] = m.compute;
        st->parts[2] = m.memory;
        st->parts[3] = hidden > 0 ? m.comm * (1 - hidden / m.comm) : m.comm;
    }
    *time_s = m.time + st->job.step_overhead; /* the framework's cost per iteration */
    if (!isfinite(*time_s) || *time_s < 0)
        *rc = hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", *time_s);
    return 1;
}

hl_status hl_stepper_time(hl_stepper *st, const hl_iter *it, double *time_s, hl_err *err)
{
    int64_t nd = (int64_t)it->decode_seqs;
    int indexer = st->job.model.index_topk > 0; /* sparse attention: the indexer's sum below, no cached line */
    double per = rank_div(st);                  /* divisor of the counts: one rank's share */
    int alike = !(it->routed > 0) || it->routed == it->decode_seqs * (st->per_rank ? (double)st->s.dp : 1);
    if (!indexer && !measured_decode(st) && it->n_chunks == 0 && it->decode_seqs >= 1 &&
        it->decode_seqs == (double)nd && nd <= st->cap && it->logits_rows == it->decode_seqs &&
        alike) { /* decode only: evaluate the cached line (hot path) */
        hl_decode_fn f;
        hl_status rc = decode_fn(st, it->decode_seqs, &f, err);
        if (rc)
            return rc;
        *time_s = hl_decode_fn_time(&f, it->decode_ctx_mean, it->decode_win_mean);
        if (!isfinite(*time_s) || *time_s < 0)
            return hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", *time_s);
        return HL_OK;
    }
    hl_status frc;
    if (mixed_fast(st, it, time_s, &frc, err))
        return frc;
    *time_s = 0;
    double tokens = it->decode_seqs;
    for (int32_t i = 0; i < it->n_chunks; i++)
        tokens += it->chunks[i].tokens;
    if (tokens <= 0)
        return HL_OK;
    const hl_sim_ctx *s = &st->s;
    int decode = it->n_chunks == 0;
    double dp = per, largest = 1; /* the most new tokens of one sequence */
    for (int32_t i = 0; i < it->n_chunks; i++)
        largest = hl_fmax(largest, it->chunks[i].tokens);
    /* The busiest of m micro-batches (balanced, but a sequence is not split: at
     * least the largest chunk; the decodes spread over at most md of them), over
     * `stages` slots. One stage: the whole iteration, m = md = stages = 1. */
    double m = hl_pipeline_microbatches(s, it->decode_seqs + it->n_chunks);
    double md = hl_pipeline_microbatches(s, it->decode_seqs), stages = hl_pipeline_slots(s, m, 0);
    double dseq = it->decode_seqs / md / dp; /* decoding sequences per group in the busiest micro-batch */
    hl_acc a;
    hl_acc_summary(&a);
    a.overlap = decode ? st->job.overlap_decode : st->job.overlap_prefill;
    /* the busiest micro-batch's tokens, and its share of the tokens the lock-step group routes */
    double mb_tok = hl_fmax(tokens / m, largest), mb_routed = it->routed > 0 ? it->routed * mb_tok / tokens : 0;
    hl_status rc = step_linear(st, decode, mb_tok, mb_routed, stages, &a.ph, err);
    if (rc)
        return rc;
    hl_op op;
    if (it->decode_seqs > 0) { /* one decode kernel at the mean context: time is linear in the context */
        if (!decode_kernel_add(st, &a.ph, dseq, it->decode_ctx_mean, st->full * stages)) {
            step_attn(st, &op, dseq, 1, it->decode_ctx_mean, 0);
            if ((rc = hl_acc_op(s, &a, &op, st->full * stages, err)))
                return rc;
        }
        if (st->sliding * stages > 0) { /* (hl_acc_op adds nothing for none) */
            step_attn(st, &op, dseq, 1, it->decode_win_mean, 0);
            if ((rc = hl_acc_op(s, &a, &op, st->sliding * stages, err)))
                return rc;
        }
        if (indexer) { /* the indexer scores every key: the mean context */
            hl_indexer_op(s, &op, dseq, 1, it->decode_ctx_mean);
            if ((rc = hl_acc_op(s, &a, &op, st->sliding * stages, err)))
                return rc;
        }
    }
    if (it->n_chunks > 0) { /* one variable-length prefill kernel over every chunk of the group */
        int64_t kt = (int64_t)it->chunks[0].tokens;
        int one = st->memo && it->n_chunks == 1 && it->chunks[0].offset == 0 && m == 1 &&
                  it->chunks[0].tokens == (double)kt && kt >= 1 &&
                  kt <= st->cap;      /* a new prompt whole: its kernel and time kept */
        for (int w = 0; w < 3; w++) { /* full layers, local layers, sparse attention's indexer */
            double layers = w ? st->sliding : st->full;
            if (layers <= 0 || (w == 2 && !indexer))
                continue;
            const struct pre_attn *e =
                one && w < 2 && layers * stages > 0 ? one_chunk_attn(st, it, w, kt, dp, &rc, err) : NULL;
            if (rc)
                return rc;
            if (e) {
                hl_acc_op_timed(s, &a, &e->op, e->t, layers * stages, e->measured);
                continue;
            }
            hl_op sum;
            chunks_attn(st, it, w, m, dp, &sum);
            if ((rc = hl_acc_op(s, &a, &sum, layers * stages, err)))
                return rc;
        }
    }
    /* the vision encoder of each prompt that starts here, once before the first stage, as hl_sim_run's prefill */
    if (it->images > 0 && (rc = hl_vision_ops(s, &a, it->images / dp, err)))
        return rc;
    /* embedding and stage hand-offs for every token; LM head, logits gather,
     * token broadcast only for the sequences that sample */
    if ((rc = step_io_add(st, it->logits_rows, tokens, &a.ph, err)))
        return rc;
    hl_acc_finish(&a);
    *time_s = a.ph.time_s + st->job.step_overhead; /* the framework's cost per iteration */
    if (st->parts) {
        st->parts[0] = a.ph.time_s;
        st->parts[1] = a.ph.compute_s;
        st->parts[2] = a.ph.memory_s;
        st->parts[3] = a.ph.comm_s;
    }
    if (!isfinite(*time_s) || *time_s < 0)
        return hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", *time_s);
    return HL_OK;
}

hl_status hl_stepper_time_parts(hl_stepper *st, const hl_iter *it, double *time_s, double parts[4], hl_err *err)
{
    for (int i = 0; i < 4; i++)
        parts[i] = NAN; /* a decode-only step timed by its line leaves them */
    st->parts = parts;
    hl_status rc = hl_stepper_time(st, it, time_s, err);
    st->parts = NULL;
    return rc;
}
