/* Binding of the simulation: core.simulate{...} -> result table (field names
 * are the contract of docs/LUA_API.md). */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bind.h"
#include "result_view.h"

/* Codes of the keys an hl.simulate table may hold (built once per state from
 * the core's job and plan field tables, kept in the registry). */
enum { KEY_OBJECT = 1, KEY_PARALLEL, KEY_GROUP, KEY_EXPERT_FREQ, KEY_DRAFT, KEY_JOB = 0x100, KEY_PLAN = 0x200 };
/* Flags above the code: a mapping key (no "parallel is not given" warning) and a speculative
 * decoding key that has no effect without spec_tokens (hbdlab/warn.lua, which reads the same). */
enum { KEY_CODE_MASK = 0xffff, KEY_MAPPING = 0x10000, KEY_SPEC = 0x20000 };
static const char *const mapping_keys[] = {"tp", "pp", "ep", "dp", "etp", "instance_gpus", NULL};
static const char *const spec_keys[] = {"spec_accept", "spec_draft_layers", NULL};

static int listed(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0)
            return 1;
    return 0;
}
static char keys_key;

/* The fingerprint of the job table a scratch plan was read from (hl.simulate with model and
 * cluster objects beside the table): its keys and values in lua_next order, so that a call with
 * a table that holds the same ones in the same order, and the same two objects, reuses the plan
 * instead of reading and checking every field again (check_job is a function of exactly these;
 * a table that fails the check is never recorded, so every error is still raised).
 * - key: lua_topointer of the key, a field name's string: short (interned), and kept alive by the
 *   key tables in the registry, so the same pointer is the same name;
 * - a number: its double (what the setters read: lua_tonumber), compared bit for bit;
 * - a boolean: its value; a string: lua_topointer, the string kept alive as a user value of the
 *   scratch (so the same pointer is the same string: short strings are interned, and a long one
 *   that is equal but another object only misses);
 * - a group table (parallel = {...}, overlap = {...}): its member entries follow it (n of them);
 * - FP_ANY: model / cluster, whose values check_job does not read when the objects are given.
 * Anything else (expert_freq, spec_accept lists, spec_draft_model, more than FP_MAX entries or
 * FP_STRINGS strings) is not recorded: such a job is read in full on every call. */
enum { FP_MAX = 64, FP_STRINGS = 8, FP_ANY = -2, UV_RUN = 3 + FP_STRINGS, SCRATCH_UV = UV_RUN };
typedef struct fp_entry {
    const void *key; /* lua_topointer of the key */
    const void *p;   /* a string value: lua_topointer (kept alive by a user value) */
    double d;        /* a number value */
    int32_t type;    /* LUA_TNUMBER, LUA_TBOOLEAN, LUA_TSTRING, LUA_TTABLE or FP_ANY */
    int32_t n;       /* a table: the member entries that follow; a boolean: its value */
} fp_entry;

/* The state's scratch for hl.simulate: the plan read last, and what it was read from. */
typedef struct sim_scratch {
    hl_plan_in in;
    int32_t fp_n; /* entries in fp; -1: in is not a recorded table's plan */
    int32_t batch_max, auto_plan, seen;
    const void *model, *cluster; /* the objects in was read with (user values 1 and 2) */
    fp_entry fp[FP_MAX];
} sim_scratch;

/* Recording a fingerprint while check_job reads the table: the scratch (at stack index ud),
 * the entries and strings so far; ok = 0 once something was met that is not recorded. */
typedef struct fp_rec {
    sim_scratch *s;
    int ud, ok;
    int32_t n, nstr;
} fp_rec;

/* Appends the entry of the key and value at the top of the stack: FP_SCALAR a number, boolean or
 * string; FP_ANY any value (not compared); FP_GROUP a group table (the caller counts the member
 * entries that follow into its n). Another value, or one entry or string too many, stops the
 * recording (NULL). */
enum { FP_SCALAR, FP_ANY_VALUE, FP_GROUP };
static fp_entry *fp_add(lua_State *L, fp_rec *rec, int kind)
{
    if (!rec || !rec->ok)
        return NULL;
    int t = lua_type(L, -1);
    int fits =
        kind == FP_ANY_VALUE || (kind == FP_GROUP && t == LUA_TTABLE) ||
        (kind == FP_SCALAR && (t == LUA_TNUMBER || t == LUA_TBOOLEAN || (t == LUA_TSTRING && rec->nstr < FP_STRINGS)));
    /* a key longer than Lua's short strings (40 bytes, LUAI_MAXSHORTLEN) would not be interned, so
     * its pointer would not name it: no field name is (17 bytes at most), but one added must not
     * make the fingerprint unsound */
    if (!fits || rec->n >= FP_MAX || lua_rawlen(L, -2) > 40) {
        rec->ok = 0;
        return NULL;
    }
    fp_entry *e = &rec->s->fp[rec->n++];
    *e = (fp_entry){.key = lua_topointer(L, -2), .type = kind == FP_ANY_VALUE ? FP_ANY : t};
    if (kind != FP_SCALAR)
        return e;
    if (t == LUA_TNUMBER)
        e->d = lua_tonumber(L, -1);
    else if (t == LUA_TBOOLEAN)
        e->n = lua_toboolean(L, -1);
    else { /* a string: kept alive while the fingerprint holds its pointer */
        e->p = lua_topointer(L, -1);
        lua_pushvalue(L, -1);
        lua_setiuservalue(L, rec->ud, 3 + rec->nstr++);
    }
    return e;
}

