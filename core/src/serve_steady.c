/* The analytical steady state of a serving workload, for sweeps and capacity
 * searches: every iteration alike, mean lengths, the iteration time from the
 * same per-step model as the scheduler (step_int.h). docs/MODEL.md section 12. */
#include <math.h>
#include <string.h>

#include "err_int.h"
#include "serve_int.h"
#include "step_int.h"

/* Time of an iteration seen by one request: itself plus `others` decoding
 * sequences at mean context ctx[0] (ctx[1] within the sliding window), and `prefill` prompt tokens in chunks of at
 * most q tokens at offset (input - q) / 2 on average. */
static hl_status iter_time(hl_stepper *st, double decodes, const double ctx[2], double prefill, double q, double input,
                           double *t, hl_err *err)
{
    enum { MAX_CHUNKS = 64 };
    hl_iter_chunk ch[MAX_CHUNKS];
    int n = 0;
    if (prefill > 0) {
        n = (int)fmin(MAX_CHUNKS, ceil(prefill / q));
        for (int i = 0; i < n; i++)
            ch[i] = (hl_iter_chunk){prefill / n, fmax(0, (input - prefill / n) / 2)};
    }
    hl_iter it = {decodes, ctx[0], ctx[1], n, ch, decodes + prefill / input, prefill / input, 0};
    return hl_stepper_time(st, &it, t, err);
}

hl_status hl_serve_steady_run(const hl_serve_cfg *c0, hl_serve_steady *out, hl_err *err)
{
    if (!c0 || !out)
        return hl_fail(err, HL_EINVAL, "hl_serve_steady_run: the %s is NULL", !c0 ? "configuration" : "result");
    memset(out, 0, sizeof *out);
    hl_serve_cfg cc;
    hl_status rc = hl_serve_resolve(c0, &cc, err);
    if (rc)
        return rc;
    const hl_serve_cfg *c = &cc;
    if (c->arrival == HL_ARRIVAL_TRACE)
        return hl_fail(err, HL_EINVAL,
                       "field 'mode': the analytical mode takes a rate or a concurrency, not a trace "
                       "(simulate the trace instead)");
    hl_stepper *st;
    int64_t cap = c->token_budget > c->max_seqs ? c->token_budget : c->max_seqs;
    if ((rc = hl_stepper_new(&c->job, cap, &st, err)))
        return rc;
    double blocks = 0;
    if ((rc = hl_serve_kv_blocks(c, st, &blocks, err))) {
        hl_stepper_free(st);
        return rc;
    }
    double in = hl_serve_mean_length(c, 0), outl = hl_serve_mean_length(c, 1);
    double B = (double)c->token_budget, q = fmin(in, c->chunk > 0 ? (double)c->chunk : B);
    double window = hl_stepper_window(st), mean_ctx = in + outl / 2;
    /* window keys at the mean context (an approximation of the mean of min(ctx + 1, w)) */
    const double ctx[2] = {mean_ctx, window > 0 ? fmin(mean_ctx + 1, window) - 1 : mean_ctx};
    int closed = c->arrival == HL_ARRIVAL_CONCURRENCY;
    double lambda = closed ? 0 : c->rate, T = 0, ttft = 0, tpot = 0, e2e = 0, D = 1, P = 0;
    int k;
    /* Fixed point in the mean iteration time T (monotone from T = 0). Prompts arrive whole, so an
     * iteration carries n = lambda T in / q chunks of q tokens on average: T = T0 + n (T1 - T0), with
     * T0 a decode-only iteration (the request itself and the others decoding, lambda (out - 1) T:
     * arrivals see time averages, PASTA) and T1 the same with one chunk (derived; a test compares it
     * with the scheduler below saturation). */
    double busy = 0, n = 0;
    for (k = 0; k < 500; k++) {
        double others = lambda * fmax(outl - 1, 0) * T;
        D = 1 + others;
        double qq = fmax(1, fmin(q, B - D)), T0, T1, Tp;
        if ((rc = iter_time(st, fmin(D, (double)c->max_seqs), ctx, 0, qq, in, &T0, err)) ||
            (rc = iter_time(st, fmin(D, (double)c->max_seqs), ctx, qq, qq, in, &T1, err)) ||
            (rc = iter_time(st, fmin(others, (double)c->max_seqs), ctx, qq, qq, in, &Tp, err)))
            break;
        n = lambda * T * in / qq;
        P = n * qq;
        double Tn = T0 + n * (T1 - T0);
        /* its own prompt: ceil(in / qq) iterations with its chunk and the others' share; it waits for
         * the iteration in progress (half of one on average) when the instance is busy */
        ttft = busy * Tn / 2 + ceil(in / qq) * (Tp + n * (T1 - T0));
        tpot = Tn;
        e2e = ttft + fmax(outl - 1, 0) * tpot;
        if (closed) /* Little: the concurrency over the request lifetime */
            lambda = (double)c->concurrency / e2e;
        busy = fmin(1, lambda * e2e);
        double done = fabs(Tn - T) <= 1e-12 + 1e-9 * Tn;
        T = Tn;
        if ((done && k > 1) || D + P > 4 * B)
            break;
    }
    if (rc) {
        hl_stepper_free(st);
        return rc;
    }
    double gpus = (double)hl_stepper_gpus(st);
    hl_stepper_free(st);
    out->rate = lambda;
    out->iter_s = T;
    out->ttft_s = ttft;
    out->tpot_s = tpot;
    out->e2e_s = e2e;
    out->running = lambda * e2e;
    out->decodes = D;
    out->prefill_tokens = P;
    out->budget_util = (D + P) / B;
    double kv_tokens = lambda * (fmax(outl - 1, 0) * tpot * mean_ctx + (ttft - T / 2) * in / 2);
    out->kv_util = kv_tokens / (blocks * (double)c->block_tokens);
    out->input_tps = lambda * in;
    out->output_tps = lambda * outl;
    out->output_tps_per_gpu = out->output_tps / gpus;
    out->iterations = k + 1;
    out->stable = k < 500 && D + P <= B && D <= (double)c->max_seqs && out->kv_util <= 1 && isfinite(T);
    out->meets_slo = out->stable && out->ttft_s <= c->slo_ttft_s && out->tpot_s <= c->slo_tpot_s;
    return HL_OK;
}
