/* Roofline helpers internal to the core (core/src/roofline.c). */
#ifndef HL_ROOFLINE_INT_H
#define HL_ROOFLINE_INT_H
#include <math.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "hbdlab/hw.h"

#include "hbdlab/roofline.h"

/* hl_op_gemm's fields but the name, which the caller sets (the same expressions: the same bits). */
static inline void hl_op_gemm_dims(hl_op *op, double m, double n, double k, double act_bytes, double weight_bytes,
                                   double out_bytes, hl_precision math)
{
    op->kind = HL_OP_GEMM;
    op->precision = math;
    op->flops = 2 * m * n * k;
    op->bytes_read = m * k * act_bytes + k * n * weight_bytes;
    op->bytes_written = m * n * out_bytes;
    op->rows = m;
    op->n = n;
    op->k = k;
    op->groups = 1;
    op->units = op->ctx = op->q_units = 0;
    op->fixed_s = 0;
}

/* hl_op_gemm for a name that is a string literal of at most 31 characters: its bytes and NUL
 * copied by their constant size (hl_op_gemm's strlen and copy cost ~45 instructions an operator). */
#define HL_OP_GEMM_LIT(op, lit, ...)                                                                 \
    (memcpy((op)->name, "" lit, sizeof(char[sizeof(lit) <= sizeof((op)->name) ? sizeof(lit) : -1])), \
     hl_op_gemm_dims((op), __VA_ARGS__))

/* s of a decode attention kernel's work units (MODEL.md section 3): attn_unit_s per CTA, one CTA per
 * sequence x KV head (batch_kv = batch kv_heads) or, with attn_unit_qheads, per sequence x query head
 * (batch_q = batch heads); the fitted kernels keep one CTA resident per SM, a kernel with
 * attn_ctas_per_sm = n > 1 overlaps n CTAs' fixed latencies: attn_unit_s / n each. Both fields 0:
 * batch_kv attn_unit_s, the same product as before they existed. */
static inline double hl_attn_units_s(const hl_gpu *g, double batch_kv, double batch_q)
{
    double n = g->attn_unit_qheads > 0 ? batch_q : batch_kv;
    return g->attn_ctas_per_sm > 1 ? n * g->attn_unit_s / g->attn_ctas_per_sm : n * g->attn_unit_s;
}

/* hl_op_attention's fields but the name (the caller's), and the operator named by a string
 * literal the way HL_OP_GEMM_LIT names a GEMM. */
static inline void hl_op_attention_dims(hl_op *op, const hl_attn_shape *s, hl_precision math);
#define HL_OP_ATTENTION_LIT(op, lit, s, math)                                                        \
    (memcpy((op)->name, "" lit, sizeof(char[sizeof(lit) <= sizeof((op)->name) ? sizeof(lit) : -1])), \
     hl_op_attention_dims((op), (s), (math)))

/* The GEMM parameters of one precision class, fallbacks resolved (hw.h). */
typedef struct hl_gemm_class {
    double eff_c, eff_m, latency, k_latency, quant_bytes;
    double k0;       /* grouped GEMMs: the K of the fixed part of a tile's main loop */
    double dense_k0; /* dense GEMMs: the same (gemm_k0*; 0 = off) */
} hl_gemm_class;

/* A GPU's three GEMM classes: [0] 16-bit and wider, [1] FP8 and INT8, [2] FP4. */
typedef struct hl_gemm_classes {
    hl_gemm_class c[3];
} hl_gemm_classes;
void hl_gemm_classes_of(const hl_gpu *g, hl_gemm_classes *k);

/* hl_op_time_on with gpu's classes resolved once (k = hl_gemm_classes_of(gpu)), for callers that
 * read only time_s, compute_s, memory_s and bound: intensity and ridge are 0. The same bits. */
hl_status hl_op_time_lean(const hl_op *op, const hl_gpu *gpu, const hl_gemm_classes *k, hl_op_time *out, hl_err *err);

