/* The serve schema: the serve field table (every field of a serving run, with
 * its type, unit, range, default and help), its setters and every check of a
 * serving configuration, alone and across fields; and the serve result tables
 * (result, per request, per step, KV samples, steady state). hl.serve, `hbdlab
 * serve` JSON, serving sweeps and hl.help "serve" read these tables only. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/io.h"
#include "hbdlab/plan.h"
#include "hbdlab/router.h"
#include "serve_int.h"
#include "serve_prefix_int.h"

#define DISTS "fixed|uniform|normal|trace|auto"

/* Row initialisers. M: hl_serve_cfg member; NM: the name (hl.serve key, sweep
 * axis, JSON key); PATH: the nested name ("input.min": input = {min = ...}) or
 * NULL; DEF: the default (enums: the index of the name). A member at its
 * default counts as "not given". */
#define ROW(M, NM, PATH, TYPE, SIZE, LO, HI, UNIT, DEF, HELP, NAMES, ZERO_OK)                                       \
    {                                                                                                               \
        .name = NM, .type = TYPE, .offset = (int32_t)offsetof(hl_serve_cfg, M), .size = SIZE, .min = LO, .max = HI, \
        .unit = UNIT, .help = HELP, .enum_names = NAMES, .zero_ok = ZERO_OK, .path = PATH, .def = DEF               \
    }
#define NUM(M, NM, PATH, LO, HI, UNIT, DEF, HELP) \
    ROW(M, NM, PATH, HL_FIELD_DOUBLE, (int32_t)sizeof(double), LO, HI, UNIT, DEF, HELP, NULL, 0)
#define INT(M, NM, PATH, LO, HI, ZERO_OK, DEF, HELP) \
    ROW(M, NM, PATH, HL_FIELD_INT64, (int32_t)sizeof(int64_t), LO, HI, "", DEF, HELP, NULL, ZERO_OK)
#define BOOL(M, NM, DEF, HELP) ROW(M, NM, NULL, HL_FIELD_BOOL, (int32_t)sizeof(int32_t), 0, 1, "", DEF, HELP, NULL, 0)
#define ENUM(M, NM, PATH, NAMES, DEF, HELP) \
    ROW(M, NM, PATH, HL_FIELD_ENUM, (int32_t)sizeof(int32_t), 0, 0, "", DEF, HELP, NAMES, 0)
#define STR(M, NM, HELP) \
    ROW(M, NM, NULL, HL_FIELD_STRING, (int32_t)sizeof(((hl_serve_cfg *)0)->M), 0, 0, "", 0, HELP, NULL, 0)
#define TABLE(M, NM, PATH, HELP) ROW(M, NM, PATH, HL_FIELD_TABLE, 0, 0, 0, "", 0, HELP, NULL, 0)

/* THE serve field table: the only place a serve field is named.
 *
 * To add a serve field: (1) add a member to hl_serve_cfg in
 * core/include/hbdlab/serve.h with its unit; (2) add one row below, with a
 * default that leaves existing results unchanged and means "not given";
 * (3) if it has no effect with some other field, or contradicts one, say so
 * in hl_serve_check below. hl_serve_init, the setters, hl.serve (and its
 * nested groups), `hbdlab serve` JSON, serving sweep axes and hl.help "serve"
 * pick the row up by themselves. SI units; friendly units (slo = {ttft_ms})
 * are the binding's aliases. */