static void fp_stop(fp_rec *rec)
{
    if (rec)
        rec->ok = 0;
}

/* Whether the table at t holds e[0, n) (fp_entry) and nothing else, in lua_next order. */
static int fp_same(lua_State *L, int t, const fp_entry *e, int32_t n)
{
    int32_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) { /* [.. key value] */
        int same = i < n && lua_topointer(L, -2) == e[i].key;
        if (same && e[i].type != FP_ANY) {
            int ty = lua_type(L, -1);
            if (ty != e[i].type)
                same = 0;
            else if (ty == LUA_TNUMBER) {
                double d = lua_tonumber(L, -1);
                same = memcmp(&d, &e[i].d, sizeof d) == 0; /* bits: NaN, -0 */
            } else if (ty == LUA_TBOOLEAN)
                same = lua_toboolean(L, -1) == e[i].n;
            else if (ty == LUA_TSTRING)
                same = lua_topointer(L, -1) == e[i].p;
            else { /* a group table: its members follow */
                same = i + 1 + e[i].n <= n && fp_same(L, lua_gettop(L), e + i + 1, e[i].n);
                i += e[i].n;
            }
        }
        lua_pop(L, 1);
        if (!same) {
            lua_pop(L, 1);
            return 0;
        }
        i++;
    }
    return i == n;
}

/* Pushes the key -> code table, building it on first use. */
static void push_keys(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &keys_key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_newtable(L);
    const hl_field_set *js = hl_job_fields(), *ps = hl_plan_fields();
    for (int32_t i = 0; i < js->count; i++) {
        const char *name = js->fields[i].name;
        lua_pushinteger(L, KEY_JOB + i + (listed(name, mapping_keys) ? KEY_MAPPING : 0) +
                               (listed(name, spec_keys) ? KEY_SPEC : 0));
        lua_setfield(L, -2, name);
        const char *path = js->fields[i].path;
        if (path) { /* "parallel.tp": the group name is a key too */
            lua_pushlstring(L, path, (size_t)(strchr(path, '.') - path));
            lua_pushinteger(L, KEY_GROUP);
            lua_rawset(L, -3);
        }
    }
    for (int32_t i = 0; i < ps->count; i++) {
        lua_pushinteger(L, KEY_PLAN + i);
        lua_setfield(L, -2, ps->fields[i].name);
    }
    lua_pushinteger(L, KEY_OBJECT);
    lua_setfield(L, -2, "model");
    lua_pushinteger(L, KEY_DRAFT + KEY_SPEC);
    lua_setfield(L, -2, "spec_draft_model");
    lua_pushinteger(L, KEY_OBJECT);
    lua_setfield(L, -2, "cluster");
    lua_pushinteger(L, KEY_PARALLEL + KEY_MAPPING);
    lua_setfield(L, -2, "parallel");
    lua_pushinteger(L, KEY_EXPERT_FREQ);
    lua_setfield(L, -2, "expert_freq");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &keys_key);
}

/* Pushes the members of job field group g ("parallel", "overlap"): leaf name -> index in the
 * job field table (built once per state: no path formatted and looked up per field). */
static char group_keys_key;
static void push_group_keys(lua_State *L, const char *g)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &group_keys_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        const hl_field_set *js = hl_job_fields();
        for (int32_t i = 0; i < js->count; i++) {
            const char *path = js->fields[i].path, *dot = path ? strchr(path, '.') : NULL;
            if (!dot)
                continue;
            lua_pushlstring(L, path, (size_t)(dot - path));
            if (lua_rawget(L, -2) != LUA_TTABLE) {
                lua_pop(L, 1);
                lua_newtable(L);
                lua_pushlstring(L, path, (size_t)(dot - path));
                lua_pushvalue(L, -2);
                lua_rawset(L, -4);
            }
            lua_pushinteger(L, i);
            lua_setfield(L, -2, dot + 1);
            lua_pop(L, 1);
        }
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &group_keys_key);
    }
    if (lua_getfield(L, -1, g) != LUA_TTABLE) { /* not a group: no members */
        lua_pop(L, 1);
        lua_newtable(L);
    }
    lua_remove(L, -2);
}

/* expert_freq = {share, ...} (one per expert) or "file" (numbers, docs/LUA_API.md):
 * the measured routing histogram, checked by the core. Value at the top. */
static void set_expert_freq(lua_State *L, hl_job *j)
{
    hl_err err;
    hl_status st;
    if (lua_type(L, -1) == LUA_TSTRING) {
        st = hl_job_read_expert_freq(j, hl_c_string(L, -1, "field 'expert_freq'"), &err);
    } else if (lua_type(L, -1) == LUA_TTABLE) {
        lua_Integer n = luaL_len(L, -1);
        if (n < 1 || n > HL_EXPERTS_MAX)
            hl_error(L, "field 'expert_freq': %d shares (allowed: one per expert, at most %d)", (int)n,
                     (int)HL_EXPERTS_MAX);
        double share[HL_EXPERTS_MAX];
        for (lua_Integer i = 1; i <= n; i++) {
            int isnum = 0;
            lua_rawgeti(L, -1, i);
            share[i - 1] = lua_tonumberx(L, -1, &isnum);
            if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
                hl_error(L, "field 'expert_freq': entry %d is a %s, not a number", (int)i, luaL_typename(L, -1));
            lua_pop(L, 1);
        }
        st = hl_job_set_expert_freq(j, share, (int64_t)n, &err);
    } else {
        hl_error(L, "field 'expert_freq': expected a list of shares or a file name, got %s", luaL_typename(L, -1));
        return;
    }
    if (st)
        hl_raise(L, &err);
}

