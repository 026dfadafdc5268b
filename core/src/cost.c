/* Cost and energy per token (docs/MODEL.md section 11). */
#include "hbdlab/cost.h"

#include <math.h>
#include <string.h>

#define HOURS_PER_YEAR 8766.0 /* 365.25 days */
#define J_PER_KWH 3.6e6

/* J at the wall of n GPUs through one phase: idle power for the whole phase plus
 * the load-minus-idle increment while kernels run, times PUE. */
static double phase_energy(const hl_cluster *c, double n, double load_w, const hl_cost_phase *p)
{
    double idle_w = c->gpu.idle_w < load_w ? c->gpu.idle_w : load_w;
    return n * c->pue * (idle_w * p->time_s + (load_w - idle_w) * p->busy_s);
}

int hl_cost_price_known(const hl_cluster *c) { return c->gpu.capex_usd > 0; }

int hl_cost_power_known(const hl_cluster *c) { return c->gpu.power_w > 0 || c->gpu.tdp_w > 0; }

void hl_cost_compute(const hl_cluster *c, int64_t gpus, double batch, const hl_cost_phase *prefill,
                     const hl_cost_phase *decode, hl_cost *out)
{
    memset(out, 0, sizeof *out);
    double n = (double)gpus;
    double load_w = c->gpu.power_w > 0 ? c->gpu.power_w : c->gpu.tdp_w;
    out->capex_usd_per_gpu = c->gpu.capex_usd + c->scaleup_usd + c->scaleout_usd;
    out->usd_per_gpu_hour = c->amort_years > 0 ? out->capex_usd_per_gpu / (c->amort_years * HOURS_PER_YEAR) : 0;
    out->prefill_j = phase_energy(c, n, load_w, prefill);
    out->decode_j = phase_energy(c, n, load_w, decode);
    out->energy_j = out->prefill_j + out->decode_j;
    double total_s = prefill->time_s + decode->time_s;
    out->power_w = total_s > 0 ? out->energy_j / total_s : 0;
    out->peak_power_w = n * load_w * c->pue;
    double usd_per_j = c->usd_per_kwh / J_PER_KWH;
    double capex_per_s = n * out->usd_per_gpu_hour / 3600.0;
    out->prefill_usd = capex_per_s * prefill->time_s + usd_per_j * out->prefill_j;
    out->decode_usd = capex_per_s * decode->time_s + usd_per_j * out->decode_j;
    double generated = batch + decode->tokens;
    if (prefill->tokens > 0) {
        out->usd_per_mtok_in = out->prefill_usd / prefill->tokens * 1e6;
        out->joules_per_token_in = out->prefill_j / prefill->tokens;
    }
    if (decode->tokens > 0) {
        out->usd_per_mtok_out = out->decode_usd / decode->tokens * 1e6;
        out->joules_per_token_out = out->decode_j / decode->tokens;
    }
    if (generated > 0) {
        out->usd_per_mtok = (out->prefill_usd + out->decode_usd) / generated * 1e6;
        out->joules_per_token = out->energy_j / generated;
    }
    if (!hl_cost_power_known(c)) {
        out->prefill_j = out->decode_j = out->energy_j = NAN;
        out->power_w = out->peak_power_w = NAN;
        out->joules_per_token = out->joules_per_token_in = out->joules_per_token_out = NAN;
    }
    if (!hl_cost_price_known(c)) {
        out->capex_usd_per_gpu = out->usd_per_gpu_hour = NAN;
    }
    if (!hl_cost_price_known(c) || !hl_cost_power_known(c)) {
        out->prefill_usd = out->decode_usd = NAN;
        out->usd_per_mtok_in = out->usd_per_mtok_out = out->usd_per_mtok = NAN;
    }
}
