/* The Lua-driven fuzz targets' state: a fresh Lua state with the standard libraries, the
 * hbdlab module loaded (luaopen_hbdlab, which must succeed) and the target's fixed script
 * compiled (which must compile), the script's function below the module on the stack, so
 * that the caller pushes the script's other arguments and calls it with 1 + theirs. NULL
 * when out of memory. The caller closes the state. */
#ifndef HL_FUZZ_LUA_H
#define HL_FUZZ_LUA_H
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>

int luaopen_hbdlab(lua_State *L);

static inline lua_State *fuzz_lua_with_script(const char *script, size_t len)
{
    lua_State *L = luaL_newstate();
    if (!L)
        return NULL;
    luaL_openlibs(L);
    lua_pushcfunction(L, luaopen_hbdlab);
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) /* the library itself must load */
        abort();
    if (luaL_loadbuffer(L, script, len, "=fuzz") != LUA_OK)
        abort();
    lua_insert(L, -2); /* the script, then hbdlab: its first argument */
    return L;
}

#endif
