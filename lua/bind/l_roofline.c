/* Bindings of the roofline and KV-capacity functions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bind.h"

static const char *const op_kinds[] = {"gemm", "grouped_gemm", "attention", "elementwise", "norm", "moe", NULL};
static const char *const frameworks[] = {"ideal", "trtllm", "vllm", "sglang", "rocm", "vllm_v0", "trtllm_v06", NULL};
#define KIND_MOE 5

static void push_time(lua_State *L, const hl_op *op, const char *kind, const hl_op_time *t)
{
    lua_createtable(L, 0, 12);
    lua_pushstring(L, op->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, hl_precision_name((hl_precision)op->precision));
    lua_setfield(L, -2, "precision");
    hl_set_num(L, "flops", op->flops);
    hl_set_num(L, "bytes", op->bytes_read + op->bytes_written);
    hl_set_num(L, "time_s", t->time_s);
    hl_set_num(L, "compute_s", t->compute_s);
    hl_set_num(L, "memory_s", t->memory_s);
    hl_set_num(L, "intensity", t->intensity);
    hl_set_num(L, "ridge", t->ridge);
    lua_pushstring(L, t->bound == HL_BOUND_COMPUTE ? "compute" : "memory");
    lua_setfield(L, -2, "bound");
}

/* A positive finite number field of table 2, or an error naming it (inf passed and became "flops
 * and bytes must be finite", naming no field; NaN was shown as "-nan"). */
static double need_pos(lua_State *L, const char *name)
{
    int given = lua_getfield(L, 2, name) != LUA_TNIL;
    lua_pop(L, 1);
    double v = hl_opt_number_field(L, 2, name, -1);
    if (!(v > 0 && isfinite(v))) {
        char shown[48];
        snprintf(shown, sizeof shown, "%.14g", v);
        hl_error(L, "hl.roofline: field '%s' must be a finite number > 0 (got %s)", name, given ? shown : "nothing");
    }
    return v;
}

/* An optional number field of table 2 that must be finite and >= lo when given (kv_heads,
 * head_dim, window, ep, ...: -inf or NaN reached the operator as "flops and bytes must be finite"). */
static double opt_at_least(lua_State *L, const char *name, double def, double lo)
{
    double v = hl_opt_number_field(L, 2, name, def);
    if (!(v >= lo && isfinite(v))) {
        char shown[96];
        snprintf(shown, sizeof shown, "a finite number >= %g (got %.14g)", lo, v);
        hl_error(L, "hl.roofline: field '%s' must be %s", name, shown);
    }
    return v;
}

/* The name field `field` of table 2 as an index into names (def when absent; def NULL = -1), or an
 * error naming the field and the allowed names (luaL_checkoption said "bad argument #-1 to
 * 'op_time'" at hbdlab's own line). */
