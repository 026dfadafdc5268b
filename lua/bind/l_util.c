/* Shared binding helpers and the small utility functions of hbdlab.core. */
#define _DEFAULT_SOURCE /* wait4: peak RSS of a child */
#define _GNU_SOURCE     /* posix_spawn_file_actions_addchdir_np (glibc 2.29) */
#include "bind.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <time.h>

extern char **environ;

void hl_set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

/* A chunk of hbdlab's own Lua library ("@hbdlab/sweep.lua"). */
static int internal_frame(const lua_Debug *ar) { return strncmp(ar->source, "@hbdlab/", 8) == 0; }

int hl_error(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap); /* [msg] */
    va_end(ap);
    size_t len;
    const char *m = lua_tolstring(L, -1, &len);
    if (strstr(m, "-nan")) { /* %f of a NaN with its sign bit set: "nan", as hl_fail writes it */
        char *fixed = lua_newuserdatauv(L, len + 1, 0); /* [msg fixed]: freed by the collector */
        memcpy(fixed, m, len + 1);
        hl_text_unsign_nan(fixed);
        lua_pushstring(L, fixed);
        lua_replace(L, -3);
        lua_pop(L, 1);
    }
    lua_Debug ar;
    int level = 1;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && internal_frame(&ar))
        for (level = 2; lua_getstack(L, level, &ar); level++) /* past hbdlab's own frames */
            if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !internal_frame(&ar))
                break;
    if (lua_getstack(L, level, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !internal_frame(&ar)) {
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
        lua_insert(L, -2);
        lua_concat(L, 2);
    }
    return lua_error(L);
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
        hl_error(L, "field '%s': expected a number, got %s", name, lua_typename(L, t));
    }
    lua_pop(L, 1);
    return v;
}

const char *hl_push_shown(lua_State *L, const char *s, size_t len)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addchar(&b, '"');
    size_t shown = len < 60 ? len : 60;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
            luaL_addstring(&b, esc);
        } else if (c == '\n')
            luaL_addstring(&b, "\\n");
        else if (c < 32 || c == 127) {
            snprintf(esc, sizeof esc, "\\%u", c);
            luaL_addstring(&b, esc);
        } else
            luaL_addchar(&b, (char)c);
    }
    luaL_addchar(&b, '"');
    if (shown < len)
        luaL_addstring(&b, "...");
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}

void hl_check_plain_table(lua_State *L, int idx, const char *what)
{
    if (!lua_getmetatable(L, idx))
        return;
    static const char *const names[] = {"__index", "__pairs"};
    for (int i = 0; i < 2; i++) {
        lua_pushstring(L, names[i]);
        int t = lua_rawget(L, -2); /* the metatable's own entry: no metamethod runs */
        lua_pop(L, 1);
        if (t != LUA_TNIL) { /* no position: the caller may be hbdlab's own Lua */
            lua_pushfstring(L,
                            "%s: the fields table has a metatable with %s; fields are read as stored in the "
                            "table itself, so the ones %s would give are not seen: copy them into a plain "
                            "table (for k, v in pairs(base) do t[k] = v end)",
                            what, names[i], names[i]);
            lua_error(L);
        }
    }
    lua_pop(L, 1);
}

/* check_plain_table(t, what): hl_check_plain_table for hbdlab's Lua (a table it copies first). */
static int l_check_plain_table(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    hl_check_plain_table(L, 1, luaL_checkstring(L, 2));
    return 0;
}

const char *hl_c_string(lua_State *L, int idx, const char *what)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    const char *nul = s ? memchr(s, 0, len) : NULL;
    if (nul) { /* no position: the host places the message at the user's line */
        lua_pushfstring(L, "%s: %s holds a NUL byte at byte %d (text given to hbdlab cannot hold NUL bytes)", what,
                        hl_push_shown(L, s, len), (int)(nul - s) + 1);
        lua_error(L);
    }
    return s;
}

