/* Binding of the simulation: core.simulate{...} -> result table (field names
 * are the contract of docs/LUA_API.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

static const char *const job_fields[] = {"model", "cluster", "precision", "kv_precision", "act_precision",
    "wire_precision", "batch", "input", "output", "parallel", "overlap", "imbalance", "layer_overhead",
    "dispatch", "microbatches", "mem_util", "workspace_bytes", "exact_steps", "objective", "max_tpot_s",
    "max_ttft_s", "sequence_parallel", "placement", "ignore_memory", "coll_algo", "framework",
    "step_overhead", "gemm_scale_16", "gemm_scale_fp8", "gemm_scale_fp4", "attn_scale", NULL};
static const char *const objectives[] = {"tps_per_gpu", "ttft", "tpot", "throughput", NULL};
static const char *const parallel_fields[] = {"tp", "pp", "ep", "dp", "etp", "gpus", NULL};

/* Raises on a key of the table at idx that is not in `known`. The names are
 * kept as a set in the registry (keyed by the list's address) so that each
 * check is a hash lookup. */
static void check_known(lua_State *L, int idx, const char *const *known, const char *what)
{
    idx = lua_absindex(L, idx);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, known) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        for (int i = 0; known[i]; i++) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, known[i]);
        }
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, known);
    }
    int set = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || lua_rawget(L, set) == LUA_TNIL) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; known[i]; i++) {
                luaL_addstring(&b, i ? ", " : "");
                luaL_addstring(&b, known[i]);
            }
            luaL_pushresult(&b);
            luaL_error(L, "%s: unknown field '%s' (allowed: %s)", what, k, lua_tostring(L, -1));
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

static int64_t int_field(lua_State *L, int idx, const char *name, int64_t def)
{
    double v = hl_opt_number_field(L, idx, name, (double)def);
    if (v != (double)(int64_t)v || v < 0 || v > 1e9)
        luaL_error(L, "parallel field '%s': %f is not a non-negative integer", name, v);
    return (int64_t)v;
}

static hl_precision prec_field(lua_State *L, const char *name, hl_precision def)
{
    const char *s = hl_opt_string_field(L, 1, name);
    hl_precision p = def;
    hl_err err;
    if (s && hl_precision_parse(s, &p, &err))
        luaL_error(L, "field '%s': %s", name, err.msg);
    return p;
}

static void push_events(lua_State *L, const hl_event *ev, int n)
{
    static const char *const kinds[] = {"every", "dense", "moe", "pass"};
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 7);
        lua_pushstring(L, ev[i].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, ev[i].is_comm ? "comm" : "op");
        lua_setfield(L, -2, "kind");
        if (ev[i].is_comm) {
            lua_pushstring(L, ev[i].tier ? "scale-out" : "scale-up");
            lua_setfield(L, -2, "tier");
        }
        lua_pushstring(L, kinds[ev[i].layer_kind & 3]);
        lua_setfield(L, -2, "layers");
        hl_set_num(L, "dur_s", ev[i].dur_s);
        hl_set_num(L, "bytes", ev[i].bytes);
        hl_set_num(L, "flops", ev[i].flops);
        lua_rawseti(L, -2, i + 1);
    }
}

static void push_items(lua_State *L, const hl_item *items, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 6);
        lua_pushstring(L, items[i].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, items[i].is_comm ? "comm" : "op");
        lua_setfield(L, -2, "kind");
        if (items[i].is_comm) {
            lua_pushstring(L, items[i].tier ? "scale-out" : "scale-up");
            lua_setfield(L, -2, "tier");
        }
        hl_set_num(L, "time_s", items[i].time_s);
        hl_set_num(L, "bytes", items[i].bytes);
        hl_set_num(L, "flops", items[i].flops);
        lua_rawseti(L, -2, i + 1);
    }
}

/* Registry keys of the weak tables that map a result's prefill / decode
 * subtable to the userdata holding its job (for lazy fields). */
static char lazy_key[2];

/* __index of phase subtables: builds `breakdown` and `events` on first use, by
 * re-running the job (deterministic) in full detail; both fields are cached. */
