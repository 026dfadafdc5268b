/* Serving a deployment: one event clock over its pools (the instances, or the
 * prefill and decode sides of a disaggregated one), their DP ranks' schedulers
 * (serve_sched.c) stepping alone or in lock-step groups, each iteration timed
 * by the per-step model (step_int.h), the KV transfers between pools
 * (serve_flows.c); then the run's summary and cost. docs/MODEL.md, "Serving". */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "framework_int.h"
#include "memory_int.h"
#include "prefix_cache_int.h"
#include "serve_flows_int.h"
#include "serve_int.h"
#include "serve_prefix_int.h"
#include "serve_sched_int.h"
#include "step_int.h"
#include "hbdlab/coll.h"
#include "hbdlab/cost.h"
#include "hbdlab/kvcache.h"
#include "hbdlab/router.h"
#include "hbdlab/memory.h"

void hl_serve_result_free(hl_serve_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->reqs);
    free(r->steps_log);
    r->samples = NULL;
    r->reqs = NULL;
    r->steps_log = NULL;
}

/* The run's integrals and samples, over every group of every pool. */
typedef struct recorder {
    hl_serve_result *r;
    double little, run, wait, kv, kv_max, tokens; /* integrals over time (s) and sums */
    double sat_tokens, sat_time;                  /* tokens emitted and time spent while requests waited (saturated) */
    double busy, busy_prefill; /* s of iterations, and their prefill share (each step split by its tokens) */
    double t_end;              /* s: end of the last iteration */
    int64_t steps, samp_cap, stride, max_samples;
    double kv_cached, kv_cached_max; /* prefix cache: integral over time of cached blocks / total, largest */
    double reload;                   /* KV offload: s of host loads over the steps */
    hl_serve_probe_fn probe;         /* tests: each iteration's terms (hl_serve_set_probe), or NULL */
    void *probe_ctx;
    double path; /* the probe's path of record()'s caller (HL_SERVE_PATH_*: the loop's step 0) */
} recorder;

static _Thread_local hl_serve_probe_fn probe_fn;
static _Thread_local void *probe_ctx;
void hl_serve_set_probe(hl_serve_probe_fn fn, void *ctx)
{
    probe_fn = fn;
    probe_ctx = ctx;
}

/* A recorder for result r with the thread's probe. */
static recorder recorder_for(hl_serve_result *r, int64_t max_samples)
{
    return (recorder){.r = r, .stride = 1, .max_samples = max_samples, .probe = probe_fn, .probe_ctx = probe_ctx};
}

/* The KV sample of an iteration at t when its step number falls on the
 * stride (when the series is full, every other sample is dropped and the
 * stride doubles); counts the step. */
static hl_status record_sample(recorder *rc, double t, double kv_util, double running, double waiting, hl_err *err)
{
    hl_serve_result *r = rc->r;
    if (rc->steps % rc->stride == 0 && r->n_samples == rc->max_samples) {
        for (int64_t k = 0; k < rc->max_samples / 2; k++)
            r->samples[k] = r->samples[2 * k];
        r->n_samples = rc->max_samples / 2;
        rc->stride *= 2;
    }
    if (rc->steps % rc->stride == 0) {
        if (!hl_sched_grow((void **)&r->samples, r->n_samples, &rc->samp_cap, sizeof *r->samples))
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for samples");
        r->samples[r->n_samples++] = (hl_serve_sample){t, kv_util, running, waiting};
    }
    rc->steps++;
    return HL_OK;
}

/* The clock's bound (the one serve_fields.c puts on arrivals and think times): past 1e9 s a double
 * no longer resolves a step of microseconds, and step times that long (a kernel table's latency_ms of
 * 1e300, GPU fields at their limits) ran the clock to infinity and gave inf/NaN statistics. */
static hl_status clock_bound(double t_start, double t_end, hl_err *err)
{
    if (t_end <= 1e9)
        return HL_OK;
    return hl_fail(err, HL_EINVAL,
                   "serve: a step from t = %.3g s to %.3g s passes 1e9 s, where the clock no longer resolves a "
                   "step: the step times are out of bounds (check the GPU fields and the kernel tables)",
                   t_start, t_end);
}

/* The probe's call (tests), out of line. */
__attribute__((noinline, cold)) static void probe_record(const recorder *rc, const double *v)
{
    rc->probe(rc->probe_ctx, v);
}

/* Accounts one iteration [t, t + dt] of one group of the pool: time integrals
 * (the groups' sums), and a KV sample (the pool's utilisation) every
 * `stride` iterations (when the series is full, every other sample is dropped
 * and the stride doubles). */
static hl_status record(recorder *rc, double t, double dt, double in_system, double running, double waiting,
                        double kv_part, double kv_util, double tokens, double prefill_tokens, double emitted,
                        double weight, hl_err *err)
{
    if (__builtin_expect(rc->probe != NULL, 0))
        probe_record(rc, (const double[HL_SERVE_PROBE_N]){t, dt, in_system, running, waiting, kv_part, kv_util, tokens,
                                                          prefill_tokens, emitted, weight, rc->path});
    rc->busy += dt * weight; /* weight: 1 / the groups stepping side by side (their times overlap) */
    rc->busy_prefill += tokens > 0 ? dt * weight * prefill_tokens / tokens : 0;
    rc->t_end = hl_fmax(rc->t_end, t + dt);
    hl_status st = clock_bound(t, t + dt, err);
    if (st)
        return st;
    if (waiting > 0) {
        rc->sat_tokens += emitted;
        rc->sat_time += dt * weight;
    }
    rc->little += in_system * dt;
    rc->run += running * dt;
    rc->wait += waiting * dt;
    rc->kv += kv_part * dt; /* this group's blocks in use / the pool's */
    rc->kv_max = hl_fmax(rc->kv_max, kv_util);
    rc->tokens += tokens;
    return record_sample(rc, t, kv_util, running, waiting, err);
}

/* The mean context of the run-ahead's iteration j as the step-by-step scheduler's plan takes it:
 * the members' kv sum S + j m over their number m, one division of a whole number below 2^53
 * (`divide`). Without the division: with Q = floor(S / m), r = S - Q m and f = r / m rounded,
 * (Q + j) + f rounds once more, to the grid u of Q + j's binade (Q + j is whole: exact). That is
 * the rounding of the exact (Q + j) + r / m (derived: the grid's midpoints, odd multiples of u / 2
 * >= 2^-53, are doubles at f's precision, so f and r / m lie on one side of each) unless f is
 * itself such a midpoint, which it is in one binade only (u / 2 = f's lowest bit): where Q + j
 * reaches that binade in the run-ahead, or S is not whole, it divides. (S / m + j, the former
 * rule, rounds S / m at its own binade first: it differed from the plan's mean by an ulp in 4%
 * of 9e8 random steps; the rule here in none, tests/c/test_serve_reference.c compares the
 * iterations.) left: the run-ahead's iterations at most. */
typedef struct ahead_ctx {
    double S, m, Q, f;
    int divide;
} ahead_ctx;

static inline __attribute__((always_inline)) ahead_ctx ahead_ctx_for(double S, int64_t m, double left)
{
    ahead_ctx a = {S, (double)m, 0, 0, 1};
    if (!(S >= 0 && S < 0x1p53 && S == (double)(int64_t)S && left < 0x1p52))
        return a;
    int64_t Q = (int64_t)S / m, r = (int64_t)S - Q * m;
    a.Q = (double)Q;
    a.f = (double)r / (double)m;
    a.divide = 0;
    if (r == 0)
        return a;
    uint64_t b;
    memcpy(&b, &a.f, sizeof b);
    int e = (int)((b >> 52) & 0x7ff) - 1023; /* f in [2^e, 2^(e+1)), normal: f >= 1 / m >= 2^-63 */
    int mid = e - 52 + __builtin_ctzll((b & ((1ull << 52) - 1)) | (1ull << 52)) + 53;  /* f's midpoint binade */
    a.divide = mid >= 0 && (double)Q + left >= (double)(1ll << mid) && Q < 2ll << mid; /* (mid <= 52) */
    return a;
}

static inline double ctx_at(const ahead_ctx *a, double j)
{
    return a->divide ? (a->S + a->m * j) / a->m : (a->Q + j) + a->f;
}

/* The run-ahead's iterations as the reference scheduler (cfg.sched_reference) times and
 * records them: one hl_stepper_time, record() and hl_itl_add() each; returns them in *j. */
static hl_status ahead_reference(sched *s, hl_stepper *st, hl_itl_hist *itl, double t_arr, double *t,
                                 const double *ring, int64_t slot0, recorder *rec, double weight, double blocks_all,
                                 double left, const ahead_ctx *cx, double cached0, double free0, double *j_out,
                                 hl_err *err)
{
    int64_t m = s->n_run, bt = (int64_t)s->block;
    double w = (double)s->w_len, j = 0;
    hl_status rc = HL_OK;
    while (j < left && *t < t_arr && !hl_interrupt_pending()) {
        int64_t res = (int64_t)j % bt;
        double need = ring[(slot0 + bt - res) % bt]; /* (slot0 - j) mod bt */
        if (need > s->blocks_free)
            break;
        double ctx = ctx_at(cx, j);
        hl_iter it = {(double)m, ctx, ctx, 0, NULL, (double)m, 0, 0};
        double dt;
        if ((rc = hl_stepper_time(st, &it, &dt, err)))
            break;
        s->blocks_free -= need;
        double util = (s->blocks_total - s->blocks_free) / blocks_all;
        rec->path = HL_SERVE_PATH_AHEAD_REF;
        rc = record(rec, *t, dt, (double)m + w, (double)m, w, util, util, (double)m, 0, (double)m, weight, err);
        rec->path = HL_SERVE_PATH_STEP;
        if (rc)
            break;
        if (s->pc)
            rec->kv_cached += (cached0 - hl_fmax(0, (free0 - s->blocks_free) - (free0 - cached0))) / blocks_all * dt;
        hl_itl_add(itl, dt, (double)m);
        *t += dt;
        j++;
    }
    *j_out = j;
    return rc;
}

/* The step times of decode_times' loop, one line shape: `simple` (no sliding-window layers, one
 * stage slot, full > 0) drops the terms that are exactly nothing there (see below), `hide` keeps
 * hl_comm_hidden's (comm > 0 and overlap comm > 0). Plain C the compiler vectorises (maxpd,
 * minpd: x > y ? x : y is their rule, NaN and signed zeros included). */
static inline void times_loop(const hl_decode_fn *l, const ahead_ctx *cx, double j, int n, double *restrict dt,
                              int simple, int hide)
{
    /* whole numbers below 2^53 (ahead_ctx_for): Qj + i is exact, as is Q + (j + i) */
    const double want = l->overlap * l->comm, f = cx->f, Qj = cx->Q + j;
    for (int i = 0; i < n; i++) {
        double c = (Qj + (double)i) + f; /* ctx_at(j + i), cx->divide 0 */
        double x = l->ac + l->bc * c, y = l->am + l->bm * c;
        double q = (x > y ? x : y) + l->lat;
        double att = simple ? q * l->full : q * l->full * l->stages + q * l->sliding * l->stages;
        double time = l->base_time + att;
        if (hide) {
            double ops = l->base_ops + att, h = want < ops ? want : ops;
            dt[i] = time - (h > 0 ? h : 0) + l->overhead;
        } else
            dt[i] = time + l->overhead;
    }
}

/* dt[i] = the decode line's step time at mean context ctx_at(j + i), i < n: the run-ahead's
 * iterations' times, each the same bits as hl_decode_fn_time at that context (the reference
 * scheduler's, through hl_stepper_time) where that time is finite (a step whose time is not is
 * refused with hl_decode_fn_time's own value). Exactly nothing, for a finite q = max(x, y) + lat:
 * - q sliding stages with sliding = 0 is a zero of q's sign, and so is q full when not a zero
 *   (full > 0), so adding it changes nothing; q full stages = q full when stages = 1;
 * - hl_comm_hidden is 0 when comm <= 0 or overlap comm <= 0 (min(want, ops) <= 0), and
 *   time - 0 = time. */
static void decode_times(const hl_decode_fn *f, const ahead_ctx *cx, double j, int n, double *restrict dt)
{
    const hl_decode_fn l = *f;       /* a copy the stores cannot alias */
    if (l.blend > 1 || cx->divide) { /* (a division: rare, ahead_ctx_for) */
        for (int i = 0; i < n; i++) {
            double c = ctx_at(cx, j + (double)i);
            dt[i] = hl_decode_fn_time(&l, c, c);
        }
        return;
    }
    int simple = l.sliding == 0 && l.stages == 1 && l.full > 0, hide = l.comm > 0 && !(l.overlap * l.comm <= 0);
    if (simple && hide)
        times_loop(&l, cx, j, n, dt, 1, 1);
    else if (simple)
        times_loop(&l, cx, j, n, dt, 1, 0);
    else if (hide)
        times_loop(&l, cx, j, n, dt, 0, 1);
    else
        times_loop(&l, cx, j, n, dt, 0, 0);
}

/* Whether decode_times' times do not decrease with the context: each operation of the line's
 * evaluation is a rounded one that does not decrease in it for these signs (no blend; no hidden
 * share, whose subtraction would). */
static int line_mono(const hl_decode_fn *l)
{
    return l->blend <= 1 && !(l->comm > 0 && !(l->overlap * l->comm <= 0)) && l->bc >= 0 && l->bm >= 0 &&
           l->full >= 0 && l->sliding >= 0 && l->stages >= 0;
}

/* ahead_lean's running values over its steps: the free blocks, the utilisation the last step left,
 * and the integrals' sums (busy, little, run, kv, the ITL sum). */
typedef struct lean_sums {
    double bf, u, busy, little, run, kv, isum;
} lean_sums;

/* One ahead_lean step of gap d that takes `need` blocks: its utilisation and its terms (weight 1,
 * nothing waits: dt weight = dt, in_sys dt = m dt), each sum in iteration order. */
static inline void lean_step(lean_sums *a, double d, double need, double fm, double total, double blocks_all)
{
    if (need > 0) { /* (the same value where no block is taken) */
        a->bf -= need;
        a->u = (total - a->bf) / blocks_all;
    }
    double p = fm * d;
    a->busy += d;
    a->little += p;
    a->run += p;
    a->kv += a->u * d;
    a->isum += p;
}

/* acc + n v: n additions of v to acc, added at once where that is exact (whole numbers whose sums stay
 * below 2^53, as counts of tokens and sequences are), else one at a time. */
static inline int whole_below(double v, double lim) { return v >= 0 && v < lim && (double)(int64_t)v == v; }
static inline double add_times(double acc, double v, int64_t n, int v_whole) /* v_whole: whole_below(v, 2^20) */
{
    if (v_whole && n < ((int64_t)1 << 31) && whole_below(acc, 0x1p52))
        return acc + (double)n * v; /* n v < 2^51 and acc < 2^52: both exact, and so is the sum */
    for (int64_t i = 0; i < n; i++)
        acc += v;
    return acc;
}

/* hl_sched_plan's plan of a step that is the decode set's alone (set_step's, the run-ahead's). */
static void plan_set_alone(sched *s)
{
    s->n_plan = 0;
    s->ev_planned = s->dn;
    s->preempted = 0;
    s->spec_seqs = s->spec_ctx = 0;
    s->n_dchunks = 0;
    s->d_rows = 0;
    s->finished = 0;
    s->pc_step_saved = s->pc_step_loaded = 0;
}

/* The run-ahead's ITL bin for gap d, outside the current one: the gaps filed in the current one so
 * far (`steps` of them since its run began, m each) counted, then d's bin and its bounds found
 * (*vlo: the bounds' gaps that are also a valid time: bin 0 starts at -inf). */
static int ahead_rebin(hl_itl_hist *itl, int bin, double d, double fm, int64_t steps, int fm_whole, double *lo,
                       double *hi, double *vlo)
{
    itl->count[bin] = add_times(itl->count[bin], fm, steps, fm_whole);
    int b = hl_itl_find(itl, d, lo, hi);
    *vlo = *lo > 0 ? *lo : 0;
    return b;
}

/* The run-ahead's KV sample of its step `step` (the run's count), which falls on the stride:
 * record_sample's, then *to_next = the steps from it to the next sampled one. */
static hl_status ahead_sample(recorder *rec, int64_t step, double t, double util, double fm, double w, int64_t *to_next,
                              hl_err *err)
{
    rec->steps = step;
    hl_status rc = record_sample(rec, t, util, fm, w, err);
    *to_next = (rec->stride - rec->steps % rec->stride) % rec->stride + 1;
    return rc;
}

/* The decode run-ahead's scratch (serve_loop's, for its one pool): the block counters, and the
 * decode line of each running count m, looked up (hl_stepper_decode_fn) once and kept. */
typedef struct ahead_scratch {
    double *cnt;        /* [block_tokens]: members by kv mod block (without the decode set) */
    hl_decode_fn *line; /* [cap + 1]: by m */
    int8_t *state;      /* [cap + 1]: 0 not looked up, 1 line[m] holds it, -1 none (hl_stepper_time each step) */
    double *bin_range;  /* [2 (cap + 1)]: s, the ITL bin [lo, hi) of the last gap of the last run-ahead of m */
    int *bin;           /* [cap + 1]: that bin (0 with lo = hi = 0 before the first) */
    int64_t cap;
} ahead_scratch;

static void ahead_scratch_free(ahead_scratch *a)
{
    free(a->cnt);
    free(a->line);
    free(a->state);
    free(a->bin_range);
    free(a->bin);
    *a = (ahead_scratch){0};
}

