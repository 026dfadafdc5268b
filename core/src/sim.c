/* The job's two phases on the critical-path GPU: prefill once (pipeline fill
 * included), decode summed over every step (closed form over the growing
 * context, or step by step), speculative decoding, then the job-level rates,
 * memory check, bound and cost of hl_sim_run. Formulas: docs/MODEL.md
 * section 6. The operators of a pass are layer.c's; the mapping, mapping.c's. */
#include "hbdlab/sim.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "framework_int.h"
#include "kernel_match_int.h"
#include "hbdlab/cost.h"
#include "hbdlab/kvcache.h"
#include "layer_int.h"
#include "memory_int.h"
#include "roofline_int.h"
#include "sim_int.h"

const char *hl_bound_name(int32_t b)
{
    static const char *const names[] = {"compute", "hbm", "scale-up", "scale-out", "latency"};
    return b >= 0 && b <= 4 ? names[b] : "?";
}

/* Sum over integer k in [k0, k1] of max(a1 + b1 k, a2 + b2 k) (two lines). */
static double sum_max_lines(double a1, double b1, double a2, double b2, double k0, double k1)
{
    if (k1 < k0)
        return 0;
    double lo = k0, hi = k1, total = 0;
    if (b1 != b2) {
        double x = (a2 - a1) / (b1 - b2); /* lines cross at x */
        if (x > lo && x < hi) {
            double split = floor(x);
            total += sum_max_lines(a1, b1, a2, b2, lo, split);
            lo = split + 1;
        }
    }
    double n = hi - lo + 1, mid = (lo + hi) / 2;
    double s1 = n * (a1 + b1 * mid), s2 = n * (a2 + b2 * mid);
    return total + hl_fmax(s1, s2);
}

/* Adds an attention sum over `steps` steps to the phase: `sum` s of kernel time
 * per layer plus one kernel latency per step (a measured sum holds it already), times `layers`. */
static void add_attention_sum(const hl_sim_ctx *s, hl_acc *a, const char *name, double layers, double sum, double steps,
                              int mem_bound, double flops, double bytes, int measured)
{
    double lat = (measured ? 0 : s->c->gpu.kernel_latency) + s->launch_extra; /* launch: MODEL.md 6.1 */
    double total = (sum + lat * steps) * layers;
    a->ph.time_s += total;
    a->stage_s[a->stage] += total; /* (HL_TBO_CORE: run_decode sets it) */
    if (mem_bound)
        a->ph.memory_s += total;
    else
        a->ph.compute_s += total;
    a->ph.flops += flops * layers;
    a->ph.hbm_bytes += bytes * layers;
    if (a->summary)
        return;
    hl_item *it = hl_acc_item(a, name, NULL, NULL);
    it->calls += steps * layers;
    it->time_s += total;
    it->flops += flops * layers;
    it->bytes += bytes * layers;
    if (measured)
        it->measured_calls += steps * layers;
}

/* The measured decode attention of n steps of one new token, step i after in + tau i cached
 * keys (window w), from the job's kernel tables: 1 and *sum (s per layer), or 0 when one step
 * is not covered. Up to 64 steps each; more: 64 runs of equal length, each at its middle step's
 * context (the table is smooth in log-log between its grid points). */
static int measured_decode_sum(const hl_sim_ctx *s, double q, double tau, double n, double in, double w, double *sum)
{
    enum { RUNS = 64 };
    if (q != 1)
        return 0;
    double total = 0, t;
    for (int k = 0; k < RUNS; k++) {
        double i0 = n <= RUNS ? k : floor(n * k / RUNS), i1 = n <= RUNS ? k + 1 : floor(n * (k + 1) / RUNS);
        if (i0 >= n || i1 <= i0)
            continue;
        double steps = hl_fmin(i1, n) - i0;
        if (!hl_kmatch_attention(s, s->b_local, 1, in + tau * (i0 + floor((steps - 1) / 2)), w, &t))
            return 0;
        total += steps * t;
    }
    *sum = total;
    return 1;
}

/* Attention of n decode steps of q new tokens per sequence, step i = 0..n-1
 * starting after in + tau*i cached keys; with a window w (0 = none) a query
 * sees at most w keys, so the cached context stops growing at w - 1. Compute
 * and memory times are each linear in i until then, constant after: the sum of
 * their max is taken in closed form, split where the two lines cross (derived;
 * plain decode is q = tau = 1). */
/* The kernel summed: the attention itself, or sparse attention's indexer. */
enum { PART_ATTENTION = 0, PART_INDEXER = 1 };

static void part_op(const hl_sim_ctx *s, int part, hl_op *op, double b, double q, double ctx)
{
    if (part == PART_INDEXER)
        hl_indexer_op(s, op, b, q, ctx);
    else
        hl_attn_op(s, op, b, q, ctx, 0);
}

/* Kernel time max(compute, memory) of `part` after ctx cached keys (summed by blended_sum). */
static hl_status part_time(const hl_sim_ctx *s, int part, double b, double q, double ctx, double *out, hl_err *err)
{
    hl_op op;
    hl_op_time t;
    part_op(s, part, &op, b, q, ctx);
    hl_status st = hl_op_time_on(&op, &s->c->gpu, &t, err);
    *out = hl_fmax(t.compute_s, t.memory_s);
    return st;
}

/* Sum over i = 0..n-1 of the kernel time g(i) after in + tau*i keys when it is not linear in
 * the context (a blended decode kernel, attn_blend > 1). Step by step up to BLEND_EXACT steps;
 * beyond, the midpoint form of Euler-Maclaurin (derived, MODEL.md section 3):
 *   sum_i g(i) = [integral of g over -1/2 .. n - 1/2] - (g'(n - 1/2) - g'(-1/2)) / 24 + O(g^(3))
 * with the integral by adaptive Simpson (relative tolerance BLEND_TOL, BLEND_START panels first
 * so the knee of the power mean is not stepped over) and g' from the end steps' differences.
 * g is smooth but for the knee where units and KV stream cross, so a few dozen evaluations
 * replace thousands (each is one hl_op_time_on with its pow calls). */
enum { BLEND_EXACT = 64, BLEND_START = 4, BLEND_DEPTH = 30 };
#define BLEND_TOL 1e-8

/* No stream (ok = 0): hl_attn_stream_at and friends decline it, so callers take the operator's way. */
static const hl_attn_stream no_stream = {.ok = 0};

typedef struct blend_fn {
    const hl_sim_ctx *s;
    int part;
    double b, q, in, tau;
    const hl_attn_stream *fast; /* PART_ATTENTION: hl_attn_op's shape along its context (else ok = 0) */
    hl_err *err;
    hl_status st;
} blend_fn;