/* The parts of an attention shape's FLOPs and bytes that do not depend on its context. */
typedef struct hl_attn_line {
    double flops_per_pair, pair_dims; /* FLOP per (query, key) pair = their product */
    double q, q_pairs;                /* new tokens per sequence, q (q + 1) / 2 */
    double window, batch;
    double q_read, kv_token_bytes, written; /* B: q read per sequence, KV per key, output written */
} hl_attn_line;

/* FLOPs and bytes read of the attention of line l after `context` cached keys (hl_op_attention's
 * counts: the same expressions, so the same bits). */
static inline void hl_attn_counts(const hl_attn_line *l, double context, double *flops, double *read)
{
    double q = l->q, w = l->window, pairs; /* hl_attn_pairs, its full causal case inline */
    if (q <= 0)
        pairs = 0;
    else if (w <= 0 || context + q <= w)
        pairs = q * context + l->q_pairs;
    else
        pairs = hl_attn_pairs(q, context, w);
    *flops = l->flops_per_pair * pairs * l->pair_dims;
    double keys = context + q;
    if (w > 0 && keys > w && q == 1)
        keys = w; /* decode with a window reads only the window */
    *read = l->batch * (l->q_read + keys * l->kv_token_bytes);
}

/* The parts of shape s's counts that do not depend on its context, grouped as the expressions
 * below evaluate them (left to right), so the counts from them are the same bits. */
static inline void hl_attn_line_of(const hl_attn_shape *s, hl_attn_line *l)
{
    l->flops_per_pair = 2 * s->batch * s->heads; /* times (qk_dim + v_dim): scores q.k and the sum of values */
    l->pair_dims = s->qk_dim + s->v_dim;
    l->q = s->new_tokens;
    l->q_pairs = s->new_tokens * (s->new_tokens + 1) / 2;
    l->window = s->window;
    l->batch = s->batch;
    l->q_read = s->new_tokens * s->heads * s->qk_dim * s->act_bytes;
    l->kv_token_bytes = s->kv_token_bytes;
    l->written = s->batch * s->new_tokens * s->heads * s->v_dim * s->act_bytes;
}

/* hl_op_attention's fields but the name (declared above), inline: layer.c and sim.c build an
 * attention operator a few times a sweep point. */
static inline void hl_op_attention_dims(hl_op *op, const hl_attn_shape *s, hl_precision math)
{
    op->kind = HL_OP_ATTENTION;
    op->precision = math;
    hl_attn_line l;
    hl_attn_line_of(s, &l);
    hl_attn_counts(&l, s->context, &op->flops, &op->bytes_read);
    op->bytes_written = l.written;
    op->rows = s->new_tokens; /* query rows per sequence (tile padding of prefill kernels) */
    op->n = op->k = op->groups = 0;
    op->units = s->batch * s->kv_heads;
    op->ctx = s->window > 0 ? 0 : s->context;
    op->q_units = s->batch * s->heads;
    op->fixed_s = 0;
}

/* hl_op_moe_experts (roofline.h) inline, for the phase accumulator (layer.c): the same operators. */
static inline void hl_moe_experts_ops(hl_op *up, hl_op *down, const hl_moe_shape *s, hl_precision math)
{
    /* El experts' GEMMs of tokens_per_expert rows each: the useful FLOPs and activations are
     * those of every local expert; only the `active` experts read their weights and are
     * padded to whole tiles, each with El * tokens_per_expert / active rows. */
    double El = s->local_experts, act = hl_fmin(s->active_experts, El), tok = s->tokens_per_expert;
    double F = s->inter, h = s->hidden;
    HL_OP_GEMM_LIT(up, "experts", tok, 2 * F, h, s->act_bytes, s->weight_bytes, s->act_bytes, math);
    HL_OP_GEMM_LIT(down, "experts", tok, h, F, s->act_bytes, s->weight_bytes, s->act_bytes, math);
    hl_op *ops[2] = {up, down};
    for (int i = 0; i < 2; i++) {
        hl_op *o = ops[i];
        double wbytes = o->n * o->k * s->weight_bytes;
        o->kind = HL_OP_GROUPED_GEMM;
        o->flops *= El;
        o->bytes_read = (o->bytes_read - wbytes) * El + wbytes * act;
        o->bytes_written *= El;
        o->groups = act > 0 ? act : 1;
        o->rows = act > 0 ? tok * El / act : tok;
    }
}