static hl_status ahead_scratch_init(ahead_scratch *a, int64_t block_tokens, int64_t cap, hl_err *err)
{
    a->cap = cap;
    a->cnt = malloc(sizeof *a->cnt * (size_t)block_tokens);
    a->line = malloc(sizeof *a->line * (size_t)(cap + 1));
    a->state = calloc((size_t)(cap + 1), 1);
    a->bin_range = calloc(2 * (size_t)(cap + 1), sizeof *a->bin_range);
    a->bin = calloc((size_t)(cap + 1), sizeof *a->bin);
    if (!a->cnt || !a->line || !a->state || !a->bin_range || !a->bin) {
        ahead_scratch_free(a);
        return hl_fail(err, HL_ENOMEM, "serve: out of memory");
    }
    return HL_OK;
}

/* The decode line of m sequences (*ok = 0: none, hl_stepper_time times each step), from the scratch
 * or looked up and kept there; *f points into the scratch, or at `own` for an m past its cap. */
static hl_status ahead_line(ahead_scratch *a, hl_stepper *st, int64_t m, hl_decode_fn *own, const hl_decode_fn **f,
                            int *ok, hl_err *err)
{
    int in = m >= 0 && m <= a->cap;
    if (in && a->state[m]) {
        *f = &a->line[m];
        *ok = a->state[m] > 0;
        return HL_OK;
    }
    hl_decode_fn *to = in ? &a->line[m] : own;
    hl_status rc = hl_stepper_decode_fn(st, (double)m, to, ok, err);
    if (rc)
        return rc;
    if (in)
        a->state[m] = *ok ? 1 : -1;
    *f = to;
    return HL_OK;
}

/* The probe's terms of the run-ahead's nb steps from its step j (before j0: its own mean, after a
 * prompt step) at t0 (times dts, free blocks after each bfs), as the reference records them
 * (ahead_reference). Out of line: the run-ahead's loop stays as it is. */
__attribute__((noinline, cold)) static void probe_ahead(const recorder *rec, double t0, const double *dts,
                                                        const double *bfs, int nb, double j, double j0, double total,
                                                        double blocks_all, double in_sys, double fm, double w,
                                                        double weight)
{
    for (int i = 0; i < nb; t0 += dts[i++]) {
        double u = (total - bfs[i]) / blocks_all,
               path = j + (double)i < j0 ? HL_SERVE_PATH_AHEAD_FIRST : HL_SERVE_PATH_AHEAD;
        rec->probe(rec->probe_ctx,
                   (const double[HL_SERVE_PROBE_N]){t0, dts[i], in_sys, fm, w, u, u, fm, 0, fm, weight, path});
    }
}
/* finish_request of the decode set's finishers of a step that ended at t_end (s->fin, admission
 * order), with f's clock at t_end (below, after finish_ctx). */
struct finish_ctx;
static hl_status finish_set(const struct finish_ctx *f, sched *s, int64_t u, double t_end);

/* Decode run-ahead: while the running requests only decode, none finishes,
 * nothing waits and nothing arrives, every iteration has the same members and
 * a mean context one token longer than the last; such iterations are advanced
 * here without the per-request bookkeeping (the same iterations, bit for bit, as
 * scheduling each one: tests/c/test_serve_reference.c compares both). Needs
 * hl_stepper_window() == 0 (the mean of min(ctx + 1, window) is not linear).
 * sc: the scratch (counters, lines). after_prompt: the step before ended prompts (its first
 * decode-only step is the run-ahead's step 0; only the probe tells it apart). Updates *t and the
 * integrals in rec. (Here, not in serve_sched.c: it records into the run's integrals and
 * inter-token histogram.) */
static hl_status run_ahead(sched *s, hl_stepper *st, hl_itl_hist *itl, double t_arr, double *t, ahead_scratch *sc,
                           recorder *rec, double weight, double blocks_all, int after_prompt,
                           const struct finish_ctx *fin, int64_t unit, int *again, hl_err *err)
{
    /* waiting requests stay out while no slot opens and the blocks only shrink */
    const hl_serve_cfg *c = s->cfg;
    double w = (double)s->w_len, tok, need0;
    *again = 0;
    /* the budget a waiting request would meet: after the decodes (chunked), whole (unchunked: admission first) */
    double budget = c->chunked_prefill ? (double)c->token_budget - (double)s->n_run : (double)c->token_budget;
    int64_t hit[3];
    s->n_plan = 0;
    if (s->w_len > 0 && s->n_run < c->max_seqs && budget >= 1 &&
        hl_sched_admission(s, budget, c->chunk > 0 ? (double)c->chunk : (double)c->token_budget, &tok, &need0, hit))
        return HL_OK;
    if (s->pc_oom)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for a request's prefix block hashes");
    /* prefix cache: the free queue is its empty blocks, then its cached ones (least recently
     * released first), so the blocks taken below evict cached prefixes once the empty ones are gone */
    double free0 = s->blocks_free, cached0 = s->pc ? (double)hl_pcache_cached_blocks(s->pc) : 0;
    if (s->ev_on && s->dn != (double)s->n_run)
        hl_dset_off(s); /* (every running request decodes here: all are members) */
    if (!(*t < t_arr))
        return HL_OK; /* the arrival first (no iteration is taken: the rest only reads) */
    int64_t m = s->n_run, bt = (int64_t)s->block;
    double left = INFINITY, ksum = 0;
    /* ring[(slot0 - j) mod bt]: the requests whose cache sits on a block boundary before step j */
    const double *ring = sc->cnt;
    int64_t slot0 = 0;
    if (s->ev_on) { /* the set's: the same whole-token sums, without a pass over its members */
        hl_dset_ahead(s, &left, &ksum, &slot0);
        ring = s->ring;
    } else
        memset(sc->cnt, 0, sizeof *sc->cnt * (size_t)bt);
    for (int64_t k = 0; k < m && !s->ev_on; k++) {
        const rq *x = &s->q[s->run[k]];
        left = hl_fmin(left, x->output - x->gen - 1); /* the finishing iteration: set_step's, or the loop's */
        ksum += x->kv;
        if (x->blocks == hl_sched_blocks_for(s, x->kv)) /* blocks as tokens come (reserved ones cover the sequence) */
            sc->cnt[(int64_t)x->kv % bt] += 1;
    }
    if (!(0 < left))
        return HL_OK; /* the next step finishes a request (set_step, or the loop) */
    /* the iterations' mean contexts (after a prompt step too: its next, decode-only, step is the
     * run-ahead's step 0, at S / m) */
    ahead_ctx cx = ahead_ctx_for(ksum, m, left);
    /* The loop below is record() and hl_itl_add() of each iteration with the
     * integrals in locals (each sum still takes one term per iteration, in
     * order: the same bits), the step time from the decode line of m
     * sequences, the ITL bin looked up when the gap leaves it. */
    hl_decode_fn own;
    const hl_decode_fn *line;
    int have_line = 0;
    hl_status rc = ahead_line(sc, st, m, &own, &line, &have_line, err);
    if (rc)
        return rc;
    double fm = (double)m, in_sys = fm + w, j = 0, seg_t0 = *t; /* seg_t0: the start of this m's steps */
    if (c->sched_reference) { /* the reference keeps the per-iteration calls: the loop below must equal it */
        if ((rc = ahead_reference(s, st, itl, t_arr, t, ring, slot0, rec, weight, blocks_all, left, &cx, cached0, free0,
                                  &j, err)))
            return rc;
        goto advanced;
    }
    double busy = rec->busy, little = rec->little, run = rec->run, wait = rec->wait, kv = rec->kv;
    double kv_max = rec->kv_max, tokens = rec->tokens, sat_tokens = rec->sat_tokens, sat_time = rec->sat_time;
    /* the ITL bin to try first: the last gap's of the last run-ahead of m (its steps are most alike) */
    int mb = m <= sc->cap && sc->bin_range[2 * m + 1] > 0;
    double isum = itl->sum, imax = itl->max, bin_lo = mb ? sc->bin_range[2 * m] : itl->ahead_lo,
           bin_hi = mb ? sc->bin_range[2 * m + 1] : itl->ahead_hi;
    double blocks_free = s->blocks_free, tt = *t;
    double vlo = bin_lo > 0 ? bin_lo : 0; /* the bin's gaps that are also a valid time (bin 0 starts at -inf) */
    int bin = mb ? sc->bin[m] : itl->ahead_bin, more = 1, fm_whole = whole_below(fm, 0x1p20);
    int64_t run0 = 0; /* the first step (of jn) of the current bin's run of gaps, not yet counted */
    int64_t steps0 = rec->steps, jn = 0, jseg0 = 0; /* jn: the steps taken; jseg0: those before this m's */
    int64_t until_sample = (rec->stride - steps0 % rec->stride) % rec->stride + 1; /* iterations to the next sample */
    /* A block of iterations at a time, in passes of few live values each: the step times and
     * the KV blocks they take (vectorisable, or short), the exits and samples (the clock alone),
     * then each integral's terms over the block in iteration order (the same sums, bit for bit,
     * as one loop: the same products, added in the same order), and the counts (whole numbers:
     * added once, exactly) */
    enum { AHEAD_BLOCK = 64 };
    double dts[AHEAD_BLOCK], bfs[AHEAD_BLOCK];                    /* s of each step; free blocks after it */
    double prod[AHEAD_BLOCK], kvt[AHEAD_BLOCK], bws[AHEAD_BLOCK]; /* m dt; util dt; weight dt */
    double total = s->blocks_total;
    int64_t r2 = slot0, nblk = 0; /* r2: the ring slot of the next step ((slot0 - j) mod bt) */
    /* ahead_lean: where nothing waits, the weight is 1, no prefix cache and the line gives the times,
     * each step in one pass (its exits as the passes below test them, its sample and bin, the clock
     * and each integral's terms, each sum in iteration order: the same sums, bit for bit) */
    int lean = have_line && w == 0 && weight == 1 && !s->pc, mono = lean && line_mono(line);
next_m:
    while (more) {
        if ((++nblk & 15) == 0 && hl_interrupt_pending())
            break; /* Ctrl-C: the caller's loop reports it */
        if (!(j < left && tt < t_arr))
            break; /* the finishing iteration goes the normal way; an arrival is looked at */
        /* the block's step times (a pure function of j), as many as can run: the iterations left,
         * and the arrival (later steps are no shorter); hints only, the passes below test every exit */
        int nmax = AHEAD_BLOCK, bad = AHEAD_BLOCK; /* bad: the first step hl_stepper_time refuses */
        hl_status brc = HL_OK;
        if (left - j < nmax)
            nmax = left - j > 1 ? (int)(left - j) : 1;
        if (have_line) {
            double c0 = ctx_at(&cx, j), d0 = hl_decode_fn_time(line, c0, c0), est = (t_arr - tt) / d0 + 2;
            if (d0 > 0 && est < nmax) /* (d0: the first step's time, as decode_times gives it where finite) */
                nmax = est > 1 ? (int)est : 1;
            decode_times(line, &cx, j, nmax, dts);
        } else {
            for (int i = 0; i < nmax && bad == AHEAD_BLOCK; i++) {
                double ci = ctx_at(&cx, j + i);
                hl_iter it = {fm, ci, ci, 0, NULL, fm, 0, 0};
                if ((brc = hl_stepper_time(st, &it, &dts[i], err)))
                    bad = i;
            }
        }
        if (lean) { /* one pass: ahead_lean */
            int nb = 0;
            int64_t next_s = until_sample - 1;
            double tt0 = tt, bf0 = blocks_free; /* the block's start (the probe's) */
            int64_t r20 = r2;
            /* fits: the block's steps' blocks fit, whatever steps take them (each member is counted
             * once in the ring, so ceil(nmax / block) m bound them) */
            int fits = mono && nmax >= 4 && (double)((nmax + bt - 1) / bt) * fm <= blocks_free;
            for (;;) {
                /* the steps up to the sampled one, while each gap is inside the bin (no calls: the
                 * values stay in registers) */
                int lim2 = next_s < nmax ? (int)next_s : nmax, k = nb, stop = 0;
                double tc = tt, mx = imax, lo = vlo, hi = bin_hi, ta = t_arr;
                lean_sums a = {blocks_free, (total - blocks_free) / blocks_all, busy, little, run, kv, isum};
                int64_t q2 = r2;
                if (!(lo > 0))
                    lim2 = k; /* (the loop's max below needs gaps > 0: the outer loop's takes the others) */
                if (fits && k < lim2 && dts[k] >= lo) {
                    /* Two steps at a time: both are taken when the second's gap is inside the bin (the
                     * first's is no larger, and no smaller than this loop's first, which is inside) and
                     * the clock after the first is before the arrival (the first's start is no later);
                     * their blocks fit. The same terms, in order; the largest gap is the last one's. */
                    int k0 = k;
                    for (; k + 1 < lim2; k += 2) {
                        double d0 = dts[k], d1 = dts[k + 1], t1 = tc + d0;
                        if (!(d1 < hi && t1 < ta))
                            break;
                        double n0 = ring[q2];
                        q2 = (q2 == 0 ? bt : q2) - 1;
                        lean_step(&a, d0, n0, fm, total, blocks_all);
                        double n1 = ring[q2];
                        q2 = (q2 == 0 ? bt : q2) - 1;
                        lean_step(&a, d1, n1, fm, total, blocks_all);
                        tc = t1 + d1;
                    }
                    if (k > k0)
                        mx = mx > dts[k - 1] ? mx : dts[k - 1]; /* (d > 0: the max of the steps' forms) */
                }
                for (; k < lim2; k++) {
                    double need = ring[q2], d = dts[k]; /* the blocks this step takes */
                    if (need > a.bf || !(tc < ta)) {    /* (exact: whole counts, so need > bf <=> bf - need < 0) */
                        stop = 1;
                        break;
                    }
                    if (!(d >= lo && d < hi))
                        break;
                    q2 = (q2 == 0 ? bt : q2) - 1;
                    tc += d;
                    mx = mx > d ? mx : d; /* d > mx ? d : mx: d > 0, not NaN (equal values, the same bits) */
                    lean_step(&a, d, need, fm, total, blocks_all);
                }
                tt = tc, imax = mx, blocks_free = a.bf, busy = a.busy, little = a.little, run = a.run, kv = a.kv,
                isum = a.isum;
                r2 = q2;
                nb = k;
                if (stop || nb == nmax)
                    break;
                /* step nb: a gap outside the bin, or the sampled step (its exits tested again) */
                double bn = blocks_free - ring[r2], d = dts[nb];
                if (bn < 0 || !(tt < t_arr))
                    break;
                if (!(d >= vlo && d < bin_hi)) {
                    if (!(d >= 0 && d <= DBL_MAX)) { /* not finite, or negative: its value as the reference has it */
                        double cn = ctx_at(&cx, j + (double)nb);
                        rc = hl_fail(err, HL_EINVAL, "step time is not finite (%g s)", hl_decode_fn_time(line, cn, cn));
                        break;
                    }
                    bin = ahead_rebin(itl, bin, d, fm, jn + nb - run0, fm_whole, &bin_lo, &bin_hi, &vlo);
                    run0 = jn + nb;
                }
                if (nb == next_s) { /* this step's number falls on the stride: record_sample takes it */
                    int64_t to_next;
                    if ((rc = ahead_sample(rec, steps0 + jn + nb, tt, (total - bn) / blocks_all, fm, w, &to_next, err)))
                        break;
                    next_s = nb + to_next;
                }
                blocks_free = bn;
                r2 = (r2 == 0 ? bt : r2) - 1;
                double p = fm * d, us = (total - blocks_free) / blocks_all;
                tt += d;
                imax = d > imax ? d : imax;
                busy += d;
                little += p;
                run += p;
                kv += us * d;
                isum += p;
                nb++;
            }
            if (nb > 0) /* util only grows (blocks are only taken): the last step's is the largest */
                kv_max = (total - blocks_free) / blocks_all > kv_max ? (total - blocks_free) / blocks_all : kv_max;
            if (nb < nmax || rc)
                more = 0;
            until_sample = next_s - nb + 1;
            j += nb;
            jn += nb;
            if (__builtin_expect(rec->probe != NULL, 0)) { /* its steps' free blocks, as the pass took them */
                double bfl[AHEAD_BLOCK];
                for (int i = 0; i < nb; i++, r20 = (r20 == 0 ? bt : r20) - 1)
                    bfl[i] = bf0 = bf0 - ring[r20];
                probe_ahead(rec, tt0, dts, bfl, nb, j - (double)nb, after_prompt, total, blocks_all, in_sys, fm, w,
                            weight);
            }
            continue;
        }
        /* the blocks each step takes (requests whose cache sits on a block boundary), while they fit */
        int fit = nmax;
        double bf = blocks_free;
        for (int i = 0; i < nmax; i++) {
            bf -= ring[r2]; /* (exact: whole counts, so need > free before <=> free after < 0) */
            bfs[i] = bf;
            r2 = (r2 == 0 ? bt : r2) - 1;
        }
        if (bf < 0) /* the first step whose blocks do not fit */
            for (fit = 0; bfs[fit] >= 0; fit++)
                ;
        /* The steps in order, each exit tested as the reference does (the arrival, the blocks, the
         * time): the clock, the sampled steps (their number on the stride), the gaps' bins and the
         * largest gap. A gap inside the bin of the last (finite, >= 0 by the bin's bounds) takes
         * no other test, in an inner loop without calls (its values stay in registers); the bin's
         * count is added once per run of gaps inside it. */
        int nb = 0, lim = fit < bad ? fit : bad;
        int64_t next_s = until_sample - 1; /* the block's sampled step */
        double tt0 = tt;                   /* the block's first step's start (the probe's) */
        for (;;) {
            int lim2 = next_s < lim ? (int)next_s : lim, k = nb;
            double tc = tt, mx = imax, lo = vlo, hi = bin_hi, ta = t_arr;
            while (k < lim2 && tc < ta) {
                double d = dts[k];
                if (!(d >= lo && d < hi))
                    break;
                tc += d;
                mx = d > mx ? d : mx;
                k++;
            }
            tt = tc;
            imax = mx;
            nb = k;
            if (!(nb < lim && tt < t_arr))
                break;
            double d = dts[nb];
            if (!(d >= vlo && d < bin_hi)) {
                if (!(d >= 0 && d <= DBL_MAX)) { /* not finite, or negative: its value as the reference has it */
                    double cn = ctx_at(&cx, j + (double)nb);
                    rc = hl_fail(err, HL_EINVAL, "step time is not finite (%g s)",
                                 have_line ? hl_decode_fn_time(line, cn, cn) : d);
                    break;
                }
                bin = ahead_rebin(itl, bin, d, fm, jn + nb - run0, fm_whole, &bin_lo, &bin_hi, &vlo);
                run0 = jn + nb;
            }
            if (nb == next_s) { /* this step's number falls on the stride: record_sample takes it */
                int64_t to_next;
                if ((rc =
                         ahead_sample(rec, steps0 + jn + nb, tt, (total - bfs[nb]) / blocks_all, fm, w, &to_next, err)))
                    break;
                next_s = nb + to_next;
            }
            tt += d;
            imax = d > imax ? d : imax;
            nb++;
        }
        if (!rc && nb == bad && bad < fit && tt < t_arr) /* hl_stepper_time refused this step */
            rc = brc;
        if (nb < nmax || rc) /* an exit: the arrival, the blocks, the last iteration, a bad time, an error */
            more = 0;
        r2 = (r2 + (nmax - nb)) % bt; /* the blocks ring: back to the first step not taken */
        if (nb > 0)
            blocks_free = bfs[nb - 1];
        until_sample = next_s - nb + 1;
        j += nb;
        jn += nb;
        for (int i = 0; i < nb; i++) {                /* the terms, as record() and hl_itl_add() form them */
            double u = (total - bfs[i]) / blocks_all; /* util as each step left it */
            prod[i] = fm * dts[i];
            kvt[i] = u * dts[i];
        }
        if (__builtin_expect(rec->probe != NULL, 0))
            probe_ahead(rec, tt0, dts, bfs, nb, j - (double)nb, after_prompt, total, blocks_all, in_sys, fm, w, weight);
        const double *bw = weight == 1 ? dts : bws; /* dt weight (= dt where weight = 1) */
        for (int i = 0; i < nb && weight != 1; i++)
            bws[i] = dts[i] * weight;
        if (w == 0) { /* nothing waits: in_sys dt = m dt, w dt = 0 (wait + 0 = wait) */
            for (int i = 0; i < nb; i++) {
                double p = prod[i];
                busy += bw[i];
                little += p;
                run += p;
                kv += kvt[i];
                isum += p;
            }
        } else {
            for (int i = 0; i < nb; i++) {
                double dt = dts[i];
                busy += bw[i];
                little += in_sys * dt;
                run += prod[i];
                wait += w * dt;
                kv += kvt[i];
                isum += prod[i];
                sat_time += bw[i];
            }
        }
        if (nb > 0) { /* util only grows over the block (blocks are only taken): its last is the largest */
            double u = (total - bfs[nb - 1]) / blocks_all;
            kv_max = u > kv_max ? u : kv_max; /* fmax: neither is NaN */
        }
        for (int i = 0; s->pc && i < nb; i++)
            rec->kv_cached += (cached0 - hl_fmax(0, (free0 - bfs[i]) - (free0 - cached0))) / blocks_all * dts[i];
    }
    /* The step a member finishes in, in place (lean, with fin: an open loop of one pool of one unit
     * group): set_step's step (which see) where it would take it, its terms as record() and
     * hl_itl_add() form them (weight 1, nothing waits: the loop's, at its own time and the
     * utilisation after the finishers' blocks went back), then on with the members left. */
    if (fin && lean && !rc && s->ev_on && j == left && tt < t_arr && s->n_pre == 0 && s->dn == (double)s->n_run) {
        if (j > 0) { /* this m's steps, as the call's end gives them */
            rec->t_end = hl_fmax(rec->t_end, tt);
            if ((rc = clock_bound(seg_t0, tt, err)))
                goto counts;
            s->out_tok -= j * fm;
            hl_dset_advance(s, j, tt);
            j = 0;
        }
        double dn = s->dn, need = s->ring[(bt - s->dc_res) % bt];
        if (!(dn > 0) || s->t_emit != tt || dn > (double)c->token_budget || need > blocks_free ||
            hl_interrupt_pending())
            goto counts; /* not set_step's either: the loop's */
        blocks_free -= need;
        s->blocks_free = blocks_free;
        plan_set_alone(s);
        double mean = (0 + s->dctx) / (0 + dn), dk = hl_decode_fn_time(line, mean, mean), dt = 0;
        if (!(dk >= 0 && dk <= DBL_MAX)) { /* hl_stepper_time's refusal, as it is */
            hl_iter it = {0 + dn, mean, mean, 0, s->chunks, 0 + dn, 0, 0};
            if ((rc = hl_stepper_time(st, &it, &dk, err)))
                return rc;
        }
        dt = hl_fmax(dt, c->offload_overlap ? hl_fmax(dk, 0) : dk + 0); /* no host loads, no drafts */
        rec->reload += 0;
        double t_end = tt + dt;
        s->out_tok -= dn;
        hl_dset_emit(s, t_end);
        if ((rc = finish_set(fin, s, unit, t_end)))
            return rc;
        if (!(dt >= vlo && dt < bin_hi)) { /* its gap (dt, same = dn = m: the set's) */
            bin = ahead_rebin(itl, bin, dt, fm, jn - run0, fm_whole, &bin_lo, &bin_hi, &vlo);
            run0 = jn;
        }
        isum += dt * fm;
        if (dt > imax)
            imax = dt;
        /* record(): used = used_all (one unit); busy_prefill and wait take +0 (sums of terms >= 0: no -0) */
        double util = (0 + (s->blocks_total - s->blocks_free)) / blocks_all;
        if (__builtin_expect(rec->probe != NULL, 0)) /* its terms as this step forms them (in system = running = m) */
            probe_record(rec, (const double[HL_SERVE_PROBE_N]){tt, dt, fm, fm, w, util, util, fm, 0, fm, weight,
                                                               HL_SERVE_PATH_SET_STEP});
        rec->kv_cached += 0 / blocks_all * dt;
        rec->kv_cached_max = hl_fmax(rec->kv_cached_max, 0 / blocks_all);
        rec->t_end = hl_fmax(rec->t_end, tt + dt);
        if ((rc = clock_bound(tt, tt + dt, err)))
            return rc;
        busy += dt;        /* dt weight, weight 1 */
        little += fm * dt; /* in_system = running = m */
        run += fm * dt;
        kv += util * dt;
        kv_max = hl_fmax(kv_max, util);
        if (until_sample == 1) { /* this step's number falls on the stride */
            if ((rc = ahead_sample(rec, steps0 + jn, tt, util, fm, w, &until_sample, err)))
                return rc;
        } else
            until_sample--;
        jn++; /* its counts: m more tokens and gaps, this m's */
        tt = t_end;
        hl_dset_after_step(s);
        blocks_free = s->blocks_free;
        /* the counts and bin of m, then the members left (run_ahead's start for them, after_prompt 0) */
        itl->count[bin] = add_times(itl->count[bin], fm, jn - run0, fm_whole);
        itl->n = add_times(itl->n, fm, jn - jseg0, fm_whole);
        tokens = add_times(tokens, fm, jn - jseg0, fm_whole);
        run0 = jseg0 = jn;
        if (m <= sc->cap) {
            sc->bin[m] = bin;
            sc->bin_range[2 * m] = bin_lo;
            sc->bin_range[2 * m + 1] = bin_hi;
        }
        /* the members left: on here where run_ahead would go on with them, else its call (*again) */
        int64_t m2 = s->n_run;
        *again = 1;
        if (m2 == 0 || !(tt < t_arr) || s->dn != (double)m2 || !s->ev_on)
            goto counts;
        hl_dset_ahead(s, &left, &ksum, &slot0);
        if (!(left >= 0))
            goto counts;
        if ((rc = ahead_line(sc, st, m2, &own, &line, &have_line, err)))
            return rc;
        if (!have_line)
            goto counts;
        *again = 0;
        mono = line_mono(line);
        m = m2;
        fm = (double)m;
        in_sys = fm + w;
        fm_whole = whole_below(fm, 0x1p20);
        cx = ahead_ctx_for(ksum, m, left);
        if (m <= sc->cap && sc->bin_range[2 * m + 1] > 0) {
            bin = sc->bin[m];
            bin_lo = sc->bin_range[2 * m];
            bin_hi = sc->bin_range[2 * m + 1];
            vlo = bin_lo > 0 ? bin_lo : 0;
        }
        r2 = slot0;
        seg_t0 = tt;
        more = 1;
        after_prompt = 0; /* (the probe's label; cx as a call's after set_step) */
        goto next_m;
    }
counts:
    /* the counts, m each step (whole numbers: added at once, exactly, where the sums stay below 2^53) */
    itl->count[bin] = add_times(itl->count[bin], fm, jn - run0, fm_whole);
    itl->n = add_times(itl->n, fm, jn - jseg0, fm_whole);
    tokens = add_times(tokens, fm, jn - jseg0, fm_whole);
    if (w > 0)
        sat_tokens = add_times(sat_tokens, fm, jn - jseg0, fm_whole);
    itl->ahead_bin = bin; /* the bin the next run-ahead's first gap most likely falls in */
    itl->ahead_lo = bin_lo;
    itl->ahead_hi = bin_hi;
    if (m <= sc->cap) {
        sc->bin[m] = bin;
        sc->bin_range[2 * m] = bin_lo;
        sc->bin_range[2 * m + 1] = bin_hi;
    }
    s->blocks_free = blocks_free;
    rec->busy = busy;
    rec->little = little;
    rec->run = run;
    rec->wait = wait;
    rec->kv = kv;
    rec->kv_max = kv_max;
    rec->tokens = tokens;
    rec->sat_tokens = sat_tokens;
    rec->sat_time = sat_time;
    rec->steps = steps0 + jn;
    if (j > 0)
        rec->t_end = hl_fmax(rec->t_end, tt);
    if (!rc && j > 0)
        rc = clock_bound(seg_t0, tt, err);
    itl->sum = isum;
    itl->max = imax;
    *t = tt;
    if (rc)
        return rc;
advanced:
    s->out_tok -= j * (double)m;
    if (s->ev_on && j > 0)
        hl_dset_advance(s, j, *t);
    for (int64_t k = 0; k < m && j > 0 && !s->ev_on; k++) {
        rq *x = &s->q[s->run[k]];
        x->kv += j;
        x->gen += j;
        double blocks = hl_fmax(x->blocks, hl_sched_blocks_for(s, x->kv));
        if (s->pc) { /* the blocks its tokens took, named as they filled (no prompt looked in between) */
            hl_spc_alloc(s->pc, &s->pcr[s->run[k]], (int64_t)(blocks - x->blocks));
            hl_spc_commit(s->pc, &s->pcr[s->run[k]], x->kv, c->block_tokens);
        }
        x->blocks = blocks;
        x->last_tok = *t;
    }
    return HL_OK;
}

