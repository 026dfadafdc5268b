/* Roofline operator times (formulas: docs/MODEL.md §3). */
#include "hbdlab/roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "powfix_int.h"
#include "powpos_int.h"
#include "roofline_int.h"

typedef hl_gemm_class gemm_class;

hl_gemm_class hl_gemm_class_of(const hl_gpu *g, hl_precision p)
{
    gemm_class c = {g->eff_gemm, g->eff_mem, 0, g->gemm_k_latency, 0, g->grouped_k0, g->gemm_k0};
    if (p != HL_FP8 && p != HL_INT8 && p != HL_FP4)
        return c;
    c.eff_c = g->eff_gemm_fp8 > 0 ? g->eff_gemm_fp8 : c.eff_c;
    c.eff_m = g->eff_mem_fp8 > 0 ? g->eff_mem_fp8 : c.eff_m;
    c.latency = g->gemm_latency_fp8;
    c.k_latency = g->gemm_k_latency_fp8 > 0 ? g->gemm_k_latency_fp8 : c.k_latency;
    c.quant_bytes = g->quant_bytes_fp8;
    c.k0 = g->grouped_k0_fp8 > 0 ? g->grouped_k0_fp8 : c.k0;       /* FP4 too */
    c.dense_k0 = g->gemm_k0_fp8 > 0 ? g->gemm_k0_fp8 : c.dense_k0; /* FP4 too */
    if (p != HL_FP4)
        return c;
    c.eff_c = g->eff_gemm_fp4 > 0 ? g->eff_gemm_fp4 : c.eff_c;
    c.eff_m = g->eff_mem_fp4 > 0 ? g->eff_mem_fp4 : c.eff_m;
    c.latency = g->gemm_latency_fp4 > 0 ? g->gemm_latency_fp4 : c.latency;
    c.k_latency = g->gemm_k_latency_fp4 > 0 ? g->gemm_k_latency_fp4 : c.k_latency;
    c.quant_bytes = g->quant_bytes_fp4 > 0 ? g->quant_bytes_fp4 : c.quant_bytes;
    return c;
}

/* Whether pow(r, p) < 2^-54 for sure, 0 < r < 1 and p >= 1 (derived): r^p <= r^k, k = floor(p)
 * capped at 64, and r^k by repeated squaring is within 2 k ulp of itself, so r^k <= 2^-55
 * computed leaves the power's own error room (hl_pow_pos: (2 |p ln r| + 4) 2^-52 relative, under
 * 2e-13 wherever it does not fall back to libm pow, whose error is under 1 ulp). */
static int term_vanishes(double r, double p)
{
    if (!(r > 0 && r < 1 && p >= 1))
        return 0;
    unsigned k = p >= 64 ? 64 : (unsigned)p;
    double x = r, y = 1;
    for (; k; k >>= 1, x *= x)
        if (k & 1)
            y *= x;
    return y <= 0x1p-55;
}

/* (a^p + b^p + c^p)^(1/p), scaled by the largest so nothing overflows; p = 0: the max. */
double hl_blend(double a, double b, double c, double p)
{
    double hi = hl_fmax(a, hl_fmax(b, c));
    if (p <= 0 || hi <= 0)
        return hi;
    if (isinf(hi)) /* inf / inf: NaN, as it always was */
        return hi * pow(pow(a / hi, p) + pow(b / hi, p) + pow(c / hi, p), 1 / p);
    /* one largest term and the others 0 or under 2^-54 once scaled: their sum below rounds to
     * 1 (each at most 2^-53, the half ulp of 1, with the ties to even), pow(1, 1/p) = 1, so the
     * result is hi, the same bits as the pow calls below give. Tried from p = 4 only: below, a
     * term must be under 2^-18 of the largest to vanish, which a GEMM's (p ~ 2) never are, and
     * the check would cost more than it saves. */
    if (p >= 4 && (a == hi) + (b == hi) + (c == hi) == 1 && (a == hi || a == 0 || term_vanishes(a / hi, p)) &&
        (b == hi || b == 0 || term_vanishes(b / hi, p)) && (c == hi || c == 0 || term_vanishes(c / hi, p)))
        return hi;
    /* the largest term is 1^p = 1 and a zero one 0^p = 0, exactly: written so, one or two of
     * the four powers fewer. The powers are hl_pow_pos (powpos.c: within (2 |p ln r| + 4) 2^-52 of
     * r^p, ~45 instructions against glibc pow's ~125; a blend's result within ~1e-15 of pow's,
     * since a term r^p's error r^p |p ln r| 2^-52 is at most 2^-52 / e of the sum), and
     * hl_pow_pos(1, 1/p) = 1 exactly, so the vanishing-terms shortcut above still gives the
     * same bits as this path. */
    hl_powfix_pair *f = hl_powfix_of(p);
    if (!f) {
        double ta = a == hi ? 1 : a == 0 ? 0 : hl_pow_pos(a / hi, p);
        double tb = b == hi ? 1 : b == 0 ? 0 : hl_pow_pos(b / hi, p);
        double tc = c == hi ? 1 : c == 0 ? 0 : hl_pow_pos(c / hi, p);
        return hi * hl_pow_pos(ta + tb + tc, 1 / p);
    }
    /* 1 <= p <= 4 (the GEMM blends: 1.7-2.4 in the presets): the same sum by the per-exponent
     * tables of powfix.c, within 3 2^-52 of r^p (the tighter bound); hl_powfix(_, 1) = 1 exactly,
     * as the shortcut above needs */
    double ta = a == hi ? 1 : a == 0 ? 0 : hl_powfix(&f->pow, a / hi);
    double tb = b == hi ? 1 : b == 0 ? 0 : hl_powfix(&f->pow, b / hi);
    double tc = c == hi ? 1 : c == 0 ? 0 : hl_powfix(&f->pow, c / hi);
    return hi * hl_powfix(&f->root, ta + tb + tc);
}