int hl_holds_nul(lua_State *L, int idx)
{
    size_t len;
    const char *s = lua_type(L, idx) == LUA_TSTRING ? lua_tolstring(L, idx, &len) : NULL;
    return s && memchr(s, 0, len) != NULL;
}

const char *hl_check_c_string(lua_State *L, int arg, const char *what)
{
    luaL_checkstring(L, arg);
    return hl_c_string(L, arg, what);
}

const char *hl_opt_string_field(lua_State *L, int idx, const char *name)
{
    int t = lua_getfield(L, idx, name);
    const char *s = NULL;
    if (t == LUA_TSTRING) {
        char what[96];
        snprintf(what, sizeof what, "field '%s'", name);
        s = hl_c_string(L, -1, what);
    } else if (t != LUA_TNIL) {
        lua_pop(L, 1);
        hl_error(L, "field '%s': expected a string, got %s", name, lua_typename(L, t));
    }
    lua_pop(L, 1); /* the string stays alive: it is referenced by the table */
    return s;
}

int64_t hl_opt_int_field(lua_State *L, int idx, const char *name, int64_t def, int64_t lo, int64_t hi)
{
    double v = hl_opt_number_field(L, idx, name, (double)def);
    /* compare as doubles first: converting a NaN or out-of-range double to an integer is undefined */
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v))
        hl_error(L, "field '%s': %f is not an integer in %I..%I", name, v, (lua_Integer)lo, (lua_Integer)hi);
    return (int64_t)v;
}

int hl_opt_bool_field(lua_State *L, int idx, const char *name, int def)
{
    int t = lua_getfield(L, idx, name);
    int v = def;
    if (t == LUA_TBOOLEAN)
        v = lua_toboolean(L, -1);
    else if (t != LUA_TNIL) {
        /* 0 and "false" are true in Lua: refuse them rather than guess */
        const char *type = luaL_typename(L, -1); /* before lua_tostring turns a number into a string */
        const char *shown = t == LUA_TSTRING || t == LUA_TNUMBER ? lua_tostring(L, -1) : "";
        hl_error(L, "field '%s': expected true or false, got %s %s", name, type, shown);
    }
    lua_pop(L, 1);
    return v;
}

const char *hl_nearest_name(const char *name, const char *const *known)
{
    int best = 99;
    const char *pick = NULL;
    for (int i = 0; known[i]; i++) {
        int d = hl_edit_distance(name, known[i]);
        if (d < best) {
            best = d;
            pick = known[i];
        }
    }
    return pick && best <= (int)strlen(name) / 3 + 1 ? pick : NULL;
}

/* Raises "<what>: unknown field" for the key at stack index kidx. */
static void raise_unknown(lua_State *L, const char *what, int kidx, const char *const *known)
{
    int is_str = lua_type(L, kidx) == LUA_TSTRING;
    const char *k = is_str ? lua_tostring(L, kidx) : luaL_typename(L, kidx);
    const char *near = is_str ? hl_nearest_name(k, known) : NULL;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; known[i]; i++) {
        luaL_addstring(&b, i ? ", " : "");
        luaL_addstring(&b, known[i]);
    }
    luaL_pushresult(&b);
    /* no position: the message names the field, and the host places it at the user's line (a
     * position here was that of hbdlab's own Lua caller, "hbdlab/frontier.lua:556: ") */
    if (near)
        lua_pushfstring(L, "%s: unknown field '%s' (did you mean '%s'? allowed: %s)", what, k, near,
                        lua_tostring(L, -1));
    else
        lua_pushfstring(L, "%s: unknown field '%s' (allowed: %s)", what, k, lua_tostring(L, -1));
    lua_error(L);
}

void hl_check_known(lua_State *L, int idx, const char *const *known, const char *what)
{
    idx = lua_absindex(L, idx);
    /* the names are kept as a set in the registry (keyed by the list's address): each check is a hash lookup */
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, known) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        for (int i = 0; known[i]; i++) {
            lua_pushboolean(L, 1);
            lua_setfield(L, -2, known[i]);
        }
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, known);
    }
    int set = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || lua_rawget(L, set) == LUA_TNIL)
            raise_unknown(L, what, -2, known);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* check_fields(t, {names...}, what): raises on a key of t that is not one of names, with the
 * closest name ("did you mean") or the allowed list. */