/* g at step i: where the KV stream dwarfs the rest, hl_attn_stream_at gives part_time's
 * bits without its pow calls (roofline.c); else part_time. */
static double blend_at(blend_fn *f, double i)
{
    double v = 0, ctx = f->in + f->tau * i;
    if (f->st)
        return v;
    if (hl_attn_stream_at(f->fast, ctx, &v))
        return v;
    f->st = part_time(f->s, f->part, f->b, f->q, ctx, &v, f->err);
    return v;
}

/* Simpson on [a, b] (fa, fm, fb at a, the middle, b; whole = its one-panel estimate), halved
 * until the two halves agree with the whole within 15 eps (Richardson's correction added). */
static double blend_simpson(blend_fn *f, double a, double b, double fa, double fm, double fb, double whole, double eps,
                            int depth)
{
    double m = (a + b) / 2, flm = blend_at(f, (a + m) / 2), frm = blend_at(f, (m + b) / 2);
    double left = (m - a) / 6 * (fa + 4 * flm + fm), right = (b - m) / 6 * (fm + 4 * frm + fb);
    double diff = left + right - whole;
    if (depth <= 0 || fabs(diff) <= 15 * eps || f->st)
        return left + right + diff / 15;
    return blend_simpson(f, a, m, fa, flm, fm, left, eps / 2, depth - 1) +
           blend_simpson(f, m, b, fm, frm, fb, right, eps / 2, depth - 1);
}

/* fast: the attention's stream (PART_ATTENTION: hl_attn_stream_init), else NULL. */
static hl_status blended_sum(const hl_sim_ctx *s, int part, const hl_attn_stream *fast, double b, double q, double in,
                             double tau, double n, double *sum, hl_err *err)
{
    blend_fn f = {.s = s,
                  .part = part,
                  .b = b,
                  .q = q,
                  .in = in,
                  .tau = tau,
                  .fast = fast ? fast : &no_stream,
                  .err = err,
                  .st = HL_OK};
    double total = 0, first, last, mid;
    if (n <= BLEND_EXACT) {
        for (double i = 0; i < n && !f.st; i++)
            total += blend_at(&f, i);
    } else if (hl_attn_stream_at(f.fast, in - tau, &first) && hl_attn_stream_at(f.fast, in + tau * n, &last) &&
               hl_attn_stream_at(f.fast, in + tau * (n - 1) / 2, &mid)) {
        /* the KV stream dwarfs the rest at both ends of the span the sum below reads, so at
         * every step between (its tests are affine in the context, or decrease with it: the
         * units' share): g(i) = attn_latency + M(in + tau i), affine in i, and its steps sum to
         * n g((n - 1) / 2) exactly (derived), which the midpoint Euler-Maclaurin form gives
         * too, up to the rounding of its ~20 evaluations (~1e-15) */
        total = n * mid;
    } else {
        double lo = -0.5, h = n / BLEND_START, g[BLEND_START + 1];
        for (int k = 0; k <= BLEND_START; k++)
            g[k] = blend_at(&f, lo + h * k);
        double scale = fabs(g[0]) + fabs(g[BLEND_START]);
        for (int k = 0; k < BLEND_START && !f.st; k++) {
            double a = lo + h * k, fm = blend_at(&f, a + h / 2);
            double whole = h / 6 * (g[k] + 4 * fm + g[k + 1]);
            total += blend_simpson(&f, a, a + h, g[k], fm, g[k + 1], whole, BLEND_TOL * scale * h, BLEND_DEPTH);
        }
        /* the end slopes at -1/2 and n - 1/2 from the steps beside them */
        double d0 = blend_at(&f, 0) - blend_at(&f, -1), d1 = blend_at(&f, n) - blend_at(&f, n - 1);
        total -= (d1 - d0) / 24;
    }
    *sum = total;
    return f.st;
}

/* part_op at context ctx, the attention's from sh (its shape, built once by the caller: its
 * context is set here), else sh is not read. */
static void part_op_at(const hl_sim_ctx *s, int part, hl_attn_shape *sh, hl_op *op, double b, double q, double ctx)
{
    if (part == PART_ATTENTION) {
        sh->context = ctx;
        HL_OP_ATTENTION_LIT(op, "attention", sh, (hl_precision)s->j->act_precision);
    } else {
        part_op(s, part, op, b, q, ctx);
    }
}

/* The blended decode kernel's stream of the attention's shape (hl_attn_shape_of: b sequences, q new
 * tokens after `in` cached keys; hl_attn_stream_init), kept for the thread's last job class, b and
 * q: it reads the shape's per-job fields, b, q and the GPU, never the context, so the shape is
 * built only when the stream is (a hit builds nothing). Without a class (a draft model, a
 * breakdown run) it is built into the thread's scratch slot each call. */
static const hl_attn_stream *stream_of(const hl_sim_ctx *s, double b, double q, double in)
{
    static _Thread_local struct {
        uint64_t job_class; /* 0: none */
        double b, q;
        hl_attn_stream a;
    } memo, scratch;
    hl_attn_shape sh;
    if (!s->job_class) {
        hl_attn_shape_of(s, &sh, b, q, in, 0);
        hl_attn_stream_init(&scratch.a, &sh, (hl_precision)s->j->act_precision, &s->c->gpu);
        return &scratch.a;
    }
    if (memo.job_class != s->job_class || memo.b != b || memo.q != q) {
        hl_attn_shape_of(s, &sh, b, q, in, 0);
        hl_attn_stream_init(&memo.a, &sh, (hl_precision)s->j->act_precision, &s->c->gpu);
        memo.job_class = s->job_class;
        memo.b = b;
        memo.q = q;
    }
    return &memo.a;
}