void hl_gemm_classes_of(const hl_gpu *g, hl_gemm_classes *k)
{
    k->c[0] = hl_gemm_class_of(g, HL_BF16); /* every precision but the quantised ones */
    k->c[1] = hl_gemm_class_of(g, HL_FP8);  /* FP8 and INT8: the same fallbacks */
    k->c[2] = hl_gemm_class_of(g, HL_FP4);
}

hl_status hl_op_time_on(const hl_op *op, const hl_gpu *gpu, hl_op_time *out, hl_err *err)
{
    return hl_op_time_body(op, gpu, NULL, 0, out, err);
}

hl_status hl_op_time_lean(const hl_op *op, const hl_gpu *gpu, const hl_gemm_classes *k, hl_op_time *out, hl_err *err)
{
    return hl_op_time_body(op, gpu, k, 1, out, err);
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
    hl_op_gemm_dims(op, m, n, k, act_bytes, weight_bytes, out_bytes, math);
}

void hl_op_moe_experts(hl_op *up, hl_op *down, const hl_moe_shape *s, hl_precision math)
{
    hl_moe_experts_ops(up, down, s, math);
}

void hl_op_moe_permute(hl_op *op, const hl_moe_shape *s, double bytes_per_row, hl_precision math)
{
    set_name(op, "moe_permute");
    op->kind = HL_OP_ELEMENTWISE;
    op->precision = math;
    op->flops = 0;
    double bytes = bytes_per_row * s->tokens_per_expert * s->local_experts * s->hidden;
    op->bytes_read = bytes / 2; /* as many bytes written as read: a permuted copy out, a weighted sum back */
    op->bytes_written = bytes / 2;
    op->rows = s->tokens_per_expert * s->local_experts;
    op->n = op->k = op->groups = 0;
    op->units = op->ctx = op->q_units = 0;
    op->fixed_s = 0;
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
    hl_op_attention_dims(op, s, math);
}

void hl_attn_decode_init(hl_attn_decode *d, const hl_attn_shape *s, hl_precision math, const hl_gpu *gpu)
{
    /* hl_op_time_on's attention branch for one query row (rows = 1: no tile padding, pad = 1 and
     * flops * 1 = flops) and no blend, on hl_op_attention's counts (no fixed_s: fixed is
     * kernel_latency + 0): its factors that do not depend on the context, each the same product */
    memset(d, 0, sizeof *d);
    d->ok = s->new_tokens == 1 && s->window == 0 && !(gpu->attn_blend > 1) && (unsigned)math < HL_PRECISION_COUNT &&
            gpu->peak_flops[math] > 0;
    if (!d->ok)
        return;
    hl_attn_line_of(s, &d->line);
    d->ok = d->line.written >= 0 && d->line.written < INFINITY;
    d->peak_eff = gpu->peak_flops[math] * gpu->eff_attn;
    d->bw = hl_attn_bw(gpu);
    d->part = gpu->attn_latency + hl_attn_units_s(gpu, s->batch * s->kv_heads, s->batch * s->heads);
    d->fixed = gpu->kernel_latency + 0;
    d->ridge = d->peak_eff / d->bw;
}

