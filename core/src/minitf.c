/* The native CPU mini-transformer (see hbdlab/minitf.h). Weights are stored
 * whole, row-major as (in, out); a virtual rank uses column slices
 * (column-parallel: q, k, v, gate, up) or row slices (row-parallel: o, down)
 * of them, so sharded and unsharded runs share one copy of the weights. */
#include "hbdlab/minitf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/model.h"
#include "model_int.h"

/* the stats arrays are sized by a literal (ffi.cdef reads them); keep them tied to the constant */
_Static_assert(sizeof(((hl_minitf_stats *)0)->weight_bytes) == HL_MINITF_MAX_RANKS * sizeof(double), "hl_minitf_stats "
                                                                                                     "arrays hold "
                                                                                                     "HL_MINITF_MAX_"
                                                                                                     "RANKS ranks");

typedef struct layer_w {
    float *norm1, *norm2;          /* (h) */
    float *wq, *wk, *wv, *wo;      /* (h, H*d), (h, K*d), (h, K*d), (H*d, h) */
    float *gate, *up, *down;       /* dense FFN: (h, F), (h, F), (F, h) */
    float *router;                 /* (h, E) */
    float *e_gate, *e_up, *e_down; /* experts back to back: E x (h, Fe), E x (h, Fe), E x (Fe, h) */
    float *s_gate, *s_up, *s_down; /* shared experts, concatenated width Fs: (h, Fs), (h, Fs), (Fs, h) */
    float *sinks;                  /* (H) one sink logit per head (attn_sinks) */
    float *iq, *ik, *iw, *ikn;     /* indexer: (h, Hi*di), (h, di), (h, Hi), key LayerNorm (2 di: weight, bias) */
    /* gated DeltaNet: in_proj columns [q (Kl dk) | k (Kl dk) | v (Vl dv) | z (Vl dv)], ba [a (Vl) | b (Vl)],
     * conv (channels 2 Kl dk + Vl dv, width c), dt_bias, A_log (Vl), gated norm (dv), out (Vl dv, h) */
    float *l_qkvz, *l_ba, *l_conv, *l_dt, *l_alog, *l_norm, *l_out;
    int moe, linear;
} layer_w;

struct hl_minitf {
    hl_model m;
    int h, L, H, K, d, F, V, E, k, Fe, Fs;
    int sinks;                       /* attention sinks on */
    int ks, Hi, di;                  /* sparse attention: keys per query (0 = dense), indexer heads and width */
    int Kl, Vl, dk, dv, conv, lin_n; /* gated DeltaNet dims; lin_n = conv channels (2 Kl dk + Vl dv) */
    float *emb, *head, *final_norm;  /* (V, h), (h, V), (h) */
    layer_w *layers;
    float *pool;
};

/* ---- deterministic weights ---------------------------------------------------- */
static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void fill(float *w, size_t n, double scale, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(((double)(rng_next(s) >> 11) / 9007199254740992.0 * 2 - 1) * scale);
}

static void fill_ones(float *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        w[i] = 1.0f;
}

