/* The rows of an in-memory hl.sweep as light views over the sweep's compact store
 * (hl_sweep_store, core/src/sweep.c): a row is an 8-byte userdata holding its point's index,
 * its fields read on access from the store with the names, types and values a row table
 * had (the axes, every result field flat with dotted keys and the friendly aliases, or
 * `error`). One metatable per sweep, whose closures hold the store as an upvalue, keeps the
 * store alive while any row is; the store is freed by its __gc when the last row is gone.
 *
 * A row takes about 48 bytes of Lua memory plus its slot in the rows array (16) and its
 * 532 bytes in the store (the result values and a fault code), where a row table took
 * 3,128 bytes plus a 1,048-byte hl_point.
 *
 * Writes (row.note = x, row.ttft_s = nil) go to a table of the row's own, created on the first
 * write: reads and pairs() see them over the stored values. pairs() gives the stored keys in a
 * fixed order (the axes as given, the result fields in the result table's order, the friendly
 * aliases, `error`), then the written keys; #row is that of the written table (0 unwritten). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

#define ROW_NAME "hbdlab.sweep_row"

/* One key of a sweep's rows and where its value comes from (-1 where it does not). */
typedef struct row_key {
    int32_t axis;     /* the axis whose value it is (the first so named) */
    int32_t shown;    /* 1: the axis is relabelled (a friendly alias or booleans): its value wins */
    int32_t field;    /* a result field (an evaluated point's value wins over an axis's) */
    int32_t friendly; /* a friendly alias: the field and its factor */
    int32_t friendly_field;
    double scale;
    int32_t error; /* 1: `error` (a failed point's message) */
} row_key;

/* The store userdata: the sweep's points and how its rows read them. */
typedef struct rows_store {
    hl_sweep_store st;
    int32_t na, zip;
    int32_t *axis_len; /* na: values per axis */
    row_key *keys;     /* n_keys, in pairs() order */
    int32_t n_keys;
    /* the keys by the address of their Lua string: Lua 5.4 interns short strings (up to 40 bytes),
     * so a string equal to a key is the key's object and is found here without a table lookup.
     * Slots hold key index + 1 (0 empty), n_slots a power of two >= 4 n_keys. */
    const char **slot_key;
    int32_t *slot_index;
    uint32_t n_slots;
    int32_t interned;   /* every key checked interned (a copy pushed is the same string); else the
                       * keymap table is asked */
    int32_t has_writes; /* a row was written to: reads look at the written tables first */
} rows_store;

/* Upvalues of the row metamethods. */
enum { UP_STORE = 1, UP_KEYMAP, UP_KEYS, UP_AXVALS, UP_WRITES, N_UP };

static char deleted_key; /* a written nil over a stored key: the value of the key in a row's writes */
/* The rows' metatable also holds the store, the keymap, the axis values and the written tables
 * under these light-userdata keys (no name a script can reach), for the whole-row readers below
 * (to_csv, rows.columns, JSON), which run outside the metamethods' closures. */
static char mt_store_key, mt_keymap_key, mt_keys_key, mt_axvals_key, mt_writes_key;

static int store_gc(lua_State *L)
{
    rows_store *rs = lua_touserdata(L, 1);
    hl_sweep_store_free(&rs->st);
    free(rs->axis_len);
    free(rs->keys);
    free(rs->slot_key);
    free(rs->slot_index);
    rs->axis_len = NULL;
    rs->keys = NULL;
    rs->slot_key = NULL;
    rs->slot_index = NULL;
    return 0;
}

/* The point index of the row at idx (0 when idx is no row of this store: memory-safe). */
static int64_t row_index(lua_State *L, int idx, const rows_store *rs)
{
    const int64_t *p = lua_touserdata(L, idx);
    if (p && lua_rawlen(L, idx) == sizeof *p && rs->st.n == 0 && !rs->keys) /* store_gc ran */
        hl_error(L, "a sweep row used after its sweep was collected (a row a finaliser kept: keep the "
                    "rows themselves, or a copy from core.sweep_row_table)");
    if (!p || lua_rawlen(L, idx) != sizeof *p || *p < 0 || *p >= rs->st.n) /* a light userdata's rawlen is 0 */
        hl_error(L, "a sweep row's metamethod called on something else");
    return *p;
}

