/* Cost and energy per token of a simulated job: capex amortised over the
 * job's time plus electricity, split by phase (prefill -> prompt tokens,
 * decode -> generated tokens). Formulas: docs/MODEL.md section 11. */
#ifndef HBDLAB_COST_H
#define HBDLAB_COST_H
#include <stdint.h>
#include "hbdlab/hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Busy time of one phase as the cost model needs it (all in s, per GPU on the
 * critical path): the phase length and the part spent running kernels. */
typedef struct hl_cost_phase {
    double time_s; /* phase duration */
    double busy_s; /* compute_s + memory_s: kernels running (power at load) */
    double tokens; /* tokens the phase is charged for (prompt or decode tokens, whole job) */
} hl_cost_phase;

typedef struct hl_cost {
    double capex_usd_per_gpu;    /* capex_usd + scaleup_usd + scaleout_usd of one GPU */
    double usd_per_gpu_hour;     /* that capex amortised per hour (amort_years of 8766 h) */
    double prefill_j;            /* J at the wall (PUE included) of the GPUs used, prefill */
    double decode_j;             /* J, decode */
    double energy_j;             /* prefill_j + decode_j */
    double power_w;              /* W at the wall: energy_j / total time (0 when the job takes no time) */
    double peak_power_w;         /* W at the wall with every GPU used at power_w: gpus * power_w * pue */
    double prefill_usd;          /* capex share + electricity of prefill */
    double decode_usd;           /* capex share + electricity of decode */
    double usd_per_mtok_in;      /* prefill_usd per million prompt tokens */
    double usd_per_mtok_out;     /* decode_usd per million decode tokens (0 when output = 1: no decode) */
    double usd_per_mtok;         /* whole job per million generated tokens */
    double joules_per_token;     /* energy_j per generated token */
    double joules_per_token_in;  /* prefill_j per prompt token */
    double joules_per_token_out; /* decode_j per decode token (0 when output = 1) */
} hl_cost;

/* The unknown-price rule (docs/MODEL.md section 11): a price or a power that is
 * not known is never counted as 0. hl_cost_price_known: the GPU's capex_usd is
 * set (> 0). hl_cost_power_known: its power at load (power_w, else tdp_w) is set.
 * Without a power the energy fields are NaN; without a price or a power every
 * USD field is NaN (a bill without its electricity or its capex is unknown). */
int hl_cost_price_known(const hl_cluster *c);
int hl_cost_power_known(const hl_cluster *c);

/* Cost of running `gpus` GPUs of cluster c through the two phases; generated
 * tokens = prefill's first tokens (batch) + decode tokens. Power per GPU while
 * kernels run is gpu.power_w (gpu.tdp_w when power_w is 0), else gpu.idle_w.
 * Unknown fields are NaN (the rule above). */
void hl_cost_compute(const hl_cluster *c, int64_t gpus, double batch, const hl_cost_phase *prefill,
                     const hl_cost_phase *decode, hl_cost *out);

#ifdef __cplusplus
}
#endif
#endif
