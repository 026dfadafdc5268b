/* Serving metrics: per-request TTFT, TPOT, end-to-end and queueing time,
 * their mean and percentiles, SLO attainment and goodput, and the histogram
 * of inter-token gaps. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fmax_int.h"
#include "serve_int.h"

static const double itl_lo = 1e-6;                   /* s, lower edge of bin 0 */
static const double itl_step = 0.004987541511038968; /* ln(1.005): bins 0.5% wide */

/* The bin of gap before the last bin's clamp. */
static double itl_raw_bin(double gap) { return gap <= itl_lo ? 0 : floor(log(gap / itl_lo) / itl_step); }

int hl_itl_bin(double gap)
{
    double b = itl_raw_bin(gap);
    return b >= HL_ITL_BINS - 1 ? HL_ITL_BINS - 1 : (int)b;
}

/* The smallest gap > 0 of raw bin >= b (1 <= b < HL_ITL_BINS): bisection over the bit
 * patterns of positive doubles, which order as the doubles do (the computed log is
 * monotonic, so the gaps between two edges share a bin). */
static double itl_edge(double b)
{
    double hi = itl_lo * exp((b + 1) * itl_step);
    while (itl_raw_bin(hi) < b)
        hi *= 2;
    uint64_t lo_bits, hi_bits;
    double lo = itl_lo; /* raw bin 0 < b */
    memcpy(&lo_bits, &lo, sizeof lo);
    memcpy(&hi_bits, &hi, sizeof hi);
    while (hi_bits - lo_bits > 1) {
        uint64_t mid_bits = lo_bits + (hi_bits - lo_bits) / 2;
        double mid;
        memcpy(&mid, &mid_bits, sizeof mid);
        if (itl_raw_bin(mid) >= b)
            hi_bits = mid_bits;
        else
            lo_bits = mid_bits;
    }
    memcpy(&hi, &hi_bits, sizeof hi);
    return hi;
}

/* The edge of bin b >= 1 (itl_edge), found on first use and kept in h. */
static double edge_of(hl_itl_hist *h, int b)
{
    if (h->edge[b] == 0)
        h->edge[b] = itl_edge((double)b);
    return h->edge[b];
}

void hl_itl_bin_range(hl_itl_hist *h, int b, double *lo, double *hi)
{
    *lo = b >= 1 ? edge_of(h, b) : -INFINITY;
    *hi = b + 1 < HL_ITL_BINS ? edge_of(h, b + 1) : INFINITY;
}

/* A bin within one of gap's (> 0): log2 of gap from its exponent and its mantissa m in [1, 2),
 * log2 m = (2 / ln 2) atanh(t), t = (m - 1) / (m + 1) <= 1/3, by the series to t^7 (within
 * 1.8e-5 of an octave, 0.003 bin), in bins of itl_step. */
static int itl_near_bin(double gap)
{
    if (!(gap > itl_lo))
        return 0;
    uint64_t bits;
    memcpy(&bits, &gap, sizeof bits);
    double e = (double)((int)((bits >> 52) & 0x7ff) - 1023), m;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    memcpy(&m, &bits, sizeof m);
    double t = (m - 1) / (m + 1), t2 = t * t;
    double l2 = e + 2.8853900817779268 * t * (1 + t2 * (1.0 / 3 + t2 * (0.2 + t2 * (1.0 / 7)))); /* 2 / ln 2 */
    double b = (l2 + 19.931568569324174) * (0.6931471805599453 / itl_step); /* log2(1e-6) = -19.93..; ln 2 */
    return b < 0 ? 0 : b >= HL_ITL_BINS - 1 ? HL_ITL_BINS - 1 : (int)b;
}

/* hl_itl_bin(gap) without its log, and the gaps [*lo, *hi) of that bin: from a bin near it, by
 * the edges (raw bins grow with the gap, so gap's bin is the last b <= HL_ITL_BINS - 1 whose
 * edge is <= gap, or 0: the same bin as the log's). */
int hl_itl_find(hl_itl_hist *h, double gap, double *lo, double *hi)
{
    int b = itl_near_bin(gap);
    while (b > 0 && gap < edge_of(h, b))
        b--;
    while (b + 1 < HL_ITL_BINS && gap >= edge_of(h, b + 1))
        b++;
    hl_itl_bin_range(h, b, lo, hi);
    return b;
}