/* spec_accept = {a1, ..., a_gamma}: the per-position acceptance of draft tokens (docs/MODEL.md
 * 6.2), checked by the core (each in (0, 1]; as many as spec_tokens when the job runs). Value at
 * the top. */
static void set_spec_accept(lua_State *L, hl_job *j)
{
    /* keys exactly 1..n: {0.9, 0.8, 0.7, x = 1} or a key 0 was accepted with the extra key dropped */
    hl_check_list(L, -1, "field 'spec_accept'");
    lua_Integer n = luaL_len(L, -1);
    if (n < 1 || n > HL_SPEC_POSITIONS_MAX)
        hl_error(L,
                 "field 'spec_accept': a vector of %d entries (allowed: 1 to %d, one acceptance probability "
                 "per draft token, or a number for all of them)",
                 (int)n, (int)HL_SPEC_POSITIONS_MAX);
    double a[HL_SPEC_POSITIONS_MAX];
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TNUMBER) /* JSON's null is a light userdata: "a userdata" */
            hl_error(L, "field 'spec_accept': entry %d is %s, not a number in (0, 1]", (int)i,
                     lua_type(L, -1) == LUA_TLIGHTUSERDATA ? "null" : lua_pushfstring(L, "a %s", luaL_typename(L, -1)));
        a[i - 1] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    hl_err err;
    if (hl_job_set_spec_accept(j, a, (int64_t)n, &err))
        hl_raise(L, &err);
}

/* Raises "simulate: unknown field 'k' (did you mean ...?; allowed: ...)". */
static void unknown_key(lua_State *L, const char *k)
{
    const hl_field_set *js = hl_job_fields(), *ps = hl_plan_fields();
    char near[64];
    hl_field_suggest(js, k, near, sizeof near);
    if (!near[0])
        hl_field_suggest(ps, k, near, sizeof near);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "model, cluster, parallel, expert_freq");
    const char *last_group = "";
    for (int32_t i = 0; i < js->count; i++) {
        const char *p = js->fields[i].path;
        if (p && strncmp(p, "parallel.", 9) == 0)
            continue;
        luaL_addstring(&b, ", ");
        if (p && strncmp(p, last_group, strlen(last_group)) != 0) { /* a group once, then its fields */
            luaL_addlstring(&b, p, (size_t)(strchr(p, '.') - p));
            luaL_addstring(&b, ", ");
            last_group = p;
        }
        luaL_addstring(&b, js->fields[i].name);
    }
    for (int32_t i = 0; i < ps->count; i++) {
        luaL_addstring(&b, ", ");
        luaL_addstring(&b, ps->fields[i].name);
    }
    luaL_pushresult(&b);
    if (near[0])
        hl_error(L, "simulate: unknown field '%s' (did you mean '%s'?; allowed: %s)", k, near, lua_tostring(L, -1));
    hl_error(L, "simulate: unknown field '%s' (allowed: %s)", k, lua_tostring(L, -1));
}

/* Sets field f of set (struct obj) from the Lua value at the top of the stack. */
static void set_from_lua(lua_State *L, const hl_field_set *set, const hl_field *f, void *obj, const char *shown)
{
    hl_err err;
    hl_status st;
    if (f->type == HL_FIELD_ENUM && lua_type(L, -1) != LUA_TSTRING) /* by name only, not by index */
        hl_error(L, "%s field '%s': expected a string, got %s", set->kind, shown, luaL_typename(L, -1));
    if (f->type == HL_FIELD_BOOL && lua_type(L, -1) != LUA_TBOOLEAN) { /* 0 and "false" are true in Lua: no guessing */
        const char *type = luaL_typename(L, -1); /* before lua_tostring turns a number into a string */
        hl_error(L, "field '%s': expected true or false, got %s %s", shown, type,
                 lua_type(L, -1) == LUA_TNUMBER || lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "");
    }
    if (f->type != HL_FIELD_BOOL && lua_type(L, -1) == LUA_TBOOLEAN) /* input = true must not become 1 token */
        hl_error(L, "%s field '%s': expected a %s, got %s", set->kind, shown,
                 f->type == HL_FIELD_ENUM || f->type == HL_FIELD_STRING ? "string" : "number",
                 lua_toboolean(L, -1) ? "true" : "false");
    switch (lua_type(L, -1)) {
    case LUA_TNUMBER: st = hl_field_set_number_at(set, f, obj, lua_tonumber(L, -1), &err); break;
    case LUA_TBOOLEAN: st = hl_field_set_number_at(set, f, obj, lua_toboolean(L, -1), &err); break;
    case LUA_TSTRING: {
        if (hl_holds_nul(L, -1)) { /* hl_c_string raises, naming the field (formatted only then) */
            char what[96];
            snprintf(what, sizeof what, "%s field '%s'", set->kind, shown);
            hl_c_string(L, -1, what);
        }
        st = hl_field_set_string(set, obj, f->name, lua_tostring(L, -1), &err);
        break;
    }
    default:
        hl_error(L, "%s field '%s': expected a %s, got %s", set->kind, shown,
                 f->type == HL_FIELD_BOOL                                 ? "boolean"
                 : f->type == HL_FIELD_ENUM || f->type == HL_FIELD_STRING ? "string"
                                                                          : "number",
                 luaL_typename(L, -1));
        return;
    }
    if (st)
        hl_raise(L, &err);
}