/* Pushes axis a's value at point i (as the row table held it: numbers as floats, strings,
 * objects by name, relabelled axes' given values). */
static void push_axis(lua_State *L, const rows_store *rs, int av, int64_t i, int32_t a)
{
    int64_t value_index;
    if (rs->zip) {
        value_index = i;
    } else {
        int64_t rest = i;
        for (int32_t b = rs->na - 1; b > a; b--)
            rest /= rs->axis_len[b];
        value_index = rest % rs->axis_len[a];
    }
    lua_rawgeti(L, av, a + 1);
    lua_rawgeti(L, -1, (lua_Integer)value_index + 1);
    lua_remove(L, -2);
}

/* Pushes stored key k of point i (nil where the row table had no such key); av: the axis values
 * (an upvalue index in the metamethods, a stack slot in the whole-row readers). */
static void push_stored(lua_State *L, const rows_store *rs, int av, int64_t i, const row_key *k)
{
    int32_t fault = rs->st.fault[i];
    if (k->axis >= 0 && k->shown) {
        push_axis(L, rs, av, i, k->axis);
    } else if (fault == 0) {
        const double *v = rs->st.values + i * HL_POINT_VALUES;
        if (k->field >= 0)
            hl_push_result_value(L, k->field, v[k->field]); /* NaN (unknown) reads as nil */
        else if (k->friendly >= 0)
            lua_pushnumber(L, v[k->friendly_field] * k->scale);
        else if (k->axis >= 0)
            push_axis(L, rs, av, i, k->axis);
        else
            lua_pushnil(L);
    } else if (k->error) {
        if (fault > 0)
            lua_pushstring(L, rs->st.messages[fault - 1]);
        else
            lua_pushliteral(L, "out of memory keeping the message of this point's error");
    } else if (k->axis >= 0) {
        push_axis(L, rs, av, i, k->axis);
    } else {
        lua_pushnil(L);
    }
}

/* Pushes row i's written table and returns 1, or returns 0 (nothing pushed) when it has none. */
static int push_writes(lua_State *L, const rows_store *rs, int64_t i)
{
    if (!rs->has_writes)
        return 0;
    if (lua_rawgeti(L, lua_upvalueindex(UP_WRITES), (lua_Integer)i) == LUA_TTABLE)
        return 1;
    lua_pop(L, 1);
    return 0;
}

static uint32_t slot_of(const rows_store *rs, const char *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & (rs->n_slots - 1);
}

/* The stored key index of the key at idx, or -1; km: the keymap (an upvalue index or a slot). */
static int32_t key_of_in(lua_State *L, const rows_store *rs, int km, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        return -1;
    if (rs->interned) { /* a string equal to a key has its length, so is interned too: the key itself */
        const char *p = lua_tostring(L, idx);
        for (uint32_t h = slot_of(rs, p); rs->slot_index[h]; h = (h + 1) & (rs->n_slots - 1))
            if (rs->slot_key[h] == p)
                return rs->slot_index[h] - 1;
        return -1;
    }
    lua_pushvalue(L, idx);
    int32_t k = lua_rawget(L, km) == LUA_TNUMBER ? (int32_t)lua_tointeger(L, -1) - 1 : -1;
    lua_pop(L, 1);
    return k;
}

/* key_of_in with the metamethods' keymap */
static int32_t key_of(lua_State *L, const rows_store *rs, int idx)
{
    return key_of_in(L, rs, lua_upvalueindex(UP_KEYMAP), idx);
}

/* row[key] */
static int row_get(lua_State *L)
{
    const rows_store *rs = lua_touserdata(L, lua_upvalueindex(UP_STORE));
    int64_t i = row_index(L, 1, rs);
    if (push_writes(L, rs, i)) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, -2) != LUA_TNIL) {
            if (lua_touserdata(L, -1) == &deleted_key)
                lua_pushnil(L);
            return 1;
        }
        lua_pop(L, 2);
    }
    int32_t k = key_of(L, rs, 2);
    if (k < 0)
        return 0;
    push_stored(L, rs, lua_upvalueindex(UP_AXVALS), i, &rs->keys[k]);
    return 1;
}

