/* Binding of the serving model: core.serve(job_fields, serve_fields) -> result
 * table. The Lua library (hbdlab/serve.lua) checks field names, converts
 * friendly units and reads trace files; this file maps fields onto
 * hl_serve_cfg and the result onto tables (names: docs/LUA_API.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

#define MT_SERVE "hbdlab.serve_owned"

/* Userdata owning what the core allocated, so a Lua error cannot leak it. */
typedef struct owned {
    hl_serve_result res;
    hl_trace_req *trace;
} owned;

static int owned_gc(lua_State *L)
{
    owned *o = luaL_checkudata(L, 1, MT_SERVE);
    hl_serve_result_free(&o->res);
    hl_serve_trace_free(o->trace);
    o->trace = NULL;
    return 0;
}

static const char *const arrivals[] = {"poisson", "constant", "concurrency", "trace", NULL};
static const char *const dists[] = {"fixed", "uniform", "normal", "trace", NULL};
static const char *const kv_links[] = {"auto", "scaleup", "scaleout", NULL};

/* A length field: a number (fixed), "trace", or {dist =, mean =, std =, min =, max =}. */
static void len_field(lua_State *L, int idx, const char *name, hl_len_dist *d)
{
    int t = lua_getfield(L, idx, name);
    if (t == LUA_TNUMBER) {
        d->kind = HL_LEN_FIXED;
        d->mean = lua_tonumber(L, -1);
    } else if (t == LUA_TSTRING) {
        if (strcmp(lua_tostring(L, -1), "trace") != 0)
            luaL_error(L, "field '%s': '%s' is not a number, \"trace\" or {dist = ...}", name, lua_tostring(L, -1));
        d->kind = HL_LEN_TRACE;
    } else if (t == LUA_TTABLE) {
        int ti = lua_gettop(L);
        lua_getfield(L, ti, "dist");
        d->kind = luaL_checkoption(L, -1, "fixed", dists);
        lua_pop(L, 1);
        d->mean = hl_opt_number_field(L, ti, "mean", d->mean);
        d->std = hl_opt_number_field(L, ti, "std", 0);
        d->lo = hl_opt_number_field(L, ti, "min", 1);
        d->hi = hl_opt_number_field(L, ti, "max", d->kind == HL_LEN_UNIFORM ? d->mean : 1e8);
    } else if (t != LUA_TNIL) {
        luaL_error(L, "field '%s': expected a number, \"trace\" or {dist = ...}, got %s", name, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
}

static int64_t count_field(lua_State *L, int idx, const char *name, int64_t def)
{
    double v = hl_opt_number_field(L, idx, name, (double)def);
    if (!(v == floor(v)))
        luaL_error(L, "field '%s': %f is not a whole number", name, v);
    if (!(fabs(v) <= 1e15)) /* 2^63 is whole: it was called "not a whole number" */
        luaL_error(L, "field '%s': %f is out of range (a whole number up to 1e15)", name, v);
    return (int64_t)v;
}

/* A boolean field: nil keeps def; anything but true/false raises (0 and "no" are true in Lua,
 * so chunked_prefill = 0 used to leave chunking on). */
static int bool_field(lua_State *L, int idx, const char *name, int def)
{
    int t = lua_getfield(L, idx, name);
    int v = t == LUA_TNIL ? def : lua_toboolean(L, -1);
    if (t != LUA_TNIL && t != LUA_TBOOLEAN)
        luaL_error(L, "field '%s': expected true or false, got %s", name, luaL_typename(L, -1));
    lua_pop(L, 1);
    return v;
}

static void push_stats(lua_State *L, const char *name, const hl_stats *s)
{
    lua_createtable(L, 0, 6);
    hl_set_num(L, "mean", s->mean);
    hl_set_num(L, "p50", s->p50);
    hl_set_num(L, "p90", s->p90);
    hl_set_num(L, "p99", s->p99);
    hl_set_num(L, "max", s->max);
    hl_set_num(L, "n", (double)s->n);
    lua_setfield(L, -2, name); /* [result] */
}

static void push_result(lua_State *L, const hl_serve_result *r)
{
    lua_createtable(L, 0, 40);
    const struct {
        const char *k;
        double v;
    } f[] = {{"requests", (double)r->requests},
             {"steps", (double)r->steps},
             {"preemptions", (double)r->preemptions},
             {"gpus", (double)r->gpus},
             {"duration_s", r->duration_s},
             {"rps", r->rps},
             {"input_tps", r->input_tps},
             {"output_tps", r->output_tps},
             {"input_tps_per_gpu", r->input_tps_per_gpu},
             {"output_tps_per_gpu", r->output_tps_per_gpu},
             {"slo_attainment", r->slo_attainment},
             {"goodput_rps", r->goodput_rps},
             {"goodput_tps_per_gpu", r->goodput_tps_per_gpu},
             {"mean_in_system", r->mean_in_system},
             {"mean_running", r->mean_running},
             {"mean_waiting", r->mean_waiting},
             {"mean_step_tokens", r->mean_step_tokens},
             {"kv_blocks_total", r->kv_blocks_total},
             {"kv_block_tokens", r->kv_block_tokens},
             {"kv_util_mean", r->kv_util_mean},
             {"kv_util_max", r->kv_util_max},
             {"saturated_output_tps", r->saturated_output_tps}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        hl_set_num(L, f[i].k, f[i].v);
    if (r->kv_link) {
        hl_set_num(L, "kv_transfer_s", r->kv_transfer_s);
        lua_pushstring(L, kv_links[r->kv_link]);
        lua_setfield(L, -2, "kv_link");
    }
    push_stats(L, "ttft_s", &r->ttft_s);
    push_stats(L, "tpot_s", &r->tpot_s);
    push_stats(L, "itl_s", &r->itl_s);
    push_stats(L, "e2e_s", &r->e2e_s);
    push_stats(L, "queue_s", &r->queue_s);
    const char *cols[] = {"t_s", "kv_util", "running", "waiting"};
    lua_createtable(L, 0, 4); /* [result samples] columns of the KV-utilisation series */
    for (int c = 0; c < 4; c++) {
        lua_createtable(L, (int)r->n_samples, 0);
        for (int64_t i = 0; i < r->n_samples; i++) {
            const hl_serve_sample *s = &r->samples[i];
            lua_pushnumber(L, c == 0 ? s->t_s : c == 1 ? s->kv_util : c == 2 ? s->running : s->waiting);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, cols[c]);
    }
    lua_setfield(L, -2, "kv_series");
    if (r->reqs) {
        lua_createtable(L, (int)r->requests, 0);
        for (int64_t i = 0; i < r->requests; i++) {
            const hl_serve_req *q = &r->reqs[i];
            lua_createtable(L, 0, 11);
            hl_set_num(L, "arrival_s", q->arrival_s);
            hl_set_num(L, "input", q->input);
            hl_set_num(L, "output", q->output);
            hl_set_num(L, "first_token_s", q->first_token_s);
            hl_set_num(L, "finish_s", q->finish_s);
            hl_set_num(L, "queue_s", q->queue_s);
            hl_set_num(L, "ttft_s", q->ttft_s);
            hl_set_num(L, "tpot_s", q->tpot_s);
            hl_set_num(L, "e2e_s", q->e2e_s);
            hl_set_num(L, "preemptions", q->preemptions);
            hl_set_num(L, "kv_transfer_s", q->kv_transfer_s);
            lua_pushboolean(L, q->good);
            lua_setfield(L, -2, "good");
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "per_request");
    }
    if (r->steps_log) {
        lua_createtable(L, (int)r->n_steps_log, 0);
        for (int64_t i = 0; i < r->n_steps_log; i++) {
            const hl_serve_step *s = &r->steps_log[i];
            lua_createtable(L, 0, 8);
            hl_set_num(L, "t_s", s->t_s);
            hl_set_num(L, "dt_s", s->dt_s);
            hl_set_num(L, "decodes", s->decodes);
            hl_set_num(L, "chunks", s->chunks);
            hl_set_num(L, "prefill_tokens", s->prefill_tokens);
            hl_set_num(L, "first_req", s->first_req + 1); /* 1-based; 0 = none */
            hl_set_num(L, "preempted", s->preempted);
            hl_set_num(L, "kv_used", s->kv_used);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "step_log");
    }
}

/* Reads core.serve's two tables (job fields at 1, serve fields at 2) into *c;
 * a parsed trace is owned by o. Raises on bad input. */
static void read_cfg(lua_State *L, hl_serve_cfg *c, owned *o)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    hl_plan_in pin;
    int batch_max, auto_plan;
    hl_check_job(L, 1, &pin, &batch_max, &auto_plan);
    if (batch_max || auto_plan)
        luaL_error(L, "serve: give an explicit mapping (parallel = {tp =, ...}); the batch comes from the "
                      "scheduler (max_seqs)");
    hl_serve_init(c, &pin.job);
    int S = 2;
    lua_getfield(L, S, "arrival");
    c->arrival = luaL_checkoption(L, -1, "poisson", arrivals);
    lua_pop(L, 1);
    c->rate = hl_opt_number_field(L, S, "rate", c->rate);
    c->concurrency = count_field(L, S, "concurrency", c->concurrency);
    c->requests = count_field(L, S, "requests", c->arrival == HL_ARRIVAL_TRACE ? 0 : c->requests);
    c->seed = (uint64_t)count_field(L, S, "seed", (int64_t)c->seed);
    if (c->arrival == HL_ARRIVAL_TRACE)
        c->input.kind = c->output.kind = HL_LEN_TRACE;
    len_field(L, S, "input", &c->input);
    len_field(L, S, "output", &c->output);
    if (lua_getfield(L, S, "trace_text") == LUA_TSTRING) {
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        const char *origin = hl_opt_string_field(L, S, "trace_origin");
        hl_err err;
        if (hl_serve_trace_parse(text, len, origin ? origin : "trace", &o->trace, &c->n_trace, &err))
            hl_raise(L, &err);
        c->trace = o->trace;
    }
    lua_pop(L, 1);
    c->max_seqs = count_field(L, S, "max_seqs", c->max_seqs);
    c->token_budget = count_field(L, S, "token_budget", c->token_budget);
    c->chunked_prefill = bool_field(L, S, "chunked_prefill", c->chunked_prefill);
    c->chunk = count_field(L, S, "chunk", c->chunk);
    c->block_tokens = count_field(L, S, "block_tokens", c->block_tokens);
    c->kv_blocks = hl_opt_number_field(L, S, "kv_blocks", c->kv_blocks);
    c->slo_ttft_s = hl_opt_number_field(L, S, "slo_ttft_s", c->slo_ttft_s);
    c->slo_tpot_s = hl_opt_number_field(L, S, "slo_tpot_s", c->slo_tpot_s);
    int64_t samples = count_field(L, S, "max_samples", c->max_samples);
    if (!(samples >= 2 && samples <= 1000000))
        luaL_error(L, "field 'max_samples': %I is not allowed (2..1e6)", (lua_Integer)samples);
    c->max_samples = (int32_t)samples;
    c->warmup = count_field(L, S, "warmup", 0);
    c->reserve = bool_field(L, S, "reserve", 0);
    c->keep_requests = bool_field(L, S, "keep_requests", 0);
    c->keep_steps = bool_field(L, S, "keep_steps", 0);
    if (lua_type(L, 3) == LUA_TTABLE) { /* disaggregated: the decode pool's instance */
        hl_plan_in dpin;
        hl_check_job(L, 3, &dpin, &batch_max, &auto_plan);
        if (batch_max || auto_plan)
            luaL_error(L, "serve: the decode pool needs an explicit mapping (parallel = {tp =, ...})");
        c->disagg = 1;
        c->decode_job = dpin.job;
        lua_getfield(L, S, "kv_link");
        c->kv_link = luaL_checkoption(L, -1, "auto", kv_links);
        lua_pop(L, 1);
    }
}

/* The memory budget of one run in bytes: $HBDLAB_SERVE_MEMORY_BYTES, else 8 GB. */
static double memory_budget(void)
{
    const char *v = getenv("HBDLAB_SERVE_MEMORY_BYTES");
    char *end;
    double b = v ? strtod(v, &end) : 0;
    return v && end != v && b > 0 ? b : 8e9;
}

/* Raises before anything is allocated when the run's requests, and their
 * per_request tables (about 640 B each in Lua), would exceed the budget. */
static void check_memory(lua_State *L, const hl_serve_cfg *c)
{
    double n = c->arrival == HL_ARRIVAL_TRACE ? (double)c->n_trace : (double)c->requests;
    double need = hl_serve_memory_bytes(c) + (c->keep_requests ? n * 640 : 0), budget = memory_budget();
    if (need > budget) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "field 'requests': %.0f requests would take about %.3g GB, more than the budget of "
                 "%.3g GB (HBDLAB_SERVE_MEMORY_BYTES)%s; fewer requests give the same statistics",
                 n, need / 1e9, budget / 1e9, c->keep_requests ? " with keep_requests" : "");
        luaL_error(L, "%s", msg);
    }
}