/* attention_sum from `in` cached keys at step 0, of kernel `part`. */
static hl_status attention_sum_from(const hl_sim_ctx *s, hl_acc *a, int part, double layers, double w, double q,
                                    double tau, double n, double in, hl_err *err)
{
    if (layers <= 0 || n <= 0)
        return HL_OK;
    double b = s->b_local, i_grow = n - 1; /* last index still growing */
    if (w > 0)
        i_grow = hl_fmin(i_grow, floor((w - 1 - in) / tau));
    hl_op op;
    hl_op_time t;
    hl_status st;
    double sum = 0, flops = 0, bytes = 0, n_grow = 0;
    int mem_bound = 0;
    if (i_grow >= 0) {
        double c[2], m[2], f[2], by[2]; /* at i = 0 and i = 1 */
        hl_attn_shape sh; /* the attention's shape (hl_attn_op is the two calls), built where an operator is */
        const hl_attn_stream *fast = &no_stream;
        int blended = q <= 1 && s->c->gpu.attn_blend > 1; /* not linear in the context (hl_op_time_on) */
        if (part == PART_ATTENTION && blended)
            fast = stream_of(s, b, q, in);
        if (part == PART_ATTENTION && !fast->ok)
            hl_attn_shape_of(s, &sh, b, q, in, 0);
        hl_op ops[2];
        int streamed = fast->ok; /* both memory sides from the stream: compute_s may not be needed */
        for (int x = 0; x < 2; x++) {
            if (fast->ok) { /* hl_op_attention's counts from the stream's line: the same bits */
                double read;
                hl_attn_counts(&fast->line, in + tau * x, &f[x], &read);
                by[x] = read + fast->line.written;
                streamed = streamed && hl_attn_stream_of_counts(fast, f[x], read, &m[x]);
                continue;
            }
            part_op_at(s, part, &sh, &ops[x], b, q, in + tau * x);
            f[x] = ops[x].flops;
            by[x] = ops[x].bytes_read + ops[x].bytes_written;
        }
        n_grow = i_grow + 1;
        /* blended, the two steps' times only say whether the sum is memory- or compute-bound:
         * when the memory side (its bits: hl_attn_stream_at's are hl_op_time_on's memory_s
         * there) is surely above the compute side, hl_op_time_on is not called */
        double mem_line = streamed ? m[0] + (m[1] - m[0]) * i_grow : 0;
        if (streamed && hl_attn_stream_mem_side(fast, f, in, tau, i_grow, mem_line)) {
            mem_bound = 1;
        } else {
            if (fast->ok) /* the stream gave the counts above (fast->ok: PART_ATTENTION): the shape now */
                hl_attn_shape_of(s, &sh, b, q, in, 0);
            for (int x = 0; x < 2; x++) {
                if (fast->ok) /* not built above */
                    part_op_at(s, part, &sh, &ops[x], b, q, in + tau * x);
                if ((st = hl_op_time_on(&ops[x], &s->c->gpu, &t, err)))
                    return st;
                c[x] = t.compute_s;
                m[x] = t.memory_s;
            }
            mem_bound = m[0] + (m[1] - m[0]) * i_grow >= c[0] + (c[1] - c[0]) * i_grow;
        }
        if (blended) {
            double grown;
            if ((st = blended_sum(s, part, part == PART_ATTENTION ? fast : NULL, b, q, in, tau, n_grow, &grown, err)))
                return st;
            sum += grown;
        } else
            sum += sum_max_lines(c[0], c[1] - c[0], m[0], m[1] - m[0], 0, i_grow);
        flops += n_grow * f[0] + (f[1] - f[0]) * i_grow * n_grow / 2;
        bytes += n_grow * by[0] + (by[1] - by[0]) * i_grow * n_grow / 2;
    }
    double n_flat = n - n_grow;
    if (n_flat > 0) { /* context fixed at the window */
        part_op(s, part, &op, b, q, w - 1);
        if ((st = hl_op_time_on(&op, &s->c->gpu, &t, err)))
            return st;
        sum += n_flat * hl_fmax(t.compute_s, t.memory_s);
        flops += n_flat * op.flops;
        bytes += n_flat * (op.bytes_read + op.bytes_written);
        if (n_grow == 0)
            mem_bound = t.memory_s >= t.compute_s;
    }
    int measured = s->kern && part == PART_ATTENTION && measured_decode_sum(s, q, tau, n, in, w, &sum);
    add_attention_sum(s, a, part == PART_INDEXER ? "indexer" : "attention", layers, sum, n, mem_bound, flops, bytes,
                      measured);
    return HL_OK;
}

static hl_status attention_sum(const hl_sim_ctx *s, hl_acc *a, double layers, double w, double q, double tau, double n,
                               hl_err *err)
{
    return attention_sum_from(s, a, PART_ATTENTION, layers, w, q, tau, n, s->j->input, err);
}

/* Decode attention of chunked local layers (Llama-4): the step after c cached
 * keys attends to the c mod C of its own chunk. The steps split at the chunk
 * boundaries into runs whose context grows by one per step from 0 (from
 * input mod C for the first): the first run, the whole chunks (all equal:
 * summed once, times their count), and the last. */
static hl_status chunked_decode_sum(const hl_sim_ctx *s, hl_acc *a, double layers, double C, double n, hl_err *err)
{
    double c0 = fmod(s->j->input, C), first = hl_fmin(n, C - c0);
    hl_status st = attention_sum_from(s, a, PART_ATTENTION, layers, 0, 1, 1, first, c0, err);
    double rest = n - first, whole = floor(rest / C), last = rest - whole * C;
    if (!st && whole > 0)
        st = attention_sum_from(s, a, PART_ATTENTION, layers * whole, 0, 1, 1, C, 0, err);
    if (!st && last > 0)
        st = attention_sum_from(s, a, PART_ATTENTION, layers, 0, 1, 1, last, 0, err);
    return st;
}

/* Decode attention over all steps for `layers` layers with window w (0 = none):
 * step j sees keys k = input + j, j = 1..output-1; closed form, or step by step
 * with exact_steps (the reference the closed form is tested against). */
static hl_status decode_attention(const hl_sim_ctx *s, hl_acc *a, double layers, double w, int chunked, hl_err *err)
{
    double b = s->b_local, in = s->j->input, steps = s->j->output - 1;
    if (layers <= 0 || steps <= 0)
        return HL_OK;
    if (!s->j->exact_steps)
        return chunked ? chunked_decode_sum(s, a, layers, w, steps, err)
                       : attention_sum(s, a, layers, w, 1, 1, steps, err);
    hl_op op;
    hl_status st;
    for (double k = in + 1; k <= in + steps; k++) {
        if (fmod(k - in, 4096) == 0 && hl_interrupt_pending()) /* Ctrl-C: a huge output must not trap us */
            return hl_fail(err, HL_EINTR, "interrupted after %.0f of %.0f exact decode steps", k - in - 1, steps);
        if (chunked)
            hl_attn_op(s, &op, b, 1, fmod(k - 1, w), 0);
        else
            hl_attn_op(s, &op, b, 1, k - 1, w);
        if ((st = hl_acc_op(s, a, &op, layers, err)))
            return st;
    }
    return HL_OK;
}

/* Expected tokens a decode step adds per sequence. With gamma draft tokens,
 * each accepted with probability alpha independently, the step keeps the
 * accepted prefix plus the target's own next token:
 * E = sum_{i=0..gamma} alpha^i = (1 - alpha^(gamma+1)) / (1 - alpha), and gamma + 1
 * at alpha = 1 (Leviathan, Kalman, Matias 2023, eq. 1). With per-position acceptance a_k
 * (position k accepted with probability a_k given positions < k were; spec_accept = {...}) the
 * step keeps k drafts with probability (prod_{i<=k} a_i)(1 - a_{k+1}), so
 * E = 1 + sum_{k=1..gamma} prod_{i<=k} a_i (derived; all a_k = alpha gives the sum above).
 * 1 without speculation. */