/* KV blocks of the instance: HBM left after weights and workspace, per GPU of
 * a data-parallel group, times the groups. */
hl_status hl_serve_kv_blocks(const hl_serve_cfg *c, const hl_stepper *st, double *blocks, hl_err *err)
{
    if (c->kv_blocks > 0) {
        *blocks = floor(c->kv_blocks);
        return HL_OK;
    }
    hl_job j = c->job;
    j.batch = (double)hl_stepper_dp(st);
    j.input = (double)c->token_budget; /* workspace sized for a full iteration */
    j.output = 1;
    hl_memory mem;
    hl_status rc = hl_memory_per_gpu(&j, &mem, err);
    if (rc)
        return rc;
    double draft_tok; /* a draft model keeps its own KV of every cached token (docs/MODEL.md 6.2); */
    /* j, not c->job: the instance's batch is 1, which a draft resolved over dp > 1 ranks refuses */
    if ((rc = hl_memory_draft_token_bytes(&j, &draft_tok, err)))
        return rc;
    hl_kv_capacity_in in = {c->job.cluster.gpu.hbm_bytes,
                            c->job.mem_util,
                            mem.weights_bytes,
                            mem.workspace_bytes,
                            hl_stepper_kv_token_bytes(st) + draft_tok,
                            1,
                            (double)c->block_tokens,
                            hl_framework_profile(c->job.framework).kv_of_free};
    hl_kv_capacity cap;
    if ((rc = hl_kv_capacity_compute(&in, &cap, err)))
        return rc;
    *blocks = cap.blocks_total * (double)hl_stepper_dp(st);
    return HL_OK;
}

/* The requests a run of c serves (a trace's, or the drawn count). */
static double run_requests(const hl_serve_cfg *c)
{
    int trace = c->arrival == HL_ARRIVAL_TRACE || (c->arrival == HL_ARRIVAL_AUTO && c->trace && c->n_trace > 0);
    return trace ? (c->requests > 0 && c->requests < c->n_trace ? c->requests : c->n_trace)
                 : (c->requests > 0 ? c->requests : 1000);
}

double hl_serve_memory_bytes(const hl_serve_cfg *c)
{
    int trace = c->arrival == HL_ARRIVAL_TRACE || (c->arrival == HL_ARRIVAL_AUTO && c->trace && c->n_trace > 0);
    double n = run_requests(c);
    /* per request: the requests and a sorted copy of a trace, the scheduler's state, the queue,
     * the summary record (kept with keep_requests), one metric's sorted copy for its percentiles */
    double per = 2.0 * sizeof(hl_trace_req) + sizeof(rq) + sizeof(int64_t) + sizeof(hl_serve_req) + sizeof(double);
    if (c->prefix_cache) /* a request's block hashes and ids live while it is queued or running, not counted */
        per += sizeof(hl_pc_req);
    if (c->session_turns > 0) /* conversations and each request's conversation; open loop: the heap */
        per += sizeof(hl_session) + sizeof(int64_t) +
               (c->arrival != HL_ARRIVAL_CONCURRENCY ? 3.0 * sizeof(int64_t) : 0); /* pend, pend_at, seq */
    if (trace && c->trace_content) /* the content columns, parsed and in arrival order, and the order */
        per += 2.0 * sizeof(hl_trace_content) + sizeof(int64_t);
    if (c->disagg) /* the prompt and decode copies, maps and the decode pool's state */
        per += 2.0 * sizeof(hl_trace_req) + 4.0 * sizeof(double) + sizeof(rq) + sizeof(int64_t);
    return n * per;
}

/* Speculative decoding in the scheduler (docs/MODEL.md 12): each decoding sequence's step is a
 * verify pass of gamma + 1 positions (the target's layers over its cached context, logits of every
 * position, as hl.simulate's decode_speculative), after gamma draft passes of the drafter
 * (spec_draft_layers layers of the target's shape and an LM head, one token per sequence; with no
 * layers the LM head alone, from drafters of 1 and 2 layers, linear in layers); the
 * step keeps the accepted drafts + 1, each draft accepted with probability alpha until the first
 * rejection (Leviathan et al. 2023). */
typedef struct spec_model {
    double gamma, alpha; /* draft tokens per step (0: off), acceptance of each (n_pos = 0) */
    int32_t n_pos;       /* > 0: per-position acceptance pos[k] of draft k given drafts < k (n_pos = gamma) */
    double pos[HL_SPEC_POSITIONS_MAX];
    double overhead_s; /* the drafter stepper's per-pass framework overhead, not charged to drafts */
} spec_model;

static hl_status spec_setup(const hl_job *job, int64_t cap, hl_job *target, spec_model *sp, hl_stepper **draft,
                            hl_stepper **draft2, hl_err *err)
{
    *target = *job;
    target->spec_tokens = target->spec_accept = 0;
    hl_job_set_spec_accept(target, NULL, 0, NULL); /* n = 0 cannot fail */
    target->spec_draft_layers = 1;
    target->spec_draft = 0;
    memset(&target->spec_draft_model, 0, sizeof target->spec_draft_model);
    memset(sp, 0, sizeof *sp);
    *draft = *draft2 = NULL;
    if (!(job->spec_tokens > 0))
        return HL_OK;
    hl_status chk = hl_job_check_spec(job, err);
    if (chk)
        return chk;
    if (job->pp > 1)
        return hl_fail(err, HL_EINVAL,
                       "field 'spec_tokens': speculative decoding in serving is modelled for pp = 1 (got pp = %lld)",
                       (long long)job->pp);
    if (job->spec_draft_layers != floor(job->spec_draft_layers))
        return hl_fail(err, HL_EINVAL, "field 'spec_draft_layers': %g is not a whole number of layers in serving",
                       job->spec_draft_layers);
    sp->gamma = job->spec_tokens;
    sp->alpha = job->spec_accept;
    sp->n_pos = job->spec_accept_n;
    memcpy(sp->pos, job->spec_accept_pos, sizeof sp->pos);
    hl_job d = *target;
    d.model.layers = job->spec_draft_layers >= 1 ? (int64_t)job->spec_draft_layers : 1;
    if (d.model.dense_layers >= d.model.layers)
        d.model.dense_layers = 0; /* the drafter takes the shape of the model's MoE layers */
    if (job->spec_draft) {        /* a draft model of its own: its decode step, with the target's TP */
        hl_status dr = hl_job_draft(job, &d, err);
        if (dr)
            return dr;
    }
    hl_job fw;
    sp->overhead_s = hl_job_with_framework(&d, &fw)->step_overhead;
    hl_status rc = hl_stepper_new_rank(&d, cap, draft, err); /* one DP rank's, as the target's */
    if (rc && job->spec_draft) {
        hl_err_prefix(err, "field 'spec_draft_model'");
        return rc;
    }
    if (!rc && !job->spec_draft &&
        job->spec_draft_layers < 1) { /* no layers: the LM head alone, 2 t(1 layer) - t(2 layers) */
        d.model.layers = 2;
        rc = hl_stepper_new_rank(&d, cap, draft2, err);
    }
    if (rc)
        hl_err_prefix(err, "the drafter (spec_draft_layers)");
    return rc;
}

