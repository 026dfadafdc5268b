/* Binding of the serving model: core.serve{fields} -> result table. Reading
 * the table and building the result are loops over the core's serve field and
 * result tables (core/src/serve_fields.c); every check is the core's
 * (hl_serve_check). Here: the table's shape (groups, the disagg pools over the
 * top level's instance fields, "_ms" aliases) and the memory budget. */
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

/* ---- reading a configuration: one loop over the serve field table ---------------- */

/* Whether k is a key of an hl.simulate table (the instance): a job field or its
 * group ("parallel", "overlap"), a search option, model or cluster. */
static int is_job_key(const char *k)
{
    const hl_field_set *js = hl_job_fields();
    if (hl_field_find(js, k) || hl_field_find(hl_plan_fields(), k) || !strcmp(k, "model") || !strcmp(k, "cluster") ||
        !strcmp(k, "parallel") || !strcmp(k, "spec_draft_model"))
        return 1;
    size_t n = strlen(k);
    for (int32_t i = 0; i < js->count; i++)
        if (js->fields[i].path && strncmp(js->fields[i].path, k, n) == 0 && js->fields[i].path[n] == '.')
            return 1;
    return 0;
}

/* The top-level keys of hl.serve: each row's name, and each group of paths ("input", "slo", "disagg"). */
static int is_serve_key(const char *k)
{
    const hl_field_set *ss = hl_serve_fields();
    size_t n = strlen(k);
    for (int32_t i = 0; i < ss->count; i++) {
        const hl_field *f = &ss->fields[i];
        if (strcmp(f->name, k) == 0 || (f->path && strncmp(f->path, k, n) == 0 && f->path[n] == '.'))
            return 1;
    }
    return 0;
}

/* The groups of serve fields, given as tables ({input = {...}}); "disagg" has its own reader. */
static const char *const groups[] = {"input", "output", "slo", "disagg", "sessions", "kv_offload"};
enum { N_GROUPS = sizeof groups / sizeof groups[0] };

static int is_group(const char *k)
{
    for (int i = 0; i < N_GROUPS; i++)
        if (!strcmp(k, groups[i]))
            return 1;
    return 0;
}

/* Raises "serve: unknown field 'k' (did you mean 'x'?)": serve's own names first, then the instance's. */
static void unknown_key(lua_State *L, const char *where, const char *k, int serve_too)
{
    const hl_field_set *ss = hl_serve_fields(), *js = hl_job_fields();
    const char *names[256];
    int n = 0;
    for (int32_t i = 0; serve_too && i < ss->count && n < 120; i++) {
        const char *p = ss->fields[i].path;
        names[n++] = p && strncmp(p, "disagg.", 7) != 0 ? p : ss->fields[i].name;
    }
    for (int i = 0; serve_too && i < N_GROUPS; i++)
        names[n++] = groups[i];
    names[n] = NULL;
    const char *near = hl_nearest_name(k, names);
    if (!near) {
        n = 0;
        for (int32_t i = 0; i < js->count && n < 250; i++)
            names[n++] = js->fields[i].name;
        names[n] = NULL;
        near = hl_nearest_name(k, names);
    }
    if (near)
        hl_error(L, "%s: unknown field '%s' (did you mean '%s'?; hl.help \"serve\" lists them)", where, k, near);
    hl_error(L,
             "%s: unknown field '%s' (hl.help \"serve\" lists the serve fields, hl.help \"simulate\" the "
             "instance's)",
             where, k);
}