hl_status hl_minitf_new(const hl_model *m, uint64_t seed, hl_minitf **out, hl_err *err)
{
    if (!m || !out)
        return hl_fail(err, HL_EINVAL, "hl_minitf_new: the %s is NULL", !m ? "model" : "output");
    hl_status st = hl_model_validate(m, err);
    if (st)
        return st;
    if (m->attn != HL_ATTN_GQA)
        return hl_fail(err, HL_EUNSUPPORTED, "minitf: model '%s' uses MLA; the mini-transformer runs GQA/MHA only",
                       m->name);
    hl_params p;
    if ((st = hl_model_params(m, &p, err)))
        return st;
    if (p.total > 2e8)
        return hl_fail(err, HL_EINVAL, "minitf: model '%s' has %.3g parameters; at most 2e8 run on the CPU", m->name,
                       p.total);
    if (m->qkv_bias || m->o_bias || m->expert_bias || m->sliding_window > 0)
        return hl_fail(err, HL_EUNSUPPORTED, "minitf: biases and sliding windows are not implemented");
    if (m->attn_gate || m->moe_every > 1 || m->vision_layers > 0)
        return hl_fail(err, HL_EUNSUPPORTED,
                       "minitf: attn_gate, moe_every and vision encoders are not implemented (model '%s')", m->name);
    if (m->head_dim % 2)
        return hl_fail(err, HL_EINVAL, "minitf: head_dim %lld must be even (RoPE rotates pairs)",
                       (long long)m->head_dim);
    hl_minitf *tf = calloc(1, sizeof *tf);
    if (!tf)
        return hl_fail(err, HL_ENOMEM, "minitf: out of memory");
    tf->m = *m;
    tf->h = (int)m->hidden;
    tf->L = (int)m->layers;
    tf->H = (int)m->heads;
    tf->K = (int)m->kv_heads;
    tf->d = (int)m->head_dim;
    tf->F = (int)m->ffn;
    tf->V = (int)m->vocab;
    tf->E = (int)m->experts;
    tf->k = (int)m->topk;
    tf->Fe = (int)hl_model_expert_ffn(m);
    tf->Fs = m->shared_experts > 0 ? (int)(hl_model_shared_ffn(m) * m->shared_experts) : 0;
    tf->sinks = m->attn_sinks;
    tf->ks = (int)m->index_topk;
    tf->Hi = (int)m->index_heads;
    tf->di = (int)m->index_dim;
    tf->Kl = (int)m->linear_k_heads;
    tf->Vl = (int)m->linear_v_heads;
    tf->dk = (int)m->linear_k_dim;
    tf->dv = (int)m->linear_v_dim;
    tf->conv = (int)m->linear_conv;
    tf->lin_n = 2 * tf->Kl * tf->dk + tf->Vl * tf->dv;
    int h = tf->h, H = tf->H, K = tf->K, d = tf->d;
    int64_t moe_first = m->experts > 0 ? m->dense_layers : m->layers;
    size_t n = (size_t)tf->V * h * 2 + h;
    size_t lin_w = (size_t)h * (2 * tf->Kl * tf->dk + 2 * tf->Vl * tf->dv) + (size_t)h * 2 * tf->Vl +
                   (size_t)tf->lin_n * tf->conv + 2 * (size_t)tf->Vl + (size_t)tf->dv + (size_t)tf->Vl * tf->dv * h;
    size_t idx_w =
        tf->ks > 0 ? (size_t)h * tf->Hi * tf->di + (size_t)h * tf->di + (size_t)h * tf->Hi + 2 * (size_t)tf->di : 0;
    for (int l = 0; l < tf->L; l++) {
        if (hl_model_layer_is_linear(m, l))
            n += 2 * (size_t)h + lin_w;
        else
            n += 2 * (size_t)h + (size_t)h * (H + 2 * K) * d + (size_t)H * d * h + (tf->sinks ? (size_t)H : 0) + idx_w;
        if (l < moe_first)
            n += 3 * (size_t)h * tf->F;
        else
            n += (size_t)h * tf->E + 3 * (size_t)tf->E * h * tf->Fe + 3 * (size_t)h * tf->Fs;
    }
    tf->pool = malloc(n * sizeof(float));
    tf->layers = calloc((size_t)tf->L, sizeof *tf->layers);
    if (!tf->pool || !tf->layers) {
        hl_minitf_free(tf);
        return hl_fail(err, HL_ENOMEM, "minitf: out of memory for %zu weights", n);
    }
    uint64_t s = seed;
    float *w = tf->pool;
#define TAKE(ptr, count, scale)        \
    do {                               \
        (ptr) = w;                     \
        fill(w, (count), (scale), &s); \
        w += (count);                  \
    } while (0)
    TAKE(tf->emb, (size_t)tf->V * h, 1.0);
    TAKE(tf->head, (size_t)h * tf->V, 1.0 / sqrt(h));
    tf->final_norm = w;
    fill_ones(w, (size_t)h);
    w += h;
    for (int l = 0; l < tf->L; l++) {
        layer_w *ly = &tf->layers[l];
        ly->norm1 = w;
        fill_ones(w, (size_t)h);
        w += h;
        ly->norm2 = w;
        fill_ones(w, (size_t)h);
        w += h;
        if (hl_model_layer_is_linear(m, l)) {
            int kd = tf->Kl * tf->dk, vd = tf->Vl * tf->dv;
            ly->linear = 1;
            TAKE(ly->l_qkvz, (size_t)h * (2 * kd + 2 * vd), 1.0 / sqrt(h));
            TAKE(ly->l_ba, (size_t)h * 2 * tf->Vl, 1.0 / sqrt(h));
            TAKE(ly->l_conv, (size_t)tf->lin_n * tf->conv, 1.0 / sqrt(tf->conv > 0 ? tf->conv : 1));
            TAKE(ly->l_dt, (size_t)tf->Vl, 1.0);
            TAKE(ly->l_alog, (size_t)tf->Vl, 1.0);
            ly->l_norm = w;
            fill_ones(w, (size_t)tf->dv);
            w += tf->dv;
            TAKE(ly->l_out, (size_t)vd * h, 1.0 / sqrt(vd));
        } else {
            TAKE(ly->wq, (size_t)h * H * d, 1.0 / sqrt(h));
            TAKE(ly->wk, (size_t)h * K * d, 1.0 / sqrt(h));
            TAKE(ly->wv, (size_t)h * K * d, 1.0 / sqrt(h));
            TAKE(ly->wo, (size_t)H * d * h, 1.0 / sqrt(H * d));
            if (tf->sinks)
                TAKE(ly->sinks, (size_t)H, 2.0);
            if (tf->ks > 0) {
                TAKE(ly->iq, (size_t)h * tf->Hi * tf->di, 1.0 / sqrt(h));
                TAKE(ly->ik, (size_t)h * tf->di, 1.0 / sqrt(h));
                TAKE(ly->iw, (size_t)h * tf->Hi, 1.0 / sqrt(h));
                ly->ikn = w; /* LayerNorm weight 1, bias 0 */
                fill_ones(w, (size_t)tf->di);
                memset(w + tf->di, 0, sizeof(float) * (size_t)tf->di);
                w += 2 * (size_t)tf->di;
            }
        }
        if (l < moe_first) {
            TAKE(ly->gate, (size_t)h * tf->F, 1.0 / sqrt(h));
            TAKE(ly->up, (size_t)h * tf->F, 1.0 / sqrt(h));
            TAKE(ly->down, (size_t)tf->F * h, 1.0 / sqrt(tf->F));
        } else {
            ly->moe = 1;
            TAKE(ly->router, (size_t)h * tf->E, 1.0 / sqrt(h));
            TAKE(ly->e_gate, (size_t)tf->E * h * tf->Fe, 1.0 / sqrt(h));
            TAKE(ly->e_up, (size_t)tf->E * h * tf->Fe, 1.0 / sqrt(h));
            TAKE(ly->e_down, (size_t)tf->E * tf->Fe * h, 1.0 / sqrt(tf->Fe));
            if (tf->Fs) {
                TAKE(ly->s_gate, (size_t)h * tf->Fs, 1.0 / sqrt(h));
                TAKE(ly->s_up, (size_t)h * tf->Fs, 1.0 / sqrt(h));
                TAKE(ly->s_down, (size_t)tf->Fs * h, 1.0 / sqrt(tf->Fs));
            }
        }
    }
#undef TAKE
    *out = tf;
    return HL_OK;
}

void hl_minitf_free(hl_minitf *tf)
{
    if (!tf)
        return;
    free(tf->pool);
    free(tf->layers);
    free(tf);
}

/* ---- kernels -------------------------------------------------------------------- */

/* C (m x n, ldc) = A (m x k, lda) * B (k x n, ldb). Blocked over k and n so a
 * block of B stays in cache; the inner loop runs over contiguous columns and
 * vectorises. Returns the FLOPs counted (2mnk). */
static double gemm(int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C, int ldc)
{
    enum { KB = 128, NB = 512 };
    for (int i = 0; i < m; i++)
        memset(C + (size_t)i * ldc, 0, (size_t)n * sizeof(float));
    for (int j0 = 0; j0 < n; j0 += NB) {
        int jn = n - j0 < NB ? n - j0 : NB;
        for (int k0 = 0; k0 < k; k0 += KB) {
            int kn = k - k0 < KB ? k - k0 : KB;
            for (int i = 0; i < m; i++) {
                float *c = C + (size_t)i * ldc + j0;
                const float *a = A + (size_t)i * lda + k0;
                for (int kk = 0; kk < kn; kk++) {
                    const float av = a[kk];
                    const float *b = B + (size_t)(k0 + kk) * ldb + j0;
                    for (int j = 0; j < jn; j++)
                        c[j] += av * b[j];
                }
            }
        }
    }
    return 2.0 * m * n * k;
}

/* out = x * w / rms(x): 4 FLOPs per element (square, add, scale, weight). */
static double rmsnorm(float *out, const float *x, const float *w, int rows, int h)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * h;
        double ss = 0;
        for (int i = 0; i < h; i++)
            ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / h + 1e-6));
        for (int i = 0; i < h; i++)
            out[(size_t)r * h + i] = xr[i] * inv * w[i];
    }
    return 4.0 * rows * h;
}

