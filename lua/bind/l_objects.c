/* Lua userdata for hl_gpu, hl_cluster and hl_model: fields read through the
 * core's descriptor tables, immutable (derive with :with{}), created from a
 * preset name or a table. Stack comments show [bottom ... top]. */
#include <stdio.h>
#include <string.h>

#include "bind.h"
#include "hbdlab/hbdlab.h"

typedef struct objtype {
    const char *mt;   /* registry metatable name */
    const char *kind; /* "gpu", "cluster", "model" */
    size_t size;
    const hl_field_set *(*fields)(void);
    hl_status (*validate)(const void *obj, hl_err *err);
    hl_status (*preset)(const char *name, void *out, hl_err *err);
} objtype;

static hl_status v_gpu(const void *o, hl_err *e) { return hl_gpu_validate(o, e); }
static hl_status v_cluster(const void *o, hl_err *e) { return hl_cluster_validate(o, e); }
static hl_status v_model(const void *o, hl_err *e) { return hl_model_validate(o, e); }
static hl_status p_gpu(const char *n, void *o, hl_err *e) { return hl_gpu_preset(n, o, e); }
static hl_status p_cluster(const char *n, void *o, hl_err *e) { return hl_cluster_preset(n, o, e); }
static hl_status p_model(const char *n, void *o, hl_err *e) { return hl_model_preset(n, o, e); }

static const objtype T_GPU = {HL_MT_GPU, "gpu", sizeof(hl_gpu), hl_gpu_fields, v_gpu, p_gpu};
static const objtype T_CLUSTER = {HL_MT_CLUSTER,     "cluster", sizeof(hl_cluster),
                                  hl_cluster_fields, v_cluster, p_cluster};
static const objtype T_MODEL = {HL_MT_MODEL, "model", sizeof(hl_model), hl_model_fields, v_model, p_model};

/* Pushes a new userdata holding a copy of obj. */
static void *push_obj(lua_State *L, const objtype *t, const void *obj)
{
    void *ud = lua_newuserdatauv(L, t->size, 0);
    memcpy(ud, obj, t->size);
    luaL_setmetatable(L, t->mt);
    return ud;
}

void hl_push_gpu(lua_State *L, const hl_gpu *g) { push_obj(L, &T_GPU, g); }
void hl_push_cluster(lua_State *L, const hl_cluster *c) { push_obj(L, &T_CLUSTER, c); }
void hl_push_model(lua_State *L, const hl_model *m) { push_obj(L, &T_MODEL, m); }

hl_gpu *hl_to_gpu(lua_State *L, int idx) { return luaL_testudata(L, idx, HL_MT_GPU); }
hl_cluster *hl_to_cluster(lua_State *L, int idx) { return luaL_testudata(L, idx, HL_MT_CLUSTER); }
hl_model *hl_to_model(lua_State *L, int idx) { return luaL_testudata(L, idx, HL_MT_MODEL); }

static const objtype *type_of(lua_State *L, int idx)
{
    if (luaL_testudata(L, idx, HL_MT_GPU))
        return &T_GPU;
    if (luaL_testudata(L, idx, HL_MT_CLUSTER))
        return &T_CLUSTER;
    if (luaL_testudata(L, idx, HL_MT_MODEL))
        return &T_MODEL;
    return NULL;
}