static int phase_index(lua_State *L)
{
    const char *k = lua_tostring(L, 2);
    if (!k || (strcmp(k, "breakdown") != 0 && strcmp(k, "events") != 0))
        return 0;
    for (int which = 0; which < 2; which++) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_key[which]);
        lua_pushvalue(L, 1);
        lua_rawget(L, -2);
        const hl_job *job = lua_touserdata(L, -1);
        lua_pop(L, 2);
        if (!job)
            continue;
        hl_result *r = malloc(sizeof *r);
        hl_err err;
        if (!r)
            return luaL_error(L, "out of memory");
        hl_job full = *job;
        full.summary_only = 0;
        if (hl_sim_run(&full, r, &err)) {
            free(r);
            return hl_raise(L, &err);
        }
        push_items(L, which ? r->decode_items : r->prefill_items, which ? r->n_decode_items : r->n_prefill_items);
        lua_setfield(L, 1, "breakdown"); /* rawset: the metatable has no __newindex */
        push_events(L, which ? r->decode_events : r->prefill_events, which ? r->n_decode_events : r->n_prefill_events);
        lua_setfield(L, 1, "events");
        free(r);
        lua_getfield(L, 1, k);
        return 1;
    }
    return 0;
}

static void push_phase(lua_State *L, const hl_phase *ph, int which, int result_ud)
{
    lua_createtable(L, 0, 14);
    hl_set_num(L, "time_s", ph->time_s);
    hl_set_num(L, "compute_s", ph->compute_s);
    hl_set_num(L, "memory_s", ph->memory_s);
    hl_set_num(L, "comm_s", ph->comm_s);
    hl_set_num(L, "overhead_s", ph->overhead_s);
    hl_set_num(L, "comm_share", ph->comm_share);
    hl_set_num(L, "scaleup_comm_s", ph->scaleup_comm_s);
    hl_set_num(L, "scaleout_comm_s", ph->scaleout_comm_s);
    hl_set_num(L, "latency_comm_s", ph->latency_comm_s);
    hl_set_num(L, "flops", ph->flops);
    hl_set_num(L, "hbm_bytes", ph->hbm_bytes);
    luaL_setmetatable(L, "hbdlab.phase");
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_key[which]); /* [phase lazy] */
    lua_pushvalue(L, -2);
    lua_pushvalue(L, result_ud);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Reads simulate fields from the table at idx 1 into *job; see bind.h. */
