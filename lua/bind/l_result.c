/* Result fields to Lua, from the core's result table (core/src/result.c):
 * the same code builds hl.simulate results and sweep rows. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "result_view.h"

/* Friendly aliases (Lua only; the core is SI): name, SI field, factor. */
static const struct {
    const char *name, *field;
    double scale;
} friendly[] = {{"ttft_ms", "ttft_s", 1e3}, {"tpot_ms", "tpot_s", 1e3}};
enum { N_FRIENDLY = (int)(sizeof friendly / sizeof friendly[0]) };

void hl_push_result_value(lua_State *L, int32_t i, double v)
{
    const hl_result_field *f = hl_result_field_at(i);
    switch (f ? f->type : HL_VALUE_NUMBER) {
    case HL_VALUE_INTEGER: lua_pushinteger(L, (lua_Integer)v); break;
    case HL_VALUE_BOOL: lua_pushboolean(L, v != 0); break;
    case HL_VALUE_NAME: lua_pushstring(L, hl_result_value_name(i, v)); break;
    default:
        if (v != v) /* NaN: an unknown value (a price not given, core/src/cost.c) reads as nil */
            lua_pushnil(L);
        else
            lua_pushnumber(L, v);
    }
}

/* The result table's shape (result_view.h), worked out once per process from the core's
 * result table; and the keys as Lua strings, interned once per state in a registry array:
 * [i] the full name of field i (1-based), [n + i] its leaf, [2n + g] group g's name,
 * [2n + G + k] friendly alias k. */
enum { MAX_GROUPS = HL_RESULT_MAX_GROUPS };
typedef hl_result_shape result_shape;

static result_shape shape;
static pthread_once_t shape_once = PTHREAD_ONCE_INIT;
static char keys_key;

static void build_shape(void)
{
    const char *names[MAX_GROUPS];
    size_t lens[MAX_GROUPS];
    shape.n = hl_result_field_count();
    for (int32_t i = 0; i < shape.n; i++) {
        const char *name = hl_result_field_at(i)->name, *dot = strchr(name, '.');
        shape.group[i] = -1;
        if (!dot) {
            shape.top++;
            continue;
        }
        size_t len = (size_t)(dot - name);
        int g = 0;
        while (g < shape.groups && !(lens[g] == len && strncmp(names[g], name, len) == 0))
            g++;
        if (g == shape.groups) { /* a new group (the schema has 8; MAX_GROUPS is checked below) */
            if (g == MAX_GROUPS)
                abort();
            names[g] = name;
            lens[g] = len;
            shape.groups++;
            shape.top++;
        }
        shape.group[i] = (int8_t)g;
        shape.group_size[g]++;
    }
}

/* Pushes the registry array of keys (building it on the first call in this state). */
static void push_keys(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &keys_key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    int32_t n = shape.n;
    lua_createtable(L, 2 * n + shape.groups + N_FRIENDLY, 0);
    for (int32_t i = 0; i < n; i++) {
        const char *name = hl_result_field_at(i)->name, *dot = strchr(name, '.');
        lua_pushstring(L, name);
        lua_rawseti(L, -2, i + 1);
        lua_pushstring(L, dot ? dot + 1 : name);
        lua_rawseti(L, -2, n + i + 1);
        if (dot && lua_rawgeti(L, -1, 2 * n + shape.group[i] + 1) == LUA_TNIL) {
            lua_pop(L, 1);
            lua_pushlstring(L, name, (size_t)(dot - name));
            lua_rawseti(L, -2, 2 * n + shape.group[i] + 1);
        } else if (dot) {
            lua_pop(L, 1);
        }
    }
    for (int k = 0; k < N_FRIENDLY; k++) {
        lua_pushstring(L, friendly[k].name);
        lua_rawseti(L, -2, 2 * n + shape.groups + k + 1);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &keys_key);
}

const hl_result_shape *hl_result_shape_get(void)
{
    pthread_once(&shape_once, build_shape);
    return &shape;
}