/* Rotary position embedding on one head vector of width d at position pos. */
static void rope(float *v, int d, int pos)
{
    for (int i = 0; i < d / 2; i++) {
        double theta = pos * pow(10000.0, -2.0 * i / d);
        double c = cos(theta), s = sin(theta);
        float a = v[i], b = v[i + d / 2];
        v[i] = (float)(a * c - b * s);
        v[i + d / 2] = (float)(a * s + b * c);
    }
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* ---- generation -------------------------------------------------------------- */

typedef struct kvcache {
    float *k, *v; /* (seq, layer, kv_head, pos, d) */
    int cap;      /* positions per sequence */
    float *ikey;  /* sparse attention: the indexer's keys (seq, layer, pos, di) */
    float *state; /* gated DeltaNet: recurrent state (seq, layer, v_head, dk, dv) */
    float *convx; /* gated DeltaNet: last conv - 1 inputs (seq, layer, conv - 1, channel) */
} kvcache;

static float *ikey_at(const hl_minitf *tf, const kvcache *c, int seq, int layer, int pos)
{
    return c->ikey + (((size_t)seq * tf->L + layer) * c->cap + pos) * tf->di;
}

static float *state_at(const hl_minitf *tf, const kvcache *c, int seq, int layer, int vh)
{
    return c->state + (((size_t)seq * tf->L + layer) * tf->Vl + vh) * tf->dk * tf->dv;
}

static float *convx_at(const hl_minitf *tf, const kvcache *c, int seq, int layer)
{
    int keep = tf->conv > 1 ? tf->conv - 1 : 0;
    return c->convx + ((size_t)seq * tf->L + layer) * keep * tf->lin_n;
}

static float *kv_at(const hl_minitf *tf, const kvcache *c, float *base, int seq, int layer, int head, int pos)
{
    size_t per_head = (size_t)c->cap * tf->d;
    size_t per_layer = per_head * tf->K;
    size_t per_seq = per_layer * tf->L;
    return base + (size_t)seq * per_seq + (size_t)layer * per_layer + (size_t)head * per_head + (size_t)pos * tf->d;
}

typedef struct run {
    hl_minitf *tf;
    hl_minitf_layout lay;
    hl_minitf_stats *st;
    kvcache cache;
    int decode; /* counting into decode_model_flops */
} run;

static int rank_of(const run *r, int stage, int group, int t) { return (stage * r->lay.ep + group) * r->lay.tp + t; }

static void add_flops(run *r, int rank, double f)
{
    if (r->decode)
        r->st->decode_model_flops[rank] += f;
    else
        r->st->prefill_model_flops[rank] += f;
}

/* Ring AllReduce of `bytes` over n ranks: each sends 2(n-1)/n of it. */
static void count_allreduce(run *r, int stage, int group, double bytes)
{
    int n = r->lay.tp;
    if (n < 2)
        return;
    for (int t = 0; t < n; t++)
        r->st->allreduce_bytes[rank_of(r, stage, group, t)] += 2.0 * (n - 1) / n * bytes;
}

/* One TP rank's share of a row-parallel output projection: acc [T x h] += a [T x k] times w
 * [k x h] (this rank's rows of the weight, row stride h); part [T x h] is scratch. */
static void row_parallel_add(run *r, int rk, int T, int k, const float *a, const float *w, float *part, float *acc)
{
    int h = r->tf->h;
    add_flops(r, rk, gemm(T, h, k, a, k, w, h, part, h));
    for (size_t i = 0; i < (size_t)T * h; i++)
        acc[i] += part[i];
}

/* The TP AllReduce of the ranks' partial sums acc [T x h] (fp32, 4 bytes each), then the
 * residual add x += acc (T x h FLOPs). */
static void allreduce_residual(run *r, int stage, int g, int T, const float *acc, float *x)
{
    int h = r->tf->h;
    count_allreduce(r, stage, g, (double)T * h * 4);
    for (size_t i = 0; i < (size_t)T * h; i++)
        x[i] += acc[i];
    r->st->extra_flops += (double)T * h;
}

/* Lightning indexer (DeepSeek Sparse Attention) of one layer, computed once
 * and counted on every TP rank (it is replicated): writes the keys of the T
 * rows to the index cache and, per row, the `sel` positions it attends to
 * (the min(ks, keys) best index scores I(t, j) = sum_h w_h relu(q_h . k_j),
 * ties to the earlier key; ascending). nsel[i] gets their count. */
static int indexer(run *r, int layer, int stage, int g, const float *xn, int T, const int *seqs, const int *pos,
                   int *sel, int *nsel)
{
    hl_minitf *tf = r->tf;
    layer_w *ly = &tf->layers[layer];
    int h = tf->h, Hi = tf->Hi, di = tf->di, cap = r->cache.cap;
    float *q = malloc(sizeof(float) * (size_t)T * Hi * di), *k = malloc(sizeof(float) * (size_t)T * di);
    float *wt = malloc(sizeof(float) * (size_t)T * Hi), *score = malloc(sizeof(float) * (size_t)cap);
    char *taken = malloc((size_t)cap);
    if (!q || !k || !wt || !score || !taken) {
        free(q), free(k), free(wt), free(score), free(taken);
        return -1;
    }
    double f = gemm(T, Hi * di, h, xn, h, ly->iq, Hi * di, q, Hi * di);
    f += gemm(T, di, h, xn, h, ly->ik, di, k, di);
    f += gemm(T, Hi, h, xn, h, ly->iw, Hi, wt, Hi);
    for (int i = 0; i < T; i++) { /* LayerNorm on the key, then into the cache */
        float *ki = k + (size_t)i * di;
        double mean = 0, var = 0;
        for (int c = 0; c < di; c++)
            mean += ki[c];
        mean /= di;
        for (int c = 0; c < di; c++)
            var += (ki[c] - mean) * (ki[c] - mean);
        float inv = (float)(1.0 / sqrt(var / di + 1e-6));
        for (int c = 0; c < di; c++)
            ki[c] = (float)((ki[c] - mean) * inv) * ly->ikn[c] + ly->ikn[di + c];
        r->st->extra_flops += 8.0 * di;
        memcpy(ikey_at(tf, &r->cache, seqs[i], layer, pos[i]), ki, sizeof(float) * (size_t)di);
    }
    for (int i = 0; i < T; i++) {
        int keys = pos[i] + 1, want = keys < tf->ks ? keys : tf->ks;
        for (int j = 0; j < keys; j++) {
            const float *kj = ikey_at(tf, &r->cache, seqs[i], layer, j);
            double sc = 0;
            for (int hh = 0; hh < Hi; hh++) {
                const float *qh = q + ((size_t)i * Hi + hh) * di;
                float dot = 0;
                for (int c = 0; c < di; c++)
                    dot += qh[c] * kj[c];
                sc += wt[(size_t)i * Hi + hh] * (dot > 0 ? dot : 0);
            }
            score[j] = (float)sc;
        }
        f += 2.0 * keys * Hi * (di + 1); /* q.k per head, then the weighted sum over heads */
        memset(taken, 0, (size_t)(keys > 0 ? keys : 0));
        for (int a = 0; a < want; a++) { /* top-k: the best remaining, earlier key on ties */
            int best = -1;
            for (int j = 0; j < keys; j++)
                if (!taken[j] && (best < 0 || score[j] > score[best]))
                    best = j;
            taken[best] = 1;
        }
        int n = 0;
        for (int j = 0; j < keys; j++)
            if (taken[j])
                sel[(size_t)i * tf->ks + n++] = j;
        nsel[i] = n;
    }
    for (int t = 0; t < r->lay.tp; t++)
        add_flops(r, rank_of(r, stage, g, t), f);
    free(q), free(k), free(wt), free(score), free(taken);
    return 0;
}

/* One attention layer over T rows of one data-parallel group (ep group `g`):
 * x (T, h) updated in place. seqs[i], pos[i]: sequence index and position of
 * row i. With sinks, each head's sink logit joins the softmax denominator;
 * with sparse attention, a row attends only to the keys the indexer selected.
 * Returns -1 when out of memory. */
static int attention_block(run *r, int layer, int stage, int g, float *x, int T, const int *seqs, const int *pos)
{
    hl_minitf *tf = r->tf;
    layer_w *ly = &tf->layers[layer];
    int h = tf->h, d = tf->d, tp = r->lay.tp;
    int Ht = tf->H / tp;
    float *xn = malloc(sizeof(float) * (size_t)T * h);
    float *acc = calloc((size_t)T * h, sizeof(float));
    float *q = malloc(sizeof(float) * (size_t)T * Ht * d);
    float *kk = malloc(sizeof(float) * (size_t)T * d);
    float *vv = malloc(sizeof(float) * (size_t)T * d);
    float *att = malloc(sizeof(float) * (size_t)T * Ht * d);
    float *part = malloc(sizeof(float) * (size_t)T * h);
    float *scores = malloc(sizeof(float) * (size_t)(r->cache.cap + 1));
    int *sel = tf->ks > 0 ? malloc(sizeof(int) * (size_t)T * tf->ks) : NULL;
    int *nsel = tf->ks > 0 ? malloc(sizeof(int) * (size_t)T) : NULL;
    int rc = (!xn || !acc || !q || !kk || !vv || !att || !part || !scores || (tf->ks > 0 && (!sel || !nsel))) ? -1 : 0;
    for (int t = 0; t < tp && rc == 0; t++) {
        int rk = rank_of(r, stage, g, t);
        add_flops(r, rk, rmsnorm(xn, x, ly->norm1, T, h)); /* every TP rank normalises its copy */
        if (tf->ks > 0 && t == 0 && (rc = indexer(r, layer, stage, g, xn, T, seqs, pos, sel, nsel)) != 0)
            break;
        int h0 = t * Ht;
        add_flops(r, rk, gemm(T, Ht * d, h, xn, h, ly->wq + (size_t)h0 * d, tf->H * d, q, Ht * d));
        /* KV heads of this rank: K/tp of them, or one shared when tp > K (replicated) */
        int Kt = tf->K >= tp ? tf->K / tp : 1;
        int k0 = tf->K >= tp ? t * Kt : t / (tp / tf->K);
        for (int kh = k0; kh < k0 + Kt; kh++) {
            add_flops(r, rk, gemm(T, d, h, xn, h, ly->wk + (size_t)kh * d, tf->K * d, kk, d));
            add_flops(r, rk, gemm(T, d, h, xn, h, ly->wv + (size_t)kh * d, tf->K * d, vv, d));
            for (int i = 0; i < T; i++) {
                rope(kk + (size_t)i * d, d, pos[i]);
                memcpy(kv_at(tf, &r->cache, r->cache.k, seqs[i], layer, kh, pos[i]), kk + (size_t)i * d,
                       sizeof(float) * (size_t)d);
                memcpy(kv_at(tf, &r->cache, r->cache.v, seqs[i], layer, kh, pos[i]), vv + (size_t)i * d,
                       sizeof(float) * (size_t)d);
            }
        }
        for (int i = 0; i < T; i++) {
            /* causal: every cached position up to and including this one, or the indexer's choice */
            int keys = tf->ks > 0 ? nsel[i] : pos[i] + 1;
            const int *which = tf->ks > 0 ? sel + (size_t)i * tf->ks : NULL;
            for (int hh = 0; hh < Ht; hh++) {
                int head = h0 + hh;
                int kvh = head / (tf->H / tf->K);
                float *qv = q + ((size_t)i * Ht + hh) * d;
                rope(qv, d, pos[i]);
                float mx = tf->sinks ? ly->sinks[head] : -INFINITY;
                for (int j = 0; j < keys; j++) {
                    const float *kj = kv_at(tf, &r->cache, r->cache.k, seqs[i], layer, kvh, which ? which[j] : j);
                    float sdot = 0;
                    for (int c = 0; c < d; c++)
                        sdot += qv[c] * kj[c];
                    scores[j] = sdot / sqrtf((float)d);
                    if (scores[j] > mx)
                        mx = scores[j];
                }
                double sum = tf->sinks ? exp(ly->sinks[head] - mx) : 0; /* the sink takes probability, adds no value */
                for (int j = 0; j < keys; j++) {
                    scores[j] = expf(scores[j] - mx);
                    sum += scores[j];
                }
                float *o = att + ((size_t)i * Ht + hh) * d;
                memset(o, 0, sizeof(float) * (size_t)d);
                for (int j = 0; j < keys; j++) {
                    const float *vj = kv_at(tf, &r->cache, r->cache.v, seqs[i], layer, kvh, which ? which[j] : j);
                    float p = (float)(scores[j] / sum);
                    for (int c = 0; c < d; c++)
                        o[c] += p * vj[c];
                }
                add_flops(r, rk, 2.0 * keys * (2.0 * d)); /* q.k and p.v per key */
                r->st->extra_flops += 5.0 * keys + 6.0 * d + (tf->sinks ? 2 : 0);
            }
        }
        /* row-parallel output projection: this rank's heads times its rows of wo */
        row_parallel_add(r, rk, T, Ht * d, att, ly->wo + (size_t)h0 * d * h, part, acc);
    }
    if (rc == 0)
        allreduce_residual(r, stage, g, T, acc, x);
    free(xn);
    free(acc);
    free(q);
    free(kk);
    free(vv);
    free(att);
    free(part);
    free(scores);
    free(sel);
    free(nsel);
    return rc;
}

static float softplus(float x) { return x > 20 ? x : log1pf(expf(x)); }
static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* L2-normalises v (n) in place. */
static void l2norm(float *v, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)v[i] * v[i];
    float inv = (float)(1.0 / sqrt(ss + 1e-6));
    for (int i = 0; i < n; i++)
        v[i] *= inv;
}