static double spec_tokens_per_step(const hl_job *j)
{
    double g = j->spec_tokens, al = j->spec_accept;
    if (g <= 0)
        return 1;
    if (j->spec_accept_n > 0) {
        double e = 1, run = 1;
        for (int32_t k = 0; k < j->spec_accept_n && k < (int32_t)g; k++)
            e += run *= j->spec_accept_pos[k];
        return e;
    }
    return al >= 1 ? g + 1 : (1 - pow(al, g + 1)) / (1 - al);
}

/* The draft model's context (spec_draft_model, run as hl_job_draft), its job in one buffer per
 * thread: the prefill and the decode use it in turn, never at once. */
static hl_status draft_ctx(const hl_job *j, hl_sim_ctx *ds, hl_err *err)
{
    static _Thread_local hl_job dj; /* 11 KB: off the stack */
    return hl_sim_resolve_draft(j, &dj, ds, err);
}

/* The verify steps' target part of a speculative decode with a draft model, after the target's
 * layers: n verify steps at contexts input + tau i, each after gamma sequential decode passes of
 * the draft model (spec_draft_model, run as hl_job_draft: the target's TP and DP on the same
 * GPUs) on one token per sequence: its own layers, attention over its own KV of the same context
 * and its LM head, as its own decode step would time them (no framework overhead per draft
 * pass, as the MTP drafter); then the target's attention, LM head of every position and the
 * per-step overhead. */
static hl_status draft_model_decode(const hl_sim_ctx *s, hl_acc *dec, double n, double tau, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding, dfull, dsliding;
    hl_layer_split(s, &full, &sliding);
    double window = hl_local_window(s), b = s->b_local, g = j->spec_tokens, q = g + 1;
    hl_sim_ctx ds;
    hl_status st = draft_ctx(j, &ds, err);
    if (st)
        return st;
    hl_layer_split(&ds, &dfull, &dsliding);
    if ((st = hl_layer_ops(&ds, dec, b, 1, j->batch, n * g, 1, err)))
        return st;
    hl_event *saved = dec->ev;
    dec->ev = NULL; /* closed-form sums are not single events */
    if ((st = attention_sum(&ds, dec, dfull * g, 0, 1, tau, n, err)) ||
        (st = attention_sum(&ds, dec, dsliding * g, hl_local_window(&ds), 1, tau, n, err)) ||
        (st = attention_sum(s, dec, full, 0, q, tau, n, err)) ||
        (st = attention_sum(s, dec, sliding, window, q, tau, n, err)) ||
        (s->m->index_topk > 0 && (st = attention_sum_from(s, dec, PART_INDEXER, sliding, 0, q, tau, n, j->input, err))))
        return st;
    dec->ev = saved;
    if ((st = hl_io_ops(s, dec, b * q, b * q, n, err)) || (st = hl_io_ops(&ds, dec, b, b, n * g, err)))
        return st;
    hl_acc_overhead(dec, j->step_overhead, n);
    return HL_OK;
}

/* Speculative decode (docs/MODEL.md 6.2): output - 1 tokens in n = (output - 1)/E
 * verify steps of q = gamma + 1 tokens per sequence (every layer, logits of
 * every position), each after gamma draft passes of spec_draft_layers
 * target-shaped layers and an LM head on one token per sequence. */
static hl_status decode_speculative(const hl_sim_ctx *s, hl_acc *dec, double steps, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding;
    hl_layer_split(s, &full, &sliding);
    /* chunked layers are summed as a sliding window of a chunk here (an upper bound) */
    double window = hl_local_window(s), b = s->b_local, stages = (double)s->pp;
    double g = j->spec_tokens, q = g + 1, tau = spec_tokens_per_step(j), n = steps / tau;
    double draft_layers = g * j->spec_draft_layers; /* per verify step */
    hl_status st;
    if ((st = hl_layer_ops(s, dec, b, q, j->batch * q, n * stages, 1, err)))
        return st;
    if (j->spec_draft)
        return draft_model_decode(s, dec, n, tau, err);
    if (draft_layers > 0 && (st = hl_layer_ops(s, dec, b, 1, j->batch, n * draft_layers / s->stage_layers, 1, err)))
        return st;
    hl_event *saved = dec->ev;
    dec->ev = NULL; /* closed-form sums are not single events */
    if ((st = attention_sum(s, dec, full * stages, 0, q, tau, n, err)) ||
        (st = attention_sum(s, dec, sliding * stages, window, q, tau, n, err)) ||
        (st = attention_sum(s, dec, draft_layers, 0, 1, tau, n, err)) ||
        (s->m->index_topk > 0 &&
         (st = attention_sum_from(s, dec, PART_INDEXER, sliding * stages, 0, q, tau, n, j->input, err))))
        return st;
    dec->ev = saved;
    if ((st = hl_io_ops(s, dec, b * q, b * q, n, err)) || (g > 0 && (st = hl_io_ops(s, dec, b, b, n * g, err))))
        return st;
    hl_acc_overhead(dec, j->step_overhead, n);
    return HL_OK;
}

hl_status hl_sim_run(const hl_job *j, hl_result *r, hl_err *err)
{
    if (!j || !r) /* through LuaJIT FFI a nil is a NULL: refused, never dereferenced */
        return hl_fail(err, HL_EINVAL, "hl_sim_run: the %s is NULL", !j ? "job" : "result");
    return hl_sim_run_trusted(j, r, 0, err);
}

/* An empty phase accumulator logging events into ev (none in summary mode),
 * hiding `overlap` of its communication under compute. */
static void start_phase(const hl_job *j, hl_acc *a, hl_event *ev, hl_item *items, double overlap)
{
    if (j->summary_only)
        hl_acc_summary(a); /* all but the items' index, which summary mode never reads (layer_int.h) */
    else
        memset(a, 0, sizeof *a);
    a->summary = j->summary_only;
    a->ev = j->summary_only ? NULL : ev;
    a->items = j->summary_only ? NULL : items;
    a->overlap = overlap;
}

/* Two-batch overlap in prefill (docs/MODEL.md 6.5): the phase's layers ran as two micro-batches of
 * half the batch; S holds their stage sums (both halves), G the compute-bound FP8 GEMMs of each stage.
 * The compute stream runs attention-side compute c1 (prep, core and shared experts), then experts c2,
 * of one half while the other half's dispatch x1 or combine x2 is in flight, four pairs per layer:
 * C1a|X2b, C1b|X1a, C2a|X1b, C2b|X2a (SGLang's prefill order; halves equal). The communication kernels
 * hold a share f of the SMs. SGLang runs the whole overlapped pass with DeepGEMM confined to the other
 * 1 - f of them (two_batch_overlap.py, `configure_deep_gemm_num_sms`), so the GEMM part g of a compute
 * stage takes g / (1 - f) whether or not communication is in flight; the other kernels o lose f of the
 * SMs only while they overlap it: a pair lasts max(x, g / (1 - f) + o + f min(x, o)). Returns the s
 * hidden: the serial sum minus the four pairs (0 when the pairs take longer: nothing hides). */
