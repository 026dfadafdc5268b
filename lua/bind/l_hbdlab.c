/* luaopen_hbdlab: registers the embedded Lua library in package.preload, builds
 * the C table `hbdlab.core`, and returns require "hbdlab" (lua/hbdlab/init.lua).
 * Used by the host (preloaded) and by the Lua C module hbdlab.so. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "bind.h"
#include "lua_library.h"

static int l_embedded_chunks(lua_State *L);

typedef void (*binder)(lua_State *L);
static const binder binders[] = {
    hl_bind_util,     hl_bind_objects, hl_bind_roofline, hl_bind_coll,       hl_bind_sim,   hl_bind_json,
    hl_bind_sweep,    hl_bind_bench,   hl_bind_minitf,   hl_bind_files,      hl_bind_calib, hl_bind_serve,
    hl_bind_dist_fns, hl_bind_result,  hl_bind_merge,    hl_bind_sweep_rows,
};

static int open_core(lua_State *L)
{
    lua_newtable(L); /* [core] */
    for (size_t i = 0; i < sizeof binders / sizeof binders[0]; i++)
        binders[i](L);
    static const luaL_Reg own[] = {{"embedded_chunks", l_embedded_chunks}, {NULL, NULL}};
    luaL_setfuncs(L, own, 0);
    return 1;
}

/* The globals hbdlab's own chunks see (attack pass 6): a script's `table = hl.sweep{...}` or
 * `type = "dense"` replaced the global the library's Lua called ("attempt to call a nil value
 * (field 'sort')" in hl.rows.print, every hl.simulate failing). The standard library's tables and
 * base functions as they were when hbdlab was opened are the chunks' own; every other name (hl,
 * print, io, os, arg) is read from and written to the script's globals, as before. Attack pass 7:
 * `require`, `load` and `debug` are the chunks' own too (a script's `require = my_loader` that
 * raised broke every hl.simulate), and the library tables are copies (a script's
 * `string.format = f` or `table.concat = f` reached hl.rows.format; calls written as methods,
 * s:sub(), still go through the string metatable, which is the script's). */
static const char *const own_globals[] = {
    "assert", "error",  "getmetatable", "ipairs",   "next",     "pairs", "pcall",  "rawequal", "rawget", "rawlen",
    "rawset", "select", "setmetatable", "tonumber", "tostring", "type",  "xpcall", "require",  "load",   NULL};
static const char *const own_tables[] = {"string", "table", "math", "utf8", "coroutine", "debug", NULL};
static char env_key;

static void push_env(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &env_key) == LUA_TTABLE)
        return;
    lua_pop(L, 1);
    lua_createtable(L, 0, (int)(sizeof own_globals / sizeof own_globals[0] + sizeof own_tables / sizeof own_tables[0]));
    for (int i = 0; own_globals[i]; i++) { /* [env] */
        lua_pushglobaltable(L);
        lua_pushstring(L, own_globals[i]);
        lua_rawget(L, -2); /* [env G value] */
        lua_setfield(L, -3, own_globals[i]);
        lua_pop(L, 1);
    }
    for (int i = 0; own_tables[i]; i++) { /* a shallow copy of each library table */
        lua_pushglobaltable(L);
        lua_pushstring(L, own_tables[i]);
        if (lua_rawget(L, -2) == LUA_TTABLE) { /* [env G lib] */
            int n = 0;
            for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1))
                n++;
            lua_createtable(L, 0, n);                              /* sized once: no rehash while it fills */
            for (lua_pushnil(L); lua_next(L, -3); lua_pop(L, 1)) { /* [env G lib copy k v] */
                lua_pushvalue(L, -2);
                lua_pushvalue(L, -2);
                lua_rawset(L, -5);
            }
            lua_setfield(L, -4, own_tables[i]);
        }
        lua_pop(L, 2);
    }
    lua_createtable(L, 0, 2); /* [env mt] */
    lua_pushglobaltable(L);
    lua_setfield(L, -2, "__index");
    lua_pushglobaltable(L);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &env_key);
}

