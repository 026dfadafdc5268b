/* Bindings of the benchmark timing helpers (hbdlab/bench.h), and the start-up timer. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bind.h"

extern char **environ;

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

/* bench_spawn({prog, args...}, runs) -> {median_s, min_s, runs}: the wall time from posix_spawn
 * to the child's exit, `runs` times (stdout and stderr to /dev/null), waited for without polling
 * (core.spawn polls every 2 ms, too coarse for a start-up of about 2 ms). Raises when the program
 * cannot start, exits non-zero, or Ctrl-C stops the runs. */
static int l_bench_spawn(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_len(L, 1);
    luaL_argcheck(L, n >= 1 && n < 64, 1, "expected {program, args...} with 1..63 entries");
    lua_Integer runs = luaL_checkinteger(L, 2);
    luaL_argcheck(L, runs >= 1 && runs <= 100000, 2, "runs must be 1..100000");
    const char *argv[64];
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        argv[i - 1] = hl_c_string(L, -1, "bench_spawn: an argument"); /* kept alive by the table */
        lua_pop(L, 1);
    }
    argv[n] = NULL;
    double *t = lua_newuserdatauv(L, sizeof(double) * (size_t)runs, 0); /* freed by the GC, even on a raise */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const char *fail = NULL;
    int err = 0, status = 0;
    for (lua_Integer r = 0; r < runs && !fail; r++) {
        pid_t pid;
        double t0 = hl_clock_s();
        err = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
        if (err) {
            fail = "cannot run";
            break;
        }
        pid_t w;
        while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
            if (hl_bind_interrupt) /* Ctrl-C reached this process too: let the child end, then stop */
                kill(pid, SIGTERM);
        }
        t[r] = hl_clock_s() - t0;
        if (w != pid)
            fail = "lost";
        else if (hl_bind_interrupt)
            fail = "interrupted while timing";
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail = "non-zero exit from";
    }
    posix_spawn_file_actions_destroy(&fa);
    if (fail)
        return hl_error(L, "bench_spawn: %s '%s'%s%s", fail, argv[0], err ? ": " : "", err ? strerror(err) : "");
    hl_bench_sort(t, (size_t)runs);
    lua_createtable(L, 0, 3);
    hl_set_num(L, "median_s", runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]));
    hl_set_num(L, "min_s", t[0]);
    lua_pushinteger(L, runs);
    lua_setfield(L, -2, "runs");
    return 1;
}

static int l_clock(lua_State *L)
{
    lua_pushnumber(L, hl_clock_s());
    return 1;
}

void hl_bind_bench(lua_State *L)
{
    static const luaL_Reg fns[] = {{"bench_latency", l_bench_latency},
                                   {"bench_sweep", l_bench_sweep},
                                   {"clock", l_clock},
                                   {"bench_spawn", l_bench_spawn},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
