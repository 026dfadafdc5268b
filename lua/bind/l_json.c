/* JSON <-> Lua through cJSON: core.json_encode(value[, pretty]) and
 * core.json_decode(text[, origin]). Objects become tables with string keys,
 * arrays become sequences; JSON null becomes core.null in arrays, absent in objects. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "json_int.h"

enum { MAX_DEPTH = 200 };
static char null_sentinel;

static void add_value(lua_State *L, int idx, cJSON *parent, const char *key, int depth);

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

/* Attaches node to parent (an array when key is NULL) or frees it and raises. */
static void attach(lua_State *L, cJSON *parent, const char *key, cJSON *node)
{
    if (!node || !(key ? cJSON_AddItemToObject(parent, key, node) : cJSON_AddItemToArray(parent, node))) {
        cJSON_Delete(node);
        luaL_error(L, "json_encode: out of memory");
    }
}

/* Adds the members of the table at idx to node (already attached to the tree, so an
 * error raised here (memory, a __tostring that raises) leaves nothing unreachable). */
static void fill_table(lua_State *L, int idx, cJSON *node, int is_arr, size_t n, int depth)
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
            luaL_error(L, "json_encode: object keys must be strings (got a %s key)", luaL_typename(L, -1));
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

static void add_value(lua_State *L, int idx, cJSON *parent, const char *key, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL: attach(L, parent, key, cJSON_CreateNull()); return;
    case LUA_TBOOLEAN: attach(L, parent, key, cJSON_CreateBool(lua_toboolean(L, idx))); return;
    case LUA_TNUMBER: {
        if (lua_isinteger(L, idx)) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
            attach(L, parent, key, cJSON_CreateRaw(buf));
            return;
        }
        double v = lua_tonumber(L, idx);
        if (!isfinite(v)) {
            attach(L, parent, key, cJSON_CreateNull());
            return;
        }
        /* Shortest of %.15g / %.16g / %.17g that reads back exactly (cJSON's own
         * printer accepts a tolerance, which loses the last bits). */
        char buf[40];
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        if (!strpbrk(buf, ".eEn"))
            strcat(buf, ".0"); /* keep it a float when read back */
        attach(L, parent, key, cJSON_CreateRaw(buf));
        return;
    }
    case LUA_TSTRING: attach(L, parent, key, cJSON_CreateString(lua_tostring(L, idx))); return;
    case LUA_TTABLE: {
        if (depth > MAX_DEPTH)
            luaL_error(L, "json_encode: nesting deeper than %d (a cycle?)", MAX_DEPTH);
        luaL_checkstack(L, 8, "json_encode");
        size_t n = 0;
        int arr = is_array(L, idx, &n);
        cJSON *node = arr ? cJSON_CreateArray() : cJSON_CreateObject();
        attach(L, parent, key, node);
        fill_table(L, idx, node, arr, n, depth);
        return;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel) {
            attach(L, parent, key, cJSON_CreateNull());
            return;
        }
        /* fallthrough */
    default:
        if (luaL_callmeta(L, idx, "__tostring")) { /* may raise: nothing of this value is allocated yet */
            if (lua_type(L, -1) != LUA_TSTRING)
                luaL_error(L, "json_encode: __tostring of a %s value returned a %s", luaL_typename(L, idx),
                           luaL_typename(L, -1));
            attach(L, parent, key, cJSON_CreateString(lua_tostring(L, -1)));
            lua_pop(L, 1);
            return;
        }
        luaL_error(L, "json_encode: cannot encode a %s value", luaL_typename(L, idx));
    }
}

/* Checks that the value at idx can be encoded (types, string keys, depth)
 * before anything is allocated, so that encoding itself cannot raise and leak. */
static void check_encodable(lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TBOOLEAN:
    case LUA_TNUMBER:
    case LUA_TSTRING: return;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel)
            return;
        break;
    case LUA_TTABLE: {
        if (depth > MAX_DEPTH)
            luaL_error(L, "json_encode: nesting deeper than %d (a cycle?)", MAX_DEPTH);
        luaL_checkstack(L, 4, "json_encode");
        size_t n;
        int array = is_array(L, idx, &n);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (!array && lua_type(L, -2) != LUA_TSTRING)
                luaL_error(L, "json_encode: object keys must be strings (got a %s key)", luaL_typename(L, -2));
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
    luaL_error(L, "json_encode: cannot encode a %s value", luaL_typename(L, idx));
}