/* Sets serve field `name` (a row's name or path) from the Lua value at the top of the stack. */
static void set_serve_value(lua_State *L, hl_serve_cfg *c, const char *name)
{
    const hl_field *f = hl_serve_field(name);
    int t = lua_type(L, -1);
    hl_err err;
    hl_status st = HL_OK;
    if (f && f->type == HL_FIELD_BOOL && t != LUA_TBOOLEAN) /* 0 and "no" are true in Lua: no guessing */
        hl_error(L, "serve field '%s': expected true or false, got %s", name, luaL_typename(L, -1));
    if ((!f || f->type != HL_FIELD_BOOL) && t == LUA_TBOOLEAN)
        hl_error(L, "serve field '%s': expected a %s, got %s", name,
                 f && (f->type == HL_FIELD_ENUM || f->type == HL_FIELD_STRING) ? "string" : "number",
                 lua_toboolean(L, -1) ? "true" : "false");
    if (f && f->type == HL_FIELD_ENUM && t != LUA_TSTRING)
        hl_error(L, "serve field '%s': expected one of %s, got %s", name, f->enum_names, luaL_typename(L, -1));
    if (t == LUA_TNUMBER)
        st = hl_serve_set_number(c, name, lua_tonumber(L, -1), &err);
    else if (t == LUA_TBOOLEAN)
        st = hl_serve_set_number(c, name, lua_toboolean(L, -1), &err);
    else if (t == LUA_TSTRING) {
        char what[128];
        snprintf(what, sizeof what, "serve field '%s'", name);
        st = hl_serve_set_string(c, name, hl_c_string(L, -1, what), &err); /* "poisson\0junk" is no poisson */
    } else
        hl_error(L, "serve field '%s': expected a %s, got %s", name,
                 !f || f->type == HL_FIELD_DOUBLE || f->type == HL_FIELD_INT64 ? "number" : "string",
                 luaL_typename(L, -1));
    if (st)
        hl_raise(L, &err);
}

/* The keys of group g, ", "-separated ("ttft_s, tpot_s"), written to list[400]. */
static const char *group_members(const char *g, char list[400])
{
    const hl_field_set *ss = hl_serve_fields();
    size_t gl = strlen(g);
    list[0] = '\0';
    for (int32_t i = 0; i < ss->count; i++) {
        const char *p = ss->fields[i].path;
        if (p && strncmp(p, g, gl) == 0 && p[gl] == '.')
            snprintf(list + strlen(list), 400 - strlen(list), "%s%s", list[0] ? ", " : "", p + gl + 1);
    }
    return list;
}

/* Sets group g's fields ("input", "output", "slo") from the table at the top of the stack. The
 * table is the whole group: its fields start unset. "_ms" keys are friendly aliases of "_s" ones. */
static void set_group(lua_State *L, hl_serve_cfg *c, const char *g)
{
    int t = lua_gettop(L);
    char keys[400];
    if (lua_getmetatable(L, t)) {
        lua_pop(L, 1);
        char what[64];
        snprintf(what, sizeof what, "serve field '%s'", g);
        hl_check_plain_table(L, t, what);
    }
    lua_pushnil(L);
    if (!lua_next(L, t)) /* {} (or a JSON null inside it) sets nothing: say so, not a silent "none" */
        hl_error(L, "serve field '%s': an empty table gives none of its fields (allowed: %s; leave '%s' out for none)",
                 g, group_members(g, keys), g);
    lua_pop(L, 2);
    hl_serve_clear_group(c, g);
    lua_pushnil(L);
    while (lua_next(L, t)) { /* [.. group key value] */
        if (lua_type(L, -2) != LUA_TSTRING)
            hl_error(L, "serve field '%s': keys must be names (got a %s key)", g, luaL_typename(L, -2));
        const char *k = hl_c_string(L, -2, "serve: a field name");
        char path[96], alias[96];
        snprintf(path, sizeof path, "%s.%s", g, k);
        size_t kl = strlen(k);
        const hl_field *f = hl_serve_field(path);
        if (!f && kl > 3 && strcmp(k + kl - 3, "_ms") == 0) { /* ttft_ms -> ttft_s x 1e-3 */
            snprintf(alias, sizeof alias, "%s.%.*s_s", g, (int)(kl - 3), k);
            const hl_field *a = hl_serve_field(alias);
            int vt = lua_type(L, -1);
            if (a && strcmp(a->unit, "s") == 0) {
                if (vt != LUA_TNUMBER) {     /* was "unknown key 'tpot_ms'" */
                    if (vt == LUA_TSTRING) { /* hl_error formats as lua_pushfstring: no precision */
                        char shown[48];
                        snprintf(shown, sizeof shown, "%.40s", lua_tostring(L, -1));
                        hl_error(L, "serve field '%s.%s': expected a number of ms, got the string '%s'", g, k, shown);
                    }
                    if (vt == LUA_TBOOLEAN)
                        hl_error(L, "serve field '%s.%s': expected a number of ms, got %s", g, k,
                                 lua_toboolean(L, -1) ? "true" : "false");
                    hl_error(L, "serve field '%s.%s': expected a number of ms, got a %s", g, k, lua_typename(L, vt));
                }
                lua_getfield(L, t, alias + strlen(g) + 1);
                if (!lua_isnil(L, -1))
                    hl_error(L, "serve field '%s': %s and %s give the same limit twice (in s and in ms)", g,
                             alias + strlen(g) + 1, k);
                lua_pop(L, 1);
                /* checked in the unit the user wrote: 1e308 ms was refused as "slo.ttft_s: 1e+305" */
                double v = lua_tonumber(L, -1);
                if (!(v * 1e-3 >= a->min && v * 1e-3 <= a->max)) { /* the core's check, of the value it gets */
                    char shown[160];
                    snprintf(shown, sizeof shown, "%.14g is out of range (%sallowed: %g..%g ms)", v,
                             isfinite(v) ? "" : "not a finite number; ", a->min * 1e3, a->max * 1e3);
                    hl_error(L, "serve field '%s.%s': %s", g, k, shown);
                }
                lua_pushnumber(L, v * 1e-3);
                set_serve_value(L, c, alias);
                lua_pop(L, 2);
                continue;
            }
        }
        if (!f || f->path == NULL || strncmp(f->path, g, strlen(g)) != 0) {
            const hl_field_set *ss = hl_serve_fields();
            const char *members[40];
            int n = 0;
            char list[400] = "";
            size_t gl = strlen(g);
            for (int32_t i = 0; i < ss->count && n < 39; i++) {
                const char *p = ss->fields[i].path;
                if (p && strncmp(p, g, gl) == 0 && p[gl] == '.') {
                    members[n++] = p + gl + 1;
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n > 1 ? ", " : "", p + gl + 1);
                }
            }
            members[n] = NULL;
            const char *near = hl_nearest_name(k, members);
            if (near)
                hl_error(L, "serve field '%s': unknown key '%s' (did you mean '%s'?; allowed: %s)", g, k, near, list);
            hl_error(L, "serve field '%s': unknown key '%s' (allowed: %s)", g, k, list);
        }
        set_serve_value(L, c, path);
        lua_pop(L, 1);
    }
}