/* Seconds of the gamma draft passes for `seqs` sequences of one DP rank at mean context ctx;
 * routed: the tokens of every rank of its EP group in the same lock-step pass (0: this rank alone). */
static hl_status draft_time(const spec_model *sp, hl_stepper *draft, hl_stepper *draft2, double seqs, double ctx,
                            double routed, double *t, hl_err *err)
{
    double w = hl_stepper_window(draft);
    hl_iter it = {seqs, ctx, w > 0 ? hl_fmin(ctx + 1, w) - 1 : ctx, 0, NULL, seqs, 0, routed};
    double one, two = 0;
    hl_status rc = hl_stepper_time(draft, &it, &one, err);
    if (!rc && draft2)
        rc = hl_stepper_time(draft2, &it, &two, err);
    *t = sp->gamma * ((draft2 ? 2 * one - two : one) - sp->overhead_s);
    return rc;
}

/* Draft tokens a verify pass accepts: draft k (0-based) with probability alpha (or pos[k]) given
 * drafts < k were, until the first rejection; one uniform draw per draft tried either way. */
static double accepted(const spec_model *sp, hl_rng *rng)
{
    double k = 0;
    while (k < sp->gamma && hl_rng_uniform(rng) < (sp->n_pos > 0 ? sp->pos[(int32_t)k] : sp->alpha))
        k++;
    return k;
}

/* Seconds one request of mean lengths takes alone: its prompt in one step,
 * then output - 1 decode steps at its mean context (docs/MODEL.md 12). */
static hl_status time_alone(const hl_serve_cfg *c, hl_stepper *st, double *t, hl_err *err)
{
    double in = hl_serve_mean_length(c, 0), out = hl_serve_mean_length(c, 1), dt;
    hl_iter_chunk ch = {hl_fmin(in, (double)c->token_budget), 0};
    hl_iter pre = {0, 0, 0, 1, &ch, 1, 1, 0};
    hl_status rc = hl_stepper_time(st, &pre, t, err);
    double ctx = in + out / 2, w = hl_stepper_window(st);
    hl_iter dec = {1, ctx, w > 0 ? hl_fmin(ctx + 1, w) - 1 : ctx, 0, NULL, 1, 0, 0};
    if (!rc && out > 1 && !(rc = hl_stepper_time(st, &dec, &dt, err)))
        *t += (out - 1) * dt;
    return rc;
}

/* A client's first request in the start order: its arrival (s) and its index. */
typedef struct start_key {
    double arrival;
    int64_t i;
} start_key;

/* Sorts k[0, n) by arrival, stably (equal arrivals keep their order), through
 * tmp (n / 2 + 1 entries): a top-down merge sort, O(n log n). */
static void sort_starts(start_key *k, start_key *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_starts(k, tmp, h);
    sort_starts(k + h, tmp, n - h);
    if (!(k[h].arrival < k[h - 1].arrival))
        return; /* already in order */
    memcpy(tmp, k, sizeof *k * (size_t)h);
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        k[o++] = k[j].arrival < tmp[i].arrival ? k[j++] : tmp[i++]; /* a tie takes the left: stable */
    while (i < h)
        k[o++] = tmp[i++];
}

/* The closed loop's first requests: client k's at a uniform time in [0,
 * start_jitter_s) (default: one request's time alone), in time order (ties in
 * client order, as the insertion sort this replaces left them: it was O(n^2)
 * moves of 120-byte entries, half of hl.serve's instructions for 1,000
 * clients). Clients that start together with identical requests would prefill
 * together forever. */
static hl_status start_clients(const hl_serve_cfg *c, hl_stepper *st, rq *q, int64_t clients, hl_rng *rng, hl_err *err)
{
    double jitter = c->start_jitter_s;
    hl_status rc = jitter < 0 ? time_alone(c, st, &jitter, err) : HL_OK;
    if (rc || !(jitter > 0)) {
        for (int64_t i = 0; !rc && i < clients; i++)
            q[i].arrival = 0;
        return rc;
    }
    size_t n = (size_t)clients;
    start_key *key = malloc(sizeof *key * (n + n / 2 + 1)); /* n keys, then the merge's n / 2 + 1 */
    rq *old = malloc(sizeof *old * n);
    if (!key || !old) {
        free(key);
        free(old);
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld clients", (long long)clients);
    }
    for (int64_t i = 0; i < clients; i++)
        key[i] = (start_key){hl_rng_uniform(rng) * jitter, i};
    sort_starts(key, key + n, clients);
    memcpy(old, q, sizeof *old * n);
    for (int64_t i = 0; i < clients; i++) {
        q[i] = old[key[i].i];
        q[i].arrival = key[i].arrival;
    }
    free(key);
    free(old);
    return HL_OK;
}

/* One scheduler per data-parallel rank of every instance of a pool (a
 * "unit"); the units of an instance of an MoE model share its EP group and
 * step in lock-step (one "group"); otherwise each unit steps alone. */
typedef struct group {
    int64_t first, count;       /* units [first, first + count) */
    double t;                   /* when its next step may start: the end of its last one */
    int stalled;                /* prefill group waiting for KV room (back-pressure) */
    double stall_from, stall_s; /* start of the stall; stalled time not yet logged */
} group;

/* A pool: the whole deployment, or the prefill or decode side of a
 * disaggregated one (docs/MODEL.md 12). */
enum { POOL_ONE = 0, POOL_PREFILL = 1, POOL_DECODE = 2 };
typedef struct pool {
    int kind;
    hl_stepper *st;
    spec_model sp;              /* speculative decoding (gamma 0: off) */
    hl_stepper *draft, *draft2; /* its drafter's steppers, per DP rank (spec_setup) */
    rq *q;                      /* the pool's records of the requests (n) */
    sched *units;
    group *groups;
    hl_router *rank_routers; /* one per instance: the DP rank of a request */
    hl_router inst_router;
    hl_router_load *loads; /* scratch, max(instances, dp) */
    int64_t instances, dp, U, G;
    int lockstep;
    int64_t *group_of, *firsts;
    hl_iter *its;
    double *toks;
    int64_t *wait, *run, *hand; /* per unit: n + 1, max_seqs, n + 1 (decode: requests awaiting KV room) */
    plan *plan;
    hl_iter_chunk *chunks;
    hl_iter_chunk *dchunks; /* with a draft model: the prompt chunks each rank's draft prefills (ms each) */
    double unit_blocks, blocks_all, window;
    hl_pc_req *pcr; /* prefix cache: per request (n), NULL when off */
    int64_t n;
    double block_bytes, offload_bw; /* KV offload: B per GPU of one block, host-to-GPU B/s per GPU (0: none) */
    void *ev_mem;                   /* the units' decode sets: ring, heap, prefilling and finishing lists */
    int compact;                    /* q holds the requests in flight (slots), not one record per request */
    int64_t cap;                    /* compact: records in q, and each unit's queue holds cap + 1 */
    int64_t max_records;            /* compact: most records the memory budget holds (INT64_MAX: no budget) */
    rq_slots slots;                 /* compact: the free records */
} pool;

static void pool_free(pool *p)
{
    for (int64_t u = 0; p->units && u < p->U; u++)
        hl_pcache_free(p->units[u].pc);
    for (int64_t i = 0; p->pcr && i < p->n; i++)
        hl_spc_done(&p->pcr[i]);
    free(p->pcr);
    hl_stepper_free(p->st);
    hl_stepper_free(p->draft);
    hl_stepper_free(p->draft2);
    free(p->q);
    free(p->units);
    free(p->groups);
    free(p->rank_routers);
    free(p->loads);
    free(p->group_of);
    free(p->firsts);
    free(p->its);
    free(p->toks);
    free(p->wait);
    free(p->run);
    free(p->hand);
    free(p->plan);
    free(p->chunks);
    free(p->dchunks);
    free(p->ev_mem);
    free(p->slots.free);
    memset(p, 0, sizeof *p);
}

/* Tokens of a run: prompts, first tokens (one per request) and later ones. */
typedef struct run_tokens {
    double input, first, decode;
} run_tokens;

/* Everything run() allocates, freed in one place. */
typedef struct owned {
    pool pools[2]; /* [0] the deployment or the prefill pool, [1] the decode pool */
    hl_trace_req *reqs;
    hl_itl_hist *itl;
    ahead_scratch ahead;       /* the decode run-ahead's counters and lines */
    double *xfer;              /* per request: KV transfer time (disaggregated) */
    hl_trace_content *content; /* the trace's content columns in arrival order, NULL without */
    hl_session *sess;          /* multi-turn sessions: the conversations (at most n), NULL without */
    int64_t *sess_of;          /* per request: its conversation */
    int64_t n_sess;
    /* Open-loop sessions: the requests not yet arrived, slots next .. released - 1, as a binary
     * min-heap of slots by (arrival, seq), whose least is kept in slot next (pend_settle). A later
     * turn is released behind every first turn drawn up front, so keeping the slots in time order
     * by insertion moved it past all of them: quadratic (1e6 requests at 2 turns did not end in
     * 300 s). NULL otherwise: a closed loop has at most one pending request a client. */
    int64_t *pend;    /* heap of slots */
    int64_t *pend_at; /* per slot: its index in pend */
    int64_t *seq;     /* per slot: the order its record was placed in (ties of arrival: first placed first) */
    int64_t n_pend;
    /* compact records (pools[0].compact): the requests drawn as they arrive, the next one
     * (peek) drawn ahead; their tokens (all n, for the cost) and the summary's inputs */
    hl_serve_gen gen;
    hl_trace_req peek;
    run_tokens tok;
    hl_serve_acc acc;
} owned;

static void owned_free(owned *o)
{
    pool_free(&o->pools[0]);
    pool_free(&o->pools[1]);
    free(o->reqs);
    free(o->itl);
    ahead_scratch_free(&o->ahead);
    free(o->xfer);
    free(o->content);
    free(o->sess);
    free(o->sess_of);
    free(o->pend);
    free(o->pend_at);
    free(o->seq);
    hl_serve_acc_free(&o->acc);
}

/* Whole-number bounds [*lo, *hi] of a length distribution's draws (hl_len_draw_range); 0 when
 * a draw may not be a whole number. */
static int whole_bounds(const hl_len_dist *d, double *lo, double *hi)
{
    hl_len_draw_range(d, lo, hi);
    int kinds = d->kind == HL_LEN_FIXED || d->kind == HL_LEN_UNIFORM || d->kind == HL_LEN_NORMAL;
    return kinds && *lo == floor(*lo) && *hi == floor(*hi) && *lo >= 1;
}

/* Compact records (resolved cfg): no per-request output is kept, the requests of an open
 * loop are drawn as they arrive, and a request's record lives while it is in flight; the
 * summary's sums of whole lengths (below 2^53) are exact in any order, so they are added as
 * requests finish. Prefix caching, sessions, closed loops, disaggregation and the step log
 * index per-request arrays by arrival: those keep one record per request. */
static int compact_wanted(const hl_serve_cfg *c)
{
    double in_lo, in_hi, out_lo, out_hi, n = (double)c->requests;
    if (c->keep_requests || c->keep_steps || c->disagg || c->session_turns > 0 || c->prefix_cache ||
        !(c->arrival == HL_ARRIVAL_POISSON || c->arrival == HL_ARRIVAL_CONSTANT) || c->requests < 1 ||
        !whole_bounds(&c->input, &in_lo, &in_hi) || !whole_bounds(&c->output, &out_lo, &out_hi))
        return 0;
    /* speculation: pool_init asks whether any request decodes; with outputs > 1 every one does */
    return n * in_hi < 0x1p53 && n * out_hi < 0x1p53 && (c->job.spec_tokens == 0 || out_lo > 1);
}

/* Compact records: whether every request the distributions can draw passes pool_init's
 * per-request checks and the decode set's (whole lengths below 2^40), so that no request
 * is refused during the run that one record per request would have refused up front. */
static int compact_fits(const pool *p, const hl_serve_cfg *c, const hl_job *job, double state_blocks)
{
    double in_lo, in_hi, out_lo, out_hi;
    whole_bounds(&c->input, &in_lo, &in_hi);
    whole_bounds(&c->output, &out_lo, &out_hi);
    sched b = {.block = (double)c->block_tokens, .state_blocks = state_blocks};
    return in_lo >= job->image_tokens && (c->chunked_prefill || in_hi <= (double)c->token_budget) &&
           hl_sched_blocks_for(&b, in_hi + out_hi - 1) <= p->unit_blocks && in_hi + out_hi < 0x1p40;
}

static _Thread_local int64_t compact_runs;
int64_t hl_serve_compact_runs(void) { return compact_runs; }

enum { COMPACT_RECORDS = 1024 }; /* compact records at first (doubled when all are in flight) */

/* Sets up pool p: `instances` copies of job's mapping, one scheduler per DP
 * rank with its share of the instance's KV blocks, requests from reqs
 * (prefilled: they arrive with their prompt's KV and first token). reqs NULL: compact
 * records (compact_wanted), or, when a request the distributions can draw might be refused,
 * p->q left NULL (the caller draws the requests and sets the pool up again). */