static const hl_field serve_fields[] = {
    ENUM(mode, "mode", NULL, "simulate|analytical", HL_SERVE_SIMULATE,
         "simulate: the scheduler iteration by iteration; analytical: the steady state (docs/MODEL.md 12)"),
    ENUM(arrival, "arrival", NULL, "poisson|constant|concurrency|trace|auto", HL_ARRIVAL_AUTO,
         "arrival process; auto: trace if given, else concurrency if given, else poisson at rate"),
    NUM(rate, "rate", NULL, 1e-6, 1e9, "1/s", 0,
        "requests/s of an open loop (poisson, constant); one of rate, concurrency, trace is required"),
    INT(concurrency, "concurrency", NULL, 1, 1e7, 0, 0, "closed loop: clients, each with one request in flight"),
    NUM(think_s, "think_s", NULL, 0, 1e6, "s", 0,
        "closed loop: mean think time (exponential) from a reply to the client's next request"),
    NUM(start_jitter_s, "start_jitter_s", NULL, 0, 1e6, "s", -1,
        "closed loop: first requests at uniform times in [0, this) (-1: one request's time alone)"),
    INT(requests, "requests", NULL, 1, 1e8, 0, 0, "requests to simulate (default 1000; a trace: all of it)"),
    INT(seed, "seed", NULL, 0, 9007199254740992.0, 0, 1, "RNG seed of arrivals, lengths, think times and starts"),
    ENUM(input.kind, "input_dist", "input.dist", DISTS, HL_LEN_AUTO,
         "prompt length distribution (auto: the trace's lengths with a trace, else fixed)"),
    NUM(input.mean, "input_mean", "input.mean", 1, 1e8, "", 1024, "prompt tokens: fixed length, or normal mean"),
    NUM(input.std, "input_std", "input.std", 1e-6, 1e8, "", 0, "normal: standard deviation of the prompt length"),
    NUM(input.lo, "input_min", "input.min", 1, 1e8, "", 0,
        "uniform: shortest prompt (required); normal: lower clamp (default 1)"),
    NUM(input.hi, "input_max", "input.max", 1, 1e8, "", 0,
        "uniform: longest prompt (required); normal: upper clamp (default 1e8)"),
    ENUM(output.kind, "output_dist", "output.dist", DISTS, HL_LEN_AUTO,
         "generated length distribution (auto: the trace's lengths with a trace, else fixed)"),
    NUM(output.mean, "output_mean", "output.mean", 1, 1e8, "", 128,
        "generated tokens (the first from the prefill): fixed length, or normal mean"),
    NUM(output.std, "output_std", "output.std", 1e-6, 1e8, "", 0, "normal: standard deviation of the output length"),
    NUM(output.lo, "output_min", "output.min", 1, 1e8, "", 0,
        "uniform: shortest output (required); normal: lower clamp (default 1)"),
    NUM(output.hi, "output_max", "output.max", 1, 1e8, "", 0,
        "uniform: longest output (required); normal: upper clamp (default 1e8)"),
    STR(trace_file, "trace",
        "CSV (arrival_s, input, output columns; optional session, turn, prefix, prefix_len) or JSONL file of requests"),
    INT(max_seqs, "max_seqs", NULL, 1, 1e6, 0, 256, "sequences in one iteration (vLLM max_num_seqs)"),
    INT(token_budget, "token_budget", NULL, 1, 1e7, 0, 8192, "tokens in one iteration (vLLM max_num_batched_tokens)"),
    BOOL(chunked_prefill, "chunked_prefill", 1, "decodes first, prompts chunked into the rest of the budget"),
    INT(chunk, "chunk", NULL, 1, 1e7, 1, 0, "most prompt tokens of one request per iteration (0 = token_budget)"),
    INT(block_tokens, "block_tokens", NULL, 1, 1e6, 0, 16, "tokens of a paged KV block"),
    NUM(kv_blocks, "kv_blocks", NULL, 1, 1e12, "", 0, "KV blocks of the instance (0 = from HBM after weights)"),
    BOOL(reserve, "reserve", 0, "admission reserves the whole sequence's KV (no preemption; TensorRT-LLM)"),
    NUM(slo_ttft_s, "slo_ttft_s", "slo.ttft_s", 1e-9, 1e9, "s", INFINITY, "SLO on time to first token (none: omit)"),
    NUM(slo_tpot_s, "slo_tpot_s", "slo.tpot_s", 1e-9, 1e9, "s", INFINITY,
        "SLO on time per output token after the first (none: omit)"),
    INT(warmup, "warmup", NULL, 1, 1e8, 1, 0, "first requests (arrival order) left out of the statistics"),
    BOOL(keep_requests, "keep_requests", 0, "add per_request rows to the result"),
    BOOL(keep_steps, "keep_steps", 0, "add step_log rows (every iteration) to the result"),
    INT(max_samples, "max_samples", NULL, 2, 1e6, 0, 256, "points of the KV-utilisation series (decimated)"),
    TABLE(disagg, "disagg_prefill", "disagg.prefill",
          "disaggregated: the prefill pool's instance fields (parallel = {tp =, gpus =}, cluster, ...) over the "
          "top level's"),
    TABLE(disagg, "disagg_decode", "disagg.decode", "disaggregated: the decode pool's instance fields"),
    ENUM(kv_link, "kv_link", "disagg.kv_link", "auto|scaleup|scaleout", HL_KV_LINK_AUTO,
         "disaggregated: the KV transfer's links (auto: scale-up when both pools sit in one HBD)"),
    INT(replicas, "replicas", NULL, 1, 1e6, 0, 1,
        "instances of the mapping behind the router (each parallel.gpus GPUs; default: the cluster split evenly)"),
    ENUM(disagg_clock, "disagg_clock", "disagg.clock", "concurrent|sequential", HL_DISAGG_CONCURRENT,
         "disaggregated: both pools on one clock (KV flows, back-pressure) or one after the other"),
    ENUM(router, "router", NULL, "round_robin|least_loaded|kv_aware", HL_ROUTER_ROUND_ROBIN,
         "where a request goes, among the instances and the DP ranks of one: in turn, the fewest outstanding "
         "tokens, the most free KV blocks"),
    BOOL(prefix_cache, "prefix_cache", 0,
         "automatic prefix caching: full KV blocks named by their prefix, reused by later prompts, evicted LRU"),
    INT(shared_prefix, "shared_prefix", NULL, 1, 1e8, 0, 0,
        "tokens every prompt starts with (a system prompt, part of input); cached with prefix_cache"),
    INT(session_turns, "session_turns", "sessions.turns", 1, 1e6, 0, 0,
        "multi-turn conversations of this many requests: a turn's prompt = the history + its input"),
    NUM(session_think_s, "session_think_s", "sessions.think_s", 0, 1e6, "s", 0,
        "sessions: from a turn's last token to the next turn's arrival"),
    NUM(offload_bytes, "kv_offload_capacity_bytes", "kv_offload.capacity_bytes", 1, 1e15, "B", 0,
        "KV offload tier: host memory per GPU holding prefix blocks evicted from HBM (needs prefix_cache)"),
    NUM(offload_bw, "kv_offload_bw", "kv_offload.bw", 1e6, 1e14, "B/s", 0,
        "KV offload: host-to-GPU bandwidth per GPU (or kv_offload.link)"),
    NUM(offload_host, "kv_offload_host_bytes", "kv_offload.host_bytes", 1, 1e15, "B", 0,
        "KV offload: host memory per GPU (default: the link's part; the tier must fit in it)"),
    ENUM(offload_link, "kv_offload_link", "kv_offload.link", HL_OFFLOAD_LINK_NAMES, HL_OFFLOAD_CUSTOM,
         "KV offload: host link preset of bw and host memory (docs/MODEL.md 12)"),
    ROW(offload_overlap, "kv_offload_overlap", "kv_offload.overlap", HL_FIELD_BOOL, (int32_t)sizeof(int32_t), 0, 1, "",
        0, "KV offload: a host block's reload runs under the step's compute (layer by layer), not before it", NULL, 0),
};
enum { N_FIELDS = (int)(sizeof serve_fields / sizeof serve_fields[0]) };
static const hl_field_set serve_set = {"serve", serve_fields, N_FIELDS, NULL};

const hl_field_set *hl_serve_fields(void) { return &serve_set; }

const hl_field *hl_serve_field(const char *name)
{
    if (!name)
        return NULL;
    for (int32_t i = 0; i < N_FIELDS; i++)
        if (strcmp(serve_fields[i].name, name) == 0 || (serve_fields[i].path && !strcmp(serve_fields[i].path, name)))
            return &serve_fields[i];
    return NULL;
}

static void set_default(hl_serve_cfg *c, const hl_field *f)
{
    char *at = (char *)c + f->offset;
    switch (f->type) {
    case HL_FIELD_DOUBLE: *(double *)at = f->def; break;
    case HL_FIELD_INT64: *(int64_t *)at = (int64_t)f->def; break;
    case HL_FIELD_STRING: at[0] = '\0'; break;
    case HL_FIELD_TABLE: *(int32_t *)at = 0; break;
    default: *(int32_t *)at = (int32_t)f->def; break; /* bools and enums */
    }
}

void hl_serve_init(hl_serve_cfg *c, const hl_job *job)
{
    memset(c, 0, sizeof *c);
    c->job = *job;
    for (int32_t i = 0; i < N_FIELDS; i++)
        set_default(c, &serve_fields[i]);
}

int hl_serve_field_given(const hl_serve_cfg *c, const hl_field *f)
{
    const char *at = (const char *)c + f->offset;
    switch (f->type) {
    case HL_FIELD_DOUBLE: return !(*(const double *)at == f->def);
    case HL_FIELD_INT64: return *(const int64_t *)at != (int64_t)f->def;
    case HL_FIELD_STRING: return at[0] != '\0';
    case HL_FIELD_TABLE: return *(const int32_t *)at != 0;
    default: return *(const int32_t *)at != (int32_t)f->def;
    }
}

static int given(const hl_serve_cfg *c, const char *name) { return hl_serve_field_given(c, hl_serve_field(name)); }

/* The name a message shows: the path when the row has one ("input.min"). */
static const char *shown(const hl_field *f) { return f->path ? f->path : f->name; }

/* A copy of row f named as shown, so the generic setter's message names input.min, not input_min. */
static hl_field as_shown(const hl_field *f)
{
    hl_field g = *f;
    g.name = shown(f);
    return g;
}

/* Whether `name` is a group of paths ("input" for input.dist, input.mean, ...). */
static int is_group(const char *name)
{
    size_t n = strlen(name);
    for (int32_t i = 0; i < N_FIELDS; i++) {
        const char *p = serve_fields[i].path;
        if (p && strncmp(p, name, n) == 0 && p[n] == '.')
            return 1;
    }
    return 0;
}

void hl_serve_clear_group(hl_serve_cfg *c, const char *group)
{
    if (!c || !group)
        return;
    size_t n = strlen(group);
    for (int32_t i = 0; i < N_FIELDS; i++) {
        const hl_field *f = &serve_fields[i];
        if (!f->path || strncmp(f->path, group, n) != 0 || f->path[n] != '.')
            continue;
        set_default(c, f);
        if (strcmp(f->path + n + 1, "mean") == 0) /* a table names its own mean: no default length */
            *(double *)((char *)c + f->offset) = 0;
    }
}