static owned *push_owned(lua_State *L)
{
    owned *o = lua_newuserdatauv(L, sizeof *o, 0); /* [.. owned] */
    memset(o, 0, sizeof *o);
    luaL_setmetatable(L, MT_SERVE);
    return o;
}

/* core.serve(job_fields, serve_fields): fields as documented in hl.help "serve". */
static int l_serve(lua_State *L)
{
    owned *o = push_owned(L);
    hl_serve_cfg c;
    read_cfg(L, &c, o);
    check_memory(L, &c);
    hl_err err;
    if (hl_serve_run(&c, &o->res, &err))
        return hl_raise(L, &err);
    push_result(L, &o->res);
    hl_serve_result_free(&o->res); /* early; __gc would too */
    return 1;
}

/* core.serve_steady(job_fields, serve_fields): the analytical steady state. */
static int l_serve_steady(lua_State *L)
{
    owned *o = push_owned(L);
    hl_serve_cfg c;
    read_cfg(L, &c, o);
    hl_serve_steady s;
    hl_err err;
    if (hl_serve_steady_run(&c, &s, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 16);
    const struct {
        const char *k;
        double v;
    } f[] = {{"rate", s.rate},
             {"iter_s", s.iter_s},
             {"ttft_s", s.ttft_s},
             {"tpot_s", s.tpot_s},
             {"e2e_s", s.e2e_s},
             {"running", s.running},
             {"decodes", s.decodes},
             {"prefill_tokens", s.prefill_tokens},
             {"budget_util", s.budget_util},
             {"kv_util", s.kv_util},
             {"input_tps", s.input_tps},
             {"output_tps", s.output_tps},
             {"output_tps_per_gpu", s.output_tps_per_gpu},
             {"iterations", s.iterations}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        hl_set_num(L, f[i].k, f[i].v);
    lua_pushboolean(L, s.stable);
    lua_setfield(L, -2, "stable");
    lua_pushboolean(L, s.stable && s.ttft_s <= c.slo_ttft_s && s.tpot_s <= c.slo_tpot_s);
    lua_setfield(L, -2, "meets_slo");
    return 1;
}

void hl_bind_serve(lua_State *L)
{
    luaL_newmetatable(L, MT_SERVE);
    lua_pushcfunction(L, owned_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"serve", l_serve}, {"serve_steady", l_serve_steady}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