static hl_status pool_init(pool *p, int kind, const hl_serve_cfg *c, const hl_job *job, int64_t instances,
                           const hl_trace_req *reqs, int64_t n, int prefilled, hl_err *err)
{
    hl_status rc;
    p->kind = kind;
    int64_t cap = c->token_budget > c->max_seqs ? c->token_budget : c->max_seqs;
    int compact = reqs == NULL;
    int decodes = compact; /* speculation only where requests decode (not on a prefill pool) */
    for (int64_t i = 0; i < n && kind != POOL_PREFILL && !decodes; i++)
        decodes = reqs[i].output > 1;
    hl_job target = *job, plain = *job;
    plain.spec_tokens = 0;
    if ((rc = spec_setup(decodes ? job : &plain, cap, &target, &p->sp, &p->draft, &p->draft2, err)) ||
        (rc = hl_stepper_new_rank(&target, cap, &p->st, err)))
        return rc;
    if (c->sched_reference) { /* the reference times every step through the accumulator alone (tests: the kept
                                 kernels and I/O parts of step.c are compared with it too) */
        hl_stepper_memo(p->st, 0);
        if (p->draft)
            hl_stepper_memo(p->draft, 0);
        if (p->draft2)
            hl_stepper_memo(p->draft2, 0);
    }
    hl_serve_cfg cj = *c;
    cj.job = *job;
    double blocks = 0;
    if ((rc = hl_serve_kv_blocks(&cj, p->st, &blocks, err)))
        return rc;
    int64_t dp = hl_stepper_dp(p->st), U = instances * dp;
    p->instances = instances;
    p->dp = dp;
    p->U = U;
    p->lockstep = job->model.experts > 0 && dp > 1;
    p->G = p->lockstep ? instances : U;
    p->unit_blocks = floor(blocks / (double)dp); /* each DP rank its own share of the instance's cache */
    p->blocks_all = p->unit_blocks * (double)U;
    p->window = hl_stepper_window(p->st);
    double state_blocks =
        ceil(hl_stepper_state_bytes(p->st) / ((double)c->block_tokens * hl_stepper_kv_token_bytes(p->st)));
    if (compact && !compact_fits(p, c, job, state_blocks))
        return HL_OK; /* p->q NULL: one record per request */
    size_t ms = (size_t)c->max_seqs;
    int64_t nq = compact ? COMPACT_RECORDS : n; /* records, and each queue's capacity - 1 */
    p->compact = compact;
    p->cap = nq;
    p->max_records = INT64_MAX; /* (run: the memory budget's) */
    p->q = calloc((size_t)(nq > 0 ? nq : 1), sizeof *p->q);
    p->units = calloc((size_t)U, sizeof *p->units);
    p->groups = calloc((size_t)p->G, sizeof *p->groups);
    p->rank_routers = calloc((size_t)instances, sizeof *p->rank_routers);
    p->loads = calloc((size_t)(instances > dp ? instances : dp), sizeof *p->loads);
    p->group_of = malloc(sizeof(int64_t) * (size_t)U);
    p->firsts = malloc(sizeof(int64_t) * (size_t)U);
    p->its = malloc(sizeof(hl_iter) * (size_t)U);
    p->toks = malloc(sizeof(double) * (size_t)U);
    p->wait = malloc(sizeof(int64_t) * (size_t)(nq + 1) * (size_t)U);
    p->slots.free = compact ? malloc(sizeof(int64_t) * (size_t)nq) : NULL;
    p->hand = kind == POOL_DECODE ? malloc(sizeof(int64_t) * (size_t)(n + 1) * (size_t)U) : NULL;
    p->run = malloc(sizeof(int64_t) * ms * (size_t)U);
    p->plan = malloc(sizeof(plan) * ms * (size_t)U);
    p->chunks = malloc(sizeof(hl_iter_chunk) * ms * (size_t)U);
    int draft_model = p->sp.gamma > 0 && job->spec_draft; /* its prompt chunks are kept per rank */
    p->dchunks = draft_model ? malloc(sizeof(hl_iter_chunk) * ms * (size_t)U) : NULL;
    if ((draft_model && !p->dchunks) || (compact && !p->slots.free) || !p->q || !p->units || !p->groups ||
        !p->rank_routers || !p->loads || !p->group_of || !p->firsts || !p->its || !p->toks || !p->wait || !p->run ||
        !p->plan || !p->chunks || (kind == POOL_DECODE && !p->hand))
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests on %lld schedulers", (long long)n,
                       (long long)U);
    for (int64_t k = nq - 1; compact && k >= 0; k--) /* slot 0 first */
        p->slots.free[p->slots.n_free++] = k;
    p->n = n;
    /* the host tier of each rank: its GPUs' share of capacity_bytes, in blocks of their KV shard */
    p->block_bytes = (double)c->block_tokens * hl_stepper_kv_token_bytes(p->st);
    double host_bytes = 0;
    hl_spc_offload_link(c, &p->offload_bw, &host_bytes);
    int64_t host_blocks = c->prefix_cache && c->offload_bytes > 0
                              ? (int64_t)hl_fmin(floor(c->offload_bytes / p->block_bytes), 1 << 30)
                              : 0;
    if (c->prefix_cache && c->offload_bytes > 0 && host_blocks < 1) /* it would hold nothing, silently */
        return hl_fail(err, HL_EINVAL,
                       "serve field 'kv_offload.capacity_bytes': %g B per GPU holds no KV block (a block of %lld "
                       "tokens is %g B per GPU for this model and mapping); give at least %g B, or no kv_offload",
                       c->offload_bytes, (long long)c->block_tokens, p->block_bytes, p->block_bytes);
    if (c->prefix_cache) {
        if (state_blocks > 0)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'prefix_cache': model '%s' keeps a linear-attention state per sequence, "
                           "which a cache of KV blocks does not hold (not modelled)",
                           job->model.name);
        if (!(p->pcr = calloc((size_t)(n > 0 ? n : 1), sizeof *p->pcr)))
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests' prefix blocks", (long long)n);
    }
    for (int64_t u = 0; u < U; u++) {
        sched *s = &p->units[u];
        s->cfg = c;
        s->n = n;
        s->q = p->q;
        s->block = (double)c->block_tokens;
        s->state_blocks = state_blocks;
        s->blocks_total = s->blocks_free = p->unit_blocks;
        s->dq = 1 + p->sp.gamma;
        s->wait = p->wait + (size_t)u * (size_t)(nq + 1);
        s->w_cap = nq + 1;
        s->slots = compact ? &p->slots : NULL;
        s->run = p->run + (size_t)u * ms;
        s->plan = p->plan + (size_t)u * ms;
        s->chunks = p->chunks + (size_t)u * ms;
        s->dchunks = p->dchunks ? p->dchunks + (size_t)u * ms : NULL;
        if (p->hand)
            s->hand = p->hand + (size_t)u * (size_t)(n + 1);
        p->group_of[u] = p->lockstep ? u / dp : u;
        if (c->prefix_cache) {
            if ((rc = hl_pcache_new((int64_t)p->unit_blocks, host_blocks, &s->pc, err)))
                return rc;
            s->pcr = p->pcr;
        }
    }
    /* the decode set (serve_dset.c) where its members step alike: whole-token lengths (its sums are
     * exact), chunked prefill, no prefix cache, speculation, window, state, reservation */
    int ev = !c->sched_reference && c->chunked_prefill && kind == POOL_ONE && !c->prefix_cache && p->sp.gamma == 0 &&
             p->window == 0 && state_blocks == 0 && !c->reserve && c->block_tokens <= 65536;
    for (int64_t i = 0; i < n && ev && !compact; i++) /* compact: compact_fits */
        ev = reqs[i].input == floor(reqs[i].input) && reqs[i].output == floor(reqs[i].output) &&
             reqs[i].input + reqs[i].output < 0x1p40;
    /* per unit: the ring, the heap, the prefilling and finishing lists, the calendar's bits, its
     * nodes' members, then its 4-byte arrays (nodes' links, bucket heads), to a multiple of 16 B */
    size_t per_unit = sizeof(double) * (size_t)c->block_tokens + sizeof(hl_dheap) * ms + 3 * sizeof(int64_t) * ms +
                      sizeof(uint64_t) * (HL_DSET_CAL / 64) + sizeof(int32_t) * (ms + HL_DSET_CAL);
    per_unit = (per_unit + 15) / 16 * 16;
    if (ev && !(p->ev_mem = calloc((size_t)U, per_unit)))
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld schedulers", (long long)U);
    for (int64_t u = 0; u < U && ev; u++) {
        sched *s = &p->units[u];
        char *base = (char *)p->ev_mem + (size_t)u * per_unit;
        s->ev = 1;
        s->ring = (double *)base;
        s->heap = (hl_dheap *)(base + sizeof(double) * (size_t)c->block_tokens);
        s->pre = (int64_t *)(s->heap + ms);
        s->fin = s->pre + ms;
        s->cal_r = s->fin + ms;
        s->cal_bits = (uint64_t *)(s->cal_r + ms);
        s->cal_next = (int32_t *)(s->cal_bits + HL_DSET_CAL / 64);
        s->cal_head = s->cal_next + ms;
        s->cal_free = -1; /* (the bits are clear: every bucket empty) */
    }
    for (int64_t g = 0; g < p->G; g++)
        p->groups[g] = (group){p->lockstep ? g * dp : g, p->lockstep ? dp : 1, 0, 0, 0, 0};
    for (int64_t i = 0; i < instances; i++)
        p->rank_routers[i].kind = c->router;
    p->inst_router = (hl_router){c->router, 0, 0};
    for (int64_t i = 0; i < n && !compact; i++) {
        rq *x = &p->q[i];
        const hl_trace_req *t = &reqs[i];
        x->arrival = t->arrival_s;
        x->input = x->prompt = t->input;
        x->output = kind == POOL_PREFILL ? 1 : t->output; /* a prefill pool computes the first token only */
        x->total_out = t->output;
        x->first_tok = x->first_sched = -1;
        if (t->input < job->image_tokens)
            return hl_fail(err, HL_EINVAL,
                           "request %lld: input %g tokens is shorter than its image (field 'image_tokens': %g); "
                           "image_tokens must be <= every request's input",
                           (long long)i + 1, t->input, job->image_tokens);
        if (!prefilled && !c->chunked_prefill && t->input > (double)c->token_budget) /* drawn past the budget */
            return hl_serve_unchunked_fail(c, 0, "request", i + 1, t->input, err);
        if (prefilled) { /* prefilled elsewhere: the KV of the prompt is here, the first token out */
            x->prefilled = x->kv = t->input;
            x->gen = 1;
        }
        double most = hl_sched_blocks_for(&p->units[0], t->input + x->output - 1);
        if (most > p->unit_blocks)
            return hl_fail(err, HL_ENOFIT,
                           "request %lld: %g + %g tokens need %g KV blocks of %lld tokens, a data-parallel rank%s "
                           "holds "
                           "%g; fewer tokens, more memory or a larger mapping would help",
                           (long long)i + 1, t->input, t->output, most, (long long)c->block_tokens,
                           kind == POOL_PREFILL  ? " of the prefill pool"
                           : kind == POOL_DECODE ? " of the decode pool"
                                                 : "",
                           p->unit_blocks);
    }
    return HL_OK;
}

/* B of one compact record in flight: the record, its free-list entry and its place in each unit's
 * queue (take_record's arrays). */
static double compact_record_bytes(const pool *p)
{
    return (double)sizeof(rq) + (double)sizeof(int64_t) * (1.0 + (double)p->U);
}

/* B of the metrics a run on compact records keeps for each request it counts: hl_serve_acc's four
 * values and the summary's radix-sort scratch (serve_metrics.c). */
static double compact_metric_bytes(int64_t counted) { return (double)counted * 5.0 * (double)sizeof(double); }

/* Refuses a run whose records would take need B (compact: on compact records) when that is over
 * cfg.memory_budget (0: no budget), before they are allocated. */
static hl_status check_budget(const hl_serve_cfg *c, double need, int compact, hl_err *err)
{
    if (!(c->memory_budget > 0) || !(need > c->memory_budget))
        return HL_OK;
    return hl_fail(err, HL_EINVAL,
                   "field 'requests': %.0f requests would take about %.3g GB%s, more than the budget of %.3g GB "
                   "(HBDLAB_SERVE_MEMORY_BYTES); fewer requests give the same statistics",
                   run_requests(c), need / 1e9, compact ? " on compact records" : "", c->memory_budget / 1e9);
}

/* Compact records: a free record of pool p (when none is, the records double, up to the memory
 * budget's p->max_records, and each unit's queue with them, its order kept); -1 when out of
 * memory, -2 when the budget holds no more. */
static int64_t take_record(pool *p)
{
    if (p->slots.n_free == 0) {
        int64_t cap = p->cap * 2 < p->max_records ? p->cap * 2 : p->max_records;
        if (cap <= p->cap)
            return -2; /* the budget holds no more (cfg.memory_budget) */
        rq *q = realloc(p->q, sizeof *q * (size_t)cap);
        if (!q)
            return -1;
        p->q = q;
        for (int64_t u = 0; u < p->U; u++)
            p->units[u].q = q;
        int64_t *fr = realloc(p->slots.free, sizeof *fr * (size_t)cap);
        int64_t *w = fr ? malloc(sizeof *w * (size_t)(cap + 1) * (size_t)p->U) : NULL;
        if (fr)
            p->slots.free = fr;
        if (!w)
            return -1;
        for (int64_t u = 0; u < p->U; u++) {
            sched *s = &p->units[u];
            int64_t *nw = w + (size_t)u * (size_t)(cap + 1);
            for (int64_t k = 0; k < s->w_len; k++)
                nw[k] = s->wait[(s->w_head + k) % s->w_cap];
            s->wait = nw;
            s->w_head = 0;
            s->w_cap = cap + 1;
        }
        free(p->wait);
        p->wait = w;
        for (int64_t k = cap - 1; k >= p->cap; k--)
            p->slots.free[p->slots.n_free++] = k;
        p->cap = cap;
    }
    return p->slots.free[--p->slots.n_free];
}

/* Compact records: request i (of n) arrives: its record from the drawn request (as
 * pool_init makes it), its tokens counted, the next request drawn; its slot, or -1 when
 * out of memory, -2 when the memory budget holds no more records (take_record). */
static int64_t arrive_compact(const hl_serve_cfg *c, owned *o, int64_t i, int64_t n)
{
    pool *p = &o->pools[0];
    int64_t k = take_record(p);
    if (k < 0)
        return k;
    const hl_trace_req *t = &o->peek;
    int64_t w = c->warmup < n ? c->warmup : 0; /* as summarise() leaves out */
    p->q[k] = (rq){.arrival = t->arrival_s,
                   .input = t->input,
                   .output = t->output,
                   .prompt = t->input,
                   .total_out = t->output,
                   .first_tok = -1,
                   .first_sched = -1,
                   .counted = i >= w};
    o->tok.input += t->input; /* count_tokens' sums, in its order */
    o->tok.decode += t->output - 1;
    if (i + 1 < n)
        hl_serve_gen_next(&o->gen, &o->peek);
    return k;
}

/* When request i (not yet arrived) arrives. */
static double arrival_of(const owned *o, int64_t i)
{
    return o->pools[0].compact ? o->peek.arrival_s : o->pools[0].q[i].arrival;
}

/* The unit of pool p a request goes to: an instance, then one of its DP
 * ranks, by the router (docs/MODEL.md 12, deployment). */
/* Prompt tokens of request r that unit u's prefix cache holds (0 without a cache or a kv_aware router). */
static double cached_on(const pool *p, int64_t u, int64_t r)
{
    const sched *s = &p->units[u];
    if (!s->pc || s->cfg->router != HL_ROUTER_KV_AWARE || !s->pcr[r].hash)
        return 0;
    int64_t gpu, host, taken;
    hl_spc_match(s->pc, &s->pcr[r], s->q[r].prompt, s->cfg->block_tokens, &gpu, &host, &taken);
    return (double)(gpu + host) * s->block;
}

static int64_t pick_unit(pool *p, int64_t r)
{
    int64_t inst = 0, dp = p->dp;
    if (p->instances > 1) {
        for (int64_t i = 0; i < p->instances; i++) {
            hl_router_load l = {0, 0, 0};
            for (int64_t k = 0; k < dp; k++) {
                l.tokens += p->units[i * dp + k].out_tok;
                l.free_blocks += p->units[i * dp + k].blocks_free;
                l.cached = hl_fmax(l.cached, cached_on(p, i * dp + k, r)); /* its best rank's */
            }
            p->loads[i] = l;
        }
        inst = hl_router_pick(&p->inst_router, p->loads, p->instances);
    }
    int64_t rank = 0;
    if (dp > 1) {
        for (int64_t k = 0; k < dp; k++)
            p->loads[k] = (hl_router_load){p->units[inst * dp + k].out_tok, p->units[inst * dp + k].blocks_free,
                                           cached_on(p, inst * dp + k, r)};
        rank = hl_router_pick(&p->rank_routers[inst], p->loads, dp);
    }
    return inst * dp + rank;
}

/* Requests running or queued on group g's units. */
static double group_in_system(const pool *p, const group *g)
{
    double n = 0;
    for (int64_t k = g->first; k < g->first + g->count; k++)
        n += (double)(p->units[k].n_run + p->units[k].w_len);
    return n;
}

static int group_busy(const pool *p, const group *g)
{
    for (int64_t k = g->first; k < g->first + g->count; k++)
        if (p->units[k].n_run > 0 || p->units[k].w_len > 0)
            return 1;
    return 0;
}

/* Queues request r on unit u of pool p at time t (at the head when `front`:
 * a decode request whose KV room is held, admitted before any other); the
 * unit's group, idle until now, starts then. Returns the time from t to the
 * group's next step, the request's share of Little's integral before then (a
 * stalled group's queue is counted from its stall's start when it ends: minus
 * the time before t). */
static double enqueue(pool *p, int64_t u, int64_t r, double t, int front)
{
    sched *s = &p->units[u];
    group *g = &p->groups[p->group_of[u]];
    if (!group_busy(p, g))
        g->t = hl_fmax(g->t, t);
    const rq *x = &s->q[r];
    s->out_tok += x->prompt - x->prefilled + x->output - x->gen;
    if (front)
        hl_sched_wait_push_front(s, r);
    else
        hl_sched_wait_push_back(s, r);
    if (g->stalled) /* its queue's time counts from stall_from when the stall ends: not before t */
        return -(t - g->stall_from);
    return hl_fmax(0, g->t - t);
}

static _Thread_local int64_t record_moves;
int64_t hl_serve_record_moves(void) { return record_moves; }

/* Pending slot a before slot b: the earlier arrival, or on a tie the record placed first. */
static int pend_before(const owned *o, int64_t a, int64_t b)
{
    const rq *q = o->pools[0].q;
    return q[a].arrival < q[b].arrival || (q[a].arrival == q[b].arrival && o->seq[a] < o->seq[b]);
}

static void pend_put(owned *o, int64_t i, int64_t slot)
{
    o->pend[i] = slot;
    o->pend_at[slot] = i;
}

static void pend_up(owned *o, int64_t i)
{
    for (; i > 0 && pend_before(o, o->pend[i], o->pend[(i - 1) / 2]); i = (i - 1) / 2) {
        int64_t up = o->pend[(i - 1) / 2];
        pend_put(o, (i - 1) / 2, o->pend[i]);
        pend_put(o, i, up);
    }
}

static void pend_down(owned *o, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, m = i;
        if (l < o->n_pend && pend_before(o, o->pend[l], o->pend[m]))
            m = l;
        if (l + 1 < o->n_pend && pend_before(o, o->pend[l + 1], o->pend[m]))
            m = l + 1;
        if (m == i)
            return;
        int64_t down = o->pend[m];
        pend_put(o, m, o->pend[i]);
        pend_put(o, i, down);
        i = m;
    }
}

/* The records of pending slots a and b change places (in every pool, with their conversation and
 * placement order); the heap follows its records. */
static void pend_swap(owned *o, int npools, int64_t a, int64_t b)
{
    record_moves++;
    for (int p = 0; p < npools; p++) {
        rq *qq = o->pools[p].q, x = qq[a];
        qq[a] = qq[b];
        qq[b] = x;
    }
    int64_t t = o->sess_of[a];
    o->sess_of[a] = o->sess_of[b];
    o->sess_of[b] = t;
    t = o->seq[a];
    o->seq[a] = o->seq[b];
    o->seq[b] = t;
    int64_t ia = o->pend_at[a], ib = o->pend_at[b];
    pend_put(o, ia, b);
    pend_put(o, ib, a);
}

/* The least pending record into slot next, where the loop reads the next arrival. */
static void pend_settle(owned *o, int npools, int64_t next)
{
    if (o->n_pend > 0 && o->pend[0] != next)
        pend_swap(o, npools, o->pend[0], next);
}

/* A client whose request ended at t sends request `r` after its think time
 * (exponential, mean think_s); the requests not yet arrived, next .. r, stay
 * in time order in every pool's records (none is queued yet, so they may move):
 * by insertion, or through the heap of open-loop sessions (the same order). */
static void release_at(owned *o, int npools, int64_t next, int64_t r, double arrival)
{
    rq *q = o->pools[0].q;
    q[r].arrival = arrival;
    if (o->pend) { /* slots are released in increasing order: r is placed after every earlier record */
        o->seq[r] = r;
        pend_put(o, o->n_pend++, r);
        pend_up(o, o->n_pend - 1);
        pend_settle(o, npools, next);
        return;
    }
    for (int64_t k = r; k > next && q[k - 1].arrival > q[k].arrival; k--) {
        record_moves++;
        for (int p = 0; p < npools; p++) {
            rq *qq = o->pools[p].q, x = qq[k];
            qq[k] = qq[k - 1];
            qq[k - 1] = x;
        }
        if (o->sess_of) { /* the conversation moves with its request */
            int64_t si = o->sess_of[k];
            o->sess_of[k] = o->sess_of[k - 1];
            o->sess_of[k - 1] = si;
        }
    }
}

static void release_next(owned *o, int npools, int64_t next, int64_t r, double t, double think_s, hl_rng *rng)
{
    release_at(o, npools, next, r, t + (think_s > 0 ? -log(hl_rng_uniform(rng)) * think_s : 0));
}

/* Multi-turn sessions (docs/MODEL.md 12): request `r`, not yet arrived, becomes the next turn
 * of conversation si, whose earlier turns (prompts and replies) are `history` tokens: its
 * prompt is that history followed by the new input drawn for r; it arrives session_think_s
 * after the previous turn's last token, at t. */
