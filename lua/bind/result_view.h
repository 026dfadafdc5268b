/* hl.simulate results as light views over the C result (l_result_view.c): the API the
 * bindings share (l_sim.c makes views; l_json.c and any other raw reader materialize them). */
#ifndef HL_RESULT_VIEW_H
#define HL_RESULT_VIEW_H
#include "bind.h"

/* The nested result's shape, worked out once per process from the core's result table
 * (l_result.c): each field's group (the part before a dot; -1 for none), the fields in
 * each group, and the keys of a nested table's top level (fields without a group, groups). */
enum { HL_RESULT_MAX_GROUPS = 16 };
typedef struct hl_result_shape {
    int32_t n, groups;
    int8_t group[HL_POINT_VALUES];
    int32_t group_size[HL_RESULT_MAX_GROUPS];
    int32_t top;
} hl_result_shape;

/* The shape (built on first use, thread-safe). */
const hl_result_shape *hl_result_shape_get(void);

/* Pushes the registry array of interned keys: [i] the full name of field i (1-based), [n + i]
 * its leaf, [2n + g] group g's name, [2n + G + k] friendly alias k (l_result.c). */
void hl_result_push_key_array(lua_State *L);

/* Friendly aliases (ttft_ms, ...): how many (hl_result_friendly in bind.h reads alias k). */
int hl_result_friendly_count(void);

/* A view: the result values (hl_result_values order) and the job it was run from. Opaque. */
typedef struct hl_result_view hl_result_view;

/* Pushes the job of views: a compact copy of `job` as run (for the lazy breakdown; the unused
 * tail of expert_freq is not kept), never changed afterwards, so views of the same job may share
 * it. model_idx / cluster_idx: stack indices of the model and cluster values the job was read
 * with (0 = none), read back by core.result_view_kept; objects: they are the model and cluster
 * objects whose copies job holds (the copy keeps them instead of those bytes). */
void hl_push_result_job(lua_State *L, const hl_job *job, int model_idx, int cluster_idx, int objects);

/* Pushes a new view over the values of r (hl_result_values) run from the job at stack index
 * job_idx (hl_push_result_job). The view is a table (empty but for fields set on it later) with
 * the shared view metatable; its fields are read from the C values on access; groups (prefill,
 * decode, ...) are built on first access and kept. fields_idx: the stack index of the fields
 * table the view keeps for core.result_view_kept (0 = none). */
void hl_push_result_view(lua_State *L, const hl_result *r, int job_idx, int fields_idx);

/* The view data of the table at idx, or NULL when it is not a view. */
hl_result_view *hl_to_result_view(lua_State *L, int idx);

/* The job of the view whose data userdata is at stack index ud, as it was run (every field;
 * expert_freq beyond its count zero). */
void hl_result_view_job(lua_State *L, int ud, hl_job *out);

/* When the value at idx is a view: pushes a plain table with every field it shows (the same
 * keys, values and group tables as indexing it; fields set on the view win) and returns 1;
 * else pushes nothing and returns 0. What raw readers (lua_next, json_encode) iterate. */
int hl_result_view_push_plain(lua_State *L, int idx);

/* Makes the phase table at phase_idx lazy (l_sim.c): `breakdown` and `events` are built on
 * first access by re-running the job of the view whose data userdata is at ud_idx. */
void hl_sim_lazy_phase(lua_State *L, int phase_idx, int which, int ud_idx);

/* Adds core.result_view_mt, result_view_kept and result_view_plain to the table at the top and
 * sets up the views of this state (called by hl_bind_result). */
void hl_bind_result_view(lua_State *L);

#endif