void hl_itl_add(hl_itl_hist *h, double gap, double count)
{
    if (count <= 0)
        return;
    if (!(gap >= h->last_lo && gap < h->last_hi)) {    /* a gap outside the last one's bin */
        if (gap >= h->ahead_lo && gap < h->ahead_hi) { /* the decode run-ahead's (a decode-only step's gap) */
            h->last_bin = h->ahead_bin;
            h->last_lo = h->ahead_lo;
            h->last_hi = h->ahead_hi;
        } else { /* a bin seen before (its edges decide, so it is the bin), or looked up */
            uint64_t bits;
            memcpy(&bits, &gap, sizeof bits);
            int k = (int)((bits >> 45) & (HL_ITL_SEEN - 1));
            if (gap >= h->seen_lo[k] && gap < h->seen_hi[k]) {
                h->last_bin = h->seen_bin[k];
                h->last_lo = h->seen_lo[k];
                h->last_hi = h->seen_hi[k];
            } else {
                h->last_bin = hl_itl_find(h, gap, &h->last_lo, &h->last_hi);
                h->seen_bin[k] = h->last_bin;
                h->seen_lo[k] = h->last_lo;
                h->seen_hi[k] = h->last_hi;
            }
        }
    }
    int b = h->last_bin;
    h->count[b] += count;
    h->n += count;
    h->sum += gap * count;
    if (gap > h->max)
        h->max = gap;
}

/* Value at quantile q of the histogram: the geometric middle of its bin. */
static double itl_quantile(const hl_itl_hist *h, double q)
{
    double want = q * h->n, acc = 0;
    for (int b = 0; b < HL_ITL_BINS; b++) {
        acc += h->count[b];
        if (acc >= want && h->count[b] > 0)
            return fmin(h->max, itl_lo * exp(((double)b + 0.5) * itl_step));
    }
    return h->max;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const double *v, int64_t n, double q)
{
    int64_t k = (int64_t)ceil(q * (double)n) - 1;
    if (k < 0)
        k = 0;
    if (k >= n)
        k = n - 1;
    return v[k];
}

/* Ctrl-C / SIGTERM while the summary sorts: looked at every 2^16 values of each pass, so a
 * summary of 1e7 requests stops within one block of one pass (the serve loop looks at it per
 * iteration; the summary's sorts of up to 4 x n values used to run to the end). */
enum { INTR_BLOCK = 1 << 16 };
/* The end of the block of values that starts at i (the loops over them test nothing else). */
static int64_t block_end(int64_t i, int64_t n) { return n - i < INTR_BLOCK ? n : i + INTR_BLOCK; }

/* The summary's sort: an MSD pass on the top bits of each key less the least (the keys' span,
 * not all 64 bits: buckets over the run's range), then each bucket by an LSD radix sort of its
 * lower bits in SUB_BITS digits (insertion below SUB_SMALL values), in cache: two passes over the
 * whole array where six LSD passes over all 64 bits went through memory. Counts in 32 bits:
 * fewer than SORT_MAX_N values. */
enum { MSD_BITS = 11, MSD_RADIX = 1 << MSD_BITS, SUB_BITS = 12, SUB_RADIX = 1 << SUB_BITS, SUB_PASSES = 6 };
enum { SUB_SMALL = 64, SORT_MAX_N = 0x7fffffff };

/* x's bits, ordered as the doubles are (negatives reversed below the positives); not for NaN or -0. */
static inline uint64_t sort_key(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b >> 63 ? ~b : b | 0x8000000000000000ull;
}