static hl_status release_turn(const hl_serve_cfg *c, owned *o, int npools, int64_t next, int64_t r, int64_t si,
                              double t, hl_err *err)
{
    pool *P = &o->pools[0];
    rq *x = &P->q[r];
    double history = o->sess[si].history;
    x->input = x->prompt = history + x->input;
    double most = hl_sched_blocks_for(&P->units[0], x->input + x->output - 1);
    if (most > P->unit_blocks || x->input > 1e8)
        return hl_fail(err, HL_ENOFIT,
                       "field 'sessions': turn %lld of a conversation has a prompt of %g tokens (%g of history) and "
                       "%g to generate: %g KV blocks of %lld tokens, a data-parallel rank holds %g; fewer turns "
                       "(sessions.turns), shorter turns or more memory would help",
                       (long long)o->sess[si].turns + 1, x->input, history, x->output, most, (long long)c->block_tokens,
                       P->unit_blocks);
    if (!c->chunked_prefill && x->input > (double)c->token_budget)
        return hl_serve_unchunked_fail(c, 0, "a conversation's turn", o->sess[si].turns + 1, x->input, err);
    o->sess_of[r] = si;
    release_at(o, npools, next, r, t + c->session_think_s);
    return HL_OK;
}

/* What finishing a request touches: the run's clock, clients and sessions. */
typedef struct finish_ctx {
    const hl_serve_cfg *c;
    owned *o;
    int npools, closed;
    pool *P;
    xlink *xl;
    double t_end;      /* s: the end of the step it finished in */
    int64_t next, n;   /* the next arrival; requests */
    int64_t *released; /* requests released (closed loop, sessions) */
    int64_t *done;
    hl_rng *clients;
    hl_err *err;
} finish_ctx;

/* Request r of unit u (of pool f->P) generated its last token at f->t_end: it
 * leaves (its KV given back, or held for a decode unit on a prefill pool) and
 * its client or conversation sends the next request. */
static hl_status finish_request(const finish_ctx *f, sched *s, int64_t u, int64_t r)
{
    const hl_serve_cfg *c = f->c;
    owned *o = f->o;
    rq *x = &s->q[r];
    double t_end = f->t_end;
    int64_t n = f->n;
    x->done = 1;
    s->finished++;
    x->finish = t_end;
    if (f->P->kind == POOL_PREFILL && x->total_out > 1) {
        /* its KV stays here until a decode unit takes it */
        pool *D = &o->pools[1];
        int64_t du = pick_unit(D, r);
        sched *sd = &D->units[du];
        sd->hand[sd->h_head + sd->h_len++] = r; /* each request once: n + 1 entries suffice */
        f->xl->hand_src[r] = u;
        return HL_OK;
    }
    hl_sched_release(s, r);
    if (s->pc)
        hl_spc_done(&s->pcr[r]);
    (*f->done)++;
    if (f->P->compact && x->counted) /* its metrics, as hl_serve_summarise takes them from its record */
        hl_serve_acc_add(&o->acc, c, x->arrival, x->input, x->output, x->first_tok, x->finish, x->first_sched);
    if (o->sess) { /* its conversation goes on, or the client starts a new one */
        int64_t si = o->sess_of[r];
        o->sess[si].history = x->input + x->total_out;
        o->sess[si].turns++;
        if (o->sess[si].turns < c->session_turns && *f->released < n) {
            hl_status rc = release_turn(c, o, f->npools, f->next, (*f->released)++, si, t_end, f->err);
            if (rc)
                return rc;
        } else if (f->closed && *f->released < n) {
            o->sess_of[*f->released] = o->n_sess;
            o->sess[o->n_sess++] = (hl_session){0, 0};
            release_next(o, f->npools, f->next, (*f->released)++, t_end, c->think_s, f->clients);
        }
    } else if (f->closed && *f->released < n) {
        release_next(o, f->npools, f->next, (*f->released)++, t_end, c->think_s, f->clients);
    }
    return HL_OK;
}

static hl_status finish_set(const finish_ctx *f, sched *s, int64_t u, double t_end)
{
    finish_ctx fe = *f;
    fe.t_end = t_end;
    hl_status rc = HL_OK;
    while (!rc && s->fin_done < s->n_fin)
        rc = finish_request(&fe, s, u, s->fin[s->fin_done++]);
    return rc;
}

/* The step the loop would take next where the decode set is all a unit runs (every running request
 * a member, none prefilling, the set's blocks and tokens fit, no waiting request would be admitted
 * beside it) in a pool of one group of that unit: plan_set's plan, the step's time, every member's
 * token, the finishers (admission order), the ITL gaps and the record, as serve_loop's step gives
 * them there (the terms that are nothing there too: a reload of 0, a draft of 0, no cached blocks),
 * without its planning and per-unit loops. Run after a decode run-ahead, whose exits leave it the
 * step that finishes a request. *taken = 0, with nothing changed, where the loop's step is another. */
static hl_status set_step(const finish_ctx *f, sched *s, int64_t u, group *gr, double t_arr, recorder *rec,
                          double blocks_kv, double weight, int *taken)
{
    const hl_serve_cfg *c = f->c;
    pool *P = f->P;
    double t = gr->t, dn = s->dn;
    int64_t bt = (int64_t)s->block;
    *taken = 0;
    if (!s->ev_on || !(dn > 0) || dn != (double)s->n_run || s->n_pre > 0 || s->t_emit != t || !(t < t_arr) ||
        P->kind == POOL_PREFILL || (f->xl && f->xl->concurrent) || hl_interrupt_pending())
        return HL_OK;
    double need = s->ring[(bt - s->dc_res) % bt], budget = (double)c->token_budget - dn;
    if (dn > (double)c->token_budget || need > s->blocks_free)
        return HL_OK; /* plan_set refuses it */
    double in_system = 0 + (double)(s->n_run + s->w_len), tok, need_w;
    int64_t hit[3] = {0, 0, 0};
    s->blocks_free -= need; /* as admission then sees them */
    if (s->w_len > 0 && s->n_run < c->max_seqs && budget >= 1 &&
        hl_sched_admission(s, budget, c->chunk > 0 ? (double)c->chunk : (double)c->token_budget, &tok, &need_w, hit)) {
        s->blocks_free += need; /* a waiting request is admitted in it: the loop's step (whole counts: exact) */
        return HL_OK;
    }
    *taken = 1;
    plan_set_alone(s);
    double ctx = 0 + s->dctx; /* the plan's sums, from 0 */
    hl_iter *it = &P->its[0];
    *it = (hl_iter){0 + dn, ctx / (0 + dn), ctx / (0 + dn), 0, s->chunks, 0 + dn, 0, 0};
    P->toks[0] = 0 + dn;
    P->firsts[0] = -1;
    double dk = -1, dt = 0;
    hl_decode_fn own; /* the decode line of dn sequences, the run-ahead's (hl_stepper_time's where it applies) */
    const hl_decode_fn *line;
    int have_line = 0;
    hl_status rc = ahead_line(&f->o->ahead, P->st, s->n_run, &own, &line, &have_line, f->err);
    if (rc)
        return rc;
    if (have_line)
        dk = hl_decode_fn_time(line, it->decode_ctx_mean, it->decode_win_mean);
    if (!(dk >= 0 && dk <= DBL_MAX) && (rc = hl_stepper_time(P->st, it, &dk, f->err))) /* its refusal, as it is */
        return rc;
    dt = hl_fmax(dt, c->offload_overlap ? hl_fmax(dk, 0) : dk + 0); /* no host loads */
    rec->reload += 0;
    dt += 0; /* no draft passes, no draft prefill */
    dt += 0;
    double t_end = t + dt, emitted = 0 + dn, same = 0 + dn;
    s->out_tok -= dn;
    hl_dset_emit(s, t_end);
    if ((rc = finish_set(f, s, u, t_end)))
        return rc;
    hl_itl_add(f->o->itl, dt, same);
    double step_tok = 0 + P->toks[0], running = 0 + (double)s->n_run, waiting = 0 + (double)s->w_len;
    int64_t decodes = (int64_t)it->decode_seqs;
    double used = 0 + (s->blocks_total - s->blocks_free), used_all = 0;
    for (int64_t k = 0; k < P->U; k++)
        used_all += P->units[k].blocks_total - P->units[k].blocks_free;
    rec->kv_cached += 0 / blocks_kv * dt; /* no prefix cache with the set */
    rec->kv_cached_max = hl_fmax(rec->kv_cached_max, 0 / blocks_kv);
    rec->path = HL_SERVE_PATH_SET_STEP;
    rc = record(rec, t, dt, in_system, running, waiting, used / blocks_kv, used_all / blocks_kv, step_tok,
                step_tok - (double)decodes - 0, emitted, weight, f->err);
    rec->path = HL_SERVE_PATH_STEP;
    if (rc)
        return rc;
    gr->t = t_end;
    hl_dset_after_step(s);
    return HL_OK;
}

/* One event clock over the pools (the deployment, or prefill and decode),
 * serving n requests arriving at pools[0]: route arrivals, complete KV
 * transfers, step the group whose step starts first (docs/MODEL.md 12). With
 * xl (concurrent disaggregation), a request whose prompt ends keeps its KV on
 * its prefill unit until a decode unit has room and the transfer is over; a
 * prefill group with nothing it can schedule waits (stalls) for room. */