/* hl_op_time_on of hl_op_attention(s, math) for a decode kernel (one query row, new_tokens = 1,
 * no window) that is not blended (attn_blend <= 1), along its context: the shape's factors kept
 * (hl_attn_decode_init; s->context is not read), then hl_attn_decode_at gives the time at a
 * context without building the operator, the same bits (the same expressions). */
typedef struct hl_attn_decode {
    int ok; /* such a kernel (else hl_attn_decode_at always returns 0) */
    hl_attn_line line;
    double peak_eff, bw; /* FLOP/s (peak eff_attn), B/s */
    double part, fixed;  /* s: attn_latency + units attn_unit_s; kernel_latency */
    double ridge;        /* FLOP/B */
} hl_attn_decode;

void hl_attn_decode_init(hl_attn_decode *d, const hl_attn_shape *s, hl_precision math, const hl_gpu *gpu);

/* 1 and *out at `context` cached keys; 0 where d does not apply or hl_op_time_on would refuse
 * the counts (the caller then takes the operator's way, which gives the error). */
static inline int hl_attn_decode_at(const hl_attn_decode *d, double context, hl_op_time *out)
{
    double flops, read;
    if (!d->ok)
        return 0;
    hl_attn_counts(&d->line, context, &flops, &read);
    if (!(flops >= 0 && flops < INFINITY && read >= 0 && read < INFINITY))
        return 0;
    double bytes = read + d->line.written, c = flops / d->peak_eff, m = bytes / d->bw;
    out->compute_s = c + d->part;
    out->memory_s = m + d->part;
    out->time_s = hl_fmax(out->compute_s, out->memory_s) + d->fixed;
    out->intensity = bytes > 0 ? flops / bytes : INFINITY;
    out->ridge = d->ridge;
    out->bound = out->compute_s >= out->memory_s ? HL_BOUND_COMPUTE : HL_BOUND_MEMORY;
    return 1;
}

/* A blended decode attention kernel (attn_blend > 1) along its context, for the sums of many
 * steps: hl_attn_stream_at gives, where it is so bit for bit, max(compute_s, memory_s) of
 * hl_op_time_on on hl_op_attention of the shape at that context as attn_latency + its KV
 * stream (the work units and compute vanish beside it), without the blend's pow calls. */
typedef struct hl_attn_stream {
    int ok; /* a blended one-row kernel with a known peak */
    hl_attn_line line;
    double bw, peak_eff, units, latency; /* B/s, FLOP/s, s, s */
    double r_max;                        /* largest units / KV-stream ratio whose blend term vanishes */
    double root2;                        /* 2^(1/p), rounded up: the blend of two terms is at most this x the larger */
} hl_attn_stream;

void hl_attn_stream_init(hl_attn_stream *a, const hl_attn_shape *s, hl_precision math, const hl_gpu *gpu);
/* hl_attn_stream_at from the counts hl_attn_counts gave at that context (a->ok): for a caller
 * that needs them too, so they are not computed twice. */
static inline int hl_attn_stream_of_counts(const hl_attn_stream *a, double flops, double read, double *t)
{
    /* flops and bytes finite and >= 0 (hl_op_time_on's checks; NaN fails them) */
    if (!(flops >= 0 && read >= 0 && flops < INFINITY && read < INFINITY))
        return 0;
    double m = (read + a->line.written) / a->bw, c = flops / a->peak_eff, big = c > a->units ? c : a->units;
    if (!(m > 0 && m < INFINITY && 2 * big <= m && a->units / m <= a->r_max))
        return 0;
    *t = a->latency + m;
    return 1;
}