/* One gated DeltaNet layer (Yang, Kautz, Hatamizadeh, ICLR 2025; Qwen3-Next's
 * Qwen3NextGatedDeltaNet) over T rows, in their order (a sequence's rows by
 * position), recurrent form. Per TP rank its key heads and value heads:
 * q, k, v, z, a, b projections; a causal depthwise conv of width c on q, k, v
 * then SiLU; q, k L2-normalised; per value head with state S (dk x dv):
 *   decay = exp(-exp(A_log) softplus(a + dt_bias)), beta = sigmoid(b),
 *   S <- decay S;  u = beta (v - S^T k);  S <- S + k u^T;  o = S^T q / sqrt(dk)
 * (7 dk dv FLOPs: scale, S^T k, the update, S^T q); o through an RMSNorm
 * gated by silu(z); a row-parallel out_proj and a TP AllReduce. A row at
 * position 0 starts from a zero state (recomputation restarts there). */
static int linear_block(run *r, int layer, int stage, int g, float *x, int T, const int *seqs, const int *pos)
{
    hl_minitf *tf = r->tf;
    layer_w *ly = &tf->layers[layer];
    int h = tf->h, tp = r->lay.tp, dk = tf->dk, dv = tf->dv, c = tf->conv, keep = c > 1 ? c - 1 : 0;
    int Kt = tf->Kl / tp, Vt = tf->Vl / tp, kd = tf->Kl * dk, vd = tf->Vl * dv, rep = tf->Vl / tf->Kl;
    int nq = Kt * dk, nv = Vt * dv, wide = 2 * kd + 2 * vd;
    float *xn = malloc(sizeof(float) * (size_t)T * h);
    float *acc = calloc((size_t)T * h, sizeof(float));
    float *part = malloc(sizeof(float) * (size_t)T * h);
    float *pq = malloc(sizeof(float) * (size_t)T * nq), *pk = malloc(sizeof(float) * (size_t)T * nq);
    float *pv = malloc(sizeof(float) * (size_t)T * nv), *pz = malloc(sizeof(float) * (size_t)T * nv);
    float *pa = malloc(sizeof(float) * (size_t)T * Vt), *pb = malloc(sizeof(float) * (size_t)T * Vt);
    float *o = malloc(sizeof(float) * (size_t)T * nv), *kvm = malloc(sizeof(float) * (size_t)dv);
    int rc = (!xn || !acc || !part || !pq || !pk || !pv || !pz || !pa || !pb || !o || !kvm) ? -1 : 0;
    for (int t = 0; t < tp && rc == 0; t++) {
        int rk = rank_of(r, stage, g, t);
        add_flops(r, rk, rmsnorm(xn, x, ly->norm1, T, h));
        int q0 = t * nq, v0 = t * nv, a0 = t * Vt;
        add_flops(r, rk, gemm(T, nq, h, xn, h, ly->l_qkvz + q0, wide, pq, nq));
        add_flops(r, rk, gemm(T, nq, h, xn, h, ly->l_qkvz + kd + q0, wide, pk, nq));
        add_flops(r, rk, gemm(T, nv, h, xn, h, ly->l_qkvz + 2 * kd + v0, wide, pv, nv));
        add_flops(r, rk, gemm(T, nv, h, xn, h, ly->l_qkvz + 2 * kd + vd + v0, wide, pz, nv));
        add_flops(r, rk, gemm(T, Vt, h, xn, h, ly->l_ba + a0, 2 * tf->Vl, pa, Vt));
        add_flops(r, rk, gemm(T, Vt, h, xn, h, ly->l_ba + tf->Vl + a0, 2 * tf->Vl, pb, Vt));
        for (int i = 0; i < T; i++) {
            float *cx = convx_at(tf, &r->cache, seqs[i], layer);
            /* this rank's conv channels: its q, k and v slices, by their global channel */
            float *rows[3] = {pq + (size_t)i * nq, pk + (size_t)i * nq, pv + (size_t)i * nv};
            int base[3] = {q0, kd + q0, 2 * kd + v0}, width[3] = {nq, nq, nv};
            for (int part_i = 0; part_i < 3; part_i++)
                for (int ch = 0; ch < width[part_i]; ch++) {
                    int gch = base[part_i] + ch;
                    float in = rows[part_i][ch], y = 0;
                    const float *wc = ly->l_conv + (size_t)gch * c;
                    if (pos[i] == 0) /* inputs before the sequence are zero */
                        for (int j = 0; j < keep; j++)
                            cx[(size_t)j * tf->lin_n + gch] = 0;
                    for (int j = 0; j < keep; j++) /* inputs t-keep .. t-1 */
                        y += wc[j] * cx[(size_t)j * tf->lin_n + gch];
                    if (c > 0)
                        y += wc[c - 1] * in;
                    for (int j = 0; j + 1 < keep; j++)
                        cx[(size_t)j * tf->lin_n + gch] = cx[(size_t)(j + 1) * tf->lin_n + gch];
                    if (keep > 0)
                        cx[(size_t)(keep - 1) * tf->lin_n + gch] = in;
                    rows[part_i][ch] = c > 0 ? silu(y) : silu(in);
                }
            add_flops(r, rk, 2.0 * c * (2.0 * nq + nv));
            r->st->extra_flops += 4.0 * (2.0 * nq + nv);
            for (int kh = 0; kh < Kt; kh++) {
                l2norm(rows[0] + (size_t)kh * dk, dk);
                l2norm(rows[1] + (size_t)kh * dk, dk);
            }
            r->st->extra_flops += 6.0 * nq;
            for (int vh = 0; vh < Vt; vh++) {
                int gvh = t * Vt + vh, kh = vh / rep;
                const float *qv = rows[0] + (size_t)kh * dk, *kv = rows[1] + (size_t)kh * dk;
                const float *vv = rows[2] + (size_t)vh * dv;
                float *S = state_at(tf, &r->cache, seqs[i], layer, gvh);
                if (pos[i] == 0)
                    memset(S, 0, sizeof(float) * (size_t)dk * dv);
                float decay = expf(-expf(ly->l_alog[gvh]) * softplus(pa[(size_t)i * Vt + vh] + ly->l_dt[gvh]));
                float beta = sigmoidf(pb[(size_t)i * Vt + vh]);
                memset(kvm, 0, sizeof(float) * (size_t)dv);
                for (int a = 0; a < dk; a++)
                    for (int b = 0; b < dv; b++) {
                        S[(size_t)a * dv + b] *= decay;
                        kvm[b] += S[(size_t)a * dv + b] * kv[a];
                    }
                for (int b = 0; b < dv; b++)
                    kvm[b] = beta * (vv[b] - kvm[b]);
                float *ov = o + (size_t)i * nv + (size_t)vh * dv;
                memset(ov, 0, sizeof(float) * (size_t)dv);
                float qs = 1.0f / sqrtf((float)dk);
                for (int a = 0; a < dk; a++)
                    for (int b = 0; b < dv; b++) {
                        S[(size_t)a * dv + b] += kv[a] * kvm[b];
                        ov[b] += S[(size_t)a * dv + b] * qv[a] * qs;
                    }
                add_flops(r, rk, 7.0 * dk * dv);
                r->st->extra_flops += 2.0 * dv + dk + 12;
                /* gated RMSNorm: o * w / rms(o) * silu(z) */
                double ss = 0;
                for (int b = 0; b < dv; b++)
                    ss += (double)ov[b] * ov[b];
                float inv = (float)(1.0 / sqrt(ss / dv + 1e-6));
                const float *z = pz + (size_t)i * nv + (size_t)vh * dv;
                for (int b = 0; b < dv; b++)
                    ov[b] = ov[b] * inv * ly->l_norm[b] * silu(z[b]);
                r->st->extra_flops += 10.0 * dv;
            }
        }
        row_parallel_add(r, rk, T, nv, o, ly->l_out + (size_t)v0 * h, part, acc);
    }
    if (rc == 0)
        allreduce_residual(r, stage, g, T, acc, x);
    free(xn), free(acc), free(part), free(pq), free(pk), free(pv), free(pz), free(pa), free(pb), free(o), free(kvm);
    return rc;
}

