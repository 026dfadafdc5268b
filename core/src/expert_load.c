/* Expert load from routing statistics: routing shares (uniform, Zipf, measured),
 * placement of experts and replicas on EP ranks (static or DeepSeek's EPLB),
 * and the expected busiest-rank load and expert hits of one step. */
#include "hbdlab/expert_load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"

/* splitmix64 (Steele, Lea & Flood 2014): the fixed permutation of Zipf ranks. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static hl_status check_counts(int64_t experts, double topk, hl_err *err)
{
    if (experts < 1 || experts > HL_EXPERTS_MAX)
        return hl_fail(err, HL_EINVAL, "routing: %lld experts is outside [1, %d]", (long long)experts,
                       (int)HL_EXPERTS_MAX);
    if (!(topk >= 1 && topk <= (double)experts))
        return hl_fail(err, HL_EINVAL, "routing: topk = %g is outside [1, %lld experts]", topk, (long long)experts);
    return HL_OK;
}

hl_status hl_routing_zipf(double skew, int64_t experts, double topk, double *share, hl_err *err)
{
    if (!share)
        return hl_fail(err, HL_EINVAL, "hl_routing_zipf: the share output is NULL");
    hl_status st = check_counts(experts, topk, err);
    if (st)
        return st;
    if (!(skew >= 0 && skew <= 100))
        return hl_fail(err, HL_EINVAL, "field 'routing_skew': %g is outside [0, 100] (Zipf exponent)", skew);
    /* popularity rank i (0-based) weighs (i + 1)^-skew; water-fill under the cap 1/k
     * in decreasing order: the leading ranks are clamped while their proportional
     * share of the mass left exceeds the cap */
    double cap = 1 / topk, mass = 1, wsum = 0;
    double w[HL_EXPERTS_MAX], f[HL_EXPERTS_MAX];
    for (int64_t i = 0; i < experts; i++)
        wsum += w[i] = pow((double)(i + 1), -skew);
    int64_t i = 0;
    for (; i < experts && mass * w[i] / wsum > cap; i++) {
        f[i] = cap;
        mass -= cap;
        wsum -= w[i];
    }
    for (; i < experts; i++)
        f[i] = mass * w[i] / wsum;
    /* popularity rank -> expert id: Fisher-Yates with a fixed seed */
    int32_t perm[HL_EXPERTS_MAX];
    for (int64_t e = 0; e < experts; e++)
        perm[e] = (int32_t)e;
    uint64_t seed = 0x5eed;
    for (int64_t e = experts - 1; e > 0; e--) {
        int64_t r = (int64_t)(splitmix64(&seed) % (uint64_t)(e + 1));
        int32_t t = perm[e];
        perm[e] = perm[r];
        perm[r] = t;
    }
    for (int64_t e = 0; e < experts; e++)
        share[perm[e]] = f[e];
    return HL_OK;
}

hl_status hl_routing_check(const double *share, int64_t n, int64_t experts, double topk, const char *field, hl_err *err)
{
    if (!share && n > 0)
        return hl_fail(err, HL_EINVAL, "hl_routing_check: %lld shares from a NULL vector", (long long)n);
    hl_status st = check_counts(experts, topk, err);
    if (st)
        return st;
    if (n != experts)
        return hl_fail(err, HL_EINVAL, "field '%s': %lld shares for a model of %lld experts (one share per expert)",
                       field, (long long)n, (long long)experts);
    double sum = 0;
    for (int64_t e = 0; e < n; e++) {
        if (!isfinite(share[e]) || share[e] < 0)
            return hl_fail(err, HL_EINVAL,
                           "field '%s': entry %lld (counting from 1) is %g (allowed: a finite share >= 0)", field,
                           (long long)e + 1, share[e]);
        if (share[e] * topk > 1 + 1e-9)
            return hl_fail(err, HL_EINVAL,
                           "field '%s': entry %lld (counting from 1) is %g, above 1/topk = %g (a token picks "
                           "an expert at most once)",
                           field, (long long)e + 1, share[e], 1 / topk);
        sum += share[e];
    }
    if (fabs(sum - 1) > 1e-6)
        return hl_fail(err, HL_EINVAL,
                       "field '%s': shares sum to %.9g, not 1 (each is the expert's fraction of the routed "
                       "token-expert picks)",
                       field, sum);
    return HL_OK;
}

