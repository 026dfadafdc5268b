/* One forward pass on the critical-path GPU: each layer's operators (norms,
 * projections, FFN, router, grouped experts, attention kernel), the collective
 * routing of TP, EP and PP traffic over the HBD and scale-out (best_coll), the
 * MoE exchange, and the phase accumulator they add into. Formulas:
 * docs/MODEL.md section 6. */
#include "layer_int.h"

#include <math.h>
#include <string.h>

#include "coll_int.h"
#include "err_int.h"
#include "fmax_int.h"
#include "hbdlab/kvcache.h"
#include "kernel_match_int.h"
#include "hbdlab/precision.h"
#include "model_int.h"
#include "roofline_int.h"
enum { MAX_EVENTS = HL_SIM_MAX_EVENTS };
/* the public arrays are sized by literals (ffi.cdef reads them); keep them tied to the constants */
_Static_assert(sizeof(((hl_result *)0)->prefill_items) == HL_SIM_MAX_ITEMS * sizeof(hl_item), "prefill_items");
_Static_assert(sizeof(((hl_result *)0)->decode_items) == HL_SIM_MAX_ITEMS * sizeof(hl_item), "decode_items");
_Static_assert(sizeof(((hl_result *)0)->prefill_events) == HL_SIM_MAX_EVENTS * sizeof(hl_event), "prefill_events");
_Static_assert(sizeof(((hl_result *)0)->decode_events) == HL_SIM_MAX_EVENTS * sizeof(hl_event), "decode_events");