/* row[key] = value: into the row's written table (created on the first write). */
static int row_set(lua_State *L)
{
    rows_store *rs = lua_touserdata(L, lua_upvalueindex(UP_STORE));
    int64_t i = row_index(L, 1, rs);
    if (lua_isnil(L, 2))
        return hl_error(L, "index is nil");
    if (lua_type(L, 2) == LUA_TNUMBER && isnan(lua_tonumber(L, 2)))
        return hl_error(L, "index is NaN");
    if (!push_writes(L, rs, i)) {
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, lua_upvalueindex(UP_WRITES), (lua_Integer)i);
        rs->has_writes = 1;
    }
    lua_pushvalue(L, 2);
    if (lua_isnil(L, 3) && key_of(L, rs, 2) >= 0)
        lua_pushlightuserdata(L, &deleted_key); /* hides the stored value */
    else
        lua_pushvalue(L, 3);
    lua_rawset(L, -3);
    return 0;
}

/* #row: the border of its written table (a row table's was 0 unless written to) */
static int row_len(lua_State *L)
{
    const rows_store *rs = lua_touserdata(L, lua_upvalueindex(UP_STORE));
    int64_t i = row_index(L, 1, rs);
    lua_Integer n = 0;
    if (push_writes(L, rs, i))
        n = (lua_Integer)lua_rawlen(L, -1);
    lua_pushinteger(L, n);
    return 1;
}

/* next(row, key) for pairs(): the stored keys in order, then the written ones. */
static int row_next(lua_State *L)
{
    const rows_store *rs = lua_touserdata(L, lua_upvalueindex(UP_STORE));
    int64_t i = row_index(L, 1, rs);
    lua_settop(L, 2);
    int w = push_writes(L, rs, i) ? 3 : 0;
    int first = lua_type(L, 2) == LUA_TNIL;
    int32_t from = first ? -1 : key_of(L, rs, 2);
    if (first || from >= 0) {
        for (int32_t k = from + 1; k < rs->n_keys; k++) {
            lua_rawgeti(L, lua_upvalueindex(UP_KEYS), k + 1); /* the key */
            if (w) {
                lua_pushvalue(L, -1);
                if (lua_rawget(L, w) != LUA_TNIL) { /* written over */
                    if (lua_touserdata(L, -1) == &deleted_key) {
                        lua_pop(L, 2);
                        continue;
                    }
                    return 2;
                }
                lua_pop(L, 1);
            }
            push_stored(L, rs, lua_upvalueindex(UP_AXVALS), i, &rs->keys[k]);
            if (!lua_isnil(L, -1))
                return 2;
            lua_pop(L, 2);
        }
        if (!w)
            return 0;
        lua_pushnil(L); /* the written keys from the first */
    } else {
        if (!w)
            return hl_error(L, "invalid key to 'next'");
        lua_pushvalue(L, 2);
    }
    while (lua_next(L, w)) { /* skips the stored keys (given above) and deletions */
        if (key_of(L, rs, -2) < 0 && lua_touserdata(L, -1) != &deleted_key)
            return 2;
        lua_pop(L, 1);
    }
    return 0;
}

static int row_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(N_UP)); /* row_next, a closure over the same upvalues */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

int hl_is_sweep_row(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx))
        return 0;
    int is = lua_getfield(L, -1, "__name") == LUA_TSTRING && strcmp(lua_tostring(L, -1), ROW_NAME) == 0;
    lua_pop(L, 2);
    return is;
}

/* ---- whole-row reads from C: to_csv, rows.columns, JSON --------------------------------------
 * They read a row's stored values straight from the store, as the metamethods do, without a
 * metamethod call and a key lookup per field. A row with a written table goes the ordinary way. */

/* Stack slots of a reader from r->slot: the rows' metatable, its keymap, key array, axis values,
 * written tables, and a scratch userdata (the columns' keys or the keys seen). */
enum { SLOT_MT, SLOT_KEYMAP, SLOT_KEYS, SLOT_AXVALS, SLOT_WRITES, SLOT_SCRATCH, N_SLOTS };

