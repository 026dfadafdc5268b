/* Internal collective helpers: timing at another HBD size without copying the
 * cluster, and the per-thread memo of collective results. */
#ifndef HL_COLL_INT_H
#define HL_COLL_INT_H
#include <stdint.h>

#include "hbdlab/coll.h"

/* A collective time as a function of the call, the cluster's link parameters
 * and an HBD size `hbd` that replaces c->hbd (nothing else of *c may be read
 * but the fields coll.c's memo key holds: gpus, fabric, in_switch_reduce and
 * the link bandwidths, efficiencies and latencies). */
typedef hl_status (*hl_coll_fn)(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out, hl_err *err);

/* hl_coll_time with HBDs of `hbd` GPUs (1..c->gpus) instead of c->hbd, memoised. */
hl_status hl_coll_time_hbd(const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out, hl_err *err);

/* fn(c, hbd, in) through the per-thread memo: equal (fn, link parameters, hbd,
 * in) give the stored result; only successful results are stored. */
hl_status hl_coll_memo(hl_coll_fn fn, const hl_cluster *c, int64_t hbd, const hl_coll_in *in, hl_coll_out *out,
                       hl_err *err);

/* A caller's hold on the shape slot (coll.c) its calls of one shape used last: the slot and the
 * fill of it that was seen (stamp 0: none yet). */
typedef struct hl_coll_hint {
    uint64_t stamp;
    uint32_t slot;
} hl_coll_hint;

/* hl_coll_time (HBDs of c->hbd) for a caller that vouches that every call it makes with *h has one
 * shape (c's link fields, c->hbd, and in but its bytes and imbalance: layer.c keys its hints by
 * the job class and those fields of in). While the slot *h names has not been refilled since it
 * was seen, the call takes it without looking the shape up and comparing it (the same group and
 * lines, so the same bits); else as hl_coll_time, and *h is set. out's algbw, busbw and
 * latency_share are left 0 (layer.c reads none of them; hl_coll_time gives them); every other
 * field is hl_coll_time's. c, in and out must not be NULL; not through the memo (a pure cache: no
 * result depends on it). */
hl_status hl_coll_time_hinted(const hl_cluster *c, const hl_coll_in *in, hl_coll_out *out, hl_coll_hint *h,
                              hl_err *err);

/* Tests: 0 makes this thread time every call with the full checks and AUTO's full loop (no
 * shapes, coll.c), 1 (the default) keeps each call's shape and picks AUTO's winner by bounds.
 * Either way the thread's shapes and memo are emptied. */
void hl_coll_shape_cache(int on);

#endif