/* The instance fields of a disaggregated pool: a copy of the top level's (at jt) with the
 * pool's table (at the top of the stack) over them; leaves the merged table on the stack. */
static void pool_table(lua_State *L, int jt, const char *which)
{
    int p = lua_gettop(L);
    lua_newtable(L);
    int m = lua_gettop(L);
    for (lua_pushnil(L); lua_next(L, jt); lua_pop(L, 1)) {
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, m);
    }
    for (lua_pushnil(L); lua_next(L, p); lua_pop(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            hl_error(L, "serve field 'disagg.%s': keys must be names", which);
        const char *k = hl_c_string(L, -2, "serve: a field name");
        if (!is_job_key(k)) {
            if (is_serve_key(k))
                hl_error(L,
                         "serve field 'disagg.%s': '%s' is a serve field, not an instance field (give it at "
                         "the top level)",
                         which, k);
            char where[64];
            snprintf(where, sizeof where, "serve field 'disagg.%s'", which);
            unknown_key(L, where, k, 0);
        }
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, m);
    }
}

/* hl_check_job on the table at the top of the stack, for serving: an explicit mapping and no
 * search option. `pool` prefixes messages. Pops the table. */
static hl_job instance(lua_State *L, const char *pool)
{
    hl_plan_in pin;
    int batch_max, auto_plan;
    hl_check_job(L, -1, &pin, &batch_max, &auto_plan);
    if (batch_max || auto_plan)
        hl_error(L,
                 "%sserve: give an explicit mapping (parallel = {tp =, ...}); the batch comes from the "
                 "scheduler (max_seqs)",
                 pool);
    hl_err err;
    if (hl_serve_check_plan(&pin, pool, &err) || hl_serve_check_instance(&pin.job, pool, &err))
        hl_raise(L, &err);
    lua_pop(L, 1);
    return pin.job;
}

/* Reads an hl.serve table (at idx) into *c: each key a serve field (a row's name or a group),
 * else an instance field (hl.simulate's, read by hl_check_job); a trace file is read and owned
 * by o. Raises naming the field on bad input; the checks across fields are hl_serve_check's. */