void hl_rows_reader_open(lua_State *L, hl_rows_reader *r)
{
    luaL_checkstack(L, N_SLOTS + 4, "sweep rows");
    memset(r, 0, sizeof *r);
    r->slot = lua_gettop(L) + 1;
    for (int k = 0; k < N_SLOTS; k++)
        lua_pushnil(L);
}

/* 1 when the value at idx is a row view without written values, with *i its point and the
 * reader holding its metatable's tables; else 0, the stack as it was. Sets r->changed when the
 * rows are another sweep's than the last (the caller clears it once it has rebuilt what it keeps
 * per sweep). */
static int reader_row(lua_State *L, hl_rows_reader *r, int idx, int64_t *i)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx))
        return 0;
    const void *mt = lua_topointer(L, -1);
    if (mt != r->mt) {
        if (lua_rawgetp(L, -1, &mt_store_key) != LUA_TUSERDATA) {
            lua_pop(L, 2);
            return 0;
        }
        r->rs = lua_touserdata(L, -1);
        lua_pop(L, 1);
        static char *const keys[] = {&mt_keymap_key, &mt_keys_key, &mt_axvals_key, &mt_writes_key};
        for (int k = 0; k < 4; k++) {
            lua_rawgetp(L, -1, keys[k]);
            lua_replace(L, r->slot + SLOT_KEYMAP + k);
        }
        lua_replace(L, r->slot + SLOT_MT); /* keeps the store alive while it is read */
        r->mt = mt;
        r->changed = 1;
    } else {
        lua_pop(L, 1);
    }
    const rows_store *rs = r->rs;
    const int64_t *p = lua_touserdata(L, idx);
    if (lua_rawlen(L, idx) != sizeof *p || *p < 0 || *p >= rs->st.n)
        return 0;
    *i = *p;
    if (rs->has_writes) {
        int written = lua_rawgeti(L, r->slot + SLOT_WRITES, (lua_Integer)*i) == LUA_TTABLE;
        lua_pop(L, 1);
        if (written)
            return 0;
    }
    return 1;
}

int hl_rows_reader_cells(lua_State *L, hl_rows_reader *r, int row, int cols, lua_Integer ncols)
{
    row = lua_absindex(L, row);
    cols = lua_absindex(L, cols);
    int64_t i;
    if (ncols > INT32_MAX / 8 || !lua_checkstack(L, (int)ncols + 4) || !reader_row(L, r, row, &i))
        return 0;
    const rows_store *rs = r->rs;
    if (r->changed || r->ncols != ncols) { /* each column's stored key in these rows (-1: none, reads nil) */
        int32_t *ck = lua_newuserdatauv(L, sizeof *ck * (size_t)(ncols > 0 ? ncols : 1), 0);
        lua_replace(L, r->slot + SLOT_SCRATCH);
        for (lua_Integer j = 0; j < ncols; j++) {
            lua_geti(L, cols, j + 1);
            ck[j] = key_of_in(L, rs, r->slot + SLOT_KEYMAP, -1);
            lua_pop(L, 1);
        }
        r->col_key = ck;
        r->ncols = ncols;
        r->changed = 0;
    }
    for (lua_Integer j = 0; j < ncols; j++) {
        if (r->col_key[j] < 0)
            lua_pushnil(L);
        else
            push_stored(L, rs, r->slot + SLOT_AXVALS, i, &rs->keys[r->col_key[j]]);
    }
    return 1;
}

/* Appends key `k` (at the top, popped) to list (its length *n) unless set holds it. */
static void add_new_key(lua_State *L, int set, int list, lua_Integer *n)
{
    lua_pushvalue(L, -1);
    if (lua_rawget(L, set) == LUA_TNIL) {
        lua_pushvalue(L, -2);
        lua_pushboolean(L, 1);
        lua_rawset(L, set);
        lua_pushvalue(L, -2);
        lua_rawseti(L, list, ++*n);
    }
    lua_pop(L, 2);
}

/* core.rows_keys(rows) -> the keys of rows[1], rows[2], ... (up to the first nil), each once, in
 * the order pairs() first gives them (rows.columns): row views read from their store, a key of a
 * sweep's rows looked at until one row has it; other rows through pairs(). */