void hl_check_job(lua_State *L, hl_job *out, int *batch_max_out, int *auto_plan_out)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    check_known(L, 1, job_fields, "simulate");
    hl_err err;
    hl_model m;
    hl_cluster c;
    lua_getfield(L, 1, "model");
    if (hl_to_model(L, -1))
        m = *hl_to_model(L, -1);
    else if (lua_type(L, -1) == LUA_TSTRING) {
        if (hl_model_preset(lua_tostring(L, -1), &m, &err))
            hl_raise(L, &err);
    } else
        luaL_error(L, "simulate field 'model': expected a model object or preset name, got %s",
                          luaL_typename(L, -1));
    lua_getfield(L, 1, "cluster");
    if (hl_to_cluster(L, -1))
        c = *hl_to_cluster(L, -1);
    else if (lua_type(L, -1) == LUA_TSTRING) {
        if (hl_cluster_preset(lua_tostring(L, -1), &c, &err))
            hl_raise(L, &err);
    } else
        luaL_error(L, "simulate field 'cluster': expected a cluster object or preset name, got %s",
                          luaL_typename(L, -1));
    lua_pop(L, 2);
    hl_job j;
    hl_job_init(&j, &m, &c);
    j.precision = prec_field(L, "precision", HL_BF16);
    j.act_precision = prec_field(L, "act_precision", HL_BF16);
    j.kv_precision = prec_field(L, "kv_precision", (hl_precision)j.act_precision);
    j.wire_precision = prec_field(L, "wire_precision", (hl_precision)j.act_precision);
    int batch_max = 0;
    if (lua_getfield(L, 1, "batch") == LUA_TSTRING) {
        if (strcmp(lua_tostring(L, -1), "max") != 0)
            luaL_error(L, "field 'batch': '%s' is not a number or \"max\"", lua_tostring(L, -1));
        batch_max = 1;
    } else {
        j.batch = hl_opt_number_field(L, 1, "batch", j.batch);
    }
    lua_pop(L, 1);
    j.input = hl_opt_number_field(L, 1, "input", j.input);
    j.output = hl_opt_number_field(L, 1, "output", j.output);
    j.imbalance = hl_opt_number_field(L, 1, "imbalance", j.imbalance);
    j.layer_overhead = hl_opt_number_field(L, 1, "layer_overhead", 0);
    j.microbatches = hl_opt_number_field(L, 1, "microbatches", 0);
    j.mem_util = hl_opt_number_field(L, 1, "mem_util", j.mem_util);
    j.workspace_bytes = hl_opt_number_field(L, 1, "workspace_bytes", 0);
    lua_getfield(L, 1, "exact_steps");
    j.exact_steps = lua_toboolean(L, -1);
    lua_getfield(L, 1, "sequence_parallel");
    j.sequence_parallel = lua_toboolean(L, -1);
    lua_getfield(L, 1, "ignore_memory");
    j.ignore_memory = lua_toboolean(L, -1);
    lua_pop(L, 3);
    const char *place = hl_opt_string_field(L, 1, "placement");
    if (place && hl_field_set_string(hl_job_fields(), &j, "placement", place, &err))
        luaL_error(L, "%s", err.msg);
    const char *fw = hl_opt_string_field(L, 1, "framework");
    if (fw && hl_field_set_string(hl_job_fields(), &j, "framework", fw, &err))
        luaL_error(L, "%s", err.msg);
    static const char *const fw_nums[] = {"step_overhead", "gemm_scale_16", "gemm_scale_fp8", "gemm_scale_fp4",
                                          "attn_scale"};
    for (size_t i = 0; i < sizeof fw_nums / sizeof fw_nums[0]; i++)
        if (lua_getfield(L, 1, fw_nums[i]) != LUA_TNIL) {
            if (!lua_isnumber(L, -1))
                luaL_error(L, "field '%s': expected a number, got %s", fw_nums[i], luaL_typename(L, -1));
            if (hl_field_set_number(hl_job_fields(), &j, fw_nums[i], lua_tonumber(L, -1), &err))
                luaL_error(L, "%s", err.msg);
        }
    lua_pop(L, (int)(sizeof fw_nums / sizeof fw_nums[0]));
    const char *calgo = hl_opt_string_field(L, 1, "coll_algo");
    if (calgo && hl_field_set_string(hl_job_fields(), &j, "coll_algo", calgo, &err))
        luaL_error(L, "%s", err.msg);
    const char *disp = hl_opt_string_field(L, 1, "dispatch");
    if (disp && strcmp(disp, "flat") != 0 && strcmp(disp, "hierarchical") != 0)
        luaL_error(L, "field 'dispatch': '%s' is not one of flat, hierarchical", disp);
    j.dispatch = disp && strcmp(disp, "hierarchical") == 0 ? HL_DISPATCH_HIERARCHICAL : HL_DISPATCH_FLAT;
    int t = lua_getfield(L, 1, "overlap");
    if (t == LUA_TNUMBER) {
        j.overlap_prefill = j.overlap_decode = lua_tonumber(L, -1);
    } else if (t == LUA_TTABLE) {
        j.overlap_prefill = hl_opt_number_field(L, -1, "prefill", 0);
        j.overlap_decode = hl_opt_number_field(L, -1, "decode", 0);
    } else if (t != LUA_TNIL) {
        luaL_error(L, "field 'overlap': expected a number or {prefill = x, decode = y}");
    }
    lua_pop(L, 1);
    int auto_plan = 0;
    t = lua_getfield(L, 1, "parallel");
    if (t == LUA_TSTRING) {
        if (strcmp(lua_tostring(L, -1), "auto") != 0)
            luaL_error(L, "field 'parallel': '%s' is not a table or \"auto\"", lua_tostring(L, -1));
        auto_plan = 1;
    } else if (t == LUA_TTABLE) {
        int pi = lua_gettop(L);
        check_known(L, pi, parallel_fields, "parallel");
        j.tp = int_field(L, pi, "tp", 1);
        j.pp = int_field(L, pi, "pp", 1);
        j.ep = int_field(L, pi, "ep", 1);
        j.dp = int_field(L, pi, "dp", 0);
        j.etp = int_field(L, pi, "etp", 0);
        j.gpus = int_field(L, pi, "gpus", 0);
    } else if (t != LUA_TNIL) {
        luaL_error(L, "field 'parallel': expected a table {tp=, pp=, ep=, dp=, etp=}");
    }
    lua_pop(L, 1);
    *out = j;
    *batch_max_out = batch_max;
    *auto_plan_out = auto_plan;
}

