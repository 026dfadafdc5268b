/* Internal collective helpers: timing at another HBD size without copying the
 * cluster, and the per-thread memo of collective results. */
#ifndef HL_COLL_INT_H
#define HL_COLL_INT_H
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

/* Tests: 0 makes this thread time every call with the full checks and AUTO's full loop (no
 * shapes, coll.c), 1 (the default) keeps each call's shape and picks AUTO's winner by bounds.
 * Either way the thread's shapes and memo are emptied. */
void hl_coll_shape_cache(int on);

#endif