static int l_rows_keys(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_newtable(L); /* 2: set */
    lua_newtable(L); /* 3: list */
    lua_Integer n = 0;
    hl_rows_reader r;
    hl_rows_reader_open(L, &r);
    unsigned char *seen = NULL; /* per stored key of the current rows: already in the list */
    for (lua_Integer ri = 1; lua_geti(L, 1, ri) != LUA_TNIL; ri++) {
        int row = lua_gettop(L);
        int64_t i;
        if (reader_row(L, &r, row, &i)) {
            const rows_store *rs = r.rs;
            if (r.changed) {
                seen = lua_newuserdatauv(L, (size_t)rs->n_keys + 1, 0);
                memset(seen, 0, (size_t)rs->n_keys + 1);
                lua_replace(L, r.slot + SLOT_SCRATCH);
                r.changed = 0;
            }
            for (int32_t k = 0; k < rs->n_keys; k++) {
                if (seen[k])
                    continue;
                push_stored(L, rs, r.slot + SLOT_AXVALS, i, &rs->keys[k]);
                int present = !lua_isnil(L, -1);
                lua_pop(L, 1);
                if (present) {
                    seen[k] = 1;
                    lua_rawgeti(L, r.slot + SLOT_KEYS, k + 1);
                    add_new_key(L, 2, 3, &n);
                }
            }
        } else if (luaL_getmetafield(L, row, "__pairs") != LUA_TNIL) {
            lua_pushvalue(L, row);
            lua_call(L, 1, 3); /* next, state, control */
            for (;;) {
                lua_pushvalue(L, -3);
                lua_pushvalue(L, -3);
                lua_pushvalue(L, -3);
                lua_call(L, 2, 2);
                if (lua_isnil(L, -2)) {
                    lua_pop(L, 2);
                    break;
                }
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_replace(L, -3); /* the next call's control */
                add_new_key(L, 2, 3, &n);
            }
            lua_pop(L, 3);
        } else if (lua_istable(L, row)) {
            lua_pushnil(L);
            while (lua_next(L, row)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                add_new_key(L, 2, 3, &n);
            }
        } else {
            return hl_error(L, "rows: row %I is a %s, not a table", (lua_Integer)ri, luaL_typename(L, row));
        }
        lua_settop(L, row - 1);
    }
    lua_pushvalue(L, 3);
    return 1;
}

int hl_sweep_row_table(lua_State *L, int idx)
{
    if (!hl_is_sweep_row(L, idx))
        return 0;
    idx = lua_absindex(L, idx);
    hl_rows_reader r;
    hl_rows_reader_open(L, &r);
    int64_t i;
    if (reader_row(L, &r, idx, &i)) { /* no written values: the stored keys with a value */
        const rows_store *rs = r.rs;
        lua_createtable(L, 0, rs->n_keys);
        for (int32_t k = 0; k < rs->n_keys; k++) {
            push_stored(L, rs, r.slot + SLOT_AXVALS, i, &rs->keys[k]);
            if (lua_isnil(L, -1)) {
                lua_pop(L, 1);
                continue;
            }
            lua_rawgeti(L, r.slot + SLOT_KEYS, k + 1);
            lua_insert(L, -2);
            lua_rawset(L, -3);
        }
        lua_replace(L, r.slot);
        lua_settop(L, r.slot);
        return 1;
    }
    lua_settop(L, r.slot - 1);
    lua_newtable(L);
    int t = lua_gettop(L);
    luaL_getmetafield(L, idx, "__pairs");
    lua_pushvalue(L, idx);
    lua_call(L, 1, 3); /* next, row, nil */
    for (;;) {
        lua_pushvalue(L, t + 1);
        lua_pushvalue(L, t + 2);
        lua_pushvalue(L, t + 3);
        lua_call(L, 2, 2);
        if (lua_isnil(L, -2)) {
            lua_pop(L, 2);
            break;
        }
        lua_pushvalue(L, -2);
        lua_replace(L, t + 3); /* the next call's key */
        lua_rawset(L, t);
    }
    lua_settop(L, t);
    return 1;
}

/* core.sweep_row_table(row) -> a plain table of the row's keys and values (a table is itself) */
static int l_sweep_row_table(lua_State *L)
{
    if (!hl_sweep_row_table(L, 1))
        lua_settop(L, 1);
    return 1;
}

