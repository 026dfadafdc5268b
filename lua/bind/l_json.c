/* JSON <-> Lua through the core's JSON front end (hbdlab/json.h): core.json_encode(value[,
 * pretty]) and core.json_decode(text[, origin]).
 * Objects become tables with string keys, arrays become sequences; JSON null becomes
 * core.null in arrays, absent in objects. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "hbdlab/io.h"
#include "hbdlab/json.h"
#include "result_view.h"

enum { MAX_DEPTH = 200 };
static char null_sentinel;

static void add_value(lua_State *L, int idx, hl_json *parent, const char *key, int depth);

/* Counts the keys of the table at idx into *len; true when they are exactly 1..len. */
static int is_array(lua_State *L, int idx, size_t *len)
{
    size_t n = 0, max = 0;
    int ints = 1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1) {
            size_t k = (size_t)lua_tointeger(L, -1);
            if (k > max)
                max = k;
        } else {
            ints = 0;
        }
        n++;
    }
    *len = n;
    return ints && n > 0 && max == n;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Attaches node to parent (an array when key is NULL) or (node freed) raises. */
static void attach(lua_State *L, hl_json *parent, const char *key, hl_json *node)
{
    if (!hl_json_add(parent, key, node))
        hl_error(L, "json_encode: out of memory");
}

/* Adds the members of the table at idx to node (already attached to the tree, so an
 * error raised here (memory, a __tostring that raises) leaves nothing unreachable). */
static void fill_table(lua_State *L, int idx, hl_json *node, int is_arr, size_t n, int depth)
{
    if (is_arr) {
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, idx, (lua_Integer)i);
            add_value(L, lua_gettop(L), node, NULL, depth + 1);
            lua_pop(L, 1);
        }
        return;
    }
    if (n == 0)
        return;
    /* the key array is a Lua userdata: collected if anything below raises */
    const char **keys = lua_newuserdatauv(L, n * sizeof *keys, 0);
    size_t k = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            hl_error(L, "json_encode: object keys must be strings (got a %s key)", luaL_typename(L, -1));
        if (k < n)
            keys[k++] = lua_tostring(L, -1); /* alive: the key is in the table */
    }
    qsort(keys, k, sizeof *keys, cmp_str);
    for (size_t i = 0; i < k; i++) {
        lua_getfield(L, idx, keys[i]);
        add_value(L, lua_gettop(L), node, keys[i], depth + 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1); /* keys */
}

static void add_value(lua_State *L, int idx, hl_json *parent, const char *key, int depth)
{
    if (hl_sweep_row_table(L, idx)) /* a sweep row view (l_sweep_rows.c) as the table it reads as */
        lua_replace(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: attach(L, parent, key, hl_json_new(HL_JSON_NULL)); return;
    case LUA_TBOOLEAN: attach(L, parent, key, hl_json_new_bool(lua_toboolean(L, idx))); return;
    case LUA_TNUMBER: /* floats: the shortest text that reads back exactly (core json.c) */
        attach(L, parent, key,
               lua_isinteger(L, idx) ? hl_json_new_integer((int64_t)lua_tointeger(L, idx))
                                     : hl_json_new_number(lua_tonumber(L, idx)));
        return;
    case LUA_TSTRING: attach(L, parent, key, hl_json_new_string(lua_tostring(L, idx))); return;
    case LUA_TTABLE: {
        if (depth > MAX_DEPTH)
            hl_error(L, "json_encode: nesting deeper than %d (a cycle?)", MAX_DEPTH);
        luaL_checkstack(L, 8, "json_encode");
        if (hl_result_view_push_plain(L, idx)) { /* a result view: the fields it shows */
            add_value(L, lua_gettop(L), parent, key, depth);
            lua_pop(L, 1);
            return;
        }
        size_t n = 0;
        int arr = is_array(L, idx, &n);
        hl_json *node = hl_json_new(arr ? HL_JSON_ARRAY : HL_JSON_OBJECT);
        attach(L, parent, key, node);
        fill_table(L, idx, node, arr, n, depth);
        return;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) {
            attach(L, parent, key, hl_json_new(HL_JSON_NULL));
            return;
        }
        /* fallthrough */
    default:
        if (luaL_callmeta(L, idx, "__tostring")) { /* may raise: nothing of this value is allocated yet */
            if (lua_type(L, -1) != LUA_TSTRING)
                hl_error(L, "json_encode: __tostring of a %s value returned a %s", luaL_typename(L, idx),
                         luaL_typename(L, -1));
            attach(L, parent, key, hl_json_new_string(lua_tostring(L, -1)));
            lua_pop(L, 1);
            return;
        }
        hl_error(L, "json_encode: cannot encode a %s value", luaL_typename(L, idx));
    }
}

/* Raises unless the string at idx is UTF-8 without NUL bytes: JSON text written here is
 * read back by the front end, which refuses both (a NUL would also cut the C string). */
static void check_string(lua_State *L, int idx, const char *what)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    const char *nul = memchr(s, '\0', len);
    int64_t bad = hl_utf8_invalid_offset(s, (int64_t)len);
    if (nul)
        hl_error(L, "json_encode: %s holds a NUL byte at byte %d (not allowed in JSON text here)", what,
                 (int)(nul - s));
    if (bad >= 0)
        hl_error(L, "json_encode: %s is not UTF-8 (byte %d)", what, (int)bad);
}

/* Checks that the value at idx can be encoded (types, string keys, depth)
 * before anything is allocated, so that encoding itself cannot raise and leak. */