static int name_field(lua_State *L, const char *field, const char *def, const char *const *names)
{
    int t = lua_getfield(L, 2, field);
    const char *v = t == LUA_TNIL ? def : NULL;
    char what[64];
    snprintf(what, sizeof what, "roofline field '%s'", field);
    if (t == LUA_TSTRING)
        v = hl_c_string(L, -1, what); /* "gemm\0x" is no gemm */
    else if (t != LUA_TNIL)
        hl_error(L, "hl.roofline: field '%s': expected a name, got %s", field, luaL_typename(L, -1));
    lua_pop(L, 1);
    if (!v)
        return -1;
    char list[200] = "";
    for (int i = 0; names[i]; i++) {
        if (strcmp(v, names[i]) == 0)
            return i;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    hl_push_shown(L, v, strlen(v));
    return hl_error(L, "hl.roofline: field '%s': %s is not one of %s", field, lua_tostring(L, -1), list);
}

/* Whether the shape field `name` is given (then it must be > 0: m = -1 or NaN used to time an
 * operator of no work silently) */
static int shape_given(lua_State *L, const char *name)
{
    int given = lua_getfield(L, 2, name) != LUA_TNIL;
    lua_pop(L, 1);
    if (given)
        need_pos(L, name);
    return given;
}

/* op_time(gpu, {name, kind, precision, framework, flops, bytes_read, bytes_written | m, n, k |
 * attention shape | moe shape}) -> table. The shapes are built by the same constructors as the
 * operators of hl.simulate (roofline.c), so one kernel has one time (docs/MODEL.md section 3). */
static int l_op_time(lua_State *L)
{
    hl_gpu *g0 = hl_to_gpu(L, 1);
    if (!g0)
        return hl_error(L,
                        "hl.roofline: field 'gpu': expected a gpu object, preset name or table of gpu fields, got %s",
                        luaL_typename(L, 1));
    luaL_checktype(L, 2, LUA_TTABLE);
    hl_gpu g = *g0;
    hl_op op;
    memset(&op, 0, sizeof op);
    const char *name = hl_opt_string_field(L, 2, "name");
    int kind = name_field(L, "kind", "gemm", op_kinds);
    hl_precision prec = HL_BF16;
    if (lua_getfield(L, 2, "precision") != LUA_TNIL) {
        hl_err perr;
        if (lua_type(L, -1) != LUA_TSTRING)
            return hl_error(L, "hl.roofline: field 'precision': expected a name, got %s", luaL_typename(L, -1));
        if (hl_precision_parse(hl_c_string(L, -1, "roofline field 'precision'"), &prec, &perr))
            return hl_error(L, "hl.roofline: field 'precision': %s", perr.msg);
    }
    lua_pop(L, 1);
    int fw = name_field(L, "framework", NULL, frameworks);
    if (fw >= 0) {
        hl_fw_profile p = hl_framework_profile(fw);
        hl_gpu_apply_framework(&g, p.gemm_scale_16, p.gemm_scale_fp8, p.gemm_scale_fp4, p.attn_scale);
        hl_gpu_apply_attn_kernel(&g, &p);
    }
    double ab = opt_at_least(L, "act_bytes", 2, 0);
    double wb = opt_at_least(L, "weight_bytes", hl_precision_bytes(prec), 0);
    hl_op_time t;
    hl_err err;
    if (kind == KIND_MOE) { /* the expert GEMMs of one MoE layer on one rank, and its fixed cost */
        double tokens = need_pos(L, "tokens"), E = need_pos(L, "experts"), topk = need_pos(L, "topk");
        double ep = opt_at_least(L, "ep", 1, 1), etp = opt_at_least(L, "etp", 1, 1);
        double imb = opt_at_least(L, "imbalance", 1, 1);
        if (!(ep >= 1 && etp >= 1 && imb >= 1 && topk <= E))
            return hl_error(L, "hl.roofline: moe needs ep >= 1, etp >= 1, imbalance >= 1, topk <= experts");
        hl_moe_shape s;
        s.local_experts = E / ep;
        s.tokens_per_expert = tokens * topk / E * imb;
        /* experts of this rank that receive a token: each misses a token with probability 1 - k/E */
        s.active_experts = s.local_experts * (1 - pow(1 - topk / E, tokens));
        s.hidden = need_pos(L, "hidden");
        s.inter = ceil(need_pos(L, "inter") / etp);
        s.act_bytes = ab;
        s.weight_bytes = wb;
        hl_op up, down;
        hl_op_moe_experts(&up, &down, &s, prec);
        hl_op_time tu, td, tp = {0};
        hl_op perm;
        hl_op_moe_permute(&perm, &s, g.moe_perm_bytes, HL_BF16);
        if (hl_op_time_on(&up, &g, &tu, &err) || hl_op_time_on(&down, &g, &td, &err) ||
            (g.moe_perm_bytes > 0 && hl_op_time_on(&perm, &g, &tp, &err)))
            return hl_raise(L, &err);
        hl_op sum = up;
        snprintf(sum.name, sizeof sum.name, "%s", name ? name : "moe");
        sum.flops += down.flops;
        sum.bytes_read += down.bytes_read;
        sum.bytes_written += down.bytes_written;
        if (g.moe_perm_bytes > 0) {
            sum.bytes_read += perm.bytes_read;
            sum.bytes_written += perm.bytes_written;
        }
        t = tu;
        t.time_s = tu.time_s + td.time_s + tp.time_s + g.moe_latency;
        t.compute_s += td.compute_s;
        t.memory_s += td.memory_s + tp.memory_s;
        t.intensity = sum.flops / (sum.bytes_read + sum.bytes_written);
        push_time(L, &sum, "moe", &t);
        return 1;
    }
    if (shape_given(L, "m")) {
        hl_op_gemm(&op, "gemm", need_pos(L, "m"), need_pos(L, "n"), need_pos(L, "k"), ab, wb, ab, prec);
        if (kind == HL_OP_GROUPED_GEMM)
            op.kind = kind;
    } else if (kind == HL_OP_ATTENTION && shape_given(L, "batch")) {
        hl_attn_shape s;
        s.batch = need_pos(L, "batch");
        s.new_tokens = opt_at_least(L, "q", 1, 1);
        s.context = opt_at_least(L, "context", 0, 0);
        s.heads = need_pos(L, "heads");
        s.kv_heads = opt_at_least(L, "kv_heads", s.heads, 1);
        double d = opt_at_least(L, "head_dim", 128, 1);
        s.qk_dim = opt_at_least(L, "qk_dim", d, 1);
        s.v_dim = opt_at_least(L, "v_dim", d, 1);
        double kvb = opt_at_least(L, "kv_bytes", ab, 0);
        s.kv_token_bytes = opt_at_least(L, "kv_token_bytes", s.kv_heads * (s.qk_dim + s.v_dim) * kvb, 0);
        s.act_bytes = ab;
        s.window = opt_at_least(L, "window", 0, 0);
        if (!(s.new_tokens >= 1 && s.context >= 0))
            return hl_error(L, "hl.roofline: attention needs q >= 1 and context >= 0");
        hl_op_attention(&op, "attention", &s, prec);
    } else {
        op.kind = kind;
        op.precision = prec;
        op.flops = hl_opt_number_field(L, 2, "flops", 0);
        op.bytes_read = hl_opt_number_field(L, 2, "bytes_read", 0);
        op.bytes_written = hl_opt_number_field(L, 2, "bytes_written", 0);
        op.rows = opt_at_least(L, "rows", 0, 0);
    }
    snprintf(op.name, sizeof op.name, "%s", name ? name : "op");
    if (hl_op_time_on(&op, &g, &t, &err))
        return hl_raise(L, &err);
    /* kernels = "dir": a dense GEMM its gemm.csv covers takes the measured time (docs/MODEL.md 3) */
    int measured = 0;
    if (lua_getfield(L, 2, "kernels") != LUA_TNIL) {
        const hl_kernels *kt;
        if (lua_type(L, -1) != LUA_TSTRING) { /* a table read as no name: "an empty folder name" */
            lua_pushfstring(L, "roofline field 'kernels': expected a folder name (a string), got %s",
                            luaL_typename(L, -1));
            return lua_error(L);
        }
        if (hl_kernels_load(hl_c_string(L, -1, "roofline field 'kernels'"), &kt, &err))
            return hl_raise(L, &err);
        hl_kcell key[1] = {{hl_kernels_dtype(op.precision), 0}};
        double x[3] = {op.rows, op.n, op.k}, ts;
        if (op.kind == HL_OP_GEMM && op.rows > 0 && hl_kernels_time(kt, HL_KT_GEMM, key, x, &ts)) {
            t.time_s = ts;
            measured = 1;
        }
    }
    lua_pop(L, 1);
    push_time(L, &op, op_kinds[op.kind], &t);
    lua_pushboolean(L, measured);
    lua_setfield(L, -2, "measured");
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

/* kv_capacity{hbm_bytes, mem_util, weights_bytes, workspace_bytes, kv_token_bytes, context, block_tokens,
 * mem_util_of} */
static int l_kv_capacity(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    hl_kv_capacity_in in = {
        hl_opt_number_field(L, 1, "hbm_bytes", 0),      hl_opt_number_field(L, 1, "mem_util", 0.9),
        hl_opt_number_field(L, 1, "weights_bytes", 0),  hl_opt_number_field(L, 1, "workspace_bytes", 0),
        hl_opt_number_field(L, 1, "kv_token_bytes", 0), hl_opt_number_field(L, 1, "context", 0),
        hl_opt_number_field(L, 1, "block_tokens", 0),   0};
    /* mem_util_of: "hbm" (vLLM's gpu_memory_utilization, the default) or "free" (TensorRT-LLM's
     * free_gpu_memory_fraction: a share of what weights and workspace leave); docs/MODEL.md 4 */
    static const char *const of[] = {"hbm", "free", NULL};
    lua_getfield(L, 1, "mem_util_of");
    if (!lua_isnil(L, -1)) {
        const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int i = 0;
        while (v && of[i] && strcmp(of[i], v) != 0)
            i++;
        if (!v || !of[i])
            return luaL_error(L, "hl.kv_capacity: field 'mem_util_of': %s is not allowed (\"hbm\" or \"free\")",
                              v ? v : luaL_typename(L, -1));
        in.of_free = i;
    }
    lua_pop(L, 1);
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