/* 1 and *t (s) at `context` cached keys; 0 where it is not so (hl_op_time_on decides then).
 * Why the bits are the same: roofline.c, above hl_attn_stream_init. Inline: sim.c calls it a
 * few dozen times a run. */
static inline int hl_attn_stream_at(const hl_attn_stream *a, double context, double *t)
{
    if (!a->ok)
        return 0;
    double flops, read;
    hl_attn_counts(&a->line, context, &flops, &read);
    return hl_attn_stream_of_counts(a, flops, read, t);
}

/* Whether mem >= c_0 + (c_1 - c_0) i is sure, where c_x is hl_op_time_on's compute_s of the
 * shape at context ctx0 + tau x (sim.c's memory-or-compute call on a decode sum of i + 1
 * steps, mem its memory side the same way): 1 when it is, 0 when this cannot tell (then the
 * c_x must be computed). flops01: hl_attn_counts's flops at contexts ctx0 and ctx0 + tau, which
 * the caller has (so they are not counted twice). Without the blend's pow calls; why it holds:
 * roofline.c. */
int hl_attn_stream_mem_side(const hl_attn_stream *a, const double flops01[2], double ctx0, double tau, double i,
                            double mem);

/* The roofline time of one operator (docs/MODEL.md section 3), inline: roofline.c's hl_op_time_on
 * and hl_op_time_lean, and its branches on the operator's numbers (hl_gemm_time_parts,
 * hl_attn_time, hl_plain_time) for the phase accumulator (layer.c), which times ten operators a
 * sweep point: one body, so every caller computes the same expressions, the same bits. */

/* (a^p + b^p + c^p)^(1/p), scaled by the largest so nothing overflows; p = 0: the max (roofline.c). */
double hl_blend(double a, double b, double c, double p);

/* The GEMM parameters of precision p on g, fallbacks resolved (roofline.c). */
hl_gemm_class hl_gemm_class_of(const hl_gpu *g, hl_precision p);

/* B/s an attention kernel streams its KV cache at (eff_mem_attn, else eff_mem). */
static inline double hl_attn_bw(const hl_gpu *g)
{
    return g->hbm_bw * (g->eff_mem_attn > 0 ? g->eff_mem_attn : g->eff_mem);
}

/* Padding factor of whole tiles of `tile` rows over `rows` rows (1 when either is unset). */
static inline double hl_tile_pad(double rows, double tile)
{
    return rows >= 1 && tile > 1 ? ceil(rows / tile) * tile / rows : 1;
}

/* The index of precision p's class in hl_gemm_classes: [0] 16-bit and wider, [1] FP8 and INT8, [2] FP4. */
static inline int hl_gemm_class_index(hl_precision p) { return p == HL_FP4 ? 2 : p == HL_FP8 || p == HL_INT8 ? 1 : 0; }

/* hl_op_time_body's GEMM branch on the operator's numbers: a GEMM (grouped: a grouped one) of
 * `flops` FLOP moving `bytes` B (read + written), `rows` rows x K `k` per group, `groups` groups
 * (>= 1), `fixed` s of latencies beyond the class's; class cp, peak FLOP/s. Sets out's time_s,
 * compute_s and memory_s, *eff and *bw (the ridge's). For callers that have a dense GEMM's
 * numbers at hand (layer.c), the same expressions as the operator's way, so the same bits. */