static double tbo_pair(double c, double g, double x, double f)
{
    double o = c - g;
    return hl_fmax(x, g / (1 - f) + o + f * hl_fmin(x, o));
}

static double tbo_hidden_prefill(const double S[HL_TBO_STAGES], const double G[HL_TBO_STAGES], double f)
{
    double c1 = (S[HL_TBO_ATTN] + S[HL_TBO_CORE] + S[HL_TBO_SHARED]) / 2, x1 = S[HL_TBO_DISPATCH] / 2;
    double c2 = S[HL_TBO_EXPERTS] / 2, x2 = S[HL_TBO_COMBINE] / 2;
    double g1 = (G[HL_TBO_ATTN] + G[HL_TBO_CORE] + G[HL_TBO_SHARED]) / 2, g2 = G[HL_TBO_EXPERTS] / 2;
    double pairs =
        tbo_pair(c1, g1, x2, f) + tbo_pair(c1, g1, x1, f) + tbo_pair(c2, g2, x1, f) + tbo_pair(c2, g2, x2, f);
    return hl_fmax(0, 2 * (c1 + x1 + c2 + x2) - pairs);
}

/* Two-batch overlap in decode (docs/MODEL.md 6.5): SGLang's decode strategy (operations_strategy.py,
 * five stages per layer, micro-batch B two stages behind A) with DeepEP's low-latency kernels and their
 * receive hook (one stream; a transfer holds no SM between its send and receive kernels). A's dispatch
 * is in flight under A's shared experts and B's next prep (norms, projections), A's combine under B's
 * attention core (attention kernel, output projection, router); B's likewise under A's. The experts
 * overlap nothing. So of the stage sums S (both halves, halves equal) min(X1, SHARED + PREP) +
 * min(X2, CORE) is hidden. */
static double tbo_hidden_decode(const double S[HL_TBO_STAGES])
{
    return hl_fmin(S[HL_TBO_DISPATCH], S[HL_TBO_SHARED] + S[HL_TBO_ATTN]) + hl_fmin(S[HL_TBO_COMBINE], S[HL_TBO_CORE]);
}

/* Whether the job's phases run as two micro-batches (two_batch_overlap with EP, one stage). */
static int tbo_on(const hl_sim_ctx *s) { return s->j->two_batch_overlap && s->ep > 1 && s->pp == 1; }

/* The draft model's prefill (spec_draft_model; docs/MODEL.md 6.2): after the target's, the draft
 * runs over the same prompt (its own KV of the context) and samples its first draft token from
 * the last position: its layers on b_local x input tokens, attention of the prompt over itself
 * (sliding layers within their window; chunked-local layers taken as a window of a chunk, an upper
 * bound), its embedding and LM head on b_local rows; one stage, no framework overhead of its own
 * (the target's pass is charged once). */
static hl_status draft_model_prefill(const hl_sim_ctx *s, hl_acc *pre, hl_err *err)
{
    const hl_job *j = s->j;
    hl_sim_ctx ds;
    hl_status st = draft_ctx(j, &ds, err);
    if (st)
        return st;
    double full, sliding, b = s->b_local, in = j->input;
    hl_layer_split(&ds, &full, &sliding);
    hl_op op;
    if ((st = hl_layer_ops(&ds, pre, b, in, j->batch * in, 1, 0, err)))
        return st;
    hl_attn_op(&ds, &op, b, in, 0, 0);
    if ((st = hl_acc_op(&ds, pre, &op, full, err)))
        return st;
    if (sliding > 0) {
        hl_attn_op(&ds, &op, b, in, 0, hl_local_window(&ds));
        if ((st = hl_acc_op(&ds, pre, &op, sliding, err)))
            return st;
    }
    return hl_io_ops(&ds, pre, b, b * in, 1, err);
}

/* Two-batch overlap runs the MoE layers as two micro-batches and the leading dense-FFN layers whole, before
 * them: SGLang's DeepSeek forward (python/sglang/srt/models/deepseek_v2.py, DeepseekV2Model.forward) runs
 * `normal_num_layers = first_k_dense_replace if forward_batch.can_run_tbo` layers one by one on the whole
 * batch and hands only the rest to model_forward_maybe_tbo (docs/MODEL.md 6.5). *ovl: the overlapped layers
 * (b_local halved; the dense layers after a MoE one, moe_every, stay among them), *lead: the leading dense
 * layers, all SMs, nothing to hide (no layers when the model has none). One stage (tbo_on). */
static void tbo_split_layers(const hl_sim_ctx *s, hl_sim_ctx *ovl, hl_sim_ctx *lead)
{
    double L = s->stage_layers, moe = L * (1 - s->dense_frac);
    double Ld = fmin(fmax(0, (double)s->m->dense_layers), L - moe); /* leading dense layers */
    *ovl = *s;
    ovl->b_local = s->b_local / 2;
    ovl->stage_layers = L - Ld;
    ovl->dense_frac = L - Ld > 0 ? 1 - moe / (L - Ld) : 0;
    *lead = *s;
    lead->stage_layers = Ld;
    lead->dense_frac = 1;
}

/* The layers of one stage in prefill (all but the pass's embedding and LM head): hl_layer_ops, then the
 * attention kernels, for bm sequences per group in each of m micro-batches of `routed` tokens (per stage). */
static hl_status prefill_layers(const hl_sim_ctx *s, hl_acc *pre, double bm, double m, double routed, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding, in = j->input, window = hl_local_window(s);
    hl_layer_split(s, &full, &sliding);
    hl_status st;
    if (s->stage_layers <= 0) /* (two-batch overlap's leading dense layers, when there are none) */
        return HL_OK;
    if ((st = hl_layer_ops(s, pre, bm, in, routed, m, 0, err)))
        return st;
    hl_op op;
    hl_attn_op(s, &op, bm, in, 0, 0);
    if ((st = hl_acc_op(s, pre, &op, full * m, err)))
        return st;
    if (s->m->local_chunked) { /* whole chunks of `window` tokens, then the rest, each attending within itself */
        double whole = floor(in / window), rest = in - whole * window;
        hl_attn_op(s, &op, bm, window, 0, 0);
        if (whole > 0 && (st = hl_acc_op(s, pre, &op, sliding * whole * m, err)))
            return st;
        hl_attn_op(s, &op, bm, rest, 0, 0);
        if (rest > 0 && (st = hl_acc_op(s, pre, &op, sliding * m, err)))
            return st;
    } else if (sliding * m > 0) { /* (hl_acc_op adds nothing for no layers: not built then) */
        hl_attn_op(s, &op, bm, in, 0, window);
        if ((st = hl_acc_op(s, pre, &op, sliding * m, err)))
            return st;
    }
    if (s->m->index_topk > 0) { /* the indexer scores every key of every attention layer */
        hl_indexer_op(s, &op, bm, in, 0);
        if ((st = hl_acc_op(s, pre, &op, sliding * m, err)))
            return st;
    }
    return HL_OK;
}