/* Sets the fields of group `g` ("parallel", "overlap") from the table at the top (each member
 * recorded into rec, when given). */
static void set_group_table(lua_State *L, hl_job *j, const char *g, fp_rec *rec)
{
    int t = lua_gettop(L);
    char what[64];
    if (lua_getmetatable(L, t)) { /* named only when there is a metatable to look at */
        lua_pop(L, 1);
        snprintf(what, sizeof what, "simulate field '%s'", g);
        hl_check_plain_table(L, t, what);
    }
    push_group_keys(L, g); /* [.. group members] */
    int members_idx = t + 1;
    lua_pushnil(L);
    while (lua_next(L, t)) { /* [.. group members key value] */
        const hl_field *f = NULL;
        lua_pushvalue(L, -2);
        if (lua_type(L, -1) == LUA_TSTRING && lua_rawget(L, members_idx) == LUA_TNUMBER)
            f = &hl_job_fields()->fields[lua_tointeger(L, -1)];
        lua_pop(L, 1);
        /* a member found is a field's name (no NUL byte): only an unknown string key is checked */
        const char *k = f                                ? lua_tostring(L, -2)
                        : lua_type(L, -2) == LUA_TSTRING ? hl_c_string(L, -2, "a field name")
                                                         : NULL;
        if (!f) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            const hl_field_set *js = hl_job_fields();
            size_t n = strlen(g);
            for (int32_t i = 0, first = 1; i < js->count; i++) {
                const char *p = js->fields[i].path;
                if (p && strncmp(p, g, n) == 0 && p[n] == '.') {
                    luaL_addstring(&b, first ? "" : ", ");
                    luaL_addstring(&b, p + n + 1);
                    first = 0;
                }
            }
            luaL_pushresult(&b);
            const char *members[33]; /* the group's field names, for the closest one */
            int nm = 0;
            for (int32_t i = 0; i < js->count && nm < 32; i++) {
                const char *p = js->fields[i].path;
                if (p && strncmp(p, g, n) == 0 && p[n] == '.')
                    members[nm++] = p + n + 1;
            }
            members[nm] = NULL;
            const char *near = k ? hl_nearest_name(k, members) : NULL;
            if (near)
                hl_error(L, "%s: unknown field '%s' (did you mean '%s'? allowed: %s)", g, k, near, lua_tostring(L, -1));
            hl_error(L, "%s: unknown field '%s' (allowed: %s)", g, k ? k : luaL_typename(L, -3), lua_tostring(L, -1));
        }
        fp_add(L, rec, FP_SCALAR);
        set_from_lua(L, hl_job_fields(), f, j, f->path);
        lua_pop(L, 1);
    }
    lua_pop(L, 1); /* members */
}

/* The model or cluster of field `name` of the table at idx (or, when obj != 0, the value at
 * stack index obj that stands for that field): an object or a preset name. */
static void read_object(lua_State *L, int idx, int obj, const char *name, hl_model *m, hl_cluster *c)
{
    hl_err err;
    if (obj)
        lua_pushvalue(L, obj);
    else
        lua_getfield(L, idx, name);
    const hl_model *mo = m ? hl_to_model(L, -1) : NULL;
    const hl_cluster *co = c ? hl_to_cluster(L, -1) : NULL;
    if (mo)
        *m = *mo;
    else if (co)
        *c = *co;
    else if (lua_type(L, -1) == LUA_TSTRING) {
        const char *preset = hl_c_string(L, -1, m ? "simulate field 'model'" : "simulate field 'cluster'");
        if (m ? hl_model_preset(preset, m, &err) : hl_cluster_preset(preset, c, &err))
            hl_raise(L, &err);
    } else
        hl_error(L, "simulate field '%s': expected a %s object or preset name, got %s", name, name,
                 luaL_typename(L, -1));
    lua_pop(L, 1);
}

/* spec_draft_model = <model object or preset name> (the value at the top of the stack): the
 * drafter is that model (docs/MODEL.md 6.2); the core checks it against the target. */
static void set_draft_model(lua_State *L, hl_job *j)
{
    const hl_model *mo = hl_to_model(L, -1);
    hl_err err;
    if (mo) {
        j->spec_draft_model = *mo;
    } else if (lua_type(L, -1) == LUA_TSTRING) {
        if (hl_model_preset(hl_c_string(L, -1, "field 'spec_draft_model'"), &j->spec_draft_model, &err)) {
            hl_error(L, "field 'spec_draft_model': %s", err.msg);
        }
    } else {
        hl_error(L, "field 'spec_draft_model': expected a model object or preset name, got %s", luaL_typename(L, -1));
    }
    j->spec_draft = 1;
}

/* hl_job_init's job with a zero model and cluster, made once: hl_job_init clears the whole job
 * (11 KB, 8 KB of them the expert_freq shares) and sets the defaults of the field table; a job
 * whose expert_freq is already zero needs only the rest of these bytes (init_job). */
static hl_job job_template;
static pthread_once_t template_once = PTHREAD_ONCE_INIT;

static void make_template(void)
{
    static const hl_model no_model;
    static const hl_cluster no_cluster;
    hl_job_init(&job_template, &no_model, &no_cluster);
}