static int l_simulate(lua_State *L)
{
    hl_job j;
    hl_err err;
    int batch_max, auto_plan;
    hl_check_job(L, &j, &batch_max, &auto_plan);
    lua_getfield(L, 1, "objective");
    int objective = luaL_checkoption(L, -1, "tps_per_gpu", objectives);
    lua_pop(L, 1);
    hl_candidate cands[32];
    int32_t ncand = 0;
    if (auto_plan) {
        hl_plan_in pin;
        /* the chosen mapping is checked against memory below, as any other */
        memset(&pin, 0, sizeof pin);
        pin.job = j;
        pin.objective = objective;
        pin.max_tpot = hl_opt_number_field(L, 1, "max_tpot_s", 0);
        pin.max_ttft = hl_opt_number_field(L, 1, "max_ttft_s", 0);
        pin.max_batch = batch_max;
        if (hl_plan_search(&pin, cands, 32, &ncand, &err))
            return hl_raise(L, &err);
        j.tp = cands[0].tp;
        j.pp = cands[0].pp;
        j.ep = cands[0].ep;
        j.dp = cands[0].dp;
        j.etp = cands[0].etp;
        j.batch = cands[0].batch;
    } else if (batch_max) {
        if (hl_sim_max_batch(&j, &j.batch, &err))
            return hl_raise(L, &err);
    }
    hl_job *kept = lua_newuserdatauv(L, sizeof(hl_job), 0); /* [.. ud] the job, for lazy fields */
    *kept = j;
    int ud = lua_gettop(L);
    hl_result res;
    hl_result *rp = &res;
    j.summary_only = 1; /* breakdown and events are built on first access */
    if (hl_sim_run(&j, rp, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 20);
    if (auto_plan) {
        lua_createtable(L, ncand, 0); /* [result candidates] */
        for (int32_t i = 0; i < ncand; i++) {
            lua_createtable(L, 0, 12);
            const struct {
                const char *k;
                double v;
            } cf[] = {{"tp", (double)cands[i].tp}, {"pp", (double)cands[i].pp}, {"ep", (double)cands[i].ep},
                      {"dp", (double)cands[i].dp}, {"etp", (double)cands[i].etp}, {"batch", cands[i].batch},
                      {"score", cands[i].score}, {"ttft_s", cands[i].ttft_s}, {"tpot_s", cands[i].tpot_s},
                      {"tps_per_gpu", cands[i].tps_per_gpu}, {"decode_tps", cands[i].decode_tps}};
            for (size_t k = 0; k < sizeof cf / sizeof cf[0]; k++)
                hl_set_num(L, cf[k].k, cf[k].v);
            lua_pushboolean(L, cands[i].fits);
            lua_setfield(L, -2, "fits");
            lua_pushboolean(L, cands[i].meets_limits);
            lua_setfield(L, -2, "meets_limits");
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "candidates");
        lua_pushstring(L, objectives[objective]);
        lua_setfield(L, -2, "objective");
    }
    hl_set_num(L, "ttft_s", rp->ttft_s);
    hl_set_num(L, "tpot_s", rp->tpot_s);
    hl_set_num(L, "total_s", rp->total_s);
    hl_set_num(L, "ttft_ms", rp->ttft_s * 1e3);
    hl_set_num(L, "tpot_ms", rp->tpot_s * 1e3);
    hl_set_num(L, "decode_tps", rp->decode_tps);
    hl_set_num(L, "tps_per_gpu", rp->tps_per_gpu);
    hl_set_num(L, "tps_per_gpu_incl_prompt", rp->tps_per_gpu_incl_prompt);
    lua_pushstring(L, hl_bound_name(rp->bound));
    lua_setfield(L, -2, "bound");
    push_phase(L, &rp->prefill, 0, ud);
    lua_setfield(L, -2, "prefill");
    push_phase(L, &rp->decode, 1, ud);
    lua_setfield(L, -2, "decode");
    lua_createtable(L, 0, 5);
    hl_set_num(L, "weights_bytes", rp->weights_bytes);
    hl_set_num(L, "kv_bytes", rp->kv_bytes);
    hl_set_num(L, "workspace_bytes", rp->workspace_bytes);
    hl_set_num(L, "per_gpu_bytes", rp->per_gpu_bytes);
    lua_pushboolean(L, rp->fits);
    lua_setfield(L, -2, "fits");
    lua_setfield(L, -2, "memory");
    lua_createtable(L, 0, 6);
    const struct {
        const char *k;
        int64_t v;
    } par[] = {{"tp", rp->tp}, {"pp", rp->pp}, {"ep", rp->ep}, {"dp", rp->dp}, {"etp", rp->etp}, {"gpus", rp->gpus}};
    for (int i = 0; i < 6; i++) {
        lua_pushinteger(L, par[i].v);
        lua_setfield(L, -2, par[i].k);
    }
    lua_setfield(L, -2, "parallel");
    const hl_cost *c = &rp->cost;
    hl_set_num(L, "usd_per_mtok_in", c->usd_per_mtok_in);
    hl_set_num(L, "usd_per_mtok_out", c->usd_per_mtok_out);
    hl_set_num(L, "usd_per_mtok", c->usd_per_mtok);
    hl_set_num(L, "joules_per_token", c->joules_per_token);
    hl_set_num(L, "power_w", c->power_w);
    hl_set_num(L, "peak_power_w", c->peak_power_w);
    lua_createtable(L, 0, 15);
    const struct {
        const char *k;
        double v;
    } cost[] = {{"capex_usd_per_gpu", c->capex_usd_per_gpu}, {"usd_per_gpu_hour", c->usd_per_gpu_hour},
                {"prefill_j", c->prefill_j}, {"decode_j", c->decode_j}, {"energy_j", c->energy_j},
                {"power_w", c->power_w}, {"peak_power_w", c->peak_power_w}, {"prefill_usd", c->prefill_usd},
                {"decode_usd", c->decode_usd}, {"usd_per_mtok_in", c->usd_per_mtok_in},
                {"usd_per_mtok_out", c->usd_per_mtok_out}, {"usd_per_mtok", c->usd_per_mtok},
                {"joules_per_token", c->joules_per_token}, {"joules_per_token_in", c->joules_per_token_in},
                {"joules_per_token_out", c->joules_per_token_out}};
    for (size_t i = 0; i < sizeof cost / sizeof cost[0]; i++)
        hl_set_num(L, cost[i].k, cost[i].v);
    lua_setfield(L, -2, "cost");
    lua_pushstring(L, hl_precision_name((hl_precision)j.precision));
    lua_setfield(L, -2, "precision");
    hl_set_num(L, "batch", j.batch);
    hl_set_num(L, "input", j.input);
    hl_set_num(L, "output", j.output);
    return 1;
}

void hl_bind_sim(lua_State *L)
{
    for (int i = 0; i < 2; i++) { /* weak-keyed: a phase table's userdata lives as long as the table */
        lua_newtable(L);
        lua_newtable(L);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &lazy_key[i]);
    }
    luaL_newmetatable(L, "hbdlab.phase");
    lua_pushcfunction(L, phase_index);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, l_simulate);
    lua_setfield(L, -2, "simulate");
}