/* Sets obj's fields from the table at idx, skipping keys listed in skip. */
static void apply_table(lua_State *L, const objtype *t, void *obj, int idx, const char *const *skip)
{
    hl_err err = {{0}};
    const hl_field_set *set = t->fields();
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [... key value] */
        if (lua_type(L, -2) != LUA_TSTRING)
            hl_error(L, "%s: field names must be strings (got a %s key)", t->kind, luaL_typename(L, -2));
        char what[64];
        snprintf(what, sizeof what, "%s: a field name", t->kind);
        const char *key = hl_c_string(L, -2, what);
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++)
            skipped |= strcmp(key, skip[i]) == 0;
        const hl_field_alias *alias = skipped ? NULL : hl_field_alias_find(set, key);
        if (alias) { /* hbm_gb = 80: the core's alias, refused beside its own field */
            int also = lua_getfield(L, idx, alias->field) != LUA_TNIL;
            lua_pop(L, 1);
            if (hl_field_alias_check(set, alias, also, &err))
                hl_raise(L, &err);
            if (lua_type(L, -1) != LUA_TNUMBER) {
                snprintf(err.msg, sizeof err.msg, "%s field '%s': expected a number, got %s", t->kind, key,
                         luaL_typename(L, -1));
                hl_raise(L, &err);
            }
        }
        if (!skipped) {
            hl_status s;
            switch (lua_type(L, -1)) {
            case LUA_TNUMBER: s = hl_field_set_number(set, obj, key, lua_tonumber(L, -1), &err); break;
            case LUA_TBOOLEAN: { /* layers = true must not become 1 layer */
                const hl_field *f = hl_field_find(set, key);
                if (f && f->type != HL_FIELD_BOOL) {
                    s = HL_EINVAL;
                    snprintf(err.msg, sizeof err.msg, "%s field '%s': expected a %s, got %s", t->kind, key,
                             f->type == HL_FIELD_ENUM || f->type == HL_FIELD_STRING ? "string" : "number",
                             lua_toboolean(L, -1) ? "true" : "false");
                } else {
                    s = hl_field_set_number(set, obj, key, lua_toboolean(L, -1), &err);
                }
                break;
            }
            case LUA_TSTRING: {
                char field[128];
                snprintf(field, sizeof field, "%s field '%s'", t->kind, key);
                s = hl_field_set_string(set, obj, key, hl_c_string(L, -1, field), &err);
                break;
            }
            default:
                s = HL_EINVAL;
                if (hl_field_find(set, key))
                    snprintf(err.msg, sizeof err.msg, "%s field '%s': expected a number or string, got a %s", t->kind,
                             key, luaL_typename(L, -1));
                else
                    hl_field_set_number(set, obj, key, 0, &err); /* produces the unknown-field message */
            }
            if (s)
                hl_raise(L, &err);
        }
        lua_pop(L, 1);
    }
}

static void validate_or_raise(lua_State *L, const objtype *t, const void *obj)
{
    hl_err err;
    if (t->validate(obj, &err))
        hl_raise(L, &err);
}