/* "serve: unknown field 'x' (did you mean 'y'?)" over the names, paths and groups of the table. */
static hl_status unknown(const char *name, hl_err *err)
{
    const char *cand[3 * N_FIELDS + 1];
    int n = 0;
    for (int32_t i = 0; i < N_FIELDS; i++) {
        cand[n++] = serve_fields[i].name;
        if (serve_fields[i].path)
            cand[n++] = serve_fields[i].path;
    }
    int best = 99;
    const char *pick = NULL;
    for (int i = 0; i < n; i++) {
        int d = hl_edit_distance(name, cand[i]);
        if (d < best) {
            best = d;
            pick = cand[i];
        }
    }
    if (pick && best <= (int)strlen(name) / 3 + 1)
        return hl_fail(err, HL_EINVAL, "serve: unknown field '%s' (did you mean '%s'?)", name, pick);
    return hl_fail(err, HL_EINVAL, "serve: unknown field '%s'", name);
}

hl_status hl_serve_set_number(hl_serve_cfg *c, const char *name, double v, hl_err *err)
{
    if (!c || !name)
        return hl_fail(err, HL_EINVAL, "hl_serve_set_number: the %s is NULL", !c ? "configuration" : "field name");
    const hl_field *f = hl_serve_field(name);
    if (!f && (strcmp(name, "input") == 0 || strcmp(name, "output") == 0)) { /* a fixed length */
        char mean[16];
        snprintf(mean, sizeof mean, "%s.mean", name);
        hl_serve_cfg probe = *c;
        hl_serve_clear_group(&probe, name);
        hl_field g = *hl_serve_field(mean);
        g.name = name; /* "serve field 'input': 0 is out of range" */
        hl_status st = hl_field_set_number_at(&serve_set, &g, &probe, v, err);
        if (st)
            return st;
        (strcmp(name, "input") == 0 ? &probe.input : &probe.output)->kind = HL_LEN_FIXED;
        *c = probe;
        return HL_OK;
    }
    if (!f)
        return is_group(name) ? hl_fail(err, HL_EINVAL, "serve field '%s': expected a table of %s.* fields", name, name)
                              : unknown(name, err);
    if (f->type == HL_FIELD_TABLE)
        return hl_fail(err, HL_EINVAL, "serve field '%s': expected a table of instance fields, got a number", shown(f));
    if (f->type == HL_FIELD_STRING)
        return hl_fail(err, HL_EINVAL, "serve field '%s': expected a string, got a number", shown(f));
    hl_field g = as_shown(f);
    return hl_field_set_number_at(&serve_set, &g, c, v, err);
}

hl_status hl_serve_set_string(hl_serve_cfg *c, const char *name, const char *v, hl_err *err)
{
    if (!c || !name || !v)
        return hl_fail(err, HL_EINVAL, "hl_serve_set_string: the %s is NULL",
                       !c      ? "configuration"
                       : !name ? "field name"
                               : "value");
    if ((strcmp(name, "input") == 0 || strcmp(name, "output") == 0)) {
        if (strcmp(v, "trace") != 0)
            return hl_fail(err, HL_EINVAL, "serve field '%s': '%s' is not a number, \"trace\" or {dist = ...}", name,
                           v);
        hl_serve_clear_group(c, name);
        (strcmp(name, "input") == 0 ? &c->input : &c->output)->kind = HL_LEN_TRACE;
        return HL_OK;
    }
    const hl_field *f = hl_serve_field(name);
    if (!f)
        return is_group(name) ? hl_fail(err, HL_EINVAL, "serve field '%s': expected a table of %s.* fields", name, name)
                              : unknown(name, err);
    if (f->type == HL_FIELD_TABLE)
        return hl_fail(err, HL_EINVAL, "serve field '%s': expected a table of instance fields, got a string", shown(f));
    hl_field_set one = {"serve", f, 1, NULL};
    hl_field g = as_shown(f);
    one.fields = &g;
    hl_status st = hl_field_set_string(&one, c, g.name, v, err);
    if (st == HL_OK && f->type == HL_FIELD_STRING && strlen(v) == 0)
        return hl_fail(err, HL_EINVAL, "serve field '%s': the empty string names no file", shown(f));
    return st;
}

/* ---- checks ----------------------------------------------------------------------- */

/* Each row alone: a given value in its range, a type's values only (the defaults are valid by construction). */
static hl_status check_rows(const hl_serve_cfg *c, hl_err *err)
{
    for (int32_t i = 0; i < N_FIELDS; i++) {
        const hl_field *f = &serve_fields[i];
        if (f->type == HL_FIELD_STRING || f->type == HL_FIELD_TABLE || !hl_serve_field_given(c, f))
            continue;
        size_t pl = f->path ? strlen(f->path) : 0;
        if (pl > 5 && strcmp(f->path + pl - 5, ".mean") == 0 && *(const double *)((const char *)c + f->offset) == 0)
            continue; /* a group's part a table left out (hl_serve_clear_group): check_dist says if it is needed */
        hl_field g = as_shown(f);
        hl_field_set one = {"serve", &g, 1, NULL};
        hl_status st = hl_field_check_all(&one, c, err);
        if (st)
            return st;
    }
    return HL_OK;
}

/* Requests a run simulates: requests, else 1000, or the whole trace. */
static int64_t requests_of(const hl_serve_cfg *c, int trace)
{
    if (trace)
        return c->requests > 0 ? c->requests : c->n_trace;
    return c->requests > 0 ? c->requests : 1000;
}

static const char *dist_name(int32_t kind)
{
    static const char *const names[] = {"fixed", "uniform", "normal", "trace", "auto"};
    return kind >= 0 && kind <= HL_LEN_AUTO ? names[kind] : "?";
}

/* One length distribution (`which`: "input" or "output") once the trace is known: each part
 * given must be read by its kind, each part the kind needs must be given. */