/* Pushes the function of embedded file f: its precompiled chunk, or (when this liblua refuses
 * the chunk: another Lua version or number format than the build's) its source; its _ENV (a main
 * chunk's one upvalue) is push_env's table. */
static int load_file(lua_State *L, const hl_lua_file *f)
{
    char chunkname[256];
    snprintf(chunkname, sizeof chunkname, "@%s", f->name);
    int st = luaL_loadbufferx(L, f->chunk, f->chunk_size, chunkname, "b");
    if (st != LUA_OK) {
        lua_pop(L, 1);
        st = luaL_loadbufferx(L, f->data, f->size, chunkname, "t");
    }
    if (st == LUA_OK) {
        push_env(L);
        if (!lua_setupvalue(L, -2, 1))
            lua_pop(L, 1);
    }
    return st;
}

/* core.embedded_chunks() -> the release the chunks were built with, and per embedded file
 * {name =, loads = whether this liblua loads its precompiled chunk, error = why not} (tests). */
static int l_embedded_chunks(lua_State *L)
{
    lua_pushstring(L, hl_embedded_lua_release);
    lua_createtable(L, hl_embedded_lua_count, 0);
    for (int32_t i = 0; i < hl_embedded_lua_count; i++) {
        const hl_lua_file *f = &hl_embedded_lua[i];
        lua_createtable(L, 0, 3);
        lua_pushstring(L, f->name);
        lua_setfield(L, -2, "name");
        int ok = luaL_loadbufferx(L, f->chunk, f->chunk_size, f->name, "b") == LUA_OK;
        if (!ok)
            lua_setfield(L, -2, "error");
        else
            lua_pop(L, 1);
        lua_pushboolean(L, ok);
        lua_setfield(L, -2, "loads");
        lua_rawseti(L, -2, i + 1);
    }
    return 2;
}

/* Loader for an embedded Lua file; upvalue 1 = index in hl_embedded_lua. */
static int load_embedded(lua_State *L)
{
    const hl_lua_file *f = &hl_embedded_lua[lua_tointeger(L, lua_upvalueindex(1))];
    if (load_file(L, f) != LUA_OK)
        return lua_error(L);
    lua_pushvalue(L, 1); /* module name */
    lua_call(L, 1, 1);
    return 1;
}

/* "hbdlab/plot.lua" -> "hbdlab.plot"; "hbdlab/init.lua" -> "hbdlab". */
static void push_module_name(lua_State *L, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    size_t n = strlen(buf);
    if (n > 4 && strcmp(buf + n - 4, ".lua") == 0)
        buf[n - 4] = '\0';
    n = strlen(buf);
    if (n > 5 && strcmp(buf + n - 5, "/init") == 0)
        buf[n - 5] = '\0';
    for (char *p = buf; *p; p++)
        if (*p == '/')
            *p = '.';
    lua_pushstring(L, buf);
}

int luaopen_hbdlab(lua_State *L)
{
    static const luaL_Reg core[] = {{"hbdlab.core", open_core}, {NULL, NULL}};
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE); /* [preload] */
    luaL_setfuncs(L, core, 0);
    for (int32_t i = 0; i < hl_embedded_lua_count; i++) {
        push_module_name(L, hl_embedded_lua[i].name);
        if (strcmp(lua_tostring(L, -1), "hbdlab") == 0) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushinteger(L, i);
        lua_pushcclosure(L, load_embedded, 1);
        lua_settable(L, -3);
    }
    lua_pop(L, 1);
    for (int32_t i = 0; i < hl_embedded_lua_count; i++) {
        if (strcmp(hl_embedded_lua[i].name, "hbdlab/init.lua") == 0) {
            const hl_lua_file *f = &hl_embedded_lua[i];
            if (load_file(L, f) != LUA_OK)
                return lua_error(L);
            lua_pushliteral(L, "hbdlab");
            lua_call(L, 1, 1);
            return 1;
        }
    }
    return hl_error(L, "hbdlab: embedded hbdlab/init.lua is missing from this build");
}