/* Prefill: the whole prompt of b_local sequences, in m micro-batches of b_local/m
 * sequences from an empty pipeline: m passes per stage, then the pipeline fill
 * to (m + pp - 1) stage slots (layer_int.h's rule). Fills *pre (events into r). */
static hl_status run_prefill(const hl_sim_ctx *s, hl_result *r, hl_acc *pre, hl_err *err)
{
    const hl_job *j = s->j;
    hl_status st;
    start_phase(j, pre, r->prefill_events, r->prefill_items, j->overlap_prefill);
    double b = s->b_local, in = j->input;
    double m = hl_pipeline_microbatches(s, j->batch); /* micro-batches */
    if (tbo_on(s)) { /* two micro-batches of half the sequences (tokens) each, then the leading dense layers */
        hl_sim_ctx ovl, lead;
        tbo_split_layers(s, &ovl, &lead);
        if ((st = prefill_layers(&ovl, pre, b / 2, 2, j->batch * in / 2, err)))
            return st;
        pre->tbo_hidden = tbo_hidden_prefill(pre->stage_s, pre->stage_gemm_s, j->tbo_comm_sms);
        if ((st = prefill_layers(&lead, pre, b, 1, j->batch * in, err)))
            return st;
        m = 1;
    } else if ((st = prefill_layers(s, pre, b / m, m, j->batch * in / m, err))) {
        return st;
    }
    double scale = hl_pipeline_fill(s, &pre->ph, m);
    for (int i = 0; i < pre->n; i++) /* the rows so far lie inside the layers */
        pre->items[i].path_factor = scale;
    if ((st = hl_io_ops(s, pre, b, b * in, 1, err))) /* b sequences of `in` tokens; the last token of each samples */
        return st;
    if ((st = hl_vision_ops(s, pre, b, err))) /* once, before the first stage: outside the pipeline fill */
        return st;
    if (j->spec_tokens > 0 && j->spec_draft && (st = draft_model_prefill(s, pre, err)))
        return st;
    hl_acc_overhead(pre, j->step_overhead, 1);
    hl_acc_finish(pre);
    return HL_OK;
}

/* The scalar fields after `input` first, then the HBD size (both often swept),
 * then the model and cluster: a miss is found before most of the 3 KB. Of
 * expert_freq only the expert_freq_n shares in use are compared (nothing reads
 * the rest: hl_sim_layout's cache keys on the same): 8 KB fewer a run. hl_job
 * holds no pointers, so equal bytes are an equal job; padding that differs only
 * misses. */
static int64_t freq_in_use(const hl_job *j)
{
    int64_t n = j->expert_freq_n, cap = (int64_t)(sizeof j->expert_freq / sizeof j->expert_freq[0]);
    return n < 0 ? cap : n > cap ? cap : n; /* out of range (never after the checks): all of them */
}

static int same_job_but_input(const hl_job *a, const hl_job *b)
{
    size_t at = offsetof(hl_job, input), after = at + sizeof a->input;
    size_t freq = offsetof(hl_job, expert_freq), tail = freq + sizeof a->expert_freq;
    return memcmp((const char *)a + after, (const char *)b + after, freq - after) == 0 &&
           memcmp((const char *)a + tail, (const char *)b + tail, sizeof *a - tail) == 0 &&
           memcmp(a->expert_freq, b->expert_freq, (size_t)freq_in_use(a) * sizeof a->expert_freq[0]) == 0 &&
           a->cluster.hbd == b->cluster.hbd && memcmp(a, b, at) == 0;
}

/* The bytes same_job_but_input reads (all but the unused shares). */
static void copy_compared(hl_job *dst, const hl_job *src)
{
    size_t freq = offsetof(hl_job, expert_freq), tail = freq + sizeof src->expert_freq;
    memcpy(dst, src, freq);
    memcpy(dst->expert_freq, src->expert_freq, (size_t)freq_in_use(src) * sizeof src->expert_freq[0]);
    memcpy((char *)dst + tail, (const char *)src + tail, sizeof *src - tail);
}

/* A sweep over input (the usual innermost axis) runs jobs equal but for `input`,
 * and so does the same job run again (a calibration, core.bench_latency). Each
 * summary run on a thread gets the class number of the last one when its job
 * (as run, after the framework) equals that job's but for input, else the next
 * number: the memos of what does not depend on input (decode_layers here, the
 * LM head of layer.c's hl_io_ops) key on it instead of comparing 3 KB each.
 * Numbers are never reused, so an entry of an older class never matches. */
typedef struct job_class {
    uint64_t id;       /* 0: none yet */
    uint64_t run;      /* the run (this thread's count of hl_sim_run_trusted calls) that last took a class */
    int reusable;      /* ctx may serve that run's next job but input (hl_sim_resolve_input) */
    uint64_t resolves; /* hl_sim_thread_resolves() then: ctx's layout is the cache while unchanged */
    hl_sim_ctx ctx;    /* that run's resolved context */
    hl_job last;       /* the job of class `id` (input aside) */
} job_class;
static _Thread_local job_class jclass;
static _Thread_local uint64_t runs; /* hl_sim_run_trusted calls on this thread */

uint64_t hl_sim_thread_runs(void) { return runs; }

/* `same`: the caller vouches that j equals its previous run's job but for input
 * (HL_TRUST_SAME_BUT_INPUT); that run's class is this one's only when that run took a
 * class (it may have failed before: then the last class is an older job's). The
 * framework's copy of a job does not read input (framework.c), so equal jobs but
 * input give equal copies but input. */
static int same_class_as_last_run(int trust, uint64_t run)
{
    const job_class *c = &jclass;
    return (trust & HL_TRUST_SAME_BUT_INPUT) && c->id != 0 && c->run + 1 == run;
}

/* s: j resolved; kept for the next run (a draft model resolves a second routing, and kernel
 * tables are loaded per run: neither is reused). */