void hl_result_push_key_array(lua_State *L)
{
    pthread_once(&shape_once, build_shape);
    push_keys(L);
}

int hl_result_friendly_count(void) { return N_FRIENDLY; }

int32_t hl_result_table_size(int nested)
{
    pthread_once(&shape_once, build_shape);
    return (nested ? shape.top : shape.n) + N_FRIENDLY;
}

void hl_set_result_fields(lua_State *L, const double *v, int nested)
{
    pthread_once(&shape_once, build_shape);
    int t = lua_absindex(L, -1);
    int32_t n = shape.n;
    push_keys(L);
    int keys = lua_gettop(L);
    int sub0 = keys + 1; /* group g's table at sub0 + g */
    if (nested)
        for (int g = 0; g < shape.groups; g++) {
            lua_createtable(L, 0, shape.group_size[g]);
            lua_rawgeti(L, keys, 2 * n + g + 1);
            lua_pushvalue(L, -2);
            lua_rawset(L, t); /* t[group] = sub */
        }
    for (int32_t i = 0; i < n; i++) {
        int g = nested ? shape.group[i] : -1;
        lua_rawgeti(L, keys, g >= 0 ? n + i + 1 : i + 1); /* the interned key */
        hl_push_result_value(L, i, v[i]);
        lua_rawset(L, g >= 0 ? sub0 + g : t); /* a nil value (unknown) sets nothing */
    }
    for (int k = 0; k < N_FRIENDLY; k++) {
        lua_rawgeti(L, keys, 2 * n + shape.groups + k + 1);
        lua_pushnumber(L, v[hl_result_field_index(friendly[k].field)] * friendly[k].scale);
        lua_rawset(L, t);
    }
    lua_settop(L, t);
}

const char *hl_result_friendly(int32_t k, int32_t *field, double *scale)
{
    if (k < 0 || k >= N_FRIENDLY)
        return NULL;
    if (field)
        *field = hl_result_field_index(friendly[k].field);
    if (scale)
        *scale = friendly[k].scale;
    return friendly[k].name;
}

int32_t hl_result_column(const char *name, double *scale)
{
    *scale = 1;
    for (int k = 0; k < N_FRIENDLY; k++)
        if (strcmp(name, friendly[k].name) == 0) {
            *scale = friendly[k].scale;
            return hl_result_field_index(friendly[k].field);
        }
    return hl_result_field_index(name);
}

/* result_fields() -> array of {name, unit, help, type}; friendly aliases last, with `alias_of`. */
static int l_result_fields(lua_State *L)
{
    static const char *const types[] = {"number", "integer", "boolean", "name"};
    int32_t n = hl_result_field_count();
    lua_createtable(L, n + N_FRIENDLY, 0);
    for (int32_t i = 0; i < n; i++) {
        const hl_result_field *f = hl_result_field_at(i);
        lua_createtable(L, 0, 5);
        lua_pushstring(L, f->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, f->unit);
        lua_setfield(L, -2, "unit");
        lua_pushstring(L, f->help);
        lua_setfield(L, -2, "help");
        lua_pushstring(L, types[f->type & 3]);
        lua_setfield(L, -2, "type");
        if (f->names) {
            lua_pushstring(L, f->names);
            lua_setfield(L, -2, "values");
        }
        lua_rawseti(L, -2, i + 1);
    }
    for (int k = 0; k < N_FRIENDLY; k++) {
        lua_createtable(L, 0, 4);
        lua_pushstring(L, friendly[k].name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, friendly[k].field);
        lua_setfield(L, -2, "alias_of");
        hl_set_num(L, "scale", friendly[k].scale);
        lua_pushstring(L, "number");
        lua_setfield(L, -2, "type");
        lua_rawseti(L, -2, n + k + 1);
    }
    return 1;
}

void hl_bind_result(lua_State *L)
{
    static const luaL_Reg fns[] = {{"result_fields", l_result_fields}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
    hl_bind_result_view(L);
}