/* sort_key's inverse: the double whose key is b. */
static inline double key_value(uint64_t b)
{
    b = b >> 63 ? b & 0x7fffffffffffffffull : ~b;
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Whether x can be radix-sorted (neither NaN nor -0, the two whose order qsort decides). */
static inline int sortable(double x) { return !isnan(x) && !(x == 0 && signbit(x)); }

/* Sorts the m keys a[0, m), alike in their bits at and above `low` (of key - kmin), ascending,
 * through b (m); the result in a. */
static void sub_sort(uint64_t *a, uint64_t *b, int64_t m, uint64_t kmin, int low)
{
    if (m < SUB_SMALL) { /* insertion (equal keys are the same bits: any order of them is the order) */
        for (int64_t i = 1; i < m; i++) {
            uint64_t x = a[i];
            int64_t j = i;
            for (; j > 0 && a[j - 1] > x; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    static _Thread_local uint32_t cnt[SUB_PASSES][SUB_RADIX]; /* 96 kB: the bucket's digit counts */
    int passes = (low + SUB_BITS - 1) / SUB_BITS;             /* low <= 63: at most 6 */
    const uint64_t mask = SUB_RADIX - 1;
    memset(cnt, 0, sizeof cnt[0] * (size_t)passes);
    for (int64_t i = 0; i < m; i++) {
        uint64_t r = a[i] - kmin;
        for (int d = 0; d < passes; d++)
            cnt[d][(r >> (d * SUB_BITS)) & mask]++;
    }
    uint64_t *from = a, *to = b;
    for (int d = 0; d < passes; d++) {
        uint32_t *c = cnt[d], at = 0;
        int sh = d * SUB_BITS;
        if (c[((from[0] - kmin) >> sh) & mask] == (uint32_t)m)
            continue; /* every key has this digit */
        for (uint64_t k = 0; k <= mask; k++) {
            uint32_t here = c[k];
            c[k] = at;
            at += here;
        }
        for (int64_t i = 0; i < m; i++)
            to[c[((from[i] - kmin) >> sh) & mask]++] = from[i];
        uint64_t *sw = from;
        from = to;
        to = sw;
    }
    if (from != a)
        memcpy(a, from, sizeof *a * (size_t)m);
}

/* Sorts the keys (sort_key) held in v's storage, n >= 1 of them, each in [kmin, kmax], through
 * tmp (n); v then holds their values, sorted (qsort's array bit for bit: equal doubles are the
 * same bits). 1 when interrupted (v is then in no order). */
static int sort_keys(double *v, int64_t n, uint64_t kmin, uint64_t kmax, uint64_t *tmp)
{
    uint64_t *key = (uint64_t *)(void *)v, span = kmax - kmin;
    if (span == 0) { /* one value */
        for (int64_t i = 0; i < n; i++)
            v[i] = key_value(key[i]);
        return 0;
    }
    /* the MSD digit: about n / 2^12 buckets (of about 4,096 keys each: its LSD's tables of
     * 2^SUB_BITS counts a pass stay a small part of the bucket's work), at most MSD_BITS, at most the span's bits */
    int bits = 64 - __builtin_clzll(span), lg = 63 - __builtin_clzll((uint64_t)n);
    int msd = lg - 12 < 1 ? 1 : lg - 12 > MSD_BITS ? MSD_BITS : lg - 12;
    msd = msd < bits ? msd : bits;
    int low = bits - msd, nb = 1 << msd;
    static _Thread_local uint32_t start[MSD_RADIX + 1], at[MSD_RADIX];
    memset(start, 0, sizeof start[0] * (size_t)(nb + 1));
    for (int64_t i0 = 0; i0 < n; i0 += INTR_BLOCK) {
        if (hl_interrupt_pending())
            return 1;
        for (int64_t i = i0, i1 = block_end(i0, n); i < i1; i++)
            start[((key[i] - kmin) >> low) + 1]++;
    }
    for (int b = 0; b < nb; b++) {
        start[b + 1] += start[b];
        at[b] = start[b];
    }
    for (int64_t i0 = 0; i0 < n; i0 += INTR_BLOCK) {
        if (hl_interrupt_pending())
            return 1;
        for (int64_t i = i0, i1 = block_end(i0, n); i < i1; i++)
            tmp[at[(key[i] - kmin) >> low]++] = key[i];
    }
    for (int b = 0; b < nb && low > 0; b++) { /* each bucket in its place, key's as scratch */
        if ((b & 63) == 0 && hl_interrupt_pending())
            return 1;
        int64_t m = (int64_t)(start[b + 1] - start[b]);
        if (m > 1)
            sub_sort(tmp + start[b], key + start[b], m, kmin, low);
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = key_value(tmp[i]);
    return 0;
}

/* Sorts v[0, n) ascending: sort_keys of the doubles' order-preserving bit patterns, O(n) where
 * qsort was O(n log n), for the metrics of 1e7 requests; NaN and -0 (the two exceptions whose
 * order qsort decides) and short arrays go to qsort. tmp: room for n values (the caller's,
 * reused by its sorts), or NULL. Returns 1 when interrupted (v is then in no order). */
static int sort_values(double *v, int64_t n, uint64_t *tmp)
{
    if (n < 4096 || n >= SORT_MAX_N)
        tmp = NULL;
    int ok = tmp != NULL;
    for (int64_t i = 0; i < n && ok; i++)
        ok = sortable(v[i]);
    if (!ok) {
        if (hl_interrupt_pending())
            return 1;
        qsort(v, (size_t)n, sizeof *v, cmp_double); /* short, or NaN / -0: not interruptible inside */
        return hl_interrupt_pending();
    }
    uint64_t *key = (uint64_t *)(void *)v, kmin = UINT64_MAX, kmax = 0; /* the same storage, keys until sorted */
    for (int64_t i = 0; i < n; i++) {
        uint64_t b = sort_key(v[i]);
        memcpy(&key[i], &b, sizeof b);
        kmin = b < kmin ? b : kmin;
        kmax = b > kmax ? b : kmax;
    }
    return sort_keys(v, n, kmin, kmax, tmp);
}

/* The stats of v[0, n), sorted. */
static void stats_sorted(const double *v, int64_t n, hl_stats *s)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += v[i];
    s->mean = sum / (double)n;
    s->p50 = pct(v, n, 0.50);
    s->p90 = pct(v, n, 0.90);
    s->p99 = pct(v, n, 0.99);
    s->max = v[n - 1];
}

/* The stats of v[0, n) (sorted in place, through tmp: sort_values); 1 when interrupted. */
static int stats_of(double *v, int64_t n, uint64_t *tmp, hl_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n == 0) { /* nothing measured (TPOT of 1-token outputs): none, pushed as nil, never a silent 0 */
        s->mean = s->p50 = s->p90 = s->p99 = s->max = NAN;
        return 0;
    }
    if (sort_values(v, n, tmp))
        return 1;
    stats_sorted(v, n, s);
    return 0;
}

/* stats_of of n values v holds as their keys (sort_key), each in [kmin, kmax]; plain: none is
 * NaN or -0. The same sort, the keys made as the values came. */
static int stats_of_keys(double *v, int64_t n, int plain, uint64_t kmin, uint64_t kmax, uint64_t *tmp, hl_stats *s)
{
    if (n >= 4096 && n < SORT_MAX_N && plain && tmp) {
        memset(s, 0, sizeof *s);
        s->n = n;
        if (sort_keys(v, n, kmin, kmax, tmp))
            return 1;
        stats_sorted(v, n, s);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) { /* the values again, for qsort */
        uint64_t b;
        memcpy(&b, &v[i], sizeof b);
        v[i] = key_value(b);
    }
    return stats_of(v, n, tmp, s);
}

/* r's request counts, rates and goodput from the sums over its requests. */
static void totals(const hl_serve_cfg *cfg, const hl_serve_acc *a, hl_serve_result *r)
{
    int64_t n = a->n;
    r->requests = n;
    r->duration_s = n > 0 ? a->t1 - a->t0 : 0;
    double T = r->duration_s > 0 ? r->duration_s : 1, G = (double)r->gpus;
    r->rps = (double)n / T;
    r->input_tps = a->in_tok / T;
    r->output_tps = a->out_tok / T;
    r->input_tps_per_gpu = r->input_tps / G;
    r->output_tps_per_gpu = r->output_tps / G;
    r->slo_attainment = n > 0 ? a->good / (double)n : 0;
    r->goodput_rps = a->good / T;
    r->goodput_tps_per_gpu = a->good_tok / T / G;
    if (isinf(cfg->slo_ttft_s) && isinf(cfg->slo_tpot_s)) /* no SLO: no attainment, not a silent 100% */
        r->slo_attainment = r->goodput_rps = r->goodput_tps_per_gpu = NAN;
}

static hl_stats *metric(hl_serve_result *r, int w)
{
    return w == 0 ? &r->ttft_s : w == 1 ? &r->tpot_s : w == 2 ? &r->e2e_s : &r->queue_s;
}

/* r's inter-token gap statistics from the histogram. */
static void itl_summary(const hl_itl_hist *itl, hl_serve_result *r)
{
    memset(&r->itl_s, 0, sizeof r->itl_s);
    r->itl_s.mean = r->itl_s.p50 = r->itl_s.p90 = r->itl_s.p99 = r->itl_s.max = NAN; /* no gap: none */
    if (itl->n > 0) {
        r->itl_s.n = (int64_t)itl->n;
        r->itl_s.mean = itl->sum / itl->n;
        r->itl_s.p50 = itl_quantile(itl, 0.50);
        r->itl_s.p90 = itl_quantile(itl, 0.90);
        r->itl_s.p99 = itl_quantile(itl, 0.99);
        r->itl_s.max = itl->max;
    }
}

/* One request's metrics (s) from its times (s) and output (tokens): tpot NaN with one output
 * token (none: nil); good: it met both SLOs (TPOT not asked of a 1-token output). */
typedef struct req_metrics {
    double ttft, tpot, e2e;
    int32_t good;
} req_metrics;
static inline req_metrics metrics_of(const hl_serve_cfg *cfg, double arrival, double output, double first_tok,
                                     double finish)
{
    req_metrics m = {first_tok - arrival, output > 1 ? (finish - first_tok) / (output - 1) : NAN, finish - arrival, 0};
    m.good = m.ttft <= cfg->slo_ttft_s && (output <= 1 || m.tpot <= cfg->slo_tpot_s);
    return m;
}

/* A request's terms of a's sums (lengths in tokens, times in s; a->n is the caller's). */
static inline void acc_sums(hl_serve_acc *a, double arrival, double input, double output, int32_t good, double finish)
{
    a->in_tok += input;
    a->out_tok += output;
    a->good += good;
    a->good_tok += good ? output : 0;
    a->t0 = hl_fmin(a->t0, arrival); /* C11 fmin and fmax, inline */
    a->t1 = hl_fmax(a->t1, finish);
}

hl_status hl_serve_summarise(const hl_serve_cfg *cfg, hl_serve_req *q, int64_t n, const hl_itl_hist *itl,
                             hl_serve_result *r, hl_err *err)
{
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory summarising %lld requests", (long long)n);
    hl_serve_acc a = {.n = n, .t0 = INFINITY};
    for (int64_t i = 0; i < n; i++) {
        hl_serve_req *x = &q[i];
        req_metrics m = metrics_of(cfg, x->arrival_s, x->output, x->first_token_s, x->finish_s);
        x->ttft_s = m.ttft;
        x->e2e_s = m.e2e;
        x->tpot_s = m.tpot;
        x->good = m.good;
        acc_sums(&a, x->arrival_s, x->input, x->output, m.good, x->finish_s);
    }
    totals(cfg, &a, r);
    uint64_t *tmp = n >= 4096 ? malloc(sizeof *tmp * (size_t)n) : NULL; /* the four sorts' (NULL: qsort) */
    for (int w = 0; w < 4; w++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            const hl_serve_req *x = &q[i];
            if (w == 1 && x->output <= 1)
                continue; /* no TPOT with a single output token */
            v[k++] = w == 0 ? x->ttft_s : w == 1 ? x->tpot_s : w == 2 ? x->e2e_s : x->queue_s;
        }
        if (stats_of(v, k, tmp, metric(r, w))) {
            free(v);
            free(tmp);
            return hl_fail(err, HL_EINTR, "serve interrupted while summarising %lld requests", (long long)n);
        }
    }
    free(v);
    free(tmp);
    itl_summary(itl, r);
    return HL_OK;
}

hl_status hl_serve_acc_init(hl_serve_acc *a, int64_t n, hl_err *err)
{
    memset(a, 0, sizeof *a);
    a->t0 = INFINITY;
    a->cap = n;
    for (int w = 0; w < 4; w++) {
        a->plain[w] = 1;
        a->kmin[w] = UINT64_MAX;
        if (!(a->v[w] = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)))) {
            hl_serve_acc_free(a);
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for the metrics of %lld requests", (long long)n);
        }
    }
    return HL_OK;
}

