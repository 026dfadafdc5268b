/* Helpers shared by the Lua bindings (one l_<module>.c per core module). */
#ifndef HL_BIND_H
#define HL_BIND_H
#include <lauxlib.h>
#include <lua.h>

#include "hbdlab/status.h"

/* Each binding file adds its functions to the table at the top of the stack
 * (the `hbdlab.core` table). */
void hl_bind_util(lua_State *L);

/* Raises a Lua error with err->msg (prefixed with the function name if given).
 * Never returns. */
int hl_raise(lua_State *L, const hl_err *err);

/* Returns `nil, message` for an expected failure. */
int hl_push_fail(lua_State *L, const hl_err *err);

/* Reads an optional numeric field `name` of the table at idx; returns def if
 * absent. Raises "field 'name': expected a number, got T" on wrong type. */
double hl_opt_number_field(lua_State *L, int idx, const char *name, double def);

/* Reads an optional string field; NULL if absent. Raises on wrong type. */
const char *hl_opt_string_field(lua_State *L, int idx, const char *name);

#endif
