/* Shared binding helpers and the small utility functions of hbdlab.core. */
#include "bind.h"

#include <string.h>

int hl_raise(lua_State *L, const hl_err *err)
{
    lua_pushstring(L, err->msg[0] ? err->msg : "unknown error");
    return lua_error(L);
}

int hl_push_fail(lua_State *L, const hl_err *err)
{
    lua_pushnil(L);
    lua_pushstring(L, err->msg[0] ? err->msg : "unknown error");
    return 2;
}

double hl_opt_number_field(lua_State *L, int idx, const char *name, double def)
{
    int t = lua_getfield(L, idx, name);
    double v = def;
    if (t == LUA_TNUMBER)
        v = lua_tonumber(L, -1);
    else if (t != LUA_TNIL) {
        lua_pop(L, 1);
        luaL_error(L, "field '%s': expected a number, got %s", name, lua_typename(L, t));
    }
    lua_pop(L, 1);
    return v;
}

const char *hl_opt_string_field(lua_State *L, int idx, const char *name)
{
    int t = lua_getfield(L, idx, name);
    const char *s = NULL;
    if (t == LUA_TSTRING)
        s = lua_tostring(L, -1);
    else if (t != LUA_TNIL) {
        lua_pop(L, 1);
        luaL_error(L, "field '%s': expected a string, got %s", name, lua_typename(L, t));
    }
    lua_pop(L, 1); /* the string stays alive: it is referenced by the table */
    return s;
}

static int l_version(lua_State *L)
{
    lua_pushstring(L, hl_version());
    return 1;
}

void hl_bind_util(lua_State *L)
{
    lua_pushcfunction(L, l_version);
    lua_setfield(L, -2, "version");
}
