/* hl.simulate results as light views over the C result (result_view.h): an empty table with a
 * shared metatable whose __index reads each field from the C values when it is asked for; the
 * groups (r.prefill, r.memory, ...) are built on first access and kept, so r.prefill is the same
 * table every time; pairs() and the raw readers (json_encode) see a plain table of every field
 * in today's order (hl_result_view_push_plain). Fields set on a view are its own (raw) fields
 * and win over the C values, as in a plain table. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "result_view.h"

/* The view data (a userdata; user values: 1 the group cache, 2 the fields table, 3 the job it
 * was run from, a result_job that views of the same job share). */
struct hl_result_view {
    double v[HL_POINT_VALUES];
};
enum { UV_GROUPS = 1, UV_FIELDS, UV_JOB, VIEW_UV = UV_JOB };

/* The job of views (a userdata, never changed once made; user values: 1 and 2 the model and
 * cluster values the job was read with, for Lua). job holds the bytes of hl_job from 0 (from
 * after the model and the cluster when `objects`: user values 1 and 2 are then the model and
 * cluster objects the job holds copies of, which are immutable) up to expert_freq, then the
 * job's expert_freq_n shares, then the bytes after expert_freq: about 300 bytes with the
 * objects, 3.1 KB without (not 11 KB). The draft model (spec_draft_model, 1.1 KB) is kept only
 * when the job has one (spec_draft). */
typedef struct result_job {
    int32_t freq_n;
    int32_t objects;
    int32_t draft; /* the job's spec_draft: its spec_draft_model is kept (1.1 KB), else it is zero */
    unsigned char job[];
} result_job;

enum {
    JOB_AFTER_OBJECTS = offsetof(hl_job, cluster) + sizeof(hl_cluster),
    JOB_HEAD = offsetof(hl_job, expert_freq),
    JOB_DRAFT_AT = offsetof(hl_job, spec_draft_model), /* the draft model lies inside the head */
    JOB_DRAFT = sizeof(hl_model),
    JOB_TAIL_AT = offsetof(hl_job, expert_freq) + sizeof(((hl_job *)0)->expert_freq),
    JOB_TAIL = sizeof(hl_job) - JOB_TAIL_AT,
    FRIENDLY_CODE = 1000 /* key codes: field i (no group) i + 1, group g -(g + 1), alias k 1000 + k */
};

_Static_assert(JOB_DRAFT_AT >= JOB_AFTER_OBJECTS && JOB_DRAFT_AT + JOB_DRAFT <= JOB_HEAD, "spec_draft_model lies "
                                                                                          "between the cluster and "
                                                                                          "expert_freq");

static char views_key, codes_key, mt_key, methods_key;

/* Which group is a phase with a lazy breakdown: 0 prefill, 1 decode, -1 neither. */
static int8_t phase_of_group[HL_RESULT_MAX_GROUPS];
static pthread_once_t phase_once = PTHREAD_ONCE_INIT;

static void find_phases(void)
{
    const hl_result_shape *s = hl_result_shape_get();
    memset(phase_of_group, -1, sizeof phase_of_group);
    for (int32_t i = 0; i < s->n; i++) {
        const char *name = hl_result_field_at(i)->name;
        if (s->group[i] >= 0 && strncmp(name, "prefill.", 8) == 0)
            phase_of_group[s->group[i]] = 0;
        else if (s->group[i] >= 0 && strncmp(name, "decode.", 7) == 0)
            phase_of_group[s->group[i]] = 1;
    }
}

/* Pushes the view data of the table at idx (or nil). */
static hl_result_view *push_data(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &views_key);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    lua_remove(L, -2);
    return lua_touserdata(L, -1);
}

hl_result_view *hl_to_result_view(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx))
        return NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
    int is_view = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (!is_view)
        return NULL;
    hl_result_view *rv = push_data(L, idx);
    lua_pop(L, 1);
    return rv;
}