static uint64_t job_class_of(const hl_job *j, const hl_sim_ctx *s, uint64_t run, int same, int reused)
{
    job_class *c = &jclass;
    if (!same && (c->id == 0 || !same_job_but_input(&c->last, j))) {
        copy_compared(&c->last, j);
        c->id++;
    }
    c->run = run;
    c->reusable = !s->kern && !(j->spec_tokens > 0 && j->spec_draft);
    c->resolves = hl_sim_thread_resolves();
    if (!reused) /* reused: *s is c->ctx but for j, m, c and job_class, which hl_sim_resolve_input sets anew */
        c->ctx = *s;
    return c->id;
}

/* Decode's hl_layer_ops (every operator and collective but attention) does not
 * depend on the prompt length. In summary mode the phase it leaves (from zero:
 * it runs first in the phase) is kept per thread, keyed on the job's class (all
 * of the job but `input`) and its arguments. Results are bit-identical: a hit
 * restores the same sums in the same order. */
typedef struct decode_memo {
    uint64_t job_class; /* 0: empty */
    double b, passes;
    hl_phase ph;
    double stage_s[HL_TBO_STAGES], stage_gemm_s[HL_TBO_STAGES]; /* and its two-batch overlap stages */
} decode_memo;
static _Thread_local decode_memo dmemo;

/* b sequences per group in one micro-batch of m (routing batch/m tokens), `passes` passes. */
static hl_status decode_layers(const hl_sim_ctx *s, hl_acc *a, double b, double m, double passes, hl_err *err)
{
    static const hl_phase zero;
    if (!a->summary || !s->job_class ||
        memcmp(&a->ph, &zero, sizeof zero) != 0) /* breakdown and events come from the pass itself */
        return hl_layer_ops(s, a, b, 1, s->j->batch / m, passes, 1, err);
    decode_memo *d = &dmemo;
    if (d->job_class == s->job_class && d->b == b && d->passes == passes) {
        a->ph = d->ph;
        memcpy(a->stage_s, d->stage_s, sizeof d->stage_s);
        memcpy(a->stage_gemm_s, d->stage_gemm_s, sizeof d->stage_gemm_s);
        a->layer_kind = 0;
        return HL_OK;
    }
    hl_status st = hl_layer_ops(s, a, b, 1, s->j->batch / m, passes, 1, err);
    d->job_class = 0;
    if (st == HL_OK) {
        d->job_class = s->job_class;
        d->b = b;
        d->passes = passes;
        d->ph = a->ph;
        memcpy(d->stage_s, a->stage_s, sizeof d->stage_s);
        memcpy(d->stage_gemm_s, a->stage_gemm_s, sizeof d->stage_gemm_s);
    }
    return st;
}

/* The decode attention of every attention layer of s (full, local, the indexer) over the steps, each layer
 * run `stages` times a step (pipeline slots or micro-batches), in the attention core's two-batch overlap
 * stage; no events (closed-form sums). */
static hl_status decode_attention_layers(const hl_sim_ctx *s, hl_acc *dec, double stages, hl_err *err)
{
    double full, sliding, window = hl_local_window(s), steps = s->j->output - 1;
    hl_layer_split(s, &full, &sliding);
    hl_status st = HL_OK;
    hl_event *saved = dec->ev;
    dec->ev = NULL;           /* the closed-form sums below are not single events */
    dec->stage = HL_TBO_CORE; /* the attention kernel's two-batch overlap stage (MODEL.md 6.5) */
    if (!(st = decode_attention(s, dec, full * stages, 0, 0, err)) &&
        !(st = decode_attention(s, dec, sliding * stages, window, s->m->local_chunked, err)) && s->m->index_topk > 0)
        st = attention_sum_from(s, dec, PART_INDEXER, sliding * stages, 0, 1, 1, steps, s->j->input, err);
    dec->ev = saved;
    dec->stage = HL_TBO_ATTN;
    return st;
}

/* Decode: output - 1 steps; with pipeline stages the batch rides in m
 * micro-batches that keep the pipeline full, so a step lasts max(m, pp) stage
 * slots of one micro-batch (layer_int.h's rule; pp slots, every layer in turn,
 * for m = 1); attention summed in closed form over the growing context. Fills *dec. */
static hl_status run_decode(const hl_sim_ctx *s, hl_result *r, hl_acc *dec, hl_err *err)
{
    const hl_job *j = s->j;
    double full, sliding;
    hl_layer_split(s, &full, &sliding);
    double window = hl_local_window(s);
    hl_status st;
    start_phase(j, dec, r->decode_events, r->decode_items, j->overlap_decode);
    double steps = j->output - 1, b = s->b_local;
    if (steps > 0 && j->spec_tokens > 0) {
        if ((st = decode_speculative(s, dec, steps, err)))
            return st;
    } else if (steps > 0) {
        double m = hl_pipeline_microbatches(s, j->batch), stages = hl_pipeline_slots(s, m, 0);
        /* two-batch overlap: two micro-batches of half the sequences, each in every step; SGLang splits a
         * decode batch at num_seqs // 2 (two_batch_overlap.py compute_split_seq_index), so one sequence
         * per rank has nothing to split and runs whole (it ran as two halves of half a sequence) */
        int tbo = tbo_on(s) && b >= 2;
        hl_sim_ctx one, lead; /* one micro-batch: b / m sequences per group (m = 1: s itself, b / 1 = b) */
        const hl_sim_ctx *os = s;
        if (tbo) { /* the overlapped layers as two halves, the leading dense ones whole (tbo_split_layers) */
            m = stages = 2;
            tbo_split_layers(s, &one, &lead);
            os = &one;
        } else if (m != 1) {
            one = *s;
            one.b_local = b / m;
            os = &one;
        }
        if ((st = decode_layers(tbo ? os : s, dec, b / m, m, steps * stages, err)))
            return st;
        /* the attention kernel of a step at the mean context, for the trace */
        hl_op op;
        hl_op_time at;
        if (!dec->summary) { /* (a summary run logs no events: not built) */
            hl_attn_op(s, &op, b / m, 1, j->input + steps / 2, sliding > 0 && full == 0 ? window : 0);
            if (hl_op_time_on(&op, &j->cluster.gpu, &at, err) == HL_OK) {
                dec->layer_kind = 0;
                hl_acc_event(dec, "attention", 0, 0, at.time_s, op.bytes_read + op.bytes_written, op.flops);
            }
        }
        if ((st = decode_attention_layers(os, dec, stages, err)))
            return st;
        if (tbo) { /* decode's low-latency EP kernels hold no SMs while in flight (MODEL.md 6.5) */
            dec->tbo_hidden = tbo_hidden_decode(dec->stage_s);
            if (lead.stage_layers > 0 && ((st = hl_layer_ops(&lead, dec, b, 1, j->batch, steps, 1, err)) ||
                                          (st = decode_attention_layers(&lead, dec, 1, err))))
                return st;
        }
        if ((st = hl_io_ops(s, dec, b, b, steps, err)))
            return st;
        hl_acc_overhead(dec, j->step_overhead, steps);
    }
    hl_acc_finish(dec);
    return HL_OK;
}

