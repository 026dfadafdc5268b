/* Bindings of the roofline and KV-capacity functions. */
#include <stdio.h>
#include <string.h>

#include "bind.h"

static const char *const op_kinds[] = {"gemm", "grouped_gemm", "attention", "elementwise", "norm", NULL};

/* op_time(gpu, {name, kind, precision, flops, bytes_read, bytes_written}) -> table */
static int l_op_time(lua_State *L)
{
    hl_gpu *g = hl_to_gpu(L, 1);
    luaL_argcheck(L, g != NULL, 1, "expected a gpu object");
    luaL_checktype(L, 2, LUA_TTABLE);
    hl_op op;
    memset(&op, 0, sizeof op);
    const char *name = hl_opt_string_field(L, 2, "name");
    snprintf(op.name, sizeof op.name, "%s", name ? name : "op");
    lua_getfield(L, 2, "kind");
    op.kind = luaL_checkoption(L, -1, "gemm", op_kinds);
    lua_getfield(L, 2, "precision");
    op.precision = lua_isnil(L, -1) ? HL_BF16 : hl_check_precision(L, -1);
    lua_pop(L, 2);
    op.flops = hl_opt_number_field(L, 2, "flops", 0);
    op.bytes_read = hl_opt_number_field(L, 2, "bytes_read", 0);
    op.bytes_written = hl_opt_number_field(L, 2, "bytes_written", 0);
    hl_op_time t;
    hl_err err;
    if (hl_op_time_on(&op, g, &t, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 10);
    lua_pushstring(L, op.name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, op_kinds[op.kind]);
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, hl_precision_name((hl_precision)op.precision));
    lua_setfield(L, -2, "precision");
    hl_set_num(L, "flops", op.flops);
    hl_set_num(L, "bytes", op.bytes_read + op.bytes_written);
    hl_set_num(L, "time_s", t.time_s);
    hl_set_num(L, "compute_s", t.compute_s);
    hl_set_num(L, "memory_s", t.memory_s);
    hl_set_num(L, "intensity", t.intensity);
    hl_set_num(L, "ridge", t.ridge);
    lua_pushstring(L, t.bound == HL_BOUND_COMPUTE ? "compute" : "memory");
    lua_setfield(L, -2, "bound");
    return 1;
}

/* gemm_op(m, n, k, act_bytes, weight_bytes, out_bytes) -> flops, bytes_read, bytes_written */
static int l_gemm_op(lua_State *L)
{
    hl_op op;
    hl_op_gemm(&op, "gemm", luaL_checknumber(L, 1), luaL_checknumber(L, 2), luaL_checknumber(L, 3),
               luaL_optnumber(L, 4, 2), luaL_optnumber(L, 5, 2), luaL_optnumber(L, 6, 2), HL_BF16);
    lua_pushnumber(L, op.flops);
    lua_pushnumber(L, op.bytes_read);
    lua_pushnumber(L, op.bytes_written);
    return 3;
}

/* kv_capacity{hbm_bytes, mem_util, weights_bytes, workspace_bytes, kv_token_bytes, context, block_tokens} */
static int l_kv_capacity(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    hl_kv_capacity_in in = {
        hl_opt_number_field(L, 1, "hbm_bytes", 0),      hl_opt_number_field(L, 1, "mem_util", 0.9),
        hl_opt_number_field(L, 1, "weights_bytes", 0),  hl_opt_number_field(L, 1, "workspace_bytes", 0),
        hl_opt_number_field(L, 1, "kv_token_bytes", 0), hl_opt_number_field(L, 1, "context", 0),
        hl_opt_number_field(L, 1, "block_tokens", 0)};
    hl_kv_capacity c;
    hl_err err;
    if (hl_kv_capacity_compute(&in, &c, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 6);
    hl_set_num(L, "kv_budget_bytes", c.kv_budget_bytes);
    hl_set_num(L, "max_tokens", c.max_tokens);
    hl_set_num(L, "max_batch", c.max_batch);
    hl_set_num(L, "blocks_total", c.blocks_total);
    hl_set_num(L, "blocks_per_seq", c.blocks_per_seq);
    hl_set_num(L, "fragmentation", c.fragmentation);
    return 1;
}

static int l_precision_bytes(lua_State *L)
{
    lua_pushnumber(L, hl_precision_bytes(hl_check_precision(L, 1)));
    return 1;
}

void hl_bind_roofline(lua_State *L)
{
    static const luaL_Reg fns[] = {{"op_time", l_op_time},
                                   {"gemm_op", l_gemm_op},
                                   {"kv_capacity", l_kv_capacity},
                                   {"precision_bytes", l_precision_bytes},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