enum {
    JOB_AFTER_OBJECTS = offsetof(hl_job, cluster) + sizeof(hl_cluster),
    JOB_FREQ_AT = offsetof(hl_job, expert_freq),
    JOB_FREQ_END = offsetof(hl_job, expert_freq) + sizeof(((hl_job *)0)->expert_freq)
};

/* hl_job_init(j, model, cluster) but for the model and cluster, which the caller sets, on a job
 * whose expert_freq shares beyond its expert_freq_n are zero (hl_job_set_expert_freq keeps them
 * so; a job cleared once, as the state's scratch job below, starts so): the shares it set are
 * cleared, every other byte but the model's and the cluster's is the template's. */
static void init_job(hl_job *j)
{
    pthread_once(&template_once, make_template);
    if (j->expert_freq_n > 0 && j->expert_freq_n <= HL_EXPERTS_MAX)
        memset(j->expert_freq, 0, (size_t)j->expert_freq_n * sizeof j->expert_freq[0]);
    memcpy((char *)j + JOB_AFTER_OBJECTS, (const char *)&job_template + JOB_AFTER_OBJECTS,
           JOB_FREQ_AT - JOB_AFTER_OBJECTS);
    memcpy((char *)j + JOB_FREQ_END, (const char *)&job_template + JOB_FREQ_END, sizeof *j - JOB_FREQ_END);
}

/* The state's scratch for hl.simulate (sim_scratch, a userdata cleared once; user values: the
 * model and cluster objects of its fingerprint, then its strings, then the job its plan ran,
 * hl_push_result_job's, which the views of its calls share): l_simulate's upvalue, taken
 * out while a call uses it (a call made meanwhile, from a metamethod or a finalizer, gets one of
 * its own), put back when the call returns; a call that raises drops it (and its fingerprint).
 * The userdata is pushed (it anchors the memory). */
static sim_scratch *take_scratch(lua_State *L)
{
    if (lua_type(L, lua_upvalueindex(1)) == LUA_TUSERDATA) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushnil(L);
        lua_replace(L, lua_upvalueindex(1));
        return lua_touserdata(L, -1);
    }
    sim_scratch *p = lua_newuserdatauv(L, sizeof *p, SCRATCH_UV);
    memset(p, 0, sizeof *p);
    p->fp_n = -1;
    return p;
}

static void give_back_scratch(lua_State *L, int idx)
{
    lua_pushvalue(L, idx);
    lua_replace(L, lua_upvalueindex(1));
}

/* Whether the scratch's plan is that of the job table at 1 with the objects at 2 and 3. */
static int fp_hit(lua_State *L, const sim_scratch *s)
{
    return s->fp_n >= 0 && lua_type(L, 2) == LUA_TUSERDATA && lua_topointer(L, 2) == s->model &&
           lua_type(L, 3) == LUA_TUSERDATA && lua_topointer(L, 3) == s->cluster && lua_type(L, 1) == LUA_TTABLE &&
           fp_same(L, 1, s->fp, s->fp_n);
}

/* Reads simulate fields from the table at idx into *out; see bind.h. Every
 * key is looked up in the core's field tables (job fields by name, grouped
 * ones also as parallel = {...} and overlap = {...} / a number for the group).
 * model_idx / cluster_idx: stack indices of the model and cluster to use instead of the
 * table's fields (0: the fields). *seen: KEY_MAPPING and KEY_SPEC of the keys given. rec (or
 * NULL) records the table's fingerprint (rec->ok stays 1 when every entry could be recorded). */