static hl_status check_dist(const hl_len_dist *d, const char *which, int trace, hl_err *err)
{
    char mean_path[16];
    snprintf(mean_path, sizeof mean_path, "%s.mean", which);
    double def_mean = hl_serve_field(mean_path)->def;
    int kind = d->kind == HL_LEN_AUTO ? (trace ? HL_LEN_TRACE : HL_LEN_FIXED) : d->kind;
    if (kind < 0 || kind > HL_LEN_TRACE)
        return hl_fail(err, HL_EINVAL, "serve field '%s.dist': %d is not one of fixed, uniform, normal, trace", which,
                       (int)d->kind);
    const char *dn = dist_name(kind);
    const struct {
        const char *key;
        double v;
        int given, used; /* used: whether this kind reads it */
    } parts[] = {{"mean", d->mean, d->mean != 0 && d->mean != def_mean, kind == HL_LEN_FIXED || kind == HL_LEN_NORMAL},
                 {"std", d->std, d->std != 0, kind == HL_LEN_NORMAL},
                 {"min", d->lo, d->lo != 0, kind == HL_LEN_UNIFORM || kind == HL_LEN_NORMAL},
                 {"max", d->hi, d->hi != 0, kind == HL_LEN_UNIFORM || kind == HL_LEN_NORMAL}};
    for (int k = 0; k < 4; k++) {
        if (parts[k].given && !parts[k].used)
            return hl_fail(err, HL_EINVAL, "serve field '%s.%s': %g has no effect with %s.dist = \"%s\"%s", which,
                           parts[k].key, parts[k].v, which, dn,
                           kind == HL_LEN_UNIFORM ? " (a uniform length is drawn from min..max)"
                           : kind == HL_LEN_FIXED ? " (a fixed length is its mean; min, max and std are for uniform "
                                                    "and normal)"
                           : kind == HL_LEN_TRACE ? " (the lengths come from the trace)"
                                                  : "");
        if (k >= 2 && parts[k].given && parts[k].v != floor(parts[k].v))
            return hl_fail(err, HL_EINVAL, "serve field '%s.%s': %g is not a whole number of tokens", which,
                           parts[k].key, parts[k].v);
    }
    switch (kind) {
    case HL_LEN_FIXED:
        if (d->mean == 0)
            return hl_fail(err, HL_EINVAL, "serve field '%s': {dist = \"fixed\"} needs mean (tokens)", which);
        if (d->mean != floor(d->mean))
            return hl_fail(err, HL_EINVAL, "serve field '%s': %g is not a whole number of tokens", which, d->mean);
        return HL_OK;
    case HL_LEN_UNIFORM:
        if (d->lo == 0 || d->hi == 0)
            return hl_fail(err, HL_EINVAL,
                           "serve field '%s': {dist = \"uniform\"} needs both min and max (%s is missing; no "
                           "default fills in a bound)",
                           which,
                           d->lo == 0 && d->hi == 0 ? "each"
                           : d->lo == 0             ? "min"
                                                    : "max");
        break;
    case HL_LEN_NORMAL:
        if (d->mean == 0 || d->std == 0)
            return hl_fail(err, HL_EINVAL,
                           "serve field '%s': {dist = \"normal\"} needs mean and std > 0 (%s is missing; a fixed "
                           "length is a number)",
                           which, d->mean == 0 ? "mean" : "std");
        break;
    default: /* trace */
        if (!trace)
            return hl_fail(err, HL_EINVAL, "serve field '%s': lengths \"trace\" need a trace (field 'trace')", which);
        return HL_OK;
    }
    double lo = d->lo > 0 ? d->lo : 1, hi = d->hi > 0 ? d->hi : 1e8;
    if (!(lo <= hi))
        return hl_fail(err, HL_EINVAL, "serve field '%s': bounds min %g, max %g must satisfy 1 <= min <= max <= 1e8",
                       which, lo, hi);
    return HL_OK;
}

/* Job fields that serving does not read, with what does their job (hl_serve_check_instance). */
static const struct {
    const char *name, *why;
} unused_job[] = {
    {"batch", "the batch comes from the scheduler: max_seqs, token_budget"},
    {"input", "a job's input; serving's prompt lengths are the serve field input"},
    {"output", "a job's output; serving's lengths are the serve field output"},
    {"exact_steps", "iterations are always timed one by one"},
    {"ignore_memory", "the KV cache is what memory leaves after the weights; kv_blocks sets it"},
};

hl_status hl_serve_check_instance(const hl_job *j, const char *pool, hl_err *err)
{
    if (!j)
        return hl_fail(err, HL_EINVAL, "hl_serve_check_instance: the job is NULL");
    const hl_field_set *js = hl_job_fields();
    for (size_t k = 0; k < sizeof unused_job / sizeof unused_job[0]; k++) {
        const hl_field *f = hl_field_find(js, unused_job[k].name);
        if (f && hl_field_get_number(f, j) != f->def)
            return hl_fail(err, HL_EINVAL, "%sfield '%s' has no effect in serving (%s)", pool, f->name,
                           unused_job[k].why);
    }
    return HL_OK;
}

hl_status hl_serve_check_plan(const hl_plan_in *p, const char *pool, hl_err *err)
{
    if (!p)
        return hl_fail(err, HL_EINVAL, "hl_serve_check_plan: the plan is NULL");
    const hl_field_set *ps = hl_plan_fields();
    for (int32_t i = 0; i < ps->count; i++)
        if (hl_field_get_number(&ps->fields[i], p) != 0)
            return hl_fail(err, HL_EINVAL,
                           "%sfield '%s' has no effect in serving (a search option of hl.simulate with parallel = "
                           "\"auto\"; serving takes an explicit mapping)",
                           pool, ps->fields[i].name);
    return HL_OK;
}

static const char *arrival_name(int32_t a)
{
    static const char *const names[] = {"poisson", "constant", "concurrency", "trace", "auto"};
    return a >= 0 && a <= HL_ARRIVAL_AUTO ? names[a] : "?";
}