/* Object from arg 1: a preset name, or a table (optionally with base = name or object). */
static int make_object(lua_State *L, const objtype *t)
{
    hl_err err;
    union {
        hl_gpu g;
        hl_cluster c;
        hl_model m;
    } buf;
    memset(&buf, 0, sizeof buf);
    if (lua_type(L, 1) == LUA_TSTRING) {
        char what[64];
        snprintf(what, sizeof what, "%s preset name", t->kind);
        if (t->preset(hl_c_string(L, 1, what), &buf, &err))
            return hl_raise(L, &err);
        push_obj(L, t, &buf);
        return 1;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    int bt = lua_getfield(L, 1, "base"); /* [tbl base] */
    if (bt == LUA_TSTRING) {
        char what[64];
        snprintf(what, sizeof what, "%s field 'base'", t->kind);
        if (t->preset(hl_c_string(L, -1, what), &buf, &err))
            return hl_raise(L, &err);
    } else if (bt == LUA_TUSERDATA && type_of(L, -1) == t) {
        memcpy(&buf, lua_touserdata(L, -1), t->size);
    } else if (bt != LUA_TNIL) {
        return hl_error(L, "%s field 'base': expected a %s preset name or %s object", t->kind, t->kind, t->kind);
    } else if (t == &T_GPU) {
        hl_gpu_init_defaults(&buf.g); /* the documented defaults JSON loading also starts from */
    }
    lua_pop(L, 1);
    static const char *const skip[] = {"base", NULL};
    apply_table(L, t, &buf, 1, skip);
    if (t == &T_MODEL) /* the completion rules JSON loading applies too (core/src/presets.c) */
        hl_model_complete(&buf.m);
    else if (t == &T_GPU)
        hl_gpu_complete(&buf.g);
    validate_or_raise(L, t, &buf);
    push_obj(L, t, &buf);
    return 1;
}

static int l_gpu(lua_State *L) { return make_object(L, &T_GPU); }
static int l_model(lua_State *L) { return make_object(L, &T_MODEL); }

/* cluster(name) or cluster{gpu = obj|name, gpus = N, hbd = H, ...overrides} */
static int l_cluster(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING)
        return make_object(L, &T_CLUSTER);
    luaL_checktype(L, 1, LUA_TTABLE);
    hl_err err;
    hl_gpu gpu;
    lua_getfield(L, 1, "gpu");
    if (lua_type(L, -1) == LUA_TSTRING) {
        if (hl_gpu_preset(hl_c_string(L, -1, "cluster field 'gpu'"), &gpu, &err))
            return hl_raise(L, &err);
    } else if (hl_to_gpu(L, -1)) {
        gpu = *hl_to_gpu(L, -1);
    } else {
        return hl_error(L, "cluster field 'gpu': expected a gpu object or preset name, got %s", luaL_typename(L, -1));
    }
    lua_pop(L, 1);
    if (lua_getfield(L, 1, "gpus") == LUA_TNIL)
        return hl_error(L, "cluster field 'gpus' is required (number of GPUs)");
    lua_pop(L, 1);
    hl_cluster c;
    hl_cluster_init(&c, &gpu, 1, 1, &err); /* fill link fields; sizes set and checked below */
    static const char *const skip[] = {"gpu", NULL};
    apply_table(L, &T_CLUSTER, &c, 1, skip);
    int hbd_given = lua_getfield(L, 1, "hbd") != LUA_TNIL, name_given = lua_getfield(L, 1, "name") != LUA_TNIL;
    lua_pop(L, 2);
    hl_cluster_complete(&c, hbd_given, name_given); /* as JSON loading does (core/src/presets.c) */
    validate_or_raise(L, &T_CLUSTER, &c);
    push_obj(L, &T_CLUSTER, &c);
    return 1;
}

/* obj:with{field = value, ...}: a validated copy with fields changed. */
static int l_with(lua_State *L)
{
    const objtype *t = type_of(L, 1);
    if (!t)
        return luaL_argerror(L, 1, "expected a gpu, cluster or model object");
    luaL_checktype(L, 2, LUA_TTABLE);
    void *copy = push_obj(L, t, lua_touserdata(L, 1)); /* [obj tbl copy] */
    static const char *const skip_cluster[] = {"gpu", NULL};
    if (t == &T_CLUSTER && lua_getfield(L, 2, "gpu") != LUA_TNIL) {
        hl_gpu *g = hl_to_gpu(L, -1);
        if (!g)
            return hl_error(L, "cluster field 'gpu': expected a gpu object");
        ((hl_cluster *)copy)->gpu = *g;
    }
    if (t == &T_CLUSTER)
        lua_pop(L, 1);
    apply_table(L, t, copy, 2, t == &T_CLUSTER ? skip_cluster : NULL);
    validate_or_raise(L, t, copy);
    return 1;
}

static void push_field(lua_State *L, const hl_field *f, const void *obj)
{
    switch (f->type) {
    case HL_FIELD_STRING:
    case HL_FIELD_ENUM: lua_pushstring(L, hl_field_get_string(f, obj)); break;
    case HL_FIELD_BOOL: lua_pushboolean(L, hl_field_get_number(f, obj) != 0); break;
    case HL_FIELD_INT64: lua_pushinteger(L, (lua_Integer)hl_field_get_number(f, obj)); break;
    default: lua_pushnumber(L, hl_field_get_number(f, obj));
    }
}