/* EPLB's balanced_packing: slots in decreasing weight (stable on ties: index
 * order), each to the lightest rank that still has room (the first on ties). */
static void balanced_packing(hl_expert_layout *lay, const double *weight, const int32_t *expert_of)
{
    int64_t S = lay->slots, R = lay->ranks, per = S / R;
    int32_t order[HL_EXPERT_SLOTS_MAX];
    for (int64_t s = 0; s < S; s++)
        order[s] = (int32_t)s;
    for (int64_t a = 1; a < S; a++) { /* insertion sort: S is at most a few thousand, run once per layout */
        int32_t v = order[a];
        int64_t b = a;
        for (; b > 0 && weight[order[b - 1]] < weight[v]; b--)
            order[b] = order[b - 1];
        order[b] = v;
    }
    int64_t filled[HL_EXPERT_SLOTS_MAX] = {0};
    for (int64_t r = 0; r < R; r++)
        lay->rank_share[r] = 0;
    for (int64_t a = 0; a < S; a++) {
        int64_t best = -1;
        for (int64_t r = 0; r < R; r++)
            if (filled[r] < per && (best < 0 || lay->rank_share[r] < lay->rank_share[best]))
                best = r;
        int64_t at = best * per + filled[best]++;
        lay->slot_expert[at] = expert_of[order[a]];
        lay->slot_share[at] = weight[order[a]];
        lay->rank_share[best] += weight[order[a]];
    }
}

hl_status hl_expert_layout_init(hl_expert_layout *lay, const double *share, int64_t experts, int64_t redundant,
                                int64_t ranks, double topk, int32_t eplb, hl_err *err)
{
    if (!lay)
        return hl_fail(err, HL_EINVAL, "hl_expert_layout_init: the layout is NULL");
    hl_status st = check_counts(experts, topk, err);
    if (st)
        return st;
    int64_t S = experts + redundant;
    if (redundant < 0 || S > HL_EXPERT_SLOTS_MAX)
        return hl_fail(err, HL_EINVAL,
                       "field 'redundant_experts': %lld experts + %lld replicas is outside [%lld, %d] slots",
                       (long long)experts, (long long)redundant, (long long)experts, (int)HL_EXPERT_SLOTS_MAX);
    if (ranks < 1 || S % ranks != 0)
        return hl_fail(err, HL_EINVAL, "expert layout: ep = %lld does not divide %lld expert slots", (long long)ranks,
                       (long long)S);
    if (share && (st = hl_routing_check(share, experts, experts, topk, "expert_freq", err)))
        return st;
    memset(lay, 0, sizeof *lay);
    lay->experts = experts;
    lay->slots = S;
    lay->ranks = ranks;
    lay->topk = topk;
    lay->uniform = share == NULL && redundant == 0;
    double f[HL_EXPERTS_MAX];
    for (int64_t e = 0; e < experts; e++)
        f[e] = share ? share[e] : 1 / (double)experts;
    if (!eplb && redundant == 0) { /* static placement: expert e in slot e */
        int64_t per = S / ranks;
        for (int64_t s = 0; s < S; s++) {
            lay->slot_expert[s] = (int32_t)s;
            lay->slot_share[s] = f[s];
            lay->rank_share[s / per] += f[s];
        }
        return HL_OK;
    }
    /* EPLB replicate_experts: replica i goes to argmax share / copies (the first on ties) */
    int32_t copies[HL_EXPERTS_MAX], expert_of[HL_EXPERT_SLOTS_MAX];
    double weight[HL_EXPERT_SLOTS_MAX];
    for (int64_t e = 0; e < experts; e++) {
        copies[e] = 1;
        expert_of[e] = (int32_t)e;
    }
    for (int64_t s = experts; s < S; s++) {
        int64_t best = 0;
        for (int64_t e = 1; e < experts; e++)
            if (f[e] / copies[e] > f[best] / copies[best])
                best = e;
        expert_of[s] = (int32_t)best;
        copies[best]++;
    }
    for (int64_t s = 0; s < S; s++)
        weight[s] = f[expert_of[s]] / copies[expert_of[s]]; /* a hot expert's picks split evenly over its copies */
    balanced_packing(lay, weight, expert_of);
    return HL_OK;
}

