/* Shared binding helpers and the small utility functions of hbdlab.core. */
#define _DEFAULT_SOURCE /* wait4: peak RSS of a child */
#define _GNU_SOURCE     /* posix_spawn_file_actions_addchdir_np (glibc 2.29) */
#include "bind.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

extern char **environ;

void hl_set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

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

/* spawn{prog, arg1, ..., stdout = path?, stderr = path?, cwd = folder?}: runs a
 * program with an argument vector (never a shell),
 * waits, returns its exit status, nil and the child's peak RSS in bytes; or
 * nil + message when it cannot start. */
static int l_spawn(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_len(L, 1);
    luaL_argcheck(L, n >= 1 && n < 64, 1, "expected {program, args...} with 1..63 entries");
    const char *argv[64];
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        argv[i - 1] = luaL_checkstring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
    }
    argv[n] = NULL;
    /* optional: stdout = "path" redirects the child's standard output */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (lua_getfield(L, 1, "stdout") == LUA_TSTRING)
        posix_spawn_file_actions_addopen(&fa, 1, lua_tostring(L, -1), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (lua_getfield(L, 1, "stderr") == LUA_TSTRING)
        posix_spawn_file_actions_addopen(&fa, 2, lua_tostring(L, -1), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (lua_getfield(L, 1, "cwd") == LUA_TSTRING) /* the child starts in this folder */
        posix_spawn_file_actions_addchdir_np(&fa, lua_tostring(L, -1));
    lua_pop(L, 3);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot run '%s': %s", argv[0], strerror(rc));
        return 2;
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            lua_pushnil(L);
            lua_pushfstring(L, "waiting for '%s': %s", argv[0], strerror(errno));
            return 2;
        }
    lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    lua_pushnil(L);
    lua_pushinteger(L, (lua_Integer)ru.ru_maxrss * 1024); /* peak resident set of the child, bytes */
    return 3;
}

void hl_bind_util(lua_State *L)
{
    lua_pushcfunction(L, l_spawn);
    lua_setfield(L, -2, "spawn");
    lua_pushcfunction(L, l_version);
    lua_setfield(L, -2, "version");
}