static void check_encodable(lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    if (hl_sweep_row_table(L, idx)) /* a sweep row view (l_sweep_rows.c) as the table it reads as */
        lua_replace(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TBOOLEAN:
    case LUA_TNUMBER: return;
    case LUA_TSTRING: check_string(L, idx, "a string"); return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel)
            return;
        break;
    case LUA_TTABLE: {
        if (depth > MAX_DEPTH)
            hl_error(L, "json_encode: nesting deeper than %d (a cycle?)", MAX_DEPTH);
        luaL_checkstack(L, 4, "json_encode");
        if (hl_result_view_push_plain(L, idx)) {
            check_encodable(L, -1, depth);
            lua_pop(L, 1);
            return;
        }
        size_t n;
        int array = is_array(L, idx, &n);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (!array && lua_type(L, -2) != LUA_TSTRING)
                hl_error(L, "json_encode: object keys must be strings (got a %s key)", luaL_typename(L, -2));
            if (!array)
                check_string(L, -2, "a key");
            check_encodable(L, -1, depth + 1);
            lua_pop(L, 1);
        }
        return;
    }
    default: break;
    }
    if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
        lua_pop(L, 1);
        return;
    }
    hl_error(L, "json_encode: cannot encode a %s value", luaL_typename(L, idx));
}

/* The tree being built: every node hangs from holder (an array), so whatever raises
 * while encoding, l_encode frees it all. */
typedef struct encoding {
    hl_json *holder;
    char *text;
} encoding;

static int encode_protected(lua_State *L)
{
    encoding *e = lua_touserdata(L, 2);
    int pretty = lua_toboolean(L, 3);
    lua_settop(L, 1);
    check_encodable(L, 1, 0); /* clear errors for wrong types before anything is built */
    e->holder = hl_json_new(HL_JSON_ARRAY);
    if (!e->holder)
        return hl_error(L, "json_encode: out of memory");
    add_value(L, 1, e->holder, NULL, 0);
    e->text = hl_json_print(hl_json_first(e->holder), pretty);
    if (!e->text)
        return hl_error(L, "json_encode: out of memory");
    lua_pushstring(L, e->text); /* may raise (memory): text is freed by the caller either way */
    return 1;
}

static int l_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    encoding e = {NULL, NULL};
    lua_settop(L, 2);
    lua_pushcfunction(L, encode_protected);
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, &e);
    lua_pushvalue(L, 2);
    int status = lua_pcall(L, 3, 1, 0);
    hl_json_free(e.holder);
    hl_json_free_text(e.text);
    if (status != LUA_OK)
        return lua_error(L);
    return 1;
}

/* Pushes the Lua form of v (a tree of the core's JSON front end, hbdlab/json.h). */
static void decode(lua_State *L, const hl_json *v, const char *origin, int depth)
{
    if (depth > MAX_DEPTH)
        hl_error(L, "%s: JSON nesting deeper than %d", origin, MAX_DEPTH);
    luaL_checkstack(L, 4, "json_decode");
    switch (hl_json_kind_of(v)) {
    case HL_JSON_NULL: lua_pushlightuserdata(L, &null_sentinel); break;
    case HL_JSON_BOOL: lua_pushboolean(L, hl_json_true(v)); break;
    case HL_JSON_NUMBER: {
        double x = hl_json_number(v);
        if (x == floor(x) && fabs(x) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)x);
        else
            lua_pushnumber(L, x);
        break;
    }
    case HL_JSON_STRING: lua_pushstring(L, hl_json_string(v)); break;
    case HL_JSON_ARRAY: {
        lua_createtable(L, hl_json_count(v), 0);
        int i = 1;
        for (const hl_json *c = hl_json_first(v); c; c = hl_json_next(c)) {
            decode(L, c, origin, depth + 1);
            lua_rawseti(L, -2, i++);
        }
        break;
    }
    case HL_JSON_OBJECT:
        lua_newtable(L);
        for (const hl_json *c = hl_json_first(v); c; c = hl_json_next(c)) { /* repeated keys were refused */
            if (hl_json_kind_of(c) == HL_JSON_NULL)
                continue;
            decode(L, c, origin, depth + 1);
            lua_setfield(L, -2, hl_json_key(c));
        }
        break;
    default: hl_error(L, "%s: unsupported JSON value", origin);
    }
}

static int decode_protected(lua_State *L)
{
    decode(L, lua_touserdata(L, 1), lua_tostring(L, 2), 0);
    return 1;
}

/* json_decode(text[, origin]): the core's JSON front end (hl_json_parse: NUL bytes, UTF-8,
 * "\u0000", repeated keys, origin:line:col), then the tree as Lua values. */
static int l_decode(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *origin = luaL_optstring(L, 2, "json");
    hl_err err;
    hl_json *root = NULL;
    if (hl_json_parse(text, (int64_t)len, origin, &root, &err))
        return hl_raise(L, &err);
    /* Convert in a protected call so that an error cannot leak the tree. */
    lua_pushcfunction(L, decode_protected);
    lua_pushlightuserdata(L, root);
    lua_pushstring(L, origin);
    int status = lua_pcall(L, 2, 1, 0);
    hl_json_free(root);
    if (status != LUA_OK)
        return lua_error(L);
    return 1;
}

void hl_bind_json(lua_State *L)
{
    static const luaL_Reg fns[] = {{"json_encode", l_encode}, {"json_decode", l_decode}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
    lua_pushlightuserdata(L, &null_sentinel);
    lua_setfield(L, -2, "null");
}
