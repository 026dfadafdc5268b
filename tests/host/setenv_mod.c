/* A Lua C module for tests/host/test_presets_env.sh: setenv(name, value) and unsetenv(name), so a
 * script run by a stock lua5.4 can change $HBDLAB_PRESETS between hl.simulate calls (Lua itself
 * cannot change the environment). */
#define _POSIX_C_SOURCE 200112L
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>

static int l_setenv(lua_State *L)
{
    lua_pushboolean(L, setenv(luaL_checkstring(L, 1), luaL_checkstring(L, 2), 1) == 0);
    return 1;
}

static int l_unsetenv(lua_State *L)
{
    lua_pushboolean(L, unsetenv(luaL_checkstring(L, 1)) == 0);
    return 1;
}

int luaopen_setenv_mod(lua_State *L);
int luaopen_setenv_mod(lua_State *L)
{
    static const luaL_Reg fns[] = {{"setenv", l_setenv}, {"unsetenv", l_unsetenv}, {NULL, NULL}};
    luaL_newlib(L, fns);
    return 1;
}