/* The tree being built: every node hangs from holder (an array), so whatever raises
 * while encoding, l_encode frees it all. */
typedef struct encoding {
    cJSON *holder;
    char *text;
} encoding;

static int encode_protected(lua_State *L)
{
    encoding *e = lua_touserdata(L, 2);
    int pretty = lua_toboolean(L, 3);
    lua_settop(L, 1);
    check_encodable(L, 1, 0); /* clear errors for wrong types before anything is built */
    e->holder = cJSON_CreateArray();
    if (!e->holder)
        return luaL_error(L, "json_encode: out of memory");
    add_value(L, 1, e->holder, NULL, 0);
    e->text = pretty ? cJSON_Print(e->holder->child) : cJSON_PrintUnformatted(e->holder->child);
    if (!e->text)
        return luaL_error(L, "json_encode: out of memory");
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
    cJSON_Delete(e.holder);
    cJSON_free(e.text);
    if (status != LUA_OK)
        return lua_error(L);
    return 1;
}

static void decode(lua_State *L, const cJSON *item, const char *origin, int depth)
{
    if (depth > MAX_DEPTH)
        luaL_error(L, "%s: JSON nesting deeper than %d", origin, MAX_DEPTH);
    luaL_checkstack(L, 4, "json_decode");
    if (cJSON_IsNull(item))
        lua_pushlightuserdata(L, &null_sentinel);
    else if (cJSON_IsBool(item))
        lua_pushboolean(L, cJSON_IsTrue(item));
    else if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (v == floor(v) && fabs(v) < 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)v);
        else
            lua_pushnumber(L, v);
    } else if (cJSON_IsString(item))
        lua_pushstring(L, item->valuestring);
    else if (cJSON_IsArray(item)) {
        lua_createtable(L, cJSON_GetArraySize(item), 0);
        int i = 1;
        for (const cJSON *c = item->child; c; c = c->next) {
            decode(L, c, origin, depth + 1);
            lua_rawseti(L, -2, i++);
        }
    } else if (cJSON_IsObject(item)) {
        lua_newtable(L);
        for (const cJSON *c = item->child; c; c = c->next) { /* repeated keys were refused before */
            if (cJSON_IsNull(c))
                continue;
            decode(L, c, origin, depth + 1);
            lua_setfield(L, -2, c->string);
        }
    } else {
        luaL_error(L, "%s: unsupported JSON value", origin);
    }
}

static int decode_protected(lua_State *L)
{
    decode(L, lua_touserdata(L, 1), lua_tostring(L, 2), 0);
    return 1;
}

static int l_decode(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *origin = luaL_optstring(L, 2, "json");
    if (strlen(text) != len)
        return luaL_error(L, "%s: JSON text contains a NUL byte at byte %d", origin, (int)strlen(text));
    int64_t bad = hl_utf8_invalid_offset(text, (int64_t)len);
    if (bad >= 0)
        return luaL_error(L, "%s: byte %d: invalid UTF-8", origin, (int)bad);
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        text += 3;
    int64_t nul = hl_json_nul_escape_offset(text);
    if (nul >= 0)
        return luaL_error(L, "%s: byte %I: \\u0000 (a NUL character) is not allowed in JSON text", origin,
                          (lua_Integer)nul);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long line = 1, col = 1;
        for (const char *p = text; at && p < at && *p; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else
                col++;
        }
        return luaL_error(L, "%s:%d:%d: malformed JSON%s", origin, (int)line, (int)col,
                          at && !*at ? " (unexpected end of input)" : "");
    }
    hl_err err;
    if (hl_json_check_duplicates(root, origin, "$", &err)) {
        cJSON_Delete(root);
        return hl_raise(L, &err);
    }
    /* Convert in a protected call so that an error cannot leak the tree. */
    lua_pushcfunction(L, decode_protected);
    lua_pushlightuserdata(L, root);
    lua_pushstring(L, origin);
    int status = lua_pcall(L, 2, 1, 0);
    cJSON_Delete(root);
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