static inline __attribute__((always_inline)) void
hl_gemm_time_parts(const hl_gpu *gpu, const hl_gemm_class *cp, double peak, int grouped, double flops, double bytes,
                   double rows, double k, double groups, double fixed, hl_op_time *out, double *eff_out, double *bw_out)
{
    double eff = cp->eff_c;
    if (grouped) {
        /* each expert tile runs a main loop over K behind a fixed prologue/epilogue, so a grouped
         * GEMM reaches eff_grouped x K / (K + k0) (docs/MODEL.md section 3) */
        eff *= (gpu->eff_grouped > 0 ? gpu->eff_grouped : 1) * (cp->k0 > 0 && k > 0 ? k / (k + cp->k0) : 1);
        eff = hl_fmin(eff, 1); /* eff_grouped may exceed 1 (a grouped kernel can beat the dense fit), not the peak */
    } else if (cp->dense_k0 > 0 && k > 0) {
        /* a dense tile's main loop over K runs behind the same fixed prologue/epilogue
         * (loading the first K block, the scales and the output write): eff x K / (K + k0) */
        eff *= k / (k + cp->dense_k0);
    }
    double bw = gpu->hbm_bw * cp->eff_m;
    /* tensor-core kernels compute whole tiles of gemm_tile_rows rows (per group) */
    out->compute_s = flops * hl_tile_pad(rows, gpu->gemm_tile_rows) / (peak * eff);
    /* the activation quantisation inside a quantised GEMM reads and writes rows x K elements;
     * a fused MoE quantises once per token in its permutation (moe_latency), not per expert GEMM */
    double quant = k > 0 && !grouped ? cp->quant_bytes * rows * groups * k : 0;
    out->memory_s = (bytes + quant) / bw;
    double loop = k > 0 ? cp->k_latency * k : 0;
    out->time_s = hl_blend(out->compute_s, out->memory_s, loop, gpu->gemm_blend) + fixed + cp->latency;
    *eff_out = eff;
    *bw_out = bw;
}

/* hl_op_time_body's branch for the operators that are neither GEMMs nor attention (elementwise
 * kernels, norms): `flops` FLOP moving `bytes` B, `fixed` s of latencies. Sets out's time_s,
 * compute_s and memory_s. */
static inline __attribute__((always_inline)) void hl_plain_time(const hl_gpu *gpu, double peak, double flops,
                                                                double bytes, double fixed, hl_op_time *out)
{
    double eff = gpu->eff_gemm, bw = gpu->hbm_bw * gpu->eff_mem;
    out->compute_s = flops / (peak * eff);
    out->memory_s = bytes / bw;
    out->time_s = hl_fmax(out->compute_s, out->memory_s) + fixed;
}

/* hl_op_time_body's attention branch: op's `bytes` B (read + written), peak FLOP/s, `fixed` s of
 * latencies. Sets out's time_s, compute_s and memory_s. */
static inline __attribute__((always_inline)) void hl_attn_time(const hl_op *op, const hl_gpu *gpu, double peak,
                                                               double bytes, double fixed, hl_op_time *out)
{
    double eff = gpu->eff_attn, bw = hl_attn_bw(gpu);
    /* a fixed part (the kernel's own latency and one cost per sequence x KV head work unit)
     * is on both sides, so compute and memory time stay linear in the context (section 6);
     * with attn_blend > 1 a decode kernel's unit costs run partly under its KV streaming
     * instead: a power mean of the two (one CTA per sequence x KV head; MODEL.md section 3) */
    double units = hl_attn_units_s(gpu, op->units, op->q_units), part = gpu->attn_latency + units;
    double pad = 1, T = gpu->attn_tile_rows, q = op->rows;
    int blended = q <= 1 && gpu->attn_blend > 1;
    if (q > 1 && T > 1) {
        /* prefill: query tiles of T rows; tile i (0-based) sees ctx + (i+1)T keys, so the kernel
         * computes T * (nq ctx + T nq(nq+1)/2) pairs for q ctx + q(q+1)/2 useful ones (derived;
         * a sliding window is counted by the useful pairs only) */
        double nq = ceil(q / T), useful = q * op->ctx + q * (q + 1) / 2;
        double tiled = T * (nq * op->ctx + T * nq * (nq + 1) / 2);
        pad = useful > 0 && tiled > useful ? tiled / useful : 1;
        part += op->q_units * nq * gpu->attn_tile_s + gpu->attn_prefill_latency;
    }
    double c = op->flops * pad / (peak * eff), m = bytes / bw;
    out->compute_s = blended ? gpu->attn_latency + hl_blend(c, units, 0, gpu->attn_blend) : c + part;
    out->memory_s = blended ? gpu->attn_latency + hl_blend(m, units, 0, gpu->attn_blend) : m + part;
    out->time_s = hl_fmax(out->compute_s, out->memory_s) + fixed;
}