/* The arrival process and its fields; *trace_out: whether requests come from a trace. */
static hl_status check_arrival(const hl_serve_cfg *c, int *trace_out, hl_err *err)
{
    int has_trace = c->trace != NULL || c->n_trace > 0 || c->trace_file[0];
    int a = c->arrival, rate = given(c, "rate"), conc = given(c, "concurrency");
    if (a == HL_ARRIVAL_AUTO)
        a = has_trace ? HL_ARRIVAL_TRACE : conc ? HL_ARRIVAL_CONCURRENCY : HL_ARRIVAL_POISSON;
    *trace_out = a == HL_ARRIVAL_TRACE;
    if (has_trace && a != HL_ARRIVAL_TRACE)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'arrival': \"%s\" contradicts field 'trace' (a trace gives the arrival times; "
                       "drop one of them)",
                       arrival_name(a));
    if (a == HL_ARRIVAL_TRACE && (rate || conc))
        return hl_fail(err, HL_EINVAL,
                       "serve field '%s' has no effect with field 'trace' (the trace's arrival times are used; drop "
                       "one of them)",
                       rate ? "rate" : "concurrency");
    if (rate && conc)
        return hl_fail(err, HL_EINVAL,
                       "serve fields 'rate' and 'concurrency' contradict: an open loop at a rate, or a closed loop "
                       "of clients (give one)");
    if (a == HL_ARRIVAL_CONCURRENCY && rate)
        return hl_fail(err, HL_EINVAL, "serve field 'rate' has no effect with arrival = \"concurrency\"");
    if ((a == HL_ARRIVAL_POISSON || a == HL_ARRIVAL_CONSTANT) && conc)
        return hl_fail(err, HL_EINVAL, "serve field 'concurrency' has no effect with arrival = \"%s\" (an open loop)",
                       arrival_name(a));
    if (a == HL_ARRIVAL_TRACE && !has_trace)
        return hl_fail(err, HL_EINVAL, "serve field 'arrival': \"trace\" needs field 'trace' (a file)");
    if (a == HL_ARRIVAL_TRACE && (!c->trace || c->n_trace < 1))
        return hl_fail(err, HL_EINVAL, "serve field 'trace': the trace is empty (no requests)");
    if ((a == HL_ARRIVAL_POISSON || a == HL_ARRIVAL_CONSTANT) && !rate)
        return hl_fail(err, HL_EINVAL,
                       c->arrival == HL_ARRIVAL_AUTO ? "serve: an arrival process is required: rate (requests/s, "
                                                       "Poisson), concurrency "
                                                       "(clients of a closed loop) or trace (a file)"
                                                     : "serve field 'rate' is required with arrival = \"%s\"",
                       arrival_name(a));
    if (a == HL_ARRIVAL_CONCURRENCY && !conc)
        return hl_fail(err, HL_EINVAL, "serve field 'concurrency' is required with arrival = \"concurrency\"");
    if (a != HL_ARRIVAL_CONCURRENCY && (given(c, "think_s") || given(c, "start_jitter_s")))
        return hl_fail(err, HL_EINVAL, "serve field '%s' has no effect without a closed loop (concurrency)",
                       given(c, "think_s") ? "think_s" : "start_jitter_s");
    int64_t n = requests_of(c, *trace_out);
    if (*trace_out && c->requests > c->n_trace)
        return hl_fail(err, HL_EINVAL, "serve field 'requests': %lld, but the trace holds %lld requests",
                       (long long)c->requests, (long long)c->n_trace);
    /* More clients than requests: the clients past the requests would never send one, so the
     * loop would run at concurrency = requests, not the load asked for. Refused, naming both. */
    if (a == HL_ARRIVAL_CONCURRENCY && c->mode == HL_SERVE_SIMULATE && c->concurrency > n)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'concurrency': %lld clients but field 'requests' is %lld%s (each client needs "
                       "a request: allowed concurrency <= requests; raise requests or lower concurrency)",
                       (long long)c->concurrency, (long long)n, given(c, "requests") ? "" : " (its default)");
    if (given(c, "warmup") && c->warmup >= n)
        return hl_fail(err, HL_EINVAL, "serve field 'warmup': %lld leaves no request of %lld (warmup < %s)",
                       (long long)c->warmup, (long long)n, *trace_out ? "the trace's requests" : "requests");
    /* The clock: a step of 1 us must still move it (a double has 53 bits: 2^53 us ~ 9e9 s). The
     * last arrival is requests / rate on average. */
    double span = rate && a != HL_ARRIVAL_CONCURRENCY ? (double)n / c->rate : 0;
    if (span > 1e9)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'rate': %g requests/s spreads %lld requests (field 'requests') over %.3g s, past "
                       "1e9 s where the clock no longer resolves a step; a higher rate or fewer requests",
                       c->rate, (long long)n, span);
    /* Think times spread requests alike: each client's requests follow one another, a think
     * (think_s between requests, sessions.think_s between turns) before each; an open loop's
     * conversations add their turns' thinks after the last arrival. (At 1e12 s a 6 ms step was
     * timed 0.2% off.) */
    double think = a == HL_ARRIVAL_CONCURRENCY && c->concurrency > 0
                       ? (double)n / (double)c->concurrency * (c->think_s + c->session_think_s)
                       : (double)c->session_turns * c->session_think_s;
    if (span + think > 1e9)
        return hl_fail(err, HL_EINVAL,
                       "serve field '%s': %g s of think time spreads %lld requests (field 'requests') over about "
                       "%.3g s, past 1e9 s where the clock no longer resolves a step; shorter thinks or fewer "
                       "requests",
                       c->session_think_s > c->think_s ? "sessions.think_s" : "think_s",
                       fmax(c->think_s, c->session_think_s), (long long)n, span + think);
    if (*trace_out)
        for (int64_t i = 0; i < c->n_trace; i++) {
            const hl_trace_req *q = &c->trace[i];
            if (!(q->arrival_s >= 0 && q->arrival_s <= 1e9) || !(q->input >= 1 && q->input <= 1e8) ||
                !(q->output >= 1 && q->output <= 1e8) || q->input != floor(q->input) || q->output != floor(q->output))
                return hl_fail(err, HL_EINVAL,
                               "serve field 'trace': request %lld has arrival_s %g, input %g, output %g (need "
                               "arrival in 0..1e9 s, whole lengths 1..1e8)",
                               (long long)i + 1, q->arrival_s, q->input, q->output);
        }
    return HL_OK;
}

hl_status hl_serve_unchunked_fail(const hl_serve_cfg *c, int trace_row, const char *what, int64_t k, double prompt,
                                  hl_err *err)
{
    char fix[64] = ", bound the prompts (input.max, sessions.turns)";
    if (trace_row)
        snprintf(fix, sizeof fix, " to >= %g", prompt);
    return hl_fail(err, HL_EINVAL,
                   "serve field '%s': %s %lld has a prompt of %g tokens, more than token_budget = %lld with "
                   "chunked_prefill = false (an unchunked prompt runs whole in one iteration; vLLM refuses "
                   "max_num_batched_tokens < max_model_len without chunked prefill); raise token_budget%s or set "
                   "chunked_prefill = true",
                   trace_row ? "trace" : "token_budget", what, (long long)k, prompt, (long long)c->token_budget, fix);
}

/* chunked_prefill = false: a prompt runs whole in one iteration, so the longest prompt must fit
 * token_budget. vLLM refuses max_num_batched_tokens < max_model_len without chunked prefill
 * (vllm/config.py, SchedulerConfig._verify_args: "max_num_batched_tokens (...) is smaller than
 * max_model_len (...)"); here the bound is the longest prompt the workload can give: a fixed
 * input, input.max of a uniform or clamped normal length, or the trace's first request over the
 * budget. A normal length without max and sessions' growing prompts are checked per request when
 * the run makes them (serve.c). */
static hl_status check_unchunked(const hl_serve_cfg *c, int trace, hl_err *err)
{
    double budget = (double)c->token_budget;
    int kind = c->input.kind == HL_LEN_AUTO ? (trace ? HL_LEN_TRACE : HL_LEN_FIXED) : c->input.kind;
    if (kind == HL_LEN_TRACE) {
        for (int64_t i = 0; c->trace && i < c->n_trace; i++)
            if (c->trace[i].input > budget)
                return hl_serve_unchunked_fail(c, 1, "request", i + 1, c->trace[i].input, err);
        return HL_OK;
    }
    double longest = kind == HL_LEN_FIXED     ? c->input.mean
                     : kind == HL_LEN_UNIFORM ? c->input.hi
                     : kind == HL_LEN_NORMAL  ? c->input.hi /* 0: no max given, checked per request */
                                              : 0;
    if (longest > budget)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'token_budget': %lld tokens with chunked_prefill = false, but prompts reach %g "
                       "tokens (%s): an unchunked prompt runs whole in one iteration, and vLLM refuses "
                       "max_num_batched_tokens < max_model_len without chunked prefill; raise token_budget to >= "
                       "%g, give shorter prompts, or set chunked_prefill = true",
                       (long long)c->token_budget, longest, kind == HL_LEN_FIXED ? "input" : "input.max", longest);
    return HL_OK;
}