static void check_job(lua_State *L, int idx, int model_idx, int cluster_idx, hl_plan_in *out, int *batch_max_out,
                      int *auto_plan_out, int *seen, fp_rec *rec)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    hl_check_plain_table(L, idx, "simulate");
    /* the search options after the job: the job itself is set by init_job */
    memset((char *)out + sizeof out->job, 0, sizeof *out - sizeof out->job);
    hl_job *j = &out->job;
    init_job(j);
    read_object(L, idx, model_idx, "model", &j->model, NULL);
    read_object(L, idx, cluster_idx, "cluster", NULL, &j->cluster);
    *seen = 0;
    const hl_field_set *js = hl_job_fields(), *ps = hl_plan_fields();
    *batch_max_out = *auto_plan_out = 0;
    int draft_layers_given = 0;
    push_keys(L);
    int keys = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [keys key value] */
        if (lua_type(L, -2) != LUA_TSTRING)
            hl_error(L, "simulate: field names must be strings (got a %s key)", luaL_typename(L, -2));
        lua_pushvalue(L, -2);
        int code = lua_rawget(L, keys) == LUA_TNUMBER ? (int)lua_tointeger(L, -1) : 0;
        lua_pop(L, 1);
        /* a key found is a field's name (no NUL byte): only an unknown one is checked, for its message */
        const char *k = code ? lua_tostring(L, -2) : hl_c_string(L, -2, "simulate: a field name");
        *seen |= code & ~KEY_CODE_MASK;
        code &= KEY_CODE_MASK;
        int t = lua_type(L, -1);
        if (code == 0) {
            unknown_key(L, k);
        } else if (code == KEY_OBJECT) { /* read above */
            if (model_idx && cluster_idx)
                fp_add(L, rec, FP_ANY_VALUE);
            else
                fp_stop(rec);
        } else if (code == KEY_EXPERT_FREQ) {
            fp_stop(rec);
            set_expert_freq(L, j);
        } else if (code == KEY_DRAFT) {
            fp_stop(rec);
            set_draft_model(L, j);
        } else if (code == KEY_PARALLEL || code == KEY_GROUP) {
            fp_entry *group = fp_add(L, rec, t == LUA_TTABLE ? FP_GROUP : FP_SCALAR);
            if (t == LUA_TSTRING && code == KEY_PARALLEL &&
                strcasecmp(hl_c_string(L, -1, "field 'parallel'"), "auto") == 0)
                *auto_plan_out = 1;
            else if (t == LUA_TTABLE) {
                int32_t first = rec ? rec->n : 0;
                set_group_table(L, j, k, rec);
                if (group)
                    group->n = rec->n - first;
            } else if (t == LUA_TNUMBER && code == KEY_GROUP) {
                hl_err err;
                if (hl_job_set_number(j, k, lua_tonumber(L, -1), &err))
                    hl_raise(L, &err);
            } else if (code == KEY_PARALLEL && t == LUA_TSTRING)
                hl_error(L, "field 'parallel': '%s' is not a table or \"auto\"", lua_tostring(L, -1));
            else if (code == KEY_PARALLEL)
                hl_error(L, "field 'parallel': expected a table {tp=, pp=, ...} or \"auto\", got %s",
                         luaL_typename(L, -1));
            else
                hl_error(L, "field '%s': expected a number or {%s.* fields}, got %s", k, k, luaL_typename(L, -1));
        } else if (code >= KEY_PLAN) {
            fp_add(L, rec, FP_SCALAR);
            set_from_lua(L, ps, &ps->fields[code - KEY_PLAN], out, k);
        } else if (code >= KEY_JOB) {
            fp_add(L, rec, FP_SCALAR); /* a table (spec_accept) stops the recording */
            if (t == LUA_TSTRING && strcmp(k, "batch") == 0) {
                if (strcasecmp(hl_c_string(L, -1, "field 'batch'"), "max") != 0)
                    hl_error(L, "field 'batch': '%s' is not a number or \"max\"", lua_tostring(L, -1));
                *batch_max_out = 1;
            } else if (t == LUA_TTABLE && strcmp(k, "spec_accept") == 0) {
                set_spec_accept(L, j);
            } else {
                const hl_field *f = &js->fields[code - KEY_JOB];
                set_from_lua(L, js, f, j, k);
                draft_layers_given |= f->offset == (int32_t)offsetof(hl_job, spec_draft_layers);
            }
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1); /* keys */
    if (j->spec_draft && draft_layers_given) {
        char v[32];
        snprintf(v, sizeof v, "%g", j->spec_draft_layers);
        hl_error(L,
                 "field 'spec_draft_layers': %s with spec_draft_model; give one drafter (a draft model, or "
                 "layers of the target's shape)",
                 v);
    }
    if (j->spec_draft)
        j->spec_draft_layers = 0; /* the draft model drafts: no target-shaped layers */
}

void hl_check_job(lua_State *L, int idx, hl_plan_in *out, int *batch_max_out, int *auto_plan_out)
{
    int seen;
    memset(&out->job, 0, sizeof out->job); /* init_job wants the shares zero */
    check_job(L, idx, 0, 0, out, batch_max_out, auto_plan_out, &seen, NULL);
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
        lua_createtable(L, 0, 20);
        lua_pushstring(L, items[i].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, items[i].is_comm ? "comm" : "op");
        lua_setfield(L, -2, "kind");
        hl_set_num(L, "time_s", items[i].time_s);
        hl_set_num(L, "bytes", items[i].bytes);
        hl_set_num(L, "flops", items[i].flops);
        hl_set_num(L, "calls", items[i].calls);
        hl_set_num(L, "path_factor", items[i].path_factor);
        lua_pushboolean(L, items[i].per_pass);
        lua_setfield(L, -2, "per_pass");
        /* measured: every call of the row was timed from the job's kernel tables (kernels = "dir") */
        lua_pushboolean(L, items[i].measured_calls > 0 && items[i].measured_calls >= items[i].calls);
        lua_setfield(L, -2, "measured");
        hl_set_num(L, "measured_calls", items[i].measured_calls);
        if (items[i].is_comm) { /* a collective: its shape and one call as simulated (hl_item) */
            const hl_item *it = &items[i];
            lua_pushstring(L, it->tier ? "scale-out" : "scale-up");
            lua_setfield(L, -2, "tier");
            lua_pushstring(L, hl_coll_op_name((hl_coll_op)it->op));
            lua_setfield(L, -2, "op");
            const struct {
                const char *k;
                int64_t v;
            } ints[] = {{"ranks", it->ranks}, {"ranks_per_hbd", it->ranks_per_hbd}, {"hbds", it->hbds}};
            for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
                lua_pushinteger(L, ints[k].v);
                lua_setfield(L, -2, ints[k].k);
            }
            hl_set_num(L, "call_bytes", it->call_bytes);
            hl_set_num(L, "call_time_s", it->call_time_s);
            hl_set_num(L, "call_latency_s", it->call_latency_s);
            hl_set_num(L, "call_scaleup_bytes", it->call_scaleup_bytes);
            hl_set_num(L, "call_scaleout_bytes", it->call_scaleout_bytes);
        }
        lua_rawseti(L, -2, i + 1);
    }
}

