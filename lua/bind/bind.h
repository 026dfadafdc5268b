/* Helpers shared by the Lua bindings (one l_<module>.c per core module). */
#ifndef HL_BIND_H
#define HL_BIND_H
#include <lauxlib.h>
#include <lua.h>

#include "hbdlab/status.h"

#include "hbdlab/hbdlab.h"

/* Registry names of the userdata metatables. */
#define HL_MT_GPU "hbdlab.gpu"
#define HL_MT_CLUSTER "hbdlab.cluster"
#define HL_MT_MODEL "hbdlab.model"

/* Opens the hbdlab module (l_hbdlab.c): the entry point of hbdlab.so and of the host. */
int luaopen_hbdlab(lua_State *L);

/* Each binding file adds its functions to the table at the top of the stack
 * (the `hbdlab.core` table). */
void hl_bind_util(lua_State *L);
void hl_bind_objects(lua_State *L);
void hl_bind_roofline(lua_State *L);
void hl_bind_coll(lua_State *L);
void hl_bind_sim(lua_State *L);
void hl_bind_json(lua_State *L);
void hl_bind_sweep(lua_State *L);
void hl_bind_bench(lua_State *L);
void hl_bind_minitf(lua_State *L);
void hl_bind_files(lua_State *L);

/* Removes every temp file an atomic write has open (l_files.c); async-signal-safe. */
void hl_files_cleanup(void);

/* A listed mkstemp temp file "<path>.tmp-XXXXXX" (name into tmp, n >= 4200), path's missing
 * folders made first; fd or -1 (errno, hl_files_reason). */
int hl_files_temp(const char *path, char *tmp, size_t n);
/* Renames tmp over path (0, or -1 with errno; tmp stays listed on failure); discard unlinks it. */
int hl_files_commit(const char *tmp, const char *path);
void hl_files_discard(const char *tmp);
/* Why the last hl_files_temp or hl_files_commit failed: a reason of its own ("it is a FIFO with no
 * reader ...", "an empty file name") when errno e alone would misstate it, else strerror(e). */
const char *hl_files_reason(int e);
void hl_bind_calib(lua_State *L);
void hl_bind_serve(lua_State *L);
void hl_bind_dist_fns(lua_State *L);
void hl_bind_result(lua_State *L);
void hl_bind_merge(lua_State *L);

/* Object userdata (l_objects.c): push a copy, or test-and-get (NULL if not one). */
void hl_push_gpu(lua_State *L, const hl_gpu *g);
void hl_push_cluster(lua_State *L, const hl_cluster *c);
void hl_push_model(lua_State *L, const hl_model *m);
hl_gpu *hl_to_gpu(lua_State *L, int idx);
hl_cluster *hl_to_cluster(lua_State *L, int idx);
hl_model *hl_to_model(lua_State *L, int idx);

/* Reads the hl.simulate fields of the table at stack index idx into plan->job
 * (presets by name) and the search options into *plan; raises a Lua error
 * naming the field on bad input. *batch_max / *auto_plan report batch = "max"
 * and parallel = "auto". */
void hl_check_job(lua_State *L, int idx, hl_plan_in *plan, int *batch_max, int *auto_plan);

/* Result fields (l_result.c). Pushes value v of result field i as a number,
 * integer, boolean or name, as the result table types it. */
void hl_push_result_value(lua_State *L, int32_t i, double v);

/* Sets every result field of v[] (hl_result_values order) on the table at the
 * top, plus the friendly aliases (ttft_ms, ...): nested (t.prefill.time_s)
 * when `nested`, else flat dotted keys (t["prefill.time_s"], sweep rows). */
void hl_set_result_fields(lua_State *L, const double *v, int nested);
/* Keys hl_set_result_fields sets at the top level of a table (nested: groups count once), for
 * lua_createtable. */
int32_t hl_result_table_size(int nested);

/* Index of result column `name` (a result field or a friendly alias, whose
 * factor goes to *scale), or -1. */
int32_t hl_result_column(const char *name, double *scale);
/* Friendly alias k (ttft_ms, ...): its name, and the field it scales and the factor (each may be
 * NULL); NULL past the last. */
const char *hl_result_friendly(int32_t k, int32_t *field, double *scale);

/* Sweep rows as views over a compact store (l_sweep_rows.c). Pushes the rows of points
 * [lo, hi) of store (the points not reached left out; a failed one raises when strict), taking
 * the store over (*store is cleared first; on a raise before that the caller still owns it).
 * axes[0, na) and the core axes array at axes_idx (its .label / .shown relabel an axis) give the
 * axis values. */
int hl_sweep_rows_push(lua_State *L, hl_sweep_store *store, const hl_axis *axes, int32_t na, int zip, int axes_idx,
                       int64_t lo, int64_t hi, int strict);
/* Whether the value at idx is a sweep row view; hl_sweep_row_table pushes it as a plain table
 * (its pairs()) and returns 1, or returns 0 and pushes nothing when it is not one. */
int hl_is_sweep_row(lua_State *L, int idx);
int hl_sweep_row_table(lua_State *L, int idx);
/* Reading the cells of many rows from C (to_csv): open pushes the reader's stack slots (the
 * caller pops them after the last row); cells pushes row[cols[1]] .. row[cols[ncols]] and returns
 * 1 when the value at `row` is a sweep row view without written values (read from its store, no
 * metamethod call or key lookup per cell), else returns 0 and pushes nothing. */