/* hl_op_time_on with the GPU's GEMM classes given (k; NULL: from gpu) and, with `lean`, without
 * intensity and ridge (set to 0): the same expressions on the same values, so the same bits.
 * Inlined whole into every caller: gcc split it otherwise, and hl_op_time_lean (ten calls a
 * sweep point) paid a wrapper's call and argument moves before the split-off body. */
static inline __attribute__((always_inline)) hl_status
hl_op_time_body(const hl_op *op, const hl_gpu *gpu, const hl_gemm_classes *k, int lean, hl_op_time *out, hl_err *err)
{
    /* x >= 0 && x < inf: what !(x >= 0) || isinf(x) refuses (NaN, negatives, infinities), in two compares */
    if (!(op->flops >= 0 && op->flops < INFINITY && op->bytes_read >= 0 && op->bytes_read < INFINITY &&
          op->bytes_written >= 0 && op->bytes_written < INFINITY))
        return hl_fail(err, HL_EINVAL, "operator '%s': flops and bytes must be finite and >= 0 (got %g, %g, %g)",
                       op->name, op->flops, op->bytes_read, op->bytes_written);
    double peak; /* hl_gpu_peak's value, read here when it has one (a call per operator was 25 instructions) */
    if ((unsigned)op->precision < HL_PRECISION_COUNT && gpu->peak_flops[op->precision] > 0) {
        peak = gpu->peak_flops[op->precision];
    } else {
        hl_status s = hl_gpu_peak(gpu, (hl_precision)op->precision, &peak, err);
        if (s)
            return s;
    }
    double bytes = op->bytes_read + op->bytes_written;
    double fixed = gpu->kernel_latency + (op->fixed_s > 0 ? op->fixed_s : 0);
    double eff, bw;
    if (op->kind == HL_OP_GEMM || op->kind == HL_OP_GROUPED_GEMM) {
        hl_precision pr = (hl_precision)op->precision;
        hl_gemm_class own;
        const hl_gemm_class *cp = k ? &k->c[hl_gemm_class_index(pr)] : &own;
        if (!k)
            own = hl_gemm_class_of(gpu, pr);
        hl_gemm_time_parts(gpu, cp, peak, op->kind == HL_OP_GROUPED_GEMM, op->flops, bytes, op->rows, op->k,
                           op->groups > 0 ? op->groups : 1, fixed, out, &eff, &bw);
    } else if (op->kind == HL_OP_ATTENTION) {
        eff = gpu->eff_attn;
        bw = hl_attn_bw(gpu);
        hl_attn_time(op, gpu, peak, bytes, fixed, out);
    } else {
        eff = gpu->eff_gemm;
        bw = gpu->hbm_bw * gpu->eff_mem;
        hl_plain_time(gpu, peak, op->flops, bytes, fixed, out);
    }
    if (lean) {
        out->intensity = out->ridge = 0;
    } else {
        out->intensity = bytes > 0 ? op->flops / bytes : INFINITY;
        out->ridge = peak * eff / bw;
    }
    out->bound = out->compute_s >= out->memory_s ? HL_BOUND_COMPUTE : HL_BOUND_MEMORY;
    return HL_OK;
}

#endif