static void read_cfg(lua_State *L, int idx, hl_serve_cfg *c, owned *o)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    hl_check_plain_table(L, idx, "serve");
    lua_newtable(L);
    int jt = lua_gettop(L);
    for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            hl_error(L, "serve: field names must be strings (got a %s key)", luaL_typename(L, -2));
        const char *k = hl_c_string(L, -2, "serve: a field name");
        if (is_serve_key(k))
            continue;
        const hl_field *pf = strchr(k, '.') ? hl_serve_field(k) : NULL;
        if (pf && pf->path && !strcmp(pf->path, k)) { /* "kv_offload.bw": a key of its group, or the flat name */
            int gl = (int)(strchr(k, '.') - k);
            char msg[300]; /* luaL_error has no %.*s */
            snprintf(msg, sizeof msg, "serve: '%s' is key '%s' of group '%.*s': give %.*s = {%s = ...}%s%s%s", k,
                     k + gl + 1, gl, k, gl, k, k + gl + 1, pf->type == HL_FIELD_TABLE ? "" : ", or its flat name '",
                     pf->type == HL_FIELD_TABLE ? "" : pf->name, pf->type == HL_FIELD_TABLE ? "" : "'");
            hl_error(L, "%s", msg);
        }
        if (!is_job_key(k))
            unknown_key(L, "serve", k, 1);
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, jt);
    }
    lua_pushvalue(L, jt);
    hl_job job = instance(L, "");
    hl_serve_init(c, &job);
    for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
        const char *k = lua_tostring(L, -2);
        if (!is_serve_key(k))
            continue;
        int t = lua_type(L, -1);
        if (strcmp(k, "disagg") == 0) {
            if (t != LUA_TTABLE)
                hl_error(L, "serve field 'disagg': expected {prefill = {...}, decode = {...}, kv_link =}, got %s",
                         luaL_typename(L, -1));
            int d = lua_gettop(L);
            hl_check_plain_table(L, d, "serve field 'disagg'");
            for (lua_pushnil(L); lua_next(L, d); lua_pop(L, 1)) {
                const char *dk =
                    lua_type(L, -2) == LUA_TSTRING ? hl_c_string(L, -2, "serve field 'disagg': a key") : "?";
                if (strcmp(dk, "prefill") && strcmp(dk, "decode") && strcmp(dk, "kv_link"))
                    hl_error(L, "serve field 'disagg': unknown key '%s' (allowed: prefill, decode, kv_link)", dk);
            }
            for (int w = 0; w < 2; w++) {
                const char *which = w ? "decode" : "prefill";
                if (lua_getfield(L, d, which) != LUA_TTABLE)
                    hl_error(L,
                             "serve field 'disagg.%s': expected a table of instance fields (parallel = {tp =, "
                             "gpus =}, ...), got %s",
                             which, luaL_typename(L, -1));
                pool_table(L, jt, which); /* [.. pool merged] */
                char pre[40];
                snprintf(pre, sizeof pre, "disagg.%s: ", which);
                hl_job pj = instance(L, pre);
                lua_pop(L, 1);
                if (w)
                    c->decode_job = pj;
                else
                    c->job = pj;
            }
            c->disagg = 1;
            if (lua_getfield(L, d, "kv_link") != LUA_TNIL)
                set_serve_value(L, c, "disagg.kv_link");
            lua_pop(L, 1);
        } else if (t == LUA_TTABLE && is_group(k)) { /* "disagg" was read above */
            set_group(L, c, k);
        } else if (t == LUA_TTABLE) {
            const hl_field *f = hl_serve_field(k);
            hl_error(L, "serve field '%s': expected %s, got a table", k,
                     !f                           ? "a number"
                     : f->type == HL_FIELD_BOOL   ? "true or false"
                     : f->type == HL_FIELD_STRING ? "a string"
                     : f->type == HL_FIELD_ENUM   ? "a name"
                                                  : "a number");
        } else if (strcmp(k, "slo") == 0) {
            hl_error(L, "serve field 'slo': expected {ttft_s =, tpot_s =} (or ttft_ms, tpot_ms), got %s",
                     luaL_typename(L, -1));
        } else if (is_group(k) && strcmp(k, "input") && strcmp(k, "output")) { /* kv_offload = true, sessions = 3 */
            char members[400];
            hl_error(L, "serve field '%s': expected a table {%s}, got %s", k, group_members(k, members),
                     luaL_typename(L, -1));
        } else {
            set_serve_value(L, c, k);
        }
    }
    lua_pop(L, 1); /* jt */
    hl_err err;
    if (hl_serve_load_trace(c, &o->trace, &err))
        hl_raise(L, &err);
}