/* Binomial(M, p) pmf at x via lgamma (the start of a recurrence). */
static double binom_pmf(double M, double p, double x)
{
    if (p <= 0)
        return x == 0;
    if (p >= 1)
        return x == M;
    return exp(lgamma(M + 1) - lgamma(x + 1) - lgamma(M - x + 1) + x * log(p) + (M - x) * log1p(-p));
}

/* `count` ranks with the same share p: Y ~ Poisson(lam = M p), its pmf and CDF
 * walked upward in x, with the pmf at x-1..x-3 kept for the truncated moments. */
typedef struct rank_group {
    double p, count, lam, sd; /* share, ranks with it, mean picks M p, Poisson sd sqrt(lam) */
    double bsd;               /* binomial sd sqrt(lam (1 - p)) of the normal approximation */
    double x, pmf[4], cdf;    /* pmf[j] = P(Y = x - j); cdf = P(Y <= x) */
} rank_group;

static void group_start(rank_group *g, double x0)
{
    g->x = x0;
    memset(g->pmf, 0, sizeof g->pmf);
    g->pmf[0] = exp(x0 * log(g->lam) - g->lam - lgamma(x0 + 1));
    g->cdf = g->pmf[0]; /* mass below x0 (13 sd under the mean) neglected: < 1e-38 */
}

static void group_step(rank_group *g)
{
    double next = g->pmf[0] * g->lam / (g->x + 1);
    memmove(g->pmf + 1, g->pmf, 3 * sizeof g->pmf[0]);
    g->pmf[0] = next;
    g->x += 1;
    g->cdf = hl_fmin(1, g->cdf + next);
}

/* P(max_r L_r <= x) for (L_r) ~ Multinomial(M, p) by Levin's representation
 * (B. Levin, "A representation for multinomial cumulative distribution
 * functions", Ann. Statist. 9(5), 1981): with Y_r ~ Poisson(M p_r) independent
 * and W the sum of the Y_r each truncated to [0, x],
 * P = M! / (M^M e^-M) * prod_r P(Y_r <= x) * P(W = M), with P(W = M) from the
 * Edgeworth expansion of W's density (cumulants from the truncated Poisson
 * factorial moments E[Z (Z-1) .. (Z-j+1)] = lam^j P(Y <= x - j) / P(Y <= x)).
 * Every group's walk stands at x. */
static double levin_cdf(const rank_group *g, int64_t ng, double M, double log_pref)
{
    double logp = log_pref, K1 = 0, K2 = 0, K3 = 0, K4 = 0;
    for (int64_t i = 0; i < ng; i++) {
        double lam = g[i].lam, n = g[i].count, P[5];
        P[0] = g[i].cdf;
        if (P[0] <= 0)
            return 0;
        for (int j = 1; j < 5; j++)
            P[j] = hl_fmax(0, P[j - 1] - g[i].pmf[j - 1]);
        logp += n * log(P[0]);
        double m1 = lam * P[1] / P[0], f2 = lam * lam * P[2] / P[0];
        double f3 = lam * lam * lam * P[3] / P[0], f4 = lam * lam * lam * lam * P[4] / P[0];
        double e2 = f2 + m1, e3 = f3 + 3 * f2 + m1, e4 = f4 + 6 * f3 + 7 * f2 + m1;
        double var = hl_fmax(0, e2 - m1 * m1);
        double mu3 = e3 - 3 * m1 * e2 + 2 * m1 * m1 * m1;
        double mu4 = e4 - 4 * m1 * e3 + 6 * m1 * m1 * e2 - 3 * m1 * m1 * m1 * m1;
        K1 += n * m1;
        K2 += n * var;
        K3 += n * mu3;
        K4 += n * (mu4 - 3 * var * var);
    }
    if (K2 <= 0)
        return fabs(K1 - M) < 0.5 ? hl_fmin(1, exp(logp)) : 0;
    double sd = sqrt(K2), z = (M - K1) / sd, g1 = K3 / (K2 * sd), g2 = K4 / (K2 * K2);
    double z2 = z * z, he3 = z * z2 - 3 * z, he4 = z2 * z2 - 6 * z2 + 3;
    double he6 = z2 * z2 * z2 - 15 * z2 * z2 + 45 * z2 - 15;
    double dens = exp(-z2 / 2) / (2.5066282746310002 /* sqrt(2 pi) */ * sd) *
                  (1 + g1 / 6 * he3 + g2 / 24 * he4 + g1 * g1 / 72 * he6);
    return hl_fmin(1, hl_fmax(0, exp(logp) * dens));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* E[max] of independent normal loads N(lam_g, lam_g (1 - p_g)), n_g of each:
 * x_lo + integral over [x_lo, x_hi] of 1 - prod Phi((x - mu_g) / sd_g)^n_g
 * (Simpson, 512 intervals over at most 26 sd). At these counts (sd >= 30) the
 * multinomial's negative correlation moves E[max] by under 0.2% (the
 * Monte-Carlo comparison of tests/c/test_expert_load.c). */