static hl_status serve_loop(const hl_serve_cfg *c, owned *o, int npools, xlink *xl, int64_t n, recorder *rec,
                            hl_serve_result *r, int64_t *preempts, hl_err *err)
{
    hl_status rc = HL_OK;
    pool *P0 = &o->pools[0];
    int closed = c->arrival == HL_ARRIVAL_CONCURRENCY;
    int64_t released = closed ? (c->concurrency < n ? c->concurrency : n) : n;
    if (c->session_turns > 0) { /* the first turns: one conversation per client, or started at the rate */
        if (!closed)
            released = (n + c->session_turns - 1) / c->session_turns;
        o->sess = calloc((size_t)(n > 0 ? n : 1), sizeof *o->sess);
        o->sess_of = malloc(sizeof *o->sess_of * (size_t)(n > 0 ? n : 1));
        if (!o->sess || !o->sess_of)
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld conversations", (long long)n);
        for (int64_t i = 0; i < released; i++)
            o->sess_of[i] = i;
        o->n_sess = released;
        if (!closed) { /* the first turns, drawn in time order: a heap as they are */
            o->pend = malloc(sizeof *o->pend * (size_t)(n > 0 ? n : 1));
            o->pend_at = malloc(sizeof *o->pend_at * (size_t)(n > 0 ? n : 1));
            o->seq = malloc(sizeof *o->seq * (size_t)(n > 0 ? n : 1));
            if (!o->pend || !o->pend_at || !o->seq)
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld conversations", (long long)n);
            for (int64_t i = 0; i < released; i++) {
                pend_put(o, i, i);
                o->seq[i] = i;
            }
            o->n_pend = released;
            for (int64_t i = released / 2 - 1; i >= 0; i--) /* a no-op for sorted arrivals; a heap either way */
                pend_down(o, i);
            pend_settle(o, npools, 0);
        }
    }
    hl_rng clients; /* think times and starts: a stream of their own, so the lengths stay those of the seed */
    hl_rng_seed(&clients, c->seed ^ 0x636c69656e7473ull);
    if (closed && (rc = start_clients(c, P0->st, P0->q, released, &clients, err)))
        return rc;
    for (int64_t i = 0; closed && npools > 1 && i < released; i++) { /* the decode records follow the order */
        rq *d = &o->pools[1].q[i];
        const rq *x = &P0->q[i];
        *d = (rq){.arrival = x->arrival, .input = x->input, .output = x->total_out, .total_out = x->total_out};
        d->prompt = d->prefilled = d->kv = x->input;
        d->gen = 1;
        d->first_tok = d->first_sched = -1;
    }
    double chunk = c->chunk > 0 ? (double)c->chunk : (double)c->token_budget;
    int64_t G_all = 0;
    double blocks_kv = o->pools[npools - 1].blocks_all; /* the KV reported: the decode pool's, or the only one */
    for (int p = 0; p < npools; p++)
        G_all += o->pools[p].G;
    int64_t next = 0, done = 0, preempt_total = 0, steps_cap = 0;
    double t_now = 0; /* start of the last step */
    /* the decode run-ahead; speculation: each verify pass accepts a random number of drafts. One
     * group only (G_all == 1): a group that ran ahead alone would take its KV samples and
     * kv_util_max from its own blocks over the pool's and past the other groups' clocks, and the
     * others' steps meanwhile would count its future blocks (kv_util_max and kv_series not those
     * of the run step by step, keep_steps; tests/lua/test_serve_output_modes.lua) */
    int fast =
        !c->keep_steps && c->block_tokens <= 65536 && npools == 1 && G_all == 1 && P0->window == 0 && P0->sp.gamma == 0;
    /* lines and bins kept for running counts up to 4,096 (~600 kB); a larger count is looked up each run-ahead */
    int64_t line_cap = c->max_seqs < 4096 ? c->max_seqs : 4096;
    hl_status rc0 = fast ? ahead_scratch_init(&o->ahead, c->block_tokens, line_cap, err) : HL_OK;
    if (rc0)
        return rc0;
    while (done < n) {
        if (hl_interrupt_pending()) /* Ctrl-C / SIGTERM: a long run must not trap the caller */
            return hl_fail(err, HL_EINTR, "serve interrupted at t = %g s with %lld of %lld requests done", t_now,
                           (long long)done, (long long)n);
        /* the group whose next step starts first, over the pools */
        int pb = -1;
        int64_t gb = -1;
        for (int p = 0; p < npools; p++)
            for (int64_t g = 0; g < o->pools[p].G; g++) {
                const group *gr = &o->pools[p].groups[g];
                if (gr->stalled || !group_busy(&o->pools[p], gr))
                    continue;
                if (gb < 0 || gr->t < o->pools[pb].groups[gb].t) {
                    pb = p;
                    gb = g;
                }
            }
        double t_grp = gb >= 0 ? o->pools[pb].groups[gb].t : INFINITY;
        double t_arr = next < released ? arrival_of(o, next) : INFINITY;
        int64_t fi = -1;
        int ends = 0;
        double t_flow = xl && xl->concurrent ? hl_flows_next(xl, &fi, &ends) : INFINITY;
        if (t_arr <= t_grp && t_arr <= t_flow && next < released) {
            int64_t rr = next; /* its record: its index, or a slot of compact records */
            if (P0->compact && (rr = arrive_compact(c, o, next, n)) == -2)
                return hl_fail(err, HL_EINVAL,
                               "field 'requests': %lld requests in flight at t = %g s would take more than the budget "
                               "of %.3g GB (HBDLAB_SERVE_MEMORY_BYTES) in records of %.0f B, beside %.3g GB for "
                               "the %lld requests' metrics; the load queues without bound: a lower rate or fewer "
                               "requests",
                               (long long)P0->cap + 1, t_arr, c->memory_budget / 1e9, compact_record_bytes(P0),
                               compact_metric_bytes(n - (c->warmup < n ? c->warmup : 0)) / 1e9, (long long)n);
            if (P0->compact && rr < 0)
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for the requests in flight at t = %g s", t_arr);
            if (P0->pcr && c->arrival != HL_ARRIVAL_TRACE) { /* a closed loop or sessions moved requests */
                P0->pcr[next].stream = o->sess ? (1ull << 62) | (uint64_t)o->sess_of[next] : (uint64_t)next + 1;
                P0->pcr[next].shared = hl_fmin((double)c->shared_prefix, P0->q[next].input);
            }
            if (P0->pcr && c->router == HL_ROUTER_KV_AWARE &&
                hl_spc_prepare(&P0->pcr[next], P0->q[next].input, P0->q[next].output + P0->units[0].dq - 1,
                               c->block_tokens))
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for a request's prefix block hashes");
            int64_t u = pick_unit(P0, rr);
            rec->little += enqueue(P0, u, rr, t_arr, 0); /* in the system until its first step */
            if (o->pend) { /* slot next leaves the heap (it is its least); the next least takes slot next + 1 */
                int64_t last = o->pend[--o->n_pend];
                if (o->n_pend > 0) {
                    pend_put(o, 0, last);
                    pend_down(o, 0);
                }
                pend_settle(o, npools, next + 1);
            }
            next++;
            continue;
        }
        if (fi >= 0 && t_flow <= t_grp) { /* a transfer leaves its latency or ends */
            hl_flows_advance(xl, t_flow);
            if (!ends)
                continue;           /* it just left its latency: the rates change from now */
            flow f = xl->flows[fi]; /* its last byte moved at t_flow (whatever rounding left) */
            xl->flows[fi] = xl->flows[--xl->n_flows];
            pool *D = &o->pools[1];
            rq *xp = &P0->q[f.r], *xd = &D->q[f.r];
            sched *sp = &P0->units[f.src];
            hl_sched_release(sp, f.r); /* the prefill unit lets the KV go */
            group *gs = &P0->groups[P0->group_of[f.src]];
            if (gs->stalled) {
                gs->stalled = 0;
                gs->stall_s += t_flow - gs->stall_from;
                gs->t = hl_fmax(gs->t, t_flow);
                rec->little += group_in_system(P0, gs) * (t_flow - gs->stall_from); /* its queue, stalled */
            }
            group *gd = &D->groups[D->group_of[f.dst]];
            if (gd->stalled) { /* a decode group waiting for this KV (its recomputes wait for room) */
                gd->stalled = 0;
                gd->stall_s += t_flow - gd->stall_from;
                gd->t = hl_fmax(gd->t, t_flow);
                rec->little += group_in_system(D, gd) * (t_flow - gd->stall_from);
            }
            o->xfer[f.r] = t_flow - f.start;
            rec->little += t_flow - xp->first_tok; /* waiting for room and moving, between the pools */
            xd->first_tok = xd->last_tok = xp->first_tok;
            xd->arrival = t_flow;
            rec->little += enqueue(D, f.dst, f.r, t_flow, 1); /* its blocks are held: ahead of recomputes */
            continue;
        }
        if (gb < 0) /* nothing runs, arrives or moves (cannot happen while done < n) */
            return hl_fail(err, HL_EINVAL, "serve: %lld of %lld requests done and none pending", (long long)done,
                           (long long)n);
        pool *P = &o->pools[pb];
        group *gr = &P->groups[gb];
        t_now = gr->t;
        double t = gr->t, dt = 0, routed = 0, step_tok = 0, in_system = 0, running = 0, waiting = 0;
        int64_t planned = 0, decodes = 0, n_chunks = 0, first_chunk = -1, preempted = 0;
        double verifies = 0, verify_tok = 0, drafted = 0; /* speculation: verify passes, their tokens, drafts */
        for (int64_t k = 0; k < gr->count; k++) {
            sched *s = &P->units[gr->first + k];
            in_system += (double)(s->n_run + s->w_len);
            s->pc_step_saved = s->pc_step_loaded = 0;
            planned += hl_sched_plan(s, t, chunk, P->window, &P->its[k], &P->toks[k], &P->firsts[k]);
            routed += P->toks[k];
            if (s->pc_oom)
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for a request's prefix block hashes");
        }
        if (planned == 0) {
            int held = 0, inbound = 0;
            for (int64_t k = 0; k < gr->count && xl && xl->concurrent; k++)
                held |= P->units[gr->first + k].blocks_free < P->units[gr->first + k].blocks_total;
            for (int64_t i = 0; P->kind == POOL_DECODE && held && i < xl->n_flows; i++)
                inbound |= P->group_of[xl->flows[i].dst] == gb;
            /* back-pressure: a prefill group's KV waits for decode room; a decode group whose
             * preempted requests do not fit beside the room it holds for transfers in flight
             * waits for them to land */
            if ((P->kind == POOL_PREFILL && held) || inbound) {
                gr->stalled = 1;
                gr->stall_from = t;
                continue;
            }
            return hl_fail(err, HL_EINVAL,
                           "serve: no request could be scheduled at t = %g s (%g in the system); the KV cache or the "
                           "budget of a data-parallel rank is too small",
                           t, in_system);
        }
        /* lock-step: every MoE layer waits for the slowest rank; a rank with nothing
         * planned still runs its (empty) pass, never the slowest one */
        double reload = 0; /* KV offload: host blocks of this step's admissions, moved at the link's rate */
        for (int64_t k = 0; k < gr->count; k++) {
            const sched *s = &P->units[gr->first + k];
            if (s->n_plan == 0 && !(s->ev_planned > 0))
                continue;
            double dk;
            P->its[k].routed = gr->count > 1 ? routed : 0;
            if ((rc = hl_stepper_time(P->st, &P->its[k], &dk, err)))
                return rc;
            double load = s->pc_step_loaded > 0 ? s->pc_step_loaded * P->block_bytes / P->offload_bw : 0;
            reload = hl_fmax(reload, load);
            dt = hl_fmax(dt, c->offload_overlap ? hl_fmax(dk, load) : dk + load);
            drafted += P->units[gr->first + k].spec_seqs;
        }
        rec->reload += reload;
        /* speculation: the gamma draft passes before the verify pass, in lock-step too (the
         * drafter's MoE layers wait for the slowest rank; one token per sequence each) */
        double draft_dt = 0;
        for (int64_t k = 0; k < gr->count && drafted > 0; k++) {
            const sched *s = &P->units[gr->first + k];
            if (s->spec_seqs == 0)
                continue;
            double dk;
            if ((rc = draft_time(&P->sp, P->draft, P->draft2, s->spec_seqs, s->spec_ctx / s->spec_seqs,
                                 gr->count > 1 ? drafted : 0, &dk, err)))
                return rc;
            draft_dt = hl_fmax(draft_dt, dk);
        }
        dt += draft_dt;
        /* a draft model prefills the step's prompt chunks too (its own KV of them), after the
         * target's pass, in lock-step over the group (docs/MODEL.md 6.2, 12) */
        double draft_pre = 0, dtok = 0;
        for (int64_t k = 0; k < gr->count && P->dchunks; k++)
            for (int32_t i = 0; i < P->units[gr->first + k].n_dchunks; i++)
                dtok += P->units[gr->first + k].dchunks[i].tokens;
        for (int64_t k = 0; k < gr->count && dtok > 0; k++) {
            const sched *s = &P->units[gr->first + k];
            if (s->n_dchunks == 0)
                continue;
            hl_iter pit = {0, 0, 0, s->n_dchunks, s->dchunks, s->d_rows, 0, gr->count > 1 ? dtok : 0};
            double dk;
            if ((rc = hl_stepper_time(P->draft, &pit, &dk, err)))
                return rc;
            draft_pre = hl_fmax(draft_pre, dk - P->sp.overhead_s);
        }
        dt += draft_pre;
        double t_end = t + dt, emitted = 0;
        finish_ctx fc = {c, o, npools, closed, P, xl, t_end, next, n, &released, &done, &clients, err};
        for (int64_t k = 0; k < gr->count; k++) {
            int64_t u = gr->first + k;
            sched *s = &P->units[u];
            double same = 0;
            if (s->ev_planned > 0) { /* the decode set: one token each, the finishers written back */
                emitted += s->ev_planned;
                s->out_tok -= s->ev_planned;
                same += s->ev_planned; /* every member emitted at t (plan_set) */
                hl_dset_emit(s, t_end);
            } else {
                s->n_fin = s->fin_done = 0;
            }
            for (int64_t j = 0; j < s->n_plan; j++) {
                const plan *pl = &s->plan[j];
                rq *x = &s->q[pl->r];
                while (s->fin_done < s->n_fin && s->q[s->fin[s->fin_done]].seq < x->seq) /* in admission order */
                    if ((rc = finish_request(&fc, s, u, s->fin[s->fin_done++])))
                        return rc;
                int emits = 1;
                double burst = 1; /* tokens this entry emits: a verify pass keeps the accepted drafts + 1 */
                if (pl->decode && s->dq > 1) {
                    burst = hl_fmin(accepted(&P->sp, &clients) + 1, x->output - x->gen);
                    x->kv += burst;
                } else if (pl->decode) {
                    x->kv += 1;
                } else {
                    x->prefilled += pl->tokens;
                    x->kv = x->prefilled;
                    s->out_tok -= pl->tokens;
                    emits = x->prefilled >= x->prompt;
                }
                if (s->pc) /* blocks filled by this step are named: later prompts can hit them */
                    hl_spc_commit(s->pc, &s->pcr[pl->r], x->kv, c->block_tokens);
                if (!emits)
                    continue;
                emitted += burst;
                s->out_tok -= burst;
                x->gen += burst;
                if (x->first_tok < 0)
                    x->first_tok = t_end;
                else if (x->last_tok == t)
                    same++;
                else
                    hl_itl_add(o->itl, t_end - x->last_tok, 1);
                if (burst > 1) /* the burst's other tokens come with the first: gaps of 0 */
                    hl_itl_add(o->itl, 0, burst - 1);
                x->last_tok = t_end;
                if (x->gen < x->output)
                    continue;
                if ((rc = finish_request(&fc, s, u, pl->r)))
                    return rc;
            }
            while (s->fin_done < s->n_fin) /* the set's other finishers, after every planned request */
                if ((rc = finish_request(&fc, s, u, s->fin[s->fin_done++])))
                    return rc;
            hl_itl_add(o->itl, dt, same);
            decodes += (int64_t)P->its[k].decode_seqs;
            n_chunks += P->its[k].n_chunks - (int64_t)s->spec_seqs; /* verify passes are decodes */
            verifies += s->spec_seqs;
            verify_tok += s->spec_seqs * s->dq;
            if (first_chunk < 0)
                first_chunk = P->firsts[k];
            step_tok += P->toks[k];
            preempted += s->preempted;
            running += (double)s->n_run;
            waiting += (double)s->w_len;
        }
        double used = 0, used_all = 0;
        for (int64_t k = 0; k < gr->count; k++)
            used += P->units[gr->first + k].blocks_total - P->units[gr->first + k].blocks_free;
        const pool *K = &o->pools[npools - 1]; /* the pool whose KV is reported */
        for (int64_t u = 0; u < K->U; u++)
            used_all += K->units[u].blocks_total - K->units[u].blocks_free;
        double part = P == K ? used / blocks_kv : 0, cached = 0, cached_all = 0, saved = 0;
        for (int64_t k = 0; K->pcr && k < gr->count; k++) {
            cached += (double)hl_pcache_cached_blocks(P->units[gr->first + k].pc);
            saved += P->units[gr->first + k].pc_step_saved;
        }
        for (int64_t u = 0; K->pcr && u < K->U; u++)
            cached_all += (double)hl_pcache_cached_blocks(K->units[u].pc);
        rec->kv_cached += (P == K ? cached / blocks_kv : 0) * dt;
        rec->kv_cached_max = hl_fmax(rec->kv_cached_max, cached_all / blocks_kv);
        if ((rc = record(rec, t, dt, in_system, running, waiting, part, used_all / blocks_kv, step_tok,
                         step_tok - (double)decodes - verify_tok, emitted, 1.0 / (double)G_all, err)))
            return rc;
        preempt_total += preempted;
        if (c->keep_steps && (npools > 1 || P->kind != POOL_PREFILL)) {
            if (r->n_steps_log >= HL_SERVE_MAX_LOG_STEPS)
                return hl_fail(err, HL_EINVAL,
                               "field 'keep_steps': the step log passed %lld iterations (the most "
                               "kept); keep_steps is for short runs: fewer requests or shorter outputs",
                               (long long)HL_SERVE_MAX_LOG_STEPS);
            if (!hl_sched_grow((void **)&r->steps_log, r->n_steps_log, &steps_cap, sizeof *r->steps_log))
                return hl_fail(err, HL_ENOMEM, "serve: out of memory for the step log");
            r->steps_log[r->n_steps_log++] = (hl_serve_step){t,
                                                             dt,
                                                             (int32_t)(decodes + (int64_t)verifies),
                                                             (int32_t)n_chunks,
                                                             step_tok - (double)decodes - verify_tok,
                                                             (int32_t)(first_chunk + 1),
                                                             (int32_t)preempted,
                                                             used,
                                                             P->kind,
                                                             (int32_t)gb,
                                                             gr->stall_s,
                                                             cached,
                                                             saved,
                                                             reload};
            gr->stall_s = 0;
        }
        gr->t = t_end;
        for (int64_t k = 0; k < gr->count; k++) {
            sched *s = &P->units[gr->first + k];
            /* every running request emitted at t_end (it decoded, or its prompt ended), none preempted: all
             * decode in the next step, where the run-ahead can start (no speculation with it: its chunks
             * are prompt chunks; a step whose chunks all end their prompts samples a row for each) */
            const hl_iter *itk = &P->its[k];
            int all_emitted = (double)s->n_plan + s->ev_planned == (double)s->n_run && s->preempted == 0 &&
                              itk->logits_rows == itk->decode_seqs + (double)itk->n_chunks;
            if (s->pc && s->blocks_free != (double)hl_pcache_free_blocks(s->pc)) /* the two counts agree */
                return hl_fail(err, HL_EINVAL, "serve: internal: %g free KV blocks counted, %lld in the prefix cache",
                               s->blocks_free, (long long)hl_pcache_free_blocks(s->pc));
            int64_t m = s->n_run; /* drop finished requests, keep admission order (the reference always looks) */
            if (s->ev_on) {       /* the set's: finished requests keep their slots until wanted */
                hl_dset_after_step(s);
                m = s->n_run;
            } else if (s->finished > 0 || c->sched_reference) {
                m = 0;
                for (int64_t j = 0; j < s->n_run; j++)
                    if (!s->q[s->run[j]].done)
                        s->run[m++] = s->run[j];
                    else
                        hl_sched_drop(s, s->run[j]);
                s->n_run = m;
            }
            if (!s->ev_on)
                hl_dset_try_on(s, t_end);
            /* decode run-ahead of a unit alone: up to the next arrival (the router's next look), then
             * the step that ends it where that is the set's alone (a request finishes), and on */
            int after_prompt = itk->n_chunks > 0, more = fast && gr->count == 1 && all_emitted && m > 0;
            /* the run-ahead takes set_step's finishing steps itself where the finishers release no
             * request (an open loop) */
            const finish_ctx *fin =
                !closed && !o->sess && P->kind != POOL_PREFILL && !(xl && xl->concurrent) ? &fc : NULL;
            while (more && s->n_run > 0) {
                double t_a = next < released ? arrival_of(o, next) : INFINITY, tu = gr->t;
                int again = 0; /* its last step was a finishing one: the run-ahead comes next */
                if ((rc = run_ahead(s, P->st, o->itl, t_a, &tu, &o->ahead, rec, 1.0 / (double)G_all, blocks_kv,
                                    after_prompt, fin, gr->first + k, &again, err)))
                    return rc;
                gr->t = tu;
                after_prompt = 0;
                if (!again &&
                    (rc = set_step(&fc, s, gr->first + k, gr, t_a, rec, blocks_kv, 1.0 / (double)G_all, &more)))
                    return rc;
            }
        }
        if (xl && xl->concurrent &&
            (rc = hl_flows_admit(xl, o->pools[1].units, o->pools[1].U, o->pools[0].dp, o->pools[1].dp, t_end, err)))
            return rc;
    }
    for (int p = 0; p < npools; p++) /* the records true again for the summary */
        for (int64_t u = 0; u < o->pools[p].U; u++)
            hl_dset_off(&o->pools[p].units[u]);
    *preempts += preempt_total;
    if (__builtin_expect(rec->probe != NULL, 0)) /* the integrals as the loop left them (the run-ahead sums its own) */
        probe_record(rec, (const double[HL_SERVE_PROBE_N]){
                              rec->busy, rec->busy_prefill, rec->little, rec->run, rec->wait, rec->kv, rec->kv_max,
                              rec->tokens, rec->sat_tokens, rec->sat_time, rec->t_end, HL_SERVE_PATH_END});
    return HL_OK;
}

static void summarise_run(const recorder *rec, double transfer_sum, const hl_serve_cfg *c, hl_serve_result *r);

/* Sums of a pool's run: what the result reports over both pools. */
static hl_status summarise(const hl_serve_cfg *c, const rq *qp, const rq *qd, const int64_t *dmap, int64_t n,
                           const double *transfer, hl_itl_hist *itl, const recorder *rec, double transfer_sum,
                           hl_serve_result *r, hl_err *err)
{
    hl_serve_req *out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    if (!out)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const rq *x = &qp[i];
        const rq *d = qd && dmap[i] >= 0 ? &qd[dmap[i]] : NULL;
        out[i] = (hl_serve_req){x->arrival,
                                x->input,
                                x->output,
                                x->first_tok,
                                d ? d->finish : x->finish,
                                x->first_sched - x->arrival,
                                0,
                                0,
                                0,
                                x->preempt + (d ? d->preempt : 0),
                                0,
                                transfer ? transfer[i] : 0};
    }
    int64_t w = c->warmup < n ? c->warmup : 0; /* checked: warmup < requests */
    hl_status rc = hl_serve_summarise(c, out + w, n - w, itl, r, err);
    if (rc || !c->keep_requests)
        free(out);
    else
        r->reqs = out;
    if (rc)
        return rc;
    summarise_run(rec, transfer_sum, c, r);
    return HL_OK;
}

/* The run's integrals into r (after its request statistics: duration_s). */
static void summarise_run(const recorder *rec, double transfer_sum, const hl_serve_cfg *c, hl_serve_result *r)
{
    double T = r->duration_s > 0 ? r->duration_s : 1;
    r->steps = rec->steps;
    r->mean_in_system = (rec->little + transfer_sum) / T;
    r->mean_running = rec->run / T;
    r->mean_waiting = rec->wait / T;
    r->mean_step_tokens = rec->steps ? rec->tokens / (double)rec->steps : 0;
    r->kv_util_mean = rec->kv / T;
    r->kv_util_max = rec->kv_max;
    r->kv_block_tokens = (double)c->block_tokens;
    r->saturated_output_tps = rec->sat_time > 0 ? rec->sat_tokens / rec->sat_time : 0;
}

/* Seconds to move one request's KV cache (input tokens) from a prefill GPU to
 * its decode peer: a Send/Recv of the prefill GPU's share (every GPU of the
 * instance sends its shard at once), inside one HBD or across the scale-out
 * network (docs/MODEL.md section 12). */
static hl_status kv_transfer_time(const hl_serve_cfg *c, double kv_token_bytes, double tokens, double *t, hl_err *err)
{
    hl_coll_in in = {
        HL_SENDRECV, HL_ALGO_AUTO, kv_token_bytes * tokens, 2, c->kv_link == HL_KV_LINK_SCALEUP ? 2 : 1, 0};
    hl_coll_out o;
    /* A scale-out transfer leaves the prefill pool's HBD: when the pools have
     * clusters of their own, the prefill cluster may be one HBD, so it is
     * timed on that cluster widened to two HBDs (the same links). */
    hl_cluster cl = c->job.cluster;
    if (c->kv_link != HL_KV_LINK_SCALEUP && cl.gpus < 2 * cl.hbd)
        cl.gpus = 2 * cl.hbd;
    hl_status rc = hl_coll_time(&cl, &in, &o, err);
    if (rc)
        hl_err_prefix(err, "KV transfer");
    *t = o.time_s;
    return rc;
}

/* Order of requests reaching the decode pool: prefill end + transfer. qsort
 * has no context argument; the run sets sort_ctx first (one run per thread at
 * a time: _Thread_local). */
typedef struct dec_order {
    const rq *q;
    const double *xfer;
} dec_order;
static _Thread_local const dec_order *sort_ctx;