hl_status hl_serve_check(const hl_serve_cfg *c, hl_err *err)
{
    if (!c)
        return hl_fail(err, HL_EINVAL, "hl_serve_check: the configuration is NULL");
    hl_status st = check_rows(c, err);
    int trace = 0;
    if (!st)
        st = check_arrival(c, &trace, err);
    if (!st)
        st = check_dist(&c->input, "input", trace, err);
    if (!st)
        st = check_dist(&c->output, "output", trace, err);
    if (st)
        return st;
    if ((st = hl_serve_check_prefix(c, err)))
        return st;
    if (given(c, "kv_blocks") && c->kv_blocks != floor(c->kv_blocks))
        return hl_fail(err, HL_EINVAL, "serve field 'kv_blocks': %g is not a whole number of KV blocks", c->kv_blocks);
    if (given(c, "shared_prefix")) { /* part of every prompt: longer than the longest one is no prefix of it */
        int kind = c->input.kind == HL_LEN_AUTO ? (trace ? HL_LEN_TRACE : HL_LEN_FIXED) : c->input.kind;
        double longest = kind == HL_LEN_FIXED ? c->input.mean : kind == HL_LEN_UNIFORM ? c->input.hi : 0;
        if (kind == HL_LEN_NORMAL && c->input.hi > 0)
            longest = c->input.hi;
        for (int64_t i = 0; kind == HL_LEN_TRACE && c->trace && i < c->n_trace; i++)
            longest = fmax(longest, c->trace[i].input);
        if (longest > 0 && (double)c->shared_prefix > longest)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'shared_prefix': %lld tokens, but the longest prompt is %g tokens (%s); the "
                           "shared prefix is part of input (at most the longest prompt)",
                           (long long)c->shared_prefix, longest,
                           kind == HL_LEN_TRACE   ? "the trace's input"
                           : kind == HL_LEN_FIXED ? "input"
                                                  : "input.max");
    }
    if (!c->chunked_prefill && (st = check_unchunked(c, trace, err)))
        return st;
    /* a decoding sequence's verify pass takes gamma + 1 tokens of the budget whole (serve_sched.c):
     * a smaller budget schedules no decode at all, and the run failed later, "no request could be
     * scheduled at t = 0.48 s" (attack pass 5) */
    if (c->job.spec_tokens > 0 && (double)c->token_budget < c->job.spec_tokens + 1)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'token_budget': %lld tokens cannot hold one verify pass with spec_tokens = %g (a "
                       "decoding sequence's step takes spec_tokens + 1 = %g tokens of the budget; fewer drafts a "
                       "step are not modelled): raise token_budget to at least %g or lower spec_tokens",
                       (long long)c->token_budget, c->job.spec_tokens, c->job.spec_tokens + 1, c->job.spec_tokens + 1);
    if (given(c, "chunk") && !c->chunked_prefill)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'chunk' has no effect with chunked_prefill = false (prompts are taken whole)");
    if (c->mode == HL_SERVE_ANALYTICAL) {
        static const char *const sim_only[] = {"trace",      "requests",      "seed",       "warmup",
                                               "keep_steps", "keep_requests", "max_samples"};
        for (size_t k = 0; k < sizeof sim_only / sizeof sim_only[0]; k++)
            if (given(c, sim_only[k]) || (k == 0 && trace))
                return hl_fail(err, HL_EINVAL,
                               "serve field '%s' has no effect with mode = \"analytical\" (the steady state has "
                               "mean lengths and no requests; simulate instead)",
                               sim_only[k]);
        if (c->disagg)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'disagg': mode = \"analytical\" is for one instance (disaggregation is "
                           "simulated)");
        if (c->job.spec_tokens > 0) /* the step timer's own refusal spoke of "not yet by serving" */
            return hl_fail(err, HL_EINVAL,
                           "field 'spec_tokens': %g has no effect with mode = \"analytical\" (speculative decoding "
                           "is simulated request by request and step by step); simulate instead, or spec_tokens = 0",
                           c->job.spec_tokens);
    }
    if (c->disagg && c->replicas > 1)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'replicas': %lld with disagg (each pool is one instance; give the pools their "
                       "GPUs)",
                       (long long)c->replicas);
    if (c->replicas > 1 && c->mode == HL_SERVE_ANALYTICAL)
        return hl_fail(err, HL_EINVAL,
                       "serve field 'replicas' has no effect with mode = \"analytical\" (the steady state of one "
                       "instance); simulate instead");
    if (c->replicas > 1) { /* the instances side by side on the cluster */
        int64_t per = c->job.gpus > 0 ? c->job.gpus : c->job.cluster.gpus / c->replicas;
        if (c->job.gpus == 0 && (per < 1 || c->job.cluster.gpus % c->replicas))
            return hl_fail(err, HL_EINVAL,
                           "serve field 'replicas': %lld instances do not split the cluster's %lld GPUs evenly (give "
                           "parallel.gpus per instance, or another count)",
                           (long long)c->replicas, (long long)c->job.cluster.gpus);
        if (per * c->replicas > c->job.cluster.gpus)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'replicas': %lld instances of %lld GPUs do not fit the cluster's %lld GPUs "
                           "(fewer replicas, parallel.gpus, or a larger cluster)",
                           (long long)c->replicas, (long long)(c->job.gpus > 0 ? c->job.gpus : per),
                           (long long)c->job.cluster.gpus);
    }
    if (!c->disagg && given(c, "disagg_clock"))
        return hl_fail(err, HL_EINVAL, "serve field 'disagg.clock' has no effect without disagg (one instance)");
    if (!c->disagg && given(c, "kv_link"))
        return hl_fail(err, HL_EINVAL, "serve field 'disagg.kv_link' has no effect without disagg (one instance)");
    if (c->disagg) {
        if (strcmp(c->job.model.name, c->decode_job.model.name) != 0)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'disagg': the decode pool serves model '%s', the prefill pool '%s' (one "
                           "model for both)",
                           c->decode_job.model.name, c->job.model.name);
        int32_t kp = hl_job_kv_precision(&c->job), kd = hl_job_kv_precision(&c->decode_job);
        if (kp != kd)
            return hl_fail(err, HL_EINVAL,
                           "serve field 'disagg': the prefill pool keeps KV in %s and the decode pool in %s "
                           "(kv_precision, or act_precision when kv_precision is \"act\"); the transfer moves one "
                           "format: give both pools the same",
                           hl_precision_name(kp), hl_precision_name(kd));
        if (c->disagg_clock == HL_DISAGG_SEQUENTIAL && trace == 0 &&
            (c->arrival == HL_ARRIVAL_CONCURRENCY || given(c, "concurrency")))
            return hl_fail(err, HL_EINVAL,
                           "serve field 'concurrency': a closed loop is not supported with disaggregation (the "
                           "pools are simulated one after the other with disagg.clock = \"sequential\"); give a rate "
                           "or a trace");
    }
    return HL_OK;
}

/* hl_serve_check's resolved configuration: concrete arrival, request count and lengths. */
hl_status hl_serve_resolve(const hl_serve_cfg *c, hl_serve_cfg *out, hl_err *err)
{
    hl_status st = hl_serve_check(c, err);
    if (st)
        return st;
    *out = *c;
    if (c->replicas > 1 && c->job.gpus == 0) /* the cluster split evenly over the instances */
        out->job.gpus = c->job.cluster.gpus / c->replicas;
    int has_trace = c->trace != NULL && c->n_trace > 0;
    if (out->arrival == HL_ARRIVAL_AUTO)
        out->arrival = has_trace ? HL_ARRIVAL_TRACE : c->concurrency > 0 ? HL_ARRIVAL_CONCURRENCY : HL_ARRIVAL_POISSON;
    int trace = out->arrival == HL_ARRIVAL_TRACE;
    out->requests = requests_of(c, trace);
    hl_len_dist *d[2] = {&out->input, &out->output};
    for (int k = 0; k < 2; k++) {
        if (d[k]->kind == HL_LEN_AUTO)
            d[k]->kind = trace ? HL_LEN_TRACE : HL_LEN_FIXED;
        if (d[k]->lo == 0)
            d[k]->lo = 1;
        if (d[k]->hi == 0)
            d[k]->hi = 1e8;
    }
    return HL_OK;
}