static int l_check_fields(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *what = luaL_checkstring(L, 3);
    const char *known[65];
    int n = (int)luaL_len(L, 2);
    luaL_argcheck(L, n <= 64, 2, "at most 64 names");
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 2, i);
        known[i - 1] = luaL_checkstring(L, -1); /* kept alive by the table */
        lua_pop(L, 1);
    }
    known[n] = NULL;
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pop(L, 1);
        int found = 0;
        /* "measured\0x" is not 'measured': hl_c_string raises naming the NUL byte */
        const char *k = lua_type(L, -1) == LUA_TSTRING ? hl_c_string(L, -1, what) : NULL;
        for (int i = 0; i < n && !found && k; i++)
            found = strcmp(known[i], k) == 0;
        if (!found)
            raise_unknown(L, what, -1, known);
    }
    return 0;
}

/* check_list(t, what) -> #t, the booleans among its values: raises unless t's keys are exactly
 * 1..#t. ipairs stops at the first nil, so {1, nil, 3} ran one point and {1, 2, x = 3} dropped x
 * silently; the message names what ("sweep axis 'rate'") and the first missing index or the
 * first key that is not one. */
static int l_check_list(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *what = luaL_checkstring(L, 2);
    lua_Integer n = 0, count = 0, bools = 0;
    int t;
    while ((t = lua_rawgeti(L, 1, n + 1)) != LUA_TNIL) { /* the first border, as ipairs sees it */
        bools += t == LUA_TBOOLEAN;
        lua_pop(L, 1);
        n++;
    }
    lua_pop(L, 1);
    /* 1..n are keys, so the keys are exactly them when there are n: counted first (a 2M-value
     * axis: ~0.02 s less than testing each key), each key tested only when there are more */
    for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1))
        if (++count > n)
            break;
    lua_settop(L, 2);
    for (lua_pushnil(L); count > n && lua_next(L, 1); lua_pop(L, 1)) {
        int is_index = lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1;
        if (is_index && lua_tointeger(L, -2) > n) {
            lua_pushfstring(L,
                            "%s: a hole in the list (value %I is missing, value %I is given): give a list "
                            "without nils",
                            what, n + 1, lua_tointeger(L, -2));
            return lua_error(L);
        }
        if (!is_index) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? hl_push_shown(L, lua_tostring(L, -2), lua_rawlen(L, -2))
                                                           : lua_pushfstring(L, "a %s", luaL_typename(L, -2));
            lua_pushfstring(L, "%s: expected a list {v1, v2, ...}, got a key %s", what, k);
            return lua_error(L);
        }
    }
    lua_pushinteger(L, n);
    lua_pushinteger(L, bools);
    return 2;
}

lua_Integer hl_check_list(lua_State *L, int idx, const char *what)
{
    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, l_check_list);
    lua_pushvalue(L, idx);
    lua_pushstring(L, what);
    lua_call(L, 2, 1);
    lua_Integer n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return n;
}

/* nearest(name, {candidates...}) -> the closest candidate by edit distance, or nil when none is close */
static int l_nearest(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int n = (int)luaL_len(L, 2);
    const char *best_name = NULL;
    int best = 99;
    for (int i = 1; i <= n; i++) {
        if (lua_rawgeti(L, 2, i) == LUA_TSTRING) {
            int d = hl_edit_distance(name, lua_tostring(L, -1));
            if (d < best) {
                best = d;
                best_name = lua_tostring(L, -1); /* kept alive by the table */
            }
        }
        lua_pop(L, 1);
    }
    if (best_name && best <= (int)strlen(name) / 3 + 1)
        lua_pushstring(L, best_name);
    else
        lua_pushnil(L);
    return 1;
}

static int push_text(lua_State *L)
{
    lua_pushstring(L, lua_touserdata(L, 1));
    return 1;
}

/* read_file(path) -> text: a regular text file within the input limit (hl_read_file), or
 * raises naming the file. */