/* ---- results: loops over the serve result tables ---------------------------------- */

/* t[path] = the value of row f of rec, nesting at dots ("ttft_s.p99"); NaN and "" are nil. */
static void push_row(lua_State *L, const hl_result_field *f, const void *rec)
{
    double v = hl_serve_record_value(f, rec);
    const char *name = f->name, *dot;
    int depth = 0;
    while ((dot = strchr(name, '.')) != NULL) { /* [.. t] -> [.. t sub] */
        lua_pushlstring(L, name, (size_t)(dot - name));
        if (lua_rawget(L, -2) != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushlstring(L, name, (size_t)(dot - name));
            lua_pushvalue(L, -2);
            lua_rawset(L, -4);
        }
        name = dot + 1;
        depth++;
    }
    switch (f->type) {
    case HL_VALUE_INTEGER:
    case HL_VALUE_INT32: lua_pushinteger(L, (lua_Integer)v); break;
    case HL_VALUE_BOOL: lua_pushboolean(L, v != 0); break;
    case HL_VALUE_NAME: {
        const char *p = f->names;
        for (int k = 0; k < (int)v && p; k++)
            p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
        size_t len = p ? strcspn(p, "|") : 0;
        if (len)
            lua_pushlstring(L, p, len);
        else
            lua_pushnil(L);
        break;
    }
    default:
        if (isnan(v))
            lua_pushnil(L);
        else
            lua_pushnumber(L, v);
    }
    lua_setfield(L, -2, name);
    lua_pop(L, depth);
}

/* A table of every row of a record kind. */
static void push_record(lua_State *L, int32_t kind, const void *rec)
{
    int32_t n = hl_serve_result_field_count(kind);
    lua_createtable(L, 0, n);
    for (int32_t i = 0; i < n; i++)
        push_row(L, hl_serve_result_field_at(kind, i), rec);
}