hl_status hl_serve_load_trace(hl_serve_cfg *c, hl_trace_req **owned, hl_err *err)
{
    if (!c || !owned)
        return hl_fail(err, HL_EINVAL, "hl_serve_load_trace: the %s is NULL", !c ? "configuration" : "output");
    *owned = NULL;
    if (!c->trace_file[0])
        return HL_OK;
    if (c->trace)
        return hl_fail(err, HL_EINVAL, "serve field 'trace': a trace is given twice (a file and requests)");
    char *text;
    hl_status st = hl_read_file(c->trace_file, &text, err);
    if (st) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return hl_fail(err, st, "serve field 'trace': cannot read %s", msg);
    }
    st = hl_serve_trace_parse_unread(text, strlen(text), c->trace_file, owned, &c->trace_content, &c->n_trace,
                                     c->trace_unread, sizeof c->trace_unread, err);
    hl_free(text);
    if (st)
        return st;
    c->trace = *owned;
    return HL_OK;
}

/* ---- result tables ---------------------------------------------------------------- */

#define R(T, NM, TYPE, M, UNIT, NAMES, HELP)                 \
    {                                                        \
        NM, TYPE, (int32_t)offsetof(T, M), UNIT, HELP, NAMES \
    }
#define RN(T, NM, M, UNIT, HELP) R(T, NM, HL_VALUE_NUMBER, M, UNIT, NULL, HELP)
#define RI(T, NM, M, HELP) R(T, NM, HL_VALUE_INTEGER, M, "", NULL, HELP)
#define RI32(T, NM, M, HELP) R(T, NM, HL_VALUE_INT32, M, "", NULL, HELP)
#define RB(T, NM, M, HELP) R(T, NM, HL_VALUE_BOOL, M, "", NULL, HELP)
#define STATS(NM, M, WHAT)                                                   \
    RN(hl_serve_result, NM ".mean", M.mean, "s", "mean " WHAT),              \
        RN(hl_serve_result, NM ".p50", M.p50, "s", "median " WHAT),          \
        RN(hl_serve_result, NM ".p90", M.p90, "s", "90th percentile " WHAT), \
        RN(hl_serve_result, NM ".p99", M.p99, "s", "99th percentile " WHAT), \
        RN(hl_serve_result, NM ".max", M.max, "s", "largest " WHAT),         \
        RI(hl_serve_result, NM ".n", M.n, "requests counted for " NM)

/* THE serve result tables: the only place a serve result field is named. To
 * add one: the member (with its unit) in core/include/hbdlab/serve.h, filled
 * by the run, and one row here. NaN values mean "none" (pushed as nil). */
static const hl_result_field result_rows[] = {
    RI(hl_serve_result, "requests", requests, "requests in the statistics (after warmup)"),
    RI(hl_serve_result, "steps", steps, "iterations run"),
    RI(hl_serve_result, "preemptions", preemptions, "requests preempted (recomputed later)"),
    RI(hl_serve_result, "gpus", gpus, "GPUs of the instance (both pools when disaggregated)"),
    RN(hl_serve_result, "duration_s", duration_s, "s", "first arrival to last token"),
    RN(hl_serve_result, "rps", rps, "1/s", "completed requests / duration_s"),
    RN(hl_serve_result, "input_tps", input_tps, "1/s", "prompt tokens / duration_s"),
    RN(hl_serve_result, "output_tps", output_tps, "1/s", "generated tokens / duration_s"),
    RN(hl_serve_result, "input_tps_per_gpu", input_tps_per_gpu, "1/s", "input_tps / gpus"),
    RN(hl_serve_result, "output_tps_per_gpu", output_tps_per_gpu, "1/s", "output_tps / gpus"),
    STATS("ttft_s", ttft_s, "time to first token"),
    STATS("tpot_s", tpot_s, "time per output token after the first"),
    STATS("itl_s", itl_s, "gap between tokens (every gap of every request)"),
    STATS("e2e_s", e2e_s, "arrival to last token"),
    STATS("queue_s", queue_s, "arrival to first scheduled"),
    RN(hl_serve_result, "slo_attainment", slo_attainment, "", "fraction of requests meeting both SLOs (nil: no SLO)"),
    RN(hl_serve_result, "goodput_rps", goodput_rps, "1/s", "requests meeting the SLO / duration_s (nil: no SLO)"),
    RN(hl_serve_result, "goodput_tps_per_gpu", goodput_tps_per_gpu, "1/s",
       "output tokens of those requests / duration_s / gpus (nil: no SLO)"),
    RN(hl_serve_result, "mean_in_system", mean_in_system, "", "time average of requests arrived and not finished"),
    RN(hl_serve_result, "mean_running", mean_running, "", "time average of requests holding KV"),
    RN(hl_serve_result, "mean_waiting", mean_waiting, "", "time average of requests waiting"),
    RN(hl_serve_result, "mean_step_tokens", mean_step_tokens, "", "tokens per iteration"),
    RN(hl_serve_result, "kv_blocks_total", kv_blocks_total, "", "KV blocks of the instance (the decode pool's)"),
    RN(hl_serve_result, "kv_block_tokens", kv_block_tokens, "", "tokens per KV block"),
    RN(hl_serve_result, "kv_util_mean", kv_util_mean, "", "time average of KV blocks used / total"),
    RN(hl_serve_result, "kv_util_max", kv_util_max, "", "largest KV blocks used / total"),
    RN(hl_serve_result, "saturated_output_tps", saturated_output_tps, "1/s",
       "output tokens / time over the iterations during which requests waited"),
    RN(hl_serve_result, "kv_transfer_s", kv_transfer_s, "s", "disaggregated: mean KV transfer per request"),
    R(hl_serve_result, "kv_link", HL_VALUE_NAME, kv_link, "", "|scaleup|scaleout",
      "disaggregated: the links the KV cache crossed"),
    RN(hl_serve_result, "usd_per_hour", usd_per_hour, "USD", "amortised capex of the GPUs per hour (nil: no price)"),
    RN(hl_serve_result, "usd_per_mtok_in", usd_per_mtok_in, "USD",
       "prefill share of the run's cost per million prompt tokens (nil: no price)"),
    RN(hl_serve_result, "usd_per_mtok_out", usd_per_mtok_out, "USD",
       "decode share of the run's cost per million generated tokens (nil: no price)"),
    RN(hl_serve_result, "usd_per_mtok", usd_per_mtok, "USD",
       "the run's cost per million generated tokens (nil: no price)"),
    RN(hl_serve_result, "joules_per_token", joules_per_token, "J", "energy at the wall per generated token"),
    RN(hl_serve_result, "joules_per_token_in", joules_per_token_in, "J", "prefill energy per prompt token"),
    RN(hl_serve_result, "joules_per_token_out", joules_per_token_out, "J", "decode energy per generated token"),
    RN(hl_serve_result, "power_w", power_w, "W", "mean power at the wall over the run"),
    RN(hl_serve_result, "peak_power_w", peak_power_w, "W", "provisioned power: every GPU at load, PUE included"),
    RN(hl_serve_result, "tokens_per_mw", tokens_per_mw, "1/s", "output tokens/s per MW of provisioned power"),
    RN(hl_serve_result, "prefix_hit_rate", prefix_hit_rate, "",
       "prompt tokens found in the prefix cache / prompt tokens admitted (nil: no prefix_cache)"),
    RN(hl_serve_result, "prefill_tokens_saved", prefill_tokens_saved, "",
       "prompt tokens found in the prefix cache, not computed (nil: no prefix_cache)"),
    RN(hl_serve_result, "kv_cached_mean", kv_cached_mean, "",
       "time average of KV blocks kept only as cached prefixes / total (nil: no prefix_cache)"),
    RN(hl_serve_result, "kv_cached_max", kv_cached_max, "", "largest such fraction (nil: no prefix_cache)"),
    RN(hl_serve_result, "host_hit_tokens", host_hit_tokens, "",
       "of prefill_tokens_saved, tokens loaded back from the KV offload tier (nil: no kv_offload)"),
    RN(hl_serve_result, "reload_s", reload_s, "s", "time of the host tier's loads over the run (nil: no kv_offload)"),
    RN(hl_serve_result, "offloaded_blocks", offloaded_blocks, "",
       "prefix blocks evicted from HBM and copied to the host tier (nil: no kv_offload)"),
};