/* Registry keys of the weak tables that map a result's prefill / decode
 * subtable to the view data holding its job (for lazy fields). */
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
        lua_rawget(L, -2); /* [.. lazy ud] */
        if (!lua_touserdata(L, -1)) {
            lua_pop(L, 2);
            continue;
        }
        hl_result *r = malloc(sizeof *r);
        hl_job *full = malloc(sizeof *full);
        hl_err err;
        if (!r || !full) {
            free(r);
            free(full);
            return hl_error(L, "out of memory");
        }
        hl_result_view_job(L, lua_gettop(L), full);
        lua_pop(L, 2);
        full->summary_only = 0;
        hl_status st = hl_sim_run(full, r, &err);
        free(full);
        if (st) {
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

void hl_sim_lazy_phase(lua_State *L, int phase_idx, int which, int ud_idx)
{
    phase_idx = lua_absindex(L, phase_idx);
    ud_idx = lua_absindex(L, ud_idx);
    luaL_setmetatable(L, "hbdlab.phase"); /* the phase table must be at the top */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &lazy_key[which]);
    lua_pushvalue(L, phase_idx);
    lua_pushvalue(L, ud_idx);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Warnings hbdlab/simulate.lua decides only when one of these is set (hbdlab/warn.lua prints
 * them): a prompt + output beyond the model's context, limits missed, an unknown price or
 * power, no mapping on a multi-GPU cluster, speculative fields without spec_tokens, and why
 * two_batch_overlap overlaps nothing (the rule is here only; warn.check_tbo words each reason). */
enum {
    WARN_CONTEXT = 1,
    WARN_LIMITS = 2,
    WARN_COST = 4,
    WARN_MAPPING = 8,
    WARN_SPEC = 16,
    WARN_TBO_EP1 = 32,     /* ep = 1: no expert-parallel dispatch and combine to hide */
    WARN_TBO_PP = 64,      /* pp > 1: modelled for one pipeline stage */
    WARN_TBO_SPEC = 128,   /* speculative decode steps run without it (prefill overlaps) */
    WARN_TBO_ONE_SEQ = 256 /* a decode step of one sequence per rank has nothing to split */
};

/* simulate(t[, model, cluster]) -> result view, warning flags. model / cluster stand for
 * t.model / t.cluster (the objects hbdlab/simulate.lua resolved a preset name or table to). */
static int l_simulate(lua_State *L)
{
    hl_err err;
    int batch_max, auto_plan, seen;
    int objs = lua_gettop(L) >= 3;
    lua_settop(L, 3);
    sim_scratch *scr = take_scratch(L); /* at 4 */
    hl_plan_in *pinp = &scr->in;
    int objects; /* model and cluster objects beside the table (the view keeps them) */
    int hit = objs && fp_hit(L, scr);
    if (hit) {                                  /* the table and objects the plan was read from: read already */
        hl_check_plain_table(L, 1, "simulate"); /* a metatable set since is refused as on a first read */
        batch_max = scr->batch_max, auto_plan = scr->auto_plan, seen = scr->seen;
        objects = 1;
    } else {
        objects = objs && hl_to_model(L, 2) && hl_to_cluster(L, 3);
        fp_rec rec = {scr, 4, objects, 0, 0};
        scr->fp_n = -1; /* until the table is read in full */
        check_job(L, 1, objs ? 2 : 0, objs ? 3 : 0, pinp, &batch_max, &auto_plan, &seen, objects ? &rec : NULL);
        if (rec.ok) {
            scr->fp_n = rec.n;
            scr->batch_max = batch_max, scr->auto_plan = auto_plan, scr->seen = seen;
            scr->model = lua_topointer(L, 2), scr->cluster = lua_topointer(L, 3);
            lua_pushvalue(L, 2);
            lua_setiuservalue(L, 4, 1);
            lua_pushvalue(L, 3);
            lua_setiuservalue(L, 4, 2);
        }
    }
    hl_candidate cands[32];
    int32_t ncand = 0;
    pinp->max_batch = batch_max; /* the chosen job is checked against memory below, as any other */
    pinp->auto_plan = auto_plan;
    hl_job resolved, *jp = &pinp->job;
    /* core/src/plan.c is the one resolver; a job with no search and no limits is its own
     * resolution (hl_job_resolve would only copy it), so it runs as read */
    if (auto_plan || batch_max || pinp->max_ttft != 0 || pinp->max_tpot != 0) {
        if (hl_job_resolve(pinp, &resolved, cands, 32, &ncand, &err))
            return hl_raise(L, &err);
        jp = &resolved;
    }
    hl_result res;
    hl_result *rp = &res;
    jp->summary_only = 1; /* breakdown and events are built on first access */
    if (hl_sim_run(jp, rp, &err))
        return hl_raise(L, &err);
    /* the job as run, kept for the views' lazy breakdown: the same bytes on every call that
     * reuses the plan (resolution is a function of the plan), so those calls share one copy */
    if (!hit || lua_getiuservalue(L, 4, UV_RUN) != LUA_TUSERDATA) {
        if (hit)
            lua_pop(L, 1);
        hl_push_result_job(L, jp, objs ? 2 : 0, objs ? 3 : 0, objects);
        if (scr->fp_n >= 0) {
            lua_pushvalue(L, -1);
            lua_setiuservalue(L, 4, UV_RUN);
        }
    } /* [t m c scratch job] */
    hl_push_result_view(L, rp, 5, 1);
    int meets = 1;
    if (auto_plan) {
        lua_createtable(L, ncand, 0); /* [result candidates] */
        for (int32_t i = 0; i < ncand; i++) {
            lua_createtable(L, 0, 12);
            const struct {
                const char *k;
                double v;
            } cf[] = {{"tp", (double)cands[i].tp},        {"pp", (double)cands[i].pp},
                      {"ep", (double)cands[i].ep},        {"dp", (double)cands[i].dp},
                      {"etp", (double)cands[i].etp},      {"batch", cands[i].batch},
                      {"score", cands[i].score},          {"ttft_s", cands[i].ttft_s},
                      {"tpot_s", cands[i].tpot_s},        {"tps_per_gpu", cands[i].tps_per_gpu},
                      {"decode_tps", cands[i].decode_tps}};
            for (size_t k = 0; k < sizeof cf / sizeof cf[0]; k++)
                hl_set_num(L, cf[k].k, cf[k].v);
            lua_pushboolean(L, cands[i].fits);
            lua_setfield(L, -2, "fits");
            lua_pushboolean(L, cands[i].meets_limits);
            lua_setfield(L, -2, "meets_limits");
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "candidates"); /* rawset: the view's metatable has no __newindex */
        meets = cands[0].meets_limits;     /* the search raised if no candidate met them */
        lua_pushboolean(L, meets);
        lua_setfield(L, -2, "meets_limits");
        lua_pushstring(L, hl_field_get_string(hl_field_find(hl_plan_fields(), "objective"), pinp));
        lua_setfield(L, -2, "objective");
    } else if (pinp->max_ttft > 0 || pinp->max_tpot > 0) { /* a fixed or "max" batch under limits */
        meets = hl_plan_meets_limits(pinp, rp);
        lua_pushboolean(L, meets);
        lua_setfield(L, -2, "meets_limits");
    }
    const hl_model *m = &jp->model;
    int flags = 0;
    if (m->max_position > 0 && rp->input + rp->output > (double)m->max_position)
        flags |= WARN_CONTEXT;
    if (!meets)
        flags |= WARN_LIMITS;
    if (rp->cost.usd_per_mtok != rp->cost.usd_per_mtok) /* NaN: an unknown price (core/src/cost.c) */
        flags |= WARN_COST;
    if (!(seen & KEY_MAPPING) && rp->gpus > 1)
        flags |= WARN_MAPPING;
    if ((seen & KEY_SPEC) && jp->spec_tokens == 0)
        flags |= WARN_SPEC;
    /* two_batch_overlap where it overlaps nothing (sim.c tbo_on: EP layers, one stage; decode
     * needs two sequences per rank and no speculation): ep = 1 or pp > 1 alone, else either of
     * the decode reasons */
    if (jp->two_batch_overlap) {
        if (rp->ep == 1)
            flags |= WARN_TBO_EP1;
        else if (rp->pp > 1)
            flags |= WARN_TBO_PP;
        else
            flags |= (jp->spec_tokens > 0 ? WARN_TBO_SPEC : 0) |
                     (rp->output > 1 && rp->batch / (double)rp->dp < 2 ? WARN_TBO_ONE_SEQ : 0);
    }
    lua_pushinteger(L, flags);
    give_back_scratch(L, 4);
    return 2;
}

/* job_reads(t [, model, cluster]) -> true when hl.simulate's reading of job table t (beside the
 * model and cluster objects, as core.simulate takes them) passes: every field known, every value
 * allowed. simulate.lua asks after a failure: a job read in full that fails to run may fail for
 * want of a mapping (it warns so); a misspelt or refused field is the whole story. */
static int read_only(lua_State *L)
{
    hl_plan_in in; /* ~11 KB, as hl_check_job's callers hold it */
    int batch_max, auto_plan, seen, objs = lua_gettop(L) >= 3;
    memset(&in.job, 0, sizeof in.job); /* init_job wants the shares zero */
    check_job(L, 1, objs ? 2 : 0, objs ? 3 : 0, &in, &batch_max, &auto_plan, &seen, NULL);
    return 0;
}

static int l_job_reads(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushcfunction(L, read_only);
    lua_insert(L, 1);
    lua_pushboolean(L, lua_pcall(L, n, 0, 0) == LUA_OK);
    return 1;
}

/* presets_generation() -> an integer that changes when $HBDLAB_PRESETS (where user presets
 * come from) does: what hbdlab/objects.lua compares to keep the objects of preset names, with
 * no string made per call. One value per process (the environment is the process's). */
static pthread_mutex_t presets_env_lock = PTHREAD_MUTEX_INITIALIZER;
static int l_presets_generation(lua_State *L)
{
    static char last[4096];
    static int have_last, unset_last = 1;
    static lua_Integer generation;
    pthread_mutex_lock(&presets_env_lock);
    const char *env = getenv("HBDLAB_PRESETS");
    int same = env ? (have_last && !unset_last && strcmp(env, last) == 0) : (have_last && unset_last);
    if (!same) {
        generation++;
        have_last = 1;
        unset_last = env == NULL;
        /* a longer value is cut: a change within it is still seen, one past 4 KB is not */
        snprintf(last, sizeof last, "%s", env ? env : "");
    }
    lua_Integer g = generation;
    pthread_mutex_unlock(&presets_env_lock);
    lua_pushinteger(L, g);
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
    static const luaL_Reg fns[] = {{"simulate", l_simulate},
                                   {"presets_generation", l_presets_generation},
                                   {"job_reads", l_job_reads},
                                   {NULL, NULL}};
    lua_pushnil(L); /* each function's upvalue: l_simulate's scratch, made on its first call */
    luaL_setfuncs(L, fns, 1);
}