/* The phases, items, events and job-level rates of r from the two phases. */
static void fill_times(const hl_sim_ctx *s, const hl_acc *pre, const hl_acc *dec, hl_result *r)
{
    const hl_job *j = s->j;
    double steps = j->output - 1;
    r->n_prefill_events = pre->nev;
    r->n_decode_events = dec->nev;
    r->prefill = pre->ph;
    r->decode = dec->ph;
    r->n_prefill_items = pre->n; /* the rows were written in place (start_phase) */
    r->n_decode_items = dec->n;
    r->ttft_s = pre->ph.time_s;
    r->tpot_s = steps > 0 ? dec->ph.time_s / steps : 0;
    r->total_s = pre->ph.time_s + dec->ph.time_s;
    r->decode_tps = dec->ph.time_s > 0 ? j->batch * steps / dec->ph.time_s : 0;
    r->tps_per_gpu = j->batch * j->output / r->total_s / (double)s->G;
    r->tps_per_gpu_incl_prompt = j->batch * (j->input + j->output) / r->total_s / (double)s->G;
    r->tokens_per_step = spec_tokens_per_step(j);
    r->gpus = s->G;
    r->tp = s->tp;
    r->pp = s->pp;
    r->ep = s->ep;
    r->dp = s->dp;
    r->etp = s->etp;
    r->batch = j->batch;
    r->input = j->input;
    r->output = j->output;
    r->precision = j->precision;
}

/* What bounds the job: the largest of compute, HBM, scale-up, scale-out and
 * latency (+ overhead) time over both phases (hl_bound_name order). */
static int32_t find_bound(const hl_phase *pre, const hl_phase *dec)
{
    double parts[5] = {pre->compute_s + dec->compute_s, pre->memory_s + dec->memory_s,
                       pre->scaleup_comm_s + dec->scaleup_comm_s, pre->scaleout_comm_s + dec->scaleout_comm_s,
                       pre->latency_comm_s + dec->latency_comm_s + pre->overhead_s + dec->overhead_s};
    int32_t bound = 0;
    for (int i = 1; i < 5; i++)
        if (parts[i] > parts[bound])
            bound = i;
    return bound;
}

hl_status hl_sim_run_trusted(const hl_job *job, hl_result *r, int trust, hl_err *err)
{
    uint64_t run = ++runs;
    hl_sim_ctx s;
    hl_job fw;
    const hl_job *j = hl_job_with_framework(job, &fw); /* s.j points to it: both live until return */
    if (j != job) /* the framework scaled the GPU's efficiencies: check them again, as hl.simulate does */
        trust &= ~(HL_TRUST_CLUSTER | HL_TRUST_CLUSTER_FIELDS);
    /* along an input axis the context is the last run's but for the checks that read input */
    int same = j->summary_only && same_class_as_last_run(trust, run);
    int reuse = same && jclass.reusable && jclass.resolves == hl_sim_thread_resolves();
    hl_status st = reuse ? hl_sim_resolve_input(j, &jclass.ctx, &s, trust, err) : hl_sim_resolve(j, &s, trust, err);
    if (st)
        return st;
    if (j->summary_only)
        s.job_class = job_class_of(j, &s, run, same, reuse);
    memset(r, 0, offsetof(hl_result, prefill_items)); /* the arrays are filled up to their counts */

    /* ---- memory per GPU (core/src/memory.c): checked before any time is computed, so a job
     * that does not fit fails at once (exact_steps with a huge output would step first) ---- */
    hl_memory mem;
    if ((st = hl_memory_resolved(&s, &mem, err)))
        return st;
    r->weights_bytes = mem.weights_bytes;
    r->kv_bytes = mem.kv_bytes;
    r->workspace_bytes = mem.workspace_bytes;
    r->per_gpu_bytes = mem.per_gpu_bytes;
    r->draft_bytes = mem.draft_bytes;
    r->fits = mem.fits;

    if (!r->fits && !j->ignore_memory) {
        double hbm = j->cluster.gpu.hbm_bytes, held = r->weights_bytes + r->workspace_bytes;
        double cap = hl_kv_usable_bytes(hbm, j->mem_util, s.fw.kv_of_free, r->weights_bytes, r->workspace_bytes);
        char has[96]; /* how the framework sizes its KV cache (docs/MODEL.md 4) */
        if (s.fw.kv_of_free)
            snprintf(has, sizeof has, "weights and workspace + %.0f%% of the %.2f GB they leave free",
                     j->mem_util * 100, (hbm - held) / 1e9);
        else
            snprintf(has, sizeof has, "%.0f%% of %.2f", j->mem_util * 100, hbm / 1e9);
        return hl_fail(err, HL_ENOFIT,
                       "does not fit HBM by %.2f GB: needs %.2f GB per GPU (weights %.2f + KV %.2f + workspace %.2f), "
                       "has %.2f GB (%s); more GPUs, a smaller batch or a lower precision would help",
                       (r->per_gpu_bytes - cap) / 1e9, r->per_gpu_bytes / 1e9, r->weights_bytes / 1e9,
                       r->kv_bytes / 1e9, r->workspace_bytes / 1e9, cap / 1e9, has);
    }

    hl_acc pre, dec;
    if ((st = run_prefill(&s, r, &pre, err)) || (st = run_decode(&s, r, &dec, err)))
        return st;
    fill_times(&s, &pre, &dec, r);

    /* Defence in depth: every input passed its checks, yet extreme combinations
     * (subnormal latencies, huge counts) could overflow; never return such a result. */
    if (!isfinite(r->total_s) || !isfinite(r->ttft_s) || !isfinite(r->tpot_s) || r->total_s < 0 ||
        !isfinite(r->per_gpu_bytes))
        return hl_fail(err, HL_EINVAL,
                       "the configuration gives a non-finite or negative time (TTFT %g s, total %g s); "
                       "check extreme field values",
                       r->ttft_s, r->total_s);

    r->bound = find_bound(&pre.ph, &dec.ph);

    /* ---- cost and energy: prefill charged to prompt tokens, decode to decode tokens ---- */
    hl_cost_phase cp = {pre.ph.time_s, pre.ph.compute_s + pre.ph.memory_s, j->batch * j->input};
    hl_cost_phase cd = {dec.ph.time_s, dec.ph.compute_s + dec.ph.memory_s, j->batch * (j->output - 1)};
    hl_cost_compute(&j->cluster, s.G, j->batch, &cp, &cd, &r->cost);
    return HL_OK;
}