/* Copies a NUL-terminated name into a 32-byte field, truncating (no snprintf: hot path). */
static void copy_name(char dst[32], const char *src)
{
    size_t n = strlen(src);
    if (n > 31)
        n = 31;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void log_event(hl_acc *a, const char *name, int is_comm, int tier, double dur, double bytes, double flops)
{
    if (!a->ev || a->nev >= MAX_EVENTS)
        return;
    hl_event *e = &a->ev[a->nev++];
    copy_name(e->name, name);
    e->is_comm = is_comm;
    e->tier = tier;
    e->layer_kind = a->layer_kind;
    e->dur_s = dur;
    e->bytes = bytes;
    e->flops = flops;
}

/* The first 8 bytes of a name as one number: item() finds rows by it through
 * a small hash index and calls strcmp only when it agrees (item() runs for
 * every operator and collective of a phase: a linear scan cost ~0.2 us a run). */
static uint64_t name_tag(const char *name)
{
    uint64_t t = 0;
    for (int i = 0; i < 8 && name[i]; i++)
        t |= (uint64_t)(unsigned char)name[i] << (8 * i);
    return t;
}

/* item() stores each member of a new row: a member added to hl_item must be added there too */
_Static_assert(sizeof(hl_item) == 32 + 4 * 4 + 5 * 8 + 3 * 8 + 6 * 8, "hl_item changed: update item()");

/* The breakdown row of `name` (for a collective, of the shape of `o` for `in`), created on first use. */
static hl_item *item(hl_acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o)
{
    uint64_t tag = name_tag(name);
    unsigned h = (unsigned)((tag * 0x9e3779b97f4a7c15ULL) >> 58) & (HL_ITEM_SLOTS - 1);
    for (; a->slot[h]; h = (h + 1) & (HL_ITEM_SLOTS - 1)) {
        int i = a->slot[h] - 1;
        hl_item *it = &a->items[i];
        if (a->tags[i] == tag && strcmp(it->name, name) == 0 &&
            (!in || (it->op == in->op && it->call_bytes == in->bytes && it->ranks == in->ranks &&
                     it->ranks_per_hbd == o->ranks_per_hbd && it->hbds == o->hbds)))
            return it;
    }
    if (a->n >= HL_SIM_MAX_ITEMS)
        return &a->items[HL_SIM_MAX_ITEMS - 1];
    a->tags[a->n] = tag;
    a->slot[h] = (uint8_t)(a->n + 1);
    hl_item *it = &a->items[a->n++];
    /* every member stored one by one: a memset or a compound literal of the
     * 152-byte row compiles to `rep stos`, which cost a third of item() */
    memset(it->name, 0, sizeof it->name);
    it->is_comm = in != NULL;
    it->tier = in ? o->hbds > 1 : 0;
    it->time_s = it->bytes = it->flops = it->calls = 0;
    it->path_factor = 1;
    it->per_pass = a->layer_kind == 3;
    it->op = in ? in->op : 0;
    it->ranks = in ? in->ranks : 0;
    it->ranks_per_hbd = in ? o->ranks_per_hbd : 0;
    it->hbds = in ? o->hbds : 0;
    it->call_bytes = in ? in->bytes : 0;
    it->call_time_s = in ? o->time_s : 0;
    it->call_latency_s = in ? o->latency_s : 0;
    it->call_scaleup_bytes = in ? o->scaleup_bytes : 0;
    it->call_scaleout_bytes = in ? o->scaleout_bytes : 0;
    it->measured_calls = 0;
    copy_name(it->name, name);
    return it;
}

/* The measured time of an attention operator built by hl_attn_op: its shape (sequences from
 * the work units, the window tried as none, then the local window) is taken only when
 * hl_attn_op rebuilds the same operator from it (a summed variable-length kernel is not one). */
static int measured_attention(const hl_sim_ctx *s, const hl_op *op, double *time_s)
{
    const hl_model *m = s->m;
    int latent = m->attn == HL_ATTN_MLA && op->rows <= s->decode_q;
    double kvh =
        m->attn == HL_ATTN_MLA ? (latent ? 1 : (double)m->heads / (double)s->tp) : hl_kv_heads_per_gpu(m, s->tp);
    double b = op->units / kvh, w[2] = {0, hl_local_window(s)};
    for (int i = 0; i < 2; i++) {
        hl_op again;
        hl_attn_op(s, &again, b, op->rows, op->ctx, w[i]);
        if (again.flops == op->flops && again.bytes_read == op->bytes_read && again.bytes_written == op->bytes_written)
            return hl_kmatch_attention(s, b, op->rows, op->ctx, w[i], time_s);
        if (!(w[1] > 0))
            break;
    }
    return 0;
}

/* The time of one execution of op from the job's kernel tables (1), or 0: the analytic one stands. */
static int measured_op(const hl_sim_ctx *s, const hl_op *op, double *time_s)
{
    if (op->kind == HL_OP_GEMM)
        return hl_kmatch_gemm(s, op, time_s);
    if (op->kind == HL_OP_ATTENTION && strcmp(op->name, "attention") == 0)
        return measured_attention(s, op, time_s);
    return 0;
}

/* account_op's event and breakdown row (not in summary mode): out of line, so that the summary
 * path, a few adds, inlines into its callers. dt: the executions' time. */
__attribute__((noinline)) static void account_op_rows(hl_acc *a, const hl_op *op, double time_s, double dt,
                                                      double times, int measured)
{
    log_event(a, op->name, 0, 0, time_s, op->bytes_read + op->bytes_written, op->flops);
    hl_item *it = item(a, op->name, NULL, NULL);
    it->calls += times;
    it->time_s += dt;
    it->flops += op->flops * times;
    it->bytes += (op->bytes_read + op->bytes_written) * times;
    if (measured)
        it->measured_calls += times;
}

/* Adds `times` executions of op, timed t (one execution, its launch added here), to the phase;
 * `measured`: t came from the job's kernel tables. */
static inline void account_op(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, hl_op_time t, double times, int measured)
{
    t.time_s += s->launch_extra; /* without CUDA graphs a kernel costs its host launch (docs/MODEL.md 6.1) */
    double dt = t.time_s * times;
    a->ph.time_s += dt;
    a->stage_s[a->stage] += dt;
    if (t.bound == HL_BOUND_COMPUTE && op->precision == HL_FP8 &&
        (op->kind == HL_OP_GEMM || op->kind == HL_OP_GROUPED_GEMM)) /* two-batch overlap caps their SMs */
        a->stage_gemm_s[a->stage] += dt;
    if (t.bound == HL_BOUND_COMPUTE)
        a->ph.compute_s += dt;
    else
        a->ph.memory_s += dt;
    a->ph.flops += op->flops * times;
    a->ph.hbm_bytes += (op->bytes_read + op->bytes_written) * times;
    a->kernels += times;
    if (!a->summary)
        account_op_rows(a, op, t.time_s, dt, times, measured);
}

/* The GPU's GEMM classes for the thread's last job class (sim.c: the job but its input, so the
 * same GPU after the framework): a summary run reads only an operator's time and bound. */
typedef struct classes_memo {
    uint64_t job_class; /* 0: empty */
    hl_gemm_classes k;
} classes_memo;
static _Thread_local classes_memo cmemo;

/* hl_op_time_lean in line, in a run with a job class: the branch of hl_op_time_body it would take
 * (hl_gemm_time_parts, hl_attn_time, hl_plain_time) on op's numbers, the same expressions, so the
 * same bits, without its call and the hl_op_time it stores and the caller reads back (ten
 * operators a sweep point). 0 where hl_op_time_lean must decide: a precision without a peak,
 * numbers its checks refuse (it reports them). */
static inline __attribute__((always_inline)) int lean_inline(const hl_sim_ctx *s, const hl_op *op, hl_op_time *t)
{
    const hl_gpu *g = &s->c->gpu;
    int grouped = op->kind == HL_OP_GROUPED_GEMM, is_gemm = op->kind == HL_OP_GEMM || grouped;
    unsigned pr = (unsigned)op->precision;
    if (pr >= HL_PRECISION_COUNT || !(g->peak_flops[pr] > 0) ||
        !(op->flops >= 0 && op->flops < INFINITY && op->bytes_read >= 0 && op->bytes_read < INFINITY &&
          op->bytes_written >= 0 && op->bytes_written < INFINITY))
        return 0;
    double fixed = g->kernel_latency + (op->fixed_s > 0 ? op->fixed_s : 0);
    if (is_gemm) {
        if (cmemo.job_class != s->job_class) {
            hl_gemm_classes_of(g, &cmemo.k);
            cmemo.job_class = s->job_class;
        }
        double eff, bw;
        hl_gemm_time_parts(g, &cmemo.k.c[hl_gemm_class_index((hl_precision)pr)], g->peak_flops[pr], grouped, op->flops,
                           op->bytes_read + op->bytes_written, op->rows, op->k, op->groups > 0 ? op->groups : 1, fixed,
                           t, &eff, &bw);
    } else if (op->kind == HL_OP_ATTENTION) {
        hl_attn_time(op, g, g->peak_flops[pr], op->bytes_read + op->bytes_written, fixed, t);
    } else {
        hl_plain_time(g, g->peak_flops[pr], op->flops, op->bytes_read + op->bytes_written, fixed, t);
    }
    t->intensity = t->ridge = 0;
    t->bound = t->compute_s >= t->memory_s ? HL_BOUND_COMPUTE : HL_BOUND_MEMORY;
    return 1;
}

/* The time of one execution of op (its launch not added): the measured time where the job's
 * kernel tables cover it (one pointer test without them; *measured = 1), else the roofline's. */
static inline __attribute__((always_inline)) hl_status op_time(const hl_sim_ctx *s, const hl_op *op, hl_op_time *t,
                                                               int *measured, hl_err *err)
{
    hl_status st;
    if (s->job_class && lean_inline(s, op, t)) {
        st = HL_OK;
    } else if (s->job_class) {
        if (cmemo.job_class != s->job_class) {
            hl_gemm_classes_of(&s->c->gpu, &cmemo.k);
            cmemo.job_class = s->job_class;
        }
        st = hl_op_time_lean(op, &s->c->gpu, &cmemo.k, t, err);
    } else {
        st = hl_op_time_on(op, &s->c->gpu, t, err);
    }
    *measured = !st && s->kern && measured_op(s, op, &t->time_s);
    return st;
}

/* The unfused dequantisation of an FP8/INT8 GEMM's output (fp8_dequant = "unfused"; docs/MODEL.md
 * 6.1): vLLM's apply_fp8_linear without CUTLASS and with per-channel weight scales has
 * torch._scaled_mm write an FP32 output, then runs `output * x_scale * weight_scale.t()` and
 * `.to(dtype)`: three elementwise kernels, 24 B per output element in all (the FP32 write's 2 B
 * over a 16-bit one, 4 + 4, 4 + 4, 4 + 2), taken as 4 B read and 4 B written per element each. */
static hl_status add_op(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, double times, hl_err *err);
static hl_status add_dequant(const hl_sim_ctx *s, hl_acc *a, const hl_op *gemm_op, double times, hl_err *err)
{
    double elems = gemm_op->rows * gemm_op->n * (gemm_op->groups > 0 ? gemm_op->groups : 1);
    hl_op dq = {.kind = HL_OP_ELEMENTWISE,
                .precision = s->j->act_precision,
                .bytes_read = 4 * elems,
                .bytes_written = 4 * elems};
    memcpy(dq.name, "dequant", sizeof "dequant");
    return add_op(s, a, &dq, 3 * times, err);
}

/* Adds `times` executions of op to the phase. */
static hl_status add_op(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, double times, hl_err *err)
{
    if (times <= 0)
        return HL_OK;
    hl_op_time t;
    int measured;
    hl_status st = op_time(s, op, &t, &measured, err);
    if (st)
        return st;
    account_op(s, a, op, t, times, measured);
    if (s->j->fp8_dequant && op->kind == HL_OP_GEMM && (op->precision == HL_FP8 || op->precision == HL_INT8))
        return add_dequant(s, a, op, times, err);
    return HL_OK;
}

/* The entry points of the three above for the phases (sim.c) and the step
 * timer (step.c); layer.c calls the static ones, which the compiler inlines. */
void hl_acc_event(hl_acc *a, const char *name, int is_comm, int tier, double dur, double bytes, double flops)
{
    log_event(a, name, is_comm, tier, dur, bytes, flops);
}

hl_item *hl_acc_item(hl_acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o)
{
    return item(a, name, in, o);
}

hl_status hl_acc_op(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, double times, hl_err *err)
{
    return add_op(s, a, op, times, err);
}

hl_status hl_acc_op_time(const hl_sim_ctx *s, const hl_op *op, hl_op_time *t, int *measured, hl_err *err)
{
    return op_time(s, op, t, measured, err);
}

void hl_acc_op_timed(const hl_sim_ctx *s, hl_acc *a, const hl_op *op, hl_op_time t, double times, int measured)
{
    if (times > 0)
        account_op(s, a, op, t, times, measured);
}

/* A GEMM of the job's weights and math named by a string literal (HL_OP_GEMM_LIT). */
#define gemm(op, s, name, m, n, k) \
    HL_OP_GEMM_LIT(op, name, m, n, k, (s)->ab, (s)->wb, (s)->ab, (hl_precision)(s)->j->precision)

/* The collective algorithm a job allows: every modelled one, or NCCL's set (coll_algo). */
static int32_t job_algo(const hl_sim_ctx *s) { return s->j->coll_algo == HL_COLL_NCCL ? HL_ALGO_NCCL : HL_ALGO_AUTO; }

/* An all-reduce as the job's framework runs it (its custom kernel, MODEL.md 5.1), else job_algo. */
static int32_t op_algo(const hl_sim_ctx *s, hl_coll_op op)
{
    if (op == HL_ALLREDUCE) {
        int32_t a = s->fw.allreduce; /* hl_framework_profile(s->j->framework), resolved in s */
        if (a != HL_ALGO_AUTO)
            return a;
    }
    return job_algo(s);
}

/* account_coll's event and breakdown row (not in summary mode), out of line as account_op_rows. */
__attribute__((noinline)) static void account_coll_rows(hl_acc *a, const char *name, const hl_coll_in *in,
                                                        const hl_coll_out *o, double times, double raw, int measured)
{
    log_event(a, name, 1, o->hbds > 1, o->time_s, o->scaleup_bytes + o->scaleout_bytes, 0);
    hl_item *it = item(a, name, in, o);
    it->calls += times;
    it->time_s += raw;
    it->bytes += (o->scaleup_bytes + o->scaleout_bytes) * times;
    if (measured)
        it->measured_calls += times;
}

/* Adds `times` executions of a collective (in) already timed (o) to the phase; `measured`: o's
 * time came from the job's kernel tables. */
static inline void account_coll(hl_acc *a, const char *name, const hl_coll_in *in, const hl_coll_out *o, double times,
                                int measured)
{
    /* Raw times here; hl_acc_finish() hides the overlapped part. */
    double raw = o->time_s * times, lat = o->latency_s * times;
    a->ph.time_s += raw;
    a->stage_s[a->stage] += raw;
    a->ph.comm_s += raw;
    a->ph.latency_comm_s += lat;
    if (o->hbds > 1)
        a->ph.scaleout_comm_s += raw - lat;
    else
        a->ph.scaleup_comm_s += raw - lat;
    if (!a->summary)
        account_coll_rows(a, name, in, o, times, raw, measured);
}

/* Whether moving peers of an HBD to scale-out can beat the placed time at
 * all. Only the one-shot exchange runs both tiers at once; moving k of its
 * g - 1 scale-up peers to scale-out can beat the placed time only when
 * scale-out bandwidth exceeds k/(g-1) >= 1/2 of scale-up (derived in
 * docs/MODEL.md 6) or its latency is lower: otherwise there is no search. */
static int reroute_can_win(const hl_cluster *c, int64_t g)
{
    return c->fabric == HL_FABRIC_SWITCH && g > 1 &&
           (2 * c->scaleout_bw * c->eff_scaleout > c->scaleup_bw * c->eff_scaleup ||
            c->scaleout_latency < c->scaleup_latency);
}

/* A collective as placed, or routed as a smaller HBD would route it if that is
 * faster: on a switched fabric a runtime can send to some peers of its HBD
 * over the scale-out network instead (both tiers then carry data at once), so
 * a larger HBD keeps every choice of a smaller one. The time is the minimum
 * over the HBD shares g' dividing the group's share g (docs/MODEL.md 6). */
static hl_status best_coll_uncached(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *o, hl_err *err)
{
    hl_status st = hl_coll_time_hbd(c, hbd, in, o, err);
    int64_t g = in->ranks_per_hbd > 0 ? in->ranks_per_hbd : (in->ranks < hbd ? in->ranks : hbd);
    if (st || !reroute_can_win(c, g))
        return st;
    hl_coll_in k = *in;
    hl_coll_out t;
    for (int64_t gs = 1; gs < g; gs++) {
        if (g % gs != 0 || in->ranks % gs != 0)
            continue;
        k.ranks_per_hbd = gs;
        if (hl_coll_time_hbd(c, gs, &k, &t, err) == HL_OK && t.time_s < o->time_s)
            *o = t;
    }
    return HL_OK;
}

/* best_coll_uncached through the collective memo: its result depends only on
 * the call and the link parameters of the key (coll_int.h), so a sweep or a
 * repeated run looks the minimum up once instead of timing every candidate
 * again. Without a search it is the placed time, memoised by hl_coll_time. */
/* The shape hints (coll_int.h) of the thread's last job class (sim.c: the job but its input, the
 * cluster and its hbd included, so the same link fields and HBD size), one per (op, algo, ranks,
 * ranks_per_hbd), the rest of a collective's shape: a hint's calls all have one shape. Direct-mapped
 * by that key; a key that takes another's entry starts with an empty hint. Each entry also keeps
 * reroute_can_win of its shape, which reads only the class's cluster (fabric, link bandwidths,
 * efficiencies, latencies, hbd) and the key's ranks and ranks_per_hbd, so it is taken once per fill
 * instead of once per call. */
enum { COLL_HINTS = 8 };
typedef struct coll_hints {
    uint64_t job_class;       /* of every entry whose key is not 0 */
    uint64_t key[COLL_HINTS]; /* coll_hint_key of each (0: empty) */
    hl_coll_hint h[COLL_HINTS];
    uint8_t reroute[COLL_HINTS]; /* reroute_can_win(cluster, coll_share) of each entry's shape */
} coll_hints;
static _Thread_local coll_hints chints;

/* op, algo, ranks and ranks_per_hbd packed one-to-one (8 + 8 + 24 + 24 bits), or 0 where one does
 * not fit (then no hint; a real key is never 0: ranks >= 1). Each pair is tested as one: an op or
 * algo outside 0..255 (either negative read unsigned) sets a bit of the OR above bit 7; a ranks or
 * ranks_per_hbd outside 0..2^24 - 1 (negative: bit 63) one above bit 23; ranks 0 alone remains. */
static uint64_t coll_hint_key(const hl_coll_in *in)
{
    if (((uint32_t)in->op | (uint32_t)in->algo) > 255 ||
        ((uint64_t)in->ranks | (uint64_t)in->ranks_per_hbd) >= (uint64_t)1 << 24 || in->ranks < 1)
        return 0;
    return (uint64_t)in->op | (uint64_t)in->algo << 8 | (uint64_t)in->ranks << 16 | (uint64_t)in->ranks_per_hbd << 40;
}

/* The HBD share g of a collective as placed on c: ranks_per_hbd, or packed min(ranks, hbd). */
static int64_t coll_share(const hl_cluster *c, const hl_coll_in *in)
{
    return in->ranks_per_hbd > 0 ? in->ranks_per_hbd : (in->ranks < c->hbd ? in->ranks : c->hbd);
}

static hl_status best_coll(const hl_sim_ctx *s, const hl_coll_in *in, hl_coll_out *o, hl_err *err)
{
    const hl_cluster *c = s->c;
    uint64_t key = s->job_class ? coll_hint_key(in) : 0;
    if (key) { /* the hint of in's shape for the run's job class */
        coll_hints *t = &chints;
        __asm__("" : "+r"(t)); /* t held in a register: without it gcc forms the TLS address thrice */
        if (t->job_class != s->job_class) {
            memset(t->key, 0, sizeof t->key);
            t->job_class = s->job_class;
        }
        unsigned i = (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 61);
        if (t->key[i] != key) {
            t->key[i] = key;
            t->h[i] = (hl_coll_hint){0, 0};
            t->reroute[i] = (uint8_t)reroute_can_win(c, coll_share(c, in));
        }
        if (!t->reroute[i])
            return hl_coll_time_hinted(c, in, o, &t->h[i], err);
    } else if (!reroute_can_win(c, coll_share(c, in))) {
        return hl_coll_time(c, in, o, err);
    }
    return hl_coll_memo(best_coll_uncached, c, c->hbd, in, o, err);
}

/* The call of one collective over `ranks` ranks (packed) into *in, or in->ranks = 0 where there is
 * none (one rank or no bytes: then 0). */
static int coll_call(const hl_sim_ctx *s, const hl_acc *a, hl_coll_op op, double bytes, int64_t ranks,
                     int64_t ranks_per_hbd, hl_coll_in *in)
{
    if (ranks <= 1 || bytes <= 0) {
        in->ranks = 0;
        return 0;
    }
    *in = (hl_coll_in){op, op_algo(s, op), bytes, ranks, ranks_per_hbd, op == HL_ALLTOALL ? a->moe_imbalance : 0};
    return 1;
}

/* The time of *in through a's memo of its last collective: the same collective recurs within a
 * pass (TP AllReduce after attention, FFN, shared experts), so identical inputs reuse the last
 * result. On success a->memo_out holds the time of in (a->memo_in); on error the memo is emptied
 * (a failed call may have written part of memo_out) and err names the collective. */
static hl_status coll_memo(const hl_sim_ctx *s, hl_acc *a, const char *name, const hl_coll_in *in, hl_err *err)
{
    if (a->memo_valid && memcmp(&a->memo_in, in, sizeof *in) == 0)
        return HL_OK;
    hl_status st = best_coll(s, in, &a->memo_out, err);
    if (st) {
        a->memo_valid = 0;
        hl_err_prefix(err, name);
        return st;
    }
    a->memo_in = *in;
    a->memo_valid = 1;
    return HL_OK;
}

/* The call and the time of one collective over `ranks` ranks (packed), measured where the
 * job's kernel tables cover it (*measured = 1); in->ranks = 0: none (one rank or no bytes). */
static hl_status coll_timed(const hl_sim_ctx *s, hl_acc *a, const char *name, hl_coll_op op, double bytes,
                            int64_t ranks, int64_t ranks_per_hbd, hl_coll_in *in, hl_coll_out *o, int *measured,
                            hl_err *err)
{
    *measured = 0;
    if (!coll_call(s, a, op, bytes, ranks, ranks_per_hbd, in))
        return HL_OK;
    hl_status st = coll_memo(s, a, name, in, err);
    if (st)
        return st;
    *o = a->memo_out;
    *measured = s->kern && hl_kmatch_coll(s, in, o);
    return HL_OK;
}

/* Adds `times` executions of a collective over `ranks` ranks (packed). Without kernel tables the
 * memo's result is accounted where it lies (no copy of it); with them, a copy that
 * hl_kmatch_coll may retime. */
static hl_status add_coll(const hl_sim_ctx *s, hl_acc *a, const char *name, hl_coll_op op, double bytes, int64_t ranks,
                          int64_t ranks_per_hbd, double times, hl_err *err)
{
    hl_coll_in in;
    if (times <= 0 || !coll_call(s, a, op, bytes, ranks, ranks_per_hbd, &in))
        return HL_OK;
    hl_status st = coll_memo(s, a, name, &in, err);
    if (st)
        return st;
    if (!s->kern) {
        account_coll(a, name, &in, &a->memo_out, times, 0);
        return HL_OK;
    }
    hl_coll_out o = a->memo_out;
    int measured = hl_kmatch_coll(s, &in, &o);
    account_coll(a, name, &in, &o, times, measured);
    return HL_OK;
}

/* The reduction of TP partial sums: an AllReduce, or with sequence parallelism
 * a ReduceScatter (before the norm, on T/tp tokens) and an AllGather (after). Inline: out of line
 * it set up a five-register frame around its one add_coll (bench/callgrind_point.sh: -24 a point). */
static inline hl_status tp_reduce(const hl_sim_ctx *s, hl_acc *a, double bytes, int64_t ranks, double times,
                                  hl_err *err)
{
    int64_t rph = ranks == s->tp ? s->rph_tp : 0; /* the expert-TP group (ep = 1) is the TP group */
    if (!s->j->sequence_parallel)
        return add_coll(s, a, "tp_allreduce", HL_ALLREDUCE, bytes, ranks, rph, times, err);
    hl_status st = add_coll(s, a, "tp_reducescatter", HL_REDUCESCATTER, bytes, ranks, rph, times, err);
    if (!st)
        st = add_coll(s, a, "tp_allgather", HL_ALLGATHER, bytes, ranks, rph, times, err);
    return st;
}

/* Probability that none of the k distinct experts one token picks (top-k,
 * uniform routing) lies among m given experts of E: C(E-m, k) / C(E, k). */
static double miss_prob(double E, double m, double k)
{
    double p = 1;
    for (double i = 0; i < k; i++) {
        if (E - m - i <= 0)
            return 0;
        p *= (E - m - i) / (E - i);
    }
    return p;
}

/* Hierarchical exchange with forwarding domains of gf GPUs (gf divides the
 * stage's HBD share): one copy per destination domain crosses scale-out to the
 * rail peer, which forwards one copy per destination GPU over scale-up.
 * inter/intra get zero times when a step has a single participant. */
static hl_status hier_exchange(const hl_sim_ctx *s, double gf, double mine, double width, int64_t domain, double imb,
                               hl_coll_in *in_inter, hl_coll_out *inter, hl_coll_in *in_intra, hl_coll_out *intra,
                               hl_err *err)
{
    const hl_model *m = s->m;
    double E = s->slots, k = (double)m->topk, h = (double)m->hidden; /* a token picks k of the slots */
    double D = (double)domain, etp = (double)s->etp, ep = (double)s->ep;
    double dests = ep * (1 - miss_prob(E, E / ep, k)) * etp; /* distinct destination GPUs per token */
    double u = hl_fmax(gf, etp);                             /* GPUs holding whole experts together */
    double units_hit = D / u * (1 - miss_prob(E, E * u / D, k));
    double doms_hit = units_hit * u / gf; /* distinct destination domains per token */
    memset(inter, 0, sizeof *inter);
    memset(intra, 0, sizeof *intra);
    hl_status st = HL_OK;
    int64_t nd = domain / (int64_t)gf;
    *in_inter = (hl_coll_in){HL_ALLTOALL, job_algo(s), mine * doms_hit * h * width, nd, 1, imb};
    *in_intra = (hl_coll_in){HL_ALLTOALL, job_algo(s), mine * dests * h * width, (int64_t)gf, 0, imb};
    if (nd > 1)
        st = hl_coll_time_hbd(s->c, (int64_t)gf, in_inter, inter, err);
    if (!st && gf > 1)
        st = hl_coll_time_hbd(s->c, (int64_t)gf, in_intra, intra, err);
    return st;
}

/* The time of a hierarchical exchange whose two legs run in one kernel, chunk by chunk (DeepEP's
 * normal internode dispatch and combine, csrc/kernels/legacy/internode.cu: RDMA senders, RDMA-to-NVLink
 * forwarders and NVLink receivers are warps of the same kernel, each chunk forwarded over NVLink as
 * soon as it lands): the first chunk pays both legs' fixed latencies in turn, the bytes then stream
 * over both tiers at once at the slower leg's rate. Derived (docs/MODEL.md 6); the one-chunk fill
 * is not modelled. s. */
static double pipelined_legs(const hl_coll_out *inter, const hl_coll_out *intra)
{
    return inter->latency_s + intra->latency_s +
           hl_fmax(inter->time_s - inter->latency_s, intra->time_s - intra->latency_s);
}

/* MoE dispatch (or combine: the same bytes back, at activation width) of
 * `mine` tokens per GPU to top-k experts, each expert split over etp GPUs.
 * Flat: every (token, expert, shard) copy is its own message of h elements
 * over the whole domain. Hierarchical (DeepEP-style): one copy per destination
 * forwarding domain crosses scale-out, then one copy per destination GPU over
 * scale-up, both legs pipelined (pipelined_legs); the runtime forwards inside
 * the divisor of the HBD share that is fastest (a larger HBD keeps every
 * choice of a smaller one). The breakdown keeps both rows: `*_inter` the RDMA
 * leg's whole time, `*_intra` what the NVLink leg adds past it (its latency,
 * plus its streaming time beyond the RDMA leg's), so the rows sum to the
 * exchange's time. This is the hierarchical case, out of line from moe_exchange (below) so that
 * its frame (two calls and two results per candidate and the best ones kept, ~0.5 KB, 160 B of it
 * zeroed) is not set up for a flat exchange, which is one add_coll. */
__attribute__((noinline)) static hl_status moe_exchange_hier(const hl_sim_ctx *s, hl_acc *a, const char *name,
                                                             double mine, double width, int64_t domain, double times,
                                                             hl_err *err)
{
    int64_t g = s->rph_domain;
    if (times <= 0 || domain <= 1 || mine <= 0)
        return HL_OK;
    hl_coll_in ii, iu, bii, biu;
    hl_coll_out inter, intra, bi = {0}, bu = {0};
    double best = -1;
    for (int64_t gf = 1; gf <= g; gf++) {
        if (g % gf != 0)
            continue;
        hl_status st =
            hier_exchange(s, (double)gf, mine, width, domain, a->moe_imbalance, &ii, &inter, &iu, &intra, err);
        if (st) {
            hl_err_prefix(err, name);
            return st;
        }
        double t = pipelined_legs(&inter, &intra);
        if (best < 0 || t < best) {
            best = t;
            bi = inter;
            bu = intra;
            bii = ii;
            biu = iu;
        }
    }
    int dispatch = strcmp(name, "ep_dispatch") == 0;
    if (bi.time_s > 0)
        account_coll(a, dispatch ? "ep_dispatch_inter" : "ep_combine_inter", &bii, &bi, times, 0);
    double added = best - bi.time_s; /* >= bu.latency_s: the part of the NVLink leg the RDMA leg does not hide */
    if (bu.time_s > 0 && added > 0) {
        double leg = bu.time_s;
        bu.time_s = added;
        bu.latency_share = bu.latency_s / bu.time_s;
        bu.algbw *= leg / bu.time_s; /* the rates the row's bytes are carried at in its charged time */
        bu.busbw *= leg / bu.time_s;
        account_coll(a, dispatch ? "ep_dispatch_intra" : "ep_combine_intra", &biu, &bu, times, 0);
    }
    return HL_OK;
}

/* MoE dispatch or combine (above): flat, one AllToAll over the domain, else moe_exchange_hier. */
static hl_status moe_exchange(const hl_sim_ctx *s, hl_acc *a, const char *name, double mine, double width,
                              int64_t domain, double times, hl_err *err)
{
    if (s->j->dispatch != HL_DISPATCH_FLAT)
        return moe_exchange_hier(s, a, name, mine, width, domain, times, err);
    const hl_model *m = s->m;
    double h = (double)m->hidden, k = (double)m->topk, etp = (double)s->etp;
    return add_coll(s, a, name, HL_ALLTOALL, hl_coll_moe_bytes(mine, k, etp, h, width), domain, s->rph_domain, times,
                    err);
}

/* The kernels the framework launches per layer beside the operators above (its inventory,
 * docs/MODEL.md 6.1), each a memory-bound elementwise kernel plus kernel_latency: RoPE reads
 * and writes q and k; the KV append reads k and v and writes them to the cache; the FFN
 * activation (SwiGLU) reads the gate and up halves and writes their product; the second
 * RMSNorm's bytes are in the norms operator, so it adds its kernel alone. T tokens.
 * MLA (SGLang deepseek_v2.py forward_normal_prepare / forward_absorb_prepare; vLLM
 * layers/mla.py and v1/attention/backends/mla/common.py): RoPE rotates the Hl query rope
 * parts and the one shared k_pe, and the rotated q_pe is copied back into q; the KV append
 * writes the latent (kv_lora + rope) per token; the prefill on expanded K (`expanded`) also
 * assembles K per head from k_nope and the broadcast k_pe (k_concat). */
static hl_status engine_kernels(const hl_sim_ctx *s, hl_acc *a, double T, double Lst, double Latt, double Ldense,
                                int expanded, hl_err *err)
{
    if (!(s->fw.rope_kernel || s->fw.kv_append_kernel || s->fw.act_kernel || s->fw.norm_kernel))
        return HL_OK; /* the ideal profile launches none: the table below would add nothing */
    const hl_model *m = s->m;
    double tp = (double)s->tp, ab = s->ab;
    double Hl = (double)m->heads / tp, Kl = hl_kv_heads_per_gpu(m, s->tp), d = (double)m->head_dim;
    double F = (double)m->ffn / tp;
    int mla = m->attn == HL_ATTN_MLA;
    double n = (double)m->qk_nope_dim, p = (double)m->qk_rope_dim, c = (double)m->kv_lora_rank;
    double rope = mla ? T * (2 * Hl + 1) * p * ab : T * (Hl + Kl) * d * ab;
    struct {
        int on;
        const char *name;
        double rd, wr, layers;
    } k[5] = {
        {s->fw.rope_kernel, "rope", rope, rope, Latt},
        {s->fw.kv_append_kernel, "kv_append", mla ? T * (c + p) * ab : T * 2 * Kl * d * ab,
         mla ? T * (c + p) * s->kvb : T * 2 * Kl * d * s->kvb, Latt},
        {s->fw.rope_kernel && mla && expanded, "k_concat", T * (Hl * n + p) * ab, T * Hl * (n + p) * ab, Latt},
        {s->fw.act_kernel, "activation", T * 2 * F * ab, T * F * ab, Ldense},
        {s->fw.norm_kernel, "norm", 0, 0, Lst},
    };
    for (int i = 0; i < 5; i++) {
        if (!k[i].on || k[i].layers <= 0)
            continue;
        hl_op op = {.kind = HL_OP_ELEMENTWISE,
                    .precision = s->j->act_precision,
                    .bytes_read = k[i].rd,
                    .bytes_written = k[i].wr};
        memcpy(op.name, k[i].name, strlen(k[i].name) + 1); /* names of at most 10 bytes */
        hl_status st = add_op(s, a, &op, k[i].layers, err);
        if (st)
            return st;
    }
    return HL_OK;
}

/* One forward pass over the layers of one stage, except the attention kernel:
 * T = b q tokens per attention group (q new tokens for each of b sequences);
 * `routed` tokens reach the experts from the whole stage (b q dp). */
hl_status hl_layer_ops(const hl_sim_ctx *s, hl_acc *a, double b, double q, double routed, double passes, int decode,
                       hl_err *err)
{
    const hl_model *m = s->m;
    const hl_job *j = s->j;
    double T = b * q, h = (double)m->hidden, tp = (double)s->tp;
    double Lst = s->stage_layers * passes; /* layer executions on this GPU */
    double Lmoe = Lst * (1 - s->dense_frac), Ldense = Lst * s->dense_frac;
    double Hl = (double)m->heads / tp;
    hl_op op;
    hl_status st = HL_OK;
#define TRY(x)                   \
    do {                         \
        if ((st = (x)) != HL_OK) \
            return st;           \
    } while (0)

    a->layer_kind = 0;
    /* two RMSNorms with residual adds: read x and residual, write x, per norm;
     * with sequence parallelism each TP rank normalises only its T/tp tokens */
    double Tn = j->sequence_parallel ? T / tp : T;
    hl_op norm = {.name = "norms",
                  .kind = HL_OP_NORM,
                  .precision = j->act_precision,
                  .flops = 2 * 4 * Tn * h,
                  .bytes_read = 2 * 2 * Tn * h * s->ab,
                  .bytes_written = 2 * Tn * h * s->ab};
    TRY(add_op(s, a, &norm, Lst, err));
    /* softmax-attention layers and gated DeltaNet layers of this stage */
    double Llin = Lst * (double)hl_model_linear_layers(m) / (double)m->layers, Latt = Lst - Llin;
    if (m->attn == HL_ATTN_MLA) {
        double nope = (double)m->qk_nope_dim, rope = (double)m->qk_rope_dim, v = (double)m->v_head_dim;
        double kvl = (double)m->kv_lora_rank, ql = (double)m->q_lora_rank;
        if (ql > 0) {
            gemm(&op, s, "q_proj", T, ql, h);
            TRY(add_op(s, a, &op, Latt, err));
            gemm(&op, s, "q_proj", T, Hl * (nope + rope), ql);
        } else {
            gemm(&op, s, "q_proj", T, Hl * (nope + rope), h);
        }
        TRY(add_op(s, a, &op, Latt, err));
        gemm(&op, s, "kv_proj", T, kvl + rope, h);
        TRY(add_op(s, a, &op, Latt, err));
        if (decode) { /* absorbed: q_nope x W_UK per head, output x W_UV per head */
            gemm(&op, s, "mla_absorb", T, Hl * kvl, nope);
            TRY(add_op(s, a, &op, Latt, err));
            a->stage = HL_TBO_CORE; /* after the attention kernel (SGLang's op_core) */
            gemm(&op, s, "mla_absorb", T, Hl * v, kvl);
        } else { /* expand K and V for the prompt tokens */
            gemm(&op, s, "kv_proj", T, Hl * (nope + v), kvl);
        }
        TRY(add_op(s, a, &op, Latt, err));
        a->stage = HL_TBO_CORE;
        gemm(&op, s, "o_proj", T, h, Hl * v);
    } else {
        double Kl = hl_kv_heads_per_gpu(m, s->tp), d = (double)m->head_dim;
        /* a gated attention's q_proj also emits the output gate (Qwen3-Next) */
        gemm(&op, s, "qkv_proj", T, ((m->attn_gate ? 2 : 1) * Hl + 2 * Kl) * d, h);
        TRY(add_op(s, a, &op, Latt, err));
        a->stage = HL_TBO_CORE;
        gemm(&op, s, "o_proj", T, h, Hl * d);
    }
    TRY(add_op(s, a, &op, Latt, err));
    if (m->index_topk > 0) { /* the lightning indexer's projections, whole on every TP rank */
        double Hi = (double)m->index_heads, di = (double)m->index_dim;
        gemm(&op, s, "indexer_proj", T, Hi * di, m->q_lora_rank > 0 ? (double)m->q_lora_rank : h);
        TRY(add_op(s, a, &op, Latt, err));
        gemm(&op, s, "indexer_proj", T, di, h);
        TRY(add_op(s, a, &op, Latt, err));
        gemm(&op, s, "indexer_proj", T, Hi, h);
        TRY(add_op(s, a, &op, Latt, err));
    }
    if (Llin > 0) { /* gated DeltaNet (docs/MODEL.md 6.4) */
        double kt = m->linear_k_heads >= s->tp ? (double)m->linear_k_heads / tp : 1;
        double vt = kt * (double)(m->linear_v_heads / m->linear_k_heads);
        double dk = (double)m->linear_k_dim, dv = (double)m->linear_v_dim, c = (double)m->linear_conv;
        double chans = 2 * kt * dk + vt * dv;                           /* q, k, v through the conv */
        gemm(&op, s, "linear_in_proj", T, chans + vt * dv + 2 * vt, h); /* q, k, v, z and the a, b gates */
        TRY(add_op(s, a, &op, Llin, err));
        double state = vt * dk * dv + chans * (c > 1 ? c - 1 : 0); /* elements per sequence */
        hl_op rec = {.name = "linear_attention",
                     .kind = HL_OP_ATTENTION,
                     .precision = j->act_precision,
                     .flops = T * (7 * dk * dv * vt + 2 * c * chans),
                     .bytes_read = T * (chans + 2 * vt) * s->ab + b * state * s->ab,
                     .bytes_written = T * vt * dv * s->ab + b * state * s->ab};
        TRY(add_op(s, a, &rec, Llin, err));
        gemm(&op, s, "linear_out_proj", T, h, vt * dv);
        TRY(add_op(s, a, &op, Llin, err));
    }
    double ar_bytes = T * h * s->ab;
    TRY(tp_reduce(s, a, ar_bytes, s->tp, Lst, err));
    if (Ldense > 0) {
        a->layer_kind = 1;
        double F = (double)m->ffn / tp;
        gemm(&op, s, "ffn_up_gate", T, 2 * F, h);
        TRY(add_op(s, a, &op, Ldense, err));
        gemm(&op, s, "ffn_down", T, h, F);
        TRY(add_op(s, a, &op, Ldense, err));
        TRY(tp_reduce(s, a, ar_bytes, s->tp, Ldense, err));
    }
    if (Lmoe > 0) {
        a->layer_kind = 2;
        /* E expert slots (replicas included: EPLB splits a hot expert's tokens over its
         * copies, so tokens spread over the slots); the router scores the logical experts */
        double E = s->slots, k = (double)m->topk, etp = (double)s->etp;
        /* each expert-TP shard holds ceil(F/etp) columns (the last one padded) */
        double Fe = ceil((double)hl_model_expert_ffn(m) / etp), El = E / (double)s->ep;
        HL_OP_GEMM_LIT(&op, "router", T, (double)m->experts, h, s->ab, s->ab, 4, (hl_precision)j->act_precision);
        TRY(add_op(s, a, &op, Lmoe, err));
        int64_t domain = s->G / s->pp; /* ranks exchanging tokens: every GPU of a stage */
        double mine = T / tp;          /* tokens this GPU routes: its share of the group's tokens */
        /* a layer waits for the busiest EP rank: its routed picks / the mean (the routing
         * model's expectation, expert_load.c, unless the job states imbalance) */
        double imb = j->imbalance;
        if (!(imb > 0)) {
            double picks = floor(routed * k + 0.5);
            imb = s->ep > 1 && picks > 0 ? hl_expert_busiest_load(s->layout, routed) / (picks / (double)s->ep) : 1;
        }
        a->moe_imbalance = imb;
        /* tokens per expert slot on the busiest rank */
        double tok_e = routed * k / E * imb;
        a->stage = HL_TBO_DISPATCH;
        if (s->ep > 1)
            TRY(moe_exchange(s, a, "ep_dispatch", mine, s->wireb, domain, Lmoe, err));
        a->stage = HL_TBO_EXPERTS;
        /* experts of the busiest EP rank that receive at least one token (their weights are
         * read; the routing model of expert_load.c) */
        double active = hl_expert_busiest_hits(s->layout, routed);
        /* gate/up and down as two grouped kernels over the local experts (docs/MODEL.md section 3):
         * FLOPs and activations of every local expert, weights of the `active` ones, tiles per
         * active expert; the routing and permutation kernels (moe_latency) once per layer */
        hl_moe_shape ms = {
            tok_e, El, active, h, Fe, s->ab, hl_model_expert_weight_bytes(m, s->wb)}; /* MXFP4 experts: 4.25 bits */
        hl_op up, down;
        hl_moe_experts_ops(&up, &down, &ms, (hl_precision)j->precision);
        up.fixed_s = s->c->gpu.moe_latency;
        double moe_s; /* the busiest rank's load as balanced tokens: routed x imbalance */
        int moe_measured = s->kern && hl_kmatch_moe(s, routed * imb, &moe_s);
        if (moe_measured) {
            /* the fused module measured whole (routing, permutation, both grouped GEMMs): one
             * "experts" row of both GEMMs' work; the roofline still says which bound it is */
            hl_op both = up;
            both.flops += down.flops;
            both.bytes_read += down.bytes_read;
            both.bytes_written += down.bytes_written;
            hl_op_time t;
            TRY(hl_op_time_on(&both, &s->c->gpu, &t, err));
            t.time_s = moe_s;
            account_op(s, a, &both, t, Lmoe, 1);
        } else {
            TRY(add_op(s, a, &up, Lmoe, err));
            TRY(add_op(s, a, &down, Lmoe, err));
        }
        if (s->c->gpu.moe_perm_bytes > 0 && !moe_measured) {
            hl_op perm;
            hl_op_moe_permute(&perm, &ms, s->c->gpu.moe_perm_bytes, (hl_precision)j->act_precision);
            TRY(add_op(s, a, &perm, Lmoe, err));
        }
        a->stage = HL_TBO_COMBINE;
        if (s->ep > 1) {
            TRY(moe_exchange(s, a, "ep_combine", mine, s->ab, domain, Lmoe, err));
            /* each TP rank combined only its T/tp tokens: attention TP needs all T again */
            TRY(add_coll(s, a, "moe_allgather", HL_ALLGATHER, ar_bytes, s->tp, s->rph_tp, Lmoe, err));
        } else {
            /* ep = 1: every rank holds 1/etp of every expert and sees every token; the
             * expert outputs are partial sums, reduced like a dense FFN's */
            TRY(tp_reduce(s, a, ar_bytes, s->etp, Lmoe, err));
        }
        a->stage = HL_TBO_SHARED;
        if (m->shared_experts > 0) {
            double Fs = (double)hl_model_shared_ffn(m) * (double)m->shared_experts / tp;
            gemm(&op, s, "shared_experts", T, 3 * Fs, h);
            TRY(add_op(s, a, &op, Lmoe, err));
            TRY(tp_reduce(s, a, ar_bytes, s->tp, Lmoe, err));
        }
    }
    a->stage = HL_TBO_ATTN; /* the engine's small kernels, then the next layer's norms and projections */
    TRY(engine_kernels(s, a, T, Lst, Latt, Ldense, !decode, err));
    a->layer_kind = 0;
    if (j->layer_overhead > 0) {
        log_event(a, "layer_overhead", 0, 0, j->layer_overhead, 0, 0);
        double o = j->layer_overhead * Lst;
        a->ph.time_s += o;
        a->ph.overhead_s += o;
    }
    return HL_OK;
#undef TRY
}

/* The per-job part of an attention kernel's shape (heads, widths, KV bytes per token) for
 * q new tokens per sequence: it depends on q only through q <= s->decode_q (MLA's absorbed
 * decode form), so a caller may keep one per side of that test. */
static void attn_shape_for(const hl_sim_ctx *s, double q, hl_attn_shape *sh)
{
    const hl_model *m = s->m;
    sh->heads = (double)m->heads / (double)s->tp;
    sh->act_bytes = s->ab;
    if (m->attn == HL_ATTN_MLA) {
        if (q <= s->decode_q) { /* decode (and verify) on the latent: MQA-like, qk = kv_lora + rope, v = kv_lora */
            sh->kv_heads = 1;
            sh->qk_dim = (double)(m->kv_lora_rank + m->qk_rope_dim);
            sh->v_dim = (double)m->kv_lora_rank;
            sh->kv_token_bytes = sh->qk_dim * s->kvb;
        } else { /* prefill on expanded K, V */
            sh->kv_heads = sh->heads;
            sh->qk_dim = (double)(m->qk_nope_dim + m->qk_rope_dim);
            sh->v_dim = (double)m->v_head_dim;
            sh->kv_token_bytes = sh->heads * (sh->qk_dim + sh->v_dim) * s->ab;
        }
    } else {
        sh->kv_heads = hl_kv_heads_per_gpu(m, s->tp);
        sh->qk_dim = sh->v_dim = (double)m->head_dim;
        sh->kv_token_bytes = hl_kv_token_layer_bytes_per_gpu(m, (hl_precision)hl_job_kv_precision(s->j), s->tp);
    }
}

/* The per-job shapes of the thread's last job class (sim.c: the job but its input; the shape reads
 * the model, tp, the byte widths and decode_q, never input), one per side of q <= decode_q. */
typedef struct shape_memo {
    uint64_t job_class; /* 0: empty */
    hl_attn_shape sh;   /* its per-job fields (attn_shape_for's) */
} shape_memo;
static _Thread_local shape_memo smemo[2];

void hl_attn_shape_for(const hl_sim_ctx *s, double q, hl_attn_shape *sh)
{
    if (!s->job_class) {
        attn_shape_for(s, q, sh);
        return;
    }
    shape_memo *m = &smemo[q <= s->decode_q];
    if (m->job_class != s->job_class) {
        attn_shape_for(s, q, &m->sh);
        m->job_class = s->job_class;
    }
    sh->heads = m->sh.heads; /* the fields attn_shape_for sets, no others */
    sh->act_bytes = m->sh.act_bytes;
    sh->kv_heads = m->sh.kv_heads;
    sh->qk_dim = m->sh.qk_dim;
    sh->v_dim = m->sh.v_dim;
    sh->kv_token_bytes = m->sh.kv_token_bytes;
}

/* Attention kernel of one layer: b sequences, q new tokens after ctx cached ones. */
void hl_attn_shape_of(const hl_sim_ctx *s, hl_attn_shape *out, double b, double q, double ctx, double window)
{
    hl_attn_shape_for(s, q, out);
    out->batch = b;
    out->new_tokens = q;
    out->context = ctx;
    out->window = window;
}

void hl_attn_op(const hl_sim_ctx *s, hl_op *op, double b, double q, double ctx, double window)
{
    hl_attn_shape sh;
    hl_attn_shape_of(s, &sh, b, q, ctx, window);
    HL_OP_ATTENTION_LIT(op, "attention", &sh, (hl_precision)s->j->act_precision);
}

void hl_attn_op_shaped(const hl_sim_ctx *s, hl_op *op, const hl_attn_shape *per_job, double b, double q, double ctx,
                       double window)
{
    hl_attn_shape sh = *per_job;
    sh.batch = b;
    sh.new_tokens = q;
    sh.context = ctx;
    sh.window = window;
    HL_OP_ATTENTION_LIT(op, "attention", &sh, (hl_precision)s->j->act_precision);
}

hl_status hl_vision_ops(const hl_sim_ctx *s, hl_acc *a, double b, hl_err *err)
{
    const hl_model *m = s->m;
    const hl_job *j = s->j;
    if (m->vision_layers <= 0 || j->image_tokens <= 0)
        return HL_OK;
    double tp = (double)s->tp, V = (double)m->vision_hidden, F = (double)m->vision_ffn;
    double M2 = (double)(m->vision_merge * m->vision_merge), P = j->image_tokens * M2; /* patches per sequence */
    double N = b * P, patch_in = 3 * (double)(m->vision_temporal * m->vision_patch * m->vision_patch);
    double L = (double)m->vision_layers, Lfull = (double)m->vision_full, Lwin = L - Lfull;
    double win = m->vision_window > 0 ? hl_fmin(P, (double)(m->vision_window * m->vision_window)) : P;
    hl_op op;
    hl_status st;
    a->layer_kind = 3;
#define TRY(x)                   \
    do {                         \
        if ((st = (x)) != HL_OK) \
            return st;           \
    } while (0)
    gemm(&op, s, "vision_patch_embed", N, V, patch_in);
    TRY(add_op(s, a, &op, 1, err));
    gemm(&op, s, "vision_qkv", N, 3 * V / tp, V);
    TRY(add_op(s, a, &op, L, err));
    gemm(&op, s, "vision_proj", N, V, V / tp);
    TRY(add_op(s, a, &op, L, err));
    gemm(&op, s, "vision_mlp", N, (m->vision_siglip ? 1 : 2) * F / tp, V); /* GELU fc1, or SwiGLU gate and up */
    TRY(add_op(s, a, &op, L, err));
    gemm(&op, s, "vision_mlp", N, V, F / tp);
    TRY(add_op(s, a, &op, L, err));
    /* bidirectional attention: each patch sees its window (win patches) or the whole image (P);
     * q.k and p.v over V/tp channels: 4 V/tp FLOP per pair */
    for (int full = 0; full < 2; full++) {
        double keys = full ? P : win, layers = full ? Lfull : Lwin;
        hl_op at = {.name = "vision_attention",
                    .kind = HL_OP_ATTENTION,
                    .precision = j->act_precision,
                    .flops = 4 * N * keys * V / tp,
                    .bytes_read = 3 * N * V / tp * s->ab,
                    .bytes_written = N * V / tp * s->ab};
        if (layers > 0)
            TRY(add_op(s, a, &at, layers, err));
    }
    TRY(tp_reduce(s, a, N * V * s->ab, s->tp, 2 * L, err)); /* after attention and MLP, as a text layer */
    if (m->vision_adapter > 0) { /* Llama 4: pixel shuffle m x m patches into one, MLP m^2 V -> A -> A, A -> h */
        double A = (double)m->vision_adapter;
        gemm(&op, s, "vision_merger", N / M2, A, V * M2);
        TRY(add_op(s, a, &op, 1, err));
        gemm(&op, s, "vision_merger", N / M2, A, A);
        TRY(add_op(s, a, &op, 1, err));
        gemm(&op, s, "vision_merger", N / M2, (double)m->hidden, A);
        TRY(add_op(s, a, &op, 1, err));
    } else if (m->vision_siglip) { /* Gemma 3: average-pool merge x merge patches, then one projection V -> h */
        gemm(&op, s, "vision_merger", N / M2, (double)m->hidden, V);
        TRY(add_op(s, a, &op, 1, err));
    } else {
        gemm(&op, s, "vision_merger", N / M2, V * M2, V * M2);
        TRY(add_op(s, a, &op, 1, err));
        gemm(&op, s, "vision_merger", N / M2, (double)m->hidden, V * M2);
        TRY(add_op(s, a, &op, 1, err));
    }
    a->layer_kind = 0;
    return HL_OK;
#undef TRY
}

void hl_indexer_op(const hl_sim_ctx *s, hl_op *op, double b, double q, double ctx)
{
    const hl_model *m = s->m;
    hl_attn_shape sh;
    sh.batch = b;
    sh.new_tokens = q;
    sh.context = ctx;
    sh.heads = (double)m->index_heads;
    sh.kv_heads = 1;
    sh.qk_dim = (double)m->index_dim;
    sh.v_dim = 1; /* the weighted sum over heads: 2 FLOP per head per pair */
    sh.kv_token_bytes = (double)m->index_dim * s->kvb;
    sh.act_bytes = s->ab;
    sh.window = 0; /* it scores every key */
    HL_OP_ATTENTION_LIT(op, "indexer", &sh, (hl_precision)s->j->act_precision);
}

/* The per-pass operators of `tokens` tokens (per GPU) of which `rows` sample:
 * the embedding lookup and the (pp - 1) stage hand-offs carry every token;
 * the LM head (vocab-parallel), logits AllGather and token broadcast only the
 * sampling rows (none when rows = 0, e.g. a prefill chunk that does not end
 * its prompt). The timed parts (hl_io_tok, hl_io_head: layer_int.h) depend on
 * the job and one count each, so the step timer keeps them per count. */
static const char *const head_coll_names[2] = {"logits_allgather", "token_broadcast"};

/* The sampling of `rows` rows, timed; `a` lends its collective memo (coll_timed). */
static hl_status time_head(const hl_sim_ctx *s, hl_acc *a, double rows, hl_io_head *h, hl_err *err)
{
    const hl_model *m = s->m;
    gemm(&h->head, s, "lm_head", rows, (double)m->vocab / (double)s->tp, (double)m->hidden);
    hl_status st = op_time(s, &h->head, &h->head_t, &h->head_measured, err);
    if (!st)
        st = coll_timed(s, a, head_coll_names[0], HL_ALLGATHER, rows * (double)m->vocab * s->ab, s->tp, s->rph_tp,
                        &h->in[0], &h->out[0], &h->measured[0], err);
    if (!st)
        st = coll_timed(s, a, head_coll_names[1], HL_BROADCAST, rows * 4, s->tp * s->pp, 0, &h->in[1], &h->out[1],
                        &h->measured[1], err);
    return st;
}

/* The last sampling and embedding parts timed on this thread, two of each (a prefill's and a
 * decode's), keyed by the run's job class (sim.c: the job but its input) and the count (rows,
 * tokens): a sweep over input times the decode's once and the prefill's, whose token count moves,
 * at each point. Summary mode without kernel tables only (the breakdown and events come from the
 * ops themselves). Each part is timed in place into the slot used less recently, and the caller
 * reads it there (valid until this thread's next timing of that part). */
enum { IO_MEMO = 2 };
typedef struct io_keys {
    uint64_t job_class[IO_MEMO]; /* 0: empty */
    double count[IO_MEMO];
    int old; /* the slot used less recently */
} io_keys;
static _Thread_local io_keys hkeys, tkeys;
static _Thread_local hl_io_head hvals[IO_MEMO];
static _Thread_local hl_io_tok tvals[IO_MEMO];

static int io_memo_on(const hl_sim_ctx *s, const hl_acc *a) { return a->summary && s->job_class && !s->kern; }

/* The slot of (job_class, count) in k: where it is (*hit = 1; it becomes the more recent one),
 * else the less recent one, emptied for the caller to fill (*hit = 0). */
static int io_slot(io_keys *k, uint64_t job_class, double count, int *hit)
{
    int i = 0;
    while (i < IO_MEMO && !(k->job_class[i] == job_class && k->count[i] == count))
        i++;
    *hit = i < IO_MEMO;
    if (!*hit) {
        i = k->old;
        k->job_class[i] = 0;
        k->count[i] = count;
    }
    k->old = 1 - i;
    return i;
}

/* The embedding of `tokens` tokens and, with pipeline stages, the send of their activations to
 * the next stage, timed through a's collective memo. */
static hl_status io_tok(const hl_sim_ctx *s, hl_acc *a, double tokens, hl_io_tok *e, hl_err *err)
{
    double h = (double)s->m->hidden;
    e->emb = (hl_op){.name = "embedding",
                     .kind = HL_OP_ELEMENTWISE,
                     .precision = s->j->act_precision,
                     .bytes_read = tokens * h * s->ab,
                     .bytes_written = tokens * h * s->ab};
    hl_status st = op_time(s, &e->emb, &e->t, &e->measured, err);
    e->pp_in.ranks = 0;
    e->pp_measured = 0;
    if (!st && s->pp > 1) {
        int64_t rph = s->pp_stride >= s->c->hbd ? 1 : 2; /* stage neighbours are pp_stride ranks apart */
        st = coll_timed(s, a, "pp_sendrecv", HL_SENDRECV, tokens * h * s->ab, 2, rph, &e->pp_in, &e->pp_out,
                        &e->pp_measured, err);
    }
    return st;
}

hl_status hl_io_tok_time(const hl_sim_ctx *s, double tokens, hl_io_tok *e, hl_err *err)
{
    hl_acc a; /* no collective memo yet, as in a phase's first collective */
    memset(&a, 0, sizeof a);
    return io_tok(s, &a, tokens, e, err);
}

hl_status hl_io_head_time(const hl_sim_ctx *s, double rows, hl_io_head *h, hl_err *err)
{
    hl_acc a; /* no collective memo yet, as in a phase's first collective */
    memset(&a, 0, sizeof a);
    return time_head(s, &a, rows, h, err);
}

void hl_io_ops_timed(const hl_sim_ctx *s, hl_acc *a, const hl_io_tok *e, const hl_io_head *ho, double passes)
{
    a->layer_kind = 3;
    if (passes <= 0)
        return;
    account_op(s, a, &e->emb, e->t, passes, e->measured);
    if (ho) {
        account_op(s, a, &ho->head, ho->head_t, passes, ho->head_measured);
        for (int i = 0; i < 2; i++)
            if (ho->in[i].ranks > 0)
                account_coll(a, head_coll_names[i], &ho->in[i], &ho->out[i], passes, ho->measured[i]);
    }
    if (e->pp_in.ranks > 0) /* one hand-off to each of the pp - 1 later stages */
        account_coll(a, "pp_sendrecv", &e->pp_in, &e->pp_out, passes * (double)(s->pp - 1), e->pp_measured);
}

/* time_head or io_tok (fn, into a value of `size` bytes) for `count` rows or tokens through the
 * memo above: k's keys, vals its IO_MEMO values; *out points to the result (scratch without the
 * memo). */
typedef hl_status (*io_fn)(const hl_sim_ctx *s, hl_acc *a, double count, void *out, hl_err *err);
static hl_status head_fn(const hl_sim_ctx *s, hl_acc *a, double rows, void *h, hl_err *err)
{
    return time_head(s, a, rows, h, err);
}
static hl_status tok_fn(const hl_sim_ctx *s, hl_acc *a, double tokens, void *e, hl_err *err)
{
    return io_tok(s, a, tokens, e, err);
}
static hl_status io_timed(const hl_sim_ctx *s, hl_acc *a, double count, io_fn fn, io_keys *k, void *vals, size_t size,
                          void *scratch, const void **out, hl_err *err)
{
    if (!io_memo_on(s, a)) {
        *out = scratch;
        return fn(s, a, count, scratch, err);
    }
    int hit, i = io_slot(k, s->job_class, count, &hit);
    void *v = (char *)vals + (size_t)i * size;
    *out = v;
    hl_status st = hit ? HL_OK : fn(s, a, count, v, err);
    if (!hit && st == HL_OK)
        k->job_class[i] = s->job_class;
    return st;
}

hl_status hl_io_ops(const hl_sim_ctx *s, hl_acc *a, double rows, double tokens, double passes, hl_err *err)
{
    a->layer_kind = 3;
    if (passes <= 0)
        return HL_OK;
    hl_io_tok es;
    hl_io_head hs;
    const void *e, *ho = NULL;
    hl_status st = io_timed(s, a, tokens, tok_fn, &tkeys, tvals, sizeof tvals[0], &es, &e, err);
    if (!st && rows > 0)
        st = io_timed(s, a, rows, head_fn, &hkeys, hvals, sizeof hvals[0], &hs, &ho, err);
    if (!st)
        hl_io_ops_timed(s, a, e, ho, passes);
    return st;
}

/* The framework's fixed cost per forward pass (scheduling, sampling, launch
 * not hidden under GPU work), `passes` times. */
void hl_acc_overhead(hl_acc *a, double per_pass, double passes)
{
    if (per_pass <= 0 || passes <= 0)
        return;
    a->ph.time_s += per_pass * passes;
    a->ph.overhead_s += per_pass * passes;
    if (a->summary)
        return;
    log_event(a, "step_overhead", 0, 0, per_pass, 0, 0);
    hl_item *it = item(a, "step_overhead", NULL, NULL);
    it->calls += passes;
    it->time_s += per_pass * passes;
}