/* SwiGLU over a column slice [c0, c0+w) of an FFN of width Fw: acc += (silu(x*g)*(x*u)) * down. */
static int swiglu_slice(run *r, int rk, const float *xn, int T, const float *gate, const float *up, const float *down,
                        int Fw, int c0, int w, float *acc, float *part)
{
    int h = r->tf->h;
    float *g = malloc(sizeof(float) * (size_t)T * w);
    float *u = malloc(sizeof(float) * (size_t)T * w);
    if (!g || !u) {
        free(g);
        free(u);
        return -1;
    }
    add_flops(r, rk, gemm(T, w, h, xn, h, gate + c0, Fw, g, w));
    add_flops(r, rk, gemm(T, w, h, xn, h, up + c0, Fw, u, w));
    for (size_t i = 0; i < (size_t)T * w; i++)
        g[i] = silu(g[i]) * u[i];
    r->st->extra_flops += 6.0 * T * w;
    row_parallel_add(r, rk, T, w, g, down + (size_t)c0 * h, part, acc);
    free(g);
    free(u);
    return 0;
}

/* Top-k of the router logits of one row, softmax-normalised over the k chosen. */
static void route(const float *logits, int E, int k, int *idx, float *wt)
{
    for (int a = 0; a < k; a++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int b = 0; b < a; b++)
                taken |= idx[b] == e;
            if (!taken && (best < 0 || logits[e] > logits[best]))
                best = e;
        }
        idx[a] = best;
    }
    float mx = logits[idx[0]];
    double sum = 0;
    for (int a = 0; a < k; a++) {
        wt[a] = expf(logits[idx[a]] - mx);
        sum += wt[a];
    }
    for (int a = 0; a < k; a++)
        wt[a] = (float)(wt[a] / sum);
}