static double busiest_normal(const rank_group *g, int64_t ng, double x_lo, double x_hi)
{
    enum { N = 512 };
    double h = (x_hi - x_lo) / N, sum = 0;
    for (int i = 0; i <= N; i++) {
        double x = x_lo + h * i, prod = 1;
        for (int64_t k = 0; k < ng && prod > 0; k++)
            prod *= pow(0.5 * erfc(-(x - g[k].lam) / (g[k].bsd * 1.4142135623730951)), g[k].count);
        double w = i == 0 || i == N ? 1 : (i % 2 ? 4 : 2);
        sum += w * (1 - prod);
    }
    return x_lo + sum * h / 3;
}

/* E[max of n independent standard normals] = -13 + integral over [-13, 13] of 1 - Phi(z)^n
 * (Phi(-13)^n and 1 - Phi(13)^n are below 1e-38): Simpson with 4,096 intervals, computed once
 * per n on each thread. Equal ranks (uniform routing, the default) are then
 * lam + sd * e(n): the integral of busiest_normal in standard units, without its cost in every
 * MoE layer pass (a sweep over token counts would pay ~20 us a point). */
static double expected_max_std(int64_t n)
{
    static _Thread_local double cache[HL_EXPERT_SLOTS_MAX + 1];
    if (n < 1 || n > HL_EXPERT_SLOTS_MAX)
        return 0;
    if (cache[n] != 0 || n == 1) /* e(1) = 0 */
        return cache[n];
    enum { N = 4096 };
    double lo = -13, hi = 13, h = (hi - lo) / N, sum = 0;
    for (int i = 0; i <= N; i++) {
        double z = lo + h * i;
        double w = i == 0 || i == N ? 1 : (i % 2 ? 4 : 2);
        sum += w * (1 - pow(0.5 * erfc(-z / 1.4142135623730951), (double)n));
    }
    cache[n] = lo + sum * h / 3;
    return cache[n];
}

/* The ranks' shares in groups of equal ones, in increasing order (p[i], count[i], i < *ng_out);
 * 1 when one rank takes every pick (the busiest load is then M). */
static int group_shares_uncached(const hl_expert_layout *lay, double *p, double *count, int64_t *ng_out)
{
    int64_t R = lay->ranks, ng = 0;
    double sh[HL_EXPERT_SLOTS_MAX];
    memcpy(sh, lay->rank_share, (size_t)R * sizeof sh[0]);
    int64_t sorted = 1; /* equal shares (uniform routing, the default) are in order already: no qsort */
    while (sorted < R && sh[sorted - 1] <= sh[sorted])
        sorted++;
    if (sorted < R)
        qsort(sh, (size_t)R, sizeof sh[0], cmp_double);
    *ng_out = 0;
    for (int64_t r = 0; r < R; r++) {
        if (sh[r] <= 0)
            continue; /* a rank no pick reaches: L = 0 */
        if (sh[r] >= 1 - 1e-15)
            return 1;
        if (ng > 0 && fabs(sh[r] - p[ng - 1]) <= 1e-12 * sh[r]) {
            count[ng - 1]++;
            continue;
        }
        p[ng] = sh[r];
        count[ng] = 1;
        ng++;
    }
    *ng_out = ng;
    return 0;
}

/* group_shares_uncached of the last layout this thread grouped, keyed by its shares bit for
 * bit: every MoE layer pass of a sweep over input asks again for the same layout with a new
 * token count (a compare of R doubles instead of the grouping). */
typedef struct groups_memo {
    int64_t ranks; /* 0: empty */
    int one;       /* group_shares_uncached's result */
    int64_t ng;
    double share[HL_EXPERT_SLOTS_MAX];
    double p[HL_EXPERT_SLOTS_MAX], count[HL_EXPERT_SLOTS_MAX];
} groups_memo;
static _Thread_local groups_memo gmemo;