static void push_result(lua_State *L, const hl_serve_result *r)
{
    push_record(L, HL_SERVE_REC_RESULT, r);
    int32_t ns = hl_serve_result_field_count(HL_SERVE_REC_SAMPLE);
    lua_createtable(L, 0, ns); /* [result series] one column per sample row */
    for (int32_t c = 0; c < ns; c++) {
        const hl_result_field *f = hl_serve_result_field_at(HL_SERVE_REC_SAMPLE, c);
        lua_createtable(L, (int)r->n_samples, 0);
        for (int64_t i = 0; i < r->n_samples; i++) {
            lua_pushnumber(L, hl_serve_record_value(f, &r->samples[i]));
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, f->name);
    }
    lua_setfield(L, -2, "kv_series");
    if (r->reqs) {
        lua_createtable(L, (int)r->requests, 0);
        for (int64_t i = 0; i < r->requests; i++) {
            push_record(L, HL_SERVE_REC_REQUEST, &r->reqs[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "per_request");
    }
    if (r->steps_log) {
        lua_createtable(L, (int)r->n_steps_log, 0);
        for (int64_t i = 0; i < r->n_steps_log; i++) {
            push_record(L, HL_SERVE_REC_STEP, &r->steps_log[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "step_log");
    }
}

/* The memory budget of one run in bytes: $HBDLAB_SERVE_MEMORY_BYTES, else 8 GB; junk in it
 * raises naming the variable (hl_env_bytes). */
static double memory_budget(lua_State *L)
{
    double b;
    hl_err err;
    if (hl_env_bytes("HBDLAB_SERVE_MEMORY_BYTES", 8e9, 1e18, &b, &err))
        hl_raise(L, &err);
    return b;
}

/* The run's budget: the C run checks its records against it (cfg.memory_budget, where it knows
 * whether compact records are taken); with keep_requests (one record per request, never compact),
 * raises here before anything is allocated when the requests and their per_request tables (about
 * 640 B each in Lua) would exceed it. */
static void check_memory(lua_State *L, hl_serve_cfg *c)
{
    int trace = c->trace != NULL && c->n_trace > 0;
    double n = trace ? (double)(c->requests > 0 && c->requests < c->n_trace ? c->requests : c->n_trace)
                     : (double)(c->requests > 0 ? c->requests : 1000);
    double budget = memory_budget(L);
    c->memory_budget = budget;
    double need = c->keep_requests ? hl_serve_memory_bytes(c) + n * 640 : 0;
    if (need > budget) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "field 'requests': %.0f requests would take about %.3g GB, more than the budget of "
                 "%.3g GB (HBDLAB_SERVE_MEMORY_BYTES)%s; fewer requests give the same statistics",
                 n, need / 1e9, budget / 1e9, c->keep_requests ? " with keep_requests" : "");
        hl_error(L, "%s", msg);
    }
}

static owned *push_owned(lua_State *L)
{
    owned *o = lua_newuserdatauv(L, sizeof *o, 0); /* [.. owned] */
    memset(o, 0, sizeof *o);
    luaL_setmetatable(L, MT_SERVE);
    return o;
}

/* Pushes the trace's columns or keys that were read past as the warning hbdlab/serve.lua prints,
 * or nil. */
static void push_unread(lua_State *L, const hl_serve_cfg *c)
{
    if (c->trace_unread[0])
        lua_pushfstring(L,
                        "trace %s: %s %s not read (a trace gives arrival_s, input, output, session, turn, prefix, "
                        "prefix_len: docs/MODEL.md 12)",
                        c->trace_file, c->trace_unread, strchr(c->trace_unread, ',') ? "are" : "is");
    else
        lua_pushnil(L);
}

/* core.serve(fields): one hl.serve table (serve fields and the instance's, as documented in hl.help
 * "serve") -> the result table, or the steady state with mode = "analytical"; and the warning of a
 * trace with columns or keys it does not read (or nil). */
static int l_serve(lua_State *L)
{
    owned *o = push_owned(L);
    hl_serve_cfg c;
    read_cfg(L, 1, &c, o);
    hl_err err;
    if (c.mode == HL_SERVE_ANALYTICAL) {
        hl_serve_steady s;
        if (hl_serve_steady_run(&c, &s, &err))
            return hl_raise(L, &err);
        push_record(L, HL_SERVE_REC_STEADY, &s);
        push_unread(L, &c);
        return 2;
    }
    if (hl_serve_check(&c, &err)) /* before the memory estimate, which reads the resolved fields */
        return hl_raise(L, &err);
    check_memory(L, &c);
    if (hl_serve_run(&c, &o->res, &err))
        return hl_raise(L, &err);
    push_result(L, &o->res);
    hl_serve_result_free(&o->res); /* early; __gc would too */
    push_unread(L, &c);
    return 2;
}

/* core.serve_fields(kind): the rows of the serve result tables ("result", "request", "step",
 * "sample", "steady") as {name, type, unit, help, values}. The field table is core.fields("serve"). */
static int l_serve_result_fields(lua_State *L)
{
    static const char *const kinds[] = {"result", "request", "step", "sample", "steady", NULL};
    static const char *const types[] = {"number", "integer", "boolean", "name", "integer"};
    int32_t kind = luaL_checkoption(L, 1, "result", kinds);
    int32_t n = hl_serve_result_field_count(kind);
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        const hl_result_field *f = hl_serve_result_field_at(kind, i);
        lua_createtable(L, 0, 5);
        lua_pushstring(L, f->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, types[f->type]);
        lua_setfield(L, -2, "type");
        lua_pushstring(L, f->unit);
        lua_setfield(L, -2, "unit");
        lua_pushstring(L, f->help);
        lua_setfield(L, -2, "help");
        if (f->names) {
            lua_pushstring(L, f->names);
            lua_setfield(L, -2, "values");
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

void hl_bind_serve(lua_State *L)
{
    luaL_newmetatable(L, MT_SERVE);
    lua_pushcfunction(L, owned_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {{"serve", l_serve}, {"serve_result_fields", l_serve_result_fields}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