/* FFN block for all groups at once (the MoE exchange needs every group's rows):
 * xs[g] (Tg[g], h) updated in place. Returns -1 when out of memory. */
static int ffn_block(run *r, int layer, int stage, float **xs, const int *Tg)
{
    hl_minitf *tf = r->tf;
    layer_w *ly = &tf->layers[layer];
    int h = tf->h, tp = r->lay.tp, ep = r->lay.ep, rc = 0;
    for (int g = 0; g < ep && rc == 0; g++) {
        int T = Tg[g];
        if (T == 0)
            continue;
        float *xn = malloc(sizeof(float) * (size_t)T * h);
        float *acc = calloc((size_t)T * h, sizeof(float));
        float *part = malloc(sizeof(float) * (size_t)T * h);
        if (!xn || !acc || !part) {
            rc = -1;
        } else if (!ly->moe) {
            int w = tf->F / tp;
            for (int t = 0; t < tp; t++) {
                int rk = rank_of(r, stage, g, t);
                add_flops(r, rk, rmsnorm(xn, xs[g], ly->norm2, T, h));
                rc |= swiglu_slice(r, rk, xn, T, ly->gate, ly->up, ly->down, tf->F, t * w, w, acc, part);
            }
            count_allreduce(r, stage, g, (double)T * h * 4);
        } else {
            int E = tf->E, k = tf->k, El = E / ep, w = tf->Fe / tp;
            float *logits = malloc(sizeof(float) * (size_t)T * E);
            int *idx = malloc(sizeof(int) * (size_t)k);
            float *wt = malloc(sizeof(float) * (size_t)k);
            float *one = malloc(sizeof(float) * (size_t)h);
            float *outp = malloc(sizeof(float) * (size_t)h);
            if (!logits || !idx || !wt || !one || !outp)
                rc = -1;
            for (int t = 0; t < tp && rc == 0; t++) {
                int rk = rank_of(r, stage, g, t);
                add_flops(r, rk, rmsnorm(xn, xs[g], ly->norm2, T, h));
                add_flops(r, rk, gemm(T, E, h, xn, h, ly->router, E, logits, E)); /* replicated router */
                if (tf->Fs) {
                    int ws = tf->Fs / tp;
                    rc |= swiglu_slice(r, rk, xn, T, ly->s_gate, ly->s_up, ly->s_down, tf->Fs, t * ws, ws, acc, part);
                }
            }
            for (int i = 0; i < T && rc == 0; i++) {
                route(logits + (size_t)i * E, E, k, idx, wt);
                for (int a = 0; a < k; a++) {
                    int e = idx[a], dest = e / El; /* the group holding expert e */
                    double copy = (double)h * 4;
                    if (ep > 1) {
                        r->st->alltoall_volume += 2 * copy; /* dispatch and combine */
                        if (dest != g) {
                            r->st->alltoall_bytes[rank_of(r, stage, g, 0)] += copy;    /* dispatch */
                            r->st->alltoall_bytes[rank_of(r, stage, dest, 0)] += copy; /* combine */
                        }
                    }
                    /* the expert's group computes it (each TP rank a column slice) */
                    for (int t = 0; t < tp; t++) {
                        int rk = rank_of(r, stage, dest, t);
                        const float *gw = ly->e_gate + (size_t)e * h * tf->Fe, *uw = ly->e_up + (size_t)e * h * tf->Fe;
                        const float *dw = ly->e_down + (size_t)e * tf->Fe * h;
                        memset(one, 0, sizeof(float) * (size_t)h);
                        double before = r->decode ? r->st->decode_model_flops[rk] : r->st->prefill_model_flops[rk];
                        rc |= swiglu_slice(r, rk, xn + (size_t)i * h, 1, gw, uw, dw, tf->Fe, t * w, w, one, outp);
                        double after = r->decode ? r->st->decode_model_flops[rk] : r->st->prefill_model_flops[rk];
                        r->st->expert_flops[rk] += after - before;
                        for (int c = 0; c < h; c++)
                            acc[(size_t)i * h + c] += wt[a] * one[c];
                    }
                    r->st->extra_flops += 2.0 * h;
                }
            }
            if (ep == 1)
                count_allreduce(r, stage, g, (double)T * h * 4); /* expert partial sums over the TP ranks */
            free(logits);
            free(idx);
            free(wt);
            free(one);
            free(outp);
        }
        if (rc == 0) {
            for (size_t i = 0; i < (size_t)T * h; i++)
                xs[g][i] += acc[i];
            r->st->extra_flops += (double)T * h;
        }
        free(xn);
        free(acc);
        free(part);
    }
    return rc;
}

/* Runs all layers for the rows of every group, then the LM head for rows
 * flagged in `want` (one per sequence), writing logits (rows, V). Returns -1
 * when out of memory. */