static const hl_result_field request_rows[] = {
    RN(hl_serve_req, "arrival_s", arrival_s, "s", "arrival time"),
    RN(hl_serve_req, "input", input, "", "prompt tokens"),
    RN(hl_serve_req, "output", output, "", "generated tokens"),
    RN(hl_serve_req, "first_token_s", first_token_s, "s", "time of the first token"),
    RN(hl_serve_req, "finish_s", finish_s, "s", "time of the last token"),
    RN(hl_serve_req, "queue_s", queue_s, "s", "arrival to first scheduled"),
    RN(hl_serve_req, "ttft_s", ttft_s, "s", "time to first token"),
    RN(hl_serve_req, "tpot_s", tpot_s, "s", "time per output token after the first"),
    RN(hl_serve_req, "e2e_s", e2e_s, "s", "arrival to last token"),
    RI32(hl_serve_req, "preemptions", preemptions, "times preempted"),
    RB(hl_serve_req, "good", good, "met the SLO"),
    RN(hl_serve_req, "kv_transfer_s", kv_transfer_s, "s", "disaggregated: its KV transfer"),
};

static const hl_result_field step_rows[] = {
    RN(hl_serve_step, "t_s", t_s, "s", "start of the iteration"),
    RN(hl_serve_step, "dt_s", dt_s, "s", "its duration"),
    RI32(hl_serve_step, "decodes", decodes, "sequences that decoded one token"),
    RI32(hl_serve_step, "chunks", chunks, "prompt chunks prefilled"),
    RN(hl_serve_step, "prefill_tokens", prefill_tokens, "", "tokens of those chunks"),
    RI32(hl_serve_step, "first_req", first_req, "request of the first chunk (1-based; 0 = none)"),
    RI32(hl_serve_step, "preempted", preempted, "requests preempted while scheduling it"),
    RN(hl_serve_step, "kv_used", kv_used, "", "KV blocks in use after it"),
    RI32(hl_serve_step, "pool", pool, "0: the deployment; disaggregated: 1 prefill, 2 decode"),
    RI32(hl_serve_step, "group", group, "the instance (DP ranks in lock-step) or DP rank that stepped, 0-based"),
    RN(hl_serve_step, "stall_s", stall_s, "s", "time its group waited for KV room before it (back-pressure)"),
    RN(hl_serve_step, "cached_blocks", cached_blocks, "", "prefix cache: blocks kept only as cached prefixes after it"),
    RN(hl_serve_step, "saved_tokens", saved_tokens, "", "prefix cache: prompt tokens found cached at admission in it"),
    RN(hl_serve_step, "reload_s", reload_s, "s", "KV offload: its loads of host blocks (added, or overlapped)"),
};

static const hl_result_field sample_rows[] = {
    RN(hl_serve_sample, "t_s", t_s, "s", "time of the sample"),
    RN(hl_serve_sample, "kv_util", kv_util, "", "KV blocks used / total"),
    RN(hl_serve_sample, "running", running, "", "requests holding KV"),
    RN(hl_serve_sample, "waiting", waiting, "", "requests arrived, not running"),
};

static const hl_result_field steady_rows[] = {
    RN(hl_serve_steady, "rate", rate, "1/s", "requests/s (given, or from the concurrency)"),
    RN(hl_serve_steady, "iter_s", iter_s, "s", "time of one iteration"),
    RN(hl_serve_steady, "ttft_s", ttft_s, "s", "time to first token"),
    RN(hl_serve_steady, "tpot_s", tpot_s, "s", "time per output token"),
    RN(hl_serve_steady, "e2e_s", e2e_s, "s", "arrival to last token"),
    RN(hl_serve_steady, "running", running, "", "requests in the running set"),
    RN(hl_serve_steady, "decodes", decodes, "", "decoding sequences per iteration"),
    RN(hl_serve_steady, "prefill_tokens", prefill_tokens, "", "prompt tokens per iteration"),
    RN(hl_serve_steady, "budget_util", budget_util, "", "(decodes + prefill tokens) / token_budget"),
    RN(hl_serve_steady, "kv_util", kv_util, "", "KV tokens held / KV capacity"),
    RN(hl_serve_steady, "input_tps", input_tps, "1/s", "prompt tokens/s"),
    RN(hl_serve_steady, "output_tps", output_tps, "1/s", "generated tokens/s"),
    RN(hl_serve_steady, "output_tps_per_gpu", output_tps_per_gpu, "1/s", "output_tps per GPU"),
    RB(hl_serve_steady, "stable", stable, "false: the load exceeds the token budget, max_seqs or the KV cache"),
    RI32(hl_serve_steady, "iterations", iterations, "fixed-point iterations used"),
    RB(hl_serve_steady, "meets_slo", meets_slo, "stable, and TTFT and TPOT within the SLO"),
};

static const struct {
    const hl_result_field *rows;
    int32_t n;
} records[HL_SERVE_RECORDS] = {
    {result_rows, (int32_t)(sizeof result_rows / sizeof result_rows[0])},
    {request_rows, (int32_t)(sizeof request_rows / sizeof request_rows[0])},
    {step_rows, (int32_t)(sizeof step_rows / sizeof step_rows[0])},
    {sample_rows, (int32_t)(sizeof sample_rows / sizeof sample_rows[0])},
    {steady_rows, (int32_t)(sizeof steady_rows / sizeof steady_rows[0])},
};

int32_t hl_serve_result_field_count(int32_t record)
{
    return record >= 0 && record < HL_SERVE_RECORDS ? records[record].n : 0;
}

const hl_result_field *hl_serve_result_field_at(int32_t record, int32_t i)
{
    return i >= 0 && i < hl_serve_result_field_count(record) ? &records[record].rows[i] : NULL;
}

double hl_serve_record_value(const hl_result_field *f, const void *rec)
{
    const char *at = (const char *)rec + f->offset;
    switch (f->type) {
    case HL_VALUE_INTEGER: return (double)*(const int64_t *)at;
    case HL_VALUE_BOOL:
    case HL_VALUE_NAME:
    case HL_VALUE_INT32: return *(const int32_t *)at;
    default: return *(const double *)at;
    }
}
