/* Bindings of the benchmark timing helpers (hbdlab/bench.h). */
#include <stdlib.h>

#include "bind.h"

/* bench_latency(job, runs, batch[, summary_only]) -> {median_s, p99_s, min_s, mean_s, runs} */
static int l_bench_latency(lua_State *L)
{
    hl_plan_in pin;
    int batch_max, auto_plan;
    int summary = lua_toboolean(L, 4);
    lua_settop(L, 3);
    hl_check_job(L, 1, &pin, &batch_max, &auto_plan);
    hl_job job = pin.job;
    lua_Integer runs = luaL_checkinteger(L, 2), batch = luaL_checkinteger(L, 3);
    job.summary_only = summary;
    hl_latency_stats st;
    hl_err err;
    if (hl_bench_latency(&job, runs, batch, &st, &err))
        return hl_raise(L, &err);
    lua_createtable(L, 0, 5);
    hl_set_num(L, "median_s", st.median_s);
    hl_set_num(L, "p99_s", st.p99_s);
    hl_set_num(L, "min_s", st.min_s);
    hl_set_num(L, "mean_s", st.mean_s);
    lua_pushinteger(L, st.runs);
    lua_setfield(L, -2, "runs");
    return 1;
}

/* bench_sweep(job, inputs, threads) -> wall_s, points_per_s, points: the reference
 * sweep of HBD {8..128} x precision {fp16, fp8, fp4} x `inputs` input lengths. */
static int l_bench_sweep(lua_State *L)
{
    hl_plan_in pin;
    int batch_max, auto_plan;
    lua_settop(L, 3);
    hl_check_job(L, 1, &pin, &batch_max, &auto_plan);
    hl_job job = pin.job;
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n >= 1 && n <= 100000000, 2, "input lengths must be 1..1e8");
    int threads = (int)luaL_checkinteger(L, 3);
    double wall, pps;
    int64_t points;
    hl_err err;
    if (hl_bench_reference_sweep(&job, n, threads, &wall, &pps, &points, &err))
        return hl_raise(L, &err);
    lua_pushnumber(L, wall);
    lua_pushnumber(L, pps);
    lua_pushinteger(L, points);
    return 3;
}

static int l_clock(lua_State *L)
{
    lua_pushnumber(L, hl_clock_s());
    return 1;
}

void hl_bind_bench(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"bench_latency", l_bench_latency}, {"bench_sweep", l_bench_sweep}, {"clock", l_clock}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
