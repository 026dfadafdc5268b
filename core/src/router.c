/* The request router: round robin, least loaded (fewest outstanding tokens),
 * KV-aware (the longest cached prefix, then the most free KV blocks), as serving routers in front of replicas do
 * (docs/MODEL.md 12). */
#include "hbdlab/router.h"

#include <stddef.h>

const char *hl_router_name(int32_t kind)
{
    static const char *const names[] = {"round_robin", "least_loaded", "kv_aware"};
    return kind >= 0 && kind < 3 ? names[kind] : NULL;
}

int64_t hl_router_pick(hl_router *r, const hl_router_load *loads, int64_t n)
{
    if (n <= 1)
        return 0;
    int64_t best = 0;
    switch (r->kind) {
    case HL_ROUTER_LEAST_LOADED:
        for (int64_t i = 1; i < n; i++)
            if (loads[i].tokens < loads[best].tokens)
                best = i;
        return best;
    case HL_ROUTER_KV_AWARE:
        for (int64_t i = 1; i < n; i++)
            if (loads[i].cached > loads[best].cached ||
                (loads[i].cached == loads[best].cached &&
                 (loads[i].free_blocks > loads[best].free_blocks ||
                  (loads[i].free_blocks == loads[best].free_blocks && loads[i].tokens < loads[best].tokens))))
                best = i;
        return best;
    default:
        best = r->next % n;
        r->next = (best + 1) % n;
        return best;
    }
}