static const groups_memo *group_shares(const hl_expert_layout *lay)
{
    groups_memo *m = &gmemo;
    int64_t R = lay->ranks;
    if (m->ranks != R || memcmp(m->share, lay->rank_share, (size_t)R * sizeof m->share[0]) != 0) {
        m->ranks = 0;
        m->one = group_shares_uncached(lay, m->p, m->count, &m->ng);
        memcpy(m->share, lay->rank_share, (size_t)R * sizeof m->share[0]);
        m->ranks = R;
    }
    return m;
}

/* busiest_load of M > 0 picks over the groups gm (more than one, or one of binomial sd under 30):
 * out of line, so that the closed form below does not set up their ~200 KB of walks. */
__attribute__((noinline)) static double busiest_grouped(const groups_memo *gm, double M)
{
    rank_group g[HL_EXPERT_SLOTS_MAX];
    int64_t ng = gm->ng;
    for (int64_t i = 0; i < ng; i++)
        g[i] = (rank_group){.p = gm->p[i], .count = gm->count[i]};
    /* below x_lo the busiest group's CDF is ~0 (P(max > x) = 1); above x_hi every CDF is ~1 */
    double x_lo = 0, x_hi = 0, sd_min = HUGE_VAL;
    for (int64_t i = 0; i < ng; i++) {
        g[i].lam = M * g[i].p;
        g[i].sd = sqrt(g[i].lam);
        g[i].bsd = sqrt(g[i].lam * (1 - g[i].p));
        sd_min = hl_fmin(sd_min, g[i].bsd);
    }
    if (sd_min >= 30 && ng == 1) /* large counts: a normal rank (binomial sd); x_lo, x_hi unused */
        return g[0].lam + g[0].bsd * expected_max_std(g[0].count);
    for (int64_t i = 0; i < ng; i++) {
        x_lo = hl_fmax(x_lo, floor(g[i].lam - 13 * g[i].sd - 1));
        x_hi = hl_fmax(x_hi, ceil(g[i].lam + 13 * g[i].sd + 13));
    }
    x_lo = hl_fmax(0, x_lo);
    x_hi = hl_fmin(M, x_hi);
    if (sd_min >= 30) /* large counts: normal ranks (binomial sd), the correlation neglected */
        return busiest_normal(g, ng, x_lo, x_hi);
    for (int64_t i = 0; i < ng; i++) {
        group_start(&g[i], hl_fmax(0, floor(g[i].lam - 13 * g[i].sd - 1)));
        while (g[i].x < x_lo)
            group_step(&g[i]);
    }
    /* E[max] = sum_{x >= 0} P(max > x) */
    double log_pref = lgamma(M + 1) - M * log(M) + M, sum = x_lo;
    for (double x = x_lo; x < x_hi; x++) {
        sum += 1 - levin_cdf(g, ng, M, log_pref);
        for (int64_t i = 0; i < ng; i++)
            group_step(&g[i]);
    }
    return sum;
}

/* Two ranks, exact: L_1 = M - L_0, L_0 ~ Binomial(M, p), p rank 0's share; out of line (its walk
 * keeps many values live: busiest_load's other cases need no such frame). */
__attribute__((noinline)) static double busiest_two(double M, double p)
{
    double sd = sqrt(M * p * (1 - p)), sum = 0;
    if (p <= 0 || p >= 1)
        return M;
    double lo = hl_fmax(0, floor(M * p - 13 * sd - 1)), hi = hl_fmin(M, ceil(M * p + 13 * sd + 1));
    double pmf = binom_pmf(M, p, lo);
    for (double x = lo; x <= hi; x++) {
        sum += pmf * hl_fmax(x, M - x);
        pmf = pmf * (M - x) / (x + 1) * p / (1 - p);
    }
    return sum;
}