/* core.is_sweep_row(v) -> whether v is a row of an in-memory sweep */
static int l_is_sweep_row(lua_State *L)
{
    lua_pushboolean(L, hl_is_sweep_row(L, 1));
    return 1;
}

/* Adds key `name` (pushed) to the keys being built (keymap at km, key array at ka); returns its
 * row_key. */
static row_key *add_key(lua_State *L, rows_store *rs, int km, int ka, const char *name)
{
    lua_pushstring(L, name);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, km) == LUA_TNUMBER) {
        row_key *k = &rs->keys[lua_tointeger(L, -1) - 1];
        lua_pop(L, 2);
        return k;
    }
    lua_pop(L, 1);
    row_key *k = &rs->keys[rs->n_keys++];
    *k = (row_key){-1, 0, -1, -1, -1, 1, 0};
    lua_pushvalue(L, -1);
    lua_rawseti(L, ka, rs->n_keys);
    lua_pushinteger(L, rs->n_keys);
    lua_rawset(L, km);
    return k;
}

int hl_sweep_rows_push(lua_State *L, hl_sweep_store *store, const hl_axis *axes, int32_t na, int zip, int axes_idx,
                       int64_t lo, int64_t hi, int strict)
{
    axes_idx = lua_absindex(L, axes_idx);
    rows_store *rs = lua_newuserdatauv(L, sizeof *rs, 0); /* may raise: the caller still owns store */
    memset(rs, 0, sizeof *rs);
    rs->st = *store;
    memset(store, 0, sizeof *store); /* the rows own it now */
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, store_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    int su = lua_gettop(L);
    rs->na = na;
    rs->zip = zip;
    int32_t n_fields = hl_result_field_count(), n_friendly = 0;
    while (hl_result_friendly(n_friendly, NULL, NULL))
        n_friendly++;
    rs->axis_len = malloc(sizeof *rs->axis_len * (size_t)(na > 0 ? na : 1));
    rs->keys = malloc(sizeof *rs->keys * (size_t)(na + n_fields + n_friendly + 1));
    if (!rs->axis_len || !rs->keys)
        return hl_error(L, "sweep: out of memory");
    /* the axis values as the rows give them: a relabelled axis (core axis .label, .shown) its
     * given values under its label, else numbers as floats, strings, objects by name */
    lua_createtable(L, na, 0);
    int av = lua_gettop(L);
    lua_newtable(L);
    int km = lua_gettop(L);
    lua_newtable(L);
    int ka = lua_gettop(L);
    for (int32_t a = 0; a < na; a++) {
        const hl_axis *ax = &axes[a];
        rs->axis_len[a] = ax->n;
        lua_rawgeti(L, axes_idx, a + 1);
        int shown = lua_getfield(L, -1, "shown") == LUA_TTABLE;
        lua_getfield(L, -2, "label");
        const char *label = shown && lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : ax->name;
        lua_createtable(L, ax->n, 0);
        for (int32_t i = 0; i < ax->n; i++) {
            if (shown)
                lua_rawgeti(L, -3, i + 1);
            else if (ax->kind == HL_AXIS_NUMBER)
                lua_pushnumber(L, ax->numbers[i]);
            else if (ax->kind == HL_AXIS_STRING)
                lua_pushstring(L, ax->strings[i]);
            else
                lua_pushstring(L, ax->kind == HL_AXIS_MODEL     ? ax->models[i].name
                                  : ax->kind == HL_AXIS_CLUSTER ? ax->clusters[i].name
                                                                : ax->gpus[i].name);
            lua_rawseti(L, -2, i + 1);
        }
        lua_rawseti(L, av, a + 1);
        row_key *k = add_key(L, rs, km, ka, label);
        if (k->axis < 0 || (shown && !k->shown)) { /* the first axis of a name wins, a relabelled one over all */
            k->axis = a;
            k->shown = shown;
        }
        lua_pop(L, 3); /* label, shown, the axis */
    }
    for (int32_t f = 0; f < n_fields; f++)
        add_key(L, rs, km, ka, hl_result_field_at(f)->name)->field = f;
    for (int32_t j = 0; j < n_friendly; j++) {
        int32_t field;
        double scale;
        const char *name = hl_result_friendly(j, &field, &scale);
        row_key *k = add_key(L, rs, km, ka, name);
        if (k->field < 0) {
            k->friendly = j;
            k->friendly_field = field;
            k->scale = scale;
        }
    }
    add_key(L, rs, km, ka, "error")->error = 1;
    /* the keys by their strings' addresses (alive: the key array is an upvalue of the closures) */
    rs->n_slots = 16;
    while (rs->n_slots < 4u * (uint32_t)rs->n_keys)
        rs->n_slots *= 2;
    rs->slot_key = calloc(rs->n_slots, sizeof *rs->slot_key);
    rs->slot_index = calloc(rs->n_slots, sizeof *rs->slot_index);
    if (!rs->slot_key || !rs->slot_index)
        return hl_error(L, "sweep: out of memory");
    rs->interned = 1;
    for (int32_t k = 0; k < rs->n_keys; k++) {
        lua_rawgeti(L, ka, k + 1);
        size_t len;
        const char *p = lua_tolstring(L, -1, &len);
        lua_pushlstring(L, p, len); /* a copy: the same object when interned */
        rs->interned &= lua_tostring(L, -1) == p;
        lua_pop(L, 1);
        uint32_t h = slot_of(rs, p);
        while (rs->slot_index[h])
            h = (h + 1) & (rs->n_slots - 1);
        rs->slot_key[h] = p;
        rs->slot_index[h] = k + 1;
        lua_pop(L, 1);
    }
    /* the rows' metatable: its closures share the upvalues (store, keys, axis values, writes) */
    lua_newtable(L);
    int wr = lua_gettop(L);
    lua_createtable(L, 0, 6);
    int mt = lua_gettop(L);
    lua_pushvalue(L, su);
    lua_pushvalue(L, km);
    lua_pushvalue(L, ka);
    lua_pushvalue(L, av);
    lua_pushvalue(L, wr);
    lua_pushcclosure(L, row_next, N_UP - 1);
    int nx = lua_gettop(L);
    static const struct {
        const char *name;
        lua_CFunction fn;
    } methods[] = {{"__index", row_get}, {"__newindex", row_set}, {"__len", row_len}, {"__pairs", row_pairs}};
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        lua_pushvalue(L, su);
        lua_pushvalue(L, km);
        lua_pushvalue(L, ka);
        lua_pushvalue(L, av);
        lua_pushvalue(L, wr);
        lua_pushvalue(L, nx);
        lua_pushcclosure(L, methods[m].fn, N_UP);
        lua_setfield(L, mt, methods[m].name);
    }
    lua_pushliteral(L, ROW_NAME);
    lua_setfield(L, mt, "__name");
    const int tables[] = {su, km, ka, av, wr};
    char *const table_keys[] = {&mt_store_key, &mt_keymap_key, &mt_keys_key, &mt_axvals_key, &mt_writes_key};
    for (int t = 0; t < 5; t++) {
        lua_pushvalue(L, tables[t]);
        lua_rawsetp(L, mt, table_keys[t]);
    }
    /* the rows: one view per point done (points not reached are left out) */
    lua_createtable(L, (int)(hi - lo < 1 << 30 ? hi - lo : 0), 0);
    int rows = lua_gettop(L);
    lua_Integer out = 0;
    for (int64_t i = lo; i < hi; i++) {
        int32_t fault = rs->st.fault[i];
        if (fault == HL_STORE_NOT_RUN)
            continue;
        if (fault != 0 && strict)
            return hl_error(L, "sweep point %I: %s", (lua_Integer)(i + 1),
                            fault > 0 ? rs->st.messages[fault - 1] : "out of memory keeping its message");
        int64_t *p = lua_newuserdatauv(L, sizeof *p, 0);
        *p = i;
        lua_pushvalue(L, mt);
        lua_setmetatable(L, -2);
        lua_rawseti(L, rows, ++out);
    }
    return 1;
}

void hl_bind_sweep_rows(lua_State *L)
{
    static const luaL_Reg fns[] = {{"sweep_row_table", l_sweep_row_table},
                                   {"is_sweep_row", l_is_sweep_row},
                                   {"rows_keys", l_rows_keys},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