static int l_index(lua_State *L)
{
    const objtype *t = type_of(L, 1);
    const void *obj = lua_touserdata(L, 1);
    size_t len;
    const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tolstring(L, 2, &len) : NULL;
    if (key && strlen(key) == len) { /* "layers\0x" is no field name */
        const hl_field *f = hl_field_find(t->fields(), key);
        if (f) {
            push_field(L, f, obj);
            return 1;
        }
        if (t == &T_CLUSTER && strcmp(key, "gpu") == 0) {
            hl_push_gpu(L, &((const hl_cluster *)obj)->gpu);
            return 1;
        }
    }
    luaL_getmetafield(L, 1, "__methods"); /* [obj key methods] */
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int l_newindex(lua_State *L)
{
    const objtype *t = type_of(L, 1);
    return hl_error(L, "%s objects are immutable: use obj:with{%s = ...} for a changed copy", t->kind,
                    luaL_optstring(L, 2, "field"));
}

static int l_eq(lua_State *L)
{
    const objtype *a = type_of(L, 1), *b = type_of(L, 2);
    lua_pushboolean(L, a && a == b && memcmp(lua_touserdata(L, 1), lua_touserdata(L, 2), a->size) == 0);
    return 1;
}

/* obj:totable(): every field as a plain table (nested gpu for clusters). */
static int l_totable(lua_State *L)
{
    const objtype *t = type_of(L, 1);
    if (!t)
        return luaL_argerror(L, 1, "expected a gpu, cluster or model object");
    const void *obj = lua_touserdata(L, 1);
    const hl_field_set *set = t->fields();
    lua_createtable(L, 0, set->count);
    for (int32_t i = 0; i < set->count; i++) {
        push_field(L, &set->fields[i], obj);
        lua_setfield(L, -2, set->fields[i].name);
    }
    if (t == &T_CLUSTER) {
        hl_push_gpu(L, &((const hl_cluster *)obj)->gpu);
        lua_setfield(L, -2, "gpu");
    }
    return 1;
}

static int l_params(lua_State *L)
{
    hl_model *m = luaL_checkudata(L, 1, HL_MT_MODEL);
    hl_params p;
    hl_err err;
    if (hl_model_params(m, &p, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 14);
    const struct {
        const char *k;
        double v;
    } kv[] = {{"total", p.total},     {"active", p.active},         {"embedding", p.embedding},
              {"lm_head", p.lm_head}, {"attention", p.attention},   {"dense_ffn", p.dense_ffn},
              {"experts", p.experts}, {"shared", p.shared},         {"router", p.router},
              {"norms", p.norms},     {"per_expert", p.per_expert}, {"vision", p.vision},
              {"mtp", p.mtp},         {"mtp_active", p.mtp_active}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        lua_pushnumber(L, kv[i].v);
        lua_setfield(L, -2, kv[i].k);
    }
    return 1;
}

hl_precision hl_check_precision(lua_State *L, int idx)
{
    hl_precision p;
    hl_err err;
    if (hl_precision_parse(hl_check_c_string(L, idx, "precision"), &p, &err))
        luaL_argerror(L, idx, err.msg);
    return p;
}

/* m:kv_bytes_per_token(precision = "bf16"[, context]) */
static int l_kv_bytes_per_token(lua_State *L)
{
    hl_model *m = luaL_checkudata(L, 1, HL_MT_MODEL);
    hl_precision p = lua_isnoneornil(L, 2) ? HL_BF16 : hl_check_precision(L, 2);
    if (lua_isnoneornil(L, 3)) {
        lua_pushnumber(L, hl_kv_bytes_per_token(m, p));
    } else {
        double ctx = luaL_checknumber(L, 3);
        luaL_argcheck(L, ctx >= 0 && ctx < 1e12, 3, "context must be in 0..1e12 tokens");
        lua_pushnumber(L, hl_kv_bytes_sequence(m, p, ctx) / (ctx > 0 ? ctx : 1));
    }
    return 1;
}

/* m:state_bytes(precision = "bf16"): linear-attention state of one sequence, B */
static int l_state_bytes(lua_State *L)
{
    hl_model *m = luaL_checkudata(L, 1, HL_MT_MODEL);
    hl_precision p = lua_isnoneornil(L, 2) ? HL_BF16 : hl_check_precision(L, 2);
    lua_pushnumber(L, hl_kv_state_bytes(m, p));
    return 1;
}

static int l_from_hf(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "from_hf: the path");
    char full[4096];
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".json") == 0)
        snprintf(full, sizeof full, "%s", path);
    else
        snprintf(full, sizeof full, "%s/config.json", path);
    char *text;
    hl_err err;
    if (hl_read_file(full, &text, &err))
        return hl_raise(L, &err);
    hl_model m;
    hl_status s = hl_model_from_hf_json(text, full, &m, &err);
    hl_free(text);
    if (s)
        return hl_raise(L, &err);
    hl_push_model(L, &m);
    return 1;
}

