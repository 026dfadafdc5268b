/* One serving iteration (continuous batching) timed by the per-step model of
 * step.c: the same operators, attention kernels and collectives as hl_sim_run,
 * for a step that decodes some sequences and prefills chunks of others.
 * Used by the serving scheduler (serve.c). Formulas: docs/MODEL.md, "Serving". */
#ifndef HL_STEP_INT_H
#define HL_STEP_INT_H
#include <math.h>
#include <stdint.h>
#include "hbdlab/sim.h"
#include "layer_int.h"

/* A chunk of one request's prompt prefilled in this step. */
typedef struct hl_iter_chunk {
    double tokens; /* prompt tokens computed in this step (>= 1) */
    double offset; /* tokens of the same request already in the KV cache */
} hl_iter_chunk;

/* What one iteration computes: over the whole instance (all DP groups pooled,
 * hl_stepper_new), or on one DP rank (hl_stepper_new_rank). */
typedef struct hl_iter {
    double decode_seqs;     /* sequences decoding one token each */
    double decode_ctx_mean; /* mean tokens cached before this step over those sequences */
    double decode_win_mean; /* mean of min(ctx + 1, window) - 1 (sliding-window layers); = ctx mean if no window */
    int32_t n_chunks;
    const hl_iter_chunk *chunks; /* n_chunks, caller-owned */
    double logits_rows;          /* sequences sampling a token: decodes + chunks that end their prompt */
    double images; /* prompts whose vision encoder runs in this step (job image_tokens each): first chunks */
    double routed; /* per-rank stepper: tokens every DP rank of the EP group routes to the experts in this
                      lock-step pass; 0 = this rank's tokens times dp (all ranks alike) */
} hl_iter;

typedef struct hl_stepper hl_stepper;

/* Resolves the job's mapping once (its batch, input and output are ignored)
 * and caches the token-count dependent parts of a step up to max_tokens
 * tokens per step. *out is owned by the caller: hl_stepper_free. */
hl_status hl_stepper_new(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err);
void hl_stepper_free(hl_stepper *st);

/* A stepper whose iterations are one data-parallel rank's (max_tokens per rank):
 * its attention, GEMMs and collectives at the rank's tokens, the MoE experts at
 * the tokens every rank of the EP group routes in the same lock-step pass
 * (hl_iter.routed). */
hl_status hl_stepper_new_rank(const hl_job *job, int64_t max_tokens, hl_stepper **out, hl_err *err);

/* on = 0: a mixed iteration is timed without the kernels and I/O parts kept per count (each
 * built and added through the accumulator, as hl_sim_run's phases add them); the tests compare
 * the two routes bit for bit. Default 1. */
void hl_stepper_memo(hl_stepper *st, int on);

/* Time in s of one iteration on the critical path (one GPU of the slowest stage). */
hl_status hl_stepper_time(hl_stepper *st, const hl_iter *it, double *time_s, hl_err *err);
/* The same, and (tests: tests/c/test_step_memo.c) parts[0..3] = the step's accumulated time,
 * compute, memory and comm in s after the hidden comm is taken off, before the framework's
 * overhead; NaN for a decode-only step timed by its cached line. */
hl_status hl_stepper_time_parts(hl_stepper *st, const hl_iter *it, double *time_s, double parts[4], hl_err *err);

/* A decode-only iteration of a fixed number of sequences as a function of their
 * mean context: the cached line of hl_stepper_time's hot path, for a caller
 * that times many such iterations (serve.c's decode run-ahead). */
typedef struct hl_decode_fn {
    double base_time, base_ops, comm; /* s: every operator but attention; its compute + memory; its comm */
    double ac, bc, am, bm, lat;       /* one attention kernel: max(ac + bc c, am + bm c) + lat s */
    double full, sliding, stages;     /* full and sliding-window layers, pipeline stage slots */
    double overlap, overhead;         /* decode overlap of comm, framework s per step */
    double blend, alat, units;        /* blend > 1: the kernel is alat + (line^p + units^p)^(1/p), p = blend */
} hl_decode_fn;

/* alat + (x^p + u^p)^(1/p) of a blended decode kernel (roofline.c's power mean, MODEL.md section 3). */
static inline double hl_decode_blend(const hl_decode_fn *f, double x)
{
    double hi = x > f->units ? x : f->units;
    return hi > 0 ? f->alat + hi * pow(pow(x / hi, f->blend) + pow(f->units / hi, f->blend), 1 / f->blend) : f->alat;
}

/* The line of `seqs` decoding sequences (an iteration hl_stepper_time would time
 * as hl_iter{seqs, c, w, 0, NULL, seqs, 0, 0}); *ok = 0 when that iteration
 * does not take the cached line (sparse-attention indexer, seqs over the cache). */
hl_status hl_stepper_decode_fn(hl_stepper *st, double seqs, hl_decode_fn *f, int *ok, hl_err *err);

/* s of the iteration whose attention kernel takes max(xc, yc) (full layers) and max(xw, yw)
 * (sliding-window layers) s before its launch: the rest of hl_decode_fn_time. */
static inline double hl_decode_fn_total(const hl_decode_fn *f, double xc, double yc, double xw, double yw)
{
    double att =
        ((xc > yc ? xc : yc) + f->lat) * f->full * f->stages + ((xw > yw ? xw : yw) + f->lat) * f->sliding * f->stages;
    double time = f->base_time + att, ops = f->base_ops + att;
    return time - hl_comm_hidden(f->overlap, f->comm, ops) + f->overhead;
}

/* s of that iteration at mean context c and mean windowed context w (the
 * expression of hl_stepper_time's hot path, which calls it: the same bits). */
static inline double hl_decode_fn_time(const hl_decode_fn *f, double c, double w)
{
    /* max(x, y) as fmax for the finite times here, without libm's out-of-line call */
    double xc = f->ac + f->bc * c, yc = f->am + f->bm * c, xw = f->ac + f->bc * w, yw = f->am + f->bm * w;
    if (f->blend > 1) {
        xc = hl_decode_blend(f, xc);
        yc = hl_decode_blend(f, yc);
        xw = hl_decode_blend(f, xw);
        yw = hl_decode_blend(f, yw);
    }
    return hl_decode_fn_total(f, xc, yc, xw, yw);
}

/* B of KV cache one GPU holds per token of a sequence, all its layers (no window); and
 * the mapping's GPU count and data-parallel groups. */
double hl_stepper_kv_token_bytes(const hl_stepper *st);
/* B of linear-attention state one GPU holds per sequence (0 without linear layers). */
double hl_stepper_state_bytes(const hl_stepper *st);
int64_t hl_stepper_gpus(const hl_stepper *st);
int64_t hl_stepper_dp(const hl_stepper *st);
double hl_stepper_window(const hl_stepper *st);

#endif