static int forward(run *r, float **xs, const int *Tg, int **seqs, int **pos, int **want, float **logits)
{
    hl_minitf *tf = r->tf;
    int h = tf->h, V = tf->V, tp = r->lay.tp, pp = r->lay.pp;
    for (int l = 0; l < tf->L; l++) {
        int stage = (int)((int64_t)l * pp / tf->L);
        for (int g = 0; g < r->lay.ep; g++)
            if (Tg[g] && (tf->layers[l].linear ? linear_block(r, l, stage, g, xs[g], Tg[g], seqs[g], pos[g])
                                               : attention_block(r, l, stage, g, xs[g], Tg[g], seqs[g], pos[g])))
                return -1;
        if (ffn_block(r, l, stage, xs, Tg))
            return -1;
        int next = l + 1 < tf->L ? (int)((int64_t)(l + 1) * pp / tf->L) : stage;
        if (next != stage) /* hand the activations to the next stage */
            for (int g = 0; g < r->lay.ep; g++)
                for (int t = 0; t < tp; t++)
                    r->st->sendrecv_bytes[rank_of(r, stage, g, t)] += (double)Tg[g] * h * 4;
    }
    int last = pp - 1, w = V / tp;
    float *xn = malloc(sizeof(float) * (size_t)h);
    if (!xn)
        return -1;
    for (int g = 0; g < r->lay.ep; g++) {
        int rows = 0;
        for (int i = 0; i < Tg[g]; i++) {
            if (!want[g][i])
                continue;
            rmsnorm(xn, xs[g] + (size_t)i * h, tf->final_norm, 1, h);
            r->st->extra_flops += 4.0 * h;
            for (int t = 0; t < tp; t++) /* vocab-parallel head, gathered */
                add_flops(r, rank_of(r, last, g, t),
                          gemm(1, w, h, xn, h, tf->head + (size_t)t * w, V, logits[g] + (size_t)rows * V + t * w, V));
            rows++;
        }
        if (tp > 1)
            for (int t = 0; t < tp; t++)
                r->st->allgather_bytes[rank_of(r, last, g, t)] += (double)(tp - 1) / tp * rows * V * 4;
    }
    free(xn);
    return 0;
}

static int argmax(const float *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b])
            b = i;
    return b;
}

hl_status hl_minitf_generate(hl_minitf *tf, const hl_minitf_layout *layout, int32_t batch, const int32_t *prompts,
                             int32_t n_prompt, int32_t n_new, int32_t use_kv_cache, int32_t *tokens, float *logits,
                             hl_minitf_stats *stats, hl_err *err)
{
    if (!tf)
        return hl_fail(err, HL_EINVAL, "hl_minitf_generate: the mini-transformer is NULL");
    hl_minitf_layout lay = layout ? *layout : (hl_minitf_layout){1, 1, 1};
    if (lay.tp < 1 || lay.ep < 1 || lay.pp < 1)
        return hl_fail(err, HL_EINVAL, "minitf: tp, ep, pp must be >= 1 (got %d, %d, %d)", lay.tp, lay.ep, lay.pp);
    if (lay.tp > 1 && lay.ep > 1)
        return hl_fail(err, HL_EUNSUPPORTED, "minitf: tp and ep together are not implemented (use one with pp)");
    if (lay.tp * lay.ep * lay.pp > HL_MINITF_MAX_RANKS)
        return hl_fail(err, HL_EINVAL, "minitf: %d ranks; at most %d", lay.tp * lay.ep * lay.pp, HL_MINITF_MAX_RANKS);
    if (tf->H % lay.tp || tf->V % lay.tp || (tf->F && tf->F % lay.tp) || (tf->E && tf->Fe % lay.tp) ||
        (tf->Fs && tf->Fs % lay.tp) || (tf->K < lay.tp && lay.tp % tf->K) || (tf->Kl && tf->Kl % lay.tp))
        return hl_fail(err, HL_EINVAL, "minitf: tp = %d must divide heads, linear key heads, vocab and FFN widths",
                       lay.tp);
    if (lay.ep > 1 && (tf->E == 0 || tf->E % lay.ep || batch % lay.ep))
        return hl_fail(err, HL_EINVAL, "minitf: ep = %d must divide the experts (%d) and the batch (%d)", lay.ep, tf->E,
                       batch);
    if (lay.pp > tf->L)
        return hl_fail(err, HL_EINVAL, "minitf: pp = %d exceeds %d layers", lay.pp, tf->L);
    if (batch < 1 || n_prompt < 1 || n_new < 1 || (int64_t)batch * (n_prompt + n_new) > 1 << 20)
        return hl_fail(err, HL_EINVAL, "minitf: batch, prompt and new tokens must be >= 1 and small");
    for (int64_t i = 0; i < (int64_t)batch * n_prompt; i++)
        if (prompts[i] < 0 || prompts[i] >= tf->V)
            return hl_fail(err, HL_EINVAL, "minitf: prompt token %d is not in 0..%d", prompts[i], tf->V - 1);
    hl_minitf_stats local;
    hl_minitf_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    st->ranks = lay.tp * lay.ep * lay.pp;
    run r = {tf, lay, st, {NULL, NULL, n_prompt + n_new, NULL, NULL, NULL}, 0};
    size_t kvn = (size_t)batch * tf->L * tf->K * r.cache.cap * tf->d;
    r.cache.k = calloc(kvn, sizeof(float));
    r.cache.v = calloc(kvn, sizeof(float));
    int linear = tf->m.linear_fraction > 0, keep = tf->conv > 1 ? tf->conv - 1 : 0;
    if (tf->ks > 0)
        r.cache.ikey = calloc((size_t)batch * tf->L * r.cache.cap * tf->di, sizeof(float));
    if (linear) {
        r.cache.state = calloc((size_t)batch * tf->L * tf->Vl * tf->dk * tf->dv, sizeof(float));
        r.cache.convx = calloc((size_t)batch * tf->L * (keep > 0 ? keep : 1) * tf->lin_n, sizeof(float));
    }
    int ep = lay.ep, h = tf->h, V = tf->V, bl = batch / ep;
    float *xs[HL_MINITF_MAX_RANKS];
    int *seqs[HL_MINITF_MAX_RANKS], *pos[HL_MINITF_MAX_RANKS], *want[HL_MINITF_MAX_RANKS], Tg[HL_MINITF_MAX_RANKS];
    float *lg[HL_MINITF_MAX_RANKS];
    int rows_max = bl * (n_prompt + n_new);
    int ok = r.cache.k && r.cache.v && (tf->ks == 0 || r.cache.ikey) && (!linear || (r.cache.state && r.cache.convx));
    for (int g = 0; g < ep; g++) {
        xs[g] = malloc(sizeof(float) * (size_t)rows_max * h);
        seqs[g] = malloc(sizeof(int) * (size_t)rows_max);
        pos[g] = malloc(sizeof(int) * (size_t)rows_max);
        want[g] = malloc(sizeof(int) * (size_t)rows_max);
        lg[g] = malloc(sizeof(float) * (size_t)bl * V);
        ok &= xs[g] && seqs[g] && pos[g] && want[g] && lg[g];
    }
    int32_t *seq_tokens = malloc(sizeof(int32_t) * (size_t)batch * (n_prompt + n_new));
    ok &= seq_tokens != NULL;
    hl_status status = HL_OK;
    if (!ok) {
        status = hl_fail(err, HL_ENOMEM, "minitf: out of memory");
        goto done;
    }
    for (int b = 0; b < batch; b++)
        memcpy(seq_tokens + (size_t)b * (n_prompt + n_new), prompts + (size_t)b * n_prompt,
               sizeof(int32_t) * (size_t)n_prompt);
    int len = n_prompt; /* tokens known per sequence */
    for (int step = 0; step < n_new; step++) {
        /* rows of this pass: the prompt (or, without a cache, everything) first; then one token each */
        int first = (step == 0 || !use_kv_cache) ? 0 : len - 1;
        r.decode = step > 0;
        for (int g = 0; g < ep; g++) {
            int n = 0;
            for (int bi = 0; bi < bl; bi++) {
                int b = g * bl + bi;
                for (int p = first; p < len; p++) {
                    int tok = seq_tokens[(size_t)b * (n_prompt + n_new) + p];
                    memcpy(xs[g] + (size_t)n * h, tf->emb + (size_t)tok * h, sizeof(float) * (size_t)h);
                    seqs[g][n] = b;
                    pos[g][n] = p;
                    want[g][n] = p == len - 1;
                    n++;
                }
            }
            Tg[g] = n;
        }
        double t0 = hl_clock_s();
        if (forward(&r, xs, Tg, seqs, pos, want, lg)) {
            status = hl_fail(err, HL_ENOMEM, "minitf: out of memory in the forward pass");
            goto done;
        }
        double dt = hl_clock_s() - t0;
        if (step == 0)
            st->prefill_s += dt;
        else
            st->decode_s += dt;
        for (int g = 0; g < ep; g++)
            for (int bi = 0; bi < bl; bi++) {
                int b = g * bl + bi;
                const float *row = lg[g] + (size_t)bi * V;
                int tok = argmax(row, V);
                tokens[(size_t)b * n_new + step] = tok;
                if (logits)
                    memcpy(logits + ((size_t)b * n_new + step) * V, row, sizeof(float) * (size_t)V);
                seq_tokens[(size_t)b * (n_prompt + n_new) + len] = tok;
            }
        len++;
    }
    /* Weights and KV cache each rank holds */
    for (int stage = 0; stage < lay.pp; stage++)
        for (int g = 0; g < ep; g++)
            for (int t = 0; t < lay.tp; t++) {
                int rk = rank_of(&r, stage, g, t), tp = lay.tp;
                double w = 0, kvb = 0;
                int Kt = tf->K >= tp ? tf->K / tp : 1;
                for (int l = 0; l < tf->L; l++) {
                    if ((int)((int64_t)l * lay.pp / tf->L) != stage)
                        continue;
                    const layer_w *ly = &tf->layers[l];
                    if (ly->linear) { /* this rank's heads; the gated norm's weight is shared */
                        int Klt = tf->Kl / tp, Vlt = tf->Vl / tp;
                        double nq = (double)Klt * tf->dk, nv = (double)Vlt * tf->dv;
                        w += 2.0 * h + h * (2 * nq + 2 * nv) + (double)h * 2 * Vlt + (2 * nq + nv) * tf->conv +
                             2.0 * Vlt + tf->dv + nv * h;
                        kvb += (double)bl * (Vlt * (double)tf->dk * tf->dv + (2 * nq + nv) * keep) * 4;
                    } else {
                        w += 2.0 * h + (double)h * (tf->H / tp + 2 * Kt) * tf->d + (double)tf->H / tp * tf->d * h;
                        if (tf->sinks)
                            w += (double)tf->H / tp;
                        if (tf->ks > 0) /* the indexer is whole on every rank, so is its key cache */
                            w += (double)h * tf->Hi * tf->di + (double)h * tf->di + (double)h * tf->Hi + 2.0 * tf->di;
                        kvb += 2.0 * bl * (len - 1) * Kt * tf->d * 4 +
                               (tf->ks > 0 ? (double)bl * (len - 1) * tf->di * 4 : 0);
                    }
                    if (!ly->moe)
                        w += 3.0 * h * tf->F / tp;
                    else
                        w += (double)h * tf->E + 3.0 * (tf->E / ep) * h * tf->Fe / tp + 3.0 * h * tf->Fs / tp;
                }
                if (stage == 0)
                    w += (double)V / tp * h;
                if (stage == lay.pp - 1)
                    w += (double)V / tp * h + h;
                st->weight_bytes[rk] = w * 4;
                st->kv_bytes[rk] = use_kv_cache ? kvb : 0;
            }
done:
    free(r.cache.k);
    free(r.cache.v);
    free(r.cache.ikey);
    free(r.cache.state);
    free(r.cache.convx);
    for (int g = 0; g < ep; g++) {
        free(xs[g]);
        free(seqs[g]);
        free(pos[g]);
        free(want[g]);
        free(lg[g]);
    }
    free(seq_tokens);
    return status;
}