/* A blended decode kernel (attn_blend = p > 1, one query row) takes, in hl_op_time_on,
 *   memory_s  = attn_latency + blend(m, U, 0, p),  compute_s = attn_latency + blend(c, U, 0, p)
 * with m = bytes / bw, c = flops / (peak eff_attn), U = units attn_unit_s, and the time
 * max(compute_s, memory_s). Where the KV stream m dwarfs U and c, those bits are
 * attn_latency + m exactly (derived; IEEE 754 round to nearest, C11 F.10.4.4):
 *  - r = U / m <= R with R^k < 2^-54, k = floor(p) (1..20, hw.c's range): r^p <= r^k < 2^-54,
 *    so r^p < 2^-53 even with the power's error (hl_pow_pos: under 2e-13); 1 + r^p + 0 rounds
 *    to 1, pow(1, 1/p) = 1 and blend(m, U, 0, p) = m;
 *  - 2 max(c, U) <= m: blend(c, U, 0, p) = max(c, U) t^(1/p) with t <= 2 and
 *    t^(1/p) <= 2 (1/p < 1; hl_pow_pos's error there, under 5 2^-52, stays below the margin
 *    2 - 2^(1/p) ~ 1.39 (p - 1) for p > 1 + 1e-15), so it is <= m, and adding attn_latency keeps the order:
 *    the max is memory_s. */
void hl_attn_stream_init(hl_attn_stream *a, const hl_attn_shape *s, hl_precision math, const hl_gpu *gpu)
{
    double p = gpu->attn_blend;
    a->ok = p > 1 && s->new_tokens <= 1 && (unsigned)math < HL_PRECISION_COUNT && gpu->peak_flops[math] > 0;
    if (!a->ok)
        return;
    hl_attn_line_of(s, &a->line);
    a->bw = hl_attn_bw(gpu);
    a->peak_eff = gpu->peak_flops[math] * gpu->eff_attn;
    a->units = hl_attn_units_s(gpu, s->batch * s->kv_heads, s->batch * s->heads);
    a->latency = gpu->attn_latency;
    /* R = 2^(-54/k) less a margin for exp2's rounding and r's (each under 1 ulp, raised to k <= 20);
     * both depend on p only: kept for the thread's last p (two exp2 calls a decode sum otherwise) */
    static _Thread_local double last_p, last_r_max, last_root2; /* last_p 0: none (p > 1 here) */
    if (p != last_p) {
        last_r_max = exp2(-54.0 / floor(hl_fmin(p, 20))) * (1 - 1e-9);
        last_root2 = exp2(1 / p) * (1 + 1e-12);
        last_p = p;
    }
    a->r_max = last_r_max;
    a->root2 = last_root2;
}

/* The compute side of a decode sum, bounded (derived). With c(x) = flops(ctx0 + tau x) /
 * (peak eff_attn), affine in x and >= 0, hl_op_time_on's compute_s is, but for rounding,
 *   g(x) = attn_latency + (c(x)^p + U^p)^(1/p)      (blend(c, U, 0, p), U = units attn_unit_s)
 * a p-norm of an affine map: convex in x. So the line through g(0) and g(1), at a whole i >= 0,
 * is at most max(g(0), g(1), g(i)) (beyond 1 a secant of a convex function runs below it; at 0
 * and 1 it is g), and each g(x) <= attn_latency + 2^(1/p) max(c(x), U). The computed c_0 + (c_1 -
 * c_0) i differs from that line by the blend's error (under 1e-14 relative: hl_pow_pos's bound
 * in blend(), and libm pow's where it falls back) carried through i: under (i + 2) 1e-12 of
 * attn_latency + 2 max(c, U) with a wide margin. mem beyond the bound and that margin is >= the
 * computed line for sure. */
int hl_attn_stream_mem_side(const hl_attn_stream *a, const double flops01[2], double ctx0, double tau, double i,
                            double mem)
{
    if (!a->ok || !(i >= 0 && i <= 1e12))
        return 0;
    double read, flops[3] = {flops01[0], flops01[1], 0}; /* steps 0 and 1 from the caller, step i here */
    hl_attn_counts(&a->line, ctx0 + tau * i, &flops[2], &read);
    double big = a->units;
    for (int k = 0; k < 3; k++) {
        double c = flops[k] / a->peak_eff;
        if (!(c >= 0 && c < INFINITY))
            return 0;
        big = hl_fmax(big, c);
    }
    double upper = (a->latency + a->root2 * big) * (1 + 1e-12);
    double margin = (i + 2) * 1e-12 * (a->latency + 2 * big);
    return mem > upper + margin;
}