/* The pieces of hl_job a view keeps, in the order rv->job holds them (hl_push_result_view
 * writes them, hl_result_view_job reads them back): from `at` to the draft model, the draft
 * model when `draft`, the rest of the head, the expert_freq shares in use, the tail. Returns
 * the bytes they take. */
typedef struct job_piece {
    size_t at, n;
} job_piece;
enum { N_PIECES = 5 };

static size_t job_pieces(size_t at, int draft, size_t freq, job_piece pc[N_PIECES])
{
    pc[0] = (job_piece){at, JOB_DRAFT_AT - at};
    pc[1] = (job_piece){JOB_DRAFT_AT, draft ? JOB_DRAFT : 0};
    pc[2] = (job_piece){JOB_DRAFT_AT + JOB_DRAFT, JOB_HEAD - JOB_DRAFT_AT - JOB_DRAFT};
    pc[3] = (job_piece){JOB_HEAD, freq}; /* JOB_HEAD is expert_freq's offset */
    pc[4] = (job_piece){JOB_TAIL_AT, JOB_TAIL};
    size_t total = 0;
    for (int k = 0; k < N_PIECES; k++)
        total += pc[k].n;
    return total;
}

void hl_result_view_job(lua_State *L, int ud, hl_job *out)
{
    lua_getiuservalue(L, ud, UV_JOB);
    int jb = lua_gettop(L);
    const result_job *rj = lua_touserdata(L, jb);
    size_t at = rj->objects ? JOB_AFTER_OBJECTS : 0, freq = (size_t)rj->freq_n * sizeof(double);
    memset(out, 0, sizeof *out);
    if (rj->objects) {
        lua_getiuservalue(L, jb, 1);
        lua_getiuservalue(L, jb, 2);
        out->model = *hl_to_model(L, -2); /* checked when the job was kept */
        out->cluster = *hl_to_cluster(L, -1);
        lua_pop(L, 2);
    }
    job_piece pc[N_PIECES];
    job_pieces(at, rj->draft, freq, pc);
    const unsigned char *p = rj->job;
    for (int k = 0; k < N_PIECES; k++) { /* a draft model not kept stays zero, as the job had it */
        memcpy((char *)out + pc[k].at, p, pc[k].n);
        p += pc[k].n;
    }
    lua_pop(L, 1);
}

void hl_push_result_job(lua_State *L, const hl_job *job, int model_idx, int cluster_idx, int objects)
{
    model_idx = model_idx ? lua_absindex(L, model_idx) : 0;
    cluster_idx = cluster_idx ? lua_absindex(L, cluster_idx) : 0;
    objects = objects && model_idx && cluster_idx;
    int32_t n = job->expert_freq_n > 0 && job->expert_freq_n <= HL_EXPERTS_MAX ? job->expert_freq_n : 0;
    size_t freq = (size_t)n * sizeof(double), at = objects ? JOB_AFTER_OBJECTS : 0;
    job_piece pc[N_PIECES];
    size_t kept_bytes = job_pieces(at, job->spec_draft != 0, freq, pc);
    result_job *rj = lua_newuserdatauv(L, sizeof *rj + kept_bytes, 2);
    rj->freq_n = n;
    rj->objects = objects;
    rj->draft = job->spec_draft != 0;
    unsigned char *p = rj->job;
    for (int k = 0; k < N_PIECES; k++) {
        memcpy(p, (const char *)job + pc[k].at, pc[k].n);
        p += pc[k].n;
    }
    const int kept[2] = {model_idx, cluster_idx};
    for (int k = 0; k < 2; k++)
        if (kept[k]) {
            lua_pushvalue(L, kept[k]);
            lua_setiuservalue(L, -2, k + 1);
        }
}

void hl_push_result_view(lua_State *L, const hl_result *r, int job_idx, int fields_idx)
{
    job_idx = lua_absindex(L, job_idx);
    fields_idx = fields_idx ? lua_absindex(L, fields_idx) : 0;
    lua_createtable(L, 0, 0); /* the view */
    hl_result_view *rv = lua_newuserdatauv(L, sizeof *rv, VIEW_UV);
    hl_result_values(r, rv->v);
    lua_pushvalue(L, job_idx);
    lua_setiuservalue(L, -2, UV_JOB);
    if (fields_idx) {
        lua_pushvalue(L, fields_idx);
        lua_setiuservalue(L, -2, UV_FIELDS);
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &views_key); /* [view ud views] */
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3); /* views[view] = ud (weak keys: the data lives as long as the view) */
    lua_pop(L, 2);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
    lua_setmetatable(L, -2);
}

