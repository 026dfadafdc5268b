/* Result fields to Lua, from the core's result table (core/src/result.c):
 * the same code builds hl.simulate results and sweep rows. */
#include <string.h>

#include "bind.h"

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

void hl_set_result_fields(lua_State *L, const double *v, int nested)
{
    int t = lua_gettop(L);
    int32_t n = hl_result_field_count();
    for (int32_t i = 0; i < n; i++) {
        const char *name = hl_result_field_at(i)->name;
        const char *dot = nested ? strchr(name, '.') : NULL;
        if (dot) {                                          /* t[group][leaf] */
            lua_pushlstring(L, name, (size_t)(dot - name)); /* [t group] */
            lua_pushvalue(L, -1);
            if (lua_rawget(L, t) != LUA_TTABLE) { /* [t group sub|nil] */
                lua_pop(L, 1);
                lua_createtable(L, 0, 16);
                lua_pushvalue(L, -2);
                lua_pushvalue(L, -2);
                lua_rawset(L, t); /* t[group] = sub */
            }
            hl_push_result_value(L, i, v[i]);
            lua_setfield(L, -2, dot + 1);
            lua_pop(L, 2);
        } else {
            hl_push_result_value(L, i, v[i]);
            lua_setfield(L, t, name);
        }
    }
    for (int k = 0; k < N_FRIENDLY; k++) {
        int32_t i = hl_result_field_index(friendly[k].field);
        hl_set_num(L, friendly[k].name, v[i] * friendly[k].scale);
    }
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
}