static double busiest_load(const hl_expert_layout *lay, double tokens)
{
    double M = floor(tokens * lay->topk + 0.5); /* routed picks in the step, a whole number */
    int64_t R = lay->ranks;
    if (M <= 0)
        return 0;
    if (R == 1)
        return M;
    if (R == 2)
        return busiest_two(M, lay->rank_share[0]);
    /* groups of ranks with equal shares (the product over ranks is a few powers). A uniform layout
     * (hl_expert_layout_init: no histogram, no replicas) is one group of all R ranks: each rank's
     * share is the sum of `slots / R` equal slot shares, so every rank's has the same bits, and
     * with R >= 3 it is below 1 - 1e-15 (group_shares would find the same, without the compare). */
    const groups_memo *gm = NULL;
    double p = 0, n = 0; /* the one group's share and ranks (n = 0: more groups) */
    if (lay->uniform) {
        p = lay->rank_share[0];
        n = (double)R;
    } else {
        gm = group_shares(lay);
        if (gm->one)
            return M;
        if (gm->ng == 1) {
            p = gm->p[0];
            n = gm->count[0];
        }
    }
    if (n > 0) { /* one share: busiest_grouped's closed form, the same expressions */
        double lam = M * p, bsd = sqrt(lam * (1 - p));
        if (hl_fmin(HUGE_VAL, bsd) >= 30) /* large counts: a normal rank (binomial sd) */
            return lam + bsd * expected_max_std((int64_t)n);
    }
    return busiest_grouped(gm ? gm : group_shares(lay), M);
}

/* The last results of busiest_load on this thread, keyed by all it reads (tokens, topk, the
 * ranks' shares, compared bit for bit): a run asks again for the same layout and token count
 * in each MoE layer pass, and so does the next run of the same job (hl.simulate in a
 * calibration, a frontier search); a miss costs a compare. 16 KB of shares per entry at most. */
enum { BUSIEST_MEMO = 4 };
typedef struct busiest_memo {
    double tokens, topk, load;
    int64_t ranks;
    double share[HL_EXPERT_SLOTS_MAX];
} busiest_memo;
static _Thread_local busiest_memo memo[BUSIEST_MEMO];
static _Thread_local int memo_used, memo_next;

/* A sweep over input routes a new token count at every point, so there the memo never hits and
 * its lookup and store (the shares copied) cost ~90 instructions a call for nothing: a thread
 * whose last BUSIEST_WINDOW lookups all missed computes its next BUSIEST_SKIP calls directly,
 * neither looking up nor storing, then looks again (coll.c's hl_coll_memo does the same; the
 * memo only stores what busiest_load returns, so no result depends on it). */
enum { BUSIEST_WINDOW = 64, BUSIEST_SKIP = 1024 };
static _Thread_local int memo_misses, memo_skip;

/* hl_expert_busiest_load through the memo (1 <= R <= HL_EXPERT_SLOTS_MAX); out of line, so that the
 * skipping calls need no frame. */
__attribute__((noinline)) static double busiest_memoised(const hl_expert_layout *lay, double tokens)
{
    int64_t R = lay->ranks;
    size_t bytes = sizeof(double) * (size_t)R;
    for (int i = 0; i < memo_used; i++) {
        const busiest_memo *m = &memo[i];
        if (m->tokens == tokens && m->topk == lay->topk && m->ranks == R &&
            memcmp(m->share, lay->rank_share, bytes) == 0) {
            memo_misses = 0;
            return m->load;
        }
    }
    if (++memo_misses >= BUSIEST_WINDOW) {
        memo_misses = 0;
        memo_skip = BUSIEST_SKIP;
    }
    double load = busiest_load(lay, tokens);
    busiest_memo *m = &memo[memo_next];
    memo_next = (memo_next + 1) % BUSIEST_MEMO;
    if (memo_used < BUSIEST_MEMO)
        memo_used++;
    m->tokens = tokens;
    m->topk = lay->topk;
    m->ranks = R;
    memcpy(m->share, lay->rank_share, bytes);
    m->load = load;
    return load;
}

double hl_expert_busiest_load(const hl_expert_layout *lay, double tokens)
{
    int64_t R = lay->ranks;
    if (R < 1 || R > HL_EXPERT_SLOTS_MAX)
        return busiest_load(lay, tokens);
    if (memo_skip > 0) {
        memo_skip--;
        return busiest_load(lay, tokens);
    }
    return busiest_memoised(lay, tokens);
}

/* Distribution of the number of hit slots on one rank (Poisson-binomial over
 * its n slots with hit probabilities p[]): pmf[0..n]. */