static int by_decode_arrival(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    double x = sort_ctx->q[i].first_tok + sort_ctx->xfer[i], y = sort_ctx->q[j].first_tok + sort_ctx->xfer[j];
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

static run_tokens count_tokens(const hl_trace_req *q, int64_t n)
{
    run_tokens k = {0, (double)n, 0};
    for (int64_t i = 0; i < n; i++) {
        k.input += q[i].input;
        k.decode += q[i].output - 1;
    }
    return k;
}

/* Cost and energy of the run at its served rate (docs/MODEL.md 12): each pool's GPUs are
 * provisioned for the whole run, span_s; hl_cost_compute (cost.h, the cost model of
 * hl.simulate) charges a pool's time to prefill and decode in the shares of its busy time
 * (a step split by its tokens: prefill tokens against decodes); a disaggregated prefill pool
 * is all prefill, its decode pool all decode. Unknown prices and powers stay NaN. */
static void serve_cost(const hl_job *pj, int64_t gp, const recorder *rp, const hl_job *dj, int64_t gd,
                       const recorder *rd, double span_s, run_tokens tok, hl_serve_result *r)
{
    hl_cost cp, cd = {0};
    double fp = rp->busy > 0 ? rp->busy_prefill / rp->busy : 1;
    hl_cost_phase pre = {span_s * fp, rp->busy * fp, tok.input};
    hl_cost_phase dec = {span_s * (1 - fp), rp->busy * (1 - fp), dj ? 0 : tok.decode};
    hl_cost_compute(&pj->cluster, gp, dj ? 0 : tok.first, &pre, &dec, &cp);
    double usd = cp.prefill_usd + cp.decode_usd, usd_in = cp.prefill_usd, usd_out = cp.decode_usd;
    double j_in = cp.prefill_j, j_out = cp.decode_j, peak = cp.peak_power_w, per_hour = cp.usd_per_gpu_hour * gp;
    if (dj) { /* the decode pool: all of it decode */
        hl_cost_phase none = {0, 0, 0}, d = {span_s, rd->busy, tok.decode};
        hl_cost_compute(&dj->cluster, gd, tok.first, &none, &d, &cd);
        usd_in = usd; /* the prefill pool serves the prompts */
        usd_out = cd.decode_usd;
        usd += cd.decode_usd;
        j_in = cp.prefill_j + cp.decode_j;
        j_out = cd.decode_j;
        peak += cd.peak_power_w;
        per_hour += cd.usd_per_gpu_hour * gd;
    }
    double generated = tok.first + tok.decode;
    r->usd_per_hour = per_hour;
    r->usd_per_mtok_in = tok.input > 0 ? usd_in / tok.input * 1e6 : NAN;
    r->usd_per_mtok_out = tok.decode > 0 ? usd_out / tok.decode * 1e6 : NAN;
    r->usd_per_mtok = generated > 0 ? usd / generated * 1e6 : NAN;
    r->joules_per_token = generated > 0 ? (j_in + j_out) / generated : NAN;
    r->joules_per_token_in = tok.input > 0 ? j_in / tok.input : NAN;
    r->joules_per_token_out = tok.decode > 0 ? j_out / tok.decode : NAN;
    r->power_w = span_s > 0 ? (j_in + j_out) / span_s : NAN;
    r->peak_power_w = peak;
    r->tokens_per_mw = peak > 0 ? r->output_tps / (peak / 1e6) : NAN;
}

/* Concurrent disaggregation: one clock over the prefill and the decode pool,
 * KV transfers as flows sharing the links they cross, back-pressure from the
 * decode pool's KV room (docs/MODEL.md 12). */
static hl_status run_concurrent(const hl_serve_cfg *c, hl_serve_result *r, owned *o, int64_t n, recorder *rec,
                                hl_err *err)
{
    hl_status rc;
    xlink xl = {0};
    xl.concurrent = 1;
    if ((rc = pool_init(&o->pools[0], POOL_PREFILL, c, &c->job, 1, o->reqs, n, 0, err)) ||
        (rc = pool_init(&o->pools[1], POOL_DECODE, c, &c->decode_job, 1, o->reqs, n, 1, err)))
        return rc;
    /* the link of one transfer: time(b) = lat + b / bw per prefill GPU (section 5's Send/Recv) */
    xl.kvtok = hl_stepper_kv_token_bytes(o->pools[0].st);
    double t1, t2, b1 = 1e6, b2 = 2e6;
    if ((rc = kv_transfer_time(c, 1, b1, &t1, err)) || (rc = kv_transfer_time(c, 1, b2, &t2, err)))
        return rc;
    xl.bw = t2 > t1 ? (b2 - b1) / (t2 - t1) : INFINITY;
    xl.lat = hl_fmax(0, t1 - b1 / xl.bw);
    o->xfer = calloc((size_t)(n > 0 ? n : 1), sizeof *o->xfer);
    xl.hand_src = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!o->xfer || !xl.hand_src) {
        free(xl.hand_src);
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
    }
    int64_t preempts = 0;
    rc = serve_loop(c, o, 2, &xl, n, rec, r, &preempts, err);
    free(xl.hand_src);
    hl_flows_free(&xl);
    if (rc)
        return rc;
    pool *P = &o->pools[0], *D = &o->pools[1];
    int64_t *dmap = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    if (!dmap)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
    double xsum = 0;
    for (int64_t i = 0; i < n; i++) {
        P->q[i].output = P->q[i].total_out;
        dmap[i] = P->q[i].total_out > 1 ? i : -1;
        xsum += o->xfer[i];
    }
    r->gpus = hl_stepper_gpus(P->st) + hl_stepper_gpus(D->st);
    r->kv_blocks_total = D->blocks_all;
    r->preemptions = preempts;
    rc = summarise(c, P->q, D->q, dmap, n, o->xfer, o->itl, rec, 0, r, err);
    r->kv_transfer_s = n > 0 ? xsum / (double)n : 0;
    if (!rc) /* one recorder over both pools: each pool charged the run's busy time (an upper bound) */
        serve_cost(&c->job, hl_stepper_gpus(P->st), rec, &c->decode_job, hl_stepper_gpus(D->st), rec, rec->t_end,
                   count_tokens(o->reqs, n), r);
    free(dmap);
    return rc;
}

static hl_status run(const hl_serve_cfg *c0, hl_serve_result *r, owned *o, hl_err *err)
{
    hl_serve_cfg cc;
    hl_status rc = hl_serve_resolve(c0, &cc, err);
    if (rc)
        return rc;
    const hl_serve_cfg *c = &cc;
    if (c->mode != HL_SERVE_SIMULATE)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'mode': hl_serve_run simulates; the steady state is "
                       "hl_serve_steady_run");
    if (cc.disagg) {
        /* Pools described by the same cluster share it (unless kv_link =
         * scaleout says they are apart): they must fit in it side by side.
         * kv_link auto: one HBD holds both pools, or not. */
        const hl_cluster *a = &cc.job.cluster, *b = &cc.decode_job.cluster;
        int64_t gp = cc.job.gpus > 0 ? cc.job.gpus : a->gpus,
                gd = cc.decode_job.gpus > 0 ? cc.decode_job.gpus : b->gpus;
        int same = a->gpus == b->gpus && a->hbd == b->hbd && strcmp(a->gpu.name, b->gpu.name) == 0;
        if (same && cc.kv_link != HL_KV_LINK_SCALEOUT && gp + gd > a->gpus)
            return hl_fail(err, HL_EINVAL,
                           "field 'disagg': the prefill pool (%lld GPUs) and the decode pool (%lld GPUs) share one "
                           "cluster of %lld GPUs and need %lld (give each pool parallel.gpus, where 0 or none is the "
                           "whole cluster, or say kv_link = \"scaleout\" for pools on separate clusters)",
                           (long long)gp, (long long)gd, (long long)a->gpus, (long long)(gp + gd));
        if (cc.kv_link == HL_KV_LINK_AUTO)
            cc.kv_link = same && gp + gd <= a->hbd ? HL_KV_LINK_SCALEUP : HL_KV_LINK_SCALEOUT;
    }
    r->kv_link = cc.disagg ? cc.kv_link : 0;
    int64_t n = c->requests;
    int compact = compact_wanted(c);
    if (!compact && ((rc = check_budget(c, hl_serve_memory_bytes(c), 0, err)) ||
                     (rc = hl_serve_make_requests(c, &o->reqs, &n, err))))
        return rc;
    recorder rec = recorder_for(r, c->max_samples > 1 ? c->max_samples : 2);
    int64_t preempts = 0;
    if (!(o->itl = calloc(1, sizeof *o->itl)))
        return hl_fail(err, HL_ENOMEM, "serve: out of memory");
    if (!c->disagg) {
        if (compact && (rc = pool_init(&o->pools[0], POOL_ONE, c, &c->job, c->replicas, NULL, n, 0, err)))
            return rc;
        if (compact && !o->pools[0].q) { /* a request might be refused: one record per request */
            pool_free(&o->pools[0]);
            compact = 0;
            if ((rc = check_budget(c, hl_serve_memory_bytes(c), 0, err)) ||
                (rc = hl_serve_make_requests(c, &o->reqs, &n, err)))
                return rc;
        }
        if (compact) { /* the budget: the metrics of every counted request and the records in flight */
            pool *p0 = &o->pools[0];
            double per = compact_record_bytes(p0), metrics = compact_metric_bytes(n - (c->warmup < n ? c->warmup : 0));
            if ((rc = check_budget(c, metrics + per * (double)p0->cap, 1, err)))
                return rc;
            if (c->memory_budget > 0)
                p0->max_records = (int64_t)hl_fmin(floor((c->memory_budget - metrics) / per), 0x1p62);
            compact_runs++;
            hl_serve_gen_init(&o->gen, c);
            hl_serve_gen_next(&o->gen, &o->peek);
            o->tok = (run_tokens){0, (double)n, 0};
            int64_t w = c->warmup < n ? c->warmup : 0;
            if ((rc = hl_serve_acc_init(&o->acc, n - w, err)))
                return rc;
        }
        if ((!compact && (rc = pool_init(&o->pools[0], POOL_ONE, c, &c->job, c->replicas, o->reqs, n, 0, err))) ||
            (o->pools[0].pcr && ((rc = hl_serve_make_content(c, n, &o->content, err)) ||
                                 (rc = hl_spc_content(c, o->reqs, o->content, n, o->pools[0].pcr, err)))) ||
            (rc = serve_loop(c, o, 1, NULL, n, &rec, r, &preempts, err)))
            return rc;
        r->gpus = hl_stepper_gpus(o->pools[0].st) * c->replicas;
        r->kv_blocks_total = o->pools[0].blocks_all;
        r->preemptions = preempts;
        if (compact && !(rc = hl_serve_summarise_acc(c, &o->acc, o->itl, r, err)))
            summarise_run(&rec, 0, c, r);
        if (!compact)
            rc = summarise(c, o->pools[0].q, NULL, NULL, n, NULL, o->itl, &rec, 0, r, err);
        run_tokens tok = compact ? o->tok : count_tokens(o->reqs, n);
        for (int64_t i = 0; o->sess && i < n; i++) /* a turn's prompt holds its conversation's history */
            tok.input += o->pools[0].q[i].input;
        if (o->sess)
            tok.input -= count_tokens(o->reqs, n).input;
        if (!rc)
            serve_cost(&c->job, r->gpus, &rec, NULL, 0, NULL, rec.t_end, tok, r);
        if (!rc && o->pools[0].pcr) { /* prefix caching over every scheduler (warmup included) */
            double saved = 0, admitted = 0;
            for (int64_t u = 0; u < o->pools[0].U; u++) {
                saved += o->pools[0].units[u].pc_saved;
                admitted += o->pools[0].units[u].pc_admitted;
            }
            r->prefill_tokens_saved = saved;
            r->prefix_hit_rate = admitted > 0 ? saved / admitted : 0;
            r->kv_cached_mean = r->duration_s > 0 ? rec.kv_cached / r->duration_s : 0;
            r->kv_cached_max = rec.kv_cached_max;
            if (c->offload_bytes > 0) {
                double host = 0, off = 0;
                for (int64_t u = 0; u < o->pools[0].U; u++) {
                    host += o->pools[0].units[u].pc_host_hit;
                    off += (double)hl_pcache_stats(o->pools[0].units[u].pc).offloaded;
                }
                r->host_hit_tokens = host;
                r->offloaded_blocks = off;
                r->reload_s = rec.reload;
            }
        }
        return rc;
    }
    if (c->disagg_clock == HL_DISAGG_CONCURRENT)
        return run_concurrent(c, r, o, n, &rec, err);
    /* sequential: the prefill pool serves every prompt (one token each), then each request's KV
     * moves to the decode pool, which receives it as an arrival that decodes from its first token */
    hl_trace_req *pre = malloc(sizeof *pre * (size_t)n), *dec = malloc(sizeof *dec * (size_t)n);
    double *xfer = calloc((size_t)n, sizeof *xfer);
    int64_t *dmap = malloc(sizeof *dmap * (size_t)n), *xmap = malloc(sizeof *xmap * (size_t)n);
    dec_order dec_ctx;
    owned od = {0};
    hl_serve_result scratch = {0};
    recorder rec_p = recorder_for(&scratch, 2); /* the prefill pool's KV samples are not reported */
    double xfer_sum = 0;
    int64_t nd = 0;
    if (!pre || !dec || !xfer || !dmap || !xmap || !(od.itl = calloc(1, sizeof *od.itl))) {
        rc = hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)n);
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        pre[i] = o->reqs[i];
        pre[i].output = 1;
    }
    if ((rc = pool_init(&o->pools[0], POOL_ONE, c, &c->job, 1, pre, n, 0, err)) ||
        (rc = serve_loop(c, o, 1, NULL, n, &rec_p, &scratch, &preempts, err)))
        goto out;
    pool *P = &o->pools[0];
    r->gpus = hl_stepper_gpus(P->st);
    int64_t gpus_prefill = r->gpus;
    double kvtok = hl_stepper_kv_token_bytes(P->st);
    for (int64_t i = 0; i < n; i++) {
        dmap[i] = -1;
        if ((rc = kv_transfer_time(c, kvtok, o->reqs[i].input, &xfer[i], err)))
            goto out;
        xfer_sum += xfer[i];
        if (o->reqs[i].output > 1) /* dmap holds the request index until sorted */
            dmap[nd++] = i;
    }
    /* the decode pool takes arrivals in time order: prompts finish out of order */
    dec_ctx = (dec_order){P->q, xfer};
    sort_ctx = &dec_ctx;
    qsort(dmap, (size_t)nd, sizeof *dmap, by_decode_arrival);
    for (int64_t k = 0; k < nd; k++) {
        int64_t i = dmap[k];
        dec[k] = (hl_trace_req){
            .arrival_s = P->q[i].first_tok + xfer[i], .input = o->reqs[i].input, .output = o->reqs[i].output};
    }
    for (int64_t i = 0; i < n; i++) /* xmap: request -> its index in the decode pool, -1 if none */
        xmap[i] = -1;
    for (int64_t k = 0; k < nd; k++)
        xmap[dmap[k]] = k;
    if (nd > 0) {
        od.reqs = dec;
        dec = NULL; /* od owns it */
        if ((rc = pool_init(&od.pools[0], POOL_ONE, c, &c->decode_job, 1, od.reqs, nd, 1, err)))
            goto out;
        for (int64_t k = 0; k < nd; k++) { /* prefilled elsewhere: the first token is out */
            rq *x = &od.pools[0].q[k];
            x->first_tok = x->last_tok = P->q[dmap[k]].first_tok;
        }
        if ((rc = serve_loop(c, &od, 1, NULL, nd, &rec, r, &preempts, err)))
            goto out;
        r->gpus += hl_stepper_gpus(od.pools[0].st);
    }
    rec.little += rec_p.little;
    rec.run += rec_p.run;
    rec.wait += rec_p.wait;
    rec.steps += rec_p.steps;
    rec.tokens += rec_p.tokens;
    for (int64_t i = 0; i < n; i++) /* the prefill pool ran every request with one output token */
        P->q[i].output = o->reqs[i].output;
    r->kv_blocks_total = nd > 0 ? od.pools[0].blocks_all : 0;
    r->preemptions = preempts;
    double busy_d = rec.busy, end_d = rec.t_end;
    rc = summarise(c, P->q, nd > 0 ? od.pools[0].q : NULL, xmap, n, xfer, nd > 0 ? od.itl : o->itl, &rec, xfer_sum, r,
                   err);
    r->kv_transfer_s = n > 0 ? xfer_sum / (double)n : 0;
    if (!rc) {
        recorder dpool = {0};
        dpool.busy = busy_d;
        serve_cost(&c->job, gpus_prefill, &rec_p, &c->decode_job, r->gpus - gpus_prefill, &dpool,
                   hl_fmax(end_d, rec_p.t_end), count_tokens(o->reqs, n), r);
    }
out:
    free(pre);
    free(dec);
    free(xfer);
    free(dmap);
    free(xmap);
    owned_free(&od);
    hl_serve_result_free(&scratch);
    return rc;
}

hl_status hl_serve_run(const hl_serve_cfg *cfg, hl_serve_result *out, hl_err *err)
{
    if (!cfg || !out)
        return hl_fail(err, HL_EINVAL, "hl_serve_run: the %s is NULL", !cfg ? "configuration" : "result");
    memset(out, 0, sizeof *out);
    out->kv_transfer_s = NAN; /* set when disaggregated */
    out->usd_per_hour = out->usd_per_mtok_in = out->usd_per_mtok_out = out->usd_per_mtok = NAN;
    out->joules_per_token = out->joules_per_token_in = out->joules_per_token_out = NAN;
    out->power_w = out->peak_power_w = out->tokens_per_mw = NAN;
    out->prefix_hit_rate = out->prefill_tokens_saved = out->kv_cached_mean = out->kv_cached_max = NAN;
    out->host_hit_tokens = out->reload_s = out->offloaded_blocks = NAN;
    owned o = {0};
    hl_status rc = run(cfg, out, &o, err);
    owned_free(&o);
    if (rc)
        hl_serve_result_free(out);
    return rc;
}