hl_status hl_minitf_measure_cpu(int32_t n, double bytes, double *gemm_flops, double *mem_bw, hl_err *err)
{
    if (n < 16 || n > 4096 || !(bytes >= 1e6 && bytes <= 4e9))
        return hl_fail(err, HL_EINVAL, "minitf: measure_cpu needs 16 <= n <= 4096 and 1e6 <= bytes <= 4e9");
    float *A = malloc(sizeof(float) * (size_t)n * n), *B = malloc(sizeof(float) * (size_t)n * n);
    float *C = malloc(sizeof(float) * (size_t)n * n);
    size_t m = (size_t)(bytes / 12);
    float *x = malloc(sizeof(float) * m), *y = malloc(sizeof(float) * m), *z = malloc(sizeof(float) * m);
    hl_status st = HL_OK;
    if (!A || !B || !C || !x || !y || !z) {
        st = hl_fail(err, HL_ENOMEM, "minitf: out of memory");
        goto out;
    }
    uint64_t s = 7;
    fill(A, (size_t)n * n, 1, &s);
    fill(B, (size_t)n * n, 1, &s);
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = hl_clock_s();
        double f = gemm(n, n, n, A, n, B, n, C, n);
        double dt = hl_clock_s() - t0;
        if (dt > 0 && dt < best)
            best = dt;
        *gemm_flops = f / best;
    }
    for (size_t i = 0; i < m; i++) {
        x[i] = 1.0f;
        y[i] = 2.0f;
    }
    best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = hl_clock_s();
        for (size_t i = 0; i < m; i++) /* triad: read x, y; write z */
            z[i] = x[i] + 3.0f * y[i];
        double dt = hl_clock_s() - t0;
        if (dt > 0 && dt < best)
            best = dt;
    }
    *mem_bw = (double)m * 12 / best;
    if (z[m / 2] != 7.0f)
        st = hl_fail(err, HL_EINVAL, "minitf: triad check failed");
out:
    free(A);
    free(B);
    free(C);
    free(x);
    free(y);
    free(z);
    return st;
}