/* from_json(kind, text, origin): an object from JSON text (the loaders of presets). */
static int l_from_json(lua_State *L)
{
    static const char *const kinds[] = {"gpu", "cluster", "model", NULL};
    int kind = luaL_checkoption(L, 1, NULL, kinds);
    const char *text = hl_check_c_string(L, 2, "from_json: the JSON text");
    const char *origin = lua_isnoneornil(L, 3) ? "json" : hl_check_c_string(L, 3, "from_json: the origin");
    hl_err err;
    hl_status st;
    if (kind == 0) {
        hl_gpu g;
        if ((st = hl_gpu_from_json(text, origin, &g, &err)) == HL_OK)
            hl_push_gpu(L, &g);
    } else if (kind == 1) {
        hl_cluster c;
        if ((st = hl_cluster_from_json(text, origin, &c, &err)) == HL_OK)
            hl_push_cluster(L, &c);
    } else {
        hl_model m;
        if ((st = hl_model_from_json(text, origin, &m, &err)) == HL_OK)
            hl_push_model(L, &m);
    }
    return st ? hl_raise(L, &err) : 1;
}

static int list_presets(lua_State *L, hl_preset_kind kind)
{
    int32_t n = hl_preset_count(kind);
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushstring(L, hl_preset_name(kind, i));
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int l_gpus(lua_State *L) { return list_presets(L, HL_PRESET_GPU); }
static int l_clusters(lua_State *L) { return list_presets(L, HL_PRESET_CLUSTER); }
static int l_models(lua_State *L) { return list_presets(L, HL_PRESET_MODEL); }

/* aliases(kind): {alias = {field, factor}} of the gpu or cluster friendly names
 * (core/src/hw.c: the one table the Lua and JSON loaders both accept). */
static int l_aliases(lua_State *L)
{
    static const char *const kinds[] = {"gpu", "cluster", "model", NULL};
    const hl_field_set *(*const sets[])(void) = {hl_gpu_fields, hl_cluster_fields, hl_model_fields};
    const hl_field_set *set = sets[luaL_checkoption(L, 1, NULL, kinds)]();
    lua_newtable(L);
    for (const hl_field_alias *a = set->aliases; a && a->name; a++) {
        lua_createtable(L, 2, 0);
        lua_pushstring(L, a->field);
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, a->factor);
        lua_rawseti(L, -2, 2);
        lua_setfield(L, -2, a->name);
    }
    return 1;
}

/* fields(kind): array of {name, type, unit, help, min, max, values, path, default}
 * for help text; kind is gpu, cluster, model, job or plan (the search options). */