/* Pushes group g of the view whose data is at ud (built on first access, then kept). */
static void push_group(lua_State *L, int ud, int g, int keys)
{
    const hl_result_shape *s = hl_result_shape_get();
    if (lua_getiuservalue(L, ud, UV_GROUPS) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, s->groups, 0);
        lua_pushvalue(L, -1);
        lua_setiuservalue(L, ud, UV_GROUPS);
    }
    if (lua_rawgeti(L, -1, g + 1) == LUA_TTABLE) {
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 1); /* [cache] */
    const hl_result_view *rv = lua_touserdata(L, ud);
    lua_createtable(L, 0, s->group_size[g]);
    for (int32_t i = 0; i < s->n; i++) {
        if (s->group[i] != g)
            continue;
        lua_rawgeti(L, keys, s->n + i + 1); /* the leaf, interned */
        hl_push_result_value(L, i, rv->v[i]);
        lua_rawset(L, -3); /* a nil value (unknown) sets nothing */
    }
    pthread_once(&phase_once, find_phases);
    if (phase_of_group[g] >= 0)
        hl_sim_lazy_phase(L, lua_gettop(L), phase_of_group[g], ud);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, g + 1);
    lua_remove(L, -2);
}

/* Pushes the value of key code `code` of the view whose data is at ud. */
static void push_code(lua_State *L, int ud, int code, int keys)
{
    const hl_result_view *rv = lua_touserdata(L, ud);
    if (code > 0 && code < FRIENDLY_CODE) {
        hl_push_result_value(L, code - 1, rv->v[code - 1]);
    } else if (code >= FRIENDLY_CODE) {
        int32_t field;
        double scale;
        hl_result_friendly(code - FRIENDLY_CODE, &field, &scale);
        lua_pushnumber(L, rv->v[field] * scale);
    } else {
        push_group(L, ud, -code - 1, keys);
    }
}

/* __index(view, key): upvalues 1 the key codes, 2 the views, 3 the methods (r:trace()). */
static int view_index(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNUMBER) { /* not a result field: a method or nil */
        lua_pushvalue(L, 2);
        lua_rawget(L, lua_upvalueindex(3));
        return 1;
    }
    int code = (int)lua_tointeger(L, 3);
    lua_pushvalue(L, 1);
    lua_rawget(L, lua_upvalueindex(2)); /* [view key code ud] */
    if (!lua_touserdata(L, 4))
        return 0;
    if (code < 0)
        hl_result_push_key_array(L);
    push_code(L, 4, code, 5);
    return 1;
}

int hl_result_view_push_plain(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (!hl_to_result_view(L, idx))
        return 0;
    luaL_checkstack(L, 8, "a result view");
    const hl_result_shape *s = hl_result_shape_get();
    int nf = hl_result_friendly_count();
    int own = 0; /* fields set on the view (candidates, meets_limits, objective, a script's) */
    for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1))
        own++;
    push_data(L, idx);
    int ud = lua_gettop(L);
    hl_result_push_key_array(L);
    int keys = ud + 1;
    lua_createtable(L, 0, s->top + nf + own);
    int t = keys + 1;
    /* the order hl.simulate filled its table in: its own fields, groups, fields, aliases */
    for (lua_pushnil(L); lua_next(L, idx);) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, t);
    }
    for (int g = 0; g < s->groups; g++) {
        lua_rawgeti(L, keys, 2 * s->n + g + 1);
        if (lua_rawget(L, idx) != LUA_TNIL) { /* set on the view: copied above */
            lua_pop(L, 1);
            continue;
        }
        lua_pop(L, 1);
        lua_rawgeti(L, keys, 2 * s->n + g + 1);
        push_group(L, ud, g, keys);
        lua_rawset(L, t);
    }
    for (int32_t i = 0; i < s->n + nf; i++) {
        int alias = i >= s->n;
        if (!alias && s->group[i] >= 0)
            continue;
        int key = alias ? 2 * s->n + s->groups + (i - s->n) + 1 : i + 1;
        lua_rawgeti(L, keys, key);
        if (lua_rawget(L, idx) != LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        lua_pop(L, 1);
        lua_rawgeti(L, keys, key);
        push_code(L, ud, alias ? FRIENDLY_CODE + (i - s->n) : i + 1, keys);
        lua_rawset(L, t);
    }
    lua_replace(L, ud); /* [.. plain keys] */
    lua_pop(L, 1);
    return 1;
}

