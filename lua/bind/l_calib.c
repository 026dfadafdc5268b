/* Binding of the calibration solver: core.calibrate_fit{...} (used by
 * lua/hbdlab/calibrate.lua, which builds the cases and applies parameters). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "hbdlab/calib.h"

/* Everything the C callback needs to call the Lua prediction function. */
typedef struct lua_fn_ctx {
    lua_State *L;
    int fn; /* stack index of the Lua function */
    int32_t n_params, n_cases;
} lua_fn_ctx;

/* Fills err (the bindings see only public headers) and returns HL_EINVAL. */
static hl_status set_err(hl_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return HL_EINVAL;
}

/* fn(x) -> array of n_cases predictions, called through pcall: a Lua error
 * becomes an hl_err and stops the fit (the solver frees its memory). */
static hl_status call_lua(void *vctx, const double *x, double *pred, hl_err *err)
{
    lua_fn_ctx *c = vctx;
    lua_State *L = c->L;
    lua_pushvalue(L, c->fn);
    lua_createtable(L, c->n_params, 0);
    for (int32_t p = 0; p < c->n_params; p++) {
        lua_pushnumber(L, x[p]);
        lua_rawseti(L, -2, p + 1);
    }
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        hl_status st = set_err(err, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
        lua_pop(L, 1);
        return st;
    }
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return set_err(err, "calibrate: the prediction function must return an array of %d numbers", (int)c->n_cases);
    }
    for (int32_t i = 0; i < c->n_cases; i++) {
        lua_rawgeti(L, -1, i + 1);
        int ok = 0;
        pred[i] = lua_tonumberx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok) {
            lua_pop(L, 1);
            return set_err(err, "calibrate: prediction %d is not a number", (int)i + 1);
        }
    }
    lua_pop(L, 1);
    return HL_OK;
}

/* Reads array field `name` of the table at idx into a new userdata-backed
 * buffer of n doubles (collected by Lua: nothing leaks when a later check raises). */
static double *num_array(lua_State *L, int idx, const char *name, int32_t n)
{
    if (lua_getfield(L, idx, name) != LUA_TTABLE)
        hl_error(L, "calibrate_fit: field '%s' must be an array of %d numbers", name, (int)n);
    double *a = lua_newuserdatauv(L, sizeof(double) * (size_t)(n > 0 ? n : 1), 0);
    for (int32_t i = 0; i < n; i++) {
        lua_rawgeti(L, -2, i + 1);
        int ok = 0;
        a[i] = lua_tonumberx(L, -1, &ok);
        if (!ok)
            hl_error(L, "calibrate_fit: field '%s'[%d] is not a number", name, (int)i + 1);
        lua_pop(L, 1);
    }
    lua_remove(L, -2); /* keep the buffer on the stack until the call returns */
    return a;
}

/* core.calibrate_fit{x0 =, lo =, hi =, measured =, fn =, use = (optional flags),
 * loo = bool, max_iter = n} -> {x = {...}, rms_log, iterations, converged, loo = {...}} */
static int l_calibrate_fit(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "x0");
    lua_Integer np = luaL_len(L, -1);
    lua_getfield(L, 1, "measured");
    lua_Integer nc = lua_type(L, -1) == LUA_TTABLE ? luaL_len(L, -1) : 0;
    lua_pop(L, 2);
    if (np < 1 || np > 1000 || nc < 1 || nc > 1000000)
        return hl_error(L, "calibrate_fit: needs 1..1000 parameters and 1..1e6 cases (got %d, %d)", (int)np, (int)nc);
    hl_calib_in in;
    memset(&in, 0, sizeof in);
    in.n_params = (int32_t)np;
    in.n_cases = (int32_t)nc;
    in.x0 = num_array(L, 1, "x0", in.n_params);
    in.lo = num_array(L, 1, "lo", in.n_params);
    in.hi = num_array(L, 1, "hi", in.n_params);
    in.measured = num_array(L, 1, "measured", in.n_cases);
    if (lua_getfield(L, 1, "use") == LUA_TTABLE) {
        int32_t *use = lua_newuserdatauv(L, sizeof(int32_t) * (size_t)in.n_cases, 0);
        for (int32_t i = 0; i < in.n_cases; i++) {
            lua_rawgeti(L, -2, i + 1);
            use[i] = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
        in.use = use;
    }
    double max_iter = hl_opt_number_field(L, 1, "max_iter", 0);
    if (!(max_iter >= 0 && max_iter <= 1e6 && max_iter == floor(max_iter))) /* range-checked before the cast */
        return hl_error(L, "field 'max_iter': %f is not allowed (a whole number 1..1e6; 0 = 200)", max_iter);
    in.max_iter = (int32_t)max_iter;
    if (lua_getfield(L, 1, "fn") != LUA_TFUNCTION)
        return hl_error(L, "calibrate_fit: field 'fn' must be a function(x) returning the predictions");
    lua_fn_ctx ctx = {L, lua_gettop(L), in.n_params, in.n_cases};
    in.fn = call_lua;
    in.ctx = &ctx;
    lua_getfield(L, 1, "loo");
    int want_loo = lua_toboolean(L, -1);
    lua_pop(L, 1);
    double *x = lua_newuserdatauv(L, sizeof(double) * (size_t)in.n_params, 0);
    hl_calib_out out;
    hl_err err;
    if (hl_calib_fit(&in, x, &out, &err))
        return hl_raise(L, &err);
    double *loo = NULL;
    if (want_loo) {
        loo = lua_newuserdatauv(L, sizeof(double) * (size_t)in.n_cases, 0);
        if (hl_calib_loo(&in, loo, &err))
            return hl_raise(L, &err);
    }
    lua_createtable(L, 0, 5);
    lua_createtable(L, in.n_params, 0);
    for (int32_t p = 0; p < in.n_params; p++) {
        lua_pushnumber(L, x[p]);
        lua_rawseti(L, -2, p + 1);
    }
    lua_setfield(L, -2, "x");
    hl_set_num(L, "rms_log", out.rms_log);
    lua_pushinteger(L, out.iterations);
    lua_setfield(L, -2, "iterations");
    lua_pushboolean(L, out.converged);
    lua_setfield(L, -2, "converged");
    if (loo) {
        lua_createtable(L, in.n_cases, 0);
        for (int32_t i = 0; i < in.n_cases; i++) {
            lua_pushnumber(L, loo[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "loo");
    }
    return 1;
}

void hl_bind_calib(lua_State *L)
{
    static const luaL_Reg fns[] = {{"calibrate_fit", l_calibrate_fit}, {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