static int l_read_file(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "read_file: the path");
    char *text;
    hl_err err;
    if (hl_read_file(path, &text, &err))
        return hl_raise(L, &err);
    /* copying into a Lua string can raise (memory): copy in a protected call so the buffer is freed */
    lua_pushcfunction(L, push_text);
    lua_pushlightuserdata(L, text);
    int status = lua_pcall(L, 1, 1, 0);
    hl_free(text);
    if (status != LUA_OK)
        return lua_error(L);
    return 1;
}

/* max_input_bytes() -> the input limit in bytes */
static int l_max_input_bytes(lua_State *L)
{
    int64_t b;
    hl_err err;
    if (hl_max_input_bytes(&b, &err))
        return hl_raise(L, &err);
    lua_pushinteger(L, (lua_Integer)b);
    return 1;
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
        luaL_checkstring(L, -1);
        argv[i - 1] = hl_c_string(L, -1, "spawn: an argument"); /* kept alive by the table */
        lua_pop(L, 1);
    }
    argv[n] = NULL;
    /* optional: stdout = "path" redirects the child's standard output */
    /* the paths are checked before the actions exist (a refusal raises: nothing to free yet) */
    const char *out_path =
        lua_getfield(L, 1, "stdout") == LUA_TSTRING ? hl_c_string(L, -1, "spawn field 'stdout'") : NULL;
    const char *err_path =
        lua_getfield(L, 1, "stderr") == LUA_TSTRING ? hl_c_string(L, -1, "spawn field 'stderr'") : NULL;
    const char *cwd = lua_getfield(L, 1, "cwd") == LUA_TSTRING ? hl_c_string(L, -1, "spawn field 'cwd'") : NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path)
        posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (cwd) /* the child starts in this folder */
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    lua_pop(L, 3); /* the strings stay alive in the table */
    pid_t pid;
    posix_spawnattr_t attr; /* the host ignores SIGXFSZ (main.c): a child gets the default back */
    posix_spawnattr_init(&attr);
    sigset_t dfl;
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGXFSZ);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    /* its own process group: stopping it (below) stops what it started too (a shell's children) */
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, (char *const *)argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot run '%s': %s", argv[0], strerror(rc));
        return 2;
    }
    /* The wait polls the interrupt flag (issue 22: a hung gnuplot or command blocked hbdlab, which
     * then ignored Ctrl-C and SIGTERM): on either the child gets SIGTERM, SIGKILL 2 s later if it
     * is still there, and the call raises "interrupted!" (the callers' protected calls then
     * remove their temp files; the host's list removes any left at exit). */
    int status, stopping = 0;
    struct rusage ru;
    double kill_at = 0;
    for (;;) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            lua_pushnil(L);
            lua_pushfstring(L, "waiting for '%s': %s", argv[0], strerror(errno));
            return 2;
        }
        if (hl_bind_interrupt && !stopping) {
            kill(-pid, SIGTERM);
            stopping = 1;
            kill_at = hl_clock_s() + 2;
        } else if (stopping == 1 && hl_clock_s() > kill_at) {
            kill(-pid, SIGKILL);
            stopping = 2;
        }
        struct timespec pause = {0, 2000000}; /* 2 ms */
        nanosleep(&pause, NULL);
    }
    if (stopping)
        return hl_error(L, "interrupted! ('%s' was stopped)", argv[0]);
    lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    lua_pushnil(L);
    lua_pushinteger(L, (lua_Integer)ru.ru_maxrss * 1024); /* peak resident set of the child, bytes */
    return 3;
}

void hl_bind_util(lua_State *L)
{
    static const luaL_Reg fns[] = {{"spawn", l_spawn},
                                   {"check_fields", l_check_fields},
                                   {"check_list", l_check_list},
                                   {"check_plain_table", l_check_plain_table},
                                   {"read_file", l_read_file},
                                   {"max_input_bytes", l_max_input_bytes},
                                   {"nearest", l_nearest},
                                   {"version", l_version},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