/* Value x of metric w: its key stored, the least and the largest key kept. */
static inline void acc_put(hl_serve_acc *a, int w, double x)
{
    uint64_t b = sort_key(x);
    a->plain[w] &= sortable(x);
    memcpy(&a->v[w][a->k[w]++], &b, sizeof b);
    a->kmin[w] = b < a->kmin[w] ? b : a->kmin[w];
    a->kmax[w] = b > a->kmax[w] ? b : a->kmax[w];
}

void hl_serve_acc_add(hl_serve_acc *a, const hl_serve_cfg *cfg, double arrival, double input, double output,
                      double first_tok, double finish, double first_sched)
{
    req_metrics m = metrics_of(cfg, arrival, output, first_tok, finish); /* hl_serve_summarise's */
    acc_put(a, 0, m.ttft);
    if (output > 1)
        acc_put(a, 1, m.tpot);
    acc_put(a, 2, m.e2e);
    acc_put(a, 3, first_sched - arrival);
    a->n++;
    acc_sums(a, arrival, input, output, m.good, finish);
}

hl_status hl_serve_summarise_acc(const hl_serve_cfg *cfg, hl_serve_acc *a, const hl_itl_hist *itl, hl_serve_result *r,
                                 hl_err *err)
{
    totals(cfg, a, r);
    uint64_t *tmp = a->n >= 4096 ? malloc(sizeof *tmp * (size_t)a->n) : NULL; /* NULL: qsort */
    for (int w = 0; w < 4; w++)
        if (stats_of_keys(a->v[w], a->k[w], a->plain[w], a->kmin[w], a->kmax[w], tmp, metric(r, w))) {
            free(tmp);
            return hl_fail(err, HL_EINTR, "serve interrupted while summarising %lld requests", (long long)a->n);
        }
    free(tmp);
    itl_summary(itl, r);
    return HL_OK;
}

void hl_serve_acc_free(hl_serve_acc *a)
{
    for (int w = 0; w < 4; w++) {
        free(a->v[w]);
        a->v[w] = NULL;
    }
}