/* next(t, k) over a plain table (the iterator __pairs gives). */
static int plain_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    if (lua_next(L, 1))
        return 2;
    lua_pushnil(L);
    return 1;
}

/* __pairs(view): next over a plain table of every field (built per call; the groups are the
 * view's own tables, so pairs and indexing give the same r.prefill). */
static int view_pairs(lua_State *L)
{
    lua_pushcfunction(L, plain_next);
    if (!hl_result_view_push_plain(L, 1))
        return hl_error(L, "pairs: not a result view");
    lua_pushnil(L);
    return 3;
}

/* result_view_mt() -> the views' metatable and its methods table (hbdlab/simulate.lua adds
 * __tostring and r:trace()). */
static int l_result_view_mt(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &methods_key);
    return 2;
}

/* result_view_kept(r) -> the values hl.simulate kept with view r (its fields table, model and
 * cluster objects); nothing for another value. */
static int l_result_view_kept(lua_State *L)
{
    lua_settop(L, 1);
    if (!hl_to_result_view(L, 1))
        return 0;
    push_data(L, 1);
    lua_getiuservalue(L, 2, UV_FIELDS);
    lua_getiuservalue(L, 2, UV_JOB);
    lua_getiuservalue(L, 4, 1);
    lua_getiuservalue(L, 4, 2);
    lua_remove(L, 4);
    return 3;
}

/* result_view_plain(r) -> a plain table of every field of view r (what pairs iterates); r
 * itself when it is not a view. */
static int l_result_view_plain(lua_State *L)
{
    lua_settop(L, 1);
    hl_result_view_push_plain(L, 1);
    return 1;
}

void hl_bind_result_view(lua_State *L)
{
    const hl_result_shape *s = hl_result_shape_get();
    lua_newtable(L); /* views: weak keys */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &views_key);
    hl_result_push_key_array(L); /* codes, keyed by the interned keys */
    int keys = lua_gettop(L);
    lua_createtable(L, 0, s->top + hl_result_friendly_count());
    for (int32_t i = 0; i < s->n; i++)
        if (s->group[i] < 0) {
            lua_rawgeti(L, keys, i + 1);
            lua_pushinteger(L, i + 1);
            lua_rawset(L, -3);
        }
    for (int g = 0; g < s->groups; g++) {
        lua_rawgeti(L, keys, 2 * s->n + g + 1);
        lua_pushinteger(L, -(g + 1));
        lua_rawset(L, -3);
    }
    for (int k = 0; k < hl_result_friendly_count(); k++) {
        lua_rawgeti(L, keys, 2 * s->n + s->groups + k + 1);
        lua_pushinteger(L, FRIENDLY_CODE + k);
        lua_rawset(L, -3);
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &codes_key);
    lua_pop(L, 1); /* keys */
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &methods_key);
    lua_createtable(L, 0, 4); /* the metatable */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &codes_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &views_key);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &methods_key);
    lua_pushcclosure(L, view_index, 3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, view_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &mt_key);
    static const luaL_Reg fns[] = {{"result_view_mt", l_result_view_mt},
                                   {"result_view_kept", l_result_view_kept},
                                   {"result_view_plain", l_result_view_plain},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