static int l_fields(lua_State *L)
{
    static const char *const kinds[] = {"gpu", "cluster", "model", "job", "plan", "serve", NULL};
    const hl_field_set *(*const sets[])(void) = {hl_gpu_fields, hl_cluster_fields, hl_model_fields,
                                                 hl_job_fields, hl_plan_fields,    hl_serve_fields};
    const hl_field_set *set = sets[luaL_checkoption(L, 1, NULL, kinds)]();
    static const char *const tnames[] = {"number", "integer", "boolean", "string", "enum", "table"};
    lua_createtable(L, set->count, 0);
    for (int32_t i = 0; i < set->count; i++) {
        const hl_field *f = &set->fields[i];
        lua_createtable(L, 0, 7);
        lua_pushstring(L, f->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, tnames[f->type]);
        lua_setfield(L, -2, "type");
        lua_pushstring(L, f->unit);
        lua_setfield(L, -2, "unit");
        lua_pushstring(L, f->help);
        lua_setfield(L, -2, "help");
        if (f->enum_names) {
            lua_pushstring(L, f->enum_names);
            lua_setfield(L, -2, "values");
        }
        if (f->path) {
            lua_pushstring(L, f->path);
            lua_setfield(L, -2, "path");
        }
        /* the job's and serve's tables carry defaults */
        if ((set == hl_job_fields() || set == hl_serve_fields()) && f->type != HL_FIELD_TABLE &&
            f->type != HL_FIELD_STRING) {
            if (f->type == HL_FIELD_ENUM || f->type == HL_FIELD_BOOL) {
                hl_serve_cfg probe; /* large enough for either struct's int32 at f->offset */
                _Static_assert(sizeof(hl_serve_cfg) >= sizeof(hl_job), "probe holds a job");
                memset(&probe, 0, sizeof probe);
                *(int32_t *)((char *)&probe + f->offset) = (int32_t)f->def;
                if (f->type == HL_FIELD_ENUM)
                    lua_pushstring(L, hl_field_get_string(f, &probe));
                else
                    lua_pushboolean(L, f->def != 0);
            } else {
                lua_pushnumber(L, f->def);
            }
            lua_setfield(L, -2, "default");
        }
        if (f->type == HL_FIELD_DOUBLE || f->type == HL_FIELD_INT64) {
            lua_pushnumber(L, f->min);
            lua_setfield(L, -2, "min");
            lua_pushnumber(L, f->max);
            lua_setfield(L, -2, "max");
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* metatable(kind): the metatable of a kind, so Lua code can add __tostring and methods. */
static int l_metatable(lua_State *L)
{
    static const char *const kinds[] = {"gpu", "cluster", "model", NULL};
    static const char *const mts[] = {HL_MT_GPU, HL_MT_CLUSTER, HL_MT_MODEL};
    luaL_getmetatable(L, mts[luaL_checkoption(L, 1, NULL, kinds)]);
    return 1;
}

static void new_metatable(lua_State *L, const objtype *t, const luaL_Reg *methods)
{
    luaL_newmetatable(L, t->mt); /* [core mt] */
    lua_pushcfunction(L, l_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, l_eq);
    lua_setfield(L, -2, "__eq");
    lua_pushstring(L, t->kind);
    lua_setfield(L, -2, "__name");
    static const luaL_Reg common[] = {{"with", l_with}, {"totable", l_totable}, {NULL, NULL}};
    lua_newtable(L); /* [core mt methods] */
    luaL_setfuncs(L, common, 0);
    if (methods)
        luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__methods");
    const hl_field_set *set = t->fields();
    lua_createtable(L, set->count + 1, 0); /* field names for REPL completion */
    for (int32_t i = 0; i < set->count; i++) {
        lua_pushstring(L, set->fields[i].name);
        lua_rawseti(L, -2, i + 1);
    }
    if (t == &T_CLUSTER) {
        lua_pushliteral(L, "gpu");
        lua_rawseti(L, -2, set->count + 1);
    }
    lua_setfield(L, -2, "__fields");
    lua_pop(L, 1);
}

void hl_bind_objects(lua_State *L)
{
    static const luaL_Reg model_methods[] = {{"params", l_params},
                                             {"kv_bytes_per_token", l_kv_bytes_per_token},
                                             {"state_bytes", l_state_bytes},
                                             {NULL, NULL}};
    new_metatable(L, &T_GPU, NULL);
    new_metatable(L, &T_CLUSTER, NULL);
    new_metatable(L, &T_MODEL, model_methods);
    static const luaL_Reg fns[] = {{"gpu", l_gpu},
                                   {"cluster", l_cluster},
                                   {"model", l_model},
                                   {"model_from_hf", l_from_hf},
                                   {"gpus", l_gpus},
                                   {"clusters", l_clusters},
                                   {"models", l_models},
                                   {"fields", l_fields},
                                   {"aliases", l_aliases},
                                   {"metatable", l_metatable},
                                   {"with", l_with},
                                   {"from_json", l_from_json},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
