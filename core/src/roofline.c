/* Roofline operator times (formulas: docs/MODEL.md §3). */
#include "hbdlab/roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"

hl_status hl_op_time_on(const hl_op *op, const hl_gpu *gpu, hl_op_time *out, hl_err *err)
{
    if (!(op->flops >= 0) || !(op->bytes_read >= 0) || !(op->bytes_written >= 0) || isinf(op->flops) ||
        isinf(op->bytes_read) || isinf(op->bytes_written))
        return hl_fail(err, HL_EINVAL, "operator '%s': flops and bytes must be finite and >= 0 (got %g, %g, %g)",
                       op->name, op->flops, op->bytes_read, op->bytes_written);
    double peak;
    hl_status s = hl_gpu_peak(gpu, (hl_precision)op->precision, &peak, err);
    if (s)
        return s;
    double eff = op->kind == HL_OP_ATTENTION ? gpu->eff_attn : gpu->eff_gemm;
    double bw = gpu->hbm_bw * gpu->eff_mem;
    double bytes = op->bytes_read + op->bytes_written;
    /* tensor-core kernels compute whole tiles of gemm_tile_rows rows */
    double tile = gpu->gemm_tile_rows;
    double pad = op->rows >= 1 && tile > 1 ? ceil(op->rows / tile) * tile / op->rows : 1;
    out->compute_s = op->flops * pad / (peak * eff);
    out->memory_s = bytes / bw;
    out->time_s = fmax(out->compute_s, out->memory_s) + gpu->kernel_latency;
    out->intensity = bytes > 0 ? op->flops / bytes : INFINITY;
    out->ridge = peak * eff / bw;
    out->bound = out->compute_s >= out->memory_s ? HL_BOUND_COMPUTE : HL_BOUND_MEMORY;
    return HL_OK;
}

/* Bounded copy of an operator name (no snprintf: this runs per operator per simulation). */
static void set_name(hl_op *op, const char *name)
{
    size_t n = strlen(name);
    if (n >= sizeof op->name)
        n = sizeof op->name - 1;
    memcpy(op->name, name, n);
    op->name[n] = '\0';
}

void hl_op_gemm(hl_op *op, const char *name, double m, double n, double k, double act_bytes, double weight_bytes,
                double out_bytes, hl_precision math)
{
    set_name(op, name);
    op->kind = HL_OP_GEMM;
    op->precision = math;
    op->flops = 2 * m * n * k;
    op->bytes_read = m * k * act_bytes + k * n * weight_bytes;
    op->bytes_written = m * n * out_bytes;
    op->rows = m;
}

double hl_attn_pairs(double q, double c, double w)
{
    /* Query i (0-based) sits at position c+i and sees keys 0..c+i: c+i+1 keys,
     * or min(w, c+i+1) with a window. Full: sum_{i<q} (c+i+1) = q*c + q(q+1)/2. */
    if (q <= 0)
        return 0;
    double full = q * c + q * (q + 1) / 2;
    if (w <= 0 || c + q <= w)
        return full;
    /* Positions p = c+1 .. c+q keys seen min(w, p). Those with p <= w see p. */
    double lo = c + 1, hi = c + q;
    if (lo > w)
        return q * w;
    double n_small = w - lo + 1; /* p in [lo, w] */
    double small = (lo + w) * n_small / 2;
    return small + (hi - w) * w;
}

void hl_op_attention(hl_op *op, const char *name, const hl_attn_shape *s, hl_precision math)
{
    set_name(op, name);
    op->kind = HL_OP_ATTENTION;
    op->precision = math;
    double pairs = hl_attn_pairs(s->new_tokens, s->context, s->window);
    /* scores q.k (2*qk_dim per pair) and the weighted sum of values (2*v_dim). */
    op->flops = 2 * s->batch * s->heads * pairs * (s->qk_dim + s->v_dim);
    double keys = s->context + s->new_tokens;
    if (s->window > 0 && keys > s->window && s->new_tokens == 1)
        keys = s->window; /* decode with a window reads only the window */
    op->bytes_read = s->batch * (s->new_tokens * s->heads * s->qk_dim * s->act_bytes + keys * s->kv_token_bytes);
    op->bytes_written = s->batch * s->new_tokens * s->heads * s->v_dim * s->act_bytes;
    op->rows = 0;
}