static void hits_pmf(const double *p, int64_t n, double *pmf)
{
    pmf[0] = 1;
    for (int64_t i = 0; i < n; i++) {
        pmf[i + 1] = 0;
        for (int64_t c = i + 1; c > 0; c--)
            pmf[c] = pmf[c] * (1 - p[i]) + pmf[c - 1] * p[i];
        pmf[0] *= 1 - p[i];
    }
}

/* P(a slot is hit) = 1 - b^t, as 1 - pow(b, t) rounds it, for b = fl(1 - y) (y: a pick's probability
 * of the slot, topk * share) and t tokens; without the pow where that is exactly 1. Derived: for
 * y >= 2^-40 and t y >= 64 (fl(t y) >= 64: t y >= 64 (1 - 2^-53)), ln b <= b - 1 <= -y + 2^-54
 * (b is within half an ulp below 1, 2^-54, of 1 - y; clamped to 0 it is smaller) <= -y (1 - 2^-14),
 * so b^t <= e^-63.99 < 2^-92; pow is within a few ulp of that (glibc: 1 ulp), far below 2^-54,
 * and 1 - x for 0 <= x < 2^-54 rounds to 1 (its neighbours are 1 - 2^-53 and 1; 1 is nearer).
 * A sweep's prefill routes thousands of tokens: there every slot is hit, for one compare. */
static double hit_prob(double y, double b, double t)
{
    if (y >= 0x1p-40 && t * y >= 64)
        return 1;
    return 1 - pow(b, t);
}

/* E[max] over R > 1 ranks of Binomial(per, p), 0 < p < 1: sum_{x=1..per} (1 - F(x-1)^R). */
__attribute__((noinline)) static double hits_binomial(double p, int64_t per, int64_t R)
{
    double pmf = pow(1 - p, (double)per), cdf = 0, sum = 0, r = p / (1 - p);
    for (double x = 1; x <= (double)per; x++) {
        cdf += pmf; /* F(x-1) */
        if (cdf >= 1)
            break;
        sum += 1 - pow(cdf, (double)R);
        pmf *= ((double)per - (x - 1)) / x * r;
    }
    return sum;
}

/* hl_expert_busiest_hits of a layout whose slots have their own shares (tokens > 0); out of line,
 * so that the uniform case does not set up its 16 KB of slot probabilities. */
__attribute__((noinline)) static double hits_of_slots(const hl_expert_layout *lay, double tokens)
{
    int64_t S = lay->slots, R = lay->ranks, per = S / R;
    double k = lay->topk;
    double hit[HL_EXPERT_SLOTS_MAX];
    for (int64_t s = 0; s < S; s++)
        hit[s] = hit_prob(k * lay->slot_share[s], hl_fmax(0, 1 - k * lay->slot_share[s]), tokens);
    if (R == 1) {
        double sum = 0;
        for (int64_t s = 0; s < S; s++)
            sum += hit[s];
        return sum;
    }
    /* prod over ranks of P(H_r <= x), for x = 0..per - 1 */
    double *cdf_prod = malloc((size_t)(per + 1) * 2 * sizeof(double));
    if (!cdf_prod)
        return (double)per; /* the bound: every slot of a rank hit */
    double *pmf = cdf_prod + per + 1;
    for (int64_t x = 0; x <= per; x++)
        cdf_prod[x] = 1;
    for (int64_t r = 0; r < R; r++) {
        hits_pmf(hit + r * per, per, pmf);
        double c = 0;
        for (int64_t x = 0; x < per; x++) {
            c += pmf[x];
            cdf_prod[x] *= hl_fmin(1, c);
        }
    }
    double sum = 0; /* E[max] = sum_{x=1..per} (1 - prod F_r(x-1)) */
    for (int64_t x = 1; x <= per; x++)
        sum += 1 - cdf_prod[x - 1];
    free(cdf_prod);
    return sum;
}

double hl_expert_busiest_hits(const hl_expert_layout *lay, double tokens)
{
    if (tokens <= 0)
        return 0;
    if (!lay->uniform)
        return hits_of_slots(lay, tokens);
    /* Binomial(per, p) per rank, E[max] = sum_{x=1..per} (1 - F(x-1)^R) */
    int64_t S = lay->slots, R = lay->ranks, per = S / R;
    double y = lay->topk / (double)S, p = hit_prob(y, 1 - y, tokens);
    if (R <= 1 || p <= 0)
        return (double)per * p;
    if (p >= 1)
        return (double)per;
    return hits_binomial(p, per, R);
}
