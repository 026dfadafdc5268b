/* Binding of the collective model: core.collective(cluster, {op, bytes, ranks, algo, ranks_per_hbd, imbalance}). */
#include <string.h>

#include "bind.h"

static int l_collective(lua_State *L)
{
    hl_cluster *c = hl_to_cluster(L, 1);
    luaL_argcheck(L, c != NULL, 1, "expected a cluster object");
    luaL_checktype(L, 2, LUA_TTABLE);
    hl_err err;
    hl_coll_in in = {0, 0, 0, 0, 0, 0};
    const char *op = hl_opt_string_field(L, 2, "op");
    const char *algo = hl_opt_string_field(L, 2, "algo");
    int moe = op && (strcmp(op, "dispatch") == 0 || strcmp(op, "combine") == 0);
    double moe_bytes = 0;
    if (moe) { /* MoE token exchange: an All-to-All of hl_coll_moe_bytes per rank */
        static const char *const need[] = {"tokens", "hidden", "topk"};
        for (int i = 0; i < 3; i++)
            if (lua_getfield(L, 2, need[i]) != LUA_TNUMBER)
                return hl_error(L, "hl.collective %s: field '%s' is required (a number)", op, need[i]);
        lua_pop(L, 3);
        const char *prec = hl_opt_string_field(L, 2, "precision");
        hl_precision p;
        /* default payload precision: FP8 dispatch (DeepEP's), BF16 combine */
        if (hl_precision_parse(prec ? prec : strcmp(op, "dispatch") == 0 ? "fp8" : "bf16", &p, &err))
            return hl_raise(L, &err);
        moe_bytes = hl_coll_moe_bytes(hl_opt_number_field(L, 2, "tokens", 0), hl_opt_number_field(L, 2, "topk", 0), 1,
                                      hl_opt_number_field(L, 2, "hidden", 0), hl_precision_bytes(p));
        op = "alltoall";
    }
    hl_coll_op o;
    hl_coll_algo a = HL_ALGO_AUTO;
    if (hl_coll_op_parse(op ? op : "(missing)", &o, &err) || (algo && hl_coll_algo_parse(algo, &a, &err)))
        return hl_raise(L, &err);
    in.op = o;
    in.algo = a;
    if (!moe && lua_getfield(L, 2, "bytes") == LUA_TNIL)
        return hl_error(L, "collective field 'bytes' is required (bytes as nccl-tests counts them)");
    lua_settop(L, 2);
    in.bytes = moe ? moe_bytes : hl_opt_number_field(L, 2, "bytes", 0); /* range checked by hl_coll_time */
    /* range before conversion: hl_coll_time checks them against the cluster */
    in.ranks = hl_opt_int_field(L, 2, "ranks", 0, 0, (int64_t)1 << 40);
    in.ranks_per_hbd = hl_opt_int_field(L, 2, "ranks_per_hbd", 0, 0, (int64_t)1 << 40);
    in.imbalance = hl_opt_number_field(L, 2, "imbalance", 0);
    hl_coll_out out;
    if (hl_coll_time(c, &in, &out, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 12);
    lua_pushstring(L, hl_coll_op_name(o));
    lua_setfield(L, -2, "op");
    lua_pushstring(L, hl_coll_algo_name((hl_coll_algo)out.algo));
    lua_setfield(L, -2, "algo");
    hl_set_num(L, "bytes", in.bytes);
    hl_set_num(L, "time_s", out.time_s);
    hl_set_num(L, "algbw", out.algbw);
    hl_set_num(L, "busbw", out.busbw);
    hl_set_num(L, "scaleup_bytes", out.scaleup_bytes);
    hl_set_num(L, "scaleout_bytes", out.scaleout_bytes);
    hl_set_num(L, "latency_s", out.latency_s);
    hl_set_num(L, "latency_share", out.latency_share);
    lua_pushinteger(L, out.hbds);
    lua_setfield(L, -2, "hbds");
    lua_pushinteger(L, out.ranks_per_hbd);
    lua_setfield(L, -2, "ranks_per_hbd");
    return 1;
}

/* net_requirement{count, bytes, factor, compute_s, latency_s, share} -> {budget_s, bandwidth, max_latency_s} */
static int l_net_requirement(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    hl_net_need need;
    hl_err err;
    if (hl_coll_requirement(hl_opt_number_field(L, 1, "count", 1), hl_opt_number_field(L, 1, "bytes", 0),
                            hl_opt_number_field(L, 1, "factor", 1), hl_opt_number_field(L, 1, "compute_s", 0),
                            hl_opt_number_field(L, 1, "latency_s", 0), hl_opt_number_field(L, 1, "share", 0.1), &need,
                            &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 3);
    hl_set_num(L, "budget_s", need.budget_s);
    hl_set_num(L, "bandwidth", need.bandwidth);
    hl_set_num(L, "max_latency_s", need.max_latency_s);
    return 1;
}

void hl_bind_coll(lua_State *L)
{
    static const luaL_Reg fns[] = {{"collective", l_collective}, {"net_requirement", l_net_requirement}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
