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

static cJSON *encode(lua_State *L, int idx, int depth);

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

static cJSON *encode_table(lua_State *L, int idx, int depth)
{
    size_t n = 0;
    if (depth > MAX_DEPTH)
        luaL_error(L, "json_encode: nesting deeper than %d (a cycle?)", MAX_DEPTH);
    luaL_checkstack(L, 8, "json_encode");
    if (is_array(L, idx, &n)) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, idx, (lua_Integer)i);
            cJSON_AddItemToArray(arr, encode(L, lua_gettop(L), depth + 1));
            lua_pop(L, 1);
        }
        return arr;
    }
    cJSON *obj = cJSON_CreateObject();
    if (n == 0)
        return obj;
    const char **keys = malloc(n * sizeof *keys);
    size_t k = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            free(keys);
            cJSON_Delete(obj);
            luaL_error(L, "json_encode: object keys must be strings (got a %s key)", luaL_typename(L, -1));
        }
        if (keys)
            keys[k++] = lua_tostring(L, -1); /* alive: the key is in the table */
    }
    if (!keys) {
        cJSON_Delete(obj);
        luaL_error(L, "json_encode: out of memory");
    }
    qsort(keys, k, sizeof *keys, cmp_str);
    for (size_t i = 0; i < k; i++) {
        lua_getfield(L, idx, keys[i]);
        cJSON_AddItemToObject(obj, keys[i], encode(L, lua_gettop(L), depth + 1));
        lua_pop(L, 1);
    }
    free(keys);
    return obj;
}

static cJSON *encode(lua_State *L, int idx, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return cJSON_CreateNull();
    case LUA_TBOOLEAN: return cJSON_CreateBool(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
        if (lua_isinteger(L, idx)) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
            return cJSON_CreateRaw(buf);
        }
        double v = lua_tonumber(L, idx);
        if (!isfinite(v))
            return cJSON_CreateNull();
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
        return cJSON_CreateRaw(buf);
    }
    case LUA_TSTRING: return cJSON_CreateString(lua_tostring(L, idx));
    case LUA_TTABLE: return encode_table(L, idx, depth);
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_sentinel)
            return cJSON_CreateNull();
        /* fallthrough */
    default:
        if (luaL_callmeta(L, idx, "__tostring")) {
            cJSON *s = cJSON_CreateString(lua_tostring(L, -1));
            lua_pop(L, 1);
            return s;
        }
        luaL_error(L, "json_encode: cannot encode a %s value", luaL_typename(L, idx));
        return NULL;
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

static int l_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    int pretty = lua_toboolean(L, 2);
    lua_settop(L, 1);
    check_encodable(L, 1, 0);
    cJSON *root = encode(L, 1, 0);
    char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return luaL_error(L, "json_encode: out of memory");
    lua_pushstring(L, text);
    cJSON_free(text);
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
    lua_pushcfunction(L, l_encode);
    lua_setfield(L, -2, "json_encode");
    lua_pushcfunction(L, l_decode);
    lua_setfield(L, -2, "json_decode");
    lua_pushlightuserdata(L, &null_sentinel);
    lua_setfield(L, -2, "null");
}