typedef struct hl_rows_reader {
    const void *mt;    /* the metatable of the rows last read (NULL: none yet) */
    void *rs;          /* their store (l_sweep_rows.c), alive while the metatable in the slots is */
    int slot, changed; /* the first stack slot; 1: the last row read was of other rows than before */
    int32_t *col_key;  /* per column, its stored key in those rows (-1: none); a slot's userdata */
    lua_Integer ncols;
} hl_rows_reader;
void hl_rows_reader_open(lua_State *L, hl_rows_reader *r);
int hl_rows_reader_cells(lua_State *L, hl_rows_reader *r, int row, int cols, lua_Integer ncols);
void hl_bind_sweep_rows(lua_State *L);

/* Set by the host's SIGINT/SIGTERM/SIGHUP handler (1: Ctrl-C, 2: SIGTERM or SIGHUP, which end the
 * script); long C loops poll it. Cleared by what delivers the interrupt: a sweep that stops early
 * with the rows done, or the host's hook that raises "interrupted!" (and at the start of each host
 * call). hl_bind_interrupt_signal: the signal that set it, for messages (hl_bind_stop_name). */
extern volatile int32_t hl_bind_interrupt;
extern volatile int32_t hl_bind_interrupt_signal;

/* "SIGHUP" when a hangup (a closed terminal or SSH session) ended the script, else "SIGTERM". */
const char *hl_bind_stop_name(void);

/* Set when a sweep returned early on Ctrl-C / SIGTERM (rows done kept); cleared by
 * hl.interrupted(). The host exits 130 after a script that left it set. */
extern volatile int32_t hl_bind_sweep_interrupted;

/* Parses a precision name argument or raises an argument error. */
hl_precision hl_check_precision(lua_State *L, int idx);

/* luaL_error, placed where a user's script can see it: at the caller's line as luaL_error does
 * when the caller is the user's code, else (hbdlab's own Lua called the binding) at the innermost
 * Lua frame outside hbdlab's library, as the host places an uncaught error; under pcall, a
 * message showed "hbdlab/sweep.lua:292:" (attack passes 4-6). Never returns. */
int hl_error(lua_State *L, const char *fmt, ...);

/* Raises a Lua error with err->msg (prefixed with the function name if given).
 * Never returns. */
int hl_raise(lua_State *L, const hl_err *err);

/* Returns `nil, message` for an expected failure. */
int hl_push_fail(lua_State *L, const hl_err *err);

/* t[k] = v for the table at the top of the stack. */
void hl_set_num(lua_State *L, const char *k, double v);

/* Reads an optional numeric field `name` of the table at idx; returns def if
 * absent. Raises "field 'name': expected a number, got T" on wrong type. */
double hl_opt_number_field(lua_State *L, int idx, const char *name, double def);

/* Reads an optional integer field in lo..hi (def if absent); raises naming the field on a
 * fraction, NaN or a value out of range (checked before any conversion). */
int64_t hl_opt_int_field(lua_State *L, int idx, const char *name, int64_t def, int64_t lo, int64_t hi);

/* Reads an optional boolean field: only true/false (def if absent); 0 or "false" raise. */
int hl_opt_bool_field(lua_State *L, int idx, const char *name, int def);

/* Raises "<what>: unknown field 'k' (did you mean 'x'?)" (or the allowed list) on a key of the
 * table at idx that is not in the NULL-terminated list known. */
void hl_check_known(lua_State *L, int idx, const char *const *known, const char *what);

/* The name of known (NULL-terminated) closest to name by edit distance, or NULL when none is close. */
const char *hl_nearest_name(const char *name, const char *const *known);

/* Reads an optional string field; NULL if absent. Raises on wrong type or a NUL byte in it. */
const char *hl_opt_string_field(lua_State *L, int idx, const char *name);

/* The string (or number, as lua_tostring converts it) at idx, for C code, which reads text up to
 * its first NUL byte: a string holding one is refused, naming `what` (a field or argument, e.g.
 * "simulate field 'model'"), instead of being cut short ("llama-3.1-8b\0junk" ran llama-3.1-8b).
 * The pointer stays valid while the value stays on the stack or in its table. */
const char *hl_c_string(lua_State *L, int idx, const char *what);

/* Whether the string at idx holds a NUL byte (for code that must free memory before it raises). */
int hl_holds_nul(lua_State *L, int idx);

/* Raises "WHAT: a hole in the list ..." / "expected a list {v1, v2, ...}, got a key ..." unless the
 * keys of the table at idx are exactly 1..n (core.check_list's rule); returns n. */
lua_Integer hl_check_list(lua_State *L, int idx, const char *what);

/* Raises when the table at idx has a metatable with __index or __pairs: a fields table is read
 * as stored (lua_next), so the fields such a metatable supplies would be ignored silently (a job
 * "inheriting" a base through __index ran with default lengths). what names the table
 * ("simulate", "serve field 'slo'"). */
void hl_check_plain_table(lua_State *L, int idx, const char *what);

/* luaL_checkstring(L, arg) with the NUL refusal of hl_c_string. */
const char *hl_check_c_string(lua_State *L, int arg, const char *what);

/* Pushes s (len bytes) as a message shows it: double-quoted, at most 60 bytes, every control
 * byte, quote and backslash escaped (\n, \0, \27, ...), so that neither a NUL nor a terminal
 * escape sequence in user text reaches a message; returns the pushed string. */
const char *hl_push_shown(lua_State *L, const char *s, size_t len);

#endif
